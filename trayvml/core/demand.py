"""What someone is looking at: consumers declare the GPU metrics they need; the reader reads the union.

This is what keeps the monitor cheap (nvitop calls it "sparse query"): process lists cost
milliseconds of driver time per GPU, and nobody needs them while the tray sits closed. Each
consumer (the history, the tray icon, the alert engine, a window page, a CLI column) names what
it needs under its own name and replaces it when what it shows changes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from trayvml.core.clock import due
from trayvml.core.metrics import GPU_METRICS

PROCESSES = "processes"  # the process lists (names, memory), beyond the count
PROCESS_PERIOD_S = 5.0  # how often the process lists are read: a process query costs milliseconds in the driver
# The energy counter is read with them (nvml/specs.py: it costs an H200's driver 4 ms), except where
# each sample must be read at its time (Source's every_tick: a snapshot, a log).
ENERGY_PERIOD_S = PROCESS_PERIOD_S
EVERYTHING: frozenset[str] = frozenset(m.key for m in GPU_METRICS) | {PROCESSES}
# What the timelines record while nothing else asks: every metric with a history, so that opening
# the window shows the past, but not the process lists (and so not their count).
# GPM activity neither: it is read only while shown or watched (see Metric.always_recorded).
HISTORY: frozenset[str] = frozenset(
    m.key for m in GPU_METRICS if m.history and m.always_recorded and m.key != "process_count"
)

# While nothing shown needs them, the process lists are read this often for the history on disk (the
# tray app's store): the step of memory's finest process tier (history.rings.PROCESS_STEP_S; not
# imported: it brings numpy). The idle tray's tooltip names jobs from these readings.
STORE_PROCESSES_S = 10.0


class StoreLists:
    """When the history on disk asks for the process lists: once every STORE_PROCESSES_S, not each
    second (a list costs milliseconds of driver time a GPU); on the wall clock the samples carry,
    also across a clock set back."""

    def __init__(self) -> None:
        self._asked_s = -math.inf

    def due(self, now_s: float) -> bool:
        """Whether the sample at ``now_s`` reads them (and, if so, that it did)."""
        wait_s = STORE_PROCESSES_S - 0.5
        if not math.isfinite(now_s) or not due(now_s, self._asked_s + wait_s, wait_s):
            return False
        self._asked_s = now_s
        return True


class Demand:
    """The union of what each consumer needs; ``wanted`` is what the reader reads."""

    def __init__(self) -> None:
        self._needs: dict[str, frozenset[str]] = {}
        self.wanted: frozenset[str] = frozenset()

    def need(self, consumer: str, keys: Iterable[str]) -> None:
        """``consumer`` needs ``keys`` from now on (replacing what it needed before)."""
        keys = frozenset(keys)
        unknown = keys - EVERYTHING
        if unknown:
            raise KeyError(f"not GPU metrics: {', '.join(sorted(unknown))}")
        if keys:
            self._needs[consumer] = keys
        else:
            self._needs.pop(consumer, None)
        self.wanted = frozenset().union(*self._needs.values())
