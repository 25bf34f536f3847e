"""History on disk (PERFORMANCE.md P10, P10'): bytes per sample, write cost, reading a week back.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_store.py [--hours 24] [--gpus 8] [--scenario training]
        [--store DIR] [--runs 5] [--export-runs 3]

Pushes HOURS of simulated GPUs (the real simulated NVML, read second by second on a manual
clock, with the host's metrics) through the real store writer, one Sample a second, with the
default limits' shape (every sample for 24 h, minutes for 7 days). Reports the store's bytes on
disk per stored sample (one metric of one device at one second), the writer's CPU per second of
samples, the time to read a 7-day range of 8 GPUs from the coarse tier, the window's first redraw
of a 7-day range (read and paint), and `trayvml history` exporting those 7 days as a child
process (wall time, peak RSS).

For the week, the coarse blocks of the simulated hours are copied into the days before them until
7 days are covered (values as simulated, times moved): pushing a week of seconds through the
writer takes about 20 minutes here (``--hours 168`` does it). ``--store DIR`` keeps the store built
in DIR and reuses it on the next run (so that before and after are measured on the same bytes).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trayvml.core.clock import ManualClock  # noqa: E402
from trayvml.core.sample import HostSample  # noqa: E402
from trayvml.history.disk import codec  # noqa: E402
from trayvml.history.disk.blocks import merge_coarse  # noqa: E402
from trayvml.history.disk.db import BUCKET_MS, DAY_MS, PACKED_LEVEL, WEEK_MS, WIDE_BUCKET_MS, Database, Tier  # noqa: E402
from trayvml.history.disk.limits import Limits  # noqa: E402
from trayvml.history.disk.read import StoreReader  # noqa: E402
from trayvml.history.disk.write import GPU_LAYOUT, StoreWriter  # noqa: E402
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


def copy_week(folder: Path, hours: float) -> None:
    """Copy the minutes of the simulated hours into the days before them, until the store reaches
    back a week (nothing is copied when the hours pushed cover it).

    The copies move by whole days, so that they never overlap, and the week is then laid out as
    the packer lays it out: one coarse block of minutes a UTC day, and one wide block of 10 minutes
    a UTC week (from Thursdays).
    """
    days = max(1, math.ceil(hours / 24))
    copies = math.ceil(7 / days) - 1
    db = Database(folder)
    with db.transaction():
        for device in db.devices():
            blocks = db.blocks(device.id, (Tier.COARSE, Tier.WIDE), 0, 2**62)
            layout = blocks[-1].layout
            coarse = [b for b in blocks if b.tier is Tier.COARSE and b.layout == layout]
            minutes = merge_coarse([codec.decode(b.data, b.crc, codec.COARSE_MATRICES) for b in coarse], BUCKET_MS)
            moved = [[minutes[0] - back * days * DAY_MS, *minutes[1:]] for back in range(copies, 0, -1)]
            week = merge_coarse([*moved, minutes], BUCKET_MS)
            db.delete([b.id for b in blocks])
            times = week[0][0]
            made = []
            for day in np.unique(times // DAY_MS).tolist():
                on = times // DAY_MS == day
                made.append((Tier.COARSE, [times[on][None, :], *(m[:, on] for m in week[1:])]))
            for week_start in np.unique(times - times % WEEK_MS).tolist():
                on = (times >= week_start) & (times < week_start + WEEK_MS)
                made.append(
                    (Tier.WIDE, merge_coarse([[times[on][None, :], *(m[:, on] for m in week[1:])]], WIDE_BUCKET_MS))
                )
            for tier, matrices in made:
                blob, check = codec.encode(matrices, PACKED_LEVEL)
                stamps = matrices[0][0]
                db.insert(device.id, tier, int(stamps[0]), int(stamps[-1]), len(stamps), layout, blob, check)
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


def redraw_week(
    folder: Path, end_s: float, runs: int
) -> tuple[list[float], list[float], list[float], list[float], list[float], list[float]]:
    """Seconds of the window's redraw at 7 days, 8 GPUs, offscreen, each run: (opened afresh, every
    block read from disk, the lines set; its paint after; the range moved by a bucket, blocks
    already decoded; nothing moved; 7 days chosen where the window showed an hour, every block read
    from disk, set and painted; the same as the event loop runs it). The first two together are
    what the 7-day view's first redraw costs: read and set the lines, then paint them (``grab``
    paints the whole window); the fifth is the same as a user meets it, the range's axes, ticks
    and lines all changed too; the last is that as the app does it: a panel a turn of the event
    loop, then Qt's paint of what changed (not the whole window: the scroll bar, the tabs' frame
    and most of the toolbar stay as they were). Memory holds the store's last two hours, as a
    tray's does."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication

    from trayvml.history.rings import default_tiers
    from trayvml.history.timeline import DiskReach, History, backfill
    from trayvml.ui.app import MEMORY_WITH_STORE_S
    from trayvml.ui.window import GraphWindow

    app = QApplication.instance() or QApplication([])
    clock = ManualClock(end_s)
    source = Source(simulation_from("training:gpus=h100*8"), clock, host=True)
    sample = source.sample()
    source.close()
    # Memory holds what a tray with its store holds (two hours), filled from the store as the tray
    # fills it when it starts: with one sample in it, a redraw joined one row of memory, not 240.
    history = History(default_tiers(MEMORY_WITH_STORE_S))
    reader = StoreReader(folder)
    backfill(history, reader, sample, history.tiers[-1].span_s)
    reader.close()
    history.append(sample)
    window = GraphWindow(history)
    window.resize(1100, 800)
    window.update_sample(sample)
    window.show()
    app.processEvents()
    window.set_range(int(WEEK_S))
    window.refresh()
    window.grab()

    class Paints(QObject):
        count = 0

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
            self.count += event.type() == QEvent.Type.Paint
            return False

    paints = Paints()  # on the application only around the row it counts for: a filter slows every event

    def afresh(range_s: int) -> DiskReach:
        """The store read anew (the last reach let go, nothing of the week read) at ``range_s``."""
        if history.disk is not None:
            history.disk.close()
        disk = history.disk = DiskReach(folder)
        disk.uuids = tuple(d.uuid for d in sample.devices)
        window.set_range(range_s)
        return disk

    opened, painted, moved, cached, switched, flowed = [], [], [], [], [], []
    for _ in range(runs):
        disk = afresh(int(WEEK_S))
        t0 = time.perf_counter()
        window.refresh()
        opened.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        window.grab()
        painted.append(time.perf_counter() - t0)
        disk._cache.clear()
        t0 = time.perf_counter()
        window.refresh()
        moved.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        window.refresh()
        cached.append(time.perf_counter() - t0)
        afresh(3600)
        window.refresh()
        window.grab()
        t0 = time.perf_counter()
        window.set_range(int(WEEK_S))
        window.refresh()
        window.grab()
        switched.append(time.perf_counter() - t0)
        afresh(3600)
        window.refresh()
        app.processEvents()
        paints.count = 0
        app.installEventFilter(paints)
        t0 = time.perf_counter()
        window.set_range(int(WEEK_S))
        while window.redrawing():
            app.processEvents()
        app.processEvents()  # Qt paints what the redraw changed
        flowed.append(time.perf_counter() - t0)
        app.removeEventFilter(paints)
        if not paints.count:
            raise SystemExit("the event loop's redraw at 7 days painted nothing: its figure would mean nothing")
    if history.disk is not None:
        history.disk.close()
    window.hide()
    return opened, painted, moved, cached, switched, flowed


