"""The tray icon's pixels at the tray's real sizes: the tile tells the state, the digits fit, a
lost GPU or a stuck driver shows a badge, one bar per GPU up to a few, then an aggregate."""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations

import pytest
from PySide6.QtGui import QColor, QImage

from trayvml.core.levels import Level
from trayvml.ui.icon import DIGITS_DARK, DIGITS_LIGHT, MAX_BARS, TILES, Bar, IconContent, icon_content, render
from trayvml.ui.theme import ICON_BACKGROUND, ICON_TROUGH, LEVEL_COLOURS

SIZES = [(16, 1.0), (22, 1.0), (24, 1.0), (32, 1.0), (22, 2.0), (32, 2.0)]
N, W, C, X = Level.NORMAL, Level.WARNING, Level.CRITICAL, Level.LOST


def image(content: IconContent, size: int = 32, ratio: float = 1.0) -> QImage:
    return render(content, size, ratio).toImage()


def close(a: QColor, b: QColor, tolerance: int = 12) -> bool:
    rgb_a, rgb_b = (a.red(), a.green(), a.blue()), (b.red(), b.green(), b.blue())
    return all(abs(x - y) <= tolerance for x, y in zip(rgb_a, rgb_b, strict=True))


def pixels(img: QImage) -> list[tuple[int, int, QColor]]:
    return [(x, y, img.pixelColor(x, y)) for y in range(img.height()) for x in range(img.width())]


def dominant(img: QImage) -> QColor:
    """The commonest opaque colour: the tile's."""
    counts = Counter(c.rgb() for _, _, c in pixels(img) if c.alpha() == 255)
    return QColor.fromRgb(counts.most_common(1)[0][0])


