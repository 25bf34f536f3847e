"""The window's timeline pages: the GPUs and the machine, each a scrolling column of linked plots.

A page draws one panel at a time (``draw_panel``), so that the window can give the event loop
back between panels: at 64 GPUs a panel takes tens of milliseconds, a page several times that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QPointF, QRectF, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QScrollArea

from trayvml.alerts import AlertEvent
from trayvml.core.metrics import Group, Unit
from trayvml.core.sample import MetricState, Sample
from trayvml.core.units import short_name
from trayvml.history import History
from trayvml.ui.alerts_page import SEVERITY_COLOURS
from trayvml.ui.plots import (
    GPU_PANELS,
    HOST_PANELS,
    LINE_STYLES,
    PANEL_HEIGHT_PX,
    TICK_LENGTH_PX,
    Panel,
    PanelSpec,
    UnitAxis,
    value_axis_width_px,
)
from trayvml.ui.theme import gpu_colour

HOST_COLOUR = "#4e79a7"
CORE_COLOUR = (150, 150, 150, 90)
MAX_PROCESS_LINES = 12
# Points a panel draws at most, over all its lines: painting costs about the same per point, so
# 64 GPUs get fewer points a line rather than 8 times the paint time of 8 GPUs.
PANEL_POINT_BUDGET = 40_000
MIN_POINTS_PER_LINE = 120

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


class PlotPage(QScrollArea):
    """A scrolling column of linked plots in one pyqtgraph scene."""

    def __init__(self, specs: tuple[PanelSpec, ...], gpu_count: int) -> None:
        super().__init__()
        self.setWidgetResizable(True)
        self.gpu_count = gpu_count
        self.layout_widget = pg.GraphicsLayoutWidget()
        self.layout_widget.setMinimumHeight(PANEL_HEIGHT_PX * len(specs))
        self.setWidget(self.layout_widget)
        self.panels: list[Panel] = []
        first: pg.PlotItem | None = None
        for row, spec in enumerate(specs):
            unit = spec.metrics[0].unit if spec.metrics else None
            axes = {"bottom": pg.DateAxisItem()}
            if unit is not None and not spec.strip:
                axes["left"] = UnitAxis(unit)
            elif spec.group is Group.PROCESSES:
                axes["left"] = UnitAxis(Unit.BYTES)
            plot = self.layout_widget.addPlot(row=row, col=0, axisItems=axes, title=spec.title)
            plot.setMenuEnabled(False)
            # No grid: pyqtgraph's costs about 50 ms a redraw, more than all the lines.
            # Short inward ticks mark the scale instead.
            for name in ("left", "bottom"):
                plot.getAxis(name).setStyle(tickLength=TICK_LENGTH_PX)
            plot.getViewBox().setLimits(yMin=0 if not spec.strip else -0.5)
            if spec.strip:
                plot.getAxis("left").setWidth(value_axis_width_px())
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            self.panels.append(Panel(spec, plot, gpu_count))
        self.first = first

    def visible_panels(self) -> list[Panel]:
        """The panels inside the scrolled viewport: only those are worth redrawing."""
        top = self.verticalScrollBar().value()
        shown = QRectF(0, top, self.viewport().width(), self.viewport().height())
        return [p for p in self.panels if p.plot.geometry().intersects(shown)]

    def width_px(self) -> float:
        return self.first.getViewBox().width() if self.first is not None else 0.0

    def x_range(self) -> tuple[float, float]:
        assert self.first is not None
        (x0, x1), _ = self.first.getViewBox().viewRange()
        return x0, x1

    def set_x_range(self, start_s: float, end_s: float) -> None:
        if self.first is not None:
            self.first.setXRange(start_s, end_s, padding=0)

    def budget(self, panel: Panel, lines: int = 1) -> int:
        """Points per line: about one per pixel, fewer where many lines share the panel."""
        width = int(self.width_px()) or 900
        return max(MIN_POINTS_PER_LINE, min(width, PANEL_POINT_BUDGET // max(1, lines)))

    def draw_panel(self, panel: Panel, view: View) -> None:
        raise NotImplementedError

    def show_crosshair(self, position: QPointF, names: Callable[[int], str]) -> None:
        """A line at the cursor's time on every panel, with each panel's values there."""
        x = None
        for panel in self.panels:
            if panel.plot.sceneBoundingRect().contains(position):
                x = panel.plot.getViewBox().mapSceneToView(position).x()
                break
        for panel in self.panels:
            panel.crosshair.setVisible(x is not None)
            panel.readout.setVisible(x is not None)
            if x is None:
                continue
            panel.crosshair.setPos(x)
            panel.readout.setHtml(panel.values_at(x, names))
            (x0, _), (_, y1) = panel.plot.getViewBox().viewRange()
            panel.readout.setPos(x0, y1)

    def apply_palette(self, background: QColor, foreground: QColor) -> None:
        self.layout_widget.setBackground(background)
        for panel in self.panels:
            for name in ("left", "bottom"):
                axis = panel.plot.getAxis(name)
                axis.setPen(foreground)
                axis.setTextPen(foreground)
            panel.plot.setTitle(panel.spec.title, color=foreground.name(), size="10pt")
            panel.readout.setColor(foreground)
            panel.notice.setColor(foreground)


class GpuPage(PlotPage):
    """A panel per metric group of the catalog, a line per GPU (line styles per metric)."""

    def __init__(self, gpu_count: int) -> None:
        super().__init__(GPU_PANELS, gpu_count)

    def draw_panel(self, panel: Panel, view: View) -> None:
        self._mark(panel, view)
        spec = panel.spec
        if spec.group is Group.PROCESSES:
            self._draw_processes(panel, view)
            return
        if spec.strip:
            series = view.history.gpu_series(spec.metrics[0].key, view.start_s, view.end_s, self.budget(panel))
            panel.set_strip(series, self.gpu_count)
            return
        sample = view.sample
        # By index: two GPUs of one model share a name, and only one may lack the metric.
        unsupported = {
            g.index for g in sample.gpus if all(g.state(m.key) is MetricState.NOT_SUPPORTED for m in spec.metrics)
        }
        shown = [g not in view.hidden_gpus and g not in unsupported for g in range(self.gpu_count)]
        budget = self.budget(panel, sum(shown) * len(spec.metrics))
        for k, metric in enumerate(spec.metrics):
            series = view.history.gpu_series(metric.key, view.start_s, view.end_s, budget)
            if series is None or series.mean.shape[1] != self.gpu_count:
                panel.lines[k].clear()  # no history yet, or one of another set of GPUs
            else:
                panel.lines[k].set_lines(series.times_s, series.mean, panel.pens[k], shown)
        if unsupported and len(unsupported) == len(sample.gpus):
            names = {g.index: short_name(i.name) for g, i in zip(sample.gpus, sample.devices, strict=True)}
            models = dict.fromkeys(names[g] for g in sorted(unsupported))
            panel.show_notice(translate("Panel", "Not supported on {models}").format(models=", ".join(models)))
        else:
            panel.show_notice("")

    def _draw_processes(self, panel: Panel, view: View) -> None:
        found = [
            (gpu, series)
            for gpu, _label, series in view.history.processes.series(
                view.start_s, view.end_s, self.budget(panel, MAX_PROCESS_LINES)
            )
            # A process seen after this range is listed too, with no value in it: left out.
            if gpu not in view.hidden_gpus and np.isfinite(series.mean).any()
        ][:MAX_PROCESS_LINES]
        pens = [pg.mkPen(gpu_colour(gpu), width=1.4) for gpu, _ in found]
        # Each its own: a process that exited long ago is read from a coarser tier.
        panel.extra.set_each([(series.times_s, series.mean[:, 0]) for _, series in found], pens)
        panel.show_notice("" if found else translate("Panel", "No GPU processes in this range"))

    @staticmethod
    def _mark(panel: Panel, view: View) -> None:
        for marker, event in zip(panel.set_markers(len(view.markers)), view.markers, strict=True):
            marker.setPen(pg.mkPen(SEVERITY_COLOURS[event.severity], width=1, style=Qt.PenStyle.DotLine))
            marker.setPos(event.timestamp_s)


class MachinePage(PlotPage):
    """CPU (with a faint line per core), RAM and swap, disk and network of the host."""

    def __init__(self) -> None:
        super().__init__(HOST_PANELS, 0)
        self._pens = [
            pg.mkPen(HOST_COLOUR, width=1.8, style=LINE_STYLES[k % len(LINE_STYLES)]) for k in range(len(LINE_STYLES))
        ]
        self._core_pen = pg.mkPen(CORE_COLOUR, width=1)

    def draw_panel(self, panel: Panel, view: View) -> None:
        budget = self.budget(panel)
        for k, metric in enumerate(panel.spec.metrics):
            series = view.history.host_series(metric.key, view.start_s, view.end_s, budget)
            if series is None:
                panel.lines[k].clear()
            else:
                panel.lines[k].set_lines(series.times_s, series.mean, [self._pens[k % len(self._pens)]], [True])
        if panel.spec.group is Group.CPU:
            cores = view.history.core_series(view.start_s, view.end_s, self.budget(panel, view.history.core_count))
            if cores is None or cores.mean.shape[1] == 0:
                panel.extra.clear()
            else:
                count = cores.mean.shape[1]
                pens = [self._core_pen] * count
                panel.extra.set_lines(cores.times_s, cores.mean, pens, [True] * count)
