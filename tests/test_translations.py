"""Translations: every user-visible string is marked, the zh_CN catalog is complete and compiled, the
language follows the locale and the setting, and the app, its windows and the CLI speak Chinese."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from trayvml.core import i18n

ROOT = Path(__file__).resolve().parent.parent
TRANSLATIONS = ROOT / "resources" / "translations"
QT_TOOLS = Path(sys.executable).parent
LANGUAGES = ("zh_CN",)

# ---- every user-visible string is marked for translation ----

# Qt calls whose text arguments a person reads: (positions of text arguments, keywords).
QT_TEXT_CALLS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "setText": ((0,), ()),
    "setToolTip": ((0,), ()),
    "setStatusTip": ((0,), ()),
    "setWhatsThis": ((0,), ()),
    "setPlaceholderText": ((0,), ()),
    "setWindowTitle": ((0,), ()),
    "setTitle": ((0,), ()),
    "setHeaderLabels": ((0,), ()),
    "setHorizontalHeaderLabels": ((0,), ()),
    "setVerticalHeaderLabels": ((0,), ()),
    "addAction": ((0,), ()),
    "addMenu": ((0,), ()),
    "addTab": ((1,), ()),
    "insertTab": ((2,), ()),
    "setTabText": ((1,), ()),
    "addItem": ((0,), ()),
    "addItems": ((0,), ()),
    "addRow": ((0,), ()),
    "show_notice": ((0,), ()),
    "showMessage": ((0, 1), ()),
    "getSaveFileName": ((1,), ("caption",)),
    "getOpenFileName": ((1,), ("caption",)),
    "warning": ((1, 2), ()),
    "information": ((1, 2), ()),
    "critical": ((1, 2), ()),
    "question": ((1, 2), ()),
    "QAction": ((0,), ("text",)),
    "QLabel": ((0,), ("text",)),
    "QPushButton": ((0,), ("text",)),
    "QCheckBox": ((0,), ("text",)),
    "QRadioButton": ((0,), ("text",)),
    "QGroupBox": ((0,), ("title",)),
    "QToolBar": ((0,), ("title",)),
    "QMenu": ((0,), ("title",)),
    "QMessageBox": ((1, 2), ("text",)),
    "QTreeWidgetItem": ((1,), ()),
}
# Words outside trayvml/ui that a person reads: alert and notification texts, the CLI's help and messages.
PLAIN_TEXT_CALLS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "AlertEvent": ((6,), ("message", "detail")),
    "add_argument": ((), ("help",)),
    "add_parser": ((), ("help", "description")),
    "_Parser": ((), ("description",)),
    "ArgumentTypeError": ((0,), ()),
    "_fail": ((0,), ()),
    "print": ((0,), ()),
    "TrayvmlError": ((0,), ()),
    "NotEnoughGpusError": ((0,), ()),
    "SettingsError": ((0,), ()),
    "append": ((0,), ()),  # found.append(sentence): the settings' and rules' problems
    "Notice": ((1, 2), ()),  # a desktop notification's title and body
    "RemoteError": ((0,), ()),
    "StoreLockedError": ((0,), ()),
    "DesktopInstallError": ((0,), ()),
    "SimulationSpecError": ((0,), ()),  # --simulate's errors, which the CLI says
}
PLAIN_TEXT_MODULES: tuple[str, ...] = ("alerts/rules.py", "alerts/engine.py", "alerts/severity.py", "alerts/details.py")
PLAIN_TEXT_MODULES += ("alerts/grouping.py", "platform/notifiers.py", "platform/desktop_entry.py", "core/lines.py")
PLAIN_TEXT_MODULES += ("cli.py", "core/errors.py", "pick.py", "config.py", "monitor/energy.py")
PLAIN_TEXT_MODULES += ("commands/report.py", "commands/csvlog.py", "commands/serve.py", "commands/record.py")
PLAIN_TEXT_MODULES += ("commands/history.py", "commands/remote.py", "prometheus/exposition.py")
PLAIN_TEXT_MODULES += ("remote/fetch.py", "remote/dialects.py", "remote/source.py")
PLAIN_TEXT_MODULES += ("history/disk/write.py", "history/disk/recording.py", "history/timeline.py")
PLAIN_TEXT_MODULES += ("nvml/sim/options.py",)
# Modules whose warnings the CLI says on stderr as they are, with the other messages in the user's language.
WARNING_MODULES = ("nvml/reader.py",)
MARKERS = ("translate", "tr", "QT_TRANSLATE_NOOP", "QT_TR_NOOP")
# Texts that read the same in every language: the product's name, file filters and names.
SAME_IN_EVERY_LANGUAGE = {"trayvml", "<b>trayvml</b>", "CSV (*.csv)", "PNG (*.png)", "trayvml.csv", "trayvml.png"}


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _words(text: str) -> bool:
    """Whether a piece of text holds words: not only numbers, symbols, markup, placeholders, or names
    such as a settings key (``.alerts.``) or a variable (``CUDA_VISIBLE_DEVICES=``)."""
    if not re.search(r"\s", text) and re.search(r"[._=]", text):
        return False
    if all("://" in token for token in text.split()):  # example URLs, one a line
        return False
    return bool(re.search(r"[A-Za-z]{2,}", re.sub(r"<[^>]*>|\{[^}]*\}|%\w|\btrayvml\b|\bCUDA\b", "", text)))


def unmarked(node: ast.expr) -> bool:
    """Whether ``node`` makes text with words that went through no translation."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value not in SAME_IN_EVERY_LANGUAGE and _words(node.value)
    if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts
        return any(unmarked(part) for part in node.values if isinstance(part, ast.Constant))
    if isinstance(node, ast.IfExp):
        return unmarked(node.body) or unmarked(node.orelse)
    if isinstance(node, ast.BinOp):
        return unmarked(node.left) or unmarked(node.right)
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(unmarked(element) for element in node.elts)
    if isinstance(node, ast.Call):
        name = _name(node.func)
        if name in MARKERS:
            return False
        if name == "format" and isinstance(node.func, ast.Attribute):  # translate(...).format(...)
            return unmarked(node.func.value)
    return False  # a variable, or the result of a call: judged where it was made


