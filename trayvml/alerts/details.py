"""The lines an alert's notification adds below its title: which GPU, its last values, its processes.

Plain text (each notifier escapes it for its server). Nothing unknown is shown as "?": where a
process's name or user cannot be read, the words say why.
"""

from __future__ import annotations

import math
from dataclasses import replace

from trayvml.alerts.rules import AlertEvent
from trayvml.core.formatting import clock_event_reason_names
from trayvml.core.i18n import translate
from trayvml.core.lines import gpu_line
from trayvml.core.safe_text import clean, shorten
from trayvml.core.sample import UNKNOWN_NAME, DeviceInfo, GpuSample, ProcessSample, Sample, job_text
from trayvml.core.units import format_bytes, format_clock, short_name

# Their notifications name the biggest processes.
PROCESS_RULES = ("memory_used", "memory_free", "temperature", "temperature_limit", "memory_held_idle")
SHOWN_PROCESSES = 3


def process_words(process: ProcessSample) -> str:
    """'python train.py --rank 0 (alice, PID 4200001) 70.1 GiB'; unknowns said in words."""
    memory = "" if math.isnan(process.used_memory_bytes) else f" {format_bytes(process.used_memory_bytes)}"
    if process.no_permission:
        return (
            translate("AlertDetails", "PID {pid} of another user (no permission to see its name)").format(
                pid=process.pid
            )
            + memory
        )
    if not process.name and not process.user:
        where = (
            translate("AlertDetails", "container {id}").format(id=process.container[:12])
            if process.container
            else translate("AlertDetails", "another container or namespace")
        )
        return (
            translate("AlertDetails", "PID {pid}, not visible from here ({where})").format(pid=process.pid, where=where)
            + memory
        )
    what = shorten(clean(process.command or process.name))
    user = shorten(clean(process.user)) or translate("AlertDetails", "user unknown")
    where = job_words(process)
    if where:
        return (
            translate("AlertDetails", "{where}: {what} ({user}, PID {pid})").format(
                where=where, what=what, user=user, pid=process.pid
            )
            + memory
        )
    return (
        translate("AlertDetails", "{what} ({user}, PID {pid})").format(what=what, user=user, pid=process.pid) + memory
    )


def job_words(process: ProcessSample) -> str:
    """'notebook exp/train.ipynb', 'container 3f2a9c1b7e4d', 'Slurm job 4242 (train_llm)', 'systemd unit
    train.service': what its owner knows the work by (a PID alone is not); "" where none is known."""
    job = process.attribution
    if job.notebook:
        return translate("AlertDetails", "notebook {path}").format(path=shorten(clean(job.notebook)))
    if job.container:
        return translate("AlertDetails", "container {id}").format(id=shorten(clean(job.container)))
    if job.slurm_job or job.unit:
        kind = "slurm" if job.slurm_job else "unit"
        named = replace(process, attribution=replace(job, job=job.slurm_job or job.unit, job_kind=kind))
        return shorten(clean(job_text(named)))
    return ""


def biggest_named_job(processes: tuple[ProcessSample, ...]) -> str:
    """The words of the named job (see job_words) holding most GPU memory among ``processes``; ""."""
    memory: dict[str, float] = {}
    for process in processes:
        words = job_words(process)
        if words:
            used = process.used_memory_bytes
            memory[words] = memory.get(words, 0.0) + (0.0 if math.isnan(used) else used)
    return max(memory, key=lambda words: memory[words]) if memory else ""


def processes_line(gpu: GpuSample | None, lead: str = "") -> str:
    """``lead`` (default: "Processes"), then the biggest processes."""
    if gpu is None or not gpu.processes:
        return ""
    biggest = sorted(gpu.processes, key=lambda p: 0.0 if math.isnan(p.used_memory_bytes) else -p.used_memory_bytes)
    shown = translate("AlertDetails", "; ").join(process_words(p) for p in biggest[:SHOWN_PROCESSES])
    more = len(biggest) - SHOWN_PROCESSES
    if more > 0:
        shown = translate("AlertDetails", "{processes}; and {more} more").format(processes=shown, more=more)
    return translate("AlertDetails", "{lead}: {processes}").format(
        lead=lead or translate("AlertDetails", "Processes"), processes=shown
    )


def device_words(device: DeviceInfo | None) -> str:
    """'NVIDIA H100 80GB HBM3 at PCI 00000000:1B:00.0', or why that is unknown."""
    if device is None or device.name == UNKNOWN_NAME or not device.name:
        return translate(
            "AlertDetails", "Its name and PCI bus id are unknown: it was lost before trayvml could read them."
        )
    if device.pci_bus_id:
        return translate("AlertDetails", "{name} at PCI {bus}.").format(name=clean(device.name), bus=device.pci_bus_id)
    return translate("AlertDetails", "{name} (PCI bus id unknown).").format(name=clean(device.name))


