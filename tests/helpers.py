"""The one place for test helpers: simulated sources on a manual clock."""

from __future__ import annotations

import contextlib
import math
import os
import re
import resource
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TypeVar

import pytest

from trayvml.alerts.rules import AnySettings, RuleSettings
from trayvml.core.clock import ManualClock
from trayvml.core.metrics import GPU_METRICS
from trayvml.core.sample import MetricState, Sample
from trayvml.history.timeline import DiskReach, History
from trayvml.nvml.sim import parse_spec
from trayvml.nvml.sim.library import SimulatedNvml
from trayvml.source import Source

OPEN_SOURCES: list[Source] = []  # closed after each test by conftest (each has a thread of its own)

T = TypeVar("T")


def present(value: T | None) -> T:
    """``value``, asserted to be there (a Qt getter, a sample's part, a lookup that may find nothing)."""
    assert value is not None
    return value


def thresholds(settings: AnySettings) -> RuleSettings:
    """A threshold rule's settings, asserted to be of that kind (AlertSettings maps every kind)."""
    assert isinstance(settings, RuleSettings), settings
    return settings


def simulated_source(
    spec: str = "training", host: bool = False, stall_after_s: float = 5.0, every_tick: bool = False
) -> tuple[Source, ManualClock, SimulatedNvml]:
    clock = ManualClock()
    source = Source(parse_spec(spec), clock, host=host, stall_after_s=stall_after_s, every_tick=every_tick)
    OPEN_SOURCES.append(source)
    assert source.library is not None
    return source, clock, source.library


def disk_history(
    folder: Path, spec: str, now_s: float, uuids: tuple[str, ...] | None = None
) -> tuple[Sample, History, DiskReach]:
    """A history whose past is read from the store in ``folder``, holding the first sample of a
    simulated ``spec`` (host included) taken at ``now_s``; ``uuids``: the GPUs read from disk where
    they are not the sample's own. The history's disk is returned beside it."""
    source = Source(parse_spec(spec), ManualClock(now_s), host=True)
    OPEN_SOURCES.append(source)
    sample = source.sample()
    history = History()
    history.disk = disk = DiskReach(folder)
    if uuids is not None:
        disk.uuids = uuids
    history.append(sample)
    return sample, history, disk


def run_ticks(source: Source, clock: ManualClock, ticks: int, step_s: float = 1.0) -> Sample:
    sample = source.sample()
    for _ in range(ticks - 1):
        clock.advance_s(step_s)
        sample = source.sample()
    return sample


def states_by_key(sample: Sample, gpu: int) -> dict[str, MetricState]:
    return {m.key: s for m, s in zip(GPU_METRICS, sample.gpus[gpu].states, strict=True)}


def shown_by_dbusmenu_host(label: str) -> str:
    """A dbusmenu label as a tray host shows it: ``__`` is one underscore, any other ``_`` marks
    the next character as the access key and is not shown."""
    return re.sub("_(_?)", r"\1", label)


def finite(value: float) -> bool:
    return not math.isnan(value)


