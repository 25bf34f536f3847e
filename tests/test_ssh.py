"""ssh:// remote hosts against a real OpenSSH server on 127.0.0.1, started per test in tmp_path.

The server's "GPU box" is a fake ``nvidia-smi`` printing recorded CSV (tests/fixtures/nvidia-smi),
or this checkout as ``trayvml`` on simulated GPUs; the client is the real ``ssh`` with a config of
its own (TRAYVML_SSH_CONFIG), so nothing of the user's ~/.ssh is read or written.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from trayvml.core.clock import SystemClock
from trayvml.core.errors import TrayvmlError
from trayvml.core.sample import MetricState, Sample
from trayvml.core.units import MIB
from trayvml.remote.fetch import parse_endpoint
from trayvml.remote.source import RemoteSource
from trayvml.remote.ssh import APP_FIELDS, GPU_FIELDS, SSH_CONFIG_ENV

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia-smi"
REPO = Path(__file__).resolve().parent.parent
SSHD = shutil.which("sshd", path="/usr/sbin:/usr/bin:/sbin")
SSH = shutil.which("ssh")

pytestmark = pytest.mark.skipif(
    SSHD is None or SSH is None,
    reason="OpenSSH is not installed (apt-get install openssh-server openssh-client; scripts/setup --test does)",
)

# nvidia-smi as the fixtures recorded it: the query must be trayvml's (else nvidia-smi's own error),
# -l N prints again every N seconds until the pipe closes.
FAKE_SMI = """#!/bin/sh
loop=""
for a in "$@"; do
  case "$a" in
    --query-gpu=*) q="${a#--query-gpu=}"; f=query-gpu ;;
    --query-compute-apps=*) q="${a#--query-compute-apps=}"; f=query-compute-apps ;;
    -l) loop=next ;;
    *) [ "$loop" = next ] && loop="$a" ;;
  esac
done
if [ "$q" != "$(cat "$FIXTURES/$f.fields")" ]; then echo "Field \\"$q\\" is not a valid field to query."; exit 2; fi
while :; do
  cat "$FIXTURES/$f.csv" || exit 1
  [ -n "$loop" ] || exit 0
  sleep "$loop"
