"""Remote hosts in the tray: grouped by host in the tooltip and menu; an unreachable host greyed with why."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pytestqt.qtbot import QtBot

from tests.helpers import FakeRemote, closed_port_url, dcgm_exposition, present, simulated_source
from tests.ui_helpers import shown_window, submenu
from trayvml.alerts.engine import AlertSettings
from trayvml.alerts.rules import RULE_BY_KEY, AlertEvent
from trayvml.alerts.severity import Severity
from trayvml.config import Settings
from trayvml.core.sample import Sample
from trayvml.remote.fetch import parse_endpoint
from trayvml.remote.source import Remotes
from trayvml.ui.remote_hosts import RemoteHostsView, endpoints_from
from trayvml.ui.tray import Tray

if TYPE_CHECKING:
    from trayvml.ui.app import App
    from trayvml.ui.host_choice import HostChoice
    from trayvml.ui.window import GraphWindow


@pytest.fixture
def remote() -> Iterator[FakeRemote]:
    server = FakeRemote()
    server.body = dcgm_exposition("hostname").encode()
    yield server
    server.stop()


def app_reading(remote: FakeRemote, tmp_path: Path, *more: FakeRemote) -> App:
    """The app of a simulated idle machine that reads ``remote`` (and ``more``), its config and
    autostart in ``tmp_path``."""
    from trayvml.config import SettingsStore
    from trayvml.nvml.sim import parse_spec
    from trayvml.platform.autostart import XdgAutostart
    from trayvml.ui.app import App

    store = SettingsStore(tmp_path / "config.toml")
    store.save(Settings(remote_interval_s=1.0))  # read each second: the tests wait on their reads
    return App(
        parse_spec("idle"),
        store=store,
        autostart=XdgAutostart(tmp_path),
        remote_urls=tuple(r.url for r in (remote, *more)),
    )


def window_of(qtbot: QtBot, app: App) -> tuple[GraphWindow, HostChoice]:
    """``app``'s window, after a sample of this machine, and its host box; the remotes started."""
    source, _, _ = simulated_source("idle")
    app.on_sample(source.sample())
    window = app.ensure_window()
    qtbot.addWidget(window)
    app._start_remotes()
    return window, present(app.host_choice)


def test_remote_hosts_show_grouped_by_host_and_an_unreachable_one_greyed(qtbot: QtBot, remote: FakeRemote) -> None:
    tray = Tray()
    gone = closed_port_url()
    remotes = Remotes([parse_endpoint(remote.url), parse_endpoint(gone)], 0.2)
    view = RemoteHostsView(tray.menu, tray.copy_action, tray.over_dbus)
    view.show_hosts(True)

    def redrawn() -> None:
        from trayvml.ui.remote_hosts import in_icon

        tray.remote_lines = view.lines
        tray.remote_icon_samples = in_icon(view.samples, ("*",))  # as the app gives them
        tray.update(tray.sample)

    view.changed.connect(redrawn)
    tray.update(_local_sample())  # this machine: one H100

    def shown(check: Callable[[], bool]) -> Callable[[], bool]:
        def shown_then_checked() -> bool:
            view.show(remotes.samples())  # what the app's timer does
            return check()

        return shown_then_checked

    remotes.start()
    try:
        qtbot.waitUntil(shown(lambda: len(view.samples) == 2 and any(s.gpus for s in view.samples)), timeout=10_000)
        tip = tray.icon.toolTip().splitlines()
        assert "dgx-01:" in tip
        # The icon summarises both: the one that does not answer is told first, the tile amber.
        assert tip[0] == "127.0.0.1 is unreachable: the icon shows no number"
        assert tray._content is not None and tray._content.unreachable and len(tray._content.bars) == 4
        assert any(line.startswith("  0 A100") for line in tip) and any(line.startswith("  1 A100") for line in tip)
        (down,) = [line for line in tip if line.startswith("127.0.0.1: unreachable since ")]
        assert f"{gone} cannot be reached" in down
        menus = {
            a.text(): submenu(a) for a in tray.menu.actions() if a.menu() is not None and a.text() != "Pause alerts"
        }
        assert set(menus) == {"dgx-01", "127.0.0.1 — unreachable"}
        assert [a.text().split(" ")[:2] for a in menus["dgx-01"].actions()] == [["0", "A100"], ["1", "A100"]]
        since, why = menus["127.0.0.1 — unreachable"].actions()
        assert since.text().startswith("unreachable since ") and "cannot be reached" in why.text()
        assert not since.isEnabled() and not why.isEnabled()
        # The remote goes away mid-run: its host stays, greyed, and its old values go.
        remote.stop()
        qtbot.waitUntil(
            shown(lambda: "dgx-01 — unreachable" in [a.text() for a in tray.menu.actions()]), timeout=10_000
        )
        assert not any(line.startswith("  0 A100") for line in tray.icon.toolTip().splitlines())
    finally:
        remotes.close()


def test_remote_host_urls_from_settings_and_command_line() -> None:
    settings = Settings(remote_hosts=("https://alice:pw@gpu-box:8729", "nonsense"))
    endpoints, problems = endpoints_from(settings.remote_hosts, ["https://gpu-box:8729", "http://other:9400"])
    assert [e.url for e in endpoints] == ["https://gpu-box:8729", "http://other:9400"]
    assert endpoints[0].username == "alice"  # the command line's URL takes the stored credentials
    assert len(problems) == 1 and "nonsense" in problems[0]


