"""The Processes page: a table updated in place (rows keyed by GPU, PID and kind), sortable, with
what each process costs the host (CPU %, resident memory, runtime) and a way to end one's own."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QCoreApplication,
    QItemSelectionModel,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QSize,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QMessageBox,
    QPushButton,
    QStackedWidget,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.safe_text import NAME_LIMIT, clean, menu_label, shorten
from trayvml.core.sample import (
    MetricState,
    ProcessSample,
    Sample,
    held_seconds,
    hidden_processes_words,
    job_text,
    naming,
)
from trayvml.core.units import format_bytes, format_duration
from trayvml.host.attribution import KernelSession, default_attributor
from trayvml.host.jupyter import shut_down_kernel
from trayvml.host.processes import HostUsage, HostUsageReader, end_process, owned_by_me
from trayvml.monitor.energy import EnergyMeter, format_energy
from trayvml.monitor.users import UserUsage
from trayvml.ui.empty_note import EmptyNote

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
    QT_TRANSLATE_NOOP("ProcessModel", "Job"),
    QT_TRANSLATE_NOOP("ProcessModel", "Container"),
    QT_TRANSLATE_NOOP("ProcessModel", "Slurm"),
    QT_TRANSLATE_NOOP("ProcessModel", "Notebook"),
    QT_TRANSLATE_NOOP("ProcessModel", "Unit"),
    QT_TRANSLATE_NOOP("ProcessModel", "Session"),
    QT_TRANSLATE_NOOP("ProcessModel", "Energy"),
    QT_TRANSLATE_NOOP("ProcessModel", "Job energy"),
    QT_TRANSLATE_NOOP("ProcessModel", "Command"),
)
RIGHT_ALIGNED = frozenset(
    HEADERS.index(h)
    for h in ("GPU", "PID", "GPU memory", "SM %", "CPU %", "Host RAM", "Runtime", "Energy", "Job energy")
)
# Names anyone running a process gives (a container's, a notebook's path): cut where shown, whole
# in the cell's tooltip (a 5000-character container name made its column that wide).
NAME_COLUMNS = frozenset(
    HEADERS.index(h) for h in ("User", "Name", "Job", "Container", "Slurm", "Notebook", "Unit", "Session")
)
SIMULATED = QT_TRANSLATE_NOOP("ProcessModel", "simulated")  # a simulated GPU's process has no host process to read
# NVML's PID is the host's, and trayvml runs in another PID namespace (a container, WSL2).
FOREIGN = QT_TRANSLATE_NOOP("ProcessModel", "(another PID namespace)")
ONLY_OWN = QT_TRANSLATE_NOOP("ProcessesPage", "Only your own processes, on this computer, can be ended from here")
KERNELS_ONLY_OWN = QT_TRANSLATE_NOOP(
    "ProcessesTab", "Select a notebook kernel of yours, run by a Jupyter server of yours on this computer"
)


def _sm_share(percent: float) -> tuple[str, float]:
    """Its share of the GPU's SMs over the last sample period; "–" where the driver does not say
    (MIG, no samples since the process started, or an older driver)."""
    return ("–", -1.0) if math.isnan(percent) else (f"{percent:.0f} %", percent)


def _cells(
    proc: ProcessSample, usage: HostUsage | str, energy: EnergyMeter | None = None
) -> tuple[tuple[str, Any], ...]:
    """(shown text, sort key) per column. ``usage``: the host's figures, or why there are none."""
    hidden = translate("ProcessModel", "(no permission)") if proc.no_permission else "?"
    if proc.foreign_pid:
        hidden = translate("ProcessModel", FOREIGN)
    memory = proc.used_memory_bytes
    job = proc.attribution
    container = job.container_name or job.container or proc.container  # its runtime's name, where told
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
        runtime = (format_duration(usage.runtime_s, "min"), usage.runtime_s)
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
        (hidden, "") if proc.unseen else (job_text(proc), job_text(proc)),
        (container, container),
        (job.slurm_job, job.slurm_job),
        (job.notebook, job.notebook),
        (job.unit, job.unit),
        (job.session, job.session),
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
        self.current: list[ProcessSample] = []  # the latest sample's processes (for the job groups)
        self.by_key: dict[tuple[int, int, str], ProcessSample] = {}  # the latest sample's, by row key
        self.usage: dict[int, HostUsage | str] = {}  # by PID: the host's figures, or why there are none

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
        named = index.column() in NAME_COLUMNS
        if role == Qt.ItemDataRole.DisplayRole:
            return shorten(text) if named else text
        if role == Qt.ItemDataRole.ToolTipRole:
            return text if named and len(text) > NAME_LIMIT else None
        if role == self.SORT_ROLE:
            return key
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() in RIGHT_ALIGNED:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def pid_at(self, row: int) -> int:
        return self._keys[row][1]

    def process_at(self, row: int) -> ProcessSample:
        return self.by_key[self._keys[row]]

    def name_at(self, row: int) -> str:
        return str(self._rows[row][HEADERS.index("Name")][0])

    def _host_usage(self, sample: Sample, procs: list[ProcessSample]) -> dict[int, HostUsage | str]:
        """The host's figures per PID, or why there are none. A simulated GPU's PIDs are made up:
        whatever host process has that PID is not it."""
        self.foreign_pids = {p.pid for p in procs if p.foreign_pid}
        if sample.simulation:
            return dict.fromkeys((p.pid for p in procs), translate("ProcessModel", SIMULATED))
        if sample.remote is not None:  # another machine's PIDs: a process here with that PID is not it
            self.started_s = {}
            return dict.fromkeys((p.pid for p in procs), "–")
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
        self.current = list(current.values())
        self.by_key = dict(current)
        usage = self.usage = self._host_usage(sample, self.current)
        for row in reversed(range(len(self._keys))):  # gone: remove
            if self._keys[row] not in current:
                self.beginRemoveRows(QModelIndex(), row, row)
                del self._keys[row], self._rows[row]
                self.endRemoveRows()
        for row, key in enumerate(self._keys):  # still there: change in place
            proc = current.pop(key)
            cells = _cells(proc, usage[proc.pid], self.energy)
            if cells != self._rows[row]:
                self._rows[row] = cells
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(HEADERS) - 1))
        if current:  # new: append
            first = len(self._keys)
            self.beginInsertRows(QModelIndex(), first, first + len(current) - 1)
            for key, proc in current.items():
                self._keys.append(key)
                self._rows.append(_cells(proc, usage[proc.pid], self.energy))
            self.endInsertRows()


