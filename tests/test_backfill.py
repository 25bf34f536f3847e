"""A simulation starts with a made-up past in its history, so that a first look shows something."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from trayvml.config import Settings, SettingsStore
from trayvml.history.rings import default_tiers
from trayvml.history.timeline import History
from trayvml.nvml.sim import parse_spec
from trayvml.ui.sampler import HOLD_BUCKETS, PAST_MAX_SIM_S, past_times_s, simulated_past


def _started_app(qtbot, spec: str, tmp_path: Path, **settings):
    """An App on ``spec`` whose sampler has delivered its first live sample, the pasts it was given
    (with the time each ended at then) and the wall-clock time it was started at."""
    from trayvml.ui.app import App

    store = SettingsStore(tmp_path / "config.toml")
    store.save(replace(Settings(), **settings))
    app = App(parse_spec(spec), store=store)
    pasts: list[tuple[History, float]] = []
    app.sampler.history_backfilled.connect(lambda past: pasts.append((past, past.latest_s)))
    started_s = time.time()
    app.sampler.start()  # only the sampler: no tray host or notification service is needed
    try:
        qtbot.waitUntil(lambda: app.latest is not None and app.latest.timestamp_s >= started_s, timeout=30_000)
    except BaseException:
        app.stop()
        raise
    return app, pasts, started_s


def test_the_default_simulation_starts_with_hours_of_past(qtbot, tmp_path: Path) -> None:
    app, pasts, started_s = _started_app(qtbot, "", tmp_path)
    try:
        first = app.latest
        assert first is not None and first.simulation  # still labelled as simulated
        [(past, past_end_s)] = pasts
        assert app.history is past  # the past became the history the live samples go on in
        assert past_end_s < first.timestamp_s  # the past ends before the first live sample
        for range_s in (900, 3600, 12 * 3600):  # the window's default range, 1 h and 12 h
            # Up to the past's end: the second between it and the first live sample holds no reading
            # (at 15 min every second is a bucket of its own).
            series = app.history.gpu_series("utilization_gpu_percent", past_end_s - range_s, past_end_s, 1000)
            assert series is not None and series.mean.shape[1] == 4
            # Every bucket has a value: no holes in a curve. But the oldest of the 12 h: the 30 s ring
            # holds exactly 12 h, and when a live sample opens a new bucket (1 run in 15 here) the
            # bucket 12 h before the past's end is the one that goes.
            inside = series.mean[1:] if range_s == 12 * 3600 else series.mean
            assert np.isfinite(inside).all(), range_s
            assert np.mean(inside) > 50  # the training job, not idle GPUs
        assert app.history.processes.lines(started_s - 3600, started_s, 1000)  # the job's memory, too
        host = app.history.host_series("cpu_percent", started_s - 3600, started_s - 60, 1000)
        assert host is not None and np.isnan(host.mean).all()  # the host's past is not made up
    finally:
        app.stop()


def test_the_past_never_reaches_the_alerts(qtbot, tmp_path: Path) -> None:
    # GPU 0 of the thermal scenario runs at 91 °C for minutes each half hour: the past holds alerts.
    app, pasts, started_s = _started_app(qtbot, "thermal:start=1300", tmp_path, history_hours=1)
    try:
        assert all(event.timestamp_s >= started_s for event in app.engine.events)
        [(past, past_end_s)] = pasts
        hot = past.gpu_series("temperature_gpu_c", past_end_s - 3600, past_end_s, 1000)
        assert hot is not None and np.nanmax(hot.high[:, 0]) >= 90
    finally:
        app.stop()


def test_real_gpus_and_frozen_time_get_no_past() -> None:
    assert simulated_past(None, 12 * 3600) is None  # real GPUs: their past is unknown
    assert simulated_past(parse_spec("training:at=600"), 12 * 3600) is None  # time stands still
    assert simulated_past(parse_spec("faults"), 12 * 3600) is None  # its faults come from second 0
    assert simulated_past(parse_spec(""), 0) is None  # no history kept
    assert simulated_past(parse_spec("training:past=0"), 12 * 3600) is None  # asked for none
    short = simulated_past(parse_spec("training:start=1800,past=600"), 12 * 3600)
    assert short is not None and short[1] == 600  # as much past as asked for, no more


def test_the_past_joins_the_present_in_the_same_phase() -> None:
    spec = parse_spec("training:hang=nvmlDeviceGetTemperatureV@0,latency=realistic,start=1800")
    past, span_s = simulated_past(spec, 12 * 3600) or (spec, 0.0)
    assert span_s == 12 * 3600
    assert past.start_s >= 0 and (past.start_s + span_s - spec.start_s) % 7200 == 0  # the job's period
    assert past.hangs == () and not past.realistic_latency  # neither may hold the past up
    assert past.gpus == spec.gpus and past.seed == spec.seed
    fast, fast_span_s = simulated_past(parse_spec("training:speed=60"), 12 * 3600) or (spec, 0.0)
    assert fast_span_s * 60 == PAST_MAX_SIM_S and fast.start_s >= 0  # capped in simulated seconds
    lost, lost_span_s = simulated_past(parse_spec("training:lost=1@300,start=1000"), 3600) or (spec, 0.0)
    assert (lost.start_s, lost_span_s) == (0.0, 1000.0)  # a fault at a set time: told from second 0


def test_past_times_fill_every_bucket_of_every_tier() -> None:
    tiers = default_tiers(12 * 3600, 1.0)
    end_s = 1_800_000_000.5
    times = past_times_s(end_s, 12 * 3600, tiers)
    stamps = np.array([t for t, _ in times])
    assert (np.diff(stamps) > 0).all() and stamps[-1] < end_s and stamps[0] >= end_s - 12 * 3600 - 30
    for tier in tiers:  # each tier's buckets over its whole span hold at least one time
        buckets = np.unique(stamps[stamps >= end_s - tier.span_s] // tier.step_s)
        assert len(buckets) >= tier.capacity - 1, tier
    reads = sum(read for _, read in times)
    assert times[0][1] and math.isclose(reads, len(times) / HOLD_BUCKETS, rel_tol=0.01)
