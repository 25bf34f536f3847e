"""The graph window, offscreen: what it draws, how it reacts, what it exports."""

from __future__ import annotations

import csv
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel

from tests.helpers import simulated_source
from tests.ui_helpers import drawn_tick_labels, filled_history, shown_window, simulated_history
from trayvml.core.formatting import format_precise
from trayvml.core.metrics import GPU_METRICS, Group, Unit
from trayvml.core.sample import Sample
from trayvml.ui.gpu_colours import gpu_colours_on
from trayvml.ui.plots import GPU_PANELS
from trayvml.ui.window import LEAD_SHARE


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
    assert len(xs) == 901 and np.isfinite(ys).all()  # 15 minutes at 1 s by default, both ends: every sample
    assert ys[-1] == sample.gpus[0].value("utilization_gpu_percent")


def test_unsupported_curves_are_left_out_and_a_panel_no_gpu_supports_is_one_line(window) -> None:
    from trayvml.ui.plots import COLLAPSED_HEIGHT_PX

    w, _ = window("training:gpus=laptop+rtx4090", seconds=60)
    panels = {p.spec.group: p for p in w.gpu_page.panels}
    nvlink = panels[Group.NVLINK]
    assert nvlink.collapsed == "NVLink: not supported by any GPU here (RTX 4070 Laptop, RTX 4090)"
    assert nvlink.plot.titleLabel.text == nvlink.collapsed
    assert nvlink.plot.geometry().height() <= COLLAPSED_HEIGHT_PX and not nvlink.plot.getViewBox().isVisible()
    w.gpu_page.verticalScrollBar().setValue(int(nvlink.plot.geometry().top()))
    w.refresh()
    assert nvlink not in w.gpu_page.visible_panels()  # nothing to draw there
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
        assert abs((x1 - x0) - seconds * (1 + LEAD_SHARE)) < 1  # the range, and the lead beyond it


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
    assert w.following and abs(x1 - (sample.timestamp_s + LEAD_SHARE * w.range_s)) < 1  # led by the lead


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
    rows = panel.values_at(float(xs[-10]), lambda gpu: f"GPU{gpu}")
    assert [name for name, _, _ in rows] == [f"GPU{g}" for g in range(len(sample.gpus))]
    _, colour, values = rows[0]
    assert colour == "#4e79a7" and values[0] == format_precise(panel.spec.metrics[0], float(ys[-10]))
    assert all(len(values) == 2 for _, _, values in rows)  # GPU and memory-bandwidth utilization


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
    # A name without a suffix is still a PNG (Qt chose the format by the suffix: "could not write").
    bare = tmp_path / "gpus-tuesday"
    w.export_png(str(bare))
    assert bare.read_bytes().startswith(b"\x89PNG") and not list(tmp_path.glob(".*.tmp"))


def test_processes_table_updates_in_place_and_sorts(window) -> None:
    w, _ = window("processes:gpus=rtx4090*2,seed=3", seconds=60)
    w.tabs.setCurrentWidget(w.process_tab)
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
    from trayvml.core.static_fields import STATIC_FIELDS

    w, _sample = window(seconds=10)
    top = w.details.topLevelItem(1)
    assert top.text(0) == "GPU 0" and top.text(1) == "NVIDIA H100 80GB HBM3"
    labels = [top.child(k).text(0) for k in range(top.childCount())]
    assert labels == [f.label for f in STATIC_FIELDS] + ["Current readings"]
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


def test_following_live_the_view_goes_back_with_the_wall_clock(window) -> None:
    """The clock set back an hour (NTP): the view went on showing the minute before the step, and
    nothing new, until the clock had passed that minute again."""
    from dataclasses import replace

    w, sample = window(seconds=60)
    w.set_range(60)
    w.finish_redraw()
    back_s = sample.timestamp_s - 3600.0
    for k in range(1, 6):
        later = replace(sample, timestamp_s=back_s + k)
        w.history.append(later)
        w.update_sample(later)
        w.finish_redraw()
        start, end = w.gpu_page.x_range()
        assert start < back_s + k - 50 and back_s + k <= end <= back_s + k + 60 * LEAD_SHARE + 1e-6, k


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


