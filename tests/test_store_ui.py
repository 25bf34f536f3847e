"""The tray app on the history store: writing from the sampler thread, continuing from disk,
reading instead of writing while a recorder runs, and the window's week, picker and gaps."""

from __future__ import annotations

import math
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import OPEN_SOURCES, disk_history
from trayvml.config import SettingsStore
from trayvml.core.clock import ManualClock
from trayvml.core.metrics import Group
from trayvml.core.sample import Sample
from trayvml.history.disk.limits import Limits
from trayvml.history.disk.read import StoreReader
from trayvml.history.disk.write import GPU_LAYOUT, StoreWriter
from trayvml.history.rings import Rings, Series
from trayvml.history.timeline import DiskReach, History, _series, _with_memory
from trayvml.nvml.sim import parse_spec
from trayvml.source import Source

SPEC = "idle:gpus=h100*2,past=0"  # no made-up past: the history's past comes from disk


def _run_app(qtbot, tmp_path: Path, folder: Path, samples: int):
    from trayvml.ui.app import App

    app = App(parse_spec(SPEC), 0.5, store=SettingsStore(tmp_path / "config.toml"), history_folder=folder)
    seen: list[float] = []
    app.sampler.sample_taken.connect(lambda s: seen.append(s.timestamp_s))
    app.sampler.start()
    try:
        qtbot.waitUntil(lambda: len(seen) >= samples, timeout=30_000)
    finally:
        app.sampler.stop()  # closes the writer: what waits is committed
    return app, seen


def _store_reads(monkeypatch: pytest.MonkeyPatch, release: threading.Event | None = None) -> list[str]:
    """The names of the threads the app reads the store's past on, one a read (each waits for
    ``release`` first: a slow disk)."""
    from trayvml.ui.app import App

    read_on: list[str] = []
    past_from_store = App._past_from_store

    def noted(self: App, history: History, before: Sample) -> None:
        read_on.append(threading.current_thread().name)
        if release is not None:
            release.wait(30)
        past_from_store(self, history, before)

    monkeypatch.setattr(App, "_past_from_store", noted)
    return read_on


