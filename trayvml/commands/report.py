"""Snapshots for people (a gpustat-like table) and for programs (JSON with units in the keys)."""

from __future__ import annotations

import math
import os
import shutil
import sys
import unicodedata
from datetime import datetime
from typing import Any

from trayvml import __version__
from trayvml.core.formatting import at_least, format_static, format_value
from trayvml.core.i18n import translate
from trayvml.core.lines import job_line
from trayvml.core.metrics import GPM_MISSING, GPU_METRICS, HOST_METRICS
from trayvml.core.safe_text import json_text, terminal_text
from trayvml.core.sample import (
    JOB_KINDS,
    DeviceInfo,
    GpuSample,
    MetricState,
    Sample,
    hidden_processes_words,
    simulation_scenario,
)
from trayvml.core.static_fields import STATIC_FIELDS
from trayvml.core.units import format_bytes, format_clock
from trayvml.monitor.energy import EnergyMeter, job_key

_GPU = {m.key: m for m in GPU_METRICS}
_HOST = {m.key: m for m in HOST_METRICS}


def _number(value: float) -> float | None:
    """A value for JSON: null where it is none (NaN) or none JSON can hold (a remote host's
    infinity: written as Infinity, no parser but Python's read the snapshot)."""
    return value if math.isfinite(value) else None


def _show(gpu: GpuSample, key: str) -> str:
    state = gpu.state(key)
    if state in (MetricState.NOT_SUPPORTED, MetricState.NO_PERMISSION, MetricState.LOST):
        return "n/a"
    return format_value(_GPU[key], gpu.value(key))


def simulation_banner(sample: Sample) -> str:
    if not sample.simulation:
        return ""
    scenario = simulation_scenario(sample.simulation)
    return translate("report", "SIMULATED: simulated GPUs ({scenario}), not real hardware").format(scenario=scenario)


def _process_text(proc: Any) -> str:
    who = terminal_text(proc.name) if proc.name else (translate("report", "(hidden)") if proc.no_permission else "?")
    memory = "" if math.isnan(proc.used_memory_bytes) else f" {format_bytes(proc.used_memory_bytes)}"
    user = f"{terminal_text(proc.user)}:" if proc.user else ""
    job = proc.attribution
    # Which job it works for, where known: "[notebook exp/train.ipynb]", "[container docker 34048520ee4d]".
    kind = translate("jobs", JOB_KINDS[job.job_kind]) if job.job else ""
    # A container whose runtime is unknown is named "container 3f2a…" already: its kind not said twice.
    named = job.job if job.job_kind == "container" and job.job.startswith("container ") else f"{kind} {job.job}"
    shown = f" [{terminal_text(named)}]" if job.job else ""
    return f"{user}{who}/{proc.pid}{memory}{shown}"


