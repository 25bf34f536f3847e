"""The NVML reader: the one place that calls pynvml, from one thread.

Static facts are read once. Each dynamic metric is read by an *op* (one pynvml call and
how its result fills the metric slots) at its own cadence. An op that answers
NOT_SUPPORTED or FUNCTION_NOT_FOUND is dropped for that GPU for good (after trying an
older variant of the call); transient errors leave NaN and a state for that sample only;
GPU_IS_LOST marks that GPU lost while the others carry on; when NVML itself goes away the
reader reports why in a sentence and tries again later.
"""

from __future__ import annotations

import ctypes
import logging
import math
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pynvml as N

from trayvml.core.clock import Clock
from trayvml.core.errors import NvmlUnavailable, UnavailableReason
from trayvml.core.metrics import GPU_INDEX, GPU_METRICS
from trayvml.core.safe_text import clean, decode
from trayvml.core.sample import (
    DeviceInfo,
    GpuSample,
    MetricState,
    ProcessDetails,
    ProcessSample,
    SystemInfo,
)
from trayvml.nvml.fields import decode_as, field_array, field_view, read_fields, read_memory_v2

log = logging.getLogger(__name__)

NAN = math.nan
SLOW_PERIOD_S = 10.0  # limits, link state, error counters: they change rarely
PROCESS_PERIOD_S = 5.0  # a process query costs milliseconds in the driver
PCIE_THROUGHPUT_PERIOD_S = 10.0  # the fallback call blocks 20 ms per direction
RETRY_PERIOD_S = 10.0  # how often to try NVML again when it could not start

# Errors that mean NVML as a whole is unusable, not one metric.
_FATAL = {
    N.NVML_ERROR_UNINITIALIZED,
    N.NVML_ERROR_DRIVER_NOT_LOADED,
    N.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
    N.NVML_ERROR_LIBRARY_NOT_FOUND,
}
_UNAVAILABLE_REASONS = {
    N.NVML_ERROR_LIBRARY_NOT_FOUND: UnavailableReason.LIBRARY_NOT_FOUND,
    N.NVML_ERROR_DRIVER_NOT_LOADED: UnavailableReason.DRIVER_NOT_LOADED,
    N.NVML_ERROR_LIB_RM_VERSION_MISMATCH: UnavailableReason.VERSION_MISMATCH,
    N.NVML_ERROR_NO_PERMISSION: UnavailableReason.NO_PERMISSION,
}

ProcessResolver = Callable[[int], ProcessDetails | None]
"""Looks a PID up on the host: details, None if it is gone, PermissionError if hidden."""


class _NvmlDownError(Exception):
    def __init__(self, error: N.NVMLError) -> None:
        super().__init__(str(error))
        self.error = error


def unavailable_from(error: N.NVMLError) -> NvmlUnavailable:
    reason = _UNAVAILABLE_REASONS.get(error.value, UnavailableReason.OTHER)
    return NvmlUnavailable(reason, str(error))


@dataclass(eq=False)
class _Op:
    name: str  # the pynvml call, for logs
    call: Callable[[Any], Any]
    fill: Callable[[_Gpu, Any], None]
    keys: tuple[str, ...]
    period_s: float = 0.0  # 0: every tick
    fallback: _Op | None = None
    next_due_s: float = 0.0
    failing: bool = False
    batch: _FieldBatch | None = None  # set on field-value ops


@dataclass(eq=False)
class _Gpu:
    index: int
    handle: Any
    info: DeviceInfo
    values: list[float]
    states: list[MetricState]
    ops: list[_Op] = field(default_factory=list)
    lost: bool = False
    compute: tuple[ProcessSample, ...] = ()
    graphics: tuple[ProcessSample, ...] = ()
    processes: tuple[ProcessSample, ...] = ()
    nvlink_tx: np.ndarray = field(default_factory=lambda: np.zeros(0))  # bytes/s per supported link
    nvlink_rx: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _idx(key: str) -> int:
    return GPU_INDEX[key]


# Metric slots, looked up once.
UTIL_GPU, UTIL_MEM = _idx("utilization_gpu_percent"), _idx("utilization_memory_percent")
MEM_USED, MEM_FREE, MEM_RESERVED = (
    _idx("memory_used_bytes"),
    _idx("memory_free_bytes"),
    _idx("memory_reserved_bytes"),
)
MEM_PERCENT = _idx("memory_used_percent")
POWER, POWER_ENFORCED = _idx("power_draw_w"), _idx("power_enforced_limit_w")
POWER_PERCENT = _idx("power_used_percent")
NVLINK_TX, NVLINK_RX = _idx("nvlink_tx_bytes_per_s"), _idx("nvlink_rx_bytes_per_s")
XID_COUNT, XID_LAST = _idx("xid_error_count"), _idx("xid_last")
PROCESS_COUNT = _idx("process_count")


