"""The simulated library's per-device state and how pynvml reaches it: the name lookup that
hands out C functions, the handles it decodes, and the hooks tests use (failures, hangs,
latency, sleeping GPUs). The C functions themselves are in the ``*_calls`` modules."""

from __future__ import annotations

import ctypes
import math
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pynvml as N

from trayvml.core.clock import Clock
from trayvml.nvml.sim.options import SimSpec
from trayvml.nvml.sim.profiles import MIG_PROFILES, PROFILES, GpuProfile, MigInstance
from trayvml.nvml.sim.scenarios import SCENARIOS, SimProcess
from trayvml.nvml.sim.timeline import Timeline

# Seconds per call with latency=realistic, after MangoHud#2104 (RTX 4090 laptop) and the
# nvidia_gpu_exporter notes: a PCIe throughput read samples for 20 ms.
_REALISTIC_LATENCY_S = {
    "nvmlDeviceGetUtilizationRates": 2.5e-6,
    "nvmlDeviceGetMemoryInfo_v2": 11.6e-6,
    "nvmlDeviceGetFanSpeed": 137e-6,
    "nvmlDeviceGetComputeRunningProcesses_v3": 2.25e-3,
    "nvmlDeviceGetGraphicsRunningProcesses_v3": 2.25e-3,
    "nvmlDeviceGetPcieThroughput": 20e-3,
    # An H200 on driver 580.159.04 (`bench_nvml_tick.py --real`, medians, one tick a second):
    "nvmlDeviceGetProcessUtilization": 2.0e-3,
    "nvmlGpmSampleGet": 0.14e-3,  # 0.128-0.146 ms in two calls of a later session
    "nvmlDeviceGetMigMode": 0.41e-3,
    "nvmlDeviceGetPowerManagementLimit": 0.29e-3,
    "nvmlDeviceGetTotalEnergyConsumption": 4.2e-3,
}
# What a field costs the same H200 beyond the call's own 5 us (each field asked alone, median): the
# energy counter is nearly all of a 19-field batch's 3.7 ms, in the driver's CPU time.
_REALISTIC_FIELD_LATENCY_S = {
    N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION: 4.2e-3,
    N.NVML_FI_DEV_PCIE_REPLAY_COUNTER: 0.31e-3,
    # The two byte counters asked one a second, as the reader did: 0.64-0.72 ms of CPU together in
    # three calls (asked back to back in a hot loop, 0.12-0.18 ms each).
    N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES: 0.33e-3,
    N.NVML_FI_DEV_PCIE_COUNT_RX_BYTES: 0.33e-3,
}
# Long calls the H200's driver spends on the calling thread's CPU (its CPU time equal to the wall
# time), where the others above mostly wait: the energy call took 3.35 ms of both, the PCIe
# throughput call 20.9 ms of wall time and 0.86 of CPU.
_SPENT_ON_THE_CPU = frozenset({"nvmlDeviceGetTotalEnergyConsumption"})
_DEFAULT_LATENCY_S = 5e-6
HOST_PID_MEMORY_BYTES = 2 * 2**30  # what a hostpid= process holds on its simulated GPU
_SLEEP_ABOVE_S = 1e-3  # longer waits block in the driver; shorter ones spin on the CPU

PCI_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)
# A MIG device's handle: (GPU instance id + 1) * this + parent index + 1. By id, not by slot: a
# handle kept after its instance is destroyed must not answer for another one.
MIG_HANDLE_BASE = 0x1_0000


def pointer_value(obj: Any) -> int:
    return ctypes.c_void_p.from_buffer(obj).value or 0


def set_pointer(obj: Any, value: int) -> None:
    ctypes.c_void_p.from_buffer(obj).value = value


def put_string(buffer: Any, size: Any, text: str | bytes) -> int:
    data = text if isinstance(text, bytes) else text.encode()
    if len(data) + 1 > size.value:
        return N.NVML_ERROR_INSUFFICIENT_SIZE
    buffer.value = data
    return N.NVML_SUCCESS


