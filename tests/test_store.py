"""The history on disk (trayvml/history/disk): round trips, buckets, time oddities, faults, one writer, CLI."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import OPEN_SOURCES
from trayvml import cli
from trayvml.commands import csvlog
from trayvml.commands.history import parse_time
from trayvml.core.clock import ManualClock
from trayvml.core.metrics import GPU_METRICS, Unit
from trayvml.core.sample import Sample
from trayvml.history.disk import codec
from trayvml.history.disk.db import Block, Database, Tier
from trayvml.history.disk.limits import Limits
from trayvml.history.disk.read import StoreReader
from trayvml.history.disk.write import GPU_LAYOUT, HOST_UUID, PRUNE_EVERY_S, StoreLockedError, StoreWriter
from trayvml.nvml.sim import parse_spec
from trayvml.source import Source

MIDNIGHT_S = datetime(2027, 3, 3, tzinfo=timezone.utc).timestamp()
INTEGER_UNITS = {Unit.COUNT, Unit.MHZ, Unit.PSTATE, Unit.BITMASK, Unit.FLAG, Unit.PCIE_GEN, Unit.LANES, Unit.XID}


def _samples(spec: str, start_s: float, count: int, step_s: float = 1.0) -> list[Sample]:
    clock = ManualClock(start_s)
    source = Source(parse_spec(spec), clock, host=False)
    OPEN_SOURCES.append(source)
    samples = []
    for _ in range(count):
        samples.append(source.sample())
        clock.advance_s(step_s)
    return samples


def _write(folder: Path, samples: list[Sample], limits: Limits | None = None) -> None:
    writer = StoreWriter(folder, limits)
    try:
        for sample in samples:
            writer.append(sample)
    finally:
        writer.close()


def _pack(folder: Path, now_s: float) -> None:
    """The hours before ``now_s`` packed here, as a packer process packs them."""
    from trayvml.history.disk import pack

    db = Database(folder)
    try:
        pack.pack(db, round(now_s * 1000), None)
    finally:
        db.close()


def _on_a_full_disk(writer: StoreWriter, samples: list[Sample], monkeypatch: pytest.MonkeyPatch) -> None:
    """``samples`` appended while the disk is full (the writer says so), the disk freed after."""
    _fill_the_disk(monkeypatch)
    for sample in samples:
        writer.append(sample)
    assert writer.problem is not None
    monkeypatch.undo()


def _fill_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every insert into the store fails as a full disk makes it fail (monkeypatch.undo frees it)."""

    def full(*args: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Database, "insert", full)


def _values(samples: list[Sample], gpu: int) -> np.ndarray:
    return np.array([s.gpus[gpu].values for s in samples], dtype=np.float64)


def test_round_trip_across_an_hour_and_a_day_boundary(tmp_path: Path) -> None:
    samples = _samples("training:gpus=h100+rtx4090", MIDNIGHT_S - 150, 300)
    _write(tmp_path, samples)
    reader = StoreReader(tmp_path)
    uuid = samples[0].devices[1].uuid
    data = reader.fine(uuid, samples[0].timestamp_s, samples[-1].timestamp_s, GPU_LAYOUT.keys)
    expected = _values(samples, 1)
    assert np.array_equal(data.times_s, [s.timestamp_s for s in samples])
    assert np.array_equal(np.isnan(data.values), np.isnan(expected))
    for column, metric in enumerate(GPU_METRICS):
        got, want = data.values[:, column], expected[:, column]
        present = ~np.isnan(want)
        if metric.unit in INTEGER_UNITS:
            assert np.array_equal(got[present], want[present]), metric.key
        else:
            assert np.abs(got[present] - want[present]).max(initial=0) <= metric.stored_resolution / 2 + 1e-9, (
                metric.key
            )
    assert np.array_equal(data.states, [[int(x) for x in s.gpus[1].states] for s in samples])
    # The hour before midnight was packed into the fine, coarse and (a day over) wide tiers; what
    # follows it is fresh.
    tiers = Database(tmp_path).connection.execute("SELECT DISTINCT tier FROM blocks").fetchall()
    assert {t for (t,) in tiers} == {0, 1, 2, 3}
    reader.close()


