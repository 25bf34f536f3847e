"""Sharp at 200 %: the tray icon's pixmaps and the timelines' lines follow the device pixel ratio.

The whole app at QT_SCALE_FACTOR=2 is in tests/test_desktop.py and scripts/screenshots.py --scale 2.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter

from trayvml.core.levels import Level
from trayvml.ui.icon import Bar, IconContent, draw_icon
from trayvml.ui.plots import Lines
from trayvml.ui.tray import ICON_SIZES, make_icon

CONTENT = IconContent((Bar(0.9, Level.NORMAL), Bar(0.35, Level.WARNING), Bar(0.6, Level.CRITICAL)))


def _mean_difference(a: QImage, b: QImage) -> float:
    """Mean absolute difference per channel, 0 to 255."""
    a = a.convertToFormat(QImage.Format.Format_ARGB32)
    b = b.convertToFormat(QImage.Format.Format_ARGB32)
    assert a.size() == b.size()
    total = sum(
        abs(((a.pixel(x, y) >> shift) & 0xFF) - ((b.pixel(x, y) >> shift) & 0xFF))
        for x in range(a.width())
        for y in range(a.height())
        for shift in (0, 8, 16, 24)
    )
    return total / (a.width() * a.height() * 4)


def test_at_200_percent_each_tray_size_is_drawn_at_device_resolution(qapp) -> None:
    """What the tray host gets for a 22 px icon on a 2x screen is the icon drawn on 44 pixels, not a
    22 px drawing enlarged or another size's drawing shrunk."""
    icon = make_icon(CONTENT, 2.0)
    for size in ICON_SIZES:
        pixmap = icon.pixmap(QSize(size, size), 2.0)
        assert (pixmap.width(), pixmap.devicePixelRatio()) == (2 * size, 2.0)
        drawn = draw_icon(CONTENT, size, 2.0).toImage()
        assert _mean_difference(pixmap.toImage(), drawn) == 0, f"{size} px at 2x"
    # The check can fail: drawn at 1x only, a 22 px icon (there is no 44 px drawing then) comes enlarged.
    enlarged = make_icon(CONTENT, 1.0).pixmap(QSize(22, 22), 2.0).toImage()
    assert _mean_difference(enlarged, draw_icon(CONTENT, 22, 2.0).toImage()) > 0.5  # measured: 1.71


def _line_thickness_px(device_pixel_ratio: float) -> int:
    """Rows a one-pixel timeline line covers, painted on an image of that pixel ratio."""
    lines = Lines()
    lines.set_each([(np.array([0.0, 20.0]), np.array([10.0, 10.0]))], [pg.mkPen("#ff0000", width=1)])
    side = round(20 * device_pixel_ratio)
    image = QImage(side, side, QImage.Format.Format_ARGB32)
    image.setDevicePixelRatio(device_pixel_ratio)
    image.fill(Qt.GlobalColor.white)
    painter = QPainter(image)
    lines.paint(painter)
    painter.end()
    column = side // 2
    return sum(
        QColor(image.pixel(column, y)).red() > 200 and QColor(image.pixel(column, y)).green() < 100 for y in range(side)
    )


def test_timeline_lines_are_as_thick_at_200_percent_as_at_100(qapp) -> None:
    assert _line_thickness_px(1.0) == 1
    assert _line_thickness_px(2.0) == 2  # a hairline at 2x would look half as heavy as its labels
