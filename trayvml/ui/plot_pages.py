"""The window's timeline pages: the GPUs and the machine, each a scrolling column of linked plots.

A page draws one panel at a time (``draw_panel``), so that the window can give the event loop
back between panels: at 64 GPUs a panel takes tens of milliseconds, a page several times that.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QEvent, QObject, QPoint, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QNativeGestureEvent, QPaintEvent, QPen, QWheelEvent
from PySide6.QtWidgets import QApplication, QGraphicsItem, QLabel, QScrollArea

from trayvml.alerts.rules import AlertEvent
from trayvml.alerts.severity import Severity
from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.metrics import GPM_MISSING, Group
from trayvml.core.safe_text import rich_text
from trayvml.core.sample import JOB_KINDS, MetricState, Sample
from trayvml.core.units import format_clock, short_name
from trayvml.history.rings import ProcessLine, by_job, peak
from trayvml.history.timeline import History
from trayvml.ui.gpu_colours import gpu_colour, readable_on
from trayvml.ui.plots import (
    COLLAPSED_HEIGHT_PX,
    GPU_PANELS,
    HOST_PANELS,
    LINE_STYLES,
    PANEL_HEIGHT_PX,
    STYLE_NAMES,
    TICK_LENGTH_PX,
    Panel,
    PanelSpec,
    TimeAxis,
    UnitAxis,
    value_axis_width_px,
)

HOST_COLOUR = "#4e79a7"
# Each core's line in the text colour, fainter than the CPU's line and darker than the grid's (a
# grey of its own was the grid's shade on a light plot and on a dark one).
CORE_ALPHA = 100
MAX_PROCESS_LINES = 12
# Points a panel draws at most, over all its lines: painting costs about the same per point, so
# 64 GPUs get fewer points a line rather than 8 times the paint time of 8 GPUs.
PANEL_POINT_BUDGET = 40_000
MIN_POINTS_PER_LINE = 120
HOVER_TOLERANCE_PX = 8  # a GPU's line this near the cursor is highlighted
READOUT_OFFSET_PX = 16  # between the cursor and the readout box, so that the box never covers it
MARKER_STYLES = {
    Severity.INFO: (Qt.PenStyle.DotLine, 1),
    Severity.WARNING: (Qt.PenStyle.DashLine, 1),
    Severity.CRITICAL: (Qt.PenStyle.SolidLine, 2),
}
# Said under the graphs (as MARKER_STYLES draws them): unexplained, the upright lines read as data.
MARKER_KEY = QT_TRANSLATE_NOOP("GraphWindow", "Upright lines: alerts (dotted: info, dashed: warning, solid: critical)")
WHEEL_ZOOM_PER_NOTCH = 0.8  # Ctrl+wheel: the time span shown shrinks to this per notch up

translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)


@dataclass(frozen=True)
class View:
    """What one redraw shows: the same for every panel it draws."""

    start_s: float
    end_s: float
    sample: Sample
    history: History
    hidden_gpus: frozenset[int]
    markers: Sequence[AlertEvent] = ()  # alerts to mark on GPU timelines
    asleep: Sequence[tuple[int, float, float]] = ()  # (GPU, from, until): shaded, the GPU slept
    process_jobs: bool = False  # the process panels draw a line per job (its processes added up)
    shown_s: float = 0.0  # the span of the view (following live, longer than start..end: its lead)

    def points(self, budget: int) -> int:
        """Points to read start..end in, for a line of ``budget`` points across the whole view: the
        history's tier stays the same while the lines grow towards the view's end."""
        if self.shown_s <= 0:
            return budget
        return max(2, round(budget * (self.end_s - self.start_s) / self.shown_s))


def _style_of(line: ProcessLine) -> int:
    return zlib.crc32(repr(line.key).encode()) % len(LINE_STYLES)


def line_label(line: ProcessLine, gpu_count: int) -> str:
    """'python (4100) · notebook exp/train.ipynb', or a job's sum 'Slurm job 4242', with its GPU
    where there are several."""
    kind = JOB_KINDS.get(line.job_kind)
    job = line.job if line.job_kind == "container" else f"{translate('jobs', kind)} {line.job}" if kind else ""
    if line.pid:
        process = f"{line.name or '?'} ({line.pid})"
        text = f"{process} · {job}" if job and line.job_kind != "pid" else process
    else:
        text = job or line.job
    return f"{text} · GPU {line.gpu_index}" if gpu_count > 1 else text


class _Column(pg.GraphicsLayoutWidget):
    """The page's plots, in one scene; ``before_paint`` runs before each paint."""

    def __init__(self, before_paint: Callable[[], None]) -> None:
        super().__init__()
        self._before_paint = before_paint

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        self._before_paint()
        super().paintEvent(event)


