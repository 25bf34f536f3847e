"""GPU memory and GPU time per user, across this host's GPUs, and GPU time per job (no Qt).

Fed each sample by the Monitor; counts only the GPUs whose process lists that sample read (they are
read only while someone needs them). GPU-seconds are a process's share of its GPU's SMs (NVML's
per-process utilization) times the time since that GPU's lists were last read: one GPU busy for a
minute is 60 GPU-seconds. Where the driver does not tell a process's share (MIG, older drivers,
another user's process) its time is not guessed: the user's total is marked as a lower bound.
Processes whose user cannot be read (other users', another PID namespace's) are one row of their
own, user "", never spread over the known users. A job's GPU time adds up its processes' on every
GPU (a job is ProcessSample.job_identity's); a process whose job cannot be read adds to no job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trayvml.core.sample import MetricState, ProcessSample, Sample

# A longer gap between reads (stopped app, lists not wanted) adds no GPU time, as it adds no energy.
from trayvml.monitor.energy import MAX_GAP_S

JOBS_MAX = 4096  # jobs kept; past it, those with no process now are forgotten

# (user, kind, name, start time of a process that is its own job, else -1): ProcessSample.job_identity
JobKey = tuple[str, str, str, float]


def job_key(process: ProcessSample) -> JobKey:
    """A job spans its processes and GPUs (ProcessSample.job_identity). Its user's: the names of a
    session, a user unit or a notebook are each user's own ("tmux default" is almost everyone's)."""
    return (process.user, *process.job_identity)


@dataclass(frozen=True)
class UserRow:
    user: str  # "": processes whose user cannot be read here
    gpus: tuple[int, ...]  # where it has processes now
    processes: int  # now
    memory_bytes: float  # now; NaN where NVML tells none of its processes' memory
    gpu_seconds: float  # SM share x seconds since trayvml started
    gpu_seconds_partial: bool  # some of its time was not told (share unknown): a lower bound


@dataclass
class _Total:
    gpu_seconds: float = 0.0
    partial: bool = False


class UserUsage:
    """Per user: GPUs, processes and memory in the latest sample that read process lists, and
    GPU-seconds since it started."""

    def __init__(self) -> None:
        self._totals: dict[str, _Total] = {}
        self._last_read_s: dict[int, float] = {}  # per GPU: when its lists were last read
        self.read_at_s = math.nan  # when the rows' "now" was read; NaN: no lists read yet
        self._now: dict[str, tuple[set[int], int, float]] = {}
        self._jobs: dict[JobKey, _Total] = {}

    def update(self, sample: Sample) -> None:
        read = [g for g in sample.gpus if not g.lost and g.state("process_count") is MetricState.OK]
        if not read:
            return  # "now" stays as last read, with its time (read_at_s) said beside it
        listed = {g.index for g in read}
        now: dict[str, tuple[set[int], int, float]] = {}
        jobs_now: set[JobKey] = set()
        # A GPU in MIG mode lists every process of its instances, which list them too: where an
        # instance's list was read, the board's is left out (one 12 GiB process was 24 GiB, twice).
        parents = {d.mig_parent_index for d in sample.devices if d.mig_parent_index >= 0 and d.index in listed}
        for gpu in read:
            if gpu.index in parents:
                continue
            since = self._last_read_s.get(gpu.index, math.nan)
            elapsed_s = sample.timestamp_s - since
            self._last_read_s[gpu.index] = sample.timestamp_s
            for process in gpu.processes:
                user = process.user if not process.unseen else ""
                gpus, count, memory = now.get(user, (set(), 0, math.nan))
                gpus.add(gpu.index)
                if not math.isnan(process.used_memory_bytes):
                    memory = (0.0 if math.isnan(memory) else memory) + process.used_memory_bytes
                now[user] = (gpus, count + 1, memory)
                total = self._totals.get(user)
                if total is None:  # (setdefault would make a _Total to throw away, every process every sample)
                    total = self._totals[user] = _Total()
                totals = [total]
                if not process.unseen:  # else its job cannot be read
                    key = job_key(process)
                    jobs_now.add(key)
                    job = self._jobs.get(key)
                    if job is None:
                        job = self._jobs[key] = _Total()
                    totals.append(job)
                if not 0 < elapsed_s <= MAX_GAP_S:
                    continue  # the first read, or after a long gap: no span to count
                share = process.sm_util_percent
                for total in totals:
                    if math.isnan(share):
                        total.partial = True
                    else:
                        # NVML's per-process figure can exceed 100 % at times (nvtop clamps it too).
                        total.gpu_seconds += min(max(share, 0.0), 100.0) / 100.0 * elapsed_s
        self._now = now
        if len(self._jobs) > JOBS_MAX:
            self._jobs = {key: total for key, total in self._jobs.items() if key in jobs_now}
        self.read_at_s = sample.timestamp_s

    def rows(self) -> list[UserRow]:
        """Users with processes now or GPU time since start, most memory first."""
        users = set(self._now) | set(self._totals)
        rows = []
        for user in users:
            gpus, count, memory = self._now.get(user, (set(), 0, math.nan))
            total = self._totals.get(user, _Total())
            rows.append(UserRow(user, tuple(sorted(gpus)), count, memory, total.gpu_seconds, total.partial))
        return sorted(rows, key=lambda r: (-(0.0 if math.isnan(r.memory_bytes) else r.memory_bytes), r.user))

    def job_gpu_seconds(self, process: ProcessSample) -> tuple[float, bool]:
        """(GPU-seconds of the job ``process`` belongs to, across GPUs, since trayvml started;
        whether some of it was not told, so that it is a lower bound). (NaN, False) for a job
        never seen in a read list, or a process whose job cannot be read here."""
        total = None if process.unseen else self._jobs.get(job_key(process))
        return (math.nan, False) if total is None else (total.gpu_seconds, total.partial)
