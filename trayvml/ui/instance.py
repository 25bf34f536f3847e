"""One trayvml per user, graphical session and settings file.

The socket lives in the user's private runtime folder (``$XDG_RUNTIME_DIR``), keyed by the
display and the settings file, as qutebrowser keys its IPC socket: a second display, a remote
desktop or a test run each get their own tray, no other user can take the name first, and a
second start in the same session brings the running window forward.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import socket
import stat
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QObject, QSocketNotifier

from trayvml.core.files import LOCKS, try_lock

log = logging.getLogger(__name__)
CONNECT_WAIT_MS = 500
MAX_MESSAGE_BYTES = 512  # "show\n", or "show TOKEN\n" with the launcher's activation token
ACTIVATION_TOKEN = "XDG_ACTIVATION_TOKEN"  # xdg-activation (Wayland): lets a window come to the front
MAX_TOKEN_CHARS = 256


def session_key(config_path: Path | None) -> str:
    """What makes one instance: the graphical session (display) and the settings file."""
    display = os.environ.get("WAYLAND_DISPLAY") or os.environ.get("DISPLAY", "")
    if display.startswith(":") and "." in display:
        display = display.rsplit(".", 1)[0]  # ":0.0" is the same X session as ":0"
    config = str(config_path.expanduser().resolve()) if config_path is not None else ""
    # CRC-32, not SHA-256: the key tells apart a user's few sessions in their own private folder,
    # where nobody else can make a name; importing hashlib loads OpenSSL's libcrypto, 3.3 MiB of
    # the idle tray's RSS for this one call (benchmarks/README.md).
    return format(zlib.crc32(f"{display}\0{config}".encode()), "08x")


def _private_folder(path: Path) -> bool:
    """Ours, a real folder, and closed to everyone else."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def runtime_folder() -> Path | None:
    """The user's private folder for the socket, made if needed; None where none can be trusted."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    parent = Path(runtime) if runtime else None
    if parent is None or not _private_folder(parent):
        # No runtime folder (some SSH and container sessions): a folder of our own in the shared
        # temporary folder, used only if it is ours and closed to others.
        parent = Path(tempfile.gettempdir())
        folder = parent / f"trayvml-{os.getuid()}"
    else:
        folder = parent / "trayvml"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError as error:
        log.warning("no private folder for the single-instance socket (%s): not checking for another trayvml", error)
        return None
    if not _private_folder(folder):
        log.warning("%s is not a private folder of this user: not checking for another trayvml", folder)
        return None
    return folder


def instance_name(config_path: Path | None) -> str | None:
    """The socket of this session's instance; None where no private place for it exists."""
    key = session_key(config_path)
    if sys.platform == "win32":  # a named pipe, private to the user's logon session
        return f"trayvml-{getpass.getuser()}-{key}"
    folder = runtime_folder()
    return None if folder is None else str(folder / f"instance-{key}")


class InstanceServer(Protocol):
    def close(self) -> None: ...


def _show_message() -> bytes:
    """What a second start says: show yourself, with the token the launcher gave this process, if any.

    A compositor lets a window take the focus only with a token from the launch the user made
    (xdg-activation); the launcher gave it to this second process, so it is handed over, as
    Dolphin and Kate do. Qt's Wayland windows use it from the environment when asked to activate.
    """
    token = os.environ.get(ACTIVATION_TOKEN, "")
    return f"show {token}\n".encode() if _valid_token(token) else b"show\n"


def _valid_token(token: str) -> bool:
    return 0 < len(token) <= MAX_TOKEN_CHARS and token.isascii() and token.isprintable() and " " not in token


def _take_token(message: bytes) -> None:
    """Put the activation token of a second start where Qt looks for it when the window is activated."""
    words = message.decode("ascii", "replace").split()
    if len(words) == 2 and words[0] == "show" and _valid_token(words[1]):
        os.environ[ACTIVATION_TOKEN] = words[1]
    else:  # an earlier start's token, unused (X11 has no use for it), is no token for this one
        os.environ.pop(ACTIVATION_TOKEN, None)


START_WAIT_S = 20.0  # for another start of this session to answer (it builds its tray before it listens)


ANSWERED = "answered"  # another trayvml of this session runs, and was asked to show its window
SILENT = "silent"  # another start of this session holds the claim and never answered


