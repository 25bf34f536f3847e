"""The GPM C functions (Hopper and newer): sample buffers, and activity from two samples."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np
import pynvml as N

from trayvml.core.clock import Clock
from trayvml.nvml.gpm import metrics_view
from trayvml.nvml.sim.base import SimulatedNvmlBase, pointer_value, set_pointer
from trayvml.nvml.sim.options import SimSpec
from trayvml.nvml.sim.timeline import GPM_METRIC_IDS

_GPM_COLUMN = {metric: k for k, metric in enumerate(GPM_METRIC_IDS)}
_GPM_NVLINK = {N.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, N.NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC}
_GPM_SAMPLE_BASE = 0x6000_0000  # sample "pointers" handed out by nvmlGpmSampleAlloc


@dataclass
class _GpmSample:
    """What a GPM sample buffer holds once nvmlGpmSampleGet filled it."""

    gpu: int = -1  # -1: allocated, never filled
    instance: int | None = None  # the GPU instance id for nvmlGpmMigSampleGet
    second: float = 0.0
    sums: np.ndarray | None = None
    now: np.ndarray | None = None


class GpmCalls(SimulatedNvmlBase):
    def __init__(self, spec: SimSpec, clock: Clock) -> None:
        super().__init__(spec, clock)
        self.gpm_samples: dict[int, _GpmSample] = {}  # allocated GPM buffers, by the pointer handed out
        self._next_gpm_sample = _GPM_SAMPLE_BASE
        self._gpm_plans: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def c_nvmlGpmQueryDeviceSupport(self, handle: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        support = ref._obj
        if support.version != N.NVML_GPM_SUPPORT_VERSION:
            return N.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        support.isSupportedDevice = 1 if found[1].has_gpm else 0
        return N.NVML_SUCCESS

    def c_nvmlGpmSampleAlloc(self, ref: Any) -> int:
        if not self.refcount:
            return N.NVML_ERROR_UNINITIALIZED
        self._next_gpm_sample += 0x10
        self.gpm_samples[self._next_gpm_sample] = _GpmSample()
        set_pointer(ref._obj, self._next_gpm_sample)
        return N.NVML_SUCCESS

    def c_nvmlGpmSampleFree(self, sample: Any) -> int:
        if self.gpm_samples.pop(pointer_value(sample), None) is None:
            return N.NVML_ERROR_INVALID_ARGUMENT
        return N.NVML_SUCCESS

    def _gpm_fill(self, handle: Any, sample: Any, instance: int | None) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        buffer = self.gpm_samples.get(pointer_value(sample))
        if buffer is None:
            return N.NVML_ERROR_INVALID_ARGUMENT
        if not g.profile.has_gpm:
            return N.NVML_ERROR_NOT_SUPPORTED
        buffer.gpu, buffer.instance = g.gpu, instance
        buffer.second, buffer.sums, buffer.now = g.gpm_snapshot()
        return N.NVML_SUCCESS

    def c_nvmlGpmSampleGet(self, handle: Any, sample: Any) -> int:
        return self._gpm_fill(handle, sample, None)

    def c_nvmlGpmMigSampleGet(self, handle: Any, instance: Any, sample: Any) -> int:
        return self._gpm_fill(handle, sample, instance if isinstance(instance, int) else instance.value)

    def c_nvmlGpmMetricsGet(self, ref: Any) -> int:
        request = ref._obj
        if request.version != N.NVML_GPM_METRICS_GET_VERSION:
            return N.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        if not self.refcount:
            return N.NVML_ERROR_UNINITIALIZED
        first = self.gpm_samples.get(ctypes.cast(request.sample1, ctypes.c_void_p).value or 0)
        second = self.gpm_samples.get(ctypes.cast(request.sample2, ctypes.c_void_p).value or 0)
        count = request.numMetrics
        if first is None or second is None or first.sums is None or second.sums is None or second.now is None:
            return N.NVML_ERROR_INVALID_ARGUMENT
        if (first.gpu, first.instance) != (second.gpu, second.instance) or not 0 < count <= N.NVML_GPM_METRIC_MAX:
            return N.NVML_ERROR_INVALID_ARGUMENT
        elapsed_s = second.second - first.second
        # Averages over the time between the samples; within one simulated second, that second's.
        values = (second.sums - first.sums) / elapsed_s if elapsed_s > 0 else second.now
        if second.instance is not None:  # a MIG instance sees its share of the SMs' work
            values = values * self._instance_share(second.gpu, second.instance)
        view = metrics_view(request, count)
        ids = view["metricId"]
        key = (second.gpu, ids.tobytes())
        plan = self._gpm_plans.get(key)
        if plan is None:  # which column answers each metric, and which are not simulated
            links = self.profiles[second.gpu].nvlink_links
            answered = [int(m) in _GPM_COLUMN and (links or int(m) not in _GPM_NVLINK) for m in ids.tolist()]
            columns = np.array([_GPM_COLUMN[int(m)] if ok else 0 for m, ok in zip(ids.tolist(), answered, strict=True)])
            codes = np.where(answered, N.NVML_SUCCESS, N.NVML_ERROR_NOT_SUPPORTED)
            plan = self._gpm_plans[key] = (columns, codes, np.array(answered))
        columns, codes, known = plan
        view["nvmlReturn"] = codes
        view["value"] = np.where(known, values[columns], 0.0)
        return N.NVML_SUCCESS

    def _instance_share(self, gpu: int, instance: int) -> float:
        """How busy a MIG instance is, relative to the board's activity: the scenario's job runs in
        the first instance, the inference server in the second is half as busy, the third idles."""
        ids = [i.gpu_instance_id for i in self.mig_instances(gpu)]
        return {0: 1.0, 1: 0.5}.get(ids.index(instance), 0.0) if instance in ids else 0.0