def ink_box(img: QImage, ink: QColor) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of the pixels close to ``ink``."""
    found = [(x, y) for x, y, c in pixels(img) if c.alpha() == 255 and close(c, ink, 40)]
    assert found, "no ink drawn"
    xs, ys = [x for x, _ in found], [y for _, y in found]
    return min(xs), min(ys), max(xs), max(ys)


STATES = {
    "normal": IconContent((Bar(0.43, N), Bar(0.2, N)), number=43),
    "warning": IconContent((Bar(0.86, W), Bar(0.2, N)), number=86),
    "critical": IconContent((Bar(0.91, C), Bar(0.2, N)), number=91),
    "lost": IconContent((Bar(math.nan, X), Bar(0.2, N)), number=20),
    "stale": IconContent((), stale=True),
    "no GPU": IconContent((), no_gpu=True),
}
TILE_OF = {"normal": TILES[N], "warning": TILES[W], "critical": TILES[C], "lost": TILES[X], "stale": TILES[X]}


@pytest.mark.parametrize(("size", "ratio"), SIZES)
@pytest.mark.parametrize("state", list(TILE_OF))
def test_the_tile_alone_tells_the_state(qapp, state: str, size: int, ratio: float) -> None:
    assert close(dominant(image(STATES[state], size, ratio)), TILE_OF[state])


@pytest.mark.parametrize(("size", "ratio"), SIZES)
def test_distinct_states_draw_distinct_icons(qapp, size: int, ratio: float) -> None:
    images = {name: image(content, size, ratio) for name, content in STATES.items()}
    for a, b in combinations(images, 2):
        assert images[a] != images[b], (a, b)
    assert {close(dominant(images[n]), TILES[N]) for n in ("warning", "critical", "lost")} == {False}


@pytest.mark.parametrize(("size", "ratio"), SIZES)
@pytest.mark.parametrize("number", [7, 43, 100])
def test_the_number_fits_inside_the_icon_and_is_legible(qapp, number: int, size: int, ratio: float) -> None:
    img = image(IconContent((Bar(number / 100, N),), number=number), size, ratio)
    left, top, right, bottom = ink_box(img, DIGITS_LIGHT)
    pixels_across = img.width()
    assert left >= 1 and top >= 1 and right <= pixels_across - 2 and bottom <= pixels_across - 2  # inside the tile
    assert bottom - top + 1 >= 0.4 * pixels_across  # digits at least 40 % of the icon's height
    assert right - left + 1 >= (0.2 if number < 10 else 0.45) * pixels_across


@pytest.mark.parametrize(("size", "ratio"), SIZES)
def test_a_lost_gpu_shows_a_badge_and_no_number(qapp, size: int, ratio: float) -> None:
    lost = image(STATES["lost"], size, ratio)
    critical_with_number = image(IconContent(STATES["lost"].bars[1:], number=20), size, ratio)
    assert lost != critical_with_number
    left, top, right, bottom = ink_box(lost, DIGITS_LIGHT)
    assert right - left + 1 <= 0.35 * lost.width()  # a narrow "!", not the two digits of 20
    assert bottom - top + 1 >= 0.4 * lost.height()


def test_a_stuck_driver_shows_its_badge_on_the_red_tile_and_no_values(qapp) -> None:
    img = image(STATES["stale"], 22)
    assert close(dominant(img), LEVEL_COLOURS[Level.CRITICAL])
    assert ink_box(img, DIGITS_LIGHT)  # the hourglass
    assert not any(close(c, LEVEL_COLOURS[N]) for _, _, c in pixels(img))  # no bar, no value


@pytest.mark.parametrize(("size", "ratio"), SIZES)
def test_a_remote_host_that_does_not_answer_shows_an_hourglass_on_the_amber_tile(qapp, size: int, ratio: float) -> None:
    from trayvml.core.lines import Headline

    bars = (Bar(0.9, N), Bar(math.nan, W))  # this machine's GPU, and the host's empty bar
    gone = Headline(math.nan, "", -1, W, "gpu-box", unreachable=True)
    img = image(IconContent(bars, headline=gone), size, ratio)
    assert close(dominant(img), TILES[W])
    _, top, _, bottom = ink_box(img, DIGITS_DARK)
    assert bottom - top + 1 >= 0.4 * img.height()  # dark ink the height of the head
    assert img != image(IconContent(bars), size, ratio)  # (without it the bars fill the tile)


def test_the_warning_tile_has_dark_digits(qapp) -> None:
    img = image(STATES["warning"], 22)
    assert ink_box(img, DIGITS_DARK)


def strip_row(img: QImage) -> list[QColor]:
    """The row through the middle of the strip below the number."""
    y = img.height() - round(img.height() * 0.09) - max(3, round(img.height() * 0.22)) // 2 - 1
    return [img.pixelColor(x, y) for x in range(img.width())]


def test_one_bar_per_gpu_filled_from_the_left(qapp) -> None:
    row = strip_row(image(IconContent((Bar(1.0, N), Bar(0.0, N)), number=100), 32))
    green = [close(c, LEVEL_COLOURS[N]) for c in row]
    trough = [close(c, ICON_TROUGH) for c in row]
    half = len(row) // 2
    assert sum(green[:half]) >= half - 4 and sum(green[half:]) <= 1  # the busy GPU full, the idle one a sliver
    assert sum(trough[half:]) >= half - 5


def test_beyond_a_few_gpus_one_aggregate_bar_the_mean(qapp) -> None:
    bars = tuple(Bar(1.0 if k < 4 else 0.0, N) for k in range(8))
    row = strip_row(image(IconContent(bars, number=100), 32))
    green = sum(close(c, LEVEL_COLOURS[N]) for c in row)
    inner = 32 - 2 * round(32 * 0.09)
    assert abs(green - inner / 2) <= 1  # half the GPUs full: half the bar
    assert len(bars) > MAX_BARS


def test_without_a_number_the_bars_fill_the_tile(qapp) -> None:
    img = image(IconContent((Bar(0.5, N),)), 32)
    column = [close(img.pixelColor(16, y), LEVEL_COLOURS[N]) for y in range(32)]
    assert 10 <= sum(column) <= 16 and column[26] and not column[6]  # half, from the bottom


def test_starting_draws_an_empty_tile_and_claims_nothing(qapp) -> None:
    img = image(IconContent(()), 22)
    assert close(dominant(img), ICON_BACKGROUND)
    assert img != image(STATES["no GPU"], 22)
    assert {c.rgb() for _, _, c in pixels(img) if c.alpha() == 255} == {ICON_BACKGROUND.rgb()}


def test_no_gpu_draws_no_level_colour(qapp) -> None:
    img = image(STATES["no GPU"], 22)
    assert close(dominant(img), ICON_BACKGROUND)
    assert not any(close(c, colour) for _, _, c in pixels(img) for colour in (TILES[W], TILES[C], LEVEL_COLOURS[N]))


def test_drawn_at_the_device_pixel_ratio(qapp) -> None:
    content = IconContent((Bar(0.3, N),), number=30)
    pixmap = render(content, 22, 2.0)
    assert (pixmap.width(), pixmap.height(), pixmap.devicePixelRatio()) == (44, 44, 2.0)
    once, twice = ink_box(image(content, 22), DIGITS_LIGHT), ink_box(pixmap.toImage(), DIGITS_LIGHT)
    assert abs((twice[3] - twice[1]) - 2 * (once[3] - once[1])) <= 2  # drawn anew at 44 px, not scaled up


def test_the_number_is_the_highest_value_and_holds_within_a_step() -> None:
    from tests.helpers import run_ticks, simulated_source
    from trayvml.ui.glance import content_for, steady

    source, clock, _ = simulated_source("training:gpus=h100*2,at=900")
    sample = run_ticks(source, clock, 2)
    content = content_for(sample, "temperature")
    assert content.number == round(max(g.value("temperature_gpu_c") for g in sample.gpus))
    moved = IconContent(content.bars, number=content.number + 1)
    assert steady(moved, content).number == content.number  # within a step: unchanged, no redraw
    jumped = IconContent(content.bars, number=content.number + 5)
    assert steady(jumped, content).number == content.number + 5
    assert icon_content([Bar(0.5, N)], number=50).number == 50


@pytest.mark.parametrize(("percent", "shown"), [(99.6, 99), (99.4, 99), (100.0, 100), (87.5, 88), (0.4, 0)])
def test_a_memory_short_of_full_never_reads_100(percent: float, shown: int) -> None:
    """99.6 % of an 80 GiB memory used leaves 330 MiB free: the icon's number and the lines say 99."""
    from trayvml.core.formatting import format_value
    from trayvml.core.metrics import GPU_INDEX, GPU_METRIC_BY_KEY, GPU_METRICS
    from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, Sample
    from trayvml.ui.glance import content_for

    row = [math.nan] * len(GPU_METRICS)
    row[GPU_INDEX["memory_used_percent"]] = percent
    gpu = GpuSample(0, tuple(row), (MetricState.OK,) * len(GPU_METRICS))
    sample = Sample(0.0, (gpu,), (DeviceInfo(0, "H100", "GPU-0"),), None, None)
    assert content_for(sample, "memory").number == shown
    assert format_value(GPU_METRIC_BY_KEY["memory_used_percent"], percent) == f"{shown} %"