def test_a_remote_hosts_alert_names_the_host_in_its_title(qtbot: QtBot, remote: FakeRemote) -> None:
    remote.body = remote.body.replace(b"} 61\n", b"} 99\n")  # GPU 0 at 99 °C
    from trayvml.alerts.dispatch import Dispatcher
    from trayvml.core.clock import SystemClock
    from trayvml.history.timeline import History
    from trayvml.monitor.remotes import RemoteMonitors

    # A host name with a line break (a label's \n): cleaned, else every e-mail of its alerts failed.
    remote.body = remote.body.replace(b'hostname="dgx-01"', b'hostname="dgx-01\\nBcc: x@example.com"')
    remotes = Remotes([parse_endpoint(remote.url)], 0.2)
    rules = {"temperature": replace(RULE_BY_KEY["temperature"].defaults, hold_s=0.0)}
    # This machine's GPU 0 has temperature alerts off (Settings, Per GPU): not a remote host's GPU 0.
    off = {0: {"temperature": replace(RULE_BY_KEY["temperature"].defaults, enabled=False)}}
    monitors = RemoteMonitors(Dispatcher(SystemClock()), AlertSettings(rules=rules, overrides=off), History)
    raised: list[AlertEvent] = []
    remotes.start()
    try:

        def temperature_raised() -> bool:
            raised.extend(monitors.take(remotes.samples())[1].events)
            return any(e.rule == "temperature" for e in raised)

        qtbot.waitUntil(temperature_raised, timeout=10_000)
    finally:
        remotes.close()
    (event,) = [e for e in raised if e.rule == "temperature"]
    host = "dgx-01\ufffdBcc: x@example.com"
    assert (event.host, event.gpu_index, event.kind) == (host, 0, "firing")
    assert event.title.startswith(f"{host}: GPU 0 A100") and "\n" not in event.title
    assert not [e for e in raised if e.gpu_index == 1 and e.rule == "temperature"]  # 33 °C


def test_the_window_shows_a_remote_host_chosen_in_its_host_box(
    qtbot: QtBot, remote: FakeRemote, tmp_path: Path
) -> None:
    app = app_reading(remote, tmp_path)
    source, _, _ = simulated_source("idle")
    app.on_sample(source.sample())
    window = app.ensure_window()
    qtbot.addWidget(window)
    choice = app.host_choice
    assert choice is not None and not choice.box.isVisibleTo(window)  # no remote host with values yet
    app._start_remotes()
    try:
        qtbot.waitUntil(lambda: choice.box.count() == 2, timeout=10_000)
        assert choice.box.itemText(1) == "dgx-01"
        choice.box.setCurrentIndex(1)
        assert window.gpu_count == 2 and window.history is present(app.remote_monitors).histories["dgx-01"]
        app.on_sample(source.sample())  # this machine's samples go on, into its own history only
        assert window.gpu_count == 2 and present(present(window.sample).system).hostname == "dgx-01"
        choice.box.setCurrentIndex(0)
        assert window.gpu_count == 4 and window.history is app.history
    finally:
        app._stop_remotes()


def test_a_host_chosen_while_it_is_down_is_shown_down_at_once(qtbot: QtBot, remote: FakeRemote, tmp_path: Path) -> None:
    """A host that went down while this machine was shown, then chosen in the Host box: its last
    values were shown as if live, "from trayvml serve at …", until its next read came."""
    app = app_reading(remote, tmp_path)
    window, choice = window_of(qtbot, app)
    try:
        qtbot.waitUntil(lambda: choice.box.count() == 2, timeout=10_000)
        remote.status = 503

        def down() -> bool:
            app.take_remote_samples()
            return any(not s.gpus for s in present(app.remotes).samples())

        qtbot.waitUntil(down, timeout=10_000)
        assert choice.host == ""
        app._remote_timer.stop()  # no read comes to mend what the choice shows
        choice.box.setCurrentIndex(1)
        assert window.sample is not None and not window.sample.gpus
        assert "503" in present(window.sample.problem)[1]
    finally:
        app._stop_remotes()


def test_the_window_on_a_remote_host_follows_what_becomes_of_it(
    qtbot: QtBot, remote: FakeRemote, tmp_path: Path
) -> None:
    """A chosen host that stops answering is said unreachable in the window (it stayed on screen
    with its last values, following live); its own asleep spans and users are shown, not this
    machine's; a tray GPU entry shows this machine's GPU. A restart of the readers keeps the hosts
    still read, their alert states and (the same tiers) their histories: another host list keeps
    the window on the host, another interval on its new history, and the host removed shows this
    machine (the window stayed on the old history, frozen, with no way back)."""
    app = app_reading(remote, tmp_path)
    window, choice = window_of(qtbot, app)
    try:
        qtbot.waitUntil(lambda: choice.box.count() == 2, timeout=10_000)
        choice.box.setCurrentIndex(1)
        monitor = present(app.remote_monitors).monitors["dgx-01"]
        assert window.asleep_spans is monitor.asleep_spans and window.process_tab.users is monitor.users
        remote.status = 503

        def said_unreachable() -> bool:
            app.take_remote_samples()
            return window.sample is not None and not window.sample.gpus and window.sample.problem is not None

        qtbot.waitUntil(said_unreachable, timeout=10_000)
        assert "503" in present(present(window.sample).problem)[1]
        assert window.no_gpus.isVisibleTo(window) and "503" in window.no_gpus_label.text()
        assert "this computer" not in window.no_gpus_label.text()  # that host's Machine tab is no help
        remote.status = 200

        def answering() -> bool:
            app.take_remote_samples()
            return window.sample is not None and len(window.sample.gpus) == 2

        qtbot.waitUntil(answering, timeout=10_000)
        app.show_window(3)  # this machine's GPU 3, from the tray's menu
        assert choice.host == "" and window.history is app.history and window.gpu_count == 4
        assert window.asleep_spans is app.local.asleep_spans and window.process_tab.users is app.local.users
        choice.box.setCurrentIndex(1)
        history = monitor.history
        app._restart_remotes()  # what another remote host list does: this host's monitor is kept
        assert present(app.remote_monitors).monitors["dgx-01"] is monitor and monitor.history is history
        assert choice.host == "dgx-01" and window.history is history
        app.apply_settings(replace(app.settings, remote_interval_s=2.0))  # other tiers: a new history
        assert present(app.remote_monitors).monitors["dgx-01"] is monitor and monitor.history is not history
        assert choice.host == "dgx-01" and window.history is monitor.history
        app._remote_urls = ()  # the host removed
        app._restart_remotes()
        assert choice.host == "" and window.history is app.history and choice.box.count() == 1
    finally:
        app._stop_remotes()


