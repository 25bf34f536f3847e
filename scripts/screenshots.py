"""Screenshots of trayvml on a virtual screen with a real tray host: tray, menu, window per range.

    .venv/bin/python scripts/screenshots.py [OUT_DIR] [--spec SPEC]
    .venv/bin/python scripts/screenshots.py [OUT_DIR] --offscreen [--spec SPEC]
    .venv/bin/python scripts/screenshots.py [OUT_DIR] --lang zh_CN   (either way, in that language)

Twelve simulated hours are fed through the app first (the same code path live samples take),
so that every range has something to show. ``--offscreen`` needs no desktop: it grabs each page
of the graph window at 1280×800 (the GPU page at its top, middle and bottom). Look at every
picture it writes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.desktop import DesktopStack  # noqa: E402


def use_language(qt, language: str) -> None:  # type: ignore[no-untyped-def]
    """The app's translators for ``language`` ("" or "system": the locale's), as run_app installs them."""
    from trayvml.core import i18n
    from trayvml.ui.translation import install_translators

    qt._translators = install_translators(qt, i18n.resolve(language or "system"))


def file_name(text: str, fallback: str) -> str:
    """A tab's name as a file name: ASCII, or the fallback (a translated tab's name is not)."""
    name = text.lower().replace(" ", "-")
    return name if name.isascii() else fallback


def shoot(stack: DesktopStack, out: Path, spec_text: str, language: str = "") -> None:
    from PySide6.QtWidgets import QApplication, QTabWidget

    from trayvml.core.clock import ManualClock
    from trayvml.nvml.sim import parse_spec
    from trayvml.source import Source
    from trayvml.ui.app import App
    from trayvml.ui.window import RANGES_S

    qt = QApplication([])
    qt.setApplicationName("trayvml")
    use_language(qt, language)
    clock = ManualClock(1_800_000_000.0)
    spec = parse_spec(spec_text)
    source = Source(spec, clock)
    app = App(spec, clock=clock, tray_wait_s=0)
    app._check_tray()

    def pump(ms: int = 300) -> None:
        from PySide6.QtCore import QEventLoop, QTimer

        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    feed_twelve_hours(app, source, clock)
    pump(1500)

    stack.screenshot(out / "tray.png", crop="260x40+1020+0")
    # The menu as the tray host draws it from dbusmenu, after a right click on the icon: Qt's own
    # popup of the same menu would show the labels escaped for dbusmenu ("CUDA__VISIBLE…").
    clicker = subprocess.Popen(["xdotool", "mousemove", "1265", "15", "click", "3"], env=stack.env)
    pump(1500)
    clicker.wait(10)
    stack.screenshot(out / "menu.png", crop="560x420+720+0")
    subprocess.run(["xdotool", "key", "Escape"], env=stack.env, check=False)
    subprocess.run(["xdotool", "mousemove", "640", "700"], env=stack.env, check=False)  # no tooltip over later shots
    pump(300)

    window = app.ensure_window()
    window.resize(1240, 760)
    window.move(20, 36)
    app.show_window()
    pump(800)
    for label, seconds in RANGES_S:
        window.set_range(seconds)
        pump(500)
        stack.screenshot(out / f"window-{label.replace(' ', '')}.png")
    window.set_range(3600)
    for tab in range(1, window.tabs.count()):
        window.tabs.setCurrentIndex(tab)
        pump(500)
        name = file_name(window.tabs.tabText(tab), f"tab{tab}")
        stack.screenshot(out / f"window-{name}.png")
    window.tabs.setCurrentIndex(0)
    window.hide()
    app._show_summary()
    app.summary.move(400, 200)
    pump(800)
    stack.screenshot(out / "summary.png")
    app.summary.hide()

    # A real notification through dunst: GPU 0 of the thermal scenario crossing 90 °C.
    app._use_notifier(app._make_notifier())
    hot = Source(parse_spec(spec_text + ",start=380"), clock)
    for _ in range(12):
        app.on_sample(hot.sample())
        clock.advance_s(5)
    pump(1500)
    stack.screenshot(out / "notification.png", crop="520x200+760+30")  # room for a wrapped body

    app.show_settings()
    assert app.settings_dialog is not None
    app.settings_dialog.move(60, 60)
    app.settings_dialog.findChild(QTabWidget).setCurrentIndex(1)
    pump(800)
    stack.screenshot(
        out / "settings.png", crop=f"{app.settings_dialog.width() + 40}x{app.settings_dialog.height() + 80}+40+40"
    )
    app.settings_dialog.findChild(QTabWidget).setCurrentIndex(0)
    pump(500)
    stack.screenshot(
        out / "settings-general.png",
        crop=f"{app.settings_dialog.width() + 40}x{app.settings_dialog.height() + 80}+40+40",
    )
    qt.quit()


def feed_twelve_hours(app, source, clock) -> None:  # type: ignore[no-untyped-def]
    """12 h of history: a sample every 5 s for most of it (one per bucket of the 5 s tier), then
    every second for the last 15 minutes through the app, the way the sampler would have fed it."""
    end_s = clock.now_s() + 12 * 3600
    while clock.now_s() < end_s - 900:
        app.history.append(source.sample())
        clock.advance_s(5)
    for _ in range(900):
        app.on_sample(source.sample())
        clock.advance_s(1)


def shoot_offscreen(out: Path, spec_text: str, language: str = "") -> None:
    from PySide6.QtWidgets import QApplication

    from trayvml.core.clock import ManualClock
    from trayvml.nvml.sim import parse_spec
    from trayvml.source import Source
    from trayvml.ui.app import App

    qt = QApplication([])
    use_language(qt, language)
    clock = ManualClock(1_800_000_000.0)
    spec = parse_spec(spec_text)
    source = Source(spec, clock, host=True)
    app = App(spec, clock=clock, tray_wait_s=3600)
    feed_twelve_hours(app, source, clock)
    window = app.ensure_window()
    window.resize(1280, 800)
    window.set_range(3600)
    window.show()
    for tab in range(window.tabs.count()):
        window.tabs.setCurrentIndex(tab)
        name = file_name(window.tabs.tabText(tab), f"tab{tab}")
        pages = [window.gpu_page] if tab == 0 else []
        for page in pages:
            bar = page.verticalScrollBar()
            for where, value in (("top", 0), ("middle", bar.maximum() // 2), ("bottom", bar.maximum())):
                bar.setValue(value)
                window.refresh()
                window.grab().save(str(out / f"offscreen-{name}-{where}.png"))
        if not pages:
            window.refresh()
            window.grab().save(str(out / f"offscreen-{name}.png"))
    window.hide()
    app.stop()
    source.close()
    qt.quit()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="out/screenshots")
    parser.add_argument("--spec", default="thermal:gpus=h100*2+rtx4090+laptop")
    parser.add_argument("--offscreen", action="store_true", help="the graph window's pages only, no desktop")
    parser.add_argument("--lang", default="", help="en or zh_CN (default: the locale's, as the app)")
    args = parser.parse_args()
    if args.lang:  # the desktop's programs (the notification daemon) and the app alike
        os.environ["LANGUAGE"] = args.lang
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.offscreen:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        shoot_offscreen(out, args.spec, args.lang)
        print(f"screenshots in {out}/")
        sys.exit(0)
    with DesktopStack("sni", notifications=True) as stack:
        os.environ.update(stack.env)
        shoot(stack, out, args.spec, args.lang)
    print(f"screenshots in {out}/")
