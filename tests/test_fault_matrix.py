"""Every NVML call the reader makes, failing with every relevant code, on GPU 0 only.

For each (function, code): no exception escapes, GPU 1 is untouched, the metrics that stop
being OK on GPU 0 carry the state that code means, and after a transient failure clears the
metrics come back.
"""

from __future__ import annotations

import pynvml as N
import pytest

from tests.helpers import run_ticks, simulated_source, states_by_key
from trayvml.core.sample import MetricState

SPEC = "faults:gpus=h100*2,lost="
TRANSIENT = {
    N.NVML_ERROR_NO_PERMISSION: MetricState.NO_PERMISSION,
    N.NVML_ERROR_NO_DATA: MetricState.NO_DATA,
    N.NVML_ERROR_UNKNOWN: MetricState.NO_DATA,
    N.NVML_ERROR_TIMEOUT: MetricState.NO_DATA,
    N.NVML_ERROR_INSUFFICIENT_SIZE: MetricState.NO_DATA,
}
PERMANENT = (N.NVML_ERROR_NOT_SUPPORTED, N.NVML_ERROR_FUNCTION_NOT_FOUND)
START_ONLY = {  # read once at start: a failure there leaves a static fact unknown
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetSerial",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetVbiosVersion",
    "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetPersistenceMode",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetEccMode",
    "nvmlDeviceGetPowerManagementLimitConstraints",
    "nvmlDeviceGetPowerManagementDefaultLimit",
    "nvmlDeviceGetMaxClockInfo",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceRegisterEvents",
}
TICKS = 12


def _per_device_functions() -> list[str]:
    source, clock, lib = simulated_source(SPEC)
    clock.advance_s(120)  # a job is running, so process lists are fetched with two calls
    run_ticks(source, clock, TICKS)
    system = {
        "nvmlInitWithFlags",
        "nvmlShutdown",
        "nvmlSystemGetDriverVersion",
        "nvmlSystemGetNVMLVersion",
        "nvmlSystemGetCudaDriverVersion",
        "nvmlDeviceGetCount_v2",
        "nvmlDeviceGetHandleByIndex_v2",
        "nvmlEventSetCreate",
        "nvmlEventSetWait_v2",
        "nvmlErrorString",
    }
    return sorted(set(lib.calls) - system)


FUNCTIONS = _per_device_functions()


def _baseline():
    source, clock, _ = simulated_source(SPEC)
    clock.advance_s(120)
    return run_ticks(source, clock, TICKS)


BASELINE = None
_CALLS_PER_GPU: dict[str, int] = {}


def calls_per_gpu(function: str) -> int:
    """Calls of ``function`` one healthy GPU makes in TICKS more ticks after the baseline."""
    if not _CALLS_PER_GPU:
        source, clock, lib = simulated_source(SPEC)
        clock.advance_s(120)
        run_ticks(source, clock, TICKS)
        before = dict(lib.calls)
        run_ticks(source, clock, TICKS)
        _CALLS_PER_GPU.update({name: (count - before.get(name, 0)) // 2 for name, count in lib.calls.items()})
    return _CALLS_PER_GPU.get(function, 0)


def baseline():
    global BASELINE
    if BASELINE is None:
        BASELINE = _baseline()
    return BASELINE


def test_the_matrix_covers_the_reader_calls() -> None:
    assert len(FUNCTIONS) >= 20
    assert "nvmlDeviceGetFieldValues" in FUNCTIONS and "nvmlDeviceGetComputeRunningProcesses_v3" in FUNCTIONS


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("code", [*TRANSIENT, *PERMANENT, N.NVML_ERROR_GPU_IS_LOST])
def test_failure(function: str, code: int) -> None:
    source, clock, lib = simulated_source(SPEC)
    clock.advance_s(120)
    if code == N.NVML_ERROR_FUNCTION_NOT_FOUND:
        lib.missing_functions.add(function)  # what an old driver does: the symbol is absent
    else:
        lib.fail(function, code, gpu=0)
    sample = run_ticks(source, clock, TICKS)
    base = baseline()
    assert len(sample.gpus) == 2
    if code != N.NVML_ERROR_FUNCTION_NOT_FOUND:  # a missing symbol is missing for every GPU
        assert states_by_key(sample, 1) == states_by_key(base, 1)
    gpu0, before = states_by_key(sample, 0), states_by_key(base, 0)
    changed = {k: s for k, s in gpu0.items() if s is not before[k]}

    if code == N.NVML_ERROR_GPU_IS_LOST:
        assert sample.gpus[0].lost and set(gpu0.values()) == {MetricState.LOST}
        return
    assert not sample.gpus[0].lost
    if code in PERMANENT:
        assert set(changed.values()) <= {MetricState.NOT_SUPPORTED}
        if function not in START_ONLY:
            # Not asked again: only GPU 1 (or, for a missing symbol, no GPU) still calls it.
            calls = lib.calls[function]
            run_ticks(source, clock, TICKS)
            expected = 0 if code == N.NVML_ERROR_FUNCTION_NOT_FOUND else calls_per_gpu(function)
            assert lib.calls[function] - calls == expected
        return
    assert set(changed.values()) <= {TRANSIENT[code]}
    if function not in START_ONLY:
        assert changed, f"{function} failing left every metric as it was"
        lib.failures.clear()
        recovered = run_ticks(source, clock, TICKS)
        assert states_by_key(recovered, 0) == before
