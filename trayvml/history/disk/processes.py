"""The GPU processes in the history on disk: each process's used memory and SM share over time.

A process is (GPU, PID, start time): a later process the kernel gave the same PID is another one.
Its name, user and job (kind and name, see ProcessSample.job) are kept once, in ``processes``;
its values in ``process_blocks``, in the tiers of the GPU blocks (db.py): FRESH blocks as they
are written, an hour's FINE block (each sample) and COARSE block (per minute: count, mean, max)
once the hour is over, the coarse blocks of a UTC day merged into one. Only the biggest
``Limits.processes_per_gpu`` processes of each GPU are kept per flush (by peak memory, then SM
share): a box running hundreds of short jobs does not fill the store with them.

A block is two integer matrices (codec.py): the times, then per row the process's id, its memory
in MiB, its SM % and what was missing (fine); or per minute the process's id, the count of
memory values, their sum and max, and the same of the SM % (coarse). Rows are sorted by process,
then time: a process's id is a run of zero deltas.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from trayvml.core.units import MIB
from trayvml.history.disk import codec
from trayvml.history.disk.db import BUCKET_MS, DAY_MS, FRESH_LEVEL, HOUR_MS, PACKED_LEVEL, Database, Tier

if TYPE_CHECKING:
    from trayvml.core.sample import ProcessSample

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS processes(
    id INTEGER PRIMARY KEY, device INTEGER NOT NULL, pid INTEGER NOT NULL, started_ms INTEGER NOT NULL,
    name TEXT NOT NULL, user TEXT NOT NULL, job_kind TEXT NOT NULL, job TEXT NOT NULL,
    first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL, UNIQUE(device, pid, started_ms));
CREATE INDEX IF NOT EXISTS processes_by_time ON processes(device, last_ms);
CREATE TABLE IF NOT EXISTS process_blocks(
    id INTEGER PRIMARY KEY, device INTEGER NOT NULL, tier INTEGER NOT NULL,
    start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, rows INTEGER NOT NULL, crc INTEGER NOT NULL,
    data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS process_blocks_by_time ON process_blocks(device, tier, end_ms);
"""

UNKNOWN_START_MS = 0  # a process whose start time the host could not read (another PID namespace)
_MEMORY_MISSING, _SM_MISSING = 1, 2  # the fine rows' flags
# Fine rows: process, memory MiB, SM %, flags. Coarse rows: process, then count, sum, max of each.
_FINE_COLUMNS, _COARSE_COLUMNS = 4, 7


@dataclass(frozen=True)
class StoredProcess:
    """A process as the store knows it (times in seconds since the epoch)."""

    id: int
    uuid: str
    pid: int
    started_s: float  # NaN: unknown
    name: str
    user: str
    job_kind: str  # ProcessSample.job's kind: "notebook", "container", ..., "pid" (the process itself)
    job: str
    first_s: float
    last_s: float


@dataclass(frozen=True)
class ProcessSeries:
    """One process's values in buckets of ``step_s`` from ``times_s[0]`` on; NaN where it held no GPU."""

    process: StoredProcess
    times_s: np.ndarray
    memory_bytes: np.ndarray  # the bucket's mean
    memory_peak_bytes: np.ndarray
    sm_percent: np.ndarray  # the bucket's mean
    step_s: float


@dataclass(frozen=True)
class ProcessRow:
    """A sample of a process (interval 0), or a minute's mean (interval 60 s)."""

    t_s: float
    process: StoredProcess
    memory_bytes: float  # NaN: not known
    sm_percent: float  # NaN: not known
    interval_s: float


# ---- writing ----