def test_the_window_says_where_a_remote_hosts_values_come_from_and_their_age(qtbot: QtBot, remote: FakeRemote) -> None:
    from trayvml.history.timeline import History
    from trayvml.remote.fetch import read

    (dgx,) = read(parse_endpoint(remote.url), 2.0, 1_800_000_000.0)
    history = History()
    history.append(dgx)
    window = shown_window(qtbot, history, dgx)
    assert f"from dcgm-exporter at {remote.url}   ·   driver 550.54.15   ·   " in window.status_label.text()
    # Through a Prometheus server that holds them (values_ago_s, trayvml/remote/fetch.py), and the
    # Processes tab's lists with them: how old they are.
    assert dgx.remote is not None
    via = f"prometheus+{remote.url}"
    held = replace(dgx, remote=replace(dgx.remote, url=via), gpus=tuple(replace(g, values_ago_s=9.4) for g in dgx.gpus))
    window.update_sample(held)
    window.refresh()
    assert f"from dcgm-exporter via {via}, as of 9 s ago   ·   " in window.status_label.text()
    # A remote's label that looks like markup is shown as it is in the tooltip of the cut line.
    assert held.system is not None
    window.resize(600, 800)
    window.update_sample(replace(held, system=replace(held.system, driver_version="<img src=x>550")))
    window.refresh()
    qtbot.waitUntil(lambda: window.status_label.toolTip() != "")
    assert "driver <img src=x>550" in window.status_label.text()
    assert "&lt;img src=x&gt;550" in window.status_label.toolTip() and "<img" not in window.status_label.toolTip()
    # Unreachable: the fault is said, no empty part for the origin.
    gone = replace(dgx, gpus=(), devices=(), remote=replace(dgx.remote, fault="gone", since_s=1_800_000_000.0))
    window.update_sample(gone)
    window.refresh()
    assert "   ·      ·   " not in window.status_label.text() and not window.status_label.text().startswith("   ·")
    local, _, _ = simulated_source("idle")
    window.update_sample(local.sample())  # this machine's: no origin said
    window.refresh()
    assert " from " not in window.status_label.text()


def test_the_icon_summarises_the_remote_hosts_the_settings_name(remote: FakeRemote) -> None:
    from trayvml.alerts.engine import AlertSettings
    from trayvml.remote.fetch import read
    from trayvml.ui.glance import content_for
    from trayvml.ui.icon import IconContent
    from trayvml.ui.remote_hosts import in_icon, with_remote_bars

    (dgx,) = read(parse_endpoint(remote.url), 2.0, 1_800_000_000.0)
    assert in_icon([dgx], ("*",)) == [dgx] and in_icon([dgx], ("dgx-01",)) == [dgx] and in_icon([dgx], ()) == []
    alerts = AlertSettings()

    def own(sample: Sample) -> IconContent:
        return content_for(sample, "utilization", None, alerts)

    no_local_gpu = IconContent((), no_gpu=True)
    laptop = with_remote_bars(no_local_gpu, [dgx], own)
    assert [round(b.fraction, 3) for b in laptop.bars] == [0.875, 0.0] and not laptop.no_gpu  # 87 % and 0 %
    assert laptop.number == 87  # the remote GPUs' highest: the icon keeps its number
    local = content_for(_local_sample(), "utilization")
    both = with_remote_bars(local, [dgx], own)
    assert both.bars == (*local.bars, *laptop.bars)
    assert both.number == max(local.number, 87)
    stuck = IconContent((), stale=True)
    assert with_remote_bars(stuck, [dgx], own) is stuck  # a stuck local driver still shows


def test_a_summarised_host_that_does_not_answer_turns_the_tile_amber(remote: FakeRemote) -> None:
    """It left the tile as it was: a watched box gone down went unseen at a glance."""
    from trayvml.alerts.engine import AlertSettings
    from trayvml.core.levels import Level
    from trayvml.core.lines import headline_text
    from trayvml.core.sample import RemoteOrigin, SystemInfo
    from trayvml.remote.fetch import read
    from trayvml.ui.glance import content_for
    from trayvml.ui.icon import IconContent, drawn
    from trayvml.ui.remote_hosts import in_icon, with_remote_bars

    (dgx,) = read(parse_endpoint(remote.url), 2.0, 1_800_000_000.0)
    fault = RemoteOrigin(
        "http://gpu-box:9400/metrics", "", "http://gpu-box:9400/metrics refused the connection.", 1.8e9
    )
    down = Sample(1_800_000_000.0, (), (), SystemInfo("gpu-box", "", "", ""), None, remote=fault)
    assert in_icon([dgx, down], ("*",)) == [dgx, down] and in_icon([down], ("gpu-box",)) == [down]
    assert in_icon([down], ("dgx-01",)) == []  # a host the icon does not summarise stays out
    alerts = AlertSettings()

    def own(sample: Sample) -> IconContent:
        return content_for(sample, "utilization", None, alerts)

    local = content_for(_local_sample(), "utilization")
    assert local.level is Level.NORMAL and not math.isnan(local.number)
    shown = with_remote_bars(local, [dgx, down], own)
    assert shown.level is Level.WARNING  # the tile: amber
    assert shown.bars[: len(local.bars)] == local.bars and len(shown.bars) == len(local.bars) + 3
    assert math.isnan(shown.bars[-1].fraction)  # its bar empty: no value claimed
    assert math.isnan(shown.number) and shown.unreachable  # an hourglass, no number read as a warning's value
    assert shown.headline is not None
    assert headline_text(shown.headline) == "gpu-box is unreachable: the icon shows no number"
    assert drawn(shown) != drawn(with_remote_bars(local, [dgx], own))
    # A rule's warning told with a number keeps its number on the amber tile.
    hot = replace(
        alerts,
        rules={"temperature": replace(RULE_BY_KEY["temperature"].defaults, warning_enter=20.0, warning_clear=15.0)},
    )
    warm = with_remote_bars(content_for(_local_sample(), "utilization", None, hot), [down], own)
    assert warm.level is Level.WARNING and not math.isnan(warm.number) and warm.mark == "°" and not warm.unreachable
    # Before this machine's first sample, the tooltip says so after naming the host.
    from trayvml.core.lines import tooltip

    assert tooltip(None, headline=shown.headline).splitlines() == [
        "gpu-box is unreachable: the icon shows no number",
        "trayvml — starting…",
    ]
    # On a machine without GPUs of its own, the host that does not answer is the icon's one bar.
    alone = with_remote_bars(IconContent((), no_gpu=True), [down], own)
    assert alone.level is Level.WARNING and not alone.no_gpu and len(alone.bars) == 1


