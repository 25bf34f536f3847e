"""Whose work a GPU process is: its container, Slurm job, systemd unit, tmux/screen session,
Jupyter notebook, and the job that is the top-most of these.

Everything is read from procfs under an injectable root (tests give a fake /proc tree), only for
the processes NVML lists on a GPU, and each process is read once: the result is cached by PID and
start time (a PID the kernel hands to a later process is another process). Nothing is guessed:
what cannot be read stays "".

The cgroup path forms recognised, as the runtimes write them to /proc/PID/cgroup (examples kept
as fixtures in tests/test_attribution.py):
- Docker: ``/docker/<64 hex>`` (cgroupfs driver, v1 and v2) and ``/system.slice/docker-<64 hex>.scope``
  (systemd driver).
- Podman: ``/machine.slice/libpod-<64 hex>.scope[/container]``, rootless under
  ``/user.slice/user-<uid>.slice/user@<uid>.service/…`` (podman#20423, falcosecurity/libs#1613).
- containerd and CRI-O under Kubernetes: ``…/kubepods-…-pod<uid>.slice/cri-containerd-<64 hex>.scope``,
  ``…:cri-containerd:<64 hex>`` (v1 with the systemd driver, opentelemetry-java#4507),
  ``/kubepods/<qos>/pod<uid>/<64 hex>`` (cgroupfs driver), ``crio-<64 hex>.scope`` (minikube#11280).
- LXC: ``/lxc/<name>`` (v1), ``/lxc.payload/<name>`` and ``/lxc.payload.<name>/…`` (LXC 3.1+ and cgroup
  v2: lxc#2782, needrestart#238).
- Slurm: ``/slurm/uid_<uid>/job_<id>/step_<id>/task_<n>`` (cgroup/v1) and
  ``/system.slice/slurmstepd.scope/job_<id>/step_<id>/user/task_<n>`` (cgroup/v2), as
  slurm.schedmd.com/cgroups.html and cgroup_v2.html draw them; else SLURM_JOB_ID in its environment.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from trayvml.core.safe_text import clean
from trayvml.core.sample import NO_ATTRIBUTION, Attribution
from trayvml.host.containers import ContainerNames

PROC = Path("/proc")
CACHE_MAX = 4096
MAX_DEPTH = 64  # parent links followed at most (a loop in a fake or racing /proc ends here)
JUPYTER_WAIT_S = 0.5  # per Jupyter server asked: the lookup runs on the sampler's thread
# A kernel whose notebook no server named (one did not answer in time, or had not yet recorded the
# session) is asked again after this, doubling up to NOTEBOOK_RETRY_MAX_S: one slow answer must
# not lose the name for good, and a kernel no server knows (a console's) must not cost every tick.
NOTEBOOK_RETRY_FIRST_S = 10.0
NOTEBOOK_RETRY_MAX_S = 600.0
# A notebook found is asked again this often: one is named "Untitled.ipynb" when it starts and
# renamed while its kernel runs (kept, the first name stayed in the table, the jobs and the history).
NOTEBOOK_RECHECK_S = 60.0
# A server's answer (every session it runs) stands for this long: the kernels of one tick ask it once.
SESSIONS_FRESH_S = 2.0
MAX_ANSWER_BYTES = 4 << 20

_HEX64 = r"([0-9a-f]{64})"
# (runtime, pattern): the first that matches a cgroup path names the container.
_CONTAINERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("podman", re.compile(r"libpod-(?!conmon-)" + _HEX64)),
    ("docker", re.compile(r"docker[-/]" + _HEX64)),
    ("containerd", re.compile(r"cri-containerd[-:]" + _HEX64)),
    ("cri-o", re.compile(r"crio[-:]" + _HEX64)),
    ("containerd", re.compile(r"/kubepods/(?:[^/]+/)?pod[^/]+/" + _HEX64)),  # cgroupfs driver: no prefix
    ("lxc", re.compile(r"/lxc\.payload[./]([^/\s]+)")),
    ("lxc", re.compile(r"/lxc/([^/\s]+)")),
)
_SLURM_JOB = re.compile(r"/job_(\d+)(?:/|$)")
_UNIT = re.compile(r"^[^/]+\.(?:service|scope)$")
# Units that tell nothing about the job: those every process of a login or desktop sits in, and the
# transient ones a desktop, terminal or launcher makes per window, tab or launch, whose random names
# would hide the tmux session or the process tree beneath them. Their names, as systemd.io's
# "Desktop Environments" page gives them and the launchers write them:
# app-[<launcher>-]<AppID>-<RANDOM>.scope and app-[<launcher>-]<AppID>[@<RANDOM>].service (GNOME
# Shell's app-gnome-firefox-2918.scope, KDE's app-org.kde.konsole-<hex>.scope), dbus-:<bus>-<name>@….service
# (D-Bus activation), vte-spawn-<uuid>.scope (each GNOME Terminal tab, VTE 0.60+),
# tmux-spawn-<uuid>.scope (tmux 3.2+), kitty-<pid>-<n>.scope, snap.<snap>.<app>-<uuid>.scope, and
# gnome-terminal-server.service (its tabs before VTE made scopes). A unit a user runs (jupyter.service,
# `systemd-run --user --unit=finetune`) or a system service still names the job.
_UNTELLING_UNITS = re.compile(
    r"^(?:user@\d+\.service|init\.scope|session-\w+\.scope|slurmstepd\.scope"
    r"|app-.+\.(?:scope|service)|dbus-.+\.(?:scope|service)|vte-spawn-.+\.scope|tmux-spawn-.+\.scope"
    r"|kitty-\d+-\d+\.scope|snap\..+\.scope|gnome-terminal-server\.service)$"
)
_KERNEL_FILE = re.compile(r"kernel-([0-9A-Za-z-]+)\.json")

Fetch = Callable[[str, str, float], bytes]
"""GET ``url`` with Jupyter's ``token``, waiting at most the given seconds; raises OSError."""


