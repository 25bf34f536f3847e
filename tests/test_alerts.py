"""The alert engine, table-driven: hysteresis, hold, cooldown, gaps, lost GPUs, overrides."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from tests.helpers import simulated_source, thresholds
from trayvml.alerts.dispatch import Dispatcher
from trayvml.alerts.engine import AlertEngine, AlertSettings, validate
from trayvml.alerts.grouping import CRITICAL
from trayvml.alerts.rules import (
    GONE,
    RULE_BY_KEY,
    RULES,
    THRESHOLD_RULES,
    TURNED_OFF,
    GpuRule,
    JobSettings,
    MachineRule,
    RuleSettings,
    ThresholdRule,
    Tracker,
)
from trayvml.alerts.severity import Direction, Severity
from trayvml.core.clock import ManualClock
from trayvml.core.demand import HISTORY
from trayvml.core.errors import DriverStall
from trayvml.core.metrics import GPU_INDEX, GPU_METRIC_BY_KEY, GPU_METRICS
from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, Sample
from trayvml.core.units import GIB
from trayvml.history.timeline import History
from trayvml.monitor.pipeline import Monitor

NAN = math.nan


def sample(t_s: float, lost: bool = False, stall: bool = False, **values: float) -> Sample:
    """One GPU named H100 with the given metric values (everything else missing)."""
    return sample_of(t_s, values, lost, stall)


def sample_of(t_s: float, values: Mapping[str, float], lost: bool = False, stall: bool = False) -> Sample:
    row = [NAN] * len(GPU_METRICS)
    for key, value in values.items():
        row[GPU_INDEX[key]] = value
    states = (MetricState.LOST if lost else MetricState.OK,) * len(GPU_METRICS)
    gpu = GpuSample(0, tuple(row), states, lost=lost)
    since = DriverStall(t_s - 10, "nvmlDeviceGetTemperature") if stall else None
    return Sample(t_s, (gpu,), (DeviceInfo(0, "H100", "GPU-x"),), None, None, stall=since)


def run(engine: AlertEngine, key: str, values: Sequence[float], step_s: float = 1.0, start_s: float = 0.0) -> list:
    events = []
    for k, value in enumerate(values):
        events += engine.update(sample_of(start_s + k * step_s, {key: value}))
    return events


def only(rule: str, **changes: float | bool) -> AlertSettings:
    """Every rule off but ``rule``, changed as given."""
    rules = {r.key: replace(r.defaults, enabled=False) for r in RULES}
    rules[rule] = replace(RULE_BY_KEY[rule].defaults, **{"enabled": True, **changes})
    return AlertSettings(rules=rules)


TEMPERATURE = "temperature_gpu_c"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # (temperatures one second apart, [(kind, severity)] of the events)
        ([60] * 10, []),
        ([60, 95, 95, 95, 95, 95, 95, 95], [("firing", Severity.CRITICAL)]),
        ([95, 95, 60, 95, 95, 60, 95], []),  # never held for the 5 s hold time
        ([95] * 7 + [88, 92, 87, 91, 86, 89], [("firing", Severity.CRITICAL)]),  # hovering above 85: once
        ([95] * 7 + [80] * 3, [("firing", Severity.CRITICAL), ("firing", Severity.WARNING)]),  # calms to warning
        ([95] * 7 + [70], [("firing", Severity.CRITICAL), ("resolved", Severity.INFO)]),
        ([84] * 7, [("firing", Severity.WARNING)]),
        ([84] * 6 + [95] * 7, [("firing", Severity.WARNING), ("firing", Severity.CRITICAL)]),
        ([95] * 3 + [NAN] * 5 + [95] * 3, [("firing", Severity.CRITICAL)]),  # a gap does not reset the hold
        ([95] * 7 + [NAN] * 10, [("firing", Severity.CRITICAL)]),  # nor clear a firing alert
    ],
)
def test_temperature_rule(values: list[float], expected: list) -> None:
    events = run(AlertEngine(only("temperature")), TEMPERATURE, values)
    assert [(e.kind, e.severity) for e in events] == expected


def test_a_value_hovering_around_the_threshold_notifies_once() -> None:
    engine = AlertEngine(only("temperature", hold_s=0))
    hovering = [91, 89] * 300  # ten minutes, crossing 90 °C every second
    events = run(engine, TEMPERATURE, hovering)
    notified = [e for e in events if e.notify]
    assert [(e.kind, e.severity) for e in notified] == [("firing", Severity.CRITICAL)]


def test_cooldown_keeps_a_flapping_rule_quiet() -> None:
    engine = AlertEngine(only("temperature", hold_s=0, cooldown_s=300))
    # fire, clear, fire again 60 s later: the second firing is a state change, not a notification
    events = run(engine, TEMPERATURE, [95, 70] + [70] * 58 + [95, 70])
    assert [(e.kind, e.notify) for e in events] == [
        ("firing", True),
        ("resolved", True),
        ("firing", False),
        ("resolved", False),
    ]
    later = run(engine, TEMPERATURE, [95], start_s=400)
    assert later[0].notify


def _monitored(settings: AlertSettings) -> Monitor:
    """The engine as a host's Monitor runs it: told of a clock set between two samples."""
    dispatcher = Dispatcher(ManualClock())
    dispatcher.notifier_ready()
    return Monitor(dispatcher, settings, History)