class PlotPage(QScrollArea):
    """A scrolling column of linked plots in one pyqtgraph scene.

    The wheel scrolls the page; Ctrl+wheel or a pinch asks to zoom time (``time_zoomed``: the time
    under the cursor and the factor the span shown is multiplied by). A box by the cursor reads
    every line of the panel under it."""

    time_zoomed = Signal(float, float)
    gpu_hovered = Signal(int)  # the GPU whose line is under the cursor; -1: none

    def __init__(
        self, specs: tuple[PanelSpec, ...], gpu_count: int, columns: int = 1, titles: Sequence[str] = ()
    ) -> None:
        super().__init__()
        self.setWidgetResizable(True)
        self.gpu_count = gpu_count
        self.layout_widget = _Column(self.sync_x_range)
        self.columns = columns
        self.setWidget(self.layout_widget)
        self.layout_widget.viewport().installEventFilter(self)
        self.readout = QLabel(self.viewport())
        self.readout.setObjectName("readout")
        self.readout.setTextFormat(Qt.TextFormat.RichText)
        self.readout.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.readout.hide()
        self.panels: list[Panel] = []
        self.foreground = QColor(Qt.GlobalColor.black)  # the palette's text colour (apply_palette)
        self.background = QColor(Qt.GlobalColor.white)  # and its base colour
        first: pg.PlotItem | None = None
        for index, spec in enumerate(specs):
            row, col = divmod(index, columns)
            unit = spec.metrics[0].unit if spec.metrics else None
            axes: dict[str, pg.AxisItem] = {"bottom": TimeAxis()}
            if unit is not None and not spec.strip:
                axes["left"] = UnitAxis(unit)
            elif spec.unit is not None:  # the processes' memory or SM share
                axes["left"] = UnitAxis(spec.unit)
            plot = self.layout_widget.addPlot(row=row, col=col, axisItems=axes, title=spec.title)
            # Its items draw only inside it (tested): a paint that does not reach it skips all it
            # holds. Following live, a second's stretch reaches 4 of 13 panels, and Qt asked each
            # item of the others for its bounding rect (Python, through Shiboken): a sixth of the paint.
            plot.setFlag(QGraphicsItem.GraphicsItemFlag.ItemContainsChildrenInShape)
            plot.setMenuEnabled(False)
            # No grid of pyqtgraph's: it costs about 50 ms a redraw, more than all the lines (each
            # panel draws its own light lines at the major ticks, plots.Grid).
            for name in ("left", "bottom"):
                plot.getAxis(name).setStyle(tickLength=TICK_LENGTH_PX)
                # Ticks carry their unit (UnitAxis) and no axis has a label to put a prefix in:
                # left on, pyqtgraph rewrote the hidden label's HTML at every change of range.
                plot.getAxis(name).enableAutoSIPrefix(False)
            for name in ("top", "right"):
                # Never shown, yet linked to the view: each move rewrote their hidden labels' HTML.
                plot.getAxis(name).unlinkFromView()
            plot.getViewBox().setLimits(yMin=0 if not spec.strip else -0.5)
            if spec.strip:
                plot.getAxis("left").setWidth(value_axis_width_px())
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            title = titles[index] if index < len(titles) else spec.title
            if title != spec.title:
                plot.setTitle(title)
            self.panels.append(Panel(spec, plot, gpu_count, self.background, title))
        self.first = first
        # To a screen reader the plots are pictures: the page says what they show and where the
        # same readings are as text. The scene takes no focus of its own (a second, silent stop).
        self.layout_widget.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setAccessibleName(translate("PlotPage", "Graphs"))
        self.setAccessibleDescription(
            translate(
                "PlotPage",
                "Graphs over time of {panels}. The readings now are on the Device details tab, as text;"
                " Export saves the graphs' data as CSV.",
            ).format(panels="; ".join(panel.title for panel in self.panels))
        )
        self._names: Callable[[int], str] = str  # names GPU columns in the readout (show_crosshair)
        self.hovered_gpu = -1
        self.fit_height()

    def fit_height(self) -> None:
        """Room for each row of panels: a full plot's, or one line where every panel of the row is collapsed."""
        rows = [self.panels[k : k + self.columns] for k in range(0, len(self.panels), self.columns)]
        self.layout_widget.setMinimumHeight(
            sum(COLLAPSED_HEIGHT_PX if all(p.collapsed for p in row) else PANEL_HEIGHT_PX for row in rows)
        )

    def visible_panels(self) -> list[Panel]:
        """The panels inside the scrolled viewport: only those are worth redrawing."""
        top = self.verticalScrollBar().value()
        shown = QRectF(0, top, self.viewport().width(), self.viewport().height())
        return [p for p in self.panels if not p.collapsed and p.plot.geometry().intersects(shown)]

    def width_px(self) -> float:
        return self.first.getViewBox().width() if self.first is not None else 0.0

    def x_range(self) -> tuple[float, float]:
        assert self.first is not None
        (x0, x1), _ = self.first.getViewBox().viewRange()
        return x0, x1

    def set_x_range(self, start_s: float, end_s: float) -> None:
        """The time range of every panel: set on the first, which the others link to, and on the
        panels in view; the others take it when they come into view (sync_x_range). Following
        live, moving all thirteen panels every second, each with its axis, grid and lines, cost
        more than drawing the four in view."""
        if self.first is not None:
            views = [self.first.getViewBox(), *(p.plot.getViewBox() for p in self.visible_panels())]
            self._move(views, (start_s, end_s))

    def sync_x_range(self) -> None:
        """The panels in view show the first's time range (before each paint: after a scroll or a
        resize, a panel that comes into view has not moved with the others)."""
        if self.first is not None:
            self._move([p.plot.getViewBox() for p in self.visible_panels()], self.x_range())

    def _move(self, views: Sequence[pg.ViewBox], x_range: tuple[float, float]) -> None:
        stale = [view for view in dict.fromkeys(views) if tuple(view.viewRange()[0]) != x_range]
        if not stale:
            return
        linked = [panel.plot.getViewBox() for panel in self.panels]
        for view in linked:
            view.blockLink(True)  # each moves alone: through the links, one move moves them all
        try:
            for view in stale:
                view.setXRange(*x_range, padding=0)
        finally:
            for view in linked:
                view.blockLink(False)

    def hold_paint(self) -> None:
        """Changes to the plots wait for release_paint to be painted: a redraw done a panel per turn
        of the event loop is painted once, whole, rather than once per panel and again when the
        view moves (six paints a second at 8 GPUs). Paints the window system asks for still happen."""
        self.layout_widget.viewport().setUpdatesEnabled(False)

    def release_paint(self) -> None:
        self.fit_value_ranges()
        self.layout_widget.viewport().setUpdatesEnabled(True)  # Qt repaints what is visible of it

    def fit_value_ranges(self) -> None:
        """The view boxes fit their value ranges to new lines now: left to the paint, a changed
        range asked for a second paint straight after the first."""
        self.layout_widget.scene().prepareForPaint()

    def budget(self, panel: Panel, lines: int = 1) -> int:
        """Points per line: about one per pixel, fewer where many lines share the panel."""
        width = int(self.width_px()) or 900
        return max(MIN_POINTS_PER_LINE, min(width, PANEL_POINT_BUDGET // max(1, lines)))

    def draw_panel(self, panel: Panel, view: View) -> None:
        raise NotImplementedError

    def panel_at(self, position: QPointF) -> Panel | None:
        """The panel whose plot holds ``position`` (scene coordinates)."""
        return next((p for p in self.panels if not p.collapsed and p.plot.sceneBoundingRect().contains(position)), None)

    def show_crosshair(self, position: QPointF, names: Callable[[int], str]) -> None:
        """A line at the cursor's time on every panel, and by the cursor a box with the time and
        every line of the panel under it, in full precision; the GPU whose line is nearest the
        cursor is highlighted (``gpu_hovered``)."""
        self._names = names
        panel = self.panel_at(position)
        if panel is None:
            self.hide_crosshair()
            return
        view = panel.plot.getViewBox()
        point = view.mapSceneToView(position)
        x = point.x()
        _, pixel_y = view.viewPixelSize()
        self._hover_gpu(panel.gpu_near(x, point.y(), HOVER_TOLERANCE_PX * pixel_y))
        for each in self.panels:
            each.crosshair.setVisible(True)
            each.crosshair.setPos(x)
        self.readout.setText(_readout_html(panel, x, names))
        self.readout.adjustSize()
        view_point = self.layout_widget.mapFromScene(position)
        self._place_readout(self.layout_widget.viewport().mapTo(self.viewport(), view_point))
        self.readout.show()
        self.readout.raise_()

    def hide_crosshair(self) -> None:
        for panel in self.panels:
            panel.crosshair.setVisible(False)
        self.readout.hide()
        self._hover_gpu(-1)

    def _hover_gpu(self, gpu: int) -> None:
        if gpu != self.hovered_gpu:
            self.hovered_gpu = gpu
            self.gpu_hovered.emit(gpu)

    def set_emphasis(self, gpu: int) -> None:
        """``gpu``'s lines stand out in every panel, the others faint (-1: none)."""
        for panel in self.panels:
            panel.set_emphasis(gpu)

    def _place_readout(self, cursor: QPoint) -> None:
        """Beside the cursor, on whichever side keeps the whole box inside the visible page."""
        size = self.readout.size()
        area = self.viewport().rect()
        x = cursor.x() + READOUT_OFFSET_PX
        if x + size.width() > area.right():
            x = cursor.x() - READOUT_OFFSET_PX - size.width()
        y = cursor.y() + READOUT_OFFSET_PX
        if y + size.height() > area.bottom():
            y = cursor.y() - READOUT_OFFSET_PX - size.height()
        x = max(0, min(x, area.right() - size.width()))
        y = max(0, min(y, area.bottom() - size.height()))
        self.readout.move(x, y)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        """On the plots: the wheel scrolls the page, Ctrl+wheel and a pinch zoom time."""
        kind = event.type()
        if kind == QEvent.Type.Leave:
            self.hide_crosshair()
        elif kind == QEvent.Type.Wheel and isinstance(event, QWheelEvent):
            # Accepted, or Qt hands the event on to the page's own scroll area: a second scroll.
            event.accept()
            if not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                moved_px = self._scroll(event)
                if self.readout.isVisible():  # the panel under the cursor changed with the page
                    under = event.position().toPoint() + QPoint(0, moved_px)
                    self.show_crosshair(self.layout_widget.mapToScene(under), self._names)
                return True
            notches = event.angleDelta().y() / 120
            if notches:
                self._zoom_at(event.position(), WHEEL_ZOOM_PER_NOTCH**notches)
            return True
        elif (
            kind == QEvent.Type.NativeGesture
            and isinstance(event, QNativeGestureEvent)
            and event.gestureType() == Qt.NativeGestureType.ZoomNativeGesture
        ):
            event.accept()
            self._zoom_at(event.position(), max(0.1, 1.0 - event.value()))  # value > 0: fingers apart
            return True
        return super().eventFilter(watched, event)

    def _scroll(self, event: QWheelEvent) -> int:
        """The page moves as a scroll area's wheel would move it (a touchpad's pixels as they come);
        returns by how many pixels it moved (down: positive)."""
        bar = self.verticalScrollBar()
        pixels = event.pixelDelta().y()
        if not pixels:
            pixels = round(event.angleDelta().y() / 120 * QApplication.wheelScrollLines() * bar.singleStep())
        before = bar.value()
        bar.setValue(before - pixels)
        return bar.value() - before

    def _zoom_at(self, position: QPointF, factor: float) -> None:
        scene = self.layout_widget.mapToScene(position.toPoint())
        panel = self.panel_at(scene) or (self.panels[0] if self.panels else None)
        if panel is not None:
            self.time_zoomed.emit(panel.plot.getViewBox().mapSceneToView(scene).x(), factor)

    def apply_palette(self, background: QColor, foreground: QColor) -> None:
        self.layout_widget.setBackground(background)
        for panel in self.panels:
            for name in ("left", "bottom"):
                axis = panel.plot.getAxis(name)
                axis.setPen(foreground)
                axis.setTextPen(foreground)
            panel.show_title(foreground)
            panel.grid.set_colour(foreground)
            panel.notice.setColor(foreground)
            panel.recolour(background)  # drawn in these colours at the next redraw (asked by the window)
            panel.forget_limits()
        self.foreground = QColor(foreground)
        self.background = QColor(background)
        self.readout.setStyleSheet(
            f"QLabel#readout {{ background: {background.name()}; color: {foreground.name()};"
            f" border: 1px solid {foreground.name()}; padding: 4px; }}"
        )


def _columns(sample: Sample) -> dict[int, int]:
    """Each GPU index's column: its place in the sample (a remote host's indices may skip)."""
    return {info.index: column for column, info in enumerate(sample.devices)}


def _temperature_limits(sample: Sample, gpus: Sequence[int]) -> list[tuple[float, str]]:
    """The slowdown and shutdown temperatures of the GPUs in view: a line per distinct value."""
    limits: dict[float, str] = {}
    for column, info in enumerate(sample.devices):
        if column not in gpus:
            continue
        slowdown = translate("Panel", "slowdown {value} °C")
        shutdown = translate("Panel", "shutdown {value} °C")
        for value, what in ((info.temperature_slowdown_c, slowdown), (info.temperature_shutdown_c, shutdown)):
            if math.isfinite(value):
                limits.setdefault(value, what.format(value=f"{value:.0f}"))
    return sorted(limits.items())


def _not_supported_line(panel: Panel, sample: Sample) -> str:
    """ "Encoder and decoder: not supported by any GPU here (RTX 4090)", and why where it is known."""
    group = translate("metrics", panel.spec.group.value)
    models = ", ".join(dict.fromkeys(short_name(info.name) for info in sample.devices))
    if panel.spec.group is Group.ACTIVITY:
        return translate("Panel", "{panel}: not supported by any GPU here: {why}").format(
            panel=group, why=translate("metrics", GPM_MISSING)
        )
    return translate("Panel", "{panel}: not supported by any GPU here ({models})").format(panel=group, models=models)


def _name_cell(name: str, colour: str, background: QColor) -> str:
    if not colour:  # the machine's row
        return f"<td>{rich_text(name)}</td>"
    return f'<td style="color:{readable_on(colour, background).name()}">{rich_text(name)}</td>'


def _readout_html(panel: Panel, x: float, names: Callable[[int], str]) -> str:
    """The time, then a row per GPU (or the machine) and a column per metric of ``panel``."""
    when = format_clock(x, date=True)
    rows = panel.values_at(x, names)
    metrics = panel.spec.metrics
    head = ""
    if len(metrics) > 1 or not panel.gpu_count:
        styled = len(metrics) > 1
        labels = [translate("metrics", m.label) for m in metrics]
        if styled:
            labels = [f"{label} ({translate('Panel', STYLE_NAMES[k])})" for k, label in enumerate(labels)]
        cells = "".join(f"<th align=right>&nbsp;{rich_text(label)}</th>" for label in labels)
        head = f"<tr><th></th>{cells}</tr>"
    # Each name in its line's colour, made readable as text (4.5:1): a line's 3:1 is for lines.
    body = "".join(
        f"<tr>{_name_cell(name, colour, panel.background)}"
        + "".join(f"<td align=right>&nbsp;{value}</td>" for value in values)
        + "</tr>"
        for name, colour, values in rows
    )
    if not rows:
        body = "<tr><td>" + translate("Panel", "no lines here at this time") + "</td></tr>"
    # Named: after a scroll the cursor may be over another panel than the one last read.
    title = rich_text(translate("metrics", panel.spec.group.value))
    return f"<b>{title} · {when}</b><table cellspacing=0 cellpadding=1>{head}{body}</table>"


class GpuPage(PlotPage):
    """A panel per metric group of the catalog, a line per GPU (line styles per metric)."""

    def __init__(self, gpu_count: int) -> None:
        super().__init__(GPU_PANELS, gpu_count)

    def collapse_unsupported(self, sample: Sample) -> bool:
        """A panel whose metrics no GPU here supports becomes one line that says so; it is a plot
        again once a GPU does (another host chosen, another set of GPUs). Whether any changed."""
        changed = False
        for panel in self.panels:
            metrics = panel.spec.metrics
            lacking = bool(metrics) and all(
                g.state(m.key) is MetricState.NOT_SUPPORTED for g in sample.gpus for m in metrics
            )
            text = _not_supported_line(panel, sample) if lacking and sample.gpus else ""
            changed = panel.set_collapsed(text, self.foreground) or changed
        if changed:
            self.fit_height()
        return changed

    def draw_panel(self, panel: Panel, view: View) -> None:
        self._mark(panel, view)
        self._shade_asleep(panel, view)
        spec = panel.spec
        if spec.group is Group.PROCESSES:
            self._draw_processes(panel, view)
            return
        if spec.strip:
            series = view.history.gpu_series(
                spec.metrics[0].key, view.start_s, view.end_s, view.points(self.budget(panel))
            )
            panel.set_strip(series, self.gpu_count, view.hidden_gpus)
            return
        self.draw_lines(panel, view, range(self.gpu_count))

    def draw_lines(self, panel: Panel, view: View, gpus: Sequence[int]) -> None:
        """``panel``'s metrics for the GPUs ``gpus`` (those hidden or not supporting them left out)."""
        spec = panel.spec
        sample = view.sample
        # By column (its place in the sample): two GPUs of one model share a name, and only one may
        # lack the metric; a remote host's indices may skip.
        unsupported = {
            column
            for column, g in enumerate(sample.gpus)
            if column in gpus and all(g.state(m.key) is MetricState.NOT_SUPPORTED for m in spec.metrics)
        }
        shown = [g in gpus and g not in view.hidden_gpus and g not in unsupported for g in range(self.gpu_count)]
        budget = view.points(self.budget(panel, sum(shown) * len(spec.metrics)))
        for k, metric in enumerate(spec.metrics):
            series = view.history.gpu_series(metric.key, view.start_s, view.end_s, budget)
            if series is None or series.mean.shape[1] != self.gpu_count:
                panel.lines[k].clear()  # no history yet, or one of another set of GPUs
            else:
                panel.lines[k].set_lines(series.times_s, series.mean, panel.pens[k], shown, series.high)
        wanted = [g for g in gpus if g not in view.hidden_gpus] or list(gpus)
        if spec.group is Group.TEMPERATURE:
            panel.set_limits(_temperature_limits(sample, wanted), self.foreground, self.background)
        lacking = unsupported & set(wanted)
        # The Activity panel names what a GPU lacks even beside GPUs that have it.
        if lacking and (lacking == set(wanted) or spec.group is Group.ACTIVITY):
            names = dict(enumerate(short_name(i.name) for i in sample.devices))
            models = dict.fromkeys(names[g] for g in sorted(lacking))
            why = translate("metrics", GPM_MISSING) if spec.group is Group.ACTIVITY else ""
            if why:
                notice = translate("Panel", "Not supported on {models}: {why}").format(
                    models=", ".join(models), why=why
                )
            else:
                notice = translate("Panel", "Not supported on {models}").format(models=", ".join(models))
            if lacking == set(wanted):  # nothing drawn: the note says why, where the lines would be
                panel.show_notice(notice)
                panel.show_note("", self.foreground)
            else:
                panel.show_notice("")
                panel.show_note(notice, self.foreground)
        else:
            panel.show_notice("")
            panel.show_note("", self.foreground)

    def _draw_processes(self, panel: Panel, view: View) -> None:
        """A line per process (or job) that held a GPU in the range, biggest first: its memory, or its
        share of the SMs; from the store where the range reaches before memory."""
        column = 1 if panel.spec.process_sm else 0
        lines = view.history.process_lines(view.start_s, view.end_s, view.points(self.budget(panel, MAX_PROCESS_LINES)))
        if view.process_jobs:
            lines = by_job(lines)
        place = _columns(view.sample)
        found = [
            line
            for line in lines
            if place.get(line.gpu_index, -1) not in view.hidden_gpus and np.isfinite(line.series.mean[:, column]).any()
        ]
        found.sort(key=lambda line: -peak(line, column))
        found = found[:MAX_PROCESS_LINES]
        # The GPU's colour, as everywhere in the window; a style that stays with the process or job.
        colours = [gpu_colour(place.get(line.gpu_index, line.gpu_index), self.background) for line in found]
        pens = [
            pg.mkPen(c, width=1.4, style=LINE_STYLES[_style_of(line)]) for c, line in zip(colours, found, strict=True)
        ]
        panel.extra.set_each([(line.series.times_s, line.series.mean[:, column]) for line in found], pens)
        panel.extra_names = [
            (line_label(line, self.gpu_count), c.name()) for c, line in zip(colours, found, strict=True)
        ]
        if found:
            panel.show_notice("")
        elif view.process_jobs:
            panel.show_notice(translate("Panel", "No GPU jobs in this range"))
        else:
            panel.show_notice(translate("Panel", "No GPU processes in this range"))

    @staticmethod
    def _shade_asleep(panel: Panel, view: View) -> None:
        """A band in the GPU's colour where it slept: its values are missing for that reason."""
        bands: list[pg.LinearRegionItem] = panel.__dict__.setdefault("asleep_bands", [])
        place = _columns(view.sample) if view.asleep else {}  # (every panel, every redraw: most have none)
        shown = [
            (place.get(gpu, gpu), begin, end)
            for gpu, begin, end in view.asleep
            if place.get(gpu, gpu) not in view.hidden_gpus
        ]
        while len(bands) < len(shown):
            band = pg.LinearRegionItem(movable=False, pen=pg.mkPen(None))
            band.setZValue(-10)
            panel.plot.addItem(band, ignoreBounds=True)
            bands.append(band)
        for k, band in enumerate(bands):
            band.setVisible(k < len(shown))
            if k < len(shown):
                gpu, begin, end = shown[k]
                colour = gpu_colour(gpu, panel.background)
                colour.setAlpha(40)
                band.setBrush(colour)
                band.setRegion((begin, end))

    def _mark(self, panel: Panel, view: View) -> None:
        # In the text colour, which no GPU line uses; the severity is in the dash and the width.
        for marker, event in zip(panel.set_markers(len(view.markers)), view.markers, strict=True):
            style, width = MARKER_STYLES[event.severity]
            marker.setPen(pg.mkPen(self.foreground, width=width, style=style))
            marker.setPos(event.timestamp_s)


class MachinePage(PlotPage):
    """CPU (with a faint line per core), RAM and swap, disk and network of the host."""

    def __init__(self) -> None:
        super().__init__(HOST_PANELS, 0)
        self._pens = [
            pg.mkPen(HOST_COLOUR, width=1.8, style=LINE_STYLES[k % len(LINE_STYLES)]) for k in range(len(LINE_STYLES))
        ]
        self._core_pen = self._pen_for_cores(self.foreground)

    @staticmethod
    def _pen_for_cores(foreground: QColor) -> QPen:
        colour = QColor(foreground)
        colour.setAlpha(CORE_ALPHA)
        return pg.mkPen(colour, width=1)

    def apply_palette(self, background: QColor, foreground: QColor) -> None:
        super().apply_palette(background, foreground)
        self._core_pen = self._pen_for_cores(foreground)

    def draw_panel(self, panel: Panel, view: View) -> None:
        budget = view.points(self.budget(panel))
        for k, metric in enumerate(panel.spec.metrics):
            series = view.history.host_series(metric.key, view.start_s, view.end_s, budget)
            if series is None:
                panel.lines[k].clear()
            else:
                pens = [self._pens[k % len(self._pens)]]
                panel.lines[k].set_lines(series.times_s, series.mean, pens, [True], series.high)
        if panel.spec.group is Group.CPU:
            cores = view.history.core_series(
                view.start_s, view.end_s, view.points(self.budget(panel, view.history.core_count))
            )
            if cores is None or cores.mean.shape[1] == 0:
                panel.extra.clear()
            else:
                count = cores.mean.shape[1]
                pens = [self._core_pen] * count
                panel.extra.set_lines(cores.times_s, cores.mean, pens, [True] * count)
