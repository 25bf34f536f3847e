"""Remote reads off the caller's thread, so that a slow or dead host never delays anything else.

Each :class:`RemoteSource` reads its URL every interval with a timeout; while it fails it waits
longer between tries (doubling up to :data:`MAX_BACKOFF_S`) and reports the host unreachable, with
the reason and since when, instead of its last values: old values are never shown as current.
Plain-HTTP exporters are read together by one thread (:mod:`trayvml.remote.plain`), each host
bounded by its own timeout; every other remote on a thread of its own.
"""

from __future__ import annotations

import heapq
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace

from trayvml.core.clock import Clock, SystemClock, Ticker, clock_step_s, stamp_monotonic_s
from trayvml.core.i18n import translate
from trayvml.core.safe_text import SENTENCE_LIMIT, terminal_text
from trayvml.core.sample import RemoteOrigin, Sample, SystemInfo
from trayvml.remote import plain
from trayvml.remote.fetch import Endpoint, RemoteError, SeriesCache, read, read_prometheus_past
from trayvml.remote.ssh import FIRST_ANSWER_S, SshReader

log = logging.getLogger(__name__)

TIMEOUT_S = 3.0  # a healthy exporter answers in milliseconds; a scrape is small
# A read still running this long after its timeout (a parse of a huge answer, a DNS look-up that
# hangs) makes its host unreachable until it returns: its last values are not current any more.
OVERDUE_GRACE_S = 0.5
MAX_BACKOFF_S = 60.0
PAST_TIMEOUT_S = 10.0  # a few MB of JSON from a server with hours of it
PAST_POINTS = 300  # steps of a Prometheus server's past put into a new history: ~1 a pixel of a graph
# The reads kept for a taker that fell behind (the tray's GUI thread while a window opens takes 2-3 s
# on a slow machine): a host's history then gets every second read, not a gap. Older ones are dropped.
BACKLOG_READS = 30


