"""The reader on every profile and scenario, and what it does when NVML misbehaves."""

from __future__ import annotations

import math

import pytest

from tests.helpers import finite, present, run_ticks, simulated_source, states_by_key
from trayvml.core.demand import ENERGY_PERIOD_S
from trayvml.core.errors import UnavailableReason
from trayvml.core.metrics import GPU_METRICS
from trayvml.core.sample import MetricState
from trayvml.nvml.reader import RETRY_PERIOD_S
from trayvml.nvml.sim.library import SimulatedNvml
from trayvml.nvml.sim.scenarios import SCENARIOS, SimProcess
from trayvml.nvml.specs import SLOW_PERIOD_S

ALL = "gpus=h100+rtx4090+laptop"
GPM = {
    "sm_activity_percent",
    "sm_occupancy_percent",
    "tensor_activity_percent",
    "dram_bandwidth_percent",
    "fp64_activity_percent",
    "fp32_activity_percent",
    "fp16_activity_percent",
    "gpm_pcie_tx_bytes_per_s",
    "gpm_pcie_rx_bytes_per_s",
    "gpm_nvlink_tx_bytes_per_s",
    "gpm_nvlink_rx_bytes_per_s",
}
NOT_ON_RTX4090 = GPM | {
    "temperature_memory_c",
    "nvlink_tx_bytes_per_s",
    "nvlink_rx_bytes_per_s",
    "ecc_corrected_volatile_count",
    "ecc_uncorrected_volatile_count",
    "ecc_corrected_aggregate_count",
    "ecc_uncorrected_aggregate_count",
    "retired_pages_sbe_count",
    "retired_pages_dbe_count",
    "retired_pages_pending",
    "remapped_rows_correctable_count",
    "remapped_rows_uncorrectable_count",
    "remapped_rows_pending",
    "remapped_rows_failure",
}
NOT_ON_H100 = {
    "fan_speed_percent",
    "retired_pages_sbe_count",
    "retired_pages_dbe_count",
    "retired_pages_pending",
}
POWER = {"power_draw_w", "power_instant_w", "power_limit_w", "power_enforced_limit_w", "power_used_percent"}
NOT_ON_LAPTOP = NOT_ON_RTX4090 | POWER | {"energy_consumed_j", "fan_speed_percent"}


def unsupported(sample, gpu: int) -> set[str]:
    return {k for k, s in states_by_key(sample, gpu).items() if s is MetricState.NOT_SUPPORTED}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_scenario_on_every_profile(scenario: str) -> None:
    source, clock, _ = simulated_source(f"{scenario}:{ALL},lost=")
    sample = run_ticks(source, clock, 12)  # past the 10 s cadence, so every op has run twice
    assert len(sample.gpus) == 3 and sample.unavailable is None
    assert unsupported(sample, 0) == NOT_ON_H100
    assert unsupported(sample, 1) == NOT_ON_RTX4090
    assert unsupported(sample, 2) == NOT_ON_LAPTOP
    for gpu, info in zip(sample.gpus, sample.devices, strict=True):
        states = states_by_key(sample, gpu.index)
        for metric in GPU_METRICS:
            if states[metric.key] is MetricState.OK and metric.key != "xid_last":
                assert finite(gpu.value(metric.key)), metric.key
        assert 0 <= gpu.value("utilization_gpu_percent") <= 100
        assert 20 <= gpu.value("temperature_gpu_c") <= 100
        total = gpu.value("memory_used_bytes") + gpu.value("memory_free_bytes") + gpu.value("memory_reserved_bytes")
        assert total == info.memory_total_bytes
        assert gpu.value("pcie_rx_bytes_per_s") >= 0


