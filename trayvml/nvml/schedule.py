"""The op scheduler: each GPU's reads, built from the read specs, run at their cadences.

An *op* is one NVML call and how its answer fills metric slots. Ops are built once per GPU
from specs.py (the versions the driver has, see probe.py); the demanded ones run each tick
when due. A call answering NOT_SUPPORTED is dropped for that GPU for good, after trying the
older variant its spec names; other failures leave NaN and a state for that sample only.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter, itemgetter
from typing import Any

import pynvml as N

from trayvml.core.clock import CLOCK_SET_S, Clock
from trayvml.core.demand import PROCESS_PERIOD_S, PROCESSES
from trayvml.core.metrics import GPU_INDEX, GPU_METRICS
from trayvml.core.sample import DeviceInfo, MetricState, ProcessSample
from trayvml.core.units import times_and_per
from trayvml.nvml import binding
from trayvml.nvml.fields import answer_reader, field_array, raw_value, types_reader
from trayvml.nvml.gpm import GpmSampler
from trayvml.nvml.probe import DeviceProbe, GpuLostError, caller
from trayvml.nvml.processes import ProcessCache, merged_by_pid
from trayvml.nvml.session import NvmlSession, classify
from trayvml.nvml.specs import (
    CALLS,
    EVERY_TICK_S,
    FIELDS,
    GPM,
    PROCESS_COUNT,
    PROCESS_LISTS,
    CallRead,
    FieldKind,
    FieldRead,
    ProcessListRead,
    pcie_max_bytes_per_s,
)

NAN = math.nan
log = logging.getLogger(__name__)
_NOT_SUPPORTED, _OK, _NO_DATA, _NOT_READ = (
    MetricState.NOT_SUPPORTED,
    MetricState.OK,
    MetricState.NO_DATA,
    MetricState.NOT_READ,
)
_NVLINK_TX, _NVLINK_RX = GPU_INDEX["nvlink_tx_bytes_per_s"], GPU_INDEX["nvlink_rx_bytes_per_s"]
_NO_PCIE_LINK = frozenset({"pcie_link_gen", "pcie_link_width"})
_MEMORY_USED = GPU_INDEX["memory_used_bytes"]
# The listed processes hold more than the GPU has in use by this much: one has ended since the lists
# were read (on a real H200, 2026-11-26: 2698 MiB listed 5 s after the driver had let them go).
# The processes' memory is part of the memory used, which a margin above the driver's rounding keeps.
LISTED_BEYOND_USED_BYTES = 64 * 2**20
_KEEP = (MetricState.NOT_SUPPORTED, MetricState.LOST)  # states that say more than "not read"
# A tick this much before the per-process SM share is due still asks for it (every_tick): ticks
# come an interval apart give or take a few milliseconds, and one a hair early waited a whole
# interval more (every 10 s at a 5 s log interval).
_ASK_EARLY_S = 0.5


@dataclass(eq=False)
class GpuState:
    """What the reader keeps of one GPU between ticks."""

    index: int
    handle: Any
    info: DeviceInfo
    values: list[float] = field(default_factory=lambda: [NAN] * len(GPU_METRICS))
    states: list[MetricState] = field(default_factory=lambda: [_NOT_SUPPORTED] * len(GPU_METRICS))
    ops: list[Op] = field(default_factory=list)  # every op this GPU answers
    active: list[Op] = field(default_factory=list)  # the demanded ones
    dropped: list[Op] = field(default_factory=list)  # taken out of ``active`` after this tick
    derivations: list[Callable[[], None]] = field(default_factory=list)  # derived metrics' fills
    lost: bool = False
    deferred: bool = False  # asleep when NVML opened: facts and reads wait until it wakes
    parent_handle: Any = None  # a MIG device: its parent GPU's handle (GPM samples are taken there)
    process_sm: dict[int, float] = field(default_factory=dict)  # PID -> SM % in the last samples read
    process_sm_read: bool = False  # whether process_sm holds the last call's answer (else: unknown)
    process_util_seen_us: int = 0  # nvmlDeviceGetProcessUtilization's last-seen timestamp
    process_sm_listed: frozenset[int] = frozenset()  # the PIDs listed in the tick it was last asked
    process_sm_asked_s: float = -math.inf  # that tick's time (-inf: never)
    tick_s: float = 0.0  # the monotonic clock's time of the tick being read
    used_when_listed: float = NAN  # memory in use (bytes) at the tick the process lists were last read
    process_util_supported: bool = True
    process_lists: dict[str, tuple[ProcessSample, ...]] = field(default_factory=dict)
    process_states: dict[str, MetricState] = field(default_factory=dict)
    processes: tuple[ProcessSample, ...] = ()
    nvlink_tx: list[float] = field(default_factory=list)  # bytes/s per supported link
    nvlink_rx: list[float] = field(default_factory=list)
    implausible_logged: bool = False  # a PCIe throughput beyond the link was logged once
    lower_bounds: set[str] = field(default_factory=set)  # rates that are only "at least" (wrapped counters)

    def release(self) -> None:
        """Give back what this GPU's ops hold in the driver (on close, on a lost GPU)."""
        for op in self.ops:
            if op.release is not None:
                op.release()

    def mark_lost(self) -> None:
        self.release()
        self.lost = True
        self.values[:] = [NAN] * len(self.values)
        self.states[:] = [MetricState.LOST] * len(self.states)
        self.process_lists = {}
        self.process_states = dict.fromkeys(self.process_states, MetricState.LOST)
        self.processes = ()
        self.nvlink_tx = [NAN] * len(self.nvlink_tx)
        self.nvlink_rx = [NAN] * len(self.nvlink_rx)