def _two_gpus(t_s: float, temperatures_c: tuple[float, float]) -> Sample:
    """Two H100s at these temperatures (everything else missing)."""
    first, second = (sample_of(t_s, {TEMPERATURE: c}) for c in temperatures_c)
    gpus = (first.gpus[0], replace(second.gpus[0], index=1))
    devices = (first.devices[0], replace(first.devices[0], index=1, uuid="GPU-1"))
    return replace(first, gpus=gpus, devices=devices, monotonic_s=t_s)


def test_an_alert_that_resolves_while_snoozed_leaves_its_group() -> None:
    """Snoozed (or paused) while hot, GPU 0 cooled unheard, and stayed in its rule's group for
    good: a day later GPU 1's warning joined it, was told as "GPUs 0, 1" at critical, and never
    resolved. Now the group is over with its last GPU: GPU 1's warning is told alone, as a
    warning, and resolves."""
    monitor = _monitored(only("temperature", hold_s=0, cooldown_s=0))
    told = [n for n in monitor.take(_two_gpus(0, (95, 40))).notices]
    assert [(n.gpus, n.severity) for n in told] == [((0,), Severity.CRITICAL)]
    monitor.dispatcher.snooze(0, "temperature")
    assert [n for t in range(1, 10) for n in monitor.take(_two_gpus(t, (40, 40))).notices] == []  # cooled, unheard
    day_s = 86_400
    told = [n for n in monitor.take(_two_gpus(day_s, (40, 85))).notices]
    assert [(n.gpus, n.severity, n.resolved) for n in told] == [((1,), Severity.WARNING, False)]
    told = [n for n in monitor.take(_two_gpus(day_s + 1, (40, 40))).notices]
    assert [(n.gpus, n.resolved) for n in told] == [((1,), True)]


def test_an_alert_that_fires_while_paused_is_not_said_back_to_normal_after() -> None:
    """Alerts paused; GPU 0 went hot meanwhile, and cooled once they were resumed: the user heard
    "GPU 0: temperature back to normal" of an alert they had never seen. One that fires after the
    pause is told as before, its end too."""
    monitor = _monitored(only("temperature", hold_s=0, cooldown_s=0))
    monitor.dispatcher.pause(math.inf)
    told = [n for t in range(0, 300) for n in monitor.take(_two_gpus(t, (95, 40))).notices]
    monitor.dispatcher.pause(0)  # resumed
    told += [n for t in range(300, 700) for n in monitor.take(_two_gpus(t, (95 if t < 650 else 40, 40))).notices]
    assert told == []  # fired while paused, over after: neither said
    told = [n for t in range(700, 710) for n in monitor.take(_two_gpus(t, (95 if t < 705 else 40, 40))).notices]
    assert [(n.gpus, n.resolved) for n in told] == [((0,), False), ((0,), True)]
    # A warning told, alerts paused, its escalation kept from the user: the warning they saw ends.
    told = [n for n in monitor.take(_two_gpus(800, (84, 40))).notices]
    monitor.dispatcher.pause(math.inf)
    told += [n for n in monitor.take(_two_gpus(801, (95, 40))).notices]
    monitor.dispatcher.pause(0)
    told += [n for n in monitor.take(_two_gpus(802, (40, 40))).notices]
    assert [(n.severity, n.resolved) for n in told] == [(Severity.WARNING, False), (Severity.INFO, True)]


def test_an_alert_over_before_its_process_lists_came_goes_out_before_its_resolution() -> None:
    """A job's peak of memory lasted the rule's 30 s hold and passed a second later, its process
    lists not read yet (the idle tray reads them every 10 s): the alert waited for them and went out
    after its "back to normal", replacing it, and stayed."""

    def at(t_s: float, free_bytes: float) -> Sample:
        one = sample_of(t_s, {"memory_free_bytes": free_bytes})
        states = list(one.gpus[0].states)
        states[GPU_INDEX["process_count"]] = MetricState.NOT_READ  # the lists, read on demand
        return replace(one, gpus=(replace(one.gpus[0], states=tuple(states)),), monotonic_s=t_s)

    dispatcher = Dispatcher(ManualClock(), ready=True)
    monitor = Monitor(dispatcher, only("memory_free"), History, processes_on_demand=True)
    told = [n for t in range(40) for n in monitor.take(at(t, 1.5 * GIB if t < 31 else 6 * GIB)).notices]
    assert [n.resolved for n in told] == [False, True]  # the alert, then its resolution


@pytest.mark.parametrize("step_s", [0.0, -3600.0, 3600.0])
def test_the_wall_clock_set_holds_no_alert_back_and_fires_none_early(step_s: float) -> None:
    """NTP or a user sets the clock back an hour: a GPU hot while its alert waits out the hold fires
    when the hold is over, and a new firing after the cooldown is notified, as without the step
    (timed by the wall clock alone, both waited out the hour). Set forward an hour, the hold and
    the cooldown were over at once: the alert fired at the step, and a firing within the
    cooldown was notified."""
    held = _monitored(only("temperature"))
    cooled = _monitored(only("temperature", hold_s=0, cooldown_s=300))
    hot, calm = {TEMPERATURE: 95.0}, {TEMPERATURE: 70.0}
    t_s = 1_800_000_000.0

    def at(k: int, values: Mapping[str, float]) -> Sample:  # k seconds on: the monotonic clock's time
        return replace(sample_of(t_s + k, values), monotonic_s=float(k))

    held_events = [(k, e) for k in range(3) for e in held.take(at(k, hot)).events]
    cooled_events = [e for k in range(100) for e in cooled.take(at(k, hot if k < 3 else calm)).events]
    t_s += step_s
    held_events += [(k, e) for k in range(3, 13) for e in held.take(at(k, hot)).events]
    cooled_events += [e for k in range(100, 103) for e in cooled.take(at(k, hot)).events]
    assert [(k, e.kind, e.severity) for k, e in held_events] == [(5, "firing", Severity.CRITICAL)]
    assert [(e.kind, e.notify) for e in cooled_events] == [("firing", True), ("resolved", True), ("firing", False)]


