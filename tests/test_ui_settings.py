"""The settings dialog round-trips every field through the file; invalid input is refused with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QDialogButtonBox, QLabel, QTabWidget

from tests.helpers import present, simulated_source
from tests.test_config import changed_settings, same
from trayvml.config import Settings, SettingsStore
from trayvml.platform.autostart import XdgAutostart
from trayvml.ui.settings_dialog import SettingsDialog


@pytest.fixture
def devices():
    source, _, _ = simulated_source("idle:gpus=h100*2+rtx4090+laptop")
    return source.sample().devices


def test_every_field_round_trips_through_the_dialog_and_the_file(qtbot, devices, tmp_path: Path) -> None:
    dialog = SettingsDialog(changed_settings(), devices)
    qtbot.addWidget(dialog)
    shown, problems = dialog.settings()
    assert problems == [] and same(shown, changed_settings())
    store = SettingsStore(tmp_path / "config.toml")
    dialog.settings_applied.connect(store.save)
    assert dialog.apply()
    loaded, message = store.load()
    assert message == "" and same(loaded, changed_settings())


def test_edits_in_the_dialog_are_what_gets_saved(qtbot, devices) -> None:
    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    assert "NVML refreshes utilization" in dialog.interval.toolTip()
    applied: list[Settings] = []
    dialog.settings_applied.connect(applied.append)
    dialog.interval.setValue(2.5)
    dialog.tray_metric.setCurrentIndex(dialog.tray_metric.findData("power"))  # its words: "Power draw (% of limit)"
    dialog.gpu_checks[3].setChecked(False)
    dialog.store_spins["history_fine_hours"].setValue(72)
    dialog.store_spins["history_size_mib"].setValue(1024)
    dialog.icon_remote_hosts.setText(" dgx-01 ,, gpu-box ")
    assert "costs this computer and the host" in dialog.remote_interval.toolTip()
    dialog.remote_interval.setValue(10)
    dialog.rule_grid.rows["temperature"][2]["critical_enter"].setText("88")
    dialog.gpu_choice.setCurrentIndex(1)
    _, override, edits = dialog.override_grid.rows["temperature"]
    assert override is not None
    override.setChecked(True)
    for name, text in (
        ("warning_enter", "75"),
        ("warning_clear", "70"),
        ("critical_enter", "80"),
        ("critical_clear", "76"),
    ):
        edits[name].setText(text)
    assert dialog.problem.text() == ""
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    (settings,) = applied
    assert settings.sampling_interval_s == 2.5 and settings.tray_metric == "power" and settings.hidden_gpus == (3,)
    assert (settings.history_fine_hours, settings.history_size_mib) == (72, 1024)
    assert settings.icon_remote_hosts == ("dgx-01", "gpu-box") and settings.remote_interval_s == 10.0
    assert settings.alerts.for_gpu(0, "temperature").critical_enter == 88.0
    assert settings.alerts.for_gpu(1, "temperature").critical_enter == 80.0
    assert set(settings.alerts.overrides) == {1}


def test_intervals_typed_finer_than_the_boxes_show_are_kept_until_edited(qtbot) -> None:
    """7.333 s from the file is shown 7.33 s: OK on the untouched box keeps 7.333 (a new remote
    interval restarts every reader and makes the hosts' histories anew)."""
    dialog = SettingsDialog(Settings(sampling_interval_s=2.333, remote_interval_s=7.333))
    qtbot.addWidget(dialog)
    shown, problems = dialog.settings()
    assert problems == [] and (shown.sampling_interval_s, shown.remote_interval_s) == (2.333, 7.333)
    dialog.remote_interval.setValue(8)
    dialog.interval.setValue(2.5)
    shown, _ = dialog.settings()
    assert (shown.sampling_interval_s, shown.remote_interval_s) == (2.5, 8.0)


def test_ok_on_an_untouched_dialog_changes_nothing_the_file_said(qtbot) -> None:
    """Thresholds typed finer than :g shows (83.1234567 became 83.1235; 95.12345678901235 even
    at 15 digits), a hidden GPU not here now
    (un-hidden for good), a host named "all" (read back as every host) and one with a comma (two)."""
    from tests.helpers import simulated_source
    from trayvml.config import from_toml, to_toml

    text = (
        "hidden_gpus = [1, 3]\n"
        'icon_remote_hosts = ["all", "lab,box"]\n'
        "[alerts.temperature]\nwarning_enter = 83.1234567\ncooldown_s = 1234567.0\n"
        "[alerts.power]\nwarning_enter = 95.12345678901235\n"  # (16 digits: 15 read back another number)
        "[gpus.0.alerts.temperature]\nwarning_enter = 84.55555555\n"
    )
    settings, notes = from_toml(text)
    assert notes == []
    source, _, _ = simulated_source("idle:gpus=h100*2")
    dialog = SettingsDialog(settings, source.sample().devices)  # GPUs 0 and 1: 3 is not here now
    qtbot.addWidget(dialog)
    shown, problems = dialog.settings()
    assert problems == [] and to_toml(shown) == to_toml(settings)
    dialog.icon_remote_hosts.setText("all")  # typed: "all" is every host
    assert dialog.settings()[0].icon_remote_hosts == ("*",)
    dialog.gpu_checks[0].setChecked(False)  # GPU 0 hidden too; 3 stays hidden
    assert dialog.settings()[0].hidden_gpus == (0, 1, 3)


def test_a_remote_host_that_cannot_be_read_is_refused_as_it_is_typed(qtbot) -> None:
    from PySide6.QtWidgets import QDialogButtonBox

    dialog = SettingsDialog(Settings())
    qtbot.addWidget(dialog)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    dialog.remote_hosts.setPlainText("http://dgx-01:9400\ngpu-box:8729")
    assert not ok.isEnabled() and "'gpu-box:8729' is not an http(s):// exporter URL" in dialog.problem.text()
    dialog.remote_hosts.setPlainText("http://dgx-01:9400\nhttp://gpu-box:8729")
    assert ok.isEnabled() and dialog.problem.text() == ""


def test_a_short_page_holds_its_rows_at_the_top(qtbot) -> None:
    """The Remote hosts page's two rows open at its top, the room below them (a form alone
    spread them down the page, its first row in the middle)."""
    dialog = SettingsDialog(Settings())
    qtbot.addWidget(dialog)
    dialog.resize(760, 480)
    dialog.show()
    page = present(dialog.remote_hosts.parentWidget())
    present(dialog.findChild(QTabWidget)).setCurrentWidget(page)
    qtbot.waitUntil(page.isVisible)
    row_gap_px = dialog.remote_interval.geometry().top() - dialog.remote_hosts.geometry().bottom()
    assert dialog.remote_hosts.geometry().top() < 30 and row_gap_px < 30
    assert page.height() - dialog.remote_interval.geometry().bottom() > 150


@pytest.mark.parametrize(
    ("field", "text", "reason"),
    [
        ("critical_clear", "95", "must be below its enter threshold"),
        ("hold_s", "soon", "must be a number"),
    ],
)
def test_invalid_input_is_refused_with_a_reason(qtbot, devices, field: str, text: str, reason: str) -> None:
    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    applied: list[Settings] = []
    dialog.settings_applied.connect(applied.append)
    dialog.rule_grid.rows["temperature"][2][field].setText(text)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled() and reason in dialog.problem.text()
    assert not dialog.apply() and applied == []
    dialog.rule_grid.rows["temperature"][2][field].setText("85" if field == "critical_clear" else "5")
    assert ok.isEnabled() and dialog.problem.text() == ""


def test_the_app_applies_settings_without_a_restart(qtbot, tmp_path: Path) -> None:
    from dataclasses import replace

    from trayvml.nvml.sim import parse_spec
    from trayvml.ui.app import App

    store = SettingsStore(tmp_path / "config.toml")
    autostart = XdgAutostart(tmp_path)
    app = App(parse_spec("idle:gpus=h100"), store=store, autostart=autostart)
    source, _, _ = simulated_source("idle:gpus=h100")
    app.on_sample(source.sample())
    new = replace(changed_settings(), hidden_gpus=())
    app.apply_settings(new)
    assert app.engine.settings is new.alerts and app.tray.metric == "temperature"
    assert app.history.tiers[-1].span_s == 6 * 3600  # history_hours = 6
    assert app.history.tiers[0].step_s == 2.0  # sampling every 2 s
    assert autostart.is_enabled() and app.tray.autostart_action.isChecked()  # start at login: on
    assert same(store.load()[0], new)
    assert app.sampler._worker.store_limits == new.history_limits  # the store's writer keeps to them from the next tick
    app.tray.autostart_action.setChecked(False)  # the menu's check box
    assert not autostart.is_enabled() and not store.load()[0].start_at_login


def test_clear_thresholds_say_which_way_they_clear(qtbot, devices) -> None:
    from PySide6.QtWidgets import QLabel

    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)

    def words(rule: str) -> list[str]:
        grid = dialog.rule_grid
        return [
            present(grid.findChild(QLabel, f"{rule}.{level}_clear.label")).text() for level in ("warning", "critical")
        ]

    assert words("temperature") == ["below", "below"]  # hot is alarming: it clears below
    assert words("memory_free") == ["above", "above"]  # little free memory is: it clears above
    assert dialog.rule_grid.findChild(QLabel, "job_finished.warning_clear.label") is None  # not a threshold


