"""What a careful eye found at 200 % and on dark desktops (the screenshots' audit), each held."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QPalette

from tests.ui_helpers import filled_history, shown_window


def test_a_legend_swatch_is_drawn_for_a_hidpi_screen_not_scaled_up(qapp) -> None:
    from trayvml.ui.legend import SWATCH_PX, swatch

    icon = swatch(QColor("#4e79a7"))
    width, height = SWATCH_PX
    sharp = icon.pixmap(QSize(width, height), 2.0)
    assert sharp.devicePixelRatio() == 2.0 and sharp.width() == 2 * width  # its own pixels, not 1x blown up


def test_the_temperature_limits_name_sits_on_a_patch_of_the_plots_background(qtbot) -> None:
    history, sample = filled_history("training:gpus=h100,start=1800", 120)
    w = shown_window(qtbot, history, sample, 1280, 800)
    page = w.gpu_page
    assert page is not None
    (named,) = [line for panel in page.panels for line in panel.limits if line.isVisible() and line.label.format]
    assert "slowdown" in named.label.format
    fill = named.label.fill.color()
    assert fill.alpha() > 128 and fill.rgb() == page.background.rgb()  # the lines do not run through the letters
    unnamed = [line for panel in page.panels for line in panel.limits if line.isVisible() and not line.label.format]
    assert unnamed and all(line.label.fill.style() == Qt.BrushStyle.NoBrush for line in unnamed)  # no notch
    # A dark desktop chosen while the window is open: the patch and the name in its colours at once.
    dark = QPalette(w.palette())
    dark.setColor(QPalette.ColorRole.Base, QColor("#202020"))
    dark.setColor(QPalette.ColorRole.Text, QColor("#e0e0e0"))
    w.setPalette(dark)
    w.finish_redraw()
    assert (
        named.label.fill.color().rgb() == QColor("#202020").rgb() and named.label.color.rgb() == QColor("#e0e0e0").rgb()
    )


def test_an_alerts_time_stays_on_one_line(qtbot) -> None:
    from trayvml.alerts.rules import AlertEvent
    from trayvml.alerts.severity import Severity
    from trayvml.ui.alerts_page import TIME, AlertsPage

    table = AlertsPage()
    qtbot.addWidget(table)
    table.resize(900, 300)
    table.add_events([AlertEvent(1.8e9, 0, "H100", "temperature", "firing", Severity.WARNING, "warm")])
    table.show()
    item = table.item(0, TIME)
    assert item is not None
    needed = table.fontMetrics().horizontalAdvance(item.text())
    assert table.columnWidth(TIME) >= needed  # (it wrapped the date and time onto two lines)


def test_the_settings_dialog_opens_tall_enough_for_its_rules_where_the_screen_allows(qtbot) -> None:
    from PySide6.QtWidgets import QScrollArea, QTabWidget

    from trayvml.config import Settings
    from trayvml.ui.settings_dialog import SettingsDialog

    dialog = SettingsDialog(Settings())
    qtbot.addWidget(dialog)
    assert dialog.height() <= dialog.screen().availableGeometry().height() - 80
    dialog.show()
    qtbot.waitExposed(dialog)
    tabs = dialog.findChild(QTabWidget)
    assert tabs is not None
    area = next(a for a in dialog.findChildren(QScrollArea) if a.widget() is dialog.rule_grid)
    tabs.setCurrentIndex(tabs.indexOf(area))
    qtbot.waitUntil(area.isVisible)
    assert area.verticalScrollBar().maximum() == 0  # (it scrolled, at 484 px, on an 800 px screen)


def _drawn_colours(page) -> set[str]:
    """The colours of the GPU lines drawn in the page's first panel."""
    return {pen.color().name() for lines in page.panels[0].lines for pen, _ in lines._paths}


