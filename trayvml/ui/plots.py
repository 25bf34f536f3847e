"""Timeline panels: one pyqtgraph plot per metric group, one curve per GPU (and line style per metric)."""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QDateTime, QLineF, QLocale, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPainterPath, QPen, QPicture, QPolygonF
from PySide6.QtWidgets import QGraphicsItem

from trayvml.core.formatting import format_precise
from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.metrics import CLOCK_EVENT_REASONS, GPU_METRICS, HOST_METRICS, Group, Metric, Unit
from trayvml.core.units import KIB, format_bytes
from trayvml.history.rings import Series
from trayvml.ui.gpu_colours import gpu_colour

LINE_STYLES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)
translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)
STYLE_NAMES = (
    QT_TRANSLATE_NOOP("Panel", "solid"),
    QT_TRANSLATE_NOOP("Panel", "dashed"),
    QT_TRANSLATE_NOOP("Panel", "dotted"),
    QT_TRANSLATE_NOOP("Panel", "dash-dot"),
)
PANEL_HEIGHT_PX = 170
COLLAPSED_HEIGHT_PX = 32  # a panel no GPU supports: its title row (pyqtgraph's is 30 px)
TITLE_ROW_PX = 30  # pyqtgraph's title row, one line of text (PlotItem.setTitle)
QWIDGETSIZE_MAX = 16_777_215  # Qt's "no maximum"
FAINT_ALPHA = 45  # of 255: the lines of other GPUs while one is highlighted
EMPHASIS_WIDTH = 2.5  # the highlighted GPU's lines, times their usual width
GRID_ALPHA = 40  # of 255: grid lines a shade off the background, behind everything


@dataclass(frozen=True)
class PanelSpec:
    group: Group
    metrics: tuple[Metric, ...]
    strip: bool = False  # a state strip (throttle reasons) rather than lines
    process_sm: bool = False  # the processes' SM share (the processes panel: their memory otherwise)

    @property
    def unit(self) -> Unit | None:
        """What its value axis counts (a process panel has no metric of the catalog)."""
        if self.group is Group.PROCESSES:
            return Unit.PERCENT if self.process_sm else Unit.BYTES
        return self.metrics[0].unit if self.metrics else None

    @property
    def min_span(self) -> float:
        """The smallest value span the panel shows: the widest its metrics ask for (catalog)."""
        return max((m.min_span for m in self.metrics), default=0.0)

    @property
    def title(self) -> str:
        group = translate("metrics", self.group.value)
        if self.group is Group.PROCESSES:
            what = translate("Panel", "SM share") if self.process_sm else translate("Panel", "memory")
            return f"{group} — {what}"
        if len(self.metrics) < 2:
            return group
        styles = translate("Panel", ", ").join(
            f"{_in_sentence(m)} {translate('Panel', STYLE_NAMES[k])}" for k, m in enumerate(self.metrics)
        )
        return f"{group} — {styles}"


def _in_sentence(metric: Metric) -> str:
    """A metric's label within a sentence: lower case in English; as it is in a language without case."""
    label = translate("metrics", metric.label)
    return label.lower() if label == metric.label else label


def _panels(metrics: Sequence[Metric], groups: Sequence[Group]) -> tuple[PanelSpec, ...]:
    panels = []
    for group in groups:
        chosen = tuple(m for m in metrics if m.group is group and m.history and m.plot)
        if group is Group.PROCESSES:
            panels += [PanelSpec(group, ()), PanelSpec(group, (), process_sm=True)]
        elif chosen:
            panels.append(PanelSpec(group, chosen, strip=chosen[0].unit is Unit.BITMASK))
    return tuple(panels)


GPU_PANELS = _panels(
    GPU_METRICS,
    (
        Group.UTILIZATION,
        Group.ACTIVITY,
        Group.MEMORY,
        Group.TEMPERATURE,
        Group.POWER,
        Group.FAN,
        Group.CLOCKS,
        Group.PCIE,
        Group.NVLINK,
        Group.CODEC,
        Group.ERRORS,
        Group.THROTTLE,
        Group.PROCESSES,
    ),
)
HOST_PANELS = _panels(HOST_METRICS, (Group.CPU, Group.RAM, Group.DISK, Group.NETWORK))


BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
# The widest label a value axis writes: ticks stay under 2048 of the unit the axis picked.
WIDEST_TICK_LABEL = "8888 MiB/s"
TICK_LENGTH_PX = 6


def value_axis_width_px() -> int:
    """Wide enough for the widest tick label in the application font. pyqtgraph silently drops a
    label wider than its axis, and every panel needs the same width so that their time axes line up."""
    text_px = QFontMetrics(QFont()).horizontalAdvance(WIDEST_TICK_LABEL)
    return text_px + TICK_LENGTH_PX + 5 + 4  # tick, pyqtgraph's text offset, a margin


def _byte_power(top: float) -> int:
    """The binary unit (0 bytes, 1 KiB, …) that labels an axis reaching ``top``: the one in which
    it reaches at least 2, so that ticks are round numbers of it."""
    return min(len(BYTE_UNITS) - 1, max(0, math.floor(math.log(max(top / 2, 1.0), KIB))))


def _decimals(step: float) -> int:
    """Enough decimals to tell ticks ``step`` apart."""
    return 0 if step >= 1 or step <= 0 else math.ceil(-math.log10(step) - 1e-9)


class UnitAxis(pg.AxisItem):
    """A value axis that labels ticks in the panel's unit (GiB, MB/s, °C, …)."""

    def __init__(self, unit: Unit) -> None:
        super().__init__("left")
        self.unit = unit
        self.setWidth(value_axis_width_px())

    def _byte_scale(self, low: float, high: float) -> float:
        return float(KIB) ** _byte_power(max(abs(low), abs(high)))

    def tickSpacing(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, float]]:  # noqa: N802, N803
        """Byte axes step in round KiB, MiB or GiB, not in round numbers of bytes."""
        if self.unit not in (Unit.BYTES, Unit.BYTES_PER_S) or maxVal <= minVal:
            return super().tickSpacing(minVal, maxVal, size)
        base = self._byte_scale(minVal, maxVal)
        levels = super().tickSpacing(minVal / base, maxVal / base, size)
        return [(spacing * base, offset * base) for spacing, offset in levels]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802 - Qt override
        if self.unit in (Unit.BYTES, Unit.BYTES_PER_S):
            # One unit for the whole axis, the one its ticks were spaced in: "0.5 GiB" under
            # "1.0 GiB", never "512 MiB" beside "1.0 GiB".
            base = self._byte_scale(*self.range)
            suffix = BYTE_UNITS[round(math.log(base, KIB))] + ("/s" if self.unit is Unit.BYTES_PER_S else "")
            decimals = _decimals(spacing / base)
            return [f"{v / base:.{decimals}f} {suffix}" for v in values]
        unit = {Unit.PERCENT: " %", Unit.CELSIUS: " °C", Unit.WATTS: " W", Unit.MHZ: " MHz"}.get(self.unit, "")
        decimals = _decimals(spacing)
        return [f"{v:.{decimals}f}{unit}" for v in values]


