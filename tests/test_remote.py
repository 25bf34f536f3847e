"""Remote sources: each exporter's names and units into the catalog's, and remotes that misbehave.

The dcgm-exporter and nvidia_gpu_exporter scrapes below are written from their documentation and
source (dcgm-exporter's etc/default-counters.csv and README; nvidia_gpu_exporter's docs/METRICS.md
and internal/integration/testdata): both need real GPUs to run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers import (
    UUID0,
    UUID1,
    FakeRemote,
    closed_port_url,
    dcgm_exposition,
    present,
    run_ticks,
    simulated_source,
)
from trayvml.cli import main
from trayvml.core.errors import TrayvmlError
from trayvml.core.metrics import GPU_METRICS
from trayvml.core.sample import MetricState
from trayvml.core.units import MIB
from trayvml.remote.fetch import (
    SCRAPES_WINDOW_S,
    Endpoint,
    RemoteError,
    Scrapes,
    ScrapeTimes,
    SeriesCache,
    host_ages,
    parse_endpoint,
    parse_exposition,
    prometheus_query,
    read,
    stale_after_s,
)
from trayvml.remote.source import MAX_BACKOFF_S, RemoteSource

NVIDIA_GPU_EXPORTER = """\
# HELP nvidia_smi_gpu_info A metric with a constant '1' value labeled by gpu uuid, name, driver_version, ...
# TYPE nvidia_smi_gpu_info gauge
nvidia_smi_gpu_info{uuid="df6e7a7c-7314-46f8-abc4-b88b36dcf3aa",name="NVIDIA GeForce RTX 2080 SUPER",\
driver_version="471.11",pci_bus_id="00000000:71:00.0",index="0"} 1
# HELP nvidia_smi_utilization_gpu_ratio utilization.gpu [%]
# TYPE nvidia_smi_utilization_gpu_ratio gauge
nvidia_smi_utilization_gpu_ratio{uuid="df6e7a7c-7314-46f8-abc4-b88b36dcf3aa"} 0.42
# HELP nvidia_smi_memory_used_bytes memory.used [MiB]
# TYPE nvidia_smi_memory_used_bytes gauge
nvidia_smi_memory_used_bytes{uuid="df6e7a7c-7314-46f8-abc4-b88b36dcf3aa"} 7.06740224e+08
# HELP nvidia_smi_memory_total_bytes memory.total [MiB]
# TYPE nvidia_smi_memory_total_bytes gauge
nvidia_smi_memory_total_bytes{uuid="df6e7a7c-7314-46f8-abc4-b88b36dcf3aa"} 8.589934592e+09
# HELP nvidia_smi_power_draw_watts power.draw [W]
# TYPE nvidia_smi_power_draw_watts gauge
nvidia_smi_power_draw_watts{uuid="df6e7a7c-7314-46f8-abc4-b88b36dcf3aa"} 28.07
# HELP nvidia_smi_temperature_gpu temperature.gpu
# TYPE nvidia_smi_temperature_gpu gauge
nvidia_smi_temperature_gpu{uuid="df6e7a7c-7314-46f8-abc4-b88b36dcf3aa"} 34
# HELP nvidia_smi_clocks_current_sm_clock_hz clocks.current.sm [MHz]
# TYPE nvidia_smi_clocks_current_sm_clock_hz gauge
nvidia_smi_clocks_current_sm_clock_hz{uuid="df6e7a7c-7314-46f8-abc4-b88b36dcf3aa"} 1.98e+09
# HELP nvidia_smi_compute_app_used_memory_bytes GPU memory used by the process.
# TYPE nvidia_smi_compute_app_used_memory_bytes gauge
nvidia_smi_compute_app_used_memory_bytes{pid="10291",process_name="/root/tools/memhog",\
uuid="df6e7a7c-7314-46f8-abc4-b88b36dcf3aa"} 2.690646016e+09
# HELP nvidia_smi_last_collect_success Whether the most recent collection succeeded (1) or not (0)
# TYPE nvidia_smi_last_collect_success gauge
nvidia_smi_last_collect_success 1
"""


@pytest.fixture
def remote() -> Iterator[FakeRemote]:
    server = FakeRemote()
    yield server
    server.stop()


def _read(url: str, timeout_s: float = 2.0) -> list:
    return read(parse_endpoint(url), timeout_s, 1_800_000_000.0)


@pytest.mark.parametrize("host_label", ["Hostname", "hostname"])
def test_dcgm_exporter_in_catalog_units_with_either_hostname_spelling(remote: FakeRemote, host_label: str) -> None:
    remote.body = dcgm_exposition(host_label).encode()
    (sample,) = _read(remote.url)
    assert sample.system.hostname == "dgx-01" and sample.remote.kind == "dcgm-exporter"
    assert sample.system.driver_version == "550.54.15"
    assert [d.uuid for d in sample.devices] == [UUID0, UUID1]
    assert sample.devices[0].name == "NVIDIA A100-SXM4-80GB"
    gpu = sample.gpus[0]
    assert gpu.value("utilization_gpu_percent") == 87
    assert gpu.value("memory_used_bytes") == 61000 * MIB
    assert sample.devices[0].memory_total_bytes == (61000 + 20000) * MIB
    assert gpu.value("memory_used_percent") == pytest.approx(100 * 61000 / 81000)
    assert gpu.value("energy_consumed_j") == pytest.approx(123456.789)  # from mJ
    assert sample.gpus[1].value("energy_consumed_j") == 73.963  # exactly (times 0.001: 73.96300000000001)
    assert gpu.value("clock_sm_mhz") == 1410 and gpu.value("power_draw_w") == 312.5
    assert sample.gpus[1].value("xid_last") == 79
    assert gpu.state("utilization_gpu_percent") is MetricState.OK
    # Not in dcgm-exporter's default counters: not supported, not zero.
    assert gpu.state("fan_speed_percent") is MetricState.NOT_SUPPORTED and math.isnan(gpu.value("fan_speed_percent"))


def test_a_dcgm_exporter_without_free_memory_shows_the_used_memory_alone(remote: FakeRemote) -> None:
    """A custom counters file may serve FB_USED without FB_FREE: the total is not known, and the
    tooltip's line says the used memory alone, not "59.6/nan GiB"."""
    from trayvml.core.lines import gpu_lines

    remote.body = "".join(
        line + "\n" for line in dcgm_exposition("Hostname").splitlines() if "DCGM_FI_DEV_FB_FREE" not in line
    ).encode()
    (sample,) = _read(remote.url)
    assert math.isnan(sample.devices[0].memory_total_bytes)
    line = gpu_lines(sample)[0]
    assert "59.6 GiB" in line and "nan" not in line


