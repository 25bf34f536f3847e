"""Immutable samples: what the sampler thread hands to everything else.

"No value" is NaN; *why* there is no value is a :class:`MetricState`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from trayvml.core.errors import DriverStall, NvmlUnavailable, UnavailableReason
from trayvml.core.i18n import QT_TRANSLATE_NOOP, translate
from trayvml.core.metrics import GPU_INDEX, HOST_INDEX


class MetricState(enum.IntEnum):
    OK = 0
    NO_DATA = 1  # transient: this sample has no value
    NOT_SUPPORTED = 2  # permanent for this GPU
    NO_PERMISSION = 3
    LOST = 4  # the GPU fell off the bus
    NOT_READ = 5  # nothing shown needs it, so it was not read (see NvmlReader.read's demand)
    ASLEEP = 6  # the GPU is runtime-suspended: not queried, as any query would wake it
    RESTING = 7  # an idle laptop GPU between slow polls, left alone so that it can suspend
    NOT_YET = 8  # a rate differenced from a counter: one reading so far, a second one is needed

    @property
    def label(self) -> str:
        return _STATE_LABELS[self]


_STATE_LABELS = {
    MetricState.OK: QT_TRANSLATE_NOOP("metrics", "ok"),
    MetricState.NO_DATA: QT_TRANSLATE_NOOP("metrics", "no data"),
    MetricState.NOT_SUPPORTED: QT_TRANSLATE_NOOP("metrics", "not supported"),
    MetricState.NO_PERMISSION: QT_TRANSLATE_NOOP("metrics", "no permission"),
    MetricState.LOST: QT_TRANSLATE_NOOP("metrics", "GPU lost"),
    MetricState.NOT_READ: QT_TRANSLATE_NOOP("metrics", "not read: nothing shows it"),
    MetricState.ASLEEP: QT_TRANSLATE_NOOP("metrics", "asleep: runtime-suspended, not queried so that it stays asleep"),
    MetricState.RESTING: QT_TRANSLATE_NOOP(
        "metrics", "resting: an idle laptop GPU is read slowly so that it can go to sleep"
    ),
    MetricState.NOT_YET: QT_TRANSLATE_NOOP("metrics", "not measured yet: a rate needs two readings"),
}


@dataclass(frozen=True)
class SystemInfo:
    hostname: str
    driver_version: str
    cuda_driver_version: str
    nvml_version: str


# A GPU lost before its name could ever be read. The English text is the marker compared against;
# DeviceInfo.shown_name says it in the reader's language.
UNKNOWN_NAME = QT_TRANSLATE_NOOP("GpuText", "(name unknown)")


@dataclass(frozen=True)
class DeviceInfo:
    """Facts about one GPU read once at start (fields match STATIC_FIELDS keys)."""

    index: int
    name: str  # as the driver gives it, or UNKNOWN_NAME; shown_name is the one to show
    uuid: str
    serial: str = ""
    pci_bus_id: str = ""
    vbios_version: str = ""
    compute_capability: str = ""
    persistence_mode: bool | None = None
    mig_mode_current: bool | None = None
    mig_mode_pending: bool | None = None
    ecc_mode_current: bool | None = None
    memory_total_bytes: float = math.nan
    power_limit_default_w: float = math.nan
    power_limit_min_w: float = math.nan
    power_limit_max_w: float = math.nan
    clock_max_sm_mhz: float = math.nan
    clock_max_graphics_mhz: float = math.nan
    clock_max_memory_mhz: float = math.nan
    clock_max_video_mhz: float = math.nan
    pcie_link_gen_max: float = math.nan
    pcie_link_width_max: float = math.nan
    nvlink_link_count: int = 0
    gpm_supported: bool | None = None  # GPM activity metrics (Hopper and newer); None: cannot tell
    # Where the driver slows the GPU down, and shuts it off, for heat (drawn on the temperature panel).
    temperature_slowdown_c: float = math.nan
    temperature_shutdown_c: float = math.nan
    mig_parent_index: int = -1  # a MIG device: the index of the GPU it is carved from; -1: a whole GPU
    # True: no memory of its own (GB10, DGX Spark): its memory figures are the host's RAM; None: its own.
    unified_memory: bool | None = None
    gpu_instance_id: int = -1  # a MIG device's GPU instance id

    @property
    def shown_name(self) -> str:
        """The name as a person reads it: "(name unknown)" in their language."""
        return translate("GpuText", UNKNOWN_NAME) if self.name == UNKNOWN_NAME else self.name


# What a job is, most telling first (see trayvml.host.attribution): the words each kind is shown with.
JOB_KINDS = {
    "notebook": QT_TRANSLATE_NOOP("jobs", "notebook"),
    "kernel": QT_TRANSLATE_NOOP("jobs", "Jupyter kernel"),  # its notebook not known: a console's, VS Code's
    "container": QT_TRANSLATE_NOOP("jobs", "container"),
    "slurm": QT_TRANSLATE_NOOP("jobs", "Slurm job"),
    "unit": QT_TRANSLATE_NOOP("jobs", "systemd unit"),
    "session": QT_TRANSLATE_NOOP("jobs", "terminal session"),
    "process": QT_TRANSLATE_NOOP("jobs", "process tree"),
}


@dataclass(frozen=True)
class Attribution:
    """Whose work a GPU process is, where the host can tell (empty strings where it cannot).

    ``job`` is the top-most of what is known: the notebook, else the container, the Slurm job,
    the systemd unit, the tmux/screen session, else the root of its process tree; ``job_kind``
    says which (a key of JOB_KINDS), "" where nothing could be read.
    """

    container: str = ""  # 12 hex digits (Docker, Podman, containerd, CRI-O) or an LXC container's name
    container_name: str = ""  # its name, where its runtime (Docker, Podman) told it
    runtime: str = ""  # "docker", "podman", "containerd", "cri-o", "lxc"
    slurm_job: str = ""
    slurm_job_name: str = ""  # its SLURM_JOB_NAME ("train_llm"), where its environment can be read
    unit: str = ""  # a systemd unit, "foo.service" or "bar.scope"
    session: str = ""  # "tmux default", "screen 1234.pts-0.host"
    notebook: str = ""  # the notebook's path under its Jupyter server's root
    kernel_id: str = ""  # a Jupyter kernel's id: the same while its notebook is renamed (energy's job)
    job: str = ""
    job_kind: str = ""
    root_pid: int = 0  # the top of its process tree below init or the session leader; 0: unknown
    # A name asked of another program (a notebook's Jupyter server, a container's runtime) is not
    # known yet: not asked yet, or it did not answer and is asked again later (Attributor.refresh).
    pending: bool = False


NO_ATTRIBUTION = Attribution()


@dataclass(frozen=True)
class ProcessDetails:
    """What the host knows about a PID (empty strings where it cannot tell)."""

    name: str
    user: str
    command: str
    container: str = ""
    attribution: Attribution = NO_ATTRIBUTION


@dataclass(frozen=True)
class ProcessSample:
    gpu_index: int
    pid: int
    kind: str  # "compute", "graphics", or "compute+graphics" (in both of NVML's lists)
    used_memory_bytes: float  # NaN where NVML does not say (other users, WDDM)
    name: str = ""  # "" where the PID cannot be resolved (another container, no permission)
    user: str = ""
    command: str = ""
    container: str = ""  # container id from /proc/PID/cgroup, "" on the host
    no_permission: bool = False  # another user's process that we may not inspect
    sm_util_percent: float = math.nan  # its share of the SMs (nvmlDeviceGetProcessUtilization); NaN: unknown
    # When it started (seconds since the epoch), NaN where unknown: with the PID, what tells one
    # process from a later one the kernel gave the same PID.
    started_s: float = math.nan
    # NVML's PID is the host's and trayvml runs in another PID namespace (a container, WSL2): the
    # same number here is another process or none, so it is neither looked up nor ended.
    foreign_pid: bool = False
    attribution: Attribution = NO_ATTRIBUTION  # its job, container, Slurm job, notebook (trayvml.host.attribution)

    @property
    def unseen(self) -> bool:
        """Whether this machine cannot see into the process (another user's, or a PID of another
        PID namespace): its name, user and job are not known here, and never guessed."""
        return self.no_permission or self.foreign_pid

    @property
    def job(self) -> tuple[str, str]:
        """(kind, name) of the job this process's work adds up under: the one rule for energy, the
        Processes page, the users' view, the tray and notifications. Its attribution's job where the
        host could read one (notebook, container, Slurm job, unit, session, process tree); else the
        container its details named; else the process itself (kind "pid"): never a guess."""
        if self.attribution.job:
            return self.attribution.job_kind, self.attribution.job
        if self.container:
            return "container", f"container {self.container}"
        return "pid", str(self.pid)

    @property
    def job_is_itself(self) -> bool:
        """Whether its job is this very process (so a later process with its PID is another job)."""
        kind = self.job[0]
        return kind == "pid" or (kind == "process" and self.attribution.root_pid == self.pid)

    @property
    def started_key(self) -> float:
        """Its start time as a key, to 10 ms; -1 where it is not told (NaN is no dictionary key)."""
        return -1.0 if math.isnan(self.started_s) else round(self.started_s, 2)

    @property
    def job_identity(self) -> tuple[str, str, float]:
        """(kind, name, start) that make two processes' jobs one, for what adds up per job (energy,
        GPU time, the Processes page's jobs; each user's own): a Jupyter kernel by its id, its
        notebook's name known yet or not, renamed or not (keyed by the name, a renamed notebook's
        job began again at 0); a process that is its own job by its start time too (a later
        process given its PID is another job), else -1."""
        if self.attribution.kernel_id:
            return "kernel", self.attribution.kernel_id, -1.0
        kind, name = self.job
        return kind, name, self.started_key if self.job_is_itself else -1.0


SIMULATED_GPUS = "simulated GPUs ({scenario})"  # Sample.simulation of a scenario's GPUs (English)


Kept = TypeVar("Kept")


def renumbering(before: Sequence[DeviceInfo], now: Sequence[DeviceInfo]) -> dict[int, int | None]:
    """How the GPUs ``before`` are numbered ``now``, where that changed: old index -> new index,
    None where gone (by UUID: a MIG instance destroyed or made renumbers the instances after it,
    which keep their UUIDs). Empty when none moved or went; a GPU whose UUID was not read is
    taken to have stayed."""
    where = {info.uuid: info.index for info in now if info.uuid}
    return {info.index: where.get(info.uuid) for info in before if info.uuid and where.get(info.uuid) != info.index}


def renumbered(kept: Mapping[int, Kept], moves: Mapping[int, int | None]) -> dict[int, Kept]:
    """What is ``kept`` by GPU index after ``moves`` (renumbering): under each GPU's new index, a
    gone one's dropped."""
    return {new: value for index, value in kept.items() if (new := moves.get(index, index)) is not None}