def test_static_facts_are_read_once() -> None:
    source, clock, lib = simulated_source("training:gpus=h100")
    run_ticks(source, clock, 3)
    assert lib.calls["nvmlDeviceGetName"] == 1
    assert lib.calls["nvmlDeviceGetUtilizationRates"] == 3
    info = source.reader.devices[0]
    assert (info.nvlink_link_count, info.compute_capability, info.ecc_mode_current) == (18, "9.0", True)
    assert info.pci_bus_id == "00000000:18:00.0"


def test_slow_metrics_are_read_at_their_own_cadence() -> None:
    source, clock, lib = simulated_source("training:gpus=h100")
    run_ticks(source, clock, 20)
    assert lib.calls["nvmlDeviceGetUtilizationRates"] == 20
    # At 0, 5, 10 and 15 s; one call each, since no process runs before the job starts at 60 s.
    assert lib.calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 4
    assert lib.calls["nvmlDeviceGetEnforcedPowerLimit"] == 2  # every 10 s


def test_rates_come_from_counter_differences() -> None:
    source, clock, _ = simulated_source("training:gpus=h100")
    clock.advance_s(400)  # training, NVLink all-reduce running
    sample = run_ticks(source, clock, 2)
    gpu = sample.gpus[0]
    links = gpu.nvlink_link_tx_bytes_per_s
    assert len(links) == 18 and all(rate > 0 for rate in links)
    assert math.isclose(sum(links), gpu.value("nvlink_tx_bytes_per_s"))
    assert gpu.value("pcie_rx_bytes_per_s") > gpu.value("pcie_tx_bytes_per_s") > 0


def test_laptop_without_pcie_counters_falls_back_to_the_blocking_call_rarely() -> None:
    source, clock, lib = simulated_source("training:gpus=laptop")
    sample = run_ticks(source, clock, 25)
    assert states_by_key(sample, 0)["pcie_rx_bytes_per_s"] is MetricState.OK
    assert lib.calls["nvmlDeviceGetPcieThroughput"] == 3 * 2  # every 10 s, TX and RX


def test_processes_are_resolved_and_other_users_hidden() -> None:
    source, clock, _ = simulated_source("faults:gpus=rtx4090,lost=")
    clock.advance_s(120)
    gpu = source.sample().gpus[0]
    by_name = {p.name: p for p in gpu.processes}
    assert by_name["python"].command.startswith("python train.py") and by_name["python"].used_memory_bytes > 0
    assert by_name["Xorg"].kind == "graphics"
    hidden = [p for p in gpu.processes if p.no_permission]
    assert len(hidden) == 1 and hidden[0].name == "" and math.isnan(hidden[0].used_memory_bytes)
    assert gpu.value("process_count") == 3


def test_xid_errors_are_counted_per_gpu() -> None:
    source, clock, _ = simulated_source("faults:gpus=h100*2,lost=")
    assert source.sample().gpus[0].value("xid_error_count") == 0
    clock.advance_s(300)
    sample = source.sample()
    assert (sample.gpus[0].value("xid_error_count"), sample.gpus[0].value("xid_last")) == (1, 13)
    assert sample.gpus[1].value("xid_error_count") == 0


