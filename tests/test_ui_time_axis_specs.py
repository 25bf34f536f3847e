"""The time axis works out its ticks and labels (its draw specifications) with a code of its own,
pyqtgraph's narrowed to what the axis is (PERFORMANCE.md P14): it must give what pyqtgraph's gives."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtGui import QPainter, QPicture

from trayvml.ui.plots import TimeAxis

START_S = 1_800_000_000.0


def _points(point) -> tuple[float, float]:
    return (point.x(), point.y())


def _comparable(specs):
    (pen, start, end), ticks, texts = specs
    return (
        (pen.color().rgba(), pen.widthF(), _points(start), _points(end)),
        [(p.color().rgba(), p.widthF(), p.style(), _points(a), _points(b)) for p, a, b in ticks],
        [(rect.getRect(), int(flags), text) for rect, flags, text in texts],
    )


def _specs(axis: TimeAxis, ours: bool):
    picture = QPicture()
    painter = QPainter(picture)
    try:
        specs = axis.generateDrawSpecs(painter) if ours else pg.DateAxisItem.generateDrawSpecs(axis, painter)
    finally:
        painter.end()
    return specs


@pytest.mark.parametrize("width_px", [230, 640, 1187])
@pytest.mark.parametrize("span_s", [60, 300, 900, 3600, 6 * 3600, 43200, 86400, 7 * 86400])
def test_the_time_axis_specs_are_pyqtgraphs(qtbot, width_px: int, span_s: int) -> None:
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    axis = TimeAxis()
    plot = view.addPlot(axisItems={"bottom": axis})
    axis.setStyle(tickLength=6)
    view.resize(width_px + 80, 200)
    view.show()
    qtbot.waitExposed(view)
    compared = 0
    for second in range(0, 40, 3):  # following live: the range a few seconds (and a fraction) on
        start = START_S + second + (0.37 if second % 2 else 0.0)
        plot.setXRange(start, start + span_s, padding=0)
        view.scene().prepareForPaint()
        theirs = _specs(axis, ours=False)
        ours = _specs(axis, ours=True)
        assert theirs is not None and ours is not None
        assert _comparable(ours) == _comparable(theirs), (span_s, width_px, second)
        compared += len(theirs[2])
    assert compared > 0  # labels were compared, not only empty lists
