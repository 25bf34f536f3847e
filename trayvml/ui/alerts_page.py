"""The Alerts page: every alert and its resolution, newest first; the same alerts mark the timelines.

It keeps the alerts of this machine and of every remote host (``AlertEvent.host``) and lists, and
marks, those of the host the window shows (``show_host``; "" is this machine).

An active "memory held, GPU idle" alert of this machine whose GPU holds a notebook kernel of the
user's own offers "Shut down kernel…" on its row (a button, and the row's right-click menu): the
way there where notifications have no actions (the tray's balloon), by the tray menu's "N active
alerts". It asks as the Processes tab does (trayvml.ui.processes.shut_down_kernel_asking).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QPoint, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QHeaderView, QMenu, QPushButton, QTableWidget, QTableWidgetItem

from trayvml.alerts.rules import AlertEvent
from trayvml.alerts.severity import Severity
from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.sample import ProcessSample
from trayvml.core.units import format_clock, short_name
from trayvml.host.attribution import KernelSession
from trayvml.ui import processes
from trayvml.ui.empty_note import EmptyNote
from trayvml.ui.gpu_colours import readable_on

translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)
MAX_LISTED_EVENTS = 1000
MAX_MARKERS = 50  # per timeline: more would hide the lines they mark
HEADERS = (
    QT_TRANSLATE_NOOP("AlertsPage", "Time"),
    QT_TRANSLATE_NOOP("AlertsPage", "GPU"),
    QT_TRANSLATE_NOOP("AlertsPage", "Severity"),
    QT_TRANSLATE_NOOP("AlertsPage", "What happened"),
    QT_TRANSLATE_NOOP("AlertsPage", "Action"),  # shown only while some row offers one
)
TIME, WHAT, ACTION = HEADERS.index("Time"), HEADERS.index("What happened"), HEADERS.index("Action")
HELD_IDLE = "memory_held_idle"
SEVERITY_WORDS = {
    Severity.INFO: QT_TRANSLATE_NOOP("AlertsPage", "info"),
    Severity.WARNING: QT_TRANSLATE_NOOP("AlertsPage", "warning"),
    Severity.CRITICAL: QT_TRANSLATE_NOOP("AlertsPage", "critical"),
}
SEVERITY_COLOURS = {Severity.INFO: "#4e79a7", Severity.WARNING: "#f5a524", Severity.CRITICAL: "#e5484d"}


class AlertsPage(QTableWidget):
    def __init__(self) -> None:
        super().__init__(0, len(HEADERS))
        self.setTabKeyNavigation(False)  # Tab leaves the table; arrow keys move between cells
        self.setAccessibleName(translate("AlertsPage", "Alerts"))
        self.setHorizontalHeaderLabels([translate("AlertsPage", h) for h in HEADERS])
        self.horizontalHeader().setSectionResizeMode(WHAT, QHeaderView.ResizeMode.Stretch)
        self.horizontalHeader().setSectionResizeMode(ACTION, QHeaderView.ResizeMode.ResizeToContents)
        # The date and time on one line (it wrapped onto two at the default width, at 200 % too).
        self.horizontalHeader().setSectionResizeMode(TIME, QHeaderView.ResizeMode.ResizeToContents)
        self.setColumnHidden(ACTION, True)
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.events: list[AlertEvent] = []  # every host's, oldest first, at most MAX_LISTED_EVENTS
        self.host = ""  # whose alerts are listed and marked: "" this machine, else a remote host's name
        self.empty_label = EmptyNote(
            translate("AlertsPage", "No alerts since trayvml started; the rules are in Settings."), self
        )
        self.empty_label.setObjectName("no_alerts")
        self.listed: list[AlertEvent] = []  # the rows' events, row 0 (the newest) first
        self.latest: dict[tuple[str, int, str], AlertEvent] = {}  # by (host, GPU, rule): active unless resolved
        # Set by the app (the local monitor's): this user's notebook kernels a held-idle alert
        # named on a GPU, and how long that GPU has been idle.
        self.kernel_offers: Callable[[int], tuple[ProcessSample, ...]] = lambda gpu: ()
        self.idle_for: processes.IdleFor = lambda gpu: (math.nan, False)
        self.ask: processes.Ask = processes.ask  # tests answer for the user
        self.tell: processes.Tell = processes.tell
        self.find_kernel: Callable[[int], KernelSession | None] = processes.own_kernel
        self.last_error = ""  # the last failure to shut a kernel down, as the user was told it
        self._done: set[tuple[float, int, int]] = set()  # (alert's time, GPU, PID) shut down: offered no more
        self.offered: dict[AlertEvent, tuple[ProcessSample, ...]] = {}  # the rows with a button, and their kernels
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        self._show_empty()

    def _show_empty(self) -> None:
        self.empty_label.setVisible(self.rowCount() == 0)

    def show_host(self, host: str) -> None:
        """List (and mark) the alerts of ``host`` only."""
        self.host = host
        self.setRowCount(0)  # their buttons with them
        self.listed, self.offered = [], {}
        self._list([e for e in self.events if e.host == host])
        self._show_empty()
        self.show_actions()

    def add_events(self, events: list[AlertEvent]) -> None:
        self.events += events
        self.latest.update(((e.host, e.gpu_index, e.rule), e) for e in events)
        self._list([e for e in events if e.host == self.host])
        if len(self.events) > MAX_LISTED_EVENTS:
            del self.events[: len(self.events) - MAX_LISTED_EVENTS]
        while self.rowCount() > MAX_LISTED_EVENTS:
            self.removeRow(self.rowCount() - 1)
        del self.listed[MAX_LISTED_EVENTS:]
        self._show_empty()
        self.show_actions()

    def _list(self, events: list[AlertEvent]) -> None:
        for event in events:
            row = 0  # newest first
            self.insertRow(row)
            self.listed.insert(0, event)
            when = format_clock(event.timestamp_s, date=True)
            resolved = event.kind == "resolved"
            label = (
                translate("AlertsPage", "resolved")
                if resolved
                else translate("AlertsPage", SEVERITY_WORDS[event.severity])
            )
            gpu = (
                f"{event.gpu_index} {short_name(event.gpu_name)}"
                if event.gpu_index >= 0
                else translate("AlertsPage", "all")
            )
            for column, text in enumerate((when, gpu, label, event.title, "")):
                self.setItem(row, column, QTableWidgetItem(text))
            self._colour(row)

    def _colour(self, row: int) -> None:
        """A firing event's row in its severity's colour, readable on the table's background."""
        event = self.listed[row]
        if event.kind == "resolved":
            return
        colour = readable_on(SEVERITY_COLOURS[event.severity], self.palette().color(QPalette.ColorRole.Base))
        for column in range(self.columnCount()):
            item = self.item(row, column)
            if item is not None:
                item.setForeground(colour)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            for row in range(self.rowCount()):
                self._colour(row)

    def markers(self, start_s: float, end_s: float, hidden_gpus: frozenset[int]) -> list[AlertEvent]:
        """The alerts to mark on timelines showing ``start_s``..``end_s``: the shown host's, not
        resolutions, not those of hidden GPUs (machine-wide ones always), the latest MAX_MARKERS."""
        return [
            e
            for e in self.events
            if e.host == self.host
            and start_s <= e.timestamp_s <= end_s
            and e.kind != "resolved"
            and e.gpu_index not in hidden_gpus
        ][-MAX_MARKERS:]

    def kernels_for(self, event: AlertEvent) -> tuple[ProcessSample, ...]:
        """The notebook kernels of this user's that ``event``'s row offers to shut down: only for
        this machine's held-idle alert still active (no later event of its GPU and rule)."""
        if event.rule != HELD_IDLE or event.host or event.kind == "resolved":
            return ()
        if self.latest.get((event.host, event.gpu_index, event.rule)) is not event:
            return ()
        offers = self.kernel_offers(event.gpu_index)
        return tuple(p for p in offers if (event.timestamp_s, p.gpu_index, p.pid) not in self._done)

    def show_actions(self) -> None:
        """A "Shut down kernel…" button on each row that offers one (see kernels_for). Called on
        each sample too: a held-idle alert names its kernels once the process lists are read."""
        wanted: dict[AlertEvent, tuple[ProcessSample, ...]] = {}
        if not self.host:
            for event in self.latest.values():
                kernels = self.kernels_for(event)
                if kernels and any(e is event for e in self.listed):
                    wanted[event] = kernels
        if wanted == self.offered:
            return
        # The rows' events, by identity (an event listed twice: its newest row).
        rows = {id(e): row for row, e in reversed(list(enumerate(self.listed)))}
        for event in self.offered.keys() - wanted.keys():
            if id(event) in rows:  # else its row has gone, and its button with it
                self.removeCellWidget(rows[id(event)], ACTION)
        for event in wanted.keys() - self.offered.keys():
            button = QPushButton(translate("AlertsPage", "Shut down kernel…"))
            button.setObjectName("shut_down_kernel")
            button.clicked.connect(lambda _=False, e=event: self.shut_down_kernels(e))
            self.setCellWidget(rows[id(event)], ACTION, button)
        self.offered = wanted
        self.setColumnHidden(ACTION, not wanted)

    def _menu(self, position: QPoint) -> None:
        index = self.indexAt(position)
        if not index.isValid() or index.row() >= len(self.listed):
            return
        event = self.listed[index.row()]
        kernels = self.kernels_for(event)
        if not kernels:
            return
        menu = QMenu(self)
        for process in kernels:
            action = menu.addAction(processes.kernel_action_text(process))
            action.triggered.connect(lambda _=False, p=process: self.shut_down_kernel(event, p))
        menu.exec(self.viewport().mapToGlobal(position))

    def shut_down_kernels(self, event: AlertEvent) -> int:
        """The row's button: each kernel it offers, each asked about; how many were shut down."""
        return sum(self.shut_down_kernel(event, process) for process in self.kernels_for(event))

    def shut_down_kernel(self, event: AlertEvent, process: ProcessSample) -> bool:
        """Asks, then shuts ``process``'s kernel down; True once its server has."""
        if process not in self.kernels_for(event):
            return False
        done, error = processes.shut_down_kernel_asking(
            self, process, self.idle_for(process.gpu_index), self.ask, self.tell, self.find_kernel
        )
        self.last_error = error or self.last_error
        if done:
            self._done.add((event.timestamp_s, process.gpu_index, process.pid))
            self.show_actions()
        return done
