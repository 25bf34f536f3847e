"""`trayvml serve`: this machine's GPUs as Prometheus metrics, read on a loop of its own."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from trayvml.core.clock import Ticker
from trayvml.core.heap import give_back_free_memory
from trayvml.core.i18n import translate
from trayvml.core.sample import Sample
from trayvml.prometheus import DEFAULT_ADDRESS, DEFAULT_PORT
from trayvml.prometheus.exposition import Exporter, is_loopback, load_web_config, parse_listen

log = logging.getLogger(__name__)


# ---- the sampling loop ----
class SamplingLoop:
    """Reads a sample every ``interval_s`` on a thread of its own; ``latest`` is what it read last."""

    def __init__(self, read: Callable[[], Sample], interval_s: float) -> None:
        self._read = read
        self.interval_s = interval_s
        self.latest: Sample | None = None  # replaced whole: readers on other threads see one or the other
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trayvml-serve-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        ticker = Ticker(self.interval_s)  # paced on the monotonic clock; the samples carry wall-clock stamps
        while not self._stop.is_set():
            try:
                self.latest = self._read()
            except Exception:  # Source.sample reports its own failures; anything else is a bug to see
                log.exception("sampling failed")
            ticker.interval_s = self.interval_s
            if ticker.wait_next(self._stop):
                break

    def stop(self, wait_s: float = 2.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(wait_s)


def run(listen: str | None, web_config: str | None, interval_s: float, read: Callable[[], Sample]) -> int:
    """The ``serve`` command: serve until Ctrl-C or SIGTERM. Raises TrayvmlError for bad input."""
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
        exporter = Exporter(lambda: loop.latest, host, port, web)
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
