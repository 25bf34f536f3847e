"""trayvml doctor: one line per check, an exit code that says whether any is a PROBLEM, a redacted bundle."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import fifo_with_reader, read_in_time, run_bounded, zero_device
from trayvml.cli import main
from trayvml.commands.doctor import Level, Redactor, gather
from trayvml.core.sample import Sample
from trayvml.nvml.sim import parse_spec

SIM = "--simulate=training:at=600,gpus=h100+rtx4090"


@pytest.fixture(autouse=True)
def _own_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its own config and state folders, and a session bus address where nothing listens."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'no-bus'}")


def _levels(out: str) -> dict[str, str]:
    found = {}
    for line in out.splitlines():
        level, _, rest = line.partition(" ")
        found[rest.strip().split(":", 1)[0]] = level
    return found


def test_doctor_checks_every_part_and_exits_0_without_a_problem(capsys: pytest.CaptureFixture) -> None:
    assert main(["doctor", SIM]) == 0
    out = capsys.readouterr().out
    levels = _levels(out)
    for check in ("nvml.library", "driver", "gpu0.metrics", "gpu1.metrics", "permissions", "settings", "history"):
        assert levels[check] == "OK", out
    assert levels["gpu0.runtime-pm"] == "OK" and levels["gpu1.runtime-pm"] == "OK"
    assert levels["tray"] == levels["notifications"] == "WARNING"  # nothing listens at that bus address
    assert "Driver 610.43.01" in out
    fan_line = next(line for line in out.splitlines() if "gpu0.metrics" in line)
    assert "Not supported by this GPU: Fan speed" in fan_line  # an SXM H100 has no fan


def test_a_lost_gpu_and_hidden_processes_are_a_problem_and_a_warning(capsys: pytest.CaptureFixture) -> None:
    assert main(["doctor", "--simulate=faults:at=600,gpus=h100+rtx4090"]) == 1
    levels = _levels(capsys.readouterr().out)
    assert levels["gpu1.metrics"] == "PROBLEM"
    assert levels["permissions"] == "WARNING"


def test_nvml_missing_is_a_problem_in_a_sentence(capsys: pytest.CaptureFixture) -> None:
    assert main(["doctor", SIM + ",nvml=missing"]) == 1
    out = capsys.readouterr().out
    assert _levels(out)["nvml"] == "PROBLEM"
    assert "No NVIDIA driver found" in out and "Traceback" not in out


def test_a_driver_that_does_not_answer_is_waited_for_a_bounded_time(capsys: pytest.CaptureFixture) -> None:
    began = time.monotonic()
    assert main(["doctor", "--timeout", "0.3", SIM + ",hang=nvmlDeviceGetUtilizationRates@0"]) == 1
    assert time.monotonic() - began < 10
    out = capsys.readouterr().out
    assert _levels(out)["nvml"] == "PROBLEM" and "nvmlDeviceGetUtilizationRates" in out


def test_json_lists_each_check_and_each_metric_state(capsys: pytest.CaptureFixture) -> None:
    assert main(["doctor", "--json", SIM]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["problems"] == 0 and data["warnings"] == 2
    assert {c["level"] for c in data["checks"]} <= {"OK", "WARNING", "PROBLEM"}
    h100, rtx = data["gpus"]
    assert h100["metrics"]["fan_speed_percent"] == "not supported"  # not zero
    assert h100["metrics"]["utilization_gpu_percent"] == "supported"
    assert rtx["metrics"]["sm_activity_percent"] == "not supported"  # no GPM before Hopper


def test_a_broken_settings_file_is_a_problem_and_is_left_where_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("this is = = not toml")
    (tmp_path / "broken.toml.corrupt-20260101-000000").write_text("older")
    assert main(["doctor", "--config", str(path), SIM]) == 1
    out = capsys.readouterr().out
    levels = _levels(out)
    assert levels["settings"] == "PROBLEM" and "not valid TOML" in out
    assert "trayvml will set it aside and use defaults." in out
    assert levels["settings.set-aside"] == "WARNING"
    assert path.read_text() == "this is = = not toml"  # the doctor only looks


def test_a_settings_file_not_utf8_is_said_as_the_tray_says_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes("history_hours = 6\n".encode("utf-16"))
    assert main(["doctor", "--config", str(path), SIM]) == 1
    assert "(it is not UTF-8 text (byte 0 is 0xff))" in capsys.readouterr().out  # not "invalid start byte"


def test_a_settings_file_named_that_is_not_there_is_a_problem(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`doctor --config /typo/config.toml` said OK ("no settings file: defaults are in use"), where
    the tray says the file named does not exist."""
    missing = tmp_path / "typo" / "config.toml"
    assert main(["doctor", "--config", str(missing), SIM]) == 1
    out = capsys.readouterr().out
    assert _levels(out)["settings"] == "PROBLEM" and f"The settings file {missing} does not exist" in out


def test_a_broken_settings_pipe_is_a_problem_that_is_not_set_aside(tmp_path: Path) -> None:
    # ``--config <(…)``: the tray reads a pipe once and never moves it aside; the doctor said it
    # would, and its push check opened the pipe again and waited for a writer for ever (the doctor
    # runs as a process of its own here, with a time limit).
    path = tmp_path / "settings.toml"
    os.mkfifo(path)

    def write() -> None:
        descriptor = os.open(path, os.O_WRONLY)  # waits for the doctor's open
        with contextlib.suppress(BrokenPipeError):  # opened only by the test's own unblocking open
            os.write(descriptor, b"this is = = not toml")
        os.close(descriptor)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        done = run_bounded("doctor", "--config", str(path), SIM, timeout_s=60)
    finally:
        if writer.is_alive():  # the doctor never opened it: let the writer's open go
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(10)
    assert done.returncode == 1, done.stderr
    assert _levels(done.stdout)["settings"] == "PROBLEM" and "not valid TOML" in done.stdout
    assert "trayvml will use defaults." in done.stdout and "set it aside" not in done.stdout
    assert path.is_fifo() and not list(tmp_path.glob("settings.toml.*"))


def test_a_settings_path_that_is_a_device_is_never_read(tmp_path: Path) -> None:
    # The push check read the settings again by itself, whole: --config naming /dev/zero read
    # for ever, growing. A device node made here, in the test's own folder; the doctor runs as a
    # process of its own, its memory bounded, so that a reader that reads it anyway ends.
    path = zero_device(tmp_path)
    done = run_bounded("doctor", "--config", str(path), SIM)
    assert done.returncode == 1, done.stderr
    levels = _levels(done.stdout)
    assert levels["settings"] == "PROBLEM" and "cannot be read: it is not a regular file." in done.stdout
    assert "Traceback" not in done.stderr and path.is_char_device()


