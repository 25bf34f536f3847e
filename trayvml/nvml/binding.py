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
from typing import Any, NamedTuple

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


# pynvml's cache of looked-up C functions, which install_library and forget_functions clear: a
# getter below looks its function up here on every call, so it follows a library swapped beneath it.
_FUNCTIONS: dict[str, Any] = N._nvmlGetFunctionPointer_cache


def _plain(struct: Any) -> Any:
    """``struct``'s layout as a plain ctypes Structure: pynvml's route every member access through
    Python (``_PrintableStructure``), which costs more than the call itself at one read a tick."""
    layout = {name: getattr(struct, name) for name in ("_pack_", "_fields_") if hasattr(struct, name)}
    return type(struct.__name__, (ctypes.Structure,), layout)


_Utilization = _plain(N.c_nvmlUtilization_t)
_Memory = _plain(N.c_nvmlMemory_t)
_MemoryV2 = _plain(N.c_nvmlMemory_v2_t)
_TemperatureV1 = _plain(N.c_nvmlTemperature_v1_t)


class _Output(NamedTuple):
    """A getter's buffers, as prepared (a version and a sensor set, the rest zero), and how its
    answer is made from them."""

    buffers: tuple[Any, ...]
    answer: Callable[[], Any]


def _value(c_type: type) -> _Output:
    out = c_type()
    return _Output((out,), lambda: out.value)


def _struct(struct: type, version: int = 0) -> _Output:
    out = struct()
    if version:
        out.version = version
    return _Output((out,), lambda: out)


def _pair() -> _Output:  # (utilization, sampling period in µs), as pynvml's list
    util, period = ctypes.c_uint(), ctypes.c_uint()
    return _Output((util, period), lambda: (util.value, period.value))


def _temperature_v(sensor: int) -> _Output:
    reading = _TemperatureV1()
    reading.version = N.nvmlTemperature_v1
    reading.sensorType = sensor
    return _Output((reading,), lambda: reading.temperature)


def _uint(*args: int) -> _Output:
    return _value(ctypes.c_uint)


def _ulonglong() -> _Output:
    return _value(ctypes.c_ulonglong)


# The getters read every tick or every few seconds, called by their symbol as pynvml's wrappers
# call them (the same C types, passed the same way, so that recordings made either way replay):
# name -> (the C types of the by-value arguments after the handle, the output made from them).
_GETTERS: dict[str, tuple[tuple[type, ...], Callable[..., _Output]]] = {
    "nvmlDeviceGetUtilizationRates": ((), lambda: _struct(_Utilization)),
    "nvmlDeviceGetMemoryInfo_v2": ((), lambda: _struct(_MemoryV2, N.nvmlMemory_v2)),
    "nvmlDeviceGetMemoryInfo": ((), lambda: _struct(_Memory)),
    "nvmlDeviceGetTemperatureV": ((), _temperature_v),  # the sensor goes into the struct
    "nvmlDeviceGetTemperature": ((ctypes.c_uint,), _uint),
    "nvmlDeviceGetFanSpeed": ((), _uint),
    "nvmlDeviceGetPowerUsage": ((), _uint),
    "nvmlDeviceGetTotalEnergyConsumption": ((), _ulonglong),
    "nvmlDeviceGetClockInfo": ((ctypes.c_uint,), _uint),
    "nvmlDeviceGetPerformanceState": ((), _uint),
    "nvmlDeviceGetCurrentClocksEventReasons": ((), _ulonglong),
    "nvmlDeviceGetCurrentClocksThrottleReasons": ((), _ulonglong),
    "nvmlDeviceGetEncoderUtilization": ((), _pair),
    "nvmlDeviceGetDecoderUtilization": ((), _pair),
    "nvmlDeviceGetPowerManagementLimit": ((), _uint),
    "nvmlDeviceGetEnforcedPowerLimit": ((), _uint),
    "nvmlDeviceGetCurrPcieLinkGeneration": ((), _uint),
    "nvmlDeviceGetCurrPcieLinkWidth": ((), _uint),
    "nvmlDeviceGetPcieThroughput": ((ctypes.c_uint,), _uint),
}


