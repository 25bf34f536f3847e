"""What serving and watching remotes cost (issues 10 and 23): serve beside nvitop-exporter, scrape
cost against scrape rate, and the CPU a remote host adds to the reader.

    .venv/bin/python benchmarks/bench_serve.py [--seconds S] [--gpus N] [--hosts 1,4] [--runs R]
        [--parts peers,rates,remote] [--driver-cpu] [--new-connections] [--real]

0. ``trayvml serve`` and nvitop-exporter side by side (PERFORMANCE.md P13), each a process of its
   own on the same simulated GPUs (realistic driver latency), both sampling at 1 s and each scraped
   once a second by this process over HTTP (a kept connection, as Prometheus scrapes), at the same
   time, for ``--peer-seconds`` after a settling time; R runs, medians. CPU: the process's user +
   system time (% of one core); RSS at the end.

1. ``trayvml serve`` on N simulated H100s (realistic driver latency) in a process of its own, scraped
   at several rates over HTTP. Its CPU is read from /proc through psutil; "GPU reads/s" counts the
   distinct ``trayvml_sample_timestamp_seconds`` the scrapes saw: serve reads when a scrape wants a
   sample, at most once a second, so it follows the scrape rate up to 1/s.
2. A process that reads H remote ``trayvml serve`` endpoints at 1 Hz with trayvml's remote sources
   (one thread each, as the tray app would), against the same process reading none: its extra CPU
   per remote host, in % of one core (target <= 0.2 %).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator

import psutil

RATES_HZ = (0.0, 1 / 15, 0.2, 1.0, 5.0, 20.0)  # 1/15: Prometheus scrapes every 15 s by default
SETTLE_S = 5.0


# --driver-cpu: the simulated process-list calls (2.25 ms each) burn their time on the CPU instead
# of sleeping, as in the independent fake NVML that PERFORMANCE.md's P13 figures come from (there
# nvitop-exporter cost 9.6-10.1 % of a core); the 20 ms PCIe throughput reads still sleep.
DRIVER_CPU = [False]
# --real: serve and nvitop-exporter read this machine's GPUs through libnvidia-ml (a GPU machine).
REAL = [False]


def _command(module: str, args: list[str]) -> list[str]:
    """``python -m module args``, with the simulated library's spin threshold raised under --driver-cpu."""
    if not DRIVER_CPU[0]:
        return [sys.executable, "-m", module, *args]
    launch = (
        "import runpy, sys; import trayvml.nvml.sim.base as base; base._SLEEP_ABOVE_S = 0.01; "
        f"sys.argv = [{module!r}, *sys.argv[1:]]; runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
    )
    return [sys.executable, "-c", launch, *args]


def _spec(gpus: int) -> str:
    # past=0: no made-up history at start, as with real GPUs; the same spec for every tool
    return f"training:gpus=h100*{gpus},latency=realistic,start=1800,past=0"


def _gpus_read(gpus: int) -> str:
    return "this machine's GPUs (libnvidia-ml)" if REAL[0] else f"{gpus} simulated H100s, realistic driver latency"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _serve(gpus: int) -> Iterator[tuple[str, psutil.Process]]:
    port = _free_port()
    simulate = [] if REAL[0] else [f"--simulate={_spec(gpus)}"]
    command = _command("trayvml", ["serve", *simulate, "--listen", f"127.0.0.1:{port}"])
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        _wait_for(url, b"trayvml_gpu_utilization_ratio")
        yield url, psutil.Process(process.pid)
    finally:
        process.terminate()
        process.wait(15)


@contextlib.contextmanager
def _nvitop_exporter(gpus: int) -> Iterator[tuple[str, psutil.Process]]:
    port = _free_port()
    args = ["--bind-address", "127.0.0.1", "--port", str(port), "--interval", "1"]
    if REAL[0]:
        command = [sys.executable, "-m", "nvitop_exporter", *args]
    else:
        command = _command("trayvml.nvml.sim.run", [_spec(gpus), "nvitop-exporter", *args])
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        _wait_for(url, b"gpu_utilization_Percentage")
        yield url, psutil.Process(process.pid)
    finally:
        process.terminate()
        process.wait(15)


def _wait_for(url: str, text: bytes) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if text in answer.read():
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"nothing with {text!r} on {url} within 60 s")
        time.sleep(0.2)


# Scrapes keep their connection between scrapes, as Prometheus does (HTTP/1.1 keep-alive; a server
# that answers HTTP/1.0 closes it and the next scrape opens another); --new-connections: a new
# connection each scrape (urllib, "Connection: close"), as this benchmark scraped before.
NEW_CONNECTIONS = [False]


