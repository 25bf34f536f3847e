"""What the window does each second while it follows live (PERFORMANCE.md P14): the view leads
the newest reading and stays put until the lines reach its edge, each second then painting only
the lines' new stretch; when the view moves, one paint per redraw, the page in view alone, the
time axes worked out once; and still every new reading drawn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QObject, QPoint, QPointF, QRect
from PySide6.QtGui import QColor, QImage, QPaintEvent
from PySide6.QtWidgets import QGraphicsItem, QWidget

from tests.ui_helpers import drawn_tick_labels, filled_history, shown_window
from trayvml.core.metrics import GPU_INDEX, Group
from trayvml.core.sample import Sample
from trayvml.ui.window import LEAD_SHARE

RANGE_S = 300
LEAD_S = LEAD_SHARE * RANGE_S  # following live, how far the view reaches past the newest reading (and before the range)
MOVE_S = LEAD_S + 1  # a sample this much later has the view move on


class PaintCounter(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.paints = 0
        self.regions: list[QRect] = []  # each paint's region, bounded

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if isinstance(event, QPaintEvent):
            self.paints += 1
            self.regions.append(event.region().boundingRect())
        return False


@pytest.fixture
def eight(qtbot):
    history, sample = filled_history("training:gpus=h100*8", 1800, host=False)
    window = shown_window(qtbot, history, sample, 1280, 800)
    window.set_range(RANGE_S)
    window.finish_redraw()
    qtbot.wait(20)  # the paints of the first redraw
    return window, history, sample


def _next(
    history, sample: Sample, seconds: float = 1.0, power_w: float | None = None, busy: float | None = None
) -> Sample:
    """The sample ``seconds`` after ``sample``, in the history too; ``power_w``: every GPU's power,
    ``busy``: every GPU's utilization (percent)."""
    gpus = sample.gpus
    for key, value in (("power_draw_w", power_w), ("utilization_gpu_percent", busy)):
        if value is not None:
            at = GPU_INDEX[key]
            gpus = tuple(replace(g, values=(*g.values[:at], value, *g.values[at + 1 :])) for g in gpus)
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
    w.update_sample(_next(history, sample, seconds=MOVE_S))  # the view moves on: every panel is drawn anew
    qtbot.waitUntil(lambda: not w._redraw_timer.isActive() and counter.paints > 0)
    qtbot.wait(50)  # a second paint, if one were coming
    assert len(held) >= 4 and held[:-1] == [False] * (len(held) - 1) and held[-1]  # held until the last step
    assert counter.paints == 1  # six a second before: one per panel, one for the move, one for the value ranges


def test_a_redraw_cut_short_is_not_held_and_the_page_paints_again(eight, qtbot) -> None:
    w, history, sample = eight
    viewport = w.gpu_page.layout_widget.viewport()
    later = _next(history, sample, seconds=MOVE_S)
    w.update_sample(later)
    w._redraw_timer.stop()
    w._redraw_step()  # begun: the page is held
    w._redraw_step()  # a panel drawn
    assert not viewport.updatesEnabled()
    w.update_sample(_next(history, later, seconds=MOVE_S))  # the next sample before this redraw ends
    w._redraw_timer.stop()
    w._redraw_step()
    assert viewport.updatesEnabled()  # shown as it comes: held again, it might never be painted
    w.finish_redraw()
    assert viewport.updatesEnabled() and w._held is None


def test_following_live_the_view_leads_the_newest_reading_and_moves_on_once_reached(eight) -> None:
    w, history, sample = eight
    ahead = sample.timestamp_s + LEAD_S
    assert w.gpu_page.x_range() == (ahead - RANGE_S - LEAD_S, ahead)
    later = sample
    for _ in range(int(LEAD_S)):  # the lines grow towards the edge; nothing moves
        later = _next(history, later)
        w.update_sample(later)
        w.finish_redraw()
        assert w.gpu_page.x_range() == (ahead - RANGE_S - LEAD_S, ahead)
    later = _next(history, later, seconds=LEAD_S - int(LEAD_S) + 0.5)  # past the edge
    w.update_sample(later)
    w.finish_redraw()
    ahead = later.timestamp_s + LEAD_S
    assert w.gpu_page.x_range() == (ahead - RANGE_S - LEAD_S, ahead)
    w.set_range(60)  # another range: led by its own share
    w.finish_redraw()
    lead = LEAD_SHARE * 60
    assert w.gpu_page.x_range() == (later.timestamp_s - 60, later.timestamp_s + lead)


def test_the_tier_of_every_sample_holds_fifteen_minutes_and_their_lead() -> None:
    """Following live, the 15-minute view reads up to its lead before the range: past the first
    tier, its lines would be the 5 s buckets, whose newest point lags the live one."""
    from trayvml.history.rings import default_tiers

    assert default_tiers()[0].span_s >= 900 * (1 + LEAD_SHARE) + 1


