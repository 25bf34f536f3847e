"""The tray item's icon content, tooltip and menu, offscreen (no tray host needed to build them)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtGui import QGuiApplication

from tests.helpers import present, run_ticks, simulated_source, thresholds
from tests.ui_helpers import open_menu
from trayvml.alerts.engine import AlertSettings, gpu_level
from trayvml.core.demand import HISTORY
from trayvml.core.levels import Level
from trayvml.core.lines import biggest_job, gpu_line, job_line, tooltip
from trayvml.core.metrics import GPU_INDEX
from trayvml.core.sample import DeviceInfo, GpuSample
from trayvml.core.units import short_name
from trayvml.ui.glance import content_for
from trayvml.ui.icon import IconContent
from trayvml.ui.tray import Tray


def _menu_row(gpu: GpuSample, info: DeviceInfo) -> str:
    """A GPU's menu row: its compact line, and its biggest job where the lists were read."""
    job = job_line(gpu, compact=True)
    return f"{gpu_line(gpu, info, compact=True)} · {job}" if job else gpu_line(gpu, info, compact=True)


@pytest.fixture
def tray(qapp) -> Tray:
    return Tray()


def test_short_names() -> None:
    assert short_name("NVIDIA H100 80GB HBM3") == "H100"
    assert short_name("NVIDIA GeForce RTX 4090") == "RTX 4090"
    assert short_name("NVIDIA GeForce RTX 4070 Laptop GPU") == "RTX 4070 Laptop"
    assert short_name("Tesla V100-SXM2-16GB") == "Tesla V100"
    assert short_name("NVIDIA A100-SXM4-80GB") == "A100"


def test_tooltip_has_a_line_per_gpu_and_the_host() -> None:
    source, clock, _ = simulated_source("training:gpus=h100+laptop,at=900", host=True)
    sample = run_ticks(source, clock, 2)
    text = tooltip(sample)
    # Under a GPU, indented, its biggest job (test_the_tooltip_and_menu_name_each_gpus_biggest_job_…)
    lines = [line for line in text.splitlines() if not line.startswith("   ")]
    assert lines[0] == "trayvml — simulated GPUs (training)"
    h100 = sample.gpus[0]
    assert lines[1] == (
        f"0 H100 {h100.value('utilization_gpu_percent'):.0f}% (SM {h100.value('sm_activity_percent'):.0f}%) · "
        f"{h100.value('memory_used_bytes') / 2**30:.1f}/79.6 GiB · "
        f"{h100.value('temperature_gpu_c'):.0f} °C · {h100.value('power_draw_w'):.0f} W"
    )
    assert lines[2].startswith("1 RTX 4070 Laptop ") and not lines[2].endswith(" W")  # no power reading
    assert lines[3].startswith("Host CPU ")


def test_tooltip_shows_sm_activity_only_where_it_is_read() -> None:
    source, clock, _ = simulated_source("stalled:gpus=h100+rtx4090,at=900")
    sample = run_ticks(source, clock, 2)
    assert gpu_line(sample.gpus[0], sample.devices[0]).startswith("0 H100 100% (SM 1%) · ")  # stalled
    assert "(SM" not in gpu_line(sample.gpus[1], sample.devices[1])  # an RTX 4090 has no GPM
    not_demanded = source.sample(HISTORY)
    assert "(SM" not in gpu_line(not_demanded.gpus[0], not_demanded.devices[0])


def test_the_icon_can_show_sm_activity_and_uses_utilization_where_a_gpu_lacks_it() -> None:
    source, clock, _ = simulated_source("stalled:gpus=h100+rtx4090,at=900")
    sample = run_ticks(source, clock, 2)
    by_util = content_for(sample, "utilization")
    by_sm = content_for(sample, "sm_activity")
    assert by_util.bars[0].fraction == 1.0 and by_sm.bars[0].fraction == 0.0
    assert by_sm.bars[1].fraction == by_util.bars[1].fraction


