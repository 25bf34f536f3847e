"""When each GPU was asleep (runtime-suspended): the shaded bands on the timelines.

The history records an asleep GPU's values as missing, like any gap; this says which gaps were
sleep. Kept per GPU index, bounded, fed every sample by the app.
"""

from __future__ import annotations

import math
from collections import deque

from trayvml.core.sample import Sample
from trayvml.monitor.energy import MAX_GAP_S  # readings farther apart are not joined

MAX_SPANS_PER_GPU = 256


class AsleepSpans:
    def __init__(self) -> None:
        self._spans: dict[int, deque[list[float]]] = {}
        self._open: set[int] = set()  # GPUs whose last span is still going on
        self._last_s = -math.inf  # the last sample's time

    def update(self, sample: Sample) -> None:
        now_s = sample.timestamp_s
        # A GPU not in this sample (a stalled driver's samples have none, an unreachable host's
        # stop), or last seen longer ago than readings are joined, ends its span: asleep before and
        # after an hour unread, the hour was shaded as sleep.
        if now_s - self._last_s > MAX_GAP_S:
            self._open.clear()
        self._last_s = now_s
        self._open &= {gpu.index for gpu in sample.gpus}
        for gpu in sample.gpus:
            if not gpu.asleep:
                self._open.discard(gpu.index)
                continue
            spans = self._spans.setdefault(gpu.index, deque(maxlen=MAX_SPANS_PER_GPU))
            if gpu.index in self._open:
                spans[-1][1] = now_s
            else:
                spans.append([now_s, now_s])
                self._open.add(gpu.index)

    def clock_set(self, step_s: float) -> None:
        """The wall clock was set by ``step_s`` (the host's Monitor tells). Set back, a sleep going
        on is a new span from the next sample: one across the step ended before it began and was
        not shown again, for the rest of that sleep."""
        if step_s < 0:
            self._open.clear()
        self._last_s += step_s

    def between(self, start_s: float, end_s: float) -> list[tuple[int, float, float]]:
        """(GPU, from, until) of each span that overlaps the range."""
        return [
            (gpu, begin, end)
            for gpu, spans in self._spans.items()
            for begin, end in spans
            if end >= start_s and begin <= end_s
        ]
