"""The alert engine: every rule stepped on every sample, per GPU, with the settings in force."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from trayvml.alerts.rules import (
    GONE,
    GPU_RULES,
    MACHINE_RULES,
    RULE_BY_KEY,
    RULES,
    THRESHOLD_RULES,
    TURNED_OFF,
    AlertEvent,
    AnySettings,
    GpuRule,
    Rule,
    Tracker,
    ended_message,
)
from trayvml.alerts.severity import MACHINE, Severity
from trayvml.core.i18n import translate
from trayvml.core.levels import Level
from trayvml.core.metrics import THERMAL_REASON_MASK
from trayvml.core.sample import UNKNOWN_NAME, GpuSample, Sample

MAX_EVENTS = 1000


@dataclass(frozen=True)
class AlertSettings:
    """Defaults for every GPU, and per-GPU overrides (GPU index -> rule key -> settings)."""

    rules: Mapping[str, AnySettings] = field(default_factory=lambda: {r.key: r.defaults for r in RULES})
    overrides: Mapping[int, Mapping[str, AnySettings]] = field(default_factory=dict)

    def for_gpu(self, gpu: int, rule: str) -> Any:
        """The settings of ``rule`` on ``gpu``: a RuleSettings, or the rule's own kind (JobSettings)."""
        overrides = self.overrides.get(gpu)
        override = overrides.get(rule) if overrides is not None else None
        return override if override is not None else self.rules.get(rule, RULE_BY_KEY[rule].defaults)


def validate(rule: Rule[Any], settings: Any) -> list[str]:
    """Sentences naming what is wrong with ``settings`` for ``rule`` (empty when it is fine)."""
    if not isinstance(settings, type(rule.defaults)):
        return [
            translate("alerts", "{rule}: these settings are for another kind of rule.").format(
                rule=translate("alerts", rule.label)
            )
        ]
    return rule.problems(settings)


@dataclass(frozen=True)
class Verdict:
    """A GPU's level at a glance and the rule that decided it (``""``: none did, or the GPU is lost)."""

    level: Level
    rule: str = ""


def gpu_level(gpu: GpuSample, settings: AlertSettings) -> Level:
    """How alarming ``gpu`` looks at a glance (tray icon, summary); see gpu_verdict."""
    return gpu_verdict(gpu, settings).level


def gpu_verdict(gpu: GpuSample, settings: AlertSettings) -> Verdict:
    """How alarming ``gpu`` looks at a glance, by the alerts' own rules and thresholds, per-GPU
    overrides included, and which rule says so (the first in rule order among the most severe),
    so that whatever colours the icon can also show that rule's value. It reads the value now:
    hold times and hysteresis decide when an alert is told, not how a value looks."""
    if gpu.lost:
        return Verdict(Level.LOST)
    verdict = Verdict(Level.NORMAL)
    for rule in THRESHOLD_RULES:
        rule_settings = settings.for_gpu(gpu.index, rule.key)
        if not rule_settings.enabled:
            continue
        severity = rule.target(rule_settings, rule.reading(gpu), None)  # NaN: no level
        if severity is not None:
            level = Level.CRITICAL if severity is Severity.CRITICAL else Level.WARNING
            if level > verdict.level:
                verdict = Verdict(level, rule.key)
    # Thermal throttling only: a busy GPU held at its power limit is working as designed, and
    # the throttle rule's hold time tells that apart from trouble before it alerts.
    reasons = gpu.value("clock_event_reasons")
    thermal = not math.isnan(reasons) and int(reasons) & THERMAL_REASON_MASK
    if thermal and settings.for_gpu(gpu.index, "throttle").enabled and verdict.level < Level.WARNING:
        verdict = Verdict(Level.WARNING, "throttle")
    return verdict


# The rules that tell each firing (no cooldown), keeping no mark of it (Tracker.announced).
_ALWAYS_TOLD = frozenset({"gpu_lost", "driver_stalled"})


