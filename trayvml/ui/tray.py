"""The tray icon, its tooltip and its menu."""

from __future__ import annotations

import sys

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtGui import QAction, QGuiApplication, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon, QWidget

from trayvml.alerts.engine import AlertEngine, AlertSettings
from trayvml.core.errors import NotEnoughGpusError
from trayvml.core.lines import LastJobs, gpu_lines, simulation_text, tooltip
from trayvml.core.safe_text import menu_label
from trayvml.core.sample import Sample
from trayvml.pick import DEFAULT_MAX_UTIL, choose
from trayvml.ui.glance import content_for, steady
from trayvml.ui.icon import IconContent, draw_icon, drawn

ICON_SIZES = (16, 22, 24, 32, 48, 64)
translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)
PAUSE_1H_S = 3600.0


def make_icon(content: IconContent, device_pixel_ratio: float = 1.0) -> QIcon:
    icon = QIcon()
    for size in ICON_SIZES:
        icon.addPixmap(draw_icon(content, size, device_pixel_ratio))
    return icon


def tray_over_dbus() -> bool:
    """Whether Qt shows the tray item as a StatusNotifierItem, its menu going out over dbusmenu
    and its messages to the notification server. Qt decides so when it makes the first
    QSystemTrayIcon, by asking the StatusNotifierWatcher this same question."""
    if sys.platform in ("win32", "darwin"):
        return False
    from PySide6.QtDBus import QDBusConnection, QDBusInterface

    bus = QDBusConnection.sessionBus()
    if not bus.isConnected():
        return False
    name = "org.kde.StatusNotifierWatcher"
    watcher = QDBusInterface(name, "/StatusNotifierWatcher", name, bus)
    return watcher.isValid() and bool(watcher.property("IsStatusNotifierHostRegistered"))