def test_samples_a_read_apart_either_first_move_no_alert_time() -> None:
    """Two endpoints naming one host give its monitor samples a read apart, either first (without
    a monotonic time, as from a hand-made sample): that is no clock set back, and the cooldown
    holds (moved back at each, it lapsed half as soon again)."""
    monitor = _monitored(only("temperature", hold_s=0, cooldown_s=300))
    t_s = 1_800_000_000.0
    flapping = [95.0, 95.0, 70.0, 70.0] * 70  # 280 s, firing every 4 s
    events = [
        e
        for k, value in enumerate(flapping)
        for e in monitor.take(sample_of(t_s + k - (1.9 if k % 2 else 0.0), {TEMPERATURE: value})).events
    ]
    assert sum(1 for e in events if e.kind == "firing" and e.notify) == 1


def test_an_escalation_is_told_even_within_the_cooldown() -> None:
    engine = AlertEngine(only("temperature", hold_s=0, cooldown_s=300))
    events = run(engine, TEMPERATURE, [84, 84, 95])
    assert [(e.severity, e.notify) for e in events] == [(Severity.WARNING, True), (Severity.CRITICAL, True)]


def test_events_name_the_gpu_and_the_value() -> None:
    (event,) = run(AlertEngine(only("temperature", hold_s=0)), TEMPERATURE, [93])
    assert event.title == "GPU 0 H100: GPU temperature critical at 93 °C"
    assert (event.timestamp_s, event.value) == (0, 93)
    assert event.detail == "Critical at 90 °C or above; clears at 85 °C or below."
    # As it says: at 90 itself critical, and at 85 itself no longer (a warning, from 83).
    edges = run(AlertEngine(only("temperature", hold_s=0)), TEMPERATURE, [90, 86, 85])
    assert [(e.timestamp_s, e.severity) for e in edges] == [(0, Severity.CRITICAL), (2, Severity.WARNING)]


def test_memory_rules_in_percent_and_in_free_gib() -> None:
    used = run(AlertEngine(only("memory_used", hold_s=0)), "memory_used_percent", [50, 96, 99.5])
    assert [(e.kind, e.severity) for e in used] == [("firing", Severity.WARNING), ("firing", Severity.CRITICAL)]
    free = run(AlertEngine(only("memory_free", hold_s=0)), "memory_free_bytes", [20 * GIB, 1.5 * GIB, 7 * GIB])
    assert [(e.kind, e.severity) for e in free] == [("firing", Severity.WARNING), ("resolved", Severity.INFO)]
    assert free[0].message == "memory free low at 1.5 GiB"
    assert free[0].detail == "Warning at 2 GiB or below; clears at 3 GiB or above."
    assert free[1].title == "GPU 0 H100: memory free back to normal"


def test_a_rule_turned_off_while_it_fires_resolves_said_so() -> None:
    """Turned off in the settings while GPU 0 is hot: the alert stayed active for good (counted in
    the menu, its notification open, "back to normal" sent a day later when turned on again)."""
    engine = AlertEngine(only("temperature"))
    events = []
    for t in range(60):
        events += engine.update(sample(t, temperature_gpu_c=95))
    assert [e.kind for e in events] == ["firing"] and engine.active() == 1
    engine.configure(only("gpu_lost"))  # temperature off
    (off,) = engine.update(sample(60, temperature_gpu_c=95))
    assert (off.kind, off.rule, off.ended) == ("resolved", "temperature", TURNED_OFF)
    assert off.title == "GPU 0 H100: GPU temperature no longer watched (its rule was turned off)"
    assert engine.active() == 0 and engine.update(sample(61, temperature_gpu_c=95)) == []
    engine.configure(only("temperature"))  # on again: watched afresh, so the hot GPU fires anew
    again = [e for t in range(62, 122) for e in engine.update(sample(t, temperature_gpu_c=95))]
    assert [(e.kind, e.ended) for e in again] == [("firing", "")]


def test_a_rule_turned_off_is_told_as_such_not_as_back_to_normal() -> None:
    """The notification that ends an alert whose rule was turned off (grouped, as every told alert
    is) said "back to normal" while the GPU was still hot; a machine rule's said only "no longer
    watched"; one whose firing was never told (its cooldown) is not told either."""
    monitor = _monitored(only("temperature", hold_s=0))
    assert [n.title for n in monitor.take(sample(0, temperature_gpu_c=95)).notices]
    monitor.configure(only("gpu_lost"))
    (notice,) = monitor.take(sample(1, temperature_gpu_c=95)).notices
    assert notice.resolved and "back to normal" not in notice.title
    assert notice.title == "GPU 0 H100: GPU temperature no longer watched (its rule was turned off)"
    assert notice.body == "Not known to be back to normal: its rule was turned off in the settings."
    stalled = _monitored(only("driver_stalled"))
    assert stalled.take(sample(0, stall=True)).notices
    stalled.configure(only("gpu_lost"))
    (notice,) = stalled.take(sample(1, stall=True)).notices
    assert notice.title == "GPU driver not responding no longer watched (its rule was turned off)"
    quiet = _monitored(only("temperature", hold_s=0, cooldown_s=3600))
    quiet.take(sample(0, temperature_gpu_c=95))
    quiet.take(sample(1, temperature_gpu_c=70))
    assert [e.notify for e in quiet.take(sample(2, temperature_gpu_c=95)).events] == [False]  # within its cooldown
    quiet.configure(only("gpu_lost"))
    outcome = quiet.take(sample(3, temperature_gpu_c=95))
    assert [e.ended for e in outcome.events] == [TURNED_OFF] and outcome.notices == []


