"""Demand-driven sampling: the reader reads only what someone is looking at."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.helpers import simulated_source
from trayvml.alerts.engine import AlertSettings
from trayvml.commands.csvlog import demand_of, parse_fields
from trayvml.config import Settings
from trayvml.core.demand import EVERYTHING, HISTORY, PROCESSES, Demand
from trayvml.core.sample import MetricState

PROCESS_CALLS = ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3")


def test_the_wanted_set_is_the_union_of_what_each_consumer_needs() -> None:
    demand = Demand()
    demand.need("history", {"temperature_gpu_c"})
    demand.need("window", {"temperature_gpu_c", PROCESSES})
    assert demand.wanted == {"temperature_gpu_c", PROCESSES}
    demand.need("window", {"power_draw_w"})  # a consumer's need is replaced, not added to
    assert demand.wanted == {"temperature_gpu_c", "power_draw_w"}
    demand.need("window", ())  # needs nothing now
    assert demand.wanted == {"temperature_gpu_c"}


def test_an_unknown_metric_is_refused() -> None:
    with pytest.raises(KeyError, match="not_a_metric"):
        Demand().need("window", {"not_a_metric"})


def test_the_history_records_every_timeline_but_not_the_process_lists() -> None:
    assert PROCESSES not in HISTORY and "process_count" not in HISTORY
    assert {"utilization_gpu_percent", "memory_used_bytes", "temperature_gpu_c"} <= HISTORY
    assert HISTORY | {PROCESSES, "process_count"} <= EVERYTHING


def test_a_log_asks_only_for_its_columns() -> None:
    columns = parse_fields("timestamp,index,name,utilization.gpu,memory.used")
    assert demand_of(columns) == {"utilization_gpu_percent", "memory_used_bytes"}
    assert PROCESSES not in demand_of(parse_fields(None))  # the default columns name no processes


def test_what_is_not_demanded_is_not_read_and_says_so() -> None:
    source, clock, library = simulated_source("training:gpus=h100*2,start=1800")  # a job is running
    source.sample()  # everything once: static facts, capabilities
    before = {call: library.calls[call] for call in PROCESS_CALLS}
    util_before = library.calls["nvmlDeviceGetUtilizationRates"]
    for _ in range(12):
        clock.advance_s(1.0)
        sample = source.sample(frozenset({"temperature_gpu_c"}))
    assert {call: library.calls[call] for call in PROCESS_CALLS} == before  # no process list read
    assert library.calls["nvmlDeviceGetUtilizationRates"] == util_before
    gpu = sample.gpus[0]
    assert gpu.state("temperature_gpu_c") is MetricState.OK
    assert gpu.state("utilization_gpu_percent") is MetricState.NOT_READ
    assert gpu.state("process_count") is MetricState.NOT_READ and gpu.processes == ()
    clock.advance_s(1.0)
    again = source.sample(frozenset({"temperature_gpu_c", PROCESSES}))  # read on the next tick
    assert again.gpus[0].state("process_count") is MetricState.OK and again.gpus[0].processes


def test_a_demand_change_that_leaves_a_field_batch_alone_does_not_read_it_again_before_it_is_due() -> None:
    """The idle tray adds the process lists to its demand every 10 s (for the history on disk) and
    takes them out again: the batches of field values whose fields stay the same keep their
    cadence and their counters (once, the 10 s batch was set up anew and read at each change)."""
    source, clock, library = simulated_source("idle:gpus=h100")
    source.sample(HISTORY)
    clock.advance_s(1.0)
    source.sample(HISTORY)
    before = library.calls["nvmlDeviceGetFieldValues"]
    ticks = 20
    for k in range(ticks):
        clock.advance_s(1.0)
        source.sample(HISTORY | {PROCESSES} if k % 2 else HISTORY)
    # The batch read every tick, and the one read every 10 s twice in 20 s.
    assert library.calls["nvmlDeviceGetFieldValues"] - before == ticks + 2


def _app(qapp, settings: Settings | None = None):
    from trayvml.ui.app import App

    app = App(None)
    if settings is not None:
        app.apply_settings(settings)
    return app


def test_the_idle_tray_reads_no_process_lists_and_the_window_reads_what_its_page_shows(qapp) -> None:
    app = _app(qapp)
    app._declare_demand()
    # Window closed, no alert waiting, job rule off; the stalled-job rule (on) watches SM activity.
    idle = HISTORY | {"sm_activity_percent"}
    assert app.engine.needs() == {"sm_activity_percent"} and app.sampler._worker.demand == idle
    source, _, _ = simulated_source("training:gpus=h100*2,start=1800")
    app.on_sample(source.sample())
    app.show_window()
    window = app.window
    assert window is not None and window.tabs.currentWidget() is window._gpu_tab
    # The top of the GPU page: no process lists, and not the energy counter (3-4 ms of the driver's CPU
    # a read on an H200; no panel shows it).
    assert app.sampler._worker.demand == EVERYTHING - {PROCESSES, "process_count", "energy_consumed_j"}
    window.tabs.setCurrentWidget(window.process_tab)  # told at once, not at the next sample
    assert {PROCESSES, "energy_consumed_j"} <= app.sampler._worker.demand  # it shares the energy out
    window.tabs.setCurrentWidget(window.details)  # it shows the counter
    assert "energy_consumed_j" in app.sampler._worker.demand and PROCESSES not in app.sampler._worker.demand
    window.tabs.setCurrentWidget(window._gpu_tab)
    assert window.gpu_page is not None
    scroll = window.gpu_page.verticalScrollBar()
    scroll.setValue(scroll.maximum())  # the process panel is at the bottom of the GPU page
    assert PROCESSES in app.sampler._worker.demand
    window.hide()
    assert app.sampler._worker.demand == idle
    window.close()


def test_serving_metrics_reads_every_metric_the_exporter_serves(qapp, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tray's own exporter (Serve metrics) served what the idle tray read: no energy counter,
    process lists or GPM while the window was closed, so series came and went with the window and a
    reader took each one missing for a metric not supported. Serving reads what serve serves, from
    the next sample on."""
    import trayvml.prometheus

    monkeypatch.setattr(trayvml.prometheus, "DEFAULT_PORT", 0)  # a port of its own, not a running trayvml's
    app = _app(qapp)
    app._declare_demand()
    assert "energy_consumed_j" not in app.sampler._worker.demand
    try:
        app._serve(True)
        assert app.exporter is not None and app.sampler._worker.demand == EVERYTHING
    finally:
        app._serve(False)
    assert app.exporter is None and "energy_consumed_j" not in app.sampler._worker.demand