def test_the_hour_that_is_over_is_packed_by_a_process_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Packing an hour decodes, joins and compresses megabytes with numpy: 13 MiB the idle tray
    would load, and freed pages glibc would keep in its RSS. A child does it, once the hour is over."""
    from trayvml.history.disk import write

    started: list[tuple[int, int]] = []  # the packer's pid, and the samples saved when it started
    start_packer = write.start_packer

    def spied(folder: Path, now_ms: int, keep_ms: int, lock_fd: int) -> subprocess.Popen[bytes]:
        packer = start_packer(folder, now_ms, keep_ms, lock_fd)
        started.append((packer.pid, writer.saved))
        return packer

    monkeypatch.setattr(write, "start_packer", spied)
    writer = StoreWriter(tmp_path)
    try:
        for sample in _samples("idle:gpus=h100", MIDNIGHT_S - 60, 120):
            writer.append(sample)
    finally:
        writer.close()  # waits for the packer
    # Not at the first write (nothing to pack), once the hour before midnight is over.
    assert len(started) == 1 and 60 <= started[0][1] <= 70 and started[0][0] != os.getpid(), started
    db = Database(tmp_path, read_only=True)
    tiers = {
        t for (t,) in db.connection.execute("SELECT DISTINCT tier FROM blocks WHERE start_ms < ?", (MIDNIGHT_S * 1000,))
    }
    db.close()
    assert tiers == {int(Tier.FINE), int(Tier.COARSE), int(Tier.WIDE)}  # no fresh block of the hour left


def test_an_hour_whose_blocks_went_while_it_was_packed_is_left_for_the_next_packer(tmp_path: Path) -> None:
    """The packer decodes and compresses before its transaction; a block pruned meanwhile makes it
    write nothing (rather than put the pruned block's rows back, or lose the others)."""
    from trayvml.history.disk import pack

    _write(tmp_path, _samples("idle:gpus=h100", MIDNIGHT_S - 60, 40))  # before midnight: all fresh
    db = Database(tmp_path)
    try:
        device = next(d.id for d in db.devices() if d.uuid != HOST_UUID)
        fresh = db.blocks(device, (Tier.FRESH,), 0, round(MIDNIGHT_S * 1000))
        assert len(fresh) >= 2
        db.delete([fresh[0].id])  # pruned by the writer while the packer worked
        hour = fresh[1].start_ms // 3_600_000
        with pytest.raises(pack._StoreChangedError):
            pack._pack_hour(db, device, hour, fresh[1].layout, fresh)
        tiers = [t for (t,) in db.connection.execute("SELECT tier FROM blocks WHERE device = ?", (device,))]
        assert tiers == [int(Tier.FRESH)] * (len(fresh) - 1)  # as it was: nothing lost, nothing twice
        pack.pack(db, round(MIDNIGHT_S * 1000), 7 * 86_400_000)  # the next packer packs what is there
        tiers = [t for (t,) in db.connection.execute("SELECT tier FROM blocks WHERE device = ?", (device,))]
        assert sorted(tiers) == [int(Tier.FINE), int(Tier.COARSE), int(Tier.WIDE)]
    finally:
        db.close()


def test_rows_of_an_hour_that_is_over_given_back_are_packed_by_a_packer_started_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last block of the hour before midnight holds the first seconds after it: they go back as
    a fresh block of their own hour. Where that hour is over too, the packer says so (another is
    started at once), and the next packs them; every row is read once throughout."""
    from trayvml.history.disk import pack, write

    def refused(*_: object) -> subprocess.Popen[bytes]:
        raise OSError("not now")

    monkeypatch.setattr(write, "start_packer", refused)  # the writer leaves every hour fresh
    samples = _samples("idle:gpus=h100", MIDNIGHT_S - 30, 60)
    _write(tmp_path, samples)
    uuid = samples[0].devices[0].uuid
    times = [s.timestamp_s for s in samples]
    db = Database(tmp_path)
    try:
        device = next(d.id for d in db.devices() if d.uuid == uuid)
        fresh = db.blocks(device, (Tier.FRESH,), 0, 2**62)
        assert any(b.start_ms < MIDNIGHT_S * 1000 <= b.end_ms for b in fresh)  # one reaches past midnight
        later_ms = round((MIDNIGHT_S + 7200) * 1000)
        assert not pack.pack(db, later_ms, None)  # the rows after midnight went back: another packer at once
        assert _row_times(tmp_path, uuid, times) == times
        assert pack.pack(db, later_ms, None)
        assert db.blocks(device, (Tier.FRESH,), 0, 2**62) == []
        fine = db.blocks(device, (Tier.FINE,), 0, 2**62)
        assert [b.start_ms < MIDNIGHT_S * 1000 for b in fine] == [True, False, False]  # 23:00, 0:00 twice
        assert all(b.end_ms < MIDNIGHT_S * 1000 for b in fine[:1])  # the hour's rows alone
    finally:
        db.close()
    assert _row_times(tmp_path, uuid, times) == times


def _row_times(folder: Path, uuid: str, times: list[float]) -> list[float]:
    reader = StoreReader(folder)
    try:
        return list(reader.fine(uuid, times[0], times[-1], GPU_LAYOUT.keys).times_s.tolist())
    finally:
        reader.close()


def test_a_packer_started_as_a_tray_from_before_starts_it_packs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tray that ran on while trayvml was upgraded starts the new packer with the arguments of
    before (no minutes' span): it packs, and leaves the span to the age prune."""
    from trayvml.history.disk import pack

    monkeypatch.setattr(os, "nice", lambda _: 0)  # not this test process's priority, for the rest of the run

    _write(tmp_path, _samples("idle:gpus=h100", MIDNIGHT_S - 20, 10))  # before midnight: all fresh
    assert pack.main([str(tmp_path), str(round(MIDNIGHT_S * 1000))]) == 0
    db = Database(tmp_path, read_only=True)
    tiers = {t for (t,) in db.connection.execute("SELECT DISTINCT tier FROM blocks")}
    db.close()
    assert tiers == {int(Tier.FINE), int(Tier.COARSE), int(Tier.WIDE)}


def test_a_packer_keeps_the_writers_lock_while_it_runs(tmp_path: Path) -> None:
    """One writer at a time, also where the tray dies while its packer runs: the packer holds the lock."""
    from trayvml.history.disk.write import WriterLock, holder, start_packer

    samples = _samples("idle:gpus=h100", MIDNIGHT_S - 20, 40)
    writer = StoreWriter(tmp_path)
    for sample in samples[:20]:  # before midnight only: the hour is packed by the packer started below
        writer.append(sample)
    writer.close()
    lock = WriterLock(tmp_path)
    blocker = Database(tmp_path)
    blocker.connection.execute("BEGIN IMMEDIATE")  # the packer waits for this transaction
    packer = start_packer(tmp_path, round(MIDNIGHT_S * 1000), 7 * 86_400_000, lock.fd)
    try:
        lock.release()  # this process lets go (as one that dies would)
        assert holder(tmp_path) is not None
        with pytest.raises(StoreLockedError):
            StoreWriter(tmp_path)
        blocker.connection.execute("COMMIT")
        assert packer.wait(60) == 0
    finally:
        packer.kill()
        packer.wait()
        blocker.close()
    assert holder(tmp_path) is None  # its end frees the store
    db = Database(tmp_path, read_only=True)
    assert db.connection.execute("SELECT COUNT(*) FROM blocks WHERE tier = 0").fetchone()[0] == 0
    db.close()


def test_bucket_min_mean_max_are_those_of_the_samples(tmp_path: Path) -> None:
    samples = _samples("training:gpus=h100", MIDNIGHT_S - 3700, 3800)
    _write(tmp_path, samples)
    reader = StoreReader(tmp_path)
    uuid = samples[0].devices[0].uuid
    fine = reader.fine(uuid, MIDNIGHT_S - 3700, MIDNIGHT_S + 200, GPU_LAYOUT.keys)
    coarse = reader.coarse(uuid, MIDNIGHT_S - 3600, MIDNIGHT_S - 1, 300.0, GPU_LAYOUT.keys)
    assert coarse.step_s == 300.0 and len(coarse.times_s) == 12
    wide = reader.coarse(uuid, MIDNIGHT_S - 3600, MIDNIGHT_S - 1, 600.0, GPU_LAYOUT.keys)  # the day's wide block
    assert len(wide.times_s) == 6
    for data in (coarse, wide):
        for column, key in enumerate(GPU_LAYOUT.keys):
            for k, start in enumerate(data.times_s):
                inside = (fine.times_s >= start) & (fine.times_s < start + data.step_s)
                values = fine.values[inside, column]
                values = values[~np.isnan(values)]
                assert data.count[k, column] == len(values), key
                if len(values):
                    assert data.low[k, column] == values.min() and data.high[k, column] == values.max(), key
                    assert data.mean[k, column] == pytest.approx(values.mean(), rel=1e-9, abs=1e-9), key
    reader.close()


def test_a_clock_jump_backwards_keeps_both_stretches(tmp_path: Path) -> None:
    first = _samples("idle:gpus=h100", MIDNIGHT_S, 30)
    again = [replace(s, timestamp_s=s.timestamp_s - 20) for s in _samples("idle:gpus=h100", MIDNIGHT_S + 30, 30)]
    _write(tmp_path, first + again)
    reader = StoreReader(tmp_path)
    data = reader.fine(first[0].devices[0].uuid, MIDNIGHT_S - 60, MIDNIGHT_S + 120, GPU_LAYOUT.keys)
    assert len(data.times_s) == 60
    assert np.all(np.diff(data.times_s) >= 0)  # read back in time order, overlap and all
    reader.close()


def test_gpus_are_joined_by_uuid_across_runs(tmp_path: Path) -> None:
    run1 = _samples("idle:gpus=h100+rtx4090", MIDNIGHT_S, 20)
    kept = run1[0].devices[1].uuid
    # The next run sees only that GPU, now at index 0.
    run2 = [
        replace(s, gpus=(replace(s.gpus[1], index=0),), devices=(replace(s.devices[1], index=0),))
        for s in _samples("idle:gpus=h100+rtx4090", MIDNIGHT_S + 100, 20)
    ]
    _write(tmp_path, run1)
    _write(tmp_path, run2)
    reader = StoreReader(tmp_path)
    assert {d.uuid for d in reader.devices()} == {run1[0].devices[0].uuid, kept}
    data = reader.fine(kept, MIDNIGHT_S - 1, MIDNIGHT_S + 200, GPU_LAYOUT.keys)
    assert len(data.times_s) == 40
    reader.close()


def test_time_is_stored_in_utc_through_a_dst_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        change_s = datetime(2027, 3, 28, 1, 0, tzinfo=timezone.utc).timestamp()  # 02:00 CET → 03:00 CEST
        samples = _samples("idle:gpus=h100", change_s - 60, 120)
        _write(tmp_path, samples)
        reader = StoreReader(tmp_path)
        start = parse_time("2027-03-28 01:59:00", datetime.now())  # local, CET
        end = parse_time("2027-03-28 03:01:00+02:00", datetime.now())  # CEST, offset given
        data = reader.fine(samples[0].devices[0].uuid, start, end, GPU_LAYOUT.keys)
        assert np.array_equal(np.diff(data.times_s), np.ones(119))  # one hour of clock, two minutes of samples
        reader.close()
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_damaged_block_is_skipped_with_one_note(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    samples = _samples("idle:gpus=h100", MIDNIGHT_S, 40)
    _write(tmp_path, samples)
    db = Database(tmp_path)
    block_id, data = db.connection.execute("SELECT id, data FROM blocks WHERE tier = 0 ORDER BY start_ms").fetchone()
    db.connection.execute(
        "UPDATE blocks SET data = ? WHERE id = ?", (data[:5] + bytes([data[5] ^ 0xFF]) + data[6:], block_id)
    )
    db.close()
    reader = StoreReader(tmp_path)
    with caplog.at_level(logging.WARNING):
        first = reader.fine(samples[0].devices[0].uuid, MIDNIGHT_S - 1, MIDNIGHT_S + 60, GPU_LAYOUT.keys)
        again = reader.fine(samples[0].devices[0].uuid, MIDNIGHT_S - 1, MIDNIGHT_S + 60, GPU_LAYOUT.keys)
    assert 0 < len(first.times_s) < 40 and len(again.times_s) == len(first.times_s)
    assert first.times_s[0] > MIDNIGHT_S  # the first block was the damaged one
    assert sum("damaged block" in r.message for r in caplog.records) == 1
    reader.close()


def test_a_full_disk_keeps_samples_in_memory_says_so_once_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    samples = _samples("idle:gpus=h100", MIDNIGHT_S, 120)
    writer = StoreWriter(tmp_path)

    with caplog.at_level(logging.WARNING):
        for sample in samples[:20]:
            writer.append(sample)
        _fill_the_disk(monkeypatch)
        for sample in samples[20:60]:
            writer.append(sample)
        assert writer.problem is not None and "No space left on device" in writer.problem
        monkeypatch.undo()
        for sample in samples[60:]:
            writer.append(sample)
        assert writer.problem is None
    writer.close()
    assert sum("in memory only" in r.message for r in caplog.records) == 1
    reader = StoreReader(tmp_path)
    data = reader.fine(samples[0].devices[0].uuid, MIDNIGHT_S - 1, MIDNIGHT_S + 200, GPU_LAYOUT.keys)
    assert len(data.times_s) == 120  # nothing lost: the samples waited in memory
    reader.close()


def test_closing_after_the_store_recovers_writes_what_waited_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk full, then freed, and the recorder stopped (SIGTERM) before its next try, due every
    30 s: the samples held in memory were counted lost, though the store could be written."""
    samples = _samples("idle:gpus=h100", MIDNIGHT_S, 25)
    writer = StoreWriter(tmp_path)
    _on_a_full_disk(writer, samples[:15], monkeypatch)  # freed, ten seconds before the next try
    for sample in samples[15:]:
        writer.append(sample)
    assert writer.problem is not None  # not tried again yet
    writer.close()
    assert writer.saved == 25 and writer.lost == 0
    reader = StoreReader(tmp_path)
    try:
        data = reader.fine(samples[0].devices[0].uuid, MIDNIGHT_S - 1, MIDNIGHT_S + 60, GPU_LAYOUT.keys)
        assert len(data.times_s) == 25
    finally:
        reader.close()


def test_a_store_that_failed_is_tried_again_though_the_clock_was_set_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk full, then freed, and the clock set back an hour: the writer waited for the clock
    to pass its next try (an hour), keeping the last hour in memory only, so that most was lost."""
    from dataclasses import replace

    samples = _samples("idle:gpus=h100", MIDNIGHT_S, 60)
    writer = StoreWriter(tmp_path)
    _on_a_full_disk(writer, samples[:20], monkeypatch)
    back = [replace(sample, timestamp_s=sample.timestamp_s - 3600.0) for sample in samples[20:]]
    for sample in back:
        writer.append(sample)
    assert writer.problem is None  # written again at the first flush after the step
    writer.close()
    reader = StoreReader(tmp_path)
    data = reader.fine(samples[0].devices[0].uuid, MIDNIGHT_S - 3700, MIDNIGHT_S + 100, GPU_LAYOUT.keys)
    assert len(data.times_s) == 60 and writer.lost == 0
    reader.close()


def test_an_unwritable_folder_keeps_running_and_writes_once_it_can(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the folder should be")
    folder = blocker / "history"
    samples = _samples("idle:gpus=h100", MIDNIGHT_S, 80)
    writer = StoreWriter(folder)
    for sample in samples[:30]:
        writer.append(sample)
    assert writer.problem is not None and "Not a directory" in writer.problem
    blocker.unlink()
    for sample in samples[30:]:
        writer.append(sample)
    assert writer.problem is None
    writer.close()
    reader = StoreReader(folder)
    assert len(reader.fine(samples[0].devices[0].uuid, MIDNIGHT_S - 1, MIDNIGHT_S + 100, GPU_LAYOUT.keys).times_s) == 80
    reader.close()


def test_a_second_writer_is_told_who_holds_the_store(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path)
    try:
        with pytest.raises(StoreLockedError, match=f"process {os.getpid()}"):
            StoreWriter(tmp_path)
        assert cli.main(["record", "--simulate", "idle", "--store", str(tmp_path), "--count", "1"]) == cli.EXIT_USAGE
    finally:
        writer.close()
    StoreWriter(tmp_path).close()  # free again once the first one is gone


def test_kill_9_of_a_recorder_loses_at_most_ten_seconds(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    command = [sys.executable, "-m", "trayvml", "record", "--simulate", "idle:gpus=h100*2", "--interval", "0.5"]
    process = subprocess.Popen([*command, "--store", str(tmp_path)], env=env, stderr=subprocess.DEVNULL)
    try:
        time.sleep(14)
    finally:
        killed_s = time.time()
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    reader = StoreReader(tmp_path)
    gpus = [d.uuid for d in reader.devices() if d.uuid != HOST_UUID]
    assert len(gpus) == 2
    for uuid in gpus:
        data = reader.fine(uuid, killed_s - 3600, killed_s, GPU_LAYOUT.keys)
        assert killed_s - data.times_s[-1] <= 10.0
        assert np.all(np.diff(data.times_s) > 0)
    reader.close()
    _write(tmp_path, _samples("idle:gpus=h100", killed_s + 5, 10))  # and the store takes writes again


def test_history_exports_log_columns_and_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    now = time.time()
    samples = _samples("training:gpus=h100*2", now - 120, 60)
    _write(tmp_path, samples)
    out = tmp_path / "out.csv"
    query = "timestamp,index,uuid,power.draw,pstate,fan.speed"
    assert (
        cli.main(
            ["history", "--store", str(tmp_path), "--since", "1h", "--gpu", "1", "--query", query, "--csv", str(out)]
        )
        == 0
    )
    lines = out.read_text().splitlines()
    assert lines[0] == "timestamp, index, uuid, power.draw [W], pstate, fan.speed [%]"
    assert len(lines) == 61 and all(line.split(", ")[1] == "1" for line in lines[1:])
    logged = [csvlog.rows(s, csvlog.parse_fields(query))[1] for s in samples]  # what `log` wrote at the time
    for got, want in zip(lines[1:], logged, strict=True):
        got_fields, want_fields = got.split(", "), want.split(", ")
        # Power is kept to the milliwatt: a value at x.xx5 may print one hundredth apart.
        assert got_fields[:3] + got_fields[4:] == want_fields[:3] + want_fields[4:]
        assert float(got_fields[3][:-2]) == pytest.approx(float(want_fields[3][:-2]), abs=0.0100001)
    capsys.readouterr()
    assert cli.main(["history", "--store", str(tmp_path), "--stats"]) == 0
    text = capsys.readouterr().out
    assert "devices:          2 GPUs and the host" in text
    assert f"samples:          {60 * 2 * len(GPU_METRICS):,}" in text
    assert "bytes per sample:" in text


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--since", "2x"], "is not a length of time"),
        (["--from", "yesterday"], "is not a date and time"),
        (["--from", "2027-01-02", "--to", "2027-01-01"], "--to is before --from"),
        (["--to", "2027-01-01"], "--to needs --from"),
        (["--query", "nonsense"], "Unknown field"),
    ],
)
def test_history_refuses_bad_input_in_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], said: str
) -> None:
    _write(tmp_path, _samples("idle:gpus=h100", MIDNIGHT_S, 10))
    assert cli.main(["history", "--store", str(tmp_path), *arguments]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and err.count("\n") == 1


def test_history_without_a_store_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["history", "--store", str(tmp_path / "none"), "--stats"]) == cli.EXIT_USAGE
    assert "No history in" in capsys.readouterr().err


