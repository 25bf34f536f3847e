"""Text from the system is untrusted: hostile GPU and process names through every sink."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import run_ticks, shown_by_dbusmenu_host, simulated_source
from tests.ui_helpers import open_menu
from trayvml.cli import main
from trayvml.core.safe_text import (
    NAME_LIMIT,
    clean,
    csv_text,
    decode,
    json_text,
    menu_label,
    notification_text,
    rich_text,
    terminal_text,
)
from trayvml.nvml.sim.library import SimulatedNvml

LONG = "x" * 10_000
HOSTILE = {
    "invalid UTF-8": "evil\udcff\udcfe",  # as psutil hands over bytes it cannot decode
    "escape sequences": "\x1b]0;owned\x07\x1b[31mred\x1b[0m\x9b2J",
    "line breaks": "a\nb\r\n[9] forged | row",
    "bidi override": "abc\u202egpj.exe",
    "markup": '<img src="/etc/passwd"><b>A&B_C</b>',
    "formula": '=HYPERLINK("http://evil","x")',
    "10,000 characters": LONG,
}
# What the simulated driver answers as GPU names (raw bytes: NVML's buffer holds 96).
GPU_NAMES = {
    0: b"NVIDIA \xff\xfe H100",
    1: b'=HYPERLINK("http://evil","x")\r\nforged, row',
    2: b'<img src="/etc/passwd"><b>A&B_C</b>',
    3: b"\x1b]0;owned\x07\x1b[31mRTX",
}
PROCESS_NAMES = ["evil\udcff\udcfe", "\x1b]0;owned\x07\x1b[2J", "a\nb | forged row", LONG]
SPEC = "--simulate=training:gpus=h100*4,at=900"
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def safe(text: str) -> bool:
    """No control character, bidi override or lone surrogate, and encodable as UTF-8."""
    text.encode("utf-8")
    return _UNSAFE.search(text) is None


# ---- one function per sink ----


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_every_sink_is_safe_for_hostile_text(text: str) -> None:
    for shown in (terminal_text(text), csv_text(text), json_text(text), rich_text(text), menu_label(text, False)):
        assert safe(shown)
    assert len(terminal_text(text)) <= NAME_LIMIT
    assert "<" not in rich_text(text) and "<" not in notification_text(text, markup=True)
    assert not csv_text(text).lstrip().startswith(("=", "+", "-", "@")) and "," not in csv_text(text)
    assert json.loads(json.dumps(json_text(text), ensure_ascii=False).encode()) == json_text(text)


def test_a_csv_cell_that_begins_with_a_double_quote_stays_one_cell() -> None:
    # A process or Slurm job named so: a CSV reader took the cell for a quoted one and read on
    # across the cells after it (8 cells of a history row's 11).
    row = ", ".join(["7", csv_text('"ev, il=1+1'), "root"])
    assert next(csv.reader([row], skipinitialspace=True)) == ["7", "'ev  il=1+1", "root"]


def test_long_names_are_cut_for_people_and_kept_for_files() -> None:
    assert terminal_text(LONG) == "x" * (NAME_LIMIT - 1) + "…"
    assert csv_text(LONG) == json_text(LONG) == LONG


def test_cleaning_replaces_only_what_is_unsafe() -> None:
    assert decode(b"caf\xc3\xa9 \xff") == "café \ufffd"
    assert clean("A100 \x1b[31m\n") == "A100 \ufffd[31m\ufffd"
    assert clean("RTX 4090 · 24 GB – ok") == "RTX 4090 · 24 GB – ok"


def test_csv_cells_that_a_spreadsheet_would_run_get_an_apostrophe() -> None:
    assert csv_text("=1+1") == "'=1+1"
    assert csv_text(" @SUM(A1)") == "' @SUM(A1)"
    assert csv_text("NVIDIA A100-SXM4-80GB") == "NVIDIA A100-SXM4-80GB"


def test_notification_text_keeps_its_own_line_breaks() -> None:
    body = "memory 91 % full\nProcesses: <b>x</b> & \x1b[2Jy"
    assert notification_text(body, markup=True) == "memory 91 % full\nProcesses: &lt;b&gt;x&lt;/b&gt; &amp; \ufffd[2Jy"
    assert notification_text(body, markup=False) == "memory 91 % full\nProcesses: <b>x</b> & \ufffd[2Jy"


def qt_menu_shows(text: str) -> str:
    """What Qt's own menu shows for a QAction text: ``&&`` is one ampersand, ``&x`` is x."""
    return re.sub("&(&?)", r"\1", text)


