"""The one timeline readers use: memory's rings continued from the history on disk.

Ranges older than memory are read from the store's coarse tiers; where nothing was recorded is
said. GPUs are matched by UUID: the GPU at index 0 today is the one whose UUID it has, whatever
index it had when its past was written.
"""

from __future__ import annotations

import logging
import math
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from trayvml.core.sample import Sample
from trayvml.history.disk import processes
from trayvml.history.disk.blocks import distinct_sorted
from trayvml.history.disk.read import CoarseData, StoreReader, bucket_step_ms
from trayvml.history.disk.write import HOST_UUID, host_layout
from trayvml.history.rings import (
    HISTORY_GPU_KEYS,
    HISTORY_HOST_KEYS,
    PROCESS_COLUMNS,
    ProcessLine,
    Rings,
    Series,
    Tier,
    peak,
)

log = logging.getLogger(__name__)
GAP_MIN_S = 120.0  # a hole shorter than this is a missed sample or two, not "not recording"
EXACT_GAPS_STEP_S = 60.0  # buckets this fine or finer: a gap's ends are its rows' (row times read once a range)


def backfill(history: Rings, reader: StoreReader, sample: Sample, span_s: float) -> int:
    """Append to ``history`` what the store holds of the ``span_s`` before ``sample``, for the GPUs in
    ``sample`` (by UUID) and the host; returns the number of times appended."""
    end_s = sample.timestamp_s - 1e-3
    start_s = end_s - span_s
    try:
        gpus = [reader.fine(d.uuid, start_s, end_s, HISTORY_GPU_KEYS) for d in sample.devices]
        cores = len(sample.host.cpu_core_percent) if sample.host is not None else 0
        host_keys = HISTORY_HOST_KEYS + host_layout(cores).keys[-cores:] if cores else HISTORY_HOST_KEYS
        host = reader.fine(HOST_UUID, start_s, end_s, host_keys) if sample.host is not None else None
    except sqlite3.Error as error:
        log.warning("the history on disk could not be read (%s); the timelines start now", error)
        return 0
    parts = [g.times_s for g in gpus] + ([host.times_s] if host is not None else [])
    times_ms = distinct_sorted(np.round(np.concatenate(parts) * 1000).astype(np.int64)) if parts else np.empty(0)
    if not len(times_ms):
        return 0
    gpu_rows = np.full((len(times_ms), len(gpus), len(HISTORY_GPU_KEYS)), np.nan, dtype=np.float32)
    for k, data in enumerate(gpus):
        gpu_rows[np.searchsorted(times_ms, np.round(data.times_s * 1000)), k] = data.values
    host_rows = None
    if host is not None:
        host_rows = np.full((len(times_ms), host.values.shape[1]), np.nan, dtype=np.float32)
        host_rows[np.searchsorted(times_ms, np.round(host.times_s * 1000))] = host.values
    for i, t_ms in enumerate(times_ms.tolist()):
        history.append_values(t_ms / 1000, gpu_rows[i], host_rows[i] if host_rows is not None else None)
    return len(times_ms)


@dataclass
class _Read:
    """A device's buckets of one range and step: the keys read so far, a column each."""

    span: tuple[int, int]  # the range, in buckets of its step
    columns: dict[str, int]
    data: CoarseData


DISK_POINTS = 1000  # buckets at most a range read from the store: a week in 10-minute buckets
STEPS_KEPT = 2  # reads kept a device (about 2 MB each at 1000 buckets): the plots' and the energy's