def unmarked_texts(source: str, calls: dict[str, tuple[tuple[int, ...], tuple[str, ...]]]) -> list[str]:
    """``line: call`` for each text argument of ``calls`` in ``source`` that is not marked."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or _name(node.func) not in calls:
            continue
        positions, keywords = calls[_name(node.func)]
        arguments = [node.args[p] for p in positions if p < len(node.args)]
        arguments += [k.value for k in node.keywords if k.arg in keywords]
        found += [f"{node.lineno}: {_name(node.func)}" for argument in arguments if unmarked(argument)]
    return found


def test_the_scan_finds_unmarked_texts() -> None:
    source = """
label = QLabel("Memory used")
menu.addAction(f"Copy {text}", callback)
window.setWindowTitle("trayvml")
button = QPushButton(translate("Ctx", "Quit"))
status.setText(translate("Ctx", "driver {v}").format(v=version))
tabs.addTab(page, "GPUs" if many else translate("Ctx", "GPU"))
"""
    assert unmarked_texts(source, QT_TEXT_CALLS) == ["2: QLabel", "3: addAction", "7: addTab"]
    assert unmarked_texts('AlertEvent(1, 0, "", "x", "firing", 2, "too hot")', PLAIN_TEXT_CALLS) == ["1: AlertEvent"]


@pytest.mark.parametrize("path", sorted((ROOT / "trayvml" / "ui").glob("*.py")), ids=lambda p: p.name)
def test_every_text_the_ui_shows_is_marked_for_translation(path: Path) -> None:
    assert unmarked_texts(path.read_text(encoding="utf-8"), QT_TEXT_CALLS) == []


@pytest.mark.parametrize("module", PLAIN_TEXT_MODULES)
def test_alert_notification_and_cli_texts_are_marked_for_translation(module: str) -> None:
    source = (ROOT / "trayvml" / module).read_text(encoding="utf-8")
    assert unmarked_texts(source, PLAIN_TEXT_CALLS) == []


@pytest.mark.parametrize("module", WARNING_MODULES)
def test_warnings_the_cli_says_are_marked_for_translation(module: str) -> None:
    source = (ROOT / "trayvml" / module).read_text(encoding="utf-8")
    assert unmarked_texts(source, {"warning": ((0,), ())}) == []


# ---- the catalogs: complete, finished, compiled ----


def _messages(path: Path) -> dict[tuple[str, str], ET.Element]:
    return {
        (context.findtext("name") or "", message.findtext("source") or ""): message.find("translation")  # type: ignore[misc]
        for context in ET.parse(path).getroot().iter("context")
        for message in context.iter("message")
    }


def translations_script(command: str, folder: Path) -> None:
    """`scripts/translations COMMAND`, working on the catalogs in ``folder``."""
    environ = {**os.environ, "TRANSLATIONS_FOLDER": str(folder), "VENV_BIN": str(QT_TOOLS)}
    subprocess.run([ROOT / "scripts" / "translations", command], cwd=ROOT, env=environ, check=True, timeout=120)


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each committed catalog, updated from the sources as `scripts/translations update` does."""
    folder = tmp_path_factory.mktemp("translations")
    shutil.copytree(TRANSLATIONS, folder, dirs_exist_ok=True)
    translations_script("update", folder)
    return {language: folder / f"trayvml_{language}.ts" for language in LANGUAGES}


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_catalog_holds_every_marked_string_and_no_other(extracted: dict[str, Path], language: str) -> None:
    committed = set(_messages(TRANSLATIONS / f"trayvml_{language}.ts"))
    now = set(_messages(extracted[language]))
    assert sorted(now - committed) == [], "run scripts/translations update, then translate the new strings"
    assert sorted(committed - now) == [], "run scripts/translations update: the catalog holds strings no code uses"


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_string_is_translated_with_its_placeholders(extracted: dict[str, Path], language: str) -> None:
    unfinished, broken = [], []
    for (context, source), translation in _messages(extracted[language]).items():
        text = translation.text or ""
        if translation.get("type") in ("unfinished", "vanished", "obsolete") or not text.strip():
            unfinished.append((context, source))
        # {name} (and {name:g}) for str.format, %s / %(name)s for argparse: each must come through,
        # or formatting fails (or, with {seconds:g} dropped, a number goes missing unsaid).
        pattern = r"\{[^{}]*\}|%\(\w+\)[a-z]|%[a-z]"
        if sorted(re.findall(pattern, source)) != sorted(re.findall(pattern, text)):
            broken.append((context, source, text))
    assert unfinished == []
    assert broken == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_shipped_qm_is_compiled_from_the_catalog(tmp_path: Path, language: str) -> None:
    shutil.copy(TRANSLATIONS / f"trayvml_{language}.ts", tmp_path)
    translations_script("compile", tmp_path)
    shipped = TRANSLATIONS / f"trayvml_{language}.qm"
    assert shipped.read_bytes() == (tmp_path / f"trayvml_{language}.qm").read_bytes(), (
        "run scripts/translations compile"
    )


