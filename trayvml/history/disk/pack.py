"""The hourly packing of the history on disk, in a process of its own.

Once a UTC hour is over, its fresh blocks (a few seconds each) become one FINE block (every sample)
and one COARSE block (per minute) a device; the coarse blocks of a UTC day merge into one, and the
WIDE block (10-minute buckets) of its UTC week is made anew, this week's too: a week's view then
reads no day as minutes, and one or two blocks a device (a block a day made that eight, each with
a cost of its own to read). That decodes, joins and compresses (zstd's level 12) thousands of rows
a device with numpy: the writer (write.start_packer) runs ``main`` in a process of its own for it,
so that the idle tray never loads numpy (13 MiB) nor keeps the megabytes the packing freed (glibc
holds them).

The child is handed the writer's lock (the same open file): while it packs, the store still has
one writer, even where the tray quits first.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sqlite3
from pathlib import Path

import numpy as np

from trayvml.history.disk import codec, processes
from trayvml.history.disk.blocks import _concat_fine, _decode, coarse_from_fine, distinct_sorted, merge_coarse
from trayvml.history.disk.db import (
    BUCKET_MS,
    DAY_MS,
    FRESH_LEVEL,
    HOUR_MS,
    PACKED_LEVEL,
    WEEK_MS,
    WIDE_BUCKET_MS,
    Block,
    Database,
    Tier,
)
from trayvml.history.disk.write import PACKER_AGAIN

log = logging.getLogger(__name__)

NICENESS = 10  # the packing waits for the work on the machine: it is never urgent


class _StoreChangedError(Exception):
    """Blocks read for an hour's packing went (pruned) before its transaction."""


