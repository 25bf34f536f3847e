"""The words of the glance: tooltip lines, menu entries, summary rows."""

from __future__ import annotations

import math
from dataclasses import dataclass

from trayvml.core.demand import STORE_PROCESSES_S
from trayvml.core.formatting import format_value
from trayvml.core.i18n import translate
from trayvml.core.levels import Level
from trayvml.core.metrics import GPU_INDEX, GPU_METRIC_BY_KEY
from trayvml.core.safe_text import clean, shorten
from trayvml.core.sample import (
    UNKNOWN_NAME,
    DeviceInfo,
    GpuSample,
    MetricState,
    ProcessSample,
    Sample,
    job_text,
    naming,
    said_age_s,
    simulation_scenario,
)
from trayvml.core.units import GIB, fixed, format_bytes, short_name


def _value(gpu: GpuSample, key: str) -> str | None:
    at = GPU_INDEX[key]
    value = gpu.values[at]
    if gpu.states[at] is not MetricState.OK or math.isnan(value):
        return None
    return format_value(GPU_METRIC_BY_KEY[key], value).replace(" %", "%")


def used_of_total(used_bytes: float, total_bytes: float, digits: int = 1) -> str:
    """``12.1/80.0 GiB``: both in GiB, so they compare at a glance (``digits`` after the point);
    ``12.1 GiB`` where the total is not known (an exporter that serves the used memory alone), ``–``
    where the used memory is not."""
    if math.isnan(used_bytes):
        return "–"
    if math.isnan(total_bytes):
        return f"{fixed(used_bytes / GIB, digits)} GiB"
    return f"{fixed(used_bytes / GIB, digits)}/{fixed(total_bytes / GIB, digits)} GiB"


def gpu_line(gpu: GpuSample, info: DeviceInfo, compact: bool = False) -> str:
    """``0 H100 43% · 12.1/80.0 GiB · 61 °C · 210 W``; parts a GPU cannot tell are left out.

    ``compact``: the menu's row, ``0 H100 43% · 12/80 GiB · 61°C``. Tray hosts draw a menu as wide
    as its longest row and cut it at the screen's edge (rows of ~330 px were cut on common panels):
    it leaves out SM activity and power, and says a state in a word; the tooltip says it all.
    Plain text: each sink escapes it for its own syntax (see core.safe_text).
    """
    if gpu.lost and info.name == UNKNOWN_NAME:
        if compact:
            return translate("GpuText", "{index} — lost").format(index=gpu.index)
        return translate("GpuText", "{index} — lost before its name could be read: it has fallen off the bus").format(
            index=gpu.index
        )
    head = f"{gpu.index} {shorten(short_name(clean(info.name)))}"
    if compact and (gpu.lost or gpu.asleep or gpu.resting):
        if gpu.lost:
            return translate("GpuText", "{gpu} — lost").format(gpu=head)
        if gpu.asleep:
            return translate("GpuText", "{gpu} — asleep").format(gpu=head)
        return translate("GpuText", "{gpu} — idle").format(gpu=head)
    if gpu.lost:
        return translate("GpuText", "{gpu} — lost: it has fallen off the bus").format(gpu=head)
    if gpu.asleep:
        return translate("GpuText", "{gpu} — asleep (runtime-suspended): not queried, so it stays asleep").format(
            gpu=head
        )
    if gpu.resting:
        return translate("GpuText", "{gpu} — idle: read now and then, so that it can go to sleep").format(gpu=head)
    if gpu.stopped_s:  # a remote GPU whose series stopped (remote/fetch.py)
        if compact:
            return translate("GpuText", "{gpu} — no new values").format(gpu=head)
        return translate("GpuText", "{gpu} — no new values for {age} s").format(gpu=head, age=gpu.stopped_s)
    parts = []
    util = _value(gpu, "utilization_gpu_percent")
    if util:
        head += f" {util}"
    sm_activity = _value(gpu, "sm_activity_percent")  # GPM: what the SMs really do, where read
    if sm_activity and not compact:
        head += f" (SM {sm_activity})"
    used = gpu.value("memory_used_bytes")
    if not math.isnan(used):
        parts.append(used_of_total(used, info.memory_total_bytes, 0 if compact else 1))
    for key in ("temperature_gpu_c",) if compact else ("temperature_gpu_c", "power_draw_w"):
        text = _value(gpu, key)
        if text:
            parts.append(text.replace(" °C", "°C") if compact else text)
    return " · ".join([head, *parts])


