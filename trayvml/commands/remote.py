"""``--remote`` for ``snapshot`` and ``log``: remote hosts beside (or instead of) the local GPUs."""

from __future__ import annotations

import json
import math
import socket
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trayvml.core.clock import Ticker
from trayvml.core.errors import TrayvmlError
from trayvml.core.i18n import translate
from trayvml.core.lines import origin_text, simulation_text
from trayvml.core.safe_text import SENTENCE_LIMIT, shown_url, terminal_text
from trayvml.core.sample import Sample
from trayvml.core.units import format_clock, format_duration
from trayvml.remote.fetch import Endpoint, capped_remotes, parse_endpoint

if TYPE_CHECKING:
    from trayvml.commands.csvlog import Column
    from trayvml.remote.source import Remotes
    from trayvml.source import Source


def endpoints(urls: Sequence[str], config: str | None) -> list[Endpoint]:
    """Endpoints for ``--remote`` URLs; credentials come from the settings file's ``remote_hosts``
    entry for the same URL (raises TrayvmlError for a bad URL or credentials on the command line)."""
    from trayvml.config import SettingsStore, default_path

    # Left where it is when broken (these commands never save the settings); a named file's note
    # was said already (cli._check_settings), the default one's is said here.
    settings, note = SettingsStore(Path(config) if config else default_path()).load(only_read=True)
    if note and config is None:
        print(f"trayvml: {note}", file=sys.stderr)
    stored: dict[str, Endpoint] = {}
    for text in settings.remote_hosts:
        try:
            endpoint = parse_endpoint(text, credentials_allowed=True)
        except TrayvmlError as error:
            print(translate("remote", "trayvml: settings, remote_hosts: {error}").format(error=error), file=sys.stderr)
            continue
        stored[endpoint.url] = endpoint
    found = []
    for url in urls:
        endpoint = parse_endpoint(url)
        found.append(stored.get(endpoint.url, endpoint))
    kept, left_out = capped_remotes(found)
    if left_out:
        print(f"trayvml: {left_out}", file=sys.stderr)
    return kept


def hostname_of(sample: Sample) -> str:
    return sample.system.hostname if sample.system else socket.gethostname()


def _fault_line(sample: Sample) -> str:
    remote = sample.remote
    assert remote is not None
    # The sentence quotes the remote's own words (an HTTP reason): cleaned, and cut only when absurd.
    host, fault = terminal_text(hostname_of(sample)), terminal_text(remote.fault, 500)
    if math.isnan(remote.since_s):
        return translate("remote", "{host}: unreachable: {fault}").format(host=host, fault=fault)
    return translate("remote", "{host}: unreachable (since {time}, {duration}): {fault}").format(
        host=host,
        time=format_clock(remote.since_s),
        duration=format_duration(sample.timestamp_s - remote.since_s),
        fault=fault,
    )


def text_snapshot(local: Sample | None, remotes: Sequence[Sample], full: bool) -> str:
    """Each host's GPUs, every GPU line starting with its host; an unreachable host in one line."""
    from trayvml.commands.report import text_snapshot as one_host

    blocks = []
    if local is not None:
        blocks.append(one_host(local, full=full, host_column=hostname_of(local)))
    for sample in remotes:
        if sample.unreachable:
            blocks.append(_fault_line(sample))
        else:
            text = one_host(sample, full=full, host_column=hostname_of(sample))
            origin = origin_text(sample, shown_url(sample.remote.url, 500) if sample.remote else "")
            blocks.append(text + ("\n  " + translate("remote", "({origin})").format(origin=origin) if origin else ""))
    return "\n".join(blocks)