class FakeRemote:
    """A small HTTP server whose answer each test sets: a body, a status, a hang, a redirect, an
    answer dripped a byte at a time (``drip_s`` apart, headers too), or gone. ``seen`` holds the
    headers of each request it got, ``connections`` counts the connections it took. ``keep_alive``:
    it answers HTTP/1.1 and keeps the connection for more requests (``drop_idle``: yet closes it
    after each answer without saying so, as a server whose idle timeout ran out)."""

    def __init__(self) -> None:
        self.body = b""
        self.status = 200
        self.content_type = "text/plain; version=0.0.4"
        self.hang = False
        self.drip_s = 0.0
        self.redirect_to = ""
        self.seen: list[dict[str, str]] = []
        self.keep_alive = False
        self.drop_idle = False
        self.connections = 0
        self.release = threading.Event()
        remote = self

        class Handler(BaseHTTPRequestHandler):
            def setup(self) -> None:
                super().setup()
                remote.connections += 1
                self.protocol_version = "HTTP/1.1" if remote.keep_alive else "HTTP/1.0"

            def do_GET(self) -> None:
                remote.seen.append(dict(self.headers.items()))
                if remote.hang:
                    remote.release.wait(10)
                    return
                if remote.drip_s:
                    self._drip()
                    return
                if remote.redirect_to:
                    self.send_response(302)
                    self.send_header("Location", remote.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(remote.status)
                self.send_header("Content-Type", remote.content_type)
                self.send_header("Content-Length", str(len(remote.body)))
                self.end_headers()
                self.wfile.write(remote.body)
                if remote.drop_idle:
                    self.close_connection = True

            def _drip(self) -> None:
                head = f"HTTP/1.0 200 OK\r\nContent-Type: {remote.content_type}\r\n"
                head += f"Content-Length: {len(remote.body)}\r\n\r\n"
                for byte in head.encode() + remote.body:
                    if remote.release.wait(remote.drip_s):
                        return
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:
                        return  # the reader gave up

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.running = True

    def stop(self) -> None:
        if self.running:
            self.running = False
            self.release.set()
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(5)


class AcceptLoop:
    """Takes the connections of ``listener`` (a listening socket, TCP or unix) on a thread of its own
    and runs ``answer(connection, number)`` on a thread of its own for each (numbered from 1; an
    OSError of the connection ends its thread quietly). ``stopping`` is set by :meth:`stop`, for
    answers that wait. ``connections`` counts the connections taken."""

    def __init__(self, listener: socket.socket, answer: Callable[[socket.socket, int], None]) -> None:
        self.listener = listener
        self.answer = answer
        self.connections = 0
        self.stopping = threading.Event()
        self._taken: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        listener.settimeout(0.05)  # how often the loop looks at ``stopping``
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            self._taken.append(connection)
            thread = threading.Thread(target=self._answer, args=(connection, self.connections), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _answer(self, connection: socket.socket, number: int) -> None:
        with contextlib.suppress(OSError):
            self.answer(connection, number)

    def stop(self, wait_s: float = 5.0) -> None:
        """Stops taking connections, ends those taken, and waits for every thread (each ``wait_s`` at most).

        No socket is closed while a thread may still use it: a closed descriptor's number is handed
        to the next file opened (Qt's, in the UI tests), which a late accept or send would then hit.
        The accept loop ends by itself (it looks at ``stopping`` every 0.05 s); shutting a connection
        down wakes its answer's receive without freeing the descriptor."""
        self.stopping.set()
        self._accepting.join(wait_s)
        self.listener.close()
        for connection in self._taken:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(wait_s)
        for connection in self._taken:
            connection.close()


UUID0 = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"
UUID1 = "GPU-2a7c4e1b-0000-4b1e-9c1d-5f3b2a1c0de1"


def dcgm_exposition(host_label: str) -> str:
    """Two A100s as dcgm-exporter serves them (written from its etc/default-counters.csv and README)."""
    labels = (
        'gpu="{gpu}",UUID="{uuid}",pci_bus_id="00000000:00:1{gpu}.0",device="nvidia{gpu}",'
        f'modelName="NVIDIA A100-SXM4-80GB",{host_label}="dgx-01",DCGM_FI_DRIVER_VERSION="550.54.15"'
    )
    rows = {
        "DCGM_FI_DEV_SM_CLOCK": ("gauge", (1410, 210)),
        "DCGM_FI_DEV_GPU_TEMP": ("gauge", (61, 33)),
        "DCGM_FI_DEV_POWER_USAGE": ("gauge", (312.5, 61.0)),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": ("counter", (123456789, 73963)),
        "DCGM_FI_DEV_GPU_UTIL": ("gauge", (87, 0)),
        "DCGM_FI_DEV_FB_FREE": ("gauge", (20000, 81000)),
        "DCGM_FI_DEV_FB_USED": ("gauge", (61000, 0)),
        "DCGM_FI_DEV_XID_ERRORS": ("gauge", (0, 79)),
    }
    out = []
    for name, (kind, values) in rows.items():
        out += [f"# HELP {name} from etc/default-counters.csv", f"# TYPE {name} {kind}"]
        for gpu, (uuid, value) in enumerate(zip((UUID0, UUID1), values, strict=True)):
            out.append(f"{name}{{{labels.format(gpu=gpu, uuid=uuid)}}} {value}")
    return "\n".join(out) + "\n"


def closed_port_url() -> str:
    """A local address where nothing listens (a port the system just gave out and took back)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def end_process(process: subprocess.Popen, wait_s: float = 5.0) -> None:
    """End a child a test started, whatever it does with signals: SIGTERM, then SIGKILL after a
    bounded wait. For a finally block, so that a failing test leaves nothing running."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(wait_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(wait_s)


def default_sigint() -> None:
    """A child's preexec_fn: Ctrl-C ends it even where the test run ignores SIGINT (started with
    nohup or in the background), which a child would otherwise inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class JupyterServer:
    """A real Jupyter server (jupyter_server) on a free local port, with folders of its own under
    ``folder``, and a way to open a notebook session with a real ipykernel. A context manager: the
    server (and with it its kernels) ends on leaving."""

    def __init__(self, folder: Path, token: str = "s3cret-token") -> None:
        import os
        import socket
        import sys

        self.runtime, self.root, self.token = folder / "runtime", folder / "notebooks", token
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.base = f"http://127.0.0.1:{port}/"
        self.environment = {
            **os.environ,
            "JUPYTER_RUNTIME_DIR": str(self.runtime),
            "JUPYTER_CONFIG_DIR": str(folder / "config"),
            "JUPYTER_DATA_DIR": str(folder / "data"),
            "IPYTHONDIR": str(folder / "ipython"),
            "JUPYTER_PLATFORM_DIRS": "1",
        }
        self.command = [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={self.root}",
            *(["--allow-root"] if os.getuid() == 0 else []),  # containers that run tests as root
        ]
        self.server: subprocess.Popen | None = None

    def __enter__(self) -> JupyterServer:
        import time

        (self.root / "exp").mkdir(parents=True, exist_ok=True)
        self.server = subprocess.Popen(
            self.command, env=self.environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 60
            # Its runtime file, then its port: the server writes the file before it listens, and a
            # session asked for in between met a refused connection (seen under load).
            while not (list(self.runtime.glob("jpserver-*.json")) and self._listening()):
                assert self.server.poll() is None and time.monotonic() < deadline, "the Jupyter server did not start"
                time.sleep(0.05)
        except BaseException:
            end_process(self.server, wait_s=10)
            raise
        return self

    def __exit__(self, *_: object) -> None:
        if self.server is not None:
            end_process(self.server, wait_s=10)

    def _listening(self) -> bool:
        import socket
        from urllib.parse import urlsplit

        address = urlsplit(self.base)
        try:
            with socket.create_connection((address.hostname, address.port), timeout=1.0):
                return True
        except OSError:
            return False

    def api(self, path: str, body: dict[str, object] | None = None, method: str = "") -> object:
        import json
        import urllib.request

        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method or ("GET" if body is None else "POST"),
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def open_notebook(self, path: str) -> tuple[str, int]:
        """(kernel id, kernel PID) of a new session of the notebook ``path`` with a python3 kernel."""
        import time

        session = self.api("api/sessions", {"path": path, "type": "notebook", "kernel": {"name": "python3"}})
        assert isinstance(session, dict)
        kernel_id = session["kernel"]["id"]
        deadline = time.monotonic() + 60
        kernel_pid = 0
        while not kernel_pid:
            assert time.monotonic() < deadline, "the kernel did not start"
            kernel_pid = self.kernel_pid(kernel_id)
            time.sleep(0.05)
        return kernel_id, kernel_pid

    def kernel_pid(self, kernel_id: str) -> int:
        """The server's child whose command line names the kernel's connection file (only the
        test's own children are read: the server's /proc/PID/task/*/children lists)."""
        assert self.server is not None
        for children in Path(f"/proc/{self.server.pid}/task").glob("*/children"):
            for pid in children.read_text().split():
                try:
                    command = Path(f"/proc/{pid}/cmdline").read_text()
                except OSError:
                    continue
                if f"kernel-{kernel_id}.json" in command:
                    return int(pid)
        return 0


def without_root_powers() -> list[str]:
    """A command prefix under which root too meets files' permissions (no DAC override): the tests
    run as root here, and a folder of mode 000 must stop the command under test as it stops a user."""
    if os.geteuid() != 0:
        return []
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"]


def fifo_with_reader(folder: Path) -> tuple[Path, threading.Thread, list[bytes]]:
    """A named pipe in ``folder``, and a thread started reading it to its end: what it read comes
    in the list (join the thread first)."""
    fifo = folder / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as pipe:
            got.append(pipe.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return fifo, reader, got


def zero_device(folder: Path) -> Path:
    """A node of /dev/zero's device made in ``folder`` (the test's own, never a system path); the
    test is skipped where none can be made."""
    path = folder / "zero"
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    except OSError as error:
        pytest.skip(f"no device node can be made here: {error}")
    return path


def run_bounded(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m trayvml ARGS`` as a process of its own, its time and its memory (2 GiB of address
    space) bounded: one that reads a device or a huge file for ever ends, and is not this test's."""

    def bounded() -> None:  # in the child, between fork and exec: nothing imported there
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run(
        [sys.executable, "-m", "trayvml", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        preexec_fn=bounded,
        check=False,
    )


def read_in_time(fifo: Path, read: Callable[[], T], wait_s: float = 20.0) -> T | BaseException:
    """``read()`` (a reader of the named pipe ``fifo``) on a thread: what it returned or raised.
    Fails where it still waits after ``wait_s``, once let go (a writer's end opened for it, which
    never blocks): no thread is left waiting on the pipe."""
    done: list[T | BaseException] = []

    def run() -> None:
        try:
            done.append(read())
        except BaseException as error:  # the caller asserts on it
            done.append(error)

    reader = threading.Thread(target=run, daemon=True)
    reader.start()
    reader.join(wait_s)
    in_time = not reader.is_alive()
    if not in_time:
        with contextlib.suppress(OSError):  # ENXIO: no reader has it open
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
    assert in_time, f"{fifo} was waited on for ever"
    return done[0]
