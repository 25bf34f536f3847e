"""The settings dialog round-trips every field through the file; invalid input is refused with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QDialogButtonBox

from tests.helpers import simulated_source
from tests.test_config import changed_settings, same
from trayvml.autostart import XdgAutostart
from trayvml.config import Settings, SettingsStore
from trayvml.ui.settings_dialog import SettingsDialog


@pytest.fixture
def devices():
    source, _, _ = simulated_source("idle:gpus=h100*2+rtx4090+laptop")
    return source.sample().devices


def test_every_field_round_trips_through_the_dialog_and_the_file(qtbot, devices, tmp_path: Path) -> None:
    dialog = SettingsDialog(changed_settings(), devices)
    qtbot.addWidget(dialog)
    shown, problems = dialog.settings()
    assert problems == [] and same(shown, changed_settings())
    store = SettingsStore(tmp_path / "config.toml")
    dialog.settings_applied.connect(store.save)
    assert dialog.apply()
    loaded, message = store.load()
    assert message == "" and same(loaded, changed_settings())


def test_edits_in_the_dialog_are_what_gets_saved(qtbot, devices) -> None:
    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    assert "NVML refreshes utilization" in dialog.interval.toolTip()
    applied = []
    dialog.settings_applied.connect(applied.append)
    dialog.interval.setValue(2.5)
    dialog.tray_metric.setCurrentText("power")
    dialog.gpu_checks[3].setChecked(False)
    dialog.rule_grid.rows["temperature"][2]["critical_enter"].setText("88")
    dialog.gpu_choice.setCurrentIndex(1)
    _, override, edits = dialog.override_grid.rows["temperature"]
    override.setChecked(True)
    for name, text in (
        ("warning_enter", "75"),
        ("warning_clear", "70"),
        ("critical_enter", "80"),
        ("critical_clear", "76"),
    ):
        edits[name].setText(text)
    assert dialog.problem.text() == ""
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    (settings,) = applied
    assert settings.sampling_interval_s == 2.5 and settings.tray_metric == "power" and settings.hidden_gpus == (3,)
    assert settings.alerts.for_gpu(0, "temperature").critical_enter == 88.0
    assert settings.alerts.for_gpu(1, "temperature").critical_enter == 80.0
    assert set(settings.alerts.overrides) == {1}


@pytest.mark.parametrize(
    ("field", "text", "reason"),
    [
        ("critical_clear", "95", "must be below its enter threshold"),
        ("hold_s", "soon", "must be a number"),
    ],
)
def test_invalid_input_is_refused_with_a_reason(qtbot, devices, field: str, text: str, reason: str) -> None:
    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    applied = []
    dialog.settings_applied.connect(applied.append)
    dialog.rule_grid.rows["temperature"][2][field].setText(text)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled() and reason in dialog.problem.text()
    assert not dialog.apply() and applied == []
    dialog.rule_grid.rows["temperature"][2][field].setText("85" if field == "critical_clear" else "5")
    assert ok.isEnabled() and dialog.problem.text() == ""


def test_the_app_applies_settings_without_a_restart(qtbot, tmp_path: Path) -> None:
    from dataclasses import replace

    from trayvml.nvml.sim import parse_spec
    from trayvml.ui.app import App

    store = SettingsStore(tmp_path / "config.toml")
    autostart = XdgAutostart(tmp_path)
    app = App(parse_spec("idle:gpus=h100"), store=store, autostart=autostart)
    source, _, _ = simulated_source("idle:gpus=h100")
    app.on_sample(source.sample())
    new = replace(changed_settings(), hidden_gpus=())
    app.apply_settings(new)
    assert app.engine.settings is new.alerts and app.tray.metric == "temperature"
    assert app.history.tiers[-1].span_s == 6 * 3600  # history_hours = 6
    assert app.history.tiers[0].step_s == 2.0  # sampling every 2 s
    assert autostart.is_enabled() and app.tray.autostart_action.isChecked()  # start at login: on
    assert same(store.load()[0], new)
    app.tray.autostart_action.setChecked(False)  # the menu's check box
    assert not autostart.is_enabled() and not store.load()[0].start_at_login


def test_clear_thresholds_say_which_way_they_clear(qtbot, devices) -> None:
    from PySide6.QtWidgets import QLabel

    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)

    def words(rule: str) -> list[str]:
        grid = dialog.rule_grid
        return [grid.findChild(QLabel, f"{rule}.{level}_clear.label").text() for level in ("warning", "critical")]

    assert words("temperature") == ["below", "below"]  # hot is alarming: it clears below
    assert words("memory_free") == ["above", "above"]  # little free memory is: it clears above
    assert dialog.rule_grid.findChild(QLabel, "job_finished.warning_clear.label") is None  # not a threshold
