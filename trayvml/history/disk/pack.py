"""The hourly packing of the history on disk, in a process of its own.

Once a UTC hour is over, its fresh blocks (a few seconds each) become one FINE block (every sample)
and one COARSE block (per minute) a device; the coarse blocks of a UTC day merge into one, and its
WIDE block (10-minute buckets) is made anew, today's too: a week's view then reads no day as
minutes. That decodes, joins and compresses (zstd's level 12) thousands of rows a device with
numpy: the writer (write.start_packer) runs ``main`` in a process of its own for it, so that the
idle tray never loads numpy (13 MiB) nor keeps the megabytes the packing freed (glibc holds them).

The child is handed the writer's lock (the same open file): while it packs, the store still has
one writer, even where the tray quits first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from pathlib import Path

import numpy as np

from trayvml.history.disk import codec, processes
from trayvml.history.disk.blocks import _concat_fine, _decode, coarse_from_fine, merge_coarse
from trayvml.history.disk.db import BUCKET_MS, DAY_MS, HOUR_MS, PACKED_LEVEL, WIDE_BUCKET_MS, Block, Database, Tier
from trayvml.history.disk.write import PACKER_AGAIN

log = logging.getLogger(__name__)

NICENESS = 10  # the packing waits for the work on the machine: it is never urgent


class _StoreChangedError(Exception):
    """Blocks read for an hour's packing went (pruned) before its transaction."""


def pack(db: Database, now_ms: int) -> bool:
    """Fresh blocks of UTC hours that are over become one fine and one coarse block each, of the
    GPUs and the host, then of their processes. False where an hour's blocks changed while it was
    packed (pruned for the size cap): that hour is left for the next packer."""
    hour_ms = now_ms - now_ms % HOUR_MS
    whole = True
    for device in db.devices():
        fresh = [b for b in db.blocks(device.id, (Tier.FRESH,), 0, hour_ms - 1) if b.start_ms < hour_ms]
        hours: dict[tuple[int, int], list[Block]] = {}
        for block in fresh:
            hours.setdefault((block.start_ms // HOUR_MS, block.layout), []).append(block)
        for (hour, layout_id), blocks in hours.items():
            try:
                _pack_hour(db, device.id, hour, layout_id, blocks)
            except _StoreChangedError:
                whole = False
    processes.compact(db, now_ms)
    return whole


def _pack_hour(db: Database, device: int, hour: int, layout_id: int, fresh: list[Block]) -> None:
    """An hour's fresh blocks become a fine block, and its day's coarse block (its minutes beside
    the day's others) and wide block are made anew. Decoded, joined and compressed before the write
    transaction, which only swaps blocks: the writer's commit never waits on the packing's CPU (at
    its low priority, on a machine whose cores are all busy)."""
    day = hour * HOUR_MS // DAY_MS
    start_ms, end_ms = day * DAY_MS, (day + 1) * DAY_MS - 1
    day_blocks = [
        b
        for b in db.blocks(device, (Tier.COARSE, Tier.WIDE), start_ms, end_ms)
        if b.layout == layout_id and start_ms <= b.start_ms <= end_ms
    ]
    parts = [m for m in (_decode(b, codec.FINE_MATRICES) for b in fresh) if m is not None]
    made: list[tuple[Tier, list[np.ndarray]]] = []
    if parts:
        fine = _concat_fine(parts)
        day_coarse = (_decode(b, codec.COARSE_MATRICES) for b in day_blocks if b.tier is Tier.COARSE)
        minutes = [m for m in day_coarse if m is not None]
        merged = merge_coarse([*minutes, coarse_from_fine(fine, BUCKET_MS)], BUCKET_MS)
        made = [(Tier.FINE, fine), (Tier.COARSE, merged), (Tier.WIDE, merge_coarse([merged], WIDE_BUCKET_MS))]
    encoded = [(tier, matrices[0][0], codec.encode(matrices, PACKED_LEVEL)) for tier, matrices in made]
    gone = [b.id for b in fresh] + ([b.id for b in day_blocks] if made else [])
    with db.transaction():
        marks = ",".join("?" * len(gone))
        if db.connection.execute(f"SELECT COUNT(*) FROM blocks WHERE id IN ({marks})", gone).fetchone()[0] < len(gone):
            raise _StoreChangedError  # rolled back: nothing lost, nothing twice
        db.delete(gone)
        for tier, times, (data, crc) in encoded:
            db.insert(device, tier, int(times[0]), int(times[-1]), len(times), layout_id, data, crc)


def main(argv: list[str]) -> int:
    """``FOLDER NOW_MS``: pack the store in FOLDER's hours before NOW_MS; 1 when it could not,
    PACKER_AGAIN when an hour changed under it (the writer starts another at once)."""
    logging.basicConfig(format="trayvml (packing the history): %(message)s", level=logging.WARNING)
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    folder, now_ms = Path(argv[0]), int(argv[1])
    try:
        db = Database(folder)
    except (OSError, sqlite3.Error) as error:  # said in one line; the writer tries again next hour
        log.warning("the history in %s could not be opened to be packed (%s)", folder, error)
        return 1
    try:
        if not pack(db, now_ms):
            return PACKER_AGAIN
    except (OSError, sqlite3.Error) as error:
        log.warning("the history in %s could not be packed (%s); trying again next hour", folder, error)
        return 1
    finally:
        db.close()
    return 0
