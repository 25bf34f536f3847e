"""Helpers for the offscreen UI tests (imported after conftest has set QT_QPA_PLATFORM).

Histories are made of synthetic rows written straight into the rings (``filled_history``): hours of
them take a fraction of a second, where running the reader and simulator for 13 hours took 35 s.
Only ``simulated_history`` runs the reader, for the one end-to-end test that needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from tests.helpers import run_ticks, simulated_source
from trayvml.core.metrics import GPU_INDEX, GPU_METRIC_BY_KEY, HOST_INDEX, HOST_METRIC_BY_KEY, Unit
from trayvml.core.sample import Sample
from trayvml.history.rings import HISTORY_GPU_KEYS, HISTORY_HOST_KEYS
from trayvml.history.timeline import History

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QMenu, QWidget

_GPU_COLUMNS = [GPU_INDEX[key] for key in HISTORY_GPU_KEYS]
_HOST_COLUMNS = [HOST_INDEX[key] for key in HISTORY_HOST_KEYS]
# Values that are states or bits, not amounts: kept as they are rather than made to wave.
_STEADY_UNITS = (Unit.BITMASK, Unit.FLAG, Unit.PSTATE, Unit.PCIE_GEN, Unit.LANES, Unit.XID)
_GPU_STEADY = np.array([GPU_METRIC_BY_KEY[key].unit in _STEADY_UNITS for key in HISTORY_GPU_KEYS])
_GPU_PERCENT = np.array([GPU_METRIC_BY_KEY[key].unit is Unit.PERCENT for key in HISTORY_GPU_KEYS])
_HOST_PERCENT = np.array([HOST_METRIC_BY_KEY[key].unit is Unit.PERCENT for key in HISTORY_HOST_KEYS])


def shown_window(qtbot, history: History, sample: Sample, width: int = 1100, height: int = 800):
    """A GraphWindow over ``history``, given ``sample``, shown, exposed and drawn."""
    from trayvml.ui.window import GraphWindow

    window = GraphWindow(history)
    qtbot.addWidget(window)
    window.resize(width, height)
    window.update_sample(sample)
    window.show()
    qtbot.waitExposed(window)
    window.refresh()  # at once: the tests read what is drawn without waiting for the event loop
    return window


def waves(base: np.ndarray, times_s: np.ndarray, percent: np.ndarray, steady: np.ndarray | None = None) -> np.ndarray:
    """Rows of values around ``base`` (…, columns) at ``times_s``: each column swings ±15 % with a
    phase of its own; NaN stays NaN (an unsupported metric has no past either), steady columns and
    percentages stay in range."""
    columns = np.arange(base.size).reshape(base.shape)
    phase = 2 * np.pi * times_s.reshape((-1,) + (1,) * base.ndim) / 600.0 + 0.7 * columns
    values = base * (0.85 + 0.15 * np.sin(phase))
    values = np.where(percent, np.clip(values, 0.0, 100.0), values)
    if steady is not None:
        values = np.where(steady, base, values)
    return values.astype(np.float32)


def fill_history(history: History, sample: Sample, times_s: np.ndarray) -> None:
    """Rows at ``times_s`` (ascending, all before ``sample``) made up from ``sample``'s values, then
    ``sample`` itself: the past the window reads, without a reader."""
    gpu_base = np.array([np.asarray(g.values)[_GPU_COLUMNS] for g in sample.gpus])
    gpu_rows = waves(gpu_base, times_s, _GPU_PERCENT, _GPU_STEADY) if sample.gpus else np.empty((len(times_s), 0))
    host_rows = None
    if sample.host is not None:
        host_base = np.concatenate(
            [np.asarray(sample.host.values)[_HOST_COLUMNS], np.asarray(sample.host.cpu_core_percent)]
        )
        percent = np.concatenate([_HOST_PERCENT, np.ones(len(sample.host.cpu_core_percent), dtype=bool)])
        host_rows = waves(host_base, times_s, percent)
    for k, t_s in enumerate(times_s):
        history.append_values(float(t_s), gpu_rows[k], None if host_rows is None else host_rows[k])
    history.append(sample)


def filled_history(spec: str, seconds: int, step_s: float = 1.0, host: bool = True) -> tuple[History, Sample]:
    """A history of ``seconds`` of synthetic rows every ``step_s``, ending with a sample read from the
    simulated GPUs of ``spec`` (their names, capabilities and processes); returns both."""
    source, clock, _ = simulated_source(spec, host=host)
    sample = run_ticks(source, clock, 2)  # rates need two reads
    history = History()
    count = int(seconds / step_s)
    fill_history(history, sample, sample.timestamp_s - step_s * np.arange(count, 0, -1))
    return history, sample


def simulated_history(spec: str, seconds: int, step_s: float = 1.0, host: bool = True) -> tuple[History, Sample]:
    """The end-to-end way: a history fed ``seconds`` of samples by the reader over simulated GPUs."""
    source, clock, _ = simulated_source(spec, host=host)
    history = History()
    sample = source.sample()
    for _ in range(int(seconds / step_s)):
        history.append(sample)
        clock.advance_s(step_s)
        sample = source.sample()
    history.append(sample)
    return history, sample


def many_gpus(sample: Sample, count: int) -> Sample:
    """``sample`` with ``count`` GPUs, copies of its first one (the simulation stops at 16)."""
    first, info = sample.gpus[0], sample.devices[0]
    gpus = tuple(replace(first, index=k, processes=()) for k in range(count))
    devices = tuple(replace(info, index=k, uuid=f"GPU-synthetic-{k:04d}") for k in range(count))
    return replace(sample, gpus=gpus, devices=devices)


def moved_on(sample: Sample, t_s: float) -> Sample:
    """``sample`` at time ``t_s`` with values that moved: what a live sample looks like to the window."""
    base = np.array([g.values for g in sample.gpus], dtype=np.float64)
    percent = np.array([GPU_METRIC_BY_KEY[m].unit is Unit.PERCENT for m in GPU_INDEX])
    values = waves(base, np.array([t_s]), percent)[0]
    gpus = tuple(replace(g, values=tuple(map(float, row))) for g, row in zip(sample.gpus, values, strict=True))
    return replace(sample, timestamp_s=t_s, gpus=gpus)


def drawn_tick_labels(axis) -> list[str]:
    """The tick labels a pyqtgraph axis would draw now: it leaves out, silently, every label that
    does not fit inside the axis."""
    from PySide6.QtGui import QImage, QPainter

    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _, _, text in texts]


def submenu(action: QAction) -> QMenu:
    """The menu ``action`` opens, asserted to be one (Qt's bindings type QAction.menu() as a QObject)."""
    from PySide6.QtWidgets import QMenu

    menu = action.menu()
    assert isinstance(menu, QMenu), action.text()
    return menu


def answering_no(asked: list[str]) -> Callable[[QWidget | None, str], bool]:
    """Stands for asking the user: records each question and answers no (the user cancels)."""

    def ask(_parent: QWidget | None, question: str) -> bool:
        asked.append(question)
        return False

    return ask


def open_menu(tray) -> None:
    """What a tray host does before it shows the tray's menu: the tray fills in its texts then."""
    tray.menu.aboutToShow.emit()
