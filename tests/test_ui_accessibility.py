"""The window, the settings dialog and the summary as a keyboard or screen-reader user meets them:
names that say what a control is, Tab that leaves a table, shortcuts, no state by colour alone."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QAccessible, QFocusEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget

from tests.helpers import run_ticks, simulated_source
from tests.ui_helpers import shown_window
from trayvml.alerts.rules import AlertEvent
from trayvml.alerts.severity import Severity
from trayvml.config import Settings
from trayvml.history.timeline import History


def _name(widget: QWidget) -> str:
    interface = QAccessible.queryAccessibleInterface(widget)
    assert interface is not None
    return interface.text(QAccessible.Text.Name)


def _window(qtbot):
    source, clock, _ = simulated_source("processes:gpus=h100*2+rtx4090,start=900", host=True)
    sample = run_ticks(source, clock, 6)
    history = History()
    history.append(sample)
    window = shown_window(qtbot, history, sample)
    window.activateWindow()

    def tick() -> None:
        clock.advance_s(1)
        new = source.sample()
        history.append(new)
        window.update_sample(new)
        window.finish_redraw()

    return window, tick


def _tabs_out(qtbot, view: QWidget, key: Qt.Key) -> bool:
    """Whether ``key`` takes the focus out of ``view`` within as many presses as it has cells."""
    view.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is view)
    for _ in range(100):
        QTest.keyClick(view, key)
        if QApplication.focusWidget() is not view:
            return True
    return False


def test_tab_leaves_the_processes_and_alerts_tables(qtbot) -> None:
    """Qt's tables wrap Tab round their cells: a keyboard user could not leave them (Ctrl+Tab
    switched the window's tab instead), and End process… came before the list it acts on."""
    window, tick = _window(qtbot)
    window.tabs.setCurrentWidget(window.process_tab)
    for _ in range(3):
        tick()
    table = window.process_tab.table
    assert table.model().rowCount() > 0
    assert _tabs_out(qtbot, table, Qt.Key.Key_Tab) and _tabs_out(qtbot, table, Qt.Key.Key_Backtab)
    assert table.nextInFocusChain() is not window.process_tab.end_button  # (the tree comes between)
    chain, widget = [], window.process_tab.group_box
    for _ in range(40):
        widget = widget.nextInFocusChain()
        chain.append(widget)
    assert window.process_tab.end_button in chain and chain.index(table) < chain.index(window.process_tab.end_button)
    now = window.sample.timestamp_s
    events = [AlertEvent(now - k, 0, "H100", "temperature", "firing", Severity.WARNING, f"m{k}") for k in range(3)]
    window.add_events(events)
    window.tabs.setCurrentWidget(window.alert_table)
    assert _tabs_out(qtbot, window.alert_table, Qt.Key.Key_Tab)
    assert _name(window.alert_table) == "Alerts" and _name(table) == "Processes"


def test_the_job_tree_keeps_the_keyboards_place_across_a_refresh(qtbot) -> None:
    window, tick = _window(qtbot)
    window.tabs.setCurrentWidget(window.process_tab)
    tick()
    window.process_tab.group_box.setChecked(True)
    tree = window.process_tab.tree
    tree.setFocus()
    for _ in range(2):
        QTest.keyClick(tree, Qt.Key.Key_Down)
    before = tree.currentItem()
    assert before is not None and tree.indexOfTopLevelItem(before) > 0
    place = before.text(0)
    tick()
    after = tree.currentItem()
    assert after is not None and after.text(0) == place  # (it was None: the next Down went to the top)