def simulation_scenario(simulation: str) -> str:
    """What a sample's simulation label (``Sample.simulation``) names: the scenario of "simulated GPUs
    (training)", else the label itself ("replayed NVML recording (gpu.jsonl)", which is no
    scenario's: its parentheses are its own)."""
    head, tail = SIMULATED_GPUS.split("{scenario}")
    if simulation.startswith(head) and simulation.endswith(tail) and len(simulation) > len(head) + len(tail):
        return simulation[len(head) : -len(tail)]
    return simulation


def naming(processes: Sequence[ProcessSample]) -> ProcessSample:
    """Of one job's processes (job_identity's), the one that names it best: a kernel's process whose
    notebook is known over one not asked yet (a forked worker), whichever the list gives first."""
    return next((p for p in processes if p.job[0] != "kernel"), processes[0])


def job_text(process: ProcessSample, translated: bool = True) -> str:
    """'notebook exp/train.ipynb', 'docker 3f2a9c1b7e4d', 'Slurm job 4242 (train_llm)', 'pid 4100': the job as
    words (English where ``translated`` is False: JSON keys and logs)."""
    kind, name = process.job
    if kind == "container":
        return name  # "docker 3f2a9c1b7e4d" names its kind already
    if kind == "pid":
        return translate("jobs", "pid {pid}").format(pid=name) if translated else f"pid {name}"
    words = JOB_KINDS.get(kind, kind)
    called = process.attribution.slurm_job_name if kind == "slurm" else ""
    named = f"{name} ({called})" if called else name
    return f"{translate('jobs', words) if translated else words} {named}"


