"""The history on disk: one SQLite file in WAL mode holding compressed blocks (see codec.py).

SQLite gives the crash safety: a block is in the file whole once its transaction commits, and a
kill -9 loses only what had not been committed (the writer commits every few seconds). Each
block also carries a CRC-32 of its bytes, so that one damaged on disk is skipped with one note.

Tiers: FRESH holds blocks of a few seconds as they are written; once a UTC hour is over its
fresh blocks become one FINE block (every sample) and one COARSE block (min/mean/max per
minute); the coarse blocks of a UTC day merge into one as it goes, and a WIDE block of 10-minute
buckets is made from it each time: a week reads as 8 small blocks a device.
Devices are GPUs by UUID and the host; times are milliseconds since the epoch (UTC).
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

log = logging.getLogger(__name__)

FILE_NAME = "history.sqlite3"
BUSY_TIMEOUT_S = 5.0  # a bounded wait on another process' transaction
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
WEEK_MS = 7 * DAY_MS  # the wide tier's blocks: one a device a week (from Thursdays, as epoch days are counted)
BUCKET_MS = 60_000  # the coarse tier's bucket
WIDE_BUCKET_MS = 600_000  # the wide tier's
FRESH_LEVEL = 3  # zstd level for the few-second blocks (cheap: written every few seconds)
PACKED_LEVEL = 12  # for the hourly and daily blocks: written once, kept for days


class Tier(enum.IntEnum):
    FRESH = 0
    FINE = 1
    COARSE = 2
    WIDE = 3  # 10-minute buckets of each UTC week (WEEK_MS): a week's view reads one or two blocks a device


_SCHEMA = """
CREATE TABLE IF NOT EXISTS devices(id INTEGER PRIMARY KEY, uuid TEXT UNIQUE NOT NULL, info TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS layouts(id INTEGER PRIMARY KEY, columns TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS blocks(
    id INTEGER PRIMARY KEY, device INTEGER NOT NULL, tier INTEGER NOT NULL,
    start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, rows INTEGER NOT NULL,
    layout INTEGER NOT NULL, crc INTEGER NOT NULL, data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS blocks_by_time ON blocks(device, tier, end_ms);
"""


@dataclass(frozen=True)
class Layout:
    """The columns of a device's blocks: metric keys and the resolution each is kept at."""

    keys: tuple[str, ...]
    resolutions: tuple[float, ...]

    def to_json(self) -> str:
        return json.dumps([list(self.keys), list(self.resolutions)])

    @classmethod
    def from_json(cls, text: str) -> Layout:
        keys, resolutions = json.loads(text)
        return cls(tuple(keys), tuple(float(r) for r in resolutions))


@dataclass(frozen=True)
class Block:
    id: int
    device: int
    tier: Tier
    start_ms: int
    end_ms: int
    layout: int
    crc: int
    data: bytes


@dataclass(frozen=True)
class Device:
    id: int
    uuid: str
    info: dict[str, object]


class Database:
    """One connection to the store file; used from one thread. Raises sqlite3.Error / OSError."""

    def __init__(self, folder: Path, read_only: bool = False) -> None:
        self.folder = folder
        # absolute(): SQLite is opened by URI, and a relative path has none (`--store hist`).
        self.path = folder.absolute() / FILE_NAME
        if not read_only:
            folder.mkdir(parents=True, exist_ok=True)
        uri = f"{self.path.as_uri()}?mode={'ro' if read_only else 'rwc'}"
        self.connection = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        if read_only:
            self._readable_where_it_stands(uri)
        try:
            if not read_only:
                # Before any table exists: lets a size-cap deletion give its pages back to the disk.
                self.connection.execute("PRAGMA auto_vacuum=INCREMENTAL")
                self.connection.execute("PRAGMA journal_mode=WAL")
                self.connection.execute("PRAGMA synchronous=NORMAL")  # WAL: a process crash loses nothing committed
                self.connection.executescript(_SCHEMA)
        except BaseException:
            self.connection.close()
            raise
        self._layouts: dict[int, Layout] = {}
        self._layout_ids: dict[Layout, int] = {}
        self._devices: dict[str, int] = {}

    def _readable_where_it_stands(self, uri: str) -> None:
        """A store in a folder this user may not write (another user's, a read-only copy) whose
        writer has ended: SQLite reads a write-ahead-log database only beside its index file
        (-shm), which the writer's clean end removed and a reader cannot make there ("attempt to
        write a readonly database"). With no log left nothing is in flux: it is read as a file that
        does not change."""
        try:
            self.connection.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.OperationalError:
            if os.path.exists(f"{self.path}-wal") or os.access(self.folder, os.W_OK):
                return  # a writer's log to read with it, or a folder it could use: the error is another's
            self.connection.close()
            self.connection = sqlite3.connect(
                f"{uri}&immutable=1", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None
            )

    def close(self) -> None:
        self.connection.close()

    def log_files(self) -> tuple[tuple[int, int] | None, ...]:
        """Which files the write-ahead log and its index are (device and inode; None: missing).

        SQLite keeps writing to a -wal or -shm file deleted under it (its descriptors stay open):
        every commit after is invisible to other processes, and lost when this one is killed.
        Comparing these before each commit is how the writer notices and starts afresh."""
        found: list[tuple[int, int] | None] = []
        for suffix in ("-wal", "-shm"):
            try:
                status = os.stat(f"{self.path}{suffix}")
            except FileNotFoundError:
                found.append(None)
            else:
                found.append((status.st_dev, status.st_ino))
        return tuple(found)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads that see the store as it stood at the first of them: the hourly packer committing
        between a listing of blocks and the read of their data made the blocks listed go (a week
        read as empty for a redraw), and a listed id another block's (ids are used again), taken
        for a damaged one. Within a transaction already, that one's."""
        if self.connection.in_transaction:
            yield
            return
        self.connection.execute("BEGIN")  # deferred: the snapshot is taken at the first read
        try:
            yield
        finally:
            # (nothing written: the end of the snapshot). SQLite may have ended it itself on an
            # error (I/O, out of memory), which then is the one to raise, not "no transaction".
            if self.connection.in_transaction:
                self.connection.execute("COMMIT")

    def device_id(self, uuid: str, info: dict[str, object]) -> int:
        """The device's id, its facts (name, index, ...) brought up to date."""
        text = json.dumps(info, sort_keys=True, default=str)
        row = self.connection.execute("SELECT id, info FROM devices WHERE uuid = ?", (uuid,)).fetchone()
        if row is None:
            cursor = self.connection.execute("INSERT INTO devices(uuid, info) VALUES (?, ?)", (uuid, text))
            assert cursor.lastrowid is not None
            return cursor.lastrowid
        if row[1] != text:
            self.connection.execute("UPDATE devices SET info = ? WHERE id = ?", (text, row[0]))
        return int(row[0])

    def devices(self) -> list[Device]:
        rows = self.connection.execute("SELECT id, uuid, info FROM devices ORDER BY id").fetchall()
        return [Device(int(i), uuid, _facts(info)) for i, uuid, info in rows]

    def layout_id(self, layout: Layout) -> int:
        found = self._layout_ids.get(layout)
        if found is not None:
            return found
        text = layout.to_json()
        row = self.connection.execute("SELECT id FROM layouts WHERE columns = ?", (text,)).fetchone()
        if row is None:
            cursor = self.connection.execute("INSERT INTO layouts(columns) VALUES (?)", (text,))
            assert cursor.lastrowid is not None
            row = (cursor.lastrowid,)
        self._layout_ids[layout] = int(row[0])
        self._layouts[int(row[0])] = layout
        return int(row[0])

    def layout(self, layout_id: int) -> Layout:
        found = self._layouts.get(layout_id)
        if found is None:
            row = self.connection.execute("SELECT columns FROM layouts WHERE id = ?", (layout_id,)).fetchone()
            try:
                found = Layout.from_json(row[0]) if row is not None else None
            except (ValueError, TypeError, KeyError):  # json's errors are ValueErrors
                found = None
            if found is None:  # said as a damaged database is: the reading stops with one sentence
                raise sqlite3.DatabaseError(f"the column layout {layout_id} of its blocks is missing or damaged")
            self._layouts[layout_id] = found
        return found

    def insert(
        self, device: int, tier: Tier, start_ms: int, end_ms: int, rows: int, layout: int, data: bytes, crc: int
    ) -> None:
        self.connection.execute(
            "INSERT INTO blocks(device, tier, start_ms, end_ms, rows, layout, crc, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: E501
            (device, int(tier), start_ms, end_ms, rows, layout, crc, data),
        )

    def delete(self, ids: list[int]) -> None:
        self.connection.executemany("DELETE FROM blocks WHERE id = ?", [(i,) for i in ids])

    def blocks(
        self, device: int, tiers: tuple[Tier, ...], start_ms: int, end_ms: int, data: bool = True
    ) -> list[Block]:
        """Blocks of ``device`` in ``tiers`` that overlap [start_ms, end_ms], oldest first; without
        ``data``, their ``data`` is empty (with_data reads it): a reader that keeps blocks decoded,
        or uses only some of them, need not copy megabytes of blobs it will not decode."""
        marks = ",".join("?" * len(tiers))
        blob = "data" if data else "X''"
        rows = self.connection.execute(
            f"SELECT id, device, tier, start_ms, end_ms, layout, crc, {blob} "
            f"FROM blocks WHERE device = ? AND tier IN ({marks}) AND end_ms >= ? AND start_ms <= ? "
            "ORDER BY start_ms, id",
            (device, *map(int, tiers), start_ms, end_ms),
        ).fetchall()
        return [Block(r[0], r[1], Tier(r[2]), r[3], r[4], r[5], r[6], r[7]) for r in rows]

    def with_data(self, blocks: list[Block]) -> list[Block]:
        """``blocks`` with their data read (a block deleted since is left out)."""
        if not blocks:
            return []
        marks = ",".join("?" * len(blocks))
        found = dict(
            self.connection.execute(f"SELECT id, data FROM blocks WHERE id IN ({marks})", [b.id for b in blocks])
        )
        return [replace(b, data=found[b.id]) for b in blocks if b.id in found]

    def span_ms(self) -> tuple[int, int] | None:
        row = self.connection.execute("SELECT MIN(start_ms), MAX(end_ms) FROM blocks").fetchone()
        return None if row[0] is None else (int(row[0]), int(row[1]))

    def data_bytes(self) -> int:
        return int(self.connection.execute("SELECT COALESCE(SUM(LENGTH(data)), 0) FROM blocks").fetchone()[0])

    def file_bytes(self) -> int:
        """The store's size on disk: the file, its write-ahead log and shared-memory index."""
        total = 0
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                total += (self.folder / (FILE_NAME + suffix)).stat().st_size
        return total

    def reclaim(self) -> None:
        """Give the pages of deleted blocks back to the file system."""
        # executescript runs the pragma to its end: execute() steps it once, which frees one page.
        self.connection.executescript("PRAGMA incremental_vacuum")
        self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _facts(text: object) -> dict[str, object]:
    """A device's stored facts; {} when damaged (the writer's next device_id writes them anew, and a
    reader that needs them says the entry is damaged)."""
    try:
        facts = json.loads(text) if isinstance(text, str | bytes) else None
    except ValueError:
        facts = None
    return facts if isinstance(facts, dict) else {}
