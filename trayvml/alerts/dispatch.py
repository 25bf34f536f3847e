"""Which alert events become notifications: the policy between the alert engine and the notifier.

Pure and clock-injected, so that every rule is a table test: notifications off, paused alerts
(the alert states go on, only notifications stop), a snoozed host, GPU and rule, the rule's own
cooldown (``AlertEvent.notify``), and events held back until a notifier is ready.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from trayvml.alerts.rules import AlertEvent
from trayvml.core.clock import Clock

SNOOZE_S = 3600.0
MAX_HELD_BACK = 100  # before the notifier is ready; beyond that the oldest are dropped


@dataclass(frozen=True)
class Outgoing:
    """A notification to send: the event and the lines that follow its own text (e.g. processes)."""

    event: AlertEvent
    details: str = ""
    actions: tuple[str, ...] = ()  # what its notification offers beyond "Open graphs" and "Snooze" (KERNEL)


KERNEL = "kernel"  # the action "Shut down kernel…": a notebook of this user's holds the idle GPU's memory


@dataclass(frozen=True)
class _Quiet:
    """A pause or a snooze: until a wall-clock time, asked for so many seconds."""

    until_s: float
    length_s: float

    def on(self, now_s: float) -> bool:
        # By the wall clock, so that an hour asked for ends an hour on also across a suspend
        # (wherever the monotonic clock stands still then); one set back meanwhile leaves more
        # than was asked for to wait, and that ends it now (it lasted the hour and the step).
        return now_s < self.until_s and self.until_s - now_s <= self.length_s


_NOT_QUIET = _Quiet(-math.inf, 0.0)


@dataclass
class Dispatcher:
    clock: Clock
    notifications_on: bool = True
    pausing: _Quiet = _NOT_QUIET  # an infinite one: until resumed
    # By (host, GPU index, rule); host "" is this machine: a remote GPU 0 is not this machine's GPU 0.
    snoozed: dict[tuple[str, int, str], _Quiet] = field(default_factory=dict)
    ready: bool = False  # a notifier exists; until then events wait in ``held_back``
    held_back: list[Outgoing] = field(default_factory=list)

    @property
    def paused(self) -> bool:
        return self.pausing.on(self.clock.now_s())

    def pause(self, seconds: float) -> None:
        """Pause notifications for ``seconds`` (inf: until resumed; 0: resume)."""
        self.pausing = _NOT_QUIET if seconds <= 0 else _Quiet(self.clock.now_s() + seconds, seconds)

    def snooze(self, gpu_index: int, rule: str, seconds: float = SNOOZE_S, host: str = "") -> None:
        self.snoozed[(host, gpu_index, rule)] = _Quiet(self.clock.now_s() + seconds, seconds)

    def renumber(self, host: str, moves: Mapping[int, int | None]) -> None:
        """``host``'s GPUs were numbered afresh (core.sample.renumbering): a snooze follows its GPU,
        one of a GPU gone goes (kept, it silenced the GPU given the index instead)."""
        self.snoozed = {
            (h, new, rule): quiet
            for (h, gpu, rule), quiet in self.snoozed.items()
            if (new := moves.get(gpu, gpu) if h == host else gpu) is not None
        }

    def why_not(self, event: AlertEvent) -> str:
        """Why ``event`` should not reach the user now; "" when it should."""
        if not event.notify:
            return "within the rule's cooldown"
        if not self.notifications_on:
            return "notifications are off"
        if self.paused:
            return "alerts are paused"
        if self.snoozed.get((event.host, event.gpu_index, event.rule), _NOT_QUIET).on(self.clock.now_s()):
            return "snoozed"
        return ""

    def wanted(self, event: AlertEvent) -> bool:
        """Whether ``event`` should reach the user now."""
        return not self.why_not(event)

    def offer(self, outgoing: Outgoing) -> list[Outgoing]:
        """What to send now for one event: nothing, the event, or (not ready) nothing yet."""
        if not self.wanted(outgoing.event):
            return []
        if not self.ready:
            self.held_back = [*self.held_back, outgoing][-MAX_HELD_BACK:]
            return []
        return [outgoing]

    def notifier_ready(self) -> list[Outgoing]:
        """The notifier exists: what was held back, minus what a pause or snooze since then quiets."""
        self.ready = True
        held, self.held_back = self.held_back, []
        return [o for o in held if self.wanted(o.event)]
