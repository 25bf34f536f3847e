"""Energy per GPU (driver counter, or integrated power), over a range, and per process and job."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers import simulated_source
from trayvml.cli import main
from trayvml.commands.report import json_snapshot
from trayvml.core.metrics import GPU_INDEX, GPU_METRICS
from trayvml.core.sample import Attribution, DeviceInfo, GpuSample, MetricState, ProcessSample, Sample
from trayvml.monitor.energy import DRIVER, INTEGRATED, EnergyMeter, format_energy, job_energy_text, job_key

NAN = math.nan


def gpu_sample(t_s: float, power_w: float = NAN, counter_j: float = NAN, processes=(), asleep=False) -> Sample:
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
    unknown = EnergyMeter()
    for k in range(10):  # no power sensor, then asleep: still unknown, not 0 Wh
        unknown.update(gpu_sample(k, asleep=k >= 5))
    assert math.isnan(unknown.since_start_wh(0))


def test_power_read_each_minute_is_integrated_and_a_longer_gap_is_not() -> None:
    """At the longest interval (60 s) readings come a few ms either side of a minute apart: each
    gap is integrated (half were dropped at a 60 s limit); two minutes unread are not."""
    meter = EnergyMeter()
    for t_s in (0.0, 60.004, 119.998, 180.02):  # three minutes at 120 W: 6 Wh
        meter.update(gpu_sample(t_s, power_w=120))
    assert math.isclose(meter.since_start_wh(0), 120 * 180.02 / 3600)
    meter.update(gpu_sample(300.02, power_w=120))
    assert math.isclose(meter.since_start_wh(0), 120 * 180.02 / 3600)


def test_a_counter_not_read_for_a_while_does_not_count_that_while_twice() -> None:
    # The tray reads the counter only while its window is open: the idle tray does not ask for it.
    meter = EnergyMeter()
    for k in range(11):  # read for 10 s at 360 J/s: 1 Wh
        meter.update(gpu_sample(k, power_w=360, counter_j=1000 + 360 * k))
    for k in range(11, 3611):  # an hour unread, at 360 W: 360 Wh integrated from the power
        meter.update(gpu_sample(k, power_w=360))
    for k in range(3611, 3622):  # read again: 1 s integrated, then 10 s from the counter
        meter.update(gpu_sample(k, power_w=360, counter_j=1000 + 360 * k))
    assert meter.since_start_wh(0) == pytest.approx(1.0 + 360.0 + 0.1 + 1.0)  # not the hour twice


def test_energy_is_shared_by_memory_and_summed_per_container() -> None:
    meter = EnergyMeter()
    procs = (proc(1, 3e9, "abc"), proc(2, 1e9, "abc"), proc(3, 4e9))
    for k in range(3601):
        meter.update(gpu_sample(k, power_w=80, processes=procs))
    assert math.isclose(meter.process_energy_wh(procs[0]), 30.0)
    assert math.isclose(meter.process_energy_wh(procs[2]), 40.0)
    assert math.isclose(meter.job_energy_wh(procs[0]), 40.0)
    assert meter.unattributed_wh(0) == 0.0


def test_a_job_is_the_attributions_job_notebook_slurm_or_process_tree() -> None:
    """The notebook's two kernels' processes, a Slurm job's ranks and one process tree each add
    up as one job, though none runs in a container (the old rule made each PID its own job)."""
    notebook = Attribution(notebook="exp/train.ipynb", job="exp/train.ipynb", job_kind="notebook", root_pid=9)
    slurm = Attribution(slurm_job="4242", job="4242", job_kind="slurm", root_pid=20)
    procs = (
        ProcessSample(0, 10, "compute", 1e9, attribution=notebook),
        ProcessSample(0, 11, "compute", 1e9, attribution=notebook),
        ProcessSample(0, 20, "compute", 1e9, attribution=slurm),
        ProcessSample(0, 21, "compute", 1e9, attribution=slurm),
    )
    meter = EnergyMeter()
    for k in range(3601):
        meter.update(gpu_sample(k, power_w=40, processes=procs))
    assert job_key(procs[0]) == "notebook exp/train.ipynb" and job_key(procs[2]) == "Slurm job 4242"
    assert math.isclose(meter.job_energy_wh(procs[1]), 20.0)
    assert math.isclose(meter.job_energy_wh(procs[3]), 20.0)
    # Nothing read of its job (another user's): the process is its own job, as before.
    assert job_key(proc(5, 1e9)) == "pid 5"


def test_ticks_without_process_lists_ever_read_stay_unattributed() -> None:
    meter = EnergyMeter()
    for k in range(3601):
        sample = gpu_sample(k, power_w=36, processes=(proc(1, 1e9),))
        gpu = sample.gpus[0]
        states = list(gpu.states)
        states[GPU_INDEX["process_count"]] = MetricState.NOT_READ
        meter.update(Sample(k, (GpuSample(0, gpu.values, tuple(states), ()),), sample.devices, None, None))
    assert meter.process_wh == {} and math.isclose(meter.unattributed_wh(0), 36.0)


def test_the_idle_trays_list_readings_share_the_energy_between_them() -> None:
    # The idle tray reads the process lists one tick in STORE_PROCESSES_S (for the history on
    # disk), as here; the energy of the ticks between used to go unattributed, so a job's energy
    # read 1/10 of the GPU's when the window opened. Shared at each reading, it is the GPU's, but
    # for the ticks since the last reading.
    from trayvml.core.demand import HISTORY, PROCESSES, STORE_PROCESSES_S

    source, clock, _ = simulated_source("training:gpus=h100,start=1800")
    meter = EnergyMeter()
    lists_s = math.nan
    for k in range(121):
        sample = source.sample(HISTORY | ({PROCESSES} if k % STORE_PROCESSES_S == 0 else set()))
        meter.update(sample)
        if sample.gpus[0].state("process_count") is MetricState.OK:
            (job,), lists_s = sample.gpus[0].processes, sample.timestamp_s
        clock.advance_s(1.0)
    assert lists_s == sample.timestamp_s  # the last tick read the lists: nothing waits to be shared
    assert meter.process_energy_wh(job) == pytest.approx(meter.since_start_wh(0))
    assert meter.process_energy_wh(job) > 0 and meter.unattributed_wh(0) == pytest.approx(0.0, abs=1e-9)


def listed(t_s: float, processes: tuple[ProcessSample, ...] | None, power_w: float = 360) -> Sample:
    """A GPU at ``power_w`` whose process lists were read (``processes``) or not (None)."""
    sample = gpu_sample(t_s, power_w=power_w, processes=processes or ())
    if processes is not None:
        return sample
    gpu = sample.gpus[0]
    states = list(gpu.states)
    states[GPU_INDEX["process_count"]] = MetricState.NOT_READ
    return replace(sample, gpus=(replace(gpu, states=tuple(states)),))


def test_between_readings_each_process_gets_the_mean_of_its_shares_at_both() -> None:
    # 0.1 Wh a second at 360 W, shared by memory. A and B, listed at the readings at 0, 10 and 20 s,
    # share those 20 s equally. At 30 s B is gone and C listed: of the 9 s between, A gets the mean
    # of its shares at the two readings (half and half: 0.45 Wh), B and C the mean of half and
    # nothing (0.225 Wh each), having each run some part of them (when, no reading tells); the
    # second of each reading goes by that reading's shares alone.
    a, b, c = proc(1, 1e9), proc(2, 1e9), proc(3, 1e9)
    meter = EnergyMeter()
    for k in range(31):
        lists = {0: (a, b), 10: (a, b), 20: (a, b), 30: (a, c)}.get(k)
        meter.update(listed(k, lists))
    assert meter.process_energy_wh(a) == pytest.approx(1.0 + 0.45 + 0.05)
    assert meter.process_energy_wh(b) == pytest.approx(1.0 + 0.225)
    assert meter.process_energy_wh(c) == pytest.approx(0.225 + 0.05)
    assert meter.unattributed_wh(0) == pytest.approx(0.0, abs=1e-12)
    meter.update(listed(31, (a, c)))
    assert meter.process_energy_wh(c) == pytest.approx(0.325)


def test_between_readings_an_idle_process_does_not_take_a_busy_ones_part() -> None:
    # By SM share: busy B (95 %) ends between two readings where idle A (0 %) stays: B gets half of
    # the 9 s between (its whole share at the first reading, none at the second), not A all of it.
    a, b = (
        ProcessSample(0, 1, "compute", 1e9, sm_util_percent=0.0),
        ProcessSample(0, 2, "compute", 1e9, sm_util_percent=95.0),
    )
    meter = EnergyMeter()
    for k in range(11):
        meter.update(listed(k, {0: (a, b), 10: (a,)}.get(k)))
    assert meter.process_energy_wh(b) == pytest.approx(0.45)
    assert meter.process_energy_wh(a) == pytest.approx(0.45 + 0.1)  # and its own second by memory


def test_the_wall_clock_set_moves_the_last_list_reading_with_it() -> None:
    # Set on by two minutes after a reading, the energy waiting to be shared is still shared at the
    # next one; set back an hour, lists no longer read leave it unattributed after SHARED_LATER_S,
    # not after the hour as well.
    from trayvml.monitor.energy import SHARED_LATER_S

    a = proc(1, 1e9)
    ahead = EnergyMeter()
    for k in range(5):
        ahead.update(listed(k, (a,) if k == 0 else None))
    ahead.clock_set(120.0, 125.0)
    for t_s in range(125, 136):
        ahead.update(listed(t_s, (a,) if t_s == 135 else None))
    assert ahead.unattributed_wh(0) == pytest.approx(0.0, abs=1e-12)
    assert ahead.process_energy_wh(a) == pytest.approx(ahead.since_start_wh(0))
    back = EnergyMeter()
    for k in range(5):
        back.update(listed(k, (a,) if k == 0 else None))
    back.clock_set(-3600.0, 5.0 - 3600)
    for k in range(5, 605):
        back.update(listed(k - 3600, None))
    back.update(listed(605 - 3600, (a,)))
    assert back.process_energy_wh(a) == pytest.approx(0.1)  # the last reading's own second
    assert back.unattributed_wh(0) == pytest.approx(back.since_start_wh(0) - 0.1)
    assert back.since_start_wh(0) > 0.1 * (SHARED_LATER_S + 5)


def test_energy_with_no_list_read_for_long_is_unattributed() -> None:
    # Lists no longer read (the job-finished rule turned off, no history on disk): no process gets
    # the energy of the ticks past SHARED_LATER_S, nor of those before it that were never shared.
    from trayvml.monitor.energy import SHARED_LATER_S

    a = proc(1, 1e9)
    meter = EnergyMeter()
    meter.update(listed(0, (a,)))
    for k in range(1, 3601):
        meter.update(listed(k, None))
    meter.update(listed(3601, (a,)))
    assert meter.process_energy_wh(a) == pytest.approx(0.1)  # its last tick's second
    assert meter.unattributed_wh(0) == pytest.approx(360.0)
    assert SHARED_LATER_S < 3600


def test_a_counters_step_across_a_gap_in_the_readings_is_nobodys() -> None:
    """No reading for an hour (a stalled driver gives samples without GPUs, an unreachable host
    none): the counter's hour-long step went to the processes listed at the next reading, all of
    it to one started a second before. It counts for the GPU, and is unattributed."""
    a, b = proc(1, 1e9), proc(2, 1e9)
    meter = EnergyMeter()
    meter.update(gpu_sample(0, counter_j=0.0, processes=(a,)))
    meter.update(gpu_sample(1, counter_j=360.0, processes=(a,)))  # 0.1 Wh, a's
    meter.update(gpu_sample(3601, counter_j=360.0 * 3601, processes=(a, b)))
    assert meter.since_start_wh(0) == pytest.approx(360.1)
    assert (meter.process_energy_wh(a), meter.process_energy_wh(b)) == (pytest.approx(0.1), 0.0)
    assert meter.unattributed_wh(0) == pytest.approx(360.0)


def test_the_energy_of_processes_no_longer_listed_is_let_go_past_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep of short jobs (a CI runner, a hyper-parameter search): every process and job that
    ever ran kept its entry for as long as the tray ran (100 000 of each, 40 MB)."""
    import trayvml.monitor.energy as energy

    monkeypatch.setattr(energy, "ENTRIES_MAX", 50)
    meter = EnergyMeter()
    for k in range(200):  # a process a second, each gone by the next
        meter.update(gpu_sample(k, counter_j=360.0 * k, processes=(proc(1000 + k, 1e9),)))
    assert len(meter.process_wh) <= 51 and len(meter.job_wh) <= 51
    now = proc(1199, 1e9)
    assert meter.process_energy_wh(now) == pytest.approx(0.1) == meter.job_energy_wh(now)  # the one listed kept


