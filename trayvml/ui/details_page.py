"""The Device details page: the system and each GPU's static facts, from the catalog's STATIC_FIELDS."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

from trayvml.core.metrics import STATIC_FIELDS
from trayvml.core.sample import Sample
from trayvml.core.units import format_static

translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)


class DetailsPage(QTreeWidget):
    def __init__(self) -> None:
        super().__init__()
        self.setHeaderLabels(["", translate("DetailsPage", "Value")])
        self.setColumnWidth(0, 260)

    def show_devices(self, sample: Sample) -> None:
        """Rebuilt whole: it changes only when the set of GPUs does."""
        self.clear()
        if sample.system is not None:
            system = QTreeWidgetItem(self, [translate("DetailsPage", "System"), sample.system.hostname])
            for label, value in (
                (translate("DetailsPage", "Driver"), sample.system.driver_version),
                (translate("DetailsPage", "CUDA driver API"), sample.system.cuda_driver_version),
                ("NVML", sample.system.nvml_version),
            ):
                QTreeWidgetItem(system, [label, value])
            system.setExpanded(True)
        for info in sample.devices:
            item = QTreeWidgetItem(self, [translate("DetailsPage", "GPU {index}").format(index=info.index), info.name])
            for field in STATIC_FIELDS:
                value = getattr(info, field.key)
                QTreeWidgetItem(
                    item,
                    [
                        translate("metrics", field.label),
                        format_static(field, value) or translate("DetailsPage", "not available"),
                    ],
                )
            item.setExpanded(True)
