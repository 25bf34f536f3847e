"""The graph window as an instrument: the hover readout, the wheel, flat axes, every metric on
screen, the per-GPU layout, empty states and the processes table's host columns (offscreen)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication

from tests.ui_helpers import answering_no, drawn_tick_labels, filled_history, shown_window
from trayvml.core.errors import NvmlUnavailable, UnavailableReason
from trayvml.core.metrics import GPU_METRICS, Group, Unit
from trayvml.core.sample import ProcessSample
from trayvml.history.timeline import History
from trayvml.ui.window import LEAD_SHARE


@pytest.fixture
def window(qtbot):
    def make(spec: str = "training:gpus=h100*2+rtx4090+laptop", seconds: int = 1800):
        history, sample = filled_history(spec, seconds)
        return shown_window(qtbot, history, sample), sample

    return make


def _wheel(widget, position: QPoint, notches: float, ctrl: bool = False) -> None:
    modifiers = Qt.KeyboardModifier.ControlModifier if ctrl else Qt.KeyboardModifier.NoModifier
    event = QWheelEvent(
        QPointF(position),
        QPointF(widget.mapToGlobal(position)),
        QPoint(0, 0),
        QPoint(0, int(120 * notches)),
        Qt.MouseButton.NoButton,
        modifiers,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def _scene_point(panel, x_s: float, y: float) -> QPointF:
    return panel.plot.getViewBox().mapViewToScene(QPointF(x_s, y))


def test_readout_box_stays_inside_the_page_beside_the_cursor_and_goes_on_leave(window) -> None:
    w, _ = window("training:gpus=h100*8", seconds=300)
    page = w.gpu_page
    panel = page.panels[0]
    moved = page.layout_widget.scene().sigMouseMoved
    (x0, x1), (y0, y1) = panel.plot.getViewBox().viewRange()
    area = page.viewport().rect()
    for x_s, y in ((x0 + 5, y1 - 1), (x1 - 1, y0 + 1), (x1 - 1, y1 - 1)):  # left top, right bottom, right top
        position = _scene_point(panel, x_s, y)
        moved.emit(position)
        box = page.readout.geometry()
        assert page.readout.isVisible() and area.contains(box), (x_s, y, box, area)
        cursor = page.layout_widget.viewport().mapTo(page.viewport(), page.layout_widget.mapFromScene(position))
        assert not box.contains(cursor)  # beside the cursor, never under it
    text = page.readout.text()
    assert all(f"{g} H100" in text for g in range(8))  # every GPU's line, solid and dashed
    assert text.count("<tr>") == 1 + 8  # a header naming the two metrics, then a row per GPU
    QApplication.sendEvent(page.layout_widget.viewport(), QEvent(QEvent.Type.Leave))
    assert not page.readout.isVisible() and not any(p.crosshair.isVisible() for p in page.panels)


def test_readout_reads_the_strip_and_full_precision(window) -> None:
    from trayvml.core.formatting import format_precise

    w, _ = window("thermal:gpus=h100*2", seconds=300)
    page = w.gpu_page
    power = next(p for p in page.panels if p.spec.group is Group.POWER)
    assert w._view is not None
    page.draw_panel(power, w._view)  # drawn even where it is scrolled out of view (only those in view are)
    xs, ys = power.lines[0].line(1)
    rows = power.values_at(float(xs[-20]), w._names())
    assert rows[1][2][0] == format_precise(power.spec.metrics[0], float(ys[-20]))
    assert format_precise(power.spec.metrics[0], 187.254) == "187.25 W"  # NVML's milliwatts, not "187 W"
    strip = next(p for p in page.panels if p.spec.strip)
    page.verticalScrollBar().setValue(page.verticalScrollBar().maximum())
    w.refresh()
    rows = strip.values_at(float(xs[-1]), w._names())
    assert [name for name, _, _ in rows] == ["0 H100", "1 H100"] and all(v[0] for _, _, v in rows)
    # A GPU unticked leaves the strip and its readout, as it leaves every line panel.
    w.gpu_toggles[1].setChecked(False)
    w.finish_redraw()
    page.draw_panel(strip, w._view)
    rows = strip.values_at(float(xs[-1]), w._names())
    assert [name for name, _, _ in rows] == ["0 H100"]
    assert strip.strip_data is not None and not np.isfinite(strip.strip_data[1][:, 1]).any()


def test_wheel_scrolls_the_page_and_ctrl_wheel_zooms_time_out_of_follow_live(window) -> None:
    w, sample = window(seconds=1800)
    page = w.gpu_page
    target = page.layout_widget.viewport()
    start, end = page.x_range()
    bar = page.verticalScrollBar()
    _wheel(target, QPoint(300, 200), -2)  # down two notches
    scrolled = bar.value()
    assert scrolled == min(bar.maximum(), 2 * QApplication.wheelScrollLines() * bar.singleStep())  # once, not twice
    assert scrolled > 0 and page.x_range() == (start, end) and w.following
    _wheel(target, QPoint(300, 200), +2, ctrl=True)  # zoom in
    zoomed_start, zoomed_end = page.x_range()
    assert zoomed_end - zoomed_start == pytest.approx((end - start) * 0.8**2)
    assert zoomed_end <= sample.timestamp_s and not w.following
    assert w.follow_button.text() != "Follow live" and not w.follow_button.isChecked()  # out of it, shown
    assert bar.value() == scrolled  # Ctrl+wheel zooms only: the page stayed where it was scrolled
    w.follow_button.click()  # one click back
    w.finish_redraw()
    assert w.following and w.follow_button.text() == "Follow live"
    lead = LEAD_SHARE * w.range_s  # following live, the view leads the newest reading, and the range, by this
    assert page.x_range() == pytest.approx((sample.timestamp_s - w.range_s - lead, sample.timestamp_s + lead))


def test_a_drag_never_goes_past_now_or_the_lead_following_live_showed(window) -> None:
    w, sample = window(seconds=1800)
    view = w.gpu_page.panels[2].plot.getViewBox()  # any panel: they are linked
    shown_start, shown_end = w.gpu_page.x_range()
    assert shown_end == sample.timestamp_s + LEAD_SHARE * w.range_s
    view.translateBy(x=-10)  # a little into the past: moved by that, no jump back by the lead
    view.sigRangeChangedManually.emit(view.state["mouseEnabled"])
    assert w.gpu_page.x_range() == pytest.approx((shown_start - 10, shown_end - 10)) and not w.following
    view.translateBy(x=600)  # towards the future
    view.sigRangeChangedManually.emit(view.state["mouseEnabled"])
    assert w.gpu_page.x_range() == pytest.approx((shown_start, shown_end))  # no further than it was


def _flat_history(sample, seconds: int) -> History:
    history = History()
    for k in range(seconds, 0, -1):
        history.append(replace(sample, timestamp_s=sample.timestamp_s - k))
    history.append(sample)
    return history


def test_flat_values_keep_labelled_axes_with_a_minimum_span(qtbot) -> None:
    _, sample = filled_history("training:gpus=rtx4090*2", 10)
    w = shown_window(qtbot, _flat_history(sample, 120), sample)
    page = w.gpu_page
    for panel in page.panels:
        if not panel.spec.metrics or panel.spec.strip or panel.collapsed:  # collapsed: no axes
            continue
        page.verticalScrollBar().setValue(int(panel.plot.geometry().top()))
        w.refresh()
        w.grab()  # pyqtgraph applies its auto range when it paints
        labels = drawn_tick_labels(panel.plot.getAxis("left"))
        assert len(labels) >= 2, (panel.title, labels)
        symbol = {Unit.CELSIUS: "°C", Unit.WATTS: "W", Unit.MHZ: "MHz", Unit.PERCENT: "%"}.get(
            panel.spec.metrics[0].unit
        )
        if symbol:
            assert all(label.endswith(symbol) for label in labels), (panel.title, labels)
        low, high = panel.plot.getViewBox().viewRange()[1]
        assert high - low >= panel.spec.min_span * 0.99, panel.title  # a flat line is not magnified
        assert panel.plot.buttonsHidden  # no auto-range "A" button
    temperature = next(p for p in page.panels if p.spec.group is Group.TEMPERATURE)
    assert temperature.spec.min_span >= 10  # from the catalog
    memory = next(p for p in page.panels if p.spec.group is Group.MEMORY)
    assert memory.spec.min_span >= 2**30  # nothing in use reads 0-1 GiB, not an axis of KiB
    strip = next(p for p in page.panels if p.spec.strip)
    assert drawn_tick_labels(strip.plot.getAxis("left")) == ["GPU 0", "GPU 1"]


def test_every_metric_of_the_catalog_is_on_screen(window) -> None:
    w, sample = window(seconds=60)
    plotted = {m.key for panel in w.gpu_page.panels for m in panel.spec.metrics}
    assert {"clock_graphics_mhz", "power_enforced_limit_w"} <= plotted
    w.tabs.setCurrentWidget(w.details)
    w.refresh()
    laptop = sample.gpus[3]
    readings = w.details._readings
    for metric in GPU_METRICS:
        assert metric.key in plotted or readings[0][metric.key].text(1), metric.key
        text = readings[3][metric.key].text(1)
        assert text == (laptop.state(metric.key).label if laptop.state(metric.key).value else text)
    assert readings[3]["ecc_corrected_aggregate_count"].text(1) == "not supported"  # a laptop has no ECC
    assert readings[0]["performance_state"].text(1).startswith("P")
    fan = next(p for p in w.gpu_page.panels if p.spec.group is Group.FAN)
    w.tabs.setCurrentIndex(0)
    w.focus_gpu(0)  # an H100 alone: its fan panel says it has none rather than an empty axis
    w.gpu_page.verticalScrollBar().setValue(int(fan.plot.geometry().top()))
    w.refresh()
    assert fan.notice.isVisible() and fan.notice.textItem.toPlainText() == "Not supported on H100"


def test_per_gpu_tab_draws_a_panel_per_gpu_named_apart(window) -> None:
    w, _ = window("training:gpus=h100*8", seconds=120)
    w.tabs.setCurrentWidget(w.per_gpu)
    w.refresh()
    page = w.per_gpu.page
    assert page is not None and len(page.panels) == 8
    titles = [panel.title for panel in page.panels]
    assert len(set(titles)) == 8 and titles[3].startswith("GPU 3 H100")  # identical GPUs told apart
    for k, panel in enumerate(page.visible_panels()):
        assert [g for g in range(8) if panel.lines[0].line(g) is not None] == [k]
    w.set_gpu_visible(2, False)
    w.finish_redraw()
    assert page.panels[2].lines[0].line(2) is None and page.panels[2].notice.isVisible()  # says why it is empty
    assert not page.panels[1].notice.isVisible()
    w.per_gpu.group_box.setCurrentText(Group.TEMPERATURE.value)
    w.refresh()
    assert w.per_gpu.page is not page and w.per_gpu.page.panels[0].spec.group is Group.TEMPERATURE


def test_without_a_driver_the_gpu_tab_says_why_and_what_to_do(qtbot) -> None:
    history, sample = filled_history("training:gpus=rtx4090", 10)
    problem = NvmlUnavailable(UnavailableReason.LIBRARY_NOT_FOUND)
    w = shown_window(qtbot, history, replace(sample, gpus=(), devices=(), unavailable=problem))
    assert w.no_gpus_label.isVisible()
    assert "No NVIDIA driver found" in w.no_gpus_label.text() and "Install the NVIDIA driver" in w.no_gpus_label.text()
    w.update_sample(sample)  # the driver came
    assert not w.no_gpus_label.isVisible() and w.gpu_page is not None and w.gpu_page.isVisible()


def test_first_minute_shows_the_history_since_it_began(qtbot) -> None:
    history, sample = filled_history("training:gpus=rtx4090", 20)
    w = shown_window(qtbot, history, sample)
    start, end = w.gpu_page.x_range()
    lead = LEAD_SHARE * w.range_s  # following live, the view leads the newest reading by this
    assert end == sample.timestamp_s + lead and start == pytest.approx(
        sample.timestamp_s - 60
    )  # not 15 min with a sliver at the right
    assert w.visible_range() == pytest.approx((sample.timestamp_s - 60, sample.timestamp_s))


def test_processes_show_host_usage_and_end_only_after_confirmation(qtbot) -> None:
    history, sample = filled_history("training:gpus=rtx4090", 10, host=False)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        mine = ProcessSample(0, child.pid, "compute", 2.0**30, "python", "me", "python -c …")
        hidden = ProcessSample(0, 1, "compute", float("nan"), no_permission=True)
        gpu = replace(sample.gpus[0], processes=(mine, hidden))
        live = replace(sample, gpus=(gpu,), simulation="")
        w = shown_window(qtbot, history, live)
        w.tabs.setCurrentWidget(w.process_tab)
        w.refresh()
        view, model = w.process_view, w.process_model
        row = next(r for r in range(model.rowCount()) if model.pid_at(r) == child.pid)
        cells = [model.index(row, c).data() for c in range(model.columnCount())]
        from trayvml.ui.processes import HEADERS

        runtime, ram = cells[HEADERS.index("Runtime")], cells[HEADERS.index("Host RAM")]
        assert runtime.endswith(" s") and ram.endswith(("MiB", "KiB"))
        heights = {view.rowHeight(r) for r in range(model.rowCount())}
        assert len(heights) == 1  # "(no permission)" does not make its row taller
        assert view.can_end(row)
        asked: list[str] = []
        view.ask = answering_no(asked)  # the user says no
        assert not view.end(row) and child.poll() is None and str(child.pid) in asked[0]
        view.ask = lambda _parent, question: True
        assert view.end(row)
        assert child.wait(10) == -15  # SIGTERM
        told: list[str] = []
        view.tell = lambda _parent, text: told.append(text)
        assert not view.end(row) and "already ended" in told[0]  # gone: said so, nothing else ended
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)


def test_simulated_processes_never_show_a_host_process_of_the_same_pid(window) -> None:
    w, _ = window("processes:gpus=rtx4090*2,seed=3,start=1800", seconds=60)
    w.tabs.setCurrentWidget(w.process_tab)
    w.refresh()
    model = w.process_model
    assert model.rowCount() > 0
    from trayvml.ui.processes import HEADERS

    cpu, sm, pid = HEADERS.index("CPU %"), HEADERS.index("SM %"), HEADERS.index("PID")
    assert {model.index(r, cpu).data() for r in range(model.rowCount())} == {"simulated"}
    # Each process's share of the SMs, as the driver said it (nvmlDeviceGetProcessUtilization).
    assert w.sample is not None
    shares = {p.pid: p.sm_util_percent for g in w.sample.gpus for p in g.processes}
    assert any(s > 0 for s in shares.values())
    for r in range(model.rowCount()):
        share = shares[int(model.index(r, pid).data())]
        assert model.index(r, sm).data() == ("–" if share != share else f"{share:.0f} %")
    assert not any(w.process_view.can_end(r) for r in range(model.rowCount()))
    assert os.getpid() not in model.started_s


def test_temperature_panel_draws_the_slowdown_and_shutdown_limits(window) -> None:
    w, sample = window("training:gpus=h100*2", seconds=120)
    temperature = next(p for p in w.gpu_page.panels if p.spec.group is Group.TEMPERATURE)
    limits = sorted(line.value() for line in temperature.limits if line.isVisible())
    info = sample.devices[0]
    assert limits == [info.temperature_slowdown_c, info.temperature_shutdown_c] == [87.0, 92.0]  # read from NVML
    assert temperature.limits[0].label.toPlainText() == "slowdown 87 °C · shutdown 92 °C"
    w.grab()
    assert temperature.plot.getViewBox().viewRange()[1][1] >= 92  # the headroom is in view


def test_a_pinch_zooms_time_like_ctrl_wheel(window) -> None:
    from PySide6.QtGui import QNativeGestureEvent, QPointingDevice

    w, sample = window(seconds=1800)
    page = w.gpu_page
    start, end = page.x_range()
    at = QPointF(300, 200)
    pinch = QNativeGestureEvent(
        Qt.NativeGestureType.ZoomNativeGesture,
        QPointingDevice.primaryPointingDevice(),
        2,
        at,
        at,
        at,
        0.5,  # fingers apart: half the span
        QPointF(0, 0),
        1,
    )
    QApplication.sendEvent(page.layout_widget.viewport(), pinch)
    zoomed_start, zoomed_end = page.x_range()
    assert zoomed_end - zoomed_start == pytest.approx((end - start) * 0.5) and not w.following
    assert zoomed_end <= sample.timestamp_s
