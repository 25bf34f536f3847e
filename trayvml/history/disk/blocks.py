"""Blocks of the store decoded, and per-minute buckets made from every-second rows (for the
writer and the readers alike)."""

from __future__ import annotations

import logging

import numpy as np

from trayvml.history.disk import codec
from trayvml.history.disk.db import (
    Block,
)

log = logging.getLogger(__name__)

_noted: set[tuple[int, int]] = set()


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """``values``' distinct values, ascending: ``np.unique``'s answer without its cost to the tray
    (numpy 2.4's asks ``np.ma`` whether the array is masked, and importing numpy.ma costs 1.3 MiB)."""
    ordered = np.sort(values, kind="stable")
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered


def _decode(block: Block, count: int) -> list[np.ndarray] | None:
    try:
        return codec.decode(block.data, block.crc, count)
    except codec.DamagedBlockError as error:
        note_damaged(block, str(error))
        return None


def decode_deltas(block: Block, count: int, wanted: np.ndarray) -> np.ndarray | None:
    """codec.decode_deltas of the block's ``wanted`` rows; None (said once) where it is damaged."""
    try:
        return codec.decode_deltas(block.data, block.crc, count, wanted)
    except codec.DamagedBlockError as error:
        note_damaged(block, str(error))
        return None


def note_damaged(block: Block, why: str) -> None:
    """One log line per damaged block, however often it is read."""
    if (block.id, block.crc) not in _noted:
        _noted.add((block.id, block.crc))
        log.warning(
            "a damaged block of history (%s to %s UTC, %s) was skipped", _utc(block.start_ms), _utc(block.end_ms), why
        )


def _utc(t_ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(t_ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _concat_fine(parts: list[list[np.ndarray]]) -> list[np.ndarray]:
    joined = [np.concatenate([p[k] for p in parts], axis=1) for k in range(codec.FINE_MATRICES)]
    order = np.argsort(joined[0][0], kind="stable")
    return [m[:, order] for m in joined]


def coarse_from_fine(fine: list[np.ndarray], bucket_ms: int) -> list[np.ndarray]:
    """Per bucket: starts, count, min, max and sum (of the integers) of each column."""
    times, q, missing = fine[0][0], fine[1].T, fine[2].T.astype(bool)
    present = ~missing
    big = np.iinfo(np.int64).max
    return _reduce(
        times - times % bucket_ms,
        present.astype(np.int64),
        np.where(present, q, big),
        np.where(present, q, -big),
        np.where(present, q, 0),
    )


def merge_coarse(parts: list[list[np.ndarray]], bucket_ms: int) -> list[np.ndarray]:
    joined = [np.concatenate([p[k] for p in parts], axis=1) for k in range(codec.COARSE_MATRICES)]
    starts = joined[0][0]
    count, low, high, total = (m.T for m in joined[1:])
    # An empty bucket's min and max are kept as 0 (see _reduce): no part of a merged bucket's. Taken
    # for values, a minute a GPU slept gave its ten minutes a min of 0 °C.
    empty = count == 0
    if empty.any():
        big = np.iinfo(np.int64).max
        low, high = np.where(empty, big, low), np.where(empty, -big, high)
    return _reduce(starts - starts % bucket_ms, count, low, high, total)


# The largest sum a bucket keeps: int64's largest less the float spacing there, so that a sum held
# at it is a float's too (see _sums). Not -2**63 either way: its magnitude is no int64's.
SUM_BOUND = 2**63 - 1024
_EXACT_SUM = 2**62  # a float sum of smaller magnitude says the exact one did not wrap round


def _sums(values: np.ndarray, first: np.ndarray) -> np.ndarray:
    """np.add.reduceat of the rows from each of ``first`` on, held at ±SUM_BOUND where the sum is
    beyond int64 (where numpy's wraps round: three readings at the writer's bound, fresh.STEPS_BOUND,
    summed to a negative number, and a bucket's mean read back below its min). Exact below 2**62,
    a float's sum above it (a relative error of about 1e-16, on readings that large)."""
    total = np.add.reduceat(values, first, axis=0)
    if not values.size:
        return total
    largest = max(int(values.max()), -int(values.min()))
    longest = int(np.diff(first, append=len(values)).max())
    if largest * longest < _EXACT_SUM:  # the usual: no sum can come near the bound
        return total
    approx = np.add.reduceat(values.astype(np.float64), first, axis=0)
    far = np.abs(approx) >= _EXACT_SUM
    total[far] = np.clip(approx[far], -SUM_BOUND, SUM_BOUND).astype(np.int64)
    return total


def _reduce(
    keys: np.ndarray, count: np.ndarray, low: np.ndarray, high: np.ndarray, total: np.ndarray
) -> list[np.ndarray]:
    """Rows with the same key (bucket start) folded into one: counts and sums added, min of mins."""
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    big = np.iinfo(np.int64).max
    count_b = np.add.reduceat(count[order], first, axis=0)
    low_b = np.minimum.reduceat(low[order], first, axis=0)
    high_b = np.maximum.reduceat(high[order], first, axis=0)
    total_b = _sums(total[order], first)
    empty = count_b == 0
    # An empty bucket's min and max are 0, not the sentinels: zeros cost nothing once compressed.
    low_b[empty | (low_b == big)] = 0
    high_b[empty | (high_b == -big)] = 0
    return [keys[first][None, :], count_b.T, low_b.T, high_b.T, total_b.T]
