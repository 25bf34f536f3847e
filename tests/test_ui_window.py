"""The graph window, offscreen: what it draws, how it reacts, what it exports."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette

from tests.helpers import simulated_source
from tests.ui_helpers import drawn_tick_labels, filled_history, shown_window, simulated_history
from trayvml.core.metrics import GPU_METRICS, Group, Unit
from trayvml.ui.plots import GPU_PANELS


@pytest.fixture
def window(qtbot):
    def make(spec: str = "training:gpus=h100*2+rtx4090+laptop", seconds: int = 1800, step_s: float = 1.0):
        history, sample = filled_history(spec, seconds, step_s)
        return shown_window(qtbot, history, sample), sample

    return make


def test_one_panel_per_catalog_group_with_a_line_per_gpu(qtbot) -> None:
    # The one end-to-end path: a history the reader filled from simulated GPUs, sample by sample.
    history, sample = simulated_history("training:gpus=h100*2+rtx4090+laptop", 1000)
    w = shown_window(qtbot, history, sample)
    groups = [p.spec.group for p in w.gpu_page.panels]
    assert groups == [p.group for p in GPU_PANELS]
    plotted_groups = {m.group for m in GPU_METRICS if m.plot and m.history}
    assert plotted_groups <= set(groups)
    utilization = w.gpu_page.panels[0]
    assert len(utilization.lines) == 2  # GPU and memory-bandwidth utilization
    assert all(len(lines.data) == len(sample.gpus) for lines in utilization.lines)
    xs, ys = utilization.lines[0].line(0)
    assert len(xs) == 900 and np.isfinite(ys).all()  # 15 minutes at 1 s by default: the whole 1 s tier
    assert ys[-1] == sample.gpus[0].value("utilization_gpu_percent")


def test_unsupported_curves_are_left_out_and_an_empty_panel_says_so(window) -> None:
    w, _ = window("training:gpus=laptop+rtx4090", seconds=60)
    panels = {p.spec.group: p for p in w.gpu_page.panels}
    nvlink = panels[Group.NVLINK]
    assert nvlink not in w.gpu_page.visible_panels()  # below the fold: not drawn yet
    w.gpu_page.verticalScrollBar().setValue(int(nvlink.plot.geometry().top()))
    w.refresh()
    assert nvlink in w.gpu_page.visible_panels()
    assert nvlink.notice.isVisible()
    assert nvlink.notice.textItem.toPlainText() == "Not supported on RTX 4070 Laptop, RTX 4090"
    fan = panels[Group.FAN]
    w.gpu_page.verticalScrollBar().setValue(int(fan.plot.geometry().top()))
    w.refresh()
    assert not fan.notice.isVisible()
    assert fan.lines[0].line(0) is None and fan.lines[0].line(1) is not None


def test_ranges_pick_the_tier_that_fits_the_width(window) -> None:
    w, _ = window(seconds=13 * 3600, step_s=5)
    panel = w.gpu_page.panels[0]
    width = w.gpu_page.first.getViewBox().width()
    for seconds, step in ((60, 1), (900, 1), (3600, 5), (12 * 3600, 30)):
        w.set_range(seconds)
        w.finish_redraw()
        xs, _ = panel.lines[0].line(0)
        assert len(xs) <= max(width, 12 * 3600 / 30) + 1  # the coarsest tier is the limit
        assert np.allclose(np.diff(xs), step)
        (x0, x1), _ = w.gpu_page.first.getViewBox().viewRange()
        assert abs((x1 - x0) - seconds) < 1


def test_panning_stops_following_until_asked(window, qtbot) -> None:
    w, sample = window()
    view = w.gpu_page.first.getViewBox()
    view.translateBy(x=-300)
    view.sigRangeChangedManually.emit(view.state["mouseEnabled"])
    assert not w.following and not w.follow_button.isChecked()
    w.update_sample(sample)
    (_, x1), _ = view.viewRange()
    assert x1 < sample.timestamp_s - 200  # it stays where the user put it
    qtbot.mouseClick(w.follow_button, Qt.MouseButton.LeftButton)
    w.finish_redraw()
    (_x0, x1), _ = view.viewRange()
    assert w.following and abs(x1 - sample.timestamp_s) < 1


def test_gpus_can_be_toggled_and_focused(window) -> None:
    w, _ = window()
    lines = w.gpu_page.panels[0].lines[0]
    w.gpu_toggles[1].setChecked(False)
    w.finish_redraw()
    assert lines.line(1) is None and lines.line(0) is not None
    w.gpu_toggles[1].setChecked(True)
    w.finish_redraw()
    assert lines.line(1) is not None
    w.focus_gpu(2)
    w.finish_redraw()
    visible = [g for g in range(4) if lines.line(g) is not None]
    assert visible == [2] and [t.isChecked() for t in w.gpu_toggles] == [False, False, True, False]


def test_crosshair_reads_every_curve_at_the_cursor(window) -> None:
    w, sample = window(seconds=120)
    panel = w.gpu_page.panels[0]
    xs, ys = panel.lines[0].line(0)
    text = panel.values_at(float(xs[-10]), lambda gpu: f"GPU{gpu}")
    assert f"GPU0 gpu utilization: {ys[-10]:.0f} %" in text
    assert text.count("<br>") == 2 * len(sample.gpus) - 1


def test_export_csv_holds_the_visible_range(window, tmp_path: Path) -> None:
    w, sample = window()
    w.set_range(60)
    path = tmp_path / "range.csv"
    w.export_csv(str(path))
    with path.open() as exported:
        rows = list(csv.reader(exported))
    header = rows[0]
    assert header[0] == "time" and "gpu0.utilization_gpu_percent" in header and "host.cpu_percent" in header
    assert len(rows) == 1 + 61
    column = header.index("gpu3.temperature_gpu_c")
    assert float(rows[-1][column]) == sample.gpus[3].value("temperature_gpu_c")
    assert not list(tmp_path.glob(".*.tmp"))  # written through a temporary file, renamed


def test_export_png_is_a_picture_of_the_window(window, tmp_path: Path) -> None:
    from PySide6.QtGui import QImage

    w, _ = window(seconds=60)
    path = tmp_path / "window.png"
    w.export_png(str(path))
    image = QImage(str(path))
    assert image.width() == w.width() and image.height() == w.height()


def test_processes_table_updates_in_place_and_sorts(window) -> None:
    w, _ = window("processes:gpus=rtx4090*2,seed=3", seconds=60)
    w.tabs.setCurrentWidget(w.process_view)
    model = w.process_model
    source, clock, _ = simulated_source("processes:gpus=rtx4090*2,seed=3")
    seen_changes = []
    model.rowsInserted.connect(lambda *a: seen_changes.append("insert"))
    model.rowsRemoved.connect(lambda *a: seen_changes.append("remove"))
    model.modelReset.connect(lambda *a: seen_changes.append("reset"))
    for _ in range(12):
        clock.advance_s(300)
        sample = source.sample()
        w.update_sample(sample)
        w.finish_redraw()
        expected = {(p.gpu_index, p.pid) for g in sample.gpus for p in g.processes}
        rows = {(int(model.index(r, 0).data()), int(model.index(r, 1).data())) for r in range(model.rowCount())}
        assert rows == expected
    assert "reset" not in seen_changes and "insert" in seen_changes and "remove" in seen_changes
    view = w.process_view
    proxy = view.model()
    memory = [proxy.index(r, 4).data(model.SORT_ROLE) for r in range(proxy.rowCount())]
    assert memory == sorted(memory, reverse=True)


def test_device_details_list_every_static_fact(window) -> None:
    from trayvml.core.metrics import STATIC_FIELDS

    w, _sample = window(seconds=10)
    top = w.details.topLevelItem(1)
    assert top.text(0) == "GPU 0" and top.text(1) == "NVIDIA H100 80GB HBM3"
    labels = [top.child(k).text(0) for k in range(top.childCount())]
    assert labels == [f.label for f in STATIC_FIELDS]
    assert top.child(labels.index("Memory total")).text(1) == "79.6 GiB"
    laptop = w.details.topLevelItem(4)
    assert laptop.child(labels.index("ECC mode")).text(1) == "not available"


def test_follows_the_palette(window) -> None:
    w, _ = window(seconds=10)
    dark = QPalette()
    dark.setColor(QPalette.ColorRole.Base, QColor("#1e1e1e"))
    dark.setColor(QPalette.ColorRole.Text, QColor("#e0e0e0"))
    w.setPalette(dark)
    assert w.gpu_page.layout_widget.backgroundBrush().color().name() == "#1e1e1e"
    assert w.gpu_page.panels[0].plot.getAxis("left").textPen().color().name() == "#e0e0e0"


def test_long_ranges_redraw_only_when_the_view_would_move_a_pixel(window) -> None:
    from dataclasses import replace

    w, sample = window(seconds=60)
    for seconds, expected in ((60, 10), (12 * 3600, 0)):
        w.set_range(seconds)
        w.finish_redraw()
        before = w.redraws
        for k in range(1, 11):  # ten live samples, a second apart
            w.update_sample(replace(sample, timestamp_s=sample.timestamp_s + k))
            w.finish_redraw()
        assert w.redraws - before == expected, seconds
    w.set_range(12 * 3600)
    w.finish_redraw()
    before = w.redraws
    w.update_sample(replace(sample, timestamp_s=sample.timestamp_s + 60))  # a minute on: about two pixels
    w.finish_redraw()
    assert w.redraws == before + 1


def test_hidden_window_costs_nothing_and_closing_only_hides(window) -> None:
    w, sample = window(seconds=10)
    w.close()
    assert not w.isVisible()
    before = w.redraws
    for _ in range(5):
        w.update_sample(sample)
    assert w.redraws == before
    w.show()
    w.finish_redraw()
    assert w.redraws == before + 1


def test_simulated_gpus_are_labelled_in_the_title(window) -> None:
    w, _ = window(seconds=5)
    assert w.windowTitle() == "trayvml — 4 GPUs — SIMULATED (training)"


GIB = 2**30
TYPICAL_RANGES = {  # per unit: ranges a panel shows, from idle to 8 × 80 GB (or a 900 GB/s NVLink)
    Unit.BYTES: ((0, 8 * 80e9), (0, 80e9), (0, 2**20), (0, 1.5 * GIB), (0, 3 * GIB), (79e9, 80e9)),
    Unit.BYTES_PER_S: ((0, 900e9), (0, 64e9), (0, 2**10), (0, 50e6), (0, 1.9e9)),
    Unit.PERCENT: ((0, 100),),
    Unit.CELSIUS: ((30, 95), (63, 73)),
    Unit.WATTS: ((0, 700), (560, 640)),
    Unit.MHZ: ((0, 3000), (1400, 2800)),
    Unit.COUNT: ((0, 4), (0, 2000)),
}


def test_every_value_axis_labels_its_ticks_in_typical_ranges(window) -> None:
    w, _ = window("training:gpus=h100*8", seconds=30)
    for page in (w.gpu_page, w.host_page):
        w.tabs.setCurrentIndex(0 if page is w.gpu_page else 1)
        for panel in page.panels:
            if panel.spec.strip:
                continue
            unit = panel.spec.metrics[0].unit if panel.spec.metrics else Unit.BYTES
            for low, high in TYPICAL_RANGES[unit]:
                panel.plot.setYRange(low, high, padding=0)
                labels = drawn_tick_labels(panel.plot.getAxis("left"))
                where = (panel.spec.title, low, high, labels)
                assert len(labels) >= 2 and len(set(labels)) == len(labels), where


def test_byte_axes_use_one_unit_and_flat_memory_keeps_its_labels(window) -> None:
    w, _ = window("thermal:gpus=h100*8", seconds=60)  # memory at 27 to 31.6 GiB on every GPU
    memory = next(p for p in w.gpu_page.panels if p.spec.group is Group.MEMORY)
    w.grab()  # pyqtgraph applies its auto range when it paints
    (low, high) = memory.plot.getViewBox().viewRange()[1]
    assert low == 0 and high > 31 * GIB  # read from zero, not a 1 MiB window around the line
    labels = drawn_tick_labels(memory.plot.getAxis("left"))
    assert labels[:2] == ["0 GiB", "10 GiB"] and all(label.endswith(" GiB") for label in labels)


def test_window_fits_the_screen_it_opens_on(qtbot) -> None:
    from PySide6.QtCore import QSettings

    from trayvml.history import History
    from trayvml.ui.window import GraphWindow

    settings = QSettings("trayvml", "trayvml")
    settings.remove("window/geometry")
    try:
        fresh = GraphWindow(History())  # 1100×820 by default; the offscreen screen is 800×600
        qtbot.addWidget(fresh)
        area = fresh.screen().availableGeometry()
        assert area.contains(fresh.geometry()) and fresh.height() < area.height()
        fresh.setGeometry(300, 200, 2400, 1600)  # as saved on a bigger screen
        settings.setValue("window/geometry", fresh.saveGeometry())
        restored = GraphWindow(History())
        qtbot.addWidget(restored)
        assert area.contains(restored.geometry())
    finally:
        settings.remove("window/geometry")


class _FakeHistory:
    """Two series with different sample times: GPU values every second, host values every 2 s, offset."""

    def gpu_series(self, key: str, start: float, end: float, budget: int):  # type: ignore[no-untyped-def]
        from trayvml.history import Series

        times = np.array([1000.0, 1001.0, 1002.0])
        values = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
        return Series(times, values, values, values, 1.0)

    def host_series(self, key: str, start: float, end: float, budget: int):  # type: ignore[no-untyped-def]
        from trayvml.history import Series

        times = np.array([1001.0, 1003.0])
        values = np.array([[50.0], [70.0]])
        return Series(times, values, values, values, 2.0)


def test_export_csv_joins_series_on_time(tmp_path: Path) -> None:
    from datetime import datetime

    from trayvml.ui.export import export_csv

    path = tmp_path / "joined.csv"
    export_csv(_FakeHistory(), 2, 1000.0, 1003.0, 900, str(path))  # type: ignore[arg-type]
    with path.open() as exported:
        rows = list(csv.DictReader(exported))
    times = [row["time"] for row in rows]
    assert times == [datetime.fromtimestamp(t).isoformat(timespec="seconds") for t in (1000, 1001, 1002, 1003)]
    assert [row["gpu1.utilization_gpu_percent"] for row in rows] == ["10", "20", "30", ""]
    assert [row["host.cpu_percent"] for row in rows] == ["", "50", "", "70"]


def test_unsupported_metrics_are_hidden_per_gpu_not_per_name(window) -> None:
    from dataclasses import replace

    from trayvml.core.metrics import GPU_INDEX
    from trayvml.core.sample import MetricState

    w, sample = window("training:gpus=rtx4090*2", seconds=60)  # two GPUs of one name
    fan = next(p for p in w.gpu_page.panels if p.spec.group is Group.FAN)
    states = list(sample.gpus[0].states)
    for metric in fan.spec.metrics:
        states[GPU_INDEX[metric.key]] = MetricState.NOT_SUPPORTED
    no_fan = replace(sample, gpus=(replace(sample.gpus[0], states=tuple(states)), sample.gpus[1]))
    w.update_sample(no_fan)
    w.gpu_page.verticalScrollBar().setValue(int(fan.plot.geometry().top()))
    w.refresh()
    assert fan.lines[0].line(0) is None and fan.lines[0].line(1) is not None
    assert not fan.notice.isVisible()
