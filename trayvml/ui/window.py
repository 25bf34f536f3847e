"""The pop-out graph window: the frame around its pages (GPUs, Machine, Processes, Device details,
Alerts), with the range and follow-live controls, the GPU toggles and the status bar.

Redraws are asked for, not done on the spot: requests that come faster than the screen can show
fold into one, and a redraw runs a panel per turn of the event loop, so that the GUI thread stays
free for input and the tray whatever the number of GPUs.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QByteArray, QCoreApplication, QEvent, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAccessible,
    QAccessibleInterface,
    QAction,
    QCloseEvent,
    QGuiApplication,
    QKeySequence,
    QPainter,
    QPaintEvent,
    QPalette,
    QResizeEvent,
    QShortcut,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QAccessibleWidget,
    QButtonGroup,
    QCheckBox,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QTabWidget,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from trayvml.alerts.rules import AlertEvent
from trayvml.core.clock import set_back_s
from trayvml.core.demand import EVERYTHING, PROCESSES
from trayvml.core.heap import give_back_free_memory
from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.lines import origin_text, simulation_text
from trayvml.core.metrics import Group
from trayvml.core.safe_text import clean, rich_text, shorten, shown_url
from trayvml.core.sample import DeviceInfo, MetricState, Sample, simulation_scenario
from trayvml.core.units import format_clock, format_duration, short_name
from trayvml.history.timeline import GAP_MIN_S, History
from trayvml.monitor.energy import energy_in_range, format_energy
from trayvml.monitor.spans import AsleepSpans
from trayvml.ui.alerts_page import AlertsPage
from trayvml.ui.details_page import DetailsPage
from trayvml.ui.export import export_csv, export_png
from trayvml.ui.gaps import pick_range, shade_gaps, visible_gaps
from trayvml.ui.legend import GpuLegend
from trayvml.ui.per_gpu import PerGpuTab
from trayvml.ui.plot_pages import MARKER_KEY, GpuPage, MachinePage, PlotPage, View
from trayvml.ui.plots import REASON_LEGEND, Panel
from trayvml.ui.processes import ProcessesTab

translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)
RANGES_S = (
    (QT_TRANSLATE_NOOP("GraphWindow", "1 min"), 60),
    (QT_TRANSLATE_NOOP("GraphWindow", "5 min"), 300),
    (QT_TRANSLATE_NOOP("GraphWindow", "15 min"), 900),
    (QT_TRANSLATE_NOOP("GraphWindow", "1 h"), 3600),
    (QT_TRANSLATE_NOOP("GraphWindow", "6 h"), 6 * 3600),
    (QT_TRANSLATE_NOOP("GraphWindow", "12 h"), 12 * 3600),
    (QT_TRANSLATE_NOOP("GraphWindow", "24 h"), 24 * 3600),  # this and the next read the history on disk
    (QT_TRANSLATE_NOOP("GraphWindow", "7 d"), 7 * 24 * 3600),
)
DEFAULT_RANGE_S = 900
ENERGY_POINTS = 4000  # buckets read to integrate the power in view: the 1 s tier for ranges up to an hour
ENERGY_KEY = "power_draw_w"  # the metric the energy in view is integrated from
ENERGY_COUNTER_KEY = "energy_consumed_j"  # the driver's counter: read while a tab shows it (see needs)
COVERED_ENOUGH = 0.98  # below this share of the range held by the history, the energy says how much it covers
REFRESH_AFTER_PAN_MS = 120
DEFAULT_SIZE_PX = (1100, 820)
FRAME_ALLOWANCE_PX = (16, 40)  # a window manager's borders and title bar, before it reports its own
MIN_ZOOM_SPAN_S = 10.0  # Ctrl+wheel zooms in to this many seconds at most
FIRST_MINUTE_S = 60.0  # following live, a range longer than the history shows this much at least
# Following live, the view reaches this share of its range past the newest reading, and moves on by
# that much once the lines reach its right edge: in between, each second adds the new stretch of the
# lines and nothing else moves (time axes, grids, shading, labels), where moving the whole view on
# every second had Qt draw every panel in view anew each second. The range (its energy, its export)
# is still the last 15 minutes, say: the view holds it, and as much as the lead before it.
LEAD_SHARE = 0.05


class StatusLine(QWidget):
    """The status bar's text, cut with "…" where the window is too narrow for it (the energy of 16
    GPUs) and whole in its tooltip; its length never sets the window's width. A plain widget, not
    a QLabel: a label's new text asks its layout for room, and the status bar then repaints itself
    whole, so the line was painted twice a second, and its cut worked out three times."""

    _accessible_installed = False

    def __init__(self) -> None:
        super().__init__()
        if not StatusLine._accessible_installed:
            StatusLine._accessible_installed = True
            QAccessible.installFactory(_accessible_status_line)
        self._text = ""
        # (text, width, dots per inch, the text as shown): shown_text's last
        self._shown: tuple[str, int, int, str] = ("", 0, 0, "")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:  # noqa: N802 - QLabel's name, which callers use
        if text != self._text:
            self._text = text
            self._tooltip()
            self.setAccessibleName(text)  # what a screen reader reads of a label
            self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        margins = self.contentsMargins()
        return QSize(0, self.fontMetrics().height() + margins.top() + margins.bottom())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return self.sizeHint()

    def shown_text(self) -> str:
        width, dpi = self.contentsRect().width(), self.logicalDpiX()  # another screen's may cut elsewhere
        text, shown_width, shown_dpi, shown = self._shown
        if (text, shown_width, shown_dpi) != (self._text, width, dpi):
            shown = self.fontMetrics().elidedText(self._text, Qt.TextElideMode.ElideRight, width)
            self._shown = (self._text, width, dpi, shown)
        return shown

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # another font cuts elsewhere, and is another height
            self._shown = ("", 0, 0, "")
            self.updateGeometry()
            self._tooltip()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._tooltip()

    def _tooltip(self) -> None:
        """The whole line where it is cut, always as rich text with the line's own escaped: Qt takes
        a tooltip that looks like markup for markup, and the line quotes remote hosts' words."""
        cut = self.shown_text() != self._text
        self.setToolTip(f'<p style="white-space:pre-wrap">{rich_text(self._text)}</p>' if cut else "")

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        align = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        painter.drawText(self.contentsRect(), int(align), self.shown_text())


