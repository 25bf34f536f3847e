"""Who a GPU process works for: containers, Slurm jobs, systemd units, tmux sessions, Jupyter
notebooks and process trees, read from fake /proc trees, real child processes and a real Jupyter
server with a real kernel."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers import JupyterServer, closed_port_url, simulated_source
from trayvml.alerts.details import process_words
from trayvml.commands.report import json_snapshot, text_snapshot
from trayvml.core.sample import Attribution, ProcessSample, Sample
from trayvml.host.attribution import Attributor
from trayvml.prometheus.exposition import SampleCollector

HEX = "34048520ee4dcc79b692911aeb87c104e8f3d9b5a99aa269fa1f2b5a3fcfd1fd"
PODMAN = "cf21d19260ace8544fe8b769fc2638bf2c0873dfbfff0b6253f0569b26a1d5eb"
K8S = "ee4b20e90ac7f42a10bd004d05646b13d8ab5e2c5e7cbc01abf8006bac016459"
CRIO = "89e8f450417b56acf3089925dfd8f050dd50e950e18cfe83ea923269df601102"

USER = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/"  # a user's systemd manager

# /proc/PID/cgroup as the runtimes write it (sources in trayvml/host/attribution.py's docstring).
CGROUPS = {
    "docker v1": (
        f"11:devices:/docker/{HEX}\n4:memory:/docker/{HEX}\n1:name=systemd:/docker/{HEX}\n",
        {"runtime": "docker", "container": HEX[:12], "job_kind": "container", "job": f"docker {HEX[:12]}"},
    ),
    "docker v2 systemd driver": (
        f"0::/system.slice/docker-{HEX}.scope\n",
        {"runtime": "docker", "container": HEX[:12], "job_kind": "container"},
    ),
    "podman rootful v1": (
        f"12:pids:/machine.slice/libpod-{PODMAN}.scope\n"
        f"1:name=systemd:/machine.slice/libpod-{PODMAN}.scope/init.scope\n0::/machine.slice/libpod-{PODMAN}.scope\n",
        {"runtime": "podman", "container": PODMAN[:12]},
    ),
    "podman v2 (in a user's manager)": (
        f"0::/user.slice/user-0.slice/user@0.service/machine.slice/libpod-{PODMAN}.scope/container\n",
        {"runtime": "podman", "container": PODMAN[:12], "job_kind": "container"},
    ),
    "kubernetes containerd v1": (
        f"11:perf_event:/kubepods-besteffort-pod0125ec2f_b64a_4868_8f5b_94b56cbab864.slice:cri-containerd:{K8S}\n",
        {"runtime": "containerd", "container": K8S[:12]},
    ),
    "kubernetes containerd v2": (
        "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0125ec2f_b64a_4868_8f5b_94b56cbab864"
        f".slice/cri-containerd-{K8S}.scope\n",
        {"runtime": "containerd", "container": K8S[:12]},
    ),
    "kubernetes cri-o": (
        f"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod2ca4a155_3599.slice/crio-{CRIO}.scope\n",
        {"runtime": "cri-o", "container": CRIO[:12]},
    ),
    "lxc v2": (
        "0::/lxc.payload.focal/system.slice/avahi-daemon.service\n",
        {"runtime": "lxc", "container": "focal", "job_kind": "container", "unit": "avahi-daemon.service"},
    ),
    "slurm v1": (
        "4:memory:/slurm/uid_1000/job_3385/step_0/task_0\n1:name=systemd:/system.slice/slurmd.service\n",
        {"slurm_job": "3385", "job_kind": "slurm", "job": "3385", "container": ""},
    ),
    "slurm v2": (
        "0::/system.slice/slurmstepd.scope/job_3385/step_0/user/task_0\n",
        {"slurm_job": "3385", "job_kind": "slurm", "unit": ""},
    ),
    "systemd system service": (
        "0::/system.slice/llm-server.service\n",
        {"unit": "llm-server.service", "job_kind": "unit", "job": "llm-server.service"},
    ),
    # A desktop's transient scopes and app units (systemd.io/DESKTOP_ENVIRONMENTS) are not the job:
    # the process tree beneath them is (or its tmux session: test_a_terminals_scope_does_not_hide_…).
    "a GNOME Terminal tab's scope": (
        f"{USER}app-org.gnome.Terminal.slice/vte-spawn-4b4cb3d5-bc04-4d6e-a2b8-95f5e9c8c1b3.scope\n",
        {"unit": "", "job_kind": "process"},
    ),
    "an app GNOME Shell launched": (f"{USER}app-gnome-code-31877.scope\n", {"unit": "", "job_kind": "process"}),
    "a Konsole window": (
        f"{USER}app-org.kde.konsole-6f1c0b2d4a8b4e4b9d2f0b5c1e3f7a90.scope\n",
        {"unit": "", "job_kind": "process"},
    ),
    "an app KDE launched as a service": (f"{USER}app-org.kde.konsole@0d9a2c1e.service\n", {"unit": ""}),
    "a tmux server's scope": (f"{USER}tmux-spawn-0b7c9e1a-5d3f-4a8e-9c2b-6e1f0d4a7b53.scope\n", {"unit": ""}),
    "a snap's launch": (f"{USER}snap.code.code-1b6f4f9e-3a2c-4e57-8a3d-7c0f5b2e9d11.scope\n", {"unit": ""}),
    "a D-Bus activated service": (f"{USER}dbus-:1.2-org.freedesktop.portal.IBus@0.service\n", {"unit": ""}),
    "gnome-terminal before VTE scopes": (f"{USER}gnome-terminal-server.service\n", {"unit": ""}),
    "a user's own service": (
        f"{USER}jupyter-lab.service\n",
        {"unit": "jupyter-lab.service", "job_kind": "unit", "job": "jupyter-lab.service"},
    ),
    "a named systemd-run unit": (f"{USER}finetune.service\n", {"unit": "finetune.service", "job_kind": "unit"}),
    "a snap's daemon": ("0::/system.slice/snap.ollama.listener.service\n", {"unit": "snap.ollama.listener.service"}),
    "a login session tells nothing": ("0::/user.slice/user-1000.slice/session-3.scope\n", {"unit": ""}),
}


class FakeProc:
    """A /proc tree in a folder: stat, status, cmdline, environ and cgroup per PID."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def add(
        self,
        pid: int,
        ppid: int = 1,
        comm: str = "python",
        session: int = 0,
        start: int = 1000,
        cgroup: str = "0::/\n",
        environ: dict[str, str] | None = None,
        cmdline: tuple[str, ...] = ("python",),
        uid: int | None = None,
    ) -> None:
        folder = self.root / str(pid)
        folder.mkdir(parents=True, exist_ok=True)
        fields = ["S", str(ppid), str(pid), str(session), *["0"] * 15, str(start), "0", "0"]
        (folder / "stat").write_text(f"{pid} ({comm}) {' '.join(fields)}\n")
        mine = os.getuid() if uid is None else uid
        (folder / "status").write_text(f"Name:\t{comm}\nUid:\t{mine}\t{mine}\t{mine}\t{mine}\n")
        (folder / "cmdline").write_text("\0".join(cmdline) + "\0")
        (folder / "environ").write_text("".join(f"{k}={v}\0" for k, v in (environ or {}).items()))
        (folder / "cgroup").write_text(cgroup)


