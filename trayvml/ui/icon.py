"""The tray icon: a pure function of what it shows, the tray's size and the device pixel ratio.

Designed for the 16-32 px a tray really gives (22 px on most panels), where a bar per GPU is a
1 px stripe by 8 GPUs. So the icon leads with one number, the chosen metric's highest value
(the busiest GPU's utilization, or the hottest temperature…), and says the overall state with
its tile alone, for hosts that show nothing but the icon:

- all well: a dark tile, white digits;
- warning: an amber tile; something wrong (a critical level): a red tile;
- a GPU lost or the driver stuck: a red tile with a white badge ("!" or an hourglass) in place
  of the number, since no number on it would be current.

Below the number (from 20 device pixels) a strip shows each GPU as a small bar up to MAX_BARS GPUs, beyond
that one aggregate bar (the mean, in the worst GPU's colour). It is drawn in device pixels on
a whole-pixel grid, so edges stay crisp at 100 % and 200 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QImage, QPainter, QPainterPath, QPen, QPixmap, QPolygonF

from trayvml.core.levels import Level
from trayvml.core.lines import Headline
from trayvml.ui.theme import ICON_BACKGROUND, ICON_TROUGH, LEVEL_COLOURS, NO_GPU

MAX_BARS = 4  # GPUs drawn one by one in the strip; beyond, one aggregate bar
BAR_STEPS = 40  # bars in steps of 1/40: half a pixel of a 22 px tray icon's bar
STRIP_FROM_PX = 20  # device pixels; smaller icons show the number (or badge) only
DIGITS_LIGHT = QColor("#f4f6f8")
DIGITS_DARK = QColor("#1b2330")  # on the amber tile
TILES = {  # the tile's colour tells the state on its own
    Level.NORMAL: ICON_BACKGROUND,
    Level.WARNING: LEVEL_COLOURS[Level.WARNING],
    Level.CRITICAL: LEVEL_COLOURS[Level.CRITICAL],
    Level.LOST: LEVEL_COLOURS[Level.CRITICAL],
}


@dataclass(frozen=True)
class Bar:
    fraction: float  # 0..1 of the metric's full scale; NaN when unknown
    level: Level
    asleep: bool = False  # runtime-suspended: an empty trough, neither a value nor a fault


@dataclass(frozen=True)
class IconContent:
    """What the icon shows; equal contents draw equal icons, so unchanged ones are not redrawn."""

    bars: tuple[Bar, ...]  # one per GPU shown
    hidden_count: int = 0  # kept for callers that count GPUs left out (the aggregate covers all)
    no_gpu: bool = False
    stale: bool = False  # the driver is not answering: no value is current, so none is drawn
    number: float = math.nan  # the headline: the metric's highest value, whole (NaN: none to show)
    mark: str = ""  # a unit drawn after the number ("°"), where the digits alone would mislead
    headline: Headline | None = None  # what the number is, for the tooltip's first line

    @property
    def unreachable(self) -> bool:
        """What the number would tell is that a remote host does not answer (no value: the hourglass)."""
        return self.headline is not None and self.headline.unreachable

    @property
    def level(self) -> Level:
        """The worst GPU's level: what the tile says."""
        if self.stale:
            return Level.LOST
        return max((bar.level for bar in self.bars), default=Level.NORMAL)


def drawn(content: IconContent) -> tuple[object, ...]:
    """What the icon draws of ``content``: contents that draw the same icon give equal keys (the
    headline is the tooltip's, and beyond MAX_BARS the strip is one aggregate bar)."""
    return (
        content.level,
        content.no_gpu,
        content.stale,
        content.number,
        content.mark,
        _strip(content.bars),
        content.unreachable,
    )


def _strip(bars: tuple[Bar, ...]) -> tuple[Bar, ...]:
    """The bars the strip draws: each GPU's, or beyond MAX_BARS one, the mean of those answering
    in 1/BAR_STEPS as each GPU's (so that a mean moving by less redraws nothing) in the worst one's colour."""
    if len(bars) <= MAX_BARS:
        return bars
    known = [b.fraction for b in bars if not math.isnan(b.fraction) and b.level is not Level.LOST]
    answering = [b.level for b in bars if b.level is not Level.LOST]  # a lost GPU has no value to average
    mean = round(sum(known) / len(known) * BAR_STEPS) / BAR_STEPS if known else math.nan
    return (Bar(mean, max(answering, default=Level.LOST)),)


