"""Reading the store: each sample of a range (fine) or min/mean/max buckets (coarse), per device.

Readers never write: any number of them (the window, ``trayvml history``) read beside the one writer.
A damaged block is skipped with one log note; a range nothing was recorded in reads back empty.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sqlite3
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trayvml.core.sample import MetricState
from trayvml.core.units import MIB
from trayvml.history.disk import codec
from trayvml.history.disk.blocks import _decode, coarse_from_fine, decode_deltas, distinct_sorted, merge_coarse
from trayvml.history.disk.db import BUCKET_MS, DAY_MS, FILE_NAME, WIDE_BUCKET_MS, Block, Database, Device, Layout, Tier

_Buckets = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# Packed blocks folded into buckets, kept by their bytes: a week of 10-minute buckets of 8 GPUs
# and the host (every metric the window draws) is about 17 MiB; a day of minutes is 2.6 MiB a GPU.
BUCKETS_CACHE_BYTES = 24 * MIB


@dataclass(frozen=True)
class FineData:
    """Every stored sample of a range, oldest first; ``values`` NaN where there was no value."""

    times_s: np.ndarray  # (n,)
    values: np.ndarray  # (n, keys)
    states: np.ndarray  # (n, keys) MetricState values


_TIME_ROW = np.array([0])  # a fine block's first matrix: its one row of times


@dataclass(frozen=True)
class CoarseData:
    """Buckets of ``step_s`` from ``times_s[0]`` on; NaN (count 0) where nothing was recorded."""

    times_s: np.ndarray  # bucket starts
    count: np.ndarray  # (n, keys)
    low: np.ndarray
    mean: np.ndarray
    high: np.ndarray
    step_s: float

    @property
    def recorded(self) -> np.ndarray:
        """Per bucket: whether anything at all was recorded in it."""
        return self.count.max(axis=1, initial=0) > 0


@dataclass(frozen=True)
class Stats:
    first_s: float | None
    last_s: float | None
    samples: int  # one metric value of one device at one time
    file_bytes: int

    @property
    def bytes_per_sample(self) -> float:
        return self.file_bytes / self.samples if self.samples else math.nan


def _identity(path: Path) -> tuple[int, int] | None:
    """Which file is at ``path`` (device and inode); None where there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _exists(path: Path) -> bool:
    """Whether ``path`` is there; raises OSError where that cannot be known (a folder that may not
    be entered: said as why the store cannot be read, not as "no history yet")."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True


class StoreReader:
    """Reads the store in ``folder``; raises sqlite3.Error / OSError when the file cannot be read."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._db: Database | None = None
        self._buckets: OrderedDict[tuple[tuple[tuple[int, int], ...], int, tuple[str, ...]], tuple[_Buckets, ...]] = (
            OrderedDict()
        )
        self._buckets_bytes = 0
        self._device_ids: dict[str, int] = {}
        self._damaged: set[tuple[int, int]] = set()  # (id, CRC) of the packed blocks found damaged
        self._opened: tuple[int, int] | None = None  # (device, inode) of the file opened

    def database(self) -> Database | None:
        """The store's read-only connection, opened (again, where its file was moved aside and
        begun anew) where there is a store; None where there is none."""
        path = self.folder / FILE_NAME
        if self._db is not None and _identity(path) != self._opened:
            # Moved aside as damaged by its writer and begun anew: the one open is read no more
            # (the window read the old store, its hours frozen, until it was closed).
            self.close()
        if self._db is None and _exists(path):
            self._opened = _identity(path)
            self._db = Database(self.folder, read_only=True)
        return self._db

    def close(self) -> None:
        """The connection closed and the blocks kept in buckets let go; a later read opens it again
        (perhaps another file by then: the device ids it had are looked up again)."""
        self._buckets.clear()
        self._buckets_bytes = 0
        self._device_ids = {}
        self._damaged = set()
        if self._db is not None:
            self._db.close()
            self._db = None

    def devices(self) -> list[Device]:
        db = self.database()
        return db.devices() if db is not None else []

    def _blocks(
        self, uuid: str, tiers: tuple[Tier, ...], start_s: float, end_s: float, data: bool = True
    ) -> tuple[Database, list[Block]] | None:
        db = self.database()
        if db is None:
            return None
        device = self._device_ids.get(uuid)
        if device is None:  # a device's id never changes; one written since is looked up again
            self._device_ids = {d.uuid: d.id for d in db.devices()}
            device = self._device_ids.get(uuid)
            if device is None:
                return None
        return db, db.blocks(device, tiers, math.floor(start_s * 1000), math.ceil(end_s * 1000), data)

    def fine(self, uuid: str, start_s: float, end_s: float, keys: tuple[str, ...]) -> FineData:
        found = self._blocks(uuid, (Tier.FRESH, Tier.FINE), start_s, end_s)
        nothing = FineData(np.empty(0), np.empty((0, len(keys))), np.empty((0, len(keys)), dtype=np.int64))
        if found is None:
            return nothing
        db, blocks = found
        times, values, states = [], [], []
        width = len(keys)
        for block in blocks:
            layout = db.layout(block.layout)
            # Only the rows of the columns asked for are decoded and summed (an export of a few of
            # them, not all 57: the sum along an hour of rows was most of an export's reading).
            deltas = decode_deltas(block, codec.FINE_MATRICES, _wanted(layout.keys, keys, codec.FINE_MATRICES))
            if deltas is None:
                continue
            rows = np.cumsum(deltas, axis=1)
            t_ms = rows[0]
            chosen = (t_ms >= start_s * 1000) & (t_ms <= end_s * 1000)
            if not chosen.any():
                continue
            source, present = _mapping(layout.keys, keys)
            q, missing, state = (rows[1 + k * width : 1 + (k + 1) * width][:, chosen].T for k in range(3))
            value = codec.restore_columns(q, np.array(layout.resolutions)[source])
            value[missing.astype(bool)] = np.nan
            value[:, ~present] = np.nan
            state[:, ~present] = MetricState.NO_DATA
            times.append(t_ms[chosen] / 1000)
            values.append(value)
            states.append(state)
        if not times:
            return nothing
        t = np.concatenate(times)
        order = np.argsort(t, kind="stable")
        return FineData(t[order], np.concatenate(values)[order], np.concatenate(states)[order])

    def row_times(self, uuid: str, start_s: float, end_s: float) -> np.ndarray:
        """The times of the device's rows on disk from ``start_s`` to before ``end_s``, ascending,
        from its every-sample tiers (none where only minutes are kept): the blocks' time rows alone
        are decoded."""
        found = self._blocks(uuid, (Tier.FRESH, Tier.FINE), start_s, end_s)
        parts = []
        for block in found[1] if found is not None else ():
            deltas = decode_deltas(block, codec.FINE_MATRICES, _TIME_ROW)
            if deltas is None:
                continue
            t_ms = np.cumsum(deltas[0])
            parts.append(t_ms[(t_ms >= start_s * 1000) & (t_ms < end_s * 1000)] / 1000)
        return np.sort(np.concatenate(parts)) if parts else np.empty(0)

    def coarse(
        self, uuid: str, start_s: float, end_s: float, step_s: float, keys: tuple[str, ...], fresh: bool = True
    ) -> CoarseData:
        """Buckets of about ``step_s`` (rounded to whole minutes, or ten: see bucket_step_ms) over the
        range: never a week of seconds. ``fresh``: also the blocks of the hour not yet packed (a caller
        holding the last hours in memory leaves them out: a few hundred small blocks)."""
        step_ms = bucket_step_ms(step_s)
        first_ms = math.floor(start_s * 1000 / step_ms) * step_ms
        n = max(0, math.floor(end_s * 1000 / step_ms) * step_ms - first_ms) // step_ms + 1
        # A row a key while they are filled (as blocks hold them; a plot reads a key of each device).
        columns = len(keys)
        count = np.zeros((columns, n), dtype=np.int64)
        low = np.full((columns, n), np.nan)
        high = np.full((columns, n), np.nan)
        total = np.zeros((columns, n))
        tiers = (Tier.COARSE, Tier.WIDE) + ((Tier.FRESH,) if fresh else ())
        use_wide = step_ms % WIDE_BUCKET_MS == 0
        store = self.database()
        # The blocks listed, then their data read, as the store stood at the listing (Database.snapshot).
        with store.snapshot() if store is not None else contextlib.nullcontext():
            found = self._blocks(uuid, tiers, first_ms / 1000, first_ms / 1000 + n * step_ms / 1000, data=False)
            db, listed = found if found is not None else (None, [])
            used = self._used(listed, use_wide)
            folded = self._folded(db, used, step_ms, keys) if db is not None else []
            if (
                db is not None
                and self._damaged
                and any(b.tier is Tier.WIDE and (b.id, b.crc) in self._damaged for b in used)
            ):
                folded = self._folded(db, self._used(listed, use_wide), step_ms, keys)  # its days from their minutes
        placed = []
        for starts, c, lo_v, hi_v, su_v in folded:
            at = (starts - first_ms) // step_ms
            inside = (at >= 0) & (at < n)
            placed.append(
                (at, c, lo_v, hi_v, su_v)
                if inside.all()
                else (at[inside], c[:, inside], lo_v[:, inside], hi_v[:, inside], su_v[:, inside])
            )
        everywhere = np.concatenate([p[0] for p in placed]) if placed else np.empty(0, dtype=np.int64)
        # The usual: no bucket in two blocks (ascending, as blocks are listed: no hash of them all).
        alone = bool((np.diff(everywhere) > 0).all()) or len(distinct_sorted(everywhere)) == len(everywhere)
        for at, c, lo_v, hi_v, su_v in placed:
            if alone and len(at) and at[-1] - at[0] == len(at) - 1:  # a run of buckets: slices
                run = slice(at[0], at[-1] + 1)
                count[:, run], low[:, run], high[:, run], total[:, run] = c, lo_v, hi_v, su_v
            elif alone:  # each bucket stored once, into empty buckets: plain stores
                count[:, at], low[:, at], high[:, at], total[:, at] = c, lo_v, hi_v, su_v
            else:
                np.add.at(count.T, at, c.T)
                np.fmin.at(low.T, at, lo_v.T)  # fmin, fmax: NaN (nothing in the bucket yet) gives way
                np.fmax.at(high.T, at, hi_v.T)
                np.add.at(total.T, at, su_v.T)
        mean = np.full((columns, n), np.nan)
        np.divide(total, count, out=mean, where=count > 0)
        # Within its bucket's min and max, also where the sum was held at its bound (blocks._sums).
        np.clip(mean, low, high, out=mean, where=count > 0)
        times = (first_ms + np.arange(n) * step_ms) / 1000
        return CoarseData(times, count.T, low.T, mean.T, high.T, step_ms / 1000)

    def _used(self, listed: list[Block], use_wide: bool) -> list[Block]:
        """The blocks a read takes of those ``listed``: the wide tier's where its buckets are wide
        (``use_wide``), the minutes' where not; the hour not yet packed either way. A day in a wide
        block's span is read from it alone (a week's block; a day's, in a store packed before
        them), its minutes where it is damaged: a week of 10-minute buckets is not lost with it
        while the minutes are kept."""
        whole = [b for b in listed if (b.id, b.crc) not in self._damaged]
        wide_days = {
            (day, b.layout)
            for b in whole
            if b.tier is Tier.WIDE
            for day in range(b.start_ms // DAY_MS, b.end_ms // DAY_MS + 1)
        }
        return [
            b
            for b in whole
            if (b.tier is Tier.WIDE) == use_wide
            or b.tier is Tier.FRESH
            or (b.tier is Tier.COARSE and (b.start_ms // DAY_MS, b.layout) not in wide_days)
        ]

    def _folded(self, db: Database, blocks: list[Block], step_ms: int, keys: tuple[str, ...]) -> list[_Buckets]:
        """``blocks`` in buckets of ``step_ms`` as (bucket starts in ms, count, min, max, sum: a row a key) of ``keys``,
        values restored: the packed blocks of each layout together (a week of a device is a few numpy
        calls, not a few per block), kept for the next read of the same blocks (they never change:
        a merge writes a new one); the fresh blocks each on their own, never kept."""
        packed = [b for b in blocks if b.tier is not Tier.FRESH]
        key = (tuple((b.id, b.crc) for b in packed), step_ms, keys)
        found = self._buckets.get(key)
        if found is not None:
            self._buckets.move_to_end(key)
        fetch = [b for b in blocks if b.tier is Tier.FRESH] + (packed if found is None else [])
        # Only the blobs used and not in buckets before are read (a week of minutes a device is over
        # a megabyte that the wide blocks make unnecessary).
        groups: dict[tuple[int, Tier], list[np.ndarray]] = {}
        out: list[_Buckets] = list(found) if found is not None else []
        damaged = len(self._damaged)
        fresh: list[tuple[int, np.ndarray]] = []
        for block in db.with_data(fetch):  # a block deleted since it was listed is left out
            if block.tier is Tier.FRESH:
                matrices = _decode(block, codec.FINE_MATRICES)
                if matrices is not None:
                    fresh.append((block.layout, np.concatenate(coarse_from_fine(matrices, BUCKET_MS))))
                continue
            wanted = _wanted(db.layout(block.layout).keys, keys)
            deltas = decode_deltas(block, codec.COARSE_MATRICES, wanted)
            if deltas is None:
                self._damaged.add((block.id, block.crc))
                continue
            groups.setdefault((block.layout, block.tier), []).append(deltas)
        made = []
        for (layout_id, tier), parts in groups.items():
            layout = db.layout(layout_id)
            # The blocks side by side, summed along time (the rows of ``keys`` only), in place.
            rows = np.empty((len(parts[0]), sum(d.shape[1] for d in parts)), dtype=np.int64)
            at = 0
            for deltas in parts:
                np.cumsum(deltas, axis=1, out=rows[:, at : at + deltas.shape[1]])
                at += deltas.shape[1]
            made.append(_fold(layout, rows, _native_ms(tier), step_ms, keys))
        if found is None:
            out = made
        # Kept, unless a block was found damaged: reads from now on go without it (a week's block
        # at once: coarse reads its days from their minutes).
        if found is None and len(self._damaged) == damaged:
            self._buckets[key] = tuple(made)
            self._buckets_bytes += sum(a.nbytes for m in made for a in m)
            while self._buckets_bytes > BUCKETS_CACHE_BYTES and len(self._buckets) > 1:
                _, dropped = self._buckets.popitem(last=False)
                self._buckets_bytes -= sum(a.nbytes for m in dropped for a in m)
        for layout_id, rows in fresh:
            layout = db.layout(layout_id)
            out.append(_fold(layout, rows[_wanted(layout.keys, keys)], BUCKET_MS, step_ms, keys))
        return out

    def fine_start_s(self, uuid: str) -> float | None:
        """When the device's every-sample tier begins (older ones are pruned to minutes), or None."""
        found = self._blocks(uuid, (Tier.FRESH, Tier.FINE), 0.0, 2.0**52 / 1000, data=False)
        return min(b.start_ms for b in found[1]) / 1000 if found and found[1] else None

    def has_minutes(self, uuid: str, start_s: float, end_s: float) -> bool:
        """Whether per-minute buckets of the device overlap the range."""
        found = self._blocks(uuid, (Tier.COARSE,), start_s, end_s, data=False)
        return bool(found and found[1])

    def span_s(self) -> tuple[float, float] | None:
        db = self.database()
        span = db.span_ms() if db is not None else None
        return (span[0] / 1000, span[1] / 1000) if span else None

    def stats(self) -> Stats:
        db = self.database()
        if db is None:
            return Stats(None, None, 0, 0)
        samples = 0
        for rows, layout_id in db.connection.execute(
            "SELECT SUM(rows), layout FROM blocks WHERE tier IN (0, 1) GROUP BY layout"
        ):
            samples += int(rows) * len(db.layout(layout_id).keys)
        span = db.span_ms()
        first, last = (span[0] / 1000, span[1] / 1000) if span else (None, None)
        return Stats(first, last, samples, db.file_bytes())


def bucket_step_ms(step_s: float) -> int:
    """The buckets a read for about ``step_s`` gets: whole minutes, or whole tens of minutes from
    the wide tier once that is at least as fine as asked."""
    bucket_ms = WIDE_BUCKET_MS if step_s * 1000 >= WIDE_BUCKET_MS else BUCKET_MS
    return max(1, round(step_s * 1000 / bucket_ms)) * bucket_ms


def _native_ms(tier: Tier) -> int:
    return WIDE_BUCKET_MS if tier is Tier.WIDE else BUCKET_MS


def _fold(layout: Layout, chosen: np.ndarray, native_ms: int, step_ms: int, keys: tuple[str, ...]) -> _Buckets:
    """The rows of ``keys`` (_wanted) of coarse matrices of one layout (several blocks side by side),
    in ``native_ms`` buckets, as buckets of ``step_ms``: (starts, count, min, max, sum), a row a key,
    min and max NaN where a bucket holds nothing of a key."""
    source, present = _mapping(layout.keys, keys)
    width = len(source)
    if step_ms != native_ms or (np.diff(chosen[0]) <= 0).any():  # else already one row a bucket of ours
        parts = [chosen[:1], *(chosen[1 + k * width : 1 + (k + 1) * width] for k in range(codec.COARSE_MATRICES - 1))]
        merged = merge_coarse([parts], step_ms)
        chosen = np.concatenate([merged[0], *merged[1:]])
    starts, count = chosen[0], chosen[1 : 1 + width]
    if not present.all():
        count = np.where(present[:, None], count, 0)
    values = codec.restore_rows(chosen[1 + width :], np.tile(np.array(layout.resolutions)[source], 3))
    planes = values.reshape(3, width, -1)
    planes[:2, count == 0] = np.nan  # no min or max of nothing (nor of a key the layout lacks)
    planes[2, ~present] = 0.0  # restored from another key's column
    return starts, count, planes[0], planes[1], planes[2]


@functools.lru_cache(maxsize=64)
def _wanted(have: tuple[str, ...], want: tuple[str, ...], count: int = codec.COARSE_MATRICES) -> np.ndarray:
    """The rows of a block of ``count`` matrices (codec.decode_rows) with ``want``'s columns: times,
    then each matrix's."""
    source, _ = _mapping(have, want)
    return np.concatenate([[0], *(1 + k * len(have) + source for k in range(count - 1))])


@functools.lru_cache(maxsize=64)
def _mapping(have: tuple[str, ...], want: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per wanted key: its column in ``have`` (0 where missing) and whether it is there."""
    position = {k: i for i, k in enumerate(have)}
    present = np.array([k in position for k in want], dtype=bool)  # (bool when empty too: ~ inverts it)
    return np.array([position.get(k, 0) for k in want], dtype=np.intp), present


def open_reader(folder: Path) -> StoreReader:
    reader = StoreReader(folder)
    try:
        reader.devices()
    except sqlite3.Error:
        reader.close()
        raise
    return reader