def shown_as_html(html: str) -> str:
    """What Qt shows for rich text."""
    from PySide6.QtGui import QTextDocument

    document = QTextDocument()
    document.setHtml(html)
    return document.toPlainText()


def qt_dbusmenu_export(text: str) -> str:
    """Qt's QDBusMenuItem::convertMnemonic: the first ``&`` (not the last character) becomes ``_``."""
    at = text.find("&")
    return text if at < 0 or at == len(text) - 1 else text[:at] + "_" + text[at + 1 :]


@pytest.mark.parametrize(
    "text", ["Copy CUDA_VISIBLE_DEVICES=0", "A&B_C", "a_&b && c__d &", "&", "_", HOSTILE["markup"]]
)
def test_menu_labels_show_the_text_as_it_is_in_qt_and_over_dbusmenu(text: str) -> None:
    assert qt_menu_shows(menu_label(text, dbusmenu=False)) == text
    assert shown_by_dbusmenu_host(qt_dbusmenu_export(menu_label(text, dbusmenu=True))) == text


# ---- where the text enters ----


@pytest.fixture
def hostile_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every simulated library made from now on answers the hostile GPU and process names."""
    made = SimulatedNvml.__init__

    def init(self: SimulatedNvml, *args: object, **kwargs: object) -> None:
        made(self, *args, **kwargs)  # type: ignore[arg-type]
        self.gpu_names.update(GPU_NAMES)
        for gpu, name in enumerate(PROCESS_NAMES):
            for process in self.scenario.processes(gpu, self.sim_time_s()):
                self.process_names[process.pid] = name

    monkeypatch.setattr(SimulatedNvml, "__init__", init)


def test_a_gpu_name_that_is_not_utf8_is_read_with_replacement_characters(hostile_names: None) -> None:
    source, clock, _ = simulated_source(SPEC.removeprefix("--simulate="))
    sample = run_ticks(source, clock, 2)
    assert [d.name for d in sample.devices] == [
        "NVIDIA \ufffd\ufffd H100",
        '=HYPERLINK("http://evil","x")\ufffd\ufffdforged, row',
        '<img src="/etc/passwd"><b>A&B_C</b>',
        "\ufffd]0;owned\ufffd\ufffd[31mRTX",
    ]
    assert all(g.processes for g in sample.gpus)  # the GPUs are read, not given up


@pytest.fixture
def hostile_process() -> Iterator[subprocess.Popen]:
    """A real process whose name is not UTF-8 and holds escape sequences, as any user can start."""
    if not sys.platform.startswith("linux"):
        pytest.skip("process names are set through a Linux executable's file name")
    folder = Path(os.environ.get("TMPDIR", "/tmp"), f"trayvml-hostile-{os.getpid()}").as_posix().encode()
    os.makedirs(folder, exist_ok=True)
    # Longer than the 15 bytes of /proc/PID/comm, so psutil takes the name from the command line.
    name = b"evil\xff\xfe\x1b]0;owned\x07-and-long"
    executable = os.path.join(folder, name)
    shutil.copy(os.fsencode(shutil.which("sleep") or "/bin/sleep"), executable)
    process = subprocess.Popen([executable, "60"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(folder)


def test_a_host_process_name_is_cleaned_where_it_enters(hostile_process: subprocess.Popen) -> None:
    from trayvml.host.processes import resolve_host_process

    deadline_s = time.monotonic() + 10
    while (details := resolve_host_process(hostile_process.pid)) and details.name == "sleep":
        assert time.monotonic() < deadline_s, "the process did not exec its hostile name"
        time.sleep(0.01)
    assert details is not None
    assert details.name == "evil\ufffd\ufffd\ufffd]0;owned\ufffd-and-long"
    assert details.command.endswith("/evil\ufffd\ufffd\ufffd]0;owned\ufffd-and-long' 60")
    assert safe(details.name) and safe(details.command) and safe(details.user)


# ---- the sinks, end to end ----


def test_snapshot_table_prints_no_control_characters_and_one_line_per_gpu(
    hostile_names: None, capsys: pytest.CaptureFixture
) -> None:
    assert main(["snapshot", SPEC]) == 0
    out = capsys.readouterr().out
    assert safe(out.replace("\n", " "))  # what a UTF-8 terminal prints, without escape sequences
    gpu_lines = [line for line in out.splitlines() if line.startswith("[")]
    assert [line[:4] for line in gpu_lines] == ["[0] ", "[1] ", "[2] ", "[3] "]
    assert "NVIDIA \ufffd\ufffd H100" in gpu_lines[0] and "evil\ufffd\ufffd" in gpu_lines[0]
    assert "x" * (NAME_LIMIT - 1) + "…" in gpu_lines[3] and LONG not in out


def test_full_snapshot_is_printable(hostile_names: None, capsys: pytest.CaptureFixture) -> None:
    assert main(["snapshot", "--full", SPEC]) == 0
    assert safe(capsys.readouterr().out.replace("\n", " "))


def test_snapshot_json_keeps_names_whole_and_encodable(hostile_names: None, capsys: pytest.CaptureFixture) -> None:
    assert main(["snapshot", "--json", SPEC]) == 0
    out = capsys.readouterr().out
    out.encode("utf-8")  # strict, as stdout under a UTF-8 locale
    gpus = json.loads(out)["gpus"]
    assert gpus[0]["info"]["name"] == "NVIDIA \ufffd\ufffd H100"
    assert gpus[2]["info"]["name"] == GPU_NAMES[2].decode()
    names = [p["name"] for g in gpus for p in g["processes"]]
    assert "evil\ufffd\ufffd" in names and "\ufffd]0;owned\ufffd\ufffd[2J" in names and LONG in names


def test_pick_reads_gpus_with_hostile_names(hostile_names: None, capsys: pytest.CaptureFixture) -> None:
    assert main(["pick", "--count", "4", "--max-util", "100", SPEC]) == 0  # busy or not: the names are the point
    assert sorted(capsys.readouterr().out.strip().split(",")) == ["0", "1", "2", "3"]


def test_csv_log_keeps_one_row_per_gpu_and_writes_no_formula(hostile_names: None, tmp_path: Path) -> None:
    path = tmp_path / "gpu.csv"
    assert main(["log", "--csv", str(path), "--count", "1", "--query", "index,name,uuid,memory.used", SPEC]) == 0
    _header, *lines = path.read_text(encoding="utf-8").splitlines()
    rows = list(csv.reader(lines, skipinitialspace=True))
    assert [row[0] for row in rows] == ["0", "1", "2", "3"] and {len(row) for row in rows} == {4}
    assert rows[1][1] == "'=HYPERLINK('http://evil' 'x')\ufffd\ufffdforged  row"  # its quotes no CSV quotes
    assert rows[0][1] == "NVIDIA \ufffd\ufffd H100"


# ---- the desktop sinks ----


def test_summary_window_shows_markup_in_names_as_text(hostile_names: None, qapp) -> None:
    from trayvml.ui.summary import SummaryWindow

    source, clock, _ = simulated_source(SPEC.removeprefix("--simulate="))
    window = SummaryWindow()
    window.update_sample(run_ticks(source, clock, 2))
    shown = shown_as_html(window.rows.text())
    assert '2 <img src="/etc/passwd"><b>A&B_C</b>' in shown  # the tag is shown, not rendered
    window.close()


def test_tray_menu_shows_names_and_commands_as_they_are(hostile_names: None, qapp) -> None:
    from trayvml.ui.tray import Tray

    source, clock, _ = simulated_source(SPEC.removeprefix("--simulate="))
    sample = run_ticks(source, clock, 2)
    for over_dbus, shows in ((False, qt_menu_shows), (True, lambda t: shown_by_dbusmenu_host(qt_dbusmenu_export(t)))):
        tray = Tray()
        tray.over_dbus = over_dbus
        tray.update(sample)
        open_menu(tray)
        gpu_entries = [shows(a.text()) for a in tray.gpu_actions]
        assert gpu_entries[2].startswith('2 <img src="/etc/passwd"><b>A&B_C</b> ')
        assert gpu_entries[3].startswith("3 \ufffd]0;owned\ufffd\ufffd[31mRTX ")
        assert re.fullmatch(r"Copy CUDA_VISIBLE_DEVICES(?: for GPU \d)?", shows(tray.copy_action.text()))


def test_tray_balloon_escapes_markup_only_where_a_notification_server_reads_it() -> None:
    from trayvml.alerts.dispatch import Outgoing
    from trayvml.alerts.grouping import notice_for
    from trayvml.alerts.rules import AlertEvent
    from trayvml.alerts.severity import Severity
    from trayvml.platform.notifiers import TrayMessageNotifier

    shown: list[tuple[str, str]] = []
    event = AlertEvent(0.0, 0, "H100", "memory_used", "firing", Severity.WARNING, "memory 91 % full")
    details = "Processes: <b>evil</b>\udcff & co (alice, 42)"
    notice = notice_for(Outgoing(event, details))
    TrayMessageNotifier(lambda title, body, severity: shown.append((title, body)), markup=True).notify(notice)
    TrayMessageNotifier(lambda title, body, severity: shown.append((title, body)), markup=False).notify(notice)
    assert "Processes: &lt;b&gt;evil&lt;/b&gt;\ufffd &amp; co (alice, 42)\n" in shown[0][1]
    assert "Processes: <b>evil</b>\ufffd & co (alice, 42)\n" in shown[1][1]  # Qt's own balloon: plain text


def test_tray_tooltip_stays_plain_text(hostile_names: None, qapp) -> None:
    from PySide6.QtGui import Qt

    from trayvml.core.lines import tooltip

    source, clock, _ = simulated_source(SPEC.removeprefix("--simulate="))
    text = tooltip(run_ticks(source, clock, 2))
    # Qt's own tooltip (XEmbed) reads text as rich text only when its first line holds a tag.
    assert not Qt.mightBeRichText(text)
    assert safe(text.replace("\n", " ")) and '2 <img src="/etc/passwd"><b>A&B_C</b> ' in text


def test_graph_window_shows_names_as_they_are(hostile_names: None, qtbot) -> None:
    from tests.ui_helpers import filled_history, shown_window

    history, sample = filled_history(SPEC.removeprefix("--simulate="), 10, host=False)
    window = shown_window(qtbot, history, sample)
    assert qt_menu_shows(window.gpu_toggles[2].text()) == '2 <img src="/etc/passwd"><b>A&B_C</b>'
    from PySide6.QtCore import QPointF

    page = window.gpu_page
    panel = page.panels[0]
    xs, _ = panel.lines[0].line(2)
    page.layout_widget.scene().sigMouseMoved.emit(panel.plot.getViewBox().mapViewToScene(QPointF(float(xs[-1]), 50.0)))
    readout = shown_as_html(page.readout.text())  # the box by the cursor, a row per GPU
    assert '2 <img src="/etc/passwd"><b>A&B_C</b>' in readout.splitlines()
    tooltip = shown_as_html(window.gpu_toggles[2].toolTip())
    assert tooltip.startswith('<img src="/etc/passwd"><b>A&B_C</b> · bus ')


def test_settings_dialog_tooltips_show_names_as_they_are(hostile_names: None, qapp) -> None:
    from trayvml.config import Settings
    from trayvml.ui.settings_dialog import SettingsDialog

    source, clock, _ = simulated_source(SPEC.removeprefix("--simulate="))
    devices = run_ticks(source, clock, 1).devices
    dialog = SettingsDialog(Settings(), devices)
    assert [shown_as_html(check.toolTip()) for check in dialog.gpu_checks] == [d.name for d in devices]
    dialog.close()
