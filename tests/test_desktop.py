"""trayvml as a user meets it: a real process on a virtual screen with a real tray host.

Needs Xvfb, D-Bus and the tray hosts (scripts/setup --test installs them). Where they are
missing these tests are skipped with the reason, except in CI, where they must run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.desktop import AppProcess, DesktopStack, running_desktop, wait_until
from tests.helpers import shown_by_dbusmenu_host

pytestmark = pytest.mark.desktop
SPEC = "--simulate=training:gpus=h100*2+rtx4090+laptop,at=600"


@pytest.fixture
def sni_desktop() -> Iterator[DesktopStack]:
    yield from running_desktop("sni", notifications=False)


@pytest.fixture
def xembed_desktop() -> Iterator[DesktopStack]:
    yield from running_desktop("xembed", notifications=False)


@pytest.fixture
def bare_desktop() -> Iterator[DesktopStack]:
    yield from running_desktop(None, notifications=False)


@pytest.fixture
def launch() -> Iterator:
    started: list[AppProcess] = []

    def start(
        stack: DesktopStack, *args: str, env: dict[str, str] | None = None, command: list[str] | None = None
    ) -> AppProcess:
        app = AppProcess(stack, *args, env=env, command=command)
        started.append(app)
        return app

    yield start
    for app in started:
        app.stop()


def window_names(stack: DesktopStack) -> list[str]:
    tree = stack.run("xwininfo", "-root", "-tree").stdout
    return re.findall(r'^\s*0x[0-9a-f]+ "([^"]*)"', tree, re.MULTILINE)


# ---- StatusNotifierItem (KDE, GNOME with AppIndicator, most panels) ----


def _registered_items(stack: DesktopStack) -> list[str]:
    return stack.sni_items()


def _menu_entries(stack: DesktopStack, service: str) -> dict[str, int]:
    bus_name = service.partition("/")[0]
    menu_path = re.search(r"objectpath '([^']+)'", stack.item_property(service, "Menu"))
    assert menu_path, "the item exports no menu"
    # As a tray host does before it shows the menu: the app fills the menu's texts then.
    stack.gdbus_call(bus_name, menu_path.group(1), "com.canonical.dbusmenu.AboutToShow", "0")
    layout = stack.gdbus_call(bus_name, menu_path.group(1), "com.canonical.dbusmenu.GetLayout", "0", "-1", "[]")
    entries = {}
    for item_id, props in re.findall(r"<\((\d+), \{([^}]*)\}", layout):
        label = re.search(r"'label': <'([^']*)'>", props)
        if label:
            entries[shown_by_dbusmenu_host(label.group(1))] = int(item_id)  # as the tray host shows it
    return entries


def _click(stack: DesktopStack, service: str, item_id: int) -> None:
    bus_name = service.partition("/")[0]
    menu_path = re.search(r"objectpath '([^']+)'", stack.item_property(service, "Menu"))
    assert menu_path is not None
    stack.gdbus_call(bus_name, menu_path.group(1), "com.canonical.dbusmenu.Event", str(item_id), "clicked", "<0>", "0")


def _icon_pixels(stack: DesktopStack, service: str, size: int = 22) -> list[list[int]]:
    """The item's IconPixmap of ``size`` px as (a, r, g, b) per pixel (network byte order; gdbus
    writes "byte" before the first array only); empty where there is none."""
    reply = stack.item_property(service, "IconPixmap")
    sizes = {int(w): data for w, _, data in re.findall(r"\((\d+), (\d+), \[(?:byte )?([^\]]*)\]", reply)}
    values = [int(v, 16) for v in re.findall(r"0x([0-9a-f]{2})", sizes.get(size, ""))]
    return [values[k : k + 4] for k in range(0, len(values), 4)]


def _icon_has_green_bars(stack: DesktopStack, service: str) -> bool:
    """The 22 px icon (the usual tray size, a bar per GPU below its number) shows the 'normal' green."""
    return any(a > 200 and 0x60 < r < 0x90 and g > 0xA0 and b < 0x30 for a, r, g, b in _icon_pixels(stack, service))


def test_sni_tray_item_shows_the_simulated_gpus(sni_desktop: DesktopStack, launch, tmp_path: Path) -> None:
    app = launch(sni_desktop, SPEC)
    wait_until(lambda: bool(_registered_items(sni_desktop)), what="the tray item to register")
    (service,) = _registered_items(sni_desktop)
    wait_until(lambda: "H100" in sni_desktop.item_property(service, "ToolTip"), what="the first sample")
    tooltip = sni_desktop.item_property(service, "ToolTip")
    assert "simulated GPUs (training)" in tooltip
    for line in ("0 H100 ", "1 H100 ", "2 RTX 4090 ", "3 RTX 4070 Laptop "):
        assert line in tooltip
    assert "'Active'" in sni_desktop.item_property(service, "Status")
    assert _icon_has_green_bars(sni_desktop, service)  # training at 600 s: busy GPUs, normal level
    sni_desktop.screenshot(tmp_path / "tray.png")
    code, err = app.stop()
    assert code == 0 and "Traceback" not in err


def test_at_200_percent_the_tray_item_offers_icons_drawn_at_twice_the_pixels(sni_desktop: DesktopStack, launch) -> None:
    """At QT_SCALE_FACTOR=2 the item's pixmaps are drawn for the doubled sizes (22 px as 44), so a
    tray host that scales picks a sharp one. (gtk-sni-tray here picks by its unscaled size.)"""
    launch(sni_desktop, SPEC, env={"QT_SCALE_FACTOR": "2"})
    wait_until(lambda: bool(_registered_items(sni_desktop)), what="the tray item to register")
    (service,) = _registered_items(sni_desktop)
    wait_until(lambda: _icon_has_green_bars(sni_desktop, service), what="the first sample in the icon")
    sizes = {int(w) for w, _ in re.findall(r"\((\d+), (\d+), \[", sni_desktop.item_property(service, "IconPixmap"))}
    assert {44, 64} <= sizes, sizes  # 22 and 32 logical pixels at 2x


def test_on_an_icon_only_host_a_lost_gpu_turns_the_whole_icon_red(sni_desktop: DesktopStack, launch) -> None:
    from collections import Counter

    launch(sni_desktop, "--simulate=idle:gpus=h100*2,lost=1@0", env={"TRAYVML_TRAY_WAIT_S": "1"})
    wait_until(lambda: bool(_registered_items(sni_desktop)), what="the tray item to register")
    (service,) = _registered_items(sni_desktop)
    wait_until(lambda: "lost" in sni_desktop.item_property(service, "ToolTip"), what="the lost GPU")
    opaque = Counter(tuple(p[1:]) for p in _icon_pixels(sni_desktop, service) if p[0] == 255)
    (tile, count), *_ = opaque.most_common(1)
    assert tile == (0xE5, 0x48, 0x4D) and count > 22 * 22 / 3  # the critical red, most of the icon
    assert any(r > 0xF0 and g > 0xF0 and b > 0xF0 for r, g, b in opaque)  # and the white badge on it


def test_sni_menu_actions_work(sni_desktop: DesktopStack, launch) -> None:
    app = launch(sni_desktop, SPEC)
    wait_until(lambda: bool(_registered_items(sni_desktop)), what="the tray item to register")
    (service,) = _registered_items(sni_desktop)
    wait_until(lambda: "0 H100 " in " ".join(_menu_entries(sni_desktop, service)), what="GPU entries in the menu")
    entries = _menu_entries(sni_desktop, service)
    for label in ("Show graphs", "Pause alerts", "Start at login", "Settings…", "Quit"):
        assert label in entries, f"{label!r} missing from {sorted(entries)}"
    assert any(label.startswith("Copy CUDA_VISIBLE_DEVICES") for label in entries)
    _click(sni_desktop, service, entries["Show graphs"])
    wait_until(
        lambda: any(n.startswith("trayvml — 4 GPUs — SIMULATED") for n in window_names(sni_desktop)),
        what="the graph window",
    )
    _click(sni_desktop, service, entries["Quit"])
    app.process.wait(15)
    assert app.process.returncode == 0


def test_the_app_speaks_the_language_of_the_locale(sni_desktop: DesktopStack, launch) -> None:
    app = launch(sni_desktop, SPEC, env={"LANGUAGE": "zh_CN", "LANG": "zh_CN.UTF-8"})
    wait_until(lambda: bool(_registered_items(sni_desktop)), what="the tray item to register")
    (service,) = _registered_items(sni_desktop)
    wait_until(lambda: "0 H100 " in " ".join(_menu_entries(sni_desktop, service)), what="GPU entries in the menu")
    entries = _menu_entries(sni_desktop, service)
    for label in ("显示图表", "暂停告警", "登录时启动", "设置…", "退出", "模拟 GPU（training）"):
        assert label in entries, f"{label!r} missing from {sorted(entries)}"
    assert "模拟 GPU（training）" in sni_desktop.item_property(service, "ToolTip")
    _click(sni_desktop, service, entries["显示图表"])
    wait_until(
        lambda: "trayvml — 4 个 GPU — 模拟（training）" in window_names(sni_desktop), what="the graph window in Chinese"
    )
    _click(sni_desktop, service, entries["退出"])
    app.process.wait(15)
    assert app.process.returncode == 0


def test_a_second_start_brings_the_first_forward(sni_desktop: DesktopStack, launch) -> None:
    launch(sni_desktop, SPEC)
    wait_until(lambda: bool(_registered_items(sni_desktop)), what="the tray item to register")
    second = subprocess.run(
        [sys.executable, "-m", "trayvml", SPEC],
        env=sni_desktop.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 0 and "already running" in second.stderr
    wait_until(lambda: any(n.startswith("trayvml — 4 GPUs") for n in window_names(sni_desktop)), what="the window")
    assert len(_registered_items(sni_desktop)) == 1


def _visible_windows(stack: DesktopStack, name: str) -> int:
    found = stack.run("xdotool", "search", "--onlyvisible", "--name", name)
    return len(found.stdout.split())


def test_the_menu_launcher_starts_the_tray_then_brings_its_window_forward(
    sni_desktop: DesktopStack, launch, tmp_path: Path
) -> None:
    """As a user does from the application menu: the Exec line that `trayvml desktop install` wrote."""
    env = {**sni_desktop.env, "XDG_DATA_HOME": str(tmp_path / "data"), "TRAYVML_SIMULATE": SPEC.partition("=")[2]}
    subprocess.run([sys.executable, "-m", "trayvml", "desktop", "install"], env=env, check=True, timeout=30)
    entry = (tmp_path / "data/applications/trayvml.desktop").read_text()
    (exec_line,) = (line[5:] for line in entry.splitlines() if line.startswith("Exec="))
    launcher = shlex.split(exec_line)  # no field codes, and its quoting is a subset of the shell's

    first = launch(sni_desktop, env=env, command=launcher)
    wait_until(lambda: bool(_registered_items(sni_desktop)), what="the tray item to register")
    assert _visible_windows(sni_desktop, "trayvml — ") == 0  # the tray app starts to the tray
    for _ in range(2):  # the second time after the window was hidden again from the tray icon
        again = subprocess.run(launcher, env=env, capture_output=True, text=True, timeout=30)
        assert again.returncode == 0 and "already running" in again.stderr
        wait_until(lambda: _visible_windows(sni_desktop, "trayvml — 4 GPUs") == 1, what="the window in front")
        (service,) = _registered_items(sni_desktop)
        bus_name = service.partition("/")[0]
        sni_desktop.gdbus_call(bus_name, "/StatusNotifierItem", "org.kde.StatusNotifierItem.Activate", "0", "0")
        wait_until(lambda: _visible_windows(sni_desktop, "trayvml — 4 GPUs") == 0, what="a click to hide it")
    assert len(_registered_items(sni_desktop)) == 1
    code, err = first.stop()
    assert code == 0 and "Traceback" not in err


@pytest.fixture
def other_display(sni_desktop: DesktopStack) -> Iterator[DesktopStack]:
    """A second graphical session of the same user: same runtime and config folders, another display."""
    for stack in running_desktop("sni", notifications=False):
        stack.env["XDG_RUNTIME_DIR"] = sni_desktop.env["XDG_RUNTIME_DIR"]
        stack.env["XDG_CONFIG_HOME"] = sni_desktop.env["XDG_CONFIG_HOME"]
        yield stack


def test_a_second_display_of_the_same_user_gets_its_own_tray(
    sni_desktop: DesktopStack, other_display: DesktopStack, launch
) -> None:
    launch(sni_desktop, SPEC)
    wait_until(lambda: bool(_registered_items(sni_desktop)), what="the first tray item")
    second = launch(other_display, SPEC)
    wait_until(lambda: bool(_registered_items(other_display)), what="the second display's own tray item")
    assert second.process.poll() is None  # running, not handed over to the first display's trayvml
    assert len(_registered_items(sni_desktop)) == 1


def test_ctrl_c_quits_cleanly(sni_desktop: DesktopStack, launch) -> None:
    app = launch(sni_desktop, SPEC)
    wait_until(lambda: bool(_registered_items(sni_desktop)), what="the tray item to register")
    code, err = app.stop()  # SIGINT, as Ctrl-C in the terminal sends
    assert code == 0 and "Traceback" not in err


# ---- XEmbed (older panels) ----


def test_xembed_tray_embeds_the_icon(xembed_desktop: DesktopStack, launch, tmp_path: Path) -> None:
    from PySide6.QtGui import QImage

    launch(xembed_desktop, SPEC)
    found: list[tuple[int, int, int, int]] = []

    def embedded() -> bool:
        """A window named trayvml inside trayer's panel window; remembers where it is."""
        lines = xembed_desktop.run("xwininfo", "-root", "-tree").stdout.splitlines()
        for k, line in enumerate(lines):
            if '"panel": ("panel" "trayer")' in line:
                depth = len(line) - len(line.lstrip())
                for inner in lines[k + 1 :]:
                    if inner.strip().startswith("0x") and len(inner) - len(inner.lstrip()) <= depth:
                        break  # left the panel's subtree
                    where = re.search(r'"trayvml".*\s(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)', inner)
                    if where:
                        found.append(tuple(int(v) for v in where.groups()))  # type: ignore[arg-type]
                        return True
        return False

    wait_until(embedded, what="the icon inside trayer's panel")

    def icon_is_drawn() -> bool:
        embedded()  # trayer may move or resize the icon after embedding it: look where it is now
        width, height, x, y = found[-1]
        image = QImage(str(xembed_desktop.screenshot(tmp_path / "xembed.png")))
        pixels = [
            image.pixelColor(i, j)
            for i in range(max(0, x - 2), min(image.width(), x + width + 2))
            for j in range(max(0, y - 2), min(image.height(), y + height + 2))
        ]
        return any(c.green() > 160 and c.red() < 150 and c.blue() < 60 for c in pixels)  # busy, normal: green

    wait_until(icon_is_drawn, timeout_s=30, what="green bars in the embedded icon")


# ---- no tray at all ----


def test_without_a_tray_host_a_summary_window_appears(bare_desktop: DesktopStack, launch) -> None:
    app = launch(bare_desktop, SPEC, env={"TRAYVML_TRAY_WAIT_S": "1"})
    wait_until(lambda: "trayvml" in window_names(bare_desktop), what="the summary window")
    code, err = app.stop()
    assert code == 0
    assert "no system tray found; showing a summary window instead" in err
    assert err.count("no system tray found") == 1  # said once


def test_no_display_is_a_sentence_not_a_crash() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    result = subprocess.run(
        [sys.executable, "-m", "trayvml", "--simulate"], env=env, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 4
    assert "no graphical desktop was found" in result.stderr and "trayvml snapshot" in result.stderr
    assert "Traceback" not in result.stderr and "Aborted" not in result.stderr


def test_an_unreachable_display_is_a_sentence_too() -> None:
    env = {**os.environ, "DISPLAY": ":9999"}
    env.pop("QT_QPA_PLATFORM", None)
    result = subprocess.run(
        [sys.executable, "-m", "trayvml", "--simulate"], env=env, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 4 and "no graphical desktop was found" in result.stderr