def test_codec_refuses_a_damaged_payload() -> None:
    data, crc = codec.encode([np.arange(5)[None, :], np.ones((2, 5), dtype=np.int64)], 3)
    with pytest.raises(codec.DamagedBlockError):
        codec.decode(data, crc ^ 1, 2)


def test_codec_round_trips_every_integer_width_and_refuses_an_unknown_one() -> None:
    rows = 6
    times = np.arange(rows, dtype=np.int64)[None, :] * 60_000
    steps = np.array([0, 100, 30_000, 2**31 + 5, 2**40])[:, None]  # a constant, then 1-, 2-, 4- and 8-byte deltas
    values = np.cumsum(np.where(np.arange(rows) % 2, steps, -steps), axis=1)
    for matrices in ([times, values, values * 2, -values, values + 7], [times, *[np.empty((0, rows), np.int64)] * 4]):
        data, crc = codec.encode(matrices, 3)
        decoded = codec.decode(data, crc, len(matrices))
        assert len(decoded) == len(matrices)
        assert all(np.array_equal(a, b) for a, b in zip(decoded, matrices, strict=True))
    raw = codec._HEADER.pack(codec.FORMAT, 1, 1) + bytes([0, 0]) + bytes([9, 0])  # type code 9 does not exist
    data = codec.zstandard.ZstdCompressor().compress(raw)
    with pytest.raises(codec.DamagedBlockError, match="unknown integer type"):
        codec.decode(data, codec.zlib.crc32(data), 2)


