"""Following live, a panel's lines are moved on (the points gone from the front dropped, the new
ones appended) rather than built anew each second (PERFORMANCE.md P14): what is drawn must be
exactly what a rebuild from the same data would draw."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath, QTransform

from tests.ui_helpers import filled_history, shown_window
from trayvml.ui.plots import Lines

COLUMNS = 4


def _line_ids(window) -> set[int]:
    """Which kept points a window's GPU page draws now (to tell a line moved on from one rebuilt)."""
    return {id(line.points) for panel in window.gpu_page.panels for lines in panel.lines for _, line in lines._paths}


def _drawn(lines: Lines) -> list[tuple[object, ...]]:
    """Each line drawn: its column, first row, points (NaN as a string: comparable) and path."""
    out: list[tuple[object, ...]] = []
    for column, (_, line) in zip(lines._columns, lines._paths, strict=True):
        points = [(p.x(), "nan" if math.isnan(p.y()) else p.y()) for p in line.points.toList()]
        path = line.path
        elements = (
            None
            if path is None
            else [
                (path.elementAt(k).type, path.elementAt(k).x, path.elementAt(k).y) for k in range(path.elementCount())
            ]
        )
        out.append((column, line.first, points, elements))
    return out


def _steps(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Seconds of a 60-row window moving on over a history that begins inside it (missing
    readings before), with an open last bucket rewritten, a reading that comes late, and a gap."""
    rng = np.random.default_rng(seed)
    values = (rng.random((400, COLUMNS)) * 100).astype(np.float32)
    values[:30] = np.nan  # before the history began
    values[200, 1] = np.nan  # a gap in one line
    steps = []
    for end in range(20, 260):  # from a range with no reading at all
        times = np.arange(end - 60, end, dtype=np.float64)
        rows = values[np.clip(times.astype(int), 0, None)].copy()
        rows[times < 0] = np.nan
        if end % 7 == 0:
            rows[-1] += 0.5  # the open bucket, rewritten by a later reading
        if end % 11 == 0:
            rows = rows[:-1]  # the newest bucket has no reading yet
            times = times[:-1]
        steps.append((times, rows))
    return steps


@pytest.mark.parametrize("seed", [0, 1])
def test_lines_moved_on_are_the_lines_a_rebuild_draws(qtbot, seed: int) -> None:
    pens = [pg.mkPen(k) for k in range(COLUMNS)]
    shown = [True, True, False, True]
    moving = Lines()
    polylines_kept = 0
    for times, rows in _steps(seed):
        before = {id(line.points) for _, line in moving._paths}
        moving.set_lines(times, rows, pens, shown)
        polylines_kept += sum(id(line.points) in before for _, line in moving._paths)
        fresh = Lines()
        fresh.set_lines(times, rows, pens, shown)
        assert _drawn(moving) == _drawn(fresh)
        assert moving.dataBounds(0) == fresh.dataBounds(0)
        # The value range: the one kept while it holds the values (test below), else the same.
        assert _holds(moving.dataBounds(1), rows[:, np.asarray(shown)])
        rects = moving.boundingRect(), fresh.boundingRect()
        assert (rects[0].left(), rects[0].right()) == (rects[1].left(), rects[1].right())
        assert [d is None for d in moving.data] == [d is None for d in fresh.data]
        for mine, theirs in zip(moving.data, fresh.data, strict=True):
            if mine is not None and theirs is not None:
                assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1], equal_nan=True)
    # The lines were moved on, not rebuilt each time (else the comparison above proves nothing).
    assert polylines_kept > len(_steps(seed)) * 2


def _holds(value_range: tuple[float | None, float | None], values: np.ndarray) -> bool:
    low, high = value_range
    finite = values[np.isfinite(values)]
    if not len(finite):
        return low is None and high is None
    return low is not None and high is not None and low <= float(finite.min()) and float(finite.max()) <= high


def test_lines_of_another_step_from_the_same_first_time_are_built_anew(qtbot) -> None:
    """A coarser tier of the history (another range) can start at the very time the last lines
    did: its times part from theirs after the first, and so do its lines."""
    pens = [pg.mkPen("r")]
    lines = Lines()
    values = np.arange(20.0)[:, None]
    lines.set_lines(np.arange(20.0), values, pens, [True])
    coarser = np.arange(0.0, 100.0, 5.0)
    lines.set_lines(coarser, values, pens, [True])
    fresh = Lines()
    fresh.set_lines(coarser, values, pens, [True])
    assert _drawn(lines) == _drawn(fresh)


def test_a_line_that_parts_from_the_last_is_built_anew(qtbot) -> None:
    pens = [pg.mkPen("r")]
    lines = Lines()
    times = np.arange(10.0)
    lines.set_lines(times, np.arange(10.0)[:, None], pens, [True])
    changed = np.arange(1.0, 11.0)[:, None].copy()
    changed[3] = 99.0  # a reading both have, changed: not a move on
    lines.set_lines(times + 1, changed, pens, [True])
    fresh = Lines()
    fresh.set_lines(times + 1, changed, pens, [True])
    assert _drawn(lines) == _drawn(fresh)


def test_the_value_range_is_round_and_kept_while_it_holds_the_values_snugly(qtbot) -> None:
    """Following live, a climbing memory or a noisy power line set a new high every few seconds,
    and each refitted the panel's value range (its axis, grid and every line drawn anew)."""
    pens = [pg.mkPen("r")]
    lines = Lines()
    seconds = [0.0]

    def shown(high: float, low: float = 0.0) -> tuple[float | None, float | None]:
        """Following live, a second on: the lines move on (here to readings from ``low`` to ``high``)."""
        seconds[0] += 1
        lines.set_lines(seconds[0] + np.arange(10.0), np.linspace(low, high, 10)[:, None], pens, [True])
        return lines.dataBounds(1)

    assert shown(31.6) == (0.0, 35.0)  # out to a multiple of half the span's power of ten
    assert shown(33.9) == (0.0, 35.0)  # a new high inside it: kept
    assert shown(35.2) == (0.0, 40.0)  # past it: the next round number
    assert shown(34.8) == (0.0, 40.0)  # back under: kept, not toggled back and forth
    assert shown(12.0) == (0.0, 15.0)  # the values need less than half of it: fitted again
    assert shown(603.0, 74.0) == (50.0, 650.0)
    assert shown(0.0) == (0.0, 0.0)  # nothing to round: as it is
    rect = lines.boundingRect()
    assert rect.top() <= 0.0 <= rect.bottom()  # the item holds what it reports
    lines.set_lines(np.arange(10.0), np.linspace(0.0, 34.0, 10)[:, None], pens, [True])  # not moved on
    assert lines.dataBounds(1) == (0.0, 35.0)
    lines.set_lines(np.arange(10.0) - 5.0, np.linspace(0.0, 20.0, 10)[:, None], pens, [True])  # another range
    assert lines.dataBounds(1) == (0.0, 20.0)  # fitted anew: 0..35 is kept only while following live


def _image(draw) -> QImage:
    image = QImage(600, 120, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QColor("white"))
    painter = QPainter(image)
    transform = QTransform()
    transform.translate(10, 110)
    transform.scale(580 / 300, -1.0)
    painter.setTransform(transform)
    draw(painter)
    painter.end()
    return image


GAPS = {
    "none": [],
    "before the first": list(range(150)),
    "one": [117],
    "a few (pyqtgraph's own path for under 2 %)": [3, 150, 297],
    "many (pyqtgraph's path by connections)": list(range(5, 300, 9)),
    "every other (lone points)": list(range(0, 300, 2)),
    "at both ends": [0, 1, 2, 298, 299],
    "all but the last": list(range(299)),
}


@pytest.mark.parametrize("gaps", GAPS)
def test_a_line_is_drawn_as_pyqtgraphs_path_of_it(qtbot, gaps: str) -> None:
    """pyqtgraph's path of a line draws the point before a gap twice, which Qt draws differently from
    a line that ends there: a line with readings missing must look as the path, pixel for pixel."""
    rng = np.random.default_rng(len(GAPS[gaps]))
    times = np.arange(300, dtype=np.float64)
    values = (rng.random(300) * 100).astype(np.float32).astype(np.float64)
    values[GAPS[gaps]] = np.nan
    for style in (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine):
        for width in (1.0, 2.5):
            pen = pg.mkPen((200, 40, 40), width=width, style=style)
            lines = Lines()
            lines.set_lines(times, values[:, None], [pen], [True])

            def ours(painter: QPainter, lines: Lines = lines, pen=pen) -> None:
                painter.setPen(pen)
                for _, line in lines._paths:
                    line.draw(painter)

            def pyqtgraphs(painter: QPainter, pen=pen) -> None:
                painter.setPen(pen)
                drawn: QPainterPath = pg.arrayToQPath(times, values, connect="finite")
                painter.drawPath(drawn)

            assert _image(ours) == _image(pyqtgraphs), (style, width)


def test_a_window_following_live_draws_what_rebuilt_lines_draw(qtbot) -> None:
    """Two windows following live on one history, seconds on end: one moves its lines on, the
    other builds every line anew each second (as before). Every panel the same: lines, bounds,
    value and time ranges."""
    from dataclasses import replace

    history, sample = filled_history("training:gpus=h100*4", 120, host=False)
    moving = shown_window(qtbot, history, sample, 1280, 800)
    rebuilt = shown_window(qtbot, history, sample, 1280, 800)
    for panel in rebuilt.gpu_page.panels:
        for lines in (*panel.lines, panel.extra):
            lines._move_on = lambda new: None
    moved = 0
    for window in (moving, rebuilt):
        window.set_range(60)
        window.finish_redraw()
    for _ in range(12):
        sample = replace(sample, timestamp_s=sample.timestamp_s + 1)
        history.append(sample)
        kept = _line_ids(moving)
        for window in (moving, rebuilt):
            window.update_sample(sample)
            window.finish_redraw()
            window.gpu_page.layout_widget.scene().prepareForPaint()
        moved += len(kept & _line_ids(moving))
        for ours, theirs in zip(moving.gpu_page.panels, rebuilt.gpu_page.panels, strict=True):
            for mine, other in zip(ours.lines, theirs.lines, strict=True):
                assert _drawn(mine) == _drawn(other)
                assert mine.dataBounds(0) == other.dataBounds(0)
            # The time ranges the same; the value ranges each hold the lines (the one moved on may
            # keep a range that still holds them snugly: Lines._value_range).
            ranges = ours.plot.getViewBox().viewRange(), theirs.plot.getViewBox().viewRange()
            assert ranges[0][0] == ranges[1][0]
            for lines in ours.lines:
                for k in range(len(lines.data)):
                    drawn = lines.line(k)
                    if drawn is not None:
                        assert _holds(tuple(ranges[0][1]), drawn[1])
    assert moved > 0


def test_a_grid_kept_while_its_view_stays_draws_what_a_new_one_does_once_the_view_moves(qtbot) -> None:
    """The grid keeps its lines while the view shows the same range (a second between moves paints
    a stretch of it): after the view moves, its values' range changes or it is resized, it draws
    what a grid made for that view draws."""
    from trayvml.ui.plots import Grid

    def plot_with_grid(x_range: tuple[float, float], y_range: tuple[float, float]) -> pg.PlotWidget:
        widget = pg.PlotWidget()
        widget.resize(400, 200)
        plot = widget.getPlotItem()
        plot.hideAxis("left")
        plot.hideAxis("bottom")
        grid = Grid(plot.getAxis("left"))
        grid.set_colour(QColor(255, 255, 255))  # on pyqtgraph's black
        plot.addItem(grid, ignoreBounds=True)
        plot.getViewBox().setRange(xRange=x_range, yRange=y_range, padding=0)
        qtbot.addWidget(widget)
        widget.show()
        return widget

    start_s = 1_700_000_000.0
    kept = plot_with_grid((start_s, start_s + 300), (0, 100))
    kept.grab()  # its lines worked out and kept
    for x_range, y_range in (((start_s + 130, start_s + 430), (0, 100)), ((start_s + 130, start_s + 430), (0, 700))):
        kept.getPlotItem().getViewBox().setRange(xRange=x_range, yRange=y_range, padding=0)
        new = plot_with_grid(x_range, y_range)
        drawn = kept.grab().toImage()
        assert drawn == new.grab().toImage()
        black = QImage(drawn.size(), drawn.format())
        black.fill(QColor(0, 0, 0))
        assert drawn != black  # (a grid is drawn at all)
    # Narrower, the same range: time lines further apart (time_grid_s).
    kept.resize(160, 200)
    new = plot_with_grid((start_s + 130, start_s + 430), (0, 700))
    new.resize(160, 200)
    assert kept.grab().toImage() == new.grab().toImage()
