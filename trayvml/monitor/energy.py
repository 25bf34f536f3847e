"""Energy per GPU, per process and per job, from the samples.

A GPU's energy comes from the driver's counter (``energy_consumed_j``, Volta and newer) where it
answers, and from its power draw integrated over time where it does not (older GPUs, laptops); a
runtime-suspended GPU draws 0 W here (it is not queried, and sleeping is what it costs least).
Each tick's energy is shared among the GPU's processes by their share of its SMs (NVML's
per-process utilization, with its last-seen timestamp) or, where the driver does not tell it (MIG,
old drivers, no samples yet), of its memory. Where the process lists are read only now and then
(the idle tray reads them every STORE_PROCESSES_S for the history on disk), the energy between two
readings is shared at the second by the mean of each process's share at the two (a trapezoid, as
power is integrated: a process at one reading only gets half its share there, having run some part
of the time between); energy with no list read for SHARED_LATER_S, or no process to share it with,
is "unattributed". A job is the process's job as ``ProcessSample.job_identity`` keys it (its notebook's kernel,
container, Slurm job, unit, session or process tree, from trayvml.host.attribution), else the process.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trayvml.core.demand import STORE_PROCESSES_S
from trayvml.core.i18n import translate
from trayvml.core.sample import GpuSample, MetricState, ProcessSample, Sample, job_text
from trayvml.core.units import format_duration

if TYPE_CHECKING:
    from trayvml.history.rings import Series

J_PER_WH = 3600.0
CHECKPOINT_S = 10.0  # how finely energy over a range can be told
# Power is not integrated across a longer gap between readings (the app was stopped, a stall): 1.5
# times the longest sampling or remote interval (60 s), as readings that far apart come a few ms
# either side of it (half of them were dropped at 60 s).
MAX_GAP_S = 90.0
ENTRIES_MAX = 4096  # processes (and jobs) whose energy is kept; past it, those no longer listed go
DRIVER, INTEGRATED = "driver counter", "integrated power"  # in snapshot --json: not translated
# The energy of the ticks without process lists is shared at the next reading within this long: a
# reading or two missed (slow ticks) loses nothing; lists no longer read leave it unattributed.
SHARED_LATER_S = 3 * STORE_PROCESSES_S


def job_key(process: ProcessSample) -> str:
    """What a process's energy adds up under, in English (snapshot --json): its job (core.sample)."""
    return job_text(process, translated=False)


ProcessKey = tuple[int, int, float]
JobKey = tuple[int, str, str, str, float]  # (GPU, user, kind, name, start): see _job_key


def process_key(process: ProcessSample) -> ProcessKey:
    """(GPU, PID, start time): a PID the kernel hands to a new process later is another process,
    whose energy starts from 0 (-1 stands for an unknown start time, NaN being no dictionary key)."""
    return (process.gpu_index, process.pid, process.started_key)


def _job_key(process: ProcessSample) -> JobKey:
    """A job spans its processes (ProcessSample.job_identity), on each GPU; its user's: a
    session's, a user unit's or a notebook's name is each user's own ("tmux default" of two users
    was one job, each shown the other's energy too)."""
    return (process.gpu_index, process.user, *process.job_identity)


@dataclass
class _GpuEnergy:
    since_start_wh: float = 0.0
    method: str = ""  # DRIVER or INTEGRATED, "" before the second sample
    last_counter_j: float = math.nan
    last_power_w: float = math.nan
    last_s: float = math.nan
    unattributed_wh: float = 0.0
    # Since the process lists were last read: the energy to share at the next reading, and each
    # process's share at the last one (with the process, for its job).
    pending_wh: float = 0.0
    shares: dict[ProcessKey, tuple[ProcessSample, float]] = field(default_factory=dict)
    listed_s: float = math.nan  # when the lists were last read; NaN: never
    # (time, energy since start) every CHECKPOINT_S, for any range the history covers
    times_s: deque[float] = field(default_factory=deque)
    totals_wh: deque[float] = field(default_factory=deque)


