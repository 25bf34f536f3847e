"""Shutting down one's own Jupyter kernel: from the Processes tab's menu and from the "memory held,
GPU idle" notification, always after asking; against a real Jupyter server and real kernels."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers import JupyterServer, closed_port_url, present, simulated_source
from tests.ui_helpers import answering_no
from trayvml.alerts.dispatch import KERNEL, Dispatcher
from trayvml.alerts.engine import AlertSettings
from trayvml.alerts.rules import RULES, HeldSettings
from trayvml.core.clock import ManualClock
from trayvml.core.sample import GPU_INDEX, Attribution, ProcessSample, Sample
from trayvml.history.timeline import History
from trayvml.host.attribution import Attributor
from trayvml.host.jupyter import shut_down_kernel
from trayvml.monitor.pipeline import Monitor
from trayvml.platform.notifiers import action_list

NOTEBOOK = "exp/train.ipynb"


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    pytest.importorskip("jupyter_server", reason="jupyter_server is in the test extra: pip install -e .[test]")
    pytest.importorskip("ipykernel", reason="ipykernel is in the test extra: pip install -e .[test]")
    with JupyterServer(tmp_path_factory.mktemp("jupyter")) as server:
        yield server


def _gone(pid: int, wait_s: float = 20.0) -> bool:
    """Whether ``pid`` has ended (and been reaped by its server) within ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _kernel_ids(jupyter: JupyterServer) -> set[str]:
    kernels = jupyter.api("api/kernels")
    assert isinstance(kernels, list)
    return {k["id"] for k in kernels}


def _sample_with(*processes: ProcessSample) -> Sample:
    """A sample of this machine (not simulated) whose idle GPU 0 runs ``processes``."""
    source, _, _ = simulated_source("idle:gpus=h100")
    sample = source.sample()
    values = list(sample.gpus[0].values)
    values[GPU_INDEX["memory_used_bytes"]] = sum(p.used_memory_bytes for p in processes)  # what they hold
    gpu = replace(sample.gpus[0], values=tuple(values), processes=processes)
    return replace(sample, gpus=(gpu,), simulation="")


def _kernel(pid: int, attribution: Attribution) -> ProcessSample:
    """A kernel holding 3 GiB on GPU 0."""
    return ProcessSample(
        0, pid, "compute", 3 * 2**30, "python", "me", "python -m ipykernel_launcher", attribution=attribution
    )


def test_the_processes_tab_shuts_down_ones_own_kernel_after_asking(qtbot, jupyter: JupyterServer) -> None:
    from trayvml.ui.processes import ProcessesPage

    kernel_id, pid = jupyter.open_notebook(NOTEBOOK)
    attribution = Attributor(Path("/proc"), wait_s=5.0).attribute(pid)
    assert attribution.notebook == NOTEBOOK
    page = ProcessesPage()
    qtbot.addWidget(page)
    page.find_kernel = lambda p: Attributor(Path("/proc"), wait_s=5.0).own_kernel(p)
    page.idle_for = lambda gpu: (42 * 60.0, False)
    page.processes.update_processes(_sample_with(_kernel(pid, attribution)))
    assert page.processes.rowCount() == 1 and page.can_shut_down_kernel(0)
    questions: list[str] = []
    told: list[str] = []
    page.tell = lambda parent, text: told.append(text)

    page.ask = answering_no(questions)  # the user says no
    assert not page.shut_down_kernel(0)
    assert Path(f"/proc/{pid}").exists() and kernel_id in _kernel_ids(jupyter)  # cancelled: still running
    (question,) = questions
    assert question.startswith(f"Shut down the kernel of notebook {NOTEBOOK}?")
    assert "It holds 3.0 GiB of GPU 0's memory. GPU 0 has been idle for 42 min." in question

    page.ask = lambda parent, question: True  # now yes
    assert page.shut_down_kernel(0) and told == []
    assert _gone(pid), "the kernel's process did not end"
    assert kernel_id not in _kernel_ids(jupyter)
    page.processes.update_processes(_sample_with())  # NVML lists it no more: its row goes
    assert page.processes.rowCount() == 0


