"""Screenshots of the tray icon as a real StatusNotifierItem host draws it, at each tray size.

    .venv/bin/python scripts/tray_screenshots.py [OUT_DIR] [--scale 1|2]

For each panel height (icons of about 16, 22, 24 and 32 px), a light and a dark panel, 100 % and
200 % scaling, it runs trayvml on simulated GPUs in several states (1, 2 and 8 GPUs at work, a
warning, a critical temperature, a lost GPU, a stuck driver) and crops the icon from the screen.
``OUT_DIR/tray-sheet.png`` puts them all side by side, enlarged without smoothing. Look at it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.desktop import AppProcess, DesktopStack, wait_until  # noqa: E402

# (name, --simulate spec, tray metric)
STATES = (
    ("1 GPU", "training:gpus=h100,at=900", "utilization"),
    ("2 GPUs", "processes:gpus=h100*2,at=1500", "utilization"),
    ("8 GPUs", "training:gpus=h100*8,at=900", "utilization"),
    ("warning", "thermal:gpus=h100*2,at=380", "temperature"),
    ("critical", "thermal:gpus=h100*2,at=500", "temperature"),
    ("lost", "training:gpus=h100*8,lost=3@0,at=900", "utilization"),
    ("stuck", "idle:gpus=h100*2,hang=nvmlDeviceGetTemperature@1", "utilization"),
)
# (panel height, the icon size the host gives at that height, GDK/Qt scale)
PANELS = ((18, 16, 1), (26, 22, 1), (28, 24, 1), (36, 32, 1), (26, 22, 2))
THEMES = (("dark", "#2e3440"), ("light", "#eceff4"))


def shoot(out: Path, only_scale: int | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for panel_px, icon_px, scale in PANELS:
        if only_scale is not None and scale != only_scale:
            continue
        for theme, colour in THEMES:
            row = []
            os.environ["GDK_SCALE"] = str(scale)  # the tray host drawn at the scale (the stack copies the environment)
            with DesktopStack("sni", notifications=False, tray_px=panel_px, tray_colour=colour) as stack:
                for name, spec, metric in STATES:
                    config = out / "config.toml"
                    config.write_text(f'version = 3\ntray_metric = "{metric}"\n')
                    env = {"TRAYVML_TRAY_WAIT_S": "1", "QT_SCALE_FACTOR": str(scale)}
                    app = AppProcess(stack, f"--simulate={spec}", "--config", str(config), env=env)
                    try:
                        wait_until(lambda: bool(stack.sni_items()), what="the tray item")
                        time.sleep(11.0 if name == "stuck" else 2.5)  # the stall shows after the sampler's grace
                        path = out / f"tray-{icon_px}px-x{scale}-{theme}-{name.replace(' ', '')}.png"
                        width, height = 3 * panel_px * scale, panel_px * scale
                        stack.screenshot(path, crop=f"{width}x{height}+{1280 - width}+0")
                        row.append(path)
                    finally:
                        app.stop(signal.SIGTERM)
            rows.append(row)
    sheet = out / "tray-sheet.png"
    rows_args = []
    for k, row in enumerate(rows):
        line = out / f"row-{k}.png"
        enlarge = ["-filter", "point", "-resize", "400%"]  # pixels as pixels
        subprocess.run(["convert", *map(str, row), "+append", *enlarge, str(line)], check=True)
        rows_args.append(str(line))
    between = ["-background", "#888888", "-splice", "0x6"]
    subprocess.run(["convert", *rows_args, *between, "-append", str(sheet)], check=True)
    for made in rows_args:
        Path(made).unlink()
    print(sheet)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="out/tray-shots")
    parser.add_argument("--scale", type=int, choices=(1, 2), help="only the panels at this scale")
    args = parser.parse_args()
    shoot(Path(args.out), args.scale)
