"""`trayvml history` and `log` output: written through to pipes and devices, atomically to files,
``-`` for standard output; streamed; ranges beyond the every-sample tier; bad input in a sentence."""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import math
import os
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import fifo_with_reader, without_root_powers
from tests.test_store import MIDNIGHT_S, _samples, _write
from trayvml import cli
from trayvml.core.metrics import GPU_INDEX
from trayvml.history.disk.limits import Limits
from trayvml.history.disk.read import StoreReader
from trayvml.history.disk.write import StoreWriter

QUERY = "timestamp,index,utilization.gpu"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    _write(folder, _samples("idle:gpus=h100*2", time.time() - 120, 30))
    return folder


def _history(store: Path, *arguments: str) -> int:
    return cli.main(["history", "--store", str(store), "--since", "1h", "--query", QUERY, *arguments])


def test_the_minute_the_every_sample_rows_begin_in_is_not_written_twice(tmp_path: Path, capsys) -> None:
    # Recording began 14 s before an hour ended: once that hour is packed, its minute tier holds a
    # 01:59 bucket of the same 14 s its every-sample rows hold. The export wrote both (a minute row
    # beside its own seconds: the same samples counted twice) when the test ran just after an hour.
    import math

    folder = tmp_path / "store"
    hour_s = math.floor(time.time() / 3600) * 3600 - 3600
    _write(folder, _samples("idle:gpus=h100*2", hour_s - 14, 30))
    assert cli.main(["history", "--store", str(folder), "--since", "3h", "--query", QUERY, "--csv", "-"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "timestamp, index, utilization.gpu [%]"  # no minute rows, so no interval column
    assert len(lines) == 1 + 30 * 2


def test_a_range_ending_within_a_minute_before_the_every_sample_rows_keeps_that_minute(tmp_path: Path) -> None:
    _three_hours(tmp_path)
    start, end = (datetime.fromtimestamp(t, timezone.utc).isoformat() for t in (MIDNIGHT_S, MIDNIGHT_S + 1830))
    out = tmp_path / "out.csv"
    arguments = ["--from", start, "--to", end, "--query", "timestamp,utilization.gpu", "--nounits", "--csv", str(out)]
    assert cli.main(["history", "--store", str(tmp_path), *arguments]) == 0
    rows = out.read_text().splitlines()[1:]
    # The minutes 00:00 to 00:30, the last one's 30 s within the range as with no every-sample rows at all.
    assert len(rows) == 31 and all(row.split(", ")[2] == "60" for row in rows)


def test_history_to_a_fifo_writes_through_to_its_reader(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo, reader, got = fifo_with_reader(tmp_path)
    assert _history(store, "--csv", str(fifo)) == 0
    reader.join(5)
    assert not reader.is_alive() and got, "the reader on the pipe got nothing"
    lines = got[0].decode().splitlines()
    assert lines[0] == "timestamp, index, utilization.gpu [%]" and len(lines) == 1 + 30 * 2
    assert fifo.is_fifo()  # not replaced by a plain file
    assert "60 rows written" in capsys.readouterr().err


def test_history_to_a_descriptor_writes_it_where_it_stands(store: Path, tmp_path: Path) -> None:
    """``--csv /dev/stdout >> all.csv`` (here a link of our own to this process' descriptor, as
    /dev/stdout is): appended to what the file held, not renamed over it; a pipe (``>(wc -l)``)
    written through, not "No such file"."""
    kept = tmp_path / "all.csv"
    kept.write_text("earlier\n")
    link = tmp_path / "stdout"
    appending = os.open(kept, os.O_WRONLY | os.O_APPEND)
    try:
        link.symlink_to(f"/proc/self/fd/{appending}")
        assert _history(store, "--csv", str(link)) == 0
    finally:
        os.close(appending)
    lines = kept.read_text().splitlines()
    assert lines[:2] == ["earlier", "timestamp, index, utilization.gpu [%]"] and len(lines) == 62
    read_end, write_end = os.pipe()
    try:
        link.unlink()
        link.symlink_to(f"/proc/self/fd/{write_end}")
        assert _history(store, "--csv", str(link)) == 0
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            assert len(pipe.read().decode().splitlines()) == 61
    finally:
        with contextlib.suppress(OSError):
            os.close(write_end)


def test_history_through_a_symlink_writes_its_target_and_keeps_the_link(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    assert _history(store, "--csv", str(link)) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    lines = target.read_text().splitlines()
    assert lines[0] == "timestamp, index, utilization.gpu [%]" and len(lines) == 61
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left


def test_history_to_a_new_file_leaves_no_temporary_and_is_readable_by_others(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    assert _history(store, "--csv", str(out)) == 0
    assert len(out.read_text().splitlines()) == 61
    assert out.stat().st_mode & 0o777 == 0o666 & ~_umask()  # as `>` makes it, not mkstemp's 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "store"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_history_dash_is_standard_output(store: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _history(store, "--csv", "-") == 0
    assert len(capsys.readouterr().out.splitlines()) == 61
    assert not (tmp_path / "-").exists()


def test_log_dash_is_standard_output(tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["log", "--csv", "-", "--count", "1", "--query", QUERY, "--simulate=idle:gpus=h100*2"]) == 0
    out = capfd.readouterr().out
    assert out.splitlines()[0] == "timestamp, index, utilization.gpu [%]" and len(out.splitlines()) == 3
    assert not (tmp_path / "-").exists()


def test_a_relative_store_is_the_folder_under_the_working_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["record", "--simulate=idle:gpus=h100", "--store", "rel", "--count", "1"]) == 0
    assert "1 sample recorded" in capsys.readouterr().err
    assert cli.main(["history", "--store", "rel", "--stats"]) == 0
    assert "1 GPU and the host" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--since", "99999999999999999999d"], "--since '99999999999999999999d' reaches back before 1970"),
        (["--from", "0001-01-01"], "'0001-01-01' is not a time trayvml can work with"),
        # No --to: not "--to is before --from"
        (["--from", "9999-12-31T23:59:59+00:00"], "--from '9999-12-31T23:59:59+00:00' is in the future"),
        (["--from", "2027-01-02", "--to", "2027-01-01"], "--to is before --from"),
        (["--since", ""], "--since '' is not a length of time"),  # a shell variable left empty: not 1 h
        (["--gpu", "99"], "No GPU with index 99 in the history"),
    ],
)
def test_history_says_in_one_sentence_what_it_cannot_do(
    store: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], said: str
) -> None:
    assert cli.main(["history", "--store", str(store), *arguments]) == cli.EXIT_USAGE
    captured = capsys.readouterr()
    assert said in captured.err and "Traceback" not in captured.err and captured.err.count("\n") == 1
    assert captured.out == ""  # not a header with nothing under it


def test_a_damaged_device_entry_is_a_sentence(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(store / "history.sqlite3") as connection:
        connection.execute("UPDATE devices SET info = '{\"index\": 0' WHERE uuid != 'host'")
    connection.close()
    assert _history(store) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "damaged" in err and "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize("damage", ["UPDATE blocks SET layout = 999", "UPDATE layouts SET columns = 'not json'"])
def test_a_damaged_layout_entry_is_a_sentence(store: Path, damage: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A block whose column layout is gone or not JSON (its checksum covers its data only)."""
    with sqlite3.connect(store / "history.sqlite3") as connection:
        connection.execute(damage)
    connection.close()
    for extra in ([], ["--stats"]):
        assert _history(store, *extra) == cli.EXIT_USAGE
        err = capsys.readouterr().err
        assert "layout" in err and "damaged" in err and "Traceback" not in err and err.count("\n") == 1


class _FullStream(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_standard_output_is_a_sentence(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("trayvml.commands.history.quiet_stdout", lambda: None)  # not pytest's own descriptor
    monkeypatch.setattr(sys, "stdout", _FullStream())
    assert _history(store) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "Cannot write standard output: No space left on device." in err and "Traceback" not in err


def _three_hours(folder: Path, spec: str = "idle:gpus=h100") -> list:
    """Three hours at one sample per 10 s, the every-sample tier kept for the last hour only."""
    samples = _samples(spec, MIDNIGHT_S, 3 * 360, step_s=10.0)
    _write(folder, samples, Limits(fine_span_s=3600.0))
    return samples


def test_beyond_the_fine_tier_history_exports_minutes_with_min_and_max(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = _three_hours(tmp_path)
    out = tmp_path / "out.csv"
    start, end = (datetime.fromtimestamp(t, timezone.utc).isoformat() for t in (MIDNIGHT_S, MIDNIGHT_S + 3 * 3600))
    arguments = ["--from", start, "--to", end, "--query", "timestamp,utilization.gpu", "--nounits"]
    assert cli.main(["history", "--store", str(tmp_path), *arguments, "--csv", str(out)]) == 0
    rows = list(csv.reader(out.read_text().splitlines(), skipinitialspace=True))
    assert rows[0] == [
        "timestamp",
        "utilization.gpu [%]",
        "interval [s]",
        "utilization.gpu.min [%]",
        "utilization.gpu.max [%]",
    ]
    minutes = [r for r in rows[1:] if r[2] == "60"]
    each = [r for r in rows[1:] if r[2] == "0"]
    reader = StoreReader(tmp_path)
    fine_start = reader.fine_start_s(samples[0].devices[0].uuid)
    reader.close()
    assert fine_start is not None and fine_start >= MIDNIGHT_S + 3600  # the first hours kept as minutes only
    assert len(minutes) == (fine_start - MIDNIGHT_S) / 60 and len(each) == sum(
        1 for s in samples if s.timestamp_s >= fine_start
    )
    assert rows[1:] == minutes + each  # oldest first
    first_minute = [s.gpus[0].values[GPU_INDEX["utilization_gpu_percent"]] for s in samples[:6]]
    low, mean, high = float(minutes[0][3]), float(minutes[0][1]), float(minutes[0][4])
    assert low == pytest.approx(min(first_minute), abs=0.01) and high == pytest.approx(max(first_minute), abs=0.01)
    assert mean == pytest.approx(sum(first_minute) / 6, abs=0.01)
    assert "one row a minute" in capsys.readouterr().err


def test_a_query_of_no_metric_exports_the_rows_of_what_was_recorded(store: Path, capsys) -> None:
    # Only a GPU's facts and the times: no metric column to read (a traceback: numpy's ~ of an empty
    # float array, the columns' "present" flags).
    arguments = ["history", "--store", str(store), "--since", "1h", "--query", "timestamp,index,name", "--csv", "-"]
    assert cli.main(arguments) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "timestamp, index, name" and len(lines) == 1 + 30 * 2
    assert sorted({tuple(line.split(", ")[1:]) for line in lines[1:]}) == [
        ("0", "NVIDIA H100 80GB HBM3"),
        ("1", "NVIDIA H100 80GB HBM3"),
    ]


def test_a_range_with_nothing_recorded_says_so_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, _samples("idle:gpus=h100", MIDNIGHT_S, 10))
    _write(tmp_path, _samples("idle:gpus=h100", MIDNIGHT_S + 86400, 10))
    out = tmp_path / "out.csv"
    start, end = (datetime.fromtimestamp(t, timezone.utc).isoformat() for t in (MIDNIGHT_S + 3600, MIDNIGHT_S + 7200))
    assert cli.main(["history", "--store", str(tmp_path), "--from", start, "--to", end, "--csv", str(out)]) == 2
    err = capsys.readouterr().err
    assert "No history between" in err and "it holds" in err and err.count("\n") == 1
    assert not out.exists()


def test_export_memory_is_bounded_by_an_hour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trayvml.commands import history

    _three_hours(tmp_path)
    reader = StoreReader(tmp_path)
    asked: list[float] = []
    fine = reader.fine

    def spy(uuid: str, start_s: float, end_s: float, keys: tuple[str, ...]):
        asked.append(end_s - start_s)
        return fine(uuid, start_s, end_s, keys)

    monkeypatch.setattr(reader, "fine", spy)
    gpus = history.stored_gpus(reader, tmp_path, None)
    rows = history.stored_rows(reader, gpus, MIDNIGHT_S, MIDNIGHT_S + 3 * 3600)
    next(rows)  # a generator: the first row comes before the rest is read
    assert asked == [] or max(asked) <= 3600
    list(rows)
    assert asked and max(asked) <= 3600
    reader.close()


def test_an_export_reads_a_day_of_minutes_once_and_only_the_columns_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An hour's read of minutes folded the whole day's block again (a week's export read each
    # GPU's minutes 144 times), and each hour of samples was decoded in all its columns (the sum
    # along time of all 57 was most of the reading), whatever the columns asked for.
    from trayvml.commands import history
    from trayvml.history.disk import codec

    _write(tmp_path, _samples("idle:gpus=h100*2", MIDNIGHT_S, 4 * 360, step_s=10.0), Limits(fine_span_s=3600.0))
    reader = StoreReader(tmp_path)
    coarse, decode = reader.coarse, codec.decode_deltas
    minutes_read: list[str] = []
    rows_decoded: list[int] = []

    def counted_coarse(uuid: str, *args: Any, **kwargs: Any) -> Any:
        minutes_read.append(uuid)
        return coarse(uuid, *args, **kwargs)

    def counted_decode(data: bytes, crc: int, count: int, wanted: np.ndarray | None = None) -> np.ndarray:
        deltas = decode(data, crc, count, wanted)
        if count == codec.FINE_MATRICES:
            rows_decoded.append(len(deltas))
        return deltas

    monkeypatch.setattr(reader, "coarse", counted_coarse)
    monkeypatch.setattr(codec, "decode_deltas", counted_decode)
    gpus = history.stored_gpus(reader, tmp_path, None)
    keys = ("utilization_gpu_percent", "power_draw_w")
    try:
        rows = list(history.stored_rows(reader, gpus, MIDNIGHT_S, MIDNIGHT_S + 4 * 3600, keys))
        minutes_s = min(reader.fine_start_s(uuid) or 0.0 for uuid, _ in gpus) - MIDNIGHT_S
    finally:
        reader.close()
    assert minutes_s >= 2 * 3600 and sum(r.minute.sum() for r in rows) == 2 * minutes_s / 60  # hours of them
    assert sorted(minutes_read) == sorted(uuid for uuid, _ in gpus)  # once a GPU for the day
    assert rows_decoded and set(rows_decoded) == {1 + 3 * len(keys)}  # times, then values, mask, states


def test_the_look_for_minutes_goes_back_from_the_stores_last_row_not_from_the_range_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A GPU without every-sample rows (pruned, or never packed so) and a range to the year 9999:
    # the look for its minutes went back a day at a time from 9999, millions of reads.
    from trayvml.commands import history

    _three_hours(tmp_path)
    reader = StoreReader(tmp_path)
    coarse = reader.coarse
    reads = 0

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal reads
        reads += 1
        assert reads < 50, "read day after day"
        return coarse(*args, **kwargs)

    monkeypatch.setattr(reader, "coarse", counted)
    monkeypatch.setattr(reader, "fine_start_s", lambda uuid: None)
    gpus = history.stored_gpus(reader, tmp_path, None)
    far_s = datetime(9999, 12, 31, tzinfo=timezone.utc).timestamp()
    try:
        assert history._minutes_until(reader, gpus, MIDNIGHT_S - 86400, far_s) == far_s  # minutes are there
    finally:
        reader.close()
    assert 0 < reads <= 2


@pytest.mark.parametrize(
    ("start", "end"),
    [(-7200.0, 7200.0), (-5430.5, 0.0), (-60.0, 0.5), (-3599.9, 59.5), (-1.0, 3600.0)],
    ids=["all", "to-midnight", "over-midnight", "mid-minutes", "to-fine"],
)
def test_the_minutes_exported_are_those_one_read_of_the_range_gives(tmp_path: Path, start: float, end: float) -> None:
    # The export reads a day of minutes and takes each hour's from it: the same buckets as one read
    # of the whole range, from the minute the range starts in to the minute the samples begin in.
    from trayvml.commands import history
    from trayvml.history.disk.write import GPU_LAYOUT

    _write(tmp_path, _samples("idle:gpus=h100", MIDNIGHT_S - 7200, 5 * 360, step_s=10.0), Limits(fine_span_s=3600.0))
    reader = StoreReader(tmp_path)
    gpus = history.stored_gpus(reader, tmp_path, None)
    uuid = gpus[0][0]
    fine_s = reader.fine_start_s(uuid)
    assert fine_s is not None and fine_s > MIDNIGHT_S  # minutes on both days
    start_s, end_s = MIDNIGHT_S + start, MIDNIGHT_S + end
    keys = ("utilization_gpu_percent", "power_draw_w")
    rows = list(history.stored_rows(reader, gpus, start_s, end_s, keys))
    got_ms = np.concatenate([r.times_ms[r.minute] for r in rows])
    got = np.concatenate([r.mean[r.minute] for r in rows])
    until_s = min(end_s, math.floor(fine_s / 60) * 60)
    read = reader.coarse(uuid, start_s, until_s, 60.0, GPU_LAYOUT.keys, fresh=False)
    take = read.recorded & (read.times_s >= math.floor(start_s / 60) * 60) & (read.times_s < until_s)
    reader.close()
    assert len(got_ms) > 0 and got_ms.tolist() == np.rint(read.times_s[take] * 1000).astype(np.int64).tolist()
    columns = [GPU_LAYOUT.keys.index(k) for k in keys]
    np.testing.assert_array_equal(got, read.mean[take][:, columns])


def test_record_that_could_write_nothing_says_so_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = blocker / "store"  # cannot be made: a file is in the way
    assert cli.main(["record", "--simulate=idle:gpus=h100", "--store", str(store), "--count", "1"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "0 of 1 samples recorded" in err and "Not a directory" in err and "Traceback" not in err
    assert "1 sample recorded" not in err


def test_record_reads_what_the_trays_history_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `record` read every metric each second: GPM's activity, whose counters are DCGM's profiling
    # counters too (README: read only while something shows or uses it), and the energy counter
    # (4-5 ms of an H200 driver's CPU a read). It reads what the tray's history reads: the process
    # lists once in STORE_PROCESSES_S (here the first of 4 samples half a second apart).
    from trayvml.core.sample import MetricState

    store = tmp_path / "store"
    arguments = ["record", "--simulate=training:gpus=h100,start=1800", "--store", str(store)]
    assert cli.main([*arguments, "--interval", "0.5", "--count", "4"]) == 0
    assert "4 samples recorded" in capsys.readouterr().err
    reader = StoreReader(store)
    try:
        (device,) = [d for d in reader.devices() if d.uuid.startswith("GPU-")]  # (and the host)
        keys = ("utilization_gpu_percent", "sm_activity_percent", "energy_consumed_j", "process_count")
        states = reader.fine(device.uuid, 0.0, time.time() + 60, keys).states
    finally:
        reader.close()
    assert states[:, 0].tolist() == [MetricState.OK] * 4
    assert states[:, 1].tolist() == states[:, 2].tolist() == [MetricState.NOT_READ] * 4
    assert states[:, 3].tolist() == [MetricState.OK] + [MetricState.NOT_READ] * 3


def test_a_writer_counts_what_it_saved_and_what_it_lost(tmp_path: Path) -> None:
    samples = _samples("idle:gpus=h100", MIDNIGHT_S, 20)
    writer = StoreWriter(tmp_path / "store")
    for sample in samples:
        writer.append(sample)
    writer.close()
    assert (writer.saved, writer.lost) == (20, 0)


def _logs_lines(rows, columns, gpus, units: bool, minutes: bool) -> list[str]:
    """What `log`'s per-row code writes for the stored rows: a Sample a time, each GPU's row rendered
    value by value (the export's code before it formatted each distinct value once)."""
    from trayvml.commands import csvlog
    from trayvml.core.sample import GpuSample, MetricState, Sample
    from trayvml.history.disk.write import GPU_LAYOUT

    extra = [c for c in columns if c.metric]
    keys = list(dict.fromkeys(c.metric for c in extra))

    def gpu_sample(position: int, values) -> GpuSample:
        full = [float("nan")] * len(GPU_LAYOUT.keys)
        states = [MetricState.NOT_READ] * len(GPU_LAYOUT.keys)
        for k, key in enumerate(keys):
            full[GPU_LAYOUT.keys.index(key)] = values[0][k]
            states[GPU_LAYOUT.keys.index(key)] = MetricState(int(values[1][k]))
        return GpuSample(gpus[position].index, tuple(full), tuple(states))

    lines: list[str] = []
    moments = rows.times_ms * 2 + ~rows.minute
    indices = np.array([gpus[p].index for p in rows.gpu])
    assert (np.diff(moments) >= 0).all()  # oldest first, a minute before a sample of its millisecond
    assert all((np.diff(indices[moments == m]) > 0).all() for m in set(moments.tolist()))  # then by GPU index
    for moment in dict.fromkeys(moments.tolist()):
        at = np.flatnonzero(moments == moment)
        t_s = moment // 2 / 1000 + (0.0005 if moment % 2 else 0.0)
        devices = tuple(gpus[p] for p in rows.gpu[at])
        made = [
            Sample(
                t_s,
                tuple(gpu_sample(p, (m[i], rows.states[i])) for p, i in zip(rows.gpu[at], at, strict=True)),
                devices,
                None,
                None,
            )
            for m in (rows.mean, rows.low, rows.high)
        ]
        mean, low, high = (csvlog.rows(s, columns if s is made[0] else extra, units) for s in made)
        for k, line in enumerate(mean):
            if minutes:
                interval = ("60" if rows.minute[at[k]] else "0") + (" s" if units else "")
                pairs = [x for lo, hi in zip(low[k].split(", "), high[k].split(", "), strict=True) for x in (lo, hi)]
                line = ", ".join((line, interval, *pairs))
            lines.append(line)
    return lines


@pytest.mark.parametrize("units", [True, False])
def test_history_csv_is_what_logs_row_by_row_code_writes(tmp_path: Path, units: bool) -> None:
    """Every column, samples and minutes, GPUs lacking metrics: the export's vectorised text is the
    text of log's own per-row rendering of the same rows, to the byte."""
    from trayvml.commands import csvlog, history

    _three_hours(tmp_path, "training:gpus=h100+rtx4090+laptop")
    columns = csvlog.parse_fields(",".join(csvlog.COLUMNS))
    keys = tuple(dict.fromkeys(c.metric for c in columns if c.metric))
    reader = StoreReader(tmp_path)
    try:
        gpus = history.stored_gpus(reader, tmp_path, None)
        infos = [info for _, info in gpus]
        chunks = list(history.stored_rows(reader, gpus, MIDNIGHT_S, MIDNIGHT_S + 3 * 3600, keys))
    finally:
        reader.close()
    assert any(c.minute.any() for c in chunks) and any((~c.minute).any() for c in chunks)
    assert any((c.states != 0).any() for c in chunks)  # some values missing or not supported
    for chunk in chunks:
        got = history.csv_text(chunk, columns, infos, units, minutes=True).splitlines()
        assert got == _logs_lines(chunk, columns, infos, units, minutes=True)
    last = chunks[-1]
    assert history.csv_text(last, columns, infos, units, minutes=False).splitlines() == _logs_lines(
        last, columns, infos, units, minutes=False
    )


def test_a_history_folder_that_may_not_be_entered_is_one_sentence(store: Path, tmp_path: Path) -> None:
    """A state folder left root's after ``sudo trayvml record``: ``history`` and ``doctor`` say so
    in a sentence (doctor: the history is not kept), not with a traceback."""
    state = tmp_path / "state"
    (state / "trayvml").mkdir(parents=True)
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    store.chmod(0)
    (state / "trayvml").chmod(0)
    try:
        python = [*without_root_powers(), sys.executable, "-m", "trayvml"]
        history = subprocess.run(
            [*python, "history", "--store", str(store)], capture_output=True, text=True, timeout=60, env=env
        )
        doctor = subprocess.run(
            [*python, "doctor", "--simulate=idle"], capture_output=True, text=True, timeout=60, env=env
        )
    finally:
        store.chmod(0o700)
        (state / "trayvml").chmod(0o700)
    assert history.returncode == 2 and "Traceback" not in history.stderr, history.stderr
    assert "Permission denied" in history.stderr and str(store) in history.stderr
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr
    assert f"{state / 'trayvml'} is not writable" in doctor.stdout


def test_a_store_in_a_folder_this_user_may_not_write_is_read_once_its_writer_ended(store: Path, tmp_path: Path) -> None:
    """Another user's store, or a read-only copy: its writer's clean end removed the log's index
    (-shm), which SQLite then wants to make before it reads ("attempt to write a readonly database")."""
    assert not (store / "history.sqlite3-shm").exists() and not (store / "history.sqlite3-wal").exists()
    out = tmp_path / "out.csv"
    store.chmod(0o555)
    try:
        command = [*without_root_powers(), sys.executable, "-m", "trayvml", "history", "--store", str(store)]
        result = subprocess.run(
            [*command, "--since", "1h", "--query", QUERY, "--csv", str(out)], capture_output=True, text=True, timeout=60
        )
    finally:
        store.chmod(0o700)
    assert result.returncode == 0, result.stderr
    assert len(out.read_text().splitlines()) == 61


def test_an_output_that_fails_before_it_is_written_leaves_the_file_and_no_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """core.files.output where the new file's mode cannot be set (a vfat mount refuses chmod): the
    error goes up, the file is as it was, and neither the temporary nor its descriptor is left."""
    from trayvml.core import files

    target = tmp_path / "out.csv"
    target.write_text("kept\n")

    def refused(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(files.os, "chmod", refused)
    before = sorted(os.listdir("/proc/self/fd"))
    with pytest.raises(PermissionError), files.output(str(target)) as out:
        out.write(b"new\n")
    assert sorted(os.listdir("/proc/self/fd")) == before
    assert target.read_text() == "kept\n" and [p.name for p in tmp_path.iterdir()] == ["out.csv"]
