"""Starting trayvml at login: an XDG autostart entry (Linux), the Run key (Windows), a LaunchAgent (macOS).

Each platform sits behind the same small interface; turning autostart off removes exactly what
turning it on added, and only if it is still ours.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Protocol

APP_ID = "trayvml"
MARKER = "X-Trayvml-Managed"
START_DELAY_S = 5  # lets the panel come up first; the app also waits for a tray host


def command(config_path: str | None = None) -> list[str]:
    """How to start this very installation of trayvml."""
    args = [sys.executable, "-m", "trayvml"]
    if config_path:
        args += ["--config", config_path]
    return args


class Autostart(Protocol):
    def enable(self, config_path: str | None = None) -> None: ...

    def disable(self) -> None: ...

    def is_enabled(self) -> bool: ...

    @property
    def location(self) -> str: ...


# ---- Linux and other freedesktop systems ----
def desktop_exec_quote(argument: str) -> str:
    """Quote one argument of a desktop entry's Exec key (Desktop Entry Specification, "The Exec key")."""
    needs_quotes = any(c in argument for c in " \t\n\"'\\><~|&;$*?#()`=")
    escaped = argument.replace("%", "%%")  # field codes start with %
    if not needs_quotes:
        return escaped
    for special in ("\\", '"', "`", "$"):
        escaped = escaped.replace(special, "\\" + special)
    return f'"{escaped}"'


def desktop_string(value: str) -> str:
    """A string key's value as the Desktop Entry Specification escapes it: a backslash as two, a
    line break, tab or carriage return as \\n, \\t, \\r (raw, desktop-file-validate refuses
    the file, and a line break would end the key)."""
    for raw, escaped in (("\\", "\\\\"), ("\n", "\\n"), ("\t", "\\t"), ("\r", "\\r")):
        value = value.replace(raw, escaped)
    return value


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "s": " ", "\\": "\\"}


def _unescaped(value: str) -> str:
    """A string key's value as desktop_string wrote it, read back."""
    return re.sub(r"\\(.)", lambda match: _ESCAPES.get(match.group(1), match.group(1)), value)


def desktop_entry(args: list[str]) -> str:
    exec_line = desktop_string(" ".join(desktop_exec_quote(a) for a in args))
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=trayvml\n"
        "GenericName=GPU Monitor\n"
        "Comment=Watch NVIDIA GPUs from the system tray\n"
        f"Exec={exec_line}\n"
        # Where its Python is gone (a virtual environment deleted, uvx's cache cleared), the
        # desktop leaves the entry alone, and status says it will not start.
        f"TryExec={desktop_string(args[0])}\n"
        "Icon=trayvml\n"
        "Terminal=false\n"
        "Categories=System;Monitor;\n"
        "X-GNOME-Autostart-enabled=true\n"
        f"X-GNOME-Autostart-Delay={START_DELAY_S}\n"
        f"{MARKER}=true\n"
    )


class XdgAutostart:
    def __init__(self, config_home: Path | None = None) -> None:
        given = os.environ.get("XDG_CONFIG_HOME", "").strip()
        # A relative XDG_CONFIG_HOME is invalid and to be ignored (XDG Base Directory Specification).
        base = config_home or (Path(given) if given and os.path.isabs(given) else Path.home() / ".config")
        self.path = base / "autostart" / f"{APP_ID}.desktop"

    @property
    def location(self) -> str:
        return str(self.path)

    def enable(self, config_path: str | None = None) -> None:
        from trayvml.config import write_atomically

        write_atomically(self.path, desktop_entry(command(config_path)).encode("utf-8"))

    def disable(self) -> None:
        if self._ours() is not None:
            self.path.unlink()

    def is_enabled(self) -> bool:
        """Whether trayvml starts at login: an entry of ours the desktop runs, whose Python exists."""
        keys = self._ours()
        if keys is None or keys.get("Hidden") == "true" or keys.get("X-GNOME-Autostart-enabled") == "false":
            return False
        try_exec = keys.get("TryExec", "")
        return not try_exec or os.access(_unescaped(try_exec), os.X_OK)

    def _ours(self) -> dict[str, str] | None:
        """The entry's keys where it is ours (its marker), else None."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        keys = dict(line.partition("=")[::2] for line in text.splitlines() if "=" in line)
        return keys if keys.get(MARKER) == "true" else None


# ---- Windows ----
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"


if sys.platform == "win32":  # winreg exists only there (mypy checks per platform too)

    class WindowsAutostart:  # pragma: no cover - needs Windows
        location = rf"HKEY_CURRENT_USER\{RUN_KEY}\{APP_ID}"

        def enable(self, config_path: str | None = None) -> None:
            import subprocess
            import winreg

            args = command(config_path)
            pythonw = Path(args[0]).with_name("pythonw.exe")
            if pythonw.exists():  # no console window at login
                args[0] = str(pythonw)
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
                winreg.SetValueEx(key, APP_ID, 0, winreg.REG_SZ, subprocess.list2cmdline(args))

        def disable(self) -> None:
            import winreg

            with (
                winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key,
                contextlib.suppress(FileNotFoundError),  # already off
            ):
                winreg.DeleteValue(key, APP_ID)

        def is_enabled(self) -> bool:
            import winreg

            try:
                with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
                    winreg.QueryValueEx(key, APP_ID)
            except FileNotFoundError:
                return False
            return True


# ---- macOS ----
class LaunchAgentAutostart:
    def __init__(self, home: Path | None = None) -> None:
        self.path = (home or Path.home()) / "Library" / "LaunchAgents" / f"io.github.{APP_ID}.plist"

    @property
    def location(self) -> str:
        return str(self.path)

    def enable(self, config_path: str | None = None) -> None:
        import plistlib  # macOS only: not loaded into the tray elsewhere (0.7 MiB with its XML parser)

        from trayvml.config import write_atomically

        plist = {
            "Label": f"io.github.{APP_ID}",
            "ProgramArguments": command(config_path),
            "RunAtLoad": True,
            "ProcessType": "Interactive",
            MARKER: True,
        }
        write_atomically(self.path, plistlib.dumps(plist))

    def disable(self) -> None:
        if self.is_enabled():
            self.path.unlink()

    def is_enabled(self) -> bool:
        import plistlib

        try:
            return bool(plistlib.loads(self.path.read_bytes()).get(MARKER))
        except (OSError, plistlib.InvalidFileException):
            return False


def for_this_platform() -> Autostart:
    if sys.platform == "win32":
        return WindowsAutostart()
    if sys.platform == "darwin":
        return LaunchAgentAutostart()
    return XdgAutostart()