def text_snapshot(
    sample: Sample, full: bool = False, host_column: str = "", notes: bool = False, width: int | None = None
) -> str:
    """``host_column``: start every GPU line with it (the host column of ``snapshot --remote``).

    ``notes``: end with the reader's notes (a driver function it works around), for -v.
    ``width``: the columns a GPU row may take (None: the terminal's, see terminal_width)."""
    if width is None:
        width = terminal_width()
    when = format_clock(sample.timestamp_s, date=True)
    system = sample.system
    lines = []
    header = [f"trayvml {__version__}", when]
    if system:
        header[1:1] = [terminal_text(system.hostname)]
        header += [translate("report", "driver {version}").format(version=terminal_text(system.driver_version))]
        if system.cuda_driver_version:  # a remote exporter may not say it
            header.append(f"CUDA {terminal_text(system.cuda_driver_version)}")
    lines.append("  ".join(header))
    if sample.simulation:
        lines.append(simulation_banner(sample))
    if sample.problem is not None:
        lines.append(sample.problem[1])
    names = [terminal_text(d.shown_name) for d in sample.devices]  # a name from the driver is untrusted
    name_width = max(map(len, names), default=0)
    at = f"{terminal_text(host_column)} " if host_column else ""
    for gpu, info, name in zip(sample.gpus, sample.devices, names, strict=True):
        if gpu.lost:
            lost = translate("report", "GPU lost: it has fallen off the bus")
            lines.append(f"{at}[{gpu.index}] {name:<{name_width}} | {lost}")
            continue
        if gpu.asleep:
            asleep = translate("report", "asleep (runtime-suspended): not queried")
            lines.append(f"{at}[{gpu.index}] {name:<{name_width}} | {asleep}")
            continue
        if gpu.stopped_s:  # a remote GPU whose series stopped behind a Prometheus server
            stopped = translate("report", "no new values for {age} s").format(age=gpu.stopped_s)
            lines.append(f"{at}[{gpu.index}] {name:<{name_width}} | {stopped}")
            continue
        row, whole = _gpu_row(gpu, info, f"{at}[{gpu.index}] ", name, name_width, width)
        lines.append(row)
        if not whole and width is not None:
            job = _job_row(gpu, width)
            if job:
                lines.append(job)
        if full:
            lines.extend(_full_gpu(gpu, info))
    if sample.host is not None:
        host = sample.host

        def h(key: str) -> str:
            return format_value(_HOST[key], host.value(key))

        host_line = translate(
            "report",
            "host: CPU {cpu} · RAM {ram_used} / {ram_total} · swap {swap_used} / {swap_total} · "
            "disk read {disk_read} write {disk_write} · net rx {net_rx} tx {net_tx}",
        )
        lines.append(
            host_line.format(
                cpu=h("cpu_percent"),
                ram_used=h("ram_used_bytes"),
                ram_total=h("ram_total_bytes"),
                swap_used=h("swap_used_bytes"),
                swap_total=h("swap_total_bytes"),
                disk_read=h("disk_read_bytes_per_s"),
                disk_write=h("disk_write_bytes_per_s"),
                net_rx=h("net_rx_bytes_per_s"),
                net_tx=h("net_tx_bytes_per_s"),
            )
        )
    if notes:
        lines.extend(translate("report", "note: {note}").format(note=note) for note in sample.notes)
    return "\n".join(lines)


def terminal_width() -> int | None:
    """The terminal's width in columns, or None where output goes to a file or a pipe and no
    COLUMNS is set: a script reading the output gets every column."""
    if "COLUMNS" not in os.environ and not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns


JOB_INDENT = "    "


def _job_row(gpu: GpuSample, width: int) -> str:
    """The line under a GPU whose row had no room for its processes: its biggest job and how many
    processes cannot be seen here, ``    container 3f2a9c1b7e4d (alice) 53.9 GiB (+2 hidden)``, in
    ``width`` columns; "" where there is neither."""
    job = terminal_text(job_line(gpu))  # names any user chose: no control characters reach the terminal
    hidden = hidden_processes_words(gpu.processes)
    count = sum(1 for p in gpu.processes if p.unseen)
    text = f"{job} ({hidden})" if job and hidden else job or hidden
    if hidden and _columns(JOB_INDENT + text) > width:
        short = translate("report", "+{count} hidden").format(count=count)
        text = f"{job} ({short})" if job else short
    return _cut(JOB_INDENT + text, width) if text else ""


