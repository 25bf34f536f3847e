"""The hourly packing of the history on disk, in a process of its own.

Once a UTC hour is over, its fresh blocks (a few seconds each) become one FINE block (every sample)
and one COARSE block (per minute) a device; the coarse blocks of a UTC day merge into one, and its
WIDE block (10-minute buckets) is made anew, today's too: a week's view then reads no day as
minutes. That decodes, joins and compresses (zstd's level 12) thousands of rows a device with
numpy: the writer (write.py) starts ``python -m trayvml.history.disk.pack`` for it, so that the
idle tray never loads numpy (13 MiB) nor keeps the megabytes the packing freed (glibc holds them).

The child is handed the writer's lock (the same open file): while it packs, the store still has
one writer, even where the tray quits first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
from pathlib import Path

import numpy as np

from trayvml.history.disk import codec, processes
from trayvml.history.disk.blocks import _concat_fine, _decode, coarse_from_fine, merge_coarse
from trayvml.history.disk.db import BUCKET_MS, DAY_MS, HOUR_MS, PACKED_LEVEL, WIDE_BUCKET_MS, Block, Database, Tier

log = logging.getLogger(__name__)

NICENESS = 10  # the packing waits for the work on the machine: it is never urgent


def pack(db: Database, now_ms: int) -> None:
    """Fresh blocks of UTC hours that are over become one fine and one coarse block each, of the
    GPUs and the host, then of their processes."""
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
                _merge_day(db, device.id, day, layout_id)
    processes.compact(db, now_ms)


def _merge_day(db: Database, device: int, day: int, layout_id: int) -> None:
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


def _insert(db: Database, device: int, tier: Tier, layout: int, matrices: list[np.ndarray]) -> None:
    data, crc = codec.encode(matrices, PACKED_LEVEL)
    times = matrices[0][0]
    db.insert(device, tier, int(times[0]), int(times[-1]), len(times), layout, data, crc)


def main(argv: list[str]) -> int:
    """``FOLDER NOW_MS``: pack the store in FOLDER's hours before NOW_MS; 1 when it could not."""
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
        pack(db, now_ms)
    except (OSError, sqlite3.Error) as error:
        log.warning("the history in %s could not be packed (%s); trying again next hour", folder, error)
        return 1
    finally:
        db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