def _devices(t_s: float, temperatures_c: Mapping[str, float]) -> Sample:
    """MIG instances by UUID at these temperatures, numbered in this order (everything else missing)."""
    one = sample_of(t_s, {})
    gpus = tuple(
        replace(sample_of(t_s, {TEMPERATURE: c}).gpus[0], index=k) for k, c in enumerate(temperatures_c.values())
    )
    devices = tuple(DeviceInfo(k, f"MIG {uuid}", uuid) for k, uuid in enumerate(temperatures_c))
    return replace(one, gpus=gpus, devices=devices, monotonic_s=t_s)


def test_alerts_follow_their_gpu_when_mig_instances_are_renumbered() -> None:
    """A MIG instance destroyed renumbers those after it (the reader numbers them afresh, each
    keeping its UUID). Kept by index, an instance's hot alert was told again under its new index
    as a new alert, the old one counted as active for good; the destroyed instance's alert never
    ended. Now each alert follows its GPU, a gone GPU's ends said so, and a snooze follows too."""
    monitor = _monitored(only("temperature", hold_s=0, cooldown_s=0))
    told = monitor.take(_devices(0, {"MIG-a": 95, "MIG-b": 40, "MIG-c": 95})).notices
    assert [(n.gpus, n.resolved) for n in told] == [((0, 2), False)]
    monitor.dispatcher.snooze(2, "temperature")  # MIG-c
    # MIG-a destroyed: MIG-b is now GPU 0 and MIG-c GPU 1, still hot.
    outcome = monitor.take(_devices(1, {"MIG-b": 40, "MIG-c": 95}))
    assert [(e.gpu_index, e.gpu_name, e.kind, e.ended) for e in outcome.events] == [(0, "MIG MIG-a", "resolved", GONE)]
    (gone,) = outcome.notices  # told on its own: MIG-c's alert goes on, as one
    assert gone.title.endswith("(the GPU is gone)") and gone.gpus == (0,) and monitor.engine.active() == 1
    assert [n for t in range(2, 10) for n in monitor.take(_devices(t, {"MIG-b": 40, "MIG-c": 95})).notices] == []
    assert monitor.dispatcher.why_not(replace(outcome.events[0], gpu_index=1, rule="temperature")) == "snoozed"
    # MIG-c cools: its alert ends under its new index, and the group's end names both its GPUs.
    monitor.dispatcher.snoozed.clear()
    (notice,) = monitor.take(_devices(10, {"MIG-b": 40, "MIG-c": 40})).notices
    assert (notice.gpus, notice.resolved, monitor.engine.active()) == ((1,), True, 0)
    # An instance whose alert is told alone, then destroyed: its end says so, not "back to normal".
    monitor.take(_devices(100, {"MIG-b": 95, "MIG-c": 40}))
    (notice,) = monitor.take(_devices(101, {"MIG-c": 40})).notices
    assert notice.resolved and notice.gpus == (0,) and monitor.engine.active() == 0
    assert notice.title == "GPU 0 MIG MIG-b: GPU temperature no longer watched (the GPU is gone)"
    assert notice.body.startswith("Not known to be back to normal: the GPU is no longer there")


def test_a_stalled_drivers_samples_end_no_alert_as_gone() -> None:
    """A stuck driver's samples list no GPUs (Source.sample): taken for GPUs gone, every alert
    was ended ("no longer watched (the GPU is gone)") and fired again when the driver answered."""
    monitor = _monitored(only("temperature", hold_s=0, cooldown_s=0))
    assert monitor.take(_devices(0, {"GPU-a": 95, "GPU-b": 40})).notices
    stalled = replace(_devices(1, {}), gpus=(), devices=())
    for t in range(1, 30):
        assert monitor.take(replace(stalled, timestamp_s=t, monotonic_s=t)).events == []
    assert monitor.engine.active() == 1
    assert monitor.take(_devices(30, {"GPU-a": 95, "GPU-b": 40})).events == []  # the same alert, going on


def test_a_gone_gpu_leaves_its_group_and_the_rest_end_back_to_normal() -> None:
    """Two instances hot in one notification, one destroyed, the other cooling: the group's end
    said "the GPU is gone" of the one back to normal, and the destroyed one's end was never told."""
    monitor = _monitored(only("temperature", hold_s=0, cooldown_s=0))
    monitor.take(_devices(0, {"MIG-a": 95, "MIG-c": 95}))
    (gone,) = monitor.take(_devices(1, {"MIG-c": 95})).notices
    assert gone.title == "GPU 0 MIG MIG-a: GPU temperature no longer watched (the GPU is gone)" and gone.gpus == (0,)
    (back,) = monitor.take(_devices(2, {"MIG-c": 40})).notices
    assert back.resolved and back.title == "GPU 0 MIG MIG-c: GPU temperature back to normal"


