"""Units and formatting: one definition of byte sizes, one formatter of static facts for every sink."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pytest

from trayvml.core.formatting import format_static
from trayvml.core.metrics import GPU_METRICS
from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, Sample
from trayvml.core.static_fields import STATIC_FIELDS
from trayvml.core.units import GIB, IN_GIB, KIB, MIB, format_clock, format_duration

FIELD = {f.key: f for f in STATIC_FIELDS}
H100 = DeviceInfo(
    0,
    "NVIDIA H100 80GB HBM3",
    "GPU-0",
    ecc_mode_current=True,
    memory_total_bytes=81559.0 * MIB,
    power_limit_default_w=700.0,
)


@pytest.mark.parametrize(
    ("key", "people", "smi", "smi_bare"),
    [
        ("memory_total_bytes", "79.6 GiB", "81559 MiB", "81559"),
        ("power_limit_default_w", "700 W", "700.00 W", "700.00"),
        ("ecc_mode_current", "enabled", "Enabled", "Enabled"),
        ("mig_mode_current", "", "", ""),  # None: the GPU does not tell
        ("power_limit_min_w", "", "", ""),  # NaN
        ("serial", "", "", ""),
        ("name", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
        ("index", "0", "0", "0"),
    ],
)
def test_static_facts_for_people_and_as_nvidia_smi_writes_them(key: str, people: str, smi: str, smi_bare: str) -> None:
    value = getattr(H100, key)
    assert format_static(FIELD[key], value) == people
    assert format_static(FIELD[key], value, smi=True) == smi
    assert format_static(FIELD[key], value, smi=True, units=False) == smi_bare


def test_the_snapshot_and_the_csv_log_format_static_facts_alike() -> None:
    from trayvml.commands.csvlog import parse_fields, rows
    from trayvml.commands.report import text_snapshot

    gpu = GpuSample(0, (math.nan,) * len(GPU_METRICS), (MetricState.NOT_SUPPORTED,) * len(GPU_METRICS))
    sample = Sample(0.0, (gpu,), (H100,), None, None)
    text = text_snapshot(sample, full=True)
    assert "79.6 GiB" in text and "enabled" in text and "Serial number" not in text  # not told: left out
    (row,) = rows(sample, parse_fields("memory.total,ecc.mode.current,serial"))
    assert row == "81559 MiB, Enabled, [N/A]"


def test_byte_sizes() -> None:
    assert (KIB, MIB, GIB) == (1024, 1024**2, 1024**3)
    assert IN_GIB.of(3 * GIB) == 3.0 and IN_GIB.format(0.8) == "0.8 GiB"


NAN = math.nan


@pytest.mark.parametrize(
    ("seconds", "to_the_second", "to_the_minute", "to_the_hour"),
    [
        (0, "0 s", "0 s", "0 s"),
        (0.4, "0 s", "0 s", "0 s"),
        (12, "12 s", "12 s", "12 s"),
        (59.4, "59 s", "59 s", "59 s"),
        (59.6, "1 min 00 s", "1 min", "1 min"),  # whole seconds rounded: not "60 s"
        (89, "1 min 29 s", "1 min", "1 min"),
        (245, "4 min 05 s", "4 min", "4 min"),
        (299.9999, "5 min 00 s", "5 min", "5 min"),  # a measured span's noise
        (359, "5 min 59 s", "5 min", "5 min"),  # the larger units truncated, never rounded up
        (3599.7, "1 h 00 min", "1 h 00 min", "1 h"),
        (3700, "1 h 01 min", "1 h 01 min", "1 h"),
        (11520, "3 h 12 min", "3 h 12 min", "3 h"),
        (86399.6, "1 d 00 h", "1 d 00 h", "1 d 00 h"),
        (2 * 86400 + 4 * 3600 + 59 * 60, "2 d 04 h", "2 d 04 h", "2 d 04 h"),
        (40 * 86400, "40 d 00 h", "40 d 00 h", "40 d 00 h"),
        (-0.3, "0 s", "0 s", "0 s"),  # a clock set back: no time has passed
        (-3700, "0 s", "0 s", "0 s"),
        (NAN, "–", "–", "–"),
        (math.inf, "–", "–", "–"),
    ],
)
def test_durations_at_each_precision(seconds: float, to_the_second: str, to_the_minute: str, to_the_hour: str) -> None:
    assert format_duration(seconds) == to_the_second
    assert format_duration(seconds, "s") == to_the_second
    assert format_duration(seconds, "min") == to_the_minute
    assert format_duration(seconds, "h") == to_the_hour


@pytest.fixture
def india(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time 5 h 30 min ahead of UTC, without daylight saving (a POSIX TZ: no tzdata needed)."""
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    try:
        yield
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.usefixtures("india")
@pytest.mark.parametrize(
    ("timestamp_s", "seconds", "date", "text"),
    [
        (1_800_000_130.6, True, False, "13:32:10"),  # 08:02:10.6 UTC: local, the second not rounded up
        (1_800_000_130.6, False, False, "13:32"),
        (1_800_000_130.6, True, True, "2027-01-15 13:32:10"),
        (1_800_000_130.6, False, True, "2027-01-15 13:32"),
        (1_800_045_000.0, True, True, "2027-01-16 02:00:00"),  # 20:30 UTC: the next day here
        (NAN, True, False, "–"),
        (math.inf, False, True, "–"),
    ],
)
def test_clock_times_in_local_time(timestamp_s: float, seconds: bool, date: bool, text: str) -> None:
    assert format_clock(timestamp_s, seconds=seconds, date=date) == text