def pack(db: Database, now_ms: int, keep_ms: int | None) -> bool:
    """Fresh blocks of UTC hours that are over become one fine and one coarse block each, of the
    GPUs and the host, then of their processes; a wide block keeps no day that was over before the
    minutes' span (``keep_ms`` back from ``now_ms``; None: untrimmed) began. False where an hour's
    blocks changed while it was packed (pruned for the size cap: that hour is left for the next
    packer), or rows went back as fresh blocks of an hour that is over."""
    hour_ms = now_ms - now_ms % HOUR_MS
    whole = True
    for device in db.devices():
        fresh = [b for b in db.blocks(device.id, (Tier.FRESH,), 0, hour_ms - 1) if b.start_ms < hour_ms]
        hours: dict[tuple[int, int], list[Block]] = {}
        for block in fresh:
            hours.setdefault((block.start_ms // HOUR_MS, block.layout), []).append(block)
        for (hour, layout_id), blocks in hours.items():
            try:
                # Rows given back as fresh blocks of another hour that is over: packed by the next
                # packer, started at once (PACKER_AGAIN), not an hour later.
                whole &= _pack_hour(db, device.id, hour, layout_id, blocks) >= hour_ms // HOUR_MS
            except _StoreChangedError:
                whole = False
        if keep_ms is not None:
            trim_wide(db, device.id, now_ms - keep_ms)
    processes.compact(db, now_ms)
    return whole


def _pack_hour(db: Database, device: int, hour: int, layout_id: int, fresh: list[Block]) -> float:
    """An hour's fresh blocks become a fine block, its day's coarse block is made anew (its minutes
    beside the day's others), and its week's wide block (see _wide_week). Decoded, joined and
    compressed before the write transaction, which only swaps blocks: the writer's commit never
    waits on the packing's CPU (at its low priority, on a machine whose cores are all busy).
    Returns the earliest hour of rows given back as fresh blocks (infinity: none)."""
    day = hour * HOUR_MS // DAY_MS
    week_ms = day * DAY_MS - day * DAY_MS % WEEK_MS
    in_week = [
        b
        for b in db.blocks(device, (Tier.COARSE, Tier.WIDE), week_ms, week_ms + WEEK_MS - 1)
        if b.layout == layout_id and week_ms <= b.start_ms < week_ms + WEEK_MS
    ]
    day_coarse = [b for b in in_week if b.tier is Tier.COARSE and b.start_ms // DAY_MS == day]
    wide = [b for b in in_week if b.tier is Tier.WIDE]
    parts = [m for m in (_decode(b, codec.FINE_MATRICES) for b in fresh) if m is not None]
    made: list[tuple[Tier, list[np.ndarray]]] = []
    if parts:
        # The rows of other hours (a block that began before the hour ended; a clock set back) go
        # back as fresh blocks of their own hours: a day's minutes are then that day's alone.
        joined = _concat_fine(parts)
        row_hours = joined[0][0] // HOUR_MS
        for other in distinct_sorted(row_hours).tolist():
            rows = row_hours == other
            made.append((Tier.FINE if other == hour else Tier.FRESH, [m[:, rows] for m in joined]))
    fine = next((matrices for tier, matrices in made if tier is Tier.FINE), None)
    if fine is not None:  # (none only where a block's start disagrees with its rows)
        minutes = [m for m in (_decode(b, codec.COARSE_MATRICES) for b in day_coarse) if m is not None]
        merged = merge_coarse([*minutes, coarse_from_fine(fine, BUCKET_MS)], BUCKET_MS)
        other_days = [b for b in in_week if b.tier is Tier.COARSE and b.start_ms // DAY_MS != day]
        made += [(Tier.COARSE, merged), (Tier.WIDE, _wide_week(wide, other_days, merged, day))]
    encoded = [
        (tier, matrices[0][0], codec.encode(matrices, FRESH_LEVEL if tier is Tier.FRESH else PACKED_LEVEL))
        for tier, matrices in made
    ]
    gone = [b.id for b in fresh] + ([b.id for b in day_coarse + wide] if fine is not None else [])
    _swap(db, device, layout_id, gone, encoded)
    return min((int(times[0]) // HOUR_MS for tier, times, _ in encoded if tier is Tier.FRESH), default=math.inf)


def _wide_week(wide: list[Block], other_days: list[Block], day_minutes: list[np.ndarray], day: int) -> list[np.ndarray]:
    """The week's 10-minute buckets in one block: those of its wide blocks (the week's, or the days'
    of a store packed before weeks), the day's made anew from its minutes, and those of a day whose
    minutes have none (packed before the wide tier, or its wide block damaged): a reader takes a
    wide block's days from it alone. (A day's minutes packed before hours were packed whole may
    hold the next day's first seconds: each day's buckets are made from its own minutes only.)"""
    held = []
    for matrices in (_decode(b, codec.COARSE_MATRICES) for b in wide):
        if matrices is not None:
            held.append(_on_day(matrices, day, on=False))
    covered = {int(d) for m in held for d in m[0][0] // DAY_MS} | {day}
    unpacked = (
        (_decode(b, codec.COARSE_MATRICES), b.start_ms // DAY_MS)
        for b in other_days
        if b.start_ms // DAY_MS not in covered
    )
    minutes = [_on_day(day_minutes, day)]
    minutes += [_on_day(m, own) for m, own in unpacked if m is not None]
    return merge_coarse([*held, *(merge_coarse([m], WIDE_BUCKET_MS) for m in minutes)], WIDE_BUCKET_MS)


def _on_day(matrices: list[np.ndarray], day: int, on: bool = True) -> list[np.ndarray]:
    """The buckets (columns) of coarse ``matrices`` in the UTC ``day`` (``on``), or in the others."""
    kept = (matrices[0][0] // DAY_MS == day) == on
    return [m[:, kept] for m in matrices]


def trim_wide(db: Database, device: int, cut_ms: int) -> None:
    """The 10-minute buckets of the days wholly before ``cut_ms`` (the minutes' span) dropped from a
    week's wide block that reaches past it: the days go with their minutes, not a week later."""
    cut_day_ms = cut_ms - cut_ms % DAY_MS
    for block in db.blocks(device, (Tier.WIDE,), cut_day_ms, cut_day_ms):
        matrices = _decode(block, codec.COARSE_MATRICES) if block.start_ms < cut_day_ms else None
        if matrices is None:  # none before the cut, or damaged (the age prune takes it, whole)
            continue
        kept = matrices[0][0] >= cut_day_ms
        left = [m[:, kept] for m in matrices]
        encoded = [(Tier.WIDE, left[0][0], codec.encode(left, PACKED_LEVEL))] if kept.any() else []
        with contextlib.suppress(_StoreChangedError):  # pruned meanwhile: nothing left to trim
            _swap(db, device, block.layout, [block.id], encoded)


def _swap(
    db: Database, device: int, layout_id: int, gone: list[int], made: list[tuple[Tier, np.ndarray, tuple[bytes, int]]]
) -> None:
    """Blocks ``gone`` replaced by those ``made`` (tier, times, encoded) in one transaction; raises
    _StoreChangedError, writing nothing, where one of ``gone`` went meanwhile."""
    with db.transaction():
        marks = ",".join("?" * len(gone))
        if db.connection.execute(f"SELECT COUNT(*) FROM blocks WHERE id IN ({marks})", gone).fetchone()[0] < len(gone):
            raise _StoreChangedError  # rolled back: nothing lost, nothing twice
        db.delete(gone)
        for tier, times, (data, crc) in made:
            db.insert(device, tier, int(times[0]), int(times[-1]), len(times), layout_id, data, crc)


def main(argv: list[str]) -> int:
    """``FOLDER NOW_MS [KEEP_MS]``: pack the store in FOLDER's hours before NOW_MS, its minutes kept
    KEEP_MS (none: the wide blocks untrimmed, as a tray from before starts it); 1 when it could not,
    PACKER_AGAIN when an hour is left to pack (the writer starts another at once)."""
    logging.basicConfig(format="trayvml (packing the history): %(message)s", level=logging.WARNING)
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    folder, now_ms = Path(argv[0]), int(argv[1])
    keep_ms = int(argv[2]) if len(argv) > 2 else None  # None: started by a tray from before (the age prune trims)
    try:
        db = Database(folder)
    except (OSError, sqlite3.Error) as error:  # said in one line; the writer tries again next hour
        log.warning("the history in %s could not be opened to be packed (%s)", folder, error)
        return 1
    try:
        if not pack(db, now_ms, keep_ms):
            return PACKER_AGAIN
    except (OSError, sqlite3.Error) as error:
        log.warning("the history in %s could not be packed (%s); trying again next hour", folder, error)
        return 1
    finally:
        db.close()
    return 0