def test_each_rule_shows_only_the_numbers_it_reads(qtbot, devices) -> None:
    from PySide6.QtWidgets import QLabel

    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    thresholds = {"warning_enter", "warning_clear", "critical_enter", "critical_clear", "hold_s", "cooldown_s"}
    shown = {key: set(edits) for key, (_, _, edits) in dialog.rule_grid.rows.items()}
    assert shown == {
        "temperature": thresholds,
        "temperature_limit": thresholds,  # in °C below each GPU's own shutdown limit
        "memory_used": thresholds,
        "memory_free": thresholds,
        "power": thresholds,
        "gpu_lost": set(),  # event rules with no thresholds show no threshold boxes
        "driver_stalled": set(),
        "xid": {"cooldown_s"},
        "throttle": {"hold_s", "cooldown_s"},
        "job_finished": {"busy_above_percent", "busy_for_s", "idle_below_percent", "idle_for_s"},
        "stalled": {"busy_above_percent", "sm_below_percent", "power_below_percent", "hold_s", "cooldown_s"},
        "memory_held_idle": {"memory_above_gib", "idle_below_percent", "hold_s", "cooldown_s"},
    }
    names = {key: enabled.text() for key, (enabled, _, _) in dialog.rule_grid.rows.items()}
    assert names["memory_free"] == "Memory free (GiB)" and names["power"] == "Power draw (% of limit)"
    assert names["temperature"] == "GPU temperature (°C)" and names["xid"] == "XID error"
    assert names["temperature_limit"] == "Margin to the shutdown temperature (°C)"
    # job finished reads as a sentence: its numbers, each between its words
    words = [label.text() for label in dialog.rule_grid.findChildren(QLabel)]
    assert {"busy above", "then idle below", "s,"} <= set(words)
    edits = dialog.rule_grid.rows["job_finished"][2]
    job = ("busy_above_percent", "busy_for_s", "idle_below_percent", "idle_for_s")
    assert [edits[name].text() for name in job] == ["50", "60", "5", "30"]


