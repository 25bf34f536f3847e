"""Alerts end to end: trayvml as a process, simulated GPUs sped up, a real dunst receiving notifications."""

from __future__ import annotations

import math
import signal
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.desktop import AppProcess, DesktopStack, running_desktop, wait_until
from tests.helpers import thresholds
from trayvml.alerts.engine import AlertSettings
from trayvml.alerts.rules import FORMER_DEFAULTS, RULE_BY_KEY, RULES, RuleSettings
from trayvml.config import Settings, SettingsStore

pytestmark = pytest.mark.desktop


@pytest.fixture
def desktop() -> Iterator[DesktopStack]:
    yield from running_desktop("sni", notifications=True)


def urgency(notification: dict) -> str:
    """As dunst formatted it (tests/desktop.py gives each urgency its own format)."""
    return notification["message"].split(":", 1)[0]


def only_rules(**rules: RuleSettings) -> Settings:
    """Settings with every rule off except those given."""
    all_off = {kind.key: replace(kind.defaults, enabled=False) for kind in RULES}
    return Settings(alerts=AlertSettings(rules={**all_off, **rules}))


def temperature(critical_enter: float = 86.0, critical_clear: float = 80.0, cooldown_s: float = 300.0) -> RuleSettings:
    return RuleSettings(True, math.nan, math.nan, critical_enter, critical_clear, hold_s=0.0, cooldown_s=cooldown_s)


class Running:
    def __init__(self, stack: DesktopStack, tmp_path: Path, spec: str, settings: Settings) -> None:
        self.stack = stack
        config = tmp_path / "config.toml"
        SettingsStore(config).save(settings)
        self.app = AppProcess(
            stack, "-vv", f"--simulate={spec}", "--config", str(config), env={"TRAYVML_TRAY_WAIT_S": "1"}
        )
        self.process = self.app.process
        self.seen: list[dict] = []

    def wait_samples(self, count: int) -> None:
        """Until the app has taken ``count`` more samples (with -vv it says so for each): time for a
        notification that should not come, counted in the app's own ticks rather than slept."""
        self.app.wait_for_log("sample at", self.app.log_count("sample at") + count)

    def notifications(self) -> list[dict]:
        """Every notification so far, oldest first (closing them moves them into dunst's history)."""
        history = self.stack.dunst_history()
        # A notification updated in place after it was closed comes back under the same id.
        known = {(n["id"], n["timestamp"]) for n in self.seen}
        for entry in reversed(history):
            if (entry["id"], entry["timestamp"]) not in known:
                self.seen.append(entry)
        return list(self.seen)

    def wait_for(self, count: int, timeout_s: float) -> list[dict]:
        wait_until(lambda: len(self.notifications()) >= count, timeout_s=timeout_s, what=f"{count} notification(s)")
        return self.notifications()

    def stop(self) -> str:
        return self.app.stop(signal.SIGTERM)[1]


@pytest.fixture
def run(desktop: DesktopStack, tmp_path: Path) -> Iterator:
    started: list[Running] = []

    def start(spec: str, settings: Settings) -> Running:
        app = Running(desktop, tmp_path, spec, settings)
        started.append(app)
        return app

    yield start
    for app in started:
        app.stop()  # an app that ended by itself too: its pipes are closed and its stderr shown


def test_overheating_notifies_once_and_once_more_when_resolved(run) -> None:
    # The thermal scenario at 60x, from 360 s: 87.6 °C and heating (86 °C crossed at once), about
    # 92 °C from 420 s, then hovering at 82-88 °C (around the enter threshold, above the clear
    # one) from 600 s to 1200 s, and below 80 °C at 1300 s. (From 900 s it began in the hover,
    # whose 40 s wave a sample each simulated minute can miss the top of for 20 s.)
    app = run("thermal:gpus=h100,speed=60,start=360", only_rules(temperature=temperature()))
    first = app.wait_for(1, 15)
    assert first[0]["summary"].startswith("[simulated] GPU 0 H100: GPU temperature critical at ")
    assert urgency(first[0]) == "CRITICAL" and first[0]["appname"] == "trayvml"
    both = app.wait_for(2, 40)
    assert both[1]["summary"] == "[simulated] GPU 0 H100: GPU temperature back to normal"
    app.wait_samples(3)
    assert len(app.notifications()) == 2
    assert app.app.log_count("alert temperature") == 2  # the hovering in between changed no state


