"""The alert rules: each a metric, a direction and levels, or an event; all step alike."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, Generic, TypeVar

from trayvml.alerts.severity import MACHINE, Direction, Severity, _in_sentence, host_prefix
from trayvml.core.i18n import QT_TRANSLATE_NOOP, translate
from trayvml.core.metrics import GPU_METRIC_BY_KEY, HW_SLOWDOWN_REASON, POWER_REASON_MASK, THERMAL_REASON_MASK
from trayvml.core.sample import UNKNOWN_NAME, GpuSample, MetricState, Sample
from trayvml.core.units import DISPLAY_UNITS, GIB, IN_GIB, PERCENT_OF_LIMIT, DisplayUnit, format_duration, short_name


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
    threshold: float = math.nan  # a threshold rule's enter threshold it crossed (in the rule's unit)
    host: str = ""  # a remote host's name (trayvml.ui.remote_hosts); "" for this machine
    ended: str = ""  # a resolution not back to normal: TURNED_OFF or GONE (ended_message)

    @property
    def title(self) -> str:
        at = host_prefix(self.host)
        if self.gpu_index == MACHINE:
            return at + self.message
        # A GPU lost before its name was read is called by its index alone.
        gpu = at + (
            translate("alerts", "GPU {index}").format(index=self.gpu_index)
            if self.gpu_name == UNKNOWN_NAME
            else translate("alerts", "GPU {index} {name}").format(index=self.gpu_index, name=short_name(self.gpu_name))
        )
        if self.kind == "resolved" and not self.ended:  # ended otherwise: its message says so
            return back_to_normal(gpu, self.rule)
        return translate("alerts", "{gpu}: {message}").format(gpu=gpu, message=self.message)


# Why an alert ended when not back to normal (AlertEvent.ended): its rule was turned off in the
# settings while it fired, or its GPU is gone (a MIG instance destroyed, a remote GPU no longer
# reported). Either way nothing steps it any more, and "back to normal" is not known.
TURNED_OFF, GONE = "turned_off", "gone"
ENDED_MESSAGES = {
    TURNED_OFF: QT_TRANSLATE_NOOP("alerts", "{rule} no longer watched (its rule was turned off)"),
    GONE: QT_TRANSLATE_NOOP("alerts", "{rule} no longer watched (the GPU is gone)"),
}
# What a notification ending such an alert says below its title.
ENDED_BODIES = {
    TURNED_OFF: QT_TRANSLATE_NOOP(
        "notices", "Not known to be back to normal: its rule was turned off in the settings."
    ),
    GONE: QT_TRANSLATE_NOOP(
        "notices",
        "Not known to be back to normal: the GPU is no longer there (a MIG instance destroyed, or no longer reported).",
    ),
}


# How a GPU's alert of a state (not a value past a threshold) ends: "GPU lost back to normal" read
# badly. (A machine rule's end is its own message: "GPU driver answering again".)
RECOVERED = {"gpu_lost": QT_TRANSLATE_NOOP("alerts", "{gpu}: answering again (back on the bus)")}


def back_to_normal(gpu: str, rule: str) -> str:
    """An alert's end where it is back to normal, after its GPU (or GPUs, host first)."""
    if rule in RECOVERED:
        return translate("alerts", RECOVERED[rule]).format(gpu=gpu)
    label = _in_sentence(translate("alerts", RULE_BY_KEY[rule].label))
    return translate("alerts", "{gpu}: {rule} back to normal").format(gpu=gpu, rule=label)


def ended_message(rule: str, ended: str) -> str:
    """What ends an alert that is not back to normal (``ended``: TURNED_OFF or GONE), after its
    GPU (a machine rule's: alone)."""
    label = _in_sentence(translate("alerts", RULE_BY_KEY[rule].label))
    return translate("alerts", ENDED_MESSAGES[ended]).format(rule=label)


def ended_body(ended: str) -> str:
    return translate("notices", ENDED_BODIES[ended])


@dataclass(frozen=True)
class RuleSettings:
    """A threshold rule's knobs (event rules read ``enabled`` and some of the times).

    For ABOVE rules each clear threshold must be below its enter one, for BELOW rules above it.
    """

    enabled: bool = True
    warning_enter: float = math.nan  # NaN: no warning level
    warning_clear: float = math.nan
    critical_enter: float = math.nan  # NaN: no critical level
    critical_clear: float = math.nan
    hold_s: float = 0.0  # the condition must last this long before firing
    cooldown_s: float = 300.0  # after a notification, the same rule on the same GPU stays quiet


