"""Reading a remote: an exporter's ``/metrics`` or a Prometheus server's HTTP API, into samples.

Every failure is a :class:`RemoteError` whose message is one sentence naming the URL (never its
credentials). Each request has a timeout on every socket operation and a deadline on the whole of
it (connection, TLS, headers and body), so a host that trickles bytes cannot hold a reader for
longer than ``timeout_s``. Credentials go to the URL's own origin only, never along a redirect to
another.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import heapq
import http.client
import itertools
import json
import math
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from trayvml.core.errors import TrayvmlError
from trayvml.core.i18n import translate
from trayvml.core.sample import PROMETHEUS_SCHEME, GpuSample, MetricState, RemoteOrigin, Sample
from trayvml.remote.dialects import (
    DIALECTS,
    NAME_PREFIXES,
    Layout,
    Lines,
    Point,
    hostname_of,
    recognise,
    to_samples,
    to_samples_and_layout,
)

MAX_BODY_BYTES = 32 * 2**20  # a scrape of 8 GPUs is ~50 KiB; a body this big is not a scrape
_CHUNK = 64 * 1024
# The whole-request deadline comes this much after the per-receive timeout, so that a host that says
# nothing at all is told by the timeout ("did not answer"), and one that trickles by the deadline.
DEADLINE_MARGIN_S = 0.1
# What a read asks for (trayvml/remote/plain.py writes the same request).
ACCEPT = "text/plain;version=0.0.4, application/json;q=0.9"
SSH_SCHEME = "ssh://"
# Bounds on what one answer and one settings file can make trayvml hold: a DGX has 8 GPUs and the
# biggest NVLink domains 72, so a host with more than this many is not a host; each remote is a
# thread and a connection every interval, so more than this many is a mistake (or a paste gone wrong).
MAX_GPUS_PER_HOST = 1024
MAX_REMOTES = 64


class RemoteError(TrayvmlError):
    """A remote that cannot be read now; the message names the URL and says why."""


@dataclass(frozen=True)
class Endpoint:
    """One ``--remote`` URL: an exporter, or a Prometheus server with an optional label selector."""

    url: str  # as given, without credentials: what the user reads
    fetch_url: str  # what is requested (http/https, with /metrics added to a bare exporter address)
    prometheus: bool = False
    selector: str = ""  # Prometheus label matchers, e.g. job="gpu",cluster="a"
    username: str = ""
    password: str = ""
    ssh: bool = False  # ssh://[user@]host[:port]: read over the user's OpenSSH client (trayvml/remote/ssh.py)

    @property
    def host(self) -> str:
        return urllib.parse.urlsplit(self.fetch_url).hostname or self.url

    @property
    def port(self) -> int | None:
        return urllib.parse.urlsplit(self.fetch_url).port


def parse_endpoint(text: str, credentials_allowed: bool = False) -> Endpoint:
    """``http(s)://host:port[/path]`` or ``prometheus+http(s)://host:9090[#selector]``; raises TrayvmlError.

    Credentials (``user:password@``) come only from the settings file (``credentials_allowed``):
    on a command line every user of the machine can read them in the process list.
    """
    if text.startswith(SSH_SCHEME):
        return _ssh_endpoint(text)
    prometheus = text.startswith(PROMETHEUS_SCHEME)
    raw = text[len(PROMETHEUS_SCHEME) :] if prometheus else text
    parts, port = _split(raw, text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TrayvmlError(
            translate(
                "remote",
                "Remote {url} is not an http(s):// exporter URL, a prometheus+http(s):// server URL "
                "or an ssh://[user@]host[:port] address.",
            ).format(url=repr(text))
        )
    username = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    if (username or password) and not credentials_allowed:
        raise TrayvmlError(
            translate(
                "remote",
                "Remote {url} has credentials in it: put them in the "
                "settings file (remote_hosts), where other users cannot read them in the process list.",
            ).format(url=repr(_without_credentials(parts, prometheus)))
        )
    netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    if port is not None:
        netloc += f":{port}"
    path = parts.path
    if not prometheus and path in ("", "/"):
        path = "/metrics"
    fetch_url = urllib.parse.urlunsplit(
        (parts.scheme, netloc, path.rstrip("/") if prometheus else path, parts.query, "")
    )
    shown = _without_credentials(parts, prometheus)
    return Endpoint(shown, fetch_url, prometheus, urllib.parse.unquote(parts.fragment), username, password)


def _split(raw: str, text: str) -> tuple[urllib.parse.SplitResult, int | None]:
    """``raw`` split into a URL's parts and its port; a sentence naming ``text`` (as given) where it is none."""
    try:
        parts = urllib.parse.urlsplit(raw)
        return parts, parts.port
    except ValueError as error:
        raise TrayvmlError(
            translate("remote", "Remote {url} is not a URL: {error}.").format(url=repr(text), error=error)
        ) from None


def _ssh_endpoint(text: str) -> Endpoint:
    """``ssh://[user@]host[:port]``: a user name is no secret (the key or agent logs in), a password never given."""
    parts, port = _split(text, text)
    host = parts.hostname or ""
    user = urllib.parse.unquote(parts.username or "")
    # A host or user that starts with "-" would be read by ssh as an option.
    if not host or host.startswith("-") or user.startswith("-") or parts.path not in ("", "/") or parts.query:
        raise TrayvmlError(
            translate("remote", "Remote {url} is not an ssh://[user@]host[:port] address.").format(url=repr(text))
        )
    if parts.password is not None:
        raise TrayvmlError(
            translate(
                "remote",
                "Remote {url} has a password in it: trayvml logs in over SSH with a key or the SSH agent only.",
            ).format(url=repr(text.replace(":" + parts.password + "@", "@")))
        )
    netloc = host if ":" not in host else f"[{host}]"
    if port is not None:
        netloc += f":{port}"
    shown = f"ssh://{user + '@' if user else ''}{netloc}"
    return Endpoint(shown, f"ssh://{netloc}", username=user, ssh=True)


def request_target(parts: urllib.parse.SplitResult) -> str:
    """What a GET of the URL ``parts`` asks for: its path ("/" where it has none) and query."""
    return urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))


def direct(parts: urllib.parse.SplitResult) -> bool:
    """Whether urllib reaches the URL ``parts`` without a proxy: none set for its scheme, or its host bypassed."""
    return parts.scheme not in urllib.request.getproxies() or bool(urllib.request.proxy_bypass(parts.hostname or ""))


def _without_credentials(parts: urllib.parse.SplitResult, prometheus: bool) -> str:
    netloc = parts.netloc.rpartition("@")[2]
    url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return PROMETHEUS_SCHEME + url if prometheus else url