# Runs the command given and prints its wall seconds and peak RSS (KiB). The export is this small
# process's child: the peak RSS of a child forked from the benchmark itself would count the
# benchmark's own pages (Qt, the window), shared with it until the exec.
_MEASURE = """
import resource, subprocess, sys, time
t0 = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - t0
if done.returncode:
    sys.exit(done.stderr.decode())
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def export_week(
    folder: Path, end_s: float, runs: int, keep: Path | None = None
) -> tuple[list[float], list[int], int, int]:
    """`trayvml history` of the 7 days before ``end_s``, all GPUs, default columns, to a CSV file, as a
    child process each run: (wall seconds, peak RSS bytes of the child, rows, bytes written)."""
    start, end = (datetime.fromtimestamp(t, timezone.utc).isoformat() for t in (end_s - WEEK_S, end_s))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    walls, peaks, rows, size = [], [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "week.csv"
        command = [sys.executable, "-m", "trayvml", "history", "--store", str(folder)]
        command += ["--from", start, "--to", end, "--csv", str(out)]
        for _ in range(runs):
            done = subprocess.run(
                [sys.executable, "-c", _MEASURE, *command], env=env, capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise SystemExit(f"trayvml history failed: {done.stderr}")
            wall, peak_kib = done.stdout.split()
            walls.append(float(wall))
            peaks.append(int(peak_kib) * 1024)  # KiB on Linux
            size = out.stat().st_size
            with out.open("rb") as text:
                rows = sum(1 for _ in text) - 1
        if keep is not None:  # to compare the output of two versions byte for byte
            shutil.copyfile(out, keep)
    return walls, peaks, rows, size


def _spread(seconds: list[float]) -> str:
    """Median and range in ms: the machine is shared, one figure alone says little."""
    ms = [s * 1e3 for s in seconds]
    return f"{statistics.median(ms):.1f} ms ({min(ms):.1f}–{max(ms):.1f})"


BUILT = "built-by-bench_store.txt"  # in a --store folder: what it was built with


def build(folder: Path, args: argparse.Namespace) -> tuple[float, dict[str, float]]:
    """The store in ``folder`` (built unless a run with the same arguments left it): (its end in
    seconds since the epoch, the figures of the build)."""
    recipe = f"{args.hours:g} h, {args.gpus} GPUs, {args.scenario}, week laid out by day, wide by week"
    marker = folder / BUILT
    if marker.exists():
        lines = marker.read_text().splitlines()
        if lines[0] == recipe:
            return float(lines[1]), {k: float(v) for k, v in (line.split("=") for line in lines[2:])}
        raise SystemExit(f"{folder} holds a store built with {lines[0]}, not {recipe}: choose another --store")
    if folder.exists() and any(folder.iterdir()):
        raise SystemExit(f"{folder} is not empty and holds no store built by this benchmark")
    seconds, write_cpu, sim_cpu = push(folder, args.hours, args.gpus, args.scenario)
    figures = {"seconds": seconds, "write_cpu": write_cpu, "sim_cpu": sim_cpu}
    reader = StoreReader(folder)
    stats = reader.stats()
    tiers = (
        reader.database()
        .connection.execute(  # type: ignore[union-attr]
            "SELECT tier, COUNT(*), SUM(LENGTH(data)) FROM blocks GROUP BY tier ORDER BY tier"
        )
        .fetchall()
    )
    reader.close()
    figures |= {"samples": stats.samples, "file_bytes": stats.file_bytes}
    for tier, count, size in tiers:
        figures |= {f"tier{tier}_blocks": count, f"tier{tier}_bytes": size}
    end_s = START_S + seconds
    copy_week(folder, args.hours)
    marker.write_text("\n".join([recipe, repr(end_s), *(f"{k}={v!r}" for k, v in figures.items())]) + "\n")
    return end_s, figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--scenario", default="training")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--export-runs", type=int, default=3)
    parser.add_argument("--store", type=Path, help="build the store here, or reuse the one built here before")
    parser.add_argument("--keep-csv", type=Path, help="copy the 7-day export here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.store if args.store is not None else Path(tmp) / "history"
        end_s, figures = build(folder, args)
        week_s, buckets = read_week(folder, end_s, args.runs) if args.runs else (math.nan, 0)
        opened, painted, moved, cached, switched, flowed = (
            redraw_week(folder, end_s, args.runs) if args.runs else ([math.nan],) * 6
        )
        walls, peaks, rows, size = (
            export_week(folder, end_s, args.export_runs, args.keep_csv) if args.export_runs else ([], [], 0, 0)
        )
    seconds = figures["seconds"]
    per_second = figures["write_cpu"] / seconds
    samples = figures["samples"]
    print(f"\nHistory store, {args.gpus} simulated GPUs ({args.scenario}) + host (16 cores), {args.hours:g} h at 1 s\n")
    print("| figure | measured | target |")
    print("|---|---|---|")
    print(f"| stored samples (metric × device × second) | {samples:,.0f} | |")
    print(f"| bytes on disk (SQLite file + WAL) | {figures['file_bytes']:,.0f} | |")
    print(f"| **bytes per sample** | **{figures['file_bytes'] / samples:.3f}** | < 1 |")
    for tier in Tier:
        if f"tier{tier.value}_blocks" in figures:
            count, size_b = figures[f"tier{tier.value}_blocks"], figures[f"tier{tier.value}_bytes"]
            print(f"| of which {tier.name.lower()} blocks | {count:.0f} blocks, {size_b:,.0f} B | |")
    print(f"| writer CPU per second of samples | {per_second * 1e3:.3f} ms | |")
    print(f"| **writer CPU at 1 Hz** | **{per_second * 100:.4f} % of a core** | ≤ 0.1 % |")
    print(f"| (the simulated NVML's own CPU, not counted) | {figures['sim_cpu'] / seconds * 1e3:.2f} ms/s | |")
    print(
        f"| **read 7 days × {args.gpus} GPUs × every metric, coarse tier** | **{week_s * 1e3:.1f} ms** "
        f"({buckets} buckets each, median of {args.runs}) | |"
    )
    runs = f"median (range) of {args.runs}"
    first = [a + b for a, b in zip(opened, painted, strict=True)]
    print(
        f"| **7-day view, first redraw: the week read from disk, set and painted** | **{_spread(first)}** {runs} "
        "| ≤ 30 ms |"
    )
    print(f"| of which reading and setting the lines (the window's refresh) | {_spread(opened)} | |")
    print(f"| of which the paint (`grab` of the window) | {_spread(painted)} | |")
    print(f"| 7 days chosen where the window showed an hour: read, set and painted | {_spread(switched)} | |")
    flow = "the same as the event loop runs it: a panel a turn, then Qt's paint of what changed"
    print(f"| {flow} | {_spread(flowed)} | |")
    print(f"| window refresh at 7 d: the range moved a bucket (blocks decoded before) | {_spread(moved)} | ≤ 50 ms |")
    print(f"| window refresh at 7 d: nothing new to read | {_spread(cached)} | ≤ 50 ms |")
    if walls:
        wall = f"{statistics.median(walls):.2f} s ({min(walls):.2f}–{max(walls):.2f})"
        peak = f"{statistics.median(peaks) / 2**20:.0f} MiB ({min(peaks) / 2**20:.0f}–{max(peaks) / 2**20:.0f})"
        export = f"`trayvml history` of 7 days, {args.gpus} GPUs, default columns, to a file"
        export += f" ({rows:,} rows, {size / 1e6:.0f} MB)"
        print(f"| **{export}: wall** | **{wall}** median (range) of {len(walls)} | ≤ 5 s |")
        print(f"| **the same: peak RSS of the process** | **{peak}** | ≤ 200 MB |")
    print(f"\n(load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
