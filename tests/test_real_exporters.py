"""Real parts: Debian's Prometheus scrapes `trayvml serve`, and nvitop-exporter runs on the simulated GPUs.

Both start as processes of their own on free local ports and are stopped after each test. The
exporter samples once a minute (``--interval 60``), so every scrape in a test serves the same
values and the values read back through Prometheus can be compared exactly.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from tests.helpers import present
from trayvml.core.lines import gpu_lines
from trayvml.core.metrics import GPU_METRICS, HOST_METRICS
from trayvml.core.sample import MetricState, Sample, said_age_s
from trayvml.core.units import MIB
from trayvml.remote.fetch import RemoteError, SeriesCache, parse_endpoint, read, read_prometheus_range, stale_after_s
from trayvml.remote.source import RemoteSource

T = TypeVar("T")
SPEC = "idle:gpus=h100*2+rtx4090"
SPEC_GPUS = 3
WAIT_S = 60.0  # Prometheus takes a few seconds to start on a loaded machine


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _process(command: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def _until(what: str, attempt: Callable[[], T | None], log: Path) -> T:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, RemoteError, ValueError):
            result = attempt()
            if result:
                return result
        time.sleep(0.25)
    raise AssertionError(f"{what} within {WAIT_S:g} s; its log:\n{log.read_text(errors='replace')[-3000:]}")


def _serve(tmp_path: Path, spec: str = SPEC, interval_s: int = 60) -> tuple[list[str], str, Path]:
    port = _free_port()
    command = [sys.executable, "-m", "trayvml", "serve", f"--simulate={spec}", "--interval", str(interval_s)]
    return [*command, "--listen", f"127.0.0.1:{port}"], f"http://127.0.0.1:{port}", tmp_path / "serve.log"


def _gpus_read(url: str) -> Callable[[], list[Sample]]:
    """Reads ``url``; [] until it serves GPUs (an exporter that has not sampled yet says it is starting)."""
    endpoint = parse_endpoint(url)

    def attempt() -> list[Sample]:
        samples = read(endpoint, 2.0, time.time())
        # Every GPU: an exporter that is still collecting may serve the first GPUs' series alone.
        return samples if samples and len(samples[0].gpus) == SPEC_GPUS else []

    return attempt


def _same_gpus(mine: Sample, theirs: Sample) -> None:
    assert present(theirs.system).hostname == present(mine.system).hostname
    assert [(d.uuid, d.index, d.name, d.pci_bus_id) for d in theirs.devices] == [
        (d.uuid, d.index, d.name, d.pci_bus_id) for d in mine.devices
    ]
    assert [d.memory_total_bytes for d in theirs.devices] == [d.memory_total_bytes for d in mine.devices]
    for a, b in zip(mine.gpus, theirs.gpus, strict=True):
        for metric in GPU_METRICS:
            assert b.state(metric.key) is a.state(metric.key), metric.key
            if a.state(metric.key) is MetricState.OK:
                assert b.value(metric.key) == pytest.approx(a.value(metric.key), rel=1e-12), metric.key
        assert sorted((p.pid, p.used_memory_bytes) for p in b.processes) == sorted(
            (p.pid, p.used_memory_bytes) for p in a.processes
        )
    assert mine.host is not None and theirs.host is not None
    for metric, x, y in zip(HOST_METRICS, mine.host.values, theirs.host.values, strict=True):
        assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=1e-12), metric.key


def _prometheus(tmp_path: Path, name: str, scrape: str, interval_s: int = 1) -> tuple[list[str], int, Path]:
    """A Prometheus server's command line scraping every ``interval_s`` (``scrape``: its
    scrape_configs entries), its port and its log."""
    port = _free_port()
    config = tmp_path / f"{name}.yml"
    config.write_text(f"global:\n  scrape_interval: {interval_s}s\n  scrape_timeout: 1s\nscrape_configs:\n{scrape}")
    command = [
        "prometheus",
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / name}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    return command, port, tmp_path / f"{name}.log"


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs Debian's prometheus (scripts/setup --test)")
def test_a_real_prometheus_scrapes_trayvml_serve_and_gives_the_same_gpus_back(tmp_path: Path) -> None:
    serve_command, serve_url, serve_log = _serve(tmp_path)
    target = serve_url.removeprefix("http://")
    prometheus, prom_port, prom_log = _prometheus(
        tmp_path, "prometheus", f"  - job_name: trayvml\n    static_configs:\n      - targets: ['{target}']\n"
    )
    # A second server gets the first one's series by federation, as a lab's central one does:
    # with their scrape times, so it keeps a dead host's last values for its lookback (5 min).
    central, central_port, central_log = _prometheus(
        tmp_path,
        "central",
        "  - job_name: federate\n    honor_labels: true\n    metrics_path: /federate\n"
        "    params:\n      'match[]': ['{job=\"trayvml\"}']\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{prom_port}']\n",
    )
    with _process(serve_command, serve_log), _process(central, central_log):
        with _process(prometheus, prom_log):
            (direct,) = _until("trayvml serve answers", _gpus_read(serve_url), serve_log)
            api = f"http://127.0.0.1:{prom_port}/api/v1/query?query=trayvml_up"

            def scraped() -> bool:
                with urllib.request.urlopen(api, timeout=2) as answer:
                    return bool(json.load(answer)["data"]["result"])

            _until("Prometheus scraped trayvml serve", scraped, prom_log)
            through = parse_endpoint(f'prometheus+http://127.0.0.1:{prom_port}#job="trayvml"')
            (via_prometheus,) = read(through, 5.0, time.time())
            assert present(via_prometheus.remote).kind == "trayvml serve"
            _same_gpus(direct, via_prometheus)
            assert len(direct.gpus) == 3
            # This machine's clock eight hours ahead of the server's (a dual-boot machine until NTP
            # answers): the same GPUs, not "holds no current GPU series".
            (ahead,) = read(through, 5.0, time.time() + 8 * 3600)
            _same_gpus(direct, ahead)
            # Each value says how long ago the server scraped it: not now, and not stale.
            assert all(0 < gpu.values_ago_s < stale_after_s(1.0) for gpu in via_prometheus.gpus + ahead.gpus)
            # A selector on the name too (the scrape times are asked with it).
            named = parse_endpoint(f'prometheus+http://127.0.0.1:{prom_port}#job="trayvml",__name__=~"trayvml_.*"')
            (by_name,) = read(named, 5.0, time.time())
            assert len(by_name.gpus) == 3 and 0 < by_name.values_ago_s < stale_after_s(1.0)

            # The past, for a window opened on a range: the same series through /api/v1/query_range.
            now_s = time.time()
            past = read_prometheus_range(through, "trayvml_gpu_memory_used_bytes", now_s - 30, now_s, 1.0, 5.0)
            uuids = {uuid for (_host, uuid) in past}
            assert uuids == {d.uuid for d in direct.devices}
            first = direct.devices[0].uuid
            values = {v for (_h, u), points in past.items() if u == first for _t, v in points}
            assert values == {direct.gpus[0].value("memory_used_bytes")}

            # A new history is filled from the server's past: every step holds the values served.
            def with_past() -> tuple[RemoteSource, Sample] | None:
                source = RemoteSource(through, interval_s=1.0, timeout_s=5.0)
                source.past_s = 60.0
                (live,) = source.read_once()
                return (source, live) if source.past else None  # the first scrape may be this second's

            source, live = _until("Prometheus holds a past", with_past, prom_log)
            assert all(s.timestamp_s < live.timestamp_s for s in source.past)
            for old in source.past:
                assert [d.uuid for d in old.devices] == [d.uuid for d in direct.devices]
                assert old.gpus[0].value("memory_used_bytes") == direct.gpus[0].value("memory_used_bytes")

            # A selector that matches nothing is a note naming the URL, not an empty host.
            nothing = parse_endpoint(f'prometheus+http://127.0.0.1:{prom_port}#job="nope"')
            with pytest.raises(RemoteError, match=rf"^prometheus\+http://127.0.0.1:{prom_port}#job=\"nope\" holds no"):
                read(nothing, 5.0, time.time())

            via_central = parse_endpoint(f'prometheus+http://127.0.0.1:{central_port}#job="trayvml"')
            central_source = RemoteSource(via_central, interval_s=1.0, timeout_s=5.0)
            hostname = present(direct.system).hostname
            scraped_at: set[float] = set()

            def federated() -> Sample | None:
                # Read until three scrapes have been seen come: how often the server gets them.
                samples = central_source.read_once()
                if len(samples) != 1 or not samples[0].gpus:
                    return None
                scraped_at.add(samples[0].timestamp_s - samples[0].values_ago_s)
                return samples[0] if max(scraped_at) - min(scraped_at) > 1.5 else None  # three, 1 s apart

            current = _until("the central server federated", federated, central_log)
            _same_gpus(direct, current)
            assert present(current.remote).fault == ""
            seen_s = current.timestamp_s - current.values_ago_s  # a sample the central server has
        stopped_s = time.time()  # the first server is gone: the central one gets nothing new

        def stale() -> Sample | None:
            (host,) = central_source.read_once()
            return host if "gets no new samples" in present(host.remote).fault else None

        gone = _until("the central server's host stale", stale, central_log)
    remote = present(gone.remote)
    assert (
        remote.fault == f"{via_central.url} gets no new samples of {hostname}: its exporter or its scrape has stopped."
    )
    assert seen_s - 0.01 <= remote.since_s <= stopped_s  # the last scrape that reached it
    assert gone.devices == () and gone.host is None  # the host's figures as old as its GPUs'


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs Debian's prometheus (scripts/setup --test)")
def test_between_a_servers_scrapes_its_values_are_held_and_only_its_scrape_times_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server scraping every 5 s holds the same values for 5 s: a read in between asks for the
    scrape times alone (a quarter of the cost) and keeps the values of the last whole read; their
    age still grows read by read, and a new scrape brings new values at the next read."""
    from trayvml.remote import fetch

    serve_command, serve_url, serve_log = _serve(
        tmp_path, "training:gpus=h100*2+rtx4090,start=1800", 1
    )  # values that move
    prometheus, prom_port, prom_log = _prometheus(
        tmp_path,
        "prometheus",
        f"  - job_name: trayvml\n    static_configs:\n      - targets: ['{serve_url.removeprefix('http://')}']\n",
        interval_s=5,
    )
    whole: list[str] = []
    real_get = fetch.get

    def counted(endpoint, url: str, timeout_s: float, kept=None):
        if "__name__%3D~" in url:  # the exporters' series, not only their scrape times
            whole.append(url)
        return real_get(endpoint, url, timeout_s, kept)

    monkeypatch.setattr(fetch, "get", counted)
    through = parse_endpoint(f'prometheus+http://127.0.0.1:{prom_port}#job="trayvml"')
    cache = fetch.SeriesCache()
    with _process(serve_command, serve_log), _process(prometheus, prom_log):
        _until("trayvml serve answers", _gpus_read(serve_url), serve_log)
        _until("Prometheus scraped trayvml serve twice", lambda: len(_scrape_times(through)) >= 2, prom_log)
        whole.clear()
        reads = []
        for _ in range(24):  # 12 s: two scrapes or three
            (host,) = read(through, 5.0, time.time(), cache)
            assert host.gpus and present(host.remote).fault == "", host.remote
            reads.append((host.timestamp_s - host.values_ago_s, host.values_ago_s, host.gpus[0].values))
            time.sleep(0.5)
    # The reads of each scrape: its time, as the reads tell it, moves by milliseconds between them.
    scrapes: list[list[tuple[float, tuple[float, ...]]]] = []
    for k, (scraped_s, age_s, values) in enumerate(reads):
        if not k or abs(scraped_s - reads[k - 1][0]) > 1.0:
            scrapes.append([])
        scrapes[-1].append((age_s, values))
    assert len(scrapes) >= 2  # new scrapes were seen
    assert len(whole) <= len(scrapes) + 2 < len(reads)  # whole once a scrape (and once overdue), not each read
    for held in scrapes:
        assert [age for age, _ in held] == sorted(age for age, _ in held)  # the age grows
        assert all(values == held[0][1] for _, values in held)  # the same values until the next scrape
    assert scrapes[0][0][1] != scrapes[-1][0][1]  # a new scrape's values, not the held ones