class _Watchdog:
    """Ends a request at its deadline, headers included.

    A socket timeout bounds each single receive only: a host that sends a byte a second (of its
    headers or its body) would hold the reader for as long as it likes. At the deadline every socket
    the request opened is shut down, so a receive blocked on it returns at once and the read fails.
    """

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self.cancelled = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        _DEADLINES.add(self, seconds)

    def connect(self, address: tuple[str, int], timeout: float | None = None, source: Any = None) -> socket.socket:
        """``socket.create_connection``, the socket watched (a TLS handshake on it is bounded too)."""
        sock = socket.create_connection(address, timeout, source)
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)
        return sock

    def watch(self, sock: socket.socket) -> None:
        """Watch a socket opened before this request (a kept connection's)."""
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def expire(self) -> None:
        with self._lock:
            if self.cancelled:
                return
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            self._sockets.clear()


class _Deadlines:
    """Every request's deadline, kept by one daemon thread: a timer thread of its own per request
    cost a remote host about 0.2 ms of CPU a read (started, woken and ended every second)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._due: list[tuple[float, int, _Watchdog]] = []  # a heap: (monotonic deadline, order, watchdog)
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, watchdog: _Watchdog, seconds: float) -> None:
        with self._changed:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="trayvml-remote-deadlines", daemon=True)
                self._thread.start()
            heapq.heappush(self._due, (time.monotonic() + seconds, next(self._order), watchdog))
            if self._due[0][2] is watchdog:  # sooner than the one the thread waits for
                self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while True:
                    while self._due and self._due[0][2].cancelled:
                        heapq.heappop(self._due)
                    if not self._due:
                        self._changed.wait()
                        continue
                    wait_s = self._due[0][0] - time.monotonic()
                    if wait_s <= 0:
                        due = heapq.heappop(self._due)[2]
                        break
                    self._changed.wait(wait_s)
            due.expire()  # outside the lock: shutting sockets down may take a moment


_DEADLINES = _Deadlines()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed: nothing is waiting on it
        sock.shutdown(socket.SHUT_RDWR)


# The reading thread's opener (made once: its handlers and the proxies from the environment) and the
# watchdog of the request it is making.
_thread_state = threading.local()


class _Connection(http.client.HTTPConnection):
    def __init__(self, *args: Any, watchdog: _Watchdog, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = watchdog.connect


class _TlsConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, watchdog: _Watchdog, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = watchdog.connect


class _HttpHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_Connection, watchdog=_thread_state.watchdog), req)


class _HttpsHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        # No context given: http.client makes the default one (system CAs, SSL_CERT_FILE) when needed.
        return self.do_open(functools.partial(_TlsConnection, watchdog=_thread_state.watchdog), req)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects to http(s) only, and sends the credentials only to the origin they are for.

    As curl (since 7.58) and requests do: a redirect to another scheme, host or port loses the
    Authorization header, so a host (or whoever took over its name) cannot hand them to a third.
    """

    max_redirections = 5

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            return None  # not followed: the redirect itself is the answer (an HTTP error)
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            new.remove_header("Authorization")
        return new


