"""Desktop notifications: freedesktop's org.freedesktop.Notifications over D-Bus, through jeepney.

(QtDBus cannot marshal the uint32 that ``Notify`` takes from Python, so it cannot send one.)
A notice (trayvml.alerts.grouping) with the key of an earlier one replaces it in place (``replaces_id``)
rather than piling up.
Where the server offers actions, "Open graphs" and "Snooze 1 h" come back through
``on_action``, called from a listener thread.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any, Protocol

from trayvml.alerts.dispatch import KERNEL
from trayvml.alerts.grouping import Notice
from trayvml.alerts.severity import Severity
from trayvml.core.i18n import QT_TRANSLATE_NOOP, translate
from trayvml.core.safe_text import clean, notification_text

log = logging.getLogger(__name__)

ACTIONS = (("open", QT_TRANSLATE_NOOP("notify", "Open graphs")), ("snooze", QT_TRANSLATE_NOOP("notify", "Snooze 1 h")))
# Offered only by the notices that carry them (Notice.actions).
OWN_ACTIONS = ((KERNEL, QT_TRANSLATE_NOOP("notify", "Shut down kernel…")),)
AlertKey = tuple[int, str]  # (GPU index, or notices.GROUP / alerts.MACHINE; rule)
ActionHandler = Callable[[str, AlertKey], None]


def action_list(notice: Notice) -> list[str]:
    """Notify's actions for ``notice``: key, label, key, label… A remote host's alert and a resolved
    one have none: "Open graphs" and "Snooze" act on this machine's GPUs."""
    if notice.resolved or notice.host:
        return []
    offered = [*ACTIONS, *((key, label) for key, label in OWN_ACTIONS if key in notice.actions)]
    return [part for key, label in offered for part in (key, translate("notify", label))]


def without_actions(notice: Notice) -> str:
    """``notice``'s body where the notification cannot carry its own actions (the tray's balloon, a
    server without actions): where to find them instead."""
    if KERNEL not in notice.actions or notice.resolved or notice.host:
        return notice.body
    where = translate(
        "notify",
        "To shut the kernel down, open the active alerts from the tray menu: the alert offers Shut down kernel…",
    )
    return f"{notice.body}\n{where}" if notice.body else where


class Notifier(Protocol):
    def notify(self, notice: Notice) -> None: ...

    def close(self) -> None: ...


def _dbus_errors() -> tuple[type[BaseException], ...]:
    from jeepney import DBusErrorResponse

    return (OSError, TimeoutError, ValueError, DBusErrorResponse)


_DBUS_ERRORS = _dbus_errors() if sys.platform == "linux" else (OSError,)
_START_ERRORS: tuple[type[BaseException], ...] = (*_DBUS_ERRORS, KeyError)  # KeyError: no session bus at all


class NotificationsUnavailableError(Exception):
    """No notification service answers on this session bus."""