def test_the_window_lists_and_marks_the_alerts_of_the_host_chosen(
    qtbot: QtBot, remote: FakeRemote, tmp_path: Path
) -> None:
    remote.body = remote.body.replace(b"} 61\n", b"} 99\n")  # the remote GPU 0 at 99 °C
    app = app_reading(remote, tmp_path)
    rules = {"temperature": replace(RULE_BY_KEY["temperature"].defaults, hold_s=0.0)}
    app.apply_settings(replace(app.settings, alerts=AlertSettings(rules=rules)))
    source, _, _ = simulated_source("idle")
    app.on_sample(source.sample())
    window = app.ensure_window()
    qtbot.addWidget(window)
    table = window.alert_table
    local = AlertEvent(source.sample().timestamp_s, 1, "H100", "temperature", "firing", Severity.WARNING, "warm")
    window.add_events([local])
    choice = app.host_choice
    assert choice is not None
    app._start_remotes()
    try:
        qtbot.waitUntil(lambda: any(e.host == "dgx-01" for e in table.events), timeout=10_000)
        titles = [present(table.item(row, 3)).text() for row in range(table.rowCount())]
        assert not any(t.startswith("dgx-01") for t in titles)  # this machine shown: its alerts only
        markers = table.markers(0, math.inf, frozenset())
        assert markers and all(e.host == "" for e in markers)
        choice.box.setCurrentIndex(1)
        titles = [present(table.item(row, 3)).text() for row in range(table.rowCount())]
        assert titles and all(t.startswith("dgx-01: ") for t in titles)
        (marked,) = table.markers(0, math.inf, frozenset())
        assert (marked.host, marked.gpu_index, marked.rule) == ("dgx-01", 0, "temperature")
        choice.box.setCurrentIndex(0)
        assert table.rowCount() == len([e for e in table.events if not e.host])
        # The tray's "N active alerts" (this machine's) with the remote host in view: it showed
        # that host's alerts, none of those counted.
        choice.box.setCurrentIndex(1)
        app.show_alerts()
        assert choice.host == "" and window.tabs.currentWidget() is table
        titles = [present(table.item(row, 3)).text() for row in range(table.rowCount())]
        assert titles and not any(t.startswith("dgx-01") for t in titles)
    finally:
        app._stop_remotes()


def _local_sample():
    source, _, _ = simulated_source("idle:gpus=h100")
    return source.sample()


def test_remote_settings_survive_the_settings_file() -> None:
    from trayvml.config import from_toml, to_toml

    settings = Settings(serve_metrics=True, remote_hosts=("http://a:1",), icon_remote_hosts=("dgx-01",))
    back, notes = from_toml(to_toml(settings))
    assert (back.serve_metrics, back.remote_hosts, back.icon_remote_hosts) == (True, ("http://a:1",), ("dgx-01",))
    assert notes == []
    assert from_toml("")[0].icon_remote_hosts == ("*",) and not from_toml("")[0].serve_metrics