class PendingProcesses:
    """The processes of the samples not yet committed, per GPU (StoreWriter's)."""

    def __init__(self) -> None:
        # Per GPU UUID: rows of (time ms, pid, start ms, memory bytes, SM %).
        self._rows: dict[str, list[tuple[int, int, int, float, float]]] = {}
        self._facts: dict[str, dict[str, object]] = {}
        self._meta: dict[tuple[str, int, int], tuple[str, str, str, str]] = {}

    def add(self, uuid: str, facts: dict[str, object], t_ms: int, processes: tuple[ProcessSample, ...]) -> None:
        if not processes:
            return
        rows = self._rows.setdefault(uuid, [])
        self._facts[uuid] = facts
        for p in processes:
            started_ms = round(p.started_s * 1000) if math.isfinite(p.started_s) else UNKNOWN_START_MS
            rows.append((t_ms, p.pid, started_ms, p.used_memory_bytes, p.sm_util_percent))
            kind, job = p.job
            self._meta[(uuid, p.pid, started_ms)] = (p.name, p.user, kind, job)

    def drop_before(self, keep_ms: int) -> None:
        """While the store cannot be written: keep only rows from ``keep_ms`` on."""
        for uuid, rows in self._rows.items():
            self._rows[uuid] = [r for r in rows if r[0] >= keep_ms]

    def write(self, db: Database, per_gpu: int) -> None:
        """Insert what waits as FRESH blocks, in the caller's transaction (then ``clear``); the biggest ``per_gpu``
        processes of each GPU over the rows waiting (0: none is kept)."""
        for uuid, rows in self._rows.items():
            if not rows or per_gpu <= 0:
                continue
            device = db.device_id(uuid, self._facts[uuid])
            peaks: dict[tuple[int, int], tuple[float, float]] = {}
            spans: dict[tuple[int, int], tuple[int, int]] = {}  # first and last time (ms) in the rows
            for t_ms, pid, started_ms, memory_bytes, sm_percent in rows:  # NaN (not known) counts as 0
                mem_peak, sm_peak = peaks.get((pid, started_ms), (0.0, 0.0))
                peaks[(pid, started_ms)] = (
                    max(mem_peak, 0.0 if math.isnan(memory_bytes) else memory_bytes),
                    max(sm_peak, 0.0 if math.isnan(sm_percent) else sm_percent),
                )
                first_ms, last_ms = spans.get((pid, started_ms), (t_ms, t_ms))
                spans[(pid, started_ms)] = (min(first_ms, t_ms), max(last_ms, t_ms))
            kept = sorted(peaks, key=lambda k: peaks[k], reverse=True)[:per_gpu]
            ids = {key: _process_id(db, device, uuid, key, self._meta, spans[key]) for key in kept}
            chosen = [r for r in rows if (r[1], r[2]) in ids]
            times = np.array([r[0] for r in chosen], dtype=np.int64)
            memory = np.array([r[3] for r in chosen], dtype=np.float64)
            sm = np.array([r[4] for r in chosen], dtype=np.float64)
            process = np.array([ids[(r[1], r[2])] for r in chosen], dtype=np.int64)
            _insert(db, device, Tier.FRESH, _fine_matrices(times, process, memory, sm), FRESH_LEVEL)

    def clear(self) -> None:
        """What was written is committed (kept until then: a failed commit writes it again)."""
        self._rows.clear()
        self._meta.clear()