def test_job_finished_text_and_formats() -> None:
    meter = EnergyMeter()
    for k in range(0, 3 * 3600 + 12 * 60 + 1, 5):
        meter.update(gpu_sample(k, power_w=753.0))
    end_s = 3 * 3600 + 12 * 60
    assert job_energy_text(meter, 0, end_s, end_s) == "2.41 kWh on GPU 0 over 3 h 12 min."
    named = job_energy_text(meter, 0, end_s, end_s, "Slurm job 4242 (train_llm)")
    assert named == "Slurm job 4242 (train_llm) finished on GPU 0 after 3 h 12 min, 2.41 kWh."
    assert job_energy_text(meter, 0, end_s, NAN, "unit train.service") == "unit train.service finished on GPU 0."
    assert job_energy_text(meter, 0, end_s, NAN) == ""
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


def test_a_snapshot_measures_the_energy_over_its_own_two_readings(capsys: pytest.CaptureFixture) -> None:
    """The counter read again at the second reading, and counting within a second as a driver's
    does: the snapshot's half second at ~590 W is about 0.08 Wh, never 0 (the held counter gave 0)."""
    assert main(["snapshot", "--json", "--simulate=training:gpus=h100,start=1800"]) == 0
    energy = json.loads(capsys.readouterr().out)["gpus"][0]["energy"]
    assert energy["method"] == DRIVER and energy["since_start_wh"] > 0.01


