"""trayvml serve: names from the catalog, the latest sample served, faults as trayvml_up 0, auth and TLS."""

from __future__ import annotations

import base64
import itertools
import math
import re
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path

import bcrypt
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import present, run_ticks, simulated_source
from trayvml.cli import main
from trayvml.commands.serve import DEFAULT_PORT, Exporter, SamplingLoop, is_loopback, load_web_config, parse_listen
from trayvml.core import prom_names
from trayvml.core.errors import DriverStall, NvmlUnavailable, TrayvmlError, UnavailableReason
from trayvml.core.lines import simulation_text
from trayvml.core.metrics import GPU_METRIC_BY_KEY, GPU_METRICS, HOST_METRICS
from trayvml.core.sample import MetricState, Sample
from trayvml.core.units import Unit
from trayvml.prometheus.exposition import SampleCollector, WebConfig
from trayvml.remote.dialects import Point, to_samples

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


def _scrape_text(sample: Sample | None) -> str:
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(SampleCollector(lambda: sample, hostname="here"))
    return generate_latest(registry).decode()


def _points(text: str) -> list[Point]:
    return [Point(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def _simulated_sample(spec: str = "training") -> Sample:
    source, clock, _ = simulated_source(spec, host=True)
    return run_ticks(source, clock, 3)


def test_every_served_catalog_metric_has_a_unique_prometheus_name_by_the_conventions() -> None:
    served = {m.key: n for m in (*GPU_METRICS, *HOST_METRICS) if (n := prom_names.name_of(m)) is not None}
    full = [n.full for n in served.values()]
    assert len({n.family for n in served.values()}) == len(served)
    not_catalog = [prom_names.UP, prom_names.GPU_INFO]
    not_catalog += [n.full for n in (prom_names.MEMORY_TOTAL, prom_names.PROCESS_MEMORY, prom_names.SAMPLE_TIME)]
    assert len(set(full)) == len(full) and not set(full) & set(not_catalog)
    for metric in (*GPU_METRICS, *HOST_METRICS):
        if metric.prom is None:
            continue
        name = served[metric.key]
        assert _NAME.match(name.full) and name.full.startswith("trayvml_")
        assert _NAME.match(metric.prom) and not metric.prom.startswith("trayvml_")
        assert "percent" not in name.full and not name.full.endswith(("_c", "_w", "_j", "_mhz"))
        if metric.unit is Unit.PERCENT:
            assert name.full.endswith("_ratio")
        if metric.unit is Unit.BYTES:
            assert name.full.endswith("_bytes")
        assert name.full.endswith("_total") == metric.counter
    assert served["energy_consumed_j"] == prom_names.PromName("gpu_energy_joules", counter=True)
    assert served["energy_consumed_j"].full == "trayvml_gpu_energy_joules_total"
    assert served["utilization_gpu_percent"].full == "trayvml_gpu_utilization_ratio"
    assert served["clock_sm_mhz"].full == "trayvml_gpu_clock_sm_hertz"
    assert served["pcie_link_width"].full == "trayvml_gpu_pcie_link_width_lanes"


def test_a_catalog_metric_without_a_prometheus_name_is_not_served(monkeypatch: pytest.MonkeyPatch) -> None:
    from trayvml.prometheus import exposition

    unserved = {"power_instant_w", "ram_total_bytes"}
    for table in ("GPU_METRICS", "HOST_METRICS"):
        metrics = getattr(exposition, table)
        monkeypatch.setattr(
            exposition, table, tuple(replace(m, prom=None) if m.key in unserved else m for m in metrics)
        )
    names = {p.name for p in _points(_scrape_text(_simulated_sample()))}
    assert "trayvml_gpu_power_watts" in names and "trayvml_host_memory_used_bytes" in names
    assert not names & {"trayvml_gpu_power_instant_watts", "trayvml_host_memory_total_bytes"}


def test_a_scrape_serves_the_sample_in_base_units_and_reads_back_the_same() -> None:
    sample = _simulated_sample()
    text = _scrape_text(sample)
    gpu, device, system = sample.gpus[0], sample.devices[0], present(sample.system)
    line = f'trayvml_gpu_utilization_ratio{{hostname="{system.hostname}",index="0",uuid="{device.uuid}"}}'
    assert line in text
    served = {(p.name, p.labels.get("uuid")): p.value for p in _points(text)}
    ratio = served[("trayvml_gpu_utilization_ratio", device.uuid)]
    assert ratio == pytest.approx(gpu.value("utilization_gpu_percent") / 100)
    assert served[("trayvml_gpu_clock_sm_hertz", device.uuid)] == pytest.approx(gpu.value("clock_sm_mhz") * 1e6)
    assert served[("trayvml_gpu_energy_joules_total", device.uuid)] == pytest.approx(gpu.value("energy_consumed_j"))
    # Served at each sample's time, read every 5 s: its help says so, as the process series' do.
    assert "# HELP trayvml_gpu_energy_joules_total Energy since driver load (read every 5 s)\n" in text
    # So do the limits and error counters, read every 10 s; a metric read every tick says nothing.
    assert "# HELP trayvml_gpu_power_limit_watts Power limit (read every 10 s)\n" in text
    ecc = "trayvml_gpu_ecc_uncorrected_volatile_errors_total ECC uncorrected (volatile)"
    assert f"# HELP {ecc} (read every 10 s)\n" in text
    assert "# HELP trayvml_gpu_processes Processes (read every 5 s)\n" in text  # counted from the lists
    assert "# HELP trayvml_gpu_utilization_ratio GPU utilization (0 to 1)\n" in text
    assert served[("trayvml_up", None)] == 1.0
    info = next(p for p in _points(text) if p.name == "trayvml_gpu_info" and p.labels["uuid"] == device.uuid)
    assert info.labels["name"] == device.name and info.labels["pci_bus_id"] == device.pci_bus_id
    assert info.labels["driver"] == system.driver_version and info.labels["index"] == "0"
    procs = [p for p in _points(text) if p.name == "trayvml_gpu_process_memory_used_bytes"]
    assert {int(p.labels["pid"]) for p in procs} == {p.pid for g in sample.gpus for p in g.processes}
    assert any(p.name == "trayvml_host_memory_used_bytes" for p in _points(text))

    (back,) = to_samples(_points(text), "fallback", "http://x", sample.timestamp_s)
    assert [d.uuid for d in back.devices] == [d.uuid for d in sample.devices]
    for mine, theirs in zip(sample.gpus, back.gpus, strict=True):
        for metric in GPU_METRICS:
            if mine.state(metric.key) is MetricState.OK and not math.isnan(mine.value(metric.key)):
                assert theirs.value(metric.key) == pytest.approx(mine.value(metric.key)), metric.key
            else:
                assert theirs.state(metric.key) is MetricState.NOT_SUPPORTED, metric.key


@pytest.mark.parametrize(
    ("spec", "seconds", "state"),
    [
        ("training:gpus=h100*3,lost=1@50", 60, MetricState.LOST),
        ("idle:gpus=h100+laptop,sleep=1@5", 10, MetricState.ASLEEP),
    ],
)
def test_a_lost_or_sleeping_gpu_reads_back_as_such_not_as_metrics_not_supported(
    spec: str, seconds: float, state: MetricState
) -> None:
    """Its series are absent for a reason of its own: the info series says which, and a reader shows
    it lost (and its alert fires) or asleep, as this machine's reader would, in full and by the layout."""
    from trayvml.alerts.dispatch import Dispatcher
    from trayvml.alerts.engine import AlertSettings
    from trayvml.history.timeline import History
    from trayvml.monitor.remotes import RemoteMonitors
    from trayvml.remote.fetch import SeriesCache, exporter_samples, parse_endpoint

    source, clock, _ = simulated_source(spec, host=True)
    run_ticks(source, clock, 2)
    clock.advance_s(seconds)
    sample = run_ticks(source, clock, 2)
    assert sample.gpus[1].state("temperature_gpu_c") is state  # as this machine reads it
    endpoint, cache = parse_endpoint("http://box:9400/metrics"), SeriesCache()
    reads = [
        exporter_samples(endpoint, _scrape_text(replace(sample, timestamp_s=t)).encode(), "text/plain", t, cache)
        for t in (sample.timestamp_s, sample.timestamp_s + 1)
    ]
    assert cache.layout is not None  # the second read went by the layout
    for (back,) in reads:
        theirs = back.gpus[1]
        assert set(theirs.states) == {state} and (theirs.lost, theirs.asleep) == (
            state is MetricState.LOST,
            state is MetricState.ASLEEP,
        )
        assert back.gpus[0].state("temperature_gpu_c") is MetricState.OK
    monitors = RemoteMonitors(Dispatcher(clock), AlertSettings(), History)
    _, outcome = monitors.take(reads[0])
    fired = [e.rule for e in outcome.events if e.kind == "firing"]
    assert fired.count("gpu_lost") == (state is MetricState.LOST)


def test_a_resting_laptop_gpu_reads_back_as_resting_not_as_metrics_not_supported() -> None:
    """An idle laptop GPU the reader let go of NVML for (the tray's 30 s between polls): its series
    were absent with no state on its info series, and a reader took it for a GPU that supports
    nothing, 29 s of every 30."""
    from trayvml.remote.fetch import exporter_samples, parse_endpoint

    source, clock, _ = simulated_source("idle:gpus=laptop", host=True)
    source.reader.idle_poll_s = 30.0
    sample = run_ticks(source, clock, 3)
    assert sample.gpus[0].state("temperature_gpu_c") is MetricState.RESTING  # as this machine reads it
    text = _scrape_text(sample)
    (info,) = [line for line in text.splitlines() if line.startswith("trayvml_gpu_info{")]
    assert 'state="resting"' in info
    (back,) = exporter_samples(parse_endpoint("http://box:9400/metrics"), text.encode(), "text/plain", 1.0)
    assert set(back.gpus[0].states) == {MetricState.RESTING}


def test_a_gpus_process_rows_are_served_only_from_a_list_read_of_it() -> None:
    """A MIG instance destroyed: for up to 10 s the reader kept its last process list while reading
    nothing of it, and serve showed a phantom 12 GiB process on a device that was gone."""
    sample = _simulated_sample("training:gpus=h100,start=1800")
    gpu = sample.gpus[0]
    assert gpu.processes and gpu.state("process_count") is MetricState.OK
    served = [line for line in _scrape_text(sample).splitlines() if line.startswith("trayvml_gpu_process_memory")]
    assert len(served) == len(gpu.processes)
    states = list(gpu.states)
    states[GPU_METRICS.index(GPU_METRIC_BY_KEY["process_count"])] = MetricState.NO_DATA  # the list not read
    stale = replace(sample, gpus=(replace(gpu, states=tuple(states)),))
    assert not [line for line in _scrape_text(stale).splitlines() if line.startswith("trayvml_gpu_process")]


def test_a_gpu_with_values_is_answering_whatever_an_info_series_left_behind_says() -> None:
    """Behind a server that federates, a GPU's earlier info series (``state="lost"``) stays for its
    lookback beside the new one; in whichever order they come, a GPU with values is answering."""
    sample = _simulated_sample("idle:gpus=h100*2")
    text = _scrape_text(sample)
    info = next(line for line in text.splitlines() if line.startswith("trayvml_gpu_info{") and 'index="1"' in line)
    leftover = info.replace("} 1.0", ',state="lost"} 1.0')
    assert leftover != info
    for placed in (text.replace(info, f"{info}\n{leftover}"), text.replace(info, f"{leftover}\n{info}")):
        placed += f"{leftover}\n"  # and once more after every value series
        (back,) = to_samples(_points(placed), "fallback", "http://x", sample.timestamp_s)
        gpu = back.gpus[1]
        assert not gpu.lost and gpu.state("temperature_gpu_c") is MetricState.OK


def test_a_metric_that_is_not_supported_has_no_series_rather_than_zero() -> None:
    sample = _simulated_sample()
    h100 = sample.gpus[0]
    assert h100.state("fan_speed_percent") is MetricState.NOT_SUPPORTED  # H100s have no fan of their own
    text = _scrape_text(sample)
    fans = {p.labels["uuid"] for p in _points(text) if p.name == "trayvml_gpu_fan_speed_ratio"}
    assert sample.devices[0].uuid not in fans
    assert fans  # the RTX 4090 has one


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            {"stall": DriverStall(0.0, "nvmlDeviceGetUtilizationRates"), "gpus": (), "devices": ()},
            "driver_not_responding",
        ),
        (
            {"unavailable": NvmlUnavailable(UnavailableReason.LIBRARY_NOT_FOUND), "gpus": (), "devices": ()},
            "library_not_found",
        ),
    ],
)
def test_a_stuck_or_missing_driver_is_up_0_with_a_reason(change: dict, reason: str) -> None:
    sample = replace(_simulated_sample(), **change)
    points = _points(_scrape_text(sample))
    (up,) = [p for p in points if p.name == "trayvml_up"]
    (down,) = [p for p in points if p.name == "trayvml_down_info"]
    # Why in a series of its own: a reason label on trayvml_up made it a new series at each change.
    assert up.value == 0.0 and up.labels == {"hostname": down.labels["hostname"]} and down.labels["reason"] == reason
    assert not [p for p in points if p.name.startswith("trayvml_gpu_")]