def claim(name: str, wait_s: float = START_WAIT_S) -> tuple[int | None, str]:
    """This session's instance, claimed: (a lock to hold for the whole run, or None; "" where this
    start is the one to run, else ANSWERED or SILENT).

    Two starts close together (autostart and a click) both found nobody answering and both ran;
    the second removed the first's socket, and whichever quit first the other's: every later
    start made yet another tray. The lock beside the socket settles who runs, and only its holder
    makes or removes the socket. A start that finds it held asks its holder to show itself,
    waiting ``wait_s`` at most for it to listen. Where there is no flock (Windows): no lock, and
    whether one answered, as before."""
    if not LOCKS:
        return None, ANSWERED if already_running(name) else ""
    deadline_s = time.monotonic() + wait_s
    while True:
        lock = try_lock(f"{name}.lock")
        if lock is not None:
            if already_running(name):  # one started before there was a lock holds none
                os.close(lock)
                return None, ANSWERED
            return lock, ""
        if already_running(name):
            return None, ANSWERED
        if time.monotonic() >= deadline_s:
            return None, SILENT
        time.sleep(0.1)


def release(lock: int | None) -> None:
    """The claim let go (its file stays: removed, a start waiting on it would lock a file no other
    start sees)."""
    if lock is not None:
        os.close(lock)


def already_running(name: str) -> bool:
    """Ask a running trayvml to show its window; True if one answered."""
    if not hasattr(socket, "AF_UNIX"):
        return _already_running_qt(name)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as peer:
        peer.settimeout(CONNECT_WAIT_MS / 1000)
        try:
            peer.connect(name)
            peer.sendall(_show_message())
        except OSError:  # no socket, a stale one, or nobody answering in time
            return False
    return True


def listen(name: str, on_show: Callable[[], None], parent: QObject | None = None) -> InstanceServer:
    """Serve ``name``: each message from a second start calls ``on_show``."""
    if not hasattr(socket, "AF_UNIX"):
        return _listen_qt(name, on_show, parent)
    return _UnixServer(name, on_show, parent)


class _UnixServer(QObject):
    """A Unix socket watched by the event loop: Python's own socket, so no QtNetwork (3-7 MiB) is loaded."""

    def __init__(self, path: str, on_show: Callable[[], None], parent: QObject | None) -> None:
        super().__init__(parent)
        self._path = path
        self._on_show = on_show
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a stale socket from a crash (a live one answered already_running)
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket.setblocking(False)
        self._socket.bind(path)
        os.chmod(path, 0o600)  # the folder is private already; the socket too
        self._socket.listen(8)
        self._notifier = QSocketNotifier(self._socket.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._accept)
        self.connections: dict[int, tuple[socket.socket, QSocketNotifier]] = {}

    def _accept(self) -> None:
        try:
            connection, _ = self._socket.accept()
        except BlockingIOError:
            return
        connection.setblocking(False)
        notifier = QSocketNotifier(connection.fileno(), QSocketNotifier.Type.Read, self)
        notifier.activated.connect(lambda: self._receive(connection))
        self.connections[connection.fileno()] = (connection, notifier)

    def _receive(self, connection: socket.socket) -> None:
        try:
            message = connection.recv(MAX_MESSAGE_BYTES)
        except BlockingIOError:
            return
        except OSError:
            message = b""
        self._drop(connection)  # one message per connection; a peer that went away is freed too
        if message:  # any message means: show yourself
            _take_token(message)
            self._on_show()

    def _drop(self, connection: socket.socket) -> None:
        _, notifier = self.connections.pop(connection.fileno())
        notifier.setEnabled(False)
        notifier.deleteLater()
        connection.close()

    def close(self) -> None:
        for connection, _ in list(self.connections.values()):
            self._drop(connection)
        self._notifier.setEnabled(False)
        self._socket.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path)


# ---- where Python has no Unix sockets (Windows): a Qt local socket, a named pipe there ----
def _already_running_qt(name: str) -> bool:
    from PySide6.QtNetwork import QLocalSocket

    peer = QLocalSocket()
    peer.connectToServer(name)
    if not peer.waitForConnected(CONNECT_WAIT_MS):
        return False
    peer.write(b"show\n")
    peer.flush()
    peer.waitForBytesWritten(CONNECT_WAIT_MS)
    peer.disconnectFromServer()
    return True


def _listen_qt(name: str, on_show: Callable[[], None], parent: QObject | None) -> InstanceServer:
    from PySide6.QtNetwork import QLocalServer, QLocalSocket

    server = QLocalServer(parent)
    server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
    QLocalServer.removeServer(name)
    if not server.listen(name):
        log.warning("could not listen on %s: %s", name, server.errorString())

    def on_connection() -> None:
        while (connection := server.nextPendingConnection()) is not None:
            connection.disconnected.connect(connection.deleteLater)  # freed when the peer goes
            connection.readyRead.connect(lambda c=connection: on_message(c))

    def on_message(connection: QLocalSocket) -> None:
        connection.read(MAX_MESSAGE_BYTES)
        connection.disconnectFromServer()
        on_show()

    server.newConnection.connect(on_connection)
    return server
