"""What one remote 8-GPU host costs the tray each second, in-process (issue 23, PERFORMANCE.md P12').

    PYTHONPATH=. .venv/bin/python benchmarks/bench_remote_host.py [--samples N] [--runs R] [--profile]

N samples of 8 simulated H100s (``training``, 1 s apart) are read as ``trayvml serve`` reads them
and rendered in its exposition (the text a scrape gets); then, timed one by one, each step a
remote host adds to a second of the tray:

- the read: the exposition's text read by the last read's layout into a sample, on the reading
  thread (``fetch.exporter_samples`` with the host's kept ``SeriesCache``);
- on the GUI thread: the remote host's menu section and tooltip lines (``RemoteHostsView.show``),
  then the tray's update with the remote host beside this machine's 8 GPUs (icon contents,
  tooltip), less the tray's update without it; ``Monitor.take`` of a remote sample is
  ``bench_take.py``'s.

Each a new sample object every time, as every second brings; medians over R runs' timed steps
(the garbage collector off while timed). Qt runs offscreen: the tray item is not shown, so what Qt
and the tray host do with a new tooltip is not in these figures. ``--profile``: each step once more
under cProfile, the top functions by own time.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_take import local_samples, profiled

from trayvml.core.sample import Sample
from trayvml.prometheus.exposition import SampleCollector
from trayvml.remote.fetch import SeriesCache, exporter_samples, parse_endpoint

ENDPOINT = parse_endpoint("http://gpu-box:8729/metrics")


def expositions(samples: list[Sample]) -> list[bytes]:
    """Each sample as a scrape of ``trayvml serve`` answers it."""
    bodies = []
    for sample in samples:

        def latest(sample: Sample = sample) -> Sample:
            return sample

        registry = CollectorRegistry(auto_describe=False)
        registry.register(SampleCollector(latest, hostname="gpu-box"))
        bodies.append(generate_latest(registry))
    return bodies


def timed(steps: list[Callable[[], object]], runs: int) -> float:
    """The median of every run's steps, in ms (each step run once a run, in order)."""
    times = []
    for _ in range(runs):
        gc.collect()
        gc.disable()
        for step in steps:
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        gc.enable()
    return statistics.median(times) * 1000


def _run_all(steps: list[Callable[[], object]]) -> None:
    for step in steps:
        step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from trayvml.ui.remote_hosts import RemoteHostsView, in_icon
    from trayvml.ui.tray import Tray

    app = QApplication.instance() or QApplication([])  # noqa: F841 (kept alive while it runs)
    bodies = expositions(local_samples(args.samples + 1, served=True))
    cache = SeriesCache()
    exporter_samples(ENDPOINT, bodies[0], "text/plain", 0.0, cache)  # the first read makes the layout
    reads: list[Callable[[], object]] = [
        partial(exporter_samples, ENDPOINT, body, "text/plain", 1.0, cache) for body in bodies[1:]
    ]
    remote = [exporter_samples(ENDPOINT, body, "text/plain", 1.0, cache)[0] for body in bodies[1:]]
    local = local_samples(args.samples)

    tray = Tray()
    view = RemoteHostsView(tray.menu, tray.copy_action)
    view.show_hosts(True)
    plain = Tray()

    def shown(sample: Sample) -> None:
        view.show([sample])
        tray.remote_lines, tray.remote_icon_samples = view.lines, in_icon(view.samples, ("*",))

    def tick(sample: Sample, mine: Sample) -> None:
        shown(sample)
        tray.update(mine)

    steps: dict[str, list[Callable[[], object]]] = {
        "read by layout (reading thread)": reads,
        "RemoteHostsView.show": [partial(shown, s) for s in remote],
        "tray tick with the host": [partial(tick, s, m) for s, m in zip(remote, local, strict=True)],
        "tray tick without (Tray.update)": [partial(plain.update, m) for m in local],
    }
    figures = {name: timed(run, args.runs) for name, run in steps.items()}
    for name, ms in figures.items():
        print(f"{name:<34} {ms:.4f} ms")
    gui = figures["tray tick with the host"] - figures["tray tick without (Tray.update)"]
    print(f"{'GUI thread, the host adds':<34} {gui:.4f} ms (and Monitor.take: bench_take.py)")
    if args.profile:
        for name, run in steps.items():
            print(f"--- profile: {name}, {len(run)} steps ---")
            print(profiled(partial(_run_all, run), args.top, os.environ.get("SORT", "tottime")))


if __name__ == "__main__":
    main()
