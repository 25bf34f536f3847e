"""The field values the simulated library answers: one model per field id, and the per-second
series of a chunk that the models read their values from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pynvml as N

from trayvml.nvml.sim.profiles import GpuProfile

_U, _ULL = N.NVML_VALUE_TYPE_UNSIGNED_INT, N.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
PCIE_COUNTERS_SINCE_DRIVER = 555


@dataclass(frozen=True)
class Chunk:
    """A chunk's per-second series that field values are made of (counters as running sums)."""

    power_mw: np.ndarray
    energy_mj: np.ndarray  # running sum at each second's end (within it the counter counts on: Timeline.field_row)
    temperature_c: np.ndarray
    pcie_tx_bytes: np.ndarray
    pcie_rx_bytes: np.ndarray
    nvlink_tx_kib_per_link: np.ndarray
    nvlink_rx_kib_per_link: np.ndarray
    ecc_corrected: np.ndarray
    ecc_uncorrected: np.ndarray
    pcie_replays: np.ndarray
    nvlink_links: np.ndarray
    zeros: np.ndarray


@dataclass(frozen=True)
class FieldModel:
    """How the simulation answers one field id: its value type, on which profiles (and, for
    per-link fields, which scopes), and its per-second values."""

    value_type: int
    supported: Callable[[GpuProfile, int], bool]
    values: Callable[[Chunk], np.ndarray]
    since_driver: int = 0  # the first driver branch that knows this field id; older ones answer INVALID_ARGUMENT


def memory_temperature_c(gpu_c: np.ndarray) -> np.ndarray:
    """The HBM's sensor beside the die's: about the same idle, cooler under load, as the real
    drivers' recordings read (tests/recordings: an idle H100 37 °C and 39 °C, busy 57 °C and 53;
    an H200 busy 60 °C and 49). It ran 6 °C warmer: past the GPU's shutdown line on a hot one."""
    return np.round(0.7 * np.asarray(gpu_c) + 12.0)


def _always(p: GpuProfile, scope: int) -> bool:
    return True


def _never(p: GpuProfile, scope: int) -> bool:
    return False


def _has_ecc_field(p: GpuProfile, scope: int) -> bool:
    return p.has_ecc


def _link(p: GpuProfile, scope: int) -> bool:
    return scope < p.nvlink_links


# The field values the simulation answers, keyed by field id: one table, so that a field's
# value cannot be taken from another field's column. Fields not here answer NOT_SUPPORTED.
FIELD_MODELS: dict[int, FieldModel] = {
    N.NVML_FI_DEV_POWER_INSTANT: FieldModel(_U, lambda p, s: p.has_power, lambda c: c.power_mw),
    N.NVML_FI_DEV_POWER_AVERAGE: FieldModel(_U, lambda p, s: p.has_power, lambda c: c.power_mw),
    # The counter nvmlDeviceGetTotalEnergyConsumption answers, on the GPUs that answer it (nvml.h
    # gives both the same words); NOT_SUPPORTED where the profile has no power readings.
    N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION: FieldModel(_ULL, lambda p, s: p.has_power, lambda c: c.energy_mj),
    N.NVML_FI_DEV_MEMORY_TEMP: FieldModel(
        _U, lambda p, s: p.has_memory_temperature, lambda c: memory_temperature_c(c.temperature_c)
    ),
    # Unknown to R535 and R550 drivers: there they answer INVALID_ARGUMENT in their own slot.
    N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES: FieldModel(
        _ULL, lambda p, s: p.has_pcie_counters, lambda c: c.pcie_tx_bytes, since_driver=PCIE_COUNTERS_SINCE_DRIVER
    ),
    N.NVML_FI_DEV_PCIE_COUNT_RX_BYTES: FieldModel(
        _ULL, lambda p, s: p.has_pcie_counters, lambda c: c.pcie_rx_bytes, since_driver=PCIE_COUNTERS_SINCE_DRIVER
    ),
    N.NVML_FI_DEV_PCIE_REPLAY_COUNTER: FieldModel(_ULL, _always, lambda c: c.pcie_replays),
    N.NVML_FI_DEV_NVLINK_LINK_COUNT: FieldModel(_U, _always, lambda c: c.nvlink_links),
    N.NVML_FI_DEV_ECC_SBE_VOL_TOTAL: FieldModel(_ULL, _has_ecc_field, lambda c: c.ecc_corrected),
    N.NVML_FI_DEV_ECC_DBE_VOL_TOTAL: FieldModel(_ULL, _has_ecc_field, lambda c: c.ecc_uncorrected),
    # A few corrected errors from before this boot.
    N.NVML_FI_DEV_ECC_SBE_AGG_TOTAL: FieldModel(_ULL, _has_ecc_field, lambda c: 12 + c.ecc_corrected),
    N.NVML_FI_DEV_ECC_DBE_AGG_TOTAL: FieldModel(_ULL, _has_ecc_field, lambda c: c.ecc_uncorrected),
    # No profile retires pages: Hopper remaps rows instead, and consumer cards have no ECC.
    N.NVML_FI_DEV_RETIRED_SBE: FieldModel(_ULL, _never, lambda c: c.zeros),
    N.NVML_FI_DEV_RETIRED_DBE: FieldModel(_ULL, _never, lambda c: c.zeros),
    N.NVML_FI_DEV_RETIRED_PENDING: FieldModel(_ULL, _never, lambda c: c.zeros),
    N.NVML_FI_DEV_REMAPPED_COR: FieldModel(_ULL, _has_ecc_field, lambda c: c.zeros),
    N.NVML_FI_DEV_REMAPPED_UNC: FieldModel(_ULL, _has_ecc_field, lambda c: c.ecc_uncorrected),
    N.NVML_FI_DEV_REMAPPED_PENDING: FieldModel(_ULL, _has_ecc_field, lambda c: c.zeros),
    N.NVML_FI_DEV_REMAPPED_FAILURE: FieldModel(_ULL, _has_ecc_field, lambda c: c.zeros),
    N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: FieldModel(_ULL, _link, lambda c: c.nvlink_tx_kib_per_link),
    N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: FieldModel(_ULL, _link, lambda c: c.nvlink_rx_kib_per_link),
}
FIELD_COLUMN = {fid: k for k, fid in enumerate(FIELD_MODELS)}  # the column of a timeline's field matrix
# Counters count on within a second, as hardware's do: read twice inside one second of the
# per-second grid (the snapshot's settle is 0.5 s), they must differ, or the rate comes out 0 (and
# the energy over a snapshot 0 Wh).
COUNTING_COLUMNS = np.array(
    [
        FIELD_COLUMN[fid]
        for fid in (
            N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES,
            N.NVML_FI_DEV_PCIE_COUNT_RX_BYTES,
            N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
            N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
            N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION,
        )
    ],
    dtype=np.intp,
)
