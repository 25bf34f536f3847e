"""One thread reads every plain-HTTP exporter remote, over non-blocking sockets under one selector.

A thread of its own per remote cost each host about 1 ms of CPU a second at 1 Hz: waking it,
blocking on its socket 4-5 times a read (status line, headers, body in segments), http.client's
header parse through ``email.feedparser``, and taking the GIL back each time. Here one thread
sends each host's GET on its kept connection when due, reads whatever has arrived from any host,
and parses a finished answer by the same code as :func:`fetch.read_exporter`. h11 (sans-I/O
HTTP/1.1) writes the request and parses the answer: its head, its framing (Content-Length,
chunked, to the close) and whether the connection may carry the next request.

Only what h11 reads the same as http.client comes here: ``http://`` exporter URLs with no proxy,
credentials, redirect or TLS, answered 200. Anything else (another status, an answer h11 refuses,
a head over http.client's bounds) hands the remote back to its own thread and urllib for good
(:meth:`RemoteSource.go_own_way`), so that its errors read as they always did. Each host keeps its
own bounds: the timeout on every socket operation and the deadline on the whole request, as
:func:`fetch.get` sets them; a host that says nothing or trickles never delays another's read. A
connection the server closed while idle is opened anew once within the same read, as
:class:`fetch.KeptConnection` does.
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import logging
import math
import os
import selectors
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable
from typing import Protocol

import h11

from trayvml.core.clock import Clock, Ticker
from trayvml.core.sample import Sample
from trayvml.remote.fetch import (
    ACCEPT,
    DEADLINE_MARGIN_S,
    MAX_BODY_BYTES,
    Endpoint,
    RemoteError,
    SeriesCache,
    broke_off,
    cannot_reach,
    direct,
    exporter_samples,
    no_answer,
    request_target,
    too_much,
    unfinished,
)

log = logging.getLogger(__name__)

THREAD_NAME = "trayvml-remote http (every plain-HTTP exporter)"
_RECEIVE_BYTES = 256 * 1024
# Within http.client's bounds on an answer's head (a line of 64 KiB, 100 headers): a head of at most
# one line's length has no longer line. A bigger head, or more headers, is read the usual way.
_MAX_HEAD_BYTES = 65536
_MAX_HEADERS = 100
# A body bigger than this is parsed on a thread of its own: a first full parse of thousands of new
# series takes long enough to hold the other hosts' reads back.
PARSE_HERE_MAX_BYTES = 1 * 2**20
# Values read this recently are not read again sooner (hurry): this machine's own are read each second.
HURRY_AFTER_S = 1.0
HURRY_EDGE_S = 1.0  # a read out of turn does not begin this close to an interval's end (a read's time, and some)


class RemoteSource(Protocol):
    """What the shared thread needs of a remote (``source.RemoteSource``)."""

    endpoint: Endpoint
    interval_s: float
    timeout_s: float
    clock: Clock
    failures: int

    @property
    def cache(self) -> SeriesCache: ...

    @property
    def stopped(self) -> bool: ...

    def start_read(self) -> float: ...

    def settle(self, now_s: float, reading: Callable[[], list[Sample]]) -> tuple[Sample, ...]: ...

    def wait_s(self) -> float: ...

    def go_own_way(self) -> None: ...


class _OwnWayError(Exception):
    """This answer is not one this client reads as http.client would: the remote goes the usual way."""


def eligible(fetch_url: str) -> bool:
    """Whether ``fetch_url`` is read by the shared thread: ``http://``, an ASCII host, no proxy."""
    parts = urllib.parse.urlsplit(fetch_url)
    host = parts.hostname or ""
    path = request_target(parts)
    if parts.scheme != "http" or not host or not (host + path).isascii():
        return False
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in host + path):  # not written here: h11 refuses some
        return False
    return direct(parts)


