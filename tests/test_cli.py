"""The command line, including bad input: a sentence, an exit code, never a traceback."""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import default_sigint, end_process, run_bounded, without_root_powers
from trayvml.cli import main
from trayvml.core.errors import TrayvmlError

SIM = "--simulate=training:at=600"


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "trayvml", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_a_replay_is_said_in_balanced_words(capsys: pytest.CaptureFixture) -> None:
    recording = Path(__file__).parent / "recordings" / "h200-580-fp.jsonl"
    assert main(["snapshot", f"--simulate=replay={recording}"]) == 0
    out = capsys.readouterr().out
    banner = "SIMULATED: simulated GPUs (replayed NVML recording (h200-580-fp.jsonl)), not real hardware"
    assert banner in out.splitlines()


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


def test_snapshot_rates_are_measured_or_say_why_never_a_made_up_zero(capsys: pytest.CaptureFixture) -> None:
    assert main(["snapshot", "--json", SIM + ",gpus=h100"]) == 0  # training: PCIe and NVLink busy
    gpu = json.loads(capsys.readouterr().out)["gpus"][0]
    metrics, states = gpu["metrics"], gpu["states"]
    assert metrics["pcie_rx_bytes_per_s"] > metrics["pcie_tx_bytes_per_s"] > 0  # two readings, settled
    assert metrics["nvlink_tx_bytes_per_s"] > 0 and all(link["tx_bytes_per_s"] > 0 for link in gpu["nvlink_links"])
    # The replay counter, read every 10 s elsewhere, is read at both of the snapshot's readings:
    # its rate is measured (none in half a second: a healthy link rarely replays), not unknown.
    assert metrics["pcie_replays_per_s"] == 0 and "pcie_replays_per_s" not in states
    assert main(["snapshot", "--full", SIM + ",gpus=h100"]) == 0
    out = capsys.readouterr().out
    assert "PCIe TX                               0 B/s" not in out and "not measured yet" not in out


def test_full_snapshot_lists_every_catalog_metric(capsys: pytest.CaptureFixture) -> None:
    from trayvml.core.metrics import GPU_METRICS

    assert main(["snapshot", "--full", SIM + ",gpus=h100"]) == 0
    out = capsys.readouterr().out
    for metric in GPU_METRICS:
        assert metric.label in out


def test_log_writes_nvidia_smi_csv_and_appends_when_the_header_matches(tmp_path: Path) -> None:
    path = tmp_path / "gpu.csv"
    assert main(["log", "--csv", str(path), "--count", "2", "--interval", "0.5", SIM]) == 0
    assert main(["log", "--csv", str(path), "--count", "1", SIM]) == 0
    lines = path.read_text().splitlines()
    assert lines[0].startswith("timestamp, index, name, utilization.gpu [%], utilization.memory [%], memory.used [MiB]")
    assert len(lines) == 1 + 3 * 4
    rows = list(csv.reader(lines[1:], skipinitialspace=True))
    assert rows[0][1:3] == ["0", "NVIDIA H100 80GB HBM3"]
    assert rows[0][3].endswith(" %") and rows[0][5].endswith(" MiB")
    assert rows[0][9] == "[Not Supported]"  # fan.speed on an SXM board
    assert rows[3][8] == "[Not Supported]"  # power.draw on the laptop


def test_log_appends_rows_with_units_or_without_as_the_file_has_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """nvidia-smi's header names the units with nounits too, so the header check let a log with
    units take rows without ("73.96 W", then "73.96") in the same column."""
    query = ["--query", "index,utilization.gpu,power.draw"]
    with_units, without = tmp_path / "units.csv", tmp_path / "nounits.csv"
    assert main(["log", "--csv", str(with_units), "--count", "1", *query, SIM]) == 0
    assert main(["log", "--csv", str(without), "--count", "1", *query, "--nounits", SIM]) == 0
    kept = with_units.read_text(), without.read_text()
    capsys.readouterr()
    assert main(["log", "--csv", str(with_units), "--count", "1", *query, "--nounits", SIM]) == 2
    said = "already holds a log with units; choose another file or the same --format."
    assert capsys.readouterr().err == f"trayvml: {with_units} {said}\n"  # one sentence
    assert main(["log", "--csv", str(without), "--count", "1", *query, SIM]) == 2
    said = "already holds a log without units (nounits); choose another file or the same --format."
    assert capsys.readouterr().err == f"trayvml: {without} {said}\n"
    noheader = ["--format", "csv,noheader"]  # rows alone: the header's check is not made, this one is
    assert main(["log", "--csv", str(without), "--count", "1", *query, *noheader, SIM]) == 2
    assert capsys.readouterr().err == f"trayvml: {without} {said}\n"
    assert (with_units.read_text(), without.read_text()) == kept  # nothing written to either
    with with_units.open("a") as log:
        log.write("0, 93 %, 596.7")  # a row a crash cut short: judged by the first rows, not by it
    for path, units in ((with_units, []), (without, ["--nounits"])):  # alike: appended
        assert main(["log", "--csv", str(path), "--count", "1", *query, *units, SIM]) == 0
        power = [row.split(", ")[2] for row in path.read_text().splitlines()[1:] if row != "0, 93 %, 596.7"]
        assert len(power) == 2 * 4
        assert all(cell.endswith(" W") != bool(units) for cell in power if not cell.startswith("["))


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
        (["log", "--csv", "", "--count", "1"], "--csv wants a file name, or - for standard output."),
        (["snapshot", "--simulate=nonsense"], "unknown scenario 'nonsense'"),
        (["snapshot", "--simulate=training:gpus=a100"], "unknown GPU profile 'a100'"),
        (["snapshot", "--simulate=training:gpus=h100*8+rtx4090*9"], "at most 16 GPUs can be simulated, not 17"),
        (["snapshot", "--simulate=training:lost=9@1"], "only 4 are simulated"),
        (["pick", "--by", "mood"], "invalid choice"),
        (["log", "--csv", "x.csv", "--interval", "0"], "'0' is not between"),
        (["pick", "--count", "two"], "is not a whole number"),
        (["pick", "--min-free-mib", "-5"], "is not between 0 and 1000000000 MiB"),
        (["pick", "--min-free-mib", "nan"], "is not between 0 and 1000000000 MiB"),
        (["snapshot", "--simulate=training:seed=x"], "seed wants a whole number from 0 to 4294967295, not 'x'"),
        (["log", "--csv", "x.csv", "--query", " , "], "--query names no fields"),
        (["log", "--csv", "x.csv", "--query", "zzz"], "Run `trayvml log --list-fields` for the list."),
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
    # On standard error, as snapshot's banner: the GPUs picked are no real machine's.
    assert result.stderr == "trayvml: SIMULATED: simulated GPUs (idle), not real hardware\n"


