"""The composition root: builds the app's objects once and wires them together."""

from __future__ import annotations

import ctypes
import getpass
import os
import signal
import sys
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QIcon
from PySide6.QtNetwork import QLocalServer, QLocalSocket
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from trayvml.assets import icon_paths
from trayvml.core.clock import Clock
from trayvml.core.sample import Sample
from trayvml.nvml.sim import SimSpec, parse_spec
from trayvml.ui.sampler import Sampler
from trayvml.ui.summary import SummaryWindow
from trayvml.ui.tray import Tray

if TYPE_CHECKING:
    from trayvml.history import History
    from trayvml.ui.window import GraphWindow

EXIT_NO_DISPLAY = 4
TRAY_WAIT_S = 10.0  # at login the panel may come up after us
TRAY_POLL_MS = 500
NO_DISPLAY_MESSAGE = (
    "trayvml needs a graphical desktop, and none was found (no DISPLAY or WAYLAND_DISPLAY that "
    "answers). In a terminal or over SSH, use `trayvml snapshot` or `trayvml log --csv FILE`."
)


def display_available() -> bool:
    """Whether a Qt window could open, checked without letting Qt abort the process."""
    if sys.platform in ("win32", "darwin"):
        return True
    if os.environ.get("QT_QPA_PLATFORM", "").startswith(("offscreen", "minimal", "vnc")):
        return True
    if os.environ.get("WAYLAND_DISPLAY"):
        return True
    display = os.environ.get("DISPLAY")
    if not display:
        return False
    try:
        xcb = ctypes.CDLL("libxcb.so.1")  # what Qt's xcb plugin links to
    except OSError:
        return True  # cannot check; let Qt try
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = xcb.xcb_connect(display.encode(), None)
    failed = xcb.xcb_connection_has_error(connection)
    xcb.xcb_disconnect(connection)
    return failed == 0


def instance_name() -> str:
    return f"trayvml-{getpass.getuser()}"


class App(QObject):
    """Everything the running app is made of; ``run_app`` builds one."""

    sample_shown = Signal(object)  # a Sample, after the tray and window have it

    def __init__(
        self,
        simulation: SimSpec | None,
        interval_s: float = 1.0,
        clock: Clock | None = None,
        tray_wait_s: float = TRAY_WAIT_S,
    ) -> None:
        super().__init__()
        self._history: History | None = None
        self.latest: Sample | None = None
        self.sampler = Sampler(simulation, interval_s, clock)
        self.sampler.sample_taken.connect(self.on_sample)
        self.tray = Tray()
        self.tray.show_window_requested.connect(self.show_window)
        self.tray.toggle_window_requested.connect(self.toggle_window)
        self.tray.simulation_requested.connect(lambda: self.sampler.use_simulation(parse_spec("training")))
        self.tray.quit_requested.connect(QApplication.quit)
        self.summary: SummaryWindow | None = None
        self.window: GraphWindow | None = None
        self._tray_wait_s = tray_wait_s
        self._waited_s = 0.0
        self._tray_timer = QTimer(self)
        self._tray_timer.setObjectName("tray_host_timer")
        self._tray_timer.timeout.connect(self._check_tray)

    @property
    def history(self) -> History:
        """Made on first use: numpy need not load before the tray icon shows."""
        if self._history is None:
            from trayvml.history import History

            self._history = History()
        return self._history

    def start(self) -> None:
        self.sampler.start()
        self._check_tray()
        self._tray_timer.start(TRAY_POLL_MS)

    def stop(self) -> None:
        self._tray_timer.stop()
        self.sampler.stop()

    # ---- tray host, or the summary window where there is none ----
    def _check_tray(self) -> None:
        """Poll for a tray host until one is found; Qt keeps the item registered after that."""
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray.icon.show()
            if self.summary is not None:
                self.summary.hide()  # a panel came up after all
            self._tray_timer.stop()
            return
        self._waited_s += TRAY_POLL_MS / 1000
        if self._waited_s >= self._tray_wait_s and (self.summary is None or not self.summary.isVisible()):
            self._show_summary()

    def _show_summary(self) -> None:
        if self.summary is None:
            self.summary = SummaryWindow()
            self.summary.show_graphs_requested.connect(lambda: self.show_window(-1))
            self.summary.quit_requested.connect(QApplication.quit)
            print(
                "trayvml: no system tray found; showing a summary window instead "
                "(on GNOME, the AppIndicator extension adds a tray).",
                file=sys.stderr,
            )
        self.summary.update_sample(self.latest)
        self.summary.show()

    # ---- samples ----
    def on_sample(self, sample: Sample) -> None:
        self.latest = sample
        self.history.append(sample)
        self.tray.update(sample)
        if self.summary is not None and self.summary.isVisible():
            self.summary.update_sample(sample)
        if self.window is not None:
            self.window.update_sample(sample)
        self.sample_shown.emit(sample)

    # ---- the graph window, built on first use (pyqtgraph is imported then, not at start) ----
    def ensure_window(self) -> GraphWindow:
        if self.window is None:
            from trayvml.ui.window import GraphWindow

            self.window = GraphWindow(self.history)
            if self.latest is not None:
                self.window.update_sample(self.latest)
        return self.window

    def show_window(self, gpu_index: int = -1) -> None:
        window = self.ensure_window()
        if gpu_index >= 0:
            window.focus_gpu(gpu_index)
        window.showNormal()
        window.raise_()
        window.activateWindow()

    def toggle_window(self) -> None:
        if self.window is not None and self.window.isVisible():
            self.window.hide()
        else:
            self.show_window()


