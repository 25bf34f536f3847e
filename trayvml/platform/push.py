"""Alerts pushed beyond this desktop: ntfy, a JSON webhook, Slack or Mattermost, e-mail over SMTP.

A ``PushNotifier`` is a notifier like the desktop's (``notify(notice)``, ``close()``): the same
notices, grouped and worded by trayvml.alerts.grouping, with this machine's name in the title (away
from the desk, which box is the first question). Each destination chooses its rules and severities,
and quiet hours in which only critical alerts go out; a "back to normal" goes where its alert went.

Delivery is on a thread of its own so that a slow or dead receiver never holds up sampling: a
bounded queue (the oldest dropped, and counted), a timeout per attempt, a few retries with backoff.
A failing destination is said once (in the log and in ``problems()``), not at every alert, and its
last failure is kept in a small status file that ``trayvml doctor`` reads. Secrets (passwords,
tokens, a URL's user:password and its path and query, which for ntfy's topics and Slack's webhooks
are the secret) are never printed or logged: ``redact``.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import logging
import math
import os
import smtplib
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Any

from trayvml.alerts.grouping import Notice
from trayvml.alerts.severity import Severity, host_prefix
from trayvml.config import SEVERITY_NAMES, PushDestination
from trayvml.core.clock import Clock, SystemClock
from trayvml.core.files import LOCKS, try_lock, write_atomically
from trayvml.core.i18n import translate
from trayvml.core.safe_text import terminal_text

log = logging.getLogger(__name__)

TIMEOUT_S = 10.0  # per attempt: a receiver that has not answered by then is not answering
ATTEMPTS = 3  # the first try and two retries
BACKOFF_S = 2.0  # before the first retry; doubled before each next one
MAX_QUEUED = 100  # beyond this the oldest waiting message is dropped (and counted)
CLOSE_WAIT_S = 15.0  # what close() gives the queue to drain, at most
ATTEMPT_MARGIN_S = 2.0  # beyond the timeout, before a try is given up on as a whole
SMTP_PORTS = {"starttls": 587, "ssl": 465, "none": 25}
HIDDEN = "***"

# ntfy's priorities 1-5 and its tags (emoji shortcodes), per https://docs.ntfy.sh/publish/.
NTFY_PRIORITY = {Severity.CRITICAL: "5", Severity.WARNING: "4", Severity.INFO: "3"}
NTFY_TAGS = {Severity.CRITICAL: "rotating_light", Severity.WARNING: "warning", Severity.INFO: "information_source"}


RETRY_AFTER_MAX_S = 60.0  # the longest a receiver's Retry-After holds a destination's next try
REASON_LIMIT = 300  # characters of a failure said (a receiver's answer in it is cleaned and cut)


class DeliveryError(Exception):
    """A destination did not take a message; the message is safe to show (no secrets in it).

    ``retry``: whether another try could go otherwise (not where the receiver refused the message
    itself, or took it for some recipients: a retry sends those a copy); ``retry_after_s``: how long
    the receiver asked to be left before the next (HTTP 429 and 503's Retry-After; NaN: not said)."""

    def __init__(self, reason: str, retry: bool = True, retry_after_s: float = math.nan) -> None:
        super().__init__(terminal_text(reason, REASON_LIMIT))
        self.retry = retry
        self.retry_after_s = retry_after_s


def secrets_of(destination: PushDestination) -> list[str]:
    """What must never be shown of a destination: its password and token, and its URL's user
    information, path and query (an ntfy topic, a Slack webhook's key and a token in a query are
    each as good as a password)."""
    found = [destination.password, destination.token]
    if destination.url:
        parts = urllib.parse.urlsplit(destination.url)
        found += [parts.password or "", parts.username or "", parts.path.strip("/"), parts.query, destination.url]
        found += [urllib.parse.unquote(parts.password or "")]
    return sorted({s for s in found if len(s) >= 3}, key=len, reverse=True)  # longest first: no partial leftovers


def redact(text: str, destination: PushDestination) -> str:
    for secret in secrets_of(destination):
        text = text.replace(secret, HIDDEN)
    return text


def destination_name(destination: PushDestination) -> str:
    """How messages call a destination: its name, else its kind and host (never its path or user)."""
    if destination.name:
        return redact(destination.name, destination)
    host = destination.smtp_host if destination.kind == "email" else urllib.parse.urlsplit(destination.url).hostname
    return f"{destination.kind} {host or '?'}"


def destination_names(destinations: Sequence[PushDestination]) -> list[str]:
    """Each destination's name (destination_name), numbered where two would be called alike (two
    ntfy topics on ntfy.sh): the status file keeps each one's failures apart by it."""
    names = [destination_name(d) for d in destinations]
    return [name if names.count(name) == 1 else f"{name} ({names[:k].count(name) + 1})" for k, name in enumerate(names)]


def in_quiet_hours(destination: PushDestination, minute_of_day: int) -> bool:
    """Whether ``minute_of_day`` (local) lies in the destination's quiet hours; they may span midnight."""
    window = destination.quiet_window()
    if window is None:
        return False
    start, end = window
    if start <= end:
        return start <= minute_of_day < end
    return minute_of_day >= start or minute_of_day < end


def local_minute(now_s: float) -> int:
    moment = time.localtime(now_s)
    return moment.tm_hour * 60 + moment.tm_min


@dataclass(frozen=True)
class Message:
    """One notice as pushed: its words with this machine named, and what a webhook also carries."""

    title: str
    body: str
    severity: Severity
    resolved: bool
    host: str
    rule: str
    gpus: tuple[int, ...]
    timestamp_s: float
    simulated: bool = False  # of simulated GPUs (--simulate): said in the title and a webhook's JSON


@dataclass
class DestinationStatus:
    """What a caller (the tray, doctor) can show of a destination."""

    name: str
    kind: str
    sent: int = 0
    failures: int = 0
    failing: bool = False
    last_failure: str = ""  # redacted
    last_failure_s: float = 0.0


def _header(text: str) -> str:
    """An HTTP header value: RFC 2047 where it is not ASCII (ntfy decodes it; raw UTF-8 in a header
    is mangled by some proxies and refused by http.client, and titles hold en dashes and Chinese)."""
    if text.isascii():
        return text.replace("\n", " ")
    return "=?UTF-8?B?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def _slack_escape(text: str) -> str:
    # Slack's message formatting: &, < and > are control characters and must be escaped.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def http_request(destination: PushDestination, message: Message) -> urllib.request.Request:
    """The POST for an HTTP destination (ntfy, webhook, slack), credentials in its headers only."""
    parts = urllib.parse.urlsplit(destination.url)
    headers: dict[str, str] = {"User-Agent": "trayvml"}
    if parts.username or parts.password:
        user = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        netloc = parts.hostname or ""
        if ":" in netloc:
            netloc = f"[{netloc}]"
        if parts.port is not None:
            netloc += f":{parts.port}"
        parts = parts._replace(netloc=netloc)
    url = urllib.parse.urlunsplit(parts)
    if destination.kind == "ntfy":
        if destination.token:
            headers["Authorization"] = f"Bearer {destination.token}"
        tag = "white_check_mark" if message.resolved else NTFY_TAGS[message.severity]
        headers["Title"] = _header(message.title)
        headers["Priority"] = "2" if message.resolved else NTFY_PRIORITY[message.severity]
        headers["Tags"] = f"{tag},trayvml"
        headers["Content-Type"] = "text/plain; charset=utf-8"
        data = (message.body or message.title).encode("utf-8")
    elif destination.kind == "slack":
        # Slack's and Mattermost's incoming webhooks both take {"text": ...} with *bold*.
        text = f"*{_slack_escape(message.title)}*\n{_slack_escape(message.body)}".rstrip()
        headers["Content-Type"] = "application/json"
        data = json.dumps({"text": text}).encode("utf-8")
    else:
        headers["Content-Type"] = "application/json"
        data = json.dumps(
            {
                "title": message.title,
                "body": message.body,
                "severity": "resolved" if message.resolved else SEVERITY_NAMES[message.severity],
                "host": message.host,
                "rule": message.rule,
                "gpus": list(message.gpus),
                "timestamp": datetime.fromtimestamp(message.timestamp_s, timezone.utc).isoformat(),
                "simulated": message.simulated,
            },
            ensure_ascii=False,
        ).encode("utf-8")
    return urllib.request.Request(url, data=data, headers=headers, method="POST")


def email_message(destination: PushDestination, message: Message) -> EmailMessage:
    mail = EmailMessage()
    mail["Subject"] = message.title
    mail["From"] = destination.sender
    mail["To"] = ", ".join(destination.to)
    mail["Date"] = format_datetime(datetime.fromtimestamp(message.timestamp_s, timezone.utc))
    mail["Message-ID"] = make_msgid(domain="trayvml")
    mail.set_content(message.body or message.title)
    return mail


Transport = Callable[[PushDestination, Message, float], None]


class _NotRedirected(urllib.request.HTTPRedirectHandler):
    """A destination answering with a redirect is a failure to say, not one to follow: urllib
    would follow a 301 or 302 with a GET without the message (counted as sent: nothing arrives,
    nothing says so), carrying its credentials to the host it names."""

    def redirect_request(self, *args: Any) -> None:
        return None  # urllib then raises the redirect as an HTTPError


class Sender:
    """Sends one message to one destination in one attempt; raises DeliveryError (redacted)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._tls = tls  # tests: a context that trusts their own certificate
        self._opener = urllib.request.build_opener(_NotRedirected, urllib.request.HTTPSHandler(context=tls))

    def __call__(self, destination: PushDestination, message: Message, timeout_s: float) -> None:
        try:
            if destination.kind == "email":
                self._mail(destination, message, timeout_s)
            else:
                self._post(destination, message, timeout_s)
        except urllib.error.HTTPError as error:
            error.close()  # its answer's socket: unclosed, its exception kept it until collected
            raise _http_error(error, destination) from None
        except urllib.error.URLError as error:
            raise DeliveryError(redact(str(error.reason), destination)) from None
        except smtplib.SMTPAuthenticationError:
            raise DeliveryError(translate("push", "the SMTP server refused the user name and password")) from None
        # http.client's own (an answer that is not HTTP: an SMTP banner, TLS spoken to http://; a
        # URL it will not send): each ended the destination's thread, its queue never sent again.
        except (smtplib.SMTPException, http.client.HTTPException, OSError, ValueError) as error:
            raise DeliveryError(redact(str(error) or type(error).__name__, destination)) from None

    def _post(self, destination: PushDestination, message: Message, timeout_s: float) -> None:
        """The message POSTed, its answer read within ``timeout_s`` in all (the socket's timeout
        is each read's: a receiver sending a byte a second held the thread for good)."""
        deadline_s = time.monotonic() + timeout_s
        with self._opener.open(http_request(destination, message), timeout=timeout_s) as response:
            for _ in range(ANSWER_READS):
                if not response.read1(1024) or time.monotonic() > deadline_s:
                    break

    def _mail(self, destination: PushDestination, message: Message, timeout_s: float) -> None:
        port = destination.smtp_port or SMTP_PORTS[destination.security]
        context = self._tls or ssl.create_default_context()
        server: smtplib.SMTP
        if destination.security == "ssl":
            server = smtplib.SMTP_SSL(destination.smtp_host, port, timeout=timeout_s, context=context)
        else:
            server = smtplib.SMTP(destination.smtp_host, port, timeout=timeout_s)
        try:
            if destination.security == "starttls":
                server.starttls(context=context)
            if destination.username:
                server.login(destination.username, destination.password)
            refused = server.send_message(email_message(destination, message))
        finally:
            # Sent once the server took the message: its answer to QUIT (or none) changes nothing,
            # where it made the whole message go again (three copies, and said to have failed).
            with contextlib.suppress(smtplib.SMTPException, OSError):
                server.quit()
            server.close()
        if refused:  # the others have it: a retry would send them a copy
            said = translate("push", "the SMTP server refused {addresses}").format(addresses=", ".join(sorted(refused)))
            raise DeliveryError(said, retry=False)


ANSWER_READS = 4  # a receiver's answer is read up to 4 KiB (its body says nothing trayvml uses)


def _http_error(error: urllib.error.HTTPError, destination: PushDestination) -> DeliveryError:
    """What an HTTP error answer says, in words of trayvml's (the receiver's reason phrase is its
    own text: escape sequences, any length), and whether a retry may go otherwise: a 4xx but for
    408 and 429 refuses the message itself; 429 and 503 may say when to try again."""
    reason = http.client.responses.get(error.code, "")
    location = error.headers.get("Location", "") if 300 <= error.code < 400 and error.headers else ""
    if location:
        moved = translate("push", "it answered HTTP {code} {reason}, to {location}: give that address instead")
        said = moved.format(code=error.code, reason=reason, location=redact(location, destination))
        return DeliveryError(said, retry=False)
    said = translate("push", "it answered HTTP {code} {reason}").format(code=error.code, reason=reason)
    retry = not 400 <= error.code < 500 or error.code in (408, 429)
    return DeliveryError(
        said.rstrip(), retry, _retry_after_s(error.headers.get("Retry-After", "") if error.headers else "")
    )


def _retry_after_s(value: str) -> float:
    """A Retry-After header's seconds (its date form is rare from push services: not read); NaN: none."""
    try:
        seconds = float(value.strip())
    except ValueError:
        return math.nan
    return min(max(seconds, 0.0), RETRY_AFTER_MAX_S) if math.isfinite(seconds) else math.nan


def _target(destination: PushDestination) -> tuple[object, ...]:
    """Where a destination's messages go, whatever else of it is set."""
    if destination.kind == "email":
        return (destination.kind, destination.smtp_host, destination.smtp_port, destination.sender, destination.to)
    return (destination.kind, destination.url)


class PushNotifier:
    """Pushes notices to the destinations in the settings, each on a thread of its own."""

    def __init__(
        self,
        destinations: Sequence[PushDestination],
        clock: Clock | None = None,
        host: str | None = None,
        send: Transport | None = None,
        status_file: Path | None = None,
        minute_of_day: Callable[[float], int] = local_minute,
        simulated: bool = False,
        timeout_s: float = TIMEOUT_S,
        attempts: int = ATTEMPTS,
        backoff_s: float = BACKOFF_S,
        max_queued: int = MAX_QUEUED,
    ) -> None:
        self.destinations = tuple(destinations)
        self._clock = clock or SystemClock()
        self.host = socket.gethostname() if host is None else host
        self._send = send or Sender()
        self._status_file = status_file
        self._minute_of_day = minute_of_day
        self._timeout_s = timeout_s
        self._attempts = max(1, attempts)
        self._backoff_s = backoff_s
        self._max_queued = max_queued
        # This machine's GPUs are simulated: its notices say so (a try-out must not page anyone as real).
        self.simulated = simulated
        self.statuses = [
            DestinationStatus(name, d.kind)
            for name, d in zip(destination_names(destinations), destinations, strict=True)
        ]
        # Failing when last written (an earlier run): its first send that works clears the file's
        # word, which doctor reads; kept, it said "could not be pushed" after every later success.
        saved = read_status(status_file) if status_file is not None else {}
        self._failing_on_file = {
            s.name for s in self.statuses if isinstance(saved.get(s.name), dict) and saved[s.name].get("failing")
        }
        self.dropped = 0  # messages dropped from a full queue
        self._told: list[dict[tuple[str, tuple[int, str]], Severity]] = [{} for _ in self.destinations]
        # A queue and a thread a destination: one that hangs (10 s a try, three tries, backoff)
        # held every other destination's messages back behind each of its own.
        self._queues: list[deque[Message]] = [deque() for _ in self.destinations]
        self._lock = threading.Condition()
        self._closing = threading.Event()
        self._busy = [False] * len(self.destinations)
        self._tries: list[threading.Thread | None] = [None] * len(self.destinations)  # each one's last try
        # By destination: an earlier notifier's and its index there, whose message in flight goes first.
        self._after: dict[int, tuple[PushNotifier, int]] = {}
        self._status_lock = threading.Lock()  # the status file, written by every destination's thread
        # One process pushes a state folder's alerts (the tray and `trayvml record` side by side
        # pushed each one twice): the one holding the lock beside its status file (push_lock).
        self._push_lock: int | None = None
        self._other_pushes = False  # said once a spell: another process holds it
        self._threads = [
            threading.Thread(target=self._run, args=(index,), name=f"trayvml-push {index}", daemon=True)
            for index in range(len(self.destinations))
        ]
        for thread in self._threads:
            thread.start()

    # ---- what goes where ----
    def wants(self, index: int, notice: Notice, now_s: float) -> bool:
        """Whether destination ``index`` should get ``notice`` (remembering what it was told)."""
        destination = self.destinations[index]
        rule = notice.key[1]
        if destination.rules and rule not in destination.rules:
            return False
        quiet = in_quiet_hours(destination, self._minute_of_day(now_s))
        told = self._told[index]
        key = (notice.host, notice.key)
        if notice.resolved:
            # "Back to normal" goes where the alert went; in quiet hours only an alert that woke someone.
            severity = told.pop(key, None)
            return severity is not None and (not quiet or severity is Severity.CRITICAL)
        if SEVERITY_NAMES[notice.severity] not in destination.severities:
            return False
        if quiet and notice.severity is not Severity.CRITICAL:
            return False
        told[key] = max(notice.severity, told.get(key, Severity.INFO))
        return True

    def _pushes(self) -> bool:
        """Whether this process is the one that pushes (see _push_lock), taking the lock where it
        is free (the other process gone): always, without a status file or flock."""
        if self._push_lock is not None or self._status_file is None or not LOCKS:
            return True
        try:
            lock = try_lock(self._status_file.with_suffix(".lock"))
        except OSError:
            return True  # no lock to be had: pushed, as before it
        if lock is None:
            if not self._other_pushes:
                log.warning("push: another trayvml process (the tray, or `trayvml record`) pushes these alerts")
            self._other_pushes = True
            return False
        self._push_lock, self._other_pushes = lock, False
        return True

    def notify(self, notice: Notice) -> None:
        # This machine's alerts only: a remote host's are the tray's alone (record reads no host).
        # What each destination was told is kept either way: the process that takes over sends a
        # resolution where the other sent its alert.
        pushes = bool(notice.host) or self._pushes()
        now_s = self._clock.now_s()
        title = notice.title if notice.host else host_prefix(self.host) + notice.title
        # Made-up GPUs, as the host's own samples say (a remote one too), or this machine's as told.
        simulated = notice.simulated or (self.simulated and not notice.host)
        if simulated:
            title = translate("push", "[simulated] {title}").format(title=title)
        message = Message(
            title,
            notice.body,
            notice.severity,
            notice.resolved,
            notice.host or self.host,
            notice.key[1],
            notice.gpus,
            now_s,
            simulated,
        )
        with self._lock:
            for index in range(len(self.destinations)):
                if not self.wants(index, notice, now_s) or not pushes:
                    continue
                queue = self._queues[index]
                if len(queue) >= self._max_queued:
                    queue.popleft()
                    self.dropped += 1
                    if self.dropped == 1:
                        log.warning("push: the queue is full; the oldest messages are dropped")
                queue.append(message)
            self._lock.notify_all()

    def problems(self) -> list[str]:
        """One sentence per failing destination (for a caller to show), redacted."""
        failing = translate("push", "Alerts could not be pushed to {name}: {reason}")
        return [failing.format(name=s.name, reason=s.last_failure) for s in self.statuses if s.failing]

    def idle(self) -> bool:
        """Nothing waiting and nothing being sent (tests wait for this)."""
        with self._lock:
            return not any(self._queues) and not any(self._busy)

    # ---- delivery ----
    def _run(self, index: int) -> None:
        """Destination ``index``'s thread: its messages in order, each until it took it or failed."""
        queue = self._queues[index]
        while True:
            with self._lock:
                while not queue and not self._closing.is_set():
                    self._lock.wait()
                if not queue:
                    return  # closing, and everything was sent
                message = queue.popleft()
                self._busy[index] = True
                after = self._after.pop(index, None)
            if after is not None:
                after[0]._sent_from(after[1], self._timeout_s * self._attempts)
            try:
                self._deliver(index, message)
            finally:
                with self._lock:
                    self._busy[index] = False
                    self._lock.notify_all()

    def _sent_from(self, index: int, wait_s: float) -> None:
        """Waits, ``wait_s`` at most, until destination ``index``'s message in flight is done."""
        with self._lock:
            self._lock.wait_for(lambda: not self._busy[index], timeout=wait_s)

    def _deliver(self, index: int, message: Message) -> None:
        destination = self.destinations[index]
        status = self.statuses[index]
        reason = ""
        wait_s = self._backoff_s
        for attempt in range(self._attempts):
            # Closing: the rest of the queue gets one try each, not a backoff.
            if attempt and (self._closing.is_set() or self._clock.wait_s(wait_s, self._closing)):
                break
            try:
                self._attempt(index, message)
            except DeliveryError as error:
                reason = redact(str(error), destination)
                if not error.retry:
                    break
                asked_s = error.retry_after_s  # a receiver limiting its rate says when: sooner is refused again
                wait_s = max(self._backoff_s * 2**attempt, 0.0 if math.isnan(asked_s) else asked_s)
                continue
            status.sent += 1
            if status.failing or status.name in self._failing_on_file:
                status.failing = False
                self._failing_on_file.discard(status.name)
                log.warning("push: %s works again", status.name)
                self._save_status()
            return
        status.failures += 1
        status.last_failure = reason
        status.last_failure_s = self._clock.now_s()
        if not status.failing:  # said once per spell of failures, not at every alert
            status.failing = True
            log.warning("push: alerts could not be pushed to %s: %s", status.name, reason)
        self._save_status()

    def _attempt(self, index: int, message: Message) -> None:
        """One try, given up on after the timeout and a little more in all: the socket's timeout
        bounds neither a name's look-up (a DNS server away) nor an SMTP server's lines that keep
        coming. The try itself goes on on its own thread until the system gives up on it, so one
        given up on is not tried again (it may still arrive: a slow SMTP server got it twice), and
        the next message's try waits for it a while (a resolution overtook its alert)."""
        destination = self.destinations[index]
        before = self._tries[index]
        if before is not None:
            before.join(self._timeout_s * self._attempts)
        outcome: list[Exception | None] = []

        def attempt() -> None:
            try:
                self._send(destination, message, self._timeout_s)
            except Exception as error:
                outcome.append(error)
            else:
                outcome.append(None)

        sender = threading.current_thread()  # the destination's: its try is named after it
        worker = threading.Thread(target=attempt, name=f"{sender.name} try ({sender.ident})", daemon=True)
        worker.start()
        self._tries[index] = worker
        worker.join(self._timeout_s + ATTEMPT_MARGIN_S)
        if not outcome:
            late = translate("push", "it did not answer within {seconds:g} s")
            raise DeliveryError(late.format(seconds=self._timeout_s), retry=False)
        error = outcome[0]
        if isinstance(error, DeliveryError):
            raise error
        if error is not None:
            # A fault of trayvml's own (a transport's bug): said by its kind only (its words may
            # quote a secret), and the destination's thread goes on with the next message.
            log.error("push: sending to %s failed: %s", destination_name(destination), type(error).__name__)
            raise DeliveryError(type(error).__name__, retry=False)

    def _save_status(self) -> None:
        """What doctor shows: each destination's last failure (redacted), written atomically."""
        with self._status_lock:  # every destination's thread writes it: each its whole state, in turn
            if self._status_file is None:
                return
            document = {
                s.name: {"failing": s.failing, "last_failure": s.last_failure, "last_failure_s": s.last_failure_s}
                for s in self.statuses
            }
            with contextlib.suppress(OSError):  # a status file is a courtesy: never a reason to stop pushing
                data = json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8")
                write_atomically(self._status_file, data)

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Send what is queued (one try each), waiting ``wait_s`` at most, then stop (its thread
        goes on with the queue after a shorter wait: a daemon, it ends with the process)."""
        with self._lock:
            self._closing.set()
            self._lock.notify_all()
        deadline_s = time.monotonic() + wait_s
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline_s - time.monotonic()))
        with self._lock:
            lock, self._push_lock = self._push_lock, None
        if lock is not None:
            os.close(lock)  # (a thread still sending finishes its queue on its own)

    def carry_over(self, earlier: PushNotifier) -> None:
        """What ``earlier`` told each destination this one has too (the settings changed), and what
        it had yet to send there (the message it is sending stays its own): a resolution goes
        where its alert went, after it, as without the change."""
        with earlier._status_lock:  # the file is this one's now: the earlier's last sends say nothing there
            earlier._status_file = None
        with earlier._lock:  # and so is the right to push
            handed, earlier._push_lock = earlier._push_lock, None
        if handed is not None and self._push_lock is None:
            self._push_lock = handed
        elif handed is not None:
            os.close(handed)
        targets = [_target(d) for d in earlier.destinations]
        with earlier._lock, self._lock:
            for index, destination in enumerate(self.destinations):
                if _target(destination) in targets:  # its quiet hours, rules or name edited: the same place
                    was = targets.index(_target(destination))
                    self._told[index] = dict(earlier._told[was])
                    self._queues[index].extendleft(reversed(earlier._queues[was]))
                    earlier._queues[was].clear()
                    if earlier._busy[was]:  # sending one: this one's go out after it
                        self._after[index] = (earlier, was)
            self._lock.notify_all()


def default_status_file(simulated: bool = False) -> Path:
    """Beside the history in the user's state folder; simulated GPUs' alerts keep theirs apart."""
    from trayvml.core.files import state_folder

    name = "push-status-simulated.json" if simulated else "push-status.json"
    return state_folder() / name


def read_status(path: Path) -> dict[str, dict[str, object]]:
    """The status file a PushNotifier wrote (doctor): {} when there is none or it is unreadable."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}