def _scrape_times(endpoint: object) -> set[float]:
    """The scrape times a few reads a second apart see (to wait for a server's first scrapes)."""
    seen = set()
    for _ in range(3):
        (host,) = read(endpoint, 5.0, time.time())  # type: ignore[arg-type]
        seen.add(round(host.timestamp_s - host.values_ago_s, 1))
        time.sleep(1.0)
    return seen


def _nvitop_exporter_installed() -> bool:
    from importlib.metadata import entry_points

    return any(ep.name == "nvitop-exporter" for ep in entry_points(group="console_scripts"))


@pytest.mark.skipif(not _nvitop_exporter_installed(), reason="needs nvitop-exporter (pip install -e .[test])")
def test_nvitop_exporter_on_the_simulated_gpus_is_a_remote_source(tmp_path: Path) -> None:
    port = _free_port()
    command = [sys.executable, "-m", "trayvml.nvml.sim.run", SPEC, "nvitop-exporter", "--hostname", "simbox"]
    command += ["--bind-address", "127.0.0.1", "--port", str(port), "--interval", "60"]
    log = tmp_path / "nvitop-exporter.log"
    serve_command, serve_url, serve_log = _serve(tmp_path)
    with _process(command, log), _process(serve_command, serve_log):
        (theirs,) = _until("nvitop-exporter serves the GPUs", _gpus_read(f"http://127.0.0.1:{port}"), log)
        (mine,) = _until("trayvml serve answers", _gpus_read(serve_url), serve_log)
    assert theirs.remote is not None and theirs.system is not None and mine.system is not None
    assert theirs.remote.kind == "nvitop-exporter" and theirs.system.hostname == "simbox"
    assert theirs.system.driver_version == mine.system.driver_version
    assert theirs.system.cuda_driver_version == "13.1"  # the simulated driver's, from nvitop_info
    assert [(d.uuid, d.index, d.name) for d in theirs.devices] == [(d.uuid, d.index, d.name) for d in mine.devices]
    for a, b, da in zip(mine.gpus, theirs.gpus, mine.devices, strict=True):
        # nvitop-exporter reports memory in whole MiB.
        assert theirs.devices[a.index].memory_total_bytes == pytest.approx(da.memory_total_bytes, abs=MIB)
        for key in ("utilization_gpu_percent", "temperature_gpu_c", "power_draw_w", "memory_used_bytes"):
            assert b.state(key) is MetricState.OK, key
        assert 0 <= b.value("utilization_gpu_percent") <= 100
        assert b.value("memory_used_bytes") == pytest.approx(a.value("memory_used_bytes"), abs=MIB)
        # What nvitop-exporter does not export is not supported, not zero.
        assert b.state("ecc_corrected_volatile_count") is MetricState.NOT_SUPPORTED