def test_every_gpus_lines_stand_out_from_a_light_or_a_dark_plot(qtbot) -> None:
    from trayvml.ui.gpu_colours import LEAST_CONTRAST, LEAST_TEXT_CONTRAST, contrast, hex_to_rgb, luminance
    from trayvml.ui.plot_pages import _readout_html

    history, sample = filled_history("training:gpus=h100*10,start=1800", 60)
    w = shown_window(qtbot, history, sample, 1280, 800)
    page = w.gpu_page
    assert page is not None
    for base in ("#ffffff", "#1e2127"):
        palette = QPalette(w.palette())
        palette.setColor(QPalette.ColorRole.Base, QColor(base))
        palette.setColor(QPalette.ColorRole.Text, QColor("#000000" if base == "#ffffff" else "#e6e6e6"))
        w.setPalette(palette)
        w.finish_redraw()
        drawn = _drawn_colours(page)
        assert len(drawn) == 10  # one colour a GPU
        # Tableau's yellow, pink, teal and grey were 1.6-2.4 to 1 on white: drawn 1 px wide, they faded.
        ratios = contrast(luminance(hex_to_rgb(sorted(drawn))), float(luminance(hex_to_rgb([base]))[0]))
        assert np.all(ratios >= LEAST_CONTRAST), (base, ratios)
        # The legend's swatches are the lines' colours.
        swatches = set()
        for entry in w.legend.entries:
            image = entry.icon().pixmap(QSize(16, 16), 1.0).toImage()
            swatches.add(image.pixelColor(image.width() // 2, image.height() // 2).name())
        assert swatches == drawn
        # The readout names each GPU in its line's colour, made readable as text.
        panel = page.panels[0]
        xs, _ = panel.lines[0].line(0)
        html = _readout_html(panel, float(xs[-5]), w._names())
        named = re.findall(r'<td style="color:(#[0-9a-f]{6})">', html)
        assert len(named) == 10
        ratios = contrast(luminance(hex_to_rgb(named)), float(luminance(hex_to_rgb([base]))[0]))
        assert np.all(ratios >= LEAST_TEXT_CONTRAST), (base, named)
    assert "#f28e2b" in drawn  # on a dark plot Tableau's orange as it is


def test_a_sleeping_gpu_is_shaded_in_its_colour_on_the_plot_it_is_drawn_on(qtbot) -> None:
    from trayvml.monitor.spans import AsleepSpans
    from trayvml.ui.gpu_colours import gpu_colour

    history, sample = filled_history("idle:gpus=h100+laptop,start=1800", 120)
    spans = AsleepSpans()
    for late_s, asleep in ((60, False), (50, True), (30, True), (20, False)):  # the laptop GPU slept 20 s
        gpus = tuple(replace(gpu, asleep=asleep) if gpu.index == 1 else gpu for gpu in sample.gpus)
        spans.update(replace(sample, timestamp_s=sample.timestamp_s - late_s, gpus=gpus))
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.asleep_spans = spans
    for base in ("#ffffff", "#1e2127"):
        palette = QPalette(w.palette())
        palette.setColor(QPalette.ColorRole.Base, QColor(base))
        w.setPalette(palette)
        w.refresh()
        w.finish_redraw()
        panel = w.gpu_page.panels[0]
        (band,) = [band for band in panel.__dict__.get("asleep_bands", []) if band.isVisible()]
        assert [round(x - sample.timestamp_s) for x in band.getRegion()] == [-50, -30]
        colour = band.brush.color()
        assert colour.alpha() == 40 and colour.rgb() == gpu_colour(1, QColor(base)).rgb()


def _rows_drawn_at_200(qtbot, add) -> list[int]:
    """The device rows inked down a column of a plot rendered at 200 %, what ``add(plot)`` puts in it."""
    import pyqtgraph as pg
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QImage, QPainter

    plot = pg.PlotWidget(background="w")
    qtbot.addWidget(plot)
    plot.resize(200, 200)
    plot.hideAxis("bottom")
    plot.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
    add(plot.getPlotItem())
    plot.show()
    qtbot.waitExposed(plot)
    image = QImage(plot.size() * 2, QImage.Format.Format_ARGB32)
    image.setDevicePixelRatio(2)
    image.fill(Qt.GlobalColor.white)
    plot.scene().prepareForPaint()
    painter = QPainter(image)  # its device a 200 % one, as a HiDPI screen's window
    plot.scene().render(painter, QRectF(0, 0, 200, 200), plot.sceneRect())
    painter.end()
    x = image.width() * 3 // 4  # (the grid's time lines are vertical: none here at this range)
    return [y for y in range(image.height()) if image.pixelColor(x, y).lightness() < 250]


def test_a_limit_marker_crosshair_and_grid_line_are_as_thick_at_200_percent_as_the_text(qtbot) -> None:
    """Cosmetic pens are as wide in device pixels at any scale: at 200 % they were hairlines."""
    import pyqtgraph as pg

    from trayvml.ui.plots import Grid, Rule

    limit = Rule(pos=0.5, angle=0, movable=False, pen=pg.mkPen("k", width=1))
    drawn = _rows_drawn_at_200(qtbot, lambda plot: plot.addItem(limit))
    assert len(drawn) == 2 and drawn[1] - drawn[0] == 1  # one line, two device pixels

    def add_grid(plot: pg.PlotItem) -> None:
        grid = Grid(plot.getAxis("left"))
        grid.set_colour(QColor("black"))
        plot.addItem(grid)

    rows = _rows_drawn_at_200(qtbot, add_grid)
    lines = [y for y in rows if y - 1 not in rows]  # each line's first row
    inside = [y for y in lines if 4 < y < 396]  # (one at an edge is cut by the plot)
    assert len(inside) >= 3 and all(y + 1 in rows and y + 2 not in rows for y in inside)


def test_an_alerts_row_is_readable_in_its_severitys_colour_on_a_light_or_dark_table(qtbot) -> None:
    from trayvml.alerts.rules import AlertEvent
    from trayvml.alerts.severity import Severity
    from trayvml.ui.alerts_page import AlertsPage
    from trayvml.ui.gpu_colours import LEAST_TEXT_CONTRAST, contrast, hex_to_rgb, luminance

    table = AlertsPage()
    qtbot.addWidget(table)
    table.add_events(
        [AlertEvent(1.8e9 + k, 0, "H100", "temperature", "firing", s, "warm") for k, s in enumerate(Severity)]
        + [AlertEvent(1.8e9 + 9, 0, "H100", "temperature", "resolved", Severity.WARNING, "cool")]
    )
    # (#2a2a2a and #fcfcfc: worked out before rounding to #rrggbb, the red and the blue fell just short)
    for base, text in (("#ffffff", "#000000"), ("#1e2127", "#e6e6e6"), ("#2a2a2a", "#e6e6e6"), ("#fcfcfc", "#000000")):
        palette = QPalette(table.palette())
        palette.setColor(QPalette.ColorRole.Base, QColor(base))
        palette.setColor(QPalette.ColorRole.Text, QColor(text))
        table.setPalette(palette)  # a theme chosen while the rows are listed
        items = [table.item(row, 3) for row in range(table.rowCount())]
        assert all(items)
        firing = [item.foreground().color().name() for item in items[1:] if item is not None]
        assert len(firing) == len(Severity)
        ratios = contrast(luminance(hex_to_rgb(firing)), float(luminance(hex_to_rgb([base]))[0]))
        assert np.all(ratios >= LEAST_TEXT_CONTRAST), (base, firing)  # the amber was 2 to 1 on white
        assert len(set(firing)) == len(Severity)  # still told apart
        resolved = items[0]
        assert resolved is not None and resolved.foreground().style() == Qt.BrushStyle.NoBrush  # in the text colour


def test_each_cores_line_is_fainter_than_the_cpus_and_darker_than_the_grid_in_any_theme(qtbot) -> None:
    from trayvml.ui.plots import GRID_ALPHA

    history, sample = filled_history("training:gpus=h100,start=1800", 60)
    w = shown_window(qtbot, history, sample, 1280, 800)
    w.tabs.setCurrentWidget(w.host_page)
    for base, text in (("#ffffff", "#000000"), ("#1e2127", "#e6e6e6")):
        palette = QPalette(w.palette())
        palette.setColor(QPalette.ColorRole.Base, QColor(base))
        palette.setColor(QPalette.ColorRole.Text, QColor(text))
        w.setPalette(palette)
        w.finish_redraw()
        cpu = w.host_page.panels[0]
        pens = {pen.color().rgba() for pen, _ in cpu.extra._paths}
        assert len(pens) == 1
        core = QColor.fromRgba(pens.pop())
        assert core.rgb() == QColor(text).rgb() and GRID_ALPHA < core.alpha() < 255
