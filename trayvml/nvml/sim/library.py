"""A stand-in for the NVML shared library, installed as ``pynvml.nvmlLib``.

pynvml looks each C function up by name on ``nvmlLib`` and calls it with ctypes objects
passed by reference, expecting an ``nvmlReturn_t`` back. This object answers the same way,
so trayvml's reader, its tests, gpustat and nvitop all run unchanged on simulated GPUs.
A function it does not define raises AttributeError, which pynvml turns into
``NVMLError_FunctionNotFound`` exactly as with an old driver.
"""

from __future__ import annotations

import ctypes
import math
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pynvml as N

from trayvml.core.clock import Clock
from trayvml.core.units import KIB, MIB
from trayvml.nvml import binding
from trayvml.nvml.fields import field_view
from trayvml.nvml.gpm import metrics_view
from trayvml.nvml.sim.options import SimSpec
from trayvml.nvml.sim.profiles import PROFILES, GpuProfile
from trayvml.nvml.sim.scenarios import SCENARIOS, Scenario, SimProcess

CHUNK_S = 600  # seconds of per-second values computed at once
LAG_S = 120  # how far back the temperature's thermal lag looks
_TEMPERATURE_KERNEL = np.exp(-np.arange(LAG_S + 1) / 30.0)
_TEMPERATURE_KERNEL /= _TEMPERATURE_KERNEL.sum()
THERMAL_SLOWDOWN_C = 87.0
THERMAL_SHUTDOWN_C = 92.0
_XID_LOST = 79  # "GPU has fallen off the bus"
REPLAYS_PER_S_AT_FULL_PCIE = 0.2  # a link that needs a look: healthy ones rarely replay

_NVML_FAULT_CODES = {
    "missing": N.NVML_ERROR_LIBRARY_NOT_FOUND,
    "not-loaded": N.NVML_ERROR_DRIVER_NOT_LOADED,
    "mismatch": N.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
    "no-permission": N.NVML_ERROR_NO_PERMISSION,
}

# Seconds per call with latency=realistic, after MangoHud#2104 (RTX 4090 laptop) and the
# nvidia_gpu_exporter notes: a PCIe throughput read samples for 20 ms.
_REALISTIC_LATENCY_S = {
    "nvmlDeviceGetUtilizationRates": 2.5e-6,
    "nvmlDeviceGetMemoryInfo_v2": 11.6e-6,
    "nvmlDeviceGetFanSpeed": 137e-6,
    "nvmlDeviceGetComputeRunningProcesses_v3": 2.25e-3,
    "nvmlDeviceGetGraphicsRunningProcesses_v3": 2.25e-3,
    "nvmlDeviceGetPcieThroughput": 20e-3,
}
_DEFAULT_LATENCY_S = 5e-6
_SLEEP_ABOVE_S = 1e-3  # longer waits block in the driver; shorter ones spin on the CPU

_PCI_DEVICE_IDS = {"h100": 0x233010DE, "h100-mig": 0x233010DE, "rtx4090": 0x268410DE, "laptop": 0x27A010DE}
_PCI_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)

_U, _ULL = N.NVML_VALUE_TYPE_UNSIGNED_INT, N.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG


def _has_power(p: GpuProfile) -> bool:
    return p.has_power


@dataclass(frozen=True)
class _Chunk:
    """A chunk's per-second series that field values are made of (counters as running sums)."""

    power_mw: np.ndarray
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
    values: Callable[[_Chunk], np.ndarray]


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
    # HBM runs a little warmer than the die's sensor.
    N.NVML_FI_DEV_MEMORY_TEMP: FieldModel(_U, lambda p, s: p.has_memory_temperature, lambda c: c.temperature_c + 6),
    N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES: FieldModel(_ULL, lambda p, s: p.has_pcie_counters, lambda c: c.pcie_tx_bytes),
    N.NVML_FI_DEV_PCIE_COUNT_RX_BYTES: FieldModel(_ULL, lambda p, s: p.has_pcie_counters, lambda c: c.pcie_rx_bytes),
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
_COLUMN = {fid: k for k, fid in enumerate(FIELD_MODELS)}  # the column of a timeline's field matrix

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
_GPM_COLUMN = {metric: k for k, metric in enumerate(GPM_METRIC_IDS)}
_GPM_NVLINK = {N.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, N.NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC}
_GPM_SAMPLE_BASE = 0x6000_0000  # sample "pointers" handed out by nvmlGpmSampleAlloc
_MIG_HANDLE_BASE = 0x1_0000  # a MIG device's handle: (instance + 1) * this + parent index + 1
_MIG_DEVICE_SLOTS = 7  # nvmlDeviceGetMaxMigDeviceCount on an H100