def _setter(key: str, scale: float = 1.0) -> Callable[[_Gpu, Any], None]:
    slot = _idx(key)
    if scale == 1.0:

        def fill(g: _Gpu, value: Any) -> None:
            g.values[slot] = value

    else:

        def fill(g: _Gpu, value: Any) -> None:
            g.values[slot] = value * scale

    return fill


def _fill_utilization(g: _Gpu, util: Any) -> None:
    g.values[UTIL_GPU] = util.gpu
    g.values[UTIL_MEM] = util.memory


def _fill_memory(g: _Gpu, memory: Any) -> None:
    v = g.values
    v[MEM_USED] = memory.used
    v[MEM_FREE] = memory.free
    v[MEM_RESERVED] = getattr(memory, "reserved", NAN)  # the v1 struct has no reservation
    v[MEM_PERCENT] = 100.0 * memory.used / memory.total if memory.total else NAN


def _fill_codec(key: str) -> Callable[[_Gpu, Any], None]:
    slot = _idx(key)

    def fill(g: _Gpu, util_and_period: Any) -> None:
        g.values[slot] = util_and_period[0]

    return fill


@dataclass(frozen=True)
class _Field:
    fid: int
    scope: int
    key: str  # the metric it feeds
    kind: str = "value"  # "value", "rate" (a counter), "nvlink_tx" or "nvlink_rx" (per-link counters)
    scale: float = 1.0


_KIND_ORDER = {"value": 0, "rate": 1, "nvlink_tx": 2, "nvlink_rx": 3}


class _FieldBatch:
    """Many field values in one ``nvmlDeviceGetFieldValues`` call; each field has its own code.

    Fields are kept in the order values, counters, NVLink TX links, NVLink RX links, so that
    each group is a slice of the decoded array and a tick costs a few numpy operations.
    """

    def __init__(self, fields: list[_Field]) -> None:
        self.set_fields(fields)

    def set_fields(self, fields: list[_Field]) -> None:
        fields = sorted(fields, key=lambda f: (_KIND_ORDER[f.kind], f.scope))
        self.fields = fields
        self.array = field_array([(f.fid, f.scope) for f in fields])
        self.view = field_view(self.array)
        self.keys = tuple(dict.fromkeys(f.key for f in fields))
        self.bad_keys: set[str] = set(self.keys)  # until the first answer
        self.value_fields = [(i, _idx(f.key), f.scale) for i, f in enumerate(fields) if f.kind == "value"]
        first_counter = len(self.value_fields)
        counters = fields[first_counter:]
        self.counters = slice(first_counter, len(fields))
        self.counter_scale = np.array([f.scale for f in counters])
        self.counter_slots = [(k, _idx(f.key)) for k, f in enumerate(counters) if f.kind == "rate"]
        tx = sum(f.kind == "nvlink_tx" for f in counters)
        rx = sum(f.kind == "nvlink_rx" for f in counters)
        rates_end = len(counters) - tx - rx
        self.tx_links = slice(rates_end, rates_end + tx)
        self.rx_links = slice(rates_end + tx, rates_end + tx + rx)
        self.previous: np.ndarray | None = None
        self.previous_s = 0.0
        self._types = b""
        self._type_groups: list[tuple[int, np.ndarray]] = []

    def decode(self) -> np.ndarray:
        """Each field's value as float64, whatever member of the union NVML wrote."""
        types = self.view["valueType"]
        signature = types.tobytes()
        if signature != self._types:  # value types are fixed per field: regroup only on change
            self._types = signature
            self._type_groups = [
                (int(t), np.flatnonzero(types == t))
                for t in np.unique(types).tolist()
                if t != N.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            ]
        raw = self.view["value"]
        out = raw.astype(np.float64)
        for value_type, positions in self._type_groups:
            out[positions] = decode_as(raw[positions], value_type)
        return out

    def rates(self, numbers: np.ndarray, now_s: float) -> np.ndarray:
        """Per-second rates of the counter fields since the last call; NaN first and on wrap."""
        current = numbers[self.counters] * self.counter_scale
        previous, elapsed_s = self.previous, now_s - self.previous_s
        self.previous, self.previous_s = current, now_s
        if previous is None or elapsed_s <= 0:
            return np.full(len(current), NAN)
        rates = (current - previous) / elapsed_s
        rates[rates < 0] = NAN  # the counter wrapped or was reset
        return rates