class FreedesktopNotifier:
    def __init__(self, on_action: ActionHandler, icon: str = "trayvml") -> None:
        from jeepney import DBusAddress
        from jeepney.io.blocking import open_dbus_connection

        self._on_action = on_action
        self._icon = icon
        self._address = DBusAddress(
            "/org/freedesktop/Notifications",
            bus_name="org.freedesktop.Notifications",
            interface="org.freedesktop.Notifications",
        )
        try:
            self._connection = open_dbus_connection(bus="SESSION")
            capabilities = self._call("GetCapabilities", "", ())[0]
        except _START_ERRORS as error:
            raise NotificationsUnavailableError(str(error)) from error
        self.actions = "actions" in capabilities
        self.markup = "body-markup" in capabilities
        self._ids: dict[tuple[str, int, str], int] = {}  # (host, GPU, rule): a remote GPU 0 is not ours
        self._keys: dict[int, AlertKey] = {}
        self._lock = threading.Lock()
        self._listener: threading.Thread | None = None
        self._listen_connection: Any = None
        if self.actions:
            # Its own connection, opened here so that close() always finds it.
            from jeepney import MatchRule, message_bus

            self._action_rule = MatchRule(
                type="signal", interface="org.freedesktop.Notifications", member="ActionInvoked"
            )
            try:
                self._listen_connection = open_dbus_connection(bus="SESSION")
                self._listen_connection.send_and_get_reply(message_bus.AddMatch(self._action_rule), timeout=5)
            except _START_ERRORS as error:
                log.warning("notification actions will not be heard: %s", error)
                self.actions = False
                if self._listen_connection is not None:
                    self._listen_connection.close()
                    self._listen_connection = None
            else:
                self._listener = threading.Thread(target=self._listen, name="trayvml-notification-actions", daemon=True)
                self._listener.start()

    def _call(self, method: str, signature: str, body: tuple) -> Any:
        from jeepney import new_method_call

        reply = self._connection.send_and_get_reply(new_method_call(self._address, method, signature, body), timeout=5)
        return reply.body

    def notify(self, notice: Notice) -> None:
        key = notice.key
        # Text from the system (process names) must not be read as markup, nor fail to encode.
        body = notification_text(notice.body if self.actions else without_actions(notice), self.markup)
        actions = action_list(notice) if self.actions else []
        hints = {
            "urgency": ("y", notice.urgency),
            "desktop-entry": ("s", "trayvml"),
            "category": ("s", "device"),
        }
        with self._lock:
            replaces = self._ids.get((notice.host, *key), 0)
            try:
                (notification_id,) = self._call(
                    "Notify",
                    "susssasa{sv}i",
                    ("trayvml", replaces, self._icon, clean(notice.shown_title()), body, actions, hints, -1),
                )
            except _DBUS_ERRORS as error:  # the service went away: say so in the log, carry on
                log.warning("could not send a desktop notification: %s", error)
                return
            self._ids[(notice.host, *key)] = notification_id
            self._keys[notification_id] = key

    def _listen(self) -> None:
        connection = self._listen_connection
        try:
            with connection.filter(self._action_rule) as queue:
                while True:
                    message = connection.recv_until_filtered(queue)
                    notification_id, action = message.body
                    with self._lock:
                        key = self._keys.get(notification_id)
                    if key is not None:
                        self._on_action(action, key)
        except _DBUS_ERRORS as error:  # the bus closed: no more actions to hear
            log.info("notification action listener stopped: %s", error)

    def close(self) -> None:
        self._connection.close()
        listening = self._listen_connection
        if listening is None:
            return
        # Shut the socket down, wait for the listener, and only then close the socket. Its end
        # of file wakes the listener's blocked receive, but a close right behind the shutdown
        # can take that wake-up back (epoll then waits on for ever): quitting stalled for the
        # join's whole timeout, which stays only as a safety net.
        with contextlib.suppress(OSError):
            listening.sock.shutdown(socket.SHUT_RDWR)
        if self._listener is not None:
            self._listener.join(timeout=5)
        listening.close()


class TrayMessageNotifier:
    """Where no notification service answers (and on Windows and macOS): the tray's own balloon.

    ``markup``: whether the tray hands its messages to a notification server (Qt does so for a
    StatusNotifierItem, and servers read markup), rather than showing them as plain text.
    """

    def __init__(self, show: Callable[[str, str, Severity], None], markup: bool = False) -> None:
        self._show = show
        self._markup = markup

    def notify(self, notice: Notice) -> None:
        body = notification_text(without_actions(notice), self._markup)
        self._show(clean(notice.shown_title()), body, notice.severity)

    def close(self) -> None:
        pass  # nothing held


class NoNotifier:
    """Where notifications are not wanted or nowhere to go (a headless recorder, a test): says nothing."""

    def notify(self, notice: Notice) -> None:
        log.debug("not shown (no notifier): %s", notice.shown_title())

    def close(self) -> None:
        pass


def notifier_for_desktop(
    on_action: ActionHandler, icon: str, show: Callable[[str, str, Severity], None], markup: bool = False
) -> Notifier:
    """The desktop's notification service where one answers (Linux, D-Bus), else the tray's balloon
    (``show``; ``markup``: see TrayMessageNotifier). Takes a D-Bus round trip: not on a GUI thread."""
    if sys.platform == "linux":
        try:
            return FreedesktopNotifier(on_action, icon)
        except NotificationsUnavailableError:
            pass  # no notification service: the tray's own balloon will do
    return TrayMessageNotifier(show, markup=markup)


class FanOutNotifier:
    """Several notifiers as one (the desktop's and the push destinations'): each notice goes to
    each, and one failing never keeps it from the others."""

    def __init__(self, notifiers: list[Notifier]) -> None:
        self.notifiers = notifiers

    def notify(self, notice: Notice) -> None:
        for notifier in self.notifiers:
            try:
                notifier.notify(notice)
            except Exception:  # a bug in one must not silence the rest: logged with its traceback
                log.exception("a notifier failed: %s", type(notifier).__name__)

    def close(self) -> None:
        for notifier in self.notifiers:
            notifier.close()
