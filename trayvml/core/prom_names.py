"""Each catalog metric's name in the Prometheus exposition (``trayvml serve``, and read back).

Prometheus's conventions: one prefix, the base unit in the name, ratios 0-1 instead of percent,
hertz instead of MHz, and counters (values that only grow) ending in ``_total``. The scale from
the catalog's unit to the Prometheus base unit follows from the unit alone (:func:`per_base_unit`), so
this table says only the name and whether a value is a counter. ``tests/test_serve.py`` checks
that every catalog metric has an entry, so a new metric cannot be left out of the exporter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trayvml.core.metrics import GPU_METRICS, HOST_METRICS, Metric
from trayvml.core.units import Unit

PREFIX = "trayvml_"


@dataclass(frozen=True)
class PromName:
    name: str  # without the prefix
    counter: bool = False  # a value that only grows (until the driver reloads): exposed as *_total

    @property
    def full(self) -> str:
        """The name a scrape shows (a counter's family is named without ``_total``; its sample with)."""
        return PREFIX + self.name + ("_total" if self.counter else "")

    @property
    def family(self) -> str:
        return PREFIX + self.name


_C = True  # counter

GPU_NAMES: Mapping[str, PromName] = {
    "utilization_gpu_percent": PromName("gpu_utilization_ratio"),
    "utilization_memory_percent": PromName("gpu_memory_bandwidth_utilization_ratio"),
    "memory_used_bytes": PromName("gpu_memory_used_bytes"),
    "memory_free_bytes": PromName("gpu_memory_free_bytes"),
    "memory_reserved_bytes": PromName("gpu_memory_reserved_bytes"),
    "memory_used_percent": PromName("gpu_memory_used_ratio"),
    "temperature_gpu_c": PromName("gpu_temperature_celsius"),
    "temperature_memory_c": PromName("gpu_memory_temperature_celsius"),
    "temperature_below_shutdown_c": PromName("gpu_temperature_below_shutdown_celsius"),
    "fan_speed_percent": PromName("gpu_fan_speed_ratio"),
    "power_draw_w": PromName("gpu_power_watts"),
    "power_instant_w": PromName("gpu_power_instant_watts"),
    "power_limit_w": PromName("gpu_power_limit_watts"),
    "power_enforced_limit_w": PromName("gpu_power_enforced_limit_watts"),
    "power_used_percent": PromName("gpu_power_used_ratio"),
    "energy_consumed_j": PromName("gpu_energy_joules", _C),
    "clock_sm_mhz": PromName("gpu_clock_sm_hertz"),
    "clock_graphics_mhz": PromName("gpu_clock_graphics_hertz"),
    "clock_memory_mhz": PromName("gpu_clock_memory_hertz"),
    "clock_video_mhz": PromName("gpu_clock_video_hertz"),
    "performance_state": PromName("gpu_performance_state"),
    "pcie_tx_bytes_per_s": PromName("gpu_pcie_tx_bytes_per_second"),
    "pcie_rx_bytes_per_s": PromName("gpu_pcie_rx_bytes_per_second"),
    "pcie_link_gen": PromName("gpu_pcie_link_generation"),
    "pcie_link_width": PromName("gpu_pcie_link_width_lanes"),
    "pcie_replay_count": PromName("gpu_pcie_replays", _C),
    "pcie_replays_per_s": PromName("gpu_pcie_replays_per_second"),
    "nvlink_tx_bytes_per_s": PromName("gpu_nvlink_tx_bytes_per_second"),
    "nvlink_rx_bytes_per_s": PromName("gpu_nvlink_rx_bytes_per_second"),
    "encoder_utilization_percent": PromName("gpu_encoder_utilization_ratio"),
    "decoder_utilization_percent": PromName("gpu_decoder_utilization_ratio"),
    "ecc_corrected_volatile_count": PromName("gpu_ecc_corrected_volatile_errors", _C),
    "ecc_uncorrected_volatile_count": PromName("gpu_ecc_uncorrected_volatile_errors", _C),
    "ecc_corrected_aggregate_count": PromName("gpu_ecc_corrected_aggregate_errors", _C),
    "ecc_uncorrected_aggregate_count": PromName("gpu_ecc_uncorrected_aggregate_errors", _C),
    "retired_pages_sbe_count": PromName("gpu_retired_pages_single_bit"),
    "retired_pages_dbe_count": PromName("gpu_retired_pages_double_bit"),
    "retired_pages_pending": PromName("gpu_retired_pages_pending"),
    "remapped_rows_correctable_count": PromName("gpu_remapped_rows_correctable"),
    "remapped_rows_uncorrectable_count": PromName("gpu_remapped_rows_uncorrectable"),
    "remapped_rows_pending": PromName("gpu_remapped_rows_pending"),
    "remapped_rows_failure": PromName("gpu_remapped_rows_failure"),
    "xid_error_count": PromName("gpu_xid_errors", _C),
    "xid_last": PromName("gpu_xid_last"),
    "clock_event_reasons": PromName("gpu_clock_event_reasons"),
    "process_count": PromName("gpu_processes"),
    # GPM (Hopper and newer; read only while asked for, see trayvml/nvml/gpm.py)
    "sm_activity_percent": PromName("gpu_sm_activity_ratio"),
    "sm_occupancy_percent": PromName("gpu_sm_occupancy_ratio"),
    "tensor_activity_percent": PromName("gpu_tensor_activity_ratio"),
    "dram_bandwidth_percent": PromName("gpu_dram_bandwidth_utilization_ratio"),
    "fp64_activity_percent": PromName("gpu_fp64_activity_ratio"),
    "fp32_activity_percent": PromName("gpu_fp32_activity_ratio"),
    "fp16_activity_percent": PromName("gpu_fp16_activity_ratio"),
    "gpm_pcie_tx_bytes_per_s": PromName("gpu_gpm_pcie_tx_bytes_per_second"),
    "gpm_pcie_rx_bytes_per_s": PromName("gpu_gpm_pcie_rx_bytes_per_second"),
    "gpm_nvlink_tx_bytes_per_s": PromName("gpu_gpm_nvlink_tx_bytes_per_second"),
    "gpm_nvlink_rx_bytes_per_s": PromName("gpu_gpm_nvlink_rx_bytes_per_second"),
}

HOST_NAMES: Mapping[str, PromName] = {
    "cpu_percent": PromName("host_cpu_utilization_ratio"),
    "ram_used_bytes": PromName("host_memory_used_bytes"),
    "ram_total_bytes": PromName("host_memory_total_bytes"),
    "ram_used_percent": PromName("host_memory_used_ratio"),
    "swap_used_bytes": PromName("host_swap_used_bytes"),
    "swap_total_bytes": PromName("host_swap_total_bytes"),
    "disk_read_bytes_per_s": PromName("host_disk_read_bytes_per_second"),
    "disk_write_bytes_per_s": PromName("host_disk_write_bytes_per_second"),
    "net_rx_bytes_per_s": PromName("host_network_receive_bytes_per_second"),
    "net_tx_bytes_per_s": PromName("host_network_transmit_bytes_per_second"),
}

# Series that are not catalog metrics.
UP = PREFIX + "up"  # 1: the GPU values are current; 0 with a ``reason`` label
GPU_INFO = PREFIX + "gpu_info"
MEMORY_TOTAL = PromName("gpu_memory_total_bytes")  # a DeviceInfo fact, needed to turn memory into a ratio
PROCESS_MEMORY = PromName("gpu_process_memory_used_bytes")
SAMPLE_TIME = PromName("sample_timestamp_seconds")  # when the values served were read


def per_base_unit(unit: Unit) -> float:
    """How many of the catalog's unit make one Prometheus base unit: divide by it to serve, multiply
    to read back (percent -> ratio: 100; MHz -> Hz: 1e-6). Division keeps 94 % as 0.94 exactly."""
    if unit is Unit.PERCENT:
        return 100.0
    if unit is Unit.MHZ:
        return 1e-6
    return 1.0


def catalog_of(full_name: str) -> tuple[Metric, bool] | None:
    """The catalog metric a served name stands for, and whether it is a GPU metric; None if none."""
    return _BY_FULL_NAME.get(full_name)


_BY_FULL_NAME: dict[str, tuple[Metric, bool]] = {
    **{GPU_NAMES[m.key].full: (m, True) for m in GPU_METRICS if m.key in GPU_NAMES},
    **{HOST_NAMES[m.key].full: (m, False) for m in HOST_METRICS if m.key in HOST_NAMES},
}
