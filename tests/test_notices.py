"""Notices: one notification per rule across GPUs, updated in place; urgency only where it is due."""

from __future__ import annotations

import math

import pytest

from trayvml.alerts.dispatch import Outgoing
from trayvml.alerts.grouping import CRITICAL, GROUP, LOW, NORMAL, Grouper, gpu_ranges, notice_for, urgency
from trayvml.alerts.rules import AlertEvent
from trayvml.alerts.severity import MACHINE, Severity


def firing(
    gpu: int, rule: str = "memory_used", severity: Severity = Severity.CRITICAL, t: float = 0.0, value: float = 97.4
) -> Outgoing:
    return Outgoing(
        AlertEvent(
            t, gpu, "NVIDIA H100 80GB HBM3", rule, "firing", severity, f"memory used critical at {value:g} %", value,
            detail="Critical above 97 %; clears below 93 %.", threshold=97.0,
        ),
        f"Processes: python train.py --rank {gpu} (alice, PID {4200001 + gpu * 1000}) 76.0 GiB",
    )  # fmt: skip


def resolved(gpu: int, rule: str = "memory_used", t: float = 0.0) -> Outgoing:
    return Outgoing(AlertEvent(t, gpu, "NVIDIA H100 80GB HBM3", rule, "resolved", Severity.INFO, "back to normal"))


def test_eight_gpus_at_once_make_one_notification_naming_them_all() -> None:
    grouper = Grouper()
    (notice,) = grouper.take([firing(gpu) for gpu in range(8)], 0.0)
    assert notice.title == "GPUs 0–7: memory used ≥ 97 %"
    assert notice.key == (GROUP, "memory_used")
    assert notice.body.splitlines()[0] == "Critical above 97 %; clears below 93 %."
    assert notice.body.splitlines()[1] == " · ".join(f"GPU {gpu} at 97 %" for gpu in range(8))
    # the processes of the worst GPU (the first of those at the highest level)
    assert notice.body.splitlines()[2] == "GPU 0: Processes: python train.py --rank 0 (alice, PID 4200001) 76.0 GiB"
    assert notice.body.endswith("fail with out of memory.")
    assert grouper.members("memory_used") == tuple(range(8))


def test_a_gpu_joining_within_the_window_updates_the_same_notification() -> None:
    grouper = Grouper(window_s=60.0)
    (first,) = grouper.take([firing(0)], 0.0)
    assert first.title.startswith("GPU 0 H100: memory used critical at")  # alone, it reads as before
    (update,) = grouper.take([firing(3, t=20.0)], 20.0)
    assert update.key == first.key and update.title == "GPUs 0, 3: memory used ≥ 97 %"


def test_resolved_only_when_every_gpu_is_back_with_how_long_it_lasted() -> None:
    grouper = Grouper()
    grouper.take([firing(0), firing(1), firing(2)], 0.0)
    assert grouper.take([resolved(0, t=100.0), resolved(1, t=100.0)], 100.0) == []  # GPU 2 still fires
    (done,) = grouper.take([resolved(2, t=300.0)], 300.0)
    assert done.title == "GPUs 0–2: memory used back to normal"
    assert done.body == "Back to normal after 5 min." and done.resolved and done.urgency == LOW
    assert done.key == (GROUP, "memory_used")  # replaces the firing one
    assert grouper.members("memory_used") == (0, 1, 2)  # what its Snooze action quiets


def test_after_the_window_and_all_resolved_a_new_firing_starts_afresh() -> None:
    grouper = Grouper(window_s=60.0)
    grouper.take([firing(0)], 0.0)
    grouper.take([resolved(0, t=10.0)], 10.0)
    (again,) = grouper.take([firing(5, t=500.0)], 500.0)
    assert again.title.startswith("GPU 5 ") and grouper.members("memory_used") == (5,)


def test_a_still_firing_group_takes_gpus_beyond_the_window() -> None:
    grouper = Grouper(window_s=60.0)
    grouper.take([firing(0)], 0.0)
    (update,) = grouper.take([firing(1, t=600.0)], 600.0)
    assert update.title == "GPUs 0, 1: memory used ≥ 97 %"
    assert "Since " in update.body and "(10 min)" in update.body  # how long it has lasted


def test_rules_group_separately_and_machine_alerts_stand_alone() -> None:
    stall = Outgoing(AlertEvent(0.0, MACHINE, "", "driver_stalled", "firing", Severity.CRITICAL, "GPU driver stuck"))
    notices = Grouper().take([firing(0), firing(1, rule="temperature"), stall], 0.0)
    assert sorted(n.key for n in notices) == [
        (GROUP, "memory_used"),
        (GROUP, "temperature"),
        (MACHINE, "driver_stalled"),
    ]


def test_a_resolution_whose_firing_was_never_grouped_is_told_alone() -> None:
    (notice,) = Grouper().take([resolved(4)], 0.0)
    assert notice.title == "GPU 4 H100: memory used back to normal" and notice.resolved


