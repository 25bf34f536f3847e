"""The device probe: what each GPU is (static facts, read once) and which calls it answers.

Versioned calls are resolved here once per session: a variant the driver lacks is skipped for
the older one, and each missing function is logged once, with a note for the user.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import pynvml as N

from trayvml.core.safe_text import clean, decode
from trayvml.core.sample import DeviceInfo, MetricState, SystemInfo
from trayvml.core.units import in_base_units
from trayvml.nvml import binding
from trayvml.nvml.gpm import gpm_supported
from trayvml.nvml.session import classify
from trayvml.nvml.specs import STATIC, CallRead, Pick, StaticRead

log = logging.getLogger(__name__)


class GpuLostError(Exception):
    """The GPU fell off the bus while its facts were read."""


def caller(function: str, args: tuple[int, ...] = ()) -> Callable[[Any], Any]:
    """``f(handle)`` calling the pynvml function ``function`` with ``args`` after the handle: by its
    C symbol where binding has a getter for it (the read specs' calls), else through pynvml."""
    direct = binding.getter(function, args)
    if direct is not None:
        return direct
    call: Callable[..., Any] = getattr(N, function)
    if not args:
        return call
    if len(args) == 1:
        arg = args[0]
        return lambda handle: call(handle, arg)
    return lambda handle: call(handle, *args)


def pick(result: Any, how: Pick) -> Any:
    return result[how] if isinstance(how, int) else getattr(result, how)


def text(call: Callable[..., Any]) -> Callable[..., str]:
    """A pynvml call that answers a string, answering it cleaned (see core.safe_text).

    pynvml decodes the driver's bytes strictly, so a name that is not UTF-8 raised
    UnicodeDecodeError: call the function beneath its decorator and decode the bytes here.
    """
    raw_call = binding.undecorated(call)

    def read(*args: Any) -> str:
        raw = raw_call(*args)
        return decode(raw) if isinstance(raw, bytes) else clean(str(raw))

    return read


def _bus_id(pci: Any) -> str:
    bus_id = pci.busId
    return bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)


_CONVERT: dict[str, Callable[[Any, float], Any]] = {
    "number": lambda value, scale: in_base_units(float(value), scale),
    "flag": lambda value, scale: bool(value),
    "text": lambda value, scale: value,
    "bus_id": lambda value, scale: _bus_id(value),
    "version": lambda value, scale: f"{value[0]}.{value[1]}",
}
_DEFAULTS = {f.name: f.default for f in fields(DeviceInfo)}