def test_a_lost_gpu_is_marked_and_the_others_carry_on() -> None:
    source, clock, lib = simulated_source("training:gpus=h100*3,lost=1@50")
    before = run_ticks(source, clock, 3)
    assert not any(g.lost for g in before.gpus)
    clock.advance_s(60)
    after = run_ticks(source, clock, 3)
    lost = after.gpus[1]
    assert lost.lost and set(lost.states) == {MetricState.LOST} and all(math.isnan(v) for v in lost.values)
    assert not after.gpus[0].lost and finite(after.gpus[0].value("temperature_gpu_c"))
    calls = lib.calls["nvmlDeviceGetUtilizationRates"]
    run_ticks(source, clock, 3)
    assert lib.calls["nvmlDeviceGetUtilizationRates"] == calls + 3 * 2  # the lost GPU is not asked again


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("missing", UnavailableReason.LIBRARY_NOT_FOUND),
        ("not-loaded", UnavailableReason.DRIVER_NOT_LOADED),
        ("mismatch", UnavailableReason.VERSION_MISMATCH),
        ("no-permission", UnavailableReason.NO_PERMISSION),
    ],
)
def test_nvml_unavailable_at_start_is_reported_then_retried(fault: str, reason: UnavailableReason) -> None:
    source, clock, _ = simulated_source(f"idle:nvml={fault}@25")
    sample = source.sample()
    assert sample.gpus == () and sample.unavailable is not None and sample.unavailable.reason is reason
    assert sample.unavailable.sentence.endswith(".")
    clock.advance_s(RETRY_PERIOD_S)
    assert source.sample().gpus == ()  # still failing at 10 s and 20 s
    clock.advance_s(RETRY_PERIOD_S)
    assert source.sample().gpus == ()
    clock.advance_s(RETRY_PERIOD_S)
    recovered = source.sample()
    assert len(recovered.gpus) == 4 and recovered.unavailable is None


def test_driver_going_away_mid_run_is_survived() -> None:
    import pynvml as N

    source, clock, lib = simulated_source("idle:gpus=h100")
    run_ticks(source, clock, 2)
    lib.fail("nvmlDeviceGetUtilizationRates", N.NVML_ERROR_DRIVER_NOT_LOADED)
    clock.advance_s(1)
    down = source.sample()
    assert down.gpus == () and present(down.unavailable).reason is UnavailableReason.DRIVER_NOT_LOADED
    lib.failures.clear()
    clock.advance_s(RETRY_PERIOD_S)
    assert len(source.sample().gpus) == 1


def test_old_driver_without_memory_v2_uses_v1_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="trayvml.nvml.probe")  # said at INFO: shown with -v
    source, clock, lib = simulated_source("training:gpus=h100*2")
    lib.missing_functions.add("nvmlDeviceGetMemoryInfo_v2")
    sample = run_ticks(source, clock, 3)
    states = states_by_key(sample, 0)
    assert states["memory_used_bytes"] is MetricState.OK
    assert states["memory_reserved_bytes"] is MetricState.NOT_SUPPORTED
    assert len(sample.notes) == 1 and "nvmlDeviceGetMemoryInfo_v2" in sample.notes[0]
    assert sum("nvmlDeviceGetMemoryInfo_v2" in r.message for r in caplog.records) == 1


def test_no_gpus_is_its_own_reason() -> None:
    import pynvml as N

    source, _, lib = simulated_source("idle")
    lib.fail("nvmlDeviceGetCount_v2", N.NVML_ERROR_UNKNOWN)
    sample = source.sample()
    assert sample.unavailable is not None and sample.unavailable.reason is UnavailableReason.OTHER
    assert "Unknown Error" in sample.unavailable.sentence


# ---- demand: what nobody shows is not read ----
def test_demand_reads_only_the_ops_of_demanded_metrics() -> None:
    source, clock, lib = simulated_source("training:gpus=h100*2,start=300")
    reader = source.reader
    demand = frozenset({"temperature_gpu_c"})
    reader.read()  # everything once: what a GPU lacks is known from then on
    reader.read(demand)
    lib.calls.clear()
    for _ in range(10):
        clock.advance_s(1)
        gpus = reader.read(demand)
    assert lib.calls["nvmlDeviceGetTemperatureV"] == 10 * 2
    for function in ("nvmlDeviceGetUtilizationRates", "nvmlDeviceGetFieldValues", "nvmlDeviceGetPowerUsage"):
        assert lib.calls[function] == 0, function
    assert not any("RunningProcesses" in f for f in lib.calls)
    gpu = gpus[0]
    assert gpu.state("temperature_gpu_c") is MetricState.OK and finite(gpu.value("temperature_gpu_c"))
    assert gpu.state("utilization_gpu_percent") is MetricState.NOT_READ
    assert math.isnan(gpu.value("utilization_gpu_percent")) and gpu.processes == ()
    assert gpu.state("process_count") is MetricState.NOT_READ and math.isnan(gpu.value("process_count"))
    assert gpu.state("fan_speed_percent") is MetricState.NOT_SUPPORTED  # says more than "not read"
    assert gpu.state("xid_error_count") is MetricState.OK  # events are always read
    assert MetricState.NOT_READ.label == "not read: nothing shows it"