def test_a_sleeping_gpu_and_a_resting_one_say_so() -> None:
    source, clock, _ = simulated_source("idle:gpus=laptop+laptop,sleep=1@0")
    source.reader.idle_poll_s = 30.0
    source.sample()
    clock.advance_s(1)
    sample = source.sample()
    lines = [gpu_line(g, i) for g, i in zip(sample.gpus, sample.devices, strict=True)]
    assert lines == [
        "0 RTX 4070 Laptop — idle: read now and then, so that it can go to sleep",
        "1 NVIDIA GPU — asleep (runtime-suspended): not queried, so it stays asleep",  # its name would wake it
    ]


def test_a_sleeping_gpu_is_an_empty_bar_not_a_fault() -> None:
    source, clock, _ = simulated_source("idle:gpus=h100+laptop,sleep=1@0")
    content = content_for(run_ticks(source, clock, 2))
    assert [bar.asleep for bar in content.bars] == [False, True]


def test_a_lost_gpu_says_so() -> None:
    source, clock, _ = simulated_source("idle:gpus=h100*2,lost=1@5")
    sample = run_ticks(source, clock, 7)
    assert gpu_line(sample.gpus[1], sample.devices[1]) == "1 H100 — lost: it has fallen off the bus"
    assert gpu_level(sample.gpus[1], AlertSettings()) is Level.LOST


def test_a_gpu_lost_before_start_has_no_name() -> None:
    source, _, _ = simulated_source("idle:gpus=h100*2,lost=1@0")
    sample = source.sample()
    line = gpu_line(sample.gpus[1], sample.devices[1])
    assert line == "1 — lost before its name could be read: it has fallen off the bus"  # never "(name unknown)"


def test_icon_content_follows_the_chosen_metric() -> None:
    source, clock, _ = simulated_source("thermal:gpus=h100*2,at=500")
    sample = run_ticks(source, clock, 2)
    util = content_for(sample, "utilization")
    temperature = content_for(sample, "temperature")
    assert abs(util.bars[0].fraction - sample.gpus[0].value("utilization_gpu_percent") / 100) <= 1 / 80
    assert abs(temperature.bars[0].fraction - sample.gpus[0].value("temperature_gpu_c") / 100) <= 1 / 80
    assert temperature.bars[0].level is Level.CRITICAL  # 91 °C at 500 s in the thermal scenario
    assert content_for(None) == IconContent(())  # starting: an empty tile, not "no GPU"
    assert len(content_for(sample, "utilization", hidden={1}).bars) == 1  # "GPUs shown" applies to the icon
    assert len(content_for(sample, "utilization", hidden={0, 1}).bars) == 2  # never an empty icon


def test_an_idle_gpus_jitter_does_not_redraw_the_icon(tray: Tray) -> None:
    from dataclasses import replace

    from trayvml.core.metrics import GPU_INDEX

    source, _, _ = simulated_source("idle:gpus=h100")
    base = source.sample()

    def with_utilization(percent: float):
        values = list(base.gpus[0].values)
        values[GPU_INDEX["utilization_gpu_percent"]] = percent
        return replace(base, gpus=(replace(base.gpus[0], values=tuple(values)),))

    tray.update(with_utilization(0))
    before = tray.redraws
    for percent in (1, 0, 1, 0, 1):  # invisible at tray size
        tray.update(with_utilization(percent))
    assert tray.redraws == before
    tray.update(with_utilization(50))
    assert tray.redraws == before + 1


def test_tray_redraws_only_when_what_it_shows_changed(tray: Tray) -> None:
    source, _clock, _ = simulated_source("training:at=900")
    sample = source.sample()
    before = tray.redraws
    tray.update(sample)
    tray.update(source.sample())  # frozen simulated time: the same picture
    assert tray.redraws == before + 1
    assert tray.icon.toolTip() == tooltip(tray.sample, headline=content_for(tray.sample).headline)


