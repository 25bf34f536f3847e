"""Autostart at login: a valid XDG entry whose Exec line survives any path; off removes only ours."""

from __future__ import annotations

import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trayvml.cli import main
from trayvml.platform.autostart import MARKER, LaunchAgentAutostart, XdgAutostart, desktop_entry


def parse_exec(value: str) -> list[str]:
    """Decode an Exec value as the Desktop Entry Specification says a launcher must."""
    unescaped, k = [], 0
    while k < len(value):  # first the general string escapes
        if value[k] == "\\" and k + 1 < len(value):
            unescaped.append(
                {"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}.get(value[k + 1], "\\" + value[k + 1])
            )
            k += 2
        else:
            unescaped.append(value[k])
            k += 1
    text = "".join(unescaped)
    args, current, quoted, k, started = [], [], False, 0, False
    while k < len(text):  # then the quoting rules of the Exec key
        c = text[k]
        if quoted and c == "\\" and k + 1 < len(text) and text[k + 1] in '"`$\\':
            current.append(text[k + 1])
            k += 2
            continue
        if c == '"':
            quoted, started = not quoted, True
        elif c == " " and not quoted:
            if current or started:
                args.append("".join(current))
            current, started = [], False
        else:
            current.append(c)
        k += 1
    if current or started:
        args.append("".join(current))
    return [a.replace("%%", "%") for a in args]


NASTY = ['/opt/my tools/it\'s "quoted"/py$thon`x`\\bin/python3', "-m", "trayvml", "--config", "/tmp/a b/100%.toml"]


def test_exec_line_survives_spaces_quotes_and_specials() -> None:
    entry = desktop_entry(NASTY)
    exec_value = next(line for line in entry.splitlines() if line.startswith("Exec="))[len("Exec=") :]
    assert parse_exec(exec_value) == NASTY


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="needs desktop-file-utils")
def test_the_entry_validates(tmp_path: Path) -> None:
    path = tmp_path / "trayvml.desktop"
    path.write_text(desktop_entry(NASTY))
    result = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == "", result.stdout


def test_on_off_status_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    entry = tmp_path / "autostart" / "trayvml.desktop"
    assert main(["autostart", "status"]) == 0
    assert "Start at login is off" in capsys.readouterr().out
    assert main(["autostart", "on"]) == 0
    assert "Start at login is on" in capsys.readouterr().out
    text = entry.read_text()
    assert "X-GNOME-Autostart-Delay=" in text and f"{MARKER}=true" in text
    assert parse_exec(text.split("Exec=")[1].splitlines()[0])[:3] == [sys.executable, "-m", "trayvml"]
    if shutil.which("desktop-file-validate"):
        assert subprocess.run(["desktop-file-validate", str(entry)], capture_output=True).returncode == 0
    assert main(["autostart", "off"]) == 0
    assert not entry.exists() and entry.parent.exists()  # only what was added is gone


def test_off_leaves_an_entry_that_is_not_ours(tmp_path: Path) -> None:
    autostart = XdgAutostart(tmp_path)
    autostart.path.parent.mkdir(parents=True)
    autostart.path.write_text("[Desktop Entry]\nType=Application\nName=mine\nExec=trayvml --mine\n")
    assert not autostart.is_enabled()
    autostart.disable()
    assert autostart.path.exists()


def test_macos_launch_agent_round_trip(tmp_path: Path) -> None:
    agent = LaunchAgentAutostart(tmp_path)
    agent.enable("/tmp/c.toml")
    plist = plistlib.loads(agent.path.read_bytes())
    assert plist["ProgramArguments"][-2:] == ["--config", "/tmp/c.toml"] and plist["RunAtLoad"] is True
    assert agent.is_enabled()
    agent.disable()
    assert not agent.path.exists()


def test_a_read_only_config_folder_is_a_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "autostart"
    blocker.write_text("not a folder")  # makes the autostart folder impossible to create
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "trayvml", "autostart", "on"], capture_output=True, text=True)
    assert result.returncode == 2 and "Could not change" in result.stderr and "Traceback" not in result.stderr


def test_tabs_and_line_breaks_in_a_path_are_escaped_and_the_entry_still_validates(tmp_path: Path) -> None:
    """A tab or line break in a path was written raw: desktop-file-validate refused the entry
    ("contains invalid characters"), and a line break ended the Exec key early."""
    odd = ["/opt/tab\there/python3", "-m", "trayvml", "--config", "/tmp/line\nbreak.toml"]
    entry = desktop_entry(odd)
    exec_value = next(line for line in entry.splitlines() if line.startswith("Exec="))[len("Exec=") :]
    assert parse_exec(exec_value) == odd and "\t" not in entry and entry.count("\n") == len(entry.splitlines())
    if shutil.which("desktop-file-validate"):
        path = tmp_path / "trayvml.desktop"
        path.write_text(entry)
        result = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True)
        assert result.returncode == 0 and result.stdout == "", result.stdout


def test_an_entry_that_will_not_start_is_not_said_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Autostart turned on from a virtual environment since deleted (uvx's cache cleared), or the
    entry hidden by the desktop's settings: "Start at login is on" while nothing started."""
    autostart = XdgAutostart(tmp_path)
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    python = venv / "python"
    python.symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(python))
    autostart.enable()
    assert autostart.is_enabled()
    shutil.rmtree(tmp_path / "venv")
    assert not autostart.is_enabled()
    autostart.enable()  # on again: from the Python running now
    assert not autostart.is_enabled()  # (still the deleted one: sys.executable is patched)
    monkeypatch.undo()
    autostart.enable()
    assert autostart.is_enabled()
    autostart.path.write_text(autostart.path.read_text().replace("X-GNOME-Autostart-enabled=true", "Hidden=true"))
    assert not autostart.is_enabled()
    autostart.disable()  # still ours: removed
    assert not autostart.path.exists()


def test_a_relative_xdg_config_home_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The XDG Base Directory Specification: a relative path is invalid and to be ignored. The entry
    was written under the current folder (and " " under a folder named by a space)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for given in ("relcfg", " "):
        monkeypatch.setenv("XDG_CONFIG_HOME", given)
        assert XdgAutostart().path == tmp_path / ".config" / "autostart" / "trayvml.desktop"
