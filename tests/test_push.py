"""Alerts pushed beyond the desktop (trayvml/platform/push.py), against real receivers: an HTTP
server in a thread for ntfy, webhooks and Slack, and aiosmtpd for e-mail."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import email
import email.header
import email.policy
import http.client
import ipaddress
import json
import logging
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from trayvml import cli
from trayvml.alerts.grouping import GROUP, MACHINE, NORMAL, Notice
from trayvml.alerts.severity import Severity
from trayvml.config import PushDestination, Settings, from_toml, problems, to_toml
from trayvml.core.clock import ManualClock
from trayvml.platform.notifiers import FanOutNotifier
from trayvml.platform.push import DeliveryError, Message, PushNotifier, Sender, read_status

CRITICAL_NOTICE = Notice(
    (GROUP, "temperature"),
    "GPUs 0–3: temperature ≥ 90 °C",
    "GPU 0 at 92 °C\nCheck the fans.",
    2,
    Severity.CRITICAL,
    gpus=(0, 1, 2, 3),
)
WARNING_NOTICE = Notice(
    (GROUP, "memory_used"), "GPU 1: memory used ≥ 90 %", "A job <x> & more", NORMAL, Severity.WARNING, gpus=(1,)
)
RESOLVED_NOTICE = Notice(
    (GROUP, "memory_used"),
    "GPU 1: memory used back to normal",
    "Back to normal.",
    0,
    Severity.INFO,
    resolved=True,
    gpus=(1,),
)


class Receiver:
    """An HTTP server in a thread that keeps every request it gets."""

    def __init__(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.arrived = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.requests.append(
                    {"method": "POST", "path": self.path, "headers": dict(self.headers.items()), "body": body}
                )
                self.send_response(status)
                self.send_header("Content-Length", "0")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                receiver.arrived.set()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.close()


def wait_idle(notifier: PushNotifier, limit_s: float = 5.0) -> None:
    deadline = time.monotonic() + limit_s
    while not notifier.idle():
        assert time.monotonic() < deadline, "the push notifier never finished"
        time.sleep(0.002)


def push(destinations: list[PushDestination], **options: Any) -> PushNotifier:
    options.setdefault("host", "gpubox")
    options.setdefault("clock", ManualClock())
    return PushNotifier(destinations, **options)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---- formats ----
def test_ntfy_gets_the_body_with_title_priority_tags_and_token(receiver: Receiver) -> None:
    url = f"http://127.0.0.1:{receiver.port}/gpu-alerts-s3cret"
    notifier = push([PushDestination("ntfy", url=url, token="tk_abcdef")])
    notifier.notify(CRITICAL_NOTICE)
    notifier.close()
    (request,) = receiver.requests
    assert request["method"] == "POST" and request["path"] == "/gpu-alerts-s3cret"
    headers = request["headers"]
    # Not ASCII (an en dash, a degree sign): RFC 2047, as ntfy's docs advise for headers.
    assert str(email.header.make_header(email.header.decode_header(headers["Title"]))) == (
        "gpubox: GPUs 0–3: temperature ≥ 90 °C"
    )
    assert headers["Priority"] == "5"
    assert headers["Tags"] == "rotating_light,trayvml"
    assert headers["Authorization"] == "Bearer tk_abcdef"
    assert request["body"].decode("utf-8") == CRITICAL_NOTICE.body


def test_webhook_gets_json_with_host_rule_gpus_and_time(receiver: Receiver) -> None:
    clock = ManualClock(1_800_000_000.0)
    notifier = push([PushDestination("webhook", url=f"http://127.0.0.1:{receiver.port}/hook")], clock=clock)
    notifier.notify(CRITICAL_NOTICE)
    notifier.close()
    (request,) = receiver.requests
    assert request["headers"]["Content-Type"] == "application/json"
    assert json.loads(request["body"]) == {
        "title": "gpubox: GPUs 0–3: temperature ≥ 90 °C",
        "body": CRITICAL_NOTICE.body,
        "severity": "critical",
        "host": "gpubox",
        "rule": "temperature",
        "gpus": [0, 1, 2, 3],
        "timestamp": "2027-01-15T08:00:00+00:00",
        "simulated": False,
    }


@pytest.mark.parametrize("code", [301, 302, 307])
def test_a_destination_that_redirects_is_a_failure_said_not_a_message_lost(code: int, receiver: Receiver) -> None:
    """A 301 or 302 was followed with a GET without the message, counted as sent, the token
    carried to the other host: nothing arrived and nothing said so."""
    elsewhere = f"http://localhost:{receiver.port}/moved"
    moving = Receiver(code, {"Location": elsewhere})  # an http:// address behind a proxy that sends all to https
    try:
        url = f"http://127.0.0.1:{moving.port}/gpu-alerts"
        notifier = push([PushDestination("ntfy", url=url, token="tk_abcdef")], attempts=1, backoff_s=0.0)
        notifier.notify(CRITICAL_NOTICE)
        wait_idle(notifier)
        notifier.close()
    finally:
        moving.close()
    assert receiver.requests == []  # not followed: no GET, no token elsewhere
    (problem,) = notifier.problems()
    assert f"HTTP {code}" in problem and f"to {elsewhere}: give that address instead" in problem


def test_a_remote_hosts_notice_keeps_its_own_name(receiver: Receiver) -> None:
    notifier = push([PushDestination("webhook", url=f"http://127.0.0.1:{receiver.port}/")])
    remote = Notice((MACHINE, "gpu_lost"), "node7: GPU 2 lost", "", 2, Severity.CRITICAL, host="node7")
    notifier.notify(remote)
    notifier.close()
    sent = json.loads(receiver.requests[0]["body"])
    assert (sent["title"], sent["host"], sent["gpus"]) == ("node7: GPU 2 lost", "node7", [])


def test_slack_gets_text_escaped_and_basic_auth_from_the_url(receiver: Receiver) -> None:
    url = f"http://user:p%40ss@127.0.0.1:{receiver.port}/hooks/T000/B000/XXXX"
    notifier = push([PushDestination("slack", url=url)])
    notifier.notify(WARNING_NOTICE)
    notifier.close()
    (request,) = receiver.requests
    assert json.loads(request["body"]) == {"text": "*gpubox: GPU 1: memory used ≥ 90 %*\nA job &lt;x&gt; &amp; more"}
    assert request["headers"]["Authorization"] == "Basic " + base64.b64encode(b"user:p@ss").decode()
    assert request["path"] == "/hooks/T000/B000/XXXX"


# ---- which notices go where ----
def test_rules_severities_and_quiet_hours_choose_what_goes_out(receiver: Receiver) -> None:
    url = f"http://127.0.0.1:{receiver.port}/"
    minute = [12 * 60]  # noon, then night
    only_temperature = PushDestination("webhook", url=url, name="temps", rules=("temperature",))
    only_critical = PushDestination("webhook", url=url, name="crit", severities=("critical",))
    quiet = PushDestination("webhook", url=url, name="quiet", quiet_hours="22:00-07:00")
    notifier = push([only_temperature, only_critical, quiet], minute_of_day=lambda now_s: minute[0])
    assert [notifier.wants(i, WARNING_NOTICE, 0) for i in range(3)] == [False, False, True]
    assert [notifier.wants(i, CRITICAL_NOTICE, 0) for i in range(3)] == [True, True, True]
    # Back to normal goes where its alert went, and only there.
    assert [notifier.wants(i, RESOLVED_NOTICE, 0) for i in range(3)] == [False, False, True]
    minute[0] = 23 * 60 + 30  # in the quiet hours, across midnight: only critical
    assert notifier.wants(2, WARNING_NOTICE, 0) is False
    assert notifier.wants(2, CRITICAL_NOTICE, 0) is True
    minute[0] = 6 * 60 + 59
    assert notifier.wants(2, WARNING_NOTICE, 0) is False
    minute[0] = 7 * 60
    assert notifier.wants(2, WARNING_NOTICE, 0) is True
    minute[0] = 23 * 60
    assert notifier.wants(2, RESOLVED_NOTICE, 0) is False  # a warning's "back to normal" waits for no one
    notifier.close()
    assert receiver.requests == []


# ---- failures ----
class RecordingClock(ManualClock):
    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait_s(self, seconds: float, stop: threading.Event) -> bool:
        self.waits.append(seconds)
        return super().wait_s(seconds, stop)


def test_a_dead_destination_is_retried_with_backoff_and_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = RecordingClock()
    url = f"http://127.0.0.1:{closed_port()}/topic-secret-42"
    status_file = tmp_path / "push-status.json"
    notifier = push(
        [PushDestination("ntfy", url=url, token="tk_secret_token")], clock=clock, status_file=status_file, timeout_s=2
    )
    with caplog.at_level(logging.WARNING, logger="trayvml.platform.push"):
        notifier.notify(CRITICAL_NOTICE)
        wait_idle(notifier)
        notifier.notify(WARNING_NOTICE)
        wait_idle(notifier)
    notifier.close()
    assert clock.waits == [2.0, 4.0, 2.0, 4.0]  # three tries per message, backing off
    (status,) = notifier.statuses
    assert (status.failing, status.failures, status.sent) == (True, 2, 0)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "ntfy 127.0.0.1" in said[0]  # once, however many alerts followed
    (problem,) = notifier.problems()
    assert "ntfy 127.0.0.1" in problem and "refused" in problem.lower()
    written = status_file.read_text()
    assert read_status(status_file)["ntfy 127.0.0.1"]["failing"] is True
    for text in [*said, problem, written]:
        assert "topic-secret-42" not in text and "tk_secret_token" not in text


class RawServer:
    """A TCP server in a thread that answers every connection with ``answer`` (bytes, then each
    of ``drip`` a byte at a time every ``drip_s``) and keeps it open a while."""

    def __init__(self, answer: bytes, drip: bytes = b"", drip_s: float = 0.2) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self._closing = threading.Event()

        def serve() -> None:
            while not self._closing.is_set():
                try:
                    connection, _ = self.listener.accept()
                except OSError:
                    return
                self.connections += 1
                with connection, contextlib.suppress(OSError):
                    connection.recv(65536)
                    connection.sendall(answer)
                    for byte in drip:
                        if self._closing.wait(drip_s):
                            break
                        connection.sendall(bytes([byte]))

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self._closing.set()
        self.listener.close()
        self.thread.join(5)


def test_an_answer_that_is_not_http_is_a_failure_said_and_the_destination_goes_on() -> None:
    """A receiver answering in something other than HTTP (an SMTP port given as a webhook):
    http.client's BadStatusLine got past the sender, ended the destination's thread, and its
    queue was never sent again, nothing said."""
    server = RawServer(b"220 smtp.example.com ESMTP ready\r\n")
    try:
        notifier = push([PushDestination("webhook", url=f"http://127.0.0.1:{server.port}/")], attempts=1)
        notifier.notify(CRITICAL_NOTICE)
        wait_idle(notifier)
        notifier.notify(WARNING_NOTICE)
        wait_idle(notifier)
        assert notifier._threads[0].is_alive() and server.connections == 2  # the second went out too
        notifier.close()
    finally:
        server.close()
    (status,) = notifier.statuses
    assert (status.failing, status.failures, status.sent) == (True, 2, 0)
    (problem,) = notifier.problems()
    assert problem.startswith("Alerts could not be pushed to webhook 127.0.0.1: ")


def test_an_answer_that_drips_is_read_within_the_timeout() -> None:
    """The timeout was each read's: a receiver sending its body a byte at a time held the
    destination's thread for as long as it liked (its queue filling, nothing said)."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
    server = RawServer(head, drip=b"x" * 1000, drip_s=0.05)
    try:
        notifier = push([PushDestination("webhook", url=f"http://127.0.0.1:{server.port}/")], timeout_s=1.0)
        notifier.notify(CRITICAL_NOTICE)
        wait_idle(notifier, limit_s=20.0)  # the whole drip takes 50 s
        notifier.close()
    finally:
        server.close()
    assert notifier.statuses[0].sent == 1 and notifier.problems() == []  # it answered 200: taken