def test_each_log_row_has_the_energy_counter_read_at_its_time(tmp_path: Path) -> None:
    path = tmp_path / "energy.csv"
    query = "timestamp,energy.consumed"
    assert (
        main(
            [
                "log",
                "--csv",
                str(path),
                "--count",
                "4",
                "--interval",
                "0.2",
                "--query",
                query,
                "--nounits",
                "--simulate=training:gpus=h100,start=1800",
            ]
        )
        == 0
    )
    counter_j = [float(line.split(", ")[1]) for line in path.read_text().splitlines()[1:]]
    assert len(counter_j) == 4 and counter_j == sorted(set(counter_j))  # each row a new reading, none held


def test_the_processes_table_shows_each_process_and_its_job_energy() -> None:
    from trayvml.ui.processes import HEADERS, _cells

    meter = EnergyMeter()
    procs = (proc(1, 3e9, "abc"), proc(2, 1e9, "abc"))
    for k in range(3601):
        meter.update(gpu_sample(k, power_w=40, processes=procs))
    cells = dict(zip(HEADERS, (text for text, _ in _cells(procs[1], "simulated", meter)), strict=True))
    assert (cells["Energy"], cells["Job energy"]) == ("10.0 Wh", "40.0 Wh")
    no_meter = _cells(procs[1], "simulated")
    assert dict(zip(HEADERS, (t for t, _ in no_meter), strict=True))["Energy"] == "–"
    unknown = EnergyMeter()  # a GPU with no power reading and no counter: its processes' energy is unknown too
    for k in range(60):
        unknown.update(gpu_sample(k, processes=procs))
    cells = dict(zip(HEADERS, (text for text, _ in _cells(procs[1], "simulated", unknown)), strict=True))
    assert (cells["Energy"], cells["Job energy"]) == ("–", "–")


