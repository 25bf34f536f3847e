"""Settings: TOML round trips, atomic writes, versions and migrations; a file that cannot be used
never stops trayvml and is never lost."""

from __future__ import annotations

import contextlib
import math
import os
import stat
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers import read_in_time, thresholds, zero_device
from trayvml import config
from trayvml.alerts.engine import AlertSettings
from trayvml.alerts.rules import FORMER_DEFAULTS, RULE_BY_KEY, RULES
from trayvml.config import (
    GENERAL,
    Settings,
    SettingsError,
    SettingsModel,
    SettingsStore,
    from_toml,
    problems,
    remove_stale_temporaries,
    to_toml,
)
from trayvml.core import files
from trayvml.core.files import STALE_TEMPORARY_S


def changed_settings() -> Settings:
    temperature = replace(RULE_BY_KEY["temperature"].defaults, critical_enter=88.0, critical_clear=80.0, hold_s=2.0)
    power = replace(RULE_BY_KEY["power"].defaults, enabled=True, critical_enter=math.nan)
    gpu1 = replace(temperature, critical_enter=75.0, critical_clear=70.0, warning_enter=70.0, warning_clear=65.0)
    rules = {**AlertSettings().rules, "temperature": temperature, "power": power}
    return Settings(
        sampling_interval_s=2.0,
        history_hours=6,
        tray_metric="temperature",
        notifications=False,
        start_at_login=True,
        language="zh_CN",
        hidden_gpus=(2, 3),
        history_on_disk=False,
        history_fine_hours=48,
        history_coarse_days=30,
        history_size_mib=256,
        icon_remote_hosts=("dgx-01", "gpu-box"),
        remote_interval_s=3.5,
        alerts=AlertSettings(rules=rules, overrides={1: {"temperature": gpu1}}),
    )


def same(a: Settings, b: Settings) -> bool:
    return to_toml(a) == to_toml(b)  # NaN-aware comparison through the canonical text


def one_sentence(message: str) -> bool:
    """What the user is told: one line ending in a full stop, with nothing raw from the file in it."""
    return message.endswith(".") and "\n" not in message and "\x1b" not in message and "Traceback" not in message


def temporaries(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp"))


def test_defaults_round_trip_and_read_well() -> None:
    text = to_toml(Settings())
    assert "sampling_interval_s = 1.0" in text and "[alerts.temperature]" in text
    assert f"version = {config.VERSION}" in text
    settings, notes = from_toml(text)
    assert same(settings, Settings()) and notes == []


def test_every_field_round_trips(tmp_path: Path) -> None:
    store = SettingsStore(tmp_path / "config.toml")
    store.save(changed_settings())
    loaded, message = store.load()
    assert message == "" and same(loaded, changed_settings())
    assert loaded.alerts.for_gpu(1, "temperature").critical_enter == 75.0
    assert loaded.alerts.for_gpu(0, "temperature").critical_enter == 88.0
    assert math.isnan(thresholds(loaded.alerts.rules["power"]).critical_enter)
    text = store.path.read_text()
    assert "[gpus.1.alerts.temperature]" in text and "hold_s" not in text.split("[gpus.1.alerts.temperature]")[1]


def test_a_missing_file_means_defaults(tmp_path: Path) -> None:
    settings, message = SettingsStore(tmp_path / "none.toml").load()
    assert same(settings, Settings()) and message == ""


def test_a_file_an_editor_began_with_a_byte_order_mark_is_used(tmp_path: Path) -> None:
    """Notepad and others write U+FEFF first; TOML refuses it, and the file was set aside."""
    path = tmp_path / "config.toml"
    path.write_bytes("\ufeffsampling_interval_s = 5.0\n".encode())
    settings, message = SettingsStore(path).load()
    assert settings.sampling_interval_s == 5.0 and message == "" and path.exists()


def assert_set_aside(folder: Path, content: bytes, reason: str = "") -> str:
    """Load ``content``: defaults, one sentence, the file kept byte for byte under the set-aside name."""
    folder.mkdir(exist_ok=True)
    path = folder / "config.toml"
    path.write_bytes(content)
    settings, message = SettingsStore(path).load()
    assert same(settings, Settings()), content[:200]
    assert one_sentence(message) and "defaults are in use" in message, message
    assert reason in message, message
    (aside,) = folder.glob("config.toml.corrupt-*")
    assert aside.read_bytes() == content  # nothing of the user's is lost
    assert not path.exists()
    assert SettingsStore(path).load()[1] == ""  # told once: the next start is quiet
    return message


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("sampling_interval_s = [", "it is not valid TOML"),
        ("version = 'two'", "version should be a whole number"),
        ("version = -1", "version should be a whole number"),
        ("x = " + "[" * 5000 + "]" * 5000, "nested too deeply"),
        ("x = " + "{ a = " * 5000 + "1" + " }" * 5000, "nested too deeply"),
        ("history_hours = " + "9" * 5000, "a number too long"),
    ],
)
def test_a_file_that_cannot_be_used_is_set_aside(tmp_path: Path, content: str, reason: str) -> None:
    assert_set_aside(tmp_path, content.encode(), reason)