def held_seconds(age_s: float) -> int:
    """A held reading's age (GpuSample.age_s) as shown, in whole seconds; 0 where it was read at
    its sample's tick. Half a second and up is at least 1: at a 0.5 s sampling interval a reading
    one tick old said "0 s ago"."""
    return max(1, round(age_s)) if age_s >= 0.5 else 0


# A remote host's values this old or older say their age (a Prometheus server's, scraped every
# 15 s; an exporter's that answered the same again); younger ones are what the read found.
SAID_AGE_S = 2


def said_age_s(age_s: float) -> int:
    """A remote host's values' age (Sample.values_ago_s) as the tray and ``snapshot`` say it, in
    whole seconds; 0, not said, under SAID_AGE_S."""
    seconds = held_seconds(age_s)
    return seconds if seconds >= SAID_AGE_S else 0


@dataclass(frozen=True)
class GpuSample:
    """One GPU at one instant. ``values`` and ``states`` follow GPU_METRICS' order."""

    index: int
    values: tuple[float, ...]
    states: tuple[MetricState, ...]
    processes: tuple[ProcessSample, ...] = ()
    nvlink_link_tx_bytes_per_s: tuple[float, ...] = ()
    nvlink_link_rx_bytes_per_s: tuple[float, ...] = ()
    lost: bool = False
    asleep: bool = False  # runtime-suspended: every value NaN, every state ASLEEP
    # Keys whose value is only a lower bound: a PCIe byte counter that may have wrapped more than
    # once between two reads (the value is what is certain; the true rate may be higher).
    lower_bounds: frozenset[str] = frozenset()
    unified_memory: bool = False  # its memory values are the host's RAM, shared with the CPU
    # (key, seconds): values read at an earlier tick and held, as the reader reads them on a slower
    # cadence (limits, error counters, energy, process lists: nvml/specs.py), with how long ago.
    # A value not named here was read at this sample's tick.
    read_ago_s: tuple[tuple[str, float], ...] = ()
    # How long before the sample's time every other value was read, where a server in between
    # keeps them: a Prometheus server answers with its last scrape of the GPU's exporter (NaN:
    # it cannot say when that was).
    values_ago_s: float = 0.0

    def value(self, key: str) -> float:
        return self.values[GPU_INDEX[key]]

    def age_s(self, key: str) -> float:
        """How long ago ``key``'s value was read: 0.0 when at this sample's tick."""
        for held, age_s in self.read_ago_s:
            if held == key:
                return age_s
        return self.values_ago_s

    def state(self, key: str) -> MetricState:
        return self.states[GPU_INDEX[key]]

    @property
    def resting(self) -> bool:
        """An idle laptop GPU not read between slow polls, so that it may sleep (every state RESTING)."""
        return self.state("utilization_gpu_percent") is MetricState.RESTING

    @property
    def stopped_s(self) -> int:
        """How long ago, in whole seconds, the series of a remote GPU stopped behind a Prometheus
        server (remote/fetch.py: every value wanting, none unsupported or asleep); 0: not stopped."""
        if self.states and all(state is MetricState.NO_DATA for state in self.states):
            return said_age_s(self.values_ago_s)
        return 0


