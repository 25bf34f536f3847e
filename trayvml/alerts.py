"""The alert engine: pure rules over samples, with hysteresis, hold times and cooldowns.

A threshold rule is OK, pending (over its enter threshold, not yet for ``hold_s``) or firing
(warning or critical). It clears only below its clear threshold, so a value hovering around
the enter threshold fires once. A missing value (NaN) keeps the state as it was. The engine
returns transitions only; whether a transition should be *notified* also depends on the
rule's cooldown. Event rules (a new XID error, a job finished) fire and are done.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from trayvml.core.levels import Level
from trayvml.core.metrics import POWER_REASON_MASK, THERMAL_REASON_MASK
from trayvml.core.sample import GpuSample, Sample
from trayvml.core.units import short_name

MAX_EVENTS = 1000
MACHINE = -1  # the "GPU index" of alerts about the whole machine (the driver), not one GPU


class Severity(enum.IntEnum):
    INFO = 0
    WARNING = 1
    CRITICAL = 2


class Direction(enum.Enum):
    ABOVE = "above"  # e.g. temperature: alarming when high
    BELOW = "below"  # e.g. free memory: alarming when low


@dataclass(frozen=True)
class RuleSettings:
    """One rule's knobs. For ABOVE rules each clear threshold must be below its enter one."""

    enabled: bool = True
    warning_enter: float = math.nan  # NaN: no warning level
    warning_clear: float = math.nan
    critical_enter: float = math.nan  # NaN: no critical level
    critical_clear: float = math.nan
    hold_s: float = 0.0  # the condition must last this long before firing
    cooldown_s: float = 300.0  # after a notification, the same rule on the same GPU stays quiet


@dataclass(frozen=True)
class RuleKind:
    """What a rule watches; its defaults are the settings a new user gets."""

    key: str
    label: str
    unit: str
    direction: Direction | None  # None: not a threshold rule
    defaults: RuleSettings


RULES: tuple[RuleKind, ...] = (
    RuleKind(
        "temperature",
        "GPU temperature",
        "°C",
        Direction.ABOVE,
        RuleSettings(True, 83.0, 78.0, 90.0, 85.0, hold_s=5.0),
    ),
    RuleKind(
        "memory_used",
        "Memory used",
        "%",
        Direction.ABOVE,
        RuleSettings(True, 90.0, 85.0, 97.0, 93.0, hold_s=10.0),
    ),
    RuleKind(
        "memory_free",
        "Memory free",
        "GiB",
        Direction.BELOW,
        RuleSettings(False, 4.0, 6.0, 1.0, 2.0, hold_s=10.0),
    ),
    RuleKind("power", "Power draw", "% of limit", Direction.ABOVE, RuleSettings(False, 95.0, 90.0, hold_s=30.0)),
    RuleKind("gpu_lost", "GPU lost", "", None, RuleSettings(True, cooldown_s=0.0)),
    # The driver has not answered for the sampler's grace time (a few intervals): told once, and
    # once more when it answers again.
    RuleKind("driver_stalled", "GPU driver not responding", "", None, RuleSettings(True, cooldown_s=0.0)),
    RuleKind("xid", "XID error", "", None, RuleSettings(True, cooldown_s=60.0)),
    # Sustained throttling: a GPU near its limits dips in and out of slowdown every few seconds.
    RuleKind("throttle", "Thermal or power throttling", "", None, RuleSettings(True, hold_s=30.0)),
    # job_finished: warning_enter is "busy" utilization %, warning_clear "idle" utilization %,
    # critical_enter how long it must have been busy (s); hold_s how long idle before it counts.
    RuleKind(
        "job_finished",
        "Job finished",
        "",
        None,
        RuleSettings(False, warning_enter=50.0, warning_clear=5.0, critical_enter=60.0, hold_s=30.0, cooldown_s=0.0),
    ),
)
RULE_BY_KEY = {r.key: r for r in RULES}
XID_MEANINGS = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "preemptive cleanup",
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint",
    62: "internal micro-controller halt",
    63: "ECC page retirement or row remapping",
    64: "ECC page retirement or row remapping failure",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
}


@dataclass(frozen=True)
class AlertSettings:
    """Defaults for every GPU, and per-GPU overrides (GPU index -> rule key -> settings)."""

    rules: Mapping[str, RuleSettings] = field(default_factory=lambda: {r.key: r.defaults for r in RULES})
    overrides: Mapping[int, Mapping[str, RuleSettings]] = field(default_factory=dict)

    def for_gpu(self, gpu: int, rule: str) -> RuleSettings:
        override = self.overrides.get(gpu, {}).get(rule)
        return override if override is not None else self.rules.get(rule, RULE_BY_KEY[rule].defaults)


