"""Process lists as a real driver gives them: one row per process, shares that add up, PIDs
that are reused, PIDs from another PID namespace."""

from __future__ import annotations

import math

from tests.helpers import simulated_source
from trayvml.monitor.energy import EnergyMeter
from trayvml.nvml.sim.profiles import PROFILES
from trayvml.nvml.sim.scenarios import Processes


def _running(program: str, seed: int) -> float:
    """A simulated second at which ``program`` runs on GPU 0 (an RTX 4090) in the processes scenario."""
    scenario = Processes(seed, [PROFILES["rtx4090"]])
    item = next(s for s in scenario._schedule[0] if s.process.name == program)
    return item.start_s + 1.0


def test_a_process_in_both_the_compute_and_the_graphics_list_is_one_process() -> None:
    start = _running("blender", seed=1)
    source, clock, _ = simulated_source(f"processes:gpus=rtx4090,seed=1,start={start}")
    meter = EnergyMeter()
    for _ in range(3):
        sample = source.sample()
        meter.update(sample)
        clock.advance_s(5)
    gpu = sample.gpus[0]
    pids = [p.pid for p in gpu.processes]
    assert len(pids) == len(set(pids))
    blender = next(p for p in gpu.processes if p.name == "blender")
    assert blender.kind == "compute+graphics" and blender.used_memory_bytes > 0
    assert gpu.value("process_count") == len(set(pids))
    # Energy goes to each process once: the shares add up to the GPU's, never more.
    attributed = sum(meter.process_wh.values()) + meter.unattributed_wh(0)
    assert 0 < attributed <= meter.since_start_wh(0) * (1 + 1e-9)


def _by_name(sample, name: str):  # type: ignore[no-untyped-def]
    return next(p for p in sample.gpus[0].processes if p.name == name)


def test_a_process_without_new_utilization_samples_is_idle_not_as_before() -> None:
    source, clock, lib = simulated_source("processes:gpus=rtx4090,start=1800")
    busy = _by_name(source.sample(), "python")
    assert busy.sm_util_percent > 0
    lib.process_sm_util[busy.pid] = 0  # it runs no kernel: the driver has no sample of it
    clock.advance_s(5)
    assert _by_name(source.sample(), "python").sm_util_percent == 0


def test_an_sm_share_above_100_is_unknown_and_energy_is_shared_by_memory() -> None:
    source, clock, lib = simulated_source("processes:gpus=rtx4090,start=1800")
    meter = EnergyMeter()
    meter.update(source.sample())
    python = _by_name(source.sample(), "python")
    lib.process_sm_util[python.pid] = 0xFFFFFFFF  # garbage drivers answer at times
    clock.advance_s(5)
    sample = source.sample()
    meter.update(sample)
    assert math.isnan(_by_name(sample, "python").sm_util_percent)  # unknown, not 100 %
    procs = sample.gpus[0].processes
    memory = sum(p.used_memory_bytes for p in procs)
    gpu_wh = meter.since_start_wh(0)
    for p in procs:  # not by a made-up SM share: by memory, for every process
        assert math.isclose(meter.process_energy_wh(p), gpu_wh * p.used_memory_bytes / memory)


def test_a_reused_pid_is_a_new_process_with_its_own_name_and_energy() -> None:
    # The training job ends at 6600 s and starts again at 7260 s under the same PID.
    source, clock, lib = simulated_source("training:gpus=rtx4090,start=6590")
    meter = EnergyMeter()
    for _ in range(2):
        meter.update(sample := source.sample())
        clock.advance_s(5)
    first = _by_name(sample, "python")
    first_wh = meter.process_energy_wh(first)
    assert first_wh > 0
    lib.process_names[first.pid] = "python3"  # what the host says of the PID from now on
    while clock.now_s() - source.library.start_s < 7265 - 6590:  # type: ignore[union-attr]
        meter.update(source.sample())  # the gap's energy goes to the processes of the gap
        clock.advance_s(30)
    for _ in range(2):
        meter.update(sample := source.sample())
        clock.advance_s(5)
    second = next(p for p in sample.gpus[0].processes if p.pid == first.pid)
    assert second.started_s > first.started_s
    assert second.name == "python3"  # looked up again, not the old process's name
    assert 0 < meter.process_energy_wh(second) < first_wh  # its energy starts from 0
    assert meter.process_energy_wh(first) == first_wh