def test_menu_lists_gpus_and_copies_the_freest(tray: Tray) -> None:
    source, _clock, _ = simulated_source("processes:at=1500,seed=3")
    sample = source.sample()
    tray.update(sample)
    open_menu(tray)
    texts = [a.text() for a in tray.gpu_actions if a.isVisible()]
    assert texts == [_menu_row(g, i) for g, i in zip(sample.gpus, sample.devices, strict=True)]
    from trayvml.pick import choose

    freest = choose(sample, 1, "memory", max_util=50)[0]
    assert tray.copy_action.text() == f"Copy CUDA_VISIBLE_DEVICES for GPU {freest}"
    tray.copy_action.trigger()
    assert QGuiApplication.clipboard().text() == f"CUDA_VISIBLE_DEVICES={sample.devices[freest].uuid}"


def test_the_freest_on_a_mig_machine_is_copied_as_its_mig_uuid(tray: Tray) -> None:
    source, clock, _ = simulated_source("training:gpus=h100-mig,start=1800")
    tray.update(run_ticks(source, clock, 2))
    assert tray.freest_text().startswith("CUDA_VISIBLE_DEVICES=MIG-")


def test_the_menu_copies_the_gpu_pick_would_hand_out_and_no_busy_one(tray: Tray) -> None:
    """The menu copied the GPU with the most free memory however busy it was (56 % beside one
    at 1 %), and an index CUDA numbers otherwise unless told; where `pick` says no GPU is free,
    the menu copied one anyway."""
    source, _, _ = simulated_source("processes:gpus=h100+rtx4090,at=3100")
    sample = source.sample()
    busy = [round(g.value("utilization_gpu_percent")) for g in sample.gpus]
    assert busy[0] > 50 >= busy[1]  # the H100 has more memory free, and is busy
    tray.update(sample)
    open_menu(tray)
    assert tray.copy_action.text() == "Copy CUDA_VISIBLE_DEVICES for GPU 1"
    assert tray.freest_text() == f"CUDA_VISIBLE_DEVICES={sample.devices[1].uuid}"
    source, _, _ = simulated_source("training:start=1800")  # every GPU busy
    tray.update(source.sample())
    open_menu(tray)
    assert not tray.copy_action.isEnabled() and tray.freest_text() == ""
    assert tray.copy_action.toolTip().startswith("No GPU is free: all 4 are more than 50 % busy.")


def test_menu_entry_opens_the_window_on_that_gpu(tray: Tray, qtbot) -> None:
    source, _, _ = simulated_source("idle:gpus=h100*3")
    tray.update(source.sample())
    open_menu(tray)
    with qtbot.waitSignal(tray.show_window_requested) as blocker:
        tray.gpu_actions[2].trigger()
    assert blocker.args == [2]


def test_no_driver_offers_simulated_gpus(tray: Tray) -> None:
    from trayvml.core.errors import NvmlUnavailable, UnavailableReason
    from trayvml.core.sample import Sample

    missing = NvmlUnavailable(UnavailableReason.LIBRARY_NOT_FOUND)
    tray.update(Sample(0.0, (), (), None, None, unavailable=missing))
    open_menu(tray)
    assert tray.simulate_action.isVisible()
    assert tray.status_action.text() == "No NVIDIA driver found"
    assert tray.status_action.toolTip() == missing.sentence
    assert missing.sentence in tray.icon.toolTip()
    assert content_for(tray.sample).no_gpu


def test_pause_menu_asks_and_shows(tray: Tray) -> None:
    asked: list[float] = []
    tray.pause_requested.connect(asked.append)
    tray.pause_hour_action.trigger()
    tray.pause_forever_action.trigger()
    assert not tray.resume_action.isEnabled()  # nothing to resume yet
    tray.show_paused(True)
    assert tray.resume_action.isEnabled() and tray.pause_menu.title() == "Alerts paused"
    tray.resume_action.trigger()
    assert asked == [3600.0, float("inf"), 0.0]  # the app's dispatcher decides; the tray only asks
    tray.show_paused(False)
    assert not tray.resume_action.isEnabled() and tray.pause_menu.title() == "Pause alerts"


