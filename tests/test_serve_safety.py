"""trayvml serve facing the network: users not told apart by timing, a web config checked whole at
start (one sentence naming the file and line), and connections that cannot take every thread."""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import bcrypt
import pytest

from tests.helpers import read_in_time, run_bounded, run_ticks, simulated_source, zero_device
from trayvml.cli import main
from trayvml.core import files
from trayvml.core.errors import TrayvmlError
from trayvml.core.sample import Sample
from trayvml.prometheus import exposition
from trayvml.prometheus.exposition import Exporter, WebConfig, load_web_config


def _status(url: str, user: str, password: str) -> int:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    request = urllib.request.Request(url, headers={"Authorization": f"Basic {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def _config(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "web.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_unknown_user_costs_one_bcrypt_check_as_a_known_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    web = load_web_config(str(_config(tmp_path, "basic_auth_users:", f"  alice: {hashed}")))
    source, clock, _ = simulated_source("idle")
    sample = run_ticks(source, clock, 2)
    exporter = Exporter(lambda: sample, "127.0.0.1", 0, web)
    checks: list[bytes] = []
    real = bcrypt.checkpw

    def counted(password: bytes, hashed: bytes) -> bool:
        checks.append(hashed)
        return bool(real(password, hashed))

    monkeypatch.setattr(bcrypt, "checkpw", counted)
    try:
        url = exporter.server.url
        assert _status(url, "mallory", "guess") == 401
        assert len(checks) == 1  # the same work as for a user who exists
        assert _status(url, "alice", "guess") == 401 and len(checks) == 2
        assert _status(url, "alice", "x" * 100) == 401  # longer than bcrypt takes: refused, not a 500
        assert _status(url, "alice", "s3cret") == 200
    finally:
        exporter.close()


@pytest.mark.parametrize("placeholder", ["$2b$12$...", "$2b$12$" + "a" * 52, "$2b$99$" + "a" * 53])
def test_a_placeholder_hash_is_refused_at_start_in_one_sentence(tmp_path: Path, placeholder: str) -> None:
    path = _config(tmp_path, f'basic_auth_users: {{alice: "{placeholder}"}}')
    with pytest.raises(TrayvmlError, match=r"the password of 'alice' must be a bcrypt hash\.$"):
        load_web_config(str(path))


def test_invalid_yaml_is_one_sentence_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, "basic_auth_users:", "  alice: [unclosed", "tls_server_config: {}")
    assert main(["serve", "--simulate", "--listen", "127.0.0.1:0", "--web-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"The web config file {path} is not valid YAML at line 3: " in err


SERVE = ("serve", "--simulate", "--listen", "127.0.0.1:0", "--web-config")


def test_a_web_config_larger_than_one_is_refused_in_one_sentence(tmp_path: Path) -> None:
    # Read whole before, two MiB of comments were an empty config: serve started without its users.
    path = _config(tmp_path, *["# " + "x" * 1000] * 2100)
    with pytest.raises(TrayvmlError, match=rf"^The web config file {path} is larger than 1 MiB\.$"):
        load_web_config(str(path))


def test_a_web_config_that_is_a_device_is_never_read(tmp_path: Path) -> None:
    # read_text read /dev/zero for ever, growing: serve runs as a process of its own here, its
    # memory bounded, so that one that reads the device anyway ends (with a traceback).
    path = zero_device(tmp_path)
    done = run_bounded(*SERVE, str(path))
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"trayvml: Cannot read the web config file {path}: it is not a regular file.\n"
    assert path.is_char_device()


def _load_in_time(path: Path, writes: bytes | None, after_s: float = 0.0, closes: bool = True) -> str | WebConfig:
    """``load_web_config`` of the named pipe ``path``, with a writer that opens it after ``after_s``,
    writes ``writes`` and closes it where ``closes`` (``writes`` None: no writer): the config, or
    the sentence it raised. Fails where the load still waits after 20 s."""
    finish = threading.Event()

    def write() -> None:
        time.sleep(0.1 + after_s)  # the loader's open first: a writer's open without a reader fails
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: it gave up and closed it first (the test says so)
            return
        with contextlib.suppress(BrokenPipeError):
            os.write(descriptor, writes or b"")
            if not closes:
                finish.wait(30)
        os.close(descriptor)

    writer = threading.Thread(target=write, daemon=True)
    if writes is not None:
        writer.start()
    try:
        said = read_in_time(path, lambda: load_web_config(str(path)))
    finally:
        finish.set()
        if writes is not None:
            writer.join(10)
    if isinstance(said, TrayvmlError):
        return str(said)
    assert isinstance(said, WebConfig), said
    return said


@pytest.mark.parametrize(
    "writes", [None, b"basic_auth_users: {}\n"], ids=["no-writer-opens", "the-writer-never-finishes"]
)
def test_a_web_config_pipe_is_waited_on_for_a_bounded_time_not_read_as_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writes: bytes | None
) -> None:
    # read_text waited for the writer's end for ever: serve never started nor said why. Opened
    # without waiting, a named pipe no writer has opened yet read at once as its end: an empty web
    # config, and serve started without the users its writer was about to give.
    monkeypatch.setattr(exposition, "WEB_CONFIG_PIPE_WAIT_S", 0.5)
    path = tmp_path / "web.yml"
    os.mkfifo(path)
    said = _load_in_time(path, writes, closes=False)
    assert said == f"Cannot read the web config file {path}: its writer did not finish within 0.5 s."
    assert path.is_fifo()


def test_a_web_config_pipe_that_gives_nothing_is_refused(tmp_path: Path) -> None:
    # <(gpg -d …) with a wrong passphrase: the writer ends having written nothing, read as an empty
    # config, and serve started without its users. An empty file stays an empty config.
    path = tmp_path / "pipe.yml"
    os.mkfifo(path)
    assert _load_in_time(path, b"") == f"The web config pipe {path} gave nothing; its writer may have failed."
    assert load_web_config(str(_config(tmp_path))) == WebConfig()  # web.yml, a file of one empty line


def test_a_web_config_pipe_is_waited_on_longer_than_settings_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --web-config <(gpg -d …) may wait on a passphrase: serve waits a minute for it, where the
    # tray's settings wait 5 s (scaled down here: 0.3 s, and 5 s for the web config).
    monkeypatch.setattr(files, "PIPE_WAIT_S", 0.3)
    monkeypatch.setattr(exposition, "WEB_CONFIG_PIPE_WAIT_S", 5.0)
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(4)).decode()
    path = tmp_path / "web.yml"
    os.mkfifo(path)
    said = _load_in_time(path, f"basic_auth_users: {{alice: '{hashed}'}}\n".encode(), after_s=1.0)
    assert isinstance(said, WebConfig) and said.users == {"alice": hashed.encode()}


def _wait_until(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


def test_idle_connections_hold_at_most_the_bound_of_threads_and_a_scrape_still_answers() -> None:
    source, clock, _ = simulated_source("idle")
    sample = run_ticks(source, clock, 2)
    exporter = Exporter(lambda: sample, "127.0.0.1", 0, max_connections=4, idle_timeout_s=0.3)
    before = threading.active_count()
    idle = []
    try:
        port = exporter.server.port
        for _ in range(200):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        # The server has taken the 4 it serves and closed the rest: those read as closed at once.
        refused = 0
        for sock in idle[4:]:
            sock.settimeout(5)
            with contextlib.suppress(ConnectionError):
                refused += sock.recv(1) == b""
        assert refused == 196
        assert threading.active_count() <= before + 4
        # The held ones are let go after the idle timeout; then a real scrape answers.
        assert _wait_until(lambda: threading.active_count() <= before)
        with urllib.request.urlopen(exporter.server.url, timeout=5) as response:
            assert response.status == 200 and b"trayvml_up" in response.read()
    finally:
        for sock in idle:
            sock.close()
        exporter.close()


def test_clients_that_drip_their_requests_are_let_go_and_a_scrape_still_answers() -> None:
    """Each connection's bound was an idle timeout on every receive: clients sending a byte a little
    faster than it held every connection for good, and every other client, Prometheus included,
    was refused before any password was asked."""
    source, clock, _ = simulated_source("idle")
    sample = run_ticks(source, clock, 2)
    scrapes: list[int] = []

    def latest() -> Sample:
        scrapes.append(1)
        return sample

    exporter = Exporter(latest, "127.0.0.1", 0, max_connections=4, idle_timeout_s=0.5)
    dripping = [socket.create_connection(("127.0.0.1", exporter.server.port), timeout=5) for _ in range(4)]
    for sock in dripping:
        sock.sendall(b"GET /metrics HTTP/1.1\r\n")  # then a header that never ends
    stop = threading.Event()

    def drip() -> None:  # a byte a socket every 0.2 s: each receive well within the idle timeout
        while not stop.wait(0.2):
            for sock in dripping:
                with contextlib.suppress(OSError):
                    sock.sendall(b"X")

    dripper = threading.Thread(target=drip, daemon=True)
    dripper.start()
    try:
        time.sleep(0.3)  # the four are taken, dripping
        answered = False
        deadline = time.monotonic() + 5.0
        while not answered and time.monotonic() < deadline:
            with contextlib.suppress(OSError), urllib.request.urlopen(exporter.server.url, timeout=2) as response:
                answered = response.status == 200 and b"trayvml_up" in response.read()
            time.sleep(0.1)
        assert answered  # once the drippers were let go at the deadline of their requests
        # Cut off, their requests were not run (the shutdown's end is no end of their headers).
        assert len(scrapes) == 1
    finally:
        stop.set()
        dripper.join(5)
        for sock in dripping:
            sock.close()
        exporter.close()


def test_a_port_in_use_is_one_sentence() -> None:
    """The server closes itself where its port is taken, before it was ever activated: its own
    close then failed (AttributeError) in place of the sentence, and the tray's exporter with it."""
    from trayvml.prometheus.exposition import MetricsServer

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(TrayvmlError, match=rf"^Cannot listen on 127\.0\.0\.1:{port}: "):
            MetricsServer(lambda environ, start: [], "127.0.0.1", port)
