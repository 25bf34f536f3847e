"""Remote hosts in the tray: a menu section and tooltip lines per host, grouped by host.

The remotes are read on threads of their own (trayvml.remote.source); this view only looks at
what they read last, on a timer, so a slow or dead host never delays the GUI or local sampling.
A host that does not answer is shown greyed, with the reason and since when, never with the
values it had before.
"""

from __future__ import annotations

import logging
import math
import operator
import socket
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from trayvml.core.errors import TrayvmlError
from trayvml.core.levels import Level
from trayvml.core.lines import Headline, gpu_lines, job_line, simulation_text
from trayvml.core.safe_text import clean, menu_label, shorten
from trayvml.core.sample import GpuSample, Sample, said_age_s
from trayvml.core.units import format_clock, format_duration
from trayvml.remote.fetch import Endpoint, capped_remotes, parse_endpoint
from trayvml.ui.icon import Bar, IconContent, icon_content

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)
translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)


def endpoints_from(settings_urls: Sequence[str], cli_urls: Sequence[str]) -> tuple[list[Endpoint], list[str]]:
    """The settings' remote hosts (credentials allowed there) and ``--remote`` URLs (credentials taken
    from the settings' entry for the same URL); and a sentence for each URL that cannot be used."""
    problems = []
    stored: dict[str, Endpoint] = {}
    for text in settings_urls:
        try:
            endpoint = parse_endpoint(text, credentials_allowed=True)
        except TrayvmlError as error:
            problems.append(translate("RemoteHosts", "Settings, remote hosts: {error}").format(error=error))
            continue
        stored[endpoint.url] = endpoint
    found = dict(stored)
    for text in cli_urls:
        try:
            endpoint = parse_endpoint(text)
        except TrayvmlError as error:
            problems.append(str(error))
            continue
        found.setdefault(endpoint.url, endpoint)
    kept, left_out = capped_remotes(list(found.values()))
    if left_out:
        problems.append(left_out)
    return kept, problems


def unreachable_since(sample: Sample) -> str:
    """``unreachable since 14:02:10 (3 min 10 s)``; "" while the host answers."""
    remote = sample.remote
    if remote is None or not remote.fault:
        return ""
    if math.isnan(remote.since_s):
        return translate("RemoteHosts", "unreachable")
    return translate("RemoteHosts", "unreachable since {time} ({duration})").format(
        time=format_clock(remote.since_s), duration=format_duration(sample.timestamp_s - remote.since_s)
    )


def host_status(sample: Sample) -> str:
    """``unreachable since 14:02:10 (3 min 10 s): URL cannot be reached: …``; "" while it answers."""
    since = unreachable_since(sample)
    if not since or not sample.remote:
        return ""
    return translate("RemoteHosts", "{since}: {fault}").format(since=since, fault=sample.remote.fault)


def host_name(sample: Sample) -> str:
    return shorten(clean(sample.system.hostname)) if sample.system else "?"


def this_machine() -> str:
    """This machine's short host name, as a remote exporter would report it."""
    return socket.gethostname().split(".")[0].lower()


def host_title(sample: Sample) -> str:
    """The host's name, and that its GPUs are simulated where its exporter says so (serve --simulate).

    A remote named like this machine (a container's exporter, a cloned image, localhost served)
    would read as this machine's GPUs: it is marked remote, with the host of its URL.
    """
    name = host_name(sample)
    if sample.remote is not None and name.split(".")[0].lower() == this_machine():
        where = urlsplit(sample.remote.url).hostname or sample.remote.url
        name = translate("RemoteHosts", "{host} (remote: {where})").format(host=name, where=shorten(clean(where)))
    if not sample.simulation:
        return name
    return translate("RemoteHosts", "{host} — {simulation}").format(host=name, simulation=simulation_text(sample))


def named_jobs(gpu: GpuSample) -> GpuSample:
    """The GPU with only the processes its exporter named a job for (trayvml serve does; others
    name none): a bare PID of another machine is not shown as its job."""
    named = tuple(p for p in gpu.processes if p.attribution.job)
    return gpu if len(named) == len(gpu.processes) else replace(gpu, processes=named)