def test_a_try_that_never_returns_is_given_up_on_and_said() -> None:
    """The socket's timeout does not bound a name's look-up (a DNS server away) or an SMTP server
    whose lines keep coming: a try that does not end is given up on after the timeout and a
    little more, said as not answering, and the destination goes on."""
    hang = threading.Event()
    tries: list[str] = []

    def stuck(destination: PushDestination, message: Message, timeout_s: float) -> None:
        tries.append(message.title)
        if len(tries) == 1:
            hang.wait(60)

    notifier = push([PushDestination("webhook", url="http://x.invalid/")], send=stuck, timeout_s=0.5, backoff_s=0)
    try:
        notifier.notify(CRITICAL_NOTICE)
        wait_idle(notifier)
        assert notifier.problems() == [
            "Alerts could not be pushed to webhook x.invalid: it did not answer within 0.5 s"
        ]
        assert len(tries) == 1  # not tried again beside it: it may still arrive (a slow SMTP server got two)
        notifier.notify(WARNING_NOTICE)
        wait_idle(notifier)
        assert len(tries) == 2 and notifier.statuses[0].sent == 1 and notifier.problems() == []
    finally:
        hang.set()
        notifier.close()


def test_a_try_given_up_on_still_goes_out_before_the_next_message() -> None:
    """A try given up on goes on on its own thread: the next message's try ran beside it, and
    overtook it (a resolution arrived before the alert it ends)."""
    arrived: list[str] = []

    def slow_first(destination: PushDestination, message: Message, timeout_s: float) -> None:
        if not arrived and message.title.startswith("gpubox: GPUs 0–3"):
            time.sleep(2.8)  # past the timeout and its margin: given up on, and then it arrives
        arrived.append(message.title)

    notifier = push([PushDestination("webhook", url="http://x.invalid/")], send=slow_first, timeout_s=0.3)
    try:
        notifier.notify(CRITICAL_NOTICE)
        notifier.notify(WARNING_NOTICE)
        wait_idle(notifier)
    finally:
        notifier.close()
    assert arrived == ["gpubox: GPUs 0–3: temperature ≥ 90 °C", "gpubox: GPU 1: memory used ≥ 90 %"]