def _fetch(url: str, token: str, timeout_s: float) -> bytes:
    # Imported here: only a Jupyter kernel on a GPU needs HTTP (and its TLS), not the idle tray.
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    # Jupyter servers listen on the local machine; a proxy from the environment must not see the token.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline_s = time.monotonic() + timeout_s  # the whole answer's (the timeout is each read's)
    chunks: list[bytes] = []
    with opener.open(request, timeout=timeout_s) as answer:
        while sum(map(len, chunks)) < MAX_ANSWER_BYTES:
            if time.monotonic() > deadline_s:
                raise TimeoutError(f"no whole answer within {timeout_s:g} s")
            chunk = answer.read1(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)[:MAX_ANSWER_BYTES]


def container_in(cgroup: str) -> tuple[str, str]:
    """(runtime, short id or LXC name) of the container a /proc/PID/cgroup text puts a process in,
    ("", "") on the host."""
    for line in cgroup.splitlines():
        path = line.split(":", 2)[-1]
        for runtime, pattern in _CONTAINERS:
            match = pattern.search(path)
            if match:
                found = match.group(1)
                return runtime, found[:12] if runtime != "lxc" else found
    return "", ""


def slurm_job_in(cgroup: str) -> str:
    for line in cgroup.splitlines():
        match = _SLURM_JOB.search(line.split(":", 2)[-1])
        if match:
            return match.group(1)
    return ""


def unit_in(cgroup: str) -> str:
    """The innermost systemd unit (system or user) that says something of the job, or ""."""
    for line in cgroup.splitlines():
        hierarchy, _, path = line.partition(":")[2].partition(":")
        if hierarchy not in ("", "name=systemd"):
            continue  # v1 controllers' paths need not follow systemd's units
        for part in reversed(path.split("/")):
            if _UNIT.match(part) and not _UNTELLING_UNITS.match(part):
                return part
    return ""


@dataclass(frozen=True)
class KernelSession:
    """A Jupyter kernel, the notebook its server runs it for, and how to reach that server."""

    kernel_id: str
    notebook: str  # its path under the server's root
    server_url: str  # "http://127.0.0.1:8888" (no trailing slash)
    token: str = field(repr=False)  # the server's, from its runtime file: never logged
    server_uid: int = -1  # who owns the server's runtime file


@dataclass(frozen=True)
class _Stat:
    comm: str
    ppid: int
    session: int
    start_ticks: int


@dataclass(frozen=True)
class _Kernel:
    """A Jupyter kernel as its command line and environment tell it: what to ask servers about."""

    kernel_id: str
    uid: int | None
    folders: tuple[Path, ...]  # where its servers' runtime files may be


@dataclass(frozen=True)
class _Known:
    """What procfs says of a process, read once: all but the names asked of other programs."""

    found: Attribution
    root_name: str
    kernel: _Kernel | None


@dataclass
class _NotebookLookup:
    notebook: str = ""
    retry_at_s: float = 0.0  # when to ask next (found: to see it renamed)
    wait_s: float = 0.0  # the back-off after the last failure; 0: none failed yet


