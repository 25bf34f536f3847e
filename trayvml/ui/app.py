"""The composition root: builds the app's objects once and wires them together."""

from __future__ import annotations

import ctypes
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

from trayvml.alerts.dispatch import KERNEL, Dispatcher
from trayvml.alerts.severity import Severity
from trayvml.assets import icon_paths, resource
from trayvml.config import Settings, SettingsModel, SettingsStore
from trayvml.core import i18n
from trayvml.core.clock import Clock, SystemClock
from trayvml.core.demand import EVERYTHING, HISTORY, PROCESSES, Demand, StoreLists
from trayvml.core.metrics import TRAY_METRICS
from trayvml.core.sample import DeviceInfo, Sample
from trayvml.history.disk.write import FLUSH_S
from trayvml.monitor.pipeline import Monitor, Outcome
from trayvml.nvml.sim import SimSpec, parse_spec
from trayvml.platform.autostart import Autostart, for_this_platform
from trayvml.ui.instance import ANSWERED, SILENT, claim, instance_name, listen, release
from trayvml.ui.main_thread import GuiThreadCollector, InterruptWaker
from trayvml.ui.sampler import Sampler, simulated_past
from trayvml.ui.summary import SummaryWindow
from trayvml.ui.translation import install_translators
from trayvml.ui.tray import Tray

if TYPE_CHECKING:
    from trayvml.alerts.engine import AlertEngine
    from trayvml.history.disk.recording import Recording
    from trayvml.history.rings import Tier
    from trayvml.history.timeline import DiskReach, History
    from trayvml.monitor.remotes import RemoteMonitors
    from trayvml.platform.notifiers import Notifier
    from trayvml.platform.push import PushNotifier
    from trayvml.prometheus.exposition import Exporter
    from trayvml.remote.source import Remotes
    from trayvml.ui.host_choice import HostChoice
    from trayvml.ui.remote_hosts import RemoteHostsView
    from trayvml.ui.settings_dialog import SettingsDialog
    from trayvml.ui.window import GraphWindow

EXIT_NO_DISPLAY = 4
TRAY_WAIT_S = 10.0  # at login the panel may come up after us
TRAY_POLL_MS = 500
REMOTE_QUIT_WAIT_S = 0.5  # quitting waits this long for a remote read in flight, then leaves it
# The remote hosts' reads are taken with each of this machine's samples; after this many intervals
# without one (a stuck driver; the sampling interval or the remote one, the shorter), by a timer.
REMOTE_ALONE_AFTER = 1.5
log = logging.getLogger(__name__)
NO_DISPLAY_MESSAGE = i18n.QT_TRANSLATE_NOOP(
    "App",
    "no graphical desktop was found (no DISPLAY or WAYLAND_DISPLAY that answers), and the tray app "
    "needs one. In a terminal or over SSH, use `trayvml snapshot` or `trayvml log --csv FILE`.",
)
# This machine's memory span while the history on disk is written: the 1 s and 5 s tiers
# (default_tiers) and the unpacked hour that the store's coarse tiers do not have yet. 12 h of 8 GPUs
# in memory is about 10 MiB (history/rings.py); 2 h is a sixth of its 30 s tier.
MEMORY_WITH_STORE_S = 2 * 3600.0
# While the window has not been opened, this machine keeps no history in memory (the store has it):
# only its samples of this long, which the writer may not have committed yet (it commits every
# FLUSH_S, and at each sample where samples are further apart), for the history made when the
# window opens. Monitor keeps the last few samples whatever their age.
RECENT_UNSTORED_S = 2 * FLUSH_S + 4.0
translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)


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


