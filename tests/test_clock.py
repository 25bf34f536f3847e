"""One scheduler for every sampling loop: paced on the monotonic clock, stamped with the wall clock.

All on a ManualClock: simulated hours take no real time, and nothing here asserts a real timing.
"""

from __future__ import annotations

import itertools
import random
import sys
import threading

import pytest

from trayvml.core.clock import ManualClock, SystemClock, Ticker, clock_step_s
from trayvml.core.sample import Sample
from trayvml.remote.fetch import Endpoint, RemoteError, SeriesCache, parse_endpoint
from trayvml.remote.source import RemoteSource

HOUR_S = 3600.0
NAN = float("nan")


def run_loop(
    clock: ManualClock,
    interval_s: float,
    work_s: list[float],
    at_tick: dict[int, float] | None = None,
) -> tuple[list[float], list[float]]:
    """A sampling loop as the commands write it: one tick per entry of ``work_s`` (the work takes
    that long), waiting on a Ticker in between. ``at_tick``: the wall clock set by that much as
    that tick begins. Returns when each tick began on the monotonic clock, and its wall stamp."""
    ticker = Ticker(interval_s, clock)
    began: list[float] = []
    stamps: list[float] = []
    for n, seconds in enumerate(work_s):
        if n:
            ticker.wait_next()
        if at_tick and n in at_tick:
            clock.set_wall_s(at_tick[n])
        began.append(clock.monotonic_s())
        stamps.append(clock.now_s())  # what the sample is stamped with
        clock.advance_s(seconds)
    return began, stamps


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CLOCK_BOOTTIME is Linux's")
def test_the_system_clock_s_monotonic_time_counts_a_suspend(monkeypatch: pytest.MonkeyPatch) -> None:
    """time.monotonic stands still while the machine sleeps: a power limit read before a night's
    suspend said "4 s ago" in the morning and was not read again. The kernel's boot-time clock runs
    on (a machine that never slept, as CI's, shows no difference between the two: asked for here)."""
    import time

    asked: list[int] = []

    def clock_gettime(clock_id: int) -> float:
        asked.append(clock_id)
        return 86_400.0 + 123.0  # a day's suspend beyond time.monotonic

    monkeypatch.setattr(time, "clock_gettime", clock_gettime)
    assert SystemClock().monotonic_s() == 86_523.0 and asked == [time.CLOCK_BOOTTIME]


def test_ticks_do_not_drift_over_a_thousand_ticks_whatever_the_work_takes() -> None:
    clock = ManualClock()
    rng = random.Random(7)
    began, _ = run_loop(clock, 0.1, [rng.uniform(0.0, 0.099) for _ in range(1001)])
    assert began == pytest.approx([k * 0.1 for k in range(1001)], abs=1e-9)
    # The wall-clock arithmetic the loops had, sleep(start + n * interval - now), does the same
    # only while the wall clock stands still; an error added per tick (sleep(interval)) would not.
    assert began[-1] == pytest.approx(100.0, abs=1e-9)


def test_a_slow_tick_skips_the_ticks_it_missed_instead_of_making_them_up() -> None:
    clock = ManualClock()
    work = [0.01] * 12
    work[3] = 3.5  # a driver call that hung for three and a half intervals
    began, _ = run_loop(clock, 1.0, work)
    assert began[:4] == pytest.approx([0.0, 1.0, 2.0, 3.0])
    assert began[4] == pytest.approx(6.5)  # late: at once, when the slow tick ends
    assert began[5:] == pytest.approx([7.5 + k for k in range(7)])  # and on from there
    gaps = [b - a for a, b in itertools.pairwise(began)]
    assert min(gaps) >= 1.0 - 1e-9  # no burst: never two ticks closer than an interval


@pytest.mark.parametrize("jump_s", [HOUR_S, -HOUR_S])
def test_a_wall_clock_jump_changes_only_the_stamps(jump_s: float) -> None:
    rng = random.Random(11)
    work = [rng.uniform(0.0, 0.5) for _ in range(40)]
    steady_began, steady_stamps = run_loop(ManualClock(), 1.0, work)
    began, stamps = run_loop(ManualClock(), 1.0, work, at_tick={20: jump_s})
    assert began == steady_began  # the pacing: the same ticks at the same times, none more, none less
    assert stamps[:20] == steady_stamps[:20]
    assert [s - jump_s for s in stamps[20:]] == pytest.approx(steady_stamps[20:])


