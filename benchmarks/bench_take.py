"""What one sample costs the GUI thread's pipeline (issue 23, P12' and P3): ``Monitor.take``.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_take.py [--samples N] [--runs R] [--profile]

A sequence of N samples of 8 simulated H100s (``training`` scenario, 1 s apart, host values of this
machine) is made once: this machine's as the tray reads them (process lists not read, as while
nothing asks for them; every 10th sample with them, as the history on disk reads them), and the same
samples served by ``trayvml serve``'s exposition and read back by a remote host's reader (what a
remote host's monitor takes). Each run feeds the sequence into a new ``Monitor`` (default alert
settings, memory-only history) and times each ``take``; the figure is the median over all takes of
all runs after the first 60 of each (the history's first buckets, the alert trackers' first
states). ``--profile``: one more run of each under cProfile, the top functions by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, generate_latest

from trayvml.alerts.dispatch import Dispatcher
from trayvml.alerts.engine import AlertSettings
from trayvml.core.clock import ManualClock
from trayvml.core.demand import HISTORY, PROCESSES
from trayvml.core.sample import Sample
from trayvml.history.timeline import History
from trayvml.monitor.pipeline import Monitor
from trayvml.nvml.sim import parse_spec
from trayvml.prometheus.exposition import SampleCollector
from trayvml.remote import fetch
from trayvml.remote.fetch import SeriesCache, parse_endpoint, read_exporter
from trayvml.source import Source

SPEC = "training:gpus=h100*8,start=1800,past=0"
WARM = 60  # takes left out of each run's figures


def local_samples(count: int) -> list[Sample]:
    clock = ManualClock()
    source = Source(parse_spec(SPEC), clock, host=True)
    try:
        samples = []
        for i in range(count):
            samples.append(source.sample(HISTORY | {PROCESSES} if i % 10 == 0 else HISTORY))
            clock.advance_s(1.0)
        return samples
    finally:
        source.close()


def remote_samples(local: list[Sample]) -> list[Sample]:
    """Each sample as a remote host's reader reads it from ``trayvml serve`` (all process lists read)."""
    endpoint = parse_endpoint("http://gpu-box:8729")
    cache = SeriesCache()
    body = [b""]
    kept = fetch.get
    fetch.get = lambda endpoint, url, timeout_s, kept=None: (body[0], "text/plain")  # type: ignore[assignment]
    try:
        found = []
        for sample in local:
            registry = CollectorRegistry(auto_describe=False)
            registry.register(SampleCollector(lambda sample=sample: sample, hostname="gpu-box"))
            body[0] = generate_latest(registry)
            found += read_exporter(endpoint, 1.0, sample.timestamp_s, cache)
        return found
    finally:
        fetch.get = kept  # type: ignore[assignment]


def new_monitor(host: str) -> Monitor:
    dispatcher = Dispatcher(ManualClock())
    dispatcher.notifier_ready()
    return Monitor(dispatcher, AlertSettings(), History, host, processes_on_demand=not host)


def take_ms(samples: list[Sample], host: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        monitor = new_monitor(host)
        for i, sample in enumerate(samples):
            start = time.perf_counter()
            monitor.take(sample)
            if i >= WARM:
                times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def profile(samples: list[Sample], host: str, top: int) -> str:
    monitor = new_monitor(host)
    run: Callable[[], None] = lambda: [monitor.take(s) for s in samples] and None  # noqa: E731
    profiler = cProfile.Profile()
    profiler.runcall(run)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    local = local_samples(args.samples)
    remote = remote_samples(local)
    for name, samples, host in (("local", local, ""), ("remote", remote, "gpu-box")):
        print(f"Monitor.take, {name} 8-GPU sample: {take_ms(samples, host, args.runs):.4f} ms (median)")
    if args.profile:
        for name, samples, host in (("local", local, ""), ("remote", remote, "gpu-box")):
            print(f"--- profile: {name}, {len(samples)} takes ---")
            print(profile(samples, host, args.top))


if __name__ == "__main__":
    main()