def test_window_shortcuts_switch_tabs_and_close(qtbot) -> None:
    window, _ = _window(qtbot)
    qtbot.waitUntil(window.isActiveWindow)  # (a window's shortcuts work while it is the active one)
    first = window.tabs.currentIndex()
    QTest.keyClick(window, Qt.Key.Key_PageDown, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentIndex() == first + 1
    QTest.keyClick(window, Qt.Key.Key_PageUp, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClick(window, Qt.Key.Key_PageUp, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentIndex() == window.tabs.count() - 1  # round to the last
    QTest.keyClick(window, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)
    assert not window.isVisible()


def test_escape_hides_the_window(qtbot) -> None:
    window, _ = _window(qtbot)
    qtbot.waitUntil(window.isActiveWindow)
    QTest.keyClick(window, Qt.Key.Key_Escape)
    assert not window.isVisible()


def test_the_graphs_say_what_they_show_and_where_their_readings_are_as_text(qtbot) -> None:
    window, _ = _window(qtbot)
    page = window.gpu_page
    assert page is not None
    assert page.layout_widget.focusPolicy() == Qt.FocusPolicy.NoFocus  # no second, silent stop
    interface = QAccessible.queryAccessibleInterface(page)
    assert interface is not None and interface.text(QAccessible.Text.Name) == "Graphs"
    described = interface.text(QAccessible.Text.Description)
    assert "Utilization" in described and "Device details" in described
    names = [_name(button) for button in window.range_buttons.buttons()]
    assert names[0] == "Show the last 1 min" and "Show the last 7 d" in names


def _send(widget: QWidget, kind: QEvent.Type) -> None:
    """A focus or pointer event as Qt delivers it (by events, not by activating the window: whether
    a window becomes active is the window system's, and the suite's other windows')."""
    if kind in (QEvent.Type.FocusIn, QEvent.Type.FocusOut):
        QApplication.sendEvent(widget, QFocusEvent(kind, Qt.FocusReason.TabFocusReason))
    else:
        QApplication.sendEvent(widget, QEvent(kind))


def test_focus_on_a_gpus_legend_entry_picks_out_its_lines_as_hovering_does(qtbot) -> None:
    window, _ = _window(qtbot)
    heard: list[int] = []
    window.legend.hovered.connect(heard.append)
    entries = window.legend.entries
    _send(entries[1], QEvent.Type.FocusIn)
    assert heard == [1]
    _send(entries[1], QEvent.Type.FocusOut)
    _send(entries[0], QEvent.Type.FocusIn)
    assert heard[-1] == 0
    # The pointer passing over another entry and leaving it: the keyboard's entry stands out again
    # (its highlight was cleared, the focus still on it); and the other way round.
    _send(entries[2], QEvent.Type.Enter)
    _send(entries[2], QEvent.Type.Leave)
    assert heard[-2:] == [2, 0]
    _send(entries[2], QEvent.Type.Enter)
    _send(entries[0], QEvent.Type.FocusOut)
    assert heard[-2:] == [2, 2]  # the keyboard gone: the pointer's entry still stands out
    _send(entries[2], QEvent.Type.Leave)
    assert heard[-1] == -1


def test_settings_controls_are_named_for_what_they_are(qtbot) -> None:
    from trayvml.ui.settings_dialog import SettingsDialog

    source, _, _ = simulated_source("idle:gpus=h100*2")
    dialog = SettingsDialog(Settings(), source.sample().devices)
    qtbot.addWidget(dialog)
    names = [_name(check) for check in dialog.gpu_checks]
    assert [name.split(" ", 2)[:2] for name in names] == [["GPU", "0"], ["GPU", "1"]] and "H100" in names[0]
    overrides = [override for _, override, _ in dialog.override_grid.rows.values() if override is not None]
    said = {_name(override) for override in overrides}
    assert len(said) == len(overrides) and "Override GPU temperature for this GPU" in said
    (edit, *_) = dialog.rule_grid.rows["temperature"][2].values()
    edit.setText("abc")  # told, not only shown in red
    assert "must be a number" in dialog.problem.accessibleDescription()


def test_the_host_and_metric_boxes_are_read_by_their_labels(qtbot) -> None:
    """A combo box is read as its choice ("This machine"): the label beside it says of what."""
    from trayvml.ui.host_choice import HostChoice
    from trayvml.ui.per_gpu import PerGpuTab

    window, _ = _window(qtbot)
    choice = HostChoice(window, lambda host: (window.history, window.sample), list)
    tab = PerGpuTab()
    qtbot.addWidget(tab)
    for box, label in ((choice.box, "Host"), (tab.group_box, "Metric")):
        interface = QAccessible.queryAccessibleInterface(box)
        assert interface is not None
        by = [other.text(QAccessible.Text.Name) for other, _ in interface.relations(QAccessible.RelationFlag.Label)]
        assert any(label in name for name in by), by


def test_the_summary_says_a_gpus_level_in_words(qtbot) -> None:
    from dataclasses import replace

    from trayvml.alerts.engine import AlertEngine, AlertSettings
    from trayvml.alerts.rules import RULE_BY_KEY
    from trayvml.ui.summary import SummaryWindow

    source, _, _ = simulated_source("idle:gpus=h100*2")
    hot = replace(RULE_BY_KEY["temperature"].defaults, warning_enter=20.0, warning_clear=15.0)
    engine = AlertEngine(AlertSettings(rules={"temperature": hot}))
    summary = SummaryWindow(engine)
    qtbot.addWidget(summary)
    summary.update_sample(source.sample())
    assert summary.rows.text().count(" — warning") == 2  # the square's colour, said
    assert summary.icon_label.accessibleName().endswith("(warning)")


def _tab_stops(window: QWidget) -> list[QWidget]:
    """The window's widgets in Tab's order, those Tab stops at (shown, taking focus by Tab)."""
    stops: list[QWidget] = []
    widget = window.nextInFocusChain()
    while widget is not None and widget is not window and len(stops) < 500:
        if widget.isVisible() and widget.focusPolicy() & Qt.FocusPolicy.TabFocus:
            stops.append(widget)
        widget = widget.nextInFocusChain()
    return stops


def test_tab_goes_as_the_eye_reads_the_toolbar_then_the_legend_then_the_pages(qtbot) -> None:
    """Qt's order is creation's: the legend (made at the first sample), the host box and the
    settings menu came after every page, though shown above them."""
    from PySide6.QtWidgets import QMenu

    from trayvml.ui.host_choice import HostChoice

    window, _ = _window(qtbot)
    window.add_app_menu(QMenu(window))
    choice = HostChoice(window, lambda host: (window.history, window.sample), lambda: ["gpu-box"])
    QApplication.processEvents()  # (the toolbar lays out what was added)
    stops = _tab_stops(window)
    names = [w.objectName() or type(w).__name__ for w in stops]
    legend = [names.index(f"gpu_legend_{k}") for k in range(3)]
    assert legend == sorted(legend) and legend[-1] - legend[0] == 2  # the GPUs in a row
    tools = [
        names.index("export_button"),
        names.index("app_menu_button"),
        names.index("host_choice"),
    ]  # (as the app adds them)
    assert tools == sorted(tools) and tools[-1] < legend[0]  # the toolbar left to right, before them
    assert names[legend[-1] + 1] in ("QTabWidget", "qt_tabwidget_tabbar")  # then the pages (the bar its proxy)
    assert choice.box.isVisible()


def test_a_keyboard_users_place_in_the_legend_stays_when_the_gpus_change(qtbot) -> None:
    """Rebuilt for a changed set of GPUs (one lost, a MIG device made), the legend took the focus
    with its old entry, and it went to the window's first control ("1 min")."""
    from dataclasses import replace

    window, _ = _window(qtbot)
    entry = window.legend.entries[1]
    entry.setFocus()
    _send(entry, QEvent.Type.FocusIn)  # (as an active window's entry gets it)
    sample = window.sample
    renamed = (*sample.devices[:2], replace(sample.devices[2], name="NVIDIA GeForce RTX 4090 D"))
    window.update_sample(replace(sample, devices=renamed))
    assert window.legend.entries[1] is not entry  # made anew
    assert window.focusWidget() is window.legend.entries[1]  # (had when the window is active)
