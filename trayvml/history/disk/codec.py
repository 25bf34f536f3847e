"""How a block of history is laid out on disk: integers, column by column, delta-coded, zstd.

Each value is rounded to its metric's resolution (the catalog's ``stored_resolution``), so every
column is a column of integers. Along time each column keeps only its differences, narrowed to
the smallest integer type that holds them: a clock or a limit that does not move is a run of
zero bytes, which zstd turns into almost nothing. No compressor of our own: zstandard does it.

A block is a few integer matrices of ``columns × rows`` (one row for the times): a fine block
holds each sample (times, values, a NaN mask, capability states); a coarse block holds per
bucket the count of values, their min, max and sum, so that min/mean/max read back are those of
the samples in the bucket, exactly.
"""

from __future__ import annotations

import functools
import itertools
import struct
import zlib

import numpy as np
import zstandard

_HEADER = struct.Struct("<BII")  # format, rows, columns
FORMAT = 1
_DTYPES: tuple[np.dtype[np.signedinteger], ...] = (np.dtype("<i1"), np.dtype("<i2"), np.dtype("<i4"), np.dtype("<i8"))
_LIMITS = tuple(np.iinfo(d).max for d in _DTYPES[:-1])
FINE_MATRICES = 4  # times, values, nan mask, states
COARSE_MATRICES = 5  # bucket starts, count, min, max, sum


class DamagedBlockError(ValueError):
    """A block whose checksum or contents do not add up."""


def _factors(resolutions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _factors_of(tuple(resolutions.tolist()))


@functools.lru_cache(maxsize=64)
def _factors_of(resolutions_tuple: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(multiplier, divisor) per column that turn a value into its count of resolution steps.

    A resolution finer than 1 is an integer count per unit (0.01 → 100 per unit), so that the way
    back is one division and a whole value reads back exactly (9100 / 100 == 91.0).
    """
    resolutions = np.array(resolutions_tuple)
    fine = resolutions < 1
    per_unit = np.where(fine, np.rint(1 / np.where(fine, resolutions, 1)), 1.0)
    return per_unit, np.where(fine, 1.0, resolutions)


def quantise_columns(values: np.ndarray, resolutions: np.ndarray) -> np.ndarray:
    """``values`` (rows × columns, float) to integers, each column at its resolution; NaN → 0."""
    multiplier, divisor = _factors(np.asarray(resolutions, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        q = np.rint(values * multiplier / divisor)
    q[~np.isfinite(q)] = 0
    return q.astype(np.int64)


def restore_columns(q: np.ndarray, resolutions: np.ndarray) -> np.ndarray:
    """The values integers from quantise_columns stand for."""
    multiplier, divisor = _factors(np.asarray(resolutions, dtype=np.float64))
    return q * divisor / multiplier


def _pack(matrix: np.ndarray) -> bytes:
    """One matrix (columns × rows, int64): a type code per column, then, type by type, the deltas of
    the columns of that type as one array (so that decoding is a few numpy calls, not one a column)."""
    deltas = np.diff(matrix, axis=1, prepend=np.zeros((matrix.shape[0], 1), dtype=np.int64))
    peak = np.abs(deltas).max(axis=1, initial=0)
    codes = np.searchsorted(np.array(_LIMITS), peak, side="left").astype(np.uint8)
    parts = [codes.tobytes()]
    for code, dtype in enumerate(_DTYPES):
        parts.append(deltas[codes == code].astype(dtype).tobytes())
    return b"".join(parts)


def _unpack(data: memoryview, offset: int, matrix: np.ndarray) -> int:
    """The deltas of one matrix at ``offset`` into ``matrix`` (columns × rows); the offset after them."""
    columns, rows = matrix.shape
    codes = np.frombuffer(data, dtype=np.uint8, count=columns, offset=offset)
    offset += columns
    per_code = np.bincount(codes, minlength=len(_DTYPES))
    if len(per_code) > len(_DTYPES):
        raise DamagedBlockError("unknown integer type")
    used = np.flatnonzero(per_code).tolist()  # only the types present: few numpy calls a matrix
    for code in used:
        dtype = _DTYPES[code]
        count = int(per_code[code]) * rows
        deltas = np.frombuffer(data, dtype=dtype, count=count, offset=offset).reshape(-1, rows)
        if len(used) == 1:
            matrix[:] = deltas
        else:
            matrix[codes == code] = deltas
        offset += count * dtype.itemsize
    return offset


def encode(matrices: list[np.ndarray], level: int) -> tuple[bytes, int]:
    """The matrices (each columns × rows; the first one row of times) as (zstd bytes, CRC-32)."""
    rows = matrices[0].shape[1]
    columns = matrices[1].shape[0]
    raw = _HEADER.pack(FORMAT, rows, columns) + b"".join(_pack(np.asarray(m, dtype=np.int64)) for m in matrices)
    data = zstandard.ZstdCompressor(level=level).compress(raw)
    return data, zlib.crc32(data)


def decode(data: bytes, crc: int, count: int) -> list[np.ndarray]:
    """The ``count`` matrices of a block; raises DamagedBlockError when it is not whole."""
    if zlib.crc32(data) != crc:
        raise DamagedBlockError("checksum mismatch")
    try:
        raw = memoryview(zstandard.ZstdDecompressor().decompress(data))
        version, rows, columns = _HEADER.unpack_from(raw)
        if version != FORMAT:
            raise DamagedBlockError(f"format {version}")
        offset = _HEADER.size
        # All matrices in one array, summed along time at once: a block of 10-minute buckets is
        # small, and one numpy call per matrix was most of its decoding.
        deltas = np.empty((1 + (count - 1) * columns, rows), dtype=np.int64)
        starts = [0] + [1 + k * columns for k in range(count)]  # where each matrix begins, then the end
        for first, end in itertools.pairwise(starts):
            offset = _unpack(raw, offset, deltas[first:end])
        if offset != len(raw):
            raise DamagedBlockError("length mismatch")
    except (zstandard.ZstdError, ValueError, struct.error) as error:
        raise DamagedBlockError(str(error)) from None
    values = np.cumsum(deltas, axis=1)
    return [values[first:end] for first, end in itertools.pairwise(starts)]