@pytest.mark.parametrize(
    ("rule", "severity", "expected"),
    [
        ("gpu_lost", Severity.CRITICAL, CRITICAL),
        ("xid", Severity.CRITICAL, CRITICAL),
        ("driver_stalled", Severity.CRITICAL, CRITICAL),
        ("temperature", Severity.CRITICAL, CRITICAL),  # heat near the limit the GPU shuts down at
        ("temperature", Severity.WARNING, NORMAL),
        ("memory_used", Severity.CRITICAL, NORMAL),  # full memory needs no human now: it times out
        ("memory_free", Severity.CRITICAL, NORMAL),
        ("power", Severity.CRITICAL, NORMAL),
        ("throttle", Severity.WARNING, NORMAL),
        ("job_finished", Severity.INFO, LOW),
    ],
)
def test_critical_urgency_only_for_what_needs_a_human_now(rule: str, severity: Severity, expected: int) -> None:
    event = AlertEvent(0.0, 0, "H100", rule, "firing", severity, "x")
    assert urgency(event) == expected
    assert notice_for(Outgoing(event)).urgency == expected


def test_bodies_say_what_to_do_where_there_is_something_to_do() -> None:
    lost = AlertEvent(0.0, 1, "H100", "gpu_lost", "firing", Severity.CRITICAL, "lost: fell off the bus")
    assert "dmesg" in notice_for(Outgoing(lost, "NVIDIA H100 at PCI 0000:1B:00.0")).body
    job = AlertEvent(0.0, 1, "H100", "job_finished", "event", Severity.INFO, "job finished (idle now)")
    assert notice_for(Outgoing(job)).body == "job finished (idle now)"


@pytest.mark.parametrize(
    ("indices", "text"),
    [([0], "0"), ([0, 1], "0, 1"), (list(range(8)), "0–7"), ([0, 1, 2, 5, 7, 8, 9], "0–2, 5, 7–9"), ([3, 1, 2], "1–3")],
)
def test_gpu_ranges(indices: list[int], text: str) -> None:
    assert gpu_ranges(indices) == text


def test_event_rules_group_by_their_shared_words() -> None:
    def xid(gpu: int, code: int) -> Outgoing:
        message = f"XID {code} (NVLink error)"
        return Outgoing(AlertEvent(0.0, gpu, "H100", "xid", "event", Severity.CRITICAL, message, float(code)))

    (same,) = Grouper().take([xid(0, 74), xid(1, 74)], 0.0)
    assert same.title == "GPUs 0, 1: XID 74 (NVLink error)" and same.urgency == CRITICAL
    (mixed,) = Grouper().take([xid(0, 74), xid(1, 79)], 0.0)
    assert mixed.title == "GPUs 0, 1: XID error"
    assert math.isnan(xid(0, 74).event.threshold)


def test_a_lone_resolution_leaves_an_open_group_in_place() -> None:
    grouper = Grouper()
    grouper.take([firing(0), firing(1)], 0.0)
    (alone,) = grouper.take([resolved(4, t=5.0)], 5.0)  # GPU 4's firing was told before a pause
    assert alone.key == (4, "memory_used") and alone.title == "GPU 4 H100: memory used back to normal"
    assert grouper.members("memory_used") == (0, 1)


def test_warning_then_critical_on_one_gpu_is_one_notification_updated_in_place() -> None:
    """Through the real engine: the escalation replaces the warning (same key), it is not a second one."""
    from tests.test_alerts import only, sample
    from trayvml.alerts.engine import AlertEngine

    engine, grouper = AlertEngine(only("temperature")), Grouper()
    notices = []
    for t, celsius in enumerate([84] * 7 + [95] * 7):
        ready = [Outgoing(e) for e in engine.update(sample(float(t), temperature_gpu_c=celsius)) if e.notify]
        notices += grouper.take(ready, float(t))
    warning, critical = notices
    assert warning.severity is Severity.WARNING and critical.severity is Severity.CRITICAL
    assert warning.key == critical.key == (GROUP, "temperature")
    assert critical.urgency == CRITICAL and "critical at 95 °C" in critical.title
    assert "For " in critical.body  # an update of the one notification says how long it has lasted


def test_a_state_alert_ends_in_words_of_its_own_not_back_to_normal() -> None:
    """ "GPU 1 H100: GPU lost back to normal" read badly: a state comes back, a value does."""
    grouper = Grouper()
    grouper.take([firing(1, rule="gpu_lost", value=math.nan)], 0.0)
    (done,) = grouper.take([resolved(1, rule="gpu_lost", t=60.0)], 60.0)
    assert done.title == "GPU 1 H100: answering again (back on the bus)"
    assert resolved(1, rule="gpu_lost").event.title == "GPU 1 H100: answering again (back on the bus)"
    assert resolved(1).event.title == "GPU 1 H100: memory used back to normal"  # a value's, as before
