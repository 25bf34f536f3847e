"""A sentence in the middle of an empty list: an empty table is read as broken or not loaded yet."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QLabel, QWidget


class EmptyNote(QLabel):
    """Over ``view``'s rows (its viewport, whose size it follows), below its header; the mouse
    goes through to the view. Hidden until shown (``setVisible``)."""

    def __init__(self, text: str, view: QAbstractScrollArea) -> None:
        viewport = view.viewport()
        super().__init__(text, viewport)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setStyleSheet("color: palette(placeholder-text); padding: 24px;")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setGeometry(viewport.rect())
        viewport.installEventFilter(self)
        self.hide()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Resize and isinstance(watched, QWidget):  # its viewport, resized
            self.setGeometry(watched.rect())
        return False
