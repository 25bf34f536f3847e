"""A GPU box over SSH with nothing installed there: ``ssh://[user@]host[:port]``.

One long-lived ``ssh`` per host, through the user's own OpenSSH client (their ~/.ssh/config, agent
and known_hosts; ``TRAYVML_SSH_CONFIG`` names another config file). It never asks for a password
(``BatchMode=yes``) and gives up on a host that does not answer (``ConnectTimeout``) or stops
answering (``ServerAliveInterval``). On the host, one small POSIX shell loop runs:

- where ``trayvml`` is installed (``command -v trayvml``): ``trayvml snapshot --json`` every interval,
  each document followed by a marker line;
- otherwise ``nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits -l N``, and
  ``nvidia-smi --query-compute-apps=...`` every interval or 5 s, the longer, each line prefixed by which it is.

Both are parsed into the same Sample objects as the other remote readers. What nvidia-smi does not
report is "not supported", never 0: older drivers write ``[Not Supported]`` for a field a GPU lacks;
580 writes ``[N/A]`` for it (the H200's fan and retired pages in tests/recordings/h200-580-*.jsonl,
where NVML answers NOT_SUPPORTED), and its ``--help-query-gpu`` says "'N/A' indicates that the field
is not supported on the current device": both are read as NOT_SUPPORTED. The reader thread keeps
only the latest complete batch; the RemoteSource thread asks for it every interval and, when the
connection has ended, gets the reason in a sentence (and backs off before the next connection).
``close`` ends the ``ssh`` process: terminate, then kill.
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import IO, Any

from trayvml.core.clock import SystemClock, stamp_monotonic_s
from trayvml.core.i18n import translate
from trayvml.core.metrics import GPU_METRICS, HOST_METRICS
from trayvml.core.safe_text import clean
from trayvml.core.sample import (
    DeviceInfo,
    GpuSample,
    HostSample,
    MetricState,
    ProcessSample,
    RemoteOrigin,
    Sample,
    SystemInfo,
)
from trayvml.core.units import MIB
from trayvml.remote.fetch import Endpoint, RemoteError

_CLOCK = SystemClock()  # what a batch is stamped with when it comes (_publish)

SSH_CONFIG_ENV = "TRAYVML_SSH_CONFIG"  # an ssh_config file given to ssh -F (default: the user's own)
CONNECT_TIMEOUT_S = 10
ALIVE_INTERVAL_S = 5  # ssh ends a connection after 3 keep-alives go unanswered: 15 s
FIRST_ANSWER_S = 15.0  # from starting ssh to the first complete batch (connection, login, a first read)
TERMINATE_WAIT_S = 2.0  # after SIGTERM, before SIGKILL
# The process list is read this often at most (it costs a few ms per GPU); at longer intervals, each one.
PROCESS_EVERY_S = 5
MAX_LINE = 1 << 20  # a line longer than this is not nvidia-smi's, nor a snapshot's
STDERR_LINES = 20
UNTAKEN_BATCHES = 64  # batches kept for the next read: a minute of them at 1 s

# nvidia-smi --query-gpu fields (nvidia-smi --help-query-gpu) and where each goes: a catalog key and
# the factor into its unit. Only fields every driver of the last years knows: one unknown field makes
# nvidia-smi refuse the whole query. "count" says how many lines make one complete read.
IDENTITY_FIELDS = ("count", "index", "name", "uuid", "pci.bus_id", "driver_version", "memory.total")
METRIC_FIELDS: Mapping[str, tuple[str, float]] = {
    "utilization.gpu": ("utilization_gpu_percent", 1.0),
    "utilization.memory": ("utilization_memory_percent", 1.0),
    "memory.used": ("memory_used_bytes", MIB),  # MiB without units (nounits)
    "memory.free": ("memory_free_bytes", MIB),
    "temperature.gpu": ("temperature_gpu_c", 1.0),
    "fan.speed": ("fan_speed_percent", 1.0),
    "power.draw": ("power_draw_w", 1.0),
    "power.limit": ("power_limit_w", 1.0),
    "enforced.power.limit": ("power_enforced_limit_w", 1.0),
    "clocks.sm": ("clock_sm_mhz", 1.0),
    "clocks.gr": ("clock_graphics_mhz", 1.0),
    "clocks.mem": ("clock_memory_mhz", 1.0),
    "clocks.video": ("clock_video_mhz", 1.0),
    "pstate": ("performance_state", 1.0),  # "P0" .. "P15"
    "pcie.link.gen.current": ("pcie_link_gen", 1.0),
    "pcie.link.width.current": ("pcie_link_width", 1.0),
    "ecc.errors.corrected.volatile.total": ("ecc_corrected_volatile_count", 1.0),
    "ecc.errors.uncorrected.volatile.total": ("ecc_uncorrected_volatile_count", 1.0),
}
GPU_FIELDS = (*IDENTITY_FIELDS, *METRIC_FIELDS)
APP_FIELDS = ("pid", "used_memory", "process_name", "gpu_uuid")

# What nvidia-smi writes instead of a value, and what trayvml says instead (N/A: see the module's doc).
_NOT_A_VALUE = {
    "[not supported]": MetricState.NOT_SUPPORTED,
    "[n/a]": MetricState.NOT_SUPPORTED,
    "n/a": MetricState.NOT_SUPPORTED,
    "[insufficient permissions]": MetricState.NO_PERMISSION,
    "[unknown error]": MetricState.NO_DATA,
    "[gpu is lost]": MetricState.LOST,
    "[gpu requires reset]": MetricState.LOST,
}
_STATE_OF_LABEL = {state.label: state for state in MetricState}  # snapshot --json's "states" (English)


_NO_SMI = "nvidia-smi: command not found"  # what the script says where there is none (exit 127)
MAX_DOCUMENT = 16 << 20  # characters of one snapshot document (8 GPUs and their processes: ~100 K)


class SshError(Exception):
    """The connection cannot give current values; the message is the sentence to show."""


def remote_script(interval_s: float) -> str:
    """The POSIX shell loop run on the host (one line: csh and fish users' login shells start it with sh -c)."""
    seconds = max(1, round(interval_s))
    query = ",".join(GPU_FIELDS)
    apps = ",".join(APP_FIELDS)
    # Each output line is written by one printf (one write(2) under PIPE_BUF, so the two loops'
    # lines never interleave mid-line); "P." ends a process list, "S." a snapshot document.
    # A write that fails (trayvml's ssh gone, SIGPIPE ignored on the host) ends the loop, and the
    # trap its whole process group: else the loops went on for good, a set more each reconnect.
    prefix = 'while IFS= read -r l; do printf "%s %s\\n" {tag} "$l" || exit; done'
    # A snapshot every interval, however long one takes (a second or two): the interval's sleep
    # runs beside it. After it, each batch came an interval and a snapshot apart, and a host read
    # every 5 s left one 5 s row in four of its history empty (its line in pieces).
    trayvml = (
        f"while :; do sleep {seconds} & trayvml snapshot --json 2>/dev/null | {prefix.format(tag='S')}; "
        "echo S. || exit; wait; done"
    )
    smi = (
        f"command -v nvidia-smi >/dev/null 2>&1 || {{ echo '{_NO_SMI}' >&2; exit 127; }}; "
        f"nvidia-smi --query-gpu={query} --format=csv,noheader,nounits -l {seconds} 2>&1 "
        f"| {prefix.format(tag='G')} & "
        f"while :; do nvidia-smi --query-compute-apps={apps} --format=csv,noheader,nounits 2>&1 "
        f"| {prefix.format(tag='P')}; echo P. || exit; sleep {max(seconds, PROCESS_EVERY_S)}; done"
    )
    # A trayvml that cannot answer (an old one, another program of that name) is tried once: after
    # it, nvidia-smi. Taken, it printed nothing each interval and the host "did not answer" for good.
    usable = "command -v trayvml >/dev/null 2>&1 && trayvml snapshot --json >/dev/null 2>&1"
    # The trap ends the loops beside it with the script, keeping its exit status (127: no nvidia-smi).
    trap = """trap 'code=$?; trap "" TERM; kill 0; exit $code' EXIT"""
    return f"{trap}; if {usable}; then echo T; {trayvml}; else echo N; {smi}; fi"


def ssh_command(host: str, user: str, port: int | None, interval_s: float, config: str | None = None) -> list[str]:
    """The ``ssh`` command line for one host.

    ``config``: an ssh_config file for ``-F``; None: $TRAYVML_SSH_CONFIG's, else the user's own."""
    if config is None:
        config = os.environ.get(SSH_CONFIG_ENV) or None
    command = [
        "ssh",
        "-T",  # no terminal: the output is read by a program
        "-o",
        "BatchMode=yes",  # never a password or passphrase prompt: a key (or the agent) or nothing
        "-o",
        f"ConnectTimeout={CONNECT_TIMEOUT_S}",
        "-o",
        f"ServerAliveInterval={ALIVE_INTERVAL_S}",
        "-o",
        "ServerAliveCountMax=3",
        # What the user's config sets up for their own sessions is not for this one, open all day:
        # no forwarding (a LocalForward taken from their next ssh, their agent on a shared box), no
        # terminal or local command, and never the master of a multiplexed
        # connection (ending trayvml's ssh ended the user's sessions through it; ControlPersist left
        # it running). A master of the user's own is used.
        *("-o", "ClearAllForwardings=yes", "-o", "ForwardAgent=no", "-o", "ForwardX11=no"),
        # (Not RemoteCommand=none: an OpenSSH before 7.6 refuses the option, and every host with it.)
        *("-o", "RequestTTY=no", "-o", "PermitLocalCommand=no"),
        *("-o", "ControlMaster=no", "-o", "ControlPersist=no"),
    ]
    if config:
        command += ["-F", config]
    if port is not None:
        command += ["-p", str(port)]
    if user:
        command += ["-l", user]
    # "--": a host name is never read as an option; the script is one argument, given to the login
    # shell, which starts sh with it (the login shell may be csh or fish).
    return [*command, "--", host, "exec sh -c " + shlex.quote(remote_script(interval_s))]


def explain(url: str, returncode: int | None, stderr: Sequence[str]) -> str:
    """Why the connection to ``url`` ended, in one sentence, from ssh's exit status and last words."""
    text = "\n".join(stderr)
    last = next((line.strip() for line in reversed(stderr) if line.strip()), "")
    if "Host key verification failed" in text or "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        return translate(
            "remote",
            "{url}: the host's key is not known (or has changed): connect once with ssh yourself to "
            "check and accept it.",
        ).format(url=url)
    # ssh's own words only: a login shell's "Permission denied" or "command not found" (a profile
    # script, conda) came before a session that ran, and was taken for why it ended.
    if returncode == 255 and "Permission denied (" in text:
        return translate(
            "remote",
            "{url}: SSH login failed (permission denied): trayvml logs in with a key or the SSH agent "
            "only, never a password.",
        ).format(url=url)
    if returncode == 127 and _NO_SMI in stderr:
        return translate("remote", "{url}: nvidia-smi is not installed there (command not found).").format(url=url)
    if returncode == 255:
        return translate("remote", "{url}: SSH could not connect: {reason}.").format(
            url=url, reason=last.rstrip(".") or translate("remote", "no reason given")
        )
    return translate("remote", "{url}: the SSH session ended (exit status {code}){reason}.").format(
        url=url, code=returncode, reason=f": {last.rstrip('.')}" if last else ""
    )


