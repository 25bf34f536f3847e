"""Remotes that misbehave on purpose or by accident: nothing lost, nothing stale, nothing leaked.

A host that drips its answer, hangs, redirects elsewhere or answers absurdly large is bounded in
time and size; a host that does not answer is unreachable (never its old values); credentials go
only to the origin they are for.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from tests.helpers import FakeRemote, dcgm_exposition
from trayvml.cli import main
from trayvml.remote import source as source_module
from trayvml.remote.fetch import Endpoint, RemoteError, SeriesCache, parse_endpoint, read
from trayvml.remote.source import Remotes


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
