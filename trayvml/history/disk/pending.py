"""The processes the writer has not committed yet, and the process tables' SQL (processes.py has
the format): no numpy, as the tray's writer (fresh.py) has none."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from trayvml.core.units import MIB
from trayvml.history.disk import fresh
from trayvml.history.disk.db import FRESH_LEVEL, Database, Tier

if TYPE_CHECKING:
    from trayvml.core.sample import ProcessSample

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
MEMORY_MISSING, SM_MISSING = 1, 2  # the fine rows' flags
# Fine rows: process, memory MiB, SM %, flags. Coarse rows: process, then count, sum, max of each.
FINE_COLUMNS, COARSE_COLUMNS = 4, 7


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
            matrices = _fine_rows([(r[0], ids[(r[1], r[2])], r[3], r[4]) for r in chosen])
            data, crc = fresh.encode(matrices, FRESH_LEVEL)
            times = matrices[0][0]
            insert_block(db, device, Tier.FRESH, (min(times), max(times), len(times)), data, crc)

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


def _fine_rows(rows: list[tuple[int, int, float, float]]) -> list[fresh.Matrix]:
    """A fine block's matrices from (time ms, process id, memory bytes, SM %) rows: memory in MiB,
    SM % whole, a flag for each that was not known (NaN); rows ordered by process, then time (a
    process's rows are runs of small deltas)."""
    rows = sorted(rows, key=lambda r: (r[1], r[0]))  # stable, as processes._sorted's lexsort
    columns: list[list[int]] = [[], [], [], []]
    for _, process, memory_bytes, sm_percent in rows:
        flags = (MEMORY_MISSING if math.isnan(memory_bytes) else 0) | (SM_MISSING if math.isnan(sm_percent) else 0)
        columns[0].append(process)
        columns[1].append(0 if math.isnan(memory_bytes) else fresh.steps(memory_bytes, 1.0, MIB))
        columns[2].append(0 if math.isnan(sm_percent) else fresh.steps(sm_percent, 1.0, 1.0))
        columns[3].append(flags)
    return [[[r[0] for r in rows]], columns]


def insert_block(db: Database, device: int, tier: Tier, span: tuple[int, int, int], data: bytes, crc: int) -> None:
    """A process block: ``span`` is its first and last time (ms) and its number of rows."""
    db.connection.execute(
        "INSERT INTO process_blocks(device, tier, start_ms, end_ms, rows, crc, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (device, int(tier), *span, crc, data),
    )


def prune(db: Database, fine_cut_ms: int, coarse_cut_ms: int) -> None:
    """Past their tier's span (in the caller's transaction): blocks, then processes left without any."""
    connection = db.connection
    connection.execute("DELETE FROM process_blocks WHERE tier = 1 AND end_ms < ?", (fine_cut_ms,))
    # Fresh blocks wait for a packer (write.prune): they go with the minutes.
    connection.execute("DELETE FROM process_blocks WHERE tier IN (0, 2) AND end_ms < ?", (coarse_cut_ms,))
    connection.execute("DELETE FROM processes WHERE last_ms < ?", (coarse_cut_ms,))


def data_bytes(db: Database) -> int:
    return int(db.connection.execute("SELECT COALESCE(SUM(LENGTH(data)), 0) FROM process_blocks").fetchone()[0])