def test_a_blocks_wanted_rows_are_those_rows_of_the_whole_block() -> None:
    """Rows of every integer width, in matrices whose columns mix the widths, asked for in any
    order and more than once: each the same as that row of the block decoded whole."""
    rng = np.random.default_rng(7)
    rows, columns = 9, 6
    times = np.arange(rows, dtype=np.int64)[None, :] * 60_000
    scales = np.array([0, 100, 30_000, 2**31 + 5, 2**40])
    matrices = [times] + [
        np.cumsum(rng.integers(-1, 2, (columns, rows)) * rng.choice(scales, columns)[:, None], axis=1)
        for _ in range(codec.COARSE_MATRICES - 1)
    ]
    data, crc = codec.encode(matrices, 3)
    whole = codec.decode_deltas(data, crc, codec.COARSE_MATRICES)
    assert np.array_equal(np.cumsum(whole, axis=1), np.concatenate(matrices))
    for wanted in (np.arange(len(whole)), rng.permutation(len(whole))[:7], np.array([0, 5, 5, 24, 1, 0, 13])):
        assert np.array_equal(codec.decode_deltas(data, crc, codec.COARSE_MATRICES, wanted), whole[wanted]), wanted
    # Narrow times (a block's rows a second apart), one column, no column (a process block can have none).
    for shape in ((codec.FINE_MATRICES, 1), (2, 0)):
        count, width = shape
        seconds = np.arange(rows, dtype=np.int64)[None, :] * 1000
        narrow = [seconds, *(rng.integers(-200, 200, (width, rows)) for _ in range(count - 1))]
        data, crc = codec.encode(narrow, 3)
        whole = codec.decode_deltas(data, crc, count)
        for wanted in (np.arange(len(whole)), np.array([0, 0]), np.array([], dtype=np.int64)):
            assert np.array_equal(codec.decode_deltas(data, crc, count, wanted), whole[wanted]), (shape, wanted)
    with pytest.raises(codec.DamagedBlockError, match="do not hold"):  # a layout wider than the block
        codec.decode_deltas(data, crc, 2, np.array([0, 1]))


def test_the_writers_encoder_without_numpy_writes_codecs_bytes() -> None:
    """fresh.encode (the tray's writer, pure Python) and codec.encode (numpy: the packer's) give the
    same bytes, for every integer width, negative deltas, rows that stay the same and empty matrices."""
    from trayvml.history.disk import fresh

    rng = np.random.default_rng(7)
    rows = 9
    times = np.arange(rows, dtype=np.int64)[None, :] * 1000 + 1_700_000_000_000
    for scale in (0, 100, 30_000, 2**31 + 5, 2**40, 2**62):
        values = rng.integers(-scale, scale + 1, size=(5, rows), dtype=np.int64) if scale else np.zeros((5, rows), int)
        steady = np.full((2, rows), scale, dtype=np.int64)  # rows the same all along: one step, then none
        for matrices in (
            [times, values, -values],
            [times, steady, -steady],
            [times, np.empty((0, rows), dtype=np.int64)],
        ):
            as_lists = [m.tolist() for m in matrices]
            assert fresh.encode(as_lists, 3) == codec.encode(matrices, 3), scale
            decoded = codec.decode(*fresh.encode(as_lists, 3), len(matrices))
            assert all(np.array_equal(a, b) for a, b in zip(decoded, matrices, strict=True))


