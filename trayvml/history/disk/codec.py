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
import threading
import zlib

import numpy as np
import zstandard

from trayvml.history.disk.fresh import FORMAT, TYPE_LIMITS, factors
from trayvml.history.disk.fresh import HEADER as _HEADER

# The types of fresh.TYPE_LIMITS' codes (the writer's fresh blocks are encoded there, without numpy).
_DTYPES: tuple[np.dtype[np.signedinteger], ...] = (np.dtype("<i1"), np.dtype("<i2"), np.dtype("<i4"), np.dtype("<i8"))
_CODE_BYTES = tuple(bytes([code]) for code in range(len(_DTYPES)))
_ITEM_BYTES = np.array([d.itemsize for d in _DTYPES], dtype=np.int64)
FINE_MATRICES = 4  # times, values, nan mask, states
COARSE_MATRICES = 5  # bucket starts, count, min, max, sum


_local = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    """One a thread (one is not to be shared between threads; making one for each of a redraw's
    hundred blocks costs more than decompressing some of them)."""
    found = getattr(_local, "decompressor", None)
    if found is None:
        found = _local.decompressor = zstandard.ZstdDecompressor()
    return found


class DamagedBlockError(ValueError):
    """A block whose checksum or contents do not add up."""


def _factors(resolutions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _factors_of(tuple(resolutions.tolist()))


@functools.lru_cache(maxsize=64)
def _factors_of(resolutions_tuple: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(multiplier, divisor) per column (fresh.factors): a value is their count of resolution steps."""
    pairs = np.array([factors(r) for r in resolutions_tuple], dtype=np.float64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def restore_columns(q: np.ndarray, resolutions: np.ndarray) -> np.ndarray:
    """The values the integers of fresh.value_rows stand for."""
    multiplier, divisor = _factors(np.asarray(resolutions, dtype=np.float64))
    return q * divisor / multiplier


def restore_rows(q: np.ndarray, resolutions: np.ndarray) -> np.ndarray:
    """restore_columns for ``q`` a row a column (as blocks hold them), in place of a float copy."""
    multiplier, divisor = _factors(np.asarray(resolutions, dtype=np.float64))
    values = q.astype(np.float64)
    values *= divisor[:, None]  # the same two roundings as restore_columns: the same values
    values /= multiplier[:, None]
    return values


def _pack(matrix: np.ndarray) -> bytes:
    """One matrix (columns × rows, int64): a type code per column, then, type by type, the deltas of
    the columns of that type as one array (so that decoding is a few numpy calls, not one a column).
    fresh._pack writes the same bytes without numpy."""
    deltas = np.diff(matrix, axis=1, prepend=np.zeros((matrix.shape[0], 1), dtype=np.int64))
    # As unsigned: int64's abs of -2**63 (a delta between sums of opposite signs) is itself.
    peak = np.abs(deltas).view(np.uint64).max(axis=1, initial=0)
    codes = np.searchsorted(np.array(TYPE_LIMITS, dtype=np.uint64), peak, side="left").astype(np.uint8)
    parts = [codes.tobytes()]
    for code, dtype in enumerate(_DTYPES):
        parts.append(deltas[codes == code].astype(dtype).tobytes())
    return b"".join(parts)


def encode(matrices: list[np.ndarray], level: int) -> tuple[bytes, int]:
    """The matrices (each columns × rows; the first one row of times) as (zstd bytes, CRC-32)."""
    rows = matrices[0].shape[1]
    columns = matrices[1].shape[0]
    raw = _HEADER.pack(FORMAT, rows, columns) + b"".join(_pack(np.asarray(m, dtype=np.int64)) for m in matrices)
    data = zstandard.ZstdCompressor(level=level).compress(raw)
    return data, zlib.crc32(data)


def decode(data: bytes, crc: int, count: int) -> list[np.ndarray]:
    """The ``count`` matrices of a block; raises DamagedBlockError when it is not whole."""
    values = decode_rows(data, crc, count)
    columns = (len(values) - 1) // max(1, count - 1)
    starts = [0] + [1 + k * columns for k in range(count)]  # where each matrix begins, then the end
    return [values[first:end] for first, end in itertools.pairwise(starts)]


def decode_rows(data: bytes, crc: int, count: int) -> np.ndarray:
    """The ``count`` matrices of a block as one array, one above the other (the one row of times,
    then ``count - 1`` matrices of a row a column); raises DamagedBlockError when it is not whole."""
    return np.cumsum(decode_deltas(data, crc, count), axis=1)


def decode_deltas(data: bytes, crc: int, count: int, wanted: np.ndarray | None = None) -> np.ndarray:
    """decode_rows before the sum along time; ``wanted``: those rows only (a reader of a few columns)."""
    if zlib.crc32(data) != crc:
        raise DamagedBlockError("checksum mismatch")
    try:
        raw = _decompressor().decompress(data)
        version, rows, columns = _HEADER.unpack_from(raw)
        if version != FORMAT:
            raise DamagedBlockError(f"format {version}")
        # Each matrix is its columns' type codes, then their deltas type by type (see _pack).
        offset = _HEADER.size
        codes: list[bytes] = []
        parts_at: list[tuple[int, int]] = []  # per matrix, then per type: where its rows of that type lie
        for k in range(count):
            width = 1 if k == 0 else columns  # the first matrix is the one row of times
            these = raw[offset : offset + width]
            offset += width
            codes.append(these)
            found = 0
            for code, dtype in enumerate(_DTYPES):
                used = these.count(_CODE_BYTES[code])
                found += used
                parts_at.append((offset, offset + used * rows * dtype.itemsize))
                offset = parts_at[-1][1]
            if found != width:
                raise DamagedBlockError("unknown integer type")
        if offset != len(raw):
            raise DamagedBlockError("length mismatch")
        row_codes = np.frombuffer(b"".join(codes), dtype=np.uint8)
        if wanted is not None:
            if len(wanted) and not 0 <= int(wanted.min()) <= int(wanted.max()) < len(row_codes):
                raise DamagedBlockError(f"its {columns} columns do not hold the rows of its layout")
            return _rows_of(raw, rows, columns, row_codes, np.array([a for a, _ in parts_at]), wanted)
        # Every row: the deltas of one type, of all the matrices, read as one array (a block is a
        # dozen numpy calls whatever its matrices and types).
        parts = []
        view = memoryview(raw)
        for code, dtype in enumerate(_DTYPES):
            joined = b"".join(view[a:b] for a, b in parts_at[code :: len(_DTYPES)])
            if joined:
                parts.append(np.frombuffer(joined, dtype=dtype))
        # Read type by type, the rows come in the order of their type codes (stable: then as stored).
        order = np.argsort(row_codes, kind="stable")
        deltas = np.empty((1 + (count - 1) * columns, rows), dtype=np.int64)
        deltas[order] = np.concatenate(parts).reshape(-1, rows)
    except (zstandard.ZstdError, ValueError, struct.error) as error:
        raise DamagedBlockError(str(error)) from None
    return deltas


def _rows_of(
    raw: bytes, rows: int, columns: int, row_codes: np.ndarray, part_at: np.ndarray, wanted: np.ndarray
) -> np.ndarray:
    """The ``wanted`` rows of a block's deltas, each read where it lies (a reader of a few columns
    of a week's block: not every row made int64 and gathered)."""
    # A row's place among its matrix's rows of its type: how many of that type come before it in
    # its matrix (a running count per type, less the count where its matrix begins).
    seen = np.cumsum(row_codes[:, None] == np.arange(len(_DTYPES)), axis=0)
    matrix = np.where(wanted == 0, 0, (wanted - 1) // max(columns, 1) + 1)  # row 0: the times
    first_row = np.where(matrix == 0, 0, 1 + (matrix - 1) * columns)
    code = row_codes[wanted].astype(np.intp)
    before = np.where(first_row > 0, seen[first_row - 1, code], 0)
    rank = seen[wanted, code] - 1 - before
    at = part_at[matrix * len(_DTYPES) + code] + rank * rows * _ITEM_BYTES[code]
    out = np.empty((len(wanted), rows), dtype=np.int64)
    for i, (c, a) in enumerate(zip(code.tolist(), at.tolist(), strict=True)):
        out[i] = np.frombuffer(raw, dtype=_DTYPES[c], count=rows, offset=a)
    return out
