"""The settings dialog: every setting, every rule's thresholds, per-GPU overrides, checked as you type."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

from PySide6.QtCore import QCoreApplication, QSignalBlocker, Qt, Signal
from PySide6.QtGui import QAccessible, QAccessibleEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from trayvml.alerts.engine import AlertSettings
from trayvml.alerts.rules import RULE_BY_KEY, RULES, AnySettings, Rule, ThresholdRule
from trayvml.config import GENERAL_BY_KEY, Settings, problems
from trayvml.core.formatting import exact_text
from trayvml.core.i18n import CHOICES as LANGUAGE_CHOICES
from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.safe_text import rich_text
from trayvml.core.sample import DeviceInfo
from trayvml.ui.push_page import PushPage

# The grid's columns: a rule's numbers with one of these names sit under its title.
translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)
# Why a rule is on or off by default, where a user would wonder (its checkbox's tooltip).
RULE_NOTES = {
    "memory_used": QT_TRANSLATE_NOOP(
        "SettingsDialog",
        "Off by default: deep-learning frameworks reserve nearly all of a GPU's memory while they run, "
        "so a high share used is normal and would alert on every busy GPU. Memory free tells when the "
        "next allocation is likely to fail.",
    ),
    "memory_free": QT_TRANSLATE_NOOP(
        "SettingsDialog",
        "On by default: warns when less than 2 GiB is free for half a minute, critical below 0.5 GiB, "
        "where the next allocation is likely to fail with out of memory.",
    ),
}
COLUMN_TITLES = {
    "warning_enter": QT_TRANSLATE_NOOP("SettingsDialog", "Warning at"),
    "warning_clear": QT_TRANSLATE_NOOP(
        "SettingsDialog", "clears"
    ),  # each row goes on "below" or "above", by its rule's direction
    "critical_enter": QT_TRANSLATE_NOOP("SettingsDialog", "Critical at"),
    "critical_clear": QT_TRANSLATE_NOOP("SettingsDialog", "clears"),
    "hold_s": QT_TRANSLATE_NOOP("SettingsDialog", "Hold (s)"),
    "cooldown_s": QT_TRANSLATE_NOOP("SettingsDialog", "Cooldown (s)"),
}
# The tray metric's choices as the dialog names them (in English, the settings file's own words).
TRAY_CHOICE_NAMES = {
    "utilization": QT_TRANSLATE_NOOP("SettingsDialog", "GPU utilization (%)"),
    "memory": QT_TRANSLATE_NOOP("SettingsDialog", "Memory used (%)"),
    "temperature": QT_TRANSLATE_NOOP("SettingsDialog", "GPU temperature (°C)"),
    "power": QT_TRANSLATE_NOOP("SettingsDialog", "Power draw (% of limit)"),
    "sm_activity": QT_TRANSLATE_NOOP("SettingsDialog", "SM activity (%)"),
}
# The history on disk's spans in plain words: what is kept, and for how long.
STORE_WORDS = {
    "history_fine_hours": QT_TRANSLATE_NOOP("SettingsDialog", "Keep every second for"),
    "history_coarse_days": QT_TRANSLATE_NOOP("SettingsDialog", "Keep per-minute min/mean/max for"),
    "history_size_mib": QT_TRANSLATE_NOOP("SettingsDialog", "Use at most"),
    "process_history_per_gpu": QT_TRANSLATE_NOOP("SettingsDialog", "Keep the biggest processes of each GPU"),
}
ALL_HOSTS = "*"  # the settings file's word for every remote host; the dialog says "all"
URL_CHARS = 56  # the remote hosts' box: wide enough for a Prometheus URL with a selector
CLEAR_WORDS = {
    "above": QT_TRANSLATE_NOOP("SettingsDialog", "above"),
    "below": QT_TRANSLATE_NOOP("SettingsDialog", "below"),
}
# The language setting's choices as the dialog names them ("system": whatever the desktop's locale asks).
LANGUAGE_NAMES = {
    "system": QT_TRANSLATE_NOOP("SettingsDialog", "System default"),
    "en": "English",  # each language in its own words, never translated
    "zh_CN": "简体中文",
}
# Numbers of other names make a sentence across the threshold columns: the words before and after.
SENTENCE_WORDS = {
    "busy_above_percent": (QT_TRANSLATE_NOOP("SettingsDialog", "busy above"), "%"),
    "busy_for_s": (QT_TRANSLATE_NOOP("SettingsDialog", "for"), QT_TRANSLATE_NOOP("SettingsDialog", "s,")),
    "idle_below_percent": (QT_TRANSLATE_NOOP("SettingsDialog", "then idle below"), "%"),
    "idle_for_s": (QT_TRANSLATE_NOOP("SettingsDialog", "for"), QT_TRANSLATE_NOOP("SettingsDialog", "s")),
    "sm_below_percent": (QT_TRANSLATE_NOOP("SettingsDialog", "while SM activity below"), "%"),
    "power_below_percent": (
        QT_TRANSLATE_NOOP("SettingsDialog", "(without GPM: power below"),
        QT_TRANSLATE_NOOP("SettingsDialog", "% of limit)"),
    ),
    "memory_above_gib": (QT_TRANSLATE_NOOP("SettingsDialog", "memory above"), "GiB"),
}
FIRST_COLUMN = 2  # after the rule's name and the override box
NUMBER_CHARS = 7  # a rule's number field fits this many digits
# A label's trailing unit, "(days)" or a translation's "（天）": the spin box's suffix says it instead.
TRAILING_UNIT = re.compile(r"\s*[(（][^()（）]*[)）]$")


def _title(name: str) -> str:
    """A number's name in a sentence about it: 'hold (s)', 'busy above (%)'."""
    if name in COLUMN_TITLES:
        return translate("SettingsDialog", COLUMN_TITLES[name]).lower()
    return name.replace("_percent", " (%)").replace("_s", " (s)").replace("_", " ")


