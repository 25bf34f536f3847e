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
from dataclasses import replace

import pynvml as N

from trayvml.core.clock import Clock
from trayvml.core.demand import PROCESSES
from trayvml.core.errors import NvmlUnavailable, UnavailableReason
from trayvml.core.i18n import translate
from trayvml.core.metrics import GPU_INDEX, GPU_METRICS, Derivation, Metric
from trayvml.core.sample import UNKNOWN_NAME, DeviceInfo, GpuSample, MetricState, SystemInfo
from trayvml.nvml.probe import DeviceProbe, GpuLostError
from trayvml.nvml.processes import ProcessCache, ProcessResolver, ProcessStart
from trayvml.nvml.runtime_pm import PciPower, RuntimePower, bus_key
from trayvml.nvml.schedule import GpuState, Scheduler
from trayvml.nvml.session import RETRY_PERIOD_S, NvmlDownError, NvmlSession, classify, handle_value, unavailable_from

__all__ = ["RETRY_PERIOD_S", "NvmlReader", "ProcessResolver", "ProcessStart"]

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


MIG_RESCAN_PERIOD_S = 10.0  # how often MIG devices are looked for again (created or destroyed)
IDLE_UTIL_PERCENT = 5.0  # a laptop GPU below this, with no processes, is idle: read it slowly
IDLE_MEMORY_BYTES = 64 * 2**20  # above this in use, some process holds the GPU: it cannot sleep anyway