def test_failures_are_one_sentence_each(jupyter: JupyterServer) -> None:
    kernel_id, pid = jupyter.open_notebook("exp/other.ipynb")
    kernel = Attributor(Path("/proc"), wait_s=5.0).own_kernel(pid)
    assert kernel is not None and (kernel.kernel_id, kernel.notebook) == (kernel_id, "exp/other.ipynb")
    assert "s3cret" not in repr(kernel)  # the token is never in a log line
    refused = shut_down_kernel(replace(kernel, token="wrong"))
    assert refused.startswith(f"The Jupyter server at {kernel.server_url} refused to shut the kernel down (HTTP 403)")
    assert Path(f"/proc/{pid}").exists()
    assert shut_down_kernel(kernel) == "" and _gone(pid)
    assert shut_down_kernel(kernel) == "The kernel of exp/other.ipynb is already gone from its Jupyter server."
    gone = shut_down_kernel(replace(kernel, server_url=closed_port_url()))
    assert gone.startswith(f"The Jupyter server at {closed_port_url()[:17]}") and "no longer answers" in gone
    assert gone.endswith(": the kernel was not shut down.")
    with socket.socket() as silent:  # listens, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        slow = shut_down_kernel(replace(kernel, server_url=url), wait_s=0.3)
    assert slow == f"The Jupyter server at {url} did not answer within 0.3 s: the kernel may still run."


def _server_file(runtime: Path, url: str, pid: int, uid: int) -> None:
    runtime.mkdir(parents=True, exist_ok=True)
    file = runtime / f"jpserver-{pid}.json"
    file.write_text(json.dumps({"url": url, "token": "t0k", "pid": pid}))
    if uid != os.getuid():
        os.chown(file, uid, -1)


def test_another_users_kernel_or_server_is_never_offered(tmp_path: Path) -> None:
    """Attribution may name another user's notebook (their kernel, their server); shutting it down
    is offered for this user's kernel on this user's server only, and the page offers nothing for
    a simulated or a remote host's process."""
    if os.getuid() != 0:
        pytest.skip("giving a file to another user needs root")
    from tests.test_attribution import FakeProc

    asked: list[str] = []

    def fetch(url: str, token: str, wait_s: float) -> bytes:
        asked.append(url)
        return json.dumps([{"path": "theirs.ipynb", "kernel": {"id": "abc-1"}}]).encode()

    other = os.getuid() + 4242
    runtime = tmp_path / "runtime"
    proc = FakeProc(tmp_path / "proc")
    proc.add(55, comm="jupyter-server", uid=other)
    _server_file(runtime, "http://127.0.0.1:1/", 55, other)
    connection = str(runtime / "kernel-abc-1.json")
    proc.add(4321, cmdline=("python", "-m", "ipykernel_launcher", "-f", connection), uid=other)
    theirs = Attributor(tmp_path / "proc", fetch=fetch)
    assert theirs.attribute(4321).notebook == "theirs.ipynb"  # named: it is their notebook
    assert theirs.own_kernel(4321) is None  # but never ours to shut down
    proc.add(4321, cmdline=("python", "-m", "ipykernel_launcher", "-f", connection))  # our kernel, their server
    asked.clear()
    assert Attributor(tmp_path / "proc", fetch=fetch).own_kernel(4321) is None
    assert asked == []  # their server was not even asked


