"""Remotes that misbehave on purpose or by accident: nothing lost, nothing stale, nothing leaked.

A host that drips its answer, hangs, redirects elsewhere or answers absurdly large is bounded in
time and size; a host that does not answer is unreachable (never its old values); credentials go
only to the origin they are for.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FakeRemote, dcgm_exposition, simulated_source
from trayvml.cli import main
from trayvml.core.clock import ManualClock
from trayvml.core.sample import Sample
from trayvml.remote import source as source_module
from trayvml.remote.fetch import (
    MAX_GPUS_PER_HOST,
    MAX_REMOTES,
    Endpoint,
    RemoteError,
    SeriesCache,
    parse_endpoint,
    read,
)
from trayvml.remote.source import Remotes, RemoteSource


@pytest.fixture
def remote() -> Iterator[FakeRemote]:
    server = FakeRemote()
    yield server
    server.stop()


@pytest.fixture
def second() -> Iterator[FakeRemote]:
    server = FakeRemote()
    yield server
    server.stop()


def test_a_remote_that_drips_its_headers_fails_at_the_deadline_naming_the_url(remote: FakeRemote) -> None:
    remote.body, remote.drip_s = b"x" * 200, 0.02  # each byte well within the socket timeout
    started = time.monotonic()
    with pytest.raises(RemoteError, match=rf"^{remote.url}/metrics did not finish answering within 0\.3 s\.$"):
        read(parse_endpoint(remote.url + "/metrics"), 0.3, 1_800_000_000.0)
    assert time.monotonic() - started < 1.0  # the headers alone take 1.6 s to drip


def test_a_remote_that_drips_is_unreachable_in_snapshot_not_missing(
    remote: FakeRemote, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(source_module, "TIMEOUT_S", 0.3)
    remote.body, remote.drip_s = dcgm_exposition("hostname").encode(), 0.02
    assert main(["snapshot", "--simulate=idle", "--remote", remote.url, "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["remotes"]
    assert entry["url"] == remote.url and not entry["reachable"]
    assert entry["message"] == f"{remote.url} did not finish answering within 0.3 s."


def _blocked_reader(release: threading.Event) -> object:
    def reader(endpoint: Endpoint, timeout_s: float, now_s: float, cache: SeriesCache) -> list:
        release.wait(5)
        return []

    return reader


def test_a_read_still_running_at_the_deadline_is_a_fault_in_snapshot() -> None:
    remotes = Remotes([parse_endpoint("http://slow-box:8729")], timeout_s=0.1)
    release = threading.Event()
    remotes.sources[0]._read = _blocked_reader(release)  # type: ignore[assignment]
    try:
        (sample,) = remotes.begin_read()()
    finally:
        release.set()
    assert sample.system is not None and sample.remote is not None
    assert sample.system.hostname == "slow-box" and sample.gpus == ()
    assert sample.remote.fault == "http://slow-box:8729 did not finish answering within 0.1 s."


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.002)
    assert condition()


def test_a_host_whose_read_hangs_is_unreachable_not_its_last_values(remote: FakeRemote) -> None:
    remote.body = dcgm_exposition("hostname").encode()
    clock = ManualClock()
    source = RemoteSource(parse_endpoint(remote.url), interval_s=1.0, timeout_s=3.0, clock=clock)
    (live,) = source.read_once()
    assert len(live.gpus) == 2
    release = threading.Event()
    source._read = _blocked_reader(release)  # type: ignore[assignment]
    hung = threading.Thread(target=source.read_once, daemon=True)
    hung.start()
    try:
        _wait_until(lambda: not math.isnan(source._started_s))
        clock.advance_s(1.0)
        assert source.samples == (live,)  # within its timeout: the last read is still the latest
        clock.advance_s(3.0)
        (down,) = source.samples
        assert down.system is not None and down.remote is not None
        assert down.system.hostname == "dgx-01" and down.gpus == () and down.devices == ()
        assert down.remote.fault == f"{remote.url} did not finish answering within 3 s."
        assert down.remote.since_s == live.timestamp_s  # since the read that hangs began
    finally:
        release.set()
        hung.join(5)


class _SameSampleRemotes:
    """A remote whose thread has not read again since the last tick: the same sample each time."""

    def __init__(self, sample: Sample) -> None:
        self.sample = sample

    def begin_read(self) -> Callable[[], list[Sample]]:
        return lambda: [self.sample]

    def start(self) -> None:
        pass

    def samples(self) -> list[Sample]:
        return [self.sample]


def test_log_remote_writes_a_remote_sample_once_however_many_ticks_find_it(remote: FakeRemote, tmp_path: Path) -> None:
    from trayvml.commands.csvlog import COLUMNS
    from trayvml.commands.remote import RemoteLog, log_columns

    remote.body = dcgm_exposition("hostname").encode()
    (sample,) = read(parse_endpoint(remote.url), 2.0, 1_800_000_000.0)
    source, _clock, _library = simulated_source("idle")
    csv = tmp_path / "log.csv"
    columns = log_columns([COLUMNS["timestamp"], COLUMNS["index"]])
    remotes: Any = _SameSampleRemotes(sample)
    assert RemoteLog(str(csv), columns, False, source, remotes, frozenset()).run(3, 1.0) == 0
    hosts = [row.split(", ")[1] for row in csv.read_text().splitlines()[1:]]
    assert hosts.count("dgx-01") == 2  # its two GPUs, once: not once per tick
    assert len(hosts) - hosts.count("dgx-01") == 3 * 4  # the local GPUs every tick


def test_a_redirect_to_another_origin_never_carries_the_credentials(remote: FakeRemote, second: FakeRemote) -> None:
    second.body = dcgm_exposition("hostname").encode()
    remote.redirect_to = second.url + "/metrics"
    endpoint = parse_endpoint(remote.url.replace("http://", "http://alice:s3cret@"), credentials_allowed=True)
    (sample,) = read(endpoint, 2.0, 1_800_000_000.0)
    assert sample.system is not None and sample.system.hostname == "dgx-01"  # the redirect was followed
    assert remote.seen[0]["Authorization"].startswith("Basic ")  # the origin it is for has them
    assert second.seen and all("Authorization" not in headers for headers in second.seen)


def test_an_answer_with_more_gpus_than_a_host_has_is_refused_in_one_sentence(remote: FakeRemote) -> None:
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    lines += [
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="{i}",UUID="GPU-{i:08d}",hostname="gpu-farm"}} 1'
        for i in range(MAX_GPUS_PER_HOST + 1)
    ]
    remote.body = ("\n".join(lines) + "\n").encode()
    with pytest.raises(
        RemoteError, match=rf"^{remote.url} reports 1025 GPUs on gpu-farm; trayvml reads at most 1024 a host\.$"
    ):
        read(parse_endpoint(remote.url), 5.0, 1_800_000_000.0)


def test_at_most_64_remotes_are_read_and_the_rest_said_in_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trayvml.commands.remote import endpoints

    urls = [f"http://gpu-{i:05d}:8729" for i in range(20_000)]
    found = endpoints(urls, str(tmp_path / "config.toml"))
    assert [e.url for e in found] == urls[:MAX_REMOTES] and MAX_REMOTES == 64
    err = capsys.readouterr().err
    assert err == "trayvml: 20000 remote hosts are listed; trayvml reads the first 64 and leaves out the rest.\n"


NOW_S = 1_800_000_000.0


def read_three_times_through_one_cache(remote: FakeRemote) -> None:
    """Three reads of ``remote`` that keep their connection in one cache, each with GPUs; the
    connection closed after."""
    remote.body = dcgm_exposition("Hostname").encode()
    cache = SeriesCache()
    try:
        for _ in range(3):
            (sample,) = read(parse_endpoint(remote.url), 2.0, NOW_S, cache)
            assert sample.gpus
    finally:
        cache.connection.close()


def test_a_remote_that_keeps_connections_is_read_on_one_connection(remote: FakeRemote) -> None:
    remote.keep_alive = True
    read_three_times_through_one_cache(remote)
    assert remote.connections == 1 and len(remote.seen) == 3
    assert all(seen.get("Connection") != "close" for seen in remote.seen)


def test_a_remote_that_closes_each_connection_is_read_on_a_new_one_each_time(remote: FakeRemote) -> None:
    read_three_times_through_one_cache(remote)  # HTTP/1.0: closed after each answer
    assert remote.connections == 3


def test_a_kept_connection_the_server_closed_while_idle_is_opened_anew_once(remote: FakeRemote) -> None:
    remote.keep_alive = remote.drop_idle = True  # closed after each answer, without saying so
    read_three_times_through_one_cache(remote)
    assert remote.connections == 3 and len(remote.seen) == 3


def test_a_kept_connection_that_stops_answering_is_bounded_by_the_timeout(remote: FakeRemote) -> None:
    remote.keep_alive = True
    remote.body = dcgm_exposition("Hostname").encode()
    cache = SeriesCache()
    endpoint = parse_endpoint(remote.url)
    try:
        read(endpoint, 2.0, NOW_S, cache)
        remote.hang = True  # the next request on the kept connection gets no answer
        with pytest.raises(RemoteError, match=r"did not answer within 0\.3 s"):
            read(endpoint, 0.3, NOW_S, cache)
        # A kept connection that dribbles is cut at the deadline, as a new one is.
        remote.hang, remote.drip_s = False, 0.05
        with pytest.raises(RemoteError, match=r"did not finish answering within 0\.3 s"):
            read(endpoint, 0.3, NOW_S, cache)
    finally:
        cache.connection.close()
    assert remote.connections >= 2  # the hung one was let go, not used again


def test_a_remote_behind_a_proxy_is_read_through_the_proxy_not_a_kept_connection(
    second: FakeRemote, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The host's name resolves nowhere: only through the proxy can it be read.
    second.keep_alive = True
    second.body = dcgm_exposition("Hostname").encode()  # the proxy answers for the host
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", second.url)
    cache = SeriesCache()
    found: list[Any] = []

    def read_it() -> None:  # on a thread of its own: each thread's opener takes the proxies once, when made
        try:
            found.extend(read(parse_endpoint("http://gpu-box.invalid:9400/metrics"), 2.0, NOW_S, cache))
        except RemoteError as error:
            found.append(error)
        finally:
            cache.connection.close()

    reader = threading.Thread(target=read_it)
    reader.start()
    reader.join(10)
    (sample,) = found
    assert not isinstance(sample, RemoteError), sample
    assert sample.gpus and len(second.seen) == 1


class _ChangingRemotes(_SameSampleRemotes):
    """Each tick's sample from a list (the last one again after it runs out)."""

    def __init__(self, samples: list[Sample]) -> None:
        super().__init__(samples[0])
        self._next = list(samples)

    def samples(self) -> list[Sample]:
        if self._next:
            self.sample = self._next.pop(0)
        return [self.sample]


