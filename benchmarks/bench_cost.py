"""What watching costs, side by side with gpustat and nvitop (issue 8 §4, PERFORMANCE.md P9, P3').

    .venv/bin/python benchmarks/bench_cost.py [--seconds S] [--gpus N] [--runs R] [--settle S] [--only NAME] [--window]
    python3 benchmarks/bench_cost.py --real [--desktop] [--seconds S] [--runs R] [--settle S]

Every tool runs as a process of its own for S seconds, after a settling time, on the same
simulated GPUs beneath pynvml with realistic driver latency (busy-waits for cheap calls, sleeps
for the blocking ones), so a tool's CPU includes what the driver would burn for its calls.
gpustat and nvitop watch at 1 s in a pseudo-terminal, as a user runs them; `trayvml log` writes
its default columns every second; the tray runs on a virtual desktop with a real StatusNotifierItem
host, window closed. CPU is the process tree's user + system time over the run (% of one core),
RSS that of the tool's Python process. Needs gpustat and nvitop (`pip install -e .[bench]`) and,
for the tray, the desktop stack of `scripts/setup --test`.

``--real`` (a machine with NVIDIA GPUs and no desktop: scripts/real-gpu-check's ``cost`` step):
this machine's GPUs, every tool at once (their calls meet in the same driver, as a user's do):
`trayvml record` (the tray's sampler and history on disk without its GUI: what the idle tray does
beyond drawing), `trayvml log` and, beside them, nvidia-smi logging log's columns each second and,
where tmux is installed, gpustat and nvitop. With ``--desktop`` (PySide6 importable, and Qt's
offscreen platform: no display there) also the tray with no tray host (its icon drawn where what it
shows changes, shown nowhere: the idle tray less its D-Bus talk with a panel, and polling for a
panel every half second as a tray does until one comes), its graph window open (brought forward by
a second start, as the launcher does; painted into Qt's offscreen buffer, on a screen the size of
the desktop tests') and, as the window's peer (P14), nvitop's full monitor. ``BENCH_QT_LIBS``: a
folder of libraries Qt needs that this machine lacks (scripts/pack-qt's), for the tray and the
window alone.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/desktop.py, for the tray's desktop

SETTLE_S = 8.0
_SERVERS = itertools.count()


def _spec(gpus: int) -> str:
    # past=0: no made-up history at start, as with real GPUs (it would cost the tray start-up time and RSS)
    return f"training:gpus=h100*{gpus},latency=realistic,start=1800,past=0"


class _Started:
    """A tool running: the process to watch, and how to stop it."""

    def __init__(self, command: list[str], env: dict[str, str] | None, terminal: bool) -> None:
        self._tmux: list[str] = []
        if terminal:
            # A real terminal emulator (tmux), as curses tools need: they ask the terminal questions
            # (cursor position, capabilities) and wait for the answers, which a bare pty never gives.
            # A server of its own each time: the last one may still be going away under its name.
            self._tmux = ["tmux", "-L", f"trayvml-bench-{os.getpid()}-{next(_SERVERS)}"]
            subprocess.run([*self._tmux, "new-session", "-d", "-x", "200", "-y", "60", shlex.join(command)], check=True)
            try:
                pane = subprocess.run([*self._tmux, "list-panes", "-F", "#{pane_pid}"], capture_output=True, text=True)
                self.process = psutil.Process(int(pane.stdout.split()[0]))
            except (ValueError, IndexError, psutil.Error):  # (its server is not ours to leave running)
                self.stop()
                raise
            self._popen: subprocess.Popen | None = None
        else:
            self._popen = subprocess.Popen(
                command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            self.process = psutil.Process(self._popen.pid)

    def running(self) -> bool:
        """Not ended (an ended child not yet waited for is a zombie, which psutil calls running)."""
        if self._popen is not None:
            return self._popen.poll() is None
        try:
            return self.process.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    def stop(self) -> None:
        if self._tmux:
            subprocess.run([*self._tmux, "kill-server"], check=False)
            return
        assert self._popen is not None
        self._popen.terminate()
        try:
            self._popen.wait(10)
        except subprocess.TimeoutExpired:
            self._popen.kill()
            self._popen.wait()


def _tree_cpu_s(process: psutil.Process) -> float:
    """CPU seconds of ``process`` and its descendants, the ended ones included: a child that ends
    between two readings (the history's packer, at each hour) leaves its time with its parent's
    children's times once reaped, where a sum of the living would drop by it."""
    total = 0.0
    for member in [process, *process.children(recursive=True)]:
        try:
            times = member.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def _python_rss_mib(process: psutil.Process) -> float:
    """The tool's Python process's RSS: the process itself where it is Python (its children, the
    history's packer, are not the tool), else its largest Python descendant (a terminal's shell)."""
    rss: dict[bool, int] = {}
    for member in [process, *process.children(recursive=True)]:
        try:
            python = "python" in member.name()
            if member is process and python:
                return member.memory_info().rss / 2**20
            rss[python] = max(rss.get(python, 0), member.memory_info().rss)
        except psutil.NoSuchProcess:  # (ended meanwhile)
            pass
    return rss.get(True, rss.get(False, 0)) / 2**20


def measure(
    command: list[str],
    seconds: float,
    env: dict[str, str] | None = None,
    terminal: bool = False,
    settle_s: float = SETTLE_S,
) -> tuple[float, float]:
    """(CPU % of one core, RSS MiB) of ``command`` over ``seconds`` after ``settle_s``."""
    started = _Started(command, env, terminal)
    try:
        time.sleep(settle_s)
        before = _tree_cpu_s(started.process)
        time.sleep(seconds)
        cpu_percent = (_tree_cpu_s(started.process) - before) / seconds * 100
        return cpu_percent, _python_rss_mib(started.process)
    finally:
        started.stop()


def tools(gpus: int, folder: Path) -> dict[str, tuple[list[str], bool]]:
    """name -> (command, needs a terminal)"""
    spec = _spec(gpus)
    simulated = [sys.executable, "-m", "trayvml.nvml.sim.run", spec]
    return {
        "trayvml log (default columns)": ([
            sys.executable, "-m", "trayvml", "log", "--csv", str(folder / "log.csv"), "--interval", "1",
            f"--simulate={spec}",
        ], False),
        "gpustat --interval 1": ([*simulated, "gpustat", "--interval", "1"], True),
        "nvitop --monitor --interval 1": ([*simulated, "nvitop", "--monitor", "--interval", "1"], True),
        "nvitop --monitor full --interval 1 (P14's peer)": (
            [*simulated, "nvitop", "--monitor", "full", "--interval", "1"], True
        ),
    }  # fmt: skip


def real_tools(folder: Path, desktop: bool) -> dict[str, tuple[list[str], dict[str, str] | None, bool]]:
    """``--real``: name -> (command, environment, needs a terminal), on this machine's GPUs."""
    import importlib.util
    import shutil

    from trayvml.commands.csvlog import DEFAULT_FIELDS
    from trayvml.commands.doctor import smi_known_fields

    def own(name: str) -> dict[str, str]:
        # Folders of its own: no other trayvml's instance lock, settings or history.
        base = folder / name
        (base / "runtime").mkdir(mode=0o700, parents=True, exist_ok=True)
        return {
            **os.environ,
            "XDG_STATE_HOME": str(base / "state"),
            "XDG_CONFIG_HOME": str(base / "config"),
            "XDG_RUNTIME_DIR": str(base / "runtime"),
        }

    trayvml = [sys.executable, "-m", "trayvml"]
    fields = ",".join(smi_known_fields("nvidia-smi", [f for f in DEFAULT_FIELDS if f != "timestamp"]))
    found = {
        "trayvml record (what the tray's history reads and writes, no GUI)": (
            [*trayvml, "record"],
            own("record"),
            False,
        ),
        "trayvml log (default columns)": (
            [*trayvml, "log", "--csv", str(folder / "log.csv"), "--interval", "1"],
            own("log"),
            False,
        ),
        "nvidia-smi --query-gpu (log's columns) -l 1": (
            ["nvidia-smi", f"--query-gpu=timestamp,{fields}", "--format=csv", "-l", "1", "-f", str(folder / "smi.csv")],
            None,
            False,
        ),
    }
    if desktop:
        # A screen the size of the desktop tests' (Qt's offscreen one is 800×800: a smaller window,
        # fewer panels in view). The tray's wait for a panel made longer than the run: it would
        # show its summary window.
        screen = folder / "offscreen.json"
        width, height = OFFSCREEN_SCREEN_PX
        screen.write_text(json.dumps({"screens": [{"name": "bench", "width": width, "height": height, "dpr": 1}]}))
        offscreen = {"QT_QPA_PLATFORM": f"offscreen:configfile={screen}", "TRAYVML_TRAY_WAIT_S": "100000"}
        if os.environ.get("BENCH_QT_LIBS"):
            libraries = [os.environ["BENCH_QT_LIBS"], *filter(None, [os.environ.get("LD_LIBRARY_PATH")])]
            offscreen["LD_LIBRARY_PATH"] = os.pathsep.join(libraries)
        found[OFFSCREEN_TRAY] = (trayvml, {**own("tray"), **offscreen}, False)
        found[OFFSCREEN_WINDOW] = (trayvml, {**own("window"), **offscreen}, False)
    peers = [
        ("gpustat --interval 1", ["gpustat", "--interval", "1"]),
        ("nvitop --monitor --interval 1", ["nvitop", "--monitor", "--interval", "1"]),
    ]
    if desktop:
        peers.append(
            (
                "nvitop --monitor full --interval 1 (the window's peer, P14)",
                ["nvitop", "--monitor", "full", "--interval", "1"],
            )
        )
    if shutil.which("tmux"):  # curses tools need a terminal emulator (_Started)
        for name, command in peers:
            if importlib.util.find_spec(command[0]) is not None:  # (run as modules: wheels bring no scripts)
                found[name] = ([sys.executable, "-m", command[0], *command[1:]], None, True)
    return found  # fmt: skip


OFFSCREEN_SCREEN_PX = (1280, 800)  # tests/desktop.py's DesktopStack
OFFSCREEN_TRAY = "trayvml tray, no tray host (offscreen: the icon drawn, shown nowhere)"
OFFSCREEN_WINDOW = "trayvml window open (offscreen)"


def _listening(runtime: Path) -> bool:
    """Whether a trayvml answers on an instance socket under ``runtime``."""
    import socket

    for path in runtime.rglob("instance-*"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as peer:
            try:
                peer.connect(str(path))
                return True
            except OSError:
                pass
    return False


def _bring_forward(tray: _Started, command: list[str], env: dict[str, str] | None) -> bool:
    """A second start of ``tray`` (started with ``command`` and ``env``), once it listens: else the
    second would be a tray too. True where it said so and ended."""
    runtime = Path(env["XDG_RUNTIME_DIR"]) if env else Path()
    for _ in range(60):
        if _listening(runtime):
            break
        if not tray.running():
            return False
        time.sleep(1)
    else:
        return False
    try:
        return subprocess.run(command, env=env, timeout=30, capture_output=True).returncode == 0
    except subprocess.TimeoutExpired:  # (killed by run)
        return False


def measure_together(
    commands: dict[str, tuple[list[str], dict[str, str] | None, bool]], seconds: float, settle_s: float
) -> dict[str, tuple[float, float]]:
    """(CPU % of one core, RSS MiB) of each command, all running at once, over ``seconds`` after ``settle_s``."""
    started: dict[str, _Started] = {}
    try:
        for name, (command, env, terminal) in commands.items():
            started[name] = _Started(command, env, terminal)
        window = started.get(OFFSCREEN_WINDOW)
        if window is not None and not _bring_forward(window, *commands[OFFSCREEN_WINDOW][:2]):
            print(f"{OFFSCREEN_WINDOW}: its window did not come forward, not measured", file=sys.stderr)
            started.pop(OFFSCREEN_WINDOW).stop()
        time.sleep(settle_s)
        running = {name: tool for name, tool in started.items() if tool.running()}
        for name in started.keys() - running.keys():
            print(f"{name}: ended before it was measured", file=sys.stderr)
        before = {name: _tree_cpu_s(tool.process) for name, tool in running.items()}
        time.sleep(seconds)
        spent = {name: _tree_cpu_s(tool.process) - before[name] for name, tool in running.items()}
        for name in [name for name, tool in running.items() if not tool.running()]:
            print(f"{name}: ended while it was measured, not counted", file=sys.stderr)
            del running[name]
        return {name: (spent[name] / seconds * 100, _python_rss_mib(tool.process)) for name, tool in running.items()}
    finally:
        for tool in started.values():
            tool.stop()


def tray_idle(gpus: int, seconds: float, settle_s: float = SETTLE_S) -> tuple[float, float]:
    from tests.desktop import DesktopStack, wait_until

    with DesktopStack("sni", notifications=False) as stack:
        command = [sys.executable, "-m", "trayvml", f"--simulate={_spec(gpus)}"]
        process = subprocess.Popen(command, env=stack.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: bool(stack.sni_items()), timeout_s=30, what="the tray item")
        finally:
            process.terminate()
            process.wait(10)
        return measure(command, seconds, env=stack.env, settle_s=settle_s)


def window_open(gpus: int, seconds: float, settle_s: float = SETTLE_S) -> tuple[float, float]:
    """The tray with its graph window open on the first page (every metric), brought forward by a
    second start as the launcher does: CPU and RSS over ``seconds`` after ``settle_s``."""
    from tests.desktop import DesktopStack, wait_until

    with DesktopStack("sni", notifications=False) as stack:
        command = [sys.executable, "-m", "trayvml", f"--simulate={_spec(gpus)}"]
        process = subprocess.Popen(command, env=stack.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: bool(stack.sni_items()), timeout_s=30, what="the tray item")
            subprocess.run(command, env=stack.env, timeout=30, capture_output=True, check=True)  # shows the window
            watched = psutil.Process(process.pid)
            time.sleep(settle_s)
            before = _tree_cpu_s(watched)
            time.sleep(seconds)
            return (_tree_cpu_s(watched) - before) / seconds * 100, _python_rss_mib(watched)
        finally:
            process.terminate()
            process.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-tray", action="store_true", help="skip the tray (no desktop stack here)")
    parser.add_argument("--window", action="store_true", help="the tray's window open against nvitop full (P14)")
    parser.add_argument(
        "--settle",
        type=float,
        default=SETTLE_S,
        help="seconds each tool runs before it is measured (70: past the window's first minute, whose"
        " range still reaches back before the tray started)",
    )
    parser.add_argument("--real", action="store_true", help="this machine's GPUs, no desktop (see above)")
    parser.add_argument("--desktop", action="store_true", help="with --real: the tray and window offscreen (see above)")
    parser.add_argument(
        "--only",
        help="of the peers and `trayvml log`, measure only those whose name contains this (the tray: --no-tray)",
    )
    args = parser.parse_args()
    if args.desktop and not args.real:
        parser.error("--desktop goes with --real (without it, the tray and window run on a desktop stack)")
    # A timeout's SIGTERM ends the run through its finally clauses: the tools in tmux are in
    # sessions of their own, which nothing else would stop.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.runs if args.real else 0):
            (Path(folder) / str(run)).mkdir()  # folders of its own each run: no socket or store left by the last
            for name, cost in measure_together(
                real_tools(Path(folder) / str(run), args.desktop), args.seconds, args.settle
            ).items():
                results.setdefault(name, []).append(cost)
        for _ in range(0 if args.real else args.runs):
            for name, (command, terminal) in tools(args.gpus, Path(folder)).items():
                if args.only is None or args.only in name:
                    cost = measure(command, args.seconds, terminal=terminal, settle_s=args.settle)
                    results.setdefault(name, []).append(cost)
            if not args.no_tray:
                cost = tray_idle(args.gpus, args.seconds, args.settle)
                results.setdefault("trayvml tray, window closed", []).append(cost)
            if args.window:
                cost = window_open(args.gpus, args.seconds, args.settle)
                results.setdefault("trayvml window open (P14)", []).append(cost)
    cpu = {name: statistics.median(c for c, _ in runs) for name, runs in results.items()}
    rss = {name: statistics.median(r for _, r in runs) for name, runs in results.items()}
    peers = [cpu[name] for name in cpu if not name.startswith("trayvml")]
    cheaper_peer = min(peers) if peers else float("nan")
    if args.real:
        print(f"this machine's GPUs (libnvidia-ml), all at once, {args.seconds:.0f} s, median of {args.runs}")
    else:
        print(f"{args.gpus} simulated H100s, realistic driver latency, {args.seconds:.0f} s, median of {args.runs}")
    print("| tool | CPU % of a core | ÷ cheaper peer | RSS MiB | runs (CPU %) |")
    print("|---|---:|---:|---:|---|")
    for name in cpu:
        runs = ", ".join(f"{c:.2f}" for c, _ in results[name])
        print(f"| {name} | {cpu[name]:.2f} | {_ratio(cpu[name], cheaper_peer)} | {rss[name]:.0f} | {runs} |")
    windows = [name for name in cpu if "window open" in name]
    fulls = [name for name in cpu if "monitor full" in name]
    if windows and fulls:  # P14's own ratio: the cheaper peer above is another tool
        print(f"window open ÷ nvitop's full monitor (P14): {_ratio(cpu[windows[0]], cpu[fulls[0]])}")


def _ratio(cpu_percent: float, peer_percent: float) -> str:
    # A peer's run can read 0: no tick of /proc's clock in a short run (nvidia-smi -l 1, 30 s).
    return f"{cpu_percent / peer_percent:.2f}" if peer_percent > 0 else "–"


if __name__ == "__main__":
    main()