def test_the_job_finished_row_edits_its_own_settings(qtbot, devices) -> None:
    from trayvml.alerts.rules import JobSettings

    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    applied: list[Settings] = []
    dialog.settings_applied.connect(applied.append)
    enabled, _, edits = dialog.rule_grid.rows["job_finished"]
    enabled.setChecked(True)
    edits["idle_below_percent"].setText("60")  # above "busy above" (50 %): a GPU busy and idle at once
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled() and "must be under busy above (50 %)" in dialog.problem.text()
    edits["idle_below_percent"].setText("10")
    edits["busy_for_s"].setText("soon")
    assert dialog.problem.text() == "Job finished: busy for (s) must be a number, not 'soon'."
    edits["busy_for_s"].setText("120")
    assert ok.isEnabled() and dialog.problem.text() == ""
    ok.click()
    (settings,) = applied
    assert settings.alerts.rules["job_finished"] == JobSettings(True, 50.0, 120.0, 10.0, 30.0)


def test_an_older_file_with_job_finished_in_threshold_fields_migrates(qtbot, devices, tmp_path: Path) -> None:
    from trayvml.alerts.rules import JobSettings

    path = tmp_path / "config.toml"
    old = (  # as version 1 wrote it: seconds in critical_enter, "idle" in warning_clear
        "version = 1\n"
        "[alerts.job_finished]\nenabled = true\nwarning_enter = 70.0\nwarning_clear = 3.0\n"
        "critical_enter = 600.0\ncritical_clear = nan\nhold_s = 45.0\ncooldown_s = 0.0\n"
        "[gpus.1.alerts.job_finished]\nhold_s = 90.0\n"
    )
    path.write_text(old)
    store = SettingsStore(path)
    settings, message = store.load()
    assert settings.alerts.rules["job_finished"] == JobSettings(True, 70.0, 600.0, 3.0, 45.0)
    assert settings.alerts.for_gpu(1, "job_finished") == JobSettings(True, 70.0, 600.0, 3.0, 90.0)
    for note in (
        "alerts.job_finished.warning_enter is now alerts.job_finished.busy_above_percent",
        "alerts.job_finished.critical_enter is now alerts.job_finished.busy_for_s",
        "alerts.job_finished.warning_clear is now alerts.job_finished.idle_below_percent",
        "alerts.job_finished.hold_s is now alerts.job_finished.idle_for_s",
        "gpus.1.alerts.job_finished.hold_s is now gpus.1.alerts.job_finished.idle_for_s",
        "alerts.job_finished.critical_clear is no longer used",
    ):
        assert note in message
    assert message.endswith(".") and "not known" not in message
    dialog = SettingsDialog(settings, devices)
    qtbot.addWidget(dialog)
    assert dialog.rule_grid.rows["job_finished"][2]["busy_for_s"].text() == "600"
    dialog.settings_applied.connect(store.save)
    assert dialog.apply()
    text = path.read_text()
    assert "busy_for_s = 600.0" in text and "critical_enter" not in text.split("[alerts.job_finished]")[1]
    (kept,) = tmp_path.glob("config.toml.kept-*")
    assert kept.read_text() == old  # the file as it was is not lost
    reloaded, message = SettingsStore(path).load()
    assert message == "" and reloaded.alerts.for_gpu(1, "job_finished").idle_for_s == 90.0


