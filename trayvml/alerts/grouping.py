"""What a notification says, how urgent it is, and which alerts share one.

Pure and clock-free (the time comes in), so that every case is a table test. One rule firing on
several GPUs within GROUP_WINDOW_S becomes ONE notification ("GPUs 0–7: memory used ≥ 97 %"),
updated in place (the same key, so the same ``replaces_id``) as GPUs join or its level rises,
and resolved once every one of them is back to normal. Critical urgency, which never times out,
is only for what needs a human now: a lost GPU, an XID, a stuck driver, heat at the critical level.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from trayvml.alerts.dispatch import Outgoing
from trayvml.alerts.rules import (
    GONE,
    RULE_BY_KEY,
    AlertEvent,
    ThresholdRule,
    back_to_normal,
    ended_body,
    ended_message,
)
from trayvml.alerts.severity import MACHINE, Direction, Severity, _in_sentence, host_prefix
from trayvml.core.i18n import QT_TRANSLATE_NOOP, translate
from trayvml.core.sample import renumbered
from trayvml.core.units import format_clock, format_duration, short_name

GROUP = -2  # the "GPU index" in the key of a notification about a rule on any number of GPUs
GROUP_WINDOW_S = 60.0  # a GPU whose alert comes this soon after the last joins its notification
MAX_GPU_LINES = 16  # a grouped body names this many GPUs, then how many more
URGENT_RULES = frozenset({"gpu_lost", "xid", "driver_stalled"})  # critical urgency whatever happens
HEAT_RULES = frozenset({"temperature", "temperature_limit"})  # critical urgency at their critical level
LOW, NORMAL, CRITICAL = 0, 1, 2  # freedesktop urgencies
# What to do, where there is something to do (the notification's last line).
ADVICE = {
    "gpu_lost": QT_TRANSLATE_NOOP(
        "notices", "Jobs on it have failed. See `dmesg` for the Xid; a reboot usually brings it back."
    ),
    "xid": QT_TRANSLATE_NOOP(
        "notices", "`dmesg` has the driver's message; NVIDIA's XID catalog says whether the GPU needs a reset."
    ),
    "temperature": QT_TRANSLATE_NOOP(
        "notices", "Check the fans and the airflow: the GPU slows itself down near its limit and shuts down beyond it."
    ),
    "temperature_limit": QT_TRANSLATE_NOOP(
        "notices", "Check the fans and the airflow: the GPU slows itself down near its limit and shuts down beyond it."
    ),
    "throttle": QT_TRANSLATE_NOOP(
        "notices", "Clocks are held down: check the cooling (thermal) or the power limit (power)."
    ),
    "memory_used": QT_TRANSLATE_NOOP("notices", "A job that allocates more will fail with out of memory."),
    "memory_free": QT_TRANSLATE_NOOP("notices", "A job that allocates more will fail with out of memory."),
}


def advice(rule: str) -> str:
    """What to do about an alert of ``rule``, in the user's language; "" where there is nothing to do."""
    return translate("notices", ADVICE[rule]) if rule in ADVICE else ""


@dataclass(frozen=True)
class Notice:
    """One desktop notification; a later notice with the same key replaces it in place."""

    key: tuple[int, str]  # (GPU index, GROUP or MACHINE; rule)
    title: str
    body: str
    urgency: int  # LOW, NORMAL or CRITICAL
    severity: Severity
    resolved: bool = False
    host: str = ""  # a remote host's name; "" for this machine (its GPU 0 is not ours)
    gpus: tuple[int, ...] = ()  # the GPUs it is about (none for a machine-wide alert): pushed webhooks carry them
    actions: tuple[str, ...] = ()  # its own actions beside "Open graphs" and "Snooze" (dispatch.KERNEL)
    simulated: bool = False  # of made-up GPUs (a simulation, a replay): its title says so (shown_title)

    def shown_title(self) -> str:
        """The title as a notification shows it: "[simulated] …" for made-up GPUs (a try-out where
        no driver is must not alarm anyone as real)."""
        return translate("notices", "[simulated] {title}").format(title=self.title) if self.simulated else self.title