def test_the_closed_menu_is_not_rewritten_on_every_sample(tray: Tray) -> None:
    source, clock, _ = simulated_source("training:gpus=h100,start=1800")
    tray.update(source.sample())
    # The entries are there before the menu opens: a tray host measures the menu before it asks for texts.
    assert tray.gpu_actions[0].isVisible() and tray.gpu_actions[0].text().startswith("0 H100")
    open_menu(tray)
    shown = tray.gpu_actions[0].text()
    for _ in range(5):  # values change, nobody looks
        clock.advance_s(1.0)
        tray.update(source.sample())
    assert tray.gpu_actions[0].text() == shown  # no D-Bus traffic to the tray host for a closed menu
    open_menu(tray)
    current = _menu_row(present(tray.sample).gpus[0], present(tray.sample).devices[0])
    assert tray.gpu_actions[0].text() == current  # current once opened


def test_menu_rows_are_compact_and_the_tooltip_stays_complete(tray: Tray) -> None:
    from trayvml.core.metrics import GPU_INDEX, GPU_METRICS
    from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, Sample
    from trayvml.core.units import GIB

    row = [float("nan")] * len(GPU_METRICS)
    for key, value in {
        "utilization_gpu_percent": 43.0,
        "sm_activity_percent": 38.0,
        "memory_used_bytes": 12.1 * GIB,
        "temperature_gpu_c": 61.0,
        "power_draw_w": 210.0,
    }.items():
        row[GPU_INDEX[key]] = value
    gpu = GpuSample(0, tuple(row), (MetricState.OK,) * len(GPU_METRICS))
    info = DeviceInfo(0, "NVIDIA H100 80GB HBM3", "GPU-1", memory_total_bytes=80 * GIB)
    assert gpu_line(gpu, info, compact=True) == "0 H100 43% · 12/80 GiB · 61°C"
    full = gpu_line(gpu, info)
    assert full == "0 H100 43% (SM 38%) · 12.1/80.0 GiB · 61 °C · 210 W"
    tray.update(Sample(0.0, (gpu,), (info,), None, None))
    open_menu(tray)
    assert tray.gpu_actions[0].text() == "0 H100 43% · 12/80 GiB · 61°C"
    assert full in tray.icon.toolTip()
    # A state's words are short in the menu too; the tooltip says why.
    asleep = GpuSample(0, tuple(row), (MetricState.OK,) * len(GPU_METRICS), asleep=True)
    assert gpu_line(asleep, info, compact=True) == "0 H100 — asleep"
    assert "runtime-suspended" in gpu_line(asleep, info)


def test_active_alerts_have_a_menu_entry_that_opens_the_alerts_tab(tray: Tray, qtbot) -> None:
    from tests.test_alerts import only, sample

    tray.engine.configure(only("temperature", hold_s=0.0))
    tray.update(sample(0.0, temperature_gpu_c=60.0))
    tray.engine.update(sample(0.0, temperature_gpu_c=60.0))
    open_menu(tray)
    assert not tray.alerts_action.isVisible()  # none active: no entry
    hot = sample(1.0, temperature_gpu_c=95.0)
    tray.engine.update(hot)
    tray.update(hot)
    open_menu(tray)
    assert tray.alerts_action.isVisible() and tray.alerts_action.text() == "1 active alert"
    with qtbot.waitSignal(tray.show_alerts_requested):
        tray.alerts_action.trigger()
    cool = sample(2.0, temperature_gpu_c=60.0)
    tray.engine.update(cool)
    tray.update(cool)
    open_menu(tray)
    assert not tray.alerts_action.isVisible()