def _clear_word(kind: Rule[Any]) -> str:
    """Where a level clears: below its threshold when high values alarm, above when low ones do."""
    return translate("SettingsDialog", CLEAR_WORDS[kind.clear_words()[1]]) if isinstance(kind, ThresholdRule) else ""


class _RuleGrid(QWidget):
    """One row per rule: enabled, then the numbers it reads (empty threshold: that level is off).

    Threshold rules fill the threshold, hold and cooldown columns; event rules only the columns
    they read; a rule with numbers of its own (job finished) says them in a sentence instead.
    """

    changed = Signal()

    def __init__(self, overridable: bool) -> None:
        super().__init__()
        grid = QGridLayout(self)
        self.overridable = overridable
        grid.addWidget(QLabel(translate("SettingsDialog", "<b>Rule</b>")), 0, 0)
        columns = {name: column for column, name in enumerate(COLUMN_TITLES, start=FIRST_COLUMN)}
        for name, column in columns.items():
            grid.addWidget(QLabel(f"<b>{translate('SettingsDialog', COLUMN_TITLES[name])}</b>"), 0, column)
        self.rows: dict[str, tuple[QCheckBox, QCheckBox | None, dict[str, QLineEdit]]] = {}
        # Room for the longest number a rule takes ("99999.5"): wider fields pushed the grid past the dialog.
        number_width_px = QLineEdit().fontMetrics().horizontalAdvance("0" * NUMBER_CHARS) + 16
        row = 0
        for kind in RULES:
            row += 1
            unit = f" ({kind.unit.shown})" if isinstance(kind, ThresholdRule) else ""
            enabled = QCheckBox(translate("alerts", kind.label) + unit)
            if kind.key in RULE_NOTES:
                enabled.setToolTip(translate("SettingsDialog", RULE_NOTES[kind.key]))
            enabled.toggled.connect(self.changed)
            grid.addWidget(enabled, row, 0)
            override = None
            if overridable:
                override = QCheckBox(translate("SettingsDialog", "override"))
                # Twelve boxes all read "override": the rule's name says which one.
                override.setAccessibleName(
                    translate("SettingsDialog", "Override {rule} for this GPU").format(
                        rule=translate("alerts", kind.label)
                    )
                )
                override.toggled.connect(self._override_toggled)
                grid.addWidget(override, row, 1)
            edits = {}
            # A sentence of more than two numbers goes on two lines: on one it set the grid's width.
            sentences = [QHBoxLayout(), QHBoxLayout()]
            in_sentence = [name for name in kind.numbers if name in SENTENCE_WORDS]
            for name in kind.numbers:
                edit = QLineEdit()
                edit.setObjectName(f"{kind.key}.{name}")
                # What a screen reader says of it: a field in a grid is otherwise only "edit"
                # ("GPU temperature: warning at, clears below" for a clear threshold).
                said = _title(name)
                if name.endswith("_clear"):
                    said = f"{_title(name.replace('_clear', '_enter'))}, {said} {_clear_word(kind)}".rstrip()
                edit.setAccessibleName(f"{translate('alerts', kind.label)}: {said}")
                edit.setMaximumWidth(number_width_px)
                if name.endswith(("_enter", "_clear")):  # left empty: no such level (power has no critical)
                    edit.setPlaceholderText(translate("SettingsDialog", "none"))
                edit.textChanged.connect(self.changed)
                edits[name] = edit
                if name in SENTENCE_WORDS:
                    before, after = SENTENCE_WORDS[name]
                    line = sentences[1 if len(in_sentence) > 2 and in_sentence.index(name) >= 2 else 0]
                    for widget in (
                        QLabel(translate("SettingsDialog", before)),
                        edit,
                        QLabel(translate("SettingsDialog", after)),
                    ):
                        line.addWidget(widget)
                    continue
                word = _clear_word(kind) if name.endswith("_clear") else ""
                if not word:
                    grid.addWidget(edit, row, columns[name])
                    continue
                cell = QHBoxLayout()
                label = QLabel(word)
                label.setObjectName(f"{kind.key}.{name}.label")
                cell.addWidget(label)
                cell.addWidget(edit)
                cell.addStretch(1)  # "below 78" together, not spread across the column
                grid.addLayout(cell, row, columns[name])
            # Beside hold and cooldown columns of its own (stalled job), across the threshold columns only.
            span = 4 if any(name in COLUMN_TITLES for name in kind.numbers) else len(COLUMN_TITLES)
            for k, sentence in enumerate(line for line in sentences if line.count()):
                sentence.addStretch(1)
                row += k  # the second line: a row of its own under the first
                grid.addLayout(sentence, row, FIRST_COLUMN, 1, span)
            self.rows[kind.key] = (enabled, override, edits)
        grid.setRowStretch(row + 1, 1)  # room to spare goes below the rules, not between them
        grid.setColumnStretch(FIRST_COLUMN + len(COLUMN_TITLES), 1)  # and right of them

    def _override_toggled(self) -> None:
        for enabled, override, edits in self.rows.values():
            on = override is None or override.isChecked()
            enabled.setEnabled(on)
            for edit in edits.values():
                edit.setEnabled(on)
        self.changed.emit()

    def show_rules(self, rules: dict[str, AnySettings], overridden: set[str] | None = None) -> None:
        for key, (enabled, override, edits) in self.rows.items():
            rule = rules[key]
            enabled.setChecked(rule.enabled)
            if override is not None:
                override.setChecked(key in (overridden or set()))
            for name, edit in edits.items():
                value = getattr(rule, name)
                edit.setText("" if math.isnan(value) else exact_text(value))  # as typed: :g cut 83.1234567 at OK
        self._override_toggled()

    def read(self, base: dict[str, AnySettings]) -> tuple[dict[str, AnySettings], list[str]]:
        """The rules as typed, and the sentences for what cannot be read."""
        rules, errors = {}, []
        for key, (enabled, override, edits) in self.rows.items():
            if override is not None and not override.isChecked():
                continue
            changes: dict[str, float | bool] = {"enabled": enabled.isChecked()}
            for name, edit in edits.items():
                text = edit.text().strip()
                try:
                    changes[name] = float(text) if text else math.nan
                except ValueError:
                    errors.append(
                        translate("SettingsDialog", "{rule}: {number} must be a number, not {text}.").format(
                            rule=translate("alerts", RULE_BY_KEY[key].label), number=_title(name), text=repr(text)
                        )
                    )
            rules[key] = replace(base[key], **changes)  # type: ignore[arg-type]
        return rules, errors


