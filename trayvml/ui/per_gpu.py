"""The Per GPU tab: small multiples, a panel per GPU for one metric group (as Mission Center lays
out its GPUs), beside the GPUs tab's overlay of every GPU in one panel.

A page per group is built the first time it is chosen and kept: pyqtgraph leaks a PlotItem per
plot destroyed (pyqtgraph#2672), so the pages are few and never rebuilt while the GPUs stay.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QStackedWidget, QVBoxLayout, QWidget

from trayvml.core.metrics import Group
from trayvml.core.sample import DeviceInfo
from trayvml.core.units import short_name
from trayvml.ui.plot_pages import GpuPage, PlotPage, View
from trayvml.ui.plots import GPU_PANELS, Panel, PanelSpec

# Line panels only: the throttle strip already has a row per GPU, processes a line per process.
PER_GPU_SPECS = tuple(spec for spec in GPU_PANELS if spec.metrics and not spec.strip)
MAX_COLUMNS = 4  # before the page's width is known
MIN_PANEL_WIDTH_PX = 300  # a panel narrower than this cuts its title and crowds its time axis
TITLE_ROOM_PX = 40  # beside a panel's title: the value axis's width
translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)


def gpu_title(info: DeviceInfo) -> str:
    """Index, model and PCI bus (without its domain, 0 on nearly every machine): identical GPUs
    differ by index and bus."""
    title = translate("PerGpu", "GPU {index} {name}").format(index=info.index, name=short_name(info.shown_name))
    if not info.pci_bus_id:
        return title
    return translate("PerGpu", "{gpu} · bus {bus}").format(gpu=title, bus=info.pci_bus_id.split(":", 1)[-1])


class PerGpuPage(GpuPage):
    """One group of the catalog, one panel per GPU, in a grid as wide as the page: as many columns
    as fit MIN_PANEL_WIDTH_PX each, the rows below scrolled to, never a column cut at the right."""

    panel_px = MIN_PANEL_WIDTH_PX  # the narrowest a column may be: its widest title's (set in __init__)

    def __init__(self, spec: PanelSpec, devices: tuple[DeviceInfo, ...]) -> None:
        count = len(devices)
        titles = [f"{gpu_title(info)} — {spec.title}" if count == 1 else gpu_title(info) for info in devices]
        PlotPage.__init__(self, (spec,) * count, count, self.columns_for(count, 0), titles)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # A title wider than the panel widens its column past its share: with 8 GPUs the fourth
        # column ("GPU 7 RTX 4070 Laptop · bus DE:00.0") ran off the page, nothing to scroll to.
        widest_px = max((panel.plot.titleLabel.item.boundingRect().width() for panel in self.panels), default=0.0)
        self.panel_px = max(MIN_PANEL_WIDTH_PX, math.ceil(widest_px) + TITLE_ROOM_PX)
        self._size_columns()

    def _size_columns(self) -> None:
        """The columns in use alike, whatever their titles; those left empty by fewer columns take no
        room (kept at their width, the page was as wide as every GPU side by side)."""
        grid = self.layout_widget.ci.layout
        for column in range(len(self.panels)):
            used = column < self.columns
            grid.setColumnStretchFactor(column, 1 if used else 0)
            grid.setColumnMinimumWidth(column, self.panel_px if used else 0)
            grid.setColumnPreferredWidth(column, self.panel_px if used else 0)

    @staticmethod
    def columns_for(count: int, width_px: int, panel_px: int = MIN_PANEL_WIDTH_PX) -> int:
        """Two GPUs one above the other (wide panels, like the overlay's); more side by side as the
        width allows, ``panel_px`` each (before the width is known, a square-ish grid)."""
        if count <= 2:
            return 1
        if width_px <= 0:
            return min(MAX_COLUMNS, math.ceil(math.sqrt(count)))
        most = max(1, min(count, width_px // panel_px))
        # As few as the rows need: 4 GPUs where 3 fit a row go 2 by 2, not 3 and a lone 1.
        return math.ceil(count / math.ceil(count / most))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.lay_out(self.columns_for(len(self.panels), self.viewport().width(), self.panel_px))

    def lay_out(self, columns: int) -> None:
        """The same plots moved into ``columns`` columns (never rebuilt: pyqtgraph leaks destroyed ones)."""
        if columns == self.columns:
            return
        grid = self.layout_widget.ci.layout
        for panel in self.panels:
            grid.removeItem(panel.plot)
        for index, panel in enumerate(self.panels):
            grid.addItem(panel.plot, *divmod(index, columns))
        self.columns = columns
        self._size_columns()
        self.fit_height()

    def draw_panel(self, panel: Panel, view: View) -> None:
        self._mark(panel, view)
        gpu = self.panels.index(panel)
        self.draw_lines(panel, view, (gpu,))
        if gpu in view.hidden_gpus:
            panel.show_notice(translate("PerGpu", "Hidden: tick it under Show"))


class PerGpuTab(QWidget):
    page_built = Signal(object)  # a PerGpuPage, the first time its group is chosen
    page_changed = Signal()

    def __init__(self) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        bar = QHBoxLayout()
        bar.setContentsMargins(6, 4, 6, 0)
        metric_label = QLabel(translate("PerGpu", "Metric:"))
        bar.addWidget(metric_label)
        self.group_box = QComboBox()
        metric_label.setBuddy(self.group_box)  # read by its label, not as its choice alone
        for spec in PER_GPU_SPECS:
            self.group_box.addItem(translate("metrics", spec.group.value))
        bar.addWidget(self.group_box)
        self.legend = QLabel()  # which line is which metric: the panels' titles name the GPUs
        self.legend.setStyleSheet("color: palette(placeholder-text); padding-left: 8px;")
        bar.addWidget(self.legend)
        bar.addStretch(1)
        layout.addLayout(bar)
        self.stack = QStackedWidget()
        layout.addWidget(self.stack, 1)
        self.pages: dict[Group, PerGpuPage] = {}
        self._devices: tuple[DeviceInfo, ...] = ()
        self._styled: Callable[[PlotPage], None] = lambda _: None
        self.group_box.currentIndexChanged.connect(self._show_group)

    def set_devices(self, devices: tuple[DeviceInfo, ...], styled: Callable[[PlotPage], None]) -> None:
        """Another set of GPUs: the pages of the last are dropped, built again when chosen."""
        self._devices = devices
        self._styled = styled
        for page in self.pages.values():
            self.stack.removeWidget(page)
            page.setParent(None)
            page.deleteLater()
        self.pages = {}
        self._show_group(self.group_box.currentIndex())

    @property
    def page(self) -> PerGpuPage | None:
        current = self.stack.currentWidget()
        return current if isinstance(current, PerGpuPage) else None

    def _show_group(self, index: int) -> None:
        if not self._devices or index < 0:
            return
        spec = PER_GPU_SPECS[index]
        self.legend.setText(spec.title)
        page = self.pages.get(spec.group)
        if page is None:
            page = PerGpuPage(spec, self._devices)
            self.pages[spec.group] = page
            self.stack.addWidget(page)
            self._styled(page)
            self.page_built.emit(page)
        self.stack.setCurrentWidget(page)
        self.page_changed.emit()
