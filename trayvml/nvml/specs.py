"""How each metric is read: one declarative entry per metric, beside the reader.

The catalog (core/metrics.py) says what a metric is; this table says where NVML answers it: a
field id (batched with the other fields of its cadence into one ``nvmlDeviceGetFieldValues``)
or a pynvml call with the older variants to fall back on, its cadence and its scale to base
units. The reader's schedule, the fault-matrix tests and the simulator's checks derive from it.
Derived metrics (memory used %, ...) are described in the catalog; XID counts come from events.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import pynvml as N

from trayvml.core.demand import ENERGY_PERIOD_S, PROCESS_PERIOD_S
from trayvml.core.units import KIB, MIB, MILLI  # (NVML answers mW, mJ)

# Cadences: how often a metric is read, in seconds (0: every tick).
EVERY_TICK_S = 0.0
SLOW_PERIOD_S = 10.0  # limits, link state, error counters: they change rarely
PCIE_THROUGHPUT_PERIOD_S = 10.0  # the fallback call blocks 20 ms per direction

EVENT_KEYS = ("xid_error_count", "xid_last")  # from the XID event set, drained every tick
PROCESS_COUNT = "process_count"  # the metric the process lists make: read, and held, with them

Pick = str | int  # how to take a value from a call's result: an attribute name or an index


class FieldKind(enum.Enum):
    VALUE = 0  # the value itself
    RATE = 1  # a counter: the reader reports its change per second
    LINK_TX = 2  # a counter per NVLink link (the scope is the link): rates per link, summed
    LINK_RX = 3


@dataclass(frozen=True)
class CallRead:
    """One pynvml call (by its C symbol's name) with the handle and ``args``.

    Its result fills ``keys`` in order: the result itself for one key without ``picks``, else
    ``picks[i]`` of it. ``fallback`` is the older variant to use where the driver lacks this one
    or the GPU answers NOT_SUPPORTED; keys the fallback does not fill become NOT_SUPPORTED.
    """

    function: str
    keys: tuple[str, ...]
    args: tuple[int, ...] = ()
    picks: tuple[Pick, ...] = ()
    scale: float = 1.0  # to base units
    period_s: float = EVERY_TICK_S
    fallback: CallRead | None = None
    unknown: int | None = None  # a value the driver answers when it cannot tell: no data, not a number
    link_limited: bool = False  # bytes/s over the PCIe link: beyond the link's maximum is implausible


@dataclass(frozen=True)
class FieldRead:
    """One metric read as a field value; fields of the same cadence share one call."""

    key: str
    field_id: int
    kind: FieldKind = FieldKind.VALUE
    scale: float = 1.0  # to base units
    period_s: float = EVERY_TICK_S
    fallback: CallRead | None = None  # read this way where the field answers NOT_SUPPORTED
    # A counter that wraps at this modulus (0: it never wraps, a drop is a reset); such counters
    # are the PCIe link's, so the link's top rate says how many wraps an interval can hide.
    wraps_at: int = 0
    plausible: tuple[float, float] | None = None  # a value outside is unknown (no data), never shown


@dataclass(frozen=True)
class ProcessListRead:
    """The processes of one kind on a GPU; their count is the derived ``process_count``."""

    kind: str  # "compute" or "graphics"
    function: str
    fallback: str  # the older variant of the call
    period_s: float = PROCESS_PERIOD_S


def _clock(key: str, kind: int) -> CallRead:
    return CallRead("nvmlDeviceGetClockInfo", (key,), (kind,))


def _slow(function: str, key: str, scale: float = 1.0) -> CallRead:
    return CallRead(function, (key,), scale=scale, period_s=SLOW_PERIOD_S)


def _counter(key: str, field_id: int) -> FieldRead:
    return FieldRead(key, field_id, period_s=SLOW_PERIOD_S)


_MEMORY_KEYS = ("memory_used_bytes", "memory_free_bytes", "memory_reserved_bytes")

CALLS: tuple[CallRead, ...] = (
    CallRead(
        "nvmlDeviceGetUtilizationRates",
        ("utilization_gpu_percent", "utilization_memory_percent"),
        picks=("gpu", "memory"),
    ),
    CallRead(
        "nvmlDeviceGetMemoryInfo_v2",
        _MEMORY_KEYS,
        picks=("used", "free", "reserved"),
        # The v1 call counts the driver's reservation as used and cannot report it apart.
        fallback=CallRead("nvmlDeviceGetMemoryInfo", _MEMORY_KEYS[:2], picks=("used", "free")),
    ),
    # nvmlDeviceGetTemperature is deprecated (removed for CUDA 14); the versioned call replaces it.
    # pynvml's wrapper fills the version into c_nvmlTemperature_v1_t; older drivers lack the symbol.
    CallRead(
        "nvmlDeviceGetTemperatureV",
        ("temperature_gpu_c",),
        (N.NVML_TEMPERATURE_GPU,),
        fallback=CallRead("nvmlDeviceGetTemperature", ("temperature_gpu_c",), (N.NVML_TEMPERATURE_GPU,)),
    ),
    CallRead("nvmlDeviceGetFanSpeed", ("fan_speed_percent",)),
    CallRead("nvmlDeviceGetPowerUsage", ("power_draw_w",), scale=MILLI),
    _clock("clock_sm_mhz", N.NVML_CLOCK_SM),
    _clock("clock_graphics_mhz", N.NVML_CLOCK_GRAPHICS),
    _clock("clock_memory_mhz", N.NVML_CLOCK_MEM),
    _clock("clock_video_mhz", N.NVML_CLOCK_VIDEO),
    # NVML_PSTATE_UNKNOWN (32) is nvml.h's "unknown performance state", not a P-state "P32".
    CallRead("nvmlDeviceGetPerformanceState", ("performance_state",), unknown=N.NVML_PSTATE_UNKNOWN),
    CallRead(
        "nvmlDeviceGetCurrentClocksEventReasons",
        ("clock_event_reasons",),
        fallback=CallRead("nvmlDeviceGetCurrentClocksThrottleReasons", ("clock_event_reasons",)),
    ),
    # These answer (utilization, sampling period in µs).
    CallRead("nvmlDeviceGetEncoderUtilization", ("encoder_utilization_percent",), picks=(0,)),
    CallRead("nvmlDeviceGetDecoderUtilization", ("decoder_utilization_percent",), picks=(0,)),
    _slow("nvmlDeviceGetPowerManagementLimit", "power_limit_w", MILLI),
    _slow("nvmlDeviceGetEnforcedPowerLimit", "power_enforced_limit_w", MILLI),
    _slow("nvmlDeviceGetCurrPcieLinkGeneration", "pcie_link_gen"),
    _slow("nvmlDeviceGetCurrPcieLinkWidth", "pcie_link_width"),
)


def _pcie_throughput(key: str, counter: int) -> CallRead:
    """Where a GPU has no PCIe byte counters: the call that samples for 20 ms, read rarely (KB/s)."""
    # One driver series answered this 1000 times too large: a value beyond what the link can carry
    # (generation x width) is not shown (see schedule._fill_call).
    return CallRead(
        "nvmlDeviceGetPcieThroughput",
        (key,),
        (counter,),
        scale=1000.0,
        period_s=PCIE_THROUGHPUT_PERIOD_S,
        link_limited=True,
    )


# The PCIe byte counters are 32-bit: nvml.h says their "value can be wrapped", and nvidia-smi
# shows them below 2**32 (dcgm-exporter#721: TX_BYTES 3020371496 on an L40S). At Gen4/5 rates
# they wrap several times a second: differences are taken modulo 2**32, and where more than one
# wrap fits in the interval the rate is only a lower bound (see FieldBatch.rates).
PCIE_COUNTER_MODULUS = 2**32

# Transfers per second per lane, by PCIe generation (GT/s). A lane carries at most GT/s / 8
# bytes per second: encoding (8b/10b, 128b/130b, FLIT) only lowers that, so it is a ceiling.
_PCIE_GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0, 7: 128.0}


def pcie_max_bytes_per_s(generation: float, width: float) -> float:
    """The most bytes a second one direction of a PCIe link can carry; NaN where not known."""
    if generation != generation or width != width or width <= 0:
        return math.nan
    gt_per_s = _PCIE_GT_PER_S.get(int(generation))
    return math.nan if gt_per_s is None else gt_per_s * 1e9 / 8 * width


# A GPU or memory sensor's reading in °C that can be true: below it is a decoding error, above it
# the GPU would long have shut down (shutdown thresholds are about 90-105 °C).
PLAUSIBLE_TEMPERATURE_C = (-40.0, 150.0)

FIELDS: tuple[FieldRead, ...] = (
    FieldRead("power_instant_w", N.NVML_FI_DEV_POWER_INSTANT, scale=MILLI),
    # The energy counter in the tick's field batch rather than a call of its own: nvml.h documents
    # field 83 as "Total energy consumption for the GPU in mJ since the driver was last reloaded",
    # the same words as nvmlDeviceGetTotalEnergyConsumption ("in millijoules (mJ) since the driver
    # was last reloaded"). Where the field answers NOT_SUPPORTED (or, unknown to the driver,
    # INVALID_ARGUMENT) the call is read instead. Read with the process lists, not every tick: on an
    # H200 (driver 580.159.04) this one field costs the driver 4.2 ms of CPU, where the other 18 of
    # the batch cost 0.5 ms together (tests/recordings/README.md, bench_nvml_tick.py --real). The
    # energy per process shares each change of the counter by the process lists read with it.
    FieldRead(
        "energy_consumed_j",
        N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION,
        scale=MILLI,
        period_s=ENERGY_PERIOD_S,
        fallback=CallRead(
            "nvmlDeviceGetTotalEnergyConsumption", ("energy_consumed_j",), scale=MILLI, period_s=ENERGY_PERIOD_S
        ),
    ),
    # r545 labels this field DOUBLE while writing an unsigned int (DCGM reads it as an integer):
    # read as a double that is a denormal near 0. Decoded defensively and bounded (FieldBatch).
    FieldRead("temperature_memory_c", N.NVML_FI_DEV_MEMORY_TEMP, plausible=PLAUSIBLE_TEMPERATURE_C),
    FieldRead(
        "pcie_tx_bytes_per_s",
        N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES,
        FieldKind.RATE,
        wraps_at=PCIE_COUNTER_MODULUS,
        fallback=_pcie_throughput("pcie_tx_bytes_per_s", N.NVML_PCIE_UTIL_TX_BYTES),
    ),
    FieldRead(
        "pcie_rx_bytes_per_s",
        N.NVML_FI_DEV_PCIE_COUNT_RX_BYTES,
        FieldKind.RATE,
        wraps_at=PCIE_COUNTER_MODULUS,
        fallback=_pcie_throughput("pcie_rx_bytes_per_s", N.NVML_PCIE_UTIL_RX_BYTES),
    ),
    # NVLink data counters are per link, in KiB.
    FieldRead("nvlink_tx_bytes_per_s", N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, FieldKind.LINK_TX, KIB),
    FieldRead("nvlink_rx_bytes_per_s", N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, FieldKind.LINK_RX, KIB),
    _counter("pcie_replay_count", N.NVML_FI_DEV_PCIE_REPLAY_COUNTER),
    FieldRead("pcie_replays_per_s", N.NVML_FI_DEV_PCIE_REPLAY_COUNTER, FieldKind.RATE, period_s=SLOW_PERIOD_S),
    _counter("ecc_corrected_volatile_count", N.NVML_FI_DEV_ECC_SBE_VOL_TOTAL),
    _counter("ecc_uncorrected_volatile_count", N.NVML_FI_DEV_ECC_DBE_VOL_TOTAL),
    _counter("ecc_corrected_aggregate_count", N.NVML_FI_DEV_ECC_SBE_AGG_TOTAL),
    _counter("ecc_uncorrected_aggregate_count", N.NVML_FI_DEV_ECC_DBE_AGG_TOTAL),
    _counter("retired_pages_sbe_count", N.NVML_FI_DEV_RETIRED_SBE),
    _counter("retired_pages_dbe_count", N.NVML_FI_DEV_RETIRED_DBE),
    _counter("retired_pages_pending", N.NVML_FI_DEV_RETIRED_PENDING),
    _counter("remapped_rows_correctable_count", N.NVML_FI_DEV_REMAPPED_COR),
    _counter("remapped_rows_uncorrectable_count", N.NVML_FI_DEV_REMAPPED_UNC),
    _counter("remapped_rows_pending", N.NVML_FI_DEV_REMAPPED_PENDING),
    _counter("remapped_rows_failure", N.NVML_FI_DEV_REMAPPED_FAILURE),
)


@dataclass(frozen=True)
class GpmRead:
    """One GPM metric (Hopper and newer): computed by ``nvmlGpmMetricsGet`` over two samples."""

    key: str
    metric_id: int
    scale: float = 1.0  # to base units
    stands_for: str = ""  # a counter metric this one answers better where GPM is read (the PCIe byte counters)


# Read together, every tick while demanded (the reader keeps two sample buffers per GPU).
GPM: tuple[GpmRead, ...] = (
    GpmRead("sm_activity_percent", N.NVML_GPM_METRIC_SM_UTIL),
    GpmRead("sm_occupancy_percent", N.NVML_GPM_METRIC_SM_OCCUPANCY),
    GpmRead("tensor_activity_percent", N.NVML_GPM_METRIC_ANY_TENSOR_UTIL),
    GpmRead("dram_bandwidth_percent", N.NVML_GPM_METRIC_DRAM_BW_UTIL),
    GpmRead("fp64_activity_percent", N.NVML_GPM_METRIC_FP64_UTIL),
    GpmRead("fp32_activity_percent", N.NVML_GPM_METRIC_FP32_UTIL),
    GpmRead("fp16_activity_percent", N.NVML_GPM_METRIC_FP16_UTIL),
    # GPM answers these in MiB/s. Where GPM is read, they are the GPU's PCIe throughput too: the
    # byte counters (FIELDS) wrap at 4 GiB, about 11 times a second at what a Gen5 x16 link carries.
    # On an H200 copying 46 GB/s each way the counters gave 0.2-4.4 GB/s, GPM 49-53 GB/s, nvidia-smi
    # dmon -s t 43-57 GB/s (tests/recordings/h200-580-pcie.*). GPM also costs the driver less: its
    # sample 0.14-0.2 ms a tick against 0.72 ms for the two counters (benchmarks/README.md).
    GpmRead("gpm_pcie_tx_bytes_per_s", N.NVML_GPM_METRIC_PCIE_TX_PER_SEC, MIB, stands_for="pcie_tx_bytes_per_s"),
    GpmRead("gpm_pcie_rx_bytes_per_s", N.NVML_GPM_METRIC_PCIE_RX_PER_SEC, MIB, stands_for="pcie_rx_bytes_per_s"),
    GpmRead("gpm_nvlink_tx_bytes_per_s", N.NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, MIB),
    GpmRead("gpm_nvlink_rx_bytes_per_s", N.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, MIB),
)

PROCESS_LISTS: tuple[ProcessListRead, ...] = (
    ProcessListRead("compute", "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"),
    ProcessListRead("graphics", "nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"),
)


@dataclass(frozen=True)
class StaticRead:
    """A fact read once when NVML opens: a call whose result fills DeviceInfo ``fields``.

    ``as_`` says how to turn the result into each field: "text" (driver bytes, cleaned), "flag",
    "number" (times ``scale``), "bus_id" (from the PCI struct) or "version" ((major, minor)).
    A failed call leaves its fields at DeviceInfo's defaults (unknown).
    """

    function: str
    fields: tuple[str, ...]
    as_: str = "number"
    args: tuple[int, ...] = ()
    picks: tuple[Pick, ...] = ()
    scale: float = 1.0


STATIC: tuple[StaticRead, ...] = (
    StaticRead("nvmlDeviceGetName", ("name",), "text"),
    StaticRead("nvmlDeviceGetUUID", ("uuid",), "text"),
    StaticRead("nvmlDeviceGetSerial", ("serial",), "text"),
    StaticRead("nvmlDeviceGetPciInfo_v3", ("pci_bus_id",), "bus_id"),
    StaticRead("nvmlDeviceGetVbiosVersion", ("vbios_version",), "text"),
    StaticRead("nvmlDeviceGetCudaComputeCapability", ("compute_capability",), "version"),
    StaticRead("nvmlDeviceGetPersistenceMode", ("persistence_mode",), "flag"),
    StaticRead("nvmlDeviceGetMigMode", ("mig_mode_current", "mig_mode_pending"), "flag", picks=(0, 1)),
    StaticRead("nvmlDeviceGetEccMode", ("ecc_mode_current",), "flag", picks=(0,)),
    StaticRead(
        "nvmlDeviceGetPowerManagementLimitConstraints",
        ("power_limit_min_w", "power_limit_max_w"),
        picks=(0, 1),
        scale=MILLI,
    ),
    StaticRead("nvmlDeviceGetPowerManagementDefaultLimit", ("power_limit_default_w",), scale=MILLI),
    StaticRead("nvmlDeviceGetMemoryInfo", ("memory_total_bytes",), picks=("total",)),
    StaticRead("nvmlDeviceGetMaxClockInfo", ("clock_max_sm_mhz",), args=(N.NVML_CLOCK_SM,)),
    StaticRead("nvmlDeviceGetMaxClockInfo", ("clock_max_graphics_mhz",), args=(N.NVML_CLOCK_GRAPHICS,)),
    StaticRead("nvmlDeviceGetMaxClockInfo", ("clock_max_memory_mhz",), args=(N.NVML_CLOCK_MEM,)),
    StaticRead("nvmlDeviceGetMaxClockInfo", ("clock_max_video_mhz",), args=(N.NVML_CLOCK_VIDEO,)),
    StaticRead("nvmlDeviceGetMaxPcieLinkGeneration", ("pcie_link_gen_max",)),
    StaticRead("nvmlDeviceGetMaxPcieLinkWidth", ("pcie_link_width_max",)),
    StaticRead(
        "nvmlDeviceGetTemperatureThreshold", ("temperature_slowdown_c",), args=(N.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,)
    ),
    StaticRead(
        "nvmlDeviceGetTemperatureThreshold", ("temperature_shutdown_c",), args=(N.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN,)
    ),
)
# nvlink_link_count is probed with a field value (see probe.py): the link fields depend on it.


def call_chain(read: CallRead | None) -> list[CallRead]:
    """``read`` and the older variants it falls back on, newest first."""
    chain = []
    while read is not None:
        chain.append(read)
        read = read.fallback
    return chain


def read_keys() -> dict[str, str]:
    """Each GPU metric key that NVML answers directly, with how (for checks and error messages)."""
    how: dict[str, str] = {}
    for call in CALLS:
        for key in call.keys:
            how[key] = call.function
    for field in FIELDS:
        how[field.key] = "nvmlDeviceGetFieldValues"
    for key in EVENT_KEYS:
        how[key] = "nvmlEventSetWait_v2"
    for gpm in GPM:
        how[gpm.key] = "nvmlGpmMetricsGet"
    return how


def read_periods_s() -> dict[str, float]:
    """Each GPU metric key read less often than every tick, with its period, the count made from
    the process lists included: between its reads a reader holds its value. The period of its first
    way of being read: a fallback's may differ (PCIe throughput where a GPU has no byte counters)."""
    periods: dict[str, float] = {}
    for call in CALLS:
        if call.period_s > EVERY_TICK_S:
            periods.update(dict.fromkeys(call.keys, call.period_s))
    for field in FIELDS:
        if field.period_s > EVERY_TICK_S:
            periods[field.key] = field.period_s
    periods[PROCESS_COUNT] = min(lists.period_s for lists in PROCESS_LISTS)
    return periods
