"""A recording of the NVML calls trayvml makes, and their raw answers (``trayvml doctor --record``).

pynvml reaches the C library only through ``pynvml.nvmlLib``, looking each function up by name
(see binding.py); the simulated library sits there, and so can :class:`RecordingLibrary`: a proxy
that forwards each call to the library beneath it (the real libnvidia-ml or the simulated one) and
logs the function's name, the by-value arguments that tell one call from another (a GPU handle, a
sensor or clock type, an index), the return code, and the bytes the call left in every buffer it
was given (structures and arrays, passed by reference or as arrays). ``sim/replay.py`` answers
from such a log, writing those bytes back, so that the reader runs unchanged on a driver recorded
elsewhere. The bytes are the C structures' memory: a recording replays on the same architecture
(x86-64 and arm64 are both little-endian with the same alignment for these structures).
"""

from __future__ import annotations

import base64
import ctypes
import threading
from typing import Any

from trayvml.core.errors import TrayvmlError

RECORDING_FORMAT = "trayvml-nvml-recording"
RECORDING_VERSION = 1
MAX_CALLS = 200_000  # a minute of 8 GPUs is a few tens of thousands; past this, stop logging (memory)

_ArgPointer = type(ctypes.byref(ctypes.c_int()))  # what ctypes.byref returns


def _address(arg: Any) -> int:
    return ctypes.cast(arg, ctypes.c_void_p).value or 0


def call_key(args: tuple[Any, ...]) -> list[Any]:
    """What tells this call from another of the same function: handles and small integers passed
    by value, and, for a buffer, only that one was given ("r" by reference, "a" an array, None none:
    a process list's size query passes None where the real call passes its array). 64-bit integers
    are left out: those are timestamps (``lastSeenTimeStamp``) that differ between a recording and
    its replay."""
    key: list[Any] = []
    for arg in args:
        if arg is None:
            key.append(None)
        elif isinstance(arg, _ArgPointer):
            key.append("r")
        elif isinstance(arg, ctypes._Pointer | ctypes.c_void_p):
            key.append(_address(arg))
        elif isinstance(arg, ctypes.Array | ctypes.Structure | ctypes.Union):
            key.append("a")
        elif isinstance(arg, ctypes._SimpleCData):
            key.append(arg.value if ctypes.sizeof(arg) <= 4 else "q")
        elif isinstance(arg, int):
            key.append(arg)
        else:
            key.append(type(arg).__name__)
    return key


def _buffer(arg: Any) -> Any:
    """The ctypes object a call may write into, or None."""
    target = getattr(arg, "_obj", None) if isinstance(arg, _ArgPointer) else arg
    if isinstance(target, ctypes.Array | ctypes.Structure | ctypes.Union | ctypes._SimpleCData | ctypes._Pointer):
        return target
    return None


def outputs(args: tuple[Any, ...]) -> list[list[Any] | None]:
    """[size, base64 of the bytes without their trailing zeros] for each buffer argument, else None."""
    found: list[list[Any] | None] = []
    for arg in args:
        target = _buffer(arg)
        if target is None:
            found.append(None)
            continue
        size = ctypes.sizeof(target)
        data = ctypes.string_at(ctypes.addressof(target), size).rstrip(b"\0")
        found.append([size, base64.b64encode(data).decode("ascii")])
    return found


def restore(args: tuple[Any, ...], recorded: list[list[Any] | None]) -> None:
    """Write the recorded bytes back into this call's buffers (zeros beyond them, as recorded)."""
    for arg, output in zip(args, recorded, strict=False):
        target = _buffer(arg)
        if target is None or output is None:
            continue
        size = min(ctypes.sizeof(target), int(output[0]))
        data = base64.b64decode(output[1])[:size]
        address = ctypes.addressof(target)
        ctypes.memset(address, 0, size)
        ctypes.memmove(address, data, len(data))


def encode_result(result: Any) -> Any:
    """A function's return value: an nvmlReturn_t, or bytes where pynvml set ``restype = c_char_p``."""
    if isinstance(result, bytes):
        return {"bytes": base64.b64encode(result).decode("ascii")}
    return result


def decode_result(result: Any) -> Any:
    if isinstance(result, dict):
        return base64.b64decode(result["bytes"])
    return result


class _RecordedFunction:
    """One C function, forwarded; pynvml may set ``restype`` on it, which the real one must get."""

    def __init__(self, owner: RecordingLibrary, name: str, function: Any) -> None:
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_function", function)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._function, name, value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._function, name)

    def __call__(self, *args: Any) -> Any:
        result = self._function(*args)
        self._owner.log(self._name, args, result)
        return result


class RecordingLibrary:
    """Forwards every C function to ``library`` and logs each call (see the module's docstring)."""

    def __init__(self, library: Any) -> None:
        self._library = library
        name = getattr(library, "_name", None)  # a CDLL's file name: binding.library_location reads it
        self._name = name if isinstance(name, str) else None
        self._functions: dict[str, _RecordedFunction] = {}
        self._lock = threading.Lock()
        self.entries: list[dict[str, Any]] = []
        self.dropped = 0  # calls past MAX_CALLS, not logged

    @property
    def library(self) -> Any:
        return self._library

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        function = self._functions.get(name)
        if function is None:
            function = _RecordedFunction(self, name, getattr(self._library, name))  # AttributeError: not there
            self._functions[name] = function
        return function

    def log(self, name: str, args: tuple[Any, ...], result: Any) -> None:
        entry = {"f": name, "k": call_key(args), "r": encode_result(result), "o": outputs(args)}
        with self._lock:
            if len(self.entries) >= MAX_CALLS:
                self.dropped += 1
                return
            self.entries.append(entry)

    def mark(self, entry: dict[str, Any]) -> None:
        """Put a tick's note (the time, trayvml's values, nvidia-smi's) among the calls."""
        with self._lock:
            self.entries.append(entry)


class NoLibraryError(TrayvmlError):
    """There is no NVML library to record."""


def start_recording() -> RecordingLibrary:
    """Put a recording layer beneath pynvml, over what is there (a simulated library) or else the
    real libnvidia-ml. Raises NoLibraryError, with the reason in a sentence, where there is none."""
    import pynvml as N

    from trayvml.nvml import binding
    from trayvml.nvml.session import unavailable_from

    library = binding.installed_library()
    if library is None:
        try:
            library = binding.load_real_library()
        except N.NVMLError as error:
            raise NoLibraryError(unavailable_from(error).sentence) from None
    recorder = RecordingLibrary(library)
    binding.install_library(recorder)
    return recorder


def stop_recording(recorder: RecordingLibrary) -> None:
    from trayvml.nvml import binding

    if binding.installed_library() is recorder:
        binding.install_library(None)
