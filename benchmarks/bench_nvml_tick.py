"""What one reader tick costs on serve's simulated GPUs (issue 23, P13): NVML calls, and time.

    PYTHONPATH=<tree> .venv/bin/python benchmarks/bench_nvml_tick.py [--ticks N] [--paced N] [-v]

On 8 simulated H100s (``training``, as ``bench_serve.py`` runs serve), without driver latency:
the NVML calls per tick (mean over N ticks, the 5 s and 10 s cadences included: deterministic),
and the median wall time of a tick in a hot loop, whole and outside the simulated library (what
trayvml, pynvml and ctypes spend; the simulated driver's own Python is timed around each of its
C functions and taken out). ``--paced N``: N ticks one second apart with ``latency=realistic``,
as serve reads, median and mean CPU time of the reading thread per tick. Run it once with
PYTHONPATH=/work/main (the baseline) and once with the tree to compare, in the same session.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import trayvml
from trayvml.core.clock import ManualClock
from trayvml.nvml.reader import NvmlReader
from trayvml.nvml.sim import base as simbase
from trayvml.nvml.sim import parse_spec
from trayvml.nvml.sim.library import SimulatedNvml, install, uninstall

SPEC = "training:gpus=h100*8,start=1800,past=0"
_inner = simbase.SimFunction.__call__
_in_library_s = [0.0]


def _timed(self: Any, *args: Any) -> Any:
    start = time.perf_counter()
    try:
        return _inner(self, *args)
    finally:
        _in_library_s[0] += time.perf_counter() - start


def hot(ticks: int) -> tuple[dict[str, int], list[float], list[float]]:
    """Calls per function over ``ticks``, and per tick: ms in all, ms outside the simulated library."""
    simbase.SimFunction.__call__ = _timed  # type: ignore[method-assign]
    clock = ManualClock()
    library = SimulatedNvml(parse_spec(SPEC), clock)
    install(library)
    reader = NvmlReader(clock)
    try:
        for _ in range(10):  # open, then settle
            reader.read()
            clock.advance_s(1)
        library.calls.clear()
        whole, outside = [], []
        for _ in range(ticks):
            clock.advance_s(1)
            _in_library_s[0] = 0.0
            start = time.perf_counter()
            reader.read()
            elapsed_s = time.perf_counter() - start
            whole.append(elapsed_s * 1e3)
            outside.append((elapsed_s - _in_library_s[0]) * 1e3)
        return dict(library.calls), whole, outside
    finally:
        reader.close()
        uninstall()
        simbase.SimFunction.__call__ = _inner  # type: ignore[method-assign]


def paced(ticks: int) -> list[float]:
    """CPU ms of the reading thread per tick, one tick a second, realistic driver latency."""
    clock = ManualClock()
    install(SimulatedNvml(parse_spec(SPEC + ",latency=realistic"), clock))
    reader = NvmlReader(clock)
    try:
        reader.read()
        cpu = []
        for _ in range(ticks):
            time.sleep(1.0)
            clock.advance_s(1)
            start = time.thread_time()
            reader.read()
            cpu.append((time.thread_time() - start) * 1e3)
        return cpu
    finally:
        reader.close()
        uninstall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ticks", type=int, default=300, help="hot-loop ticks (default 300)")
    parser.add_argument("--paced", type=int, default=0, help="ticks one second apart (default 0: none)")
    parser.add_argument("-v", action="store_true", help="calls per tick by function")
    args = parser.parse_args()
    print(f"trayvml from {trayvml.__file__}")
    calls, whole, outside = hot(args.ticks)
    print(f"NVML calls per tick, 8 GPUs: {sum(calls.values()) / args.ticks:.2f}")
    if args.v:
        for name, count in sorted(calls.items(), key=lambda item: -item[1]):
            print(f"  {count / args.ticks:7.2f} {name}")
    print(
        f"hot loop, no driver latency: {statistics.median(whole):.3f} ms a tick, "
        f"{statistics.median(outside):.3f} ms of it outside the simulated library"
    )
    if args.paced:
        cpu = paced(args.paced)[3:]
        print(
            f"one tick a second, latency=realistic: CPU {statistics.median(cpu):.3f} ms a tick (median), "
            f"{statistics.mean(cpu):.3f} ms (mean, the 5 s and 10 s reads included)"
        )


if __name__ == "__main__":
    main()
