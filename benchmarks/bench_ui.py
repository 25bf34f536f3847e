"""Tray and window cost (PERFORMANCE.md P3, P4, P5, P7) and the GUI thread's stalls (issue 8 §4).

    .venv/bin/python benchmarks/bench_ui.py [--idle-seconds 60] [--runs 5]
    .venv/bin/python benchmarks/bench_ui.py --stalls-only [--stall-seconds 20]

P3 and P4 run trayvml and a minimal PySide6 tray app as separate processes on a virtual
desktop with a real StatusNotifierItem host (tests/desktop.py), measured the same way.
P5, P7 and the stalls run in this process, offscreen. Prints medians.
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


def _launch(stack: DesktopStack, minimal: bool, spec: str = SPEC) -> subprocess.Popen:
    command = (
        [sys.executable, "-c", MINIMAL_TRAY] if minimal else [sys.executable, "-m", "trayvml", f"--simulate={spec}"]
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


def idle_cost(stack: DesktopStack, minimal: bool, seconds: float, spec: str = SPEC) -> tuple[float, float]:
    """P3: CPU % of one core and RSS (MiB) over ``seconds`` after a 10 s settling time."""
    process = _launch(stack, minimal, spec)
    watched = psutil.Process(process.pid)
    time.sleep(10)
    cpu_before = sum(watched.cpu_times()[:2])
    time.sleep(seconds)
    cpu_percent = (sum(watched.cpu_times()[:2]) - cpu_before) / seconds * 100
    rss_mib = watched.memory_info().rss / 2**20
    _stop(process)
    return cpu_percent, rss_mib


# P3 after hours: the tray's clocks (Qt's timers included) run this many times as fast under
# libfaketime (Debian's faketime), so that hours of samples go through the same code in minutes.
FAKETIME_LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")
FAKE_SPEED = 40


def hours_rss(stack: DesktopStack, hours: float, spec: str = SPEC) -> tuple[float, float]:
    """P3 after ``hours`` of samples (full rings, hours of the store packed): trayvml's RSS at the
    end and the highest seen, in MiB. At 40 samples a second the tray keeps up with about 35."""
    env = dict(stack.env, LD_PRELOAD=str(FAKETIME_LIB), FAKETIME=f"+0 x{FAKE_SPEED}", FAKETIME_NO_CACHE="1")
    command = [sys.executable, "-m", "trayvml", f"--simulate={spec}"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    watched = psutil.Process(process.pid)
    end_s = time.monotonic() + hours * 3600 / FAKE_SPEED  # this process' clocks are not faked
    peak = 0
    while time.monotonic() < end_s:
        time.sleep(5)
        peak = max(peak, watched.memory_info().rss)
    rss = watched.memory_info().rss
    _stop(process)
    return rss / 2**20, max(peak, rss) / 2**20


def window_figures(runs: int) -> dict[str, float]:
    """P5: refresh + paint of the window as shown, per range; CPU % while open at 1 Hz.
    P7: RSS growth over 50 opens and closes."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from tests.helpers import simulated_source
    from trayvml.history.timeline import History
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


STALL_GPU_COUNTS = (8, 16, 64)
STALL_TICK_MS = 10
SAMPLE_EVERY_MS = 500  # 2 Hz
# (simulated clock speed, range shown): the case, each sample 30 simulated seconds after
# the last, in the history the app makes (1 s tiers, so sparse); and live time on the 1 min range,
# where every sample moves the view and every line is drawn whole.
STALL_CASES = ((60, 900), (1, 60))