@dataclass(frozen=True)
class JobSettings:
    """The job-finished rule's knobs: a GPU busy for a while, then idle for a while."""

    enabled: bool = True
    busy_above_percent: float = 50.0  # GPU utilization that counts as busy
    busy_for_s: float = 60.0  # busy this long makes a job worth telling about
    idle_below_percent: float = 5.0  # utilization that counts as idle
    idle_for_s: float = 30.0  # idle this long means the job finished


@dataclass(frozen=True)
class StallSettings:
    """Stalled job: utilization high while nothing happens, for ``hold_s``: the SMs idle (GPM, where
    the GPU has it) or else the power near idle. The signature of a deadlocked NCCL job."""

    enabled: bool = True
    busy_above_percent: float = 95.0  # GPU utilization: a kernel is resident all the time
    sm_below_percent: float = 5.0  # SM activity (GPM) near zero
    power_below_percent: float = 20.0  # of the enforced power limit, where GPM cannot tell
    hold_s: float = 300.0
    cooldown_s: float = 1800.0


@dataclass(frozen=True)
class HeldSettings:
    """Memory held while the GPU does nothing for ``hold_s``: a notebook kernel left open, a zombie."""

    enabled: bool = True
    memory_above_gib: float = 2.0  # more than a desktop's display server holds
    idle_below_percent: float = 5.0  # GPU utilization
    hold_s: float = 1800.0
    cooldown_s: float = 3600.0


AnySettings = RuleSettings | JobSettings | StallSettings | HeldSettings
S = TypeVar("S", RuleSettings, JobSettings, StallSettings, HeldSettings)


@dataclass
class Tracker:
    """One rule's state on one GPU (or on the machine)."""

    level: Severity | None = None  # None: OK
    pending: Severity | None = None
    pending_since_s: float = 0.0
    last_notified_s: float = -math.inf
    # When the firing that announced the current alert was (its end is then told too; see
    # AlertEngine.untold); NaN: not announced.
    announced_at_s: float = math.nan
    notified_severity: Severity | None = None  # of the last notification, within the cooldown
    clear_since_s: float = math.nan  # throttling: when the condition went away
    last_xid_count: float = math.nan
    busy_since_s: float = math.nan
    idle_since_s: float = math.nan
    armed: bool = False  # a job has been busy long enough: its end will be told
    job_since_s: float = math.nan  # when the armed job became busy

    @property
    def announced(self) -> bool:
        """Whether the current firing was notified, so that its end should be too."""
        return not math.isnan(self.announced_at_s)

    def shift_s(self, delta_s: float) -> None:
        """Move every time kept here (each field named ``*_s`` is one) by ``delta_s``: the clock's set."""
        for kept in fields(self):
            if kept.name.endswith("_s"):
                setattr(self, kept.name, getattr(self, kept.name) + delta_s)


# ---- the rules ----
@dataclass(frozen=True)
class Rule(Generic[S]):
    """What a rule watches; its defaults are the settings a new user gets."""

    key: str  # its name in the settings file
    label: str
    defaults: S
    # The settings it reads beside ``enabled``: the numbers its settings row shows.
    numbers: ClassVar[tuple[str, ...]] = ()

    def problems(self, settings: S) -> list[str]:
        """Sentences naming what is wrong with ``settings`` (empty when it is fine)."""
        return [
            translate("alerts", "{rule}: a time cannot be negative ({name} = {value}).").format(
                rule=translate("alerts", self.label), name=name, value=f"{value:g}"
            )
            for name, value in vars(settings).items()
            if name.endswith("_s") and not value >= 0  # NaN too
        ]


class GpuRule(Rule[S]):
    """A rule about one GPU."""

    while_lost: ClassVar[bool] = False  # a lost GPU's values are all missing: its other states hold
    needs: ClassVar[frozenset[str]] = frozenset()  # metrics read only while some consumer asks (GPM)

    def step(self, settings: S, tracker: Tracker, gpu: GpuSample, name: str, now_s: float) -> AlertEvent | None:
        raise NotImplementedError