DATED_RANGE_S = 23 * 3600  # from about a day up, time ticks carry the day: "Mon 06:00", "Mon 18"
# Steps of a dated axis, in seconds: the first that leaves room for its labels.
DATED_STEPS_S = (3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400)
DATED_LABEL_GAP_PX = 24


_TIME_LABEL_FLAGS = Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextDontClip
TEXT_SIZES_KEPT = 512  # labels' sizes kept (TimeAxis._text_size)


class TimeAxis(pg.DateAxisItem):
    """pyqtgraph's date axis, but dated on long ranges: at 7 days its ticks read "18", "19", day
    numbers that looked like hours. From about a day up each tick names its weekday, and its time
    unless it falls on midnight, in the locale's words.

    The time axes of a page show one range at one width: the first painted works out its ticks
    and labels, the others play the same picture (following live, every axis is drawn anew each
    second, and working one out costs about a millisecond of Python)."""

    _shared: ClassVar[tuple[tuple[object, ...], QPicture] | None] = None  # (what it shows, the picture)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        # Kept as pixels until it changes: the view's lowest pixel row overlaps it, so a second's
        # stretch of lines at the bottom of a panel had its axis played again, text shaped anew.
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def _picture_key(self) -> tuple[object, ...]:
        """All that the picture depends on: two axes with equal keys draw the same."""
        size = self.geometry().size()
        font = self.style["tickFont"] or QFont()
        style = tuple(sorted((name, repr(value)) for name, value in self.style.items() if name != "tickFont"))
        pen, text = self.pen(), self.textPen()
        return (
            tuple(self.range),
            size.width(),
            size.height(),
            font.key(),
            pen.color().rgba(),
            pen.widthF(),
            text.color().rgba(),
            style,
        )

    def paint(self, painter: QPainter, *args: object) -> None:
        picture: QPicture | None = vars(self)["picture"]  # pyqtgraph's (untyped): None until worked out
        if picture is None:
            key = self._picture_key()
            shared = TimeAxis._shared
            if shared is None or shared[0] != key:
                super().paint(painter, *args)  # works the picture out and plays it
                TimeAxis._shared = (key, vars(self)["picture"])
                return
            picture = self.picture = shared[1]
        picture.play(painter)

    def generateDrawSpecs(self, p: QPainter) -> tuple[object, list[object], list[object]] | None:  # noqa: N802
        """pyqtgraph's, for what this axis is (at the bottom, one level of ticks, no grid), with each
        label's size kept by its text: following live it is worked out every second, and pyqtgraph's
        general one took about 0.35 ms of Python (the same specifications: tested against it)."""
        style = self.style
        alpha = style["tickAlpha"]
        if (
            self.orientation != "bottom"
            or self._tickLevels is not None
            or self.grid is not False
            or tuple(style["stopAxisAtTick"]) != (False, False)
            or not style["showValues"]
            or style["maxTextLevel"] < 0
            or not (alpha is None or isinstance(alpha, float) or (isinstance(alpha, int) and 0 <= alpha <= 255))
        ):
            return super().generateDrawSpecs(p)
        if style["tickFont"] is not None:
            p.setFont(style["tickFont"])
        self.fontMetrics = p.fontMetrics()  # as DateAxisItem's
        bounds = self.mapRectFromParent(self.geometry())
        span = (bounds.topLeft() + pg.Point(-1.0, 1.0), bounds.topRight() + pg.Point(1.0, 1.0))
        ends = [self.mapToDevice(point) for point in span]
        if None in ends:
            return None
        length_px = pg.Point(ends[1] - ends[0]).length()
        if length_px == 0:
            return None
        levels = self.tickValues(self.range[0], self.range[1], length_px)
        if len(levels) != 1:
            return super().generateDrawSpecs(p)
        low, high = self.range
        if high == low:
            scale, offset = 1.0, 0.0
        else:
            scale = bounds.width() / (high - low)
            offset = low * scale
        x_min, x_max = sorted((low * scale - offset, high * scale - offset))
        tick_pen = self.tickPen()
        if tick_pen.brush().style() == Qt.BrushStyle.SolidPattern:
            if alpha is None:
                alpha = 255.0
            elif isinstance(alpha, float):
                alpha = min(255, max(0, round(alpha * 255)))
            tick_pen = QPen(tick_pen)
            colour = QColor(tick_pen.color())
            colour.setAlpha(int(alpha))
            tick_pen.setColor(colour)
        top = bounds.top()
        tick_px = style["tickLength"] / 1.0
        spacing, values = levels[0]
        positions: list[float | None] = []
        ticks: list[object] = []
        for value in values:
            x = value * scale - offset
            if x < x_min or x > x_max:
                positions.append(None)
                continue
            positions.append(x)
            ticks.append((tick_pen, QPointF(x, top), QPointF(x, top + tick_px)))
        texts: list[object] = []
        strings = self.tickStrings(values, self.autoSIPrefixScale * self.scale, spacing)
        tallest = 0.0
        if strings:
            font = p.font().key()
            sizes = [None if positions[j] is None else self._text_size(p, font, text) for j, text in enumerate(strings)]
            tallest = max((size[1] for size in sizes if size is not None), default=0.0)
            below = top + max(0, style["tickLength"]) + style["tickTextOffset"][1]
            inside = self.boundingRect()
            for at, size, text in zip(positions, sizes, strings, strict=False):
                if at is None or size is None:
                    continue
                rect = QRectF(at - size[0] / 2.0, below, size[0], size[1])
                if inside & rect == rect:  # pyqtgraph leaves out a label that would stick out
                    texts.append((rect, _TIME_LABEL_FLAGS, text))
        self._updateMaxTextSize(tallest)
        return (self.pen(), span[0], span[1]), ticks, texts

    _text_sizes: ClassVar[dict[tuple[str, str], tuple[float, float]]] = {}

    def _text_size(self, p: QPainter, font: str, text: str) -> tuple[float, float]:
        """A label's width and height: its bounding rect. pyqtgraph takes four fifths of the height,
        and so sized the axis for a large font a few pixels short of its labels' descenders, which it
        then cut off (it clips the labels to the axis: "jue" read "iue" at 16 pt)."""
        key = (font, text)
        size = TimeAxis._text_sizes.get(key)
        if size is None:
            if len(TimeAxis._text_sizes) > TEXT_SIZES_KEPT:
                TimeAxis._text_sizes.clear()  # following live, every new time is a new text
            rect = p.boundingRect(QRectF(0, 0, 100, 100), Qt.AlignmentFlag.AlignCenter, text)
            size = TimeAxis._text_sizes[key] = (rect.width(), rect.height())
        return size

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, list[float]]]:  # noqa: N802, N803
        """Round local times as far apart as a label needs. pyqtgraph's own choice left a narrow panel
        (Per GPU, 230 px at 1 h) one tick at its very edge, and so no time it could read."""
        if maxVal <= minVal or size <= 0:
            return super().tickValues(minVal, maxVal, size)
        dated = maxVal - minVal >= DATED_RANGE_S
        metrics = QFontMetrics(self.font())
        steps: tuple[int, ...]
        if dated:
            label_px, steps = metrics.horizontalAdvance("Wed 30 00:00") + DATED_LABEL_GAP_PX, DATED_STEPS_S
        else:
            # At least the grid's spacing, so that each label sits on a grid line (time_grid_s).
            label_px = max(metrics.horizontalAdvance("00:00:00") + DATED_LABEL_GAP_PX, GRID_SPACING_PX)
            steps = TIME_GRID_STEPS_S
        step = time_step_s(maxVal - minVal, size, label_px, steps)
        return [(float(step), [float(v) for v in round_local_times(minVal, maxVal, step)])]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802 - Qt override
        low, high = self.range
        return self.tick_strings_for(low, high, values, spacing)

    def tick_strings_for(self, start_s: float, end_s: float, values: Sequence[float], spacing: float) -> list[str]:
        """The labels of ticks at ``values``, ``spacing`` apart, on an axis showing ``start_s``..``end_s``."""
        locale = QLocale()
        if end_s - start_s < DATED_RANGE_S:
            shape = "HH:mm:ss" if spacing < 60 else "HH:mm"
            return [locale.toString(QDateTime.fromSecsSinceEpoch(round(v)), shape) for v in values]
        days = spacing >= 86400
        return [
            locale.toString(QDateTime.fromSecsSinceEpoch(round(v)), "ddd d" if days else "ddd HH:mm") for v in values
        ]