def test_nvidia_gpu_exporter_joins_gpu_info_and_is_named_by_the_url_host(remote: FakeRemote) -> None:
    remote.body = NVIDIA_GPU_EXPORTER.encode()
    (sample,) = _read(remote.url)
    assert sample.remote.kind == "nvidia_gpu_exporter"
    assert sample.system.hostname == "127.0.0.1"  # the exporter names no host
    (device,) = sample.devices
    assert (device.name, device.index, device.pci_bus_id) == ("NVIDIA GeForce RTX 2080 SUPER", 0, "00000000:71:00.0")
    assert sample.system.driver_version == "471.11"
    gpu = sample.gpus[0]
    assert gpu.value("utilization_gpu_percent") == pytest.approx(42)
    assert gpu.value("clock_sm_mhz") == pytest.approx(1980)
    assert gpu.value("memory_used_percent") == pytest.approx(100 * 706740224 / 8589934592)
    assert gpu.value("power_draw_w") == pytest.approx(28.07)
    (proc,) = gpu.processes
    assert (proc.pid, proc.name, proc.used_memory_bytes) == (10291, "/root/tools/memhog", 2690646016)
    supported = {m.key for m in GPU_METRICS if gpu.state(m.key) is MetricState.OK}
    assert "energy_consumed_j" not in supported and "fan_speed_percent" not in supported


def test_a_remote_that_returns_html_is_one_note_naming_the_url(remote: FakeRemote) -> None:
    remote.body, remote.content_type = b"<!doctype html><html><body>Grafana</body></html>", "text/html"
    with pytest.raises(RemoteError, match=rf"^{remote.url} returned a web page, not Prometheus metrics"):
        _read(remote.url)


def test_a_remote_that_returns_500_is_one_note_naming_the_url(remote: FakeRemote) -> None:
    remote.status, remote.body = 500, b"oops"
    with pytest.raises(RemoteError, match=rf"^{remote.url} answered HTTP 500 Internal Server Error\.$"):
        _read(remote.url)


def test_garbage_and_metrics_of_no_gpu_exporter_are_notes_naming_the_url(remote: FakeRemote) -> None:
    remote.body = b"this is { not an exposition\n"
    with pytest.raises(RemoteError, match=rf"^{remote.url} returned something that is not Prometheus metrics"):
        _read(remote.url)
    remote.body = b"# TYPE node_load1 gauge\nnode_load1 0.5\n"
    with pytest.raises(RemoteError, match="none from a GPU exporter trayvml knows"):
        _read(remote.url)


def test_a_remote_that_hangs_is_given_up_on_after_the_timeout(remote: FakeRemote) -> None:
    remote.hang = True
    with pytest.raises(RemoteError, match=rf"^{remote.url} did not answer within 0.3 s\.$"):
        _read(remote.url, timeout_s=0.3)


def test_a_remote_that_disappears_mid_run_is_unreachable_since_then_and_backs_off(remote: FakeRemote) -> None:
    remote.body = dcgm_exposition("hostname").encode()
    source = RemoteSource(parse_endpoint(remote.url), interval_s=1.0, timeout_s=1.0)
    (live,) = source.read_once()
    assert len(live.gpus) == 2 and not present(live.remote).fault
    remote.stop()
    (down,) = source.read_once()
    assert down.system is not None and down.remote is not None
    assert down.system.hostname == "dgx-01"  # still named as it was while it answered
    assert down.gpus == () and down.devices == ()  # its last values are not shown as current
    assert down.remote.fault.startswith(f"{remote.url} cannot be reached")
    assert down.problem is not None and down.problem[0] == "Host unreachable"
    since = down.remote.since_s
    waits = [source.wait_s()]
    for _ in range(8):
        (again,) = source.read_once()
        assert present(again.remote).since_s == since  # since when it stopped, not since the latest try
        waits.append(source.wait_s())
    assert waits == sorted(waits) and waits[0] == 2.0 and waits[-1] == MAX_BACKOFF_S


def test_a_remote_thread_never_delays_its_caller(remote: FakeRemote) -> None:
    remote.hang = True
    source = RemoteSource(parse_endpoint(remote.url), interval_s=0.1, timeout_s=5.0)
    source.start()
    try:
        assert source.samples == ()  # nothing yet, and asking did not wait for the hung host
    finally:
        remote.release.set()
        source.close(wait_s=6.0)


def test_endpoints_and_credentials() -> None:
    bare = parse_endpoint("http://gpu-box:8729")
    assert bare.fetch_url == "http://gpu-box:8729/metrics" and not bare.prometheus
    prom = parse_endpoint('prometheus+https://prom.example:9090/#job="gpu"')
    assert prom.prometheus and prom.fetch_url == "https://prom.example:9090" and prom.selector == 'job="gpu"'
    assert prometheus_query(prom).endswith(',job="gpu"}')
    with pytest.raises(TrayvmlError, match="put them in the settings file"):
        parse_endpoint("http://alice:s3cret@gpu-box:8729")
    stored = parse_endpoint("https://alice:s3cret@gpu-box:8729", credentials_allowed=True)
    assert (stored.username, stored.password, stored.url) == ("alice", "s3cret", "https://gpu-box:8729")
    with pytest.raises(TrayvmlError, match="is not an http"):
        parse_endpoint("ftp://gpu-box")


def test_snapshot_with_a_remote_and_no_local_driver_exits_0_with_a_note(
    remote: FakeRemote, capsys: pytest.CaptureFixture[str]
) -> None:
    remote.body = dcgm_exposition("Hostname").encode()
    assert main(["snapshot", "--simulate=idle:nvml=missing", "--remote", remote.url, "--json"]) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert [g["host"] for g in document["gpus"]] == ["dgx-01", "dgx-01"]
    assert document["remotes"][0]["reachable"] and document["remotes"][0]["kind"] == "dcgm-exporter"
    assert "No local GPU values" in document["local_gpus"] and "No local GPU values" in captured.err
    assert main(["snapshot", "--simulate=idle:nvml=missing", "--remote", remote.url]) == 0
    text = capsys.readouterr().out
    assert "dgx-01 [0] NVIDIA A100-SXM4-80GB" in text and "dgx-01 [1]" in text
    assert f"(from dcgm-exporter at {remote.url})" in text and document["remotes"][0]["values_age_s"] == 0


def test_an_exporter_answering_the_same_values_again_says_since_when(remote: FakeRemote) -> None:
    """dcgm-exporter collects every 30 s by default and answers each scrape with what it collected
    last (one whose host engine restarted, forever): the same values read again are not new."""
    from trayvml.commands.remote import text_snapshot
    from trayvml.ui.remote_hosts import tooltip_lines

    endpoint, cache = parse_endpoint(remote.url), SeriesCache()
    remote.body = dcgm_exposition("Hostname").encode()
    t0 = 1_800_000_000.0
    parsed: list[str] = []
    by_layout = cache.by_layout

    def counted(text: str, now_s: float) -> list | None:
        parsed.append(text)
        return by_layout(text, now_s)

    cache.by_layout = counted  # type: ignore[method-assign]
    ages = [read(endpoint, 2.0, t0 + dt, cache)[0].values_ago_s for dt in (0.0, 1.0, 20.0)]
    assert ages == [0.0, 1.0, 20.0]
    assert len(parsed) == 1  # the same bytes again are not parsed again
    (held,) = read(endpoint, 2.0, t0 + 30.0, cache)
    assert held.timestamp_s == t0 + 30.0 and all(gpu.values_ago_s == 30.0 for gpu in held.gpus)
    assert held.gpus[0].value("power_draw_w") == 312.5
    assert f"(from dcgm-exporter at {remote.url}, unchanged for 30 s)" in text_snapshot(None, [held], False)
    assert tooltip_lines([held])[0] == "dgx-01, unchanged for 30 s:"
    remote.body = remote.body.replace(b"} 312.5", b"} 313.25")  # collected again: GPU 0's power moved
    (fresh,) = read(endpoint, 2.0, t0 + 31.0, cache)
    assert fresh.values_ago_s == 0.0 and fresh.gpus[0].value("power_draw_w") == 313.25
    assert len(parsed) == 2 and cache.layout is not None  # by the layout: the same series, a new value
    assert (read(endpoint, 2.0, t0 + 33.0, cache)[0]).values_ago_s == 2.0  # from that read on
    remote.body = remote.body.replace(b"DCGM_FI_DEV_GPU_TEMP", b"DCGM_FI_DEV_MEMORY_TEMP")  # a read in full
    assert (read(endpoint, 2.0, t0 + 34.0, cache)[0]).values_ago_s == 0.0