class EnergyMeter:
    """Wh per GPU (by index) since it started, over a range, and per process and job."""

    def __init__(self, span_s: float = 12 * 3600.0) -> None:
        self.span_s = span_s
        self._gpus: dict[int, _GpuEnergy] = {}
        self.process_wh: dict[ProcessKey, float] = {}  # (GPU, PID, start) -> Wh attributed
        self.job_wh: dict[JobKey, float] = {}  # (GPU, job key, start of a process's job) -> Wh attributed

    def update(self, sample: Sample) -> None:
        for gpu in sample.gpus:
            self._update_gpu(gpu, sample.timestamp_s)
        if len(self.process_wh) > ENTRIES_MAX or len(self.job_wh) > ENTRIES_MAX:
            self._forget_ended()

    def _forget_ended(self) -> None:
        """Past ENTRIES_MAX, the processes and jobs listed at no GPU's last reading are let go
        (a sweep of short jobs made 100 000 of each, 40 MB, for as long as the tray ran)."""
        listed = {key: process for e in self._gpus.values() for key, (process, _) in e.shares.items()}
        self.process_wh = {key: self.process_wh[key] for key in listed if key in self.process_wh}
        jobs = {_job_key(process) for process in listed.values()}
        self.job_wh = {job: self.job_wh[job] for job in jobs if job in self.job_wh}

    def clock_set(self, step_s: float, now_s: float) -> None:
        """The wall clock was set by ``step_s`` before the sample at ``now_s`` (the host's Monitor
        tells). Set back, the checkpoints ahead of it go (the total since start stays): kept, no
        checkpoint was made until the clock passed them again, and the energy over a range up to
        now was unknown for as long as the step. Either way the last reading of the process lists
        moves with the clock: what waits to be shared waits as long as it would have."""
        for e in self._gpus.values():
            e.listed_s += step_s  # as long ago as before the step: SHARED_LATER_S holds either way
        if step_s >= 0:
            return
        for e in self._gpus.values():
            while e.times_s and e.times_s[-1] > now_s:
                e.times_s.pop()
                e.totals_wh.pop()

    def _update_gpu(self, gpu: GpuSample, now_s: float) -> None:
        e = self._gpus.setdefault(gpu.index, _GpuEnergy())
        counter = gpu.value("energy_consumed_j") if gpu.state("energy_consumed_j") is MetricState.OK else math.nan
        # Asleep is 0 W, for a GPU whose energy is known otherwise (a laptop without a power
        # sensor stays unknown: its awake hours are).
        power = (0.0 if e.method else math.nan) if gpu.asleep else gpu.value("power_draw_w")
        elapsed_s = now_s - e.last_s
        added_wh = 0.0
        if not math.isnan(counter) and not math.isnan(e.last_counter_j) and counter >= e.last_counter_j:
            added_wh, e.method = (counter - e.last_counter_j) / J_PER_WH, DRIVER
        elif 0 < elapsed_s <= MAX_GAP_S and not math.isnan(power) and not math.isnan(e.last_power_w):
            # The mean of the two readings over the time between them (trapezoids).
            added_wh = (power + e.last_power_w) / 2 * elapsed_s / J_PER_WH
            e.method = e.method or INTEGRATED
        # A tick without the counter (not read: the idle tray does not ask for it) forgets the last
        # reading, whose difference to the next would count again what power integration just added.
        e.last_counter_j = counter
        e.last_power_w, e.last_s = power, now_s
        e.since_start_wh += added_wh
        # The counter's step across a gap in the readings (a stalled driver, an unreachable host)
        # is the GPU's, but whose is not known: shared by the processes listed now, an hour's went
        # to one started a second before.
        shared_wh = added_wh if elapsed_s <= MAX_GAP_S else 0.0
        e.unattributed_wh += added_wh - shared_wh
        self._attribute(gpu, e, shared_wh, now_s)
        if not e.times_s or now_s - e.times_s[-1] >= CHECKPOINT_S:
            e.times_s.append(now_s)
            e.totals_wh.append(e.since_start_wh)
            while e.times_s and now_s - e.times_s[0] > self.span_s:
                e.times_s.popleft()
                e.totals_wh.popleft()

    def _attribute(self, gpu: GpuSample, e: _GpuEnergy, added_wh: float, now_s: float) -> None:
        if gpu.state("process_count") is not MetricState.OK:  # no lists this tick (most idle ones)
            if now_s - e.listed_s <= SHARED_LATER_S:  # (False where never read: NaN)
                e.pending_wh += added_wh
            else:
                e.unattributed_wh += e.pending_wh + added_wh
                e.pending_wh = 0.0
            return
        shares = _shares(gpu.processes)
        e.unattributed_wh += self._credit(shares, added_wh)
        if e.pending_wh:
            mean = {key: (process, share / 2) for key, (process, share) in e.shares.items()}
            for key, (process, share) in shares.items():
                mean[key] = (process, mean.get(key, (process, 0.0))[1] + share / 2)
            e.unattributed_wh += self._credit(mean, e.pending_wh)
        e.pending_wh, e.shares, e.listed_s = 0.0, shares, now_s

    def _credit(self, shares: dict[ProcessKey, tuple[ProcessSample, float]], wh: float) -> float:
        """Adds each process's share of ``wh`` to it and its job; what no share covers."""
        for key, (process, share) in shares.items():
            self.process_wh[key] = self.process_wh.get(key, 0.0) + wh * share
            job = _job_key(process)
            self.job_wh[job] = self.job_wh.get(job, 0.0) + wh * share
        covered = sum(share for _, share in shares.values())
        return wh * (1.0 - covered) if covered < 1.0 - 1e-9 else 0.0  # (shares add up to 1 but for rounding)

    # ---- what it tells ----
    def since_start_wh(self, gpu: int) -> float:
        e = self._gpus.get(gpu)
        return math.nan if e is None or not e.method else e.since_start_wh

    def method(self, gpu: int) -> str:
        e = self._gpus.get(gpu)
        return "" if e is None else e.method

    def between_wh(self, gpu: int, start_s: float, end_s: float) -> float:
        """Energy between two times (to CHECKPOINT_S); NaN where the meter has not seen them."""
        e = self._gpus.get(gpu)
        if e is None or not e.method or not e.times_s or start_s >= end_s:
            return math.nan
        times = list(e.times_s)
        if end_s < times[0]:
            return math.nan
        totals = list(e.totals_wh)
        return _at(times, totals, min(end_s, e.last_s), e) - _at(times, totals, max(start_s, times[0]), e)

    def process_energy_wh(self, process: ProcessSample) -> float:
        """Wh attributed to this process (0 before its first share)."""
        return self.process_wh.get(process_key(process), 0.0)

    def job_energy_wh(self, process: ProcessSample) -> float:
        """Wh attributed to the job this process belongs to."""
        return self.job_wh.get(_job_key(process), 0.0)

    def unattributed_wh(self, gpu: int) -> float:
        e = self._gpus.get(gpu)
        return math.nan if e is None else e.unattributed_wh