def test_before_the_first_sample_the_exporter_says_it_is_starting() -> None:
    points = _points(_scrape_text(None))
    (up,) = [p for p in points if p.name == "trayvml_up"]
    (down,) = [p for p in points if p.name == "trayvml_down_info"]
    assert (up.value, down.value, down.labels["reason"]) == (0.0, 1.0, "starting")
    # Up again: no reason served (absent, not an empty one).
    points = _points(_scrape_text(_simulated_sample()))
    assert [p.value for p in points if p.name == "trayvml_up"] == [1.0]
    assert not [p for p in points if p.name == "trayvml_down_info"]


def _get(url: str, headers: dict[str, str] | None = None, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        error.close()
        return error.code, ""


def test_scrapes_within_the_interval_serve_what_the_loop_read_last() -> None:
    sample = _simulated_sample()
    reads = []

    def read() -> Sample:
        reads.append(1)
        return sample

    loop = SamplingLoop(read, interval_s=3600)
    loop.start()
    exporter = Exporter(lambda: loop.fresh(5.0), "127.0.0.1", 0)
    try:
        for _ in range(20):
            status, text = _get(exporter.server.url)
            assert status == 200 and "trayvml_gpu_utilization_ratio" in text
        assert len(reads) == 1  # the one at start: every scrape came within the hour
    finally:
        exporter.close()
        loop.stop()


def _counting_loop(interval_s: float, hold: threading.Event | None = None) -> tuple[SamplingLoop, list[float]]:
    """A loop whose reads are numbered samples (their timestamp is the read's number); a read after
    the first waits for ``hold`` where one is given."""
    sample = _simulated_sample()
    reads: list[float] = []

    def read() -> Sample:
        reads.append(time.monotonic())
        if hold is not None and len(reads) > 1:
            hold.wait(30)
        return replace(sample, timestamp_s=float(len(reads)))

    loop = SamplingLoop(read, interval_s)
    loop.start()
    return loop, reads


def test_with_no_one_scraping_serve_reads_the_gpus_once_and_no_more() -> None:
    loop, reads = _counting_loop(interval_s=0.05)
    try:
        time.sleep(0.5)  # ten intervals
        assert len(reads) == 1 and loop.latest is not None and loop.latest.timestamp_s == 1.0
    finally:
        loop.stop()


def test_a_scrape_after_the_interval_gets_a_sample_read_for_it_and_the_next_one_shares_it() -> None:
    loop, reads = _counting_loop(interval_s=0.2)
    try:
        first = loop.fresh(5.0)
        assert first is not None and first.timestamp_s == 1.0  # read at start, less than 0.2 s ago
        time.sleep(0.3)
        second = loop.fresh(5.0)  # the latest is 0.3 s old: a read for this scrape, waited for
        assert second is not None and second.timestamp_s == 2.0 and len(reads) == 2
        again = loop.fresh(5.0)  # within the interval of that read
        assert again is second and len(reads) == 2
        assert reads[1] - reads[0] >= 0.2  # never two reads within an interval
    finally:
        loop.stop()


def test_a_scraper_every_interval_gets_a_sample_of_its_own_each_time() -> None:
    loop, reads = _counting_loop(interval_s=0.5)
    try:
        served = [loop.fresh(5.0)]
        for _ in range(3):
            time.sleep(0.46)  # a hair early: 92 % of the interval
            served.append(loop.fresh(5.0))
        assert [s.timestamp_s for s in served if s is not None] == [1.0, 2.0, 3.0, 4.0]
        # Still one read an interval (the loop's clock is read just before our read's, which a
        # thread switch can delay by milliseconds; a loop that did not wait would read 0.46 s apart).
        assert all(b - a >= 0.48 for a, b in itertools.pairwise(reads))
    finally:
        loop.stop()


def test_a_scrape_during_a_read_waits_for_it_rather_than_take_the_sample_before() -> None:
    hold = threading.Event()
    loop, reads = _counting_loop(interval_s=1.0, hold=hold)
    served: list[Sample | None] = []
    try:
        assert loop.fresh(5.0) is not None
        time.sleep(1.0)
        asker = threading.Thread(target=lambda: loop.fresh(5.0))  # starts read 2, held
        asker.start()
        deadline = time.monotonic() + 5
        while len(reads) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(reads) == 2
        during = threading.Thread(target=lambda: served.append(loop.fresh(5.0)))
        during.start()
        during.join(0.5)  # a scrape that took the old sample would be back by now
        hold.set()
        during.join(5)
        asker.join(5)
        assert len(served) == 1 and served[0] is not None and served[0].timestamp_s >= 2.0
    finally:
        hold.set()
        loop.stop()


def test_a_scrape_waits_for_a_slow_read_no_longer_than_it_is_told() -> None:
    hold = threading.Event()
    loop, reads = _counting_loop(interval_s=0.05, hold=hold)
    try:
        first = loop.fresh(5.0)
        assert first is not None and first.timestamp_s == 1.0
        time.sleep(0.1)
        # The read this scrape asks for hangs (a stalled driver, until Source.sample's own bound):
        # after its wait the scrape gets the latest there is, whose time says how old it is.
        assert loop.fresh(0.2) is first
        hold.set()
        later = loop.fresh(5.0)  # that read, or one after it (its start is over 0.05 s ago by now)
        assert later is not None and later.timestamp_s >= 2.0 and len(reads) >= 2
    finally:
        hold.set()
        loop.stop()


def test_a_read_that_fails_is_served_as_failed_not_the_last_sample_as_current() -> None:
    """A read that raised (a bug in trayvml's reading) left the last sample to be served: with
    every read failing, each scrape said up 1 of a sample older and older."""
    from trayvml.core.errors import UnavailableReason
    from trayvml.prometheus.exposition import series, up_reason

    sample = _simulated_sample()
    reads: list[int] = []

    def read() -> Sample:
        reads.append(1)
        if len(reads) == 2:
            raise RuntimeError("a bug in a read")
        return replace(sample, timestamp_s=float(len(reads)))

    loop = SamplingLoop(read, interval_s=0.05)
    loop.start()
    try:
        assert (first := loop.fresh(5.0)) is not None and first.timestamp_s == 1.0
        time.sleep(0.1)
        failed = loop.fresh(5.0)
        assert failed is not None and failed.unavailable is not None and not failed.gpus
        assert failed.unavailable.reason is UnavailableReason.READ_FAILED
        assert up_reason(failed) == "read_failed"
        families = dict(series(failed, "box"))
        assert [rows for family, rows in families.items() if family.name == "trayvml_up"] == [[(("box",), 0.0)]]
        assert [rows for family, rows in families.items() if family.name == "trayvml_down"] == [
            [(("box",), {"reason": "read_failed"})]
        ]
        time.sleep(0.1)
        later = loop.fresh(5.0)  # the next read, once the interval is over
        assert later is not None and later.timestamp_s == 3.0 and len(reads) == 3
    finally:
        loop.stop()


def test_listen_addresses() -> None:
    assert parse_listen("127.0.0.1:9999") == ("127.0.0.1", 9999)
    assert parse_listen("[::1]:9999") == ("::1", 9999)
    assert parse_listen(":9999") == ("0.0.0.0", 9999)
    assert parse_listen("localhost") == ("localhost", DEFAULT_PORT)
    assert parse_listen("[::1]") == ("::1", DEFAULT_PORT)
    with pytest.raises(TrayvmlError, match="port must be a number"):
        parse_listen("127.0.0.1:http")
    with pytest.raises(TrayvmlError, match="port must be a number"):
        parse_listen("[::1]x")
    with pytest.raises(TrayvmlError, match=r"IPv6 address goes in brackets, as \[::1\]:8729"):
        parse_listen("::1")  # once host ":" on port 1, and a failed name lookup
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("gpu-box")
    assert DEFAULT_PORT not in (9400, 9835, 8000) and not 9100 <= DEFAULT_PORT <= 9999


def _web_config(tmp_path: Path, tls: bool) -> tuple[Path, Path | None]:
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    lines = ["basic_auth_users:", f"  alice: {hashed}"]
    cert = None
    if tls:
        cert = tmp_path / "server.crt"
        subprocess.run(
            [
                *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"),
                *("-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "server.key"), "-out", str(cert)),
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        lines += ["tls_server_config:", "  cert_file: server.crt", "  key_file: server.key"]  # relative to the file
    path = tmp_path / "web.yml"
    path.write_text("\n".join(lines) + "\n")
    return path, cert


@pytest.mark.parametrize("tls", [False, True])
def test_basic_auth_and_tls_from_a_web_config_file(tmp_path: Path, tls: bool) -> None:
    config, cert = _web_config(tmp_path, tls)
    web = load_web_config(str(config))
    sample = _simulated_sample()
    exporter = Exporter(lambda: sample, "127.0.0.1", 0, web)
    context = ssl.create_default_context(cafile=str(cert)) if cert else None
    try:
        url = exporter.server.url
        assert url.startswith("https://" if tls else "http://")
        assert _get(url, context=context)[0] == 401
        wrong = base64.b64encode(b"alice:guess").decode()
        assert _get(url, {"Authorization": f"Basic {wrong}"}, context)[0] == 401
        right = base64.b64encode(b"alice:s3cret").decode()
        status, text = _get(url, {"Authorization": f"Basic {right}"}, context)
        assert status == 200 and "trayvml_up" in text
    finally:
        exporter.close()


def test_a_bad_web_config_is_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text("basic_auth_users:\n  alice: plaintext\n")
    with pytest.raises(TrayvmlError, match="must be a bcrypt hash"):
        load_web_config(str(path))
    path.write_text("tls_server_config:\n  cert_file: a.crt\n")
    with pytest.raises(TrayvmlError, match="needs both cert_file and key_file"):
        load_web_config(str(path))
    path.write_text("tls_server_confg: {}\n")
    with pytest.raises(TrayvmlError, match="does not know: tls_server_confg"):
        load_web_config(str(path))
    path.write_bytes(b"basic_auth_users: {al\xe9: x}\n")  # Latin-1, as an old editor saves it
    with pytest.raises(TrayvmlError, match=r"web.yml is not UTF-8 text \(byte 22\)"):
        load_web_config(str(path))
    assert WebConfig().users == {}


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("--web-config", "--web-config was given an empty name."),
        ("--listen", "--listen was given an empty address: HOST:PORT, or :PORT for every address."),
    ],
)
def test_serve_refuses_an_empty_web_config_or_listen_address(
    option: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A shell variable left empty (--web-config "$CONFIG"): served with no password nor TLS, or on
    # every address, where the user asked for them.
    other = ["--listen", "127.0.0.1:0"] if option == "--web-config" else []
    assert main(["serve", "--simulate", *other, option, ""]) == 2
    err = capsys.readouterr().err
    assert err == f"trayvml: {said}\n"


def test_serve_command_rejects_a_bad_listen_address(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--simulate", "--listen", "127.0.0.1:99999"]) == 2
    err = capsys.readouterr().err
    assert "port must be a number from 0 to 65535" in err and "Traceback" not in err


def test_serve_command_warns_when_reachable_from_other_machines() -> None:
    command = [sys.executable, "-m", "trayvml", "serve", "--simulate", "--listen", "0.0.0.0:0"]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        stderr = process.stderr
        assert stderr is not None
        try:
            first = stderr.readline()
            second = stderr.readline()
        finally:
            process.terminate()
            process.wait(10)
            stderr.close()
    assert "warning: serving on 0.0.0.0, reachable from other machines" in first
    assert "serving http://0.0.0.0:" in second
    assert process.returncode == 0  # SIGTERM ends it cleanly


def test_a_remote_reads_trayvml_serve_over_https_with_basic_auth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trayvml.remote.fetch import RemoteError, parse_endpoint, read

    config, cert = _web_config(tmp_path, tls=True)
    sample = _simulated_sample()
    exporter = Exporter(lambda: sample, "127.0.0.1", 0, load_web_config(str(config)))
    try:
        url = exporter.server.url
        with pytest.raises(RemoteError, match=rf"^{url}: the TLS connection failed \(CERTIFICATE_VERIFY_FAILED\)"):
            read(parse_endpoint(url), 5.0, sample.timestamp_s)  # a certificate no CA of this machine signed
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # as a user trusts their own CA
        with pytest.raises(RemoteError, match=r"answered HTTP 401 Unauthorized \(check the user and password"):
            read(parse_endpoint(url), 5.0, sample.timestamp_s)
        with_password = url.replace("https://", "https://alice:s3cret@")
        (back,) = read(parse_endpoint(with_password, credentials_allowed=True), 5.0, sample.timestamp_s)
        assert [d.uuid for d in back.devices] == [d.uuid for d in sample.devices]
    finally:
        exporter.close()


def test_simulated_gpus_are_served_as_simulated_and_read_back_as_simulated() -> None:
    sample = _simulated_sample()
    points = _points(_scrape_text(sample))
    (flag,) = [p for p in points if p.name == prom_names.SIMULATED]
    assert flag.value == 1.0 and flag.labels["scenario"] == "training"
    assert all(p.labels["simulated"] == "true" for p in points if p.name == "trayvml_gpu_info")
    util = next(p for p in points if p.name == "trayvml_gpu_utilization_ratio")
    assert set(util.labels) == {"hostname", "uuid", "index"}  # the frequent series keep their labels
    (back,) = to_samples(points, "fallback", "http://x", sample.timestamp_s)
    assert back.simulation == sample.simulation == "simulated GPUs (training)"


def test_a_replayed_recording_is_served_and_read_back_under_its_own_label() -> None:
    # A replay's label is no scenario's ("replayed NVML recording (gpu.jsonl)"): served whole, read
    # back whole inside "simulated GPUs (…)"; its parentheses were cut as a scenario's wrapper.
    sample = replace(_simulated_sample(), simulation="replayed NVML recording (h200-580-fp.jsonl)")
    points = _points(_scrape_text(sample))
    (flag,) = [p for p in points if p.name == prom_names.SIMULATED]
    assert flag.value == 1.0 and flag.labels["scenario"] == "replayed NVML recording (h200-580-fp.jsonl)"
    (back,) = to_samples(points, "fallback", "http://x", sample.timestamp_s)
    assert back.simulation == "simulated GPUs (replayed NVML recording (h200-580-fp.jsonl))"
    assert simulation_text(back) == "simulated GPUs (replayed NVML recording (h200-580-fp.jsonl))"
    assert simulation_text(sample) == simulation_text(back)
    long = replace(sample, simulation="replayed NVML recording (h100-580-clockstep-after-the-driver-update.jsonl)")
    (cut,) = to_samples(_points(_scrape_text(long)), "fallback", "http://x", sample.timestamp_s)
    assert cut.simulation.startswith("simulated GPUs (replayed NVML recording (h100-580-clockstep")
    assert cut.simulation.endswith("…))")  # cut short (48 characters of an exporter's text), said whole


def test_serve_tells_a_real_h200_as_nvitop_exporter_did_beside_it() -> None:
    # An answer key not our own: a real nvitop-exporter's answer on the same H200 under the same load
    # (recordings/h200-580-busy.nvitop-exporter.txt, scraped 21-27 s after the busy recording's last
    # tick), against serve's exposition of that recording replayed, in nvitop-exporter's units:
    # memory to the byte (it did not move), the power limit and memory clock exactly, the power
    # drawn within 1 % (the instant power, 1.8 % off, would fail) and utilization within 3 points at
    # a 693 W, 99 % load; the temperature and the SM clock moved between the two: within 5 °C and
    # 1.5 % (the video clock, 2 % off, would fail).
    from tests.test_doctor import RECORDINGS, replayed

    *_, (_, sample) = replayed(RECORDINGS / "h200-580-busy.jsonl")
    ours = {p.name: p.value for p in _points(_scrape_text(sample)) if p.labels.get("index") == "0"}
    text = (RECORDINGS / "h200-580-busy.nvitop-exporter.txt").read_text()
    theirs = {
        s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples if s.labels.get("index") == "0"
    }
    mib = 2**20
    for name, nvitop in (
        ("memory_total", "gpu_memory_total_MiB"),
        ("memory_used", "gpu_memory_used_MiB"),
        ("memory_free", "gpu_memory_free_MiB"),
    ):
        assert ours[f"trayvml_gpu_{name}_bytes"] / mib == theirs[nvitop], name
    assert ours["trayvml_gpu_power_limit_watts"] == theirs["gpu_power_limit_W"] == 700.0
    assert ours["trayvml_gpu_clock_memory_hertz"] / 1e6 == theirs["gpu_clock_memory_MHz"] == 3201.0
    assert ours["trayvml_gpu_power_watts"] == pytest.approx(theirs["gpu_power_usage_W"], rel=0.01)
    assert 100 * ours["trayvml_gpu_utilization_ratio"] == pytest.approx(theirs["gpu_utilization_Percentage"], abs=3)
    assert 100 * ours["trayvml_gpu_memory_bandwidth_utilization_ratio"] == pytest.approx(
        theirs["gpu_memory_utilization_Percentage"], abs=3
    )
    assert ours["trayvml_gpu_temperature_celsius"] == pytest.approx(theirs["gpu_temperature_C"], abs=5)
    assert ours["trayvml_gpu_clock_sm_hertz"] / 1e6 == pytest.approx(theirs["gpu_clock_sm_MHz"], rel=0.015)
    assert theirs["gpu_power_usage_W"] > 600 and theirs["gpu_utilization_Percentage"] > 90  # the load was there


def test_real_gpus_are_served_as_real_and_read_back_as_real() -> None:
    sample = replace(_simulated_sample(), simulation="")
    points = _points(_scrape_text(sample))
    (flag,) = [p for p in points if p.name == prom_names.SIMULATED]
    assert flag.value == 0.0
    assert all("simulated" not in p.labels for p in points if p.name == "trayvml_gpu_info")
    (back,) = to_samples(points, "fallback", "http://x", sample.timestamp_s)
    assert back.simulation == ""


def test_serve_keeps_the_connection_of_an_http_1_1_scrape_and_closes_others() -> None:
    import http.client
    import socket

    sample = _simulated_sample()
    exporter = Exporter(lambda: sample, "127.0.0.1", 0)
    port = exporter.server.port
    try:
        kept = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        bodies, sockets = [], []
        for _ in range(3):
            kept.request("GET", "/metrics")
            answer = kept.getresponse()
            bodies.append(answer.read())
            assert answer.version == 11 and not answer.will_close
            sockets.append(kept.sock)  # http.client opens a new one where the server closed it
        assert sockets[0] is sockets[1] is sockets[2] and sockets[0] is not None
        assert bodies[0] == bodies[2] and b"trayvml_gpu_utilization_ratio" in bodies[0]
        kept.close()
        # HTTP/1.0, and HTTP/1.1 asking for the close, get their answer and the connection closed.
        for request in (
            b"GET /metrics HTTP/1.0\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        ):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                raw.sendall(request)
                received = b""
                while chunk := raw.recv(65536):  # returns at the close; a kept connection would time out
                    received += chunk
            assert received.startswith(b"HTTP/1.1 200 OK") and received.endswith(bodies[0])
    finally:
        exporter.close()


def test_a_remote_reads_serve_over_one_kept_https_connection_with_basic_auth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trayvml.remote.fetch import SeriesCache, parse_endpoint, read

    config, cert = _web_config(tmp_path, tls=True)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    sample = _simulated_sample()
    exporter = Exporter(lambda: sample, "127.0.0.1", 0, load_web_config(str(config)))
    cache = SeriesCache()
    try:
        endpoint = parse_endpoint(exporter.server.url.replace("https://", "https://alice:s3cret@"), True)
        sockets = []
        for _ in range(3):
            (back,) = read(endpoint, 5.0, sample.timestamp_s, cache)
            assert [d.uuid for d in back.devices] == [d.uuid for d in sample.devices]
            sockets.append(cache.connection._connection.sock)  # type: ignore[union-attr]
        assert sockets[0] is sockets[1] is sockets[2] and sockets[0] is not None
    finally:
        cache.connection.close()
        exporter.close()


def test_process_series_are_read_at_the_process_lists_cadence_and_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from trayvml.core.demand import PROCESS_PERIOD_S
    from trayvml.nvml.sim.scenarios import SimProcess

    source, clock, lib = simulated_source("idle:gpus=h100")
    memory = [2**30]
    monkeypatch.setattr(
        lib, "processes", lambda gpu: [SimProcess(4242, "train", "ada", "python t.py", memory[0])] if gpu == 0 else []
    )

    def served() -> float:
        text = _scrape_text(source.sample())
        (point,) = [p for p in _points(text) if p.name == prom_names.PROCESS_MEMORY.family]
        return point.value

    assert served() == 2**30
    memory[0] = 3 * 2**30
    clock.advance_s(1)
    assert served() == 2**30  # between two reads of the lists: as last read
    clock.advance_s(PROCESS_PERIOD_S - 1)
    assert served() == 3 * 2**30
    text = _scrape_text(source.sample())
    every = f"(process lists are read every {PROCESS_PERIOD_S:g} s)"
    assert f"# HELP {prom_names.PROCESS_MEMORY.family} GPU memory used by each process {every}" in text
    assert every in next(line for line in text.splitlines() if line.startswith("# HELP trayvml_process_job_info"))


def test_serve_gives_free_memory_back_once_its_first_sample_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from trayvml.commands import serve

    sample = _simulated_sample()
    reads: list[int] = []
    trims: list[int] = []

    def read() -> Sample:
        reads.append(1)
        return sample

    def trimmed() -> None:
        trims.append(len(reads))
        raise KeyboardInterrupt  # ends run() as Ctrl-C does

    monkeypatch.setattr(serve, "give_back_free_memory", trimmed)
    assert serve.run("127.0.0.1:0", None, 0.05, read, read_wait_s=5.0) == 0
    assert len(trims) == 1 and trims[0] >= 1  # after a sample was read, not before


def test_a_ratio_is_helped_as_one_and_a_hosts_metric_as_the_machines() -> None:
    """A percentage is served as a ratio: its HELP said "Memory busy (% of time)" over a series
    of 0.94; and the host's said "CPU" alone."""
    from trayvml.prometheus.exposition import _every_family

    families = {family.name: family.documentation for family in _every_family()}
    ratios = {name: text for name, text in families.items() if name.endswith("_ratio")}
    assert len(ratios) >= 10 and all("%" not in text and "0 to 1" in text for text in ratios.values()), ratios
    assert families["trayvml_gpu_memory_bandwidth_utilization_ratio"] == "Memory busy (share of time, 0 to 1)"
    assert families["trayvml_host_cpu_utilization_ratio"] == "This machine's CPU (0 to 1)"
    assert families["trayvml_host_disk_read_bytes_per_second"] == "This machine's disk read"
    assert families["trayvml_gpu_power_watts"].startswith("Power draw")  # a GPU's as it was
