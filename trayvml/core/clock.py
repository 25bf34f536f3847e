"""Clocks, injected everywhere time matters so that tests can run simulated hours in seconds."""

from __future__ import annotations

import math
import time
from typing import Protocol


def epoch_ms(t_s: float) -> int:
    """``t_s`` cut to the millisecond, as the CSV and the history on disk both keep it. The
    microsecond added makes a time read back from milliseconds (``ms / 1000``, a double a few
    ten-thousandths of a millisecond off) cut to the same millisecond again."""
    return math.floor(t_s * 1000 + 0.001)


class Clock(Protocol):
    def now_s(self) -> float:
        """Wall-clock time in seconds since the Unix epoch."""
        ...

    def sleep_s(self, seconds: float) -> None: ...


class SystemClock:
    def now_s(self) -> float:
        return time.time()

    def sleep_s(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class ManualClock:
    """A clock that moves only when told to (sleeping advances it at once)."""

    def __init__(self, start_s: float = 1_800_000_000.0) -> None:
        self._now_s = start_s

    # Reading a float attribute is atomic, and only the test's thread advances the clock,
    # so no lock is needed (this clock is read on every simulated NVML call).
    def now_s(self) -> float:
        return self._now_s

    def advance_s(self, seconds: float) -> None:
        self._now_s += seconds

    def sleep_s(self, seconds: float) -> None:
        if seconds > 0:
            self.advance_s(seconds)
