"""``trayvml doctor``: what a user runs when something looks wrong.

Each check is one line: OK, WARNING or PROBLEM, and a sentence that says what was found and, where
something is wrong, what it means. Nothing here changes anything: the settings file is parsed, not
loaded (loading would move a broken one aside), and the history store's lock is asked about, not
taken. Every wait is bounded: the driver by ``--timeout`` (the sample is read on the source's own
thread), D-Bus by DBUS_TIMEOUT_S.
"""

from __future__ import annotations

import enum
import errno
import getpass
import json
import os
import re
import socket
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trayvml import __version__
from trayvml.core.files import output
from trayvml.core.i18n import translate
from trayvml.core.metrics import GPU_METRICS
from trayvml.core.sample import MetricState, Sample

if TYPE_CHECKING:
    from trayvml.config import Settings

DBUS_TIMEOUT_S = 2.0  # a session bus answers in milliseconds; a hung one must not hang the doctor
TRAY_WATCHERS = ("org.kde.StatusNotifierWatcher", "org.freedesktop.StatusNotifierWatcher")
NOTIFICATIONS = "org.freedesktop.Notifications"

BusNames = Callable[[Iterable[str], float], dict[str, bool]]


class Level(enum.Enum):
    OK = "OK"
    WARNING = "WARNING"
    PROBLEM = "PROBLEM"


@dataclass(frozen=True)
class Check:
    name: str  # a stable identifier for --json: "nvml", "driver", "gpu0.metrics"...
    level: Level
    sentence: str

    def line(self) -> str:
        return f"{self.level.value:<8} {self.name}: {self.sentence}"


@dataclass
class Findings:
    checks: list[Check] = field(default_factory=list)
    # Per GPU, each catalog metric's state as read: "supported", "not supported", "no permission"...
    metrics: list[dict[str, Any]] = field(default_factory=list)

    def add(self, name: str, level: Level, sentence: str) -> None:
        self.checks.append(Check(name, level, sentence))

    @property
    def problems(self) -> int:
        return sum(c.level is Level.PROBLEM for c in self.checks)

    def as_json(self) -> dict[str, Any]:
        return {
            "trayvml": __version__,
            "checks": [{"check": c.name, "level": c.level.value, "sentence": c.sentence} for c in self.checks],
            "problems": self.problems,
            "warnings": sum(c.level is Level.WARNING for c in self.checks),
            "gpus": self.metrics,
        }


# ---- the session bus ----
def session_bus_names(names: Iterable[str], timeout_s: float) -> dict[str, bool]:
    """Whether each well-known name has an owner on the session bus, or can be started on demand
    (a notification daemon is often D-Bus-activated). Raises OSError, TimeoutError, KeyError (no
    session bus at all) or a D-Bus error; every wait is at most ``timeout_s``."""
    from jeepney import message_bus
    from jeepney.io.blocking import open_dbus_connection

    with open_dbus_connection(bus="SESSION", auth_timeout=timeout_s) as connection:
        activatable = set(connection.send_and_get_reply(message_bus.ListActivatableNames(), timeout=timeout_s).body[0])
        return {
            name: bool(connection.send_and_get_reply(message_bus.NameHasOwner(name), timeout=timeout_s).body[0])
            or name in activatable
            for name in names
        }


def _bus_errors() -> tuple[type[BaseException], ...]:
    try:
        from jeepney import DBusErrorResponse
    except ImportError:  # jeepney is Linux-only in the dependencies
        return (OSError, TimeoutError, KeyError, ValueError)
    return (OSError, TimeoutError, KeyError, ValueError, DBusErrorResponse)


