"""What the translations cost (PERFORMANCE.md P4: start to tray icon): choosing the language at start,
and one translated string, in English and in Chinese, by each of the two ways a catalog is read.

    .venv/bin/python benchmarks/bench_i18n.py [--runs 7]

Each start-up figure is a fresh process (imports and file reads included), so that nothing is warm;
per-string figures are measured in one process. Prints medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a fresh process: prints the milliseconds the language took to install.
START = """
import json, sys, time
language, way = sys.argv[1], sys.argv[2]
if way == "qt":
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from trayvml.ui.translation import install_translators
    start = time.perf_counter()
    kept = install_translators(app, language)
else:
    from trayvml.core import i18n
    start = time.perf_counter()
    i18n.install(language)
print(json.dumps((time.perf_counter() - start) * 1e3))
"""

PER_STRING = """
import json, sys, time
language, way = sys.argv[1], sys.argv[2]
from trayvml.core import i18n
if way == "qt":
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from trayvml.ui.translation import install_translators
    kept = install_translators(app, language)
else:
    i18n.install(language)
n = 200_000
start = time.perf_counter()
for _ in range(n):
    i18n.translate("metrics", "GPU utilization")
print(json.dumps((time.perf_counter() - start) / n * 1e9))
"""


def run(script: str, language: str, way: str) -> float:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(
        [sys.executable, "-c", script, language, way], env=environ, capture_output=True, text=True, timeout=120
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return float(json.loads(out.stdout))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    rows = []
    for language in ("en", "zh_CN"):
        for way, what in (("qt", "app: Qt translators, core through them"), ("ts", "CLI: the .ts, read by Python")):
            start_ms = statistics.median(run(START, language, way) for _ in range(args.runs))
            per_ns = statistics.median(run(PER_STRING, language, way) for _ in range(max(3, args.runs // 2)))
            rows.append((language, what, start_ms, per_ns))
    print(f"{'language':<9} {'how':<40} {'install at start':>17} {'one string':>11}")
    for language, what, start_ms, per_ns in rows:
        print(f"{language:<9} {what:<40} {start_ms:>14.1f} ms {per_ns:>8.0f} ns")


if __name__ == "__main__":
    main()
