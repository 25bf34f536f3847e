"""Plain-HTTP exporter remotes read together by one thread (trayvml/remote/plain.py).

Real sockets in this process: servers written byte by byte where the answer's framing matters
(chunked, Content-Length, to the close, garbage), ``FakeRemote`` elsewhere. What a remote yields
through the shared thread is compared with what today's path (``fetch.read``: http.client and
urllib, on the caller's thread) yields for the same answer: the same samples, the same sentences.
"""

from __future__ import annotations

import math
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from tests.helpers import AcceptLoop, FakeRemote, closed_port_url, dcgm_exposition
from trayvml.core.clock import SystemClock
from trayvml.core.sample import Sample
from trayvml.remote import plain
from trayvml.remote.fetch import MAX_BODY_BYTES, RemoteError, SeriesCache, parse_endpoint, read
from trayvml.remote.source import Remotes, RemoteSource

NOW_S = 1_800_000_000.0
BODY = dcgm_exposition("Hostname").encode()


class _FixedNow(SystemClock):
    """The system's monotonic clock (the shared thread paces by it), samples stamped NOW_S."""

    def now_s(self) -> float:
        return NOW_S


class RawServer:
    """A TCP server written by hand: ``answer(server, connection, number)`` runs on a thread of its
    own for each connection it takes. ``requests`` holds (connection number, request bytes)."""

    def __init__(self, answer: Callable[[RawServer, socket.socket, int], None]) -> None:
        self.requests: list[tuple[int, bytes]] = []
        self._loop = AcceptLoop(socket.create_server(("127.0.0.1", 0)), lambda c, n: answer(self, c, n))
        self.url = f"http://127.0.0.1:{self._loop.listener.getsockname()[1]}"
        self.stopping = self._loop.stopping

    @property
    def connections(self) -> int:
        return self._loop.connections

    def request(self, connection: socket.socket, number: int) -> bool:
        """Read one request's head (False: the client closed the connection first)."""
        data = b""
        connection.settimeout(5)
        while b"\r\n\r\n" not in data:
            part = connection.recv(4096)
            if not part:
                return False
            data += part
        self.requests.append((number, data))
        return True

    def stop(self) -> None:
        self._loop.stop()


def _answering(*answers: bytes, keep: bool = True, piece: int = 700) -> Callable[[RawServer, socket.socket, int], None]:
    """Each request on a connection answered with the next of ``answers`` (the last again after),
    each sent in pieces; ``keep``: more requests on the same connection."""

    def answer(server: RawServer, connection: socket.socket, number: int) -> None:
        count = 0
        while server.request(connection, number):
            text = answers[min(count, len(answers) - 1)]
            count += 1
            for at in range(0, len(text), piece):  # in pieces: the client reads what has come
                connection.sendall(text[at : at + piece])
            if not keep:
                connection.shutdown(socket.SHUT_WR)
                return

    return answer


@pytest.fixture
def servers() -> Iterator[list[RawServer]]:
    made: list[RawServer] = []
    yield made
    for server in made:
        server.stop()


@pytest.fixture
def fakes() -> Iterator[list[FakeRemote]]:
    made: list[FakeRemote] = []
    yield made
    for server in made:
        server.stop()


def _raw(servers: list[RawServer], answer: Callable[[RawServer, socket.socket, int], None]) -> RawServer:
    server = RawServer(answer)
    servers.append(server)
    return server


def _fake(fakes: list[FakeRemote]) -> FakeRemote:
    server = FakeRemote()
    server.keep_alive = True
    server.body = BODY
    fakes.append(server)
    return server


def _wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert condition()


def _today(url: str, timeout_s: float = 2.0) -> list[Sample] | str:
    """What today's path (on this thread, http.client and urllib) makes of ``url``: samples or the sentence."""
    cache = SeriesCache()
    try:
        return read(parse_endpoint(url), timeout_s, NOW_S, cache)
    except RemoteError as error:
        return str(error)
    finally:
        cache.connection.close()


