"""Helpers for the offscreen UI tests (imported after conftest has set QT_QPA_PLATFORM)."""

from __future__ import annotations

from tests.helpers import simulated_source
from trayvml.core.sample import Sample
from trayvml.history import History


def shown_window(qtbot, history: History, sample: Sample, width: int = 1100, height: int = 800):  # type: ignore[no-untyped-def]
    """A GraphWindow over ``history``, given ``sample``, shown and exposed."""
    from trayvml.ui.window import GraphWindow

    window = GraphWindow(history)
    qtbot.addWidget(window)
    window.resize(width, height)
    window.update_sample(sample)
    window.show()
    qtbot.waitExposed(window)
    return window


def filled_history(spec: str, seconds: int, step_s: float = 1.0, host: bool = True) -> tuple[History, Sample]:
    """A history fed with ``seconds`` of simulated samples; returns it and the last sample."""
    source, clock, _ = simulated_source(spec, host=host)
    history = History()
    sample = source.sample()
    for _ in range(int(seconds / step_s)):
        history.append(sample)
        clock.advance_s(step_s)
        sample = source.sample()
    history.append(sample)
    return history, sample


def drawn_tick_labels(axis) -> list[str]:  # type: ignore[no-untyped-def]
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