def _shares(processes: Sequence[ProcessSample]) -> dict[ProcessKey, tuple[ProcessSample, float]]:
    """Each process's share of its GPU's energy now (adding up to 1; none where there is nothing to
    tell it by): by its share of the SMs where the driver tells it for every process
    (nvmlDeviceGetProcessUtilization), else of the memory: one process's unknown share (NaN) would
    otherwise hand its part to the others."""
    weights = {}
    if not any(math.isnan(p.sm_util_percent) for p in processes):
        weights = {process_key(p): (p, p.sm_util_percent) for p in processes if p.sm_util_percent > 0}
    if not weights:
        weights = {process_key(p): (p, p.used_memory_bytes) for p in processes if p.used_memory_bytes > 0}
    total = sum(weight for _, weight in weights.values())
    return {key: (p, weight / total) for key, (p, weight) in weights.items()} if total else {}


def _at(times: list[float], totals: list[float], t_s: float, e: _GpuEnergy) -> float:
    """The running total at ``t_s``, linear between checkpoints (the latest total after the last)."""
    if t_s >= e.last_s:
        return e.since_start_wh
    k = bisect.bisect_right(times, t_s)
    if k >= len(times):
        t0, w0, t1, w1 = times[-1], totals[-1], e.last_s, e.since_start_wh
    else:
        t0, w0, t1, w1 = times[k - 1], totals[k - 1], times[k], totals[k]
    return w0 if t1 <= t0 else w0 + (w1 - w0) * (t_s - t0) / (t1 - t0)


