"""The C function that answers field values (nvmlDeviceGetFieldValues), from the field models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pynvml as N

from trayvml.core.clock import Clock
from trayvml.nvml.fields import field_view
from trayvml.nvml.sim.base import SimulatedNvmlBase
from trayvml.nvml.sim.field_models import FIELD_COLUMN, FIELD_MODELS
from trayvml.nvml.sim.options import SimSpec
from trayvml.nvml.sim.profiles import GpuProfile


@dataclass(frozen=True)
class _FieldPlan:
    """How to answer one list of field ids on one profile: a column, code and type per field."""

    columns: np.ndarray
    codes: np.ndarray
    types: np.ndarray


class FieldCalls(SimulatedNvmlBase):
    def __init__(self, spec: SimSpec, clock: Clock) -> None:
        super().__init__(spec, clock)
        self._plans: dict[tuple[str, bytes, bytes], _FieldPlan] = {}

    def _field_plan(self, profile: GpuProfile, fids: np.ndarray, scopes: np.ndarray) -> _FieldPlan:
        key = (profile.key, fids.tobytes(), scopes.tobytes())
        plan = self._plans.get(key)
        if plan is None:
            columns, codes, types = [], [], []
            for fid, scope in zip(fids.tolist(), scopes.tolist(), strict=True):
                model = FIELD_MODELS.get(fid)
                known = model is None or model.since_driver <= self.spec.driver
                supported = known and model is not None and model.supported(profile, scope)
                columns.append(FIELD_COLUMN[fid] if supported else 0)
                code = N.NVML_SUCCESS if supported else N.NVML_ERROR_NOT_SUPPORTED
                codes.append(code if known else N.NVML_ERROR_INVALID_ARGUMENT)
                types.append(model.value_type if model is not None and supported else 0)
            plan = _FieldPlan(np.array(columns, dtype=np.intp), np.array(codes), np.array(types))
            self._plans[key] = plan
        return plan

    def c_nvmlDeviceGetFieldValues(self, handle: Any, count: Any, values: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        view = field_view(values._obj, count.value)
        self.wait_fields(view["fieldId"].tolist())
        plan = self._field_plan(g.profile, view["fieldId"], view["scopeId"])
        view["timestamp"] = int(self.clock.now_s() * 1e6)
        view["nvmlReturn"] = plan.codes
        view["valueType"] = plan.types
        row = g.field_row(self.frozen_for_s())[plan.columns]
        if self.fields_add_into_buffer:
            view["value"] += row
        else:
            view["value"] = row
        if self.field_types or self.field_raw:
            for position, fid in enumerate(view["fieldId"].tolist()):
                if fid in self.field_types:
                    view["valueType"][position] = self.field_types[fid]
                if fid in self.field_raw:
                    view["value"][position] = self.field_raw[fid]
        if self.restarted_counters:
            for position, fid in enumerate(view["fieldId"].tolist()):
                if fid in self.restarted_counters:  # counted from the restart on
                    start = self.restarted_counters[fid].setdefault(g.gpu, int(view["value"][position]))
                    view["value"][position] = int(view["value"][position]) - start
        if self.field_failures:
            for position, fid in enumerate(view["fieldId"].tolist()):
                for gpu, code in self.field_failures.get(fid, ()):
                    if gpu is None or gpu == g.gpu:
                        view["nvmlReturn"][position] = code
        return N.NVML_SUCCESS
