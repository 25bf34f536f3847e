"""Process lists as a real driver gives them: one row per process, shares that add up, PIDs
that are reused, PIDs from another PID namespace."""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.helpers import OPEN_SOURCES, present, simulated_source
from trayvml.core.clock import ManualClock
from trayvml.core.sample import ProcessSample
from trayvml.host.processes import in_host_pid_namespace
from trayvml.monitor.energy import EnergyMeter
from trayvml.nvml.sim import parse_spec
from trayvml.nvml.sim.profiles import PROFILES
from trayvml.nvml.sim.scenarios import Processes
from trayvml.source import Source

if TYPE_CHECKING:
    from trayvml.core.sample import Sample
    from trayvml.ui.processes import ProcessesTab


def _running(program: str, seed: int) -> float:
    """A simulated second at which ``program`` runs on GPU 0 (an RTX 4090) in the processes scenario."""
    scenario = Processes(seed, [PROFILES["rtx4090"]])
    item = next(s for s in scenario._schedule[0] if s.process.name == program)
    return item.start_s + 1.0


def test_a_process_in_both_the_compute_and_the_graphics_list_is_one_process() -> None:
    start = _running("blender", seed=1)
    source, clock, _ = simulated_source(f"processes:gpus=rtx4090,seed=1,start={start}")
    meter = EnergyMeter()
    for _ in range(3):
        sample = source.sample()
        meter.update(sample)
        clock.advance_s(5)
    gpu = sample.gpus[0]
    pids = [p.pid for p in gpu.processes]
    assert len(pids) == len(set(pids))
    blender = next(p for p in gpu.processes if p.name == "blender")
    assert blender.kind == "compute+graphics" and blender.used_memory_bytes > 0
    assert gpu.value("process_count") == len(set(pids))
    # Energy goes to each process once: the shares add up to the GPU's, never more.
    attributed = sum(meter.process_wh.values()) + meter.unattributed_wh(0)
    assert 0 < attributed <= meter.since_start_wh(0) * (1 + 1e-9)


def _by_name(sample, name: str):
    return next(p for p in sample.gpus[0].processes if p.name == name)


def test_a_process_without_new_utilization_samples_is_idle_not_as_before() -> None:
    source, clock, lib = simulated_source("processes:gpus=rtx4090,start=1800")
    busy = _by_name(source.sample(), "python")
    assert busy.sm_util_percent > 0
    lib.process_sm_util[busy.pid] = 0  # it runs no kernel: the driver has no sample of it
    clock.advance_s(5)
    assert _by_name(source.sample(), "python").sm_util_percent == 0


def test_an_sm_share_above_100_is_unknown_and_energy_is_shared_by_memory() -> None:
    source, clock, lib = simulated_source("processes:gpus=rtx4090,start=1800")
    meter = EnergyMeter()
    meter.update(source.sample())
    python = _by_name(source.sample(), "python")
    lib.process_sm_util[python.pid] = 0xFFFFFFFF  # garbage drivers answer at times
    clock.advance_s(5)
    sample = source.sample()
    meter.update(sample)
    assert math.isnan(_by_name(sample, "python").sm_util_percent)  # unknown, not 100 %
    procs = sample.gpus[0].processes
    memory = sum(p.used_memory_bytes for p in procs)
    gpu_wh = meter.since_start_wh(0)
    for p in procs:  # not by a made-up SM share: by memory, for every process
        assert math.isclose(meter.process_energy_wh(p), gpu_wh * p.used_memory_bytes / memory)


def test_a_reused_pid_is_a_new_process_with_its_own_name_and_energy() -> None:
    # The training job ends at 6600 s and starts again at 7260 s under the same PID.
    source, clock, lib = simulated_source("training:gpus=rtx4090,start=6590")
    meter = EnergyMeter()
    for _ in range(2):
        meter.update(sample := source.sample())
        clock.advance_s(5)
    first = _by_name(sample, "python")
    first_wh = meter.process_energy_wh(first)
    assert first_wh > 0
    lib.process_names[first.pid] = "python3"  # what the host says of the PID from now on
    while clock.now_s() - lib.start_s < 7265 - 6590:
        meter.update(source.sample())  # the gap's energy goes to the processes of the gap
        clock.advance_s(30)
    for _ in range(2):
        meter.update(sample := source.sample())
        clock.advance_s(5)
    second = next(p for p in sample.gpus[0].processes if p.pid == first.pid)
    assert second.started_s > first.started_s
    assert second.name == "python3"  # looked up again, not the old process's name
    assert 0 < meter.process_energy_wh(second) < first_wh  # its energy starts from 0
    assert meter.process_energy_wh(first) == first_wh