def check_desktop(findings: Findings, bus_names: BusNames) -> None:
    try:
        owned = bus_names((*TRAY_WATCHERS, NOTIFICATIONS), DBUS_TIMEOUT_S)
    except _bus_errors() as error:
        if isinstance(error, KeyError):  # jeepney: no DBUS_SESSION_BUS_ADDRESS to connect to
            why = translate("doctor", "DBUS_SESSION_BUS_ADDRESS is not set")
        else:
            why = str(error) or type(error).__name__
        sentence = translate(
            "doctor", "No session D-Bus answered ({error}): no tray icon and no desktop notifications here."
        ).format(error=why)
        findings.add("tray", Level.WARNING, sentence)
        findings.add("notifications", Level.WARNING, sentence)
        return
    if any(owned.get(name) for name in TRAY_WATCHERS):
        findings.add("tray", Level.OK, translate("doctor", "A tray host (StatusNotifierWatcher) is running."))
    else:
        findings.add(
            "tray",
            Level.WARNING,
            translate(
                "doctor",
                "No tray host (StatusNotifierWatcher) is on the session bus: trayvml shows a small window instead "
                "of a tray icon. On GNOME, the AppIndicator extension adds one.",
            ),
        )
    if owned.get(NOTIFICATIONS):
        findings.add("notifications", Level.OK, translate("doctor", "A notification service is available."))
    else:
        findings.add(
            "notifications",
            Level.WARNING,
            translate(
                "doctor", "No notification service (org.freedesktop.Notifications): alerts show only in trayvml."
            ),
        )


# ---- NVML and the GPUs ----
def check_nvml(findings: Findings, sample: Sample, location: str) -> None:
    if location:
        findings.add(
            "nvml.library", Level.OK, translate("doctor", "NVML library loaded: {where}.").format(where=location)
        )
    else:
        findings.add(
            "nvml.library",
            Level.PROBLEM,
            translate("doctor", "The NVML library (libnvidia-ml) was not found: is the NVIDIA driver installed?"),
        )
    if sample.stall is not None:
        findings.add("nvml", Level.PROBLEM, sample.stall.sentence(sample.timestamp_s))
    elif sample.unavailable is not None:
        findings.add("nvml", Level.PROBLEM, sample.unavailable.sentence)
    for note in sample.notes:  # the functions this driver lacks, said here rather than on every command
        findings.add("driver.functions", Level.WARNING, note)
    system = sample.system
    if system is not None:
        findings.add(
            "driver",
            Level.OK,
            translate("doctor", "Driver {driver}, NVML {nvml}, CUDA {cuda}.").format(
                driver=system.driver_version or "?",
                nvml=system.nvml_version or "?",
                cuda=system.cuda_driver_version or "?",
            ),
        )


def check_processes(findings: Findings, sample: Sample) -> None:
    processes = [p for gpu in sample.gpus for p in gpu.processes]
    hidden = [p for p in processes if p.no_permission or not p.name]
    if not processes:
        findings.add(
            "permissions",
            Level.OK,
            translate("doctor", "No processes use the GPUs now, so whether others' can be seen cannot be told."),
        )
    elif hidden:
        findings.add(
            "permissions",
            Level.WARNING,
            translate(
                "doctor",
                "{hidden} of {total} GPU processes cannot be named (other users' processes, or another container's): "
                "run as their owner or as root to see them.",
            ).format(hidden=len(hidden), total=len(processes)),
        )
    else:
        findings.add(
            "permissions",
            Level.OK,
            translate("doctor", "Every one of the {total} GPU processes can be named.").format(total=len(processes)),
        )


def check_runtime_pm(findings: Findings, sample: Sample, power: dict[str, Any], bus_key: Callable[[str], str]) -> None:
    """``power``: RuntimePower.poll()'s answer (sysfs), by bus key."""
    if not power:
        findings.add(
            "runtime-pm",
            Level.OK,
            translate("doctor", "No runtime power state in sysfs (not Linux, or no sysfs): NVML alone is asked."),
        )
        return
    for key, state in sorted(power.items()):
        index = next((d.index for d in sample.devices if d.pci_bus_id and bus_key(d.pci_bus_id) == key), None)
        name = f"gpu{index}.runtime-pm" if index is not None else f"{key}.runtime-pm"
        managed = translate("doctor", "on") if state.managed else translate("doctor", "off")
        if not state.status:
            findings.add(
                name,
                Level.WARNING,
                translate("doctor", "{address}: its runtime power state cannot be read.").format(address=key),
            )
        elif state.asleep:
            findings.add(
                name,
                Level.OK,
                translate("doctor", "{address}: runtime-suspended; trayvml does not wake it.").format(address=key),
            )
        else:
            findings.add(
                name,
                Level.OK,
                translate("doctor", "{address}: {status}, runtime power management {managed}.").format(
                    address=key, status=state.status, managed=managed
                ),
            )