def has_getter(function: str) -> bool:
    return function in _GETTERS


def getter(function: str, args: tuple[int, ...] = ()) -> Callable[[Any], Any] | None:
    """``f(handle)`` answering as ``pynvml.<function>(handle, *args)`` does, without its wrapper's
    cost (new ctypes objects, Python-hooked structures, two calls into pynvml a read): the
    buffers are made once, set back to their prepared bytes before each call (no answer of an
    earlier call can remain), and the C function is called straight; its code is checked as
    pynvml checks it (NVMLError for anything but success, FunctionNotFound where the library
    lacks it). None where ``function`` has no getter here (pynvml's wrapper is used)."""
    shape = _GETTERS.get(function)
    if shape is None:
        return None
    arg_types, make = shape
    buffers, answer = make(*args)
    # Not strict: TemperatureV takes its sensor in the struct, not as an argument.
    by_value = [c_type(arg) for c_type, arg in zip(arg_types, args, strict=False)]
    call_args = (*by_value, *(ctypes.byref(b) for b in buffers))
    resets = [(view, bytes(view)) for view in (memoryview(b).cast("B") for b in buffers)]
    functions, lookup, error = _FUNCTIONS, N._nvmlGetFunctionPointer, N.NVMLError
    if len(buffers) == 1 and isinstance(buffers[0], ctypes._SimpleCData):
        return _scalar_getter(function, buffers[0], tuple(call_args))

    def call(handle: Any) -> Any:
        c_function = functions.get(function)  # as pynvml's cache has it: a swapped library is seen
        if c_function is None:
            c_function = lookup(function)  # raises FunctionNotFound, Uninitialized as pynvml's wrapper
        for view, prepared in resets:
            view[:] = prepared
        code = c_function(handle, *call_args)
        if code != 0:
            raise error(code)
        return answer()

    return call


def _scalar_getter(function: str, out: Any, call_args: tuple[Any, ...]) -> Callable[[Any], Any]:
    """``getter`` for a call answering one number (most of them): the same steps, written out."""
    functions, lookup, error = _FUNCTIONS, N._nvmlGetFunctionPointer, N.NVMLError
    if len(call_args) == 1:
        (ref,) = call_args

        def call(handle: Any) -> Any:
            c_function = functions.get(function)
            if c_function is None:
                c_function = lookup(function)
            out.value = 0
            code = c_function(handle, ref)
            if code != 0:
                raise error(code)
            return out.value

        return call

    def call_with_args(handle: Any) -> Any:
        c_function = functions.get(function)
        if c_function is None:
            c_function = lookup(function)
        out.value = 0
        code = c_function(handle, *call_args)
        if code != 0:
            raise error(code)
        return out.value

    return call_with_args


def checked(function: str) -> Callable[..., None]:
    """``f(*args)`` calling the C function ``function`` with ``args`` as they are, raising NVMLError
    as pynvml's wrappers do: for calls that fill buffers the caller keeps (GPM samples)."""
    functions, lookup, error = _FUNCTIONS, N._nvmlGetFunctionPointer, N.NVMLError

    def call(*args: Any) -> None:
        c_function = functions.get(function)
        if c_function is None:
            c_function = lookup(function)
        code = c_function(*args)
        if code != 0:
            raise error(code)

    return call


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


class RunningProcess(NamedTuple):
    """One entry of a process list, with pynvml's names (``usedGpuMemory`` None: not available)."""

    pid: int
    usedGpuMemory: int | None  # noqa: N815 (pynvml's name, which ProcessCache reads)


PROCESS_MARGIN = 4  # room for processes that start between two reads, beyond the last count
PROCESS_TRIES = 4  # a list that outgrows its buffer this many times running: that read fails


