"""The C functions that answer a device's static facts, its MIG devices and its per-second values."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pynvml as N

from trayvml.core.units import MIB
from trayvml.nvml import binding
from trayvml.nvml.sim.base import MIG_HANDLE_BASE, PCI_BUSES, SimulatedNvmlBase, put_string, set_pointer
from trayvml.nvml.sim.field_models import FIELD_COLUMN
from trayvml.nvml.sim.profiles import GpuProfile
from trayvml.nvml.sim.timeline import THERMAL_SHUTDOWN_C, THERMAL_SLOWDOWN_C

_NVML_FAULT_CODES = {
    "missing": N.NVML_ERROR_LIBRARY_NOT_FOUND,
    "not-loaded": N.NVML_ERROR_DRIVER_NOT_LOADED,
    "mismatch": N.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
    "no-permission": N.NVML_ERROR_NO_PERMISSION,
}

_PCI_DEVICE_IDS = {
    "h100": 0x233010DE,
    "h100-mig": 0x233010DE,
    "rtx4090": 0x268410DE,
    "laptop": 0x27A010DE,
    "gb10": 0x2E1210DE,
}
_BAR1_BYTES = 256 * MIB  # the aperture without resizable BAR
_MIG_DEVICE_SLOTS = 7  # nvmlDeviceGetMaxMigDeviceCount on an H100
_ENERGY_COLUMN = FIELD_COLUMN[N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION]


def _has_power(p: GpuProfile) -> bool:
    return p.has_power


def _per_second(values: str, supported: Callable[[GpuProfile], bool] = lambda p: True) -> Callable[..., int]:
    """A C function ``f(device, value*)`` answering with the timeline's ``values`` at this second."""

    def impl(self: SimulatedNvmlBase, handle: Any, ref: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        if not supported(g.profile):
            return N.NVML_ERROR_NOT_SUPPORTED
        answered = self.answered_values.get(values)
        ref._obj.value = answered if answered is not None else getattr(g, values)[g.i]
        return N.NVML_SUCCESS

    return impl


class DeviceCalls(SimulatedNvmlBase):
    # ---- system ----
    def c_nvmlInitWithFlags(self, flags: Any = 0) -> int:
        fault = self.spec.nvml_fault
        until = self.spec.nvml_fault_until_s
        if fault and (until is None or self.sim_time_s() < until):
            return _NVML_FAULT_CODES[fault]
        self.refcount += 1
        return N.NVML_SUCCESS

    def c_nvmlInit_v2(self) -> int:
        return self.c_nvmlInitWithFlags(0)

    def c_nvmlShutdown(self) -> int:
        if not self.refcount:
            return N.NVML_ERROR_UNINITIALIZED
        self.refcount -= 1
        return N.NVML_SUCCESS

    def c_nvmlErrorString(self, code: Any) -> bytes:
        value = code.value if hasattr(code, "value") else code
        return binding.error_string(value).encode()

    def c_nvmlSystemGetDriverVersion(self, buffer: Any, size: Any) -> int:
        return put_string(buffer, size, f"{self.spec.driver}.43.01")

    def c_nvmlSystemGetNVMLVersion(self, buffer: Any, size: Any) -> int:
        return put_string(buffer, size, f"{13 if self.spec.driver >= 580 else 12}.{self.spec.driver}.43.01")

    def c_nvmlSystemGetCudaDriverVersion(self, ref: Any) -> int:
        ref._obj.value = 13010
        return N.NVML_SUCCESS

    c_nvmlSystemGetCudaDriverVersion_v2 = c_nvmlSystemGetCudaDriverVersion

    def c_nvmlDeviceGetCount_v2(self, ref: Any) -> int:
        if not self.refcount:
            return N.NVML_ERROR_UNINITIALIZED
        ref._obj.value = len(self.timelines)
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetHandleByIndex_v2(self, index: Any, ref: Any) -> int:
        if not self.refcount:
            return N.NVML_ERROR_UNINITIALIZED
        if not 0 <= index.value < len(self.timelines):
            return N.NVML_ERROR_INVALID_ARGUMENT
        set_pointer(ref._obj, index.value + 1)
        return N.NVML_SUCCESS

    # ---- static facts ----
    def c_nvmlDeviceGetIndex(self, handle: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        ref._obj.value = found[0]
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetName(self, handle: Any, buffer: Any, size: Any) -> int:
        mig = self._mig(handle)
        if mig is not None:
            return (
                mig if isinstance(mig, int) else put_string(buffer, size, f"{mig[0].profile.name} MIG {mig[1].profile}")
            )
        found = self._static(handle)
        if isinstance(found, int):
            return found
        return put_string(buffer, size, self.gpu_names.get(found[0], found[1].name))

    def c_nvmlDeviceGetUUID(self, handle: Any, buffer: Any, size: Any) -> int:
        mig = self._mig(handle)
        if mig is not None:
            if isinstance(mig, int):
                return mig
            parent_uuid = self.uuids[mig[0].gpu].removeprefix("GPU-")
            return put_string(buffer, size, f"MIG-{uuid.uuid5(uuid.UUID(parent_uuid), str(mig[1].gpu_instance_id))}")
        found = self._static(handle)
        return found if isinstance(found, int) else put_string(buffer, size, self.uuids[found[0]])

    def c_nvmlDeviceGetSerial(self, handle: Any, buffer: Any, size: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        index, profile = found
        if not profile.board_serial:
            return N.NVML_ERROR_NOT_SUPPORTED
        return put_string(buffer, size, str(int(profile.board_serial) + index))

    def c_nvmlDeviceGetVbiosVersion(self, handle: Any, buffer: Any, size: Any) -> int:
        found = self._static(handle)
        return found if isinstance(found, int) else put_string(buffer, size, found[1].vbios_version)

    def c_nvmlDeviceGetPciInfo_v3(self, handle: Any, ref: Any) -> int:
        # Answered from what the driver knows of the PCI function: assumed not to wake a sleeping GPU.
        found = self._gpu(handle, wakes=False)
        if isinstance(found, int):
            return found
        index = found.gpu
        bus = PCI_BUSES[index] if index < len(PCI_BUSES) else 0xE0 + index
        info = ref._obj
        info.domain, info.bus, info.device = 0, bus, 0
        info.pciDeviceId = _PCI_DEVICE_IDS[self.profile_keys[index]]
        info.busId = f"00000000:{bus:02X}:00.0".encode()
        info.busIdLegacy = f"0000:{bus:02X}:00.0".encode()
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetCudaComputeCapability(self, handle: Any, major: Any, minor: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        major._obj.value, minor._obj.value = found[1].compute_capability
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetPersistenceMode(self, handle: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        ref._obj.value = 1 if found[1].nvlink_links else 0
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetMigMode(self, handle: Any, current: Any, pending: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        if not found[1].mig_capable:
            return N.NVML_ERROR_NOT_SUPPORTED
        current._obj.value = pending._obj.value = 1 if self.mig_mode(found[0]) else 0
        return N.NVML_SUCCESS

    # ---- MIG devices ----
    def c_nvmlDeviceGetMaxMigDeviceCount(self, handle: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        if not found[1].mig_capable:
            return N.NVML_ERROR_NOT_SUPPORTED
        ref._obj.value = _MIG_DEVICE_SLOTS
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, index: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        gpu, profile = found
        if not self.mig_mode(gpu):
            return N.NVML_ERROR_NOT_SUPPORTED if not profile.mig_capable else N.NVML_ERROR_INVALID_ARGUMENT
        instances = self.mig_instances(gpu)
        if index.value >= len(instances):
            return N.NVML_ERROR_NOT_FOUND
        set_pointer(ref._obj, (instances[index.value].gpu_instance_id + 1) * MIG_HANDLE_BASE + gpu + 1)
        return N.NVML_SUCCESS

    def c_nvmlDeviceIsMigDeviceHandle(self, handle: Any, ref: Any) -> int:
        mig = self._mig(handle)
        if isinstance(mig, int):
            return mig
        ref._obj.value = 0 if mig is None else 1
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetGpuInstanceId(self, handle: Any, ref: Any) -> int:
        mig = self._mig(handle)
        if mig is None:
            return N.NVML_ERROR_INVALID_ARGUMENT  # not a MIG device
        if isinstance(mig, int):
            return mig
        ref._obj.value = mig[1].gpu_instance_id
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetComputeInstanceId(self, handle: Any, ref: Any) -> int:
        mig = self._mig(handle)
        if mig is None:
            return N.NVML_ERROR_INVALID_ARGUMENT
        if isinstance(mig, int):
            return mig
        ref._obj.value = 0
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, handle: Any, ref: Any) -> int:
        mig = self._mig(handle)
        if mig is None:
            return N.NVML_ERROR_INVALID_ARGUMENT
        if isinstance(mig, int):
            return mig
        set_pointer(ref._obj, mig[0].gpu + 1)
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetEccMode(self, handle: Any, current: Any, pending: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        if not found[1].has_ecc:
            return N.NVML_ERROR_NOT_SUPPORTED
        current._obj.value = pending._obj.value = 1
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetPowerManagementLimitConstraints(self, handle: Any, low: Any, high: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        if not found[1].has_power:
            return N.NVML_ERROR_NOT_SUPPORTED
        low._obj.value = int(found[1].power_min_limit_w * 1000)
        high._obj.value = int(found[1].power_max_limit_w * 1000)
        return N.NVML_SUCCESS

    def _power_limit(self, handle: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        if not found[1].has_power:
            return N.NVML_ERROR_NOT_SUPPORTED
        ref._obj.value = int(found[1].power_limit_w * 1000)
        return N.NVML_SUCCESS

    c_nvmlDeviceGetPowerManagementDefaultLimit = _power_limit
    c_nvmlDeviceGetPowerManagementLimit = _power_limit
    c_nvmlDeviceGetEnforcedPowerLimit = _power_limit

    def c_nvmlDeviceGetMaxClockInfo(self, handle: Any, clock_type: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        p = found[1]
        ref._obj.value = {
            N.NVML_CLOCK_GRAPHICS: p.clock_max_sm_mhz,
            N.NVML_CLOCK_SM: p.clock_max_sm_mhz,
            N.NVML_CLOCK_MEM: p.clock_max_memory_mhz,
            N.NVML_CLOCK_VIDEO: p.clock_max_video_mhz,
        }[clock_type.value]
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetTemperatureThreshold(self, handle: Any, threshold: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        limits = {
            N.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: THERMAL_SLOWDOWN_C,
            N.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: THERMAL_SHUTDOWN_C,
        }
        if threshold.value not in limits:
            return N.NVML_ERROR_NOT_SUPPORTED
        ref._obj.value = int(limits[threshold.value])
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        ref._obj.value = found[1].pcie_gen_max
        return N.NVML_SUCCESS

    c_nvmlDeviceGetCurrPcieLinkGeneration = c_nvmlDeviceGetMaxPcieLinkGeneration

    def c_nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        ref._obj.value = found[1].pcie_width_max
        return N.NVML_SUCCESS

    c_nvmlDeviceGetCurrPcieLinkWidth = c_nvmlDeviceGetMaxPcieLinkWidth

    # ---- dynamic values ----
    def c_nvmlDeviceGetUtilizationRates(self, handle: Any, ref: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        if self.mig_mode(g.gpu):  # as on real GPUs: no utilization in MIG mode (use GPM)
            return N.NVML_ERROR_NOT_SUPPORTED
        u = ref._obj
        u.gpu = g.util[g.i]
        u.memory = g.util_memory[g.i]
        return N.NVML_SUCCESS

    def _memory(self, handle: Any, ref: Any, v2: bool) -> int:
        mig = self._mig(handle)
        if mig is not None:
            if isinstance(mig, int):
                return mig
            parent, instance = mig
            m = ref._obj
            m.total = instance.memory_total_bytes
            used = self._instance_used(parent.gpu, instance.gpu_instance_id)
            m.used, m.free = used, instance.memory_total_bytes - used
            if v2:
                m.reserved = 0
            return N.NVML_SUCCESS
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        p = g.profile
        if not p.has_memory_info:  # unified memory: no framebuffer of its own to report
            return N.NVML_ERROR_NOT_SUPPORTED
        m = ref._obj
        used = g.memory_used[g.i]
        if self.mig_mode(g.gpu):  # the board's memory in use is what its instances use
            used = sum(self._instance_used(g.gpu, i.gpu_instance_id) for i in self.mig_instances(g.gpu))
        m.total = p.memory_total_bytes
        if v2:
            m.reserved = p.memory_reserved_bytes
            m.used = used
        else:  # v1 counts the driver's reservation as used, as the real v1 call does
            used += p.memory_reserved_bytes
            m.used = used
        m.free = p.memory_total_bytes - p.memory_reserved_bytes - (m.used - (p.memory_reserved_bytes if not v2 else 0))
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetBAR1MemoryInfo(self, handle: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        if not found[1].has_memory_info:  # no framebuffer, no aperture onto it
            return N.NVML_ERROR_NOT_SUPPORTED
        bar1 = ref._obj
        bar1.bar1Total = _BAR1_BYTES
        bar1.bar1Used = 2 * MIB
        bar1.bar1Free = _BAR1_BYTES - 2 * MIB
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetMemoryInfo_v2(self, handle: Any, ref: Any) -> int:
        return self._memory(handle, ref, True)

    def c_nvmlDeviceGetMemoryInfo(self, handle: Any, ref: Any) -> int:
        return self._memory(handle, ref, False)

    def c_nvmlDeviceGetTemperature(self, handle: Any, sensor: Any, ref: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        if sensor.value != N.NVML_TEMPERATURE_GPU:
            return N.NVML_ERROR_NOT_SUPPORTED
        ref._obj.value = g.temperature[g.i]
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetTemperatureV(self, handle: Any, ref: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        reading = ref._obj
        if reading.version != N.nvmlTemperature_v1:
            return N.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        if reading.sensorType != N.NVML_TEMPERATURE_GPU:
            return N.NVML_ERROR_NOT_SUPPORTED
        reading.temperature = g.temperature[g.i]
        return N.NVML_SUCCESS

    # One value of the GPU's per-second timeline, or NOT_SUPPORTED where its profile lacks it.
    c_nvmlDeviceGetFanSpeed = _per_second("fan", lambda p: p.has_fan)
    c_nvmlDeviceGetPowerUsage = _per_second("power_mw", _has_power)
    c_nvmlDeviceGetPerformanceState = _per_second("pstate")
    c_nvmlDeviceGetCurrentClocksEventReasons = _per_second("reasons")
    c_nvmlDeviceGetCurrentClocksThrottleReasons = _per_second("reasons")  # its name before driver 535

    def c_nvmlDeviceGetTotalEnergyConsumption(self, handle: Any, ref: Any) -> int:
        """The counter the energy field answers, counting on within its second as a driver's does."""
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        if not g.profile.has_power:
            return N.NVML_ERROR_NOT_SUPPORTED
        answered = self.answered_values.get("energy_mj")
        ref._obj.value = answered if answered is not None else int(g.field_row(self.frozen_for_s())[_ENERGY_COLUMN])
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetClockInfo(self, handle: Any, clock_type: Any, ref: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        kind = clock_type.value
        if kind == N.NVML_CLOCK_MEM:
            ref._obj.value = g.clock_memory[g.i]
        elif kind == N.NVML_CLOCK_VIDEO:
            ref._obj.value = g.clock_video[g.i]
        else:
            ref._obj.value = g.clock_sm[g.i]
        return N.NVML_SUCCESS

    def _codec(self, handle: Any, util: Any, period: Any, values_name: str) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        util._obj.value = getattr(g, values_name)[g.i]
        period._obj.value = 167_000
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetEncoderUtilization(self, handle: Any, util: Any, period: Any) -> int:
        return self._codec(handle, util, period, "encoder")

    def c_nvmlDeviceGetDecoderUtilization(self, handle: Any, util: Any, period: Any) -> int:
        return self._codec(handle, util, period, "decoder")

    def c_nvmlDeviceGetPcieReplayCounter(self, handle: Any, ref: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        ref._obj.value = 0
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetPcieThroughput(self, handle: Any, counter: Any, ref: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        values = g.pcie_tx_kb_per_s if counter.value == N.NVML_PCIE_UTIL_TX_BYTES else g.pcie_rx_kb_per_s
        ref._obj.value = values[g.i] * self.pcie_throughput_scale
        return N.NVML_SUCCESS
