"""Reader cost (PERFORMANCE.md P1, P2 reader part, P6, P8) on simulated GPUs.

    .venv/bin/python benchmarks/bench_reader.py [--ticks N] [--runs R] [--real]

Prints medians of R runs. Baselines measured in the same run on the same simulated NVML:
a bare loop of the same 1 Hz pynvml calls, and gpustat's query. With --real, the reader is
also measured on this machine's real GPUs (no simulation).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import time

import pynvml as N

from trayvml.core.clock import ManualClock, SystemClock
from trayvml.history.rings import default_tiers
from trayvml.history.timeline import History
from trayvml.nvml.binding import read_fields, read_memory_v2
from trayvml.nvml.fields import field_array
from trayvml.nvml.reader import NvmlReader
from trayvml.nvml.sim import parse_spec
from trayvml.nvml.sim.library import SimulatedNvml, install, uninstall

FAST_FIELDS = [
    N.NVML_FI_DEV_POWER_INSTANT,
    N.NVML_FI_DEV_MEMORY_TEMP,
    N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES,
    N.NVML_FI_DEV_PCIE_COUNT_RX_BYTES,
]


def _sim(spec: str) -> tuple[SimulatedNvml, ManualClock]:
    clock = ManualClock()
    library = SimulatedNvml(parse_spec(spec), clock)
    install(library)
    return library, clock


def reader_cpu_us_per_gpu(gpus: int, ticks: int, profile: str = "h100") -> float:
    """CPU per GPU per tick, all cadences included (slow ops amortised), zero NVML latency."""
    _, clock = _sim(f"training:gpus={profile}*{gpus}")
    reader = NvmlReader(clock)
    reader.read()  # open, read static facts, probe support
    start = time.process_time()
    for _ in range(ticks):
        clock.advance_s(1)
        reader.read()
    elapsed = time.process_time() - start
    reader.close()
    return elapsed / ticks / gpus * 1e6


def bare_loop_cpu_us_per_gpu(gpus: int, ticks: int, profile: str = "h100", raw_fields: bool = False) -> float:
    """The same 1 Hz pynvml calls the reader makes, without any of its bookkeeping.

    With ``raw_fields``, field values are read as the reader reads them (one prepared array,
    the C function called directly) instead of through pynvml's per-field Python wrapper.
    """
    library, clock = _sim(f"training:gpus={profile}*{gpus}")
    N.nvmlInit()
    handles = [N.nvmlDeviceGetHandleByIndex(i) for i in range(gpus)]
    links = library.profiles[0].nvlink_links
    fields = FAST_FIELDS + [
        (fid, link)
        for link in range(links)
        for fid in (N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX)
    ]
    event_set = N.nvmlEventSetCreate()
    array = field_array([f if isinstance(f, tuple) else (f, 0) for f in fields])
    calls = [
        N.nvmlDeviceGetUtilizationRates,
        read_memory_v2,
        lambda h: N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU),
        N.nvmlDeviceGetPowerUsage,
        N.nvmlDeviceGetTotalEnergyConsumption,
        *[
            functools.partial(N.nvmlDeviceGetClockInfo, type=kind)
            for kind in (N.NVML_CLOCK_SM, N.NVML_CLOCK_GRAPHICS, N.NVML_CLOCK_MEM, N.NVML_CLOCK_VIDEO)
        ],
        N.nvmlDeviceGetPerformanceState,
        N.nvmlDeviceGetCurrentClocksEventReasons,
        N.nvmlDeviceGetEncoderUtilization,
        N.nvmlDeviceGetDecoderUtilization,
        (lambda h: read_fields(h, array)) if raw_fields else (lambda h: N.nvmlDeviceGetFieldValues(h, fields)),
    ]

    def supported(call) -> bool:
        try:
            call(handles[0])
        except N.NVMLError:
            return False  # as the reader does, a call the GPU lacks is not made again
        return True

    calls = [call for call in calls if supported(call)]
    start = time.process_time()
    for _ in range(ticks):
        clock.advance_s(1)
        with contextlib.suppress(N.NVMLError):  # TIMEOUT: no XID event pending
            N.nvmlEventSetWait_v2(event_set, 0)
        for h in handles:
            for call in calls:
                call(h)
    elapsed = time.process_time() - start
    N.nvmlShutdown()
    return elapsed / ticks / gpus * 1e6


def gpustat_cpu_us_per_gpu(gpus: int, ticks: int) -> float:
    import gpustat

    _, clock = _sim(f"training:gpus=h100*{gpus}")
    gpustat.new_query()
    start = time.process_time()
    for _ in range(ticks):
        clock.advance_s(1)
        gpustat.new_query()
    return (time.process_time() - start) / ticks / gpus * 1e6


def realistic_wall(gpus: int, ticks: int, profile: str) -> tuple[float, float]:
    """Wall seconds per tick, and the NVML latency the simulation emulated per tick."""
    library, clock = _sim(f"training:gpus={profile}*{gpus},latency=realistic")
    reader = NvmlReader(clock)
    reader.read()
    library.latency_waited_s = 0.0
    start = time.perf_counter()
    for _ in range(ticks):
        clock.advance_s(1)
        reader.read()
    wall = (time.perf_counter() - start) / ticks
    return wall, library.latency_waited_s / ticks


def history_figures() -> tuple[float, float]:
    """Bytes for 8 GPUs x every metric x 12 h, and the append cost per tick."""
    _, clock = _sim("training:gpus=h100*8")
    from trayvml.source import Source

    source = Source(parse_spec("training:gpus=h100*8"), clock, host=True)
    history = History(default_tiers(12 * 3600))
    samples = []
    for _ in range(200):
        clock.advance_s(1)
        samples.append(source.sample())
    start = time.process_time()
    for sample in samples:
        history.append(sample)
    append_us = (time.process_time() - start) / len(samples) * 1e6
    return history.nbytes / 2**20, append_us


def median(runs: int, measure, *args) -> float:
    values = [measure(*args) for _ in range(runs)]
    uninstall()
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=600)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--real", action="store_true", help="also measure this machine's real GPUs")
    args = parser.parse_args()
    ticks, runs = args.ticks, args.runs

    print(f"P1/P8 reader CPU per GPU per tick, simulated H100s, zero NVML latency (median of {runs})")
    print("  bare: the same 1 Hz calls through pynvml's wrappers; bare*: field values read the reader's way")
    columns = ("GPUs", "reader", "bare", "bare*", "reader/bare", "reader/bare*", "gpustat")
    print(" ".join(f"{c:>12}" for c in columns))
    for gpus in (1, 8, 16):
        ours = median(runs, reader_cpu_us_per_gpu, gpus, ticks)
        bare = median(runs, bare_loop_cpu_us_per_gpu, gpus, ticks)
        raw = median(runs, bare_loop_cpu_us_per_gpu, gpus, ticks, "h100", True)
        # gpustat sleeps 100 ms per GPU per query (gpustat#54): a few queries measure its CPU as well
        theirs = median(min(runs, 3), gpustat_cpu_us_per_gpu, gpus, 10)
        figures = (ours, bare, raw, ours / bare, ours / raw, theirs)
        print(f"{gpus:>12} " + " ".join(f"{x:>12.2f}" if x < 10 else f"{x:>12.1f}" for x in figures))
    print("  (µs of CPU per GPU per tick)")
    for profile in ("rtx4090", "laptop"):
        ours = median(runs, reader_cpu_us_per_gpu, 8, ticks, profile)
        raw = median(runs, bare_loop_cpu_us_per_gpu, 8, ticks, profile, True)
        print(f"  8 × {profile}: reader {ours:.1f} µs/GPU, bare* {raw:.1f} µs/GPU, ratio {ours / raw:.2f}")

    print("\nP2 (reader part) wall per tick with realistic NVML latency, 8 GPUs")
    for profile in ("h100", "laptop"):
        wall, waited = realistic_wall(8, 60, profile)
        print(
            f"  8 × {profile}: wall {wall * 1e3:.2f} ms/tick, NVML latency {waited * 1e3:.2f} ms/tick, "
            f"ratio {wall / waited:.2f}"
        )
    uninstall()

    size_mib, append_us = history_figures()
    uninstall()
    print(f"\nP6 history, 8 GPUs × every metric × 12 h: {size_mib:.1f} MiB; append {append_us:.1f} µs per tick")

    if args.real:
        print("\nReal GPUs (no simulation):")
        reader = NvmlReader(SystemClock())
        first = reader.read()
        if not first:
            print(f"  NVML unavailable: {reader.unavailable.sentence if reader.unavailable else '?'}")
            return
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        for _ in range(ticks):
            reader.read()
        cpu = (time.process_time() - start_cpu) / ticks / len(first) * 1e6
        wall = (time.perf_counter() - start_wall) / ticks * 1e3
        print(f"  {len(first)} GPU(s): reader {cpu:.1f} µs CPU per GPU per tick, {wall:.2f} ms wall per tick")


if __name__ == "__main__":
    main()