_STATE_WORDS = {
    MetricState.OK: "supported",
    MetricState.NO_DATA: "no data",
    MetricState.NOT_SUPPORTED: "not supported",
    MetricState.NO_PERMISSION: "no permission",
    MetricState.LOST: "GPU lost",
    MetricState.NOT_READ: "not read",
    MetricState.ASLEEP: "asleep",
    MetricState.RESTING: "resting",
    MetricState.NOT_YET: "supported",  # a rate with one reading so far: the counter answers
}


def check_metrics(findings: Findings, sample: Sample) -> None:
    for gpu, info in zip(sample.gpus, sample.devices, strict=False):
        states = dict(zip((m.key for m in GPU_METRICS), gpu.states, strict=True))
        findings.metrics.append(
            {"index": gpu.index, "name": info.name, "metrics": {key: _STATE_WORDS[s] for key, s in states.items()}}
        )
        name = f"gpu{gpu.index}.metrics"
        if gpu.lost:
            findings.add(
                name, Level.PROBLEM, translate("doctor", "GPU {index} has fallen off the bus.").format(index=gpu.index)
            )
            continue
        if gpu.asleep:
            findings.add(
                name,
                Level.OK,
                translate("doctor", "GPU {index} is asleep: its metrics are read when it wakes.").format(
                    index=gpu.index
                ),
            )
            continue
        supported = sum(s is MetricState.OK for s in states.values())
        missing = [translate("metrics", m.label) for m in GPU_METRICS if states[m.key] is MetricState.NOT_SUPPORTED]
        denied = [translate("metrics", m.label) for m in GPU_METRICS if states[m.key] is MetricState.NO_PERMISSION]
        sentence = translate("doctor", "{name}: {supported} of {total} metrics read.").format(
            name=info.name, supported=supported, total=len(GPU_METRICS)
        )
        if missing:
            sentence += " " + translate("doctor", "Not supported by this GPU: {names}.").format(
                names=", ".join(missing)
            )
        if denied:
            sentence += " " + translate("doctor", "No permission: {names}.").format(names=", ".join(denied))
        findings.add(name, Level.WARNING if denied else Level.OK, sentence)


# ---- files ----
def check_settings(findings: Findings, path: Path, named: bool = False) -> Settings | None:
    """The settings file's findings; the settings in it where it can be used (the other checks
    read them from here: a pipe is read once, and a device must never be read)."""
    from trayvml.config import SettingsError, examine, not_utf8, set_aside_copies

    settings, pipe = None, False
    try:
        mode = os.stat(path).st_mode  # one look, as loading's: the read and the words go by it
        pipe = stat.S_ISFIFO(mode)
        settings, notes = examine(path, mode)
    except FileNotFoundError:
        if named:  # --config with a typo: the tray says it does not exist, and so does doctor
            findings.add(
                "settings",
                Level.PROBLEM,
                translate("settings", "The settings file {path} does not exist; defaults are in use.").format(
                    path=path
                ),
            )
        else:
            findings.add(
                "settings",
                Level.OK,
                translate("doctor", "No settings file at {path}: defaults are in use.").format(path=path),
            )
    except (UnicodeDecodeError, SettingsError) as error:
        reason = not_utf8(error) if isinstance(error, UnicodeDecodeError) else str(error)
        if pipe:  # ``--config <(…)``: read once, never set aside
            what = translate("doctor", "The settings file {path} cannot be used ({reason}): trayvml will use defaults.")
        else:
            what = translate(
                "doctor",
                "The settings file {path} cannot be used ({reason}): trayvml will set it aside and use defaults.",
            )
        findings.add("settings", Level.PROBLEM, what.format(path=path, reason=reason))
    except OSError as error:
        findings.add(
            "settings",
            Level.PROBLEM,
            translate("doctor", "The settings file {path} cannot be read: {reason}.").format(
                path=path, reason=error.strerror or error
            ),
        )
    else:
        if notes:
            findings.add(
                "settings",
                Level.WARNING,
                translate("doctor", "The settings file {path} loads with changes: {changes}.").format(
                    path=path, changes="; ".join(notes)
                ),
            )
        else:
            findings.add("settings", Level.OK, translate("doctor", "The settings file {path} loads.").format(path=path))
        from trayvml.platform.push import secrets_of

        # Push's own secrets (a password, a token, a URL's path: an ntfy topic, a Slack webhook),
        # and a remote host's credentials in its URL.
        remote = any("@" in url.partition("//")[2].partition("/")[0] for url in settings.remote_hosts)
        secret = remote or any(secrets_of(d) for d in settings.push)
        if secret and not pipe and stat.S_IMODE(mode) & 0o077:
            # trayvml writes it readable by its user alone; one made by hand may not be.
            findings.add(
                "settings.mode",
                Level.WARNING,
                translate(
                    "doctor",
                    "The settings file {path} holds passwords or tokens and others can read it: chmod 600 {path}",
                ).format(path=path),
            )
    aside = set_aside_copies(path)
    if aside:
        findings.add(
            "settings.set-aside",
            Level.WARNING,
            translate("doctor", "{count} unusable settings files were set aside earlier: {names}.").format(
                count=len(aside), names=", ".join(p.name for p in aside)
            ),
        )
    return settings