def validate(kind: RuleKind, settings: RuleSettings) -> list[str]:
    """Sentences naming what is wrong with ``settings`` (empty when it is fine)."""
    problems = []
    if kind.direction is not None:
        for level in ("warning", "critical"):
            enter = getattr(settings, f"{level}_enter")
            clear = getattr(settings, f"{level}_clear")
            if math.isnan(enter):
                continue
            if math.isnan(clear):
                problems.append(f"{kind.label}: the {level} level needs a clear threshold.")
            elif kind.direction is Direction.ABOVE and not clear < enter:
                problems.append(
                    f"{kind.label}: the {level} clear threshold ({clear:g}) must be below its enter threshold "
                    f"({enter:g}), or a value near it would alert again and again."
                )
            elif kind.direction is Direction.BELOW and not clear > enter:
                problems.append(
                    f"{kind.label}: the {level} clear threshold ({clear:g}) must be above its enter threshold "
                    f"({enter:g}), or a value near it would alert again and again."
                )
        warning, critical = settings.warning_enter, settings.critical_enter
        if not math.isnan(warning) and not math.isnan(critical):
            wrong = critical <= warning if kind.direction is Direction.ABOVE else critical >= warning
            if wrong:
                problems.append(f"{kind.label}: the critical threshold must be beyond the warning one.")
    if settings.hold_s < 0 or settings.cooldown_s < 0:
        problems.append(f"{kind.label}: hold and cooldown times cannot be negative.")
    return problems


@dataclass(frozen=True)
class AlertEvent:
    timestamp_s: float
    gpu_index: int
    gpu_name: str
    rule: str
    kind: str  # "firing", "resolved" or "event"
    severity: Severity
    message: str
    value: float = math.nan
    notify: bool = True  # False within the rule's cooldown: the state changed, quietly
    detail: str = ""  # e.g. the thresholds, for the notification's body

    @property
    def title(self) -> str:
        if self.gpu_index == MACHINE:
            return self.message
        gpu = f"GPU {self.gpu_index} {short_name(self.gpu_name)}"
        if self.kind == "resolved":
            return f"{gpu}: {RULE_BY_KEY[self.rule].label.lower()} back to normal"
        return f"{gpu}: {self.message}"


@dataclass
class _Tracker:
    level: Severity | None = None  # None: OK
    pending: Severity | None = None
    pending_since_s: float = 0.0
    last_notified_s: float = -math.inf
    last_xid_count: float = math.nan
    busy_since_s: float = math.nan
    idle_since_s: float = math.nan
    armed: bool = False
    announced: bool = False  # the current firing was notified, so its end should be too
    notified_severity: Severity | None = None  # of the last notification, within the cooldown
    clear_since_s: float = math.nan  # throttling: when the condition went away


def _value(gpu: GpuSample, rule: str) -> float:
    if rule == "temperature":
        return gpu.value("temperature_gpu_c")
    if rule == "memory_used":
        return gpu.value("memory_used_percent")
    if rule == "memory_free":
        return gpu.value("memory_free_bytes") / 2**30
    if rule == "power":
        return gpu.value("power_used_percent")
    raise KeyError(rule)


def _target(kind: RuleKind, settings: RuleSettings, value: float, level: Severity | None) -> Severity | None:
    """The level a value calls for, with hysteresis around the current level."""
    beyond = (lambda v, t: v >= t) if kind.direction is Direction.ABOVE else (lambda v, t: v <= t)
    for severity, enter, clear in (
        (Severity.CRITICAL, settings.critical_enter, settings.critical_clear),
        (Severity.WARNING, settings.warning_enter, settings.warning_clear),
    ):
        if math.isnan(enter):
            continue
        if beyond(value, enter):
            return severity
        if level is not None and level >= severity and not math.isnan(clear) and not beyond(clear, value):
            return severity  # between clear and enter: stay where we are
    return None


def gpu_level(gpu: GpuSample, settings: AlertSettings) -> Level:
    """How alarming ``gpu`` looks at a glance (tray icon, summary), by the alerts' own rules and
    thresholds, per-GPU overrides included. It reads the value now: hold times and hysteresis
    decide when an alert is told, not how a value looks."""
    if gpu.lost:
        return Level.LOST
    level = Level.NORMAL
    for kind in RULES:
        rule = settings.for_gpu(gpu.index, kind.key)
        if kind.direction is None or not rule.enabled:
            continue
        severity = _target(kind, rule, _value(gpu, kind.key), None)  # NaN: no level
        if severity is not None:
            level = max(level, Level.CRITICAL if severity is Severity.CRITICAL else Level.WARNING)
    # Thermal throttling only: a busy GPU held at its power limit is working as designed, and
    # the throttle rule's hold time tells that apart from trouble before it alerts.
    reasons = gpu.value("clock_event_reasons")
    thermal = not math.isnan(reasons) and int(reasons) & THERMAL_REASON_MASK
    if thermal and settings.for_gpu(gpu.index, "throttle").enabled:
        level = max(level, Level.WARNING)
    return level


