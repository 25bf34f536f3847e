"""What reading remote hosts costs the reading process, in-process (issue 23, PERFORMANCE.md P12').

    .venv/bin/python benchmarks/bench_remote_reads.py [--hosts 8] [--seconds 20] [--rates 1,20]

One ``trayvml serve`` on 8 simulated H100s (a process of its own) answers every host: H remote
sources, each its own kept connection to it, read at each rate for S seconds after 2 s of settling,
in this process. Its CPU is what the process spent (``time.process_time``) and what the remote
threads spent (``/proc/self/task/*/schedstat``, ns): per host and second, and per read. The serve's
own CPU is not counted. Compare trees by running this script with each tree's PYTHONPATH in turn.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_serve import _serve  # noqa: E402


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


def measure(url: str, hosts: int, interval_s: float, seconds: float) -> tuple[float, float, int]:
    """(process CPU s, remote threads' CPU s, reads) over ``seconds``."""
    from trayvml.remote.fetch import parse_endpoint
    from trayvml.remote.source import Remotes

    remotes = Remotes([parse_endpoint(url) for _ in range(hosts)], interval_s=interval_s)
    remotes.start()
    try:
        time.sleep(2.0)
        faults = [s.remote.fault for s in remotes.samples() if s.remote is not None and s.remote.fault]
        if faults or len(remotes.samples()) != hosts:
            raise SystemExit(f"remotes not read: {faults}")
        cpu0, threads0 = time.process_time(), _remote_thread_s()
        time.sleep(seconds)
        cpu, threads = time.process_time() - cpu0, _remote_thread_s() - threads0
    finally:
        remotes.close()
    return cpu, threads, round(hosts * seconds / interval_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rates", default="1,20", help="reads a second per host (default 1,20)")
    args = parser.parse_args()
    with _serve(8) as (url, _process):
        print(f"{args.hosts} hosts (8 GPUs each, one trayvml serve), {args.seconds:g} s a row")
        print(f"{'reads/s a host':>14} {'process ms/s a host':>19} {'threads ms/s a host':>19} {'ms a read':>9}")
        for rate in (float(r) for r in args.rates.split(",")):
            cpu, threads, reads = measure(url, args.hosts, 1.0 / rate, args.seconds)
            per_host = 1000 / (args.seconds * args.hosts)
            print(f"{rate:>14g} {cpu * per_host:>19.3f} {threads * per_host:>19.3f} {cpu * 1000 / reads:>9.3f}")


if __name__ == "__main__":
    main()
