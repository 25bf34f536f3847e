"""What one sample costs the GUI thread's pipeline (issue 23, P12' and P3): ``Monitor.take``.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_take.py [--samples N] [--runs R] [--profile]

A sequence of N samples of 8 simulated H100s (``training`` scenario, 1 s apart, host values of this
machine) is made once as the tray reads them (process lists not read, as while nothing asks for
them; every 10th sample with them, as the history on disk reads them); and another as ``trayvml
serve`` reads them (process lists every time), served in its exposition and read back by a remote
host's reader (what a remote host's monitor takes). Each run feeds a new ``Monitor`` (default alert
settings, memory-only history) the sequence again and again, later each time, for WARM_S seconds
and then once more, timing each ``take`` of that last round: the median over all runs' timed takes,
and the mean take of the best run. The mean is the CPU a sample costs: it counts the takes that
close a coarser history bucket, which a median leaves out; the best run, as a run that another
process held a CPU from (a shared machine) is slower in a few takes by far. The garbage collector is
off while a run is timed. ``--profile``: one more run of each under cProfile, the top functions by
own time.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import io
import math
import pstats
import statistics
import time
from collections.abc import Callable
from dataclasses import replace

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
# Takes before those timed: the first tier's ring (16 min) has gone round, as in a tray that has
# run a while (a fresh ring's first rows touch new memory pages: the kernel's time, not ours).
WARM_S = 1000


def local_samples(count: int, served: bool = False) -> list[Sample]:
    """This machine's samples as the tray reads them; ``served``: as ``trayvml serve`` reads them
    (everything, process lists too, every time)."""
    clock = ManualClock()
    source = Source(parse_spec(SPEC), clock, host=True)
    try:
        samples = []
        for i in range(count):
            demand = None if served else HISTORY | {PROCESSES} if i % 10 == 0 else HISTORY
            samples.append(source.sample(demand))
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
    fetch.get = lambda endpoint, url, timeout_s, kept=None, form=None: (body[0], "text/plain")
    try:
        found = []
        for sample in local:
            registry = CollectorRegistry(auto_describe=False)
            registry.register(SampleCollector(functools.partial(_itself, sample), hostname="gpu-box"))
            body[0] = generate_latest(registry)
            found += read_exporter(endpoint, 1.0, sample.timestamp_s, cache)
        return found
    finally:
        fetch.get = kept


def _itself(sample: Sample) -> Sample:
    return sample


def new_monitor(host: str) -> Monitor:
    dispatcher = Dispatcher(ManualClock())
    dispatcher.notifier_ready()
    return Monitor(dispatcher, AlertSettings(), History, host, processes_on_demand=not host)


def replayed(samples: list[Sample], times: int) -> list[Sample]:
    """``samples`` over and over, each time later by their span: the history's rings go round."""
    span_s = samples[-1].timestamp_s - samples[0].timestamp_s + 1.0
    return [replace(s, timestamp_s=s.timestamp_s + k * span_s) for k in range(times) for s in samples]


def take_ms(samples: list[Sample], host: str, runs: int) -> tuple[float, float]:
    """(the median take, the mean take of the best run) in ms, of the last len(samples) takes of
    WARM_S seconds of them."""
    warm = replayed(samples, math.ceil(WARM_S / len(samples)) + 1)
    timed = len(warm) - len(samples)
    times: list[float] = []
    run_means: list[float] = []
    for _ in range(runs):
        monitor = new_monitor(host)
        run: list[float] = []
        gc.collect()
        gc.disable()  # a collection now and then costs milliseconds, whatever made the garbage
        for i, sample in enumerate(warm):
            start = time.perf_counter()
            monitor.take(sample)
            if i >= timed:
                run.append(time.perf_counter() - start)
        gc.enable()
        times += run
        run_means.append(statistics.fmean(run))
    return statistics.median(times) * 1000, min(run_means) * 1000


def profiled(run: Callable[[], object], top: int, sort: str = "tottime") -> str:
    """``run`` under cProfile: its ``top`` functions by ``sort``, as text."""
    profiler = cProfile.Profile()
    profiler.runcall(run)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(top)
    return out.getvalue()


def profile(samples: list[Sample], host: str, top: int) -> str:
    monitor = new_monitor(host)
    return profiled(lambda: [monitor.take(s) for s in samples], top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    local = local_samples(args.samples)
    remote = remote_samples(local_samples(args.samples, served=True))
    for name, samples, host in (("local", local, ""), ("remote", remote, "gpu-box")):
        median, mean = take_ms(samples, host, args.runs)
        print(f"Monitor.take, {name} 8-GPU sample: median {median:.4f} ms, mean (best run) {mean:.4f} ms")
    if args.profile:
        for name, samples, host in (("local", local, ""), ("remote", remote, "gpu-box")):
            print(f"--- profile: {name}, {len(samples)} takes ---")
            print(profile(samples, host, args.top))


if __name__ == "__main__":
    main()
