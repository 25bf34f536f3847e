"""Who a GPU process is: name, user, command line and container, looked up by host PID."""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import re
import shlex
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

from trayvml.core.files import create_atomically, state_folder, write_atomically
from trayvml.core.safe_text import clean
from trayvml.core.sample import ProcessDetails
from trayvml.host.attribution import default_attributor

log = logging.getLogger(__name__)

# Docker, containerd, CRI-O, Podman and Kubernetes all put a 64-hex-digit id in the cgroup path.
_CONTAINER_ID = re.compile(r"(?:docker|containerd|crio|libpod|cri-containerd)[-/]?([0-9a-f]{64})|/([0-9a-f]{64})")


def container_of(pid: int) -> str:
    """The short container id a PID runs in, or "" on the host or where it cannot be read."""
    try:
        # Cgroup names are chosen by whoever made them; only the hex id matters here.
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as cgroup:
            text = cgroup.read()
    except OSError:
        return ""
    match = _CONTAINER_ID.search(text)
    if not match:
        return ""
    return (match.group(1) or match.group(2))[:12]


# The inode of the initial (the host's) PID namespace: the kernel's fixed PROC_PID_INIT_INO
# (include/linux/proc_ns.h), what /proc/self/ns/pid links to outside any container.
_HOST_PID_NAMESPACE = "pid:[4026531836]"


def in_host_pid_namespace(proc_root: Path = Path("/proc")) -> bool:
    """Whether PIDs here are the host's, as NVML's are.

    NVML lists host PIDs whatever namespace asks (nvidia-docker#1483: the driver knows no PID
    namespaces); inside a container without --pid=host, or in WSL2, the same number is another
    process or none (nvtop#149, nvitop#134: they advise --pid=host). Comparing /proc/self/ns/pid
    with /proc/1/ns/pid cannot tell: a container's PID 1 shares its namespace. What can: our
    namespace is the initial one (its inode is fixed), or, where that link cannot be read, the
    kernel's threads (kthreadd is PID 2 only in the host's namespace) are visible.
    Without a procfs (not Linux) there are no PID namespaces; where procfs hides other users'
    processes (hidepid) and nothing tells, the host's is assumed.
    """
    if not proc_root.is_dir():
        return True
    try:
        return os.readlink(proc_root / "self" / "ns" / "pid") == _HOST_PID_NAMESPACE
    except OSError:
        pass
    try:
        return (proc_root / "2" / "comm").read_text(encoding="utf-8", errors="replace").strip() == "kthreadd"
    except OSError:
        return not (proc_root / "1").is_dir()  # PID 1 seen and kernel threads not: a container


def resolve_host_process(pid: int) -> ProcessDetails | None:
    """Details of a host PID; None if it is gone or lives outside our PID namespace.

    Any user names their processes, so the text is cleaned here, where it enters (see
    core.safe_text): psutil hands undecodable bytes over surrogate-escaped, which no UTF-8
    output can encode, and control characters would reach terminals raw.
    Raises PermissionError where another user's process cannot be inspected.
    """
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            name = proc.name()
            user = proc.username()
            try:
                command = shlex.join(proc.cmdline())
            except psutil.AccessDenied:
                command = ""
    except psutil.NoSuchProcess:
        if _alive_unseen(pid):  # /proc mounted hidepid=2 hides other users' processes as if gone
            raise PermissionError(f"no permission to see process {pid}") from None
        return None  # exited, or a host PID seen from inside a container
    except psutil.AccessDenied as denied:
        raise PermissionError(f"no permission to inspect process {pid}") from denied
    # Read once per process (the ProcessCache asks once per PID and start time), and only for
    # processes on a GPU: the idle tray, which lists no processes, never gets here. This runs on
    # the NVML thread: the names asked of other programs (Jupyter, Docker) are left to the
    # sampler's thread (Source, through Attributor.refresh).
    attribution = default_attributor().attribute(pid, ask=False)
    container = attribution.container if attribution.runtime != "lxc" else ""
    return ProcessDetails(clean(name), clean(user), clean(command), container or container_of(pid), attribution)


def _alive_unseen(pid: int) -> bool:
    """Whether ``pid`` runs though /proc does not show it: the kernel refuses to signal another
    user's process (EPERM) where it would say an ended one is not there (ESRCH)."""
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except OSError:
        return False
    return False  # ours to signal, so ours to see: it ended between the two looks


# Linux tells how long after boot each process started (/proc/PID/stat's starttime, in clock ticks
# of the boot-time clock), which no step of the wall clock moves. psutil's start time is that plus
# the boot time by the wall clock as it is now, which the kernel moves with every step of the
# clock (NTP, a user), a whole second at a time: each step made every process another one (its
# energy and GPU time from 0 again, its timeline two lines, "End process" refused as already
# ended). So the boot time is read once a boot, by the first trayvml process that asks, and kept
# for the others (_boot_s). Elsewhere psutil's start time is the kernel's own and no step moves it.
_PROC_STAT = sys.platform.startswith("linux")
_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if _PROC_STAT else 100


def _after_boot_s(pid: int) -> float:
    """How long after boot ``pid`` started (Linux). Raises OSError where it is gone, ValueError or
    IndexError where its stat cannot be read as one."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        after_name = stat.read().rsplit(b")", 1)[1].split()  # the name, in parentheses, may hold anything
    return int(after_name[19]) / _TICKS_PER_S  # field 22; those after the name begin at 3


BOOT_FILE = "boot.json"  # in the state folder: {"boot_id": the kernel's, "boot_s": when it booted}


def _boot_id() -> str:
    """This boot's id: the kernel makes a new one at each boot."""
    return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()


