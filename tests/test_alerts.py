"""The alert engine, table-driven: hysteresis, hold, cooldown, gaps, lost GPUs, overrides."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from trayvml.alerts import RULE_BY_KEY, RULES, AlertEngine, AlertSettings, RuleSettings, Severity, validate
from trayvml.core.metrics import GPU_INDEX, GPU_METRICS
from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, Sample

NAN = math.nan


def sample(t_s: float, lost: bool = False, **values: float) -> Sample:
    """One GPU named H100 with the given metric values (everything else missing)."""
    row = [NAN] * len(GPU_METRICS)
    for key, value in values.items():
        row[GPU_INDEX[key]] = value
    states = (MetricState.LOST if lost else MetricState.OK,) * len(GPU_METRICS)
    gpu = GpuSample(0, tuple(row), states, lost=lost)
    return Sample(t_s, (gpu,), (DeviceInfo(0, "H100", "GPU-x"),), None, None)


def run(engine: AlertEngine, key: str, values: list[float], step_s: float = 1.0, start_s: float = 0.0) -> list:
    events = []
    for k, value in enumerate(values):
        events += engine.update(sample(start_s + k * step_s, **{key: value}))
    return events


def only(rule: str, **changes: float | bool) -> AlertSettings:
    """Every rule off but ``rule``, changed as given."""
    rules = {r.key: replace(r.defaults, enabled=False) for r in RULES}
    rules[rule] = replace(RULE_BY_KEY[rule].defaults, **{"enabled": True, **changes})  # type: ignore[arg-type]
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


def test_an_escalation_is_told_even_within_the_cooldown() -> None:
    engine = AlertEngine(only("temperature", hold_s=0, cooldown_s=300))
    events = run(engine, TEMPERATURE, [84, 84, 95])
    assert [(e.severity, e.notify) for e in events] == [(Severity.WARNING, True), (Severity.CRITICAL, True)]


def test_events_name_the_gpu_and_the_value() -> None:
    (event,) = run(AlertEngine(only("temperature", hold_s=0)), TEMPERATURE, [93])
    assert event.title == "GPU 0 H100: temperature critical at 93 °C"
    assert (event.timestamp_s, event.value) == (0, 93)
    assert event.detail == "Critical above 90 °C; clears below 85 °C."


def test_memory_rules_in_percent_and_in_free_gib() -> None:
    used = run(AlertEngine(only("memory_used", hold_s=0)), "memory_used_percent", [50, 91, 98])
    assert [(e.kind, e.severity) for e in used] == [("firing", Severity.WARNING), ("firing", Severity.CRITICAL)]
    free = run(AlertEngine(only("memory_free", hold_s=0)), "memory_free_bytes", [20 * 2**30, 3 * 2**30, 7 * 2**30])
    assert [(e.kind, e.severity) for e in free] == [("firing", Severity.WARNING), ("resolved", Severity.INFO)]
    assert free[0].message == "only 3.0 GiB of memory free"


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
    for t, reasons in enumerate([0x1, 0x20, 0x20, 0x20, 0x0, 0x0, 0x0, 0x4, 0x4, 0x4]):
        events += engine.update(sample(t, clock_event_reasons=reasons))
    assert [(e.kind, e.message, e.timestamp_s) for e in events] == [
        ("firing", "thermal throttling", 3),
        ("resolved", "back to normal", 6),  # gone for the hold time, not at the first quiet second
        ("firing", "power throttling", 9),
    ]


def test_throttling_that_comes_and_goes_stays_one_alert() -> None:
    engine = AlertEngine(only("throttle", hold_s=10))
    flapping = ([0x20] * 12 + [0x0] * 5) * 10  # on 12 s, off 5 s, for almost three minutes
    events = run(engine, "clock_event_reasons", flapping)
    assert [e.kind for e in events] == ["firing"]


def test_job_finished_after_a_busy_stretch() -> None:
    engine = AlertEngine(only("job_finished", warning_enter=50, warning_clear=5, critical_enter=60, hold_s=30))
    utilization = [0] * 10 + [95] * 120 + [1] * 40 + [95] * 10 + [1] * 40  # a long job, then a short one
    events = run(engine, "utilization_gpu_percent", utilization)
    assert [(e.rule, e.timestamp_s) for e in events] == [("job_finished", 160)]


def test_per_gpu_overrides_win() -> None:
    settings = only("temperature", hold_s=0)
    settings = replace(
        settings,
        overrides={
            1: {"temperature": replace(settings.rules["temperature"], critical_enter=70.0, critical_clear=65.0)}
        },
    )
    engine = AlertEngine(settings)
    row = [NAN] * len(GPU_METRICS)
    row[GPU_INDEX[TEMPERATURE]] = 75.0
    gpus = tuple(GpuSample(i, tuple(row), (MetricState.OK,) * len(GPU_METRICS)) for i in range(2))
    devices = tuple(DeviceInfo(i, "H100", f"GPU-{i}") for i in range(2))
    events = engine.update(Sample(0.0, gpus, devices, None, None))
    assert [(e.gpu_index, e.severity) for e in events] == [(1, Severity.CRITICAL)]


def test_disabled_rules_stay_silent() -> None:
    engine = AlertEngine(only("temperature", enabled=False))
    assert run(engine, TEMPERATURE, [99] * 20) == []


@pytest.mark.parametrize(
    ("rule", "changes", "problem"),
    [
        ("temperature", {"critical_clear": 95.0}, "clear threshold (95) must be below its enter threshold (90)"),
        ("temperature", {"warning_enter": 95.0, "warning_clear": 90.0}, "critical threshold must be beyond"),
        ("memory_free", {"warning_clear": 3.0}, "must be above its enter threshold"),
        ("temperature", {"hold_s": -1.0}, "cannot be negative"),
    ],
)
def test_validation_names_the_problem(rule: str, changes: dict, problem: str) -> None:
    kind = RULE_BY_KEY[rule]
    assert validate(kind, kind.defaults) == []
    problems = validate(kind, replace(kind.defaults, **changes))
    assert len(problems) == 1 and problem in problems[0]


def test_defaults_are_valid_and_on_for_temperature_and_memory() -> None:
    for kind in RULES:
        assert validate(kind, kind.defaults) == [], kind.key
    on = {kind.key for kind in RULES if kind.defaults.enabled}
    assert {"temperature", "memory_used", "gpu_lost", "xid"} <= on and "job_finished" not in on
    assert isinstance(RuleSettings(), RuleSettings)
