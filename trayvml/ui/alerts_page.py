"""The Alerts page: every alert and its resolution, newest first; the same alerts mark the timelines.

It keeps the alerts of this machine and of every remote host (``AlertEvent.host``) and lists, and
marks, those of the host the window shows (``show_host``; "" is this machine).
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QColor, QResizeEvent
from PySide6.QtWidgets import QLabel, QTableWidget, QTableWidgetItem

from trayvml.alerts.rules import AlertEvent
from trayvml.alerts.severity import Severity
from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.units import format_clock, short_name

translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)
MAX_LISTED_EVENTS = 1000
MAX_MARKERS = 50  # per timeline: more would hide the lines they mark
HEADERS = (
    QT_TRANSLATE_NOOP("AlertsPage", "Time"),
    QT_TRANSLATE_NOOP("AlertsPage", "GPU"),
    QT_TRANSLATE_NOOP("AlertsPage", "Severity"),
    QT_TRANSLATE_NOOP("AlertsPage", "What happened"),
)
SEVERITY_WORDS = {
    Severity.INFO: QT_TRANSLATE_NOOP("AlertsPage", "info"),
    Severity.WARNING: QT_TRANSLATE_NOOP("AlertsPage", "warning"),
    Severity.CRITICAL: QT_TRANSLATE_NOOP("AlertsPage", "critical"),
}
SEVERITY_COLOURS = {Severity.INFO: "#4e79a7", Severity.WARNING: "#f5a524", Severity.CRITICAL: "#e5484d"}


class AlertsPage(QTableWidget):
    def __init__(self) -> None:
        super().__init__(0, 4)
        self.setHorizontalHeaderLabels([translate("AlertsPage", h) for h in HEADERS])
        self.horizontalHeader().setStretchLastSection(True)
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.events: list[AlertEvent] = []  # every host's, oldest first, at most MAX_LISTED_EVENTS
        self.host = ""  # whose alerts are listed and marked: "" this machine, else a remote host's name
        # An empty table read as "broken" or "not loaded yet": with no rows, a sentence says why.
        self.empty_label = QLabel(
            translate("AlertsPage", "No alerts since trayvml started; the rules are in Settings."), self.viewport()
        )
        self.empty_label.setObjectName("no_alerts")
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self.empty_label.setStyleSheet("color: palette(placeholder-text); padding: 24px;")
        self.empty_label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)

    def _show_empty(self) -> None:
        self.empty_label.setVisible(self.rowCount() == 0)
        self.empty_label.setGeometry(self.viewport().rect())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._show_empty()

    def show_host(self, host: str) -> None:
        """List (and mark) the alerts of ``host`` only."""
        self.host = host
        self.setRowCount(0)
        self._list([e for e in self.events if e.host == host])
        self._show_empty()

    def add_events(self, events: list[AlertEvent]) -> None:
        self.events += events
        self._list([e for e in events if e.host == self.host])
        if len(self.events) > MAX_LISTED_EVENTS:
            del self.events[: len(self.events) - MAX_LISTED_EVENTS]
        while self.rowCount() > MAX_LISTED_EVENTS:
            self.removeRow(self.rowCount() - 1)
        self._show_empty()

    def _list(self, events: list[AlertEvent]) -> None:
        for event in events:
            row = 0  # newest first
            self.insertRow(row)
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
            for column, text in enumerate((when, gpu, label, event.title)):
                item = QTableWidgetItem(text)
                if event.kind != "resolved":
                    item.setForeground(QColor(SEVERITY_COLOURS[event.severity]))
                self.setItem(row, column, item)

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
