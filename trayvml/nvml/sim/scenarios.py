"""What simulated GPUs are doing over time.

A scenario answers, for one GPU and an array of simulated seconds, how busy it is; the
simulated library turns that into power, temperature, clocks and counters. Everything is a
pure function of (seed, GPU, time), so two processes simulating the same spec at the same
time see the same values, and a test can jump 12 hours ahead.
"""

from __future__ import annotations

import getpass
import random
from dataclasses import dataclass, replace

import numpy as np

from trayvml.core.units import GIB, MIB
from trayvml.nvml.sim.profiles import GpuProfile, MigInstance

# Simulated PIDs sit above Linux's largest pid_max (2**22), so they never name a real process.
PID_BASE = 4_200_000


@dataclass(frozen=True)
class SimProcess:
    pid: int
    name: str
    user: str
    command: str
    memory_bytes: int
    # "compute", "graphics", or "compute+graphics": a program that both computes and draws (a
    # renderer with a viewport, a game using CUDA) is in both of NVML's lists (nvidia-smi: "C+G").
    kind: str = "compute"
    container: str = ""
    gpu_instance: int = -1  # the MIG GPU instance it runs in; -1: the whole GPU
    # When it started, in simulated seconds: a job started again later under the same PID is
    # another process, as a reused PID is on a real host.
    started_s: float = 0.0


@dataclass
class Load:
    """Per-second arrays over a stretch of simulated time (all the same length)."""

    util_gpu: np.ndarray  # percent
    util_memory: np.ndarray  # percent
    memory_fraction: np.ndarray  # of the memory left after the driver's reservation
    encoder: np.ndarray  # percent
    decoder: np.ndarray  # percent
    pcie_fraction: np.ndarray  # of the link's bandwidth
    nvlink_fraction: np.ndarray  # of the NVLink bandwidth
    temperature_override_c: np.ndarray  # NaN: temperature follows the load
    # What GPM (Hopper and newer) sees, in percent: how many SMs are busy and with what. A job
    # that keeps a kernel resident but waits (a deadlocked NCCL collective) has util 100, SM ~0.
    sm_activity: np.ndarray | None = None  # None: follows util_gpu (see activity())
    tensor_activity: np.ndarray | None = None  # None: no tensor work
    fp16_share: float = 0.0  # of the SM activity that is non-tensor FP16 math
    fp32_share: float = 0.4
    fp64_share: float = 0.0
    stalled: np.ndarray | None = None  # True where a job waits: power near idle whatever util says

    def activity(self) -> tuple[np.ndarray, np.ndarray]:
        """(SM activity, tensor activity) in percent."""
        sm = 0.7 * self.util_gpu if self.sm_activity is None else self.sm_activity
        tensor = np.zeros_like(sm) if self.tensor_activity is None else self.tensor_activity
        return np.clip(sm, 0, 100), np.clip(tensor, 0, 100)


def current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "user"