def _already_running() -> bool:
    """Ask a running trayvml to show its window; True if one answered."""
    socket = QLocalSocket()
    socket.connectToServer(instance_name())
    if not socket.waitForConnected(500):
        return False
    socket.write(b"show\n")
    socket.flush()
    socket.waitForBytesWritten(500)
    socket.disconnectFromServer()
    return True


def _listen(app: App) -> QLocalServer:
    server = QLocalServer(app)
    QLocalServer.removeServer(instance_name())  # a stale socket from a crash
    server.listen(instance_name())

    def on_connection() -> None:
        connection = server.nextPendingConnection()

        def on_message() -> None:
            connection.readAll()  # any message means: show yourself
            app.show_window(-1)

        connection.readyRead.connect(on_message)

    server.newConnection.connect(on_connection)
    return server


def run_app(simulation: SimSpec | None, interval_s: float = 1.0) -> int:
    if not display_available():
        print(f"trayvml: {NO_DISPLAY_MESSAGE}", file=sys.stderr)
        return EXIT_NO_DISPLAY
    qt_app = QApplication(sys.argv[:1])
    qt_app.setApplicationName("trayvml")
    qt_app.setDesktopFileName("trayvml")
    qt_app.setQuitOnLastWindowClosed(False)
    icon = QIcon()
    for path in icon_paths():
        icon.addFile(str(path))
    qt_app.setWindowIcon(icon)
    if _already_running():
        print("trayvml is already running: its window was brought forward.", file=sys.stderr)
        return 0
    # At login the panel may come up after us; tests shorten the wait.
    tray_wait_s = float(os.environ.get("TRAYVML_TRAY_WAIT_S", TRAY_WAIT_S))
    app = App(simulation, interval_s, tray_wait_s=tray_wait_s)
    server = _listen(app)
    # Ctrl-C in the terminal: Python only sees the signal when it runs, so wake it up regularly.
    signal.signal(signal.SIGINT, lambda *_: qt_app.quit())
    wake = QTimer()
    wake.setObjectName("signal_wake_timer")
    wake.timeout.connect(lambda: None)
    wake.start(250)
    app.start()
    try:
        return qt_app.exec()
    finally:
        app.stop()
        server.close()