@pytest.mark.parametrize(
    ("code", "headers", "tries", "waits"),
    [
        (429, {"Retry-After": "30"}, 3, [30.0, 30.0]),  # as long as the receiver asked
        (503, {"Retry-After": "86400"}, 3, [60.0, 60.0]),  # at most a minute
        (404, {}, 1, []),  # the message itself refused: no retry
        (500, {}, 3, [2.0, 4.0]),
    ],
)
def test_an_error_answer_is_retried_as_it_says(
    code: int, headers: dict[str, str], tries: int, waits: list[float]
) -> None:
    """Every failure was tried again after 2 s and 4 s: a receiver limiting its rate (ntfy.sh)
    refused each retry too, and a 404 was asked three times."""
    server = Receiver(status=code, headers=headers)
    clock = RecordingClock()
    try:
        notifier = push([PushDestination("ntfy", url=f"http://127.0.0.1:{server.port}/t")], clock=clock)
        notifier.notify(CRITICAL_NOTICE)
        wait_idle(notifier)
        notifier.close()
    finally:
        server.close()
    assert (len(server.requests), clock.waits) == (tries, waits)
    (problem,) = notifier.problems()
    assert problem.endswith(f"it answered HTTP {code} {http.client.responses[code]}")


def test_a_receivers_reason_phrase_is_not_repeated() -> None:
    """The HTTP reason phrase is the receiver's own text: escape sequences and 60 000 characters
    went into the log, the window and the status file. trayvml's words for the code are said."""
    server = RawServer(b"HTTP/1.1 500 \x1b[2J" + b"A" * 60000 + b"\r\nContent-Length: 0\r\n\r\n")
    try:
        notifier = push([PushDestination("webhook", url=f"http://127.0.0.1:{server.port}/")], attempts=1)
        notifier.notify(CRITICAL_NOTICE)
        wait_idle(notifier)
        notifier.close()
    finally:
        server.close()
    assert notifier.problems() == [
        "Alerts could not be pushed to webhook 127.0.0.1: it answered HTTP 500 Internal Server Error"
    ]


