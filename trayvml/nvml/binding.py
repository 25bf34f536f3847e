"""Every use of pynvml's private names, in one place.

pynvml has no public way to swap the shared library beneath it, to call a C symbol with an
array we prepared, or to get a string function's raw bytes; trayvml needs all three (the
simulation, field values without per-field Python, driver strings that are not UTF-8). These
names are not pynvml's API and may change in any release, so they are used only here and the
``nvidia-ml-py`` range in pyproject.toml is bounded to the releases this module was checked
against (``CHECKED_VERSIONS``); ``tests/test_reader.py`` checks the installed one has them all.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pynvml as N

# Read and found to hold every name below: 13.580.82 and 13.615.71.
CHECKED_VERSIONS = ">=13.580,<13.616"
PRIVATE_NAMES = (
    "nvmlLib",
    "_nvmlLib_refcount",
    "_nvmlGetFunctionPointer",
    "_nvmlGetFunctionPointer_cache",
    "_nvmlCheckReturn",
    "_LoadNvmlLibrary",
)


def install_library(library: Any) -> None:
    """Put ``library`` beneath pynvml in place of libnvidia-ml (None: nothing, as before init)."""
    N.nvmlLib = library
    N._nvmlGetFunctionPointer_cache.clear()  # pointers looked up on the previous library
    N._nvmlLib_refcount = 0


def installed_library() -> Any:
    return N.nvmlLib


def forget_functions() -> None:
    """Look every C function up afresh (a test removed one from the simulated library)."""
    N._nvmlGetFunctionPointer_cache.clear()


def has_function(name: str) -> bool:
    """Whether the loaded library exports ``name`` (NVML must be initialised)."""
    try:
        N._nvmlGetFunctionPointer(name)
    except N.NVMLError as error:
        if error.value == N.NVML_ERROR_FUNCTION_NOT_FOUND:
            return False
        raise
    return True


def undecorated(call: Callable[..., Any]) -> Callable[..., Any]:
    """A pynvml string function beneath its decorator, which decodes strictly: it answers bytes."""
    return getattr(call, "__wrapped__", call)


def error_string(code: int) -> str:
    """NVML's own sentence for ``code``, as libnvidia-ml's nvmlErrorString answers it."""
    return N.NVMLError._errcode_to_string.get(code, "Unknown Error")


def read_fields(handle: Any, array: Any) -> None:
    """Fill a prepared ``c_nvmlFieldValue_t`` array in place (see fields.py)."""
    function = N._nvmlGetFunctionPointer("nvmlDeviceGetFieldValues")  # cached by pynvml
    N._nvmlCheckReturn(function(handle, ctypes.c_int32(len(array)), ctypes.byref(array)))


def read_memory_v2(handle: Any) -> Any:
    """``nvmlDeviceGetMemoryInfo_v2`` called by its own symbol.

    gpustat (and others) replace ``pynvml.nvmlDeviceGetMemoryInfo`` process-wide with a
    version that takes no ``version`` argument; calling the symbol directly is immune to that.
    """
    memory = N.c_nvmlMemory_v2_t()
    memory.version = N.nvmlMemory_v2
    N._nvmlCheckReturn(N._nvmlGetFunctionPointer("nvmlDeviceGetMemoryInfo_v2")(handle, ctypes.byref(memory)))
    return memory


def library_location() -> str:
    """Where the NVML library beneath pynvml came from: a file path, a simulated library's class
    name, or "" when none is loaded. On Linux the path is the one the dynamic loader mapped
    (``/proc/self/maps``), which says which of several installed copies is in use."""
    library = N.nvmlLib
    if library is None:
        return ""
    name = getattr(library, "_name", None)
    if not isinstance(name, str):  # a stand-in (simulated, recording, replaying)
        return type(library).__name__
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                if "libnvidia-ml" in line and "/" in line:
                    return line[line.index("/") :].strip()
    except OSError:
        pass  # not Linux: the name it was loaded by is all there is
    return name


def load_real_library() -> Any:
    """libnvidia-ml, loaded as pynvml loads it (raises pynvml.NVMLError LIBRARY_NOT_FOUND)."""
    N._LoadNvmlLibrary()
    return N.nvmlLib
