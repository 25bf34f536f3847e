"""Settings: TOML round trips, atomic writes, and files that cannot be used are set aside."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from trayvml.alerts import RULE_BY_KEY, AlertSettings
from trayvml.config import Settings, SettingsError, SettingsStore, from_toml, problems, to_toml


def changed_settings() -> Settings:
    temperature = replace(RULE_BY_KEY["temperature"].defaults, critical_enter=88.0, critical_clear=80.0, hold_s=2.0)
    power = replace(RULE_BY_KEY["power"].defaults, enabled=True, critical_enter=math.nan)
    gpu1 = replace(temperature, critical_enter=75.0, critical_clear=70.0, warning_enter=70.0, warning_clear=65.0)
    rules = {**AlertSettings().rules, "temperature": temperature, "power": power}
    return Settings(
        sampling_interval_s=2.0,
        history_hours=6,
        tray_metric="temperature",
        notifications=False,
        start_at_login=True,
        hidden_gpus=(2, 3),
        alerts=AlertSettings(rules=rules, overrides={1: {"temperature": gpu1}}),
    )


def same(a: Settings, b: Settings) -> bool:
    return to_toml(a) == to_toml(b)  # NaN-aware comparison through the canonical text


def test_defaults_round_trip_and_read_well() -> None:
    text = to_toml(Settings())
    assert "sampling_interval_s = 1.0" in text and "[alerts.temperature]" in text
    assert same(from_toml(text), Settings())


def test_every_field_round_trips(tmp_path: Path) -> None:
    store = SettingsStore(tmp_path / "config.toml")
    store.save(changed_settings())
    loaded, message = store.load()
    assert message == "" and same(loaded, changed_settings())
    assert loaded.alerts.for_gpu(1, "temperature").critical_enter == 75.0
    assert loaded.alerts.for_gpu(0, "temperature").critical_enter == 88.0
    assert math.isnan(loaded.alerts.rules["power"].critical_enter)
    text = store.path.read_text()
    assert "[gpus.1.alerts.temperature]" in text and "hold_s" not in text.split("[gpus.1.alerts.temperature]")[1]


def test_a_missing_file_means_defaults(tmp_path: Path) -> None:
    settings, message = SettingsStore(tmp_path / "none.toml").load()
    assert same(settings, Settings()) and message == ""


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("sampling_interval_s = [", "it is not valid TOML"),
        ("sampling_interval_s = 'fast'", "sampling_interval_s should be float"),
        ("sampling_interval_s = 0.01", "outside 0.5–60"),
        ("tray_metric = 'colour'", "'colour' is not one of"),
        ("[alerts.temperature]\ncritical_clear = 95.0", "must be below its enter threshold"),
        ("[alerts.weather]\nenabled = true", "unknown rule 'weather'"),
        ("colour = 'red'", "unknown setting 'colour'"),
        ("[gpus.0.alerts.temperature]\nhold_s = 'long'", "should be a number"),
    ],
)
def test_a_file_that_cannot_be_used_is_set_aside(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(content)
    settings, message = SettingsStore(path).load()
    assert same(settings, Settings())
    assert reason in message and "defaults are in use" in message
    (aside,) = tmp_path.glob("config.toml.corrupt-*")
    assert aside.read_text() == content  # nothing of the user's is lost
    assert not path.exists()
    assert SettingsStore(path).load()[1] == ""  # told once: the next start is quiet


def test_saving_refuses_invalid_settings_and_keeps_the_file(tmp_path: Path) -> None:
    store = SettingsStore(tmp_path / "config.toml")
    store.save(Settings())
    before = store.path.read_bytes()
    bad = replace(Settings(), sampling_interval_s=0.0)
    assert problems(bad)
    with pytest.raises(SettingsError, match="Sampling interval"):
        store.save(bad)
    assert store.path.read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp"))


def test_saving_goes_through_a_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    store = SettingsStore(tmp_path / "sub" / "config.toml")
    replaced = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (replaced.append((Path(a).name, Path(b).name)), real(a, b)))
    store.save(Settings())
    assert len(replaced) == 1 and replaced[0][0].startswith(".config.toml.") and replaced[0][1] == "config.toml"
