"""A small always-on-top window with the glance, for desktops without a system tray."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QPushButton, QVBoxLayout, QWidget

from trayvml.alerts.engine import AlertEngine, gpu_level
from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.levels import Level
from trayvml.core.lines import gpu_line, headline_text, host_line, simulation_text
from trayvml.core.safe_text import rich_text
from trayvml.core.sample import Sample
from trayvml.ui.glance import content_for
from trayvml.ui.icon import draw_icon
from trayvml.ui.theme import LEVEL_COLOURS

translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)
# Said after a GPU's line where its square's colour says it: colour alone tells nothing to a
# screen reader, nor to every eye.
LEVEL_WORDS = {
    Level.WARNING: QT_TRANSLATE_NOOP("SummaryWindow", "warning"),
    Level.CRITICAL: QT_TRANSLATE_NOOP("SummaryWindow", "critical"),
    Level.LOST: QT_TRANSLATE_NOOP("SummaryWindow", "lost"),
}
NO_TRAY_MESSAGE = QT_TRANSLATE_NOOP(
    "SummaryWindow",
    "No system tray was found, so trayvml shows this window instead. On GNOME, the AppIndicator extension adds a tray.",
)


class SummaryWindow(QWidget):
    show_graphs_requested = Signal()
    quit_requested = Signal()

    def __init__(self, engine: AlertEngine | None = None) -> None:
        super().__init__(None, Qt.WindowType.Tool | Qt.WindowType.WindowStaysOnTopHint)
        self.engine = engine or AlertEngine()  # whose settings colour the GPUs, as in the tray
        self.setObjectName("trayvml_summary")
        self.setWindowTitle("trayvml")
        layout = QVBoxLayout(self)
        header = QHBoxLayout()
        self.icon_label = QLabel()
        header.addWidget(self.icon_label)
        self.title = QLabel("<b>trayvml</b>")
        header.addWidget(self.title, 1)
        layout.addLayout(header)
        self.message = QLabel(translate("SummaryWindow", NO_TRAY_MESSAGE))
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color: palette(placeholder-text);")
        layout.addWidget(self.message)
        self.rows = QLabel()
        self.rows.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.rows)
        buttons = QHBoxLayout()
        # Pause alerts, Start at login and Settings: on such a desktop there is no tray menu.
        self.menu_button = QPushButton(translate("SummaryWindow", "Alerts and settings"))
        self.menu_button.setObjectName("app_menu_button")
        self.menu_button.setVisible(False)  # until the app gives it its menu
        show = QPushButton(translate("SummaryWindow", "Show graphs"))
        show.clicked.connect(self.show_graphs_requested)
        quit_button = QPushButton(translate("SummaryWindow", "Quit"))
        quit_button.clicked.connect(self.quit_requested)
        buttons.addWidget(self.menu_button)
        buttons.addStretch(1)
        buttons.addWidget(show)
        buttons.addWidget(quit_button)
        layout.addLayout(buttons)
        self.setMinimumWidth(380)

    def add_app_menu(self, menu: QMenu) -> None:
        self.menu_button.setMenu(menu)
        self.menu_button.setVisible(True)

    def update_sample(self, sample: Sample | None) -> None:
        content = content_for(sample, alerts=self.engine.settings)
        pixmap: QPixmap = draw_icon(content, 32, self.devicePixelRatioF())
        self.icon_label.setPixmap(pixmap)
        self.icon_label.setAccessibleName(headline_text(content.headline) if content.headline is not None else "")
        if sample is None:
            self.rows.setText(translate("SummaryWindow", "Starting…"))
            return
        # Rich text: every piece of text is escaped, GPU names from the driver above all.
        simulation = f" — {rich_text(simulation_text(sample))}" if sample.simulation else ""
        self.title.setText(f"<b>trayvml</b>{simulation}")
        rows = []
        if sample.problem is not None:
            rows.append(rich_text(sample.problem[1]))
        for gpu, info in zip(sample.gpus, sample.devices, strict=True):
            level = gpu_level(gpu, self.engine.settings)
            # (Not where the line says it already: "lost: it has fallen off the bus — lost".)
            said = level in LEVEL_WORDS and not gpu.lost
            word = f" — {translate('SummaryWindow', LEVEL_WORDS[level])}" if said else ""
            colour = LEVEL_COLOURS[level].name()
            rows.append(f'<span style="color:{colour}">■</span> {rich_text(gpu_line(gpu, info))}{word}')
        host = host_line(sample)
        if host:
            rows.append(rich_text(host))
        self.rows.setText("<br>".join(rows))