def test_a_job_is_finished_after_an_unbroken_idle_spell_only() -> None:
    """Busy, a checkpoint's one-second dip to 2 %, ten minutes at 30 %, another dip, busy again:
    the two dips counted as one idle spell across the 30 % between them, and the job was said
    finished while it ran."""
    engine = AlertEngine(only("job_finished"))
    utilization = [90.0] * 120 + [2.0] + [30.0] * 600 + [2.0] + [90.0] * 60
    events = [e for t, u in enumerate(utilization) for e in engine.update(sample(t, utilization_gpu_percent=u))]
    assert events == []
    # Idle for good: finished, once.
    ended = [e for t in range(782, 900) for e in engine.update(sample(t, utilization_gpu_percent=0.0))]
    assert [e.rule for e in ended] == ["job_finished"]


def test_a_lost_gpu_fires_once() -> None:
    engine = AlertEngine(only("gpu_lost"))
    events = []
    for t in range(5):
        events += engine.update(sample(t, temperature_gpu_c=60))
    for t in range(5, 100):
        events += engine.update(sample(t, lost=True))
    assert [(e.rule, e.kind, e.severity) for e in events] == [("gpu_lost", "firing", Severity.CRITICAL)]


def test_lost_gpu_holds_its_other_alerts() -> None:
    engine = AlertEngine(AlertSettings())
    events = run(engine, TEMPERATURE, [95] * 7)
    for t in range(7, 20):
        events += engine.update(sample(t, lost=True))
    assert [(e.rule, e.kind) for e in events] == [("temperature", "firing"), ("gpu_lost", "firing")]


def test_new_xid_errors_are_events() -> None:
    engine = AlertEngine(only("xid", cooldown_s=0))
    events = []
    for t, count in enumerate([0, 0, 1, 1, 3]):
        events += engine.update(sample(t, xid_error_count=count, xid_last=79 if count else NAN))
    assert [e.message for e in events] == ["XID 79 (GPU has fallen off the bus)"] * 2


def test_throttling_start_and_end() -> None:
    engine = AlertEngine(only("throttle", hold_s=2))
    events = []
    for t, reasons in enumerate([0x1, 0x20, 0x20, 0x20, 0x0, 0x0, 0x0, 0x80, 0x80, 0x80]):
        events += engine.update(sample(t, clock_event_reasons=reasons))
    assert [(e.kind, e.message, e.timestamp_s) for e in events] == [
        ("firing", "thermal throttling", 3),
        ("resolved", "back to normal", 6),  # gone for the hold time, not at the first quiet second
        ("firing", "power throttling", 9),  # the hardware power brake
    ]


def test_held_at_the_power_limit_is_no_alert_but_a_hardware_slowdown_is() -> None:
    engine = AlertEngine(only("throttle", hold_s=2))
    events = []
    # SwPowerCap (0x4) for a minute: a GPU under load at its power limit, as it should be.
    for t, reasons in enumerate([0x4] * 60 + [0x4 | 0x8] * 3):
        events += engine.update(sample(t, clock_event_reasons=reasons))
    assert [(e.kind, e.message, e.timestamp_s) for e in events] == [("firing", "hardware slowdown", 62)]


def test_throttling_that_comes_and_goes_stays_one_alert() -> None:
    engine = AlertEngine(only("throttle", hold_s=10))
    flapping = ([0x20] * 12 + [0x0] * 5) * 10  # on 12 s, off 5 s, for almost three minutes
    events = run(engine, "clock_event_reasons", flapping)
    assert [e.kind for e in events] == ["firing"]


def test_job_finished_after_a_busy_stretch() -> None:
    engine = AlertEngine(
        only("job_finished", busy_above_percent=50, idle_below_percent=5, busy_for_s=60, idle_for_s=30)
    )
    utilization = [0] * 10 + [95] * 120 + [1] * 40 + [95] * 10 + [1] * 40  # a long job, then a short one
    events = run(engine, "utilization_gpu_percent", utilization)
    assert [(e.rule, e.timestamp_s) for e in events] == [("job_finished", 160)]
    assert events[0].message == "job finished after 2 min (idle now)"
    assert events[0].value == 150  # from the job's first busy second until it was told: its energy's span


def test_a_laptop_gpu_asleep_after_its_job_is_idle_and_the_job_is_said_finished() -> None:
    """A laptop's GPU after its job: a second idle, the reader lets go of NVML (resting, nothing
    read), the GPU suspends (asleep, nothing read). Waited out as unknown, the job's notice never
    came, and the next job's, an hour later, said "after 1 h 15 min" for a 5-minute job."""
    engine = AlertEngine(
        only("job_finished", busy_above_percent=50, idle_below_percent=5, busy_for_s=60, idle_for_s=30)
    )
    resting = GpuSample(0, (NAN,) * len(GPU_METRICS), (MetricState.RESTING,) * len(GPU_METRICS))
    asleep = GpuSample(0, (NAN,) * len(GPU_METRICS), (MetricState.ASLEEP,) * len(GPU_METRICS), asleep=True)
    info = (DeviceInfo(0, "RTX 4070 Laptop", "GPU-x"),)
    events = run(engine, "utilization_gpu_percent", [99.0] * 600 + [0.0])
    for t in range(601, 630):
        events += engine.update(Sample(float(t), (resting,), info, None, None))
    for t in range(630, 4230):
        events += engine.update(Sample(float(t), (asleep,), info, None, None))
    events += run(engine, "utilization_gpu_percent", [99.0] * 300 + [0.0] * 31, start_s=4230)
    assert [(e.timestamp_s, e.message) for e in events] == [
        (630, "job finished after 10 min (idle now)"),  # asleep from 630: idle since its second at 600
        (4560, "job finished after 5 min (idle now)"),
    ]