def test_the_lines_keep_their_tier_while_they_grow_towards_the_views_end(eight) -> None:
    """A panel's point budget is for the whole view: reading more of it as the newest reading
    nears the view's end must not switch the lines to a coarser tier halfway."""
    w, history, sample = eight
    w.set_range(900)
    w.finish_redraw()
    budget = int(900 * (1 + LEAD_SHARE / 2))  # points: fewer than the view's seconds, more than the range's
    w.gpu_page.budget = lambda panel, lines=1: budget
    steps = []
    later = sample
    for _ in range(int(LEAD_SHARE * 900)):
        later = _next(history, later)
        w.update_sample(later)
        w.finish_redraw()
        xs, _ = w.gpu_page.panels[0].lines[0].line(0)
        steps.append(float(xs[-1] - xs[-2]))
    assert len(set(steps)) == 1, (
        steps
    )  # one tier from one move of the view to the next (1 s at first, then 5 s, before)


def _plots_in_view(page) -> tuple[QWidget, QRect]:
    """The widget ``page``'s plots are drawn on, and the part of it scrolled into view."""
    plots = page.layout_widget.viewport()
    return plots, QRect(plots.mapFrom(page.viewport(), QPoint(0, 0)), page.viewport().size())


def _unhovered(w, qtbot) -> None:
    """The mouse off the plots, where a test before may have left it: no crosshair, readout or
    highlighted GPU."""
    qtbot.mouseMove(w.status_label)
    w.gpu_page.hide_crosshair()
    w.highlight_gpu(-1)


def test_between_moves_a_new_reading_paints_only_the_lines_new_stretch(eight, qtbot) -> None:
    w, history, sample = eight
    page = w.gpu_page
    _unhovered(w, qtbot)
    viewport = page.layout_widget.viewport()
    later = _next(history, sample)
    w.update_sample(later)  # the first stretch drawn since the view was set
    w.finish_redraw()
    qtbot.wait(20)
    counter = PaintCounter()
    viewport.installEventFilter(counter)
    later = _next(history, later)
    w.update_sample(later)
    qtbot.waitUntil(lambda: not w._redraw_timer.isActive() and counter.paints > 0)
    qtbot.wait(50)  # a second paint, if one were coming
    assert counter.paints == 1  # every panel in one paint
    painted = counter.regions[0]
    view = page.first.getViewBox()
    at = view.mapViewToDevice(QPointF(later.timestamp_s, 0)).x()  # where the new reading is drawn
    assert painted.width() < 0.05 * viewport.width()  # the whole page before: axes, grids, titles, lines
    assert painted.left() < at < painted.right()
    assert painted.height() > 0.5 * page.viewport().height()  # every panel in view


@pytest.mark.parametrize("highlighted", [-1, 2])
def test_stretches_painted_one_by_one_add_up_to_the_whole_picture(eight, qtbot, highlighted: int) -> None:
    """Each second paints only the lines' new stretch on what the screen already holds: after such
    seconds, the window on screen is what painting it whole gives; also with a GPU's lines
    highlighted (drawn wider, on top: such lines are painted whole, their stretches came out
    otherwise)."""
    w, history, sample = eight
    page = w.gpu_page
    _unhovered(w, qtbot)
    w.highlight_gpu(highlighted)
    w.set_range(60)  # 20 px a second: a stretch wider than Qt's own margin around what it paints
    w.refresh()
    later = sample
    for k in range(int(LEAD_SHARE * 60)):  # up to the view's end; the utilization zig-zags (the first panel)
        later = _next(history, later, busy=20.0 + 60.0 * (k % 2))
        w.update_sample(later)
        w.finish_redraw()
        qtbot.wait(5)  # painted, a stretch at a time
    qtbot.wait(20)
    screen = w.screen().grabWindow(w.winId()).toImage()  # what the window's paints left there
    plots, seen = _plots_in_view(page)
    shown = screen.copy(QRect(plots.mapTo(w, seen.topLeft()), seen.size())).convertToFormat(QImage.Format.Format_RGB32)
    whole = plots.grab(seen).toImage().convertToFormat(QImage.Format.Format_RGB32)  # painted whole, now
    assert shown.size() == whole.size() and shown == whole