class DiskReach:
    """Reads ranges older than memory's rings from the store (History.disk)."""

    def __init__(self, folder: Path) -> None:
        self.reader = StoreReader(folder)
        self.uuids: tuple[str, ...] = ()  # the GPUs shown, in index order (set from each sample)
        # The GPU metrics a read of a device reads together (expect): all of them until told.
        self.expected: tuple[str, ...] = HISTORY_GPU_KEYS
        self._cache: dict[tuple[str, int], _Read] = {}
        # _stacked's: (device or "" for the GPUs, key, step): the reads, their lines, buckets filled
        self._stacks: dict[tuple[str, str, float], tuple[list[tuple[CoarseData, int]], Series, np.ndarray]] = {}
        self.folder = folder
        self._lines: tuple[tuple[object, ...], list[ProcessLine]] | None = None
        self.failed_reads = 0  # reads the store refused (their buckets stood in as not recorded)
        self._row_times: tuple[tuple[float, float], np.ndarray] | None = None  # _host_row_times' last

    def close(self) -> None:
        """Lets go of what was read and of the store's connections (the window hid: the idle tray
        keeps none of it); a later read opens them again."""
        self._cache.clear()
        self._stacks.clear()
        self._row_times = None
        self._lines = None
        self.reader.close()

    def expect(self, gpu_keys: Iterable[str]) -> None:
        """The GPU metrics the next reads ask for (a redraw's panels in view and the energy): a device
        is read for these together, one decode of its blocks, not for every metric stored (the
        window's first page shows 9 of 48). A metric outside them reads every one not read yet."""
        wanted = set(gpu_keys)
        self.expected = tuple(k for k in HISTORY_GPU_KEYS if k in wanted)

    def process_lines(
        self, start_s: float, end_s: float, max_points: int
    ) -> tuple[np.ndarray, float, list[ProcessLine]]:
        """(bucket starts, step, the stored processes of the GPUs shown that held one in the range),
        cached until the range moves by a bucket."""
        step_s = max(60.0, (end_s - start_s) / max(1, max_points))
        times, step = processes.grid(start_s, end_s, step_s)
        key = (self.uuids, math.floor(start_s / step), math.floor(end_s / step), step)
        if self._lines is not None and self._lines[0] == key:
            return times, step, self._lines[1]
        lines: list[ProcessLine] = []
        try:
            # The reader's connection: one that follows a store moved aside as damaged (its own,
            # opened once, read the old file's processes until the window hid).
            db = self.reader.database()
            for index, uuid in enumerate(self.uuids if db is not None else ()):
                assert db is not None
                for found in processes.series(db, uuid, start_s, end_s, step):
                    p = found.process
                    mean = np.stack([found.memory_bytes, found.sm_percent], axis=1).astype(np.float32)
                    high = np.stack([found.memory_peak_bytes, found.sm_percent], axis=1).astype(np.float32)
                    series = Series(found.times_s, mean, high, found.step_s)
                    lines.append(ProcessLine(index, p.pid, p.started_s, p.name, p.user, p.job_kind, p.job, series))
        except (sqlite3.Error, OSError) as error:  # (OSError: a folder that may not be entered)
            log.warning("the process history on disk could not be read: %s", error)
        self._lines = (key, lines)
        return times, step, lines

    def _coarse(self, uuid: str, key: str, start_s: float, end_s: float, max_points: int) -> tuple[CoarseData, int]:
        """(the device's buckets of the range, the column of ``key`` in them). Cached per device and
        bucket until the range moves by a bucket: a redraw reads each device once (the host for
        all its metrics, a GPU for those expected). A range is read in at most DISK_POINTS buckets:
        no plot is much wider, a week of them is the wide tier's 10-minute buckets (finer ones are
        a week of minutes to decode), and the energy in view is as exact from them (a bucket's
        mean times its time)."""
        step_ms = bucket_step_ms(max(60.0, (end_s - start_s) / max(1, min(max_points, DISK_POINTS))))
        step_s = step_ms / 1000
        where = (uuid, step_ms)
        span = (math.floor(start_s / step_s), math.floor(end_s / step_s))
        found = self._cache.get(where)
        if found is not None and found.span != span:
            found = None
        if found is None or key not in found.columns:
            stored = HISTORY_HOST_KEYS if uuid == HOST_UUID else HISTORY_GPU_KEYS
            if key not in stored:
                raise ValueError(f"{key} is not kept in the history")
            have = found.columns if found is not None else {}
            group = self.expected if key in self.expected else stored
            keys = tuple(k for k in group if k not in have)
            try:
                read = self.reader.coarse(uuid, start_s, end_s, step_s, keys, fresh=False)
            except sqlite3.Error as error:
                self.failed_reads += 1
                log.warning("the history on disk could not be read: %s", error)
                times = found.data.times_s if found is not None else np.empty(0)
                nothing = np.full((len(times), len(keys)), np.nan)
                read = CoarseData(times, np.zeros(nothing.shape, dtype=np.int64), nothing, nothing, nothing, step_s)
            if found is None:
                if len(self._cache) >= STEPS_KEPT * (len(self.uuids) + 1):  # the GPUs and the host
                    self._cache.clear()
                    self._stacks.clear()  # (they hold the reads let go)
                found = self._cache[where] = _Read(span, dict(zip(keys, range(len(keys)), strict=True)), read)
            else:  # the keys read before, and these beside them
                found.columns |= {k: len(found.columns) + i for i, k in enumerate(keys)}
                found.data = _beside(found.data, read)
        return found.data, found.columns[key]

    def gpu_series(self, key: str, start_s: float, end_s: float, max_points: int, memory: Rings) -> Series:
        datas = [self._coarse(u, key, start_s, end_s, max_points) for u in self.uuids]
        return self._joined(
            "", key, datas, memory, end_s, lambda from_s: memory.gpu_rows_from(key, start_s, end_s, max_points, from_s)
        )

    def host_series(self, key: str, start_s: float, end_s: float, max_points: int, memory: Rings) -> Series:
        datas = [self._coarse(HOST_UUID, key, start_s, end_s, max_points)]
        return self._joined(
            HOST_UUID,
            key,
            datas,
            memory,
            end_s,
            lambda from_s: memory.host_rows_from(key, start_s, end_s, max_points, from_s),
        )

    def _joined(
        self,
        uuid: str,
        key: str,
        datas: list[tuple[CoarseData, int]],
        memory: Rings,
        end_s: float,
        rows_from: Callable[[float], Series | None],
    ) -> Series:
        """The store's buckets (_stacked), those it has no value for filled from memory's rows
        (``rows_from``), read from the first such bucket on (_unfilled_from_s)."""
        disk, filled = self._stacked(uuid, key, datas)
        from_s = _unfilled_from_s(disk.times_s, disk.step_s, filled, memory, end_s)
        return disk if from_s == math.inf else _with_memory(disk, rows_from(from_s))

    def _stacked(self, uuid: str, key: str, datas: list[tuple[CoarseData, int]]) -> tuple[Series, np.ndarray]:
        """_series of ``datas`` (read-only: kept and handed out again), and which of its buckets hold
        a value; kept while they are the same reads: following live, a redraw each second finds them
        unchanged until the range moves by a bucket."""
        name = (uuid, key, datas[0][0].step_s if datas else 0.0)
        kept = self._stacks.get(name)
        if (
            kept is not None
            and len(kept[0]) == len(datas)
            and all(a is b and i == j for (a, i), (b, j) in zip(kept[0], datas, strict=True))
        ):
            return kept[1], kept[2]
        stacked = _series(datas)
        for values in (stacked.times_s, stacked.mean, stacked.high):
            values.setflags(write=False)
        filled = np.isfinite(stacked.mean).any(axis=1)
        self._stacks[name] = (datas, stacked, filled)
        return stacked, filled

    def not_recorded(self, start_s: float, end_s: float, max_points: int, memory: Rings) -> list[tuple[float, float]]:
        """Spans of at least GAP_MIN_S in the range when nothing was recorded (the store's host
        buckets, and memory's rows for the hour not yet packed on disk). Memory's GPU rows count
        too: a simulation's made-up past is in memory alone, GPUs without the host, and the window
        shaded all of it "not recording" under its lines. (Such a past of a GPU asleep, rows of NaN
        only, is still shaded: memory cannot tell them from none.) Where buckets are a minute or
        finer (ranges up to a day), a span runs from the last row before it to the first
        after it: in whole buckets, a gap of two and a half minutes left one empty minute, too
        short to shade, at the five minutes' range."""
        data, _ = self._coarse(HOST_UUID, HISTORY_HOST_KEYS[0], start_s, end_s, max_points)
        if not len(data.times_s):
            return []
        recorded = data.recorded.copy()
        in_memory = []  # (bucket starts with a value, the bucket's length) of memory's rows
        # Memory's rows from a bucket before the first one the store did not record (a span's edge
        # looks that far back): those before it change nothing.
        from_s = _unfilled_from_s(data.times_s, data.step_s, recorded, memory, end_s) - data.step_s
        recents = (
            ()
            if from_s == math.inf  # every bucket recorded
            else (
                memory.host_rows_from(HISTORY_HOST_KEYS[0], start_s, end_s, max_points, from_s),
                memory.gpu_rows_from("memory_used_bytes", start_s, end_s, max_points, from_s),  # every GPU tells it
            )
        )
        for recent in recents:
            if recent is not None and len(recent.times_s):
                seen = recent.times_s[np.isfinite(recent.mean).any(axis=1)]
                in_memory.append((seen, recent.step_s))
                index = ((seen - data.times_s[0]) // data.step_s).astype(np.int64)
                recorded[index[(index >= 0) & (index < len(recorded))]] = True
        latest = memory.latest_s if math.isfinite(memory.latest_s) else end_s
        step_s = data.step_s
        edges = np.flatnonzero(np.diff(np.r_[0, (~recorded).astype(np.int8), 0]))
        on_disk = None
        if len(edges) and step_s <= EXACT_GAPS_STEP_S:
            on_disk = self._host_row_times(float(data.times_s[0]) - step_s, float(data.times_s[-1]) + 2 * step_s)
        spans = []
        for a, b in zip(edges[::2], edges[1::2], strict=True):
            first, last = float(data.times_s[a]), min(float(data.times_s[b - 1]) + step_s, latest)
            if on_disk is not None:
                first, last = _gap_edges(first, last, step_s, on_disk, in_memory)
            if last - first >= GAP_MIN_S and first < latest:
                spans.append((first, last))
        return spans

    def _host_row_times(self, start_s: float, end_s: float) -> np.ndarray:
        """The host's rows on disk in the range (each sample's), kept while the range stays; none
        where the store refuses them (the window asks again at its next redraw)."""
        key = (start_s, end_s)
        if self._row_times is not None and self._row_times[0] == key:
            return self._row_times[1]
        try:
            times = self.reader.row_times(HOST_UUID, start_s, end_s)
        except sqlite3.Error as error:
            self.failed_reads += 1
            log.warning("the history on disk could not be read: %s", error)
            return np.empty(0)
        self._row_times = (key, times)
        return times


def _gap_edges(
    first_s: float,
    last_s: float,
    step_s: float,
    on_disk: np.ndarray,
    in_memory: list[tuple[np.ndarray, float]],
) -> tuple[float, float]:
    """A span of empty buckets, ``first_s`` to ``last_s``, widened to the rows around it within a
    bucket: to the last row before it and the first after it, as the store has them (each
    sample's time). Memory's rows (in buckets) count where the store lacks them (refused, or newer
    than its newest row: not written yet), taken to their buckets' far ends: never over a row."""
    newest_on_disk = float(on_disk[-1]) if len(on_disk) else -math.inf
    before = on_disk[(on_disk >= first_s - step_s) & (on_disk < first_s)]
    ends = [
        float(t) + step
        for times, step in in_memory
        for t in times[(times >= first_s - step_s) & (times < first_s) & (times + step > newest_on_disk)]
    ]
    if len(before) or ends:
        first_s = max([*before[-1:].tolist(), *ends])
    after = on_disk[(on_disk >= last_s) & (on_disk < last_s + step_s)]
    if len(after):
        last_s = float(after[0])
    else:
        starts = [float(t) for times, _ in in_memory for t in times[(times >= last_s) & (times < last_s + step_s)]]
        last_s = min(starts) if starts else last_s
    return first_s, last_s


def _series(datas: list[tuple[CoarseData, int]]) -> Series:
    """One column of each device's buckets (data, column), side by side."""
    if not datas:
        return Series(np.empty(0), np.empty((0, 0)), np.empty((0, 0)), 60.0)
    n = min(len(d.times_s) for d, _ in datas)

    def stack(name: str) -> np.ndarray:
        return np.stack([getattr(d, name)[:n, column] for d, column in datas], axis=1).astype(np.float32)

    first = datas[0][0]
    return Series(first.times_s[:n], stack("mean"), stack("high"), first.step_s)


def _beside(before: CoarseData, more: CoarseData) -> CoarseData:
    """The buckets of the same range and step, ``more``'s keys after ``before``'s."""

    def join(name: str) -> np.ndarray:
        return np.concatenate([getattr(before, name), getattr(more, name)], axis=1)

    return replace(before, count=join("count"), low=join("low"), mean=join("mean"), high=join("high"))


def _unfilled_from_s(times_s: np.ndarray, step_s: float, filled: np.ndarray, memory: Rings, end_s: float) -> float:
    """When the first of the store's buckets begins that is not ``filled`` and memory may hold rows
    of (inf: none): memory is read from then (_with_memory fills no other), not from a week's start.
    A range past memory is read from its coarsest tier: its rows, each at the start of its bucket
    (up to a step before its first sample: 45 s against the store's minutes), from its first
    sample on, and no further back than the tier holds from the range's end (rows older than its
    span from its newest stay there where sampling paused)."""
    if not math.isfinite(memory.first_s):
        return math.inf  # nothing in memory
    tier = memory.tiers[-1]
    oldest = max(math.floor(memory.first_s / tier.step_s), math.floor(end_s / tier.step_s) - tier.capacity + 1)
    found = np.flatnonzero(~filled & (times_s + step_s > oldest * tier.step_s))
    return float(times_s[found[0]]) if len(found) else math.inf


def _with_memory(disk: Series, memory: Series | None) -> Series:
    """Buckets the disk has nothing for (the hour not yet packed) filled from memory's values."""
    if memory is None or not len(memory.times_s) or not len(disk.times_s) or disk.mean.shape[1] != memory.mean.shape[1]:
        return disk
    index = ((memory.times_s - disk.times_s[0]) // disk.step_s).astype(np.int64)
    # Only memory's rows in buckets the disk has nothing for: following live at 7 days, memory's
    # half a day of rows read each second, to fill the hour not yet packed.
    rows = np.flatnonzero((index >= 0) & (index < len(disk.times_s)))
    rows = rows[~np.isfinite(disk.mean[index[rows]]).any(axis=1)]
    rows = rows[np.isfinite(memory.mean[rows]).any(axis=1)]
    if not len(rows):
        return disk
    index, mean, high = index[rows], memory.mean[rows], memory.high[rows]
    first = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
    at = index[first]
    with np.errstate(invalid="ignore"):
        counts = np.add.reduceat(np.isfinite(mean).astype(np.float32), first, axis=0)
        sums = np.add.reduceat(np.nan_to_num(mean), first, axis=0)
        fill_mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    fill_high = np.fmax.reduceat(high, first, axis=0)
    out_mean, out_high = disk.mean.copy(), disk.high.copy()
    out_mean[at], out_high[at] = fill_mean, fill_high
    return Series(disk.times_s, out_mean, out_high, disk.step_s)


class History(Rings):
    """The timelines the window and the app read: memory's rings, and the store behind them.

    A range that starts before memory reaches is read from ``disk`` (the tray app's), joined with
    what memory holds of it; without a store it is memory alone."""

    def __init__(self, tiers: tuple[Tier, ...] | None = None) -> None:
        super().__init__(tiers)
        self.disk: DiskReach | None = None

    def append(self, sample: Sample) -> None:
        super().append(sample)
        if self.disk is not None and sample.devices:  # the store's past is joined to these GPUs by UUID
            self.disk.uuids = tuple(d.uuid for d in sample.devices)

    def _from_disk(self, start_s: float, memory_only: bool) -> DiskReach | None:
        return self.disk if self.disk is not None and not memory_only and start_s < self.reach_s else None

    def gpu_series(
        self, key: str, start_s: float, end_s: float, max_points: int, memory_only: bool = False
    ) -> Series | None:
        """``key`` for every GPU: columns of the result are GPU indices. None before any sample."""
        disk = self._from_disk(start_s, memory_only)
        if disk is not None and self.has_gpus:
            return disk.gpu_series(key, start_s, end_s, max_points, self)
        return super().gpu_series(key, start_s, end_s, max_points)

    def host_series(
        self, key: str, start_s: float, end_s: float, max_points: int, memory_only: bool = False
    ) -> Series | None:
        disk = self._from_disk(start_s, memory_only)
        if disk is not None and self.has_host:
            return disk.host_series(key, start_s, end_s, max_points, self)
        return super().host_series(key, start_s, end_s, max_points)

    def process_lines(
        self, start_s: float, end_s: float, max_points: int, memory_only: bool = False
    ) -> list[ProcessLine]:
        """Each GPU process (memory bytes and SM %) that held a GPU in the range, most memory first, on
        one grid of times: from the store where the range reaches before memory (last night's
        processes), with memory's values where the store has none yet (the last seconds)."""
        memory = self.processes.lines(start_s, end_s, max_points)
        disk = self._from_disk(start_s, memory_only)
        if disk is not None:
            times, step_s, stored = disk.process_lines(start_s, end_s, max_points)
        elif memory:
            step_s = max(line.series.step_s for line in memory)
            times = np.arange(math.floor(start_s / step_s), math.floor(end_s / step_s) + 1) * step_s
            stored = []
        else:
            return []
        nothing = np.full((len(times), PROCESS_COLUMNS), np.nan, dtype=np.float32)
        empty = Series(times, nothing, nothing, step_s)
        found = {line.key: line for line in stored}
        for line in memory:
            before = found.get(line.key)
            base = before.series if before is not None else empty
            if before is not None and line.job and line.job != before.job:
                before = replace(before, job_kind=line.job_kind, job=line.job)  # memory's is the newer
            found[line.key] = replace(before or line, series=_with_memory(base, line.series))
        lines = [line for line in found.values() if np.isfinite(line.series.mean).any()]
        return sorted(lines, key=lambda line: -peak(line, 0))