@dataclass
class _Server:
    """A Jupyter server's last answer (its sessions) and, where it failed, its back-off: one that
    hangs (stopped with Ctrl-Z) cost each kernel's look-up its wait, every tick it was due."""

    sessions: list[object] | None = None
    asked_s: float = -math.inf
    retry_at_s: float = 0.0
    wait_s: float = 0.0


class Attributor:
    """Attribution of host PIDs, read under ``proc_root`` and cached by (PID, start time).

    ``runtime_dirs``: more Jupyter runtime folders to look for servers in (besides the kernel's
    connection file's folder and its JUPYTER_RUNTIME_DIR); ``fetch``: the HTTP GET (tests fail it);
    ``names``: the container runtimes asked for names (tests point it at their own sockets).

    What procfs says is read once per process. The names asked of other programs (a notebook from
    its Jupyter server, a container's from Docker or Podman) are asked where ``ask`` is True (the
    sampler's thread; ``attribute(pid, ask=False)`` on the NVML thread leaves them to it), each
    cached once found and asked again after a back-off where not found; ``pending`` says so.
    """

    def __init__(
        self,
        proc_root: Path = PROC,
        runtime_dirs: Iterable[Path] = (),
        fetch: Fetch = _fetch,
        wait_s: float = JUPYTER_WAIT_S,
        names: ContainerNames | None = None,
        now_s: Callable[[], float] = time.monotonic,
    ) -> None:
        self.proc_root = proc_root
        self.runtime_dirs = tuple(runtime_dirs)
        self.fetch = fetch
        self.wait_s = wait_s
        self.names = names if names is not None else ContainerNames()
        self.now_s = now_s
        self._cache: dict[tuple[int, int], _Known] = {}
        self._notebooks: dict[tuple[int, int], _NotebookLookup] = {}
        self._servers: dict[str, _Server] = {}  # by server file
        self._lock = threading.Lock()

    def attribute(self, pid: int, ask: bool = True) -> Attribution:
        stat = self._stat(pid)
        if stat is None:
            return NO_ATTRIBUTION  # gone, or not in our PID namespace
        key = (pid, stat.start_ticks)
        with self._lock:
            known = self._cache.get(key)
        if known is None:
            known = self._read(pid, stat)
            with self._lock:
                if len(self._cache) >= CACHE_MAX:
                    self._cache.clear()
                    self._notebooks.clear()
                self._cache[key] = known
        found = known.found
        if known.kernel is not None:  # (from procfs: known without asking)
            found = replace(found, kernel_id=known.kernel.kernel_id)
        if ask:
            notebook, notebook_pending = self._notebook(key, known.kernel)
            name, name_pending = self.names.name(found.runtime, found.container)
            found = replace(
                found, notebook=clean(notebook), container_name=clean(name), pending=notebook_pending or name_pending
            )
        else:
            found = replace(found, pending=known.kernel is not None or self.names.asks(found.runtime))
        return with_job(found, known.root_name)

    def refresh(self, pid: int, attribution: Attribution) -> Attribution:
        """``attribution`` with the names asked again where they are ``pending`` (and due); as it
        was where the process has gone."""
        if not attribution.pending:
            return attribution
        fresh = self.attribute(pid)
        return fresh if fresh is not NO_ATTRIBUTION else attribution

    # procfs
    def _text(self, pid: int, name: str) -> str:
        try:
            return (self.proc_root / str(pid) / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""  # gone, or another user's and hidden (hidepid, environ)

    def _stat(self, pid: int) -> _Stat | None:
        text = self._text(pid, "stat")
        head, paren, tail = text.rpartition(")")  # the name may hold spaces and parentheses
        fields = tail.split()
        if not paren or len(fields) < 20:
            return None
        try:
            # man 5 proc: after the name, state(3) ppid(4) pgrp(5) session(6) … starttime(22)
            return _Stat(head.partition("(")[2], int(fields[1]), int(fields[3]), int(fields[19]))
        except ValueError:
            return None

    def _environ(self, pid: int) -> dict[str, str]:
        pairs = (entry.partition("=") for entry in self._text(pid, "environ").split("\0") if "=" in entry)
        return {name: value for name, _, value in pairs}

    def _uid(self, pid: int) -> int | None:
        for line in self._text(pid, "status").splitlines():
            if line.startswith("Uid:"):
                try:
                    return int(line.split()[1])
                except (IndexError, ValueError):
                    return None
        return None

    # the parts
    def _read(self, pid: int, stat: _Stat) -> _Known:
        cgroup = self._text(pid, "cgroup")
        environ = self._environ(pid)
        runtime, container = container_in(cgroup)
        slurm = slurm_job_in(cgroup) or environ.get("SLURM_JOB_ID", "").strip()
        if not slurm.isdigit():
            slurm = ""  # an environment says anything; a job id is a number
        # Its name only from the job's own environment (a process started elsewhere may carry another's).
        slurm_name = environ.get("SLURM_JOB_NAME", "") if slurm and environ.get("SLURM_JOB_ID") == slurm else ""
        unit = unit_in(cgroup)
        session, root = self._tree(pid, stat, environ)
        found = Attribution(
            container=clean(container),
            runtime=runtime,
            slurm_job=slurm,
            slurm_job_name=clean(slurm_name),
            unit=clean(unit),
            session=clean(session),
            root_pid=root,
        )
        top = self._stat(root)
        return _Known(found, top.comm if top is not None else "", self._kernel(pid, environ))

    def _tree(self, pid: int, stat: _Stat, environ: dict[str, str]) -> tuple[str, int]:
        """(tmux/screen session, root of the process tree), read up the parent PIDs: the root is
        the top-most ancestor below init or the session leader (a login shell, a pane's shell);
        the session is a terminal multiplexer's server above it, wherever up the tree."""
        root, current, session, rooted = pid, stat, "", False
        for _ in range(MAX_DEPTH):
            if current.ppid <= 1:
                break
            if current.ppid == current.session:
                rooted = True  # the root is found; only a multiplexer above is still of interest
            parent = self._stat(current.ppid)
            if parent is None:
                break  # another user's, or gone: the tree ends where we can see
            multiplexer = _multiplexer(parent.comm)
            if multiplexer:
                session = _session_name(multiplexer, current.ppid, environ)
                break
            if not rooted:
                root = current.ppid
            current = parent
        return session, root

    def _notebook(self, key: tuple[int, int], kernel: _Kernel | None) -> tuple[str, bool]:
        """(the kernel's notebook or ""; whether it is worth asking again later: always for a
        kernel, whose notebook may be renamed)."""
        if kernel is None:
            return "", False
        with self._lock:
            lookup = self._notebooks.setdefault(key, _NotebookLookup())
            if self.now_s() < lookup.retry_at_s:
                return lookup.notebook, True
        session = self._session_of(kernel)
        with self._lock:
            if session is not None:
                lookup.notebook, lookup.wait_s = session.notebook, 0.0
                lookup.retry_at_s = self.now_s() + NOTEBOOK_RECHECK_S
            elif not lookup.notebook:  # a name found stays until a server names another
                lookup.wait_s = _longer(lookup.wait_s)
                lookup.retry_at_s = self.now_s() + lookup.wait_s
            else:
                lookup.retry_at_s = self.now_s() + NOTEBOOK_RECHECK_S
            return lookup.notebook, True

    def own_kernel(self, pid: int) -> KernelSession | None:
        """The Jupyter session of ``pid`` where it is a kernel of this user's, run by a server of
        this user's (asked now, not cached); None for anything else: another user's kernel or
        server is never one to act on."""
        if self._stat(pid) is None or self._uid(pid) != os.getuid():
            return None
        kernel = self._kernel(pid, self._environ(pid))
        session = self._session_of(kernel) if kernel is not None else None
        return session if session is not None and session.server_uid == os.getuid() else None

    def _kernel(self, pid: int, environ: dict[str, str]) -> _Kernel | None:
        """The Jupyter kernel ``pid`` is, from the connection file its command line names; None
        for any other process."""
        command = self._text(pid, "cmdline").split("\0")
        connection = next((arg for arg in command if _KERNEL_FILE.search(arg)), "")
        match = _KERNEL_FILE.search(connection)
        if match is None:
            return None
        folders = [Path(connection.partition("=")[2] or connection).parent, *self.runtime_dirs]
        if environ.get("JUPYTER_RUNTIME_DIR"):
            folders.insert(0, Path(environ["JUPYTER_RUNTIME_DIR"]))
        unique = tuple(dict.fromkeys(f for f in folders if f.is_absolute()))
        return _Kernel(match.group(1), self._uid(pid), unique)

    def _session_of(self, kernel: _Kernel) -> KernelSession | None:
        """The notebook of a Jupyter kernel: the running servers of the same user (their
        jpserver-*.json files) say which session has that kernel."""
        for folder in kernel.folders:
            for server in sorted(folder.glob("jpserver-*.json")):
                session = self._ask_server(server, kernel.uid, kernel.kernel_id)
                if session is not None:
                    return session
        return None

    def _ask_server(self, file: Path, uid: int | None, kernel_id: str) -> KernelSession | None:
        try:
            if uid is None or file.stat().st_uid != uid:
                return None  # another user's server: its sessions are not this process's to tell
            info = json.loads(file.read_text(encoding="utf-8"))
            url, token, server_pid = str(info["url"]), str(info.get("token", "")), int(info["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not url.startswith(("http://", "https://")) or not (self.proc_root / str(server_pid)).is_dir():
            return None  # a stale file of a server that has ended
        base = url.rstrip("/")
        sessions = self._sessions(str(file), base, token)
        for session in sessions or ():
            if isinstance(session, dict) and (session.get("kernel") or {}).get("id") == kernel_id:
                path = session.get("path") or (session.get("notebook") or {}).get("path") or ""
                return KernelSession(kernel_id, str(path), base, token, uid) if path else None
        return None

    def _sessions(self, key: str, base: str, token: str) -> list[object] | None:
        """The server's sessions, asked at most once in SESSIONS_FRESH_S; None where it did not
        answer in time or is not Jupyter (no notebook said rather than a guess), after which it is
        left alone for a back-off (10 s, doubling to 10 min)."""
        now_s = self.now_s()
        with self._lock:
            server = self._servers.get(key)
            if server is None:
                if len(self._servers) >= CACHE_MAX:
                    self._servers.clear()
                server = self._servers[key] = _Server()
            if now_s < server.retry_at_s:
                return None
            if now_s - server.asked_s <= SESSIONS_FRESH_S:
                return server.sessions
        try:
            sessions = json.loads(self.fetch(base + "/api/sessions", token, self.wait_s))
            if not isinstance(sessions, list):
                raise ValueError("not a list of sessions")
        except (OSError, ValueError):
            with self._lock:
                server.wait_s = _longer(server.wait_s)
                server.retry_at_s, server.sessions = self.now_s() + server.wait_s, None
            return None
        with self._lock:
            server.sessions, server.asked_s, server.wait_s = sessions, now_s, 0.0
        return sessions


def _longer(wait_s: float) -> float:
    """The back-off after one more failure: the first, then doubling up to NOTEBOOK_RETRY_MAX_S."""
    return min(wait_s * 2, NOTEBOOK_RETRY_MAX_S) if wait_s else NOTEBOOK_RETRY_FIRST_S


def _multiplexer(comm: str) -> str:
    # tmux names its server process "tmux: server"; GNU screen's is "screen" (or "SCREEN").
    if comm.startswith("tmux"):
        return "tmux"
    if comm.lower() == "screen":
        return "screen"
    return ""


def _session_name(kind: str, server_pid: int, environ: dict[str, str]) -> str:
    """tmux: the socket's name from TMUX ("/tmp/tmux-1000/default,1234,0"); screen: STY
    ("1234.pts-0.host"); else the server's PID."""
    if kind == "tmux" and environ.get("TMUX"):
        return f"tmux {Path(environ['TMUX'].split(',')[0]).name}"
    if kind == "screen" and environ.get("STY"):
        return f"screen {environ['STY']}"
    return f"{kind} {server_pid}"


def with_job(found: Attribution, root_name: str) -> Attribution:
    """The top-most of what is known is the job."""
    if found.notebook:
        return replace(found, job=found.notebook, job_kind="notebook")
    if found.kernel_id:  # a kernel whose notebook is not known (yet, or at all: a console's, VS Code's)
        return replace(found, job=found.kernel_id[:8], job_kind="kernel")
    if found.container:
        named = found.container_name or found.container
        return replace(found, job=f"{found.runtime or 'container'} {named}", job_kind="container")
    if found.slurm_job:
        return replace(found, job=found.slurm_job, job_kind="slurm")
    if found.unit:
        return replace(found, job=found.unit, job_kind="unit")
    if found.session:
        return replace(found, job=found.session, job_kind="session")
    if found.root_pid:
        name = clean(root_name)
        return replace(found, job=f"{name} {found.root_pid}" if name else str(found.root_pid), job_kind="process")
    return found


_default: Attributor | None = None


def default_attributor() -> Attributor:
    """The one for this machine's /proc, with this user's Jupyter runtime folder."""
    global _default
    if _default is None:
        runtime = os.environ.get("JUPYTER_RUNTIME_DIR")
        home = Path.home() / ".local" / "share" / "jupyter" / "runtime"
        _default = Attributor(PROC, [Path(runtime)] if runtime else [home])
    return _default
