"""MIG: each MIG instance of a MIG-enabled H100 is a device of its own; the parent keeps the board."""

from __future__ import annotations

import math

import pynvml as N
import pytest

from tests.helpers import run_ticks, simulated_source
from trayvml.commands.report import json_snapshot
from trayvml.core.demand import HISTORY
from trayvml.core.sample import MetricState
from trayvml.core.units import GIB, MIB
from trayvml.pick import choose

SPEC = "training:gpus=h100-mig+rtx4090,start=1800"


def test_the_simulated_library_answers_pynvmls_mig_calls() -> None:
    source, _, _ = simulated_source(SPEC)
    source.sample(HISTORY)
    parent, rtx = N.nvmlDeviceGetHandleByIndex(0), N.nvmlDeviceGetHandleByIndex(1)
    assert N.nvmlDeviceGetMigMode(parent) == [1, 1]
    assert N.nvmlDeviceGetMaxMigDeviceCount(parent) == 7
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetMigMode(rtx)
    handles = [N.nvmlDeviceGetMigDeviceHandleByIndex(parent, k) for k in range(3)]
    with pytest.raises(N.NVMLError_NotFound):
        N.nvmlDeviceGetMigDeviceHandleByIndex(parent, 3)
    assert [N.nvmlDeviceGetGpuInstanceId(h) for h in handles] == [2, 3, 4]
    assert N.nvmlDeviceIsMigDeviceHandle(handles[0]).value == 1 and N.nvmlDeviceIsMigDeviceHandle(parent).value == 0
    back = N.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(handles[1])
    assert N.nvmlDeviceGetUUID(back) == N.nvmlDeviceGetUUID(parent)
    assert N.nvmlDeviceGetUUID(handles[0]).startswith("MIG-")
    assert N.nvmlDeviceGetName(handles[2]) == "NVIDIA H100 80GB HBM3 MIG 2g.20gb"
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetTemperature(handles[0], N.NVML_TEMPERATURE_GPU)  # the board's: ask the parent
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetUtilizationRates(parent)  # no utilization in MIG mode, as on real GPUs


def test_each_mig_instance_is_a_device_with_its_memory_processes_and_activity() -> None:
    source, clock, _ = simulated_source(SPEC)
    sample = run_ticks(source, clock, 3)
    assert len(sample.gpus) == 5
    devices = sample.devices
    assert [d.mig_parent_index for d in devices] == [-1, -1, 0, 0, 0]
    assert [d.gpu_instance_id for d in devices[2:]] == [2, 3, 4]
    assert [round(d.memory_total_bytes / MIB) for d in devices[2:]] == [40448, 20096, 20096]
    assert len({d.uuid for d in devices}) == 5
    big, server, empty = sample.gpus[2:]
    assert [p.name for p in big.processes] == ["python"] and [p.name for p in server.processes] == ["tritonserver"]
    assert empty.processes == () and empty.value("memory_used_bytes") == 0
    assert server.value("memory_used_bytes") == 12 * GIB
    assert big.value("sm_activity_percent") > 50 and empty.value("sm_activity_percent") == 0
    # The parent keeps the whole-board metrics; the instances do not pretend to have them.
    parent = sample.gpus[0]
    assert parent.state("temperature_gpu_c") is MetricState.OK and parent.state("power_draw_w") is MetricState.OK
    assert big.state("temperature_gpu_c") is MetricState.NOT_SUPPORTED
    assert parent.state("utilization_gpu_percent") is MetricState.NOT_SUPPORTED
    assert parent.value("memory_used_bytes") == sum(g.value("memory_used_bytes") for g in sample.gpus[2:])


def test_pick_offers_mig_instances_not_their_parent_and_json_names_the_parent() -> None:
    source, clock, lib = simulated_source("training:gpus=h100-mig,start=1800")
    sample = run_ticks(source, clock, 2)
    assert choose(sample, 1, "memory") == [3]  # an empty 2g.20gb: more free than the 3g.40gb's 13 GiB
    assert sample.devices[3].uuid.startswith("MIG-")
    gpus = json_snapshot(sample)["gpus"]
    assert gpus[0]["mig"] is None and gpus[0]["info"]["mig_mode_current"] is True
    assert gpus[2]["mig"] == {"parent_index": 0, "gpu_instance_id": 3}
    assert len(lib.gpm_samples) == 8  # two per device: the board and each instance
    source.close()
    assert lib.gpm_samples == {}


