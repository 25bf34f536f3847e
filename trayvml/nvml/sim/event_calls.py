"""The event C functions: XID errors (the scenario's, and a lost GPU's) delivered to event sets."""

from __future__ import annotations

import ctypes
from typing import Any

import pynvml as N

from trayvml.core.clock import Clock
from trayvml.nvml.sim.base import SimulatedNvmlBase, pointer_value, set_pointer
from trayvml.nvml.sim.options import SimSpec

_XID_LOST = 79  # "GPU has fallen off the bus"


class EventCalls(SimulatedNvmlBase):
    def __init__(self, spec: SimSpec, clock: Clock) -> None:
        super().__init__(spec, clock)
        self._event_sets: dict[int, tuple[set[int], list[int]]] = {}  # id -> (GPUs, delivered)
        xids = list(self.scenario.xid_events())
        xids += [(at_s, gpu, _XID_LOST) for gpu, at_s in spec.lost_at_s.items()]
        self._xid_events = sorted(xids)

    def c_nvmlEventSetCreate(self, ref: Any) -> int:
        if not self.refcount:
            return N.NVML_ERROR_UNINITIALIZED
        set_id = len(self._event_sets) + 1
        self._event_sets[set_id] = (set(), [0])
        set_pointer(ref._obj, set_id)
        return N.NVML_SUCCESS

    def c_nvmlDeviceRegisterEvents(self, handle: Any, event_types: Any, event_set: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        entry = self._event_sets.get(pointer_value(event_set))
        if entry is None:
            return N.NVML_ERROR_INVALID_ARGUMENT
        if event_types.value & N.nvmlEventTypeXidCriticalError:
            entry[0].add(g.gpu)
        return N.NVML_SUCCESS

    def c_nvmlEventSetWait_v2(self, event_set: Any, ref: Any, timeout_ms: Any) -> int:
        entry = self._event_sets.get(pointer_value(event_set))
        if entry is None:
            return N.NVML_ERROR_INVALID_ARGUMENT
        gpus, cursor = entry
        now_s = self.sim_time_s()
        while cursor[0] < len(self._xid_events):
            at_s, gpu, xid = self._xid_events[cursor[0]]
            if at_s > now_s:
                break
            cursor[0] += 1
            if gpu in gpus:
                data = ref._obj
                data.device = ctypes.cast(gpu + 1, N.c_nvmlDevice_t)
                data.eventType = N.nvmlEventTypeXidCriticalError
                data.eventData = xid
                return N.NVML_SUCCESS
        return N.NVML_ERROR_TIMEOUT

    def c_nvmlEventSetFree(self, event_set: Any) -> int:
        self._event_sets.pop(pointer_value(event_set), None)
        return N.NVML_SUCCESS