def test_memory_climbing_towards_full_notifies_once_naming_the_process(run) -> None:
    # Today's default is off and waits a minute.
    memory = replace(thresholds(FORMER_DEFAULTS["memory_used"]), hold_s=0.0)
    app = run("training:gpus=h100,speed=60,start=3950", only_rules(memory_used=memory))  # 89.5 %, 90 at 4030 s
    (warning,) = app.wait_for(1, 30)[:1]
    assert warning["summary"].startswith("[simulated] GPU 0 H100: memory used high at 9")
    assert urgency(warning) == "NORMAL"
    assert "python train.py --model llama-7b --rank 0 (" in warning["body"]
    app.wait_samples(4)
    assert len(app.notifications()) == 1


def test_a_lost_gpu_notifies_once(run) -> None:
    lost = RULE_BY_KEY["gpu_lost"].defaults
    app = run("idle:gpus=h100*2,lost=1@4", only_rules(gpu_lost=lost))
    (notice,) = app.wait_for(1, 20)[:1]
    assert notice["summary"] == "[simulated] GPU 1 H100: lost: fell off the bus" and urgency(notice) == "CRITICAL"
    app.wait_samples(3)
    assert len(app.notifications()) == 1


def _menu_click(stack: DesktopStack, label_prefix: str) -> None:
    from tests.test_desktop import _click, _menu_entries, _registered_items

    wait_until(lambda: bool(_registered_items(stack)), what="the tray item")
    (service,) = _registered_items(stack)
    wait_until(lambda: any(k.startswith(label_prefix) for k in _menu_entries(stack, service)), what=label_prefix)
    entries = _menu_entries(stack, service)
    _click(stack, service, next(v for k, v in entries.items() if k.startswith(label_prefix)))


def test_pause_alerts_suppresses_notifications(run, desktop: DesktopStack) -> None:
    app = run("idle:gpus=h100*2,lost=1@8", only_rules(gpu_lost=RULE_BY_KEY["gpu_lost"].defaults))
    _menu_click(desktop, "Until resumed")
    app.app.wait_for_log("alert gpu_lost firing: not notified (alerts are paused)")  # the GPU is lost at 8 s
    assert app.notifications() == []


def test_snooze_action_over_dbus_quiets_that_alert(run, desktop: DesktopStack) -> None:
    # Both thresholds inside the 82-88 °C hover and no cooldown: this alert would flap on and on.
    # At 10x a sample a second is a quarter of the hover's 40 s wave, so every four samples reach
    # 87.1 °C and 82.9 °C or past them, whatever the wave's phase; the hover lasts 60 s. (At 60x,
    # sampled each half wave, it flapped only where the wave's phase allowed: 58 s under load.)
    flapping = temperature(critical_enter=86.0, critical_clear=84.0, cooldown_s=0.0)
    app = run("thermal:gpus=h100,speed=10,start=595", only_rules(temperature=flapping))
    before = app.wait_for(2, 30)  # it does flap
    notification_id = before[-1]["id"]
    desktop.run(
        "gdbus", "emit", "--session", "--object-path", "/org/freedesktop/Notifications",
        "--signal", "org.freedesktop.Notifications.ActionInvoked", str(notification_id), "snooze",
    )  # fmt: skip
    app.app.wait_for_log("not notified (snoozed)")  # a firing after the snooze was quieted
    count = len(app.notifications())
    app.app.wait_for_log("not notified (snoozed)", count=3)
    assert len(app.notifications()) == count


def test_notification_text_from_the_system_is_escaped(desktop: DesktopStack, monkeypatch) -> None:
    from trayvml.alerts.dispatch import Outgoing
    from trayvml.alerts.grouping import notice_for
    from trayvml.alerts.rules import AlertEvent
    from trayvml.alerts.severity import Severity
    from trayvml.platform.notifiers import FreedesktopNotifier

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", desktop.env["DBUS_SESSION_BUS_ADDRESS"])
    notifier = FreedesktopNotifier(lambda action, key: None)
    assert notifier.markup and notifier.actions  # dunst, configured with markup, offers both
    event = AlertEvent(0.0, 0, "H100", "memory_used", "firing", Severity.WARNING, "memory 91 % full")
    notifier.notify(notice_for(Outgoing(event, "Processes: <b>evil</b> & co (alice, 42)")))
    (shown,) = desktop.dunst_history()[:1]
    # Sent escaped, so a markup-reading server shows the text as it is, tags and all.
    assert shown["body"].startswith("Processes: &lt;b&gt;evil&lt;/b&gt; &amp; co (alice, 42)\n")
    notifier.notify(notice_for(Outgoing(event, "again")))
    notifier.close()


def _blocked_in_a_receive(thread) -> bool:
    import sys

    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "_read_some_data":  # jeepney's wait for the socket
            return True
        frame = frame.f_back
    return False


