"""The tray icon's cost: drawing it at each size, and how often it must be redrawn.

    .venv/bin/python benchmarks/bench_icon.py [--runs 200] [--ticks 600]

Offscreen. ``render`` per size and device pixel ratio (median µs), ``make_icon`` (every size the
tray is given at once), and the redraws a tray makes over ``--ticks`` one-second samples of
simulated GPUs: with the number (held within NUMBER_STEP) against bars alone.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def median_us(action, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def redraws(spec: str, ticks: int, with_number: bool) -> int:
    from tests.helpers import simulated_source
    from trayvml.ui.glance import content_for, steady

    source, clock, _ = simulated_source(spec)
    shown = None
    count = 0
    for _ in range(ticks):
        content = content_for(source.sample())
        if not with_number:
            content = replace(content, number=math.nan)
        content = steady(content, shown)
        if content != shown:
            shown, count = content, count + 1
        clock.advance_s(1.0)
    source.close()
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--ticks", type=int, default=600)
    args = parser.parse_args()
    from PySide6.QtWidgets import QApplication

    from trayvml.core.levels import Level
    from trayvml.ui.icon import Bar, IconContent, render
    from trayvml.ui.tray import ICON_SIZES, make_icon

    QApplication([])
    eight = IconContent(tuple(Bar(0.9, Level.NORMAL) for _ in range(8)), number=97)
    print("render(content, size_px, dpr): median µs, 8 GPUs with a number")
    print(f"{'size px':>8} {'dpr 1':>8} {'dpr 2':>8}")
    for size in ICON_SIZES:
        one = median_us(lambda s=size: render(eight, s, 1.0), args.runs)
        two = median_us(lambda s=size: render(eight, s, 2.0), args.runs)
        print(f"{size:>8} {one:>8.0f} {two:>8.0f}")
    print(f"make_icon (all {len(ICON_SIZES)} sizes): {median_us(lambda: make_icon(eight, 1.0), args.runs):.0f} µs")
    print(f"\nicon redraws over {args.ticks} one-second samples")
    print(f"{'scenario':<38} {'number':>7} {'bars only':>10}")
    for spec in ("idle:gpus=h100*8", "training:gpus=h100*8,start=3000", "processes:gpus=h100*2+rtx4090+laptop"):
        print(f"{spec:<38} {redraws(spec, args.ticks, True):>7} {redraws(spec, args.ticks, False):>10}")


if __name__ == "__main__":
    main()