def _as_read(source: RemoteSource) -> list[Sample]:
    """The source's samples as today's path makes them: without the monotonic time it stamps each
    with (its read's start: there is one)."""
    assert all(math.isfinite(sample.monotonic_s) for sample in source.samples)
    return [replace(sample, monotonic_s=math.nan) for sample in source.samples]


def _shared(url: str, done: Callable[[RemoteSource], bool], timeout_s: float = 2.0) -> RemoteSource:
    """A remote read by the shared thread until ``done`` (then closed)."""
    source = RemoteSource(parse_endpoint(url), interval_s=0.05, timeout_s=timeout_s, clock=_FixedNow())
    source.start()
    try:
        _wait_until(lambda: done(source))
    finally:
        source.close()
    return source


def _read_fine(source: RemoteSource) -> bool:
    return any(s.gpus for s in source.samples)


def _faulty(source: RemoteSource) -> bool:
    return any(s.remote is not None and s.remote.fault for s in source.samples)


def _fault(source: RemoteSource) -> str:
    (sample,) = source.samples
    assert sample.remote is not None
    return sample.remote.fault


def _own_threads() -> list[str]:
    # (not today's path's deadline thread, "trayvml-remote-deadlines": one for the process, kept)
    return [t.name for t in threading.enumerate() if t.name.startswith("trayvml-remote ")]


def _no_threads_left() -> None:
    _wait_until(lambda: not plain.READER.running() and not _own_threads())