def check_push(findings: Findings, settings: Settings, status_file: Path) -> None:
    """Each push destination of the settings, by its redacted name, and its last failure as the
    tray app or ``trayvml record`` wrote it (push-status.json): a failing one is a WARNING, since
    the desktop's notifications still work."""
    from trayvml.platform.push import destination_names, read_status, redact

    statuses = read_status(status_file)
    names = destination_names(settings.push)  # never a URL's path, token or password
    for number, (destination, name) in enumerate(zip(settings.push, names, strict=True), 1):
        status = statuses.get(name)
        check = f"push.{number}"
        if not isinstance(status, dict) or not status.get("last_failure"):
            findings.add(
                check,
                Level.OK,
                translate("doctor", "Alerts are pushed to {name}; no failure is recorded.").format(name=name),
            )
            continue
        at = status.get("last_failure_s")
        # A hand-edited or foreign status file must not stop the doctor: an odd time reads as unknown.
        known = isinstance(at, int | float) and not isinstance(at, bool) and 0 < at < 1e11
        when = datetime.fromtimestamp(float(at)).strftime("%Y-%m-%d %H:%M") if known else "?"  # type: ignore[arg-type]
        reason = redact(str(status["last_failure"]), destination).rstrip(".")
        if status.get("failing"):
            sentence = translate("doctor", "Alerts could not be pushed to {name} at {when}: {reason}.")
            findings.add(check, Level.WARNING, sentence.format(name=name, when=when, reason=reason))
        else:
            sentence = translate("doctor", "Alerts are pushed to {name}; it last failed at {when} ({reason}).")
            findings.add(check, Level.OK, sentence.format(name=name, when=when, reason=reason))


def _nearest_existing(folder: Path) -> Path:
    """The folder, or the nearest one above it that can be seen (a folder that may not be entered
    hides what is in it: that one is then the folder checked)."""
    while not os.path.exists(folder) and folder.parent != folder:
        folder = folder.parent
    return folder


def check_history(findings: Findings, folder: Path) -> None:
    from trayvml.history.disk.write import holder

    existing = _nearest_existing(folder)
    if not os.path.isdir(existing):  # a file on the way: "can be created" where every write fails
        findings.add(
            "history",
            Level.PROBLEM,
            translate("doctor", "The history folder {folder} cannot be made: {path} is a file.").format(
                folder=folder, path=existing
            ),
        )
        return
    if not os.access(existing, os.W_OK | os.X_OK):
        findings.add(
            "history",
            Level.PROBLEM,
            translate("doctor", "The history folder {folder} is not writable: no history is kept.").format(
                folder=existing
            ),
        )
        return
    if existing != folder:
        findings.add(
            "history",
            Level.OK,
            translate("doctor", "No history yet; {folder} can be created.").format(folder=folder),
        )
        return
    findings.add(
        "history", Level.OK, translate("doctor", "The history folder {folder} is writable.").format(folder=folder)
    )
    pid = holder(folder)
    if pid is None:
        sentence = translate("doctor", "No trayvml process is writing the history now.")
    elif pid < 0:
        sentence = translate("doctor", "Another process is writing the history (its process id is not recorded).")
    else:
        sentence = translate("doctor", "Process {pid} (a trayvml tray app or record) is writing the history.").format(
            pid=pid
        )
    findings.add("history.writer", Level.OK, sentence)


