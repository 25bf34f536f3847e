"""GPM (GPU performance monitoring, Hopper and newer): activity computed over two samples.

Each GPU that supports GPM gets two sample buffers while something demands its metrics: each
tick fills one, asks ``nvmlGpmMetricsGet`` for the metrics between it and the one before, and
swaps them. The buffers are freed when no one needs the metrics, on close and on a lost GPU. A
whole GPU's PCIe throughput comes from here too (specs.GPM), so the tray's history keeps them held.
GPM does not take the profiling counters DCGM and Nsight lock (NVIDIA/DCGM#62: "GPM utilizes a
completely different GPU subsystem ... and enables simultaneous metric collection and profiling").
"""

from __future__ import annotations

import ctypes
import functools
import logging
import struct
from typing import Any

import pynvml as N

from trayvml.nvml import binding
from trayvml.nvml.session import NvmlSession, classify
from trayvml.nvml.specs import GPM, GpmRead

log = logging.getLogger(__name__)
_set_member = ctypes.Structure.__setattr__

# c_nvmlGpmMetric_t's members by struct: pynvml's structures format every attribute read in Python,
# so the metrics are read from the request's memory instead (no numpy: see fields.py).
_METRIC = N.c_nvmlGpmMetric_t
METRIC_SIZE = ctypes.sizeof(_METRIC)
_METRICS_AT = N.c_nvmlGpmMetricsGet_t.metrics.offset
UINT = struct.Struct("<I")  # a metric's id and its nvmlReturn
ID_AT, RETURN_AT, VALUE_AT = _METRIC.metricId.offset, _METRIC.nvmlReturn.offset, _METRIC.value.offset
# nvmlReturn and value of one metric, padded to the struct's size
_ANSWER_ITEM = f"{RETURN_AT}xI{VALUE_AT - RETURN_AT - 4}xd{METRIC_SIZE - VALUE_AT - 8}x"


def metric_at(k: int) -> int:
    """Where the ``k``-th metric of a c_nvmlGpmMetricsGet_t begins."""
    return _METRICS_AT + k * METRIC_SIZE


@functools.cache
def _answers(count: int) -> struct.Struct:
    return struct.Struct("<" + _ANSWER_ITEM * count)


@functools.cache
def _dtype() -> Any:
    import numpy as np

    return np.dtype(
        {
            "names": ["metricId", "nvmlReturn", "value"],
            "formats": [np.uint32, np.uint32, np.float64],
            "offsets": [ID_AT, RETURN_AT, VALUE_AT],
            "itemsize": METRIC_SIZE,
        }
    )


def metrics_view(request: Any, count: int) -> Any:
    """The first ``count`` metrics of a c_nvmlGpmMetricsGet_t, as a writable numpy view (the
    simulated driver writes its answers so, each GPU each tick: its dtype is made once)."""
    import numpy as np

    return np.frombuffer(request.metrics, dtype=_dtype(), count=count)


def gpm_supported(handle: Any) -> bool | None:
    """Whether the GPU answers GPM; None where the driver cannot tell (an old driver, an error).

    Raises NvmlDownError where NVML as a whole is gone (through classify)."""
    try:
        return bool(N.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice)
    except N.NVMLError as error:
        classify(error.value)  # raises where NVML as a whole is gone
        return None


class GpmSampler:
    """The two sample buffers of one GPU (or one MIG instance: ``instance`` is its GPU instance id)."""

    def __init__(
        self,
        reads: tuple[GpmRead, ...] = GPM,
        instance: int | None = None,
        parent: Any = None,
        session: NvmlSession | None = None,
    ) -> None:
        self.reads = reads
        # Told each function before it is called: one read makes up to four calls, and a stall
        # report must name the one that did not return (nvmlGpmMigSampleGet for a MIG instance).
        self.session = session
        self.instance = instance
        self.parent = parent  # a MIG device's samples are taken on its parent GPU, by instance id
        self.request = N.c_nvmlGpmMetricsGet_t()
        self.request.version = N.NVML_GPM_METRICS_GET_VERSION
        self.request.numMetrics = len(reads)
        self._memory = memoryview(self.request).cast("B")
        for k, read in enumerate(reads):
            UINT.pack_into(self._memory, metric_at(k) + ID_AT, read.metric_id)
        self._read_answers = _answers(len(reads))
        self.previous: Any = None
        self.current: Any = None
        self.filled = False  # ``previous`` holds a sample
        # Called every tick: by their symbols, the request passed as pynvml passes it.
        self._sample_get = binding.checked("nvmlGpmSampleGet")
        self._metrics_get = binding.checked("nvmlGpmMetricsGet")
        self._request_ref = ctypes.byref(self.request)

    @property
    def allocated(self) -> bool:
        return self.current is not None

    def read(self, handle: Any) -> tuple[list[int], list[float]] | None:
        """Take a sample; the metrics since the last one (each read's return code, and its value),
        or None on the first. Raises NVMLError."""
        if self.current is None:
            self._calling("nvmlGpmSampleAlloc")
            self.previous = N.nvmlGpmSampleAlloc()
            try:
                self.current = N.nvmlGpmSampleAlloc()
            except N.NVMLError:
                self.free()
                raise
        if self.instance is None:
            self._calling("nvmlGpmSampleGet")
            self._sample_get(handle, self.current)
        else:
            self._calling("nvmlGpmMigSampleGet")
            N.nvmlGpmMigSampleGet(self.parent, self.instance, self.current)
        first = not self.filled
        self.previous, self.current = self.current, self.previous
        self.filled = True
        if first:
            return None
        # Older, newer (after the swap); set past pynvml's Python hook on its structures (which
        # only encodes str values) as plain ctypes members.
        _set_member(self.request, "sample1", self.current)
        _set_member(self.request, "sample2", self.previous)
        self._calling("nvmlGpmMetricsGet")
        self._metrics_get(self._request_ref)
        flat = self._read_answers.unpack_from(self._memory, metric_at(0))
        return list(flat[0::2]), list(flat[1::2])

    def _calling(self, function: str) -> None:
        if self.session is not None:
            self.session.current_call = function

    def free(self) -> None:
        """Give the buffers back to the driver (also when NVML is already gone: nothing to undo)."""
        for buffer in (self.previous, self.current):
            if buffer is None:
                continue
            try:
                N.nvmlGpmSampleFree(buffer)
            except N.NVMLError as error:
                log.debug("nvmlGpmSampleFree: %s", error)
        self.previous = self.current = None
        self.filled = False