class _Scraper:
    def __init__(self, url: str) -> None:
        self.url = url
        parts = urllib.parse.urlsplit(url)
        self._connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
        self._path = parts.path

    def get(self) -> bytes:
        if NEW_CONNECTIONS[0]:
            with urllib.request.urlopen(self.url, timeout=5) as answer:
                return bytes(answer.read())
        try:
            self._connection.request("GET", self._path)
            return self._connection.getresponse().read()
        except (http.client.RemoteDisconnected, ConnectionError):
            # The server closed the kept connection while it sat idle (scrapes 15 s apart): open
            # another and ask again, as Prometheus does.
            self._connection.close()
            self._connection.request("GET", self._path)
            return self._connection.getresponse().read()

    def close(self) -> None:
        self._connection.close()


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def peers(gpus: int, seconds: float, every_s: float = 1.0) -> dict[str, tuple[float, float, int]]:
    """name -> (CPU % of one core, RSS MiB, body bytes): serve and nvitop-exporter in the same run."""
    with _serve(gpus) as mine, _nvitop_exporter(gpus) as theirs:
        tools = {"trayvml serve": mine, "nvitop-exporter": theirs}
        scrapers = {name: _Scraper(url) for name, (url, _process) in tools.items()}
        time.sleep(SETTLE_S)
        before = {name: _cpu_s(process) for name, (_url, process) in tools.items()}
        sizes = dict.fromkeys(tools, 0)
        start = time.monotonic()
        scrapes = 0
        while time.monotonic() - start < seconds:
            for name, scraper in scrapers.items():
                sizes[name] = len(scraper.get())
            scrapes += 1
            time.sleep(max(0.0, start + scrapes * every_s - time.monotonic()))
        wall_s = time.monotonic() - start
        for scraper in scrapers.values():
            scraper.close()
        return {
            name: ((_cpu_s(process) - before[name]) / wall_s * 100, process.memory_info().rss / 2**20, sizes[name])
            for name, (_url, process) in tools.items()
        }


def _sample_time(body: bytes) -> bytes:
    for line in body.splitlines():
        if line.startswith(b"trayvml_sample_timestamp_seconds"):
            return line.rsplit(b" ", 1)[1]
    return b""


def scrape_costs(gpus: int, seconds: float) -> list[tuple[float, int, float, float, float, int]]:
    """(rate Hz, scrapes, server CPU % of a core, CPU ms per scrape, GPU reads/s, body bytes)."""
    rows: list[tuple[float, int, float, float, float, int]] = []
    with _serve(gpus) as (url, server):
        scraper = _Scraper(url)
        for rate in RATES_HZ:
            scrapes, seen, size = 0, set(), 0
            cpu_before = sum(server.cpu_times()[:2])
            start = time.monotonic()
            while (elapsed := time.monotonic() - start) < seconds:
                if rate:
                    body = scraper.get()
                    size = len(body)
                    seen.add(_sample_time(body))
                    scrapes += 1
                    time.sleep(max(0.0, start + scrapes / rate - time.monotonic()))
                else:
                    time.sleep(min(0.5, seconds - elapsed))
            cpu_s = sum(server.cpu_times()[:2]) - cpu_before
            wall_s = time.monotonic() - start
            per_scrape = 0.0
            if scrapes:
                idle_cpu_s = rows[0][2] / 100 * wall_s if rows else 0.0
                per_scrape = max(0.0, cpu_s - idle_cpu_s) / scrapes * 1000
            # Distinct samples seen, less the one already there at the start; a scrape slower than
            # the sampling cannot see every sample, so below 1/s the column says nothing.
            reads = (len(seen) - 1) / wall_s if rate >= 1 else float("nan")
            rows.append((rate, scrapes, cpu_s / wall_s * 100, per_scrape, reads, size))
        scraper.close()
    return rows


_REMOTE_READER = """
import sys, time
from trayvml.remote.fetch import parse_endpoint
from trayvml.remote.source import Remotes
urls, seconds = sys.argv[1].split(",") if sys.argv[1] else [], float(sys.argv[2])
remotes = Remotes([parse_endpoint(u) for u in urls], interval_s=1.0)
remotes.begin_read()()
remotes.start()
time.sleep(1.0)
start_cpu, start = time.process_time(), time.monotonic()
time.sleep(seconds)
cpu, wall = time.process_time() - start_cpu, time.monotonic() - start
hosts = {s.system.hostname for s in remotes.samples() if not s.remote.fault}
faults = [s.remote.fault for s in remotes.samples() if s.remote.fault]
remotes.close()
print(cpu / wall * 100, len(urls), len(faults))
"""


def remote_costs(gpus: int, seconds: float, hosts: list[int]) -> list[tuple[int, float, float]]:
    """(remote hosts, reader CPU % of a core, extra % per host over reading none)."""
    most = max(hosts)
    rows = []
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(_serve(gpus))[0] for _ in range(most)]
        baseline = _reader_cpu_percent([], seconds)
        rows.append((0, baseline, float("nan")))
        for count in hosts:
            cpu = _reader_cpu_percent(urls[:count], seconds)
            rows.append((count, cpu, (cpu - baseline) / count))
    return rows


def _reader_cpu_percent(urls: list[str], seconds: float) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _REMOTE_READER, ",".join(urls), str(seconds)],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    ).stdout.split()
    if int(out[2]):
        raise SystemExit(f"{out[2]} remote(s) did not answer during the run")
    return float(out[0])