@pytest.mark.parametrize("name", list(CGROUPS))
def test_the_cgroup_path_names_the_container_slurm_job_or_unit(name: str, tmp_path: Path) -> None:
    text, expected = CGROUPS[name]
    proc = FakeProc(tmp_path)
    proc.add(4200, cgroup=text)
    found = Attributor(tmp_path).attribute(4200)
    assert {key: getattr(found, key) for key in expected} == expected


def test_the_slurm_job_comes_from_the_environment_where_the_cgroup_does_not_say(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path)
    proc.add(10, environ={"SLURM_JOB_ID": "77123", "HOME": "/home/a"})
    proc.add(11, environ={"SLURM_JOB_ID": "$(rm -rf /)"})  # not a job id: not shown
    attributor = Attributor(tmp_path)
    assert (attributor.attribute(10).slurm_job, attributor.attribute(10).job_kind) == ("77123", "slurm")
    assert attributor.attribute(11).slurm_job == ""


def test_a_slurm_jobs_name_comes_from_its_own_environment(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path)
    slurm_v2 = CGROUPS["slurm v2"][0]
    proc.add(10, cgroup=slurm_v2, environ={"SLURM_JOB_ID": "3385", "SLURM_JOB_NAME": "train_llm"})
    proc.add(11, cgroup=slurm_v2, environ={"SLURM_JOB_ID": "9999", "SLURM_JOB_NAME": "another"})  # not its job's
    attributor = Attributor(tmp_path)
    assert (attributor.attribute(10).slurm_job, attributor.attribute(10).slurm_job_name) == ("3385", "train_llm")
    assert (attributor.attribute(11).slurm_job, attributor.attribute(11).slurm_job_name) == ("3385", "")