def stall_figures(
    gpu_count: int, seconds: float, whole_app: bool, speed: float, range_s: int
) -> tuple[float, float, int]:
    """The window open on the GPU page (1280×800, following live), samples of ``gpu_count`` GPUs
    arriving at 2 Hz with a simulated clock ×``speed`` for ``seconds``; ``whole_app``: through
    App.on_sample (history, alerts, tray icon and tooltip, window), else the history and the window.

    Returns the longest event-loop stall (ms: how late a 10 ms timer fired, at worst), the CPU %
    of one core over the run, and the redraws begun. The simulation stops at 16 GPUs: samples are
    copies of one simulated H100's, with moving values (tests/ui_helpers.many_gpus)."""
    import numpy as np
    from PySide6.QtCore import QElapsedTimer, QEventLoop, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from tests.helpers import run_ticks, simulated_source
    from tests.ui_helpers import fill_history, many_gpus, moved_on
    from trayvml.history.timeline import History
    from trayvml.ui.window import GraphWindow

    qt = QApplication.instance() or QApplication([])
    source, clock, _ = simulated_source("training:gpus=h100", host=True)
    first = many_gpus(run_ticks(source, clock, 2), gpu_count)
    step_s = SAMPLE_EVERY_MS / 1000 * speed
    # The past: every 30 s over 12 h, then every second for the last 15 minutes.
    past_s = np.concatenate([np.arange(12 * 3600, 900, -30.0), np.arange(900, 0, -1.0)])
    count = int(seconds * 1000 / SAMPLE_EVERY_MS)
    live = [moved_on(first, first.timestamp_s + step_s * (k + 1)) for k in range(count)]  # made beforehand
    if whole_app:
        from trayvml.ui.app import App

        app = App(None, tray_wait_s=3600)
        history = app.history
        fill_history(history, first, first.timestamp_s - past_s)
        app.on_sample(first)
        window = app.ensure_window()
        feed = app.on_sample
    else:
        history = History()
        fill_history(history, first, first.timestamp_s - past_s)
        window = GraphWindow(history)

        def feed(sample):
            history.append(sample)
            window.update_sample(sample)

        feed(first)
    window.resize(1280, 800)
    window.set_range(range_s)
    window.show()
    window.refresh()
    qt.processEvents()
    clock_ms = QElapsedTimer()
    worst_ms = [0.0]
    last_ms = [0]

    def tick() -> None:
        now = clock_ms.elapsed()
        worst_ms[0] = max(worst_ms[0], now - last_ms[0] - STALL_TICK_MS)
        last_ms[0] = now

    ticker = QTimer()
    ticker.setTimerType(Qt.TimerType.PreciseTimer)
    ticker.timeout.connect(tick)
    sampler = QTimer()
    sampler.setTimerType(Qt.TimerType.PreciseTimer)
    pending = iter(live)
    done = QEventLoop()

    def next_sample() -> None:
        sample = next(pending, None)
        if sample is None:
            done.quit()
        else:
            feed(sample)

    sampler.timeout.connect(next_sample)
    redraws = window.redraws
    cpu_start = time.process_time()
    wall_start = time.perf_counter()
    clock_ms.start()
    ticker.start(STALL_TICK_MS)
    sampler.start(SAMPLE_EVERY_MS)
    done.exec()
    ticker.stop()
    sampler.stop()
    cpu_percent = (time.process_time() - cpu_start) / (time.perf_counter() - wall_start) * 100
    redraws = window.redraws - redraws
    window.hide()
    if whole_app:
        app.stop()
    window.deleteLater()
    qt.processEvents()
    return worst_ms[0], cpu_percent, redraws


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--stall-seconds", type=float, default=20.0)
    parser.add_argument("--stalls-only", action="store_true")
    parser.add_argument("--idle-only", action="store_true", help="P3 alone: the idle tray beside the minimal one")
    # past=0: no made-up past, so memory holds what it would with real GPUs and the store on
    parser.add_argument("--spec", default=SPEC, help=f"the simulated GPUs for P3 (default {SPEC})")
    parser.add_argument("--hours", type=float, default=0.0, help="P3 also after hours of samples (faketime; 90 s each)")
    args = parser.parse_args()
    if args.idle_only:
        with DesktopStack("sni", notifications=False) as stack:
            idle_figures(stack, args.idle_seconds, args.spec, args.hours)
        return

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    print(f"GUI thread with the window open, samples at 2 Hz, {args.stall_seconds:.0f} s each (offscreen)")
    for speed, range_s in STALL_CASES:
        for whole_app in (False, True):
            for gpus in STALL_GPU_COUNTS:
                stall_ms, cpu, redraws = stall_figures(gpus, args.stall_seconds, whole_app, speed, range_s)
                what = f"clock ×{speed:g}, {range_s // 60} min range, {'whole app' if whole_app else 'window'}"
                figures = f"longest stall {stall_ms:4.0f} ms, CPU {cpu:5.1f} %, {redraws} redraws"
                print(f"  {what:>36}, {gpus:2d} GPUs: {figures}")
    if args.stalls_only:
        return

    print("P5/P7 window, 8 simulated H100s, every panel (offscreen)")
    for name, value in window_figures(args.runs).items():
        print(f"  {name:>36}: {value:8.1f}")

    with DesktopStack("sni", notifications=False) as stack:
        print(f"\nP4 start to tray icon registered with the SNI host (median of {args.runs})")
        minimal = statistics.median(start_to_tray_s(stack, True) for _ in range(args.runs))
        ours = statistics.median(start_to_tray_s(stack, False) for _ in range(args.runs))
        ratio = ours / minimal
        print(f"  minimal PySide6 tray {minimal * 1e3:.0f} ms, trayvml {ours * 1e3:.0f} ms, ratio {ratio:.2f}")

        idle_figures(stack, args.idle_seconds, args.spec, args.hours)


def idle_figures(stack: DesktopStack, seconds: float, spec: str = SPEC, hours: float = 0.0) -> None:
    """P3, printed: the minimal tray and trayvml one after the other in the same run, and their
    ratio; with ``hours``, trayvml's RSS after that many hours of samples too."""
    print(f"\nP3 idle in the tray, window closed, {spec} at 1 Hz, {seconds:.0f} s")
    minimal_cpu, minimal_rss = idle_cost(stack, True, seconds)
    print(f"  minimal PySide6 tray: CPU {minimal_cpu:.2f} % of a core, RSS {minimal_rss:.0f} MiB")
    cpu, rss = idle_cost(stack, False, seconds, spec)
    ratio = rss / minimal_rss
    print(f"  trayvml:              CPU {cpu:.2f} % of a core, RSS {rss:.0f} MiB ({ratio:.2f}× the minimal tray)")
    if hours:
        end, peak = hours_rss(stack, hours, spec)
        print(
            f"  trayvml after {hours:g} h of samples (clocks ×{FAKE_SPEED}): RSS {end:.0f} MiB "
            f"({end / minimal_rss:.2f}×), at most {peak:.0f} MiB"
        )


if __name__ == "__main__":
    main()
