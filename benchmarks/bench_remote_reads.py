"""What reading remote hosts costs the reading process, in-process (issue 23, PERFORMANCE.md P12').

    .venv/bin/python benchmarks/bench_remote_reads.py [--hosts 8] [--seconds 20] [--rates 1,20]

One ``trayvml serve`` on 8 simulated H100s (a process of its own) answers every host: H remote
sources, each its own kept connection to it, read at each rate for S seconds after 2 s of settling,
in this process. Its CPU is what the process spent (``getrusage``: user and system time) and what
the remote threads spent (``/proc/self/task/*/schedstat``, ns): per host and second, and per read;
with the voluntary context switches a read (each a thread that blocked and was woken again). The
serve's own CPU is not counted. Compare trees by running this script with each tree's PYTHONPATH
in turn, in the same session.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_serve import _serve


def _remote_thread_s() -> float:
    names = {t.native_id: t.name for t in threading.enumerate()}
    total = 0.0
    for tid in os.listdir("/proc/self/task"):
        if not names.get(int(tid), "").startswith("trayvml-remote"):
            continue
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0]) / 1e9
        except OSError:
            continue
    return total


def measure(url: str, hosts: int, interval_s: float, seconds: float) -> tuple[float, float, float, int]:
    """(process CPU s, remote threads' CPU s, voluntary context switches, reads) over ``seconds``."""
    from trayvml.remote.fetch import parse_endpoint
    from trayvml.remote.source import Remotes

    remotes = Remotes([parse_endpoint(url) for _ in range(hosts)], interval_s=interval_s)
    remotes.start()
    try:
        time.sleep(2.0)
        faults = [s.remote.fault for s in remotes.samples() if s.remote is not None and s.remote.fault]
        if faults or len(remotes.samples()) != hosts:
            raise SystemExit(f"remotes not read: {faults}")
        before, threads0 = resource.getrusage(resource.RUSAGE_SELF), _remote_thread_s()
        time.sleep(seconds)
        after, threads = resource.getrusage(resource.RUSAGE_SELF), _remote_thread_s() - threads0
    finally:
        remotes.close()
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu, threads, after.ru_nvcsw - before.ru_nvcsw, round(hosts * seconds / interval_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--seconds", default="25,8", help="seconds of each rate's row (default 25,8)")
    parser.add_argument("--rates", default="1,20", help="reads a second per host (default 1,20)")
    args = parser.parse_args()
    with _serve(8) as (url, _process):
        print(f"{args.hosts} hosts (8 GPUs each, one trayvml serve)")
        print(
            f"{'reads/s a host':>14} {'s':>4} {'process ms/s a host':>19} {'threads ms/s a host':>19} "
            f"{'ms a read':>9} {'switches a read':>15}"
        )
        for rate, seconds in zip(
            (float(r) for r in args.rates.split(",")), (float(s) for s in args.seconds.split(",")), strict=True
        ):
            cpu, threads, switches, reads = measure(url, args.hosts, 1.0 / rate, seconds)
            per_host = 1000 / (seconds * args.hosts)
            print(
                f"{rate:>14g} {seconds:>4g} {cpu * per_host:>19.3f} {threads * per_host:>19.3f} "
                f"{cpu * 1000 / reads:>9.3f} {switches / reads:>15.2f}"
            )


if __name__ == "__main__":
    main()