def test_a_real_nvitop_exporter_and_trayvml_serve_on_the_same_h200_read_alike() -> None:
    # Both scraped a second apart on a lent H200 under load (scripts/real-gpu-check, driver
    # 580.159.04), read back through trayvml's remote reader: nvitop-exporter is the answer key
    # for what serve says, and its real output the fixture for its dialect.
    from trayvml.remote.fetch import exporter_samples

    recordings = Path(__file__).parent / "recordings"
    read = {}
    for name in ("nvitop-exporter", "trayvml-serve"):
        body = (recordings / f"h200-580-busy.{name}.txt").read_bytes()
        (read[name],) = exporter_samples(parse_endpoint("http://127.0.0.1:9/metrics"), body, "text/plain", 0.0)
    theirs, ours = read["nvitop-exporter"].gpus[0], read["trayvml-serve"].gpus[0]
    assert read["nvitop-exporter"].devices[0].name == read["trayvml-serve"].devices[0].name == "NVIDIA H200"
    both = [m.key for m in GPU_METRICS if theirs.state(m.key) is MetricState.OK]
    assert len(both) >= 15 and all(ours.state(key) is MetricState.OK for key in both)
    # Power and PCIe rates move within the second between the scrapes; the rest is the same reading.
    moving = {"power_draw_w", "power_used_percent", "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s"}
    for key in both:
        tolerance = 0.1 * abs(theirs.value(key)) if key in moving else 0.0
        assert abs(ours.value(key) - theirs.value(key)) <= tolerance, key
    assert ours.value("memory_used_bytes") == theirs.value("memory_used_bytes") > 16 * 2**30  # the load held 16 GiB
    (mine,), (nvitop,) = ours.processes, theirs.processes
    assert (mine.pid, mine.used_memory_bytes) == (nvitop.pid, nvitop.used_memory_bytes) and mine.name == "python3"