def test_a_remote_host_serving_simulated_gpus_says_so_in_the_menu_and_tooltip(qapp, monkeypatch) -> None:
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from tests.helpers import run_ticks
    from trayvml.prometheus.exposition import SampleCollector
    from trayvml.remote.dialects import Point, to_samples
    from trayvml.ui.remote_hosts import tooltip_lines

    source, clock, _ = simulated_source("training:gpus=h100", host=True)
    served = run_ticks(source, clock, 2)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SampleCollector(lambda: served))
    text = generate_latest(registry).decode()
    points = [Point(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]
    (sample,) = to_samples(points, "fallback", "http://sim-box:8729", served.timestamp_s)
    host = sample.system.hostname if sample.system else ""
    from trayvml.ui import remote_hosts

    monkeypatch.setattr(remote_hosts, "this_machine", lambda: host.split(".")[0].lower())  # as it is here
    tray = Tray()
    view = RemoteHostsView(tray.menu, tray.copy_action, tray.over_dbus)
    view.show_hosts(True)
    view.show([sample])
    titles = [a.text() for a in tray.menu.actions() if a.menu() is not None and a.text() != "Pause alerts"]
    # Served from this machine's simulator, it bears this machine's name: marked remote, with its URL's host.
    assert titles == [f"{host} (remote: sim-box) — simulated GPUs (training)"]
    assert tooltip_lines([sample])[0] == f"{host} (remote: sim-box) — simulated GPUs (training):"


def test_a_remote_host_named_like_this_machine_is_told_apart(monkeypatch) -> None:
    from dataclasses import replace

    from trayvml.core.sample import RemoteOrigin, Sample, SystemInfo
    from trayvml.ui import remote_hosts
    from trayvml.ui.remote_hosts import host_title, tooltip_lines

    monkeypatch.setattr(remote_hosts, "this_machine", lambda: "ws-07")
    twin = Sample(0.0, (), (), SystemInfo("ws-07", "", "", ""), None)
    twin = replace(twin, remote=RemoteOrigin("http://10.0.0.7:9400", "dcgm-exporter"))
    assert host_title(twin) == "ws-07 (remote: 10.0.0.7)"
    assert tooltip_lines([twin])[0] == "ws-07 (remote: 10.0.0.7):"
    other = replace(twin, system=SystemInfo("dgx-01", "", "", ""))
    assert host_title(other) == "dgx-01"  # a name of its own needs nothing more


def test_remote_hosts_removed_from_the_settings_leave_the_menu_and_nothing_reads_them(qapp, tmp_path: Path) -> None:
    from trayvml.config import SettingsStore
    from trayvml.core.sample import SystemInfo
    from trayvml.nvml.sim import parse_spec
    from trayvml.platform.autostart import XdgAutostart
    from trayvml.ui.app import App

    app = App(parse_spec("idle"), store=SettingsStore(tmp_path / "config.toml"), autostart=XdgAutostart(tmp_path))
    assert app.remotes is None and app.remote_hosts is None  # none configured: none made
    app.apply_settings(replace(app.settings, remote_hosts=(closed_port_url(),)))
    assert app.remotes is not None and app.remote_hosts is not None
    source, _, _ = simulated_source("idle:gpus=rtx4090")
    app.remote_hosts.show([replace(source.sample(), system=SystemInfo("dgx-01", "", "", ""))])
    assert any(line.startswith("dgx-01") for line in app.tray.remote_lines)
    app.apply_settings(replace(app.settings, remote_hosts=()))
    assert app.remotes is None and app.remote_monitors is None
    assert app.tray.remote_lines == [] and not [a for a in app.tray.menu.actions() if a.text() == "dgx-01"]
    app._stop_remotes()


def test_remote_hosts_are_read_at_their_own_interval_and_their_history_has_a_row_a_read(qapp, tmp_path: Path) -> None:
    """A remote host is read every ``remote_interval_s`` (each read costs the host too), not at this
    machine's sampling interval, and its history's finest rows are that far apart: a row a second
    of a host read every 5 s would be a line broken into dashes."""
    from trayvml.config import SettingsStore
    from trayvml.core.sample import RemoteOrigin, SystemInfo
    from trayvml.nvml.sim import parse_spec
    from trayvml.platform.autostart import XdgAutostart
    from trayvml.ui.app import App

    app = App(parse_spec("idle"), store=SettingsStore(tmp_path / "config.toml"), autostart=XdgAutostart(tmp_path))
    url = closed_port_url()
    app.apply_settings(replace(app.settings, remote_hosts=(url,)))
    remotes, monitors = present(app.remotes), present(app.remote_monitors)
    assert [s.interval_s for s in remotes.sources] == [5.0]  # the default
    source, _, _ = simulated_source("idle:gpus=rtx4090")
    read = replace(source.sample(), system=SystemInfo("dgx-01", "", "", ""), remote=RemoteOrigin(url, "dcgm-exporter"))
    monitors.take([read])
    history = monitors.monitors["dgx-01"].history
    assert history.tiers[0].step_s == 5.0
    app.apply_settings(replace(app.settings, sampling_interval_s=2.0))  # this machine's: the remotes go on
    assert app.remotes is remotes and monitors.monitors["dgx-01"].history is history
    app.apply_settings(replace(app.settings, remote_interval_s=2.5))
    assert app.remotes is not remotes and [s.interval_s for s in present(app.remotes).sources] == [2.5]
    assert monitors.monitors["dgx-01"].history.tiers[0].step_s == 2.5
    app._stop_remotes()


def _scraped(text: str, url: str) -> list:
    from prometheus_client.parser import text_string_to_metric_families

    from trayvml.remote.dialects import Point, to_samples

    points = [Point(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]
    return to_samples(points, "fallback", url, 0.0)


def test_a_remote_hosts_tooltip_and_menu_name_its_biggest_job_where_it_serves_jobs(qapp) -> None:
    """trayvml serve names each process's job: the remote GPU's line says it as this machine's do.
    An exporter that names no jobs (nvidia_gpu_exporter) gets no job line, not a bare PID; a kind
    trayvml does not know is not shown either."""
    from prometheus_client import CollectorRegistry, generate_latest

    from tests.helpers import run_ticks
    from tests.test_remote import NVIDIA_GPU_EXPORTER
    from trayvml.prometheus.exposition import SampleCollector
    from trayvml.ui.remote_hosts import tooltip_lines

    source, clock, _ = simulated_source("training:gpus=h100,start=1800", host=True)
    served = run_ticks(source, clock, 2)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SampleCollector(lambda: served, hostname="dgx-01"))
    text = generate_latest(registry).decode()
    (dgx,) = _scraped(text, "http://dgx-01:8729")
    (smi,) = _scraped(NVIDIA_GPU_EXPORTER, "http://box:9835")
    assert smi.gpus[0].processes  # it does list a process, with no job
    lines = tooltip_lines([dgx, smi])
    gpu_row = next(k for k, line in enumerate(lines) if line.startswith("  0 "))
    assert lines[gpu_row + 1].startswith("     container 3f2a9c1b7e4d (") and "GiB" in lines[gpu_row + 1]
    box = lines.index("fallback:")  # nvidia_gpu_exporter names no host: the one given
    assert len(lines[box + 1 :]) == 1 and "pid" not in lines[box + 1].lower()  # its GPU's line, no job beneath
    tray = Tray()
    view = RemoteHostsView(tray.menu, tray.copy_action, tray.over_dbus)
    view.show_hosts(True)
    view.show([dgx, smi])
    menus = [submenu(a) for a in tray.menu.actions() if a.menu() is not None and a.text() != "Pause alerts"]
    served_rows, smi_rows = ([a.text() for a in menu.actions()] for menu in menus)
    assert served_rows[0].endswith(" · container 3f2a9c1b7e4d"), served_rows
    assert smi_rows == ["0 RTX 2080 SUPER 42% · 1/8 GiB · 34°C"]  # its GPU's row, no job after it
    forged = text.replace('kind="container"', 'kind="<b>made up</b>"')
    assert "container" not in "\n".join(tooltip_lines(_scraped(forged, "http://dgx-01:8729")))


def test_a_remote_hosts_tooltip_says_how_old_its_values_are_behind_a_prometheus_server(qapp) -> None:
    from tests.test_remote import NVIDIA_GPU_EXPORTER
    from trayvml.ui.remote_hosts import tooltip_lines

    (box,) = _scraped(NVIDIA_GPU_EXPORTER, "prometheus+http://prom:9090")

    def aged(age_s: float) -> str:
        return tooltip_lines([replace(box, gpus=tuple(replace(g, values_ago_s=age_s) for g in box.gpus))])[0]

    assert aged(9.4) == "fallback, as of 9 s ago:"  # scraped every 15 s: not this second's
    assert aged(1.4) == aged(0.0) == "fallback:"  # as fresh as this machine's own


def test_a_remote_slurm_job_is_named_as_this_machines_are(qapp) -> None:
    """trayvml serve's job_name (on its job info series only) reads back as 'Slurm job 3385 (train_llm)'."""
    from prometheus_client import CollectorRegistry, generate_latest

    from tests.helpers import run_ticks
    from trayvml.core.sample import Attribution
    from trayvml.prometheus.exposition import SampleCollector
    from trayvml.ui.remote_hosts import tooltip_lines

    source, clock, _ = simulated_source("training:gpus=h100,start=1800", host=True)
    served = run_ticks(source, clock, 2)
    slurm = Attribution(slurm_job="3385", slurm_job_name="train_llm", job="3385", job_kind="slurm")
    gpu = served.gpus[0]
    processes = tuple(replace(p, attribution=slurm) for p in gpu.processes)
    served = replace(served, gpus=(replace(gpu, processes=processes), *served.gpus[1:]))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SampleCollector(lambda: served, hostname="dgx-01"))
    text = generate_latest(registry).decode()
    (dgx,) = _scraped(text, "http://dgx-01:8729")
    assert {p.attribution.slurm_job_name for p in dgx.gpus[0].processes} == {"train_llm"}
    lines = tooltip_lines([dgx])
    gpu_row = next(k for k, line in enumerate(lines) if line.startswith("  0 "))
    assert lines[gpu_row + 1].startswith("     Slurm job 3385 (train_llm) ("), lines
    unnamed = text.replace(',job_name="train_llm"', "")  # an older trayvml serve: the job's number alone
    assert unnamed != text
    (old,) = _scraped(unnamed, "http://dgx-01:8729")
    said = "\n".join(tooltip_lines([old]))
    assert "     Slurm job 3385 (" in said and "train_llm" not in said
    forged = text.replace('job_name="train_llm"', 'job_name="\x1b[2Jtrain"')  # a terminal's escape
    assert forged != text
    (odd,) = _scraped(forged, "http://dgx-01:8729")
    said = "\n".join(tooltip_lines([odd]))
    assert "     Slurm job 3385 (" in said and "\x1b" not in said


