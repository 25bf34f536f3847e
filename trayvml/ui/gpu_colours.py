"""One colour per GPU, the same in every panel of the window (numpy's: the idle tray has none)."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QColor

# Distinct on light and dark backgrounds (Tableau 10, reordered so neighbours differ most).
FIRST_GPU_COLOURS = (
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
)
MAX_GPU_COLOURS = 64  # GPUs past this share colours; the legend's numbers still tell them apart
# Candidates for GPUs past the first ten: mid lightness (readable on light and dark backgrounds),
# every 15° of hue, two chromas.
CANDIDATE_LIGHTNESS = (45.0, 55.0, 65.0, 75.0)
CANDIDATE_CHROMA = (35.0, 60.0)
CANDIDATE_HUE_STEP_DEG = 15


def _lab_to_srgb(lab: np.ndarray) -> np.ndarray:
    """CIELAB (D65) rows to sRGB in 0..1 rows (out of gamut: outside 0..1)."""
    lightness, a, b = lab[:, 0], lab[:, 1], lab[:, 2]
    fy = (lightness + 16) / 116
    f = np.stack([fy + a / 500, fy, fy - b / 200], axis=1)
    xyz = np.where(f**3 > 0.008856, f**3, (f - 16 / 116) / 7.787) * np.array([0.95047, 1.0, 1.08883])
    to_rgb = np.array([[3.2406, -1.5372, -0.4986], [-0.9689, 1.8758, 0.0415], [0.0557, -0.2040, 1.0570]])
    linear = xyz @ to_rgb.T
    return np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * np.abs(linear) ** (1 / 2.4) - 0.055)


def srgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB rows in 0..1 to CIELAB (D65) rows: distances there are about what the eye sees."""
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    to_xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = (linear @ to_xyz.T) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=1)


def hex_to_rgb(colours: tuple[str, ...] | list[str]) -> np.ndarray:
    return np.array([[int(c[k : k + 2], 16) / 255 for k in (1, 3, 5)] for c in colours])


def _gpu_colours() -> tuple[str, ...]:
    """Tableau 10 first, then each next colour the candidate farthest (in CIELAB) from every colour
    before it: 16 GPUs get 16 colours no two alike, 64 still 64 different ones."""
    hues = np.radians(np.arange(0, 360, CANDIDATE_HUE_STEP_DEG))
    lch = np.array([(lt, c, h) for lt in CANDIDATE_LIGHTNESS for c in CANDIDATE_CHROMA for h in hues])
    lab = np.stack([lch[:, 0], lch[:, 1] * np.cos(lch[:, 2]), lch[:, 1] * np.sin(lch[:, 2])], axis=1)
    rgb = _lab_to_srgb(lab)
    inside = np.all((rgb >= 0) & (rgb <= 1), axis=1)
    candidates, candidate_lab = rgb[inside], lab[inside]
    chosen = list(FIRST_GPU_COLOURS)
    chosen_lab = srgb_to_lab(hex_to_rgb(chosen))
    nearest = np.min(np.linalg.norm(candidate_lab[:, None, :] - chosen_lab[None, :, :], axis=2), axis=1)
    while len(chosen) < MAX_GPU_COLOURS:
        best = int(np.argmax(nearest))
        red, green, blue = (round(float(v) * 255) for v in candidates[best])
        chosen.append(f"#{red:02x}{green:02x}{blue:02x}")
        nearest = np.minimum(nearest, np.linalg.norm(candidate_lab - candidate_lab[best], axis=1))
    return tuple(chosen)


GPU_COLOURS = _gpu_colours()


def gpu_colour(index: int) -> QColor:
    return QColor(GPU_COLOURS[index % len(GPU_COLOURS)])
