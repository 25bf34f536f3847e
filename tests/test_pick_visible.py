"""`pick` and the Python API within an existing CUDA_VISIBLE_DEVICES (a Slurm job's allocation, a
container's): they choose among the GPUs it names, read as CUDA reads it."""

from __future__ import annotations

import json
import os
import threading

import pytest

import trayvml
from trayvml.cli import main
from trayvml.core.errors import NotEnoughGpusError, TrayvmlError

IDLE4 = "--simulate=idle:gpus=h100*4"
MIXED = "--simulate=idle:gpus=h100+rtx4090+h100"


def _uuids(spec: str, capsys: pytest.CaptureFixture) -> dict[int, str]:
    assert main(["snapshot", "--json", spec]) == 0
    return {d["index"]: d["info"]["uuid"] for d in json.loads(capsys.readouterr().out)["gpus"]}


def _pick(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = main(["pick", *args])
    out, err = capsys.readouterr()
    return code, out.strip(), err


def test_pick_chooses_among_the_gpus_cuda_visible_devices_names(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    code, out, err = _pick(capsys, "--count", "2", IDLE4)
    assert code == 0 and sorted(out.split(",")) == ["1", "3"]
    assert "chosen among the GPUs CUDA_VISIBLE_DEVICES names (3, 1)." in err
    code, out, err = _pick(capsys, "--count", "3", IDLE4)  # the job holds two
    assert code == 1 and out == ""
    assert err.strip() == (
        "trayvml: 3 GPUs asked for, but only 2 of 2 qualify at most 50 % busy,"
        " among the GPUs CUDA_VISIBLE_DEVICES names (3, 1)."
    )
    # Unset: every GPU, and nothing said of it.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    code, out, err = _pick(capsys, "--count", "4", IDLE4)
    assert code == 0 and sorted(out.split(",")) == ["0", "1", "2", "3"] and "CUDA_VISIBLE_DEVICES" not in err


def test_the_first_entry_naming_no_gpu_ends_the_list_as_in_cuda(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    for value, seen in (("2,-1,0", ["2"]), ("1,7,0", ["1"]), ("0, 2", ["0", "2"]), ("3,²,0", ["3"])):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
        code, out, _ = _pick(capsys, "--count", str(len(seen)), IDLE4)
        assert code == 0 and sorted(out.split(",")) == seen, value
        assert _pick(capsys, "--count", str(len(seen) + 1), IDLE4)[0] == 1, value


def test_a_gpu_named_twice_leaves_cuda_none(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """As PyTorch models CUDA's reading (torch.cuda._parse_visible_devices): a repeated ordinal or
    UUID gives an empty set; it was taken once, and pick handed out GPUs CUDA would not show."""
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    uuids = _uuids(IDLE4, capsys)
    for value in ("2,2,0", f"1,{uuids[1]}", f"{uuids[3]},{uuids[3][:10]}"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
        code, out, err = _pick(capsys, IDLE4)
        assert code == 1 and out == "" and "lets CUDA see none" in err, value


def test_uuids_and_their_unique_starts_name_gpus(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    uuids = _uuids(IDLE4, capsys)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"{uuids[2]},{uuids[1][:12]}")
    code, out, _ = _pick(capsys, "--count", "2", "--uuid", IDLE4)
    assert code == 0 and sorted(out.split(",")) == sorted([uuids[1], uuids[2]])
    # "GPU-" alone starts every UUID: it names no one GPU, so CUDA sees none.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-")
    code, out, err = _pick(capsys, IDLE4)
    assert code == 1 and out == ""
    said = (
        "trayvml: CUDA_VISIBLE_DEVICES='GPU-' lets CUDA see none of this machine's GPUs: unset it to choose among all."
    )
    assert err.strip() == said


def test_an_empty_cuda_visible_devices_hides_every_gpu(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    code, out, err = _pick(capsys, IDLE4)
    assert code == 1 and out == "" and "CUDA_VISIBLE_DEVICES='' lets CUDA see none" in err
    with pytest.raises(NotEnoughGpusError):
        trayvml.pick_gpus(simulate=IDLE4.partition("=")[2])


def test_an_index_under_cudas_own_order_is_refused_on_a_machine_of_two_models(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """CUDA's default order puts the fastest GPU first: the RTX 4090 (NVML's 1) may be CUDA's 0."""
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    code, out, err = _pick(capsys, MIXED)
    assert code == 2 and out == ""
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in err and "Traceback" not in err
    # In PCI bus order CUDA's index is NVML's; and a UUID needs no order.
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    assert _pick(capsys, MIXED)[:2] == (0, "1")
    monkeypatch.delenv("CUDA_DEVICE_ORDER")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", _uuids(MIXED, capsys)[2])
    assert _pick(capsys, MIXED)[:2] == (0, "2")
    # One model throughout: the orders agree.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    assert _pick(capsys, IDLE4)[:2] == (0, "2")


def test_a_gpu_in_mig_mode_stands_for_its_mig_devices(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    spec = "--simulate=idle:gpus=h100-mig+rtx4090"
    assert main(["snapshot", "--json", spec]) == 0
    devices = json.loads(capsys.readouterr().out)["gpus"]
    mig_uuids = sorted(d["info"]["uuid"] for d in devices if d["mig"] is not None)
    assert len(mig_uuids) >= 2
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    picked = {_pick(capsys, "--max-util", "100", spec)[1]}  # by the freest, each time the same
    assert picked <= set(mig_uuids)  # never the RTX 4090
    # A CUDA process sees one MIG device only, however many it is given (NVIDIA's MIG user guide):
    # two for one process were one.
    code, out, err = _pick(capsys, "--count", "2", "--max-util", "100", spec)
    assert code == 1 and out == ""
    assert err.strip() == (
        "trayvml: 2 GPUs asked for, but a CUDA process sees only one MIG device (NVIDIA's MIG user guide):"
        " ask for one for each process (whole GPUs that qualify: 0),"
        " among the GPUs CUDA_VISIBLE_DEVICES names (2, 3, 4)."
    )
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # the RTX 4090 too: the whole GPU and no MIG device
    assert _pick(capsys, "--count", "2", "--max-util", "100", spec)[0] == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", mig_uuids[1])
    assert _pick(capsys, "--count", "2", "--max-util", "100", spec)[0] == 1
    assert _pick(capsys, "--max-util", "100", spec)[:2] == (0, mig_uuids[1])


def test_visible_gpus_narrows_an_existing_allocation_and_restores_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,2")
    with trayvml.visible_gpus(1, simulate="idle:gpus=h100*4") as chosen:
        assert chosen[0] in (1, 2) and os.environ["CUDA_VISIBLE_DEVICES"] == str(chosen[0])
        with trayvml.visible_gpus(1, simulate="idle:gpus=h100*4") as inner:  # nested, one thread: within it
            assert inner == chosen
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1,2"


def test_visible_gpus_in_two_threads_at_once_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variables are the process's: the second thread's block once restored over the first's,
    leaving them set after both ended."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    raised: list[BaseException] = []

    def other() -> None:
        try:
            with trayvml.visible_gpus(simulate="idle:gpus=h100*2"):
                pass
        except TrayvmlError as error:
            raised.append(error)

    with trayvml.visible_gpus(simulate="idle:gpus=h100*2") as chosen:
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(30)
        assert os.environ["CUDA_VISIBLE_DEVICES"] == str(chosen[0])
    assert len(raised) == 1 and "another thread" in str(raised[0])
    assert "CUDA_VISIBLE_DEVICES" not in os.environ and "CUDA_DEVICE_ORDER" not in os.environ
    thread = threading.Thread(target=other)  # the block ended: another thread may open one
    thread.start()
    thread.join(30)
    assert len(raised) == 1 and "CUDA_VISIBLE_DEVICES" not in os.environ
