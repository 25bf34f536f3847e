"""The time axis works out its ticks and labels (its draw specifications) with a code of its own,
pyqtgraph's narrowed to what the axis is (PERFORMANCE.md P14): it must give what pyqtgraph's gives,
but for its labels' height (the whole text's, where pyqtgraph takes four fifths of it and cut the
descenders off at a large font)."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtGui import QPainter, QPicture

from trayvml.ui.plots import TimeAxis

START_S = 1_800_000_000.0


def _points(point) -> tuple[float, float]:
    return (point.x(), point.y())


def _comparable(specs, label_height: float = 1.0):
    """``label_height``: the share of our labels' height pyqtgraph's are (four fifths: see
    TimeAxis._text_size)."""
    (pen, start, end), ticks, texts = specs
    return (
        (pen.color().rgba(), pen.widthF(), _points(start), _points(end)),
        [(p.color().rgba(), p.widthF(), p.style(), _points(a), _points(b)) for p, a, b in ticks],
        [
            ((rect.x(), rect.y(), rect.width(), rect.height() * label_height), int(flags), text)
            for rect, flags, text in texts
        ],
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
        assert _comparable(ours, label_height=0.8) == _comparable(theirs), (span_s, width_px, second)
        compared += len(theirs[2])
    assert compared > 0  # labels were compared, not only empty lists


def test_at_a_large_font_the_time_axis_is_tall_enough_for_its_labels_descenders(qtbot) -> None:
    """pyqtgraph sizes an axis for four fifths of its labels' height and clips them to the axis: at
    16 pt the descenders of "jue" were cut off. The time axis makes room for the whole text."""
    from PySide6.QtGui import QFont, QFontMetricsF

    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    axis = TimeAxis()
    plot = view.addPlot(axisItems={"bottom": axis})
    font = QFont(QFont().family(), 16)
    axis.setStyle(tickLength=6, tickFont=font)
    view.resize(900, 300)
    view.show()
    qtbot.waitExposed(view)
    plot.setXRange(START_S, START_S + 2 * 86400, padding=0)
    for _ in range(3):  # an axis grows to its labels as it draws them
        view.grab()
        qtbot.wait(5)
    _, _, texts = _specs(axis, ours=True)
    assert texts  # labels drawn
    whole_px = QFontMetricsF(font).height()
    bottom = axis.boundingRect().bottom()
    assert all(rect.height() >= whole_px - 1 and rect.bottom() <= bottom for rect, _, _ in texts)