def test_the_page_offers_nothing_for_a_simulated_or_remote_process(qtbot) -> None:
    from trayvml.core.sample import RemoteOrigin
    from trayvml.ui.processes import ProcessesPage

    page = ProcessesPage()
    qtbot.addWidget(page)
    notebook = Attribution(notebook=NOTEBOOK, job=NOTEBOOK, job_kind="notebook")
    mine = _sample_with(_kernel(os.getpid(), notebook))  # this very process: ours, but no kernel
    page.processes.update_processes(replace(mine, simulation="simulated GPUs (idle)"))
    assert not page.can_shut_down_kernel(0)
    page.processes.update_processes(replace(mine, remote=RemoteOrigin("http://dgx-01:8729", "trayvml serve")))
    assert not page.can_shut_down_kernel(0) and not page.can_end(0)
    page.processes.update_processes(mine)
    assert page.can_shut_down_kernel(0)
    told: list[str] = []
    page.tell = lambda parent, text: told.append(text)
    page.ask = lambda parent, question: pytest.fail("asked although no kernel was found")
    assert not page.shut_down_kernel(0)
    assert told == [
        f"PID {os.getpid()} is no longer the kernel of a notebook of yours that a running Jupyter server of yours "
        "knows: nothing was shut down."
    ]


HELD_ONLY = AlertSettings(
    rules={
        **{kind.key: replace(kind.defaults, enabled=False) for kind in RULES},
        "memory_held_idle": HeldSettings(True, memory_above_gib=1.0, idle_below_percent=5.0, hold_s=0.0),
    }
)


def _held_notices(monitor: Monitor, processes: tuple[ProcessSample, ...], simulated: bool = False) -> list:
    sample = _sample_with(*processes)
    gpu = sample.gpus[0]
    assert gpu.value("utilization_gpu_percent") <= 5 and gpu.value("memory_used_bytes") > 2**30  # idle, held
    sample = replace(sample, simulation="simulated GPUs (idle)" if simulated else "")
    return monitor.take(sample).notices


def _monitor() -> Monitor:
    dispatcher = Dispatcher(ManualClock())
    dispatcher.notifier_ready()
    return Monitor(dispatcher, HELD_ONLY, History, processes_on_demand=True)


def test_the_held_idle_notice_offers_to_shut_down_a_notebook_of_ones_own() -> None:
    notebook = Attribution(notebook=NOTEBOOK, job=NOTEBOOK, job_kind="notebook")
    mine = _kernel(os.getpid(), notebook)
    monitor = _monitor()
    (notice,) = _held_notices(monitor, (mine,))
    assert notice.actions == (KERNEL,) and monitor.kernel_offers == {0: (mine,)}
    assert action_list(notice) == ["open", "Open graphs", "snooze", "Snooze 1 h", KERNEL, "Shut down kernel…"]
    assert action_list(replace(notice, host="dgx-01")) == []  # a remote host's: nothing acts on this machine
    hidden = replace(mine, pid=999001, no_permission=True)  # another user's
    for processes, simulated in (
        ((hidden,), False),
        ((replace(mine, attribution=Attribution()),), False),
        ((mine,), True),
    ):
        (notice,) = _held_notices(_monitor(), processes, simulated)
        assert notice.actions == () and "Shut down kernel…" not in action_list(notice)


def test_the_notifications_action_asks_then_shuts_the_kernel_down(qapp, jupyter: JupyterServer) -> None:
    from trayvml.ui.app import App

    kernel_id, pid = jupyter.open_notebook("exp/held.ipynb")
    attribution = Attributor(Path("/proc"), wait_s=5.0).attribute(pid)
    app = App(None)
    try:
        app.local = _monitor()
        (notice,) = _held_notices(app.local, (_kernel(pid, attribution),))
        assert notice.actions == (KERNEL,)
        questions: list[str] = []
        app.tell_user = lambda parent, text: pytest.fail(text)
        app.ask_user = answering_no(questions)
        app._on_action(KERNEL, 0, "memory_held_idle")
        assert len(questions) == 1 and "exp/held.ipynb" in questions[0] and Path(f"/proc/{pid}").exists()
        app.ask_user = lambda parent, question: True
        app._on_action(KERNEL, 0, "memory_held_idle")
        assert _gone(pid) and kernel_id not in _kernel_ids(jupyter)
    finally:
        app.stop()


