"""The window at first sight: a range the data fills, gaps shaded only where there is no data,
dated axes on long ranges, readable tables, empty states that say why."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QFontMetrics

from tests.ui_helpers import filled_history, shown_window


@pytest.fixture
def window(qtbot):
    def make(spec: str = "training:gpus=h100+rtx4090", seconds: int = 600, step_s: float = 1.0):
        history, sample = filled_history(spec, seconds, step_s)
        return shown_window(qtbot, history, sample), sample

    return make


@pytest.mark.parametrize(("seconds", "expected"), [(20, 60), (61, 300), (280, 300), (700, 900), (5000, 900)])
def test_a_fresh_start_opens_on_the_smallest_range_the_data_fills(window, seconds: int, expected: int) -> None:
    w, _ = window(seconds=seconds)
    assert w.range_s == expected
    assert w.range_buttons.checkedButton() is w.range_buttons.button(expected)


def test_the_range_grows_with_the_data_until_the_user_picks_one(window) -> None:
    from dataclasses import replace

    w, sample = window(seconds=50)
    assert w.range_s == 60
    w.update_sample(replace(sample, timestamp_s=sample.timestamp_s + 30))
    assert w.range_s == 300  # 80 s of data: the 5 minutes it fills
    w.set_range(60)  # the user's choice stays
    w.update_sample(replace(sample, timestamp_s=sample.timestamp_s + 400))
    assert w.range_s == 60


def test_gaps_are_cut_to_the_view_and_never_reach_over_the_data() -> None:
    from trayvml.ui.gaps import visible_gaps

    # The store's minute buckets: a gap from before the view to 40 s past where memory's data begins.
    # The start is kept where it is (the label hangs at the end): following live then moves nothing.
    spans = [(900.0, 1960.0), (2500.0, 2600.0), (2900.0, 3100.0)]
    assert visible_gaps(spans, 1000.0, 3000.0, 1920.0) == [(900.0, 1920.0), (2500.0, 2600.0), (2900.0, 3000.0)]
    assert visible_gaps([(100.0, 900.0), (3000.0, 3100.0)], 1000.0, 3000.0, 1920.0) == []


def test_following_live_moves_no_gap_shading_and_lays_out_no_label(qtbot) -> None:
    """A span begun left of the view stays as it is while the view moves on each second: its label
    (pyqtgraph lays its text out anew whenever its line moves) is left alone until the span is too
    narrow in view to hold it."""
    import pyqtgraph as pg

    from trayvml.ui.gaps import GapShading, visible_gaps

    plot = pg.PlotItem()
    shading = GapShading(plot)
    shading.show(visible_gaps([(900.0, 1960.0)], 1000.0, 2000.0, 1920.0), 1000.0, 2000.0)
    region, label = shading.regions[0]
    laid_out: list[object] = []
    label.setText = laid_out.append
    for second in range(1, 6):
        start, end = 1000.0 + second, 2000.0 + second
        shading.show(visible_gaps([(900.0, 1960.0)], start, end, 1920.0), start, end)
    assert laid_out == [] and region.getRegion() == (900.0, 1920.0) and label.isVisible()
    shading.show([(900.0, 1920.0)], 1880.0, 2880.0)  # 40 s of it in view of 1000 s: too narrow for a label
    assert not label.isVisible() and region.isVisible()
    # A region hidden while there were fewer spans, shown again for a narrow one: no label either.
    wide, narrow = [(1000.0, 1500.0), (1600.0, 1700.0)], (1800.0, 1810.0)
    shading.show(wide, 1000.0, 2000.0)
    shading.show(wide[:1], 1000.0, 2000.0)
    shading.show([wide[0], narrow], 1000.0, 2000.0)
    second_region, second_label = shading.regions[1]
    assert second_region.isVisible() and not second_label.isVisible() and shading.regions[0][1].isVisible()


def test_the_processes_command_column_takes_the_room_left(window) -> None:
    w, _ = window("processes:gpus=rtx4090*2,seed=3", seconds=60)
    w.tabs.setCurrentWidget(w.process_tab)
    w.refresh()
    header = w.process_view.horizontalHeader()
    command = w.process_model.COMMAND_COLUMN
    widths = [header.sectionSize(k) for k in range(header.count())]
    assert widths[command] == max(widths)
    assert header.sectionViewportPosition(command) + widths[command] <= w.process_view.viewport().width()


def test_device_details_keys_are_never_cut_and_energy_is_in_wh(window) -> None:
    w, _ = window(seconds=10)
    w.tabs.setCurrentWidget(w.details)
    w.refresh()
    metrics = QFontMetrics(w.details.font())
    texts = []
    top = w.details.topLevelItem(1)
    readings = top.child(top.childCount() - 1)
    for k in range(readings.childCount()):
        texts.append(readings.child(k))
    longest = max(metrics.horizontalAdvance(item.text(0)) for item in texts)
    indent = 2 * w.details.indentation()
    assert w.details.columnWidth(0) >= longest + indent
    energy = next(item for item in texts if item.text(0) == "Energy since driver load")
    assert energy.text(1).endswith(("Wh", "kWh")), energy.text(1)


def test_device_details_say_a_metric_not_read_yet_is_being_read(window) -> None:
    # The GPU page does not ask for the energy counter (a read costs the driver 3-4 ms): switching to
    # Device details asks for it, and until the next sample it is on its way, not "nothing shows it".
    from dataclasses import replace

    from trayvml.core.metrics import GPU_INDEX
    from trayvml.core.sample import MetricState

    w, sample = window(seconds=10)
    gpu = sample.gpus[0]
    states = list(gpu.states)
    states[GPU_INDEX["energy_consumed_j"]] = MetricState.NOT_READ
    w.details.show_readings(replace(sample, gpus=(replace(gpu, states=tuple(states)), *sample.gpus[1:])))
    top = w.details.topLevelItem(1)
    readings = top.child(top.childCount() - 1)
    texts = {readings.child(k).text(0): readings.child(k).text(1) for k in range(readings.childCount())}
    assert texts["Energy since driver load"] == "being read…"
    assert texts["Power draw"].endswith(" W")
    # No XID since the reader started (the event set read, none in it): said so, not "no data".
    assert texts["XID errors since start"] == "0" and texts["Last XID"] == "none since start"
    # Read, with no number to show (a counter's rate after its reset): "no data", not "ok".
    values = list(gpu.values)
    values[GPU_INDEX["pcie_replays_per_s"]] = float("nan")
    states[GPU_INDEX["pcie_replays_per_s"]] = MetricState.OK
    w.details.show_readings(
        replace(sample, gpus=(replace(gpu, values=tuple(values), states=tuple(states)), *sample.gpus[1:]))
    )
    texts = {readings.child(k).text(0): readings.child(k).text(1) for k in range(readings.childCount())}
    assert texts["PCIe replays per second"] == "no data"


def test_device_details_say_how_long_ago_a_held_reading_was_read(window) -> None:
    # The power limit is read every 10 s, the energy counter every 5 s: between their reads the tray
    # holds them, and Device details says so beside the value rather than passing it off as live.
    from dataclasses import replace

    w, sample = window(seconds=10)  # its sample is the second read: the limit and the energy held from the first
    gpu = sample.gpus[0]
    assert gpu.age_s("power_limit_w") == gpu.age_s("energy_consumed_j") == 1
    w.tabs.setCurrentWidget(w.details)
    w.refresh()
    top = w.details.topLevelItem(1)
    readings = top.child(top.childCount() - 1)

    def read() -> dict[str, str]:
        return {readings.child(k).text(0): readings.child(k).text(2) for k in range(readings.childCount())}

    assert read()["Power limit"] == read()["Energy since driver load"] == "1 s ago"
    assert read()["Power draw"] == read()["GPU utilization"] == ""  # read at the sample's tick
    held = (("power_limit_w", 8.0), ("energy_consumed_j", 0.5))  # 0.5: one tick of the shortest interval
    w.details.show_readings(replace(sample, gpus=(replace(gpu, read_ago_s=held), *sample.gpus[1:])))
    assert read()["Power limit"] == "8 s ago" and read()["Energy since driver load"] == "1 s ago"
    w.details.show_readings(replace(sample, gpus=(replace(gpu, read_ago_s=()), *sample.gpus[1:])))
    assert set(read().values()) == {""}  # all read now: none says when
    # A remote host behind a Prometheus server: every value is as old as the server's last scrape.
    w.details.show_readings(replace(sample, gpus=(replace(gpu, read_ago_s=(), values_ago_s=12.4), *sample.gpus[1:])))
    assert read()["Power draw"] == read()["Power limit"] == read()["GPU utilization"] == "12 s ago"


def test_the_processes_tab_says_how_long_ago_the_lists_were_read(window) -> None:
    # The process lists are read every 5 s: their memory and SM share are not this second's.
    from dataclasses import replace

    w, sample = window("processes:gpus=rtx4090*2,seed=3", seconds=10)
    assert sample.gpus[0].age_s("process_count") == 1  # the second read: the lists are the first's
    w.tabs.setCurrentWidget(w.process_tab)
    w.refresh()
    assert w.process_tab.read_label.text() == "Lists read 1 s ago"
    w.process_tab.update_processes(replace(sample, gpus=tuple(replace(g, read_ago_s=()) for g in sample.gpus)))
    assert w.process_tab.read_label.text() == "Lists read just now"
    # Where the reader cannot say, nothing is said: a remote host's lists, lists that were not read.
    from trayvml.core.metrics import GPU_INDEX
    from trayvml.core.sample import MetricState, RemoteOrigin

    w.process_tab.update_processes(replace(sample, remote=RemoteOrigin("http://gpu-box:9400/metrics", "trayvml serve")))
    assert w.process_tab.read_label.text() == ""
    # Lists read with nothing in them: said, so that an empty table is not taken for one not filled.
    table_note, tree_note = w.process_tab.empty_notes
    assert table_note.isHidden() and tree_note.isHidden()
    idle = replace(sample, gpus=tuple(replace(g, processes=(), read_ago_s=()) for g in sample.gpus))
    w.process_tab.update_processes(idle)
    assert table_note.isVisible() and table_note.text() == "No process runs on a GPU"
    assert table_note.geometry() == w.process_tab.table.viewport().rect()  # in the middle of the rows
    w.process_tab.group_box.setChecked(True)  # grouped by job: the same over the tree
    assert tree_note.isVisible()
    w.process_tab.group_box.setChecked(False)
    w.process_tab.update_processes(replace(idle, remote=RemoteOrigin("http://gpu-box:9400/metrics", "trayvml serve")))
    assert table_note.isVisible()  # a remote host's lists too
    # A GPU whose list was not read may have processes: not said then.
    unlisted = tuple(
        MetricState.NO_DATA if k == GPU_INDEX["process_count"] else s for k, s in enumerate(idle.gpus[1].states)
    )
    w.process_tab.update_processes(replace(idle, gpus=(idle.gpus[0], replace(idle.gpus[1], states=unlisted))))
    assert w.process_tab.read_label.text() == "Lists read just now" and table_note.isHidden()
    w.process_tab.update_processes(sample)
    assert table_note.isHidden()
    unread = [
        MetricState.NO_DATA if k == GPU_INDEX["process_count"] else s for k, s in enumerate(sample.gpus[0].states)
    ]
    gpus = tuple(replace(g, states=tuple(unread)) for g in sample.gpus)
    w.process_tab.update_processes(replace(sample, gpus=gpus))
    assert w.process_tab.read_label.text() == ""


def test_device_details_say_a_wrapped_counter_s_rate_is_only_a_lower_bound(window) -> None:
    # An RTX 4090's PCIe link (Gen4 x16, 32 GB/s) can wrap the 32-bit byte counters 7 times a second:
    # the rate read a second apart is "at least". (An H100 or H200 has GPM's rate instead, which does
    # not wrap: on a real H200 the counters gave 0.2-4.4 GB/s of 46, tests/recordings/h200-580-pcie.)
    w, sample = window("training:gpus=rtx4090", seconds=10)
    assert {"pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s"} <= sample.gpus[0].lower_bounds
    w.tabs.setCurrentWidget(w.details)
    w.refresh()
    top = w.details.topLevelItem(1)
    readings = top.child(top.childCount() - 1)
    texts = {readings.child(k).text(0): readings.child(k).text(1) for k in range(readings.childCount())}
    assert texts["PCIe TX"].startswith("at least ") and texts["PCIe RX"].endswith("wrapped more than once")
    assert not texts["Power draw"].startswith("at least")


def test_no_alerts_says_so_in_a_sentence(window) -> None:
    w, _ = window(seconds=10)
    w.tabs.setCurrentWidget(w.alert_table)
    assert w.alert_table.empty_label.isVisible()
    assert "No alerts since trayvml started" in w.alert_table.empty_label.text()
    from tests.test_ui_window import _alert
    from trayvml.alerts.severity import Severity

    w.add_events([_alert(w.sample.timestamp_s, 0, Severity.WARNING)])
    assert not w.alert_table.empty_label.isVisible()


def test_long_ranges_label_their_ticks_with_dates(window) -> None:
    from tests.ui_helpers import drawn_tick_labels
    from trayvml.ui.plots import TimeAxis

    weekdays = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    w, _ = window(seconds=120)
    axis = w.gpu_page.panels[0].plot.getAxis("bottom")
    assert isinstance(axis, TimeAxis)
    hour = drawn_tick_labels(axis)  # "19:10": a short range needs no day
    assert hour and not any(any(d in text for d in weekdays) for text in hour), hour
    now = w.sample.timestamp_s
    for seconds in (7 * 86400, 86400):
        w.show_range(now - seconds, now)  # a history in memory alone shows no more than it holds
        w.refresh()
        labels = drawn_tick_labels(axis)
        # Each tick names its day: at 7 days pyqtgraph wrote "18", "19", read as hours.
        assert len(labels) >= 4 and all(any(d in text for d in weekdays) for text in labels), labels
    start = 1_800_000_000.0
    day = axis.tick_strings_for(start, start + 86400, [start + k * 21600 for k in range(4)], 21600)
    assert all(any(d in text for d in weekdays) and ":" in text for text in day), day


def test_the_gpm_note_sits_in_the_title_when_other_gpus_draw_lines(window) -> None:
    from trayvml.core.metrics import Group

    w, _ = window("training:gpus=h100+rtx4090", seconds=60)
    activity = next(p for p in w.gpu_page.panels if p.spec.group is Group.ACTIVITY)
    w.gpu_page.verticalScrollBar().setValue(int(activity.plot.geometry().top()))
    w.refresh()
    assert activity.lines[0].line(0) is not None  # the H100's lines are drawn…
    assert not activity.notice.isVisible()  # …so nothing is written over them
    assert "Not supported on RTX 4090" in activity.plot.titleLabel.text
    # Under the line-style key, which says which dashed line is what (beside the group's name
    # alone, the key was gone), in a title row as tall as its two lines.
    assert activity.plot.titleLabel.text.startswith(f"{activity.title}<br>")
    assert "solid" in activity.title and "dashed" in activity.title
    row = activity.plot.titleLabel.item.boundingRect().height()
    assert activity.plot.titleLabel.maximumHeight() >= row
    w.set_gpu_visible(0, False)  # the RTX 4090 alone: no line, the note where they would be
    w.refresh()
    assert activity.notice.isVisible() and "RTX 4090" in activity.notice.textItem.toPlainText()
    assert "Not supported" not in activity.plot.titleLabel.text


def test_day_ticks_stay_on_local_midnights_across_a_change_of_daylight_saving_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 7-day view across the end of summer time (Berlin, 26 Oct 2025): the ticks were fixed
    seconds from the first midnight, so every day after the change was labelled with the day
    before's name at 23:00 ("Sun 26" over Sunday 23:00, and so on)."""
    import time as clock
    from datetime import datetime

    from trayvml.ui.plots import round_local_times, time_grid_s

    monkeypatch.setenv("TZ", "Europe/Berlin")
    clock.tzset()
    try:
        start = datetime(2025, 10, 23, 12, 0).timestamp()
        days = [
            clock.strftime("%a %d %H:%M", clock.localtime(t))
            for t in round_local_times(start, start + 7 * 86400, 86400)
        ]
        grid = [clock.localtime(t).tm_hour for t in time_grid_s(start, start + 7 * 86400, 14)]
    finally:
        monkeypatch.delenv("TZ")
        clock.tzset()
    assert days == [
        "Fri 24 00:00",
        "Sat 25 00:00",
        "Sun 26 00:00",
        "Mon 27 00:00",
        "Tue 28 00:00",
        "Wed 29 00:00",
        "Thu 30 00:00",
    ]
    assert grid and set(grid) == {0}  # the grid's day lines on midnights too


