"""What a careful eye found at 200 % and on dark desktops (the screenshots' audit), each held."""

from __future__ import annotations

from dataclasses import replace

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
    import numpy as np

    from trayvml.ui.gpu_colours import LEAST_CONTRAST, contrast, hex_to_rgb, luminance

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