# ---- the bundle ----
_UUID = re.compile(r"\b(?:GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
MIN_SECRET_CHARS = 3  # shorter names ("a") would be redacted out of every word


class Redactor:
    """Replace each secret with a token of its kind, the same token wherever it appears."""

    def __init__(self) -> None:
        self._tokens: dict[str, str] = {}
        self._counts: dict[str, int] = {}

    def add(self, text: str, kind: str) -> None:
        if len(text) >= MIN_SECRET_CHARS and text not in self._tokens:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self._tokens[text] = f"<{kind}-{self._counts[kind]}>"

    def redact(self, text: str) -> str:
        for uuid in _UUID.findall(text):  # GPU UUIDs not named by a device (a remote's, a log line's)
            self.add(uuid, "uuid")
        for secret in sorted(self._tokens, key=len, reverse=True):  # a home path before the user in it
            text = text.replace(json.dumps(secret)[1:-1], self._tokens[secret])
        return text


def bundle(findings: Findings, sample: Sample, snapshot: dict[str, Any]) -> bytes:
    """The report a user can attach to an issue: the checks and the snapshot, with the hostname,
    user names, home folders and GPU UUIDs and serials replaced by tokens (the same secret, the
    same token, so that what refers to what still shows)."""
    redactor = Redactor()
    redactor.add(str(Path.home()), "home")
    with_hosts = [socket.gethostname(), sample.system.hostname if sample.system else ""]
    for host in with_hosts:
        redactor.add(host, "host")
    users = [getpass.getuser(), *(p.user for gpu in sample.gpus for p in gpu.processes)]
    for user in users:
        redactor.add(user, "user")
    for info in sample.devices:
        redactor.add(info.uuid, "uuid")
        if info.serial:
            redactor.add(str(info.serial), "serial")
    document = {
        **findings.as_json(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "snapshot": snapshot,
    }
    return redactor.redact(json.dumps(document, indent=2, ensure_ascii=False, default=str)).encode() + b"\n"


def write_out(path: str, data: bytes) -> None:
    """The bundle or the recording where the user sends it (core.files.output), its folder made
    where it is missing, a new file readable by the user alone. Raises OSError."""
    _folder_for(path)
    with output(path, new_mode=0o600) as out:  # a recording holds UUIDs and serials: the user's own
        out.write(data)


def _folder_for(path: str) -> Path:
    """The folder ``path`` goes in, made where it is missing. Raises OSError."""
    folder = Path(path).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where a folder is asked for: "File exists" said nothing
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder)) from None
    return folder