MENU_JOB_LIMIT = 28  # characters of a job's name in a menu row (hosts cut wide menus at the edge)


UNNAMED_JOBS = ("pid", "process")  # a process, or a process tree's root: no name of its own


def biggest_job(gpu: GpuSample) -> tuple[str, str, float, str]:
    """(job, its users, its memory, its kind) of the job holding most of the GPU's memory, among the
    processes whose job can be seen here; ("", "", NaN, "") where the lists were not read this tick
    (they are read only while someone needs them: an old list is not shown as current) or nothing
    visible runs."""
    if gpu.state("process_count") is not MetricState.OK:
        return "", "", math.nan, ""
    jobs: dict[tuple[str, str, float], list[ProcessSample]] = {}
    for process in gpu.processes:
        if not process.unseen:  # their jobs cannot be read: not guessed
            jobs.setdefault(process.job_identity, []).append(process)
    if not jobs:
        return "", "", math.nan, ""

    def memory(procs: list[ProcessSample]) -> float:
        return sum(p.used_memory_bytes for p in procs if not math.isnan(p.used_memory_bytes))

    procs = max(jobs.values(), key=memory)
    users = ", ".join(sorted({clean(p.user) for p in procs if p.user}))
    named = naming(procs)
    return clean(job_text(named)), users, memory(procs), named.job[0]


def job_line(gpu: GpuSample, compact: bool = False) -> str:
    """The tooltip's line under a GPU, ``container 3f2a9c1b7e4d (alice) 70.1 GiB``; the menu's
    (``compact``), the job's name alone, shortened, and only a named job (a notebook, container,
    Slurm job, unit or session): a bare PID would lengthen the row and say little; "" where no job
    can be named."""
    job, users, memory, kind = biggest_job(gpu)
    if not job:
        return ""
    if compact:
        return "" if kind in UNNAMED_JOBS else shorten(job, MENU_JOB_LIMIT)
    who = f" ({shorten(users)})" if users else ""
    return f"{shorten(job)}{who} {format_bytes(memory)}" if memory else f"{shorten(job)}{who}"


# A job read earlier is said (with its age) for this long: three of the store's list readings, so
# that one reading missed (a slow tick) does not blank it, and one that ended is gone soon after.
JOB_KEPT_S = 3 * STORE_PROCESSES_S
# The job read earlier is dropped at once where the GPU's memory use has moved by more than this
# share of the job's memory since (the job ended, or another one may now be the biggest).
JOB_MEMORY_CHANGE = 0.5
JOB_MEMORY_CHANGE_BYTES = 256 * 2**20  # where the job's own memory is not told


@dataclass(frozen=True)
class _SeenJob:
    line: str  # job_line's, as read then
    compact: str  # job_line's menu text ("": none for the menu)
    memory_bytes: float  # the job's
    gpu_used_bytes: float  # the GPU's memory use then
    read_s: float