@dataclass(eq=False, slots=True)  # slots: its attributes are read for every op every tick
class Op:
    name: str  # the C function, for logs and for naming a call that does not return
    call: Callable[[Any], Any]
    fill: Callable[[GpuState, Any], None]
    keys: tuple[str, ...]  # what it reads: metric keys, or PROCESSES
    period_s: float = 0.0  # 0: every tick
    fallback: Callable[[], Op | None] | None = None  # the older variant, made when needed
    next_due_s: float = 0.0
    failing: bool = True  # until its first answer turns its metrics OK
    batch: FieldBatch | None = None  # set on field-value ops
    process_kind: str = ""  # set on process-list ops
    release: Callable[[], None] | None = None  # gives back what the op holds in the driver (GPM buffers)
    partial: bool = False  # one call answers all its keys, and it fills only the demanded ones (GPM)
    unwanted: tuple[int, ...] = ()  # a partial op's slots that nobody demands: NOT_READ whatever it answers

    @property
    def slots(self) -> tuple[int, ...]:
        return tuple(GPU_INDEX[k] for k in self.keys if k != PROCESSES)


@dataclass(frozen=True)
class _Field:
    fid: int
    scope: int
    read: FieldRead

    @property
    def key(self) -> str:
        return self.read.key


_KIND_ORDER = {FieldKind.VALUE: 0, FieldKind.RATE: 1, FieldKind.LINK_TX: 2, FieldKind.LINK_RX: 3}


def _total(rates: list[float]) -> float:
    """The links' rates summed exactly (fsum): the same total whatever their order or the Python;
    beyond a float's range (a driver's nonsense), what a plain sum gives (inf, NaN), not an error."""
    try:
        return math.fsum(rates)
    except (OverflowError, ValueError):
        return sum(rates)


def _ordered(fields: list[_Field]) -> list[_Field]:
    """Values, counters, NVLink TX links, RX links (FieldBatch), each group in its given order."""
    return sorted(fields, key=lambda f: (_KIND_ORDER[f.read.kind], f.scope))


