"""The Processes page: a table updated in place (rows keyed by GPU, PID and kind), sortable, with
what each process costs the host (CPU %, resident memory, runtime) and a way to end one's own."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QCoreApplication,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtWidgets import QHeaderView, QMenu, QMessageBox, QTableView, QWidget

from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.safe_text import menu_label
from trayvml.core.sample import ProcessSample, Sample
from trayvml.core.units import format_bytes, format_duration
from trayvml.host.processes import HostUsage, HostUsageReader, end_process, owned_by_me
from trayvml.monitor.energy import EnergyMeter, format_energy

_Index = QModelIndex | QPersistentModelIndex
translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)
HEADERS = (
    QT_TRANSLATE_NOOP("ProcessModel", "GPU"),
    QT_TRANSLATE_NOOP("ProcessModel", "PID"),
    QT_TRANSLATE_NOOP("ProcessModel", "User"),
    QT_TRANSLATE_NOOP("ProcessModel", "Name"),
    QT_TRANSLATE_NOOP("ProcessModel", "GPU memory"),
    QT_TRANSLATE_NOOP("ProcessModel", "SM %"),
    QT_TRANSLATE_NOOP("ProcessModel", "CPU %"),
    QT_TRANSLATE_NOOP("ProcessModel", "Host RAM"),
    QT_TRANSLATE_NOOP("ProcessModel", "Runtime"),
    QT_TRANSLATE_NOOP("ProcessModel", "Type"),
    QT_TRANSLATE_NOOP("ProcessModel", "Container"),
    QT_TRANSLATE_NOOP("ProcessModel", "Energy"),
    QT_TRANSLATE_NOOP("ProcessModel", "Job energy"),
    QT_TRANSLATE_NOOP("ProcessModel", "Command"),
)
RIGHT_ALIGNED = frozenset(
    HEADERS.index(h)
    for h in ("GPU", "PID", "GPU memory", "SM %", "CPU %", "Host RAM", "Runtime", "Energy", "Job energy")
)
SIMULATED = QT_TRANSLATE_NOOP("ProcessModel", "simulated")  # a simulated GPU's process has no host process to read
# NVML's PID is the host's, and trayvml runs in another PID namespace (a container, WSL2).
FOREIGN = QT_TRANSLATE_NOOP("ProcessModel", "(another PID namespace)")


def _sm_share(percent: float) -> tuple[str, float]:
    """Its share of the GPU's SMs over the last sample period; "–" where the driver does not say
    (MIG, no samples since the process started, or an older driver)."""
    return ("–", -1.0) if math.isnan(percent) else (f"{percent:.0f} %", percent)


def _cells(
    proc: ProcessSample, usage: HostUsage | str, now_s: float, energy: EnergyMeter | None = None
) -> tuple[tuple[str, Any], ...]:
    """(shown text, sort key) per column. ``usage``: the host's figures, or why there are none."""
    hidden = translate("ProcessModel", "(no permission)") if proc.no_permission else "?"
    if proc.foreign_pid:
        hidden = translate("ProcessModel", FOREIGN)
    memory = proc.used_memory_bytes
    # Attributed by its share of the GPU's memory since trayvml saw it (see trayvml.monitor.energy).
    # Unknown, not 0, where the GPU's own energy is unknown (no power reading, no counter).
    if energy is None or math.isnan(energy.since_start_wh(proc.gpu_index)):
        wh = job_wh = math.nan
    else:
        wh = energy.process_energy_wh(proc)
        job_wh = energy.job_energy_wh(proc)
    if isinstance(usage, HostUsage):
        cpu = ("…" if math.isnan(usage.cpu_percent) else f"{usage.cpu_percent:.1f} %", usage.cpu_percent)
        ram = (format_bytes(usage.rss_bytes), usage.rss_bytes)
        runtime = (format_duration(now_s - usage.started_s, "min"), now_s - usage.started_s)
    else:  # why, said once in the row: the other columns only show that nothing is there
        cpu, ram, runtime = (usage, -1.0), ("–", -1.0), ("–", -1.0)
    return (
        (str(proc.gpu_index), proc.gpu_index),
        (str(proc.pid), proc.pid),
        (proc.user or hidden, proc.user),
        (proc.name or hidden, proc.name),
        (
            translate("ProcessModel", "n/a") if math.isnan(memory) else format_bytes(memory),
            -1.0 if math.isnan(memory) else memory,
        ),
        _sm_share(proc.sm_util_percent),
        cpu,
        ram,
        runtime,
        (proc.kind, proc.kind),
        (proc.container, proc.container),
        (format_energy(wh), -1.0 if math.isnan(wh) else wh),
        (format_energy(job_wh), -1.0 if math.isnan(job_wh) else job_wh),
        (proc.command, proc.command),
    )


