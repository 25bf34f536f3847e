from __future__ import annotations

import atexit
import gc
import os
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import OPEN_SOURCES, end_process
from trayvml.nvml.sim.library import uninstall

os.environ.pop("TRAYVML_SIMULATE", None)
# Widget tests run offscreen unless a desktop test brings its own display; Qt reads this
# before the QApplication exists. The desktop tests start the app as a separate process.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# The tests read English texts whatever the machine's language (LANGUAGE comes first in trayvml's
# choice, see trayvml.core.i18n); tests of the translations ask for their own.
os.environ["LANGUAGE"] = "en"
# `snapshot` fits its table to COLUMNS where it is set (a shell's exported COLUMNS, pytest-xdist's
# workers): the tests read the table as it goes to a pipe, whole; tests of the fitting set their own.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
# `pick` chooses among the GPUs an existing CUDA_VISIBLE_DEVICES names (a Slurm job's): the tests
# start with none, as on a machine of one's own; tests of it set their own.
os.environ.pop("CUDA_VISIBLE_DEVICES", None)
os.environ.pop("CUDA_DEVICE_ORDER", None)

# Each run gets its own runtime, config, state, data and cache folders, so that neither the user's
# settings nor a trayvml already running for the same user can change a result.
RUN_FOLDER = tempfile.mkdtemp(prefix="trayvml-tests-")
atexit.register(shutil.rmtree, RUN_FOLDER, ignore_errors=True)
for variable, name in (
    ("XDG_RUNTIME_DIR", "runtime"),
    ("XDG_CONFIG_HOME", "config"),
    ("XDG_STATE_HOME", "state"),
    ("XDG_DATA_HOME", "data"),
    ("XDG_CACHE_HOME", "cache"),
):
    folder = os.path.join(RUN_FOLDER, name)
    os.mkdir(folder, 0o700)
    os.environ[variable] = folder
# Container runtimes are asked for names over these sockets (trayvml.host.containers): never the
# machine's own (/var/run/docker.sock, /run/podman/podman.sock). Nothing listens here unless a
# test starts a server of its own.
os.environ["DOCKER_HOST"] = f"unix://{RUN_FOLDER}/docker.sock"
os.environ["CONTAINER_HOST"] = f"unix://{RUN_FOLDER}/podman.sock"


@pytest.fixture(autouse=True)
def _no_simulation_leaks() -> Iterator[None]:
    """Each test starts with no simulated library beneath pynvml, and leaves none."""
    uninstall()
    yield
    while OPEN_SOURCES:
        OPEN_SOURCES.pop().close()
    uninstall()


@pytest.fixture(autouse=True)
def _qt_garbage_collected_after_the_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """Qt wrappers a widget test leaves in reference cycles are collected when its test ends, not at
    whatever allocation of a later test starts the collector: collected later (in a test with
    threads and sockets, after other widget tests had run), one crashed the interpreter in the
    garbage collector (tests/test_remote_shared.py after the tray, summary and settings tests,
    2026-11-26): the collector runs on whichever thread's allocation passes its threshold, there a
    remote-reading thread, and a Qt wrapper destroyed off the GUI thread can crash (the tray itself
    collects on its GUI thread alone: trayvml/ui/main_thread.py). Collected right away, none did
    in 8 runs."""
    yield
    if {"qapp", "qtbot"} & set(request.fixturenames):
        gc.collect()


# Every child process a test starts, so that none outlives the run: a test that fails (or a child
# that ignores the signal meant to end it) must not leave `trayvml log` running for minutes.
_STARTED: weakref.WeakSet[subprocess.Popen] = weakref.WeakSet()
_popen_init = subprocess.Popen.__init__


def _tracked_init(self: subprocess.Popen, *args: Any, **kwargs: Any) -> None:
    _popen_init(self, *args, **kwargs)
    _STARTED.add(self)


subprocess.Popen.__init__ = _tracked_init  # type: ignore[method-assign]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for process in list(_STARTED):
        end_process(process, wait_s=2.0)