def test_a_process_under_tmux_names_the_session_and_its_tree_root(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path)
    proc.add(500, ppid=1, comm="tmux: server", session=500)
    proc.add(600, ppid=500, comm="bash", session=600)
    proc.add(700, ppid=600, comm="torchrun", session=600)
    proc.add(800, ppid=700, comm="python", session=600, environ={"TMUX": "/tmp/tmux-1000/default,500,0"})
    found = Attributor(tmp_path).attribute(800)
    assert (found.session, found.job_kind, found.job) == ("tmux default", "session", "tmux default")
    assert found.root_pid == 700  # below the shell that leads the pane's session


def test_a_terminals_scope_does_not_hide_the_tmux_session(tmp_path: Path) -> None:
    """A GNOME Terminal tab (its own vte-spawn scope) running tmux: the job is the tmux session."""
    proc = FakeProc(tmp_path)
    tab = f"{USER}app-org.gnome.Terminal.slice/vte-spawn-4b4cb3d5-bc04-4d6e-a2b8-95f5e9c8c1b3.scope\n"
    proc.add(500, ppid=1, comm="tmux: server", session=500, cgroup=tab)
    proc.add(600, ppid=500, comm="bash", session=600, cgroup=tab)
    proc.add(700, ppid=600, comm="python", session=600, cgroup=tab, environ={"TMUX": "/tmp/tmux-1000/train,500,0"})
    found = Attributor(tmp_path).attribute(700)
    assert (found.unit, found.job_kind, found.job) == ("", "session", "tmux train")


def test_without_anything_else_the_job_is_the_process_trees_root(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path)
    proc.add(100, ppid=1, comm="sshd", session=100)
    proc.add(200, ppid=100, comm="bash", session=200)
    proc.add(300, ppid=200, comm="torchrun", session=200)
    proc.add(301, ppid=300, comm="python", session=200)
    found = Attributor(tmp_path).attribute(301)
    assert (found.job_kind, found.job, found.root_pid) == ("process", "torchrun 300", 300)


def test_attribution_is_read_once_per_pid_and_start_time(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path)
    proc.add(900, cgroup=f"0::/docker/{HEX}\n", start=1000)
    attributor = Attributor(tmp_path)
    assert attributor.attribute(900).runtime == "docker"
    (tmp_path / "900" / "cgroup").write_text(f"0::/machine.slice/libpod-{PODMAN}.scope\n")
    assert attributor.attribute(900).runtime == "docker"  # the same process: cached
    proc.add(900, cgroup=f"0::/machine.slice/libpod-{PODMAN}.scope\n", start=2000)  # the PID reused
    assert attributor.attribute(900).runtime == "podman"


def test_a_gone_process_has_no_attribution(tmp_path: Path) -> None:
    found = Attributor(tmp_path).attribute(12345)
    assert (found.job, found.job_kind, found.container) == ("", "", "")


def test_real_children_are_attributed_to_their_tree_root() -> None:
    """A child in a session of its own, its child, and a grandchild: read from the real /proc."""
    script = (
        "import subprocess, sys, time\n"
        "inner = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "print(inner.pid, flush=True)\n"
        "time.sleep(30)\n"
    )
    leader = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {script!r}])"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the leader of its session, as a login shell is
    )
    try:
        assert leader.stdout is not None
        grandchild = int(leader.stdout.readline())
        middle = int(Path(f"/proc/{grandchild}/stat").read_text().rpartition(")")[2].split()[1])
        found = Attributor(Path("/proc")).attribute(grandchild)
        assert found.root_pid == middle  # the top of the tree below the session leader
        assert found.root_pid != leader.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, signal.SIGKILL)  # the group this test started: all three
        leader.wait(5)
        assert leader.stdout is not None
        leader.stdout.close()


def _kernel_proc(proc: FakeProc, runtime: Path, kernel_id: str, uid: int | None = None) -> None:
    connection = runtime / f"kernel-{kernel_id}.json"
    proc.add(4321, cmdline=("python", "-m", "ipykernel_launcher", "-f", str(connection)), uid=uid)