# Throttle strip: the most significant active reason decides the colour of a bucket.
REASON_COLOURS = {
    0x1: (150, 160, 175),  # idle
    0x2: (90, 140, 220),  # application clocks
    0x4: (245, 165, 36),  # software power cap
    0x8: (176, 122, 161),  # hardware slowdown
    0x10: (90, 140, 220),  # sync boost
    0x20: (229, 72, 77),  # software thermal slowdown
    0x40: (200, 30, 40),  # hardware thermal slowdown
    0x80: (245, 120, 20),  # hardware power brake
    0x100: (90, 140, 220),  # display clocks
    0x200: (245, 165, 36),  # board limit: a power limit of the board's, amber as the power cap
    0x400: (176, 122, 161),  # reliability limit: held down by the hardware, purple as its slowdown
}
REASON_LEGEND = QT_TRANSLATE_NOOP(
    "Panel", "red: thermal · orange/amber: power · purple: hardware slowdown · grey: idle · blue: clocks set"
)


def reason_rgba(bitmasks: np.ndarray) -> np.ndarray:
    """An RGBA colour per bitmask (transparent where none or unknown)."""
    rgba = np.zeros((*bitmasks.shape, 4), dtype=np.ubyte)
    known = np.isfinite(bitmasks)
    masks = np.where(known, bitmasks, 0).astype(np.int64)
    for bit, _ in CLOCK_EVENT_REASONS:  # ascending bits: later (more significant) ones win
        active = (masks & bit) != 0
        rgba[active, :3] = REASON_COLOURS[bit]
        rgba[active, 3] = 255
    return rgba


def device_ratio(painter: QPainter) -> float:
    device = painter.device()
    return device.devicePixelRatioF() if device is not None else 1.0


def device_pen(pen: QPen, ratio: float, factor: float = 1.0) -> QPen:
    """``pen`` widened for a screen of ``ratio`` device pixels a pixel: a cosmetic pen is as wide in
    device pixels at any scale, so at 200 % a 1 px line was half as thick as the text beside it
    (width 0 is Qt's one device pixel)."""
    scaled = QPen(pen)
    scaled.setWidthF((pen.widthF() or 1.0) * ratio * factor)
    return scaled


class Rule(pg.InfiniteLine):
    """pyqtgraph's InfiniteLine (a limit, an alert's marker, the crosshair) as wide at any screen scale."""

    def paint(self, painter: QPainter, *args: object) -> None:
        ratio = device_ratio(painter)
        if ratio == 1.0:
            super().paint(painter, *args)
            return
        kept: QPen = self.currentPen  # type: ignore[has-type]  # (pyqtgraph sets it untyped)
        self.currentPen = device_pen(kept, ratio)
        try:
            super().paint(painter, *args)
        finally:
            self.currentPen = kept


