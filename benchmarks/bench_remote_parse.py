"""What the samples of one remote answer cost, by how the answer differs from the last (issue 23, P12').

    .venv/bin/python benchmarks/bench_remote_parse.py [--answers 12] [--reads 200] [--runs 5]

One ``trayvml serve`` on 8 simulated H100s (a process of its own) is read N times a second apart;
then, in this process, ``exporter_samples`` is timed (thread time a read, medians of R runs of
``--reads`` reads in a hot loop) on three pairs of its answers taken in turn through one cache: two
whose series differ (read in full each time: the process lists of serve come every 5 s), two with
the same series and other values (by the layout) and one answer read again (an exporter that
collects every 30 s, as dcgm-exporter by default). Compare trees with ``PYTHONSAFEPATH=1
PYTHONPATH=TREE`` in one session: hot loops here move by a few tenths of a millisecond from run
to run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_serve import _serve


def _series(body: bytes) -> list[str]:
    return [line.rpartition(" ")[0] for line in body.decode().splitlines() if line and line[0] != "#"]


def _facts(body: bytes) -> list[str]:
    return [line for line in body.decode().splitlines() if "_info{" in line or line.startswith("trayvml_up")]


def _timed(url: str, pair: tuple[bytes, bytes], reads: int, runs: int) -> tuple[float, float]:
    """(ms a read, the share of reads parsed in full)."""
    from trayvml.remote.fetch import SeriesCache, exporter_samples, parse_endpoint

    endpoint, cache = parse_endpoint(url), SeriesCache()
    full = [0]
    points = cache.points

    def counted(text: str) -> list:
        full[0] += 1
        return points(text)

    cache.points = counted  # type: ignore[method-assign]
    now_s = 1.8e9
    for body in pair:  # the layout made, the series seen
        exporter_samples(endpoint, body, "text/plain", now_s, cache)
    full[0] = 0
    rows = []
    kept = []  # the last read's samples, held as a remote's thread holds them until the next read
    for _ in range(runs):
        started = time.thread_time()
        for i in range(reads):
            now_s += 1.0
            kept = exporter_samples(endpoint, pair[i % 2], "text/plain", now_s, cache)
        rows.append((time.thread_time() - started) / reads * 1000)
    del kept
    return statistics.median(rows), full[0] / (reads * runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=12, help="answers read from serve, 1 s apart (default 12)")
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with _serve(8) as (url, _process):
        bodies = []
        for _ in range(args.answers):
            with urllib.request.urlopen(url, timeout=10) as answer:
                bodies.append(answer.read())
            time.sleep(1.05)
    pairs = [(a, b) for a in bodies for b in bodies if a != b]
    cases = {
        "the series changed (in full)": next((p for p in pairs if _series(p[0]) != _series(p[1])), None),
        "the same series, other values": next(
            (p for p in pairs if _series(p[0]) == _series(p[1]) and _facts(p[0]) == _facts(p[1])), None
        ),
        "the same bytes again": (bodies[0], bodies[0]),
    }
    print(f"trayvml serve, 8 simulated H100s: answers of {min(map(len, bodies))}-{max(map(len, bodies))} bytes")
    print(f"{'answer':32} {'ms a read':>9} {'in full':>8}")
    for name, pair in cases.items():
        if pair is None:
            print(f"{name:32} {'none among the answers':>18}")
            continue
        ms, full = _timed(url, pair, args.reads, args.runs)
        print(f"{name:32} {ms:9.3f} {full:8.0%}")


if __name__ == "__main__":
    main()
