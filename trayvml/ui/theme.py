"""Colours of the glance levels and the tray icon (no numpy: the idle tray's; the GPUs' are in
gpu_colours.py, for the window)."""

from __future__ import annotations

from PySide6.QtGui import QColor

from trayvml.core.levels import Level

LEVEL_COLOURS = {
    Level.NORMAL: QColor("#76b900"),
    Level.WARNING: QColor("#f5a524"),
    Level.CRITICAL: QColor("#e5484d"),
    Level.LOST: QColor("#8a9bb0"),
}
ICON_BACKGROUND = QColor("#1b2330")
ICON_TROUGH = QColor("#3b4a5e")
NO_GPU = QColor("#8a9bb0")