def test_pause_start_at_login_and_settings_are_reachable_without_a_tray_menu(qtbot, tmp_path: Path) -> None:
    # GNOME without the AppIndicator extension has no tray menu: the graph window and the
    # no-tray summary window offer the same actions.
    from PySide6.QtWidgets import QMenu, QPushButton, QToolButton

    from trayvml.nvml.sim import parse_spec
    from trayvml.ui.app import App

    autostart = XdgAutostart(tmp_path)
    app = App(parse_spec("idle:gpus=h100"), store=SettingsStore(tmp_path / "config.toml"), autostart=autostart)
    source, _, _ = simulated_source("idle:gpus=h100")
    app.on_sample(source.sample())
    window = app.ensure_window()
    window.resize(1280, 760)  # narrower, the toolbar's overflow arrow holds the button
    window.show()
    app._show_summary()
    assert app.summary is not None
    qtbot.addWidget(window)
    qtbot.addWidget(app.summary)
    for button in (
        window.findChild(QToolButton, "app_menu_button"),
        app.summary.findChild(QPushButton, "app_menu_button"),
    ):
        assert button is not None and not button.isHidden()
        menu = button.menu()
        assert isinstance(menu, QMenu)
        texts = [action.text() for action in menu.actions()]
        assert texts == ["Pause alerts", "Start at login", "Settings…"]
    menu = present(window.findChild(QToolButton, "app_menu_button")).menu()
    pause = next(a for a in menu.actions() if a.menu() is not None).menu()
    assert isinstance(pause, QMenu)
    next(a for a in pause.actions() if a.text() == "Until resumed").trigger()
    assert app.dispatcher.paused and menu.actions()[0].text() == "Alerts paused"
    next(a for a in menu.actions() if a.text() == "Start at login").trigger()
    assert autostart.is_enabled()
    next(a for a in menu.actions() if a.text() == "Settings…").trigger()
    assert app.settings_dialog is not None and app.settings_dialog.isVisible()
    app.settings_dialog.close()
    app.summary.close()
    window.close()


def test_the_history_spans_are_greyed_while_the_history_is_not_kept_on_disk(qtbot, devices) -> None:
    dialog = SettingsDialog(Settings(history_on_disk=False), devices)
    qtbot.addWidget(dialog)
    assert not any(spin.isEnabled() for spin in dialog.store_spins.values())
    assert "next start" in dialog.history_on_disk.toolTip()
    dialog.history_on_disk.setChecked(True)
    assert all(spin.isEnabled() for spin in dialog.store_spins.values())
    settings, problems = dialog.settings()
    assert problems == [] and settings.history_on_disk


