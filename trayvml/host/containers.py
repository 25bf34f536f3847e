"""A container's name, asked of the runtime that runs it: Docker's Engine API, or Podman's
Docker-compatible one, over their unix sockets, where this user may open them.

``GET /containers/<id>/json`` answers the container's JSON with its ``Name`` ("/train-llm": the
Engine API prefixes it with a slash for historic reasons), or 404 where the runtime knows no such
container. The sockets are those the runtimes' own clients use: DOCKER_HOST (``unix:///path``),
else /var/run/docker.sock; for Podman CONTAINER_HOST (``unix:///path``, as podman-remote reads it),
else $XDG_RUNTIME_DIR/podman/podman.sock (rootless) and /run/podman/podman.sock. A TCP or SSH
DOCKER_HOST is not asked (a name is not worth a network round trip or a login). containerd and
CRI-O answer over gRPC only: their containers keep their short id.

Cost and safety: asked only for containers that run a process on a GPU, once per container (names
are cached), with a short bounded wait, on the sampler's thread (never the GUI's). A socket this
user's permissions do not open is not asked (no privilege is used: a mode that shuts this user
out is respected even by root). A failure is remembered, and asked again only after a back-off
(doubling up to RETRY_MAX_S): a runtime that was down may be up later, but a hung one must not
cost every tick.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

ASK_WAIT_S = 0.5  # the whole request, connect to last byte
RETRY_FIRST_S = 30.0
RETRY_MAX_S = 600.0
MAX_ANSWER_BYTES = 1 << 20  # a container's JSON is a few KiB
CACHE_MAX = 1024
RUNTIMES = ("docker", "podman")  # the ones with an HTTP API on a unix socket


class AskFailedError(OSError):
    """The runtime could not be asked (no socket, no permission, no answer in time, not its API)."""


def sockets(runtime: str, environ: Mapping[str, str]) -> tuple[Path, ...]:
    """Where ``runtime``'s API may listen, as its own clients look (see the module's docstring)."""
    if runtime == "docker":
        host = environ.get("DOCKER_HOST", "")
        if host:
            return (Path(host.removeprefix("unix://")),) if host.startswith("unix://") else ()
        return (Path("/var/run/docker.sock"),)
    if runtime == "podman":
        host = environ.get("CONTAINER_HOST", "")
        if host:
            return (Path(host.removeprefix("unix://")),) if host.startswith("unix://") else ()
        runtime_dir = environ.get("XDG_RUNTIME_DIR", "")
        rootless = (Path(runtime_dir) / "podman" / "podman.sock",) if runtime_dir.startswith("/") else ()
        return (*rootless, Path("/run/podman/podman.sock"))
    return ()


def may_open(path: Path) -> bool:
    """Whether ``path`` is a socket whose mode lets this user write to it (connecting to a unix
    socket needs write permission): by its bits, not by a privilege that overrides them."""
    try:
        info = path.stat()
    except OSError:
        return False
    if not stat.S_ISSOCK(info.st_mode):
        return False
    if info.st_uid == os.geteuid():
        return bool(info.st_mode & stat.S_IWUSR)
    if info.st_gid == os.getegid() or info.st_gid in os.getgroups():
        return bool(info.st_mode & stat.S_IWGRP)
    return bool(info.st_mode & stat.S_IWOTH)


def ask_name(path: Path, container_id: str, wait_s: float = ASK_WAIT_S) -> str | None:
    """The name the API at ``path`` gives ``container_id``; None where it knows no such container
    (404). Raises AskFailedError where it cannot be asked or answers what is not its API."""
    if not may_open(path):
        raise AskFailedError(f"{path}: no socket this user may open")
    deadline = time.monotonic() + wait_s
    answer = b""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(wait_s)
            connection.connect(str(path))
            # HTTP/1.0: the server closes after its answer (no chunks, no keep-alive to manage).
            connection.sendall(f"GET /containers/{container_id}/json HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())
            while len(answer) <= MAX_ANSWER_BYTES:
                left_s = deadline - time.monotonic()
                if left_s <= 0:
                    raise AskFailedError(f"{path}: no answer within {wait_s} s")
                connection.settimeout(left_s)  # the whole answer is bounded, not each read
                part = connection.recv(65536)
                if not part:
                    break
                answer += part
    except TimeoutError as late:
        raise AskFailedError(f"{path}: no answer within {wait_s} s") from late
    except AskFailedError:
        raise
    except OSError as error:
        raise AskFailedError(f"{path}: {error}") from error
    head, _, body = answer.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split()
    if len(status) < 2 or not status[0].startswith(b"HTTP/"):
        raise AskFailedError(f"{path}: not an HTTP answer")
    if status[1] == b"404":
        return None
    if status[1] != b"200":
        raise AskFailedError(f"{path}: answered {status[1].decode('ascii', 'replace')}")
    try:
        found = json.loads(body)
        name = found["Name"] if isinstance(found, dict) else None
    except (ValueError, KeyError) as error:
        raise AskFailedError(f"{path}: not the Engine API's container JSON") from error
    if not isinstance(name, str):
        raise AskFailedError(f"{path}: not the Engine API's container JSON")
    return name.removeprefix("/")


@dataclass
class _Failed:
    retry_at_s: float
    wait_s: float  # before the next try after this one fails too


class ContainerNames:
    """Container names by (runtime, id), asked of the runtime once each; failures are retried
    after a back-off, per socket (a runtime down or hung) and per container (one it knows not)."""

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        ask: Callable[[Path, str, float], str | None] = ask_name,
        now_s: Callable[[], float] = time.monotonic,
        wait_s: float = ASK_WAIT_S,
    ) -> None:
        self.environ = os.environ if environ is None else environ
        self.ask = ask
        self.now_s = now_s
        self.wait_s = wait_s
        self._names: dict[tuple[str, str], str] = {}
        self._failed: dict[object, _Failed] = {}  # by socket path, or by (runtime, id)
        self._lock = threading.Lock()

    def asks(self, runtime: str) -> bool:
        """Whether containers of ``runtime`` have a name to ask for."""
        return runtime in RUNTIMES

    def name(self, runtime: str, container_id: str) -> tuple[str, bool]:
        """(its name, or ""; whether it is worth asking again later)."""
        if runtime not in RUNTIMES or not container_id:
            return "", False
        key = (runtime, container_id)
        with self._lock:
            known = self._names.get(key)
            if known is not None:
                return known, False
            if not self._due(key):
                return "", True
        unknown = False  # some runtime answered that it knows no such container
        for path in sockets(runtime, self.environ):
            with self._lock:
                if not self._due(path):
                    continue
            try:
                found = self.ask(path, container_id, self.wait_s)
            except AskFailedError:
                with self._lock:
                    self._fail(path)
                continue
            with self._lock:
                self._failed.pop(path, None)
            if found:
                with self._lock:
                    if len(self._names) >= CACHE_MAX:
                        self._names.clear()
                    self._names[key] = found
                    self._failed.pop(key, None)
                return found, False
            unknown = True
        with self._lock:
            if unknown:
                self._fail(key)
        return "", True

    def _due(self, key: object) -> bool:
        failed = self._failed.get(key)
        return failed is None or self.now_s() >= failed.retry_at_s

    def _fail(self, key: object) -> None:
        before = self._failed.get(key)
        wait_s = RETRY_FIRST_S if before is None else min(before.wait_s * 2, RETRY_MAX_S)
        if len(self._failed) >= CACHE_MAX:
            self._failed.clear()
        self._failed[key] = _Failed(self.now_s() + wait_s, wait_s)
