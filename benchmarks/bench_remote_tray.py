"""What each remote host costs the tray (issue 23, PERFORMANCE.md P12'): the whole path, read to icon.

    .venv/bin/python benchmarks/bench_remote_tray.py [--hosts 0,1,4,8] [--seconds 60] [--runs 1]
        [--interval S] [--profile FILE]

The tray runs on a virtual desktop with a real StatusNotifierItem host (as ``bench_cost.py``'s idle
tray), window closed, on 8 simulated local H100s (``latency=realistic``), reading H remote hosts
every S s (``remote_interval_s``; default 1, as before the setting), each a ``trayvml serve`` of
its own on 8 simulated H100s. Inside the tray a thread reads
every thread's CPU time (/proc's schedstat) when the settling ends and again S seconds later; the extra per
host is the tray's CPU over the same tray reading none, divided by H, per thread group (the GUI
thread, the remotes' threads, the rest). ``--profile FILE``: a second run of each row under
cProfile (every thread; its overhead inflates the times, so the CPU figures come from the first),
the functions by own time per thread group, written to FILE. Needs the desktop stack of
``scripts/setup --test``. Shared 2-core machine: report medians and compare within one session.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/desktop.py
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_serve.py, as the other benchmarks import it

SETTLE_S = 8.0
LOCAL_SPEC = "training:gpus=h100*8,latency=realistic,start=1800,past=0"

# Runs in the tray's process: measures its threads from a thread of its own, then runs the tray.
_RUNNER = r"""
import cProfile, json, os, sys, threading, time
out, settle_s, seconds, profile = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
profiles = {}  # id -> (thread name, Profile)
if profile:
    original = threading.Thread.run
    def run(self):
        p = cProfile.Profile()
        profiles[id(p)] = (self.name, p)
        p.enable()
        try:
            original(self)
        finally:
            p.disable()
    threading.Thread.run = run
    main_profile = cProfile.Profile()
    profiles[id(main_profile)] = ("MainThread", main_profile)
    main_profile.enable()

def group(name):
    if name.startswith("trayvml-remote http") or name.startswith("trayvml-remote ssh"):
        return "remote readers"
    return name

def threads():
    # Each thread's time on a CPU in ns (schedstat), where psutil's user and system times count
    # in 10 ms ticks.
    names = {t.native_id: t.name for t in threading.enumerate()}
    times = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
            name = names.get(int(tid))
            if name is None:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    name = "native " + f.read().strip()
        except OSError:  # ended meanwhile
            continue
        times[(group(name), int(tid))] = ns / 1e9
    return times

def stats():
    by_group = {}
    for name, p in list(profiles.values()):
        p.snapshot_stats()  # reads the entries; no disable (that would act on this thread only)
        by_group.setdefault(group(name), []).append(dict(p.stats))
    return by_group

def measure():
    time.sleep(settle_s)
    start_cpu, start_wall = threads(), time.monotonic()
    start_stats = stats() if profile else {}
    time.sleep(seconds)
    end_cpu, wall = threads(), time.monotonic() - start_wall
    end_stats = stats() if profile else {}
    cpu = {}
    for key, value in end_cpu.items():
        cpu[key[0]] = cpu.get(key[0], 0.0) + value - start_cpu.get(key, 0.0)
    import pickle
    with open(out + ".tmp", "wb") as f:
        pickle.dump({"cpu": cpu, "wall": wall, "start": start_stats, "end": end_stats}, f)
    os.replace(out + ".tmp", out)

