"""Which alert events become notifications: the policy between the alert engine and the notifier.

Pure and clock-injected, so that every rule is a table test: notifications off, paused alerts
(the alert states go on, only notifications stop), a snoozed host, GPU and rule, the rule's own
cooldown (``AlertEvent.notify``), and events held back until a notifier is ready.
"""

from __future__ import annotations

import math
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


@dataclass
class Dispatcher:
    clock: Clock
    notifications_on: bool = True
    # Deadlines on the monotonic clock: "an hour" is one, whatever the wall clock is set to meanwhile.
    paused_until_s: float = -math.inf  # -inf: not paused; inf: until resumed
    # By (host, GPU index, rule); host "" is this machine: a remote GPU 0 is not this machine's GPU 0.
    snoozed_until_s: dict[tuple[str, int, str], float] = field(default_factory=dict)
    ready: bool = False  # a notifier exists; until then events wait in ``held_back``
    held_back: list[Outgoing] = field(default_factory=list)

    @property
    def paused(self) -> bool:
        return self.clock.monotonic_s() < self.paused_until_s

    def pause(self, seconds: float) -> None:
        """Pause notifications for ``seconds`` (inf: until resumed; 0: resume)."""
        self.paused_until_s = -math.inf if seconds <= 0 else self.clock.monotonic_s() + seconds

    def snooze(self, gpu_index: int, rule: str, seconds: float = SNOOZE_S, host: str = "") -> None:
        self.snoozed_until_s[(host, gpu_index, rule)] = self.clock.monotonic_s() + seconds

    def why_not(self, event: AlertEvent) -> str:
        """Why ``event`` should not reach the user now; "" when it should."""
        if not event.notify:
            return "within the rule's cooldown"
        if not self.notifications_on:
            return "notifications are off"
        if self.paused:
            return "alerts are paused"
        if self.clock.monotonic_s() < self.snoozed_until_s.get((event.host, event.gpu_index, event.rule), -math.inf):
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