class App(QObject):
    """Everything the running app is made of; ``run_app`` builds one. It wires: the pipelines are
    the monitors' (trayvml.monitor), what is shown is the tray's, menus' and window's."""

    sample_shown = Signal(object)  # a Sample, after the tray and window have it
    notified = Signal(object)  # an AlertEvent that went out as a notification
    _action_received = Signal(str, int, str)  # from the notification listener thread
    _notifier_ready = Signal(object)  # from the thread that sets the notifier up
    _history_filled = Signal(object)  # a History, from the thread that read its past from the store

    def __init__(
        self,
        simulation: SimSpec | None,
        interval_s: float | None = None,
        clock: Clock | None = None,
        tray_wait_s: float = TRAY_WAIT_S,
        store: SettingsStore | None = None,
        autostart: Autostart | None = None,
        stored: tuple[Settings, str] | None = None,  # what store.load() gave, where the caller has read it
        history_folder: Path | None = None,  # the history on disk (trayvml/history/disk); None: memory only
        remote_urls: tuple[str, ...] = (),
    ) -> None:
        super().__init__()
        self.store = store
        self.history_folder = history_folder
        self._disk: DiskReach | None = None
        self._filling: History | None = None  # stands in for the history being filled (App.history)
        self._history_wanted = False  # made at the first sample (a store note came before it)
        self.store_note = ""
        self._store_lists = StoreLists()  # when the store last asked for the process lists
        if stored is None:
            stored = store.load() if store is not None else (Settings(), "")
        loaded, self.settings_message = stored
        if loaded.stand_in and history_folder is not None:
            from trayvml.history.disk.db import FILE_NAME  # (only here: sqlite3 is not for every start)

            # Whether the user keeps a history on disk is the unusable file's to say: where none is
            # kept yet, none is begun (their "off" was turned on); one kept goes on, pruned by nothing.
            if not (history_folder / FILE_NAME).exists():
                loaded = replace(loaded, history_on_disk=False)
        # With the store written (from this start on, as the setting says), memory need not hold
        # hours: ranges older than it are read from disk. A simulation's made-up past is not in the
        # store, so it keeps the whole span in memory.
        self._past_on_disk = (
            history_folder is not None
            and loaded.history_on_disk
            and simulated_past(simulation, MEMORY_WITH_STORE_S) is None
        )
        if interval_s is not None:  # --interval: in force, not saved until the settings are
            loaded = replace(loaded, sampling_interval_s=interval_s)
        self.model = SettingsModel(loaded, store)
        self._watch_settings()
        self.clock = clock
        self.notifier: Notifier | None = None  # what notices go to: the desktop's, and push destinations
        self._desktop_notifier: Notifier | None = None  # made on a thread of its own at start
        self.push: PushNotifier | None = None
        self._simulated = simulation is not None  # simulated GPUs' push failures are kept apart
        self.dispatcher = Dispatcher(clock or SystemClock(), notifications_on=self._notifications_wanted())
        # This machine's pipeline; process lists are read only while someone asks for them.
        self.local = Monitor(
            self.dispatcher,
            self.settings.alerts,
            self._new_local_history,
            processes_on_demand=True,
            past=self._past_from_store if self._past_on_disk else None,
            recent_s=RECENT_UNSTORED_S,
        )
        self.demand = Demand()
        self.autostart = autostart or for_this_platform()
        self.sampler = Sampler(
            simulation,
            self.settings.sampling_interval_s,
            clock,
            new_history=self._new_local_history,
            open_recording=self._open_recording if history_folder is not None else None,
        )
        self.sampler.store_noted.connect(self._store_noted)
        self.sampler.sample_taken.connect(self.on_sample)
        self.sampler.set_idle_poll(self.settings.idle_gpu_poll_s)
        self.sampler.history_backfilled.connect(self.use_past)
        self.tray = Tray(self.settings.tray_metric, self.engine)
        self.tray.hidden_gpus = set(self.settings.hidden_gpus)
        self.tray.autostart_action.setChecked(self.autostart.is_enabled())
        self.tray.autostart_action.toggled.connect(self.set_autostart)
        self.tray.settings_action.triggered.connect(self.show_settings)
        self._action_received.connect(self._on_action)
        self._notifier_ready.connect(self._use_notifier)
        self._history_filled.connect(self._use_filled_history)
        self.tray.pause_requested.connect(self.pause_notifications)
        self.settings_dialog: SettingsDialog | None = None
        self.tray.show_window_requested.connect(self.show_window)
        self.tray.show_alerts_requested.connect(self.show_alerts)
        self._balloon_is_alert = False  # the last tray balloon shown was an alert's
        self.tray.icon.messageClicked.connect(self._balloon_clicked)
        self.tray.toggle_window_requested.connect(self.toggle_window)
        self.tray.simulation_requested.connect(self.start_simulation)
        self.tray.quit_requested.connect(QApplication.quit)
        self.summary: SummaryWindow | None = None
        self.window: GraphWindow | None = None
        # How "Shut down kernel…" asks and tells: None is a dialog (tests answer for the user).
        self.ask_user: Callable[[QWidget | None, str], bool] | None = None
        self.tell_user: Callable[[QWidget | None, str], object] | None = None
        self._tray_wait_s = tray_wait_s
        self._waited_s = 0.0
        self._tray_timer = QTimer(self)
        self._tray_timer.setObjectName("tray_host_timer")
        self._tray_timer.timeout.connect(self._check_tray)
        self._remote_urls = remote_urls
        self._remote_timer = QTimer(self)
        self._remote_timer.setObjectName("remote_hosts_timer")
        self._remote_timer.timeout.connect(self.take_remote_samples)
        self._with_local_sample = False  # taking the remotes' reads within on_sample
        self.remotes: Remotes | None = None
        self.remote_monitors: RemoteMonitors | None = None
        self.remote_hosts: RemoteHostsView | None = None
        self._make_remote_hosts()
        # Opened, the menu shows the remote hosts' values: read now, not up to an interval (5 s) old.
        self.tray.menu.aboutToShow.connect(lambda: self.remotes.hurry() if self.remotes is not None else None)
        self.exporter: Exporter | None = None
        self.host_choice: HostChoice | None = None

    # ---- this machine's pipeline ----
    @property
    def engine(self) -> AlertEngine:
        return self.local.engine

    @property
    def latest(self) -> Sample | None:
        return self.local.latest

    @property
    def history(self) -> History:
        return self._local_history()

    def _local_history(self) -> History:
        """Made on first use: numpy need not load before the tray icon shows. With the store on, the
        first is filled from it on a thread of its own (two hours of 8 GPUs take about half a second
        to read, longer from a slow disk): until then an empty one stands in, and the window shows
        the filled one once it is ready."""
        if self._filling is not None:
            return self._filling
        started = self.local.start_history()
        if started is not None:
            # Not read from the store beyond memory: its rows are all still to come, and the
            # window would shade the whole range "not recording" meanwhile.
            self._filling = self._new_local_history()
            thread = threading.Thread(target=self._fill_history, args=started, name="trayvml-history-fill", daemon=True)
            try:
                thread.start()
            except RuntimeError:  # no thread to be had: read here (filled and shown at once)
                self._fill_history(*started)
                return self.local.history
            return self._filling
        history = self.local.history
        self._attach_disk(history)
        return history

    def _fill_history(self, history: History, before: Sample) -> None:
        """On its own thread: the store's past into ``history`` (read by nobody else until it is done)."""
        try:
            self._past_from_store(history, before)
        except Exception:  # a bug: the history starts where the kept samples do, the rest goes on
            log.exception("the history on disk could not be read into the timelines")
        finally:
            self._history_filled.emit(history)

    def _use_filled_history(self, history: History) -> None:
        self._filling = None
        self.local.finish_history(history)  # else one was made meanwhile: that one
        self._show_history(self.local.history)  # in place of the stand-in
        self._resize_history()  # the settings changed while it was read: made again, as they say

    # ---- the history on disk (issue 9) ----
    def _open_recording(self) -> Recording | None:
        """On the sampler thread: the store's writer (or a note that a recorder writes it)."""
        if self.history_folder is None or not self.settings.history_on_disk:
            return None
        from trayvml.history.disk.recording import Recording

        return Recording(self.history_folder, self.settings.history_limits)

    def _attach_disk(self, history: History) -> None:
        """Ranges older than memory are read from the store (on this, the GUI thread)."""
        if self.history_folder is None or not self.settings.history_on_disk or history.disk is not None:
            return
        if self._disk is None:
            from trayvml.history.timeline import DiskReach

            self._disk = DiskReach(self.history_folder)
        history.disk = self._disk

    def _store_noted(self, note: str) -> None:
        self.store_note = note
        if note:  # the store is not written by this app: memory keeps the timelines from now on
            if self.latest is not None:
                self._local_history()  # filled on a thread of its own from the samples kept
            else:  # the first sample, once here, starts that (else the store is read on this thread)
                self._history_wanted = True
        if self.window is not None:
            self.window.store_note = note

    def _new_history(self) -> History:
        """A remote host's timelines (nothing of theirs is on disk): the whole span in memory, a
        row each read."""
        from trayvml.history.timeline import History

        return History(self._remote_tiers())

    def _remote_tiers(self) -> tuple[Tier, ...]:
        return self._tiers(self.settings.history_hours * 3600.0, self.settings.remote_interval_s)

    def _tiers(self, span_s: float, interval_s: float) -> tuple[Tier, ...]:
        from trayvml.history.rings import default_tiers

        return default_tiers(span_s, interval_s)

    def _local_tiers(self) -> tuple[Tier, ...]:
        """This machine's timelines: with the store on, memory holds MEMORY_WITH_STORE_S and the
        window reads older ranges from disk (History.disk). The store's coarse tiers have no fresh
        hour (packed each UTC hour), so memory covers the hour being written and then some."""
        span_s = self.settings.history_hours * 3600.0
        span_s = min(span_s, MEMORY_WITH_STORE_S) if self._past_on_disk else span_s
        return self._tiers(span_s, self.settings.sampling_interval_s)

    def _new_local_history(self) -> History:
        from trayvml.history.timeline import History

        return History(self._local_tiers())

    def _past_from_store(self, history: History, before: Sample) -> None:
        """A new history of this machine begins with the store's last hours before ``before`` (the
        GPUs there are now, by UUID): after a restart, or once the window first opens."""
        from trayvml.history.disk.read import StoreReader
        from trayvml.history.timeline import backfill

        assert self.history_folder is not None  # else no past on disk
        reader = StoreReader(self.history_folder)
        try:
            backfill(history, reader, before, history.tiers[-1].span_s)
        finally:
            reader.close()

    def start(self) -> None:
        self._declare_demand()
        self.sampler.start()
        self._start_remotes()
        self._serve(self.settings.serve_metrics)
        self._use_push()
        self._check_tray()
        self._tray_timer.start(TRAY_POLL_MS)
        # Meeting the notification service takes a D-Bus round trip (or a service activation
        # timing out): never on the GUI thread.
        threading.Thread(
            target=lambda: self._notifier_ready.emit(self._make_notifier()), name="trayvml-notifier-setup", daemon=True
        ).start()
        if self.settings_message:  # a settings file was set aside: say so once
            print(f"trayvml: {self.settings_message}", file=sys.stderr)
            self._say(self.settings_message)

    def stop(self) -> None:
        # Gone from sight first: the store's close may wait seconds for its hourly packer, and an
        # icon or window that no longer answers meanwhile would look hung.
        self.tray.icon.hide()
        for shown in (self.window, self.summary):
            if shown is not None:
                shown.hide()
        self._stop_remotes()
        self._serve(False)
        self._tray_timer.stop()
        self.sampler.stop()
        for notifier in (self._desktop_notifier, self.push):
            if notifier is not None:
                notifier.close()

    # ---- alerts and notifications ----
    def _make_notifier(self) -> Notifier:
        from trayvml.platform.notifiers import notifier_for_desktop

        return notifier_for_desktop(
            lambda action, key: self._action_received.emit(action, key[0], key[1]),
            str(resource("trayvml-64.png")),
            self._show_alert_balloon,
            markup=self.tray.over_dbus,
        )

    def _use_push(self) -> None:
        """The push destinations in the settings, beside the desktop's notifier: the same notices
        reach a phone, a chat or a mailbox. Made again when the destinations change: the earlier
        one's queue goes out on its own thread (a destination that hangs, the one a user edits the
        settings to remove, froze the tray for its 15 s), and what it told carries over."""
        earlier, self.push = self.push, None
        if self.settings.push:
            from trayvml.platform.push import PushNotifier, default_status_file

            self.push = PushNotifier(
                self.settings.push, status_file=default_status_file(self._simulated), simulated=self._simulated
            )
            if earlier is not None:
                self.push.carry_over(earlier)
        if earlier is not None:
            earlier.close(wait_s=0.0)
        self._combine_notifiers()

    def _notifications_wanted(self) -> bool:
        """Whether alerts go anywhere: "Desktop notifications" off stops the desktop's alone, so
        push destinations still hear of them."""
        return self.settings.notifications or bool(self.settings.push)

    def _combine_notifiers(self) -> None:
        self.dispatcher.notifications_on = self._notifications_wanted()
        if self._desktop_notifier is None:
            return  # until the desktop's is ready, the dispatcher holds alerts back
        targets = [self._desktop_notifier] if self.settings.notifications else []
        if self.push is not None:
            targets.append(self.push)
        if len(targets) == 1:
            self.notifier = targets[0]
        else:  # both, or none (then the dispatcher sends nothing: notifications_on is off)
            from trayvml.platform.notifiers import FanOutNotifier

            self.notifier = FanOutNotifier(targets)

    def _use_notifier(self, notifier: Notifier) -> None:
        self._desktop_notifier = notifier
        self._combine_notifiers()
        held = self.dispatcher.notifier_ready()
        now_s = max((o.event.timestamp_s for o in held), default=0.0)
        for monitor in self._monitors():  # each host's held alerts, grouped as its own
            self._send(monitor.outcome([o for o in held if o.event.host == monitor.host], now_s))

    def _monitors(self) -> list[Monitor]:
        remote = list(self.remote_monitors.monitors.values()) if self.remote_monitors is not None else []
        return [self.local, *remote]

    def _send(self, outcome: Outcome) -> None:
        """What a tick let through, as notifications (grouped across GPUs by trayvml.alerts.grouping)."""
        if self.notifier is None:
            return  # held back by the dispatcher until there is one
        for notice in outcome.notices:
            log.info("notification %s: %s", notice.key[1], notice.shown_title())  # one per Notify call (-v)
            self.notifier.notify(notice)
        for sent in outcome.sent:
            self.notified.emit(sent.event)

    def pause_notifications(self, seconds: float) -> None:
        """Paused: the alert states go on, only the notifications stop (inf: until resumed; 0: resume)."""
        self.dispatcher.pause(seconds)
        self.tray.show_paused(self.dispatcher.paused)

    def _on_action(self, action: str, gpu: int, rule: str) -> None:
        gpus = self.local.members(gpu, rule)  # a grouped notification: its GPUs
        if action == "open":
            self.show_window(gpus[0] if len(gpus) == 1 else -1, this_machine=True)
        elif action == "snooze":
            for member in gpus:
                self.dispatcher.snooze(member, rule, host="")  # actions come from local notifications only
        elif action == KERNEL:
            self.shut_down_kernels(gpus)

    def shut_down_kernels(self, gpus: tuple[int, ...]) -> None:
        """The held-idle notification's "Shut down kernel…": each notebook kernel of this user's it
        named on ``gpus``, after asking (the notebook, the memory it holds, how long the GPU is idle)."""
        from trayvml.ui import processes

        ask, tell = self.ask_user or processes.ask, self.tell_user or processes.tell
        for gpu in gpus:
            for process in self.local.kernel_offers.get(gpu, ()):  # kept: a "no" may be asked again
                processes.shut_down_kernel_asking(None, process, self.local.idle_for_s(gpu), ask, tell)

    # ---- settings and autostart ----
    def show_settings(self) -> None:
        from trayvml.ui.settings_dialog import SettingsDialog

        devices = self.latest.devices if self.latest is not None else ()
        dialog = self.settings_dialog
        if dialog is not None and dialog.isVisible():
            dialog.raise_()  # open already: its edits stay (shown afresh, they were wiped)
            dialog.activateWindow()
            return
        if dialog is None or _gpus_of(dialog.devices) != _gpus_of(devices):
            # Made for the GPUs there are now: one made before the first reading, or before a MIG
            # instance came, offered no GPU to show or hide, nor one to override a rule on.
            if dialog is not None:
                dialog.deleteLater()
            dialog = self.settings_dialog = SettingsDialog(self.settings, devices)
            dialog.settings_applied.connect(self.apply_settings)
        else:
            dialog.show_settings(self.settings)
        dialog.show()
        dialog.raise_()

    @property
    def settings(self) -> Settings:
        return self.model.current

    def apply_settings(self, settings: Settings) -> None:
        """Changes take effect at once; no restart."""
        problem = self.model.change(settings)
        if problem:
            self._say(problem)

    def _watch_settings(self) -> None:
        """Who hears of which setting's change (each listener once per change)."""
        watch = self.model.on_change
        watch(("remote_hosts", "remote_interval_s"), lambda s: self._restart_remotes())
        watch("serve_metrics", lambda s: self._serve(s.serve_metrics))
        watch("alerts", self._alerts_changed)
        watch("notifications", lambda s: self._combine_notifiers())
        watch("push", lambda s: self._use_push())
        watch("sampling_interval_s", lambda s: self._sampling_interval_changed(s.sampling_interval_s))
        watch(("history_hours", "sampling_interval_s"), lambda s: self._resize_history())
        watch("history_hours", lambda s: self._resize_remote_histories())  # the interval restarts them
        watch("hidden_gpus", self._hidden_gpus_changed)
        watch("tray_metric", lambda s: self.tray.set_metric(s.tray_metric))
        watch("language", lambda s: self._say(translate("App", "trayvml speaks the new language from its next start.")))
        watch("idle_gpu_poll_s", lambda s: self.sampler.set_idle_poll(s.idle_gpu_poll_s))
        watch("start_at_login", self._start_at_login_changed)
        # The history on disk's spans and size cap apply from the next sample; keeping it on disk or
        # not from the next start (the store is opened once, on the sampler thread, and a recorder
        # may hold it).
        watch(
            ("history_fine_hours", "history_coarse_days", "history_size_mib", "process_history_per_gpu", "stand_in"),
            lambda s: self.sampler.set_store_limits(s.history_limits),
        )
        watch("history_on_disk", self._history_on_disk_changed)
        watch("icon_remote_hosts", lambda s: self._remote_hosts_changed())

    def _show_alert_balloon(self, title: str, body: str, severity: Severity) -> None:
        """An alert as a tray balloon, where no notification server answers."""
        icon = (
            QSystemTrayIcon.MessageIcon.Critical
            if severity is Severity.CRITICAL
            else QSystemTrayIcon.MessageIcon.Warning
        )
        self.tray.icon.showMessage(title, body, icon, 10_000)
        self._balloon_is_alert = True  # clicked, it opens the Alerts tab

    def _say(self, text: str) -> None:
        """A word from trayvml itself in a balloon (not an alert: clicking it opens nothing)."""
        self._balloon_is_alert = False
        self.tray.icon.showMessage("trayvml", text)

    def _balloon_clicked(self) -> None:
        """Where notifications are tray balloons (no actions), clicking an alert's opens the Alerts
        tab, the whole story, and where a held notebook kernel can be shut down."""
        if self._balloon_is_alert:
            self.show_alerts()

    def _alerts_changed(self, settings: Settings) -> None:
        self.local.configure(settings.alerts)
        if self.remote_monitors is not None:
            self.remote_monitors.configure(settings.alerts)
        self.tray.update(self.tray.sample)  # the icon's colours follow the levels

    def _hidden_gpus_changed(self, settings: Settings) -> None:
        self.tray.hidden_gpus = set(settings.hidden_gpus)
        self.tray.update(self.tray.sample)
        if self.window is not None:
            for gpu in range(self.window.gpu_count):
                self.window.set_gpu_visible(gpu, gpu not in settings.hidden_gpus)

    def _start_at_login_changed(self, settings: Settings) -> None:
        if settings.start_at_login != self.autostart.is_enabled():
            self.tray.autostart_action.setChecked(settings.start_at_login)  # toggles autostart

    def _history_on_disk_changed(self, settings: Settings) -> None:
        if settings.history_on_disk:
            self._say(translate("App", "trayvml keeps its history on disk from its next start."))
        else:
            self._say(translate("App", "trayvml stops keeping its history on disk at its next start."))

    # ---- remote hosts and serving (issue 10) ----
    def _make_remote_hosts(self) -> None:
        """The remotes' readers (off the GUI thread: trayvml.remote.source), their monitors, and their menu section."""
        if not self.settings.remote_hosts and not self._remote_urls:
            # None configured: their readers (HTTP, TLS, SSH) are not even imported, which the idle
            # tray's memory shows (benchmarks/README.md).
            self.remotes = self.remote_monitors = None
            if self.remote_hosts is not None:  # there were some: their section goes
                self.remote_hosts.show_hosts(False)
                self.remote_hosts.show([])
            return
        from trayvml.monitor.remotes import RemoteMonitors
        from trayvml.remote.source import Remotes
        from trayvml.ui.remote_hosts import RemoteHostsView, endpoints_from

        endpoints, problems = endpoints_from(self.settings.remote_hosts, self._remote_urls)
        for problem in problems:
            print(f"trayvml: {problem}", file=sys.stderr)
        self.remotes = Remotes(endpoints, self.settings.remote_interval_s)
        self.remotes.keep_backlog()  # a GUI thread held up (a window opening) takes the reads it missed
        self.remotes.keep_past(self.settings.history_hours * 3600.0)  # a Prometheus server's, for a new history
        if self.remote_monitors is None:
            self.remote_monitors = RemoteMonitors(
                self.dispatcher, self.settings.alerts, self._new_history, self.remotes.past_of
            )
        else:
            self.remote_monitors.keep_hosts_of({e.url for e in endpoints}, self.remotes.past_of)
            self._resize_remote_histories()
        if self.remote_hosts is None:
            self.remote_hosts = RemoteHostsView(self.tray.menu, self.tray.copy_action, self.tray.over_dbus)
            self.remote_hosts.changed.connect(self._remote_hosts_changed)
        self.remote_hosts.show_hosts(bool(endpoints))

    def _start_remotes(self) -> None:
        if self.remotes is not None and self.remotes.sources:
            self.remotes.start()
            # This machine's samples take the remotes' reads each tick (one update of the tray for
            # both); the timer takes them only where those stop coming (a stuck driver).
            self._remote_timer.start(self._remote_alone_ms())

    def _remote_alone_ms(self) -> int:
        """How long the remotes' reads wait for one of this machine's samples: REMOTE_ALONE_AFTER
        intervals, of whichever is read more often (this machine sampled every 30 s, a remote
        read each second had its reads shown 30 at a time, and more than BACKLOG_READS lost)."""
        interval_s = min(self.settings.sampling_interval_s, self.settings.remote_interval_s)
        return max(100, int(interval_s * 1000 * REMOTE_ALONE_AFTER))

    def _sampling_interval_changed(self, interval_s: float) -> None:
        self.sampler.set_interval(interval_s)
        if self._remote_timer.isActive():
            self._remote_timer.start(self._remote_alone_ms())

    def _stop_remotes(self) -> None:
        self._remote_timer.stop()
        if self.remotes is not None:
            # Quitting does not wait for a hung host: its daemon thread ends with the process.
            self.remotes.close(wait_s=REMOTE_QUIT_WAIT_S)

    def _restart_remotes(self) -> None:
        self._stop_remotes()
        self._make_remote_hosts()
        self._start_remotes()
        if self.host_choice is not None:  # a host gone shows this machine (one kept: _resize_remote_histories)
            self.host_choice.refresh_hosts()

    def _resize_remote_histories(self) -> None:
        """Each remote host's history made anew where its tiers (the length, the interval) changed:
        nothing of theirs is on disk to fill it from; their past starts again."""
        if self.remote_monitors is None:
            return
        tiers = self._remote_tiers()
        renewed = [host for host, monitor in self.remote_monitors.monitors.items() if monitor.history.tiers != tiers]
        for host in renewed:
            self.remote_monitors.renew_history(host, self._new_history())
        if renewed and self.host_choice is not None:  # the host shown: its new history
            self.host_choice.show_again()

    def take_remote_samples(self) -> None:
        """What the remote threads read last (never waits on a host): through each host's monitor,
        then shown."""
        if self.remotes is None or self.remote_monitors is None or self.remote_hosts is None:
            return
        samples = self.remotes.samples()
        fresh, outcome = self.remote_monitors.take(self.remotes.unseen())  # each read, in order: no gaps
        self.remote_hosts.show(samples)
        if self.host_choice is not None:
            # A host that stopped answering is shown so (its fault, no values) where it is chosen,
            # not left on screen with its last values as if live.
            newest = {**_hosts_down(samples), **{s.system.hostname if s.system else "": s for s in fresh}}
            for sample in newest.values():
                self.host_choice.remote_sampled(sample)
        if outcome.events and self.window is not None:
            self.window.add_events(outcome.events)  # listed and marked while that host is shown
        self._send(outcome)

    def _remote_hosts_changed(self) -> None:
        if self.remote_hosts is None:  # none configured
            self.tray.remote_lines, self.tray.remote_icon_samples = [], []
        else:
            from trayvml.ui.remote_hosts import in_icon

            self.tray.remote_lines = self.remote_hosts.lines
            self.tray.remote_icon_samples = in_icon(self.remote_hosts.samples, self.settings.icon_remote_hosts)
        if not self._with_local_sample:  # else the tray is updated with this machine's sample next
            self.tray.update(self.tray.sample)
        if self.host_choice is not None:
            self.host_choice.refresh_hosts()

    def _serve(self, on: bool) -> None:
        """Serve the samples the app takes on 127.0.0.1, as `trayvml serve`: every metric is read
        meanwhile (_declare_demand), from the next sample on."""
        if not on and self.exporter is not None:
            self.exporter.close()
            self.exporter = None
        elif on and self.exporter is None:
            # Imported only when serving: prometheus-client and its HTTP server cost the idle tray memory.
            from trayvml.core.errors import TrayvmlError
            from trayvml.prometheus import DEFAULT_ADDRESS, DEFAULT_PORT
            from trayvml.prometheus.exposition import Exporter

            try:
                self.exporter = Exporter(lambda: self.latest, DEFAULT_ADDRESS, DEFAULT_PORT)
            except TrayvmlError as error:
                self._say(translate("App", "Serving metrics: {error}").format(error=error))
        self._declare_demand()  # the next sample reads what is served (or no more than the rest needs)

    def _resize_history(self) -> None:
        # A new length means new rings: the timelines start again (the alert states do not), with
        # the store's past where it is kept. None made yet (the idle tray): the first is made so.
        # The same rings (with the store on memory holds 2 h however many hours the store keeps,
        # and samples faster than 1 s share 1 s rows): the history is kept, not read again.
        # While a history is read from the store its end calls this again (_use_filled_history).
        if not self.local.has_history or self.local.filling:
            return
        if self._local_tiers() == self.local.history.tiers:
            return
        # Refilled from the store on the fill thread, with the samples it may lack (a store this
        # app cannot write holds none of memory's last hours: lost as new rings would lose them).
        if self.local.drop_history():
            history = self._local_history()  # the window shows the old one until then
            if history is not self._filling:  # made here (no sample yet, or no thread): shown now
                self._show_history(history)
            return
        self._use_history(self._new_local_history())

    def _use_history(self, history: History) -> None:
        self._filling = None  # a history being filled meanwhile is let go when it is done
        self.local.history = history
        self._show_history(history)

    def _show_history(self, history: History) -> None:
        """``history`` is this machine's: read from the store beyond memory, and shown in the window."""
        self._attach_disk(history)
        if self.window is not None and (self.host_choice is None or not self.host_choice.host):
            self.window.history = history

    def use_past(self, past: History) -> None:
        """A simulation's made-up past, filled on the sampler thread before its first sample.

        It becomes the history only: the alerts, the tray and notifications never hear of it.
        """
        if self.history.latest_s == -math.inf and self.history.tiers == past.tiers:  # else settings changed
            self._use_history(past)

    def set_autostart(self, on: bool) -> None:
        try:
            if on:
                self.autostart.enable(self.store.path.as_posix() if self.store and self.store.custom else None)
            else:
                self.autostart.disable()
        except OSError as error:
            failed = translate("App", "Could not change {location}: {error}")
            self._say(failed.format(location=self.autostart.location, error=error.strerror))
        enabled = self.autostart.is_enabled()
        if enabled != self.settings.start_at_login:
            self.apply_settings(replace(self.settings, start_at_login=enabled))
        if self.tray.autostart_action.isChecked() != enabled:
            self.tray.autostart_action.setChecked(enabled)

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
            self.summary = SummaryWindow(self.engine)
            self.summary.show_graphs_requested.connect(lambda: self.show_window(-1))
            self.summary.quit_requested.connect(QApplication.quit)
            self.summary.add_app_menu(self.tray.app_menu(self.summary))
            print(
                translate(
                    "App",
                    "trayvml: no system tray found; showing a summary window instead "
                    "(on GNOME, the AppIndicator extension adds a tray).",
                ),
                file=sys.stderr,
            )
        self.summary.update_sample(self.latest)
        self.summary.show()

    # ---- samples ----
    def on_sample(self, sample: Sample) -> None:
        log.debug("sample at %.3f with %d GPU(s)", sample.timestamp_s, len(sample.gpus))
        outcome = self.local.take(sample)
        if self._history_wanted:
            self._history_wanted = False
            self._local_history()
        self._send(outcome)
        self._declare_demand()
        self.tray.show_paused(self.dispatcher.paused)  # a pause for an hour ends by itself
        if self._remote_timer.isActive():  # the remote hosts' latest reads, shown with this sample
            self._with_local_sample = True
            try:
                self.take_remote_samples()
            finally:
                self._with_local_sample = False
            self._remote_timer.start()  # from now: it fires only where this machine's samples stop
        self.tray.update(sample)
        if self.summary is not None and self.summary.isVisible():
            self.summary.update_sample(sample)
        if self.window is not None:
            # A destination that fails is said in the window's status line (and by `trayvml doctor`).
            self.window.push_note = "; ".join(self.push.problems()) if self.push is not None else ""
            self.window.add_events(outcome.events)
            if self.host_choice is None or not self.host_choice.host:  # else a remote host is shown
                self.window.update_sample(sample)
        self.sample_shown.emit(sample)

    def _declare_demand(self) -> None:
        """Tell the sampler what is looked at now: the idle tray reads no process lists."""
        demand = self.demand
        demand.need("history", HISTORY)  # what the tray, its tooltip and the alert rules read too
        demand.need("alerts", self.local.needs())
        demand.need("window", self.window.needs() if self.window is not None else ())
        demand.need("tray", {TRAY_METRICS[self.settings.tray_metric].metric})  # SM activity is not always read
        demand.need("store", {PROCESSES} if self._store_reads_processes() else ())
        # Serving, every metric as `trayvml serve` serves it: else a series came and went with the
        # window (a counter too), and a reader took each one missing for a metric not supported.
        demand.need("serve", EVERYTHING if self.exporter is not None else ())
        self.sampler.set_demand(demand.wanted)

    def _store_reads_processes(self) -> bool:
        """Whether the next sample reads the process lists for the history on disk: once every
        STORE_PROCESSES_S, not each second (a list costs milliseconds of driver time a GPU)."""
        settings = self.settings
        if self.history_folder is None or not settings.history_on_disk or settings.process_history_per_gpu <= 0:
            return False
        return self._store_lists.due(self.latest.timestamp_s if self.latest is not None else math.nan)

    # ---- the graph window, built on first use (pyqtgraph is imported then, not at start) ----
    def start_simulation(self) -> None:
        """No driver here: simulated GPUs instead (the tray's menu, the window's button), said as such."""
        self.sampler.use_simulation(parse_spec(""))
        self._simulated = True
        if self.push is not None:  # their alerts said so where they are pushed, their failures kept apart
            self._use_push()

    def ensure_window(self) -> GraphWindow:
        if self.window is None:
            from trayvml.ui.window import GraphWindow

            self.window = GraphWindow(self.history)
            self.window.stands_in = lambda history: history is self._filling
            self._window_shows(self.local)
            self.window.needs_changed.connect(self._declare_demand)
            self.window.simulation_requested.connect(self.start_simulation)
            self.window.add_app_menu(self.tray.app_menu(self.window))
            self.window.add_events(list(self.engine.events))
            if self.remote_monitors is not None:
                self.window.add_events(self.remote_monitors.events())  # listed while their host is chosen
            for gpu in self.settings.hidden_gpus:
                self.window.hidden_gpus.add(gpu)
            if self.latest is not None:
                self.window.update_sample(self.latest)
            from trayvml.ui.host_choice import HostChoice

            self.host_choice = HostChoice(self.window, self._host_view, self.remote_host_names)
        return self.window

    def _window_shows(self, monitor: Monitor) -> None:
        """The window's parts that read a host's monitor read ``monitor``'s: its processes' energy,
        its users, its idle GPUs, its asleep spans (this machine's are no remote host's)."""
        window = self.window
        assert window is not None
        window.process_view.processes.energy = monitor.energy
        window.process_tab.users = monitor.users
        window.process_view.idle_for = monitor.idle_for_s
        alerts = window.alert_table  # its held-idle rows offer the kernels the alert named
        alerts.kernel_offers = lambda gpu: monitor.kernel_offers.get(gpu, ())
        alerts.idle_for = monitor.idle_for_s
        window.asleep_spans = monitor.asleep_spans

    def _host_view(self, host: str) -> tuple[History, Sample | None]:
        """What the window shows for ``host`` ("": this machine): its history and latest sample,
        and its monitor's parts (_window_shows)."""
        monitors = self.remote_monitors.monitors if self.remote_monitors is not None else {}
        if not host or host not in monitors:
            self._window_shows(self.local)
            return self.history, self.latest
        self._window_shows(monitors[host])
        # Down now: its fault, not its last values (its monitor takes only the reads that answered).
        down = _hosts_down(self.remotes.samples()).get(host) if self.remotes is not None else None
        return monitors[host].history, down or monitors[host].latest

    def remote_host_names(self) -> list[str]:
        return sorted(self.remote_monitors.monitors) if self.remote_monitors is not None else []

    def show_window(self, gpu_index: int = -1, this_machine: bool = False) -> None:
        """The window; ``gpu_index``: this machine's GPU (a tray entry, a notification) shown alone;
        ``this_machine``: on this machine's GPUs (what the tray's alerts and notifications are of),
        whatever host was in view."""
        window = self.ensure_window()
        if gpu_index >= 0 or this_machine:
            assert self.host_choice is not None
            self.host_choice.choose("")  # this machine: a remote host in view has GPUs of that index too
        if gpu_index >= 0:
            window.focus_gpu(gpu_index)
        window.showNormal()
        window.raise_()
        window.activateWindow()

    def show_alerts(self) -> None:
        """The window on its Alerts tab (the tray menu's "N active alerts", this machine's: on a
        remote host in view it showed that host's alerts, none of those counted)."""
        window = self.ensure_window()
        window.tabs.setCurrentWidget(window.alert_table)
        self.show_window(this_machine=True)

    def toggle_window(self) -> None:
        if self.window is not None and self.window.isVisible():
            self.window.hide()
        else:
            self.show_window()


