"""The command line, including bad input: a sentence, an exit code, never a traceback."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trayvml.cli import main

SIM = "--simulate=training:at=600"


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "trayvml", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_snapshot_table_shows_every_gpu_and_says_it_is_simulated(capsys: pytest.CaptureFixture) -> None:
    assert main(["snapshot", SIM]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED" in out
    assert out.count("NVIDIA H100 80GB HBM3") == 2 and "RTX 4090" in out and "Laptop GPU" in out
    assert "python/4200001" in out and "host: CPU" in out


def test_snapshot_json_has_units_in_keys_and_nulls_for_gaps(capsys: pytest.CaptureFixture) -> None:
    assert main(["snapshot", "--json", SIM]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["simulated"] == "simulated GPUs (training)"
    h100, laptop = data["gpus"][0], data["gpus"][3]
    assert 0 <= h100["metrics"]["utilization_gpu_percent"] <= 100
    assert h100["info"]["memory_total_bytes"] == 81559 * 2**20
    assert h100["metrics"]["fan_speed_percent"] is None and h100["states"]["fan_speed_percent"] == "not supported"
    assert laptop["metrics"]["power_draw_w"] is None
    assert len(h100["nvlink_links"]) == 18
    assert h100["processes"][0]["container"] == "3f2a9c1b7e4d"
    assert data["host"]["ram_total_bytes"] > 0


def test_full_snapshot_lists_every_catalog_metric(capsys: pytest.CaptureFixture) -> None:
    from trayvml.core.metrics import GPU_METRICS

    assert main(["snapshot", "--full", SIM + ",gpus=h100"]) == 0
    out = capsys.readouterr().out
    for metric in GPU_METRICS:
        assert metric.label in out


def test_log_writes_nvidia_smi_csv_and_appends_when_the_header_matches(tmp_path: Path) -> None:
    path = tmp_path / "gpu.csv"
    assert main(["log", "--csv", str(path), "--count", "2", "--interval", "0.05", SIM]) == 0
    assert main(["log", "--csv", str(path), "--count", "1", "--interval", "0.05", SIM]) == 0
    lines = path.read_text().splitlines()
    assert lines[0].startswith("timestamp, index, name, utilization.gpu [%], utilization.memory [%], memory.used [MiB]")
    assert len(lines) == 1 + 3 * 4
    rows = list(csv.reader(lines[1:], skipinitialspace=True))
    assert rows[0][1:3] == ["0", "NVIDIA H100 80GB HBM3"]
    assert rows[0][3].endswith(" %") and rows[0][5].endswith(" MiB")
    assert rows[0][9] == "[Not Supported]"  # fan.speed on an SXM board
    assert rows[3][8] == "[Not Supported]"  # power.draw on the laptop


def test_log_query_and_nounits(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    query = "index,temperature.gpu,power.draw,pstate,clocks_event_reasons.active,ecc.mode.current"
    assert main(["log", "--csv", str(path), "--count", "1", "--query", query, "--nounits", SIM]) == 0
    header, first, *_ = path.read_text().splitlines()
    assert header == ("index, temperature.gpu, power.draw [W], pstate, clocks_event_reasons.active, ecc.mode.current")
    index, temperature, power, pstate, reasons, ecc = first.split(", ")
    assert index == "0" and 20 < int(temperature) < 100 and float(power) > 50
    assert pstate == "P0" and reasons.startswith("0x") and len(reasons) == 18 and ecc == "Enabled"


def test_log_refuses_a_file_with_other_columns_and_leaves_it_alone(tmp_path: Path, capsys) -> None:
    path = tmp_path / "other.csv"
    path.write_text("a, b\n1, 2\n")
    assert main(["log", "--csv", str(path), "--count", "1", SIM]) == 2
    assert path.read_text() == "a, b\n1, 2\n"
    assert "other columns" in capsys.readouterr().err


def test_log_after_a_cut_short_row_starts_on_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.csv"
    assert main(["log", "--csv", str(path), "--count", "1", "--query", "index,name", SIM]) == 0
    with path.open("a") as log:
        log.write("0, NVIDIA H1")  # as if killed mid-write
    assert main(["log", "--csv", str(path), "--count", "1", "--query", "index,name", SIM]) == 0
    lines = path.read_text().splitlines()
    assert "0, NVIDIA H1" in lines and lines[-4:] == [
        "0, NVIDIA H100 80GB HBM3",
        "1, NVIDIA H100 80GB HBM3",
        "2, NVIDIA GeForce RTX 4090",
        "3, NVIDIA GeForce RTX 4070 Laptop GPU",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["log", "--csv", "x.csv", "--query", "temprature.gpu"], "Did you mean temperature.gpu"),
        (
            ["log", "--csv", "/nonexistent-dir/log.csv", "--count", "1"],
            "Cannot write /nonexistent-dir/log.csv",
        ),
        (["log", "--count", "1"], "log needs --csv FILE"),
        (["snapshot", "--simulate=nonsense"], "unknown scenario 'nonsense'"),
        (["snapshot", "--simulate=training:gpus=a100"], "unknown GPU profile 'a100'"),
        (["snapshot", "--simulate=training:gpus=h100*17"], "at most 16 GPUs"),
        (["snapshot", "--simulate=training:lost=9@1"], "only 4 are simulated"),
        (["pick", "--by", "mood"], "invalid choice"),
        (["log", "--csv", "x.csv", "--interval", "0"], "must be greater than 0"),
        (["pick", "--count", "two"], "is not a whole number"),
        (["pick", "--min-free-mib", "-5"], "is not a number of MiB (0 or more)"),
        (["pick", "--min-free-mib", "nan"], "is not a number of MiB (0 or more)"),
    ],
)
def test_bad_input_exits_2_with_a_sentence(args: list[str], message: str, tmp_path: Path) -> None:
    args = [a.replace("x.csv", str(tmp_path / "x.csv")) for a in args]
    if not any(a.startswith("--simulate") for a in args):
        args.append(SIM)
    result = run_cli(*args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("fault", ["missing", "not-loaded", "mismatch", "no-permission"])
def test_no_nvml_exits_3_with_a_sentence(fault: str) -> None:
    result = run_cli("snapshot", f"--simulate=idle:nvml={fault}")
    assert result.returncode == 3
    assert result.stderr.startswith("trayvml: ") and result.stderr.rstrip().endswith(".")
    assert "Traceback" not in result.stderr


def test_simulation_can_come_from_the_environment() -> None:
    result = run_cli("pick", env={"TRAYVML_SIMULATE": "idle:gpus=rtx4090*3"})
    assert result.returncode == 0 and result.stdout.strip() in {"0", "1", "2"}


@pytest.mark.parametrize(
    ("by", "score"),
    [
        ("memory", lambda m: -m["memory_free_bytes"]),
        (
            "memory-ratio",
            lambda m: (
                -m["memory_free_bytes"]
                / (m["memory_free_bytes"] + m["memory_used_bytes"] + (m["memory_reserved_bytes"] or 0))
            ),
        ),
        ("utilization", lambda m: m["utilization_gpu_percent"]),
        ("power", lambda m: m["power_used_percent"] if m["power_used_percent"] is not None else float("inf")),
    ],
)
def test_pick_orders_by_the_chosen_criterion(by: str, score, capsys: pytest.CaptureFixture) -> None:
    spec = "--simulate=processes:at=1500,seed=3"  # GPUs differ in load and memory here
    assert main(["snapshot", "--json", spec]) == 0
    gpus = json.loads(capsys.readouterr().out)["gpus"]
    expected = [g["index"] for g in sorted(gpus, key=lambda g: (score(g["metrics"]), g["index"]))]
    assert main(["pick", "--count", "4", "--by", by, spec]) == 0
    assert capsys.readouterr().out.strip() == ",".join(map(str, expected))


def test_pick_prints_uuids_on_request(capsys: pytest.CaptureFixture) -> None:
    assert main(["pick", "--count", "2", "--uuid", SIM]) == 0
    assert all(u.startswith("GPU-") for u in capsys.readouterr().out.strip().split(","))


def test_pick_says_when_too_few_gpus_qualify() -> None:
    result = run_cli("pick", "--min-free-mib", "30000", "--count", "3", SIM)
    assert result.returncode == 1
    assert "3 GPUs asked for, but only 2 of 4 qualify with at least 30000 MiB free." in result.stderr


def test_pick_skips_lost_gpus(capsys: pytest.CaptureFixture) -> None:
    assert main(["pick", "--count", "3", "--simulate=idle:gpus=h100*4,lost=0@0"]) == 0
    assert "0" not in capsys.readouterr().out.strip().split(",")


def test_python_api_sets_and_restores_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    import trayvml

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    assert trayvml.pick_gpus(2, simulate="training:at=600") == [0, 1]
    with trayvml.visible_gpus(1, by="memory-ratio", simulate="training:at=600") as chosen:
        assert os.environ["CUDA_VISIBLE_DEVICES"] == str(chosen[0])
        assert os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "7" and "CUDA_DEVICE_ORDER" not in os.environ


def test_ctrl_c_ends_an_open_ended_log_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "live.csv"
    proc = subprocess.Popen(
        [sys.executable, "-m", "trayvml", "log", "--csv", str(path), "--interval", "0.1", SIM],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while (not path.exists() or path.read_text().count("\n") < 9) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err and "ticks logged" in err
    assert path.read_text().endswith("\n")
