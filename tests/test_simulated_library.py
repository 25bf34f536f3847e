"""The simulated library answers pynvml the way libnvidia-ml does."""

from __future__ import annotations

import numpy as np
import pynvml as N
import pytest

from trayvml.core.clock import ManualClock
from trayvml.nvml.sim import parse_spec
from trayvml.nvml.sim.field_models import memory_temperature_c
from trayvml.nvml.sim.library import SimulatedNvml, install

MIB = 2**20


@pytest.fixture
def lib() -> SimulatedNvml:
    library = SimulatedNvml(parse_spec("training:gpus=h100+rtx4090+laptop"), ManualClock())
    install(library)
    N.nvmlInit()
    return library


def _advance_s(lib: SimulatedNvml, seconds: float) -> None:
    assert isinstance(lib.clock, ManualClock)  # the fixture's
    lib.clock.advance_s(seconds)


def handle(index: int):
    return N.nvmlDeviceGetHandleByIndex(index)


def test_devices_are_listed_with_their_identity(lib: SimulatedNvml) -> None:
    assert N.nvmlDeviceGetCount() == 3
    names = [N.nvmlDeviceGetName(handle(i)) for i in range(3)]
    assert names == ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4070 Laptop GPU"]
    uuids = {N.nvmlDeviceGetUUID(handle(i)) for i in range(3)}
    assert len(uuids) == 3 and all(u.startswith("GPU-") for u in uuids)
    assert N.nvmlDeviceGetIndex(handle(2)) == 2


def test_unsupported_features_raise_not_supported_per_profile(lib: SimulatedNvml) -> None:
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetFanSpeed(handle(0))  # SXM board: chassis-cooled
    assert 30 <= N.nvmlDeviceGetFanSpeed(handle(1)) <= 100
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetPowerUsage(handle(2))  # laptop
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetEccMode(handle(1))
    assert N.nvmlDeviceGetEccMode(handle(0)) == [1, 1]


def test_memory_v1_counts_the_reservation_as_used(lib: SimulatedNvml) -> None:
    _advance_s(lib, 600)  # training has allocated memory by now
    v1 = N.nvmlDeviceGetMemoryInfo(handle(0))
    v2 = N.nvmlDeviceGetMemoryInfo(handle(0), version=N.nvmlMemory_v2)
    assert v2.total == v1.total == 81559 * MIB
    assert v2.reserved == 579 * MIB
    assert v1.used == v2.used + v2.reserved
    assert v2.used + v2.free + v2.reserved == v2.total
    assert v2.used > 10 * 2**30


def test_process_lists_follow_the_two_call_protocol(lib: SimulatedNvml) -> None:
    assert N.nvmlDeviceGetComputeRunningProcesses(handle(0)) == []  # the job starts at 60 s
    _advance_s(lib, 300)
    procs = N.nvmlDeviceGetComputeRunningProcesses(handle(0))
    assert len(procs) == 1 and procs[0].pid > 4_194_304 and procs[0].usedGpuMemory > 0
    graphics = N.nvmlDeviceGetGraphicsRunningProcesses(handle(1))
    assert [p.usedGpuMemory for p in graphics] == [300 * MIB]


def test_a_function_the_driver_lacks_is_function_not_found(lib: SimulatedNvml) -> None:
    from trayvml.nvml import binding

    lib.missing_functions.add("nvmlDeviceGetMemoryInfo_v2")
    binding.forget_functions()
    with pytest.raises(N.NVMLError_FunctionNotFound):
        N.nvmlDeviceGetMemoryInfo(handle(0), version=N.nvmlMemory_v2)


def test_counters_only_grow_and_match_the_power_drawn(lib: SimulatedNvml) -> None:
    first = N.nvmlDeviceGetTotalEnergyConsumption(handle(0))
    _advance_s(lib, 10)
    second = N.nvmlDeviceGetTotalEnergyConsumption(handle(0))
    power_mw = N.nvmlDeviceGetPowerUsage(handle(0))
    assert second > first
    # Ten seconds at roughly the current draw, within the jitter of an idle GPU.
    assert abs((second - first) - 10 * power_mw) < 0.1 * 10 * power_mw


def test_values_are_deterministic_across_instances_and_time_jumps() -> None:
    def reading(jump_s: float) -> tuple:
        clock = ManualClock()
        install(SimulatedNvml(parse_spec("training:seed=5"), clock))
        N.nvmlInit()
        clock.advance_s(jump_s)
        h = handle(0)
        return (
            N.nvmlDeviceGetUtilizationRates(h).gpu,
            N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU),
            N.nvmlDeviceGetTotalEnergyConsumption(h),
        )

    assert reading(5000) == reading(5000)
    assert reading(5001)[2] > reading(5000)[2]  # energy keeps counting


