"""Clocks, injected everywhere time matters so that tests can run simulated hours in seconds.

Two times: the wall clock (``now_s``), which stamps samples and may be set forward or back
(NTP, a user, a resume), and the monotonic clock (``monotonic_s``), which only moves on, counts a
suspend (Linux's CLOCK_BOOTTIME), and paces every sampling loop (:class:`Ticker`) and the
reader's cadences.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Protocol


def epoch_ms(t_s: float) -> int:
    """``t_s`` cut to the millisecond, as the CSV and the history on disk both keep it. The
    microsecond added makes a time read back from milliseconds (``ms / 1000``, a double a few
    ten-thousandths of a millisecond off) cut to the same millisecond again."""
    return math.floor(t_s * 1000 + 0.001)


# A stamp this much before the last one says the wall clock was set back (NTP, a user; a dual-boot
# machine whose hardware clock keeps local time is hours ahead until NTP sets it right). Not for
# less: samples of two endpoints naming one host come a read apart, either first.
CLOCK_SET_BACK_S = 30.0


def set_back_s(last_s: float, now_s: float) -> float:
    """How far the wall clock was set back between two stamps, ``last_s`` then ``now_s``; 0 where
    it was not. Whatever holds a time from before the step (since when, the last time, what lies
    ahead) moves back with it, or holds its durations and ranges for as long as the step."""
    return last_s - now_s if now_s < last_s - CLOCK_SET_BACK_S else 0.0


# The wall clock less the monotonic one moving this much between two readings of both is the wall
# clock set (NTP slews it by half a millisecond a second at most), or, where the monotonic clock
# stands still in a suspend (not Linux's boot-time one), a suspend.
CLOCK_SET_S = 0.5


def clock_step_s(wall_before_s: float, monotonic_before_s: float, wall_now_s: float, monotonic_now_s: float) -> float:
    """How far the wall clock was set between two readings of both clocks: forward above 0, back
    below, 0 where it was not. Without the monotonic times (NaN: a sample made by hand, a replay),
    a set back only, by set_back_s's rule: a forward step cannot be told from a pause."""
    if math.isnan(monotonic_before_s) or math.isnan(monotonic_now_s):
        return -set_back_s(wall_before_s, wall_now_s)
    step_s = (wall_now_s - wall_before_s) - (monotonic_now_s - monotonic_before_s)
    return step_s if abs(step_s) > CLOCK_SET_S else 0.0


def due(now_s: float, at_s: float, wait_s: float) -> bool:
    """Whether a wait of ``wait_s`` on the wall clock, ending at ``at_s``, is over at ``now_s``: also
    where the clock was set back to before the wait began (it lasted as long as the step)."""
    return now_s >= at_s or bool(set_back_s(at_s - wait_s, now_s))


class Clock(Protocol):
    def now_s(self) -> float:
        """Wall-clock time in seconds since the Unix epoch."""
        ...

    def monotonic_s(self) -> float:
        """Seconds from an arbitrary origin that never go back and never jump with the wall clock."""
        ...

    def sleep_s(self, seconds: float) -> None: ...

    def wait_s(self, seconds: float, stop: threading.Event) -> bool:
        """Sleep ``seconds`` or until ``stop`` is set, whichever comes first; True when it is set."""
        ...

    @property
    def counts_suspend(self) -> bool:
        """Whether ``monotonic_s`` goes on while the machine sleeps."""
        ...


def stamp_monotonic_s(clock: Clock) -> float:
    """What a sample carries beside its wall time (Sample.monotonic_s): ``clock``'s monotonic time,
    where it counts a suspend; else NaN. A monotonic clock that stands still in a suspend would
    make the hours asleep look like the wall clock set forward by as much."""
    return clock.monotonic_s() if clock.counts_suspend else math.nan


# Linux's boot-time clock also counts a suspend, where time.monotonic stands still: a reading
# taken before the machine slept is as old as it is, and a slower read is due again on resume.
_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", None)