def test_a_minimised_window_redraws_nothing_until_restored(window, qtbot) -> None:
    """Minimised, it is still "visible" to Qt: each sample redrew its panels for nobody."""
    w, sample = window(seconds=10)
    w.showMinimized()
    qtbot.waitUntil(w.isMinimized)
    w.finish_redraw()
    before = w.redraws
    for k in range(1, 6):
        later = replace(sample, timestamp_s=sample.timestamp_s + k)
        w.history.append(later)
        w.update_sample(later)
        w.finish_redraw()
    assert w.redraws == before
    w.showNormal()
    qtbot.waitUntil(lambda: not w.isMinimized())
    w.finish_redraw()
    assert w.redraws == before + 1 and w.gpu_page.x_range()[1] >= sample.timestamp_s + 5


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
            if panel.spec.strip or panel.collapsed:  # a collapsed panel (no GPU supports it) has no axes
                continue
            unit = panel.spec.unit or Unit.BYTES
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

    from trayvml.history.timeline import History
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

    def gpu_series(self, key: str, start: float, end: float, budget: int):
        from trayvml.history.rings import Series

        times = np.array([1000.0, 1001.0, 1002.0])
        values = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
        return Series(times, values, values, 1.0)

    def host_series(self, key: str, start: float, end: float, budget: int):
        from trayvml.history.rings import Series

        times = np.array([1001.0, 1003.0])
        values = np.array([[50.0], [70.0]])
        return Series(times, values, values, 2.0)


def test_export_csv_joins_series_on_time(tmp_path: Path) -> None:
    from datetime import datetime

    from trayvml.ui.export import export_csv

    path = tmp_path / "joined.csv"
    export_csv(_FakeHistory(), 2, 1000.0, 1003.0, 900, str(path))  # type: ignore[arg-type]
    with path.open() as exported:
        rows = list(csv.DictReader(exported))
    times = [row["time"] for row in rows]
    assert [datetime.fromisoformat(t).timestamp() for t in times] == [1000, 1001, 1002, 1003]
    assert [row["gpu1.utilization_gpu_percent"] for row in rows] == ["10", "20", "30", ""]
    assert [row["host.cpu_percent"] for row in rows] == ["", "50", "", "70"]