# ---- choosing the language ----


@pytest.mark.parametrize(
    ("environ", "language"),
    [
        ({}, "en"),
        ({"LANG": "C.UTF-8"}, "en"),
        ({"LANG": "zh_CN.UTF-8"}, "zh_CN"),
        ({"LANG": "en_US.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}, "zh_CN"),
        ({"LANG": "zh_CN.UTF-8", "LC_ALL": "en_GB.UTF-8"}, "en"),
        ({"LANG": "en_US.UTF-8", "LANGUAGE": "zh_CN:en"}, "zh_CN"),
        ({"LANGUAGE": "de:zh_CN"}, "zh_CN"),  # German is not translated: the next preference
        ({"LANGUAGE": "zh"}, "zh_CN"),
        ({"LANG": "zh_TW.UTF-8"}, "en"),  # Traditional Chinese is not Simplified
        ({"LANG": "fr_FR.UTF-8"}, "en"),
    ],
)
def test_the_language_follows_the_locale(environ: dict[str, str], language: str) -> None:
    assert i18n.system_language(environ) == language
    assert i18n.resolve("system", environ) == language


def test_the_setting_overrides_the_locale() -> None:
    assert i18n.resolve("en", {"LANG": "zh_CN.UTF-8"}) == "en"
    assert i18n.resolve("zh_CN", {"LANG": "en_US.UTF-8"}) == "zh_CN"


@pytest.fixture
def chinese() -> Iterator[None]:
    """The non-Qt layers in Chinese for one test."""
    i18n.install("zh_CN")
    yield
    i18n.install("en")


def test_the_core_layers_translate_from_the_catalog(chinese: None) -> None:
    from trayvml.core.errors import NvmlUnavailable, UnavailableReason

    problem = NvmlUnavailable(UnavailableReason.NO_GPUS)
    assert problem.headline == "未找到 NVIDIA GPU"
    assert problem.sentence == "NVIDIA 驱动正在运行，但未报告任何 GPU。"
    assert i18n.translate("metrics", "GPU utilization") == "GPU 利用率"
    assert i18n.translate("metrics", "a string no catalog holds") == "a string no catalog holds"


def test_unfinished_translations_are_not_used(tmp_path: Path) -> None:
    ts = tmp_path / "x.ts"
    ts.write_text(
        '<?xml version="1.0" encoding="utf-8"?><TS version="2.1" language="zh_CN"><context><name>c</name>'
        "<message><source>Quit</source><translation>退出</translation></message>"
        '<message><source>Hide</source><translation type="unfinished">隐藏</translation></message>'
        "</context></TS>",
        encoding="utf-8",
    )
    assert i18n.read_catalog(ts) == {("c", "Quit"): "退出"}


# ---- the app in Chinese ----


@pytest.fixture
def qt_chinese(qapp) -> Iterator[None]:
    """The app's translators installed for zh_CN, as run_app does; English again afterwards."""
    from PySide6.QtCore import QLocale

    from trayvml.ui.translation import install_translators

    before = QLocale()
    translators = install_translators(qapp, "zh_CN")
    yield
    for translator in translators:
        qapp.removeTranslator(translator)
    i18n.install("en")
    QLocale.setDefault(before)


def test_qt_and_the_core_layers_read_the_same_translations(qt_chinese: None) -> None:
    from PySide6.QtCore import QCoreApplication

    catalog = i18n.read_catalog(TRANSLATIONS / "trayvml_zh_CN.ts")
    assert len(catalog) > 300
    differ = [key for key, text in catalog.items() if QCoreApplication.translate(*key) != text]
    assert differ == []


def test_the_tray_menu_speaks_chinese(qt_chinese: None) -> None:
    from tests.helpers import run_ticks, simulated_source
    from trayvml.ui.tray import Tray

    source, clock, _ = simulated_source("training:gpus=h100*2", host=True)
    tray = Tray()
    tray.update(run_ticks(source, clock, 2))
    tray.menu.aboutToShow.emit()
    texts = [a.text() for a in tray.menu.actions() if a.text()]
    assert texts[0] == "显示图表" and texts[-1] == "退出"
    assert {"暂停告警", "登录时启动", "设置…"} <= set(texts)
    assert "模拟 GPU（training）" in texts
    headline, title = tray.icon.toolTip().splitlines()[:2]
    assert headline.endswith("：GPU 利用率，GPU 0（最高）") and title == "trayvml — 模拟 GPU（training）"
    assert "主机 CPU" in tray.icon.toolTip()


def test_the_window_and_settings_speak_chinese(qtbot, qt_chinese: None) -> None:
    from PySide6.QtWidgets import QDialogButtonBox

    from tests.ui_helpers import filled_history, shown_window
    from trayvml.config import Settings
    from trayvml.ui.settings_dialog import SettingsDialog

    history, sample = filled_history("training:gpus=h100*2", 120, 1.0)
    window = shown_window(qtbot, history, sample)
    tabs = [window.tabs.tabText(k) for k in range(window.tabs.count())]
    assert tabs == ["GPU", "各 GPU", "本机", "进程", "设备详情", "告警"]
    assert window.windowTitle() == "trayvml — 2 个 GPU — 模拟（training）"
    assert window.gpu_page is not None
    assert window.gpu_page.panels[0].spec.title == "利用率 — GPU 利用率 实线，显存忙碌时间占比 虚线"
    assert window.follow_button.text() == "跟随实时"
    dialog = SettingsDialog(Settings(), sample.devices)
    qtbot.addWidget(dialog)
    assert dialog.windowTitle() == "trayvml 设置"
    assert dialog.language.currentText() == "跟随系统"
    # Qt's own words come from Qt's catalog for the same language.
    assert dialog.buttons.button(QDialogButtonBox.StandardButton.Cancel).text() == "取消"
    from PySide6.QtCore import QLocale

    assert QLocale().language() == QLocale.Language.Chinese  # numbers as the language writes them


def test_notifications_speak_chinese(chinese: None) -> None:
    from tests.test_alerts import TEMPERATURE, only, run
    from trayvml.alerts.engine import AlertEngine
    from trayvml.alerts.grouping import notification_body
    from trayvml.platform.notifiers import ACTIONS

    firing, resolved = run(AlertEngine(only("temperature", hold_s=0)), TEMPERATURE, [93, 60])
    assert firing.title == "GPU 0 H100：GPU 温度达到严重级别：93 °C"
    assert notification_body(firing) == (
        "达到或高于 90 °C 为严重；降到 85 °C 或以下时恢复。\n"
        "请检查风扇和风道：GPU 接近温度上限时会自行降速，超过上限时会关闭。"
    )
    assert resolved.title == "GPU 0 H100：GPU 温度已恢复正常"
    assert notification_body(resolved) == "已恢复正常。"
    assert [i18n.translate("notify", label) for _, label in ACTIONS] == ["打开图表", "1 小时内不再提醒"]


def test_the_cli_speaks_chinese(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from trayvml import cli

    monkeypatch.setenv("LANGUAGE", "zh_CN")
    try:
        assert cli.main(["--help"]) == 0
        help_text = capsys.readouterr().out
        assert help_text.startswith("用法：trayvml")
        assert "NVIDIA GPU 的系统托盘监视器。" in help_text and "显示此帮助信息并退出" in help_text
        assert cli.main(["pick", "--count", "x"]) == cli.EXIT_USAGE
        assert capsys.readouterr().err == "trayvml pick：参数 --count：'x' 不是整数（参见 trayvml pick --help）\n"
    finally:
        monkeypatch.setenv("LANGUAGE", "en")
        cli.use_language()
    assert cli.main(["pick", "--count", "x"]) == cli.EXIT_USAGE
    assert "is not a whole number" in capsys.readouterr().err


def test_a_lost_gpu_and_simulate_errors_speak_chinese() -> None:
    environ = {**os.environ, "LANGUAGE": "zh_CN"}
    command = [sys.executable, "-m", "trayvml", "snapshot"]
    lost = subprocess.run(
        [*command, "--simulate=training:at=600,lost=1@0"], capture_output=True, text=True, env=environ
    )
    assert lost.returncode == 0, lost.stderr
    assert "GPU 1 has fallen off the bus" not in lost.stderr and "GPU 1 已从总线上掉线" in lost.stderr
    assert "(name unknown)" not in lost.stdout and "[1] （名称未知）" in lost.stdout
    bad = subprocess.run([*command, "--simulate=bogus"], capture_output=True, text=True, env=environ)
    assert bad.returncode == 2 and bad.stderr.startswith("trayvml: --simulate：未知场景 'bogus'")


def test_the_cli_follows_the_language_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trayvml import cli
    from trayvml.config import default_path

    path = default_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    monkeypatch.delenv("LANGUAGE")
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    try:
        path.write_text('language = "en"\n', encoding="utf-8")
        assert cli.use_language() == "en"
        path.write_text("language = [broken\n", encoding="utf-8")
        assert cli.use_language() == "zh_CN"  # a broken file: the system's, and the file stays for the app
        assert path.exists()
        other = tmp_path / "other.toml"
        other.write_text('language = "en"\n', encoding="utf-8")
        assert cli.use_language(["snapshot", "--config", str(other)]) == "en"
        assert cli.use_language([f"--config={other}", "snapshot"]) == "en"
        other.write_bytes('\ufefflanguage = "en"\n'.encode())  # a byte order mark first, as Notepad writes
        assert cli.use_language(["snapshot", "--config", str(other)]) == "en"
    finally:
        path.unlink()
        monkeypatch.setenv("LANGUAGE", "en")
        cli.use_language()