def _proc_root(tmp_path: Path, namespace: str | None, kthreadd: bool, pid1: bool = True) -> Path:
    """A fake /proc: what in_host_pid_namespace reads, no more."""
    root = tmp_path / "proc"
    (root / "self" / "ns").mkdir(parents=True)
    if namespace is not None:
        os.symlink(namespace, root / "self" / "ns" / "pid")  # dangling, as read from outside procfs
    if kthreadd:
        (root / "2").mkdir()
        (root / "2" / "comm").write_text("kthreadd\n")
    if pid1:
        (root / "1").mkdir()
    return root


def test_the_pid_namespace_probe_tells_the_host_from_a_container(tmp_path: Path) -> None:
    assert in_host_pid_namespace(_proc_root(tmp_path / "a", "pid:[4026531836]", kthreadd=True))
    assert not in_host_pid_namespace(_proc_root(tmp_path / "b", "pid:[4026532417]", kthreadd=False))
    assert in_host_pid_namespace(_proc_root(tmp_path / "c", None, kthreadd=True))  # link unreadable
    assert not in_host_pid_namespace(_proc_root(tmp_path / "d", None, kthreadd=False))  # PID 1, no kernel threads
    assert in_host_pid_namespace(tmp_path / "no-procfs")  # not Linux: no PID namespaces


@pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(tool) for tool in ("unshare", "setpriv")),
    reason="mounting a /proc of its own (hidepid=2) in a private mount namespace needs root, unshare and setpriv",
)
def test_another_users_process_hidden_by_hidepid_is_no_permission_not_gone() -> None:
    """/proc mounted with hidepid=2 hides other users' processes: psutil calls one gone, and a
    live job of another user was shown as "?" and left out of the users' table, never "(no
    permission)". Checked as nobody, in a mount namespace of its own with such a /proc."""
    code = (
        "from trayvml.host.processes import resolve_host_process\n"
        "try:\n    print(resolve_host_process(int(__import__('sys').argv[1])))\n"
        "except PermissionError:\n    print('no permission')\n"
    )
    mount = 'mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"'
    sleeper = subprocess.Popen(["sleep", "60"])  # root's, as another user's job is
    try:
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, "sh"]
        run = subprocess.run(
            [*command, sys.executable, "-c", code, str(sleeper.pid)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        )
    finally:
        sleeper.kill()
        sleeper.wait(5)
    assert run.stdout.strip() == "no permission", run.stderr[-1000:]


def test_in_another_pid_namespace_processes_are_not_looked_up(tmp_path: Path) -> None:
    container = _proc_root(tmp_path, "pid:[4026532417]", kthreadd=False)
    source = Source(parse_spec("training:gpus=rtx4090,start=1800"), ManualClock(), host=False, proc_root=container)
    OPEN_SOURCES.append(source)
    gpu = source.sample().gpus[0]
    assert gpu.processes and gpu.value("process_count") == len(gpu.processes)
    for p in gpu.processes:  # NVML's numbers, and what it says of them; nothing from our /proc
        assert p.foreign_pid and (p.name, p.user, p.command) == ("", "", "") and p.used_memory_bytes > 0


def test_a_process_of_another_pid_namespace_is_never_offered_to_end(qtbot) -> None:
    from tests.ui_helpers import filled_history, shown_window
    from trayvml.ui.processes import HEADERS

    history, sample = filled_history("training:gpus=rtx4090", 10, host=False)
    # Our own live process has the number NVML gave: here it is not the process NVML meant.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        foreign = ProcessSample(0, child.pid, "compute", 2.0**30, foreign_pid=True)
        live = replace(sample, gpus=(replace(sample.gpus[0], processes=(foreign,)),), simulation="")
        w = shown_window(qtbot, history, live)
        w.tabs.setCurrentWidget(w.process_tab)
        w.refresh()
        view, model = w.process_view, w.process_model
        row = next(r for r in range(model.rowCount()) if model.pid_at(r) == child.pid)
        cells = dict(zip(HEADERS, (model.index(row, c).data() for c in range(len(HEADERS))), strict=True))
        assert cells["Name"] == cells["User"] == cells["CPU %"] == "(another PID namespace)"
        assert cells["Host RAM"] == "–" and child.pid not in model.started_s
        assert not view.can_end(row)
        view.ask = lambda _parent, _question: True
        assert not view.end(row) and child.poll() is None
    finally:
        child.kill()
        child.wait(10)


def _fed_tab(qtbot, sample: Callable[[float], Sample]) -> ProcessesTab:
    """A processes tab with a users' table, given ``sample``'s lists read 10 s apart."""
    from trayvml.monitor.users import UserUsage
    from trayvml.ui.processes import ProcessesTab

    tab = ProcessesTab()
    qtbot.addWidget(tab)
    tab.users = UserUsage()
    for t_s in (1000.0, 1010.0):
        tab.users.update(sample(t_s))
        tab.update_processes(sample(t_s))
    return tab


def test_the_processes_tab_shows_units_sessions_container_names_and_each_jobs_gpu_time(qtbot) -> None:
    from trayvml.core.metrics import GPU_INDEX, GPU_METRICS
    from trayvml.core.sample import Attribution, DeviceInfo, GpuSample, MetricState, Sample
    from trayvml.ui.processes import HEADERS

    unit = Attribution(unit="finetune.service", job="finetune.service", job_kind="unit", root_pid=10)
    tmux = Attribution(session="tmux train", job="tmux train", job_kind="session", root_pid=20)
    docker = Attribution(
        container="34048520ee4d",
        container_name="train-llm",
        runtime="docker",
        job="docker train-llm",
        job_kind="container",
    )

    def sample(t_s: float) -> Sample:
        values = [0.0] * len(GPU_METRICS)
        values[GPU_INDEX["power_draw_w"]] = 100.0
        procs = tuple(
            replace(ProcessSample(0, pid, "compute", 1e9, "python", "alice", sm_util_percent=sm), attribution=job)
            for pid, sm, job in ((10, 50.0, unit), (20, 20.0, tmux), (21, 10.0, tmux), (30, 40.0, docker))
        )
        gpu = GpuSample(0, tuple(values), (MetricState.OK,) * len(GPU_METRICS), procs)
        return Sample(t_s, (gpu,), (DeviceInfo(0, "GPU", "GPU-0"),), None, None)

    tab = _fed_tab(qtbot, sample)
    model, table = tab.processes, tab.table
    rows = {model.pid_at(r): r for r in range(model.rowCount())}

    def cell(pid: int, header: str) -> str:
        return str(model.index(rows[pid], HEADERS.index(header)).data())

    assert (cell(10, "Unit"), cell(10, "Session"), cell(20, "Session")) == ("finetune.service", "", "tmux train")
    assert cell(30, "Container") == "train-llm" and cell(30, "Job") == "docker train-llm"  # its runtime's name
    # Each said by its process's job ("systemd unit finetune.service"): a column of its own said it
    # twice, and pushed the energy past a 1280 px window.
    assert all(table.isColumnHidden(HEADERS.index(h)) for h in ("Unit", "Session", "Container"))
    tab.group_box.setChecked(True)
    header = tab.tree.headerItem()
    assert header is not None
    time_column = [header.text(c) for c in range(tab.tree.columnCount())].index("GPU time")
    items = [tab.tree.topLevelItem(k) for k in range(tab.tree.topLevelItemCount())]
    shown = {item.text(0): item.text(time_column) for item in items if item is not None}
    # 10 s between reads: 50 % of the SMs is 5 GPU-seconds; the tmux session's two processes add up.
    assert shown == {
        "systemd unit finetune.service": "5 s",
        "terminal session tmux train": "3 s",
        "docker train-llm": "4 s",
    }
    # A notebook run in a container: its job says the notebook, the container's column where.
    later = sample(1020.0)
    inside = replace(docker, notebook="exp/a.ipynb", job="exp/a.ipynb", job_kind="notebook")
    procs = (*later.gpus[0].processes[:3], replace(later.gpus[0].processes[3], attribution=inside))
    tab.update_processes(replace(later, gpus=(replace(later.gpus[0], processes=procs),)))
    assert not table.isColumnHidden(HEADERS.index("Container"))
    assert table.isColumnHidden(HEADERS.index("Notebook"))  # (the job says it)


def test_the_job_tree_keeps_two_users_sessions_of_one_name_apart(qtbot) -> None:
    """Alice's and bob's "tmux default" (tmux's name for almost everyone's session) were one row,
    its GPU time and energy one user's."""
    from trayvml.core.metrics import GPU_INDEX, GPU_METRICS
    from trayvml.core.sample import Attribution, DeviceInfo, GpuSample, MetricState, Sample

    tmux = Attribution(session="tmux default", job="tmux default", job_kind="session", root_pid=1)

    def sample(t_s: float) -> Sample:
        values = [0.0] * len(GPU_METRICS)
        values[GPU_INDEX["power_draw_w"]] = 100.0
        procs = tuple(
            replace(ProcessSample(0, pid, "compute", 1e9, "python", user, sm_util_percent=sm), attribution=tmux)
            for pid, user, sm in ((20, "alice", 50.0), (30, "bob", 10.0))
        )
        gpu = GpuSample(0, tuple(values), (MetricState.OK,) * len(GPU_METRICS), procs)
        return Sample(t_s, (gpu,), (DeviceInfo(0, "GPU", "GPU-0"),), None, None)

    tab = _fed_tab(qtbot, sample)
    tab.group_box.setChecked(True)
    header = present(tab.tree.headerItem())
    columns = [header.text(c) for c in range(tab.tree.columnCount())]
    items = [present(tab.tree.topLevelItem(k)) for k in range(tab.tree.topLevelItemCount())]
    rows = sorted(
        (item.text(0), item.text(columns.index("User")), item.text(columns.index("GPU time"))) for item in items
    )
    assert rows == [("terminal session tmux default", "alice", "5 s"), ("terminal session tmux default", "bob", "1 s")]


def _many(lib, count: int, first_pid: int = 5000):
    """GPU 0 runs ``count`` compute processes (PIDs from ``first_pid``), whatever the scenario says."""
    from trayvml.nvml.sim.scenarios import SimProcess

    procs = [SimProcess(first_pid + k, f"worker{k}", "ada", "python w.py", (k + 1) * 2**20) for k in range(count)]
    lib.processes = lambda gpu: procs if gpu == 0 else []


COMPUTE = "nvmlDeviceGetComputeRunningProcesses_v3"


def test_a_process_list_is_read_in_one_call_while_its_buffer_suffices() -> None:
    source, clock, lib = simulated_source("idle:gpus=h100")
    _many(lib, 2)
    source.sample()
    before = lib.calls[COMPUTE]
    for _ in range(3):
        clock.advance_s(5)  # the process lists' cadence
        sample = source.sample()
    assert lib.calls[COMPUTE] - before == 3  # pynvml's way is a size query and a fill: 6
    assert [(p.pid, p.used_memory_bytes) for p in sample.gpus[0].processes] == [(5000, 2**20), (5001, 2 * 2**20)]


def test_a_process_list_that_outgrows_its_buffer_is_read_whole_and_the_buffer_kept() -> None:
    source, clock, lib = simulated_source("idle:gpus=h100")
    _many(lib, 1)
    source.sample()
    # Many more processes than the buffer holds: the driver answers INSUFFICIENT_SIZE with the
    # count it needs, and the list is read again, whole.
    _many(lib, 37)
    clock.advance_s(5)
    before = lib.calls[COMPUTE]
    grown = source.sample().gpus[0]
    assert lib.calls[COMPUTE] - before == 2
    assert [p.pid for p in grown.processes] == list(range(5000, 5037))
    assert grown.value("process_count") == 37
    assert grown.processes[-1].used_memory_bytes == 37 * 2**20
    # From then on one call again, and a shorter list is read as it is (no stale entries).
    _many(lib, 3, first_pid=7000)
    clock.advance_s(5)
    before = lib.calls[COMPUTE]
    shrunk = source.sample().gpus[0]
    assert lib.calls[COMPUTE] - before == 1
    assert [p.pid for p in shrunk.processes] == [7000, 7001, 7002]


def test_a_process_whose_memory_the_driver_cannot_tell_has_unknown_memory_in_the_one_call_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source, _clock, lib = simulated_source("idle:gpus=h100")
    _many(lib, 2)
    hidden = lib.processes(0)[1]
    # The simulator answers NVML_VALUE_NOT_AVAILABLE for it.
    monkeypatch.setattr(lib, "hides", lambda proc: proc is hidden)
    procs = source.sample().gpus[0].processes
    assert procs[0].used_memory_bytes == 2**20 and math.isnan(procs[1].used_memory_bytes)


def test_grouped_by_job_a_selected_process_can_be_ended_and_stays_selected(qtbot) -> None:
    from trayvml.core.metrics import GPU_METRICS
    from trayvml.core.sample import Attribution, DeviceInfo, GpuSample, MetricState, Sample
    from trayvml.ui.processes import ProcessesTab

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ours = Attribution(session="tmux train", job="tmux train", job_kind="session", root_pid=child.pid)
        pair = Attribution(unit="two.service", job="two.service", job_kind="unit", root_pid=1)

        def sample(t_s: float) -> Sample:
            procs = (
                replace(ProcessSample(0, child.pid, "compute", 2e9, "python", "me"), attribution=ours),
                replace(ProcessSample(0, 2**22 + 1, "compute", 1e9, "a", "other"), attribution=pair),
                replace(ProcessSample(0, 2**22 + 2, "compute", 1e9, "b", "other"), attribution=pair),
            )
            gpu = GpuSample(0, (0.0,) * len(GPU_METRICS), (MetricState.OK,) * len(GPU_METRICS), procs)
            return Sample(t_s, (gpu,), (DeviceInfo(0, "GPU", "GPU-0"),), None, None)

        tab = ProcessesTab()
        qtbot.addWidget(tab)
        tab.update_processes(sample(1000.0))
        tab.group_box.setChecked(True)
        items = [present(tab.tree.topLevelItem(k)) for k in range(tab.tree.topLevelItemCount())]
        jobs = {item.text(0): item for item in items}
        assert not tab.end_button.isEnabled()  # nothing selected
        jobs["systemd unit two.service"].setSelected(True)
        assert tab.selected_row() == -1 and not tab.end_button.isEnabled()  # a job of two: which one?
        jobs["systemd unit two.service"].setSelected(False)
        present(jobs["terminal session tmux train"].child(0)).setSelected(True)
        assert tab.processes.pid_at(tab.selected_row()) == child.pid and tab.end_button.isEnabled()

        tab.update_processes(sample(1005.0))  # the tree is rebuilt: the process stays selected
        (selected,) = tab.tree.selectedItems()
        parent = selected.parent()
        assert parent is not None and parent.text(0) == "terminal session tmux train"
        assert tab.end_button.isEnabled()
        tab.table.ask = lambda _parent, _question: True
        tab.end_button.click()
        assert child.wait(10) == -15  # SIGTERM
    finally:
        child.kill()
        child.wait(10)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="psutil's Linux boot time")