class ProcessLister:
    """A process list (``nvmlDevice*RunningProcesses_v3``/``_v2``) in one call where pynvml makes two.

    pynvml asks for the count (``infos`` NULL), then calls again with an array of twice that plus
    5. nvml.h lets one call do both: ``*infoCount`` gives the array's size; the driver fills it and
    sets the count, or answers NVML_ERROR_INSUFFICIENT_SIZE with the count it needs (go-nvml reads
    the lists this way). The array is kept, sized from the last count plus PROCESS_MARGIN, so a
    list that did not grow costs one call; one that did costs another with the array grown.
    """

    def __init__(self, function: str) -> None:
        self.function = function
        self._entries = (N.c_nvmlProcessInfo_v3_t * PROCESS_MARGIN)()  # v2 and v3 share this struct
        self._count = ctypes.c_uint(0)
        self._missing = N.NVML_VALUE_NOT_AVAILABLE_ulonglong.value  # WDDM: memory not known per process

    def __call__(self, handle: Any) -> list[RunningProcess]:
        function = N._nvmlGetFunctionPointer(self.function)  # cached by pynvml
        count = self._count
        for _ in range(PROCESS_TRIES):
            entries = self._entries
            count.value = len(entries)
            code = function(handle, ctypes.byref(count), entries)
            if code == N.NVML_SUCCESS and count.value <= len(entries):
                missing = self._missing
                return [
                    RunningProcess(e.pid, None if e.usedGpuMemory == missing else e.usedGpuMemory)
                    for e in entries[: count.value]
                ]
            if code not in (N.NVML_SUCCESS, N.NVML_ERROR_INSUFFICIENT_SIZE):
                raise N.NVMLError(code)
            # Too small: the size the driver asked for (at least double), with room to grow.
            size = max(count.value + PROCESS_MARGIN, 2 * len(entries))
            self._entries = (N.c_nvmlProcessInfo_v3_t * size)()
        raise N.NVMLError(N.NVML_ERROR_INSUFFICIENT_SIZE)


_UtilizationSample: Any = _plain(N.c_nvmlProcessUtilizationSample_t)


class UtilizationSample(NamedTuple):
    """One process's sample from nvmlDeviceGetProcessUtilization, with pynvml's names."""

    pid: int
    timeStamp: int  # noqa: N815 (pynvml's name)
    smUtil: int  # noqa: N815 (pynvml's name)


class ProcessUtilization:
    """``nvmlDeviceGetProcessUtilization`` in one call where pynvml makes two, as ProcessLister does
    for the lists: nvml.h answers NVML_ERROR_INSUFFICIENT_SIZE "if utilization is NULL or
    processSamplesCount is too small" and sets the count it needs, so an array of the last count
    plus PROCESS_MARGIN passed with its size is filled in one call. NOT_FOUND (no samples since the
    last-seen timestamp) and every other failure raise NVMLError, as pynvml's wrapper does."""

    def __init__(self) -> None:
        self._samples = (_UtilizationSample * PROCESS_MARGIN)()
        self._count = ctypes.c_uint(0)

    def __call__(self, handle: Any, last_seen_us: int) -> list[UtilizationSample]:
        function = _FUNCTIONS.get("nvmlDeviceGetProcessUtilization")
        if function is None:
            function = N._nvmlGetFunctionPointer("nvmlDeviceGetProcessUtilization")
        count = self._count
        for _ in range(PROCESS_TRIES):
            samples = self._samples
            count.value = len(samples)
            # The array by itself and the timestamp by value, as pynvml passes them.
            code = function(handle, samples, ctypes.byref(count), ctypes.c_ulonglong(last_seen_us))
            if code == N.NVML_SUCCESS and count.value <= len(samples):
                return [UtilizationSample(s.pid, s.timeStamp, s.smUtil) for s in samples[: count.value]]
            if code != N.NVML_ERROR_INSUFFICIENT_SIZE:
                raise N.NVMLError(code)
            self._samples = (_UtilizationSample * max(count.value + PROCESS_MARGIN, 2 * len(samples)))()
        raise N.NVMLError(N.NVML_ERROR_INSUFFICIENT_SIZE)
