"""What real drivers do that a naive reader gets wrong, each reproduced by the simulator."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np
import pynvml as N
import pytest

from tests.helpers import run_ticks, simulated_source
from trayvml.commands.report import json_snapshot
from trayvml.core.sample import MetricState
from trayvml.nvml.schedule import FieldBatch, _Field
from trayvml.nvml.sim.field_models import FIELD_COLUMN, memory_temperature_c
from trayvml.nvml.specs import FIELDS, PCIE_COUNTER_MODULUS, PCIE_THROUGHPUT_PERIOD_S, pcie_max_bytes_per_s

_PCIE_TX = next(f for f in FIELDS if f.field_id == N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES)


def _pcie_batch(generation: int, width: int) -> FieldBatch:
    return FieldBatch([_Field(_PCIE_TX.field_id, 0, _PCIE_TX)], pcie_max_bytes_per_s(generation, width))


def test_pcie_byte_counters_wrap_at_32_bits_in_the_simulator() -> None:
    source, clock, lib = simulated_source("training:gpus=h100,start=1800")
    run_ticks(source, clock, 3)
    timeline = lib.timelines[0]
    counter = timeline.fields[:, FIELD_COLUMN[N.NVML_FI_DEV_PCIE_COUNT_RX_BYTES]]
    assert counter.max() < PCIE_COUNTER_MODULUS
    assert (np.diff(counter.astype(np.int64)) < 0).sum() > 100  # it wraps, often


def test_a_wrapped_pcie_counter_gives_the_rate_not_a_gap() -> None:
    """Training at 6 % of an RTX 4090's Gen4 link: 1.9 GB/s, a wrap every two seconds or so."""
    source, clock, lib = simulated_source("training:gpus=rtx4090,start=1800")
    source.sample()
    for _ in range(12):
        clock.advance_s(1.0)
        gpu = source.sample().gpus[0]
        timeline = lib.timelines[0]
        # The counters count on within a second, so a second between two reads spans the end of
        # one of the grid's seconds and the start of the next: the rate lies between theirs.
        seconds_rx = np.asarray(timeline.pcie_rx_kb_per_s[timeline.i - 1 : timeline.i + 1], dtype=float) * 1000
        assert seconds_rx.max() < PCIE_COUNTER_MODULUS  # at most one wrap a tick: the difference is exact
        shown = gpu.value("pcie_rx_bytes_per_s")
        assert seconds_rx.min() * 0.999 - 1000 <= shown <= seconds_rx.max() * 1.001 + 1000, (shown, seconds_rx)
        # Gen4 x16 carries up to 32 GB/s: in a second the counter could have wrapped 7 times.
        assert "pcie_rx_bytes_per_s" in gpu.lower_bounds


def test_more_than_one_wrap_a_tick_is_shown_as_a_lower_bound() -> None:
    """An H100 at 6 % of Gen5 moves about 4-5 GB a second: more than 2**32 bytes at times (read
    from the counters where GPM does not answer; where it does, it gives the rate: test_gpm.py)."""
    source, clock, lib = simulated_source("training:gpus=h100,start=1800")
    lib.missing_functions.add("nvmlGpmQueryDeviceSupport")
    sample = run_ticks(source, clock, 12)
    gpu = sample.gpus[0]
    timeline = lib.timelines[0]
    # The second between the last two reads spans the end of one grid second and the start of the next.
    seconds_rx = np.asarray(timeline.pcie_rx_kb_per_s[timeline.i - 1 : timeline.i + 1], dtype=float) * 1000
    low, high = seconds_rx.min() * 0.999 - 1000, seconds_rx.max() * 1.001 + 1000
    shown = gpu.value("pcie_rx_bytes_per_s")
    # What was shown is the true rate less whole wraps the counter hid: a lower bound, and said so.
    assert any(low <= shown + k * PCIE_COUNTER_MODULUS <= high for k in range(4)), (shown, seconds_rx)
    assert shown <= high and "pcie_rx_bytes_per_s" in gpu.lower_bounds
    snapshot = json_snapshot(sample)
    assert "pcie_rx_bytes_per_s" in snapshot["gpus"][0]["lower_bounds"]


def test_a_wrap_on_a_slow_link_is_exact_and_uses_the_values_timestamps() -> None:
    batch = _pcie_batch(1, 1)  # 312.5 MB/s at most: 0.1 s cannot hide a whole wrap
    first, not_yet = batch.rates([PCIE_COUNTER_MODULUS - 100.0], 50.0, [1_000_000])
    assert math.isnan(first[0]) and not_yet[0]  # one reading: not measured yet
    # The reader's clock says 10 s passed (a late tick); the values' own stamps say 0.1 s.
    rate, not_yet = batch.rates([50.0], 60.0, [1_100_000])
    assert math.isclose(rate[0], 150 / 0.1) and not batch.lower_bounds[0] and not not_yet[0]