def format_energy(wh: float) -> str:
    """``2.41 kWh``, ``312 Wh``, ``4.2 Wh``; "–" where unknown."""
    if math.isnan(wh):
        return "–"
    if wh >= 1000:
        return f"{wh / 1000:.2f} kWh"
    return f"{wh:.0f} Wh" if wh >= 100 else f"{wh:.1f} Wh"


def job_energy_text(meter: EnergyMeter, gpu: int, end_s: float, span_s: float, job: str = "") -> str:
    """``2.41 kWh on GPU 1 over 3 h 12 min.``: what a finished job cost, for its notification; with
    the ``job``'s name where it is known, ``Slurm job 4242 (train_llm) finished on GPU 1 after
    3 h 12 min, 2.41 kWh.`` (``span_s`` NaN: how long is unknown)."""
    wh = math.nan if math.isnan(span_s) else meter.between_wh(gpu, end_s - span_s, end_s)
    duration = "" if math.isnan(span_s) else format_duration(span_s, "min")
    if job and duration and not math.isnan(wh):
        text = translate("energy", "{job} finished on GPU {gpu} after {duration}, {energy}.")
    elif job and duration:
        text = translate("energy", "{job} finished on GPU {gpu} after {duration}.")
    elif job:
        text = translate("energy", "{job} finished on GPU {gpu}.")
    elif duration and not math.isnan(wh):
        text = translate("energy", "{energy} on GPU {gpu} over {duration}.")
    else:
        return ""
    return text.format(job=job, gpu=gpu, duration=duration, energy=format_energy(wh))


@dataclass(frozen=True)
class RangeEnergy:
    """Each GPU's energy over a range, from the power in the history."""

    wh: tuple[float, ...]  # per column of the power series (a GPU index); NaN: no power recorded for it
    covered_s: float  # how much of the range the history holds power for (the best-covered GPU)
    span_s: float  # the range's length


def energy_in_range(series: Series | None, start_s: float, end_s: float) -> RangeEnergy:
    """Integrate a power series (W, a History's ``power_draw_w``) over ``[start_s, end_s]``.

    Each bucket is its mean power times the part of it inside the range: exact for the mean of
    what was recorded, at every tier of the history (every sample, or 5 s, 30 s, 1 min means). A
    bucket with no value (before the history, a gap, a GPU without a power reading) adds nothing
    and is not "covered": the range's energy is never the energy since launch, and a range the
    history lacks says so through ``covered_s``.
    """
    import numpy as np  # the window's and the history's: `snapshot` and `serve` meter energy without it

    span_s = max(end_s - start_s, 0.0)
    if series is None or not len(series.times_s) or span_s <= 0:
        return RangeEnergy((), 0.0, span_s)
    starts = series.times_s.astype(np.float64)
    inside = np.clip(np.minimum(starts + series.step_s, end_s) - np.maximum(starts, start_s), 0.0, None)
    watts = series.mean.astype(np.float64)
    known = np.isfinite(watts)
    joules = np.where(known, watts, 0.0) * inside[:, None]
    covered = (known * inside[:, None]).sum(axis=0)
    wh = np.where(covered > 0, joules.sum(axis=0) / J_PER_WH, math.nan)
    return RangeEnergy(tuple(wh.tolist()), float(covered.max(initial=0.0)), span_s)