def values_age(sample: Sample) -> str:
    """``, as of 9 s ago`` where a server in between holds the host's values (Prometheus), ``,
    unchanged for 9 s`` where the exporter answered the same values again, else ""."""
    age_s = said_age_s(sample.values_ago_s)
    if not age_s:
        return ""
    if sample.remote is not None and not sample.remote.via_server:
        return translate("RemoteHosts", ", unchanged for {age} s").format(age=age_s)
    return translate("RemoteHosts", ", as of {age} s ago").format(age=age_s)


TOOLTIP_GPUS_PER_HOST = 8  # a host's GPU lines in the tooltip at most, then how many more
TOOLTIP_REMOTE_LINES = 40  # the remote hosts' lines at most (16 hosts of 8 GPUs made 154, past any screen)


def tooltip_lines(samples: Sequence[Sample]) -> list[str]:
    """Per host: its name, then its GPU lines indented, each with its biggest job where the host
    names jobs, or why it has none; bounded (TOOLTIP_GPUS_PER_HOST, TOOLTIP_REMOTE_LINES), what is
    left out counted."""
    lines: list[str] = []
    for shown, sample in enumerate(samples):
        host: list[str] = []
        status = host_status(sample)
        if status:
            host.append(f"{host_title(sample)}: {shorten(clean(status), 160)}")
        else:
            host.append(f"{host_title(sample)}{values_age(sample)}:")
            pairs = list(zip(sample.gpus, gpu_lines(sample), strict=False))
            for gpu, line in pairs[:TOOLTIP_GPUS_PER_HOST]:
                host.append(f"  {line}")
                job = job_line(named_jobs(gpu))
                if job:
                    host.append(f"     {job}")  # indented: it belongs to the GPU above
            if len(pairs) > TOOLTIP_GPUS_PER_HOST:
                more = translate("RemoteHosts", "  … and {count} more GPUs")
                host.append(more.format(count=len(pairs) - TOOLTIP_GPUS_PER_HOST))
        if lines and len(lines) + len(host) > TOOLTIP_REMOTE_LINES:
            lines.append(translate("RemoteHosts", "… and {count} more hosts").format(count=len(samples) - shown))
            break
        lines += host
    return lines


def in_icon(samples: Sequence[Sample], hosts: Sequence[str]) -> list[Sample]:
    """The remote samples whose host the icon summarises (``hosts`` from the settings; "*": all),
    those that answered with GPUs and those that do not answer."""
    return [
        s
        for s in samples
        if (s.gpus or s.unreachable) and ("*" in hosts or (s.system is not None and s.system.hostname in hosts))
    ]


def with_remote_bars(
    local: IconContent, remotes: Sequence[Sample], content_of: Callable[[Sample], IconContent]
) -> IconContent:
    """The icon's bars: this machine's, then each summarised remote host's GPUs (``content_of``: a
    remote sample's own content, ``glance.content_for``'s). A stuck local driver still shows as
    stale; a machine without GPUs shows the remote ones alone.

    A host that does not answer is an empty bar at a warning's level: the tile turns amber, and
    where nothing worse is told an hourglass takes the number's place (the tooltip's first line
    names the host). Its tile stayed as it was: a watched box gone down went unseen at a glance."""
    if local.stale or not remotes:
        return local
    bars = [] if local.no_gpu else list(local.bars)
    contents = [] if local.no_gpu else [local]
    for sample in remotes:
        if sample.unreachable:
            bars.append(Bar(math.nan, Level.WARNING))
            gone = Headline(math.nan, "", -1, Level.WARNING, host_name(sample), unreachable=True)
            contents.append(IconContent((), headline=gone))
            continue
        remote = content_of(sample)
        bars += remote.bars
        if remote.headline is not None:
            contents.append(replace(remote, headline=replace(remote.headline, host=host_name(sample))))
    if not bars:
        return local
    # The number is the one of the worst level across every GPU the bars show (the highest value
    # among equals), as it is for this machine's alone: the tile and the number tell of one thing.
    told = [c for c in contents if c.headline is not None]
    if not told:
        return icon_content(bars)
    worst = max(told, key=_rank)
    return icon_content(bars, number=worst.number, mark=worst.mark, headline=worst.headline)


def _rank(content: IconContent) -> tuple[int, float]:
    assert content.headline is not None
    return int(content.headline.level), -math.inf if math.isnan(content.number) else content.number


