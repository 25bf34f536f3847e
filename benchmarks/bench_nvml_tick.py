"""What one reader tick costs on serve's simulated GPUs (issue 23, P13): NVML calls, and time.

    PYTHONPATH=<tree> .venv/bin/python benchmarks/bench_nvml_tick.py [--ticks N] [--paced N] [-v] [--real]
        [--demand all|idle|window]

On 8 simulated H100s (``training``, as ``bench_serve.py`` runs serve), without driver latency:
the NVML calls per tick (mean over N ticks, the 5 s and 10 s cadences included: deterministic),
and the median wall time of a tick in a hot loop, whole and outside the simulated library (what
trayvml, pynvml and ctypes spend; the simulated driver's own Python is timed around each of its
C functions and taken out). ``--paced N``: N ticks one second apart with ``latency=realistic``,
as serve reads, median and mean CPU time of the reading thread per tick. Run it once with
PYTHONPATH=/work/main (the baseline) and once with the tree to compare, in the same session.

``--real``: the same on this machine's GPUs and libnvidia-ml instead of the simulated ones; each C
function is timed around its call, so the table gives what the real driver takes per call (there the
hot loop's "outside" is what trayvml, pynvml and ctypes spend, the driver taken out).

``--demand``: what the reader is asked for: ``all`` (serve's, the default), ``idle`` (the idle tray's:
the history's metrics and SM activity for the stalled-job rule) or ``window`` (the graph window on
its GPU page: every metric but the process lists and the energy counter).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import trayvml
from trayvml.core.clock import ManualClock, SystemClock
from trayvml.core.demand import EVERYTHING, HISTORY, PROCESSES
from trayvml.nvml import binding
from trayvml.nvml.reader import NvmlReader
from trayvml.nvml.sim import base as simbase
from trayvml.nvml.sim import parse_spec
from trayvml.nvml.sim.library import SimulatedNvml, install, uninstall

SPEC = "training:gpus=h100*8,start=1800,past=0"
DEMANDS: dict[str, frozenset[str] | None] = {
    "all": None,
    "idle": HISTORY | {"sm_activity_percent"},
    "window": EVERYTHING - {PROCESSES, "process_count", "energy_consumed_j"},
}
_inner = simbase.SimFunction.__call__
_in_library_s = [0.0]


def _timed(self: Any, *args: Any) -> Any:
    start = time.perf_counter()
    try:
        return _inner(self, *args)
    finally:
        _in_library_s[0] += time.perf_counter() - start


def _hot_ticks(
    reader: NvmlReader, ticks: int, before: Any = None, demand: frozenset[str] | None = None
) -> tuple[list[float], list[float]]:
    """``ticks`` reads one after the other (``before`` each, where given): ms a tick in all, and
    outside the library (its time counted in ``_in_library_s`` by the timed functions)."""
    whole, outside = [], []
    for _ in range(ticks):
        if before is not None:
            before()
        _in_library_s[0] = 0.0
        start = time.perf_counter()
        reader.read(demand)
        elapsed_s = time.perf_counter() - start
        whole.append(elapsed_s * 1e3)
        outside.append((elapsed_s - _in_library_s[0]) * 1e3)
    return whole, outside


class _TimedFunction:
    """One C function of the real library, timed; pynvml sets ``restype`` on it, which the real one must get."""

    def __init__(self, name: str, function: Any, spent: dict[str, list[float]]) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_function", function)
        object.__setattr__(self, "_spent", spent)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._function, name, value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._function, name)

    def __call__(self, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return self._function(*args)
        finally:
            elapsed_s = time.perf_counter() - start
            _in_library_s[0] += elapsed_s
            self._spent.setdefault(self._name, []).append(elapsed_s)


class _TimedLibrary:
    """libnvidia-ml with every C function timed (``--real``)."""

    def __init__(self, library: Any) -> None:
        self._library = library
        self._name = getattr(library, "_name", None)  # binding.library_location reads it
        self.spent: dict[str, list[float]] = {}
        self._functions: dict[str, _TimedFunction] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        function = self._functions.get(name)
        if function is None:
            function = _TimedFunction(name, getattr(self._library, name), self.spent)
            self._functions[name] = function
        return function


def real(ticks: int, paced_ticks: int, demand: frozenset[str] | None) -> None:
    """``--real``: the hot loop and the paced ticks on this machine's GPUs, per-function driver times."""
    library = _TimedLibrary(binding.load_real_library())
    binding.install_library(library)
    reader = NvmlReader(SystemClock())
    try:
        for _ in range(3):  # open, then settle
            gpus = len(reader.read(demand))
            time.sleep(1.0)
        library.spent.clear()
        whole, outside = _hot_ticks(reader, ticks, demand=demand)
        cpu: list[float] = []
        calls = {name: len(times) for name, times in library.spent.items()}
        print(f"GPUs: {gpus}; NVML calls per tick (hot loop): {sum(calls.values()) / ticks:.2f}")
        print(
            f"hot loop, real driver: {statistics.median(whole):.3f} ms a tick (median), "
            f"{statistics.median(outside):.3f} ms of it outside libnvidia-ml"
        )
        _per_function(library.spent, ticks, "hot loop")
        library.spent.clear()
        for _ in range(paced_ticks):
            time.sleep(1.0)
            start = time.thread_time()
            reader.read(demand)
            cpu.append((time.thread_time() - start) * 1e3)
        if cpu:
            print(
                f"one tick a second, real driver: CPU {statistics.median(cpu):.3f} ms a tick (median), "
                f"{statistics.mean(cpu):.3f} ms (mean), over {len(cpu)} ticks"
            )
            _per_function(library.spent, paced_ticks, "one tick a second, the slower reads included")
        if demand is None:  # the driver's costs alone do not depend on what is asked
            import pynvml as N

            fields_alone(N.nvmlDeviceGetHandleByIndex(0))
            calls_alone(N.nvmlDeviceGetHandleByIndex(0))
    finally:
        reader.close()
        binding.install_library(None)