class NvmlReader:
    def __init__(
        self,
        clock: Clock,
        resolve_process: ProcessResolver | None = None,
        power: RuntimePower | None = None,
        process_started: ProcessStart | None = None,
        foreign_pids: bool = False,
    ) -> None:
        self.clock = clock
        # Read before any NVML call: a runtime-suspended GPU is not queried (a query would wake it).
        self.power = power if power is not None else RuntimePower()
        # Seconds between reads of idle laptop GPUs, NVML released in between so that they can
        # suspend; 0: every tick (the app sets it from its settings).
        self.idle_poll_s = 0.0
        self._rest_until_s = 0.0
        self._rest_awake: frozenset[str] = frozenset()  # GPUs awake when the rest began
        self._known: dict[str, DeviceInfo] = {}  # facts of each GPU by bus key, for when NVML is closed
        self.session = NvmlSession()
        self.probe = DeviceProbe()
        processes = ProcessCache(resolve_process, process_started, foreign_pids)
        self.scheduler = Scheduler(self.session, self.probe, processes, clock)
        self.system: SystemInfo | None = None
        self.devices: tuple[DeviceInfo, ...] = ()
        self._gpus: list[GpuState] | None = None
        self._gpu_by_handle: dict[int, GpuState] = {}
        self._demand: frozenset[str] | None = None
        self._next_mig_scan_s = 0.0

    @property
    def unavailable(self) -> NvmlUnavailable | None:
        return self.session.unavailable

    @property
    def notes(self) -> tuple[str, ...]:
        return self.probe.notes

    @property
    def current_call(self) -> str:
        """The NVML function being called, or the sysfs file being read (a path): read from another
        thread to say which call is stuck."""
        return self.power.reading or self.session.current_call

    # ---- lifecycle ----
    def read(self, demand: frozenset[str] | None = None) -> tuple[GpuSample, ...]:
        """One sample of every GPU; empty while NVML is unavailable (see ``unavailable``).

        ``demand``: the GPU metric keys someone needs, and "processes" for the process lists;
        None reads everything. What no one needs is not read: NaN, MetricState.NOT_READ.
        Static facts and XID events are always read.
        """
        # Cadences, retries and rests run on the monotonic clock: the wall clock set back an hour
        # (NTP, a user, a resume) held every slower read for that hour, its value passed off as live.
        now_s = self.clock.monotonic_s()
        power = self.power.poll()
        asleep = frozenset(key for key, p in power.items() if p.asleep)
        if power and len(asleep) == len(power):  # every NVIDIA GPU sleeps: let go of NVML entirely
            if self._gpus is not None:
                log.info("every NVIDIA GPU is runtime-suspended: NVML released until one wakes")
                self.release()
            return self._not_queried(power, asleep)
        if self._gpus is None and self._resting(power, asleep, now_s):
            return self._not_queried(power, asleep)
        if self._gpus is None:
            if now_s < self.session.next_retry_s:
                return ()
            self.power.rescan()
            self._open(now_s, asleep)
            if self._gpus is None:
                return ()
        try:
            if demand is not self._demand and demand != self._demand:
                self._set_demand(demand)
            if now_s >= self._next_mig_scan_s:
                self._next_mig_scan_s = now_s + MIG_RESCAN_PERIOD_S
                self._rescan_mig_devices()
            self._count_xid_events()
            samples = tuple(self._read_gpu(g, now_s, asleep) for g in self._gpus)
        except NvmlDownError as down:
            stopped = translate("reader", "NVML stopped answering ({why}); retrying every {period} s")
            log.warning("%s", stopped.format(why=down.why.sentence, period=f"{RETRY_PERIOD_S:.0f}"))
            self._close(down.why, now_s)
            return ()
        if self.idle_poll_s > 0 and _idle_laptops(samples, self.devices, power):
            # Let go of NVML until the next slow poll: an open handle alone keeps the GPU awake.
            self._rest_until_s = now_s + self.idle_poll_s
            self._rest_awake = frozenset(power) - asleep
            self.release()
        return samples

    def _resting(self, power: dict[str, PciPower], asleep: frozenset[str], now_s: float) -> bool:
        """Between slow polls of idle laptop GPUs; a GPU that woke meanwhile ends the rest at once."""
        if now_s >= self._rest_until_s or self.idle_poll_s <= 0:
            return False
        woke = (frozenset(power) - asleep) - self._rest_awake
        return not woke

    def _not_queried(self, power: dict[str, PciPower], asleep: frozenset[str]) -> tuple[GpuSample, ...]:
        """Samples made without NVML: asleep GPUs ASLEEP, resting ones RESTING, values NaN."""
        devices = []
        for k, key in enumerate(sorted(power)):
            info = self._known.get(key) or DeviceInfo(k, "NVIDIA GPU", "", pci_bus_id=power[key].address)
            devices.append(info if info.index == k else replace(info, index=k))
        self.devices = tuple(devices)
        count = len(GPU_METRICS)
        return tuple(
            GpuSample(
                info.index,
                (NAN,) * count,
                (MetricState.ASLEEP if key in asleep else MetricState.RESTING,) * count,
                asleep=key in asleep,
            )
            for key, info in zip(sorted(power), devices, strict=True)
        )

    def release(self) -> None:
        """Close NVML completely (nvmlShutdown until init and shutdown balance): nothing is held."""
        self.close()
        self.session.release()

    def close(self) -> None:
        if self._gpus is not None:
            for g in self._gpus:
                g.release()
            self._gpus = None
            self._gpu_by_handle = {}
            self.session.stop()

    def _close(self, why: NvmlUnavailable, now_s: float) -> None:
        for g in self._gpus or ():
            g.release()  # NVML may be gone: the buffers go with it, and freeing them says so quietly
        self._gpus = None
        self._gpu_by_handle = {}
        self.session.fail(why, now_s)

    def _open(self, now_s: float, asleep: frozenset[str] = frozenset()) -> None:
        session = self.session
        if not session.start(now_s):
            return
        session.current_call = "nvmlDeviceGet* (the GPUs' static facts)"
        try:
            count = N.nvmlDeviceGetCount()
            self.system = self.probe.system_info()
            gpus = [self._open_gpu(i, asleep) for i in range(count)]
            gpus += self._open_mig_devices(gpus)
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
        self._known.update(
            {bus_key(g.info.pci_bus_id): g.info for g in gpus if g.info.pci_bus_id and g.parent_handle is None}
        )
        session.unavailable = None
        self._gpu_by_handle = {handle_value(g.handle): g for g in gpus if g.handle is not None}
        self._next_mig_scan_s = now_s + MIG_RESCAN_PERIOD_S  # just found
        self._set_demand(self._demand)

    def _open_gpu(self, index: int, asleep: frozenset[str] = frozenset()) -> GpuState:
        try:
            handle = N.nvmlDeviceGetHandleByIndex(index)
            if asleep:
                # Only the PCI address (the driver knows it without waking the GPU): the facts of
                # a sleeping GPU are read when it wakes.
                bus_id = N.nvmlDeviceGetPciInfo_v3(handle).busId
                key = bus_key(bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id))
                if key in asleep:
                    known = self._known.get(key) or DeviceInfo(index, "NVIDIA GPU", "", pci_bus_id=key)
                    return GpuState(index, handle, replace(known, index=index), deferred=True)
            info = self.probe.device_info(index, handle)
        except (N.NVMLError, GpuLostError) as error:
            if isinstance(error, N.NVMLError):
                classify(error.value)  # raises NvmlDownError where NVML as a whole is gone
            # Lost on a re-open (after the driver went away): its facts as last read, if ever.
            last = next((d for d in self.devices if d.index == index and d.name != UNKNOWN_NAME), None)
            lost = GpuState(index, None, last or DeviceInfo(index, UNKNOWN_NAME, ""))
            self._mark_lost(lost)
            return lost
        g = GpuState(index, handle, info)
        self.scheduler.build(g)
        g.states[_XID_COUNT] = g.states[_XID_LAST] = MetricState.OK
        return g

    def _open_mig_devices(self, parents: list[GpuState], known: dict[str, GpuState] | None = None) -> list[GpuState]:
        """Each MIG device of a GPU in MIG mode, as a device of its own after the physical GPUs:
        its memory, processes and GPM activity; the parent keeps the whole-board metrics.

        ``known``: the MIG devices found before, by UUID: one still there is kept as it is (its
        state, its place in the history, which joins by UUID); only new ones are probed."""
        known = known or {}
        found: list[GpuState] = []
        for parent in parents:
            if parent.lost or parent.deferred:
                # Its MIG devices as they were: lost with it, or asleep with it.
                found += [g for g in known.values() if g.info.mig_parent_index == parent.index]
                continue
            if not parent.info.mig_mode_current:
                continue
            try:
                slots = N.nvmlDeviceGetMaxMigDeviceCount(parent.handle)
            except N.NVMLError as error:
                classify(error.value)  # raises where NVML as a whole is gone
                continue
            for slot in range(slots):
                try:
                    handle = N.nvmlDeviceGetMigDeviceHandleByIndex(parent.handle, slot)
                    same = known.get(N.nvmlDeviceGetUUID(handle)) if known else None
                    if same is not None:
                        same.handle = handle  # the driver's handle now, in case it changed
                        found.append(same)
                        continue
                    instance = N.nvmlDeviceGetGpuInstanceId(handle)
                    index = len(parents) + len(found)
                    info = self.probe.device_info(index, handle)
                except N.NVMLError as error:
                    classify(error.value)  # NOT_FOUND: no instance in that slot
                    continue
                except GpuLostError:
                    continue
                info = replace(
                    info,
                    mig_parent_index=parent.index,
                    gpu_instance_id=instance,
                    pci_bus_id=parent.info.pci_bus_id,  # asleep with its parent, never apart
                    gpm_supported=parent.info.gpm_supported,
                )
                g = GpuState(index, handle, info, parent_handle=parent.handle)
                self.scheduler.build(g)
                # XID errors are the board's: counted on the parent.
                g.states[_XID_COUNT] = g.states[_XID_LAST] = MetricState.NOT_SUPPORTED
                g.values[_XID_COUNT] = NAN
                found.append(g)
        return found

    def _rescan_mig_devices(self) -> None:
        """MIG instances are created and destroyed while GPUs run (nvidia-smi mig -cgi / -dgi):
        find them again, cheaply (a handle and a UUID per slot), every MIG_RESCAN_PERIOD_S. New
        ones are added, gone ones dropped; the devices are numbered afresh after the GPUs."""
        assert self._gpus is not None
        parents = [g for g in self._gpus if g.parent_handle is None]
        before = [g for g in self._gpus if g.parent_handle is not None]
        self._reread_mig_modes(parents)
        if not before and not any(p.info.mig_mode_current for p in parents):
            return
        found = self._open_mig_devices(parents, {g.info.uuid: g for g in before})
        if [id(g) for g in found] == [id(g) for g in before]:
            return
        for g in before:
            if not any(g is f for f in found):
                g.release()  # its GPM buffers
        for k, g in enumerate(found, start=len(parents)):
            if g.index != k:
                g.index = k
                g.info = replace(g.info, index=k)
        log.info("MIG devices changed: %d now (were %d)", len(found), len(before))
        self._gpus = parents + found
        self.devices = tuple(g.info for g in self._gpus)
        self._gpu_by_handle = {handle_value(g.handle): g for g in self._gpus if g.handle is not None}
        self._set_demand(self._demand)

    @staticmethod
    def _reread_mig_modes(parents: list[GpuState]) -> None:
        """A GPU's MIG mode changes after a reset (nvidia-smi -mig 1, then -r): read it again
        where the GPU has a MIG mode at all."""
        for g in parents:
            if g.lost or g.deferred or g.info.mig_mode_current is None:
                continue
            try:
                current, pending = N.nvmlDeviceGetMigMode(g.handle)
            except N.NVMLError as error:
                classify(error.value)  # raises where NVML as a whole is gone; else as it was
                continue
            if (bool(current), bool(pending)) != (g.info.mig_mode_current, g.info.mig_mode_pending):
                g.info = replace(g.info, mig_mode_current=bool(current), mig_mode_pending=bool(pending))

    def _open_events(self, gpus: list[GpuState]) -> None:
        self.session.create_event_set()
        for g in gpus:
            if not g.lost and not g.deferred and g.parent_handle is None:
                self._register_events(g)

    def _register_events(self, g: GpuState) -> None:
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
    def _read_gpu(self, g: GpuState, now_s: float, asleep: frozenset[str] = frozenset()) -> GpuSample:
        if asleep and bus_key(g.info.pci_bus_id) in asleep:
            count = len(GPU_METRICS)
            return GpuSample(g.index, (NAN,) * count, (MetricState.ASLEEP,) * count, asleep=True)
        if g.deferred:
            self._woke(g)
        if not g.lost and g.parent_handle is not None:
            # A MIG device goes with its board: parents are read first, so a parent lost this tick
            # is known here. Whatever its handle still answers is not live, and every call into a
            # lost GPU can be slow: it is not asked.
            parent = self._gpu_by_handle.get(handle_value(g.parent_handle))
            if parent is not None and parent.lost:
                self._mark_lost(g)
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
            tuple(g.nvlink_tx),
            tuple(g.nvlink_rx),
            g.lost,
            lower_bounds=frozenset(k for k in g.lower_bounds if g.states[GPU_INDEX[k]] is MetricState.OK),
            read_ago_s=() if g.lost else self.scheduler.held_ages(g, now_s),
        )

    def _woke(self, g: GpuState) -> None:
        """A GPU asleep when NVML opened is awake: read its facts and build its reads now."""
        g.deferred = False
        try:
            g.info = self.probe.device_info(g.index, g.handle)
        except GpuLostError:
            self._mark_lost(g)
            return
        self.scheduler.build(g)
        g.states[_XID_COUNT] = g.states[_XID_LAST] = MetricState.OK
        self._register_events(g)
        assert self._gpus is not None
        self.devices = tuple(x.info for x in self._gpus)
        self._known[bus_key(g.info.pci_bus_id)] = g.info
        self._set_demand(self._demand)

    @staticmethod
    def _mark_lost(g: GpuState) -> None:
        lost = translate("reader", "GPU {index} has fallen off the bus; the other GPUs carry on")
        log.warning("%s", lost.format(index=g.index))  # said on stderr by the CLI: in the user's language
        g.mark_lost()

    def _count_xid_events(self) -> None:
        for handle, xid in self.session.drain_xid_events():
            g = self._gpu_by_handle.get(handle)
            if g is not None and not g.lost:
                g.values[_XID_COUNT] += 1
                g.values[_XID_LAST] = float(xid)


def _idle_laptops(samples: tuple[GpuSample, ...], devices: tuple[DeviceInfo, ...], power: dict[str, PciPower]) -> bool:
    """Whether every GPU read is one the kernel may suspend (runtime PM on) and does nothing now."""
    if not samples or not power:
        return False
    for gpu, info in zip(samples, devices, strict=False):
        p = power.get(bus_key(info.pci_bus_id))
        if gpu.asleep:
            continue
        # Persistence mode keeps the GPU initialised: it cannot suspend (and servers set it).
        if p is None or not p.managed or info.persistence_mode or gpu.lost or gpu.processes:
            return False
        util = gpu.value("utilization_gpu_percent")
        if not util < IDLE_UTIL_PERCENT:  # NaN (not read) is not idle
            return False
        if gpu.value("memory_used_bytes") > IDLE_MEMORY_BYTES:  # a process holds it (lists may not be read)
            return False
    return True


def _inputs_read(metric: Metric, wanted: frozenset[str]) -> bool:
    assert metric.derived is not None
    return all(name in wanted for name in metric.derived.inputs if name in GPU_INDEX or name == PROCESSES)