@pytest.mark.parametrize("jump_s", [HOUR_S, -HOUR_S])
def test_a_wall_clock_jump_during_a_wait_does_not_change_it(jump_s: float) -> None:
    clock = ManualClock()
    ticker = Ticker(1.0, clock)
    clock.advance_s(0.25)
    assert ticker.next_delay_s() == pytest.approx(0.75)
    clock.set_wall_s(jump_s)  # NTP, a user or a resume sets the clock while the loop waits
    assert ticker.delay_s() == pytest.approx(0.75)
    clock.advance_s(0.75)
    assert ticker.next_delay_s() == pytest.approx(1.0)


def test_an_interval_change_takes_effect_at_the_next_tick() -> None:
    clock = ManualClock()
    ticker = Ticker(1.0, clock)
    assert ticker.next_delay_s() == 1.0
    clock.advance_s(1.0)
    ticker.interval_s = 0.5  # changed while a tick works: the next is due half a second after it
    assert ticker.next_delay_s() == pytest.approx(0.5)
    clock.advance_s(0.5)
    assert ticker.next_delay_s() == pytest.approx(0.5)
    # Changed while a tick is waited for (the tray's settings): due the new interval after the last tick.
    clock.advance_s(0.1)
    ticker.interval_s = 10.0
    assert ticker.delay_s() == pytest.approx(9.9)
    ticker.interval_s = 0.05  # already past: due at once, not in the past
    assert ticker.delay_s() == 0.0
    assert ticker.next_delay_s() == pytest.approx(0.05)


def test_restart_counts_the_next_tick_from_now() -> None:
    clock = ManualClock()
    ticker = Ticker(1.0, clock)
    clock.advance_s(3.0)  # a try that timed out
    ticker.restart()
    ticker.interval_s = 2.0  # a back-off
    assert ticker.next_delay_s() == 2.0


def test_wait_next_ends_when_stopped() -> None:
    clock = ManualClock()
    ticker = Ticker(60.0, clock)
    stop = threading.Event()
    assert ticker.wait_next(stop) is False and clock.monotonic_s() == 60.0
    stop.set()
    assert ticker.wait_next(stop) is True and clock.monotonic_s() == 60.0
    system = Ticker(3600.0, SystemClock())
    assert system.wait_next(stop) is True  # at once, not in an hour


def test_a_remote_reads_in_the_middle_of_each_second_and_backs_off_from_the_end_of_a_failed_try() -> None:
    clock = ManualClock(1_800_000_000.97)  # started near a second's edge
    began: list[float] = []
    stamps: list[float] = []
    answers = [True, True, False, False, False, True, True]

    def reader(endpoint: Endpoint, timeout_s: float, now_s: float, cache: SeriesCache) -> list[Sample]:
        began.append(clock.monotonic_s())
        stamps.append(now_s)
        ok = answers[len(began) - 1]
        clock.advance_s(0.2 if ok else timeout_s)
        if len(began) == len(answers):
            source._stop.set()
        if not ok:
            raise RemoteError("down")
        return []

    source = RemoteSource(parse_endpoint("http://gpu-box:9400"), 1.0, 3.0, clock, reader)
    source._run()  # on this thread: the manual clock moves only here
    assert began == pytest.approx([0.0, 1.53, 2.53, 7.53, 14.53, 25.53, 26.53])
    # 1.53, 2.53: in the middle of the next seconds (the history files a read by the second its
    # start falls in); 7.53, 14.53, 25.53: each back-off (2, 4, 8 s) counted from the end of a 3 s
    # timeout, not into it; 26.53: in the middle of a second again once the host answers.
    assert [round(t % 1, 2) for t in stamps[1:3] + stamps[-1:]] == [0.5, 0.5, 0.5]


