"""The writer of the history on disk: fresh blocks every few seconds, packed per hour and per
day, pruned to the limits."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import logging
import os
import sqlite3
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from trayvml.core.clock import due, epoch_ms
from trayvml.core.errors import TrayvmlError
from trayvml.core.heap import give_back_free_memory
from trayvml.core.i18n import translate
from trayvml.core.metrics import GPU_METRICS, HOST_METRICS, RESOLUTION
from trayvml.core.sample import DeviceInfo, MetricState, Sample
from trayvml.core.units import Unit
from trayvml.history.disk import codec, processes
from trayvml.history.disk.blocks import _concat_fine, _decode, coarse_from_fine, merge_coarse
from trayvml.history.disk.db import (
    BUCKET_MS,
    DAY_MS,
    FILE_NAME,
    FRESH_LEVEL,
    HOUR_MS,
    PACKED_LEVEL,
    WIDE_BUCKET_MS,
    Block,
    Database,
    Layout,
    Tier,
)
from trayvml.history.disk.limits import Limits

log = logging.getLogger(__name__)

FLUSH_S = 8.0  # samples wait at most this long before they are committed: a kill -9 loses < 10 s
RETRY_S = 30.0  # after a failed write, how long before trying again
MEMORY_KEEP_S = 3600.0  # samples kept in memory while the store cannot be written
PRUNE_EVERY_S = 600.0
HOST_UUID = "host"
LOCK_NAME = "writer.lock"

GPU_LAYOUT = Layout(tuple(m.key for m in GPU_METRICS), tuple(m.stored_resolution for m in GPU_METRICS))


HOST_INFO: dict[str, object] = {"name": "host"}


@functools.lru_cache(maxsize=8)
def host_layout(cores: int) -> Layout:
    keys = tuple(m.key for m in HOST_METRICS) + tuple(f"cpu_core_{i}_percent" for i in range(cores))
    return Layout(keys, tuple(m.stored_resolution for m in HOST_METRICS) + (RESOLUTION[Unit.PERCENT],) * cores)


class StoreLockedError(TrayvmlError):
    """Another process writes this store."""


class WriterLock:
    """An exclusive ``flock`` on ``folder/writer.lock``, which holds the writer's pid for the next one."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / LOCK_NAME
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self._fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(self._fd)
            locked = translate(
                "store", "The history in {folder} is being written by process {pid}; one writer at a time."
            )
            raise StoreLockedError(locked.format(folder=folder, pid=holder)) from None
        except OSError:
            os.close(self._fd)
            raise
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


def holder(folder: Path) -> int | None:
    """The pid of the process writing the store in ``folder``, or None when nobody does."""
    path = folder / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 64, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class _Rows:
    """One device's samples not yet committed."""

    def __init__(self, uuid: str, info: dict[str, object], layout: Layout) -> None:
        self.uuid = uuid
        self.info = info
        self.layout = layout
        self.times_ms: list[int] = []
        self.values: list[tuple[float, ...]] = []
        self.states: list[tuple[int, ...]] = []

    def matrices(self) -> list[np.ndarray]:
        values = np.array(self.values, dtype=np.float64)
        states = np.array(self.states, dtype=np.int64)
        return fine_matrices(np.array(self.times_ms, dtype=np.int64), values, states, self.layout)


def fine_matrices(times_ms: np.ndarray, values: np.ndarray, states: np.ndarray, layout: Layout) -> list[np.ndarray]:
    """The matrices of a fine block (each columns × rows) from rows × columns arrays."""
    missing = np.isnan(values)
    q = codec.quantise_columns(values, np.array(layout.resolutions))
    q = _hold_over_gaps(q, missing)
    return [times_ms[None, :], q.T, missing.T.astype(np.int64), states.T]


