"""The Processes page: a table updated in place (rows keyed by GPU, PID and kind), sortable."""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QCoreApplication,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtWidgets import QTableView

from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.sample import ProcessSample, Sample
from trayvml.core.units import format_bytes

_Index = QModelIndex | QPersistentModelIndex
translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)
HEADERS = (
    QT_TRANSLATE_NOOP("ProcessModel", "GPU"),
    QT_TRANSLATE_NOOP("ProcessModel", "PID"),
    QT_TRANSLATE_NOOP("ProcessModel", "User"),
    QT_TRANSLATE_NOOP("ProcessModel", "Name"),
    QT_TRANSLATE_NOOP("ProcessModel", "GPU memory"),
    QT_TRANSLATE_NOOP("ProcessModel", "Type"),
    QT_TRANSLATE_NOOP("ProcessModel", "Container"),
    QT_TRANSLATE_NOOP("ProcessModel", "Command"),
)


def _cells(proc: ProcessSample) -> tuple[tuple[str, Any], ...]:
    """(shown text, sort key) per column."""
    hidden = translate("ProcessModel", "(no permission)") if proc.no_permission else "?"
    memory = proc.used_memory_bytes
    return (
        (str(proc.gpu_index), proc.gpu_index),
        (str(proc.pid), proc.pid),
        (proc.user or hidden, proc.user),
        (proc.name or hidden, proc.name),
        (
            translate("ProcessModel", "n/a") if math.isnan(memory) else format_bytes(memory),
            -1.0 if math.isnan(memory) else memory,
        ),
        (proc.kind, proc.kind),
        (proc.container, proc.container),
        (proc.command, proc.command),
    )


class ProcessModel(QAbstractTableModel):
    SORT_ROLE = Qt.ItemDataRole.UserRole
    MEMORY_COLUMN = HEADERS.index("GPU memory")

    def __init__(self) -> None:
        super().__init__()
        self._keys: list[tuple[int, int, str]] = []
        self._rows: list[tuple[tuple[str, Any], ...]] = []

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
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() in (0, 1, self.MEMORY_COLUMN):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def update_processes(self, sample: Sample) -> None:
        current = {(p.gpu_index, p.pid, p.kind): p for g in sample.gpus for p in g.processes}
        for row in reversed(range(len(self._keys))):  # gone: remove
            if self._keys[row] not in current:
                self.beginRemoveRows(QModelIndex(), row, row)
                del self._keys[row], self._rows[row]
                self.endRemoveRows()
        for row, key in enumerate(self._keys):  # still there: change in place
            cells = _cells(current.pop(key))
            if cells != self._rows[row]:
                self._rows[row] = cells
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(HEADERS) - 1))
        if current:  # new: append
            first = len(self._keys)
            self.beginInsertRows(QModelIndex(), first, first + len(current) - 1)
            for key, proc in current.items():
                self._keys.append(key)
                self._rows.append(_cells(proc))
            self.endInsertRows()


class ProcessesPage(QTableView):
    """The table of GPU processes, biggest first until the user sorts otherwise."""

    def __init__(self) -> None:
        super().__init__()
        self.processes = ProcessModel()
        proxy = QSortFilterProxyModel(self)
        proxy.setSourceModel(self.processes)
        proxy.setSortRole(ProcessModel.SORT_ROLE)
        self.setModel(proxy)
        self.setSortingEnabled(True)
        self.sortByColumn(ProcessModel.MEMORY_COLUMN, Qt.SortOrder.DescendingOrder)
        self.horizontalHeader().setStretchLastSection(True)
        self.verticalHeader().setVisible(False)
        self.setAlternatingRowColors(True)
