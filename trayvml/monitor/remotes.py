"""The remote hosts' monitors: one per host, made when the host first answers (no Qt).

The remotes are read on threads of their own (trayvml.remote.source); this takes what they read
last, never waiting on a host. A host that does not answer feeds nothing: its monitor keeps its
past, and it is shown unreachable, never with the values it had before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from trayvml.alerts.dispatch import Dispatcher
from trayvml.alerts.engine import AlertSettings
from trayvml.alerts.rules import AlertEvent
from trayvml.core.sample import Sample
from trayvml.history.timeline import History
from trayvml.monitor.pipeline import Monitor, Outcome


class RemoteMonitors:
    def __init__(
        self,
        dispatcher: Dispatcher,
        alerts: AlertSettings,
        new_history: Callable[[], History],
        past_of: Callable[[str, float], list[Sample]] = lambda host, before_s: [],
    ) -> None:
        self.dispatcher = dispatcher
        self.alerts = remote_alert_settings(alerts)
        self.new_history = new_history
        self._past_of = past_of  # a Prometheus server's past of a host, before a time, oldest first
        self.monitors: dict[str, Monitor] = {}
        self._fed: dict[str, float] = {}  # host -> the timestamp of the sample its monitor had last
        self._refill: set[str] = set()  # hosts whose history was made anew: their past goes in first

    def keep_hosts_of(self, urls: set[str], past_of: Callable[[str, float], list[Sample]]) -> None:
        """The readers were made anew (another host list, another interval): the monitors of the
        hosts still read are kept, their alert states and histories with them (made anew, every
        alert firing was told again, and every host's past was gone); the others go."""
        self._past_of = past_of
        for host, monitor in list(self.monitors.items()):
            origin = monitor.latest.remote if monitor.latest is not None else None
            if origin is None or origin.url not in urls:
                del self.monitors[host]
                self._fed.pop(host, None)

    def renew_history(self, host: str, history: History) -> None:
        """``host``'s history made anew (other tiers): from its next sample on, starting with what a
        Prometheus server kept of it, as a new host's does (made empty, its graphs started again)."""
        self.monitors[host].history = history
        self._refill.add(host)

    def configure(self, alerts: AlertSettings) -> None:
        self.alerts = remote_alert_settings(alerts)
        for monitor in self.monitors.values():
            monitor.configure(self.alerts)

    def take(self, samples: Sequence[Sample]) -> tuple[list[Sample], Outcome]:
        """Each host's new sample through its monitor: the samples that were new, and what they caused."""
        fresh: list[Sample] = []
        events = []
        sent = []
        notices = []
        for sample in samples:
            host = sample.system.hostname if sample.system else ""
            if not sample.gpus or self._fed.get(host) == sample.timestamp_s:
                continue  # unreachable (shown as such), or nothing new since the last look
            self._fed[host] = sample.timestamp_s
            monitor = self._monitor(host, sample.timestamp_s)
            if host in self._refill:
                self._refill.discard(host)
                for past in self._past_of(host, sample.timestamp_s):
                    monitor.history.append(past)
            outcome = monitor.take(sample)
            fresh.append(sample)
            events += outcome.events
            sent += outcome.sent
            notices += outcome.notices
        return fresh, Outcome(events, sent, notices)

    def _monitor(self, host: str, now_s: float) -> Monitor:
        monitor = self.monitors.get(host)
        if monitor is None:
            monitor = self.monitors[host] = Monitor(self.dispatcher, self.alerts, self.new_history, host)
            for past in self._past_of(host, now_s):  # its history starts with what a server kept
                monitor.history.append(past)
        return monitor

    def events(self) -> list[AlertEvent]:
        """Every remote host's alerts so far (each naming its host), oldest first: a window opened late lists them."""
        return sorted((e for m in self.monitors.values() for e in m.engine.events), key=lambda e: e.timestamp_s)

    @property
    def histories(self) -> dict[str, History]:
        return {host: monitor.history for host, monitor in self.monitors.items()}

    @property
    def latest(self) -> dict[str, Sample]:
        """host -> its latest sample with current values."""
        return {host: m.latest for host, m in self.monitors.items() if m.latest is not None}


def remote_alert_settings(alerts: AlertSettings) -> AlertSettings:
    """The alert settings for a remote host's GPUs (their alerts, their colours in the tray's
    icon): the settings' per-GPU overrides are this machine's GPUs' (by index, chosen beside their
    names): turning one off silenced every remote GPU of that index too."""
    return replace(alerts, overrides={}) if alerts.overrides else alerts