done
"""


@dataclass
class Box:
    tmp: Path
    port: int
    process: subprocess.Popen[bytes]

    def config(self, name: str, key: str = "user_key", known: bool = True) -> Path:
        """A client config for host ``box``: ``key`` to log in, the server's host key known or not."""
        known_hosts = self.tmp / ("known_hosts" if known else "empty_known_hosts")
        path = self.tmp / f"{name}.ssh_config"
        path.write_text(
            "Host box\n"
            "  HostName 127.0.0.1\n"
            f"  Port {self.port}\n"
            f"  IdentityFile {self.tmp / key}\n"
            "  IdentitiesOnly yes\n"
            "  IdentityAgent none\n"
            f"  UserKnownHostsFile {known_hosts}\n"
            "  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n"
            "  LogLevel ERROR\n"
        )
        return path

    def serve(self, what: str) -> None:
        """What the host has on its PATH: "smi" (nvidia-smi), "trayvml" (and nvidia-smi) or "no" (neither)."""
        (self.tmp / "serving").write_text(what)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=10)


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    assert SSHD is not None
    for key in ("host_key", "user_key", "other_key"):
        _keygen(tmp_path / key)
    (tmp_path / "authorized_keys").write_text((tmp_path / "user_key.pub").read_text())
    (tmp_path / "empty_known_hosts").write_text("")
    port = _free_port()
    host_key = (tmp_path / "host_key.pub").read_text().split()
    (tmp_path / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    bins = {"smi": tmp_path / "smi-bin", "trayvml": tmp_path / "trayvml-bin", "no": tmp_path / "no-bin"}
    for folder in bins.values():
        folder.mkdir()
    for folder in (bins["smi"], bins["trayvml"]):
        (folder / "nvidia-smi").write_text(FAKE_SMI)
        (folder / "nvidia-smi").chmod(0o755)
    (bins["trayvml"] / "trayvml").write_text(
        "#!/bin/sh\n"
        f"export PYTHONPATH={REPO} TRAYVML_SIMULATE=training XDG_CONFIG_HOME={tmp_path / 'config'}\n"
        f'exec {sys.executable} -m trayvml "$@"\n'
    )
    (bins["trayvml"] / "trayvml").chmod(0o755)
    # The session's PATH: the chosen folder and the system's tools (no /usr/local, where a real
    # trayvml or nvidia-smi could be); the original command run as ssh asked.
    (tmp_path / "session").write_text(
        "#!/bin/sh\n"
        f'export FIXTURES={FIXTURES} PATH="{tmp_path}/$(cat {tmp_path}/serving)-bin:/usr/bin:/bin"\n'
        'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'
    )
    (tmp_path / "session").chmod(0o755)
    (tmp_path / "serving").write_text("smi")
    (tmp_path / "sshd_config").write_text(
        f"Port {port}\n"
        "ListenAddress 127.0.0.1\n"
        f"HostKey {tmp_path / 'host_key'}\n"
        f"AuthorizedKeysFile {tmp_path / 'authorized_keys'}\n"
        f"PidFile {tmp_path / 'sshd.pid'}\n"
        "StrictModes no\n"
        "UsePAM no\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\n"
        f"ForceCommand {tmp_path / 'session'}\n"
    )
    command = [SSHD, "-D", "-e", "-f", str(tmp_path / "sshd_config"), "-p", str(port)]
    if os.geteuid() == 0 and not Path("/run/sshd").is_dir():
        # sshd as root wants its privilege-separation folder /run/sshd, made by the system's service:
        # made here in a mount namespace of its own, on a tmpfs over /run, so the system's stays untouched.
        if shutil.which("unshare") is None:
            pytest.skip("sshd as root needs /run/sshd, and unshare is missing to make one privately")
        command = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            'mount -t tmpfs tmpfs /run && mkdir -m 755 /run/sshd && exec "$@"',
            "sh",
            *command,
        ]
    with (tmp_path / "sshd.log").open("wb") as log_file:  # the child has its own copy
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log_file)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (tmp_path / "sshd.log").read_text()
                    pytest.skip(f"the test's sshd did not start: {log[-500:]}")
                time.sleep(0.02)
        box = Box(tmp_path, port, process)
        box.serve("smi")
        monkeypatch.setenv(SSH_CONFIG_ENV, str(box.config("good")))
        yield box
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        # What the sessions ran on the "host" ends with the test, whatever became of it.
        for leftover in _session_processes(tmp_path):
            with contextlib.suppress(psutil.Error):
                leftover.kill()


def _session_processes(tmp_path: Path) -> list[psutil.Process]:
    """The processes the box's sessions started (their PATH names the test's folder)."""
    found = []
    for process in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error):
            if str(tmp_path) in process.environ().get("PATH", "") and process.pid != os.getpid():
                found.append(process)
    return found


def _read_until(source: RemoteSource, done: float = 20.0) -> None:
    """read_once until it has GPUs or a fault (each read is bounded by the source's timeout)."""
    end_s = time.monotonic() + done
    while time.monotonic() < end_s:
        samples = source.read_once()
        if samples and (samples[0].gpus or (samples[0].remote and samples[0].remote.fault)):
            return
        time.sleep(0.05)


def test_fixture_fields_are_the_query() -> None:
    assert (FIXTURES / "query-gpu.fields").read_text().strip() == ",".join(GPU_FIELDS)
    assert (FIXTURES / "query-compute-apps.fields").read_text().strip() == ",".join(APP_FIELDS)


