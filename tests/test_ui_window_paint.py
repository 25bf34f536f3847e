"""What the window does each second while it follows live (PERFORMANCE.md P14): one paint per
redraw, the view moved on the page in view, the time axes worked out once, and still every new
reading drawn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QObject

from tests.ui_helpers import drawn_tick_labels, filled_history, shown_window
from trayvml.core.metrics import GPU_INDEX, Group
from trayvml.core.sample import Sample

RANGE_S = 300


class PaintCounter(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


@pytest.fixture
def eight(qtbot):
    history, sample = filled_history("training:gpus=h100*8", 1800, host=False)
    window = shown_window(qtbot, history, sample, 1280, 800)
    window.set_range(RANGE_S)
    window.finish_redraw()
    qtbot.wait(20)  # the paints of the first redraw
    return window, history, sample


def _next(history, sample: Sample, seconds: float = 1.0, power_w: float | None = None) -> Sample:
    """The sample ``seconds`` after ``sample``, in the history too; ``power_w``: every GPU's power."""
    gpus = sample.gpus
    if power_w is not None:
        at = GPU_INDEX["power_draw_w"]
        gpus = tuple(replace(g, values=(*g.values[:at], power_w, *g.values[at + 1 :])) for g in gpus)
    later = replace(sample, timestamp_s=sample.timestamp_s + seconds, gpus=gpus)
    history.append(later)
    return later


def test_a_redraw_is_painted_once_not_once_per_panel(eight, qtbot) -> None:
    w, history, sample = eight
    viewport = w.gpu_page.layout_widget.viewport()
    counter = PaintCounter()
    viewport.installEventFilter(counter)
    held = []
    step = w._redraw_step

    def logged() -> None:
        step()
        held.append(viewport.updatesEnabled())

    w._redraw_step = logged
    w.update_sample(_next(history, sample))
    qtbot.waitUntil(lambda: not w._redraw_timer.isActive() and counter.paints > 0)
    qtbot.wait(50)  # a second paint, if one were coming
    assert len(held) >= 4 and held[:-1] == [False] * (len(held) - 1) and held[-1]  # held until the last step
    assert counter.paints == 1  # six a second before: one per panel, one for the move, one for the value ranges


def test_a_redraw_cut_short_is_not_held_and_the_page_paints_again(eight, qtbot) -> None:
    w, history, sample = eight
    viewport = w.gpu_page.layout_widget.viewport()
    later = _next(history, sample)
    w.update_sample(later)
    w._redraw_timer.stop()
    w._redraw_step()  # begun: the page is held
    w._redraw_step()  # a panel drawn
    assert not viewport.updatesEnabled()
    w.update_sample(_next(history, later))  # the next sample before this redraw ends
    w._redraw_timer.stop()
    w._redraw_step()
    assert viewport.updatesEnabled()  # shown as it comes: held again, it might never be painted
    w.finish_redraw()
    assert viewport.updatesEnabled() and w._held is None


def test_a_new_sample_is_drawn_to_its_time_and_a_new_peak_refits_the_value_range(eight) -> None:
    w, history, sample = eight
    power = next(p for p in w.gpu_page.panels if p.spec.group is Group.POWER)
    w.gpu_page.verticalScrollBar().setValue(int(power.plot.geometry().top()))  # in view
    w.refresh()
    w.gpu_page.layout_widget.grab()
    _, top = power.plot.getViewBox().viewRange()[1]
    later = _next(history, sample, power_w=3 * top)
    w.update_sample(later)
    w.finish_redraw()
    w.gpu_page.layout_widget.grab()
    times, values = power.lines[0].line(0)
    assert times[-1] == later.timestamp_s and values[-1] == pytest.approx(3 * top)  # the line reaches the new point
    assert w.gpu_page.x_range()[1] == later.timestamp_s  # and the view shows it
    assert power.plot.getViewBox().viewRange()[1][1] >= 3 * top  # the value range takes it in