class FieldBatch:
    """Many field values in one ``nvmlDeviceGetFieldValues`` call; each field has its own code.

    ``supported`` are the fields the GPU answers; ``fields`` the demanded ones, asked for. They
    are kept in the order values, counters, NVLink TX links, NVLink RX links, so that each group
    is a slice of the answer, and the answer is unpacked by one ``struct`` call (fields.py).
    """

    def __init__(self, supported: list[_Field], link_max_bytes_per_s: float = NAN) -> None:
        # In the order ``fields`` keep, so that the demanded ones, picked from these, compare equal
        # to ``fields`` while they are the same (Scheduler.set_demand sets a batch up anew otherwise).
        self.supported = _ordered(supported)
        self.link_max_bytes_per_s = link_max_bytes_per_s  # NaN: not known, no rate can be bounded
        self.previous: list[float] | None = None  # raw counter values, unscaled (wraps are in raw units)
        self.previous_stamps: list[float] = []  # their own timestamps, in seconds
        self.previous_s = 0.0
        self.previous_offset_s = 0.0  # the wall clock less the monotonic one at that read
        self.lower_bounds: list[bool] = []  # per counter: its last rate is only "at least"
        self.fields: list[_Field] = []
        self.set_fields(supported)

    def set_fields(self, fields: list[_Field]) -> None:
        fields = _ordered(fields)
        old_previous = self.previous
        old_positions = {(f.fid, f.scope): k for k, f in enumerate(self.fields[self._first_counter() :])}
        self.fields = fields
        self.array = field_array([(f.fid, f.scope) for f in fields])
        self._bytes = memoryview(self.array).cast("B")
        self._read_types = types_reader(len(fields))
        self._blank = bytes(self._bytes)  # the ids and scopes asked for, all else zero
        self.keys = tuple(dict.fromkeys(f.key for f in fields))
        self.bad_keys: set[str] = set(self.keys)  # until the first answer
        self.value_fields = [
            (i, GPU_INDEX[f.key], *times_and_per(f.read.scale))
            for i, f in enumerate(fields)
            if f.read.kind is FieldKind.VALUE
        ]
        self.bounded = [
            (i, f.key, f.read.plausible)
            for i, f in enumerate(fields)
            if f.read.kind is FieldKind.VALUE and f.read.plausible is not None
        ]
        first_counter = len(self.value_fields)
        counters = fields[first_counter:]
        self.counters = slice(first_counter, len(fields))
        self.counter_scale = [f.read.scale for f in counters]
        self.counter_slots = [(k, GPU_INDEX[f.key]) for k, f in enumerate(counters) if f.read.kind is FieldKind.RATE]
        self.counter_keys = [(k, f.key) for k, f in enumerate(counters) if f.read.kind is FieldKind.RATE]
        tx = sum(f.read.kind is FieldKind.LINK_TX for f in counters)
        rx = sum(f.read.kind is FieldKind.LINK_RX for f in counters)
        rates_end = len(counters) - tx - rx
        self.tx_links = slice(rates_end, rates_end + tx)
        self.rx_links = slice(rates_end + tx, rates_end + tx + rx)
        self.has_tx, self.has_rx = tx > 0, rx > 0
        self.has_links = self.has_tx or self.has_rx
        self.counter_modulus = [float(f.read.wraps_at) for f in counters]  # 0: it does not wrap
        self.has_wrapping = any(self.counter_modulus)
        self.lower_bounds = [False] * len(counters)
        # A counter kept from before keeps its last reading, so its rate goes on without a gap.
        old_stamps = self.previous_stamps
        self.previous = None
        if old_previous is not None and counters:
            kept = [old_positions.get((f.fid, f.scope)) for f in counters]
            self.previous = [NAN if k is None else old_previous[k] for k in kept]
            self.previous_stamps = [0.0 if k is None else old_stamps[k] for k in kept]
        self.value_types: tuple[int, ...] = ()  # as the last answer gave them (fixed per field)
        self._read_answer = answer_reader(())

    def clear(self) -> None:
        """Zero what the driver writes, keeping the ids and scopes asked for: a driver was seen
        adding into the buffer instead of overwriting it, so last tick's answer must not remain."""
        self._bytes[:] = self._blank  # one copy, not a numpy assignment per member

    def _first_counter(self) -> int:
        return sum(f.read.kind is FieldKind.VALUE for f in self.fields)

    def answer(self) -> tuple[list[int], list[int], list[float]]:
        """The last call's answer, field by field: its timestamp (µs), return code, and value as a
        float, whatever member of the union NVML wrote (``valueType``)."""
        types = self._read_types.unpack_from(self._bytes)
        if types != self.value_types:  # fixed per field while it answers: a new reader only on change
            self.value_types = types
            self._read_answer = answer_reader(types)
        flat = self._read_answer.unpack_from(self._bytes)
        return list(flat[0::3]), list(flat[1::3]), [float(value) for value in flat[2::3]]

    def raw(self, position: int) -> int:
        """Field ``position``'s value as the unsigned 64-bit number its bytes are."""
        return raw_value(self._bytes, position)

    def rates(
        self, numbers: Sequence[float], now_s: float, stamps_us: Sequence[int] | None = None, offset_s: float = 0.0
    ) -> tuple[list[float], list[bool]]:
        """Per-second rates of the counter fields since the last call; NaN first and on a reset.
        Also which of them have no earlier reading to difference (True: the first reading): those
        are "not measured yet", never 0.

        The interval is the values' own timestamps (µs) where the driver gives them, else the
        reader's (monotonic) clock ``now_s``; also where the wall clock, which the driver stamps
        with, was set between the two reads (``offset_s``, wall less monotonic, moved). A counter
        that wraps (``wraps_at``) is differenced modulo its wrap; where more than one wrap fits in
        the interval at the link's top rate, its rate is only a lower bound and ``lower_bounds``
        says so.
        """
        current = list(numbers[self.counters])
        count = len(current)
        stamps = [0.0] * count if stamps_us is None else [stamp / 1e6 for stamp in stamps_us[self.counters]]
        previous, previous_stamps, previous_s = self.previous, self.previous_stamps, self.previous_s
        self.previous, self.previous_stamps, self.previous_s = current, stamps, now_s
        clock_set = abs(offset_s - self.previous_offset_s) > CLOCK_SET_S
        self.previous_offset_s = offset_s
        if previous is None:
            self.lower_bounds = [False] * count
            return [NAN] * count, [True] * count
        rates, lower_bounds = [], [False] * count
        for k, (now, before, stamp, stamp_before, modulus, scale) in enumerate(
            zip(current, previous, stamps, previous_stamps, self.counter_modulus, self.counter_scale, strict=True)
        ):
            # A timestamp that did not move is the same reading served again: no rate from it. The
            # driver stamps with the wall clock (nvml.h: "CPU timestamp ... since 1970"): set back or
            # forward between two reads (NTP, a user, a resume), it gives no interval of the counter's.
            stamped = stamp > 0 and stamp_before > 0 and not clock_set
            elapsed_s = stamp - stamp_before if stamped else now_s - previous_s
            delta = now - before
            if modulus:
                delta %= modulus  # as numpy's mod: the divisor's sign, so a wrap is never negative
                # NaN where the link is not known: not bounded, as numpy compared it.
                lower_bounds[k] = not self.link_max_bytes_per_s * elapsed_s < modulus
            # A counter that went back was reset: no rate.
            rates.append(NAN if delta < 0 or not elapsed_s > 0 else delta * scale / elapsed_s)
        self.lower_bounds = lower_bounds
        return rates, [before != before for before in previous]  # NaN: no earlier reading

    def supported_keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.key for f in self.supported))