class Scenario:
    name = "idle"
    description = "GPUs idle: a desktop at rest"

    def __init__(self, seed: int, profiles: list[GpuProfile]) -> None:
        self.seed = seed
        self.profiles = profiles
        self.user = current_user()
        rng = random.Random(seed)
        # Three slow sines per GPU and channel give smooth, repeatable jitter.
        self._waves = {
            (gpu, channel): [(rng.uniform(0.01, 0.2), rng.uniform(0, 6.283), rng.uniform(0.3, 0.6)) for _ in range(3)]
            for gpu in range(len(profiles))
            for channel in range(8)
        }

    def noise(self, gpu: int, channel: int, t: np.ndarray) -> np.ndarray:
        """Smooth noise in about [-1, 1]."""
        out = np.zeros_like(t)
        for freq, phase, amp in self._waves[(gpu, channel)]:
            out += amp * np.sin(freq * t + phase)
        return out / 1.5

    def load(self, gpu: int, t: np.ndarray) -> Load:
        zeros = np.zeros_like(t)
        return Load(
            util_gpu=np.clip(1.0 + 1.0 * self.noise(gpu, 0, t), 0, 100),
            util_memory=np.clip(0.5 + 0.5 * self.noise(gpu, 1, t), 0, 100),
            memory_fraction=self._desktop_fraction(gpu) + zeros,
            encoder=zeros,
            decoder=zeros,
            pcie_fraction=0.001 + zeros,
            nvlink_fraction=zeros,
            temperature_override_c=zeros + np.nan,
        )

    def processes(self, gpu: int, t_s: float) -> list[SimProcess]:
        profile = self.profiles[gpu]
        # A datacenter GPU has no display server; a laptop's desktop runs on its iGPU (PRIME render
        # offload), which lets the dGPU runtime-suspend while nothing uses it.
        if profile.nvlink_links or profile.runtime_pm:
            return []
        return [self._xorg(gpu)]

    def xid_events(self) -> list[tuple[float, int, int]]:
        """(simulated second, GPU index, XID code), sorted by time."""
        return []

    def placed_on_instances(
        self, gpu: int, instances: tuple[MigInstance, ...] | None, processes: list[SimProcess]
    ) -> list[SimProcess]:
        """On a MIG GPU (``instances`` not None): the scenario's processes in its first instance
        (their memory scaled to it), and an inference server holding 12 GiB in the second; the
        others stay empty. In MIG mode without instances nothing can run."""
        if instances is None:
            return processes
        if not instances:
            return []
        first = instances[0]
        scale = first.memory_total_bytes / self._usable_bytes(gpu)
        placed = [
            replace(p, gpu_instance=first.gpu_instance_id, memory_bytes=int(p.memory_bytes * scale)) for p in processes
        ]
        if len(instances) < 2:
            return placed
        server = SimProcess(
            PID_BASE + gpu * 1000 + 50,
            "tritonserver",
            self.user,
            "tritonserver --model-repository=/models",
            12 * GIB,
            gpu_instance=instances[1].gpu_instance_id,
        )
        return [*placed, server]

    def ecc_corrected(self, gpu: int, t: np.ndarray) -> np.ndarray:
        return np.zeros_like(t)

    def ecc_uncorrected(self, gpu: int, t: np.ndarray) -> np.ndarray:
        return np.zeros_like(t)

    # helpers
    def _desktop_fraction(self, gpu: int) -> float:
        profile = self.profiles[gpu]
        return 0.0 if profile.nvlink_links or profile.runtime_pm else 300 * MIB / profile.memory_total_bytes

    def _xorg(self, gpu: int) -> SimProcess:
        return SimProcess(
            PID_BASE + gpu * 1000,
            "Xorg",
            "root",
            "/usr/lib/xorg/Xorg :0 -seat seat0",
            300 * MIB,
            "graphics",
        )

    def _usable_bytes(self, gpu: int) -> int:
        p = self.profiles[gpu]
        return p.memory_total_bytes - p.memory_reserved_bytes


class Training(Scenario):
    name = "training"
    description = "a training job: ramp up, steady load, memory climbing towards full, then finishing"
    period_s = 7200.0
    start_s = 60.0
    ramp_s = 120.0
    end_s = 6600.0

    def _phase(self, gpu: int, t: np.ndarray) -> np.ndarray:
        # One job spans all GPUs, in lockstep (data parallel).
        return t % self.period_s

    def _memory_fraction(self, phase: np.ndarray) -> np.ndarray:
        climb = 0.05 + 0.92 * (1.0 - np.exp(-np.maximum(phase - self.start_s, 0) / 1500.0))
        return np.where(self._running(phase), climb, 0.0)

    def _running(self, phase: np.ndarray) -> np.ndarray:
        return (phase >= self.start_s) & (phase < self.end_s)

    def load(self, gpu: int, t: np.ndarray) -> Load:
        base = super().load(gpu, t)
        phase = self._phase(gpu, t)
        running = self._running(phase)
        ramp = np.clip((phase - self.start_s) / self.ramp_s, 0, 1)
        busy = 93.0 * ramp + 4.0 * self.noise(gpu, 2, t)
        base.util_gpu = np.clip(np.where(running, busy, base.util_gpu), 0, 100)
        base.util_memory = np.clip(np.where(running, 0.6 * busy + 3 * self.noise(gpu, 3, t), 0.5), 0, 100)
        base.memory_fraction = base.memory_fraction + self._memory_fraction(phase)
        loading = running & (ramp < 1)
        base.pcie_fraction = np.where(loading, 0.45, np.where(running, 0.06 + 0.03 * self.noise(gpu, 4, t), 0.001))
        if self.profiles[gpu].nvlink_links:
            base.nvlink_fraction = np.where(running, ramp * (0.35 + 0.1 * self.noise(gpu, 5, t)), 0.0)
        # Mixed-precision training: most SM time in tensor cores, a little FP32/FP16 around them.
        base.sm_activity = np.where(running, 0.82 * base.util_gpu, 0.5 * base.util_gpu)
        base.tensor_activity = np.where(running, 0.68 * base.util_gpu, 0.0)
        base.fp16_share, base.fp32_share = 0.12, 0.18
        return base

    def processes(self, gpu: int, t_s: float) -> list[SimProcess]:
        procs = super().processes(gpu, t_s)
        phase = float(self._phase(gpu, np.array([t_s]))[0])
        if self.start_s <= phase < self.end_s:
            fraction = float(self._memory_fraction(np.array([phase]))[0])
            container = "3f2a9c1b7e4d" if self.profiles[gpu].nvlink_links else ""
            procs.append(
                SimProcess(
                    PID_BASE + gpu * 1000 + 1,
                    "python",
                    self.user,
                    f"python train.py --model llama-7b --rank {gpu}",
                    int(fraction * self._usable_bytes(gpu)),
                    container=container,
                    started_s=t_s - phase + self.start_s,
                )
            )
        return procs


