"""The sampler thread: owns the Source (and so NVML); samples reach the GUI through a signal.

The GUI thread never calls NVML and never waits on it: a slow driver call (a PCIe read blocks
20 ms, a process list several) only delays the next sample, not a repaint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, QThread, QTimer, Signal, Slot

from trayvml.core.clock import Clock

if TYPE_CHECKING:  # imported on the sampler thread, after the tray icon is up (start-up time)
    from trayvml.nvml.sim import SimSpec
    from trayvml.source import Source


class _Worker(QObject):
    sample_taken = Signal(object)  # trayvml.core.sample.Sample

    def __init__(
        self, simulation: SimSpec | None, interval_s: float, clock: Clock | None, stall_after_s: float | None
    ) -> None:
        super().__init__()
        self._stall_after_s = stall_after_s
        self._simulation = simulation
        self._interval_s = interval_s
        self._clock = clock
        self._source: Source | None = None
        self._timer: QTimer | None = None

    @Slot()
    def start(self) -> None:
        # Created here, on the sampler thread: nvmlInit can take seconds without persistence mode,
        # and importing pynvml, numpy and psutil need not delay the tray icon.
        self._source = self._new_source()
        self._timer = QTimer(self)
        self._timer.setObjectName("sample_timer")
        self._timer.timeout.connect(self.tick)
        self._timer.start(round(self._interval_s * 1000))
        self.tick()

    def _new_source(self) -> Source:
        from trayvml.source import STALL_AFTER_S, Source

        # A long interval gets a longer grace: a stall is "a few intervals" without a sample.
        stall_after_s = self._stall_after_s or max(STALL_AFTER_S, 3 * self._interval_s)
        return Source(self._simulation, self._clock, stall_after_s=stall_after_s)

    def interrupt(self) -> None:
        """From the GUI thread: stop waiting on the driver, the app is quitting."""
        source = self._source
        if source is not None:
            source.interrupt()

    @Slot()
    def tick(self) -> None:
        if self._source is not None:
            self.sample_taken.emit(self._source.sample())

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
        if self._timer is not None:
            self._timer.start(round(interval_s * 1000))

    @Slot()
    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        if self._source is not None:
            self._source.close()
            self._source = None


class Sampler(QObject):
    """Runs a Source on its own thread at a fixed interval."""

    sample_taken = Signal(object)
    _simulation_changed = Signal(object)
    _interval_changed = Signal(float)
    _stop_requested = Signal()

    def __init__(
        self,
        simulation: SimSpec | None,
        interval_s: float = 1.0,
        clock: Clock | None = None,
        stall_after_s: float | None = None,  # None: a few intervals (tests shorten it)
    ) -> None:
        super().__init__()
        self.simulation = simulation
        self._thread = QThread()
        self._thread.setObjectName("trayvml-sampler")
        self._worker = _Worker(simulation, interval_s, clock, stall_after_s)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.start)
        self._worker.sample_taken.connect(self.sample_taken)
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

    def stop(self) -> None:
        if self._thread.isRunning():
            self._worker.interrupt()  # a tick waiting on a stuck driver returns at once
            self._stop_requested.emit()
            self._thread.quit()
            self._thread.wait(10_000)
