from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from trayvml.nvml.sim import uninstall

os.environ.pop("TRAYVML_SIMULATE", None)


@pytest.fixture(autouse=True)
def _no_simulation_leaks() -> Iterator[None]:
    """Each test starts with no simulated library beneath pynvml, and leaves none."""
    uninstall()
    yield
    uninstall()