def test_a_process_is_the_same_process_after_the_wall_clock_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel moves the boot time with every step of the wall clock (NTP, a user), and psutil's
    start time of every process with it: a process seen before a step was another one after it
    (its energy from 0, its timeline split) and could not be ended ("already ended"). Here the step
    is psutil's boot time moved, as the kernel's would be; no clock of the machine is touched."""
    import psutil._pslinux

    from trayvml.host.processes import HostUsageReader, end_process, process_start

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        reader = HostUsageReader()
        started_s = process_start(child.pid)
        before = reader.read([child.pid])[child.pid]
        assert before.started_s == started_s and 0 <= before.runtime_s < 30
        booted_s = psutil._pslinux.boot_time()
        for step_s in (0.6, -3600.0, 3600.0):  # a part of a second, back an hour, forward an hour
            monkeypatch.setattr(psutil._pslinux, "boot_time", lambda step_s=step_s: booted_s + step_s)
            assert process_start(child.pid) == pytest.approx(started_s, abs=1e-6), step_s
            after = reader.read([child.pid])[child.pid]  # the handle kept since before the step
            assert after.started_s == pytest.approx(started_s, abs=1e-6), step_s
            assert before.runtime_s <= after.runtime_s < before.runtime_s + 30, step_s
        end_process(child.pid, started_s)
        assert child.wait(10) == -15  # SIGTERM: the process shown, not "already ended"
    finally:
        child.kill()
        child.wait(10)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="psutil's Linux boot time")
def test_a_trayvml_started_after_the_wall_clock_was_set_dates_a_process_as_the_one_before_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The history on disk knows a process by its PID and start. A tray or recorder started again
    after a step of the clock read another boot time, so dated every running process anew: a job's
    timeline in two from the restart, its GPU time split. The boot time is kept for the boot, in
    the state folder; a new boot (another boot_id) reads it anew. No clock of the machine is
    touched: psutil's boot time is moved, as the kernel's would be."""
    import psutil._pslinux

    from trayvml.host import processes

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr(processes, "_boot_id", lambda: "this boot")
    kept = tmp_path / "trayvml" / processes.BOOT_FILE

    def started_by_a_new_trayvml(pid: int) -> float:
        monkeypatch.setattr(processes, "_boot_s", functools.cache(processes._boot_s.__wrapped__))
        return processes.process_start(pid)

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    booted_s = psutil._pslinux.boot_time()
    try:
        started_s = started_by_a_new_trayvml(child.pid)  # the first trayvml process of this boot
        assert json.loads(kept.read_text()) == {"boot_id": "this boot", "boot_s": booted_s}
        monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: booted_s + 3600.0)
        # Another one, started after the clock was set an hour forward: the process as it was.
        assert started_by_a_new_trayvml(child.pid) == pytest.approx(started_s, abs=1e-6)
        monkeypatch.setattr(processes, "_boot_id", lambda: "the next boot")
        assert started_by_a_new_trayvml(child.pid) == pytest.approx(started_s + 3600.0, abs=1e-6)
        for broken in ("{not json", '{"boot_id": "the next boot", "boot_s": NaN}', "[]"):
            kept.write_text(broken)  # read anew, and kept again: a NaN start would match any process
            assert started_by_a_new_trayvml(child.pid) == pytest.approx(started_s + 3600.0, abs=1e-6), broken
            assert json.loads(kept.read_text())["boot_s"] == booted_s + 3600.0, broken
    finally:
        child.kill()
        child.wait(10)


