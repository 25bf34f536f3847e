"""The sampler thread: owns the Source (and so NVML); samples reach the GUI through a signal.

The GUI thread never calls NVML and never waits on it: a slow driver call (a PCIe read blocks
20 ms, a process list several) only delays the next sample, not a repaint.

A simulation also gets a past: before its live Source starts, the same scenario is run over the
hours before now on a manual clock, so that a first look at the window shows more than a minute.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, QThread, QTimer, Signal, Slot

from trayvml.core.clock import Clock, ManualClock, SystemClock, Ticker

if TYPE_CHECKING:  # imported on the sampler thread, after the tray icon is up (start-up time)
    from trayvml.history.disk.limits import Limits
    from trayvml.history.disk.recording import Recording
    from trayvml.history.rings import Tier
    from trayvml.history.timeline import History
    from trayvml.nvml.sim import SimSpec
    from trayvml.source import Source

# Every simulated second of the past is computed (counters are running sums): at most this many.
PAST_MAX_SIM_S = 12 * 3600.0
# Reads are what a past costs (1-2 ms for 4 GPUs): each is held over this many buckets of the
# history tier it falls in, so that every bucket has a value (a hole breaks the curve) for a fifth
# of the reads. The first live sample waits for the past: 12 h of 4 GPUs take about a second.
HOLD_BUCKETS = 5


def simulated_past(simulation: SimSpec | None, span_s: float) -> tuple[SimSpec, float] | None:
    """The simulation to run over the real seconds before now, and how many seconds that is.

    It ends where ``simulation`` begins, in the same phase of its scenario. None for real GPUs,
    whose past is unknown, for frozen simulated time (``at=``), which has no past, and for a replayed
    recording, whose past is what it recorded.
    """
    if simulation is not None and simulation.past_s is not None:
        span_s = min(span_s, simulation.past_s)
    if simulation is None or simulation.at_s is not None or simulation.replay or span_s <= 0:
        return None
    from trayvml.nvml.sim.scenarios import SCENARIOS

    past_sim_s = min(span_s * simulation.speed, PAST_MAX_SIM_S)
    if simulation.scenario == "faults" or simulation.lost_at_s or simulation.nvml_fault:
        past_sim_s = min(past_sim_s, simulation.start_s)  # faults come at set times: no earlier cycle
    if past_sim_s <= 0:
        return None
    begin_s = simulation.start_s - past_sim_s
    # Simulated time starts at 0; before that the scenario ran earlier cycles of itself. Run one of
    # those instead, whole periods later (idle has no period: any second looks like another).
    period_s = getattr(SCENARIOS[simulation.scenario], "period_s", 1.0)
    begin_s += math.ceil(max(0.0, -begin_s) / period_s) * period_s
    # A hang would stop the past (its clock moves only between reads), and emulated latency slow it.
    past = replace(simulation, start_s=begin_s, hangs=(), realistic_latency=False)
    return past, past_sim_s / simulation.speed


def past_times_s(end_s: float, span_s: float, tiers: Sequence[Tier]) -> list[tuple[float, bool]]:
    """(time, read) pairs over the ``span_s`` before ``end_s``, oldest first: one per bucket of the
    finest tier that reaches back to that time; ``read`` is False where the last read is held."""
    regions = []
    newer_s = 0.0  # how far back the finer tiers reach
    for tier in tiers:
        reach_s = min(span_s, tier.span_s)
        count = math.ceil((reach_s - newer_s) / tier.step_s)
        first_s = end_s - newer_s - count * tier.step_s
        regions.append([(first_s + k * tier.step_s, k % HOLD_BUCKETS == 0) for k in range(count)])
        newer_s = max(newer_s, reach_s)
    return [pair for region in reversed(regions) for pair in region]


class _Worker(QObject):
    sample_taken = Signal(object)  # trayvml.core.sample.Sample
    history_backfilled = Signal(object)  # a History of the past, all before the first live sample
    store_noted = Signal(str)  # the history on disk: why it is not written (or that it is again)

    def __init__(
        self,
        simulation: SimSpec | None,
        interval_s: float,
        clock: Clock | None,
        stall_after_s: float | None,
        new_history: Callable[[], History] | None,
        open_recording: Callable[[], Recording | None] | None = None,
    ) -> None:
        super().__init__()
        self._open_recording = open_recording
        self._recording: Recording | None = None
        self._stall_after_s = stall_after_s
        # Set from the GUI thread, read here: swapping one immutable value needs no lock.
        self.demand: frozenset[str] | None = None
        self.idle_poll_s = 0.0  # seconds between reads of idle laptop GPUs (NvmlReader.idle_poll_s)
        self.store_limits: Limits | None = None  # the store's spans and size cap, once the settings change
        self._new_history = new_history
        self._stopping = threading.Event()
        self._simulation = simulation
        self._interval_s = interval_s
        self._clock = clock
        self._source: Source | None = None
        self._timer: QTimer | None = None
        # When each tick is due, on the real monotonic clock (the Qt timer waits in real time, whatever
        # ``clock`` stamps the samples): the timer is started again after each tick for the time left.
        self._ticker: Ticker | None = None

    @Slot()
    def start(self) -> None:
        # Created here, on the sampler thread: nvmlInit can take seconds without persistence mode,
        # and importing pynvml, numpy and psutil need not delay the tray icon.
        self._backfill()  # first: only one simulated library can sit beneath pynvml at a time
        self._source = self._new_source()
        if self._open_recording is not None:  # the store is written here, never on the GUI thread
            self._recording = self._open_recording()
            if self._recording is not None and self._recording.note:
                self.store_noted.emit(self._recording.note)
        self._timer = QTimer(self)
        self._timer.setObjectName("sample_timer")
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._scheduled_tick)
        self._ticker = Ticker(self._interval_s, mid_slot=True)  # each sample in a history slot of its own
        self._scheduled_tick()

    def _new_source(self) -> Source:
        from trayvml.source import STALL_AFTER_S, Source

        # A long interval gets a longer grace: a stall is "a few intervals" without a sample.
        stall_after_s = self._stall_after_s or max(STALL_AFTER_S, 3 * self._interval_s)
        return Source(self._simulation, self._clock, stall_after_s=stall_after_s)

    def _backfill(self) -> None:
        # No history is made where there is no simulated past: a real GPU's idle tray makes none.
        if self._new_history is None or simulated_past(self._simulation, math.inf) is None:
            return
        history = self._new_history()
        past = simulated_past(self._simulation, history.tiers[-1].span_s)
        if past is None:
            return
        from trayvml.source import Source

        spec, span_s = past
        end_s = (self._clock or SystemClock()).now_s()
        clock = ManualClock(end_s - span_s)
        source = Source(spec, clock, host=False)  # the host's past is not simulated: left empty
        sample = None
        try:
            for t_s, read in past_times_s(end_s, span_s, history.tiers):
                if self._stopping.is_set():
                    return  # quitting: nobody will look at the past
                clock.advance_s(t_s - clock.now_s())
                sample = source.sample() if read or sample is None else replace(sample, timestamp_s=t_s)
                # Appended here, not on the GUI thread: a history takes a few thousand samples.
                history.append(sample)
        finally:
            source.close()
        self.history_backfilled.emit(history)

    def interrupt(self) -> None:
        """From the GUI thread: stop waiting on the driver, the app is quitting."""
        self._stopping.set()
        source = self._source
        if source is not None:
            source.interrupt()

    @Slot()
    def _scheduled_tick(self) -> None:
        self.tick()
        if self._timer is not None and self._ticker is not None:  # None: stopped during the tick
            self._timer.start(round(self._ticker.next_delay_s() * 1000))

    @Slot()
    def tick(self) -> None:
        if self._source is not None:
            self._source.reader.idle_poll_s = self.idle_poll_s
            sample = self._source.sample(self.demand)
            self.sample_taken.emit(sample)
            if self._recording is not None:
                if self.store_limits is not None and self.store_limits != self._recording.limits:
                    self._recording.set_limits(self.store_limits)
                note = self._recording.append(sample)
                if note is not None:  # "": the store is written again
                    self.store_noted.emit(note)

    @Slot(object)
    def use_simulation(self, simulation: SimSpec | None) -> None:
        if self._source is not None:
            self._source.close()
        self._simulation = simulation
        self._source = self._new_source()
        self.tick()

    @Slot(float)
    def set_interval(self, interval_s: float) -> None:
        self._interval_s = interval_s
        if self._source is not None and self._stall_after_s is None:
            self._source.stall_after_s = max(self._source.stall_after_s, 3 * interval_s)
        if self._ticker is not None and self._timer is not None:  # the tick waited for is due that long after the last
            self._ticker.interval_s = interval_s
            self._timer.start(round(self._ticker.delay_s() * 1000))

    @Slot()
    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._source is not None:
            self._source.close()
            self._source = None
        if self._recording is not None:
            self._recording.close()  # what waits is committed: a quit loses nothing
            self._recording = None


class Sampler(QObject):
    """Runs a Source on its own thread at a fixed interval."""

    sample_taken = Signal(object)
    history_backfilled = Signal(object)  # a History: a simulation's past, before its first sample
    store_noted = Signal(str)  # the history on disk cannot be written, or can again
    _simulation_changed = Signal(object)
    _interval_changed = Signal(float)
    _stop_requested = Signal()

    def __init__(
        self,
        simulation: SimSpec | None,
        interval_s: float = 1.0,
        clock: Clock | None = None,
        stall_after_s: float | None = None,  # None: a few intervals (tests shorten it)
        # Makes an empty history, on the sampler thread, that a simulation's past fills; None: no past.
        new_history: Callable[[], History] | None = None,
        # Opens the history on disk, on the sampler thread; None: nothing on disk (tests, settings).
        open_recording: Callable[[], Recording | None] | None = None,
    ) -> None:
        super().__init__()
        self.simulation = simulation
        self._thread = QThread()
        self._thread.setObjectName("trayvml-sampler")
        self._worker = _Worker(simulation, interval_s, clock, stall_after_s, new_history, open_recording)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.start)
        self._worker.sample_taken.connect(self.sample_taken)
        self._worker.history_backfilled.connect(self.history_backfilled)
        self._worker.store_noted.connect(self.store_noted)
        self._simulation_changed.connect(self._worker.use_simulation)
        self._interval_changed.connect(self._worker.set_interval)
        # Blocking: the worker stops its timer and closes its source on its own thread before that
        # thread's loop ends (a queued stop could be dropped, and the timer then dies on the wrong thread).
        self._stop_requested.connect(self._worker.stop, Qt.ConnectionType.BlockingQueuedConnection)

    def start(self) -> None:
        self._thread.start()

    def use_simulation(self, simulation: SimSpec | None) -> None:
        self.simulation = simulation
        self._simulation_changed.emit(simulation)

    def set_interval(self, interval_s: float) -> None:
        self._interval_changed.emit(interval_s)

    def set_demand(self, demand: frozenset[str] | None) -> None:
        """What the next ticks read (None: everything); see trayvml.core.demand."""
        self._worker.demand = demand

    def set_idle_poll(self, seconds: float) -> None:
        """How seldom idle laptop GPUs are read, NVML let go in between (0: every tick)."""
        self._worker.idle_poll_s = seconds

    def set_store_limits(self, limits: Limits) -> None:
        """The history on disk's spans and size cap; the store's writer uses them from the next tick."""
        self._worker.store_limits = limits

    def stop(self) -> None:
        if self._thread.isRunning():
            self._worker.interrupt()  # a tick waiting on a stuck driver returns at once
            self._stop_requested.emit()
            self._thread.quit()
            self._thread.wait(10_000)
