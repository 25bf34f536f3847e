"""Field values (``nvmlDeviceGetFieldValues``) as numpy arrays, without per-field Python.

pynvml's structures route every member access through Python hooks, and its wrapper sets
each field id one at a time: at 40 fields per GPU (NVLink is per link) that costs more than
all the other calls together. Here a batch's ctypes array is built once and read through a
zero-copy numpy view of the very same memory.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pynvml as N

_STRUCT = N.c_nvmlFieldValue_t
FIELD_DTYPE = np.dtype(
    {
        "names": ["fieldId", "scopeId", "timestamp", "valueType", "nvmlReturn", "value"],
        "formats": ["<u4", "<u4", "<i8", "<u4", "<u4", "<u8"],
        "offsets": [getattr(_STRUCT, name).offset for name in ("fieldId", "scopeId", "timestamp")]
        + [getattr(_STRUCT, name).offset for name in ("valueType", "nvmlReturn", "value")],
        "itemsize": ctypes.sizeof(_STRUCT),
    }
)


def field_array(ids: list[tuple[int, int]]) -> Any:
    """A ctypes array of field-value structs with ids and scopes filled in."""
    array = (_STRUCT * len(ids))()
    view = field_view(array)
    view["fieldId"] = [fid for fid, _ in ids]
    view["scopeId"] = [scope for _, scope in ids]
    return array


def field_view(array: Any, count: int | None = None) -> np.ndarray:
    return np.frombuffer(array, dtype=FIELD_DTYPE, count=-1 if count is None else count)


def decode_as(raw: np.ndarray, value_type: int) -> np.ndarray:
    """Raw 8-byte union contents read as the member ``value_type`` names (see nvmlValueType_t)."""
    if value_type == N.NVML_VALUE_TYPE_DOUBLE:
        return raw.view(np.float64)
    if value_type == N.NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        return raw.view(np.int64)
    if value_type == N.NVML_VALUE_TYPE_SIGNED_INT:
        return (raw & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    if value_type == N.NVML_VALUE_TYPE_UNSIGNED_SHORT:
        return raw & 0xFFFF
    if value_type == N.NVML_VALUE_TYPE_UNSIGNED_INT:
        return raw & 0xFFFFFFFF
    return raw  # unsigned long (64-bit here) and unsigned long long