class MachineRule(Rule[S]):
    """A rule about the whole machine (the driver), stepped on the sample."""

    def step(self, settings: S, tracker: Tracker, sample: Sample) -> AlertEvent | None:
        raise NotImplementedError


LEVELS = ("warning", "critical")
THRESHOLDS = tuple(f"{level}_{edge}" for level in LEVELS for edge in ("enter", "clear"))


@dataclass(frozen=True)
class ThresholdRule(GpuRule[RuleSettings]):
    """A catalog metric, the direction that alarms, and warning and critical levels."""

    metric: str  # a GPU_METRICS key
    direction: Direction = Direction.ABOVE
    display: DisplayUnit | None = None  # the unit thresholds are typed in; None: the metric's own
    numbers: ClassVar[tuple[str, ...]] = (*THRESHOLDS, "hold_s", "cooldown_s")

    @functools.cached_property
    def unit(self) -> DisplayUnit:
        return self.display or DISPLAY_UNITS[GPU_METRIC_BY_KEY[self.metric].unit]

    def reading(self, gpu: GpuSample) -> float:
        """The metric's value on ``gpu`` in the rule's unit (NaN: none)."""
        return self.unit.of(gpu.value(self.metric))

    def beyond(self, value: float, threshold: float) -> bool:
        return value >= threshold if self.direction is Direction.ABOVE else value <= threshold

    def target(self, settings: RuleSettings, value: float, level: Severity | None) -> Severity | None:
        """The level a value calls for, with hysteresis around the current level."""
        for severity, enter, clear in (
            (Severity.CRITICAL, settings.critical_enter, settings.critical_clear),
            (Severity.WARNING, settings.warning_enter, settings.warning_clear),
        ):
            if math.isnan(enter):
                continue
            if self.beyond(value, enter):
                return severity
            if level is not None and level >= severity and not math.isnan(clear) and not self.beyond(clear, value):
                return severity  # between clear and enter: stay where we are
        return None

    def step(
        self, settings: RuleSettings, tracker: Tracker, gpu: GpuSample, name: str, now_s: float
    ) -> AlertEvent | None:
        value = self.reading(gpu)
        if math.isnan(value):
            return None  # no value: the state holds
        target = self.target(settings, value, tracker.level)
        if _stays(tracker, target):
            return None

        def describe(severity: Severity) -> tuple[str, str]:
            if severity is Severity.CRITICAL:
                message = translate("alerts", "{rule} critical at {value}")
            elif self.direction is Direction.ABOVE:
                message = translate("alerts", "{rule} high at {value}")
            else:
                message = translate("alerts", "{rule} low at {value}")
            message = message.format(rule=_in_sentence(translate("alerts", self.label)), value=self.unit.format(value))
            level = LEVELS[severity is Severity.CRITICAL]
            enter, clear = getattr(settings, f"{level}_enter"), getattr(settings, f"{level}_clear")
            above = self.direction is Direction.ABOVE
            # "At … or above": a level is entered at its threshold itself, and cleared at its clear
            # threshold itself (beyond); "above 83 °C" of a GPU at 83 °C read as a contradiction.
            if level == "critical":
                detail = (
                    translate("alerts", "Critical at {enter} {unit} or above; clears at {clear} {unit} or below.")
                    if above
                    else translate("alerts", "Critical at {enter} {unit} or below; clears at {clear} {unit} or above.")
                )
            else:
                detail = (
                    translate("alerts", "Warning at {enter} {unit} or above; clears at {clear} {unit} or below.")
                    if above
                    else translate("alerts", "Warning at {enter} {unit} or below; clears at {clear} {unit} or above.")
                )
            return message, detail.format(enter=f"{enter:g}", clear=f"{clear:g}", unit=self.unit.shown)

        event = _advance(self.key, settings, tracker, target, value, name, gpu.index, now_s, describe)
        if event is not None and event.kind == "firing":
            level = LEVELS[event.severity is Severity.CRITICAL]
            event = replace(event, threshold=getattr(settings, f"{level}_enter"))
        return event

    def clear_words(self) -> tuple[str, str]:
        """Where a level is entered and where it clears: ('above', 'below') when high values alarm."""
        return ("above", "below") if self.direction is Direction.ABOVE else ("below", "above")

    def problems(self, settings: RuleSettings) -> list[str]:
        found = []
        _, back = self.clear_words()
        rule = translate("alerts", self.label)
        words = {
            "warning": translate("alerts", "warning"),
            "critical": translate("alerts", "critical"),
            "above": translate("alerts", "above"),
            "below": translate("alerts", "below"),
        }
        for level in LEVELS:
            enter = getattr(settings, f"{level}_enter")
            clear = getattr(settings, f"{level}_clear")
            if math.isnan(enter):
                continue
            if math.isnan(clear):
                found.append(
                    translate("alerts", "{rule}: the {level} level needs a clear threshold.").format(
                        rule=rule, level=words[level]
                    )
                )
            elif self.beyond(clear, enter):
                found.append(
                    translate(
                        "alerts",
                        "{rule}: the {level} clear threshold ({clear}) must be {side} its enter threshold "
                        "({enter}), or a value near it would alert again and again.",
                    ).format(rule=rule, level=words[level], clear=f"{clear:g}", side=words[back], enter=f"{enter:g}")
                )
        warning, critical = settings.warning_enter, settings.critical_enter
        if not math.isnan(warning) and not math.isnan(critical) and self.beyond(warning, critical):
            found.append(
                translate("alerts", "{rule}: the critical threshold must be beyond the warning one.").format(rule=rule)
            )
        return found + super().problems(settings)