def _accessible_status_line(_class_name: str, obj: object) -> QAccessibleInterface | None:
    """A status line is static text to a screen reader, as a QLabel is (a plain widget is a
    "client" area), named by its whole text; every other object is left to Qt."""
    return QAccessibleWidget(obj, QAccessible.Role.StaticText) if isinstance(obj, StatusLine) else None


class GraphWindow(QMainWindow):
    needs_changed = Signal()  # what it shows changed (a tab, a scroll, shown or hidden): see needs()
    simulation_requested = Signal()  # no driver here: the user asked for simulated GPUs instead

    def __init__(self, history: History) -> None:
        super().__init__()
        self.setObjectName("trayvml_window")
        self._history = history
        self.sample: Sample | None = None
        self.range_s = DEFAULT_RANGE_S
        self.range_chosen = False  # until the user picks a range, the window fits it to the data (fit_range)
        self.following = True
        self.gpu_count = 0
        self.hidden_gpus: set[int] = set()
        self.highlighted_gpu = -1  # the GPU whose lines stand out (legend or line under the cursor)
        self.redraws = 0  # redraws begun, for tests and benchmarks
        self._devices: tuple[DeviceInfo, ...] = ()
        self._setting_range = False
        self._drawn_until_s = 0.0  # the end of the range last drawn
        self._lead: tuple[int, float] = (0, -math.inf)  # following live: (range, where the view ends)
        # The redraw under way: what it shows, the panels still to draw, a range to set last.
        self._redraw_asked = False
        self._view: View | None = None
        self._queue: list[tuple[PlotPage, Panel]] = []
        self._range_last: tuple[float, float] | None = None
        self._held: PlotPage | None = None  # the page whose paints wait for the redraw's end (hold_paint)
        # The spans of nothing recorded last read: ((history, its disk), (start, points), end, spans)
        self._gaps_kept: tuple[tuple[History, object], tuple[float, int], float, list[tuple[float, float]]] | None = (
            None
        )
        self.store_note = ""  # why the history on disk is not written, if it is not
        # Whether a history is an empty stand-in while the store is read (the app's: App._filling).
        self.stands_in: Callable[[History], bool] = lambda history: False
        self.push_note = ""  # which push destinations fail, and why (set by the app)
        self.setWindowTitle("trayvml")
        self.resize(*DEFAULT_SIZE_PX)
        self._build_toolbar()
        self.tabs = QTabWidget()
        central = QWidget()
        central_layout = QVBoxLayout(central)
        central_layout.setContentsMargins(0, 0, 0, 0)
        central_layout.setSpacing(0)
        central_layout.addWidget(self.legend)
        central_layout.addWidget(self.tabs, 1)
        self.setCentralWidget(central)
        self.gpu_page: GpuPage | None = None
        self.host_page = MachinePage()
        self.process_tab = ProcessesTab()  # the table (or jobs), the hidden ones counted, the users
        self.process_view = self.process_tab.table
        self.process_model = self.process_view.processes
        self.details = DetailsPage()
        self.alert_table = AlertsPage()
        self._gpu_tab = QWidget()
        self._gpu_tab_layout = QVBoxLayout(self._gpu_tab)
        self._gpu_tab_layout.setContentsMargins(0, 0, 0, 0)
        # Where there are no GPUs to draw: why, and what to do (sample.problem).
        self.no_gpus_label = QLabel()
        self.no_gpus_label.setObjectName("no_gpus")
        self.no_gpus_label.setWordWrap(True)
        self.no_gpus_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.no_gpus_label.setStyleSheet("padding: 40px; font-size: 13pt;")
        self.no_gpus_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.no_gpus = QWidget()  # the label, and where simulated GPUs would help, a button for them
        no_gpus_layout = QVBoxLayout(self.no_gpus)
        no_gpus_layout.addStretch(1)
        no_gpus_layout.addWidget(self.no_gpus_label)
        self.simulate_button = QPushButton(translate("GraphWindow", "Start with simulated GPUs (made-up readings)"))
        self.simulate_button.setObjectName("simulate_button")
        self.simulate_button.setToolTip(
            translate(
                "GraphWindow",
                "Made-up GPUs to look around trayvml without a driver: the title and status bar say SIMULATED"
                " while they are shown",
            )
        )
        self.simulate_button.clicked.connect(self.simulation_requested.emit)
        no_gpus_layout.addWidget(self.simulate_button, 0, Qt.AlignmentFlag.AlignHCenter)
        no_gpus_layout.addStretch(1)
        self.no_gpus.hide()
        self._gpu_tab_layout.addWidget(self.no_gpus, 1)
        strip = translate("GraphWindow", "Throttle strip: {legend}").format(legend=translate("Panel", REASON_LEGEND))
        legend = QLabel(f"{strip}  ·  {translate('GraphWindow', MARKER_KEY)}")
        legend.setObjectName("graphs_key")
        legend.setWordWrap(True)  # (two keys: a narrow window takes them on two lines)
        legend.setStyleSheet("color: palette(placeholder-text); padding: 2px 6px;")
        self._gpu_tab_layout.addWidget(legend)
        self._strip_key = legend  # shown with the graphs only
        self.tabs.addTab(self._gpu_tab, translate("GraphWindow", "GPUs"))
        self.per_gpu = PerGpuTab()
        self.per_gpu.page_built.connect(self._watch_range)
        self.per_gpu.page_changed.connect(self.request_redraw)
        self.tabs.addTab(self.per_gpu, translate("GraphWindow", "Per GPU"))
        self.tabs.addTab(self.host_page, translate("GraphWindow", "Machine"))
        self.tabs.addTab(self.process_tab, translate("GraphWindow", "Processes"))
        self.tabs.addTab(self.details, translate("GraphWindow", "Device details"))
        self.tabs.addTab(self.alert_table, translate("GraphWindow", "Alerts"))
        self.tabs.currentChanged.connect(lambda _: self.request_redraw())
        self.tabs.currentChanged.connect(lambda _: self.needs_changed.emit())
        self.tabs.currentChanged.connect(lambda _: self._show_legend())
        self._show_legend()
        self._pan_timer = QTimer(self)
        self._pan_timer.setObjectName("refresh_after_pan_timer")
        self._pan_timer.setSingleShot(True)
        self._pan_timer.timeout.connect(self.request_redraw)
        self._redraw_timer = QTimer(self)
        self._redraw_timer.setObjectName("redraw_step_timer")
        self._redraw_timer.setSingleShot(True)
        self._redraw_timer.timeout.connect(self._redraw_step)
        self._watch_range(self.host_page)
        self._settings = QSettings("trayvml", "trayvml")
        geometry = self._settings.value("window/geometry")
        restored = isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)
        self._fit_to_screen(move=restored)
        self.apply_palette()
        self._add_shortcuts()

    def _add_shortcuts(self) -> None:
        """Close as any window closes (Ctrl+W, Escape: hidden, as its close button does), and the
        tabs in turn (Ctrl+Page Down/Up): a keyboard user had Ctrl+Tab alone."""
        # Each once: a sequence given twice is ambiguous, and Qt then runs neither.
        closing = {
            keys.toString(): keys
            for keys in (*QKeySequence.keyBindings(QKeySequence.StandardKey.Close), QKeySequence("Ctrl+W"))
        }
        for keys, act in (
            *((keys, self.close) for keys in closing.values()),
            (QKeySequence(Qt.Key.Key_Escape), self.close),
            (QKeySequence(Qt.Modifier.CTRL | Qt.Key.Key_PageDown), lambda: self._step_tab(1)),
            (QKeySequence(Qt.Modifier.CTRL | Qt.Key.Key_PageUp), lambda: self._step_tab(-1)),
        ):
            QShortcut(keys, self, act)

    def _step_tab(self, step: int) -> None:
        self.tabs.setCurrentIndex((self.tabs.currentIndex() + step) % self.tabs.count())

    @property
    def history(self) -> History:
        return self._history

    @history.setter
    def history(self, history: History) -> None:
        """Another history (a new length, a simulation's past, the store's read): shown at once."""
        self._history = history
        self._gaps_kept = None  # the last one's, not held on to
        self._fit_range()
        self.request_redraw()

    @property
    def events(self) -> list[AlertEvent]:
        return self.alert_table.events

    # ---- toolbar ----
    def _build_toolbar(self) -> None:
        """One row that fits 1280 px with room to spare: the ranges as compact buttons, the exports
        in one menu, the GPUs in the legend above the graphs (GpuLegend), never behind a "»"."""
        bar = QToolBar(translate("GraphWindow", "View"))
        bar.setObjectName("view_toolbar")
        bar.setMovable(False)
        self.addToolBar(bar)
        self.range_buttons = QButtonGroup(self)
        for label, seconds in RANGES_S:
            button = QToolButton()
            button.setText(translate("GraphWindow", label))
            # One of eight, which the button's own text does not say to a screen reader.
            button.setAccessibleName(
                translate("GraphWindow", "Show the last {range}").format(range=translate("GraphWindow", label))
            )
            button.setCheckable(True)
            button.setChecked(seconds == self.range_s)
            button.setAutoRaise(True)
            button.clicked.connect(lambda _=False, s=seconds: self.set_range(s, chosen=True))
            self.range_buttons.addButton(button, seconds)
            bar.addWidget(button)
        bar.addSeparator()
        self.follow_button = QPushButton(translate("GraphWindow", "Follow live"))
        self.follow_button.setCheckable(True)
        self.follow_button.setChecked(True)
        self.follow_button.clicked.connect(lambda checked: self.set_following(checked))
        self.follow_button.setToolTip(
            translate("GraphWindow", "Keep the newest time at the right edge; a drag or Ctrl+wheel leaves it")
        )
        bar.addWidget(self.follow_button)
        self.pick_button = QToolButton()
        self.pick_button.setText(translate("GraphWindow", "Range…"))
        self.pick_button.setAutoRaise(True)
        self.pick_button.setToolTip(translate("GraphWindow", "Show any past range kept on disk"))
        self.pick_button.clicked.connect(self._pick_range)
        bar.addWidget(self.pick_button)
        self.jobs_button = QPushButton(translate("GraphWindow", "Processes by job"))
        self.jobs_button.setObjectName("jobs_button")
        self.jobs_button.setCheckable(True)
        self.jobs_button.setFlat(True)
        self.jobs_button.setToolTip(
            translate(
                "GraphWindow",
                "The process panels draw a line per job (notebook, container, Slurm job, ...), its processes added up",
            )
        )
        self.jobs_button.toggled.connect(lambda _: self.request_redraw())
        bar.addWidget(self.jobs_button)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        bar.addWidget(spacer)
        self.export_csv_action = QAction(translate("GraphWindow", "Export CSV…"), self)
        self.export_csv_action.triggered.connect(self._ask_export_csv)
        self.export_png_action = QAction(translate("GraphWindow", "Save PNG…"), self)
        self.export_png_action.triggered.connect(self._ask_export_png)
        export_menu = QMenu(self)
        export_menu.addAction(self.export_csv_action)
        export_menu.addAction(self.export_png_action)
        export = QToolButton()
        export.setObjectName("export_button")
        export.setText(translate("GraphWindow", "Export"))
        export.setAutoRaise(True)
        export.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        export.setMenu(export_menu)
        bar.addWidget(export)
        self.legend = GpuLegend()
        self.legend.toggled.connect(self.set_gpu_visible)
        self.legend.hovered.connect(self.highlight_gpu)
        self.asleep_spans: AsleepSpans | None = None  # set by the app: shaded where a GPU slept
        self.status_label = StatusLine()
        self.statusBar().addWidget(self.status_label, 1)

    @property
    def gpu_toggles(self) -> list[QCheckBox]:
        """The legend's tick boxes, one per GPU."""
        return self.legend.entries

    def highlight_gpu(self, gpu: int) -> None:
        """``gpu``'s lines stand out in every panel and its legend entry is marked; -1: none."""
        self.highlighted_gpu = gpu
        self.legend.show_highlight(gpu)
        for page in (self.gpu_page, *self.per_gpu.pages.values()):
            if page is not None:
                page.set_emphasis(gpu)

    def add_app_menu(self, menu: QMenu) -> None:
        """A menu button at the toolbar's end: pause alerts, start at login, settings (the tray's)."""
        button = QToolButton()
        button.setObjectName("app_menu_button")
        button.setText(translate("GraphWindow", "Alerts and settings"))
        button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        button.setMenu(menu)
        button.setAutoRaise(True)
        toolbar = self.findChild(QToolBar, "view_toolbar")
        assert toolbar is not None  # made in __init__
        toolbar.addWidget(button)
        self.order_focus()

    def order_focus(self) -> None:
        """Tab as the eye reads: the toolbar left to right, the legend's GPUs, then the pages. Qt's
        order is creation's: the legend (made at the first sample), the host box and this menu
        came after every page, though shown above them."""
        toolbar = self.findChild(QToolBar, "view_toolbar")
        assert toolbar is not None
        tools = [toolbar.widgetForAction(action) for action in toolbar.actions()]
        chain: list[QWidget] = [w for w in tools if w is not None and w.focusPolicy() & Qt.FocusPolicy.TabFocus]
        chain += [*self.legend.entries, self.tabs]
        for before, after in itertools.pairwise(chain):
            QWidget.setTabOrder(before, after)

    def _build_gpu_widgets(self, sample: Sample) -> None:
        """(Re)build what depends on the set of GPUs; happens once, or if the GPUs change."""
        self.gpu_count = len(sample.gpus)
        self._devices = sample.devices
        layout = self._gpu_tab_layout
        self._queue = []  # it may name panels of the page that goes
        self._release_paint()  # the page held may be one that goes (the GPU page, a per-GPU page)
        if self.gpu_page is not None:
            self.gpu_page.setParent(None)
            self.gpu_page.deleteLater()
        self.gpu_page = GpuPage(self.gpu_count)
        self._watch_range(self.gpu_page)
        layout.insertWidget(0, self.gpu_page)  # above the throttle strip's key
        self.gpu_page.gpu_hovered.connect(self.highlight_gpu)
        self.legend.set_devices(sample.devices, self.hidden_gpus)
        self.order_focus()
        self._show_legend()
        self.details.show_devices(sample)
        self.per_gpu.set_devices(sample.devices, self._new_per_gpu_page)
        self.apply_palette()

    def _show_legend(self) -> None:
        """Above the GPU timelines (all GPUs, or one each), where it names the colours; not on the other tabs."""
        timelines = self.tabs.currentWidget() in (self._gpu_tab, self.per_gpu)
        self.legend.setVisible(timelines and bool(self.legend.entries))

    def _new_per_gpu_page(self, page: PlotPage) -> None:
        self.apply_palette()
        page.gpu_hovered.connect(self.highlight_gpu)
        page.set_emphasis(self.highlighted_gpu)

    def needs(self) -> frozenset[str]:
        """The GPU metrics the window shows now (trayvml.core.demand): everything while it is open, the
        process lists only while the Processes tab or the GPU page's process panel is in view, and
        the driver's energy counter only on the tabs that show it (Device details) or share it out
        (Processes): a read costs the driver 3-4 ms of CPU, and energy in a range is integrated
        from the power."""
        if not self.isVisible():
            return frozenset()
        current = self.tabs.currentWidget()
        page = self.gpu_page
        processes = current is self.process_tab or (
            current is self._gpu_tab
            and page is not None
            and any(p.spec.group is Group.PROCESSES for p in page.visible_panels())
        )
        shown = EVERYTHING if processes else EVERYTHING - {PROCESSES, "process_count"}
        return shown if current in (self.details, self.process_tab) else shown - {ENERGY_COUNTER_KEY}

    def _watch_range(self, page: PlotPage) -> None:
        page.verticalScrollBar().valueChanged.connect(lambda _: self._pan_timer.start(REFRESH_AFTER_PAN_MS))
        page.verticalScrollBar().valueChanged.connect(lambda _: self.needs_changed.emit())
        for panel in page.panels:
            panel.plot.getViewBox().sigRangeChangedManually.connect(self._user_moved)
        page.layout_widget.scene().sigMouseMoved.connect(lambda pos, p=page: p.show_crosshair(pos, self._names()))
        page.time_zoomed.connect(self.zoom_time)

    # ---- public controls ----
    def set_range(self, seconds: int, chosen: bool = True) -> None:
        """Show the last ``seconds``; ``chosen``: the user's choice, which the window keeps from then on."""
        self.range_chosen = self.range_chosen or chosen
        self.range_s = seconds
        button = self.range_buttons.button(seconds)
        if button is not None:
            button.setChecked(True)
        self.set_following(True)

    def set_following(self, following: bool) -> None:
        self.following = following
        self._show_following()
        self.request_redraw()

    def show_range(self, start_s: float, end_s: float) -> None:
        """A fixed past range (the Range… picker); Follow live goes back to the present."""
        self.following = False
        self._show_following()
        checked = self.range_buttons.checkedButton()
        if checked is not None:  # no preset range is what is shown
            self.range_buttons.setExclusive(False)
            checked.setChecked(False)
            self.range_buttons.setExclusive(True)
        self._set_x_range(start_s, end_s)
        self.request_redraw()

    def _pick_range(self) -> None:
        start, end = self.visible_range()
        pick_range(self, start, end, self.show_range)

    def _show_following(self) -> None:
        """Out of Follow live, the button says so where the eye is, and one click returns."""
        self.follow_button.setChecked(self.following)
        self.follow_button.setText(
            translate("GraphWindow", "Follow live")
            if self.following
            else translate("GraphWindow", "Paused: back to live ▶")
        )
        paused = "QPushButton { background: palette(highlight); color: palette(highlighted-text); }"
        self.follow_button.setStyleSheet("" if self.following else paused)

    def set_gpu_visible(self, index: int, visible: bool) -> None:
        if visible:
            self.hidden_gpus.discard(index)
        else:
            self.hidden_gpus.add(index)
        if index < len(self.gpu_toggles) and self.gpu_toggles[index].isChecked() != visible:
            self.gpu_toggles[index].setChecked(visible)
        self.request_redraw()

    def focus_gpu(self, index: int) -> None:
        """Show one GPU alone (the others can be ticked back on)."""
        for k in range(self.gpu_count):
            self.set_gpu_visible(k, k == index)
        self.tabs.setCurrentIndex(0)

    def _user_moved(self, *_: object) -> None:
        if self._setting_range:
            return
        self.following = False
        self._show_following()
        page = self._plot_page()
        if page is not None and self.sample is not None and page.first is not None:
            start, end = page.x_range()
            # A drag never goes past "now": there is nothing there yet; nor past the lead that
            # following live showed (a drag from there would have jumped back by it at once).
            limit = max(self.sample.timestamp_s, self._lead[1])
            if end > limit:
                self._set_x_range(start - (end - limit), limit)
        self._pan_timer.start(REFRESH_AFTER_PAN_MS)

    def zoom_time(self, center_s: float, factor: float) -> None:
        """Ctrl+wheel or a pinch: the span shown times ``factor``, around ``center_s``, never past
        now; it leaves Follow live (shown on its button) like a drag does."""
        if self.sample is None:
            return
        start, end = self.view_range()
        span = min(max(MIN_ZOOM_SPAN_S, (end - start) * factor), float(max(s for _, s in RANGES_S)))
        start = center_s - (center_s - start) * span / (end - start)
        end = min(start + span, self.sample.timestamp_s)
        self.following = False
        self._show_following()
        self._set_x_range(end - span, end)
        self.request_redraw()

    def add_events(self, events: list[AlertEvent]) -> None:
        """Listed in the Alerts page; marked on the GPU timelines at their next redraw."""
        self.alert_table.add_events(events)

    def fitting_range_s(self) -> int:
        """The preset range the data since trayvml started fills: the smallest one at least as long
        as it (a minute at least), never longer than the default. A fresh start opened on 15 minutes
        showed a sliver of lines at the right edge of an empty (or all "not recording") field."""
        now = self.sample.timestamp_s if self.sample is not None else time.time()
        span = now - self._history.first_s if math.isfinite(self._history.first_s) else 0.0
        fits = next((s for _, s in RANGES_S if s >= span), RANGES_S[-1][1])
        return min(fits, DEFAULT_RANGE_S)

    def _fit_range(self) -> None:
        if not self.range_chosen and self.following and self.fitting_range_s() != self.range_s:
            self.set_range(self.fitting_range_s(), chosen=False)  # grows with the data until the user picks

    # ---- samples ----
    def update_sample(self, sample: Sample) -> None:
        self.sample = sample
        self._fit_range()
        if sample.gpus and (len(sample.gpus) != self.gpu_count or sample.devices != self._devices):
            self._build_gpu_widgets(sample)
        if self.gpu_page is not None and sample.gpus and self.gpu_page.collapse_unsupported(sample):
            self.request_redraw()
        self._show_no_gpus(sample)
        title = "trayvml"
        if sample.gpus:
            count = len(sample.gpus)
            title += (
                translate("GraphWindow", " — {count} GPUs") if count > 1 else translate("GraphWindow", " — {count} GPU")
            ).format(count=count)
        if sample.simulation:
            title += translate("GraphWindow", " — SIMULATED ({what})").format(
                what=simulation_scenario(sample.simulation)
            )
        if title != self.windowTitle():
            self.setWindowTitle(title)
        if not self._in_view():
            return  # hidden or minimised, the window costs nothing; the history goes on regardless
        if self._worth_redrawing(sample):
            self.request_redraw()  # which shows the status too (worked out once a sample: 0.3 ms)
        else:
            self._show_status()

    def _show_no_gpus(self, sample: Sample) -> None:
        """No GPU to draw: the GPU tab says why and what to do, once, instead of a blank page; with
        no driver at all, a button starts simulated GPUs instead."""
        problem = sample.problem if not sample.gpus else None
        if problem is None and sample.gpus:
            self.no_gpus.hide()
            self._strip_key.show()
            if self.gpu_page is not None:
                self.gpu_page.show()
            return
        headline, sentence = problem or (translate("GraphWindow", "Waiting for the first reading of the GPUs"), "")
        offer = sample.offers_simulation
        if offer and sample.unavailable is not None:
            sentence = sample.unavailable.cause  # the button below says the rest
        if sentence.startswith(headline):  # "No NVIDIA driver found: the NVML library…" under that headline
            rest = sentence[len(headline) :].lstrip(":： ")
            sentence = rest[:1].upper() + rest[1:]
        text = f"<h2>{rich_text(headline)}</h2><p>{rich_text(sentence)}</p>"
        if sample.remote is None:  # a remote host's Machine tab is that host's, as unreachable as its GPUs
            machine = translate(
                "GraphWindow", "The Machine tab still shows this computer's CPU, memory, disk and network."
            )
            text += f"<p>{machine}</p>"
        if text != self.no_gpus_label.text():
            self.no_gpus_label.setText(text)
        self.simulate_button.setVisible(offer)
        self.no_gpus.show()
        self._strip_key.hide()
        if self.gpu_page is not None:
            self.gpu_page.hide()

    def _worth_redrawing(self, sample: Sample) -> bool:
        """Following live, redraw once the view would move by a pixel: at 12 h a second is 1/30 px;
        and at once where the wall clock was set back (the view stood still until it came back)."""
        if not self.following or self.gpu_page is None:
            return True
        width_px = max(1.0, self.gpu_page.width_px())
        set_back = bool(set_back_s(self._drawn_until_s, sample.timestamp_s))
        return set_back or sample.timestamp_s - self._drawn_until_s >= self.range_s / width_px

    def visible_range(self) -> tuple[float, float]:
        """The range of time shown: following live, the last ``range_s`` up to the newest reading
        (the view holds it, and a little more around it: view_range)."""
        page = self._plot_page() or self.gpu_page
        if not self.following and page is not None and page.first is not None:
            return page.x_range()
        now = self._now_s()
        return max(now - self.range_s, self._history_start_s(now)), now

    def view_range(self) -> tuple[float, float]:
        """What the timelines show. Following live, the range shown and LEAD_SHARE of it past the
        newest reading, kept until the newest reading passes its end (or the range changes), and
        as much before the range; else the range shown."""
        if not self.following:
            return self.visible_range()
        now = self._now_s()
        # A share of what is shown, not of the range: 7 days chosen over 12 h of history put the
        # view's end 8 h into the future, two fifths of every panel empty.
        earliest = self._history_start_s(now)
        lead_s = LEAD_SHARE * min(self.range_s, now - earliest)
        range_s, end = self._lead
        if range_s != self.range_s or not now <= end <= now + lead_s:
            end = now + lead_s
            self._lead = (self.range_s, end)
        return max(end - self.range_s - lead_s, earliest), end

    def _history_start_s(self, now_s: float) -> float:
        """Where a range up to now starts at the earliest: without the store, where the history in
        memory begins (a minute at least), not a sliver at the right edge of an empty range; with
        it, anywhere (the disk reaches back; what it lacks is shaded)."""
        if self._history.disk is not None:
            return -math.inf
        return now_s - max(FIRST_MINUTE_S, now_s - self._history.first_s)

    def _now_s(self) -> float:
        return self.sample.timestamp_s if self.sample else time.time()

    def _plot_page(self) -> PlotPage | None:
        """The timeline page in view, if any."""
        current = self.tabs.currentWidget()
        if current is self._gpu_tab:
            return self.gpu_page
        if current is self.per_gpu:
            return self.per_gpu.page
        return self.host_page if current is self.host_page else None

    # ---- redrawing, a panel at a time ----
    def request_redraw(self) -> None:
        """Redraw the page in view soon; requests that come before it starts are one redraw."""
        self._redraw_asked = True
        if not self._redraw_timer.isActive():
            self._redraw_timer.start(0)

    def refresh(self) -> None:
        """Redraw the page in view now, whole (tests, exports)."""
        self.request_redraw()
        self.finish_redraw()

    def redrawing(self) -> bool:
        """Whether a redraw has steps left for the event loop's next turns."""
        return self._redraw_timer.isActive()

    def finish_redraw(self) -> None:
        """Do at once what the redraw under way has left to do."""
        while self.redrawing():
            self._redraw_timer.stop()
            self._redraw_step()

    def _redraw_step(self) -> None:
        if self._redraw_asked:
            self._redraw_asked = False
            self._begin_redraw()
        elif self._queue:
            page, panel = self._queue.pop(0)
            assert self._view is not None
            page.draw_panel(panel, self._view)
        elif self._range_last is not None:
            self._set_x_range(*self._range_last, only=self._plot_page())
            self._range_last = None
        if self._redraw_asked or self._queue or self._range_last is not None:
            self._redraw_timer.start(0)  # the rest after the event loop has had a turn
        else:
            self._release_paint()

    def _release_paint(self) -> None:
        if self._held is not None:
            self._held.release_paint()
            self._held = None

    def _in_view(self) -> bool:
        return self.isVisible() and not self.isMinimized()

    def _begin_redraw(self) -> None:
        if self.sample is None or not self._in_view():
            return  # shown or restored, it redraws (showEvent, changeEvent)
        self.redraws += 1
        start, view_end = self.view_range()
        end = self._now_s() if self.following else view_end  # the newest reading drawn
        page = self._plot_page()
        read_start = start
        # A redraw that cuts the last one short shows its panels as they come: held again, the
        # page might never be painted while requests come faster than redraws end.
        cut_short = bool(self._queue) or self._range_last is not None
        self._release_paint()
        self._range_last = None
        steady = False
        if page is not None and self.following:
            shown_start, shown_end = page.x_range()
            span_s = view_end - start
            if abs(shown_start - start) < 1e-6 and abs(shown_end - view_end) < 1e-6:
                # Between two moves of the view nothing but the lines' new ends changes: every
                # panel is drawn at once, and Qt paints those stretches alone, in one paint.
                steady = not cut_short
            elif abs((shown_end - shown_start) - span_s) < 0.5 and 0 <= start - shown_start < span_s / 2:
                # The view moves on: the lines are drawn first and the view moves once they all are
                # (one move, not one per panel), so they are read from where the view starts now.
                read_start = shown_start
                self._range_last = (start, view_end)
        if self._range_last is None:
            self._set_x_range(start, view_end, only=page if self.following else None)
        self._drawn_until_s = end
        hidden = frozenset(self.hidden_gpus)
        self._view = View(
            read_start,
            end,
            self.sample,
            self.history,
            hidden,
            # Alerts name their GPU by index; the hidden are columns (places in the sample).
            self.alert_table.markers(
                read_start, end, frozenset(d.index for c, d in enumerate(self._devices) if c in hidden)
            ),
            process_jobs=self.jobs_button.isChecked(),
            shown_s=view_end - start,
        )
        if self.asleep_spans is not None:
            self._view = replace(self._view, asleep=self.asleep_spans.between(read_start, end))
        panels = page.visible_panels() if page is not None else []
        if self.history.disk is not None:  # the store is read for these metrics only (the energy's too)
            self.history.disk.expect({ENERGY_KEY, *(m.key for panel in panels for m in panel.spec.metrics)})
        if page is not None:
            self._shade_gaps(read_start, end, page)
            # Panels a redraw cut short come first: at any rate of samples every panel gets drawn.
            left = [panel for p, panel in self._queue if p is page and panel in panels]
            self._queue = [(page, panel) for panel in left + [p for p in panels if p not in left]]
            if steady:
                for queued, panel in self._queue:
                    queued.draw_panel(panel, self._view)
                self._queue = []
                page.fit_value_ranges()
            elif not cut_short:
                page.hold_paint()
                self._held = page
        else:
            self._queue = []
            if self.tabs.currentWidget() is self.process_tab:
                self.process_tab.update_processes(self.sample)
            elif self.tabs.currentWidget() is self.details:
                self.details.show_readings(self.sample)
        self._show_status()

    def _show_status(self) -> None:
        status = self._status_text()
        if status != self.status_label.text():
            self.status_label.setText(status)

    def _shade_gaps(self, start: float, end: float, page: PlotPage) -> None:
        """Spans in the range when trayvml recorded nothing: shaded, labelled, never a line across."""
        spans = visible_gaps(self._not_recorded(start, end, page), start, end, self._history.first_s)
        shade_gaps([panel.plot for panel in page.panels], spans, start, end)

    def _not_recorded(self, start: float, end: float, page: PlotPage) -> list[tuple[float, float]]:
        """The store's spans of nothing recorded in the range, kept while it starts where it did and
        has grown by less than GAP_MIN_S at its end: following live between moves of the view its
        end grows by a sample at a time, and a span to shade (GAP_MIN_S at least) could only open in
        what is new. Worked out each second, they were a tenth of the open window's redraw."""
        history, disk = self.history, self.history.disk
        if disk is None:
            return []
        points = max(100, int(page.width_px()))
        kept = self._gaps_kept if self.following else None
        if (
            kept is not None
            and kept[0][0] is history
            and kept[0][1] is disk
            and kept[1] == (start, points)
            and kept[2] <= end < kept[2] + GAP_MIN_S
        ):
            return kept[3]
        failed_before = disk.failed_reads
        spans = disk.not_recorded(start, end, points, history)
        # A read the store refused stands in as nothing recorded: asked again at the next redraw.
        self._gaps_kept = ((history, disk), (start, points), end, spans) if disk.failed_reads == failed_before else None
        return spans

    def _set_x_range(self, start: float, end: float, only: PlotPage | None = None) -> None:
        """Every timeline page shows ``start``..``end``; or ``only`` that one (following live, the
        page in view: another gets its range from the redraw that shows it)."""
        self._setting_range = True
        try:
            for page in (self.gpu_page, self.host_page, *self.per_gpu.pages.values()):
                if page is not None and only in (None, page):
                    page.set_x_range(start, end)
        finally:
            self._setting_range = False

    def _status_text(self) -> str:
        sample = self.sample
        if sample is None:
            return ""
        parts = []
        if sample.simulation:
            parts.append(translate("GraphWindow", "SIMULATED: {what}").format(what=simulation_text(sample)))
        if sample.problem is not None and not self.no_gpus.isVisible():  # there it is said already
            parts.append(sample.problem[1])
        # Early: a long line (the energy of 8 GPUs) is cut at the right, and "paused on a past
        # range" was what went.
        following = translate("GraphWindow", "following live")
        parts.append(
            following if self.following else translate("GraphWindow", "paused on a past range: press Follow live")
        )
        if self.stands_in(self._history):  # empty graphs are not "nothing recorded"
            parts.append(translate("GraphWindow", "reading the history on disk…"))
        else:
            short = self._short_history_text()  # early: what the graphs show, before the driver's version
            if short:
                parts.append(short)
        if sample.remote is not None:  # a remote host chosen in the host box: where, and how old
            origin = origin_text(sample, shown_url(sample.remote.url, 120))
            if origin:  # none while the host is unreachable: its fault is said above
                parts.append(origin)
        system = sample.system
        if system is not None and system.driver_version:  # a remote host's exporter may tell no CUDA version
            with_cuda = translate("GraphWindow", "driver {driver} · CUDA {cuda}")
            driver = with_cuda if system.cuda_driver_version else translate("GraphWindow", "driver {driver}")
            # A remote host's labels: no control or bidi characters, no endless text.
            parts.append(
                driver.format(
                    driver=shorten(clean(system.driver_version)), cuda=shorten(clean(system.cuda_driver_version))
                )
            )
        energy = self._energy_text()
        if energy:
            parts.append(energy)

        if self.store_note:
            parts.append(self.store_note)
        if self.push_note:
            parts.append(self.push_note)
        return "   ·   ".join(parts)

    def _short_history_text(self) -> str:
        """Following live with a history in memory only (no store, or a simulation's made-up past,
        which is never written to it) shorter than the range, the view starts where the history
        does (visible_range): said, so that "7 d" showing 12 h is not taken for a week."""
        if not self.following or self.sample is None or self._history.disk is not None:
            return ""
        start, end = self.visible_range()
        if end - start >= self.range_s - 1:
            return ""
        name = next((translate("GraphWindow", label) for label, s in RANGES_S if s == self.range_s), "")
        return translate("GraphWindow", "history starts {when}: {span} of the {range} range").format(
            when=format_clock(start, seconds=False, date=True),
            span=format_duration(end - start, "min"),
            range=name or format_duration(self.range_s, "min"),
        )

    def _energy_text(self) -> str:
        """Each GPU's energy in the range in view, from the power the history holds for that range
        (memory or disk): not the energy since launch, and a range the history lacks says so."""
        if self.sample is None or not self.sample.gpus or self.stands_in(self._history):
            return ""
        start, end = self.visible_range()
        series = self._history.gpu_series(ENERGY_KEY, start, end, ENERGY_POINTS)
        energy = energy_in_range(series, start, end)
        gpu_energy = translate("GraphWindow", "GPU {gpu}: {energy}")
        known = [  # (the power series' columns are the GPUs' places in the sample)
            gpu_energy.format(gpu=g.index, energy=format_energy(energy.wh[column]))
            for column, g in enumerate(self.sample.gpus)
            if column < len(energy.wh) and not math.isnan(energy.wh[column])
        ]
        if not known:
            if all(g.state("power_draw_w") is MetricState.NOT_SUPPORTED for g in self.sample.gpus):
                return ""  # no GPU here tells its power: there is no energy to speak of
            return translate("GraphWindow", "energy in view: not in the history")
        text = translate("GraphWindow", "energy in view: {energy}").format(energy=translate("Panel", ", ").join(known))
        if energy.covered_s < COVERED_ENOUGH * energy.span_s:
            text += translate("GraphWindow", " (the history covers {covered} of {span})").format(
                covered=format_duration(energy.covered_s, "min"), span=format_duration(energy.span_s, "min")
            )
        return text

    def _names(self) -> Callable[[int], str]:
        """A column's GPU by its index and name (columns are the GPUs' places in the sample)."""
        devices = self._devices
        return lambda column: (
            f"{devices[column].index} {short_name(devices[column].name)}"
            if column < len(devices)
            else translate("GraphWindow", "GPU {gpu}").format(gpu=column)
        )

    # ---- export ----
    def export_csv(self, path: str) -> None:
        """The visible range of every plotted series, written atomically."""
        start, end = self.visible_range()
        points = max(100, int(self.gpu_page.width_px()) if self.gpu_page is not None else 0) or 900
        export_csv(self.history, self.gpu_count, start, end, points, path)

    def export_png(self, path: str) -> None:
        self.finish_redraw()  # the picture shows what is current
        export_png(self, path)

    def _ask_export_csv(self) -> None:
        path = self._ask_save_path(translate("GraphWindow", "Export visible range"), "trayvml.csv", "CSV (*.csv)")
        if path:
            self._try(lambda: self.export_csv(path), translate("GraphWindow", "Could not export the CSV: {error}."))

    def _ask_export_png(self) -> None:
        path = self._ask_save_path(translate("GraphWindow", "Save window as PNG"), "trayvml.png", "PNG (*.png)")
        if path:
            self._try(lambda: self.export_png(path), translate("GraphWindow", "Could not save the PNG: {error}."))

    def _ask_save_path(self, caption: str, name: str, kinds: str) -> str:
        """Where to save, "" when cancelled: a name typed without its suffix gets it before the
        dialog asks whether to replace a file of that name (added after, it replaced one unasked)."""
        dialog = QFileDialog(self, caption, name, kinds)
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setDefaultSuffix(Path(name).suffix.lstrip("."))
        return dialog.selectedFiles()[0] if dialog.exec() and dialog.selectedFiles() else ""

    def _try(self, action: Callable[[], None], failed: str) -> None:
        """``failed``: the sentence for an OSError, with {error} for why."""
        try:
            action()
        except OSError as error:
            QMessageBox.warning(self, "trayvml", failed.format(error=error.strerror or error))

    # ---- look, geometry, visibility ----
    def apply_palette(self) -> None:
        palette = self.palette()
        background = palette.color(QPalette.ColorRole.Base)
        foreground = palette.color(QPalette.ColorRole.Text)
        for page in (self.gpu_page, self.host_page, *self.per_gpu.pages.values()):
            if page is not None:
                page.apply_palette(background, foreground)
        self.legend.set_background(background)

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
            self.request_redraw()  # what is drawn in the palette's colours (the limits' names) at once
        elif event.type() == QEvent.Type.WindowStateChange and self._in_view():
            self.request_redraw()  # restored: what came while it was minimised
        super().changeEvent(event)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self.request_redraw()
        self.needs_changed.emit()

    def hideEvent(self, event: object) -> None:  # noqa: N802 - Qt override
        self._settings.setValue("window/geometry", self.saveGeometry())
        if self._history.disk is not None:  # what it read of the store (megabytes at 7 days) goes
            self._history.disk.close()
            give_back_free_memory()  # else glibc keeps the freed pages in the idle tray's RSS
        super().hideEvent(event)  # type: ignore[arg-type]
        self.needs_changed.emit()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        # Hidden, not destroyed: pyqtgraph leaks a PlotItem per window built (pyqtgraph#2672).
        event.ignore()
        self.hide()