@contextlib.contextmanager
def _federated(tmp_path: Path, exporter_url: str) -> Iterator[Callable[[], Sample]]:
    """A Prometheus server scraping ``exporter_url`` each second (job "exporter") and a second one
    federating from it every 2 s; yields a read of the one host through the second, with a cache
    kept between reads (as a remote's thread keeps it)."""
    target = exporter_url.removeprefix("http://").rstrip("/")
    first, first_port, first_log = _prometheus(
        tmp_path, "first", f"  - job_name: exporter\n    static_configs:\n      - targets: ['{target}']\n"
    )
    federate = (
        "  - job_name: federate\n    honor_labels: true\n    metrics_path: /federate\n"
        "    params:\n      'match[]': ['{job=\"exporter\"}']\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{first_port}']\n"
    )
    second, second_port, second_log = _prometheus(tmp_path, "second", federate, interval_s=2)
    through = parse_endpoint(f'prometheus+http://127.0.0.1:{second_port}#job="exporter"')
    cache = SeriesCache()

    def host() -> Sample:
        (sample,) = read(through, 5.0, time.time(), cache)
        return sample

    with _process(first, first_log), _process(second, second_log):
        yield host


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs Debian's prometheus (scripts/setup --test)")
def test_a_gpu_whose_series_stopped_behind_a_federating_server_is_not_shown_with_its_last_values(
    tmp_path: Path,
) -> None:
    """dcgm-exporter stops serving one GPU's series (it fell off the bus, its pod moved) while the
    host's other GPU goes on. The Prometheus server that scrapes it marks those series stale, but
    one that federates from it gets samples with their own times, which are not marked stale: it
    answers the GPU's last values for its lookback (5 minutes). Read through that server, the GPU
    says it has no new values (each NaN, no data, with their age), not its last ones as current,
    and the other GPU stays current."""
    from tests.helpers import UUID1, FakeRemote, dcgm_exposition

    exporter = FakeRemote()
    exporter.body = dcgm_exposition("Hostname").encode()
    try:
        with _federated(tmp_path, exporter.url) as host:

            def both_current() -> bool:
                sample = host()
                return len(sample.gpus) == 2 and all(
                    g.state("temperature_gpu_c") is MetricState.OK for g in sample.gpus
                )

            _until("both GPUs read through the federating server", both_current, tmp_path / "second.log")
            for _ in range(8):  # the scrapes' interval learnt from their times, as a tray reading each second would
                host()
                time.sleep(0.5)
            exporter.body = b"".join(line + b"\n" for line in exporter.body.splitlines() if UUID1.encode() not in line)
            stopped_s = time.monotonic()

            def second_gpu_stopped() -> Sample | None:
                sample = host()
                stopped = len(sample.gpus) == 2 and sample.gpus[1].state("temperature_gpu_c") is MetricState.NO_DATA
                return sample if stopped else None

            sample = _until("the stopped GPU read as not current", second_gpu_stopped, tmp_path / "second.log")
        waited_s = time.monotonic() - stopped_s
    finally:
        exporter.stop()
    going, stopped = sample.gpus  # GPU 1 stopped
    assert waited_s < 60.0  # within the server's lookback, where its last values were still answered
    assert all(math.isnan(v) for v in stopped.values), stopped.values
    assert stopped.values_ago_s > 2.0, stopped.values_ago_s
    assert going.state("temperature_gpu_c") is MetricState.OK and going.value("temperature_gpu_c") == 61.0
    assert going.values_ago_s < stopped.values_ago_s
    assert present(sample.remote).fault == ""  # the host is current: its other GPU is
    assert sample.values_ago_s == going.values_ago_s  # the host's age is its current GPU's
    assert gpu_lines(sample)[1] == f"1 A100 — no new values for {said_age_s(stopped.values_ago_s)} s"


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs Debian's prometheus (scripts/setup --test)")
def test_an_exporter_that_was_starting_is_current_at_once_behind_a_federating_server(tmp_path: Path) -> None:
    """trayvml serve says it is starting (trayvml_up 0, trayvml_down_info's reason "starting")
    until its first sample; a server that federates keeps that reason for its lookback beside
    trayvml_up 1. Read through it, the host is current as soon as its values come, not "has not
    read its GPUs yet" for 5 minutes."""
    from tests.helpers import FakeRemote

    exporter = FakeRemote()
    exporter.body = b'trayvml_up{hostname="vm"} 0\ntrayvml_down_info{hostname="vm",reason="starting"} 1\n'
    recorded = (Path(__file__).parent / "recordings" / "h200-580-busy.trayvml-serve.txt").read_bytes()
    served = recorded.replace(b'trayvml_up{hostname="vm",reason=""} 1.0', b'trayvml_up{hostname="vm"} 1.0')
    assert served != recorded  # (this serve's series: no reason label on trayvml_up)
    try:
        with _federated(tmp_path, exporter.url) as host:
            _until("the starting exporter federated", lambda: _says_starting(host), tmp_path / "second.log")
            exporter.body = served
            sample = _until("the host current", lambda: _current(host), tmp_path / "second.log")
    finally:
        exporter.stop()
    assert len(sample.gpus) == 1 and sample.gpus[0].state("temperature_gpu_c") is MetricState.OK