def test_an_empty_simulation_variable_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    # `TRAYVML_SIMULATE= trayvml pick`, the usual way to unset it, simulated four GPUs without a word.
    from trayvml.nvml.sim import simulation_from

    monkeypatch.setenv("TRAYVML_SIMULATE", "")
    assert simulation_from(None) is None
    monkeypatch.setenv("TRAYVML_SIMULATE", "idle:gpus=h100")
    simulated = simulation_from(None)
    assert simulated is not None and len(simulated.gpus) == 1


def test_log_says_on_standard_error_that_its_rows_are_of_simulated_gpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    path = tmp_path / "gpus.csv"
    assert main(["log", "--count", "1", "--csv", str(path), "--simulate=training:gpus=h100"]) == 0
    err = capsys.readouterr().err
    assert (
        err == f"trayvml: SIMULATED: simulated GPUs (training), not real hardware\ntrayvml: 1 tick logged to {path}\n"
    )
    assert "SIMULATED" not in path.read_text()  # the rows stay nvidia-smi's CSV


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
    assert main(["pick", "--count", "4", "--by", by, "--max-util", "100", spec]) == 0  # busy GPUs too
    assert capsys.readouterr().out.strip() == ",".join(map(str, expected))


def test_pick_prints_uuids_on_request(capsys: pytest.CaptureFixture) -> None:
    assert main(["pick", "--count", "2", "--uuid", "--max-util", "100", SIM]) == 0
    assert all(u.startswith("GPU-") for u in capsys.readouterr().out.strip().split(","))


def test_pick_says_when_too_few_gpus_qualify() -> None:
    result = run_cli("pick", "--min-free-mib", "30000", "--count", "3", "--max-util", "100", SIM)
    assert result.returncode == 1
    assert "3 GPUs asked for, but only 2 of 4 qualify with at least 30000 MiB free." in result.stderr


def test_pick_skips_lost_gpus(capsys: pytest.CaptureFixture) -> None:
    assert main(["pick", "--count", "3", "--simulate=idle:gpus=h100*4,lost=0@0"]) == 0
    assert "0" not in capsys.readouterr().out.strip().split(",")


def test_pick_hands_out_a_sleeping_gpu_as_all_free(capsys: pytest.CaptureFixture) -> None:
    """A laptop's GPU asleep (runtime-suspended) holds no context: it is free, all of its memory,
    though its free memory is not read (that would wake it); it was said to be busy."""
    from tests.helpers import simulated_source
    from trayvml.pick import choose

    assert main(["pick", "--simulate=idle:gpus=laptop,sleep=0@0"]) == 0
    assert capsys.readouterr().out.strip() == "0"
    # Asleep since after its size was read: all of it free, whatever --min-free-mib asks.
    source, clock, _ = simulated_source("idle:gpus=laptop,sleep=0@5")
    source.sample()
    clock.advance_s(10)
    sample = source.sample()
    assert sample.gpus[0].asleep and sample.devices[0].memory_total_bytes > 4000 * 2**20
    assert choose(sample, min_free_mib=4000) == [0]
    # Beside a busy H100, by the share of memory free, the sleeping one first (all of it free);
    # by the memory free, the H100's tens of GiB before the laptop's 8.
    source, clock, _ = simulated_source("training:gpus=h100+laptop,sleep=1@5")
    source.sample()
    clock.advance_s(10)
    sample = source.sample()
    assert sample.gpus[1].asleep and not sample.gpus[0].asleep
    assert choose(sample, 2, "memory-ratio", max_util=100) == [1, 0]
    assert choose(sample, 2, "memory", max_util=100) == [0, 1]


def test_pick_gpus_says_a_driver_that_does_not_answer_is_why() -> None:
    """The Python API: a stuck driver is the reason given, not "0 of 0 qualify"."""
    import trayvml
    from trayvml.core.errors import NotEnoughGpusError

    with pytest.raises(TrayvmlError) as raised:
        trayvml.pick_gpus(simulate="idle:gpus=h100*2,hang=nvmlDeviceGetMemoryInfo_v2@0")
    assert not isinstance(raised.value, NotEnoughGpusError) and "answer" in str(raised.value)


