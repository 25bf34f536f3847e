"""What the window adds for the history on disk: shaded "not recording" spans, and a picker for any
past range. Kept apart from the plots and the window, which only call in here."""

from __future__ import annotations

import datetime as dt
import weakref
from collections.abc import Callable, Sequence

import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QDateTime
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QDateTimeEdit, QDialog, QDialogButtonBox, QFormLayout, QWidget

from trayvml.core.i18n import QT_TRANSLATE_NOOP

translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)
GAP_LABEL = QT_TRANSLATE_NOOP("Gaps", "not recording")  # shown a space left of the span's end
LABELLED_FRACTION = 0.06  # a gap narrower in view than this part of the range is shaded without its label
_GAP_BRUSH = QColor(128, 128, 128, 48)
_GAP_TEXT = QColor(128, 128, 128)


class GapShading:
    """Shaded, labelled spans of one plot where nothing was recorded (trayvml off, the machine asleep).

    Each label hangs left of its span's end, where the recording came back: a span that began left
    of the view keeps its start (that of the first bucket read, or the last row in the bucket before
    it), so that following live (the view moving on every few seconds) moves nothing here until the
    view passes a bucket, and then only the span's start, which carries no label. Moving a span's
    edge lays its label's text out anew (pyqtgraph's InfLineLabel), a twelfth of the open window's
    GUI thread when every span was cut to the view."""

    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.regions: list[tuple[pg.LinearRegionItem, pg.InfLineLabel]] = []
        self.shown: tuple[list[tuple[float, float]], list[bool]] = ([], [])

    def show(self, spans: Sequence[tuple[float, float]], start_s: float, end_s: float) -> None:
        """``spans`` shaded on a view of ``start_s``..``end_s``; each labelled where wide enough in view."""
        labelled = [min(b, end_s) - max(a, start_s) >= LABELLED_FRACTION * (end_s - start_s) for a, b in spans]
        if (list(spans), labelled) == self.shown:
            return
        self.shown = (list(spans), labelled)
        while len(self.regions) < len(spans):
            region = pg.LinearRegionItem(movable=False, brush=_GAP_BRUSH, pen=pg.mkPen(None))
            region.setZValue(-10)  # under the lines
            # At the span's foot: limit lines (a GPU's slowdown and shutdown temperatures, its power
            # limit) run across the top of a panel, through the span too.
            label = pg.InfLineLabel(
                region.lines[1], text=translate("Gaps", GAP_LABEL) + " ", position=0.12, anchors=[(1, 0.5), (1, 0.5)]
            )
            label.setColor(_GAP_TEXT)
            self.plot.addItem(region, ignoreBounds=True)
            self.regions.append((region, label))
        for (region, label), span, wide in zip(self.regions, spans, labelled, strict=False):
            region.setRegion(span)  # nothing when unchanged
            region.show()
            if label.isVisibleTo(region) != wide:  # its own flag: a hidden region hides it whatever it says
                label.setVisible(wide)
        for region, _ in self.regions[len(spans) :]:
            region.hide()


def visible_gaps(
    spans: Sequence[tuple[float, float]], start_s: float, end_s: float, data_from_s: float
) -> list[tuple[float, float]]:
    """Those of ``spans`` that reach into the range shown, cut at its end (where their label hangs),
    and cut short where the data in memory (since ``data_from_s``) begins: the store's gaps come in
    whole buckets (a minute and more), which reached over the first plotted lines. Their starts are
    left alone (see GapShading)."""
    shown = []
    for first, last in spans:
        last = min(last, end_s)
        if first < data_from_s < last:
            last = data_from_s
        if last > max(first, start_s):
            shown.append((first, last))
    return shown


_shadings: weakref.WeakKeyDictionary[pg.PlotItem, GapShading] = weakref.WeakKeyDictionary()


def shade_gaps(
    plots: Sequence[pg.PlotItem], spans: Sequence[tuple[float, float]], start_s: float, end_s: float
) -> None:
    """Show ``spans`` (start, end in epoch seconds) shaded on each of ``plots``, which show ``start_s``..``end_s``."""
    for plot in plots:
        shading = _shadings.get(plot)
        if shading is None:
            shading = _shadings[plot] = GapShading(plot)
        shading.show(spans, start_s, end_s)


class RangePicker(QDialog):
    """Two date-times (local time, as the axes show) for a past range of the window."""

    def __init__(self, parent: QWidget, start_s: float, end_s: float) -> None:
        super().__init__(parent)
        self.setObjectName("range_picker")
        self.setWindowTitle(translate("Gaps", "Show a past range"))
        form = QFormLayout(self)
        self.start_edit = self._edit(start_s)
        self.end_edit = self._edit(end_s)
        form.addRow(translate("Gaps", "From"), self.start_edit)
        form.addRow(translate("Gaps", "To"), self.end_edit)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    @staticmethod
    def _edit(t_s: float) -> QDateTimeEdit:
        edit = QDateTimeEdit(QDateTime.fromSecsSinceEpoch(round(t_s)))
        edit.setCalendarPopup(True)
        edit.setDisplayFormat("yyyy-MM-dd HH:mm")
        edit.setMaximumDateTime(QDateTime.fromSecsSinceEpoch(round(dt.datetime.now().timestamp()) + 60))
        return edit

    def chosen(self) -> tuple[float, float] | None:
        """(start, end) in epoch seconds, or None when they are the wrong way round."""
        start = self.start_edit.dateTime().toSecsSinceEpoch()
        end = self.end_edit.dateTime().toSecsSinceEpoch()
        return (float(start), float(end)) if end > start else None


def pick_range(parent: QWidget, start_s: float, end_s: float, show: Callable[[float, float], None]) -> RangePicker:
    """Open the picker; ``show(start, end)`` when the user accepts a range."""
    picker = RangePicker(parent, start_s, end_s)

    def accepted() -> None:
        chosen = picker.chosen()
        if chosen is not None:
            show(*chosen)

    picker.accepted.connect(accepted)
    picker.open()
    return picker
