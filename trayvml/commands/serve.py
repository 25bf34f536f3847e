"""`trayvml serve`: this machine's GPUs as Prometheus metrics, read on a loop of its own."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from trayvml.core.errors import NvmlUnavailable, UnavailableReason
from trayvml.core.heap import give_back_free_memory
from trayvml.core.i18n import translate
from trayvml.core.sample import Sample
from trayvml.prometheus import DEFAULT_ADDRESS, DEFAULT_PORT
from trayvml.prometheus.exposition import Exporter, is_loopback, load_web_config, parse_listen

log = logging.getLogger(__name__)


# ---- the sampling loop ----
# A sample this share of the interval old is due for another read: scrapes exactly an interval
# apart arrive a hair early or late, and "early" would otherwise serve every other one the same.
FRESH_SHARE = 0.9


class SamplingLoop:
    """Reads the GPUs on a thread of its own when a scrape wants a sample (:meth:`fresh`), at most
    once every ``interval_s``: a scrape gets a sample read less than ``interval_s`` ago, the loop
    reading one where the latest is older. With no one scraping nothing is read after the first
    sample; with Prometheus scraping every 15 s, one read in 15 s, whose rates, GPM metrics and
    per-process shares cover the time since the read before. On real GPUs the driver's own time is
    most of what serve costs (benchmarks/README.md, "On a real GPU": 2.3-2.6 ms a GPU a second on an
    H200), so a read no scrape asks for is the cost to save. A scrape itself never calls NVML."""

    def __init__(self, read: Callable[[], Sample], interval_s: float) -> None:
        self._read = read
        self.interval_s = interval_s
        self.latest: Sample | None = None  # replaced whole: readers on other threads see one or the other
        self._read_at_s = -math.inf  # when the read that gave ``latest`` began (monotonic)
        self._reads = 0
        self._wanted = True  # the first sample, read at start: a baseline for the first scrape's rates
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trayvml-serve-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._wanted or self._stop.is_set())
                self._wanted = False
                early_s = self._read_at_s + self.interval_s - time.monotonic()
            if self._stop.wait(max(0.0, early_s)):  # at most one read an interval
                return
            began_s = time.monotonic()
            sample: Sample | None
            try:
                sample = self._read()
            except Exception as error:  # Source.sample reports its own failures; anything else is a bug to see
                log.exception("sampling failed")
                # Said as such (up 0, read_failed), not the last sample served on as current.
                failed = NvmlUnavailable(UnavailableReason.READ_FAILED, f"{type(error).__name__}: {error}")
                sample = Sample(time.time(), (), (), None, None, unavailable=failed)
            with self._changed:  # the read's start with its sample: a scrape during the read waits for it
                self.latest = sample
                self._read_at_s = began_s
                self._reads += 1
                self._wanted = False  # a scrape that asked during this read has this read
                self._changed.notify_all()

    def fresh(self, wait_s: float) -> Sample | None:
        """For a scrape: a sample read less than ``interval_s`` ago, waiting for the loop to read one
        where the latest is older (from FRESH_SHARE of the interval on, the read waits out the
        rest: a scraper every interval gets a sample of its own each time); after ``wait_s`` (the
        read's own bound, after which a stalled driver is a sample that says so) the latest there
        is, None before the first."""
        with self._changed:
            if self.latest is not None and time.monotonic() - self._read_at_s < FRESH_SHARE * self.interval_s:
                return self.latest
            reads = self._reads
            self._wanted = True
            self._changed.notify_all()
            held_s = max(0.0, self._read_at_s + self.interval_s - time.monotonic())  # the loop's wait first
            self._changed.wait_for(lambda: self._reads != reads or self._stop.is_set(), timeout=held_s + wait_s)
            return self.latest

    def stop(self, wait_s: float = 2.0) -> None:
        self._stop.set()
        with self._changed:
            self._changed.notify_all()
        if self._thread.is_alive():
            self._thread.join(wait_s)


def run(
    listen: str | None, web_config: str | None, interval_s: float, read: Callable[[], Sample], read_wait_s: float
) -> int:
    """The ``serve`` command: serve until Ctrl-C or SIGTERM; ``read_wait_s`` is the longest a read
    takes (Source.sample's bound on a stalled driver). Raises TrayvmlError for bad input."""
    import signal
    import sys

    host, port = parse_listen(listen) if listen is not None else (DEFAULT_ADDRESS, DEFAULT_PORT)
    web = load_web_config(web_config) if web_config else None
    if not is_loopback(host):
        if web and web.users:
            warning = translate(
                "serve", "trayvml: warning: serving on {host}, reachable from other machines; basic auth is on."
            )
        else:
            warning = translate(
                "serve",
                "trayvml: warning: serving on {host}, reachable from other machines; "
                "anyone who can reach it can read your GPUs' metrics.",
            )
        print(warning.format(host=host), file=sys.stderr)
    loop = SamplingLoop(read, interval_s)
    loop.start()
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        exporter = Exporter(lambda: loop.fresh(read_wait_s), host, port, web)
        try:
            print(
                translate("serve", "trayvml: serving {url}").format(url=exporter.server.url),
                file=sys.stderr,
                flush=True,
            )
            trimmed = False
            while not stop.wait(0.5):
                if not trimmed and loop.latest is not None:
                    trimmed = True
                    give_back_free_memory()
        except KeyboardInterrupt:
            pass
        finally:
            exporter.close()
    finally:
        signal.signal(signal.SIGTERM, previous)
        loop.stop()
    return 0