def _number(text: str) -> tuple[float, MetricState]:
    text = text.strip()
    state = _NOT_A_VALUE.get(text.lower())
    if state is not None:
        return math.nan, state
    if text[:1] == "P" and text[1:].isdigit():  # pstate
        return float(text[1:]), MetricState.OK
    try:
        value = float(text)
    except ValueError:
        return math.nan, MetricState.NO_DATA
    return (value, MetricState.OK) if math.isfinite(value) else (math.nan, MetricState.NO_DATA)


def _percent(part: float, whole: float) -> float:
    return 100.0 * part / whole if math.isfinite(part) and math.isfinite(whole) and whole > 0 else math.nan


def smi_samples(lines: Sequence[str], apps: Sequence[str] | None, host: str, url: str, now_s: float) -> Sample:
    """One Sample from one read of ``--query-gpu`` (``lines``) and the latest ``--query-compute-apps``
    (None: none came yet, its processes unknown, not none: the first reads of each connection)."""
    gpus: list[GpuSample] = []
    devices: list[DeviceInfo] = []
    driver = ""
    by_uuid: dict[str, list[ProcessSample]] = {}
    for line in apps or ():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(APP_FIELDS) or not cells[0].isdigit():
            continue
        used, state = _number(cells[1])
        by_uuid.setdefault(cells[3], []).append(
            ProcessSample(-1, int(cells[0]), "compute", used * MIB if state is MetricState.OK else math.nan, cells[2])
        )
    for line in lines:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(GPU_FIELDS):
            raise SshError(
                translate("remote", "{url}: nvidia-smi answered something trayvml cannot read: {line}").format(
                    url=url, line=line[:200]
                )
            )
        named = dict(zip(GPU_FIELDS, cells, strict=True))
        index = int(named["index"]) if named["index"].isdigit() else len(gpus)
        driver = driver or named["driver_version"]
        total, total_state = _number(named["memory.total"])
        values: dict[str, float] = {}
        states: dict[str, MetricState] = {}
        for name, (key, scale) in METRIC_FIELDS.items():
            value, state = _number(named[name])
            values[key], states[key] = value * scale, state
        total_bytes = total * MIB if total_state is MetricState.OK else math.nan
        for key, value in (
            ("memory_used_percent", _percent(values["memory_used_bytes"], total_bytes)),
            ("power_used_percent", _percent(values["power_draw_w"], values["power_enforced_limit_w"])),
        ):
            values[key], states[key] = value, MetricState.OK if math.isfinite(value) else MetricState.NO_DATA
        processes = tuple(
            ProcessSample(index, p.pid, p.kind, p.used_memory_bytes, p.name) for p in by_uuid.get(named["uuid"], [])
        )
        listed = apps is not None
        values["process_count"] = float(len(processes)) if listed else math.nan
        states["process_count"] = MetricState.OK if listed else MetricState.NO_DATA
        lost = any(s is MetricState.LOST for s in states.values())
        gpus.append(
            GpuSample(
                index=index,
                values=tuple(values.get(m.key, math.nan) for m in GPU_METRICS),
                # What nvidia-smi is not asked for (or cannot tell) is not supported here, never 0.
                states=tuple(states.get(m.key, MetricState.NOT_SUPPORTED) for m in GPU_METRICS),
                processes=processes,
                lost=lost,
            )
        )
        devices.append(
            DeviceInfo(
                index=index,
                name=named["name"],
                uuid=named["uuid"],
                pci_bus_id=named["pci.bus_id"],
                memory_total_bytes=total_bytes,
            )
        )
    return Sample(
        timestamp_s=now_s,
        gpus=tuple(gpus),
        devices=tuple(devices),
        system=SystemInfo(host, driver, "", ""),
        host=None,
        remote=RemoteOrigin(url, "nvidia-smi over SSH"),
    )