class RemoteSource:
    """The latest samples of one remote (one per host it reports), refreshed on a daemon thread."""

    def __init__(
        self,
        endpoint: Endpoint,
        interval_s: float = 1.0,
        timeout_s: float = TIMEOUT_S,
        clock: Clock | None = None,
        reader: Callable[[Endpoint, float, float, SeriesCache], list[Sample]] = read,
    ) -> None:
        self.endpoint = endpoint
        self.interval_s = interval_s
        self.clock = clock or SystemClock()
        self._ssh: SshReader | None = None
        if endpoint.ssh and reader is read:
            # One long-lived ssh process, its first answer after a login and a first read on the host.
            reader = self._ssh = SshReader(interval_s)
            timeout_s = max(timeout_s, FIRST_ANSWER_S)
        self.timeout_s = timeout_s
        self._read = reader
        self._cache = SeriesCache()
        self._samples: tuple[Sample, ...] = ()  # replaced whole: other threads see one or the other
        self._hosts: tuple[str, ...] = ()  # the hosts it last reported: named while it is down
        self._fault_since_s = math.nan
        self._failed_at = (math.nan, math.nan)  # the wall and monotonic clocks at the last failed try
        self._started_s = math.nan  # monotonic and wall clock when the read in flight began (nan: none)
        self._started_wall_s = math.nan
        self.failures = 0  # consecutive
        # Prometheus servers only: how far back to fill a new history from /api/v1/query_range (0: not),
        # read once, on the first read that works; ``past`` holds it (oldest first) for the history's owner.
        self.past_s = 0.0
        self.past: tuple[Sample, ...] = ()
        self._past_read = False
        # The reads with values not taken yet (``unseen``), oldest first; None: only the latest is kept.
        self._backlog: deque[tuple[Sample, ...]] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None  # its own (None: none, or read on the shared thread)
        self._shared = False  # read by plain.READER (until it hands the remote back to a thread of its own)
        self._lock = threading.Lock()

    def read_once(self) -> tuple[Sample, ...]:
        """Read now on the calling thread (bounded by ``timeout_s``) and return what it got."""
        now_s = self.start_read()
        return self.settle(now_s, lambda: self._read(self.endpoint, self.timeout_s, now_s, self._cache))

    @property
    def cache(self) -> SeriesCache:
        return self._cache

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def start_read(self) -> float:
        """A read begins now: its time (the samples' timestamp); ``samples`` tells an overdue one from it."""
        now_s = self.clock.now_s()
        self._started_wall_s, self._started_s = now_s, self.clock.monotonic_s()
        return now_s

    def settle(self, now_s: float, reading: Callable[[], list[Sample]]) -> tuple[Sample, ...]:
        """The read begun at ``now_s`` ends with what ``reading`` returns or raises: current samples or a fault."""
        # When the read began, as ``now_s``, for the samples not stamped when they came (ssh's are).
        monotonic_s = self._started_s if self.clock.counts_suspend else math.nan
        try:
            samples = [s if not math.isnan(s.monotonic_s) else replace(s, monotonic_s=monotonic_s) for s in reading()]
        except RemoteError as error:
            self._failed(str(error), now_s, monotonic_s)
        except Exception as error:  # a bug in trayvml's reading: shown as a fault, logged once per kind
            log.exception("reading %s failed", self.endpoint.url)
            ours = translate("remote", "{url}: reading it failed in trayvml itself ({error}).")
            self._failed(ours.format(url=self.endpoint.url, error=type(error).__name__), now_s, monotonic_s)
        else:
            if self.past_s > 0 and self.endpoint.prometheus and not self._past_read:
                self._read_past(now_s)
            self.failures = 0
            self._fault_since_s = math.nan
            latest = _latest_of_each_host(samples)
            self._hosts = tuple(s.system.hostname for s in latest if s.system)
            self._samples = latest
            if self._backlog is not None:
                self._backlog.append(tuple(samples))
        finally:
            self._started_s = math.nan
        return self._samples

    def _read_past(self, now_s: float) -> None:
        self._past_read = True
        try:
            # Read before the first live sample is published, so a new history gets its past first
            # (its rings take time in order); bounded, and this thread is the remote's own.
            start_s = now_s - self.past_s
            past = read_prometheus_past(self.endpoint, start_s, now_s, PAST_POINTS, max(self.timeout_s, PAST_TIMEOUT_S))
            self.past = tuple(s for s in past if s.timestamp_s < now_s)  # the live read is "now"
        except RemoteError as error:  # the live values still come: the graphs start empty instead
            log.warning(
                "the past of %s could not be read: %s", self.endpoint.url, terminal_text(str(error), SENTENCE_LIMIT)
            )
        except Exception:  # a bug in trayvml's reading: the live values still come (this thread is theirs)
            log.exception("reading the past of %s failed", self.endpoint.url)

    def _failed(self, message: str, now_s: float, monotonic_s: float) -> None:
        self._cache.unchanged.clear()  # what the host served meanwhile is not known
        if self.failures == 0:
            self._fault_since_s = now_s
            log.warning("%s", terminal_text(message, SENTENCE_LIMIT))  # the host's words: to a terminal
        else:  # the wall clock set since the last try: "unreachable since" goes with it
            self._fault_since_s += clock_step_s(*self._failed_at, now_s, monotonic_s)
        self._failed_at = (now_s, monotonic_s)
        self.failures += 1
        hosts = self._hosts or (self.endpoint.host,)
        origin = RemoteOrigin(self.endpoint.url, "", message, self._fault_since_s)
        self._samples = tuple(
            Sample(now_s, (), (), SystemInfo(host, "", "", ""), None, remote=origin, monotonic_s=monotonic_s)
            for host in hosts
        )

    def keep_backlog(self) -> None:
        """Keep the reads ``unseen`` gives from now on (up to BACKLOG_READS of them)."""
        self._backlog = deque(maxlen=BACKLOG_READS)

    def unseen(self) -> list[Sample]:
        """The samples of every read that worked since the last call, oldest first (keep_backlog)."""
        taken: list[Sample] = []
        while self._backlog:  # popped one at a time: the reading thread may append meanwhile
            taken += self._backlog.popleft()
        return taken

    @property
    def samples(self) -> tuple[Sample, ...]:
        """The latest: current values, or one sample per host saying why there are none (a read
        running past its timeout is such a why: the values before it are not current)."""
        started_s = self._started_s
        if not math.isnan(started_s) and self.clock.monotonic_s() - started_s > self.timeout_s + OVERDUE_GRACE_S:
            return self.unfinished()
        return self._samples

    def unfinished(self) -> tuple[Sample, ...]:
        """One sample per host saying that the read in flight did not finish in time (nothing changes)."""
        now_s = self.clock.now_s()
        started_s = self._started_wall_s if not math.isnan(self._started_wall_s) else now_s
        since_s = self._fault_since_s if self.failures else started_s
        slow = translate("remote", "{url} did not finish answering within {seconds} s.")
        origin = RemoteOrigin(
            self.endpoint.url, "", slow.format(url=self.endpoint.url, seconds=f"{self.timeout_s:g}"), since_s
        )
        hosts = self._hosts or (self.endpoint.host,)
        monotonic_s = stamp_monotonic_s(self.clock)
        return tuple(
            Sample(now_s, (), (), SystemInfo(host, "", "", ""), None, remote=origin, monotonic_s=monotonic_s)
            for host in hosts
        )

    def wait_s(self) -> float:
        """How long to wait before the next try: the interval, doubled per consecutive failure."""
        if not self.failures:
            return self.interval_s
        return min(self.interval_s * 2 ** min(self.failures, 16), MAX_BACKOFF_S)

    def hurry(self) -> None:
        """Read soon rather than at the next interval (its values are looked at). A plain-HTTP
        exporter only: a Prometheus server answers with its last scrape and an ssh host with the
        last batch its loop sent, neither newer for being asked sooner."""
        if self._shared and self._thread is None and not self.stopped:  # else nothing to hurry there
            plain.READER.hurry(self)

    def start(self) -> None:
        """Read every interval from now on: a plain-HTTP exporter on the thread every such remote
        shares (``plain.READER``), anything else on a thread of its own."""
        if self._shared_read():
            self._shared = True
            plain.READER.add(self)
            return
        self.go_own_way()

    def _shared_read(self) -> bool:
        endpoint = self.endpoint
        return (
            self._read is read
            and isinstance(self.clock, SystemClock)
            and not (endpoint.ssh or endpoint.prometheus or endpoint.username or endpoint.password)
            and plain.eligible(endpoint.fetch_url)
        )

    def go_own_way(self) -> None:
        """Read on a thread of this remote's own (what the shared thread does not read as urllib would)."""
        with self._lock:
            if self._stop.is_set() or self._thread is not None:
                return
            self._started_s = math.nan  # the shared thread's read ended here: this thread reads anew
            self._thread = threading.Thread(target=self._run, name=f"trayvml-remote {self.endpoint.url}", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        ticker = Ticker(self.interval_s, self.clock, mid_slot=True)
        while not self._stop.is_set():
            self.read_once()
            plain.pace(ticker, self.failures, self.wait_s())
            if ticker.wait_next(self._stop):
                break
        self._cache.connection.close()  # on this thread: no read of it can be in flight

    def close(self, wait_s: float | None = None) -> None:
        """Stop; waits for a read in flight at most ``wait_s`` (default: the timeout) and leaves it behind after.

        An ssh:// host's ssh process is ended first (terminate, then kill), which also ends a read waiting on it."""
        self._stop.set()
        if self._ssh is not None:
            self._ssh.close()
        if self._shared:  # its connection closed by the shared thread; a read in flight there dropped
            plain.READER.remove(self, self.timeout_s + 1.0 if wait_s is None else wait_s)
        with self._lock:
            thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join(self.timeout_s + 1.0 if wait_s is None else wait_s)
        if thread is None:  # read on callers' threads (read_once), done by now: its kept connection
            self._cache.connection.close()


class Remotes:
    """Every ``--remote`` together: started, read and closed as one."""

    def __init__(self, endpoints: Sequence[Endpoint], interval_s: float = 1.0, timeout_s: float | None = None) -> None:
        timeout_s = TIMEOUT_S if timeout_s is None else timeout_s
        self.sources = [RemoteSource(e, interval_s, timeout_s) for e in endpoints]

    def begin_read(self) -> Callable[[], list[Sample]]:
        """Start reading every remote once, each on its own thread; the function returned waits for
        them all (together at most the timeout and a second) and gives the samples (for ``snapshot``):
        a remote whose read is still running then is unreachable, with that reason."""
        threads = [threading.Thread(target=s.read_once, daemon=True) for s in self.sources]
        for thread in threads:
            thread.start()
        end_s = time.monotonic() + max((s.timeout_s for s in self.sources), default=0.0) + 1.0

        def finish() -> list[Sample]:
            for thread in threads:
                thread.join(max(0.0, end_s - time.monotonic()))
            return [
                sample
                for thread, source in zip(threads, self.sources, strict=True)
                for sample in (source.unfinished() if thread.is_alive() else source.samples)
            ]

        return finish

    def samples(self) -> list[Sample]:
        return [sample for source in self.sources for sample in source.samples]

    def keep_backlog(self) -> None:
        """Keep each remote's reads until ``unseen`` takes them (a taker that may fall behind)."""
        for source in self.sources:
            source.keep_backlog()

    def unseen(self) -> list[Sample]:
        """Every remote's samples of the reads that worked since the last call, oldest first (one
        host reached through two remotes gets its reads in time order, not one remote's then the other's)."""
        return list(heapq.merge(*(source.unseen() for source in self.sources), key=lambda sample: sample.timestamp_s))

    def keep_past(self, seconds: float) -> None:
        """Read this much of a Prometheus server's past on the first read that works (before ``start``)."""
        for source in self.sources:
            source.past_s = seconds

    def past_of(self, host: str, before_s: float) -> list[Sample]:
        """What a Prometheus server said of ``host``'s past before ``before_s``, oldest first."""
        return [
            s
            for source in self.sources
            for s in source.past
            if s.system is not None and s.system.hostname == host and s.timestamp_s < before_s
        ]

    def start(self) -> None:
        for source in self.sources:
            source.start()

    def hurry(self) -> None:
        """Each remote read soon rather than at its next interval (see RemoteSource.hurry)."""
        for source in self.sources:
            source.hurry()

    def close(self, wait_s: float | None = None) -> None:
        """Stop every remote; each read in flight is waited for at most ``wait_s`` (default: its timeout)."""
        for source in self.sources:
            source._stop.set()
        for source in self.sources:
            source.close(wait_s)


def _latest_of_each_host(samples: Sequence[Sample]) -> tuple[Sample, ...]:
    """Each host's last sample of a read, in the order the hosts came: an ssh host's read gives
    every batch that came since the last one."""
    latest: dict[object, Sample] = {}
    for k, sample in enumerate(samples):
        latest[sample.system.hostname if sample.system else k] = sample
    return tuple(latest.values())


def with_hostname(sample: Sample, hostname: str) -> Sample:
    """``sample`` said to come from ``hostname`` (for a local sample with no system info)."""
    return replace(sample, system=SystemInfo(hostname, "", "", "")) if sample.system is None else sample