@dataclass
class _GpmSample:
    """What a GPM sample buffer holds once nvmlGpmSampleGet filled it."""

    gpu: int = -1  # -1: allocated, never filled
    instance: int | None = None  # the GPU instance id for nvmlGpmMigSampleGet
    second: float = 0.0
    sums: np.ndarray | None = None
    now: np.ndarray | None = None


@dataclass(frozen=True)
class _FieldPlan:
    """How to answer one list of field ids on one profile: a column, code and type per field."""

    columns: np.ndarray
    codes: np.ndarray
    types: np.ndarray


def _pointer_value(obj: Any) -> int:
    return ctypes.c_void_p.from_buffer(obj).value or 0


def _set_pointer(obj: Any, value: int) -> None:
    ctypes.c_void_p.from_buffer(obj).value = value


def _put_string(buffer: Any, size: Any, text: str | bytes) -> int:
    data = text if isinstance(text, bytes) else text.encode()
    if len(data) + 1 > size.value:
        return N.NVML_ERROR_INSUFFICIENT_SIZE
    buffer.value = data
    return N.NVML_SUCCESS


class Timeline:
    """Per-second values of one simulated GPU, computed a chunk at a time.

    Counters (energy, PCIe and NVLink bytes) are running sums over the per-second grid, so
    they are exact and the same however often, or from which process, they are read.
    """

    def __init__(self, gpu: int, profile: GpuProfile, scenario: Scenario) -> None:
        self.gpu = gpu
        self.profile = profile
        self.scenario = scenario
        self.i = 0
        self._reset()

    def _reset(self) -> None:
        self.chunk_start = -CHUNK_S
        self._carry = np.zeros(6)  # energy mJ, PCIe TX B, PCIe RX B, NVLink TX KiB, NVLink RX KiB, PCIe replays
        self._gpm_carry = np.zeros(len(GPM_METRIC_IDS))

    def seek(self, t_s: float) -> None:
        second = int(t_s) if t_s > 0 else 0
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
        self.energy_mj = sums[0].astype(np.int64).tolist()
        zeros = np.zeros_like(t)
        links = max(p.nvlink_links, 1)
        chunk = _Chunk(
            power_mw=power_w * 1000,
            temperature_c=temperature,
            pcie_tx_bytes=sums[1],
            pcie_rx_bytes=sums[2],
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


def _per_second(values: str, supported: Callable[[GpuProfile], bool] = lambda p: True) -> Callable[..., int]:
    """A C function ``f(device, value*)`` answering with the timeline's ``values`` at this second."""

    def impl(self: SimulatedNvml, handle: Any, ref: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        if not supported(g.profile):
            return N.NVML_ERROR_NOT_SUPPORTED
        ref._obj.value = getattr(g, values)[g.i]
        return N.NVML_SUCCESS

    return impl


class _SimFunction:
    """One C function of the simulated library; pynvml may set ``restype`` on it."""

    __slots__ = ("argtypes", "impl", "lib", "name", "restype")

    def __init__(self, lib: SimulatedNvml, name: str, impl: Callable[..., Any]) -> None:
        self.lib = lib
        self.name = name
        self.impl = impl
        self.restype: Any = None
        self.argtypes: Any = None

    def __call__(self, *args: Any) -> Any:
        lib = self.lib
        lib.calls[self.name] += 1
        if lib.failures:
            code = lib.injected_failure(self.name, args)
            if code is not None:
                return code
        if lib.hangs:
            lib.wait_out_hang(self.name)
        if lib.latency_s:
            lib.wait(self.name)
        return self.impl(*args)


class SimulatedNvml:
    def __init__(self, spec: SimSpec, clock: Clock) -> None:
        self.spec = spec
        self.clock = clock
        self.start_s = clock.now_s()
        self.profile_keys = list(spec.gpus)
        self.profiles = [PROFILES[key] for key in spec.gpus]
        self.scenario = SCENARIOS[spec.scenario](spec.seed, self.profiles)
        self.timelines = [Timeline(i, p, self.scenario) for i, p in enumerate(self.profiles)]
        self.refcount = 0
        self.calls: Counter[str] = Counter()  # calls per C function, for tests
        # function name -> [(GPU index or None for every GPU, return code)]
        self.failures: dict[str, list[tuple[int | None, int]]] = {}
        # field id -> [(GPU index or None, return code)]: that field's own code in a field-value call
        self.field_failures: dict[int, list[tuple[int | None, int]]] = {}
        self.restarted_counters: dict[int, dict[int, int]] = {}  # field id -> GPU -> raw value at restart
        self.missing_functions: set[str] = set()
        self.latency_s = _REALISTIC_LATENCY_S if spec.realistic_latency else None
        self.latency_waited_s = 0.0  # emulated driver time, for benchmarks
        # Hostile names for tests: a GPU's (by index) as the raw bytes a driver answers, a
        # process's (by PID) as psutil would give it (undecodable bytes surrogate-escaped).
        self.gpu_names: dict[int, bytes] = {}
        self.process_names: dict[int, str] = {}
        # function name -> (from, until) in simulated seconds: the call does not return meanwhile,
        # as a call into a wedged GPU does not.
        self.hangs: dict[str, tuple[float, float]] = dict(spec.hangs)
        self._hang_changed = threading.Event()
        self._event_sets: dict[int, tuple[set[int], list[int]]] = {}  # id -> (GPUs, delivered)
        xids = list(self.scenario.xid_events())
        xids += [(at_s, gpu, _XID_LOST) for gpu, at_s in spec.lost_at_s.items()]
        self._xid_events = sorted(xids)
        rng = random.Random(spec.seed)
        self.uuids = [f"GPU-{uuid.UUID(int=rng.getrandbits(128), version=4)}" for _ in self.profiles]
        self._functions: dict[str, _SimFunction] = {}
        self._plans: dict[tuple[str, bytes, bytes], _FieldPlan] = {}
        self._handle_index: dict[int, tuple[Any, int]] = {}
        self.calls_on_sleeping_gpus = 0  # device queries that would have woken a runtime-suspended GPU
        self._sysfs_written: dict[Path, str] = {}  # runtime_status files, by what they say now
        self.gpm_samples: dict[int, _GpmSample] = {}  # allocated GPM buffers, by the pointer handed out
        self._next_gpm_sample = _GPM_SAMPLE_BASE
        self._gpm_plans: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    # ---- the parts tests and the reader's process lookup use ----
    def sim_time_s(self) -> float:
        if self.spec.at_s is not None:
            return self.spec.at_s
        return self.spec.start_s + (self.clock.now_s() - self.start_s) * self.spec.speed

    def fail(self, function: str, code: int, gpu: int | None = None) -> None:
        """Make ``function`` return ``code`` (for one GPU, or all) from now on."""
        self.failures.setdefault(function, []).append((gpu, code))

    def restart_counter(self, field_id: int) -> None:
        """The counter ``field_id`` starts again from 0 at its next read (a wrap, or a driver reload)."""
        self.restarted_counters[field_id] = {}

    def fail_field(self, field_id: int, code: int, gpu: int | None = None) -> None:
        """Make the field ``field_id`` answer ``code`` (for one GPU, or all) from now on."""
        self.field_failures.setdefault(field_id, []).append((gpu, code))

    def hang(self, function: str) -> None:
        """Make ``function`` block from now on, until ``release``."""
        self.hangs[function] = (-math.inf, math.inf)

    def release(self, function: str) -> None:
        self.hangs.pop(function, None)
        self._hang_changed.set()

    def wait_out_hang(self, name: str) -> None:
        while (window := self.hangs.get(name)) is not None and window[0] <= self.sim_time_s() < window[1]:
            # Polled as well as woken: a simulated clock moving past the window's end ends it too.
            self._hang_changed.wait(0.05)
            self._hang_changed.clear()

    def injected_failure(self, name: str, args: tuple) -> int | None:
        for gpu, code in self.failures.get(name, ()):
            if gpu is None or (args and self._index_of(args[0]) == gpu):
                return code
        return None

    def wait(self, name: str) -> None:
        assert self.latency_s is not None
        seconds = self.latency_s.get(name, _DEFAULT_LATENCY_S)
        self.latency_waited_s += seconds
        if seconds >= _SLEEP_ABOVE_S:
            time.sleep(seconds)
            return
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            pass

    def processes(self, gpu: int) -> list[SimProcess]:
        t_s = self.sim_time_s()
        found = self.scenario.placed_on_instances(gpu, t_s, self.scenario.processes(gpu, t_s))
        if self.process_names:
            found = [replace(p, name=self.process_names.get(p.pid, p.name)) for p in found]
        return found

    def hides(self, process: SimProcess) -> bool:
        return self.spec.other_users_hidden and process.user != self.scenario.user

    # ---- runtime power management (laptop GPUs that sleep=) ----
    def sleeps_at(self, gpu: int, t_s: float) -> bool:
        if not self.spec.sleeps:
            return False
        return any(g == gpu and start_s <= t_s < until_s for g, (start_s, until_s) in self.spec.sleeps)

    def pci_address(self, gpu: int) -> str:
        bus = _PCI_BUSES[gpu] if gpu < len(_PCI_BUSES) else 0xE0 + gpu
        return f"0000:{bus:02x}:00.0"

    def write_sysfs(self, root: Path) -> None:
        """A fake ``/sys/bus/pci/devices`` with each GPU (and an Intel iGPU beside them, as on a
        laptop); ``sync_sysfs`` keeps each runtime_status current."""
        devices = root / "bus" / "pci" / "devices"
        functions = [("0000:00:02.0", "0x8086", "0x030000", "auto")]
        functions += [
            (self.pci_address(k), "0x10de", "0x030200", "auto" if p.runtime_pm else "on")
            for k, p in enumerate(self.profiles)
        ]
        for address, vendor, pci_class, control in functions:
            power = devices / address / "power"
            power.mkdir(parents=True, exist_ok=True)
            (devices / address / "vendor").write_text(vendor + "\n")
            (devices / address / "class").write_text(pci_class + "\n")
            (power / "control").write_text(control + "\n")
        self._sysfs_written = {}
        self._sysfs_root = root
        self.sync_sysfs()

    def sync_sysfs(self) -> None:
        root = getattr(self, "_sysfs_root", None)
        if root is None:
            return
        t_s = self.sim_time_s()
        for k, profile in enumerate(self.profiles):
            status = "suspended" if self.sleeps_at(k, t_s) else ("active" if profile.runtime_pm else "unsupported")
            path = root / "bus" / "pci" / "devices" / self.pci_address(k) / "power" / "runtime_status"
            if self._sysfs_written.get(path) != status:
                path.write_text(status + "\n")
                self._sysfs_written[path] = status

    # ---- name lookup, as ctypes.CDLL does it ----
    def __getattr__(self, name: str) -> _SimFunction:
        if name.startswith("_") or name in self.missing_functions:
            raise AttributeError(name)
        function = self._functions.get(name)
        if function is None:
            impl = getattr(type(self), "c_" + name, None)
            if impl is None:
                raise AttributeError(name)
            function = _SimFunction(self, name, impl.__get__(self))
            self._functions[name] = function
        return function

    # ---- helpers ----
    def _index_of(self, handle: Any) -> int:
        # Callers pass back the handle objects they were given: remember those by identity
        # (holding them, so the identity stays theirs), and decode anything else.
        known = self._handle_index.get(id(handle))
        if known is not None:
            return known[1]
        try:
            index = _pointer_value(handle) - 1
        except TypeError:
            return -1
        if len(self._handle_index) > 4096:  # tools that fetch new handles every query
            self._handle_index.clear()
        self._handle_index[id(handle)] = (handle, index)
        return index

    def _gpu(self, handle: Any, wakes: bool = True) -> Timeline | int:
        if not self.refcount:
            return N.NVML_ERROR_UNINITIALIZED
        index = self._index_of(handle)
        if index >= _MIG_HANDLE_BASE - 1:
            # A MIG device answers its memory, processes and names (below); whole-board metrics
            # (temperature, power, clocks, fields) are the parent GPU's.
            return N.NVML_ERROR_NOT_SUPPORTED
        if not 0 <= index < len(self.timelines):
            return N.NVML_ERROR_INVALID_ARGUMENT
        t_s = self.sim_time_s()
        if wakes and self.sleeps_at(index, t_s):
            # On a real laptop this call would wake the GPU (5-25 W): tests count them.
            self.calls_on_sleeping_gpus += 1
        lost_at_s = self.spec.lost_at_s.get(index)
        if lost_at_s is not None and t_s >= lost_at_s:
            return N.NVML_ERROR_GPU_IS_LOST
        timeline = self.timelines[index]
        timeline.seek(t_s)
        return timeline

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
        return _put_string(buffer, size, "610.43.01")

    def c_nvmlSystemGetNVMLVersion(self, buffer: Any, size: Any) -> int:
        return _put_string(buffer, size, "13.610.43.01")

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
        _set_pointer(ref._obj, index.value + 1)
        return N.NVML_SUCCESS

    # ---- static facts ----
    def _static(self, handle: Any) -> tuple[int, GpuProfile] | int:
        gpu = self._gpu(handle)
        if isinstance(gpu, int):
            return gpu
        return gpu.gpu, gpu.profile

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
                mig
                if isinstance(mig, int)
                else _put_string(buffer, size, f"{mig[0].profile.name} MIG {mig[1].profile}")
            )
        found = self._static(handle)
        if isinstance(found, int):
            return found
        return _put_string(buffer, size, self.gpu_names.get(found[0], found[1].name))

    def c_nvmlDeviceGetUUID(self, handle: Any, buffer: Any, size: Any) -> int:
        mig = self._mig(handle)
        if mig is not None:
            if isinstance(mig, int):
                return mig
            parent_uuid = self.uuids[mig[0].gpu].removeprefix("GPU-")
            return _put_string(buffer, size, f"MIG-{uuid.uuid5(uuid.UUID(parent_uuid), str(mig[1].gpu_instance_id))}")
        found = self._static(handle)
        return found if isinstance(found, int) else _put_string(buffer, size, self.uuids[found[0]])

    def c_nvmlDeviceGetSerial(self, handle: Any, buffer: Any, size: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        index, profile = found
        if not profile.board_serial:
            return N.NVML_ERROR_NOT_SUPPORTED
        return _put_string(buffer, size, str(int(profile.board_serial) + index))

    def c_nvmlDeviceGetVbiosVersion(self, handle: Any, buffer: Any, size: Any) -> int:
        found = self._static(handle)
        return found if isinstance(found, int) else _put_string(buffer, size, found[1].vbios_version)

    def c_nvmlDeviceGetPciInfo_v3(self, handle: Any, ref: Any) -> int:
        # Answered from what the driver knows of the PCI function: assumed not to wake a sleeping GPU.
        found = self._gpu(handle, wakes=False)
        if isinstance(found, int):
            return found
        index = found.gpu
        bus = _PCI_BUSES[index] if index < len(_PCI_BUSES) else 0xE0 + index
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
        current._obj.value = pending._obj.value = 1 if found[1].mig_instances else 0
        return N.NVML_SUCCESS

    # ---- MIG devices ----
    def _mig(self, handle: Any) -> tuple[Timeline, Any] | int | None:
        """(parent timeline, MigInstance) for a MIG device's handle, an error code, or None (not MIG)."""
        value = self._index_of(handle) + 1
        if value < _MIG_HANDLE_BASE:
            return None
        parent = self._gpu_by_index(value % _MIG_HANDLE_BASE - 1)
        if isinstance(parent, int):
            return parent
        instances = parent.profile.mig_instances
        slot = value // _MIG_HANDLE_BASE - 1
        return (parent, instances[slot]) if slot < len(instances) else N.NVML_ERROR_INVALID_ARGUMENT

    def _gpu_by_index(self, index: int) -> Timeline | int:
        if not self.refcount:
            return N.NVML_ERROR_UNINITIALIZED
        if not 0 <= index < len(self.timelines):
            return N.NVML_ERROR_INVALID_ARGUMENT
        timeline = self.timelines[index]
        timeline.seek(self.sim_time_s())
        return timeline

    def _instance_used(self, gpu: int, instance: int) -> int:
        return sum(p.memory_bytes for p in self.processes(gpu) if p.gpu_instance == instance)

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
        if not profile.mig_instances:
            return N.NVML_ERROR_NOT_SUPPORTED if not profile.mig_capable else N.NVML_ERROR_INVALID_ARGUMENT
        if index.value >= len(profile.mig_instances):
            return N.NVML_ERROR_NOT_FOUND
        _set_pointer(ref._obj, (index.value + 1) * _MIG_HANDLE_BASE + gpu + 1)
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
        _set_pointer(ref._obj, mig[0].gpu + 1)
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
        if g.profile.mig_instances:  # as on real GPUs: no utilization in MIG mode (use GPM)
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
        m = ref._obj
        used = g.memory_used[g.i]
        if p.mig_instances:  # the board's memory in use is what its instances use
            used = sum(self._instance_used(g.gpu, i.gpu_instance_id) for i in p.mig_instances)
        m.total = p.memory_total_bytes
        if v2:
            m.reserved = p.memory_reserved_bytes
            m.used = used
        else:  # v1 counts the driver's reservation as used, as the real v1 call does
            used += p.memory_reserved_bytes
            m.used = used
        m.free = p.memory_total_bytes - p.memory_reserved_bytes - (m.used - (p.memory_reserved_bytes if not v2 else 0))
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

    # One value of the GPU's per-second timeline, or NOT_SUPPORTED where its profile lacks it.
    c_nvmlDeviceGetFanSpeed = _per_second("fan", lambda p: p.has_fan)
    c_nvmlDeviceGetPowerUsage = _per_second("power_mw", _has_power)
    c_nvmlDeviceGetTotalEnergyConsumption = _per_second("energy_mj", _has_power)
    c_nvmlDeviceGetPerformanceState = _per_second("pstate")
    c_nvmlDeviceGetCurrentClocksEventReasons = _per_second("reasons")
    c_nvmlDeviceGetCurrentClocksThrottleReasons = _per_second("reasons")  # its name before driver 535

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
        ref._obj.value = values[g.i]
        return N.NVML_SUCCESS

    # ---- field values ----
    def _field_plan(self, profile: GpuProfile, fids: np.ndarray, scopes: np.ndarray) -> _FieldPlan:
        key = (profile.key, fids.tobytes(), scopes.tobytes())
        plan = self._plans.get(key)
        if plan is None:
            columns, codes, types = [], [], []
            for fid, scope in zip(fids.tolist(), scopes.tolist(), strict=True):
                model = FIELD_MODELS.get(fid)
                supported = model is not None and model.supported(profile, scope)
                columns.append(_COLUMN[fid] if supported else 0)
                codes.append(N.NVML_SUCCESS if supported else N.NVML_ERROR_NOT_SUPPORTED)
                types.append(model.value_type if model is not None and supported else 0)
            plan = _FieldPlan(np.array(columns, dtype=np.intp), np.array(codes), np.array(types))
            self._plans[key] = plan
        return plan

    def c_nvmlDeviceGetFieldValues(self, handle: Any, count: Any, values: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        view = field_view(values._obj, count.value)
        plan = self._field_plan(g.profile, view["fieldId"], view["scopeId"])
        view["timestamp"] = int(self.clock.now_s() * 1e6)
        view["nvmlReturn"] = plan.codes
        view["valueType"] = plan.types
        view["value"] = g.fields[g.i][plan.columns]
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

    # ---- processes ----
    def _running(self, handle: Any, count: Any, array: Any, kind: str) -> int:
        mig = self._mig(handle)
        if isinstance(mig, int):
            return mig
        g = self._gpu(handle) if mig is None else mig[0]
        if isinstance(g, int):
            return g
        procs = [p for p in self.processes(g.gpu) if p.kind == kind]
        if mig is not None:  # a MIG device lists its own instance's processes; the parent, all
            procs = [p for p in procs if p.gpu_instance == mig[1].gpu_instance_id]
        capacity = count._obj
        if array is None or capacity.value < len(procs):
            capacity.value = len(procs)
            return N.NVML_ERROR_INSUFFICIENT_SIZE if procs else N.NVML_SUCCESS
        for k, proc in enumerate(procs):
            entry = array[k]
            entry.pid = proc.pid
            hidden = self.hides(proc)
            entry.usedGpuMemory = N.NVML_VALUE_NOT_AVAILABLE_ulonglong.value if hidden else proc.memory_bytes
            entry.gpuInstanceId = proc.gpu_instance if proc.gpu_instance >= 0 else 0xFFFFFFFF
            entry.computeInstanceId = 0 if proc.gpu_instance >= 0 else 0xFFFFFFFF
        capacity.value = len(procs)
        return N.NVML_SUCCESS

    def c_nvmlDeviceGetComputeRunningProcesses_v3(self, handle: Any, count: Any, array: Any) -> int:
        return self._running(handle, count, array, "compute")

    def c_nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: Any, count: Any, array: Any) -> int:
        return self._running(handle, count, array, "graphics")

    def c_nvmlDeviceGetProcessUtilization(self, handle: Any, array: Any, count: Any, last_seen_us: Any) -> int:
        if self._mig(handle) is not None:
            return N.NVML_ERROR_NOT_SUPPORTED  # as NVML: not under MIG
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        if g.profile.mig_instances:
            return N.NVML_ERROR_NOT_SUPPORTED
        procs = self.processes(g.gpu)
        if not procs:
            return N.NVML_ERROR_NOT_FOUND  # no samples since the last-seen timestamp
        capacity = count._obj
        if array is None or capacity.value < len(procs):
            capacity.value = len(procs)
            return N.NVML_ERROR_INSUFFICIENT_SIZE
        # A display server takes a sliver; the rest of the GPU's utilization goes to the compute
        # processes by their memory (a stand-in: real shares come from the driver's sampling).
        util = g.util[g.i]
        compute = [p for p in procs if p.kind == "compute"]
        memory = sum(p.memory_bytes for p in compute) or 1
        now_us = int(self.clock.now_s() * 1e6)
        for k, proc in enumerate(procs):
            entry = array[k]
            entry.pid, entry.timeStamp = proc.pid, now_us
            share = proc.memory_bytes / memory if proc.kind == "compute" else 0.0
            entry.smUtil = min(util, 1) if proc.kind != "compute" else round(max(util - 1, 0) * share)
            entry.memUtil = entry.encUtil = entry.decUtil = 0
        capacity.value = len(procs)
        return N.NVML_SUCCESS

    # Older drivers' variants: pynvml reads them into a struct with the same fields.
    c_nvmlDeviceGetComputeRunningProcesses_v2 = c_nvmlDeviceGetComputeRunningProcesses_v3
    c_nvmlDeviceGetGraphicsRunningProcesses_v2 = c_nvmlDeviceGetGraphicsRunningProcesses_v3

    # ---- GPM (Hopper and newer): activity from two samples ----
    def c_nvmlGpmQueryDeviceSupport(self, handle: Any, ref: Any) -> int:
        found = self._static(handle)
        if isinstance(found, int):
            return found
        support = ref._obj
        if support.version != N.NVML_GPM_SUPPORT_VERSION:
            return N.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        support.isSupportedDevice = 1 if found[1].has_gpm else 0
        return N.NVML_SUCCESS

    def c_nvmlGpmSampleAlloc(self, ref: Any) -> int:
        if not self.refcount:
            return N.NVML_ERROR_UNINITIALIZED
        self._next_gpm_sample += 0x10
        self.gpm_samples[self._next_gpm_sample] = _GpmSample()
        _set_pointer(ref._obj, self._next_gpm_sample)
        return N.NVML_SUCCESS

    def c_nvmlGpmSampleFree(self, sample: Any) -> int:
        if self.gpm_samples.pop(_pointer_value(sample), None) is None:
            return N.NVML_ERROR_INVALID_ARGUMENT
        return N.NVML_SUCCESS

    def _gpm_fill(self, handle: Any, sample: Any, instance: int | None) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        buffer = self.gpm_samples.get(_pointer_value(sample))
        if buffer is None:
            return N.NVML_ERROR_INVALID_ARGUMENT
        if not g.profile.has_gpm:
            return N.NVML_ERROR_NOT_SUPPORTED
        buffer.gpu, buffer.instance = g.gpu, instance
        buffer.second, buffer.sums, buffer.now = g.gpm_snapshot()
        return N.NVML_SUCCESS

    def c_nvmlGpmSampleGet(self, handle: Any, sample: Any) -> int:
        return self._gpm_fill(handle, sample, None)

    def c_nvmlGpmMigSampleGet(self, handle: Any, instance: Any, sample: Any) -> int:
        return self._gpm_fill(handle, sample, instance if isinstance(instance, int) else instance.value)

    def c_nvmlGpmMetricsGet(self, ref: Any) -> int:
        request = ref._obj
        if request.version != N.NVML_GPM_METRICS_GET_VERSION:
            return N.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        if not self.refcount:
            return N.NVML_ERROR_UNINITIALIZED
        first = self.gpm_samples.get(ctypes.cast(request.sample1, ctypes.c_void_p).value or 0)
        second = self.gpm_samples.get(ctypes.cast(request.sample2, ctypes.c_void_p).value or 0)
        count = request.numMetrics
        if first is None or second is None or first.sums is None or second.sums is None or second.now is None:
            return N.NVML_ERROR_INVALID_ARGUMENT
        if (first.gpu, first.instance) != (second.gpu, second.instance) or not 0 < count <= N.NVML_GPM_METRIC_MAX:
            return N.NVML_ERROR_INVALID_ARGUMENT
        elapsed_s = second.second - first.second
        # Averages over the time between the samples; within one simulated second, that second's.
        values = (second.sums - first.sums) / elapsed_s if elapsed_s > 0 else second.now
        if second.instance is not None:  # a MIG instance sees its share of the SMs' work
            values = values * self._instance_share(second.gpu, second.instance)
        view = metrics_view(request, count)
        ids = view["metricId"]
        key = (second.gpu, ids.tobytes())
        plan = self._gpm_plans.get(key)
        if plan is None:  # which column answers each metric, and which are not simulated
            links = self.profiles[second.gpu].nvlink_links
            answered = [int(m) in _GPM_COLUMN and (links or int(m) not in _GPM_NVLINK) for m in ids.tolist()]
            columns = np.array([_GPM_COLUMN[int(m)] if ok else 0 for m, ok in zip(ids.tolist(), answered, strict=True)])
            codes = np.where(answered, N.NVML_SUCCESS, N.NVML_ERROR_NOT_SUPPORTED)
            plan = self._gpm_plans[key] = (columns, codes, np.array(answered))
        columns, codes, known = plan
        view["nvmlReturn"] = codes
        view["value"] = np.where(known, values[columns], 0.0)
        return N.NVML_SUCCESS

    def _instance_share(self, gpu: int, instance: int) -> float:
        """How busy a MIG instance is, relative to the board's activity: the scenario's job runs in
        the first instance, the inference server in the second is half as busy, the third idles."""
        ids = [i.gpu_instance_id for i in self.profiles[gpu].mig_instances]
        return {0: 1.0, 1: 0.5}.get(ids.index(instance), 0.0) if instance in ids else 0.0

    # ---- events (XID errors) ----
    def c_nvmlEventSetCreate(self, ref: Any) -> int:
        if not self.refcount:
            return N.NVML_ERROR_UNINITIALIZED
        set_id = len(self._event_sets) + 1
        self._event_sets[set_id] = (set(), [0])
        _set_pointer(ref._obj, set_id)
        return N.NVML_SUCCESS

    def c_nvmlDeviceRegisterEvents(self, handle: Any, event_types: Any, event_set: Any) -> int:
        g = self._gpu(handle)
        if isinstance(g, int):
            return g
        entry = self._event_sets.get(_pointer_value(event_set))
        if entry is None:
            return N.NVML_ERROR_INVALID_ARGUMENT
        if event_types.value & N.nvmlEventTypeXidCriticalError:
            entry[0].add(g.gpu)
        return N.NVML_SUCCESS

    def c_nvmlEventSetWait_v2(self, event_set: Any, ref: Any, timeout_ms: Any) -> int:
        entry = self._event_sets.get(_pointer_value(event_set))
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
        self._event_sets.pop(_pointer_value(event_set), None)
        return N.NVML_SUCCESS


def install(library: SimulatedNvml) -> None:
    """Put ``library`` beneath pynvml, in place of libnvidia-ml."""
    binding.install_library(library)


def installed() -> Any:
    """What sits beneath pynvml now: a SimulatedNvml, the real library, or None."""
    return binding.installed_library()


def uninstall() -> None:
    binding.install_library(None)
