"""The writer of the history on disk: fresh blocks every few seconds, packed per hour and per
day, pruned to the limits."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import json
import logging
import math
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from trayvml.core.clock import due, epoch_ms
from trayvml.core.errors import TrayvmlError
from trayvml.core.i18n import translate
from trayvml.core.metrics import GPU_METRICS, HOST_METRICS, RESOLUTION
from trayvml.core.sample import DeviceInfo, MetricState, Sample
from trayvml.core.units import Unit
from trayvml.history.disk import fresh, pending
from trayvml.history.disk.db import (
    FILE_NAME,
    FRESH_LEVEL,
    HOUR_MS,
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
# After the wall clock was set forward, the time what goes by age goes by moves on at most this many
# seconds a second until it is the wall clock's again (StoreWriter._steady_ms).
STEADY_CATCH_UP = 2.0
PACK_WAIT_S = 15.0  # how long closing waits for the hourly packer (8 GPUs' hour: about a second)
PACKER_AGAIN = 3  # a packer's exit status: an hour is left to pack (pruned under it, rows given back)
PACKER_LIMIT_S = 600.0  # a packer still running after this is stopped (a hung one would pack no more)
HOST_UUID = "host"
LOCK_NAME = "writer.lock"
# The packer's process: pack.py's main, on this process' module path.
_PACKER_BOOT = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from trayvml.history.disk.pack import main; sys.exit(main(sys.argv[2:]))"
)

GPU_LAYOUT = Layout(tuple(m.key for m in GPU_METRICS), tuple(m.stored_resolution for m in GPU_METRICS))


HOST_INFO: dict[str, object] = {"name": "host"}


@functools.lru_cache(maxsize=8)
def host_layout(cores: int) -> Layout:
    keys = tuple(m.key for m in HOST_METRICS) + tuple(f"cpu_core_{i}_percent" for i in range(cores))
    return Layout(keys, tuple(m.stored_resolution for m in HOST_METRICS) + (RESOLUTION[Unit.PERCENT],) * cores)


def start_packer(folder: Path, now_ms: int, keep_ms: int, lock_fd: int) -> subprocess.Popen[bytes]:
    """The packer of the hours before ``now_ms`` (minutes kept ``keep_ms``), started (it inherits
    ``lock_fd``, the writer's lock, and stderr for its warnings). It imports what this process
    imports (its module path, the working folder's entry made absolute), in a session of its own: a
    Ctrl-C in the terminal is not for it. Raises OSError when it cannot be started."""
    paths = [os.path.abspath(p) for p in sys.path]  # '' (the working folder) as the folder it is now
    return subprocess.Popen(
        [sys.executable, "-c", _PACKER_BOOT, json.dumps(paths), str(folder.absolute()), str(now_ms), str(keep_ms)],
        pass_fds=(lock_fd,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )


def hours_to_pack(db: Database, now_ms: int) -> bool:
    """Whether fresh blocks (of the GPUs and host, or of their processes) of hours that are over wait."""
    hour_ms = now_ms - now_ms % HOUR_MS
    query = "SELECT EXISTS(SELECT 1 FROM {} WHERE tier = 0 AND start_ms < ?)"
    return any(db.connection.execute(query.format(t), (hour_ms,)).fetchone()[0] for t in ("blocks", "process_blocks"))


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

    @property
    def fd(self) -> int:
        """The locked file's descriptor: a child that inherits it holds the lock with this process."""
        return self._fd

    def release(self) -> None:
        """Closed, not unlocked: the lock ends with the last descriptor of the file (a packer that
        inherited it and still runs keeps it; LOCK_UN would free it under the packer too)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def holder(folder: Path) -> int | None:
    """The pid of the process writing the store in ``folder``, or None when nobody does. (Where a
    writer died while its packer still runs, the pid is the writer's: the lock is the packer's.)"""
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

    def matrices(self) -> list[fresh.Matrix]:
        return fresh.value_rows(self.times_ms, self.values, self.states, self.layout.resolutions)


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
        self._pending: list[tuple[str, dict[str, object], Layout, list[fresh.Matrix]]] = []
        self._retry_at_ms = 0
        self._packed_hour = -1  # the hour whose packing of the hours before it was last started
        self._packer: subprocess.Popen[bytes] | None = None  # pack.py's process, while it runs
        self._packer_since_s = 0.0  # when it started (monotonic)
        self._packed = False  # whether a packer ended since the last pruning
        self._infos: dict[str, tuple[DeviceInfo, dict[str, object]]] = {}
        # When it last pruned; None before its first write. The first pruning waits PRUNE_EVERY_S
        # too: a clock hours ahead at boot (a dual-boot machine whose hardware clock keeps local
        # time) is set right by then, and the oldest hours are not dropped by the time it said.
        self._pruned_at_ms: int | None = None
        # (the wall time what goes by age last went by, the samples' boot-time clock then):
        # see _steady_ms. The last sample's boot-time clock (NaN: none, a replay's or a hand-made one).
        self._steady: tuple[int, float] | None = None
        self._last_monotonic_s = math.nan
        self.saved = 0  # samples committed to the store
        self.lost = 0  # samples dropped unwritten (memory kept only so much; or still unwritten at close)
        self._unsaved: list[int] = []  # the times of samples appended and not yet committed
        self._processes = pending.PendingProcesses()
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
            self._db.connection.executescript(pending.SCHEMA)

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
        self._last_monotonic_s = sample.monotonic_s
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
            try:
                self._commit(now_ms)
            except sqlite3.DatabaseError as error:
                if not _damaged(error):
                    raise
                # Damaged inside (a table, not the header that _open sees): every write failed
                # again, for good. Kept aside, as at _open; what waits goes to a new one.
                self._close_db()
                self._db = Database(self._move_aside(error))
                self._db.connection.executescript(pending.SCHEMA)
                self._log_files = None
                self._commit(now_ms)
        except StoreLockedError as error:
            self._failed(error, now_ms)
        except (OSError, sqlite3.Error) as error:
            self._failed(error, now_ms)
        else:
            if self.problem is not None:
                log.warning("writing the history to %s again", self.folder)
                self.problem = None

    def _commit(self, now_ms: int) -> None:
        self._open()
        assert self._db is not None
        if self._log_files is not None and self._db.log_files() != self._log_files:
            self._reopen()
            assert self._db is not None
        self._write(self._db)
        self._log_files = self._db.log_files()
        self._maintain(self._db, now_ms)

    def _write(self, db: Database) -> None:
        with db.transaction():
            for uuid, info, layout, matrices in self._pending:
                data, crc = fresh.encode(matrices, FRESH_LEVEL)
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

    def _maintain(self, db: Database, now_ms: int) -> None:
        """The hours that are over packed (by a process of their own), the oldest blocks pruned:
        the packing by the wall clock (the hours its rows are stamped in), what goes by age by the
        steady time (_steady_ms)."""
        steady_ms = self._steady_ms(now_ms)
        self._packer_done()  # a packer that ended is reaped at once, not at the next hour
        self._pack(db, now_ms, now_ms - steady_ms)
        if self._pruned_at_ms is None:
            self._pruned_at_ms = steady_ms
        # Also once a packer ended: it made blocks that may be past their span, or over the cap. Not
        # while one runs: a block pruned under it would make it leave its hour for the next one.
        due_now = due(steady_ms / 1000, self._pruned_at_ms / 1000 + PRUNE_EVERY_S, PRUNE_EVERY_S)
        if (due_now or self._packed) and self._packer is None:
            self._packed = False
            self._pruned_at_ms = steady_ms
            prune(db, steady_ms, self.limits)

    def _steady_ms(self, now_ms: int) -> int:
        """The wall time what is past its span goes by: ``now_ms``, but where the wall clock was set
        forward, no further on than STEADY_CATCH_UP times the time that passed by the samples'
        boot-time clock since the last call. A clock set eight days ahead for a minute (a mistyped
        date) pruned every block older than a week before it: the whole history. A clock set right
        forward (one that was behind) is caught up with as time passes, the oldest blocks kept that
        much longer meanwhile; one set back is followed at once (its cuts move back with it)."""
        monotonic_s = self._last_monotonic_s
        last = self._steady
        if last is not None and not math.isnan(monotonic_s) and not math.isnan(last[1]):
            now_ms = min(now_ms, last[0] + round(STEADY_CATCH_UP * max(0.0, monotonic_s - last[1]) * 1000))
        self._steady = (now_ms, monotonic_s)
        return now_ms

    def _pack(self, db: Database, now_ms: int, ahead_ms: int = 0) -> None:
        """In a new hour (or at the first write), the hours that are over are packed by a process of
        pack.py's, unless the last one still runs (then at a later flush); the minutes' span it keeps
        of the wide blocks reaches ``ahead_ms`` further back (the wall clock ahead of _steady_ms)."""
        hour = now_ms // HOUR_MS
        if hour == self._packed_hour or self._packer is not None or self._lock is None:
            return
        self._packed_hour = hour
        if hours_to_pack(db, now_ms):
            try:
                keep_ms = round(self.limits.coarse_span_s * 1000) + ahead_ms
                self._packer = start_packer(self.folder, now_ms, keep_ms, self._lock.fd)
                self._packer_since_s = time.monotonic()
            except OSError as error:
                log.warning("the history's hours could not be packed (%s); trying again next hour", error)

    def _packer_done(self, wait_s: float = 0.0) -> bool:
        """Whether no packer runs: one that ended is reaped and its failure logged; one still running
        after ``wait_s`` (closing) or PACKER_LIMIT_S is stopped (its transaction rolls back: the hour
        stays fresh, for the next packer)."""
        if self._packer is None:
            return True
        if wait_s:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._packer.wait(wait_s)
        code = self._packer.poll()
        if code is None:
            if not wait_s and time.monotonic() - self._packer_since_s < PACKER_LIMIT_S:
                return False
            log.warning("packing the history in %s was stopped: it took too long", self.folder)
            self._packer.kill()
            code = self._packer.wait()
        if code == PACKER_AGAIN:
            self._packed_hour = -1  # another is started by the caller's _maintain, or the next one
        elif code:
            log.warning("packing the history in %s failed (exit status %d)", self.folder, code)
        self._packer = None
        self._packed = True
        return True

    def _close_db(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    def _failed(self, error: Exception, now_ms: int) -> None:
        self._retry_at_ms = now_ms + round(RETRY_S * 1000)
        self._close_db()
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
        # One last try whenever the next was due: stopped between tries (every 30 s), what waited
        # in memory was counted lost though the store could be written again.
        self._retry_at_ms = 0
        with contextlib.suppress(StoreLockedError):
            self.flush()
        # A packer that still ran at the last flushes held back the next hour's and the pruning.
        for _ in range(3):
            self._packer_done(PACK_WAIT_S)
            if self._db is None or self._last_ms is None or self.problem is not None:
                break
            with contextlib.suppress(OSError, sqlite3.Error):
                self._maintain(self._db, self._last_ms)
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


def _damaged(error: sqlite3.DatabaseError) -> bool:
    """Whether SQLite says the file is damaged or no database (not the disk, a lock, a constraint).
    Python 3.10 tells no error code: taken as not (tried again later, as before)."""
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def prune(db: Database, now_ms: int, limits: Limits) -> None:
    """Drop blocks past their tier's span, then the oldest ones while the store is over its size cap."""
    fine_cut = now_ms - round(limits.fine_span_s * 1000)
    coarse_cut = now_ms - round(limits.coarse_span_s * 1000)
    connection = db.connection
    with db.transaction():
        # Fresh blocks are made a fine one by a packer first (one may be running): they go by age
        # with the minutes, once a packer would have long made them minutes too.
        connection.execute("DELETE FROM blocks WHERE tier = 1 AND end_ms < ?", (fine_cut,))
        connection.execute("DELETE FROM blocks WHERE tier IN (0, 2, 3) AND end_ms < ?", (coarse_cut,))
        pending.prune(db, fine_cut, coarse_cut)
        total = db.data_bytes() + pending.data_bytes(db)
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