def check_writable(path: str) -> None:
    """Raises the OSError that writing ``path`` at the end of a recording would meet where it can
    be told now: a folder there, a file where its folder should be, a folder it cannot write in. A
    recording (up to an hour) was lost at its end for these. Only a probe, gone at once: the file
    itself is written when there is something to write (core.files.output)."""
    import tempfile

    folder = _folder_for(path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not os.path.exists(path) or stat.S_ISREG(os.stat(path).st_mode):  # else written through (a pipe, a device)
        with tempfile.TemporaryFile(dir=folder):  # a regular file is written beside it, then renamed
            pass


def gather(
    simulation: Any,
    timeout_s: float,
    config: Path,
    history: Path,
    bus_names: BusNames = session_bus_names,
    push_status: Path | None = None,
    named: bool = False,
) -> tuple[Findings, Sample, dict[str, Any]]:
    """Every check: the findings, the sample they were made from, and its snapshot for a bundle.
    ``named``: the settings file was given (``--config``), so one not there is a problem."""
    from trayvml.commands.report import json_snapshot
    from trayvml.nvml.binding import library_location
    from trayvml.nvml.runtime_pm import bus_key
    from trayvml.source import SETTLE_S, Source

    findings = Findings()
    source = Source(simulation, host=False, stall_after_s=timeout_s, every_tick=True)  # as snapshot's
    try:
        sample = source.sample()
        if sample.gpus and sample.stall is None:
            source.clock.sleep_s(SETTLE_S)  # rates have no value in the first reading
            sample = source.sample()
        location = library_location()
        power = source.reader.power.poll()
    finally:
        source.close()
    check_nvml(findings, sample, location)
    check_metrics(findings, sample)
    if sample.gpus:  # with no GPUs read there are no process lists to judge by
        check_processes(findings, sample)
    check_runtime_pm(findings, sample, power, bus_key)
    check_desktop(findings, bus_names)
    settings = check_settings(findings, config, named)
    if push_status is not None and settings is not None:  # without usable settings, none to push to
        check_push(findings, settings, push_status)
    check_history(findings, history)
    return findings, sample, json_snapshot(sample)


def run(args: Any, simulation: Any, bus_names: BusNames = session_bus_names) -> int:
    """``trayvml doctor``: 0 when no check found a PROBLEM, 1 otherwise, 2 when the bundle cannot be written."""
    import sys

    from trayvml.config import default_path
    from trayvml.history import default_folder
    from trayvml.platform.push import default_status_file

    config = Path(args.config) if args.config else default_path()
    simulated = simulation is not None
    findings, sample, snapshot = gather(
        simulation,
        args.timeout,
        config,
        default_folder(simulated=simulated),
        bus_names,
        default_status_file(simulated),
        named=bool(args.config),
    )
    if args.json:
        print(json.dumps(findings.as_json(), indent=2, ensure_ascii=False))
    else:
        for check in findings.checks:
            print(check.line())
    if args.bundle:
        try:
            write_out(args.bundle, bundle(findings, sample, snapshot))
        except OSError as error:
            return _could_not_write(args.bundle, error)
        wrote = translate("doctor", "A redacted report is in {path}; attach it to an issue.")
        print(f"trayvml: {wrote.format(path=args.bundle)}", file=sys.stderr)
    return 1 if findings.problems else 0


# ---- doctor --record ----
SMI_TIMEOUT_S = 10.0  # nvidia-smi answers in well under a second; a wedged GPU hangs it (NVML-NOTES)
RECORD_INTERVAL_S = 1.0


def shared_fields() -> list[str]:
    """The CSV columns trayvml's log shares with nvidia-smi --query-gpu, asked of both at each tick
    (not trayvml's own, and not the timestamp, which differs by when each was asked)."""
    from trayvml.commands.csvlog import COLUMNS

    return [name for name, column in COLUMNS.items() if not column.smi.ours and name != "timestamp"]


def trayvml_rows(sample: Sample, fields: list[str]) -> list[list[str]]:
    """What ``trayvml log --nounits`` writes for ``fields``, one row per GPU."""
    from trayvml.commands.csvlog import COLUMNS

    columns = [COLUMNS[name] for name in fields]
    return [
        [column.render(sample, gpu, info, False) for column in columns]
        for gpu, info in zip(sample.gpus, sample.devices, strict=False)
    ]


def gpm_readings(sample: Sample) -> list[list[float | str]]:
    """trayvml's GPM metrics per GPU, in ``specs.GPM``'s order (what ``nvidia-smi dmon
    --gpm-metrics`` shows): the value, or the name of its state where there is none."""
    from trayvml.nvml.specs import GPM

    return [
        [gpu.value(read.key) if gpu.state(read.key) is MetricState.OK else gpu.state(read.key).name for read in GPM]
        for gpu in sample.gpus
    ]


def _run_smi(smi: str, arguments: list[str]) -> dict[str, Any]:
    import subprocess

    try:
        done = subprocess.run([smi, *arguments], capture_output=True, text=True, timeout=SMI_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return {"note": f"nvidia-smi did not answer within {SMI_TIMEOUT_S:g} s"}
    except OSError as error:
        return {"note": f"nvidia-smi could not be run: {error.strerror or error}"}
    if done.returncode != 0:
        return {"note": f"nvidia-smi exited with {done.returncode}: {(done.stdout + done.stderr).strip()[:500]}"}
    return {"out": done.stdout}


def smi_known_fields(smi: str | None, fields: list[str]) -> list[str]:
    """Those of ``fields`` this nvidia-smi can be asked for: one name it does not know fails the
    whole query (580 knows no "memory.unified"), so its ``--help-query-gpu`` list is read first.
    All of them where that list cannot be had."""
    if smi is None:
        return []
    listed = _run_smi(smi, ["--help-query-gpu"]).get("out")
    if not listed:
        return fields
    known = smi_listed_fields(listed)
    return [name for name in fields if name in known] if known else fields


def smi_listed_fields(help_query_gpu: str) -> set[str]:
    """The field names ``nvidia-smi --help-query-gpu`` lists, each quoted (``"memory.used"``)."""
    return set(re.findall(r'"([a-z0-9_.]+)"', help_query_gpu))


def smi_outputs(smi: str | None, fields: list[str], xml: bool) -> dict[str, Any]:
    """nvidia-smi's CSV for ``fields`` and, with ``xml``, its ``-q -x`` XML, taken now; a note where
    it cannot be. The XML (about 30 KB a GPU) is taken at the first tick only, to keep recordings small."""
    if smi is None:
        return {}
    answers = {"smi_csv": _run_smi(smi, [f"--query-gpu={','.join(fields)}", "--format=csv,nounits"])}
    if xml:
        answers["smi_xml"] = _run_smi(smi, ["-q", "-x"])
    return answers


def _could_not_write(path: str, error: OSError) -> int:
    import sys

    failed = translate("doctor", "Could not write {path}: {error}.")
    print(f"trayvml: {failed.format(path=path, error=error.strerror or error)}", file=sys.stderr)
    return 2


def record(args: Any, simulation: Any, smi: str | None = None) -> int:
    """``trayvml doctor --record FILE``: every NVML call for ``--seconds``, written as JSON lines."""
    import shutil
    import sys

    from trayvml.core.clock import Ticker
    from trayvml.nvml.recording import (
        RECORDING_FORMAT,
        RECORDING_VERSION,
        NoLibraryError,
        start_recording,
        stop_recording,
    )
    from trayvml.nvml.specs import GPM
    from trayvml.source import Source

    if simulation is not None and simulation.replay:
        again = translate("doctor", "A replayed recording cannot be recorded again.")
        print(f"trayvml: {again}", file=sys.stderr)
        return 2
    try:
        check_writable(args.record)
    except OSError as error:
        return _could_not_write(args.record, error)
    smi = smi if smi is not None else (None if simulation is not None else shutil.which("nvidia-smi"))
    fields = shared_fields()
    smi_fields = smi_known_fields(smi, fields)
    source = Source(simulation, host=False, stall_after_s=args.timeout)
    try:
        recorder = start_recording()
    except NoLibraryError as error:
        source.close()
        print(f"trayvml: {error}", file=sys.stderr)
        return 3
    ticks = 0
    try:
        ticker = Ticker(RECORD_INTERVAL_S, source.clock)
        began_s = source.clock.monotonic_s()
        while True:
            sample = source.sample()
            recorder.mark(
                {
                    "tick": ticks,
                    "t": sample.timestamp_s,
                    "trayvml": trayvml_rows(sample, fields),
                    "gpm": gpm_readings(sample),
                    **smi_outputs(smi, smi_fields, xml=ticks == 0),
                }
            )
            ticks += 1
            if source.clock.monotonic_s() - began_s >= args.seconds:
                break
            ticker.wait_next()
    except KeyboardInterrupt:
        pass  # Ctrl-C: keep what was recorded so far
    finally:
        source.close()
        stop_recording(recorder)
    header = {
        "format": RECORDING_FORMAT,
        "version": RECORDING_VERSION,
        "trayvml": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": simulation.label if simulation is not None else "libnvidia-ml",
        "interval_s": RECORD_INTERVAL_S,
        "fields": fields,
        "smi_fields": smi_fields,  # those nvidia-smi knows, asked in that order
        "gpm_fields": [read.key for read in GPM],
        # Where no nvidia-smi answers, these are NVML's answers alone: nothing to check them against.
        "smi": smi or "",
        "dropped_calls": recorder.dropped,
    }
    lines = [header, *recorder.entries]
    data = "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)
    try:
        write_out(args.record, data.encode())
    except OSError as error:
        return _could_not_write(args.record, error)
    calls = sum("f" in e for e in recorder.entries)
    done = translate("doctor", "Recorded {calls} NVML calls in {ticks} ticks to {path}.").format(
        calls=calls, ticks=ticks, path=args.record
    )
    print(f"trayvml: {done}", file=sys.stderr)
    if not smi:
        alone = translate("doctor", "No nvidia-smi here: the recording holds NVML answers only.")
        print(f"trayvml: {alone}", file=sys.stderr)
    return 0
