"""GPU processes in the history on disk: written with the GPUs, read back per process (a PID reused
by a later process is another one), the biggest N a GPU kept, pruned with the rest; exported by
`trayvml history --processes`; drawn by the window's process panels from disk."""

from __future__ import annotations

import csv
import math
import shutil
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.test_store import MIDNIGHT_S, _samples, _write
from trayvml import cli
from trayvml.core.clock import epoch_ms
from trayvml.core.sample import Attribution, ProcessSample, Sample
from trayvml.core.units import GIB, MIB
from trayvml.history.disk import pending, processes
from trayvml.history.disk.db import DAY_MS, Database, Tier
from trayvml.history.disk.limits import Limits
from trayvml.history.disk.write import prune

SPEC = "processes:gpus=h100*2,seed=3"


def _with(sample: Sample, t_s: float, by_gpu: dict[int, list[ProcessSample]]) -> Sample:
    gpus = tuple(replace(g, processes=tuple(by_gpu.get(g.index, ()))) for g in sample.gpus)
    return replace(sample, timestamp_s=t_s, gpus=gpus)


def _process(gpu: int, pid: int, memory_bytes: float, sm: float = math.nan, **more: object) -> ProcessSample:
    return ProcessSample(gpu, pid, "compute", memory_bytes, sm_util_percent=sm, **more)  # type: ignore[arg-type]


def test_every_process_sample_reads_back_with_its_name_user_and_job(tmp_path: Path) -> None:
    samples = _samples(SPEC, MIDNIGHT_S - 1800, 3600)  # across an hour (packed) and a day boundary
    _write(tmp_path, samples)
    db = Database(tmp_path, read_only=True)
    try:
        for gpu in range(2):
            uuid = samples[0].devices[gpu].uuid
            expected = {
                (epoch_ms(s.timestamp_s), p.pid, round(p.used_memory_bytes / MIB), round(p.sm_util_percent))
                for s in samples
                for p in s.gpus[gpu].processes
            }
            assert expected  # the scenario runs processes on each GPU
            rows = list(processes.rows(db, uuid, MIDNIGHT_S - 1800, MIDNIGHT_S + 1800))
            got = {(epoch_ms(r.t_s), r.process.pid, round(r.memory_bytes / MIB), round(r.sm_percent)) for r in rows}
            assert got == expected and all(r.interval_s == 0 for r in rows)
            assert [r.t_s for r in rows] == sorted(r.t_s for r in rows)
            named = {(p.pid, p.name, p.user) for s in samples for p in s.gpus[gpu].processes}
            assert {(r.process.pid, r.process.name, r.process.user) for r in rows} == named
            assert {(r.process.job_kind, r.process.job) for r in rows} == {("pid", str(pid)) for pid, _, _ in named}
        # The hour that is over is packed into its every-sample and per-minute blocks.
        tiers = {Tier(t) for (t,) in db.connection.execute("SELECT tier FROM process_blocks")}
        assert {Tier.FINE, Tier.COARSE, Tier.FRESH} <= tiers
        # Per minute, over the packed hour: each bucket's mean is the mean of the samples in it.
        uuid = samples[0].devices[0].uuid
        found = processes.series(db, uuid, MIDNIGHT_S - 1800, MIDNIGHT_S - 1, 60.0)
        assert found
        line = found[0]
        k = int(np.flatnonzero(np.isfinite(line.sm_percent))[0])
        start = line.times_s[k]
        inside = [
            p.sm_util_percent
            for s in samples
            if start <= s.timestamp_s < start + 60
            for p in s.gpus[0].processes
            if p.pid == line.process.pid
        ]
        assert line.sm_percent[k] == pytest.approx(np.mean(np.round(inside)), abs=0.01)
    finally:
        db.close()


