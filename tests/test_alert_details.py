"""What an alert's notification says below its title: a lost GPU's facts and last values, processes in words."""

from __future__ import annotations

import math

from tests.helpers import run_ticks, simulated_source
from trayvml.alerts.details import alert_details, device_words, process_words
from trayvml.alerts.rules import AlertEvent
from trayvml.alerts.severity import Severity
from trayvml.core.sample import DeviceInfo, ProcessSample


def lost_event(gpu: int = 1) -> AlertEvent:
    return AlertEvent(0.0, gpu, "H100", "gpu_lost", "firing", Severity.CRITICAL, "lost: fell off the bus")


def test_a_lost_gpu_is_named_by_its_last_known_facts_and_values() -> None:
    source, clock, _ = simulated_source("training:gpus=h100*2,lost=1@1803,start=1800")
    before = run_ticks(source, clock, 2)  # no demand: everything is read, processes too
    seen, info = before.gpus[1], before.devices[1]
    assert not seen.lost
    clock.advance_s(3.0)
    after = source.sample()
    assert after.gpus[1].lost
    text = alert_details(lost_event(), after, seen, before.timestamp_s, info)
    first, second, *rest = text.splitlines()
    assert first == f"{info.name} at PCI {info.pci_bus_id}." and info.pci_bus_id
    assert second.startswith("Last seen at ") and "GiB" in second and "°C" in second and "H100" not in second
    # the simulated trainer runs in a container, which the notification names first
    assert any(line.startswith("It was running: container ") and ": python train.py" in line for line in rest)
    assert "name unknown" not in text and "?" not in text


def test_a_gpu_lost_before_it_was_ever_read_says_so_in_words() -> None:
    source, clock, _ = simulated_source("idle:gpus=h100*2")
    sample = run_ticks(source, clock, 1)
    text = alert_details(lost_event(), sample, None, math.nan, DeviceInfo(1, "(name unknown)", ""))
    assert text.splitlines() == [
        "Its name and PCI bus id are unknown: it was lost before trayvml could read them.",
        "trayvml never read a value from it.",
    ]


def test_processes_say_what_is_unknown_in_words() -> None:
    hidden = ProcessSample(0, 4200005, "compute", math.nan, no_permission=True)
    elsewhere = ProcessSample(0, 4200006, "compute", 2 * 2**30, container="3f2a9c1b7e4d99")
    nameless = ProcessSample(0, 4200007, "compute", 2**30)
    mine = ProcessSample(0, 4200008, "compute", 2**30, "python", "alice", "python train.py")
    assert process_words(hidden) == "PID 4200005 of another user (no permission to see its name)"
    assert process_words(elsewhere) == "PID 4200006, not visible from here (container 3f2a9c1b7e4d) 2.0 GiB"
    assert process_words(nameless) == "PID 4200007, not visible from here (another container or namespace) 1.0 GiB"
    assert process_words(mine) == "python train.py (alice, PID 4200008) 1.0 GiB"
    assert "?" not in " ".join(map(process_words, (hidden, elsewhere, nameless, mine)))


def test_a_device_without_a_bus_id_says_so() -> None:
    assert device_words(DeviceInfo(0, "NVIDIA H100", "GPU-1")) == "NVIDIA H100 (PCI bus id unknown)."


def test_heat_is_told_against_the_gpus_own_limits() -> None:
    source, clock, _ = simulated_source("thermal:gpus=h100+laptop,at=500")
    sample = run_ticks(source, clock, 2)
    h100, laptop = sample.devices
    assert (h100.temperature_slowdown_c, h100.temperature_shutdown_c) == (87, 92)  # NVML's thresholds
    assert (laptop.temperature_slowdown_c, laptop.temperature_shutdown_c) == (87, 92)  # (one pair in the simulator)
    hot = sample.gpus[0]
    assert hot.value("temperature_below_shutdown_c") == 92 - hot.value("temperature_gpu_c")
    event = AlertEvent(0.0, 0, "H100", "temperature_limit", "firing", Severity.CRITICAL, "margin low")
    first = alert_details(event, sample).splitlines()[0]
    assert first == f"At {hot.value('temperature_gpu_c'):.0f} °C; this GPU slows down at 87 °C and shuts down at 92 °C."


def test_a_throttling_body_gives_the_clocks_and_the_reasons_in_words() -> None:
    from dataclasses import replace

    from tests.test_alerts import sample

    throttled = sample(0.0, clock_event_reasons=0x40 | 0x4, clock_sm_mhz=1305.0)
    device = replace(throttled.devices[0], clock_max_sm_mhz=1980.0)
    throttled = replace(throttled, devices=(device,))
    event = AlertEvent(0.0, 0, "H100", "throttle", "firing", Severity.WARNING, "thermal throttling")
    assert alert_details(event, throttled).splitlines() == [
        "SM clock 1305 MHz of its 1980 MHz maximum (66 %).",
        "Why: software power cap, hardware thermal slowdown.",
    ]
    # A clock the GPU does not tell is left out, not shown as 0; the reasons still are given.
    unknown = sample(0.0, clock_event_reasons=0x8)
    assert alert_details(event, unknown).splitlines() == ["Why: hardware slowdown."]
