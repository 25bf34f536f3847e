"""What a careful eye found at 200 % and on dark desktops (the screenshots' audit), each held."""

from __future__ import annotations

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