@pytest.mark.parametrize(("interval_s", "lists_every_s"), [(1.0, 5), (5.0, 5), (20.0, 20)])
def test_process_lists_come_every_5_s_or_every_interval_past_it(interval_s: float, lists_every_s: int) -> None:
    """A host read every 5 s (the tray's default) gets its process lists each read, not every
    25 s: a process that ended stayed listed, and was given energy, that long."""
    from trayvml.remote.ssh import remote_script

    script = remote_script(interval_s)
    assert f"-l {round(interval_s)} " in script and f"echo P. || exit; sleep {lists_every_s}; done" in script


def test_a_snapshot_starts_every_interval_however_long_one_takes() -> None:
    """Where trayvml is installed on the host: the interval's sleep runs beside the snapshot, not
    after it (batches came 6-7 s apart at 5 s, and one 5 s row in four of the host's history was
    left empty, its line in pieces)."""
    from trayvml.remote.ssh import remote_script

    script = remote_script(5.0)
    assert "while :; do sleep 5 & trayvml snapshot --json" in script and "echo S. || exit; wait; done" in script


def test_ssh_urls_parse_and_passwords_are_refused() -> None:
    endpoint = parse_endpoint("ssh://alice@gpu-box:2222")
    assert (endpoint.ssh, endpoint.host, endpoint.port, endpoint.username) == (True, "gpu-box", 2222, "alice")
    assert endpoint.url == "ssh://alice@gpu-box:2222"
    with pytest.raises(TrayvmlError, match="key or the SSH agent"):
        parse_endpoint("ssh://alice:secret@gpu-box")
    with pytest.raises(TrayvmlError, match="ssh://"):
        parse_endpoint("ssh://-oProxyCommand=x")


def test_nvidia_smi_host_gives_values_and_not_supported_states(box: Box) -> None:
    source = RemoteSource(parse_endpoint("ssh://box"), interval_s=1.0)
    try:
        _read_until(source)
        (sample,) = source.samples
        assert sample.remote is not None and not sample.remote.fault, sample.remote
        # Both clocks of when the batch came (the read takes it up to a second later): stamped
        # with the read's monotonic time instead, the host's Monitor saw the lag as a clock set.
        offset_s = time.time() - SystemClock().monotonic_s()
        assert sample.timestamp_s - sample.monotonic_s == pytest.approx(offset_s, abs=0.05)
        assert sample.system is not None and sample.system.driver_version == "550.54.15"
        h100, rtx = sample.gpus
        names = [d.name for d in sample.devices]
        assert names == ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090"]
        assert sample.devices[0].memory_total_bytes == 81559 * MIB
        assert h100.value("utilization_gpu_percent") == 87
        assert h100.value("memory_used_bytes") == 61234 * MIB
        assert h100.value("power_draw_w") == pytest.approx(512.34)
        assert h100.value("performance_state") == 0 and rtx.value("performance_state") == 2
        assert h100.value("memory_used_percent") == pytest.approx(100 * 61234 / 81559)
        # [N/A] (what 580 writes for the H200's fan: tests/recordings) and [Not Supported] are both
        # not supported, and neither is 0.
        assert h100.state("fan_speed_percent") is MetricState.NOT_SUPPORTED
        assert math.isnan(h100.value("fan_speed_percent"))
        assert rtx.value("fan_speed_percent") == 41
        assert rtx.state("ecc_corrected_volatile_count") is MetricState.NOT_SUPPORTED
        assert math.isnan(rtx.value("ecc_corrected_volatile_count"))
        assert h100.state("ecc_corrected_volatile_count") is MetricState.OK
        # What nvidia-smi was not asked for is not supported (GPM, energy), never 0.
        assert h100.state("sm_activity_percent") is MetricState.NOT_SUPPORTED
        # Processes come in their own loop: until its first list they are unknown, not none
        # (snapshot --remote said "0 processes" of a host running jobs).
        if h100.state("process_count") is not MetricState.OK:
            assert h100.state("process_count") is MetricState.NO_DATA and not h100.processes
            assert math.isnan(h100.value("process_count"))
        end_s = time.monotonic() + 10
        while not source.read_once()[0].gpus[0].processes and time.monotonic() < end_s:
            time.sleep(0.1)
        h100, rtx = source.samples[0].gpus
        (job,) = h100.processes
        assert (job.pid, job.name, job.used_memory_bytes) == (41235, "python3", 60416 * MIB)
        (xorg,) = rtx.processes
        assert xorg.pid == 2290 and math.isnan(xorg.used_memory_bytes)
    finally:
        source.close()


