"""The settings dialog's Push page: where alerts go beyond this desktop (trayvml/platform/push.py).

A list of destinations, each edited in the form beside it; secrets (a token, a password, a URL whose
path is the secret for ntfy topics and Slack webhooks) are masked and never put in a tooltip or the
list. "Send test notification" sends one notice through a PushNotifier on a thread of its own (one
attempt, bounded by the notifier's timeout and close wait) and says the result in one sentence.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from trayvml.alerts.grouping import LOW, Notice
from trayvml.alerts.rules import RULES
from trayvml.alerts.severity import Severity
from trayvml.config import PUSH_KINDS, SEVERITY_NAMES, SMTP_SECURITY, PushDestination, push_problems
from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.platform.push import PushNotifier, Transport, destination_name

translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)

KIND_NAMES = {
    "ntfy": "ntfy",  # a product's name, never translated
    "webhook": QT_TRANSLATE_NOOP("PushPage", "Webhook (JSON)"),
    "slack": QT_TRANSLATE_NOOP("PushPage", "Slack or Mattermost"),
    "email": QT_TRANSLATE_NOOP("PushPage", "E-mail (SMTP)"),
}
SECURITY_NAMES = {
    "starttls": QT_TRANSLATE_NOOP("PushPage", "STARTTLS (port 587)"),
    "ssl": QT_TRANSLATE_NOOP("PushPage", "SSL/TLS (port 465)"),
    "none": QT_TRANSLATE_NOOP("PushPage", "None (port 25)"),
}
SEVERITY_WORDS = {
    "info": QT_TRANSLATE_NOOP("PushPage", "Info"),
    "warning": QT_TRANSLATE_NOOP("PushPage", "Warning"),
    "critical": QT_TRANSLATE_NOOP("PushPage", "Critical"),
}
TEST_TIMEOUT_S = 10.0  # one attempt; PushNotifier.close() waits at most CLOSE_WAIT_S for it
TEST_RULE = "test"  # the notice's rule key: no destination's rule filter applies to a test
URL_CHARS = 48
FIELD_CHARS = 32  # names, hosts and addresses: the size hint cut "alerts@example.com" short
RULE_LINES = 6  # the rules list's height, in lines: the rest scrolls


class PushPage(QWidget):
    changed = Signal()
    _tested = Signal(str)  # from the test's thread: its sentence

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("push_page")
        self.transport: Transport | None = None  # tests: a fake; None: the real Sender
        self._items: list[PushDestination] = []
        self._row = -1
        self._loading = False
        layout = QVBoxLayout(self)
        note = QLabel(
            translate(
                "PushPage",
                "Alerts also go to these destinations, with this machine's name in the title. Pausing "
                "alerts from the tray menu, and snoozing one, quiets them here too, not only on the desktop.",
            )
        )
        note.setObjectName("push_pause_note")
        note.setWordWrap(True)
        layout.addWidget(note)
        body = QHBoxLayout()
        layout.addLayout(body, 1)

        column = QVBoxLayout()
        self.list = QListWidget()
        self.list.setObjectName("push_list")
        self.list.setAccessibleName(translate("PushPage", "Destinations"))
        self.list.setMaximumWidth(self.fontMetrics().averageCharWidth() * 28)
        column.addWidget(self.list, 1)
        buttons = QHBoxLayout()
        self.add_button = QPushButton(translate("PushPage", "Add"))
        self.add_button.setObjectName("push_add")
        self.remove_button = QPushButton(translate("PushPage", "Remove"))
        self.remove_button.setObjectName("push_remove")
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        column.addLayout(buttons)
        body.addLayout(column)

        self.editor = QWidget()
        form = QFormLayout(self.editor)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        self.form = form
        self.kind = QComboBox()
        self.kind.setObjectName("push_kind")
        for kind in PUSH_KINDS:
            self.kind.addItem(translate("PushPage", KIND_NAMES[kind]), kind)
        form.addRow(translate("PushPage", "Kind"), self.kind)
        self.name = self._line("push_name", translate("PushPage", "its kind and host"))
        form.addRow(translate("PushPage", "Name"), self.name)
        # The URL's path is the secret of an ntfy topic or a Slack webhook: shown only while edited.
        self.url = self._line("push_url", "https://ntfy.sh/my-gpus-4f9a2c", QLineEdit.EchoMode.PasswordEchoOnEdit)
        self.url.setMinimumWidth(self.fontMetrics().averageCharWidth() * URL_CHARS)
        form.addRow(translate("PushPage", "URL"), self.url)
        self.token = self._line("push_token", translate("PushPage", "optional"), QLineEdit.EchoMode.Password)
        form.addRow(translate("PushPage", "Access token"), self.token)
        self.smtp_host = self._line("push_smtp_host", "smtp.example.com")
        form.addRow(translate("PushPage", "SMTP server"), self.smtp_host)
        self.smtp_port = QSpinBox()
        self.smtp_port.setObjectName("push_smtp_port")
        self.smtp_port.setRange(0, 65535)
        self.smtp_port.setSpecialValueText(translate("PushPage", "the usual"))
        self.smtp_port.valueChanged.connect(self._edited)
        form.addRow(translate("PushPage", "Port"), self.smtp_port)
        self.security = QComboBox()
        self.security.setObjectName("push_security")
        for choice in SMTP_SECURITY:
            self.security.addItem(translate("PushPage", SECURITY_NAMES[choice]), choice)
        self.security.currentIndexChanged.connect(self._edited)
        form.addRow(translate("PushPage", "Security"), self.security)
        self.username = self._line("push_username", translate("PushPage", "none"))
        form.addRow(translate("PushPage", "User name"), self.username)
        self.password = self._line("push_password", "", QLineEdit.EchoMode.Password)
        form.addRow(translate("PushPage", "Password"), self.password)
        self.sender_edit = self._line("push_sender", "alerts@example.com")
        form.addRow(translate("PushPage", "From"), self.sender_edit)
        self.to = self._line("push_to", translate("PushPage", "addresses, separated by commas"))
        form.addRow(translate("PushPage", "To"), self.to)
        self.rules = QListWidget()
        self.rules.setObjectName("push_rules")
        for rule in RULES:
            item = QListWidgetItem(translate("alerts", rule.label))
            item.setData(Qt.ItemDataRole.UserRole, rule.key)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.rules.addItem(item)
        self.rules.setFixedHeight(self.fontMetrics().lineSpacing() * RULE_LINES + 12)
        # Wide enough for the longest rule's name: no sideways scrolling in a list of checkboxes.
        scroll_bar = self.rules.verticalScrollBar().sizeHint().width()
        self.rules.setMinimumWidth(self.rules.sizeHintForColumn(0) + scroll_bar + 12)
        self.rules.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.rules.itemChanged.connect(self._edited)
        rules_label = QLabel(translate("PushPage", "Rules\n(none ticked: every rule)"))
        rules_label.setBuddy(self.rules)  # a screen reader names the list by it (addRow with a QLabel does not)
        form.addRow(rules_label, self.rules)
        severities = QWidget()
        row = QHBoxLayout(severities)
        row.setContentsMargins(0, 0, 0, 0)
        self.severity_checks: dict[str, QCheckBox] = {}
        for name in SEVERITY_NAMES:
            check = QCheckBox(translate("PushPage", SEVERITY_WORDS[name]))
            check.setObjectName(f"push_severity_{name}")
            check.toggled.connect(self._edited)
            row.addWidget(check)
            self.severity_checks[name] = check
        row.addStretch(1)
        form.addRow(translate("PushPage", "Severities"), severities)
        self.quiet_hours = self._line("push_quiet_hours", "22:00-07:00")
        self.quiet_hours.setToolTip(
            translate("PushPage", "Local time; only critical alerts go out then. Empty: never quiet.")
        )
        form.addRow(translate("PushPage", "Quiet hours"), self.quiet_hours)
        test_row = QHBoxLayout()
        self.test_button = QPushButton(translate("PushPage", "Send test notification"))
        self.test_button.setObjectName("push_test")
        test_row.addWidget(self.test_button)
        self.test_result = QLabel()
        self.test_result.setObjectName("push_test_result")
        self.test_result.setWordWrap(True)
        test_row.addWidget(self.test_result, 1)
        form.addRow(test_row)
        editor_column = QVBoxLayout()
        editor_column.addWidget(self.editor)
        editor_column.addStretch(1)  # room to spare goes below the form, not between its rows
        body.addLayout(editor_column, 1)

        self.kind.currentIndexChanged.connect(self._edited)
        self.list.currentRowChanged.connect(self._select)
        self.add_button.clicked.connect(self._add)
        self.remove_button.clicked.connect(self._remove)
        self.test_button.clicked.connect(self.send_test)
        self._tested.connect(self._show_tested)
        self._select(-1)

    def _line(self, name: str, placeholder: str, echo: QLineEdit.EchoMode = QLineEdit.EchoMode.Normal) -> QLineEdit:
        edit = QLineEdit()
        edit.setObjectName(name)
        edit.setPlaceholderText(placeholder)
        edit.setEchoMode(echo)
        edit.setMinimumWidth(self.fontMetrics().averageCharWidth() * FIELD_CHARS)  # an address fits
        edit.textChanged.connect(self._edited)
        return edit

    # ---- the list ----
    def show_destinations(self, destinations: tuple[PushDestination, ...]) -> None:
        self._items = list(destinations)
        self._row = -1
        self.list.clear()
        for destination in self._items:
            self.list.addItem(destination_name(destination))  # never its URL's path, token or password
        self.list.setCurrentRow(0 if self._items else -1)
        self._select(self.list.currentRow())

    def destinations(self) -> tuple[PushDestination, ...]:
        return tuple(self._items)

    def _add(self) -> None:
        self._items.append(PushDestination("ntfy"))
        self.list.addItem(destination_name(self._items[-1]))
        self.list.setCurrentRow(len(self._items) - 1)
        self.changed.emit()

    def _remove(self) -> None:
        row = self.list.currentRow()
        if row < 0:
            return
        self._row = -1  # what the form shows is not kept
        del self._items[row]
        self.list.takeItem(row)
        self._select(self.list.currentRow())
        self.changed.emit()

    def _select(self, row: int) -> None:
        self._row = row
        self.editor.setEnabled(row >= 0)
        self.remove_button.setEnabled(row >= 0)
        self.test_result.setText("")
        self._show(self._items[row] if row >= 0 else PushDestination("ntfy", severities=()))

    # ---- the form ----
    def _show(self, destination: PushDestination) -> None:
        self._loading = True
        try:
            self.kind.setCurrentIndex(max(0, self.kind.findData(destination.kind)))
            self.name.setText(destination.name)
            self.url.setText(destination.url)
            self.token.setText(destination.token)
            self.smtp_host.setText(destination.smtp_host)
            self.smtp_port.setValue(destination.smtp_port)
            self.security.setCurrentIndex(max(0, self.security.findData(destination.security)))
            self.username.setText(destination.username)
            self.password.setText(destination.password)
            self.sender_edit.setText(destination.sender)
            self.to.setText(", ".join(destination.to))
            for index in range(self.rules.count()):
                item = self.rules.item(index)
                ticked = item.data(Qt.ItemDataRole.UserRole) in destination.rules
                item.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
            for name, check in self.severity_checks.items():
                check.setChecked(name in destination.severities)
            self.quiet_hours.setText(destination.quiet_hours)
        finally:
            self._loading = False
        self._show_kind(destination.kind)

    def _show_kind(self, kind: str) -> None:
        email = kind == "email"
        self.form.setRowVisible(self.url, not email)
        self.form.setRowVisible(self.token, kind == "ntfy")
        for widget in (self.smtp_host, self.smtp_port, self.security, self.username, self.password):
            self.form.setRowVisible(widget, email)
        self.form.setRowVisible(self.sender_edit, email)
        self.form.setRowVisible(self.to, email)

    def _read(self) -> PushDestination:
        """The form as a destination; fields its kind does not use are left out (no stray secrets)."""
        kind = self.kind.currentData()
        email = kind == "email"
        text = {
            "name": self.name.text().strip(),
            "url": "" if email else self.url.text().strip(),
            "token": self.token.text() if kind == "ntfy" else "",
            "smtp_host": self.smtp_host.text().strip() if email else "",
            "username": self.username.text().strip() if email else "",
            "password": self.password.text() if email else "",
            "sender": self.sender_edit.text().strip() if email else "",
        }
        rules = tuple(
            self.rules.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.rules.count())
            if self.rules.item(i).checkState() == Qt.CheckState.Checked
        )
        return PushDestination(
            kind,
            rules=rules,
            severities=tuple(name for name, check in self.severity_checks.items() if check.isChecked()),
            quiet_hours=self.quiet_hours.text().strip(),
            smtp_port=self.smtp_port.value() if email else 0,
            security=self.security.currentData() if email else "starttls",
            to=tuple(a.strip() for a in self.to.text().split(",") if a.strip()) if email else (),
            **text,
        )

    def _edited(self) -> None:
        if self._loading or self._row < 0:
            return
        destination = self._read()
        self._items[self._row] = destination
        self.list.item(self._row).setText(destination_name(destination))
        self._show_kind(destination.kind)
        self.changed.emit()

    # ---- the test notification ----
    def send_test(self) -> None:
        row = self._row
        if row < 0:
            return
        destination = self._items[row]
        found = push_problems(destination, destination_name(destination))
        if found:
            self.test_result.setText(translate("PushPage", "Not sent: {problem}.").format(problem=found[0]))
            return
        # A test goes out whatever the destination's rules, severities and quiet hours.
        sendable = replace(destination, rules=(), severities=SEVERITY_NAMES, quiet_hours="")
        self.test_button.setEnabled(False)
        self.test_result.setText(translate("PushPage", "Sending…"))
        threading.Thread(target=self._send_test, args=(sendable,), name="trayvml-push-test", daemon=True).start()

    def _send_test(self, destination: PushDestination) -> None:
        """On its own thread: one notice, one attempt, then the result as a sentence."""
        notifier = PushNotifier([destination], send=self.transport, timeout_s=TEST_TIMEOUT_S, attempts=1)
        notifier.notify(
            Notice(
                (-1, TEST_RULE),
                translate("PushPage", "trayvml test notification"),
                translate("PushPage", "If you read this, trayvml's alerts reach you here."),
                LOW,
                Severity.INFO,
            )
        )
        notifier.close()  # waits for the one attempt, at most CLOSE_WAIT_S
        status = notifier.statuses[0]
        if status.sent:
            text = translate("PushPage", "A test notification was sent to {name}.").format(name=status.name)
        elif status.failing:
            text = translate("PushPage", "The test notification could not be sent to {name}: {reason}.").format(
                name=status.name, reason=status.last_failure.rstrip(".")
            )
        else:
            text = translate("PushPage", "{name} did not answer in time.").format(name=status.name)
        self._tested.emit(text)

    def _show_tested(self, text: str) -> None:
        self.test_result.setText(text)
        self.test_button.setEnabled(True)