def _server_file(runtime: Path, url: str, pid: int) -> None:
    runtime.mkdir(parents=True, exist_ok=True)
    (runtime / f"jpserver-{pid}.json").write_text(json.dumps({"url": url, "token": "t0k", "pid": pid}))


def test_a_jupyter_server_that_does_not_answer_names_no_notebook(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path / "proc")
    runtime = tmp_path / "runtime"
    proc.add(55, comm="jupyter-server")
    _server_file(runtime, closed_port_url() + "/", 55)
    _kernel_proc(proc, runtime, "abc-1")
    found = Attributor(tmp_path / "proc", wait_s=0.2).attribute(4321)
    # No notebook named: the job is the kernel itself (its id's start), not its process tree.
    assert (found.notebook, found.job_kind, found.job, found.kernel_id) == ("", "kernel", "abc-1", "abc-1")


def test_a_jupyter_answer_that_drips_is_given_up_on_within_the_wait() -> None:
    """The wait was each read's: a server sending its answer a byte at a time held the sampler's
    thread for as long as it liked (every GPU's values waiting behind it)."""
    from trayvml.host.attribution import _fetch

    closing = threading.Event()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def serve() -> None:
            connection, _ = listener.accept()
            with connection, contextlib.suppress(OSError):
                connection.recv(65536)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
                while not closing.wait(0.05):
                    connection.sendall(b" ")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            with pytest.raises(TimeoutError):
                _fetch(f"http://127.0.0.1:{listener.getsockname()[1]}/api/sessions", "t0k", 0.5)
        finally:
            closing.set()
            thread.join(5)


def test_another_users_kernel_is_not_looked_up_on_our_servers(tmp_path: Path) -> None:
    asked: list[str] = []

    def fetch(url: str, token: str, wait_s: float) -> bytes:
        asked.append(url)
        return json.dumps([{"path": "x.ipynb", "kernel": {"id": "abc-1"}}]).encode()

    proc = FakeProc(tmp_path / "proc")
    runtime = tmp_path / "runtime"
    proc.add(55, comm="jupyter-server")
    _server_file(runtime, "http://127.0.0.1:1/", 55)
    _kernel_proc(proc, runtime, "abc-1", uid=os.getuid() + 1)
    assert Attributor(tmp_path / "proc", fetch=fetch).attribute(4321).notebook == ""
    assert asked == []
    _kernel_proc(proc, runtime, "abc-1")  # now ours (same PID, same start: a new attributor)
    assert Attributor(tmp_path / "proc", fetch=fetch).attribute(4321).notebook == "x.ipynb"
    assert asked == ["http://127.0.0.1:1/api/sessions"]


def test_a_stale_server_file_is_not_asked(tmp_path: Path) -> None:
    asked: list[str] = []

    def fetch(url: str, token: str, wait_s: float) -> bytes:
        asked.append(url)
        return b"[]"

    proc = FakeProc(tmp_path / "proc")
    runtime = tmp_path / "runtime"
    _server_file(runtime, "http://127.0.0.1:1/", 56)  # its server (PID 56) has ended
    _kernel_proc(proc, runtime, "abc-1")
    assert Attributor(tmp_path / "proc", fetch=fetch).attribute(4321).notebook == ""
    assert asked == []


def test_a_real_jupyter_kernel_is_attributed_to_its_notebook(tmp_path: Path) -> None:
    pytest.importorskip("jupyter_server", reason="jupyter_server is in the test extra: pip install -e .[test]")
    pytest.importorskip("ipykernel", reason="ipykernel is in the test extra: pip install -e .[test]")
    with JupyterServer(tmp_path) as jupyter:
        _, kernel_pid = jupyter.open_notebook("exp/train.ipynb")
        # No extra runtime folders: the kernel's connection file says where its server's file is.
        found = Attributor(Path("/proc"), wait_s=5.0).attribute(kernel_pid)
        assert (found.notebook, found.job_kind, found.job) == ("exp/train.ipynb", "notebook", "exp/train.ipynb")