def test_twelve_simulated_hours_are_quick(lib: SimulatedNvml) -> None:
    _advance_s(lib, 12 * 3600)
    assert 0 <= N.nvmlDeviceGetUtilizationRates(handle(0)).gpu <= 100
    energy_j = N.nvmlDeviceGetTotalEnergyConsumption(handle(0)) / 1000
    assert 12 * 3600 * 70 < energy_j < 12 * 3600 * 700  # between idle and the limit, all along


def test_a_lost_gpu_fails_every_call_while_others_answer() -> None:
    clock = ManualClock()
    install(SimulatedNvml(parse_spec("training:gpus=h100*2,lost=1@100"), clock))
    N.nvmlInit()
    N.nvmlDeviceGetTemperature(handle(1), N.NVML_TEMPERATURE_GPU)
    clock.advance_s(100)
    with pytest.raises(N.NVMLError_GpuIsLost):
        N.nvmlDeviceGetTemperature(handle(1), N.NVML_TEMPERATURE_GPU)
    assert N.nvmlDeviceGetTemperature(handle(0), N.NVML_TEMPERATURE_GPU) > 0


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("missing", N.NVMLError_LibraryNotFound),
        ("not-loaded", N.NVMLError_DriverNotLoaded),
        ("mismatch", N.NVMLError_LibRmVersionMismatch),
        ("no-permission", N.NVMLError_NoPermission),
    ],
)
def test_nvml_start_faults_end_when_scheduled(fault: str, error: type) -> None:
    clock = ManualClock()
    install(SimulatedNvml(parse_spec(f"idle:nvml={fault}@30"), clock))
    with pytest.raises(error):
        N.nvmlInit()
    clock.advance_s(30)
    N.nvmlInit()
    assert N.nvmlDeviceGetCount() == 4


def test_field_values_have_their_own_return_codes(lib: SimulatedNvml) -> None:
    ids = [N.NVML_FI_DEV_MEMORY_TEMP, N.NVML_FI_DEV_POWER_INSTANT, N.NVML_FI_DEV_NVLINK_LINK_COUNT]
    h100 = N.nvmlDeviceGetFieldValues(handle(0), ids)
    assert [v.nvmlReturn for v in h100] == [N.NVML_SUCCESS] * 3
    assert h100[2].value.uiVal == 18
    laptop = N.nvmlDeviceGetFieldValues(handle(2), ids)
    assert laptop[0].nvmlReturn == N.NVML_ERROR_NOT_SUPPORTED
    assert laptop[1].nvmlReturn == N.NVML_ERROR_NOT_SUPPORTED
    assert laptop[2].value.uiVal == 0


def test_realistic_latency_blocks_in_slow_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    from trayvml.nvml.sim import base

    slept: list[float] = []
    monkeypatch.setattr(base.time, "sleep", slept.append)
    install(SimulatedNvml(parse_spec("idle:gpus=h100,latency=realistic"), ManualClock()))
    N.nvmlInit()
    N.nvmlDeviceGetPcieThroughput(handle(0), N.NVML_PCIE_UTIL_TX_BYTES)
    N.nvmlDeviceGetComputeRunningProcesses(handle(0))
    N.nvmlDeviceGetTemperature(handle(0), N.NVML_TEMPERATURE_GPU)  # cheap: spins, does not sleep
    assert slept == [0.02, 0.00225]


def test_spec_knows_every_scenario() -> None:
    from trayvml.nvml.sim.options import SCENARIO_NAMES
    from trayvml.nvml.sim.scenarios import SCENARIOS

    assert set(SCENARIO_NAMES) == set(SCENARIOS)


def test_parsing_a_spec_does_not_import_numpy() -> None:
    import subprocess
    import sys

    code = "import sys, trayvml.cli, trayvml.nvml.sim as s; s.parse_spec('thermal'); print('numpy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_speed_and_start_move_simulated_time() -> None:
    clock = ManualClock()
    library = SimulatedNvml(parse_spec("thermal:speed=60,start=350"), clock)
    assert library.sim_time_s() == 350
    clock.advance_s(2)
    assert library.sim_time_s() == 470