class Tray(QObject):
    """The tray item. It redraws only when what it shows changed."""

    show_window_requested = Signal(int)  # a GPU index, or -1 for the window as it was
    show_alerts_requested = Signal()  # the window, on its Alerts tab
    toggle_window_requested = Signal()
    simulation_requested = Signal()
    pause_requested = Signal(float)  # seconds; inf: until resumed; 0: resume
    quit_requested = Signal()

    def __init__(self, metric: str = "utilization", engine: AlertEngine | None = None) -> None:
        super().__init__()
        self.metric = metric
        # Levels come from the alert engine's settings, so a change shows on the next sample.
        self.engine = engine or AlertEngine()
        self.hidden_gpus: set[int] = set()  # left out of the icon (the tooltip still lists them)
        self.sample: Sample | None = None
        self.jobs = LastJobs()  # each GPU's biggest job as last read, said with its age between readings
        self._content: IconContent | None = None
        self._contents = _Contents()
        self._lines: list[str] = []  # this machine's GPU lines, of the sample in _lines_of
        self._lines_of: Sample | None = None
        self._tooltip = ""
        self.remote_lines: list[str] = []  # remote hosts' tooltip lines (trayvml.ui.remote_hosts)
        # The alert settings remote GPUs are coloured by (this machine's, without its per-GPU overrides).
        self._remote_alerts: tuple[AlertSettings, AlertSettings] | None = None
        self.remote_icon_samples: list[Sample] = []  # remote hosts the icon summarises too
        self._menu_shape: tuple[object, ...] | None = None
        self.redraws = 0
        self.over_dbus = tray_over_dbus()  # menu labels are escaped for where they are shown
        self.icon = QSystemTrayIcon()
        self.icon.setObjectName("trayvml_tray")
        self.menu = QMenu()
        self._build_menu()
        self.icon.setContextMenu(self.menu)
        self.menu.aboutToShow.connect(self._refresh_menu)
        self.icon.activated.connect(self._activated)
        self.update(None)

    # ---- menu ----
    def _build_menu(self) -> None:
        m = self.menu
        self.show_action = m.addAction(translate("Tray", "Show graphs"), lambda: self.show_window_requested.emit(-1))
        font = self.show_action.font()
        font.setBold(True)
        self.show_action.setFont(font)
        m.addSeparator()
        self.status_action = m.addAction(translate("Tray", "Starting…"))
        self.status_action.setEnabled(False)
        self.gpu_actions: list[QAction] = []
        self._gpu_anchor = m.addSeparator()
        # Only while some alert is active: the way from the menu to what is wrong, and why.
        self.alerts_action = m.addAction("", self.show_alerts_requested.emit)
        self.alerts_action.setVisible(False)
        self.copy_action = m.addAction(self._label(translate("Tray", "Copy CUDA_VISIBLE_DEVICES")), self._copy_freest)
        self.simulate_action = m.addAction(
            translate("Tray", "Start with simulated GPUs"), self.simulation_requested.emit
        )
        self.simulate_action.setVisible(False)
        pause = m.addMenu(translate("Tray", "Pause alerts"))
        self.pause_hour_action = pause.addAction(
            translate("Tray", "For 1 hour"), lambda: self.pause_requested.emit(PAUSE_1H_S)
        )
        self.pause_forever_action = pause.addAction(
            translate("Tray", "Until resumed"), lambda: self.pause_requested.emit(float("inf"))
        )
        self.resume_action = pause.addAction(translate("Tray", "Resume alerts"), lambda: self.pause_requested.emit(0.0))
        self.resume_action.setEnabled(False)
        self.pause_menu = pause
        self.autostart_action = m.addAction(translate("Tray", "Start at login"))
        self.autostart_action.setCheckable(True)
        self.settings_action = m.addAction(translate("Tray", "Settings…"))
        m.addSeparator()
        m.addAction(translate("Tray", "Quit"), self.quit_requested.emit)

    def app_menu(self, parent: QWidget) -> QMenu:
        """Pause alerts, Start at login and Settings for a window of ``parent``'s: the same actions
        as the tray menu's, for desktops without a tray menu (GNOME without AppIndicator)."""
        menu = QMenu(parent)
        menu.setObjectName("app_menu")
        menu.addMenu(self.pause_menu)
        menu.addAction(self.autostart_action)
        menu.addAction(self.settings_action)
        return menu

    def _label(self, text: str) -> str:
        """A menu entry's text that shows ``text`` as it is (GPU names come from the driver)."""
        return menu_label(text, self.over_dbus)

    def show_paused(self, paused: bool) -> None:
        """The menu says whether notifications are paused (the app's dispatcher decides)."""
        self.resume_action.setEnabled(paused)
        self.pause_menu.setTitle(translate("Tray", "Alerts paused") if paused else translate("Tray", "Pause alerts"))

    def _copy_freest(self) -> None:
        text = self.freest_text()
        if text:
            QGuiApplication.clipboard().setText(text)

    def freest(self) -> tuple[int, str]:
        """(The GPU `trayvml pick` would hand out now, -1 where none; the sentence saying why none,
        or ""). As pick chooses: a GPU more than half busy does not qualify (the menu copied a busy
        GPU's index where pick said that none was free)."""
        if self.sample is None or not self.sample.gpus:
            return -1, ""
        try:
            return choose(self.sample, 1, "memory", max_util=DEFAULT_MAX_UTIL)[0], ""
        except NotEnoughGpusError as none:
            return -1, str(none)

    def freest_text(self) -> str:
        """What the menu copies for the freest GPU: its UUID, which CUDA takes whatever order it
        numbers GPUs in (its index is NVML's, CUDA's only with CUDA_DEVICE_ORDER=PCI_BUS_ID), and
        the only name it takes for a MIG device; its index with that order set where no UUID was read."""
        index, _ = self.freest()
        if index < 0 or self.sample is None:
            return ""
        uuid = next((d.uuid for d in self.sample.devices if d.index == index), "")
        return f"CUDA_VISIBLE_DEVICES={uuid}" if uuid else f"CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={index}"

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.toggle_window_requested.emit()

    # ---- updates ----
    def update(self, sample: Sample | None) -> None:
        """Show ``sample`` (this machine's) with the remote hosts' as they are now: called on each
        of this machine's samples and on each round of remote reads, so whichever did not change
        is the same object as last time, and what was made of it is kept."""
        new = sample is not self.sample or self._lines_of is not sample
        self.sample = sample
        content = self._contents.of(sample, self.metric, self.hidden_gpus, self.engine.settings)
        if self.remote_icon_samples:
            from trayvml.monitor.remotes import remote_alert_settings
            from trayvml.ui.remote_hosts import with_remote_bars

            if self._remote_alerts is None or self._remote_alerts[0] is not self.engine.settings:
                # Made once a change: the icon's contents are kept by the settings they were made with.
                self._remote_alerts = (self.engine.settings, remote_alert_settings(self.engine.settings))
            remote_alerts = self._remote_alerts[1]

            def content_of(remote: Sample) -> IconContent:
                return self._contents.of(remote, self.metric, set(), remote_alerts)

            content = with_remote_bars(content, self.remote_icon_samples, content_of)
        self._contents.done()
        content = steady(content, self._content)
        if content != self._content:
            if self._content is None or drawn(content) != drawn(self._content):
                self.icon.setIcon(make_icon(content, self._device_pixel_ratio()))
                self.redraws += 1
            self._content = content
        if new:
            self.jobs.note(sample)
            self._lines, self._lines_of = gpu_lines(sample), sample
        lines = self._lines
        # Its first line says what the icon's number is (and of which GPU), in the words of its unit.
        headline = self._content.headline if self._content is not None else None
        text = "\n".join([tooltip(sample, lines, headline, self.jobs), *self.remote_lines])
        if text != self._tooltip:
            self._tooltip = text
            self.icon.setToolTip(text)
        # The menu's live texts are made when it is about to be shown: rewriting them on every sample
        # sent each change to the tray host over D-Bus although nobody had the menu open. Its shape
        # (which entries there are) follows at once: a host measures the menu before it asks for
        # texts, and would draw entries that appear only then cut off.
        shape = _menu_shape(sample, self.engine.active(), self.jobs)
        if self.menu.isVisible() or shape != self._menu_shape:  # open (Qt's own menu): follow live
            self._menu_shape = shape
            self._update_menu(sample)

    def _refresh_menu(self) -> None:
        self._update_menu(self.sample)

    def set_metric(self, metric: str) -> None:
        self.metric = metric
        self.update(self.sample)

    def _device_pixel_ratio(self) -> float:
        screen = QGuiApplication.primaryScreen()
        return screen.devicePixelRatio() if screen else 1.0

    def _update_menu(self, sample: Sample | None) -> None:
        gpus = sample.gpus if sample else ()
        active = self.engine.active()
        if active:
            many = translate("Tray", "{count} active alerts").format(count=active)
            self.alerts_action.setText(translate("Tray", "1 active alert") if active == 1 else many)
        self.alerts_action.setVisible(active > 0)
        while len(self.gpu_actions) < len(gpus):
            index = len(self.gpu_actions)
            action = QAction(self.menu)
            action.triggered.connect(lambda _=False, i=index: self.show_window_requested.emit(i))
            self.menu.insertAction(self._gpu_anchor, action)
            self.gpu_actions.append(action)
        for k, action in enumerate(self.gpu_actions):
            action.setVisible(k < len(gpus))
        if sample is None:
            return
        # Compact rows: a host cuts a wide menu at the screen's edge; the tooltip has the whole line.
        for gpu, line, action in zip(sample.gpus, gpu_lines(sample, compact=True), self.gpu_actions, strict=False):
            # The biggest job's name: read in this sample, or earlier and said with its age.
            job = self.jobs.line(gpu, sample.timestamp_s, compact=True)
            action.setText(self._label(f"{line} · {job}" if job else line))
        problem = sample.problem
        status = problem[0] if problem else simulation_text(sample)
        self.status_action.setText(self._label(status))
        self.status_action.setToolTip(problem[1] if problem else "")
        self.status_action.setVisible(bool(status))
        self.simulate_action.setVisible(sample.offers_simulation)
        index, why_none = self.freest()
        copy = (
            translate("Tray", "Copy CUDA_VISIBLE_DEVICES for GPU {index}").format(index=index)
            if index >= 0
            else translate("Tray", "Copy CUDA_VISIBLE_DEVICES")
        )
        self.copy_action.setText(self._label(copy))
        self.copy_action.setToolTip(why_none)
        self.copy_action.setEnabled(index >= 0)


