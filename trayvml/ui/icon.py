"""The tray icon, drawn with QPainter at the tray's size and device pixel ratio."""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen, QPixmap, QPolygonF

from trayvml.core.levels import Level
from trayvml.ui.theme import ICON_BACKGROUND, ICON_TROUGH, LEVEL_COLOURS, NO_GPU

MAX_BARS = 8


@dataclass(frozen=True)
class Bar:
    fraction: float  # 0..1 of the metric's full scale; NaN when unknown
    level: Level
    asleep: bool = False  # runtime-suspended: an empty trough, neither a value nor a fault


@dataclass(frozen=True)
class IconContent:
    """What the icon shows; equal contents draw equal icons, so unchanged ones are not redrawn."""

    bars: tuple[Bar, ...]
    hidden_count: int = 0  # GPUs left out beyond MAX_BARS
    no_gpu: bool = False
    stale: bool = False  # the driver is not answering: no value is current, so no bar is drawn


def icon_content(bars: list[Bar], no_gpu: bool = False) -> IconContent:
    """Up to MAX_BARS bars; beyond that the busiest ones and a count of the rest."""
    if len(bars) <= MAX_BARS:
        return IconContent(tuple(bars), 0, no_gpu)
    keep = MAX_BARS - 1
    ranked = sorted(
        range(len(bars)),
        key=lambda i: (-bars[i].level, -(0 if math.isnan(bars[i].fraction) else bars[i].fraction)),
    )
    kept = sorted(ranked[:keep])
    return IconContent(tuple(bars[i] for i in kept), len(bars) - keep, no_gpu)


def draw_icon(content: IconContent, size: int, device_pixel_ratio: float = 1.0) -> QPixmap:
    pixels = max(1, round(size * device_pixel_ratio))
    pixmap = QPixmap(pixels, pixels)
    pixmap.setDevicePixelRatio(device_pixel_ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    s = float(size)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(ICON_BACKGROUND)
    painter.drawRoundedRect(QRectF(0, 0, s, s), s * 0.18, s * 0.18)
    if content.stale:
        _draw_stale(painter, s)
    elif content.no_gpu or not content.bars:
        _draw_no_gpu(painter, s)
    else:
        _draw_bars(painter, content, s)
    painter.end()
    return pixmap


def _draw_bars(painter: QPainter, content: IconContent, s: float) -> None:
    slots = len(content.bars) + (1 if content.hidden_count else 0)
    margin = s * 0.12
    gap = s * 0.06 if slots > 1 else 0.0
    width = (s - 2 * margin - gap * (slots - 1)) / slots
    height = s - 2 * margin
    for k, bar in enumerate(content.bars):
        x = margin + k * (width + gap)
        trough = QRectF(x, margin, width, height)
        painter.setBrush(ICON_TROUGH)
        painter.drawRoundedRect(trough, width * 0.2, width * 0.2)
        if bar.asleep:
            continue
        colour = LEVEL_COLOURS[bar.level]
        if bar.level is Level.LOST or math.isnan(bar.fraction):
            _draw_cross(painter, trough, colour)
            continue
        filled = max(0.06, min(1.0, bar.fraction)) * height  # a sliver shows an idle GPU is there
        painter.setBrush(colour)
        painter.drawRoundedRect(QRectF(x, margin + height - filled, width, filled), width * 0.2, width * 0.2)
    if content.hidden_count:
        x = margin + len(content.bars) * (width + gap)
        painter.setPen(QColor("#d8dee9"))
        font = QFont()
        font.setPixelSize(max(6, round(s * 0.3)))
        font.setBold(True)
        painter.setFont(font)
        painter.drawText(QRectF(x - gap, margin, width + 2 * gap, height), Qt.AlignmentFlag.AlignCenter, "+")
        painter.setPen(Qt.PenStyle.NoPen)


def _draw_cross(painter: QPainter, rect: QRectF, colour: QColor) -> None:
    pen = QPen(colour, max(1.0, rect.width() * 0.3))
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    painter.setPen(pen)
    inset = rect.width() * 0.25
    top, bottom = rect.top() + rect.height() * 0.35, rect.top() + rect.height() * 0.65
    painter.drawLine(QLineF(rect.left() + inset, top, rect.right() - inset, bottom))
    painter.drawLine(QLineF(rect.left() + inset, bottom, rect.right() - inset, top))
    painter.setPen(Qt.PenStyle.NoPen)


def _draw_stale(painter: QPainter, s: float) -> None:
    """An hourglass on an amber board: waiting for the driver, nothing shown is current."""
    colour = LEVEL_COLOURS[Level.WARNING]
    margin = s * 0.2
    pen = QPen(colour, max(1.0, s * 0.08))
    painter.setPen(pen)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawRoundedRect(QRectF(margin, margin, s - 2 * margin, s - 2 * margin), s * 0.08, s * 0.08)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(colour)
    left, right, top, bottom, middle = s * 0.34, s * 0.66, s * 0.32, s * 0.68, s * 0.5
    painter.drawPolygon(QPolygonF([QPointF(left, top), QPointF(right, top), QPointF(middle, middle)]))
    painter.drawPolygon(QPolygonF([QPointF(middle, middle), QPointF(right, bottom), QPointF(left, bottom)]))


def _draw_no_gpu(painter: QPainter, s: float) -> None:
    """An empty board with a slash: no GPU can be read."""
    margin = s * 0.2
    pen = QPen(NO_GPU, max(1.0, s * 0.08))
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    painter.setPen(pen)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawRoundedRect(QRectF(margin, margin, s - 2 * margin, s - 2 * margin), s * 0.08, s * 0.08)
    painter.drawLine(QLineF(margin, s - margin, s - margin, margin))
    painter.setPen(Qt.PenStyle.NoPen)