@pytest.mark.parametrize("columns", [80, 100])
def test_a_narrow_snapshot_names_each_gpus_biggest_job_and_the_hidden_processes(monkeypatch, columns: int) -> None:
    """At 80-100 columns a GPU's row has no room for its processes: a line beneath names its
    biggest job and counts the processes that cannot be seen here."""
    from dataclasses import replace

    from tests.helpers import run_ticks, simulated_source
    from trayvml.commands.report import text_snapshot
    from trayvml.core.sample import ProcessSample

    monkeypatch.setenv("COLUMNS", str(columns))
    source, clock, _ = simulated_source("training:gpus=h100+rtx4090,at=900")
    sample = run_ticks(source, clock, 2)
    h100 = sample.gpus[0]
    hidden = (ProcessSample(0, 999001, "compute", 1e9, no_permission=True),) * 2 + (
        ProcessSample(0, 999003, "compute", 1e9, foreign_pid=True),
    )
    sample = replace(sample, gpus=(replace(h100, processes=h100.processes + hidden), *sample.gpus[1:]))
    lines = text_snapshot(sample).splitlines()
    assert all(len(line) <= columns for line in lines if line.startswith(("[", " "))), lines
    gpu0 = next(k for k, line in enumerate(lines) if line.startswith("[0] "))
    assert " | container " not in lines[gpu0]  # no room in the row ...
    job = lines[gpu0 + 1]
    assert job.startswith("    container 3f2a9c1b7e4d (")  # ... so beneath it
    assert job.endswith(("(2 processes of other users; 1 process in another PID namespace)", "(+3 hidden)")), job
    gpu1 = next(k for k, line in enumerate(lines) if line.startswith("[1] "))
    assert lines[gpu1 + 1].startswith("    pid ") and "hidden" not in lines[gpu1 + 1]
    monkeypatch.delenv("COLUMNS")  # output to a pipe: every column, the whole list in the row, no line beneath
    wide = text_snapshot(sample).splitlines()
    assert not any(line.startswith("    ") for line in wide) and " | root:" in wide[2]


@pytest.mark.parametrize("columns", [60, 100, 200])
def test_the_text_snapshot_fits_the_terminal_and_never_wraps_a_gpu_row(monkeypatch, columns: int) -> None:
    from tests.helpers import run_ticks, simulated_source
    from trayvml.commands.report import text_snapshot

    monkeypatch.setenv("COLUMNS", str(columns))
    source, clock, _ = simulated_source("training:gpus=h100+rtx4090+laptop,at=900")
    sample = run_ticks(source, clock, 2)
    rows = [line for line in text_snapshot(sample).splitlines() if line.startswith("[")]
    assert len(rows) == 3
    assert all(len(row) <= columns for row in rows), rows
    wide = [line for line in text_snapshot(sample, width=None).splitlines() if line.startswith("[")]
    if columns == 200:
        assert rows == wide or all(" | fan " in row for row in rows)  # room for every column
    else:
        assert all(row.split(" | ")[0].startswith(f"[{k}] ") for k, row in enumerate(rows))  # which GPU, still
        assert "°C" in rows[0] and "%" in rows[0]  # temperature and utilization stay
