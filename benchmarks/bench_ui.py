"""Tray and window cost (PERFORMANCE.md P3, P4, P5, P7).

    .venv/bin/python benchmarks/bench_ui.py [--idle-seconds 60] [--runs 5]

P3 and P4 run trayvml and a minimal PySide6 tray app as separate processes on a virtual
desktop with a real StatusNotifierItem host (tests/desktop.py), measured the same way.
P5 and P7 run in this process, offscreen. Prints medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.desktop import DesktopStack, wait_until  # noqa: E402

MINIMAL_TRAY = textwrap.dedent(
    """
    import sys
    from PySide6.QtGui import QIcon, QPixmap, QColor
    from PySide6.QtWidgets import QApplication, QSystemTrayIcon
    app = QApplication(sys.argv)
    pixmap = QPixmap(22, 22)
    pixmap.fill(QColor("#76b900"))
    tray = QSystemTrayIcon(QIcon(pixmap))
    tray.setToolTip("minimal")
    tray.show()
    app.exec()
    """
)
SPEC = "idle:gpus=h100*8"


def _items(stack: DesktopStack) -> int:
    return len(stack.sni_items())


def _launch(stack: DesktopStack, minimal: bool) -> subprocess.Popen:
    command = (
        [sys.executable, "-c", MINIMAL_TRAY] if minimal else [sys.executable, "-m", "trayvml", f"--simulate={SPEC}"]
    )
    return subprocess.Popen(command, env=stack.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(10)


def start_to_tray_s(stack: DesktopStack, minimal: bool) -> float:
    """P4: from process start until the tray host has the item."""
    before = _items(stack)
    start = time.perf_counter()
    process = _launch(stack, minimal)
    wait_until(lambda: _items(stack) > before, timeout_s=30, what="the tray item")
    elapsed = time.perf_counter() - start
    _stop(process)
    wait_until(lambda: _items(stack) == before, timeout_s=10, what="the item to go")
    return elapsed


def idle_cost(stack: DesktopStack, minimal: bool, seconds: float) -> tuple[float, float]:
    """P3: CPU % of one core and RSS (MiB) over ``seconds`` after a 10 s settling time."""
    process = _launch(stack, minimal)
    watched = psutil.Process(process.pid)
    time.sleep(10)
    cpu_before = sum(watched.cpu_times()[:2])
    time.sleep(seconds)
    cpu_percent = (sum(watched.cpu_times()[:2]) - cpu_before) / seconds * 100
    rss_mib = watched.memory_info().rss / 2**20
    _stop(process)
    return cpu_percent, rss_mib


def window_figures(runs: int) -> dict[str, float]:
    """P5: refresh + paint of the window as shown, per range; CPU % while open at 1 Hz.
    P7: RSS growth over 50 opens and closes."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from tests.helpers import simulated_source
    from trayvml.history import History
    from trayvml.ui.window import GraphWindow

    app = QApplication.instance() or QApplication([])
    source, clock, _ = simulated_source("training:gpus=h100*8", host=True)
    history = History()
    for _ in range(int((12 * 3600 - 900) / 5)):
        history.append(source.sample())
        clock.advance_s(5)
    for _ in range(900):
        sample = source.sample()
        history.append(sample)
        clock.advance_s(1)
    window = GraphWindow(history)
    window.resize(1240, 820)
    window.update_sample(sample)
    window.show()
    app.processEvents()
    figures: dict[str, float] = {}
    for label, seconds in (("1 min", 60), ("1 h", 3600), ("12 h", 43200)):
        window.set_range(seconds)
        times = []
        for _ in range(runs * 4):
            start = time.perf_counter()
            window.refresh()
            window.grab()  # paints what the window shows
            times.append(time.perf_counter() - start)
        figures[f"redraw {label} ms"] = statistics.median(times) * 1e3
    sampling_start = time.process_time()
    for _ in range(60):
        clock.advance_s(1)
        history.append(source.sample())
    sampling_s = time.process_time() - sampling_start  # subtracted below: the window's share alone
    for label, seconds in (("15 min", 900), ("12 h", 43200)):
        window.set_range(seconds)
        cpu_start = time.process_time()
        for _ in range(60):  # a minute of live updates, 1 Hz
            clock.advance_s(1)
            sample = source.sample()
            history.append(sample)
            redraws = window.redraws
            window.update_sample(sample)
            if window.redraws != redraws:
                window.grab()  # paints what the window shows, as the screen would
        figures[f"open at 1 Hz, {label}, CPU %"] = (time.process_time() - cpu_start - sampling_s) / 60 * 100
    for block in ("first", "next"):  # caches warm up during the first opens; a leak would keep growing
        rss = psutil.Process().memory_info().rss
        for _ in range(50):
            window.show()
            app.processEvents()
            window.close()
            app.processEvents()
        figures[f"{block} 50 opens RSS growth MiB"] = (psutil.Process().memory_info().rss - rss) / 2**20
    rss = psutil.Process().memory_info().rss
    for _ in range(10):  # what reuse avoids: building a fresh window each time (pyqtgraph#2672)
        fresh = GraphWindow(history)
        fresh.update_sample(sample)
        fresh.show()
        app.processEvents()
        fresh.deleteLater()
        app.processEvents()
    figures["10 rebuilt windows RSS growth MiB"] = (psutil.Process().memory_info().rss - rss) / 2**20
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    print("P5/P7 window, 8 simulated H100s, every panel (offscreen)")
    for name, value in window_figures(args.runs).items():
        print(f"  {name:>36}: {value:8.1f}")

    with DesktopStack("sni", notifications=False) as stack:
        print(f"\nP4 start to tray icon registered with the SNI host (median of {args.runs})")
        minimal = statistics.median(start_to_tray_s(stack, True) for _ in range(args.runs))
        ours = statistics.median(start_to_tray_s(stack, False) for _ in range(args.runs))
        ratio = ours / minimal
        print(f"  minimal PySide6 tray {minimal * 1e3:.0f} ms, trayvml {ours * 1e3:.0f} ms, ratio {ratio:.2f}")

        print(f"\nP3 idle in the tray, window closed, {SPEC} at 1 Hz, {args.idle_seconds:.0f} s")
        cpu, rss = idle_cost(stack, True, args.idle_seconds)
        print(f"  minimal PySide6 tray: CPU {cpu:.2f} % of a core, RSS {rss:.0f} MiB")
        cpu, rss = idle_cost(stack, False, args.idle_seconds)
        print(f"  trayvml:              CPU {cpu:.2f} % of a core, RSS {rss:.0f} MiB")


if __name__ == "__main__":
    main()
