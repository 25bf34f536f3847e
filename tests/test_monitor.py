"""One host's pipeline without Qt: sample in, history, energy, spans and alerts brought up to date,
notices out; this machine and a remote host through the same code."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from tests.helpers import present, simulated_source
from trayvml.alerts.dispatch import Dispatcher, Outgoing
from trayvml.alerts.engine import AlertSettings
from trayvml.alerts.grouping import GROUP
from trayvml.alerts.rules import RULES, AlertEvent, RuleSettings
from trayvml.alerts.severity import Severity
from trayvml.core.clock import ManualClock
from trayvml.core.demand import HISTORY, PROCESSES
from trayvml.core.sample import SystemInfo
from trayvml.history.timeline import History
from trayvml.monitor.pipeline import DETAILS_WAIT, Monitor
from trayvml.monitor.remotes import RemoteMonitors

ALL_OFF = {kind.key: replace(kind.defaults, enabled=False) for kind in RULES}
MEMORY_AT_ONCE = RuleSettings(True, warning_enter=1.0, warning_clear=0.5, hold_s=0.0)
MEMORY_ONLY = AlertSettings(rules={**ALL_OFF, "memory_used": MEMORY_AT_ONCE})
ALL_OFF_SETTINGS = AlertSettings(rules=ALL_OFF)
WITH_PROCESSES = HISTORY | {PROCESSES}  # what the timelines read, and the process lists


def _ready_dispatcher(clock: ManualClock | None = None) -> Dispatcher:
    dispatcher = Dispatcher(clock or ManualClock())
    dispatcher.notifier_ready()
    return dispatcher


def test_a_sample_feeds_history_energy_and_alerts_and_gives_one_grouped_notice() -> None:
    source, clock, _ = simulated_source("training:gpus=h100*2,start=1800")
    monitor = Monitor(_ready_dispatcher(), MEMORY_ONLY, History)
    outcome = monitor.take(source.sample(WITH_PROCESSES))
    assert sorted(e.gpu_index for e in outcome.events) == [0, 1] and all(e.host == "" for e in outcome.events)
    (notice,) = outcome.notices  # one rule on two GPUs: one notification
    assert notice.key == (GROUP, "memory_used") and notice.title.startswith("GPUs 0, 1: ") and notice.simulated
    assert "python train.py" in notice.body  # the biggest process named, as the desktop does
    assert [o.event.gpu_index for o in outcome.sent] == [0, 1]
    clock.advance_s(1.0)
    monitor.take(source.sample(WITH_PROCESSES))
    assert monitor.history.gpu_count == 2 and monitor.history.latest_s == present(monitor.latest).timestamp_s
    assert monitor.energy.since_start_wh(0) > 0  # integrated over the second between the samples


def test_an_alert_naming_processes_waits_for_them_on_a_host_that_reads_them_on_demand() -> None:
    source, clock, _ = simulated_source("training:gpus=h100,start=1800")
    monitor = Monitor(_ready_dispatcher(), MEMORY_ONLY, History, processes_on_demand=True)
    first = monitor.take(source.sample(HISTORY))  # no process lists read
    assert [e.rule for e in first.events] == ["memory_used"] and first.notices == []
    assert [event.rule for event, _ in monitor.awaiting_processes] == ["memory_used"]
    clock.advance_s(1.0)
    second = monitor.take(source.sample(WITH_PROCESSES))
    (notice,) = second.notices
    assert "python train.py --model llama-7b --rank 0 (" in notice.body and monitor.awaiting_processes == []


def test_a_monitor_asks_for_the_lists_where_a_gpu_of_its_own_has_the_job_finished_rule_on() -> None:
    # The job-finished rule names what ran: on for one GPU only (off by default), the lists are read.
    from dataclasses import replace as changed

    from trayvml.alerts.engine import AlertSettings
    from trayvml.core.demand import PROCESSES

    defaults = AlertSettings()
    assert (
        not defaults.rules["job_finished"].enabled
        and PROCESSES not in Monitor(_ready_dispatcher(), defaults, History).needs()
    )
    on = changed(defaults.rules["job_finished"], enabled=True)
    for settings in (
        AlertSettings(overrides={1: {"job_finished": on}}),
        changed(defaults, rules={**defaults.rules, "job_finished": on}),
    ):
        assert PROCESSES in Monitor(_ready_dispatcher(), settings, History).needs()


def test_an_alert_goes_without_processes_after_waiting_a_few_samples_for_them() -> None:
    source, clock, _ = simulated_source("training:gpus=h100,start=1800")
    monitor = Monitor(_ready_dispatcher(), MEMORY_ONLY, History, processes_on_demand=True)
    notices = []
    for _ in range(DETAILS_WAIT + 1):
        notices += monitor.take(source.sample(HISTORY)).notices  # the lists never come
        clock.advance_s(1.0)
    (notice,) = notices
    assert "python" not in notice.body and monitor.awaiting_processes == []


def test_a_host_whose_samples_carry_what_they_carry_does_not_wait() -> None:
    source, _, _ = simulated_source("training:gpus=h100,start=1800")
    monitor = Monitor(_ready_dispatcher(), MEMORY_ONLY, History)  # a remote host: nothing to ask for
    outcome = monitor.take(source.sample(HISTORY))
    assert len(outcome.notices) == 1 and monitor.awaiting_processes == []


def test_notices_wait_for_a_notifier_and_a_pause_quiets_them_while_the_states_go_on() -> None:
    clock = ManualClock()
    dispatcher = Dispatcher(clock)  # no notifier yet
    source, _, _ = simulated_source("training:gpus=h100,start=1800")
    monitor = Monitor(dispatcher, MEMORY_ONLY, History)
    assert monitor.take(source.sample(WITH_PROCESSES)).notices == []
    (held,) = dispatcher.notifier_ready()
    assert monitor.outcome([held], 0.0).notices[0].key == (GROUP, "memory_used")
    paused = Monitor(dispatcher, MEMORY_ONLY, History)
    dispatcher.pause(3600.0)
    outcome = paused.take(source.sample(WITH_PROCESSES))
    assert [e.rule for e in outcome.events] == ["memory_used"] and outcome.notices == [] and outcome.sent == []


def test_a_notice_of_simulated_gpus_says_so_and_one_of_real_ones_does_not() -> None:
    """The window's banner says "SIMULATED"; a desktop notification or a pushed alert of made-up
    GPUs (trayvml's first run where no driver is) said nothing of it."""
    from dataclasses import replace

    for simulation, prefix in (("simulated GPUs (training)", "[simulated] "), ("", "")):
        source, _, _ = simulated_source("training:gpus=h100*2,start=1800")
        monitor = Monitor(_ready_dispatcher(), MEMORY_ONLY, History)
        sample = source.sample(WITH_PROCESSES)
        assert sample.simulation
        (notice,) = monitor.take(replace(sample, simulation=simulation)).notices
        assert notice.shown_title().startswith(f"{prefix}GPUs 0, 1: memory used ≥ ")


def test_remote_hosts_each_get_a_monitor_whose_alerts_name_the_host() -> None:
    source, _, _ = simulated_source("training:gpus=h100*2,start=1800")
    sample = source.sample(WITH_PROCESSES)
    dgx = replace(sample, system=SystemInfo("dgx-01", "", "", ""))
    box = replace(sample, system=SystemInfo("gpu-box", "", "", ""))
    past = replace(dgx, timestamp_s=dgx.timestamp_s - 60)
    monitors = RemoteMonitors(
        _ready_dispatcher(), MEMORY_ONLY, History, lambda host, before_s: [past] if host == "dgx-01" else []
    )
    fresh, outcome = monitors.take([dgx, box])
    assert fresh == [dgx, box] and sorted(monitors.monitors) == ["dgx-01", "gpu-box"]
    assert {(e.host, e.gpu_index) for e in outcome.events} == {
        ("dgx-01", 0),
        ("dgx-01", 1),
        ("gpu-box", 0),
        ("gpu-box", 1),
    }
    titles = sorted(n.title for n in outcome.notices)  # one notice per host: a host's GPU 0 is not another's
    assert len(titles) == 2 and titles[0].startswith("dgx-01: GPUs 0, 1")
    assert titles[1].startswith("gpu-box: GPUs 0, 1")
    assert monitors.histories["dgx-01"].first_s == past.timestamp_s  # a Prometheus server's past first
    assert monitors.take([dgx, box]) == ([], outcome.__class__())  # nothing new: nothing fed twice
    assert [e.host for e in monitors.events()].count("dgx-01") == 2


def test_an_unreachable_remote_host_feeds_nothing() -> None:
    source, _, _ = simulated_source("idle:gpus=h100")
    gone = replace(source.sample(), gpus=(), devices=(), system=SystemInfo("dgx-01", "", "", ""))
    monitors = RemoteMonitors(_ready_dispatcher(), AlertSettings(), History)
    assert monitors.take([gone])[0] == [] and monitors.monitors == {}


def test_the_monitors_import_no_qt() -> None:
    code = (
        "import sys, trayvml.monitor.pipeline, trayvml.monitor.remotes;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_job_finished_notice_names_the_job_that_was_running_while_the_gpu_was_busy() -> None:
    """When the job ends its processes are gone from the list: the monitor remembers the last busy
    ones (their attribution), so the notice says which job finished, not only on which GPU."""
    from trayvml.alerts.rules import JobSettings

    job_only = AlertSettings(rules={**ALL_OFF, "job_finished": JobSettings(True, 50.0, 60.0, 5.0, 30.0)})
    source, clock, _ = simulated_source("training:gpus=h100,start=6300")  # the job ends at 6600 s
    monitor = Monitor(_ready_dispatcher(), job_only, History, processes_on_demand=True)
    notices = []
    for _ in range(80):
        notices += monitor.take(source.sample(WITH_PROCESSES)).notices
        clock.advance_s(5.0)
    (notice,) = notices
    assert "job finished" in notice.title
    assert "It was running: container 3f2a9c1b7e4d: python train.py" in notice.body
    assert monitor.latest is not None and monitor.latest.gpus[0].processes == ()  # gone from the list by then


def test_the_monitor_keeps_memory_and_gpu_time_per_user() -> None:
    source, clock, _ = simulated_source("processes:gpus=rtx4090,start=1800")
    monitor = Monitor(_ready_dispatcher(), AlertSettings(rules=ALL_OFF), History)
    for _ in range(3):
        monitor.take(source.sample(WITH_PROCESSES))
        clock.advance_s(5.0)
    rows = {row.user: row for row in monitor.users.rows()}
    busiest = max(rows.values(), key=lambda row: row.gpu_seconds)
    assert busiest.gpu_seconds > 0 and busiest.gpus == (0,) and busiest.memory_bytes > 0


def _run_with_the_clock_ahead(ahead_s: float) -> Monitor:
    """Three minutes of an idle GPU, the wall clock ``ahead_s`` ahead for the first, then set right
    (a dual-boot machine whose hardware clock keeps local time, until NTP answers)."""
    source, clock, _ = simulated_source("idle:gpus=h100")
    monitor = Monitor(_ready_dispatcher(clock), AlertSettings(), History)
    clock.set_wall_s(ahead_s)
    for tick in range(180):
        if tick == 60:
            clock.set_wall_s(-ahead_s)
        monitor.take(source.sample(HISTORY))
        clock.advance_s(1.0)
    return monitor


def test_the_wall_clock_set_back_hours_reads_the_last_minute_as_if_it_had_not_been() -> None:
    """Eight hours ahead, then set back: the last minute read 30 s buckets, the energy over it was
    unknown, and the GPU had been idle for minus eight hours, until the clock passed the time it
    had been set back from. Each now as in the same run on a clock that was right all along."""
    right, stepped = _run_with_the_clock_ahead(0.0), _run_with_the_clock_ahead(8 * 3600.0)
    now_s = present(right.latest).timestamp_s
    assert present(stepped.latest).timestamp_s == now_s  # the same stamps after the step
    for monitor in (right, stepped):
        assert monitor.history.latest_s == now_s
    minute = [m.history.gpu_series("power_draw_w", now_s - 60, now_s, 600) for m in (right, stepped)]
    assert [present(series).step_s for series in minute] == [1.0, 1.0]
    np.testing.assert_array_equal(present(minute[0]).mean, present(minute[1]).mean)
    assert not np.isnan(present(minute[1]).mean).any()
    energy = [m.energy.between_wh(0, now_s - 60, now_s) for m in (right, stepped)]
    assert energy[0] > 0 and energy[1] == pytest.approx(energy[0])
    assert stepped.idle_for_s(0) == right.idle_for_s(0) == (179.0, True)


@pytest.mark.parametrize("set_back_s", [0.0, 3 * 3600.0])
def test_the_wall_clock_set_back_opens_no_notice_group_of_hours_before(set_back_s: float) -> None:
    """XID 79 on GPU 0, then an hour later the clock set back three hours and XID 79 on GPU 3: a
    notice of its own, as without the step, not "GPUs 0, 3" (every group of the step's last hours
    was open again)."""

    def xid(gpu: int, t_s: float) -> Outgoing:
        return Outgoing(
            AlertEvent(t_s, gpu, "H100", "xid", "event", Severity.CRITICAL, "XID 79 (fell off the bus)", 79)
        )

    source, clock, _ = simulated_source("idle:gpus=h100*4")
    monitor = Monitor(_ready_dispatcher(clock), ALL_OFF_SETTINGS, History)
    monitor.take(source.sample(HISTORY))
    monitor.outcome([xid(0, clock.now_s())], clock.now_s())
    for _ in range(60):  # an hour, a sample a minute
        clock.advance_s(60.0)
        monitor.take(source.sample(HISTORY))
    clock.set_wall_s(-set_back_s)
    clock.advance_s(60.0)
    monitor.take(source.sample(HISTORY))
    (notice,) = monitor.outcome([xid(3, clock.now_s())], clock.now_s()).notices
    assert notice.title == "GPU 3 H100: XID 79 (fell off the bus)"


@pytest.mark.parametrize("step_s", [0.0, 2 * 3600.0])
def test_the_wall_clock_set_forward_fires_no_held_alert_at_the_step(step_s: float) -> None:
    """A notebook holds GPU memory while the GPU idles (the rule waits 30 min for that), and the
    clock is set forward two hours (a dual-boot machine in the Americas until NTP answers): the
    hold was over at the step, and "memory held, GPU idle for 2 h" fired four minutes in."""
    source, clock, _ = simulated_source("stalled:gpus=h100+rtx4090+h100,start=500")
    monitor = Monitor(_ready_dispatcher(clock), AlertSettings(), History)
    fired = []
    for tick in range(24):  # four minutes in 10 s ticks
        if tick == 12:
            clock.set_wall_s(step_s)
        sample = source.sample(HISTORY | monitor.engine.needs())
        fired += [(e.gpu_index, e.rule) for e in monitor.take(sample).events if e.kind == "firing"]
        clock.advance_s(10.0)
    assert (2, "memory_held_idle") not in fired
    assert monitor.idle_for_s(2) == (230.0, True)  # idle all along: since the first sample


def test_with_its_samples_on_disk_a_host_makes_its_history_from_the_store_when_first_read(tmp_path) -> None:
    """This machine with the history on disk: nothing kept in memory until the window reads the
    history; then the store's rows (committed every few seconds) and the samples it may not hold
    yet make one timeline, every sample once."""
    from trayvml.history.disk.read import StoreReader
    from trayvml.history.disk.write import FLUSH_S, StoreWriter
    from trayvml.history.timeline import backfill

    made: list[float] = []  # the time of the sample each past was read before

    def past(history: History, before) -> None:
        made.append(before.timestamp_s)
        reader = StoreReader(tmp_path)
        try:
            backfill(history, reader, before, history.tiers[-1].span_s)
        finally:
            reader.close()

    source, clock, _ = simulated_source("training:gpus=h100*2")
    writer = StoreWriter(tmp_path)
    recent_s = 2 * FLUSH_S + 4
    monitor = Monitor(_ready_dispatcher(), ALL_OFF_SETTINGS, History, past=past, recent_s=recent_s)
    times = []
    try:
        for _ in range(95):  # not a whole number of flushes: the last seconds are not on disk yet
            sample = source.sample(HISTORY)
            times.append(sample.timestamp_s)
            writer.append(sample)
            monitor.take(sample)
            clock.advance_s(1.0)
        assert monitor._history is None  # nothing read it: no timelines in memory
        assert len(monitor._recent) == recent_s + 1  # only the samples the store may lack
        history = monitor.history
        assert made == [times[-int(recent_s) - 1]]
        series = history.gpu_series("utilization_gpu_percent", times[0] - 1, times[-1], 1000)
        assert series is not None
        shown = series.times_s[np.isfinite(series.mean).all(axis=1)]
        assert shown.tolist() == times  # every second once: from the store, then from memory
        sample = source.sample(HISTORY)
        monitor.take(sample)  # from now on, straight into the history
        assert history.latest_s == sample.timestamp_s and made == [times[-int(recent_s) - 1]]
    finally:
        writer.close()
        source.close()


def test_a_history_made_before_any_sample_gets_its_past_with_the_first() -> None:
    pasts: list[float] = []
    source, clock, _ = simulated_source("idle:gpus=h100")
    monitor = Monitor(_ready_dispatcher(), ALL_OFF_SETTINGS, History, past=lambda h, s: pasts.append(s.timestamp_s))
    try:
        history = monitor.history  # the window opened before the first sample
        first = source.sample(HISTORY)
        monitor.take(first)
        clock.advance_s(1.0)
        monitor.take(source.sample(HISTORY))
        assert pasts == [first.timestamp_s] and monitor.history is history
        monitor.history = History()  # made anew (the settings changed its span): its past again
        monitor.take(source.sample(HISTORY))
        assert len(pasts) == 2
    finally:
        source.close()


def _keeping(
    source, clock: ManualClock, recent_s: float, samples: int, step_s: float, monotonic: bool = True
) -> Monitor:
    """A monitor whose samples are kept elsewhere too (a ``past``), fed ``samples`` ``step_s`` apart
    (``monotonic`` False: without a monotonic time, as on macOS)."""
    monitor = Monitor(_ready_dispatcher(), ALL_OFF_SETTINGS, History, past=lambda h, s: None, recent_s=recent_s)
    for _ in range(samples):
        sample = source.sample(HISTORY)
        monitor.take(sample if monotonic else replace(sample, monotonic_s=float("nan")))
        clock.advance_s(step_s)
    return monitor


def test_without_a_monotonic_clock_the_samples_kept_go_by_the_wall_clock() -> None:
    """macOS has no clock that counts suspend: every sample's monotonic time is NaN, and the samples
    kept for the history (none made yet) must still be the last few seconds, not the whole run."""
    source, clock, _ = simulated_source("idle:gpus=h100")
    try:
        monitor = _keeping(source, clock, 5.0, 30, 1.0, monotonic=False)
        assert len(monitor._recent) == 6  # 5 s apart at most, and the last
    finally:
        source.close()


def test_a_history_filled_elsewhere_gets_every_sample_taken_meanwhile() -> None:
    source, clock, _ = simulated_source("idle:gpus=h100")
    try:
        monitor = _keeping(source, clock, 2.0, 5, 1.0)
        started = monitor.start_history()
        assert started is not None and monitor.start_history() is None  # one fill at a time
        history, before = started
        times = [s.timestamp_s for s in monitor._recent]
        assert before.timestamp_s == times[0]
        for _ in range(10):  # the store being read on another thread: longer than recent_s
            sample = source.sample(HISTORY)
            times.append(sample.timestamp_s)
            monitor.take(sample)
            clock.advance_s(1.0)
        assert not monitor.has_history and monitor.finish_history(history)
        assert monitor.history is history
        series = history.gpu_series("utilization_gpu_percent", times[0] - 1, times[-1], 1000)
        assert series is not None
        assert series.times_s[np.isfinite(series.mean).all(axis=1)].tolist() == times  # none dropped
        # A history made while another was filled is the one kept.
        other = Monitor(_ready_dispatcher(), ALL_OFF_SETTINGS, History, past=lambda h, s: None, recent_s=2.0)
        other.take(source.sample(HISTORY))
        late = other.start_history()
        assert late is not None
        made = other.history
        assert not other.finish_history(late[0]) and other.history is made
    finally:
        source.close()


def test_samples_far_apart_are_kept_for_a_history_however_old() -> None:
    """At a minute between samples the store may still lack the one before the last: the last few
    are kept whatever their age."""
    from trayvml.monitor.pipeline import RECENT_AT_LEAST

    source, clock, _ = simulated_source("idle:gpus=h100")
    try:
        monitor = _keeping(source, clock, 20.0, 6, 60.0)
        assert len(monitor._recent) == RECENT_AT_LEAST == 3
    finally:
        source.close()