def test_destinations_alike_in_name_keep_their_status_apart(tmp_path: Path, receiver: Receiver) -> None:
    """Two ntfy topics on one server were both "ntfy 127.0.0.1" in the status file: the working
    one's entry overwrote the failing one's, and doctor said both were fine."""
    from trayvml.commands.doctor import Findings, check_push

    status_file = tmp_path / "push-status.json"
    dead = PushDestination("ntfy", url=f"http://127.0.0.1:{closed_port()}/phone")
    alive = PushDestination("ntfy", url=f"http://127.0.0.1:{receiver.port}/team")
    notifier = push([dead, alive], status_file=status_file, attempts=1)
    notifier.notify(CRITICAL_NOTICE)
    wait_idle(notifier)
    notifier.close()
    assert [s.name for s in notifier.statuses] == ["ntfy 127.0.0.1 (1)", "ntfy 127.0.0.1 (2)"]
    findings = Findings()
    check_push(findings, Settings(push=(dead, alive)), status_file)
    said = [(c.name, c.level.name) for c in findings.checks]
    assert said == [("push.1", "WARNING"), ("push.2", "OK")]


def test_a_failure_written_by_an_earlier_run_is_cleared_by_a_send_that_works(
    tmp_path: Path, receiver: Receiver
) -> None:
    """The status file was written only when a destination's state changed in this process: a
    failure from before a restart stayed in it after every later success (doctor: "could not
    be pushed ... timed out" of a destination that works)."""
    status_file = tmp_path / "push-status.json"
    destination = PushDestination("webhook", url=f"http://127.0.0.1:{closed_port()}/")
    earlier = push([destination], status_file=status_file, attempts=1)
    earlier.notify(CRITICAL_NOTICE)
    wait_idle(earlier)
    earlier.close()
    assert read_status(status_file)["webhook 127.0.0.1"]["failing"] is True
    working = dataclasses.replace(destination, url=f"http://127.0.0.1:{receiver.port}/")
    later = push([working], status_file=status_file)
    later.notify(CRITICAL_NOTICE)
    wait_idle(later)
    later.close()
    assert read_status(status_file)["webhook 127.0.0.1"]["failing"] is False