def _stays(tracker: Tracker, target: Severity | None) -> bool:
    """Whether a rule's state stays as it is (``target`` is its level): then nothing is pending either.
    Checked before a rule words what it would say (most samples change nothing)."""
    if target == tracker.level:
        tracker.pending = None
        return True
    return False


def _advance(
    rule: str,
    settings: RuleSettings | StallSettings | HeldSettings,
    tracker: Tracker,
    target: Severity | None,
    value: float,
    name: str,
    gpu: int,
    now_s: float,
    describe: Callable[[Severity], tuple[str, str]],
) -> AlertEvent | None:
    """Move a firing rule's state towards ``target``, through its hold time and cooldown.

    ``describe``: a severity's message and detail (what the notification says).
    """
    if _stays(tracker, target):
        return None
    if target is None:  # back beyond the clear threshold: resolved at once
        tracker.level = tracker.pending = None
        announced, tracker.announced_at_s = tracker.announced, math.nan
        return AlertEvent(
            now_s, gpu, name, rule, "resolved", Severity.INFO, translate("alerts", "back to normal"), value, announced
        )
    if tracker.level is not None and target < tracker.level:  # critical calming to warning
        tracker.level = target
        tracker.pending = None
        return AlertEvent(now_s, gpu, name, rule, "firing", target, describe(target)[0], value, notify=False)
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
        if not tracker.announced:
            tracker.announced_at_s = now_s
    message, detail = describe(target)
    return AlertEvent(now_s, gpu, name, rule, "firing", target, message, value, notify, detail)


@dataclass(frozen=True)
class LostRule(GpuRule[RuleSettings]):
    """The GPU stopped answering (fell off the bus): told once, and once more when it is back."""

    while_lost: ClassVar[bool] = True

    def step(
        self, settings: RuleSettings, tracker: Tracker, gpu: GpuSample, name: str, now_s: float
    ) -> AlertEvent | None:
        if gpu.lost and tracker.level is None:
            tracker.level = Severity.CRITICAL
            lost = translate("alerts", "lost: fell off the bus")
            return AlertEvent(now_s, gpu.index, name, self.key, "firing", Severity.CRITICAL, lost)
        if not gpu.lost and tracker.level is not None:
            tracker.level = None
            return AlertEvent(now_s, gpu.index, name, self.key, "resolved", Severity.INFO, translate("alerts", "back"))
        return None


XID_MEANINGS = {
    13: QT_TRANSLATE_NOOP("alerts", "graphics engine exception"),
    31: QT_TRANSLATE_NOOP("alerts", "GPU memory page fault"),
    43: QT_TRANSLATE_NOOP("alerts", "GPU stopped processing"),
    45: QT_TRANSLATE_NOOP("alerts", "preemptive cleanup"),
    48: QT_TRANSLATE_NOOP("alerts", "double-bit ECC error"),
    61: QT_TRANSLATE_NOOP("alerts", "internal micro-controller breakpoint"),
    62: QT_TRANSLATE_NOOP("alerts", "internal micro-controller halt"),
    63: QT_TRANSLATE_NOOP("alerts", "ECC page retirement or row remapping"),
    64: QT_TRANSLATE_NOOP("alerts", "ECC page retirement or row remapping failure"),
    74: QT_TRANSLATE_NOOP("alerts", "NVLink error"),
    79: QT_TRANSLATE_NOOP("alerts", "GPU has fallen off the bus"),
    92: QT_TRANSLATE_NOOP("alerts", "high single-bit ECC error rate"),
    94: QT_TRANSLATE_NOOP("alerts", "contained ECC error"),
    95: QT_TRANSLATE_NOOP("alerts", "uncontained ECC error"),
}


