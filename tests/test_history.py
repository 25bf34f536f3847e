"""Tiered history: wrap-around, tier choice, gaps, peaks kept, and the memory bound."""

from __future__ import annotations

import numpy as np

from tests.helpers import present, simulated_source
from trayvml.core.metrics import GPU_METRICS
from trayvml.core.sample import GpuSample, MetricState, Sample
from trayvml.history.rings import (
    HISTORY_GPU_KEYS,
    MAX_TRACKED_PROCESSES,
    PROCESS_COLUMNS,
    PROCESS_TIERS,
    Rings,
    Series,
    Tier,
    TieredRing,
    default_tiers,
)
from trayvml.history.timeline import History, _unfilled_from_s, _with_memory

T0 = 1_800_000_000.0


def gpu_sample(index: int, util: float) -> GpuSample:
    values = [float("nan")] * len(GPU_METRICS)
    values[0] = util  # utilization_gpu_percent comes first in the catalog
    return GpuSample(index, tuple(values), (MetricState.OK,) * len(GPU_METRICS))


def sample_at(t_s: float, *utils: float) -> Sample:
    return Sample(t_s, tuple(gpu_sample(i, u) for i, u in enumerate(utils)), (), None, None)


def test_the_finest_tier_returns_each_sample_in_time_order() -> None:
    history = History()
    for k in range(60):
        history.append(sample_at(T0 + k, k, 100 - k))
    series = history.gpu_series("utilization_gpu_percent", T0, T0 + 59, 1000)
    assert series is not None and series.step_s == 1
    assert np.all(np.diff(series.times_s) > 0)
    assert series.mean[:, 0].tolist() == list(range(60))
    assert series.mean[:, 1].tolist() == [100 - k for k in range(60)]


def test_rings_wrap_around_and_forget_the_oldest() -> None:
    ring = TieredRing(1, (Tier(1, 10),))
    for k in range(25):
        ring.append(T0 + k, np.array([k], dtype=np.float32))
    series = ring.read(T0, T0 + 24, 100, np.array([0]))
    kept = series.mean[:, 0]
    assert kept[~np.isnan(kept)].tolist() == list(range(15, 25))


def test_gaps_read_back_as_nan() -> None:
    history = History()
    for k in [*range(10), *range(20, 30)]:  # asleep from 10 s to 20 s
        history.append(sample_at(T0 + k, 50))
    values = present(history.gpu_series("utilization_gpu_percent", T0, T0 + 29, 1000)).mean[:, 0]
    assert np.isnan(values[10:20]).all() and not np.isnan(values[:10]).any() and not np.isnan(values[20:]).any()


def test_long_ranges_come_from_coarse_tiers_that_keep_peaks() -> None:
    history = History()
    for k in range(4 * 3600):
        spike = 100.0 if k == 5000 else 10.0
        history.append(sample_at(T0 + k, spike))
    end = T0 + 4 * 3600 - 1
    short = present(history.gpu_series("utilization_gpu_percent", end - 60, end, 800))
    hours = present(history.gpu_series("utilization_gpu_percent", end - 3 * 3600, end, 800))
    assert short.step_s == 1 and hours.step_s == 30
    assert len(hours.times_s) <= 800
    assert np.nanmax(hours.high[:, 0]) == 100.0  # the one-second spike survives as a bucket's max
    assert np.nanmax(hours.mean[:, 0]) < 100.0


def test_tier_choice_follows_the_point_budget() -> None:
    history = History()
    for k in range(3 * 3600):
        history.append(sample_at(T0 + k, 1))
    end = T0 + 3 * 3600 - 1
    assert present(history.gpu_series("utilization_gpu_percent", end - 900, end, 1000)).step_s == 1
    assert present(history.gpu_series("utilization_gpu_percent", end - 3600, end, 1000)).step_s == 5
    assert present(history.gpu_series("utilization_gpu_percent", end - 3600, end, 100)).step_s == 30