def _hosts_down(samples: list[Sample]) -> dict[str, Sample]:
    """The remote hosts not answering now, by host name, each with its sample saying why; a host
    read through two remotes, one of them down, answers through the other."""
    answering = {s.system.hostname for s in samples if s.gpus and s.system}
    down = (s for s in samples if not s.gpus)
    return {name: s for s in down if (name := s.system.hostname if s.system else "") not in answering}


def _gpus_of(devices: tuple[DeviceInfo, ...]) -> list[tuple[int, str]]:
    """Which GPUs these are, by index and UUID (their facts hold NaNs, which compare unequal)."""
    return [(info.index, info.uuid) for info in devices]


def run_app(
    simulation: SimSpec | None,
    interval_s: float | None = None,
    config_path: str | None = None,
    remote_urls: tuple[str, ...] = (),
) -> int:
    if not display_available():
        print(f"trayvml: {i18n.translate('App', NO_DISPLAY_MESSAGE)}", file=sys.stderr)
        return EXIT_NO_DISPLAY
    qt_app = QApplication(sys.argv[:1])
    qt_app.setApplicationName("trayvml")
    qt_app.setDesktopFileName("trayvml")
    qt_app.setQuitOnLastWindowClosed(False)
    store = SettingsStore(Path(config_path) if config_path else None)
    # The language is chosen once, before any text is made: the settings' override, else the system's.
    stored = store.load()  # once: a broken file is moved aside, and the App says so
    translators = install_translators(qt_app, i18n.resolve(stored[0].language))  # noqa: F841 - kept alive
    icon = QIcon()
    for path in icon_paths():
        icon.addFile(str(path))
    qt_app.setWindowIcon(icon)
    name = instance_name(store.path)
    lock, other = claim(name) if name is not None else (None, "")
    if other == ANSWERED:
        print(translate("App", "trayvml is already running: its window was brought forward."), file=sys.stderr)
        return 0
    if other == SILENT:
        print(translate("App", "Another trayvml is starting for this session and did not answer."), file=sys.stderr)
        return 1
    # At login the panel may come up after us; tests shorten the wait.
    tray_wait_s = float(os.environ.get("TRAYVML_TRAY_WAIT_S", TRAY_WAIT_S))
    from trayvml.history import default_folder

    app = App(
        simulation,
        interval_s,
        tray_wait_s=tray_wait_s,
        store=store,
        stored=stored,
        history_folder=default_folder(simulated=simulation is not None),
        remote_urls=remote_urls,
    )
    server = listen(name, lambda: app.show_window(-1), app) if name is not None else None
    # Ctrl-C in the terminal. Scheduled rather than called: one that comes before the event loop
    # runs still counts.
    signal.signal(signal.SIGINT, lambda *_: QTimer.singleShot(0, qt_app.quit))
    waker = InterruptWaker()
    collector = GuiThreadCollector()
    collector.start()  # first: the sampler's thread, started next, allocates at once
    app.start()
    try:
        return qt_app.exec()
    finally:
        app.stop()
        collector.stop()
        waker.close()
        if server is not None:
            server.close()
        release(lock)
