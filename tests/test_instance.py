"""One trayvml per user, graphical session and settings file; its socket in a private folder."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from trayvml.ui.instance import already_running, instance_name, listen, runtime_folder, session_key


def test_each_display_and_settings_file_is_its_own_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("DISPLAY", ":1")
    first = session_key(None)
    assert session_key(Path("/tmp/other.toml")) != first
    monkeypatch.setenv("DISPLAY", ":1.0")
    assert session_key(None) == first  # the same X session
    monkeypatch.setenv("DISPLAY", ":2")
    assert session_key(None) != first


def test_the_socket_is_in_the_users_private_runtime_folder() -> None:
    name = instance_name(None)
    assert name is not None
    folder = Path(name).parent
    assert folder == Path(os.environ["XDG_RUNTIME_DIR"]) / "trayvml"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_runtime_folder_open_to_others_is_not_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    folder = runtime_folder()
    assert folder == tmp_path / f"trayvml-{os.getuid()}"


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to make a folder owned by another user")
def test_a_folder_another_user_made_first_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    squatted = tmp_path / f"trayvml-{os.getuid()}"
    squatted.mkdir(mode=0o700)
    os.chown(squatted, 65534, 65534)  # nobody
    assert runtime_folder() is None
    assert instance_name(None) is None  # no single-instance check rather than a squatted one


def test_a_second_start_reaches_its_own_session_only(qtbot, tmp_path: Path) -> None:
    shown: list[int] = []
    server = listen(str(tmp_path / "instance-a"), lambda: shown.append(1))
    try:
        assert already_running(str(tmp_path / "instance-a"))
        qtbot.waitUntil(lambda: shown == [1])
        assert not already_running(str(tmp_path / "instance-b"))
    finally:
        server.close()


def test_a_second_start_hands_over_its_activation_token(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher's xdg-activation token reaches the running trayvml, where Qt uses it to raise the window."""
    name = str(tmp_path / "instance")
    tokens: list[str | None] = []
    server = listen(name, lambda: tokens.append(os.environ.get("XDG_ACTIVATION_TOKEN")))
    try:
        monkeypatch.delenv("XDG_ACTIVATION_TOKEN", raising=False)
        assert already_running(name)
        qtbot.waitUntil(lambda: tokens == [None])  # none given, none made up
        # One process plays both sides here: the token leaves the environment once sent.
        monkeypatch.setenv("XDG_ACTIVATION_TOKEN", "gnome-shell/trayvml/1234-5-host_TIME12")
        assert already_running(name)
        monkeypatch.delenv("XDG_ACTIVATION_TOKEN")
        qtbot.waitUntil(lambda: len(tokens) == 2)
        assert tokens[1] == "gnome-shell/trayvml/1234-5-host_TIME12"
        monkeypatch.setenv("XDG_ACTIVATION_TOKEN", "two\nlines")  # not a token: the window is still shown
        assert already_running(name)
        monkeypatch.delenv("XDG_ACTIVATION_TOKEN")
        qtbot.waitUntil(lambda: len(tokens) == 3)
        assert tokens[2] is None
    finally:
        server.close()


def test_connections_are_freed_when_their_peer_goes(qtbot, tmp_path: Path) -> None:
    name = str(tmp_path / "instance")
    server = listen(name, lambda: None)
    try:
        peers = []
        for count in range(1, 31):  # connections that never say anything
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.connect(name)
            peers.append(peer)
            # Accepted by the event loop (a blocking connect would wait once the backlog is full).
            qtbot.waitUntil(lambda n=count: len(server.connections) == n)  # type: ignore[attr-defined]
        for peer in peers:
            peer.close()
        qtbot.waitUntil(lambda: not server.connections)  # type: ignore[attr-defined]
    finally:
        server.close()
    assert not Path(name).exists()  # the socket goes with the server


def test_the_socket_is_closed_to_other_users(qtbot, tmp_path: Path) -> None:
    name = str(tmp_path / "instance")
    server = listen(name, lambda: None)
    try:
        assert stat.S_IMODE(os.stat(name).st_mode) == 0o600
    finally:
        server.close()


def test_the_app_does_not_load_qtnetwork() -> None:
    import subprocess
    import sys

    code = "import trayvml.ui.app, sys; print('PySide6.QtNetwork' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "False"  # 3-7 MiB that the idle tray does not need


def test_two_starts_close_together_make_one_instance(qtbot, tmp_path: Path) -> None:
    """Two starts (autostart and a click) both found nobody answering before either listened, and
    both ran; the second removed the first's socket, and whichever quit first the other's, so every
    later start made another tray. Now one claims the session; a start that finds it claimed waits
    for the holder to answer, and is told it was asked to show itself."""
    from trayvml.ui.instance import ANSWERED, SILENT, claim, release

    name = str(tmp_path / "instance-a")
    first, other = claim(name)
    assert first is not None and other == ""
    assert claim(name, wait_s=0.3) == (None, SILENT)  # still starting: not listening yet
    shown: list[int] = []
    server = listen(name, lambda: shown.append(1))
    try:
        assert claim(name, wait_s=5.0) == (None, ANSWERED)
        qtbot.waitUntil(lambda: shown == [1])
    finally:
        server.close()
        release(first)
    again, other = claim(name, wait_s=0.3)  # the first quit: the next start runs
    assert again is not None and other == ""
    release(again)


def test_a_trayvml_from_before_the_lock_is_asked_to_show_itself(qtbot, tmp_path: Path) -> None:
    """A trayvml started before the lock came holds none: the next start took the free lock, and
    listening removed the running one's socket (two trays)."""
    from trayvml.ui.instance import ANSWERED, claim

    name = str(tmp_path / "instance-a")
    shown: list[int] = []
    server = listen(name, lambda: shown.append(1))  # listening, no lock taken
    try:
        assert claim(name, wait_s=0.3) == (None, ANSWERED)
        qtbot.waitUntil(lambda: shown == [1])
    finally:
        server.close()
