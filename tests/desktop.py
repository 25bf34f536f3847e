"""A real desktop on a virtual screen: Xvfb, a private D-Bus session, a tray host, dunst.

Used by the desktop tests and by scripts/screenshots. Start order and checks follow
shared/DESKTOP-TESTING.md: the tray host must be registered before the app creates its icon.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

SNI_TOOLS = ("Xvfb", "dbus-daemon", "gdbus", "status-notifier-watcher", "gtk-sni-tray-standalone", "import")
XEMBED_TOOLS = ("Xvfb", "dbus-daemon", "trayer", "import")
NOTIFY_TOOLS = ("dunst", "dunstctl")


def missing_tools(tray: str | None, notifications: bool) -> list[str]:
    needed = list(SNI_TOOLS if tray == "sni" else XEMBED_TOOLS if tray == "xembed" else ("Xvfb", "dbus-daemon"))
    if notifications:
        needed += NOTIFY_TOOLS
    return [tool for tool in needed if shutil.which(tool) is None]


def running_desktop(tray: str | None, notifications: bool) -> Iterator[DesktopStack]:
    """A started stack for a test: skipped with the reason where tools are missing, failed in CI."""
    import pytest

    missing = missing_tools(tray, notifications)
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"desktop tests must run in CI, but these are missing: {', '.join(missing)}")
        pytest.skip(f"needs {', '.join(missing)} (scripts/setup --test installs them)")
    stack = DesktopStack(tray, notifications).start()
    try:
        yield stack
    finally:
        stack.stop()


def wait_until(condition: Callable[[], bool], timeout_s: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")


class AppProcess:
    """trayvml started on ``stack`` as a user starts it, its stderr read as it comes.

    Tests wait on what the app says (``wait_for_log``; start it with ``-v`` or ``-vv``) rather than
    sleeping. Stopping it always collects its exit code and closes its pipes (an app that ended by
    itself too), and prints its stderr, which pytest shows when the test fails.
    """

    def __init__(
        self, stack: DesktopStack, *args: str, env: dict[str, str] | None = None, command: list[str] | None = None
    ) -> None:
        """``command``: how to start trayvml (a launcher's Exec line, say); by default this Python's."""
        self.stack = stack
        self.command = [*(command or [sys.executable, "-m", "trayvml"]), *args]
        self.process = subprocess.Popen(
            self.command,
            env={**stack.env, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, name="app-stderr", daemon=True)
        self._reader.start()
        self.stderr: str | None = None

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    def log_count(self, text: str) -> int:
        return sum(text in line for line in list(self.lines))

    def wait_for_log(self, text: str, count: int = 1, timeout_s: float = 30.0) -> None:
        """Until the app has said ``text`` ``count`` times in all."""
        wait_until(lambda: self.log_count(text) >= count, timeout_s=timeout_s, what=f"{count}× {text!r} on stderr")

    def stop(self, how: signal.Signals = signal.SIGINT) -> tuple[int, str]:
        if self.stderr is None:
            if self.process.poll() is None:
                self.process.send_signal(how)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self._reader.join(5)
            assert self.process.stderr is not None
            self.process.stderr.close()
            self.stderr = "".join(self.lines)
            if self.stderr:
                print(f"---- stderr of trayvml {self.command[3:]} ----\n{self.stderr}")
        return self.process.returncode, self.stderr


class DesktopStack:
    """``tray`` is "sni", "xembed" or None (a desktop with no tray at all)."""

    def __init__(
        self,
        tray: str | None = "sni",
        notifications: bool = True,
        size: str = "1280x800",
        scale: int = 1,
        tray_px: int = 30,
        tray_colour: str = "#2e3440",
    ) -> None:
        """``scale``: a HiDPI screen, as at 200 % (2): ``size`` in logical pixels, Qt, GTK and dunst scaled.
        ``tray_px``, ``tray_colour``: the SNI panel's height and colour (scripts/tray_screenshots.py)."""
        self.tray = tray
        self.tray_px = tray_px
        self.tray_colour = tray_colour
        self.notifications = notifications
        width, height = (int(n) * scale for n in size.split("x"))
        self.size = f"{width}x{height}"
        self.scale = scale
        self.env: dict[str, str] = {}
        self._processes: list[subprocess.Popen] = []
        self._dir = Path(tempfile.mkdtemp(prefix="trayvml-desktop-"))

    # ---- lifecycle ----
    def start(self) -> DesktopStack:
        read_fd, write_fd = os.pipe()
        # -noreset: without it the server resets whenever its last client leaves (each xwininfo on a
        # desktop with no tray host), and a client connecting meanwhile is refused (CI saw the app
        # fail "could not connect to display"; 4 in 300 connections here).
        xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{self.size}x24", "-nolisten", "tcp", "-noreset"],
            pass_fds=(write_fd,),
            stderr=subprocess.DEVNULL,
        )
        os.close(write_fd)
        self._processes.append(xvfb)
        with os.fdopen(read_fd) as display_pipe:
            display = display_pipe.readline().strip()
        runtime = self._dir / "runtime"
        runtime.mkdir(mode=0o700)
        self.env = {
            **os.environ,
            "DISPLAY": f":{display}",
            "XDG_RUNTIME_DIR": str(runtime),
            # Settings, history and caches of this desktop's own: outside pytest (the benchmarks) the
            # simulated history otherwise piled up in ~/.local/state, and the next run's window drew
            # the last one's samples and the gap since.
            "XDG_CONFIG_HOME": str(self._dir / "config"),
            "XDG_STATE_HOME": str(self._dir / "state"),
            "XDG_DATA_HOME": str(self._dir / "data"),
            "XDG_CACHE_HOME": str(self._dir / "cache"),
            "QT_QPA_PLATFORM": "xcb",
        }
        self.env.pop("WAYLAND_DISPLAY", None)
        if self.scale != 1:  # the app (Qt) and the tray host (GTK) both drawn at the screen's scale
            self.env.update(QT_SCALE_FACTOR=str(self.scale), GDK_SCALE=str(self.scale))
        bus = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
            stdout=subprocess.PIPE,
            text=True,
            env=self.env,
        )
        self._processes.append(bus)
        assert bus.stdout is not None
        self.env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().strip()
        if self.tray == "sni":
            self._spawn("status-notifier-watcher")
            wait_until(lambda: self._has_owner("org.kde.StatusNotifierWatcher"), what="the SNI watcher")
            size, colour = str(self.tray_px), self.tray_colour
            self._spawn("gtk-sni-tray-standalone", "--top", "--end", "--size", size, "--color", colour)
            wait_until(self._sni_host_registered, what="the SNI tray host")
        elif self.tray == "xembed":
            self._spawn(
                "trayer", "--edge", "top", "--align", "right", "--widthtype", "request", "--height", "28",
                "--transparent", "false", "--tint", "0x2e3440", "--SetDockType", "true",
            )  # fmt: skip
            time.sleep(1.0)  # trayer has no readiness signal; its manager selection appears within this
        if self.notifications:
            self._spawn("dunst", "-config", str(self._dunst_config()))
            # Asking dunstctl here would make D-Bus activate a second dunst that races this one.
            wait_until(lambda: self._has_owner("org.freedesktop.Notifications"), what="dunst")
        return self

    def stop(self) -> None:
        for process in reversed(self._processes):
            process.terminate()
        for process in reversed(self._processes):
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        self._processes.clear()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> DesktopStack:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # ---- helpers ----
    def _spawn(self, *command: str) -> subprocess.Popen:
        process = subprocess.Popen(command, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._processes.append(process)
        return process

    def _dunst_config(self) -> Path:
        path = self._dir / "dunstrc"
        path.write_text(
            textwrap.dedent(
                """\
                [global]
                    scale = {scale}
                    geometry = "400x5-20+40"
                    font = DejaVu Sans {points}
                    frame_width = 2
                    frame_color = "#76b900"
                    markup = full
                # Each urgency formats its message differently, so tests can read it from the history.
                [urgency_low]
                    format = "LOW: <b>%s</b>\\n%b"
                [urgency_normal]
                    format = "NORMAL: <b>%s</b>\\n%b"
                [urgency_critical]
                    format = "CRITICAL: <b>%s</b>\\n%b"
                    background = "#3b1f22"
                    foreground = "#ffffff"
                    frame_color = "#e5484d"
                    timeout = 0
                """
            )
            # dunst 1.9's `scale` scales sizes and offsets but not the text.
            .replace("{scale}", str(self.scale))
            .replace("{points}", str(10 * self.scale))
        )
        return path

    def run(self, *command: str, timeout: float = 10) -> subprocess.CompletedProcess:
        return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=timeout)

    def gdbus_call(self, destination: str, path: str, method: str, *args: str) -> str:
        target = ("--dest", destination, "--object-path", path, "--method", method)
        # "--" so that arguments such as -1 are not read as options
        result = self.run("gdbus", "call", "--session", *target, "--", *args)
        return result.stdout.strip() if result.returncode == 0 else ""

    def _has_owner(self, name: str) -> bool:
        reply = self.gdbus_call(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", name
        )
        return reply == "(true,)"

    def _sni_host_registered(self) -> bool:
        reply = self.gdbus_call(
            "org.kde.StatusNotifierWatcher",
            "/StatusNotifierWatcher",
            "org.freedesktop.DBus.Properties.Get",
            "org.kde.StatusNotifierWatcher",
            "IsStatusNotifierHostRegistered",
        )
        return "true" in reply

    def sni_items(self) -> list[str]:
        """The StatusNotifierItems registered with the watcher (their bus names)."""
        reply = self.gdbus_call(
            "org.kde.StatusNotifierWatcher",
            "/StatusNotifierWatcher",
            "org.freedesktop.DBus.Properties.Get",
            "org.kde.StatusNotifierWatcher",
            "RegisteredStatusNotifierItems",
        )
        return re.findall(r"'([^']+)'", reply)

    def item_property(self, service: str, name: str) -> str:
        """A property of a registered StatusNotifierItem (``ToolTip``, ``Status``, ``IconPixmap``…)."""
        bus_name, _, path = service.partition("/")
        return self.gdbus_call(
            bus_name,
            "/" + path if path else "/StatusNotifierItem",
            "org.freedesktop.DBus.Properties.Get",
            "org.kde.StatusNotifierItem",
            name,
        )

    def screenshot(self, path: str | Path, crop: str | None = None) -> Path:
        path = Path(path)
        result = self.run("import", "-window", "root", str(path))
        if result.returncode != 0:
            raise RuntimeError(f"screenshot failed: {result.stderr}")
        if crop:
            self.run("convert", str(path), "-crop", crop, "+repage", str(path))
        return path

    def dunst_history(self) -> list[dict]:
        """Closed notifications (dunst keeps only those in its history), newest first."""
        self.run("dunstctl", "close-all")
        time.sleep(0.3)  # dunst moves closed notifications into its history asynchronously
        reply = self.run("dunstctl", "history")
        data = json.loads(reply.stdout or '{"data": [[]]}')
        return [
            {key: entry[key]["data"] for key in entry if isinstance(entry[key], dict) and "data" in entry[key]}
            for entry in data["data"][0]
        ]