class SystemClock:
    counts_suspend = _BOOTTIME is not None

    def now_s(self) -> float:
        return time.time()

    def monotonic_s(self) -> float:
        return time.clock_gettime(_BOOTTIME) if _BOOTTIME is not None else time.monotonic()

    def sleep_s(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait_s(self, seconds: float, stop: threading.Event) -> bool:
        return stop.wait(max(seconds, 0.0))


class ManualClock:
    """A clock that moves only when told to (sleeping advances it at once)."""

    counts_suspend = True  # a suspend is advance_s

    def __init__(self, start_s: float = 1_800_000_000.0) -> None:
        self._now_s = start_s
        self._monotonic_s = 0.0

    # Reading a float attribute is atomic, and only the test's thread advances the clock,
    # so no lock is needed (this clock is read on every simulated NVML call).
    def now_s(self) -> float:
        return self._now_s

    def monotonic_s(self) -> float:
        return self._monotonic_s

    def advance_s(self, seconds: float) -> None:
        """Time passes: both clocks move on."""
        self._now_s += seconds
        self._monotonic_s += seconds

    def set_wall_s(self, seconds: float) -> None:
        """The wall clock is set forward (positive) or back (negative); the monotonic clock is not."""
        self._now_s += seconds

    def sleep_s(self, seconds: float) -> None:
        if seconds > 0:
            self.advance_s(seconds)

    def wait_s(self, seconds: float, stop: threading.Event) -> bool:
        if not stop.is_set():
            self.sleep_s(seconds)
        return stop.is_set()


class Ticker:
    """When each tick of a sampling loop is due: every ``interval_s`` on ``clock``'s monotonic clock.

    The first tick is due when the ticker is made; each next one an interval after the one before,
    so that ticks do not drift however long the work in between takes (and the wall clock set
    forward or back changes nothing: stamp samples with ``clock.now_s()``). A tick that comes late
    (the work took longer than an interval) is due at once, and the schedule goes on from there: the
    ticks it missed are skipped, never made up in a burst. ``interval_s`` can be changed at any
    time; the next tick is due that long after the one before.

    Loops that wait themselves call :meth:`wait_next` after each tick's work; a loop whose waiting
    is done by someone else (a Qt timer) calls :meth:`next_delay_s` and waits that long.

    ``mid_slot``: each tick after the first falls in the middle of an interval of the wall clock
    (at 12.5 s, 13.5 s, ... for 1 s), where the history files each sample by the interval its
    stamp falls in. A tick near a slot's edge, stamped after reads whose length varies (the process
    lists and the energy counter every few seconds), crossed it back and forth: one slot got two
    samples, the one after none, and every line showed a gap (at a phase of 0.97 s, 3 slots of 40
    lost). Half an interval either way absorbs what a read takes. Each next tick is then due in the
    middle of the interval after the one the last tick ended in: half an interval to one and a half
    after its end, however late it was or wherever the wall clock jumped.
    """

    def __init__(self, interval_s: float, clock: Clock | None = None, mid_slot: bool = False) -> None:
        self.clock = clock or SystemClock()
        self.mid_slot = mid_slot
        self._interval_s = interval_s
        self._due_s = self.clock.monotonic_s()  # of the tick that is running, or that is waited for
        self._previous_s = self._due_s - interval_s  # of the tick before it

    @property
    def interval_s(self) -> float:
        return self._interval_s

    @interval_s.setter
    def interval_s(self, seconds: float) -> None:
        self._interval_s = seconds
        now_s = self.clock.monotonic_s()
        if now_s < self._due_s:  # a tick is waited for: it is due the new interval after the one before
            self._due_s = self._mid_slot(now_s) if self.mid_slot else max(self._previous_s + seconds, now_s)

    def restart(self) -> None:
        """The tick now running is taken to be due now: the next one is an interval from now (a
        back-off that counts from the end of a failed try, not from its start)."""
        self._due_s = self.clock.monotonic_s()

    def next_delay_s(self) -> float:
        """Call once after each tick's work: the seconds until the next tick is due (0: late, at once)."""
        now_s = self.clock.monotonic_s()
        self._previous_s = self._due_s
        self._due_s = self._mid_slot(now_s) if self.mid_slot else max(self._due_s + self._interval_s, now_s)
        return self._due_s - now_s

    def _mid_slot(self, now_s: float) -> float:
        """Due in the middle of the wall-clock interval after the one it is now in (the one the
        tick just made was stamped in, or before it): half an interval to one and a half from now."""
        interval_s = self._interval_s
        wall_s = self.clock.now_s()
        return now_s + (math.floor(wall_s / interval_s) + 1.5) * interval_s - wall_s

    def delay_s(self) -> float:
        """The seconds until the tick waited for is due, once more (after ``interval_s`` changed)."""
        return max(self._due_s - self.clock.monotonic_s(), 0.0)

    def wait_next(self, stop: threading.Event | None = None) -> bool:
        """Wait until the next tick is due, or until ``stop`` is set (True then). With no ``stop``
        it sleeps, and a KeyboardInterrupt (Ctrl-C, or SIGTERM raised as one) ends the wait."""
        delay_s = self.next_delay_s()
        if stop is None:
            self.clock.sleep_s(delay_s)
            return False
        return self.clock.wait_s(delay_s, stop)