def _gpu_row(
    gpu: GpuSample, info: DeviceInfo, head: str, name: str, name_width: int, width: int | None
) -> tuple[str, bool]:
    """One GPU's row, fitted to ``width`` columns: a wrapped row breaks the table. What goes first
    is what the other rows or ``--full`` also tell: the processes (shortened, then left out: the
    line _job_row makes names the biggest job instead), the fan, the power limit, the power,
    memory's total; the name is cut last (its index stays). With it, whether the whole process
    list is in the row."""
    total = info.memory_total_bytes
    used = gpu.value("memory_used_bytes")
    draw = _show(gpu, "power_draw_w")
    limit = f" / {_show(gpu, 'power_enforced_limit_w')}" if draw != "n/a" else ""
    procs = " ".join(_process_text(p) for p in gpu.processes)
    hidden = hidden_processes_words(gpu.processes)
    if hidden:
        procs += f" ({hidden})"
    fan = translate("report", "fan {speed}").format(speed=f"{_show(gpu, 'fan_speed_percent'):>5}")

    def row(name_shown: str, drop: int, name_columns: int = name_width) -> str:
        memory = f"{format_bytes(used)} / {format_bytes(total)}" if drop < 4 else format_bytes(used)
        cells = [
            f"{head}{_padded(name_shown, name_columns)}",
            f"{_show(gpu, 'temperature_gpu_c'):>6}",
            f"{_show(gpu, 'utilization_gpu_percent'):>5}",
            f"{memory:>21}" if drop < 4 else f"{memory:>10}",
        ]
        if drop < 3:
            cells.append(f"{draw + limit:>13}" if drop < 2 else f"{draw:>6}")
        if drop < 1:
            cells.append(fan)
        return " | ".join(cells)

    if width is None:
        return row(name, 0) + (f" | {procs}" if procs else ""), True
    full = row(name, 0)
    if not procs and _columns(full) <= width:
        return full, True
    if procs and _columns(full) + 3 + _columns(procs) <= width:
        return f"{full} | {procs}", True
    if procs and _columns(full) + 3 + 12 <= width:  # room for the start of the list at least
        return f"{full} | {_cut(procs, width - _columns(full) - 3)}", False
    for drop in range(1, 5):
        shown = row(name, drop)
        if _columns(shown) <= width:
            return shown, not procs
    # Still too wide: the name column narrows (the index before it still says which GPU). Its
    # width depends on the table's longest name alone, so every row cuts it alike and stays aligned.
    narrower = max(4, name_width - (_columns(row(name, 4)) - width))
    return row(_cut(name, narrower), 4, narrower), not procs


def _cut(text: str, columns: int) -> str:
    """``text`` in at most ``columns`` terminal columns, ending in "…" where it was cut."""
    if _columns(text) <= columns:
        return text
    kept = ""
    for char in text:
        if _columns(kept + char) > columns - 1:
            break
        kept += char
    return kept + "…"