def test_process_lists_are_read_only_when_processes_or_their_count_are_demanded() -> None:
    source, clock, lib = simulated_source("training:gpus=h100,start=300")
    reader = source.reader
    for wanted in ("processes", "process_count"):
        lib.calls.clear()
        gpu = reader.read(frozenset({"utilization_gpu_percent"}))[0]
        clock.advance_s(1)
        assert lib.calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 0 and gpu.processes == ()
        gpu = reader.read(frozenset({wanted}))[0]
        clock.advance_s(1)
        assert lib.calls["nvmlDeviceGetComputeRunningProcesses_v3"] > 0
        assert gpu.value("process_count") == 1 and len(gpu.processes) == 1


def test_derived_metrics_read_their_inputs() -> None:
    source, _, lib = simulated_source("training:gpus=h100,start=300")
    gpu = source.reader.read(frozenset({"memory_used_percent", "power_used_percent"}))[0]
    assert 0 < gpu.value("memory_used_percent") < 100 and 0 < gpu.value("power_used_percent") < 100
    assert gpu.state("memory_used_percent") is MetricState.OK and gpu.state("power_used_percent") is MetricState.OK
    assert lib.calls["nvmlDeviceGetTemperatureV"] == 0


def test_a_metric_demanded_again_is_read_on_the_next_tick_whatever_its_cadence() -> None:
    source, clock, lib = simulated_source("training:gpus=h100")
    reader = source.reader
    reader.read()  # everything, including the 10 s power limits
    clock.advance_s(1)
    reader.read(frozenset({"temperature_gpu_c"}))
    calls = lib.calls["nvmlDeviceGetEnforcedPowerLimit"]
    clock.advance_s(1)  # not due by its cadence for another 8 s
    gpu = reader.read(frozenset({"power_enforced_limit_w"}))[0]
    assert lib.calls["nvmlDeviceGetEnforcedPowerLimit"] == calls + 1
    assert gpu.state("power_enforced_limit_w") is MetricState.OK and gpu.value("power_enforced_limit_w") == 700
    assert gpu.state("temperature_gpu_c") is MetricState.NOT_READ


def test_field_values_ask_only_for_demanded_fields_and_rates_go_on() -> None:
    source, clock, lib = simulated_source("training:gpus=h100")
    reader = source.reader
    clock.advance_s(400)
    both = frozenset({"pcie_rx_bytes_per_s", "nvlink_tx_bytes_per_s"})
    reader.read(both)
    clock.advance_s(1)
    reader.read(both)
    clock.advance_s(1)
    gpu = reader.read(frozenset({"pcie_rx_bytes_per_s"}))[0]  # the NVLink fields leave the call
    assert gpu.value("pcie_rx_bytes_per_s") > 0  # its counter's last reading was kept: no gap
    assert gpu.state("nvlink_tx_bytes_per_s") is MetricState.NOT_READ
    assert all(math.isnan(rate) for rate in gpu.nvlink_link_tx_bytes_per_s)
    lib.calls.clear()
    clock.advance_s(1)
    reader.read(frozenset({"temperature_memory_c"}))
    assert lib.calls["nvmlDeviceGetFieldValues"] == 1  # the slow batch has nothing demanded: not called


def test_no_demand_reads_everything_as_before() -> None:
    source, clock, _ = simulated_source("training:gpus=h100")
    reader = source.reader
    reader.read(frozenset({"temperature_gpu_c"}))
    clock.advance_s(1)
    gpu = reader.read(None)[0]
    assert MetricState.NOT_READ not in gpu.states


