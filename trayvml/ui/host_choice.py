"""The graph window's host selector: this machine or one of the remote hosts.

Each host has its own history (kept by its monitor, trayvml.monitor); choosing a host shows its
history and its latest sample in the same window. GPU colours stay per GPU index, as locally.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QObject
from PySide6.QtWidgets import QComboBox, QLabel, QToolBar

from trayvml.core.sample import Sample
from trayvml.history.timeline import History
from trayvml.ui.window import GraphWindow

THIS_MACHINE = ""
translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)


class HostChoice(QObject):
    """A "Host" box on the window's toolbar; ``host`` is "" for this machine."""

    def __init__(
        self,
        window: GraphWindow,
        view: Callable[[str], tuple[History, Sample | None]],
        hosts: Callable[[], list[str]],
    ) -> None:
        super().__init__(window)
        self.window = window
        self._view = view  # a host's history and latest sample ("": this machine)
        self._hosts = hosts  # the remote hosts with a history
        self.host = THIS_MACHINE
        self.box = QComboBox()
        self.box.setObjectName("host_choice")
        self.box.addItem(translate("HostChoice", "This machine"), THIS_MACHINE)
        bar = window.findChild(QToolBar, "view_toolbar")
        assert bar is not None
        label = QLabel(translate("HostChoice", " Host: "))
        label.setBuddy(self.box)  # a screen reader reads the box as "Host", not as its choice alone
        self._label_action = bar.addWidget(label)
        self._box_action = bar.addWidget(self.box)
        self.box.currentIndexChanged.connect(self._chosen)
        window.order_focus()
        self.refresh_hosts()

    def refresh_hosts(self) -> None:
        """The box lists this machine and every remote host with a history; shown only when there
        are some. A host gone (removed from the settings, or its history made anew: it comes back
        when it answers) leaves the box, and a window showing it shows this machine."""
        hosts = self._hosts()
        if self.host != THIS_MACHINE and self.host not in hosts:
            self.choose(THIS_MACHINE)
        for position in reversed(range(1, self.box.count())):
            if self.box.itemData(position) not in hosts:
                self.box.removeItem(position)
        known = [self.box.itemData(i) for i in range(1, self.box.count())]
        for host in hosts:
            if host not in known:
                self.box.addItem(host, host)
        self._label_action.setVisible(bool(hosts))
        self._box_action.setVisible(bool(hosts))

    def show_again(self) -> None:
        """The host shown, shown again: its history may have been made anew."""
        self._chosen(self.box.currentIndex())

    def choose(self, host: str) -> None:
        """Show ``host`` ("": this machine), as choosing it in the box does."""
        position = self.box.findData(host)
        if position >= 0 and position != self.box.currentIndex():
            self.box.setCurrentIndex(position)  # which shows it (_chosen)

    def _chosen(self, position: int) -> None:
        self.host = self.box.itemData(position) or THIS_MACHINE
        history, sample = self._view(self.host)
        self.window.history = history
        self.window.alert_table.show_host(self.host)  # its alerts, in the table and on the timelines
        if sample is not None:
            self.window.update_sample(sample)

    def remote_sampled(self, sample: Sample) -> None:
        """A remote host's new sample: shown when that host is."""
        if self.host != THIS_MACHINE and sample.system is not None and sample.system.hostname == self.host:
            self.window.update_sample(sample)