def test_a_later_process_with_the_same_pid_is_another_series_and_its_job_is_kept(tmp_path: Path) -> None:
    base = _samples("idle:gpus=h100", MIDNIGHT_S, 1)[0]
    notebook = Attribution(notebook="exp/train.ipynb", job="exp/train.ipynb", job_kind="notebook")
    samples = []
    for k in range(40):
        started = MIDNIGHT_S - 100 if k < 20 else MIDNIGHT_S + 19.5  # the kernel gave PID 4100 again
        first = k < 20
        p = _process(0, 4100, (2 if first else 5) * GIB, 50.0, name="python", user="ann", started_s=started)
        if first and k >= 3:
            p = replace(p, attribution=notebook)  # its notebook read a few samples in
        samples.append(_with(base, MIDNIGHT_S + k, {0: [p]}))
    _write(tmp_path, samples)
    db = Database(tmp_path, read_only=True)
    try:
        found = processes.series(db, base.devices[0].uuid, MIDNIGHT_S, MIDNIGHT_S + 60, 60.0)
        assert len(found) == 2
        by_start = sorted(found, key=lambda s: s.process.started_s)
        assert [s.process.pid for s in by_start] == [4100, 4100]
        assert by_start[0].process.started_s == pytest.approx(MIDNIGHT_S - 100)
        assert (by_start[0].process.job_kind, by_start[0].process.job) == ("notebook", "exp/train.ipynb")
        assert (by_start[1].process.job_kind, by_start[1].process.job) == ("pid", "4100")
        assert np.nanmax(by_start[0].memory_peak_bytes) == 2 * GIB
        assert np.nanmax(by_start[1].memory_peak_bytes) == 5 * GIB
        assert by_start[0].process.last_s < by_start[1].process.first_s
    finally:
        db.close()


def test_only_the_biggest_processes_of_each_gpu_are_kept(tmp_path: Path) -> None:
    base = _samples("idle:gpus=h100*2", MIDNIGHT_S, 1)[0]
    samples = []
    for k in range(16):
        gpu0 = [_process(0, 100 + j, j * GIB, name=f"p{j}") for j in range(1, 6)]  # 1..5 GiB
        gpu0.append(_process(0, 200, 0.0, sm=90.0, name="busy"))  # no memory, but busy SMs
        gpu1 = [_process(1, 300, math.nan, sm=math.nan, name="hidden")]  # another user's: nothing known
        samples.append(_with(base, MIDNIGHT_S + k, {0: gpu0, 1: gpu1}))
    _write(tmp_path, samples, Limits(processes_per_gpu=3))
    db = Database(tmp_path, read_only=True)
    try:
        rows = list(processes.rows(db, base.devices[0].uuid, MIDNIGHT_S, MIDNIGHT_S + 20))
        assert {r.process.name for r in rows} == {"p5", "p4", "p3"}
        hidden = list(processes.rows(db, base.devices[1].uuid, MIDNIGHT_S, MIDNIGHT_S + 20))
        assert len(hidden) == 16 and all(math.isnan(r.memory_bytes) and math.isnan(r.sm_percent) for r in hidden)
    finally:
        db.close()
    other = tmp_path / "none"
    _write(other, samples, Limits(processes_per_gpu=0))
    db = Database(other, read_only=True)
    try:
        assert db.connection.execute("SELECT COUNT(*) FROM process_blocks").fetchone()[0] == 0
        assert db.connection.execute("SELECT COUNT(*) FROM blocks").fetchone()[0] > 0  # the GPUs are kept
    finally:
        db.close()


def test_processes_are_pruned_with_their_spans_and_count_toward_the_size_cap(tmp_path: Path) -> None:
    samples = _samples(SPEC, MIDNIGHT_S, 2 * 3600, step_s=5.0)  # ten hours, a sample each 5 s
    store, capped = tmp_path / "store", tmp_path / "capped"
    _write(store, samples)
    shutil.copytree(store, capped)  # the same store again, for the size cap (written anew: 7 s more)
    end_ms = epoch_ms(samples[-1].timestamp_s)
    db = Database(store)
    try:
        count = "SELECT COUNT(*) FROM process_blocks WHERE tier = ?"
        assert db.connection.execute(count, (int(Tier.FINE),)).fetchone()[0] > 0
        prune(db, end_ms, Limits(fine_span_s=3600.0, coarse_span_s=86400.0))
        fine_starts = [r[0] for r in db.connection.execute("SELECT end_ms FROM process_blocks WHERE tier IN (0, 1)")]
        assert fine_starts and min(fine_starts) >= end_ms - 3600_000  # seconds: the last hour only
        assert db.connection.execute(count, (int(Tier.COARSE),)).fetchone()[0] > 0  # minutes: all of it
        prune(db, end_ms + 2 * DAY_MS, Limits(fine_span_s=3600.0, coarse_span_s=86400.0))
        assert db.connection.execute("SELECT COUNT(*) FROM process_blocks").fetchone()[0] == 0
        assert db.connection.execute("SELECT COUNT(*) FROM processes").fetchone()[0] == 0  # no facts left behind
    finally:
        db.close()

    db = Database(capped)
    try:
        before = pending.data_bytes(db)
        fine = "SELECT COUNT(*) FROM process_blocks WHERE tier = 1"
        assert db.connection.execute(fine).fetchone()[0] >= 2
        prune(db, end_ms, Limits(size_cap_bytes=1))  # over any cap: the seconds go, the GPUs' and the processes'
        assert pending.data_bytes(db) < before and db.connection.execute(fine).fetchone()[0] <= 1
    finally:
        db.close()


