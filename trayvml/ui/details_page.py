"""The Device details page: the system, each GPU's static facts (the catalog's STATIC_FIELDS) and
its current reading of every metric the catalog has (GPU_METRICS), those no panel draws included:
performance state, PCIe link, ECC, retired pages, remapped rows, energy, the last XID; NVLink per
link on request (folded until opened)."""

from __future__ import annotations

import math

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem

from trayvml.core.formatting import at_least, format_precise, format_static
from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.metrics import GPU_METRICS, Metric, Unit
from trayvml.core.sample import MetricState, Sample, held_seconds
from trayvml.core.static_fields import STATIC_FIELDS
from trayvml.core.units import format_bytes
from trayvml.monitor.energy import format_energy

READINGS = QT_TRANSLATE_NOOP("DetailsPage", "Current readings")
NVLINK_LINKS = QT_TRANSLATE_NOOP("DetailsPage", "NVLink per link")

J_PER_WH = 3600.0
translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)


def _reading_text(metric: Metric, value: float) -> str:
    """A reading as the page shows it: energy in Wh or kWh, as the window says it everywhere
    (the status bar, the Processes tab), not "14933.4 J" beside "4.1 Wh"; a count as a whole
    number where it is one (a graph's readout gives a bucket's mean, "0.50", and so "0.00")."""
    if metric.unit is Unit.JOULES:
        return format_energy(value / J_PER_WH)
    if metric.unit is Unit.COUNT and value.is_integer():
        return f"{value:.0f}"
    return format_precise(metric, value)


class DetailsPage(QTreeWidget):
    def __init__(self) -> None:
        super().__init__()
        self.setHeaderLabels(
            [translate("DetailsPage", "Reading"), translate("DetailsPage", "Value"), translate("DetailsPage", "As of")]
        )
        self.setAccessibleName(translate("GraphWindow", "Device details"))
        # The key column as wide as its longest key ("Temperature below the shutdown limit" was cut
        # at a fixed 260 px, and more so in a longer translation), the value's as its longest value;
        # when a value was read (the last column) takes the rest.
        self.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.header().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.header().setStretchLastSection(True)
        # Per GPU index: the item of each metric's reading, and the NVLink links' parent.
        self._readings: dict[int, dict[str, QTreeWidgetItem]] = {}
        self._links: dict[int, QTreeWidgetItem] = {}

    def show_devices(self, sample: Sample) -> None:
        """Rebuilt whole: it changes only when the set of GPUs does."""
        self.clear()
        self._readings = {}
        self._links = {}
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
            item = QTreeWidgetItem(
                self, [translate("DetailsPage", "GPU {index}").format(index=info.index), info.shown_name]
            )
            for field in STATIC_FIELDS:
                value = getattr(info, field.key)
                QTreeWidgetItem(
                    item,
                    [
                        translate("metrics", field.label),
                        format_static(field, value) or translate("DetailsPage", "not available"),
                    ],
                )
            readings = QTreeWidgetItem(item, [translate("DetailsPage", READINGS), ""])
            self._readings[info.index] = {
                m.key: QTreeWidgetItem(readings, [translate("metrics", m.label), ""]) for m in GPU_METRICS
            }
            self._links[info.index] = QTreeWidgetItem(readings, [translate("DetailsPage", NVLINK_LINKS), ""])
            readings.setExpanded(True)
            item.setExpanded(True)
        self.show_readings(sample)

    def show_readings(self, sample: Sample) -> None:
        """Every metric's value in this sample, or why there is none; texts changed in place."""
        in_sample = {gpu.index for gpu in sample.gpus}
        for index, readings in self._readings.items():
            if index not in in_sample:
                self._not_read(readings, self._links[index], sample)
        for gpu in sample.gpus:
            items = self._readings.get(gpu.index)
            if items is None:
                continue
            for metric in GPU_METRICS:
                state = gpu.state(metric.key)
                value = gpu.value(metric.key)
                ok = state is MetricState.OK and not math.isnan(value)
                if ok:
                    text = _reading_text(metric, value)
                elif state is MetricState.NOT_READ:  # this tab asks for every metric: read at the next tick
                    text = translate("DetailsPage", "being read…")
                elif state is MetricState.OK:  # read, but no number (a rate after its counter's reset, no XID yet)
                    text = translate("metrics", metric.none_text or MetricState.NO_DATA.label)
                else:
                    text = translate("metrics", state.label)
                if ok and metric.key in gpu.lower_bounds:
                    text = at_least(text)
                item = items[metric.key]
                if item.text(1) != text:
                    item.setText(1, text)
                # A value read at an earlier tick (a slower cadence: limits, error counters, energy)
                # says how long ago; one read now, or none at all, says nothing here.
                age_s = held_seconds(gpu.age_s(metric.key)) if ok else 0
                read = translate("DetailsPage", "{age} s ago").format(age=age_s) if age_s else ""
                if item.text(2) != read:
                    item.setText(2, read)
            self._show_links(self._links[gpu.index], gpu.nvlink_link_tx_bytes_per_s, gpu.nvlink_link_rx_bytes_per_s)

    @staticmethod
    def _not_read(items: dict[str, QTreeWidgetItem], links: QTreeWidgetItem, sample: Sample) -> None:
        """A GPU this sample has no values of (the driver not answering, a host unreachable): why,
        in place of each reading. Left as they were, the last values read stood as current."""
        problem = sample.problem
        why = problem[0] if problem else translate("metrics", MetricState.NO_DATA.label)
        for item in (*items.values(), links):
            if item.text(1) != why:
                item.setText(1, why)
            item.setText(2, "")
        while links.childCount():
            links.takeChild(0)

    @staticmethod
    def _show_links(parent: QTreeWidgetItem, tx: tuple[float, ...], rx: tuple[float, ...]) -> None:
        count = max(len(tx), len(rx))
        parent.setText(
            1,
            translate("DetailsPage", "{count} links").format(count=count)
            if count
            else translate("DetailsPage", "no links read"),
        )
        while parent.childCount() > count:
            parent.takeChild(parent.childCount() - 1)
        while parent.childCount() < count:
            QTreeWidgetItem(parent, [translate("DetailsPage", "Link {link}").format(link=parent.childCount()), ""])
        for link in range(count):
            sent = format_bytes(tx[link]) + "/s" if link < len(tx) else "–"
            received = format_bytes(rx[link]) + "/s" if link < len(rx) else "–"
            text = f"TX {sent} · RX {received}"
            child = parent.child(link)
            if child is not None and child.text(1) != text:
                child.setText(1, text)