threading.Thread(target=measure, name="bench-measure", daemon=True).start()
from trayvml.cli import main
sys.exit(main(sys.argv[5:]))
"""


def _diff(start: list[dict], end: list[dict]) -> dict:
    """The profile of what happened between two snapshots (summed over the group's threads)."""
    total: dict = {}

    def add(stats: dict, sign: int) -> None:
        for func, (cc, nc, tt, ct, callers) in stats.items():
            old = total.get(func, (0, 0, 0.0, 0.0, {}))
            merged = dict(old[4])
            for caller, figures in callers.items():
                before = merged.get(caller, (0, 0, 0.0, 0.0))
                merged[caller] = tuple(b + sign * f for b, f in zip(before, figures, strict=True))
            total[func] = (old[0] + sign * cc, old[1] + sign * nc, old[2] + sign * tt, old[3] + sign * ct, merged)

    for stats in end:
        add(stats, 1)
    for stats in start:
        add(stats, -1)
    return {f: v for f, v in total.items() if v[1] > 0}


def run_tray(stack_env: dict[str, str], urls: list[str], seconds: float, profile: bool, interval_s: float) -> dict:
    import pickle

    with tempfile.TemporaryDirectory(prefix="trayvml-bench-") as folder:
        out = Path(folder) / "result.pickle"
        config = Path(folder) / "config" / "trayvml" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(f"remote_interval_s = {interval_s!r}\n")
        env = {
            **stack_env,
            "XDG_DATA_HOME": f"{folder}/data",
            "XDG_STATE_HOME": f"{folder}/state",
            "XDG_CACHE_HOME": f"{folder}/cache",
            "XDG_CONFIG_HOME": f"{folder}/config",
        }
        remotes = [arg for url in urls for arg in ("--remote", url)]
        command = [sys.executable, "-c", _RUNNER, str(out), str(SETTLE_S), str(seconds), "1" if profile else "0"]
        command += [f"--simulate={LOCAL_SPEC}", *remotes]
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + SETTLE_S + seconds + 60
            while not out.exists():
                if process.poll() is not None:
                    raise SystemExit(f"the tray ended early: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
                if time.monotonic() > deadline:
                    raise SystemExit("the tray did not report in time")
                time.sleep(0.5)
            return dict(pickle.loads(out.read_bytes()))
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _groups(cpu: dict[str, float]) -> dict[str, float]:
    """Thread CPU seconds folded into the groups the table shows."""
    out = {"GUI thread": 0.0, "remote readers": 0.0, "remote deadlines": 0.0, "rest": 0.0}
    for name, value in cpu.items():
        if name == "MainThread":
            out["GUI thread"] += value
        elif name == "remote readers":
            out["remote readers"] += value
        elif name == "trayvml-remote-deadlines":
            out["remote deadlines"] += value
        else:
            out["rest"] += value
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", default="0,1,4,8", help="remote host counts (default 0,1,4,8; 0 is the baseline)")
    parser.add_argument("--seconds", type=float, default=60.0, help="per row (default 60)")
    parser.add_argument("--runs", type=int, default=1, help="runs of each row (medians; default 1)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between a host's reads (default 1)")
    parser.add_argument("--profile", default="", help="also profile each row under cProfile, written here")
    args = parser.parse_args()
    counts = sorted({0, *(int(h) for h in args.hosts.split(","))})
    from bench_serve import _serve

    from tests.desktop import DesktopStack

    rows: dict[int, list[dict[str, float]]] = {}
    profiles: list[str] = []
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(_serve(8))[0] for _ in range(max(counts))]
        desktop = stack.enter_context(DesktopStack("sni", notifications=False))
        for run in range(args.runs):
            for count in counts:
                result = run_tray(desktop.env, urls[:count], args.seconds, False, args.interval)
                figures = {k: v / result["wall"] * 100 for k, v in _groups(result["cpu"]).items()}
                figures["total"] = sum(figures.values())
                rows.setdefault(count, []).append(figures)
                shown = " ".join(f"{k} {v:.3f}" for k, v in figures.items())
                print(f"run {run + 1}, {count} host(s): % of a core: {shown}", flush=True)
        if args.profile:
            for count in counts:
                profiles.append(
                    _profile_text(count, run_tray(desktop.env, urls[:count], args.seconds, True, args.interval))
                )
    print(
        f"\nTray (SNI host, window closed, 8 local simulated H100s) reading H remote hosts every {args.interval:g} s,"
        f" {args.seconds:g} s"
    )
    columns = ["GUI thread", "remote readers", "remote deadlines", "rest", "total"]
    print(f"{'hosts':>5} " + " ".join(f"{c:>16}" for c in columns) + f" {'extra per host':>14}")
    medians = {c: {k: statistics.median(r[k] for r in rows[c]) for k in columns} for c in counts}
    for count in counts:
        extra = (medians[count]["total"] - medians[0]["total"]) / count if count else float("nan")
        extra_text = "-" if count == 0 else f"{extra:.3f}"
        print(f"{count:>5} " + " ".join(f"{medians[count][k]:>16.3f}" for k in columns) + f" {extra_text:>14}")
    print("extra per host, by group (% of a core): ", end="")
    for count in counts[1:]:
        parts = ", ".join(f"{k} {(medians[count][k] - medians[0][k]) / count:.3f}" for k in columns[:-1])
        print(f"\n  {count} host(s): {parts}", end="")
    print()
    if args.profile:
        Path(args.profile).write_text("\n".join(profiles))
        print(f"profiles written to {args.profile}")


def _profile_text(count: int, result: dict) -> str:
    import io
    import pstats

    out = io.StringIO()
    out.write(f"==== {count} remote host(s), {result['wall']:.1f} s under cProfile ====\n")
    for name in sorted(result["end"]):
        diff = _diff(result["start"].get(name, []), result["end"][name])

        class _Stats:
            stats = diff

            def create_stats(self) -> None:
                pass

        total = sum(v[2] for v in diff.values())
        out.write(f"\n---- {name}: {total * 1000 / result['wall']:.2f} ms/s profiled ----\n")
        if total < 0.001 * result["wall"]:
            continue
        s = pstats.Stats(_Stats(), stream=out)  # type: ignore[arg-type]
        s.sort_stats("tottime").print_stats(35)
        s.sort_stats("cumulative").print_stats(35)
    return out.getvalue()


if __name__ == "__main__":
    main()