def _fill_call(read: CallRead) -> Callable[[GpuState, Any], None]:
    """How a call's answer fills its slots, specialised for the common shapes (this runs ~20
    times per GPU per tick)."""
    slots = [GPU_INDEX[k] for k in read.keys]
    scale = read.scale
    times, per = times_and_per(scale)
    if not read.picks:
        (slot,) = slots
        if read.link_limited:

            def fill_within_link(g: GpuState, value: Any) -> None:
                number = value * times / per
                most = pcie_max_bytes_per_s(g.info.pcie_link_gen_max, g.info.pcie_link_width_max)
                if number > most:  # NaN (link not known) compares False: shown as read
                    if not g.implausible_logged:
                        g.implausible_logged = True
                        log.warning(
                            "GPU %d: %s answered %.3g B/s, more than its PCIe link can carry (%.3g B/s): "
                            "not shown (a driver known to answer 1000 times too much)",
                            g.index,
                            read.function,
                            number,
                            most,
                        )
                    g.values[slot], g.states[slot] = NAN, _NO_DATA
                else:
                    g.values[slot], g.states[slot] = number, _OK

            return fill_within_link
        if read.unknown is not None:
            unknown = read.unknown

            def fill_known(g: GpuState, value: Any) -> None:
                # The driver's "cannot tell" is no data for this sample, never shown as a number.
                if value == unknown:
                    g.values[slot], g.states[slot] = NAN, _NO_DATA
                else:
                    g.values[slot], g.states[slot] = value * times / per, _OK

            return fill_known
        if scale == 1.0:

            def fill_one(g: GpuState, value: Any) -> None:
                g.values[slot] = value

            return fill_one

        def fill_scaled(g: GpuState, value: Any) -> None:
            g.values[slot] = value * times / per

        return fill_scaled
    getters = [itemgetter(p) if isinstance(p, int) else attrgetter(p) for p in read.picks]
    pairs = list(zip(slots, getters, strict=True))
    if len(pairs) == 1 and scale == 1.0:
        ((slot, get),) = pairs

        def fill_picked_one(g: GpuState, result: Any) -> None:
            g.values[slot] = get(result)

        return fill_picked_one
    if scale == 1.0:

        def fill_picked(g: GpuState, result: Any) -> None:
            values = g.values
            for slot, get in pairs:
                values[slot] = get(result)

        return fill_picked

    def fill_picked_scaled(g: GpuState, result: Any) -> None:
        values = g.values
        for slot, get in pairs:
            values[slot] = get(result) * times / per

    return fill_picked_scaled


def _lists_outlived(g: GpuState) -> bool:
    """Whether the process lists read last name memory the GPU no longer has in use (read this tick,
    before the lists): a process ended, so the lists are read again now, not up to 5 s later. Only
    where the memory in use fell since: a driver whose lists always name more would have them read
    every tick."""
    used = g.values[_MEMORY_USED]
    if not g.processes or used != used or not used < g.used_when_listed - LISTED_BEYOND_USED_BYTES:
        return False
    listed = sum(p.used_memory_bytes for p in g.processes if p.used_memory_bytes == p.used_memory_bytes)
    return listed > used + LISTED_BEYOND_USED_BYTES