def test_the_tray_writes_from_the_sampler_thread_and_continues_from_disk(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "history"
    threads: set[str] = set()
    append = StoreWriter.append

    def noted(self: StoreWriter, sample: Sample) -> None:
        threads.add(threading.current_thread().name)
        append(self, sample)

    monkeypatch.setattr(StoreWriter, "append", noted)
    _, first = _run_app(qtbot, tmp_path, folder, 6)
    assert threads and threading.main_thread().name not in threads
    reader = StoreReader(folder)
    uuids = [d.uuid for d in reader.devices() if d.uuid != "host"]
    assert len(uuids) == 2
    assert len(reader.fine(uuids[0], first[0] - 1, time.time(), GPU_LAYOUT.keys).times_s) >= 6
    reader.close()

    app, second = _run_app(qtbot, tmp_path, folder, 2)
    assert not app.local.has_history  # nothing read it yet: no timelines in memory
    window = app.ensure_window()  # the window opens: an empty history stands in while the store is read
    qtbot.addWidget(window)
    filling = window.history
    assert filling is app.history and filling.latest_s == -math.inf
    reading = "reading the history on disk"
    assert reading in window._status_text()  # its empty graphs are not taken for "nothing recorded"
    qtbot.waitUntil(lambda: app.local.has_history, timeout=30_000)
    assert app.history is not filling and window.history is app.history
    assert reading not in window._status_text()
    series = app.history.gpu_series("utilization_gpu_percent", first[0] - 5, time.time(), 1000)
    assert series is not None
    shown = series.times_s[np.isfinite(series.mean).all(axis=1)]
    assert shown[0] < second[0] - 0.5  # the first run's samples, read back from disk, come first
    assert math.floor(second[-1]) in shown.tolist()  # and this run's (1 s buckets), kept while it was read


def test_with_the_store_on_memory_holds_two_hours_and_the_window_reads_older_from_disk(qapp, tmp_path: Path) -> None:
    from dataclasses import replace

    from trayvml.config import Settings
    from trayvml.ui.app import MEMORY_WITH_STORE_S, App

    stored = (replace(Settings(), history_hours=12), "")
    app = App(parse_spec(SPEC), 0.5, stored=stored, history_folder=tmp_path / "h")
    assert MEMORY_WITH_STORE_S == 2 * 3600.0
    assert app.local.history.tiers[-1].span_s == MEMORY_WITH_STORE_S
    assert app.local.history.tiers[0].span_s == 960.0  # every sample for 16 min, as before
    assert app.history.disk is not None  # what memory no longer holds is read from the store
    assert app.local.has_history
    kept = app.local.history
    app.apply_settings(replace(app.settings, history_hours=4))
    assert app.local.history.tiers[-1].span_s == MEMORY_WITH_STORE_S  # a resize keeps the short span
    assert app.local.history is kept  # the same rings: not made and read from the store again
    app.apply_settings(replace(app.settings, sampling_interval_s=5.0))
    assert app.local.history is not kept and app.local.history.tiers[0].step_s == 5.0
    # A remote host's timelines are not on disk: its whole span stays in memory.
    assert app._new_history().tiers[-1].span_s == 4 * 3600.0


def test_a_new_sampling_interval_refills_the_history_off_the_gui_thread_with_what_the_store_lacks(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New rings are filled from the store on the fill thread, as the window's first; the samples
    the store has not committed yet (none here: it commits nothing) come from those kept."""
    from dataclasses import replace

    from trayvml.ui.app import App

    read_on = _store_reads(monkeypatch)
    monkeypatch.setattr(StoreWriter, "flush", lambda self: None)
    app = App(parse_spec(SPEC), 0.5, store=SettingsStore(tmp_path / "config.toml"), history_folder=tmp_path / "h")
    app.sampler.start()
    try:
        window = app.ensure_window()
        qtbot.addWidget(window)
        qtbot.waitUntil(lambda: app.local.has_history and app.latest is not None, timeout=30_000)
        qtbot.waitUntil(lambda: app.latest is not None and app.latest.timestamp_s > app.history.first_s + 2)
        read_on.clear()
        before = app.latest
        assert before is not None
        app.apply_settings(replace(app.settings, sampling_interval_s=5.0))
        qtbot.waitUntil(lambda: app.local.has_history, timeout=30_000)
        history = app.local.history
        assert history.tiers[0].step_s == 5.0 and window.history is history
        assert read_on == ["trayvml-history-fill"]
        series = history.gpu_series("utilization_gpu_percent", before.timestamp_s - 1, before.timestamp_s, 10)
        assert series is not None and np.isfinite(series.mean).any()  # the last sample before: no gap
    finally:
        app.sampler.stop()


def test_a_new_sampling_interval_while_the_history_is_read_waits_for_it_then_reads_again(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from trayvml.ui.app import App

    release = threading.Event()
    read_on = _store_reads(monkeypatch, release)
    app = App(parse_spec(SPEC), 0.5, store=SettingsStore(tmp_path / "config.toml"), history_folder=tmp_path / "h")
    app.sampler.start()
    try:
        qtbot.waitUntil(lambda: app.latest is not None, timeout=30_000)
        window = app.ensure_window()
        qtbot.addWidget(window)
        qtbot.waitUntil(lambda: len(read_on) == 1, timeout=30_000)  # the first read, under way
        app.apply_settings(replace(app.settings, sampling_interval_s=5.0))
        assert read_on == ["trayvml-history-fill"] and not app.local.has_history  # not read here meanwhile
        release.set()
        qtbot.waitUntil(lambda: app.local.has_history and app.local.history.tiers[0].step_s == 5.0, timeout=30_000)
        assert read_on == ["trayvml-history-fill"] * 2 and window.history is app.local.history
    finally:
        release.set()
        app.sampler.stop()


@pytest.mark.qt_log_ignore("No such signal QPlatformNativeInterface::systemTrayWindowChanged")  # no tray offscreen
def test_quitting_hides_the_icon_and_window_before_the_store_is_closed(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quit waits for the store's close, which waits for an hourly packer still at work (up to
    PACK_WAIT_S each): an icon and a window left in sight meanwhile, no longer answering, look hung."""
    from trayvml.ui.app import App

    app = App(parse_spec(SPEC), 0.5, store=SettingsStore(tmp_path / "config.toml"), history_folder=tmp_path / "h")
    window = app.ensure_window()
    qtbot.addWidget(window)
    window.show()
    app.tray.icon.show()
    in_sight: list[tuple[bool, bool]] = []  # (icon, window) as the store's close began
    close = StoreWriter.close

    def noted(self: StoreWriter) -> None:
        in_sight.append((app.tray.icon.isVisible(), window.isVisible()))
        close(self)

    monkeypatch.setattr(StoreWriter, "close", noted)
    app.sampler.start()
    try:
        qtbot.waitUntil(lambda: app.latest is not None, timeout=30_000)
    finally:
        app.stop()
    assert in_sight == [(False, False)]


@pytest.mark.parametrize(
    ("spec", "on_disk", "folder"),
    [
        (SPEC, False, True),  # the store off
        (SPEC, True, False),  # no store folder (memory only)
        ("idle:gpus=h100*2", True, True),  # a simulation's made-up past is not in the store
    ],
)
def test_without_the_past_on_disk_memory_holds_the_whole_span(
    qapp, tmp_path: Path, spec: str, on_disk: bool, folder: bool
) -> None:
    from dataclasses import replace

    from trayvml.config import Settings
    from trayvml.ui.app import App

    stored = (replace(Settings(), history_hours=12, history_on_disk=on_disk), "")
    app = App(parse_spec(spec), 0.5, stored=stored, history_folder=tmp_path / "h" if folder else None)
    assert app.local.history.tiers[-1].span_s == 12 * 3600.0


def test_new_spans_and_size_cap_reach_the_running_writer(qtbot, tmp_path: Path) -> None:
    from dataclasses import replace

    from trayvml.ui.app import App

    app = App(parse_spec(SPEC), 0.5, store=SettingsStore(tmp_path / "config.toml"), history_folder=tmp_path / "h")
    seen: list[float] = []
    app.sampler.sample_taken.connect(lambda s: seen.append(s.timestamp_s))
    app.sampler.start()
    try:
        qtbot.waitUntil(lambda: len(seen) >= 1, timeout=30_000)
        recording = app.sampler._worker._recording
        assert recording is not None and recording.writer is not None
        assert recording.writer.limits == Limits()
        app.apply_settings(replace(app.settings, history_fine_hours=2, history_coarse_days=3, history_size_mib=64))
        after = len(seen)
        qtbot.waitUntil(lambda: len(seen) >= after + 2, timeout=30_000)
        assert recording.writer.limits == Limits(2 * 3600.0, 3 * 86400.0, 64 << 20)
    finally:
        app.sampler.stop()


def test_a_running_recorder_is_read_instead_of_written(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    folder = tmp_path / "history"
    recorder = StoreWriter(folder)  # stands for `trayvml record`
    read_on = _store_reads(monkeypatch)
    try:
        app, _ = _run_app(qtbot, tmp_path, folder, 2)
        assert "being written by process" in app.store_note
        # Memory keeps the timelines from then on, their past read from the store: never on the
        # GUI thread, though the note came before the first sample.
        qtbot.waitUntil(lambda: app.local.has_history, timeout=30_000)
        assert read_on == ["trayvml-history-fill"]
        from dataclasses import replace

        app.apply_settings(replace(app.settings, sampling_interval_s=5.0))  # new rings: read again, elsewhere
        qtbot.waitUntil(lambda: app.local.has_history and app.local.history.tiers[0].step_s == 5.0, timeout=30_000)
        assert read_on == ["trayvml-history-fill"] * 2
    finally:
        recorder.close()
    assert StoreReader(folder).devices() == []  # the app wrote nothing beside the recorder


@pytest.mark.parametrize("set_back_s", [0.0, 3600.0])
def test_the_tray_takes_over_writing_once_the_recorder_stops(tmp_path: Path, set_back_s: float) -> None:
    """Also with the clock set back an hour meanwhile: the tray waited for the clock to pass the
    time of its last try again, and nothing was recorded for the hour."""
    from trayvml.history.disk.recording import LOCK_RETRY_S, Recording

    folder = tmp_path / "history"
    clock = ManualClock(1_800_000_000.0)
    source = Source(parse_spec("idle:gpus=h100"), clock, host=False)
    OPEN_SOURCES.append(source)
    recorder = StoreWriter(folder)
    recording = Recording(folder, Limits())
    assert recording.writer is None and recording.note and "being written by process" in recording.note
    assert recording.append(source.sample()) is None
    recorder.close()
    clock.set_wall_s(-set_back_s)
    clock.advance_s(LOCK_RETRY_S)
    assert recording.append(source.sample()) == ""  # the note clears: this app writes now
    assert recording.writer is not None
    recording.close()


def _stored(folder: Path, start_s: float, seconds: int) -> tuple[str, ...]:
    """``seconds`` of simulated samples from ``start_s`` written to the store; the GPUs' UUIDs."""
    clock = ManualClock(start_s)
    source = Source(parse_spec("training:gpus=h100*2"), clock, host=True)
    OPEN_SOURCES.append(source)
    writer = StoreWriter(folder)
    sample = None
    for _ in range(seconds):
        sample = source.sample()
        writer.append(sample)
        clock.advance_s(1.0)
    writer.close()
    assert sample is not None
    return tuple(d.uuid for d in sample.devices)


@pytest.fixture(scope="module")
def hours_stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[str, ...], float]:
    """Two hours and a minute stored three days ago, up to an hour's end: the folder, the GPUs'
    UUIDs and the hour it was written for. Written once for the tests that read it (7260 samples
    take 20 s on a 2-core machine); each reads a copy (:func:`_copied`)."""
    now = time.time()
    hour = now - now % 3600
    folder = tmp_path_factory.mktemp("stored") / "history"
    return folder, _stored(folder, hour - 3 * 86400 - 2 * 3600, 2 * 3600 + 60), hour


def _copied(stored: tuple[Path, tuple[str, ...], float], tmp_path: Path) -> tuple[Path, tuple[str, ...], float]:
    folder, uuids, hour = stored
    return Path(shutil.copytree(folder, tmp_path / "history")), uuids, hour


def test_the_week_reads_disk_and_shades_what_was_not_recorded(qtbot, tmp_path: Path, hours_stored) -> None:
    from tests.ui_helpers import shown_window
    from trayvml.ui.gaps import GAP_LABEL, _shadings

    folder, uuids, hour = _copied(hours_stored, tmp_path)  # two hours, three days ago
    now = time.time()
    sample, history, disk = disk_history(folder, "training:gpus=h100*2", now, uuids)
    window = shown_window(qtbot, history, sample)
    try:
        assert {b.text() for b in window.range_buttons.buttons()} >= {"24 h", "7 d"}
        window.set_range(7 * 86400)
        window.refresh()
        series = history.gpu_series("power_draw_w", now - 7 * 86400, now, 1000)
        assert series is not None and series.mean.shape[1] == 2
        drawn = series.times_s[np.isfinite(series.mean).all(axis=1)]
        assert drawn[-1] > now - 600 * 2  # the live sample, from memory
        drawn = drawn[:-1]  # the rest from disk: the two hours three days ago
        assert len(drawn) and drawn[0] >= hour - 3 * 86400 - 2 * 3600 - 600 and drawn[-1] <= hour - 3 * 86400 + 600
        assert window.gpu_page is not None
        shading = _shadings[window.gpu_page.panels[0].plot]
        spans = shading.shown[0]
        # Nothing recorded before the two hours, nor after them until the live sample.
        assert spans[0][1] <= drawn[0] + 600 and spans[-1][0] >= drawn[-1] and spans[-1][1] > now - 1800
        labels = [label for region, label in shading.regions if region.isVisible() and label.isVisible()]
        assert labels and all(label.textItem.toPlainText().strip() == GAP_LABEL for label in labels)

        window.show_range(hour - 3 * 86400 - 3 * 3600, hour - 3 * 86400 + 3600)  # the picker's range
        window.refresh()
        assert not window.following and window.range_buttons.checkedButton() is None
        start, end = window.visible_range()
        assert abs(start - (hour - 3 * 86400 - 3 * 3600)) < 60 and abs(end - (hour - 3 * 86400 + 3600)) < 60
    finally:
        disk.close()


def test_a_past_in_memory_alone_with_no_host_rows_is_not_shaded_as_not_recorded(tmp_path: Path) -> None:
    """A simulation's made-up past (README's first command) is in memory only, GPU rows without the
    host's: the store knows nothing of it, but the window draws it, so it is no gap."""
    folder = tmp_path / "history"
    now = time.time()
    _stored(folder, now - 3 * 86400, 60)  # a store that has been written, days ago
    history = History()
    history.disk = disk = DiskReach(folder)
    clock = ManualClock(now - 1800)
    past = Source(parse_spec("idle:gpus=h100"), clock, host=False)
    OPEN_SOURCES.append(past)
    for _ in range(180):  # 30 min of made-up past, a row every 10 s
        history.append(past.sample())
        clock.advance_s(10.0)
    try:
        spans = disk.not_recorded(now - 3600, now, 360, history)
        assert spans, "the hour before the made-up past: nothing recorded, shaded"
        assert spans[0][0] <= now - 3600 + 60 and all(last <= now - 1800 + 60 for _, last in spans)
    finally:
        disk.close()


@pytest.mark.parametrize(
    ("gap_s", "range_s", "refused", "shaded"),
    [
        (150, 300, False, (69, 220)),  # the row before it, the row after it
        (150, 3 * 3600, False, (69, 220)),  # memory's rows in 5 or 30 s buckets here: the store's rows decide
        (150, 300, True, (70, 220)),  # the store refused: memory's buckets, kept to their far ends
        (100, 300, False, None),  # a missed sample or two, as far as shading goes
    ],
)
def test_a_gap_is_measured_from_the_row_before_it_to_the_row_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gap_s: int, range_s: int, refused: bool, shaded: tuple | None
) -> None:
    """Seen at the five minutes' range: trayvml stopped for 150 s left one whole minute without a
    row, the rest of the gap in the minutes on either side of it, and a gap counted in whole
    minutes was too short to shade."""
    import sqlite3

    from trayvml.history.timeline import backfill

    folder = tmp_path / "history"
    now = time.time()
    minute = now - now % 3600 - 3 * 86400 + 600
    uuids = _stored(folder, minute + 30, 40)  # rows from half a minute in to 39 s later
    _stored(folder, minute + 70 + gap_s, 280 - gap_s)  # and again after the gap, up to 349 s
    # As the tray has it, started again: its first sample, and what the store holds before it in memory.
    sample, history, disk = disk_history(folder, "training:gpus=h100*2", minute + 360, uuids)
    try:
        assert backfill(history, disk.reader, sample, 400) == 40 + 280 - gap_s
        if refused:

            def refuse(*_: object) -> None:
                raise sqlite3.OperationalError("disk I/O error")

            monkeypatch.setattr(disk.reader, "row_times", refuse)
        spans = disk.not_recorded(minute + 360 - range_s, minute + 360, 1000, history)
    finally:
        disk.close()
    # (At three hours, the hours before the first row was ever recorded are shaded too.)
    after_first_row = [(round(a - minute), round(b - minute)) for a, b in spans if b > minute + 30]
    assert after_first_row == ([shaded] if shaded else [])
    assert disk.failed_reads == (1 if refused else 0)


def test_rows_not_yet_on_disk_keep_a_gap_from_reaching_over_them() -> None:
    # The store's last row before a gap is exact, but memory may hold later ones not written yet
    # (every 8 s, or later while the store cannot be written): a span from the store's row covered them.
    from trayvml.history.timeline import _gap_edges

    on_disk = np.array([100.0, 112.0])
    memory = [(np.arange(100.0, 120.0), 1.0)]  # rows to 119 s in 1 s buckets, 113-119 not on disk yet
    assert _gap_edges(120.0, 300.0, 60.0, on_disk, memory) == (120.0, 300.0)
    assert _gap_edges(120.0, 300.0, 60.0, on_disk, []) == (112.0, 300.0)
    older = [(np.array([60.0]), 30.0)]  # a 30 s bucket of memory's, over before the store's last row: the store decides
    assert _gap_edges(120.0, 300.0, 60.0, on_disk, older) == (112.0, 300.0)
    later = [(np.array([90.0]), 30.0)]  # one that may hold rows after it: to its end, not over them
    assert _gap_edges(120.0, 300.0, 60.0, on_disk, later) == (120.0, 300.0)


def test_a_week_is_read_once_for_the_plots_and_the_energy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The energy in view asks for more points than a plot is wide: at 7 days both get the same
    10-minute buckets, read once a device and kept (not a week of minutes, nor a read each redraw)."""
    folder = tmp_path / "history"
    now = time.time()
    uuids = _stored(folder, now - now % 3600 - 2 * 86400 - 60, 180)  # an hour's end packed, two days ago
    history = History()
    disk = DiskReach(folder)
    disk.uuids = uuids
    steps: list[float] = []
    coarse = disk.reader.coarse

    def counting(*arguments, **named):
        steps.append(arguments[3])
        return coarse(*arguments, **named)

    monkeypatch.setattr(disk.reader, "coarse", counting)
    try:
        for _ in range(2):  # two redraws
            energy = disk.gpu_series("power_draw_w", now - 7 * 86400, now, 4000, history)
            plot = disk.gpu_series("utilization_gpu_percent", now - 7 * 86400, now, 979, history)
        assert steps == [600.0] * len(uuids)
        assert energy.step_s == plot.step_s == 600.0 and np.isfinite(energy.mean).any()
    finally:
        disk.close()


def _week_window(qtbot, folder: Path, uuids: tuple[str, ...]):
    """A window at 7 days over the store in ``folder`` (2 GPUs), drawn once; the keys each read
    of the store asked for."""
    from tests.ui_helpers import shown_window

    sample, history, disk = disk_history(folder, "training:gpus=h100*2", time.time(), uuids)
    read: list[tuple[str, tuple[str, ...]]] = []
    coarse = disk.reader.coarse

    def counting(*arguments, **named):
        read.append((arguments[0], arguments[4]))
        return coarse(*arguments, **named)

    disk.reader.coarse = counting  # type: ignore[method-assign]
    window = shown_window(qtbot, history, sample)
    window.set_range(7 * 86400)
    window.refresh()
    return window, history, read


def test_a_panel_scrolled_into_view_after_the_first_week_redraw_draws_what_a_full_read_draws(
    qtbot, tmp_path: Path, hours_stored
) -> None:
    """The first redraw at 7 days reads the metrics of the panels in view (and the energy's) only;
    a panel scrolled into view later reads its own, and draws the very lines a read of every
    metric at once gives."""
    folder, uuids, _hour = _copied(hours_stored, tmp_path)
    window, history, read = _week_window(qtbot, folder, uuids)
    page = window.gpu_page
    assert page is not None and history.disk is not None
    first_keys = {k for uuid, keys in read if uuid in history.disk.uuids for k in keys}
    shown = page.visible_panels()
    assert "power_draw_w" in first_keys and {m.key for p in shown for m in p.spec.metrics} <= first_keys
    assert len(first_keys) < len(GPU_LAYOUT.keys) // 2  # not every metric stored
    # The clocks: several metrics a panel, each its own values (a mix-up of columns would show).
    [clocks] = [p for p in page.panels if p.spec.group is Group.CLOCKS]
    assert clocks not in shown and len(clocks.spec.metrics) > 1
    page.verticalScrollBar().setValue(round(clocks.plot.geometry().top()))
    window.refresh()
    scrolled = [p for p in page.visible_panels() if p not in shown and p.spec.metrics and not p.spec.strip]
    assert clocks in scrolled and not {m.key for p in scrolled for m in p.spec.metrics} & first_keys
    view = window._view
    assert view is not None
    drawn = {(id(p), k): list(p.lines[k].data) for p in scrolled for k in range(len(p.spec.metrics))}
    uuids = history.disk.uuids
    history.disk = DiskReach(history.disk.folder)  # reads every metric at once (nothing expected)
    history.disk.uuids = uuids
    try:
        finite = 0
        for panel in scrolled:
            for k, metric in enumerate(panel.spec.metrics):
                lines = drawn[(id(panel), k)]
                budget = page.budget(panel, sum(line is not None for line in lines) * len(panel.spec.metrics))
                full = history.gpu_series(metric.key, view.start_s, view.end_s, budget)
                assert full is not None
                for gpu, line in enumerate(lines):
                    if line is not None:
                        np.testing.assert_array_equal(line[0], full.times_s)
                        np.testing.assert_array_equal(line[1], full.mean[:, gpu])
                        finite += int(np.isfinite(line[1][:-1]).sum())  # the last bucket: memory's sample
        assert finite  # the stored hours, drawn
    finally:
        history.disk.close()


def test_hiding_the_window_lets_the_store_reads_go(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the window read of the store (megabytes at 7 days) is let go, the store's file closed
    and the freed pages handed back, when it hides: the idle tray keeps none of it. Shown again,
    it reads anew."""
    import gc
    import weakref

    from trayvml.ui import window as window_module

    trimmed: list[bool] = []
    monkeypatch.setattr(window_module, "give_back_free_memory", lambda: trimmed.append(True))
    now = time.time()
    folder = tmp_path / "history"
    uuids = _stored(folder, now - now % 3600 - 3 * 86400 - 120, 180)  # packed up to an hour's end
    window, history, read = _week_window(qtbot, folder, uuids)
    disk = history.disk
    assert disk is not None and disk._cache and disk.reader._buckets and disk.reader._db is not None
    kept = [weakref.ref(r.data) for r in disk._cache.values()]
    kept += [weakref.ref(a) for made in disk.reader._buckets.values() for buckets in made for a in buckets]
    window.hide()
    gc.collect()
    assert all(ref() is None for ref in kept)
    assert not disk._cache and not disk.reader._buckets and disk.reader._buckets_bytes == 0
    assert disk.reader._db is None and trimmed
    window.show()
    read.clear()
    window.refresh()
    assert read and disk._cache
    disk.close()


def test_a_device_is_read_for_the_metrics_expected_then_once_for_the_rest(tmp_path: Path) -> None:
    """A read for an expected metric reads the expected ones of each device; one for a metric not
    expected reads every metric not read yet, in one go: never a read a metric."""
    from trayvml.history.rings import HISTORY_GPU_KEYS

    folder = tmp_path / "history"
    now = time.time()
    uuids = _stored(folder, now - now % 3600 - 2 * 86400 - 60, 180)
    disk = DiskReach(folder)
    disk.uuids = uuids
    read: list[tuple[str, ...]] = []
    coarse = disk.reader.coarse

    def counting(*arguments, **named):
        read.append(arguments[4])
        return coarse(*arguments, **named)

    disk.reader.coarse = counting  # type: ignore[method-assign]
    history = History()
    try:
        disk.expect({"power_draw_w", "temperature_gpu_c", "not_a_gpu_metric"})
        power = disk.gpu_series("power_draw_w", now - 7 * 86400, now, 1000, history)
        assert read == [("temperature_gpu_c", "power_draw_w")] * len(uuids)
        disk.gpu_series("temperature_gpu_c", now - 7 * 86400, now, 1000, history)
        assert len(read) == len(uuids)
        clocks = disk.gpu_series("clock_sm_mhz", now - 7 * 86400, now, 1000, history)
        rest = tuple(k for k in HISTORY_GPU_KEYS if k not in ("temperature_gpu_c", "power_draw_w"))
        assert read[len(uuids) :] == [rest] * len(uuids)
        disk.gpu_series("fan_speed_percent", now - 7 * 86400, now, 1000, history)
        assert len(read) == 2 * len(uuids)
        assert np.isfinite(power.mean).any() and np.isfinite(clocks.mean).any()
        with pytest.raises(ValueError):
            disk.gpu_series("cpu_percent", now - 7 * 86400, now, 1000, history)
    finally:
        disk.close()


_HOUR = 1_800_000_000.0 - 1_800_000_000.0 % 3600
# Stored from ten minutes before the hour to a minute past it, and from half past on: a gap from
# the hour's second minute on, which memory holds; the last hour not packed yet.
_STORED = ((_HOUR - 600, 660), (_HOUR + 1800, 1860))


def _memory_beside_store(folder: Path, off: tuple[float, float] = (0.0, 0.0)) -> tuple[History, DiskReach, float]:
    """An hour and ten minutes of 2 simulated GPUs, a sample a second, in memory, and the _STORED
    stretches of them in the store in ``folder``; ``off``: seconds in neither (the tray was off).
    Returns the history, the store's reach for the GPUs, and the last sample's time."""
    clock = ManualClock(_HOUR - 600)
    source = Source(parse_spec("training:gpus=h100*2"), clock, host=True)
    OPEN_SOURCES.append(source)
    writer = StoreWriter(folder)
    history = History()
    sample = None
    try:
        while clock.now_s() < _HOUR + 3660:
            if not off[0] <= clock.now_s() < off[1]:
                sample = source.sample()
                history.append(sample)
                if any(start <= sample.timestamp_s < start + seconds for start, seconds in _STORED):
                    writer.append(sample)
            clock.advance_s(1.0)
    finally:
        writer.close()
    assert sample is not None
    disk = DiskReach(folder)
    disk.uuids = tuple(d.uuid for d in sample.devices)
    return history, disk, sample.timestamp_s


def test_memory_is_read_from_the_first_bucket_the_store_lacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A week's read fills from memory only what the store has not got: memory is read from the
    first such bucket it can hold rows of (a gap in the store, here), not from the week's start,
    and the lines are those memory read whole gives. The store's buckets stacked a line a GPU are
    kept between redraws while its reads stay the same."""
    history, disk, end = _memory_beside_store(tmp_path / "history")
    hour = _HOUR
    try:
        read: list[float] = []  # the times memory was read from
        rows_from = History.gpu_rows_from

        def reading(self: History, key: str, start_s: float, end_s: float, points: int, from_s: float) -> Series | None:
            read.append(from_s)
            return rows_from(self, key, start_s, end_s, points, from_s)

        monkeypatch.setattr(History, "gpu_rows_from", reading)
        joined = disk.gpu_series("power_draw_w", end - 7 * 86400, end, 1000, history)
        monkeypatch.undo()
        assert read == [hour + 600]  # the first 10 minutes with nothing stored (hour + 60 on)
        datas = [disk._coarse(u, "power_draw_w", end - 7 * 86400, end, 1000) for u in disk.uuids]
        whole = _with_memory(_series(datas), Rings.gpu_series(history, "power_draw_w", end - 7 * 86400, end, 1000))
        np.testing.assert_array_equal(joined.mean, whole.mean)
        np.testing.assert_array_equal(joined.high, whole.high)
        filled = joined.times_s[np.isfinite(joined.mean).all(axis=1)]
        assert {hour + 600, hour + 1200, hour + 3600} <= set(filled.tolist())  # the gap's and the last
        stacked = disk._stacks[("", "power_draw_w", 600.0)][1]
        disk.gpu_series("power_draw_w", end - 7 * 86400, end, 1000, history)
        assert disk._stacks[("", "power_draw_w", 600.0)][1] is stacked  # the same reads: kept
        assert not stacked.mean.flags.writeable  # handed out again: no caller may change it
        disk._cache.clear()
        disk.gpu_series("power_draw_w", end - 7 * 86400, end, 1000, history)
        assert disk._stacks[("", "power_draw_w", 600.0)][1] is not stacked  # read again: stacked again
    finally:
        disk.close()


def test_spans_not_recorded_count_memorys_rows_where_the_store_lacks_them(tmp_path: Path) -> None:
    """The "not recording" spans of a range past memory (memory read from a bucket before the first
    the store lacks): the store's gap that memory holds is no span, a span when neither recorded
    runs from the last row before it to the first after it, and the range's days before anything
    was recorded are one span."""
    hour = _HOUR
    off = (hour + 2000, hour + 2300)  # neither memory nor the store: the tray was off
    history, disk, end = _memory_beside_store(tmp_path / "history", off)
    try:
        day = disk.not_recorded(end - 86400, end, 1000, history)  # minute buckets: a span's ends are rows
        assert day[1:] == [(off[0] - 1, off[1])]
        assert day[0][1] == hour - 600 and day[0][0] <= end - 86400
        week = disk.not_recorded(end - 7 * 86400, end, 1000, history)  # 10 minutes: the 5 off within one
        assert len(week) == 1 and week[0][1] == hour - 600
    finally:
        disk.close()


def test_without_a_thread_to_read_the_store_the_window_gets_the_history_read_at_once(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "history"
    _, first = _run_app(qtbot, tmp_path, folder, 3)
    app, second = _run_app(qtbot, tmp_path, folder, 2)

    def no_thread(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    history = app.history
    assert app.local.has_history and history is app.history  # read here, not an empty stand-in
    assert history.first_s <= first[0] and history.latest_s >= second[-1] - 1


def _gaps_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[
    float, Sample, History, DiskReach, list[float], Callable[[float, float, int, History], list[tuple[float, float]]]
]:
    """A history with a store recorded from 4 min to 1 min ago, whose "not recorded" reads are
    counted: (now, the sample, the history, its disk, the ends of the reads asked, the real read)."""
    now = time.time()
    folder = tmp_path / "history"
    uuids = _stored(folder, now - 240, 180)
    sample, history, disk = disk_history(folder, "training:gpus=h100*2", now, uuids)
    asked: list[float] = []
    read = disk.not_recorded

    def counted(start_s: float, end_s: float, points: int, memory: History) -> list[tuple[float, float]]:
        asked.append(end_s)
        return read(start_s, end_s, points, memory)

    monkeypatch.setattr(disk, "not_recorded", counted)
    return now, sample, history, disk, asked, read


def test_following_live_the_gaps_are_read_again_only_once_one_could_have_opened(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store is asked for what was not recorded when the view moves on, or once the range has
    grown by a gap's least length (a new sample after trayvml stood still that long): not each
    second, when no gap to shade could have opened since."""
    from dataclasses import replace

    from tests.ui_helpers import shown_window
    from trayvml.history.timeline import GAP_MIN_S
    from trayvml.ui.gaps import _shadings, visible_gaps

    now, sample, history, disk, asked, read = _gaps_asked(tmp_path, monkeypatch)
    window = shown_window(qtbot, history, sample)
    try:
        window.set_range(900)
        window.refresh()
        assert window.gpu_page is not None
        shading = _shadings[window.gpu_page.panels[0].plot]
        assert shading.shown[0]  # the range before the stored minutes
        asked.clear()
        start = window.gpu_page.x_range()[0]
        for k in range(1, 6):  # seconds between moves of the view
            sample = replace(sample, timestamp_s=now + k)
            history.append(sample)
            window.update_sample(sample)
            window.finish_redraw()
        assert window.gpu_page.x_range()[0] == start and asked == []
        sample = replace(sample, timestamp_s=sample.timestamp_s + GAP_MIN_S + 30)  # trayvml stood still
        history.append(sample)
        window.update_sample(sample)
        window.finish_redraw()
        assert asked == [sample.timestamp_s]
        spans = shading.shown[0]
        assert window._view is not None
        start, end = window._view.start_s, sample.timestamp_s  # the range that redraw read
        points = max(100, int(window.gpu_page.width_px()))
        assert spans == visible_gaps(read(start, end, points, history), start, end, history.first_s)
    finally:
        disk.close()


def test_a_read_the_store_refused_is_asked_again_at_the_next_redraw(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read the store refuses stands in as nothing recorded (the whole range shaded): kept for the
    seconds between moves of the view, that was shown for up to two minutes, not a second."""
    import sqlite3
    from dataclasses import replace

    from tests.ui_helpers import shown_window

    now, sample, history, disk, asked, _ = _gaps_asked(tmp_path, monkeypatch)

    def refused(*args: object, **kwargs: object) -> object:
        raise sqlite3.OperationalError("database is locked")

    coarse = disk.reader.coarse
    monkeypatch.setattr(disk.reader, "coarse", refused)
    window = shown_window(qtbot, history, sample)
    try:
        window.set_range(900)
        window.refresh()
        assert disk.failed_reads > 0 and asked
        monkeypatch.setattr(disk.reader, "coarse", coarse)
        disk._cache.clear()  # what the refused reads stood in with
        asked.clear()
        sample = replace(sample, timestamp_s=now + 1)
        history.append(sample)
        window.update_sample(sample)
        window.finish_redraw()
        assert asked == [now + 1]  # asked again, not the refused read's spans kept
    finally:
        disk.close()


def test_stand_in_settings_begin_no_history_on_disk_but_go_on_with_one_kept(qapp, tmp_path: Path) -> None:
    """A settings file that cannot be used at all says nothing of the history on disk: where the
    user kept none, none is begun (their "off" was turned on); one kept goes on, pruned by nothing."""
    from trayvml.config import STAND_IN
    from trayvml.history.disk.db import FILE_NAME
    from trayvml.ui.app import App

    app = App(parse_spec(SPEC), 0.5, stored=(STAND_IN, "unusable"), history_folder=tmp_path / "none")
    assert app.settings.stand_in and not app.settings.history_on_disk and app._open_recording() is None
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / FILE_NAME).touch()  # (a store kept before: its file is there)
    app = App(parse_spec(SPEC), 0.5, stored=(STAND_IN, "unusable"), history_folder=kept)
    assert app.settings.history_on_disk and app.settings.history_limits.coarse_span_s > 7 * 86400.0
