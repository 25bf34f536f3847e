"""History on disk (PERFORMANCE.md P10): bytes per sample, write cost, reading a week back.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_store.py [--hours 24] [--gpus 8] [--scenario training]

Pushes HOURS of simulated GPUs (the real simulated NVML, read second by second on a manual
clock, with the host's metrics) through the real store writer, one Sample a second. Reports the
store's bytes on disk per stored sample (one metric of one device at one second), the writer's
CPU per second of samples, and the time to read a 7-day range of 8 GPUs from the coarse tier.
For the week, the coarse blocks of the simulated day are copied into the six days before it
(values as simulated, times moved), since simulating a week of seconds would take an hour here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trayvml.core.clock import ManualClock  # noqa: E402
from trayvml.core.sample import HostSample  # noqa: E402
from trayvml.history.disk import codec  # noqa: E402
from trayvml.history.disk.db import BUCKET_MS, DAY_MS, PACKED_LEVEL, WIDE_BUCKET_MS, Database, Tier  # noqa: E402
from trayvml.history.disk.limits import Limits  # noqa: E402
from trayvml.history.disk.read import StoreReader  # noqa: E402
from trayvml.history.disk.write import GPU_LAYOUT, StoreWriter, merge_coarse  # noqa: E402
from trayvml.nvml.sim import simulation_from  # noqa: E402
from trayvml.source import Source  # noqa: E402

START_S = 1_800_000_000.0  # 2027-01-15 08:00 UTC
WEEK_S = 7 * 86400.0
WINDOW_POINTS = 1000  # about a plot's width in pixels


def _host(t: float, cores: int) -> HostSample:
    """A busy-ish host (CPU, RAM, disk, network): the host sampler reads the real machine, which
    here is a shared VM, so its values are made from smooth curves with noise instead."""
    rng = np.random.default_rng(int(t))
    load = 40 + 30 * np.sin(t / 900)
    core = np.clip(load + rng.normal(0, 10, cores), 0, 100).round(1)
    ram = 24e9 + 2e9 * np.sin(t / 3600) + rng.normal(0, 5e7)
    values = (
        float(core.mean().round(1)),
        float(ram),
        64e9,
        float(100 * ram / 64e9),
        1.2e9,
        8e9,
        float(max(0, rng.normal(2e6, 1e6))),
        float(max(0, rng.normal(5e6, 2e6))),
        float(max(0, rng.normal(1e6, 5e5))),
        float(max(0, rng.normal(3e5, 1e5))),
    )
    return HostSample(values, tuple(float(c) for c in core))


def push(folder: Path, hours: float, gpus: int, scenario: str) -> tuple[int, float, float]:
    """(seconds pushed, writer CPU seconds, simulation CPU seconds)."""
    spec = simulation_from(f"{scenario}:gpus=h100*{gpus}")
    clock = ManualClock(START_S)
    source = Source(spec, clock, host=False)
    writer = StoreWriter(folder, Limits(fine_span_s=24 * 3600.0, coarse_span_s=WEEK_S, size_cap_bytes=2**40))
    write_cpu = 0.0
    seconds = round(hours * 3600)
    began = time.process_time()
    try:
        for k in range(seconds):
            clock.advance_s(1.0)
            sample = source.sample()
            sample = type(sample)(**{**sample.__dict__, "host": _host(clock.now_s(), 16)})
            t0 = time.process_time()
            writer.append(sample)
            write_cpu += time.process_time() - t0
            if k % 3600 == 0:
                print(f"  {k / 3600:.0f} h pushed", file=sys.stderr)
    finally:
        t0 = time.process_time()
        writer.close()
        write_cpu += time.process_time() - t0
        source.close()
    return seconds, write_cpu, time.process_time() - began - write_cpu


def copy_week(folder: Path) -> None:
    """Copy the coarse and wide blocks of the simulated day into the six days before it.

    The last UTC day of the run is merged as the writer merges a finished day (one coarse block of
    minutes, one wide block of 10 minutes), so that the copies have the shape a real week has.
    """
    db = Database(folder)
    with db.transaction():
        for device in db.devices():
            blocks = db.blocks(device.id, (Tier.COARSE,), 0, 2**62)
            layout = blocks[-1].layout
            parts = [codec.decode(b.data, b.crc, codec.COARSE_MATRICES) for b in blocks if b.layout == layout]
            day = merge_coarse(parts, BUCKET_MS)
            wide = merge_coarse([day], WIDE_BUCKET_MS)
            for back in range(1, 7):
                for tier, matrices in ((Tier.COARSE, day), (Tier.WIDE, wide)):
                    moved = [matrices[0] - back * DAY_MS, *matrices[1:]]
                    blob, check = codec.encode(moved, PACKED_LEVEL)
                    times = moved[0][0]
                    db.insert(device.id, tier, int(times[0]), int(times[-1]), len(times), layout, blob, check)
    db.close()


def read_week(folder: Path, end_s: float, runs: int) -> tuple[float, int]:
    """Median seconds to read a 7-day range of every GPU (every metric) from the coarse and wide tiers
    (the last hour, not yet packed, comes from the window's memory: see trayvml/history/timeline.py)."""
    times = []
    buckets = 0
    for _ in range(runs):
        reader = StoreReader(folder)
        t0 = time.perf_counter()
        uuids = [d.uuid for d in reader.devices() if d.uuid != "host"]
        for uuid in uuids:
            data = reader.coarse(uuid, end_s - WEEK_S, end_s, WEEK_S / WINDOW_POINTS, GPU_LAYOUT.keys, fresh=False)
            buckets = len(data.times_s)
        times.append(time.perf_counter() - t0)
        reader.close()
    return statistics.median(times), buckets


def redraw_week(folder: Path, end_s: float, runs: int) -> tuple[list[float], list[float], list[float]]:
    """Seconds of the window's refresh at 7 days, 8 GPUs, offscreen, each run: (opened afresh, every
    block read from disk; the range moved by a bucket, blocks already decoded; nothing moved)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from trayvml.history.timeline import DiskReach, History
    from trayvml.ui.window import GraphWindow

    app = QApplication.instance() or QApplication([])
    clock = ManualClock(end_s)
    source = Source(simulation_from("training:gpus=h100*8"), clock, host=True)
    sample = source.sample()
    source.close()
    history = History()
    history.append(sample)
    window = GraphWindow(history)
    window.resize(1100, 800)
    window.update_sample(sample)
    window.show()
    app.processEvents()
    window.set_range(int(WEEK_S))
    window.refresh()
    opened, moved, cached = [], [], []
    for _ in range(runs):
        history.disk = DiskReach(folder)
        history.disk.uuids = tuple(d.uuid for d in sample.devices)
        t0 = time.perf_counter()
        window.refresh()
        opened.append(time.perf_counter() - t0)
        history.disk._cache.clear()
        t0 = time.perf_counter()
        window.refresh()
        moved.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        window.refresh()
        cached.append(time.perf_counter() - t0)
        history.disk.close()
    window.hide()
    return opened, moved, cached


def _spread(seconds: list[float]) -> str:
    """Median and range in ms: the machine is shared, one figure alone says little."""
    ms = [s * 1e3 for s in seconds]
    return f"{statistics.median(ms):.1f} ms ({min(ms):.1f}–{max(ms):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--scenario", default="training")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "history"
        seconds, write_cpu, sim_cpu = push(folder, args.hours, args.gpus, args.scenario)
        reader = StoreReader(folder)
        stats = reader.stats()
        tiers = (
            reader._database()
            .connection.execute(  # type: ignore[union-attr]
                "SELECT tier, COUNT(*), SUM(LENGTH(data)) FROM blocks GROUP BY tier ORDER BY tier"
            )
            .fetchall()
        )
        reader.close()
        copy_week(folder)
        week_s, buckets = read_week(folder, START_S + seconds, args.runs)
        opened, moved, cached = redraw_week(folder, START_S + seconds, args.runs)
    per_second = write_cpu / seconds
    print(f"\nHistory store, {args.gpus} simulated GPUs ({args.scenario}) + host (16 cores), {args.hours:g} h at 1 s\n")
    print("| figure | measured | target |")
    print("|---|---|---|")
    print(f"| stored samples (metric × device × second) | {stats.samples:,} | |")
    print(f"| bytes on disk (SQLite file + WAL) | {stats.file_bytes:,} | |")
    print(f"| **bytes per sample** | **{stats.bytes_per_sample:.3f}** | < 1 |")
    for tier, count, size in tiers:
        print(f"| of which {Tier(tier).name.lower()} blocks | {count} blocks, {size:,} B | |")
    print(f"| writer CPU per second of samples | {per_second * 1e3:.3f} ms | |")
    print(f"| **writer CPU at 1 Hz** | **{per_second * 100:.4f} % of a core** | ≤ 0.1 % |")
    print(f"| (the simulated NVML's own CPU, not counted) | {sim_cpu / seconds * 1e3:.2f} ms/s | |")
    print(
        f"| **read 7 days × {args.gpus} GPUs × every metric, coarse tier** | **{week_s * 1e3:.1f} ms** "
        f"({buckets} buckets each, median of {args.runs}) | |"
    )
    runs = f"median (range) of {args.runs}"
    opened_text = f"**{_spread(opened)}** {runs}"
    print(f"| **window refresh at 7 d, 8 GPUs: opened, the week read from disk** | {opened_text} | ≤ 50 ms |")
    print(f"| window refresh at 7 d: the range moved a bucket (blocks decoded before) | {_spread(moved)} | ≤ 50 ms |")
    print(f"| window refresh at 7 d: nothing new to read | {_spread(cached)} | ≤ 50 ms |")
    print(f"\n(load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