def test_remote_menu_entries_are_kept_and_their_texts_written_when_the_menu_opens(qapp) -> None:
    from trayvml.core.sample import RemoteOrigin
    from trayvml.remote.fetch import parse_exposition, to_samples

    def sample(text: str) -> Sample:
        endpoint = parse_endpoint("http://dgx-01:9400")
        points = parse_exposition(endpoint, text.encode(), "text/plain")
        (found,) = to_samples(points, "dgx-01", endpoint.url, 1_800_000_000.0)
        return found

    def rows() -> list[str]:
        return [a.text() for a in host_menus()[0].actions()]

    def host_menus() -> list:
        return [a.menu() for a in tray.menu.actions() if a.menu() is not None and a.text() != "Pause alerts"]

    busy = sample(dcgm_exposition("hostname"))
    idle = sample(dcgm_exposition("hostname").replace("} 87\n", "} 12\n"))
    tray = Tray()
    view = RemoteHostsView(tray.menu, tray.copy_action, tray.over_dbus)
    view.show_hosts(True)
    view.show([busy])
    (menu,) = host_menus()
    first = rows()
    assert len(first) == 2 and "87" in first[0]
    view.show([idle])  # the same entries: only their texts are not current until the menu opens
    assert host_menus() == [menu] and rows() == first and "12" in view.lines[1]
    tray.menu.aboutToShow.emit()
    assert host_menus() == [menu] and "12" in rows()[0] and "87" not in rows()[0] and rows()[1] == first[1]
    # Unreachable: another shape, so made at once (greyed, with why), and the host's name kept.
    fault = RemoteOrigin(
        present(idle.remote).url, "", "http://dgx-01:9400 cannot be reached: refused.", idle.timestamp_s
    )
    view.show([replace(idle, gpus=(), devices=(), remote=fault)])
    (down,) = host_menus()
    assert down.title() == "dgx-01 — unreachable" and "cannot be reached" in rows()[1]
    assert not any(a.isEnabled() for a in down.actions())
    view.show([idle])
    (back,) = host_menus()
    assert back.title() == "dgx-01" and all(a.isEnabled() for a in back.actions()) and "12" in rows()[0]
    # Values a server in between holds: the host's title says how old, as its tooltip line does.
    via = replace(present(idle.remote), url="prometheus+http://prom:9090")
    view.show([replace(idle, remote=via, gpus=tuple(replace(g, values_ago_s=40.0) for g in idle.gpus))])
    tray.menu.aboutToShow.emit()
    assert host_menus()[0].title() == "dgx-01, as of 40 s ago" and view.lines[0] == "dgx-01, as of 40 s ago:"