def test_the_writer_keeps_values_as_steps_of_their_resolution_and_says_which_are_missing() -> None:
    from trayvml.history.disk import fresh

    nan, inf = math.nan, math.inf
    # The last column has every value (the writer's quick way); the others lack some or go past the bound.
    # The fifth has every value too, two of them past the bound, their sum within it.
    values = [
        (nan, 2.5, 0.125, 0.5, 5e18),
        (7.0, 3.5, -0.125, -2.5, 1.0),
        (nan, inf, 1e300, 1.5, -5e18),
        (1.0, nan, 0.015, 3.5, 0.5),
    ]
    states = [(0, 1, 2, 0, 0)] * len(values)
    times, steps, missing, kept_states = fresh.value_rows([1, 2, 3, 4], values, states, (1.0, 1.0, 0.01, 1.0, 1.0))
    assert times == [[1, 2, 3, 4]] and kept_states == [[0] * 4, [1] * 4, [2] * 4, [0] * 4, [0] * 4]
    # Half to even (as numpy's rint); a NaN repeats the value before it (the first: 0) and is
    # marked missing; an infinity is no value but not missing; a count past the bound is held at it.
    bound = fresh.STEPS_BOUND
    assert steps == [[0, 7, 7, 1], [2, 4, 0, 0], [12, -12, bound, 2], [0, -2, 2, 4], [bound, 1, -bound, 0]]
    assert missing == [[1, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]


def test_a_bucket_of_readings_past_the_writers_bound_reads_back_its_mean_within_its_min_and_max(
    tmp_path: Path,
) -> None:
    """A driver's garbage (1e300 % of SM activity) is kept at the writer's bound, 2**62 steps: a
    minute's sum of sixty of them is past int64's end, where numpy's sum wraps round, and read
    back a mean of -0.01 % between a min and max of 4.6e16 %. The sums are held at their bound
    and the mean within the bucket's min and max, minutes and ten minutes alike."""
    from trayvml.core.metrics import GPU_INDEX
    from trayvml.history.disk import fresh

    key = "utilization_gpu_percent"
    start_s = MIDNIGHT_S - 3600
    samples = _samples("training:gpus=h100", start_s, 600)
    junk = []
    for sample in samples:
        values = list(sample.gpus[0].values)
        values[GPU_INDEX[key]] = 1e300
        junk.append(replace(sample, gpus=(replace(sample.gpus[0], values=tuple(values)),)))
    _write(tmp_path, junk)
    _pack(tmp_path, MIDNIGHT_S)
    kept = fresh.STEPS_BOUND / 100  # the bound's steps of 0.01 %
    reader = StoreReader(tmp_path)
    try:
        for step_s, buckets in ((60.0, 10), (600.0, 1)):
            data = reader.coarse(samples[0].devices[0].uuid, start_s, start_s + 599, step_s, (key,), fresh=False)
            assert data.step_s == step_s and data.count[:, 0].tolist() == [600 // buckets] * buckets
            assert np.allclose(data.low[:, 0], kept) and np.allclose(data.high[:, 0], kept)
            assert np.allclose(data.mean[:, 0], kept), step_s
    finally:
        reader.close()


def test_a_minute_without_readings_gives_its_ten_minutes_no_min_or_max(tmp_path: Path) -> None:
    """A minute a GPU read nothing (asleep, say) is an empty bucket, kept with a min and max of 0:
    merged into ten minutes (the wide tier, a read of two minutes a bucket), they were taken for
    values, and the ten minutes' min temperature read 0 °C."""
    from trayvml.core.metrics import GPU_INDEX

    key = "temperature_gpu_c"
    start_s = MIDNIGHT_S - 3600
    samples = _samples("training:gpus=h100", start_s, 600)
    nothing = tuple(math.nan for _ in samples[0].gpus[0].values)
    samples[300:360] = [replace(s, gpus=(replace(s.gpus[0], values=nothing),)) for s in samples[300:360]]
    _write(tmp_path, samples)
    _pack(tmp_path, MIDNIGHT_S)
    temperatures = np.array([s.gpus[0].values[GPU_INDEX[key]] for s in samples])
    assert np.nanmin(temperatures) > 0
    reader = StoreReader(tmp_path)
    try:
        for step_s in (120.0, 600.0):
            data = reader.coarse(samples[0].devices[0].uuid, start_s, start_s + 599, step_s, (key,), fresh=False)
            per_bucket = temperatures.reshape(len(data.times_s), -1)
            assert np.allclose(data.low[:, 0], np.nanmin(per_bucket, axis=1)), step_s
            assert np.allclose(data.high[:, 0], np.nanmax(per_bucket, axis=1)), step_s
    finally:
        reader.close()


def test_a_read_across_the_hourly_packing_sees_the_store_as_it_stood(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The packer committing between a read's listing of blocks and the read of their data: the
    blocks listed were gone (five hours read as nothing for that redraw), and ids used again by the
    packer's new blocks were read as those, their checksums said not to match ("a damaged block of
    history was skipped", of blocks that were whole)."""
    from trayvml.history.disk import pack, write

    def refused(*_: object) -> subprocess.Popen[bytes]:
        raise OSError("not now")

    monkeypatch.setattr(write, "start_packer", refused)  # packed here, when the test says
    start_s = MIDNIGHT_S - 5 * 3600
    samples = _samples("idle:gpus=h100", start_s, 1800, step_s=10.0)
    _write(tmp_path, samples)
    _pack(tmp_path, MIDNIGHT_S - 3600)  # four hours packed, the fifth fresh
    real = Database.with_data
    packed: list[bool] = []

    def packer_between(self: Database, blocks: list[Block]) -> list[Block]:
        if not packed:
            packed.append(True)
            other = Database(tmp_path)
            try:
                assert pack.pack(other, round(MIDNIGHT_S * 1000), None)  # the fifth hour: new blocks for old
            finally:
                other.close()
        return real(self, blocks)

    monkeypatch.setattr(Database, "with_data", packer_between)
    reader = StoreReader(tmp_path)
    try:
        with caplog.at_level(logging.WARNING):
            data = reader.coarse(samples[0].devices[0].uuid, start_s, MIDNIGHT_S - 1, 600.0, GPU_LAYOUT.keys)
        assert packed and int(data.recorded.sum()) == 30
        assert "damaged" not in caplog.text
        again = reader.coarse(samples[0].devices[0].uuid, start_s, MIDNIGHT_S - 1, 600.0, GPU_LAYOUT.keys)
        # The store after the packing: the same (to a float's rounding: the fifth hour summed from its minutes).
        assert np.allclose(again.mean, data.mean, equal_nan=True, rtol=1e-12, atol=1e-9)
    finally:
        reader.close()


def test_a_delta_of_two_to_the_63_between_sums_is_kept_in_eight_bytes() -> None:
    """A small sum followed by one held at the negative bound: their delta is -2**63, whose int64
    magnitude is itself (negative); taken for a small delta, it was kept in two bytes and read back
    as 0."""
    from trayvml.history.disk.blocks import SUM_BOUND

    matrices = [np.array([[0, 60_000]], dtype=np.int64), np.array([[1024, -SUM_BOUND]], dtype=np.int64)]
    decoded = codec.decode(*codec.encode(matrices, 3), len(matrices))
    assert np.array_equal(decoded[1], matrices[1])


DAY_S = 86400.0  # MIDNIGHT_S begins a Wednesday, the last day of a wide block's week (from Thursdays)


def _wide_blocks(folder: Path, uuid: str) -> list[tuple[int, int]]:
    """The device's wide blocks as (first, last) bucket days."""
    db = Database(folder, read_only=True)
    try:
        device = next(d.id for d in db.devices() if d.uuid == uuid)
        return [(b.start_ms // 86_400_000, b.end_ms // 86_400_000) for b in db.blocks(device, (Tier.WIDE,), 0, 2**62)]
    finally:
        db.close()


def _wide_as_minutes(folder: Path, uuid: str, start_s: float, end_s: float) -> int:
    """The 10-minute buckets a read of [start_s, end_s) gets (from the wide tier) compared with its
    minutes (the coarse tier) folded to 10 minutes; returns how many hold anything."""
    reader = StoreReader(folder)
    wide = reader.coarse(uuid, start_s, end_s - 1, 600.0, GPU_LAYOUT.keys, fresh=False)
    minutes = reader.coarse(uuid, start_s, end_s - 1, 60.0, GPU_LAYOUT.keys, fresh=False)
    reader.close()
    tens = len(wide.times_s)
    assert wide.step_s == 600.0 and len(minutes.times_s) == 10 * tens
    count = minutes.count.reshape(tens, 10, -1)
    assert np.array_equal(wide.count, count.sum(axis=1))
    assert np.array_equal(wide.low, np.fmin.reduce(minutes.low.reshape(tens, 10, -1), axis=1), equal_nan=True)
    assert np.array_equal(wide.high, np.fmax.reduce(minutes.high.reshape(tens, 10, -1), axis=1), equal_nan=True)
    total = np.where(count > 0, minutes.mean.reshape(tens, 10, -1), 0.0) * count
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total.sum(axis=1) / count.sum(axis=1)
    assert np.allclose(wide.mean, mean, equal_nan=True, rtol=1e-9, atol=1e-9)
    return int(wide.recorded.sum())


def _split_by_day(folder: Path, uuid: str) -> None:
    """The device's first wide block made a block a day, as a store packed before weeks holds them."""
    db = Database(folder)
    device = next(d.id for d in db.devices() if d.uuid == uuid)
    block = db.blocks(device, (Tier.WIDE,), 0, 2**62)[0]
    matrices = codec.decode(block.data, block.crc, codec.COARSE_MATRICES)
    days = matrices[0][0] // 86_400_000
    with db.transaction():
        db.delete([block.id])
        for day in np.unique(days).tolist():
            part = [m[:, days == day] for m in matrices]
            data, crc = codec.encode(part, 12)
            db.insert(
                device, Tier.WIDE, int(part[0][0][0]), int(part[0][0][-1]), part[0].shape[1], block.layout, data, crc
            )
    db.close()


def test_the_wide_buckets_are_one_block_a_device_a_week_read_as_their_minutes_are(tmp_path: Path) -> None:
    """A week's view reads each device's week from one block (a block a day was eight, each with a
    cost of its own). Each hour packed makes its week's block anew: the day's buckets replaced (not
    added twice), the other days kept, a day with minutes only (a store packed before the wide
    tier) put in, the days' blocks of a store packed before weeks joined; rows past midnight in the
    last block of a day's last hour stay the next day's."""
    uuid = _samples("training:gpus=h100", 0.0, 1)[0].devices[0].uuid
    monday, tuesday = MIDNIGHT_S - 2 * DAY_S + 36000, MIDNIGHT_S - DAY_S + 36000  # 10:00
    for start_s in (monday, tuesday):
        _write(tmp_path, _samples("training:gpus=h100", start_s, 60))
    db = Database(tmp_path)
    db.connection.execute("DELETE FROM blocks WHERE tier = ?", (int(Tier.WIDE),))  # Monday: minutes only
    db.close()
    _write(tmp_path, _samples("training:gpus=h100", tuesday + 3600, 60))  # Tuesday's 10:00 packed
    day = int(monday // DAY_S)
    assert _wide_blocks(tmp_path, uuid) == [(day, day + 1)]
    span = (MIDNIGHT_S - 3 * DAY_S, MIDNIGHT_S + 3 * DAY_S)
    assert _wide_as_minutes(tmp_path, uuid, *span) == 2  # Monday, Tuesday 10:00
    _split_by_day(tmp_path, uuid)
    assert _wide_blocks(tmp_path, uuid) == [(day, day), (day + 1, day + 1)]
    assert _wide_as_minutes(tmp_path, uuid, *span) == 2
    # Tuesday 23:59:30 to Wednesday 0:00:29 (Tuesday's 11:00 packed); Thursday (a week from it);
    # Friday, when Wednesday's first rows are packed.
    for start_s in (MIDNIGHT_S - 30, MIDNIGHT_S + DAY_S + 36000, MIDNIGHT_S + 2 * DAY_S + 36000):
        _write(tmp_path, _samples("training:gpus=h100", start_s, 60))
    assert _wide_blocks(tmp_path, uuid) == [(day, day + 2), (day + 3, day + 3)]  # Friday not packed yet
    assert (
        _wide_as_minutes(tmp_path, uuid, *span) == 6
    )  # Monday, Tuesday 10:00, 11:00 and 23:50, Wednesday 0:00, Thursday


def test_a_damaged_weeks_block_is_read_from_its_days_minutes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A week's wide block that does not decode loses none of its days' 10-minute buckets while their
    minutes are kept: they are folded from the minutes instead, and the damage is said once."""
    uuid = _samples("training:gpus=h100", 0.0, 1)[0].devices[0].uuid
    monday, tuesday = MIDNIGHT_S - 2 * DAY_S + 36000, MIDNIGHT_S - DAY_S + 36000  # 10:00
    for start_s in (monday, tuesday, tuesday + 3600):  # the last packs Tuesday 10:00
        _write(tmp_path, _samples("training:gpus=h100", start_s, 60))
    db = Database(tmp_path)
    (block_id, data), *others = db.connection.execute(
        "SELECT id, data FROM blocks WHERE tier = ?", (int(Tier.WIDE),)
    ).fetchall()
    assert not others
    db.connection.execute(
        "UPDATE blocks SET data = ? WHERE id = ?", (data[:5] + bytes([data[5] ^ 0xFF]) + data[6:], block_id)
    )
    db.close()
    span = (MIDNIGHT_S - 3 * DAY_S, MIDNIGHT_S + DAY_S)
    with caplog.at_level(logging.WARNING):
        assert _wide_as_minutes(tmp_path, uuid, *span) == 2  # Monday and Tuesday 10:00, from their minutes
        reader = StoreReader(tmp_path)
        for _ in range(2):  # read again by the same reader, which knows the block is damaged
            again = reader.coarse(uuid, span[0], span[1] - 1, 600.0, GPU_LAYOUT.keys, fresh=False)
            assert int(again.recorded.sum()) == 2
        kept = [block for key in reader._buckets for block, _ in key[0]]
        assert kept and block_id not in kept  # no fold that went without it is kept (nor read)
        reader.close()
    assert sum("damaged block" in r.message for r in caplog.records) == 1


def test_a_weeks_wide_block_keeps_no_day_past_the_minutes_span(tmp_path: Path) -> None:
    """The days wholly before the minutes' span go from a week's wide block that reaches past it
    (as they go with a day's minutes), not a week later with the whole block; the day the span
    begins in stays."""
    uuid = _samples("training:gpus=h100", 0.0, 1)[0].devices[0].uuid
    friday, saturday = MIDNIGHT_S - 5 * DAY_S + 36000, MIDNIGHT_S - 4 * DAY_S + 28800  # one week, from Thursday
    limits = Limits(coarse_span_s=2 * DAY_S)
    # Friday 10:00, Saturday 8:00 and 10:00; the last on Monday at 9:00, when Saturday 10:00 is packed.
    for start_s in (friday, saturday, saturday + 7200, saturday + 2 * DAY_S + 3600):
        _write(tmp_path, _samples("training:gpus=h100", start_s, 60), limits)
    # The packer was handed the span, from Saturday 9:00: Friday is over before it, Saturday not.
    assert _wide_blocks(tmp_path, uuid) == [(int(saturday // DAY_S), int(saturday // DAY_S))]
    reader = StoreReader(tmp_path)
    kept = reader.coarse(uuid, saturday - 2 * DAY_S, saturday + 7799, 600.0, GPU_LAYOUT.keys, fresh=False)
    reader.close()
    assert kept.times_s[kept.recorded].tolist() == [saturday, saturday + 7200]  # the day's minutes, whole
    assert kept.count.max(axis=1)[kept.recorded].tolist() == [60, 60]


def test_a_coarse_read_fetches_only_the_blocks_it_uses_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = _samples("training:gpus=h100", MIDNIGHT_S - 150, 300)
    _write(tmp_path, samples)
    fetched: list[tuple[int, int]] = []
    with_data = Database.with_data

    def counting(db: Database, blocks: list[Block]) -> list[Block]:
        fetched.extend((b.id, int(b.tier)) for b in blocks)
        return with_data(db, blocks)

    monkeypatch.setattr(Database, "with_data", counting)
    reader = StoreReader(tmp_path)
    uuid = samples[0].devices[0].uuid
    day_before = (MIDNIGHT_S - 3600, MIDNIGHT_S - 1)
    wide = reader.coarse(uuid, *day_before, 600.0, GPU_LAYOUT.keys, fresh=False)
    # The day before midnight has a coarse and a wide block: at 10 minutes only the wide one is read.
    assert [tier for _, tier in fetched] == [int(Tier.WIDE)]
    assert wide.recorded.sum() == 1  # the 150 s before midnight, in the last 10-minute bucket
    again = reader.coarse(uuid, *day_before, 600.0, GPU_LAYOUT.keys, fresh=False)
    assert len(fetched) == 1  # decoded before: not read again
    assert np.array_equal(again.count, wide.count)
    reader.coarse(uuid, *day_before, 60.0, GPU_LAYOUT.keys, fresh=False)
    assert [tier for _, tier in fetched] == [int(Tier.WIDE), int(Tier.COARSE)]
    # Dropped from the reader's buckets, the blocks are read again, to the same buckets.
    reader._buckets.clear()
    reread = reader.coarse(uuid, *day_before, 600.0, GPU_LAYOUT.keys, fresh=False)
    assert [tier for _, tier in fetched] == [int(Tier.WIDE), int(Tier.COARSE), int(Tier.WIDE)]
    assert np.array_equal(reread.count, wide.count) and np.array_equal(reread.mean, wide.mean, equal_nan=True)
    reader.close()


def test_old_data_goes_by_age_then_by_size(tmp_path: Path) -> None:
    samples = _samples("training:gpus=h100", MIDNIGHT_S, 3 * 3600 + 700)
    # The machine was off for days (a writer prunes first PRUNE_EVERY_S after it began).
    later = _samples("training:gpus=h100", MIDNIGHT_S + 3 * 86400, int(PRUNE_EVERY_S) + 20)
    limits = Limits(fine_span_s=3600.0, coarse_span_s=2 * 86400.0, size_cap_bytes=2**30)
    writer = StoreWriter(tmp_path / "age", limits)
    for sample in samples:
        writer.append(sample)
    writer.close()
    reader = StoreReader(tmp_path / "age")
    uuid = samples[0].devices[0].uuid
    fine = reader.fine(uuid, MIDNIGHT_S, MIDNIGHT_S + 4 * 3600, GPU_LAYOUT.keys)
    assert fine.times_s[0] >= MIDNIGHT_S + 3600  # seconds older than an hour (a whole packed hour) are gone
    coarse = reader.coarse(uuid, MIDNIGHT_S, MIDNIGHT_S + 4 * 3600, 60.0, GPU_LAYOUT.keys)
    assert coarse.times_s[coarse.recorded][0] == MIDNIGHT_S  # the minutes reach further back
    reader.close()
    writer = StoreWriter(tmp_path / "age", limits)
    for sample in later:
        writer.append(sample)
    writer.close()
    reader = StoreReader(tmp_path / "age")
    coarse = reader.coarse(uuid, MIDNIGHT_S, MIDNIGHT_S + 4 * 3600, 60.0, GPU_LAYOUT.keys)
    assert not coarse.recorded.any()  # three days on, that day's minutes are past their 2 days
    reader.close()

    writer = StoreWriter(tmp_path / "size", Limits(size_cap_bytes=150_000))
    for sample in samples:
        writer.append(sample)
    writer.close()
    db = Database(tmp_path / "size")
    # Over the cap by at most one packed hour (none where a packer starved by a busy machine had
    # not packed one when the writer closed: its fresh blocks are then pruned as they come).
    assert db.data_bytes() <= 150_000 + max(
        (size for (size,) in db.connection.execute("SELECT LENGTH(data) FROM blocks WHERE tier = 1")), default=0
    )
    db.close()
    reader = StoreReader(tmp_path / "size")
    newest = reader.fine(uuid, MIDNIGHT_S, MIDNIGHT_S + 4 * 3600, GPU_LAYOUT.keys)
    assert newest.times_s[-1] == samples[-1].timestamp_s  # the newest seconds stay
    assert newest.times_s[0] > MIDNIGHT_S  # the oldest went
    reader.close()


def test_a_clock_hours_ahead_at_boot_prunes_nothing_by_the_time_it_said(tmp_path: Path) -> None:
    """A dual-boot machine's clock eight hours ahead for the first minute, then set right by NTP:
    the writer pruned at its first write by the time the clock said, and the last hour of seconds
    (an hour's span here) went eight hours early."""
    from dataclasses import replace

    limits = Limits(fine_span_s=3600.0)
    _write(tmp_path, _samples("idle:gpus=h100", MIDNIGHT_S - 3600, 3600), limits)
    after = _samples("idle:gpus=h100", MIDNIGHT_S, int(PRUNE_EVERY_S) + 60)
    ahead = [replace(s, timestamp_s=s.timestamp_s + 8 * 3600) for s in after[:60]]
    _write(tmp_path, ahead + after[60:], limits)
    reader = StoreReader(tmp_path)
    kept = reader.fine(after[0].devices[0].uuid, MIDNIGHT_S - 3600, MIDNIGHT_S, GPU_LAYOUT.keys)
    assert len(kept.times_s) == 3600  # the hour before: still within an hour of the right time
    reader.close()


def test_a_clock_set_hours_ahead_for_a_minute_while_writing_prunes_nothing_by_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wall clock set two hours ahead for a minute while the writer runs (a mistyped date),
    then set right: the writer pruned by the time it said, and the hour of seconds before (an
    hour's span here) went. The samples' boot-time clock said a minute passed; with a week's span,
    a clock eight days ahead emptied the store."""
    from dataclasses import replace

    from trayvml.history.disk import write

    packers: list[tuple[int, int]] = []  # (now_ms, keep_ms) of each packer the writer starts

    def refused(_folder: Path, now_ms: int, keep_ms: int, _lock_fd: int) -> subprocess.Popen[bytes]:
        packers.append((now_ms, keep_ms))
        raise OSError("not now")

    limits = Limits(fine_span_s=3600.0)
    before = _samples("idle:gpus=h100", MIDNIGHT_S - 3600, 3600)
    _write(tmp_path, before, limits)
    _pack(tmp_path, MIDNIGHT_S)  # the hour before made seconds (fine), as a packer makes it
    # No packer from here on: the writer prunes only while none runs, and one would run for as long
    # as it takes here, not as on a machine, where it is long over by the time the clock is set.
    monkeypatch.setattr(write, "start_packer", refused)
    # A writer of its own, which has pruned once (at PRUNE_EVERY_S) before the clock is set ahead.
    after = _samples("idle:gpus=h100", MIDNIGHT_S, 2 * int(PRUNE_EVERY_S) + 120)
    steady, rest = after[: int(PRUNE_EVERY_S) + 60], after[int(PRUNE_EVERY_S) + 120 :]
    ahead = [replace(s, timestamp_s=s.timestamp_s + 2 * 3600) for s in after[int(PRUNE_EVERY_S) + 60 : -len(rest)]]
    _write(tmp_path, steady + ahead + rest, limits)
    reader = StoreReader(tmp_path)
    try:
        uuid = before[0].devices[0].uuid
        kept = reader.fine(uuid, MIDNIGHT_S - 3600, MIDNIGHT_S - 1, GPU_LAYOUT.keys)
        assert len(kept.times_s) == 3600  # the hour before: within an hour of the right time throughout
        written = reader.fine(uuid, MIDNIGHT_S, MIDNIGHT_S + 3 * 3600, GPU_LAYOUT.keys)
        assert len(written.times_s) == len(after)  # the minute ahead kept at the time it was stamped
    finally:
        reader.close()
    # The hours are packed by the wall clock (the hour ahead's one started a packer), but the
    # minutes' span a packer keeps of the wide blocks ends no later than the time that passed.
    assert any(now_ms > (MIDNIGHT_S + 3600) * 1000 for now_ms, _ in packers)
    latest_ms = round((MIDNIGHT_S + len(after)) * 1000)
    assert all(now_ms - keep_ms <= latest_ms - limits.coarse_span_s * 1000 for now_ms, keep_ms in packers)


def test_a_file_that_is_not_a_store_is_moved_aside(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "history.sqlite3").write_bytes(b"not a database " * 100)
    assert cli.main(["history", "--store", str(tmp_path), "--stats"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "Cannot read the history" in err and "Traceback" not in err
    samples = _samples("idle:gpus=h100", MIDNIGHT_S, 20)
    _write(tmp_path, samples)  # the writer keeps the damaged file aside and begins anew
    aside = list(tmp_path.glob("history.sqlite3.damaged-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"not a database")
    reader = StoreReader(tmp_path)
    assert len(reader.fine(samples[0].devices[0].uuid, MIDNIGHT_S - 1, MIDNIGHT_S + 30, GPU_LAYOUT.keys).times_s) == 20
    reader.close()


def test_a_store_damaged_inside_is_moved_aside_when_a_write_finds_it(tmp_path: Path) -> None:
    """A store whose header is whole and a table damaged opens, and then every write fails
    ("database disk image is malformed"): the writer tried again every 30 s for good, kept an hour
    in memory and dropped the rest, and never began anew as it does with a file it cannot open."""
    first = _samples("idle:gpus=h100", MIDNIGHT_S, 30)
    _write(tmp_path, first)
    path = tmp_path / "history.sqlite3"
    connection = sqlite3.connect(path)
    try:
        root, page_bytes = (
            connection.execute("SELECT rootpage FROM sqlite_master WHERE name = 'blocks'").fetchone()[0],
            connection.execute("PRAGMA page_size").fetchone()[0],
        )
    finally:
        connection.close()
    with open(path, "r+b") as store:  # the blocks table's root page, its b-tree header overwritten
        store.seek((root - 1) * page_bytes)
        store.write(b"\xff" * 64)
    later = _samples("idle:gpus=h100", MIDNIGHT_S + 60, 30)
    writer = StoreWriter(tmp_path)
    try:
        assert writer.problem is None  # it opens
        for sample in later:
            writer.append(sample)
        writer.flush()
        assert writer.problem is None and writer.saved == len(later)
    finally:
        writer.close()
    aside = list(tmp_path.glob("history.sqlite3.damaged-*"))
    assert len(aside) == 1 and aside[0].stat().st_size > 0
    reader = StoreReader(tmp_path)
    try:
        kept = reader.fine(later[0].devices[0].uuid, MIDNIGHT_S - 1, MIDNIGHT_S + 120, GPU_LAYOUT.keys)
        assert kept.times_s.tolist() == [s.timestamp_s for s in later]  # the new store: the samples after
    finally:
        reader.close()


def _moved_aside(folder: Path) -> None:
    """The store moved aside as StoreWriter._move_aside moves it: the file and its WAL and index."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.replace(folder / f"history.sqlite3{suffix}", folder / f"history.sqlite3.damaged-1{suffix}")


def test_an_open_reader_follows_a_store_moved_aside_and_begun_anew(tmp_path: Path) -> None:
    """The window's reader, open on a store its writer then moved aside as damaged and began
    anew, went on reading the old one: its hours frozen, the new ones never shown."""
    first = _samples("idle:gpus=h100", MIDNIGHT_S, 30)
    _write(tmp_path, first)
    uuid = first[0].devices[0].uuid
    reader = StoreReader(tmp_path)
    try:
        before = reader.fine(uuid, MIDNIGHT_S - 1, MIDNIGHT_S + 200, GPU_LAYOUT.keys)
        assert len(before.times_s) == 30
        _moved_aside(tmp_path)
        later = _samples("idle:gpus=h100", MIDNIGHT_S + 100, 20)
        _write(tmp_path, later)
        after = reader.fine(uuid, MIDNIGHT_S - 1, MIDNIGHT_S + 200, GPU_LAYOUT.keys)
        assert after.times_s.tolist() == [s.timestamp_s for s in later]
    finally:
        reader.close()


def test_the_windows_process_history_follows_a_store_moved_aside_too(tmp_path: Path) -> None:
    """The process tables were read through a connection of their own, opened once: after the
    store was moved aside and begun anew, the window's process lines stayed the old file's."""
    from trayvml.history.timeline import DiskReach

    first = _samples("training:gpus=h100", MIDNIGHT_S, 120)
    _write(tmp_path, first)
    disk = DiskReach(tmp_path)
    disk.uuids = (first[0].devices[0].uuid,)
    try:
        _, _, before = disk.process_lines(MIDNIGHT_S - 60, MIDNIGHT_S + 600, 500)
        assert before
        _moved_aside(tmp_path)
        _write(tmp_path, _samples("idle:gpus=h100", MIDNIGHT_S + 300, 30))  # no processes in the new one
        _, _, after = disk.process_lines(MIDNIGHT_S - 120, MIDNIGHT_S + 660, 500)  # another range: read anew
        assert after == []
    finally:
        disk.close()


def test_simulated_gpus_keep_a_history_of_their_own(capsys: pytest.CaptureFixture[str]) -> None:
    from trayvml.history import default_folder

    real, simulated = default_folder(), default_folder(simulated=True)
    assert real != simulated and real.parent == simulated.parent  # both in this run's own state folder
    _write(simulated, _samples("training:gpus=h100", time.time() - 120, 30))
    assert cli.main(["history", "--simulate", "--stats"]) == 0
    assert "samples:" in capsys.readouterr().out  # --simulate reads the simulated GPUs' store
    assert cli.main(["history", "--stats"]) != 0  # the real GPUs' history is untouched: none yet
    assert not (real / "history.sqlite").exists()


def test_a_deleted_write_ahead_log_is_noticed_and_nothing_is_lost(tmp_path: Path) -> None:
    samples = _samples("idle:gpus=h100", MIDNIGHT_S, 40)
    uuid = samples[0].devices[0].uuid
    writer = StoreWriter(tmp_path)
    try:
        for sample in samples[:20]:
            writer.append(sample)
        writer.flush()
        for suffix in ("-wal", "-shm"):  # a cleaner, or a user, deleting "temporary" files
            (tmp_path / f"history.sqlite3{suffix}").unlink()
        for sample in samples[20:]:
            writer.append(sample)
        writer.flush()
        # The writer still runs (or was killed now): a new reader sees every sample.
        reader = StoreReader(tmp_path)
        times = reader.fine(uuid, MIDNIGHT_S - 1, MIDNIGHT_S + 60, GPU_LAYOUT.keys).times_s
        reader.close()
        assert len(times) == 40
        assert (tmp_path / "history.sqlite3-wal").exists()  # writing to a log readers can see again
    finally:
        writer.close()


def test_buckets_held_by_blocks_of_two_layouts_are_added_up(tmp_path: Path) -> None:
    """A minute in two blocks (the metrics a device reports changed within it): counts and sums
    added, min of the mins, max of the maxes, each key by name; a key a layout lacks counts nothing."""
    from trayvml.history.disk.db import Layout

    t = int(MIDNIGHT_S * 1000)
    db = Database(tmp_path)
    with db.transaction():
        device = db.device_id("GPU-x", {"name": "x", "index": 0})
        first = db.layout_id(Layout(("a", "b"), (1.0, 0.5)))
        second = db.layout_id(Layout(("b", "a", "c"), (0.5, 1.0, 1.0)))
        for layout, times, matrices in (
            # count, min, max, sum of a and b (b at 0.5: integers are halves)
            (first, [t, t + 60_000], [[[2, 1], [2, 0]], [[1, 5], [20, 0]], [[3, 5], [24, 0]], [[4, 5], [44, 0]]]),
            (
                second,
                [t + 60_000, t + 120_000],
                [
                    [[1, 1], [1, 3], [1, 1]],
                    [[8, 2], [4, 0], [7, 7]],
                    [[8, 2], [4, 6], [7, 7]],
                    [[8, 2], [4, 9], [7, 7]],
                ],
            ),
        ):
            blob, crc = codec.encode([np.array([times]), *(np.array(m) for m in matrices)], 3)
            db.insert(device, Tier.COARSE, times[0], times[-1], 2, layout, blob, crc)
    db.close()
    reader = StoreReader(tmp_path)
    data = reader.coarse("GPU-x", MIDNIGHT_S, MIDNIGHT_S + 179, 60.0, ("a", "b", "c", "d"), fresh=False)
    reader.close()
    nan = np.nan
    assert data.count.tolist() == [[2, 2, 0, 0], [2, 1, 1, 0], [3, 1, 1, 0]]
    assert np.array_equal(data.low, [[1, 10, nan, nan], [4, 4, 7, nan], [0, 1, 7, nan]], equal_nan=True)
    assert np.array_equal(data.high, [[3, 12, nan, nan], [5, 4, 7, nan], [6, 1, 7, nan]], equal_nan=True)
    assert np.array_equal(data.mean, [[2, 11, nan, nan], [4.5, 4, 7, nan], [3, 1, 7, nan]], equal_nan=True)


def test_a_packer_whose_hour_changed_under_it_is_followed_by_another_at_the_next_flush(tmp_path: Path) -> None:
    from trayvml.history.disk.write import PACKER_AGAIN

    writer = StoreWriter(tmp_path)
    again = subprocess.Popen([sys.executable, "-c", f"raise SystemExit({PACKER_AGAIN})"])
    again.wait(30)
    writer._packer, writer._packed_hour = again, 7
    try:
        assert writer._packer_done() and writer._packer is None
        assert writer._packed_hour == -1  # not at the next hour: the next flush starts one
    finally:
        writer.close()


@contextlib.contextmanager
def _recording(folder: Path, spec: str, *options: str, before: tuple[str, ...] = ()) -> Iterator[subprocess.Popen[str]]:
    """`trayvml record` of simulated GPUs into ``folder`` every 0.5 s, its stderr piped; ended
    (killed) on the way out if it has not ended by then."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    command = [*before, sys.executable, "-m", "trayvml", "record", "--simulate", spec, "--interval", "0.5", *options]
    process = subprocess.Popen(
        [*command, "--store", str(folder)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)


def test_a_recorder_says_a_stuck_driver_once_and_stops_cleanly_on_sighup(tmp_path: Path) -> None:
    """An SSH session that drops sends SIGHUP: the recorder died without flushing (its last
    seconds lost, no summary). And a stuck driver was said again at every tick, its seconds
    counted up, one journal line a second for as long as it lasted."""
    spec = "idle:gpus=h100,hang=nvmlDeviceGetUtilizationRates@1"
    with _recording(tmp_path, spec, "--timeout", "0.5") as process:
        time.sleep(5)  # stuck from 1 s on
        process.send_signal(signal.SIGHUP)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert sum("has not answered" in line for line in err.splitlines()) == 1, err
    assert err.rstrip().splitlines()[-1].endswith("samples recorded"), err


def test_a_recorder_started_under_nohup_keeps_recording_through_a_sighup(tmp_path: Path) -> None:
    """Started with SIGHUP ignored (nohup, to outlive the session): the handler put over it
    stopped the recorder at the first SIGHUP anyway."""
    with _recording(tmp_path, "idle:gpus=h100", before=("nohup",)) as process:
        assert process.stderr is not None
        assert "recording to" in process.stderr.readline()
        process.send_signal(signal.SIGHUP)
        time.sleep(1.5)
        assert process.poll() is None  # still recording
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0 and err.rstrip().endswith("samples recorded"), err