def test_a_gpu_back_from_critical_is_said_at_its_level_now_in_its_groups_next_notice() -> None:
    """GPU 0 at 91 °C (critical), then 80 °C (a warning, within the cooldown: not told); GPU 1 then
    at 84 °C. The group's notice said GPU 0 "at 91 °C", critical and urgent, where both were
    warnings: through a push destination's quiet hours too."""
    monitor = _monitored(AlertSettings())
    notices = []
    for t in range(10):
        notices += monitor.take(_two_gpus(float(t), (91.0, 70.0))).notices
    for t in range(10, 130):
        notices += monitor.take(_two_gpus(float(t), (80.0, 70.0))).notices
    for t in range(130, 140):
        notices += monitor.take(_two_gpus(float(t), (80.0, 84.0))).notices
    assert [n.severity for n in notices] == [Severity.CRITICAL, Severity.WARNING]  # GPU 1 joining
    last = notices[-1]
    assert last.title.startswith("GPUs 0, 1: ") and "GPU 0 at 80 °C" in last.body and "91" not in last.body
    assert last.urgency != CRITICAL


def test_a_rule_turned_off_while_held_waits_its_whole_hold_when_turned_on_again() -> None:
    """Hot for 5 s of a 10 s hold, the rule turned off, on again a minute later with the GPU hot:
    it kept its hold's start and fired at once, its hold "long over"."""
    on = only("temperature", hold_s=10, cooldown_s=0)
    rule = thresholds(on.rules["temperature"])
    off = replace(on, rules={**on.rules, "temperature": replace(rule, enabled=False)})
    engine = AlertEngine(on)
    events = run(engine, TEMPERATURE, [95] * 5)
    engine.configure(off)
    events += run(engine, TEMPERATURE, [40] * 60, start_s=5)
    engine.configure(on)
    events += run(engine, TEMPERATURE, [95] * 15, start_s=65)
    assert [(e.kind, e.timestamp_s) for e in events] == [("firing", 75)]  # 10 s after it was on again


def test_per_gpu_overrides_win() -> None:
    settings = only("temperature", hold_s=0)
    gpu1 = replace(thresholds(settings.rules["temperature"]), critical_enter=70.0, critical_clear=65.0)
    settings = replace(settings, overrides={1: {"temperature": gpu1}})
    engine = AlertEngine(settings)
    row = [NAN] * len(GPU_METRICS)
    row[GPU_INDEX[TEMPERATURE]] = 75.0
    gpus = tuple(GpuSample(i, tuple(row), (MetricState.OK,) * len(GPU_METRICS)) for i in range(2))
    devices = tuple(DeviceInfo(i, "H100", f"GPU-{i}") for i in range(2))
    events = engine.update(Sample(0.0, gpus, devices, None, None))
    assert [(e.gpu_index, e.severity) for e in events] == [(1, Severity.CRITICAL)]


def test_the_engine_steps_each_gpu_by_the_settings_in_force_now() -> None:
    engine = AlertEngine(only("temperature", enabled=False))
    assert run(engine, TEMPERATURE, [99] * 3) == []
    engine.configure(only("temperature", hold_s=0))  # turned on: its tracker starts now
    assert [e.kind for e in run(engine, TEMPERATURE, [99, 99], start_s=3)] == ["firing"]
    engine.settings = only("temperature", hold_s=0, critical_enter=100.0, critical_clear=99.5)  # set directly too
    assert [(e.kind, e.severity) for e in run(engine, TEMPERATURE, [99], start_s=5)] == [("firing", Severity.WARNING)]
    # A GPU index not seen before gets its own rules (and an override of its own).
    row = [NAN] * len(GPU_METRICS)
    row[GPU_INDEX[TEMPERATURE]] = 99.0
    gpu = GpuSample(3, tuple(row), (MetricState.OK,) * len(GPU_METRICS))
    engine.configure(
        replace(only("temperature", hold_s=0), overrides={3: {"temperature": RULE_BY_KEY["temperature"].defaults}})
    )
    events = engine.update(Sample(6.0, (gpu,), (DeviceInfo(3, "H100", "GPU-3"),), None, None))
    assert events == []  # GPU 3 holds for the default 5 s first
    assert engine.active() == 1  # GPU 0's alert still firing: its tracker was kept across the settings


def test_disabled_rules_stay_silent() -> None:
    engine = AlertEngine(only("temperature", enabled=False))
    assert run(engine, TEMPERATURE, [99] * 20) == []


@pytest.mark.parametrize(
    ("rule", "changes", "problem"),
    [
        ("temperature", {"critical_clear": 95.0}, "clear threshold (95) must be below its enter threshold (90)"),
        ("temperature", {"warning_enter": 95.0, "warning_clear": 90.0}, "critical threshold must be beyond"),
        ("memory_free", {"warning_clear": 1.5}, "must be above its enter threshold"),
        ("temperature", {"hold_s": -1.0}, "cannot be negative"),
        ("gpu_lost", {"cooldown_s": NAN}, "cannot be negative"),
        ("job_finished", {"idle_below_percent": 60.0}, "must be under busy above (50 %)"),
        ("job_finished", {"busy_above_percent": NAN}, "busy above must be a percentage"),
        ("job_finished", {"busy_for_s": -5.0}, "cannot be negative"),
    ],
)
def test_validation_names_the_problem(rule: str, changes: dict, problem: str) -> None:
    kind = RULE_BY_KEY[rule]
    assert validate(kind, kind.defaults) == []
    problems = validate(kind, replace(kind.defaults, **changes))
    assert len(problems) == 1 and problem in problems[0]