def test_the_screen_after_the_view_moves_on_is_the_whole_picture_dashes_and_all(eight, qtbot) -> None:
    """The view moves on, drawing lines read from where it stood; the redraw after reads from where
    it starts now, and the lines lose readings left of it, out of sight. A dashed line's pattern
    starts at its first point: losing points shifts it along the whole line, so such a redraw must
    paint more than the lines' new stretch (a review caught a change that painted only that)."""
    w, history, sample = eight
    page = w.gpu_page
    _unhovered(w, qtbot)
    w.set_range(60)  # 20 px a second
    w.refresh()
    later, start = sample, page.x_range()[0]
    for k in range(2 * int(LEAD_SHARE * 60)):  # the utilization zig-zags (the first panel)
        # Samples half a second into their 1 s rows, as the sampler's come: the view then starts
        # inside a row, and the lines lose a length that is no whole number of dashes.
        later = _next(history, later, 1.5 if k == 0 else 1.0, busy=20.0 + 60.0 * (k % 2))
        w.update_sample(later)
        w.finish_redraw()
        qtbot.wait(5)  # painted, a stretch at a time
        if page.x_range()[0] != start:
            break
    assert page.x_range()[0] > start  # the view moved on
    later = _next(history, later, busy=50.0)
    w.update_sample(later)
    w.finish_redraw()
    qtbot.wait(50)
    screen = w.screen().grabWindow(w.winId()).toImage()
    plots, seen = _plots_in_view(page)
    shown = screen.copy(QRect(plots.mapTo(w, seen.topLeft()), seen.size())).convertToFormat(QImage.Format.Format_RGB32)
    whole = plots.grab(seen).toImage().convertToFormat(QImage.Format.Format_RGB32)
    assert shown.size() == whole.size() and shown == whole


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
    start, end = w.gpu_page.x_range()
    assert start < later.timestamp_s <= end  # and the view shows it
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
    ahead = later.timestamp_s + LEAD_S
    assert w.gpu_page.x_range() == (ahead - RANGE_S - LEAD_S, ahead)
    assert w.host_page.x_range() == host_before  # out of view: not moved every second
    w.tabs.setCurrentWidget(w.host_page)
    w.finish_redraw()
    assert w.host_page.x_range() == (ahead - RANGE_S - LEAD_S, ahead)


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


@pytest.mark.parametrize("spec", ["training:gpus=h100*8", "idle:gpus=h100+rtx4090+laptop"])
def test_everything_a_panel_draws_lies_inside_the_panel(qtbot, spec: str) -> None:
    """Each panel tells Qt that its items draw only inside it (ItemContainsChildrenInShape): a
    paint then skips the panels it does not reach and all they hold (following live, a second's
    stretch reaches four panels of a page's thirteen). An item drawn past its panel would be left
    stale there: none is, on any page, also where a panel says its metrics are not supported."""
    history, sample = filled_history(spec, 600, host=True)
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.set_range(RANGE_S)
    contained = QGraphicsItem.GraphicsItemFlag.ItemContainsChildrenInShape
    clips = QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape
    checked = 0

    def check(page) -> int:
        """How many items were looked at, of ``page``'s panels as laid out in view."""
        w.refresh()
        qtbot.wait(5)
        count = 0
        for panel in page.panels:
            plot = panel.plot
            assert plot.flags() & contained
            outside = []
            items = list(plot.childItems())
            while items:
                item = items.pop()
                items += item.childItems()
                drawn = item.sceneBoundingRect()
                parent = item.parentItem()
                while parent is not None and parent is not plot:  # what a clipping item holds is cut at its edge
                    if parent.flags() & clips:
                        drawn &= parent.sceneBoundingRect()
                    parent = parent.parentItem()
                count += 1
                if item.isVisible() and not drawn.isEmpty() and not plot.sceneBoundingRect().contains(drawn):
                    outside.append((type(item).__name__, drawn))
            assert not outside, panel.title
        return count

    w.tabs.setCurrentWidget(w._gpu_tab)
    checked += check(w.gpu_page)
    w.tabs.setCurrentWidget(w.host_page)
    checked += check(w.host_page)
    w.tabs.setCurrentWidget(w.per_gpu)
    for group in range(w.per_gpu.group_box.count()):
        w.per_gpu.group_box.setCurrentIndex(group)
        checked += check(w.per_gpu.page)
    assert checked > 100


def test_time_axes_kept_as_pixels_show_the_range_after_the_view_moves(eight, qtbot) -> None:
    """The time axes are kept as pixels between changes (the lines' stretch at a panel's bottom
    overlaps its axis by a pixel, which had the axis drawn anew each second): once the view has
    moved on, and after a change of colours, they show what they draw anew."""
    w, history, sample = eight
    page = w.gpu_page
    _unhovered(w, qtbot)
    later = _next(history, sample, seconds=MOVE_S)  # past the view's edge: it moves on
    w.update_sample(later)
    w.finish_redraw()
    qtbot.wait(20)
    axes = [panel.plot.getAxis("bottom") for panel in page.visible_panels()]
    assert all(axis.cacheMode() == QGraphicsItem.CacheMode.DeviceCoordinateCache for axis in axes)
    plots, seen = _plots_in_view(page)

    def drawn_anew() -> QImage:
        for axis in axes:  # their pixels dropped
            axis.setCacheMode(QGraphicsItem.CacheMode.NoCache)
            axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        return plots.grab(seen).toImage()

    assert plots.grab(seen).toImage() == drawn_anew()
    page.apply_palette(QColor(30, 30, 30), QColor(250, 120, 0))  # other colours, as a theme change gives
    w.refresh()
    qtbot.wait(20)
    assert plots.grab(seen).toImage() == drawn_anew()