def _per_function(spent: dict[str, list[float]], ticks: int, what: str) -> None:
    print(f"per function ({what}): calls a tick, median and max ms a call")
    for name, times in sorted(spent.items(), key=lambda item: -sum(item[1])):
        print(f"  {len(times) / ticks:6.2f} {statistics.median(times) * 1e3:8.3f} {max(times) * 1e3:8.3f}  {name}")


def fields_alone(handle: Any, repeats: int = 15) -> None:
    """Each field of the reader's batch asked alone, on GPU 0: which of them the batch's time goes to."""
    import pynvml as N

    from trayvml.nvml.specs import FIELDS

    names: dict[int, list[str]] = {}
    for read in FIELDS:
        names.setdefault(read.field_id, []).append(f"{read.key} every {read.period_s:g} s")
    together = f"all {len(names)} fields in one call"
    times: dict[str, list[float]] = {together: []}
    for _ in range(repeats):
        for field_id, keys in names.items():
            start = time.perf_counter()
            (value,) = N.nvmlDeviceGetFieldValues(handle, [field_id])
            label = f"field {field_id}, return {value.nvmlReturn}: {', '.join(keys)}"
            times.setdefault(label, []).append(time.perf_counter() - start)
        start = time.perf_counter()
        N.nvmlDeviceGetFieldValues(handle, list(names))
        times[together].append(time.perf_counter() - start)
    print(f"each field alone, GPU 0: median and max ms of {repeats} calls")
    for label, spent in sorted(times.items(), key=lambda item: -statistics.median(item[1])):
        print(f"  {statistics.median(spent) * 1e3:8.3f} {max(spent) * 1e3:8.3f}  {label}")