def test_each_host_of_an_answer_is_dated_alone_and_a_failed_read_forgets_them(remote: FakeRemote) -> None:
    """Two hosts in one answer (a federation read as an exporter): the one whose values stay says
    so while the other's move. A failed read in between: what was served meanwhile is unknown."""
    from trayvml.core.clock import ManualClock

    one = dcgm_exposition("Hostname")
    two = one.replace('"dgx-01"', '"dgx-02"').replace(UUID0, UUID0[:-2] + "ff").replace(UUID1, UUID1[:-2] + "ff")
    clock = ManualClock(1_800_000_000.0)
    source = RemoteSource(parse_endpoint(remote.url), interval_s=1.0, timeout_s=2.0, clock=clock)
    remote.body = (one + two).encode()
    source.read_once()
    clock.advance_s(10.0)
    remote.body = (one + two.replace("} 312.5", "} 300.5")).encode()
    ages = {present(s.system).hostname: s.values_ago_s for s in source.read_once()}
    assert ages == {"dgx-01": 10.0, "dgx-02": 0.0}
    remote.status = 500
    clock.advance_s(5.0)
    assert all(s.remote is not None and s.remote.fault for s in source.read_once())
    remote.status = 200
    clock.advance_s(5.0)
    ages = {present(s.system).hostname: s.values_ago_s for s in source.read_once()}
    assert ages == {"dgx-01": 0.0, "dgx-02": 0.0}  # not 20 s: the read that failed saw nothing


def test_a_host_whose_processes_say_nan_is_dated_when_unchanged() -> None:
    """A process's unknowns are NaN (its start, its SM share): parsed anew they are not equal to
    themselves, yet the same list."""
    from trayvml.core.sample import ProcessSample
    from trayvml.remote.dialects import to_samples
    from trayvml.remote.fetch import UnchangedValues

    endpoint = parse_endpoint("http://dgx-01:9400/metrics")
    points = parse_exposition(endpoint, dcgm_exposition("Hostname").encode(), "text/plain")

    def read(now_s: float) -> list:
        (sample,) = to_samples(points, "fallback", endpoint.url, now_s)
        running = (ProcessSample(0, 4242, "compute", float("nan")),)  # made anew each read
        return [replace(sample, gpus=(replace(sample.gpus[0], processes=running), *sample.gpus[1:]))]

    unchanged = UnchangedValues()
    unchanged.dated(read(100.0), 100.0)
    assert unchanged.dated(read(112.0), 112.0)[0].values_ago_s == 12.0


def test_a_snapshot_says_how_old_a_prometheus_servers_values_are() -> None:
    from trayvml.commands.remote import json_snapshot, text_snapshot
    from trayvml.core.sample import RemoteOrigin
    from trayvml.remote.dialects import to_samples

    endpoint = parse_endpoint("prometheus+http://prom:9090")
    points = parse_exposition(endpoint, dcgm_exposition("Hostname").encode(), "text/plain")
    (read_now,) = to_samples(points, "fallback", endpoint.url, 0.0)
    scraped = replace(read_now, gpus=tuple(replace(g, values_ago_s=9.4) for g in read_now.gpus))
    assert "(from dcgm-exporter via prometheus+http://prom:9090, as of 9 s ago)" in text_snapshot(
        None, [scraped], False
    )
    assert json_snapshot(None, "", [scraped])["remotes"][0]["values_age_s"] == 9.4
    fresh = replace(read_now, gpus=tuple(replace(g, values_ago_s=1.4) for g in read_now.gpus))
    # Under 2 s old: no age said, but still read through the server, not from the exporter itself.
    assert "(from dcgm-exporter via prometheus+http://prom:9090)\n" in text_snapshot(None, [fresh], False) + "\n"
    stale = replace(
        scraped, gpus=(), devices=(), remote=RemoteOrigin("prometheus+http://prom:9090", "dcgm-exporter", "gone", 0.0)
    )
    assert json_snapshot(None, "", [stale])["remotes"][0]["values_age_s"] is None  # no values: no age
    unknown = replace(read_now, gpus=tuple(replace(g, values_ago_s=math.nan) for g in read_now.gpus))
    assert json_snapshot(None, "", [unknown])["remotes"][0]["values_age_s"] is None  # the server could not say
    assert ", as of" not in text_snapshot(None, [unknown], False)
    # One GPU's series stopped (fetch._no_new_values): the host's age is its current GPU's, the
    # stopped GPU says its own, in the text and per GPU in JSON.
    from trayvml.remote.fetch import _no_new_values

    one_stopped = replace(scraped, gpus=(scraped.gpus[0], _no_new_values(scraped.gpus[1], 95.0)))
    document = json_snapshot(None, "", [one_stopped])
    assert document["remotes"][0]["values_age_s"] == 9.4
    assert [g["values_age_s"] for g in document["gpus"]] == [9.4, 95.0]
    assert document["gpus"][1]["metrics"]["temperature_gpu_c"] is None
    assert "dgx-01 [1] NVIDIA A100-SXM4-80GB | no new values for 95 s\n" in text_snapshot(None, [one_stopped], False)


