"""The GPU processes in the history on disk (trayvml/history/disk/processes.py): what they add.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_process_store.py [--hours 2] [--gpus 8]

The same simulated samples (``processes`` scenario: processes of several users start and exit on
each GPU; every process list read, as `trayvml record` reads them) go through two store writers
in the same run: one keeping the biggest 8 processes a GPU (the default), one keeping none (the
baseline, the store as it was). Reports the store's bytes and the writer's CPU of each, the bytes
per stored process sample, the CPU per flush the processes add, and reading a day of them back.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trayvml.core.clock import ManualClock  # noqa: E402
from trayvml.history.disk import pending  # noqa: E402
from trayvml.history.disk.db import Database  # noqa: E402
from trayvml.history.disk.limits import Limits  # noqa: E402
from trayvml.history.disk.write import FLUSH_S, StoreWriter  # noqa: E402
from trayvml.history.timeline import DiskReach  # noqa: E402
from trayvml.nvml.sim import simulation_from  # noqa: E402
from trayvml.source import Source  # noqa: E402

START_S = 1_800_000_000.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--gpus", type=int, default=8)
    args = parser.parse_args()
    seconds = round(args.hours * 3600)
    clock = ManualClock(START_S)
    source = Source(simulation_from(f"processes:gpus=h100*{args.gpus}"), clock, host=False)
    with tempfile.TemporaryDirectory() as tmp:
        folders = {"with": Path(tmp) / "with", "without": Path(tmp) / "without"}
        writers = {
            "with": StoreWriter(folders["with"], Limits(processes_per_gpu=8)),
            "without": StoreWriter(folders["without"], Limits(processes_per_gpu=0)),
        }
        cpu = dict.fromkeys(writers, 0.0)
        process_samples = 0
        uuids: tuple[str, ...] = ()
        try:
            for _ in range(seconds):
                clock.advance_s(1.0)
                sample = source.sample()
                uuids = tuple(d.uuid for d in sample.devices)
                process_samples += sum(len(g.processes) for g in sample.gpus)
                for name, writer in writers.items():  # alternately first, so that neither gets warm caches
                    t0 = time.process_time()
                    writer.append(sample)
                    cpu[name] += time.process_time() - t0
        finally:
            for name, writer in writers.items():
                t0 = time.process_time()
                writer.close()
                cpu[name] += time.process_time() - t0
            source.close()
        db = Database(folders["with"], read_only=True)
        stored_bytes = pending.data_bytes(db)
        stored_rows = db.connection.execute("SELECT SUM(rows) FROM process_blocks WHERE tier IN (0, 1)").fetchone()[0]
        tiers = db.connection.execute(
            "SELECT tier, COUNT(*), SUM(rows), SUM(LENGTH(data)) FROM process_blocks GROUP BY tier"
        ).fetchall()
        db.close()
        for folder in folders.values():  # the pages of deleted fresh blocks given back, in both alike
            writable = Database(folder)
            writable.reclaim()
            writable.close()
        sizes = {name: sum(f.stat().st_size for f in folder.iterdir()) for name, folder in folders.items()}
        reach = DiskReach(folders["with"])
        reach.uuids = uuids
        end_s = START_S + seconds
        t0 = time.perf_counter()
        _, _, lines = reach.process_lines(end_s - 86400, end_s, 1000)
        read_s = time.perf_counter() - t0
        reach.close()
    flushes = seconds / FLUSH_S
    added = cpu["with"] - cpu["without"]
    print(f"\nProcess history, {args.gpus} simulated GPUs (processes scenario), {args.hours:g} h at 1 s, same run\n")
    print("| figure | with processes (8 a GPU) | without (baseline) | ratio |")
    print("|---|---|---|---|")
    ratio = sizes["with"] / sizes["without"]
    print(f"| store files, bytes (free pages reclaimed) | {sizes['with']:,} | {sizes['without']:,} | {ratio:.2f} |")
    print(
        f"| writer CPU per second of samples | {cpu['with'] / seconds * 1e3:.3f} ms | "
        f"{cpu['without'] / seconds * 1e3:.3f} ms | {cpu['with'] / cpu['without']:.2f} |"
    )
    print("\n| figure | measured |\n|---|---|")
    print(f"| process samples seen (process × second) | {process_samples:,} |")
    print(f"| process rows stored (every-sample tiers) | {stored_rows:,} |")
    print(f"| process blocks, bytes | {stored_bytes:,} |")
    print(f"| **bytes per process sample** (blocks only) | **{stored_bytes / max(1, stored_rows):.3f}** |")
    for tier, count, rows, size in tiers:
        print(f"| of which tier {tier} | {count} blocks, {rows:,} rows, {size:,} B |")
    print(f"| **writer CPU the processes add, per flush ({FLUSH_S:g} s)** | **{added / flushes * 1e3:.3f} ms** |")
    print(f"| that at 1 Hz | {added / seconds * 100:.4f} % of a core |")
    read_ms = read_s * 1e3
    print(f"| read the last 24 h of processes, {args.gpus} GPUs, 1000 points | {read_ms:.1f} ms ({len(lines)} lines) |")
    print(f"\n(load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