@dataclass(frozen=True)
class XidRule(GpuRule[RuleSettings]):
    """A new XID error (the driver's error report): an event, quiet within the cooldown."""

    numbers: ClassVar[tuple[str, ...]] = ("cooldown_s",)

    def step(
        self, settings: RuleSettings, tracker: Tracker, gpu: GpuSample, name: str, now_s: float
    ) -> AlertEvent | None:
        count = gpu.value("xid_error_count")
        if math.isnan(count):
            return None
        previous, tracker.last_xid_count = tracker.last_xid_count, count
        if math.isnan(previous) or count <= previous:
            return None
        code = int(gpu.value("xid_last")) if not math.isnan(gpu.value("xid_last")) else 0
        meaning = translate("alerts", XID_MEANINGS.get(code, QT_TRANSLATE_NOOP("alerts", "see NVIDIA's XID catalog")))
        notify = now_s - tracker.last_notified_s >= settings.cooldown_s
        if notify:
            tracker.last_notified_s = now_s
        message = f"XID {code} ({meaning})"
        return AlertEvent(now_s, gpu.index, name, self.key, "event", Severity.CRITICAL, message, float(code), notify)


@dataclass(frozen=True)
class ThrottleRule(GpuRule[RuleSettings]):
    """Sustained thermal or power throttling (a warning)."""

    numbers: ClassVar[tuple[str, ...]] = ("hold_s", "cooldown_s")

    def step(
        self, settings: RuleSettings, tracker: Tracker, gpu: GpuSample, name: str, now_s: float
    ) -> AlertEvent | None:
        reasons = gpu.value("clock_event_reasons")
        if math.isnan(reasons):
            return None
        # Not SwPowerCap (0x4): held at the power limit is normal under load (see POWER_REASON_MASK).
        active = int(reasons) & (THERMAL_REASON_MASK | POWER_REASON_MASK | HW_SLOWDOWN_REASON)
        target = Severity.WARNING if active else None
        # An on/off condition has no clear threshold: its hysteresis is in time. It clears
        # only once it has been gone for the hold time too.
        if target is None and tracker.level is not None:
            if math.isnan(tracker.clear_since_s):
                tracker.clear_since_s = now_s
            if now_s - tracker.clear_since_s < settings.hold_s:
                return None
        tracker.clear_since_s = math.nan
        if _stays(tracker, target):
            return None

        def describe(_: Severity) -> tuple[str, str]:  # said only when an alert changes, not every sample
            if int(reasons) & THERMAL_REASON_MASK:
                return translate("alerts", "thermal throttling"), ""
            if int(reasons) & POWER_REASON_MASK:
                return translate("alerts", "power throttling"), ""
            return translate("alerts", "hardware slowdown"), ""

        return _advance(self.key, settings, tracker, target, math.nan, name, gpu.index, now_s, describe)