def test_the_icons_remote_hosts_apply_at_once(qtbot, tmp_path: Path) -> None:
    from dataclasses import replace

    from tests.helpers import closed_port_url
    from trayvml.core.sample import SystemInfo
    from trayvml.nvml.sim import parse_spec
    from trayvml.ui.app import App

    app = App(
        parse_spec("idle:gpus=h100"),
        store=SettingsStore(tmp_path / "config.toml"),
        autostart=XdgAutostart(tmp_path),
        remote_urls=(closed_port_url(),),  # a remote host configured (never read: the app is not started)
    )
    source, _, _ = simulated_source("idle:gpus=rtx4090*2")
    remote = source.sample()
    remote = replace(remote, system=SystemInfo("dgx-01", "570.86", "12.8", "12.570"))
    assert app.remote_hosts is not None
    app.remote_hosts.samples = [remote]
    app.apply_settings(replace(Settings(), icon_remote_hosts=("gpu-box",)))
    assert app.tray.remote_icon_samples == []
    app.apply_settings(replace(Settings(), icon_remote_hosts=("dgx-01",)))
    assert app.tray.remote_icon_samples == [remote]


@pytest.mark.parametrize(
    ("label", "shown"),
    [
        ("Per-minute history on disk (days)", "Per-minute history on disk"),
        ("磁盘上逐分钟历史的保存时长（天）", "磁盘上逐分钟历史的保存时长"),
    ],
)
def test_a_spin_boxs_label_leaves_its_unit_to_the_suffix(label: str, shown: str) -> None:
    from trayvml.ui.settings_dialog import TRAILING_UNIT

    assert TRAILING_UNIT.sub("", label) == shown


def test_the_memory_rules_say_why_one_is_off_and_the_other_on(qtbot, devices) -> None:
    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    used, free = dialog.rule_grid.rows["memory_used"][0], dialog.rule_grid.rows["memory_free"][0]
    assert not used.isChecked() and free.isChecked()  # today's defaults
    assert "reserve" in used.toolTip() and "Memory free" in used.toolTip()
    assert "2 GiB" in free.toolTip()


def test_the_dialog_is_grouped_pages_in_plain_words(qtbot, devices) -> None:
    from PySide6.QtWidgets import QTabWidget

    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    tabs = present(dialog.findChild(QTabWidget))
    names = [tabs.tabText(k) for k in range(tabs.count())]
    assert names[:5] == ["General", "Tray", "History", "Remote hosts", "Serving"]
    assert "Alerts" in names
    items = [dialog.tray_metric.itemText(k) for k in range(dialog.tray_metric.count())]
    assert "GPU utilization (%)" in items and "Memory used (%)" in items
    assert dialog.icon_remote_hosts.text() == "all"  # the default, *, in words
    settings, _ = dialog.settings()
    assert settings.icon_remote_hosts == ("*",)
    words = [label.text() for label in dialog.findChildren(QLabel)]
    assert "Keep every second for" in words and "Keep per-minute min/mean/max for" in words
    dialog.show()
    # Fields at their own size, not stretched across the dialog's width (which the rule grid sets).
    assert dialog.interval.width() < 200  # on the page in view; the others are laid out when shown
    assert all(present(tabs.widget(k)).sizeHint().width() < 800 for k in range(5))


def test_the_dialog_opens_at_a_sane_width_and_the_rule_grids_scroll(qtbot, devices) -> None:
    from PySide6.QtWidgets import QScrollArea

    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    dialog.show()
    # The rule grids, eight columns wide, set the dialog's width (1171 px) before they scrolled.
    assert dialog.width() <= 900
    for grid in (dialog.rule_grid, dialog.override_grid):
        viewport = grid.parentWidget()  # the scroll area's viewport, then the area
        assert viewport is not None
        area = viewport.parentWidget()
        assert isinstance(area, QScrollArea) and area.widget() is grid


def test_the_alert_rules_fit_the_dialog_without_scrolling_sideways(qtbot, devices) -> None:
    from PySide6.QtWidgets import QLabel, QLineEdit, QScrollArea, QTabWidget

    from trayvml.ui.settings_dialog import MAX_WIDTH_PX

    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.resize(MAX_WIDTH_PX, dialog.height())  # as it opens on a 1280 px screen (this one is 800)
    tabs = present(dialog.findChild(QTabWidget))
    tabs.setCurrentIndex(next(i for i in range(tabs.count()) if present(tabs.widget(i)).isAncestorOf(dialog.rule_grid)))
    qtbot.wait(50)
    area = present(dialog.rule_grid.parentWidget()).parentWidget()
    assert isinstance(area, QScrollArea)
    assert not area.horizontalScrollBar().isVisible()  # every column in view at the opening width
    assert dialog.rule_grid.minimumSizeHint().width() <= area.viewport().width()
    # The word and the number it qualifies sit together: "below [78]", not spread across the column.
    label = dialog.rule_grid.findChild(QLabel, "temperature.warning_clear.label")
    edit = dialog.rule_grid.findChild(QLineEdit, "temperature.warning_clear")
    assert label is not None and edit is not None
    assert 0 <= edit.geometry().left() - label.geometry().right() <= 12


