"""One simulated GPU's per-second values (the device model), computed a chunk at a time."""

from __future__ import annotations

import numpy as np
import pynvml as N

from trayvml.core.units import KIB, MIB
from trayvml.nvml.sim.field_models import COUNTING_COLUMNS, FIELD_MODELS, Chunk
from trayvml.nvml.sim.profiles import GpuProfile
from trayvml.nvml.sim.scenarios import Scenario

CHUNK_S = 600  # seconds of per-second values computed at once
LAG_S = 120  # how far back the temperature's thermal lag looks
_TEMPERATURE_KERNEL = np.exp(-np.arange(LAG_S + 1) / 30.0)
_TEMPERATURE_KERNEL /= _TEMPERATURE_KERNEL.sum()
THERMAL_SLOWDOWN_C = 87.0
THERMAL_SHUTDOWN_C = 92.0
PCIE_COUNTER_WRAP = 2**32  # NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES are 32-bit counters
PCIE_IN_COUNTERS = slice(0, 2)  # the PCIe ones among COUNTING_COLUMNS (then NVLink's and energy's, 64-bit)
REPLAYS_PER_S_AT_FULL_PCIE = 0.2  # a link that needs a look: healthy ones rarely replay

# The GPM metrics the simulation answers, in the column order of a timeline's GPM matrix.
GPM_METRIC_IDS = (
    N.NVML_GPM_METRIC_SM_UTIL,
    N.NVML_GPM_METRIC_SM_OCCUPANCY,
    N.NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    N.NVML_GPM_METRIC_DRAM_BW_UTIL,
    N.NVML_GPM_METRIC_FP64_UTIL,
    N.NVML_GPM_METRIC_FP32_UTIL,
    N.NVML_GPM_METRIC_FP16_UTIL,
    N.NVML_GPM_METRIC_PCIE_TX_PER_SEC,
    N.NVML_GPM_METRIC_PCIE_RX_PER_SEC,
    N.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
    N.NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
)