def _says_starting(host: Callable[[], Sample]) -> bool:
    """Whether the host read says its exporter has not read its GPUs yet."""
    return "has not read its GPUs yet" in present(host().remote).fault


def _current(host: Callable[[], Sample]) -> Sample | None:
    sample = host()
    return sample if sample.gpus and present(sample.remote).fault == "" else None


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs Debian's prometheus (scripts/setup --test)")
def test_a_process_that_ended_leaves_the_list_at_once_behind_a_federating_server(tmp_path: Path) -> None:
    """trayvml serve stops serving a process's series when it ends; a server that federates keeps
    them for its lookback (5 minutes) with the time of their last scrape. Read through it, the
    process leaves the remote GPU's list within a few scrapes, not 5 minutes later."""
    from tests.helpers import FakeRemote

    served = (Path(__file__).parent / "recordings" / "h200-580-busy.trayvml-serve.txt").read_bytes()
    exporter = FakeRemote()
    exporter.body = served
    try:
        with _federated(tmp_path, exporter.url) as host:

            def listed() -> Sample | None:
                sample = host()
                return sample if sample.gpus and sample.gpus[0].processes else None

            _until("the process listed through the federating server", listed, tmp_path / "second.log")
            exporter.body = b"".join(
                line.replace(b"} 1.0", b"} 0.0")  # the GPU's count of processes
                if line.startswith(b"trayvml_gpu_processes{")
                else line
                for line in served.splitlines(keepends=True)
                if b'pid="578"' not in line
            )
            ended_s = time.monotonic()

            def gone() -> Sample | None:
                sample = host()
                return sample if sample.gpus and not sample.gpus[0].processes else None

            sample = _until("the ended process gone from the list", gone, tmp_path / "second.log")
        waited_s = time.monotonic() - ended_s
    finally:
        exporter.stop()
    assert waited_s < 30.0  # a few of the federating server's 2 s scrapes, where it keeps them 5 minutes
    assert present(sample.remote).fault == "" and sample.gpus[0].state("temperature_gpu_c") is MetricState.OK