def _menu_shape(sample: Sample | None, active_alerts: int, jobs: LastJobs) -> tuple[object, ...] | None:
    """What decides the menu's entries and their widths: how many GPUs, the status line's headline,
    whether alerts are active, each GPU row's job name (a job named after the menu was measured
    was cut off at its old width: "container 3f")."""
    if sample is None:
        return None
    problem = sample.problem
    names = tuple(jobs.menu_name(gpu, sample.timestamp_s) for gpu in sample.gpus)
    return len(sample.gpus), problem[0] if problem else sample.simulation, active_alerts > 0, names


class _Contents:
    """What the icon makes of each sample it shows (``content_for``), kept while the same sample
    object is shown again with the same metric, hidden GPUs and alert settings."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[Sample | None, str, frozenset[int], AlertSettings, IconContent]] = {}
        self._used: dict[int, tuple[Sample | None, str, frozenset[int], AlertSettings, IconContent]] = {}

    def of(self, sample: Sample | None, metric: str, hidden: set[int], alerts: AlertSettings) -> IconContent:
        hidden_now = frozenset(hidden)
        kept = self._kept.get(id(sample))
        if kept is not None and kept[0] is sample and kept[1] == metric and kept[2] == hidden_now and kept[3] is alerts:
            content = kept[4]
        else:
            content = content_for(sample, metric, hidden, alerts)
        self._used[id(sample)] = (sample, metric, hidden_now, alerts, content)
        return content

    def done(self) -> None:
        """The samples used since the last call are the ones kept (the others are not shown any more)."""
        self._kept, self._used = self._used, {}
