"""The process cache: PIDs from NVML's process lists, looked up on the host once each."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from trayvml.core.sample import ProcessDetails, ProcessSample

ProcessResolver = Callable[[int], ProcessDetails | None]
"""Looks a PID up on the host: details, None if it is gone, PermissionError if hidden."""

ProcessStart = Callable[[int], float]
"""When a host PID's process started (seconds since the epoch); NaN where it cannot tell."""

CACHE_MAX = 4096  # PIDs come and go; keep the cache bounded


class ProcessCache:
    """What the host knows of each process, looked up once per process: by PID and start time,
    since the kernel hands a PID to a new process once the old one has gone, and a new process
    under an old PID must not show the old one's name, user or command."""

    def __init__(
        self, resolve: ProcessResolver | None = None, started: ProcessStart | None = None, foreign_pids: bool = False
    ) -> None:
        self.resolve = resolve or (lambda pid: None)
        self.started = started or (lambda pid: math.nan)
        # NVML's PIDs are the host's and we run in another PID namespace: a PID here is not the
        # process NVML means, so nothing is looked up (no other process's name or user shown).
        self.foreign_pids = foreign_pids
        self._details: dict[tuple[int, float], ProcessDetails | PermissionError | None] = {}

    def samples(self, gpu_index: int, kind: str, procs: Any) -> tuple[ProcessSample, ...]:
        """``procs`` (pynvml's process structs) as samples, with what the host knows of each."""
        return tuple(self._sample(gpu_index, kind, p) for p in procs)

    def _sample(self, gpu_index: int, kind: str, proc: Any) -> ProcessSample:
        pid = int(proc.pid)
        used = proc.usedGpuMemory
        memory = math.nan if used is None else float(used)
        if self.foreign_pids:
            return ProcessSample(gpu_index, pid, kind, memory, foreign_pid=True)
        started = self.started(pid)
        key = (pid, -1.0 if math.isnan(started) else started)  # NaN is no dictionary key
        details = self._details.get(key)
        if details is None:
            try:
                details = self.resolve(pid)
            except PermissionError as error:
                details = error
            if len(self._details) > CACHE_MAX:
                self._details.clear()
            self._details[key] = details
        if isinstance(details, ProcessDetails):
            return ProcessSample(
                gpu_index,
                pid,
                kind,
                memory,
                details.name,
                details.user,
                details.command,
                details.container,
                started_s=started,
                attribution=details.attribution,
            )
        return ProcessSample(
            gpu_index, pid, kind, memory, no_permission=isinstance(details, PermissionError), started_s=started
        )


def merged_by_pid(lists: Iterable[tuple[ProcessSample, ...]]) -> tuple[ProcessSample, ...]:
    """The compute and graphics lists as one list of processes, each PID once.

    A program that both computes and draws (a renderer's viewport, a game using CUDA, often the
    desktop's own compositor) is in both of NVML's lists; counted twice, it doubles the process
    count and takes two shares of the GPU's energy. Merged as nvitop's Device.processes() does:
    one process of kind "compute+graphics" (nvidia-smi's "C+G"), with the larger of the two memory
    figures (the compute one where only it is known).
    """
    by_pid: dict[int, ProcessSample] = {}
    for processes in lists:
        for p in processes:
            seen = by_pid.get(p.pid)
            if seen is None:
                by_pid[p.pid] = p
                continue
            kinds = sorted({*seen.kind.split("+"), *p.kind.split("+")})
            memories = [m for m in (seen.used_memory_bytes, p.used_memory_bytes) if not math.isnan(m)]
            by_pid[p.pid] = replace(
                seen, kind="+".join(kinds), used_memory_bytes=max(memories) if memories else math.nan
            )
    return tuple(by_pid.values())