def test_a_cancelled_per_gpu_edit_is_not_saved_by_a_later_ok(qtbot, devices) -> None:
    """A per-GPU override edited and the dialog cancelled: shown again, the edit was back, and an
    OK for anything else saved it."""
    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    applied: list[Settings] = []
    dialog.settings_applied.connect(applied.append)
    dialog.gpu_choice.setCurrentIndex(1)
    _, override, edits = dialog.override_grid.rows["temperature"]
    assert override is not None
    override.setChecked(True)
    edits["critical_enter"].setText("95")
    dialog.gpu_choice.setCurrentIndex(0)  # kept while the dialog is open
    dialog.reject()
    dialog.show_settings(Settings())  # opened again
    dialog.interval.setValue(3.0)
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    (settings,) = applied
    assert settings.sampling_interval_s == 3.0 and dict(settings.alerts.overrides) == {}


def test_a_typo_in_a_gpus_override_stays_until_mended(qtbot, devices) -> None:
    """A number mistyped in GPU 0's override, then GPU 1 chosen: the error vanished, and the rule
    was saved with its default in place of what was meant."""
    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    dialog.gpu_choice.setCurrentIndex(0)
    _, override, edits = dialog.override_grid.rows["temperature"]
    assert override is not None
    override.setChecked(True)
    edits["critical_enter"].setText("9O")
    dialog.gpu_choice.setCurrentIndex(1)
    assert dialog.gpu_choice.currentData() == 0 and edits["critical_enter"].text() == "9O"  # still shown
    assert dialog.problem.text().startswith("GPU 0: GPU temperature: critical at must be a number")
    assert not dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()
    edits["critical_enter"].setText("90")
    dialog.gpu_choice.setCurrentIndex(1)
    assert dialog.gpu_choice.currentData() == 1 and dialog.problem.text() == ""
    settings, problems = dialog.settings()
    assert problems == [] and settings.alerts.for_gpu(0, "temperature").critical_enter == 90.0


def test_settings_chosen_again_while_open_keeps_the_edits_and_a_new_gpu_is_offered(qtbot, tmp_path: Path) -> None:
    """Settings… chosen again with the dialog open (to bring it forward) wiped what was typed; a
    dialog made before the first reading never offered a GPU to show, hide or override."""
    from trayvml.nvml.sim import parse_spec
    from trayvml.ui.app import App

    app = App(parse_spec("idle:gpus=h100*2"), store=SettingsStore(tmp_path / "config.toml"))
    app.show_settings()  # before the first reading: no GPU known
    dialog = app.settings_dialog
    assert dialog is not None and dialog.gpu_checks == []
    qtbot.addWidget(dialog)
    dialog.interval.setValue(7.0)
    app.show_settings()
    assert app.settings_dialog is dialog and dialog.interval.value() == 7.0
    dialog.reject()
    source, _, _ = simulated_source("idle:gpus=h100*2")
    app.on_sample(source.sample())
    app.show_settings()
    assert app.settings_dialog is not None and len(app.settings_dialog.gpu_checks) == 2
    qtbot.addWidget(app.settings_dialog)
    app.settings_dialog.reject()


def test_every_threshold_field_has_a_name_a_screen_reader_can_say(qtbot, devices) -> None:
    """46 threshold fields in the rule grids, none with an accessible name: a screen reader said
    only "edit" for each."""
    dialog = SettingsDialog(Settings(), devices)
    qtbot.addWidget(dialog)
    for grid in (dialog.rule_grid, dialog.override_grid):
        names = [edit.accessibleName() for _, _, edits in grid.rows.values() for edit in edits.values()]
        assert names and all(names) and len(set(names)) == len(names)
    _, _, edits = dialog.rule_grid.rows["temperature"]
    assert edits["critical_enter"].accessibleName() == "GPU temperature: critical at"


def test_a_level_a_rule_does_not_have_says_none_in_its_empty_box(qtbot) -> None:
    """Power draw has no critical level: its boxes were empty with nothing to say why."""
    from PySide6.QtWidgets import QLineEdit

    dialog = SettingsDialog(Settings())
    qtbot.addWidget(dialog)
    boxes = dialog.findChildren(QLineEdit, "power.critical_enter")  # (the Alerts page's and each GPU's)
    assert boxes and all(box.text() == "" and box.placeholderText() == "none" for box in boxes)
