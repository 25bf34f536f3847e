"""The metric catalog: the one place that says what each metric is and how it is shown.

CSV columns, JSON keys, Prometheus names, tooltips, graph panels and history series derive from
these tables. How a GPU metric is *read* lives next to the reader (``trayvml/nvml/specs.py``), and
which metric each alert rule watches in ``trayvml/alerts/rules.py``, both keyed by the same ``key``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.units import GIB, KIB, MIB, Unit


class Group(enum.Enum):
    """A graph panel; the value is its title."""

    UTILIZATION = QT_TRANSLATE_NOOP("metrics", "Utilization")
    ACTIVITY = QT_TRANSLATE_NOOP("metrics", "Activity")  # GPM (Hopper and newer): what the SMs really do
    MEMORY = QT_TRANSLATE_NOOP("metrics", "Memory")
    TEMPERATURE = QT_TRANSLATE_NOOP("metrics", "Temperature")
    POWER = QT_TRANSLATE_NOOP("metrics", "Power")
    FAN = QT_TRANSLATE_NOOP("metrics", "Fan")
    CLOCKS = QT_TRANSLATE_NOOP("metrics", "Clocks")
    PCIE = QT_TRANSLATE_NOOP("metrics", "PCIe")
    NVLINK = QT_TRANSLATE_NOOP("metrics", "NVLink")
    CODEC = QT_TRANSLATE_NOOP("metrics", "Encoder / decoder")
    ERRORS = QT_TRANSLATE_NOOP("metrics", "Errors")
    THROTTLE = QT_TRANSLATE_NOOP("metrics", "Throttle reasons")
    PROCESSES = QT_TRANSLATE_NOOP("metrics", "Processes")
    CPU = QT_TRANSLATE_NOOP("metrics", "CPU")
    RAM = QT_TRANSLATE_NOOP("metrics", "RAM and swap")
    DISK = QT_TRANSLATE_NOOP("metrics", "Disk")
    NETWORK = QT_TRANSLATE_NOOP("metrics", "Network")


@dataclass(frozen=True)
class SmiField:
    """How nvidia-smi names a field in ``--query-gpu`` and the unit its CSV shows.

    ``scale`` turns trayvml's value (in base units) into nvidia-smi's unit.
    """

    name: str
    unit: str = ""
    scale: float = 1.0
    decimals: int = 0
    # nvidia-smi rounds memory up to a whole MiB: an H200 recording (580.159.04,
    # tests/recordings/h200-580-busy.jsonl) has 615.06 MiB reserved and 19442.81 MiB used that
    # nvidia-smi writes as 616 and 19443 at the same moment.
    round_up: bool = False
    # trayvml's own column in the same style, which nvidia-smi has no field for (580's
    # `--help-query-gpu`, tests/recordings/nvidia-smi-580-help-query-gpu.txt, lists none of them).
    ours: bool = False


class Derivation(enum.Enum):
    PERCENT = "percent"  # 100 × inputs[0] / inputs[1]; NaN where the second is 0 or unknown
    COUNT = "count"  # how many entries the list inputs[0] has ("processes": the process lists)
    MARGIN = "margin"  # inputs[1] − inputs[0] (a limit, a static fact, less the value); NaN if unknown


@dataclass(frozen=True)
class Derived:
    """How a metric is computed from others instead of read: each input is a GPU metric key, a
    DeviceInfo field (a static fact) or "processes". Reading one reads its inputs."""

    how: Derivation
    inputs: tuple[str, ...]


@dataclass(frozen=True)
class Metric:
    key: str  # JSON key and history series name; carries the unit
    label: str
    unit: Unit
    group: Group
    smi: SmiField | None = None
    history: bool = True  # kept as a timeline (False: shown as a current value only)
    plot: bool = True  # drawn in its group's panel (False: in history, CSV and JSON, not drawn)
    derived: Derived | None = None  # None: read from NVML (see trayvml/nvml/specs.py)
    # False: recorded only while something shows it or a rule watches it, not always (GPM: its
    # counters are shared with DCGM's profiling, and reading them can disturb it).
    always_recorded: bool = True
    resolution: float = 0.0  # what the history on disk keeps (in its unit); 0: RESOLUTION[unit]
    # Its name in the Prometheus exposition (``trayvml serve``, and read back from a remote host),
    # without the prefix and the unit's suffix, which trayvml/core/prom_names.py adds: "gpu_power"
    # of a metric in watts is served as trayvml_gpu_power_watts. None: not served. Every entry says
    # which (no default), so that a new metric cannot be left out of the exporter by omission.
    prom: str | None = field(kw_only=True)
    counter: bool = False  # only grows (until the driver reloads): a Prometheus counter, *_total
    # What a reading with no number means where that is not "no data" (none of its events yet).
    none_text: str = ""

    @property
    def stored_resolution(self) -> float:
        """The step values are rounded to on disk (trayvml/history/disk): finer than anything shown."""
        return self.resolution or RESOLUTION[self.unit]

    # The smallest value span its panel shows (in its unit): a 2 °C jitter stays a ripple rather
    # than a square wave filling the panel. 0: the panel fits the values.
    min_span: float = 0.0


_P = Unit.PERCENT
# The history on disk rounds each value to its metric's resolution: NVML's integers, milliwatts and
# millijoules are kept exactly, memory to the KiB, rates to the KiB/s. Not memory to the MiB:
# nvidia-smi shows a MiB started as a whole one (615.06 MiB reserved is 616), which the nearest
# whole MiB (615) no longer tells (tests/test_doctor.py, the history export beside nvidia-smi).
RESOLUTION: Mapping[Unit, float] = {
    Unit.PERCENT: 0.01,
    Unit.BYTES: KIB,
    Unit.BYTES_PER_S: KIB,
    Unit.CELSIUS: 0.1,
    Unit.WATTS: 0.001,
    Unit.JOULES: 0.001,
    Unit.MHZ: 1.0,
    Unit.COUNT: 1.0,
    Unit.PSTATE: 1.0,
    Unit.BITMASK: 1.0,
    Unit.FLAG: 1.0,
    Unit.PCIE_GEN: 1.0,
    Unit.LANES: 1.0,
    Unit.XID: 1.0,
}

GPU_METRICS: tuple[Metric, ...] = (
    Metric(
        "utilization_gpu_percent",
        QT_TRANSLATE_NOOP("metrics", "GPU utilization"),
        _P,
        Group.UTILIZATION,
        SmiField("utilization.gpu", "%"),
        prom="gpu_utilization",
    ),
    Metric(
        "utilization_memory_percent",
        # Not a share of the bandwidth: nvidia-smi's utilization.memory is the "percent of time over
        # the past sample period during which global (device) memory was being read or written".
        QT_TRANSLATE_NOOP("metrics", "Memory busy (% of time)"),
        _P,
        Group.UTILIZATION,
        SmiField("utilization.memory", "%"),
        prom="gpu_memory_bandwidth_utilization",
    ),
    Metric(
        "memory_used_bytes",
        QT_TRANSLATE_NOOP("metrics", "Memory used"),
        Unit.BYTES,
        Group.MEMORY,
        SmiField("memory.used", "MiB", 1 / MIB, round_up=True),
        # An idle GPU's nothing in use reads 0-1 GiB, not an axis of KiB beside its 80 GiB.
        min_span=GIB,
        prom="gpu_memory_used",
    ),
    Metric(
        "memory_free_bytes",
        QT_TRANSLATE_NOOP("metrics", "Memory free"),
        Unit.BYTES,
        Group.MEMORY,
        SmiField("memory.free", "MiB", 1 / MIB, round_up=True),
        plot=False,
        prom="gpu_memory_free",
    ),
    Metric(
        "memory_reserved_bytes",
        QT_TRANSLATE_NOOP("metrics", "Memory reserved by the driver"),
        Unit.BYTES,
        Group.MEMORY,
        SmiField("memory.reserved", "MiB", 1 / MIB, round_up=True),
        plot=False,
        prom="gpu_memory_reserved",
    ),
    Metric(
        "memory_used_percent",
        QT_TRANSLATE_NOOP("metrics", "Memory used (% of total)"),
        _P,
        Group.MEMORY,
        plot=False,
        derived=Derived(Derivation.PERCENT, ("memory_used_bytes", "memory_total_bytes")),
        prom="gpu_memory_used",
    ),
    Metric(
        "temperature_gpu_c",
        QT_TRANSLATE_NOOP("metrics", "GPU temperature"),
        Unit.CELSIUS,
        Group.TEMPERATURE,
        SmiField("temperature.gpu"),
        min_span=20.0,
        prom="gpu_temperature",
    ),
    # How far the GPU is from the temperature at which it shuts itself down: what a threshold
    # relative to each GPU's own limit watches (the "temperature_limit" alert).
    Metric(
        "temperature_below_shutdown_c",
        QT_TRANSLATE_NOOP("metrics", "Temperature below the shutdown limit"),
        Unit.CELSIUS,
        Group.TEMPERATURE,
        plot=False,
        derived=Derived(Derivation.MARGIN, ("temperature_gpu_c", "temperature_shutdown_c")),
        prom="gpu_temperature_below_shutdown",
    ),
    Metric(
        "temperature_memory_c",
        QT_TRANSLATE_NOOP("metrics", "Memory temperature"),
        Unit.CELSIUS,
        Group.TEMPERATURE,
        SmiField("temperature.memory"),
        min_span=20.0,
        prom="gpu_memory_temperature",
    ),
    Metric(
        "fan_speed_percent",
        QT_TRANSLATE_NOOP("metrics", "Fan speed"),
        _P,
        Group.FAN,
        SmiField("fan.speed", "%"),
        prom="gpu_fan_speed",
    ),
    Metric(
        "power_draw_w",
        # nvmlDeviceGetPowerUsage: a 1 s average on Ampere (but A100) and newer, instantaneous on
        # Volta, Turing and A100 (nvidia-smi's power.draw): the label claims neither.
        QT_TRANSLATE_NOOP("metrics", "Power draw"),
        Unit.WATTS,
        Group.POWER,
        SmiField("power.draw", "W", decimals=2),
        min_span=50.0,
        prom="gpu_power",
    ),
    Metric(
        "power_instant_w",
        QT_TRANSLATE_NOOP("metrics", "Power draw (instant)"),
        Unit.WATTS,
        Group.POWER,
        SmiField("power.draw.instant", "W", decimals=2),
        min_span=50.0,
        prom="gpu_power_instant",
    ),
    Metric(
        "power_limit_w",
        QT_TRANSLATE_NOOP("metrics", "Power limit"),
        Unit.WATTS,
        Group.POWER,
        SmiField("power.limit", "W", decimals=2),
        plot=False,
        prom="gpu_power_limit",
    ),
    Metric(
        "power_enforced_limit_w",
        QT_TRANSLATE_NOOP("metrics", "Enforced power limit"),
        Unit.WATTS,
        Group.POWER,
        SmiField("enforced.power.limit", "W", decimals=2),
        prom="gpu_power_enforced_limit",
    ),
    Metric(
        "power_used_percent",
        QT_TRANSLATE_NOOP("metrics", "Power draw (% of enforced limit)"),
        _P,
        Group.POWER,
        plot=False,
        derived=Derived(Derivation.PERCENT, ("power_draw_w", "power_enforced_limit_w")),
        prom="gpu_power_used",
    ),
    Metric(
        "energy_consumed_j",
        QT_TRANSLATE_NOOP("metrics", "Energy since driver load"),
        Unit.JOULES,
        Group.POWER,
        SmiField("energy.consumed", "J", decimals=1, ours=True),
        history=False,
        prom="gpu_energy",
        counter=True,
    ),
    Metric(
        "clock_sm_mhz",
        QT_TRANSLATE_NOOP("metrics", "SM clock"),
        Unit.MHZ,
        Group.CLOCKS,
        SmiField("clocks.current.sm", "MHz"),
        min_span=500.0,
        prom="gpu_clock_sm",
    ),
    Metric(
        "clock_graphics_mhz",
        QT_TRANSLATE_NOOP("metrics", "Graphics clock"),
        Unit.MHZ,
        Group.CLOCKS,
        SmiField("clocks.current.graphics", "MHz"),
        min_span=500.0,
        prom="gpu_clock_graphics",
    ),
    Metric(
        "clock_memory_mhz",
        QT_TRANSLATE_NOOP("metrics", "Memory clock"),
        Unit.MHZ,
        Group.CLOCKS,
        SmiField("clocks.current.memory", "MHz"),
        min_span=500.0,
        prom="gpu_clock_memory",
    ),
    Metric(
        "clock_video_mhz",
        QT_TRANSLATE_NOOP("metrics", "Video clock"),
        Unit.MHZ,
        Group.CLOCKS,
        SmiField("clocks.current.video", "MHz"),
        min_span=500.0,
        prom="gpu_clock_video",
    ),
    Metric(
        "performance_state",
        QT_TRANSLATE_NOOP("metrics", "Performance state"),
        Unit.PSTATE,
        Group.CLOCKS,
        SmiField("pstate"),
        plot=False,
        prom="gpu_performance_state",
    ),
    Metric(
        "pcie_tx_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "PCIe TX"),
        Unit.BYTES_PER_S,
        Group.PCIE,
        SmiField("pcie.throughput.tx", "MiB/s", 1 / MIB, 1, ours=True),
        min_span=MIB,
        prom="gpu_pcie_tx",
    ),
    Metric(
        "pcie_rx_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "PCIe RX"),
        Unit.BYTES_PER_S,
        Group.PCIE,
        SmiField("pcie.throughput.rx", "MiB/s", 1 / MIB, 1, ours=True),
        min_span=MIB,
        prom="gpu_pcie_rx",
    ),
    Metric(
        "pcie_link_gen",
        QT_TRANSLATE_NOOP("metrics", "PCIe link generation"),
        Unit.PCIE_GEN,
        Group.PCIE,
        SmiField("pcie.link.gen.current"),
        plot=False,
        prom="gpu_pcie_link_generation",
    ),
    Metric(
        "pcie_link_width",
        QT_TRANSLATE_NOOP("metrics", "PCIe link width"),
        Unit.LANES,
        Group.PCIE,
        SmiField("pcie.link.width.current"),
        plot=False,
        prom="gpu_pcie_link_width",
    ),
    Metric(
        "pcie_replay_count",
        QT_TRANSLATE_NOOP("metrics", "PCIe replays"),
        Unit.COUNT,
        Group.PCIE,
        SmiField("pcie.replay_counter", ours=True),
        plot=False,
        prom="gpu_pcie_replays",
        counter=True,
    ),
    Metric(
        "pcie_replays_per_s",
        QT_TRANSLATE_NOOP("metrics", "PCIe replays per second"),
        Unit.COUNT,
        Group.PCIE,
        plot=False,
        resolution=0.001,
        prom="gpu_pcie_replays_per_second",
    ),
    Metric(
        "nvlink_tx_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "NVLink TX (all links)"),
        Unit.BYTES_PER_S,
        Group.NVLINK,
        SmiField("nvlink.throughput.tx", "MiB/s", 1 / MIB, 1, ours=True),
        min_span=MIB,
        prom="gpu_nvlink_tx",
    ),
    Metric(
        "nvlink_rx_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "NVLink RX (all links)"),
        Unit.BYTES_PER_S,
        Group.NVLINK,
        SmiField("nvlink.throughput.rx", "MiB/s", 1 / MIB, 1, ours=True),
        min_span=MIB,
        prom="gpu_nvlink_rx",
    ),
    Metric(
        "encoder_utilization_percent",
        QT_TRANSLATE_NOOP("metrics", "Encoder utilization"),
        _P,
        Group.CODEC,
        SmiField("utilization.encoder", "%"),
        prom="gpu_encoder_utilization",
    ),
    Metric(
        "decoder_utilization_percent",
        QT_TRANSLATE_NOOP("metrics", "Decoder utilization"),
        _P,
        Group.CODEC,
        SmiField("utilization.decoder", "%"),
        prom="gpu_decoder_utilization",
    ),
    Metric(
        "ecc_corrected_volatile_count",
        QT_TRANSLATE_NOOP("metrics", "ECC corrected (volatile)"),
        Unit.COUNT,
        Group.ERRORS,
        SmiField("ecc.errors.corrected.volatile.total"),
        min_span=4.0,
        prom="gpu_ecc_corrected_volatile_errors",
        counter=True,
    ),
    Metric(
        "ecc_uncorrected_volatile_count",
        QT_TRANSLATE_NOOP("metrics", "ECC uncorrected (volatile)"),
        Unit.COUNT,
        Group.ERRORS,
        SmiField("ecc.errors.uncorrected.volatile.total"),
        min_span=4.0,
        prom="gpu_ecc_uncorrected_volatile_errors",
        counter=True,
    ),
    Metric(
        "ecc_corrected_aggregate_count",
        QT_TRANSLATE_NOOP("metrics", "ECC corrected (aggregate)"),
        Unit.COUNT,
        Group.ERRORS,
        SmiField("ecc.errors.corrected.aggregate.total"),
        plot=False,
        prom="gpu_ecc_corrected_aggregate_errors",
        counter=True,
    ),
    Metric(
        "ecc_uncorrected_aggregate_count",
        QT_TRANSLATE_NOOP("metrics", "ECC uncorrected (aggregate)"),
        Unit.COUNT,
        Group.ERRORS,
        SmiField("ecc.errors.uncorrected.aggregate.total"),
        plot=False,
        prom="gpu_ecc_uncorrected_aggregate_errors",
        counter=True,
    ),
    Metric(
        "retired_pages_sbe_count",
        QT_TRANSLATE_NOOP("metrics", "Retired pages (single-bit)"),
        Unit.COUNT,
        Group.ERRORS,
        SmiField("retired_pages.single_bit_ecc.count"),
        plot=False,
        prom="gpu_retired_pages_single_bit",
    ),
    Metric(
        "retired_pages_dbe_count",
        QT_TRANSLATE_NOOP("metrics", "Retired pages (double-bit)"),
        Unit.COUNT,
        Group.ERRORS,
        SmiField("retired_pages.double_bit.count"),
        plot=False,
        prom="gpu_retired_pages_double_bit",
    ),
    Metric(
        "retired_pages_pending",
        QT_TRANSLATE_NOOP("metrics", "Page retirement pending"),
        Unit.FLAG,
        Group.ERRORS,
        SmiField("retired_pages.pending"),
        plot=False,
        prom="gpu_retired_pages_pending",
    ),
    Metric(
        "remapped_rows_correctable_count",
        QT_TRANSLATE_NOOP("metrics", "Remapped rows (correctable)"),
        Unit.COUNT,
        Group.ERRORS,
        SmiField("remapped_rows.correctable"),
        plot=False,
        prom="gpu_remapped_rows_correctable",
    ),
    Metric(
        "remapped_rows_uncorrectable_count",
        QT_TRANSLATE_NOOP("metrics", "Remapped rows (uncorrectable)"),
        Unit.COUNT,
        Group.ERRORS,
        SmiField("remapped_rows.uncorrectable"),
        plot=False,
        prom="gpu_remapped_rows_uncorrectable",
    ),
    Metric(
        "remapped_rows_pending",
        QT_TRANSLATE_NOOP("metrics", "Row remapping pending"),
        Unit.FLAG,
        Group.ERRORS,
        SmiField("remapped_rows.pending"),
        plot=False,
        prom="gpu_remapped_rows_pending",
    ),
    Metric(
        "remapped_rows_failure",
        QT_TRANSLATE_NOOP("metrics", "Row remapping failed"),
        Unit.FLAG,
        Group.ERRORS,
        SmiField("remapped_rows.failure"),
        plot=False,
        prom="gpu_remapped_rows_failure",
    ),
    Metric(
        "xid_error_count",
        QT_TRANSLATE_NOOP("metrics", "XID errors since start"),
        Unit.COUNT,
        Group.ERRORS,
        SmiField("xid.count", ours=True),
        min_span=4.0,
        prom="gpu_xid_errors",
        counter=True,
    ),
    Metric(
        "xid_last",
        QT_TRANSLATE_NOOP("metrics", "Last XID"),
        Unit.XID,
        Group.ERRORS,
        SmiField("xid.last", ours=True),
        history=False,
        prom="gpu_xid_last",
        none_text=QT_TRANSLATE_NOOP("metrics", "none since start"),
    ),
    Metric(
        "clock_event_reasons",
        QT_TRANSLATE_NOOP("metrics", "Clock event (throttle) reasons"),
        Unit.BITMASK,
        Group.THROTTLE,
        SmiField("clocks_event_reasons.active"),
        prom="gpu_clock_event_reasons",
    ),
    # GPM activity (Hopper and newer), averaged between two GPM samples: read only while
    # something shows or records it, as GPM shares its counters with DCGM's profiling.
    Metric(
        "sm_activity_percent",
        QT_TRANSLATE_NOOP("metrics", "SM activity"),
        _P,
        Group.ACTIVITY,
        always_recorded=False,
        prom="gpu_sm_activity",
    ),
    Metric(
        "sm_occupancy_percent",
        QT_TRANSLATE_NOOP("metrics", "SM occupancy"),
        _P,
        Group.ACTIVITY,
        always_recorded=False,
        prom="gpu_sm_occupancy",
    ),
    Metric(
        "tensor_activity_percent",
        QT_TRANSLATE_NOOP("metrics", "Tensor core activity"),
        _P,
        Group.ACTIVITY,
        always_recorded=False,
        prom="gpu_tensor_activity",
    ),
    Metric(
        "dram_bandwidth_percent",
        QT_TRANSLATE_NOOP("metrics", "DRAM bandwidth utilization"),
        _P,
        Group.ACTIVITY,
        always_recorded=False,
        prom="gpu_dram_bandwidth_utilization",
    ),
    Metric(
        "fp64_activity_percent",
        QT_TRANSLATE_NOOP("metrics", "FP64 activity"),
        _P,
        Group.ACTIVITY,
        history=False,
        always_recorded=False,
        prom="gpu_fp64_activity",
    ),
    Metric(
        "fp32_activity_percent",
        QT_TRANSLATE_NOOP("metrics", "FP32 activity"),
        _P,
        Group.ACTIVITY,
        history=False,
        always_recorded=False,
        prom="gpu_fp32_activity",
    ),
    Metric(
        "fp16_activity_percent",
        QT_TRANSLATE_NOOP("metrics", "FP16 activity"),
        _P,
        Group.ACTIVITY,
        history=False,
        always_recorded=False,
        prom="gpu_fp16_activity",
    ),
    Metric(
        "gpm_pcie_tx_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "PCIe TX (GPM)"),
        Unit.BYTES_PER_S,
        Group.PCIE,
        history=False,
        always_recorded=False,
        prom="gpu_gpm_pcie_tx",
    ),
    Metric(
        "gpm_pcie_rx_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "PCIe RX (GPM)"),
        Unit.BYTES_PER_S,
        Group.PCIE,
        history=False,
        always_recorded=False,
        prom="gpu_gpm_pcie_rx",
    ),
    Metric(
        "gpm_nvlink_tx_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "NVLink TX (GPM)"),
        Unit.BYTES_PER_S,
        Group.NVLINK,
        history=False,
        always_recorded=False,
        prom="gpu_gpm_nvlink_tx",
    ),
    Metric(
        "gpm_nvlink_rx_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "NVLink RX (GPM)"),
        Unit.BYTES_PER_S,
        Group.NVLINK,
        history=False,
        always_recorded=False,
        prom="gpu_gpm_nvlink_rx",
    ),
    Metric(
        "process_count",
        QT_TRANSLATE_NOOP("metrics", "Processes"),
        Unit.COUNT,
        Group.PROCESSES,
        SmiField("process.count", ours=True),
        plot=False,
        derived=Derived(Derivation.COUNT, ("processes",)),
        prom="gpu_processes",
    ),
)

HOST_METRICS: tuple[Metric, ...] = (
    Metric("cpu_percent", QT_TRANSLATE_NOOP("metrics", "CPU"), _P, Group.CPU, prom="host_cpu_utilization"),
    Metric(
        "ram_used_bytes",
        QT_TRANSLATE_NOOP("metrics", "RAM used"),
        Unit.BYTES,
        Group.RAM,
        min_span=MIB,
        prom="host_memory_used",
    ),
    Metric(
        "ram_total_bytes",
        QT_TRANSLATE_NOOP("metrics", "RAM total"),
        Unit.BYTES,
        Group.RAM,
        history=False,
        plot=False,
        prom="host_memory_total",
    ),
    Metric(
        "ram_used_percent", QT_TRANSLATE_NOOP("metrics", "RAM used"), _P, Group.RAM, plot=False, prom="host_memory_used"
    ),
    Metric(
        "swap_used_bytes",
        QT_TRANSLATE_NOOP("metrics", "Swap used"),
        Unit.BYTES,
        Group.RAM,
        min_span=MIB,
        prom="host_swap_used",
    ),
    Metric(
        "swap_total_bytes",
        QT_TRANSLATE_NOOP("metrics", "Swap total"),
        Unit.BYTES,
        Group.RAM,
        history=False,
        plot=False,
        prom="host_swap_total",
    ),
    Metric(
        "disk_read_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "Disk read"),
        Unit.BYTES_PER_S,
        Group.DISK,
        min_span=KIB,
        prom="host_disk_read",
    ),
    Metric(
        "disk_write_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "Disk write"),
        Unit.BYTES_PER_S,
        Group.DISK,
        min_span=KIB,
        prom="host_disk_write",
    ),
    Metric(
        "net_rx_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "Network received"),
        Unit.BYTES_PER_S,
        Group.NETWORK,
        min_span=KIB,
        prom="host_network_receive",
    ),
    Metric(
        "net_tx_bytes_per_s",
        QT_TRANSLATE_NOOP("metrics", "Network sent"),
        Unit.BYTES_PER_S,
        Group.NETWORK,
        min_span=KIB,
        prom="host_network_transmit",
    ),
)


def _index(metrics: tuple[Metric, ...]) -> Mapping[str, int]:
    return {m.key: i for i, m in enumerate(metrics)}


GPU_INDEX = _index(GPU_METRICS)
HOST_INDEX = _index(HOST_METRICS)
GPU_METRIC_BY_KEY = {m.key: m for m in GPU_METRICS}
HOST_METRIC_BY_KEY = {m.key: m for m in HOST_METRICS}


@dataclass(frozen=True)
class TrayMetric:
    """A metric the tray icon can show: one bar per GPU, full at ``full_scale`` (in its unit)."""

    metric: str  # a GPU_METRICS key
    full_scale: float


# The tray icon's choices, by the name the settings file and dialog use.
TRAY_METRICS: Mapping[str, TrayMetric] = {
    "utilization": TrayMetric("utilization_gpu_percent", 100.0),
    "memory": TrayMetric("memory_used_percent", 100.0),
    "temperature": TrayMetric("temperature_gpu_c", 100.0),
    "power": TrayMetric("power_used_percent", 100.0),
    "sm_activity": TrayMetric("sm_activity_percent", 100.0),  # GPM; utilization where a GPU lacks it
}
# A tray metric shown in place of another on GPUs that cannot read it (GPM needs Hopper or newer).
# And the other way round on a GPU in MIG mode and its MIG devices, which have no utilization.
TRAY_FALLBACK: Mapping[str, str] = {
    "sm_activity_percent": "utilization_gpu_percent",
    "utilization_gpu_percent": "sm_activity_percent",
}
GPM_MISSING = QT_TRANSLATE_NOOP("metrics", "GPM activity metrics need a Hopper or newer data-center GPU")


CLOCK_EVENT_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, QT_TRANSLATE_NOOP("metrics", "idle")),
    (0x2, QT_TRANSLATE_NOOP("metrics", "applications clocks setting")),
    (0x4, QT_TRANSLATE_NOOP("metrics", "software power cap")),
    (0x8, QT_TRANSLATE_NOOP("metrics", "hardware slowdown")),
    (0x10, QT_TRANSLATE_NOOP("metrics", "sync boost")),
    (0x20, QT_TRANSLATE_NOOP("metrics", "software thermal slowdown")),
    (0x40, QT_TRANSLATE_NOOP("metrics", "hardware thermal slowdown")),
    (0x80, QT_TRANSLATE_NOOP("metrics", "hardware power brake")),
    (0x100, QT_TRANSLATE_NOOP("metrics", "display clock setting")),
    # nvml.h (as pynvml mirrors it): nvmlClocksThrottleReasonBoardLimit and ...Reliability.
    (0x200, QT_TRANSLATE_NOOP("metrics", "board limit")),
    (0x400, QT_TRANSLATE_NOOP("metrics", "reliability limit")),
)
THERMAL_REASON_MASK = 0x20 | 0x40
# Held at the power limit by software (0x4, SwPowerCap) is how a GPU under load normally runs: no
# alert for it. The hardware brakes are not normal: HW slowdown (0x8: over temperature or power,
# or an external signal) and HW power brake (0x80, the power supply asked for it).
POWER_REASON_MASK = 0x80
HW_SLOWDOWN_REASON = 0x8
