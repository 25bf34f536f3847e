"""The pop-out graph window: timelines of every metric, the machine, processes and device details."""

from __future__ import annotations

import csv
import io
import math
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QByteArray, QEvent, QRectF, QSettings, QSortFilterProxyModel, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QColor, QGuiApplication, QPalette, QShowEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QToolBar,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from trayvml.alerts import AlertEvent, Severity
from trayvml.config import write_atomically
from trayvml.core.metrics import HOST_METRIC_BY_KEY, STATIC_FIELDS, Group
from trayvml.core.safe_text import menu_label
from trayvml.core.sample import DeviceInfo, MetricState, Sample
from trayvml.core.units import format_static, short_name
from trayvml.history import History, Series
from trayvml.ui.plots import (
    GPU_PANELS,
    HOST_PANELS,
    LINE_STYLES,
    PANEL_HEIGHT_PX,
    REASON_LEGEND,
    TICK_LENGTH_PX,
    Panel,
    PanelSpec,
    UnitAxis,
    value_axis_width_px,
)
from trayvml.ui.processes import ProcessModel
from trayvml.ui.theme import gpu_colour

MAX_LISTED_EVENTS = 1000
MAX_MARKERS = 50
SEVERITY_COLOURS = {Severity.INFO: "#4e79a7", Severity.WARNING: "#f5a524", Severity.CRITICAL: "#e5484d"}
RANGES_S = (
    ("1 min", 60),
    ("5 min", 300),
    ("15 min", 900),
    ("1 h", 3600),
    ("6 h", 6 * 3600),
    ("12 h", 12 * 3600),
)
DEFAULT_RANGE_S = 900
HOST_COLOUR = "#4e79a7"
REFRESH_AFTER_PAN_MS = 120
DEFAULT_SIZE_PX = (1100, 820)
FRAME_ALLOWANCE_PX = (16, 40)  # a window manager's borders and title bar, before it reports its own


class _PlotPage(QScrollArea):
    """A scrolling column of linked plots in one pyqtgraph scene."""

    def __init__(self, specs: tuple[PanelSpec, ...], gpu_count: int) -> None:
        super().__init__()
        self.setWidgetResizable(True)
        self.layout_widget = pg.GraphicsLayoutWidget()
        self.layout_widget.setMinimumHeight(PANEL_HEIGHT_PX * len(specs))
        self.setWidget(self.layout_widget)
        self.panels: list[Panel] = []
        first: pg.PlotItem | None = None
        for row, spec in enumerate(specs):
            unit = spec.metrics[0].unit if spec.metrics else None
            axes = {"bottom": pg.DateAxisItem()}
            if unit is not None and not spec.strip:
                axes["left"] = UnitAxis(unit)
            elif spec.group is Group.PROCESSES:
                from trayvml.core.metrics import Unit

                axes["left"] = UnitAxis(Unit.BYTES)
            plot = self.layout_widget.addPlot(row=row, col=0, axisItems=axes, title=spec.title)
            plot.setMenuEnabled(False)
            # No grid: pyqtgraph's costs about 50 ms a redraw, more than all the curves.
            # Short inward ticks mark the scale instead.
            for name in ("left", "bottom"):
                plot.getAxis(name).setStyle(tickLength=TICK_LENGTH_PX)
            plot.getViewBox().setLimits(yMin=0 if not spec.strip else -0.5)
            if spec.strip:
                plot.getAxis("left").setWidth(value_axis_width_px())
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            self.panels.append(Panel(spec, plot, gpu_count))
        self.first = first

    def visible_panels(self) -> list[Panel]:
        """The panels inside the scrolled viewport: only those are worth redrawing."""
        top = self.verticalScrollBar().value()
        shown = QRectF(0, top, self.viewport().width(), self.viewport().height())
        return [p for p in self.panels if p.plot.geometry().intersects(shown)]