def _thresholds(kind: RuleKind, settings: RuleSettings, severity: Severity) -> str:
    if kind.direction is None:
        return ""
    level = "critical" if severity is Severity.CRITICAL else "warning"
    enter, clear = getattr(settings, f"{level}_enter"), getattr(settings, f"{level}_clear")
    side, back = ("above", "below") if kind.direction is Direction.ABOVE else ("below", "above")
    return f"{level.capitalize()} {side} {enter:g} {kind.unit}; clears {back} {clear:g} {kind.unit}."


def _describe(kind: RuleKind, value: float, severity: Severity) -> str:
    level = "critical" if severity is Severity.CRITICAL else "high"
    if kind.key == "memory_free":
        return f"only {value:.1f} GiB of memory free"
    if kind.key == "memory_used":
        return f"memory {value:.0f} % full"
    if kind.key == "temperature":
        return f"temperature {level} at {value:.0f} °C"
    return f"{kind.label.lower()} {level} at {value:.0f} {kind.unit}"


class AlertEngine:
    def __init__(self, settings: AlertSettings | None = None) -> None:
        self.settings = settings or AlertSettings()
        self.events: deque[AlertEvent] = deque(maxlen=MAX_EVENTS)
        self._trackers: dict[tuple[int, str], _Tracker] = {}

    def configure(self, settings: AlertSettings) -> None:
        self.settings = settings

    def update(self, sample: Sample) -> list[AlertEvent]:
        """Feed one sample; returns the transitions it caused (and keeps them in ``events``)."""
        found: list[AlertEvent] = []
        stall = self._stall(sample)
        if stall is not None:
            found.append(stall)
        for gpu, info in zip(sample.gpus, sample.devices, strict=False):
            for kind in RULES:
                if kind.key == "driver_stalled":
                    continue  # about the machine: _stall
                settings = self.settings.for_gpu(gpu.index, kind.key)
                if not settings.enabled:
                    continue
                tracker = self._trackers.setdefault((gpu.index, kind.key), _Tracker())
                event = self._step(kind, settings, tracker, gpu, info.name, sample.timestamp_s)
                if event is not None:
                    found.append(event)
        self.events.extend(found)
        return found

    def _stall(self, sample: Sample) -> AlertEvent | None:
        if not self.settings.rules.get("driver_stalled", RULE_BY_KEY["driver_stalled"].defaults).enabled:
            return None
        tracker = self._trackers.setdefault((MACHINE, "driver_stalled"), _Tracker())
        now_s = sample.timestamp_s
        if sample.stall is not None and tracker.level is None:
            tracker.level = Severity.CRITICAL
            return AlertEvent(
                now_s,
                MACHINE,
                "",
                "driver_stalled",
                "firing",
                Severity.CRITICAL,
                "GPU driver not responding",
                detail=sample.stall.sentence(now_s) + " A GPU may be wedged (see `dmesg` for Xid errors).",
            )
        if sample.stall is None and tracker.level is not None:
            tracker.level = None
            return AlertEvent(
                now_s, MACHINE, "", "driver_stalled", "resolved", Severity.INFO, "GPU driver answering again"
            )
        return None

    # ---- one rule on one GPU ----
    def _step(
        self, kind: RuleKind, settings: RuleSettings, tracker: _Tracker, gpu: GpuSample, name: str, now_s: float
    ) -> AlertEvent | None:
        if kind.key == "gpu_lost":
            return self._lost(tracker, gpu, name, now_s)
        if gpu.lost:
            return None  # a lost GPU's values are all missing: every other state holds
        if kind.key == "xid":
            return self._xid(settings, tracker, gpu, name, now_s)
        if kind.key == "job_finished":
            return self._job(settings, tracker, gpu, name, now_s)
        if kind.key == "throttle":
            reasons = gpu.value("clock_event_reasons")
            if math.isnan(reasons):
                return None
            active = int(reasons) & (THERMAL_REASON_MASK | POWER_REASON_MASK)
            why = "thermal" if int(reasons) & THERMAL_REASON_MASK else "power"
            target = Severity.WARNING if active else None
            # An on/off condition has no clear threshold: its hysteresis is in time. It clears
            # only once it has been gone for the hold time too.
            if target is None and tracker.level is not None:
                if math.isnan(tracker.clear_since_s):
                    tracker.clear_since_s = now_s
                if now_s - tracker.clear_since_s < settings.hold_s:
                    return None
            tracker.clear_since_s = math.nan
            return self._advance(kind, settings, tracker, target, math.nan, name, gpu.index, now_s, f"{why} throttling")
        value = _value(gpu, kind.key)
        if math.isnan(value):
            return None  # no value: the state holds
        target = _target(kind, settings, value, tracker.level)
        return self._advance(kind, settings, tracker, target, value, name, gpu.index, now_s, "")

    def _advance(
        self,
        kind: RuleKind,
        settings: RuleSettings,
        tracker: _Tracker,
        target: Severity | None,
        value: float,
        name: str,
        gpu: int,
        now_s: float,
        text: str,
    ) -> AlertEvent | None:
        if target == tracker.level:
            tracker.pending = None
            return None
        if target is None:  # back under the clear threshold: resolved at once
            tracker.level = tracker.pending = None
            announced, tracker.announced = tracker.announced, False
            return AlertEvent(now_s, gpu, name, kind.key, "resolved", Severity.INFO, "back to normal", value, announced)
        if tracker.level is not None and target < tracker.level:  # critical calming to warning
            tracker.level = target
            tracker.pending = None
            message = text or _describe(kind, value, target)
            return AlertEvent(now_s, gpu, name, kind.key, "firing", target, message, value, notify=False)
        if tracker.pending != target:
            tracker.pending = target
            tracker.pending_since_s = now_s
        if now_s - tracker.pending_since_s < settings.hold_s:
            return None
        tracker.level = target
        tracker.pending = None
        # The cooldown quiets repeats; an escalation (warning to critical) is always told.
        cooled = now_s - tracker.last_notified_s >= settings.cooldown_s
        notify = cooled or tracker.notified_severity is None or target > tracker.notified_severity
        if notify:
            tracker.last_notified_s = now_s
            tracker.notified_severity = target
            tracker.announced = True
        message = text or _describe(kind, value, target)
        return AlertEvent(
            now_s, gpu, name, kind.key, "firing", target, message, value, notify, _thresholds(kind, settings, target)
        )

    def _lost(self, tracker: _Tracker, gpu: GpuSample, name: str, now_s: float) -> AlertEvent | None:
        if gpu.lost and tracker.level is None:
            tracker.level = Severity.CRITICAL
            return AlertEvent(now_s, gpu.index, name, "gpu_lost", "firing", Severity.CRITICAL, "lost: fell off the bus")
        if not gpu.lost and tracker.level is not None:
            tracker.level = None
            return AlertEvent(now_s, gpu.index, name, "gpu_lost", "resolved", Severity.INFO, "back")
        return None

    def _xid(
        self, settings: RuleSettings, tracker: _Tracker, gpu: GpuSample, name: str, now_s: float
    ) -> AlertEvent | None:
        count = gpu.value("xid_error_count")
        if math.isnan(count):
            return None
        previous, tracker.last_xid_count = tracker.last_xid_count, count
        if math.isnan(previous) or count <= previous:
            return None
        code = int(gpu.value("xid_last")) if not math.isnan(gpu.value("xid_last")) else 0
        meaning = XID_MEANINGS.get(code, "see NVIDIA's XID catalog")
        notify = now_s - tracker.last_notified_s >= settings.cooldown_s
        if notify:
            tracker.last_notified_s = now_s
        message = f"XID {code} ({meaning})"
        return AlertEvent(now_s, gpu.index, name, "xid", "event", Severity.CRITICAL, message, float(code), notify)

    def _job(
        self, settings: RuleSettings, tracker: _Tracker, gpu: GpuSample, name: str, now_s: float
    ) -> AlertEvent | None:
        util = gpu.value("utilization_gpu_percent")
        if math.isnan(util):
            return None
        busy_percent, idle_percent = settings.warning_enter, settings.warning_clear
        busy_for_s, idle_for_s = settings.critical_enter, settings.hold_s
        if util >= busy_percent:
            tracker.idle_since_s = math.nan
            if math.isnan(tracker.busy_since_s):
                tracker.busy_since_s = now_s
            if now_s - tracker.busy_since_s >= busy_for_s:
                tracker.armed = True
            return None
        tracker.busy_since_s = math.nan
        if util > idle_percent or not tracker.armed:
            return None
        if math.isnan(tracker.idle_since_s):
            tracker.idle_since_s = now_s
        if now_s - tracker.idle_since_s < idle_for_s:
            return None
        tracker.armed = False
        tracker.idle_since_s = math.nan
        return AlertEvent(now_s, gpu.index, name, "job_finished", "event", Severity.INFO, "job finished (idle now)")