def test_log_remote_writes_no_rows_for_a_gpu_that_has_no_new_values(
    remote: FakeRemote, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GPU whose series stopped behind a Prometheus server has no values: no rows of empty
    columns for it, and stderr says so once, and once when its values come back."""
    from dataclasses import replace

    from trayvml.commands.csvlog import COLUMNS
    from trayvml.commands.remote import RemoteLog, log_columns
    from trayvml.remote.fetch import _no_new_values

    remote.body = dcgm_exposition("hostname").encode()
    (sample,) = read(parse_endpoint(remote.url), 2.0, 1_800_000_000.0)
    stopped = [
        replace(
            sample, timestamp_s=sample.timestamp_s + k, gpus=(sample.gpus[0], _no_new_values(sample.gpus[1], 20.0 + k))
        )
        for k in range(1, 3)
    ]
    back = replace(sample, timestamp_s=sample.timestamp_s + 3)
    source, _clock, _library = simulated_source("idle")
    csv = tmp_path / "log.csv"
    columns = log_columns([COLUMNS["timestamp"], COLUMNS["index"], COLUMNS["temperature.gpu"]])
    remotes: Any = _ChangingRemotes([sample, *stopped, back])
    assert RemoteLog(str(csv), columns, False, source, remotes, frozenset()).run(4, 0.01) == 0
    rows = [row.split(", ") for row in csv.read_text().splitlines()[1:] if ", dgx-01, " in row]
    assert [row[2] for row in rows] == ["0", "1", "0", "0", "0", "1"]  # GPU 1: no rows while stopped
    assert all(row[3] for row in rows)  # no empty values
    err = capsys.readouterr().err
    assert err.count("the server has no new values of it (no rows for dgx-01") == 1
    assert err.count(f"dgx-01 ({remote.url}) GPU 1 answers again") == 1


def test_log_remote_writes_values_a_server_holds_once_stamped_when_they_were_read(
    remote: FakeRemote, tmp_path: Path
) -> None:
    """Behind a Prometheus server scraping every 15 s, reads a second apart answer the same values,
    older each time (values_ago_s): one row a GPU for them, at the time they were scraped, not one
    a tick stamped with the tick's time."""
    from dataclasses import replace

    from trayvml.commands.csvlog import COLUMNS
    from trayvml.commands.remote import RemoteLog, log_columns

    remote.body = dcgm_exposition("hostname").encode()
    (sample,) = read(parse_endpoint(remote.url), 2.0, 1_800_000_000.0)

    def held(read_s: float, age_s: float) -> Sample:
        gpus = tuple(replace(g, values_ago_s=age_s) for g in sample.gpus)
        return replace(sample, timestamp_s=sample.timestamp_s + read_s, gpus=gpus)

    # Scraped at +0.5 s, read at +1, +2, +3 (0.5, 1.5, 2.5 s old, each age on the server's clock, so
    # a request's delay apart: 1.497, 2.504); the next scrape at +15.5, read at +16.
    reads = [held(1, 0.5), held(2, 1.497), held(3, 2.504), held(16, 0.5)]
    source, _clock, _library = simulated_source("idle")
    csv = tmp_path / "log.csv"
    columns = log_columns([COLUMNS["timestamp"], COLUMNS["index"]])
    remotes: Any = _ChangingRemotes(reads)
    assert RemoteLog(str(csv), columns, False, source, remotes, frozenset()).run(5, 0.01) == 0
    rows = [row.split(", ") for row in csv.read_text().splitlines()[1:] if ", dgx-01, " in row]
    stamps = [datetime.datetime.fromtimestamp(sample.timestamp_s + s).strftime("%H:%M:%S.%f")[:-3] for s in (0.5, 15.5)]
    assert [(row[0][-12:], row[2]) for row in rows] == [
        (stamps[0], "0"),
        (stamps[0], "1"),
        (stamps[1], "0"),
        (stamps[1], "1"),
    ]


def _prometheus_answer(result_type: str, series: list[dict[str, Any]]) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": result_type, "result": series}}).encode()


def test_a_prometheus_series_with_a_label_that_is_not_text_is_left_out_and_the_reading_goes_on(
    remote: FakeRemote,
) -> None:
    """A server's ``"Hostname": ["dgx-01"]`` on one series: taken for a host name it raised a
    TypeError where nothing caught it; reading a host's past, on the remote's own thread, it ended
    that thread and the host was never read again."""
    from trayvml.remote.fetch import read_prometheus_past

    now_s = time.time()
    good = {"UUID": "GPU-1", "gpu": "0", "Hostname": "dgx-01"}
    temperature, power = {"__name__": "DCGM_FI_DEV_GPU_TEMP", **good}, {"__name__": "DCGM_FI_DEV_POWER_USAGE", **good}
    hostile = {**power, "Hostname": ["dgx-01"]}
    remote.content_type = "application/json"
    live = [{"metric": temperature, "value": [now_s, "61"]}, {"metric": hostile, "value": [now_s, "300"]}]
    remote.body = _prometheus_answer("vector", live)
    endpoint = parse_endpoint("prometheus+" + remote.url)
    (sample,) = read(endpoint, 2.0, now_s)
    assert sample.system is not None and sample.system.hostname == "dgx-01"
    assert sample.gpus[0].value("temperature_gpu_c") == 61.0 and math.isnan(sample.gpus[0].value("power_draw_w"))
    past = [{"metric": m, "values": [[now_s - 60, v]]} for m, v in ((temperature, "60"), (hostile, "290"))]
    remote.body = _prometheus_answer("matrix", past)
    (before,) = read_prometheus_past(endpoint, now_s - 120, now_s, 10, 2.0)
    assert before.gpus[0].value("temperature_gpu_c") == 60.0 and math.isnan(before.gpus[0].value("power_draw_w"))


def test_a_json_answer_nested_past_the_recursion_limit_is_a_fault_in_one_sentence(remote: FakeRemote) -> None:
    remote.content_type = "application/json"
    remote.body = b'{"status":"success","data":{"result":' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    with pytest.raises(
        RemoteError, match=r"did not answer as a Prometheus server \(ValueError: JSON nested too deeply\)\.$"
    ):
        read(parse_endpoint("prometheus+" + remote.url), 2.0, time.time())


def test_a_remotes_words_reach_standard_error_without_escape_sequences(
    remote: FakeRemote, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A Prometheus server's error (or an HTTP reason) quoted in the warning on standard error: raw,
    it cleared the user's terminal and coloured what followed (the table's line was cleaned)."""
    remote.content_type = "application/json"
    remote.body = json.dumps({"status": "error", "error": "\x1b[2J\x1b[31mpwned" + "x" * 5000}).encode()
    with caplog.at_level(logging.WARNING):
        assert main(["snapshot", "--simulate=idle:gpus=h100", "--remote", "prometheus+" + remote.url]) == 0
    (warning,) = [r.getMessage() for r in caplog.records if "refused the query" in r.getMessage()]
    assert "\x1b" not in warning and len(warning) <= 500  # not the 5000 characters it sent
    assert "\x1b" not in capsys.readouterr().out


def test_log_remote_says_a_hosts_fault_on_standard_error_without_escape_sequences(
    remote: FakeRemote, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    remote.content_type = "application/json"
    remote.body = json.dumps({"status": "error", "error": "\x1b[2J\x1b[31mpwned" + "x" * 5000}).encode()
    capsys.readouterr()
    log = ["log", "--simulate=idle:gpus=h100", "--count", "1", "--csv", str(tmp_path / "gpus.csv")]
    assert main([*log, "--remote", "prometheus+" + remote.url]) == 0
    (said,) = [line for line in capsys.readouterr().err.splitlines() if "no rows for" in line]
    assert "refused the query" in said and "\x1b" not in said and len(said) < 700


@pytest.mark.parametrize(
    ("document", "why"),
    [
        ('{"system": {"hostname": "gpu1"}, "gpus": [{"index": 0, "processes": [{"pid": Infinity}]}]}', "OverflowError"),
        ("[" * 200_000, "RecursionError"),
    ],
)
def test_an_ssh_hosts_document_that_cannot_be_read_is_its_fault_and_its_reader_goes_on(
    tmp_path: Path, document: str, why: str
) -> None:
    """A snapshot document over ssh with a process id of Infinity, or nested past Python's limit:
    the thread reading the host ended with a traceback, and the host was said to have ended its
    session (or not to answer) rather than why. The command stands in for ssh: what the host says."""
    from trayvml.remote.ssh import SshConnection

    said = tmp_path / "said.txt"
    said.write_text(f"T\nS {document}\nS.\n")
    script = f"import sys, time; sys.stdout.write(open({str(said)!r}).read()); sys.stdout.flush(); time.sleep(5)"
    connection = SshConnection("ssh://gpu1", [sys.executable, "-c", script], "gpu1")
    try:
        latest, _, problem = connection.latest(4.0)
        assert latest is None
        assert problem == f"ssh://gpu1: the host answered something trayvml cannot read ({why})."
        assert connection.process.poll() is None  # the session goes on: the next document may be whole
    finally:
        connection.close()


def test_a_remote_value_not_finite_once_scaled_is_no_value_and_the_json_stays_json(
    remote: FakeRemote, capsys: pytest.CaptureFixture[str]
) -> None:
    """nvitop-exporter's units, and values no GPU has: +Inf % of CPU, 1e308 MiB (finite, infinite
    in bytes), a process's +Inf MiB. Shown as "CPU inf %" and "inf GiB", and written into
    ``snapshot --json`` as Infinity, which no JSON parser but Python's reads."""
    uuid, host = "GPU-aaaa", 'hostname="nv1"'
    gpu = f'{host},index="0",devicename="RTX",uuid="{uuid}"'
    remote.body = (
        f'nvitop_info{{{host},driver_version="550",cuda_driver_version="12.4"}} 1\n'
        f"gpu_utilization_Percentage{{{gpu}}} 40\n"
        f"gpu_memory_used_MiB{{{gpu}}} 1e308\n"
        f"gpu_memory_total_MiB{{{gpu}}} 8000\n"
        f"host_cpu_percent_Percentage{{{host}}} +Inf\n"
        f"host_virtual_memory_total_MiB{{{host}}} 1e308\n"
        f'process_gpu_memory_MiB{{{gpu},pid="123",username="bob"}} +Inf\n'
    ).encode()
    capsys.readouterr()
    assert main(["snapshot", "--json", "--simulate=idle:gpus=h100", "--remote", remote.url + "/metrics"]) == 0

    def refused(constant: str) -> None:
        raise AssertionError(f"{constant} in the JSON")

    document = json.loads(capsys.readouterr().out, parse_constant=refused)
    (nv1,) = document["remotes"]
    assert nv1["host_metrics"]["cpu_percent"] is None and nv1["host_metrics"]["ram_total_bytes"] is None
    (gpu0,) = [gpu for gpu in document["gpus"] if gpu["host"] == "nv1"]
    assert gpu0["metrics"]["utilization_gpu_percent"] == 40.0 and gpu0["metrics"]["memory_used_bytes"] is None
    assert [p["used_memory_bytes"] for p in gpu0["processes"]] == [None]
    cache = SeriesCache()  # the tray's reads: the first parses, the next (other numbers) go by its layout
    body = remote.body
    for utilization in (b"40", b"41"):
        remote.body = body.replace(b"} 40\n", b"} " + utilization + b"\n")
        (sample,) = read(parse_endpoint(remote.url + "/metrics"), 2.0, time.time(), cache)
        assert sample.gpus[0].value("utilization_gpu_percent") == float(utilization)
        # (every host value infinite: a host of values not known either way, as a full read makes it)
        assert sample.host is not None and all(math.isnan(v) for v in sample.host.values)
        assert math.isnan(sample.gpus[0].value("memory_used_bytes"))
        assert [math.isnan(p.used_memory_bytes) for p in sample.gpus[0].processes] == [True]


