from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.helpers import OPEN_SOURCES
from trayvml.nvml.sim.library import uninstall

os.environ.pop("TRAYVML_SIMULATE", None)
# Widget tests run offscreen unless a desktop test brings its own display; Qt reads this
# before the QApplication exists. The desktop tests start the app as a separate process.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("XDG_CONFIG_HOME", os.path.join(os.environ.get("TMPDIR", "/tmp"), "trayvml-test-config"))


@pytest.fixture(autouse=True)
def _no_simulation_leaks() -> Iterator[None]:
    """Each test starts with no simulated library beneath pynvml, and leaves none."""
    uninstall()
    yield
    while OPEN_SOURCES:
        OPEN_SOURCES.pop().close()
    uninstall()
