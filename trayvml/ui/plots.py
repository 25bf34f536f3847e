"""Timeline panels: one pyqtgraph plot per metric group, one curve per GPU (and line style per metric)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics

from trayvml.core.metrics import CLOCK_EVENT_REASONS, GPU_METRICS, HOST_METRICS, Group, Metric, Unit
from trayvml.core.safe_text import rich_text
from trayvml.core.units import format_value
from trayvml.history import Series
from trayvml.ui.theme import gpu_colour

LINE_STYLES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)
STYLE_NAMES = ("solid", "dashed", "dotted", "dash-dot")
PANEL_HEIGHT_PX = 170
MIN_SPAN = {Unit.BYTES: 2**20, Unit.BYTES_PER_S: 2**10, Unit.COUNT: 4.0, Unit.WATTS: 10.0, Unit.MHZ: 100.0}


@dataclass(frozen=True)
class PanelSpec:
    group: Group
    metrics: tuple[Metric, ...]
    strip: bool = False  # a state strip (throttle reasons) rather than lines

    @property
    def title(self) -> str:
        if len(self.metrics) < 2:
            return self.group.value
        styles = ", ".join(f"{m.label.lower()} {STYLE_NAMES[k]}" for k, m in enumerate(self.metrics))
        return f"{self.group.value} — {styles}"


def _panels(metrics: Sequence[Metric], groups: Sequence[Group]) -> tuple[PanelSpec, ...]:
    panels = []
    for group in groups:
        chosen = tuple(m for m in metrics if m.group is group and m.history and m.plot)
        if group is Group.PROCESSES:
            panels.append(PanelSpec(group, ()))
        elif chosen:
            panels.append(PanelSpec(group, chosen, strip=chosen[0].unit is Unit.BITMASK))
    return tuple(panels)


GPU_PANELS = _panels(
    GPU_METRICS,
    (
        Group.UTILIZATION,
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
    return min(len(BYTE_UNITS) - 1, max(0, math.floor(math.log(max(top / 2, 1.0), 1024))))


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
        return 1024.0 ** _byte_power(max(abs(low), abs(high)))

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
            suffix = BYTE_UNITS[round(math.log(base, 1024))] + ("/s" if self.unit is Unit.BYTES_PER_S else "")
            decimals = _decimals(spacing / base)
            return [f"{v / base:.{decimals}f} {suffix}" for v in values]
        unit = {Unit.PERCENT: " %", Unit.CELSIUS: " °C", Unit.WATTS: " W", Unit.MHZ: " MHz"}.get(self.unit, "")
        decimals = _decimals(spacing)
        return [f"{v:.{decimals}f}{unit}" for v in values]


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
}
REASON_LEGEND = "red: thermal · orange/amber: power · purple: hardware slowdown · grey: idle · blue: clocks set"


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


class Panel:
    """One plot: its curves (GPU x metric), a crosshair line and a value readout."""

    def __init__(self, spec: PanelSpec, plot: pg.PlotItem, gpu_count: int) -> None:
        self.spec = spec
        self.plot = plot
        self.curves: dict[tuple[int, int], pg.PlotDataItem] = {}  # (GPU, metric position) -> curve
        self.extra_curves: list[pg.PlotDataItem] = []  # per-process or per-core curves
        self.image: pg.ImageItem | None = None
        self.markers: list[pg.InfiniteLine] = []
        self.crosshair = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen((128, 128, 128), width=1))
        self.crosshair.setVisible(False)
        plot.addItem(self.crosshair, ignoreBounds=True)
        self.readout = pg.TextItem(anchor=(0, 0))
        self.readout.setZValue(10)
        plot.addItem(self.readout, ignoreBounds=True)
        self.notice = pg.TextItem(anchor=(0.5, 0.5))
        plot.addItem(self.notice, ignoreBounds=True)
        unit = spec.metrics[0].unit if spec.metrics else Unit.BYTES
        if unit is Unit.PERCENT:
            plot.setYRange(0, 100, padding=0.02)  # a percentage reads best against its full scale
            plot.getViewBox().setMouseEnabled(y=False)
        elif unit in MIN_SPAN:  # near-zero rates should not magnify noise into big swings
            plot.getViewBox().setLimits(minYRange=MIN_SPAN[unit])
        if unit in (Unit.BYTES, Unit.BYTES_PER_S):
            # Amounts read from zero. Auto-ranged around a flat 31.6 GiB, the axis spanned 1 MiB
            # and needed labels like "31.6330 GiB", too wide to be drawn: no labels at all.
            # A line at zero (drawn in no colour) keeps zero inside pyqtgraph's auto range.
            plot.addItem(pg.InfiniteLine(pos=0, angle=0, pen=pg.mkPen(None), movable=False))
        if spec.strip:
            self.image = pg.ImageItem()
            plot.addItem(self.image)
            plot.getViewBox().setMouseEnabled(y=False)
        else:
            for k, _ in enumerate(spec.metrics):
                for gpu in range(gpu_count):
                    self.curves[(gpu, k)] = self._curve(gpu_colour(gpu), LINE_STYLES[k % len(LINE_STYLES)])

    def _curve(self, colour: object, style: Qt.PenStyle, width: float = 1.0) -> pg.PlotDataItem:
        # No clip-to-view or auto-downsampling: the window already asks the history for the
        # visible range at about one point per pixel (and pyqtgraph clipped against a view
        # range not yet applied when the range and the data changed together).
        curve = pg.PlotDataItem(pen=pg.mkPen(colour, width=width, style=style), connect="finite", skipFiniteCheck=True)
        self.plot.addItem(curve)
        return curve

    def set_extra_curves(self, count: int) -> list[pg.PlotDataItem]:
        """Curves for a varying set of series (processes); reused, never destroyed."""
        while len(self.extra_curves) < count:
            self.extra_curves.append(self._curve((128, 128, 128), Qt.PenStyle.SolidLine))
        for k, curve in enumerate(self.extra_curves):
            curve.setVisible(k < count)
        return self.extra_curves[:count]

    def set_markers(self, count: int) -> list[pg.InfiniteLine]:
        """Vertical lines marking alerts on this timeline; reused, never destroyed."""
        while len(self.markers) < count:
            marker = pg.InfiniteLine(angle=90, movable=False)
            self.plot.addItem(marker, ignoreBounds=True)
            self.markers.append(marker)
        for k, marker in enumerate(self.markers):
            marker.setVisible(k < count)
        return self.markers[:count]

    def show_notice(self, text: str) -> None:
        self.notice.setText(text)
        self.notice.setVisible(bool(text))
        if text:
            (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
            self.notice.setPos((x0 + x1) / 2, (y0 + y1) / 2)

    def set_strip(self, series: Series | None, gpu_count: int) -> None:
        if self.image is None or series is None or len(series.times_s) == 0:
            return
        rgba = reason_rgba(series.high[:, :gpu_count])  # max of a bucket keeps its highest reason
        self.image.setImage(rgba, autoLevels=False)
        step = series.step_s
        self.image.setRect(float(series.times_s[0]), 0.0, len(series.times_s) * step, float(gpu_count))
        self.plot.setYRange(0, gpu_count, padding=0)

    def values_at(self, x: float, names: Callable[[int], str]) -> str:
        """The readout text: every visible curve's value at time ``x``."""
        lines = []
        for (gpu, k), curve in self.curves.items():
            if not curve.isVisible():
                continue
            xs, ys = curve.getOriginalDataset()
            if xs is None or len(xs) == 0:
                continue
            i = min(int(np.searchsorted(xs, x)), len(xs) - 1)
            value = float(ys[i])
            if math.isnan(value):
                continue
            metric = self.spec.metrics[k]
            label = names(gpu) + (f" {metric.label.lower()}" if len(self.spec.metrics) > 1 else "")
            colour = gpu_colour(gpu).name()
            # HTML: the label holds the GPU's name, from the driver.
            lines.append(f'<span style="color:{colour}">{rich_text(label)}: {format_value(metric, value)}</span>')
        return "<br>".join(lines)
