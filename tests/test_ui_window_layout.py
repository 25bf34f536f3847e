"""The graph window at first sight on common screens (issue 20), offscreen: a toolbar with nothing
behind "»", a GPU legend that tells 16 and 64 GPUs apart and highlights one, panels no GPU supports
as one line, a Per GPU grid as wide as the window, a readout that follows the wheel, the no-driver
page and a range longer than the history."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QWheelEvent
from PySide6.QtWidgets import QToolBar, QToolButton, QWidget

from tests.ui_helpers import filled_history, many_gpus, shown_window
from trayvml.core.formatting import format_precise
from trayvml.core.metrics import GPU_INDEX, GPU_METRIC_BY_KEY, Group
from trayvml.core.sample import MetricState
from trayvml.ui.plots import PANEL_HEIGHT_PX


def _with_app_controls(window) -> None:
    """What the app adds to the toolbar: its menu and, with remote hosts, the Host box."""
    from PySide6.QtWidgets import QMenu

    from trayvml.ui.host_choice import HostChoice

    menu = QMenu(window)
    menu.addAction("Pause alerts")
    window.add_app_menu(menu)
    window.host_choice = HostChoice(window, lambda host: (window.history, window.sample), lambda: ["gpu-node-17"])


@pytest.mark.parametrize("point_size", [0, 11])  # the platform's font, and a desktop's larger one
def test_at_1280_by_800_nothing_on_the_toolbar_hides_behind_the_overflow(qtbot, qapp, point_size: int) -> None:
    font = qapp.font()
    if point_size:
        bigger = qapp.font()
        bigger.setPointSize(point_size)
        qapp.setFont(bigger)
    try:
        history, sample = filled_history("training:gpus=h100*16,start=1800", 60)
        w = shown_window(qtbot, history, sample, 1280, 800)
        _with_app_controls(w)
        qapp.processEvents()
        bar = w.findChild(QToolBar, "view_toolbar")
        overflow = bar.findChild(QToolButton, "qt_toolbar_ext_button")
        assert overflow is None or not overflow.isVisible()
        for action in bar.actions():
            widget = bar.widgetForAction(action)
            if action.isSeparator() or widget is None or not action.isVisible():
                continue
            assert widget.isVisible(), widget
            corner = widget.mapTo(w, QPoint(widget.width(), widget.height()))
            assert 0 < corner.x() <= w.width() and corner.y() <= w.height(), (widget, corner)
        named = [w.findChild(QWidget, name) for name in ("app_menu_button", "host_choice", "export_button")]
        assert all(widget is not None and widget.isVisible() for widget in named)
        assert all(button.isVisible() for button in w.range_buttons.buttons())
        # Every GPU's entry in the legend, inside the window, on the GPU tabs.
        assert len(w.gpu_toggles) == 16
        for entry in w.gpu_toggles:
            assert entry.isVisible() and entry.mapTo(w, QPoint(entry.width(), 0)).x() <= w.width()
    finally:
        qapp.setFont(font)


# Plots light and dark, and greys on which a colour worked out before rounding to #rrggbb fell
# just short (#f6f6f6: 2.99 to 1) or GPUs past ten were drawn near the grey's shade (#cccccc).
@pytest.mark.parametrize("background", ["#ffffff", "#f6f6f6", "#efefef", "#cccccc", "#a8a8a8", "#1e2127", "#000000"])
def test_gpu_colours_differ_for_16_stay_apart_for_64_and_stand_out(background: str) -> None:
    from trayvml.ui.gpu_colours import (
        FIRST_GPU_COLOURS,
        LEAST_CONTRAST,
        contrast,
        gpu_colour,
        hex_to_rgb,
        luminance,
        srgb_to_lab,
    )

    rgb = hex_to_rgb([gpu_colour(k, QColor(background)).name() for k in range(64)])
    lab = srgb_to_lab(rgb)
    # CIE76 distances: about 2.3 is the least one sees. The nearest of 16 on a light grey are
    # Tableau's brown and its grey darkened to stand out (17.5).
    for count, least in ((16, 15.0), (64, 8.0)):
        gaps = np.linalg.norm(lab[:count, None] - lab[None, :count], axis=2)
        gaps[np.eye(count, dtype=bool)] = np.inf
        assert gaps.min() >= least, count
    # WCAG 2.1's 3:1 for graphics, each line against the plot (1 px wide, less faded into it).
    assert np.all(contrast(luminance(rgb), float(luminance(hex_to_rgb([background]))[0])) >= LEAST_CONTRAST)
    # Tableau's hues kept where moved lighter or darker: the orange still orange, not another GPU's.
    tableau = srgb_to_lab(hex_to_rgb(list(FIRST_GPU_COLOURS)))
    coloured = np.hypot(tableau[:, 1], tableau[:, 2]) > 20  # (a grey's hue is no hue)
    hue = np.degrees(np.arctan2(lab[:10, 2], lab[:10, 1]))
    hue_before = np.degrees(np.arctan2(tableau[:, 2], tableau[:, 1]))
    assert np.all((np.abs((hue - hue_before + 180) % 360 - 180) < 8)[coloured])


@pytest.mark.parametrize("background", ["#5a5a5a", "#727272", "#808080", "#939393"])
def test_on_a_mid_grey_the_gpus_stay_apart_and_stand_out_as_far_as_that_lets_them(background: str) -> None:
    """3:1 against a mid grey is near black or white, where colours look alike: two of the first
    ten came out the same."""
    from trayvml.ui.gpu_colours import FIRST_APART, contrast, gpu_colour, hex_to_rgb, luminance, srgb_to_lab

    rgb = hex_to_rgb([gpu_colour(k, QColor(background)).name() for k in range(64)])
    lab = srgb_to_lab(rgb)
    for count, least in ((10, FIRST_APART), (64, 8.0)):
        gaps = np.linalg.norm(lab[:count, None] - lab[None, :count], axis=2)
        gaps[np.eye(count, dtype=bool)] = np.inf
        assert gaps.min() >= least, count
    ratios = contrast(luminance(rgb[:10]), float(luminance(hex_to_rgb([background]))[0]))
    assert ratios.min() >= 1.5  # as far as they stand out while apart (Tableau's own: down to 1.1 here)


def test_64_gpus_get_a_legend_entry_each_inside_the_window(qtbot) -> None:
    history, sample = filled_history("training:gpus=h100,start=1800", 30)
    sample = many_gpus(sample, 64)
    from trayvml.history.timeline import History

    w = shown_window(qtbot, History(), sample, 1280, 800)
    del history
    assert [entry.text() for entry in w.gpu_toggles] == [str(k) for k in range(64)]  # the model: in its tooltip
    assert "H100" in w.gpu_toggles[63].toolTip()
    for entry in w.gpu_toggles:
        assert entry.isVisible() and entry.mapTo(w, QPoint(entry.width(), entry.height())).x() <= w.width()
    icons = {entry.icon().pixmap(18, 10).toImage().pixelColor(9, 5).name() for entry in w.gpu_toggles}
    assert len(icons) == 64  # a swatch of its own colour each


def test_hovering_a_legend_entry_or_a_line_highlights_that_gpu(qtbot) -> None:
    history, sample = filled_history("training:gpus=h100*4,start=1800", 120)
    w = shown_window(qtbot, history, sample)
    panel = w.gpu_page.panels[0]
    qtbot.mouseMove(w.gpu_toggles[2])
    w.legend.eventFilter(w.gpu_toggles[2], QEvent(QEvent.Type.Enter))
    assert w.highlighted_gpu == 2 and panel.lines[0].emphasis == 2
    assert w.gpu_toggles[2].font().underline() and not w.gpu_toggles[1].font().underline()
    w.legend.eventFilter(w.gpu_toggles[2], QEvent(QEvent.Type.Leave))
    assert w.highlighted_gpu == -1 and panel.lines[0].emphasis == -1
    # On a line: the GPU whose line passes under the cursor.
    temperature = next(p for p in w.gpu_page.panels if p.spec.group is Group.TEMPERATURE)
    xs, ys = temperature.lines[0].line(3)
    position = temperature.plot.getViewBox().mapViewToScene(QPointF(float(xs[-20]), float(ys[-20])))
    w.gpu_page.layout_widget.scene().sigMouseMoved.emit(position)
    assert w.highlighted_gpu == 3 and temperature.lines[0].emphasis == 3
    w.gpu_page.hide_crosshair()
    assert w.highlighted_gpu == -1


def _without(sample, keys: set[str], gpus: range | None = None):
    """``sample`` with ``keys`` not supported by ``gpus`` (all by default)."""
    columns = {GPU_INDEX[key] for key in keys}
    changed = []
    for gpu in sample.gpus:
        if gpus is None or gpu.index in gpus:
            states = tuple(MetricState.NOT_SUPPORTED if k in columns else s for k, s in enumerate(gpu.states))
            gpu = replace(gpu, states=states)
        changed.append(gpu)
    return replace(sample, gpus=tuple(changed))


def test_a_panel_no_gpu_supports_is_one_line_and_a_plot_again_once_one_does(qtbot) -> None:
    history, sample = filled_history("training:gpus=h100*2,start=1800", 60)
    codec_keys = {m.key for m in GPU_METRIC_BY_KEY.values() if m.group is Group.CODEC}
    w = shown_window(qtbot, history, _without(sample, codec_keys))
    page = w.gpu_page
    codec = next(p for p in page.panels if p.spec.group is Group.CODEC)
    assert codec.collapsed.startswith("Encoder") and "not supported by any GPU here (H100)" in codec.collapsed
    full = page.layout_widget.minimumHeight()
    w.update_sample(_without(sample, codec_keys, range(1)))  # GPU 1 supports it (another host chosen, say)
    w.refresh()
    assert not codec.collapsed and codec.plot.getViewBox().isVisible() and codec in page.panels
    assert page.layout_widget.minimumHeight() > full  # a plot's height again
    assert codec.plot.getAxis("bottom").height() > 0


@pytest.mark.parametrize(("width", "columns"), [(1280, 4), (1920, 6)])
def test_per_gpu_grid_takes_columns_from_the_width_and_scrolls_down(qtbot, width: int, columns: int) -> None:
    history, sample = filled_history("training:gpus=h100*16,start=1800", 60)
    w = shown_window(qtbot, history, sample, width, 800)
    w.tabs.setCurrentWidget(w.per_gpu)
    w.refresh()
    page = w.per_gpu.page
    assert page is not None and page.columns == columns
    viewport = page.viewport()
    qtbot.waitUntil(lambda: page.panels[-1].plot.sceneBoundingRect().right() <= viewport.width() + 1)
    for panel in page.panels:
        assert panel.plot.sceneBoundingRect().right() <= viewport.width() + 1  # no column cut at the right
    rows = -(-16 // columns)
    assert page.layout_widget.minimumHeight() == rows * PANEL_HEIGHT_PX
    assert (page.verticalScrollBar().maximum() > 0) == (rows * PANEL_HEIGHT_PX > viewport.height())
    w.resize(700, 800)
    qtbot.waitUntil(lambda: page.columns == 2)


@pytest.mark.parametrize("width", [1000, 1280, 1600])
def test_per_gpu_columns_leave_room_for_their_longest_title(qtbot, width: int) -> None:
    """ "GPU 7 RTX 4070 Laptop · bus DE:00.0" is wider than a 300 px panel: its column widened past
    the page, the fourth column cut at the right with nothing to scroll to, the columns unequal.
    (And columns left empty by fewer columns took room: the page as wide as 8 side by side.)"""
    history, sample = filled_history("training:gpus=h100*4+rtx4090*2+laptop*2,start=1800", 60)
    w = shown_window(qtbot, history, sample, width, 800)
    w.tabs.setCurrentWidget(w.per_gpu)
    w.refresh()
    page = w.per_gpu.page
    assert page is not None and page.panel_px > 300
    viewport = page.viewport()
    qtbot.waitUntil(lambda: all(p.plot.sceneBoundingRect().right() <= viewport.width() + 1 for p in page.panels))
    widths = {round(p.plot.sceneBoundingRect().width()) for p in page.panels[: page.columns]}
    assert max(widths) - min(widths) <= 0.03 * max(widths)  # columns alike (they were 30 % apart)
    right = max(p.plot.sceneBoundingRect().right() for p in page.panels)
    assert right >= 0.9 * viewport.width()  # the page filled, not a part of it
    for panel in page.panels:
        title = panel.plot.titleLabel
        assert title.item.boundingRect().width() <= panel.plot.sceneBoundingRect().width()  # whole


def _wheel(page, position: QPointF, notches: int) -> None:
    event = QWheelEvent(
        position,
        page.layout_widget.viewport().mapToGlobal(position),
        QPoint(0, 0),
        QPoint(0, -120 * notches),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    page.eventFilter(page.layout_widget.viewport(), event)


def test_the_readout_follows_the_panel_under_the_cursor_after_a_wheel_scroll(qtbot) -> None:
    history, sample = filled_history("training:gpus=h100*2,start=1800", 120)
    w = shown_window(qtbot, history, sample, 1100, 800)
    page = w.gpu_page
    memory = next(p for p in page.panels if p.spec.group is Group.MEMORY)
    box = memory.plot.getViewBox().sceneBoundingRect()
    scene_point = box.center()
    page.layout_widget.scene().sigMouseMoved.emit(scene_point)
    assert page.readout.text().startswith("<b>Memory ·")
    at = QPointF(page.layout_widget.mapFromScene(scene_point))
    _wheel(page, at, 3)  # down: the panels move up under the still cursor
    moved = page.verticalScrollBar().value()
    assert moved > 0
    under = page.panel_at(page.layout_widget.mapToScene((at + QPointF(0, moved)).toPoint()))
    assert under is not None and under is not memory
    name = under.spec.group.value
    assert page.readout.text().startswith(f"<b>{name} ·"), page.readout.text()[:60]


def test_a_metric_reads_with_one_precision_whatever_the_value() -> None:
    power = GPU_METRIC_BY_KEY["power_draw_w"]
    assert [format_precise(power, v) for v in (72.82, 73.3, 73.0)] == ["72.82 W", "73.30 W", "73.00 W"]
    temperature = GPU_METRIC_BY_KEY["temperature_gpu_c"]
    assert format_precise(temperature, 61) == "61.0 °C" and format_precise(temperature, 61.25) == "61.2 °C"
    memory = GPU_METRIC_BY_KEY["memory_used_bytes"]
    assert format_precise(memory, 3 * 2**30) == "3.00 GiB"


def test_no_driver_says_it_once_and_offers_simulated_gpus(qtbot) -> None:
    from trayvml.core.errors import NvmlUnavailable, UnavailableReason

    history, sample = filled_history("training:gpus=h100", 10)
    missing = NvmlUnavailable(UnavailableReason.LIBRARY_NOT_FOUND)
    no_driver = replace(sample, gpus=(), devices=(), unavailable=missing, simulation="")
    w = shown_window(qtbot, history, no_driver)
    text = w.no_gpus_label.text()
    assert text.count("No NVIDIA driver found") == 1 and "libnvidia-ml" in text
    assert "--simulate" not in text and "libnvidia-ml" not in w.status_label.text()
    assert w.simulate_button.isVisible() and "simulated" in w.simulate_button.text()
    with qtbot.waitSignal(w.simulation_requested):
        w.simulate_button.click()
    # A driver that is there but reports no GPUs: simulating is not what helps.
    w.update_sample(replace(no_driver, unavailable=NvmlUnavailable(UnavailableReason.NO_GPUS)))
    assert not w.simulate_button.isVisible()


def test_the_apps_window_button_starts_simulated_gpus(qapp) -> None:
    from trayvml.nvml.sim import parse_spec
    from trayvml.ui.app import App

    app = App(None)
    window = app.ensure_window()
    assert app.sampler.simulation is None
    window.simulate_button.click()
    assert app.sampler.simulation == parse_spec("")
    window.close()


def test_a_range_longer_than_the_history_says_where_the_history_starts(qtbot) -> None:
    from trayvml.core.units import format_clock

    history, sample = filled_history("training:gpus=h100,start=1800", 12 * 3600, step_s=10)
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.set_range(7 * 86400)
    w.refresh()
    start, end = w.visible_range()
    assert end - start < 13 * 3600  # memory only: the view starts where the history does
    status = w.status_label.text()
    assert f"history starts {format_clock(start, seconds=False, date=True)}" in status
    assert "of the 7 d range" in status and "12 h" in status
    w.set_range(3600)
    w.refresh()
    assert "history starts" not in w.status_label.text()


def test_process_cells_are_never_cut(qtbot) -> None:
    from PySide6.QtGui import QFontMetrics

    from trayvml.ui.processes import CELL_PADDING_PX

    history, sample = filled_history("processes:gpus=rtx4090*2,seed=3", 30)
    w = shown_window(qtbot, history, sample)
    w.tabs.setCurrentWidget(w.process_tab)
    w.refresh()
    view = w.process_view
    model = view.model()
    metrics = QFontMetrics(view.font())
    header = view.horizontalHeader()
    for column in range(model.columnCount()):
        if view.isColumnHidden(column) or column == w.process_model.COMMAND_COLUMN:
            continue
        widest = max(metrics.horizontalAdvance(model.index(r, column).data()) for r in range(model.rowCount()))
        assert header.sectionSize(column) >= widest + 2 * CELL_PADDING_PX, model.headerData(
            column, Qt.Orientation.Horizontal
        )


def test_a_panel_first_drawn_after_a_scroll_fits_its_values(qtbot) -> None:
    history, sample = filled_history("training:gpus=h100*2,start=1800", 3600, step_s=5)
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.set_range(3600)
    w.refresh()
    w.grab()
    page = w.gpu_page
    power = next(p for p in page.panels if p.spec.group is Group.POWER)
    assert power not in page.visible_panels()  # below the fold: not drawn with the rest
    page.verticalScrollBar().setValue(int(power.plot.geometry().top()))
    qtbot.wait(10)
    w.refresh()
    w.grab()  # pyqtgraph fits the range when it paints
    _, ys = power.lines[0].line(0)
    low, high = power.plot.getViewBox().viewRange()[1]
    assert low <= np.nanmin(ys) and np.nanmax(ys) <= high


def test_a_narrow_time_axis_takes_the_step_that_leaves_it_two_ticks() -> None:
    from trayvml.ui.plots import GRID_SPACING_PX, TIME_GRID_STEPS_S, time_step_s

    # 230 px at 5 minutes and a lead: 5-minute ticks (one, often at an edge), so 2-minute ones, 88 px apart.
    assert time_step_s(315, 230, GRID_SPACING_PX, TIME_GRID_STEPS_S) == 120
    assert time_step_s(315, 1160, GRID_SPACING_PX, TIME_GRID_STEPS_S) == 30  # a wide one: as before
    assert time_step_s(315, 150, GRID_SPACING_PX, TIME_GRID_STEPS_S) == 300  # 2 minutes would be 57 px apart


@pytest.mark.parametrize("range_s", [300, 3600])
def test_each_per_gpu_panel_reads_a_time_on_its_axis(qtbot, range_s: int) -> None:
    from tests.ui_helpers import drawn_tick_labels

    # pyqtgraph's own ticks left a 230 px panel one tick at its very edge at 1 h, and so no label.
    history, sample = filled_history("training:gpus=h100*4", range_s + 60, host=False)
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.set_range(range_s)
    w.tabs.setCurrentWidget(w.per_gpu)
    w.refresh()
    page = w.per_gpu.page
    assert page is not None
    for panel in page.panels:
        axis = panel.plot.getAxis("bottom")
        assert axis.width() < 300 and axis.range[1] - axis.range[0] >= range_s - 1  # narrow; the whole range
        labels = drawn_tick_labels(axis)
        assert labels and all(":" in label for label in labels), labels


def test_a_status_line_too_long_for_the_window_is_cut_with_an_ellipsis_and_whole_in_its_tooltip(qtbot) -> None:
    history, sample = filled_history("training:gpus=h100*16,start=1800", 60)
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.refresh()
    status = w.status_label
    assert "GPU 15" in status.text()  # the energy of every GPU: longer than 1280 px
    assert status.fontMetrics().horizontalAdvance(status.text()) > status.width()
    assert (
        status.shown_text().endswith("…") and status.toolTip() == f'<p style="white-space:pre-wrap">{status.text()}</p>'
    )
    assert "following live" in status.shown_text()  # the state is not what the cut takes
    assert w.minimumSizeHint().width() < 1280  # the text's length does not widen the window
    w.resize(3000, 800)
    qtbot.waitUntil(lambda: status.shown_text() == status.text())
    assert status.toolTip() == ""  # nothing cut, nothing to add


def test_a_new_status_text_paints_the_status_line_once_and_cuts_it_once(qtbot, monkeypatch) -> None:
    # As a QLabel each new text (each second: the energy in view) asked the status bar for room,
    # and the bar repainted itself whole: the line was painted twice, and cut three times.
    from PySide6.QtCore import QObject

    from trayvml.ui.window import StatusLine

    history, sample = filled_history("training:gpus=h100*16,start=1800", 60)
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.refresh()
    status = w.status_label
    qtbot.waitUntil(lambda: status.shown_text().endswith("…"))  # its tooltip has the whole line
    qtbot.wait(200)  # laid out and painted
    paints: list[int] = []

    class Painted(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
            if event.type() == QEvent.Type.Paint:
                paints.append(1)
            return False

    counter = Painted()
    status.installEventFilter(counter)
    cuts: list[str] = []
    metrics = type(status.fontMetrics())
    elided = metrics.elidedText

    def cut(self: object, text: str, *rest: object) -> str:
        cuts.append(text)
        return elided(self, text, *rest)

    monkeypatch.setattr(metrics, "elidedText", cut)
    for k in range(5):
        status.setText(f"{k} " + status.text())
        qtbot.waitUntil(lambda k=k: len(paints) == k + 1)
        qtbot.wait(50)  # a second paint would come now
        assert len(paints) == k + 1 and len(cuts) == k + 1
        assert status.shown_text().startswith(f"{k} ") and status.shown_text().endswith("…")
    assert isinstance(status, StatusLine)


def test_a_screen_reader_reads_the_status_line_as_static_text_and_whole(qtbot) -> None:
    # A plain widget is a "client" area to a screen reader, as the status line was once it stopped
    # being a QLabel; a label is static text, named by its text.
    from PySide6.QtGui import QAccessible

    history, sample = filled_history("training:gpus=h100*16,start=1800", 60)
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.refresh()
    status = w.status_label
    qtbot.waitUntil(lambda: status.shown_text().endswith("…"))  # cut on screen
    reader = QAccessible.queryAccessibleInterface(status)
    assert reader is not None and reader.role() is QAccessible.Role.StaticText
    assert reader.text(QAccessible.Text.Name) == status.text()
    status.setText("5 Wh in view")
    assert QAccessible.queryAccessibleInterface(status).text(QAccessible.Text.Name) == "5 Wh in view"
    # Every other widget is still Qt's own.
    assert QAccessible.queryAccessibleInterface(w.tabs.tabBar()).role() is QAccessible.Role.PageTabList


def test_a_range_longer_than_the_history_leads_by_a_share_of_what_is_shown(qtbot) -> None:
    """7 days chosen over 12 h of history (memory only) put the view's end 8 h past now (a twentieth
    of 7 days): two fifths of every panel empty. The lead is a share of the span shown."""
    history, sample = filled_history("training:gpus=h100,start=1800", 600)
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.set_range(3600)
    start, end = w.view_range()
    now = sample.timestamp_s
    assert end - now <= 0.05 * (now - start) + 1  # (it was 180 s: a twentieth of the hour)
    assert start <= history.first_s + 1


@pytest.mark.parametrize(("count", "columns"), [(4, 2), (5, 3), (8, 3), (9, 3), (3, 3)])
def test_per_gpu_rows_are_as_full_as_the_width_allows(count: int, columns: int) -> None:
    """Three to a row at most: 4 GPUs went 3 and a lone 1, half a page left empty."""
    from trayvml.ui.per_gpu import PerGpuPage

    assert PerGpuPage.columns_for(count, 1230, 310) == columns