class Thermal(Scenario):
    name = "thermal"
    description = "GPU 0 overheats, throttles, hovers near 85 °C, then cools down"
    period_s = 1800.0

    def load(self, gpu: int, t: np.ndarray) -> Load:
        base = super().load(gpu, t)
        base.util_gpu = np.clip(np.full_like(t, 85.0 if gpu == 0 else 40.0) + 5 * self.noise(gpu, 2, t), 0, 100)
        # Its memory busy as a training job's is (0 % beside 85 % read as a broken reading).
        base.util_memory = np.clip(0.45 * base.util_gpu + 3 * self.noise(gpu, 3, t), 0, 100)
        base.memory_fraction = base.memory_fraction + 0.4
        if gpu == 0:
            phase = t % self.period_s
            temperature = np.full_like(t, np.nan)
            heating = (phase >= 120) & (phase < 420)
            temperature[heating] = 70.0 + 21.0 * (phase[heating] - 120) / 300
            # Past its slowdown (87 °C on an H100) and the default critical alert (90 °C), short of
            # its shutdown (92 °C), where a real one throttles: held at 92 it sat at its shutdown
            # temperature for minutes.
            hot = (phase >= 420) & (phase < 600)
            temperature[hot] = 91.0 + 0.5 * self.noise(gpu, 6, t[hot])
            hover = (phase >= 600) & (phase < 1200)
            temperature[hover] = 85.0 + 3.0 * np.sin(2 * np.pi * phase[hover] / 40.0)
            cooling = (phase >= 1200) & (phase < 1500)
            temperature[cooling] = 85.0 - 15.0 * (phase[cooling] - 1200) / 300
            base.temperature_override_c = temperature
        return base

    def processes(self, gpu: int, t_s: float) -> list[SimProcess]:
        return [
            *super().processes(gpu, t_s),
            SimProcess(
                PID_BASE + gpu * 1000 + 2,
                "python",
                self.user,
                "python stress.py",
                int(0.4 * self._usable_bytes(gpu)),
            ),
        ]


@dataclass(frozen=True)
class _Scheduled:
    start_s: float
    end_s: float
    process: SimProcess
    util_percent: float


class Processes(Scenario):
    name = "processes"
    description = "processes of several users start and exit on each GPU"
    period_s = 3600.0
    _programs = (
        ("python", "python infer.py --batch 32", 60.0),
        ("ollama", "ollama serve", 35.0),
        ("blender", "blender scene.blend", 80.0),  # rendering in its viewport: computes and draws
        ("ffmpeg", "ffmpeg -hwaccel cuda -i in.mp4 out.mp4", 20.0),
        ("jupyter", "python -m ipykernel_launcher -f kernel.json", 10.0),
    )

    def __init__(self, seed: int, profiles: list[GpuProfile]) -> None:
        super().__init__(seed, profiles)
        rng = random.Random(seed * 7919 + 1)
        self._schedule: list[list[_Scheduled]] = []
        for gpu in range(len(profiles)):
            items = []
            for k in range(6):
                name, command, util = self._programs[rng.randrange(len(self._programs))]
                start = rng.uniform(0, self.period_s - 120)
                end = min(self.period_s, start + rng.uniform(60, 1500))
                user = rng.choice([self.user, self.user, "alice", "bob"])
                memory = int(rng.uniform(0.03, 0.15) * self._usable_bytes(gpu))
                kind = "compute+graphics" if name == "blender" else "compute"
                proc = SimProcess(PID_BASE + gpu * 1000 + 10 + k, name, user, command, memory, kind)
                items.append(_Scheduled(start, end, proc, util))
            self._schedule.append(items)

    def _active(self, gpu: int, phase: np.ndarray) -> list[tuple[_Scheduled, np.ndarray]]:
        return [(s, (phase >= s.start_s) & (phase < s.end_s)) for s in self._schedule[gpu]]

    def load(self, gpu: int, t: np.ndarray) -> Load:
        base = super().load(gpu, t)
        phase = t % self.period_s
        usable = self._usable_bytes(gpu)
        for item, mask in self._active(gpu, phase):
            base.util_gpu = base.util_gpu + mask * item.util_percent
            base.memory_fraction = base.memory_fraction + mask * (item.process.memory_bytes / usable)
            if item.process.name == "ffmpeg":
                base.encoder = base.encoder + mask * 45.0
                base.decoder = base.decoder + mask * 30.0
        base.util_gpu = np.clip(base.util_gpu + 3 * self.noise(gpu, 2, t), 0, 100)
        base.util_memory = np.clip(0.5 * base.util_gpu, 0, 100)
        return base

    def processes(self, gpu: int, t_s: float) -> list[SimProcess]:
        phase = t_s % self.period_s
        began = t_s - phase  # this round of the schedule
        active = [
            replace(s.process, started_s=began + s.start_s) for s in self._schedule[gpu] if s.start_s <= phase < s.end_s
        ]
        return [*super().processes(gpu, t_s), *active]