def _float(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


_DEVICE_FIELDS = {f.name: f for f in fields(DeviceInfo)}


def snapshot_sample(document: Mapping[str, Any], host: str, url: str, now_s: float) -> Sample:
    """One Sample from a remote ``trayvml snapshot --json`` document."""
    system = document.get("system") or {}
    hostname = clean(str(system.get("hostname") or host))  # a line break in it failed its alerts' e-mails
    fault = ""
    if document.get("unavailable"):
        fault = str(document["unavailable"].get("message") or "")
    elif document.get("driver_stall"):
        fault = str(document["driver_stall"].get("message") or "")
    if fault:
        fault = translate("remote", "{url}: {host}: {reason}").format(url=url, host=hostname, reason=fault)
    gpus: list[GpuSample] = []
    devices: list[DeviceInfo] = []
    for gpu in [] if fault else document.get("gpus") or []:
        index = int(gpu["index"])
        metrics, states = gpu.get("metrics") or {}, gpu.get("states") or {}
        gpus.append(
            GpuSample(
                index=index,
                values=tuple(_float(metrics.get(m.key)) for m in GPU_METRICS),
                states=tuple(
                    _STATE_OF_LABEL.get(states[m.key], MetricState.NO_DATA)
                    if m.key in states
                    else (MetricState.OK if m.key in metrics else MetricState.NOT_SUPPORTED)
                    for m in GPU_METRICS
                ),
                processes=tuple(
                    ProcessSample(
                        index,
                        int(p["pid"]),
                        str(p.get("kind") or "compute"),
                        _float(p.get("used_memory_bytes")),
                        str(p.get("name") or ""),
                        str(p.get("user") or ""),
                        str(p.get("command") or ""),
                    )
                    for p in gpu.get("processes") or []
                ),
                lost=bool(gpu.get("lost")),
                asleep=bool(gpu.get("asleep")),
            )
        )
        info = gpu.get("info") or {}
        known: dict[str, Any] = {
            k: (_float(v) if _DEVICE_FIELDS[k].type == "float" else v)
            for k, v in info.items()
            if k in _DEVICE_FIELDS and k != "index" and v is not None
        }
        devices.append(DeviceInfo(**{"name": "", "uuid": "", **known, "index": index}))
    host_values = document.get("host")
    return Sample(
        timestamp_s=now_s,
        gpus=tuple(gpus),
        devices=tuple(devices),
        system=SystemInfo(
            hostname,
            str(system.get("driver_version") or ""),
            str(system.get("cuda_driver_version") or ""),
            str(system.get("nvml_version") or ""),
        ),
        host=HostSample(tuple(_float(host_values.get(m.key)) for m in HOST_METRICS))
        if isinstance(host_values, dict)
        else None,
        simulation=str(document.get("simulated") or ""),
        remote=RemoteOrigin(url, "trayvml over SSH", fault, now_s if fault else math.nan),
    )


@dataclass
class _Batch:
    """What the reader thread is putting together from the stream."""

    mode: str = ""  # "T": trayvml snapshots; "N": nvidia-smi
    gpu_lines: list[str] = field(default_factory=list)
    app_lines: list[str] = field(default_factory=list)
    apps: tuple[str, ...] | None = None  # the last complete process list; None: none came yet
    document: list[str] = field(default_factory=list)
    document_size: int = 0  # characters in ``document``


class SshConnection:
    """One ``ssh`` process to one host and a thread reading what it says; the latest batch kept,
    and those no read has taken yet."""

    def __init__(self, url: str, command: list[str], host: str) -> None:
        self.url = url
        self.host = host
        self._command = command
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._latest: Sample | None = None
        self._latest_at_s = math.nan  # monotonic
        self._untaken: collections.deque[Sample] = collections.deque(maxlen=UNTAKEN_BATCHES)
        self._problem = ""  # a sentence: the stream said something unreadable
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self.started_at_s = time.monotonic()
        # No stdin (the remote loop reads none), its own session so that closing the desktop's
        # terminal does not end it and a terminate reaches it alone.
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
        )
        self._readers = [
            threading.Thread(target=self._read_stdout, name=f"trayvml-ssh {url}", daemon=True),
            threading.Thread(target=self._read_stderr, name=f"trayvml-ssh-err {url}", daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in _lines(self.process.stderr):
            with self._lock:
                self._stderr.append(line[:500])

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        batch = _Batch()
        for line in _lines(self.process.stdout):
            try:
                self._line(batch, line)
            # (OverflowError: a pid of Infinity; RecursionError: a document nested past Python's
            # limit. Either ended this thread with a traceback, and the host was said to have ended.)
            except (SshError, ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError) as error:
                message = str(error) if isinstance(error, SshError) else self._unreadable(error)
                with self._changed:
                    self._problem = message
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _unreadable(self, error: Exception) -> str:
        return translate("remote", "{url}: the host answered something trayvml cannot read ({error}).").format(
            url=self.url, error=type(error).__name__
        )

    def _line(self, batch: _Batch, line: str) -> None:
        if not batch.mode:
            if line in ("T", "N"):
                batch.mode = line
            return
        tag, _, text = line.partition(" ")
        if tag == "P":
            batch.app_lines.append(text)
        elif tag == "P.":
            batch.apps, batch.app_lines = tuple(batch.app_lines), []
        elif tag == "G":
            if not text.split(",", 1)[0].strip().isdigit():  # an error message, not a GPU line
                batch.gpu_lines = []  # its read is not whole: the lines before it go with it
                raise SshError(
                    translate("remote", "{url}: nvidia-smi says: {message}").format(url=self.url, message=text[:300])
                )
            batch.gpu_lines.append(text)
            count = int(text.split(",", 1)[0])
            if len(batch.gpu_lines) >= count:
                lines, apps, batch.gpu_lines = batch.gpu_lines, batch.apps, []
                self._publish(lambda now_s: smi_samples(lines, apps, self.host, self.url, now_s))
        elif tag == "S":
            batch.document.append(text)
            batch.document_size += len(text) + 1
            if batch.document_size > MAX_DOCUMENT:
                batch.document, batch.document_size = [], 0
                raise SshError(
                    translate("remote", "{url}: the host's snapshot is larger than {size} MiB.").format(
                        url=self.url, size=MAX_DOCUMENT >> 20
                    )
                )
        elif tag == "S.":
            text, batch.document, batch.document_size = "\n".join(batch.document), [], 0
            if text.strip():
                document = json.loads(text)
                self._publish(lambda now_s: snapshot_sample(document, self.host, self.url, now_s))

    def _publish(self, made: Callable[[float], Sample]) -> None:
        """The batch that just came, ``made`` into a sample at the wall clock's now, and stamped with
        the monotonic clock's too: a read takes it up to an interval later, and its own stamp
        would differ from the wall's by that lag (a clock set, to the host's Monitor)."""
        now_s, monotonic_s = _CLOCK.now_s(), stamp_monotonic_s(_CLOCK)
        sample = replace(made(now_s), monotonic_s=monotonic_s)
        with self._changed:
            self._latest, self._latest_at_s, self._problem = sample, time.monotonic(), ""
            self._untaken.append(sample)
            self._changed.notify_all()

    def take(self) -> list[Sample]:
        """The batches that came since the last call, oldest first."""
        with self._lock:
            taken = list(self._untaken)
            self._untaken.clear()
        return taken

    def latest(self, wait_s: float) -> tuple[Sample | None, float, str]:
        """The latest sample and when it came (monotonic), waiting at most ``wait_s`` for a first one;
        and a sentence saying why there is none (the session ended), "" while it runs."""
        end_s = time.monotonic() + wait_s
        with self._changed:
            while self._latest is None and not self._problem and self.process.poll() is None:
                left_s = end_s - time.monotonic()
                if left_s <= 0:
                    break
                self._changed.wait(min(left_s, 0.1))  # and look at the process again
            latest, at_s, problem = self._latest, self._latest_at_s, self._problem
        if self.process.poll() is not None:
            self._readers[1].join(0.5)  # its last words
            with self._lock:
                stderr = list(self._stderr)
            return None, at_s, explain(self.url, self.process.returncode, stderr)
        return latest, at_s, problem

    def close(self) -> None:
        """End ssh and whatever it started (a ProxyCommand's helper): its process group, which is
        its own, terminated, then killed; every wait bounded. Ended alone, a helper holding the
        pipes kept them open, and closing one under its reader waited for that reader (30 s)."""
        if self.process.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.process.wait(TERMINATE_WAIT_S)
            except subprocess.TimeoutExpired:
                self._signal(getattr(signal, "SIGKILL", signal.SIGTERM))
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(TERMINATE_WAIT_S)
        for reader in self._readers:
            reader.join(0.5)
        for stream, reader in zip((self.process.stdout, self.process.stderr), self._readers, strict=True):
            if stream is not None and not reader.is_alive():  # (one still reading ends at its pipe's end)
                with contextlib.suppress(OSError):
                    stream.close()

    def _signal(self, number: int) -> None:
        """``number`` to ssh's process group (its own: start_new_session); where there are no
        process groups (Windows), ssh alone, terminated or killed."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if hasattr(os, "killpg"):
                os.killpg(self.process.pid, number)
            elif number == signal.SIGTERM:
                self.process.terminate()
            else:
                self.process.kill()


def _lines(stream: IO[str]) -> Iterator[str]:
    """``stream``'s lines without their line break, each cut at MAX_LINE characters as it is read
    (a line read whole first held 300 MB for a host printing no line break), until it ends or is
    closed under this thread (close, where something other than ssh held the pipe open)."""
    with contextlib.suppress(ValueError, OSError):
        while line := stream.readline(MAX_LINE):
            if not line.endswith("\n"):
                while (rest := stream.readline(MAX_LINE)) and not rest.endswith("\n"):
                    pass  # the rest of an overlong line
            yield line.rstrip("\n")


class SshReader:
    """A RemoteSource's reader for an ``ssh://`` endpoint: keeps one connection open across reads.

    Each read returns the latest batch the connection sent; a connection that has ended (or sent
    nothing for too long) is closed and its reason raised as a RemoteError, and the next read (after
    the source's back-off) connects again.
    """

    def __init__(self, interval_s: float, config: str | None = None) -> None:
        self.interval_s = interval_s
        self.config = config
        self._connection: SshConnection | None = None
        self._lock = threading.Lock()
        self._closed = False

    def stale_after_s(self) -> float:
        # nvidia-smi -l prints every interval; a trayvml snapshot takes a second or two more.
        return max(3 * self.interval_s, 10.0)

    def __call__(self, endpoint: Endpoint, timeout_s: float, now_s: float, _cache: object = None) -> list[Sample]:
        with self._lock:
            if self._closed:
                raise RemoteError(translate("remote", "{url}: closed.").format(url=endpoint.url))
            connection = self._connection
            if connection is None:
                command = ssh_command(endpoint.host, endpoint.username, endpoint.port, self.interval_s, self.config)
                try:
                    connection = self._connection = SshConnection(endpoint.url, command, endpoint.host)
                except OSError as error:  # no ssh client installed
                    raise RemoteError(
                        translate("remote", "{url}: the ssh client cannot be started: {reason}.").format(
                            url=endpoint.url, reason=error.strerror or error
                        )
                    ) from None
        first = math.isnan(connection._latest_at_s)
        latest, at_s, problem = connection.latest(timeout_s if first else 0.0)
        if latest is None and not problem and first:
            problem = translate("remote", "{url} did not answer within {seconds} s.").format(
                url=endpoint.url, seconds=f"{timeout_s:g}"
            )
        elif latest is not None and time.monotonic() - at_s > self.stale_after_s():
            problem = translate("remote", "{url} sent nothing new for {seconds} s.").format(
                url=endpoint.url, seconds=f"{self.stale_after_s():g}"
            )
        if problem or latest is None:
            self._drop(connection)
            raise RemoteError(problem or self._unreadable(endpoint))
        # Every batch since the last read, each stamped when it came: the host sends one an
        # interval, and a read a little out of phase with them found two come (the latest alone
        # taken, the other lost: an empty row in the host's history) or none (the same again).
        return connection.take() or [latest]

    @staticmethod
    def _unreadable(endpoint: Endpoint) -> str:
        return translate("remote", "{url}: the SSH session ended.").format(url=endpoint.url)

    def _drop(self, connection: SshConnection) -> None:
        with self._lock:
            if self._connection is connection:
                self._connection = None
        connection.close()

    def close(self) -> None:
        """End the connection's ssh process (terminate, then kill); later reads fail."""
        with self._lock:
            self._closed = True
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    @property
    def process(self) -> subprocess.Popen[str] | None:
        """The ssh process of the open connection, if any (for tests and diagnostics)."""
        connection = self._connection
        return connection.process if connection is not None else None