def _kept_boot_s(path: Path, boot_id: str) -> float | None:
    """The boot time kept in ``path`` for boot ``boot_id``; None where there is none to use."""
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # none yet, or unreadable
    boot_s = kept.get("boot_s") if isinstance(kept, dict) and kept.get("boot_id") == boot_id else None
    if isinstance(boot_s, int | float) and not isinstance(boot_s, bool) and math.isfinite(boot_s):
        return float(boot_s)
    return None  # another boot's, or not a time: a NaN start would make every process "the same"


@functools.cache
def _boot_s() -> float:
    """When the machine booted (seconds since the epoch), as the wall clock said when a trayvml
    process first asked in this boot. Kept in the state folder for the others: the history on disk
    knows a process by its PID and start, and a tray or recorder started again after a step of the
    clock would otherwise date every running process anew (a job's timeline in two, its GPU time
    split). Only identity hangs on it (no start time is shown), so a first reading taken before
    NTP's first step is kept all the same. Where the folder cannot be read or written, the boot time
    as the wall clock says now."""
    now_s = float(psutil.boot_time())
    path = state_folder() / BOOT_FILE
    try:
        boot_id = _boot_id()
    except OSError:
        return now_s
    kept_s = _kept_boot_s(path, boot_id)
    if kept_s is not None:
        return kept_s
    data = json.dumps({"boot_id": boot_id, "boot_s": now_s}).encode()
    try:
        if path.exists():
            write_atomically(path, data)  # another boot's, or unreadable
        else:
            create_atomically(path, data)  # a trayvml (or thread) asking at the same time: the first one's
    except FileExistsError:
        return _kept_boot_s(path, boot_id) or now_s
    except OSError as error:
        log.debug("could not keep the boot time in %s: %s", path, error)
    return now_s


@dataclass(frozen=True)
class _Start:
    started_s: float  # seconds since the epoch; on Linux by the boot time first read (_boot_s)
    after_boot_s: float  # on the boot-time clock; NaN where the platform does not tell it

    def runtime_s(self) -> float:
        if math.isnan(self.after_boot_s):
            return time.time() - self.started_s
        return time.clock_gettime(time.CLOCK_BOOTTIME) - self.after_boot_s


def _start(pid: int, proc: psutil.Process | None = None) -> _Start:
    """When ``pid`` started; raises what _after_boot_s or psutil raise."""
    if _PROC_STAT:
        after_boot_s = _after_boot_s(pid)
        return _Start(after_boot_s + _boot_s(), after_boot_s)
    return _Start(float((proc or psutil.Process(pid)).create_time()), math.nan)


_UNREADABLE = (psutil.Error, OSError, ValueError, IndexError)  # gone, not ours, or not as expected


def process_start(pid: int) -> float:
    """When a host PID's process started (seconds since the epoch), NaN where it cannot be read:
    with the PID, what tells a process from a later one given the same PID. The same for the
    whole life of the process, wherever the wall clock is set (see _PROC_STAT)."""
    try:
        return _start(pid).started_s
    except _UNREADABLE:
        return math.nan


@dataclass(frozen=True)
class HostUsage:
    """What a process costs the host: CPU % of one core since the last reading, resident memory,
    when it started (process_start) and how long it has run. ``cpu_percent`` is NaN on the first
    reading."""

    cpu_percent: float
    rss_bytes: float
    started_s: float
    runtime_s: float


class HostUsageReader:
    """Host usage of GPU processes, read while their table is in view. CPU % needs two readings of
    a process's CPU times, so the psutil handle of each PID is kept between calls (and dropped
    once the PID is no longer asked for), with when it started."""

    def __init__(self) -> None:
        self._handles: dict[int, tuple[psutil.Process, _Start]] = {}

    def read(self, pids: Iterable[int]) -> dict[int, HostUsage]:
        """Usage of each PID that is alive and readable; the others are left out."""
        found: dict[int, HostUsage] = {}
        handles: dict[int, tuple[psutil.Process, _Start]] = {}
        for pid in pids:
            try:
                kept = self._handles.get(pid)
                if kept is None:
                    proc = psutil.Process(pid)
                    kept = (proc, _start(pid, proc))
                proc, start = kept
                with proc.oneshot():
                    cpu = proc.cpu_percent(interval=None)  # since the last call on this handle
                    rss = float(proc.memory_info().rss)
                first = pid not in self._handles
                usage = HostUsage(math.nan if first else cpu, rss, start.started_s, start.runtime_s())
            except _UNREADABLE:
                continue
            handles[pid] = kept
            found[pid] = usage
        self._handles = handles
        return found


def owned_by_me(pid: int) -> bool:
    """Whether the process runs as this user (the only processes trayvml offers to end)."""
    try:
        return psutil.Process(pid).uids().real == os.getuid()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def end_process(pid: int, started_s: float) -> None:
    """Ask a process of this user to end (SIGTERM, as ``kill`` does).

    ``started_s`` is its start time when it was shown, so that a PID reused since by another
    process is not ended. Raises ProcessLookupError if it is gone (or the PID was reused),
    PermissionError if it belongs to another user.
    """
    try:
        proc = psutil.Process(pid)
        try:
            started_now_s = _start(pid, proc).started_s
        except FileNotFoundError as gone:
            raise ProcessLookupError(f"process {pid} has already ended") from gone
        if abs(started_now_s - started_s) > 1.0:
            raise ProcessLookupError(f"process {pid} has already ended")
        if proc.uids().real != os.getuid():
            raise PermissionError(f"process {pid} belongs to another user")
        proc.terminate()
    except psutil.NoSuchProcess as gone:
        raise ProcessLookupError(f"process {pid} has already ended") from gone
    except psutil.AccessDenied as denied:
        raise PermissionError(f"no permission to end process {pid}") from denied