def test_the_processes_tabs_button_shuts_down_the_selected_kernel(qtbot, jupyter: JupyterServer) -> None:
    """Without a right click: "Shut down kernel…" beside "End process…", enabled only while the
    selected row is a notebook kernel of one's own, asking as the menu does."""
    from trayvml.ui.processes import ProcessesTab

    kernel_id, pid = jupyter.open_notebook("exp/button.ipynb")
    attribution = Attributor(Path("/proc"), wait_s=5.0).attribute(pid)
    tab = ProcessesTab()
    qtbot.addWidget(tab)
    tab.show()
    table = tab.table
    table.find_kernel = lambda p: Attributor(Path("/proc"), wait_s=5.0).own_kernel(p)
    plain = replace(_kernel(os.getpid(), Attribution()), used_memory_bytes=2**30)  # ours, no notebook: smaller
    tab.update_processes(_sample_with(_kernel(pid, attribution), plain))
    assert tab.kernel_button.isVisible() and tab.end_button.isVisible()
    assert not tab.kernel_button.isEnabled() and not tab.end_button.isEnabled()  # nothing selected
    table.selectRow(1)  # sorted biggest first: this test's own process
    assert tab.end_button.isEnabled() and not tab.kernel_button.isEnabled()
    table.selectRow(0)
    assert table.processes.pid_at(tab.selected_row()) == pid
    assert tab.kernel_button.isEnabled() and tab.end_button.isEnabled()
    questions: list[str] = []
    table.tell = lambda parent, text: pytest.fail(text)
    table.ask = answering_no(questions)  # no
    tab.kernel_button.click()
    assert len(questions) == 1 and questions[0].startswith("Shut down the kernel of notebook exp/button.ipynb?")
    assert Path(f"/proc/{pid}").exists()
    tab.group_box.setChecked(True)  # jobs shown: no row of the table is the one acted on
    assert not tab.kernel_button.isEnabled() and not tab.end_button.isEnabled()
    tab.group_box.setChecked(False)
    table.ask = lambda parent, question: True
    tab.kernel_button.click()
    assert _gone(pid) and kernel_id not in _kernel_ids(jupyter)
    tab.update_processes(_sample_with(plain))  # no notebook left: the button goes
    assert not tab.kernel_button.isVisible()


def _held_events(monitor: Monitor, processes: tuple[ProcessSample, ...]) -> list:
    sample = _sample_with(*processes)
    return monitor.take(sample).events


def test_the_alerts_tab_offers_to_shut_down_a_held_idle_notebook(qtbot, jupyter: JupyterServer) -> None:
    """Where notifications have no actions (the tray's balloon): the active held-idle alert's row in
    the Alerts tab offers "Shut down kernel…" for one's own notebook only, and asks first."""
    from PySide6.QtWidgets import QPushButton

    from trayvml.alerts.rules import AlertEvent
    from trayvml.alerts.severity import Severity
    from trayvml.ui.alerts_page import ACTION, AlertsPage

    kernel_id, pid = jupyter.open_notebook("exp/alerted.ipynb")
    attribution = Attributor(Path("/proc"), wait_s=5.0).attribute(pid)
    page = AlertsPage()
    qtbot.addWidget(page)
    page.find_kernel = lambda p: Attributor(Path("/proc"), wait_s=5.0).own_kernel(p)
    page.idle_for = lambda gpu: (25 * 60.0, True)

    theirs = _monitor()  # another user's process holds the memory: nothing offered
    page.kernel_offers = lambda gpu: theirs.kernel_offers.get(gpu, ())
    (other,) = _held_events(theirs, (replace(_kernel(999001, attribution), no_permission=True),))
    page.add_events([other])
    assert page.isColumnHidden(ACTION) and page.cellWidget(0, ACTION) is None and page.kernels_for(other) == ()

    monitor = _monitor()
    page.kernel_offers = lambda gpu: monitor.kernel_offers.get(gpu, ())
    (held,) = _held_events(monitor, (_kernel(pid, attribution),))
    warm = AlertEvent(held.timestamp_s, 1, "H100", "temperature", "firing", Severity.WARNING, "warm")
    page.add_events([held, warm])
    assert [present(page.item(r, 3)).text() for r in range(3)] == [warm.title, held.title, other.title]  # newest first
    assert page.cellWidget(0, ACTION) is None  # a temperature alert offers nothing
    button = page.cellWidget(1, ACTION)
    assert isinstance(button, QPushButton) and button.text() == "Shut down kernel…" and not page.isColumnHidden(ACTION)
    assert page.cellWidget(2, ACTION) is None  # superseded: the other GPU-0 alert is no longer the active one

    questions: list[str] = []
    page.tell = lambda parent, text: pytest.fail(text)
    page.ask = answering_no(questions)  # no
    button.click()
    (question,) = questions
    assert question.startswith("Shut down the kernel of notebook exp/alerted.ipynb?")
    assert "GPU 0 has been idle for at least 25 min (since trayvml started)." in question
    assert Path(f"/proc/{pid}").exists() and page.cellWidget(1, ACTION) is not None  # still offered
    page.ask = lambda parent, question: True
    button.click()
    assert _gone(pid) and kernel_id not in _kernel_ids(jupyter)
    assert page.cellWidget(1, ACTION) is None and page.isColumnHidden(ACTION)  # shut down: offered no more


