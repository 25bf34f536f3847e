"""`trayvml desktop install|uninstall`: the launcher and icons where freedesktop desktops look for them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trayvml.assets import ICON_SIZES, resource
from trayvml.cli import EXIT_USAGE, main
from trayvml.platform import desktop_entry as desktop
from trayvml.platform.autostart import XdgAutostart

ROOT = Path(__file__).resolve().parent.parent


def needs(tool: str) -> None:
    """Skip where ``tool`` is missing, except in CI, where scripts/setup --test installs it."""
    if shutil.which(tool) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{tool} must be installed in CI (scripts/setup --test)")
        pytest.skip(f"{tool} not installed (scripts/setup --test installs it)")


def tree(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    base = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(base))
    return base


def test_install_puts_the_launcher_and_every_icon_size_where_the_specs_say(data_home: Path) -> None:
    assert main(["desktop", "install"]) == 0
    expected = {"applications/trayvml.desktop", "icons/hicolor/scalable/apps/trayvml.svg"}
    expected |= {f"icons/hicolor/{n}x{n}/apps/trayvml.png" for n in ICON_SIZES}
    files = {p for p in tree(data_home) if (data_home / p).is_file()}
    assert files == expected | {"trayvml/desktop-files.json"}
    for n in ICON_SIZES:
        png = (data_home / f"icons/hicolor/{n}x{n}/apps/trayvml.png").read_bytes()
        assert png == resource(f"trayvml-{n}.png").read_bytes()
        assert int.from_bytes(png[16:20], "big") == n  # the PNG's width matches its folder
    entry = (data_home / "applications/trayvml.desktop").read_text()
    assert f"Exec={sys.executable} -m trayvml\n" in entry  # this installation, not whatever is on PATH
    assert "Icon=trayvml\n" in entry


def test_what_install_writes_validates(data_home: Path) -> None:
    needs("desktop-file-validate")
    desktop.install(config_path="/home/someone/my settings/trayvml $HOME.toml")  # spaces and $ to quote
    result = subprocess.run(
        ["desktop-file-validate", str(data_home / "applications/trayvml.desktop")], capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout == "", result.stdout


def test_the_icon_named_by_launcher_and_autostart_resolves_in_the_icon_theme(data_home: Path, tmp_path: Path) -> None:
    """A freedesktop icon lookup (pyxdg's), in a process whose data folders are only the test's and the system's."""
    desktop.install()
    XdgAutostart(tmp_path / "config").enable()
    autostart_entry = (tmp_path / "config/autostart/trayvml.desktop").read_text()
    (icon_name,) = (line[5:] for line in autostart_entry.splitlines() if line.startswith("Icon="))
    # The hicolor theme's index.theme comes from the system (hicolor-icon-theme); a test copy keeps
    # the lookup independent of this machine.
    system = tmp_path / "system"
    (system / "icons/hicolor").mkdir(parents=True)
    (system / "icons/hicolor/index.theme").write_text(HICOLOR_INDEX)
    lookup = "from xdg.IconTheme import getIconPath; import sys; print(getIconPath(sys.argv[1], int(sys.argv[2])))"
    env = {**os.environ, "XDG_DATA_HOME": str(data_home), "XDG_DATA_DIRS": str(system), "HOME": str(tmp_path)}
    for size in (16, 48, 256):
        found = subprocess.run(
            [sys.executable, "-c", lookup, icon_name, str(size)], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        assert found == str(data_home / f"icons/hicolor/{size}x{size}/apps/trayvml.png")
    desktop.uninstall()
    gone = subprocess.run(
        [sys.executable, "-c", lookup, icon_name, "48"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert gone == "None"


# The parts of hicolor-icon-theme's index.theme that the sizes above need.
HICOLOR_INDEX = """[Icon Theme]
Name=Hicolor
Comment=Fallback icon theme
Hidden=true
Directories=16x16/apps,48x48/apps,256x256/apps,scalable/apps

[16x16/apps]
Size=16
Context=Applications
Type=Threshold

[48x48/apps]
Size=48
Context=Applications
Type=Threshold

[256x256/apps]
Size=256
Context=Applications
Type=Threshold

[scalable/apps]
MinSize=1
Size=128
MaxSize=256
Context=Applications
Type=Scalable
"""


def test_uninstall_removes_exactly_what_install_wrote(data_home: Path) -> None:
    neighbour = data_home / "icons/hicolor/48x48/apps/other-app.png"
    neighbour.parent.mkdir(parents=True)
    neighbour.write_bytes(b"another program's icon")
    before = tree(data_home)
    assert main(["desktop", "install"]) == 0
    assert main(["desktop", "uninstall"]) == 0
    assert tree(data_home) == before  # the folders install made are gone, those that were there stay
    assert neighbour.read_bytes() == b"another program's icon"


def test_uninstall_leaves_a_file_the_user_changed(data_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    desktop.install()
    launcher = data_home / "applications/trayvml.desktop"
    launcher.write_text(launcher.read_text().replace("Name=trayvml", "Name=My GPUs"))
    assert main(["desktop", "uninstall"]) == 0
    assert "Name=My GPUs" in launcher.read_text()
    assert not (data_home / "icons/hicolor/48x48/apps/trayvml.png").exists()
    assert f"Left {launcher} in place" in capsys.readouterr().err


def test_a_second_install_keeps_one_record_and_uninstall_still_clears_it(data_home: Path) -> None:
    desktop.install()
    stale = data_home / "icons/hicolor/1024x1024/apps/trayvml.png"  # as an older trayvml might have written
    manifest = desktop.manifest_path(data_home)
    record = json.loads(manifest.read_text())
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    record["files"][str(stale)] = desktop._digest(b"old")
    record["folders"] += [str(stale.parent.parent), str(stale.parent)]
    manifest.write_text(json.dumps(record))
    desktop.install()
    assert not stale.exists()  # a size this version no longer installs is removed
    desktop.uninstall()
    assert tree(data_home) == set()


def test_uninstall_with_nothing_installed_says_so(data_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["desktop", "uninstall"]) == 0
    assert "Nothing to remove" in capsys.readouterr().err


def test_a_folder_that_cannot_be_written_is_a_sentence(data_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_home.mkdir()
    (data_home / "applications").write_text("a file where the folder should be")
    assert main(["desktop", "install"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("trayvml: Could not write") and err.count("\n") == 1 and "Traceback" not in err


def test_a_broken_manifest_is_a_sentence_and_nothing_is_removed(
    data_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    desktop.install()
    desktop.manifest_path(data_home).write_text("{not json")
    before = tree(data_home)
    assert main(["desktop", "uninstall"]) == EXIT_USAGE
    assert "cannot be read" in capsys.readouterr().err
    assert tree(data_home) == before


def test_an_existing_icon_cache_is_brought_up_to_date(data_home: Path) -> None:
    needs("gtk-update-icon-cache")
    hicolor = data_home / "icons/hicolor"
    hicolor.mkdir(parents=True)
    (hicolor / "index.theme").write_text(HICOLOR_INDEX)
    (hicolor / "48x48/apps").mkdir(parents=True)
    shutil.copy(resource("trayvml-48.png"), hicolor / "48x48/apps/other-app.png")  # another program's icon
    subprocess.run(["gtk-update-icon-cache", "--quiet", str(hicolor)], check=True)
    cache = hicolor / "icon-theme.cache"
    assert b"other-app" in cache.read_bytes() and b"trayvml" not in cache.read_bytes()
    desktop.install()
    assert b"trayvml" in cache.read_bytes()  # else GTK, trusting the old cache, would not find the icon
    desktop.uninstall()
    assert b"other-app" in cache.read_bytes() and b"trayvml" not in cache.read_bytes()


def test_no_cache_is_made_where_there_was_none(data_home: Path) -> None:
    desktop.install()
    assert not (data_home / "icons/hicolor/icon-theme.cache").exists()
    assert not (data_home / "applications/mimeinfo.cache").exists()


def test_a_hung_cache_tool_is_given_up_on(data_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    hung = tools / "gtk-update-icon-cache"
    hung.write_text("#!/bin/sh\nexec sleep 60\n")
    hung.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(desktop, "CACHE_TOOL_WAIT_S", 0.2)
    (data_home / "icons/hicolor").mkdir(parents=True)
    (data_home / "icons/hicolor/icon-theme.cache").write_bytes(b"")
    outcome = desktop.install()
    assert any("did not finish within 0.2 s" in note for note in outcome.notes)
    assert (data_home / "applications/trayvml.desktop").exists()  # the install itself stands


def test_committed_pngs_are_renders_of_the_svg(qapp) -> None:
    """One source for the icon: every PNG is trayvml.svg rendered at its size (scripts/render-icons)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(resource("trayvml.svg")))
    for size in ICON_SIZES:
        fresh = QImage(size, size, QImage.Format.Format_ARGB32)
        fresh.fill(Qt.GlobalColor.transparent)
        painter = QPainter(fresh)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        committed = QImage(str(resource(f"trayvml-{size}.png"))).convertToFormat(QImage.Format.Format_ARGB32)
        assert committed.size() == fresh.size(), f"trayvml-{size}.png"
        worst = max(
            abs(((committed.pixel(x, y) >> shift) & 0xFF) - ((fresh.pixel(x, y) >> shift) & 0xFF))
            for x in range(0, size, max(1, size // 32))
            for y in range(0, size, max(1, size // 32))
            for shift in (0, 8, 16, 24)
        )
        assert worst <= 2, f"trayvml-{size}.png differs from the SVG: rerun scripts/render-icons"


def test_install_leaves_a_launcher_it_did_not_write_or_that_was_changed(
    data_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A launcher of the user's own was written over by install, then removed by uninstall as
    trayvml's; an edited Name= went back at every install."""
    launcher = data_home / "applications/trayvml.desktop"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("[Desktop Entry]\nType=Application\nName=trayvml (my own)\nExec=trayvml --mine\n")
    assert main(["desktop", "install"]) == 0
    assert "Name=trayvml (my own)" in launcher.read_text()
    assert f"{launcher} was not written by trayvml" in capsys.readouterr().err
    assert main(["desktop", "uninstall"]) == 0
    assert "Name=trayvml (my own)" in launcher.read_text()  # not ours: kept
    launcher.unlink()
    desktop.install()
    launcher.write_text(launcher.read_text().replace("Name=trayvml", "Name=My GPUs"))
    desktop.install()  # again, as after an upgrade
    assert "Name=My GPUs" in launcher.read_text()


def test_the_launcher_escapes_a_line_break_and_is_readable_by_the_desktop(data_home: Path) -> None:
    """A line break in the settings path was written raw (desktop-file-validate: "quote which is
    not closed"); every installed file was mode 0600, where the packages install 0644."""
    desktop.install(config_path="/tmp/odd\nname.toml")
    launcher = data_home / "applications/trayvml.desktop"
    assert "\\n" in launcher.read_text() and len(launcher.read_text().splitlines()) == launcher.read_text().count("\n")
    assert launcher.stat().st_mode & 0o777 == 0o644
    if shutil.which("desktop-file-validate"):
        result = subprocess.run(["desktop-file-validate", str(launcher)], capture_output=True, text=True)
        assert result.returncode == 0 and result.stdout == "", result.stdout