def test_a_real_kernel_listed_by_the_driver_reaches_the_sample_with_its_notebook(tmp_path: Path) -> None:
    # The whole path a GPU process takes: NVML lists the PID (here the simulated library, told of
    # a real kernel by hostpid=), the host resolves it, the attributor finds its notebook through
    # the real Jupyter server, and the sample carries it.
    pytest.importorskip("jupyter_server", reason="jupyter_server is in the test extra: pip install -e .[test]")
    pytest.importorskip("ipykernel", reason="ipykernel is in the test extra: pip install -e .[test]")
    with JupyterServer(tmp_path) as jupyter:
        _, kernel_pid = jupyter.open_notebook("exp/train.ipynb")
        source, clock, _ = simulated_source(f"idle:gpus=h100*2,hostpid=1:{kernel_pid}")
        found = None
        for _ in range(50):  # the notebook is asked of the server on the sampler's thread, bounded
            gpu = source.sample().gpus[1]
            found = next((p for p in gpu.processes if p.pid == kernel_pid), None)
            if found is not None and found.attribution.notebook:
                break
            clock.advance_s(1.0)
        assert found is not None and found.used_memory_bytes == 2 * 2**30
        assert found.name.startswith("python") and found.user  # the host's, not made up
        assert (found.attribution.notebook, found.attribution.job_kind) == ("exp/train.ipynb", "notebook")
        assert not any(p.pid == kernel_pid for p in source.sample().gpus[0].processes)


# ---- where it shows: snapshot, serve, notifications ----
NOTEBOOK = Attribution(
    notebook="exp/train.ipynb", kernel_id="1a2b3c4d-0000", job="exp/train.ipynb", job_kind="notebook", root_pid=1
)
CONTAINER = Attribution(container=HEX[:12], runtime="docker", job=f"docker {HEX[:12]}", job_kind="container")


def _attributed_sample() -> Sample:
    """A simulated GPU's processes: the first in a notebook, the second in a container, then one
    of another user and one from another PID namespace."""
    source, _, _ = simulated_source("processes:gpus=rtx4090,start=1800")
    sample = source.sample()
    gpu = sample.gpus[0]
    first, second = gpu.processes[:2]
    processes = (
        replace(first, attribution=NOTEBOOK),
        replace(second, attribution=CONTAINER),
        ProcessSample(0, 999001, "compute", 1e9, no_permission=True),
        ProcessSample(0, 999002, "compute", 1e9, no_permission=True),
        ProcessSample(0, 999003, "compute", 1e9, foreign_pid=True),
    )
    return replace(sample, gpus=(replace(gpu, processes=processes), *sample.gpus[1:]))


def test_snapshot_text_and_json_carry_the_job_and_count_hidden_processes() -> None:
    sample = _attributed_sample()
    text = text_snapshot(sample)
    assert "[notebook exp/train.ipynb]" in text and f"[container docker {HEX[:12]}]" in text
    assert "2 processes of other users; 1 process in another PID namespace" in text
    gpu = json_snapshot(sample)["gpus"][0]
    assert gpu["hidden_processes"] == {"other_users": 2, "other_pid_namespace": 1}
    first = gpu["processes"][0]["attribution"]
    assert (first["kind"], first["job"], first["notebook"]) == ("notebook", "exp/train.ipynb", "exp/train.ipynb")
    assert first["kernel_id"] == "1a2b3c4d-0000"  # what stays while its notebook is renamed
    assert gpu["processes"][1]["attribution"]["kernel_id"] == ""
    started = gpu["processes"][0]["started_s"]  # with the PID, what tells it from a later process given it
    assert started == sample.gpus[0].processes[0].started_s and started > 1e9
    assert gpu["processes"][1]["attribution"]["container"] == HEX[:12]
    assert gpu["processes"][2]["attribution"]["job"] == ""  # hidden: no job guessed


