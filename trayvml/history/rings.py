"""Memory's part of the history: numpy rings in tiers, every sample for minutes, mean/max buckets for hours."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from trayvml.core.clock import set_back_s
from trayvml.core.metrics import GPU_METRICS, HOST_METRICS
from trayvml.core.sample import DeviceInfo, Sample, renumbering

HISTORY_GPU_KEYS = tuple(m.key for m in GPU_METRICS if m.history)
HISTORY_HOST_KEYS = tuple(m.key for m in HOST_METRICS if m.history)
_GPU_COLUMNS = np.array([i for i, m in enumerate(GPU_METRICS) if m.history])
_HOST_COLUMNS = np.array([i for i, m in enumerate(HOST_METRICS) if m.history])
_GPU_POSITION = {key: i for i, key in enumerate(HISTORY_GPU_KEYS)}
_HOST_POSITION = {key: i for i, key in enumerate(HISTORY_HOST_KEYS)}


@dataclass(frozen=True)
class Tier:
    step_s: float
    capacity: int  # buckets kept

    @property
    def span_s(self) -> float:
        return self.step_s * self.capacity


def default_tiers(retention_s: float = 12 * 3600.0, sample_interval_s: float = 1.0) -> tuple[Tier, ...]:
    """Every sample for 16 min, 5 s buckets for 2 h, 30 s buckets out to ``retention_s``.

    16, not 15: the 15-minute view following live reads up to its lead (a twentieth of the range,
    45 s: ui.window.LEAD_SHARE) and a sample before the range, and a first tier short of that sent
    it to the 5 s buckets, whose newest point lags the live one by up to 5 s."""
    base = max(1.0, sample_interval_s)
    return (
        Tier(base, int(960 / base)),
        Tier(max(5.0, base), int(7200 / max(5.0, base))),
        Tier(max(30.0, base), max(1, math.ceil(retention_s / max(30.0, base)))),
    )


@dataclass(frozen=True)
class Series:
    """Time-ordered values for a range: ``times_s`` are bucket starts; NaN where no data.

    A bucket's mean and its highest value (its peak): the window draws means, the throttle
    reasons' strip a bucket's highest reason, and a process list ranks by peak memory. No lowest
    value: nothing shows one (``trayvml history`` reads the store's own, disk/read.py)."""

    times_s: np.ndarray  # shape (n,)
    mean: np.ndarray  # shape (n, columns)
    high: np.ndarray
    step_s: float


_PENDING_MAX = 64  # rows a coarser tier holds unfolded at most


class _Ring:
    """One tier. The first keeps every row; a coarser one keeps each bucket's mean and max (not its
    min: see Series): 8 GPUs' rings take 6.5 MiB for 2 h, 10.2 for 12 h (9.1 and 14.5 with it).

    A coarser tier's open bucket is folded in when it is read or when the bucket ends, not on every
    row: a row costs it a list append (a sample of 8 GPUs was ~10 numpy calls a tier, on the GUI
    thread, for every host shown). The fold gives what folding row by row gave, to the bit: sums
    in float64 in the rows' order, then the mean as float32 (tests/test_history_tiers.py).
    """

    def __init__(self, tier: Tier, columns: int, aggregated: bool) -> None:
        self.tier = tier
        # Values are left uninitialised: a slot counts only once ``slots`` says which bucket it
        # holds, and untouched pages cost no resident memory until the ring gets there.
        self.slots = np.full(tier.capacity, -1, dtype=np.int64)
        self.mean = np.empty((tier.capacity, columns), dtype=np.float32)
        self.aggregated = aggregated
        if aggregated:
            self.high = np.empty_like(self.mean)
            self._open_slot = -1
            self._pending: list[np.ndarray] = []  # the open bucket's rows not folded in yet
            self._written = True  # whether the open bucket's slot holds all its rows
            # The open bucket's rows folded so far (None: none): sum, count, high (float64).
            self._folded: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        else:
            self.high = self.mean

    @property
    def nbytes(self) -> int:
        total = self.slots.nbytes + self.mean.nbytes
        if self.aggregated:
            total += self.high.nbytes
        return total

    def append(self, t_s: float, row: np.ndarray) -> None:
        slot = int(t_s // self.tier.step_s)
        if not self.aggregated:
            position = slot % self.tier.capacity
            self.slots[position] = slot
            self.mean[position] = row
            return
        if slot != self._open_slot:
            self.flush()
            self._open_slot = slot
            self._folded = None
        self._pending.append(row)
        self._written = False
        if len(self._pending) >= _PENDING_MAX:  # many rows in one bucket (a burst, a clock stuck)
            self._fold()

    def _fold(self) -> None:
        """The pending rows into the open bucket's sum, count and high, as adding each row did.

        A sum goes row by row from 0 (numpy reduces the rows of an array of two or more columns in
        order, one column only in pairs; every ring has two or more), in a bucket read before it
        ended from its sum so far."""
        rows = np.array(self._pending, dtype=np.float64)
        self._pending = []
        present = ~np.isnan(rows)
        values = np.where(present, rows, 0.0)
        count = present.sum(axis=0)
        high = np.fmax.reduce(rows, axis=0)
        if self._folded is None:
            self._folded = (np.add.reduce(values, axis=0), count, high)
            return
        total, before, before_high = self._folded
        self._folded = (
            np.add.reduce(np.concatenate([total[None], values]), axis=0),
            before + count,
            np.fmax(before_high, high),
        )

    def flush(self) -> None:
        """Write the open bucket's slot (a coarser tier: before it is read, and when its bucket ends)."""
        if not self.aggregated or self._written:
            return
        if self._pending:
            self._fold()
        self._written = True
        if self._open_slot < 0 or self._folded is None:
            return
        total, count, high = self._folded
        position = self._open_slot % self.tier.capacity
        self.slots[position] = self._open_slot
        self.mean[position] = np.divide(total, count, out=np.full(len(total), np.nan), where=count > 0)
        self.high[position] = high

    def blank(self, columns: np.ndarray) -> None:
        """These columns' past let go: another GPU's values go in them from now on."""
        self.mean[:, columns] = np.nan
        if not self.aggregated:
            return
        self.high[:, columns] = np.nan
        if self._pending:
            self._fold()
        if self._folded is not None:
            total, count, high = self._folded
            total[columns], count[columns], high[columns] = 0.0, 0, np.nan

    def read(self, start_s: float, end_s: float, columns: np.ndarray | slice) -> Series:
        self.flush()
        step = self.tier.step_s
        first = int(start_s // step)
        last = int(end_s // step)
        first = max(first, last - self.tier.capacity + 1)
        wanted = np.arange(first, last + 1, dtype=np.int64)
        start = first % self.tier.capacity
        rows: np.ndarray | slice
        if start + len(wanted) <= self.tier.capacity:  # one stretch of the ring: sliced, not gathered
            rows = slice(start, start + len(wanted))
        else:
            rows = wanted % self.tier.capacity
        valid = self.slots[rows] == wanted

        def kept(values: np.ndarray) -> np.ndarray:
            # Only the columns asked for are copied (a GPU metric is one column in 8 × 48), with
            # np.take: indexing rows and columns at once took two to three times as long.
            if isinstance(rows, slice):
                picked = values[rows]
                # Sliced both ways, the values are a view of the ring, which goes on being written.
                picked = picked[:, columns].copy() if isinstance(columns, slice) else np.take(picked, columns, axis=1)
            else:  # the columns of every row, then the rows gathered from those
                picked = values[:, columns] if isinstance(columns, slice) else np.take(values, columns, axis=1)
                picked = np.take(picked, rows, axis=0)
            if not valid.all():
                picked[~valid] = np.nan
            return picked

        mean = kept(self.mean)
        return Series(wanted * step, mean, kept(self.high) if self.aggregated else mean, step)


class TieredRing:
    """Rows of ``columns`` float32 values at increasing times, kept in tiers."""

    def __init__(self, columns: int, tiers: tuple[Tier, ...]) -> None:
        self.columns = columns
        self.rings = [_Ring(tier, columns, aggregated=i > 0) for i, tier in enumerate(tiers)]
        self.latest_s = -math.inf

    @property
    def nbytes(self) -> int:
        return sum(ring.nbytes for ring in self.rings)

    def blank(self, columns: np.ndarray) -> None:
        for ring in self.rings:
            ring.blank(columns)

    def append(self, t_s: float, row: np.ndarray) -> None:
        # The newest time, or the time the wall clock was set back to: what a range up to now is
        # read against. Held at the time before the step (hours ahead, for a dual-boot machine
        # whose hardware clock keeps local time), a minute's range read 30 s buckets until then.
        self.latest_s = t_s if set_back_s(self.latest_s, t_s) else max(self.latest_s, t_s)
        for ring in self.rings:
            ring.append(t_s, row)

    def tier_for(self, start_s: float, end_s: float, max_points: int) -> _Ring:
        """The finest tier that covers the range within the point budget."""
        reach_s = self.latest_s - start_s
        for ring in self.rings:
            if (end_s - start_s) / ring.tier.step_s <= max_points and reach_s <= ring.tier.span_s:
                return ring
        return self.rings[-1]

    def read(
        self, start_s: float, end_s: float, max_points: int, columns: np.ndarray | slice, from_s: float = -math.inf
    ) -> Series:
        """``from_s``: only the rows from the one holding it on, of the tier the whole range is read from."""
        return self.tier_for(start_s, end_s, max_points).read(max(start_s, from_s), end_s, columns)


_NO_GPUS = np.empty((0, len(HISTORY_GPU_KEYS)), dtype=np.float32)


class Rings:
    """Every GPU's and the host's timelines in memory, appended one Sample at a time."""

    def __init__(self, tiers: tuple[Tier, ...] | None = None) -> None:
        self.tiers = tiers or default_tiers()
        self.processes = ProcessHistory()
        self.gpu_count = 0
        self.core_count = 0
        self._gpus: TieredRing | None = None
        self._host: TieredRing | None = None
        self.first_s = math.inf  # the time of the oldest row appended (inf: none yet)
        self._devices: tuple[DeviceInfo, ...] = ()  # the GPUs of the columns, as the last sample listing them

    @property
    def nbytes(self) -> int:
        rings = sum(ring.nbytes for ring in (self._gpus, self._host) if ring is not None)
        return rings + self.processes.nbytes

    @property
    def latest_s(self) -> float:
        return max((r.latest_s for r in (self._gpus, self._host) if r is not None), default=-math.inf)

    def append(self, sample: Sample) -> None:
        if sample.devices:
            self._follow_gpus(sample)
        self.processes.append(sample)
        # All GPUs' values in one conversion, then the columns kept.
        gpu_values = (
            np.array([g.values for g in sample.gpus], dtype=np.float32)[:, _GPU_COLUMNS] if sample.gpus else _NO_GPUS
        )
        host_values = None
        if sample.host is not None:
            values = np.asarray(sample.host.values, dtype=np.float32)[_HOST_COLUMNS]
            host_values = np.concatenate([values, np.asarray(sample.host.cpu_core_percent, dtype=np.float32)])
        self._append(sample.timestamp_s, gpu_values, host_values)

    def _follow_gpus(self, sample: Sample) -> None:
        """Another GPU in a column (a MIG instance destroyed and another made, the count the same):
        that column's past is the other GPU's, so it is let go; and the processes seen at an index
        whose GPU moved or went (renumbering, as the alerts follow them), or that no GPU has now
        (destroyed and made on different ticks), go with it. Kept, MIG-c in b's column was drawn
        with b's past, and b's jobs said to have run on it."""
        before, now = self._devices, sample.devices
        indices = {d.index for d in now}
        gone = set(renumbering(before, now)) | {d.index for d in before if d.index not in indices}
        if gone:
            self.processes.forget(frozenset(gone))
        if self._gpus is not None and len(now) == len(before):  # (a change of count begins afresh)
            pairs = zip(before, now, strict=True)
            moved = [k for k, (was, new) in enumerate(pairs) if was.uuid and new.uuid and was.uuid != new.uuid]
            if moved:
                width = len(HISTORY_GPU_KEYS)
                self._gpus.blank(np.concatenate([np.arange(k * width, (k + 1) * width) for k in moved]))
        self._devices = now

    def append_values(self, t_s: float, gpu_values: np.ndarray, host_values: np.ndarray | None = None) -> None:
        """One time's values, already arranged: ``gpu_values`` is GPUs × HISTORY_GPU_KEYS (none: no
        GPU row), ``host_values`` HISTORY_HOST_KEYS then one per core. Tests and benchmarks build
        hours of synthetic history this way, without making a Sample per second."""
        # Copies: the coarser tiers keep a row until its bucket is folded in, and a caller may
        # fill its array again for the next time.
        gpu_rows = np.array(gpu_values, dtype=np.float32)
        self._append(t_s, gpu_rows, None if host_values is None else np.array(host_values, dtype=np.float32))

    def _append(self, t_s: float, gpu_values: np.ndarray, host_values: np.ndarray | None) -> None:
        """``gpu_values`` and ``host_values``: float32 arrays of the ring's own, not changed after."""
        self.first_s = min(self.first_s, t_s)
        if len(gpu_values):
            if len(gpu_values) != self.gpu_count or self._gpus is None:
                self.gpu_count = len(gpu_values)  # a different set of GPUs: start afresh
                self._gpus = TieredRing(self.gpu_count * len(HISTORY_GPU_KEYS), self.tiers)
            self._gpus.append(t_s, gpu_values.reshape(-1))
        if host_values is not None:
            cores = len(host_values) - len(HISTORY_HOST_KEYS)
            if self._host is None or cores != self.core_count:
                self.core_count = cores
                self._host = TieredRing(len(host_values), self.tiers)
            self._host.append(t_s, host_values)

    @property
    def has_gpus(self) -> bool:
        return self._gpus is not None

    @property
    def has_host(self) -> bool:
        return self._host is not None

    @property
    def reach_s(self) -> float:
        """How far back memory reaches."""
        return self.latest_s - self.tiers[-1].span_s

    def gpu_series(self, key: str, start_s: float, end_s: float, max_points: int) -> Series | None:
        """``key`` for every GPU: columns of the result are GPU indices. None before any sample."""
        return self.gpu_rows_from(key, start_s, end_s, max_points, -math.inf)

    def host_series(self, key: str, start_s: float, end_s: float, max_points: int) -> Series | None:
        return self.host_rows_from(key, start_s, end_s, max_points, -math.inf)

    def gpu_rows_from(self, key: str, start_s: float, end_s: float, max_points: int, from_s: float) -> Series | None:
        """gpu_series' rows from ``from_s`` on alone, of the tier the whole range is read from (the
        store's reader fills from memory only what the store has not got yet)."""
        if self._gpus is None:
            return None
        stride = len(HISTORY_GPU_KEYS)
        columns = np.arange(self.gpu_count) * stride + _GPU_POSITION[key]
        return self._gpus.read(start_s, end_s, max_points, columns, from_s)

    def host_rows_from(self, key: str, start_s: float, end_s: float, max_points: int, from_s: float) -> Series | None:
        """host_series' rows from ``from_s`` on alone (gpu_rows_from)."""
        if self._host is None:
            return None
        return self._host.read(start_s, end_s, max_points, np.array([_HOST_POSITION[key]]), from_s)

    def core_series(self, start_s: float, end_s: float, max_points: int) -> Series | None:
        """Per-core CPU %: one column per core."""
        if self._host is None:
            return None
        return self._host.read(start_s, end_s, max_points, slice(len(HISTORY_HOST_KEYS), None))


# While nothing shown needs them, the tray reads the process lists this often (for the history on
# disk): memory's finest process tier has the same step, so that those readings draw lines, not dots.
PROCESS_STEP_S = 10.0
PROCESS_TIERS = (Tier(PROCESS_STEP_S, 90), Tier(30.0, 1440))  # 15 min at 10 s, then 12 h at 30 s
# Four a GPU for eight GPUs, each with its memory and SM share: with the GPM activity and margin
# metrics (12 more timelines a GPU), the worst case stays within the 16 MiB the history may take
# for 8 GPUs over 12 h (PERFORMANCE.md P6). Older and more processes are on disk (disk/processes.py).
MAX_TRACKED_PROCESSES = 32
PROCESS_COLUMNS = 2  # a process's memory (bytes) and its share of the SMs (%)


@dataclass(frozen=True)
class ProcessLine:
    """A process's (or a job's) timeline: ``series`` has two columns, memory bytes and SM %."""

    gpu_index: int
    pid: int  # 0 for a job's sum
    started_s: float  # NaN: unknown (or a job's sum)
    name: str
    user: str
    job_kind: str  # ProcessSample.job: "notebook", "container", ..., "pid" (the process itself)
    job: str
    series: Series

    @property
    def key(self) -> tuple[int | str, ...]:
        """Who the line is, the same in memory and on disk, redraw after redraw: the process (GPU,
        PID, start in ms), or for a job's sum (pid 0) the GPU and the job."""
        if not self.pid:
            return self.gpu_index, self.job_kind, self.job
        return self.gpu_index, self.pid, round(self.started_s * 1000) if math.isfinite(self.started_s) else 0


@dataclass
class _TrackedProcess:
    line: ProcessLine  # its facts; the series is read from ``ring``
    ring: TieredRing
    last_seen_s: float
    last_seen_sample: int  # which sample last named it: what goes first at the cap (not its time,
    # which a wall clock set back makes earlier for the processes still running than for those gone)


class ProcessHistory:
    """GPU memory and SM share of each process over time, for at most MAX_TRACKED_PROCESSES processes."""

    def __init__(self) -> None:
        self._processes: dict[tuple[int, int, float], _TrackedProcess] = {}
        self._samples = 0  # appended so far
        self._latest_s = -math.inf  # the last sample's time
        self._retired = 0  # processes of no told start time whose PID went to another (their keys)

    @property
    def nbytes(self) -> int:
        return sum(p.ring.nbytes for p in self._processes.values())

    def append(self, sample: Sample) -> None:
        self._samples += 1
        # The wall clock set back: a process gone before it was last seen that much earlier (else it
        # was in every range, an empty line, until the clock caught up).
        back_s = set_back_s(self._latest_s, sample.timestamp_s)
        if back_s:
            for seen in self._processes.values():
                seen.last_seen_s -= back_s
        self._latest_s = sample.timestamp_s
        for gpu in sample.gpus:
            for proc in gpu.processes:
                started = proc.started_s if math.isfinite(proc.started_s) else 0.0
                key = (gpu.index, proc.pid, started)  # a later process with the PID is another
                tracked = self._processes.get(key)
                kind, job = proc.job
                if tracked is not None and not started and proc.name and tracked.line.name not in ("", proc.name):
                    # Its start not told (a remote host's, ssh's): a PID given to a process of
                    # another name is another process. Kept, "ffmpeg (4100)" took python's 30 GiB
                    # line and name. The one before keeps its line, under a key of its own.
                    self._retired += 1
                    retired = (gpu.index, proc.pid, -float(self._retired))
                    self._processes[retired] = tracked
                    tracked.line = replace(tracked.line, started_s=retired[2])
                    del self._processes[key]
                    tracked = None
                if tracked is None:
                    if len(self._processes) >= MAX_TRACKED_PROCESSES:
                        oldest = min(self._processes, key=lambda k: self._processes[k].last_seen_sample)
                        del self._processes[oldest]  # the one that exited longest ago
                    line = ProcessLine(gpu.index, proc.pid, proc.started_s, proc.name, proc.user, kind, job, _EMPTY)
                    tracked = _TrackedProcess(line, TieredRing(PROCESS_COLUMNS, PROCESS_TIERS), 0.0, 0)
                    self._processes[key] = tracked
                elif (job and job != tracked.line.job) or (proc.name and proc.name != tracked.line.name):
                    # Its job is often named only once its notebook or container is read.
                    tracked.line = replace(
                        tracked.line, name=proc.name or tracked.line.name, job_kind=kind, job=job or tracked.line.job
                    )
                tracked.last_seen_s, tracked.last_seen_sample = sample.timestamp_s, self._samples
                row = np.array([proc.used_memory_bytes, proc.sm_util_percent], dtype=np.float32)
                tracked.ring.append(sample.timestamp_s, row)

    def forget(self, gpus: frozenset[int]) -> None:
        """The processes seen on these GPU indices let go: another GPU has the index now."""
        self._processes = {key: seen for key, seen in self._processes.items() if key[0] not in gpus}

    def lines(self, start_s: float, end_s: float, max_points: int) -> list[ProcessLine]:
        """Each process seen in the range (memory and SM %), most memory first."""
        found = []
        for tracked in self._processes.values():
            if tracked.last_seen_s < start_s:
                continue
            series = tracked.ring.read(start_s, end_s, max_points, np.arange(PROCESS_COLUMNS))
            found.append(replace(tracked.line, series=series))
        return sorted(found, key=lambda line: -peak(line, 0))


_EMPTY = Series(np.empty(0), np.empty((0, PROCESS_COLUMNS)), np.empty((0, 0)), 1.0)


def peak(line: ProcessLine, column: int) -> float:
    """The line's highest value of ``column`` (0 where it has none)."""
    values = line.series.high[:, column] if line.series.high.size else line.series.mean[:, column]
    return float(np.nanmax(values)) if np.isfinite(values).any() else 0.0


def by_job(lines: list[ProcessLine]) -> list[ProcessLine]:
    """A line per job and GPU: its processes' memory and SM shares added up (NaN where none has a
    value). Lines must share their times (as History.process_lines gives them)."""
    groups: dict[tuple[int, str, str], list[ProcessLine]] = {}
    for line in lines:
        groups.setdefault((line.gpu_index, line.job_kind, line.job), []).append(line)
    found = []
    for (gpu, kind, job), members in groups.items():
        if len(members) == 1 and members[0].job_kind == "pid":
            found.append(members[0])  # the process is its own job
            continue
        n = min(len(m.series.times_s) for m in members)

        def total(name: str, members: list[ProcessLine] = members, n: int = n) -> np.ndarray:
            stacked = np.stack([getattr(m.series, name)[:n] for m in members])
            summed = np.nansum(stacked, axis=0)
            return np.where(np.isfinite(stacked).any(axis=0), summed, np.nan).astype(np.float32)

        first = members[0].series
        series = Series(first.times_s[:n], total("mean"), total("high"), first.step_s)
        users = {m.user for m in members}
        found.append(ProcessLine(gpu, 0, math.nan, "", users.pop() if len(users) == 1 else "", kind, job, series))
    return sorted(found, key=lambda line: -peak(line, 0))