def test_reclaiming_gives_every_free_page_back(tmp_path: Path) -> None:
    _write(tmp_path, _samples(SPEC, MIDNIGHT_S, 600))
    db = Database(tmp_path)
    try:
        db.connection.execute("DELETE FROM blocks")
        db.connection.execute("DELETE FROM process_blocks")
        assert db.connection.execute("PRAGMA freelist_count").fetchone()[0] > 1
        db.reclaim()
        assert db.connection.execute("PRAGMA freelist_count").fetchone()[0] == 0
    finally:
        db.close()


def test_a_store_written_before_process_history_reads_as_none(tmp_path: Path) -> None:
    samples = _samples(SPEC, MIDNIGHT_S, 20)
    _write(tmp_path, samples)
    db = Database(tmp_path)
    db.connection.executescript("DROP TABLE process_blocks; DROP TABLE processes;")
    db.close()
    db = Database(tmp_path, read_only=True)
    try:
        uuid = samples[0].devices[0].uuid
        assert processes.series(db, uuid, MIDNIGHT_S, MIDNIGHT_S + 60, 60.0) == []
        assert list(processes.rows(db, uuid, MIDNIGHT_S, MIDNIGHT_S + 60)) == []
    finally:
        db.close()


# ---- `trayvml history --processes` ----