def test_defaults_are_valid_and_on_for_temperature_faults_and_little_free_memory() -> None:
    for kind in RULES:
        assert validate(kind, kind.defaults) == [], kind.key
    on = {kind.key for kind in RULES if kind.defaults.enabled}
    assert {"temperature", "gpu_lost", "xid", "memory_free"} <= on
    assert "job_finished" not in on and "memory_used" not in on  # near-full memory is how ML jobs run


def test_memory_filling_up_notifies_with_the_default_settings() -> None:
    """With nothing configured, a GPU about to run out of memory is told (it was silent before)."""
    engine = AlertEngine()
    free = [20 * GIB] + [1.5 * GIB] * 40 + [0.3 * GIB] * 40
    events = []
    for t, value in enumerate(free):
        events += engine.update(sample(float(t), memory_free_bytes=value))
    assert [(e.rule, e.severity) for e in events if e.notify] == [
        ("memory_free", Severity.WARNING),
        ("memory_free", Severity.CRITICAL),
    ]


def test_a_threshold_firing_says_which_threshold_it_crossed() -> None:
    warning, critical = run(AlertEngine(only("temperature", hold_s=0)), TEMPERATURE, [84, 93])
    assert (warning.threshold, critical.threshold) == (83, 90)
    assert isinstance(RuleSettings(), RuleSettings)


def test_every_threshold_rule_watches_a_catalog_metric_in_a_compatible_unit() -> None:
    assert {r.key for r in THRESHOLD_RULES} == {
        "temperature",
        "temperature_limit",
        "memory_used",
        "memory_free",
        "power",
    }
    for rule in THRESHOLD_RULES:
        assert rule.metric in GPU_METRIC_BY_KEY, rule.key
        assert rule.unit.base is GPU_METRIC_BY_KEY[rule.metric].unit, rule.key
    memory_free = RULE_BY_KEY["memory_free"]
    assert isinstance(memory_free, ThresholdRule)
    assert memory_free.unit.symbol == "GiB"  # bytes are typed and told in GiB
    assert memory_free.direction is Direction.BELOW


def test_job_finished_has_settings_of_its_own() -> None:
    defaults = RULE_BY_KEY["job_finished"].defaults
    assert isinstance(defaults, JobSettings) and not defaults.enabled
    assert (defaults.busy_above_percent, defaults.busy_for_s) == (50.0, 60.0)
    assert (defaults.idle_below_percent, defaults.idle_for_s) == (5.0, 30.0)
    assert validate(RULE_BY_KEY["job_finished"], RuleSettings()) != []  # not a threshold rule's settings