class LastJobs:
    """The biggest job of each GPU as its process lists were last read, for the ticks that read no
    lists (the idle tray reads them every STORE_PROCESSES_S for the history on disk): said with
    its age, never as if read now, and dropped once older than JOB_KEPT_S or once the GPU's memory
    use says that it may have changed."""

    def __init__(self) -> None:
        self._seen: dict[int, _SeenJob] = {}

    def note(self, sample: Sample | None) -> None:
        """Keep what ``sample`` read; a lost or sleeping GPU's job is forgotten."""
        if sample is None:
            return
        for gpu in sample.gpus:
            if gpu.lost or gpu.asleep:
                self._seen.pop(gpu.index, None)
            elif gpu.state("process_count") is MetricState.OK:
                job, _, memory, _ = biggest_job(gpu)
                if job:
                    used = gpu.value("memory_used_bytes")
                    seen = _SeenJob(job_line(gpu), job_line(gpu, True), memory, used, sample.timestamp_s)
                    self._seen[gpu.index] = seen
                else:
                    self._seen.pop(gpu.index, None)  # read, and nothing visible runs

    def line(self, gpu: GpuSample, now_s: float, compact: bool = False) -> str:
        """job_line's text: live where ``gpu`` read its lists, else the last one read, with its age
        ("… (as of 8 s ago)"), or "" where there is none recent enough to say."""
        if gpu.state("process_count") is MetricState.OK:
            return job_line(gpu, compact)
        seen = self._recent(gpu, now_s)
        text = "" if seen is None else seen.compact if compact else seen.line
        if seen is None or not text:
            return ""
        age_s = now_s - seen.read_s
        if compact:
            return translate("GpuText", "{job} ({age} s ago)").format(job=text, age=f"{age_s:.0f}")
        return translate("GpuText", "{job} (as of {age} s ago)").format(job=text, age=f"{age_s:.0f}")

    def menu_name(self, gpu: GpuSample, now_s: float) -> str:
        """The compact job name ``line`` says in the menu, without its age: what changes the row's
        width (the tray sets its menu's texts anew where it changes)."""
        if gpu.state("process_count") is MetricState.OK:
            return job_line(gpu, True)
        seen = self._recent(gpu, now_s)
        return "" if seen is None else seen.compact

    def _recent(self, gpu: GpuSample, now_s: float) -> _SeenJob | None:
        """The job read earlier, where it is still recent enough to say (JOB_KEPT_S, JOB_MEMORY_CHANGE)."""
        seen = self._seen.get(gpu.index)
        if seen is None:
            return None
        memory = seen.memory_bytes
        limit = JOB_MEMORY_CHANGE * memory if memory > 0 else JOB_MEMORY_CHANGE_BYTES
        change = abs(gpu.value("memory_used_bytes") - seen.gpu_used_bytes)  # NaN where either is unknown
        return seen if 0 <= now_s - seen.read_s <= JOB_KEPT_S and change <= limit else None


def host_line(sample: Sample) -> str:
    host = sample.host
    if host is None:
        return ""
    cpu = host.value("cpu_percent")
    used, total = host.value("ram_used_bytes"), host.value("ram_total_bytes")
    cpu_text = "–" if math.isnan(cpu) else f"{fixed(cpu)}%"
    return translate("GpuText", "Host CPU {cpu} · RAM {ram}").format(cpu=cpu_text, ram=used_of_total(used, total))


def gpu_lines(sample: Sample | None, compact: bool = False) -> list[str]:
    """One line per GPU: the tooltip's, or (``compact``) the menu's."""
    if sample is None:
        return []
    return [gpu_line(g, i, compact) for g, i in zip(sample.gpus, sample.devices, strict=True)]


def simulation_text(sample: Sample) -> str:
    """The sample's simulation label (English in JSON and logs), in the user's language."""
    scenario = simulation_scenario(sample.simulation)
    # core.sample.SIMULATED_GPUS's words, written out for the translators' tools to find
    return translate("GpuText", "simulated GPUs ({scenario})").format(scenario=scenario) if sample.simulation else ""


