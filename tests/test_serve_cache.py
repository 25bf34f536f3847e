"""trayvml serve's rendered payload (issue 23): the same bytes as prometheus-client's encoders, made
once per sample, and never a line left over from an older sample."""

from __future__ import annotations

import gzip
import math
import urllib.request
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client.exposition import choose_encoder

from tests.helpers import run_ticks, simulated_source
from trayvml.core.errors import DriverStall
from trayvml.core.metrics import GPU_INDEX
from trayvml.core.sample import MetricState, Sample
from trayvml.prometheus.exposition import MAX_FORMATS, Exporter, SampleCollector

# What Prometheus, OpenMetrics scrapers and curl send; each picks one of prometheus-client's encoders.
ACCEPTS = [
    "",
    "application/openmetrics-text; version=1.0.0",
    "application/openmetrics-text",
    "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1",
    "text/plain; version=1.0.0; escaping=allow-utf-8",
]


def _samples() -> list[Sample]:
    source, clock, _ = simulated_source("training:gpus=h100*2+rtx4090", host=True)
    return [run_ticks(source, clock, 2 if i == 0 else 1) for i in range(4)]


def _with_value(sample: Sample, gpu: int, key: str, value: float) -> Sample:
    gpus = list(sample.gpus)
    values = list(gpus[gpu].values)
    states = list(gpus[gpu].states)
    values[GPU_INDEX[key]], states[GPU_INDEX[key]] = value, MetricState.OK
    gpus[gpu] = replace(gpus[gpu], values=tuple(values), states=tuple(states))
    return replace(sample, gpus=tuple(gpus))


def _hostile(sample: Sample) -> Sample:
    """Label values with every character an encoder escapes, and text outside ASCII."""
    devices = tuple(replace(d, name=f'GPU "{d.index}" \\ back\nslash 显卡') for d in sample.devices)
    gpus = tuple(
        replace(g, processes=tuple(replace(p, name='py"thon\\\n', user="émile") for p in g.processes))
        for g in sample.gpus
    )
    return replace(sample, devices=devices, gpus=gpus)


def _collector() -> tuple[SampleCollector, Callable[[Sample | None], None]]:
    latest: list[Sample | None] = [None]

    def show(sample: Sample | None) -> None:
        latest[0] = sample

    return SampleCollector(lambda: latest[0], hostname="here"), show


def _payload(collector: SampleCollector, accept: str = "") -> str:
    encoder, content_type = choose_encoder(accept)
    return collector.payload(content_type, encoder, False).decode()


@pytest.mark.parametrize("accept", ACCEPTS)
def test_the_payload_is_byte_for_byte_what_prometheus_client_renders(accept: str) -> None:
    collector, show = _collector()
    encoder, content_type = choose_encoder(accept)
    first, *rest = _samples()
    stuck = replace(first, gpus=(), devices=(), stall=DriverStall(0.0, "nvmlDeviceGetPowerUsage"))
    zero, negative_zero = (_with_value(first, 0, "power_draw_w", z) for z in (0.0, -0.0))
    # A sequence with series coming and going, values changing, and back again: each payload is
    # rendered from what the one before it kept.
    sequence = [None, first, *rest, _hostile(rest[-1]), zero, negative_zero, first, stuck, first, None, rest[0]]
    for sample in sequence:
        show(sample)
        assert collector.payload(content_type, encoder, False) == encoder(collector)


def test_a_changed_value_changes_its_line_and_only_its_line() -> None:
    collector, show = _collector()
    sample = _samples()[-1]
    show(sample)
    before = _payload(collector).splitlines()
    show(_with_value(sample, 1, "temperature_gpu_c", 97.0))
    after = _payload(collector).splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    uuid = sample.devices[1].uuid
    assert len(changed) == 1
    assert changed[0][1].startswith("trayvml_gpu_temperature_celsius{") and f'uuid="{uuid}"' in changed[0][1]
    assert changed[0][1].endswith(" 97.0")


def test_a_gpu_that_goes_away_takes_all_its_lines_with_it() -> None:
    collector, show = _collector()
    sample = _samples()[-1]
    gone = sample.devices[2].uuid
    show(sample)
    assert gone in _payload(collector)
    show(replace(sample, gpus=sample.gpus[:2], devices=sample.devices[:2]))
    text = _payload(collector)
    assert gone not in text and sample.devices[0].uuid in text
    assert text == _payload(collector)  # the same sample again: the same bytes


def test_a_stall_after_good_samples_is_up_0_and_serves_no_gpu_values() -> None:
    collector, show = _collector()
    sample = _samples()[-1]
    show(sample)
    assert 'trayvml_up{hostname="' in _payload(collector) and "trayvml_gpu_utilization_ratio{" in _payload(collector)
    show(replace(sample, gpus=(), devices=(), stall=DriverStall(0.0, "nvmlDeviceGetPowerUsage")))
    lines = [line for line in _payload(collector).splitlines() if not line.startswith("#")]
    (up,) = [line for line in lines if line.startswith("trayvml_up{")]
    (down,) = [line for line in lines if line.startswith("trayvml_down_info{")]
    assert up.endswith(" 0.0") and 'reason="driver_not_responding"' in down
    assert not [line for line in lines if line.startswith("trayvml_gpu_")]


def test_a_process_that_ends_leaves_the_payload() -> None:
    collector, show = _collector()
    sample = _samples()[-1]
    pids = [p.pid for g in sample.gpus for p in g.processes]
    assert pids
    show(sample)
    assert f'pid="{pids[0]}"' in _payload(collector)
    show(replace(sample, gpus=tuple(replace(g, processes=()) for g in sample.gpus)))
    assert "pid=" not in _payload(collector)


