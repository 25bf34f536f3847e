"""One host's pipeline, this machine and remote hosts alike (no Qt).

A sample goes in; its history, energy, asleep spans and alert states are brought up to date, and the
notices it causes come out: each alert asks the dispatcher whether it should reach the user (pause,
snooze, notifications off, a notifier not ready yet), gets its details (a lost GPU's last facts, the
biggest processes, a finished job's energy), and is grouped with the same rule on other GPUs into
one notice. What shows them (tray, window, notifier) is the caller's business.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from trayvml.alerts.details import PROCESS_RULES, alert_details, biggest_named_job, processes_line
from trayvml.alerts.dispatch import KERNEL, Dispatcher, Outgoing
from trayvml.alerts.engine import AlertEngine, AlertSettings
from trayvml.alerts.grouping import GROUP, Grouper, Notice
from trayvml.alerts.rules import AlertEvent, HeldSettings, JobSettings
from trayvml.core.clock import clock_step_s
from trayvml.core.demand import PROCESSES
from trayvml.core.i18n import translate
from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, ProcessSample, Sample, renumbered, renumbering
from trayvml.host.processes import owned_by_me
from trayvml.monitor.energy import EnergyMeter, job_energy_text
from trayvml.monitor.spans import AsleepSpans
from trayvml.monitor.users import UserUsage

if TYPE_CHECKING:
    from trayvml.history.timeline import History  # numpy's: made only where a history is read

log = logging.getLogger(__name__)

THIS_MACHINE = ""  # the host name of this machine's monitor: its GPU 0 is not a remote host's
DETAILS_WAIT = 3  # samples an alert waits for the process lists it names before it goes without
RECENT_AT_LEAST = 3  # samples kept for a history made later, however far apart (Monitor.past)


@dataclass(frozen=True)
class Outcome:
    """What one sample caused: the alert transitions (for the window's table and markers), the alerts
    that go out now, and the notices that tell them."""

    events: list[AlertEvent] = field(default_factory=list)
    sent: list[Outgoing] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)


class Monitor:
    """One host: its history, energy, asleep spans, alert engine, the alerts waiting for process
    lists, and the grouping of its notices.

    ``processes_on_demand``: whether the host's process lists are read only when someone asks for
    them (this machine), so that an alert naming processes waits a few samples for them; a remote
    host's samples carry whatever its exporter reports, and waiting would only delay the alert.

    ``past``: where the host's samples are also kept (this machine's history on disk), what fills a
    new history with those before a sample. Then the history is made only once something reads it
    (the window): until then the host's last ``recent_s`` of samples (those the store may not have
    committed yet) are all it keeps, and the idle tray loads no numpy (13 MiB). It keeps them after
    too: a history made anew (drop_history) needs them where the store does not have them yet.
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        alerts: AlertSettings,
        new_history: Callable[[], History],
        host: str = THIS_MACHINE,
        processes_on_demand: bool = False,
        past: Callable[[History, Sample], object] | None = None,
        recent_s: float = 0.0,
    ) -> None:
        self.host = host
        self.dispatcher = dispatcher  # shared by every host: one pause, one notifier
        self.engine = AlertEngine(alerts, host)
        self.grouper = Grouper()  # one rule on several of this host's GPUs: one notification
        self.energy = EnergyMeter()  # Wh per GPU, process and job
        self.asleep_spans = AsleepSpans()  # the timelines' bands where a GPU slept
        self.users = UserUsage()  # memory and GPU time per user, across the host's GPUs
        self.new_history = new_history
        self._history: History | None = None
        self._past = past
        self._recent_s = recent_s
        self._recent: deque[Sample] = deque()  # with a ``past``: the last samples, which it may lack
        self._past_due = False  # a history was made (or made anew) with no sample kept: its past comes with the next
        self._filling = False  # a history is being filled elsewhere (start_history): no sample kept goes
        self.latest: Sample | None = None
        self._listed: Sample | None = None  # the last sample that listed GPUs (renumbering is told against it)
        self._processes_on_demand = processes_on_demand
        # Per GPU: its last sample while it answered, when, and its facts (a lost GPU's body names them).
        self._last_seen: dict[int, tuple[GpuSample, float, DeviceInfo]] = {}
        self.awaiting_processes: list[tuple[AlertEvent, int]] = []  # (event, samples waited)
        # Per GPU: its processes when last read while it was busy (job-finished's threshold). When a
        # job ends its processes leave the list before the rule fires: these say which job it was.
        self.busy_processes: dict[int, tuple[ProcessSample, ...]] = {}
        # Per GPU: since when its utilization has been at or below the held-idle rule's idle
        # threshold (absent: busy or unknown); the first sample's time says "at least".
        self.idle_since_s: dict[int, float] = {}
        self.first_s = math.nan
        # Per GPU: this user's notebook kernels its last held-idle notice named (its KERNEL action's).
        self.kernel_offers: dict[int, tuple[ProcessSample, ...]] = {}

    @property
    def has_history(self) -> bool:
        """Whether the history was made (reading ``history`` makes it)."""
        return self._history is not None

    @property
    def history(self) -> History:
        """Made on first use: numpy need not load before the tray icon shows; with a ``past``, filled
        with it up to the samples kept, then those."""
        if self._history is None:
            self.history = self.new_history()
        assert self._history is not None
        return self._history

    @history.setter
    def history(self, history: History) -> None:
        self._history = history
        self._past_due = self._past is not None
        if self._recent:
            self._fill(history, self._recent[0])
            self._append_recent(history)

    def start_history(self) -> tuple[History, Sample] | None:
        """A new history for another thread to fill with its ``past`` before the sample given (the
        window opened: the store's hours are read without holding up the GUI thread); the samples
        from that one on are all kept until ``finish_history``. None: nothing to fill that way (no
        past, a history already made or being filled, or no sample yet)."""
        if self._history is not None or self._past is None or self._filling or not self._recent:
            return None
        self._filling = True
        return self.new_history(), self._recent[0]

    def finish_history(self, history: History) -> bool:
        """``history`` from start_history, filled: the samples kept are appended and it becomes the
        history. False where one was made meanwhile (then this one is let go)."""
        self._filling = False
        if self._history is not None:
            return False
        self._append_recent(history)
        self._history = history
        self._past_due = False
        return True

    @property
    def filling(self) -> bool:
        """Whether a history from start_history is being filled elsewhere."""
        return self._filling

    def drop_history(self) -> bool:
        """The history let go, to be made anew (with its past) by the next start_history or read
        of ``history``; the samples kept fill what the past lacks. False (nothing done) where there
        is no past to make it from, or one is being filled."""
        if self._past is None or self._filling:
            return False
        self._history = None
        return True

    def _append_recent(self, history: History) -> None:
        """The samples kept go to ``history`` (still kept: the past may lack them, and a history
        made anew would too)."""
        for sample in self._recent:
            history.append(sample)

    def _fill(self, history: History, before: Sample) -> None:
        """The past before ``before`` into ``history`` (once a history)."""
        if self._past_due and self._past is not None:
            self._past_due = False
            self._past(history, before)

    def _keep_recent(self, sample: Sample) -> None:
        """The samples of the last ``recent_s``, and always the last RECENT_AT_LEAST (the store may
        still lack the one before the last, however long ago): by the monotonic clock (a wall clock
        set back keeps no more), by the wall clock where that has none (macOS: NaN)."""
        self._recent.append(sample)
        # Filling (no history yet), every sample from the one it fills up to is kept for it.
        while len(self._recent) > RECENT_AT_LEAST and not (self._filling and self._history is None):
            oldest = self._recent[0]
            apart_s = sample.monotonic_s - oldest.monotonic_s
            if math.isnan(apart_s):
                apart_s = abs(sample.timestamp_s - oldest.timestamp_s)
            if apart_s <= self._recent_s:
                break
            self._recent.popleft()

    def configure(self, alerts: AlertSettings) -> None:
        self.engine.configure(alerts)

    def needs(self) -> frozenset[str]:
        """What its alert rules need read beyond what is always read: the metrics they watch (SM
        activity for the stalled-job rule), and the process lists while an alert waits for them
        or the job-finished rule is on (it names what ran)."""
        settings = self.engine.settings
        rules = [settings.rules.get("job_finished"), *(o.get("job_finished") for o in settings.overrides.values())]
        lists = bool(self.awaiting_processes) or any(rule is not None and rule.enabled for rule in rules)
        return self.engine.needs() | ({PROCESSES} if lists else frozenset())

    def take(self, sample: Sample) -> Outcome:
        """One sample through the pipeline; what it caused."""
        gone = Outcome()
        if self.latest is not None:
            before = self.latest
            step_s = clock_step_s(before.timestamp_s, before.monotonic_s, sample.timestamp_s, sample.monotonic_s)
            self._clock_set(step_s, sample.timestamp_s)
        # Against the last sample that listed GPUs: a stalled driver's samples list none, and its
        # GPUs are not gone (each alert was ended as gone, then fired again when it answered).
        if self._listed is not None and sample.devices:
            moves = renumbering(self._listed.devices, sample.devices)
            if moves:
                gone = self._renumber(moves, self._listed, sample.timestamp_s)
        if sample.devices:
            self._listed = sample
        self.latest = sample
        self._remember(sample)
        if self._past is not None:
            self._keep_recent(sample)
        if self._history is not None or self._past is None:
            self._fill(self.history, sample)
            self.history.append(sample)
        self.energy.update(sample)
        self.users.update(sample)
        self.asleep_spans.update(sample)
        events = self.engine.update(sample)
        outcome = self.outcome(self._offer(events, sample), sample.timestamp_s, events)
        if not gone.events:
            return outcome
        return Outcome(gone.events + outcome.events, gone.sent + outcome.sent, gone.notices + outcome.notices)

    def _renumber(self, moves: dict[int, int | None], before: Sample, now_s: float) -> Outcome:
        """The GPUs were numbered afresh since ``before`` (core.sample.renumbering): a gone GPU's
        alerts end, told as their GPU was (its alerts waiting for process lists go out first), and
        what is kept per GPU follows its GPU to its new index."""
        gone = {index for index, new in moves.items() if new is None}
        waiting = self.awaiting_processes
        self.awaiting_processes = [(event, DETAILS_WAIT) for event, _ in waiting if event.gpu_index in gone]
        ended = self.engine.renumber(moves, before, now_s)
        outcome = self.outcome(self._offer(ended, before), now_s, ended)
        self.awaiting_processes = [
            (replace(event, gpu_index=new), waited)
            for event, waited in waiting
            if (new := moves.get(event.gpu_index, event.gpu_index)) is not None
        ]
        self.grouper.renumber(moves)
        self.dispatcher.renumber(self.host, moves)
        self._last_seen = renumbered(self._last_seen, moves)
        self.busy_processes = renumbered(self.busy_processes, moves)
        self.idle_since_s = renumbered(self.idle_since_s, moves)
        self.kernel_offers = renumbered(self.kernel_offers, moves)
        return outcome

    def outcome(self, ready: Sequence[Outgoing], now_s: float, events: Sequence[AlertEvent] = ()) -> Outcome:
        """The notices for the alerts the dispatcher let through (``ready``: this host's)."""
        notices = self.grouper.take(list(ready), now_s) if ready else []
        if notices and self.latest is not None and self.latest.simulation:
            # Made-up GPUs say so where the window's banner is not: on the desktop and pushed away.
            notices = [replace(notice, simulated=True) for notice in notices]
        return Outcome(list(events), list(ready), notices)

    def members(self, gpu_index: int, rule: str) -> tuple[int, ...]:
        """The GPUs a notification's action acts on: a grouped one's members, else its own GPU."""
        return self.grouper.members(rule) if gpu_index == GROUP else (gpu_index,)

    def _offer(self, events: list[AlertEvent], sample: Sample) -> list[Outgoing]:
        """Hand events to the dispatcher; one that names processes waits until they are read.

        Process lists are read only while someone needs them: an alert that names the GPU's
        biggest processes asks for them when it fires and goes out once they arrive (a tick or two).
        """
        waiting, self.awaiting_processes = self.awaiting_processes, []
        # An alert over before its process lists came goes out now, then its resolution: held,
        # it went out after "back to normal", replaced it, and stayed.
        over = {(e.gpu_index, e.rule) for e in events if e.kind == "resolved"}
        ready: list[Outgoing] = []
        for event, waited in [*waiting, *((e, 0) for e in events)]:
            waits = self._processes_on_demand and _names_processes(event) and self.dispatcher.wanted(event)
            waits = waits and (event.gpu_index, event.rule) not in over
            if waits and not _processes_read(sample, event.gpu_index) and waited < DETAILS_WAIT:
                self.awaiting_processes.append((event, waited + 1))
                continue
            # Logged with the outcome (-v): what a user (or a test) can check a notification against.
            why_not = self.dispatcher.why_not(event)
            where = f" on {self.host}" if self.host else ""
            outcome = f"not notified ({why_not})" if why_not else "notified"
            log.info("alert %s %s%s: %s", event.rule, event.kind, where, outcome)
            outgoing = Outgoing(event, self._details(event, sample), self._actions(event, sample))
            if why_not and event.kind == "resolved":
                self.grouper.forget(event)  # its group's notification is over, told or not
            elif why_not and event.kind == "firing":
                self.grouper.update(outgoing)  # what its group says of it stays as it is now
                if event.notify:  # kept from the user by a pause or a snooze, not by the cooldown
                    self.engine.untold(event)
            ready += self.dispatcher.offer(outgoing)
        return ready

    def _details(self, event: AlertEvent, sample: Sample) -> str:
        """The lines below the title: a lost GPU's facts and last values, the biggest processes; a
        finished job's energy."""
        seen = self._last_seen.get(event.gpu_index)
        details = alert_details(event, sample) if seen is None else alert_details(event, sample, *seen)
        if event.rule == "job_finished":
            busy = self.busy_processes.pop(event.gpu_index, ())
            # "Slurm job 4242 (train_llm) finished on GPU 0 after 3 h 12 min, 54.1 Wh." where its job has a name.
            named = biggest_named_job(busy)
            energy = job_energy_text(self.energy, event.gpu_index, event.timestamp_s, event.value, named)
            gpu = sample.gpu(event.gpu_index)
            ran = "" if gpu is None else processes_line(replace(gpu, processes=busy), _it_was_running())
            return "\n".join(part for part in (energy, ran, details) if part)
        return details

    def _actions(self, event: AlertEvent, sample: Sample) -> tuple[str, ...]:
        """KERNEL where a held-idle alert on this machine names a notebook kernel of this user's."""
        if event.rule != "memory_held_idle" or event.kind == "resolved" or self.host != THIS_MACHINE:
            return ()
        gpu = sample.gpu(event.gpu_index)
        if gpu is None or sample.simulation:  # a simulated GPU's PIDs are made up
            return ()
        mine = tuple(p for p in gpu.processes if p.attribution.notebook and not p.unseen and owned_by_me(p.pid))
        self.kernel_offers[event.gpu_index] = mine
        return (KERNEL,) if mine else ()

    def idle_for_s(self, gpu_index: int) -> tuple[float, bool]:
        """(How long the GPU has been idle, NaN where busy or unknown; whether that is only since
        trayvml's first sample, so at least that long)."""
        since = self.idle_since_s.get(gpu_index, math.nan)
        if self.latest is None or math.isnan(since):
            return math.nan, False
        return self.latest.timestamp_s - since, since <= self.first_s

    def _clock_set(self, step_s: float, now_s: float) -> None:
        """The times this monitor holds go with the wall clock, set by ``step_s`` (0: not set)
        before the sample at ``now_s``: the alert rules' holds and "idle for" keep their lengths
        (set back, idle-for read negative for as long as the step; set forward, every hold was over
        at once), a lost GPU's "last seen at" says the time on the clock as it is now set, notices
        group as before, and (set back) energy and sleep bands go on from the new time."""
        if not step_s:
            return
        self.engine.clock_set(step_s)
        self.energy.clock_set(step_s, now_s)
        self.asleep_spans.clock_set(step_s)
        self.grouper.shift_s(step_s)
        self.first_s += step_s
        self.idle_since_s = {gpu: since + step_s for gpu, since in self.idle_since_s.items()}
        self._last_seen = {gpu: (seen, at_s + step_s, info) for gpu, (seen, at_s, info) in self._last_seen.items()}

    def _remember(self, sample: Sample) -> None:
        if math.isnan(self.first_s):
            self.first_s = sample.timestamp_s
        for gpu, info in zip(sample.gpus, sample.devices, strict=False):
            settings = self.engine.settings
            held = settings.for_gpu(gpu.index, "memory_held_idle")
            util = gpu.value("utilization_gpu_percent")
            if isinstance(held, HeldSettings) and util <= held.idle_below_percent:  # NaN: not idle
                self.idle_since_s.setdefault(gpu.index, sample.timestamp_s)
            else:
                self.idle_since_s.pop(gpu.index, None)
            if not gpu.lost:
                self._last_seen[gpu.index] = (gpu, sample.timestamp_s, info)
            job = settings.for_gpu(gpu.index, "job_finished")
            busy = isinstance(job, JobSettings) and util >= job.busy_above_percent
            # Only lists read on this tick (NOT_READ lists are empty, not "nothing running").
            if busy and gpu.processes and gpu.state("process_count") is MetricState.OK:
                self.busy_processes[gpu.index] = gpu.processes


def _it_was_running() -> str:
    return translate("AlertDetails", "It was running")


def _names_processes(event: AlertEvent) -> bool:
    return event.rule in PROCESS_RULES and event.kind != "resolved"


def _processes_read(sample: Sample, gpu_index: int) -> bool:
    """Whether this sample read the GPU's process lists (they are read only while someone needs them)."""
    gpu = sample.gpu(gpu_index)
    return gpu is not None and gpu.state("process_count") is not MetricState.NOT_READ