def test_the_history_writer_is_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:

    from trayvml.history import default_folder
    from trayvml.history.disk.write import WriterLock

    folder = default_folder(simulated=True)
    folder.mkdir(parents=True)
    lock = WriterLock(folder)
    try:
        assert main(["doctor", SIM]) == 0
    finally:
        lock.release()
    out = capsys.readouterr().out
    assert f"Process {os.getpid()}" in out and _levels(out)["history.writer"] == "OK"


def test_an_unwritable_history_folder_is_a_problem(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trayvml.commands.doctor as doctor

    # Tests may run as root, who writes anywhere: the answer of access(2) stands in for the folder's mode.
    monkeypatch.setattr(doctor.os, "access", lambda path, mode: False)
    assert main(["doctor", SIM]) == 1
    out = capsys.readouterr().out
    assert _levels(out)["history"] == "PROBLEM" and "not writable" in out


def test_a_file_where_the_history_folder_should_be_is_a_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file where the state folder should be: doctor said the history folder "can be created"
    (the file's folder is writable), and every write of the tray and record failed."""
    blocker = tmp_path / "statefile"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    assert main(["doctor", SIM]) == 1
    out = capsys.readouterr().out
    assert _levels(out)["history"] == "PROBLEM" and f"{blocker} is a file" in out


def test_a_settings_file_others_can_read_holding_push_secrets_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The README asks for [[push]] tables by hand, and trayvml writes the file readable by its
    user alone; one made at 0644 with a password in it was "OK"."""
    path = tmp_path / "config.toml"
    path.write_text('[[push]]\nkind = "ntfy"\nurl = "https://ntfy.sh/t"\ntoken = "tk_secret"\n')
    path.chmod(0o644)
    main(["doctor", "--config", str(path), SIM])
    out = capsys.readouterr().out
    assert _levels(out)["settings.mode"] == "WARNING" and f"chmod 600 {path}" in out and "tk_secret" not in out
    path.chmod(0o600)
    main(["doctor", "--config", str(path), SIM])
    assert "settings.mode" not in _levels(capsys.readouterr().out)
    # A Slack webhook's URL is its secret; so are a remote host's credentials.
    for text in (
        '[[push]]\nkind = "slack"\nurl = "https://hooks.slack.com/services/T0/B0/SECRETxyz"\n',
        'remote_hosts = ["http://ops:hunter22@gpu-box:8729"]\n',
    ):
        path.write_text(text)
        path.chmod(0o644)
        main(["doctor", "--config", str(path), SIM])
        out = capsys.readouterr().out
        assert _levels(out)["settings.mode"] == "WARNING" and "SECRETxyz" not in out and "hunter22" not in out


def test_a_tray_host_and_notification_service_are_found_on_the_bus(tmp_path: Path) -> None:
    asked: list[float] = []

    def bus(names: Iterable[str], timeout_s: float) -> dict[str, bool]:
        asked.append(timeout_s)
        return {name: name != "org.freedesktop.StatusNotifierWatcher" for name in names}

    findings, _, _ = gather(parse_spec("training:at=600,gpus=h100"), 5.0, tmp_path / "c.toml", tmp_path / "h", bus)
    by_name = {c.name: c for c in findings.checks}
    assert by_name["tray"].level is Level.OK and by_name["notifications"].level is Level.OK
    assert asked and 0 < asked[0] <= 5  # the bus is waited for a bounded time


def test_the_bundle_is_redacted_consistently(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bundle = tmp_path / "out" / "report.json"
    config = Path.home() / "trayvml-doctor-test-does-not-exist.toml"  # a home path in a sentence
    # (Named and not there: a problem, exit 1; the bundle is written all the same.)
    assert main(["doctor", "--bundle", str(bundle), "--config", str(config), SIM]) == 1
    assert "redacted report" in capsys.readouterr().err
    text = bundle.read_text()
    data = json.loads(text)
    uuids = [gpu["info"]["uuid"] for gpu in data["snapshot"]["gpus"]]
    assert uuids == ["<uuid-1>", "<uuid-2>"]
    assert "GPU-" not in text
    assert str(Path.home()) not in text and "<home-1>/trayvml-doctor-test" in text
    hostname = socket.gethostname()
    if len(hostname) >= 3:
        assert hostname not in text
    user = getpass.getuser()
    if len(user) >= 3:
        assert f'"{user}"' not in text
    assert data["checks"] and data["snapshot"]["gpus"][0]["processes"]
    assert [p.name for p in bundle.parent.iterdir()] == ["report.json"]  # no temporary file left
    assert bundle.stat().st_mode & 0o777 == 0o600  # the user's own, as before it went through core.files.output


def test_the_bundle_goes_through_a_pipe_and_leaves_it_a_pipe(tmp_path: Path) -> None:
    """``doctor --bundle PIPE`` with a reader on it: the reader gets the bundle, and the pipe is
    not replaced by a plain file (nor a device, nor a link, by the same path)."""
    fifo, reader, got = fifo_with_reader(tmp_path)
    assert main(["doctor", "--bundle", str(fifo), SIM]) == 0
    reader.join(10)
    assert not reader.is_alive() and got and json.loads(got[0])["snapshot"]
    assert fifo.is_fifo()


def test_a_bundle_that_cannot_be_written_is_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "file").write_text("")
    assert main(["doctor", "--bundle", str(tmp_path / "file" / "report.json"), SIM]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trayvml: Could not write") and "Traceback" not in err


def test_redaction_uses_one_token_per_secret() -> None:
    redactor = Redactor()
    redactor.add("alice", "user")
    redactor.add("/home/alice", "home")
    redactor.add("a", "user")  # too short to redact without mangling every word
    text = redactor.redact(
        "alice in /home/alice/x, GPU-12345678-1234-1234-1234-123456789abc twice: "
        "GPU-12345678-1234-1234-1234-123456789abc, a"
    )
    assert text == "<user-1> in <home-1>/x, <uuid-1> twice: <uuid-1>, a"


# ---- doctor --record and --simulate replay= ----
RECORDINGS = Path(__file__).parent / "recordings"


def replayed(path: Path) -> Iterator[tuple[dict, Sample]]:
    """Each recorded tick, and the sample trayvml reads from the recording at that tick's time."""
    from trayvml.core.clock import ManualClock
    from trayvml.nvml.sim.replay import read_recording
    from trayvml.source import Source

    ticks = [e for e in read_recording(path)[1] if "tick" in e]
    clock = ManualClock(ticks[0]["t"])
    source = Source(parse_spec(f"replay={path}"), clock=clock, host=False)
    try:
        for tick in ticks:
            clock.advance_s(tick["t"] - clock.now_s())
            yield tick, source.sample()
    finally:
        source.close()


def replayed_rows(path: Path) -> tuple[list[dict], list[list[list[str]]]]:
    """Each recorded tick, and what trayvml reads from the recording at that tick's time."""
    from trayvml.commands.doctor import trayvml_rows
    from trayvml.nvml.sim.replay import read_recording

    fields = read_recording(path)[0]["fields"]
    read = [(tick, trayvml_rows(sample, fields)) for tick, sample in replayed(path)]
    return [tick for tick, _ in read], [rows for _, rows in read]


# nvidia-smi 580 writes "[N/A]" where NVML answers NOT_SUPPORTED (the H200's fan and retired pages in
# tests/recordings/h200-580-*.jsonl), and its --help-query-gpu says "'N/A' indicates that the field is
# not supported on the current device"; older drivers wrote "[Not Supported]", as trayvml does.
SMI_NOT_SUPPORTED = ("[Not Supported]", "[N/A]")  # (trayvml's, nvidia-smi 580's)


def smi_mismatches(fields: list[str], ours: list[list[str]], smi_fields: list[str], smi_csv: str) -> list[str]:
    """Where trayvml's values (columns ``fields``) differ from nvidia-smi's CSV (``--format=csv,nounits``,
    columns ``smi_fields``) of the same moment.

    Text (names, UUIDs, versions, P-states, [Not Supported]) must be equal; memory in MiB too (both
    round up); other numbers within 2 % or one unit, as nvidia-smi is asked just after trayvml's read
    and a busy GPU's values move meanwhile."""
    import csv

    from trayvml.commands.csvlog import COLUMNS

    lines = [line for line in smi_csv.splitlines() if line.strip()]
    smi_rows = list(csv.reader(lines[1:], skipinitialspace=True))
    found = []
    if len(smi_rows) != len(ours):
        return [f"{len(ours)} GPUs read by trayvml, {len(smi_rows)} by nvidia-smi"]
    for gpu, (row, theirs) in enumerate(zip(ours, smi_rows, strict=True)):
        mine = dict(zip(fields, row, strict=True))
        for name, b in zip(smi_fields, theirs, strict=True):
            if COLUMNS[name].smi.ours:  # "hostname": the H100 recordings asked nvidia-smi's, another fact
                continue
            a = mine[name]
            try:
                x, y = float(a), float(b)
            except ValueError:
                if a.strip() != b.strip() and (a, b) != SMI_NOT_SUPPORTED:
                    found.append(f"GPU {gpu} {name}: trayvml {a!r}, nvidia-smi {b!r}")
                continue
            # The instant power swings by 15 % within the moment between the two reads of a loaded
            # GPU (an H100 at its 700 W cap: 637.61 W, then 744.27 W, tests/recordings/h100-580-busy).
            share = 0.2 if name == "power.draw.instant" else 0.02
            exact = COLUMNS[name].smi.round_up  # memory in MiB: both round up
            if x != y if exact else abs(x - y) > max(1.0, share * abs(y)):
                found.append(f"GPU {gpu} {name}: trayvml {a!r}, nvidia-smi {b!r}")
    return found


ALL_RECORDINGS = sorted(RECORDINGS.glob("*.jsonl"))
WITH_SMI = [p for p in ALL_RECORDINGS if '"smi_csv":{"out"' in p.read_text()]


def test_the_recordings_folder_holds_the_simulated_h100_and_rtx4090() -> None:
    names = {p.name for p in ALL_RECORDINGS}
    assert {"simulated-h100.jsonl", "simulated-rtx4090.jsonl"} <= names
    assert all(p.stat().st_size < 200_000 for p in ALL_RECORDINGS)  # small enough to keep in the repository


def test_a_recording_that_is_a_device_or_a_pipe_nobody_writes_is_refused_in_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --simulate refuses a path that is no file when it parses the spec; one replaced after that
    # was opened and read as a file: a device read to the size limit (256 MiB) and called too big,
    # a named pipe nobody writes waited on by its open for ever.
    from trayvml.core import files
    from trayvml.core.errors import SimulationSpecError
    from trayvml.nvml.sim.replay import read_recording

    monkeypatch.setattr(files, "PIPE_WAIT_S", 0.5)

    device = zero_device(tmp_path)
    with pytest.raises(SimulationSpecError, match=r"cannot be read: it is not a regular file\.$"):
        read_recording(device)
    fifo = tmp_path / "recording.jsonl"
    os.mkfifo(fifo)
    refused = read_in_time(fifo, lambda: read_recording(fifo), wait_s=10)
    assert isinstance(refused, SimulationSpecError)
    assert str(refused) == f"--simulate: the recording {fifo} cannot be read: its writer did not finish within 0.5 s."


@pytest.mark.parametrize("path", ALL_RECORDINGS, ids=lambda p: p.name)
def test_a_replayed_recording_reads_as_it_did_live(path: Path) -> None:
    from trayvml.nvml.sim.replay import read_recording

    header = read_recording(path)[0]
    fields = header["fields"]
    ticks, rows = replayed_rows(path)
    assert len(ticks) >= 2
    for tick, replayed in zip(ticks, rows, strict=True):
        assert_same_reading(fields, replayed, live_pcie_from_gpm(header, tick), held_from(ticks, tick))


def live_pcie_from_gpm(header: dict, tick: dict) -> list[list[str]]:
    """The tick's live rows, with the PCIe throughput GPM read then where it did: since 2026-11-26
    a GPU with GPM takes its PCIe throughput from there (specs.GPM), where recordings made before
    show the byte counters' (wrapped 11 times a second on an H200 copying at 46 GB/s)."""
    from trayvml.core.units import MIB
    from trayvml.nvml.specs import GPM

    rows = [list(row) for row in tick["trayvml"]]
    for row, readings in zip(rows, tick.get("gpm", []), strict=False):
        for read, value in zip(GPM, readings, strict=True):
            column = read.stands_for.replace("_bytes_per_s", "").replace("pcie_", "pcie.throughput.")
            if read.stands_for and column in header["fields"] and isinstance(value, float):
                row[header["fields"].index(column)] = f"{value / MIB:.1f}"
    return rows


def held_from(ticks: list[dict], tick: dict) -> list[list[list[str]]]:
    """The live rows of the ticks up to ``tick`` in the last 5 s: the energy counter is read every
    5 s since 2026-11-26 (with the process lists), so a replay shows the reading of then."""
    from trayvml.core.demand import PROCESS_PERIOD_S

    return [t["trayvml"] for t in ticks if tick["t"] - PROCESS_PERIOD_S < t["t"] <= tick["t"]]


def assert_same_reading(
    fields: list[str], replayed: list[list[str]], live: list[list[str]], held: Iterable[list[list[str]]] = ()
) -> None:
    """Equal, but for rates: the reader divides a counter's change by the clock's time between its
    reads, which live was some milliseconds past the tick's start and in a replay is the tick's
    start itself (the recording holds the driver's answers, not our clock's). Memory in MiB within one:
    recordings before 2026-11-26 rounded it to the nearest MiB; trayvml now rounds up, as nvidia-smi does."""
    from trayvml.commands.csvlog import COLUMNS

    assert len(replayed) == len(live)
    for gpu, (mine, theirs) in enumerate(zip(replayed, live, strict=True)):
        for name, a, b in zip(fields, mine, theirs, strict=True):
            if "throughput" in name and a != b:
                assert float(a) == pytest.approx(float(b), rel=0.01), name
            elif COLUMNS[name].smi.round_up and a != b:
                assert 0 < float(a) - float(b) <= 1, name
            elif name == "energy.consumed" and a != b:
                assert a in {row[gpu][fields.index(name)] for row in held}, name  # an earlier reading
            elif name.startswith("power.") and a != b:
                # Recorded live when mW times 0.001 came out a hair over (69585 mW: 69.58500000000001,
                # "69.59"); read now as the thousandths they are, a tie may round the other way.
                assert float(b) - float(a) == pytest.approx(0.01), name
            else:
                assert a == b, name


def test_a_replay_past_its_recording_says_its_readings_are_the_last_answers_held() -> None:
    # A replay answers the driver's last answers again once its recording is over (flat lines, a
    # power held): said in its label, which every banner, title and status line shows.
    from trayvml.core.clock import ManualClock
    from trayvml.nvml.sim.replay import ReplayedNvml
    from trayvml.source import Source

    path = RECORDINGS / "h200-580-fp.jsonl"
    assert ReplayedNvml(path).duration_s == pytest.approx(4.96, abs=0.01)  # six ticks about a second apart
    clock = ManualClock()
    source = Source(parse_spec(f"replay={path}"), clock=clock, host=False)
    labels = []
    try:
        for _ in range(9):
            labels.append(source.sample().simulation)
            clock.advance_s(1.0)
    finally:
        source.close()
    assert labels[:6] == ["replayed NVML recording (h200-580-fp.jsonl)"] * 6  # its 4.96 s, and an interval
    assert labels[6:] == ["replayed NVML recording (h200-580-fp.jsonl), over: its last answers held"] * 3


@pytest.mark.parametrize("path", WITH_SMI, ids=lambda p: p.name)
def test_replayed_values_equal_nvidia_smis_of_the_same_moment(path: Path) -> None:
    from trayvml.nvml.sim.replay import read_recording

    header = read_recording(path)[0]
    ticks, rows = replayed_rows(path)
    for tick, replayed in zip(ticks, rows, strict=True):
        mismatches = smi_mismatches(header["fields"], replayed, header["smi_fields"], tick["smi_csv"]["out"])
        assert not mismatches, f"tick {tick['tick']}"


# (Not the clock step's: its ticks while the wall clock was an hour back are stored an hour back.)
@pytest.mark.parametrize("name", [p.stem for p in WITH_SMI if "clockstep" not in p.name])
def test_the_history_export_equals_nvidia_smis_of_the_same_moments(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # A real driver's recording written to the history on disk and exported as `trayvml history`
    # exports it, against nvidia-smi's CSV of each tick: every field both know, within the live
    # reading's tolerances (smi_mismatches), but the driver version, which the store does not keep
    # (the machine's, not a GPU's: exported as not available). Memory was kept to the nearest MiB,
    # where nvidia-smi shows a MiB begun as a whole one: 615.06 MiB reserved exported as 615, not 616.
    import csv
    from datetime import UTC, datetime

    from tests.test_store import _write
    from trayvml.nvml.sim.replay import read_recording

    path = RECORDINGS / f"{name}.jsonl"
    fields = read_recording(path)[0]["smi_fields"]
    ticks, samples = zip(*replayed(path), strict=True)
    _write(tmp_path / "store", list(samples))
    start, end = (datetime.fromtimestamp(t_s, UTC).isoformat() for t_s in (ticks[0]["t"] - 0.5, ticks[-1]["t"] + 0.5))
    arguments = ["--from", start, "--to", end, "--query", ",".join(fields), "--nounits", "--csv", "-"]
    assert main(["history", "--store", str(tmp_path / "store"), *arguments]) == 0
    rows = list(csv.reader(capsys.readouterr().out.splitlines()[1:], skipinitialspace=True))
    assert len(rows) == len(ticks) and all(len(s.gpus) == 1 for s in samples)
    for tick, row in zip(ticks, rows, strict=True):
        assert row[fields.index("driver_version")] == "[N/A]"
        found = smi_mismatches(fields, [row], fields, tick["smi_csv"]["out"])
        assert [m for m in found if "driver_version" not in m] == [], f"tick {tick['tick']}"


def test_the_real_driver_recordings_are_the_ones_with_nvidia_smi_and_the_readme_names_them() -> None:
    assert [p.name for p in WITH_SMI] == [
        "h100-580-busy.jsonl",
        "h100-580-clockstep.jsonl",
        "h100-580-ending.jsonl",
        "h100-580-idle.jsonl",
        "h100-580-procs.jsonl",
        "h200-580-busy.jsonl",
        "h200-580-busy2.jsonl",
        "h200-580-ending.jsonl",
        "h200-580-energy.jsonl",
        "h200-580-fp.jsonl",
        "h200-580-idle.jsonl",
        "h200-580-pcie.jsonl",
        "h200-580-pcie2.jsonl",
        "h200-580-procs.jsonl",
    ]
    readme = (RECORDINGS / "README.md").read_text()
    assert all(p.name in readme for p in WITH_SMI) and "580.159.04" in readme and "dmon --gpm-metrics" in readme


def test_trayvml_s_own_columns_are_the_ones_nvidia_smi_does_not_know() -> None:
    # An answer key that is not ours: the field list of nvidia-smi 580 itself. A column claimed as
    # nvidia-smi's that it does not know fails a whole `nvidia-smi --query-gpu` (doctor --record's,
    # or a script's that took the name from `trayvml log --list-fields`).
    from trayvml.commands.csvlog import ALIASES, COLUMNS
    from trayvml.commands.doctor import smi_listed_fields

    known = smi_listed_fields((RECORDINGS / "nvidia-smi-580-help-query-gpu.txt").read_text())
    names = list(COLUMNS) + list(ALIASES)
    # "hostname" is the one name both have, for different facts (csvlog.COLUMNS says which).
    assert {n for n in names if n not in known} == {n for n, c in COLUMNS.items() if c.smi.ours} - {"hostname"}
    assert "memory.unified" not in known and "power.draw.instant" in known and "clocks_throttle_reasons.active" in known


def test_doctor_asks_nvidia_smi_only_for_the_fields_its_help_lists(tmp_path: Path) -> None:
    from trayvml.commands.doctor import shared_fields, smi_known_fields

    listed = RECORDINGS / "nvidia-smi-580-help-query-gpu.txt"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\ncat "{listed}"\n')
    smi.chmod(0o755)
    asked = smi_known_fields(str(smi), shared_fields())
    assert asked and "memory.reserved" in asked and "clocks_event_reasons.active" in asked
    assert set(asked) == set(shared_fields())  # trayvml's own columns are not among the shared ones
    old = tmp_path / "old-smi"
    old.write_text("#!/bin/sh\necho '\"index\"'; echo '\"memory.used\"'\n")
    old.chmod(0o755)
    assert smi_known_fields(str(old), shared_fields()) == ["index", "memory.used"]
    broken = tmp_path / "broken-smi"
    broken.write_text("#!/bin/sh\nexit 9\n")
    broken.chmod(0o755)
    assert smi_known_fields(str(broken), ["index"]) == ["index"]  # no list: ask for all, as before


def test_the_comparison_finds_a_value_that_differs_from_nvidia_smis() -> None:
    fields = ["name", "memory.used", "fan.speed", "power.draw", "xid.count"]
    ours = [["NVIDIA H100 80GB HBM3", "26500", "[Not Supported]", "300.00", "0"]]
    asked = fields[:4]
    same = "name, memory.used [MiB], fan.speed [%], power.draw [W]\nNVIDIA H100 80GB HBM3, 26500, [N/A], 305.0\n"
    assert smi_mismatches(fields, ours, asked, same) == []
    off = "name, memory.used [MiB], fan.speed [%], power.draw [W]\nNVIDIA H100 80GB HBM3, 26501, 0, 320.0\n"
    assert smi_mismatches(fields, ours, asked, off) == [
        "GPU 0 memory.used: trayvml '26500', nvidia-smi '26501'",
        "GPU 0 fan.speed: trayvml '[Not Supported]', nvidia-smi '0'",
        "GPU 0 power.draw: trayvml '300.00', nvidia-smi '320.0'",
    ]


def test_record_then_replay_round_trips_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "r.jsonl"
    spec = "--simulate=processes:start=100,gpus=h100+laptop"
    assert main(["doctor", "--record", str(path), "--seconds", "1", spec]) == 0
    err = capsys.readouterr().err
    assert "NVML calls in 2 ticks" in err and "No nvidia-smi here" in err
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["format"] == "trayvml-nvml-recording" and lines[0]["smi"] == ""
    names = {e["f"] for e in lines if "f" in e}
    assert {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetFieldValues", "nvmlDeviceGetMemoryInfo_v2"} <= names
    ticks, rows = replayed_rows(path)
    for tick, replayed in zip(ticks, rows, strict=True):
        assert_same_reading(lines[0]["fields"], replayed, tick["trayvml"])
    assert main(["snapshot", "--json", f"--simulate=replay={path}"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpus"][0]["info"]["name"] == "NVIDIA H100 80GB HBM3"
    assert data["simulated"].startswith("replayed NVML recording")


def test_a_recording_that_cannot_be_written_is_said_before_it_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``doctor --record FOLDER``: the hour recorded (--seconds up to 3600) was lost when the file
    could not be written at its end. Nothing is recorded now; an existing file is left as it was
    where a recording fails (no library), and none is made where there was none."""
    from trayvml.nvml import recording

    def never(*_: object) -> object:
        raise AssertionError("recorded, with nowhere to put it")

    with monkeypatch.context() as patched:
        patched.setattr(recording, "start_recording", never)
        assert main(["doctor", "--record", str(tmp_path), "--seconds", "1", "--simulate=idle:gpus=h100"]) == 2
    err = capsys.readouterr().err
    assert err == f"trayvml: Could not write {tmp_path}: Is a directory.\n"
    (tmp_path / "a-file").write_text("")
    below = tmp_path / "a-file" / "r.jsonl"
    assert main(["doctor", "--record", str(below), "--seconds", "1", "--simulate=idle:gpus=h100"]) == 2
    assert capsys.readouterr().err == f"trayvml: Could not write {below}: Not a directory.\n"  # not "File exists"
    (tmp_path / "a-file").unlink()

    def no_library(*_: object) -> object:
        raise recording.NoLibraryError("No NVML library to record.")

    kept, new = tmp_path / "kept.jsonl", tmp_path / "new.jsonl"
    kept.write_text("the last recording\n")
    monkeypatch.setattr(recording, "start_recording", no_library)
    for path in (kept, new):
        assert main(["doctor", "--record", str(path), "--seconds", "1", "--simulate=idle:gpus=h100"]) == 3
    assert kept.read_text() == "the last recording\n" and not new.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.jsonl"]  # no temporary file left


def test_nvidia_smi_is_asked_at_each_tick_where_it_exists(tmp_path: Path) -> None:
    from argparse import Namespace

    from trayvml.commands.doctor import record

    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        '#!/bin/sh\ncase "$1" in -q) echo "<nvidia_smi_log/>";; --help-query-gpu) echo \'"name"\';; '
        '*) echo "$1" >>"$0.asked"; echo "name"; echo "X";; esac\n'
    )
    smi.chmod(0o755)
    path = tmp_path / "r.jsonl"
    args = Namespace(record=str(path), seconds=1.0, timeout=5.0)
    assert record(args, parse_spec("training:at=600,gpus=h100"), smi=str(smi)) == 0
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    ticks = [line for line in lines if "tick" in line]
    assert len(ticks) == 2 and lines[0]["smi_fields"] == ["name"]
    assert (tmp_path / "nvidia-smi.asked").read_text() == "--query-gpu=name\n" * 2
    assert all(t["smi_csv"] == {"out": "name\nX\n"} for t in ticks)
    assert ticks[0]["smi_xml"] == {"out": "<nvidia_smi_log/>\n"} and "smi_xml" not in ticks[1]  # once: 30 KB a GPU


def test_a_call_the_recording_lacks_reads_as_no_data_not_a_value(tmp_path: Path) -> None:
    from trayvml.core.metrics import GPU_INDEX
    from trayvml.core.sample import MetricState
    from trayvml.source import Source

    entries = [json.loads(line) for line in (RECORDINGS / "simulated-h100.jsonl").read_text().splitlines()]
    moved = 0
    for entry in entries:
        if entry.get("f", "").startswith("nvmlDeviceGetTemperature"):
            entry["k"][0] = 12345  # another GPU's handle: the function was called, never for this GPU
            moved += 1
    assert moved
    path = tmp_path / "no-temperature.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    source = Source(parse_spec(f"replay={path}"), host=False)
    try:
        gpu = source.sample().gpus[0]
    finally:
        source.close()
    slot = GPU_INDEX["temperature_gpu_c"]
    assert gpu.states[slot] is MetricState.NO_DATA and gpu.values[slot] != gpu.values[slot]  # NaN
    assert gpu.states[GPU_INDEX["memory_used_bytes"]] is MetricState.OK


def test_gpm_metrics_are_replayed_by_their_id_not_their_place() -> None:
    # One request asked again each tick, as GpmSampler asks it, for metrics in another order than
    # the recording's and one it never asked for: each answers as recorded by its id, the unknown
    # one as no data (never a value) every time, and the request's count stays the reader's.
    import ctypes

    import pynvml as N

    from trayvml.nvml.sim.replay import ReplayedNvml
    from trayvml.nvml.specs import GPM

    def ticks(ids: list[int]) -> list[dict[int, tuple[int, float]]]:
        replay = ReplayedNvml(RECORDINGS / "simulated-h100.jsonl")
        request = N.c_nvmlGpmMetricsGet_t()
        request.version, request.numMetrics = N.NVML_GPM_METRICS_GET_VERSION, len(ids)
        for k, metric_id in enumerate(ids):
            request.metrics[k].metricId = metric_id
        answers = []
        for _ in range(3):
            assert replay.answer("nvmlGpmMetricsGet", (ctypes.byref(request),)) == N.NVML_SUCCESS
            assert request.numMetrics == len(ids)
            metrics = [request.metrics[k] for k in range(len(ids))]
            answers.append({m.metricId: (m.nvmlReturn, m.value) for m in metrics})
        return answers

    recorded = [read.metric_id for read in GPM]
    asked = [recorded[3], recorded[0], N.NVML_GPM_METRIC_INTEGER_UTIL]  # DRAM, SM activity, one never asked
    assert N.NVML_GPM_METRIC_INTEGER_UTIL not in recorded
    for as_recorded, answered in zip(ticks(recorded), ticks(asked), strict=True):
        assert answered[asked[0]] == as_recorded[asked[0]] and answered[asked[1]] == as_recorded[asked[1]]
        assert as_recorded[asked[0]] != as_recorded[asked[1]]  # told apart
        assert answered[N.NVML_GPM_METRIC_INTEGER_UTIL] == (N.NVML_ERROR_UNKNOWN, 0.0)


def test_a_field_batch_the_recording_never_asked_for_is_answered_field_by_field(tmp_path: Path) -> None:
    """Fields asked together that the recording asked in other batches: each answers from a batch
    that holds it (the energy counter from its own one-field batch, beside the NVLink link count's
    from another); in a recording made before a field was read at all (the energy counter's batches
    left out), one the reader also reads with a call answers NOT_SUPPORTED so that the call is
    read, and any other is no data, never a value."""
    import ctypes

    import pynvml as N

    from trayvml.nvml import binding
    from trayvml.nvml.fields import field_array, field_view
    from trayvml.nvml.recording import restore
    from trayvml.nvml.sim.library import install, uninstall
    from trayvml.nvml.sim.replay import ReplayedNvml

    energy, link_count = (N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, 0), (N.NVML_FI_DEV_NVLINK_LINK_COUNT, 0)
    path = RECORDINGS / "simulated-h100.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    before = tmp_path / "before.jsonl"  # as made before the energy counter was read

    def asks_energy_alone(line: str) -> bool:
        entry = json.loads(line)
        if entry.get("f") != "nvmlDeviceGetFieldValues" or entry["k"][1:] != [1, "r"]:
            return False
        array = field_array([(0, 0)])
        restore((None, None, ctypes.byref(array)), entry["o"])
        return (int(array[0].fieldId), int(array[0].scopeId)) == energy

    before.write_text("".join(line for line in lines if not asks_energy_alone(line)))
    assert len(before.read_text()) < len(path.read_text())

    def ask(recording: Path, pairs: list[tuple[int, int]]) -> Any:
        install(ReplayedNvml(recording))
        try:
            N.nvmlInit()
            asked = field_array(pairs)
            binding.read_fields(N.nvmlDeviceGetHandleByIndex(0), asked)
            return field_view(asked)
        finally:
            uninstall()

    alone = {pair: ask(path, [pair]) for pair in (energy, link_count)}
    together = ask(path, [link_count, energy, (N.NVML_FI_DEV_POWER_AVERAGE, 0)])
    for k, pair in enumerate((link_count, energy)):
        for name in ("fieldId", "nvmlReturn", "valueType", "value", "timestamp"):
            assert together[name][k] == alone[pair][name][0], (pair, name)
    assert alone[energy]["nvmlReturn"][0] == N.NVML_SUCCESS and alone[energy]["value"][0] != 0
    assert together["nvmlReturn"][2] == N.NVML_ERROR_UNKNOWN and together["value"][2] == 0
    old = ask(before, [link_count, energy, (N.NVML_FI_DEV_POWER_AVERAGE, 0)])
    assert old["nvmlReturn"].tolist() == [N.NVML_SUCCESS, N.NVML_ERROR_NOT_SUPPORTED, N.NVML_ERROR_UNKNOWN]
    assert old["value"][0] == alone[link_count]["value"][0]


def test_a_two_call_recording_replays_to_one_call_readers_tick_by_tick(tmp_path: Path) -> None:
    """pynvml's size query then fill, recorded; read back with one call an array (binding): each
    read gets the answer of its own tick, also where the size query alone answered (NOT_FOUND)."""
    import pynvml as N

    from trayvml.core.clock import ManualClock
    from trayvml.nvml import binding
    from trayvml.nvml.recording import RECORDING_FORMAT, start_recording, stop_recording
    from trayvml.nvml.sim.library import SimulatedNvml, install, uninstall
    from trayvml.nvml.sim.replay import ReplayedNvml

    install(SimulatedNvml(parse_spec("processes:gpus=rtx4090,start=1800"), ManualClock()))
    recorder = start_recording()
    try:
        N.nvmlInit()
        handle = N.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(N.NVMLError_NotFound):
            N.nvmlDeviceGetProcessUtilization(handle, 2**62)  # nothing newer: the query alone answers
        live = [(s.pid, s.smUtil) for s in N.nvmlDeviceGetProcessUtilization(handle, 0)]  # query, fill
        N.nvmlShutdown()
    finally:
        stop_recording(recorder)
    assert live
    path = tmp_path / "two-calls.jsonl"
    lines = [{"format": RECORDING_FORMAT, "version": 1}, *recorder.entries]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    install(ReplayedNvml(path))
    try:
        N.nvmlInit()
        handle = N.nvmlDeviceGetHandleByIndex(0)
        read = binding.ProcessUtilization()
        with pytest.raises(N.NVMLError_NotFound):
            read(handle, 2**62)
        assert [(s.pid, s.smUtil) for s in read(handle, 0)] == live
    finally:
        uninstall()


@pytest.mark.parametrize("content", ["", "not json\n", '{"format": "something else"}\n'])
def test_a_file_that_is_not_a_recording_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    assert main(["snapshot", f"--simulate=replay={path}"]) == 2
    err = capsys.readouterr().err
    assert "is not a trayvml NVML recording" in err and "Traceback" not in err
    assert main(["snapshot", f"--simulate=replay={tmp_path / 'missing.jsonl'}"]) == 2
    assert "replay wants a recording file" in capsys.readouterr().err


def test_every_metric_state_has_words_in_the_doctors_report() -> None:
    from trayvml.commands.doctor import _STATE_WORDS
    from trayvml.core.sample import MetricState

    assert set(_STATE_WORDS) == set(MetricState)


def test_doctor_lists_the_driver_functions_trayvml_works_around(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trayvml.nvml import binding

    has = binding.has_function
    monkeypatch.setattr(binding, "has_function", lambda name: name != "nvmlDeviceGetTemperatureV" and has(name))

    def bus(names: Iterable[str], timeout_s: float) -> dict[str, bool]:
        return dict.fromkeys(names, True)

    findings, _, _ = gather(parse_spec("training:at=600,gpus=h100"), 5.0, tmp_path / "c.toml", tmp_path / "h", bus)
    notes = [c for c in findings.checks if c.name == "driver.functions"]
    assert len(notes) == 1 and notes[0].level is Level.WARNING
    assert "lacks nvmlDeviceGetTemperatureV" in notes[0].sentence


def test_push_destinations_are_listed_redacted_with_their_last_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from trayvml.config import PushDestination, Settings, SettingsStore
    from trayvml.platform.push import default_status_file, destination_name

    failing = PushDestination("ntfy", url="https://ntfy.example.com/gpus-secret-topic", token="tk_verysecret")
    fine = PushDestination("webhook", url="https://hooks.example.com/never-failed")
    config = tmp_path / "config.toml"
    SettingsStore(config).save(Settings(push=(failing, fine)))
    status = default_status_file(simulated=True)  # beside this test's own state folder (the fixture's)
    status.parent.mkdir(parents=True)
    status.write_text(
        json.dumps(
            {
                destination_name(failing): {
                    "failing": True,
                    "last_failure": "it answered HTTP 403 Forbidden",
                    "last_failure_s": 1_800_000_000.0,
                }
            }
        )
    )
    assert main(["doctor", SIM, "--config", str(config)]) == 0  # a failing destination warns, it is no PROBLEM
    out = capsys.readouterr().out
    levels = _levels(out)
    assert levels["push.1"] == "WARNING" and levels["push.2"] == "OK", out
    line = next(line for line in out.splitlines() if "push.1" in line)
    assert "ntfy ntfy.example.com" in line and "HTTP 403 Forbidden" in line
    assert "secret-topic" not in out and "tk_verysecret" not in out and "never-failed" not in out


# nvidia-smi dmon --gpm-metrics, run beside each *-busy.jsonl's recording (scripts/real-gpu-check):
# its columns for each of trayvml's GPM metrics (specs.GPM), and the unit dmon shows it in.
DMON_COLUMNS = {
    "sm_activity_percent": ("smutil", 1.0),
    "sm_occupancy_percent": ("smocc", 1.0),
    "tensor_activity_percent": ("mmaact", 1.0),
    "dram_bandwidth_percent": ("dram", 1.0),
    "fp64_activity_percent": ("fp64", 1.0),
    "fp32_activity_percent": ("fp32", 1.0),
    "fp16_activity_percent": ("fp16", 1.0),
    "gpm_pcie_tx_bytes_per_s": ("pcitx", 2**20),
    "gpm_pcie_rx_bytes_per_s": ("pcirx", 2**20),
    "gpm_nvlink_rx_bytes_per_s": ("nvlrx", 2**20),
    "gpm_nvlink_tx_bytes_per_s": ("nvltx", 2**20),
}


def dmon_medians(path: Path) -> dict[str, float]:
    """Each of dmon's columns' median over the rows that have a value ("-": not yet two samples)."""
    import statistics

    lines = path.read_text().splitlines()
    names = lines[0].lstrip("#").split()
    columns: dict[str, list[float]] = {}
    for line in lines[2:]:
        for name, text in zip(names, line.split(), strict=True):
            if text != "-" and name != "Time":
                columns.setdefault(name, []).append(float(text))
    return {name: statistics.median(values) for name, values in columns.items()}


def replayed_ok_values(path: Path, keys: list[str]) -> dict[str, list[float]]:
    """Each of ``keys``' values where the replay of the first GPU reads it OK, tick by tick."""
    from trayvml.core.sample import MetricState

    ours: dict[str, list[float]] = {}
    for _, sample in replayed(path):
        gpu = sample.gpus[0]
        assert not gpu.lower_bounds & set(keys), gpu.lower_bounds  # each value is the rate, not "at least"
        for key in keys:
            if gpu.state(key) is MetricState.OK:
                ours.setdefault(key, []).append(gpu.value(key))
    return ours


# What each recording's load shows in dmon's columns (scripts/real_gpu_load.py): busy, bf16 matrix
# products and a 1 GiB copy (FP64, FP32 and FP16 at 0: the products run on the tensor cores); fp,
# FP64, FP32 and FP16 multiply-add loops with no tensor core and no memory, each its own share.
GPM_LOADS = {
    "h100-580-busy": "busy",
    "h200-580-busy": "busy",
    "h200-580-busy2": "busy",
    "h200-580-fp": "fp",
}


@pytest.mark.parametrize("name", list(GPM_LOADS))
def test_replayed_gpm_metrics_agree_with_nvidia_smi_dmon_beside_the_real_gpu(name: str) -> None:
    # The answer key is nvidia-smi's own GPM reading of the same seconds (a steady load); dmon shows
    # whole numbers, so within 1.5 units or 10 %.
    import statistics

    from trayvml.nvml.specs import GPM

    ours = replayed_ok_values(RECORDINGS / f"{name}.jsonl", [read.key for read in GPM])
    dmon = dmon_medians(RECORDINGS / f"{name}.dmon-gpm.txt")
    assert set(ours) == set(DMON_COLUMNS) and all(len(values) >= 4 for values in ours.values())
    for key, (column, unit) in DMON_COLUMNS.items():
        mine, theirs = statistics.median(ours[key]) / unit, dmon[column]
        assert abs(mine - theirs) <= max(1.5, 0.1 * theirs), f"{key}: trayvml {mine:.2f}, dmon {column} {theirs}"
    if GPM_LOADS[name] == "busy":  # the load was there
        assert dmon["smutil"] > 90 and dmon["mmaact"] > 80 and dmon["dram"] > 20
    else:  # each FP share apart from the others (a metric read for another would fail above)
        assert dmon["mmaact"] == dmon["dram"] == 0 and dmon["fp64"] > dmon["fp32"] + 10 > dmon["fp16"] + 20


@pytest.mark.parametrize("name", ["h200-580-pcie", "h200-580-pcie2"])
def test_replayed_pcie_throughput_agrees_with_the_bytes_copied_and_nvidia_smi_beside_the_real_gpu(name: str) -> None:
    # Pinned host memory copied to and from an H200 (Gen5 x16) on two streams at once, 46-50 GB/s
    # each way. Answer keys that are not trayvml's: the copier's own count of the bytes it moved each
    # second (payload; the link carries more: packet headers), nvidia-smi dmon -s t
    # (nvmlDeviceGetPcieThroughput, MB/s) and, for the second, dmon's GPM PCIe columns (MiB/s), in the
    # same seconds. The driver's 32-bit byte counters wrap about 11 times a second there: read from
    # them (the first recording holds their answers too), trayvml showed 0.2-4.4 GB/s.
    import statistics

    keys = {"pcie_tx_bytes_per_s": ("txpci", "d2h", "pcitx"), "pcie_rx_bytes_per_s": ("rxpci", "h2d", "pcirx")}
    ours = replayed_ok_values(RECORDINGS / f"{name}.jsonl", list(keys))
    dmon = dmon_medians(RECORDINGS / f"{name}.dmon.txt")
    gpm_file = RECORDINGS / f"{name}.dmon-gpm.txt"
    gpm = dmon_medians(gpm_file) if gpm_file.exists() else {}
    copied: dict[str, list[float]] = {"h2d": [], "d2h": []}
    for line in (RECORDINGS / f"{name}.copier.txt").read_text().splitlines():
        words = line.split()  # "pcie: <time> h2d <B/s> d2h <B/s> B/s"
        if words[0] == "pcie:":
            copied["h2d"].append(float(words[3]))
            copied["d2h"].append(float(words[5]))
    for key, (column, direction, gpm_column) in keys.items():
        assert len(ours.get(key, [])) >= 4, key
        mine, payload = statistics.median(ours[key]), statistics.median(copied[direction])
        assert abs(mine - dmon[column] * 1e6) <= 0.15 * dmon[column] * 1e6, (
            f"{key}: {mine:.3g}, dmon {dmon[column]} MB/s"
        )
        assert payload <= mine <= 1.25 * payload, f"{key}: {mine:.3g} B/s, {payload:.3g} B/s of payload copied"
        if gpm:
            assert mine / 2**20 == pytest.approx(gpm[gpm_column], rel=0.01), key
    assert gpm or name == "h200-580-pcie"


def test_replayed_energy_counter_equals_the_power_nvidia_smi_saw_drawn_on_the_real_gpu() -> None:
    # The energy counter (field 83, "in mJ since the driver was last reloaded"), read every 5 s over
    # 21 s of the busy load on an H200. The answer key is nvidia-smi's instant power every 100 ms
    # beside it (stamped in UTC), summed over the seconds between the first reading and the last: no
    # part of trayvml is in it. Replayed, the counter's joules and the energy meter's total over those
    # seconds are within 2 % of it (0.2 % that day), all of it the one process's. Until 2026-11-28
    # the replays of 10 of the 12 real recordings before it read the counter as not supported (the meter fell
    # back to summing the power): it matched the counter's one-field batch to the NVLink link
    # count's, asked alone at start.
    import csv
    import itertools
    from datetime import UTC, datetime

    from trayvml.core.sample import MetricState
    from trayvml.monitor.energy import DRIVER, EnergyMeter

    meter = EnergyMeter()
    readings: list[tuple[float, float]] = []  # (tick's time, counter J) at each new reading
    for tick, sample in replayed(RECORDINGS / "h200-580-energy.jsonl"):
        meter.update(sample)
        gpu = sample.gpus[0]
        if (
            gpu.state("energy_consumed_j") is MetricState.OK
            and gpu.value("energy_consumed_j") not in dict(readings).values()
        ):
            readings.append((tick["t"], gpu.value("energy_consumed_j")))
    with (RECORDINGS / "h200-580-energy.power.csv").open() as f:
        rows = list(csv.reader(f, skipinitialspace=True))[1:]  # timestamp, power.draw.instant [W], ...
    power = [
        (datetime.strptime(r[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp(), float(r[1])) for r in rows
    ]
    assert len(readings) >= 4  # read every 5 s
    (start_s, first_j), (end_s, last_j) = readings[0], readings[-1]
    assert power[0][0] < start_s and end_s < power[-1][0]
    drawn_j = 0.0  # trapezoids, cut at the two readings
    for (t0, w0), (t1, w1) in itertools.pairwise(power):
        drawn_j += (w0 + w1) / 2 * max(0.0, min(end_s, t1) - max(start_s, t0))
    assert drawn_j > 600 * (end_s - start_s)  # the load was there (an H200 near its 700 W cap)
    assert last_j - first_j == pytest.approx(drawn_j, rel=0.02)
    assert meter.method(0) == DRIVER
    assert meter.since_start_wh(0) * 3600 == pytest.approx(drawn_j, rel=0.02)  # Wh
    busy = sample.gpus[0].processes
    assert len(busy) == 1 and meter.process_energy_wh(busy[0]) == pytest.approx(meter.since_start_wh(0))


@pytest.mark.parametrize("name", ["h100-580-procs", "h200-580-procs"])
def test_replayed_process_lists_equal_nvidia_smi_s_beside_the_real_gpu(name: str) -> None:
    # A busy process (matrix products, 19 GiB in use) and a light one (2.6 GiB) on one H200, and on one
    # H100 by the reader of a later day; nvidia-smi --query-compute-apps after the recording, and
    # pmon's memory column beside it, are the answer key for the PIDs and the memory each process
    # holds (MiB, exactly).
    import csv

    from trayvml.core.units import MIB

    lines = (RECORDINGS / f"{name}.apps.csv").read_text().splitlines()[1:]
    expected = {int(pid): int(memory.split()[0]) for pid, _, memory in csv.reader(lines, skipinitialspace=True)}
    pmon = {
        int(words[2]): int(words[10])
        for line in (RECORDINGS / f"{name}.pmon.txt").read_text().splitlines()
        if not line.startswith("#") and (words := line.split())
    }
    assert pmon == expected and len(expected) == 2
    for _, sample in replayed(RECORDINGS / f"{name}.jsonl"):
        gpu = sample.gpus[0]
        assert {p.pid: p.used_memory_bytes / MIB for p in gpu.processes} == expected
        # The driver answers one sample per process, its latest (nvml.h: "since lastSeenTimeStamp";
        # 2 entries for 2 processes over 5 s here), so each share is one sample period's: the
        # light process, busy a fifth of the time, read 59 % once and 8 % the next time.
        shares = [p.sm_util_percent for p in gpu.processes]
        assert all(0 <= share <= 100 for share in shares) and sum(shares) <= 100


@pytest.mark.parametrize("name", ["h100-580-ending", "h200-580-ending"])
def test_a_process_that_ended_is_not_listed_after_nvidia_smi_stopped_listing_it_on_the_real_gpu(name: str) -> None:
    # A light process ends 4 s into an 11 s recording (an H200's, an H100's); nvidia-smi --query-compute-apps
    # every half second beside it, each line stamped. Once nvidia-smi lists it no more it is gone for
    # good: no tick after that may list it (the reader held its 5 s old list one tick longer, with the
    # GPU's memory in use already 0, before it read the lists again when that memory went).
    lines = [line.split(" ", 1) for line in (RECORDINGS / f"{name}.apps.txt").read_text().splitlines()]
    listed = [(float(stamp), rest.strip()) for stamp, rest in lines]
    gone_s = next(stamp for stamp, rest in listed if not rest)
    assert any(rest for stamp, rest in listed if stamp < gone_s)  # it ran while watched
    shown = [(tick["t"], [p.pid for p in s.gpus[0].processes]) for tick, s in replayed(RECORDINGS / f"{name}.jsonl")]
    assert any(pids for t, pids in shown if t < gone_s)
    assert not [(t, pids) for t, pids in shown if t > gone_s and pids]