def _request(fetch_url: str) -> tuple[str, int, h11.Request]:
    """(host, port, the GET): the headers http.client sends for ``fetch.get``, in its order and case."""
    parts = urllib.parse.urlsplit(fetch_url)
    host = (parts.hostname or "").lower()
    port = parts.port or 80
    path = request_target(parts)
    shown = f"[{host}]" if ":" in host else host
    if port != 80:
        shown += f":{port}"
    headers = [("Host", shown), ("Accept-Encoding", "identity"), ("Accept", ACCEPT)]
    return host, port, h11.Request(method="GET", target=path, headers=headers)


def _unreachable(source: RemoteSource, error: BaseException) -> RemoteError:
    """As ``fetch._get`` words a connection that could not be made (urllib's URLError)."""
    if isinstance(error, TimeoutError):
        return RemoteError(no_answer(source.endpoint, source.timeout_s))
    return RemoteError(cannot_reach(source.endpoint, error))


def _broke_off(source: RemoteSource, reason: object) -> RemoteError:
    """As ``fetch._get`` words an answer cut off (a reset, a short body, a server gone mid-answer)."""
    return RemoteError(broke_off(source.endpoint, reason))


def hurry_delay_s(now_s: float, interval_s: float) -> float:
    """How long a read out of turn waits (0: none) so as not to begin just before an interval of
    the wall clock ends: it would end in the next one, and the next read is paced to the one after
    (pace), leaving that interval of the host's history empty."""
    left_s = interval_s - now_s % interval_s
    return left_s + 0.01 if left_s < min(interval_s / 2, HURRY_EDGE_S) else 0.0


def pace(ticker: Ticker, failures: int, wait_s: float) -> None:
    """After a read: reads that work come in the middle of an interval of the wall clock (the
    host's history files a sample by the interval its stamp, the read's start, falls in; a read
    begun near an interval's edge crossed it back and forth with the reading thread's lateness, a
    gap in every line). While reads fail, each back-off counts from the end of the failed try (a
    dead host's timeout is not taken off the wait)."""
    ticker.mid_slot = not failures
    if failures:
        ticker.restart()
    ticker.interval_s = wait_s


class _Host:
    """One remote on the shared thread: its kept connection and the read in flight (loop thread only)."""

    def __init__(self, source: RemoteSource) -> None:
        self.source = source
        self.hostname, self.port, self.request = _request(source.endpoint.fetch_url)
        self.ticker = Ticker(source.interval_s, source.clock, mid_slot=True)  # paced by pace(), as RemoteSource._run's
        self.due_s = time.monotonic()  # the next read (while none is in flight)
        self.began_s = -math.inf  # monotonic, when the last read began
        self.sock: socket.socket | None = None
        self.registered = 0  # selector events the socket is registered for (0: not)
        self.busy = False  # a read in flight (connecting, sending, receiving or parsing)
        self.phase = ""  # "resolve", "connect", "receive", "parse"
        self.now_s = math.nan  # the read's wall-clock time (its samples' timestamp)
        self.deadline_s = math.inf  # monotonic
        self.quiet_until_s = math.inf  # the timeout on the socket operation waited for
        self.reused = False
        self.retried = False
        self.addresses: list[tuple[int, tuple]] = []
        self.last_error: BaseException | None = None
        self.http: h11.Connection | None = None  # the HTTP state of the connection (None: none open)
        self.heard = False  # a byte of the answer came
        self.kind = ""  # its content type
        self.length: int | None = None  # its Content-Length (None: chunked or to the close)
        self.body = bytearray()