def test_every_batch_that_came_since_the_last_read_is_taken_in_order(box: Box) -> None:
    """A host sends a batch an interval; a read took the latest alone, so a read a little out of
    phase with the batches lost the one before it (an empty row in the host's history)."""
    source = RemoteSource(parse_endpoint("ssh://box"), interval_s=1.0)
    source.keep_backlog()
    try:
        _read_until(source)
        source.unseen()
        time.sleep(4.5)  # four batches or five come meanwhile (three at least on a busy machine), and no read
        (latest,) = source.read_once()  # the latest of the host, for the tray and the window
        taken = source.unseen()  # every batch, for the host's history and alerts
        stamps = [sample.timestamp_s for sample in taken]
        assert len(taken) >= 3 and stamps == sorted(set(stamps)), stamps
        assert all(sample.gpus for sample in taken) and latest is taken[-1]
        (again,) = source.read_once()  # none new (or one just come): the same again, not taken twice
        assert again is latest or again.timestamp_s > latest.timestamp_s
        assert source.unseen() == [again]
    finally:
        source.close()


def test_trayvml_host_is_read_through_snapshot_json(box: Box) -> None:
    box.serve("trayvml")
    sample = _answered()
    assert sample.remote is not None and sample.remote.kind == "trayvml over SSH"
    assert sample.simulation  # the remote's GPUs are simulated, and it says so
    assert sample.gpus and sample.devices[0].name.startswith("NVIDIA")
    assert sample.gpus[0].state("utilization_gpu_percent") is MetricState.OK
    assert sample.system is not None and sample.system.driver_version


def _answered() -> Sample:
    """The first sample of ssh://box, which answered (no fault), its connection closed after."""
    source = RemoteSource(parse_endpoint("ssh://box"), interval_s=1.0)
    try:
        _read_until(source)
        (sample,) = source.samples
    finally:
        source.close()
    assert sample.remote is not None and not sample.remote.fault, sample.remote
    return sample


def _fault(source: RemoteSource) -> str:
    _read_until(source)
    (sample,) = source.samples
    assert sample.remote is not None
    assert not sample.gpus
    return sample.remote.fault


def test_wrong_key_says_login_failed(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SSH_CONFIG_ENV, str(box.config("wrong", key="other_key")))
    source = RemoteSource(parse_endpoint("ssh://box"))
    try:
        assert "SSH login failed (permission denied)" in _fault(source)
        assert source.failures == 1 and source.wait_s() > source.interval_s  # backs off before trying again
    finally:
        source.close()


def test_unknown_host_key_says_so(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SSH_CONFIG_ENV, str(box.config("unknown", known=False)))
    source = RemoteSource(parse_endpoint("ssh://box"))
    try:
        assert "the host's key is not known" in _fault(source)
    finally:
        source.close()


def test_host_without_nvidia_smi_says_so(box: Box) -> None:
    box.serve("no")
    source = RemoteSource(parse_endpoint("ssh://box"))
    try:
        assert "nvidia-smi is not installed there" in _fault(source)
    finally:
        source.close()


def test_a_trayvml_that_cannot_answer_leaves_the_host_to_nvidia_smi(box: Box) -> None:
    """An old trayvml (or another program of that name) on the host's PATH: taken because it was
    there, it printed nothing each interval and the host "did not answer within 15 s" for good."""
    folder = box.tmp / "oldtrayvml-bin"
    folder.mkdir()
    shutil.copy(box.tmp / "smi-bin" / "nvidia-smi", folder / "nvidia-smi")
    (folder / "trayvml").write_text("#!/bin/sh\necho 'usage: trayvml [-h]' >&2\nexit 2\n")
    (folder / "trayvml").chmod(0o755)
    box.serve("oldtrayvml")
    sample = _answered()
    assert [d.name for d in sample.devices] == ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090"]