def test_per_process_sm_share_is_read_with_its_last_seen_timestamp_and_shares_energy() -> None:
    source, clock, lib = simulated_source("processes:gpus=rtx4090,start=1800")
    sample = source.sample()
    shares = {p.name: p.sm_util_percent for p in sample.gpus[0].processes}
    assert shares["Xorg"] == 1 and sum(shares.values()) <= 100 and shares["python"] > 0
    meter = EnergyMeter()
    meter.update(sample)
    clock.advance_s(5)
    sample = source.sample()
    meter.update(sample)
    by_pid = {p.pid: p for p in sample.gpus[0].processes}
    total = sum(p.sm_util_percent for p in by_pid.values())
    gpu_wh = meter.since_start_wh(0)
    for pid, wh in ((pid, wh) for (gpu, pid, _), wh in meter.process_wh.items()):
        assert math.isclose(wh, gpu_wh * by_pid[pid].sm_util_percent / total)  # by SM share, not memory
    # Two reads: the first grows the array to the driver's whole sample buffer (72 entries on an
    # H200, however few processes), the second fits in one call (binding.ProcessUtilization).
    assert lib.calls["nvmlDeviceGetProcessUtilization"] == 3


def test_under_mig_the_sm_share_is_unknown_and_memory_shares_energy() -> None:
    source, _, _ = simulated_source("training:gpus=h100-mig,start=1800")
    sample = source.sample()
    assert all(math.isnan(p.sm_util_percent) for g in sample.gpus for p in g.processes)


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def notify(self, notice) -> None:
        self.sent.append((notice.title, notice.body))

    def close(self) -> None:
        pass