def test_serve_exposes_the_job_as_an_info_series_not_as_a_label_of_the_frequent_ones() -> None:
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    sample = _attributed_sample()
    gpu = sample.gpus[0]
    slurm = Attribution(slurm_job="3385", slurm_job_name="train_llm", job="3385", job_kind="slurm")
    nameless = replace(slurm, slurm_job="3386", slurm_job_name="", job="3386")
    extra = (
        replace(gpu.processes[0], pid=777001, attribution=slurm),
        replace(gpu.processes[0], pid=777002, attribution=nameless),
    )
    sample = replace(sample, gpus=(replace(gpu, processes=gpu.processes + extra), *sample.gpus[1:]))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SampleCollector(lambda: sample, hostname="here"))
    families = list(text_string_to_metric_families(generate_latest(registry).decode()))
    jobs = {
        s.labels["pid"]: (s.labels["job"], s.labels["kind"], s.labels.get("job_name"))
        for f in families
        for s in f.samples
        if s.name == "trayvml_process_job_info"
    }
    pids = [str(p.pid) for p in sample.gpus[0].processes[:2]]
    assert jobs == {
        pids[0]: ("exp/train.ipynb", "notebook", None),
        pids[1]: (f"docker {HEX[:12]}", "container", None),
        "777001": ("3385", "slurm", "train_llm"),  # a Slurm job's name, where known
        "777002": ("3386", "slurm", None),
    }
    for family in families:
        if not family.name.startswith("trayvml_process_job"):
            assert all("job" not in s.labels and "job_name" not in s.labels for s in family.samples), family.name


def test_notifications_name_the_notebook_or_container() -> None:
    processes = _attributed_sample().gpus[0].processes
    assert process_words(processes[0]).startswith("notebook exp/train.ipynb: ")
    assert process_words(processes[1]).startswith(f"container {HEX[:12]}: ")
    slurm = Attribution(slurm_job="3385", slurm_job_name="train_llm", job="3385", job_kind="slurm")
    unit = Attribution(unit="llm-server.service", job="llm-server.service", job_kind="unit")
    assert process_words(replace(processes[0], attribution=slurm)).startswith("Slurm job 3385 (train_llm): ")
    assert process_words(replace(processes[0], attribution=unit)).startswith("systemd unit llm-server.service: ")


@pytest.mark.parametrize(
    ("cgroup", "environ", "named"),
    [
        ("slurm v2", {"SLURM_JOB_ID": "3385", "SLURM_JOB_NAME": "train_llm"}, "Slurm job 3385 (train_llm)"),
        ("slurm v1", {}, "Slurm job 3385"),
        ("systemd system service", {}, "systemd unit llm-server.service"),
    ],
)
def test_a_finished_job_is_named_with_its_gpu_duration_and_energy(
    cgroup: str, environ: dict[str, str], named: str, tmp_path: Path
) -> None:
    """The job-finished notice's first line names the Slurm job or unit the busy processes ran in
    (their attribution read from a /proc tree as Slurm and systemd write it)."""
    from tests.test_monitor import ALL_OFF, WITH_PROCESSES, _ready_dispatcher
    from trayvml.alerts.engine import AlertSettings
    from trayvml.alerts.rules import JobSettings
    from trayvml.history.timeline import History
    from trayvml.monitor.pipeline import Monitor

    proc = FakeProc(tmp_path)
    proc.add(4200, cgroup=CGROUPS[cgroup][0], environ=environ)
    job = Attributor(tmp_path).attribute(4200)
    job_only = AlertSettings(rules={**ALL_OFF, "job_finished": JobSettings(True, 50.0, 60.0, 5.0, 30.0)})
    source, clock, _ = simulated_source("training:gpus=h100,start=6300")  # the job ends at 6600 s
    monitor = Monitor(_ready_dispatcher(), job_only, History, processes_on_demand=True)
    notices = []
    for _ in range(80):
        sample = source.sample(WITH_PROCESSES)
        gpus = tuple(
            replace(gpu, processes=tuple(replace(p, attribution=job) for p in gpu.processes)) for gpu in sample.gpus
        )
        notices += monitor.take(replace(sample, gpus=gpus)).notices
        clock.advance_s(5.0)
    (notice,) = notices
    first = next(line for line in notice.body.splitlines() if " finished on GPU " in line)
    assert first.startswith(f"{named} finished on GPU 0 after ") and first.endswith(" Wh."), first


def test_a_sample_is_stamped_when_its_gpus_were_read_not_after_the_names_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The names asked of other programs (a Jupyter server, a container runtime) come after the
    GPUs are read, on the sampler's thread: a slow answer stamped values read seconds before as
    read after it."""
    import trayvml.source
    from tests.helpers import simulated_source

    source, clock, _ = simulated_source("training")
    read_at_s = clock.now_s()

    def slow_names(gpus: tuple) -> tuple:
        clock.advance_s(3.0)  # a server taking its time
        return gpus

    monkeypatch.setattr(trayvml.source, "_named", slow_names)
    sample = source.sample()
    assert sample.gpus and sample.timestamp_s == read_at_s