def test_python_api_sets_and_restores_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    import trayvml

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    assert trayvml.pick_gpus(2, simulate="training:at=600", max_util=100) == [0, 1]
    with trayvml.visible_gpus(1, by="memory-ratio", simulate="training:at=600", max_util=100) as chosen:
        assert os.environ["CUDA_VISIBLE_DEVICES"] == str(chosen[0])
        assert os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert "CUDA_VISIBLE_DEVICES" not in os.environ and "CUDA_DEVICE_ORDER" not in os.environ


def test_ctrl_c_ends_an_open_ended_log_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "live.csv"
    proc = subprocess.Popen(
        [sys.executable, "-m", "trayvml", "log", "--csv", str(path), "--interval", "0.5", SIM],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + 30
        while (not path.exists() or path.read_text().count("\n") < 9) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        end_process(proc)
    assert proc.returncode == 0 and "Traceback" not in err and "ticks logged" in err
    assert path.read_text().endswith("\n")


def test_the_flag_the_unknown_field_message_names_exists(capsys: pytest.CaptureFixture) -> None:
    assert main(["log", "--csv", "unused.csv", "--query", "zzz", SIM]) == 2
    flag = capsys.readouterr().err.split("`trayvml log ")[1].split("`")[0]
    assert main(["log", flag]) == 0
    assert "utilization.gpu" in capsys.readouterr().out.splitlines()


def test_list_fields_marks_exactly_trayvml_s_own_fields(capsys: pytest.CaptureFixture) -> None:
    # A query copied to nvidia-smi fails on a name it does not know: --list-fields says which are
    # trayvml's own, after the name, so that the first word of each line is still the field's name.
    from trayvml.commands.csvlog import COLUMNS

    assert main(["log", "--list-fields"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(COLUMNS)
    marked = {line.split()[0] for line in lines if len(line.split()) > 1}
    assert marked == {name for name, column in COLUMNS.items() if column.smi.ours}
    assert {"energy.consumed", "pcie.throughput.tx", "memory.unified", "hostname"} <= marked
    assert not {"utilization.gpu", "memory.used", "power.draw.instant", "timestamp"} & marked
    assert all("trayvml's own" in line for line in lines if line.split()[0] in marked)


class _DiskFillingUp:
    """``os`` as csvlog sees it, but ``write`` takes at most ``chunk`` bytes a call and, once
    ``room`` bytes went out, fails as a full disk does."""

    def __init__(self, room: float, chunk: int = 1 << 20) -> None:
        self.room = room
        self.chunk = chunk

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    def write(self, fd: int, data: bytes) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        count = os.write(fd, bytes(data[: int(min(self.chunk, self.room))]))
        self.room -= count
        return count


def _without_banner(err: str, scenario: str = "training") -> str:
    """Standard error less the line a command on simulated GPUs begins it with (which must be there)."""
    banner = f"trayvml: SIMULATED: simulated GPUs ({scenario}), not real hardware\n"
    assert err.startswith(banner), err
    return err.removeprefix(banner)


def test_a_full_disk_ends_the_log_with_a_sentence_and_no_torn_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from trayvml.commands import csvlog

    path = tmp_path / "full.csv"
    assert main(["log", "--csv", str(path), "--count", "1", SIM]) == 0
    before = path.read_bytes()
    capsys.readouterr()
    monkeypatch.setattr(csvlog, "os", _DiskFillingUp(room=len(before) // 3))  # part of the next tick's rows
    assert main(["log", "--csv", str(path), "--count", "3", SIM]) == 2
    assert path.read_bytes() == before  # the partial tick was taken back: whole rows only
    err = _without_banner(capsys.readouterr().err)
    assert err.count("\n") == 1 and "No space left on device" in err and "Traceback" not in err


def test_short_writes_are_continued_so_rows_stay_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trayvml.commands import csvlog

    path = tmp_path / "short.csv"
    monkeypatch.setattr(csvlog, "os", _DiskFillingUp(room=math.inf, chunk=7))  # as a signal can cut a write
    assert main(["log", "--csv", str(path), "--count", "2", "--interval", "0.5", SIM]) == 0
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + 2 * 4 and all(line.count(", ") == lines[0].count(", ") for line in lines)


def test_log_to_dev_full_says_the_device_is_full() -> None:
    result = run_cli("log", "--csv", "/dev/full", "--count", "1", SIM, timeout=60)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "No space left on device" in result.stderr  # (its header)


def test_log_to_a_pipe_writes_without_reading_it() -> None:
    # run_cli's stdout is a pipe, as in `trayvml log --csv /dev/stdout | cat`.
    result = run_cli("log", "--csv", "/dev/stdout", "--count", "2", "--interval", "0.5", SIM, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("timestamp, index, name") and len(lines) == 1 + 2 * 4


def test_intervals_have_the_settings_bounds(capsys: pytest.CaptureFixture) -> None:
    from trayvml.cli import build_parser
    from trayvml.config import GENERAL_BY_KEY

    setting = GENERAL_BY_KEY["sampling_interval_s"]
    assert setting.minimum is not None and setting.maximum is not None
    parser = build_parser()
    for lowest_or_highest in (setting.minimum, setting.maximum):
        assert parser.parse_args(["--interval", str(lowest_or_highest)]).interval == lowest_or_highest
        assert parser.parse_args(["log", "--interval", str(lowest_or_highest)]).interval == lowest_or_highest
    for outside in (setting.minimum / 2, setting.maximum * 2, 1e-9, 1e9, math.inf):
        assert main(["--interval", str(outside), SIM]) == 2
        assert f"is not between {setting.minimum:g} and {setting.maximum:g} seconds" in capsys.readouterr().err
    # log goes below the setting's minimum, as nvidia-smi -lms 100 does, but not past its maximum.
    assert parser.parse_args(["log", "--interval", "0.1"]).interval == 0.1
    for outside in (0.05, setting.maximum * 2, 1e-9, 1e9, math.inf):
        assert main(["log", "--csv", "unused.csv", "--interval", str(outside), SIM]) == 2
        assert f"is not between 0.1 and {setting.maximum:g} seconds" in capsys.readouterr().err


def test_options_given_before_the_command_are_kept() -> None:
    from trayvml.cli import build_parser

    args = build_parser().parse_args(["--interval", "5", "--config", "a.toml", "--simulate=idle", "log"])
    assert args.interval == 5 and args.config == os.path.abspath("a.toml") and args.simulate == "idle"


def test_timeout_has_a_default_and_bounds() -> None:
    from trayvml.cli import DRIVER_TIMEOUT_S, build_parser

    parser = build_parser()
    for command in ("snapshot", "log", "pick"):
        assert parser.parse_args([command]).timeout == DRIVER_TIMEOUT_S
        assert parser.parse_args([command, "--timeout", "0.1"]).timeout == 0.1
        assert parser.parse_args([command, "--timeout", "3600"]).timeout == 3600


@pytest.mark.parametrize("before", [True, False])
def test_config_works_before_and_after_the_command(before: bool, tmp_path: Path, capsys) -> None:
    path = tmp_path / "config.toml"
    path.write_text("gpus = [\n")  # not TOML: the file cannot be used
    config = ["--config", str(path)]
    args = [*config, "snapshot", SIM] if before else ["snapshot", *config, SIM]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert f"The settings file {path} could not be used" in err and "Traceback" not in err
    assert path.exists()  # left as it is: snapshot never saves the settings (the tray app sets it aside)


def test_a_settings_file_too_big_to_be_one_is_not_read_for_its_language(tmp_path: Path) -> None:
    # The language is read from the settings before the arguments are parsed: that read took a
    # regular file whole, however big (here 8 GiB of a sparse file). The command runs as a process
    # of its own, its memory bounded, so that a reader that reads it all ends.
    path = tmp_path / "config.toml"
    with open(path, "wb") as file:
        file.truncate(8 << 30)
    done = run_bounded("--config", str(path), "snapshot", SIM)
    assert done.returncode == 0, done.stderr
    assert "is larger than 1 MiB" in done.stderr and "Traceback" not in done.stderr
    assert "SIMULATED" in done.stdout and path.stat().st_size == 8 << 30


def test_autostart_writes_an_absolute_config_path() -> None:
    from trayvml.cli import build_parser

    args = build_parser().parse_args(["autostart", "status", "--config", "relative.toml"])
    assert args.config == os.path.join(os.getcwd(), "relative.toml")  # the entry runs from another folder


def test_readme_lists_every_exit_code() -> None:
    from trayvml.cli import EXIT_NO_NVML, EXIT_NOT_ENOUGH, EXIT_USAGE
    from trayvml.ui.app import EXIT_NO_DISPLAY

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    listed = " ".join(readme.split("Exit codes:")[1].split("\n\n")[0].split())
    for code in (0, EXIT_NOT_ENOUGH, EXIT_USAGE, EXIT_NO_NVML, EXIT_NO_DISPLAY):
        assert f" {code} " in f" {listed}"


def test_readme_log_examples_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    examples = [line.split("#")[0] for line in readme.splitlines() if line.startswith("trayvml log --csv")]
    assert len(examples) >= 2
    monkeypatch.chdir(tmp_path)
    for example in examples:  # as a reader would try them, cut short
        assert main([*shlex.split(example)[1:], "--count", "1", "--interval", "0.5", SIM]) == 0, example


def test_a_simulated_driver_fault_does_not_advise_simulating() -> None:
    from trayvml.core.errors import NvmlUnavailable, UnavailableReason

    real = NvmlUnavailable(UnavailableReason.LIBRARY_NOT_FOUND)
    assert "--simulate" in real.sentence  # where there is no driver, simulation is worth knowing
    result = run_cli("snapshot", "--simulate=idle:nvml=missing@30")
    assert result.returncode == 3
    assert "simulated" in result.stderr and "trayvml --simulate shows" not in result.stderr


def test_bare_simulate_starts_with_the_training_job_running(capsys: pytest.CaptureFixture) -> None:
    assert main(["snapshot", "--json", "--simulate"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["simulated"]  # still labelled
    for gpu in data["gpus"]:
        assert gpu["metrics"]["utilization_gpu_percent"] > 50
        assert any(p["name"] == "python" for p in gpu["processes"])


# Every option of every command, with values no option should take. A value that happens to be
# valid for one option (a file named "nan") is left out for that option only.
_BAD_VALUES = ["nan", "inf", "-inf", "-1", "1e308", "99999999999999999999", "9" * 5000, "", "é", "٣"]
_SPEC_TEMPLATES = [
    "idle:seed={}",
    "idle:at={}",
    "idle:start={}",
    "idle:speed={}",
    "idle:gpus={}",
    "idle:gpus=h100*{}",
    "idle:lost=0@{}",
    "idle:lost={}@1",
    "idle:nvml=missing@{}",
    "idle:procperm={}",
    "idle:latency={}",
    "{}",
]
_OPTIONS = {
    "": ["--interval"],
    "snapshot": ["--timeout"],
    "log": ["--timeout", "--interval", "--count", "--query"],
    "pick": ["--timeout", "--count", "--by", "--min-free-mib"],
}


def _fuzz_cases() -> list:
    cases = []
    for number, value in enumerate(_BAD_VALUES):
        for command, options in _OPTIONS.items():
            base = [command] if command else []
            if command == "log":
                base += ["--csv", "fuzz.csv", "--count", "1"]  # a later --count wins: it is still fuzzed
            cases += [
                pytest.param([*base, f"{option}={value}", SIM], id=f"{command}{option}-{number}") for option in options
            ]
            cases += [
                pytest.param([*base, f"--simulate={template.format(value)}"], id=f"{command}:{template}-{number}")
                for template in _SPEC_TEMPLATES
                if value or template != "{}"  # an empty spec is the default simulation
            ]
        cases.append(pytest.param(["autostart", value], id=f"autostart-{number}"))
    # Any other value names a file that may not exist yet, which is fine for a settings file.
    cases += [pytest.param([*command, "--config=", SIM], id=f"{command}--config") for command in ([], ["snapshot"])]
    return cases


@pytest.mark.parametrize("argv", _fuzz_cases())
def test_bad_values_for_any_option_exit_2_with_one_line(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):  # an accepted value must not start the tray app
        monkeypatch.delenv(name, raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400 and "Traceback" not in err
    assert not (tmp_path / "fuzz.csv").exists()


@pytest.mark.parametrize(
    ("encoding", "language", "args"),
    [
        ("iso-8859-1", "en", ("snapshot", "--full", "--simulate")),
        ("ascii", "en", ("snapshot", "--full", "--simulate")),
        ("gb2312", "zh_CN", ("snapshot", "--full", "--simulate")),
        ("iso-8859-1", "zh_CN", ("--help",)),
    ],
)
def test_a_terminal_encoding_without_dashes_or_degrees_gets_ascii_not_a_traceback(
    encoding: str, language: str, args: tuple[str, ...]
) -> None:
    # PYTHONIOENCODING is what LANG=C or a legacy locale (ISO-8859-1, GB2312) gives Python.
    result = subprocess.run(
        [sys.executable, "-m", "trayvml", *args],
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONIOENCODING": encoding, "LANGUAGE": language, "LC_ALL": "C", "PYTHONUTF8": "0"},
    )
    out, err = result.stdout.decode(encoding), result.stderr.decode(encoding)  # each byte in its encoding
    assert "Traceback" not in err and "UnicodeEncodeError" not in err
    assert result.returncode == 0, err
    if args[0] == "--help":
        assert "--simulate" in out
    else:
        assert "SIMULATED" in out or "模拟" in out
        assert " C " in out or "°C" in out  # temperatures, with the degree sign or without it


@pytest.mark.parametrize("nesting", ["[" * 5000 + "]" * 5000, "{ a = " * 5000 + "1" + " }" * 5000])
def test_a_settings_file_nested_thousands_deep_is_said_not_a_crash(
    nesting: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """``snapshot`` reads nothing from the settings and never saves them: a broken file named with
    --config is said and left where it is (the tray moves it aside, to save its settings there)."""
    path = tmp_path / "config.toml"
    path.write_text(f"x = {nesting}\n", encoding="utf-8")
    assert main(["snapshot", "--config", str(path), SIM]) == 0
    err = capsys.readouterr().err
    assert "nested too deeply" in err and "it is left as it is" in err
    assert path.exists() and list(tmp_path.glob("config.toml.corrupt-*")) == []


def test_a_settings_file_named_but_not_there_is_said(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``record --config confg.toml``, a typo: recording with the defaults (no push destinations)
    without a word would pass for the settings meant."""
    typo = tmp_path / "confg.toml"
    store = tmp_path / "store"
    assert main(["record", "--count", "1", "--store", str(store), "--config", str(typo), SIM]) == 0
    assert f"The settings file {typo} does not exist; defaults are in use." in capsys.readouterr().err
    assert main(["pick", "--config", str(typo), "--max-util", "100", SIM]) == 0
    assert f"The settings file {typo} does not exist" in capsys.readouterr().err
    assert not typo.exists()


def test_record_does_not_start_where_the_settings_file_cannot_be_used(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The history's spans and size are the file's: with stand-in defaults a month was pruned to a
    week, and with no limits a recorder left running could fill the disk."""
    broken = tmp_path / "config.toml"
    broken.write_text("history_coarse_days = [30\n")
    store = tmp_path / "store"
    assert main(["record", "--count", "1", "--store", str(store), "--config", str(broken), SIM]) == 2
    err = capsys.readouterr().err
    assert "not valid TOML" in err and f"mend {broken} first." in err and "Traceback" not in err
    assert not store.exists() and broken.read_text() == "history_coarse_days = [30\n"


@pytest.mark.parametrize("command", ["snapshot", "pick"])
def test_simulate_alone_before_the_command_is_read_as_the_default_simulation(
    command: str, capsys: pytest.CaptureFixture
) -> None:
    more = ["--max-util", "100"] if command == "pick" else []  # the default simulation's GPUs are all busy
    assert main(["--simulate", command, *more]) == 0
    out = capsys.readouterr().out
    assert ("SIMULATED" in out) if command == "snapshot" else out.strip() == "0"


def test_help_names_every_simulated_scenario(capsys: pytest.CaptureFixture) -> None:
    from trayvml.nvml.sim.scenarios import SCENARIOS

    assert main(["--help"]) == 0
    words = " ".join(capsys.readouterr().out.split())  # as one line, whatever argparse wrapped
    for name in SCENARIOS:
        assert f" {name}," in words or f" {name} (" in words, name


def test_every_option_of_every_command_says_what_it_does() -> None:
    """`trayvml pick --help` listed --count, --by and --min-free-mib bare: the user had to guess."""
    import argparse

    from trayvml.cli import build_parser

    bare = []
    parsers = [("trayvml", build_parser())]
    while parsers:
        name, parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += list(action.choices.items())
            elif action.option_strings and not action.help:
                bare.append(f"{name} {action.option_strings[-1]}")
    assert bare == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGINT ignored through exec is POSIX")
def test_the_ctrl_c_test_ends_its_log_even_where_sigint_is_inherited_as_ignored(tmp_path: Path) -> None:
    # A test run started with nohup, or in the background by some shells, ignores SIGINT, and a
    # child inherits that: the Ctrl-C test must still pass, and leave no `trayvml log` running.
    marker = f"trayvml-sigint-{os.getpid()}"
    test = f"{Path(__file__)}::test_ctrl_c_ends_an_open_ended_log_cleanly"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / marker), test],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert run.returncode == 0, run.stdout[-2000:]
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout == ""


def test_the_readme_says_the_alerts_once_and_the_window_ranges_as_they_are() -> None:
    from trayvml.alerts.rules import RULE_BY_KEY

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert readme.count("trayvml watches every GPU against rules") == 1
    alerts = " ".join(readme.split("## Alerts and notifications")[1].split("\n\n")[1].split())
    off = alerts.split("Off by default:")[1]
    for key, words in (
        ("memory_used", "memory (used %"),
        ("power", "power as a share"),
        ("job_finished", "job finished"),
    ):
        assert not RULE_BY_KEY[key].defaults.enabled and words in off
    assert RULE_BY_KEY["temperature"].defaults.enabled and "temperature" in alerts.split("Off by default:")[0]
    assert "7 days" in " ".join(readme.split()) and "Ranges go from 1 minute to 12 hours;" not in readme


# ---- pick: a busy GPU is not free ----
BUSY_AND_IDLE = "--simulate=processes:at=1500,seed=3"  # GPUs 0 and 3 busy (100 %, 81 %), 1 and 2 near idle


def test_pick_does_not_hand_out_a_busy_gpu_by_default() -> None:
    result = run_cli("pick", "--count", "3", BUSY_AND_IDLE)
    assert result.returncode == 1 and result.stdout == ""
    assert "3 GPUs asked for, but only 2 of 4 qualify at most 50 % busy." in result.stderr
    assert "Traceback" not in result.stderr


def test_pick_says_in_one_sentence_when_no_gpu_is_free() -> None:
    result = run_cli("pick", "--simulate=training:gpus=h100*2,at=600")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == "trayvml: No GPU is free: all 2 are more than 50 % busy."


def test_pick_max_util_sets_the_threshold(capsys: pytest.CaptureFixture) -> None:
    assert main(["pick", "--count", "2", BUSY_AND_IDLE]) == 0
    assert set(capsys.readouterr().out.strip().split(",")) == {"1", "2"}
    assert main(["pick", "--count", "3", "--max-util", "90", BUSY_AND_IDLE]) == 0  # GPU 3 at 81 % now counts
    assert set(capsys.readouterr().out.strip().split(",")) == {"1", "2", "3"}
    assert main(["pick", "--count", "4", "--max-util", "100", BUSY_AND_IDLE]) == 0  # 100: busy or not
    assert sorted(capsys.readouterr().out.strip().split(",")) == ["0", "1", "2", "3"]
    assert main(["pick", "--max-util", "101", BUSY_AND_IDLE]) == 2
    assert "is not between 0 and 100 %" in capsys.readouterr().err


def test_python_api_takes_max_util() -> None:
    import trayvml
    from trayvml.core.errors import NotEnoughGpusError

    assert sorted(map(int, trayvml.pick_gpus(2, simulate="processes:at=1500,seed=3"))) == [1, 2]
    assert len(trayvml.pick_gpus(4, max_util=100, simulate="processes:at=1500,seed=3")) == 4
    with pytest.raises(NotEnoughGpusError, match="No GPU is free"):
        trayvml.pick_gpus(1, max_util=50, simulate="training:gpus=h100*2,at=600")


# ---- log as a drop-in for nvidia-smi --query-gpu ----
def test_log_without_csv_writes_csv_to_standard_output() -> None:
    result = run_cli("log", "--count", "1", SIM)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("timestamp, index, name, utilization.gpu [%]") and len(lines) == 1 + 4
    assert "standard output" in result.stderr and "Traceback" not in result.stderr


def test_log_takes_nvidia_smis_format_words_in_any_order(tmp_path: Path) -> None:
    path = tmp_path / "f.csv"
    query = "index,temperature.gpu,power.draw"
    for words in ("csv,noheader,nounits", "nounits,csv,noheader", "noheader,nounits,csv"):
        path.unlink(missing_ok=True)
        assert main(["log", "--csv", str(path), "--count", "1", "--query", query, f"--format={words}", SIM]) == 0
        first = path.read_text().splitlines()[0]
        index, temperature, power = first.split(", ")  # a row: no header, no units
        assert index == "0" and 20 < int(temperature) < 100 and float(power) > 50
    path.unlink()
    assert main(["log", "--csv", str(path), "--count", "1", "--query", query, "--format", "csv,nounits", SIM]) == 0
    assert path.read_text().splitlines()[0] == "index, temperature.gpu, power.draw [W]"
    path.unlink()
    assert main(["log", "--csv", str(path), "--count", "1", "--query", query, "--format=csv", SIM]) == 0
    assert path.read_text().splitlines()[1].split(", ")[2].endswith(" W")


@pytest.mark.parametrize(("words", "message"), [("csv,bogus", "'bogus'"), ("noheader", "csv")])
def test_log_refuses_format_words_nvidia_smi_does_not_know(words: str, message: str, tmp_path: Path) -> None:
    result = run_cli("log", "--csv", str(tmp_path / "x.csv"), "--count", "1", f"--format={words}", SIM)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.csv").exists()


def test_log_takes_nvidia_smis_field_aliases(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    aliases = "gpu_name,gpu_uuid,gpu_bus_id,clocks.sm,clocks.gr,clocks.mem,clocks_throttle_reasons.active"
    canonical = "name,uuid,pci.bus_id,clocks.current.sm,clocks.current.graphics,clocks.current.memory"
    assert main(["log", "--csv", str(path), "--count", "1", "--query", aliases, SIM]) == 0
    other = tmp_path / "c.csv"
    assert main(["log", "--csv", str(other), "--count", "1", "--query", canonical, SIM]) == 0
    header, row, *_ = path.read_text().splitlines()
    assert header.startswith(other.read_text().splitlines()[0])  # named as nvidia-smi's header names them
    assert header.endswith(", clocks_event_reasons.active")
    assert row.split(", ")[1].startswith("GPU-") and row.split(", ")[3].endswith(" MHz")


def test_log_samples_faster_than_half_a_second_down_to_a_tenth(tmp_path: Path, capsys) -> None:
    path = tmp_path / "fast.csv"
    assert main(["log", "--csv", str(path), "--count", "3", "--interval", "0.1", SIM]) == 0
    stamps = [line.split(", ")[0] for line in path.read_text().splitlines()[1::4]]
    assert len(stamps) == 3 and len(set(stamps)) == 3  # a row per tick, each tick its own time
    assert main(["log", "--csv", str(path), "--count", "1", "--interval", "0.05", SIM]) == 2
    assert "'0.05' is not between 0.1 and 60 seconds" in capsys.readouterr().err


# ---- driver notes: for -v and doctor, not every command ----
# An old driver: nvmlDeviceGetTemperatureV is absent, as before driver 555 (the probe falls back).
_OLD_DRIVER = """
import sys
import trayvml.nvml.binding as binding
has = binding.has_function
binding.has_function = lambda name: name != "nvmlDeviceGetTemperatureV" and has(name)
from trayvml.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("verbose", [False, True])
def test_a_missing_driver_function_is_said_only_with_v(verbose: bool) -> None:
    args = [*(["-v"] if verbose else []), "snapshot", SIM]
    result = subprocess.run(
        [sys.executable, "-c", _OLD_DRIVER, *args], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert result.returncode == 0, result.stderr
    said = result.stderr + result.stdout
    if verbose:
        assert "This NVIDIA driver lacks nvmlDeviceGetTemperatureV" in result.stderr
    else:
        assert "lacks" not in said and result.stderr == ""
        assert "NVIDIA H100" in result.stdout  # the snapshot itself is there


ONE_H100 = "--simulate=idle:gpus=h100"


@pytest.mark.parametrize(
    ("command", "read_first"),
    [
        (["log", "--interval", "0.2", "--csv", "-", ONE_H100], True),
        (["snapshot", "--json", "--simulate=idle:gpus=h100*16"], True),  # more than a pipe holds
        (["snapshot", ONE_H100], False),
        (["pick", "--max-util=100", ONE_H100], False),
        (["snapshot", "--json", ONE_H100], False),
    ],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(command: list[str], read_first: bool) -> None:
    """``trayvml log | head -2``, ``snapshot --json | head -1``, and a reader gone before anything
    was written (``| true``: a short answer sits in Python's buffer until the exit, whose flush
    failed with "Exception ignored … BrokenPipeError", exit 120): exit 0, no traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "trayvml", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Buffered, as a user's Python writes: what is left is written at exit (unbuffered, as a
        # test environment may set, every print fails at once, inside the command).
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
    )
    try:
        assert process.stdout is not None
        if read_first:
            assert process.stdout.readline()
        process.stdout.close()
        _, err = process.communicate(timeout=60)
    finally:
        end_process(process)
    assert process.returncode == 0, err.decode()
    for said in ("Traceback", "Cannot write", "Exception ignored"):
        assert said not in err.decode()


class _FullDisk(io.RawIOBase):
    """A file on a disk with no room left: every write fails as the kernel's does (ENOSPC)."""

    def writable(self) -> bool:
        return True

    def write(self, _data: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize(
    "command",
    [["snapshot"], ["snapshot", "--json"], ["pick", "--max-util", "100"], ["doctor"]],
)
def test_standard_output_on_a_full_disk_is_one_sentence_and_exit_2(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``snapshot > file`` on a full disk ended with a traceback and exit 1, which is pick's "not
    enough GPUs" (a script would take it for that); ``history`` said so in a sentence already."""
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BufferedWriter(_FullDisk()), encoding="utf-8"))
    assert main([*command, ONE_H100]) == 2
    err = capsys.readouterr().err
    if command[0] == "pick":  # said before its answer (see test_simulation_can_come_from_the_environment)
        err = _without_banner(err, "idle")
    assert err == "trayvml: Cannot write standard output: No space left on device.\n"


def test_settings_given_through_a_pipe_are_read_once_and_used(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``record --config <(printf 'sampling_interval_s = 5.0')``: the language was looked up in the
    pipe first, which the settings then found empty: recorded every 1 s, without a word."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"sampling_interval_s = 5.0\n")
    os.close(write_end)
    link = tmp_path / "settings"  # as a shell's /dev/fd/63: a name for this process' descriptor
    link.symlink_to(f"/proc/self/fd/{read_end}")
    try:
        argv = ["record", "--count", "1", "--store", str(tmp_path / "store"), "--config", str(link), SIM]
        assert main(argv) == 0  # which looks the language up first
    finally:
        os.close(read_end)
    assert "every 5 s" in capsys.readouterr().err


def test_log_without_a_header_to_a_file_it_may_write_but_not_read_is_one_sentence(tmp_path: Path) -> None:
    """``log --format csv,noheader`` looks at an existing file's last byte (a row cut short by a
    crash gets its newline): a write-only file is said in a sentence, not a traceback."""
    out = tmp_path / "wo.csv"
    out.write_text("1, 2")
    out.chmod(0o200)
    command = [*without_root_powers(), sys.executable, "-m", "trayvml", "log", "--count", "1"]
    result = subprocess.run(
        [*command, "--format", "csv,noheader", "--csv", str(out), SIM], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"Cannot read {out}: Permission denied." in result.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["history", "--csv", ""],
        ["doctor", "--bundle", ""],
        ["doctor", "--record", ""],  # ran the checks instead, as if no recording was asked for
        ["log", "--csv", "", "--count", "1"],
        ["record", "--store", "", "--count", "1"],  # recorded into the working folder
    ],
)
def test_an_option_given_an_empty_name_is_said(
    argv: list[str], capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--csv "$OUT"`` with OUT unset: one sentence naming the option, exit 2, nothing run."""
    monkeypatch.chdir(tmp_path)
    assert main([*argv, SIM]) == 2
    err = capsys.readouterr().err.strip()
    option = next(a for a in argv if a.startswith("--"))
    assert err in (
        f"trayvml: {option} was given an empty name.",
        "trayvml: --csv wants a file name, or - for standard output.",
        f"trayvml {argv[0]}: argument {option}: wants the path of a folder (see trayvml {argv[0]} --help)",
    )
    assert list(tmp_path.iterdir()) == []


def test_store_naming_a_file_says_which_folder_was_meant(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``--store …/history.sqlite3``: the store's own file, its folder meant ("no history yet"
    said before); another file: not a folder (record said "File exists")."""
    assert main(["record", "--count", "2", "--store", str(tmp_path / "store"), SIM]) == 0
    capsys.readouterr()
    assert main(["history", "--store", str(tmp_path / "store" / "history.sqlite3")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"trayvml: --store wants the folder that holds history.sqlite3: {tmp_path / 'store'}"
    )
    other = tmp_path / "notes.txt"
    other.write_text("mine\n")
    assert main(["record", "--count", "1", "--store", str(other), SIM]) == 2
    assert capsys.readouterr().err.strip() == f"trayvml: --store wants a folder; {other} is a file."
    assert other.read_text() == "mine\n"


def _with_stdout_closed(*args: str) -> subprocess.CompletedProcess:
    """trayvml started as ``trayvml ARGS >&-``: no descriptor 1 at all."""
    command = [sys.executable, "-m", "trayvml", *args]
    return subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *command],
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("args", [("snapshot", SIM), ("snapshot", SIM, "--json"), ("pick", SIM)])
def test_a_command_with_standard_output_closed_says_so(args: tuple[str, ...]) -> None:
    """`trayvml snapshot >&-` ended with a traceback, and `--json` printed nothing and exited 0."""
    result = _with_stdout_closed(*args)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"trayvml: standard output is closed: trayvml {args[0]} has nowhere to write."


def test_a_log_to_a_file_needs_no_standard_output(tmp_path: Path) -> None:
    result = _with_stdout_closed("log", SIM, "--count", "1", "--csv", str(tmp_path / "gpus.csv"))
    assert result.returncode == 0 and "Traceback" not in result.stderr
    rows = (tmp_path / "gpus.csv").read_text().splitlines()
    assert rows[0].startswith("timestamp") and len(rows) == 5