def test_one_process_pushes_a_state_folders_alerts(tmp_path: Path, receiver: Receiver) -> None:
    """The tray and `trayvml record` side by side each pushed every alert: twice to each phone.
    The one holding the lock beside the status file pushes; the other takes over once it stops."""
    status_file = tmp_path / "push-status.json"
    destination = PushDestination("webhook", url=f"http://127.0.0.1:{receiver.port}/")
    recorder = push([destination], status_file=status_file)
    tray = push([destination], status_file=status_file)
    for notifier in (recorder, tray):
        notifier.notify(CRITICAL_NOTICE)
        wait_idle(notifier)
    assert len(receiver.requests) == 1
    tray.notify(dataclasses.replace(WARNING_NOTICE, host="dgx-02"))  # a remote host's: the tray's alone
    wait_idle(tray)
    recorder.close()
    tray.notify(dataclasses.replace(CRITICAL_NOTICE, severity=Severity.INFO, resolved=True))  # its end
    tray.notify(WARNING_NOTICE)  # the recorder stopped: the tray pushes from now on
    wait_idle(tray)
    later = push([destination], status_file=status_file)
    later.carry_over(tray)  # settings edited: the new notifier pushes, the earlier one's right handed on
    tray.close()
    later.notify(RESOLVED_NOTICE)  # where its alert went: the tray told it, and that carried over
    wait_idle(later)
    later.close()
    told = [
        (json.loads(r["body"])["host"], json.loads(r["body"])["rule"], json.loads(r["body"])["severity"])
        for r in receiver.requests
    ]
    assert told == [
        ("gpubox", "temperature", "critical"),
        ("dgx-02", "memory_used", "warning"),
        ("gpubox", "temperature", "resolved"),  # where the recorder sent the alert, the tray its end
        ("gpubox", "memory_used", "warning"),
        ("gpubox", "memory_used", "resolved"),
    ]


def test_a_destination_that_works_again_says_so_and_clears(receiver: Receiver) -> None:
    calls: list[str] = []

    def flaky(destination: PushDestination, message: Message, timeout_s: float) -> None:
        calls.append(message.title)
        if len(calls) <= 3:
            raise DeliveryError("down")

    notifier = push([PushDestination("webhook", url="http://x.invalid/")], send=flaky, backoff_s=0)
    notifier.notify(CRITICAL_NOTICE)
    wait_idle(notifier)
    assert notifier.statuses[0].failing
    notifier.notify(WARNING_NOTICE)
    wait_idle(notifier)
    notifier.close()
    assert not notifier.statuses[0].failing and notifier.problems() == []
    assert notifier.statuses[0].sent == 1


def test_the_queue_is_bounded_and_drops_the_oldest() -> None:
    release = threading.Event()
    got: list[str] = []

    def slow(destination: PushDestination, message: Message, timeout_s: float) -> None:
        release.wait(5)
        got.append(message.body)

    notifier = push([PushDestination("webhook", url="http://x.invalid/")], send=slow, max_queued=3)
    notices = [Notice((i, "xid"), f"XID {i}", str(i), 2, Severity.CRITICAL) for i in range(10)]
    notifier.notify(notices[0])
    deadline = time.monotonic() + 5
    while notifier.idle() or len(notifier._queues[0]):  # the first one is being sent
        assert time.monotonic() < deadline
        time.sleep(0.002)
    for notice in notices[1:]:
        notifier.notify(notice)
    assert len(notifier._queues[0]) == 3
    assert notifier.dropped == 6
    release.set()
    notifier.close()
    assert got == ["0", "7", "8", "9"]