class Timeline:
    """Per-second values of one simulated GPU, computed a chunk at a time.

    Counters (energy, PCIe and NVLink bytes) are running sums over the per-second grid, so
    they are exact and the same however often, or from which process, they are read; they also
    count on within a second (:meth:`field_row`), so that two readings inside one second give the
    rate, not 0.
    """

    def __init__(self, gpu: int, profile: GpuProfile, scenario: Scenario) -> None:
        self.gpu = gpu
        self.profile = profile
        self.scenario = scenario
        self.i = 0
        self.fraction = 0.0  # how far into second ``i`` the last seek was
        self._reset()

    def _reset(self) -> None:
        self.chunk_start = -CHUNK_S
        self._carry = np.zeros(6)  # energy mJ, PCIe TX B, PCIe RX B, NVLink TX KiB, NVLink RX KiB, PCIe replays
        self._gpm_carry = np.zeros(len(GPM_METRIC_IDS))
        self._last_counted: np.ndarray | None = None  # the byte counters' last row of the chunk before

    def seek(self, t_s: float) -> None:
        second = int(t_s) if t_s > 0 else 0
        self.fraction = min(max(t_s - second, 0.0), 1.0)
        offset = second - self.chunk_start
        if 0 <= offset < CHUNK_S:
            self.i = offset
            return
        if offset < 0:
            self._reset()
        while self.chunk_start + CHUNK_S <= second:
            self._compute(self.chunk_start + CHUNK_S)
        self.i = second - self.chunk_start

    def _compute(self, start: int) -> None:
        p, s, gpu = self.profile, self.scenario, self.gpu
        t_all = np.arange(start - LAG_S, start + CHUNK_S, dtype=float)
        load = s.load(gpu, t_all)
        lagged_util = np.convolve(load.util_gpu, _TEMPERATURE_KERNEL, mode="valid")
        t = t_all[LAG_S:]
        util = load.util_gpu[LAG_S:]

        temperature = p.temperature_idle_c + (p.temperature_load_c - p.temperature_idle_c) * lagged_util / 100
        temperature = temperature + 0.6 * s.noise(gpu, 6, t)
        override = load.temperature_override_c[LAG_S:]
        temperature = np.where(np.isnan(override), temperature, override)
        sm_activity, tensor_activity = (a[LAG_S:] for a in load.activity())
        # A stalled job keeps util at 100 % but burns what its SMs do: near idle.
        drawing = util if load.stalled is None else np.where(load.stalled[LAG_S:], sm_activity, util)
        power_w = p.power_idle_w + (0.93 * p.power_limit_w - p.power_idle_w) * (drawing / 100) ** 1.3
        power_w = np.clip(power_w + 2.0 * s.noise(gpu, 7, t), 0.9 * p.power_idle_w, p.power_limit_w)
        thermal = temperature >= THERMAL_SLOWDOWN_C
        reasons = np.where(util < 1, 0x1, 0) | np.where(thermal, 0x20, 0)
        reasons = reasons | np.where(power_w >= 0.99 * p.power_limit_w, 0x4, 0)
        sm = p.clock_idle_sm_mhz + (p.clock_max_sm_mhz - p.clock_idle_sm_mhz) * np.clip(util / 10, 0, 1)
        sm = np.where(thermal, 0.85 * sm, sm)
        busy = util > 2
        usable = p.memory_total_bytes - p.memory_reserved_bytes
        memory_used = np.clip(load.memory_fraction[LAG_S:], 0, 1) * usable
        pcie_rx = load.pcie_fraction[LAG_S:] * p.pcie_gb_per_s * 1e9
        pcie_tx = 0.4 * pcie_rx
        nvlink = load.nvlink_fraction[LAG_S:] * p.nvlink_links * p.nvlink_link_gb_per_s * 1e9
        replays = REPLAYS_PER_S_AT_FULL_PCIE * load.pcie_fraction[LAG_S:]  # a busy link retries now and then
        counters = np.stack([power_w * 1000, pcie_tx, pcie_rx, nvlink / KIB, 0.97 * nvlink / KIB, replays])
        sums = np.cumsum(counters, axis=1) + self._carry[:, None]
        self._carry = sums[:, -1].copy()

        self.util = np.rint(util).astype(int).tolist()
        self.util_memory = np.rint(load.util_memory[LAG_S:]).astype(int).tolist()
        self.memory_used = memory_used.astype(np.int64).tolist()
        self.temperature = np.rint(temperature).astype(int).tolist()
        self.power_mw = (power_w * 1000).astype(int).tolist()
        self.fan = np.rint(np.clip(30 + (temperature - 40) * 1.6, 30, 100)).astype(int).tolist()
        self.clock_sm = sm.astype(int).tolist()
        self.clock_video = np.minimum(p.clock_max_video_mhz, 0.78 * sm).astype(int).tolist()
        self.clock_memory = np.where(busy, p.clock_max_memory_mhz, 405).tolist()
        self.pstate = np.where(busy, 0, 8).tolist()
        self.reasons = reasons.tolist()
        self.encoder = np.rint(load.encoder[LAG_S:]).astype(int).tolist()
        self.decoder = np.rint(load.decoder[LAG_S:]).astype(int).tolist()
        self.pcie_tx_kb_per_s = (pcie_tx / 1000).astype(int).tolist()
        self.pcie_rx_kb_per_s = (pcie_rx / 1000).astype(int).tolist()
        energy_mj = sums[0].astype(np.int64)
        zeros = np.zeros_like(t)
        links = max(p.nvlink_links, 1)
        chunk = Chunk(
            power_mw=power_w * 1000,
            energy_mj=energy_mj,
            temperature_c=temperature,
            # 32-bit on real drivers (nvml.h: "can be wrapped"): several wraps a second at Gen5.
            pcie_tx_bytes=np.mod(sums[1], PCIE_COUNTER_WRAP),
            pcie_rx_bytes=np.mod(sums[2], PCIE_COUNTER_WRAP),
            nvlink_tx_kib_per_link=sums[3] // links,
            nvlink_rx_kib_per_link=sums[4] // links,
            ecc_corrected=s.ecc_corrected(gpu, t),
            ecc_uncorrected=s.ecc_uncorrected(gpu, t),
            pcie_replays=np.floor(sums[5]),
            nvlink_links=zeros + p.nvlink_links,
            zeros=zeros,
        )
        columns = [model.values(chunk) for model in FIELD_MODELS.values()]
        self.fields = np.stack(columns, axis=1).astype(np.uint64)
        counted = self.fields[:, COUNTING_COLUMNS].astype(np.int64)
        # The first chunk has no second before it: its first second counts at its second's rate.
        before = np.maximum(2 * counted[0] - counted[1], 0) if self._last_counted is None else self._last_counted
        steps = np.diff(counted, axis=0, prepend=before[None, :])  # each second's bytes
        # The PCIe counters wrap at 32 bits: a second's bytes are their difference modulo the wrap.
        steps[:, PCIE_IN_COUNTERS] = np.mod(steps[:, PCIE_IN_COUNTERS], PCIE_COUNTER_WRAP)
        self._counter_steps = steps
        self._last_counted = counted[-1]
        if p.has_gpm:
            dram = np.minimum(load.util_memory[LAG_S:], sm_activity)
            gpm = np.stack(
                [
                    sm_activity,
                    0.55 * sm_activity,
                    tensor_activity,
                    dram,
                    load.fp64_share * sm_activity,
                    load.fp32_share * sm_activity,
                    load.fp16_share * sm_activity,
                    pcie_tx / MIB,
                    pcie_rx / MIB,
                    0.97 * nvlink / MIB,
                    nvlink / MIB,
                ],
                axis=1,
            )
            self.gpm_now = gpm
            self.gpm_sums = np.cumsum(gpm, axis=0) + self._gpm_carry
            self._gpm_carry = self.gpm_sums[-1].copy()
        self.chunk_start = start

    def gpm_snapshot(self) -> tuple[float, np.ndarray, np.ndarray]:
        """(simulated second, GPM running sums, this second's values): what a GPM sample holds."""
        return float(self.chunk_start + self.i), self.gpm_sums[self.i].copy(), self.gpm_now[self.i].copy()

    def field_row(self, frozen_for_s: float = 0.0) -> np.ndarray:
        """Every field's value at the last seek: counters interpolated within their second
        (monotonic, and equal to the grid's running sum at the second's end), the rest per second.

        ``frozen_for_s``: how long simulated time has stood still (``at=``); the counters go on
        counting at that second's rate meanwhile, so that a frozen GPU's rates are the second's
        rates and not 0.
        """
        row = self.fields[self.i].copy()
        steps = self._counter_steps[self.i]
        shift = np.floor((max(frozen_for_s, 0.0) - (1.0 - self.fraction)) * steps).astype(np.int64)
        counters = row[COUNTING_COLUMNS].astype(np.int64) + shift
        counters[PCIE_IN_COUNTERS] = np.mod(counters[PCIE_IN_COUNTERS], PCIE_COUNTER_WRAP)
        row[COUNTING_COLUMNS] = counters.astype(np.uint64)
        return row
