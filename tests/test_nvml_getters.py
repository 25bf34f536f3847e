"""binding.getter: the read specs' calls by their C symbol answer what pynvml's wrappers answer."""

from __future__ import annotations

import pynvml as N
import pytest

from trayvml.core.clock import ManualClock
from trayvml.nvml import binding
from trayvml.nvml.probe import pick
from trayvml.nvml.sim import parse_spec
from trayvml.nvml.sim.library import SimulatedNvml, install
from trayvml.nvml.specs import CALLS, FIELDS, CallRead, call_chain

READS = list(
    dict.fromkeys([r for read in CALLS for r in call_chain(read)] + [r for f in FIELDS for r in call_chain(f.fallback)])
)


@pytest.fixture
def lib() -> SimulatedNvml:
    clock = ManualClock()
    library = SimulatedNvml(parse_spec("training:gpus=h100+rtx4090+laptop"), clock)
    install(library)
    N.nvmlInit()
    clock.advance_s(700)
    return library


def _wrapper_answer(read: CallRead, handle: object) -> object:
    if read.function == "nvmlDeviceGetMemoryInfo_v2":
        return N.nvmlDeviceGetMemoryInfo(handle, version=N.nvmlMemory_v2)
    return getattr(N, read.function)(handle, *read.args)


def _picked(read: CallRead, answer: object) -> list[object]:
    return [pick(answer, how) for how in read.picks] if read.picks else [answer]


def test_every_spec_call_has_a_getter() -> None:
    assert all(binding.has_getter(read.function) for read in READS)


@pytest.mark.parametrize("read", READS, ids=lambda r: f"{r.function}{r.args}")
def test_a_getter_answers_as_pynvmls_wrapper_and_fails_as_it(lib: SimulatedNvml, read: CallRead) -> None:
    get = binding.getter(read.function, read.args)
    assert get is not None
    for index in range(3):
        handle = N.nvmlDeviceGetHandleByIndex(index)
        try:
            expected = _picked(read, _wrapper_answer(read, handle))
        except N.NVMLError as error:
            with pytest.raises(N.NVMLError) as raised:
                get(handle)
            assert raised.value.value == error.value and type(raised.value) is type(error)
            continue
        assert _picked(read, get(handle)) == expected
        assert _picked(read, get(handle)) == expected  # its buffers reused: the same answer again


def test_a_getter_follows_the_library_beneath_pynvml(lib: SimulatedNvml) -> None:
    get = binding.getter("nvmlDeviceGetClockInfo", (N.NVML_CLOCK_SM,))
    assert get is not None
    handle = N.nvmlDeviceGetHandleByIndex(0)
    get(handle)
    assert lib.calls["nvmlDeviceGetClockInfo"] == 1
    lib.fail("nvmlDeviceGetClockInfo", N.NVML_ERROR_GPU_IS_LOST)
    with pytest.raises(N.NVMLError) as lost:
        get(handle)
    assert lost.value.value == N.NVML_ERROR_GPU_IS_LOST
    lib.missing_functions.add("nvmlDeviceGetClockInfo")
    binding.forget_functions()  # an older driver's library: the symbol is gone
    with pytest.raises(N.NVMLError_FunctionNotFound):
        get(handle)
    other = SimulatedNvml(parse_spec("training:gpus=h100"), ManualClock())
    install(other)
    N.nvmlInit()
    get(N.nvmlDeviceGetHandleByIndex(0))
    assert other.calls["nvmlDeviceGetClockInfo"] == 1


@pytest.mark.parametrize(
    ("function", "args", "how"),
    [
        ("nvmlDeviceGetUtilizationRates", (), "memory"),  # a structure
        ("nvmlDeviceGetClockInfo", (N.NVML_CLOCK_SM,), None),  # a number
        ("nvmlDeviceGetPowerUsage", (), None),
    ],
)
def test_an_answer_of_an_earlier_call_does_not_remain_where_a_call_writes_nothing(
    lib: SimulatedNvml, function: str, args: tuple[int, ...], how: str | None
) -> None:
    get = binding.getter(function, args)
    assert get is not None
    handle = N.nvmlDeviceGetHandleByIndex(0)
    answer = get(handle)
    assert (answer if how is None else getattr(answer, how)) > 0
    lib.fail(function, N.NVML_SUCCESS)  # success, nothing written: pynvml's fresh buffer reads 0
    answer = get(handle)
    assert (answer if how is None else getattr(answer, how)) == 0