class Faults(Training):
    name = "faults"
    description = "a training job with faults: an XID error, ECC errors, a GPU lost (see lost=)"

    def xid_events(self) -> list[tuple[float, int, int]]:
        return [(240.0, 0, 13)]

    def ecc_corrected(self, gpu: int, t: np.ndarray) -> np.ndarray:
        return np.floor(t / 900.0) if self.profiles[gpu].has_ecc else np.zeros_like(t)

    def ecc_uncorrected(self, gpu: int, t: np.ndarray) -> np.ndarray:
        return (t >= 420.0).astype(float) if self.profiles[gpu].has_ecc else np.zeros_like(t)

    def processes(self, gpu: int, t_s: float) -> list[SimProcess]:
        other = SimProcess(PID_BASE + gpu * 1000 + 5, "python", "alice", "python notebook.py", 2 * GIB)
        return [*super().processes(gpu, t_s), other]

    def load(self, gpu: int, t: np.ndarray) -> Load:
        base = super().load(gpu, t)
        base.memory_fraction = base.memory_fraction + 2 * GIB / self._usable_bytes(gpu)
        return base


class Stalled(Training):
    name = "stalled"
    description = (
        "a training job that deadlocks at 10 min (util stays 100 %, SM activity and power fall to idle), "
        "and on the last GPU a notebook kernel holding 6 GiB while the GPU does nothing"
    )
    stall_s = 600.0

    def load(self, gpu: int, t: np.ndarray) -> Load:
        last = gpu == len(self.profiles) - 1 and len(self.profiles) > 1
        base = Scenario.load(self, gpu, t) if last else super().load(gpu, t)
        if last:
            base.memory_fraction = base.memory_fraction + self._notebook_bytes / self._usable_bytes(gpu)
            return base
        phase = self._phase(gpu, t)
        stalled = (phase >= self.stall_s) & self._running(phase)
        # A kernel stays resident (spinning on a collective that never completes): NVML's
        # utilization says 100 %, the SMs and the power say nothing happens.
        base.util_gpu = np.where(stalled, 100.0, base.util_gpu)
        assert base.sm_activity is not None and base.tensor_activity is not None
        base.sm_activity = np.where(stalled, 0.4 + 0.2 * np.abs(self.noise(gpu, 2, t)), base.sm_activity)
        base.tensor_activity = np.where(stalled, 0.0, base.tensor_activity)
        base.util_memory = np.where(stalled, 0.3, base.util_memory)
        base.pcie_fraction = np.where(stalled, 0.001, base.pcie_fraction)
        base.nvlink_fraction = np.where(stalled, 0.0, base.nvlink_fraction)
        base.stalled = stalled
        return base

    _notebook_bytes = 6 * GIB

    def processes(self, gpu: int, t_s: float) -> list[SimProcess]:
        if gpu == len(self.profiles) - 1 and len(self.profiles) > 1:
            notebook = SimProcess(
                PID_BASE + gpu * 1000 + 7,
                "python",
                self.user,
                "python -m ipykernel_launcher -f kernel-3.json",
                self._notebook_bytes,
            )
            return [*Scenario.processes(self, gpu, t_s), notebook]
        return super().processes(gpu, t_s)


SCENARIOS: dict[str, type[Scenario]] = {s.name: s for s in (Scenario, Training, Thermal, Processes, Faults, Stalled)}