def json_snapshot(local: Sample | None, local_note: str, remotes: Sequence[Sample]) -> dict[str, Any]:
    """The local snapshot's shape, with every remote GPU added to ``gpus`` (each has ``host``) and a
    ``remotes`` list saying how each remote host was read, or why it could not be."""
    from trayvml.commands.report import json_snapshot as one_host

    document = one_host(local) if local is not None else {"gpus": [], "host": None}
    document["local_gpus"] = local_note or None
    document["remotes"] = []
    for sample in remotes:
        remote = sample.remote
        assert remote is not None
        part = one_host(sample)
        document["gpus"].extend(part["gpus"])
        document["remotes"].append(
            {
                "url": remote.url,
                "host": hostname_of(sample),
                "kind": remote.kind or None,
                "reachable": not remote.fault,
                "message": remote.fault or None,
                "since_s": None if math.isnan(remote.since_s) else remote.since_s,
                # How long before the snapshot its values were read: a Prometheus server's last scrape.
                "values_age_s": None if math.isnan(sample.values_ago_s) else round(sample.values_ago_s, 3),
                "host_metrics": part["host"],
                "driver_version": sample.system.driver_version if sample.system else None,
                "simulated": sample.simulation or None,  # its exporter serves simulated GPUs (serve --simulate)
            }
        )
    return document


def print_snapshot(local: Sample, remotes: Sequence[Sample], as_json: bool, full: bool) -> int:
    """The ``snapshot --remote`` output; 0 while any host has current values, else 3."""
    problem = local.problem
    note = f"No local GPU values: {problem[1]}" if problem is not None else ""  # in JSON: English, as its keys
    if as_json:
        print(json.dumps(json_snapshot(local, note, remotes), indent=2, ensure_ascii=False))
    else:
        shown = local if problem is None else None
        print(text_snapshot(shown, remotes, full))
    if problem is not None:
        print(
            translate("remote", "trayvml: No local GPU values: {problem}").format(problem=problem[1]), file=sys.stderr
        )
    reachable = problem is None or any(s.remote is not None and not s.remote.fault for s in remotes)
    return 0 if reachable else 3


def log_columns(columns: list[Column]) -> list[Column]:
    """The columns with ``hostname`` after ``timestamp`` (or first), unless --query names it already."""
    from trayvml.commands.csvlog import COLUMNS

    host = COLUMNS["hostname"]
    if host in columns:
        return columns
    at = 1 if columns and columns[0] is COLUMNS["timestamp"] else 0
    return [*columns[:at], host, *columns[at:]]


# Two reads of a GPU whose values were read within this of each other read the same values: a
# Prometheus server's age of them is on its own clock, so each answer puts the scrape a request's
# delay apart (milliseconds); scrapes come a second apart at the least.
SAME_READ_MS = 500


