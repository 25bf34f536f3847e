"""Sleeping laptop GPUs: sysfs is read first, and a runtime-suspended GPU gets no NVML call."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers import run_ticks, simulated_source
from trayvml.alerts.dispatch import Dispatcher
from trayvml.alerts.engine import AlertSettings
from trayvml.core.clock import ManualClock
from trayvml.core.demand import HISTORY
from trayvml.core.errors import SimulationSpecError
from trayvml.core.sample import MetricState
from trayvml.history.timeline import History
from trayvml.monitor.pipeline import Monitor
from trayvml.monitor.spans import AsleepSpans
from trayvml.nvml.runtime_pm import SYSFS_ROOT_ENV, RuntimePower, bus_key
from trayvml.nvml.sim import parse_spec
from trayvml.source import Source


def nvml_calls(lib) -> int:
    return sum(lib.calls.values())


def test_a_laptop_whose_only_gpu_sleeps_makes_no_nvml_call_at_all_then_picks_it_up_on_waking() -> None:
    source, clock, lib = simulated_source("idle:gpus=laptop,sleep=0@0/30")
    sample = run_ticks(source, clock, 20)
    assert nvml_calls(lib) == 0 and lib.refcount == 0  # not even nvmlInit
    gpu = sample.gpus[0]
    assert gpu.asleep and gpu.state("utilization_gpu_percent") is MetricState.ASLEEP
    clock.advance_s(11)  # 31 s: awake
    woke = source.sample().gpus[0]
    assert not woke.asleep and woke.state("utilization_gpu_percent") is MetricState.OK
    assert lib.calls_on_sleeping_gpus == 0


def test_a_gpu_that_falls_asleep_is_let_go_nvml_shut_down_until_balanced() -> None:
    source, clock, lib = simulated_source("idle:gpus=laptop,sleep=0@10/20")
    run_ticks(source, clock, 5)
    assert lib.refcount == 1
    lib.refcount += 2  # someone else in the process initialised NVML too: all of it must go
    clock.advance_s(6)  # 10 s
    assert source.sample().gpus[0].asleep
    assert lib.refcount == 0
    calls = nvml_calls(lib)
    run_ticks(source, clock, 15)
    assert nvml_calls(lib) == calls  # asleep: not a single call
    clock.advance_s(6)  # 30 s: awake again
    assert source.sample().gpus[0].state("temperature_gpu_c") is MetricState.OK
    assert lib.calls_on_sleeping_gpus == 0


def test_beside_an_awake_gpu_the_sleeping_one_is_not_queried() -> None:
    source, clock, lib = simulated_source("idle:gpus=h100+laptop,sleep=1@5")
    run_ticks(source, clock, 5)
    utilization_calls = lib.calls["nvmlDeviceGetUtilizationRates"]
    clock.advance_s(1)  # 5 s: the laptop GPU sleeps
    sample = run_ticks(source, clock, 10)
    assert sample.gpus[1].asleep and not sample.gpus[0].asleep
    assert sample.gpus[0].state("utilization_gpu_percent") is MetricState.OK
    assert lib.calls["nvmlDeviceGetUtilizationRates"] == utilization_calls + 10  # the H100's only
    assert lib.calls_on_sleeping_gpus == 0


def test_a_gpu_asleep_when_nvml_opens_gets_only_its_address_read_and_the_rest_when_it_wakes() -> None:
    source, clock, lib = simulated_source("training:gpus=laptop+laptop,sleep=1@0/10")
    sample = run_ticks(source, clock, 10)
    assert sample.gpus[1].asleep and sample.devices[1].name == "NVIDIA GPU"  # its name would wake it
    assert lib.calls_on_sleeping_gpus == 0
    clock.advance_s(1)  # 10 s: awake
    sample = source.sample()
    assert sample.devices[1].name == "NVIDIA GeForce RTX 4070 Laptop GPU"
    assert sample.gpus[1].state("memory_used_bytes") is MetricState.OK
    assert lib.calls_on_sleeping_gpus == 0


def test_an_idle_laptop_gpu_is_read_slowly_and_nvml_let_go_in_between() -> None:
    source, clock, lib = simulated_source("idle:gpus=laptop")
    source.reader.idle_poll_s = 30.0
    states = []
    for _ in range(61):
        states.append(source.sample().gpus[0].state("utilization_gpu_percent"))
        if states[-1] is MetricState.RESTING:
            assert lib.refcount == 0  # nothing holds the GPU awake between polls
        clock.advance_s(1)
    assert states.count(MetricState.OK) == 3  # at 0, 30 and 60 s
    assert states.count(MetricState.RESTING) == 58


def test_a_laptop_gpu_holding_memory_is_not_rested_even_without_process_lists() -> None:
    source, _, _ = simulated_source("training:gpus=laptop,start=6700")  # the job just ended: idle, memory free
    source.reader.idle_poll_s = 30.0
    states = [source.sample(HISTORY).gpus[0].state("temperature_gpu_c") for _ in range(2)]
    assert states[-1] is MetricState.RESTING
    source2, _, _ = simulated_source("faults:gpus=laptop,start=6700,lost=")  # alice's notebook holds 2 GiB
    source2.reader.idle_poll_s = 30.0
    states = [source2.sample(HISTORY).gpus[0].state("temperature_gpu_c") for _ in range(2)]
    assert states == [MetricState.OK, MetricState.OK]


def test_a_gpu_waking_during_a_slow_poll_rest_is_read_at_once() -> None:
    source, clock, _ = simulated_source("idle:gpus=laptop+laptop,sleep=1@0/5")
    source.reader.idle_poll_s = 30.0
    first = source.sample()
    assert first.gpus[1].asleep and first.gpus[0].state("utilization_gpu_percent") is MetricState.OK
    clock.advance_s(1)
    assert source.sample().gpus[0].state("utilization_gpu_percent") is MetricState.RESTING
    clock.advance_s(5)  # GPU 1 wakes: something uses it
    woke = source.sample()
    assert woke.gpus[1].state("utilization_gpu_percent") is MetricState.OK


def test_sysfs_root_is_injectable_and_only_nvidia_display_functions_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    devices = tmp_path / "bus" / "pci" / "devices"
    for address, vendor, pci_class, status in (
        ("0000:00:02.0", "0x8086", "0x030000", "suspended"),  # the iGPU
        ("0000:01:00.0", "0x10de", "0x030000", "suspended"),  # the dGPU
        ("0000:01:00.1", "0x10de", "0x040300", "suspended"),  # its HDMI audio function
    ):
        (devices / address / "power").mkdir(parents=True)
        (devices / address / "vendor").write_text(vendor + "\n")
        (devices / address / "class").write_text(pci_class + "\n")
        (devices / address / "power" / "runtime_status").write_text(status + "\n")
        (devices / address / "power" / "control").write_text("auto\n")
    monkeypatch.setenv(SYSFS_ROOT_ENV, str(tmp_path))
    power = RuntimePower().poll()
    assert list(power) == ["0000:01:00.0"] and power["0000:01:00.0"].asleep and power["0000:01:00.0"].managed
    assert bus_key("00000000:01:00.0") == bus_key("0000:01:00.0")
    assert RuntimePower(tmp_path / "missing").poll() == {}  # no sysfs: NVML alone decides


def test_only_laptop_profiles_can_sleep() -> None:
    with pytest.raises(SimulationSpecError, match="only laptop GPUs runtime-suspend"):
        parse_spec("idle:gpus=h100+laptop,sleep=0@10")
    assert parse_spec("idle:gpus=h100+laptop,sleep=1@10/5").sleeps == ((1, (10.0, 15.0)),)


def _feed(spans: AsleepSpans, source: Source, clock: ManualClock, seconds: int, stalled: bool = False) -> None:
    """``seconds`` of samples a second apart (``stalled``: a stuck driver's, without GPUs)."""
    for _ in range(seconds):
        sample = source.sample()
        spans.update(replace(sample, gpus=(), devices=()) if stalled else sample)
        clock.advance_s(1)


def test_asleep_spans_say_which_gaps_were_sleep() -> None:
    source, clock, _ = simulated_source("idle:gpus=h100+laptop,sleep=1@10/20+1@50/5")
    spans = AsleepSpans()
    start_s = clock.now_s()
    _feed(spans, source, clock, 70)
    seen = [(gpu, begin - start_s, end - start_s) for gpu, begin, end in spans.between(start_s, start_s + 70)]
    assert seen == [(1, 10.0, 29.0), (1, 50.0, 54.0)]
    assert spans.between(start_s + 31, start_s + 45) == []


def test_no_sleep_is_shaded_across_a_stretch_without_readings() -> None:
    """Asleep before and after an hour with no reading of the GPU (a stalled driver's samples have
    no GPUs): the span went on across the hour, shaded as sleep though nothing was read."""
    source, clock, _ = simulated_source("idle:gpus=h100+laptop,sleep=1@10/7200")
    spans = AsleepSpans()
    start_s = clock.now_s()
    _feed(spans, source, clock, 20)
    _feed(spans, source, clock, 30, stalled=True)  # the driver stalled for half a minute: samples without GPUs
    _feed(spans, source, clock, 5)
    clock.advance_s(3600)  # then an hour without a sample at all (the app stopped)
    _feed(spans, source, clock, 5)
    seen = [(gpu, begin - start_s, end - start_s) for gpu, begin, end in spans.between(start_s, start_s + 4000)]
    assert seen == [(1, 10.0, 19.0), (1, 50.0, 54.0), (1, 3655.0, 3659.0)]


def test_a_sleep_across_the_wall_clock_set_back_is_shaded_on_both_sides() -> None:
    """Set back an hour while the laptop GPU sleeps: the span went on with its end before its
    start, and no band showed for the rest of that sleep."""
    source, clock, _ = simulated_source("idle:gpus=h100+laptop,sleep=1@10/40")
    monitor = Monitor(Dispatcher(clock), AlertSettings(), History)  # what tells its spans of the step
    start_s = clock.now_s()
    for tick in range(60):
        if tick == 20:
            clock.set_wall_s(-3600.0)
        monitor.take(source.sample())
        clock.advance_s(1)
    spans = monitor.asleep_spans
    seen = [(gpu, begin - start_s, end - start_s) for gpu, begin, end in spans.between(start_s - 3600, start_s + 60)]
    assert seen == [(1, 10.0, 19.0), (1, 20.0 - 3600, 49.0 - 3600)]


def test_only_gpus_the_kernel_may_suspend_have_their_power_state_read_each_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trayvml.nvml import runtime_pm

    devices = tmp_path / "bus" / "pci" / "devices"
    for address, control in (("0000:01:00.0", "auto"), ("0000:02:00.0", "on")):
        (devices / address / "power").mkdir(parents=True)
        (devices / address / "vendor").write_text("0x10de\n")
        (devices / address / "class").write_text("0x030200\n")
        (devices / address / "power" / "runtime_status").write_text("active\n")
        (devices / address / "power" / "control").write_text(control + "\n")
    reads: list[str] = []
    real_read = runtime_pm._read

    def recorded_read(path: Path | str) -> str:
        reads.append(str(path))
        return real_read(path)

    monkeypatch.setattr(runtime_pm, "_read", recorded_read)
    now = [100.0]
    monkeypatch.setattr(runtime_pm.time, "monotonic", lambda: now[0])
    power = RuntimePower(tmp_path)
    first = power.poll()
    assert first["0000:01:00.0"].managed and not first["0000:02:00.0"].managed
    reads.clear()
    (devices / "0000:01:00.0" / "power" / "runtime_status").write_text("suspended\n")
    second = power.poll()
    # The laptop-style GPU's state is read afresh; the server-style one (control "on") is not read at all.
    assert second["0000:01:00.0"].asleep and not second["0000:02:00.0"].asleep
    assert [Path(r).parent.parent.name for r in reads] == ["0000:01:00.0"]
    # Its control is read again after CONTROL_RECHECK_S: set to "auto" meanwhile, it is managed from then on.
    (devices / "0000:02:00.0" / "power" / "control").write_text("auto\n")
    now[0] += runtime_pm.CONTROL_RECHECK_S
    assert power.poll()["0000:02:00.0"].managed
