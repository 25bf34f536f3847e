"""The notification policy, table-driven on a manual clock; and the app using it."""

from __future__ import annotations

import math

import pytest

from trayvml.alerts.dispatch import MAX_HELD_BACK, Dispatcher, Outgoing
from trayvml.alerts.rules import AlertEvent
from trayvml.alerts.severity import Severity
from trayvml.core.clock import ManualClock


def event(gpu: int = 0, rule: str = "temperature", notify: bool = True, host: str = "") -> Outgoing:
    return Outgoing(AlertEvent(0.0, gpu, "H100", rule, "firing", Severity.CRITICAL, "hot", notify=notify, host=host))


def ready(clock: ManualClock, **changes: object) -> Dispatcher:
    dispatcher = Dispatcher(clock, **changes)  # type: ignore[arg-type]
    dispatcher.notifier_ready()
    return dispatcher


# (what happened first, the event offered, seconds later, is it sent?)
CASES = [
    ("nothing", event(), 0, True),
    ("nothing", event(notify=False), 0, False),  # within the rule's own cooldown
    ("notifications off", event(), 0, False),
    ("paused 1 h", event(), 10, False),
    ("paused 1 h", event(), 3601, True),  # a pause for an hour ends by itself
    ("paused until resumed", event(), 10**7, False),
    ("paused then resumed", event(), 0, True),
    ("snoozed GPU 0 temperature", event(), 10, False),
    ("snoozed GPU 0 temperature", event(gpu=1), 10, True),  # another GPU
    ("snoozed GPU 0 temperature", event(rule="memory_used"), 10, True),  # another rule
    ("snoozed GPU 0 temperature", event(), 3601, True),
    ("snoozed GPU 0 temperature", event(host="gpu-box"), 10, True),  # a remote host's GPU 0
    ("snoozed gpu-box GPU 0 temperature", event(host="gpu-box"), 10, False),
    ("snoozed gpu-box GPU 0 temperature", event(), 10, True),  # this machine's GPU 0
    ("snoozed gpu-box GPU 0 temperature", event(host="other-box"), 10, True),
]


@pytest.mark.parametrize(("before", "offered", "later_s", "sent"), CASES)
def test_policy(before: str, offered: Outgoing, later_s: float, sent: bool) -> None:
    clock = ManualClock()
    dispatcher = ready(clock, notifications_on=before != "notifications off")
    if before == "paused 1 h":
        dispatcher.pause(3600)
    elif before == "paused until resumed":
        dispatcher.pause(math.inf)
    elif before == "paused then resumed":
        dispatcher.pause(math.inf)
        dispatcher.pause(0)
    elif before.startswith("snoozed gpu-box"):
        dispatcher.snooze(0, "temperature", host="gpu-box")
    elif before.startswith("snoozed"):
        dispatcher.snooze(0, "temperature")
    clock.advance_s(later_s)
    assert dispatcher.offer(offered) == ([offered] if sent else [])


@pytest.mark.parametrize("set_s", [-3600.0, 2 * 3600.0])
def test_a_pause_and_a_snooze_never_outlast_their_time_when_the_wall_clock_is_set(set_s: float) -> None:
    """An hour's pause or snooze, the wall clock then set back an hour (NTP, a user) or moved on two
    (a suspend, when the monotonic clock stands still): it ends, where set back it lasted two
    hours. Ending early is the safe side of a notification that would otherwise not come."""
    clock = ManualClock()
    paused, snoozed = ready(clock), ready(clock)
    paused.pause(3600)
    snoozed.snooze(0, "temperature", 3600)
    clock.advance_s(10)
    assert paused.offer(event()) == [] and snoozed.offer(event()) == []
    clock.set_wall_s(set_s)
    assert paused.offer(event()) == [event()] and snoozed.offer(event()) == [event()]
    paused.pause(math.inf)  # until resumed, whatever the clock does
    clock.set_wall_s(-set_s)
    assert paused.offer(event()) == []


def test_events_wait_for_the_notifier_and_a_pause_meanwhile_quiets_them() -> None:
    clock = ManualClock()
    dispatcher = Dispatcher(clock)
    first, second = event(gpu=0), event(gpu=1)
    assert dispatcher.offer(first) == [] and dispatcher.offer(second) == []
    dispatcher.snooze(1, "temperature")
    assert dispatcher.notifier_ready() == [first]
    assert dispatcher.offer(event(gpu=2)) == [event(gpu=2)]  # ready now: sent at once


def test_held_back_events_are_snoozed_by_host() -> None:
    dispatcher = Dispatcher(ManualClock())
    local, remote = event(gpu=0), event(gpu=0, host="gpu-box")
    dispatcher.offer(local)
    dispatcher.offer(remote)
    dispatcher.snooze(0, "temperature", host="gpu-box")
    assert dispatcher.notifier_ready() == [local]


def test_held_back_events_are_bounded() -> None:
    dispatcher = Dispatcher(ManualClock())
    for gpu in range(MAX_HELD_BACK + 10):
        dispatcher.offer(event(gpu=gpu))
    held = dispatcher.notifier_ready()
    assert len(held) == MAX_HELD_BACK and held[0].event.gpu_index == 10  # the oldest went first


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[AlertEvent] = []

    def notify(self, event: AlertEvent, details: str = "") -> None:
        self.sent.append(event)

    def close(self) -> None:
        pass


def test_the_app_pauses_from_the_tray_menu_and_snoozes_from_an_action(qapp) -> None:
    from tests.helpers import simulated_source
    from trayvml.ui.app import App

    clock = ManualClock()
    app = App(None, clock=clock)
    recorder = _Recorder()
    app._use_notifier(recorder)  # type: ignore[arg-type]
    source, source_clock, _ = simulated_source("idle:gpus=h100*2,lost=0@2+1@2")
    app.tray.pause_hour_action.trigger()
    assert app.tray.resume_action.isEnabled() and app.tray.pause_menu.title() == "Alerts paused"
    source_clock.advance_s(3)
    app.on_sample(source.sample())
    assert recorder.sent == []  # both GPUs lost, quietly: paused
    assert [e.rule for e in app.engine.events] == ["gpu_lost", "gpu_lost"]  # the alert states went on
    clock.advance_s(3601)
    app.on_sample(source.sample())
    assert app.tray.pause_menu.title() == "Pause alerts"  # the hour is over
    app.sampler.stop()
    app.tray.icon.hide()