def test_moving_the_view_does_not_refit_the_value_ranges(eight) -> None:
    w, _, sample = eight
    page = w.gpu_page
    page.layout_widget.grab()  # what the last redraw left to fit
    views = [p.plot.getViewBox() for p in page.visible_panels()]
    refits = []

    def counted(fit: Callable[[], None]) -> Callable[[], None]:
        def refit() -> None:
            refits.append(1)
            fit()

        return refit

    for view in views:
        view.updateAutoRange = counted(view.updateAutoRange)
    for k in range(1, 4):  # the view moves, nothing else: painted, it needs no new value range
        page.set_x_range(sample.timestamp_s - RANGE_S + k, sample.timestamp_s + k)
        page.layout_widget.grab()
    assert not refits  # pyqtgraph's misspelt exemption of its inner group, made good (Panel)


def test_time_axes_of_a_page_share_one_picture_that_follows_the_range(eight) -> None:
    w, _, _ = eight
    w.gpu_page.layout_widget.grab()
    axes = [p.plot.getAxis("bottom") for p in w.gpu_page.visible_panels()]
    assert len(axes) >= 3
    assert all(a.picture is axes[0].picture for a in axes)  # worked out once, played by each
    labels = drawn_tick_labels(axes[0])
    assert labels and all(drawn_tick_labels(a) == labels for a in axes)  # each would have drawn the same
    first = axes[0].picture
    w.set_range(60)
    w.finish_redraw()
    w.gpu_page.layout_widget.grab()
    assert axes[0].picture is not first and all(a.picture is axes[0].picture for a in axes)
    assert drawn_tick_labels(axes[0]) != labels  # a minute is labelled in other steps than 15


def test_following_live_moves_the_page_in_view_and_another_catches_up_when_shown(eight) -> None:
    w, history, sample = eight
    host_before = w.host_page.x_range()
    later = _next(history, sample, seconds=30)
    w.update_sample(later)
    w.finish_redraw()
    assert w.gpu_page.x_range() == (later.timestamp_s - RANGE_S, later.timestamp_s)
    assert w.host_page.x_range() == host_before  # out of view: not moved every second
    w.tabs.setCurrentWidget(w.host_page)
    w.finish_redraw()
    assert w.host_page.x_range() == (later.timestamp_s - RANGE_S, later.timestamp_s)


def test_a_panel_out_of_view_is_not_moved_until_it_comes_into_view(eight) -> None:
    w, history, sample = eight
    page = w.gpu_page
    bottom = page.panels[-1]
    assert bottom not in page.visible_panels()
    w.update_sample(_next(history, sample, seconds=30))
    w.finish_redraw()
    view = bottom.plot.getViewBox()
    assert tuple(view.viewRange()[0]) != page.x_range()  # following live, only what is seen moves
    page.verticalScrollBar().setValue(page.verticalScrollBar().maximum())
    assert bottom in page.visible_panels()
    page.layout_widget.viewport().repaint()  # its first paint in view, before the redraw a scroll asks for
    assert tuple(view.viewRange()[0]) == page.x_range()


def test_new_gpus_mid_redraw_leave_no_page_held(qtbot) -> None:
    from tests.ui_helpers import many_gpus

    history, sample = filled_history("training:gpus=h100*2", 300, host=False)
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.tabs.setCurrentWidget(w.per_gpu)
    w.finish_redraw()
    later = _next(history, sample)
    w.update_sample(later)
    w._redraw_timer.stop()
    w._redraw_step()  # begun: the per-GPU page in view is held
    assert w._held is w.per_gpu.page
    w.update_sample(many_gpus(replace(later, timestamp_s=later.timestamp_s + 1), 3))  # its page goes
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # as the event loop would
    w.finish_redraw()  # no release of a deleted page
    assert w._held is None and w.per_gpu.page is not None
    assert w.per_gpu.page.layout_widget.viewport().updatesEnabled()


def test_the_15_minute_view_following_live_draws_every_sample_to_the_newest(qtbot) -> None:
    # The view reads a sample beyond its 900 s; a 1 s tier of exactly 900 samples sent it to the 5 s
    # buckets, whose newest point lagged the live reading by up to 5 s.
    history, sample = filled_history("training:gpus=h100*2", 1800, host=False)
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.set_range(900)
    w.finish_redraw()
    for _ in range(3):
        sample = _next(history, sample)
        w.update_sample(sample)
        w.finish_redraw()
    times, values = w.gpu_page.panels[0].lines[0].line(0)
    assert times[-1] == sample.timestamp_s and values[-1] == sample.gpus[0].value("utilization_gpu_percent")
    assert times[-1] - times[-2] == 1.0  # every sample, not 5 s buckets
