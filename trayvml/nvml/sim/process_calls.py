"""The C functions that list a device's processes and their utilization."""

from __future__ import annotations

from typing import Any

import pynvml as N

from trayvml.nvml.sim.base import SimulatedNvmlBase

PROCESS_SAMPLE_BUFFER = 72  # entries nvmlDeviceGetProcessUtilization wants room for (see there)
# The driver samples each process's utilization now and then, not at each call: traces of real
# drivers show a busy process's samples 1-4 s apart (nvtop#110, go-nvml#51), and a call answers
# nothing new for it until the next one. The simulated driver samples on each whole second.
PROCESS_SAMPLE_PERIOD_US = 1_000_000


class ProcessCalls(SimulatedNvmlBase):
    def _running(self, handle: Any, count: Any, array: Any, kind: str) -> int:
        mig = self._mig(handle)
        if isinstance(mig, int):
            return mig
        g = self._gpu(handle) if mig is None else mig[0]
        if isinstance(g, int):
            return g
        procs = [p for p in self.processes(g.gpu) if kind in p.kind.split("+")]
        if mig is not None:  # a MIG device lists its own instance's processes; the parent, all
            procs = [p for p in procs if p.gpu_instance == mig[1].gpu_instance_id]
        capacity = count._obj
        if array is None or capacity.value < len(procs):
            capacity.value = len(procs)
            return N.NVML_ERROR_INSUFFICIENT_SIZE if procs else N.NVML_SUCCESS
        for k, proc in enumerate(procs):
            entry = array[k]
            entry.pid = proc.pid
            hidden = self.hides(proc)
            entry.usedGpuMemory = N.NVML_VALUE_NOT_AVAILABLE_ulonglong.value if hidden else proc.memory_bytes
            entry.gpuInstanceId = proc.gpu_instance if proc.gpu_instance >= 0 else 0xFFFFFFFF
            entry.computeInstanceId = 0 if proc.gpu_instance >= 0 else 0xFFFFFFFF
        capacity.value = len(procs)
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetComputeRunningProcesses_v3(self, handle: Any, count: Any, array: Any) -> int:
        return self._running(handle, count, array, "compute")

    def c_nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: Any, count: Any, array: Any) -> int:
        return self._running(handle, count, array, "graphics")

    def c_nvmlDeviceGetProcessUtilization(self, handle: Any, array: Any, count: Any, last_seen_us: Any) -> int:
        if self._mig(handle) is not None:
            return N.NVML_ERROR_NOT_SUPPORTED  # as NVML: not under MIG
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        if self.mig_mode(g.gpu):
            return N.NVML_ERROR_NOT_SUPPORTED
        # Only processes with samples newer than the last-seen timestamp are answered, and only
        # those that "had some non-zero utilization during the last sample period" (nvml.h;
        # nvml-wrapper's process_utilization_stats says the same): an idle process is left out.
        # No samples at all is NOT_FOUND.
        last_seen_us = int(getattr(last_seen_us, "value", last_seen_us))
        now_us = int((self.sampling_epoch_s + self.clock.monotonic_s()) * 1e6)  # the driver's time
        sampled_us = now_us - now_us % PROCESS_SAMPLE_PERIOD_US  # the driver's latest sample
        procs = self.processes(g.gpu) if sampled_us > last_seen_us else []
        # A display server takes a sliver; the rest of the GPU's utilization goes to the compute
        # processes by their memory (a stand-in: real shares come from the driver's sampling).
        util = g.util[g.i]
        compute = [p for p in procs if "compute" in p.kind]
        memory = sum(p.memory_bytes for p in compute) or 1
        samples: list[tuple[int, int]] = []
        for proc in procs:
            share = proc.memory_bytes / memory if "compute" in proc.kind else 0.0
            sm = min(util, 1) if "compute" not in proc.kind else round(max(util - 1, 0) * share)
            sm = self.process_sm_util.get(proc.pid, sm)
            if sm:
                samples.append((proc.pid, int(sm)))
        if not samples:
            return N.NVML_ERROR_NOT_FOUND  # no samples since the last-seen timestamp
        capacity = count._obj
        # The array must hold the driver's whole sample buffer, however few processes answer: an
        # H200 on 580.159.04 answered a 4-entry array INSUFFICIENT_SIZE with a count of 72 for one
        # process, then filled 1 entry of a 76-entry one (tests/recordings/h200-580-busy.jsonl).
        needed = max(len(samples), PROCESS_SAMPLE_BUFFER)
        if array is None or capacity.value < needed:
            capacity.value = needed
            return N.NVML_ERROR_INSUFFICIENT_SIZE
        for k, (pid, sm) in enumerate(samples):
            entry = array[k]
            entry.pid, entry.timeStamp, entry.smUtil = pid, sampled_us, sm
            entry.memUtil = entry.encUtil = entry.decUtil = 0
        capacity.value = len(samples)
        return N.NVML_SUCCESS

    # Older drivers' variants: pynvml reads them into a struct with the same fields.
    c_nvmlDeviceGetComputeRunningProcesses_v2 = c_nvmlDeviceGetComputeRunningProcesses_v3
    c_nvmlDeviceGetGraphicsRunningProcesses_v2 = c_nvmlDeviceGetGraphicsRunningProcesses_v3