def test_every_catalog_metric_is_read_one_way() -> None:
    from trayvml.nvml.specs import read_keys

    how = read_keys()
    derived = {m.key for m in GPU_METRICS if m.derived is not None}
    assert derived == {"memory_used_percent", "power_used_percent", "process_count", "temperature_below_shutdown_c"}
    assert set(how) | derived == {m.key for m in GPU_METRICS} and not set(how) & derived


def test_pynvml_has_the_private_names_binding_uses() -> None:
    """binding.py was checked against the nvidia-ml-py releases pyproject.toml allows."""
    import pynvml as N

    from trayvml.nvml import binding

    assert all(hasattr(N, name) for name in binding.PRIVATE_NAMES)
    assert hasattr(N.NVMLError, "_errcode_to_string") and hasattr(N.nvmlDeviceGetName, "__wrapped__")


def test_pcie_replays_per_second_are_the_replay_counters_rate() -> None:
    """The metric added end to end by a catalog entry, a read spec and the simulator's model."""
    source, clock, _ = simulated_source("training:gpus=h100")
    clock.advance_s(400)  # training: the PCIe link is busy and retries now and then
    first = run_ticks(source, clock, 1).gpus[0]
    clock.advance_s(6 * SLOW_PERIOD_S)
    second = source.sample().gpus[0]
    assert second.state("pcie_replays_per_s") is MetricState.OK
    replays = second.value("pcie_replay_count") - first.value("pcie_replay_count")
    assert replays > 0 and second.value("pcie_replays_per_s") == replays / (6 * SLOW_PERIOD_S)


def test_a_rate_with_one_reading_is_unknown_and_says_why() -> None:
    source, clock, _ = simulated_source("training:gpus=h100")
    clock.advance_s(400)  # PCIe and NVLink busy: a 0 would be a lie
    first = source.sample().gpus[0]
    for key in ("pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s", "nvlink_tx_bytes_per_s", "pcie_replays_per_s"):
        assert math.isnan(first.value(key)) and first.state(key) is MetricState.NOT_YET, key
    assert first.state("temperature_gpu_c") is MetricState.OK  # values read once are current at once
    clock.advance_s(1)
    second = source.sample().gpus[0]
    assert second.state("pcie_tx_bytes_per_s") is MetricState.OK and second.value("pcie_tx_bytes_per_s") > 0
    assert second.state("pcie_replays_per_s") is MetricState.NOT_YET  # its counter is read every 10 s


def test_a_counter_read_twice_within_a_second_gives_its_rate_not_zero() -> None:
    """Byte counters count on between the simulation's per-second steps, as hardware's do."""
    source, clock, _ = simulated_source("training:gpus=h100")
    clock.advance_s(400.25)
    source.sample()
    clock.advance_s(0.5)  # the snapshot's settle: both readings in the same second
    gpu = source.sample().gpus[0]
    assert gpu.value("pcie_rx_bytes_per_s") > gpu.value("pcie_tx_bytes_per_s") > 0
    assert gpu.value("nvlink_tx_bytes_per_s") > 0


def test_a_frozen_simulation_gives_the_frozen_seconds_rates_not_zero() -> None:
    source, clock, _ = simulated_source("training:gpus=h100,at=400")  # snapshot's reproducible picture
    source.sample()
    clock.advance_s(0.5)
    gpu = source.sample().gpus[0]
    assert gpu.value("pcie_rx_bytes_per_s") > gpu.value("pcie_tx_bytes_per_s") > 0
    assert gpu.value("nvlink_tx_bytes_per_s") > 0