def _process_id(
    db: Database,
    device: int,
    uuid: str,
    key: tuple[int, int],
    meta: dict[tuple[str, int, int], tuple[str, str, str, str]],
    span_ms: tuple[int, int],
) -> int:
    """The process's id, its facts and span (``span_ms``: its first and last time in the rows
    waiting) brought up to date (a job is often named only once its notebook or container is read,
    a few samples after the process appears)."""
    pid, started_ms = key
    name, user, kind, job = meta[(uuid, pid, started_ms)]
    first_ms, last_ms = span_ms
    connection = db.connection
    row = connection.execute(
        "SELECT id, name, user, job_kind, job, first_ms, last_ms FROM processes "
        "WHERE device = ? AND pid = ? AND started_ms = ?",
        (device, pid, started_ms),
    ).fetchone()
    if row is None:
        cursor = connection.execute(
            "INSERT INTO processes(device, pid, started_ms, name, user, job_kind, job, first_ms, last_ms) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (device, pid, started_ms, name, user, kind, job, first_ms, last_ms),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid
    # An empty name or job (not yet read, or no permission) never replaces a known one.
    new = (name or row[1], user or row[2], kind if job else row[3], job or row[4], min(first_ms, row[5]))
    if new != tuple(row[1:6]) or last_ms > row[6]:
        connection.execute(
            "UPDATE processes SET name = ?, user = ?, job_kind = ?, job = ?, first_ms = ?, last_ms = ? WHERE id = ?",
            (*new, max(last_ms, row[6]), row[0]),
        )
    return int(row[0])


def _fine_matrices(times: np.ndarray, process: np.ndarray, memory: np.ndarray, sm: np.ndarray) -> list[np.ndarray]:
    flags = np.where(np.isnan(memory), _MEMORY_MISSING, 0) | np.where(np.isnan(sm), _SM_MISSING, 0)
    memory_mib = np.rint(np.nan_to_num(memory) / MIB).astype(np.int64)
    sm_q = np.rint(np.nan_to_num(sm)).astype(np.int64)
    return _sorted([times[None, :], np.stack([process, memory_mib, sm_q, flags.astype(np.int64)])])


def _sorted(matrices: list[np.ndarray]) -> list[np.ndarray]:
    """Rows ordered by process, then time: a process's rows are runs of small deltas."""
    order = np.lexsort((matrices[0][0], matrices[1][0]))
    return [m[:, order] for m in matrices]


def _coarse_from_fine(fine: list[np.ndarray]) -> list[np.ndarray]:
    """Per process and minute: count, sum and max of the memory (MiB) and of the SM % present."""
    times, (process, memory, sm, flags) = fine[0][0], fine[1]
    if not len(times):
        return [np.zeros((1, 0), dtype=np.int64), np.zeros((_COARSE_COLUMNS, 0), dtype=np.int64)]
    buckets = times - times % BUCKET_MS
    order = np.lexsort((buckets, process))
    buckets, process, memory, sm, flags = buckets[order], process[order], memory[order], sm[order], flags[order]
    first = np.flatnonzero(np.r_[True, (buckets[1:] != buckets[:-1]) | (process[1:] != process[:-1])])
    columns = [process[first]]
    for values, missing in ((memory, _MEMORY_MISSING), (sm, _SM_MISSING)):
        present = (flags & missing) == 0
        columns.append(np.add.reduceat(present.astype(np.int64), first))
        columns.append(np.add.reduceat(np.where(present, values, 0), first))
        columns.append(np.maximum.reduceat(np.where(present, values, 0), first))
    return [buckets[first][None, :], np.stack(columns)]


def _insert(db: Database, device: int, tier: Tier, matrices: list[np.ndarray], level: int) -> None:
    times = matrices[0][0]
    if not len(times):
        return
    data, crc = codec.encode(matrices, level)
    db.connection.execute(
        "INSERT INTO process_blocks(device, tier, start_ms, end_ms, rows, crc, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (device, int(tier), int(times.min()), int(times.max()), len(times), crc, data),
    )


@dataclass(frozen=True)
class _Block:
    id: int
    device: int
    tier: Tier
    start_ms: int
    end_ms: int
    crc: int
    data: bytes


def _blocks(db: Database, device: int, tiers: tuple[Tier, ...], start_ms: int, end_ms: int) -> list[_Block]:
    marks = ",".join("?" * len(tiers))
    rows = db.connection.execute(
        f"SELECT id, device, tier, start_ms, end_ms, crc, data FROM process_blocks "
        f"WHERE device = ? AND tier IN ({marks}) AND end_ms >= ? AND start_ms <= ? ORDER BY start_ms, id",
        (device, *map(int, tiers), start_ms, end_ms),
    ).fetchall()
    return [_Block(r[0], r[1], Tier(r[2]), r[3], r[4], r[5], r[6]) for r in rows]


def _decode(block: _Block) -> list[np.ndarray] | None:
    try:
        matrices = codec.decode(block.data, block.crc, 2)
    except codec.DamagedBlockError as error:
        log.warning("a damaged block of process history was skipped (%s)", error)
        return None
    expected = _COARSE_COLUMNS if block.tier is Tier.COARSE else _FINE_COLUMNS
    if matrices[1].shape[0] != expected:
        log.warning("a block of process history with %d columns was skipped", matrices[1].shape[0])
        return None
    return matrices


def compact(db: Database, now_ms: int) -> None:
    """Fresh blocks of UTC hours that are over become one FINE and one COARSE block each; the
    COARSE blocks of each UTC day touched are merged into one."""
    hour_ms = now_ms - now_ms % HOUR_MS
    devices = [r[0] for r in db.connection.execute("SELECT DISTINCT device FROM process_blocks WHERE tier = 0")]
    for device in devices:
        fresh = [b for b in _blocks(db, device, (Tier.FRESH,), 0, hour_ms - 1) if b.start_ms < hour_ms]
        if not fresh:
            continue
        hours: dict[int, list[_Block]] = {}
        for block in fresh:
            hours.setdefault(block.start_ms // HOUR_MS, []).append(block)
        with db.transaction():
            for blocks in hours.values():
                parts = [m for m in map(_decode, blocks) if m is not None]
                if parts:
                    fine = _sorted([np.concatenate([p[k] for p in parts], axis=1) for k in range(2)])
                    _insert(db, device, Tier.FINE, fine, PACKED_LEVEL)
                    _insert(db, device, Tier.COARSE, _coarse_from_fine(fine), PACKED_LEVEL)
                db.connection.executemany("DELETE FROM process_blocks WHERE id = ?", [(b.id,) for b in blocks])
            for day in {b.start_ms // DAY_MS for b in fresh}:
                _merge_day(db, device, day)


def _merge_day(db: Database, device: int, day: int) -> None:
    start_ms, end_ms = day * DAY_MS, (day + 1) * DAY_MS - 1
    coarse = [b for b in _blocks(db, device, (Tier.COARSE,), start_ms, end_ms) if start_ms <= b.start_ms <= end_ms]
    if len(coarse) < 2:
        return
    parts = [m for m in map(_decode, coarse) if m is not None]
    db.connection.executemany("DELETE FROM process_blocks WHERE id = ?", [(b.id,) for b in coarse])
    if parts:  # the hours do not overlap: their minutes are put side by side
        merged = _sorted([np.concatenate([p[k] for p in parts], axis=1) for k in range(2)])
        _insert(db, device, Tier.COARSE, merged, PACKED_LEVEL)


def prune(db: Database, fine_cut_ms: int, coarse_cut_ms: int) -> None:
    """Past their tier's span (in the caller's transaction): blocks, then processes left without any."""
    connection = db.connection
    connection.execute("DELETE FROM process_blocks WHERE tier IN (0, 1) AND end_ms < ?", (fine_cut_ms,))
    connection.execute("DELETE FROM process_blocks WHERE tier = 2 AND end_ms < ?", (coarse_cut_ms,))
    connection.execute("DELETE FROM processes WHERE last_ms < ?", (coarse_cut_ms,))


def data_bytes(db: Database) -> int:
    return int(db.connection.execute("SELECT COALESCE(SUM(LENGTH(data)), 0) FROM process_blocks").fetchone()[0])


# ---- reading ----


def has_processes(db: Database) -> bool:
    """Whether the file has the process tables (a store written before them has not: nothing to read)."""
    row = db.connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'process_blocks'")
    return row.fetchone() is not None


def stored_processes(db: Database, uuid: str, start_s: float, end_s: float) -> dict[int, StoredProcess]:
    """The GPU's processes that held it at some time in the range, by id."""
    if not has_processes(db):
        return {}
    rows = db.connection.execute(
        "SELECT p.id, p.pid, p.started_ms, p.name, p.user, p.job_kind, p.job, p.first_ms, p.last_ms "
        "FROM processes p JOIN devices d ON d.id = p.device WHERE d.uuid = ? AND p.last_ms >= ? AND p.first_ms <= ?",
        (uuid, math.floor(start_s * 1000), math.ceil(end_s * 1000)),
    ).fetchall()
    return {
        int(r[0]): StoredProcess(
            int(r[0]),
            uuid,
            int(r[1]),
            r[2] / 1000 if r[2] != UNKNOWN_START_MS else math.nan,
            str(r[3]),
            str(r[4]),
            str(r[5]),
            str(r[6]),
            r[7] / 1000,
            r[8] / 1000,
        )
        for r in rows
    }


def _device(db: Database, uuid: str) -> int | None:
    row = db.connection.execute("SELECT id FROM devices WHERE uuid = ?", (uuid,)).fetchone()
    return None if row is None else int(row[0])


def fine_start_s(db: Database, uuid: str) -> float | None:
    """When the GPU's every-sample process rows begin (older ones are minutes), or None."""
    device = _device(db, uuid) if has_processes(db) else None
    if device is None:
        return None
    row = db.connection.execute(
        "SELECT MIN(start_ms) FROM process_blocks WHERE device = ? AND tier IN (0, 1)", (device,)
    ).fetchone()
    return None if row[0] is None else row[0] / 1000


def _grid(start_s: float, end_s: float, step_s: float) -> tuple[int, int, int]:
    """(first bucket's start, step, count) in ms of whole-minute buckets covering the range."""
    step_ms = max(1, round(step_s * 1000 / BUCKET_MS)) * BUCKET_MS
    first_ms = math.floor(start_s * 1000 / step_ms) * step_ms
    return first_ms, step_ms, max(0, math.floor(end_s * 1000 / step_ms) * step_ms - first_ms) // step_ms + 1


def grid(start_s: float, end_s: float, step_s: float) -> tuple[np.ndarray, float]:
    """The bucket starts (s) and step (s) that ``series`` gives for the range."""
    first_ms, step_ms, n = _grid(start_s, end_s, step_s)
    return (first_ms + np.arange(n) * step_ms) / 1000, step_ms / 1000


def series(db: Database, uuid: str, start_s: float, end_s: float, step_s: float) -> list[ProcessSeries]:
    """Each process of the GPU that held it in the range, in buckets of ``step_s`` (whole minutes)
    from the per-minute tier and the hour not yet packed; biggest peak memory first."""
    processes = stored_processes(db, uuid, start_s, end_s)
    device = _device(db, uuid)
    if not processes or device is None:
        return []
    first_ms, step_ms, n = _grid(start_s, end_s, step_s)
    ids = np.array(sorted(processes), dtype=np.int64)
    shape = (len(ids), n)
    mem_count, mem_sum, mem_max = np.zeros(shape), np.zeros(shape), np.full(shape, -np.inf)
    sm_count, sm_sum = np.zeros(shape), np.zeros(shape)
    for block in _blocks(db, device, (Tier.COARSE, Tier.FRESH), first_ms, first_ms + n * step_ms):
        matrices = _decode(block)
        if matrices is None:
            continue
        if block.tier is Tier.FRESH:
            matrices = _coarse_from_fine(matrices)
        starts, (process, m_count, m_sum, m_max, s_count, s_sum, _) = matrices[0][0], matrices[1]
        at = (starts - first_ms) // step_ms
        row = np.searchsorted(ids, process)
        inside = (at >= 0) & (at < n) & (row < len(ids))
        inside[inside] &= ids[row[inside]] == process[inside]
        at, row = at[inside], row[inside]
        np.add.at(mem_count, (row, at), m_count[inside])
        np.add.at(mem_sum, (row, at), m_sum[inside])
        np.maximum.at(mem_max, (row, at), np.where(m_count[inside] > 0, m_max[inside], -np.inf))
        np.add.at(sm_count, (row, at), s_count[inside])
        np.add.at(sm_sum, (row, at), s_sum[inside])
    times = (first_ms + np.arange(n) * step_ms) / 1000
    with np.errstate(invalid="ignore", divide="ignore"):
        memory = np.where(mem_count > 0, mem_sum / mem_count, np.nan) * MIB
        peak = np.where(mem_count > 0, mem_max, np.nan) * MIB
        sm = np.where(sm_count > 0, sm_sum / sm_count, np.nan)
    found = [
        ProcessSeries(processes[int(i)], times, memory[k], peak[k], sm[k], step_ms / 1000)
        for k, i in enumerate(ids)
        if (mem_count[k] > 0).any() or (sm_count[k] > 0).any()
    ]
    found.sort(key=lambda s: -float(np.nanmax(s.memory_peak_bytes, initial=0.0)))
    return found


def rows(db: Database, uuid: str, start_s: float, end_s: float) -> Iterator[ProcessRow]:
    """The GPU's process rows in the range, oldest first, one UTC hour at a time (at most an hour of
    rows held): every sample where the fine tiers have them, each minute's mean before."""
    processes = stored_processes(db, uuid, start_s, end_s)
    device = _device(db, uuid)
    if not processes or device is None:
        return
    fine_from = fine_start_s(db, uuid)
    fine_ms = round(fine_from * 1000) if fine_from is not None else None
    # Minutes before the every-sample rows (a minute they begin in is theirs: its samples are there).
    fine_minute_ms = fine_ms - fine_ms % BUCKET_MS if fine_ms is not None else None
    t_ms = max(0, math.floor(start_s * 1000))
    end_ms = math.floor(end_s * 1000)
    while t_ms <= end_ms:
        stop_ms = min(end_ms, (t_ms // HOUR_MS + 1) * HOUR_MS - 1)
        found: list[tuple[int, int, float, float, float]] = []  # time, process, memory, SM, interval
        if fine_minute_ms is None or t_ms < fine_minute_ms:
            until_ms = min(stop_ms, fine_minute_ms - 1) if fine_minute_ms is not None else stop_ms
            for block in _blocks(db, device, (Tier.COARSE,), t_ms, until_ms):
                matrices = _decode(block)
                if matrices is None:
                    continue
                starts, (process, m_count, m_sum, _, s_count, s_sum, _) = matrices[0][0], matrices[1]
                inside = (starts >= t_ms) & (starts <= until_ms)
                with np.errstate(invalid="ignore", divide="ignore"):
                    memory = np.where(m_count > 0, m_sum / np.maximum(m_count, 1) * MIB, np.nan)
                    sm = np.where(s_count > 0, s_sum / np.maximum(s_count, 1), np.nan)
                for k in np.flatnonzero(inside).tolist():
                    found.append((int(starts[k]), int(process[k]), float(memory[k]), float(sm[k]), 60.0))
        if fine_ms is not None and stop_ms >= fine_ms:
            for block in _blocks(db, device, (Tier.FRESH, Tier.FINE), max(t_ms, fine_ms), stop_ms):
                matrices = _decode(block)
                if matrices is None:
                    continue
                times, (process, memory_mib, sm_q, flags) = matrices[0][0], matrices[1]
                inside = (times >= max(t_ms, fine_ms)) & (times <= stop_ms)
                memory = np.where(flags & _MEMORY_MISSING, np.nan, memory_mib * float(MIB))
                sm = np.where(flags & _SM_MISSING, np.nan, sm_q.astype(np.float64))
                for k in np.flatnonzero(inside).tolist():
                    found.append((int(times[k]), int(process[k]), float(memory[k]), float(sm[k]), 0.0))
        found.sort(key=lambda r: (r[0], r[1]))
        for t, process_id, memory_bytes, sm_percent, interval_s in found:
            process = processes.get(process_id)
            if process is not None:
                # A sample: the middle of its stored millisecond, as the GPU export prints it.
                t_s = t / 1000 + (0.0005 if not interval_s else 0.0)
                yield ProcessRow(t_s, process, memory_bytes, sm_percent, interval_s)
        t_ms = stop_ms + 1