def urgency(event: AlertEvent) -> int:
    if event.kind == "resolved" or event.severity is Severity.INFO:
        return LOW
    if event.severity is Severity.CRITICAL and (event.rule in URGENT_RULES or event.rule in HEAT_RULES):
        return CRITICAL
    return NORMAL


def notification_body(event: AlertEvent, details: str = "") -> str:
    """What a notification about one event says below its title: thresholds, details, advice."""
    if event.kind == "resolved":
        if event.ended:
            return ended_body(event.ended)
        return translate("notices", "Back to normal.")
    return "\n".join(part for part in (event.detail, details, advice(event.rule)) if part) or event.message


def notice_for(outgoing: Outgoing) -> Notice:
    """A notification about one event on its own (its key: its GPU and rule)."""
    event = outgoing.event
    return Notice(
        (event.gpu_index, event.rule),
        event.title,
        notification_body(event, outgoing.details),
        urgency(event),
        event.severity,
        event.kind == "resolved",
        event.host,
        (event.gpu_index,) if event.gpu_index >= 0 else (),
        () if event.kind == "resolved" else outgoing.actions,
    )


def gpu_ranges(indices: list[int] | tuple[int, ...]) -> str:
    """'0–3, 6': runs of consecutive GPU indices joined by an en dash."""
    runs: list[list[int]] = []
    for index in sorted(set(indices)):
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" if b > a + 1 else f"{a}, {b}" for a, b in runs)


@dataclass
class _Group:
    """One rule's notification and the GPUs it covers."""

    started_s: float
    last_s: float
    members: dict[int, Outgoing] = field(default_factory=dict)  # GPU -> its latest alert
    firing: set[int] = field(default_factory=set)  # members not back to normal yet
    sent: bool = False
    ended: str = ""  # how a member ended other than back to normal (AlertEvent.ended): the group too

    def open(self, now_s: float, window_s: float) -> bool:
        return bool(self.firing) or now_s - self.last_s <= window_s