@dataclass(frozen=True)
class HostSample:
    values: tuple[float, ...]  # HOST_METRICS' order
    cpu_core_percent: tuple[float, ...] = ()

    def value(self, key: str) -> float:
        return self.values[HOST_INDEX[key]]


PROMETHEUS_SCHEME = "prometheus+"  # a remote URL read through a Prometheus server's API


@dataclass(frozen=True)
class RemoteOrigin:
    """Where a remote host's sample came from (see trayvml.remote); local samples have none."""

    url: str  # as the user gave it, without credentials
    kind: str  # what answered: "trayvml serve", "dcgm-exporter", ..., "Prometheus"
    fault: str = ""  # a sentence naming the URL: why no values are current; "" when they are
    since_s: float = math.nan  # wall clock when the fault began

    @property
    def via_server(self) -> bool:
        """Read through a Prometheus server, which holds the exporter's values (``kind``'s) between scrapes."""
        return self.url.startswith(PROMETHEUS_SCHEME)

    @property
    def headline(self) -> str:
        return translate("errors", "Host unreachable")


@dataclass(frozen=True)
class Sample:
    timestamp_s: float  # wall clock, seconds since the epoch
    gpus: tuple[GpuSample, ...]
    devices: tuple[DeviceInfo, ...]
    system: SystemInfo | None
    host: HostSample | None
    unavailable: NvmlUnavailable | None = None  # set when NVML could not be used at all
    simulation: str = ""  # "" for real GPUs, else a label such as "simulated GPUs (training)"
    notes: tuple[str, ...] = field(default=())  # one-off remarks for the user (e.g. a function missing)
    stall: DriverStall | None = None  # set while the driver has not answered: ``gpus`` is empty then
    remote: RemoteOrigin | None = None  # set for a remote host's sample (``system.hostname`` names it)
    # The reader's monotonic clock when it was stamped (NaN: not told): with ``timestamp_s``, how
    # far the wall clock was set between two samples (core/clock.py clock_step_s).
    monotonic_s: float = math.nan

    def gpu(self, index: int) -> GpuSample | None:
        """The GPU with that index in this sample, or None."""
        return next((g for g in self.gpus if g.index == index), None)

    @property
    def values_ago_s(self) -> float:
        """How long before ``timestamp_s`` its GPUs' values were read (the oldest's of those whose
        series did not stop), where a server in between holds them (GpuSample.values_ago_s); 0.0 when read at
        that time, NaN where it is not known (or there are no GPUs)."""
        # A GPU whose series stopped says its own age (core.lines.gpu_line), not the host's others'.
        ages = [gpu.values_ago_s for gpu in self.gpus if not gpu.stopped_s] or [gpu.values_ago_s for gpu in self.gpus]
        return math.nan if not ages or any(math.isnan(age) for age in ages) else max(ages)

    @property
    def unreachable(self) -> bool:
        """A remote host's sample saying why it has no current values (its ``remote.fault``)."""
        return self.remote is not None and bool(self.remote.fault)

    @property
    def offers_simulation(self) -> bool:
        """No NVIDIA driver here (not a simulated fault): simulated GPUs are worth offering."""
        missing = self.unavailable
        return (
            missing is not None
            and missing.reason is UnavailableReason.LIBRARY_NOT_FOUND
            and not missing.simulated
            and not self.simulation
        )

    @property
    def problem(self) -> tuple[str, str] | None:
        """(headline, sentence) of why no GPU values are current, or None when they are."""
        if self.unreachable:
            assert self.remote is not None
            return self.remote.headline, self.remote.fault
        if self.stall is not None:
            return self.stall.headline, self.stall.sentence(self.timestamp_s)
        if self.unavailable is not None:
            return self.unavailable.headline, self.unavailable.sentence
        return None


def hidden_processes_words(processes: tuple[ProcessSample, ...]) -> str:
    """'2 processes of other users; 1 process in another PID namespace': the processes whose
    names and jobs cannot be seen here, counted and said, never guessed; "" where there are none."""
    others = sum(1 for p in processes if p.no_permission)
    foreign = sum(1 for p in processes if p.foreign_pid)
    words = []
    if others == 1:
        words.append(translate("processes", "1 process of another user"))
    elif others:
        words.append(translate("processes", "{count} processes of other users").format(count=others))
    if foreign == 1:
        words.append(translate("processes", "1 process in another PID namespace"))
    elif foreign:
        words.append(translate("processes", "{count} processes in another PID namespace").format(count=foreign))
    return translate("processes", "; ").join(words)