def test_memory_is_bounded_for_8_gpus_12_hours_whatever_the_uptime() -> None:
    tiers = default_tiers(12 * 3600)
    source, clock, _ = simulated_source("training:gpus=h100*8", host=True)
    history = History(tiers)
    for _ in range(30):
        history.append(source.sample())
        clock.advance_s(1)
    rings = history.nbytes - history.processes.nbytes
    per_process = TieredRing(PROCESS_COLUMNS, PROCESS_TIERS).nbytes
    assert rings + MAX_TRACKED_PROCESSES * per_process <= 16 * 2**20  # the worst case
    assert rings <= 10.5 * 2**20  # a coarse bucket keeps its mean and max, no min (with it: 14.5 MiB)
    assert len(HISTORY_GPU_KEYS) >= 40
    clock.advance_s(13 * 3600)  # appending after a long uptime allocates nothing more
    for _ in range(30):
        history.append(source.sample())
        clock.advance_s(1)
    assert history.nbytes - history.processes.nbytes == rings
    assert history.processes.nbytes == 8 * per_process  # one training process per GPU by now


def test_a_simulated_day_of_samples_keeps_12_hours() -> None:
    source, clock, _ = simulated_source("training:gpus=h100")
    history = History()
    start = clock.now_s()
    for _ in range(24 * 3600 // 30):  # one sample a 30 s bucket keeps this quick
        history.append(source.sample())
        clock.advance_s(30)
    end = clock.now_s() - 30
    series = present(history.gpu_series("utilization_gpu_percent", end - 12 * 3600, end, 2000))
    filled = ~np.isnan(series.mean[:, 0])
    assert series.step_s == 30 and filled.mean() > 0.99  # a sample in every 30 s bucket
    assert series.times_s[0] > start + 11 * 3600


def test_process_history_keeps_at_most_the_cap_and_drops_the_longest_gone() -> None:
    from trayvml.core.sample import ProcessSample

    history = History()
    for k in range(MAX_TRACKED_PROCESSES + 10):
        proc = ProcessSample(0, 1000 + k, "compute", float(k * 2**20), name=f"job{k}")
        values = [float("nan")] * len(GPU_METRICS)
        gpu = GpuSample(0, tuple(values), (MetricState.OK,) * len(GPU_METRICS), processes=(proc,))
        history.append(Sample(T0 + k, (gpu,), (), None, None))
    found = history.processes.lines(T0, T0 + 200, 500)
    assert len(found) == MAX_TRACKED_PROCESSES
    labels = {(line.name, line.pid) for line in found}
    assert ("job0", 1000) not in labels and (
        f"job{MAX_TRACKED_PROCESSES + 9}",
        1000 + MAX_TRACKED_PROCESSES + 9,
    ) in labels


def test_process_history_at_its_cap_keeps_the_running_processes_though_the_clock_was_set_back() -> None:
    """The running processes seen after the clock was set back an hour had earlier times than
    those gone before it: the cap dropped a running one (its timeline lost), and another the next
    second, and so on."""
    from trayvml.core.sample import ProcessSample

    def sample(t_s: float, pids: range) -> Sample:
        procs = tuple(ProcessSample(0, pid, "compute", float(2**30), name=f"job{pid}") for pid in pids)
        values = [float("nan")] * len(GPU_METRICS)
        return Sample(t_s, (GpuSample(0, tuple(values), (MetricState.OK,) * len(GPU_METRICS), procs),), (), None, None)

    history = History()
    history.append(sample(T0, range(MAX_TRACKED_PROCESSES)))  # the cap's worth
    running = range(MAX_TRACKED_PROCESSES // 2)  # the other half exits, then the clock is set back
    for k in range(1, 4):
        history.append(sample(T0 - 3600 + k, running))
    history.append(sample(T0 - 3600 + 4, range(10_000, 10_004)))  # four new ones: four of those gone go
    lines = history.processes.lines(T0 - 3600, T0 - 3600 + 5, 100)
    kept = {line.pid for line in lines}
    assert set(running) <= kept and set(range(10_000, 10_004)) <= kept
    # Those gone before the step were last seen just before it, not "in" every range for an hour.
    later = {line.pid for line in history.processes.lines(T0 - 3600 + 10, T0 - 3600 + 60, 100)}
    assert later.isdisjoint(range(len(running), MAX_TRACKED_PROCESSES))


def test_memory_fills_only_the_buckets_the_disk_has_nothing_for() -> None:
    """The store's buckets stand as they are; a bucket with nothing on disk (the hour not yet packed)
    takes memory's rows in it: their mean, and their highest value. A bucket with a value of any
    column on disk is the disk's, and memory's rows outside the range or with no value are left out."""
    nan = np.nan
    disk = Series(
        np.array([0.0, 600.0, 1200.0, 1800.0]),
        np.array([[1.0, 2.0], [nan, nan], [nan, 5.0], [nan, nan]], dtype=np.float32),
        np.array([[1.5, 2.5], [nan, nan], [nan, 5.5], [nan, nan]], dtype=np.float32),
        600.0,
    )
    times = np.array([-30.0, 0.0, 30.0, 600.0, 630.0, 660.0, 1200.0, 1830.0, 2400.0])
    mean = np.array(
        [[9, 9], [7, 7], [8, 8], [10, 20], [30, nan], [nan, nan], [6, 6], [nan, nan], [9, 9]], dtype=np.float32
    )
    high = mean + 1
    joined = _with_memory(disk, Series(times, mean, high, 30.0))
    expected_mean = [[1.0, 2.0], [20.0, 20.0], [nan, 5.0], [nan, nan]]
    expected_high = [[1.5, 2.5], [31.0, 21.0], [nan, 5.5], [nan, nan]]
    np.testing.assert_array_equal(joined.mean, np.array(expected_mean, dtype=np.float32))
    np.testing.assert_array_equal(joined.high, np.array(expected_high, dtype=np.float32))
    np.testing.assert_array_equal(disk.mean[1], [nan, nan])  # the disk's series is not changed


def test_memory_read_from_the_first_bucket_the_store_lacks_joins_as_memory_read_whole() -> None:
    """A range past memory reads memory from the first of the store's buckets it lacks that memory
    may hold rows of (_unfilled_from_s): the same buckets filled as memory read whole, at 1 s and 45 s
    (whose rows' buckets begin before the store's minutes), following live or half an hour back
    from a pause in sampling (rows older than memory's span from its newest are still there)."""
    import math

    rng = np.random.default_rng(1)
    epoch = 1_800_000_000.0 - 1_800_000_000.0 % 3600
    checked = 0
    # (interval, rows until): an hour and a half of 45 s rows (fewer than memory's span), four hours
    # of 1 s rows with sampling paused from 3:00 to 3:42 (the view half an hour back ends in it).
    for interval_s, until_s in ((45.0, 1.5 * 3600), (1.0, 4 * 3600)):
        memory = Rings(default_tiers(7200.0, interval_s))
        t = epoch + 610.0
        while t < epoch + until_s:
            if not epoch + 3 * 3600 <= t < epoch + 3.7 * 3600:
                memory.append_values(t, np.full((2, len(HISTORY_GPU_KEYS)), (t - epoch) % 977, dtype=np.float32))
            t += interval_s
        for step_s, span_s in ((60.0, 6 * 3600.0), (600.0, 7 * 86400.0)):
            for back_s in (0.0, 1800.0):
                for share in (0.0, 0.5, 0.9):  # of the store's buckets with a value
                    end_s = memory.latest_s - back_s
                    start_s = end_s - span_s
                    times = np.arange(math.floor(start_s / step_s), math.floor(end_s / step_s) + 1) * step_s
                    values = np.where(rng.random((len(times), 1)) < share, 1.0, np.nan).astype(np.float32)
                    disk = Series(times, values.repeat(2, axis=1), values.repeat(2, axis=1), step_s)
                    whole = _with_memory(disk, memory.gpu_series("power_draw_w", start_s, end_s, 1000))
                    filled = np.isfinite(disk.mean).any(axis=1)
                    from_s = _unfilled_from_s(times, step_s, filled, memory, end_s)
                    rows = (
                        memory.gpu_rows_from("power_draw_w", start_s, end_s, 1000, from_s)
                        if from_s < math.inf
                        else None
                    )
                    part = _with_memory(disk, rows)
                    np.testing.assert_array_equal(
                        part.mean, whole.mean, err_msg=f"{interval_s} {step_s} {back_s} {share}"
                    )
                    checked += int(np.isfinite(whole.mean).any(axis=1).sum() - filled.sum())
    assert checked > 100  # buckets filled from memory, compared


def test_another_gpu_in_a_column_does_not_take_over_the_past_of_the_one_before() -> None:
    """MIG-b destroyed and MIG-d made, three instances still: MIG-c, now in b's column (and at
    its index), was drawn with b's past, and b's processes were said to have run on it."""
    from dataclasses import replace

    from trayvml.core.sample import DeviceInfo, ProcessSample

    def at(t_s: float, uuids: tuple[str, ...], utils: tuple[float, ...], pid: int) -> Sample:
        sample = sample_at(t_s, *utils)
        job = ProcessSample(1, pid, "compute", 2.0**30, name="train.py")
        gpus = tuple(replace(g, processes=(job,)) if g.index == 1 else g for g in sample.gpus)
        return replace(sample, gpus=gpus, devices=tuple(DeviceInfo(k, "MIG", u) for k, u in enumerate(uuids)))

    history = History()
    for k in range(60):
        history.append(at(T0 + k, ("MIG-a", "MIG-b", "MIG-c"), (10.0, 90.0, 30.0), 4242))
    for k in range(60, 70):
        history.append(at(T0 + k, ("MIG-a", "MIG-c", "MIG-d"), (10.0, 30.0, 0.0), 5151))
    series = present(history.gpu_series("utilization_gpu_percent", T0, T0 + 70, 1000))
    before = series.mean[series.times_s < T0 + 60]
    assert not np.isfinite(before[:, 1]).any()  # not b's 90 % as MIG-c's
    assert np.isfinite(before[:, 0]).all()  # MIG-a's own past stays: only the column that changed goes
    assert [line.pid for line in history.processes.lines(T0, T0 + 70, 1000)] == [5151]
    # Destroyed on one tick and made on another (two nvidia-smi commands): b's job not put on c.
    apart = History()
    for k in range(10):
        apart.append(at(T0 + k, ("MIG-a", "MIG-b"), (10.0, 90.0), 4242))
    apart.append(replace(at(T0 + 10, ("MIG-a",), (10.0,), 0), gpus=(sample_at(T0 + 10, 10.0).gpus[0],)))
    for k in range(11, 20):
        apart.append(at(T0 + k, ("MIG-a", "MIG-c"), (10.0, 30.0), 5151))
    assert [line.pid for line in apart.processes.lines(T0, T0 + 20, 1000)] == [5151]
    same = History()  # the same GPUs throughout: nothing begun afresh
    for k in range(70):
        same.append(at(T0 + k, ("MIG-a", "MIG-b", "MIG-c"), (10.0, 90.0, 30.0), 4242))
    assert np.isfinite(present(same.gpu_series("utilization_gpu_percent", T0, T0 + 69, 1000)).mean[:, 1]).all()


def test_a_pid_given_to_a_process_of_another_name_is_another_line_where_no_start_is_told() -> None:
    """A remote host's processes come without their start time: python (PID 4100, 30 GiB) ended,
    and ffmpeg given PID 4100 took over its line, name and all ("ffmpeg (4100)": 30 GiB before)."""
    from dataclasses import replace

    from trayvml.core.sample import ProcessSample

    history = History()
    for k in range(90):
        name, memory = ("python", 30 * 2.0**30) if k < 60 else ("ffmpeg", 2.0**30)
        proc = ProcessSample(0, 4100, "compute", memory, name=name)  # started_s NaN: not told
        history.append(replace(sample_at(T0 + k, 50.0), gpus=(replace(gpu_sample(0, 50.0), processes=(proc,)),)))
    lines = {line.name: line for line in history.processes.lines(T0, T0 + 90, 1000)}
    assert set(lines) == {"python", "ffmpeg"} and lines["python"].key != lines["ffmpeg"].key
    python, ffmpeg = (np.nanmax(lines[n].series.mean[:, 0]) for n in ("python", "ffmpeg"))
    assert (python, ffmpeg) == (30 * 2.0**30, 2.0**30)