def test_the_icon_shows_sm_activity_where_mig_leaves_no_utilization() -> None:
    from trayvml.ui.glance import content_for

    source, clock, _ = simulated_source("training:gpus=h100-mig,start=1800")
    content = content_for(run_ticks(source, clock, 2), "utilization")
    fractions = [bar.fraction for bar in content.bars]
    assert all(0 <= f <= 1 for f in fractions)  # no unknown bar (a cross) for the MIG devices
    assert fractions[3] == 0.0 and fractions[1] > 0.5  # the idle 2g.20gb, the 3g.40gb with the job


def test_pick_gives_cuda_the_mig_devices_uuid_not_trayvmls_row(capsys: pytest.CaptureFixture) -> None:
    from trayvml.cli import main

    # CUDA takes a MIG device only by its UUID: row 3 is no CUDA index on a MIG machine.
    assert main(["pick", "--simulate=training:gpus=h100-mig,start=1800"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("MIG-") and "," not in out


def test_the_python_api_sets_mig_uuids_in_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    import trayvml
    from trayvml.core.errors import NotEnoughGpusError

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    spec = "training:gpus=h100-mig+rtx4090,start=1800"
    (chosen,) = trayvml.pick_gpus(1, simulate=spec)
    assert isinstance(chosen, str) and chosen.startswith("MIG-")  # the freest: a MIG device, by UUID
    # Two for one process are whole GPUs (CUDA shows a process one MIG device): one is here.
    with pytest.raises(NotEnoughGpusError, match="sees only one MIG device"):
        trayvml.pick_gpus(2, simulate=spec)
    with trayvml.visible_gpus(1, simulate=spec) as picked:
        assert os.environ["CUDA_VISIBLE_DEVICES"] == str(picked[0])
        assert str(picked[0]).startswith(("MIG-", "GPU-"))
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_mig_devices_of_a_lost_parent_are_lost_too() -> None:
    # A GPU that falls off the bus takes its MIG devices with it: the driver answers GPU_IS_LOST
    # for their handles too, and the devices must not go on reporting memory.
    # Only memory is demanded: nothing read on the parent's handle tells the MIG devices.
    source, clock, _ = simulated_source("training:gpus=h100-mig+rtx4090,start=1800,lost=0@1801")
    memory = frozenset({"memory_used_bytes"})
    source.sample(memory)
    mig_handle = N.nvmlDeviceGetMigDeviceHandleByIndex(N.nvmlDeviceGetHandleByIndex(0), 0)
    for _ in range(3):
        clock.advance_s(1.0)
        sample = source.sample(memory)
    with pytest.raises(N.NVMLError_GpuIsLost):
        N.nvmlDeviceGetMemoryInfo(mig_handle)
    assert sample.gpus[0].lost
    assert [g.lost for g in sample.gpus[2:]] == [True, True, True]
    for g in sample.gpus[2:]:
        assert g.state("memory_used_bytes") is MetricState.LOST and g.processes == ()
    assert not sample.gpus[1].lost and sample.gpus[1].state("memory_used_bytes") is MetricState.OK


def test_the_reader_marks_mig_devices_lost_with_their_parent_without_asking_them() -> None:
    # Whatever a MIG handle still answers once its board is gone is no longer live: the reader
    # does not ask (each call into a lost GPU can take long) and marks them lost in the same tick.
    source, clock, lib = simulated_source("training:gpus=h100-mig+rtx4090,start=1800")
    memory = frozenset({"memory_used_bytes"})
    source.sample(memory)
    lib.fail("nvmlDeviceGetMemoryInfo_v2", N.NVML_ERROR_GPU_IS_LOST, gpu=0)  # the parent's handle only
    clock.advance_s(1.0)
    sample = source.sample(memory)
    asked = lib.calls["nvmlDeviceGetMemoryInfo_v2"]
    assert sample.gpus[0].lost and [g.lost for g in sample.gpus[2:]] == [True, True, True]
    assert all(g.state("memory_used_bytes") is MetricState.LOST for g in sample.gpus[2:])
    clock.advance_s(1.0)
    source.sample(memory)
    assert lib.calls["nvmlDeviceGetMemoryInfo_v2"] == asked + 1  # the RTX 4090 only


def test_the_simulator_creates_and_destroys_mig_instances_mid_run() -> None:
    # 3g.40gb (id 2) kept, one 2g.20gb (id 3) kept, the other (id 4) destroyed, a 1g.10gb made.
    source, clock, _ = simulated_source(f"{SPEC},mig=0@1805:3g.40gb+2g.20gb+1g.10gb")
    source.sample()
    parent = N.nvmlDeviceGetHandleByIndex(0)
    before = [N.nvmlDeviceGetMigDeviceHandleByIndex(parent, k) for k in range(3)]
    uuids = [N.nvmlDeviceGetUUID(h) for h in before]
    clock.advance_s(5.0)
    after = [N.nvmlDeviceGetMigDeviceHandleByIndex(parent, k) for k in range(3)]
    assert [N.nvmlDeviceGetGpuInstanceId(h) for h in after] == [2, 3, 5]
    assert N.nvmlDeviceGetName(after[2]) == "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
    assert [N.nvmlDeviceGetUUID(h) for h in after[:2]] == uuids[:2]  # kept instances keep their UUID
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceGetMemoryInfo(before[2])  # the destroyed instance's handle
    assert N.nvmlDeviceGetMigMode(parent) == [1, 1]


@pytest.mark.parametrize(
    ("option", "words"),
    [
        ("mig=1@30:3g.40gb", "has no MIG mode"),  # the RTX 4090
        ("mig=0@30:5g.50gb", "unknown MIG profile"),
        ("mig=0@30:7g.80gb+1g.10gb", "take 8 slices"),
        ("mig=0:3g.40gb", "GPU@SECONDS:PROFILE"),
        ("mig=3@30:", "only 2 are simulated"),
    ],
)
def test_a_bad_mig_change_is_refused_with_a_sentence(option: str, words: str) -> None:
    from trayvml.core.errors import SimulationSpecError
    from trayvml.nvml.sim.options import parse_spec

    with pytest.raises(SimulationSpecError, match=words):
        parse_spec(f"training:gpus=h100-mig+rtx4090,{option}")


def test_mig_devices_created_or_destroyed_while_running_appear_and_disappear() -> None:
    # At 1805 a 2g.20gb (id 4) destroyed and two 1g.10gb made, then at 1831 all but the 3g.40gb
    # destroyed: trayvml finds out within its rescan period (10 s) without a restart, and a kept
    # instance keeps its UUID (the history joins by it).
    changes = "mig=0@1805:3g.40gb+2g.20gb+1g.10gb+1g.10gb,mig=0@1831:3g.40gb"
    source, clock, lib = simulated_source(f"{SPEC},{changes}")
    first = source.sample()
    assert len(first.devices) == 5
    kept = first.devices[2].uuid
    sample = run_ticks(source, clock, 16)  # to 1815
    assert [d.gpu_instance_id for d in sample.devices[2:]] == [2, 3, 5, 6]
    assert [d.mig_parent_index for d in sample.devices] == [-1, -1, 0, 0, 0, 0]
    assert [d.index for d in sample.devices] == [g.index for g in sample.gpus] == list(range(6))
    assert sample.devices[2].uuid == kept and len({d.uuid for d in sample.devices}) == 6
    assert (
        sample.devices[5].name.endswith("MIG 1g.10gb") and sample.gpus[5].state("memory_used_bytes") is MetricState.OK
    )
    for _ in range(17):  # to 1832: destroyed at 1831, last looked for at 1830
        clock.advance_s(1.0)
        sample = source.sample()
    # Until the next look, a destroyed instance's values are missing, never its last ones.
    for gone in sample.gpus[3:]:
        assert gone.state("memory_used_bytes") is MetricState.NO_DATA and math.isnan(gone.value("memory_used_bytes"))
    clock.advance_s(8.0)  # to 1840
    sample = source.sample()
    assert [d.gpu_instance_id for d in sample.devices[2:]] == [2]
    assert sample.devices[2].uuid == kept and len(sample.gpus) == 3
    assert sample.gpus[2].state("memory_used_bytes") is MetricState.OK
    calls = lib.calls["nvmlDeviceGetMemoryInfo_v2"]
    run_ticks(source, clock, 2)
    assert lib.calls["nvmlDeviceGetMemoryInfo_v2"] - calls <= 2 * 3  # destroyed instances are not read


def test_a_gpu_in_mig_mode_without_instances_gets_its_first_one_while_running() -> None:
    source, clock, _ = simulated_source("training:gpus=h100+rtx4090,start=1800,mig=0@1805:3g.40gb")
    first = source.sample()
    assert first.devices[0].mig_mode_current is True and len(first.gpus) == 2
    assert first.gpus[0].value("memory_used_bytes") == 0  # nothing runs outside an instance
    sample = run_ticks(source, clock, 12)  # to 1811: looked for again at 1810
    assert [d.mig_parent_index for d in sample.devices] == [-1, -1, 0]
    assert sample.devices[2].gpu_instance_id == 1 and sample.devices[2].name.endswith("MIG 3g.40gb")
    assert [p.name for p in sample.gpus[2].processes] == ["python"]


def test_a_mig_instance_whose_gpm_stops_answering_adds_no_field_read() -> None:
    # A MIG instance's GPM does not stand for the PCIe byte counters (they are the board's): where it
    # answers NOT_SUPPORTED there is nothing to read instead, not a field call of no fields.
    source, clock, lib = simulated_source(SPEC)
    run_ticks(source, clock, 6)  # seconds 0-5

    def field_reads_a_tick() -> int:  # seconds 6 and 7: neither the 5 s nor the 10 s field batch is due
        before = lib.calls["nvmlDeviceGetFieldValues"]
        clock.advance_s(1)
        source.sample()
        return lib.calls["nvmlDeviceGetFieldValues"] - before

    working = field_reads_a_tick()
    lib.fail("nvmlGpmMigSampleGet", N.NVML_ERROR_NOT_SUPPORTED)
    assert field_reads_a_tick() == working
    assert source.sample().gpus[2].state("sm_activity_percent") is MetricState.NOT_SUPPORTED


def test_a_board_in_mig_mode_takes_its_pcie_throughput_from_gpm_and_its_instances_have_none() -> None:
    # Loading a model at 28.8 GB/s: the 32-bit byte counters wrap several times a second, so the
    # board's GPM answers the rate, as outside MIG mode (a MIG mode set while trayvml runs must not
    # leave the board on the counters). The PCIe link is the board's: no instance has a rate of its own.
    source, clock, lib = simulated_source("training:gpus=h100-mig,start=90")
    sample = run_ticks(source, clock, 3)
    board, *instances = sample.gpus
    timeline = lib.timelines[0]
    assert sample.devices[0].mig_mode_current
    assert board.value("pcie_rx_bytes_per_s") == pytest.approx(timeline.pcie_rx_kb_per_s[timeline.i] * 1000, rel=0.01)
    assert not board.lower_bounds and all(
        i.state("pcie_rx_bytes_per_s") is MetricState.NOT_SUPPORTED for i in instances
    )


def test_pick_hands_out_no_busy_mig_device_though_its_activity_needs_two_readings(
    capsys: pytest.CaptureFixture,
) -> None:
    """A MIG device's busyness is its SM activity, from GPM, which needs two readings: from one,
    every instance was "not known busy", and `pick --by utilization` handed out one at 75 %."""
    import trayvml
    from trayvml.cli import main
    from trayvml.pick import busy_percent

    source, clock, _ = simulated_source("training:gpus=h100-mig,at=1800")
    source.sample()
    clock.advance_s(0.5)
    sample = source.sample()
    busy = {
        d.uuid: busy_percent(g) for g, d in zip(sample.gpus, sample.devices, strict=True) if d.mig_parent_index >= 0
    }
    idle = min(busy, key=busy.__getitem__)
    assert max(busy.values()) > 50 and busy[idle] < 10
    assert main(["pick", "--simulate=training:gpus=h100-mig,at=1800", "--by", "utilization", "--max-util", "10"]) == 0
    assert capsys.readouterr().out.strip() == idle
    assert trayvml.pick_gpus(by="utilization", max_util=10, simulate="training:gpus=h100-mig,at=1800") == [idle]


def test_pick_refuses_a_uuid_not_known_rather_than_print_an_empty_one(capsys: pytest.CaptureFixture) -> None:
    """A laptop GPU asleep since the driver was opened has no UUID read: `pick --uuid` printed an
    empty line, and CUDA_VISIBLE_DEVICES=$(...) hid every GPU."""
    from trayvml.cli import main

    assert main(["pick", "--uuid", "--simulate", "idle:gpus=laptop,sleep=0@0"]) == 2
    err = capsys.readouterr().err
    assert "GPU 0's UUID is not known yet" in err and "Traceback" not in err
    assert main(["pick", "--simulate", "idle:gpus=laptop,sleep=0@0"]) == 0  # by index it can be named
    assert capsys.readouterr().out.strip() == "0"


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"count": 2.5}, "a whole number"),
        ({"count": 0}, "a whole number"),
        ({"max_util": -1}, "from 0 to 100 %"),
        ({"max_util": 150}, "from 0 to 100 %"),
        ({"min_free_mib": -5}, "0 MiB or more"),
    ],
)
def test_the_python_api_refuses_what_cannot_be_asked_in_a_sentence(options: dict, said: str) -> None:
    """pick_gpus(count=2.5) raised a bare TypeError, and max_util=-1 was taken ("more than -1 % busy")."""
    import trayvml
    from trayvml.core.errors import TrayvmlError

    with pytest.raises(TrayvmlError, match=said):
        trayvml.pick_gpus(simulate="idle:gpus=h100", **options)
