"""Container names asked of the runtime: a unix-socket server of the test's own that answers as
the Docker Engine API does (GET /containers/{id}/json: 200 with the container's JSON, whose "Name"
carries a leading slash, or 404 with {"message": "No such container: …"}), in a temp folder.
Never the machine's own sockets: every ask goes through ``_only_under``."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import AcceptLoop
from tests.test_attribution import HEX, PODMAN, FakeProc
from trayvml.host.attribution import NOTEBOOK_RECHECK_S, NOTEBOOK_RETRY_FIRST_S, Attributor
from trayvml.host.containers import RETRY_FIRST_S, AskFailedError, ContainerNames, ask_name, sockets

# Trimmed from the Engine API's ContainerInspectResponse (docs.docker.com/reference/api/engine):
# the fields around the one read.
INSPECT = {
    "Id": HEX,
    "Created": "2025-02-17T17:43:39.64001363Z",
    "Path": "python",
    "Args": ["train.py"],
    "State": {"Status": "running", "Running": True, "Pid": 4200},
    "Image": "sha256:72297848456d5d37d1262630108ab308d3e9ec7ed1c3286a32fe09856619a782",
    "Name": "/train-llm",
    "RestartCount": 0,
    "Driver": "overlayfs",
    "Config": {"Hostname": "34048520ee4d", "Image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"},
}


class FakeEngine:
    """A unix-socket HTTP server in a folder of its own. ``mode``: "api" (Docker's answers),
    "hang" (accepts, never answers), "drip" (a byte at a time, never ending), "garbage" (not
    HTTP), "not json" (200 with HTML), "no name" (200 with JSON lacking Name)."""

    def __init__(self, path: Path, mode: str = "api", containers: dict[str, str] | None = None) -> None:
        self.path = path
        self.mode = mode
        self.containers = {HEX: "/train-llm"} if containers is None else containers
        self.requests: list[str] = []
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        server.listen(8)
        self._loop = AcceptLoop(server, lambda connection, number: self._answer(connection))

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(2.0)
            request = b""
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in request:
                    part = connection.recv(4096)
                    if not part:
                        return
                    request += part
            line = request.split(b"\r\n", 1)[0].decode()
            self.requests.append(line)
            if self.mode in ("hang", "drip"):
                while not self._loop.stopping.wait(0.05):
                    if self.mode == "drip":
                        with contextlib.suppress(OSError):
                            connection.sendall(b"H")
                return
            connection.sendall(self._reply(line))

    def _reply(self, line: str) -> bytes:
        if self.mode == "garbage":
            return b"\x00\xffnot an answer\r\n\r\n{}"
        if self.mode == "not json":
            return _http(200, b"<html>hello</html>", "text/html")
        if self.mode == "no name":
            return _http(200, json.dumps({"Id": HEX}).encode())
        path = line.split(" ")[1] if " " in line else ""
        for container_id, name in self.containers.items():
            if path == f"/containers/{container_id[:12]}/json":
                return _http(200, json.dumps(INSPECT | {"Id": container_id, "Name": name}).encode())
        ident = path.removeprefix("/containers/").removesuffix("/json")
        return _http(404, json.dumps({"message": f"No such container: {ident}"}).encode())

    def close(self) -> None:
        self._loop.stop(2)


def _http(status: int, body: bytes, kind: str = "application/json") -> bytes:
    reason = {200: "OK", 404: "Not Found"}[status]
    head = f"HTTP/1.1 {status} {reason}\r\nApi-Version: 1.47\r\nContent-Type: {kind}\r\n"
    return head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


@pytest.fixture
def folder() -> Iterator[Path]:
    """A short temp folder: a unix socket's path must fit in 108 bytes."""
    made = Path(tempfile.mkdtemp(prefix="tv-"))
    yield made
    os.chmod(made, 0o700)
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def engines() -> Iterator[list[FakeEngine]]:
    started: list[FakeEngine] = []
    yield started
    for engine in started:
        engine.close()


def _only_under(folder: Path, asked: list[Path]):
    """ask_name, refusing any socket outside the test's folder (so no test reaches the machine's)."""

    def ask(path: Path, container_id: str, wait_s: float) -> str | None:
        assert path.is_relative_to(folder), path
        asked.append(path)
        return ask_name(path, container_id, wait_s)

    return ask


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _names(folder: Path, environ: dict[str, str], asked: list[Path], clock: Clock, wait_s: float = 0.2):
    return ContainerNames(environ, _only_under(folder, asked), clock, wait_s)


def test_the_sockets_are_those_the_runtimes_clients_use() -> None:
    assert sockets("docker", {}) == (Path("/var/run/docker.sock"),)
    assert sockets("docker", {"DOCKER_HOST": "unix:///home/a/.docker/run/docker.sock"}) == (
        Path("/home/a/.docker/run/docker.sock"),
    )
    assert sockets("docker", {"DOCKER_HOST": "tcp://10.0.0.2:2376"}) == ()  # not over the network
    assert sockets("podman", {"XDG_RUNTIME_DIR": "/run/user/1000"}) == (
        Path("/run/user/1000/podman/podman.sock"),
        Path("/run/podman/podman.sock"),
    )
    assert sockets("podman", {"CONTAINER_HOST": "unix:///tmp/p.sock", "XDG_RUNTIME_DIR": "/run/user/1000"}) == (
        Path("/tmp/p.sock"),
    )
    assert sockets("containerd", {}) == sockets("lxc", {}) == ()  # gRPC, or the name is the id already


def test_a_docker_containers_name_comes_from_the_engine_api(folder: Path, engines: list[FakeEngine]) -> None:
    engines.append(FakeEngine(folder / "docker.sock"))
    proc = FakeProc(folder / "proc")
    proc.add(4200, cgroup=f"0::/system.slice/docker-{HEX}.scope\n")
    asked: list[Path] = []
    names = _names(folder, {"DOCKER_HOST": f"unix://{folder}/docker.sock"}, asked, Clock())
    attributor = Attributor(folder / "proc", names=names)
    assert attributor.attribute(4200, ask=False).pending  # the NVML thread leaves the name to the sampler's
    found = attributor.attribute(4200)
    assert (found.container, found.container_name, found.job, found.pending) == (
        HEX[:12],
        "train-llm",
        "docker train-llm",
        False,
    )
    assert engines[0].requests == [f"GET /containers/{HEX[:12]}/json HTTP/1.0"]
    attributor.attribute(4200)
    assert len(asked) == 1  # asked once per container


def test_a_podman_containers_name_comes_from_the_rootless_socket(folder: Path, engines: list[FakeEngine]) -> None:
    (folder / "podman").mkdir()
    engines.append(FakeEngine(folder / "podman" / "podman.sock", containers={PODMAN: "/notebook-gpu"}))
    asked: list[Path] = []
    names = _names(folder, {"XDG_RUNTIME_DIR": str(folder)}, asked, Clock())
    assert names.name("podman", PODMAN[:12]) == ("notebook-gpu", False)
    assert asked == [folder / "podman" / "podman.sock"]  # the first found answered: no other asked


def test_no_socket_no_name_and_asked_again_only_after_a_back_off(folder: Path) -> None:
    asked: list[Path] = []
    clock = Clock()
    names = _names(folder, {"DOCKER_HOST": f"unix://{folder}/docker.sock"}, asked, clock)
    assert names.name("docker", HEX[:12]) == ("", True)
    assert names.name("docker", "0123456789ab") == ("", True)  # the socket failed: not asked per container
    assert len(asked) == 1
    clock.now += RETRY_FIRST_S
    names.name("docker", HEX[:12])
    assert len(asked) == 2
    clock.now += RETRY_FIRST_S  # failed twice: the back-off has doubled
    names.name("docker", HEX[:12])
    assert len(asked) == 2
    clock.now += RETRY_FIRST_S
    names.name("docker", HEX[:12])
    assert len(asked) == 3


def test_a_socket_this_user_may_not_open_is_not_asked(folder: Path, engines: list[FakeEngine]) -> None:
    engines.append(FakeEngine(folder / "docker.sock"))
    os.chmod(folder / "docker.sock", 0)  # as /var/run/docker.sock is to a user outside the docker group
    with pytest.raises(AskFailedError, match="no socket this user may open"):
        ask_name(folder / "docker.sock", HEX[:12], 0.2)
    names = _names(folder, {"DOCKER_HOST": f"unix://{folder}/docker.sock"}, [], Clock())
    assert names.name("docker", HEX[:12]) == ("", True)
    assert engines[0].requests == []  # not even connected: no privilege used (even as root)
    os.chmod(folder / "docker.sock", 0o660)
    assert ask_name(folder / "docker.sock", HEX[:12], 0.5) == "train-llm"


@pytest.mark.parametrize("mode", ["hang", "drip"])
def test_a_runtime_that_does_not_answer_costs_one_bounded_wait(
    mode: str, folder: Path, engines: list[FakeEngine]
) -> None:
    engines.append(FakeEngine(folder / "docker.sock", mode))
    asked: list[Path] = []
    clock = Clock()
    names = _names(folder, {"DOCKER_HOST": f"unix://{folder}/docker.sock"}, asked, clock, wait_s=0.2)
    began = time.monotonic()
    assert names.name("docker", HEX[:12]) == ("", True)
    assert time.monotonic() - began < 3.0  # the whole answer is bounded, not each read (a drip never ends)
    assert names.name("docker", "0123456789ab") == ("", True)
    assert len(asked) == 1  # a hung runtime is not asked again on every tick, nor per container


@pytest.mark.parametrize("mode", ["garbage", "not json", "no name"])
def test_an_answer_that_is_not_the_engine_api_names_nothing(mode: str, folder: Path, engines: list[FakeEngine]) -> None:
    engines.append(FakeEngine(folder / "docker.sock", mode))
    with pytest.raises(AskFailedError):
        ask_name(folder / "docker.sock", HEX[:12], 0.5)
    names = _names(folder, {"DOCKER_HOST": f"unix://{folder}/docker.sock"}, [], Clock())
    assert names.name("docker", HEX[:12]) == ("", True)


def test_a_container_the_runtime_does_not_know_is_retried_alone(folder: Path, engines: list[FakeEngine]) -> None:
    engines.append(FakeEngine(folder / "docker.sock"))
    asked: list[Path] = []
    clock = Clock()
    names = _names(folder, {"DOCKER_HOST": f"unix://{folder}/docker.sock"}, asked, clock)
    assert names.name("docker", "0123456789ab") == ("", True)  # 404: not this runtime's (yet)
    assert names.name("docker", "0123456789ab") == ("", True)
    assert len(asked) == 1
    assert names.name("docker", HEX[:12]) == ("train-llm", False)  # the socket itself is fine


def test_a_name_found_later_reaches_the_process(folder: Path, engines: list[FakeEngine]) -> None:
    """The runtime was down at first: the process is marked pending, and refresh names it once
    the back-off has passed and the runtime answers."""
    proc = FakeProc(folder / "proc")
    proc.add(4200, cgroup=f"0::/docker/{HEX}\n")
    clock = Clock()
    names = _names(folder, {"DOCKER_HOST": f"unix://{folder}/docker.sock"}, [], clock)
    attributor = Attributor(folder / "proc", names=names, now_s=clock)
    first = attributor.attribute(4200)
    assert (first.job, first.pending) == (f"docker {HEX[:12]}", True)  # the id, until a name is told
    engines.append(FakeEngine(folder / "docker.sock"))
    assert attributor.refresh(4200, first).pending  # not asked again before the back-off
    clock.now += RETRY_FIRST_S
    named = attributor.refresh(4200, first)
    assert (named.job, named.pending) == ("docker train-llm", False)
    assert attributor.refresh(4200, named) is named  # nothing pending: nothing asked


def _jupyter(folder: Path, kernels: tuple[str, ...], first_pid: int = 4321) -> None:
    """A fake /proc under ``folder`` with a Jupyter server (PID 55, its jpserver file in the runtime
    folder) and a kernel process per id from ``first_pid`` on."""
    proc = FakeProc(folder / "proc")
    runtime = folder / "runtime"
    runtime.mkdir()
    proc.add(55, comm="jupyter-server")
    (runtime / "jpserver-55.json").write_text(json.dumps({"url": "http://127.0.0.1:1/", "token": "t", "pid": 55}))
    for k, kernel in enumerate(kernels):
        connection = str(runtime / f"kernel-{kernel}.json")
        proc.add(first_pid + k, cmdline=("python", "-m", "ipykernel_launcher", "-f", connection))


def test_a_notebook_lookup_that_failed_is_tried_again_after_a_back_off(folder: Path) -> None:
    answers: list[bytes | None] = [None, None, b'[{"path": "exp/train.ipynb", "kernel": {"id": "abc-1"}}]']
    asked: list[str] = []

    def fetch(url: str, token: str, wait_s: float) -> bytes:
        asked.append(url)
        answer = answers.pop(0)
        if answer is None:
            raise TimeoutError("timed out")  # a server busy for a moment
        return answer

    _jupyter(folder, kernels=("abc-1",))
    clock = Clock()
    attributor = Attributor(folder / "proc", fetch=fetch, now_s=clock)
    found = attributor.attribute(4321)
    assert (found.notebook, found.pending) == ("", True)
    assert attributor.attribute(4321).pending and len(asked) == 1  # not before the back-off
    clock.now += NOTEBOOK_RETRY_FIRST_S
    assert attributor.attribute(4321).notebook == "" and len(asked) == 2
    clock.now += NOTEBOOK_RETRY_FIRST_S  # failed twice: twice as long now
    attributor.attribute(4321)
    assert len(asked) == 2
    clock.now += NOTEBOOK_RETRY_FIRST_S
    found = attributor.refresh(4321, found)
    assert (found.notebook, found.job, found.pending) == ("exp/train.ipynb", "exp/train.ipynb", True)
    attributor.attribute(4321)
    assert len(asked) == 3  # found: not asked again before NOTEBOOK_RECHECK_S (it may be renamed)


def test_a_notebook_renamed_while_its_kernel_runs_is_named_anew(folder: Path) -> None:
    """A notebook starts as "Untitled.ipynb" and is renamed while its kernel runs: the first name
    found was kept for good (the table, the job, its energy and the history)."""
    path = ["Untitled.ipynb"]
    _jupyter(folder, kernels=("abc-1",))

    def fetch(url: str, token: str, wait_s: float) -> bytes:
        return json.dumps([{"path": path[0], "kernel": {"id": "abc-1"}}]).encode()

    clock = Clock()
    attributor = Attributor(folder / "proc", fetch=fetch, now_s=clock)
    found = attributor.attribute(4321)
    assert (found.notebook, found.pending) == ("Untitled.ipynb", True)
    path[0] = "llm/finetune.ipynb"
    clock.now += NOTEBOOK_RECHECK_S
    renamed = attributor.refresh(4321, found)
    assert renamed.job == "llm/finetune.ipynb"
    # Its energy is one job's across the rename (the name was the job's key: it started again at 0).
    from tests.test_energy import gpu_sample
    from trayvml.core.sample import ProcessSample
    from trayvml.monitor.energy import EnergyMeter
    from trayvml.monitor.users import UserUsage

    assert found.kernel_id == renamed.kernel_id == "abc-1"
    assert attributor.attribute(4321, ask=False).kernel_id == "abc-1"  # known from procfs, not asked
    meter, users = EnergyMeter(), UserUsage()
    for k in range(3601):  # an hour at 100 W, renamed half-way: 100 Wh and an hour, all the kernel's
        attribution = found if k < 1800 else renamed
        process = ProcessSample(0, 4321, "compute", 1e9, sm_util_percent=100.0, started_s=5.0, attribution=attribution)
        sample = gpu_sample(k, power_w=100, processes=(process,))
        meter.update(sample)
        users.update(sample)
    assert meter.job_energy_wh(process) == pytest.approx(100.0)
    assert users.job_gpu_seconds(process)[0] == pytest.approx(3600.0)
    # Before any notebook was named (a console's kernel, VS Code's, or a server that has not
    # answered yet) the kernel is the job, as it is after: one job throughout.
    unnamed = Attributor(folder / "proc", fetch=lambda *_: b"[]", now_s=clock).attribute(4321)
    assert (unnamed.job_kind, unnamed.job) == ("kernel", "abc-1")
    as_process = ProcessSample(0, 4321, "compute", 1e9, started_s=5.0, attribution=unnamed)
    assert as_process.job_identity == process.job_identity == ("kernel", "abc-1", -1.0)
    # One job, named by the process that knows its notebook whichever comes first (a forked
    # worker asked later showed "Jupyter kernel abc-1" where the notebook's name was known).
    from trayvml.core.lines import biggest_job

    worker = ProcessSample(0, 4400, "compute", 1e9, started_s=6.0, attribution=unnamed)
    for listed in ((process, worker), (worker, process)):
        job, _, memory, kind = biggest_job(gpu_sample(0, power_w=100, processes=listed).gpus[0])
        assert (job, kind, memory) == ("notebook llm/finetune.ipynb", "notebook", 2e9)


def test_a_jupyter_server_that_hangs_is_asked_once_for_all_its_kernels(folder: Path) -> None:
    """A server that accepts and never answers (stopped with Ctrl-Z) cost each kernel's look-up
    its wait, one after the other on the sampler's thread: 8 kernels held a tick 4 s, again at
    every retry. A server's answer stands for all its kernels, and one that failed is left alone
    for its back-off."""
    asked: list[str] = []
    hung = [True]

    def fetch(url: str, token: str, wait_s: float) -> bytes:
        asked.append(url)
        if hung[0]:
            raise TimeoutError("timed out")
        return json.dumps([{"path": f"n{k}.ipynb", "kernel": {"id": f"k-{k}"}} for k in range(8)]).encode()

    _jupyter(folder, kernels=tuple(f"k-{k}" for k in range(8)), first_pid=4300)
    clock = Clock()
    attributor = Attributor(folder / "proc", fetch=fetch, now_s=clock)
    assert [attributor.attribute(4300 + k).notebook for k in range(8)] == [""] * 8
    assert len(asked) == 1  # the other seven kernels did not wait on it again
    hung[0] = False
    clock.now += NOTEBOOK_RETRY_FIRST_S
    assert [attributor.attribute(4300 + k).notebook for k in range(8)] == [f"n{k}.ipynb" for k in range(8)]
    assert len(asked) == 2  # one answer for the eight