def test_export_csv_times_stay_apart_where_the_clocks_go_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written as local time without its offset, the hour before the clocks went back and the hour
    after read alike: 120 times twice, out of order to any reader."""
    import time as clock
    from datetime import datetime

    from trayvml.history.rings import Series
    from trayvml.ui.export import export_csv

    monkeypatch.setenv("TZ", "America/New_York")
    clock.tzset()
    try:
        night = datetime(2024, 11, 3, 5, 30).timestamp() - clock.timezone  # 01:30 EDT, a day of 25 hours
        history = _FakeHistory()
        two = np.array([night, night + 3600])  # 01:30 EDT and 01:30 EST
        history.gpu_series = lambda *_: Series(two, np.ones((2, 2)), np.ones((2, 2)), 3600.0)  # type: ignore[method-assign]
        history.host_series = lambda *_: None  # type: ignore[method-assign]
        path = tmp_path / "night.csv"
        export_csv(history, 2, night, night + 3600, 900, str(path))  # type: ignore[arg-type]
        with path.open() as exported:
            times = [row["time"] for row in csv.DictReader(exported)]
    finally:
        monkeypatch.delenv("TZ")
        clock.tzset()
    assert len(set(times)) == 2 and [datetime.fromisoformat(t).timestamp() for t in times] == [night, night + 3600]


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


def _scroll_to(w, panel) -> None:
    w.gpu_page.verticalScrollBar().setValue(int(panel.plot.geometry().top()))
    w.refresh()


def test_machine_tab_draws_cpu_with_a_line_per_core_ram_disk_and_network(window) -> None:
    w, sample = window("training:gpus=h100", seconds=300)
    w.tabs.setCurrentWidget(w.host_page)
    w.refresh()
    panels = {p.spec.group: p for p in w.host_page.panels}
    assert list(panels) == [Group.CPU, Group.RAM, Group.DISK, Group.NETWORK]
    cpu = panels[Group.CPU]
    xs, ys = cpu.lines[0].line(0)
    # 15 minutes asked, five known: the five since the history began are shown, not a sliver.
    assert len(xs) == 300 + 1 and np.isfinite(ys).all() and xs[0] == sample.timestamp_s - 300
    assert ys[-1] == np.float32(sample.host.value("cpu_percent"))
    cores = [cpu.extra.line(k) for k in range(len(cpu.extra.data))]
    assert len(cores) == len(sample.host.cpu_core_percent) >= 1
    per_core = np.array(sample.host.cpu_core_percent, dtype=np.float32).tolist()
    assert [float(values[-1]) for _, values in cores] == per_core
    for panel in w.host_page.visible_panels():  # what is in view is drawn, every metric of it
        assert all(lines.line(0) is not None for lines in panel.lines), panel.spec.title
    readout = cpu.values_at(float(xs[-1]), w._names())
    assert readout == [("", "", [format_precise(cpu.spec.metrics[0], float(ys[-1]))])]
    gpu_utilization = w.gpu_page.panels[0].lines[0]
    assert gpu_utilization.line(0) is not None  # drawn before: the GPU page keeps what it had


def _with_processes(sample, t_s: float, memory_by_gpu: Mapping[int, Sequence[tuple[int, float]]]):
    from dataclasses import replace

    from trayvml.core.sample import ProcessSample

    gpus = tuple(
        replace(
            g, processes=tuple(ProcessSample(g.index, pid, "compute", m) for pid, m in memory_by_gpu.get(g.index, []))
        )
        for g in sample.gpus
    )
    return replace(sample, timestamp_s=t_s, gpus=gpus)


def test_process_timeline_draws_each_process_biggest_first_in_its_gpu_colour(window) -> None:
    from trayvml.history.rings import ProcessHistory
    from trayvml.ui.gpu_colours import gpu_colour

    w, sample = window("training:gpus=rtx4090*2", seconds=1200)
    now = sample.timestamp_s
    w.history.processes = ProcessHistory()  # without the training job's own processes
    for k in range(600, 0, -5):  # the last 10 minutes: two jobs on GPU 0, one on GPU 1
        memory = {0: [(100, 2 * GIB), (101, 1 * GIB)], 1: [(200, 3 * GIB)]}
        if k > 300:
            memory[0] = [(100, 2 * GIB)]  # the small job started five minutes ago
        w.history.processes.append(_with_processes(sample, now - k, memory))
    panel = next(p for p in w.gpu_page.panels if p.spec.group is Group.PROCESSES)
    _scroll_to(w, panel)
    drawn = [panel.extra.line(k) for k in range(len(panel.extra.data))]
    assert len(drawn) == 3 and not panel.notice.isVisible()
    peaks = [float(np.nanmax(values)) for _, values in drawn]
    assert peaks == [3 * GIB, 2 * GIB, 1 * GIB]  # most memory first
    assert [pen.color().name() for pen, _ in panel.extra._paths] == [
        gpu_colour(g, w.gpu_page.background).name() for g in (1, 0, 0)
    ]
    small_times, small = drawn[2]
    started = small_times[np.isfinite(small)][0]
    assert now - 305 <= started <= now - 295  # not drawn before it started
    w.set_gpu_visible(1, False)
    w.finish_redraw()
    assert len(panel.extra.data) == 2  # a hidden GPU's processes go with it
    w.set_gpu_visible(1, True)
    w.set_range(60)
    w.set_following(False)
    w.gpu_page.set_x_range(now - 1200, now - 900)  # twenty minutes ago: no process yet
    w.refresh()
    assert len(panel.extra.data) == 0 and panel.notice.isVisible()
    assert panel.notice.textItem.toPlainText() == "No GPU processes in this range"


def _alert(t_s: float, gpu: int, severity, kind: str = "firing", rule: str = "temperature"):
    from trayvml.alerts.rules import AlertEvent

    name = "" if gpu < 0 else "NVIDIA GeForce RTX 4090"
    message = "GPU driver not responding" if gpu < 0 else "temperature 91 °C"
    return AlertEvent(t_s, gpu, name, rule, kind, severity, message)


def test_alerts_are_listed_newest_first_and_marked_on_the_timelines(window) -> None:
    from trayvml.alerts.severity import Severity
    from trayvml.ui.alerts_page import SEVERITY_COLOURS
    from trayvml.ui.gpu_colours import readable_on

    w, sample = window("training:gpus=rtx4090*2", seconds=600)
    now = sample.timestamp_s
    events = [
        _alert(now - 500, 0, Severity.WARNING),
        _alert(now - 400, 1, Severity.CRITICAL),
        _alert(now - 300, 1, Severity.CRITICAL, kind="resolved"),
        _alert(now - 200, -1, Severity.CRITICAL, rule="driver_stall"),
        _alert(now - 3600, 0, Severity.CRITICAL),  # before the range shown
    ]
    w.add_events(events[:4])
    w.add_events(events[4:])
    table = w.alert_table
    rows = [[table.item(r, c).text() for c in range(4)] for r in range(table.rowCount())]
    assert [row[1:3] for row in rows] == [
        ["0 RTX 4090", "critical"],
        ["all", "critical"],
        ["1 RTX 4090", "resolved"],
        ["1 RTX 4090", "critical"],
        ["0 RTX 4090", "warning"],
    ]
    assert rows[1][3] == "GPU driver not responding" and rows[3][3] == "GPU 1 RTX 4090: temperature 91 °C"
    base = table.palette().color(QPalette.ColorRole.Base)
    assert table.item(3, 2).foreground().color() == readable_on(SEVERITY_COLOURS[Severity.CRITICAL], base)
    w.refresh()
    panel = w.gpu_page.panels[0]
    marked = sorted(m.value() for m in panel.markers if m.isVisible())
    assert marked == [now - 500, now - 400, now - 200]  # firing ones in range; a resolution is not marked
    # In the text colour, which no GPU line has; dashed for a warning, solid and wider for critical.
    pens = {m.value(): m.pen for m in panel.markers if m.isVisible()}
    assert {pen.color().name() for pen in pens.values()} == {w.palette().color(QPalette.ColorRole.Text).name()}
    assert not {pen.color().name() for pen in pens.values()} & set(gpu_colours_on(w.gpu_page.background.name()))
    assert pens[now - 500].style() == Qt.PenStyle.DashLine and pens[now - 400].style() == Qt.PenStyle.SolidLine
    # Said under the graphs, in the words of the styles drawn: unexplained, they read as data.
    from trayvml.ui.plot_pages import MARKER_STYLES

    words = {Qt.PenStyle.DotLine: "dotted", Qt.PenStyle.DashLine: "dashed", Qt.PenStyle.SolidLine: "solid"}
    key = w.findChild(QLabel, "graphs_key")
    assert key is not None and key.isVisible()
    for severity, (style, _) in MARKER_STYLES.items():
        assert f"{words[style]}: {severity.name.lower()}" in key.text()
    assert pens[now - 400].widthF() > pens[now - 500].widthF()
    w.set_gpu_visible(1, False)
    w.finish_redraw()
    marked = sorted(m.value() for m in panel.markers if m.isVisible())
    assert marked == [now - 500, now - 200]  # the machine's alert concerns every GPU


def test_alert_list_keeps_the_latest_thousand(window) -> None:
    from trayvml.alerts.severity import Severity
    from trayvml.ui.alerts_page import MAX_LISTED_EVENTS

    w, sample = window("training:gpus=rtx4090", seconds=10)
    w.add_events([_alert(sample.timestamp_s - 2000 + k, 0, Severity.WARNING) for k in range(MAX_LISTED_EVENTS + 5)])
    assert len(w.events) == w.alert_table.rowCount() == MAX_LISTED_EVENTS
    assert w.events[0].timestamp_s == sample.timestamp_s - 2000 + 5  # the oldest five went


def test_crosshair_follows_the_mouse_with_a_readout_box_of_every_line(window) -> None:
    from PySide6.QtCore import QPointF

    w, _ = window("training:gpus=rtx4090*2", seconds=120)
    page = w.gpu_page
    panel = page.panels[0]
    # The scene's own signal: pyqtgraph drops a mouse move that comes within 10 ms of the last one.
    moved = page.layout_widget.scene().sigMouseMoved
    xs, ys = panel.lines[0].line(1)
    # A quarter of a second into the reading's second: the scene's pixels round the cursor's
    # time, and on the reading's very edge it may fall in the second before.
    moved.emit(panel.plot.getViewBox().mapViewToScene(QPointF(float(xs[-30]) + 0.25, 50.0)))
    shown = [p for p in page.panels if p.crosshair.isVisible()]
    drawn = [p for p in page.panels if not p.collapsed]  # no GPU has NVLink: that panel is one line of text
    assert shown == drawn and page.readout.isVisible()  # one line through every panel, at one time
    assert all(abs(p.crosshair.value() - xs[-30]) < 1.5 for p in shown)  # within a pixel of the cursor
    text = page.readout.text()
    assert time.strftime("%H:%M:%S", time.localtime(float(xs[-30]))) in text
    assert "1 RTX 4090" in text and "0 RTX 4090" in text
    assert "(solid)" in text and "(dashed)" in text  # both metrics of the panel, named by line style
    assert f"&nbsp;{format_precise(panel.spec.metrics[0], float(ys[-30]))}</td>" in text
    moved.emit(panel.plot.sceneBoundingRect().topLeft() - QPointF(0, 3))  # off the plots: gone
    assert not any(p.crosshair.isVisible() for p in page.panels) and not page.readout.isVisible()


def test_samples_faster_than_the_screen_fold_into_one_redraw(window, qtbot) -> None:
    from dataclasses import replace

    w, sample = window("training:gpus=rtx4090*2", seconds=120)
    w.set_range(60)
    w.finish_redraw()
    before = w.redraws
    for k in range(1, 6):  # five samples before the event loop gets a turn
        w.update_sample(replace(sample, timestamp_s=sample.timestamp_s + k))
    qtbot.waitUntil(lambda: not w._redraw_timer.isActive())
    assert w.redraws == before + 1
    (_, x1), _ = w.gpu_page.first.getViewBox().viewRange()
    assert x1 == sample.timestamp_s + 5 + LEAD_SHARE * 60  # the last one shown, the view led past it
    xs, _ = w.gpu_page.panels[0].lines[0].line(0)
    assert xs[-1] == sample.timestamp_s + 5


def test_the_event_loop_gets_a_turn_between_panels(window, qtbot) -> None:
    from PySide6.QtCore import QTimer

    w, _ = window("training:gpus=rtx4090*2", seconds=120)
    page = w.gpu_page
    order: list[str] = []
    draw = page.draw_panel

    def logged(panel, view) -> None:
        order.append(panel.spec.title)
        QTimer.singleShot(0, lambda: order.append("other work"))  # as a click or a repaint would come
        draw(panel, view)

    page.draw_panel = logged
    w.set_range(60 if w.range_s != 60 else 300)  # the view moves: every panel drawn anew (between moves: at once)
    qtbot.waitUntil(lambda: not w._redraw_timer.isActive() and order[-1:] == ["other work"])
    panels = [title for title in order if title != "other work"]
    assert len(panels) == len(page.visible_panels()) >= 3
    assert order == [item for title in panels for item in (title, "other work")]


def test_panning_the_machine_tab_keeps_it_where_the_user_put_it(window) -> None:
    w, sample = window("training:gpus=rtx4090", seconds=1800)
    w.tabs.setCurrentWidget(w.host_page)
    w.refresh()
    view = w.host_page.first.getViewBox()
    (_, panned_from), _ = view.viewRange()
    view.translateBy(x=-600)
    view.sigRangeChangedManually.emit(view.state["mouseEnabled"])
    w.refresh()  # as the pan timer would
    (_, x1), _ = view.viewRange()
    assert not w.following and abs(x1 - (panned_from - 600)) < 1  # not snapped back to the GPU page's range
    xs, ys = w.host_page.panels[0].lines[0].line(0)
    assert xs[0] <= sample.timestamp_s - 1500 and np.isfinite(ys).any()  # and drawn for that range


def test_every_clock_event_reason_has_a_colour_on_the_throttle_strip() -> None:
    from trayvml.core.metrics import CLOCK_EVENT_REASONS
    from trayvml.ui.plots import REASON_COLOURS, reason_rgba

    assert set(REASON_COLOURS) == {bit for bit, _ in CLOCK_EVENT_REASONS}
    every_bit = np.array([float(bit) for bit, _ in CLOCK_EVENT_REASONS] + [np.nan])
    rgba = reason_rgba(every_bit)
    assert (rgba[:-1, 3] == 255).all() and rgba[-1, 3] == 0  # each reason drawn; unknown left clear


def _steady_power_history(watts: float, seconds: int):
    """``seconds`` of one H100 drawing ``watts``, each second, ending with a real sample."""
    from tests.helpers import run_ticks
    from trayvml.history.rings import HISTORY_GPU_KEYS
    from trayvml.history.timeline import History

    source, clock, _ = simulated_source("training:gpus=h100", host=False)
    sample = run_ticks(source, clock, 2)
    history = History()
    row = np.full((1, len(HISTORY_GPU_KEYS)), np.nan, dtype=np.float32)
    row[0, HISTORY_GPU_KEYS.index("power_draw_w")] = watts
    for t_s in sample.timestamp_s - np.arange(seconds, 0, -1):
        history.append_values(float(t_s), row)
    history.append(sample)
    return history, sample


def test_energy_in_view_integrates_the_power_in_the_history_over_the_range(qtbot) -> None:
    history, sample = _steady_power_history(300.0, 3600)
    w = shown_window(qtbot, history, sample)
    w.set_range(1800)
    w.refresh()
    assert "energy in view: GPU 0: 150 Wh" in w.status_label.text()  # 300 W × 30 min, not since launch
    end = sample.timestamp_s - 600
    w.show_range(end - 1200, end)  # a past range: 300 W × 20 min
    w.refresh()
    assert "energy in view: GPU 0: 100 Wh" in w.status_label.text()


def test_energy_in_view_says_where_the_history_does_not_cover_the_range(qtbot) -> None:
    history, sample = _steady_power_history(300.0, 1800)
    w = shown_window(qtbot, history, sample)
    w.show_range(sample.timestamp_s - 3600, sample.timestamp_s)  # half of it before the history begins
    w.refresh()
    assert "energy in view: GPU 0: 150 Wh (the history covers 30 min of 1 h 00 min)" in w.status_label.text()
    w.show_range(sample.timestamp_s - 7 * 3600, sample.timestamp_s - 6 * 3600)
    w.refresh()
    assert "energy in view: not in the history" in w.status_label.text()


def _attributed_sample() -> Sample:
    import math

    from trayvml.core.metrics import GPU_INDEX
    from trayvml.core.sample import Attribution, DeviceInfo, GpuSample, MetricState, ProcessSample

    notebook = Attribution(notebook="exp/a.ipynb", job="exp/a.ipynb", job_kind="notebook", root_pid=10)
    slurm = Attribution(slurm_job="4242", job="4242", job_kind="slurm", root_pid=20)
    gpus = []
    for index, procs in (
        (0, ((10, "alice", 4e9, 30.0, notebook), (20, "bob", 2e9, 50.0, slurm), (30, "", math.nan, math.nan, None))),
        (1, ((11, "alice", 1e9, 20.0, notebook),)),
    ):
        states = [MetricState.OK] * len(GPU_METRICS)
        values = [0.0] * len(GPU_METRICS)
        values[GPU_INDEX["power_draw_w"]] = 100.0
        processes = tuple(
            ProcessSample(index, pid, "compute", memory, "python", user, "python x.py", sm_util_percent=sm)
            if job is not None
            else ProcessSample(index, pid, "compute", memory, no_permission=True)
            for pid, user, memory, sm, job in procs
        )
        processes = tuple(
            p if p.no_permission else replace(p, attribution=notebook if p.pid in (10, 11) else slurm)
            for p in processes
        )
        gpus.append(GpuSample(index, tuple(values), tuple(states), processes))
    return Sample(1000.0, tuple(gpus), (DeviceInfo(0, "GPU", "GPU-0"), DeviceInfo(1, "GPU", "GPU-1")), None, None)


def test_processes_tab_shows_jobs_groups_them_counts_hidden_ones_and_lists_users(qtbot) -> None:
    from trayvml.monitor.users import UserUsage
    from trayvml.ui.processes import HEADERS, ProcessesTab

    tab = ProcessesTab()
    qtbot.addWidget(tab)
    tab.users = UserUsage()
    sample = _attributed_sample()
    tab.users.update(sample)
    tab.update_processes(sample)
    model, table = tab.processes, tab.table
    jobs = {model.index(r, HEADERS.index("Job")).data() for r in range(model.rowCount())}
    assert {"notebook exp/a.ipynb", "Slurm job 4242"} <= jobs
    # Columns shown only where some row has one its job does not say: no container here, and the
    # notebook and the Slurm job are the jobs themselves.
    assert all(table.isColumnHidden(HEADERS.index(h)) for h in ("Container", "Notebook", "Slurm"))
    # The other user's process: counted under the jobs, never put in one (the flat list shows it:
    # no note beside it).
    assert tab.hidden_label.text() == "Not shown by job: 1 process of another user"
    assert tab.hidden_label.isHidden()
    tab.group_box.setChecked(True)
    assert not tab.hidden_label.isHidden()
    tree = tab.tree
    assert tab.stack.currentWidget() is tree
    items = [tree.topLevelItem(k) for k in range(tree.topLevelItemCount())]
    groups = {item.text(0): item for item in items if item is not None}
    assert set(groups) == {"notebook exp/a.ipynb", "Slurm job 4242"}
    notebook = groups["notebook exp/a.ipynb"]
    assert notebook.childCount() == 2  # its kernels on GPU 0 and GPU 1, beneath it
    header = tree.headerItem()
    assert header is not None
    columns = [header.text(c) for c in range(tree.columnCount())]
    assert notebook.text(columns.index("GPU memory")) == "4.7 GiB"  # 4e9 + 1e9 bytes
    assert notebook.text(columns.index("SM %")) == "50 %"
    assert notebook.text(columns.index("GPUs")) == "0, 1"
    cells = [tab.users_table.item(r, 0) for r in range(tab.users_table.rowCount())]
    users = {cell.text() for cell in cells if cell is not None}
    assert set(users) == {"alice", "bob", "(not visible here)"}
    # An empty sample: no job rows left behind.
    tab.update_processes(Sample(1001.0, (), (), None, None))
    assert tree.topLevelItemCount() == 0 and tab.hidden_label.text() == ""


def test_a_history_that_arrives_after_the_window_opened_widens_its_range(qtbot) -> None:
    """The window's first open with the history on disk shows an empty stand-in while the store
    is read; the history read then fits the range to what it holds, not at the next sample."""
    from trayvml.history.timeline import History

    history, sample = filled_history("idle:gpus=h100", 600)
    window = shown_window(qtbot, History(), sample)
    assert window.range_s == 60  # nothing yet: a minute
    window.history = history  # ten minutes read from the store
    assert window.range_s == 900


def test_the_readout_of_a_coarse_view_says_the_peak_its_mean_hides_in_the_bucket_under_the_cursor(qtbot) -> None:
    """At 12 h a line is each 30 s bucket's mean: a 5 s burst to 100 % read 17.7 %, and the readout
    showed the next bucket's value for half of each bucket (the nearest bucket start, not the one
    holding the cursor)."""
    from tests.ui_helpers import shown_window
    from trayvml.history.rings import HISTORY_GPU_KEYS
    from trayvml.history.timeline import History

    source, clock, _ = simulated_source("idle:gpus=h100")
    clock.advance_s(13 * 3600)
    sample = source.sample()
    history = History()
    utilization = HISTORY_GPU_KEYS.index("utilization_gpu_percent")
    row = np.array([g.values for g in sample.gpus], dtype=np.float32)[
        :, [k for k, m in enumerate(GPU_METRICS) if m.history]
    ]
    burst_s = sample.timestamp_s - 6 * 3600 - (sample.timestamp_s % 30)  # a bucket's start, 6 h back
    for t_s in np.arange(sample.timestamp_s - 13 * 3600, sample.timestamp_s, 5.0):
        row[0, utilization] = 100.0 if burst_s + 10 <= t_s < burst_s + 15 else 5.0
        history.append_values(float(t_s), row)
    w = shown_window(qtbot, history, sample)
    w.set_range(12 * 3600)
    w.finish_redraw()
    panel = w.gpu_page.panels[0]
    (_, _, values) = panel.values_at(burst_s + 25, lambda gpu: f"GPU{gpu}")[0]  # late in the bucket
    mean = (5 * 5.0 + 100.0) / 6
    assert values[0] == f"{mean:.1f} % (peak 100.0 %)"
    (_, _, values) = panel.values_at(burst_s + 35, lambda gpu: f"GPU{gpu}")[0]  # the next bucket
    assert values[0] == "5.0 %"


def test_a_host_whose_gpu_indices_skip_is_named_coloured_and_hidden_by_its_columns(qtbot) -> None:
    """A remote host's GPUs keep their exporter's indices, which may skip (GPUs 1 and 3 through a
    selector): the lines are columns, but the readout named column 1 "GPU 1" with GPU 3's value,
    and unticking GPU 3 in the legend hid nothing."""
    from tests.ui_helpers import shown_window
    from trayvml.history.timeline import History

    source, clock, _ = simulated_source("idle:gpus=h100*2")
    history = History()
    sample = None
    for _ in range(60):
        read = source.sample()
        gpus = tuple(replace(g, index=k) for g, k in zip(read.gpus, (1, 3), strict=True))
        devices = tuple(replace(d, index=k) for d, k in zip(read.devices, (1, 3), strict=True))
        sample = replace(read, gpus=gpus, devices=devices)
        history.append(sample)
        clock.advance_s(1.0)
    assert sample is not None
    w = shown_window(qtbot, history, sample)
    panel = w.gpu_page.panels[0]
    xs, _ = panel.lines[0].line(1)
    rows = panel.values_at(float(xs[-5]), w._names())
    assert [name for name, _, _ in rows] == ["1 H100", "3 H100"]
    assert [colour for _, colour, _ in rows] == list(
        gpu_colours_on(panel.background.name())[:2]
    )  # as the legend's swatches
    w.legend.entries[1].setChecked(False)  # GPU 3
    w.finish_redraw()
    assert panel.lines[0].line(1) is None and panel.lines[0].line(0) is not None