class ProcessModel(QAbstractTableModel):
    SORT_ROLE = Qt.ItemDataRole.UserRole
    MEMORY_COLUMN = HEADERS.index("GPU memory")
    COMMAND_COLUMN = HEADERS.index("Command")

    def __init__(self) -> None:
        super().__init__()
        self._keys: list[tuple[int, int, str]] = []
        self._rows: list[tuple[tuple[str, Any], ...]] = []
        self.energy: EnergyMeter | None = None  # set by the app: energy per process and job
        self.started_s: dict[int, float] = {}  # by PID, of the processes the host could read
        self.foreign_pids: set[int] = set()  # PIDs of another PID namespace: never looked up or ended
        self._usage = HostUsageReader()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802, B008 - Qt override
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802, B008 - Qt override
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(  # noqa: N802 - Qt override
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return translate("ProcessModel", HEADERS[section])
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        text, key = self._rows[index.row()][index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return text
        if role == self.SORT_ROLE:
            return key
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() in RIGHT_ALIGNED:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def pid_at(self, row: int) -> int:
        return self._keys[row][1]

    def name_at(self, row: int) -> str:
        return str(self._rows[row][HEADERS.index("Name")][0])

    def _host_usage(self, sample: Sample, procs: list[ProcessSample]) -> dict[int, HostUsage | str]:
        """The host's figures per PID, or why there are none. A simulated GPU's PIDs are made up:
        whatever host process has that PID is not it."""
        self.foreign_pids = {p.pid for p in procs if p.foreign_pid}
        if sample.simulation:
            return dict.fromkeys((p.pid for p in procs), translate("ProcessModel", SIMULATED))
        # A PID of another namespace here is some other process (or none): not read.
        usage = self._usage.read({p.pid for p in procs if not p.foreign_pid})
        self.started_s = {pid: u.started_s for pid, u in usage.items()}
        return {
            p.pid: usage.get(p.pid, translate("ProcessModel", "(no permission)") if p.no_permission else "–")
            for p in procs
            if not p.foreign_pid
        } | {p.pid: translate("ProcessModel", FOREIGN) for p in procs if p.foreign_pid}

    def update_processes(self, sample: Sample) -> None:
        current = {(p.gpu_index, p.pid, p.kind): p for g in sample.gpus for p in g.processes}
        usage = self._host_usage(sample, list(current.values()))
        now_s = time.time()  # the host's figures are read now, whatever the sample's clock
        for row in reversed(range(len(self._keys))):  # gone: remove
            if self._keys[row] not in current:
                self.beginRemoveRows(QModelIndex(), row, row)
                del self._keys[row], self._rows[row]
                self.endRemoveRows()
        for row, key in enumerate(self._keys):  # still there: change in place
            proc = current.pop(key)
            cells = _cells(proc, usage[proc.pid], now_s, self.energy)
            if cells != self._rows[row]:
                self._rows[row] = cells
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(HEADERS) - 1))
        if current:  # new: append
            first = len(self._keys)
            self.beginInsertRows(QModelIndex(), first, first + len(current) - 1)
            for key, proc in current.items():
                self._keys.append(key)
                self._rows.append(_cells(proc, usage[proc.pid], now_s, self.energy))
            self.endInsertRows()


def _ask(parent: QWidget, question: str) -> bool:
    answer = QMessageBox.question(parent, "trayvml", question, defaultButton=QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes


class ProcessesPage(QTableView):
    """The table of GPU processes, biggest first until the user sorts otherwise. A right click on
    a process of this user offers to end it, after asking."""

    def __init__(self) -> None:
        super().__init__()
        self.processes = ProcessModel()
        proxy = QSortFilterProxyModel(self)
        proxy.setSourceModel(self.processes)
        proxy.setSortRole(ProcessModel.SORT_ROLE)
        self.setModel(proxy)
        self.setSortingEnabled(True)
        self.sortByColumn(ProcessModel.MEMORY_COLUMN, Qt.SortOrder.DescendingOrder)
        # Numbers as wide as they need, the command (the last column) all the rest: at a fixed 100 px
        # each, the command was the narrowest column and beyond the right edge.
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setSectionResizeMode(ProcessModel.COMMAND_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setVisible(False)
        # One line a row, whatever a cell holds: "(no permission)" wrapped to two lines made its
        # row twice as tall as the others.
        self.setWordWrap(False)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.setAlternatingRowColors(True)
        self.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        self.ask: Callable[[QWidget, str], bool] = _ask  # tests answer for the user
        self.tell: Callable[[QWidget, str], object] = lambda parent, text: QMessageBox.warning(parent, "trayvml", text)
        self.last_error = ""  # the last failure to end a process, as the user was told it

    def source_row(self, view_row: int) -> int:
        proxy = self.model()
        assert isinstance(proxy, QSortFilterProxyModel)
        return proxy.mapToSource(proxy.index(view_row, 0)).row()

    def _menu(self, position: QPoint) -> None:
        index = self.indexAt(position)
        if not index.isValid():
            return
        row = self.source_row(index.row())
        pid = self.processes.pid_at(row)
        menu = QMenu(self)
        action = menu.addAction(
            menu_label(
                translate("ProcessesPage", "End process {pid} ({name})…").format(
                    pid=pid, name=self.processes.name_at(row)
                ),
                dbusmenu=False,
            )
        )
        action.setEnabled(self.can_end(row))
        if not action.isEnabled():
            action.setToolTip(
                translate("ProcessesPage", "Only your own processes, on this computer, can be ended from here")
            )
        action.triggered.connect(lambda: self.end(row))
        menu.exec(self.viewport().mapToGlobal(position))

    def can_end(self, row: int) -> bool:
        """Only a process proven to be the one NVML meant: read here (its start time known), this
        user's, and not a PID of another PID namespace (there the number is some other process)."""
        pid = self.processes.pid_at(row)
        if pid in self.processes.foreign_pids:
            return False
        return pid in self.processes.started_s and owned_by_me(pid)

    def end(self, row: int) -> bool:
        """Ends the process in ``row`` (of the model) once the user confirms; True if it was asked to end."""
        pid, name = self.processes.pid_at(row), self.processes.name_at(row)
        started = None if pid in self.processes.foreign_pids else self.processes.started_s.get(pid)
        question = translate("ProcessesPage", "End process {pid} ({name})?\n\nIt is sent SIGTERM, as kill does.")
        if started is None or not self.ask(self, question.format(pid=pid, name=name)):
            return False
        try:
            end_process(pid, started)
        except (ProcessLookupError, PermissionError) as error:
            self.last_error = translate("ProcessesPage", "Could not end process {pid}: {error}.").format(
                pid=pid, error=error
            )
            self.tell(self, self.last_error)
            return False
        return True
