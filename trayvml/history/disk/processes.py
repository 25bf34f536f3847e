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
then time: a process's id is a run of zero deltas. The writer's side (the processes waiting, their
fresh blocks, pruning) is pending.py's, without numpy; packing and reading are here.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from trayvml.core.units import MIB
from trayvml.history.disk import codec
from trayvml.history.disk.db import BUCKET_MS, DAY_MS, HOUR_MS, PACKED_LEVEL, Database, Tier
from trayvml.history.disk.pending import (
    COARSE_COLUMNS,
    FINE_COLUMNS,
    MEMORY_MISSING,
    SM_MISSING,
    UNKNOWN_START_MS,
    insert_block,
)

log = logging.getLogger(__name__)


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


# ---- packing (pack.py) ----


def _sorted(matrices: list[np.ndarray]) -> list[np.ndarray]:
    """Rows ordered by process, then time: a process's rows are runs of small deltas."""
    order = np.lexsort((matrices[0][0], matrices[1][0]))
    return [m[:, order] for m in matrices]


def _coarse_from_fine(fine: list[np.ndarray]) -> list[np.ndarray]:
    """Per process and minute: count, sum and max of the memory (MiB) and of the SM % present."""
    times, (process, memory, sm, flags) = fine[0][0], fine[1]
    if not len(times):
        return [np.zeros((1, 0), dtype=np.int64), np.zeros((COARSE_COLUMNS, 0), dtype=np.int64)]
    buckets = times - times % BUCKET_MS
    order = np.lexsort((buckets, process))
    buckets, process, memory, sm, flags = buckets[order], process[order], memory[order], sm[order], flags[order]
    first = np.flatnonzero(np.r_[True, (buckets[1:] != buckets[:-1]) | (process[1:] != process[:-1])])
    columns = [process[first]]
    for values, missing in ((memory, MEMORY_MISSING), (sm, SM_MISSING)):
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
    insert_block(db, device, tier, (int(times.min()), int(times.max()), len(times)), data, crc)


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
    expected = COARSE_COLUMNS if block.tier is Tier.COARSE else FINE_COLUMNS
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
    # The hours stepped through are those the GPU's blocks span, not all of a range asked for
    # (one reaching to the year 9999 took hours over nothing).
    first_ms, last_ms = db.connection.execute(
        "SELECT MIN(start_ms), MAX(end_ms) FROM process_blocks WHERE device = ?", (device,)
    ).fetchone()
    if first_ms is None:
        return
    t_ms = max(0, math.floor(start_s * 1000), int(first_ms) - int(first_ms) % BUCKET_MS)
    end_ms = min(math.floor(end_s * 1000), int(last_ms))
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
                memory = np.where(flags & MEMORY_MISSING, np.nan, memory_mib * float(MIB))
                sm = np.where(flags & SM_MISSING, np.nan, sm_q.astype(np.float64))
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