@dataclass(frozen=True)
class JobRule(GpuRule[JobSettings]):
    """A GPU busy for a while, then idle for a while: the job on it has finished."""

    numbers: ClassVar[tuple[str, ...]] = ("busy_above_percent", "busy_for_s", "idle_below_percent", "idle_for_s")

    def step(
        self, settings: JobSettings, tracker: Tracker, gpu: GpuSample, name: str, now_s: float
    ) -> AlertEvent | None:
        # A GPU runtime-suspended (a laptop's, once its job ended) runs nothing: idle, not unknown.
        # Waited out as unknown, the job's notice never came, and the next job's named both.
        util = 0.0 if gpu.asleep else gpu.value("utilization_gpu_percent")
        if math.isnan(util):
            return None
        if util >= settings.busy_above_percent:
            tracker.idle_since_s = math.nan
            if math.isnan(tracker.busy_since_s):
                tracker.busy_since_s = now_s
            if now_s - tracker.busy_since_s >= settings.busy_for_s and not tracker.armed:
                tracker.armed = True
                tracker.job_since_s = tracker.busy_since_s
            return None
        tracker.busy_since_s = math.nan
        if util > settings.idle_below_percent:
            tracker.idle_since_s = math.nan  # an idle spell is unbroken, or none: a checkpoint's dip is not one
            return None
        if not tracker.armed:
            return None
        if math.isnan(tracker.idle_since_s):
            tracker.idle_since_s = now_s
        if now_s - tracker.idle_since_s < settings.idle_for_s:
            return None
        busy_s = tracker.idle_since_s - tracker.job_since_s
        tracker.armed = False
        tracker.idle_since_s = math.nan
        # The value is the job's span until now, over which the app tells its energy.
        message = translate("alerts", "job finished after {duration} (idle now)").format(
            duration=format_duration(busy_s, "min")
        )
        return AlertEvent(
            now_s, gpu.index, name, self.key, "event", Severity.INFO, message, now_s - tracker.job_since_s
        )

    def problems(self, settings: JobSettings) -> list[str]:
        busy, idle = settings.busy_above_percent, settings.idle_below_percent
        rule = translate("alerts", self.label)
        found = [
            translate("alerts", "{rule}: {what} must be a percentage from 0 to 100.").format(rule=rule, what=what)
            for what, value in ((translate("alerts", "busy above"), busy), (translate("alerts", "idle below"), idle))
            if not 0 <= value <= 100  # NaN too
        ]
        if not found and not idle < busy:
            found.append(
                translate(
                    "alerts",
                    "{rule}: idle below ({idle} %) must be under busy above ({busy} %), "
                    "or a GPU would be busy and idle at once.",
                ).format(rule=rule, idle=f"{idle:g}", busy=f"{busy:g}")
            )
        return found + super().problems(settings)


# Hysteresis margins: a stalled or idle GPU clears only once clearly busy again.
_STALL_CLEAR_UTIL = 10.0  # percentage points below the busy threshold
_STALL_CLEAR_MARGIN = 5.0  # percentage points above the SM or power threshold
_HELD_CLEAR_UTIL = 10.0  # percentage points above the idle threshold


@dataclass(frozen=True)
class StalledRule(GpuRule[StallSettings]):
    """Utilization high but the SMs (or, without GPM, the power) idle: the job is stuck."""

    numbers: ClassVar[tuple[str, ...]] = (
        "busy_above_percent",
        "sm_below_percent",
        "power_below_percent",
        "hold_s",
        "cooldown_s",
    )
    needs: ClassVar[frozenset[str]] = frozenset({"sm_activity_percent"})

    def step(
        self, settings: StallSettings, tracker: Tracker, gpu: GpuSample, name: str, now_s: float
    ) -> AlertEvent | None:
        util = gpu.value("utilization_gpu_percent")
        sm_state = gpu.state("sm_activity_percent")
        if sm_state is MetricState.OK:
            idle, threshold, what = gpu.value("sm_activity_percent"), settings.sm_below_percent, "SM activity"
        elif sm_state is MetricState.NOT_SUPPORTED:
            idle, threshold, what = gpu.value("power_used_percent"), settings.power_below_percent, "power"
        else:
            return None  # SM activity not read this tick: the state holds
        if math.isnan(util) or math.isnan(idle):
            return None
        stalled = util >= settings.busy_above_percent and idle < threshold
        if tracker.level is not None and not stalled:  # hysteresis: clear only when clearly working
            working = util < settings.busy_above_percent - _STALL_CLEAR_UTIL or idle >= threshold + _STALL_CLEAR_MARGIN
            stalled = not working
        target = Severity.WARNING if stalled else None
        if _stays(tracker, target):
            return None

        def describe(_: Severity) -> tuple[str, str]:  # said only when an alert changes, not every sample
            if what == "power":
                detail = translate(
                    "alerts",
                    "Utilization {util} % while power is {idle} % of the power limit: a kernel is resident but "
                    "nothing runs (a deadlocked collective?).",
                )
            else:
                detail = translate(
                    "alerts",
                    "Utilization {util} % while SM activity is {idle} %: a kernel is resident but nothing "
                    "runs (a deadlocked collective?).",
                )
            return translate("alerts", "job stalled"), detail.format(util=f"{util:.0f}", idle=f"{idle:.0f}")

        return _advance(self.key, settings, tracker, target, util, name, gpu.index, now_s, describe)

    def problems(self, settings: StallSettings) -> list[str]:
        rule = translate("alerts", self.label)
        found = [
            translate("alerts", "{rule}: {what} must be a percentage from 0 to 100.").format(rule=rule, what=what)
            for what, value in (
                (translate("alerts", "busy above"), settings.busy_above_percent),
                (translate("alerts", "SM below"), settings.sm_below_percent),
                (translate("alerts", "power below"), settings.power_below_percent),
            )
            if not 0 <= value <= 100
        ]
        return found + super().problems(settings)