def _hold_over_gaps(q: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """A NaN's slot repeats the value before it: no delta there, the mask says it is not a value."""
    if not missing.any():
        return q
    rows = np.where(missing, 0, np.arange(len(q))[:, None])
    np.maximum.accumulate(rows, axis=0, out=rows)
    return np.take_along_axis(q, rows, axis=0)


class StoreWriter:
    """Appends samples to the store in ``folder``; use from one thread (the sampler's).

    Raises StoreLockedError when another process writes the store, at start only. ``problem`` is a
    sentence while the store cannot be written (the samples wait in memory), None otherwise.
    """

    def __init__(self, folder: Path, limits: Limits | None = None) -> None:
        self.folder = folder
        self.limits = limits or Limits()
        self.problem: str | None = None
        self._lock: WriterLock | None = None
        self._db: Database | None = None
        self._rows: dict[str, _Rows] = {}
        self._first_ms: int | None = None
        self._last_ms: int | None = None
        self._pending: list[tuple[str, dict[str, object], Layout, list[np.ndarray]]] = []
        self._retry_at_ms = 0
        self._compacted_hour = -1
        self._infos: dict[str, tuple[DeviceInfo, dict[str, object]]] = {}
        # When it last pruned; None before its first write. The first pruning waits PRUNE_EVERY_S
        # too: a clock hours ahead at boot (a dual-boot machine whose hardware clock keeps local
        # time) is set right by then, and the oldest hours are not dropped by the time it said.
        self._pruned_at_ms: int | None = None
        self.saved = 0  # samples committed to the store
        self.lost = 0  # samples dropped unwritten (memory kept only so much; or still unwritten at close)
        self._unsaved: list[int] = []  # the times of samples appended and not yet committed
        self._processes = processes.PendingProcesses()
        self._log_files: tuple[tuple[int, int] | None, ...] | None = None  # as after the last commit
        try:
            self._open()
        except StoreLockedError:
            raise
        except (OSError, sqlite3.Error) as error:
            self._failed(error, 0)

    def _open(self) -> None:
        if self._lock is None:
            self._lock = WriterLock(self.folder)
        if self._db is None:
            try:
                self._db = Database(self.folder)
            except sqlite3.DatabaseError as error:
                if isinstance(error, sqlite3.OperationalError):
                    raise  # the disk, not the file: try again later
                self._db = Database(self._move_aside(error))
            self._db.connection.executescript(processes.SCHEMA)

    def _reopen(self) -> None:
        """The write-ahead log or its index was deleted (or replaced) under the open connection:
        what was committed since is only in the deleted file. A checkpoint copies it into the
        database file; a new connection then writes a log that readers see."""
        log.warning("the history's write-ahead log in %s was deleted or replaced: opening the store again", self.folder)
        assert self._db is not None
        with contextlib.suppress(sqlite3.Error):
            self._db.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.close()
        self._db = None
        self._log_files = None
        self._open()

    def _move_aside(self, error: Exception) -> Path:
        """A file that is not a store (damaged beyond its blocks): kept aside, a new one begun."""
        path = self.folder / FILE_NAME
        aside = path.with_name(f"{FILE_NAME}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{path}{suffix}", f"{aside}{suffix}")
        log.warning("the history file %s could not be read (%s); moved to %s and begun anew", path, error, aside.name)
        return self.folder

    def append(self, sample: Sample) -> None:
        t_ms = epoch_ms(sample.timestamp_s)  # as `log` writes times: cut to the millisecond
        if self._last_ms is not None and t_ms <= self._last_ms:
            self._close_rows()  # the clock went back: a block holds increasing times only
        for gpu, info in zip(sample.gpus, sample.devices, strict=False):
            self._add(info.uuid, self._facts(info), GPU_LAYOUT, t_ms, gpu.values, gpu.states)
            self._processes.add(info.uuid, self._facts(info), t_ms, gpu.processes)
        if sample.host is not None:
            host = sample.host
            values = host.values + host.cpu_core_percent
            states = (MetricState.OK,) * len(values)
            self._add(HOST_UUID, HOST_INFO, host_layout(len(host.cpu_core_percent)), t_ms, values, states)
        self._unsaved.append(t_ms)
        self._last_ms = t_ms
        if self._first_ms is None:
            self._first_ms = t_ms
        if t_ms - self._first_ms >= FLUSH_S * 1000:
            self.flush(t_ms)

    def _facts(self, info: DeviceInfo) -> dict[str, object]:
        """The GPU's static facts as stored (asdict is slow: made again only when they change)."""
        cached = self._infos.get(info.uuid)
        if cached is None or (cached[0] is not info and cached[0] != info):
            cached = self._infos[info.uuid] = (info, asdict(info))
        return cached[1]

    def _add(
        self,
        uuid: str,
        info: dict[str, object],
        layout: Layout,
        t_ms: int,
        values: tuple[float, ...],
        states: tuple[int, ...],
    ) -> None:
        rows = self._rows.get(uuid)
        if rows is not None and (rows.layout != layout or rows.info is not info):
            self._close_rows()
            rows = None
        if rows is None:
            rows = self._rows[uuid] = _Rows(uuid, info, layout)
        rows.times_ms.append(t_ms)
        rows.values.append(values)
        rows.states.append(states)

    def _close_rows(self) -> None:
        for rows in self._rows.values():
            if rows.times_ms:
                self._pending.append((rows.uuid, rows.info, rows.layout, rows.matrices()))
        self._rows.clear()
        self._first_ms = None

    def flush(self, now_ms: int | None = None) -> None:
        """Commit what waits (unless the store is failing and not yet due for another try)."""
        self._close_rows()
        now_ms = now_ms if now_ms is not None else self._last_ms or 0
        if not self._pending or (
            self.problem is not None and not due(now_ms / 1000, self._retry_at_ms / 1000, RETRY_S)
        ):
            self._drop_old(now_ms)
            return
        try:
            self._open()
            assert self._db is not None
            if self._log_files is not None and self._db.log_files() != self._log_files:
                self._reopen()
                assert self._db is not None
            self._write(self._db)
            self._log_files = self._db.log_files()
            hour = now_ms // HOUR_MS
            if hour != self._compacted_hour:  # only a new hour (or a first write) has hours to pack
                self._compact(self._db, now_ms)
                processes.compact(self._db, now_ms)
                self._compacted_hour = hour
                # The hour's blocks were decoded, joined and compressed (zstd's level 12): megabytes
                # freed, which glibc would keep in the process' RSS for good (about 9 MiB for 8 GPUs,
                # benchmarks/README.md, tenth session).
                give_back_free_memory()
            if self._pruned_at_ms is None:
                self._pruned_at_ms = now_ms
            if due(now_ms / 1000, self._pruned_at_ms / 1000 + PRUNE_EVERY_S, PRUNE_EVERY_S):
                self._pruned_at_ms = now_ms
                prune(self._db, now_ms, self.limits)
        except StoreLockedError as error:
            self._failed(error, now_ms)
        except (OSError, sqlite3.Error) as error:
            self._failed(error, now_ms)
        else:
            if self.problem is not None:
                log.warning("writing the history to %s again", self.folder)
                self.problem = None

    def _write(self, db: Database) -> None:
        with db.transaction():
            for uuid, info, layout, matrices in self._pending:
                data, crc = codec.encode(matrices, FRESH_LEVEL)
                times = matrices[0][0]
                device = db.device_id(uuid, info)
                db.insert(
                    device, Tier.FRESH, int(times[0]), int(times[-1]), len(times), db.layout_id(layout), data, crc
                )
            self._processes.write(db, self.limits.processes_per_gpu)
        self._pending.clear()
        self._processes.clear()
        self.saved += len(self._unsaved)
        self._unsaved.clear()

    def _compact(self, db: Database, now_ms: int) -> None:
        """Fresh blocks of UTC hours that are over become one fine and one coarse block each; the
        coarse blocks of a UTC day merge into one, and its wide block is made anew (today's too: a
        week's view then reads no day as minutes)."""
        hour_ms = now_ms - now_ms % HOUR_MS
        for device in db.devices():
            fresh = [b for b in db.blocks(device.id, (Tier.FRESH,), 0, hour_ms - 1) if b.start_ms < hour_ms]
            if not fresh:
                continue
            hours: dict[tuple[int, int], list[Block]] = {}
            for block in fresh:
                hours.setdefault((block.start_ms // HOUR_MS, block.layout), []).append(block)
            with db.transaction():
                for (_, layout_id), blocks in hours.items():
                    parts = [m for m in (_decode(b, codec.FINE_MATRICES) for b in blocks) if m is not None]
                    if parts:
                        fine = _concat_fine(parts)
                        _insert(db, device.id, Tier.FINE, layout_id, fine)
                        _insert(db, device.id, Tier.COARSE, layout_id, coarse_from_fine(fine, BUCKET_MS))
                    db.delete([b.id for b in blocks])
                touched = {(b.start_ms // DAY_MS, b.layout) for b in fresh}
                for day, layout_id in touched:
                    self._merge_day(db, device.id, day, layout_id)

    def _merge_day(self, db: Database, device: int, day: int, layout_id: int) -> None:
        """One coarse block for the day, and its wide block anew."""
        start_ms, end_ms = day * DAY_MS, (day + 1) * DAY_MS - 1
        blocks = [
            b
            for b in db.blocks(device, (Tier.COARSE, Tier.WIDE), start_ms, end_ms)
            if b.layout == layout_id and start_ms <= b.start_ms <= end_ms
        ]
        coarse = [b for b in blocks if b.tier is Tier.COARSE]
        parts = [m for m in (_decode(b, codec.COARSE_MATRICES) for b in coarse) if m is not None]
        if not parts:
            return
        merged = merge_coarse(parts, BUCKET_MS)
        if len(coarse) > 1:
            db.delete([b.id for b in coarse])
            _insert(db, device, Tier.COARSE, layout_id, merged)
        db.delete([b.id for b in blocks if b.tier is Tier.WIDE])
        _insert(db, device, Tier.WIDE, layout_id, merge_coarse([merged], WIDE_BUCKET_MS))

    def _failed(self, error: Exception, now_ms: int) -> None:
        self._retry_at_ms = now_ms + round(RETRY_S * 1000)
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        if self.problem is None:
            why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            if isinstance(error, sqlite3.OperationalError) and "full" in str(error):
                why = os.strerror(errno.ENOSPC)
            self.problem = translate(
                "store",
                "History is kept in memory only: cannot write {folder} ({reason}); trying again every {seconds} s.",
            ).format(folder=self.folder, reason=why, seconds=f"{RETRY_S:g}")
            log.warning("%s", self.problem)
        self._drop_old(now_ms)

    def _drop_old(self, now_ms: int) -> None:
        """While the store cannot be written, keep the last MEMORY_KEEP_S of samples only."""
        keep_ms = now_ms - MEMORY_KEEP_S * 1000
        self._pending = [p for p in self._pending if p[3][0][0][-1] >= keep_ms]
        self._processes.drop_before(round(keep_ms))
        kept = [t for t in self._unsaved if t >= keep_ms]
        self.lost += len(self._unsaved) - len(kept)
        self._unsaved = kept

    def close(self) -> None:
        with contextlib.suppress(StoreLockedError):
            self.flush()
        self.lost += len(self._unsaved)  # what the last flush could not write is gone with this process
        self._unsaved.clear()
        self._pending.clear()
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.close()
            self._db = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _insert(db: Database, device: int, tier: Tier, layout: int, matrices: list[np.ndarray]) -> None:
    data, crc = codec.encode(matrices, PACKED_LEVEL)
    times = matrices[0][0]
    db.insert(device, tier, int(times[0]), int(times[-1]), len(times), layout, data, crc)


def prune(db: Database, now_ms: int, limits: Limits) -> None:
    """Drop blocks past their tier's span, then the oldest ones while the store is over its size cap."""
    fine_cut = now_ms - round(limits.fine_span_s * 1000)
    coarse_cut = now_ms - round(limits.coarse_span_s * 1000)
    connection = db.connection
    with db.transaction():
        connection.execute("DELETE FROM blocks WHERE tier IN (0, 1) AND end_ms < ?", (fine_cut,))
        connection.execute("DELETE FROM blocks WHERE tier IN (2, 3) AND end_ms < ?", (coarse_cut,))
        processes.prune(db, fine_cut, coarse_cut)
        total = db.data_bytes() + processes.data_bytes(db)
        # Over the cap: the oldest seconds go first (they take most room), then the oldest minutes;
        # the processes' blocks of a tier with the GPUs' (1: in process_blocks).
        for tier in (Tier.FINE, Tier.COARSE, Tier.WIDE, Tier.FRESH):
            if total <= limits.size_cap_bytes:
                break
            rows = connection.execute(
                "SELECT id, LENGTH(data), 0, start_ms FROM blocks WHERE tier = ? UNION ALL "
                "SELECT id, LENGTH(data), 1, start_ms FROM process_blocks WHERE tier = ? ORDER BY 4",
                (int(tier), int(tier)),
            ).fetchall()
            doomed: tuple[list[int], list[int]] = ([], [])
            for block_id, size, table, _ in rows[:-1]:  # the newest block of each tier stays
                if total <= limits.size_cap_bytes:
                    break
                doomed[table].append(block_id)
                total -= size
            db.delete(doomed[0])
            connection.executemany("DELETE FROM process_blocks WHERE id = ?", [(i,) for i in doomed[1]])
    db.reclaim()