def test_snapshot_and_log_show_an_unreachable_remote_and_go_on(
    remote: FakeRemote, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    remote.body = dcgm_exposition("hostname").encode()
    gone = closed_port_url()
    assert main(["snapshot", "--simulate=idle", "--remote", remote.url, "--remote", gone]) == 0
    text = capsys.readouterr().out
    assert "127.0.0.1: unreachable (since " in text and f"{gone} cannot be reached" in text
    assert "dgx-01 [0]" in text
    csv = tmp_path / "log.csv"
    assert (
        main(["log", "--simulate=idle", "--csv", str(csv), "--count", "2", "--remote", remote.url, "--remote", gone])
        == 0
    )
    rows = csv.read_text().splitlines()
    assert rows[0].startswith("timestamp, hostname, index, name")
    hosts = [row.split(", ")[1] for row in rows[1:]]
    # The remote's rows: each sample it read once (two ticks may find the same one), never repeated.
    remote_rows = [tuple(row.split(", ")[:3]) for row in rows[1:] if row.split(", ")[1] == "dgx-01"]
    assert len(remote_rows) in (2, 4) and len(set(remote_rows)) == len(remote_rows)
    assert len(hosts) - len(remote_rows) == 2 * 4  # 4 simulated local GPUs per tick
    assert capsys.readouterr().err.count(f"{gone} cannot be reached") == 1  # said once, not every tick


def test_remote_credentials_come_from_the_settings_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text('remote_hosts = ["http://alice:s3cret@127.0.0.1:9/"]\n')
    from trayvml.commands.remote import endpoints

    (endpoint,) = endpoints(["http://127.0.0.1:9/"], str(config))
    assert isinstance(endpoint, Endpoint) and (endpoint.username, endpoint.password) == ("alice", "s3cret")
    assert main(["snapshot", "--simulate=idle", "--remote", "http://bob:pw@127.0.0.1:9/"]) == 2
    assert "put them in the settings file" in capsys.readouterr().err


def test_remote_with_a_broken_settings_file_leaves_it_where_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``snapshot --remote`` reads the settings for credentials and never saves them: a broken file
    is said once and left in place (it was moved aside right after the note said it was not)."""
    from trayvml.commands.remote import endpoints

    config = tmp_path / "config.toml"
    config.write_text("remote_hosts = [\n")
    endpoints(["http://127.0.0.1:9/"], str(config))
    assert config.exists() and list(tmp_path.glob("config.toml.corrupt-*")) == []


def test_series_are_parsed_once_and_only_new_values_read_after() -> None:
    endpoint = parse_endpoint("http://x:1")
    cache = SeriesCache()
    text = (
        '# TYPE trayvml_gpu_energy_joules_total counter\ntrayvml_gpu_energy_joules_total{uuid="u",name="a b}"} VALUE\n'
    )
    text += "# TYPE node_load1 gauge\nnode_load1 0.5\n"  # of no GPU exporter: skipped
    first = parse_exposition(endpoint, text.replace("VALUE", "3").encode(), "text/plain", cache)
    second = parse_exposition(endpoint, text.replace("VALUE", "4.5 1700000000000").encode(), "text/plain", cache)
    expected = ("trayvml_gpu_energy_joules_total", {"uuid": "u", "name": "a b}"})
    assert [(p.name, dict(p.labels), p.value) for p in first] == [(*expected, 3.0)]
    assert [(p.name, dict(p.labels), p.value) for p in second] == [(*expected, 4.5)]
    with pytest.raises(RemoteError, match="is not Prometheus metrics"):
        parse_exposition(endpoint, b'trayvml_up{hostname="h"}\n', "text/plain", cache)


UP_0 = b'# TYPE trayvml_up gauge\ntrayvml_up{hostname="gpu-box"} 0\n'
DOWN = b'# TYPE trayvml_down_info gauge\ntrayvml_down_info{hostname="gpu-box",reason="driver_not_responding"} 1\n'


# This serve's (the reason in a series of its own, before or after trayvml_up: a Prometheus
# server's answer has no order) and an older serve's (the reason a label of trayvml_up).
@pytest.mark.parametrize(
    "up",
    [
        UP_0 + DOWN,
        DOWN + UP_0,
        b'# TYPE trayvml_up gauge\ntrayvml_up{hostname="gpu-box",reason="driver_not_responding"} 0\n',
    ],
    ids=["down_info after", "down_info before", "older serve"],
)
def test_a_trayvml_serve_whose_driver_is_stuck_is_a_fault_not_old_values(remote: FakeRemote, up: bytes) -> None:
    remote.body = (
        up + b'# TYPE trayvml_sample_timestamp_seconds gauge\ntrayvml_sample_timestamp_seconds{hostname="gpu-box"} 1\n'
    )
    (sample,) = _read(remote.url)
    assert sample.system.hostname == "gpu-box" and sample.gpus == ()
    assert "driver is not usable (driver_not_responding)" in sample.remote.fault
    assert sample.remote.fault.startswith(remote.url)


def test_remote_is_refused_where_it_would_be_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--remote", "http://gpu-box:8729", "pick", "--simulate=idle"]) == 2
    assert "--remote is for snapshot, log and the tray app, not pick." in capsys.readouterr().err


def _served_simulation(spec: str = "training:gpus=h100") -> bytes:
    """What ``trayvml serve --simulate`` answers: a scrape of a simulated sample."""
    from prometheus_client import CollectorRegistry, generate_latest

    from trayvml.prometheus.exposition import SampleCollector

    source, clock, _ = simulated_source(spec, host=True)
    sample = run_ticks(source, clock, 2)
    assert sample.system is not None
    sample = replace(sample, system=replace(sample.system, hostname="sim-box"))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SampleCollector(lambda: sample))
    return generate_latest(registry)


def test_a_remote_serving_simulated_gpus_is_shown_as_simulated(
    remote: FakeRemote, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    remote.body = _served_simulation()
    assert main(["snapshot", "--simulate=idle:nvml=missing", "--remote", remote.url, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["remotes"][0]["simulated"] == "simulated GPUs (training)"
    assert main(["snapshot", "--simulate=idle:nvml=missing", "--remote", remote.url]) == 0
    text = capsys.readouterr().out
    assert "SIMULATED: simulated GPUs (training), not real hardware" in text and "sim-box [0]" in text
    csv = tmp_path / "log.csv"
    assert main(["log", "--simulate=idle:nvml=missing", "--csv", str(csv), "--count", "2", "--remote", remote.url]) == 0
    err = capsys.readouterr().err
    assert err.count("sim-box serves simulated GPUs (training), not real hardware") == 1  # said once


def test_a_remote_serving_real_gpus_is_not_called_simulated(remote: FakeRemote, capsys: pytest.CaptureFixture) -> None:
    remote.body = dcgm_exposition("hostname").encode()
    assert main(["snapshot", "--simulate=idle:nvml=missing", "--remote", remote.url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["remotes"][0]["simulated"] is None


def _scrapes_seen(interval_s: float, last_s: float, now_s: float, first_s: float = -3600.0) -> Scrapes:
    """What a Prometheus answer at ``now_s`` says of a series scraped every ``interval_s`` from
    ``first_s`` up to ``last_s``."""
    return _answer(now_s, [first_s + k * interval_s for k in range(int((last_s - first_s) / interval_s) + 1)])


def _answer(now_s: float, sample_times: list[float]) -> Scrapes:
    """What a Prometheus answer at ``now_s`` says of one series with samples at ``sample_times``:
    the newest within the lookback (5 min), and the samples of the window, where there are any."""
    seen = Scrapes("gpu-box")
    past = [t for t in sample_times if t <= now_s]
    if past and now_s - past[-1] < 300.0:
        seen.add("at", now_s, past[-1])
    window = sum(1 for t in past if now_s - SCRAPES_WINDOW_S < t)
    if window:  # count_over_time gives no series for a window without samples
        seen.add("count", now_s, window)
    return seen


def _current_at(reads_s: list[float], series: dict[str, list[float]]) -> dict[float, bool | None]:
    """Whether the host is current at each read, one read each of ``reads_s`` with the series'
    sample times as they stand then (None: the server no longer answers for it)."""
    times = ScrapeTimes()
    current: dict[float, bool | None] = {}
    for now_s in reads_s:
        ages = host_ages({key: _answer(now_s, samples) for key, samples in series.items()}, times)
        current[now_s] = any(age.current for age in ages["gpu-box"]) if "gpu-box" in ages else None
    return current


@pytest.mark.parametrize("interval_s", [1.0, 5.0, 15.0, 30.0, 60.0])
@pytest.mark.parametrize("gap_seen", [False, True], ids=["first read", "gap seen"])
def test_a_host_behind_prometheus_is_stale_two_missed_scrapes_after_its_last_and_never_while_scraped(
    interval_s: float, gap_seen: bool
) -> None:
    gap_s = interval_s if gap_seen else math.nan

    def stale(scrapes: Scrapes) -> bool:
        return scrapes.age_s > stale_after_s(scrapes.interval_s(gap_s))

    # Scraped all along: read at any point between two scrapes, each a second late, it is current.
    for now_s in [k * interval_s / 10 for k in range(10)]:
        assert not stale(_scrapes_seen(interval_s, last_s=now_s - 1.0, now_s=now_s)), now_s
    # Its scrapes stopped at 0: current while one or two could be late, stale from three
    # intervals (or ten seconds past the one due) on, until the server's lookback drops it; on a
    # first read, whose interval is counted in the samples the server holds, within one more.
    limit_s = max(3 * interval_s, interval_s + 10.0)
    for now_s in (interval_s, limit_s - 0.5):
        assert not stale(_scrapes_seen(interval_s, last_s=0.0, now_s=now_s)), now_s
    first = limit_s + (0.0 if gap_seen else interval_s)
    for now_s in (first + 0.5, first + 30.0, 299.5):
        assert stale(_scrapes_seen(interval_s, last_s=0.0, now_s=now_s)), now_s


def test_a_host_behind_prometheus_scraped_for_only_a_while_is_current_and_goes_stale_once_its_gap_is_seen() -> None:
    young = _scrapes_seen(1.0, last_s=0.0, now_s=0.5, first_s=-10.0)  # a server started ten seconds ago
    assert young.age_s <= stale_after_s(young.interval_s(math.nan))
    gone = _scrapes_seen(1.0, last_s=0.0, now_s=12.0, first_s=-10.0)
    assert gone.age_s <= stale_after_s(gone.interval_s(math.nan))  # eleven samples in ten minutes: 60 s apart?
    assert gone.age_s > stale_after_s(gone.interval_s(1.0))  # the reads before saw them a second apart


@pytest.mark.parametrize(("interval_s", "offset_s"), [(15.0, 1.0), (30.0, 2.0), (30.0, 5.0), (60.0, 10.0)])
def test_a_host_scraped_by_two_jobs_at_times_of_their_own_is_current_throughout_and_stale_once_both_stop(
    interval_s: float, offset_s: float
) -> None:
    """Two jobs scraping one exporter (or two exporters on one host): each series is judged by
    its own scrapes. Judged as one, the newest of the two alternated, a gap of ``offset_s`` was
    taken for the interval, and the host went stale between every two scrapes."""
    first = [k * interval_s for k in range(-40, round(1200 / interval_s) + 1)]  # until 1200 s
    current = _current_at([float(t) for t in range(1800)], {"a": first, "b": [t + offset_s for t in first]})
    assert all(current[t] for t in current if t <= 1200 + offset_s)
    limit_s = max(3 * interval_s, interval_s + 10.0) + offset_s + 1.0
    after = [current[t] for t in current if t > 1200 + limit_s and current[t] is not None]
    assert after and not any(after)


def test_a_host_back_for_one_scrape_after_minutes_away_is_stale_again_about_as_soon_as_before() -> None:
    """The gap before a scrape that comes after an outage is the outage, not the interval: taken
    alone it would keep the host current for three outages, past Prometheus's lookback."""
    current = _current_at([float(t) for t in range(500)], {"a": [k * 15.0 for k in range(-40, 1)] + [200.0]})
    assert current[60.0] is False and current[200.0] is True  # away from 0 s, back at 200 s for one scrape
    assert current[300.0] is False  # gone again: stale well before its series leaves the lookback (500 s)


def test_two_servers_behind_one_address_answering_in_turn_keep_a_scraped_host_current() -> None:
    """A pair of Prometheus servers behind one address (a Service over both replicas) scrape at
    offsets of their own and answer in turn: the newest sample moves back and forth by the
    offset. Taken for the interval, that offset made the host stale between scrapes."""
    first = [k * 15.0 for k in range(-40, 80)]
    second = [t + 1.0 for t in first]
    times = ScrapeTimes()
    stale = 0
    for n, now_s in enumerate(range(0, 1000, 2)):
        ages = host_ages({"gpu": _answer(float(now_s), second if n % 2 else first)}, times)
        stale += not ages["gpu-box"][0].current
    assert stale == 0


def test_thousands_of_series_each_learn_their_interval() -> None:
    """However many series a server answers, each keeps what its reads saw (a table that was
    cleared past 4,096 series learned no gap, and young series then took minutes to go stale)."""
    keys = [f"dcgm-exporter [('UUID', 'GPU-{k}')]" for k in range(6000)]
    young = [float(t) for t in range(-10, 4)]  # scraped every second for ten seconds, until 3 s
    times = ScrapeTimes()
    for now_s in (1.5, 2.5, 3.5):
        ages = host_ages({key: _answer(now_s, young) for key in keys}, times)
        assert all(age.current for age in ages["gpu-box"])
    ages = host_ages({key: _answer(20.0, young) for key in keys}, times)  # 17 s without a scrape
    assert not any(age.current for age in ages["gpu-box"])


class _FakePrometheus:
    """A Prometheus server's /api/v1/query answers for ``dcgm_exposition``'s two GPUs, scraped at
    ``scrapes_s`` (each scrape's SM clock is its number, so each brings new values), on a clock
    the test sets (``now_s``). ``extra``: series of another exporter on the same host."""

    def __init__(self, scrapes_s: list[float], extra: str = "") -> None:
        from prometheus_client.parser import text_string_to_metric_families

        self.scrapes_s = scrapes_s
        self.now_s = 0.0
        self.whole = 0  # answers with the exporters' series, not only their scrape times
        self.series = [
            (sample.name, dict(sample.labels), sample.value)
            for family in text_string_to_metric_families(dcgm_exposition("Hostname") + extra)
            for sample in family.samples
        ]

    def get(self, endpoint: Endpoint, url: str, timeout_s: float, kept: object = None) -> tuple[bytes, str]:
        past = [t for t in self.scrapes_s if t <= self.now_s]
        result: list[dict[str, object]] = []
        if "__name__%3D~" in url:
            self.whole += 1
            result += [
                {
                    "metric": {**labels, "__name__": name},
                    "value": [self.now_s, str(len(past) if "SM_CLOCK" in name else v)],
                }
                for name, labels, v in self.series
            ]
        if past and self.now_s - past[-1] < 300:  # Prometheus's lookback
            for name, labels, _v in self.series:
                if name == "DCGM_FI_DEV_GPU_TEMP":
                    for what, value in (("at", past[-1]), ("count", sum(t > self.now_s - 600 for t in past))):
                        marked = {**labels, "trayvml_scraped": f"{what} dcgm-exporter"}
                        result.append({"metric": marked, "value": [self.now_s, str(value)]})
        answer = {"status": "success", "data": {"resultType": "vector", "result": result}}
        return json.dumps(answer).encode(), "application/json"


def _reads(server: _FakePrometheus, times_s: range, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """Each read at ``times_s`` with the remote's cache, beside a whole read at the same moment
    with a cache of its own (the scrapes' gaps learnt alike): (whole answers asked so far by the
    first, whether the two reads gave the same, NaN as NaN)."""
    from trayvml.remote import fetch

    monkeypatch.setattr(fetch, "get", server.get)
    endpoint = parse_endpoint("prometheus+http://prom:9090")
    cache, whole_cache = SeriesCache(), SeriesCache()
    out: list[tuple[int, bool]] = []
    for now_s in times_s:
        server.now_s = float(now_s)
        held = read(endpoint, 5.0, now_s, cache)
        whole = server.whole
        whole_cache.held = None  # every series asked for
        fresh = read(endpoint, 5.0, now_s, whole_cache)
        server.whole = whole
        out.append((whole, repr(held) == repr(fresh)))
    return out


def test_a_prometheus_host_is_read_whole_once_a_scrape_and_each_interval_once_its_scrapes_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = _FakePrometheus([940.0 + 15 * k for k in range(8)])  # every 15 s, the last at 1045
    reads = _reads(server, range(1000, 1101), monkeypatch)
    assert all(same for _whole, same in reads)  # held or not, what a whole read says at that moment
    whole = [n for n, _same in reads]
    assert whole[45] - whole[0] == 3  # at the scrapes of 1015, 1030 and 1045, not each second
    assert whole[100] - whole[60] >= 2  # overdue: asked whole again an interval on, and again


def test_a_prometheus_host_with_two_exporters_is_read_whole_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # nvitop-exporter on the same host: its values change at its own scrapes, which dcgm's do not tell.
    server = _FakePrometheus([940.0 + 15 * k for k in range(20)], extra='nvitop_info{hostname="dgx-01"} 1\n')
    reads = _reads(server, range(1000, 1020), monkeypatch)
    assert [n for n, _same in reads] == list(range(1, 21)) and all(same for _n, same in reads)


def test_an_answer_that_makes_no_sample_is_no_error_with_a_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    server = _FakePrometheus([900.0])  # scraped ten minutes ago: counted, no longer answered for
    server.series = [("DCGM_FI_DEV_XID_ERRORS", {"Hostname": "dgx-01"}, 0.0)]  # no GPU to put it on
    assert _reads(server, range(1000, 1003), monkeypatch) == [(1, True), (2, True), (3, True)]


def test_a_gpu_none_of_whose_own_series_is_current_has_no_values_while_its_host_is_current() -> None:
    """dcgm-exporter's ``scraped`` series are a GPU's own: behind a server that federates, a GPU
    its exporter stopped serving keeps its last samples for the lookback while the host's other
    GPU goes on (tests/test_real_exporters.py shows it with real servers). That GPU's values are
    not shown as current; a host series (no GPU of its own) changes no GPU."""
    from tests.helpers import UUID0, UUID1, dcgm_exposition
    from trayvml.core.lines import gpu_lines
    from trayvml.remote.dialects import to_samples
    from trayvml.remote.fetch import SeriesAge, _dated

    endpoint = parse_endpoint("prometheus+http://prom:9090")
    points = parse_exposition(endpoint, dcgm_exposition("Hostname").encode(), "text/plain")
    (sample,) = to_samples(points, "dgx-01", endpoint.url, 1_800_000_000.0)
    ages = {"dgx-01": [SeriesAge(3.0, True, UUID0), SeriesAge(40.0, False, UUID1), SeriesAge(41.0, False, UUID1)]}
    going, stopped = _dated(endpoint, sample, ages, sample.timestamp_s).gpus
    assert going.values == sample.gpus[0].values and going.values_ago_s == 3.0
    assert all(math.isnan(v) for v in stopped.values) and set(stopped.states) == {MetricState.NO_DATA}
    assert stopped.values_ago_s == 40.0  # the youngest of its own series
    dated = _dated(endpoint, sample, ages, sample.timestamp_s)
    assert dated.values_ago_s == 3.0  # the host's age: its GPU with values
    assert gpu_lines(dated)[1] == "1 A100 — no new values for 40 s"
    assert gpu_lines(dated, compact=True)[1] == "1 A100 — no new values"
    # One of its series current, the GPU is; a host's series (no uuid) current, every GPU with none of its own is.
    ages["dgx-01"].append(SeriesAge(2.0, True, UUID1))
    assert [g.values_ago_s for g in _dated(endpoint, sample, ages, sample.timestamp_s).gpus] == [2.0, 2.0]
    host_only = {"dgx-01": [SeriesAge(5.0, True, "")]}
    assert [g.values for g in _dated(endpoint, sample, host_only, sample.timestamp_s).gpus] == [
        g.values for g in sample.gpus
    ]
    # Two exporters on the host: dcgm-exporter's series of GPU 1 stopped, trayvml serve's host series
    # goes on and serves that GPU too; it keeps its values.
    dcgm = [SeriesAge(3.0, True, UUID0, "dcgm-exporter"), SeriesAge(40.0, False, UUID1, "dcgm-exporter")]
    both = {"dgx-01": [*dcgm, SeriesAge(1.0, True, "", "trayvml serve")]}
    assert [g.values_ago_s for g in _dated(endpoint, sample, both, sample.timestamp_s).gpus] == [1.0, 1.0]
    assert math.isnan(_dated(endpoint, sample, {"dgx-01": dcgm}, sample.timestamp_s).gpus[1].values[0])


def test_a_remote_gpu_without_values_that_is_not_stopped_is_not_said_to_be_stopped() -> None:
    """An asleep GPU behind a server (trayvml serve exports no values of it) has no value either,
    with its host's age: its line does not say it has had no new values."""
    from tests.helpers import dcgm_exposition
    from trayvml.core.lines import gpu_lines
    from trayvml.remote.dialects import to_samples

    endpoint = parse_endpoint("prometheus+http://prom:9090")
    points = parse_exposition(endpoint, dcgm_exposition("Hostname").encode(), "text/plain")
    (sample,) = to_samples(points, "dgx-01", endpoint.url, 1_800_000_000.0)
    gpu = sample.gpus[1]
    asleep = replace(gpu, values=(math.nan,) * len(gpu.values), states=(MetricState.NOT_SUPPORTED,) * len(gpu.states))
    assert gpu_lines(replace(sample, gpus=(sample.gpus[0], replace(asleep, values_ago_s=9.0))))[1] == "1 A100"


def test_a_scrape_time_whose_gpu_label_is_not_text_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hostile server's scrape time with a UUID label that is a list: the read goes on, that
    series left out (its GPUs' values read, their age not known), not 'reading it failed in
    trayvml itself'."""
    from trayvml.remote import fetch

    server = _FakePrometheus([990.0, 995.0])
    server.now_s = 996.0

    def hostile(endpoint: Endpoint, url: str, timeout_s: float, kept: object = None) -> tuple[bytes, str]:
        body, kind = server.get(endpoint, url, timeout_s, kept)
        answer = json.loads(body)
        for series in answer["data"]["result"]:
            if "trayvml_scraped" in series["metric"]:
                series["metric"]["UUID"] = ["GPU-a", "GPU-b"]
        return json.dumps(answer).encode(), kind

    monkeypatch.setattr(fetch, "get", hostile)
    (host,) = read(parse_endpoint("prometheus+http://prom:9090"), 5.0, 996.0, SeriesCache())
    assert [g.state("temperature_gpu_c") for g in host.gpus] == [MetricState.OK, MetricState.OK]
    assert math.isnan(host.values_ago_s)  # the scrape time it would have told was in that series


def _prometheus_answer_of(
    exposition: str, now_s: float, scraped_at: dict[str, float], process_at: dict[str, float] | None = None
) -> bytes:
    """A /api/v1/query answer holding ``exposition``'s series, the scrape times of trayvml_up's
    series (``scraped_at``: by reason label, each scraped every 5 s until then) and of its
    processes' (``process_at``: by pid; none: the host's last scrape)."""
    from prometheus_client.parser import text_string_to_metric_families

    newest_s = max(scraped_at.values())
    result: list[dict[str, object]] = []
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            result.append({"metric": {**sample.labels, "__name__": sample.name}, "value": [now_s, str(sample.value)]})
            if "pid" in sample.labels:
                at_s = (process_at or {}).get(sample.labels["pid"], newest_s)
                marked = {**sample.labels, "trayvml_scraped": f"proc {sample.name}"}
                result.append({"metric": marked, "value": [now_s, str(at_s)]})
    for reason, at_s in scraped_at.items():
        for what, value in (("at", at_s), ("count", 60.0)):
            labels = {"hostname": "vm", "reason": reason, "trayvml_scraped": f"{what} trayvml serve"}
            result.append({"metric": labels, "value": [now_s, str(value)]})
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


def test_a_reason_the_exporter_no_longer_gives_is_not_read_from_a_federating_servers_leftovers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """trayvml serve said it was starting (trayvml_up 0, reason "starting") before its first
    sample; a server that federates keeps that series for its lookback beside the current one
    (trayvml_up 1). The host is current, not "has not read its GPUs yet", for those 5 minutes."""
    from trayvml.remote import fetch

    text = (Path(__file__).parent / "recordings" / "h200-580-busy.trayvml-serve.txt").read_text()
    leftover = 'trayvml_up{hostname="vm",reason="starting"} 0.0\n'
    now_s = 1_800_000_100.0

    def answer(endpoint: Endpoint, url: str, timeout_s: float, kept: object = None) -> tuple[bytes, str]:
        body = _prometheus_answer_of(text + leftover, now_s, {"": now_s - 2.0, "starting": now_s - 80.0})
        return body, "application/json"

    monkeypatch.setattr(fetch, "get", answer)
    (host,) = read(parse_endpoint("prometheus+http://prom:9090"), 5.0, now_s, SeriesCache())
    assert present(host.remote).fault == "" and host.gpus and host.values_ago_s == 2.0


def test_a_starting_reason_the_exporter_no_longer_gives_is_not_read_from_a_federating_servers_leftovers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As above with this serve's series: the reason in trayvml_down_info, kept by a federating
    server for its lookback while trayvml_up is 1 again (read, the host was down for 5 minutes)."""
    from trayvml.remote import fetch

    text = (Path(__file__).parent / "recordings" / "h200-580-busy.trayvml-serve.txt").read_text()
    old_up = 'trayvml_up{hostname="vm",reason=""} 1.0'
    assert old_up in text
    text = text.replace(old_up, 'trayvml_up{hostname="vm"} 1.0')
    leftover = 'trayvml_down_info{hostname="vm",reason="starting"} 1.0\n'
    now_s = 1_800_000_100.0

    def answer(endpoint: Endpoint, url: str, timeout_s: float, kept: object = None) -> tuple[bytes, str]:
        return _prometheus_answer_of(text + leftover, now_s, {"": now_s - 2.0}), "application/json"

    monkeypatch.setattr(fetch, "get", answer)
    (host,) = read(parse_endpoint("prometheus+http://prom:9090"), 5.0, now_s, SeriesCache())
    assert present(host.remote).fault == "" and host.gpus and host.values_ago_s == 2.0


def test_a_process_that_ended_is_not_read_from_a_federating_servers_leftovers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that federates keeps an ended process's series for its lookback, with the time of
    the last scrape that had it: older than its host's last scrape, it is no longer listed; one
    scraped with its host is."""
    from trayvml.remote import fetch

    text = (Path(__file__).parent / "recordings" / "h200-580-busy.trayvml-serve.txt").read_text()
    now_s = 1_800_000_100.0
    process_at: dict[str, float] = {}

    def answer(endpoint: Endpoint, url: str, timeout_s: float, kept: object = None) -> tuple[bytes, str]:
        return _prometheus_answer_of(text, now_s, {"": now_s - 2.0}, process_at), "application/json"

    monkeypatch.setattr(fetch, "get", answer)
    endpoint = parse_endpoint("prometheus+http://prom:9090")
    (running,) = read(endpoint, 5.0, now_s, SeriesCache())
    assert [p.pid for p in running.gpus[0].processes] == [578]
    process_at["578"] = now_s - 7.0  # 5 s before its host: within its scrapes' interval (60 in 10 min), kept
    (held,) = read(endpoint, 5.0, now_s, SeriesCache())
    assert [p.pid for p in held.gpus[0].processes] == [578]
    process_at["578"] = now_s - 40.0  # last scraped over three intervals before its host: ended
    (ended,) = read(endpoint, 5.0, now_s, SeriesCache())
    assert ended.gpus[0].processes == () and present(ended.remote).fault == ""


def test_leftovers_are_judged_by_their_own_scrape_target() -> None:
    """Two machines named alike (cloned VMs), each its own scrape target: one's process and its
    "up" series, scraped at its own offset, are not leftovers of the other's younger scrape; a
    process scraped two intervals before its own target's last scrape is."""
    from trayvml.remote.dialects import Point
    from trayvml.remote.fetch import SeriesAge, _series_key, _without_leftovers

    endpoint = parse_endpoint("prometheus+http://prom:9090")
    up_a = {"hostname": "ubuntu", "reason": "", "instance": "a:9400", "job": "gpu"}
    up_b = {**up_a, "instance": "b:9400"}
    process_a = {"hostname": "ubuntu", "pid": "7", "uuid": "GPU-a", "instance": "a:9400", "job": "gpu"}
    process_b = {**process_a, "pid": "8", "uuid": "GPU-b", "instance": "b:9400"}
    name = "trayvml_gpu_process_memory_used_bytes"
    points = [Point("trayvml_up", up_a, 1.0), Point("trayvml_up", up_b, 1.0)]
    points += [Point(name, process_a, 1e9), Point(name, process_b, 2e9)]
    kind = "trayvml serve"
    # Scraped every 5 s, a 30 s ago (a slow target, or one of a pair of servers), b 1 s ago.
    ages = {"ubuntu": [SeriesAge(30.0, True, "", kind, _series_key(kind, up_a), "a:9400", 5.0)]}
    ages["ubuntu"].append(SeriesAge(1.0, True, "", kind, _series_key(kind, up_b), "b:9400", 5.0))
    process_ages = {_series_key(name, process_a): 30.0, _series_key(name, process_b): 1.0}
    assert _without_leftovers(endpoint, points, ages, process_ages) == points
    process_ages[_series_key(name, process_a)] = 30.0 + 10.0  # two of its target's 5 s scrapes before
    assert _without_leftovers(endpoint, points, ages, process_ages) == points[:2] + points[3:]


def test_a_process_s_job_read_through_prometheus_is_the_exporter_s_not_the_scrape_job_s() -> None:
    """A Prometheus server that scrapes trayvml serve with honor_labels off (its default) renames
    the exporter's ``job`` label to ``exported_job``: that is the process's job."""
    from trayvml.remote.dialects import Point, to_samples

    text = (Path(__file__).parent / "recordings" / "h200-580-busy.trayvml-serve.txt").read_text()
    endpoint = parse_endpoint("http://vm:9977")
    points = parse_exposition(endpoint, text.encode(), "text/plain")
    renamed = [
        Point(p.name, {**p.labels, "exported_job": p.labels["job"], "job": "gpu-hosts"}, p.value)
        if p.name == "trayvml_process_job_info"
        else Point(p.name, {**p.labels, "job": "gpu-hosts"}, p.value)
        for p in points
    ]
    for served in (points, renamed):
        (sample,) = to_samples(served, "vm", endpoint.url, 0.0)
        (process,) = sample.gpus[0].processes
        assert process.attribution.job == "bash 448"


def test_a_gpus_series_under_labels_no_longer_scraped_are_not_read_where_its_new_ones_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """dcgm-exporter labels a GPU's series with the pod using it: when the pod changes, a server
    that federates keeps the old label set for its lookback beside the new one. The GPU's values
    are the current label set's, whichever the server answers first; a GPU with only old series
    keeps them, to say it has no new values."""
    from prometheus_client.parser import text_string_to_metric_families

    from tests.helpers import UUID0
    from trayvml.remote import fetch

    now_s = 1_800_000_100.0
    current = dcgm_exposition("Hostname")
    old = "".join(  # GPU 0's series under its previous pod, at 99 °C, answered after the current ones
        line.replace('Hostname="dgx-01"', 'Hostname="dgx-01",pod="old"').replace("} 61", "} 99") + "\n"
        for line in current.splitlines()
        if UUID0 in line
    )

    def answer(endpoint: Endpoint, url: str, timeout_s: float, kept: object = None) -> tuple[bytes, str]:
        result: list[dict[str, object]] = []
        for text, at_s in ((current, now_s - 2.0), (old, now_s - 120.0)):
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    labels = {**sample.labels, "__name__": sample.name}
                    result.append({"metric": labels, "value": [now_s, str(sample.value)]})
                    if sample.name == "DCGM_FI_DEV_GPU_TEMP":
                        for what, value in (("at", at_s), ("count", 60.0)):
                            marked = {**sample.labels, "trayvml_scraped": f"{what} dcgm-exporter"}
                            result.append({"metric": marked, "value": [now_s, str(value)]})
        return json.dumps({"status": "success", "data": {"result": result}}).encode(), "application/json"

    monkeypatch.setattr(fetch, "get", answer)
    endpoint = parse_endpoint("prometheus+http://prom:9090")
    (host,) = read(endpoint, 5.0, now_s, SeriesCache())
    assert [g.value("temperature_gpu_c") for g in host.gpus] == [61.0, 33.0]
    current = "\n".join(line for line in current.splitlines() if UUID0 not in line) + "\n"  # only the old ones left
    (host,) = read(endpoint, 5.0, now_s, SeriesCache())
    assert host.gpus[0].stopped_s == 120 and host.gpus[1].value("temperature_gpu_c") == 33.0


def test_a_process_series_whose_host_label_is_not_text_names_no_host_and_the_rest_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hostile server's process series with a host label that is a list, beside its scrape
    time: that series is left out (without the label it would be another host's), and the host's
    GPUs are read as they are; not "reading it failed in trayvml itself", nor the whole answer
    refused for one series."""
    from trayvml.remote import fetch

    text = (Path(__file__).parent / "recordings" / "h200-580-busy.trayvml-serve.txt").read_text()
    now_s = 1_800_000_100.0
    plain = _prometheus_answer_of(text, now_s, {"": now_s - 2.0}, {"578": now_s - 50.0})

    def hostile(endpoint: Endpoint, url: str, timeout_s: float, kept: object = None) -> tuple[bytes, str]:
        answer = json.loads(plain)
        for series in answer["data"]["result"]:
            if "pid" in series["metric"]:
                series["metric"]["hostname"] = ["vm"]
        return json.dumps(answer).encode(), "application/json"

    monkeypatch.setattr(fetch, "get", hostile)
    samples = read(parse_endpoint("prometheus+http://prom:9090"), 5.0, now_s, SeriesCache())
    monkeypatch.setattr(fetch, "get", lambda *_args, **_kwargs: (plain, "application/json"))
    expected = read(parse_endpoint("prometheus+http://prom:9090"), 5.0, now_s, SeriesCache())
    assert [s.system.hostname for s in samples if s.system] == [s.system.hostname for s in expected if s.system]
    assert [g.values for s in samples for g in s.gpus] == [g.values for s in expected for g in s.gpus]


def test_a_trayvml_serves_mig_devices_read_back_with_their_board(remote: FakeRemote) -> None:
    """Served as devices of their own, a MIG device's series did not say which board it is carved
    from (whose memory and processes it shares: summed, they counted twice)."""
    spec = "training:gpus=h100-mig+rtx4090,mig=0@0:3g.40gb+2g.20gb+1g.10gb"
    source, clock, _ = simulated_source(spec, host=False)
    here = run_ticks(source, clock, 2)
    served = {d.uuid: (d.index, d.mig_parent_index, d.gpu_instance_id) for d in here.devices}
    assert sorted(parent for _, parent, _ in served.values()) == [-1, -1, 0, 0, 0]
    body = _served_simulation(spec)
    assert b'mig_parent_index="0"' in body and b"gpu_instance_id=" in body
    remote.body = body
    (sample,) = _read(remote.url)
    read = {d.uuid: (d.index, d.mig_parent_index, d.gpu_instance_id) for d in sample.devices}
    assert read == served  # each MIG device by its own index, carved from GPU 0, its instance id
    assert [d.mig_mode_current for d in sample.devices[:2]] == [True, None]  # the board in MIG mode