def test_a_fast_link_makes_the_rate_a_lower_bound() -> None:
    batch = _pcie_batch(5, 16)  # 64 GB/s: 2**32 bytes in 67 ms
    batch.rates([10.0], 0.0, [1_000_000])
    rate, _ = batch.rates([20.0], 0.0, [1_100_000])
    assert math.isclose(rate[0], 100.0) and batch.lower_bounds[0]


def test_a_reading_served_again_gives_no_rate() -> None:
    """The same timestamp twice is the same reading: not a rate of 0."""
    batch = _pcie_batch(1, 1)
    batch.rates([10.0], 0.0, [1_000_000])
    rates, _ = batch.rates([10.0], 1.0, [1_000_000])
    assert math.isnan(rates[0])


def test_an_unknown_performance_state_is_no_data_not_p32() -> None:
    source, clock, lib = simulated_source("training:gpus=rtx4090,start=1800")
    assert source.sample().gpus[0].value("performance_state") == 0  # busy: P0
    lib.answer_value("pstate", N.NVML_PSTATE_UNKNOWN)
    clock.advance_s(1.0)
    sample = source.sample()
    gpu = sample.gpus[0]
    assert math.isnan(gpu.value("performance_state")) and gpu.state("performance_state") is MetricState.NO_DATA
    assert json_snapshot(sample)["gpus"][0]["metrics"]["performance_state"] is None
    lib.answered_values.clear()  # the driver can tell again
    clock.advance_s(1.0)
    gpu = source.sample().gpus[0]
    assert gpu.value("performance_state") == 0 and gpu.state("performance_state") is MetricState.OK


def test_a_field_id_the_driver_does_not_know_falls_back_to_the_throughput_call() -> None:
    """On R550 the PCIe byte counters answer INVALID_ARGUMENT per value: use the 20 ms call."""
    source, clock, lib = simulated_source("training:gpus=rtx4090,start=1800,driver=550")
    sample = run_ticks(source, clock, 3)
    gpu = sample.gpus[0]
    assert gpu.state("pcie_rx_bytes_per_s") is MetricState.OK and gpu.value("pcie_rx_bytes_per_s") > 0
    assert lib.calls["nvmlDeviceGetPcieThroughput"] == 2  # once each way, then every 10 s
    assert sample.system is not None and sample.system.driver_version.startswith("550.")


def test_a_newer_driver_answers_the_counters() -> None:
    source, clock, lib = simulated_source("training:gpus=rtx4090,start=1800")
    run_ticks(source, clock, 3)
    assert lib.calls["nvmlDeviceGetPcieThroughput"] == 0


def test_field_values_stay_right_when_the_driver_adds_into_the_buffer() -> None:
    source, clock, lib = simulated_source("training:gpus=h100,start=1800")
    lib.fields_add_into_buffer = True
    for _ in range(4):
        gpu = source.sample().gpus[0]
        timeline = lib.timelines[0]
        assert math.isclose(gpu.value("power_instant_w"), timeline.power_mw[timeline.i] / 1000)
        assert gpu.value("temperature_memory_c") == memory_temperature_c(timeline.temperature[timeline.i])
        assert gpu.value("ecc_uncorrected_volatile_count") == 0
        clock.advance_s(1.0)


def test_a_memory_temperature_labelled_double_but_holding_an_integer_is_read_as_the_integer() -> None:
    source, _clock, lib = simulated_source("training:gpus=h100,start=1800")
    lib.field_types[N.NVML_FI_DEV_MEMORY_TEMP] = N.NVML_VALUE_TYPE_DOUBLE  # as r545 answers it
    gpu = source.sample().gpus[0]
    timeline = lib.timelines[0]
    assert gpu.value("temperature_memory_c") == memory_temperature_c(timeline.temperature[timeline.i])
    assert gpu.state("temperature_memory_c") is MetricState.OK


def test_an_implausible_memory_temperature_is_unknown_not_a_huge_number() -> None:
    source, clock, lib = simulated_source("training:gpus=h100,start=1800")
    lib.field_raw[N.NVML_FI_DEV_MEMORY_TEMP] = 0xFFFF_FFFF_FFFF_FF00
    gpu = source.sample().gpus[0]
    assert math.isnan(gpu.value("temperature_memory_c"))
    assert gpu.state("temperature_memory_c") is MetricState.NO_DATA
    del lib.field_raw[N.NVML_FI_DEV_MEMORY_TEMP]  # the next reading is plausible again
    clock.advance_s(1.0)
    gpu = source.sample().gpus[0]
    assert gpu.state("temperature_memory_c") is MetricState.OK and 20 < gpu.value("temperature_memory_c") < 100