CELL_PADDING_PX = 3  # each side of a cell's text, beyond the style's own margins


class PaddedCells(QStyledItemDelegate):
    """Cells as wide as their text and a margin: sized to the text alone, a column fitted to its
    contents cut "4204000" and "graphics" under styles that draw cells with wider margins."""

    def sizeHint(self, option: QStyleOptionViewItem, index: _Index) -> QSize:  # noqa: N802 - Qt override
        hint = super().sizeHint(option, index)
        return QSize(hint.width() + 2 * CELL_PADDING_PX, hint.height())


def ask(parent: QWidget | None, question: str) -> bool:
    answer = QMessageBox.question(parent, "trayvml", question, defaultButton=QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes


def tell(parent: QWidget | None, text: str) -> object:
    return QMessageBox.warning(parent, "trayvml", text)


Ask = Callable[[QWidget | None, str], bool]
Tell = Callable[[QWidget | None, str], object]
IdleFor = Callable[[int], tuple[float, bool]]  # a GPU's idle time in s (NaN: busy or unknown), and "at least"


def own_kernel(pid: int) -> KernelSession | None:
    return default_attributor().own_kernel(pid)


def kernel_action_text(process: ProcessSample) -> str:
    """The menu entry that shuts the kernel of ``process`` down (the Processes and Alerts tabs')."""
    label = translate("ProcessesPage", "Shut down kernel of {notebook}…")
    return menu_label(label.format(notebook=shorten(process.attribution.notebook)), dbusmenu=False)


def kernel_question(notebook: str, process: ProcessSample, idle: tuple[float, bool]) -> str:
    """The confirmation: the notebook, the GPU memory it holds, how long the GPU has been idle."""
    memory = process.used_memory_bytes
    held = translate("ProcessesPage", "an unknown amount") if math.isnan(memory) else format_bytes(memory)
    idle_s, at_least = idle
    if math.isnan(idle_s):
        state = translate("ProcessesPage", "GPU {gpu} is not idle now (or its utilization is unknown).")
    elif at_least:
        state = translate("ProcessesPage", "GPU {gpu} has been idle for at least {idle} (since trayvml started).")
    else:
        state = translate("ProcessesPage", "GPU {gpu} has been idle for {idle}.")
    idle_text = "" if math.isnan(idle_s) else format_duration(idle_s, "min")
    return translate(
        "ProcessesPage",
        "Shut down the kernel of notebook {notebook}?\n\nIt holds {memory} of GPU {gpu}'s memory. {state}\n\n"
        "What the kernel holds (variables, a loaded model) is lost; the notebook file stays as last saved.",
    ).format(
        notebook=clean(notebook),
        memory=held,
        gpu=process.gpu_index,
        state=state.format(gpu=process.gpu_index, idle=idle_text),
    )


def shut_down_kernel_asking(
    parent: QWidget | None,
    process: ProcessSample,
    idle: tuple[float, bool],
    ask: Ask = ask,
    tell: Tell = tell,
    find: Callable[[int], KernelSession | None] = own_kernel,
    shut_down: Callable[[KernelSession], str] = shut_down_kernel,
) -> tuple[bool, str]:
    """Asks, then has the Jupyter server shut the kernel of ``process`` down: (whether it was,
    the sentence the user was told of a failure or ""). The user saying no is (False, "")."""
    kernel = find(process.pid)
    if kernel is None:
        why = translate(
            "ProcessesPage",
            "PID {pid} is no longer the kernel of a notebook of yours that a running Jupyter server of yours "
            "knows: nothing was shut down.",
        ).format(pid=process.pid)
        tell(parent, why)
        return False, why
    if not ask(parent, kernel_question(kernel.notebook, process, idle)):
        return False, ""
    error = shut_down(kernel)
    if error:
        tell(parent, error)
    return not error, error


class ProcessesPage(QTableView):
    """The table of GPU processes, biggest first until the user sorts otherwise. A right click on
    a process of this user offers to end it, after asking."""

    def __init__(self) -> None:
        super().__init__()
        # Tab leaves the table (arrow keys move between cells): Qt's default wraps Tab round the
        # cells, and a keyboard user could not leave the table at all.
        self.setTabKeyNavigation(False)
        self.setAccessibleName(translate("ProcessesTab", "Processes"))
        self.processes = ProcessModel()
        proxy = QSortFilterProxyModel(self)
        proxy.setSourceModel(self.processes)
        proxy.setSortRole(ProcessModel.SORT_ROLE)
        self.setModel(proxy)
        self.setSortingEnabled(True)
        self.sortByColumn(ProcessModel.MEMORY_COLUMN, Qt.SortOrder.DescendingOrder)
        # Numbers as wide as they need, the command (the last column) all the rest: at a fixed 100 px
        # each, the command was the narrowest column and beyond the right edge.
        self.setItemDelegate(PaddedCells(self))
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
        self.ask: Ask = ask  # tests answer for the user
        self.tell: Tell = tell
        self.last_error = ""  # the last failure to end a process or shut a kernel down, as the user was told it
        self.idle_for: IdleFor = lambda gpu: (math.nan, False)  # set by the app: the local monitor's
        self.find_kernel: Callable[[int], KernelSession | None] = own_kernel

    def source_row(self, view_row: int) -> int:
        proxy = self.model()
        assert isinstance(proxy, QSortFilterProxyModel)
        return proxy.mapToSource(proxy.index(view_row, 0)).row()

    def _menu(self, position: QPoint) -> None:
        index = self.indexAt(position)
        if index.isValid():
            self.menu_for(self.source_row(index.row())).exec(self.viewport().mapToGlobal(position))

    def menu_for(self, row: int) -> QMenu:
        """The actions on the process in ``row`` (of the model): the table's and the job tree's menu."""
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
            action.setToolTip(translate("ProcessesPage", ONLY_OWN))
        action.triggered.connect(lambda: self.end(row))
        if self.can_shut_down_kernel(row):
            kernel = menu.addAction(kernel_action_text(self.processes.process_at(row)))
            kernel.triggered.connect(lambda: self.shut_down_kernel(row))
        return menu

    def can_shut_down_kernel(self, row: int) -> bool:
        """Offered for a notebook's kernel only where the process is one this user may end (see
        can_end): attribution names a notebook only from a server of the kernel's own user."""
        return bool(self.processes.process_at(row).attribution.notebook) and self.can_end(row)

    def shut_down_kernel(self, row: int) -> bool:
        """Asks, then shuts the kernel in ``row`` (of the model) down; True once its server has."""
        if not self.can_shut_down_kernel(row):
            return False
        process = self.processes.process_at(row)
        done, error = shut_down_kernel_asking(
            self, process, self.idle_for(process.gpu_index), self.ask, self.tell, self.find_kernel
        )
        self.last_error = error or self.last_error
        return done

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


# Shown only where some row has one: most machines run no containers, Slurm, notebooks, units or tmux.
OPTIONAL_COLUMNS = tuple(HEADERS.index(h) for h in ("Container", "Slurm", "Notebook", "Unit", "Session"))
JOB_COLUMN = HEADERS.index("Job")
GROUP_HEADERS = (
    QT_TRANSLATE_NOOP("ProcessesTab", "Job"),
    QT_TRANSLATE_NOOP("ProcessesTab", "User"),
    QT_TRANSLATE_NOOP("ProcessesTab", "GPUs"),
    QT_TRANSLATE_NOOP("ProcessesTab", "GPU memory"),
    QT_TRANSLATE_NOOP("ProcessesTab", "SM %"),
    QT_TRANSLATE_NOOP("ProcessesTab", "GPU time"),
    QT_TRANSLATE_NOOP("ProcessesTab", "Energy"),
    QT_TRANSLATE_NOOP("ProcessesTab", "Runtime"),
)
MAX_USER_ROWS = 6
USER_HEADERS = (
    QT_TRANSLATE_NOOP("ProcessesTab", "User"),
    QT_TRANSLATE_NOOP("ProcessesTab", "GPUs"),
    QT_TRANSLATE_NOOP("ProcessesTab", "Processes"),
    QT_TRANSLATE_NOOP("ProcessesTab", "GPU memory now"),
    QT_TRANSLATE_NOOP("ProcessesTab", "GPU time since start"),
)


JOB_KEY_ROLE = Qt.ItemDataRole.UserRole  # a job item's _job_group
PROCESS_KEY_ROLE = Qt.ItemDataRole.UserRole + 1  # a process item's (PID, GPU index)


def _job_group(process: ProcessSample) -> str:
    """The job a process's row goes under, as text (a tree item's data): its user's job, by
    ProcessSample.job_identity, as energy and GPU time add up."""
    return "\0".join(map(str, (process.user, *process.job_identity)))


def _process_key(process: ProcessSample) -> tuple[int, int]:
    return (process.pid, process.gpu_index)


def _item_key(item: QTreeWidgetItem) -> object:
    """What a tree item stands for, the same across rebuilds: a job, or a process on a GPU."""
    return item.data(0, PROCESS_KEY_ROLE) or ("job", item.data(0, JOB_KEY_ROLE))


def _sum_known(values: list[float]) -> float:
    """Their sum, NaN where none is known."""
    known = [v for v in values if not math.isnan(v)]
    return sum(known) if known else math.nan


def _gpu_seconds_text(seconds: float, partial: bool) -> str:
    """``1 min 5 s``, ``at least 5 s`` where some processes' share was not told; "–" where unknown."""
    if math.isnan(seconds):
        return "–"
    text = format_duration(seconds, "s") if seconds else "0 s"
    return translate("ProcessesTab", "at least {time}").format(time=text) if partial else text


def _memory_text(value: float) -> str:
    return translate("ProcessModel", "n/a") if math.isnan(value) else format_bytes(value)


class ProcessesTab(QWidget):
    """The Processes tab: the table of processes, or (Group by job) one row per job with its
    processes beneath; a line counting the processes whose job cannot be seen here; and the users'
    memory and GPU time across GPUs (trayvml.monitor.users)."""

    def __init__(self) -> None:
        super().__init__()
        self.table = ProcessesPage()
        self.processes = self.table.processes
        self.users: UserUsage | None = None  # set by the app: the local monitor's
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.group_box = QCheckBox(translate("ProcessesTab", "Group by job"))
        self.group_box.setToolTip(
            translate(
                "ProcessesTab",
                "One row per job (notebook, container, Slurm job, systemd unit, terminal session or process "
                "tree), its processes beneath",
            )
        )
        self.group_box.toggled.connect(self._show_grouping)
        # The selected row's actions, for those who never right-click (the menu offers the same).
        self.end_button = QPushButton(translate("ProcessesTab", "End process…"))
        self.end_button.clicked.connect(lambda: self._act(self.table.end))
        self.kernel_button = QPushButton(translate("ProcessesTab", "Shut down kernel…"))
        self.kernel_button.clicked.connect(lambda: self._act(self.table.shut_down_kernel))
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 6, 0)
        row.addWidget(self.group_box)
        # The lists are read every few seconds (a process query costs the driver milliseconds):
        # how long ago, so that their memory and SM share are not taken for this second's.
        self.read_label = QLabel()
        self.read_label.setObjectName("lists_read")
        self.read_label.setStyleSheet("color: palette(placeholder-text); padding: 0 6px;")
        row.addWidget(self.read_label)
        row.addStretch(1)
        row.addWidget(self.kernel_button)
        row.addWidget(self.end_button)
        layout.addLayout(row)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels([translate("ProcessesTab", h) for h in GROUP_HEADERS])
        self.tree.setAlternatingRowColors(True)
        self.tree.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.tree.setItemDelegate(PaddedCells(self.tree))
        # The table's actions on a process row of the tree, and on a job of one process.
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._tree_menu)
        self.tree.itemSelectionChanged.connect(self._show_buttons)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.table)
        self.stack.addWidget(self.tree)
        # Where every GPU's list was read with nothing in it (not a tab that failed to fill).
        none = translate("ProcessesTab", "No process runs on a GPU")
        self.empty_notes = (EmptyNote(none, self.table), EmptyNote(none, self.tree))
        layout.addWidget(self.stack, 3)
        self.hidden_label = QLabel()
        self.hidden_label.setObjectName("hidden_processes")
        self.hidden_label.setStyleSheet("color: palette(placeholder-text); padding: 2px 6px;")
        layout.addWidget(self.hidden_label)
        self.users_title = QLabel(translate("ProcessesTab", "Users (all GPUs)"))
        self.users_title.setStyleSheet("font-weight: bold; padding: 4px 6px 0 6px;")
        layout.addWidget(self.users_title)
        self.users_table = QTableWidget(0, len(USER_HEADERS))
        self.users_table.setTabKeyNavigation(False)  # (as the processes table: Tab leaves it)
        self.users_table.setAccessibleName(translate("ProcessesTab", "Users (all GPUs)"))
        self.users_table.setHorizontalHeaderLabels([translate("ProcessesTab", h) for h in USER_HEADERS])
        self.users_table.verticalHeader().setVisible(False)
        self.users_table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.users_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.users_table.horizontalHeader().setStretchLastSection(True)
        self.users_table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        layout.addWidget(self.users_table)
        self._expanded: set[str] = set()  # jobs the user opened: kept open across updates
        # The list first, then what acts on the row chosen in it (the buttons sit above it).
        QWidget.setTabOrder(self.group_box, self.table)
        QWidget.setTabOrder(self.table, self.tree)
        QWidget.setTabOrder(self.tree, self.kernel_button)
        QWidget.setTabOrder(self.kernel_button, self.end_button)
        QWidget.setTabOrder(self.end_button, self.users_table)
        selection = self.table.selectionModel()
        assert selection is not None
        selection.selectionChanged.connect(self._show_buttons)
        self._show_buttons()

    def _show_grouping(self, grouped: bool) -> None:
        self.stack.setCurrentWidget(self.tree if grouped else self.table)
        if grouped:
            self._fill_tree()
        self._show_hidden_note()
        self._show_buttons()

    def _show_hidden_note(self) -> None:
        """What the jobs leave out (processes of other users), under the jobs only: beside the
        flat list, which shows those rows, the note said they were not shown."""
        self.hidden_label.setVisible(bool(self.hidden_label.text()) and self.group_box.isChecked())

    def selected_row(self) -> int:
        """The model's row of the selected process (in the table, or in the job tree: a process, or a
        job of one process); -1 where none is."""
        if self.group_box.isChecked():
            return self._tree_row(self.tree.selectedItems()[0]) if self.tree.selectedItems() else -1
        selection = self.table.selectionModel()
        rows = selection.selectedRows() if selection is not None else []
        return self.table.source_row(rows[0].row()) if rows else -1

    def _tree_row(self, item: QTreeWidgetItem) -> int:
        """The model's row of the process a tree item stands for; -1 for a job of several."""
        process_item = item if item.parent() is not None else item.child(0) if item.childCount() == 1 else None
        if process_item is None:
            return -1
        key = process_item.data(0, PROCESS_KEY_ROLE)
        model = self.processes
        return next((r for r in range(model.rowCount()) if _process_key(model.process_at(r)) == key), -1)

    def _tree_menu(self, position: QPoint) -> None:
        item = self.tree.itemAt(position)
        row = -1 if item is None else self._tree_row(item)
        if row >= 0:
            self.table.menu_for(row).exec(self.tree.viewport().mapToGlobal(position))

    def _act(self, action: Callable[[int], bool]) -> None:
        row = self.selected_row()
        if row >= 0:
            action(row)

    def _show_buttons(self) -> None:
        """ "End process…" for a process of one's own, "Shut down kernel…" for a notebook's kernel
        of one's own (shown only where some process is a notebook's): as the right-click menu."""
        row = self.selected_row()
        model = self.processes
        self.end_button.setEnabled(row >= 0 and self.table.can_end(row))
        self.kernel_button.setEnabled(row >= 0 and self.table.can_shut_down_kernel(row))
        self.kernel_button.setVisible(any(p.attribution.notebook for p in model.current))
        why = "" if self.end_button.isEnabled() else translate("ProcessesPage", ONLY_OWN)
        self.end_button.setToolTip(why if row >= 0 else translate("ProcessesTab", "Select a process first"))
        self.kernel_button.setToolTip(
            "" if self.kernel_button.isEnabled() else translate("ProcessesTab", KERNELS_ONLY_OWN)
        )

    def update_processes(self, sample: Sample) -> None:
        self.processes.update_processes(sample)
        # Only where this machine's reader says: a remote host's lists, or lists not read (failing,
        # every GPU asleep), carry no age, which is not "just now".
        listed = [gpu for gpu in sample.gpus if gpu.state("process_count") is MetricState.OK]
        age_s = max((held_seconds(gpu.age_s("process_count")) for gpu in listed), default=0)
        self.read_label.setText(
            ""
            if sample.remote is not None or not listed
            else translate("ProcessesTab", "Lists read {age} s ago").format(age=age_s)
            if age_s
            else translate("ProcessesTab", "Lists read just now")
        )
        model = self.processes
        for note in self.empty_notes:
            note.setVisible(bool(listed) and len(listed) == len(sample.gpus) and not model.current)

        # A column shown where it says more than the job does: a container's own column beside the
        # job "container 3f2a9c1b7e4d" said it twice, and pushed the energy past a 1280 px window.
        def says_more(row: int, column: int) -> bool:
            text = str(model.index(row, column).data() or "")
            return bool(text) and text not in str(model.index(row, JOB_COLUMN).data() or "")

        for column in OPTIONAL_COLUMNS:
            self.table.setColumnHidden(column, not any(says_more(r, column) for r in range(model.rowCount())))
        words = hidden_processes_words(tuple(model.current))
        self.hidden_label.setText(
            translate("ProcessesTab", "Not shown by job: {hidden}").format(hidden=words) if words else ""
        )
        self._show_hidden_note()
        if self.group_box.isChecked():
            self._fill_tree()
        self._fill_users()
        self._show_buttons()  # the selected process may have gone, or become another's

    def _runtime_s(self, process: ProcessSample) -> float:
        usage = self.processes.usage.get(process.pid)
        return usage.runtime_s if isinstance(usage, HostUsage) else math.nan

    def _fill_tree(self) -> None:
        """Rebuilt from the latest lists (read every few seconds): one item per job, its processes beneath."""
        model, energy = self.processes, self.processes.energy
        # By its user's job: "tmux default" is almost everyone's session (one row, one user's energy).
        jobs: dict[str, list[ProcessSample]] = {}
        for process in model.current:
            if not process.unseen:  # counted in the line below instead
                jobs.setdefault(_job_group(process), []).append(process)
        items = [self.tree.topLevelItem(k) for k in range(self.tree.topLevelItemCount())]
        opened = {item.data(0, JOB_KEY_ROLE) for item in items if item is not None and item.isExpanded()}
        self._expanded = opened or self._expanded
        # Rebuilt every few seconds: what the user selected and where they scrolled stay.
        chosen = self.tree.selectedItems()
        chosen_key = _item_key(chosen[0]) if chosen else None
        # The keyboard's place too: without it the next Down went to the first job.
        current = self.tree.currentItem()
        current_key = _item_key(current) if current is not None else None
        scrolled = self.tree.verticalScrollBar().value()
        self.tree.clear()

        def energy_of(procs: list[ProcessSample]) -> float:
            # Each GPU's share of the job once (the meter keeps a job's energy per GPU).
            if energy is None or any(math.isnan(energy.since_start_wh(p.gpu_index)) for p in procs):
                return math.nan
            firsts = {p.gpu_index: p for p in procs}
            return sum(energy.job_energy_wh(p) for p in firsts.values())

        def memory_of(procs: list[ProcessSample]) -> float:
            return _sum_known([p.used_memory_bytes for p in procs])

        # Biggest first, as the table; a job whose memory NVML does not tell last.
        ordered = sorted(
            jobs.items(), key=lambda item: -memory_of(item[1]) if not math.isnan(memory_of(item[1])) else 1.0
        )
        for key, procs in ordered:
            name = job_text(naming(procs))  # (the newest list's: a notebook renamed, its new name)
            sm = [p.sm_util_percent for p in procs]
            runtimes = [self._runtime_s(p) for p in procs]
            known_runtimes = [r for r in runtimes if not math.isnan(r)]
            top = QTreeWidgetItem(
                [
                    name,
                    ", ".join(sorted({p.user for p in procs if p.user})),
                    ", ".join(str(g) for g in sorted({p.gpu_index for p in procs})),
                    _memory_text(memory_of(procs)),
                    "–" if any(math.isnan(v) for v in sm) else f"{sum(sm):.0f} %",
                    self._gpu_time_text(procs[0]),
                    format_energy(energy_of(procs)),
                    # The job has run as long as its longest-running process.
                    format_duration(max(known_runtimes), "min") if known_runtimes else "–",
                ]
            )
            top.setData(0, JOB_KEY_ROLE, key)
            for process, runtime in zip(procs, runtimes, strict=True):
                known = energy is not None and not math.isnan(energy.since_start_wh(process.gpu_index))
                child = QTreeWidgetItem(
                    top,
                    [
                        translate("ProcessesTab", "PID {pid} {name}").format(pid=process.pid, name=process.name),
                        process.user,
                        str(process.gpu_index),
                        _memory_text(process.used_memory_bytes),
                        _sm_share(process.sm_util_percent)[0],
                        "",  # GPU time is the job's (its processes' on every GPU)
                        format_energy(energy.process_energy_wh(process) if energy is not None and known else math.nan),
                        "–" if math.isnan(runtime) else format_duration(runtime, "min"),
                    ],
                )
                child.setData(0, PROCESS_KEY_ROLE, _process_key(process))
            self.tree.addTopLevelItem(top)
            top.setExpanded(key in self._expanded or len(jobs) <= 3)
            for item in (top, *(top.child(k) for k in range(top.childCount()))):
                if item is None:
                    continue
                if current_key is not None and _item_key(item) == current_key:
                    self.tree.setCurrentItem(item, 0, QItemSelectionModel.SelectionFlag.NoUpdate)
                if chosen_key is not None and _item_key(item) == chosen_key:
                    item.setSelected(True)
        self.tree.verticalScrollBar().setValue(scrolled)

    def _gpu_time_text(self, process: ProcessSample) -> str:
        """The GPU time of the job ``process`` belongs to, as the users' table says a user's."""
        seconds, partial = (math.nan, False) if self.users is None else self.users.job_gpu_seconds(process)
        return _gpu_seconds_text(seconds, partial)

    def _fill_users(self) -> None:
        users = self.users
        rows = [] if users is None else users.rows()
        self.users_table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            seconds = _gpu_seconds_text(row.gpu_seconds, row.gpu_seconds_partial)
            cells = (
                row.user or translate("ProcessesTab", "(not visible here)"),
                ", ".join(map(str, row.gpus)) or "–",
                str(row.processes),
                _memory_text(row.memory_bytes) if row.processes else "–",
                seconds,
            )
            for c, text in enumerate(cells):
                self.users_table.setItem(r, c, QTableWidgetItem(text))
        self.users_title.setVisible(bool(rows))
        self.users_table.setVisible(bool(rows))
        # As tall as its rows (up to MAX_USER_ROWS, then it scrolls): the process table keeps the rest,
        # where a stretched users table left most of the tab an empty grid.
        shown = min(len(rows), MAX_USER_ROWS)
        header = self.users_table.horizontalHeader().sizeHint().height()
        rows_px = shown * self.users_table.verticalHeader().defaultSectionSize()
        self.users_table.setFixedHeight(header + rows_px + 2 * self.users_table.frameWidth())