def _columns(text: str) -> int:
    """How many terminal columns ``text`` takes: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _padded(text: str, width: int) -> str:
    return text + " " * max(0, width - _columns(text))


def _full_gpu(gpu: GpuSample, info: DeviceInfo) -> list[str]:
    width = max(_columns(translate("metrics", m.label)) for m in GPU_METRICS)
    out = []
    for field in STATIC_FIELDS:
        value = getattr(info, field.key)
        text = format_static(field, value)
        if text:  # a fact the GPU does not tell is left out
            out.append(f"    {_padded(translate('metrics', field.label), width)}  {terminal_text(text)}")
    for metric in GPU_METRICS:
        state = gpu.state(metric.key)
        ok = state is MetricState.OK
        shown = format_value(metric, gpu.value(metric.key)) if ok else translate("metrics", state.label)
        if ok and metric.key in gpu.lower_bounds:
            shown = at_least(shown)
        out.append(f"    {_padded(translate('metrics', metric.label), width)}  {shown}")
    return out


def json_snapshot(sample: Sample, energy: EnergyMeter | None = None) -> dict[str, Any]:
    """Units are in the key names (bytes, watts, °C as _c, percent); NaN becomes null.

    ``energy``: a meter fed the samples so far (energy since it started, per GPU and process)."""
    gpus = []
    for gpu, info in zip(sample.gpus, sample.devices, strict=True):
        metrics = {}
        states = {}
        for metric, value, state in zip(GPU_METRICS, gpu.values, gpu.states, strict=True):
            metrics[metric.key] = _number(value) if state is MetricState.OK else None
            if state is not MetricState.OK:
                states[metric.key] = state.label
        gpus.append(
            {
                "host": json_text(sample.system.hostname) if sample.system else None,
                "index": gpu.index,
                "lost": gpu.lost,
                "asleep": gpu.asleep,
                # How long before the snapshot its values were read: 0 here; a remote GPU's behind a
                # Prometheus server is its last scrape (one whose series stopped: its "no new values").
                "values_age_s": None if math.isnan(gpu.values_ago_s) else round(gpu.values_ago_s, 3),
                "info": {f.key: _static_json(getattr(info, f.key)) for f in STATIC_FIELDS},
                "metrics": metrics,
                "states": states,
                # Values that are only "at least": a PCIe byte counter that may have wrapped more
                # than once between two reads (the true rate may be higher).
                "lower_bounds": sorted(gpu.lower_bounds),
                "energy": None
                if energy is None
                else {
                    "since_start_wh": _number(energy.since_start_wh(gpu.index)),
                    "method": energy.method(gpu.index) or None,
                    "unattributed_wh": _number(energy.unattributed_wh(gpu.index)),
                },
                "mig": None
                if info.mig_parent_index < 0
                else {"parent_index": info.mig_parent_index, "gpu_instance_id": info.gpu_instance_id},
                "gpm": {
                    "supported": info.gpm_supported,
                    "reason": None if info.gpm_supported else f"{GPM_MISSING}; this one answers not supported",
                },
                "nvlink_links": [
                    {"link": link, "tx_bytes_per_s": _number(tx), "rx_bytes_per_s": _number(rx)}
                    for link, (tx, rx) in enumerate(
                        zip(gpu.nvlink_link_tx_bytes_per_s, gpu.nvlink_link_rx_bytes_per_s, strict=True)
                    )
                ],
                # Counted where their names cannot be seen (other users', another PID namespace's).
                "hidden_processes": {
                    "other_users": sum(1 for p in gpu.processes if p.no_permission),
                    "other_pid_namespace": sum(1 for p in gpu.processes if p.foreign_pid),
                },
                "processes": [
                    {
                        "pid": p.pid,
                        "started_s": _number(p.started_s),  # with the PID, who it is (PIDs are reused)
                        "kind": p.kind,
                        "name": json_text(p.name),
                        "user": json_text(p.user),
                        "command": json_text(p.command),
                        "container": json_text(p.container),
                        "used_memory_bytes": _number(p.used_memory_bytes),
                        "no_permission": p.no_permission,
                        "sm_util_percent": _number(p.sm_util_percent),
                        "energy_wh": None if energy is None else energy.process_energy_wh(p),
                        "job": job_key(p),
                        "attribution": {
                            "job": json_text(p.attribution.job),
                            "kind": p.attribution.job_kind,
                            "container": json_text(p.attribution.container),
                            "container_name": json_text(p.attribution.container_name),
                            "runtime": p.attribution.runtime,
                            "slurm_job": p.attribution.slurm_job,
                            "slurm_job_name": json_text(p.attribution.slurm_job_name),
                            "unit": json_text(p.attribution.unit),
                            "session": json_text(p.attribution.session),
                            "notebook": json_text(p.attribution.notebook),
                            "kernel_id": p.attribution.kernel_id,
                            "root_pid": p.attribution.root_pid or None,
                        },
                        "job_energy_wh": None if energy is None else energy.job_energy_wh(p),
                    }
                    for p in gpu.processes
                ],
            }
        )
    host: dict[str, Any] | None = None
    if sample.host is not None:
        host = {m.key: _number(v) for m, v in zip(HOST_METRICS, sample.host.values, strict=True)}
        host["cpu_core_percent"] = [_number(v) for v in sample.host.cpu_core_percent]
    system = sample.system
    return {
        "trayvml_version": __version__,
        "timestamp": datetime.fromtimestamp(sample.timestamp_s).astimezone().isoformat(timespec="milliseconds"),
        "timestamp_s": sample.timestamp_s,
        "simulated": sample.simulation or None,
        "system": None if system is None else {k: _static_json(v) for k, v in vars(system).items()},
        "unavailable": None
        if sample.unavailable is None
        else {"reason": sample.unavailable.reason.value, "message": sample.unavailable.sentence},
        "driver_stall": None
        if sample.stall is None
        else {
            "since_s": sample.stall.since_s,
            "call": sample.stall.call or None,
            "message": sample.stall.sentence(sample.timestamp_s),
        },
        "gpus": gpus,
        "host": host,
        "notes": list(sample.notes),
    }


def _static_json(value: Any) -> Any:
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return json_text(value)
    return value