def _opener(watchdog: _Watchdog) -> urllib.request.OpenerDirector:
    """This thread's opener, its requests watched by ``watchdog`` from now on."""
    _thread_state.watchdog = watchdog
    opener: urllib.request.OpenerDirector | None = getattr(_thread_state, "opener", None)
    if opener is not None:
        return opener
    opener = _thread_state.opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),  # http(s)_proxy and no_proxy, as urlopen honours them
        _HttpHandler(),
        _HttpsHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        _Redirects(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


class KeptConnection:
    """One HTTP/1.1 connection a remote's reads share, kept open between them (keep-alive, as
    Prometheus scrapes): a new connection each second cost a remote host about 0.3 ms of CPU a read
    on each side. Used by one thread at a time (the remote's own); ``close`` when done with it.

    Only for a plain GET to an origin no proxy stands before; a redirect or an error status is
    asked again the usual way (urllib: its redirect rules, its errors). A connection the server
    closed while idle is opened anew once; the timeout and the deadline bound a kept connection's
    request as a new one's."""

    def __init__(self) -> None:
        self._connection: http.client.HTTPConnection | None = None
        self._origin: tuple[str, str, int] | None = None
        self._direct = False  # no proxy for the origin (looked up once per origin, as the opener does)

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def get(
        self, url: str, headers: dict[str, str], timeout_s: float, watchdog: _Watchdog
    ) -> http.client.HTTPResponse | None:
        """The 200 answer to a GET of ``url`` on the kept connection (its body to read); None where
        it must be asked the usual way. Raises as urllib's ``open`` would (URLError while connecting)."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        origin = (parts.scheme, parts.hostname.lower(), parts.port or (443 if parts.scheme == "https" else 80))
        if origin != self._origin:
            self.close()
            self._origin = origin
            self._direct = direct(parts)
        if not self._direct:
            return None
        path = request_target(parts)
        for _ in range(2):
            connection = self._connection
            reused = connection is not None
            if connection is None:
                kind = _TlsConnection if parts.scheme == "https" else _Connection
                connection = self._connection = kind(origin[1], origin[2], timeout=timeout_s, watchdog=watchdog)
            else:
                connection._create_connection = watchdog.connect  # type: ignore[attr-defined]
                connection.timeout = timeout_s
                if connection.sock is not None:
                    connection.sock.settimeout(timeout_s)
                    watchdog.watch(connection.sock)
            try:
                try:
                    connection.request("GET", path, headers=headers)
                except OSError as error:
                    raise urllib.error.URLError(error) from None  # as urllib tells a failed connection
                response = connection.getresponse()
            except (urllib.error.URLError, ConnectionError) as error:
                self.close()
                # A kept connection the server closed while idle (http.client's RemoteDisconnected is
                # a ConnectionError too): asked once more, on a new connection.
                if reused and not watchdog.expired and isinstance(getattr(error, "reason", error), ConnectionError):
                    continue
                raise
            except BaseException:
                self.close()
                raise
            if response.status != 200:
                response.close()
                self.close()
                return None
            return response
        return None  # unreachable: the second try is on a new connection, which raises or answers

    def done(self, response: http.client.HTTPResponse, whole: bool) -> None:
        """After reading ``response``: keep the connection for the next read if it may carry one."""
        if not whole or response.will_close:
            self.close()


def get(
    endpoint: Endpoint, url: str, timeout_s: float, kept: KeptConnection | None = None, form: bytes | None = None
) -> tuple[bytes, str]:
    """The body and content type of ``url``, all within ``timeout_s``; raises RemoteError naming ``endpoint.url``.
    ``kept``: a connection kept between reads (keep-alive), else a new one for this request.
    ``form``: POSTed as a form (application/x-www-form-urlencoded) instead of a GET."""
    headers = {"Accept": ACCEPT}
    if endpoint.username or endpoint.password:
        token = base64.b64encode(f"{endpoint.username}:{endpoint.password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    if form is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        kept = None  # a kept connection carries GETs only
    watchdog = _Watchdog(timeout_s + DEADLINE_MARGIN_S)
    try:
        return _get(endpoint, url, headers, timeout_s, watchdog, kept, form)
    except RemoteError:
        raise
    except Exception:
        if watchdog.expired:  # whatever broke off, it broke off because the deadline shut it
            raise RemoteError(unfinished(endpoint, timeout_s)) from None
        raise
    finally:
        watchdog.cancel()


def unfinished(endpoint: Endpoint, timeout_s: float) -> str:
    """The sentence for a request cut off at its deadline."""
    slow = translate("remote", "{url} did not finish answering within {seconds} s.")
    return slow.format(url=endpoint.url, seconds=f"{timeout_s:g}")


def too_much(endpoint: Endpoint) -> str:
    """The sentence for a body over :data:`MAX_BODY_BYTES`."""
    too_much = translate("remote", "{url} sent more than {mib} MiB: not a scrape.")
    return too_much.format(url=endpoint.url, mib=MAX_BODY_BYTES // 2**20)


class _CutAtDeadlineError(Exception):
    """A body ended because the deadline shut its socket (``get`` words it)."""


def _body(endpoint: Endpoint, response: Any, watchdog: _Watchdog) -> tuple[bytes, str]:
    kind = response.headers.get_content_type()
    body = bytearray()
    while chunk := response.read(_CHUNK):
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise RemoteError(too_much(endpoint))
    if watchdog.expired:  # the end of a body cut off at the deadline is not the end of the answer
        raise _CutAtDeadlineError
    missing = getattr(response, "length", None)
    if missing:  # http.client ends a body the server cut short of its Content-Length without a word
        raise http.client.IncompleteRead(bytes(body), missing)
    return bytes(body), kind


def _get(
    endpoint: Endpoint,
    url: str,
    headers: dict[str, str],
    timeout_s: float,
    watchdog: _Watchdog,
    kept: KeptConnection | None,
    form: bytes | None = None,
) -> tuple[bytes, str]:
    try:
        response = kept.get(url, headers, timeout_s, watchdog) if kept is not None else None
        if response is not None:
            assert kept is not None
            whole = False
            try:
                answer = _body(endpoint, response, watchdog)
                whole = True
                return answer
            finally:
                kept.done(response, whole)
        request = urllib.request.Request(url, data=form, headers=headers)
        with _opener(watchdog).open(request, timeout=timeout_s) as opened:
            return _body(endpoint, opened, watchdog)
    except urllib.error.HTTPError as error:
        answered = (
            translate(
                "remote", "{url} answered HTTP {code} {reason} (check the user and password in the settings file)."
            )
            if error.code in (401, 403)
            else translate("remote", "{url} answered HTTP {code} {reason}.")
        )
        raise RemoteError(answered.format(url=endpoint.url, code=error.code, reason=error.reason)) from None
    except TimeoutError:
        # Only a receive's own timeout raises this (the deadline shuts the socket: a receive then
        # ends or fails otherwise): the host was silent for ``timeout_s``, whether or not the
        # deadline, 0.1 s later, has passed too by the time a loaded machine gets here.
        raise RemoteError(no_answer(endpoint, timeout_s)) from None
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, TimeoutError):  # connecting timed out: as above
            raise RemoteError(no_answer(endpoint, timeout_s)) from None
        if watchdog.expired:
            raise
        if isinstance(reason, ssl.SSLError):
            failed = translate("remote", "{url}: the TLS connection failed ({reason}).")
            raise RemoteError(failed.format(url=endpoint.url, reason=reason.reason or reason)) from None
        raise RemoteError(cannot_reach(endpoint, reason)) from None
    except (OSError, ValueError, http.client.HTTPException) as error:  # reset mid-body, a malformed status line
        if watchdog.expired:
            raise
        raise RemoteError(broke_off(endpoint, error)) from None


# The longest GET of a Prometheus server's API: past it the query goes in a POST's form, as
# Prometheus takes it too. A proxy before the server may refuse longer request lines (nginx by
# default past 8 KB: 414 URI Too Long); a query carries the user's selector once a series name.
API_GET_MAX = 4096


def _api(endpoint: Endpoint, path: str, params: Mapping[str, str], timeout_s: float) -> tuple[bytes, str]:
    """A Prometheus API answer (``path``: "/api/v1/query"...): its body and content type."""
    url, query = f"{endpoint.fetch_url}{path}", urllib.parse.urlencode(params)
    if len(url) + 1 + len(query) <= API_GET_MAX:
        return get(endpoint, f"{url}?{query}", timeout_s)
    return get(endpoint, url, timeout_s, form=query.encode())


def no_answer(endpoint: Endpoint, timeout_s: float) -> str:
    return translate("remote", "{url} did not answer within {seconds} s.").format(
        url=endpoint.url, seconds=f"{timeout_s:g}"
    )


def cannot_reach(endpoint: Endpoint, reason: object) -> str:
    """The sentence for a connection that could not be made (urllib's URLError and its reason)."""
    text = getattr(reason, "strerror", None) or str(reason)
    return translate("remote", "{url} cannot be reached: {reason}.").format(url=endpoint.url, reason=text)


def broke_off(endpoint: Endpoint, reason: object) -> str:
    """The sentence for an answer cut off (a reset, a short body, a server gone mid-answer)."""
    broke = translate("remote", "{url} broke off: {reason}.")
    return broke.format(url=endpoint.url, reason=getattr(reason, "strerror", None) or reason)


class SeriesCache:
    """What a remote's reads keep between them: each series line's name and labels, parsed once by
    prometheus-client's parser, and the last read's layout.

    An exporter serves the same series scrape after scrape with new values; parsing every label
    set again costs ~40 µs a series in pure Python (13 ms for 8 GPUs), so a line whose series text
    was seen before only has its value read. A new series, and anything malformed, goes through
    prometheus-client's parser. Series of no exporter trayvml knows are skipped before parsing.
    A read whose lines are the last one's series in the same order goes by its layout
    (``dialects.Layout``): each value straight to its GPU's slot.
    """

    LIMIT = 20_000  # series remembered; past it (processes come and go) it starts afresh

    def __init__(self) -> None:
        self._series: dict[str, tuple[str, dict[str, str]] | None] = {}
        self.lines: Lines | None = None  # the last text's lines (None: one not as "series value")
        self.layout: Layout | None = None
        # A Prometheus server's: when each host's exporter was scraped (read_prometheus), and its
        # last whole answer while no host has been scraped since (None: read it whole).
        self.scrape_times = ScrapeTimes()
        self.held: HeldAnswer | None = None
        # What else a remote's reads keep between them: its connection (close it when done).
        self.connection = KeptConnection()
        self.unchanged = UnchangedValues()
        # The last answer read directly and its samples: the same bytes again (an exporter that
        # collects every 30 s, as dcgm-exporter by default) are not parsed again.
        self.answer: tuple[bytes, str, list[Sample], float] | None = None  # (and its newest stamp)
        self.stamped_s = -math.inf  # the last exposition's newest stamp (points)

    def points(self, text: str) -> list[Point]:
        """Raises ValueError for text that is not an exposition. ``stamped_s``: the newest time a
        series it reads was stamped with (-inf: none was)."""
        if len(self._series) > self.LIMIT:
            self._series.clear()
        points: list[Point] = []
        lines: Lines | None = Lines([], [], [])
        self.stamped_s = -math.inf
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            brace = line.find("{")
            space = line.find(" ")
            if brace > space >= 0 and line[space:].split()[1:2] == ["#"]:  # name value # {exemplar} …
                brace = -1  # a series without labels: the "{" is its exemplar's
            # The value (and an optional timestamp) follow the labels' "}", or the name.
            end = _labels_end(line, brace) if brace >= 0 else line.find(" ")
            if end <= 0:
                raise ValueError(f"not a sample line: {line[:80]!r}")
            series, rest = line[:end], line[end:].split()
            if "#" in rest:  # an OpenMetrics exemplar after the value: {labels} value [timestamp]
                rest = rest[: rest.index("#")]
            if series not in self._series:
                self._series[series] = self._parse(line, series[:brace] if brace >= 0 else series)
            known = self._series[series]
            # A layout takes lines written "series value" only (one space, no timestamp).
            if lines is not None and len(rest) == 1 and len(line) == end + 1 + len(rest[0]) and line[end] == " ":
                lines.series.append(series)
                lines.values.append(rest[0])
                lines.point_of_line.append(len(points) if known is not None else -1)
            else:
                lines = None
            if known is not None:
                if not rest:
                    raise ValueError(f"no value in {line[:80]!r}")
                points.append(Point(known[0], known[1], float(rest[0])))
                if len(rest) > 1:  # stamped: milliseconds in Prometheus's text format, OpenMetrics' seconds
                    stamp = float(rest[1])
                    self.stamped_s = max(self.stamped_s, stamp / 1000 if stamp > _MS_STAMPS_FROM else stamp)
        self.lines = lines
        return points

    def by_layout(self, text: str, now_s: float) -> list[Sample] | None:
        """The samples of ``text`` by the last read's layout; None where it does not fit: other
        series, or in another order, other facts (read in full then)."""
        layout = self.layout
        if layout is None:
            return None
        parts = [line.rpartition(" ") for line in text.splitlines() if line and line[0] != "#"]
        if not parts or len(parts) != len(layout.series):
            return None
        series, _, values = zip(*parts, strict=True)
        if series != layout.series:
            return None
        return layout.samples(values, now_s)

    @staticmethod
    def _parse(line: str, name: str) -> tuple[str, dict[str, str]] | None:
        if not name.strip().startswith(NAME_PREFIXES):
            return None
        # Imported on the first series parsed: a tray with no remote host never loads prometheus-client.
        from prometheus_client.parser import text_string_to_metric_families

        (family,) = text_string_to_metric_families(line + "\n")
        (sample,) = family.samples
        return sample.name, sample.labels


# A series' timestamp above this is in milliseconds (1973 on), below it in seconds (before 5138).
_MS_STAMPS_FROM = 1e11


def _labels_end(line: str, brace: int) -> int:
    """Where the labels that open at ``brace`` end (past their "}"), quoted values skipped; 0 where
    they do not. The last "}" of the line was an OpenMetrics exemplar's, after the value."""
    quoted = False
    at = brace + 1
    while at < len(line):
        char = line[at]
        if quoted and char == "\\":
            at += 1  # an escaped character: \" or \\
        elif char == '"':
            quoted = not quoted
        elif char == "}" and not quoted:
            return at + 1
        at += 1
    return 0


def _aged(samples: list[Sample], stamped_s: float, now_s: float) -> list[Sample]:
    """``samples`` of an answer whose series were stamped (a /federate address, a file of metrics
    written once): their values at least as old as the newest stamp, not read now. (The newest: a
    lower bound, as UnchangedValues' is; one slow target of a /federate address ages no other host.)"""
    if not math.isfinite(stamped_s):
        return samples
    return [_at_least_aged(sample, now_s - stamped_s) for sample in samples]


def _at_least_aged(sample: Sample, age_s: float) -> Sample:
    """``sample`` with each GPU's values at least ``age_s`` old."""
    if age_s <= 0:
        return sample
    return replace(sample, gpus=tuple(replace(gpu, values_ago_s=max(gpu.values_ago_s, age_s)) for gpu in sample.gpus))


class UnchangedValues:
    """Since when each host of an exporter read directly has answered with the same GPU values.

    An exporter may answer from what it collected earlier: dcgm-exporter collects every 30 s by
    default (its ``-c``), and one whose host engine restarted serves its last values on and on
    (NVIDIA/gpu-monitoring-tools#188). Where every GPU value and process of a host is the last
    read's, none is known to be newer than the read that first showed them: their age
    (GpuSample.values_ago_s) is the time since, a lower bound the tray and window say ("unchanged
    for 30 s"). The values of a GPU at work (its power to the milliwatt, its energy counter)
    change at every collect, so an exporter that reads the GPUs for each scrape keeps them current.
    A read that failed forgets them (``clear``): what the host served meanwhile is not known."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[object, float]] = {}  # by host: what its GPUs said, since when

    def clear(self) -> None:
        self._seen.clear()

    def dated(self, samples: list[Sample], now_s: float) -> list[Sample]:
        seen, self._seen = self._seen, {}
        dated = []
        for sample in samples:
            host = sample.system.hostname if sample.system is not None else ""
            # The values as bytes, the processes as text: a NaN parsed anew is not equal to itself.
            said = tuple((array("d", gpu.values).tobytes(), repr(gpu.processes)) for gpu in sample.gpus)
            last = seen.get(host)
            since_s = last[1] if last is not None and last[0] == said and said else now_s
            self._seen[host] = (said, since_s)
            dated.append(_at_least_aged(sample, now_s - since_s))
        return dated


def _text(endpoint: Endpoint, body: bytes, kind: str) -> str:
    """The text of a Prometheus exposition; raises RemoteError for a web page or bytes not UTF-8."""
    if kind == "text/html" or body.lstrip()[:1] == b"<":
        raise RemoteError(
            translate(
                "remote", "{url} returned a web page, not Prometheus metrics: is it the /metrics address?"
            ).format(url=endpoint.url)
        )
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _not_metrics(endpoint, error) from None


def _not_metrics(endpoint: Endpoint, error: Exception) -> RemoteError:
    strange = translate("remote", "{url} returned something that is not Prometheus metrics ({error}).")
    return RemoteError(strange.format(url=endpoint.url, error=error))


def parse_exposition(endpoint: Endpoint, body: bytes, kind: str, cache: SeriesCache | None = None) -> list[Point]:
    """The series of a Prometheus text exposition; raises RemoteError for anything else."""
    return _points(endpoint, _text(endpoint, body, kind), cache or SeriesCache())


def _points(endpoint: Endpoint, text: str, cache: SeriesCache) -> list[Point]:
    try:
        return cache.points(text)
    except (ValueError, TypeError, IndexError) as error:
        raise _not_metrics(endpoint, error) from None


def read_exporter(endpoint: Endpoint, timeout_s: float, now_s: float, cache: SeriesCache | None = None) -> list[Sample]:
    body, kind = get(endpoint, endpoint.fetch_url, timeout_s, cache.connection if cache is not None else None)
    return exporter_samples(endpoint, body, kind, now_s, cache)


def exporter_samples(
    endpoint: Endpoint, body: bytes, kind: str, now_s: float, cache: SeriesCache | None = None
) -> list[Sample]:
    """The samples of an exporter's answer (its body and content type); raises RemoteError."""
    if cache is None:
        once = SeriesCache()
        samples = _samples(endpoint, _points(endpoint, _text(endpoint, body, kind), once), now_s)
        return _aged(samples, once.stamped_s, now_s)
    if cache.answer is not None and cache.answer[0] == body and cache.answer[1] == kind:
        samples = [replace(sample, timestamp_s=now_s) for sample in cache.answer[2]]
        stamped_s = cache.answer[3]
    else:
        samples, stamped_s = _parsed(endpoint, _text(endpoint, body, kind), now_s, cache)
        cache.answer = (body, kind, samples, stamped_s)
    return _aged(cache.unchanged.dated(samples, now_s), stamped_s, now_s)


def _parsed(endpoint: Endpoint, text: str, now_s: float, cache: SeriesCache) -> tuple[list[Sample], float]:
    """The samples of ``text``, and the newest time its series were stamped with (SeriesCache.points)."""
    known = cache.by_layout(text, now_s)
    if known is not None:
        return known, -math.inf  # (a layout takes lines that carry no timestamp)
    cache.layout = None
    points = _points(endpoint, text, cache)
    _recognised(endpoint, points)
    samples, layout = to_samples_and_layout(points, cache.lines, endpoint.host, endpoint.url, now_s)
    _capped(endpoint, samples)
    cache.layout = layout
    return samples, cache.stamped_s


def _samples(endpoint: Endpoint, points: list[Point], now_s: float) -> list[Sample]:
    _recognised(endpoint, points)
    return _capped(endpoint, to_samples(points, endpoint.host, endpoint.url, now_s))


def _recognised(endpoint: Endpoint, points: list[Point]) -> None:
    """Raises RemoteError where ``points`` hold no series of an exporter trayvml knows."""
    if not recognise({p.name for p in points}):
        raise RemoteError(
            translate(
                "remote",
                "{url} serves Prometheus metrics, but none from a GPU exporter trayvml knows "
                "(trayvml serve, dcgm-exporter, nvidia_gpu_exporter, nvitop-exporter).",
            ).format(url=endpoint.url)
        )


def _capped(endpoint: Endpoint, samples: list[Sample]) -> list[Sample]:
    """``samples``, or a RemoteError when a host in them has more GPUs than any host has."""
    for sample in samples:
        if len(sample.gpus) > MAX_GPUS_PER_HOST:
            host = sample.system.hostname if sample.system else endpoint.host
            too_many = translate(
                "remote", "{url} reports {count} GPUs on {host}; trayvml reads at most {limit} a host."
            )
            raise RemoteError(
                too_many.format(url=endpoint.url, count=len(sample.gpus), host=host, limit=MAX_GPUS_PER_HOST)
            )
    return samples


def capped_remotes(endpoints: list[Endpoint]) -> tuple[list[Endpoint], str]:
    """The first :data:`MAX_REMOTES` endpoints, and a sentence saying what was left out ("" if nothing)."""
    if len(endpoints) <= MAX_REMOTES:
        return endpoints, ""
    left_out = translate(
        "remote", "{count} remote hosts are listed; trayvml reads the first {limit} and leaves out the rest."
    )
    return endpoints[:MAX_REMOTES], left_out.format(count=len(endpoints), limit=MAX_REMOTES)


def _named(name: str, endpoint: Endpoint, match: str = "=") -> str:
    """The PromQL selector of series named ``name`` (``match``: ``=`` or ``=~``), within the user's
    selector: the name inside the braces, as a selector may match on ``__name__`` too."""
    extra = f",{endpoint.selector}" if endpoint.selector else ""
    return f'{{__name__{match}"{name}"{extra}}}'


def prometheus_query(endpoint: Endpoint) -> str:
    """The PromQL that selects every series the dialects read, within the user's selector."""
    return _named("|".join(f"{prefix}.*" for prefix in NAME_PREFIXES), endpoint, "=~")


def _loads(body: bytes) -> Any:
    """json.loads, where a body nested past Python's recursion limit (a hostile server's) is a
    ValueError as any other that is no JSON: a RecursionError ended the reading with a traceback."""
    try:
        return json.loads(body)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _labels(series: Any) -> dict[str, str] | None:
    """A Prometheus API series' labels; None where one is not text (a hostile server's list): such
    a series is left out. Taken for a host name, a list raised where nothing caught it, and the
    remote's reading ended for good; without the label, the series was another host's."""
    labels = dict(series["metric"])
    return labels if all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()) else None


def _query_result(endpoint: Endpoint, body: bytes) -> list[dict[str, Any]]:
    """The series of a Prometheus API answer (``data.result``); a refused query is a RemoteError."""
    answer = _loads(body)
    if answer.get("status") != "success":
        refused = translate("remote", "{url} refused the query: {reason}.")
        reason = answer.get("error") or translate("remote", "no reason given")
        raise RemoteError(refused.format(url=endpoint.url, reason=reason))
    return list(answer["data"]["result"])


# A label no exporter writes: it marks the series the latest-values query adds to tell when each
# exporter's ``scraped`` series was last scraped ("at KIND") and how often ("count KIND": its
# samples in the window).
SCRAPED_LABEL = "trayvml_scraped"
# Twice Prometheus's lookback (5 min): a series the server answers for at all has at least a
# lookback of this window before its newest sample, to count its scrapes in.
SCRAPES_WINDOW_S = 600


def _latest_query(endpoint: Endpoint) -> str:
    """``prometheus_query``, ``_scrapes_query``'s series and ``_process_times_query``'s."""
    return f"{prometheus_query(endpoint)} or {_scrapes_query(endpoint)} or {_process_times_query(endpoint)}"


_DIALECT_OF_KIND = {dialect.kind: dialect for dialect in DIALECTS}
# Each dialect's series of one process, by name, and the exporter's kind.
_PROCESS_KINDS = {
    name: dialect.kind for dialect in DIALECTS for name in (dialect.process_memory, dialect.process_job) if name
}


def _process_times_query(endpoint: Endpoint) -> str:
    """The sample time of every process's series, each marked ``proc NAME`` by SCRAPED_LABEL: a
    server that federates from another keeps an ended process's series for its lookback, with
    the time of its last scrape, older than its host's (``_without_leftovers``)."""
    return " or ".join(_marked(f"timestamp({_named(name, endpoint)})", f"proc {name}") for name in _PROCESS_KINDS)


def _scrapes_query(endpoint: Endpoint) -> str:
    """For every dialect the sample time of its ``scraped`` series and how many samples of it the
    server holds from the window, each marked by SCRAPED_LABEL.

    ``timestamp()`` drops the metric name, so it is asked of one name at a time (several at once
    would clash), and ``or`` keeps the first name that a host or GPU has."""
    window = f"[{SCRAPES_WINDOW_S}s]"
    terms = []
    for dialect in DIALECTS:
        selectors = [_named(name, endpoint) for name in dialect.scraped]
        at = " or ".join(f"timestamp({selector})" for selector in selectors)
        count = " or ".join(f"count_over_time({selector}{window})" for selector in selectors)
        terms += [_marked(at, f"at {dialect.kind}"), _marked(count, f"count {dialect.kind}")]
    return " or ".join(terms)


def _marked(query: str, mark: str) -> str:
    """``query``'s series with SCRAPED_LABEL set to ``mark`` (they have no name to tell them by)."""
    return f'label_replace({query}, "{SCRAPED_LABEL}", "{mark}", "__name__", ".*")'


def stale_after_s(interval_s: float) -> float:
    """How old a series' last scrape may be before its values are not current: two scrapes
    missed, and never under 10 s past the one due (a scrape's own time and this read's)."""
    return max(3 * interval_s, interval_s + 10.0)


@dataclass
class Scrapes:
    """What a Prometheus answer says of one ``scraped`` series of a host, on the server's clock
    (this machine's may be off): its newest sample's time and age, and its samples in the window."""

    host: str
    uuid: str = ""  # the GPU the series belongs to (dcgm-exporter's, nvidia_gpu_exporter's); "": the host's
    kind: str = ""  # the exporter's (Dialect.kind)
    target: str = ""  # the scrape target's ``instance`` label: two machines may share a host name
    sample_s: float = -math.inf
    age_s: float = math.inf
    count: float = math.nan

    def add(self, what: str, at_s: float, value: float) -> None:
        if not (math.isfinite(at_s) and math.isfinite(value)):
            return  # no time to go by: the host's age stays unknown
        if what == "count":
            self.count = value
        elif what == "at":
            self.sample_s, self.age_s = value, max(0.0, at_s - value)

    def interval_s(self, seen_gap_s: float) -> float:
        """About how often the server gets a new sample, never less than it does: the window's
        part before the newest sample over the gaps its samples make there (the rest holds none,
        as the host stops; the window, with one), or the gap that reads saw between new samples
        (``seen_gap_s``: ScrapeTimes.gap_s, NaN until known) where shorter: each is a multiple of
        the interval or more (a read missed one, the host was away)."""
        counted = float(SCRAPES_WINDOW_S)
        if self.count >= 2 and self.age_s < SCRAPES_WINDOW_S:
            counted = (SCRAPES_WINDOW_S - self.age_s) / (self.count - 1)
        return counted if math.isnan(seen_gap_s) else min(counted, seen_gap_s)


class ScrapeTimes:
    """Each ``scraped`` series' newest sample time and the last two gaps between new ones, as a
    remote's reads of a Prometheus server saw them come (kept in its SeriesCache)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[float, float, float]] = {}

    def gap_s(self, series: str, sample_s: float) -> float:
        """The longer of the last two gaps before ``series``' newest sample ``sample_s`` (NaN
        until three have been seen). Two of them: a pair of servers behind one address, each
        scraping at its own offset, answer in turn, and their newest samples are the offset apart
        every other time. A sample older than the newest seen (the other server's) changes nothing."""
        last_s, before_s, gap_s = self._seen.get(series, (math.nan, math.nan, math.nan))
        if sample_s > last_s:
            before_s, gap_s = gap_s, sample_s - last_s  # NaN at the first sample seen
            last_s = sample_s
        elif math.isnan(last_s):
            last_s = sample_s
        self._seen[series] = (last_s, before_s, gap_s)
        return max(before_s, gap_s)  # NaN while either is

    def keep(self, series: set[str]) -> None:
        """Forget the series not in the last answer (hosts renamed, pods replaced): the table
        holds what the server answers, and no more."""
        for gone in self._seen.keys() - series:
            del self._seen[gone]


@dataclass
class HeldAnswer:
    """A Prometheus server's last whole answer, kept while none of its hosts is scraped again: the
    server's values change only at a scrape (every 15 s by default), and a read of every series
    costs about four times a read of the scrape times alone (benchmarks/README.md)."""

    samples: list[Sample]  # what the answer's series made
    sample_s: dict[str, float]  # each ``scraped`` series' newest sample time (by kind and labels)
    due_s: float  # on this machine's clock, when the next scrape is due: read whole from then

    def still(self, scrapes: dict[str, Scrapes]) -> bool:
        """Whether ``scrapes`` (a read of the scrape times) shows no scrape since."""
        return {key: scraped.sample_s for key, scraped in scrapes.items()} == self.sample_s


def read_prometheus(
    endpoint: Endpoint, timeout_s: float, now_s: float, cache: SeriesCache | None = None
) -> list[Sample]:
    """The latest value of each series through ``/api/v1/query``, as the server finds it, with
    how long ago each host was scraped. A series whose target stopped answering is gone
    (Prometheus marks it stale at the next scrape), but one the server gets with the exporter's
    own time (federated from another Prometheus, pushed) is kept for its lookback (5 min by
    default): a host none of whose ``scraped`` series was scraped within :func:`stale_after_s`
    of its own interval is reported as a fault, not with its last values, and a current host's
    GPU values say their age (``values_ago_s``). ``cache`` keeps each series' newest sample
    between reads, to learn how often it comes, and the last whole answer (HeldAnswer): until a
    scrape is due only the scrape times are asked, and the values are those held while no host
    was scraped since. The ages come from each read's own scrape times, so they grow.

    Each value comes with the time the server evaluated the query at, not when it was scraped: a
    test of it against this machine's clock measured only how far the two clocks differ, and a
    clock a minute ahead (a dual-boot machine until NTP answers) dropped every series."""
    times = cache.scrape_times if cache is not None else ScrapeTimes()
    held = cache.held if cache is not None else None
    started_s = time.monotonic()
    samples: list[Sample] | None = None
    points: list[Point] | None = None
    if held is not None and now_s < held.due_s:
        scrapes = _prometheus_answer(endpoint, _scrapes_query(endpoint), timeout_s).scrapes
        if held.still(scrapes):
            samples = [replace(sample, timestamp_s=now_s) for sample in held.samples]
    if samples is None:
        left_s = timeout_s - (time.monotonic() - started_s)  # both asks within the read's one bound
        if left_s <= 0:
            raise RemoteError(no_answer(endpoint, timeout_s))
        answer = _prometheus_answer(endpoint, _latest_query(endpoint), left_s)
        points, scrapes = answer.points, answer.scrapes
    try:  # a label that is not text (a list, from a hostile server) names no host or target
        ages = host_ages(scrapes, times)
        if points is not None:
            current = _without_leftovers(endpoint, points, ages, answer.process_ages)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise _not_prometheus(endpoint, error) from None
    if points is not None:
        if not points:
            none = translate("remote", "{url} holds no current GPU series matching {query}.")
            raise RemoteError(none.format(url=endpoint.url, query=prometheus_query(endpoint)))
        samples = _samples(endpoint, current, now_s)
        if cache is not None:  # held until a scrape is due: not moved on by the reads it answers
            cache.held = _held(points, samples, scrapes, times, now_s)
    assert samples is not None
    return [_dated(endpoint, sample, ages, now_s) for sample in samples]


@dataclass
class _Answer:
    """A Prometheus server's answer: the exporters' series, what the scrape times say (by kind
    and labels), and how long ago each process's series was scraped (by name and labels)."""

    points: list[Point]
    scrapes: dict[str, Scrapes]
    process_ages: dict[str, float]


def _prometheus_answer(endpoint: Endpoint, query: str, timeout_s: float) -> _Answer:
    """The exporters' series of an answer to ``query``, and the times the query asked of them."""
    body, _kind = _api(endpoint, "/api/v1/query", {"query": query}, timeout_s)
    scrapes: dict[str, Scrapes] = {}  # by kind and labels: one per series (or GPU, for dcgm-exporter's)
    process_ages: dict[str, float] = {}
    try:
        result = _query_result(endpoint, body)
        points = []
        for series in result:
            labels = _labels(series)
            if labels is None:
                continue
            at_s, text = series["value"]
            name = labels.pop("__name__", None)
            if name is None:  # a scrape's time or count the query adds (every exporter's series is named)
                what, _, kind = labels.pop(SCRAPED_LABEL, "").partition(" ")
                if what == "proc" and kind in _PROCESS_KINDS:  # kind: the series' name
                    process_ages[_series_key(kind, labels)] = float(at_s) - float(text)
                elif kind in _DIALECT_OF_KIND:
                    key = _series_key(kind, labels)
                    uuid = labels.get(_DIALECT_OF_KIND[kind].uuid_label, "")
                    scraped = scrapes.get(key) or scrapes.setdefault(
                        key,
                        Scrapes(
                            hostname_of(_DIALECT_OF_KIND[kind], labels, endpoint.host),
                            uuid if isinstance(uuid, str) else "",  # a label that is not text names no GPU
                            kind,
                            _target(labels),
                        ),
                    )
                    scraped.add(what, float(at_s), float(text))
                continue
            points.append(Point(name, labels, float(text)))
    except RemoteError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise _not_prometheus(endpoint, error) from None
    return _Answer(points, scrapes, process_ages)


def _target(labels: Mapping[str, object]) -> str:
    """The scrape target a series came from (its ``instance``; "" where it has none or not as text)."""
    instance = labels.get("instance", "")
    return instance if isinstance(instance, str) else ""


def _series_key(kind: str, labels: Mapping[str, str]) -> str:
    """A ``scraped`` series' key in Scrapes and SeriesAge: its exporter's kind and its labels."""
    return f"{kind} {sorted(labels.items())}"


# Series of one scrape have one time; one scraped this much of its host's interval before its
# host's last scrape has gone (more than one: replicas behind a deduplicating query layer are
# scraped at offsets of their own, within an interval).
LEFTOVER_INTERVALS = 1.5
# Each dialect's "up" series (trayvml_up: 0 while it cannot read its GPUs; an older serve's with a
# reason label, a series of its own each) by name. (trayvml_down_info, kept as a leftover while
# trayvml_up is 1 again, is read only with a trayvml_up of 0: dialects._read.)
_UP_KINDS = {dialect.up: dialect.kind for dialect in DIALECTS if dialect.up}


def _without_leftovers(
    endpoint: Endpoint, points: list[Point], ages: dict[str, list[SeriesAge]], process_ages: dict[str, float]
) -> list[Point]:
    """``points`` less the series an exporter no longer serves that a server federating from
    another keeps for its lookback (5 minutes) with their last scrape's time, where the server
    that scrapes the exporter marks them gone. Each is judged against its own scrape target's
    series (two machines may share a host name):

    - a host's "up" series but its last scraped: an older serve's, one a reason label (starting,
      its driver stalled); the one before would make a current host look down (a series seen once
      or twice tells no interval to call it stale by);
    - a process's series scraped before its target last was (LEFTOVER_INTERVALS): it has ended;
    - a GPU's series (dcgm-exporter's, one label set a GPU) whose label set is no longer scraped
      where the GPU's values are current otherwise (its pod's labels changed, another exporter of
      the host serves it): read after the current ones, the old values would win. A GPU with
      nothing current keeps them, to be shown with no values (``_dated``)."""
    newest: dict[tuple[str, str, str], SeriesAge] = {}  # (host, kind, target) -> its youngest ``scraped`` series
    for host, of_host in ages.items():
        for age in of_host:
            found = newest.get((host, age.kind, age.target))
            if found is None or age.age_s < found.age_s:
                newest[host, age.kind, age.target] = age
    older = {
        age.key
        for host, of_host in ages.items()
        for age in of_host
        if age.kind in _UP_KINDS.values() and age.age_s > newest[host, age.kind, age.target].age_s
    }
    old_gpu_keys = {  # key -> kind
        age.key: age.kind
        for of_host in ages.values()
        for age in of_host
        if age.uuid and not age.current and _covered(of_host, age.uuid)
    }
    old_gpu_kinds = set(old_gpu_keys.values())

    def ended(point: Point) -> bool:
        kind = _PROCESS_KINDS[point.name]
        age_s = process_ages.get(_series_key(point.name, point.labels), -math.inf)
        host = newest.get(
            (hostname_of(_DIALECT_OF_KIND[kind], point.labels, endpoint.host), kind, _target(point.labels))
        )
        return host is not None and age_s > host.age_s + LEFTOVER_INTERVALS * host.interval_s

    return [
        p
        for p in points
        if not (p.name in _UP_KINDS and _series_key(_UP_KINDS[p.name], p.labels) in older)
        and not (p.name in _PROCESS_KINDS and ended(p))
        and not (old_gpu_keys and any(_series_key(kind, p.labels) in old_gpu_keys for kind in old_gpu_kinds))
    ]


def _held(
    points: list[Point], samples: list[Sample], scrapes: dict[str, Scrapes], times: ScrapeTimes, now_s: float
) -> HeldAnswer | None:
    """What a whole read keeps to answer the next ones; None where a host has no ``scraped``
    series, or the answer more than one exporter's series (a host's sample joins them, and one
    exporter's scrapes do not tell when another's values change): every read asks for them."""
    hosts = {scraped.host for scraped in scrapes.values() if math.isfinite(scraped.age_s)}
    if (
        not samples
        or len(recognise({point.name for point in points})) != 1
        or any(s.system is None or s.system.hostname not in hosts for s in samples)
    ):
        return None
    waits = []
    for key, scraped in scrapes.items():
        if not math.isfinite(scraped.age_s):
            continue
        interval_s = scraped.interval_s(times.gap_s(key, scraped.sample_s))  # no new sample: nothing learnt
        wait_s = interval_s - scraped.age_s
        # Overdue (late, or stopped): its times are asked each read meanwhile, whole again an interval on.
        waits.append(wait_s if wait_s > 0 else interval_s)
    if not waits:
        return None
    return HeldAnswer(samples, {key: scraped.sample_s for key, scraped in scrapes.items()}, now_s + min(waits))


class SeriesAge(NamedTuple):
    """How long ago a ``scraped`` series was last scraped, and whether that is recent enough."""

    age_s: float
    current: bool
    uuid: str  # its GPU's ("" : the host's series)
    kind: str = ""  # its exporter's
    key: str = ""  # the series' own (_series_key)
    target: str = ""  # its scrape target's ``instance``
    interval_s: float = math.nan  # about how often it is scraped (Scrapes.interval_s)


def host_ages(scrapes: dict[str, Scrapes], times: ScrapeTimes) -> dict[str, list[SeriesAge]]:
    """By host: the age of each of its ``scraped`` series (keyed by kind and labels), and whether
    it is current, each judged by its own interval (two jobs scraping one exporter, or two
    exporters on one host, are scraped at times of their own)."""
    ages: dict[str, list[SeriesAge]] = {}
    for key, scraped in scrapes.items():
        if math.isfinite(scraped.age_s):
            interval_s = scraped.interval_s(times.gap_s(key, scraped.sample_s))
            current = scraped.age_s <= stale_after_s(interval_s)
            age = SeriesAge(scraped.age_s, current, scraped.uuid, scraped.kind, key, scraped.target, interval_s)
            ages.setdefault(scraped.host, []).append(age)
    times.keep(set(scrapes))
    return ages


def _dated(endpoint: Endpoint, sample: Sample, ages: dict[str, list[SeriesAge]], now_s: float) -> Sample:
    """``sample`` with its GPU values' age (its freshest current series'), or a fault where no
    series of its host was scraped lately (two exporters on one host: either keeps it current).
    A GPU with series of its own none of which is current, on a current host, has no values: a
    server that federates keeps a GPU's last samples for its lookback after its exporter dropped
    them (Prometheus marks only series it scrapes itself stale). Unless another exporter of the
    host is current: the GPU's values then come from it too (two exporters on one host)."""
    host = sample.system.hostname if sample.system is not None else endpoint.host
    of_host = ages.get(host)
    if sample.remote is None or sample.remote.fault:
        return sample
    if not of_host:  # none of its ``scraped`` series there (dcgm-exporter's are the user's choice)
        return replace(sample, gpus=tuple(replace(gpu, values_ago_s=math.nan) for gpu in sample.gpus))
    current = [age.age_s for age in of_host if age.current]
    if current:
        gpu_ages: dict[str, list[SeriesAge]] = {}
        for age in of_host:
            if age.uuid:
                gpu_ages.setdefault(age.uuid, []).append(age)
        gpus = []
        for gpu, device in zip(sample.gpus, sample.devices, strict=True):  # a remote's are made in pairs
            own = gpu_ages.get(device.uuid, [])
            if own and not _covered(of_host, device.uuid):
                gpus.append(_no_new_values(gpu, min(age.age_s for age in own)))
            else:
                gpus.append(replace(gpu, values_ago_s=min(current)))
        return replace(sample, gpus=tuple(gpus))
    stopped = translate(
        "remote",
        "{url} gets no new samples of {host}: its exporter or its scrape has stopped.",
    ).format(url=endpoint.url, host=host)
    newest_s = min(age.age_s for age in of_host)
    origin = RemoteOrigin(endpoint.url, sample.remote.kind, stopped, now_s - newest_s)
    return replace(sample, gpus=(), devices=(), host=None, remote=origin)


def _covered(of_host: list[SeriesAge], uuid: str) -> bool:
    """Whether GPU ``uuid``'s values are current: one of its own ``scraped`` series is, or another
    exporter's of its host (two exporters on one host: either serves the GPU)."""
    kinds = {age.kind for age in of_host if age.uuid == uuid}
    return any(age.current and (age.uuid == uuid or age.kind not in kinds) for age in of_host)


def _no_new_values(gpu: GpuSample, age_s: float) -> GpuSample:
    """``gpu`` with no value: its series were last scraped ``age_s`` ago, too long to be current."""
    return replace(
        gpu,
        values=(math.nan,) * len(gpu.values),
        states=(MetricState.NO_DATA,) * len(gpu.states),
        processes=(),
        nvlink_link_tx_bytes_per_s=(),
        nvlink_link_rx_bytes_per_s=(),
        read_ago_s=(),
        values_ago_s=age_s,
    )


def read_prometheus_range(
    endpoint: Endpoint, metric_name: str, start_s: float, end_s: float, step_s: float, timeout_s: float
) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """The past of one series name through ``/api/v1/query_range``: (host or instance, uuid) -> [(time, value)].

    Values are as the exporter served them (the caller converts with the dialect's scale).
    """
    params = {
        "query": _named(metric_name, endpoint),
        "start": f"{start_s:.3f}",
        "end": f"{end_s:.3f}",
        "step": f"{max(step_s, 0.001):g}",
    }
    body, _kind = _api(endpoint, "/api/v1/query_range", params, timeout_s)
    try:
        answer = _loads(body)
        out: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for series in answer["data"]["result"]:
            labels = _labels(series)
            if labels is None:
                continue
            host = labels.get("hostname") or labels.get("Hostname") or labels.get("instance", "")
            uuid = labels.get("uuid") or labels.get("UUID", "")
            out[(host, uuid)] = [(float(t), float(v)) for t, v in series["values"] if not math.isnan(float(v))]
        return out
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise _not_prometheus(endpoint, error) from None


def _not_prometheus(endpoint: Endpoint, error: Exception) -> RemoteError:
    unexpected = translate("remote", "{url} did not answer as a Prometheus server ({error}).")
    return RemoteError(unexpected.format(url=endpoint.url, error=f"{type(error).__name__}: {error}"))


def read(endpoint: Endpoint, timeout_s: float, now_s: float, cache: SeriesCache | None = None) -> list[Sample]:
    """The samples of every host ``endpoint`` reports; ``cache``: kept by the caller between reads."""
    if endpoint.prometheus:
        return read_prometheus(endpoint, timeout_s, now_s, cache)
    return read_exporter(endpoint, timeout_s, now_s, cache)


def read_prometheus_past(
    endpoint: Endpoint, start_s: float, end_s: float, points: int, timeout_s: float
) -> list[Sample]:
    """The past of every series the dialects read, through ``/api/v1/query_range``: one sample per
    host per step, oldest first, ``points`` steps from ``start_s`` to ``end_s`` (to fill a history)."""
    step_s = max((end_s - start_s) / max(points, 1), 1.0)
    params = {
        "query": prometheus_query(endpoint),
        "start": f"{start_s:.3f}",
        "end": f"{end_s:.3f}",
        "step": f"{step_s:g}",
    }
    body, _kind = _api(endpoint, "/api/v1/query_range", params, timeout_s)
    by_time: dict[float, list[Point]] = {}
    try:
        for series in _query_result(endpoint, body):
            labels = _labels(series)
            if labels is None:
                continue
            name = labels.pop("__name__")
            for at_s, text in series["values"]:
                by_time.setdefault(float(at_s), []).append(Point(name, labels, float(text)))
    except RemoteError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise _not_prometheus(endpoint, error) from None
    return [
        sample
        for at_s in sorted(by_time)
        for sample in _capped(endpoint, to_samples(by_time[at_s], endpoint.host, endpoint.url, at_s))
        if sample.gpus
    ]