def test_an_unreachable_remote_is_said_unreachable_as_long_as_it_was_though_the_clock_was_set_back() -> None:
    """Down for three minutes, then the clock set back an hour: "unreachable since" named a time an
    hour ahead, and for how long read 0 s until the clock caught up."""
    clock = ManualClock()

    def reader(endpoint: Endpoint, timeout_s: float, now_s: float, cache: SeriesCache) -> list[Sample]:
        raise RemoteError("down")

    source = RemoteSource(parse_endpoint("http://gpu-box:9400"), 1.0, 3.0, clock, reader)
    for _ in range(3):
        source.read_once()
        clock.advance_s(60.0)
    clock.set_wall_s(-HOUR_S)
    (sample,) = source.read_once()
    fault = sample.remote
    assert fault is not None and sample.timestamp_s - fault.since_s == pytest.approx(180.0)  # three tries, 60 s apart


def test_a_remote_sample_carries_the_monotonic_time_of_its_read_unless_stamped_when_it_came() -> None:
    """With its wall time, what tells a clock set from a pause (Monitor): the read's start for an
    exporter's samples; an ssh batch's own, stamped when it came (a read takes it up to a second
    later: stamped again then, every batch looked like the clock set by the lag)."""
    clock = ManualClock()
    came = Sample(clock.now_s() - 0.7, (), (), None, None, monotonic_s=clock.monotonic_s() - 0.7)
    answers: list[list[Sample]] = [[Sample(clock.now_s(), (), (), None, None)], [came]]

    def reader(endpoint: Endpoint, timeout_s: float, now_s: float, cache: SeriesCache) -> list[Sample]:
        clock.advance_s(0.2)  # the read takes a while: its samples are of its start
        return answers.pop(0)

    source = RemoteSource(parse_endpoint("http://gpu-box:9400"), 1.0, 3.0, clock, reader)
    clock.advance_s(5.0)
    (read,) = source.read_once()
    assert read.monotonic_s == 5.0
    (kept,) = source.read_once()
    assert kept.monotonic_s == came.monotonic_s


def test_a_clock_step_is_the_wall_less_the_monotonic_difference_and_without_it_a_set_back_only() -> None:
    t_s = 1_800_000_000.0
    assert clock_step_s(t_s, 10.0, t_s + 1.0, 11.0) == 0.0  # a second passed
    assert clock_step_s(t_s, 10.0, t_s + 1.4, 11.0) == 0.0  # a read late by its own doing, or a slew
    assert clock_step_s(t_s, 10.0, t_s + 3601.0, 11.0) == 3600.0  # set forward an hour
    assert clock_step_s(t_s, 10.0, t_s - 3599.0, 11.0) == -3600.0  # set back an hour
    assert clock_step_s(t_s, 10.0, t_s + 8 * 3600.0, 10.0 + 8 * 3600) == 0.0  # a night's suspend
    assert clock_step_s(t_s, NAN, t_s + 3601.0, NAN) == 0.0  # without it: a pause, not a step
    assert clock_step_s(t_s, NAN, t_s - 3599.0, NAN) == -3599.0  # a set back, less the second between


