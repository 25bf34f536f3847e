"""The tray's GUI thread collects Python's garbage for the whole process, and Ctrl-C wakes it
(trayvml/ui/main_thread.py)."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from pytestqt.qtbot import QtBot

from tests.helpers import default_sigint, end_process
from trayvml.ui.main_thread import GuiThreadCollector

# The tray as `trayvml` starts it, every collection's thread noted; Ctrl-C ends it.
TRAY = textwrap.dedent(
    """
    import collections, gc, json, sys, threading
    threads = collections.Counter()
    gc.callbacks.append(lambda phase, info: phase == "start" and threads.update([threading.current_thread().name]))
    freed, kept = [], []

    class Cycle:  # garbage only the collector frees, noting the thread it is freed on
        def __init__(self):
            self.me = self

        def __del__(self):
            freed.append(threading.current_thread().name)

    def churn():  # once the tray runs, a thread of its own makes garbage, as the reading threads do
        Cycle()
        kept.extend([] for _ in range(10_000))  # far past the youngest generation's threshold

    threading.Timer(4.0, churn).start()
    from trayvml.cli import main
    code = main(["--simulate=idle:gpus=h100*8,past=0", "--interval", "0.5"])
    print(json.dumps({"code": code, "threads": threads, "freed": freed, "enabled": gc.isenabled()}))
    """
)


def test_the_tray_collects_garbage_on_its_gui_thread_alone(tmp_path: Path) -> None:
    # Before, the NVML reading thread and the sampler's QThread ran about one collection in four.
    env = {**os.environ, "TRAYVML_TRAY_WAIT_S": "3600"}  # offscreen there is no tray: keep waiting
    process = subprocess.Popen(
        [sys.executable, "-c", TRAY],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        preexec_fn=default_sigint,
    )
    try:
        time.sleep(8)  # 16 samples of 8 GPUs
        assert process.poll() is None, process.communicate()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        end_process(process)
    assert process.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["code"] == 0 and report["enabled"]  # Ctrl-C ended it cleanly; the collector on again
    assert set(report["threads"]) == {"MainThread"}, report["threads"]
    assert report["freed"] == ["MainThread"]  # the other thread's garbage, collected on the GUI thread


class _Finalized:
    """Garbage in a cycle that notes the thread it is destroyed on."""

    def __init__(self, threads: list[str]) -> None:
        self.threads = threads
        self.me = self  # the cycle: only the collector frees it

    def __del__(self) -> None:
        self.threads.append(threading.current_thread().name)


def test_garbage_a_worker_thread_would_collect_waits_for_the_gui_thread(qtbot: QtBot) -> None:
    collector = GuiThreadCollector(interval_ms=50)
    collector.start()
    try:
        threads: list[str] = []
        _Finalized(threads)

        kept: list[list[object]] = []  # alive, as a reading thread's samples are for a while
        done = threading.Event()

        def allocate() -> None:
            # As a reading thread does, on and on: an earlier test's objects freed meanwhile (its
            # widgets' deferred deletes) lower the count a collection goes by, as much as they free.
            while not done.wait(0.01):
                kept.extend([] for _ in range(1_000))

        worker = threading.Thread(target=allocate, name="worker")
        worker.start()
        try:
            qtbot.waitUntil(lambda: threads != [], timeout=5000)
        finally:
            done.set()
            worker.join()
        assert threads == ["MainThread"]  # not on the worker, whose allocations passed the threshold
    finally:
        collector.stop()
    assert gc.isenabled()


def test_the_collector_collects_the_oldest_generation_due(qtbot: QtBot) -> None:
    collector = GuiThreadCollector(interval_ms=60_000)  # ticked by hand below
    collector.start()
    try:
        youngest, middle, _ = gc.get_threshold()
        gc.collect()
        assert collector.collect_due() == -1  # nothing allocated since
        # Kept alive: freeing an object takes one off the youngest generation's count, wherever it is.
        kept: list[list[object]] = []
        for _ in range(middle + 1):  # each collects the youngest and counts one in the middle generation
            kept.extend([] for _ in range(youngest + 1))
            assert collector.collect_due() == 0
        kept.extend([] for _ in range(youngest + 1))
        assert collector.collect_due() == 1
    finally:
        collector.stop()