def test_a_file_made_once_keeps_the_first_writer_s_content(tmp_path: Path) -> None:
    """Two trayvml processes starting at once each read no kept boot time and make one: the second
    keeps the first one's (FileExistsError), rather than replacing it with its own reading."""
    from trayvml.core.files import create_atomically

    path = tmp_path / "state" / "boot.json"
    create_atomically(path, b"first")
    with pytest.raises(FileExistsError):
        create_atomically(path, b"second")
    assert path.read_bytes() == b"first" and [p.name for p in path.parent.iterdir()] == ["boot.json"]


def test_long_names_are_cut_in_the_table_and_whole_in_its_tooltip(qtbot) -> None:
    """A container's, a notebook's or a job's name is anyone's to choose: one of 5000 characters
    made its column that wide (and the table with it)."""
    from PySide6.QtCore import Qt

    from trayvml.core.metrics import GPU_METRICS
    from trayvml.core.safe_text import NAME_LIMIT
    from trayvml.core.sample import Attribution, DeviceInfo, GpuSample, MetricState, Sample
    from trayvml.ui.processes import HEADERS, ProcessModel

    long = "c" * 5000
    attribution = Attribution(
        container="abc", container_name=long, runtime="docker", job=f"docker {long}", job_kind="container"
    )
    proc = ProcessSample(0, 42, "compute", 1e9, "python", "alice", attribution=attribution)
    states = [MetricState.OK] * len(GPU_METRICS)
    gpu = GpuSample(0, (math.nan,) * len(GPU_METRICS), tuple(states), (proc,))
    model = ProcessModel()
    model.update_processes(Sample(0.0, (gpu,), (DeviceInfo(0, "GPU", "GPU-0"),), None, None, simulation="training"))
    for header in ("Job", "Container"):
        index = model.index(0, HEADERS.index(header))
        shown = index.data()
        assert len(shown) == NAME_LIMIT and shown.endswith("…")
        assert index.data(Qt.ItemDataRole.ToolTipRole).endswith(long)
    assert model.index(0, HEADERS.index("Name")).data(Qt.ItemDataRole.ToolTipRole) is None  # short: no tooltip