class Scheduler:
    def __init__(self, session: NvmlSession, probe: DeviceProbe, processes: ProcessCache, clock: Clock) -> None:
        self.session = session
        self.probe = probe
        self.processes = processes
        # Monotonic: a rate's interval where the driver's timestamps give none. Wall: the driver's
        # own timestamps, to tell those from before the clock was set back.
        self.clock = clock
        self._process_utilization = binding.ProcessUtilization()  # one call a read, not pynvml's two
        self.every_tick = False  # every op read on every tick, whatever its cadence (Source's every_tick)

    # ---- building ----
    def build(self, g: GpuState) -> None:
        """Every op ``g`` answers, demanded by everyone; its metrics NO_DATA until their first answer."""
        ops = [op for read in CALLS if (op := self._call_op(read)) is not None]
        # A whole GPU's GPM answers its PCIe throughput (specs.GPM): the byte counters are not asked.
        # A MIG instance's GPM is its own share: its board's answers the board's PCIe throughput. The
        # board's MIG mode is not asked: it can change while trayvml runs, and where the board's GPM
        # stops answering, the counters are read instead (see _gpm_op).
        whole_gpu_gpm = bool(g.info.gpm_supported) and g.parent_handle is None
        by_gpm = {read.stands_for for read in GPM if read.stands_for} if whole_gpu_gpm else set()
        link_max = pcie_max_bytes_per_s(g.info.pcie_link_gen_max, g.info.pcie_link_width_max)
        for period_s in sorted({f.period_s for f in FIELDS}):
            fields = [
                f
                for read in FIELDS
                if read.period_s == period_s and read.key not in by_gpm
                for f in self._expand(read, g.info)
            ]
            if fields:
                ops.append(self._field_op(FieldBatch(fields, link_max), period_s))
        ops += [op for read in PROCESS_LISTS if (op := self._process_op(read)) is not None]
        if g.info.unified_memory:
            # A GPU on the chip itself has no PCIe link: the Gen1 x1 the driver reports is not
            # one. Its metrics stay NOT_SUPPORTED rather than showing that.
            ops = [op for op in ops if not set(op.keys) <= _NO_PCIE_LINK]
        if g.info.gpm_supported:
            instance = g.info.gpu_instance_id if g.parent_handle is not None else None
            sampler = GpmSampler(instance=instance, parent=g.parent_handle, session=self.session)
            # Where GPM turns out not to answer after all, the counters are read as on older GPUs;
            # where it stands for none of them (MIG), there is nothing to read instead.
            counters = [f for read in FIELDS if read.key in by_gpm for f in self._expand(read, g.info)]
            ops.append(self._gpm_op(sampler, counters, link_max))
        g.ops = ops
        g.nvlink_tx = [NAN] * g.info.nvlink_link_count
        g.nvlink_rx = [NAN] * g.info.nvlink_link_count
        g.values[GPU_INDEX["xid_error_count"]] = 0.0
        self.set_demand(g, None)

    @staticmethod
    def _expand(read: FieldRead, info: DeviceInfo) -> list[_Field]:
        if read.kind in (FieldKind.LINK_TX, FieldKind.LINK_RX):
            return [_Field(read.field_id, link, read) for link in range(info.nvlink_link_count)]
        return [_Field(read.field_id, 0, read)]

    def _call_op(self, read: CallRead | None) -> Op | None:
        read = self.probe.usable(read)
        if read is None:
            return None
        older = read.fallback
        return Op(
            read.function,
            caller(read.function, read.args),
            _fill_call(read),
            read.keys,
            read.period_s,
            fallback=None if older is None else lambda: self._call_op(older),
        )

    def _field_op(self, batch: FieldBatch, period_s: float) -> Op:
        def call(handle: Any) -> FieldBatch:
            batch.clear()
            binding.read_fields(handle, batch.array)
            return batch

        return Op("nvmlDeviceGetFieldValues", call, self._fill_fields, batch.keys, period_s, batch=batch)

    def _gpm_op(self, sampler: GpmSampler, counters: list[_Field], link_max_bytes_per_s: float) -> Op:
        """The GPM op; it also fills the metrics of ``counters`` (the fields its reads stand for), and
        falls back to reading those fields where GPM answers NOT_SUPPORTED."""
        slots = [GPU_INDEX[read.key] for read in sampler.reads]
        factors = [times_and_per(read.scale) for read in sampler.reads]
        by_gpm = {f.key for f in counters}
        pairs = [(read.key, read.stands_for) for read in sampler.reads if read.stands_for in by_gpm]
        stood_for = [(GPU_INDEX[key], GPU_INDEX[counter]) for key, counter in pairs]

        def fill(g: GpuState, answer: tuple[list[int], list[float]] | None) -> None:
            values, states = g.values, g.states
            if answer is None:  # the first sample: nothing to compare it with yet
                for slot in slots:
                    values[slot], states[slot] = NAN, MetricState.NOT_YET
            else:
                codes, raw = answer
                numbers = [value * times / per for value, (times, per) in zip(raw, factors, strict=True)]
                if not any(codes):
                    for slot, number in zip(slots, numbers, strict=True):
                        values[slot], states[slot] = number, _OK
                else:
                    for slot, number, code in zip(slots, numbers, codes, strict=True):
                        ok = code == N.NVML_SUCCESS
                        values[slot], states[slot] = (number if ok else NAN), (_OK if ok else classify(code))
            for source, slot in stood_for:
                values[slot], states[slot] = values[source], states[source]
            for slot in op.unwanted:  # one call answers them all; the history keeps what was asked for
                values[slot], states[slot] = NAN, _NOT_READ

        def fallback() -> Op | None:
            """The counters' op, reading those of them that are demanded now (set_demand the rest)."""
            if not counters:  # a MIG instance's GPM stands for none of them
                return None
            batch = FieldBatch(counters, link_max_bytes_per_s)
            batch.set_fields([f for f in counters if GPU_INDEX[f.key] not in op.unwanted])
            return self._field_op(batch, EVERY_TICK_S)

        keys = tuple(read.key for read in sampler.reads) + tuple(counter for _, counter in pairs)
        op = Op("nvmlGpmMetricsGet", sampler.read, fill, keys, fallback=fallback, release=sampler.free, partial=True)
        return op

    def _process_op(self, read: ProcessListRead, function: str = "") -> Op | None:
        function = function or read.function
        if not self.probe.has(function):
            return None if function == read.fallback else self._process_op(read, read.fallback)
        kind = read.kind

        def fill(g: GpuState, procs: Any) -> None:
            g.used_when_listed = g.values[_MEMORY_USED]
            g.process_lists[kind] = self.processes.samples(g.index, kind, procs)
            processes = merged_by_pid(g.process_lists.values())
            # Each process's share of the SMs: asked with the compute list, applied to both lists,
            # at the lists' own cadence also where they are read every tick (Scheduler.every_tick):
            # the driver samples each process every second or more (sim.process_calls), and a call
            # sooner answers nothing new, which reads as every process idle.
            due_s = g.process_sm_asked_s + PROCESS_PERIOD_S - _ASK_EARLY_S
            ask = kind == "compute" and (not self.every_tick or g.tick_s >= due_s)
            g.processes = self._with_sm_util(g, processes, ask)

        older = None if function == read.fallback else (lambda: self._process_op(read, read.fallback))
        lister = binding.ProcessLister(function)  # one call a read, not pynvml's two
        return Op(function, lister, fill, (PROCESSES,), read.period_s, older, process_kind=kind)

    def _with_sm_util(self, g: GpuState, processes: tuple[ProcessSample, ...], ask: bool) -> tuple[ProcessSample, ...]:
        """``processes`` with their SM share from nvmlDeviceGetProcessUtilization. Not supported under MIG.

        The driver answers only the processes with a sample newer than the last-seen timestamp,
        and samples only those "that had some non-zero utilization" (nvml.h): a listed process it
        leaves out ran no kernel since the last call, so it is idle (0 %), not as it was before.
        A value above 100 (0xFFFFFFFF and other garbage drivers answer at times, see nvtop) is
        unknown (NaN), never a busy 100 %. Not ``ask``ed (every_tick, between asks): the last
        answer's shares, and none yet (NaN) for a process listed only since.
        """
        if not g.process_util_supported or not processes:
            return processes
        if ask:
            g.process_sm, g.process_sm_read = self._read_sm_util(g)
            g.process_sm_listed, g.process_sm_asked_s = frozenset(p.pid for p in processes), g.tick_s
            if not g.process_util_supported:
                return processes
        elif g.tick_s == g.process_sm_asked_s:  # the other kind's list, read in the same tick
            g.process_sm_listed |= {p.pid for p in processes}
        if not g.process_sm_read:
            return tuple(replace(p, sm_util_percent=NAN) for p in processes)
        shares, listed, unknown = g.process_sm, g.process_sm_listed, NAN if self.every_tick else 0.0
        return tuple(
            replace(p, sm_util_percent=shares.get(p.pid, 0.0 if p.pid in listed else unknown)) for p in processes
        )

    def _read_sm_util(self, g: GpuState) -> tuple[dict[int, float], bool]:
        """PID -> SM % of the samples since the last call, and whether the call answered."""
        self.session.current_call = "nvmlDeviceGetProcessUtilization"
        # The driver stamps these samples with the GPU's own time, which it sets to the wall clock
        # when the GPU starts and at each resume (open-gpu-kernel-modules' tmrSetCurrentTime): a
        # wall clock set back does not move it (an H100 on 580.159.04 went on an hour ahead of
        # one set back an hour: tests/recordings/h100-580-clockstep.probe.txt), but the next
        # resume sets it back too, and every sample after is stamped before the last one seen,
        # answered NOT_FOUND (every process idle) until the old time came round. A last-seen
        # stamp after the wall clock may be such a time: asking since 0 answers each process's
        # latest sample instead (the H100 answered the same one sample to both).
        if g.process_util_seen_us > self.clock.now_s() * 1e6:
            g.process_util_seen_us = 0
        try:
            samples = self._process_utilization(g.handle, g.process_util_seen_us)
        except N.NVMLError as error:
            if error.value == N.NVML_ERROR_NOT_FOUND:
                return {}, True  # no samples since the last call: every process was idle
            state = classify(error.value)  # raises where NVML as a whole is gone
            if state is MetricState.LOST:
                raise GpuLostError from None
            if state is _NOT_SUPPORTED:
                g.process_util_supported = False
            return {}, False  # this time unknown
        shares: dict[int, tuple[int, float]] = {}  # PID -> (timestamp, SM %): its latest sample
        for sample in samples:
            stamp, sm = int(sample.timeStamp), int(sample.smUtil)
            pid = int(sample.pid)
            if pid not in shares or stamp >= shares[pid][0]:
                shares[pid] = (stamp, float(sm) if sm <= 100 else NAN)
            g.process_util_seen_us = max(g.process_util_seen_us, stamp)
        return {pid: sm for pid, (_, sm) in shares.items()}, True

    # ---- demand ----
    def set_demand(self, g: GpuState, wanted: frozenset[str] | None) -> None:
        """Read only what ``wanted`` names (None: everything); the rest is NaN and NOT_READ.

        An op that becomes demanded is read on the next tick, whatever its cadence.
        """
        active: list[Op] = []
        for op in g.ops:
            batch = op.batch
            if batch is not None:
                fields = [f for f in batch.supported if wanted is None or f.key in wanted]
                if fields != batch.fields:
                    batch.set_fields(fields)
                    op.keys = batch.keys
                    op.failing, op.next_due_s = True, 0.0
                    self._mark(g, op.keys, _NO_DATA, (_OK, *_KEEP))  # the fields just added
                if not fields:
                    continue
            elif wanted is not None and not any(k in wanted for k in op.keys):
                continue
            if op.partial:  # GPM: the PCIe throughput alone may be what is demanded
                op.unwanted = tuple(GPU_INDEX[k] for k in op.keys if wanted is not None and k not in wanted)
            if op not in g.active:
                op.failing, op.next_due_s = True, 0.0
                self._mark(g, op.keys, _NO_DATA, (), op.process_kind)
            active.append(op)
        read = {k for op in active for k in op.keys if GPU_INDEX.get(k) not in op.unwanted}
        for op in g.ops:
            keys = op.batch.supported_keys() if op.batch is not None else op.keys
            self._mark(g, [k for k in keys if k not in read], _NOT_READ, _KEEP, op.process_kind)
            if op.release is not None and op not in active:  # GPM counters are held only while needed
                op.release()
        if PROCESSES not in read:
            g.process_lists, g.processes = {}, ()
        if "nvlink_tx_bytes_per_s" not in read:
            g.nvlink_tx = [NAN] * len(g.nvlink_tx)
            g.nvlink_rx = [NAN] * len(g.nvlink_rx)
        g.active = active

    @staticmethod
    def _mark(g: GpuState, keys: Any, state: MetricState, keep: tuple[MetricState, ...], kind: str = "") -> None:
        """Set ``keys`` (and, for PROCESSES, the ``kind`` list) to ``state`` unless they are in ``keep``."""
        for key in keys:
            if key == PROCESSES:
                if g.process_states.get(kind) not in keep:
                    g.process_states[kind] = state
                continue
            slot = GPU_INDEX[key]
            if g.states[slot] not in keep:
                g.states[slot] = state
                g.values[slot] = NAN

    # ---- reading ----
    def read(self, g: GpuState, now_s: float) -> None:
        """Run ``g``'s due ops. Raises NvmlDownError when NVML as a whole is gone."""
        handle = g.handle
        session = self.session
        g.tick_s = now_s
        # Asked once a tick, at the first list not due: the compute list's fill makes the lists
        # current again, and the graphics list, asked after it, stayed up to 5 s old.
        outlived: bool | None = None
        for op in g.active:
            if op.period_s and not self.every_tick:
                if now_s < op.next_due_s:
                    if not op.process_kind:
                        continue
                    if outlived is None:
                        outlived = _lists_outlived(g)
                    if not outlived:
                        continue
                op.next_due_s = now_s + op.period_s
            session.current_call = op.name
            try:
                result = op.call(handle)
            except N.NVMLError as error:
                if self._failed(g, op, error.value):
                    return
                continue
            if op.failing:
                op.failing = False
                if op.batch is not None:
                    op.batch.bad_keys = set(op.keys)  # its fill turns the fields that answered OK
                else:
                    self._succeeded(g, op)
            try:
                op.fill(g, result)
            except GpuLostError:
                g.mark_lost()
                return
        if g.dropped:
            g.active = [o for o in g.active if o not in g.dropped]
            g.dropped.clear()

    def held_ages(self, g: GpuState, now_s: float) -> tuple[tuple[str, float], ...]:
        """The keys whose values an earlier tick read, with how many seconds ago: those of the ops
        on a slower cadence that were not due at ``now_s`` (a value that failed since says so in
        its state instead). The process lists stand for the count made from them."""
        if self.every_tick:
            return ()
        held: dict[str, float] = {}
        for op in g.active:
            if op.period_s and not op.failing:
                age_s = now_s - (op.next_due_s - op.period_s)
                if age_s > 0:
                    for key in op.keys:
                        shown = PROCESS_COUNT if key == PROCESSES else key
                        held[shown] = max(age_s, held.get(shown, 0.0))
        return tuple(held.items())

    @staticmethod
    def _succeeded(g: GpuState, op: Op) -> None:
        for slot in op.slots:
            g.states[slot] = _OK
        if op.process_kind:
            g.process_states[op.process_kind] = _OK

    def _failed(self, g: GpuState, op: Op, code: int) -> bool:
        """Record what a failed call means; True when the GPU is lost (stop reading it)."""
        state = classify(code)
        if state is MetricState.LOST:
            g.mark_lost()
            return True
        if state is _NOT_SUPPORTED:
            if code == N.NVML_ERROR_FUNCTION_NOT_FOUND:
                self.probe.function_missing(op.name)
            if op.batch is not None:  # every field of it, each to its own fallback
                self._drop_fields(g, op.batch, list(op.batch.supported))
                return False
            older = op.fallback() if op.fallback is not None else None
            self._replace(g, op, op.keys, [older] if older is not None else [], op.process_kind)
            return False
        op.failing = True
        self._mark(g, op.keys, state, (), op.process_kind)
        return False

    def _replace(self, g: GpuState, op: Op | None, keys: Any, newer: list[Op], kind: str = "") -> None:
        """Drop ``op`` for good; read ``newer`` (fallbacks) from this tick on. Those of ``keys``
        that no fallback reads are NOT_SUPPORTED."""
        if op is not None:
            if op.release is not None:
                op.release()
            g.ops = [o for o in g.ops if o is not op]
            g.dropped.append(op)  # ``active`` is being iterated: newer ops appended run this tick
        g.ops += newer
        g.active += [o for o in newer if o.keys]  # one reading nothing demanded waits for set_demand
        covered = {k for o in newer for k in (o.batch.supported_keys() if o.batch is not None else o.keys)}
        self._mark(g, [k for k in keys if k not in covered], _NOT_SUPPORTED, (), kind)
        for o in newer:
            o.failing, o.next_due_s = True, 0.0
            self._mark(g, o.keys, _NO_DATA, (), o.process_kind)

    def _fill_fields(self, g: GpuState, batch: FieldBatch) -> None:
        stamps_us, codes, numbers = batch.answer()
        bad: dict[str, MetricState] = {}
        dropped: list[int] = []
        if any(codes):  # rare: some fields failed on their own
            for position, code in enumerate(codes):
                if not code:
                    continue
                # A field id newer than the driver answers INVALID_ARGUMENT in its own slot (the
                # call succeeds): the driver does not know it, so it is as good as not supported
                # and the metric's fallback (e.g. nvmlDeviceGetPcieThroughput) is read instead.
                state = _NOT_SUPPORTED if code == N.NVML_ERROR_INVALID_ARGUMENT else classify(code)
                if state is MetricState.LOST:
                    raise GpuLostError
                if state is _NOT_SUPPORTED:
                    dropped.append(position)
                else:
                    bad[batch.fields[position].key] = state
                numbers[position] = NAN
        for position, key, (low, high) in batch.bounded:
            if codes[position]:
                continue  # failed on its own: already NaN with its state
            if (
                batch.value_types[position] == N.NVML_VALUE_TYPE_DOUBLE
                and (raw := batch.raw(position))
                and not raw >> 32
            ):
                # Labelled DOUBLE but holding an unsigned int (r545): no double of a plausible
                # reading has its upper 32 bits (sign, exponent) all zero; a denormal that does
                # is the integer in the low ones.
                numbers[position] = float(raw)
            number = numbers[position]
            if number == number and not low <= number <= high:
                numbers[position] = NAN  # not a reading that can be true: unknown, never a huge number
                bad[key] = _NO_DATA
        for position, slot, times, per in batch.value_fields:
            g.values[slot] = numbers[position] * times / per
        if batch.counter_slots or batch.has_links:
            monotonic_s = self.clock.monotonic_s()
            offset_s = self.clock.now_s() - monotonic_s
            rates, first = batch.rates(numbers, monotonic_s, stamps_us, offset_s)
            for k, slot in batch.counter_slots:
                g.values[slot] = float(rates[k])
            if batch.has_wrapping:
                for k, key in batch.counter_keys:
                    if batch.lower_bounds[k]:
                        g.lower_bounds.add(key)
                    else:
                        g.lower_bounds.discard(key)
            if any(first):
                self._not_yet(batch, first, bad)
            if batch.has_tx:
                g.nvlink_tx = rates[batch.tx_links]
                g.values[_NVLINK_TX] = _total(g.nvlink_tx)
            if batch.has_rx:
                g.nvlink_rx = rates[batch.rx_links]
                g.values[_NVLINK_RX] = _total(g.nvlink_rx)
        if bad or batch.bad_keys:
            for key in batch.bad_keys - bad.keys():
                g.states[GPU_INDEX[key]] = _OK
            for key, state in bad.items():
                g.values[GPU_INDEX[key]] = NAN
                g.states[GPU_INDEX[key]] = state
            batch.bad_keys = set(bad)
        if dropped:
            self._drop_fields(g, batch, [batch.fields[p] for p in dropped])

    @staticmethod
    def _not_yet(batch: FieldBatch, first: list[bool], bad: dict[str, MetricState]) -> None:
        """Rates with one reading so far are NOT_YET (their value NaN) until the next reading;
        a failed field's own state says more and stays."""
        counters = batch.fields[batch.counters]  # a link's field carries its total's key
        for field_, is_first in zip(counters, first, strict=True):
            if is_first:
                bad.setdefault(field_.key, MetricState.NOT_YET)

    def _drop_fields(self, g: GpuState, batch: FieldBatch, gone: list[_Field]) -> None:
        """Fields answering NOT_SUPPORTED are not asked for again; their spec's fallback is read instead."""
        batch.supported = [f for f in batch.supported if f not in gone]
        still_bad = batch.bad_keys  # a failed or NOT_YET field that stays turns OK on its next answer
        batch.set_fields([f for f in batch.fields if f not in gone])
        batch.bad_keys = still_bad & set(batch.keys)
        op = next(o for o in g.ops if o.batch is batch)
        op.keys = batch.keys
        still = batch.supported_keys()
        reads = list(dict.fromkeys(f.read for f in gone if f.key not in still))
        newer = [o for r in reads if r.fallback is not None and (o := self._call_op(r.fallback)) is not None]
        self._replace(g, op if not batch.supported else None, [r.key for r in reads], newer)
