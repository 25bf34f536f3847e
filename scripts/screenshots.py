"""Screenshots of trayvml on a virtual screen with a real tray host: tray, menu, window per range.

    .venv/bin/python scripts/screenshots.py [OUT_DIR] [--spec SPEC]
    .venv/bin/python scripts/screenshots.py [OUT_DIR] --offscreen [--spec SPEC]
    .venv/bin/python scripts/screenshots.py [OUT_DIR] --lang zh_CN   (either way, in that language)
    .venv/bin/python scripts/screenshots.py out/screenshots-2x --scale 2    # a HiDPI screen at 200 %

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


def use_language(qt, language: str) -> None:
    """The app's translators for ``language`` ("" or "system": the locale's), as run_app installs them."""
    from trayvml.core import i18n
    from trayvml.ui.translation import install_translators

    qt._translators = install_translators(qt, i18n.resolve(language or "system"))


def file_name(text: str, fallback: str) -> str:
    """A tab's name as a file name: ASCII, or the fallback (a translated tab's name is not)."""
    name = text.lower().replace(" ", "-")
    return name if name.isascii() else fallback


def shoot(stack: DesktopStack, out: Path, spec_text: str, language: str = "") -> None:
    """On a ``stack.scale`` screen: positions below are logical pixels, crops and clicks scaled to the screen's."""
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

    k = stack.scale

    def crop(width: int, height: int, x: int, y: int) -> str:
        return f"{width * k}x{height * k}+{x * k}+{y * k}"

    stack.screenshot(out / "tray.png", crop=crop(260, 40, 1020, 0))
    # The menu as the tray host draws it from dbusmenu, after a right click on the icon: Qt's own
    # popup of the same menu would show the labels escaped for dbusmenu ("CUDA__VISIBLE…").
    clicker = subprocess.Popen(["xdotool", "mousemove", str(1265 * k), str(15 * k), "click", "3"], env=stack.env)
    pump(1500)
    clicker.wait(10)
    stack.screenshot(out / "menu.png", crop=crop(560, 420, 720, 0))
    subprocess.run(["xdotool", "key", "Escape"], env=stack.env, check=False)
    subprocess.run(
        ["xdotool", "mousemove", str(640 * k), str(700 * k)], env=stack.env, check=False
    )  # no tooltip over later shots
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
    assert app.summary is not None
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
    stack.screenshot(out / "notification.png", crop=crop(520, 200, 760, 30))  # room for a wrapped body

    app.show_settings()
    assert app.settings_dialog is not None
    app.settings_dialog.move(60, 60)
    tabs = app.settings_dialog.findChild(QTabWidget)
    assert tabs is not None
    rules = app.settings_dialog.rule_grid  # the Alerts page: the README shows its thresholds
    tabs.setCurrentIndex(next(i for i in range(tabs.count()) if (page := tabs.widget(i)) and page.isAncestorOf(rules)))
    pump(800)
    stack.screenshot(
        out / "settings.png", crop=crop(app.settings_dialog.width() + 40, app.settings_dialog.height() + 80, 40, 40)
    )
    tabs.setCurrentIndex(0)
    pump(500)
    stack.screenshot(
        out / "settings-general.png",
        crop=crop(app.settings_dialog.width() + 40, app.settings_dialog.height() + 80, 40, 40),
    )
    qt.quit()


def feed_twelve_hours(app, source, clock) -> None:
    """12 h of history: a sample every 5 s for most of it (one per bucket of the 5 s tier), then
    every second for the last 15 minutes through the app, the way the sampler would have fed it."""
    end_s = clock.now_s() + 12 * 3600
    while clock.now_s() < end_s - 900:
        app.history.append(source.sample())
        clock.advance_s(5)
    for _ in range(900):
        app.on_sample(source.sample())
        clock.advance_s(1)