def _nginx(tmp_path: Path, upstream_port: int) -> tuple[list[str], int, Path]:
    """nginx as a reverse proxy before ``upstream_port``, with its default limit on a request line
    (8 KB: longer ones are answered 414 URI Too Long); everything in ``tmp_path``."""
    port = _free_port()
    root = tmp_path / "nginx"
    root.mkdir()
    (root / "nginx.conf").write_text(
        "daemon off;\nmaster_process off;\npid nginx.pid;\nerror_log error.log warn;\n"
        "events { worker_connections 64; }\n"
        "http {\n  access_log off;\n  client_body_temp_path body;\n  proxy_temp_path proxy;\n"
        "  fastcgi_temp_path fastcgi;\n  uwsgi_temp_path uwsgi;\n  scgi_temp_path scgi;\n"
        "  large_client_header_buffers 4 8k;\n"
        f"  server {{\n    listen 127.0.0.1:{port};\n"
        f"    location / {{ proxy_pass http://127.0.0.1:{upstream_port}; }}\n  }}\n}}\n"
    )
    # -e: the error log before the configuration is read, else /var/log/nginx's is opened.
    command = ["nginx", "-p", str(root), "-c", "nginx.conf", "-e", str(root / "startup.log")]
    return command, port, tmp_path / "nginx.log"


