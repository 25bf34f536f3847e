"""Fresh blocks without numpy: the few seconds of rows the writer commits, encoded in pure Python.

The block format is codec.py's (its constants are here, the one place they are written): a header,
then each matrix as a type code a row and the rows' deltas along time, type by type, zstd over
all. The tray and `trayvml record` write a fresh block of each device every few seconds, a few
hundred numbers each; numpy is 13 MiB of the idle tray's memory (benchmarks/README.md), so the
writer's path stays without it. The hourly packing, which decodes and joins thousands of rows,
runs numpy in a process of its own (pack.py), and every reader is numpy's (codec.decode).

A matrix here is a list of rows, each a list of integers along time (codec.py's ``columns × rows``
arrays); tests/test_store.py checks that both encoders give the same bytes.
"""

from __future__ import annotations

import math
import operator
import struct
import sys
import zlib
from array import array
from collections.abc import Sequence
from itertools import chain

import zstandard

HEADER = struct.Struct("<BII")  # format, rows, columns
FORMAT = 1
# The integer types a row's deltas are kept in (codes 0-3: 1, 2, 4 and 8 bytes, little-endian), and
# the largest magnitude each of the first three holds.
TYPE_LIMITS = (2**7 - 1, 2**15 - 1, 2**31 - 1)
_TYPECODES = ("b", "h", "i", "q")  # array's codes of those sizes
# A count of resolution steps beyond this is a driver's garbage (a value of 2**64 read as a float):
# kept at the bound, so that a delta between two such counts (-bound to +bound) still fits in 64 bits.
STEPS_BOUND = 2**62 - 1

Matrix = Sequence[Sequence[int]]


def factors(resolution: float) -> tuple[float, float]:
    """(multiplier, divisor) that turn a value into its count of resolution steps.

    A resolution finer than 1 is an integer count per unit (0.01 → 100 per unit), so that the way
    back is one division and a whole value reads back exactly (9100 / 100 == 91.0)."""
    return (float(round(1 / resolution)), 1.0) if resolution < 1 else (1.0, float(resolution))


def steps(value: float, multiplier: float, divisor: float) -> int:
    """``value`` as a count of resolution steps, rounded half to even; 0 for NaN and infinities."""
    q = value * multiplier / divisor
    if not math.isfinite(q):
        return 0
    return max(-STEPS_BOUND, min(STEPS_BOUND, round(q)))


def value_rows(
    times_ms: Sequence[int],
    values: Sequence[Sequence[float]],
    states: Sequence[Sequence[int]],
    resolutions: Sequence[float],
) -> list[Matrix]:
    """A fine block's matrices (times, values as steps, NaN mask, capability states) from rows of
    samples: each column of ``values`` becomes a row of integers. A NaN's slot repeats the value
    before it (no delta there; the mask says it is not a value)."""
    quantised: list[list[int]] = []
    missing: list[list[int]] = []
    for column, resolution in zip(zip(*values, strict=True), resolutions, strict=True):
        multiplier, divisor = factors(resolution)
        counts = [value * multiplier / divisor for value in column]
        # Nearly every column is all values, finite and within the bound (a finite sum says no NaN
        # and no infinity is among them): rounded in one pass, as steps() rounds each. The writer
        # encodes every column of every device every few seconds, so this is most of its time.
        if math.isfinite(sum(counts)) and -STEPS_BOUND <= min(counts) <= max(counts) <= STEPS_BOUND:
            quantised.append(list(map(round, counts)))
            missing.append([0] * len(counts))
            continue
        q: list[int] = []
        mask: list[int] = []
        held = 0  # the last value's steps (before any: 0, a NaN's own)
        for value in column:
            if value != value:  # NaN
                mask.append(1)
                q.append(held)
            else:
                held = steps(value, multiplier, divisor)
                mask.append(0)
                q.append(held)
        quantised.append(q)
        missing.append(mask)
    state_rows = [list(row) for row in zip(*states, strict=True)]
    return [[list(times_ms)], quantised, missing, state_rows]


def _pack(matrix: Matrix) -> bytes:
    """A type code a row, then, type by type, the deltas of the rows of that type."""
    codes = bytearray()
    by_type: tuple[list[int], ...] = ([], [], [], [])
    small, medium, large = TYPE_LIMITS
    for row in matrix:
        size = len(row)
        first = row[0] if size else 0
        if row.count(first) == size:  # the same all along (most masks and states, idle metrics): a step, then none
            deltas = [first] + [0] * (size - 1) if size else []
            peak = abs(first)
        else:
            deltas = list(map(operator.sub, row, chain((0,), row)))  # each value less the one before
            peak = max(max(deltas), -min(deltas))
        code = 0 if peak <= small else 1 if peak <= medium else 2 if peak <= large else 3
        codes.append(code)
        by_type[code].extend(deltas)
    parts = [bytes(codes)]
    for typecode, deltas in zip(_TYPECODES, by_type, strict=True):
        packed = array(typecode, deltas)
        if sys.byteorder == "big":
            packed.byteswap()
        parts.append(packed.tobytes())
    return b"".join(parts)


def encode(matrices: Sequence[Matrix], level: int) -> tuple[bytes, int]:
    """The matrices (the first one row of times) as (zstd bytes, CRC-32): codec.encode's bytes."""
    rows = len(matrices[0][0])
    columns = len(matrices[1])
    raw = HEADER.pack(FORMAT, rows, columns) + b"".join(_pack(m) for m in matrices)
    data = zstandard.ZstdCompressor(level=level).compress(raw)
    return data, zlib.crc32(data)
