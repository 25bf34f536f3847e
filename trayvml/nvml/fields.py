"""Field values (``nvmlDeviceGetFieldValues``) read in one ``struct`` call, without per-field Python.

pynvml's structures route every member access through Python hooks, and its wrapper sets
each field id one at a time: at 40 fields per GPU (NVLink is per link) that costs more than
all the other calls together. Here a batch's ctypes array is built once and its members are
unpacked from the very same memory by a ``struct.Struct`` made for the batch. No numpy: the
reader is all that ``serve``, ``log`` and ``snapshot`` need of it, and numpy is 13-18 MiB of a
process (benchmarks/README.md); the simulated driver and the tests write through numpy views
(``field_view``), which import it when called.
"""

from __future__ import annotations

import ctypes
import functools
import struct
from typing import Any

import pynvml as N

_STRUCT = N.c_nvmlFieldValue_t
FIELD_SIZE = ctypes.sizeof(_STRUCT)
_OFFSET = {name: getattr(_STRUCT, name).offset for name, _ in _STRUCT._fields_}
# The union's member that each nvmlValueType_t names, as a struct code; any other
# type (unsigned long, 64-bit here; unsigned long long; one newer than this table) is read whole.
_VALUE_CODES = {
    N.NVML_VALUE_TYPE_DOUBLE: "d",
    N.NVML_VALUE_TYPE_SIGNED_LONG_LONG: "q",
    N.NVML_VALUE_TYPE_SIGNED_INT: "i",
    N.NVML_VALUE_TYPE_UNSIGNED_INT: "I",
    N.NVML_VALUE_TYPE_UNSIGNED_SHORT: "H",
}
_IDS = struct.Struct(f"<II{FIELD_SIZE - 8}x")  # fieldId and scopeId lead the struct
_RAW = struct.Struct("<Q")


def _item(members: list[tuple[str, str]]) -> str:
    """A struct format of one nvmlFieldValue_t reading ``members`` (name, code; in offset order), padded."""
    out, at = "", 0
    for name, code in members:
        offset = _OFFSET[name]
        out += f"{offset - at}x{code}" if offset > at else code
        at = offset + struct.calcsize(f"<{code}")
    return out + (f"{FIELD_SIZE - at}x" if at < FIELD_SIZE else "")


_TYPE_ITEM = _item([("valueType", "I")])


def field_array(ids: list[tuple[int, int]]) -> Any:
    """A ctypes array of field-value structs with ids and scopes filled in."""
    array = (_STRUCT * len(ids))()
    memory = memoryview(array).cast("B")
    for k, (fid, scope) in enumerate(ids):
        _IDS.pack_into(memory, k * FIELD_SIZE, fid, scope)
    return array


@functools.cache
def types_reader(count: int) -> struct.Struct:
    """Unpacks the ``valueType`` of each of ``count`` fields."""
    return struct.Struct("<" + _TYPE_ITEM * count)


# Bounded: the types are the driver's to write, and a field that fails leaves its own (a batch's
# pattern of failures is a new tuple); a batch keeps the reader it uses.
@functools.lru_cache(maxsize=64)
def answer_reader(types: tuple[int, ...]) -> struct.Struct:
    """Unpacks, field after field, ``timestamp``, ``nvmlReturn`` and the value as its type names it."""
    return struct.Struct(
        "<"
        + "".join(_item([("timestamp", "q"), ("nvmlReturn", "I"), ("value", _VALUE_CODES.get(t, "Q"))]) for t in types)
    )


def raw_value(memory: memoryview, position: int) -> int:
    """Field ``position``'s union as the unsigned 64-bit number its bytes are."""
    return int(_RAW.unpack_from(memory, position * FIELD_SIZE + _OFFSET["value"])[0])


@functools.cache
def _dtype() -> Any:
    import numpy as np

    return np.dtype(
        {
            "names": ["fieldId", "scopeId", "timestamp", "valueType", "nvmlReturn", "value"],
            "formats": ["<u4", "<u4", "<i8", "<u4", "<u4", "<u8"],
            "offsets": [
                _OFFSET[name] for name in ("fieldId", "scopeId", "timestamp", "valueType", "nvmlReturn", "value")
            ],
            "itemsize": FIELD_SIZE,
        }
    )


def field_view(array: Any, count: int | None = None) -> Any:
    """A writable numpy view of a field-value array (the simulated driver writes its answers so)."""
    import numpy as np

    return np.frombuffer(array, dtype=_dtype(), count=-1 if count is None else count)