@pytest.mark.skipif(
    shutil.which("prometheus") is None or shutil.which("nginx") is None,
    reason="needs Debian's prometheus and nginx-light (scripts/setup --test)",
)
def test_a_long_selector_through_a_proxy_that_limits_request_lines_is_posted(tmp_path: Path) -> None:
    """A Prometheus server behind nginx, as many are: a query longer than a request line may be is
    asked in a POST's form (Prometheus takes either), where a GET would be refused (414)."""
    serve_command, serve_url, serve_log = _serve(tmp_path)
    target = serve_url.removeprefix("http://")
    prometheus, prom_port, prom_log = _prometheus(
        tmp_path, "prometheus", f"  - job_name: trayvml\n    static_configs:\n      - targets: ['{target}']\n"
    )
    nginx, nginx_port, nginx_log = _nginx(tmp_path, prom_port)
    # Many instances a user may name: the selector goes into the query once for each series name.
    others = "|".join(f"gpu-node-{k:04d}:8729" for k in range(60))
    selector = f'job="trayvml",instance=~"{target}|{others}"'
    url = f"prometheus+http://127.0.0.1:{nginx_port}#{selector}"
    with _process(serve_command, serve_log), _process(prometheus, prom_log), _process(nginx, nginx_log):
        samples = _until("trayvml serve's GPUs through nginx and Prometheus", _gpus_read(url), prom_log)
        assert present(samples[0].remote).kind == "trayvml serve" and len(samples[0].gpus) == SPEC_GPUS
        # The same query as a GET: refused by the proxy, which is why it is not one.
        query = urllib.parse.urlencode({"query": f"up{{{selector}}}" * 40})
        with pytest.raises(urllib.error.HTTPError, match="414"):
            urllib.request.urlopen(f"http://127.0.0.1:{nginx_port}/api/v1/query?{query}", timeout=5)