class DeviceProbe:
    def __init__(self) -> None:
        self.notes: tuple[str, ...] = ()
        self._missing: set[str] = set()

    def system_info(self) -> SystemInfo:
        def read(function: str) -> str:
            try:
                return text(getattr(N, function))()
            except N.NVMLError:
                return ""

        cuda = ""
        try:
            version = N.nvmlSystemGetCudaDriverVersion()
            cuda = f"{version // 1000}.{version % 1000 // 10}"
        except N.NVMLError:
            pass  # shown as unknown
        return SystemInfo(
            hostname=socket.gethostname(),
            driver_version=read("nvmlSystemGetDriverVersion"),
            cuda_driver_version=cuda,
            nvml_version=read("nvmlSystemGetNVMLVersion"),
        )

    # ---- static facts ----
    def device_info(self, index: int, handle: Any) -> DeviceInfo:
        """Every static fact; a fact the GPU cannot tell stays unknown. Raises GpuLostError, NvmlDownError."""
        facts: dict[str, Any] = {
            "index": index,
            "name": f"GPU {index}",
            "nvlink_link_count": self._links(handle),
            "gpm_supported": gpm_supported(handle),
        }
        for read in STATIC:
            value = self._static(read, handle)
            if value is None:
                continue
            for name, how in zip(read.fields, read.picks or (None,) * len(read.fields), strict=True):
                facts[name] = _CONVERT[read.as_](value if how is None else pick(value, how), read.scale)
        if "memory_total_bytes" in facts:
            facts["unified_memory"] = False  # memory of its own; None below: cannot tell
        elif self._unified_memory(handle):
            # A GPU sharing the host's RAM (GB10, DGX Spark) has no framebuffer to report, and the
            # PCIe link NVML reports for a GPU on the chip itself (Gen1 x1) means nothing.
            facts["unified_memory"] = True
            facts.pop("pcie_link_gen_max", None)
            facts.pop("pcie_link_width_max", None)
        return DeviceInfo(**{name: facts.get(name, default) for name, default in _DEFAULTS.items()})

    def _static(self, read: StaticRead, handle: Any) -> Any:
        call = getattr(N, read.function)
        try:
            return (text(call) if read.as_ == "text" else call)(handle, *read.args)
        except N.NVMLError as error:
            if classify(error.value) is MetricState.LOST:
                raise GpuLostError from None
            return None

    @staticmethod
    def _unified_memory(handle: Any) -> bool:
        """Whether the GPU has no memory of its own (GB10, DGX Spark): the driver answers
        NOT_SUPPORTED both for its framebuffer and for its BAR1 aperture, as nvidia-smi -q shows
        ("FB Memory Usage: N/A", "BAR1 Memory Usage: N/A": ComfyUI-Crystools#288, nvtop#466).

        Both, not the first alone (ollama#12619's review asked whether a discrete GPU can answer
        NOT_SUPPORTED too; gpustat#179 is as strict): every discrete GPU has a BAR1. Asked once,
        when the total could not be read.
        """
        for call in (N.nvmlDeviceGetMemoryInfo, N.nvmlDeviceGetBAR1MemoryInfo):
            try:
                call(handle)
            except N.NVMLError as error:
                state = classify(error.value)
                if state is MetricState.LOST:
                    raise GpuLostError from None
                if state is not MetricState.NOT_SUPPORTED:
                    return False
            else:
                return False
        return True

    def _links(self, handle: Any) -> int:
        """NVLink links the GPU has. Where the count cannot be read, every possible link: the links
        a GPU lacks answer NOT_SUPPORTED on the first tick and are dropped then."""
        try:
            answer = N.nvmlDeviceGetFieldValues(handle, [N.NVML_FI_DEV_NVLINK_LINK_COUNT])[0]
        except N.NVMLError as error:
            state = classify(error.value)
            if state is MetricState.LOST:
                raise GpuLostError from None
            return 0 if state is MetricState.NOT_SUPPORTED else N.NVML_NVLINK_MAX_LINKS
        if answer.nvmlReturn == N.NVML_SUCCESS:
            return int(answer.value.uiVal)
        return 0 if answer.nvmlReturn == N.NVML_ERROR_NOT_SUPPORTED else N.NVML_NVLINK_MAX_LINKS

    # ---- versioned calls ----
    def usable(self, read: CallRead | None) -> CallRead | None:
        """``read``, or the newest older variant of it the driver has (None: none of them)."""
        while read is not None and not self.has(read.function):
            read = read.fallback
        return read

    def has(self, function: str) -> bool:
        if function in self._missing:
            return False
        if binding.has_getter(function) or hasattr(N, function):
            try:
                if binding.has_function(function):
                    return True
            except N.NVMLError:
                return True  # cannot tell now: the call itself will say
        self.function_missing(function)
        return False

    def function_missing(self, function: str) -> None:
        """Log once per session that the driver lacks ``function``, and keep it in ``notes``.

        At INFO, shown with -v: an older call standing in is how trayvml works on older drivers,
        nothing to act on, and said on every command it taught users to ignore stderr. ``doctor``
        lists the notes."""
        if function in self._missing:
            return
        self._missing.add(function)
        note = f"This NVIDIA driver lacks {function}; trayvml uses an older call or leaves that metric out."
        log.info(note)
        if note not in self.notes:
            self.notes = (*self.notes, note)
