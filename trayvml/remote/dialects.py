"""What each GPU exporter calls a metric, and in which unit: turned into the catalog's keys and units.

A source is recognised by names only it exposes. A metric a source lacks is "not supported" for
its GPUs, never zero. The tables below were written from each exporter's documentation and source:

- ``trayvml serve``: each catalog metric's ``prom`` name with ``trayvml/core/prom_names.py``'s rules
  (the same that name them).
- dcgm-exporter: ``etc/default-counters.csv`` (DCGM field, type, unit in the help text); labels
  ``gpu``, ``UUID``, ``modelName``, ``pci_bus_id``, ``DCGM_FI_DRIVER_VERSION`` and ``Hostname``,
  spelled ``hostname`` since 2026.
- nvidia_gpu_exporter: ``docs/METRICS.md`` and its scrapes under ``internal/integration/testdata``;
  every series has only ``uuid``, the rest is joined from ``nvidia_smi_gpu_info``.
- nvitop-exporter: ``nvitop_exporter/exporter.py`` (prometheus-client gauges with a unit suffix).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from operator import itemgetter, mul, truediv
from typing import NamedTuple

from trayvml.core import prom_names
from trayvml.core.i18n import translate
from trayvml.core.metrics import GPU_METRICS, HOST_METRICS, Metric
from trayvml.core.safe_text import clean, shorten
from trayvml.core.sample import (
    JOB_KINDS,
    NO_ATTRIBUTION,
    SIMULATED_GPUS,
    Attribution,
    DeviceInfo,
    GpuSample,
    HostSample,
    MetricState,
    ProcessSample,
    RemoteOrigin,
    Sample,
    SystemInfo,
)
from trayvml.core.units import MIB, in_base_units, times_and_per

MEMORY_TOTAL = "memory_total_bytes"  # a DeviceInfo fact rather than a GPU metric, read the same way


class Point(NamedTuple):
    """One series' current value: a metric name, its labels and the value (a NamedTuple: hundreds
    are made a read, and a frozen dataclass takes several times longer to build)."""

    name: str
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class Dialect:
    kind: str  # how a user knows it: "dcgm-exporter"
    markers: tuple[str, ...]  # names (or name prefixes ending in "_") only this source exposes
    gpu: Mapping[str, tuple[str, float]]  # series name -> (catalog key or MEMORY_TOTAL, × into catalog unit)
    host: Mapping[str, tuple[str, float]] = field(default_factory=dict)
    uuid_label: str = "uuid"
    index_label: str = "index"
    # A MIG instance's series carry its board's UUID and index, and these (dcgm-exporter's
    # GPU_I_ID, GPU_I_PROFILE): each instance is a device of its own, as this machine's reader makes it.
    instance_label: str = ""
    profile_label: str = ""
    # A MIG device served as a device of its own (trayvml serve's), its board named on its info series.
    parent_label: str = ""
    instance_id_label: str = ""
    name_label: str = ""
    host_labels: tuple[str, ...] = ("hostname",)  # the first present names the host
    info: str = ""  # a series whose labels (index, name, driver, PCI bus id) belong to every GPU of that uuid
    driver_label: str = "driver_version"
    pci_label: str = "pci_bus_id"
    process_memory: str = ""  # series of one process's GPU memory (labels pid and a name)
    process_scale: float = 1.0
    process_name_label: str = "name"
    process_user_label: str = ""
    process_job: str = ""  # an info series naming each PID's job (labels pid, job, kind, job_name): trayvml serve's
    up: str = ""  # trayvml_up: 0 when the exporter's driver is not answering
    down: str = ""  # trayvml_down_info: why, in its reason label (an older serve's trayvml_up had it)
    simulated: str = ""  # trayvml_simulated: 1 (with a scenario label) when its GPUs are simulated
    state_label: str = ""  # a label of the info series saying a GPU is lost or asleep: trayvml serve's
    # Series written at every scrape of its exporter, one per host or GPU, the first present
    # counting: their sample time behind a Prometheus server is when the host was last scraped.
    scraped: tuple[str, ...] = ()

    def recognises(self, names: set[str]) -> bool:
        return any(m in names if not m.endswith("_") else any(n.startswith(m) for n in names) for m in self.markers)


def _served(metrics: Iterable[Metric]) -> dict[str, tuple[str, float]]:
    """What ``trayvml serve`` names each of these catalog metrics, and the scale back to its unit."""
    return {
        name.full: (m.key, prom_names.per_base_unit(m.unit))
        for m in metrics
        if (name := prom_names.name_of(m)) is not None
    }


TRAYVML = Dialect(
    kind="trayvml serve",
    markers=(prom_names.UP,),
    gpu={**_served(GPU_METRICS), prom_names.MEMORY_TOTAL.full: (MEMORY_TOTAL, 1.0)},
    host=_served(HOST_METRICS),
    info=prom_names.GPU_INFO,
    driver_label="driver",
    process_memory=prom_names.PROCESS_MEMORY.full,
    process_user_label="user",
    process_job=prom_names.PROCESS_JOB_INFO,
    up=prom_names.UP,
    down=prom_names.DOWN_INFO,
    simulated=prom_names.SIMULATED,
    state_label=prom_names.GPU_STATE_LABEL,
    parent_label=prom_names.MIG_PARENT_LABEL,
    instance_id_label=prom_names.GPU_INSTANCE_LABEL,
    scraped=(prom_names.UP,),
)

DCGM = Dialect(
    kind="dcgm-exporter",
    markers=("DCGM_FI_",),
    gpu={
        "DCGM_FI_DEV_SM_CLOCK": ("clock_sm_mhz", 1.0),
        "DCGM_FI_DEV_MEM_CLOCK": ("clock_memory_mhz", 1.0),
        "DCGM_FI_DEV_MEMORY_TEMP": ("temperature_memory_c", 1.0),
        "DCGM_FI_DEV_GPU_TEMP": ("temperature_gpu_c", 1.0),
        "DCGM_FI_DEV_POWER_USAGE": ("power_draw_w", 1.0),
        "DCGM_FI_DEV_POWER_USAGE_INSTANT": ("power_instant_w", 1.0),
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": ("power_enforced_limit_w", 1.0),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": ("energy_consumed_j", 1e-3),  # mJ
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": ("pcie_replay_count", 1.0),
        "DCGM_FI_DEV_GPU_UTIL": ("utilization_gpu_percent", 1.0),
        "DCGM_FI_DEV_MEM_COPY_UTIL": ("utilization_memory_percent", 1.0),
        "DCGM_FI_DEV_ENC_UTIL": ("encoder_utilization_percent", 1.0),
        "DCGM_FI_DEV_DEC_UTIL": ("decoder_utilization_percent", 1.0),
        "DCGM_FI_DEV_XID_ERRORS": ("xid_last", 1.0),  # the value of the last XID, not a count
        "DCGM_FI_DEV_FB_FREE": ("memory_free_bytes", MIB),
        "DCGM_FI_DEV_FB_USED": ("memory_used_bytes", MIB),
        "DCGM_FI_DEV_FB_RESERVED": ("memory_reserved_bytes", MIB),
        "DCGM_FI_DEV_FB_TOTAL": (MEMORY_TOTAL, MIB),
        "DCGM_FI_DEV_FAN_SPEED": ("fan_speed_percent", 1.0),
        "DCGM_FI_DEV_PSTATE": ("performance_state", 1.0),
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": ("ecc_corrected_volatile_count", 1.0),
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": ("ecc_uncorrected_volatile_count", 1.0),
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": ("ecc_corrected_aggregate_count", 1.0),
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": ("ecc_uncorrected_aggregate_count", 1.0),
        "DCGM_FI_DEV_RETIRED_SBE": ("retired_pages_sbe_count", 1.0),
        "DCGM_FI_DEV_RETIRED_DBE": ("retired_pages_dbe_count", 1.0),
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": ("remapped_rows_uncorrectable_count", 1.0),
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": ("remapped_rows_correctable_count", 1.0),
        "DCGM_FI_DEV_ROW_REMAP_FAILURE": ("remapped_rows_failure", 1.0),
        "DCGM_FI_PROF_PCIE_TX_BYTES": ("pcie_tx_bytes_per_s", 1.0),  # bytes per second (profiling field)
        "DCGM_FI_PROF_PCIE_RX_BYTES": ("pcie_rx_bytes_per_s", 1.0),
        # The profiling (DCP) ratios, 0-1: the counters GPM reads (dcgm-exporter's default-counters.csv
        # serves the tensor and DRAM ones; the rest where a user's counters file asks). A MIG
        # instance's activity is told by these, where DCGM_FI_DEV_GPU_UTIL is not served.
        "DCGM_FI_PROF_SM_ACTIVE": ("sm_activity_percent", 100.0),
        "DCGM_FI_PROF_SM_OCCUPANCY": ("sm_occupancy_percent", 100.0),
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("tensor_activity_percent", 100.0),
        "DCGM_FI_PROF_DRAM_ACTIVE": ("dram_bandwidth_percent", 100.0),
        "DCGM_FI_PROF_PIPE_FP64_ACTIVE": ("fp64_activity_percent", 100.0),
        "DCGM_FI_PROF_PIPE_FP32_ACTIVE": ("fp32_activity_percent", 100.0),
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE": ("fp16_activity_percent", 100.0),
    },
    uuid_label="UUID",
    index_label="gpu",
    instance_label="GPU_I_ID",  # its render_metrics.go template: only where MigProfile is set
    profile_label="GPU_I_PROFILE",
    name_label="modelName",
    host_labels=("hostname", "Hostname"),  # renamed from Hostname in 2026; either may come
    driver_label="DCGM_FI_DRIVER_VERSION",
    # No series is always there (the counters are the user's choice): three of the defaults.
    scraped=("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE"),
)

NVIDIA_GPU_EXPORTER = Dialect(
    kind="nvidia_gpu_exporter",
    markers=("nvidia_smi_gpu_info",),
    gpu={
        "nvidia_smi_utilization_gpu_ratio": ("utilization_gpu_percent", 100.0),
        "nvidia_smi_utilization_memory_ratio": ("utilization_memory_percent", 100.0),
        "nvidia_smi_utilization_encoder_ratio": ("encoder_utilization_percent", 100.0),
        "nvidia_smi_utilization_decoder_ratio": ("decoder_utilization_percent", 100.0),
        "nvidia_smi_memory_used_bytes": ("memory_used_bytes", 1.0),
        "nvidia_smi_memory_free_bytes": ("memory_free_bytes", 1.0),
        "nvidia_smi_memory_reserved_bytes": ("memory_reserved_bytes", 1.0),
        "nvidia_smi_memory_total_bytes": (MEMORY_TOTAL, 1.0),
        "nvidia_smi_temperature_gpu": ("temperature_gpu_c", 1.0),
        "nvidia_smi_temperature_memory": ("temperature_memory_c", 1.0),
        "nvidia_smi_fan_speed_ratio": ("fan_speed_percent", 100.0),
        "nvidia_smi_power_draw_watts": ("power_draw_w", 1.0),
        "nvidia_smi_power_draw_instant_watts": ("power_instant_w", 1.0),
        "nvidia_smi_power_limit_watts": ("power_limit_w", 1.0),
        "nvidia_smi_enforced_power_limit_watts": ("power_enforced_limit_w", 1.0),
        "nvidia_smi_energy_joules_total": ("energy_consumed_j", 1.0),
        "nvidia_smi_clocks_current_sm_clock_hz": ("clock_sm_mhz", 1e-6),
        "nvidia_smi_clocks_current_graphics_clock_hz": ("clock_graphics_mhz", 1e-6),
        "nvidia_smi_clocks_current_memory_clock_hz": ("clock_memory_mhz", 1e-6),
        "nvidia_smi_clocks_current_video_clock_hz": ("clock_video_mhz", 1e-6),
        "nvidia_smi_pstate": ("performance_state", 1.0),
        "nvidia_smi_pcie_link_gen_current": ("pcie_link_gen", 1.0),
        "nvidia_smi_pcie_link_width_current": ("pcie_link_width", 1.0),
        "nvidia_smi_pcie_throughput_tx_bytes_per_second": ("pcie_tx_bytes_per_s", 1.0),
        "nvidia_smi_pcie_throughput_rx_bytes_per_second": ("pcie_rx_bytes_per_s", 1.0),
        "nvidia_smi_ecc_errors_corrected_volatile_total": ("ecc_corrected_volatile_count", 1.0),
        "nvidia_smi_ecc_errors_uncorrected_volatile_total": ("ecc_uncorrected_volatile_count", 1.0),
        "nvidia_smi_ecc_errors_corrected_aggregate_total": ("ecc_corrected_aggregate_count", 1.0),
        "nvidia_smi_ecc_errors_uncorrected_aggregate_total": ("ecc_uncorrected_aggregate_count", 1.0),
        "nvidia_smi_remapped_rows_correctable": ("remapped_rows_correctable_count", 1.0),
        "nvidia_smi_remapped_rows_uncorrectable": ("remapped_rows_uncorrectable_count", 1.0),
        "nvidia_smi_remapped_rows_pending": ("remapped_rows_pending", 1.0),
        "nvidia_smi_remapped_rows_failure": ("remapped_rows_failure", 1.0),
        "nvidia_smi_clocks_event_reasons_active": ("clock_event_reasons", 1.0),
    },
    host_labels=(),  # none: the URL's host (or Prometheus's instance) names it
    info="nvidia_smi_gpu_info",
    process_memory="nvidia_smi_compute_app_used_memory_bytes",
    process_name_label="process_name",
    scraped=("nvidia_smi_gpu_info",),
)

NVITOP = Dialect(
    kind="nvitop-exporter",
    markers=("nvitop_info",),
    gpu={
        "gpu_utilization_Percentage": ("utilization_gpu_percent", 1.0),
        "gpu_memory_utilization_Percentage": ("utilization_memory_percent", 1.0),
        "gpu_encoder_utilization_Percentage": ("encoder_utilization_percent", 1.0),
        "gpu_decoder_utilization_Percentage": ("decoder_utilization_percent", 1.0),
        "gpu_memory_total_MiB": (MEMORY_TOTAL, MIB),
        "gpu_memory_used_MiB": ("memory_used_bytes", MIB),
        "gpu_memory_free_MiB": ("memory_free_bytes", MIB),
        "gpu_clock_sm_MHz": ("clock_sm_mhz", 1.0),
        "gpu_clock_memory_MHz": ("clock_memory_mhz", 1.0),
        "gpu_clock_graphics_MHz": ("clock_graphics_mhz", 1.0),
        "gpu_clock_video_MHz": ("clock_video_mhz", 1.0),
        "gpu_power_usage_W": ("power_draw_w", 1.0),
        "gpu_power_limit_W": ("power_enforced_limit_w", 1.0),
        "gpu_temperature_C": ("temperature_gpu_c", 1.0),
        "gpu_fan_speed_Percentage": ("fan_speed_percent", 1.0),
        "gpu_pcie_tx_throughput_MiBps": ("pcie_tx_bytes_per_s", MIB),
        "gpu_pcie_rx_throughput_MiBps": ("pcie_rx_bytes_per_s", MIB),
        "gpu_nvlink_total_tx_throughput_MiBps": ("nvlink_tx_bytes_per_s", MIB),
        "gpu_nvlink_total_rx_throughput_MiBps": ("nvlink_rx_bytes_per_s", MIB),
    },
    host={
        "host_cpu_percent_Percentage": ("cpu_percent", 1.0),
        "host_virtual_memory_used_MiB": ("ram_used_bytes", MIB),
        "host_virtual_memory_total_MiB": ("ram_total_bytes", MIB),
        "host_virtual_memory_percent_Percentage": ("ram_used_percent", 1.0),
        "host_swap_memory_used_MiB": ("swap_used_bytes", MIB),
        "host_swap_memory_total_MiB": ("swap_total_bytes", MIB),
    },
    name_label="devicename",
    info="nvitop_info",  # per host, not per GPU: read for the driver version only
    process_memory="process_gpu_memory_MiB",
    process_scale=MIB,
    process_name_label="",  # nvitop-exporter labels a process by pid and user, not by name
    process_user_label="username",
    scraped=("nvitop_info",),
)

DIALECTS: tuple[Dialect, ...] = (TRAYVML, DCGM, NVIDIA_GPU_EXPORTER, NVITOP)
# Every name the dialects read: the Prometheus-server source asks for these and nothing else.
NAME_PREFIXES = ("trayvml_", "DCGM_FI_", "nvidia_smi_", "gpu_", "host_", "process_gpu_memory", "nvitop_info")


def recognise(names: set[str]) -> list[Dialect]:
    return [d for d in DIALECTS if d.recognises(names)]


@dataclass
class _Gpu:
    uuid: str
    index: int = -1
    name: str = ""
    pci_bus_id: str = ""
    driver: str = ""
    values: dict[str, float] = field(default_factory=dict)
    processes: list[ProcessSample] = field(default_factory=list)
    identified: bool = False  # index, name, PCI bus id and driver taken from its labels
    parent_index: int = -1  # a MIG instance's board; -1: a whole GPU
    instance_id: int = -1  # a MIG instance's GPU instance id
    mig_board: bool = False  # a board in MIG mode: its instances' series carry its values
    state: str = ""  # prom_names.GPU_LOST, GPU_ASLEEP or GPU_RESTING where its exporter says so


@dataclass
class _Host:
    name: str
    gpus: dict[str, _Gpu] = field(default_factory=dict)
    host: dict[str, float] = field(default_factory=dict)
    driver: str = ""
    cuda: str = ""  # the CUDA driver version, where the exporter says it (nvitop-exporter)
    down: str = ""  # trayvml_up 0: its reason
    reason: str = ""  # trayvml_down_info's: its reason, taken only where trayvml_up is 0 (a federating
    # server keeps a "starting" a restarted serve served for its lookback, 5 minutes)
    simulation: str = ""  # its exporter serves simulated GPUs: Sample.simulation's label
    jobs: dict[int, Attribution] = field(default_factory=dict)  # by PID, where the exporter names them

    def gpu(self, uuid: str) -> _Gpu:
        gpu = self.gpus.get(uuid)
        if gpu is None:  # not setdefault: that would build a _Gpu for every series of every read
            gpu = self.gpus[uuid] = _Gpu(uuid)
        return gpu


def hostname_of(dialect: Dialect, labels: Mapping[str, str], fallback: str) -> str:
    """The host a series is of, as its labels name it: cleaned of control characters (a name
    with a line break in it made every e-mail of that host's alerts fail, its subject refused)."""
    for label in dialect.host_labels:
        if labels.get(label):
            return clean(labels[label])
    instance = labels.get("instance", "")  # added by a Prometheus server: host:port of the target
    return clean(instance.rsplit(":", 1)[0].strip("[]")) if instance else fallback


def _index(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() else -1


def to_samples(points: Iterable[Point], fallback_host: str, url: str, now_s: float) -> list[Sample]:
    """One Sample per host found in ``points`` (from any mix of the known exporters); [] if none.

    ``fallback_host`` names the host when a source does not (nvidia_gpu_exporter): the URL's host.
    """
    return to_samples_and_layout(list(points), None, fallback_host, url, now_s)[0]


def to_samples_and_layout(
    points: list[Point], lines: Lines | None, fallback_host: str, url: str, now_s: float
) -> tuple[list[Sample], Layout | None]:
    """``to_samples``, and the layout of the exposition's ``lines`` for the next read (None where
    there is none: lines not given, or more than one exporter's series in them)."""
    dialects = recognise({p.name for p in points})
    hosts: dict[str, _Host] = {}
    kinds: dict[str, str] = {}
    routes: list[_Route] | None = [] if lines is not None and len(dialects) == 1 else None
    for dialect in dialects:
        _read(dialect, points, fallback_host, hosts, kinds, routes)
    shapes = [_HostShape(host, kinds[host.name], url) for host in hosts.values()]
    samples = [
        shape.sample([dict(gpu.values) for gpu in shape.gpus], [gpu.processes for gpu in shape.gpus], host.host, now_s)
        for shape, host in zip(shapes, hosts.values(), strict=True)
    ]
    if lines is None or routes is None:
        return samples, None
    return samples, Layout(lines, routes, shapes)


class Lines(NamedTuple):
    """An exposition's series lines: each one's series text (name and labels as written) and value
    text, and the point it made (-1: a series of no exporter trayvml knows, not parsed)."""

    series: list[str]
    values: list[str]
    point_of_line: list[int]


class Layout:
    """Where each series line of a read put its value, kept for the next read.

    An exporter serves the same series read after read with new values. A read whose lines name
    the same series in the same order, and whose ``FACT`` lines (identity, up, simulated, jobs)
    say the same, makes the same hosts, GPUs and processes: only its numbers need putting in
    place, with no label or name looked at. Anything else is read in full (and makes a new layout).
    """

    def __init__(self, lines: Lines, routes: list[_Route], shapes: list[_HostShape]):
        self.series = tuple(lines.series)
        self._shapes = shapes
        host_slot = {shape.name: k for k, shape in enumerate(shapes)}
        gpu_slot = {
            (shape.name, gpu.uuid): (k, g) for k, shape in enumerate(shapes) for g, gpu in enumerate(shape.gpus)
        }
        # Per host, per GPU in the order its sample lists them: (line, key, scale) of each value.
        gpu_values: list[list[list[tuple[int, str, float]]]] = [[[] for _ in shape.gpus] for shape in shapes]
        host_values: list[list[tuple[int, str, float]]] = [[] for _ in shapes]
        # Per host, per GPU: (line, position, scale) of each process's memory.
        processes: list[list[list[tuple[int, int, float]]]] = [[[] for _ in shape.gpus] for shape in shapes]
        self._facts: list[int] = []
        for line, point in enumerate(lines.point_of_line):
            route = routes[point] if point >= 0 else _IGNORED
            if route.kind == GPU_VALUE:
                k, g = gpu_slot[(route.host, route.uuid)]
                gpu_values[k][g].append((line, route.key, route.scale))
            elif route.kind == HOST_VALUE:
                host_values[host_slot[route.host]].append((line, route.key, route.scale))
            elif route.kind == PROCESS_MEMORY:
                k, g = gpu_slot[(route.host, route.uuid)]
                processes[k][g].append((line, route.position, route.scale))
            elif route.kind == FACT:
                self._facts.append(line)
        self._fact_values = [lines.values[line] for line in self._facts]
        self._gpu_values = [[_Values(entries) for entries in gpus] for gpus in gpu_values]
        self._host_values = [_Values(entries) for entries in host_values]
        self._processes = processes

    def samples(self, values: Sequence[str], now_s: float) -> list[Sample] | None:
        """The samples of an exposition whose series are ``self.series`` with these value texts;
        None where its facts changed or a value is not a number (the full read says which)."""
        if [values[line] for line in self._facts] != self._fact_values:
            return None
        try:
            numbers = list(map(float, values))
        except ValueError:
            return None
        samples = []
        for shape, gpu_values, host_values, processes in zip(
            self._shapes, self._gpu_values, self._host_values, self._processes, strict=True
        ):
            gpus = [values.finite(numbers) for values in gpu_values]
            memories = [
                _with_memory(kept, memory, numbers) if memory else kept
                for kept, memory in zip(shape.processes, processes, strict=True)
            ]
            samples.append(shape.sample(gpus, memories, host_values.each(numbers), now_s))
        return samples


def _finite(value: float) -> float:
    """``value``, or NaN (no value) where it is not finite: a host's infinity, or 1e308 MiB in bytes,
    was shown as "CPU inf %" and a RAM total of 300 digits."""
    return value if math.isfinite(value) else math.nan


class _Values:
    """Where a GPU's (or a host's) values are among a read's numbers: (line, catalog key, scale) each."""

    def __init__(self, entries: list[tuple[int, str, float]]):
        self._keys = tuple(key for _line, key, _scale in entries)
        # Each scale as in_base_units applies it, worked out once: map(mul) and map(truediv) run in C.
        factors = [times_and_per(scale) for _line, _key, scale in entries]
        self._times = tuple(times for times, _per in factors)
        self._pers = tuple(per for _times, per in factors)
        lines = [line for line, _key, _scale in entries]
        # Each value's number, in one C call (itemgetter of one index gives the item, not a tuple).
        self._pick: Callable[[list[float]], tuple[float, ...]] = (
            itemgetter(*lines) if len(lines) > 1 else lambda numbers: tuple(numbers[line] for line in lines)
        )

    def _scaled(self, numbers: list[float]) -> Iterator[float]:
        return map(truediv, map(mul, self._pick(numbers), self._times), self._pers)

    def each(self, numbers: list[float]) -> dict[str, float]:
        """Each key's number times its scale, NaN where that is not finite: a host's values, each
        kept as a full read keeps them (all of them NaN is a host still, not none)."""
        return {key: _finite(value) for key, value in zip(self._keys, self._scaled(numbers), strict=True)}

    def finite(self, numbers: list[float]) -> dict[str, float]:
        """Each key's number times its scale (a later line of the same key wins, as in a full
        read), leaving out one that is not finite (not supported is not a value)."""
        scaled = tuple(self._scaled(numbers))
        if math.isfinite(sum(scaled)):  # a NaN or an infinity makes the sum one: none here (the usual read)
            return dict(zip(self._keys, scaled, strict=True))
        # Scaled first: 1e308 MiB is finite, and infinite in bytes.
        return {key: value for key, value in zip(self._keys, scaled, strict=True) if math.isfinite(value)}


def _with_memory(
    processes: Sequence[ProcessSample], memory: list[tuple[int, int, float]], numbers: list[float]
) -> list[ProcessSample]:
    """A GPU's processes as the last read left them, with this read's memory (line, position, scale) each."""
    out = list(processes)
    for line, position, scale in memory:
        used = _finite(numbers[line] * scale)
        if out[position].used_memory_bytes != used:  # (NaN again: made again, the same)
            out[position] = replace(out[position], used_memory_bytes=used)
    return out


class _Route(NamedTuple):
    """What one point did to a read's hosts: where its value went (``FACT``: something its value
    decides beyond a number in a slot, so a layout needs the same value; ``IGNORED``: nothing)."""

    kind: int  # GPU_VALUE, HOST_VALUE, PROCESS_MEMORY, FACT or IGNORED
    host: str = ""
    uuid: str = ""
    key: str = ""  # the catalog key (GPU and host values)
    scale: float = 1.0
    position: int = 0  # a process's on its GPU


GPU_VALUE, HOST_VALUE, PROCESS_MEMORY, FACT, IGNORED = range(5)
_FACT, _IGNORED = _Route(FACT), _Route(IGNORED)


def _read(
    dialect: Dialect,
    points: list[Point],
    fallback: str,
    hosts: dict[str, _Host],
    kinds: dict[str, str],
    routes: list[_Route] | None = None,
) -> None:
    """``routes``: extended with what each point did (see Layout)."""
    info_by_uuid: dict[str, Mapping[str, str]] = {}
    for point in points:
        if point.name == dialect.info and dialect.uuid_label in point.labels:
            info_by_uuid[point.labels[dialect.uuid_label]] = point.labels

    def host_of(labels: Mapping[str, str]) -> _Host:
        name = hostname_of(dialect, labels, fallback)
        host = hosts.get(name)
        if host is None:
            kinds[name] = dialect.kind
            host = hosts[name] = _Host(name)
        return host

    record = routes is not None
    route_of = [_FACT] * len(points) if record else []  # a point not marked otherwise is a fact
    gpu_table, uuid_label = dialect.gpu, dialect.uuid_label
    for i, point in enumerate(points):
        name, labels, value = point.name, point.labels, point.value
        # prometheus-client's parser names a counter's sample NAME_total even where the exporter
        # wrote NAME (dcgm-exporter's counters); a Prometheus server keeps NAME.
        known = gpu_table.get(name)
        if known is None and name.endswith("_total"):
            known = gpu_table.get(name[: -len("_total")])
        if known is not None or name == dialect.info:
            uuid = labels.get(uuid_label, "")
            if uuid:  # the common case first: one GPU metric
                # Each MIG instance of a board apart: by its board's UUID alone, they overwrote each
                # other. What dcgm-exporter repeats on each instance of its board's goes to the board.
                instance = labels.get(dialect.instance_label, "") if dialect.instance_label else ""
                board = bool(instance) and known is not None and known[0] in BOARD_KEYS
                if instance and known is not None and known[0] in NOT_OF_INSTANCES:
                    if record:
                        route_of[i] = _IGNORED
                    continue
                key = f"{uuid}/{instance}" if instance and not board else uuid
                host = host_of(labels)
                gpu = host.gpu(key)
                gpu.mig_board = gpu.mig_board or board
                if not gpu.identified:
                    # Identity, once a read: the series' own labels, else those of the info series of that uuid.
                    facts = {**info_by_uuid.get(uuid, {}), **labels}
                    gpu.index = _index(facts.get(dialect.index_label, ""))
                    gpu.name = facts.get(dialect.name_label or "name", "")
                    gpu.pci_bus_id = facts.get(dialect.pci_label, "")
                    gpu.driver = facts.get(dialect.driver_label, "")
                    gpu.state = facts.get(dialect.state_label, "") if dialect.state_label else ""
                    if instance and not board:
                        _identify_instance(gpu, instance, facts.get(dialect.profile_label, ""))
                    elif dialect.parent_label and facts.get(dialect.parent_label):
                        gpu.parent_index = _index(facts[dialect.parent_label])
                        gpu.instance_id = _index(facts.get(dialect.instance_id_label, ""))
                    gpu.identified = True
                if known is not None:
                    if record:
                        route_of[i] = _Route(GPU_VALUE, host.name, key, known[0], known[1])
                    scaled = in_base_units(value, known[1])  # (dcgm-exporter's mJ: exact)
                    if math.isfinite(scaled):  # (1e308 MiB: infinite in bytes)
                        gpu.values[known[0]] = scaled
                continue
            if name == dialect.info:  # nvitop: per host, not per GPU
                host = host_of(labels)
                host.driver = labels.get("driver_version", "")
                host.cuda = labels.get("cuda_driver_version", "")
            elif record:
                route_of[i] = _IGNORED
            continue
        if name == dialect.up:
            host = host_of(labels)
            if value != 1.0:  # (its reason in either order: an older serve put it here)
                host.down = labels.get("reason", "") or host.reason or "unknown"
        elif name == dialect.down and value == 1.0:
            host = host_of(labels)
            host.reason = labels.get("reason", "") or "unknown"
            if host.down:  # trayvml_up 0 came first
                host.down = host.reason
        elif name == dialect.simulated:
            if value == 1.0:  # the scenario is the exporter's text: shown cleaned and cut short
                scenario = shorten(clean(labels.get("scenario", ""))) or "?"
                if scenario.count("(") > scenario.count(")"):  # a replay's "(file.jsonl)", cut short
                    scenario += ")"
                host_of(labels).simulation = SIMULATED_GPUS.format(scenario=scenario)
        elif name in dialect.host:
            key, scale = dialect.host[name]
            host = host_of(labels)
            host.host[key] = _finite(in_base_units(value, scale))
            if record:
                route_of[i] = _Route(HOST_VALUE, host.name, "", key, scale)
        elif name == dialect.process_job and value == 1.0:
            # A Prometheus server that scrapes it (honor_labels off, its default) sets ``job`` to
            # its scrape job's name and keeps the exporter's as ``exported_job``.
            job = labels.get("exported_job") or labels.get("job", "")
            found = served_job(job, labels.get("kind", ""), labels.get("job_name", ""))
            pid = _index(labels.get("pid", ""))
            if found is not None and pid >= 0:
                host_of(labels).jobs[pid] = found
        elif name == dialect.process_memory and labels.get(uuid_label):
            host = host_of(labels)
            gpu = host.gpu(labels[uuid_label])
            if record:
                route_of[i] = _Route(PROCESS_MEMORY, host.name, gpu.uuid, "", dialect.process_scale, len(gpu.processes))
            gpu.processes.append(
                ProcessSample(
                    gpu_index=-1,  # set once the GPU's index is known
                    pid=_index(labels.get("pid", "")),
                    kind=labels.get("kind", "compute"),
                    used_memory_bytes=_finite(value * dialect.process_scale),
                    name=labels.get(dialect.process_name_label, "") if dialect.process_name_label else "",
                    user=labels.get(dialect.process_user_label, "") if dialect.process_user_label else "",
                )
            )
        elif record and name != dialect.process_job:
            route_of[i] = _IGNORED  # no series this dialect reads
    if routes is not None:
        routes += route_of


# What dcgm-exporter serves on each MIG instance's series but is its board's (dcgm-exporter#257):
# the board's values, as this machine's reader gives them to a board in MIG mode, its instances
# having memory and activity. The board's power summed over its instances counted it once each.
BOARD_KEYS = frozenset(
    {
        "power_draw_w",
        "power_instant_w",
        "power_enforced_limit_w",
        "energy_consumed_j",
        "temperature_gpu_c",
        "temperature_memory_c",
        "clock_sm_mhz",
        "clock_memory_mhz",
        "pcie_replay_count",
    }
)
# Served on an instance's series but told of neither it nor its board: GPU_UTIL is 0 there
# (dcgm-exporter#216; NVML tells no utilization in MIG mode), read as idle.
NOT_OF_INSTANCES = frozenset(
    {
        "utilization_gpu_percent",
        "utilization_memory_percent",
        "encoder_utilization_percent",
        "decoder_utilization_percent",
    }
)


def _identify_instance(gpu: _Gpu, instance: str, profile: str) -> None:
    """``gpu``, read from its board's labels, made the board's MIG instance ``instance`` (numbered
    after the whole GPUs, _HostShape) named by its profile where told ("<<<NULL>>>" where DCGM could
    not read it: not a name)."""
    gpu.parent_index, gpu.index = gpu.index, -1
    gpu.instance_id = _index(instance)
    profile = shorten(clean(profile))
    if profile and "<" not in profile:
        gpu.name = f"{gpu.name} MIG {profile}".strip()


def served_job(job: str, kind: str, name: str = "") -> Attribution | None:
    """The attribution ``trayvml serve`` names (its job, which kind it is, a Slurm job's name);
    None where the kind is none trayvml knows: a job is not guessed from words it cannot read."""
    job = shorten(clean(job))
    if not job or kind not in JOB_KINDS:
        return None
    found = Attribution(job=job, job_kind=kind)
    if kind == "notebook":
        return replace(found, notebook=job)
    if kind == "slurm":
        return replace(found, slurm_job=job, slurm_job_name=shorten(clean(name)))
    if kind == "unit":
        return replace(found, unit=job)
    if kind == "container":  # "docker 3f2a9c1b7e4d"
        runtime, _, container = job.rpartition(" ")
        return replace(found, runtime="" if runtime == "container" else runtime, container=container)
    return found


_GPU_KEYS = tuple(m.key for m in GPU_METRICS)
_HOST_KEYS = tuple(m.key for m in HOST_METRICS)
_STATE_IF_READ = (MetricState.NOT_SUPPORTED, MetricState.OK)  # by whether the exporter gave a value
# A GPU its exporter says is not answering (trayvml serve's info series): every metric in that state.
_NOT_ANSWERING = {
    prom_names.GPU_LOST: MetricState.LOST,
    prom_names.GPU_ASLEEP: MetricState.ASLEEP,
    prom_names.GPU_RESTING: MetricState.RESTING,
}
_NO_VALUES = (math.nan,) * len(_GPU_KEYS)


def _percent(part: float | None, whole: float | None) -> float | None:
    if part is None or whole is None or not whole:
        return None
    return 100.0 * part / whole


def _on_gpu(process: ProcessSample, index: int, job: Attribution) -> ProcessSample:
    """``process`` on the GPU of that index, with that job (the same one where it is so already: a
    layout's processes were made here before, and dataclasses.replace takes µs a process)."""
    if process.gpu_index == index and process.attribution is job:
        return process
    return replace(process, gpu_index=index, attribution=job)


class _HostShape:
    """What a host's samples share while its series stay the same (a layout's reads): its GPUs in
    the order its sample lists them, each one's index and facts, its system and origin. ``sample``
    makes one read's sample of them; each one's values are this read's, nothing carried over."""

    def __init__(self, host: _Host, kind: str, url: str):
        self.name, self.kind, self.url = host.name, kind, url
        whole = sorted(
            (g for g in host.gpus.values() if g.parent_index < 0), key=lambda g: (g.index < 0, g.index, g.uuid)
        )
        instances = sorted(
            (g for g in host.gpus.values() if g.parent_index >= 0),
            key=lambda g: (g.parent_index, g.instance_id, g.uuid),
        )
        self.gpus = whole + instances
        self.indices = [gpu.index if gpu.index >= 0 else position for position, gpu in enumerate(whole)]
        # MIG instances after every GPU and board, as this machine's reader numbers them (where
        # their exporter does not: a trayvml serve's keep its numbers).
        first = max([*self.indices, *(g.parent_index for g in instances)], default=-1) + 1
        self.indices += [g.index if g.index >= 0 else first + k for k, g in enumerate(instances)]
        self.parents = {g.parent_index for g in instances}
        self.down, self.simulation, self.jobs = host.down, host.simulation, host.jobs
        driver = next((g.driver for g in self.gpus if g.driver), host.driver)
        self.system = SystemInfo(
            hostname=host.name, driver_version=driver, cuda_driver_version=host.cuda, nvml_version=""
        )
        self.answering = RemoteOrigin(url, kind, "", math.nan)
        # Each GPU's processes and DeviceInfo as the last sample holds them: the next read makes
        # new ones only where they differ (a dataclass of 30 fields takes µs to make).
        self.processes: list[Sequence[ProcessSample]] = [gpu.processes for gpu in self.gpus]
        self._devices: list[DeviceInfo | None] = [None] * len(self.gpus)
        # Each GPU's states as the last sample holds them, and the keys read then: the same keys, the same states.
        self._states: list[tuple[frozenset[str], tuple[MetricState, ...]] | None] = [None] * len(self.gpus)

    def sample(
        self,
        gpu_values: list[dict[str, float]],
        processes: list[Sequence[ProcessSample]],
        host_values: dict[str, float],
        now_s: float,
    ) -> Sample:
        """The sample of one read: each GPU's values by catalog key (in ``self.gpus``' order; the
        dicts are filled in further) and processes, and the host's values."""
        gpus: list[GpuSample] = []
        devices: list[DeviceInfo] = []
        jobs = self.jobs
        for k, (gpu, index, values, running) in enumerate(
            zip(self.gpus, self.indices, gpu_values, processes, strict=True)
        ):
            total = values.pop(MEMORY_TOTAL, None)
            # Said lost or asleep, and no value of its own: behind a server that federates, a GPU's
            # earlier info series stays for its lookback beside the new one, so a GPU with values
            # is taken for answering whatever either says.
            not_answering = _NOT_ANSWERING.get(gpu.state) if not values else None
            if total is None and "memory_used_bytes" in values and "memory_free_bytes" in values:
                total = (
                    values["memory_used_bytes"] + values["memory_free_bytes"] + values.get("memory_reserved_bytes", 0.0)
                )
            derived = {
                "memory_used_percent": _percent(values.get("memory_used_bytes"), total),
                "power_used_percent": _percent(values.get("power_draw_w"), values.get("power_enforced_limit_w")),
            }
            for key, value in derived.items():
                if key not in values and value is not None:
                    values[key] = value
            on_gpu = tuple(_on_gpu(p, index, jobs.get(p.pid, NO_ATTRIBUTION)) for p in running)
            self.processes[k] = on_gpu
            if on_gpu:
                values.setdefault("process_count", float(len(on_gpu)))
            if not_answering is not None:  # no values, and why: as this machine's reader makes it
                lost, asleep = not_answering is MetricState.LOST, not_answering is MetricState.ASLEEP
                said = (not_answering,) * len(_GPU_KEYS)
                gpus.append(GpuSample(index, _NO_VALUES, said, lost=lost, asleep=asleep))
            else:
                states = self._states[k]
                if states is None or values.keys() != states[0]:
                    read = frozenset(values)
                    states = self._states[k] = (read, tuple(_STATE_IF_READ[key in read] for key in _GPU_KEYS))
                gpus.append(
                    GpuSample(
                        index=index,
                        values=tuple(map(values.get, _GPU_KEYS, repeat(math.nan))),
                        states=states[1],
                        processes=on_gpu,
                    )
                )
            memory_total_bytes = math.nan if total is None else total
            device = self._devices[k]
            if device is None or device.memory_total_bytes != memory_total_bytes:  # NaN: made anew, as it should
                device = self._devices[k] = DeviceInfo(
                    index=index,
                    name=gpu.name,
                    uuid=gpu.uuid,
                    pci_bus_id=gpu.pci_bus_id,
                    memory_total_bytes=memory_total_bytes,
                    mig_parent_index=gpu.parent_index,
                    gpu_instance_id=gpu.instance_id,
                    # (a trayvml serve's board: one its MIG devices name as their parent)
                    mig_mode_current=True if gpu.mig_board or index in self.parents else None,
                )
            devices.append(device)
        host_sample = None
        if host_values:
            host_sample = HostSample(tuple(map(host_values.get, _HOST_KEYS, repeat(math.nan))))
        fault = ""
        if self.down == "starting":
            fault = translate("remote", "{url}: {host}'s exporter has not read its GPUs yet.").format(
                url=self.url, host=self.name
            )
        elif self.down:
            fault = translate(
                "remote", "{url}: {host}'s exporter says its GPU driver is not usable ({reason})."
            ).format(url=self.url, host=self.name, reason=self.down)
        return Sample(
            timestamp_s=now_s,
            gpus=() if fault else tuple(gpus),
            devices=() if fault else tuple(devices),
            system=self.system,
            host=host_sample,
            remote=RemoteOrigin(self.url, self.kind, fault, now_s) if fault else self.answering,
            simulation=self.simulation,
        )
