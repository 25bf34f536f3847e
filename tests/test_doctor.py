"""trayvml doctor: one line per check, an exit code that says whether any is a PROBLEM, a redacted bundle."""

from __future__ import annotations

import getpass
import json
import socket
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from trayvml.cli import main
from trayvml.commands.doctor import Level, Redactor, gather
from trayvml.nvml.sim import parse_spec

SIM = "--simulate=training:at=600,gpus=h100+rtx4090"


@pytest.fixture(autouse=True)
def _own_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its own config and state folders, and a session bus address where nothing listens."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'no-bus'}")


def _levels(out: str) -> dict[str, str]:
    found = {}
    for line in out.splitlines():
        level, _, rest = line.partition(" ")
        found[rest.strip().split(":", 1)[0]] = level
    return found


def test_doctor_checks_every_part_and_exits_0_without_a_problem(capsys: pytest.CaptureFixture) -> None:
    assert main(["doctor", SIM]) == 0
    out = capsys.readouterr().out
    levels = _levels(out)
    for check in ("nvml.library", "driver", "gpu0.metrics", "gpu1.metrics", "permissions", "settings", "history"):
        assert levels[check] == "OK", out
    assert levels["gpu0.runtime-pm"] == "OK" and levels["gpu1.runtime-pm"] == "OK"
    assert levels["tray"] == levels["notifications"] == "WARNING"  # nothing listens at that bus address
    assert "Driver 610.43.01" in out
    fan_line = next(line for line in out.splitlines() if "gpu0.metrics" in line)
    assert "Not supported by this GPU: Fan speed" in fan_line  # an SXM H100 has no fan


def test_a_lost_gpu_and_hidden_processes_are_a_problem_and_a_warning(capsys: pytest.CaptureFixture) -> None:
    assert main(["doctor", "--simulate=faults:at=600,gpus=h100+rtx4090"]) == 1
    levels = _levels(capsys.readouterr().out)
    assert levels["gpu1.metrics"] == "PROBLEM"
    assert levels["permissions"] == "WARNING"


def test_nvml_missing_is_a_problem_in_a_sentence(capsys: pytest.CaptureFixture) -> None:
    assert main(["doctor", SIM + ",nvml=missing"]) == 1
    out = capsys.readouterr().out
    assert _levels(out)["nvml"] == "PROBLEM"
    assert "No NVIDIA driver found" in out and "Traceback" not in out


def test_a_driver_that_does_not_answer_is_waited_for_a_bounded_time(capsys: pytest.CaptureFixture) -> None:
    began = time.monotonic()
    assert main(["doctor", "--timeout", "0.3", SIM + ",hang=nvmlDeviceGetUtilizationRates@0"]) == 1
    assert time.monotonic() - began < 10
    out = capsys.readouterr().out
    assert _levels(out)["nvml"] == "PROBLEM" and "nvmlDeviceGetUtilizationRates" in out


def test_json_lists_each_check_and_each_metric_state(capsys: pytest.CaptureFixture) -> None:
    assert main(["doctor", "--json", SIM]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["problems"] == 0 and data["warnings"] == 2
    assert {c["level"] for c in data["checks"]} <= {"OK", "WARNING", "PROBLEM"}
    h100, rtx = data["gpus"]
    assert h100["metrics"]["fan_speed_percent"] == "not supported"  # not zero
    assert h100["metrics"]["utilization_gpu_percent"] == "supported"
    assert rtx["metrics"]["sm_activity_percent"] == "not supported"  # no GPM before Hopper


def test_a_broken_settings_file_is_a_problem_and_is_left_where_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("this is = = not toml")
    (tmp_path / "broken.toml.corrupt-20260101-000000").write_text("older")
    assert main(["doctor", "--config", str(path), SIM]) == 1
    out = capsys.readouterr().out
    levels = _levels(out)
    assert levels["settings"] == "PROBLEM" and "not valid TOML" in out
    assert levels["settings.set-aside"] == "WARNING"
    assert path.read_text() == "this is = = not toml"  # the doctor only looks


def test_the_history_writer_is_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import os

    from trayvml.history import default_folder
    from trayvml.history.disk.write import WriterLock

    folder = default_folder(simulated=True)
    folder.mkdir(parents=True)
    lock = WriterLock(folder)
    try:
        assert main(["doctor", SIM]) == 0
    finally:
        lock.release()
    out = capsys.readouterr().out
    assert f"Process {os.getpid()}" in out and _levels(out)["history.writer"] == "OK"


def test_an_unwritable_history_folder_is_a_problem(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trayvml.commands.doctor as doctor

    # Tests may run as root, who writes anywhere: the answer of access(2) stands in for the folder's mode.
    monkeypatch.setattr(doctor.os, "access", lambda path, mode: False)
    assert main(["doctor", SIM]) == 1
    out = capsys.readouterr().out
    assert _levels(out)["history"] == "PROBLEM" and "not writable" in out


def test_a_tray_host_and_notification_service_are_found_on_the_bus(tmp_path: Path) -> None:
    asked: list[float] = []

    def bus(names: Iterable[str], timeout_s: float) -> dict[str, bool]:
        asked.append(timeout_s)
        return {name: name != "org.freedesktop.StatusNotifierWatcher" for name in names}

    findings, _, _ = gather(parse_spec("training:at=600,gpus=h100"), 5.0, tmp_path / "c.toml", tmp_path / "h", bus)
    by_name = {c.name: c for c in findings.checks}
    assert by_name["tray"].level is Level.OK and by_name["notifications"].level is Level.OK
    assert asked and 0 < asked[0] <= 5  # the bus is waited for a bounded time


def test_the_bundle_is_redacted_consistently(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bundle = tmp_path / "out" / "report.json"
    config = Path.home() / "trayvml-doctor-test-does-not-exist.toml"  # a home path in a sentence
    assert main(["doctor", "--bundle", str(bundle), "--config", str(config), SIM]) == 0
    assert "redacted report" in capsys.readouterr().err
    text = bundle.read_text()
    data = json.loads(text)
    uuids = [gpu["info"]["uuid"] for gpu in data["snapshot"]["gpus"]]
    assert uuids == ["<uuid-1>", "<uuid-2>"]
    assert "GPU-" not in text
    assert str(Path.home()) not in text and "<home-1>/trayvml-doctor-test" in text
    hostname = socket.gethostname()
    if len(hostname) >= 3:
        assert hostname not in text
    user = getpass.getuser()
    if len(user) >= 3:
        assert f'"{user}"' not in text
    assert data["checks"] and data["snapshot"]["gpus"][0]["processes"]
    assert [p.name for p in bundle.parent.iterdir()] == ["report.json"]  # no temporary file left


def test_a_bundle_that_cannot_be_written_is_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "file").write_text("")
    assert main(["doctor", "--bundle", str(tmp_path / "file" / "report.json"), SIM]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trayvml: Could not write") and "Traceback" not in err


def test_redaction_uses_one_token_per_secret() -> None:
    redactor = Redactor()
    redactor.add("alice", "user")
    redactor.add("/home/alice", "home")
    redactor.add("a", "user")  # too short to redact without mangling every word
    text = redactor.redact(
        "alice in /home/alice/x, GPU-12345678-1234-1234-1234-123456789abc twice: "
        "GPU-12345678-1234-1234-1234-123456789abc, a"
    )
    assert text == "<user-1> in <home-1>/x, <uuid-1> twice: <uuid-1>, a"
