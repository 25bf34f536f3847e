"""Every NVML call the read specs name, on every path to it, failing with every relevant code.

The matrix comes from trayvml/nvml/specs.py, not from what one profile happened to call: each
call, each older variant it falls back on (reached by removing the newer symbol, as an old
driver does), the PCIe throughput call (reached by fields answering NOT_SUPPORTED), the static
facts and each field value's own return code. Each case fails on GPU 0 only (a missing symbol
is missing for every GPU) and asserts the whole resulting state: every metric's state on both
GPUs, NaN wherever a state is not OK, the static facts left unknown, the fallback taken, the
call not made again once NOT_SUPPORTED, the GPU lost, or NVML down with the right reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import pynvml as N
import pytest

from tests.helpers import run_ticks, simulated_source, states_by_key
from trayvml.core.clock import ManualClock
from trayvml.core.errors import UnavailableReason
from trayvml.core.metrics import GPU_METRICS, Derivation
from trayvml.core.sample import DeviceInfo, MetricState, Sample
from trayvml.nvml.session import RETRY_PERIOD_S
from trayvml.nvml.sim.library import SimulatedNvml
from trayvml.nvml.specs import CALLS, FIELDS, PROCESS_LISTS, STATIC, FieldRead, call_chain
from trayvml.source import Source

SPEC = "faults:gpus=h100*2,lost="
TICKS = 12  # past the 10 s cadence: every op has been due twice
TRANSIENT = {
    N.NVML_ERROR_NO_PERMISSION: MetricState.NO_PERMISSION,
    N.NVML_ERROR_NO_DATA: MetricState.NO_DATA,
    N.NVML_ERROR_UNKNOWN: MetricState.NO_DATA,
    N.NVML_ERROR_TIMEOUT: MetricState.NO_DATA,
    N.NVML_ERROR_INSUFFICIENT_SIZE: MetricState.NO_DATA,
}
PERMANENT = (N.NVML_ERROR_NOT_SUPPORTED, N.NVML_ERROR_FUNCTION_NOT_FOUND)
FATAL = {
    N.NVML_ERROR_UNINITIALIZED: UnavailableReason.OTHER,
    N.NVML_ERROR_DRIVER_NOT_LOADED: UnavailableReason.DRIVER_NOT_LOADED,
    N.NVML_ERROR_LIB_RM_VERSION_MISMATCH: UnavailableReason.VERSION_MISMATCH,
    N.NVML_ERROR_LIBRARY_NOT_FOUND: UnavailableReason.LIBRARY_NOT_FOUND,
}
CODES = [*TRANSIENT, *PERMANENT, N.NVML_ERROR_GPU_IS_LOST, *FATAL]
OK, NOT_SUPPORTED, LOST = MetricState.OK, MetricState.NOT_SUPPORTED, MetricState.LOST
PROCESS_KEY = "process_count"
DEFAULTS = {f.name: f.default for f in fields(DeviceInfo)}


@dataclass(frozen=True)
class Path:
    """A call, and what makes the reader use it: newer symbols removed, fields unsupported."""

    function: str
    missing: tuple[str, ...] = ()
    unsupported_fields: tuple[int, ...] = ()

    def __str__(self) -> str:
        how = [f"without {m}" for m in self.missing] + [f"fields {self.unsupported_fields} unsupported"] * bool(
            self.unsupported_fields
        )
        return " ".join([self.function, *how])


def _paths() -> list[Path]:
    paths = []
    for read in CALLS:
        chain = call_chain(read)
        paths += [Path(r.function, tuple(older.function for older in chain[:k])) for k, r in enumerate(chain)]
    paths.append(Path("nvmlDeviceGetFieldValues"))
    for field in FIELDS:
        if field.fallback is not None:
            pcie = tuple(f.field_id for f in FIELDS if f.fallback is not None)
            paths.append(Path(field.fallback.function, unsupported_fields=pcie))
    for lists in PROCESS_LISTS:
        paths += [Path(lists.function), Path(lists.fallback, (lists.function,))]
    paths += [Path(s.function) for s in STATIC]
    paths.append(Path("nvmlDeviceRegisterEvents"))
    return list(dict.fromkeys(paths))


PATHS = _paths()


def _source(path: Path) -> tuple[Source, ManualClock, SimulatedNvml]:
    source, clock, lib = simulated_source(SPEC)
    clock.advance_s(120)  # a job is running, so process lists are fetched with two calls
    # Without GPM the H100 reads its PCIe throughput from the byte counters (and their fallback), the
    # paths this matrix covers; GPM's own, and its fall back to the counters, are in test_gpm.py.
    lib.missing_functions.add("nvmlGpmQueryDeviceSupport")
    lib.missing_functions.update(path.missing)
    for fid in path.unsupported_fields:
        lib.fail_field(fid, N.NVML_ERROR_NOT_SUPPORTED)
    return source, clock, lib


_BASELINES: dict[Path, tuple] = {}


def baseline(path: Path) -> tuple[dict[str, MetricState], dict[str, int]]:
    """GPU 0's states on this path without the fault, and each function's calls per GPU per TICKS."""
    setup = Path("", path.missing, path.unsupported_fields)
    if setup not in _BASELINES:
        source, clock, lib = _source(setup)
        sample = run_ticks(source, clock, TICKS)
        before = dict(lib.calls)
        run_ticks(source, clock, TICKS)
        calls = {name: (count - before.get(name, 0)) // 2 for name, count in lib.calls.items()}
        _BASELINES[setup] = (states_by_key(sample, 0), calls)
    return _BASELINES[setup]


def _served(path: Path) -> tuple[list[tuple[tuple[str, ...], tuple[str, ...] | None]], list[str], set[str]]:
    """What the failing call reads on this path: (keys, keys its fallback reads or None) per
    dynamic read, the static facts, and the process-list kinds."""
    reads: list[tuple[tuple[str, ...], tuple[str, ...] | None]] = []
    pcie = [f.fallback for f in FIELDS if f.fallback is not None and f.field_id in path.unsupported_fields]
    for read in [*CALLS, *pcie]:
        chain = [r for r in call_chain(read) if r.function not in path.missing]
        if chain and chain[0].function == path.function:
            reads.append((chain[0].keys, chain[1].keys if len(chain) > 1 else None))
    if path.function == "nvmlDeviceGetFieldValues":
        for field in FIELDS:
            reads.append(((field.key,), field.fallback.keys if field.fallback is not None else None))
    kinds = set()
    for lists in PROCESS_LISTS:
        if path.function in (lists.function, lists.fallback) and path.function not in path.missing:
            kinds.add(lists.kind)
    if path.function == "nvmlDeviceRegisterEvents":
        reads.append((("xid_error_count", "xid_last"), None))
    statics = [name for s in STATIC if s.function == path.function for name in s.fields]
    return reads, statics, kinds


def expected_states(path: Path, code: int, dynamic: bool = True) -> dict[str, MetricState]:
    """GPU 0's states when ``path`` fails with ``code`` (transient or permanent): the baseline,
    with what the call reads in the state the code means and derived metrics following their
    inputs. ``dynamic=False``: after the fault has cleared (static facts stay unknown)."""
    base, _ = baseline(path)
    states = dict(base)
    reads, statics, kinds = _served(path)
    permanent = code in PERMANENT
    failed = NOT_SUPPORTED if permanent else TRANSIENT[code]
    for keys, fallback_keys in reads:
        event = "xid_error_count" in keys
        if not dynamic and not event:
            continue
        for key in keys:
            states[key] = OK if permanent and fallback_keys and key in fallback_keys else failed
    process_states = {p.kind: OK for p in PROCESS_LISTS}
    if dynamic:
        for kind in kinds:
            older = next(p.fallback for p in PROCESS_LISTS if p.kind == kind)
            has_older = path.function != older
            process_states[kind] = OK if permanent and has_older else failed
    for metric in GPU_METRICS:
        derived = metric.derived
        if derived is None:
            continue
        if derived.how is Derivation.COUNT:
            told = [s for s in process_states.values() if s is not NOT_SUPPORTED]
            states[metric.key] = max(told) if told else NOT_SUPPORTED
            continue
        inputs = [states.get(i, NOT_SUPPORTED if i in statics else OK) for i in derived.inputs]
        states[metric.key] = max(inputs)
    return states


def _unknown(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def assert_states(sample: Sample, gpu: int, expected: dict[str, MetricState]) -> None:
    assert states_by_key(sample, gpu) == expected
    for metric in GPU_METRICS:
        if expected[metric.key] is not OK:
            assert math.isnan(sample.gpus[gpu].value(metric.key)), metric.key


def test_the_matrix_covers_every_spec_call_and_fallback() -> None:
    functions = {p.function for p in PATHS}
    for read in CALLS:
        assert {r.function for r in call_chain(read)} <= functions
    assert {
        "nvmlDeviceGetFieldValues",
        "nvmlDeviceGetPcieThroughput",
        "nvmlDeviceGetMemoryInfo",
        "nvmlDeviceGetComputeRunningProcesses_v2",
        "nvmlDeviceGetGraphicsRunningProcesses_v2",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
    } <= functions
    assert {s.function for s in STATIC} <= functions
    assert Path("nvmlDeviceGetMemoryInfo", ("nvmlDeviceGetMemoryInfo_v2",)) in PATHS  # memory v1 as a fallback


@pytest.mark.parametrize("path", PATHS, ids=str)
@pytest.mark.parametrize("code", CODES)
def test_failure(path: Path, code: int) -> None:
    source, clock, lib = _source(path)
    if code == N.NVML_ERROR_FUNCTION_NOT_FOUND:
        lib.missing_functions.add(path.function)  # what an old driver does: the symbol is absent
    else:
        lib.fail(path.function, code, gpu=0)
    sample = run_ticks(source, clock, TICKS)
    base, calls_per_gpu = baseline(path)

    if code in FATAL:
        assert sample.gpus == () and sample.unavailable is not None
        assert sample.unavailable.reason is FATAL[code]
        lib.failures.clear()
        clock.advance_s(RETRY_PERIOD_S)
        assert len(source.sample().gpus) == 2  # tried again, and back
        return
    assert len(sample.gpus) == 2
    if code == N.NVML_ERROR_GPU_IS_LOST:
        assert sample.gpus[0].lost and set(states_by_key(sample, 0).values()) == {LOST}
        assert all(math.isnan(v) for v in sample.gpus[0].values) and sample.gpus[0].processes == ()
        assert states_by_key(sample, 1) == base
        return

    assert not sample.gpus[0].lost
    expected = expected_states(path, code)
    assert_states(sample, 0, expected)
    assert_states(sample, 1, expected if code == N.NVML_ERROR_FUNCTION_NOT_FOUND else base)
    _, statics, _ = _served(path)
    info = sample.devices[0]
    for name in statics:
        default = "GPU 0" if name == "name" else DEFAULTS[name]
        value = getattr(info, name)
        assert value == default or (_unknown(value) and _unknown(default)), name
    if statics and code != N.NVML_ERROR_FUNCTION_NOT_FOUND:
        assert getattr(sample.devices[1], statics[0]) != getattr(info, statics[0])

    if code in PERMANENT:
        older = _fallback_functions(path)
        if older:  # the older variant answers instead
            assert any(lib.calls[f] for f in older), "fallback not taken"
        if calls_per_gpu.get(path.function):  # not asked again: only GPU 1, or no GPU, still calls it
            calls = lib.calls[path.function]
            run_ticks(source, clock, TICKS)
            expected_calls = 0 if code == N.NVML_ERROR_FUNCTION_NOT_FOUND else calls_per_gpu[path.function]
            assert lib.calls[path.function] - calls == expected_calls
        return
    lib.failures.clear()  # a transient failure clears: what is read again comes back
    # Twice TICKS: a rate of a 10 s counter comes back with its second reading (until then NOT_YET).
    recovered = run_ticks(source, clock, 2 * TICKS)
    assert_states(recovered, 0, expected_states(path, code, dynamic=False))


def _fallback_functions(path: Path) -> list[str]:
    found = []
    for read in CALLS:
        chain = call_chain(read)
        found += [chain[k + 1].function for k, r in enumerate(chain[:-1]) if r.function == path.function]
    if path.function == "nvmlDeviceGetFieldValues":
        found += [f.fallback.function for f in FIELDS if f.fallback is not None]
    found += [p.fallback for p in PROCESS_LISTS if p.function == path.function]
    return found


FIELD_CODES = [N.NVML_ERROR_NO_PERMISSION, N.NVML_ERROR_UNKNOWN, N.NVML_ERROR_NOT_SUPPORTED, N.NVML_ERROR_GPU_IS_LOST]


@pytest.mark.parametrize("field", FIELDS, ids=lambda f: f.key)
@pytest.mark.parametrize("code", [*FIELD_CODES, N.NVML_ERROR_DRIVER_NOT_LOADED])
def test_a_field_failing_on_its_own(field: FieldRead, code: int) -> None:
    """One field's own return code in an otherwise good field-value call."""
    source, clock, lib = _source(Path(""))
    lib.fail_field(field.field_id, code, gpu=0)
    sample = run_ticks(source, clock, TICKS)
    base, _ = baseline(Path(""))
    if code in FATAL:
        assert sample.gpus == () and sample.unavailable is not None
        assert sample.unavailable.reason is FATAL[code]
        return
    if code == N.NVML_ERROR_GPU_IS_LOST:
        assert sample.gpus[0].lost and not sample.gpus[1].lost
        return
    expected = dict(base)
    for same in (f for f in FIELDS if f.field_id == field.field_id):  # a count and its rate share an id
        if code in TRANSIENT:
            expected[same.key] = TRANSIENT[code]
        elif same.fallback is None:
            expected[same.key] = NOT_SUPPORTED if base[same.key] is OK else base[same.key]
        else:  # read by the older call instead
            assert lib.calls[same.fallback.function] > 0
    assert_states(sample, 0, expected)
    assert states_by_key(sample, 1) == base