def test_a_pcie_throughput_beyond_the_link_is_not_shown(caplog: pytest.LogCaptureFixture) -> None:
    source, clock, lib = simulated_source("training:gpus=laptop,start=1800")  # no byte counters
    gpu = source.sample().gpus[0]
    assert gpu.state("pcie_rx_bytes_per_s") is MetricState.OK and 0 < gpu.value("pcie_rx_bytes_per_s") < 16e9
    lib.pcie_throughput_scale = 1000  # the driver series that answered 1000 times too much
    with caplog.at_level(logging.WARNING):
        clock.advance_s(PCIE_THROUGHPUT_PERIOD_S)
        gpu = source.sample().gpus[0]
    assert math.isnan(gpu.value("pcie_rx_bytes_per_s")) and gpu.state("pcie_rx_bytes_per_s") is MetricState.NO_DATA
    assert "more than its PCIe link can carry" in caplog.text


def test_the_gpu_temperature_comes_from_the_versioned_call() -> None:
    source, clock, lib = simulated_source("training:gpus=h100,start=1800")
    gpu = run_ticks(source, clock, 2).gpus[0]
    timeline = lib.timelines[0]
    assert gpu.value("temperature_gpu_c") == timeline.temperature[timeline.i]
    assert lib.calls["nvmlDeviceGetTemperatureV"] == 2 and lib.calls["nvmlDeviceGetTemperature"] == 0


def test_a_driver_without_the_versioned_temperature_call_uses_the_old_one() -> None:
    source, clock, lib = simulated_source("training:gpus=h100,start=1800")
    lib.missing_functions.add("nvmlDeviceGetTemperatureV")
    gpu = run_ticks(source, clock, 2).gpus[0]
    timeline = lib.timelines[0]
    assert gpu.value("temperature_gpu_c") == timeline.temperature[timeline.i]
    assert gpu.state("temperature_gpu_c") is MetricState.OK
    assert lib.calls["nvmlDeviceGetTemperature"] == 2


def test_a_job_that_ends_leaves_the_process_list_at_the_tick_its_memory_is_gone() -> None:
    # The lists are read every 5 s (a read costs the driver milliseconds). On a real H200 a process
    # that had ended was still listed with its 2698 MiB 0.4 s after nvidia-smi stopped listing it,
    # the GPU's memory in use already 0 (tests/recordings/h200-580-ending): memory read each tick
    # that no longer holds what the lists say is a list to read again at once.
    from trayvml.core.demand import EVERYTHING

    source, clock, lib = simulated_source("training:gpus=h100,start=6592")  # the job ends at 6600 s
    gpu = source.sample(EVERYTHING).gpus[0]
    assert gpu.processes and gpu.value("memory_used_bytes") > 10 * 2**30
    lists = ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3")
    lists_read = [lib.calls[f] for f in lists]
    seen = []
    for _ in range(14):
        clock.advance_s(1.0)
        gpu = source.sample(EVERYTHING).gpus[0]
        seen.append((gpu.value("memory_used_bytes") < 2**30, bool(gpu.processes)))
    assert (True, True) not in seen  # never a freed GPU with the job still listed
    assert (True, False) in seen and (False, True) in seen
    # Read at 5 s, again when the memory went (8 s, the cadence counting from there), and at 13 s:
    # both lists (the graphics list, asked after the compute list had been read again, was not).
    assert [lib.calls[f] - n for f, n in zip(lists, lists_read, strict=True)] == [3, 3]


def test_lists_naming_more_than_the_memory_in_use_are_read_early_only_when_that_memory_fell() -> None:
    # A driver whose lists always name more than its memory in use (a quirk not seen yet, but
    # unified-memory GPUs count otherwise) must not have them read each tick: only a fall counts.
    from trayvml.core.metrics import GPU_INDEX
    from trayvml.core.sample import DeviceInfo, ProcessSample
    from trayvml.nvml.schedule import GpuState, _lists_outlived

    g = GpuState(0, None, DeviceInfo(0, "GPU", "GPU-x"))
    g.processes = (ProcessSample(0, 1, "compute", 4 * 2**30),)
    g.used_when_listed = g.values[GPU_INDEX["memory_used_bytes"]] = 1 * 2**30
    assert not _lists_outlived(g)  # as when the lists were read
    g.values[GPU_INDEX["memory_used_bytes"]] = 2**29
    assert _lists_outlived(g)  # half a GiB let go since


HOUR_S = 3600.0


def _stamped(probe: dict) -> tuple[str, int, int, bool]:
    """A probe's phase; how many hours ahead of the wall clock the driver stamped its field values
    and its process utilization samples; whether asked since the last sample seen, it answered."""
    wall_s = probe["wall_s"]
    fields_h = round((max(f["stamp_us"] for f in probe["fields"].values()) / 1e6 - wall_s) / HOUR_S)
    samples_h = round((max(s["stamp_us"] for s in probe["util_latest"]) / 1e6 - wall_s) / HOUR_S)
    return probe["phase"], fields_h, samples_h, bool(probe["util_since"]) and "error" not in probe["util_since"]