class Grouper:
    """Turns the alerts the dispatcher lets through into notices, one per rule across GPUs."""

    def __init__(self, window_s: float = GROUP_WINDOW_S) -> None:
        self.window_s = window_s
        # By (host, rule): a remote host's GPU 0 is another GPU than this machine's.
        self._groups: dict[tuple[str, str], _Group] = {}
        self._last_members: dict[str, tuple[int, ...]] = {}  # of each rule's latest local notification

    def shift_s(self, seconds: float) -> None:
        """The wall clock was set by ``seconds``: the groups' times go with it. Left as they were
        after a set back, every group of the step's last hours was open again: an XID, or a job
        finished hours ago, was told beside a new one, and a resolution lost its length."""
        for group in self._groups.values():
            group.started_s += seconds
            group.last_s += seconds

    def members(self, rule: str) -> tuple[int, ...]:
        """The GPUs the rule's latest notification is about, resolved or not (for its actions)."""
        return self._last_members.get(rule, ())

    def take(self, batch: list[Outgoing], now_s: float) -> list[Notice]:
        """The notices to send for the alerts of one tick (all already wanted by the dispatcher)."""
        notices: list[Notice] = []
        changed: list[tuple[str, str]] = []
        ended: list[tuple[str, str]] = []
        for outgoing in batch:
            event = outgoing.event
            if event.gpu_index == MACHINE:
                notices.append(notice_for(outgoing))
                continue
            key = (event.host, event.rule)
            group = self._groups.get(key)
            if event.kind == "resolved":
                if group is None or event.gpu_index not in group.firing:
                    # Its firing was told outside any group now open (before a pause, say): told
                    # on its own, replacing the rule's last notification unless a group holds it.
                    told = (GROUP, event.rule) if group is None else (event.gpu_index, event.rule)
                    notices.append(replace_key(notice_for(outgoing), told))
                    if group is None:
                        self._remember(key, (event.gpu_index,))
                    continue
                group.firing.discard(event.gpu_index)
                if event.ended == GONE and group.firing:
                    # Its GPU gone, the others still firing: its end is its own (it made the
                    # group's later end say "gone" of a GPU back to normal).
                    group.members.pop(event.gpu_index, None)
                    notices.append(replace_key(notice_for(outgoing), (event.gpu_index, event.rule)))
                    continue
                group.ended = group.ended or event.ended
                if not group.firing and key not in ended:
                    ended.append(key)
                continue
            if group is None or not group.open(now_s, self.window_s):
                group = self._groups[key] = _Group(now_s, now_s)
            group.members[event.gpu_index] = outgoing
            group.last_s = now_s
            if event.kind == "firing":
                group.firing.add(event.gpu_index)
            if key not in changed:
                changed.append(key)
        for key in changed:
            notices.append(self._notice(key, now_s))
            self._groups[key].sent = True
            self._remember(key, tuple(sorted(self._groups[key].members)))
        for key in ended:
            group = self._groups[key]
            if group.firing:  # fired again in the same tick
                continue
            notices.append(self._resolved(key, group, now_s))
            del self._groups[key]
        return notices

    def update(self, outgoing: Outgoing) -> None:
        """A change of level the dispatcher kept from the user (within the rule's cooldown, say): a
        GPU of an open group is said as it is now at the group's next notice. Kept, a GPU back from
        critical to warning stayed critical in its group: another GPU's warning then sent "critical
        at 91 °C" for one at 80, urgent, through a destination's quiet hours."""
        event = outgoing.event
        group = self._groups.get((event.host, event.rule))
        if group is not None and event.gpu_index in group.members:
            group.members[event.gpu_index] = outgoing

    def renumber(self, moves: Mapping[int, int | None]) -> None:
        """The host's GPUs were numbered afresh (core.sample.renumbering; a gone GPU's alerts have
        ended through ``take``): each member follows its GPU, named by its new index from now on;
        a gone GPU leaves its group, and a group left with none is over."""
        for key, group in list(self._groups.items()):
            group.members = {
                gpu: outgoing
                if outgoing.event.gpu_index == gpu
                else replace(outgoing, event=replace(outgoing.event, gpu_index=gpu))
                for gpu, outgoing in renumbered(group.members, moves).items()
            }
            group.firing = set(renumbered(dict.fromkeys(group.firing), moves))
            if not group.members:
                del self._groups[key]
        self._last_members = {
            rule: tuple(sorted(renumbered(dict.fromkeys(gpus), moves))) for rule, gpus in self._last_members.items()
        }

    def forget(self, event: AlertEvent) -> None:
        """A resolution the dispatcher kept from the user (alerts paused, the alert snoozed): its
        GPU leaves its group, nothing told; a group with no GPU firing left is over. Kept, a GPU
        snoozed while hot stayed in its group for good: a warning on another GPU a day later
        joined it, told as critical "since yesterday", and never resolved."""
        key = (event.host, event.rule)
        group = self._groups.get(key)
        if group is None or event.gpu_index == MACHINE:
            return
        group.firing.discard(event.gpu_index)
        group.members.pop(event.gpu_index, None)
        if not group.firing:
            del self._groups[key]

    def _remember(self, key: tuple[str, str], members: tuple[int, ...]) -> None:
        host, rule = key
        if not host:  # a notification's actions act on this machine's GPUs only
            self._last_members[rule] = members

    def _notice(self, key: tuple[str, str], now_s: float) -> Notice:
        host, rule = key
        group = self._groups[key]
        members = sorted(group.members)
        worst = max(group.members.values(), key=lambda o: o.event.severity)  # the first of the worst
        if len(members) == 1:
            notice = replace_key(notice_for(worst), (GROUP, rule))
            lasted = now_s - group.started_s
            if group.sent and lasted >= 1:  # an update: say how long it has lasted
                body = translate("notices", "{body}\nFor {duration} now.").format(
                    body=notice.body, duration=format_duration(lasted, "min")
                )
                notice = replace(notice, body=body)
            return notice
        event = worst.event
        title = host_prefix(host) + translate("notices", "GPUs {gpus}: {what}").format(
            gpus=gpu_ranges(members), what=_what(event, group)
        )
        lines = [event.detail] if event.detail else []
        # One short line for all the GPUs (a server shows a few lines only), then what the worst
        # one's alert adds (its processes: on a node they are mostly one job's ranks).
        said = translate("notices", " · ").join(_gpu_value(group.members[gpu]) for gpu in members[:MAX_GPU_LINES])
        if len(members) > MAX_GPU_LINES:
            said = translate("notices", "{gpus} and {count} more").format(gpus=said, count=len(members) - MAX_GPU_LINES)
        lines.append(said)
        if worst.details:
            lines.append(
                translate("notices", "GPU {index}: {detail}").format(
                    index=event.gpu_index, detail=worst.details.splitlines()[0]
                )
            )
        if now_s - group.started_s >= 1:
            since = translate("notices", "Since {time} ({duration}).")
            lines.append(
                since.format(
                    time=format_clock(group.started_s, seconds=False),
                    duration=format_duration(now_s - group.started_s, "min"),
                )
            )
        if advice(rule):
            lines.append(advice(rule))
        actions = tuple(dict.fromkeys(a for o in group.members.values() for a in o.actions))  # each once, in order
        return Notice(
            (GROUP, rule),
            title,
            "\n".join(lines),
            urgency(event),
            event.severity,
            host=host,
            gpus=tuple(members),
            actions=actions,
        )

    def _resolved(self, key: tuple[str, str], group: _Group, now_s: float) -> Notice:
        host, rule = key
        members = sorted(group.members)
        if len(members) == 1:
            first = group.members[members[0]].event
            gpus = host_prefix(host) + translate("alerts", "GPU {index} {name}").format(
                index=first.gpu_index, name=short_name(first.gpu_name)
            )
        else:
            gpus = host_prefix(host) + translate("notices", "GPUs {gpus}").format(gpus=gpu_ranges(members))
        title = back_to_normal(gpus, rule)
        if group.ended:
            title = translate("alerts", "{gpu}: {message}").format(gpu=gpus, message=ended_message(rule, group.ended))
            body = ended_body(group.ended)
        elif now_s - group.started_s >= 1:
            body = translate("notices", "Back to normal after {duration}.").format(
                duration=format_duration(now_s - group.started_s, "min")
            )
        else:
            body = translate("notices", "Back to normal.")
        return Notice((GROUP, rule), title, body, LOW, Severity.INFO, resolved=True, host=host, gpus=tuple(members))


