"""Host figures as jupyterlab-nvdashboard's Machine Resources shows them, from psutil."""

from __future__ import annotations

import math
import time

import psutil

from trayvml.core.metrics import HOST_METRICS
from trayvml.core.sample import HostSample

NAN = math.nan


def memory_total_available() -> tuple[float, float]:
    """The host's memory: its total and what is available (free plus what can be reclaimed at once).

    ``total - available`` is what people mean by used, as ``free`` and nvtop's unified-memory
    fallback count it (MemTotal - MemAvailable), not psutil's ``used``."""
    memory = psutil.virtual_memory()
    return float(memory.total), float(memory.available)


class HostSampler:
    """Samples the host; rates are per second between two calls (NaN on the first)."""

    def __init__(self) -> None:
        psutil.cpu_percent(percpu=True)  # primes psutil's per-core baseline
        self._last: tuple[float, tuple[float, float, float, float]] | None = None

    def _io_counters(self) -> tuple[float, float, float, float]:
        # nowrap=False: psutil need not keep its own wrap table; a counter going back gives NaN below.
        disk = psutil.disk_io_counters(perdisk=False, nowrap=False)
        net = psutil.net_io_counters(pernic=False, nowrap=False)
        return (
            float(disk.read_bytes) if disk else NAN,
            float(disk.write_bytes) if disk else NAN,
            float(net.bytes_recv) if net else NAN,
            float(net.bytes_sent) if net else NAN,
        )

    def sample(self) -> HostSample:
        cores = tuple(psutil.cpu_percent(percpu=True))
        memory = psutil.virtual_memory()
        swap = psutil.swap_memory()
        # Rates use the real monotonic clock: these counters are real even under simulation.
        now_s = time.monotonic()
        counters = self._io_counters()
        rates = [NAN] * 4
        if self._last is not None:
            elapsed_s = now_s - self._last[0]
            if elapsed_s > 0:
                rates = [
                    (new - old) / elapsed_s if new >= old else NAN
                    for new, old in zip(counters, self._last[1], strict=True)
                ]
        self._last = (now_s, counters)
        used = float(memory.total - memory.available)  # what people mean by "used"
        values = {
            "cpu_percent": sum(cores) / len(cores) if cores else NAN,
            "ram_used_bytes": used,
            "ram_total_bytes": float(memory.total),
            "ram_used_percent": 100.0 * used / memory.total if memory.total else NAN,
            "swap_used_bytes": float(swap.used),
            "swap_total_bytes": float(swap.total),
            "disk_read_bytes_per_s": rates[0],
            "disk_write_bytes_per_s": rates[1],
            "net_rx_bytes_per_s": rates[2],
            "net_tx_bytes_per_s": rates[3],
        }
        return HostSample(tuple(values[m.key] for m in HOST_METRICS), cores)