def test_the_users_ssh_config_for_their_own_sessions_is_not_used(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    """A LocalForward for the box (as for Jupyter) was taken by trayvml's ssh, open all day, and
    the user's own ssh then could not forward; with ControlMaster auto trayvml's ssh became the
    master, and ending it (a settings change, quitting) ended the user's sessions through it."""
    config = box.config("interactive")
    forwarded = _free_port()
    # A folder of its own with a short path: a control socket's path must stay under 108 bytes.
    sockets = Path(tempfile.mkdtemp(prefix="cm", dir="/tmp"))
    control = sockets / "cm-%C"
    config.write_text(
        config.read_text()
        + f"  LocalForward 127.0.0.1:{forwarded} 127.0.0.1:{box.port}\n"
        + "  ControlMaster auto\n"
        + f"  ControlPath {control}\n"
        + "  ControlPersist 600\n"
    )
    monkeypatch.setenv(SSH_CONFIG_ENV, str(config))
    source = RemoteSource(parse_endpoint("ssh://box"), interval_s=1.0)
    try:
        _read_until(source)
        (sample,) = source.samples
        assert sample.remote is not None and not sample.remote.fault, sample.remote
        with socket.socket() as mine:  # the user's own forward can still have its port
            mine.bind(("127.0.0.1", forwarded))
        assert list(sockets.glob("cm-*")) == []  # no master of trayvml's
    finally:
        source.close()
        shutil.rmtree(sockets, ignore_errors=True)


def test_why_a_session_ended_is_said_from_ssh_not_a_login_shells_words() -> None:
    """A login shell's own complaints (a profile script, conda missing) were taken for why the
    session ended: "nvidia-smi is not installed" or "login failed" of a host that had answered."""
    from trayvml.remote.ssh import explain

    said = explain("ssh://box", 255, ["bash: conda: command not found", "Connection to box closed by remote host."])
    assert said == "ssh://box: SSH could not connect: Connection to box closed by remote host."
    profile = ["bash: /etc/profile.d/modules.sh: Permission denied", "Timeout, server box not responding."]
    assert explain("ssh://box", 255, profile) == "ssh://box: SSH could not connect: Timeout, server box not responding."
    login = ["user@box: Permission denied (publickey)."]
    assert "SSH login failed (permission denied)" in explain("ssh://box", 255, login)
    assert "nvidia-smi is not installed" in explain("ssh://box", 127, ["nvidia-smi: command not found"])


def test_processes_are_unknown_until_the_first_list_comes() -> None:
    """The GPUs' first reads come before the first process list: they said "0 processes" (OK) of a
    host running jobs, in `snapshot --remote` and in the tray after each reconnect."""
    from trayvml.remote.ssh import smi_samples

    rows = (FIXTURES / "query-gpu.csv").read_text().splitlines()
    before = smi_samples(rows, None, "box", "ssh://box", 0.0).gpus[0]
    assert before.state("process_count") is MetricState.NO_DATA and math.isnan(before.value("process_count"))
    listed = smi_samples(rows, (), "box", "ssh://box", 0.0).gpus[0]  # a list that came, empty
    assert (listed.state("process_count"), listed.value("process_count")) == (MetricState.OK, 0.0)


def test_a_read_cut_by_an_error_line_is_not_published_with_the_next() -> None:
    """nvidia-smi's "GPU is lost" line in place of one GPU's: the other's line stayed in the batch
    and the next read's lines joined it (one H100 shown twice, the RTX gone) once the error was
    cleared."""
    from trayvml.remote.ssh import SshConnection, SshError, _Batch

    connection = SshConnection.__new__(SshConnection)
    connection.url, connection.host = "ssh://box", "box"
    published: list[object] = []
    connection._publish = published.append  # type: ignore[method-assign,assignment]
    rows = (FIXTURES / "query-gpu.csv").read_text().splitlines()
    batch = _Batch(mode="N", apps=())
    connection._line(batch, f"G {rows[0]}")
    with pytest.raises(SshError, match="GPU is lost"):
        connection._line(batch, "G Unable to determine the device handle for GPU 0000:41:00.0: GPU is lost.")
    connection._line(batch, f"G {rows[0]}")
    assert published == []  # one GPU's line of a read of two: not a read
    connection._line(batch, f"G {rows[1]}")
    assert len(published) == 1


def test_a_line_without_end_is_read_a_megabyte_at_a_time() -> None:
    """A host printing without a line break (a broken program, 300 MB) was read whole into memory
    before the line was cut to its limit: now it is cut as it is read, and the session goes on."""
    import tracemalloc

    from trayvml.remote.ssh import MAX_LINE, SshConnection

    script = "echo T; printf 'S '; head -c 40000000 /dev/zero | tr '\\0' x; echo; echo S.; sleep 31.5"
    tracemalloc.start()
    connection = SshConnection("ssh://box", ["sh", "-c", script], "box")
    try:
        end_s = time.monotonic() + 20
        while connection._problem == "" and time.monotonic() < end_s:
            time.sleep(0.05)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        connection.close()
    assert "cannot read" in connection._problem  # the cut line is no document: said
    assert peak < 8 * MAX_LINE  # a few copies of one megabyte, not forty
    # Closed, what it started is ended too: the sleep held the pipes, and closing one under its
    # reader waited for the sleep to end.
    import psutil

    left = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "31.5"]]
    for process in left:
        process.kill()
    assert left == []