class SharedReader:
    """The thread that reads every plain-HTTP exporter remote; :data:`READER` is the one in use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._posted: deque[Callable[[], None]] = deque()
        self._thread: threading.Thread | None = None
        self._selector: selectors.BaseSelector | None = None
        self._wake_in: socket.socket | None = None
        self._wake_out: socket.socket | None = None
        self._hosts: dict[RemoteSource, _Host] = {}  # loop thread only
        # What each receive reads into (loop thread only): a new 256 KiB bytes object a receive
        # would be an mmap and its page faults each time.
        self._received = memoryview(bytearray(_RECEIVE_BYTES))

    # -- called from other threads -------------------------------------------------------------

    def add(self, source: RemoteSource) -> None:
        """Read ``source`` from now on (its first read at once)."""
        self._post(lambda: self._add(source))

    def remove(self, source: RemoteSource, wait_s: float) -> None:
        """Stop reading ``source`` and close its connection; waits at most ``wait_s`` for that."""
        done = threading.Event()

        def drop() -> None:
            host = self._hosts.pop(source, None)
            if host is not None:
                self._close(host)
            done.set()

        self._post(drop)
        done.wait(wait_s)

    def hurry(self, source: RemoteSource) -> None:
        """Read ``source`` now rather than at its next turn (someone looks at its values: the tray's
        menu opened), unless a read is in flight, began within HURRY_AFTER_S, or failed (its back-off
        stands)."""
        self._post(lambda: self._hurry(source))

    def running(self) -> bool:
        with self._lock:
            return self._thread is not None

    def _post(self, work: Callable[[], None]) -> None:
        with self._lock:
            self._posted.append(work)
            if self._thread is None:
                self._selector = selectors.DefaultSelector()
                self._wake_in, self._wake_out = socket.socketpair()
                self._wake_in.setblocking(False)
                self._wake_out.setblocking(False)
                self._selector.register(self._wake_in, selectors.EVENT_READ, None)
                self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
                self._thread.start()
                return
            # Under the lock: once it is let go, the thread may take this work, find nothing more
            # and end, closing the socket this would write to.
            assert self._wake_out is not None
            with contextlib.suppress(BlockingIOError):  # a wake-up already waits: one is enough
                self._wake_out.send(b"\0")

    # -- the loop ------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except Exception:  # a bug here: each remote goes on reading on a thread of its own, as before
            log.exception("the thread reading the plain-HTTP remotes failed")
            with self._lock:
                self._end_locked()
                # Work posted since the loop last took its own (a remote added, one removed): done
                # here, or a remote added just before the failure was never read at all.
                posted = list(self._posted)
                self._posted.clear()
            for work in posted:
                try:
                    work()
                except Exception:
                    log.exception("a remote could not be handed to a thread of its own")
            hosts, self._hosts = list(self._hosts.values()), {}
            for host in hosts:
                self._close(host)
                host.source.go_own_way()

    def _end_locked(self) -> None:
        """This thread ends (a new one is made when needed); under ``_lock``."""
        self._thread = None
        for closing in (self._selector, self._wake_in, self._wake_out):
            if closing is not None:
                closing.close()
        self._selector = self._wake_in = self._wake_out = None

    def _loop(self) -> None:
        selector, wake_in = self._selector, self._wake_in
        assert selector is not None and wake_in is not None
        while True:
            with self._lock:
                posted = list(self._posted)
                self._posted.clear()
                if not posted and not self._hosts:  # nothing to read: the thread ends (made again when needed)
                    self._end_locked()
                    return
            for work in posted:
                work()
            now_s = time.monotonic()
            wait_s = math.inf
            for host in list(self._hosts.values()):
                if not host.busy and host.due_s <= now_s and not host.source.stopped:
                    self._begin(host, now_s)
                if host.source not in self._hosts:
                    continue
                wait_s = min(wait_s, min(host.deadline_s, host.quiet_until_s) if host.busy else host.due_s)
            if posted:  # see whether more came while this was done
                continue
            timeout_s = None if wait_s == math.inf else max(0.0, wait_s - time.monotonic())
            for key, _mask in selector.select(timeout_s):
                if key.data is None:
                    with contextlib.suppress(BlockingIOError):
                        wake_in.recv(4096)
                    continue
                host = key.data
                if self._hosts.get(host.source) is host:
                    self._ready(host)
            now_s = time.monotonic()
            for host in list(self._hosts.values()):
                if host.busy and host.phase != "parse" and min(host.deadline_s, host.quiet_until_s) <= now_s:
                    self._ready(host)  # whatever came in meanwhile first: a busy loop is no host's timeout
                    now_s = time.monotonic()
                    if (
                        self._hosts.get(host.source) is host
                        and host.busy
                        and host.phase != "parse"
                        and min(host.deadline_s, host.quiet_until_s) <= now_s
                    ):
                        self._expire(host, now_s)

    def _hurry(self, source: RemoteSource) -> None:
        host = self._hosts.get(source)
        now_s = time.monotonic()
        if host is None or host.busy or source.failures or now_s - host.began_s < HURRY_AFTER_S:
            return
        # Its next turn is paced from this read's end, as after any read's.
        host.due_s = min(host.due_s, now_s + hurry_delay_s(source.clock.now_s(), source.interval_s))

    def _add(self, source: RemoteSource) -> None:
        if source not in self._hosts and not source.stopped:
            self._hosts[source] = _Host(source)

    def _begin(self, host: _Host, now_s: float) -> None:
        host.busy = True
        host.began_s = now_s
        host.now_s = host.source.start_read()
        host.deadline_s = now_s + host.source.timeout_s + DEADLINE_MARGIN_S
        host.retried = False
        if host.sock is None:
            self._open(host)
        else:
            host.reused = True
            self._send(host)

    def _open(self, host: _Host) -> None:
        host.reused = False
        try:  # an address written as numbers needs no look-up
            found = socket.getaddrinfo(host.hostname, host.port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
        except OSError:
            found = []
        if found:
            host.addresses = [(info[0], info[4]) for info in found]
            self._connect_next(host)
            return
        # A name's look-up may hang (a DNS server away): on a thread of its own, bounded by the deadline.
        host.phase, host.quiet_until_s = "resolve", math.inf

        def look_up() -> None:
            try:
                found = socket.getaddrinfo(host.hostname, host.port, 0, socket.SOCK_STREAM)
                result: list[tuple[int, tuple]] | BaseException = [(info[0], info[4]) for info in found]
            except OSError as error:
                result = error
            self._post(lambda: self._looked_up(host, result))

        threading.Thread(target=look_up, name=f"trayvml-remote lookup {host.hostname}", daemon=True).start()

    def _looked_up(self, host: _Host, result: list[tuple[int, tuple]] | BaseException) -> None:
        if self._hosts.get(host.source) is not host or host.phase != "resolve":
            return  # closed, or given up on at its deadline
        if isinstance(result, BaseException):
            self._fail(host, _unreachable(host.source, result))
            return
        host.addresses = list(result)
        if not host.addresses:
            self._fail(host, _unreachable(host.source, OSError("getaddrinfo returns an empty list")))
            return
        self._connect_next(host)

    def _connect_next(self, host: _Host) -> None:
        """Connect to the next address, as ``socket.create_connection`` tries them in turn."""
        while host.addresses:
            family, address = host.addresses.pop(0)
            sock = None
            try:
                sock = socket.socket(family, socket.SOCK_STREAM)
                sock.setblocking(False)
                code = sock.connect_ex(address)
                if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
                    raise OSError(code, os.strerror(code))
            except OSError as error:
                if sock is not None:
                    sock.close()
                host.last_error = error
                continue
            host.sock, host.phase = sock, "connect"
            host.quiet_until_s = time.monotonic() + host.source.timeout_s
            self._watch(host, selectors.EVENT_WRITE)
            return
        last, host.last_error = host.last_error, None  # create_connection raises the last one
        self._fail(host, _unreachable(host.source, last or OSError("no address")))

    def _watch(self, host: _Host, events: int) -> None:
        assert self._selector is not None and host.sock is not None
        if host.registered == events:
            return
        if host.registered:
            self._selector.modify(host.sock, events, host)
        else:
            self._selector.register(host.sock, events, host)
        host.registered = events

    def _send(self, host: _Host) -> None:
        sock = host.sock
        assert sock is not None
        host.phase = "receive"
        host.heard, host.kind, host.length = False, "", None
        host.body.clear()
        if host.http is None:  # a new connection
            host.http = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD_BYTES)
        request = (host.http.send(host.request) or b"") + (host.http.send(h11.EndOfMessage()) or b"")
        try:
            sent = sock.send(request)  # ~150 bytes: a connected socket's buffer takes them whole
            if sent != len(request):
                raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        except OSError as error:
            if self._again(host, error):
                return
            self._fail(host, _unreachable(host.source, error))  # urllib's URLError for a failed request
            return
        host.quiet_until_s = time.monotonic() + host.source.timeout_s
        self._watch(host, selectors.EVENT_READ)

    def _again(self, host: _Host, error: BaseException) -> bool:
        """A kept connection the server closed while idle: asked once more, on a new connection."""
        if not (host.reused and not host.retried and isinstance(error, ConnectionError)):
            return False
        if time.monotonic() >= host.deadline_s:
            return False
        host.retried = True
        self._close(host)
        self._open(host)
        return True

    def _ready(self, host: _Host) -> None:
        """The socket may be read (or, connecting, written): take one step."""
        sock = host.sock
        if sock is None:
            return
        if not host.busy or host.phase == "parse":  # between reads: the server closed it (or says what it should not)
            try:
                sock.recv(1)
            except BlockingIOError:
                return
            except OSError:
                pass
            self._close(host)
            return
        if host.phase == "connect":
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code == 0:
                try:
                    sock.getpeername()
                except OSError:
                    return  # not connected yet (a wake-up before the connection was made)
                self._send(host)
                return
            host.last_error = OSError(code, os.strerror(code))
            self._close(host)
            self._connect_next(host)
            return
        if host.phase != "receive":
            return
        try:
            count = sock.recv_into(self._received)
        except BlockingIOError:
            return
        except OSError as error:
            if not host.heard and self._again(host, error):
                return
            self._fail(host, _broke_off(host.source, error))
            return
        if not count:
            self._ended(host)
            return
        host.quiet_until_s = time.monotonic() + host.source.timeout_s
        host.heard = True
        assert host.http is not None
        # Copied into h11's buffer; its docs take a bytes-like object, its annotation says bytes.
        host.http.receive_data(self._received[:count])  # type: ignore[arg-type]
        self._take(host)

    def _ended(self, host: _Host) -> None:
        """The server closed the connection mid-read."""
        if not host.heard:
            if self._again(host, ConnectionResetError()):
                return
            # http.client's RemoteDisconnected, as today's path words it
            self._fail(host, _broke_off(host.source, "Remote end closed connection without response"))
            return
        if host.kind and host.length is not None:  # the head read, the body cut short of its Content-Length
            short = http.client.IncompleteRead(bytes(host.body), host.length - len(host.body))
            self._fail(host, _broke_off(host.source, short))
            return
        assert host.http is not None
        host.http.receive_data(b"")  # a body to the close ends here; a head or a chunk cut short goes the usual way
        self._take(host)

    def _take(self, host: _Host) -> None:
        """Take the answer's events h11 has made of what came."""
        http_ = host.http
        assert http_ is not None
        try:
            while True:
                event = http_.next_event()
                if event is h11.NEED_DATA:
                    return
                if isinstance(event, h11.Response):
                    self._head(host, event)
                elif isinstance(event, h11.Data):
                    host.body += event.data
                    if len(host.body) > MAX_BODY_BYTES:
                        raise RemoteError(too_much(host.source.endpoint))
                elif isinstance(event, h11.EndOfMessage):
                    self._finish(host)
                    return
                else:  # an informational answer (1xx), or the connection closed: not a plain 200
                    raise _OwnWayError
        except (_OwnWayError, h11.RemoteProtocolError):
            self._own_way(host)
        except RemoteError as error:
            self._fail(host, error)

    def _head(self, host: _Host, head: h11.Response) -> None:
        """The status line and headers, as h11 read them; anything but 200 goes the usual way."""
        if head.status_code != 200 or len(head.headers) > _MAX_HEADERS:
            raise _OwnWayError
        if sum(len(name) + len(value) + 4 for name, value in head.headers) > _MAX_HEAD_BYTES:
            raise _OwnWayError  # all of it came in one receive, so h11's bound on an incomplete head did not apply
        kind: str | None = None
        chunked = False
        for name, value in head.headers:  # names lower case, values stripped
            if name == b"content-type" and kind is None:  # email.message's get: the first
                kind = value.decode("iso-8859-1")
            elif name == b"transfer-encoding":  # h11 takes "chunked" alone
                chunked = True
            elif name == b"content-length":  # one value, digits (h11 checks)
                host.length = int(value)
        if chunked:
            host.length = None
        if kind is None:
            host.kind = "text/plain"
        else:  # email.message.Message.get_content_type
            kind = kind.partition(";")[0].strip().lower()
            host.kind = kind if kind.count("/") == 1 else "text/plain"

    def _finish(self, host: _Host) -> None:
        """A whole answer: keep the connection if it may carry the next; parse (here, or on a thread)."""
        http_ = host.http
        if http_ is not None and http_.our_state is http_.their_state is h11.DONE and not http_.trailing_data[0]:
            http_.start_next_cycle()
        else:  # the server closes it (Connection: close, HTTP/1.0, a body to the close), or sent more than asked
            self._close(host)
        body, kind, source, now_s = bytes(host.body), host.kind, host.source, host.now_s
        host.body.clear()
        host.phase, host.quiet_until_s, host.deadline_s = "parse", math.inf, math.inf

        def parse() -> list[Sample]:
            return exporter_samples(source.endpoint, body, kind, now_s, source.cache)

        if len(body) <= PARSE_HERE_MAX_BYTES:
            source.settle(now_s, parse)
            self._schedule(host)
            return

        def parse_apart() -> None:
            source.settle(now_s, parse)
            self._post(lambda: self._schedule(host))

        threading.Thread(target=parse_apart, name=f"trayvml-remote parse {source.endpoint.url}", daemon=True).start()

    def _fail(self, host: _Host, error: RemoteError) -> None:
        self._close(host)
        host.phase, host.quiet_until_s, host.deadline_s = "parse", math.inf, math.inf

        def fail() -> list[Sample]:
            raise error

        host.source.settle(host.now_s, fail)
        self._schedule(host)

    def _expire(self, host: _Host, now_s: float) -> None:
        """A timeout: the operation waited for (``did not answer``) or the whole request (``did not finish``)."""
        if host.phase == "resolve" or now_s >= host.deadline_s:
            self._fail(host, RemoteError(unfinished(host.source.endpoint, host.source.timeout_s)))
        elif host.phase == "connect":  # this address timed out: the next, as create_connection tries them
            host.last_error = TimeoutError("timed out")
            self._close(host)
            self._connect_next(host)
        else:
            self._fail(host, RemoteError(no_answer(host.source.endpoint, host.source.timeout_s)))

    def _schedule(self, host: _Host) -> None:
        """The next read, as the remote's own loop paces it (``RemoteSource._run``)."""
        if self._hosts.get(host.source) is not host:
            return
        host.busy, host.phase = False, ""
        source = host.source
        pace(host.ticker, source.failures, source.wait_s())
        host.due_s = time.monotonic() + host.ticker.next_delay_s()

    def _own_way(self, host: _Host) -> None:
        """Hand the remote back to a thread of its own and urllib, which read it as they always did."""
        self._close(host)
        self._hosts.pop(host.source, None)
        log.debug("%s is read on its own thread from now on", host.source.endpoint.url)
        host.source.go_own_way()

    def _close(self, host: _Host) -> None:
        sock, host.sock, host.http = host.sock, None, None
        if sock is None:
            return
        if host.registered and self._selector is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(sock)
        host.registered = 0
        sock.close()


READER = SharedReader()