@pytest.mark.parametrize(
    ("zone", "start", "hours", "expected"),
    [
        # Berlin's clocks go back at 03:00 CEST on 26 Oct 2025: 02:00 comes twice, and was once.
        (
            "Europe/Berlin",
            (2025, 10, 26, 0, 30),
            1,
            ["01 CEST", "02 CEST", "02 CET", "03 CET", "04 CET", "05 CET", "06 CET", "07 CET"],
        ),
        # At steps of two hours the repeated hour is left out: the ticks stay two hours apart or more.
        ("Europe/Berlin", (2025, 10, 25, 23, 30), 2, ["00 CEST", "02 CEST", "04 CET", "06 CET"]),
        # Forward at 02:00 CET on 30 Mar 2025: no 02:00 that day.
        (
            "Europe/Berlin",
            (2025, 3, 30, 0, 30),
            1,
            ["01 CET", "03 CEST", "04 CEST", "05 CEST", "06 CEST", "07 CEST", "08 CEST", "09 CEST"],
        ),
        # Half an hour off UTC, and a change of half an hour (Lord Howe: 02:00 to 02:30 on 5 Oct 2025).
        ("Asia/Kolkata", (2025, 1, 1, 8, 10), 3, ["09 IST", "12 IST", "15 IST"]),
        (
            "Australia/Lord_Howe",
            (2025, 10, 5, 0, 15),
            1,
            ["01 +1030", "03 +11", "04 +11", "05 +11", "06 +11", "07 +11", "08 +11"],
        ),
    ],
)
def test_hour_ticks_follow_the_wall_clock_across_a_change_of_daylight_saving_time(
    monkeypatch: pytest.MonkeyPatch, zone: str, start: tuple[int, ...], hours: int, expected: list[str]
) -> None:
    import time as clock

    from trayvml.ui.plots import round_local_times

    monkeypatch.setenv("TZ", zone)
    clock.tzset()
    try:
        year, month, day, hour, minute = start
        start_s = clock.mktime((year, month, day, hour, minute, 0, 0, 0, -1))
        ticks = round_local_times(start_s, start_s + 8 * 3600 + 60, hours * 3600)
        shown = [clock.strftime("%H %Z", clock.localtime(t)) for t in ticks]
        whole = all(clock.localtime(t).tm_min == 0 for t in ticks)
    finally:
        monkeypatch.delenv("TZ")
        clock.tzset()
    assert shown == expected
    assert whole