def test_the_default_simulation_starts_with_the_training_job_running() -> None:
    from trayvml.nvml.sim.options import DEFAULT_START_S

    spec = parse_spec("")  # what --simulate alone, scripts/run and the tray's menu ask for
    assert spec.scenario == "training" and spec.start_s == DEFAULT_START_S
    assert parse_spec(":seed=3").start_s == DEFAULT_START_S and parse_spec("training").start_s == 0
    install(SimulatedNvml(spec, ManualClock()))
    N.nvmlInit()
    for index in range(N.nvmlDeviceGetCount()):
        assert N.nvmlDeviceGetUtilizationRates(handle(index)).gpu > 50
        assert N.nvmlDeviceGetComputeRunningProcesses(handle(index))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("training:seed=x", "seed wants a whole number from 0 to 4294967295, not 'x'"),
        ("training:seed=nan", "seed wants a whole number"),
        ("training:seed=inf", "seed wants a whole number"),
        ("training:seed=1.5", "seed wants a whole number"),
        ("training:seed=4294967296", "seed wants a whole number"),
        ("training:seed=" + "9" * 5000, "seed wants a whole number"),
        ("training:at=inf", "at wants a number of seconds from 0 to 86400, not 'inf'"),
        ("training:at=1e308", "at wants a number of seconds from 0 to 86400"),
        ("training:at=nan", "at wants a number of seconds"),
        ("training:at=-1", "at wants a number of seconds"),
        ("training:at=٣", "at wants a number of seconds"),
        ("training:start=inf", "start wants a number of seconds"),
        ("training:start=1e308", "start wants a number of seconds"),
        ("training:speed=inf", "speed wants simulated seconds per second from 0 to 3600"),
        ("training:speed=1e308", "speed wants simulated seconds per second"),
        ("training:speed=0", "speed must be greater than 0"),
        ("idle:lost=0@nan", "lost wants a number of seconds"),
        ("idle:lost=²@3", "lost's GPU wants a whole number from 0 to 15"),
        ("idle:nvml=missing@nan", "nvml wants a number of seconds"),
        ("idle:gpus=h100*999999999999", "the count after h100* wants a whole number from 1 to 16"),
        ("idle:gpus=h100*0", "the count after h100* wants a whole number from 1 to 16"),
        ("idle:procperm=maybe", "procperm wants yes or no"),
        ("idle:hostpid=4242", "hostpid wants GPU:PID"),
        ("idle:hostpid=0:x", "hostpid wants a whole number"),
        ("idle:gpus=h100,hostpid=1:4242", "hostpid names GPU 1, but only 1 are simulated"),
    ],
)
def test_bad_spec_values_are_refused_with_a_sentence(spec: str, message: str) -> None:
    from trayvml.core.errors import SimulationSpecError

    with pytest.raises(SimulationSpecError) as refused:
        parse_spec(spec)
    assert message in str(refused.value) and len(str(refused.value)) < 200


def test_spec_bounds_are_inclusive() -> None:
    from trayvml.nvml.sim.options import MAX_SEED, MAX_SIM_S, MAX_SPEED

    spec = parse_spec(f"idle:seed={MAX_SEED},at={MAX_SIM_S:.0f},start={MAX_SIM_S:.0f},speed={MAX_SPEED:.0f}")
    assert (spec.seed, spec.at_s, spec.start_s, spec.speed) == (MAX_SEED, MAX_SIM_S, MAX_SIM_S, MAX_SPEED)
    assert parse_spec("idle:gpus=h100*16").gpus == ("h100",) * 16
    assert parse_spec("idle:procperm=no").other_users_hidden is False


def test_every_field_the_read_specs_ask_for_is_answered_for_the_h100_profile(lib: SimulatedNvml) -> None:
    from trayvml.nvml.sim.field_models import FIELD_MODELS
    from trayvml.nvml.specs import FIELDS

    links = N.nvmlDeviceGetFieldValues(handle(0), [N.NVML_FI_DEV_NVLINK_LINK_COUNT])[0].value.uiVal
    ids = [(f.field_id, link) for f in FIELDS for link in range(links if "nvlink" in f.key else 1)]
    answers = N.nvmlDeviceGetFieldValues(handle(0), ids)
    retired = {N.NVML_FI_DEV_RETIRED_SBE, N.NVML_FI_DEV_RETIRED_DBE, N.NVML_FI_DEV_RETIRED_PENDING}
    for (fid, scope), answer in zip(ids, answers, strict=True):
        assert fid in FIELD_MODELS, fid  # modelled, if only to say NOT_SUPPORTED
        # Hopper remaps rows instead of retiring pages; every other field has a value.
        expected = N.NVML_ERROR_NOT_SUPPORTED if fid in retired else N.NVML_SUCCESS
        assert answer.nvmlReturn == expected, (fid, scope)


