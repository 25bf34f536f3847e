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
from trayvml.history.disk import codec
from trayvml.history.disk.blocks import _decode, coarse_from_fine, merge_coarse
from trayvml.history.disk.db import BUCKET_MS, DAY_MS, FILE_NAME, WIDE_BUCKET_MS, Block, Database, Device, Layout, Tier

_Buckets = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
COARSE_CACHE = 128  # decoded coarse and wide blocks kept: a week of 8 GPUs and the host, twice over


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
        self._cache: OrderedDict[tuple[int, int], list[np.ndarray]] = OrderedDict()
        self._buckets: OrderedDict[tuple[int, int, int, tuple[str, ...]], _Buckets] = OrderedDict()

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
            t_ms, q, missing, state = matrices[0][0], matrices[1].T, matrices[2].T.astype(bool), matrices[3].T
            chosen = (t_ms >= start_s * 1000) & (t_ms <= end_s * 1000)
            if not chosen.any():
                continue
            value = codec.restore_columns(q[chosen], np.array(layout.resolutions))
            value[missing[chosen]] = np.nan
            times.append(t_ms[chosen] / 1000)
            values.append(_columns(value, layout, keys, np.nan))
            states.append(_columns(state[chosen], layout, keys, MetricState.NO_DATA))
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
        if found is not None:  # a day with a wide block is read from it alone, when buckets are that wide
            wide_days = {(b.start_ms // DAY_MS, b.layout) for b in found[1] if b.tier is Tier.WIDE}
            use_wide = bucket_ms == WIDE_BUCKET_MS
            found = (
                found[0],
                [
                    b
                    for b in found[1]
                    if (b.tier is Tier.WIDE) == use_wide
                    or b.tier is Tier.FRESH
                    or (b.tier is Tier.COARSE and (b.start_ms // DAY_MS, b.layout) not in wide_days)
                ],
            )
            # Only the blobs of the blocks used and not decoded before are read (a week of minutes
            # a device is over a megabyte that the wide blocks make unnecessary).
            chosen = [b for b in found[1] if (b.id, b.crc) not in self._cache]
            data = {b.id: b for b in found[0].with_data(chosen)}
            found = (found[0], [data.get(b.id, b) for b in found[1] if b.id in data or (b.id, b.crc) in self._cache])
        for db, block, matrices in self._decoded_coarse(found):
            starts, c, lo_v, hi_v, su_v = self._in_buckets(db, block, matrices, step_ms, keys)
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

    def _in_buckets(
        self, db: Database, block: Block, matrices: list[np.ndarray], step_ms: int, keys: tuple[str, ...]
    ) -> _Buckets:
        """The block folded into buckets of ``step_ms`` as (bucket starts in ms, count, min, max, sum)
        of ``keys``, values restored; kept for packed blocks, which never change."""
        key = (block.id, block.crc, step_ms, keys)
        found = self._buckets.get(key)
        if found is not None:
            self._buckets.move_to_end(key)
            return found
        layout = db.layout(block.layout)
        parts = coarse_from_fine(matrices, BUCKET_MS) if block.tier is Tier.FRESH else matrices
        native_ms = WIDE_BUCKET_MS if block.tier is Tier.WIDE else BUCKET_MS
        merged = merge_coarse([parts], step_ms) if step_ms != native_ms else parts  # already in those buckets
        starts, c, lo, hi, su = merged[0][0], *(m.T for m in merged[1:])
        lo_r, hi_r, su_v = codec.restore_columns(np.stack([lo, hi, su]), np.array(layout.resolutions))  # one call
        lo_v = np.where(c > 0, lo_r, np.inf)
        hi_v = np.where(c > 0, hi_r, -np.inf)
        found = (
            starts,
            _columns(c, layout, keys, 0),
            _columns(lo_v, layout, keys, np.inf),
            _columns(hi_v, layout, keys, -np.inf),
            _columns(su_v, layout, keys, 0.0),
        )
        if block.tier is not Tier.FRESH:
            self._buckets[key] = found
            while len(self._buckets) > COARSE_CACHE:
                self._buckets.popitem(last=False)
        return found

    def _decoded_coarse(
        self, found: tuple[Database, list[Block]] | None
    ) -> Iterator[tuple[Database, Block, list[np.ndarray]]]:
        """Like _decoded_any, keeping the last COARSE_CACHE coarse and wide blocks decoded: a block
        never changes once written (a merge writes a new one), and a range that moves by a bucket
        would otherwise decode its week again."""
        yield from _decoded_any(found, self._cache)

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


def _columns(matrix: np.ndarray, layout: Layout, keys: tuple[str, ...], fill: float) -> np.ndarray:
    """``matrix`` (rows × the layout's columns) as rows × ``keys``; ``fill`` where the layout lacks a key."""
    if layout.keys == keys:
        return matrix
    source, present = _mapping(layout.keys, keys)
    out = matrix[:, source]
    if not present.all():
        out = out.astype(np.result_type(out.dtype, np.asarray(fill).dtype))
        out[:, ~present] = fill
    return out


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


def _decoded_any(
    found: tuple[Database, list[Block]] | None, cache: OrderedDict[tuple[int, int], list[np.ndarray]]
) -> Iterator[tuple[Database, Block, list[np.ndarray]]]:
    if found is None:
        return
    db, blocks = found
    for block in blocks:
        key = (block.id, block.crc)
        matrices = cache.get(key)
        if matrices is not None:
            cache.move_to_end(key)
        else:
            if not block.data:  # listed without its data, as it was decoded, and dropped from the cache since
                reread = db.with_data([block])
                if not reread:
                    continue  # deleted since (pruned): nothing to show of it
                block = reread[0]
            matrices = _decode(block, codec.FINE_MATRICES if block.tier is Tier.FRESH else codec.COARSE_MATRICES)
            if matrices is not None and block.tier in (Tier.COARSE, Tier.WIDE):
                cache[key] = matrices
                while len(cache) > COARSE_CACHE:
                    cache.popitem(last=False)
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
