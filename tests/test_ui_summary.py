"""The summary window shown where there is no tray: what it lists and how it colours it, offscreen."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton

from tests.helpers import run_ticks, simulated_source
from trayvml.alerts.engine import AlertEngine, AlertSettings, Level
from trayvml.core.lines import gpu_line, host_line
from trayvml.core.metrics import GPU_INDEX
from trayvml.core.sample import Sample
from trayvml.ui.summary import NO_TRAY_MESSAGE, SummaryWindow
from trayvml.ui.theme import LEVEL_COLOURS


def _hot(sample: Sample, gpu: int, temperature_c: float) -> Sample:
    values = list(sample.gpus[gpu].values)
    values[GPU_INDEX["temperature_gpu_c"]] = temperature_c
    gpus = list(sample.gpus)
    gpus[gpu] = replace(gpus[gpu], values=tuple(values))
    return replace(sample, gpus=tuple(gpus))


@pytest.fixture
def sample() -> Sample:
    source, clock, _ = simulated_source("idle:gpus=h100*2", host=True)
    return _hot(run_ticks(source, clock, 2), 1, 99.0)


def _rows(window: SummaryWindow) -> list[tuple[str | None, str]]:
    """(square colour or None, text) per row, as shown."""
    rows = []
    for row in window.rows.text().split("<br>"):
        match = re.match(r'<span style="color:(#[0-9a-f]{6})">■</span> (.*)', row)
        rows.append((match[1], match[2]) if match else (None, row))
    return rows


def test_summary_lists_each_gpu_coloured_by_its_alert_level_then_the_host(qtbot, sample: Sample) -> None:
    window = SummaryWindow()
    qtbot.addWidget(window)
    window.update_sample(sample)
    assert _rows(window) == [
        (LEVEL_COLOURS[Level.NORMAL].name(), gpu_line(sample.gpus[0], sample.devices[0])),
        (LEVEL_COLOURS[Level.CRITICAL].name(), f"{gpu_line(sample.gpus[1], sample.devices[1])} — critical"),  # 99 °C
        (None, host_line(sample)),
    ]
    assert window.title.text() == f"<b>trayvml</b> — {sample.simulation}"
    assert window.message.text() == NO_TRAY_MESSAGE
    assert not window.icon_label.pixmap().isNull()


def test_summary_colours_follow_the_engines_settings(qtbot, sample: Sample) -> None:
    alerts = AlertSettings()
    rules = dict(alerts.rules)
    rules["temperature"] = replace(rules["temperature"], enabled=False)
    engine = AlertEngine(replace(alerts, rules=rules))
    window = SummaryWindow(engine)
    qtbot.addWidget(window)
    window.update_sample(sample)
    assert _rows(window)[1][0] == LEVEL_COLOURS[Level.NORMAL].name()  # no temperature rule: no red
    engine.configure(AlertSettings())  # as the settings dialog does
    window.update_sample(sample)
    assert _rows(window)[1][0] == LEVEL_COLOURS[Level.CRITICAL].name()


def test_summary_before_the_first_sample_and_its_buttons(qtbot) -> None:
    window = SummaryWindow()
    qtbot.addWidget(window)
    window.update_sample(None)
    assert window.rows.text() == "Starting…" and not window.icon_label.pixmap().isNull()
    by_text = {button.text(): button for button in window.findChildren(QPushButton)}
    with qtbot.waitSignal(window.show_graphs_requested):
        qtbot.mouseClick(by_text["Show graphs"], Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(window.quit_requested):
        qtbot.mouseClick(by_text["Quit"], Qt.MouseButton.LeftButton)


def test_a_lost_gpus_row_says_lost_once(qtbot) -> None:
    from tests.helpers import run_ticks, simulated_source

    source, clock, _ = simulated_source("training:gpus=h100*2,start=900,lost=1@905")
    sample = run_ticks(source, clock, 10)
    assert sample.gpus[1].lost
    window = SummaryWindow()
    qtbot.addWidget(window)
    window.update_sample(sample)
    (lost,) = [row for colour, row in _rows(window) if row.startswith("1 H100")]
    assert lost == "1 H100 — lost: it has fallen off the bus"  # (it ended "… — lost" again)