# ---- the number and the tile tell of one thing, and the tooltip says which ----
def test_while_heat_colours_the_tile_the_number_is_the_hottest_gpus_temperature(tray: Tray) -> None:
    # GPU 0 of the thermal scenario runs at about 91 °C (critical) while 85 % busy: a red "85"
    # would read as 85 °C. The icon shows the temperature, with its degree sign.
    source, clock, _ = simulated_source("thermal:gpus=h100+rtx4090,at=500")
    sample = run_ticks(source, clock, 2)
    hot = sample.gpus[0]
    assert gpu_level(hot, AlertSettings()) is Level.CRITICAL
    content = content_for(sample, "utilization")
    assert content.number == round(hot.value("temperature_gpu_c")) != round(hot.value("utilization_gpu_percent"))
    assert content.mark == "°"
    tray.update(sample)
    first = tray.icon.toolTip().splitlines()[0]
    assert first == f"{content.number:.0f} °C: GPU temperature, GPU 0 (critical)"


def test_while_memory_colours_the_tile_the_number_is_the_fullest_gpus_memory_percent(tray: Tray) -> None:
    from trayvml.alerts.rules import RULES, RuleSettings

    source, clock, _ = simulated_source("training:gpus=h100+rtx4090,at=900")
    sample = run_ticks(source, clock, 2)
    rules = {r.key: r.defaults for r in RULES}
    rules["memory_used"] = RuleSettings(True, 5.0, 4.0, 10.0, 9.0)
    rules["temperature"] = RuleSettings(False)
    tray.engine.configure(AlertSettings(rules=rules))
    fullest = max(sample.gpus, key=lambda g: g.value("memory_used_percent"))
    assert fullest.value("memory_used_percent") > 10
    tray.update(sample)
    assert tray._content is not None and tray._content.number == round(fullest.value("memory_used_percent"))
    assert tray._content.mark == ""
    first = tray.icon.toolTip().splitlines()[0]
    expected = f"{tray._content.number:.0f} %: Memory used (% of total), GPU {fullest.index} (critical)"
    assert first == expected


def test_when_all_is_well_the_tooltip_says_the_number_is_the_busiest_gpus_utilization(tray: Tray) -> None:
    source, clock, _ = simulated_source("training:gpus=h100+rtx4090,at=900")
    sample = run_ticks(source, clock, 2)
    busiest = max(sample.gpus, key=lambda g: (g.value("utilization_gpu_percent"), -g.index))
    tray.update(sample)
    assert tray._content is not None and tray._content.level is Level.NORMAL
    assert tray.icon.toolTip().splitlines()[0] == (
        f"{busiest.value('utilization_gpu_percent'):.0f} %: GPU utilization, GPU {busiest.index} (the highest)"
    )
    assert tray.icon.toolTip().splitlines()[1] == "trayvml — simulated GPUs (training)"