def test_ssh_process_is_gone_after_close(box: Box) -> None:
    source = RemoteSource(parse_endpoint("ssh://box"), interval_s=1.0)
    _read_until(source)
    assert source.samples[0].gpus
    assert source._ssh is not None
    process = source._ssh.process
    assert process is not None and process.poll() is None  # one long-lived connection, still running
    source.close()
    assert process.poll() is not None
    assert source._ssh.process is None


def test_the_host_loops_end_with_the_connection_where_sigpipe_is_ignored(box: Box) -> None:
    """A session whose SIGPIPE is ignored (inherited so on some hosts): the host's loops took no
    notice of their writes failing once trayvml's ssh was gone, and ran nvidia-smi for good, a set
    more with each reconnect."""
    session = box.tmp / "session"
    session.write_text(session.read_text().replace("#!/bin/sh\n", "#!/bin/sh\ntrap '' PIPE\n", 1))
    source = RemoteSource(parse_endpoint("ssh://box"), interval_s=1.0)
    _read_until(source)
    assert source.samples[0].gpus
    source.close()
    end_s = time.monotonic() + 15  # a loop finds out at its next write: an interval, or 5 s for the lists
    while _session_processes(box.tmp) and time.monotonic() < end_s:
        time.sleep(0.2)
    assert _session_processes(box.tmp) == []  # (the fixture ends any left, whatever the outcome)


def test_a_host_name_with_a_line_break_is_cleaned_on_every_path() -> None:
    """A line break in a remote host's name made every e-mail of its alerts fail (the subject
    refused): cleaned where trayvml over SSH names it, and where a Prometheus server's instance does."""
    from trayvml.remote.dialects import DCGM, hostname_of
    from trayvml.remote.ssh import snapshot_sample

    sample = snapshot_sample({"system": {"hostname": "gpu\nbox"}, "gpus": []}, "fallback", "ssh://box", 0.0)
    assert sample.system is not None and sample.system.hostname == "gpu\ufffdbox"
    assert hostname_of(DCGM, {"instance": "a\nb:9400"}, "fallback") == "a\ufffdb"