@dataclass(frozen=True)
class HeldRule(GpuRule[HeldSettings]):
    """Memory held while the GPU does nothing (its notification names the biggest processes)."""

    numbers: ClassVar[tuple[str, ...]] = ("memory_above_gib", "idle_below_percent", "hold_s", "cooldown_s")

    def step(
        self, settings: HeldSettings, tracker: Tracker, gpu: GpuSample, name: str, now_s: float
    ) -> AlertEvent | None:
        util, used = gpu.value("utilization_gpu_percent"), gpu.value("memory_used_bytes")
        if math.isnan(util) or math.isnan(used) or gpu.unified_memory:
            # Unified memory (GB10): "used" is the host's RAM in use, the desktop's included; it
            # says nothing of memory a process holds on the GPU. The memory-used rule still tells
            # when the shared memory runs out.
            return None
        held = used >= settings.memory_above_gib * GIB and util <= settings.idle_below_percent
        if tracker.level is not None and not held:
            held = used >= settings.memory_above_gib * GIB and util <= settings.idle_below_percent + _HELD_CLEAR_UTIL
        target = Severity.WARNING if held else None
        if _stays(tracker, target):
            return None

        def describe(_: Severity) -> tuple[str, str]:  # said only when an alert changes, not every sample
            idle_for = format_duration(settings.hold_s, "min")
            message = translate("alerts", "{memory} GiB held, GPU idle for {duration}").format(
                memory=f"{used / GIB:.1f}", duration=idle_for
            )
            detail = translate("alerts", "A notebook kernel left open, or a crashed job's process, may be holding it.")
            return message, detail

        return _advance(self.key, settings, tracker, target, used, name, gpu.index, now_s, describe)

    def problems(self, settings: HeldSettings) -> list[str]:
        found = []
        if not settings.memory_above_gib >= 0:
            found.append(
                translate("alerts", "{rule}: memory above must be a number of GiB, 0 or more.").format(
                    rule=translate("alerts", self.label)
                )
            )
        if not 0 <= settings.idle_below_percent <= 100:
            found.append(
                translate("alerts", "{rule}: {what} must be a percentage from 0 to 100.").format(
                    rule=translate("alerts", self.label), what=translate("alerts", "idle below")
                )
            )
        return found + super().problems(settings)


@dataclass(frozen=True)
class DriverStallRule(MachineRule[RuleSettings]):
    """The driver has not answered for the sampler's grace time (a few intervals): told once,
    and once more when it answers again."""

    def step(self, settings: RuleSettings, tracker: Tracker, sample: Sample) -> AlertEvent | None:
        now_s = sample.timestamp_s
        if sample.stall is not None and tracker.level is None:
            tracker.level = Severity.CRITICAL
            detail = sample.stall.sentence(now_s) + translate(
                "alerts", " A GPU may be wedged (see `dmesg` for Xid errors)."
            )
            return AlertEvent(
                now_s, MACHINE, "", self.key, "firing", Severity.CRITICAL, sample.stall.headline, detail=detail
            )
        if sample.stall is None and tracker.level is not None:
            tracker.level = None
            return AlertEvent(
                now_s,
                MACHINE,
                "",
                self.key,
                "resolved",
                Severity.INFO,
                translate("alerts", "GPU driver answering again"),
            )
        return None


