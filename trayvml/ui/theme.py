"""Colours: one per GPU (the same in every panel), and one per glance level."""

from __future__ import annotations

from PySide6.QtGui import QColor

from trayvml.core.levels import Level

# Distinct on light and dark backgrounds (Tableau 10, reordered so neighbours differ most).
GPU_COLOURS = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#b07aa1",
    "#76b7b2",
    "#edc948",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
)

LEVEL_COLOURS = {
    Level.NORMAL: QColor("#76b900"),
    Level.WARNING: QColor("#f5a524"),
    Level.CRITICAL: QColor("#e5484d"),
    Level.LOST: QColor("#8a9bb0"),
}
ICON_BACKGROUND = QColor("#1b2330")
ICON_TROUGH = QColor("#3b4a5e")
NO_GPU = QColor("#8a9bb0")


def gpu_colour(index: int) -> QColor:
    return QColor(GPU_COLOURS[index % len(GPU_COLOURS)])