def test_the_job_finished_rule_needs_the_process_lists(qapp) -> None:
    alerts = AlertSettings()
    rules = dict(alerts.rules)
    rules["job_finished"] = replace(rules["job_finished"], enabled=True)
    app = _app(qapp, Settings(alerts=replace(alerts, rules=rules)))
    app._declare_demand()
    assert PROCESSES in app.sampler._worker.demand


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def notify(self, notice) -> None:
        self.sent.append((notice.key[1], notice.body))

    def close(self) -> None:
        pass


def test_an_alert_that_names_processes_asks_for_them_and_goes_out_with_them(qapp) -> None:
    from trayvml.alerts.rules import RULES, RuleSettings

    all_off = {kind.key: replace(kind.defaults, enabled=False) for kind in RULES}
    memory = RuleSettings(True, warning_enter=1.0, warning_clear=0.5, hold_s=0.0)  # fires at once
    app = _app(qapp, Settings(alerts=AlertSettings(rules={**all_off, "memory_used": memory})))
    recorder = _Recorder()
    app._use_notifier(recorder)
    source, clock, _ = simulated_source("training:gpus=h100,start=1800")
    app._declare_demand()
    app.on_sample(source.sample(app.sampler._worker.demand))  # the idle tray's demand: no process lists
    assert recorder.sent == []  # fired, but waits for the processes it names
    assert PROCESSES in app.sampler._worker.demand
    clock.advance_s(1.0)
    app.on_sample(source.sample(app.sampler._worker.demand))
    assert [rule for rule, _ in recorder.sent] == ["memory_used"]
    assert "python train.py --model llama-7b --rank 0 (" in recorder.sent[0][1]  # the biggest process, by command
    clock.advance_s(1.0)
    app.on_sample(source.sample(app.sampler._worker.demand))
    assert PROCESSES not in app.sampler._worker.demand  # asked for once, not kept


def test_a_quiet_alert_asks_for_no_process_lists(qapp) -> None:
    from trayvml.alerts.rules import RULES, RuleSettings

    all_off = {kind.key: replace(kind.defaults, enabled=False) for kind in RULES}
    memory = RuleSettings(True, warning_enter=1.0, warning_clear=0.5, hold_s=0.0)  # fires at once
    app = _app(qapp, Settings(alerts=AlertSettings(rules={**all_off, "memory_used": memory})))
    app._use_notifier(_Recorder())
    app.pause_notifications(3600.0)
    source, _, _ = simulated_source("training:gpus=h100,start=1800")
    app._declare_demand()
    app.on_sample(source.sample(app.sampler._worker.demand))
    assert [e.rule for e in app.engine.events] == ["memory_used"]  # it fired
    assert PROCESSES not in app.sampler._worker.demand  # but nobody is told, so nothing names processes


def test_snoozing_a_grouped_notification_snoozes_the_rule_on_each_of_its_gpus(qapp) -> None:
    from trayvml.alerts.dispatch import Outgoing
    from trayvml.alerts.grouping import GROUP
    from trayvml.alerts.rules import AlertEvent
    from trayvml.alerts.severity import Severity

    app = _app(qapp)
    app._use_notifier(_Recorder())
    events = [
        AlertEvent(0.0, gpu, "H100", "xid", "event", Severity.CRITICAL, "XID 74 (NVLink error)") for gpu in (1, 3)
    ]
    app._send(app.local.outcome([Outgoing(event) for event in events], 0.0))
    app._on_action("snooze", GROUP, "xid")
    assert not app.dispatcher.wanted(replace(events[0], timestamp_s=10.0))
    assert not app.dispatcher.wanted(replace(events[1], gpu_index=3))
    assert app.dispatcher.wanted(replace(events[0], gpu_index=2))  # not in that notification


def test_simulated_gpus_started_from_the_tray_push_their_alerts_as_simulated(qapp) -> None:
    """No driver: the tray's "simulated GPUs" button. Their alerts were pushed as real ones, their
    failures written to the real destinations' status file (doctor showed them as real)."""
    from trayvml.config import PushDestination

    app = _app(qapp, Settings(push=(PushDestination("webhook", url="http://127.0.0.1:9/"),)))
    app._use_push()
    try:
        assert app.push is not None and not app.push.simulated
        assert app.push._status_file is not None and app.push._status_file.name == "push-status.json"
        app.start_simulation()
        assert app.push.simulated and app.push._status_file.name == "push-status-simulated.json"
    finally:
        app.sampler.stop()
        if app.push is not None:
            app.push.close(wait_s=0.0)
