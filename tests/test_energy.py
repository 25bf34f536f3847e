"""Energy per GPU (driver counter, or integrated power), over a range, and per process and job."""

from __future__ import annotations

import math

from tests.helpers import simulated_source
from trayvml.core.metrics import GPU_INDEX, GPU_METRICS
from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, ProcessSample, Sample
from trayvml.energy import DRIVER, INTEGRATED, EnergyMeter, format_energy, job_energy_text
from trayvml.report import json_snapshot

NAN = math.nan


def gpu_sample(t_s: float, power_w: float = NAN, counter_j: float = NAN, processes=(), asleep=False) -> Sample:  # type: ignore[no-untyped-def]
    values = [NAN] * len(GPU_METRICS)
    states = [MetricState.NOT_SUPPORTED] * len(GPU_METRICS)
    for key, value in (("power_draw_w", power_w), ("energy_consumed_j", counter_j)):
        if not math.isnan(value):
            values[GPU_INDEX[key]], states[GPU_INDEX[key]] = value, MetricState.OK
    states[GPU_INDEX["process_count"]] = MetricState.OK
    gpu = GpuSample(0, tuple(values), tuple(states), tuple(processes), asleep=asleep)
    return Sample(t_s, (gpu,), (DeviceInfo(0, "GPU", "GPU-x"),), None, None)


def proc(pid: int, memory: float, container: str = "") -> ProcessSample:
    return ProcessSample(0, pid, "compute", memory, container=container)


def test_the_driver_counter_is_used_where_it_answers() -> None:
    meter = EnergyMeter()
    for k in range(11):  # 10 s at a counter rising 360 J/s, whatever the power reading says
        meter.update(gpu_sample(k, power_w=50, counter_j=1000 + 360 * k))
    assert meter.method(0) == DRIVER
    assert math.isclose(meter.since_start_wh(0), 1.0)


def test_power_is_integrated_without_a_counter_and_a_sleeping_gpu_counts_0_w() -> None:
    meter = EnergyMeter()
    for k in range(3601):  # an hour at 100 W
        meter.update(gpu_sample(k, power_w=100))
    assert meter.method(0) == INTEGRATED
    assert math.isclose(meter.since_start_wh(0), 100.0)
    for k in range(3601, 7201):  # an hour asleep
        meter.update(gpu_sample(k, asleep=True))
    assert math.isclose(meter.since_start_wh(0), 100.0 + 100 / 2 / 3600)  # the one second falling to 0 W
    assert math.isclose(meter.between_wh(0, 0, 1800), 50.0)
    assert meter.between_wh(0, 4000, 7000) == 0.0


def test_energy_is_shared_by_memory_and_summed_per_container() -> None:
    meter = EnergyMeter()
    procs = (proc(1, 3e9, "abc"), proc(2, 1e9, "abc"), proc(3, 4e9))
    for k in range(3601):
        meter.update(gpu_sample(k, power_w=80, processes=procs))
    assert math.isclose(meter.process_wh[(0, 1)], 30.0)
    assert math.isclose(meter.process_wh[(0, 3)], 40.0)
    assert math.isclose(meter.job_wh[(0, "container abc")], 40.0)
    assert meter.unattributed_wh(0) == 0.0


def test_ticks_without_process_lists_stay_unattributed() -> None:
    meter = EnergyMeter()
    for k in range(3601):
        sample = gpu_sample(k, power_w=36, processes=(proc(1, 1e9),))
        gpu = sample.gpus[0]
        states = list(gpu.states)
        states[GPU_INDEX["process_count"]] = MetricState.NOT_READ
        meter.update(Sample(k, (GpuSample(0, gpu.values, tuple(states), ()),), sample.devices, None, None))
    assert meter.process_wh == {} and math.isclose(meter.unattributed_wh(0), 36.0)


def test_job_finished_text_and_formats() -> None:
    meter = EnergyMeter()
    for k in range(0, 3 * 3600 + 12 * 60 + 1, 5):
        meter.update(gpu_sample(k, power_w=753.0))
    end_s = 3 * 3600 + 12 * 60
    assert job_energy_text(meter, 0, end_s, end_s) == "2.41 kWh on GPU 0 over 3 h 12 min."
    assert (format_energy(312.4), format_energy(4.21), format_energy(NAN)) == ("312 Wh", "4.2 Wh", "–")


def test_snapshot_json_carries_energy_per_gpu_and_process() -> None:
    source, clock, _ = simulated_source("training:gpus=h100+laptop,start=1800")
    meter = EnergyMeter()
    for _ in range(11):
        sample = source.sample()
        meter.update(sample)
        clock.advance_s(1)
    gpus = json_snapshot(sample, meter)["gpus"]
    h100, laptop = gpus[0], gpus[1]
    assert h100["energy"]["method"] == DRIVER and 1.0 < h100["energy"]["since_start_wh"] < 2.5  # ~650 W, 10 s
    train = next(p for p in h100["processes"] if p["name"] == "python")
    assert train["job"] == "container 3f2a9c1b7e4d" and train["energy_wh"] > 0
    assert laptop["energy"]["since_start_wh"] is None  # this laptop reports no power: unknown, not 0


def test_the_processes_table_shows_each_process_and_its_job_energy() -> None:
    from trayvml.ui.processes import HEADERS, _cells

    meter = EnergyMeter()
    procs = (proc(1, 3e9, "abc"), proc(2, 1e9, "abc"))
    for k in range(3601):
        meter.update(gpu_sample(k, power_w=40, processes=procs))
    # The host's figures (CPU, RAM, runtime) come from branch window: none here ("–").
    cells = dict(zip(HEADERS, (text for text, _ in _cells(procs[1], "–", 3600.0, meter)), strict=True))
    assert (cells["Energy"], cells["Job energy"]) == ("10.0 Wh", "40.0 Wh")
    no_meter = dict(zip(HEADERS, (t for t, _ in _cells(procs[1], "–", 3600.0)), strict=True))
    assert no_meter["Energy"] == "–"