class SimFunction:
    """One C function of the simulated library; pynvml may set ``restype`` on it."""

    __slots__ = ("argtypes", "impl", "lib", "name", "restype")

    def __init__(self, lib: SimulatedNvmlBase, name: str, impl: Callable[..., Any]) -> None:
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


class SimulatedNvmlBase:
    """The state the C functions answer from; ``SimulatedNvml`` adds the functions."""

    def __init__(self, spec: SimSpec, clock: Clock) -> None:
        self.spec = spec
        self.clock = clock
        self.start_s = clock.now_s()
        # The simulated GPUs' own time runs on the monotonic clock, as a real GPU's counters do: the
        # wall clock set back or forward changes only the timestamps the driver answers with.
        self.start_monotonic_s = clock.monotonic_s()
        # Field values are stamped with the wall clock as it is at the call; process utilization
        # samples with the GPU's own time, set to the wall clock when the driver starts and at
        # each resume (resumed): an H100 on 580.159.04 went on stamping them an hour ahead of a
        # wall clock set back an hour (tests/recordings/h100-580-clockstep.probe.txt).
        self.sampling_epoch_s = self.start_s - self.start_monotonic_s
        self.profile_keys = list(spec.gpus)
        self.profiles = [PROFILES[key] for key in spec.gpus]
        self.scenario = SCENARIOS[spec.scenario](spec.seed, self.profiles)
        self._mig_layouts = _mig_layouts(spec, self.profiles)
        self.timelines = [Timeline(i, p, self.scenario) for i, p in enumerate(self.profiles)]
        self.refcount = 0
        self.calls: Counter[str] = Counter()  # calls per C function, for tests
        # function name -> [(GPU index or None for every GPU, return code)]
        self.failures: dict[str, list[tuple[int | None, int]]] = {}
        # field id -> [(GPU index or None, return code)]: that field's own code in a field-value call
        self.field_failures: dict[int, list[tuple[int | None, int]]] = {}
        self.restarted_counters: dict[int, dict[int, int]] = {}  # field id -> GPU -> raw value at restart
        # A timeline series (e.g. "pstate") -> the value every GPU answers for it instead, as a
        # real driver answers NVML_PSTATE_UNKNOWN (32) when it cannot tell.
        self.answered_values: dict[str, int] = {}
        # Field values added into the caller's buffer rather than written over it, as one driver did.
        self.fields_add_into_buffer = False
        # field id -> the value type a field is labelled with (the value itself unchanged), as r545
        # labels the memory temperature DOUBLE; field id -> the raw 8 bytes it answers instead.
        self.field_types: dict[int, int] = {}
        self.field_raw: dict[int, int] = {}
        # nvmlDeviceGetPcieThroughput's answers times this: 1000 as the driver series that was 1000x off.
        self.pcie_throughput_scale = 1
        self.missing_functions: set[str] = set()
        self.latency_s = _REALISTIC_LATENCY_S if spec.realistic_latency else None
        self.latency_waited_s = 0.0  # emulated driver time, for benchmarks
        # Hostile names for tests: a GPU's (by index) as the raw bytes a driver answers, a
        # process's (by PID) as psutil would give it (undecodable bytes surrogate-escaped).
        self.gpu_names: dict[int, bytes] = {}
        self.process_names: dict[int, str] = {}
        # PID -> the SM % nvmlDeviceGetProcessUtilization reports for it, instead of its share of
        # the GPU's: 0 is an idle process (the driver has no sample of it, so it is left out);
        # above 100 the garbage drivers answer at times (0xFFFFFFFF, nvtop's handling).
        self.process_sm_util: dict[int, int] = {}
        # function name -> (from, until) in simulated seconds: the call does not return meanwhile,
        # as a call into a wedged GPU does not.
        self.hangs: dict[str, tuple[float, float]] = dict(spec.hangs)
        self._hang_changed = threading.Event()
        rng = random.Random(spec.seed)
        self.uuids = [f"GPU-{uuid.UUID(int=rng.getrandbits(128), version=4)}" for _ in self.profiles]
        self._functions: dict[str, SimFunction] = {}
        self._handle_index: dict[int, tuple[Any, int]] = {}
        self.calls_on_sleeping_gpus = 0  # device queries that would have woken a runtime-suspended GPU
        self._sysfs_written: dict[Path, str] = {}  # runtime_status files, by what they say now

    # ---- the parts tests and the reader's process lookup use ----
    def resumed(self) -> None:
        """The machine woke from a suspend: the driver sets each GPU's time to the wall clock
        again (open-gpu-kernel-modules: tmrSetCurrentTime at resume)."""
        self.sampling_epoch_s = self.clock.now_s() - self.clock.monotonic_s()

    def sim_time_s(self) -> float:
        if self.spec.at_s is not None:
            return self.spec.at_s
        return self.spec.start_s + (self.clock.monotonic_s() - self.start_monotonic_s) * self.spec.speed

    def frozen_for_s(self) -> float:
        """How long simulated time has stood still (``at=``; 0 while it runs): counters go on
        counting at that second's rate meanwhile (Timeline.field_row)."""
        return self.clock.monotonic_s() - self.start_monotonic_s if self.spec.at_s is not None else 0.0

    def wall_time_s(self, sim_s: float) -> float:
        """The clock's time at simulated second ``sim_s`` (a simulated process's start, as the host would say it)."""
        return self.start_s + (sim_s - self.spec.start_s) / self.spec.speed

    def fail(self, function: str, code: int, gpu: int | None = None) -> None:
        """Make ``function`` return ``code`` (for one GPU, or all) from now on."""
        self.failures.setdefault(function, []).append((gpu, code))

    def answer_value(self, series: str, value: int) -> None:
        """Make the calls answering the timeline's ``series`` (pstate, reasons, fan...) answer ``value``."""
        self.answered_values[series] = value

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
        self.wait_s(self.latency_s.get(name, _DEFAULT_LATENCY_S), spin=name in _SPENT_ON_THE_CPU)

    def wait_fields(self, field_ids: list[int]) -> None:
        """What these fields cost beyond the call (latency=realistic)."""
        if self.latency_s is not None:  # the H200's driver spends it on the CPU (its thread's CPU time)
            self.wait_s(sum(_REALISTIC_FIELD_LATENCY_S.get(fid, 0.0) for fid in field_ids), spin=True)

    def wait_s(self, seconds: float, spin: bool = False) -> None:
        self.latency_waited_s += seconds
        if seconds >= _SLEEP_ABOVE_S and not spin:
            time.sleep(seconds)
            return
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            pass

    def processes(self, gpu: int) -> list[SimProcess]:
        t_s = self.sim_time_s()
        instances = self.mig_instances(gpu) if self.mig_mode(gpu) else None
        found = self.scenario.placed_on_instances(gpu, instances, self.scenario.processes(gpu, t_s))
        if self.process_names:
            found = [replace(p, name=self.process_names.get(p.pid, p.name)) for p in found]
        # hostpid=: this machine's processes, as the driver would list them (the host says the rest)
        found += [SimProcess(pid, "", "", "", HOST_PID_MEMORY_BYTES) for g, pid in self.spec.host_pids if g == gpu]
        return found

    def mig_mode(self, gpu: int) -> bool:
        """MIG mode is on: the profile's, or any GPU whose instances ``mig=`` changes."""
        return bool(self.profiles[gpu].mig_instances) or gpu in self._mig_layouts

    def mig_instances(self, gpu: int) -> tuple[MigInstance, ...]:
        """The GPU's MIG instances at this simulated second."""
        steps = self._mig_layouts.get(gpu)
        if steps is None:
            return self.profiles[gpu].mig_instances
        t_s = self.sim_time_s()
        current = steps[0][1]
        for at_s, layout in steps:
            if t_s >= at_s:
                current = layout
        return current

    def hides(self, process: SimProcess) -> bool:
        return self.spec.other_users_hidden and process.user != self.scenario.user

    # ---- runtime power management (laptop GPUs that sleep=) ----
    def sleeps_at(self, gpu: int, t_s: float) -> bool:
        if not self.spec.sleeps:
            return False
        return any(g == gpu and start_s <= t_s < until_s for g, (start_s, until_s) in self.spec.sleeps)

    def pci_address(self, gpu: int) -> str:
        bus = PCI_BUSES[gpu] if gpu < len(PCI_BUSES) else 0xE0 + gpu
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
        self._sysfs_paths: list[Path] = []
        self._sysfs_root = root
        self.sync_sysfs()

    def sync_sysfs(self) -> None:
        root = getattr(self, "_sysfs_root", None)
        if root is None:
            return
        t_s = self.sim_time_s()
        if len(self._sysfs_paths) != len(self.profiles):  # made once: this runs every sample
            devices = root / "bus" / "pci" / "devices"
            self._sysfs_paths = [
                devices / self.pci_address(k) / "power" / "runtime_status" for k in range(len(self.profiles))
            ]
        for k, (profile, path) in enumerate(zip(self.profiles, self._sysfs_paths, strict=True)):
            status = "suspended" if self.sleeps_at(k, t_s) else ("active" if profile.runtime_pm else "unsupported")
            if self._sysfs_written.get(path) != status:
                path.write_text(status + "\n")
                self._sysfs_written[path] = status

    # ---- name lookup, as ctypes.CDLL does it ----
    def __getattr__(self, name: str) -> SimFunction:
        if name.startswith("_") or name in self.missing_functions:
            raise AttributeError(name)
        function = self._functions.get(name)
        if function is None:
            impl = getattr(type(self), "c_" + name, None)
            if impl is None:
                raise AttributeError(name)
            function = SimFunction(self, name, impl.__get__(self))
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
            index = pointer_value(handle) - 1
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
        if index >= MIG_HANDLE_BASE - 1:
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

    # ---- the GPU behind a handle ----
    def _static(self, handle: Any) -> tuple[int, GpuProfile] | int:
        gpu = self._gpu(handle)
        if isinstance(gpu, int):
            return gpu
        return gpu.gpu, gpu.profile

    # ---- MIG devices ----
    def _mig(self, handle: Any) -> tuple[Timeline, Any] | int | None:
        """(parent timeline, MigInstance) for a MIG device's handle, an error code, or None (not MIG)."""
        value = self._index_of(handle) + 1
        if value < MIG_HANDLE_BASE:
            return None
        parent = self._gpu_by_index(value % MIG_HANDLE_BASE - 1)
        if isinstance(parent, int):
            return parent
        lost_at_s = self.spec.lost_at_s.get(parent.gpu)
        if lost_at_s is not None and self.sim_time_s() >= lost_at_s:
            return N.NVML_ERROR_GPU_IS_LOST  # a MIG device falls off the bus with its board
        instance_id = value // MIG_HANDLE_BASE - 1
        found = next((i for i in self.mig_instances(parent.gpu) if i.gpu_instance_id == instance_id), None)
        # A destroyed instance's handle is no longer valid.
        return (parent, found) if found is not None else N.NVML_ERROR_INVALID_ARGUMENT

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


def _mig_layouts(spec: SimSpec, profiles: list[GpuProfile]) -> dict[int, list[tuple[float, tuple[MigInstance, ...]]]]:
    """Each ``mig=`` GPU's layouts in time order, from its profile's: an instance of a profile the
    layout before had keeps its GPU instance id (so its UUID); a new one takes an id not used yet."""
    layouts: dict[int, list[tuple[float, tuple[MigInstance, ...]]]] = {}
    for gpu, at_s, names in sorted(spec.mig_changes, key=lambda change: (change[0], change[1])):
        steps = layouts.setdefault(gpu, [(-math.inf, profiles[gpu].mig_instances)])
        previous = list(steps[-1][1])
        next_id = max((i.gpu_instance_id for _, layout in steps for i in layout), default=0) + 1
        made = []
        for name in names:
            kept = next((i for i in previous if i.profile == name), None)
            if kept is not None:
                previous.remove(kept)
                made.append(kept)
            else:
                slices, memory = MIG_PROFILES[name]
                made.append(MigInstance(name, next_id, slices, memory))
                next_id += 1
        steps.append((at_s, tuple(made)))
    return layouts