def _form_page() -> tuple[QWidget, QFormLayout]:
    """A settings page: labels right of nothing, fields at their size hint (capped), room below."""
    page = QWidget()
    column = QVBoxLayout(page)
    form = QFormLayout()
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
    form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
    column.addLayout(form)
    column.addStretch(1)  # the room below: a form alone spreads a short page's rows down the page
    return page, form


MAX_WIDTH_PX = 860  # the dialog's opening width at most: room beside it on a 1280 px screen
DIALOG_CHROME_PX = 130  # around a page: the tabs, the problem line and the buttons


def _scrolled(grid: QWidget) -> QScrollArea:
    """``grid`` in a scroll area: the rule grids are eight columns wide (1171 px in English) and
    set the whole dialog's width when laid out bare; scrolled, the dialog opens at a width that
    fits a 1280 px screen and the other pages' fields stay at their own size."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(grid)
    return area


class SettingsDialog(QDialog):
    settings_applied = Signal(object)  # trayvml.config.Settings

    def __init__(self, settings: Settings, devices: tuple[DeviceInfo, ...] = ()) -> None:
        super().__init__()
        self.setObjectName("trayvml_settings")
        self.setWindowTitle(translate("SettingsDialog", "trayvml settings"))
        self.devices = devices
        self._overrides = {gpu: dict(rules) for gpu, rules in settings.alerts.overrides.items()}
        self._gpu_shown = -1
        self._hosts_shown = ("", "")  # the remote hosts' fields as show_settings wrote them
        layout = QVBoxLayout(self)
        tabs = QTabWidget()
        layout.addWidget(tabs)

        # Grouped pages, each a short form of fields at their own width: one grid of every setting
        # was 1171×571 px of stretched fields.
        general, form = _form_page()
        self.interval = QDoubleSpinBox()
        spec = GENERAL_BY_KEY["sampling_interval_s"]
        self.interval.setRange(spec.minimum or 0, spec.maximum or 60)
        self.interval.setSingleStep(0.5)
        self.interval.setSuffix(" s")
        form.addRow(translate("settings", spec.label).replace(" (s)", ""), self.interval)
        self.language = QComboBox()
        self.language.setObjectName("language")
        for choice in LANGUAGE_CHOICES:
            self.language.addItem(translate("SettingsDialog", LANGUAGE_NAMES.get(choice, choice)), choice)
        form.addRow(translate("settings", GENERAL_BY_KEY["language"].label), self.language)
        self.notifications = QCheckBox(translate("SettingsDialog", "Show desktop notifications for alerts"))
        form.addRow("", self.notifications)
        self.start_at_login = QCheckBox(translate("SettingsDialog", "Start trayvml when I log in"))
        form.addRow("", self.start_at_login)
        self.idle_gpu_poll = QSpinBox()
        spec = GENERAL_BY_KEY["idle_gpu_poll_s"]
        self.idle_gpu_poll.setRange(int(spec.minimum or 0), int(spec.maximum or 600))
        self.idle_gpu_poll.setSuffix(" s")
        self.idle_gpu_poll.setToolTip(translate("settings", spec.description))
        form.addRow(translate("settings", spec.label).replace(" (s)", ""), self.idle_gpu_poll)
        shown = QWidget()
        shown_layout = QHBoxLayout(shown)
        shown_layout.setContentsMargins(0, 0, 0, 0)
        self.gpu_checks = []
        for info in devices:
            check = QCheckBox(f"{info.index}")
            check.setAccessibleName(f"GPU {info.index} {info.shown_name}")  # a bare number read aloud says nothing
            # Qt reads a tooltip that starts with a tag as rich text: escaped in a paragraph, the
            # GPU's name (from the driver) is shown as it is.
            check.setToolTip(f"<p>{rich_text(info.shown_name)}</p>")
            shown_layout.addWidget(check)
            self.gpu_checks.append(check)
        shown_layout.addStretch(1)
        form.addRow(translate("SettingsDialog", "GPUs shown"), shown)
        tabs.addTab(general, translate("SettingsDialog", "General"))

        tray, form = _form_page()
        self.tray_metric = QComboBox()
        for choice in GENERAL_BY_KEY["tray_metric"].choices:
            self.tray_metric.addItem(translate("SettingsDialog", TRAY_CHOICE_NAMES.get(choice, choice)), choice)
        form.addRow(translate("settings", GENERAL_BY_KEY["tray_metric"].label), self.tray_metric)
        self.icon_remote_hosts = QLineEdit()
        self.icon_remote_hosts.setObjectName("icon_remote_hosts")
        self.icon_remote_hosts.setPlaceholderText(translate("SettingsDialog", "none"))
        self.icon_remote_hosts.setToolTip(
            translate(
                "SettingsDialog",
                "The remote hosts, by name and separated by commas, whose GPUs the tray icon shows beside "
                "this machine's; all for every host, empty for none.",
            )
        )
        form.addRow(translate("SettingsDialog", "Hosts in the tray icon"), self.icon_remote_hosts)
        tabs.addTab(tray, translate("SettingsDialog", "Tray"))

        history, form = _form_page()
        self.history_hours = QSpinBox()
        spec = GENERAL_BY_KEY["history_hours"]
        self.history_hours.setRange(int(spec.minimum or 1), int(spec.maximum or 24))
        self.history_hours.setSuffix(" h")
        form.addRow(translate("SettingsDialog", "Keep in memory for"), self.history_hours)
        self._add_store_rows(form)
        tabs.addTab(history, translate("SettingsDialog", "History"))

        remote, form = _form_page()
        self.remote_hosts = QPlainTextEdit()
        self.remote_hosts.setObjectName("remote_hosts")
        self.remote_hosts.setPlaceholderText('http://gpu-box:8729\nprometheus+http://prometheus:9090#job="gpu"')
        self.remote_hosts.setToolTip(
            translate(
                "SettingsDialog",
                "One URL a line: an exporter (trayvml serve, dcgm-exporter, nvidia_gpu_exporter, nvitop-exporter) "
                "or prometheus+http(s)://HOST:9090 with an optional #label selector. user:password@ goes here only.",
            )
        )
        self.remote_hosts.setFixedHeight(self.remote_hosts.fontMetrics().lineSpacing() * 6 + 12)
        self.remote_hosts.setMinimumWidth(self.remote_hosts.fontMetrics().averageCharWidth() * URL_CHARS)
        form.addRow(translate("SettingsDialog", "Remote hosts"), self.remote_hosts)
        self.remote_interval = QDoubleSpinBox()
        self.remote_interval.setObjectName("remote_interval")
        spec = GENERAL_BY_KEY["remote_interval_s"]
        self.remote_interval.setRange(spec.minimum or 1, spec.maximum or 60)
        self.remote_interval.setDecimals(2)
        self.remote_interval.setSuffix(" s")
        self.remote_interval.setToolTip(translate("settings", spec.description))
        form.addRow(translate("settings", spec.label).replace(" (s)", ""), self.remote_interval)
        tabs.addTab(remote, translate("SettingsDialog", "Remote hosts"))

        serving, form = _form_page()
        # Issue 10: serving to Prometheus.
        self.serve_metrics = QCheckBox(translate("settings", GENERAL_BY_KEY["serve_metrics"].label))
        self.serve_metrics.setToolTip(translate("settings", GENERAL_BY_KEY["serve_metrics"].description))
        form.addRow("", self.serve_metrics)
        tabs.addTab(serving, translate("SettingsDialog", "Serving"))

        self.push_page = PushPage()
        tabs.addTab(self.push_page, translate("SettingsDialog", "Push"))

        self.rule_grid = _RuleGrid(overridable=False)
        tabs.addTab(_scrolled(self.rule_grid), translate("SettingsDialog", "Alerts"))

        per_gpu = QWidget()
        per_gpu_layout = QVBoxLayout(per_gpu)
        self.gpu_choice = QComboBox()
        for info in devices:
            self.gpu_choice.addItem(
                translate("SettingsDialog", "GPU {index}: {name}").format(index=info.index, name=info.shown_name),
                info.index,
            )
        per_gpu_layout.addWidget(self.gpu_choice)
        self.override_grid = _RuleGrid(overridable=True)
        per_gpu_layout.addWidget(_scrolled(self.override_grid), 1)
        tabs.addTab(per_gpu, translate("SettingsDialog", "Per GPU"))

        self.problem = QLabel()
        self.problem.setObjectName("settings_problem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #e5484d;")
        layout.addWidget(self.problem)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok
            | QDialogButtonBox.StandardButton.Apply
            | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        self.buttons.button(QDialogButtonBox.StandardButton.Apply).clicked.connect(self.apply)
        layout.addWidget(self.buttons)
        # Wide enough for most of the rule grid without scrolling, never wider than MAX_WIDTH_PX or
        # the screen: the grid scrolls sideways for the rest (see _scrolled).
        # As tall as the rule grid asks, where the screen has room: at its hint's height (484 px)
        # the Alerts page scrolled on an 800 px screen with room to spare.
        screen = self.screen()
        room = screen.availableGeometry().width() - 40 if screen is not None else MAX_WIDTH_PX
        room_high = screen.availableGeometry().height() - 80 if screen is not None else self.sizeHint().height()
        wanted = max(self.sizeHint().width(), self.rule_grid.sizeHint().width() + 60)
        high = max(self.sizeHint().height(), min(self.rule_grid.sizeHint().height() + DIALOG_CHROME_PX, room_high))
        self.resize(min(wanted, MAX_WIDTH_PX, room), high)

        for key, widget in (
            ("sampling_interval_s", self.interval),
            ("history_hours", self.history_hours),
            ("notifications", self.notifications),
            ("language", self.language),
        ):
            widget.setToolTip(
                translate("settings", GENERAL_BY_KEY[key].description)
            )  # the schema's words, in one place
        self.show_settings(settings)
        for widget in (self.interval, self.history_hours):
            widget.valueChanged.connect(self._check)
        self.tray_metric.currentIndexChanged.connect(self._check)
        self.language.currentIndexChanged.connect(self._check)
        self.rule_grid.changed.connect(self._check)
        self.override_grid.changed.connect(self._check)
        self.push_page.changed.connect(self._check)
        self.remote_hosts.textChanged.connect(self._check)  # a URL that cannot be read, said as it is typed
        self.gpu_choice.currentIndexChanged.connect(self._switch_gpu)
        self._check()

    def _add_store_rows(self, form: QFormLayout) -> None:
        """The history on disk (issue 9): on or off, each span, the size cap; the spans greyed while off."""
        self.history_on_disk = QCheckBox(translate("settings", GENERAL_BY_KEY["history_on_disk"].label))
        self.history_on_disk.setToolTip(
            translate("settings", GENERAL_BY_KEY["history_on_disk"].description)
            + " "
            + translate("SettingsDialog", "Turned on or off, it takes effect at the next start.")
        )
        form.addRow("", self.history_on_disk)
        self.store_spins: dict[str, QSpinBox] = {}
        for key, suffix in (
            ("history_fine_hours", " h"),
            ("history_coarse_days", translate("SettingsDialog", " days")),
            ("history_size_mib", " MiB"),
            ("process_history_per_gpu", ""),
        ):
            spec = GENERAL_BY_KEY[key]
            spin = QSpinBox()
            spin.setObjectName(key)
            spin.setRange(int(spec.minimum if spec.minimum is not None else 1), int(spec.maximum or 1))
            spin.setSuffix(suffix)
            spin.setToolTip(TRAILING_UNIT.sub("", translate("settings", spec.label)))  # the settings file's name
            if spec.description:
                spin.setToolTip(translate("settings", spec.description))
            form.addRow(translate("SettingsDialog", STORE_WORDS[key]), spin)
            self.store_spins[key] = spin
        self.history_on_disk.toggled.connect(self._store_toggled)

    def _store_toggled(self, on: bool) -> None:
        for spin in self.store_spins.values():
            spin.setEnabled(on)

    def show_settings(self, settings: Settings) -> None:
        self.base = settings
        self.interval.setValue(settings.sampling_interval_s)
        self.history_hours.setValue(settings.history_hours)
        self.tray_metric.setCurrentIndex(max(0, self.tray_metric.findData(settings.tray_metric)))
        self.language.setCurrentIndex(max(0, self.language.findData(settings.language)))
        self.notifications.setChecked(settings.notifications)
        self.start_at_login.setChecked(settings.start_at_login)
        self.idle_gpu_poll.setValue(settings.idle_gpu_poll_s)
        self.serve_metrics.setChecked(settings.serve_metrics)
        hosts = [translate("SettingsDialog", "all") if h == ALL_HOSTS else h for h in settings.icon_remote_hosts]
        self._hosts_shown = ("\n".join(settings.remote_hosts), ", ".join(hosts))
        self.remote_hosts.setPlainText(self._hosts_shown[0])
        self.remote_interval.setValue(settings.remote_interval_s)
        self.icon_remote_hosts.setText(self._hosts_shown[1])
        self.history_on_disk.setChecked(settings.history_on_disk)
        self._store_toggled(settings.history_on_disk)
        for key, spin in self.store_spins.items():
            spin.setValue(getattr(settings, key))
        for check, info in zip(self.gpu_checks, self.devices, strict=True):
            check.setChecked(info.index not in settings.hidden_gpus)
        self.push_page.show_destinations(settings.push)
        self.rule_grid.show_rules(dict(settings.alerts.rules))
        # The overrides in force: kept from the last showing, a per-GPU edit cancelled came back
        # and was saved at the next OK, whatever that was for.
        self._overrides = {gpu: dict(rules) for gpu, rules in settings.alerts.overrides.items()}
        self._gpu_shown = -1
        self._switch_gpu()

    def _switch_gpu(self) -> None:
        if self._gpu_shown >= 0 and self._store_overrides():
            # What cannot be read stays on screen until mended: switched away, the rule was kept
            # without it (its default in its place), and the error went with the GPU shown.
            with QSignalBlocker(self.gpu_choice):
                self.gpu_choice.setCurrentIndex(self.gpu_choice.findData(self._gpu_shown))
            self._check()
            return
        gpu = self.gpu_choice.currentData()
        if gpu is None:
            return
        self._gpu_shown = gpu
        defaults, _ = self.rule_grid.read(dict(self.base.alerts.rules))
        rules = {**defaults, **self._overrides.get(gpu, {})}
        self.override_grid.show_rules(rules, set(self._overrides.get(gpu, {})))

    def _store_overrides(self) -> list[str]:
        """The shown GPU's overrides kept; what cannot be read in them, each naming the GPU."""
        defaults, _ = self.rule_grid.read(dict(self.base.alerts.rules))
        rules, errors = self.override_grid.read(defaults)
        if rules:
            self._overrides[self._gpu_shown] = rules
        else:
            self._overrides.pop(self._gpu_shown, None)
        on_gpu = translate("SettingsDialog", "GPU {index}: {problem}")
        return [on_gpu.format(index=self._gpu_shown, problem=error) for error in errors]

    def settings(self) -> tuple[Settings, list[str]]:
        """The settings as the dialog shows them, and every reason they cannot be used."""
        rules, errors = self.rule_grid.read(dict(self.base.alerts.rules))
        if self._gpu_shown >= 0:
            errors += self._store_overrides()
        # GPUs not here now (an eGPU unplugged, one fallen off the bus) stay as hidden as they were.
        here = {info.index for info in self.devices}
        hidden = tuple(
            sorted(
                {i for i in self.base.hidden_gpus if i not in here}
                | {
                    info.index
                    for check, info in zip(self.gpu_checks, self.devices, strict=True)
                    if not check.isChecked()
                }
            )
        )
        hosts_edited = self._hosts_edited()
        settings = Settings(
            sampling_interval_s=self._seconds(self.interval, self.base.sampling_interval_s),
            history_hours=self.history_hours.value(),
            tray_metric=self.tray_metric.currentData(),
            language=self.language.currentData(),
            notifications=self.notifications.isChecked(),
            start_at_login=self.start_at_login.isChecked(),
            idle_gpu_poll_s=self.idle_gpu_poll.value(),
            hidden_gpus=hidden if self.devices else self.base.hidden_gpus,
            serve_metrics=self.serve_metrics.isChecked(),
            icon_remote_hosts=self._icon_hosts() if hosts_edited else self.base.icon_remote_hosts,
            history_on_disk=self.history_on_disk.isChecked(),
            history_fine_hours=self.store_spins["history_fine_hours"].value(),
            history_coarse_days=self.store_spins["history_coarse_days"].value(),
            history_size_mib=self.store_spins["history_size_mib"].value(),
            process_history_per_gpu=self.store_spins["process_history_per_gpu"].value(),
            remote_hosts=tuple(line.strip() for line in self.remote_hosts.toPlainText().splitlines() if line.strip())
            if hosts_edited
            else self.base.remote_hosts,
            remote_interval_s=self._seconds(self.remote_interval, self.base.remote_interval_s),
            push=self.push_page.destinations(),
            alerts=AlertSettings(rules=rules, overrides=dict(self._overrides)),
        )
        return settings, errors + problems(settings)

    @staticmethod
    def _seconds(box: QDoubleSpinBox, base_s: float) -> float:
        """What ``box`` says, or ``base_s`` where it shows that rounded (7.333 s typed into the file
        is shown 7.33): OK on an untouched box changed it, and a new interval restarts readers."""
        shown_s = round(box.value(), box.decimals())
        return base_s if shown_s == round(base_s, box.decimals()) else shown_s

    def _hosts_edited(self) -> bool:
        """Whether the host fields differ from how the settings were shown: as shown, a host named
        "all" read back as every host, a name with a comma (or a line break) as two."""
        return (self.remote_hosts.toPlainText(), self.icon_remote_hosts.text()) != self._hosts_shown

    def _icon_hosts(self) -> tuple[str, ...]:
        """The hosts typed, "all" (or its translation, or *) read as the settings file's *."""
        every = {ALL_HOSTS, "all", translate("SettingsDialog", "all")}
        names = (name.strip() for name in self.icon_remote_hosts.text().split(","))
        return tuple(ALL_HOSTS if name in every else name for name in names if name)

    def _check(self) -> bool:
        _, found = self.settings()
        said = found[0] if found else ""
        if said != self.problem.text():
            self.problem.setText(said)
            # Told to a screen reader as it comes: else OK was greyed out with no reason heard.
            self.problem.setAccessibleDescription(said)
            if said:
                QAccessible.updateAccessibility(QAccessibleEvent(self.problem, QAccessible.Event.Alert))
        for button in (QDialogButtonBox.StandardButton.Ok, QDialogButtonBox.StandardButton.Apply):
            self.buttons.button(button).setEnabled(not found)
        return not found

    def apply(self) -> bool:
        if not self._check():
            return False
        settings, _ = self.settings()
        self.base = settings
        self.settings_applied.emit(settings)
        return True

    def _accept(self) -> None:
        if self.apply():
            self.accept()
