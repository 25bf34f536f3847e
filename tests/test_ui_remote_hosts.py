"""Remote hosts in the tray: grouped by host in the tooltip and menu; an unreachable host greyed with why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from tests.helpers import FakeRemote, closed_port_url, dcgm_exposition
from trayvml.config import Settings
from trayvml.remote.fetch import parse_endpoint
from trayvml.ui.remote_hosts import RemoteHostsView, endpoints_from
from trayvml.ui.tray import Tray


@pytest.fixture
def remote() -> Iterator[FakeRemote]:
    server = FakeRemote()
    server.body = dcgm_exposition("hostname").encode()
    yield server
    server.stop()


def test_remote_hosts_show_grouped_by_host_and_an_unreachable_one_greyed(qtbot: QtBot, remote: FakeRemote) -> None:
    tray = Tray()
    gone = closed_port_url()
    view = RemoteHostsView(
        [parse_endpoint(remote.url), parse_endpoint(gone)], 0.2, tray.menu, tray.copy_action, tray.over_dbus
    )
    view.changed.connect(lambda: (setattr(tray, "remote_lines", view.lines), tray.update(tray.sample)))
    view.start()
    try:
        qtbot.waitUntil(lambda: len(view.samples) == 2 and any(s.gpus for s in view.samples), timeout=10_000)
        tip = tray.icon.toolTip().splitlines()
        assert "dgx-01:" in tip
        assert any(line.startswith("  0 A100") for line in tip) and any(line.startswith("  1 A100") for line in tip)
        (down,) = [line for line in tip if line.startswith("127.0.0.1: unreachable since ")]
        assert f"{gone} cannot be reached" in down
        menus = {a.text(): a.menu() for a in tray.menu.actions() if a.menu() is not None and a.text() != "Pause alerts"}
        assert set(menus) == {"dgx-01", "127.0.0.1 — unreachable"}
        assert [a.text().split(" ")[:2] for a in menus["dgx-01"].actions()] == [["0", "A100"], ["1", "A100"]]
        since, why = menus["127.0.0.1 — unreachable"].actions()
        assert since.text().startswith("unreachable since ") and "cannot be reached" in why.text()
        assert not since.isEnabled() and not why.isEnabled()
        # The remote goes away mid-run: its host stays, greyed, and its old values go.
        remote.stop()
        qtbot.waitUntil(lambda: "dgx-01 — unreachable" in [a.text() for a in tray.menu.actions()], timeout=10_000)
        assert not any(line.startswith("  0 A100") for line in tray.icon.toolTip().splitlines())
    finally:
        view.stop()


def test_remote_host_urls_from_settings_and_command_line() -> None:
    settings = Settings(remote_hosts=("https://alice:pw@gpu-box:8729", "nonsense"))
    endpoints, problems = endpoints_from(settings.remote_hosts, ["https://gpu-box:8729", "http://other:9400"])
    assert [e.url for e in endpoints] == ["https://gpu-box:8729", "http://other:9400"]
    assert endpoints[0].username == "alice"  # the command line's URL takes the stored credentials
    assert len(problems) == 1 and "nonsense" in problems[0]