def test_the_tooltip_and_menu_name_each_gpus_biggest_job_with_its_age_between_list_readings(tray: Tray) -> None:
    from trayvml.core.demand import PROCESSES
    from trayvml.core.lines import JOB_KEPT_S

    source, clock, _ = simulated_source("training:gpus=h100,start=1800")
    read = source.sample(HISTORY | {PROCESSES})  # the window, an alert or the store wanted the process lists
    tray.update(read)
    lines = tray.icon.toolTip().splitlines()
    gpu = next(k for k, line in enumerate(lines) if line.startswith("0 H100 "))
    live = lines[gpu + 1]
    assert live.startswith("   container 3f2a9c1b7e4d (") and live.endswith(" GiB")
    open_menu(tray)
    assert tray.gpu_actions[0].text().endswith(" · container 3f2a9c1b7e4d")
    clock.advance_s(8.0)
    idle = source.sample(HISTORY)  # the closed tray reads no process lists on this tick
    assert job_line(idle.gpus[0]) == ""  # nothing read now: job_line alone says nothing
    tray.update(idle)
    open_menu(tray)  # a closed menu's texts are made when it opens
    lines = tray.icon.toolTip().splitlines()
    assert lines[gpu + 1] == f"{live} (as of 8 s ago)"  # the same words, never as if read now
    assert tray.gpu_actions[0].text().endswith(" · container 3f2a9c1b7e4d (8 s ago)")
    # Too old: gone (the store reads the lists every 10 s; three readings missed say nothing).
    clock.advance_s(JOB_KEPT_S - 8.0 + 1.0)
    tray.update(source.sample(HISTORY))
    open_menu(tray)
    assert "container" not in tray.icon.toolTip() and "container" not in tray.gpu_actions[0].text()
    # A new reading shows it live again; its GPU's memory use moving by half the job's memory drops it.
    tray.update(source.sample(HISTORY | {PROCESSES}))
    assert "(as of" not in tray.icon.toolTip() and "container 3f2a9c1b7e4d" in tray.icon.toolTip()
    clock.advance_s(1.0)
    idle = source.sample(HISTORY)
    assert "(as of 1 s ago)" in tooltip(idle, jobs=tray.jobs)
    values = list(idle.gpus[0].values)
    k = GPU_INDEX["memory_used_bytes"]
    values[k] -= 0.6 * biggest_job(read.gpus[0])[2]  # the job (most of the memory) ended
    moved = replace(idle, gpus=(replace(idle.gpus[0], values=tuple(values)),))
    tray.update(moved)
    open_menu(tray)
    assert "container" not in tray.icon.toolTip() and "container" not in tray.gpu_actions[0].text()
    # A reading that finds no visible job forgets the old one at once.
    tray.update(read)
    assert "container" in tray.icon.toolTip()
    empty = replace(read, gpus=(replace(read.gpus[0], processes=()),))
    tray.update(empty)
    clock.advance_s(1.0)
    tray.update(source.sample(HISTORY))
    assert "container" not in tray.icon.toolTip()


def test_the_menu_names_only_a_named_job_not_a_bare_process() -> None:
    from trayvml.core.demand import PROCESSES

    # The stress scenario's processes belong to no notebook, container, Slurm job, unit or session:
    # the menu row stays short (no "· pid 4200002"); the tooltip still names the biggest process.
    source, _, _ = simulated_source("processes:gpus=h100,start=1800")
    gpu = source.sample(HISTORY | {PROCESSES}).gpus[0]
    assert gpu.processes and all(p.job[0] in ("pid", "process") for p in gpu.processes)
    assert job_line(gpu, compact=True) == ""
    assert job_line(gpu).startswith("pid ")


def _with_utilization(sample, percents):
    """``sample`` with its GPUs' utilization set (one a GPU, in order)."""
    gpus = []
    for gpu, percent in zip(sample.gpus, percents, strict=True):
        values = list(gpu.values)
        values[GPU_INDEX["utilization_gpu_percent"]] = percent
        gpus.append(replace(gpu, values=tuple(values)))
    return replace(sample, gpus=tuple(gpus))


def test_many_gpus_redraw_only_when_their_aggregate_bar_or_number_moves(tray: Tray) -> None:
    source, _clock, _ = simulated_source("idle:gpus=h100*8")
    base = source.sample()
    tray.update(_with_utilization(base, [50.0] * 8))
    before = tray.redraws
    # One GPU's bar moves a step (2.5 %): the one aggregate bar the strip draws of 8 does not.
    tray.update(_with_utilization(base, [50.0] * 7 + [47.5]))
    assert tray.redraws == before and tray._content is not None and tray._content.bars[7].fraction == 0.475
    tray.update(_with_utilization(base, [50.0] * 4 + [30.0] * 4))  # the mean moves: redrawn
    assert tray.redraws == before + 1
    tray.update(_with_utilization(base, [50.0] * 4 + [30.0] * 3 + [90.0]))  # the number moves: redrawn
    assert tray.redraws == before + 2 and tray._content.number == 90