class GraphWindow(QMainWindow):
    def __init__(self, history: History) -> None:
        super().__init__()
        self.setObjectName("trayvml_window")
        self.history = history
        self.sample: Sample | None = None
        self.range_s = DEFAULT_RANGE_S
        self.following = True
        self.gpu_count = 0
        self.hidden_gpus: set[int] = set()
        self.redraws = 0
        self._devices: tuple[DeviceInfo, ...] = ()
        self._setting_range = False
        self._drawn_until_s = 0.0  # the end of the range last drawn
        self.setWindowTitle("trayvml")
        self.resize(*DEFAULT_SIZE_PX)
        self._build_toolbar()
        self.tabs = QTabWidget()
        self.setCentralWidget(self.tabs)
        self.gpu_page: _PlotPage | None = None
        self.host_page = _PlotPage(HOST_PANELS, 0)
        self._watch_range(self.host_page)
        self.process_model = ProcessModel()
        proxy = QSortFilterProxyModel(self)
        proxy.setSourceModel(self.process_model)
        proxy.setSortRole(ProcessModel.SORT_ROLE)
        self.process_view = QTableView()
        self.process_view.setModel(proxy)
        self.process_view.setSortingEnabled(True)
        self.process_view.sortByColumn(ProcessModel.MEMORY_COLUMN, Qt.SortOrder.DescendingOrder)
        self.process_view.horizontalHeader().setStretchLastSection(True)
        self.process_view.verticalHeader().setVisible(False)
        self.process_view.setAlternatingRowColors(True)
        self.details = QTreeWidget()
        self.details.setHeaderLabels(["", "Value"])
        self.details.setColumnWidth(0, 260)
        self._gpu_tab = QWidget()
        self._gpu_tab_layout = QVBoxLayout(self._gpu_tab)
        self._gpu_tab_layout.setContentsMargins(0, 0, 0, 0)
        self.tabs.addTab(self._gpu_tab, "GPUs")
        self.tabs.addTab(self.host_page, "Machine")
        self.tabs.addTab(self.process_view, "Processes")
        self.tabs.addTab(self.details, "Device details")
        self.alert_table = QTableWidget(0, 4)
        self.alert_table.setHorizontalHeaderLabels(["Time", "GPU", "Severity", "What happened"])
        self.alert_table.horizontalHeader().setStretchLastSection(True)
        self.alert_table.verticalHeader().setVisible(False)
        self.alert_table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.tabs.addTab(self.alert_table, "Alerts")
        self.events: list[AlertEvent] = []
        self.tabs.currentChanged.connect(lambda _: self.refresh())
        self._pan_timer = QTimer(self)
        self._pan_timer.setObjectName("refresh_after_pan_timer")
        self._pan_timer.setSingleShot(True)
        self._pan_timer.timeout.connect(self.refresh)
        self._settings = QSettings("trayvml", "trayvml")
        geometry = self._settings.value("window/geometry")
        restored = isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)
        self._fit_to_screen(move=restored)
        self.apply_palette()

    # ---- toolbar ----
    def _build_toolbar(self) -> None:
        bar = QToolBar("View")
        bar.setObjectName("view_toolbar")
        bar.setMovable(False)
        self.addToolBar(bar)
        self.range_buttons = QButtonGroup(self)
        for label, seconds in RANGES_S:
            button = QPushButton(label)
            button.setCheckable(True)
            button.setChecked(seconds == self.range_s)
            button.setFlat(True)
            button.clicked.connect(lambda _=False, s=seconds: self.set_range(s))
            self.range_buttons.addButton(button, seconds)
            bar.addWidget(button)
        bar.addSeparator()
        self.follow_button = QPushButton("Follow live")
        self.follow_button.setCheckable(True)
        self.follow_button.setChecked(True)
        self.follow_button.clicked.connect(lambda checked: self.set_following(checked))
        bar.addWidget(self.follow_button)
        spacer = QWidget()
        spacer.setSizePolicy(spacer.sizePolicy().horizontalPolicy().Expanding, spacer.sizePolicy().verticalPolicy())
        bar.addWidget(spacer)
        self.export_csv_action = QAction("Export CSV…", self)
        self.export_csv_action.triggered.connect(self._ask_export_csv)
        bar.addAction(self.export_csv_action)
        self.export_png_action = QAction("Save PNG…", self)
        self.export_png_action.triggered.connect(self._ask_export_png)
        bar.addAction(self.export_png_action)
        self.addToolBarBreak()
        gpus = QToolBar("GPUs")
        gpus.setObjectName("gpu_toolbar")
        gpus.setMovable(False)
        self.addToolBar(gpus)
        self.gpu_toggles_widget = QWidget()
        self.gpu_toggles_layout = QHBoxLayout(self.gpu_toggles_widget)
        self.gpu_toggles_layout.setContentsMargins(4, 0, 4, 0)
        self.gpu_toggles: list[QCheckBox] = []
        gpus.addWidget(QLabel(" Show: "))
        gpus.addWidget(self.gpu_toggles_widget)
        self.status_label = QLabel()
        self.statusBar().addWidget(self.status_label, 1)

    def _build_gpu_widgets(self, sample: Sample) -> None:
        """(Re)build what depends on the set of GPUs; happens once, or if the GPUs change."""
        self.gpu_count = len(sample.gpus)
        self._devices = sample.devices
        layout = self._gpu_tab_layout
        if self.gpu_page is not None:
            self.gpu_page.setParent(None)
            self.gpu_page.deleteLater()
        self.gpu_page = _PlotPage(GPU_PANELS, self.gpu_count)
        self._watch_range(self.gpu_page)
        layout.addWidget(self.gpu_page)
        legend = QLabel(f"Throttle strip: {REASON_LEGEND}")
        legend.setStyleSheet("color: palette(placeholder-text); padding: 2px 6px;")
        layout.addWidget(legend)
        for toggle in self.gpu_toggles:
            toggle.setParent(None)
        self.gpu_toggles = []
        for gpu, info in zip(sample.gpus, sample.devices, strict=True):
            toggle = QCheckBox(menu_label(f"{gpu.index} {short_name(info.name)}", dbusmenu=False))  # & is a mnemonic
            colour = gpu_colour(gpu.index).name()
            toggle.setStyleSheet(f"QCheckBox {{ color: {colour}; font-weight: bold; }}")
            toggle.setChecked(gpu.index not in self.hidden_gpus)
            toggle.toggled.connect(lambda on, i=gpu.index: self.set_gpu_visible(i, on))
            self.gpu_toggles_layout.addWidget(toggle)
            self.gpu_toggles.append(toggle)
        self._fill_details(sample)
        self.apply_palette()

    def _watch_range(self, page: _PlotPage) -> None:
        page.verticalScrollBar().valueChanged.connect(lambda _: self._pan_timer.start(REFRESH_AFTER_PAN_MS))
        for panel in page.panels:
            panel.plot.getViewBox().sigRangeChangedManually.connect(self._user_moved)
        page.layout_widget.scene().sigMouseMoved.connect(lambda pos, p=page: self._mouse_moved(p, pos))

    # ---- public controls ----
    def set_range(self, seconds: int) -> None:
        self.range_s = seconds
        button = self.range_buttons.button(seconds)
        if button is not None:
            button.setChecked(True)
        self.set_following(True)

    def set_following(self, following: bool) -> None:
        self.following = following
        self.follow_button.setChecked(following)
        self.refresh()

    def set_gpu_visible(self, index: int, visible: bool) -> None:
        if visible:
            self.hidden_gpus.discard(index)
        else:
            self.hidden_gpus.add(index)
        if index < len(self.gpu_toggles) and self.gpu_toggles[index].isChecked() != visible:
            self.gpu_toggles[index].setChecked(visible)
        self.refresh()

    def focus_gpu(self, index: int) -> None:
        """Show one GPU alone (the others can be ticked back on)."""
        for k in range(self.gpu_count):
            self.set_gpu_visible(k, k == index)
        self.tabs.setCurrentIndex(0)

    def _user_moved(self, *_: object) -> None:
        if self._setting_range:
            return
        self.following = False
        self.follow_button.setChecked(False)
        self._pan_timer.start(REFRESH_AFTER_PAN_MS)

    # ---- alerts: listed in their tab, marked on the timelines ----
    def add_events(self, events: list[AlertEvent]) -> None:
        for event in events:
            self.events.append(event)
            row = 0  # newest first
            self.alert_table.insertRow(row)
            when = datetime.fromtimestamp(event.timestamp_s).strftime("%Y-%m-%d %H:%M:%S")
            label = "resolved" if event.kind == "resolved" else event.severity.name.lower()
            gpu = f"{event.gpu_index} {short_name(event.gpu_name)}" if event.gpu_index >= 0 else "all"
            for column, text in enumerate((when, gpu, label, event.title)):
                item = QTableWidgetItem(text)
                if event.kind != "resolved":
                    item.setForeground(QColor(SEVERITY_COLOURS[event.severity]))
                self.alert_table.setItem(row, column, item)
        if len(self.events) > MAX_LISTED_EVENTS:
            del self.events[: len(self.events) - MAX_LISTED_EVENTS]
            while self.alert_table.rowCount() > MAX_LISTED_EVENTS:
                self.alert_table.removeRow(self.alert_table.rowCount() - 1)

    def _mark_events(self, panel: Panel, start: float, end: float) -> None:
        shown = [
            e
            for e in self.events
            if start <= e.timestamp_s <= end and e.kind != "resolved" and e.gpu_index not in self.hidden_gpus
        ][-MAX_MARKERS:]
        for marker, event in zip(panel.set_markers(len(shown)), shown, strict=True):
            marker.setPen(pg.mkPen(SEVERITY_COLOURS[event.severity], width=1, style=Qt.PenStyle.DotLine))
            marker.setPos(event.timestamp_s)

    # ---- samples ----
    def update_sample(self, sample: Sample) -> None:
        self.sample = sample
        if sample.gpus and (len(sample.gpus) != self.gpu_count or sample.devices != self._devices):
            self._build_gpu_widgets(sample)
        title = "trayvml"
        if sample.gpus:
            title += f" — {len(sample.gpus)} GPU{'s' if len(sample.gpus) > 1 else ''}"
        if sample.simulation:
            title += f" — SIMULATED ({sample.simulation.removeprefix('simulated GPUs ').strip('()')})"
        self.setWindowTitle(title)
        if self.isVisible() and self._worth_redrawing(sample):
            self.refresh()  # hidden, the window costs nothing; the history goes on regardless

    def _worth_redrawing(self, sample: Sample) -> bool:
        """Following live, redraw once the view would move by a pixel: at 12 h a second is 1/30 px."""
        if not self.following or self.gpu_page is None or self.gpu_page.first is None:
            return True
        width_px = max(1.0, self.gpu_page.first.getViewBox().width())
        return sample.timestamp_s - self._drawn_until_s >= self.range_s / width_px

    def visible_range(self) -> tuple[float, float]:
        if self.following or self.gpu_page is None or self.gpu_page.first is None:
            end = self.sample.timestamp_s if self.sample else time.time()
            return end - self.range_s, end
        (x0, x1), _ = self.gpu_page.first.getViewBox().viewRange()
        return x0, x1

    def refresh(self) -> None:
        """Redraw the current tab for the visible range, from the history tier that fits its width."""
        if self.sample is None:
            return
        start, end = self.visible_range()
        self._drawn_until_s = end
        self._set_x_range(start, end)
        current = self.tabs.currentWidget()
        if current is self._gpu_tab and self.gpu_page is not None:
            self._draw_gpu_page(self.gpu_page, start, end)
        elif current is self.host_page:
            self._draw_host_page(start, end)
        elif current is self.process_view:
            self.process_model.update_processes(self.sample)
        self.status_label.setText(self._status_text())
        self.redraws += 1

    def _set_x_range(self, start: float, end: float) -> None:
        self._setting_range = True
        try:
            for page in (self.gpu_page, self.host_page):
                if page is not None and page.first is not None:
                    page.first.setXRange(start, end, padding=0)
        finally:
            self._setting_range = False

    def _budget(self, page: _PlotPage) -> int:
        width = page.first.getViewBox().width() if page.first is not None else 0
        return max(100, int(width) or 900)

    def _draw_gpu_page(self, page: _PlotPage, start: float, end: float) -> None:
        assert self.sample is not None
        budget = self._budget(page)
        names = {g.index: short_name(i.name) for g, i in zip(self.sample.gpus, self.sample.devices, strict=True)}
        for panel in page.visible_panels():
            spec = panel.spec
            self._mark_events(panel, start, end)
            if spec.group is Group.PROCESSES:
                self._draw_processes(panel, start, end, budget)
                continue
            if spec.strip:
                panel.set_strip(self.history.gpu_series(spec.metrics[0].key, start, end, budget), self.gpu_count)
                continue
            # By index: two GPUs of one model share a name, and only one may lack the metric.
            unsupported = [
                g.index
                for g in self.sample.gpus
                if all(g.state(m.key) is MetricState.NOT_SUPPORTED for m in spec.metrics)
            ]
            for k, metric in enumerate(spec.metrics):
                series = self.history.gpu_series(metric.key, start, end, budget)
                for gpu in range(self.gpu_count):
                    curve = panel.curves[(gpu, k)]
                    shown = gpu not in self.hidden_gpus and gpu not in unsupported
                    curve.setVisible(shown)
                    if shown and series is not None:
                        curve.setData(series.times_s, series.mean[:, gpu])
            every = len(unsupported) == len(self.sample.gpus) and unsupported
            models = dict.fromkeys(names[g] for g in unsupported)
            panel.show_notice(f"Not supported on {', '.join(models)}" if every else "")

    def _draw_processes(self, panel: Panel, start: float, end: float, budget: int) -> None:
        found = [
            (gpu, label, series)
            for gpu, label, series in self.history.processes.series(start, end, budget)
            if gpu not in self.hidden_gpus
        ][:12]
        for curve, (gpu, label, series) in zip(panel.set_extra_curves(len(found)), found, strict=True):
            curve.setPen(pg.mkPen(gpu_colour(gpu), width=1.4))
            curve.setData(series.times_s, series.mean[:, 0], name=f"GPU {gpu}: {label}")
        panel.show_notice("" if found else "No GPU processes in this range")

    def _draw_host_page(self, start: float, end: float) -> None:
        budget = self._budget(self.host_page)
        for panel in self.host_page.visible_panels():
            curves = panel.set_extra_curves(len(panel.spec.metrics) + self._core_count(panel))
            for k, metric in enumerate(panel.spec.metrics):
                series = self.history.host_series(metric.key, start, end, budget)
                if series is not None:
                    curves[k].setPen(pg.mkPen(HOST_COLOUR, width=1.8, style=LINE_STYLES[k % len(LINE_STYLES)]))
                    curves[k].setData(series.times_s, series.mean[:, 0])
            if panel.spec.group is Group.CPU:
                cores = self.history.core_series(start, end, budget)
                if cores is not None:
                    for c, curve in enumerate(panel.extra_curves[1 : 1 + cores.mean.shape[1]]):
                        curve.setPen(pg.mkPen((150, 150, 150, 90), width=1))
                        curve.setData(cores.times_s, cores.mean[:, c])

    def _core_count(self, panel: Panel) -> int:
        return self.history.core_count if panel.spec.group is Group.CPU else 0

    def _status_text(self) -> str:
        sample = self.sample
        if sample is None:
            return ""
        parts = []
        if sample.simulation:
            parts.append(f"SIMULATED: {sample.simulation}")
        if sample.problem is not None:
            parts.append(sample.problem[1])
        if sample.system is not None:
            parts.append(f"driver {sample.system.driver_version} · CUDA {sample.system.cuda_driver_version}")
        parts.append("following live" if self.following else "paused on a past range: press Follow live")
        return "   ·   ".join(parts)

    # ---- crosshair ----
    def _mouse_moved(self, page: _PlotPage, position: object) -> None:
        x = None
        for panel in page.panels:
            if panel.plot.sceneBoundingRect().contains(position):
                x = panel.plot.getViewBox().mapSceneToView(position).x()
                break
        names = self._names()
        for panel in page.panels:
            panel.crosshair.setVisible(x is not None)
            panel.readout.setVisible(x is not None)
            if x is None:
                continue
            panel.crosshair.setPos(x)
            panel.readout.setHtml(panel.values_at(x, names))
            (x0, _), (_, y1) = panel.plot.getViewBox().viewRange()
            panel.readout.setPos(x0, y1)

    def _names(self) -> Callable[[int], str]:
        devices = {d.index: d for d in self._devices}
        return lambda gpu: f"{gpu} {short_name(devices[gpu].name)}" if gpu in devices else f"GPU {gpu}"

    # ---- device details ----
    def _fill_details(self, sample: Sample) -> None:
        self.details.clear()
        if sample.system is not None:
            system = QTreeWidgetItem(self.details, ["System", sample.system.hostname])
            for label, value in (
                ("Driver", sample.system.driver_version),
                ("CUDA driver API", sample.system.cuda_driver_version),
                ("NVML", sample.system.nvml_version),
            ):
                QTreeWidgetItem(system, [label, value])
            system.setExpanded(True)
        for info in sample.devices:
            item = QTreeWidgetItem(self.details, [f"GPU {info.index}", info.name])
            for field in STATIC_FIELDS:
                value = getattr(info, field.key)
                QTreeWidgetItem(item, [field.label, format_static(field, value) or "not available"])
            item.setExpanded(True)

    # ---- export ----
    def export_csv(self, path: str) -> None:
        """The visible range of every plotted series, written atomically."""
        start, end = self.visible_range()
        budget = self._budget(self.gpu_page) if self.gpu_page is not None else 900
        columns: list[tuple[str, Series, int]] = []
        for spec in GPU_PANELS:
            for metric in spec.metrics:
                series = self.history.gpu_series(metric.key, start, end, budget)
                if series is not None:
                    columns.extend((f"gpu{g}.{metric.key}", series, g) for g in range(self.gpu_count))
        for spec in HOST_PANELS:
            for metric in spec.metrics:
                series = self.history.host_series(metric.key, start, end, budget)
                if series is not None:
                    columns.append((f"host.{HOST_METRIC_BY_KEY[metric.key].key}", series, 0))
        if not columns:
            raise OSError("there is no data in the visible range yet")
        # Joined on time: series from different tiers or sources have different sample times, so
        # one row per time any series has, with empty cells where a series has no value then.
        times = np.unique(np.concatenate([series.times_s for _, series, _ in columns]))
        table = np.full((len(times), len(columns)), np.nan)
        for k, (_, series, column) in enumerate(columns):
            table[np.searchsorted(times, series.times_s), k] = series.mean[:, column]
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["time", *(name for name, _, _ in columns)])
        for t, row in zip(times, table, strict=True):
            values = ["" if math.isnan(v) else f"{v:.6g}" for v in row]
            writer.writerow([datetime.fromtimestamp(float(t)).isoformat(timespec="seconds"), *values])
        write_atomically(Path(path), buffer.getvalue().encode())

    def export_png(self, path: str) -> None:
        if not self.grab().save(path):
            raise OSError(f"could not write {path}")

    def _ask_export_csv(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export visible range", "trayvml.csv", "CSV (*.csv)")
        if path:
            self._try(lambda: self.export_csv(path), "export the CSV")

    def _ask_export_png(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save window as PNG", "trayvml.png", "PNG (*.png)")
        if path:
            self._try(lambda: self.export_png(path), "save the PNG")

    def _try(self, action: Callable[[], None], what: str) -> None:
        try:
            action()
        except OSError as error:
            QMessageBox.warning(self, "trayvml", f"Could not {what}: {error.strerror or error}.")

    # ---- look, geometry, visibility ----
    def apply_palette(self) -> None:
        palette = self.palette()
        background = palette.color(QPalette.ColorRole.Base)
        foreground = palette.color(QPalette.ColorRole.Text)
        for page in (self.gpu_page, self.host_page):
            if page is None:
                continue
            page.layout_widget.setBackground(background)
            for panel in page.panels:
                for name in ("left", "bottom"):
                    axis = panel.plot.getAxis(name)
                    axis.setPen(foreground)
                    axis.setTextPen(foreground)
                panel.plot.setTitle(panel.spec.title, color=foreground.name(), size="10pt")
                panel.readout.setColor(foreground)
                panel.notice.setColor(foreground)

    def _fit_to_screen(self, move: bool) -> None:
        """Within the free area of the screen the window opens on: the default 1100×820 is taller than
        a 1280×800 laptop screen, and a saved geometry may come from a bigger one."""
        screen = QGuiApplication.screenAt(self.geometry().center()) or self.screen()
        area = screen.availableGeometry()
        # Until shown, the window manager's frame is unknown: leave room for a title bar and borders.
        frame_w, frame_h = FRAME_ALLOWANCE_PX
        width = min(self.width(), area.width() - frame_w)
        height = min(self.height(), area.height() - frame_h)
        self.resize(width, height)
        if move:  # a position of our own only when restoring one; otherwise the window manager places it
            x = min(max(self.x(), area.left()), area.left() + area.width() - width - frame_w)
            y = min(max(self.y(), area.top()), area.top() + area.height() - height - frame_h)
            self.move(x, y)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.apply_palette()
        super().changeEvent(event)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self.refresh()

    def hideEvent(self, event: object) -> None:  # noqa: N802 - Qt override
        self._settings.setValue("window/geometry", self.saveGeometry())
        super().hideEvent(event)  # type: ignore[arg-type]

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        # Hidden, not destroyed: pyqtgraph leaks a PlotItem per window built (pyqtgraph#2672).
        event.ignore()
        self.hide()