def _answer(body: bytes, head: str = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n") -> bytes:
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def _chunked(body: bytes, size: int = 1000) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunks = [
        f"{len(body[at : at + size]):x};note=x\r\n".encode() + body[at : at + size] + b"\r\n"
        for at in range(0, len(body), size)
    ]
    return head + b"".join(chunks) + b"0\r\nX-Trailer: yes\r\n\r\n"


def test_many_hosts_are_read_by_one_thread_on_kept_connections(fakes: list[FakeRemote]) -> None:
    hosts = [_fake(fakes) for _ in range(6)]
    remotes = Remotes([parse_endpoint(h.url) for h in hosts], interval_s=0.05, timeout_s=2.0)
    remotes.start()
    try:
        _wait_until(lambda: all(len(h.seen) >= 3 for h in hosts))
        _wait_until(lambda: all(_read_fine(s) for s in remotes.sources))
        names = _own_threads()
        assert names == [plain.THREAD_NAME]  # one thread for the six, none of their own
    finally:
        remotes.close()
    assert [len(s.samples[0].gpus) for s in remotes.sources] == [2] * 6
    assert all(h.connections == 1 for h in hosts)  # each read on the host's kept connection
    _no_threads_left()  # closing the last remote ends the shared thread


def test_the_shared_thread_reads_in_the_middle_of_each_second_whenever_it_began(fakes: list[FakeRemote]) -> None:
    """The host's history files a sample by the second its stamp (the read's start) falls in: reads
    begun just before a second's edge crossed it back and forth with the thread's lateness."""
    host = _fake(fakes)
    time.sleep(1.97 - time.time() % 1.0)  # the first read 30 ms before a second's edge
    source = RemoteSource(parse_endpoint(host.url), interval_s=1.0, timeout_s=2.0)
    source.start()
    stamps: list[float] = []
    try:
        while len(stamps) < 3:
            _wait_until(lambda: bool(source.samples) and source.samples[0].timestamp_s not in stamps)
            stamps.append(source.samples[0].timestamp_s)
    finally:
        source.close()
    # The first at once (where it lands depends on the machine's load), then mid-second, a second
    # apart, none skipped.
    assert [0.1 < t % 1.0 < 0.9 for t in stamps[1:]] == [True, True]
    assert 0.0 < stamps[1] - stamps[0] < 2.0
    assert int(stamps[2]) - int(stamps[1]) == 1
    _no_threads_left()


def test_the_request_is_the_one_todays_path_sends_byte_for_byte(servers: list[RawServer]) -> None:
    server = _raw(servers, _answering(_answer(BODY)))
    assert not isinstance(_today(server.url), str)
    _shared(server.url, _read_fine)
    today, shared = server.requests[0][1], server.requests[1][1]
    assert shared == today and shared.startswith(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:")


@pytest.mark.parametrize("framing", ["content-length", "chunked", "to the close"])
def test_each_framing_of_a_body_gives_the_samples_todays_path_gives(servers: list[RawServer], framing: str) -> None:
    if framing == "content-length":
        server = _raw(servers, _answering(_answer(BODY)))
    elif framing == "chunked":
        server = _raw(servers, _answering(_chunked(BODY)))
    else:  # HTTP/1.0, no length: the body ends when the server closes the connection
        head = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\r\n"
        server = _raw(servers, _answering(head + BODY, keep=False))
    today = _today(server.url)
    assert not isinstance(today, str), today
    source = _shared(server.url, lambda s: _read_fine(s) and len(server.requests) >= 4)
    assert source.samples[0].gpus and _as_read(source) == today
    assert source._thread is None  # read by the shared thread only, never handed to one of its own
    if framing == "to the close":
        assert server.connections == len(server.requests)  # a new connection each read
    else:
        assert server.connections == 2  # today's read, then one kept connection for every shared read
    _no_threads_left()


def test_a_host_that_stalls_delays_no_other_and_fails_as_today(
    servers: list[RawServer], fakes: list[FakeRemote]
) -> None:
    def never(server: RawServer, connection: socket.socket, number: int) -> None:
        server.request(connection, number)
        server.stopping.wait(10)  # the request is taken and never answered

    stalled = _raw(servers, never)
    dripping = _fake(fakes)
    dripping.drip_s = 0.05  # a byte every 50 ms: each receive within the timeout, the whole never
    good = _fake(fakes)
    endpoints = [parse_endpoint(url) for url in (stalled.url, dripping.url, good.url)]
    remotes = Remotes(endpoints, interval_s=0.05, timeout_s=1.0)
    remotes.start()
    try:
        _wait_until(lambda: stalled.requests != [] and dripping.seen != [])
        seen_when_stalled = len(good.seen)
        _wait_until(lambda: len(good.seen) >= seen_when_stalled + 5)
        # The good host was read 5 times over while the other two reads were still in flight.
        assert not any(_faulty(s) for s in remotes.sources[:2]) and len(stalled.requests) == 1
        _wait_until(lambda: _faulty(remotes.sources[0]) and _faulty(remotes.sources[1]))
        assert _read_fine(remotes.sources[2])
        stalled_fault, dripping_fault = _fault(remotes.sources[0]), _fault(remotes.sources[1])
    finally:
        remotes.close()
    assert stalled_fault == _today(stalled.url, 1.0) == f"{stalled.url} did not answer within 1 s."
    assert dripping_fault == _today(dripping.url, 1.0) == f"{dripping.url} did not finish answering within 1 s."
    _no_threads_left()


def test_a_kept_connection_dropped_while_idle_is_opened_anew_once_within_the_read(servers: list[RawServer]) -> None:
    def drops_the_second(server: RawServer, connection: socket.socket, number: int) -> None:
        # Answers the first request on a connection; the next one it takes and closes unanswered,
        # as a server whose idle timeout ran out just as the request came.
        if server.request(connection, number):
            connection.sendall(_answer(BODY))
            if server.request(connection, number):
                connection.close()

    server = _raw(servers, drops_the_second)
    source = _shared(server.url, lambda s: len(server.requests) >= 6)
    by_connection = [number for number, _ in server.requests]
    # Every second request was dropped and asked once more on a new connection, each read fine.
    assert by_connection[:6] == [1, 1, 2, 2, 3, 3]
    assert source.failures == 0 and _read_fine(source)
    _no_threads_left()


def test_a_new_connection_closed_unanswered_fails_as_today(servers: list[RawServer]) -> None:
    def closes(server: RawServer, connection: socket.socket, number: int) -> None:
        if server.request(connection, number):
            connection.close()

    server = _raw(servers, closes)
    source = _shared(server.url, _faulty)
    expected = f"{server.url} broke off: Remote end closed connection without response."
    assert _fault(source) == _today(server.url) == expected
    assert server.connections == 2  # today's one; the shared read's (never asked again on the new one)


def test_a_body_cut_short_of_its_length_is_a_fault_as_on_todays_path(servers: list[RawServer]) -> None:
    whole = _answer(BODY)
    server = _raw(servers, _answering(whole[: len(whole) - 100], keep=False))
    source = _shared(server.url, _faulty)
    expected = f"{server.url} broke off: IncompleteRead({len(BODY) - 100} bytes read, 100 more expected)."
    assert _fault(source) == _today(server.url) == expected


def test_an_oversize_body_is_refused_as_today(servers: list[RawServer]) -> None:
    big = b"# " + b"x" * (MAX_BODY_BYTES + 10) + b"\n"
    for answer in (_chunked(big, 10_000), _answer(big)):
        server = _raw(servers, _answering(answer, piece=2**16))
        refused = f"{server.url} sent more than 32 MiB: not a scrape."
        assert _fault(_shared(server.url, _faulty)) == _today(server.url) == refused
    _no_threads_left()


@pytest.mark.parametrize(
    "answer",
    [
        b"garbage\r\n\r\n",
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
    ids=["garbage", "500", "unknown coding", "bad chunk size"],
)
def test_an_answer_the_shared_thread_does_not_read_goes_todays_way_with_todays_words(
    servers: list[RawServer], answer: bytes
) -> None:
    server = _raw(servers, _answering(answer, keep=False))
    today = _today(server.url)
    assert isinstance(today, str)
    source = RemoteSource(parse_endpoint(server.url), interval_s=0.05, timeout_s=2.0, clock=_FixedNow())
    source.start()
    try:
        _wait_until(lambda: _faulty(source))
        fault = _fault(source)
        assert f"trayvml-remote {server.url}" in _own_threads()  # its own thread from now on
    finally:
        source.close()
    assert fault == today
    _no_threads_left()


def test_a_host_that_refuses_connections_is_unreachable_as_today() -> None:
    url = closed_port_url()
    source = _shared(url, _faulty)
    assert _fault(source) == _today(url) == f"{url} cannot be reached: Connection refused."
    _no_threads_left()


def test_what_the_shared_thread_does_not_read_keeps_its_own_thread(fakes: list[FakeRemote]) -> None:
    host = _fake(fakes)
    endpoints = [
        parse_endpoint(host.url.replace("http://", "http://alice:s3cret@"), credentials_allowed=True),
        parse_endpoint("prometheus+" + host.url),
        parse_endpoint(host.url),
    ]
    remotes = Remotes(endpoints, interval_s=0.05, timeout_s=2.0)
    remotes.start()
    try:
        _wait_until(lambda: len(host.seen) >= 6)
        names = sorted(_own_threads())
    finally:
        remotes.close()
    own = [f"trayvml-remote {e.url}" for e in endpoints[:2]]
    assert names == sorted([*own, plain.THREAD_NAME])
    _no_threads_left()


def test_a_bug_in_the_shared_thread_hands_every_remote_to_a_thread_of_its_own(
    fakes: list[FakeRemote], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(plain.SharedReader, "_head", broken)
    hosts = [_fake(fakes) for _ in range(2)]
    remotes = Remotes([parse_endpoint(h.url) for h in hosts], interval_s=0.05, timeout_s=2.0)
    remotes.start()
    try:
        _wait_until(lambda: all(_read_fine(s) for s in remotes.sources))
        names = sorted(_own_threads())
    finally:
        remotes.close()
    assert names == sorted(f"trayvml-remote {h.url}" for h in hosts)  # read as before, on their own
    _no_threads_left()


def test_a_remote_added_just_before_the_shared_thread_failed_gets_a_thread_of_its_own_too(
    fakes: list[FakeRemote], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen once on a loaded machine: the second remote's "add" came after the loop had taken its
    work, and the failure handed only the first to a thread of its own; the second was never read."""
    hosts = [_fake(fakes) for _ in range(2)]
    remotes = Remotes([parse_endpoint(h.url) for h in hosts], interval_s=0.05, timeout_s=2.0)
    first, second = remotes.sources
    reader = plain.SharedReader()

    def failing() -> None:
        reader._add(first)  # taken by the loop
        reader._posted.append(lambda: reader._add(second))  # posted after it took its work
        raise RuntimeError("a bug")

    monkeypatch.setattr(reader, "_loop", failing)
    try:
        reader._run()
        _wait_until(lambda: all(_read_fine(s) for s in remotes.sources))
        names = sorted(_own_threads())
    finally:
        remotes.close()
    assert names == sorted(f"trayvml-remote {h.url}" for h in hosts)
    _no_threads_left()


_LENGTH = f"Content-Length: {len(BODY)}\r\n".encode()
_TEXT = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"


@pytest.mark.parametrize(
    ("answer", "piece"),
    [
        (_TEXT + b"X-Long: " + b"a" * 70_000 + b"\r\n" + _LENGTH + b"\r\n" + BODY, 700),
        (_TEXT + b"X-Long: " + b"a" * 70_000 + b"\r\n" + _LENGTH + b"\r\n" + BODY, 2**20),
        (_TEXT + b"".join(b"X-%d: x\r\n" % n for n in range(101)) + _LENGTH + b"\r\n" + BODY, 700),
        (_TEXT + _LENGTH + f"Content-Length: {len(BODY) + 1}\r\n\r\n".encode() + BODY, 700),
        (_chunked(BODY).replace(b"\r\n3e8;", b"\r\n0x3e8;"), 700),
        (b"HTTP/1.1 200 OK\r\n\tx\r\n" + _LENGTH + b"\r\n" + BODY, 700),
    ],
    ids=["line too long", "line too long, in one receive", "101 headers", "two lengths", "0x chunk size", "fold first"],
)
def test_an_answer_h11_refuses_goes_todays_way_and_reads_as_today(
    servers: list[RawServer], answer: bytes, piece: int
) -> None:
    # Answers that h11 refuses, or that are over http.client's bounds: some http.client reads
    # (the first of two lengths, a "0x" chunk size), some it refuses; either way as today's path.
    server = _raw(servers, _answering(answer, keep=False, piece=piece))
    today = _today(server.url)
    source = RemoteSource(parse_endpoint(server.url), interval_s=0.05, timeout_s=2.0, clock=_FixedNow())
    source.start()
    try:
        _wait_until(lambda: f"trayvml-remote {server.url}" in _own_threads())  # its own thread from now on
        _wait_until(lambda: _faulty(source) if isinstance(today, str) else _read_fine(source))
        shared = _fault(source) if isinstance(today, str) else _as_read(source)
    finally:
        source.close()
    assert shared == today
    _no_threads_left()


def test_a_folded_header_is_read_here_as_today(servers: list[RawServer]) -> None:
    # obs-fold: h11 joins the lines, as http.client's header parse keeps them; the same content type.
    folded = _answer(BODY, "HTTP/1.1 200 OK\r\nContent-Type: text/plain;\r\n version=0.0.4\r\n")
    server = _raw(servers, _answering(folded))
    today = _today(server.url)
    assert not isinstance(today, str), today
    source = _shared(server.url, lambda s: _read_fine(s) and len(server.requests) >= 3)
    assert _as_read(source) == today and source._thread is None  # never handed to its own thread
    _no_threads_left()