def test_the_tray_shows_each_new_remote_sample_beside_the_same_local_one(tray: Tray) -> None:
    local_source, _, _ = simulated_source("idle:gpus=h100*2")
    local = _with_utilization(local_source.sample(), [10.0, 15.0])
    remote_source, _, _ = simulated_source("idle:gpus=h100*2")  # one simulated library at a time
    remote = remote_source.sample()
    tray.remote_icon_samples = [_with_utilization(remote, [20.0, 30.0])]
    tray.update(local)
    assert tray._content is not None and tray._content.number == 30
    tray.remote_icon_samples = [_with_utilization(remote, [20.0, 70.0])]  # a new read, the same local sample
    tray.update(local)
    assert tray._content.number == 70 and [b.fraction for b in tray._content.bars] == [0.1, 0.15, 0.2, 0.7]
    tray.hidden_gpus = {1}  # the same samples, this machine's GPU 1 left out
    tray.update(local)
    assert [b.fraction for b in tray._content.bars] == [0.1, 0.2, 0.7]
    tray.set_metric("temperature")  # the same samples, another metric
    temperature = max(g.value("temperature_gpu_c") for s in (local, remote) for g in s.gpus)
    assert tray._content.number == round(temperature)
    tray.set_metric("utilization")
    # New settings, the same samples: every GPU's temperature is a warning now.
    warm = replace(thresholds(AlertSettings().rules["temperature"]), warning_enter=1.0, warning_clear=0.5)
    tray.engine.configure(AlertSettings(rules={**AlertSettings().rules, "temperature": warm}))
    tray.update(local)
    assert tray._content.level is Level.WARNING and tray._content.number == round(temperature)
    tray.engine.configure(AlertSettings())
    tray.remote_icon_samples = []
    tray.update(local)
    assert tray._content.number == 10 and len(tray._content.bars) == 1


def test_a_warning_whose_number_is_not_told_is_not_blamed_on_another_gpus_metric(tray: Tray) -> None:
    """GPU 1 short of free memory (1 GiB), its used share not told; GPU 0 at 43 %: the tooltip's
    first line read "43 %: GPU utilization, GPU 0 (warning)", the warning GPU 1's memory."""
    import math
    from dataclasses import replace

    from trayvml.core.metrics import GPU_INDEX
    from trayvml.core.sample import MetricState
    from trayvml.core.units import GIB

    source, clock, _ = simulated_source("idle:gpus=h100*2")
    sample = run_ticks(source, clock, 2)
    gpus = []
    for gpu, (util, free) in zip(sample.gpus, ((43.0, 60 * GIB), (1.0, 1 * GIB)), strict=True):
        values, states = list(gpu.values), list(gpu.states)
        values[GPU_INDEX["utilization_gpu_percent"]] = util
        values[GPU_INDEX["memory_free_bytes"]] = free
        values[GPU_INDEX["memory_used_percent"]] = math.nan
        states[GPU_INDEX["memory_used_percent"]] = MetricState.NO_DATA
        gpus.append(replace(gpu, values=tuple(values), states=tuple(states)))
    sample = replace(sample, gpus=tuple(gpus))
    content = content_for(sample, "utilization")
    assert math.isnan(content.number)  # no number: the warning's own is not known
    tray.update(sample)
    first = tray.icon.toolTip().splitlines()[0]
    assert first.endswith("GPU 1 (warning)") and "utilization" not in first.lower(), first


def test_a_job_named_after_the_menu_was_measured_is_in_its_row_before_it_opens(tray: Tray) -> None:
    """The closed menu's texts were made only when it opened: a tray host measures it before it
    asks for texts, and the row of a job named since was cut off at its old width ("container 3f")."""
    from trayvml.core.demand import PROCESSES

    source, clock, _ = simulated_source("training:gpus=h100,start=1800")
    tray.update(source.sample(HISTORY))  # no lists read yet: no job named
    assert "container" not in tray.gpu_actions[0].text()
    clock.advance_s(1.0)
    tray.update(source.sample(HISTORY | {PROCESSES}))  # the job named: the row's width changes
    assert tray.gpu_actions[0].text().endswith(" · container 3f2a9c1b7e4d")
    shown = tray.gpu_actions[0].text()
    clock.advance_s(1.0)
    tray.update(source.sample(HISTORY))  # the same job, said from the last reading: not rewritten
    assert tray.gpu_actions[0].text() == shown