def test_a_resolved_or_remote_held_idle_alert_offers_nothing(qtbot) -> None:
    from trayvml.ui.alerts_page import ACTION, AlertsPage

    page = AlertsPage()
    qtbot.addWidget(page)
    monitor = _monitor()
    page.kernel_offers = lambda gpu: monitor.kernel_offers.get(gpu, ())
    notebook = Attribution(notebook=NOTEBOOK, job=NOTEBOOK, job_kind="notebook")
    (held,) = _held_events(monitor, (_kernel(os.getpid(), notebook),))
    page.add_events([held])
    assert page.cellWidget(0, ACTION) is not None
    page.add_events([replace(held, kind="resolved", timestamp_s=held.timestamp_s + 60)])
    assert page.cellWidget(1, ACTION) is None and page.isColumnHidden(ACTION)
    remote = replace(held, host="dgx-01")
    page.add_events([remote])
    page.show_host("dgx-01")
    assert page.kernels_for(remote) == () and page.isColumnHidden(ACTION)


def test_the_app_wires_the_alerts_tab_to_its_monitors_offers(qapp, qtbot) -> None:
    from trayvml.ui.alerts_page import ACTION
    from trayvml.ui.app import App

    app = App(None)
    try:
        app.local = _monitor()
        notebook = Attribution(notebook=NOTEBOOK, job=NOTEBOOK, job_kind="notebook")
        events = _held_events(app.local, (_kernel(os.getpid(), notebook),))
        window = app.ensure_window()  # opened after the alert fired: it lists the engine's alerts
        qtbot.addWidget(window)
        assert window.alert_table.listed == events
        assert window.alert_table.cellWidget(0, ACTION) is not None
        assert window.alert_table.kernels_for(events[0]) == app.local.kernel_offers[0]
    finally:
        app.stop()


def test_a_balloon_says_where_the_kernel_can_be_shut_down() -> None:
    from trayvml.alerts.grouping import Notice
    from trayvml.alerts.severity import Severity
    from trayvml.platform.notifiers import TrayMessageNotifier

    shown: list[str] = []
    balloon = TrayMessageNotifier(lambda title, body, severity: shown.append(body))
    notice = Notice((0, "memory_held_idle"), "GPU 0: memory held", "3.0 GiB held", 1, Severity.WARNING)
    balloon.notify(notice)
    balloon.notify(replace(notice, actions=(KERNEL,)))
    hint = "To shut the kernel down, open the active alerts from the tray menu: the alert offers Shut down kernel…"
    assert shown == ["3.0 GiB held", f"3.0 GiB held\n{hint}"]