# ---- levels: the icon and the summary colour GPUs by the alert settings ----
def _at(sample, temperature_c: float):
    """``sample`` with every GPU at ``temperature_c`` and nothing else alarming."""
    from dataclasses import replace

    from trayvml.core.metrics import GPU_INDEX

    gpus = []
    for gpu in sample.gpus:
        values = list(gpu.values)
        values[GPU_INDEX["temperature_gpu_c"]] = temperature_c
        values[GPU_INDEX["clock_event_reasons"]] = 0.0
        gpus.append(replace(gpu, values=tuple(values)))
    return replace(sample, gpus=tuple(gpus))


def test_levels_follow_the_configured_alert_thresholds(qapp) -> None:
    from dataclasses import replace

    from tests.helpers import simulated_source, thresholds
    from trayvml.alerts.engine import AlertEngine, AlertSettings
    from trayvml.ui.summary import SummaryWindow
    from trayvml.ui.tray import Tray

    source, _, _ = simulated_source("idle:gpus=h100*2")
    sample = source.sample()
    engine = AlertEngine()
    tray = Tray(engine=engine)

    def levels(temperature_c: float) -> list[Level]:
        tray.update(_at(sample, temperature_c))  # the next sample
        assert tray._content is not None
        return [bar.level for bar in tray._content.bars]

    assert levels(83) == [Level.WARNING] * 2  # the default warning threshold
    rules = dict(engine.settings.rules)
    rules["temperature"] = replace(thresholds(rules["temperature"]), warning_enter=88.0, warning_clear=85.0)
    engine.configure(AlertSettings(rules=rules))  # what the settings dialog's Apply does
    assert levels(83) == [Level.NORMAL] * 2
    assert levels(89) == [Level.WARNING] * 2
    assert levels(91) == [Level.CRITICAL] * 2
    # A per-GPU override counts for its GPU only, in the icon and in the summary window.
    override = replace(thresholds(rules["temperature"]), warning_enter=70.0, warning_clear=65.0)
    engine.configure(AlertSettings(rules=rules, overrides={1: {"temperature": override}}))
    assert levels(75) == [Level.NORMAL, Level.WARNING]
    summary = SummaryWindow(engine)
    summary.update_sample(_at(sample, 75))
    text = summary.rows.text()
    assert text.index(LEVEL_COLOURS[Level.NORMAL].name()) < text.index(LEVEL_COLOURS[Level.WARNING].name())
    summary.deleteLater()
    # A rule turned off colours nothing.
    rules["temperature"] = replace(rules["temperature"], enabled=False)
    engine.configure(AlertSettings(rules=rules))
    assert levels(95) == [Level.NORMAL] * 2