def test_field_values_come_from_the_model_of_their_own_id(lib: SimulatedNvml) -> None:
    """Asked in any order, each field answers its own value (no positional columns to get wrong)."""
    _advance_s(lib, 400)
    ids = [N.NVML_FI_DEV_MEMORY_TEMP, N.NVML_FI_DEV_NVLINK_LINK_COUNT, N.NVML_FI_DEV_ECC_SBE_AGG_TOTAL]
    forward = [
        v.value.uiVal if v.valueType == N.NVML_VALUE_TYPE_UNSIGNED_INT else v.value.ullVal
        for v in N.nvmlDeviceGetFieldValues(handle(0), ids)
    ]
    backward = [
        v.value.uiVal if v.valueType == N.NVML_VALUE_TYPE_UNSIGNED_INT else v.value.ullVal
        for v in N.nvmlDeviceGetFieldValues(handle(0), ids[::-1])
    ]
    assert forward == backward[::-1]
    temperature = N.nvmlDeviceGetTemperature(handle(0), N.NVML_TEMPERATURE_GPU)
    # HBM a little warmer than the die (the die's reading is rounded, the field's truncated).
    assert abs(forward[0] - memory_temperature_c(np.array(temperature))) <= 1 and forward[1] == 18 and forward[2] >= 12


def test_every_call_the_read_specs_name_is_answered() -> None:
    from trayvml.nvml.specs import CALLS, FIELDS, PROCESS_LISTS, STATIC, call_chain

    functions = {r.function for read in CALLS for r in call_chain(read)}
    functions |= {f.fallback.function for f in FIELDS if f.fallback is not None}
    functions |= {name for p in PROCESS_LISTS for name in (p.function, p.fallback)}
    functions |= {s.function for s in STATIC}
    for function in functions:
        assert hasattr(SimulatedNvml, "c_" + function), function


def test_one_field_can_be_made_to_fail_on_its_own(lib: SimulatedNvml) -> None:
    lib.fail_field(N.NVML_FI_DEV_MEMORY_TEMP, N.NVML_ERROR_NO_PERMISSION, gpu=0)
    ids = [N.NVML_FI_DEV_MEMORY_TEMP, N.NVML_FI_DEV_POWER_INSTANT]
    assert [v.nvmlReturn for v in N.nvmlDeviceGetFieldValues(handle(0), ids)] == [N.NVML_ERROR_NO_PERMISSION, 0]
    # GPU 1 (an RTX 4090, no memory temperature) answers as before.
    assert N.nvmlDeviceGetFieldValues(handle(1), ids)[0].nvmlReturn == N.NVML_ERROR_NOT_SUPPORTED


def test_a_process_list_too_small_for_the_processes_says_so_with_the_count_it_needs() -> None:
    import ctypes

    from trayvml.nvml import binding

    library = SimulatedNvml(parse_spec("training:gpus=h100,start=1800"), ManualClock())
    install(library)
    N.nvmlInit()
    running = len(N.nvmlDeviceGetComputeRunningProcesses(handle(0)))
    assert running >= 1
    function = library.nvmlDeviceGetComputeRunningProcesses_v3
    count = ctypes.c_uint(running - 1)
    array = (N.c_nvmlProcessInfo_v3_t * max(running - 1, 1))()
    # As nvml.h says: INSUFFICIENT_SIZE, and infoCount holds the size the call needs.
    assert function(handle(0), ctypes.byref(count), array) == N.NVML_ERROR_INSUFFICIENT_SIZE
    assert count.value == running
    count = ctypes.c_uint(running + 3)
    array = (N.c_nvmlProcessInfo_v3_t * (running + 3))()
    assert function(handle(0), ctypes.byref(count), array) == N.NVML_SUCCESS and count.value == running
    # trayvml's one-call read answers what pynvml's two calls answer.
    listed = binding.ProcessLister("nvmlDeviceGetComputeRunningProcesses_v3")(handle(0))
    assert [(p.pid, p.usedGpuMemory) for p in listed] == [
        (p.pid, p.usedGpuMemory) for p in N.nvmlDeviceGetComputeRunningProcesses(handle(0))
    ]


def test_the_energy_field_answers_the_energy_calls_counter_where_the_gpu_has_one() -> None:
    clock = ManualClock()
    install(SimulatedNvml(parse_spec("training:gpus=h100+rtx4090+laptop"), clock))
    N.nvmlInit()
    clock.advance_s(700)
    for index in range(3):
        (answer,) = N.nvmlDeviceGetFieldValues(handle(index), [N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION])
        try:
            counter_mj = N.nvmlDeviceGetTotalEnergyConsumption(handle(index))
        except N.NVMLError_NotSupported:
            assert index == 2  # the laptop has no power readings: the field is not supported either
            assert answer.nvmlReturn == N.NVML_ERROR_NOT_SUPPORTED
            continue
        assert answer.nvmlReturn == N.NVML_SUCCESS
        assert answer.valueType == N.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
        assert answer.value.ullVal == counter_mj > 0