def alert_details(
    event: AlertEvent,
    sample: Sample,
    last_seen: GpuSample | None = None,
    last_seen_s: float = math.nan,
    device: DeviceInfo | None = None,
) -> str:
    """What the notification of ``event`` says beyond its title and thresholds.

    ``last_seen``: the GPU's last sample in which it answered (at ``last_seen_s``), and ``device``
    its facts as last known: a lost GPU has no values of its own any more.
    """
    if event.kind == "resolved":
        return ""
    if event.rule == "gpu_lost":
        lines = [device_words(device)]
        if last_seen is not None and device is not None:
            when = format_clock(last_seen_s)
            head = f"{last_seen.index} {shorten(short_name(clean(device.name)))}"  # gpu_line's, said in the title
            values = gpu_line(last_seen, device).removeprefix(head).strip()
            lines.append(translate("AlertDetails", "Last seen at {time}: {values}.").format(time=when, values=values))
            lines.append(processes_line(last_seen, translate("AlertDetails", "It was running")))
        elif last_seen is None:
            lines.append(translate("AlertDetails", "trayvml never read a value from it."))
        return "\n".join(line for line in lines if line)
    lines = [heat_line(sample, event.gpu_index)] if event.rule in ("temperature", "temperature_limit") else []
    if event.rule == "throttle":
        lines.extend(throttle_lines(sample, event.gpu_index))
    if event.rule in PROCESS_RULES:
        lines.append(processes_line(sample.gpu(event.gpu_index)))
    return "\n".join(line for line in lines if line)


def throttle_lines(sample: Sample, gpu_index: int) -> list[str]:
    """'SM clock 1305 MHz of its 1980 MHz maximum (66 %).' and 'Why: hardware thermal slowdown.'

    How far the clock is held down says how much the throttling costs; the reasons (NVML's
    clocks event reasons bitmask, named as in core.metrics) say what to look at. A clock the GPU
    does not tell is left out rather than shown as 0.
    """
    gpu = sample.gpu(gpu_index)
    if gpu is None:
        return []
    device = next((d for d in sample.devices if d.index == gpu_index), None)
    lines = []
    clock = gpu.value("clock_sm_mhz")
    top = device.clock_max_sm_mhz if device is not None else math.nan
    if not math.isnan(clock) and not math.isnan(top) and top > 0:
        lines.append(
            translate("AlertDetails", "SM clock {clock} MHz of its {max} MHz maximum ({percent} %).").format(
                clock=f"{clock:.0f}", max=f"{top:.0f}", percent=f"{100 * clock / top:.0f}"
            )
        )
    elif not math.isnan(clock):
        lines.append(translate("AlertDetails", "SM clock {clock} MHz.").format(clock=f"{clock:.0f}"))
    reasons = gpu.value("clock_event_reasons")
    if not math.isnan(reasons):
        names = [translate("metrics", name) for name in clock_event_reason_names(int(reasons))]
        if names:
            lines.append(
                translate("AlertDetails", "Why: {reasons}.").format(reasons=translate("AlertDetails", ", ").join(names))
            )
    return lines


def heat_line(sample: Sample, gpu_index: int) -> str:
    """'At 92 °C; this GPU slows down at 90 °C and shuts down at 95 °C.' (the limits it tells)."""
    gpu = sample.gpu(gpu_index)
    device = next((d for d in sample.devices if d.index == gpu_index), None)
    if gpu is None or device is None or math.isnan(gpu.value("temperature_gpu_c")):
        return ""
    now = f"{gpu.value('temperature_gpu_c'):.0f}"
    slowdown, shutdown = device.temperature_slowdown_c, device.temperature_shutdown_c
    if not math.isnan(slowdown) and not math.isnan(shutdown):
        told = translate(
            "AlertDetails", "At {now} °C; this GPU slows down at {slowdown} °C and shuts down at {shutdown} °C."
        )
    elif not math.isnan(slowdown):
        told = translate("AlertDetails", "At {now} °C; this GPU slows down at {slowdown} °C.")
    elif not math.isnan(shutdown):
        told = translate("AlertDetails", "At {now} °C; this GPU shuts down at {shutdown} °C.")
    else:
        told = translate("AlertDetails", "At {now} °C; this GPU does not tell its limits.")
    return told.format(now=now, slowdown=f"{slowdown:.0f}", shutdown=f"{shutdown:.0f}")