def test_the_job_finished_notification_says_how_long_and_how_much_energy(qtbot, tmp_path) -> None:
    from dataclasses import replace

    from trayvml.alerts.engine import AlertSettings
    from trayvml.config import SettingsStore
    from trayvml.core.clock import ManualClock
    from trayvml.nvml.sim import parse_spec
    from trayvml.source import Source
    from trayvml.ui.app import App

    spec = parse_spec("training:gpus=h100,start=6300")  # the job ends at 6600 s
    clock = ManualClock(1_800_000_000.0)
    source = Source(spec, clock, host=False)
    app = App(spec, clock=clock, tray_wait_s=0, store=SettingsStore(tmp_path / "config.toml"))
    try:
        rules = dict(AlertSettings().rules)
        rules["job_finished"] = replace(rules["job_finished"], enabled=True)
        app.engine.configure(AlertSettings(rules=rules))
        recorder = _Recorder()
        app.notifier = recorder
        app.dispatcher.ready = True  # as once the app's notifier is set up
        for _ in range(80):
            app.on_sample(source.sample())
            clock.advance_s(5)
        [(title, body)] = [sent for sent in recorder.sent if "job finished" in sent[0]]
        assert title == "GPU 0 H100: job finished after 5 min (idle now)"
        # The simulated trainer runs in a container: the line names it.
        [energy] = [line for line in body.splitlines() if " finished on GPU" in line]
        lead = "container 3f2a9c1b7e4d finished on GPU 0 after 5 min, "
        assert energy.startswith(lead) and energy.endswith(" Wh."), energy
        wh = float(energy.removeprefix(lead).split(" Wh")[0])
        assert 40 < wh < 70  # ~600 W for 5 min, then idle
    finally:
        source.close()
        app.stop()


def test_energy_in_a_range_integrates_the_recorded_power_and_tells_what_it_covers() -> None:
    import numpy as np

    from trayvml.history.rings import Series
    from trayvml.monitor.energy import energy_in_range

    times = np.arange(0.0, 100.0, 10.0)  # 10 s buckets
    watts = np.full((10, 2), 360.0)
    watts[5:7, 0] = np.nan  # GPU 0: 20 s not recorded
    watts[:, 1] = np.nan  # GPU 1: no power reading at all
    series = Series(times, watts, watts, 10.0)
    energy = energy_in_range(series, 5.0, 95.0)  # half of the first and last buckets
    assert energy.wh[0] == pytest.approx(360.0 * 70 / 3600) and math.isnan(energy.wh[1])
    assert energy.covered_s == 70.0 and energy.span_s == 90.0
    before = energy_in_range(series, -500.0, -100.0)
    assert math.isnan(before.wh[0]) and before.covered_s == 0.0