def test_every_tick_reads_what_is_read_every_few_seconds_otherwise_on_each_sample() -> None:
    """A snapshot's or a log's samples: each value read at its sample's time, none held from an
    earlier read (the energy counter and process lists every 5 s, limits and counters every 10 s)."""
    periodic = ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetPowerManagementLimit")
    for every_tick in (False, True):  # one after the other: each Source installs its own library
        source, clock, lib = simulated_source("training:gpus=h100,start=1800", every_tick=every_tick)
        energy_j, called = [], []
        for _ in range(3):
            before = [lib.calls[f] for f in periodic]
            energy_j.append(source.sample().gpus[0].value("energy_consumed_j"))
            called.append(tuple(lib.calls[f] > n for f, n in zip(periodic, before, strict=True)))
            clock.advance_s(1)
        if every_tick:
            assert energy_j[0] < energy_j[1] < energy_j[2] and energy_j[2] == _energy_counter_mj(lib, 0) * 1e-3
            assert called == [(True, True)] * 3
        else:  # the first reading, held
            assert energy_j[0] == energy_j[1] == energy_j[2] and called == [
                (True, True),
                (False, False),
                (False, False),
            ]
        source.close()


def test_a_held_reading_says_how_long_ago_it_was_read() -> None:
    """The tray's cadences hold a value between its reads: each sample says, for such a value, how
    many seconds ago it was read; one read at the sample's tick says nothing. A snapshot's or a
    log's samples read everything at their time, and hold nothing."""
    import pynvml as N

    source, clock, lib = simulated_source("processes:gpus=h100,start=1800")
    ages = []
    for _ in range(12):
        gpu = source.sample().gpus[0]
        ages.append((gpu.age_s("power_limit_w"), gpu.age_s("energy_consumed_j"), gpu.age_s("process_count")))
        assert gpu.age_s("power_draw_w") == gpu.age_s("utilization_gpu_percent") == 0.0  # every tick
        clock.advance_s(1)
    assert [a[0] for a in ages] == [t % SLOW_PERIOD_S for t in range(12)]  # every 10 s
    assert [a[1] for a in ages] == [t % ENERGY_PERIOD_S for t in range(12)]  # every 5 s
    assert [a[2] for a in ages] == [a[1] for a in ages]  # the count goes with the lists, read with the energy
    lib.fail("nvmlDeviceGetPowerManagementLimit", N.NVML_ERROR_UNKNOWN)  # its reads fail from now on
    clock.advance_s(8)
    source.sample()  # read and failed at 20 s: its state says so, not an age
    clock.advance_s(1)
    gpu = source.sample().gpus[0]
    assert gpu.state("power_limit_w") is not MetricState.OK and gpu.age_s("power_limit_w") == 0.0
    source.close()
    snapshot, clock, _ = simulated_source("processes:gpus=h100,start=1800", every_tick=True)
    for _ in range(3):
        assert snapshot.sample().gpus[0].read_ago_s == ()
        clock.advance_s(1)


def _read_across_a_wall_clock_step(step_s: float) -> list[tuple[int, float, float, float, float]]:
    """20 s of a simulated H100 and RTX 4090 read as the tray does, the wall clock set by ``step_s``
    after 13 s: each tick's power-limit calls so far, the H100's limit's age, replay rate and
    busiest process's SM share, and the 4090's PCIe throughput (from its byte counters)."""
    source, clock, lib = simulated_source("processes:gpus=h100+rtx4090,start=1800")
    for _ in range(int(SLOW_PERIOD_S) + 3):  # the replay counter read twice: its rate known
        source.sample()
        clock.advance_s(1)
    clock.set_wall_s(step_s)
    rows = []
    for _ in range(2 * int(SLOW_PERIOD_S)):
        gpu, counted = source.sample().gpus
        busiest = max(p.sm_util_percent for p in gpu.processes)
        limits = lib.calls["nvmlDeviceGetPowerManagementLimit"]
        pcie = counted.value("pcie_tx_bytes_per_s")
        rows.append((limits, gpu.age_s("power_limit_w"), gpu.value("pcie_replays_per_s"), busiest, pcie))
        clock.advance_s(1)
    source.close()
    return rows