def test_the_simulated_driver_stamps_as_a_real_h100_did_with_the_wall_clock_set_back() -> None:
    """The answer key is a real H100's (580.159.04), probed by scripts/real_gpu_clockstep.py with a
    process busy and the wall clock set back an hour for 6 s (recordings/h100-580-clockstep.probe.txt):
    field values were stamped with the wall clock as it was, process utilization samples with the
    driver's own time, an hour ahead of it, and asked since the last one seen they went on answering.
    The simulator stamped those samples with the wall clock too, and so answered NOT_FOUND (every
    process idle) until the clock caught up; the reader was made to work around that."""
    lines = (Path(__file__).parent / "recordings" / "h100-580-clockstep.probe.txt").read_text().splitlines()
    real = [_stamped(json.loads(line)) for line in lines if line.startswith("{") and '"fields"' in line]
    assert len(real) == 12 and {phase for phase, *_ in real} == {"before", "back", "after"}
    source, clock, _ = simulated_source("processes:gpus=h100,start=1800")
    source.sample()  # NVML open beneath pynvml
    handle = N.nvmlDeviceGetHandleByIndex(0)
    seen_us, simulated = 0, []
    for phase, step_s in (("before", 0.0), ("back", -HOUR_S), ("after", HOUR_S)):
        clock.set_wall_s(step_s)
        for _ in range(3):
            clock.advance_s(1)
            fields = N.nvmlDeviceGetFieldValues(
                handle, [N.NVML_FI_DEV_POWER_INSTANT, N.NVML_FI_DEV_PCIE_REPLAY_COUNTER]
            )
            try:
                since = [{"stamp_us": s.timeStamp} for s in N.nvmlDeviceGetProcessUtilization(handle, seen_us)]
            except N.NVMLError_NotFound:
                since = []
            latest = [{"stamp_us": s.timeStamp} for s in N.nvmlDeviceGetProcessUtilization(handle, 0)]
            seen_us = max(s["stamp_us"] for s in since + latest)
            probe = {"phase": phase, "wall_s": clock.now_s(), "util_since": since, "util_latest": latest}
            simulated.append(_stamped({**probe, "fields": {f.fieldId: {"stamp_us": f.timestamp} for f in fields}}))
    source.close()
    assert (
        sorted(set(simulated))
        == sorted(set(real))
        == [
            ("after", 0, 0, True),
            ("back", 0, 1, True),
            ("before", 0, 0, True),
        ]
    )


def test_nvlink_links_add_up_exactly_and_a_total_beyond_floats_is_infinite_not_an_error() -> None:
    from trayvml.nvml.schedule import _total

    assert _total([0.1] * 10) == 1.0  # in order, a plain sum gives 0.9999999999999999
    assert _total([1e308, 1e308]) == math.inf  # a driver's nonsense: fsum alone raises OverflowError
    assert math.isnan(_total([math.inf, -math.inf]))  # and ValueError here


def test_the_simulated_memory_temperature_reads_as_the_real_drivers_did() -> None:
    """An answer key not our own: each real recording's GPU and memory temperatures (busy, the
    HBM cooler than the die; idle, about the same). The simulator had the HBM 6 °C warmer, and a
    hot GPU's memory past its shutdown line."""
    pairs = []
    for path in sorted((Path(__file__).parent / "recordings").glob("*.jsonl")):
        if not path.name.startswith(("h100-", "h200-")):  # (a simulated one: our own answer)
            continue
        lines = path.read_text().splitlines()
        fields = json.loads(lines[0]).get("fields", [])
        if "temperature.memory" not in fields:
            continue
        die, hbm = fields.index("temperature.gpu"), fields.index("temperature.memory")
        for line in lines[1:]:
            tick = json.loads(line)
            for row in tick.get("trayvml", []):
                if row[die].isdigit() and row[hbm].isdigit():
                    pairs.append((int(row[die]), int(row[hbm])))
    assert len({die for die, _ in pairs}) >= 5  # idle and busy H100s and H200s
    # The two models part by up to 13 °C at one die temperature (an H100's HBM 62 °C at 60, an
    # H200's 49): within 9 of each, where +6 was 17 off.
    assert max(abs(memory_temperature_c(np.array(die)) - hbm) for die, hbm in pairs) <= 9
    busy = [hbm - die for die, hbm in pairs if die >= 55]
    assert sum(busy) / len(busy) < 0 and memory_temperature_c(np.array(60.0)) < 60  # cooler under load
