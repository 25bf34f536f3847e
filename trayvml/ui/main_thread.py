"""What the tray's GUI thread does for the whole process: Python's cyclic garbage collection, and
waking for Ctrl-C.

Python collects reference cycles on whichever thread's allocation passes the collector's threshold.
In the tray that is as often the NVML reading thread or the sampler's QThread as the GUI thread
(an idle tray over 20 s: 28 of 117 collections, a full one among them). A Qt wrapper in a garbage
cycle (a closed dialog, a menu made again, a lambda connected to a signal) is then destroyed on
that thread, which Qt does not allow: "QObject::~QObject: Timers cannot be stopped from another
thread", or a crash in the collector (napari#1029, nexpy#300, OpenCue#598; the pattern of pyqtgraph's
``GarbageCollector`` and calibre). The test suite met it: a widget test's garbage, collected later on
a remote-reading thread, crashed the interpreter (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import gc
import signal
import socket

from PySide6.QtCore import QObject, QSocketNotifier, Qt, QTimer

COLLECT_EVERY_MS = 1000


class GuiThreadCollector(QObject):
    """Automatic collection off; a GUI-thread timer collects as Python would have.

    Each tick collects the oldest generation whose count passed its threshold, where the youngest
    one's did (CPython's own rule, ``collect_generations``). CPython also holds a full collection
    back until the objects that survived collections since the last full one are a quarter of the
    long-lived ones; that count is not visible from Python, so the objects alive when the tray
    starts are frozen (``gc.freeze``) and a full collection walks only what came after them. A
    frozen object that later falls into a garbage cycle stays until the tray ends: at most once
    each, since what replaces it came after the freeze."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = COLLECT_EVERY_MS) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.CoarseTimer)  # may share a wake-up with the sampler's
        self._timer.timeout.connect(self.collect_due)
        self._interval_ms = interval_ms
        self._thresholds = gc.get_threshold()
        self._was_enabled = True

    def start(self) -> None:
        self._thresholds = gc.get_threshold()  # what Python would have used from here on
        self._was_enabled = gc.isenabled()
        gc.collect()  # what startup left in cycles, before the rest is frozen
        gc.freeze()
        gc.disable()
        self._timer.start(self._interval_ms)

    def stop(self) -> None:
        self._timer.stop()
        gc.unfreeze()
        if self._was_enabled:
            gc.enable()

    def collect_due(self) -> int:
        """The generation collected (-1: none was due)."""
        counts = gc.get_count()
        if counts[0] <= self._thresholds[0]:
            return -1
        generation = next(g for g in (2, 1, 0) if g == 0 or counts[g] > self._thresholds[g])
        gc.collect(generation)
        return generation


class InterruptWaker(QObject):
    """Ctrl-C reaches Python's handler while Qt's event loop waits in C: the signal's byte on a
    socket wakes the loop (``signal.set_wakeup_fd``), where a timer polled four times a second."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._reader, self._writer = socket.socketpair()
        for end in (self._reader, self._writer):
            end.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._notifier = QSocketNotifier(self._reader.fileno(), QSocketNotifier.Type.Read, self)
        # Reading the bytes runs Python code, and Python runs the handler of the signal that came.
        self._notifier.activated.connect(self._drain)

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._reader.recv(512):
                pass

    def close(self) -> None:
        self._notifier.setEnabled(False)
        signal.set_wakeup_fd(self._previous_fd)
        self._reader.close()
        self._writer.close()