# ---- the icon's choices: one catalog table, read by the settings and the icon ----
@pytest.mark.parametrize("name", ["utilization", "memory", "temperature", "power"])
def test_each_tray_choice_is_a_catalog_metric_drawn_to_its_full_scale(name: str) -> None:
    from trayvml.config import GENERAL_BY_KEY
    from trayvml.core.metrics import GPU_INDEX, GPU_METRIC_BY_KEY, GPU_METRICS, TRAY_METRICS
    from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, Sample
    from trayvml.ui.glance import content_for

    assert GENERAL_BY_KEY["tray_metric"].choices == tuple(TRAY_METRICS)  # the settings offer what the icon draws
    choice = TRAY_METRICS[name]
    assert choice.metric in GPU_METRIC_BY_KEY and choice.full_scale > 0
    row = [math.nan] * len(GPU_METRICS)
    row[GPU_INDEX[choice.metric]] = choice.full_scale * 0.75
    gpu = GpuSample(0, tuple(row), (MetricState.OK,) * len(GPU_METRICS))
    sample = Sample(0.0, (gpu,), (DeviceInfo(0, "H100", "GPU-0"),), None, None)
    (bar,) = content_for(sample, name).bars
    assert bar.fraction == 0.75


@pytest.mark.parametrize("size", [16, 22, 24, 32])
@pytest.mark.parametrize("state", list(STATES))
def test_drawn_in_device_pixels_alone(qapp, state: str, size: int) -> None:
    # A pure function of the pixels it has: 22 px at 200 % is the 44 px drawing, not 22 px enlarged.
    assert image(STATES[state], size, 2.0) == image(STATES[state], 2 * size, 1.0)


def test_below_twenty_device_pixels_the_number_stands_alone(qapp) -> None:
    content = IconContent((Bar(1.0, N),), number=96)
    small, hidpi = image(content, 16), image(content, 16, 2.0)
    assert not any(close(c, LEVEL_COLOURS[N]) for _, _, c in pixels(small))  # no strip at 16 px
    assert any(close(c, LEVEL_COLOURS[N]) for _, _, c in pixels(hidpi))  # 32 device pixels: room for it


# ---- a temperature says so: the degree sign after its digits ----
@pytest.mark.parametrize(("size", "ratio"), SIZES)
def test_a_temperature_on_the_icon_carries_its_degree_sign_inside_the_tile(qapp, size: int, ratio: float) -> None:
    bars = (Bar(0.85, C), Bar(0.4, N))
    degrees = image(IconContent(bars, number=92, mark="°"), size, ratio)
    plain = image(IconContent(bars, number=92), size, ratio)
    assert degrees != plain
    assert close(dominant(degrees), TILES[C])  # still the critical tile
    left, top, right, bottom = ink_box(degrees, DIGITS_LIGHT)
    side = degrees.width()
    assert left >= 1 and top >= 1 and right <= side - 2 and bottom <= side - 2
    assert bottom - top + 1 >= 0.35 * side  # the digits stay readable beside the sign