class RemoteHostsView(QObject):
    """The remote hosts' section of the tray menu and their tooltip lines: shows, reads nothing.

    As the tray's own GPU entries: the section's shape (which hosts, each one's GPUs, or that it is
    unreachable) follows each read at once, so that a tray host measuring the menu sees every
    entry; the entries' texts are written when the menu is about to be shown (or while it is
    open). Rewriting them on every read sent each change to the tray host over D-Bus while nobody
    had the menu open, and made every entry anew each second (most of a remote host's cost in the
    tray)."""

    changed = Signal()  # the lines changed: the tooltip should be made again

    def __init__(self, menu: QMenu, anchor: QAction, over_dbus: bool = False) -> None:
        super().__init__()
        self._over_dbus = over_dbus  # labels escaped for where the menu is shown (names come from remotes)
        self.samples: list[Sample] = []
        self.lines: list[str] = []
        self._menu = menu
        self._anchor = anchor  # the section goes before this entry
        self._hosts: list[QMenu] = []  # one submenu a host, in the order of ``samples``
        self._shape: tuple[tuple[bool, int], ...] = ()  # per host: unreachable, GPU rows
        self._texts_of: list[Sample] | None = None  # the samples the entries' texts were written from
        self._header = QAction(translate("RemoteHosts", "Remote hosts"), menu)
        self._header.setEnabled(False)
        self._header.setVisible(False)
        menu.insertAction(anchor, self._header)
        menu.aboutToShow.connect(self._write_texts)

    def show_hosts(self, any_host: bool) -> None:
        """The section's header, where remote hosts are configured."""
        self._header.setVisible(any_host)

    def show(self, samples: list[Sample]) -> None:
        """Each host's latest sample (or why it has none), in the menu and the tooltip's lines."""
        if len(samples) == len(self.samples) and all(map(operator.is_, samples, self.samples)):
            # The same reads as last time (a sample is made anew for whatever changes, a host's
            # fault and its age too): the same section and lines, nothing to make again.
            return
        self.samples = samples
        unreachable = [bool(host_status(s)) for s in samples]
        shape = tuple((down, 2 if down else len(s.gpus)) for down, s in zip(unreachable, samples, strict=True))
        if shape != self._shape:
            self._shape = shape
            self._build(shape)
        if self._menu.isVisible():  # open (Qt's own menu): follow live
            self._write_texts()
        lines = tooltip_lines(samples)
        if lines != self.lines:
            self.lines = lines
            self.changed.emit()

    def _label(self, text: str) -> str:
        return menu_label(text, self._over_dbus)

    def _build(self, shape: tuple[tuple[bool, int], ...]) -> None:
        """A submenu a host with its rows (greyed where it is unreachable: no values), texts and all."""
        for host in self._hosts:
            self._menu.removeAction(host.menuAction())
            host.deleteLater()
        self._hosts = []
        for unreachable, rows in shape:
            host = QMenu(self._menu)
            for _ in range(rows):
                # Not greyed while it answers: grey says "no current values".
                host.addAction("").setEnabled(not unreachable)
            self._menu.insertAction(self._anchor, host.menuAction())
            self._hosts.append(host)
        self._texts_of = None
        self._write_texts()

    def _write_texts(self) -> None:
        if self._texts_of is self.samples:
            return
        self._texts_of = self.samples
        for sample, host in zip(self.samples, self._hosts, strict=False):
            status = host_status(sample)
            rows = host.actions()
            if status:
                host.setTitle(
                    self._label(translate("RemoteHosts", "{host} — unreachable").format(host=host_name(sample)))
                )
                host.setToolTip(status)
                # When it went and why, in two lines short enough for a menu.
                assert sample.remote is not None
                texts = [unreachable_since(sample), shorten(clean(sample.remote.fault), 90)]
            else:
                # With its values' age, as the tooltip: a Prometheus server answers its last scrape.
                host.setTitle(self._label(host_title(sample) + values_age(sample)))
                host.setToolTip("")
                texts = []
                for gpu, text in zip(sample.gpus, gpu_lines(sample, compact=True), strict=False):
                    job = job_line(named_jobs(gpu), compact=True)  # short rows, as this machine's
                    texts.append(f"{text} · {job}" if job else text)
            for action, text in zip(rows, texts, strict=False):
                action.setText(self._label(text))
