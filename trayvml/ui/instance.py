"""One trayvml per user, graphical session and settings file.

The socket lives in the user's private runtime folder (``$XDG_RUNTIME_DIR``), keyed by the
display and the settings file, as qutebrowser keys its IPC socket: a second display, a remote
desktop or a test run each get their own tray, no other user can take the name first, and a
second start in the same session brings the running window forward.
"""

from __future__ import annotations

import getpass
import hashlib
import logging
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger(__name__)
CONNECT_WAIT_MS = 500
MAX_MESSAGE_BYTES = 64  # "show\n" is all a second start says


def session_key(config_path: Path | None) -> str:
    """What makes one instance: the graphical session (display) and the settings file."""
    display = os.environ.get("WAYLAND_DISPLAY") or os.environ.get("DISPLAY", "")
    if display.startswith(":") and "." in display:
        display = display.rsplit(".", 1)[0]  # ":0.0" is the same X session as ":0"
    config = str(config_path.expanduser().resolve()) if config_path is not None else ""
    return hashlib.sha256(f"{display}\0{config}".encode()).hexdigest()[:16]


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


def already_running(name: str) -> bool:
    """Ask a running trayvml to show its window; True if one answered."""
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_WAIT_MS):
        return False
    socket.write(b"show\n")
    socket.flush()
    socket.waitForBytesWritten(CONNECT_WAIT_MS)
    socket.disconnectFromServer()
    return True


def listen(name: str, on_show: Callable[[], None], parent: object = None) -> QLocalServer:
    """Serve ``name``: each message from a second start calls ``on_show``."""
    server = QLocalServer(parent)  # type: ignore[arg-type]
    server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
    QLocalServer.removeServer(name)  # a stale socket from a crash (a live one answered already_running)
    if not server.listen(name):
        log.warning("could not listen on %s: %s", name, server.errorString())

    def on_connection() -> None:
        while (connection := server.nextPendingConnection()) is not None:
            # Freed when the peer goes: a connection kept nothing alive but memory (9 KB each).
            connection.disconnected.connect(connection.deleteLater)
            connection.readyRead.connect(lambda c=connection: on_message(c))

    def on_message(connection: QLocalSocket) -> None:
        connection.read(MAX_MESSAGE_BYTES)  # any message means: show yourself
        connection.disconnectFromServer()
        on_show()

    server.newConnection.connect(on_connection)
    return server