def origin_text(sample: Sample, url: str) -> str:
    """Where a remote host's current values came from: ``from trayvml serve at URL``, or ``from
    DCGM via URL, as of 9 s ago`` where a server in between holds them (``unchanged for 9 s``
    where the exporter itself answered the same values); "" for this machine's.
    ``url``: the sample's URL, made safe by the caller for where it is shown."""
    if sample.remote is None or sample.remote.fault:
        return ""
    kind = sample.remote.kind
    age_s = said_age_s(sample.values_ago_s)
    if not sample.remote.via_server:  # an age: the exporter answered the same values (fetch.UnchangedValues)
        if age_s:
            return translate("remote", "from {kind} at {url}, unchanged for {age} s").format(
                kind=kind, url=url, age=age_s
            )
        return translate("remote", "from {kind} at {url}").format(kind=kind, url=url)
    if age_s:
        return translate("remote", "from {kind} via {url}, as of {age} s ago").format(kind=kind, url=url, age=age_s)
    return translate("remote", "from {kind} via {url}").format(kind=kind, url=url)


@dataclass(frozen=True)
class Headline:
    """What the icon's number is: ``metric``'s value on GPU ``gpu`` (of ``host``; "": this machine).

    ``level``: the tile's colour; where it is a warning or critical, ``metric`` is the one whose
    alert rule coloured it, so the number and the colour tell of the same thing.
    """

    value: float
    metric: str  # a GPU_METRICS key
    gpu: int
    level: Level = Level.NORMAL
    host: str = ""
    unreachable: bool = False  # ``host`` does not answer: no value, no GPU (the tile a warning's)


def headline_text(headline: Headline) -> str:
    """``86 °C: GPU temperature, GPU 0 (critical)``: the tooltip's first line, saying what the
    icon's number is, so that a red "86" is not read as degrees when it is a percentage."""
    where = (
        translate("GpuText", "GPU {index} on {host}").format(index=headline.gpu, host=clean(headline.host))
        if headline.host
        else translate("GpuText", "GPU {index}").format(index=headline.gpu)
    )
    if headline.unreachable:
        return translate("GpuText", "{host} is unreachable: the icon shows no number").format(host=clean(headline.host))
    if headline.level is Level.LOST:
        return translate("GpuText", "{gpu} is lost: the icon shows no number").format(gpu=where)
    metric = GPU_METRIC_BY_KEY[headline.metric]
    value = format_value(metric, headline.value)
    label = translate("metrics", metric.label)
    if headline.level is Level.CRITICAL:
        text = translate("GpuText", "{value}: {metric}, {gpu} (critical)")
    elif headline.level is Level.WARNING:
        text = translate("GpuText", "{value}: {metric}, {gpu} (warning)")
    else:
        text = translate("GpuText", "{value}: {metric}, {gpu} (the highest)")
    return text.format(value=value, metric=label, gpu=where)


def tooltip(
    sample: Sample | None,
    gpu_text: list[str] | None = None,
    headline: Headline | None = None,
    jobs: LastJobs | None = None,
) -> str:
    """``gpu_text``: the GPU lines, where the caller has made them already; ``headline``: what
    the icon's number is, said first; ``jobs``: the jobs last read, said with their age on ticks
    that read no lists (None: only jobs read in this sample)."""
    lines = (
        [headline_text(headline)] if headline is not None else []
    )  # (a remote host's, before this machine's first sample)
    if sample is None:
        return "\n".join([*lines, translate("GpuText", "trayvml — starting…")])
    lines += [f"trayvml — {simulation_text(sample)}" if sample.simulation else "trayvml"]
    problem = sample.problem
    if problem is not None:
        lines.append(problem[1])
    for gpu, line in zip(sample.gpus, gpu_lines(sample) if gpu_text is None else gpu_text, strict=False):
        lines.append(line)
        job = job_line(gpu) if jobs is None else jobs.line(gpu, sample.timestamp_s)
        if job:
            lines.append(f"   {job}")  # indented: it belongs to the GPU above
    host = host_line(sample)
    if host:
        lines.append(host)
    return "\n".join(lines)