def test_one_render_per_sample_whatever_the_scrapes() -> None:
    collector, show = _collector()
    renders: list[int] = []
    encoder, content_type = choose_encoder("")

    def counted(registry: Any) -> bytes:
        renders.append(1)
        return encoder(registry)

    samples = _samples()
    show(samples[0])
    first = collector.payload(content_type, counted, False)
    made_for_first = len(renders)  # the header and series pieces, rendered by the encoder once
    assert collector.payload(content_type, counted, False) is first
    assert gzip.decompress(collector.payload(content_type, counted, True)) == first
    assert len(renders) == made_for_first
    show(samples[1])  # the same GPUs and processes: only values change, nothing to render anew
    assert collector.payload(content_type, counted, False) != first
    assert len(renders) == made_for_first


def test_a_scrape_past_the_kept_formats_asks_for_the_sample_once() -> None:
    # ``latest`` is serve's SamplingLoop.fresh, which may wait up to a read's bound: a scrape in a
    # format beyond the MAX_FORMATS kept renderers (rendered through collect) must not ask twice.
    sample = _samples()[-1]
    calls: list[int] = []

    def latest() -> Sample:
        calls.append(1)
        return sample

    collector = SampleCollector(latest, hostname="here")
    encoder, content_type = choose_encoder("")
    for kept in range(MAX_FORMATS):
        collector.payload(f"{content_type}; kept={kept}", encoder, False)
    calls.clear()
    body = collector.payload(f"{content_type}; one too many", encoder, False)
    assert len(calls) == 1
    assert body == encoder(collector)
    # Nor kept: a client naming a version of its own each time grew serve's memory until the next sample.
    for version in range(50):
        collector.payload(f"{content_type}; version=1.0.{version}", encoder, version % 2 == 0)
    assert len(collector._payloads) <= 2 * MAX_FORMATS


@pytest.mark.parametrize("accept", ACCEPTS[:2])
@pytest.mark.parametrize("gzipped", [False, True])
def test_over_http_the_exporter_serves_the_payload_in_the_format_asked(accept: str, gzipped: bool) -> None:
    sample = _samples()[-1]
    exporter = Exporter(lambda: sample, "127.0.0.1", 0)
    try:
        headers = {"Accept": accept, "Accept-Encoding": "gzip" if gzipped else "identity"}
        request = urllib.request.Request(exporter.server.url, headers=headers)
        with urllib.request.urlopen(request, timeout=5) as answer:
            body = answer.read()
            assert (answer.headers.get("Content-Encoding") == "gzip") == gzipped
            content_type = answer.headers["Content-Type"]
        encoder, expected_type = choose_encoder(accept)
        assert content_type == expected_type
        assert (gzip.decompress(body) if gzipped else body) == encoder(exporter.collector)
    finally:
        exporter.close()


def test_a_value_that_is_not_a_number_has_no_line() -> None:
    collector, show = _collector()
    sample = _samples()[-1]
    show(sample)
    assert "trayvml_gpu_power_watts{" in _payload(collector)
    nan = _with_value(sample, 0, "power_draw_w", math.nan)
    show(nan)
    text = _payload(collector)
    uuid = sample.devices[0].uuid
    assert not [line for line in text.splitlines() if line.startswith("trayvml_gpu_power_watts{") and uuid in line]


def test_a_name_filter_answers_the_families_named_and_only_those() -> None:
    # Prometheus' ``name[]`` parameter, answered by prometheus-client's own app: it knew no names
    # (the registry does not auto-describe) and answered an empty page.
    sample = _samples()[-1]
    exporter = Exporter(lambda: sample, "127.0.0.1", 0)
    try:
        wanted = ("trayvml_up", "trayvml_gpu_power_watts", "trayvml_gpu_energy_joules_total")
        query = "&".join(f"name[]={name}" for name in wanted)
        with urllib.request.urlopen(f"{exporter.server.url}?{query}", timeout=5) as answer:
            text = answer.read().decode()
    finally:
        exporter.close()
    names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}
    assert names == set(wanted), text
    gpus = len(sample.gpus)
    assert sum(line.startswith("trayvml_gpu_power_watts{") for line in text.splitlines()) == gpus


def test_head_another_path_and_a_refused_gzip_are_answered_as_http_says() -> None:
    """prometheus-client's app answered HEAD with 405, every path with the metrics (a typo'd
    scrape path looked like a good target), and gzip where "gzip;q=0" refused it."""
    from trayvml.prometheus.exposition import gzip_wanted

    sample = _samples()[-1]
    exporter = Exporter(lambda: sample, "127.0.0.1", 0)
    try:
        url = exporter.server.url
        with urllib.request.urlopen(url, timeout=5) as answer:
            length = len(answer.read())
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=5) as answer:
            assert answer.status == 200 and answer.read() == b""
            assert int(answer.headers["Content-Length"]) == length
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url.replace("/metrics", "/metrcs"), timeout=5)
        assert missing.value.code == 404 and b"/metrics" in missing.value.read()
        missing.value.close()
        request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip;q=0, identity"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert answer.headers.get("Content-Encoding") is None and len(answer.read()) == length
    finally:
        exporter.close()
    said = {
        header: gzip_wanted(header)
        for header in ("gzip", "GZIP; q=0.5", "br, gzip;q=1.0", "gzip;q=0", "gzip;q=0.000", "identity", "", "gzip;q=x")
    }
    assert said == {
        "gzip": True,
        "GZIP; q=0.5": True,
        "br, gzip;q=1.0": True,
        "gzip;q=0": False,
        "gzip;q=0.000": False,
        "identity": False,
        "": False,
        "gzip;q=x": False,
    }