RULES: tuple[Rule[Any], ...] = (
    ThresholdRule(
        "temperature",
        QT_TRANSLATE_NOOP("alerts", "GPU temperature"),
        RuleSettings(True, 83.0, 78.0, 90.0, 85.0, hold_s=5.0),
        "temperature_gpu_c",
    ),
    # Relative to each GPU's own limit (NVML's shutdown threshold), where fixed °C cannot fit every
    # GPU: a laptop GPU runs at 90 °C by design, a datacenter one shuts down at 92 °C.
    ThresholdRule(
        "temperature_limit",
        QT_TRANSLATE_NOOP("alerts", "Margin to the shutdown temperature"),
        RuleSettings(False, 8.0, 10.0, 3.0, 5.0, hold_s=5.0),
        "temperature_below_shutdown_c",
        Direction.BELOW,
    ),
    # Off by default: near-full memory is how ML jobs run (frameworks reserve it all), and on
    # for a node it fired on every GPU at once. When on, it waits a minute before telling.
    ThresholdRule(
        "memory_used",
        QT_TRANSLATE_NOOP("alerts", "Memory used"),
        RuleSettings(False, 95.0, 90.0, 99.0, 97.0, hold_s=60.0, cooldown_s=1800.0),
        "memory_used_percent",
    ),
    # On by default (since settings version 4), where memory used is not: a framework that
    # reserves nearly all of a GPU still leaves more than 2 GiB free on any card large enough
    # to train on, while under 2 GiB (0.5 critical) the next allocation is likely to fail. It
    # counts GiB, not a share: 3 % of an 80 GiB card would be the same 2.4 GiB, of an 8 GiB one
    # too little to tell. It waits half a minute (a job's peak passes) and tells once per 30 min.
    ThresholdRule(
        "memory_free",
        QT_TRANSLATE_NOOP("alerts", "Memory free"),
        RuleSettings(True, 2.0, 3.0, 0.5, 1.0, hold_s=30.0, cooldown_s=1800.0),
        "memory_free_bytes",
        Direction.BELOW,
        IN_GIB,
    ),
    ThresholdRule(
        "power",
        QT_TRANSLATE_NOOP("alerts", "Power draw"),
        RuleSettings(False, 95.0, 90.0, hold_s=30.0),
        "power_used_percent",
        display=PERCENT_OF_LIMIT,
    ),
    LostRule("gpu_lost", QT_TRANSLATE_NOOP("alerts", "GPU lost"), RuleSettings(True, cooldown_s=0.0)),
    DriverStallRule(
        "driver_stalled", QT_TRANSLATE_NOOP("alerts", "GPU driver not responding"), RuleSettings(True, cooldown_s=0.0)
    ),
    XidRule("xid", QT_TRANSLATE_NOOP("alerts", "XID error"), RuleSettings(True, cooldown_s=60.0)),
    # Sustained: a GPU near its limits dips in and out of slowdown every few seconds.
    ThrottleRule(
        "throttle", QT_TRANSLATE_NOOP("alerts", "Thermal or power throttling"), RuleSettings(True, hold_s=30.0)
    ),
    JobRule("job_finished", QT_TRANSLATE_NOOP("alerts", "Job finished"), JobSettings(enabled=False)),
    StalledRule("stalled", QT_TRANSLATE_NOOP("alerts", "Stalled job"), StallSettings()),
    HeldRule("memory_held_idle", QT_TRANSLATE_NOOP("alerts", "Memory held, GPU idle"), HeldSettings()),
)
RULE_BY_KEY: Mapping[str, Rule[Any]] = {r.key: r for r in RULES}
# Defaults of earlier versions that later ones changed: a settings file that still holds one
# exactly was never chosen by its user, and takes today's default (trayvml.config migrates).
FORMER_DEFAULTS: Mapping[str, AnySettings] = {
    "memory_used": RuleSettings(True, 90.0, 85.0, 97.0, 93.0, hold_s=10.0),  # before settings version 3
    "memory_free": RuleSettings(False, 4.0, 6.0, 1.0, 2.0, hold_s=10.0),  # before settings version 4
}
# The settings version that changed each default above: a file of that version or later was
# written while today's default was offered, so what it holds was kept by its user.
DEFAULT_CHANGED_IN: Mapping[str, int] = {"memory_used": 3, "memory_free": 4}
THRESHOLD_RULES = tuple(r for r in RULES if isinstance(r, ThresholdRule))
GPU_RULES = tuple(r for r in RULES if isinstance(r, GpuRule))
MACHINE_RULES = tuple(r for r in RULES if isinstance(r, MachineRule))