def test_history_processes_exports_each_sample_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    base = _samples("idle:gpus=h100*2", time.time() - 600, 1)[0]
    samples = [
        _with(
            base,
            base.timestamp_s + k,
            {
                0: [_process(0, 100, (2 + k % 3) * GIB, 30.0 + k % 7, name="python", user="ann")],
                1: [_process(1, 200, 1 * GIB, 10.0, name="=cmd,x", user="bob")] if k % 2 else [],
            },
        )
        for k in range(120)
    ]
    _write(store, samples)
    out = tmp_path / "out.csv"
    assert cli.main(["history", "--store", str(store), "--since", "3h", "--processes", "--csv", str(out)]) == 0
    rows = list(csv.reader(out.read_text().splitlines(), skipinitialspace=True))
    assert rows[0] == [
        "timestamp",
        "gpu index",
        "gpu uuid",
        "pid",
        "process name",
        "user",
        "job kind",
        "job name",
        "used memory [MiB]",
        "sm [%]",
        "interval [s]",
    ]
    expected = sorted(
        (epoch_ms(s.timestamp_s), p.gpu_index, p.pid, round(p.used_memory_bytes / MIB))
        for s in samples
        for p in s.gpus[0].processes + s.gpus[1].processes
    )
    stamps = [datetime.strptime(r[0], "%Y/%m/%d %H:%M:%S.%f").timestamp() for r in rows[1:]]
    got = sorted((round(t * 1000), int(r[1]), int(r[3]), int(r[8])) for t, r in zip(stamps, rows[1:], strict=True))
    assert got == expected
    uuids = {d.index: d.uuid for d in samples[0].devices}
    assert all(r[2] == uuids[int(r[1])] and r[10] == "0" for r in rows[1:])
    assert stamps == sorted(stamps)  # oldest first, the GPUs merged
    assert f"{len(expected)} rows written to {out}" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "store"]  # no temporary left

    assert cli.main(["history", "--store", str(store), "--since", "3h", "--processes", "--gpu", "1"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 1 + 60
    assert all(line.split(", ")[1:6] == ["1", uuids[1], "200", "'=cmd x", "bob"] for line in printed[1:])


def test_history_processes_before_the_every_sample_tier_exports_minutes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = _samples(SPEC, MIDNIGHT_S, 3 * 360, step_s=10.0)
    _write(tmp_path, samples, Limits(fine_span_s=3600.0))
    start, end = (datetime.fromtimestamp(t, timezone.utc).isoformat() for t in (MIDNIGHT_S, MIDNIGHT_S + 3 * 3600))
    out = tmp_path / "out.csv"
    arguments = ["history", "--store", str(tmp_path), "--processes", "--from", start, "--to", end, "--csv", str(out)]
    assert cli.main(arguments) == 0
    rows = list(csv.reader(out.read_text().splitlines(), skipinitialspace=True))[1:]
    assert {r[10] for r in rows} == {"60", "0"}
    for gpu in {r[1] for r in rows}:  # each GPU's minutes first, then its samples (from its fine tier's start)
        intervals = [r[10] for r in rows if r[1] == gpu]
        assert intervals == sorted(intervals, key=lambda interval: interval == "0"), gpu
    assert "a minute's means" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (["--query", "name"], "--processes has columns of its own"),
        (["--gpu", "7"], "No GPU with index 7"),
        (["--from", "2001-01-01", "--to", "2001-01-02"], "No GPU processes stored between"),
        (["--since", "soon"], "is not a length of time"),
    ],
)
def test_history_processes_says_what_it_cannot_do_in_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], words: str
) -> None:
    _write(tmp_path / "store", _samples(SPEC, time.time() - 60, 20))
    out = tmp_path / "out.csv"
    assert cli.main(["history", "--store", str(tmp_path / "store"), "--processes", "--csv", str(out), *arguments]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


# ---- the window ----


def test_the_window_draws_last_nights_processes_from_disk_by_process_and_by_job(qtbot, tmp_path: Path) -> None:
    from tests.helpers import disk_history
    from tests.ui_helpers import shown_window
    from trayvml.core.metrics import Group

    folder = tmp_path / "history"
    now = time.time()
    night = now - now % 3600 - 20 * 3600  # twenty hours ago: older than memory holds
    base = _samples("idle:gpus=h100*2", night, 1)[0]
    job = Attribution(slurm_job="4242", job="4242", job_kind="slurm")
    samples = []
    for k in range(0, 3600, 5):
        ranks = [
            _process(
                1, 500 + r, (3 + r) * GIB, 40.0 + r, name="python", user="ann", started_s=night - 5, attribution=job
            )
            for r in range(2)
        ]
        other = _process(1, 900, 1 * GIB, 10.0, name="ffmpeg", user="bob", started_s=night - 5)
        samples.append(_with(base, night + k, {1: [*ranks, other]}))
    _write(folder, samples)

    sample, history, disk = disk_history(folder, "idle:gpus=h100*2", now)
    assert disk.uuids == tuple(d.uuid for d in base.devices)
    window = shown_window(qtbot, history, sample)
    try:
        window.set_range(7 * 86400)
        assert window.gpu_page is not None
        memory, sm = (p for p in window.gpu_page.panels if p.spec.group is Group.PROCESSES)
        assert sm.spec.process_sm and memory.spec.title == "Processes — memory"
        window.gpu_page.ensureWidgetVisible(window.gpu_page.layout_widget)
        bar = window.gpu_page.verticalScrollBar()
        bar.setValue(bar.maximum())
        window.refresh()
        window.finish_redraw()
        names = [name for name, _ in memory.extra_names]
        assert names == [
            "python (501) · Slurm job 4242 · GPU 1",
            "python (500) · Slurm job 4242 · GPU 1",
            "ffmpeg (900) · GPU 1",
        ]
        peaks = [float(np.nanmax(memory.extra.line(k)[1])) for k in range(3)]
        assert peaks == [4 * GIB, 3 * GIB, 1 * GIB]
        times = memory.extra.line(0)[0][np.isfinite(memory.extra.line(0)[1])]
        assert times[0] >= night - 600 and times[-1] <= night + 3600  # last night's hour, from disk
        assert sm.extra_names[0][0].startswith("python (501)")
        assert float(np.nanmax(sm.extra.line(0)[1])) == pytest.approx(41.0)
        readout = memory.values_at(float(times[3]), window._names())
        assert [row[0] for row in readout] == names and readout[0][2] == ["4.0 GiB"]

        window.jobs_button.setChecked(True)
        window.refresh()
        window.finish_redraw()
        assert [name for name, _ in memory.extra_names] == ["Slurm job 4242 · GPU 1", "ffmpeg (900) · GPU 1"]
        assert float(np.nanmax(memory.extra.line(0)[1])) == 7 * GIB  # the job's two ranks added up
        assert float(np.nanmax(sm.extra.line(0)[1])) == pytest.approx(81.0)
        window.set_gpu_visible(1, False)
        window.finish_redraw()
        assert memory.extra_names == [] and memory.notice.textItem.toPlainText() == "No GPU jobs in this range"
    finally:
        disk.close()


def test_the_tray_reads_process_lists_for_the_store_every_ten_seconds(qapp, tmp_path: Path) -> None:
    from tests.helpers import simulated_source
    from trayvml.config import Settings
    from trayvml.core.demand import PROCESSES, STORE_PROCESSES_S
    from trayvml.history.rings import PROCESS_STEP_S, PROCESS_TIERS
    from trayvml.nvml.sim import parse_spec
    from trayvml.ui.app import App

    def reads(settings: Settings, set_back_at: int = -1) -> list[bool]:
        app = App(parse_spec("idle:gpus=h100,past=0"), 1.0, stored=(settings, ""), history_folder=tmp_path / "h")
        source, clock, _ = simulated_source("idle:gpus=h100")
        found = []
        for tick in range(25):
            if tick == set_back_at:
                clock.set_wall_s(-3600.0)
            app.on_sample(source.sample(app.sampler._worker.demand))
            demand = app.sampler._worker.demand
            assert demand is not None  # the app has set what the next tick reads
            found.append(PROCESSES in demand)
            clock.advance_s(1.0)
        return found

    assert STORE_PROCESSES_S == PROCESS_STEP_S == PROCESS_TIERS[0].step_s  # readings draw lines, not dots
    asked = reads(Settings())
    assert [k for k, on in enumerate(asked) if on] == [0, 10, 20]
    # The clock set back an hour: the lists are due at once, not when it has passed the last ones' time.
    assert [k for k, on in enumerate(reads(Settings(), set_back_at=13)) if on] == [0, 10, 13, 23]
    assert not any(reads(replace(Settings(), process_history_per_gpu=0)))
    assert not any(reads(replace(Settings(), history_on_disk=False)))


def test_a_range_far_wider_than_the_store_steps_only_through_the_hours_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--from 2016-01-01`` on a store of two minutes: the export steps an hour at a time, and
    stepped through the ten years asked for (``--to 9999-12-31`` for hours) instead of the
    hours the store holds. The blocks asked for are counted: a handful, not one a GPU an hour."""
    from trayvml.history.disk.read import StoreReader

    store = tmp_path / "store"
    base = _samples("idle:gpus=h100*2", time.time() - 600, 1)[0]
    _write(store, [_with(base, base.timestamp_s + k, {0: [_process(0, 100, 2 * GIB, 30.0)]}) for k in range(120)])
    asked = {"gpu": 0, "process": 0}

    def counted(kind: str, read: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            asked[kind] += 1
            assert asked[kind] < 100, f"{kind} blocks asked for hour after hour"
            return read(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(StoreReader, "fine", counted("gpu", StoreReader.fine))
    monkeypatch.setattr(StoreReader, "coarse", counted("gpu", StoreReader.coarse))
    monkeypatch.setattr(processes, "_blocks", counted("process", processes._blocks))
    wide = ["--from", "2016-01-01", "--to", "2036-01-01"]
    for extra in ([], ["--processes"]):
        out = tmp_path / "out.csv"
        assert cli.main(["history", "--store", str(store), *wide, *extra, "--csv", str(out)]) == 0
        assert len(out.read_text().splitlines()) == 1 + (120 if extra else 240)
    assert 0 < asked["gpu"] < 20 and 0 < asked["process"] < 20