class AlertEngine:
    """Every rule stepped on every sample of one host; its events name that host ("": this machine)."""

    def __init__(self, settings: AlertSettings | None = None, host: str = "") -> None:
        self.settings = settings or AlertSettings()
        self.host = host
        self.events: deque[AlertEvent] = deque(maxlen=MAX_EVENTS)
        self._trackers: dict[tuple[int, str], Tracker] = {}
        # Per GPU index: each enabled rule with its settings and tracker, for the settings in
        # ``_planned_for`` (a sample steps ~20 rules a GPU: looked up once, not every second).
        self._plans: dict[int, list[tuple[GpuRule[Any], Any, Tracker]]] = {}
        self._planned_for: AlertSettings | None = None

    def configure(self, settings: AlertSettings) -> None:
        self.settings = settings

    def clock_set(self, step_s: float) -> None:
        """The wall clock was set by ``step_s`` before the next sample (the host's Monitor tells):
        the times the rules hold from go with it. Set back an hour, a GPU at 95 °C went unreported,
        and the next alert after a cooldown unnotified, for that hour; set forward, every hold was
        over at once ("memory held, GPU idle" for 30 min, at the step)."""
        for tracker in self._trackers.values():
            tracker.shift_s(step_s)

    def update(self, sample: Sample) -> list[AlertEvent]:
        """Feed one sample; returns the transitions it caused (and keeps them in ``events``)."""
        found: list[AlertEvent] = []
        for machine_rule in MACHINE_RULES:
            settings = self.settings.for_gpu(MACHINE, machine_rule.key)
            if settings.enabled:
                event = machine_rule.step(settings, self._tracker(MACHINE, machine_rule.key), sample)
                if event is not None:
                    found.append(event)
        if self._planned_for is not self.settings:
            self._plans.clear()
            self._planned_for = self.settings
            found += self._turned_off(sample)
        now_s = sample.timestamp_s
        for gpu, info in zip(sample.gpus, sample.devices, strict=False):
            plan = self._plans.get(gpu.index)
            if plan is None:
                plan = self._plans[gpu.index] = self._plan(gpu.index)
            lost = gpu.lost
            for rule, settings, tracker in plan:
                if lost and not rule.while_lost:
                    continue
                event = rule.step(settings, tracker, gpu, info.name, now_s)
                if event is not None:
                    found.append(event)
        events = [replace(event, host=self.host) for event in found] if self.host else found
        self.events.extend(events)
        return events

    def _turned_off(self, sample: Sample) -> list[AlertEvent]:
        """The alerts firing whose rule the settings turned off: resolved (said so), as nothing
        steps them any more; they stayed active, counted in the menu, their notification open."""
        names = {gpu.index: info.name for gpu, info in zip(sample.gpus, sample.devices, strict=False)}
        off = []
        for (gpu, key), tracker in list(self._trackers.items()):
            if self.settings.for_gpu(gpu, key).enabled:
                continue
            # Turned on again, it starts afresh: one held or armed when turned off kept its start,
            # and fired at once when turned back on, its hold long over.
            del self._trackers[(gpu, key)]
            if tracker.level is not None:
                off.append(self._ended(tracker, gpu, names.get(gpu, UNKNOWN_NAME), key, sample.timestamp_s, TURNED_OFF))
        return off

    def renumber(self, moves: Mapping[int, int | None], before: Sample, now_s: float) -> list[AlertEvent]:
        """The GPUs were numbered afresh at ``now_s`` (``moves``: old index -> new, None where gone;
        a MIG instance destroyed renumbers those after it, each keeping its UUID): each rule's state
        follows its GPU, and a gone GPU's alerts end, said so. Kept by index, the GPU now at a
        destroyed instance's index took over its state (an alert of another device's, told again
        or never told), and one left past the last index counted as active for good."""
        names = {info.index: info.name for info in before.devices}
        ended: list[AlertEvent] = []
        trackers: dict[tuple[int, str], Tracker] = {}
        for (gpu, key), tracker in self._trackers.items():
            new = moves.get(gpu, gpu)
            if new is not None:
                trackers[(new, key)] = tracker
            elif tracker.level is not None:
                ended.append(self._ended(tracker, gpu, names.get(gpu, UNKNOWN_NAME), key, now_s, GONE))
        self._trackers = trackers
        self._plans.clear()
        events = [replace(event, host=self.host) for event in ended] if self.host else ended
        self.events.extend(events)
        return events

    @staticmethod
    def _ended(tracker: Tracker, gpu: int, name: str, key: str, now_s: float, why: str) -> AlertEvent:
        """The end of ``tracker``'s alert, which is not back to normal (``why``: TURNED_OFF or GONE):
        told where its firing was (the rules that keep no such mark always tell theirs)."""
        told = tracker.announced or key in _ALWAYS_TOLD
        message = ended_message(key, why)
        return AlertEvent(now_s, gpu, name, key, "resolved", Severity.INFO, message, notify=told, ended=why)

    def untold(self, event: AlertEvent) -> None:
        """``event``, a firing, was kept from the user (alerts paused, snoozed): where it was the
        one that announced its alert, its end is not told either (a "back to normal" came of an
        alert the user had never seen); an escalation kept from them leaves the warning they saw
        to be ended. A lost GPU's and a stalled driver's ends are always told (_ALWAYS_TOLD)."""
        tracker = self._trackers.get((event.gpu_index, event.rule))
        if tracker is not None and event.kind == "firing" and tracker.announced_at_s == event.timestamp_s:
            tracker.announced_at_s = math.nan

    def active(self) -> int:
        """How many alerts are firing now (a rule on a GPU, or on the machine, not back to normal)."""
        return sum(1 for tracker in self._trackers.values() if tracker.level is not None)

    def needs(self) -> frozenset[str]:
        """Metrics the enabled rules read that are not always read (SM activity, from GPM)."""
        needed: set[str] = set()
        for rule in GPU_RULES:
            per_gpu = [rules.get(rule.key) for rules in self.settings.overrides.values()]
            if rule.needs and any(r is not None and r.enabled for r in [self.settings.rules.get(rule.key), *per_gpu]):
                needed |= rule.needs
        return frozenset(needed)

    def _plan(self, gpu: int) -> list[tuple[GpuRule[Any], Any, Tracker]]:
        """The rules enabled on ``gpu``, each with its settings and its tracker, in rule order."""
        plan = []
        for rule in GPU_RULES:
            settings = self.settings.for_gpu(gpu, rule.key)
            if settings.enabled:
                plan.append((rule, settings, self._tracker(gpu, rule.key)))
        return plan

    def _tracker(self, gpu: int, rule: str) -> Tracker:
        tracker = self._trackers.get((gpu, rule))
        if tracker is None:
            tracker = self._trackers[(gpu, rule)] = Tracker()
        return tracker