class Lines(pg.GraphicsObject):
    """Every line of one kind in a panel (a metric of each GPU, each process, each core) in ONE
    graphics item. pyqtgraph's curve items cost about 0.25 ms of Python each per paint (bounds,
    pixel size, path cache): 30 ms for a panel of 64 GPUs, where Qt's own drawing takes 4 ms."""

    def __init__(self) -> None:
        super().__init__()
        self.data: list[tuple[np.ndarray, np.ndarray] | None] = []  # per line: (times, values), None: hidden
        self.peaks: np.ndarray | None = None  # per time and line: the bucket's highest reading (set_lines)
        self._paths: list[tuple[QPen, _Line]] = []  # per line drawn: its pen and its points
        self._columns: list[int] = []  # the line (GPU column) each of _paths draws
        self.emphasis = -1  # a line drawn wider, the others faint (the GPU under the cursor); -1: none
        # x0, x1 of what is shown; y0, y1 around its values, as _value_range keeps them
        self._bounds: tuple[float, float, float, float] | None = None
        self._kept: _Kept | None = None  # what set_lines last drew, to move its polylines on (_move_on)
        self._rect: QRectF | None = None  # boundingRect, until the data or the view's scale changes

    def set_lines(
        self,
        xs: np.ndarray,
        ys: np.ndarray,
        pens: Sequence[QPen],
        shown: Sequence[bool],
        peaks: np.ndarray | None = None,
    ) -> None:
        """Lines sharing their times: ``ys`` holds one column per line, ``pens`` and ``shown`` an
        entry per column; ``peaks``, shaped as ``ys``, each bucket's highest reading where a line's
        points are buckets' means (the readout says it: the line, a mean, hides a short peak)."""
        self.peaks = peaks if peaks is not None and peaks.shape == ys.shape else None
        columns = [k for k, on in enumerate(shown) if on]
        values = ys[:, columns]
        data = [(xs, ys[:, k]) if on else None for k, on in enumerate(shown)]
        kept = _Kept(xs, values, tuple(pens), tuple(shown))
        moved_from_s = self._move_on(kept)
        bounds = None
        if len(xs) and values.size:
            y0, y1 = float(np.fmin.reduce(values, axis=None)), float(np.fmax.reduce(values, axis=None))
            if math.isfinite(y0):  # NaN: none finite
                bounds = (float(xs[0]), float(xs[-1]), *self._value_range(y0, y1, keep=moved_from_s is not None))
        self._set(data, pens, bounds, moved_from_s)
        if len(self._paths) == len(columns):  # every line shown is drawn: _move_on can move them on
            self._kept = kept

    def _move_on(self, new: _Kept) -> float | None:
        """Following live, each redraw reads the range a second on: the readings of the last one
        but the first few, and a new one. The kept polylines lose the points gone from the front
        and take the new ones at the end, rather than every line being built anew from all its
        points each second (pyqtgraph's path of a line with a gap took 25 µs a line); each ends as
        the very line a rebuild would make. None where the lines are not now those of ``new``;
        else the time from which they changed (-inf: more than their ends)."""
        old = self._kept
        count = len(new.times)
        if old is None or old.pens != new.pens or old.shown != new.shown or count < 2:
            return None
        gone = int(np.searchsorted(old.times, new.times[0]))  # rows gone from the front
        if gone >= len(old.times) or old.times[gone] != new.times[0]:
            return None
        common = min(len(old.times) - gone, count)
        # Compared as bytes where they are the same bytes (a second's redraw: all but the newest
        # rows): the element-wise comparisons were a third of a move on.
        if old.times[gone : gone + common].tobytes() != new.times[:common].tobytes():
            return None  # (times are never NaN, nor -0.0)
        # The last bucket is rewritten while it is open: the readings are kept up to where they part.
        before, now = old.values[gone : gone + common], new.values[:common]
        if before.tobytes() == now.tobytes():
            same = common  # rows equal in both
        else:
            parted = np.flatnonzero(((before != now) & ~(np.isnan(before) & np.isnan(now))).any(axis=1))
            same = int(parted[0]) if len(parted) else common
        if count - same > MOVE_ON_MAX_POINTS:
            return None
        # The lines change from the last row both share on (the segment into the first new one).
        changed_from_s = float(new.times[same - 1]) if gone == 0 and same > 0 else -math.inf
        times = new.times[same:].tolist()
        finite = np.isfinite(new.values)
        readings = np.count_nonzero(finite, axis=0)
        firsts = np.where(readings > 0, np.argmax(finite, axis=0), count).tolist()
        gaps = (count - np.asarray(firsts) != readings).tolist()  # readings missing after the first
        for k, (_, line) in enumerate(self._paths):
            values = new.values[:, k]
            first = firsts[k]
            start = line.first - gone  # the row of the line's first point now (< 0: gone)
            size = line.points.size()
            end = min(start + size, same)  # the points kept run from its first reading to this row
            if max(start, first) != first or first >= end:
                self._paths[k] = (self._paths[k][0], _Line.of(new.times, values))
                changed_from_s = -math.inf
                continue
            if first != line.first:
                changed_from_s = -math.inf
            if first > start:
                line.points.remove(0, first - start)
            if start + size > end:
                line.points.remove(end - first, start + size - end)
            for row in range(end, count):
                line.points.append(QPointF(times[row - same], float(values[row])))
            line.first = first
            line.shape(new.times[first:], values[first:], gaps[k])
        return changed_from_s

    def set_each(self, data: Sequence[tuple[np.ndarray, np.ndarray] | None], pens: Sequence[QPen]) -> None:
        """A (times, values) pair per line, or None for a hidden one."""
        x0, x1, y0, y1 = np.inf, -np.inf, np.inf, -np.inf
        for line in data:
            if line is None or not len(line[0]):
                continue
            finite = line[1][np.isfinite(line[1])]
            if len(finite):
                x0, x1 = min(x0, float(line[0][0])), max(x1, float(line[0][-1]))
                y0, y1 = min(y0, float(finite.min())), max(y1, float(finite.max()))
        self._set(data, pens, (x0, x1, *self._value_range(y0, y1, keep=False)) if x0 <= x1 else None)

    def _value_range(self, low: float, high: float, keep: bool) -> tuple[float, float]:
        """The values' range as this item reports it (to the view box's auto range, and in its
        bounding rect): out to round numbers; ``keep`` (the lines moved on, following live): the
        last one while it holds them and is not more than twice as wide as they need. Following
        live, a new high or low every few seconds (a climbing memory, noise) refitted the panel's
        value range, and so its axis, grid and lines, where now only their new stretch is drawn."""
        shown = _rounded_out(low, high)
        if keep and self._bounds is not None:
            kept_low, kept_high = self._bounds[2:]
            if kept_low <= low and high <= kept_high and kept_high - kept_low <= 2 * (shown[1] - shown[0]):
                return kept_low, kept_high
        return shown

    def _set(
        self,
        data: Sequence[tuple[np.ndarray, np.ndarray] | None],
        pens: Sequence[QPen],
        bounds: tuple[float, float, float, float] | None,
        moved_from_s: float | None = None,
    ) -> None:
        """``moved_from_s``: the lines drawn are already those of ``data``, changed from this time
        on (_move_on); None: they are built here."""
        before = self._bounds
        rect = self._rect
        changed_from_s = -math.inf if moved_from_s is None else moved_from_s
        if (
            math.isfinite(changed_from_s)
            # A highlighted line is drawn wider and over the others: its stretch painted alone came
            # out a few pixels off a whole paint, beside the stretch (the screen-grab test), and a
            # highlight lasts only while the cursor is on a line.
            and self.emphasis not in self._columns
            and rect is not None
            and bounds is not None
            and before is not None
            and (bounds[0], *bounds[2:]) == (before[0], *before[2:])
            and bounds[1] <= rect.right()
        ):
            # Only their ends changed, inside the item as it was: that stretch is painted anew
            # (with the room around the lines), and within the view alone: an axis it overlaps
            # by that room would be painted anew too.
            self.data = list(data)
            self._bounds = bounds
            pad_x = before[0] - rect.left()
            left, right = changed_from_s - pad_x, max(before[1], bounds[1]) + pad_x
            stretch = QRectF(QPointF(left, rect.top()), QPointF(right, rect.bottom()))
            view = self.getViewBox()
            self.update(stretch & view.viewRect() if view is not None else stretch)
            return
        self.prepareGeometryChange()
        self._rect = None
        self.data = list(data)
        self._kept = None
        if moved_from_s is None:
            # Built once per data change; a moving view only changes the painter's transform.
            drawn = [
                (column, pen, line)
                for column, (pen, line) in enumerate(zip(pens, self.data, strict=True))
                if line is not None and len(line[0]) > 1
            ]
            self._paths = [(pen, _Line.of(*line)) for _, pen, line in drawn]
            self._columns = [column for column, _, _ in drawn]
        values_before = self._bounds[2:] if self._bounds is not None else None
        self._bounds = bounds
        # The view box fits its value range to the new bounds at its next paint: told by Qt's
        # prepareGeometryChange alone, a panel first drawn after a scroll kept an empty range.
        # Told only when the values' span changed: the time range is the window's, and refitting
        # the value range of every panel each second cost more than drawing its lines.
        if (bounds[2:] if bounds is not None else None) != values_before:
            self.informViewBoundsChanged()
        self.update()

    def clear(self) -> None:
        self.peaks = None
        self.set_each((), ())

    def set_emphasis(self, column: int) -> None:
        if column != self.emphasis:
            self.emphasis = column
            self.update()

    def line(self, index: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(times, values) of one line as drawn; None where it is hidden or absent."""
        return self.data[index] if index < len(self.data) else None

    def dataBounds(  # noqa: N802 - pyqtgraph's auto range asks each item this
        self,
        ax: int,
        frac: float = 1.0,
        orthoRange: object = None,  # noqa: N803
    ) -> tuple[float | None, float | None]:
        if self._bounds is None:
            return None, None
        return self._bounds[:2] if ax == 0 else self._bounds[2:]

    def viewTransformChanged(self) -> None:  # noqa: N802 - pyqtgraph's hook
        self._rect = None  # its pixel around the data is another size now

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        # Kept: Qt asks a dozen times a paint, and working out the pixel's size took a fifth of the paint.
        if self._rect is None:
            self._rect = self._bounding_rect()
        return self._rect

    def _bounding_rect(self) -> QRectF:
        if self._bounds is None:
            return QRectF()
        x0, x1, y0, y1 = self._bounds
        # As far right as the view reaches: following live the lines grow towards it (the window's
        # lead) without the item changing size, which has Qt paint all of it anew.
        view = self.getViewBox()
        x1 = max(x1, view.viewRange()[0][1]) if view is not None else x1
        # Half the widest line around the data, and a pixel: pens are as wide in (logical) pixels
        # at any scale.
        px, py = self.pixelVectors()
        pad_px = max((pen.widthF() or 1.0 for pen, _ in self._paths), default=1.0) / 2 + 1
        pad_x = 0.0 if px is None else px.length() * pad_px
        pad_y = 0.0 if py is None else py.length() * pad_px
        return QRectF(x0 - pad_x, y0 - pad_y, x1 - x0 + 2 * pad_x, y1 - y0 + 2 * pad_y)

    def paint(self, painter: QPainter, *args: object) -> None:
        ratio = device_ratio(painter)
        emphasised = self.emphasis in self._columns
        last = []  # the emphasised line, over the others
        for column, (pen, path) in zip(self._columns, self._paths, strict=True):
            if ratio != 1.0 or emphasised:
                pen = device_pen(pen, ratio, EMPHASIS_WIDTH if column == self.emphasis else 1.0)
                if emphasised and column != self.emphasis:
                    faint = pen.color()
                    faint.setAlpha(FAINT_ALPHA)
                    pen.setColor(faint)
            if column == self.emphasis:
                last.append((pen, path))
                continue
            painter.setPen(pen)
            path.draw(painter)
        for pen, path in last:
            painter.setPen(pen)
            path.draw(painter)


class _Line:
    """How one line is drawn: its points from its first reading on (those missing before it left
    out), kept so that Lines._move_on can move them on; drawn as a polyline, which Qt draws as
    pyqtgraph's path of the line pixel for pixel (tested), or where readings are missing after
    the first, as pyqtgraph's path."""

    __slots__ = ("first", "path", "points")

    def __init__(self, points: QPolygonF, first: int, times: np.ndarray, values: np.ndarray) -> None:
        self.points = points  # NaN where a reading is missing
        self.first = first  # the row of the first point
        self.path: QPainterPath | None = None
        self.shape(times, values)

    @classmethod
    def of(cls, times: np.ndarray, values: np.ndarray) -> _Line:
        finite = np.isfinite(values)
        first = int(np.argmax(finite)) if finite.any() else len(values)
        if first == len(values):
            return cls(QPolygonF(), first, times[:0], values[:0])  # (pyqtgraph's view of an empty one is read-only)
        return cls(_polyline(times[first:], values[first:]), first, times[first:], values[first:])

    def shape(self, times: np.ndarray, values: np.ndarray, gaps: bool | None = None) -> None:
        """pyqtgraph's path of the line where readings are missing after the first (its ``times``
        and ``values`` from the first reading on); none where none are (the polyline is drawn).
        Built anew each time: it has the point before each gap twice, which Qt draws differently
        from a line that ends there, and a path cannot lose its first points. ``gaps``: whether
        readings are missing, where the caller knows."""
        if gaps is None:
            gaps = not np.isfinite(values).all()
        self.path = pg.arrayToQPath(times, values, connect="finite") if gaps else None

    def draw(self, painter: QPainter) -> None:
        if self.path is not None:
            painter.drawPath(self.path)
        elif self.points.size() > 1:  # one point: no line, as in pyqtgraph's path
            painter.drawPolyline(self.points)


def _rounded_out(low: float, high: float) -> tuple[float, float]:
    """``low``..``high`` widened to multiples of half the span's power of ten (0..31.6 GiB to
    0..32.6 GiB, 74..603 W to 50..650 W); a single value to half its own."""
    size = high - low if high > low else abs(high)
    if not math.isfinite(size) or size <= 0:
        return low, high
    step = 10.0 ** math.floor(math.log10(size)) / 2
    return math.floor(low / step) * step, math.ceil(high / step) * step


def _polyline(times: np.ndarray, values: np.ndarray) -> QPolygonF:
    polyline = pg.functions.create_qpolygonf(len(times))
    points = pg.functions.ndarray_from_qpolygonf(polyline)
    points[:, 0] = times
    points[:, 1] = values
    return polyline


@dataclass(frozen=True)
class _Kept:
    """What Lines.set_lines last drew: the times, the values of the lines shown, and how."""

    times: np.ndarray
    values: np.ndarray  # a column per line shown
    pens: tuple[QPen, ...]
    shown: tuple[bool, ...]


LABEL_PATCH_ALPHA = 220  # a limit's name over the lines: the lines faintly through it, the letters clear
MOVE_ON_MAX_POINTS = 64  # new points past which a line is built anew rather than moved on


# Steps of the time grid, in seconds: the first that leaves GRID_SPACING_PX between lines.
TIME_GRID_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
GRID_SPACING_PX = 90


def time_step_s(span_s: float, width_px: float, apart_px: float, steps: Sequence[int]) -> int:
    """The first of ``steps`` that leaves ``apart_px`` between ticks; on a plot so narrow that it
    leaves fewer than two in the span, the one before, where that leaves at least three quarters
    of it (a 230 px panel at 5 minutes and a bit: one tick at 5 minutes, often at an edge where
    its label cannot be drawn; two or three at 2 minutes, 88 px apart)."""
    wanted = span_s * apart_px / width_px
    index = next((k for k, s in enumerate(steps) if s >= wanted), len(steps) - 1)
    if index > 0 and span_s < 2 * steps[index] and steps[index - 1] * width_px / span_s >= 0.75 * apart_px:
        index -= 1
    return steps[index]


def time_grid_s(start_s: float, end_s: float, width_px: float) -> np.ndarray:
    """Times of vertical grid lines over [start_s, end_s]: round local times (a line at each full
    hour, say), about GRID_SPACING_PX apart."""
    if not (math.isfinite(start_s) and math.isfinite(end_s)) or end_s <= start_s or width_px <= 0:
        return np.empty(0)
    step = time_step_s(end_s - start_s, width_px, GRID_SPACING_PX, TIME_GRID_STEPS_S)
    return round_local_times(start_s, end_s, step)


_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


def round_local_times(start_s: float, end_s: float, step_s: float) -> np.ndarray:
    """The round local times ``step_s`` apart in [start_s, end_s) (local midnights and hours, as
    the time axis labels them). Steps of hours go by the wall clock: past a change of daylight
    saving time, fixed seconds from the first put every later midnight an hour off, each day
    labelled with the day before's name at 23:00; hours by _round_hours."""
    day = time.localtime(start_s)
    if step_s < 3600 or step_s % 3600:  # by the offset at the start
        first = math.ceil((start_s + day.tm_gmtoff) / step_s) * step_s - day.tm_gmtoff
        return np.arange(first, end_s, step_s, dtype=np.float64)
    hours = int(step_s // 3600)
    if hours < 24:
        return _round_hours(start_s, end_s, hours, day)
    # From a day whose number since 1970 is a multiple of the step's days, as their seconds'
    # rounding had it: the ticks stay on the same days as a view following live moves on.
    hour = -24 * (_local_day(day) % (hours // 24))
    found: list[float] = []
    while True:
        # mktime carries hours past 23 into the days after, each in its own zone offset.
        at = time.mktime((day.tm_year, day.tm_mon, day.tm_mday, hour, 0, 0, 0, 0, -1))
        if at >= end_s:
            return np.array(found, dtype=np.float64)
        if at >= start_s and (not found or at > found[-1]):
            found.append(at)
        hour += hours


def _round_hours(start_s: float, end_s: float, hours: int, at_start: time.struct_time) -> np.ndarray:
    """The times in [start_s, end_s) whose wall clock shows a whole hour that is a multiple of
    ``hours``, each as often as the clock shows it: where the clocks go back, 02:00 summer time and
    02:00 winter time (a step of the wall clock skipped the repeated hour), where they go forward,
    none at the hour that does not happen. Ticks closer than the step allows (the repeated hour
    at steps of two hours and more) are left out. Looked for every half hour from the start of the
    start's local hour: whole hours of a zone half an hour off UTC, and past a change of half an
    hour (Lord Howe), are on that grid too."""
    found: list[float] = []
    candidate = math.floor(start_s) - at_start.tm_min * 60 - at_start.tm_sec
    while candidate < end_s:
        if candidate >= start_s:
            moment = time.localtime(candidate)
            if (
                moment.tm_min == 0
                and moment.tm_sec == 0
                and moment.tm_hour % hours == 0
                and (not found or candidate - found[-1] > (hours - 1) * 3600)
            ):
                found.append(float(candidate))
        candidate += 1800
    return np.array(found, dtype=np.float64)


def _local_day(moment: time.struct_time) -> int:
    """The local date's day number since 1970-01-01."""
    return datetime.date(moment.tm_year, moment.tm_mon, moment.tm_mday).toordinal() - _EPOCH_ORDINAL


class Grid(pg.GraphicsObject):
    """Light lines at round values and times. pyqtgraph's own grid (``showGrid``) redraws its axes'
    whole area and cost about 50 ms a redraw; this draws a dozen cosmetic lines."""

    def __init__(self, values: pg.AxisItem) -> None:
        super().__init__()
        self._values = values  # the value axis, whose major ticks get a line each
        self._pen = QPen()
        self._pen.setCosmetic(True)
        self._values_key: tuple[float, float, float] | None = None
        self._value_ticks: list[float] = []
        self._lines_key: tuple[float, ...] | None = None
        self._lines: list[QLineF] = []  # as last drawn, kept while the view shows the same
        self.setZValue(-100)

    def set_colour(self, colour: QColor) -> None:
        grid = QColor(colour)
        grid.setAlpha(GRID_ALPHA)
        self._pen.setColor(grid)
        self.update()

    def viewRangeChanged(self) -> None:  # noqa: N802 - pyqtgraph's hook
        self.prepareGeometryChange()
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        view = self.getViewBox()
        return QRectF() if view is None else view.viewRect()

    def paint(self, painter: QPainter, *args: object) -> None:
        view = self.getViewBox()
        if view is None:
            return
        rect = view.viewRect()
        # The value axis' ticks cost about a millisecond to work out: kept while its range stays
        # (following live, only the time range moves).
        key = (rect.top(), rect.bottom(), view.height())
        if key != self._values_key:
            levels = self._values.tickValues(rect.top(), rect.bottom(), max(1.0, view.height()))
            self._values_key, self._value_ticks = key, list(levels[0][1]) if levels else []
        # Following live, a second between moves of the view paints a stretch a few pixels wide
        # of every panel in view: the lines themselves are the same.
        lines_key = (*key, rect.left(), rect.right(), view.width())
        if lines_key != self._lines_key:
            lines = [QLineF(rect.left(), y, rect.right(), y) for y in self._value_ticks]
            grid_s = time_grid_s(rect.left(), rect.right(), view.width())
            lines += [QLineF(x, rect.top(), x, rect.bottom()) for x in grid_s]
            self._lines_key, self._lines = lines_key, lines
        ratio = device_ratio(painter)
        painter.setPen(self._pen if ratio == 1.0 else device_pen(self._pen, ratio))
        painter.drawLines(self._lines)


class Panel:
    """One plot: its lines (one Lines item per metric, a column per GPU), a crosshair and a grid."""

    def __init__(self, spec: PanelSpec, plot: pg.PlotItem, gpu_count: int, background: QColor, title: str = "") -> None:
        self.spec = spec
        self.title = title or spec.title
        self.note = ""  # beside the title (show_note)
        self.collapsed = ""  # the line shown instead of the plot, where no GPU has its metrics (set_collapsed)
        self.plot = plot
        self.gpu_count = gpu_count
        self.lines: list[Lines] = []  # one per metric: columns are GPUs
        self.pens: list[list[QPen]] = []  # per metric, per GPU (recolour)
        self.recolour(background)
        self.extra = Lines()  # per-process or per-core lines
        self.extra_names: list[tuple[str, str]] = []  # per process line: (name, colour) for the readout
        plot.addItem(self.extra)
        plot.hideButtons()  # pyqtgraph's auto-range "A": the window sets every range itself
        # pyqtgraph 0.14 means to keep the view box's inner group from refitting the value range
        # whenever the view moves, but misspells the attribute (ChildGroup sets
        # "…__inform_view_on_change"): following live, every panel refitted every second for nothing.
        plot.getViewBox().childGroup._GraphicsObject__inform_view_on_changes = False
        self.image: pg.ImageItem | None = None
        self.strip_data: tuple[np.ndarray, np.ndarray] | None = None  # times, a bitmask per GPU
        self.strip_hidden: frozenset[int] = frozenset()  # GPUs left out of the strip (unticked)
        self.markers: list[Rule] = []
        self.limits: list[Rule] = []  # fixed limits, horizontal (set_limits)
        self._limits_shown: tuple[tuple[tuple[float, str], ...], int, int] | None = None  # (limits, colours)
        self.crosshair = Rule(angle=90, movable=False, pen=pg.mkPen((128, 128, 128), width=1))
        self.crosshair.setVisible(False)
        plot.addItem(self.crosshair, ignoreBounds=True)
        self.grid = Grid(plot.getAxis("left"))
        plot.addItem(self.grid, ignoreBounds=True)
        self.notice = pg.TextItem(anchor=(0.5, 0.5))
        plot.addItem(self.notice, ignoreBounds=True)
        unit = spec.unit
        if unit is Unit.PERCENT:
            plot.setYRange(0, 100, padding=0.02)  # a percentage reads best against its full scale
            plot.getViewBox().setMouseEnabled(y=False)
        elif spec.min_span:  # noise near a flat value should not be magnified into big swings
            plot.getViewBox().setLimits(minYRange=spec.min_span)
        if unit in (Unit.BYTES, Unit.BYTES_PER_S):
            # Amounts read from zero. Auto-ranged around a flat 31.6 GiB, the axis spanned 1 MiB
            # and needed labels like "31.6330 GiB", too wide to be drawn: no labels at all.
            # A line at zero (drawn in no colour) keeps zero inside pyqtgraph's auto range.
            plot.addItem(pg.InfiniteLine(pos=0, angle=0, pen=pg.mkPen(None), movable=False))
        if spec.strip:
            self.image = pg.ImageItem()
            plot.addItem(self.image)
            plot.getViewBox().setMouseEnabled(y=False)
            # Each row of the strip is a GPU: named on the axis, not left to a legend.
            rows = [(k + 0.5, f"GPU {k}") for k in range(gpu_count)]
            plot.getAxis("left").setTicks([rows, []])
        else:
            # No clip-to-view or downsampling of pyqtgraph's: the window asks the history for the
            # visible range at about one point per pixel.
            for _ in spec.metrics:
                self.lines.append(Lines())
                plot.addItem(self.lines[-1])

    def set_markers(self, count: int) -> list[Rule]:
        """Vertical lines marking alerts on this timeline; reused, never destroyed."""
        while len(self.markers) < count:
            marker = Rule(angle=90, movable=False)
            self.plot.addItem(marker, ignoreBounds=True)
            self.markers.append(marker)
        for k, marker in enumerate(self.markers):
            marker.setVisible(k < count)
        return self.markers[:count]

    def set_limits(self, limits: Sequence[tuple[float, str]], colour: QColor, background: QColor) -> None:
        """Horizontal lines at fixed limits (a GPU's slowdown temperature), named once, under the
        lowest (limits a few degrees apart would print over each other). Inside the auto range on
        purpose: the headroom to the limit is what they are for. The name on a patch of the
        ``background``: the temperature lines ran through its letters."""
        while len(self.limits) < len(limits):
            options = {"position": 0.02, "anchors": [(0, 0), (0, 0)]}  # the text hangs below the line
            line = Rule(angle=0, movable=False, label="", labelOpts=options)
            # Its label moves with the view and, unlike the line, is no part of the value range:
            # left to pyqtgraph, each move refitted the panel's value range (as for the inner group).
            line.label._GraphicsObject__inform_view_on_changes = False
            self.plot.addItem(line)
            self.limits.append(line)
        wanted = (tuple(limits), colour.rgba(), background.rgba())
        if wanted == self._limits_shown:
            return  # as shown: set again, each label was laid out anew every second
        self._limits_shown = wanted
        names = " · ".join(text for _, text in limits)
        for k, line in enumerate(self.limits):
            line.setVisible(k < len(limits))
            if k < len(limits):
                line.setPen(pg.mkPen(colour, width=1, style=Qt.PenStyle.DashDotDotLine))
                line.setPos(limits[k][0])
                line.label.setFormat(names if k == 0 else "")
                line.label.setColor(colour)
                patch = QColor(background)  # under the one name (an empty label's patch notched its line)
                patch.setAlpha(LABEL_PATCH_ALPHA)
                line.label.fill = pg.mkBrush(patch if k == 0 else None)  # (TextItem paints it under the text)
                line.label.update()

    def recolour(self, background: QColor) -> None:
        """The GPUs' colours for lines on ``background``: drawn in them at the next redraw."""
        self.background = QColor(background)
        self.pens = [
            [
                pg.mkPen(gpu_colour(gpu, background), width=1, style=LINE_STYLES[k % len(LINE_STYLES)])
                for gpu in range(self.gpu_count)
            ]
            for k in range(len(self.spec.metrics))
        ]

    def forget_limits(self) -> None:
        """The limit lines are set again at the next set_limits, in its colours (a palette change)."""
        self._limits_shown = None

    def title_text(self) -> str:
        """The title, and the note on GPUs left out under it when other lines are drawn: on one line
        the line-style key and the note ran past both edges, and beside the group's name alone the
        key was gone (which dashed line was what, not said)."""
        if self.collapsed:
            return self.collapsed
        if not self.note:
            return self.title
        return f"{self.title}<br>{self.note}"

    def show_title(self, colour: QColor) -> None:
        """The title in ``colour``, its row as tall as its lines (pyqtgraph fixes it at one)."""
        self.plot.setTitle(self.title_text(), color=colour.name(), size="10pt")
        if self.note and not self.collapsed:  # two lines
            height = max(TITLE_ROW_PX, math.ceil(self.plot.titleLabel.item.boundingRect().height()) + 4)
            self.plot.titleLabel.setMaximumHeight(height)
            self.plot.layout.setRowFixedHeight(0, height)

    def show_note(self, text: str, colour: QColor) -> None:
        """A note in the title area (the GPM note beside GPUs that have GPM): drawn in the middle
        of the plot, it covered the live lines."""
        if text != self.note:
            self.note = text
            self.show_title(colour)

    def set_collapsed(self, text: str, colour: QColor) -> bool:
        """One line, ``text``, instead of the plot (a title without axes or lines), or the plot again
        (``text`` ""): a panel no GPU can fill is not a full height of empty chart. Whether it changed."""
        if text == self.collapsed:
            return False
        self.collapsed = text
        shown = not text
        view = self.plot.getViewBox()
        view.setVisible(shown)
        view.setMaximumHeight(QWIDGETSIZE_MAX if shown else 0)
        self.plot.getAxis("left").setVisible(shown)
        bottom = self.plot.getAxis("bottom")
        bottom.setVisible(shown)
        bottom.setHeight(bottom.fixedHeight)  # its height again: none while hidden, its own when shown
        self.plot.setMaximumHeight(QWIDGETSIZE_MAX if shown else COLLAPSED_HEIGHT_PX)
        self.show_title(colour)
        return True

    def show_notice(self, text: str) -> None:
        self.notice.setText(text)
        self.notice.setVisible(bool(text))
        if text:
            (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
            self.notice.setPos((x0 + x1) / 2, (y0 + y1) / 2)

    def set_strip(self, series: Series | None, gpu_count: int, hidden: Collection[int] = ()) -> None:
        """The throttle reasons' strip, a row per GPU; a GPU unticked is left blank, and out of the
        readout, as it is out of every line panel (it was drawn and read out still)."""
        if self.image is None or series is None or len(series.times_s) == 0:
            self.strip_data, self.strip_hidden = None, frozenset()  # nothing read: nothing to read out
            return
        masks = series.high[:, :gpu_count].copy()
        self.strip_hidden = frozenset(g for g in hidden if g < gpu_count)
        masks[:, sorted(self.strip_hidden)] = np.nan
        self.strip_data = (series.times_s, masks)
        rgba = reason_rgba(masks)  # max of a bucket keeps its highest reason
        self.image.setImage(rgba, autoLevels=False)
        step = series.step_s
        self.image.setRect(float(series.times_s[0]), 0.0, len(series.times_s) * step, float(gpu_count))
        self.plot.setYRange(0, gpu_count, padding=0)

    def _process_values_at(self, x: float) -> list[tuple[str, str, list[str]]]:
        """Each process (or job) line with a value near ``x``, named, biggest first."""
        found = []
        for (name, colour), line in zip(self.extra_names, self.extra.data, strict=False):
            if line is None or not len(line[0]):
                continue
            xs, ys = line
            at = min(max(0, int(np.searchsorted(xs, x, side="right")) - 1), len(xs) - 1)
            step = xs[1] - xs[0] if len(xs) > 1 else 1.0
            value = float(ys[at]) if xs[at] <= x < xs[at] + step else math.nan
            if math.isfinite(value):
                shown = f"{value:.0f} %" if self.spec.process_sm else format_bytes(value)
                found.append((value, (name, colour, [shown])))
        return [row for _, row in sorted(found, key=lambda item: -item[0])]

    def values_at(self, x: float, names: Callable[[int], str]) -> list[tuple[str, str, list[str]]]:
        """Every shown line's value at time ``x``, nearest reading: (name, colour, a value per metric)
        per GPU (or one row for the machine). ``names`` names a GPU column."""
        rows: dict[int, list[str]] = {}
        if self.strip_data is not None and len(self.strip_data[0]):
            times, masks = self.strip_data
            at = _reading_at(times, x)  # (clamped to the last bucket, it read the lead past now)
            for column in range(masks.shape[1]):
                if column in self.strip_hidden:
                    continue
                value = math.nan if at is None else float(masks[at, column])
                rows[column] = [format_precise(self.spec.metrics[0], value) if math.isfinite(value) else "–"]
        for k, lines in enumerate(self.lines):  # a strip has no lines
            metric = self.spec.metrics[k]
            for column, line in enumerate(lines.data):
                if line is None or not len(line[0]):
                    continue
                reading = _reading_at(line[0], x)
                value = math.nan if reading is None else float(line[1][reading])
                said = format_precise(metric, value)
                peak = math.nan if reading is None or lines.peaks is None else float(lines.peaks[reading, column])
                if math.isfinite(peak) and format_precise(metric, peak) != said:
                    said = translate("Panel", "{mean} (peak {peak})").format(
                        mean=said, peak=format_precise(metric, peak)
                    )
                rows.setdefault(column, ["–"] * len(self.lines))[k] = said
        if self.extra_names:
            return self._process_values_at(x)
        if not self.gpu_count:
            return [("", "", values) for values in rows.values()]
        return [
            (names(column), gpu_colour(column, self.background).name(), values)
            for column, values in sorted(rows.items())
        ]

    def gpu_near(self, x: float, y: float, tolerance: float) -> int:
        """The GPU whose line passes nearest to (``x``, ``y``), at most ``tolerance`` (in the panel's
        values) away; -1 where none is, or the panel has no GPU lines."""
        best, best_gap = -1, tolerance
        for lines in self.lines if self.gpu_count else ():
            for column, line in enumerate(lines.data):
                at = None if line is None or not len(line[0]) else _reading_at(line[0], x)
                if line is None or at is None or not math.isfinite(float(line[1][at])):
                    continue
                gap = abs(float(line[1][at]) - y)
                if gap <= best_gap:
                    best, best_gap = column, gap
        return best

    def set_emphasis(self, gpu: int) -> None:
        """``gpu``'s lines wider, the others faint; -1: all as usual."""
        for lines in self.lines:
            lines.set_emphasis(gpu)


def _reading_at(times_s: np.ndarray, x: float) -> int | None:
    """The index of the reading whose bucket holds time ``x`` (times are bucket starts: at 12 h,
    the nearest start read the next 30 s bucket for half of each one); None beyond a step
    outside the readings."""
    step = times_s[1] - times_s[0] if len(times_s) > 1 else 1.0
    if x < times_s[0] - step or x > times_s[-1] + step:
        return None
    return max(0, int(np.searchsorted(times_s, x, side="right")) - 1)