def assert_value_at_default(folder: Path, content: bytes, reason: str = "") -> str:
    """Load ``content`` (wrong values only): the defaults, one sentence naming why, the file left
    in place byte for byte, and kept under a copy's name when the settings are next saved."""
    folder.mkdir(exist_ok=True)
    path = folder / "config.toml"
    path.write_bytes(content)
    store = SettingsStore(path)
    settings, message = store.load()
    assert same(settings, Settings()), content[:200]
    assert one_sentence(message) and "is used with changes" in message and "its default is in use" in message, message
    assert reason in message, message
    assert path.read_bytes() == content and not list(folder.glob("config.toml.corrupt-*"))
    store.save(settings)
    (kept,) = folder.glob("config.toml.kept-*")
    assert kept.read_bytes() == content  # nothing of the user's is lost
    assert SettingsStore(path).load()[1] == ""  # told once: the next start is quiet
    return message


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("sampling_interval_s = 'fast'", "sampling_interval_s should be a number, not 'fast'"),
        ("history_hours = 12.5", "history_hours should be a whole number, not 12.5"),
        ("history_size_mib = 99999999999999999999", "99999999999999999999 is outside 16–1048576"),
        ("sampling_interval_s = 0.01", "outside 0.5–60"),
        ("sampling_interval_s = nan", "outside 0.5–60"),
        ("remote_interval_s = 120", "Read remote hosts every (s): 120 is outside 1–60"),
        ("tray_metric = 'colour'", "'colour' is not one of"),
        ("[alerts.temperature]\ncritical_clear = 95.0", "must be below its enter threshold"),
        ("[gpus.0.alerts.temperature]\nhold_s = 'long'", "should be a number"),
        # Valid TOML of the wrong shape: each of these crashed the app at every start.
        ("gpus = 5", "gpus should be a table"),
        ("gpus = [1, 2]", "gpus should be a table"),
        ("[gpus.0]\nalerts = 5", "gpus.0.alerts should be a table"),
        ('[gpus."²".alerts.temperature]\nhold_s = 1', "should be a GPU index"),
        ('[gpus."99999999999999999999"]', "should be a GPU index"),
        ("alerts = 5", "alerts should be a table"),
        ("[alerts]\ntemperature = [1]", "alerts.temperature should be a table"),
        ("hidden_gpus = [-1]", "hidden_gpus should be a list of GPU indices"),
        ("hidden_gpus = [[0]]", "hidden_gpus should be a list of GPU indices"),
        ("[alerts.temperature]\nhold_s = inf", "finite number of seconds"),
    ],
)
def test_a_value_that_cannot_be_used_stands_at_its_default(tmp_path: Path, content: str, reason: str) -> None:
    assert_value_at_default(tmp_path, content.encode(), reason)


def test_one_wrong_value_leaves_the_rest_of_the_file_in_force(tmp_path: Path) -> None:
    """One typo set every setting to its default: the history on disk, its month and its "off"
    among them, was then pruned to the default week (or written where the user had said not to)."""
    path = tmp_path / "config.toml"
    path.write_text(
        "history_coarse_days = 30.0\nhistory_on_disk = false\nhistory_hours = 'twelve'\n"
        "[alerts.temperature]\nwarning_enter = 70.0\nhold_s = 'long'\n"
        "[alerts.power]\nenabled = true\n"
        "[gpus.1.alerts.memory_used]\nwarning_enter = 'ninety'\n[gpus.0.alerts.memory_used]\nwarning_enter = 92.0\n"
    )
    settings, message = SettingsStore(path).load()
    assert settings.history_coarse_days == 30 and settings.history_on_disk is False  # in force
    assert settings.history_hours == Settings().history_hours  # the wrong one: its default
    defaults = Settings().alerts.rules
    assert settings.alerts.rules["temperature"] == defaults["temperature"]  # a rule's table with a wrong value
    assert settings.alerts.rules["power"].enabled is True
    assert set(settings.alerts.overrides) == {0}
    assert settings.alerts.for_gpu(0, "memory_used").warning_enter == 92.0
    for reason in (
        "history_hours should be a whole number, not 'twelve'",
        "alerts.temperature.hold_s should be a number",
    ):
        assert f"{reason}: its default is in use" in message, message
    assert "gpus.1.alerts.memory_used.warning_enter should be a number" in message


WRONG_VALUES = {
    float: ['"1"', "true", "[1.0]", "{ x = 1 }", "1979-05-27", "07:32:00"],
    int: ["1.5", '"12"', "true", "[12]", "{ h = 12 }"],
    str: ["1", '["power"]', "false", "{ m = 'power' }"],
    bool: ["1", '"true"', "[true]", "0.0"],
}


def hostile_files() -> list[str]:
    """Every key of the file with every wrong type, in the defaults and in a per-GPU override."""
    files = [f"{s.key} = {value}" for s in GENERAL for value in WRONG_VALUES[type(s.default)]]
    files += [f"hidden_gpus = {value}" for value in ("5", '"0,1"', "[true]", '["0"]', "{ a = 0 }")]
    for kind in RULES:
        for name, default in vars(kind.defaults).items():  # each rule its own kind of settings
            for value in WRONG_VALUES[type(default)]:
                files.append(f"[alerts.{kind.key}]\n{name} = {value}")
        files.append(f"[gpus.3.alerts.{kind.key}]\nhold_s = [[[[1]]]]")
        files.append(f"alerts.{kind.key} = 'on'")
    return files


def test_hostile_shapes_never_stop_trayvml_and_lose_nothing(tmp_path: Path) -> None:
    files = hostile_files()
    assert len(files) > 200
    for n, content in enumerate(files):
        assert_value_at_default(tmp_path / str(n), content.encode())


def test_bytes_that_are_not_utf8_are_set_aside_and_never_overwritten(tmp_path: Path) -> None:
    content = "history_hours = 6\n# caf\xe9\n".encode("latin-1")
    message = assert_set_aside(tmp_path, content, "it is not UTF-8 text (byte 23 is 0xe9)")
    assert "moved to config.toml.corrupt-" in message
    store = SettingsStore(tmp_path / "config.toml")
    store.save(Settings())  # the next save writes a new file beside the one set aside
    (aside,) = tmp_path.glob("config.toml.corrupt-*")
    assert aside.read_bytes() == content


def test_a_huge_file_is_set_aside_without_being_read_whole(tmp_path: Path) -> None:
    assert_set_aside(tmp_path, b"# " + b"x" * (2 << 20), "larger than 1 MiB")


