"""Memory's coarser tiers give, to the bit, what folding every row into its bucket as it came gave.

The coarser tiers fold their open bucket in when it is read or when it ends (trayvml.history.rings),
not on every row. Each case feeds rows into a History and into ``Oracle`` below, which keeps the
buckets row by row in plain Python (float64 sums in the rows' order, the mean rounded to float32,
min and max ignoring NaN; a new bucket starts afresh, a bucket that comes round the ring again
replaces the old one), and compares every tier's reads with it after each step.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from trayvml.history.rings import _PENDING_MAX, HISTORY_GPU_KEYS, HISTORY_HOST_KEYS, Tier
from trayvml.history.timeline import History

TIERS = (Tier(1.0, 20), Tier(5.0, 12), Tier(30.0, 6))
KEYS = ("utilization_gpu_percent", "memory_used_bytes", "power_draw_w")
HOST_KEY = "cpu_percent"
CORES = 3


class Oracle:
    """One TieredRing's buckets, row by row: per tier, position -> (slot, mean, high) as lists."""

    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.latest_s = -math.inf
        self.buckets: list[dict[int, tuple[int, list[float], list[float]]]] = [{} for _ in TIERS]
        self.open: list[tuple[int, list[float], list[int], list[float]] | None] = [None for _ in TIERS]

    def append(self, t_s: float, row: list[float]) -> None:
        self.latest_s = max(self.latest_s, t_s)
        for k, tier in enumerate(TIERS):
            slot = int(t_s // tier.step_s)
            position = slot % tier.capacity
            if k == 0:
                self.buckets[0][position] = (slot, row, row)
                continue
            state = self.open[k]
            if state is None or state[0] != slot:
                nan = [math.nan] * self.columns
                state = self.open[k] = (slot, [0.0] * self.columns, [0] * self.columns, list(nan))
            _, total, count, high = state
            for c, value in enumerate(row):
                if not math.isnan(value):
                    total[c] += value
                    count[c] += 1
                    high[c] = value if math.isnan(high[c]) else max(high[c], value)
            if slot >= 0:  # as before: a bucket before the epoch was never written
                mean = [float(np.float32(s / n)) if n else math.nan for s, n in zip(total, count, strict=True)]
                self.buckets[k][position] = (slot, mean, list(high))

    def read(self, k: int, start_s: float, end_s: float, columns: list[int]) -> tuple[np.ndarray, ...]:
        tier = TIERS[k]
        first, last = int(start_s // tier.step_s), int(end_s // tier.step_s)
        wanted = range(max(first, last - tier.capacity + 1), last + 1)
        parts: list[list[list[float]]] = [[], []]
        for slot in wanted:
            held = self.buckets[k].get(slot % tier.capacity)
            for part, values in zip(
                parts, held[1:] if held is not None and held[0] == slot else [None] * 2, strict=True
            ):
                part.append([math.nan if values is None else values[c] for c in columns])
        times = np.array([slot * tier.step_s for slot in wanted])
        return (times, *(np.array(p, dtype=np.float32).reshape(len(wanted), len(columns)) for p in parts))


def _range(k: int, latest_s: float) -> tuple[float, float, int]:
    """A range that the history reads from tier ``k``: (start, end, max points)."""
    tier = TIERS[k]
    start = latest_s - tier.span_s + tier.step_s
    points = math.ceil((latest_s - start) / tier.step_s)
    return start, latest_s, points


def _same(got: np.ndarray, expected: np.ndarray, sign: bool = True) -> None:
    """Equal: NaN where NaN, and (``sign``) a zero's sign too. Of -0.0 and 0.0 in one bucket, which
    one its max keeps is numpy's choice (its vector loops and its scalar one differ), so a high is
    compared by value."""
    np.testing.assert_array_equal(got, expected)
    if sign:
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


def _compare(history: History, gpus: Oracle | None, host: Oracle | None, gpu_count: int) -> None:
    for k, tier in enumerate(TIERS):
        if gpus is not None:
            start, end, points = _range(k, gpus.latest_s)
            for key in KEYS:
                series = history.gpu_series(key, start, end, points)
                assert series is not None and series.step_s == tier.step_s  # this tier was read
                columns = [g * len(HISTORY_GPU_KEYS) + HISTORY_GPU_KEYS.index(key) for g in range(gpu_count)]
                times, mean, high = gpus.read(k, start, end, columns)
                _same(series.times_s, times)
                _same(series.mean, mean)
                _same(series.high, high, sign=False)
        if host is not None:
            start, end, points = _range(k, host.latest_s)
            series = history.host_series(HOST_KEY, start, end, points)
            cores = history.core_series(start, end, points)
            assert series is not None and cores is not None and series.step_s == tier.step_s
            first_core = len(HISTORY_HOST_KEYS)
            for read, columns in (
                (series, [HISTORY_HOST_KEYS.index(HOST_KEY)]),
                (cores, list(range(first_core, first_core + CORES))),
            ):
                times, mean, high = host.read(k, start, end, columns)
                _same(read.times_s, times)
                _same(read.mean, mean)
                _same(read.high, high, sign=False)


# Values a row's are drawn from: NaN (not supported, not read), zeros of either sign (a sum from 0 of
# -0.0 is 0.0), and huge ones that cancel (1e30 + 1 - 1e30 is 0, 1e30 - 1e30 + 1 is 1: the order
# of a sum shows in the mean), beside values of every size.
SPECIAL = (math.nan, math.nan, -0.0, -0.0, 0.0, 1e30, -1e30, 1.0)


def _row(chance: random.Random, columns: int) -> np.ndarray:
    values = [
        chance.choice(SPECIAL) if chance.random() < 0.6 else chance.uniform(-1, 1) * 10.0 ** chance.randint(-4, 11)
        for _ in range(columns)
    ]
    return np.array(values, dtype=np.float32)


def _times(chance: random.Random, t: float) -> list[float]:
    """Sample times from ``t``: steady seconds, two in a second, gaps longer than a tier, a clock
    set back, a burst of more rows in one bucket than a tier holds unfolded."""
    times = []
    for _ in range(400):
        roll = chance.random()
        if roll < 0.03:
            t += chance.choice([37.0, 130.0, 700.0])  # a gap: past the first tier, the second, all
        elif roll < 0.045:
            t -= chance.choice([3.0, 45.0])  # the clock set back
        elif roll < 0.1:
            t += 0.4  # two samples in one second
        else:
            t += 1.0
        times.append(t)
    burst_start = (math.floor(t / 30.0) + 1) * 30.0
    times += [burst_start + i * 0.01 for i in range(_PENDING_MAX * 2 + 5)]
    return times + [burst_start + 31.0 + i for i in range(40)]


@pytest.mark.parametrize("start_s", [1_700_000_000.25, 1_700_000_017.75])
def test_every_tier_reads_what_folding_each_row_as_it_came_gave(start_s: float) -> None:
    chance = random.Random(23)
    history = History(TIERS)
    gpu_columns = len(HISTORY_GPU_KEYS)
    gpu_count = 2
    gpus = Oracle(gpu_count * gpu_columns)
    host = Oracle(len(HISTORY_HOST_KEYS) + CORES)
    reads = 0
    for i, t_s in enumerate(_times(chance, start_s)):
        if i in (150, 260):  # a GPU vanishes, then comes back: its rings start afresh
            gpu_count = 1 if i == 150 else 2
            gpus = Oracle(gpu_count * gpu_columns)
        gpu_rows = np.stack([_row(chance, gpu_columns) for _ in range(gpu_count)])
        host_row = _row(chance, len(HISTORY_HOST_KEYS) + CORES)
        history.append_values(t_s, gpu_rows, host_row)
        gpus.append(t_s, [float(v) for v in gpu_rows.reshape(-1)])
        host.append(t_s, [float(v) for v in host_row])
        if chance.random() < 0.3:  # a read mid-bucket folds what came so far; more rows follow
            _compare(history, gpus, host, gpu_count)
            reads += 1
    _compare(history, gpus, host, gpu_count)
    assert reads > 100


def test_a_row_is_kept_as_it_was_when_appended_though_the_caller_fills_its_array_again() -> None:
    history = History(TIERS)
    row = np.zeros((1, len(HISTORY_GPU_KEYS)), dtype=np.float32)
    column = HISTORY_GPU_KEYS.index("power_draw_w")
    for k, watts in enumerate((100.0, 200.0, 300.0)):
        row[0, column] = watts
        history.append_values(1_700_000_100.0 + k, row)
    row[0, column] = 9999.0
    series = history.gpu_series("power_draw_w", 1_700_000_100.0, 1_700_000_102.0, 1)  # 5 s buckets
    assert series is not None and series.step_s == 5.0
    assert series.mean[-1, 0] == 200.0 and series.high[-1, 0] == 300.0


def test_a_bucket_of_negative_zeros_has_a_mean_of_zero_as_a_sum_from_zero_gives() -> None:
    history = History(TIERS)
    row = np.full((1, len(HISTORY_GPU_KEYS)), -0.0, dtype=np.float32)
    history.append_values(1_700_000_100.0, row)
    history.append_values(1_700_000_101.0, row)
    series = history.gpu_series("power_draw_w", 1_700_000_100.0, 1_700_000_104.0, 1)  # 5 s buckets
    assert series is not None and series.step_s == 5.0
    assert series.mean[-1, 0] == 0.0 and not np.signbit(series.mean[-1, 0])
    assert np.signbit(series.high[-1, 0])  # -0.0 was all there was


@pytest.mark.parametrize("rows", [10, 27])  # within one stretch of the 20-slot ring, and across its end
def test_a_read_is_the_callers_own_and_writing_into_it_leaves_the_history_as_it_was(rows: int) -> None:
    """A read of one stretch of a ring is sliced out of it rather than gathered: still a copy. The
    window keeps what it read (its lines), and the ring goes on being written."""
    history = History(TIERS)
    start_s = 1_700_000_000.0
    for k in range(rows):
        gpu_row = np.full((1, len(HISTORY_GPU_KEYS)), float(k), dtype=np.float32)
        history.append_values(start_s + k, gpu_row, np.full(len(HISTORY_HOST_KEYS) + CORES, float(k), np.float32))
    end_s = start_s + rows - 1

    def reads() -> list[np.ndarray]:
        gpu = history.gpu_series("power_draw_w", end_s - 9, end_s, 100)
        host = history.host_series(HOST_KEY, end_s - 9, end_s, 100)
        cores = history.core_series(end_s - 9, end_s, 100)
        assert gpu is not None and host is not None and cores is not None
        return [series.mean for series in (gpu, host, cores)]

    first = reads()
    assert [float(a[-1, 0]) for a in first] == [rows - 1.0] * 3
    for array in first:
        array[:] = -1.0
    assert all(
        np.array_equal(a, np.repeat(np.arange(rows - 10, rows, dtype=np.float32), a.shape[1]).reshape(10, -1))
        for a in reads()
    )
