"""The NVML reader: the one place that calls pynvml, from one thread.

It puts four parts together, each in its own module: the NVML session (start, retry, the XID
event set, what an error means: session.py), the device probe (static facts and which calls a
GPU answers: probe.py), the op scheduler (the read specs of specs.py run at their cadences:
schedule.py) and the process cache (processes.py). Here: opening NVML, demand, derived metrics
(from the catalog's ``derived`` descriptions) and the immutable samples.

Static facts are read once. Transient errors leave NaN and a state for that sample only;
GPU_IS_LOST marks that GPU lost while the others carry on; when NVML itself goes away the
reader reports why in a sentence and tries again later.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import pynvml as N

from trayvml.core.clock import Clock
from trayvml.core.errors import NvmlUnavailable, UnavailableReason
from trayvml.core.metrics import GPU_INDEX, GPU_METRICS, Derivation, Metric
from trayvml.core.sample import UNKNOWN_NAME, DeviceInfo, GpuSample, MetricState, SystemInfo
from trayvml.demand import PROCESSES
from trayvml.nvml.probe import DeviceProbe, GpuLostError
from trayvml.nvml.processes import ProcessCache, ProcessResolver
from trayvml.nvml.schedule import GpuState, Scheduler
from trayvml.nvml.session import RETRY_PERIOD_S, NvmlDownError, NvmlSession, classify, handle_value, unavailable_from

__all__ = ["RETRY_PERIOD_S", "NvmlReader", "ProcessResolver"]

log = logging.getLogger(__name__)

NAN = math.nan
_XID_COUNT, _XID_LAST = GPU_INDEX["xid_error_count"], GPU_INDEX["xid_last"]
_DERIVED = tuple(m for m in GPU_METRICS if m.derived is not None)


def _derivation(metric: Metric, g: GpuState) -> Callable[[], None]:
    """The catalog's description of ``metric`` as a function filling its slot of ``g``.

    Made per GPU, so that a static fact is looked up once: this runs every tick. A percentage's
    state is the worse of its inputs'; a count's is the process lists' (see _lists_state).
    """
    assert metric.derived is not None
    slot = GPU_INDEX[metric.key]
    values, states = g.values, g.states  # mutated in place, never replaced
    if metric.derived.how is Derivation.COUNT:
        assert metric.derived.inputs == (PROCESSES,)

        def count() -> None:
            state = MetricState.OK
            for kind_state in g.process_states.values():
                if kind_state is not MetricState.OK:  # rare: combine the kinds' states
                    state = _lists_state(g)
                    break
            values[slot] = float(len(g.processes)) if state is MetricState.OK else NAN
            states[slot] = state

        return count
    part, whole = metric.derived.inputs
    p = GPU_INDEX[part]
    if whole in GPU_INDEX:
        w = GPU_INDEX[whole]

        def percent() -> None:
            denominator = values[w]
            values[slot] = 100.0 * values[p] / denominator if denominator else NAN
            a, b = states[p], states[w]
            states[slot] = a if a >= b else b

        return percent
    fact = float(getattr(g.info, whole))  # a static fact: unknown for good if it could not be read
    known = MetricState.NOT_SUPPORTED if math.isnan(fact) else MetricState.OK
    if metric.derived.how is Derivation.MARGIN:

        def margin() -> None:
            values[slot] = fact - values[p]
            a = states[p]
            states[slot] = a if a >= known else known

        return margin

    def percent_of_fact() -> None:
        values[slot] = 100.0 * values[p] / fact if fact else NAN
        a = states[p]
        states[slot] = a if a >= known else known

    return percent_of_fact


def _lists_state(g: GpuState) -> MetricState:
    """The process lists' state: the worst of the kinds the GPU reports (a GPU without graphics
    lists still counts its compute processes)."""
    told = [s for s in g.process_states.values() if s is not MetricState.NOT_SUPPORTED]
    return max(told) if told else MetricState.NOT_SUPPORTED


def wanted_for(demand: frozenset[str] | None) -> frozenset[str] | None:
    """What must be read to answer ``demand``: its keys and the inputs of its derived metrics."""
    if demand is None:
        return None
    wanted = set(demand)
    for metric in _DERIVED:
        if metric.key in demand:
            assert metric.derived is not None
            wanted.update(name for name in metric.derived.inputs if name in GPU_INDEX or name == PROCESSES)
    return frozenset(wanted)


class NvmlReader:
    def __init__(self, clock: Clock, resolve_process: ProcessResolver | None = None) -> None:
        self.clock = clock
        self.session = NvmlSession()
        self.probe = DeviceProbe()
        self.scheduler = Scheduler(self.session, self.probe, ProcessCache(resolve_process), clock.now_s)
        self.system: SystemInfo | None = None
        self.devices: tuple[DeviceInfo, ...] = ()
        self._gpus: list[GpuState] | None = None
        self._gpu_by_handle: dict[int, GpuState] = {}
        self._demand: frozenset[str] | None = None

    @property
    def unavailable(self) -> NvmlUnavailable | None:
        return self.session.unavailable

    @property
    def notes(self) -> tuple[str, ...]:
        return self.probe.notes

    @property
    def current_call(self) -> str:
        """The NVML function being called: read from another thread to say which call is stuck."""
        return self.session.current_call

    # ---- lifecycle ----
    def read(self, demand: frozenset[str] | None = None) -> tuple[GpuSample, ...]:
        """One sample of every GPU; empty while NVML is unavailable (see ``unavailable``).

        ``demand``: the GPU metric keys someone needs, and "processes" for the process lists;
        None reads everything. What no one needs is not read: NaN, MetricState.NOT_READ.
        Static facts and XID events are always read.
        """
        now_s = self.clock.now_s()
        if self._gpus is None:
            if now_s < self.session.next_retry_s:
                return ()
            self._open(now_s)
            if self._gpus is None:
                return ()
        try:
            if demand is not self._demand and demand != self._demand:
                self._set_demand(demand)
            self._count_xid_events()
            return tuple(self._read_gpu(g, now_s) for g in self._gpus)
        except NvmlDownError as down:
            log.warning("NVML stopped answering (%s); retrying every %.0f s", down.why.sentence, RETRY_PERIOD_S)
            self._close(down.why, now_s)
            return ()

    def close(self) -> None:
        if self._gpus is not None:
            self._gpus = None
            self._gpu_by_handle = {}
            self.session.stop()

    def _close(self, why: NvmlUnavailable, now_s: float) -> None:
        self._gpus = None
        self._gpu_by_handle = {}
        self.session.fail(why, now_s)

    def _open(self, now_s: float) -> None:
        session = self.session
        if not session.start(now_s):
            return
        session.current_call = "nvmlDeviceGet* (the GPUs' static facts)"
        try:
            count = N.nvmlDeviceGetCount()
            self.system = self.probe.system_info()
            gpus = [self._open_gpu(i) for i in range(count)]
            if gpus:
                self._open_events(gpus)
        except N.NVMLError as error:
            session.fail(unavailable_from(error), now_s)
            return
        except NvmlDownError as down:
            session.fail(down.why, now_s)
            return
        if not gpus:
            session.fail(NvmlUnavailable(UnavailableReason.NO_GPUS), now_s)
            return
        self._gpus = gpus
        self.devices = tuple(g.info for g in gpus)
        session.unavailable = None
        self._gpu_by_handle = {handle_value(g.handle): g for g in gpus if g.handle is not None}
        self._set_demand(self._demand)

    def _open_gpu(self, index: int) -> GpuState:
        try:
            handle = N.nvmlDeviceGetHandleByIndex(index)
            info = self.probe.device_info(index, handle)
        except (N.NVMLError, GpuLostError) as error:
            if isinstance(error, N.NVMLError):
                classify(error.value)  # raises NvmlDownError where NVML as a whole is gone
            # Lost on a re-open (after the driver went away): its facts as last read, if ever.
            known = next((d for d in self.devices if d.index == index and d.name != UNKNOWN_NAME), None)
            lost = GpuState(index, None, known or DeviceInfo(index, UNKNOWN_NAME, ""))
            self._mark_lost(lost)
            return lost
        g = GpuState(index, handle, info)
        self.scheduler.build(g)
        g.states[_XID_COUNT] = g.states[_XID_LAST] = MetricState.OK
        return g

    def _open_events(self, gpus: list[GpuState]) -> None:
        self.session.create_event_set()
        for g in gpus:
            if g.lost:
                continue
            state = self.session.register_xid_events(g.handle)
            if state is MetricState.LOST:
                self._mark_lost(g)
            elif state is not MetricState.OK:
                g.states[_XID_COUNT] = g.states[_XID_LAST] = state
                g.values[_XID_COUNT] = NAN

    # ---- demand ----
    def _set_demand(self, demand: frozenset[str] | None) -> None:
        self._demand = demand
        wanted = wanted_for(demand)
        derived = [m for m in _DERIVED if wanted is None or _inputs_read(m, wanted)]
        unread = [GPU_INDEX[m.key] for m in _DERIVED if m not in derived]
        for g in self._gpus or ():
            if g.lost:
                continue
            self.scheduler.set_demand(g, wanted)
            g.derivations = [_derivation(m, g) for m in derived]
            for slot in unread:
                g.values[slot], g.states[slot] = NAN, MetricState.NOT_READ

    # ---- reading ----
    def _read_gpu(self, g: GpuState, now_s: float) -> GpuSample:
        if not g.lost:
            self.scheduler.read(g, now_s)
            if g.lost:
                self._mark_lost(g)
            else:
                for derive in g.derivations:
                    derive()
        return GpuSample(
            g.index,
            tuple(g.values),
            tuple(g.states),
            g.processes,
            tuple(g.nvlink_tx.tolist()),
            tuple(g.nvlink_rx.tolist()),
            g.lost,
        )

    @staticmethod
    def _mark_lost(g: GpuState) -> None:
        log.warning("GPU %d has fallen off the bus; the other GPUs carry on", g.index)
        g.mark_lost()

    def _count_xid_events(self) -> None:
        for handle, xid in self.session.drain_xid_events():
            g = self._gpu_by_handle.get(handle)
            if g is not None and not g.lost:
                g.values[_XID_COUNT] += 1
                g.values[_XID_LAST] = float(xid)


def _inputs_read(metric: Metric, wanted: frozenset[str]) -> bool:
    assert metric.derived is not None
    return all(name in wanted for name in metric.derived.inputs if name in GPU_INDEX or name == PROCESSES)
