"""The GPU legend above the graphs: a swatch of each GPU's colour, its number and model, a tick to
show or hide it; the cursor over an entry highlights that GPU's lines. Entries wrap onto as many
rows as the window's width needs: 16 or 64 GPUs never hide behind a toolbar's "»"."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QCheckBox, QLabel, QLayout, QLayoutItem, QSizePolicy, QWidget

from trayvml.core.safe_text import menu_label, rich_text
from trayvml.core.sample import DeviceInfo
from trayvml.core.units import short_name
from trayvml.ui.gpu_colours import gpu_colour

translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)
SWATCH_PX = (18, 10)  # a short thick line in the GPU's colour, as its lines are drawn
NAMED_UP_TO = 16  # past this many GPUs an entry shows the number only (the model is in its tooltip)
GAP_PX = (10, 2)


class FlowLayout(QLayout):
    """Items left to right, wrapping onto the next row where the width ends (Qt's flow layout example)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 - Qt override
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt override
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt override
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 - Qt override
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt override
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt override
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802 - Qt override
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return self.minimumSize()

    def minimumSize(self) -> QSize:  # noqa: N802 - Qt override
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _arrange(self, rect: QRect, move: bool) -> int:
        """Places the items (``move``) and returns the height they take at ``rect``'s width."""
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        x, y, row_px = area.x(), area.y(), 0
        for item in self._items:
            if item.isEmpty():
                continue
            hint = item.sizeHint()
            if x + hint.width() > area.right() + 1 and row_px > 0:
                x, y, row_px = area.x(), y + row_px + GAP_PX[1], 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + GAP_PX[0]
            row_px = max(row_px, hint.height())
        return y + row_px - rect.y() + margins.bottom()


def swatch(colour: QColor) -> QIcon:
    """A line's colour as an icon, drawn at 100 % and 200 %: one pixmap scaled up blurred its edges
    on a HiDPI screen."""
    width, height = SWATCH_PX
    icon = QIcon()
    for ratio in (1, 2):
        pixmap = QPixmap(width * ratio, height * ratio)
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.fillRect(0, height // 2 - 2, width, 4, colour)
        painter.end()
        icon.addPixmap(pixmap)
    return icon


class GpuLegend(QWidget):
    """An entry per GPU. ``toggled(gpu, shown)`` when one is ticked or unticked; ``hovered(gpu)``
    when the cursor enters one, ``hovered(-1)`` when it leaves."""

    toggled = Signal(int, bool)
    hovered = Signal(int)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("gpu_legend")
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self._layout = FlowLayout(self)
        self._layout.setContentsMargins(6, 3, 6, 3)
        self._title = QLabel(translate("GraphWindow", "Show:"))
        self._title.setMinimumHeight(QCheckBox("0").sizeHint().height())  # on the entries' line
        self._title.setAlignment(Qt.AlignmentFlag.AlignVCenter)
        self._layout.addWidget(self._title)
        self.entries: list[QCheckBox] = []
        self.highlighted = -1
        self._keyboard = -1  # the entry with the keyboard's focus (its FocusIn and FocusOut)
        self._pointer = -1  # the entry under the pointer (its Enter and Leave)
        self.background = QColor(Qt.GlobalColor.white)  # the plots': the swatches show the lines' colours

    def set_background(self, background: QColor) -> None:
        self.background = QColor(background)
        for column, entry in enumerate(self.entries):
            entry.setIcon(swatch(gpu_colour(column, background)))

    def set_devices(self, devices: tuple[DeviceInfo, ...], hidden: set[int]) -> None:
        # A keyboard user's place: on an entry when the GPUs change (one lost, a MIG device made),
        # the focus went to the window's first control as the entry went.
        focused = self._keyboard
        for entry in self.entries:
            self._layout.removeWidget(entry)
            entry.setParent(None)
            entry.deleteLater()
        self.entries = []
        # By column (the GPU's place in the sample, as every panel draws it), named by its index:
        # a remote host's indices may skip (GPUs 1 and 3 of a selector), and the legend's colours
        # and check boxes by index then named and hid other columns than the lines'.
        for column, info in enumerate(devices):
            label = f"{info.index} {short_name(info.shown_name)}" if len(devices) <= NAMED_UP_TO else str(info.index)
            entry = QCheckBox(menu_label(label, dbusmenu=False))  # & is a mnemonic
            entry.setObjectName(f"gpu_legend_{info.index}")
            entry.setIcon(swatch(gpu_colour(column, self.background)))
            entry.setChecked(column not in hidden)
            # Identical models told apart; <p>: always rich text, so the escaped driver text shows as it is.
            facts = translate("GraphWindow", "{name} · bus {bus} · {uuid}").format(
                name=info.shown_name, bus=info.pci_bus_id or "?", uuid=info.uuid
            )
            entry.setToolTip(f'<p style="white-space:pre">{rich_text(facts)}</p>')  # a UUID unbroken at its hyphens
            entry.toggled.connect(lambda on, c=column: self.toggled.emit(c, on))
            entry.installEventFilter(self)
            self._layout.addWidget(entry)
            self.entries.append(entry)
        self.highlighted = -1
        self._keyboard = self._pointer = -1
        self.updateGeometry()
        if focused >= 0 and self.entries:
            entry = self.entries[min(focused, len(self.entries) - 1)]
            entry.show()  # (a layout shows a new child later: a hidden one takes no focus)
            entry.setFocus(Qt.FocusReason.OtherFocusReason)

    def show_highlight(self, gpu: int) -> None:
        """The entry of ``gpu`` underlined (-1: none): not bold, which would widen it and reflow the
        entries under the cursor."""
        self.highlighted = gpu
        for k, entry in enumerate(self.entries):
            font = entry.font()
            if font.underline() != (k == gpu):
                font.setUnderline(k == gpu)
                entry.setFont(font)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched in self.entries:
            # Keyboard focus as the pointer: a GPU's lines stand out for a keyboard user too, and
            # the one leaving gives the highlight back to the other (they cleared each other's).
            k, kind = self.entries.index(watched), event.type()
            if kind == QEvent.Type.Enter:
                self._pointer = k
                self.hovered.emit(k)
            elif kind == QEvent.Type.FocusIn:
                self._keyboard = k
                self.hovered.emit(k)
            elif kind == QEvent.Type.Leave:
                self._pointer = -1 if self._pointer == k else self._pointer
                self.hovered.emit(self._keyboard)
            elif kind == QEvent.Type.FocusOut:
                self._keyboard = -1 if self._keyboard == k else self._keyboard
                self.hovered.emit(self._pointer)
        return super().eventFilter(watched, event)