def test_a_huge_finite_remote_value_is_said_in_a_few_digits(remote: FakeRemote) -> None:
    """A value no GPU has but finite (1e300 °C, 1e250 MiB): the tooltip and menu printed it with
    all its 300 digits, the line running off the screen."""
    from trayvml.core.formatting import format_precise
    from trayvml.core.lines import gpu_lines
    from trayvml.core.metrics import GPU_METRIC_BY_KEY

    labels = 'gpu="0",UUID="GPU-1",modelName="NVIDIA H100",Hostname="dgx-01"'
    remote.body = (
        f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} 1e300\n"
        f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} 3e200\n"
        f"DCGM_FI_DEV_FB_USED{{{labels}}} 1e250\n"
        f"DCGM_FI_DEV_FB_FREE{{{labels}}} 1000\n"
    ).encode()
    (sample,) = read(parse_endpoint(remote.url + "/metrics"), 2.0, time.time())
    (line,) = gpu_lines(sample)
    assert len(line) < 120 and "1e+300 °C" in line, line
    said = format_precise(GPU_METRIC_BY_KEY["power_draw_w"], sample.gpus[0].value("power_draw_w"))
    assert said == "3e+200 W"


def test_an_exporters_series_stamped_a_day_ago_are_a_day_old_not_current(remote: FakeRemote) -> None:
    """A /federate address, or a file of metrics written once, serves each series with the time it
    was read: a day ago here. They were shown as read now (values_age_s 0)."""
    stamp_ms = round((time.time() - 86_400) * 1000)
    labels = 'gpu="0",UUID="GPU-1",Hostname="dgx-01"'
    # Its newest stamp tells (a lower bound): a series of a target scraped less often ages nothing.
    remote.body = (
        f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} 61 {stamp_ms}\n"
        f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} 312.5 {stamp_ms - 3_600_000}\n"
    ).encode()
    cache = SeriesCache()
    for kept in (None, cache, cache):  # read alone; read by a remote, then its same answer again
        now_s = time.time()
        (sample,) = read(parse_endpoint(remote.url + "/metrics"), 2.0, now_s, kept)
        assert sample.gpus[0].value("temperature_gpu_c") == 61.0
        assert sample.values_ago_s == pytest.approx(now_s - stamp_ms / 1000, abs=1.0)


def test_an_openmetrics_exemplar_after_a_value_is_not_taken_for_the_series(remote: FakeRemote) -> None:
    """``{labels} 1 # {trace_id="b"} 2``: the series was read up to the exemplar's "}", and the
    value as the exemplar's 2."""
    labels = 'gpu="0",UUID="GPU-1",Hostname="dgx-01"'
    remote.body = f'DCGM_FI_DEV_GPU_TEMP{{{labels}}} 61 # {{trace_id="b"}} 2\n'.encode()
    (sample,) = read(parse_endpoint(remote.url + "/metrics"), 2.0, time.time())
    assert sample.gpus[0].value("temperature_gpu_c") == 61.0 and sample.values_ago_s == 0.0
    # A series without labels: the "{" is its exemplar's, after the value.
    from trayvml.remote.fetch import parse_exposition

    body = b'gpu_count_total 7 # {trace_id="abc"} 1.0\n'
    assert [p.value for p in parse_exposition(parse_endpoint(remote.url), body, "text/plain")] == [7.0]
