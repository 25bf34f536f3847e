"""The idle tray loads only what the tray needs: the window's libraries wait for the window.

Measured in a fresh process (benchmarks/README.md, "What the idle tray's memory is made of"):
pyqtgraph adds about 49 MiB to a PySide6 tray, prometheus-client and the HTTP, e-mail and TLS
modules it brings about 10 MiB.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

IDLE_TRAY = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path

    from trayvml.cli import build_parser

    build_parser()  # what `trayvml` itself imports before the tray starts
    import trayvml.ui  # first, as `trayvml` imports the tray: before PySide6
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    qt = QApplication([])
    from trayvml.config import SettingsStore
    from trayvml.nvml.sim import parse_spec
    from trayvml.ui.app import App

    folder = Path(sys.argv[1])
    app = App(
        parse_spec("replay=" + sys.argv[2]),  # a real H100 answering: the simulator itself is numpy's
        0.2,
        tray_wait_s=3600,
        store=SettingsStore(folder / "config.toml"),
        history_folder=folder / "history",
    )
    assert app.settings.history_on_disk
    seen = []
    loop = QEventLoop()

    def taken(sample):
        seen.append(sample)
        if len(seen) >= 3:
            loop.quit()

    app.sampler.sample_taken.connect(taken)
    app.sampler.start()
    QTimer.singleShot(30_000, loop.quit)  # bounded: a broken sampler fails the count below
    loop.exec()
    app.sampler.stop()  # the writer commits what waits
    import linecache

    report = {"samples": len(seen), "window": app.window is not None, "modules": sorted(sys.modules)}
    report["sources_kept"] = sorted(linecache.cache)
    print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def idle_tray(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder: Path = tmp_path_factory.mktemp("idle")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_RUNTIME_DIR": str(folder)}
    recording = Path(__file__).parent / "recordings" / "h100-580-busy.jsonl"
    result = subprocess.run(
        [sys.executable, "-c", IDLE_TRAY, str(folder), str(recording)],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["samples"] >= 3 and not report["window"]  # sampled, window never opened
    store = sqlite3.connect(folder / "history" / "history.sqlite3")
    report["stored"] = store.execute("SELECT COUNT(*) FROM blocks").fetchone()[0]
    store.close()
    return report


def test_the_idle_tray_writes_the_history_on_disk_without_numpy(idle_tray: dict) -> None:
    # numpy is 13 MiB of RSS beside PySide6 (benchmarks/README.md): the idle tray keeps no timelines
    # in memory (the store has them, and the window makes them from it), encodes the store's fresh
    # blocks in pure Python and packs its hours in a process of its own.
    assert idle_tray["stored"] > 0  # the history was written
    assert "numpy" not in idle_tray["modules"]
    assert not [m for m in idle_tray["modules"] if m.startswith("trayvml.history.") and "disk" not in m]


def test_the_idle_tray_does_not_import_pyqtgraph(idle_tray: dict) -> None:
    assert "pyqtgraph" not in idle_tray["modules"]  # about 49 MiB: loaded when the window opens


def test_the_idle_tray_does_not_import_prometheus_client(idle_tray: dict) -> None:
    # Only serving metrics (the setting, `trayvml serve`) or reading a remote exporter needs it.
    assert "prometheus_client" not in idle_tray["modules"]


def test_the_idle_tray_without_remote_hosts_imports_no_http_or_tls(idle_tray: dict) -> None:
    # The remote readers (HTTP, TLS, SSH) load only where a remote host is configured: about 6 MiB.
    remote = {"ssl", "http.client", "h11", "trayvml.remote.fetch", "trayvml.remote.plain", "trayvml.remote.ssh"}
    assert not remote & set(idle_tray["modules"])


def test_the_idle_tray_does_not_load_openssl(idle_tray: dict) -> None:
    # hashlib loads OpenSSL's libcrypto (3.3 MiB of RSS) on import, whatever hash is asked for.
    assert not {"hashlib", "_hashlib", "_ssl"} & set(idle_tray["modules"])


def test_the_idle_tray_keeps_no_module_sources(idle_tray: dict) -> None:
    # PySide6 reads every module's source to see whether it uses PySide6 (PYSIDE-2029); through
    # inspect that left 9 MiB of lines in linecache for the life of the tray.
    # Only what shiboken6 imports before the check is in place (enum, itself) may be read; 140 files were.
    kept = idle_tray["sources_kept"]
    assert not [path for path in kept if "/trayvml/" in path or "/numpy/" in path], kept
    assert len(kept) <= 3, kept


def test_the_pyside_check_still_tells_modules_apart(tmp_path: Path) -> None:
    import types

    from trayvml.ui import _uses_pyside

    with_qt, without = tmp_path / "with_qt.py", tmp_path / "without.py"
    with_qt.write_text("from PySide6.QtCore import QObject\n")
    without.write_text("import json\n")
    modules = {}
    for path in (with_qt, without):
        module = types.ModuleType(path.stem)
        module.__file__ = str(path)
        modules[path.stem] = module
    assert _uses_pyside(modules["with_qt"]) and not _uses_pyside(modules["without"])
    assert not _uses_pyside(types.ModuleType("builtin_like"))  # no file: as PySide6 itself says


def test_reading_a_real_driver_and_serving_it_loads_no_numpy() -> None:
    # What `serve`, `log` and `snapshot` run on a real GPU: the reader (field values, GPM), the
    # exposition and the energy meter, here answered by a real H100's recording. numpy is 13 MiB of serve's RSS
    # (benchmarks/README.md); only the simulator, the history and the window need it.
    recording = Path(__file__).parent / "recordings" / "h100-580-busy.jsonl"
    code = textwrap.dedent(
        """
        import sys
        from trayvml.commands import csvlog, serve
        from trayvml.commands.report import json_snapshot
        from trayvml.monitor.energy import EnergyMeter
        from trayvml.nvml.sim import parse_spec
        from trayvml.prometheus.exposition import SampleCollector
        from trayvml.source import Source

        source = Source(parse_spec("replay=" + sys.argv[1]), host=False)
        energy = EnergyMeter()
        energy.update(source.sample())
        sample = source.sample()  # GPM's metrics come from two samples
        energy.update(sample)
        source.close()
        gpu = sample.gpus[0]
        for key in ("power_instant_w", "pcie_rx_bytes_per_s", "gpm_pcie_rx_bytes_per_s"):
            assert gpu.state(key).name == "OK" and gpu.value(key) > 0, key  # a field value, a rate, GPM
        assert list(SampleCollector(lambda: sample, "host").collect())
        assert json_snapshot(sample, energy)["gpus"][0]["energy"]  # snapshot's JSON, its energy too
        assert csvlog.parse_fields("timestamp,power.draw")  # log's columns
        print("numpy" in sys.modules)
        """
    )
    result = subprocess.run([sys.executable, "-c", code, str(recording)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_idle_tray_loads_no_xml_parser(idle_tray: dict) -> None:
    # The tray translates through Qt's compiled catalog; the .ts reader (CLI) and macOS's plist
    # autostart bring ElementTree or plistlib and expat (about 1.5 MiB together).
    assert not {"xml.etree.ElementTree", "plistlib", "pyexpat"} & set(idle_tray["modules"])


def test_the_idle_tray_does_not_load_numpys_masked_arrays(idle_tray: dict) -> None:
    # numpy 2.4's np.unique asks np.ma whether its array is masked: 1.3 MiB for the backfill's times.
    assert "numpy.ma" not in idle_tray["modules"]


def test_the_idle_tray_does_not_load_htmls_entities(idle_tray: dict) -> None:
    # core.safe_text escapes markup itself: `import html` loads its 0.6 MiB table of entities.
    assert "html.entities" not in idle_tray["modules"]
