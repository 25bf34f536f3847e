"""Memory and GPU time per user across GPUs (trayvml.monitor.users), fed by the Monitor."""

from __future__ import annotations

import math
from collections.abc import Mapping

from trayvml.core.metrics import GPU_INDEX, GPU_METRICS
from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, ProcessSample, Sample
from trayvml.monitor.users import UserUsage

NAN = math.nan


def _sample(t_s: float, processes: Mapping[int, tuple[ProcessSample, ...]], read: bool = True) -> Sample:
    gpus = []
    for index, procs in processes.items():
        states = [MetricState.OK] * len(GPU_METRICS)
        if not read:
            states[GPU_INDEX["process_count"]] = MetricState.NOT_READ
        gpus.append(GpuSample(index, (NAN,) * len(GPU_METRICS), tuple(states), procs if read else ()))
    devices = tuple(DeviceInfo(i, "GPU", f"GPU-{i}") for i in processes)
    return Sample(t_s, tuple(gpus), devices, None, None)


def _p(gpu: int, pid: int, user: str, memory: float, sm: float, no_permission: bool = False) -> ProcessSample:
    return ProcessSample(gpu, pid, "compute", memory, user=user, sm_util_percent=sm, no_permission=no_permission)


def test_memory_now_and_gpu_seconds_add_up_per_user_across_gpus() -> None:
    usage = UserUsage()
    procs = {
        0: (_p(0, 1, "alice", 4e9, 50.0), _p(0, 2, "bob", 1e9, 25.0)),
        1: (_p(1, 3, "alice", 2e9, 100.0), _p(1, 9, "", NAN, NAN, no_permission=True)),
    }
    for k in range(0, 65, 5):  # lists read every 5 s for a minute
        usage.update(_sample(k, procs))
    rows = {r.user: r for r in usage.rows()}
    alice, bob, hidden = rows["alice"], rows["bob"], rows[""]
    assert (alice.gpus, alice.processes, alice.memory_bytes) == ((0, 1), 2, 6e9)
    assert math.isclose(alice.gpu_seconds, 60 * 0.5 + 60 * 1.0) and not alice.gpu_seconds_partial
    assert math.isclose(bob.gpu_seconds, 15.0)
    # Another user's process: counted, its memory and time unknown rather than 0 or guessed.
    assert hidden.processes == 1 and math.isnan(hidden.memory_bytes) and hidden.gpu_seconds_partial
    assert [r.user for r in usage.rows()][:2] == ["alice", "bob"]


def test_ticks_without_lists_add_no_time_and_a_long_gap_is_not_counted() -> None:
    usage = UserUsage()
    procs = {0: (_p(0, 1, "alice", 1e9, 100.0),)}
    usage.update(_sample(0, procs))
    usage.update(_sample(5, procs, read=False))  # nobody wanted the lists: nothing known of those seconds
    assert usage.read_at_s == 0 and usage.rows()[0].gpu_seconds == 0
    usage.update(_sample(10, procs))
    assert math.isclose(usage.rows()[0].gpu_seconds, 10.0)
    usage.update(_sample(3600, procs))  # an hour unseen: not an hour of GPU time
    assert math.isclose(usage.rows()[0].gpu_seconds, 10.0)
    usage.update(_sample(3600, {0: ()}))  # gone now: its time since start stays, its memory is none
    (row,) = usage.rows()
    assert row.processes == 0 and row.gpus == () and math.isclose(row.gpu_seconds, 10.0)


def test_lists_read_a_minute_apart_add_their_gpu_time() -> None:
    """Read at the longest interval (60 s), a few ms either side of a minute apart: each counts."""
    usage = UserUsage()
    procs = {0: (_p(0, 1, "alice", 1e9, 50.0),)}
    for t_s in (0.0, 60.004, 119.998, 180.02):
        usage.update(_sample(t_s, procs))
    assert math.isclose(usage.rows()[0].gpu_seconds, 180.02 * 0.5)


def test_gpu_seconds_add_up_per_job_across_its_processes_and_gpus() -> None:
    from dataclasses import replace

    from trayvml.core.sample import Attribution

    tmux = Attribution(session="tmux train", job="tmux train", job_kind="session", root_pid=1)
    usage = UserUsage()
    procs = {
        0: (replace(_p(0, 1, "alice", 4e9, 50.0), attribution=tmux), _p(0, 2, "bob", 1e9, 25.0, no_permission=True)),
        1: (replace(_p(1, 3, "alice", 2e9, NAN), attribution=tmux), replace(_p(1, 4, "alice", 1e9, 10.0))),
    }
    for k in range(0, 65, 5):
        usage.update(_sample(k, procs))
    seconds, partial = usage.job_gpu_seconds(procs[0][0])
    assert math.isclose(seconds, 60 * 0.5) and partial  # its GPU 1 process's share is not told: at least
    assert usage.job_gpu_seconds(procs[1][0]) == (seconds, partial)  # one job across both GPUs
    alone = usage.job_gpu_seconds(procs[1][1])  # a process with nothing else known is its own job
    assert math.isclose(alone[0], 6.0) and not alone[1]
    assert math.isnan(usage.job_gpu_seconds(procs[0][1])[0])  # another user's: its job cannot be read
    # A later process given PID 4 is another job: its time starts from nothing.
    later = replace(procs[1][1], started_s=5000.0)
    assert math.isnan(usage.job_gpu_seconds(later)[0])


def test_two_users_sessions_of_one_name_are_two_jobs() -> None:
    """tmux names its session by its socket, "default" for almost everyone: alice's and bob's
    were one job, each shown the GPU time (and the energy) of both."""
    from dataclasses import replace

    from trayvml.core.sample import Attribution
    from trayvml.monitor.energy import EnergyMeter

    tmux = Attribution(session="tmux default", job="tmux default", job_kind="session", root_pid=1)
    alice = replace(_p(0, 1, "alice", 4e9, 100.0), attribution=tmux)
    bob = replace(_p(0, 2, "bob", 4e9, 50.0), attribution=tmux)
    usage = UserUsage()
    meter = EnergyMeter()
    for k in range(0, 65, 5):
        sample = _sample(k, {0: (alice, bob)})
        power = list(sample.gpus[0].values)
        power[GPU_INDEX["power_draw_w"]] = 360.0
        sample = replace(sample, gpus=(replace(sample.gpus[0], values=tuple(power)),))
        usage.update(sample)
        meter.update(sample)
    assert math.isclose(usage.job_gpu_seconds(alice)[0], 60.0) and math.isclose(usage.job_gpu_seconds(bob)[0], 30.0)
    assert 0 < meter.job_energy_wh(alice) == meter.process_energy_wh(alice)  # alice's job is hers alone
    assert meter.job_energy_wh(bob) == meter.process_energy_wh(bob)


def test_a_mig_boards_list_is_not_counted_beside_its_instances() -> None:
    """A GPU in MIG mode lists every process of its instances, which list them too: one 12 GiB
    process counted as 24 GiB and two processes in the users' table."""
    from dataclasses import replace

    usage = UserUsage()
    job = _p(1, 7, "alice", 12e9, NAN)
    sample = _sample(0, {0: (replace(job, gpu_index=0),), 1: (job,)})
    devices = (replace(sample.devices[0], mig_mode_current=True), replace(sample.devices[1], mig_parent_index=0))
    usage.update(replace(sample, devices=devices))
    (row,) = usage.rows()
    assert (row.processes, row.memory_bytes, row.gpus) == (1, 12e9, (1,))
