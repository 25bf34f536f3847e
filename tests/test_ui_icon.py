"""The tray icon's pixels: bars, heights, colours by level, lost and no-GPU states."""

from __future__ import annotations

import math

import pytest
from PySide6.QtGui import QColor, QImage

from trayvml.core.levels import Level
from trayvml.ui.icon import MAX_BARS, Bar, IconContent, draw_icon, icon_content
from trayvml.ui.theme import ICON_TROUGH, LEVEL_COLOURS

SIZE = 64


def image(content: IconContent, size: int = SIZE, ratio: float = 1.0) -> QImage:
    return draw_icon(content, size, ratio).toImage()


def close(a: QColor, b: QColor, tolerance: int = 12) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a.getRgb()[:3], b.getRgb()[:3], strict=True))


def column_colours(img: QImage, x: int) -> list[QColor]:
    return [img.pixelColor(x, y) for y in range(img.height())]


def test_one_gpu_bar_height_follows_the_value(qapp) -> None:
    img = image(IconContent((Bar(0.5, Level.NORMAL),)))
    centre = SIZE // 2
    green = [close(c, LEVEL_COLOURS[Level.NORMAL]) for c in column_colours(img, centre)]
    filled_rows = sum(green)
    bar_height = SIZE - 2 * round(SIZE * 0.12)
    assert abs(filled_rows - bar_height * 0.5) <= 3
    assert green[SIZE - 10] and not green[10]  # it fills from the bottom
    assert close(img.pixelColor(centre, 10), ICON_TROUGH)


@pytest.mark.parametrize("level", list(Level)[:3])
def test_colour_tells_the_level(qapp, level: Level) -> None:
    img = image(IconContent((Bar(0.9, level),)))
    assert close(img.pixelColor(SIZE // 2, SIZE - 12), LEVEL_COLOURS[level])


def test_one_bar_per_gpu_each_in_its_own_colour(qapp) -> None:
    levels = [Level.NORMAL, Level.WARNING, Level.CRITICAL, Level.NORMAL]
    img = image(icon_content([Bar(0.8, level) for level in levels]))
    margin, gap = SIZE * 0.12, SIZE * 0.06
    width = (SIZE - 2 * margin - 3 * gap) / 4
    for k, level in enumerate(levels):
        x = round(margin + k * (width + gap) + width / 2)
        assert close(img.pixelColor(x, SIZE - 12), LEVEL_COLOURS[level]), k
    between = round(margin + width + gap / 2)
    assert not close(img.pixelColor(between, SIZE - 12), LEVEL_COLOURS[Level.NORMAL])


def test_a_lost_gpu_shows_a_cross_and_no_fill(qapp) -> None:
    img = image(IconContent((Bar(math.nan, Level.LOST),)))
    lost = LEVEL_COLOURS[Level.LOST]
    pixels = [img.pixelColor(x, y) for x in range(SIZE) for y in range(SIZE)]
    assert any(close(c, lost) for c in pixels)
    assert not any(close(c, LEVEL_COLOURS[Level.NORMAL]) for c in pixels)


def test_no_gpu_state_draws_no_bars(qapp) -> None:
    img = image(IconContent((), no_gpu=True))
    pixels = [img.pixelColor(x, y) for x in range(SIZE) for y in range(SIZE)]
    assert not any(
        close(c, colour) for c in pixels for colour in LEVEL_COLOURS.values() if colour != LEVEL_COLOURS[Level.LOST]
    )


def test_beyond_eight_gpus_the_busiest_and_a_count(qapp) -> None:
    bars = [Bar(k / 20, Level.NORMAL) for k in range(12)]
    bars[2] = Bar(0.1, Level.CRITICAL)  # a critical GPU is kept however idle
    content = icon_content(bars)
    assert len(content.bars) == MAX_BARS - 1 and content.hidden_count == 5
    kept = {b.fraction for b in content.bars}
    assert 0.1 in kept and 11 / 20 in kept and 0.0 not in kept


def test_drawn_at_the_device_pixel_ratio(qapp) -> None:
    pixmap = draw_icon(IconContent((Bar(0.3, Level.NORMAL),)), 22, 2.0)
    assert (pixmap.width(), pixmap.height(), pixmap.devicePixelRatio()) == (44, 44, 2.0)


# ---- levels: the icon and the summary colour GPUs by the alert settings ----
def _at(sample, temperature_c: float):  # type: ignore[no-untyped-def]
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

    from tests.helpers import simulated_source
    from trayvml.alerts import AlertEngine, AlertSettings
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
    rules["temperature"] = replace(rules["temperature"], warning_enter=88.0, warning_clear=85.0)
    engine.configure(AlertSettings(rules=rules))  # what the settings dialog's Apply does
    assert levels(83) == [Level.NORMAL] * 2
    assert levels(89) == [Level.WARNING] * 2
    assert levels(91) == [Level.CRITICAL] * 2
    # A per-GPU override counts for its GPU only, in the icon and in the summary window.
    override = replace(rules["temperature"], warning_enter=70.0, warning_clear=65.0)
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