def test_two_files_set_aside_in_one_second_are_both_kept(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    for content in (b"gpus = [1", b"gpus = [2"):
        path.write_bytes(content)
        SettingsStore(path).load()
    kept = sorted(p.read_bytes() for p in tmp_path.glob("config.toml.corrupt-*"))
    assert kept == [b"gpus = [1", b"gpus = [2"]


def test_an_unusable_file_that_cannot_be_moved_is_left_alone_and_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read-only folder (chmod does not stop root, who runs the tests in CI, so os.replace is made to fail).
    path = tmp_path / "config.toml"
    path.write_bytes(b"gpus = [")

    def read_only(source: object, target: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", read_only)
    store = SettingsStore(path)
    settings, message = store.load()
    assert same(settings, Settings())
    assert one_sentence(message) and "could not be moved aside either (Permission denied)" in message
    with pytest.raises(SettingsError, match="not overwritten"):
        store.save(Settings())
    assert path.read_bytes() == b"gpus = ["
    assert not list(tmp_path.glob("config.toml.*")) and not temporaries(tmp_path)


def test_a_folder_in_place_of_the_file_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    (path / "inside").mkdir(parents=True)
    store = SettingsStore(path)
    settings, message = store.load()
    assert same(settings, Settings())
    assert one_sentence(message) and "could not be read" in message and "left as it is" in message
    with pytest.raises(SettingsError, match="could not be read, so it is not overwritten"):
        store.save(Settings())
    assert (path / "inside").is_dir() and not temporaries(tmp_path)


def _loaded_in_time(store: SettingsStore, path: Path) -> tuple[Settings, str]:
    """``store.load()`` of the named pipe ``path``, failing where it still waits after 10 s."""
    loaded = read_in_time(path, store.load, wait_s=10)
    assert not isinstance(loaded, BaseException)
    return loaded


def test_a_named_pipe_with_no_writer_is_waited_on_a_bounded_time_and_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Opening it to read waited for a writer for ever: the tray, or any command given --config,
    # hung. Opened without waiting, it read at once as empty; it is now waited on for its writer
    # as any pipe is, for a bounded time, and said to be unread.
    monkeypatch.setattr(files, "PIPE_WAIT_S", 0.5)
    path = tmp_path / "config.toml"
    os.mkfifo(path)
    store = SettingsStore(path)
    settings, message = _loaded_in_time(store, path)
    assert same(settings, Settings()) and one_sentence(message)
    assert "(its writer did not finish within 0.5 s)" in message
    with pytest.raises(SettingsError, match="could not be read, so it is not overwritten"):
        store.save(Settings())
    assert path.is_fifo() and not list(tmp_path.glob("config.toml.*")) and not temporaries(tmp_path)


def test_a_named_pipe_is_read_as_its_writer_writes_it_and_not_for_ever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.toml"
    os.mkfifo(path)

    def writes(data: bytes, closes: bool) -> threading.Thread:
        def write() -> None:
            descriptor = os.open(path, os.O_WRONLY)  # waits for the reader's open
            time.sleep(0.3)  # the reader waits for the bytes
            os.write(descriptor, data)
            if closes:
                os.close(descriptor)
            else:
                time.sleep(1.5)
                os.close(descriptor)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        return writer

    writer = writes(b"sampling_interval_s = 5.0\n", closes=True)
    settings, message = _loaded_in_time(SettingsStore(path), path)
    writer.join(10)
    assert settings.sampling_interval_s == 5.0 and message == ""
    monkeypatch.setattr(files, "PIPE_WAIT_S", 0.8)
    writer = writes(b"sampling_interval_s = 5.0\n", closes=False)  # a writer that never finishes
    started_s = time.monotonic()
    settings, message = _loaded_in_time(SettingsStore(path), path)
    assert time.monotonic() - started_s < 1.5 and same(settings, Settings())
    assert one_sentence(message) and "(its writer did not finish within 0.8 s)" in message
    writer.join(10)
    assert path.is_fifo() and not list(tmp_path.glob("config.toml.*"))


def test_a_named_pipe_bigger_than_a_settings_file_is_refused_whole_and_left_alone(tmp_path: Path) -> None:
    # Read up to the limit, the start of a long pipe was taken for the whole file: valid TOML to
    # where it was cut (a key of the part never read kept its default, unsaid). Its kind is told by
    # the one look at the path: a pipe's problem never moves it aside, as a file's does.
    path = tmp_path / "config.toml"
    os.mkfifo(path)
    comment = b"#" * 80 + b"\n"
    lines = b"sampling_interval_s = 5.0\n" + comment * (
        2 * config.MAX_FILE_BYTES // len(comment)
    )  # valid, cut anywhere

    def write() -> None:
        descriptor = os.open(path, os.O_WRONLY)  # waits for the reader's open
        with contextlib.suppress(BrokenPipeError):  # the reader stops past the limit
            os.write(descriptor, lines)
        os.close(descriptor)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    store = SettingsStore(path)
    settings, message = _loaded_in_time(store, path)
    writer.join(10)
    assert same(settings, Settings())
    assert one_sentence(message) and f": it is larger than {config.MAX_FILE_BYTES >> 20} MiB;" in message
    with pytest.raises(SettingsError, match="could not be used, so it is not overwritten"):
        store.save(Settings())
    assert path.is_fifo() and not list(tmp_path.glob("config.toml.*"))


def test_a_device_is_read_as_no_settings_file_and_never_moved_aside(tmp_path: Path) -> None:
    # Read as a file, a /dev/zero was too big, and moved aside: as root, the device itself renamed.
    # The node is one made here, in the test's own folder.
    path = zero_device(tmp_path)
    store = SettingsStore(path)
    settings, message = store.load()
    assert same(settings, Settings())
    assert one_sentence(message) and "(it is not a regular file)" in message
    assert path.is_char_device() and not list(tmp_path.glob("zero.*"))


def test_saving_refuses_invalid_settings_and_keeps_the_file(tmp_path: Path) -> None:
    store = SettingsStore(tmp_path / "config.toml")
    store.save(Settings())
    before = store.path.read_bytes()
    bad = replace(Settings(), sampling_interval_s=0.0)
    assert problems(bad)
    with pytest.raises(SettingsError, match="Sampling interval"):
        store.save(bad)
    assert store.path.read_bytes() == before
    assert not temporaries(tmp_path)


def test_saving_goes_through_a_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SettingsStore(tmp_path / "sub" / "config.toml")
    replaced = []
    real = os.replace

    def recording(a: str | Path, b: str | Path) -> None:
        replaced.append((Path(a).name, Path(b).name))
        real(a, b)

    monkeypatch.setattr(os, "replace", recording)
    store.save(Settings())
    assert len(replaced) == 1 and replaced[0][1] == "config.toml"
    assert replaced[0][0].startswith(f".config.toml.trayvml-{os.getpid()}-")


# A writer killed with SIGKILL while its temporary file is open (fsync never returns).
KILLED_WRITER = """
import os, sys
from pathlib import Path
from trayvml.core.files import write_atomically
os.fsync = lambda fd: (print("writing", flush=True), sys.stdin.read())
write_atomically(Path(sys.argv[1]), b"half")
"""


def test_temporary_files_of_writers_killed_mid_save_are_removed(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    theirs = tmp_path / ".config.toml.editor-swap.tmp"  # not ours: never touched
    theirs.write_bytes(b"")
    with subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as writer:
        assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
        (leftover,) = (p for p in temporaries(tmp_path) if p != theirs)
        assert leftover.name.startswith(f".config.toml.trayvml-{writer.pid}-")
        remove_stale_temporaries(path)
        assert leftover.exists()  # its writer is still at work
        writer.kill()
        writer.wait()
    SettingsStore(path).save(Settings())
    assert temporaries(tmp_path) == [theirs]
    assert same(SettingsStore(path).load()[0], Settings())


def test_old_temporary_files_of_ours_are_removed_on_load(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    old = tmp_path / f".config.toml.trayvml-{os.getpid()}-abc.tmp"  # even this process's, once old enough
    fresh = tmp_path / f".config.toml.trayvml-{os.getpid()}-def.tmp"
    for temporary in (old, fresh):
        temporary.write_bytes(b"half")
    an_hour_and_more_ago = time.time() - STALE_TEMPORARY_S - 60
    os.utime(old, (an_hour_and_more_ago, an_hour_and_more_ago))
    SettingsStore(path).load()
    assert temporaries(tmp_path) == [fresh]  # a write of this process may still be under way


# ---- versions and migrations ----
def test_an_unknown_setting_is_noted_and_the_rest_is_used(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    content = (
        b"history_hours = 6\ncolour = 'red'\n\"\\u001b[31m\" = 1\n"
        b"[alerts.weather]\nenabled = true\n"
        b"[alerts.temperature]\nhold_s = 5.0\nsnooze_s = 60\n"
        b"[gpus.1]\nname = 'left'\n[gpus.1.alerts.power]\nenabled = true\n"
    )
    path.write_bytes(content)
    store = SettingsStore(path)
    settings, message = store.load()
    assert settings.history_hours == 6 and thresholds(settings.alerts.rules["temperature"]).hold_s == 5.0
    assert settings.alerts.for_gpu(1, "power").enabled
    assert one_sentence(message), message
    for key in ("'colour'", r"'\x1b[31m'", "'alerts.weather'", "'alerts.temperature.snooze_s'", "'gpus.1.name'"):
        assert key in message
    assert "not known to this version and ignored" in message
    assert path.read_bytes() == content and not list(tmp_path.glob("config.toml.*"))  # loading writes nothing
    store.save(settings)
    (kept,) = tmp_path.glob("config.toml.kept-*")
    assert kept.read_bytes() == content  # what was ignored is not lost when the file is rewritten
    store.save(settings)
    assert len(list(tmp_path.glob("config.toml.kept-*"))) == 1  # one copy, not one per save
    reloaded, message = SettingsStore(path).load()
    assert same(reloaded, settings) and message == ""


def test_many_unknown_settings_are_named_by_the_first_few(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("".join(f"option_{n} = {n}\n" for n in range(10_000)))
    settings, message = SettingsStore(path).load()
    assert same(settings, Settings()) and one_sentence(message)
    assert "'option_4' and 9995 more are not known" in message and len(message) < 500


def test_a_file_from_a_newer_trayvml_loads_what_it_can(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    newer = config.VERSION + 1
    path.write_text(f"version = {newer}\nhistory_hours = 3\nsparkline = true\n[alerts.power]\nenabled = true\n")
    store = SettingsStore(path)
    settings, message = store.load()
    assert settings.history_hours == 3 and settings.alerts.rules["power"].enabled
    assert one_sentence(message)
    assert f"written by a newer trayvml (settings version {newer}; this one knows {config.VERSION})" in message
    assert "'sparkline' is not known" in message
    store.save(settings)
    assert f"version = {config.VERSION}" in path.read_text()
    (kept,) = tmp_path.glob("config.toml.kept-*")
    assert f"version = {newer}" in kept.read_text()


def test_a_file_from_before_versions_loads_quietly(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(to_toml(changed_settings()).replace(f"version = {config.VERSION}\n", ""))
    assert "version" not in path.read_text()
    settings, message = SettingsStore(path).load()
    assert message == "" and same(settings, changed_settings())


def test_renamed_and_deleted_settings_migrate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "RENAMED", {"interval_s": "sampling_interval_s", "alerts.hot": "alerts.temperature"})
    monkeypatch.setattr(config, "DELETED", frozenset({"theme", "alerts.temperature.repeat_s"}))
    path = tmp_path / "config.toml"
    path.write_text(
        "version = 0\ninterval_s = 2.0\ntheme = 'dark'\n"
        "[alerts.hot]\nhold_s = 4.0\nrepeat_s = 9\n"
        "[gpus.2.alerts.hot]\nhold_s = 8.0\n"
    )
    store = SettingsStore(path)
    settings, message = store.load()
    assert settings.sampling_interval_s == 2.0
    assert thresholds(settings.alerts.rules["temperature"]).hold_s == 4.0
    assert settings.alerts.for_gpu(2, "temperature").hold_s == 8.0
    assert one_sentence(message), message
    for note in (
        "interval_s is now sampling_interval_s",
        "alerts.hot is now alerts.temperature",
        "gpus.2.alerts.hot is now gpus.2.alerts.temperature",
        "theme is no longer used",
        "alerts.temperature.repeat_s is no longer used",
    ):
        assert note in message
    assert "not known" not in message
    store.save(settings)
    text = path.read_text()
    assert "\nsampling_interval_s = 2.0" in text and "\ninterval_s" not in text
    assert "theme" not in text and "hot" not in text and "repeat_s" not in text
    reloaded, message = SettingsStore(path).load()
    assert same(reloaded, settings) and message == ""


def test_a_renamed_setting_does_not_override_its_new_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "RENAMED", {"interval_s": "sampling_interval_s"})
    settings, notes = from_toml("interval_s = 2.0\nsampling_interval_s = 3.0\n")
    assert settings.sampling_interval_s == 3.0 and notes == ["interval_s is now sampling_interval_s"]


# ---- the app ----
class UnsavableStore(SettingsStore):
    def save(self, settings: Settings) -> None:
        raise OSError(28, "No space left on device")


def test_start_at_login_says_when_the_settings_cannot_be_saved(qtbot, tmp_path: Path) -> None:
    from trayvml.nvml.sim import parse_spec
    from trayvml.platform.autostart import XdgAutostart
    from trayvml.ui.app import App

    autostart = XdgAutostart(tmp_path)
    app = App(parse_spec("idle:gpus=h100"), store=UnsavableStore(tmp_path / "config.toml"), autostart=autostart)
    told = []
    app.tray.icon.showMessage = lambda title, text, *rest: told.append(text)  # type: ignore[method-assign]
    app.tray.autostart_action.setChecked(True)  # the menu's check box
    assert autostart.is_enabled() and app.settings.start_at_login and app.tray.autostart_action.isChecked()
    assert told == [f"Could not save the settings to {tmp_path / 'config.toml'}: No space left on device."]
    app.tray.autostart_action.setChecked(False)
    assert not autostart.is_enabled() and not app.settings.start_at_login and len(told) == 2


def test_one_set_of_defaults_the_schemas() -> None:
    from dataclasses import fields

    from trayvml.config import GENERAL

    settings_fields = {f.name for f in fields(config.Settings)}
    for setting in GENERAL:
        assert setting.key in settings_fields, setting.key
        assert getattr(config.Settings(), setting.key) == setting.default


def test_the_model_saves_and_tells_its_listeners_of_a_change(tmp_path: Path) -> None:
    store = config.SettingsStore(tmp_path / "config.toml")
    model = config.SettingsModel(config.Settings(), store)
    heard: list[float] = []
    model.on_change("sampling_interval_s", lambda new: heard.append(new.sampling_interval_s))
    assert model.change(replace(model.current, sampling_interval_s=2.0)) == ""
    assert heard == [2.0] and store.load()[0].sampling_interval_s == 2.0
    assert model.change(model.current) == "" and len(heard) == 1  # no change, nobody told


def test_the_model_tells_a_listener_only_of_its_own_keys_and_once_per_change() -> None:
    model = config.SettingsModel(config.Settings())
    interval: list[float] = []
    either: list[tuple[float, int]] = []
    model.on_change("sampling_interval_s", lambda new: interval.append(new.sampling_interval_s))
    model.on_change(
        ("history_hours", "sampling_interval_s"),
        lambda new: either.append((new.sampling_interval_s, new.history_hours)),
    )
    model.change(replace(model.current, notifications=False))  # neither key
    assert interval == [] and either == []
    model.change(replace(model.current, history_hours=6))
    assert interval == [] and either == [(1.0, 6)]
    model.change(replace(model.current, history_hours=3, sampling_interval_s=2.0))  # both keys: told once
    assert interval == [2.0] and either == [(1.0, 6), (2.0, 3)]


def test_the_model_refuses_a_listener_of_a_setting_that_does_not_exist() -> None:
    with pytest.raises(ValueError, match="no such setting: sampling_interval"):
        config.SettingsModel(config.Settings()).on_change("sampling_interval", lambda new: None)


def test_the_model_says_when_it_cannot_save_and_still_applies(tmp_path: Path) -> None:
    folder = tmp_path / "config.toml"
    folder.mkdir()  # a folder where the file should be: nothing can be saved there
    model = config.SettingsModel(config.Settings(), config.SettingsStore(folder))
    heard: list[bool] = []
    model.on_change("notifications", lambda new: heard.append(new.notifications))
    problem = model.change(replace(model.current, notifications=False))
    assert problem.startswith(f"Could not save the settings to {folder}: ")
    assert model.current.notifications is False and heard == [False]  # in force for this session


def test_a_change_keeps_what_another_program_changed_in_the_file(tmp_path: Path) -> None:
    """A push destination added to the file by hand (as the README shows) while the tray runs,
    then "Start at login" ticked in its menu: the whole file was written from what the tray had
    read at its start, the hand edit gone without a word."""
    path = tmp_path / "config.toml"
    store = config.SettingsStore(path)
    store.save(config.Settings())
    model = config.SettingsModel(store.load()[0], store)
    heard: list[int] = []
    model.on_change("push", lambda new: heard.append(len(new.push)))
    path.write_text(path.read_text() + '\n[[push]]\nkind = "ntfy"\nurl = "https://ntfy.sh/mine"\n')
    said = model.change(replace(model.current, start_at_login=True))
    assert said == f"The settings file {path} had been changed elsewhere: those changes are kept."
    on_disk, _ = config.SettingsStore(path).load()
    assert on_disk.start_at_login and [d.url for d in on_disk.push] == ["https://ntfy.sh/mine"]
    assert same(model.current, on_disk) and heard == [1]
    assert model.change(replace(model.current, notifications=False)) == ""  # its own write is not another's


def test_changes_elsewhere_and_here_are_merged_rule_by_rule(tmp_path: Path) -> None:
    """The temperature warning edited by hand while the tray ran, then the power rule turned on in
    its dialog: the alerts were one setting, and the hand edit went though the tray said it was kept."""
    path = tmp_path / "config.toml"
    store = config.SettingsStore(path)
    store.save(config.Settings())
    model = config.SettingsModel(store.load()[0], store)
    rules = model.current.alerts.rules
    path.write_text(path.read_text().replace("warning_enter = 83.0", "warning_enter = 85.0", 1))
    edited, _ = config.SettingsStore(path).load()
    assert thresholds(edited.alerts.rules["temperature"]).warning_enter == 85.0  # (the edit took)
    power = replace(thresholds(rules["power"]), enabled=not rules["power"].enabled)
    said = model.change(replace(model.current, alerts=replace(model.current.alerts, rules={**rules, "power": power})))
    assert said == f"The settings file {path} had been changed elsewhere: those changes are kept."
    on_disk, _ = config.SettingsStore(path).load()
    assert thresholds(on_disk.alerts.rules["temperature"]).warning_enter == 85.0
    assert repr(on_disk.alerts.rules["power"]) == repr(power)  # (NaN thresholds: compared as written)
    assert not list(tmp_path.glob("config.toml.kept-*"))
    # Both changed the same rule: this change holds it, said, and the file as it was is kept.
    before = path.read_text()
    path.write_text(before.replace("warning_enter = 85.0", "warning_enter = 86.0", 1))
    hand = path.read_bytes()
    mine = replace(thresholds(on_disk.alerts.rules["temperature"]), warning_enter=87.0)
    alerts = model.current.alerts
    said = model.change(replace(model.current, alerts=replace(alerts, rules={**alerts.rules, "temperature": mine})))
    assert said.endswith(
        "those changes are kept but for alerts.temperature, changed there too, which hold what was chosen here;"
        " the file as it was is kept beside it."
    )
    assert thresholds(config.SettingsStore(path).load()[0].alerts.rules["temperature"]).warning_enter == 87.0
    (kept,) = tmp_path.glob("config.toml.kept-*")
    assert kept.read_bytes() == hand


# Another trayvml saving its change (notifications off) from the settings it read at its start,
# holding the save's lock until told to save.
OTHER_SAVER = """
import sys
from dataclasses import replace
from pathlib import Path
from trayvml import config
store = config.SettingsStore(Path(sys.argv[1]))
model = config.SettingsModel(store.load()[0], store)
with store.locked():
    print("holding", flush=True)
    sys.stdin.readline()
    store.save(replace(model.current, notifications=False))
"""


def test_two_trayvmls_saving_at_once_each_keep_the_others_change(tmp_path: Path) -> None:
    """Both looked at the file before either saved, found it as they had read it, and the later
    save lost the other's change without a word."""
    path = tmp_path / "config.toml"
    store = config.SettingsStore(path)
    store.save(config.Settings())
    model = config.SettingsModel(store.load()[0], store)
    said: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-c", OTHER_SAVER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as other:
        try:
            assert other.stdout is not None and other.stdout.readline() == "holding\n"
            here = threading.Thread(
                target=lambda: said.append(model.change(replace(model.current, start_at_login=True)))
            )
            here.start()
            time.sleep(0.3)  # (without the lock, this one's save is made meanwhile, and lost next)
            assert other.stdin is not None
            other.stdin.write("save\n")
            other.stdin.flush()
            assert other.wait(20) == 0
            here.join(20)
            assert not here.is_alive()
        finally:
            other.kill()
    on_disk, _ = config.SettingsStore(path).load()
    assert on_disk.start_at_login and not on_disk.notifications  # each one's change
    assert said == [f"The settings file {path} had been changed elsewhere: those changes are kept."]


def test_a_save_lock_held_too_long_is_waited_for_a_bounded_time_then_saved_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import fcntl

    path = tmp_path / "config.toml"
    store = config.SettingsStore(path)
    store.save(config.Settings())
    model = config.SettingsModel(store.load()[0], store)
    monkeypatch.setattr(config, "SAVE_LOCK_WAIT_S", 0.1)
    lock = tmp_path / ".config.toml.lock"  # beside the file: a lock on its folder was one machine's on NFS
    stuck = os.open(lock, os.O_RDWR | os.O_CREAT)  # a trayvml stopped while holding it
    try:
        fcntl.flock(stuck, fcntl.LOCK_EX)
        assert model.change(replace(model.current, start_at_login=True)) == ""
    finally:
        os.close(stuck)
    assert config.SettingsStore(path).load()[0].start_at_login  # the change saved, not lost
    assert f"saving the settings without their lock: another program has held {lock} for 0.1 s" in caplog.text


def test_a_broken_file_moved_aside_is_not_taken_for_a_change_elsewhere(tmp_path: Path) -> None:
    """A broken settings file is moved aside at start: the first change after said the file had
    been changed elsewhere (its signature was taken before the move)."""
    path = tmp_path / "config.toml"
    path.write_text("sampling_interval_s = [\n")
    store = config.SettingsStore(path)
    settings, said = store.load()
    assert "moved to" in said and not path.exists()
    model = config.SettingsModel(settings, store)
    assert model.change(replace(model.current, notifications=False)) == ""


# ---- version 3: a rule left at its former default takes today's ----
FORMER_MEMORY = (
    "version = 2\n[alerts.memory_used]\nenabled = true\nwarning_enter = 90.0\nwarning_clear = 85.0\n"
    "critical_enter = 97.0\ncritical_clear = 93.0\nhold_s = 10.0\ncooldown_s = 300.0\n"
)


def test_memory_alerts_left_at_the_former_default_take_todays(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(FORMER_MEMORY)
    settings, message = SettingsStore(path).load()
    assert settings.alerts.rules["memory_used"] == RULE_BY_KEY["memory_used"].defaults
    assert not settings.alerts.rules["memory_used"].enabled
    assert "alerts.memory_used held the former default and now has today's (off)" in message
    assert one_sentence(message), message


@pytest.mark.parametrize(
    "change",
    [
        ("critical_enter = 97.0", "critical_enter = 98.0"),  # a threshold the user chose
        ("version = 2", "version = 3"),  # written by this version: the user chose these
    ],
)
def test_memory_alerts_the_user_chose_stay_as_they_are(tmp_path: Path, change: tuple[str, str]) -> None:
    path = tmp_path / "config.toml"
    path.write_text(FORMER_MEMORY.replace(*change))
    settings, message = SettingsStore(path).load()
    memory = thresholds(settings.alerts.rules["memory_used"])
    assert memory.enabled and memory.warning_enter == 90.0 and memory.hold_s == 10.0
    assert "former default" not in message


def test_the_disk_history_settings_say_what_they_keep_and_bounds_are_written_out() -> None:
    assert problems(replace(Settings(), history_size_mib=8)) == ["History size cap (MiB): 8 is outside 16–1048576."]
    assert problems(replace(Settings(), history_fine_hours=0)) == [
        "Per-second history on disk (h): 0 is outside 1–744."
    ]
    assert problems(replace(Settings(), history_coarse_days=0)) == [
        "Per-minute history on disk (days): 0 is outside 1–3660."
    ]


# ---- version 4: low free memory alerts by default ----
FORMER_FREE = (
    "version = 3\n[alerts.memory_free]\nenabled = false\nwarning_enter = 4.0\nwarning_clear = 6.0\n"
    "critical_enter = 1.0\ncritical_clear = 2.0\nhold_s = 10.0\ncooldown_s = 300.0\n"
    "[alerts.memory_used]\nenabled = true\nwarning_enter = 90.0\nwarning_clear = 85.0\n"
    "critical_enter = 97.0\ncritical_clear = 93.0\nhold_s = 10.0\ncooldown_s = 300.0\n"
)


def test_free_memory_alerts_left_off_at_the_former_default_are_on_now(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(FORMER_FREE)
    settings, message = SettingsStore(path).load()
    assert settings.alerts.rules["memory_free"] == RULE_BY_KEY["memory_free"].defaults
    assert settings.alerts.rules["memory_free"].enabled
    assert "alerts.memory_free held the former default and now has today's (on)" in message
    assert one_sentence(message), message
    # A version-3 file was written after memory_used's default changed: its user chose that one.
    memory_used = thresholds(settings.alerts.rules["memory_used"])
    assert memory_used.enabled and memory_used.warning_enter == 90.0


@pytest.mark.parametrize(
    ("table", "enabled"),
    [
        ("[alerts.memory_free]\nenabled = false\n", False),
        ("[alerts.memory_used]\nenabled = true\n", True),
        ("[alerts.memory_used]\nenabled = true\nhold_s = 10\n", True),
    ],
)
def test_a_rule_typed_by_hand_without_a_version_is_the_users_choice(table: str, enabled: bool) -> None:
    """No `version` (the README shows none): a partial table equal to a former default was taken
    for one an older trayvml wrote (they wrote every field), and the user's choice reversed."""
    settings, notes = from_toml(table)
    key = table.partition(".")[2].partition("]")[0]
    assert settings.alerts.rules[key].enabled is enabled
    assert not any("former default" in note for note in notes)


def test_a_gpus_override_of_a_rule_at_its_former_default_keeps_what_it_was_saved_against(tmp_path: Path) -> None:
    """A version-3 file: memory_free at its former default (off, warning 4 GiB, clear 6) and GPU 0's
    override of it (on, warning at 5 GiB) saved as what differs from it. Rebuilt on today's default
    (clear at 3), the override was refused, and the whole file moved aside with it: every setting,
    push destinations too."""
    path = tmp_path / "config.toml"
    path.write_text(
        FORMER_FREE
        + "[gpus.0.alerts.memory_free]\nenabled = true\nwarning_enter = 5.0\n"
        + "[gpus.1.alerts.memory_free]\nwarning_enter = 5.0\n"  # on or off unsaid: as the rule, today's
        + '[[push]]\nkind = "ntfy"\nurl = "https://ntfy.example/mytopic"\n'
    )
    settings, message = SettingsStore(path).load()
    assert "could not be used" not in message and not list(tmp_path.glob("config.toml.corrupt-*"))
    assert len(settings.push) == 1
    assert settings.alerts.rules["memory_free"] == RULE_BY_KEY["memory_free"].defaults  # today's, globally
    former = thresholds(FORMER_DEFAULTS["memory_free"])
    for gpu in (0, 1):
        override = thresholds(settings.alerts.overrides[gpu]["memory_free"])
        assert override.enabled and override.warning_enter == 5.0  # GPU 1's: on, as today's default
        assert (override.warning_clear, override.critical_enter, override.critical_clear) == (
            former.warning_clear,
            former.critical_enter,
            former.critical_clear,
        )


def test_free_memory_alerts_written_by_this_version_stay_off(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(FORMER_FREE.replace("version = 3", f"version = {config.VERSION}"))
    settings, message = SettingsStore(path).load()
    assert not settings.alerts.rules["memory_free"].enabled and "former default" not in message


def test_a_file_that_cannot_be_used_prunes_no_history(tmp_path: Path) -> None:
    """Not TOML at all: the defaults stand in, and with them the default week pruned the month the
    file had asked the history on disk to keep. Standing in, they keep what any settings could."""
    from tests.test_store import _samples, _write
    from trayvml.history.disk.read import StoreReader
    from trayvml.history.disk.write import GPU_LAYOUT, PRUNE_EVERY_S

    day_s = 86400.0
    start_s = 1_700_000_000.0 - (1_700_000_000.0 % day_s)
    path, folder = tmp_path / "config.toml", tmp_path / "store"
    path.write_text("history_coarse_days = 30\n")
    chosen, _ = SettingsStore(path).load()
    first = _samples("training:gpus=h100", start_s, 2 * 3600 + 700)
    _write(folder, first, chosen.history_limits)
    uuid = first[0].devices[0].uuid

    def minutes_of_the_first_day() -> int:
        reader = StoreReader(folder)
        try:
            return int(reader.coarse(uuid, start_s, start_s + 3 * 3600, 60.0, GPU_LAYOUT.keys).recorded.sum())
        finally:
            reader.close()

    kept = minutes_of_the_first_day()
    assert kept > 100
    path.write_text("history_coarse_days = 30\nhistory_hours = [\n")  # ten days on, a typo
    store = SettingsStore(path)
    settings, message = store.load()
    assert settings.stand_in and "defaults are in use" in message
    assert settings.history_limits.coarse_span_s >= 30 * day_s
    _write(
        folder, _samples("training:gpus=h100", start_s + 10 * day_s, int(PRUNE_EVERY_S) + 20), settings.history_limits
    )
    assert minutes_of_the_first_day() == kept
    # Saved (the settings dialog's OK), they are the file's: its limits are in force.
    model = SettingsModel(settings, store)
    assert model.change(replace(settings, history_coarse_days=7)) == ""
    assert not model.current.stand_in and model.current.history_limits.coarse_span_s == 7 * day_s
    assert SettingsStore(path).load()[0].history_coarse_days == 7


def test_saving_through_a_symbolic_link_writes_its_target(tmp_path: Path) -> None:
    """A dotfiles manager links config.toml to its own copy: saving replaced the link with a file."""
    managed = tmp_path / "dotfiles" / "trayvml.toml"
    managed.parent.mkdir()
    managed.write_text("history_hours = 3\n")
    link = tmp_path / "config" / "config.toml"
    link.parent.mkdir()
    link.symlink_to(managed)
    store = SettingsStore(link)
    settings, _ = store.load()
    store.save(replace(settings, history_hours=6))
    assert link.is_symlink() and link.resolve() == managed.resolve()
    assert SettingsStore(managed).load()[0].history_hours == 6
    assert stat.S_IMODE(managed.stat().st_mode) == 0o600 and not temporaries(managed.parent)


def test_a_remote_host_that_cannot_be_read_is_said_where_the_user_looks(tmp_path: Path) -> None:
    """ "gpu-box:8729" (no scheme) passed every check: the tray printed it on its standard error,
    which nobody sees at login, `doctor` said the file loads, and the dialog took it."""
    from trayvml.commands.doctor import Findings, check_settings

    path = tmp_path / "config.toml"
    path.write_text('remote_hosts = ["gpu-box:8729", "http://dgx-01:9400", "http://ann:pw@lab:9400"]\n')
    settings, message = SettingsStore(path).load()
    assert settings.remote_hosts == ("http://dgx-01:9400", "http://ann:pw@lab:9400")  # the others are read
    assert "Remote 'gpu-box:8729' is not an http(s):// exporter URL" in message and "it is not read;" in message
    assert message.count("gpu-box:8729") == 1 and "it is not read: its default" not in message
    assert problems(replace(settings, remote_hosts=("ftp://x",)))  # the dialog refuses it
    findings = Findings()
    check_settings(findings, path)
    (said,) = [c for c in findings.checks if c.name == "settings"]
    assert said.level.name == "WARNING" and "gpu-box:8729" in said.sentence


def test_a_file_whose_mode_changed_is_read_again_before_a_save(tmp_path: Path) -> None:
    """Made readable again (chmod: size, inode and times of change of content the same), it was
    not noticed until the next start, every save refused as "could not be read" meanwhile."""
    path = tmp_path / "config.toml"
    path.write_text("history_hours = 3\n")
    os.chmod(path, 0o644)
    store = SettingsStore(path)
    store.load()
    assert not store.changed_elsewhere()
    os.chmod(path, 0o600)
    assert store.changed_elsewhere()


def test_a_failed_save_keeps_the_stand_in_settings_standing_in(tmp_path: Path) -> None:
    """The dialog makes fresh Settings: a save refused (a file that cannot be read is never written
    over) cleared the flag, and the history on disk was pruned by settings no file holds."""
    path = tmp_path / "config.toml"
    (path / "inside").mkdir(parents=True)  # a folder where the file should be: unreadable, never written
    store = SettingsStore(path)
    settings, _ = store.load()
    assert settings.stand_in
    model = SettingsModel(settings, store)
    heard: list[float] = []
    model.on_change(("history_coarse_days", "stand_in"), lambda new: heard.append(new.history_limits.coarse_span_s))
    said = model.change(Settings(notifications=False))  # fresh, as the dialog's
    assert said.startswith("Could not save the settings")
    assert model.current.stand_in and model.current.history_limits.coarse_span_s > 7 * 86400.0
    assert heard == []  # nothing told to prune


def test_a_wrong_field_leaves_its_rules_and_lists_other_parts_in_force() -> None:
    """One wrong field reset its whole rule, one wrong destination every destination (alerts no
    longer pushed anywhere), one wrong index every hidden GPU; the note named the wrong one alone."""
    settings, notes = from_toml(
        "hidden_gpus = [0, 2, -1]\n"
        "[alerts.temperature]\nwarning_enter = 85.0\nhold_s = 'long'\n"
        '[[push]]\nkind = "ntfy"\nurl = "https://ntfy.sh/mine"\n'
        '[[push]]\nkind = "ntfy"\nurl = "ntfy.sh/typo"\n'
    )
    temperature = thresholds(settings.alerts.rules["temperature"])
    assert (
        temperature.warning_enter == 85.0
        and temperature.hold_s == thresholds(Settings().alerts.rules["temperature"]).hold_s
    )
    assert [d.url for d in settings.push] == ["https://ntfy.sh/mine"]
    assert settings.hidden_gpus == (0, 2)
    said = "; ".join(notes)
    assert "alerts.temperature.hold_s should be a number: its default is in use" in said
    assert "push[2]: url should be an http:// or https:// URL without spaces" in said
    assert "hidden_gpus should be a list of GPU indices" in said


def test_a_hand_edit_that_cannot_be_used_is_not_saved_over_with_a_default(tmp_path: Path) -> None:
    """A typo typed while the tray ran, then any change in the tray: the value was saved at its
    default (a month of history pruned to a week, a push destination deleted), "kept" said."""
    path = tmp_path / "config.toml"
    store = SettingsStore(path)
    store.save(Settings(history_coarse_days=60))
    model = SettingsModel(store.load()[0], store)
    heard: list[int] = []
    model.on_change("history_coarse_days", lambda new: heard.append(new.history_coarse_days))
    path.write_text(path.read_text().replace("history_coarse_days = 60", "history_coarse_days = '60d'"))
    typed = path.read_bytes()
    said = model.change(replace(model.current, notifications=False))
    assert said.endswith(
        "those changes are kept but for history_coarse_days, which could not be used there and stay as they"
        " were; the file as it was is kept beside it."
    )
    assert model.current.history_coarse_days == 60 and heard == []
    assert SettingsStore(path).load()[0].history_coarse_days == 60
    (kept,) = tmp_path.glob("config.toml.kept-*")
    assert kept.read_bytes() == typed


def test_an_override_made_here_over_a_rule_edited_elsewhere_carries_only_its_own_change(tmp_path: Path) -> None:
    """It pinned the rule's old thresholds as its own: GPU 0 warned at 83 where the rest warned at 85."""
    path = tmp_path / "config.toml"
    store = SettingsStore(path)
    store.save(Settings())
    model = SettingsModel(store.load()[0], store)
    path.write_text(path.read_text().replace("warning_enter = 83.0", "warning_enter = 85.0", 1))
    current = model.current.alerts
    mine = replace(thresholds(current.rules["temperature"]), critical_enter=95.0)
    said = model.change(replace(model.current, alerts=replace(current, overrides={0: {"temperature": mine}})))
    assert said.endswith("those changes are kept.")  # (no conflict: only the rule changed there)
    on_disk = SettingsStore(path).load()[0].alerts
    assert thresholds(on_disk.for_gpu(0, "temperature")).warning_enter == 85.0
    assert thresholds(on_disk.for_gpu(0, "temperature")).critical_enter == 95.0
    assert thresholds(on_disk.for_gpu(1, "temperature")).warning_enter == 85.0


def test_a_settings_folder_that_cannot_be_made_is_a_sentence_not_an_exception(tmp_path: Path) -> None:
    """The lock's folder made before the save, outside its error handling: the tray's change
    raised out of its slot, and was lost, where the save said why before."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the settings folder would be")
    model = config.SettingsModel(config.Settings(), config.SettingsStore(blocker / "trayvml" / "config.toml"))
    said = model.change(replace(model.current, notifications=False))
    assert said.startswith(f"Could not save the settings to {blocker / 'trayvml' / 'config.toml'}:")
    assert model.current.notifications is False  # in force, though not saved