def calls_alone(handle: Any, repeats: int = 15) -> None:
    """Calls that answer what costly fields do, or cost themselves, each alone on GPU 0: CPU (the
    thread's) and wall time, so that a cheaper way to the same number shows."""
    import pynvml as N

    calls = {
        "nvmlDeviceGetTotalEnergyConsumption": lambda: N.nvmlDeviceGetTotalEnergyConsumption(handle),
        "field 83 (the energy counter)": lambda: N.nvmlDeviceGetFieldValues(
            handle, [N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION]
        ),
        "nvmlDeviceGetPowerUsage": lambda: N.nvmlDeviceGetPowerUsage(handle),
        "nvmlDeviceGetPcieThroughput (TX)": lambda: N.nvmlDeviceGetPcieThroughput(handle, N.NVML_PCIE_UTIL_TX_BYTES),
        "fields 197 and 198 (the PCIe byte counters)": lambda: N.nvmlDeviceGetFieldValues(
            handle, [N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES, N.NVML_FI_DEV_PCIE_COUNT_RX_BYTES]
        ),
        "nvmlDeviceGetComputeRunningProcesses": lambda: N.nvmlDeviceGetComputeRunningProcesses(handle),
    }
    print(f"calls alone, GPU 0: median wall and CPU ms of {repeats} calls, 50 ms apart")
    for name, call in calls.items():
        wall, cpu = [], []
        for _ in range(repeats):
            time.sleep(0.05)
            start, start_cpu = time.perf_counter(), time.thread_time()
            try:
                call()
            except N.NVMLError as error:
                name = f"{name} ({error})"
            wall.append(time.perf_counter() - start)
            cpu.append(time.thread_time() - start_cpu)
        print(f"  {statistics.median(wall) * 1e3:8.3f} {statistics.median(cpu) * 1e3:8.3f}  {name}")


def hot(ticks: int, demand: frozenset[str] | None) -> tuple[dict[str, int], list[float], list[float]]:
    """Calls per function over ``ticks``, and per tick: ms in all, ms outside the simulated library."""
    simbase.SimFunction.__call__ = _timed  # type: ignore[method-assign]
    clock = ManualClock()
    library = SimulatedNvml(parse_spec(SPEC), clock)
    install(library)
    reader = NvmlReader(clock)
    try:
        for _ in range(10):  # open, then settle
            reader.read(demand)
            clock.advance_s(1)
        library.calls.clear()
        whole, outside = _hot_ticks(reader, ticks, lambda: clock.advance_s(1), demand)
        return dict(library.calls), whole, outside
    finally:
        reader.close()
        uninstall()
        simbase.SimFunction.__call__ = _inner  # type: ignore[method-assign]


def paced(ticks: int, demand: frozenset[str] | None) -> list[float]:
    """CPU ms of the reading thread per tick, one tick a second, realistic driver latency."""
    clock = ManualClock()
    install(SimulatedNvml(parse_spec(SPEC + ",latency=realistic"), clock))
    reader = NvmlReader(clock)
    try:
        reader.read(demand)
        cpu = []
        for _ in range(ticks):
            time.sleep(1.0)
            clock.advance_s(1)
            start = time.thread_time()
            reader.read(demand)
            cpu.append((time.thread_time() - start) * 1e3)
        return cpu
    finally:
        reader.close()
        uninstall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ticks", type=int, default=300, help="hot-loop ticks (default 300)")
    parser.add_argument("--paced", type=int, default=0, help="ticks one second apart (default 0: none)")
    parser.add_argument("-v", action="store_true", help="calls per tick by function")
    parser.add_argument("--real", action="store_true", help="this machine's GPUs and driver (see above)")
    parser.add_argument("--demand", choices=DEMANDS, default="all", help="what is read (see above; default all)")
    args = parser.parse_args()
    demand = DEMANDS[args.demand]
    print(f"trayvml from {trayvml.__file__}; demand: {args.demand}")
    if args.real:
        real(args.ticks, args.paced, demand)
        return
    calls, whole, outside = hot(args.ticks, demand)
    print(f"NVML calls per tick, 8 GPUs: {sum(calls.values()) / args.ticks:.2f}")
    if args.v:
        for name, count in sorted(calls.items(), key=lambda item: -item[1]):
            print(f"  {count / args.ticks:7.2f} {name}")
    print(
        f"hot loop, no driver latency: {statistics.median(whole):.3f} ms a tick, "
        f"{statistics.median(outside):.3f} ms of it outside the simulated library"
    )
    if args.paced:
        cpu = paced(args.paced, demand)[3:]
        print(
            f"one tick a second, latency=realistic: CPU {statistics.median(cpu):.3f} ms a tick (median), "
            f"{statistics.mean(cpu):.3f} ms (mean, the 5 s and 10 s reads included)"
        )


if __name__ == "__main__":
    main()