@pytest.mark.parametrize("step_s", [-3600.0, 3600.0])
def test_the_wall_clock_set_back_or_forward_changes_no_reading(step_s: float) -> None:
    """NTP, a user or a resume sets the wall clock: every reading is what it is without the step.
    Paced by the wall clock, the power limit went unread for the hour it was set back (held as if
    current); the replay rate, its counter stamped by the driver's wall clock, was NaN for 10 s
    (set back) or a 3610th of itself (set forward), as was the PCIe throughput from byte counters.
    The busy process's share goes on: the driver stamps its samples with a time of its own, which the
    step does not move (recordings/h100-580-clockstep.probe.txt), and the reader asks since the last
    one seen whatever the wall clock says."""
    unset = _read_across_a_wall_clock_step(0.0)
    limits, ages, replays, busiest, pcie = zip(*unset, strict=True)
    assert all(map(math.isfinite, replays)) and min(busiest) > 0 and min(pcie) > 0
    assert limits[-1] - limits[0] == 2 * 2 and max(ages) == SLOW_PERIOD_S - 1  # every 10 s, each GPU
    assert _read_across_a_wall_clock_step(step_s) == unset


def test_a_resume_after_the_wall_clock_was_set_back_reads_no_process_as_idle() -> None:
    """The wall clock set back an hour leaves the GPU's own time, which stamps the process samples,
    an hour ahead of it; a resume then sets the GPU's time to the wall clock, an hour before the
    last sample seen. Asked since that one, the driver answered NOT_FOUND until the hour came round:
    every process read as idle (0 %)."""
    source, clock, lib = simulated_source("processes:gpus=h100,start=1800")
    busiest = []
    for second in range(30):
        if second == 8:
            clock.set_wall_s(-3600.0)
        if second == 16:
            lib.resumed()
        busiest.append(max(p.sm_util_percent for p in source.sample().gpus[0].processes))
        clock.advance_s(1)
    source.close()
    assert min(busiest) > 0


def test_every_tick_asks_the_per_process_sm_share_no_sooner_than_the_driver_has_new_samples() -> None:
    """A snapshot reads its process lists twice, half a second apart: the driver samples each
    process only every second or more, so a second call then answers nothing new, which would
    read as every process idle. The share stays that of the driver's latest samples."""
    source, clock, lib = simulated_source("processes:gpus=rtx4090,start=1800", every_tick=True)
    first = {p.pid: p.sm_util_percent for p in source.sample().gpus[0].processes}
    calls = lib.calls["nvmlDeviceGetProcessUtilization"]
    clock.advance_s(0.5)
    second = {p.pid: p.sm_util_percent for p in source.sample().gpus[0].processes}
    assert max(first.values()) > 0 and second == first
    assert lib.calls["nvmlDeviceGetProcessUtilization"] == calls  # not asked again so soon
    listed = lib.processes  # a process starts before the next ask: its share is not known yet
    lib.processes = lambda gpu: [*listed(gpu), SimProcess(4_299_999, "late", "ada", "late", 2**30)]  # type: ignore[method-assign]
    clock.advance_s(0.5)
    third = {p.pid: p.sm_util_percent for p in source.sample().gpus[0].processes}
    assert math.isnan(third.pop(4_299_999)) and third == first
    clock.advance_s(3.999)  # a log's 5 s interval, its tick a hair early: asked again all the same
    source.sample()
    assert lib.calls["nvmlDeviceGetProcessUtilization"] > calls


def test_every_tick_asks_the_sm_share_as_soon_as_a_process_is_listed() -> None:
    """No process at first (nothing asked, so nothing to wait for): one that starts a second
    later has its share at once, not NaN until five seconds have passed."""
    source, clock, lib = simulated_source("processes:gpus=rtx4090,start=1800", every_tick=True)
    listed = lib.processes
    lib.processes = lambda gpu: []  # type: ignore[method-assign]
    assert source.sample().gpus[0].processes == ()
    lib.processes = listed  # type: ignore[method-assign]
    clock.advance_s(1.0)
    shares = [p.sm_util_percent for p in source.sample().gpus[0].processes]
    assert shares and not any(math.isnan(s) for s in shares) and max(shares) > 0


