"""A driver call that never returns, and an unexpected error while reading: never shown as live data."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from tests.helpers import present, run_ticks, simulated_source
from tests.ui_helpers import open_menu
from trayvml.alerts.engine import AlertEngine, AlertSettings
from trayvml.alerts.rules import RuleSettings
from trayvml.alerts.severity import MACHINE, Severity
from trayvml.cli import EXIT_NO_NVML, main
from trayvml.core.errors import UnavailableReason
from trayvml.core.sample import GpuSample
from trayvml.nvml.sim.library import installed

GRACE_S = 0.2  # the tests' stall threshold: real seconds the source waits for the driver


@pytest.mark.parametrize(
    "call", ["nvmlDeviceGetTemperatureV", "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetFieldValues"]
)
def test_a_stuck_call_is_reported_with_its_name_while_the_host_goes_on(call: str) -> None:
    source, clock, library = simulated_source("training:gpus=h100*2", host=True, stall_after_s=GRACE_S)
    assert len(source.sample().gpus) == 2
    library.hang(call)
    clock.advance_s(5.0)  # the process list is read every 5 s
    stuck = source.sample()
    assert stuck.gpus == () and stuck.devices == ()
    assert stuck.stall is not None and stuck.stall.call == call
    assert stuck.host is not None  # the host's values do not wait for the driver
    clock.advance_s(12.0)
    later = source.sample()
    assert later.host is not None and later.timestamp_s > stuck.timestamp_s
    assert later.problem is not None
    headline, sentence = later.problem
    assert headline == "GPU driver not responding"
    assert "has not answered for 12 s" in sentence and call in sentence


def _stuck_in(call: str, spec: str = "idle:gpus=h100"):
    """A source that read once, then got stuck in ``call`` and said so."""
    source, clock, library = simulated_source(spec, stall_after_s=GRACE_S)
    source.sample()
    library.hang(call)
    clock.advance_s(1.0)
    assert source.sample().stall is not None
    return source, clock, library


def test_a_stuck_call_is_said_stuck_as_long_as_it_is_across_a_wall_clock_set_back() -> None:
    """Told from the wall clock when the read began, an hour set back meanwhile said the driver
    "has not answered for 0 s" (the time since then came out negative) for the hour."""
    source, clock, _ = _stuck_in("nvmlDeviceGetTemperatureV")
    clock.advance_s(5.0)
    clock.set_wall_s(-3600.0)
    clock.advance_s(6.0)
    stuck = source.sample()
    assert stuck.problem is not None and "has not answered for 11 s" in stuck.problem[1]


def test_the_driver_answering_again_recovers_with_a_fresh_reading() -> None:
    source, clock, library = _stuck_in("nvmlDeviceGetTemperatureV", "training:gpus=h100")
    utilization_reads = library.calls["nvmlDeviceGetUtilizationRates"]
    library.release("nvmlDeviceGetTemperatureV")
    for _ in range(50):  # the released call returns on the sampler's own thread, in its own time
        clock.advance_s(1.0)
        sample = source.sample()
        if sample.stall is None:
            break
    assert sample.stall is None and len(sample.gpus) == 1
    # The read that was stuck began before the stall: its values are old, so they are read afresh.
    assert library.calls["nvmlDeviceGetUtilizationRates"] == utilization_reads + 1


def test_closing_with_a_stuck_call_returns_and_removes_the_simulated_library() -> None:
    source, _, library = _stuck_in("nvmlDeviceGetUtilizationRates")
    source.close()
    assert installed() is None
    library.release("nvmlDeviceGetUtilizationRates")


def test_interrupt_ends_a_wait_on_the_driver() -> None:
    source, clock, library = _stuck_in("nvmlDeviceGetUtilizationRates")
    source.stall_after_s = 3600.0
    clock.advance_s(1.0)
    threading.Timer(0.2, source.interrupt).start()
    assert source.sample().stall is not None  # returned long before the hour's grace
    library.release("nvmlDeviceGetUtilizationRates")


def test_an_unexpected_error_is_logged_once_and_shown_as_an_error(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, clock, _ = simulated_source("training:gpus=h100")

    def broken(demand: frozenset[str] | None = None) -> tuple[GpuSample, ...]:
        raise RuntimeError("a bug in trayvml")

    with monkeypatch.context() as patched, caplog.at_level(logging.ERROR):
        patched.setattr(source.reader, "read", broken)
        samples = [run_ticks(source, clock, 1) for _ in range(3)]
    for sample in samples:
        assert sample.gpus == ()
        assert sample.unavailable is not None and sample.unavailable.reason is UnavailableReason.READ_FAILED
        assert "a bug in trayvml" in sample.unavailable.sentence
    assert len([r for r in caplog.records if r.exc_info]) == 1  # one traceback, not one per tick
    clock.advance_s(1.0)
    assert source.sample().unavailable is None


def test_the_stall_alert_fires_once_and_resolves_once() -> None:
    source, clock, library = simulated_source("idle:gpus=h100", stall_after_s=GRACE_S)
    engine = AlertEngine()
    assert engine.update(source.sample()) == []
    library.hang("nvmlDeviceGetTemperatureV")
    events = []
    for _ in range(3):
        clock.advance_s(1.0)
        events += engine.update(source.sample())
    assert [(e.gpu_index, e.rule, e.kind, e.severity) for e in events] == [
        (MACHINE, "driver_stalled", "firing", Severity.CRITICAL)
    ]
    assert events[0].title == "GPU driver not responding"
    assert "nvmlDeviceGetTemperatureV" in events[0].detail
    library.release("nvmlDeviceGetTemperatureV")
    resolved = []
    for _ in range(3):
        clock.advance_s(1.0)
        resolved += engine.update(source.sample())
    assert [(e.rule, e.kind) for e in resolved] == [("driver_stalled", "resolved")]


def test_the_stall_alert_can_be_turned_off() -> None:
    source, clock, library = simulated_source("idle:gpus=h100", stall_after_s=GRACE_S)
    rules = dict(AlertSettings().rules, driver_stalled=RuleSettings(enabled=False))
    engine = AlertEngine(AlertSettings(rules))
    source.sample()
    library.hang("nvmlDeviceGetTemperatureV")
    clock.advance_s(1.0)
    assert engine.update(source.sample()) == []
    library.release("nvmlDeviceGetTemperatureV")


def test_snapshot_gives_up_with_exit_3_and_the_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["snapshot", "--timeout", "0.3", "--simulate", "idle:gpus=h100,hang=nvmlDeviceGetTemperatureV@0"])
    err = capsys.readouterr().err
    assert code == EXIT_NO_NVML
    assert "has not answered" in err and "nvmlDeviceGetTemperatureV" in err
    assert "Traceback" not in err


def test_snapshot_json_says_the_driver_is_stuck(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    code = main(["snapshot", "--json", "--timeout", "0.3", "--simulate", "idle:hang=nvmlDeviceGetTemperatureV@0"])
    out = capsys.readouterr().out
    assert code == EXIT_NO_NVML
    document = json.loads(out)
    assert document["gpus"] == []
    assert document["driver_stall"]["call"] == "nvmlDeviceGetTemperatureV"


def test_log_stops_with_whole_rows_when_the_driver_stops_answering(tmp_path, capsys) -> None:
    path = tmp_path / "gpu.csv"
    code = main(
        [
            "log",
            "--csv",
            str(path),
            "--interval",
            "0.5",
            "--timeout",
            "0.3",
            "--query",
            "index,utilization.gpu",
            "--simulate",
            "idle:gpus=h100,hang=nvmlDeviceGetUtilizationRates@1.2",
        ]
    )
    err = capsys.readouterr().err
    assert code == EXIT_NO_NVML
    assert "nvmlDeviceGetUtilizationRates" in err and "Traceback" not in err
    lines = path.read_text().splitlines()
    assert lines[0] == "index, utilization.gpu [%]"
    assert 2 <= len(lines) <= 4  # rows at 0, 0.5 and 1.0 s at most; none after the hang
    assert all(line.count(",") == 1 for line in lines)


def _stuck_sample():
    source, clock, library = simulated_source("training:gpus=h100*2", host=True, stall_after_s=GRACE_S)
    live = source.sample()
    library.hang("nvmlDeviceGetTemperatureV")
    clock.advance_s(1.0)
    source.sample()  # the read that gets stuck begins here
    clock.advance_s(20.0)
    stuck = source.sample()
    library.release("nvmlDeviceGetTemperatureV")
    return live, stuck


def test_the_tray_shows_no_old_values_while_the_driver_is_stuck(qapp) -> None:
    from trayvml.ui.glance import content_for
    from trayvml.ui.tray import Tray

    live, stuck = _stuck_sample()
    tray = Tray()
    tray.update(live)
    open_menu(tray)
    assert not content_for(live).stale and tray.gpu_actions[0].isVisible()
    tray.update(stuck)
    open_menu(tray)
    assert content_for(stuck).stale
    assert tray.icon.toolTip().splitlines()[1].startswith("The NVIDIA driver has not answered for 20 s")
    assert "H100" not in tray.icon.toolTip()  # no GPU line with the old values
    assert tray.status_action.text() == "GPU driver not responding"
    assert not any(action.isVisible() for action in tray.gpu_actions)
    assert tray.copy_action.isEnabled() is False  # no freest GPU picked from old values
    tray.update(live)
    assert "H100" in tray.icon.toolTip()


def test_the_stale_icon_differs_from_live_and_from_no_gpu(qapp) -> None:
    from trayvml.ui.glance import content_for
    from trayvml.ui.icon import IconContent, draw_icon

    live, stuck = _stuck_sample()
    contents = (content_for(live), content_for(stuck), IconContent((), no_gpu=True))
    images = [draw_icon(content, 22).toImage() for content in contents]
    assert images[1] != images[0] and images[1] != images[2]


def test_the_summary_window_says_why(qtbot) -> None:
    from trayvml.ui.summary import SummaryWindow

    _, stuck = _stuck_sample()
    window = SummaryWindow()
    qtbot.addWidget(window)
    window.update_sample(stuck)
    assert "has not answered for 20 s" in window.rows.text()


def test_device_details_show_no_old_reading_while_the_driver_is_stuck(qtbot) -> None:
    """A stuck driver's samples have no GPUs: Device details kept every last value on screen, with
    nothing to say it was old."""
    from trayvml.ui.details_page import DetailsPage

    live, stuck = _stuck_sample()
    page = DetailsPage()
    qtbot.addWidget(page)
    page.show_devices(live)
    gpu = present(page.topLevelItem(page.topLevelItemCount() - 1))
    readings = present(gpu.child(gpu.childCount() - 1))

    def shown() -> dict[str, str]:
        items = [present(readings.child(k)) for k in range(readings.childCount())]
        return {item.text(0): item.text(1) for item in items}

    assert shown()["Power draw"].endswith(" W")
    page.show_readings(stuck)
    assert set(shown().values()) == {"GPU driver not responding"}


def test_the_sampler_thread_quits_while_a_call_is_stuck(qtbot) -> None:
    from trayvml.nvml.sim import parse_spec
    from trayvml.ui.sampler import Sampler

    sampler = Sampler(parse_spec("idle:gpus=h100,hang=nvmlDeviceGetTemperatureV@0"), 0.1, stall_after_s=3600.0)
    samples: list = []
    sampler.sample_taken.connect(samples.append)
    sampler.start()
    qtbot.waitUntil(lambda: installed() is not None and installed().calls["nvmlDeviceGetTemperatureV"] > 0)
    sampler.stop()  # the tick waiting up to an hour on the driver is interrupted
    assert not sampler._thread.isRunning()


@pytest.mark.parametrize("call", ["nvmlGpmMigSampleGet", "nvmlGpmSampleGet"])
def test_a_stuck_gpm_call_is_named_as_the_function_that_hangs(call: str) -> None:
    source, clock, library = simulated_source("training:gpus=h100-mig,start=1800", stall_after_s=GRACE_S)
    source.sample()  # every metric demanded: GPM's too
    library.hang(call)
    clock.advance_s(1.0)
    stuck = source.sample()
    assert stuck.stall is not None and stuck.stall.call == call
    library.release(call)


def test_a_sysfs_file_that_does_not_answer_is_named_and_the_driver_not_blamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from trayvml.core.clock import ManualClock
    from trayvml.nvml.runtime_pm import SYSFS_ROOT_ENV
    from trayvml.source import Source

    function = tmp_path / "bus" / "pci" / "devices" / "0000:01:00.0"
    (function / "power").mkdir(parents=True)
    (function / "vendor").write_text("0x10de\n")
    (function / "class").write_text("0x030000\n")
    status = function / "power" / "runtime_status"
    os.mkfifo(status)  # opening it for reading blocks until something writes: a file that does not answer
    monkeypatch.setenv(SYSFS_ROOT_ENV, str(tmp_path))
    source = Source(None, ManualClock(), host=False, stall_after_s=GRACE_S)
    try:
        stuck = source.sample()
        assert stuck.gpus == () and stuck.stall is not None and stuck.stall.call == str(status)
        assert stuck.problem is not None
        headline, sentence = stuck.problem
        assert str(status) in sentence and "NVIDIA driver has not answered" not in sentence
        assert "driver" not in headline
    finally:
        os.close(os.open(status, os.O_WRONLY | os.O_NONBLOCK))  # the blocked reader gets end of file
        source.close()