def replace_key(notice: Notice, key: tuple[int, str]) -> Notice:
    return replace(notice, key=key)


def _label(rule: str) -> str:
    return _in_sentence(translate("alerts", RULE_BY_KEY[rule].label))


def _what(event: AlertEvent, group: _Group) -> str:
    """What all the GPUs share: '≥ 97 %' for a threshold, else the event's words where they agree."""
    rule = RULE_BY_KEY[event.rule]
    if isinstance(rule, ThresholdRule) and not math.isnan(event.threshold):
        sign = "≥" if rule.direction is Direction.ABOVE else "≤"
        return f"{_label(event.rule)} {sign} {rule.unit.format(event.threshold)}"
    messages = {o.event.message for o in group.members.values()}
    return event.message if len(messages) == 1 else _label(event.rule)


def _gpu_value(outgoing: Outgoing) -> str:
    """'GPU 3 at 97 %': a threshold alert's value, else its words."""
    event = outgoing.event
    rule = RULE_BY_KEY[event.rule]
    value = rule.unit.format(event.value) if isinstance(rule, ThresholdRule) and not math.isnan(event.value) else ""
    if value:
        return translate("notices", "GPU {index} at {value}").format(index=event.gpu_index, value=value)
    return translate("notices", "GPU {index}: {message}").format(index=event.gpu_index, message=event.message)