class NvmlReader:
    def __init__(self, clock: Clock, resolve_process: ProcessResolver | None = None) -> None:
        self.clock = clock
        self.resolve_process = resolve_process or (lambda pid: None)
        self.unavailable: NvmlUnavailable | None = None
        self.system: SystemInfo | None = None
        self.devices: tuple[DeviceInfo, ...] = ()
        self.notes: tuple[str, ...] = ()
        self._gpus: list[_Gpu] | None = None
        self._next_retry_s = 0.0
        self._event_set: Any = None
        self._gpu_by_handle: dict[int, _Gpu] = {}
        self._missing_functions: set[str] = set()
        self._process_cache: dict[int, ProcessDetails | PermissionError | None] = {}
        # The NVML function being called: read from another thread to say which call is stuck.
        self.current_call = ""

    # ---- lifecycle ----
    def read(self) -> tuple[GpuSample, ...]:
        """One sample of every GPU; empty while NVML is unavailable (see ``unavailable``)."""
        now_s = self.clock.now_s()
        if self._gpus is None:
            if now_s < self._next_retry_s:
                return ()
            self._open(now_s)
            if self._gpus is None:
                return ()
        try:
            self._drain_xid_events()
            return tuple(self._read_gpu(g, now_s) for g in self._gpus)
        except _NvmlDownError as down:
            self._go_down(unavailable_from(down.error), now_s)
            return ()

    def close(self) -> None:
        if self._gpus is not None:
            self._shutdown()

    def _go_down(self, why: NvmlUnavailable, now_s: float) -> None:
        log.warning("NVML stopped answering (%s); retrying every %.0f s", why.sentence, RETRY_PERIOD_S)
        self._shutdown()
        self.unavailable = why
        self._next_retry_s = now_s + RETRY_PERIOD_S

    def _shutdown(self) -> None:
        self._gpus = None
        self._gpu_by_handle = {}
        try:
            if self._event_set is not None:
                N.nvmlEventSetFree(self._event_set)
            N.nvmlShutdown()
        except N.NVMLError:
            pass  # already gone: nothing left to release
        self._event_set = None

    def _open(self, now_s: float) -> None:
        self.current_call = "nvmlInit"
        try:
            N.nvmlInit()
        except N.NVMLError as error:
            self.unavailable = unavailable_from(error)
            self._next_retry_s = now_s + RETRY_PERIOD_S
            return
        self.current_call = "nvmlDeviceGet* (the GPUs' static facts)"
        try:
            count = N.nvmlDeviceGetCount()
            self.system = self._system_info()
            gpus = [self._open_gpu(i) for i in range(count)]
        except N.NVMLError as error:
            self._shutdown()
            self.unavailable = unavailable_from(error)
            self._next_retry_s = now_s + RETRY_PERIOD_S
            return
        if not gpus:
            self._shutdown()
            self.unavailable = NvmlUnavailable(UnavailableReason.NO_GPUS)
            self._next_retry_s = now_s + RETRY_PERIOD_S
            return
        self._gpus = gpus
        self.devices = tuple(g.info for g in gpus)
        self.unavailable = None
        self._gpu_by_handle = {_handle_value(g.handle): g for g in gpus if g.handle is not None}
        self._open_events(gpus)

    def _system_info(self) -> SystemInfo:
        def text(call: Callable[[], Any]) -> str:
            try:
                return _decoded(call)()
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
            driver_version=text(N.nvmlSystemGetDriverVersion),
            cuda_driver_version=cuda,
            nvml_version=text(N.nvmlSystemGetNVMLVersion),
        )

    # ---- one GPU ----
    def _open_gpu(self, index: int) -> _Gpu:
        values = [NAN] * len(GPU_METRICS)
        states = [MetricState.NOT_SUPPORTED] * len(GPU_METRICS)
        try:
            handle = N.nvmlDeviceGetHandleByIndex(index)
            info = self._device_info(index, handle)
        except N.NVMLError as error:
            if error.value in _FATAL:
                raise
            lost = _Gpu(index, None, DeviceInfo(index, "(name unknown)", ""), values, states)
            self._mark_lost(lost)
            return lost
        g = _Gpu(index, handle, info, values, states)
        g.nvlink_tx = np.full(info.nvlink_link_count, NAN)
        g.nvlink_rx = np.full(info.nvlink_link_count, NAN)
        g.ops = self._ops(g)
        for op in g.ops:
            op.failing = True  # until its first answer turns its metrics OK
            for key in op.keys:
                states[_idx(key)] = MetricState.NO_DATA
        for key in ("memory_used_percent", "power_used_percent", "xid_error_count", "xid_last"):
            states[_idx(key)] = MetricState.OK
        values[XID_COUNT] = 0.0
        return g

    def _device_info(self, index: int, handle: Any) -> DeviceInfo:
        def get(call: Callable[..., Any], *args: Any, default: Any = None) -> Any:
            try:
                return call(handle, *args)
            except N.NVMLError as error:
                if error.value == N.NVML_ERROR_GPU_IS_LOST or error.value in _FATAL:
                    raise
                return default

        name = get(_decoded(N.nvmlDeviceGetName), default=f"GPU {index}")
        pci = get(N.nvmlDeviceGetPciInfo_v3)
        capability = get(N.nvmlDeviceGetCudaComputeCapability)
        mig = get(N.nvmlDeviceGetMigMode)
        ecc = get(N.nvmlDeviceGetEccMode)
        limits = get(N.nvmlDeviceGetPowerManagementLimitConstraints)
        default_limit = get(N.nvmlDeviceGetPowerManagementDefaultLimit)
        memory = get(N.nvmlDeviceGetMemoryInfo)
        persistence = get(N.nvmlDeviceGetPersistenceMode)
        # Where the link count cannot be read, probe every possible link: the links a GPU
        # lacks answer NOT_SUPPORTED on the first tick and are dropped then.
        links = N.NVML_NVLINK_MAX_LINKS
        try:
            field_value = N.nvmlDeviceGetFieldValues(handle, [N.NVML_FI_DEV_NVLINK_LINK_COUNT])[0]
            if field_value.nvmlReturn == N.NVML_SUCCESS:
                links = int(field_value.value.uiVal)
            elif field_value.nvmlReturn == N.NVML_ERROR_NOT_SUPPORTED:
                links = 0
        except N.NVMLError as error:
            if error.value == N.NVML_ERROR_GPU_IS_LOST or error.value in _FATAL:
                raise
            if error.value in (N.NVML_ERROR_NOT_SUPPORTED, N.NVML_ERROR_FUNCTION_NOT_FOUND):
                links = 0

        def clock(kind: int) -> float:
            value = get(N.nvmlDeviceGetMaxClockInfo, kind)
            return NAN if value is None else float(value)

        def number(value: Any, scale: float = 1.0) -> float:
            return NAN if value is None else float(value) * scale

        def flag(value: Any) -> bool | None:
            return None if value is None else bool(value)

        return DeviceInfo(
            index=index,
            name=name,
            uuid=get(_decoded(N.nvmlDeviceGetUUID), default=""),
            serial=get(_decoded(N.nvmlDeviceGetSerial), default=""),
            pci_bus_id=_bus_id(pci),
            vbios_version=get(_decoded(N.nvmlDeviceGetVbiosVersion), default=""),
            compute_capability=f"{capability[0]}.{capability[1]}" if capability else "",
            persistence_mode=flag(persistence),
            mig_mode_current=flag(mig[0]) if mig else None,
            mig_mode_pending=flag(mig[1]) if mig else None,
            ecc_mode_current=flag(ecc[0]) if ecc else None,
            memory_total_bytes=number(memory.total if memory else None),
            power_limit_default_w=number(default_limit, 1e-3),
            power_limit_min_w=number(limits[0] if limits else None, 1e-3),
            power_limit_max_w=number(limits[1] if limits else None, 1e-3),
            clock_max_sm_mhz=clock(N.NVML_CLOCK_SM),
            clock_max_graphics_mhz=clock(N.NVML_CLOCK_GRAPHICS),
            clock_max_memory_mhz=clock(N.NVML_CLOCK_MEM),
            clock_max_video_mhz=clock(N.NVML_CLOCK_VIDEO),
            pcie_link_gen_max=number(get(N.nvmlDeviceGetMaxPcieLinkGeneration)),
            pcie_link_width_max=number(get(N.nvmlDeviceGetMaxPcieLinkWidth)),
            nvlink_link_count=links,
        )

    def _ops(self, g: _Gpu) -> list[_Op]:
        """How each dynamic metric is read: the 'how to read it' half of the metric catalog."""

        def clock(kind: int) -> Callable[[Any], Any]:
            return lambda h: N.nvmlDeviceGetClockInfo(h, kind)

        fast = _FieldBatch(
            [
                _Field(N.NVML_FI_DEV_POWER_INSTANT, 0, "power_instant_w", scale=1e-3),
                _Field(N.NVML_FI_DEV_MEMORY_TEMP, 0, "temperature_memory_c"),
                _Field(N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES, 0, "pcie_tx_bytes_per_s", "rate"),
                _Field(N.NVML_FI_DEV_PCIE_COUNT_RX_BYTES, 0, "pcie_rx_bytes_per_s", "rate"),
            ]
            + [
                _Field(fid, link, f"nvlink_{direction}_bytes_per_s", f"nvlink_{direction}", 1024.0)  # KiB
                for link in range(g.info.nvlink_link_count)
                for fid, direction in (
                    (N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, "tx"),
                    (N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, "rx"),
                )
            ]
        )
        slow = _FieldBatch(
            [
                _Field(fid, 0, key)
                for fid, key in (
                    (N.NVML_FI_DEV_PCIE_REPLAY_COUNTER, "pcie_replay_count"),
                    (N.NVML_FI_DEV_ECC_SBE_VOL_TOTAL, "ecc_corrected_volatile_count"),
                    (N.NVML_FI_DEV_ECC_DBE_VOL_TOTAL, "ecc_uncorrected_volatile_count"),
                    (N.NVML_FI_DEV_ECC_SBE_AGG_TOTAL, "ecc_corrected_aggregate_count"),
                    (N.NVML_FI_DEV_ECC_DBE_AGG_TOTAL, "ecc_uncorrected_aggregate_count"),
                    (N.NVML_FI_DEV_RETIRED_SBE, "retired_pages_sbe_count"),
                    (N.NVML_FI_DEV_RETIRED_DBE, "retired_pages_dbe_count"),
                    (N.NVML_FI_DEV_RETIRED_PENDING, "retired_pages_pending"),
                    (N.NVML_FI_DEV_REMAPPED_COR, "remapped_rows_correctable_count"),
                    (N.NVML_FI_DEV_REMAPPED_UNC, "remapped_rows_uncorrectable_count"),
                    (N.NVML_FI_DEV_REMAPPED_PENDING, "remapped_rows_pending"),
                    (N.NVML_FI_DEV_REMAPPED_FAILURE, "remapped_rows_failure"),
                )
            ]
        )
        # The v1 call counts the driver's reservation as used and cannot report it apart.
        memory_v1_keys = tuple(k for k in _MEMORY_KEYS if k != "memory_reserved_bytes")
        memory_v1 = _Op("nvmlDeviceGetMemoryInfo", N.nvmlDeviceGetMemoryInfo, _fill_memory, memory_v1_keys)
        reasons_old = _Op(
            "nvmlDeviceGetCurrentClocksThrottleReasons",
            N.nvmlDeviceGetCurrentClocksThrottleReasons,
            _setter("clock_event_reasons"),
            ("clock_event_reasons",),
        )
        ops = [
            _Op(
                "nvmlDeviceGetUtilizationRates",
                N.nvmlDeviceGetUtilizationRates,
                _fill_utilization,
                _UTIL_KEYS,
            ),
            _Op(
                "nvmlDeviceGetMemoryInfo_v2",
                read_memory_v2,
                _fill_memory,
                _MEMORY_KEYS,
                fallback=memory_v1,
            ),
            _Op(
                "nvmlDeviceGetTemperature",
                lambda h: N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU),
                _setter("temperature_gpu_c"),
                ("temperature_gpu_c",),
            ),
            _Op(
                "nvmlDeviceGetFanSpeed",
                N.nvmlDeviceGetFanSpeed,
                _setter("fan_speed_percent"),
                ("fan_speed_percent",),
            ),
            _Op(
                "nvmlDeviceGetPowerUsage",
                N.nvmlDeviceGetPowerUsage,
                _setter("power_draw_w", 1e-3),
                ("power_draw_w", "power_used_percent"),
            ),
            _Op(
                "nvmlDeviceGetTotalEnergyConsumption",
                N.nvmlDeviceGetTotalEnergyConsumption,
                _setter("energy_consumed_j", 1e-3),
                ("energy_consumed_j",),
            ),
            _Op("nvmlDeviceGetClockInfo", clock(N.NVML_CLOCK_SM), _setter("clock_sm_mhz"), ("clock_sm_mhz",)),
            _Op(
                "nvmlDeviceGetClockInfo",
                clock(N.NVML_CLOCK_GRAPHICS),
                _setter("clock_graphics_mhz"),
                ("clock_graphics_mhz",),
            ),
            _Op(
                "nvmlDeviceGetClockInfo",
                clock(N.NVML_CLOCK_MEM),
                _setter("clock_memory_mhz"),
                ("clock_memory_mhz",),
            ),
            _Op(
                "nvmlDeviceGetClockInfo",
                clock(N.NVML_CLOCK_VIDEO),
                _setter("clock_video_mhz"),
                ("clock_video_mhz",),
            ),
            _Op(
                "nvmlDeviceGetPerformanceState",
                N.nvmlDeviceGetPerformanceState,
                _setter("performance_state"),
                ("performance_state",),
            ),
            _Op(
                "nvmlDeviceGetCurrentClocksEventReasons",
                N.nvmlDeviceGetCurrentClocksEventReasons,
                _setter("clock_event_reasons"),
                ("clock_event_reasons",),
                fallback=reasons_old,
            ),
            _Op(
                "nvmlDeviceGetEncoderUtilization",
                N.nvmlDeviceGetEncoderUtilization,
                _fill_codec("encoder_utilization_percent"),
                ("encoder_utilization_percent",),
            ),
            _Op(
                "nvmlDeviceGetDecoderUtilization",
                N.nvmlDeviceGetDecoderUtilization,
                _fill_codec("decoder_utilization_percent"),
                ("decoder_utilization_percent",),
            ),
            self._field_op(fast, 0.0),
            self._field_op(slow, SLOW_PERIOD_S),
            _Op(
                "nvmlDeviceGetPowerManagementLimit",
                N.nvmlDeviceGetPowerManagementLimit,
                _setter("power_limit_w", 1e-3),
                ("power_limit_w",),
                SLOW_PERIOD_S,
            ),
            _Op(
                "nvmlDeviceGetEnforcedPowerLimit",
                N.nvmlDeviceGetEnforcedPowerLimit,
                _setter("power_enforced_limit_w", 1e-3),
                ("power_enforced_limit_w",),
                SLOW_PERIOD_S,
            ),
            _Op(
                "nvmlDeviceGetCurrPcieLinkGeneration",
                N.nvmlDeviceGetCurrPcieLinkGeneration,
                _setter("pcie_link_gen"),
                ("pcie_link_gen",),
                SLOW_PERIOD_S,
            ),
            _Op(
                "nvmlDeviceGetCurrPcieLinkWidth",
                N.nvmlDeviceGetCurrPcieLinkWidth,
                _setter("pcie_link_width"),
                ("pcie_link_width",),
                SLOW_PERIOD_S,
            ),
            self._process_op("compute", PROCESS_PERIOD_S),
            self._process_op("graphics", PROCESS_PERIOD_S),
        ]
        return ops

    def _field_op(self, batch: _FieldBatch, period_s: float) -> _Op:
        def call(handle: Any) -> _FieldBatch:
            read_fields(handle, batch.array)
            return batch

        return _Op("nvmlDeviceGetFieldValues", call, self._fill_fields, batch.keys, period_s, batch=batch)

    def _fill_fields(self, g: _Gpu, batch: _FieldBatch) -> None:
        view = batch.view
        numbers = batch.decode()
        codes = view["nvmlReturn"]
        bad: dict[str, MetricState] = {}
        dropped: list[int] = []
        if codes.any():  # rare: some fields failed on their own
            for position in np.flatnonzero(codes).tolist():
                code = int(codes[position])
                if code == N.NVML_ERROR_NOT_SUPPORTED:
                    dropped.append(position)
                else:
                    bad[batch.fields[position].key] = _transient_state(code)
                numbers[position] = NAN
        values = numbers.tolist()
        for position, slot, scale in batch.value_fields:
            g.values[slot] = values[position] * scale
        if batch.counter_slots or batch.tx_links.stop:
            rates = batch.rates(numbers, self.clock.now_s())
            for k, slot in batch.counter_slots:
                g.values[slot] = float(rates[k])
            if batch.tx_links.stop:
                g.nvlink_tx = rates[batch.tx_links]
                g.nvlink_rx = rates[batch.rx_links]
                g.values[NVLINK_TX] = float(g.nvlink_tx.sum())
                g.values[NVLINK_RX] = float(g.nvlink_rx.sum())
        if bad or batch.bad_keys:
            for key in batch.bad_keys - bad.keys():
                g.states[_idx(key)] = MetricState.OK
            for key, state in bad.items():
                g.values[_idx(key)] = NAN
                g.states[_idx(key)] = state
            batch.bad_keys = set(bad)
        if dropped:
            self._drop_fields(g, batch, dropped)

    def _drop_fields(self, g: _Gpu, batch: _FieldBatch, positions: list[int]) -> None:
        """Fields answering NOT_SUPPORTED are not asked for again."""
        gone = {batch.fields[p].key for p in positions}
        batch.set_fields([f for p, f in enumerate(batch.fields) if p not in positions])
        batch.bad_keys = set()
        unsupported = gone - set(batch.keys)
        for key in unsupported:
            g.states[_idx(key)] = MetricState.NOT_SUPPORTED
            g.values[_idx(key)] = NAN
        if {"pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s"} & unsupported:
            self._add_pcie_throughput_op(g)
        if not batch.fields:
            g.ops = [op for op in g.ops if op.batch is not batch]

    def _add_pcie_throughput_op(self, g: _Gpu) -> None:
        """No PCIe byte counters: fall back to the 20 ms sampling call, read rarely."""
        if any(op.name == "nvmlDeviceGetPcieThroughput" for op in g.ops):
            return

        def call(handle: Any) -> tuple[int, int]:
            tx = N.nvmlDeviceGetPcieThroughput(handle, N.NVML_PCIE_UTIL_TX_BYTES)
            rx = N.nvmlDeviceGetPcieThroughput(handle, N.NVML_PCIE_UTIL_RX_BYTES)
            return tx, rx

        def fill(g: _Gpu, kb_per_s: tuple[int, int]) -> None:  # NVML reports KB/s
            g.values[_idx("pcie_tx_bytes_per_s")] = kb_per_s[0] * 1000.0
            g.values[_idx("pcie_rx_bytes_per_s")] = kb_per_s[1] * 1000.0

        keys = ("pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s")
        for key in keys:
            g.states[_idx(key)] = MetricState.NO_DATA
        g.ops.append(_Op("nvmlDeviceGetPcieThroughput", call, fill, keys, PCIE_THROUGHPUT_PERIOD_S, failing=True))

    def _process_op(self, kind: str, period_s: float) -> _Op:
        call = (
            N.nvmlDeviceGetComputeRunningProcesses_v3
            if kind == "compute"
            else N.nvmlDeviceGetGraphicsRunningProcesses_v3
        )
        older = (
            N.nvmlDeviceGetComputeRunningProcesses_v2
            if kind == "compute"
            else N.nvmlDeviceGetGraphicsRunningProcesses_v2
        )

        def fill(g: _Gpu, procs: Any) -> None:
            found = tuple(self._process(g.index, kind, p) for p in procs)
            if kind == "compute":
                g.compute = found
            else:
                g.graphics = found
            g.processes = g.compute + g.graphics
            g.values[PROCESS_COUNT] = float(len(g.processes))

        name = f"nvmlDeviceGet{kind.capitalize()}RunningProcesses"
        fallback = _Op(name + "_v2", older, fill, ("process_count",), period_s)
        return _Op(name + "_v3", call, fill, ("process_count",), period_s, fallback=fallback)

    def _process(self, gpu_index: int, kind: str, proc: Any) -> ProcessSample:
        pid = int(proc.pid)
        details = self._process_cache.get(pid)
        if details is None:
            try:
                details = self.resolve_process(pid)
            except PermissionError as error:
                details = error
            if len(self._process_cache) > 4096:  # PIDs come and go; keep the cache bounded
                self._process_cache.clear()
            self._process_cache[pid] = details
        used = proc.usedGpuMemory
        memory = NAN if used is None else float(used)
        if isinstance(details, ProcessDetails):
            return ProcessSample(
                gpu_index, pid, kind, memory, details.name, details.user, details.command, details.container
            )
        return ProcessSample(gpu_index, pid, kind, memory, no_permission=isinstance(details, PermissionError))

    # ---- reading ----
    def _read_gpu(self, g: _Gpu, now_s: float) -> GpuSample:
        if g.lost:
            return self._sample(g)
        handle = g.handle
        for op in g.ops:
            if op.period_s:
                if now_s < op.next_due_s:
                    continue
                op.next_due_s = now_s + op.period_s
            self.current_call = op.name
            try:
                result = op.call(handle)
            except N.NVMLError as error:
                if self._on_error(g, op, error):
                    break
                continue
            if op.failing:
                op.failing = False
                if op.batch is not None:
                    op.batch.bad_keys = set(op.keys)  # its fill turns the fields that answered OK
                else:
                    for key in op.keys:
                        g.states[_idx(key)] = MetricState.OK
            op.fill(g, result)
        v = g.values
        v[POWER_PERCENT] = 100.0 * v[POWER] / v[POWER_ENFORCED] if v[POWER_ENFORCED] else NAN
        return self._sample(g)

    def _sample(self, g: _Gpu) -> GpuSample:
        return GpuSample(
            g.index,
            tuple(g.values),
            tuple(g.states),
            g.processes,
            tuple(g.nvlink_tx.tolist()),
            tuple(g.nvlink_rx.tolist()),
            g.lost,
        )

    def _on_error(self, g: _Gpu, op: _Op, error: N.NVMLError) -> bool:
        """Record what a failed call means; True when the GPU is lost (stop reading it)."""
        code = error.value
        if code in _FATAL:
            raise _NvmlDownError(error)
        if code == N.NVML_ERROR_GPU_IS_LOST:
            self._mark_lost(g)
            return True
        if code in (N.NVML_ERROR_NOT_SUPPORTED, N.NVML_ERROR_FUNCTION_NOT_FOUND):
            if code == N.NVML_ERROR_FUNCTION_NOT_FOUND:
                self._function_missing(op.name, g.info.name)
            g.ops = [o for o in g.ops if o is not op]
            fallback_keys = op.fallback.keys if op.fallback is not None else ()
            if op.fallback is not None:
                op.fallback.failing = True
                g.ops.append(op.fallback)
            for key in op.keys:
                if key in fallback_keys:
                    continue
                g.values[_idx(key)] = NAN
                g.states[_idx(key)] = MetricState.NOT_SUPPORTED
            return False
        op.failing = True
        for key in op.keys:
            g.values[_idx(key)] = NAN
            g.states[_idx(key)] = _transient_state(code)
        return False

    def _function_missing(self, function: str, gpu_name: str) -> None:
        if function in self._missing_functions:
            return
        self._missing_functions.add(function)
        note = f"This NVIDIA driver lacks {function}; trayvml uses an older call or leaves that metric out."
        log.warning(note)
        self.notes = (*self.notes, note)

    def _mark_lost(self, g: _Gpu) -> None:
        if not g.lost:
            log.warning("GPU %d has fallen off the bus; the other GPUs carry on", g.index)
        g.lost = True
        g.values[:] = [NAN] * len(g.values)
        g.states[:] = [MetricState.LOST] * len(g.states)
        g.processes = g.compute = g.graphics = ()
        g.nvlink_tx = np.full(len(g.nvlink_tx), NAN)
        g.nvlink_rx = np.full(len(g.nvlink_rx), NAN)

    # ---- XID errors ----
    def _open_events(self, gpus: list[_Gpu]) -> None:
        try:
            self._event_set = N.nvmlEventSetCreate()
        except N.NVMLError:
            self._event_set = None
        for g in gpus:
            if g.lost:
                continue
            try:
                if self._event_set is None:
                    raise N.NVMLError(N.NVML_ERROR_NOT_SUPPORTED)
                N.nvmlDeviceRegisterEvents(g.handle, N.nvmlEventTypeXidCriticalError, self._event_set)
            except N.NVMLError as error:
                if error.value == N.NVML_ERROR_GPU_IS_LOST:
                    self._mark_lost(g)
                    continue
                permanent = error.value in (N.NVML_ERROR_NOT_SUPPORTED, N.NVML_ERROR_FUNCTION_NOT_FOUND)
                state = MetricState.NOT_SUPPORTED if permanent else _transient_state(error.value)
                g.states[XID_COUNT] = g.states[XID_LAST] = state
                g.values[XID_COUNT] = NAN

    def _drain_xid_events(self) -> None:
        if self._event_set is None:
            return
        self.current_call = "nvmlEventSetWait_v2"
        for _ in range(64):  # bounded: a storm of XIDs must not stall the sampler
            try:
                data = N.nvmlEventSetWait_v2(self._event_set, 0)
            except N.NVMLError as error:
                if error.value in _FATAL:
                    raise _NvmlDownError(error) from None
                return  # TIMEOUT: no more events
            g = self._gpu_by_handle.get(_handle_value(data.device))
            if g is not None and not g.lost:
                g.values[XID_COUNT] += 1
                g.values[XID_LAST] = float(data.eventData)


_UTIL_KEYS = ("utilization_gpu_percent", "utilization_memory_percent")
_MEMORY_KEYS = ("memory_used_bytes", "memory_free_bytes", "memory_reserved_bytes", "memory_used_percent")


def _transient_state(code: int) -> MetricState:
    return MetricState.NO_PERMISSION if code == N.NVML_ERROR_NO_PERMISSION else MetricState.NO_DATA


def _decoded(call: Callable[..., Any]) -> Callable[..., str]:
    """A pynvml call that answers a string, answering it cleaned (see core.safe_text).

    pynvml decodes the driver's bytes strictly, so a name that is not UTF-8 raised
    UnicodeDecodeError: call the function beneath its decorator and decode the bytes here.
    """
    raw_call = getattr(call, "__wrapped__", call)

    def text(*args: Any) -> str:
        raw = raw_call(*args)
        return decode(raw) if isinstance(raw, bytes) else clean(str(raw))

    return text


def _handle_value(handle: Any) -> int:
    return ctypes.cast(handle, ctypes.c_void_p).value or 0


def _bus_id(pci: Any) -> str:
    if pci is None:
        return ""
    bus_id = pci.busId
    return bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)
