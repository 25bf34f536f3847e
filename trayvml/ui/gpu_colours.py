"""One colour per GPU, the same in every panel of the window (numpy's: the idle tray has none), made
to stand out from the background the lines are drawn on; and coloured text made readable on its."""

from __future__ import annotations

import functools

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
# Candidates for GPUs past the first ten: every 15° of hue, three chromas, lightnesses from dark to
# light: those that stand out from the background (LEAST_CONTRAST) first. (Fewer left a light or
# mid grey too few, and GPUs past ten were drawn near its own shade.)
CANDIDATE_LIGHTNESS = tuple(float(lightness) for lightness in range(10, 100, 5))
CANDIDATE_CHROMA = (20.0, 35.0, 60.0)
CANDIDATE_HUE_STEP_DEG = 15
# WCAG 2.1's least contrast for a graphical object against what is beside it (1.4.11): Tableau's
# yellow, pink, teal and grey lines on a white plot were 1.6-2.4 to 1.
LEAST_CONTRAST = 3.0
LEAST_TEXT_CONTRAST = 4.5  # and for text (1.4.3): an alert's amber was 2 to 1 on white
# Where the first ten would come closer than this (CIE76) to stand out, each stands out less, by
# these steps (1: as Tableau made them, 25.9 apart).
FIRST_APART = 15.0
FALLING_CONTRASTS = (LEAST_CONTRAST, 2.5, 2.0, 1.5, 1.0)
LIGHTNESS_STEP = 0.5  # CIELAB L*, each step a first colour is moved to reach LEAST_CONTRAST


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


def _hex(rgb: np.ndarray) -> str:
    red, green, blue = (round(float(v) * 255) for v in rgb)
    return f"#{red:02x}{green:02x}{blue:02x}"


def luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG's relative luminance of sRGB rows in 0..1."""
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def contrast(luminance_a: np.ndarray | float, luminance_b: np.ndarray | float) -> np.ndarray:
    """WCAG's contrast ratio, 1 to 21."""
    high, low = np.maximum(luminance_a, luminance_b), np.minimum(luminance_a, luminance_b)
    return np.asarray((high + 0.05) / (low + 0.05))


def _as_named(rgb: np.ndarray) -> np.ndarray:
    """``rgb`` rounded to 8 bits a channel, as ``#rrggbb`` names it and the line is drawn: a contrast
    worked out before rounding fell just short of its least after (2.99 to 1)."""
    return np.round(np.clip(rgb, 0.0, 1.0) * 255) / 255


def _in_gamut(lightness: float, a: float, b: float) -> np.ndarray:
    """The colour at this lightness and hue, its chroma cut until sRGB holds it (as named)."""
    for share in np.linspace(1.0, 0.0, 21):
        rgb = _lab_to_srgb(np.array([[lightness, a * share, b * share]]))[0]
        if np.all((rgb >= 0) & (rgb <= 1)):
            return _as_named(rgb)
    return _as_named(rgb)


def _standing_out(colour: str, background_luminance: float, least: float = LEAST_CONTRAST) -> np.ndarray:
    """``colour`` at the nearest lightness, lighter or darker, with ``least`` contrast against the
    background, its hue kept; where neither way reaches it, the one of more contrast. (Moved the
    background's way only, a yellow on a mid grey went through the grey's own shade to brown.)"""
    lightness, a, b = srgb_to_lab(hex_to_rgb([colour]))[0]
    ways = []
    # (Not a way whose end, white or black, cannot reach it: on white, lighter never does.)
    steps = [
        step
        for step, end in ((LIGHTNESS_STEP, 1.0), (-LIGHTNESS_STEP, 0.0))
        if contrast(end, background_luminance) >= least
    ]
    for step in steps or (LIGHTNESS_STEP, -LIGHTNESS_STEP):
        moved, rgb = lightness, _in_gamut(lightness, a, b)
        ratio = float(contrast(luminance(rgb[None])[0], background_luminance))
        while ratio < least and 0 < moved < 100:
            moved += step
            rgb = _in_gamut(moved, a, b)
            ratio = float(contrast(luminance(rgb[None])[0], background_luminance))
        ways.append((ratio < least, abs(moved - lightness) if ratio >= least else -ratio, rgb))
    return min(ways, key=lambda way: way[:2])[2]


@functools.cache
def _readable(colour: str, background: str) -> str:
    return _hex(_standing_out(colour, float(luminance(hex_to_rgb([background]))[0]), LEAST_TEXT_CONTRAST))


def readable_on(colour: str, background: QColor) -> QColor:
    """Text in ``colour`` (``#rrggbb``) made readable on ``background``: lighter or darker, its hue kept."""
    return QColor(_readable(colour, background.name()))


@functools.cache
def gpu_colours_on(background: str) -> tuple[str, ...]:
    """The GPUs' colours on a background (``#rrggbb``): Tableau 10 first, each moved lighter or
    darker until it stands out from it, then each next colour the candidate standing out that is
    farthest (in CIELAB) from every colour before it: 16 GPUs get 16 colours no two alike, 64
    still 64 different ones."""
    background_luminance = float(luminance(hex_to_rgb([background]))[0])
    # A mid grey lets colours reach 3:1 only near black or white, where they look alike (two of the
    # ten the same): there they stand out as much as they can while they stay apart.
    for least in FALLING_CONTRASTS:
        chosen = [_hex(_standing_out(colour, background_luminance, least)) for colour in FIRST_GPU_COLOURS]
        chosen_lab = srgb_to_lab(hex_to_rgb(chosen))
        gaps = np.linalg.norm(chosen_lab[:, None, :] - chosen_lab[None, :, :], axis=2)
        if gaps[~np.eye(len(chosen), dtype=bool)].min() >= FIRST_APART:
            break
    hues = np.radians(np.arange(0, 360, CANDIDATE_HUE_STEP_DEG))
    lch = np.array([(lt, c, h) for lt in CANDIDATE_LIGHTNESS for c in CANDIDATE_CHROMA for h in hues])
    lab = np.stack([lch[:, 0], lch[:, 1] * np.cos(lch[:, 2]), lch[:, 1] * np.sin(lch[:, 2])], axis=1)
    rgb = _lab_to_srgb(lab)
    usable = np.all((rgb >= 0) & (rgb <= 1), axis=1)
    candidates, candidate_lab = _as_named(rgb[usable]), lab[usable]
    # Those standing out first; the others only where too few do (no background leaves so few).
    first = contrast(luminance(candidates), background_luminance) >= least
    nearest = np.min(np.linalg.norm(candidate_lab[:, None, :] - chosen_lab[None, :, :], axis=2), axis=1)
    while len(chosen) < MAX_GPU_COLOURS:
        best = int(np.argmax(np.where(first, nearest + 1000.0, nearest)))  # (distances are under 300)
        chosen.append(_hex(candidates[best]))
        nearest = np.minimum(nearest, np.linalg.norm(candidate_lab - candidate_lab[best], axis=1))
        nearest[best] = -np.inf  # taken
    return tuple(chosen)


def gpu_colour(index: int, background: QColor) -> QColor:
    """GPU ``index``'s colour (by its column in the sample) for lines drawn on ``background``."""
    colours = gpu_colours_on(background.name())
    return QColor(colours[index % len(colours)])
