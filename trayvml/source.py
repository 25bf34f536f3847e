"""Where samples come from: the NVML reader (real or simulated GPUs) plus the host sampler.

This is the one entry point the CLI and the UI use; it decides between real and simulated
GPUs (``--simulate`` or ``TRAYVML_SIMULATE``) and owns the simulated library while it is in place.

Every NVML call runs on a thread of its own (:class:`_NvmlThread`), because a call into a
wedged GPU can block for good and nothing can cancel it. The caller waits a bounded time; past
it, the sample says that the driver is not answering, and in which call, while the host's
values go on being read.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import queue
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trayvml.core.clock import Clock, SystemClock, stamp_monotonic_s
from trayvml.core.errors import DriverStall, NvmlUnavailable, UnavailableReason
from trayvml.core.metrics import GPU_INDEX
from trayvml.core.sample import (
    NO_ATTRIBUTION,
    Attribution,
    DeviceInfo,
    GpuSample,
    HostSample,
    MetricState,
    ProcessDetails,
    Sample,
)
from trayvml.host.attribution import default_attributor, with_job
from trayvml.host.processes import in_host_pid_namespace, process_start, resolve_host_process
from trayvml.host.sampler import HostSampler, memory_total_available
from trayvml.nvml import binding
from trayvml.nvml.reader import NvmlReader
from trayvml.nvml.runtime_pm import SYSFS_ROOT_ENV, RuntimePower
from trayvml.nvml.sim.options import SimSpec

if TYPE_CHECKING:
    from trayvml.nvml.sim.library import SimulatedNvml
    from trayvml.nvml.sim.replay import ReplayedNvml

log = logging.getLogger(__name__)

# How long a read may take before the driver is reported as not answering: a few intervals, and
# more than nvmlInit takes on a GPU without persistence mode (1-3 s).
STALL_AFTER_S = 5.0
CLOSE_WAIT_S = 2.0  # for nvmlShutdown on close; a stuck driver is left behind instead
SETTLE_S = 0.5  # between two readings where rates need them (PCIe, NVLink, disk, network, GPM activity)
_POLL_S = 0.1  # how often a waiting caller looks whether it was interrupted
# What a unified-memory GPU's memory is, from the host's: NVML answers NOT_SUPPORTED for them.
_HOST_MEMORY_SLOTS = tuple(GPU_INDEX[k] for k in ("memory_used_bytes", "memory_free_bytes", "memory_used_percent"))


class _NvmlThread:
    """One daemon thread that runs jobs one at a time; the caller waits for each a bounded time.

    Daemon, so that a thread stuck in the driver never keeps the process from exiting.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], Any] | None] = queue.SimpleQueue()
        self._done = threading.Event()
        self._result: Any = None
        self._error: Exception | None = None
        self.busy = False  # a job was submitted and its result not yet taken
        self._thread = threading.Thread(target=self._run, name="trayvml-nvml", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                self._result, self._error = job(), None
            except Exception as error:  # handed to the caller, which logs it and shows it
                self._result, self._error = None, error
            self._done.set()

    def submit(self, job: Callable[[], Any]) -> None:
        self.busy = True
        self._done.clear()
        self._jobs.put(job)

    def wait(self, timeout_s: float, interrupted: threading.Event | None = None) -> bool:
        """True once the job is done; False after ``timeout_s`` or when ``interrupted`` is set."""
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if self._done.wait(max(0.0, min(remaining, _POLL_S))):
                return True
            if remaining <= 0 or (interrupted is not None and interrupted.is_set()):
                return False

    def take(self) -> Any:
        """The finished job's result; raises what the job raised."""
        self.busy = False
        if self._error is not None:
            raise self._error
        return self._result

    def stop(self) -> None:
        self._jobs.put(None)


def _nobody(pid: int) -> ProcessDetails | None:
    return None


def _named(gpus: tuple[GpuSample, ...]) -> tuple[GpuSample, ...]:
    """The names asked of other programs (a notebook's Jupyter server, a container's runtime),
    here on the sampler's thread rather than the NVML thread, whose reads they must not hold up;
    asked again where an earlier ask found none (the process cache keeps each process's first
    details). Cached once found: a look-up in memory per such process and tick."""
    if not any(p.attribution.pending for g in gpus for p in g.processes):
        return gpus
    attributor = default_attributor()
    return tuple(
        replace(
            g,
            processes=tuple(
                replace(p, attribution=attributor.refresh(p.pid, p.attribution)) if p.attribution.pending else p
                for p in g.processes
            ),
        )
        for g in gpus
    )


class Source:
    def __init__(
        self,
        simulation: SimSpec | None = None,
        clock: Clock | None = None,
        host: bool = True,
        stall_after_s: float = STALL_AFTER_S,
        proc_root: Path | None = None,
        host_memory: Callable[[], tuple[float, float]] = memory_total_available,
        every_tick: bool = False,
    ) -> None:
        """``proc_root``: the procfs whose PID namespace is checked against NVML's (host) PIDs;
        None: /proc for real GPUs, none for simulated ones (their PIDs are the simulator's).
        ``host_memory``: the host's (total, available) memory, for GPUs that share it.
        ``every_tick``: each sample reads every metric it is asked for, also those read every few
        seconds otherwise (the energy counter, the process lists, limits and error counters): for a
        snapshot or a log, whose every row says its values were read at its time (a counter held
        from a read 5 s back, stamped with this tick's time, is an old value passed off as new)."""
        self.clock = clock or SystemClock()
        self._host_memory = host_memory
        self.simulation = simulation
        self.stall_after_s = stall_after_s
        self.library: SimulatedNvml | None = None
        resolver = resolve_host_process
        started = process_start
        power: RuntimePower | None = None
        self._sysfs_dir: tempfile.TemporaryDirectory[str] | None = None
        self._replay: ReplayedNvml | None = None
        self._replay_began_s = math.nan  # the first sample's monotonic time, of a replay
        # The simulated and replayed drivers are imported only here: the simulator brings numpy
        # (15 MiB), which nothing else a real GPU's `serve`, `log` or `snapshot` runs needs.
        if simulation is not None and simulation.replay:
            from trayvml.nvml.sim.replay import ReplayedNvml

            # A recording of another machine's driver: its GPUs are not in this machine's sysfs,
            # and its processes' PIDs are not this machine's to look up.
            self._replay = ReplayedNvml(Path(simulation.replay))
            binding.install_library(self._replay)
            self._sysfs_dir = tempfile.TemporaryDirectory(prefix="trayvml-sysfs-")
            power = RuntimePower(Path(self._sysfs_dir.name))
            resolver = _nobody
        elif simulation is not None:
            from trayvml.nvml.sim.library import SimulatedNvml

            self.library = SimulatedNvml(simulation, self.clock)
            binding.install_library(self.library)
            resolver, started = self._resolve_simulated, self._simulated_start
            # Simulated GPUs get a fake sysfs (runtime power states): TRAYVML_SYSFS_ROOT, or a private one.
            root = os.environ.get(SYSFS_ROOT_ENV)
            if not root:
                self._sysfs_dir = tempfile.TemporaryDirectory(prefix="trayvml-sysfs-")
                root = self._sysfs_dir.name
            self.library.write_sysfs(Path(root))
            power = RuntimePower(Path(root))
        if proc_root is None and simulation is None:
            proc_root = Path("/proc")
        foreign = proc_root is not None and not in_host_pid_namespace(proc_root)
        if foreign:
            log.info("trayvml runs outside the host's PID namespace: GPU processes cannot be looked up here")
        self.reader = NvmlReader(self.clock, resolver, power, started, foreign)
        self.reader.scheduler.every_tick = every_tick
        self.host = HostSampler() if host else None
        self._nvml = _NvmlThread()
        self._read_began_clock_s = 0.0  # on the clock's monotonic time, for the user (_stall)
        self._read_began_monotonic_s = 0.0  # for the bounded wait
        self._stall_reported = False  # the read in flight was reported stuck: its result is old
        self._interrupted = threading.Event()
        self._closed = False
        self._logged_failures: set[str] = set()

    @property
    def label(self) -> str:
        if not self.simulation:
            return ""
        if self._replay is not None and self._replay_over():
            return f"{self.simulation.label}, over: its last answers held"
        return self.simulation.label

    def _replay_over(self) -> bool:
        """Whether the replay has run longer than its recording (and an interval): the readings since
        are the driver's last answers held (nvml/sim/replay.py), not readings of their moment."""
        assert self._replay is not None
        elapsed_s = self.clock.monotonic_s() - self._replay_began_s  # NaN before the first sample
        return elapsed_s > self._replay.duration_s + self._replay.interval_s

    def _resolve_simulated(self, pid: int) -> ProcessDetails | None:
        assert self.library is not None
        if self._is_host_pid(pid):
            return resolve_host_process(pid)  # a real process put on a simulated GPU (hostpid=)
        for gpu in range(len(self.library.timelines)):
            for proc in self.library.processes(gpu):
                if proc.pid == pid:
                    if self.library.hides(proc):
                        raise PermissionError(f"process {pid} belongs to {proc.user}")
                    # A simulated process's container is all the simulator tells of its job.
                    job = Attribution(container=proc.container) if proc.container else NO_ATTRIBUTION
                    return ProcessDetails(proc.name, proc.user, proc.command, proc.container, with_job(job, ""))
        return None

    def _is_host_pid(self, pid: int) -> bool:
        return self.simulation is not None and any(p == pid for _, p in self.simulation.host_pids)

    def _simulated_start(self, pid: int) -> float:
        assert self.library is not None
        if self._is_host_pid(pid):
            return process_start(pid)
        for gpu in range(len(self.library.timelines)):
            for proc in self.library.processes(gpu):
                if proc.pid == pid:
                    return self.library.wall_time_s(proc.started_s)
        return math.nan

    def sample(self, demand: frozenset[str] | None = None) -> Sample:
        """One sample; waits at most ``stall_after_s`` for the driver (less once it is known stuck).

        ``demand``: the GPU metric keys someone needs (see trayvml.core.demand); None reads everything.
        """
        if self.library is not None:
            self.library.sync_sysfs()  # the simulated GPUs' sleep schedule, as the kernel would show it
        if self._replay is not None and math.isnan(self._replay_began_s):
            self._replay_began_s = self.clock.monotonic_s()
        gpus, stall, failure = self._read_gpus(demand)
        # Stamped when read: the names asked next (a Jupyter server, a container runtime) may take
        # a while, and the values were not read then.
        now_s, monotonic_s = self.clock.now_s(), stamp_monotonic_s(self.clock)
        gpus = _named(gpus)
        reader = self.reader
        devices = reader.devices if gpus else ()
        if any(d.unified_memory for d in devices):
            gpus, devices = self._with_host_memory(gpus, devices)
        return Sample(
            timestamp_s=now_s,
            monotonic_s=monotonic_s,
            gpus=gpus,
            devices=devices,
            system=reader.system,
            host=self._read_host(),
            unavailable=failure or (None if stall or gpus else self._unavailable()),
            simulation=self.label,
            notes=reader.notes,
            stall=stall,
        )

    def _read_gpus(
        self, demand: frozenset[str] | None
    ) -> tuple[tuple[GpuSample, ...], DriverStall | None, NvmlUnavailable | None]:
        for _ in range(2):  # a read that was reported stuck answers with old values: read afresh once
            if not self._nvml.busy:
                self._read_began_clock_s = self.clock.monotonic_s()
                self._read_began_monotonic_s = time.monotonic()
                self._stall_reported = False
                self._nvml.submit(self.reader.read if demand is None else functools.partial(self.reader.read, demand))
            waited_s = time.monotonic() - self._read_began_monotonic_s
            # Once a stall is reported each tick still waits a moment: a driver that just answered
            # is picked up in this tick rather than the next.
            if not self._nvml.wait(max(self.stall_after_s - waited_s, _POLL_S), self._interrupted):
                self._stall_reported = True
                return (), self._stall(), None
            try:
                gpus = self._nvml.take()
            except Exception as error:
                return (), None, self._failed("reading the GPUs", error)
            if not self._stall_reported:
                return gpus, None, None
        return (), self._stall(), None

    def _stall(self) -> DriverStall:
        """The read in flight, stuck: since when by the wall clock as it is now. Its time when the
        read began would be an hour off after the clock was set back an hour meanwhile ("has not
        answered for 0 s")."""
        began_s = self.clock.now_s() - (self.clock.monotonic_s() - self._read_began_clock_s)
        return DriverStall(began_s, self.reader.current_call)

    def _with_host_memory(
        self, gpus: tuple[GpuSample, ...], devices: tuple[DeviceInfo, ...]
    ) -> tuple[tuple[GpuSample, ...], tuple[DeviceInfo, ...]]:
        """A unified-memory GPU's memory as the host's: total, used = total - available, free =
        available, as nvtop (#466), gpud and ollama (#12619) show a GB10's. The GPU can use what
        the host has available, and host RAM in use is memory it cannot have. (The sum of its
        processes' memory, nvtop#511's proposal, leaves out what other programs take.)

        Only values NVML said it does not support are replaced: one nobody asked for stays NOT_READ.
        Read here, not in the reader: trayvml.nvml does not reach into the host.
        """
        try:
            total, available = self._host_memory()
        except Exception as error:  # the values stay "not supported": nothing is made up
            self._failed("reading the host's memory", error)
            return gpus, devices
        used = total - available
        host = (used, available, 100.0 * used / total if total > 0 else math.nan)
        out_gpus, out_devices = [], []
        for gpu, info in zip(gpus, devices, strict=True):
            if info.unified_memory and not gpu.lost and not gpu.asleep:
                values, states = list(gpu.values), list(gpu.states)
                for slot, value in zip(_HOST_MEMORY_SLOTS, host, strict=True):
                    if states[slot] is MetricState.NOT_SUPPORTED and not math.isnan(value):
                        values[slot], states[slot] = value, MetricState.OK
                gpu = replace(gpu, values=tuple(values), states=tuple(states), unified_memory=True)
                info = replace(info, memory_total_bytes=total)
            out_gpus.append(gpu)
            out_devices.append(info)
        return tuple(out_gpus), tuple(out_devices)

    def _read_host(self) -> HostSample | None:
        if self.host is None:
            return None
        try:
            return self.host.sample()
        except Exception as error:  # a host value is not worth losing the GPUs for
            self._failed("reading the host", error)
            return None

    def _failed(self, what: str, error: Exception) -> NvmlUnavailable:
        """Log an unexpected error once with its traceback; it is shown as an error state meanwhile."""
        text = f"{type(error).__name__}: {error}"
        if text not in self._logged_failures and len(self._logged_failures) < 100:
            self._logged_failures.add(text)
            log.error("%s failed; shown as an error until it works again", what, exc_info=error)
        return NvmlUnavailable(UnavailableReason.READ_FAILED, text)

    def _unavailable(self) -> NvmlUnavailable | None:
        why = self.reader.unavailable
        # A fault asked for with --simulate: its sentence must not advise trying --simulate.
        return replace(why, simulated=True) if why is not None and self.simulation is not None else why

    def interrupt(self) -> None:
        """Make a sample() that waits on the driver return now (from any thread): the app is quitting."""
        self._interrupted.set()

    def close(self) -> None:
        """Shut NVML down and end the reading thread; again, nothing (a second close waited 4 s
        on the thread already ended)."""
        if self._closed:
            return
        self._closed = True
        nvml = self._nvml
        if not nvml.busy or (not self._stall_reported and nvml.wait(CLOSE_WAIT_S)):
            if nvml.busy:
                try:
                    nvml.take()
                except Exception:  # closing: its failure was (or would have been) shown already
                    log.debug("the last read failed while closing", exc_info=True)
            nvml.submit(self.reader.close)
            nvml.wait(CLOSE_WAIT_S)
        else:
            # Stuck in the driver (nvmlShutdown would wait on the same lock) or a sysfs read: leave the thread behind.
            log.warning("still not answering: %s; not waiting for it", self.reader.current_call or "the NVIDIA driver")
        nvml.stop()
        if binding.installed_library() is not None and binding.installed_library() in (self.library, self._replay):
            binding.install_library(None)
        if self._sysfs_dir is not None:
            self._sysfs_dir.cleanup()
            self._sysfs_dir = None