def test_close_stops_the_action_listener_blocked_in_a_receive(desktop: DesktopStack, monkeypatch) -> None:
    import threading

    from trayvml.platform.notifiers import FreedesktopNotifier

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", desktop.env["DBUS_SESSION_BUS_ADDRESS"])
    notifier = FreedesktopNotifier(lambda action, key: None)
    (listener,) = [t for t in threading.enumerate() if t.name == "trayvml-notification-actions"]
    wait_until(lambda: _blocked_in_a_receive(listener), what="the action listener to wait for a message")
    notifier.close()
    # Not a timeout that ran out: closing the socket right behind its shutdown used to leave the
    # listener waiting for ever, and quitting stalled for the 5 s join.
    assert not listener.is_alive()


def test_a_stuck_driver_is_shown_notified_once_and_recovers(run, desktop: DesktopStack) -> None:
    # The temperature call hangs from 2 s to 14 s: after the sampler's 5 s grace the tray says so.
    app = run("idle:gpus=h100,hang=nvmlDeviceGetTemperatureV@2/12", only_rules(driver_stalled=RuleSettings()))
    wait_until(lambda: bool(desktop.sni_items()), what="the tray item")
    (service,) = desktop.sni_items()
    wait_until(lambda: "has not answered" in desktop.item_property(service, "ToolTip"), timeout_s=20, what="stale")
    tooltip = desktop.item_property(service, "ToolTip")
    assert "nvmlDeviceGetTemperatureV" in tooltip and "0 H100" not in tooltip  # no old values as live
    (stalled,) = app.wait_for(1, 10)
    assert stalled["summary"] == "[simulated] GPU driver not responding" and urgency(stalled) == "CRITICAL"
    wait_until(lambda: "0 H100" in desktop.item_property(service, "ToolTip"), timeout_s=20, what="recovery")
    summaries = [n["summary"] for n in app.wait_for(2, 10)]
    assert summaries == ["[simulated] GPU driver not responding", "[simulated] GPU driver answering again"]


def test_quitting_while_the_driver_is_stuck_is_quick_and_clean(run, desktop: DesktopStack) -> None:
    app = run("idle:gpus=h100,hang=nvmlDeviceGetTemperatureV@1", only_rules())
    wait_until(lambda: bool(desktop.sni_items()), what="the tray item")
    (service,) = desktop.sni_items()
    wait_until(lambda: "has not answered" in desktop.item_property(service, "ToolTip"), timeout_s=20, what="stale")
    code, err = app.app.stop(signal.SIGINT)
    assert code == 0
    assert "QThread: Destroyed" not in err and "Traceback" not in err


def test_memory_filling_eight_gpus_makes_one_notification_updated_in_place(run) -> None:
    # The scene: a training job fills memory on 8 H100s in lockstep, with memory alerts on
    # at their former eager thresholds (warning at 90 %). Each GPU fires; the user gets one notice.
    eager = replace(thresholds(FORMER_DEFAULTS["memory_used"]), hold_s=0.0)
    app = run("training:gpus=h100*8,speed=60,start=3950", only_rules(memory_used=eager))
    app.app.wait_for_log("alert memory_used firing: notified", count=8, timeout_s=60)
    app.wait_samples(5)
    shown = app.notifications()
    assert len({n["id"] for n in shown}) == 1  # one notification, however often updated in place
    assert shown[-1]["summary"] == "[simulated] GPUs 0–7: memory used ≥ 90 %" and urgency(shown[-1]) == "NORMAL"
    assert "GPU 7 at 9" in shown[-1]["body"] and "python train.py" in shown[-1]["body"]
    assert app.app.log_count("notification memory_used:") <= 2  # sent (and updated) at most twice


def test_a_remote_hosts_alert_is_its_own_notification_named_by_its_host(desktop: DesktopStack, monkeypatch) -> None:
    from dataclasses import replace

    from trayvml.alerts.dispatch import Outgoing
    from trayvml.alerts.grouping import notice_for
    from trayvml.alerts.rules import AlertEvent
    from trayvml.alerts.severity import Severity
    from trayvml.platform.notifiers import FreedesktopNotifier

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", desktop.env["DBUS_SESSION_BUS_ADDRESS"])
    notifier = FreedesktopNotifier(lambda action, key: None)
    local = AlertEvent(0.0, 0, "NVIDIA H100", "temperature", "firing", Severity.WARNING, "temperature 85 °C")
    notifier.notify(notice_for(Outgoing(local)))
    remote = replace(local, host="dgx-01", gpu_name="NVIDIA A100")  # also GPU 0, also temperature
    notifier.notify(notice_for(Outgoing(remote)))
    summaries = [shown["summary"] for shown in desktop.dunst_history()[:2]]
    # Not one replacing the other: a remote GPU 0 is not this machine's GPU 0.
    assert sorted(summaries) == ["GPU 0 H100: temperature 85 °C", "dgx-01: GPU 0 A100: temperature 85 °C"]
    notifier.close()