def _energy_counter_mj(lib: SimulatedNvml, gpu: int) -> int:
    """The simulated GPU's energy counter where it was last read."""
    import pynvml as N

    from trayvml.nvml.sim.field_models import FIELD_COLUMN

    timeline = lib.timelines[gpu]
    return int(timeline.field_row(lib.frozen_for_s())[FIELD_COLUMN[N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION]])


@pytest.mark.parametrize("field_supported", [True, False])
def test_energy_comes_with_the_field_batch_and_from_its_call_where_the_field_is_not_supported(
    field_supported: bool,
) -> None:
    import pynvml as N

    source, clock, lib = simulated_source(f"training:{ALL}")
    if not field_supported:
        lib.fail_field(N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, N.NVML_ERROR_NOT_SUPPORTED, gpu=0)
    clock.advance_s(300)
    sample = run_ticks(source, clock, 1)
    call_mj = [_energy_counter_mj(lib, k) for k in range(2)]
    for k in range(2):  # H100 and RTX 4090: the driver's counter, in joules, whichever way it came
        assert states_by_key(sample, k)["energy_consumed_j"] is MetricState.OK
        assert sample.gpus[k].value("energy_consumed_j") == call_mj[k] * 1e-3
    # The laptop has none: not supported either way, never 0.
    assert states_by_key(sample, 2)["energy_consumed_j"] is MetricState.NOT_SUPPORTED
    assert math.isnan(sample.gpus[2].value("energy_consumed_j"))
    calls = lib.calls["nvmlDeviceGetTotalEnergyConsumption"]
    clock.advance_s(1)
    sample = run_ticks(source, clock, 4)
    # Read with the process lists, every 5 s (it costs an H200's driver 4 ms): the reading of 4 s ago
    # until then, and no call of its own in between where the field is not supported.
    assert sample.gpus[0].value("energy_consumed_j") == call_mj[0] * 1e-3
    assert lib.calls["nvmlDeviceGetTotalEnergyConsumption"] == calls
    clock.advance_s(1)
    sample = source.sample()
    assert sample.gpus[0].value("energy_consumed_j") == _energy_counter_mj(lib, 0) * 1e-3
    assert sample.gpus[0].value("energy_consumed_j") > call_mj[0] * 1e-3
    assert lib.calls["nvmlDeviceGetTotalEnergyConsumption"] - calls == (0 if field_supported else 1)


def test_milliwatts_and_millijoules_read_as_watts_and_joules_exactly() -> None:
    """73963 mW times 0.001 was 73.96300000000001 W (in snapshot --json, serve, the CSV); the
    driver's integer thousandths read as the decimal they are."""
    from trayvml.core.units import MILLI
    from trayvml.nvml.specs import CALLS, FIELDS, STATIC

    keys = {key for read in CALLS if read.scale == MILLI for key in read.keys}
    keys |= {read.key for read in FIELDS if read.scale == MILLI}
    facts = {name for read in STATIC if read.scale == MILLI for name in read.fields}
    assert {"power_draw_w", "energy_consumed_j"} <= keys and "power_limit_default_w" in facts
    source, clock, _ = simulated_source("training:gpus=h100+rtx4090,start=1800")
    read = 0
    for _ in range(12):
        sample = source.sample()
        clock.advance_s(1.0)
        for gpu in sample.gpus:
            for key in keys:
                value = gpu.value(key)
                if value == value:
                    read += 1
                    assert value == round(value, 3), (key, value)
    assert read > 30
    for device in sample.devices:
        for name in facts:
            value = getattr(device, name)
            assert value != value or value == round(value, 3), (name, value)