# ---- every rule through the one protocol: step(settings, tracker, gpu or sample) ----
# (rule, settings changes, one frame of values a second, [(t, kind, severity, message, notify)])
STEPS = [
    (
        "temperature",
        {"hold_s": 0.0},
        [{"temperature_gpu_c": 60}, {"temperature_gpu_c": 95}, {"temperature_gpu_c": 88}, {"temperature_gpu_c": 70}],
        [
            (1, "firing", Severity.CRITICAL, "GPU temperature critical at 95 °C", True),
            (3, "resolved", Severity.INFO, "back to normal", True),
        ],
    ),
    (
        "memory_used",
        {"hold_s": 0.0},
        [{"memory_used_percent": 96}, {"memory_used_percent": 99.2}, {"memory_used_percent": NAN}],
        [
            (0, "firing", Severity.WARNING, "memory used high at 96 %", True),
            (1, "firing", Severity.CRITICAL, "memory used critical at 99 %", True),
        ],
    ),
    (
        "temperature_limit",  # °C below the GPU's own shutdown limit: low is alarming
        {"hold_s": 0.0, "enabled": True},
        [{"temperature_below_shutdown_c": margin} for margin in (12, 7, 2, 11)],
        [
            (1, "firing", Severity.WARNING, "margin to the shutdown temperature low at 7 °C", True),
            (2, "firing", Severity.CRITICAL, "margin to the shutdown temperature critical at 2 °C", True),
            (3, "resolved", Severity.INFO, "back to normal", True),
        ],
    ),
    (
        "memory_free",
        {"hold_s": 0.0, "enabled": True},
        [{"memory_free_bytes": 0.3 * GIB}, {"memory_free_bytes": 1.5 * GIB}, {"memory_free_bytes": 7 * GIB}],
        [
            (0, "firing", Severity.CRITICAL, "memory free critical at 0.3 GiB", True),
            (1, "firing", Severity.WARNING, "memory free low at 1.5 GiB", False),  # calming down: quiet
            (2, "resolved", Severity.INFO, "back to normal", True),
        ],
    ),
    (
        "power",
        {"hold_s": 1.0, "enabled": True},
        [{"power_used_percent": 96}, {"power_used_percent": 97}, {"power_used_percent": 80}],
        [
            (1, "firing", Severity.WARNING, "power draw high at 97 % of limit", True),
            (2, "resolved", Severity.INFO, "back to normal", True),
        ],
    ),
    (
        "gpu_lost",
        {},
        [{}, {"lost": True}, {"lost": True}, {}],
        [
            (1, "firing", Severity.CRITICAL, "lost: fell off the bus", True),
            (3, "resolved", Severity.INFO, "back", True),
        ],
    ),
    (
        "xid",
        {"cooldown_s": 60.0},
        [{"xid_error_count": 0}, {"xid_error_count": 1, "xid_last": 79}, {"xid_error_count": 2, "xid_last": 13}],
        [
            (1, "event", Severity.CRITICAL, "XID 79 (GPU has fallen off the bus)", True),
            (2, "event", Severity.CRITICAL, "XID 13 (graphics engine exception)", False),  # within the cooldown
        ],
    ),
    (
        "throttle",
        {"hold_s": 1.0},
        [{"clock_event_reasons": r} for r in (0x40, 0x40, 0, NAN, 0)],
        [
            (1, "firing", Severity.WARNING, "thermal throttling", True),
            (4, "resolved", Severity.INFO, "back to normal", True),  # gone for the hold time; a gap holds
        ],
    ),
    (
        "job_finished",
        {"enabled": True, "busy_for_s": 2.0, "idle_for_s": 1.0},
        [{"utilization_gpu_percent": u} for u in (90, 90, 90, 3, 3, 3)],
        [(4, "event", Severity.INFO, "job finished after 3 s (idle now)", True)],
    ),
    (
        "stalled",
        {"hold_s": 2.0},
        [
            *[{"utilization_gpu_percent": 100, "sm_activity_percent": 1}] * 3,
            {"utilization_gpu_percent": 100, "sm_activity_percent": 7},  # within the hysteresis: holds
            {"utilization_gpu_percent": 100, "sm_activity_percent": 40},
        ],
        [
            (2, "firing", Severity.WARNING, "job stalled", True),
            (4, "resolved", Severity.INFO, "back to normal", True),
        ],
    ),
    (
        "memory_held_idle",
        {"hold_s": 1.0},
        [
            *[{"utilization_gpu_percent": 0, "memory_used_bytes": 6 * GIB}] * 2,
            {"utilization_gpu_percent": 12, "memory_used_bytes": 6 * GIB},  # within the hysteresis
            {"utilization_gpu_percent": 50, "memory_used_bytes": 6 * GIB},
        ],
        [
            (1, "firing", Severity.WARNING, "6.0 GiB held, GPU idle for 1 s", True),
            (3, "resolved", Severity.INFO, "back to normal", True),
        ],
    ),
    (
        "driver_stalled",
        {},
        [{}, {"stall": True}, {"stall": True}, {}],
        [
            (1, "firing", Severity.CRITICAL, "GPU driver not responding", True),
            (3, "resolved", Severity.INFO, "GPU driver answering again", True),
        ],
    ),
]


def test_the_stalled_and_memory_held_rules_fire_in_the_scenario_built_for_them() -> None:
    source, clock, _ = simulated_source("stalled:gpus=h100+rtx4090+h100,start=500")
    engine = AlertEngine()
    assert engine.needs() == {"sm_activity_percent"}
    demand = HISTORY | engine.needs()
    events = []
    for _ in range(240):  # 40 min in 10 s ticks: the deadlock at 600 s, the notebook idle all along
        events += [(e.gpu_index, e.rule, e.kind) for e in engine.update(source.sample(demand))]
        clock.advance_s(10)
    firing = {(gpu, rule) for gpu, rule, kind in events if kind == "firing"}
    # GPU 0 by its SM activity (GPM), GPU 1 (an RTX 4090, no GPM) by its power near idle.
    assert {(0, "stalled"), (1, "stalled"), (2, "memory_held_idle")} <= firing
    assert not any(rule == "stalled" for gpu, rule in firing if gpu == 2)


def test_a_busy_training_job_is_not_called_stalled() -> None:
    source, clock, _ = simulated_source("training:gpus=h100+rtx4090,start=300")
    engine = AlertEngine()
    for _ in range(60):
        events = engine.update(source.sample(HISTORY | engine.needs()))
        assert not [e for e in events if e.rule in ("stalled", "memory_held_idle")]
        clock.advance_s(10)


def test_the_step_table_covers_every_rule() -> None:
    assert sorted(case[0] for case in STEPS) == sorted(rule.key for rule in RULES)


@pytest.mark.parametrize(("rule", "changes", "frames", "expected"), STEPS, ids=[case[0] for case in STEPS])
def test_every_rule_steps_through_the_same_protocol(rule: str, changes: dict, frames: list, expected: list) -> None:
    kind = RULE_BY_KEY[rule]
    settings = replace(kind.defaults, **changes)
    tracker = Tracker()
    events = []
    for t, frame in enumerate(frames):
        values = {k: v for k, v in frame.items() if k not in ("lost", "stall")}
        now = sample(t, lost=frame.get("lost", False), stall=frame.get("stall", False), **values)
        if isinstance(kind, MachineRule):
            event = kind.step(settings, tracker, now)
        else:
            assert isinstance(kind, GpuRule)
            event = kind.step(settings, tracker, now.gpus[0], "H100", now.timestamp_s)
        if event is not None:
            assert event.rule == rule
            events.append((event.timestamp_s, event.kind, event.severity, event.message, event.notify))
    assert events == expected