def test_fan_out_reaches_every_notifier_even_past_a_broken_one(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def notify(self, notice: Notice) -> None:
            raise RuntimeError("bug")

        def close(self) -> None:
            pass

    class Keeping:
        def __init__(self) -> None:
            self.notices: list[Notice] = []
            self.closed = False

        def notify(self, notice: Notice) -> None:
            self.notices.append(notice)

        def close(self) -> None:
            self.closed = True

    keeping = Keeping()
    fan = FanOutNotifier([Broken(), keeping])
    with caplog.at_level(logging.ERROR):
        fan.notify(WARNING_NOTICE)
    fan.close()
    assert keeping.notices == [WARNING_NOTICE] and keeping.closed
    assert "Broken" in caplog.text


# ---- settings ----
def test_push_destinations_round_trip_and_bad_ones_are_named() -> None:
    settings = Settings(
        push=(
            PushDestination("ntfy", url="https://ntfy.sh/x", severities=("critical",), quiet_hours="22:00-07:00"),
            PushDestination("email", smtp_host="smtp.example.com", sender="a@b", to=("c@d",), password="pw"),
        )
    )
    assert from_toml(to_toml(settings))[0].push == settings.push
    assert problems(Settings(push=(PushDestination("ntfy", url="ftp://x", quiet_hours="25:00-1"),))) == [
        "push[1]: url should be an http:// or https:// URL without spaces",
        "push[1]: quiet_hours should look like 22:00-07:00",
    ]
    # http.client refuses to send these (its InvalidURL ended the destination's thread).
    for url in ("https://ntfy.sh/my topic", "https://ntfy.sh/a\x01b", "https://ntfy.sh/x\n"):
        assert problems(Settings(push=(PushDestination("ntfy", url=url),))), url
    assert problems(Settings(push=(PushDestination("email"),)))[0] == "push[1]: an e-mail destination needs smtp_host"
    # A destination that cannot be used: none is (noted), the rest of the file is used.
    settings, notes = from_toml(
        'history_hours = 12\n[[push]]\nkind = "ntfy"\nurl = "https://ntfy.sh/x"\ncolour = "red"\n'
    )
    assert settings.push == () and settings.history_hours == 12
    assert notes == ["push[1].'colour' is not a setting of a push destination: its default is in use"]
    settings, notes = from_toml('push = "https://ntfy.sh/x"\n')
    assert settings.push == () and notes == ["push should be a list of [[push]] tables: its default is in use"]
    assert from_toml('[[push]]\nkind = "ntfy"\nurl = "ftp://x"\n')[1] == [
        "push[1]: url should be an http:// or https:// URL without spaces: its default is in use"
    ]
    assert from_toml("")[0].push == ()  # older files: no destinations


# ---- e-mail over a real SMTP server ----
def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (cryptography), and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.mark.parametrize("security", ["starttls", "ssl"])
def test_email_reaches_a_real_smtp_server_over_tls_with_login(tmp_path: Path, security: str) -> None:
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword

    cert, key = _certificate(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    received: list[dict[str, Any]] = []
    logins: list[tuple[bytes, bytes]] = []

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's name
            received.append(
                {
                    "to": envelope.rcpt_tos,
                    "from": envelope.mail_from,
                    "content": envelope.content,
                    "tls": server.transport.get_extra_info("ssl_object"),
                }
            )
            return "250 OK"

    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        assert isinstance(data, LoginPassword)
        logins.append((data.login, data.password))
        return AuthResult(success=data.password == b"hunter22")

    port = closed_port()
    if security == "ssl":
        # Implicit TLS: aiosmtpd does not count it as TLS for AUTH (only STARTTLS), so it is not required here.
        controller = Controller(
            Handler(),
            hostname="127.0.0.1",
            port=port,
            ssl_context=server_tls,
            authenticator=authenticate,
            auth_require_tls=False,
        )
    else:
        controller = Controller(
            Handler(),
            hostname="127.0.0.1",
            port=port,
            tls_context=server_tls,
            require_starttls=True,
            authenticator=authenticate,
            auth_require_tls=True,
        )
    controller.start()
    try:
        client_tls = ssl.create_default_context(cafile=str(cert))
        destination = PushDestination(
            "email",
            smtp_host="127.0.0.1",
            smtp_port=port,
            security=security,
            username="ops",
            password="hunter22",
            sender="gpubox@example.com",
            to=("oncall@example.com",),
        )
        notifier = push([destination], send=Sender(tls=client_tls))
        notifier.notify(CRITICAL_NOTICE)
        notifier.close()
    finally:
        controller.stop()
    assert notifier.problems() == []
    (mail,) = received
    assert mail["to"] == ["oncall@example.com"] and mail["from"] == "gpubox@example.com"
    assert mail["tls"] is not None  # the message went over TLS
    assert logins == [(b"ops", b"hunter22")]
    message = email.message_from_bytes(mail["content"], policy=email.policy.default)
    assert message["Subject"] == "gpubox: GPUs 0–3: temperature ≥ 90 °C"
    assert message.get_content().replace("\r\n", "\n").strip() == CRITICAL_NOTICE.body


def test_an_email_is_sent_once_and_a_refused_recipient_is_said() -> None:
    """An SMTP server that takes the message for one recipient and refuses another: the refusal
    was ignored (counted as sent); and one whose answer to QUIT is not 221 got the message
    three times, said to have failed."""
    from aiosmtpd.controller import Controller

    received: list[list[str]] = []

    class Handler:
        async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:  # noqa: N802 - aiosmtpd's name
            if address.startswith("boss@"):
                return "550 no such user here"
            envelope.rcpt_tos.append(address)
            return "250 OK"

        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's name
            received.append(list(envelope.rcpt_tos))
            return "250 OK"

    class OddQuit(Controller):
        def factory(self) -> Any:
            smtp = super().factory()

            async def smtp_QUIT(arg: str) -> None:  # noqa: N802 - aiosmtpd's name
                await smtp.push("250 ok bye")
                smtp.transport.close()

            smtp.smtp_QUIT = smtp_QUIT
            return smtp

    controller = OddQuit(Handler(), hostname="127.0.0.1", port=closed_port())
    controller.start()
    try:
        destination = PushDestination(
            "email",
            smtp_host="127.0.0.1",
            smtp_port=controller.port,
            security="none",
            sender="gpubox@example.com",
            to=("oncall@example.com", "boss@example.com"),
        )
        notifier = push([destination], backoff_s=0)
        notifier.notify(CRITICAL_NOTICE)
        wait_idle(notifier)
        notifier.close()
    finally:
        controller.stop()
    assert received == [["oncall@example.com"]]  # once, to the one taken
    assert notifier.problems() == [
        "Alerts could not be pushed to email 127.0.0.1: the SMTP server refused boss@example.com"
    ]


# ---- trayvml record ----
def test_record_pushes_an_alert_to_a_webhook(tmp_path: Path, receiver: Receiver) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[[push]]\nkind = "webhook"\nurl = "http://127.0.0.1:{receiver.port}/hook"\n')
    argv = ["record", "--simulate", "idle:gpus=h100*2,lost=1@0,past=0", "--store", str(tmp_path / "store")]
    assert cli.main([*argv, "--config", str(config), "--interval", "0.5", "--count", "3"]) == 0
    bodies = [json.loads(r["body"]) for r in receiver.requests]
    lost = [b for b in bodies if b["rule"] == "gpu_lost"]
    assert lost, bodies
    assert lost[0]["gpus"] == [1] and lost[0]["severity"] == "critical"
    # Simulated GPUs (a try-out): said, so that nobody is paged for them as for real ones.
    assert lost[0]["simulated"] is True and lost[0]["title"].startswith(f"[simulated] {socket.gethostname()}: ")


def test_records_alert_names_the_processes_though_it_reads_the_lists_every_10_s(
    tmp_path: Path, receiver: Receiver
) -> None:
    # record reads the process lists once in 10 s (as the tray's history does): an alert that
    # names processes waits a sample or two for them, as on the desktop, rather than going out
    # without its "Processes:" line on the 9 ticks in 10 that read none.
    config = tmp_path / "config.toml"
    webhook = f'[[push]]\nkind = "webhook"\nurl = "http://127.0.0.1:{receiver.port}/hook"\n'
    rule = "[alerts.memory_used]\nenabled = true\nwarning_enter = 1.0\nwarning_clear = 0.5\nhold_s = 1.0\n"
    config.write_text(webhook + rule)
    argv = ["record", "--simulate", "training:gpus=h100,start=1800", "--store", str(tmp_path / "store")]
    assert cli.main([*argv, "--config", str(config), "--interval", "0.5", "--count", "8"]) == 0
    bodies = [json.loads(r["body"]) for r in receiver.requests]
    memory = [b for b in bodies if b["rule"] == "memory_used"]
    assert memory, bodies
    assert "\nProcesses: " in memory[0]["body"], memory[0]


def test_new_destinations_carry_over_what_was_told_and_the_old_queue_does_not_hold_the_caller(
    receiver: Receiver,
) -> None:
    """The settings' destinations edited (one removed, one added): the one kept still gets the
    resolution of the alert it was told of (a new notifier refused it: told nothing), and the
    earlier notifier's close waits for none of its destinations (one that hangs froze the tray)."""
    kept = PushDestination("webhook", url=f"http://127.0.0.1:{receiver.port}/kept")
    with socket.socket() as hanging:  # accepts, never answers
        hanging.bind(("127.0.0.1", 0))
        hanging.listen()
        stuck = PushDestination("webhook", url=f"http://127.0.0.1:{hanging.getsockname()[1]}/")
        earlier = push([kept, stuck], timeout_s=5.0, attempts=1)
        earlier.notify(CRITICAL_NOTICE)
        assert receiver.arrived.wait(5), "the kept destination was not told of the alert"
        added = PushDestination("webhook", url=f"http://127.0.0.1:{receiver.port}/added")
        edited = dataclasses.replace(kept, quiet_hours="23:00-06:00", name="phone")  # the same place
        later = push([edited, added])
        later.carry_over(earlier)
        earlier.close(wait_s=0.0)
        assert earlier._threads[1].is_alive()  # still trying the one that hangs, on its own thread
        later.notify(dataclasses.replace(CRITICAL_NOTICE, severity=Severity.INFO, resolved=True))
        wait_idle(later)
        later.close()
    paths = [r["path"] for r in receiver.requests]
    assert paths.count("/kept") == 2 and "/added" not in paths  # the alert, then its resolution


def test_a_destination_that_hangs_holds_no_other_back(receiver: Receiver) -> None:
    """One thread sent to every destination in turn: a dead ntfy (10 s a try, three tries and
    their backoff) held a healthy Slack's critical "GPU lost" back for half a minute and more."""
    with socket.socket() as hanging:  # accepts, never answers
        hanging.bind(("127.0.0.1", 0))
        hanging.listen()
        stuck = PushDestination("webhook", url=f"http://127.0.0.1:{hanging.getsockname()[1]}/")
        healthy = PushDestination("webhook", url=f"http://127.0.0.1:{receiver.port}/healthy")
        notifier = push([stuck, healthy], timeout_s=30.0, attempts=1)
        notifier.notify(CRITICAL_NOTICE)
        try:
            assert receiver.arrived.wait(10), "the healthy destination waited for the one that hangs"
            assert notifier._busy[0]  # while that one is still being tried
        finally:
            notifier.close(wait_s=0.0)


def test_what_was_queued_for_a_destination_kept_goes_out_once_in_order() -> None:
    """The destinations edited while messages wait: those for a destination kept move to the new
    notifier, behind nothing (a resolution queued in the new one overtook its alert in the old)."""
    release = threading.Event()
    got: list[str] = []
    senders: list[threading.Thread] = []

    def slow(destination: PushDestination, message: Message, timeout_s: float) -> None:
        release.wait(5)
        got.append(message.body)
        senders.append(threading.current_thread())

    place = PushDestination("webhook", url="http://x.invalid/")
    earlier = push([place], send=slow)
    for k in range(3):
        earlier.notify(Notice((k, "xid"), f"XID {k}", str(k), 2, Severity.CRITICAL))
    deadline = time.monotonic() + 5
    while len(earlier._queues[0]) != 2:  # the first one is being sent
        assert time.monotonic() < deadline
        time.sleep(0.002)
    later = push([dataclasses.replace(place, name="renamed")], send=slow)
    later.carry_over(earlier)
    later.notify(Notice((3, "xid"), "XID 3", "3", 2, Severity.CRITICAL))
    earlier.close(wait_s=0.0)
    release.set()
    wait_idle(later)
    later.close()
    earlier.close()
    assert got == ["0", "1", "2", "3"]
    # Moved, not sent twice (each try on a thread of its own, named after its destination's).
    by = [f"({earlier._threads[0].ident})"] + [f"({later._threads[0].ident})"] * 3
    assert [sender.name[-len(tail) :] for sender, tail in zip(senders, by, strict=True)] == by