def slots_of_a_mid_slot_loop(clock: ManualClock, work_s: list[float], mid_slot: bool = True) -> list[int]:
    """The 1 s slots the history files each tick's sample in: stamped when its reads end, as
    Source.sample stamps it."""
    ticker = Ticker(1.0, clock, mid_slot=mid_slot)
    slots: list[int] = []
    for n, seconds in enumerate(work_s):
        if n:
            ticker.wait_next()
        clock.advance_s(seconds)
        slots.append(int(clock.now_s() // 1.0))
    return slots


def test_mid_slot_ticks_give_each_sample_a_slot_of_its_own_whatever_the_reads_take() -> None:
    # Started 40 ms before a second's edge, the reads taking 36 ms but 100 ms every fifth tick (the
    # process lists): as the tray's sampler ticked on 8 simulated GPUs with the driver's latency.
    work = [0.1 if n % 5 == 0 else 0.036 for n in range(40)]
    steps = {b - a for a, b in itertools.pairwise(slots_of_a_mid_slot_loop(ManualClock(1_800_000_000.96), work))}
    assert steps == {1}
    unaligned = slots_of_a_mid_slot_loop(ManualClock(1_800_000_000.96), work, mid_slot=False)
    assert {b - a for a, b in itertools.pairwise(unaligned)} == {0, 1, 2}  # two in one slot, none in the next


def test_a_late_mid_slot_tick_waits_for_the_next_middle_and_never_bursts() -> None:
    clock = ManualClock(1_800_000_000.2)
    work = [0.02] * 12
    work[3] = 3.3  # a driver call that hung
    ticker = Ticker(1.0, clock, mid_slot=True)
    delays: list[float] = []
    slots: list[int] = []
    for seconds in work:
        clock.advance_s(seconds)
        slots.append(int(clock.now_s()))
        delays.append(ticker.next_delay_s())
        clock.advance_s(delays[-1])
    assert all(0.5 <= d <= 1.5 for d in delays), delays
    assert all(b > a for a, b in itertools.pairwise(slots))
    assert slots[4] - slots[3] == 1  # the next tick right after the hang, in the next slot


def test_a_new_interval_keeps_mid_slot_ticks_in_the_middle_of_its_slots() -> None:
    clock = ManualClock(1_800_000_000.0)
    ticker = Ticker(1.0, clock, mid_slot=True)
    clock.advance_s(0.02)
    clock.advance_s(ticker.next_delay_s() - 0.3)  # waiting for the tick due at .5
    ticker.interval_s = 4.0
    clock.advance_s(ticker.delay_s())
    assert clock.now_s() % 4.0 == pytest.approx(2.0)  # the middle of a 4 s slot, not 4 s after the last tick


@pytest.mark.parametrize("jump_s", [HOUR_S + 0.3, -HOUR_S - 0.3])
def test_a_wall_clock_jump_moves_mid_slot_ticks_to_the_new_middles_within_bounds(jump_s: float) -> None:
    clock = ManualClock(1_800_000_000.0)
    ticker = Ticker(1.0, clock, mid_slot=True)
    clock.advance_s(0.02)
    clock.advance_s(ticker.next_delay_s())
    assert clock.now_s() % 1.0 == pytest.approx(0.5)
    clock.set_wall_s(clock.now_s() + jump_s)
    clock.advance_s(0.02)
    delay_s = ticker.next_delay_s()
    assert 0.5 <= delay_s <= 1.5
    clock.advance_s(delay_s)
    assert clock.now_s() % 1.0 == pytest.approx(0.5)


def test_the_tray_sampler_ticks_on_the_ticker_and_takes_a_new_interval_at_once(qtbot) -> None:
    from trayvml.nvml.sim import parse_spec
    from trayvml.ui.sampler import Sampler

    sampler = Sampler(parse_spec("idle:gpus=h100"), 3600.0, stall_after_s=3600.0)
    samples: list[Sample] = []
    sampler.sample_taken.connect(samples.append)
    sampler.start()
    try:
        qtbot.waitUntil(lambda: len(samples) == 1)  # the first tick is due at once, the next in an hour
        sampler.set_interval(0.01)  # an hour after the last tick becomes 10 ms after it: long past
        qtbot.waitUntil(lambda: len(samples) >= 4)  # and it goes on ticking (the timer fires once a tick)
    finally:
        sampler.stop()
    assert not sampler._thread.isRunning()


def test_the_tray_sampler_ticks_in_the_middle_of_each_second(qtbot) -> None:
    import time

    from trayvml.nvml.sim import parse_spec
    from trayvml.ui.sampler import Sampler

    while not 0.0 < time.time() % 1.0 < 0.1:  # started near a second's edge, where samples crossed it
        time.sleep(0.005)
    sampler = Sampler(parse_spec("idle:gpus=h100"), 1.0, stall_after_s=3600.0)
    samples: list[Sample] = []
    sampler.sample_taken.connect(samples.append)
    sampler.start()
    try:
        qtbot.waitUntil(lambda: len(samples) >= 3, timeout=10_000)
    finally:
        sampler.stop()
    phases = [s.timestamp_s % 1.0 for s in samples[1:3]]
    # After the first, half a second from each edge (the Qt timer may fire some milliseconds early).
    assert all(0.4 < phase < 0.9 for phase in phases), phases