def test_the_remote_hosts_reads_are_shown_with_each_local_sample_in_one_tray_update(
    qtbot: QtBot, remote: FakeRemote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_reading(remote, tmp_path)
    source, _, _ = simulated_source("idle")
    app._start_remotes()
    try:
        app._remote_timer.setInterval(3_600_000)  # its own timer out of the way: only this machine's ticks
        remotes = app.remotes
        assert remotes is not None
        qtbot.waitUntil(lambda: any(s.gpus for s in remotes.samples()), timeout=10_000)  # read on its thread
        updates = []
        update = app.tray.update

        def counted_update(sample: Sample | None) -> None:
            updates.append(sample)
            update(sample)

        monkeypatch.setattr(app.tray, "update", counted_update)
        local = source.sample()
        app.on_sample(local)
        assert updates == [local]  # once, with this machine's sample
        assert "dgx-01:" in app.tray.icon.toolTip().splitlines()
        assert app.remote_monitors is not None and "dgx-01" in app.remote_monitors.monitors
        assert app._remote_timer.isActive() and app._remote_timer.remainingTime() > 3_000_000  # started anew
    finally:
        app._stop_remotes()


def test_the_same_reads_shown_again_change_nothing_and_every_new_one_is_shown(qapp, monkeypatch) -> None:
    """Each local tick shows the remotes' latest reads: the same sample objects again are skipped,
    but a new one, even one that differs only in how long its host has been unreachable, is shown."""
    from trayvml.core.sample import RemoteOrigin
    from trayvml.remote.fetch import parse_exposition, to_samples
    from trayvml.ui import remote_hosts

    endpoint = parse_endpoint("http://dgx-01:9400")
    points = parse_exposition(endpoint, dcgm_exposition("hostname").encode(), "text/plain")
    (up,) = to_samples(points, "dgx-01", endpoint.url, 1_800_000_000.0)
    fault = RemoteOrigin(endpoint.url, "", "http://dgx-01:9400 cannot be reached: refused.", up.timestamp_s)
    down = replace(up, gpus=(), devices=(), remote=fault)
    later = replace(down, timestamp_s=down.timestamp_s + 70.0)  # the same fault a minute on: a new sample
    tray = Tray()
    view = RemoteHostsView(tray.menu, tray.copy_action, tray.over_dbus)
    made: list[list[Sample]] = []
    real = remote_hosts.tooltip_lines

    def counted(samples: list[Sample]) -> list[str]:
        made.append(samples)
        return real(samples)

    monkeypatch.setattr(remote_hosts, "tooltip_lines", counted)
    changed: list[list[str]] = []
    view.changed.connect(lambda: changed.append(list(view.lines)))
    view.show([up])
    view.show([up])  # a new list, the same sample: nothing made again
    assert len(made) == 1 and len(changed) == 1 and "87" in view.lines[1]
    view.show([down])
    view.show([later])
    assert len(made) == 3 and len(changed) == 3
    assert "(1 min 10 s)" in changed[2][0] and "(1 min 10 s)" not in changed[1][0]
    view.show([up, up])  # another host count, the first the same object
    assert len(made) == 4 and len(view.lines) == 2 * len(changed[0])


def test_reads_the_gui_thread_missed_while_held_up_all_reach_the_hosts_history(
    qapp, remote: FakeRemote, tmp_path: Path
) -> None:
    """The GUI thread takes the remotes' reads each tick; one held up for seconds (a window opening
    on a slow machine) left a gap of those seconds in the remote host's lines. Three reads a second
    apart, then one take: the host's history holds all three, and the window is told of the newest."""
    from trayvml.core.clock import ManualClock

    app = app_reading(remote, tmp_path)
    assert app.remotes is not None and app.remote_monitors is not None
    (source,) = app.remotes.sources
    clock = source.clock = ManualClock()
    start_s = clock.now_s()
    for _ in range(3):  # read on this thread, the remote's own not started: the GUI thread takes none
        source.read_once()
        clock.advance_s(1.0)
    told: list[Sample] = []

    class Choice:
        def remote_sampled(self, sample: Sample) -> None:
            told.append(sample)

        def refresh_hosts(self) -> None:
            pass

    app.host_choice = Choice()  # type: ignore[assignment]
    app.take_remote_samples()
    history = app.remote_monitors.monitors["dgx-01"].history
    series = history.gpu_series("temperature_gpu_c", start_s - 0.5, start_s + 2.5, 100)
    assert series is not None
    assert [t - start_s for t, row in zip(series.times_s, series.mean, strict=True) if row[0] == row[0]] == [
        0.0,
        1.0,
        2.0,
    ]
    assert [s.timestamp_s - start_s for s in told] == [2.0]  # the newest of the host: the window draws the rest
    app.take_remote_samples()  # nothing new read: nothing taken again
    assert len(told) == 1
    assert source.unseen() == []


def test_one_hosts_reads_through_two_remotes_are_taken_in_time_order() -> None:
    """A host reached directly and through a Prometheus server feeds one monitor: after a held-up
    GUI thread its reads come in time order, not one remote's then the other's (a history going
    back in time starts its coarse buckets again)."""
    from trayvml.core.clock import ManualClock
    from trayvml.remote.source import RemoteSource

    made: list[Sample] = []

    def reader(endpoint: object, timeout_s: float, now_s: float, cache: object) -> list[Sample]:
        made.append(Sample(now_s, (), (), None, None))
        return [made[-1]]

    clock = ManualClock()
    remotes = Remotes([parse_endpoint("http://a:9400"), parse_endpoint("http://b:9400")])
    remotes.sources = [
        RemoteSource(parse_endpoint(u), clock=clock, reader=reader) for u in ("http://a:9400", "http://b:9400")
    ]
    remotes.keep_backlog()
    for _ in range(3):
        for source in remotes.sources:
            source.read_once()
        clock.advance_s(1.0)
    assert [s.timestamp_s for s in remotes.unseen()] == sorted(s.timestamp_s for s in made)
    assert remotes.unseen() == []


def test_a_remote_hosts_history_made_anew_starts_with_what_its_server_kept(remote: FakeRemote) -> None:
    """Another interval or history length makes a kept host's history anew: from what a Prometheus
    server kept of the host, as a new host's is (made empty, its graphs started again)."""
    from trayvml.alerts.dispatch import Dispatcher
    from trayvml.core.clock import ManualClock
    from trayvml.history.timeline import History
    from trayvml.monitor.remotes import RemoteMonitors
    from trayvml.remote.fetch import read

    (now,) = read(parse_endpoint(remote.url), 2.0, 1_800_000_000.0)
    kept = [replace(now, timestamp_s=now.timestamp_s - 60 + k) for k in range(3)]  # the server's past
    monitors = RemoteMonitors(Dispatcher(ManualClock()), AlertSettings(), History, lambda host, before_s: kept)

    def times() -> list[float]:
        span = (now.timestamp_s - 120, now.timestamp_s + 10)
        series = present(monitors.histories["dgx-01"].gpu_series("temperature_gpu_c", *span, 1000))
        return [float(t) for t, row in zip(series.times_s, series.mean, strict=True) if not math.isnan(row[0])]

    monitors.take([now])
    assert times() == [s.timestamp_s for s in kept] + [now.timestamp_s]
    monitors.renew_history("dgx-01", History())
    monitors.take([replace(now, timestamp_s=now.timestamp_s + 1)])
    assert times() == [s.timestamp_s for s in kept] + [now.timestamp_s + 1]


def test_a_host_read_through_two_remotes_is_shown_by_the_one_that_answers(qtbot: QtBot, tmp_path: Path) -> None:
    """dgx-01 read from its exporter and through a server; the server down: the window on dgx-01
    showed it unreachable every tick while its values came through the other."""
    first, second = FakeRemote(), FakeRemote()
    try:
        first.body = second.body = dcgm_exposition("hostname").encode()
        app = app_reading(first, tmp_path, second)
        window, choice = window_of(qtbot, app)
        try:

            def taken(check: Callable[[], bool]) -> Callable[[], bool]:
                def take_then_check() -> bool:
                    app.take_remote_samples()
                    return check()

                return take_then_check

            qtbot.waitUntil(taken(lambda: choice.box.count() == 2), timeout=10_000)
            choice.box.setCurrentIndex(1)
            first.status = 503
            qtbot.waitUntil(taken(lambda: any(not s.gpus for s in present(app.remotes).samples())), timeout=10_000)
            for _ in range(5):
                app.take_remote_samples()
                assert window.sample is not None and len(window.sample.gpus) == 2
                qtbot.wait(200)
        finally:
            app._stop_remotes()
    finally:
        first.stop()
        second.stop()


def test_the_icon_colours_remote_gpus_without_this_machines_per_gpu_overrides(qapp, remote: FakeRemote) -> None:
    """This machine's GPU 0 with temperature alerts off (Settings, Per GPU): a remote GPU 0 at
    99 °C is still coloured as hot in the icon, as its alerts are (remote_alert_settings)."""
    from trayvml.alerts.engine import AlertEngine
    from trayvml.core.levels import Level
    from trayvml.remote.fetch import read

    remote.body = remote.body.replace(b"} 61\n", b"} 99\n")  # GPU 0 at 99 °C
    (hot,) = read(parse_endpoint(remote.url), 2.0, 1_800_000_000.0)
    off = {0: {"temperature": replace(RULE_BY_KEY["temperature"].defaults, enabled=False)}}
    tray = Tray(engine=AlertEngine(AlertSettings(overrides=off)))
    tray.set_metric("temperature")
    tray.remote_icon_samples = [hot]
    source, _, _ = simulated_source("idle:gpus=h100")
    tray.update(source.sample())
    assert tray._content is not None
    remote_bar = tray._content.bars[1]  # after this machine's one GPU
    assert remote_bar.level is not Level.NORMAL


def test_remote_reads_wait_for_this_machines_sample_at_most_the_shorter_interval(qapp, tmp_path: Path) -> None:
    """This machine sampled every 10 s, a host read each second: its reads are taken by the timer
    within 1.5 s, not 15 (30 piled up by then, and the oldest were dropped); a new sampling
    interval sets the timer again."""
    from trayvml.config import SettingsStore
    from trayvml.nvml.sim import parse_spec
    from trayvml.platform.autostart import XdgAutostart
    from trayvml.ui.app import App

    store = SettingsStore(tmp_path / "config.toml")
    store.save(Settings(sampling_interval_s=10.0, remote_interval_s=1.0, remote_hosts=(closed_port_url(),)))
    app = App(parse_spec("idle"), store=store, autostart=XdgAutostart(tmp_path))
    try:
        app._start_remotes()
        assert app._remote_timer.isActive() and app._remote_timer.interval() == 1500
        app.apply_settings(replace(app.settings, sampling_interval_s=2.0, remote_interval_s=5.0))
        assert app._remote_timer.isActive() and app._remote_timer.interval() == 3000
        app.apply_settings(replace(app.settings, sampling_interval_s=0.5))  # the remotes go on: the timer anew
        assert app._remote_timer.isActive() and app._remote_timer.interval() == 750
    finally:
        app._stop_remotes()


@pytest.mark.parametrize(
    ("now_s", "delay_s"), [(12.0, 0.0), (8.8, 0.0), (9.95, 0.06), (1_800_000_004.5, 0.51), (10.0, 0.0)]
)
def test_a_read_out_of_turn_waits_for_the_next_interval_when_this_one_is_ending(now_s: float, delay_s: float) -> None:
    """Begun at 9.95 s of a 5 s interval it would end in the next one, and the next read is paced
    to the one after: the 10-15 s row of the host's history was left empty."""
    from trayvml.remote.plain import hurry_delay_s

    assert hurry_delay_s(now_s, 5.0) == pytest.approx(delay_s)


def test_opening_the_menu_reads_the_remote_hosts_now(qapp, qtbot: QtBot, remote: FakeRemote, tmp_path: Path) -> None:
    """Read every minute, a host's values in the opened menu were up to a minute old: opening it
    reads the host at once."""
    from trayvml.config import SettingsStore
    from trayvml.nvml.sim import parse_spec
    from trayvml.platform.autostart import XdgAutostart
    from trayvml.ui.app import App

    store = SettingsStore(tmp_path / "config.toml")
    store.save(Settings(remote_interval_s=60.0))
    app = App(parse_spec("idle"), store=store, autostart=XdgAutostart(tmp_path), remote_urls=(remote.url,))
    try:
        app._start_remotes()
        monitors = present(app.remote_monitors).monitors
        qtbot.waitUntil(lambda: "dgx-01" in monitors, timeout=10_000)  # the first read, taken by the timer
        first_s = present(monitors["dgx-01"].latest).timestamp_s
        qtbot.wait(1200)  # values read within a second are not read again (plain.HURRY_AFTER_S)
        app.tray.menu.aboutToShow.emit()
        qtbot.waitUntil(lambda: present(monitors["dgx-01"].latest).timestamp_s > first_s, timeout=10_000)
        assert len(remote.seen) == 2
    finally:
        app._stop_remotes()


def test_the_tooltip_of_many_remote_hosts_is_bounded_and_says_what_it_leaves_out() -> None:
    """16 hosts of 8 GPUs made a tooltip of 154 lines, far taller than any screen; a host of 12
    GPUs one line each. Bounded now, what is left out counted."""
    from trayvml.ui.remote_hosts import TOOLTIP_GPUS_PER_HOST, TOOLTIP_REMOTE_LINES, tooltip_lines

    source, _, _ = simulated_source("idle:gpus=h100*12")
    big = source.sample()
    lines = tooltip_lines([big])
    assert len(lines) == 1 + TOOLTIP_GPUS_PER_HOST + 1 and lines[-1] == "  … and 4 more GPUs"
    source, _, _ = simulated_source("idle:gpus=h100*8")
    sample = source.sample()
    hosts = [replace(sample, system=replace(present(sample.system), hostname=f"gpu{k:02d}")) for k in range(16)]
    lines = tooltip_lines(hosts)
    assert (
        len(lines) <= TOOLTIP_REMOTE_LINES + 1 and lines[-1].startswith("… and ") and lines[-1].endswith(" more hosts")
    )
    shown = sum(1 for line in lines if not line.startswith(" ") and not line.startswith("…"))
    assert lines[-1] == f"… and {16 - shown} more hosts"