class RemoteLog:
    """``log --remote``: each tick, a row per GPU of every host whose values are current.

    A host without current values writes no rows (old values are never logged as new); stderr says
    so once when it goes and once when it comes back. A GPU's values are written once, stamped with
    when they were read: its remote's thread reads on its own beat (a tick may find the sample an
    earlier tick wrote), and a Prometheus server (or an exporter that collects every 30 s) answers
    the same values read after read, each of which would have passed them off as read at its time.
    """

    def __init__(
        self,
        path: str,
        columns: list[Column],
        units: bool,
        source: Source,
        remotes: Remotes,
        demand: frozenset[str],
        header: bool = True,
    ) -> None:
        from trayvml.commands.csvlog import CsvLog

        self.log = CsvLog(path, columns, units=units, header=header)
        self.path = path
        self.source = source
        self.remotes = remotes
        self.demand = demand
        self._down: dict[str, str] = {}  # "this machine" or "host (URL)" -> the sentence last said
        # (URL, host, GPU) -> when its last row's values were read (ms)
        self._logged: dict[tuple[str, str, int], int] = {}
        self._simulated: set[str] = set()  # hosts already said to serve simulated GPUs

    def _say(self, who: str, problem: str) -> None:
        if self._down.get(who) != problem:
            # A remote host's words (its name, its HTTP reason, its error): no escape sequence
            # reaches the terminal, nor an endless line.
            shown_who, shown = terminal_text(who, SENTENCE_LIMIT), terminal_text(problem, SENTENCE_LIMIT)
            if problem:
                silent = translate("remote", "trayvml: {problem} (no rows for {host} until it answers)")
                print(silent.format(problem=shown, host=shown_who), file=sys.stderr)
            elif who in self._down:
                print(translate("remote", "trayvml: {host} answers again").format(host=shown_who), file=sys.stderr)
            self._down[who] = problem

    def _say_simulated(self, sample: Sample) -> None:
        """A CSV row has no room to say its GPUs are made up: stderr says it, once per host."""
        host = hostname_of(sample)
        if sample.simulation and host not in self._simulated:
            self._simulated.add(host)
            what = translate("remote", "trayvml: {host} serves {simulation}, not real hardware")
            print(what.format(host=terminal_text(host), simulation=simulation_text(sample)), file=sys.stderr)

    def _current_gpus(self, sample: Sample, url: str) -> Sample:
        """``sample`` without the GPUs whose series stopped behind a Prometheus server (no rows of
        values it does not have); stderr says so once when one goes and once when it comes back."""
        for gpu in sample.gpus:
            who = translate("remote", "{host} ({url}) GPU {index}").format(
                host=hostname_of(sample), url=url, index=gpu.index
            )
            self._say(who, translate("remote", "the server has no new values of it") if gpu.stopped_s else "")
        kept = [(gpu, device) for gpu, device in zip(sample.gpus, sample.devices, strict=True) if not gpu.stopped_s]
        if len(kept) == len(sample.gpus):
            return sample
        return replace(sample, gpus=tuple(g for g, _ in kept), devices=tuple(d for _, d in kept))

    def _not_logged(self, sample: Sample, url: str) -> list[Sample]:
        """``sample``'s GPUs whose values have no row yet, a sample for each time their values were
        read (the read's time, less their age: ``values_ago_s``; the read's own where that is not known)."""
        read_at: dict[int, list[int]] = {}  # ms -> the GPUs (positions in the sample) read then
        for k, gpu in enumerate(sample.gpus):
            age_s = 0.0 if math.isnan(gpu.values_ago_s) else gpu.values_ago_s
            read_ms = round((sample.timestamp_s - age_s) * 1000)
            key = (url, hostname_of(sample), gpu.index)
            last_ms = self._logged.get(key)
            if last_ms is None or abs(read_ms - last_ms) >= SAME_READ_MS:
                self._logged[key] = read_ms
                read_at.setdefault(read_ms, []).append(k)
        return [
            replace(
                sample,
                timestamp_s=read_ms / 1000,
                gpus=tuple(sample.gpus[k] for k in kept),
                devices=tuple(sample.devices[k] for k in kept),
            )
            for read_ms, kept in sorted(read_at.items())
        ]

    def run(self, count: int | None, interval_s: float) -> int:
        self.remotes.begin_read()()  # the first tick has every host that answers
        self.remotes.start()
        ticker = Ticker(interval_s, self.source.clock)  # paced on the monotonic clock, stamped with the wall clock
        ticks = 0
        try:
            while True:
                local = self.source.sample(self.demand)
                problem = local.problem
                self._say(translate("remote", "this machine"), problem[1] if problem else "")
                if problem is None:
                    self.log.append(local)
                for sample in self.remotes.samples():
                    fault = sample.remote.fault if sample.remote else ""
                    url = sample.remote.url if sample.remote else ""
                    self._say(f"{hostname_of(sample)} ({url})", fault)
                    if not fault:
                        self._say_simulated(sample)
                    if not fault:
                        for rows in self._not_logged(self._current_gpus(sample, url), url):
                            self.log.append(rows)
                ticks += 1
                if count is not None and ticks >= count:
                    break
                ticker.wait_next()
        except KeyboardInterrupt:
            pass  # Ctrl-C is how a user ends an open-ended log
        finally:
            self.log.close()
        logged = (
            translate("remote", "trayvml: {count} ticks logged to {path}")
            if ticks != 1
            else translate("remote", "trayvml: {count} tick logged to {path}")
        )
        print(logged.format(count=ticks, path=self.log.shown_path), file=sys.stderr)
        return 0