def icon_content(
    bars: list[Bar], no_gpu: bool = False, number: float = math.nan, mark: str = "", headline: Headline | None = None
) -> IconContent:
    return IconContent(tuple(bars), 0, no_gpu, number=number, mark=mark, headline=headline)


def render(content: IconContent, size_px: int, device_pixel_ratio: float = 1.0) -> QPixmap:
    """The icon at ``size_px`` logical pixels, drawn at ``device_pixel_ratio``."""
    pixels = max(1, round(size_px * device_pixel_ratio))
    image = QImage(pixels, pixels, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    # Detail follows device pixels: a 16 px icon at 200 % has the pixels of a 32 px one (and hosts
    # that pick a pixmap by size may show it in a 22 px slot).
    _draw(painter, content, pixels, strip=pixels >= STRIP_FROM_PX)
    painter.end()
    pixmap = QPixmap.fromImage(image)
    pixmap.setDevicePixelRatio(device_pixel_ratio)
    return pixmap


draw_icon = render  # the name callers used before


def _draw(painter: QPainter, content: IconContent, p: int, strip: bool) -> None:
    """In device pixels: ``p`` of them a side; ``strip``: room for the GPUs' bars below the number."""
    level = Level.NORMAL if content.no_gpu or not (content.bars or content.stale) else content.level
    painter.setBrush(TILES[level])
    painter.drawRoundedRect(QRectF(0, 0, p, p), p * 0.16, p * 0.16)
    if content.no_gpu:
        _draw_no_gpu(painter, p)
        return
    if not (content.bars or content.stale):
        return  # starting: an empty tile, claiming nothing (the tooltip says "starting…")
    pad = max(1, round(p * 0.09))
    strip = strip and not content.stale
    strip_h = max(3, round(p * 0.22)) if strip else 0
    head = QRect(pad, pad, p - 2 * pad, p - 2 * pad - (strip_h + max(1, pad // 2) if strip else 0))
    ink = _ink(level)
    if content.stale or content.unreachable:  # values not coming: a stuck driver (red), a remote host (amber)
        _draw_hourglass(painter, head, ink)
    elif level is Level.LOST:
        _draw_exclamation(painter, head, ink)
    elif not math.isnan(content.number):
        _draw_text(painter, head, f"{content.number:.0f}{content.mark}", ink)
    else:  # nothing to count: the bars fill the tile
        _draw_bars(painter, content.bars, QRect(pad, pad, p - 2 * pad, p - 2 * pad), level)
        return
    if strip:
        _draw_bars(painter, content.bars, QRect(pad, p - pad - strip_h, p - 2 * pad, strip_h), level, across=True)


def _draw_text(painter: QPainter, box: QRect, text: str, ink: QColor) -> None:
    """``text`` as large as ``box`` allows: height first, then squeezed (not shrunk) to its width."""
    font = QFont("DejaVu Sans")
    font.setBold(True)
    font.setHintingPreference(QFont.HintingPreference.PreferFullHinting)
    font.setPixelSize(max(4, round(box.height() * 1.22)))  # digits are about 0.73 of the pixel size
    metrics = QFontMetricsF(font)
    bounds = metrics.tightBoundingRect(text)
    squeeze = min(1.0, box.width() / max(1.0, bounds.width()))
    if squeeze < 0.62:  # squeezed further, digits blur: make them smaller instead
        font.setPixelSize(max(4, math.floor(font.pixelSize() * squeeze / 0.62)))
        metrics = QFontMetricsF(font)
        bounds = metrics.tightBoundingRect(text)
        squeeze = min(1.0, box.width() / max(1.0, bounds.width()))
    path = QPainterPath()
    path.addText(0, 0, font, text)
    painter.save()
    # Centred on the box, the glyphs' own bounds (not the line's) on whole pixels.
    width = bounds.width() * squeeze
    left = round(box.left() + (box.width() - width) / 2)
    top = round(box.top() + (box.height() - bounds.height()) / 2)
    painter.translate(left - bounds.left() * squeeze, top - bounds.top())
    painter.scale(squeeze, 1.0)
    painter.setBrush(ink)
    painter.drawPath(path)
    painter.restore()


def _draw_bars(painter: QPainter, bars: tuple[Bar, ...], box: QRect, tile: Level, across: bool = False) -> None:
    """One bar per GPU, or one aggregate bar (the mean) beyond MAX_BARS. ``across``: filled from
    the left (a strip, wider than tall), else from the bottom."""
    trough = ICON_TROUGH if tile is Level.NORMAL else QColor(0, 0, 0, 90)
    bars = _strip(bars)
    gap = max(1, round(box.width() * 0.08)) if len(bars) > 1 else 0
    width = (box.width() - gap * (len(bars) - 1)) // len(bars)
    left = box.left() + (box.width() - (width * len(bars) + gap * (len(bars) - 1))) // 2
    for k, bar in enumerate(bars):
        cell = QRect(left + k * (width + gap), box.top(), width, box.height())
        painter.setBrush(trough)
        painter.drawRect(cell)
        if bar.asleep:
            continue  # an empty trough, no cross: asleep is not wrong
        if bar.level is Level.LOST or math.isnan(bar.fraction):
            continue  # an empty trough: nothing current to show
        # On a coloured tile, which says the state already, the bars are in the digits' ink.
        painter.setBrush(LEVEL_COLOURS[bar.level] if tile is Level.NORMAL else _ink(tile))
        fraction = min(1.0, bar.fraction)
        if across:
            painter.drawRect(QRect(cell.left(), cell.top(), max(1, round(cell.width() * fraction)), cell.height()))
        else:
            filled = max(1, round(cell.height() * fraction))
            painter.drawRect(QRect(cell.left(), cell.bottom() + 1 - filled, cell.width(), filled))


def _ink(tile: Level) -> QColor:
    return DIGITS_DARK if tile is Level.WARNING else DIGITS_LIGHT


def _draw_exclamation(painter: QPainter, box: QRect, ink: QColor) -> None:
    """A lost GPU's badge: a heavy "!" of whole-pixel rectangles (a font's is thin and blurs)."""
    stroke = max(2, round(box.height() * 0.24))
    if (box.width() - stroke) % 2:  # centred on whole pixels
        stroke += 1
    left = box.left() + (box.width() - stroke) // 2
    dot = stroke
    gap = max(1, round(stroke * 0.5))
    bar = box.height() - dot - gap
    painter.setBrush(ink)
    painter.drawRect(QRect(left, box.top(), stroke, bar))
    painter.drawRect(QRect(left, box.top() + bar + gap, stroke, dot))


def _draw_hourglass(painter: QPainter, box: QRect, ink: QColor) -> None:
    """Waiting for values: from the driver (nothing shown is current), or from a remote host."""
    side = min(box.width(), box.height())
    cx, cy = box.center().x() + 0.5, box.center().y() + 0.5
    half = side * 0.42
    painter.setBrush(ink)
    painter.drawPolygon(QPolygonF([QPointF(cx - half, cy - half), QPointF(cx + half, cy - half), QPointF(cx, cy)]))
    painter.drawPolygon(QPolygonF([QPointF(cx, cy), QPointF(cx + half, cy + half), QPointF(cx - half, cy + half)]))


def _draw_no_gpu(painter: QPainter, p: int) -> None:
    """An empty board with a slash: no GPU can be read."""
    margin = p * 0.22
    pen = QPen(NO_GPU, max(1.0, p * 0.08))
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    painter.setPen(pen)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawRoundedRect(QRectF(margin, margin, p - 2 * margin, p - 2 * margin), p * 0.08, p * 0.08)
    painter.drawLine(QPointF(margin, p - margin), QPointF(p - margin, margin))
    painter.setPen(Qt.PenStyle.NoPen)
