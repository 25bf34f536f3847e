"""The settings dialog's Push page: destinations listed, added, edited and removed, secrets masked,
and a test notification sent off the GUI thread with its result in one sentence."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit, QWidget

from tests.helpers import present
from tests.test_config import changed_settings, same
from trayvml.config import PushDestination, Settings
from trayvml.platform.push import DeliveryError, Message
from trayvml.ui.settings_dialog import SettingsDialog

NTFY = PushDestination(
    "ntfy",
    url="https://ntfy.example.com/gpus-secret-topic",
    token="tk_verysecret",
    severities=("critical",),
    quiet_hours="22:00-07:00",
)
MAIL = PushDestination(
    "email",
    name="on call",
    smtp_host="smtp.example.com",
    smtp_port=2525,
    security="ssl",
    username="alerts",
    password="hunter22",
    sender="alerts@example.com",
    to=("a@example.com", "b@example.com"),
    rules=("gpu_lost", "temperature"),
)
SECRETS = ("tk_verysecret", "hunter22", "gpus-secret-topic")


def _dialog(qtbot, settings: Settings) -> SettingsDialog:
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    return dialog


def _find(dialog: SettingsDialog, name: str):
    found = dialog.findChild(QWidget, name)
    assert found is not None, name
    return found


def test_push_destinations_round_trip_through_the_dialog(qtbot) -> None:
    settings = replace(changed_settings(), push=(NTFY, MAIL))
    dialog = _dialog(qtbot, settings)
    shown, problems = dialog.settings()
    assert problems == [] and shown.push == (NTFY, MAIL) and same(shown, settings)
    for index in (1, 0, 1):  # switching back and forth changes nothing
        _find(dialog, "push_list").setCurrentRow(index)
    assert dialog.settings()[0].push == (NTFY, MAIL)


def test_a_destination_is_added_edited_and_removed(qtbot) -> None:
    dialog = _dialog(qtbot, Settings())
    applied: list[Settings] = []
    dialog.settings_applied.connect(applied.append)
    _find(dialog, "push_add").click()
    kind = _find(dialog, "push_kind")
    kind.setCurrentIndex(kind.findData("webhook"))
    assert dialog.problem.text().startswith("push[1]:")  # no URL yet: refused with the reason
    _find(dialog, "push_url").setText("https://hooks.example.com/gpu")
    _find(dialog, "push_severity_info").setChecked(False)
    _find(dialog, "push_quiet_hours").setText("23:00-06:30")
    rules = _find(dialog, "push_rules")
    for row in range(rules.count()):
        item = rules.item(row)
        wanted = item.data(Qt.ItemDataRole.UserRole) == "xid"
        item.setCheckState(Qt.CheckState.Checked if wanted else Qt.CheckState.Unchecked)
    assert dialog.problem.text() == ""
    assert dialog.apply()
    (settings,) = applied
    assert settings.push == (
        PushDestination(
            "webhook",
            url="https://hooks.example.com/gpu",
            rules=("xid",),
            severities=("warning", "critical"),
            quiet_hours="23:00-06:30",
        ),
    )
    _find(dialog, "push_remove").click()
    assert dialog.apply() and applied[-1].push == ()


def test_email_fields_show_for_email_only_and_secrets_are_masked(qtbot) -> None:
    dialog = _dialog(qtbot, replace(Settings(), push=(NTFY, MAIL)))
    page = _find(dialog, "push_page")
    push_list = _find(dialog, "push_list")
    push_list.setCurrentRow(0)
    assert _find(dialog, "push_url").isVisibleTo(page) and not _find(dialog, "push_smtp_host").isVisibleTo(page)
    push_list.setCurrentRow(1)
    assert not _find(dialog, "push_url").isVisibleTo(page) and _find(dialog, "push_smtp_host").isVisibleTo(page)
    assert _find(dialog, "push_password").echoMode() == QLineEdit.EchoMode.Password
    assert _find(dialog, "push_token").echoMode() == QLineEdit.EchoMode.Password
    assert _find(dialog, "push_url").echoMode() == QLineEdit.EchoMode.PasswordEchoOnEdit
    shown = [page.toolTip()] + [w.toolTip() for w in page.findChildren(QWidget)]
    shown += [push_list.item(row).text() for row in range(push_list.count())]
    shown += [push_list.item(row).toolTip() for row in range(push_list.count())]
    for secret in SECRETS:
        assert not any(secret in text for text in shown), secret
    assert [push_list.item(row).text() for row in range(push_list.count())] == ["ntfy ntfy.example.com", "on call"]


def test_the_page_says_pause_and_snooze_quiet_push_too(qtbot) -> None:
    dialog = _dialog(qtbot, Settings())
    note = _find(dialog, "push_pause_note").text()
    assert "Pausing" in note and "snoozing" in note


class Transport:
    """A transport that records what it was given, on which thread, and answers as told."""

    def __init__(self, error: str = "") -> None:
        self.error = error
        self.sent: list[tuple[PushDestination, Message]] = []
        self.threads: list[threading.Thread] = []

    def __call__(self, destination: PushDestination, message: Message, timeout_s: float) -> None:
        assert timeout_s <= 10.0
        self.threads.append(threading.current_thread())
        self.sent.append((destination, message))
        if self.error:
            raise DeliveryError(self.error)


@pytest.mark.parametrize(("error", "words"), [("", "was sent"), ("it answered HTTP 403 Forbidden", "HTTP 403")])
def test_send_test_notification_says_the_result_in_one_sentence(qtbot, error: str, words: str) -> None:
    dialog = _dialog(qtbot, replace(Settings(), push=(NTFY,)))
    transport = Transport(error)
    dialog.push_page.transport = transport
    button = _find(dialog, "push_test")
    result = _find(dialog, "push_test_result")
    button.click()
    qtbot.waitUntil(lambda: words in result.text(), timeout=5000)
    assert button.isEnabled()
    ((destination, message),) = transport.sent
    # Sent as the page shows it, whatever its severities and quiet hours: a test must go out.
    assert destination.url == NTFY.url and destination.quiet_hours == "" and "info" in destination.severities
    assert "test" in message.title.lower()
    assert transport.threads[0] is not threading.main_thread()
    text = result.text()
    assert text.endswith(".") and "\n" not in text and "tk_verysecret" not in text and "secret-topic" not in text


def test_a_destination_that_cannot_work_is_not_tested(qtbot) -> None:
    dialog = _dialog(qtbot, replace(Settings(), push=(PushDestination("webhook", url="ftp://nowhere"),)))
    transport = Transport()
    dialog.push_page.transport = transport
    _find(dialog, "push_test").click()
    assert "url should be" in _find(dialog, "push_test_result").text() and transport.sent == []


def test_the_running_app_takes_changed_destinations_and_says_a_failing_one_in_the_window(qtbot, tmp_path) -> None:
    from tests.helpers import closed_port_url, simulated_source
    from tests.test_push import CRITICAL_NOTICE
    from trayvml.config import SettingsStore
    from trayvml.platform.autostart import XdgAutostart
    from trayvml.platform.notifiers import FanOutNotifier, NoNotifier
    from trayvml.platform.push import PushNotifier
    from trayvml.ui.app import App

    app = App(None, store=SettingsStore(tmp_path / "config.toml"), autostart=XdgAutostart(tmp_path))
    app._use_notifier(NoNotifier())
    assert app.push is None and isinstance(app.notifier, NoNotifier)
    dead = PushDestination("webhook", url=closed_port_url() + "/hook", name="phone")
    app.apply_settings(replace(app.settings, push=(dead,)))  # no restart
    first = app.push
    assert first is not None and first.destinations == (dead,) and isinstance(app.notifier, FanOutNotifier)
    # One quick try, no back-off, so that the failure shows at once.
    first.close()
    app.push = PushNotifier((dead,), attempts=1, backoff_s=0.0, timeout_s=1.0, status_file=tmp_path / "status.json")
    app._combine_notifiers()
    app.notifier.notify(CRITICAL_NOTICE)
    qtbot.waitUntil(lambda: app.push.idle() and bool(app.push.problems()), timeout=10_000)
    window = app.ensure_window()
    qtbot.addWidget(window)
    app.show_window()  # a hidden window updates nothing
    source, _, _ = simulated_source("idle:gpus=h100")
    app.on_sample(source.sample())
    qtbot.waitUntil(lambda: "Alerts could not be pushed to phone" in window.status_label.text())  # at its redraw
    app.apply_settings(replace(app.settings, push=()))  # removed: closed, and only the desktop's left
    assert app.push is None and isinstance(app.notifier, NoNotifier)
    app.sampler.stop()
    app.tray.icon.hide()


def test_desktop_notifications_off_still_pushes(qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_push import CRITICAL_NOTICE
    from trayvml.config import SettingsStore
    from trayvml.platform.autostart import XdgAutostart
    from trayvml.platform.notifiers import NoNotifier

    class Kept(NoNotifier):
        def __init__(self) -> None:
            self.titles: list[str] = []

        def notify(self, notice) -> None:
            self.titles.append(notice.title)

    from trayvml.ui.app import App

    app = App(None, store=SettingsStore(tmp_path / "config.toml"), autostart=XdgAutostart(tmp_path))
    desktop, push = Kept(), Kept()
    app._use_notifier(desktop)
    app.apply_settings(replace(app.settings, notifications=False))
    assert not app.dispatcher.notifications_on  # nowhere to go: the Alerts tab says "notifications are off"
    app.apply_settings(replace(app.settings, push=(NTFY,)))  # a destination: alerts go somewhere again
    present(app.push).close()
    monkeypatch.setattr(app, "push", push)  # stands for the destinations' notifier, to see what it gets
    app._combine_notifiers()
    assert app.dispatcher.notifications_on
    app.notifier.notify(CRITICAL_NOTICE)
    assert push.titles == [CRITICAL_NOTICE.title] and desktop.titles == []  # the phone hears, the desktop not
    app.apply_settings(replace(app.settings, notifications=True))
    app.notifier.notify(CRITICAL_NOTICE)
    assert desktop.titles == [CRITICAL_NOTICE.title] and len(push.titles) == 2
    app.sampler.stop()
    app.tray.icon.hide()


def test_clicking_an_alerts_tray_balloon_opens_the_alerts_tab_and_other_balloons_nothing(qtbot, tmp_path) -> None:
    from trayvml.alerts.severity import Severity
    from trayvml.config import SettingsStore
    from trayvml.platform.autostart import XdgAutostart
    from trayvml.ui.app import App

    app = App(None, store=SettingsStore(tmp_path / "config.toml"), autostart=XdgAutostart(tmp_path))
    shown: list[str] = []
    app.tray.icon.showMessage = lambda title, *rest: shown.append(title)  # type: ignore[method-assign]
    app._say("trayvml speaks the new language from its next start.")
    app.tray.icon.messageClicked.emit()
    assert shown == ["trayvml"] and app.window is None  # a word from trayvml itself: clicking opens nothing
    app._show_alert_balloon("GPU 0: temperature critical", "body", Severity.CRITICAL)
    app.tray.icon.messageClicked.emit()
    assert app.window is not None and app.window.tabs.currentWidget() is app.window.alert_table
    app.window.close()
    app.sampler.stop()
    app.tray.icon.hide()
