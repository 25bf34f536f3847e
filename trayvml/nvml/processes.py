"""The process cache: PIDs from NVML's process lists, looked up on the host once each."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from trayvml.core.sample import ProcessDetails, ProcessSample

ProcessResolver = Callable[[int], ProcessDetails | None]
"""Looks a PID up on the host: details, None if it is gone, PermissionError if hidden."""

CACHE_MAX = 4096  # PIDs come and go; keep the cache bounded


class ProcessCache:
    def __init__(self, resolve: ProcessResolver | None = None) -> None:
        self.resolve = resolve or (lambda pid: None)
        self._details: dict[int, ProcessDetails | PermissionError | None] = {}

    def samples(self, gpu_index: int, kind: str, procs: Any) -> tuple[ProcessSample, ...]:
        """``procs`` (pynvml's process structs) as samples, with what the host knows of each."""
        return tuple(self._sample(gpu_index, kind, p) for p in procs)

    def _sample(self, gpu_index: int, kind: str, proc: Any) -> ProcessSample:
        pid = int(proc.pid)
        details = self._details.get(pid)
        if details is None:
            try:
                details = self.resolve(pid)
            except PermissionError as error:
                details = error
            if len(self._details) > CACHE_MAX:
                self._details.clear()
            self._details[pid] = details
        used = proc.usedGpuMemory
        memory = math.nan if used is None else float(used)
        if isinstance(details, ProcessDetails):
            return ProcessSample(
                gpu_index, pid, kind, memory, details.name, details.user, details.command, details.container
            )
        return ProcessSample(gpu_index, pid, kind, memory, no_permission=isinstance(details, PermissionError))
