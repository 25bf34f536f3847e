"""Reading the store: each sample of a range (fine) or min/mean/max buckets (coarse), per device.

Readers never write: any number of them (the window, ``trayvml history``) read beside the one writer.
A damaged block is skipped with one log note; a range nothing was recorded in reads back empty.
"""

from __future__ import annotations

import functools
import math
import sqlite3
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trayvml.core.sample import MetricState
from trayvml.core.units import MIB
from trayvml.history.disk import codec
from trayvml.history.disk.blocks import _decode, coarse_from_fine, merge_coarse
from trayvml.history.disk.db import BUCKET_MS, DAY_MS, FILE_NAME, WIDE_BUCKET_MS, Block, Database, Device, Tier

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


class StoreReader:
    """Reads the store in ``folder``; raises sqlite3.Error / OSError when the file cannot be read."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._db: Database | None = None
        self._buckets: OrderedDict[tuple[int, int, int, tuple[str, ...]], _Buckets] = OrderedDict()
        self._buckets_bytes = 0

    def _database(self) -> Database | None:
        if self._db is None and (self.folder / FILE_NAME).exists():
            self._db = Database(self.folder, read_only=True)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def devices(self) -> list[Device]:
        db = self._database()
        return db.devices() if db is not None else []

    def _blocks(
        self, uuid: str, tiers: tuple[Tier, ...], start_s: float, end_s: float, data: bool = True
    ) -> tuple[Database, list[Block]] | None:
        db = self._database()
        if db is None:
            return None
        device = next((d for d in db.devices() if d.uuid == uuid), None)
        if device is None:
            return None
        return db, db.blocks(device.id, tiers, math.floor(start_s * 1000), math.ceil(end_s * 1000), data)

    def fine(self, uuid: str, start_s: float, end_s: float, keys: tuple[str, ...]) -> FineData:
        found = self._blocks(uuid, (Tier.FRESH, Tier.FINE), start_s, end_s)
        times, values, states = [], [], []
        for db, block, matrices in _decoded(found, codec.FINE_MATRICES):
            layout = db.layout(block.layout)
            t_ms = matrices[0][0]
            chosen = (t_ms >= start_s * 1000) & (t_ms <= end_s * 1000)
            if not chosen.any():
                continue
            # Only the columns asked for are restored (an export of a few of them, not all 57).
            source, present = _mapping(layout.keys, keys)
            q, missing, state = (m[source][:, chosen].T for m in matrices[1:])
            value = codec.restore_columns(q, np.array(layout.resolutions)[source])
            value[missing.astype(bool)] = np.nan
            value[:, ~present] = np.nan
            state[:, ~present] = MetricState.NO_DATA
            times.append(t_ms[chosen] / 1000)
            values.append(value)
            states.append(state)
        if not times:
            return FineData(np.empty(0), np.empty((0, len(keys))), np.empty((0, len(keys)), dtype=np.int64))
        t = np.concatenate(times)
        order = np.argsort(t, kind="stable")
        return FineData(t[order], np.concatenate(values)[order], np.concatenate(states)[order])

    def coarse(
        self, uuid: str, start_s: float, end_s: float, step_s: float, keys: tuple[str, ...], fresh: bool = True
    ) -> CoarseData:
        """Buckets of about ``step_s`` (rounded to whole minutes, or ten) over the range: never a week of
        seconds. ``fresh``: also the blocks of the hour not yet packed (a caller holding the last
        hours in memory leaves them out: a few hundred small blocks)."""
        bucket_ms = WIDE_BUCKET_MS if step_s * 1000 >= WIDE_BUCKET_MS else BUCKET_MS
        step_ms = max(1, round(step_s * 1000 / bucket_ms)) * bucket_ms
        first_ms = math.floor(start_s * 1000 / step_ms) * step_ms
        n = max(0, math.floor(end_s * 1000 / step_ms) * step_ms - first_ms) // step_ms + 1
        columns = len(keys)
        count = np.zeros((n, columns), dtype=np.int64)
        low = np.full((n, columns), np.inf)
        high = np.full((n, columns), -np.inf)
        total = np.zeros((n, columns))
        tiers = (Tier.COARSE, Tier.WIDE) + ((Tier.FRESH,) if fresh else ())
        found = self._blocks(uuid, tiers, first_ms / 1000, first_ms / 1000 + n * step_ms / 1000, data=False)
        db, listed = found if found is not None else (None, [])
        # A day with a wide block is read from it alone, when buckets are that wide.
        wide_days = {(b.start_ms // DAY_MS, b.layout) for b in listed if b.tier is Tier.WIDE}
        use_wide = bucket_ms == WIDE_BUCKET_MS
        used = [
            b
            for b in listed
            if (b.tier is Tier.WIDE) == use_wide
            or b.tier is Tier.FRESH
            or (b.tier is Tier.COARSE and (b.start_ms // DAY_MS, b.layout) not in wide_days)
        ]
        # Only the blobs of the blocks used and not in buckets before are read (a week of minutes
        # a device is over a megabyte that the wide blocks make unnecessary).
        kept = {b.id for b in used if (b.id, b.crc, step_ms, keys) in self._buckets}
        data = {b.id: b for b in db.with_data([b for b in used if b.id not in kept])} if db is not None else {}
        for block in used:
            if db is None or not (block.id in data or block.id in kept):
                continue  # deleted since it was listed
            buckets = self._in_buckets(db, data.get(block.id, block), step_ms, keys)
            if buckets is None:
                continue
            starts, c, lo_v, hi_v, su_v = buckets
            at = (starts - first_ms) // step_ms
            inside = (at >= 0) & (at < n)
            if not inside.any():
                continue
            at = at[inside]  # one row per bucket of ours: _in_buckets folded the block into them
            count[at] += c[inside]
            low[at] = np.minimum(low[at], lo_v[inside])
            high[at] = np.maximum(high[at], hi_v[inside])
            total[at] += su_v[inside]
        empty = count == 0
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(empty, np.nan, total / np.maximum(count, 1))
        low[empty] = np.nan
        high[empty] = np.nan
        times = (first_ms + np.arange(n) * step_ms) / 1000
        return CoarseData(times, count, low, mean, high, step_ms / 1000)

    def _in_buckets(self, db: Database, block: Block, step_ms: int, keys: tuple[str, ...]) -> _Buckets | None:
        """The block folded into buckets of ``step_ms`` as (bucket starts in ms, count, min, max, sum)
        of ``keys``, values restored; kept for packed blocks, which never change. None: damaged."""
        key = (block.id, block.crc, step_ms, keys)
        found = self._buckets.get(key)
        if found is not None:
            self._buckets.move_to_end(key)
            return found
        if not block.data:  # listed without its data, as it was in buckets, and dropped from them since
            reread = db.with_data([block])
            if not reread:
                return None  # deleted since (pruned): nothing to show of it
            block = reread[0]
        matrices = _decode(block, codec.FINE_MATRICES if block.tier is Tier.FRESH else codec.COARSE_MATRICES)
        if matrices is None:
            return None
        layout = db.layout(block.layout)
        parts = coarse_from_fine(matrices, BUCKET_MS) if block.tier is Tier.FRESH else matrices
        # Only the columns asked for, chosen before any arithmetic on them.
        source, present = _mapping(layout.keys, keys)
        parts = [parts[0], *(m[source] for m in parts[1:])]
        native_ms = WIDE_BUCKET_MS if block.tier is Tier.WIDE else BUCKET_MS
        merged = merge_coarse([parts], step_ms) if step_ms != native_ms else parts  # already in those buckets
        starts, c, lo, hi, su = merged[0][0], *(m.T for m in merged[1:])
        c = np.where(present, c, 0)
        resolutions = np.array(layout.resolutions)[source]
        lo_r, hi_r, su_v = codec.restore_columns(np.stack([lo, hi, su]), resolutions)  # one call
        found = (starts, c, np.where(c > 0, lo_r, np.inf), np.where(c > 0, hi_r, -np.inf), np.where(c > 0, su_v, 0.0))
        if block.tier is not Tier.FRESH:
            self._buckets[key] = found
            self._buckets_bytes += sum(a.nbytes for a in found)
            while self._buckets_bytes > BUCKETS_CACHE_BYTES and len(self._buckets) > 1:
                _, dropped = self._buckets.popitem(last=False)
                self._buckets_bytes -= sum(a.nbytes for a in dropped)
        return found

    def fine_start_s(self, uuid: str) -> float | None:
        """When the device's every-sample tier begins (older ones are pruned to minutes), or None."""
        found = self._blocks(uuid, (Tier.FRESH, Tier.FINE), 0.0, 2.0**52 / 1000, data=False)
        return min(b.start_ms for b in found[1]) / 1000 if found and found[1] else None

    def has_minutes(self, uuid: str, start_s: float, end_s: float) -> bool:
        """Whether per-minute buckets of the device overlap the range."""
        found = self._blocks(uuid, (Tier.COARSE,), start_s, end_s, data=False)
        return bool(found and found[1])

    def span_s(self) -> tuple[float, float] | None:
        db = self._database()
        span = db.span_ms() if db is not None else None
        return (span[0] / 1000, span[1] / 1000) if span else None

    def stats(self) -> Stats:
        db = self._database()
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


@functools.lru_cache(maxsize=64)
def _mapping(have: tuple[str, ...], want: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per wanted key: its column in ``have`` (0 where missing) and whether it is there."""
    position = {k: i for i, k in enumerate(have)}
    return np.array([position.get(k, 0) for k in want], dtype=np.intp), np.array([k in position for k in want])


def _decoded(
    found: tuple[Database, list[Block]] | None, count: int
) -> Iterator[tuple[Database, Block, list[np.ndarray]]]:
    if found is None:
        return
    db, blocks = found
    for block in blocks:
        matrices = _decode(block, count)
        if matrices is not None:
            yield db, block, matrices


def open_reader(folder: Path) -> StoreReader:
    reader = StoreReader(folder)
    try:
        reader.devices()
    except sqlite3.Error:
        reader.close()
        raise
    return reader
