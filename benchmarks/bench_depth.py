"""What the depth features cost (issue 11) on simulated GPUs, zero NVML latency.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_depth.py [--ticks N] [--runs R]

Prints medians of R runs:
- reader CPU per GPU per tick on H100s with the always-on history demand, and with GPM read too
  (two sample buffers swapped, nvmlGpmMetricsGet over 11 metrics);
- the sysfs runtime-power poll made before any NVML call each tick;
- NVML calls per minute on an idle laptop GPU read every tick vs every 30 s (NVML let go between).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from trayvml.core.clock import ManualClock
from trayvml.core.demand import HISTORY
from trayvml.nvml.reader import NvmlReader
from trayvml.nvml.runtime_pm import RuntimePower
from trayvml.nvml.sim import parse_spec
from trayvml.nvml.sim.library import SimulatedNvml, install, uninstall

GPM = frozenset({"sm_activity_percent", "sm_occupancy_percent", "tensor_activity_percent", "dram_bandwidth_percent"})


def reader_us_per_gpu(gpus: int, ticks: int, demand: frozenset[str]) -> float:
    clock = ManualClock()
    install(SimulatedNvml(parse_spec(f"training:gpus=h100*{gpus},start=1800"), clock))
    reader = NvmlReader(clock, power=RuntimePower(Path("/nonexistent")))
    reader.read(demand)
    start = time.process_time()
    for _ in range(ticks):
        clock.advance_s(1)
        reader.read(demand)
    elapsed = time.process_time() - start
    reader.close()
    uninstall()
    return elapsed / ticks / gpus * 1e6


def sysfs_poll_us(ticks: int) -> float:
    clock = ManualClock()
    library = SimulatedNvml(parse_spec("idle:gpus=laptop"), clock)
    with tempfile.TemporaryDirectory() as root:
        library.write_sysfs(Path(root))
        power = RuntimePower(Path(root))
        power.poll()
        start = time.process_time()
        for _ in range(ticks):
            power.poll()
        return (time.process_time() - start) / ticks * 1e6


def laptop_calls_per_minute(idle_poll_s: float) -> float:
    clock = ManualClock()
    library = SimulatedNvml(parse_spec("idle:gpus=laptop"), clock)
    install(library)
    with tempfile.TemporaryDirectory() as root:
        library.write_sysfs(Path(root))
        reader = NvmlReader(clock, power=RuntimePower(Path(root)))
        reader.idle_poll_s = idle_poll_s
        for _ in range(600):
            library.sync_sysfs()
            reader.read(HISTORY)
            clock.advance_s(1)
        reader.release()
    uninstall()
    return sum(library.calls.values()) / 10


def median(runs: int, measure, *args) -> float:
    return statistics.median(measure(*args) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=600)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print("| what | figure |")
    print("|---|---|")
    for gpus in (1, 8):
        plain = median(args.runs, reader_us_per_gpu, gpus, args.ticks, HISTORY)
        gpm = median(args.runs, reader_us_per_gpu, gpus, args.ticks, HISTORY | GPM)
        print(f"| reader, {gpus} H100, history demand | {plain:.1f} µs/GPU/tick |")
        print(f"| reader, {gpus} H100, history + GPM | {gpm:.1f} µs/GPU/tick ({gpm - plain:+.1f}) |")
    print(f"| sysfs runtime-power poll, 1 GPU | {median(args.runs, sysfs_poll_us, args.ticks):.1f} µs/tick |")
    for idle_poll_s in (0.0, 30.0):
        calls = laptop_calls_per_minute(idle_poll_s)
        print(f"| idle laptop GPU, read every {idle_poll_s or 1:g} s | {calls:.0f} NVML calls/min |")


if __name__ == "__main__":
    main()