def dark_palette():
    """A dark theme as a desktop would set it: Fusion with dark colours."""
    from PySide6.QtGui import QColor, QPalette

    palette = QPalette()
    for role, colour in (
        (QPalette.ColorRole.Window, "#2b2f36"),
        (QPalette.ColorRole.WindowText, "#e6e6e6"),
        (QPalette.ColorRole.Base, "#1e2127"),
        (QPalette.ColorRole.AlternateBase, "#262a31"),
        (QPalette.ColorRole.Text, "#e6e6e6"),
        (QPalette.ColorRole.Button, "#353a42"),
        (QPalette.ColorRole.ButtonText, "#e6e6e6"),
        (QPalette.ColorRole.Highlight, "#3d7bd9"),
        (QPalette.ColorRole.HighlightedText, "#ffffff"),
        (QPalette.ColorRole.PlaceholderText, "#9aa0a8"),
        (QPalette.ColorRole.ToolTipBase, "#2b2f36"),
        (QPalette.ColorRole.ToolTipText, "#e6e6e6"),
    ):
        palette.setColor(role, QColor(colour))
    return palette


def shoot_offscreen(
    out: Path, spec_text: str, size: tuple[int, int] = (1280, 800), dark: bool = False, language: str = ""
) -> None:
    from PySide6.QtWidgets import QApplication

    from trayvml.core.clock import ManualClock
    from trayvml.nvml.sim import parse_spec
    from trayvml.source import Source
    from trayvml.ui.app import App

    qt = QApplication.instance() or QApplication([])
    assert isinstance(qt, QApplication)
    use_language(qt, language)
    if dark:
        qt.setStyle("Fusion")
        qt.setPalette(dark_palette())
    clock = ManualClock(1_800_000_000.0)
    spec = parse_spec(spec_text)
    source = Source(spec, clock, host=True)
    app = App(spec, clock=clock, tray_wait_s=3600)
    feed_twelve_hours(app, source, clock)
    window = app.ensure_window()
    window.resize(*size)
    window.set_range(3600)
    window.show()
    shoot_hover(window, out / "offscreen-hover.png")
    for tab in range(window.tabs.count()):
        window.tabs.setCurrentIndex(tab)
        name = file_name(window.tabs.tabText(tab), f"tab{tab}")
        pages = [window.gpu_page] if tab == 0 else []
        for page in pages:
            assert page is not None
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


def shoot_hover(window, path: Path) -> None:
    """The readout box as the cursor would bring it up: near the right edge of the second panel."""
    from PySide6.QtCore import QPointF

    window.refresh()
    page = window.gpu_page
    panel = page.panels[1]
    (x0, x1), (y0, y1) = panel.plot.getViewBox().viewRange()
    position = panel.plot.getViewBox().mapViewToScene(QPointF(x1 - (x1 - x0) * 0.05, (y0 + y1) / 2))
    page.layout_widget.scene().sigMouseMoved.emit(position)
    window.grab().save(str(path))
    page.hide_crosshair()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="out/screenshots")
    parser.add_argument("--spec", default="thermal:gpus=h100*2+rtx4090+laptop")
    parser.add_argument("--offscreen", action="store_true", help="the graph window's pages only, no desktop")
    parser.add_argument("--lang", default="", help="en or zh_CN (default: the locale's, as the app)")
    parser.add_argument("--scale", type=int, choices=(1, 2, 3), default=1, help="screen scale: 2 is 200 %% (HiDPI)")
    parser.add_argument("--size", default="1280x800", help="the window's size offscreen, WIDTHxHEIGHT")
    parser.add_argument("--dark", action="store_true", help="offscreen in a dark theme")
    args = parser.parse_args()
    if args.lang:  # the desktop's programs (the notification daemon) and the app alike
        os.environ["LANGUAGE"] = args.lang
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.offscreen:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        if args.scale != 1:
            os.environ["QT_SCALE_FACTOR"] = str(args.scale)
        width, height = (int(n) for n in args.size.split("x"))
        shoot_offscreen(out, args.spec, (width, height), args.dark, args.lang)
        print(f"screenshots in {out}/")
        sys.exit(0)
    with DesktopStack("sni", notifications=True, scale=args.scale) as stack:
        os.environ.update(stack.env)
        shoot(stack, out, args.spec, args.lang)
    print(f"screenshots in {out}/")