def print_peers(gpus: int, seconds: float, runs: int, every_s: float = 1.0) -> None:
    print(
        f"trayvml serve beside nvitop-exporter, {_gpus_read(gpus)}, both at their 1 s interval "
        f"and scraped every {every_s:g} s, {seconds:g} s after {SETTLE_S:g} s of settling; median of {runs} run(s)"
    )
    results: dict[str, list[tuple[float, float, int]]] = {}
    for run in range(runs):
        for name, figures in peers(gpus, seconds, every_s).items():
            results.setdefault(name, []).append(figures)
        mine, theirs = results["trayvml serve"][-1], results["nvitop-exporter"][-1]
        print(
            f"  run {run + 1}: serve {mine[0]:.2f} % {mine[1]:.0f} MiB, "
            f"nvitop-exporter {theirs[0]:.2f} % {theirs[1]:.0f} MiB"
        )
    print(f"{'tool':<16} {'CPU % of a core':>15} {'RSS MiB':>8} {'body KiB':>8}")
    medians = {
        name: tuple(statistics.median(f[i] for f in figures) for i in range(3)) for name, figures in results.items()
    }
    for name, (cpu, rss, size) in medians.items():
        print(f"{name:<16} {cpu:>15.2f} {rss:>8.1f} {size / 1024:>8.1f}")
    ratios_cpu = [m[0] / t[0] for m, t in zip(results["trayvml serve"], results["nvitop-exporter"], strict=True)]
    ratios_rss = [m[1] / t[1] for m, t in zip(results["trayvml serve"], results["nvitop-exporter"], strict=True)]
    print(
        f"serve / nvitop-exporter: CPU {statistics.median(ratios_cpu):.3f}x (runs {min(ratios_cpu):.3f}-"
        f"{max(ratios_cpu):.3f}; target <= 0.1), RSS {statistics.median(ratios_rss):.2f}x (target <= 1)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per row (default 10)")
    parser.add_argument("--peer-seconds", type=float, default=40.0, help="per run beside nvitop-exporter (40)")
    parser.add_argument("--runs", type=int, default=3, help="runs beside nvitop-exporter (default 3)")
    parser.add_argument("--gpus", type=int, default=8, help="simulated H100s per exporter (default 8)")
    parser.add_argument("--hosts", default="1,4", help="remote host counts to measure (default 1,4)")
    parser.add_argument("--driver-cpu", action="store_true", help="process lists burn CPU (see DRIVER_CPU)")
    parser.add_argument("--parts", default="peers,rates,remote", help="which parts (default peers,rates,remote)")
    parser.add_argument("--new-connections", action="store_true", help="a new connection each scrape (see above)")
    parser.add_argument(
        "--peer-scrape-s",
        type=float,
        default=1.0,
        help="seconds between scrapes beside nvitop-exporter (1; 15 is Prometheus's default)",
    )
    parser.add_argument("--real", action="store_true", help="this machine's GPUs, not simulated ones (see REAL)")
    args = parser.parse_args()
    REAL[0] = args.real
    parts = set(args.parts.split(","))
    DRIVER_CPU[0] = args.driver_cpu
    NEW_CONNECTIONS[0] = args.new_connections
    if args.new_connections:
        print("Each scrape on a new connection (--new-connections)")
    if args.driver_cpu:
        print("Simulated process-list calls burn their 2.25 ms on the CPU (--driver-cpu)")
    if "peers" in parts:
        print_peers(args.gpus, args.peer_seconds, args.runs, args.peer_scrape_s)
        print()
    if "rates" in parts:
        print_rates(args.gpus, args.seconds)
        print()
    if "remote" in parts:
        print_remote(args.gpus, args.seconds, [int(h) for h in args.hosts.split(",")])


def print_rates(gpus: int, seconds: float) -> None:
    print(f"trayvml serve, {_gpus_read(gpus)}, sampling at 1 Hz, {seconds:g} s a row")
    print(
        f"{'scrapes/s':>9} {'scrapes':>7} {'serve CPU %':>11} {'CPU ms/scrape':>13} {'GPU reads/s':>11} {'body KiB':>8}"
    )
    for rate, scrapes, cpu, per, reads, size in scrape_costs(gpus, seconds):
        reads_text = "-" if reads != reads else f"{reads:.2f}"
        per_text = "-" if not scrapes else f"{per:.2f}"
        print(f"{rate:>9.3g} {scrapes:>7} {cpu:>11.2f} {per_text:>13} {reads_text:>11} {size / 1024:>8.1f}")


def print_remote(gpus: int, seconds: float, hosts: list[int]) -> None:
    print(f"Remote hosts read at 1 Hz ({gpus} GPUs each, trayvml serve), reader process CPU, {seconds:g} s a row")
    print(f"{'hosts':>5} {'reader CPU %':>12} {'extra % per host':>16}")
    for count, cpu, per_host in remote_costs(gpus, seconds, hosts):
        per_text = "-" if per_host != per_host else f"{per_host:.3f}"
        print(f"{count:>5} {cpu:>12.3f} {per_text:>16}")


if __name__ == "__main__":
    main()
