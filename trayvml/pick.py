"""Choosing the freest GPUs for CUDA_VISIBLE_DEVICES (tf_gpu_manager's modes, py3nvml's grab_gpus)."""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from trayvml.core.errors import NotEnoughGpusError, TrayvmlError
from trayvml.core.i18n import translate
from trayvml.core.sample import GpuSample, MetricState, Sample
from trayvml.core.units import MIB

if TYPE_CHECKING:
    from trayvml.source import Source

CRITERIA = ("memory", "memory-ratio", "power", "utilization")
_INDEX = re.compile(r"[0-9]+")  # ASCII digits: "²".isdigit() is True, and int("²") fails
# A GPU busier than this is not handed out by `pick` and pick_gpus: a job sharing a GPU that is
# already 96 % busy runs at half speed at best. 100 takes any GPU.
DEFAULT_MAX_UTIL = 50.0


def busy_percent(gpu: GpuSample) -> float:
    """How busy ``gpu`` is now: its utilization, or its SM activity where it has no utilization
    (a MIG device: NVML answers not supported for it); NaN where neither is known."""
    for key in ("utilization_gpu_percent", "sm_activity_percent"):
        if gpu.state(key) is MetricState.OK and not math.isnan(gpu.value(key)):
            return gpu.value(key)
    return math.nan


def _free_bytes(gpu: GpuSample, total_bytes: float) -> float:
    """Its free memory: an asleep GPU's is all of it (runtime-suspended, it holds no context), told
    without waking it; NaN where not known."""
    return total_bytes if gpu.asleep else gpu.value("memory_free_bytes")


def _score(gpu: GpuSample, by: str, free: float) -> float:
    """Lower is better; NaN (unknown) sorts last."""
    if by == "memory":
        return -free
    if by == "memory-ratio":
        if gpu.asleep:
            return -1.0  # all of it free (_free_bytes), its use not read
        used, reserved = gpu.value("memory_used_bytes"), gpu.value("memory_reserved_bytes")
        total = free + used + (0.0 if math.isnan(reserved) else reserved)
        return -free / total if total else math.nan
    if by == "power":
        return gpu.value("power_used_percent")
    return busy_percent(gpu)  # a MIG device's SM activity (it has no utilization: it sorted by index)


def choose(
    sample: Sample,
    count: int = 1,
    by: str = "memory",
    min_free_mib: float = 0,
    max_util: float = 100.0,
    among: Collection[int] | None = None,
) -> list[int]:
    """Indices of the ``count`` best GPUs in ``sample``; raises NotEnoughGpusError with a sentence.

    A GPU more than ``max_util`` percent busy does not qualify. One whose business is unknown is
    not held against it: it is not known to be busy (the criterion ``utilization`` sorts it last).
    ``among``: the indices to choose from (those CUDA_VISIBLE_DEVICES names: :func:`cuda_pool`);
    None: every GPU.
    """
    if by not in CRITERIA:
        raise TrayvmlError(
            translate("pick", "Unknown criterion {criterion}: choose one of {choices}.").format(
                criterion=repr(by), choices=", ".join(CRITERIA)
            )
        )
    # (The Python API's callers pass anything: 2.5 GPUs raised a bare TypeError, -1 % was taken.)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise TrayvmlError(translate("pick", "The number of GPUs to pick must be a whole number, at least 1."))
    if not 0 <= max_util <= 100:
        raise TrayvmlError(translate("pick", "The busiest a GPU may be must be from 0 to 100 %."))
    if not min_free_mib >= 0:  # (NaN too)
        raise TrayvmlError(translate("pick", "The free memory asked for must be 0 MiB or more."))
    # A GPU in MIG mode cannot be used whole: its MIG devices (each its own index and UUID) can.
    in_mig_mode = {d.index for d in sample.devices if d.mig_mode_current}
    pool = [g for g in sample.gpus if among is None or g.index in among]
    candidates = [g for g in pool if not g.lost and g.index not in in_mig_mode]
    # A CUDA process sees one MIG device only, however many CUDA_VISIBLE_DEVICES names (NVIDIA's
    # MIG user guide, "CUDA Device Enumeration"): three handed to one process trained on one.
    mig_devices = {d.index for d in sample.devices if d.mig_parent_index >= 0}
    mig_left_out = count > 1 and any(g.index in mig_devices for g in candidates)
    if mig_left_out:
        candidates = [g for g in candidates if g.index not in mig_devices]
    totals = {d.index: d.memory_total_bytes for d in sample.devices}
    free = {g.index: _free_bytes(g, totals.get(g.index, math.nan)) for g in candidates}
    busy = [g for g in candidates if busy_percent(g) > max_util]  # NaN compares False: not known busy
    # Memory not known to be free enough fails a --min-free-mib; without one it counts against no GPU.
    qualifying = [g for g in candidates if g not in busy and (min_free_mib <= 0 or free[g.index] >= min_free_mib * MIB)]
    if len(qualifying) < count:
        percent = f"{max_util:g}"
        if mig_left_out:
            raise NotEnoughGpusError(
                translate(
                    "pick",
                    "{count} GPUs asked for, but a CUDA process sees only one MIG device (NVIDIA's MIG user guide):"
                    " ask for one for each process (whole GPUs that qualify: {whole}).",
                ).format(count=count, whole=len(qualifying))
            )
        if busy and len(busy) == len(pool):
            raise NotEnoughGpusError(
                translate("pick", "No GPU is free: all {total} are more than {percent} % busy.").format(
                    total=len(pool), percent=percent
                )
                if len(busy) > 1
                else translate("pick", "No GPU is free: the only one is more than {percent} % busy.").format(
                    percent=percent
                )
            )
        if min_free_mib and max_util < 100:
            condition = translate("pick", " with at least {mib} MiB free and at most {percent} % busy")
        elif min_free_mib:
            condition = translate("pick", " with at least {mib} MiB free")
        elif max_util < 100:
            condition = translate("pick", " at most {percent} % busy")
        else:
            condition = ""
        condition = condition.format(mib=f"{min_free_mib:g}", percent=percent)
        lost = sum(g.lost for g in pool)
        lost_note = translate("pick", " ({lost} lost)").format(lost=lost) if lost else ""
        if count == 1:  # then none qualifies
            sentence = translate("pick", "1 GPU asked for, but only {qualifying} of {total}{lost} qualify{condition}.")
        elif len(qualifying) == 1:
            sentence = translate("pick", "{count} GPUs asked for, but only 1 of {total}{lost} qualifies{condition}.")
        else:
            sentence = translate(
                "pick", "{count} GPUs asked for, but only {qualifying} of {total}{lost} qualify{condition}."
            )
        raise NotEnoughGpusError(
            sentence.format(
                count=count,
                qualifying=len(qualifying),
                total=len(pool),
                lost=lost_note,
                condition=condition,
            )
        )

    def key(g: GpuSample) -> tuple[bool, float, int]:
        score = _score(g, by, free[g.index])
        return (math.isnan(score), 0.0 if math.isnan(score) else score, g.index)

    return [g.index for g in sorted(qualifying, key=key)[:count]]


def cuda_pool(sample: Sample, environ: dict[str, str] | os._Environ[str] = os.environ) -> list[int] | None:
    """The indices of ``sample``'s GPUs that an existing CUDA_VISIBLE_DEVICES lets CUDA see (a Slurm
    job's allocation, a container's, a wrapper script's), to choose among; None where it is not
    set: every GPU. Handing out a GPU outside it gave a job a GPU it may not use, or none at all.

    Read as CUDA reads it (the CUDA programming guide's environment variables): indices or UUIDs
    (``GPU-…``, ``MIG-…``, or enough of one's start to name one GPU only), the first entry that
    names no GPU ends the list, and a GPU named twice leaves none. An index is CUDA's, which is NVML's under
    CUDA_DEVICE_ORDER=PCI_BUS_ID; under CUDA's default order (the fastest first, the rest
    unspecified) only where every GPU is the same model, else TrayvmlError. A GPU in MIG mode
    named stands for its MIG devices. Raises NotEnoughGpusError where it lets CUDA see none.
    """
    value = environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    whole = [d for d in sample.devices if d.mig_parent_index < 0]
    by_order = environ.get("CUDA_DEVICE_ORDER", "FASTEST_FIRST").strip().upper() == "PCI_BUS_ID"
    seen: list[int] = []
    named_before: set[int] = set()
    for entry in (e.strip() for e in value.split(",")):
        if _INDEX.fullmatch(entry):
            if not by_order and len({d.name for d in whole}) > 1:
                raise TrayvmlError(
                    translate(
                        "pick",
                        "CUDA_VISIBLE_DEVICES={value} names GPUs by CUDA's index, which is NVML's only with"
                        " CUDA_DEVICE_ORDER=PCI_BUS_ID on a machine of more than one GPU model: set that, or"
                        " name the GPUs by UUID.",
                    ).format(value=repr(value))
                )
            named = [d for d in whole if d.index == int(entry)]
        else:
            named = [d for d in sample.devices if entry and d.uuid.startswith(entry)]
        if len(named) != 1:  # no GPU, or more than one: CUDA stops at the first entry it cannot use
            break
        (device,) = named
        if device.index in named_before:  # a GPU named twice: CUDA sees none at all (as PyTorch models it)
            seen = []
            break
        named_before.add(device.index)
        mig = [d.index for d in sample.devices if d.mig_parent_index == device.index]
        seen.extend(i for i in (mig if device.mig_mode_current else [device.index]) if i not in seen)
    if not seen:
        raise NotEnoughGpusError(
            translate(
                "pick",
                "CUDA_VISIBLE_DEVICES={value} lets CUDA see none of this machine's GPUs: unset it to choose among all.",
            ).format(value=repr(value))
        )
    return seen


def sample_to_pick(source: Source) -> Sample:
    """A sample to choose from: read twice, SETTLE_S apart, where a GPU's busyness needs two
    readings (a MIG device's SM activity, from GPM). Taken from the first, a MIG device at 75 %
    was not known to be busy, and handed out past --max-util."""
    from trayvml.source import SETTLE_S

    sample = source.sample()
    if sample.stall is None and any(_busy_not_yet(g) for g in sample.gpus):
        source.clock.sleep_s(SETTLE_S)
        sample = source.sample()
    return sample


def _busy_not_yet(gpu: GpuSample) -> bool:
    return math.isnan(busy_percent(gpu)) and gpu.state("sm_activity_percent") is MetricState.NOT_YET


def uuids(sample: Sample, chosen: list[int]) -> list[str]:
    """The chosen GPUs' UUIDs (CUDA takes them, and a MIG device by its UUID only); raises
    TrayvmlError where one is not known (a GPU asleep since the driver was opened: an empty
    UUID hid every GPU from CUDA)."""
    by_index = {d.index: d for d in sample.devices}
    unknown = [i for i in chosen if not by_index[i].uuid]
    if unknown:
        raise TrayvmlError(
            translate(
                "pick", "GPU {index}'s UUID is not known yet (it has slept since the driver was opened): pick by index."
            ).format(index=unknown[0])
        )
    return [by_index[i].uuid for i in chosen]


def cuda_ids(sample: Sample, chosen: list[int]) -> list[int] | list[str]:
    """What CUDA_VISIBLE_DEVICES must name for the rows ``chosen`` of ``sample``.

    CUDA takes a MIG device only by its ``MIG-`` UUID (CUDA's environment variables: "MIG-<UUID>"), and
    a machine with a GPU in MIG mode numbers its CUDA devices unlike NVML, so there every chosen device
    goes by its UUID (CUDA takes a whole GPU's ``GPU-`` UUID too). Elsewhere NVML's index is CUDA's,
    given ``CUDA_DEVICE_ORDER=PCI_BUS_ID``.
    """
    mig = any(d.mig_mode_current or d.mig_parent_index >= 0 for d in sample.devices)
    return uuids(sample, chosen) if mig else list(chosen)


def pick_gpus(
    count: int = 1,
    by: str = "memory",
    min_free_mib: float = 0,
    simulate: str | None = None,
    max_util: float = DEFAULT_MAX_UTIL,
) -> list[int] | list[str]:
    """Read the GPUs now and return the ``count`` freest, as CUDA_VISIBLE_DEVICES names them.

    A GPU more than ``max_util`` percent busy does not qualify (100: any).

    Raises NotEnoughGpusError when too few qualify and TrayvmlError when NVML is unavailable or the
    driver does not answer.
    Indices follow NVML's (PCI bus) order; :func:`visible_gpus` makes CUDA use that order. On a
    machine with MIG the answer is UUIDs instead (``MIG-…`` for a MIG device): see :func:`cuda_ids`.
    """
    from trayvml.nvml.sim import simulation_from
    from trayvml.source import Source

    source = Source(simulation_from(simulate), host=False)
    try:
        sample = sample_to_pick(source)
    finally:
        source.close()
    if sample.problem is not None:  # NVML unusable, or the driver not answering: no GPU is known free
        raise TrayvmlError(sample.problem[1])
    return cuda_ids(sample, choose(sample, count, by, min_free_mib, max_util, cuda_pool(sample)))


# CUDA_VISIBLE_DEVICES is one for the whole process: two threads' blocks overlapping each set it
# and restored the other's value, leaving it set after both ended.
_VISIBLE_HELD = threading.RLock()


@contextmanager
def visible_gpus(
    count: int = 1,
    by: str = "memory",
    min_free_mib: float = 0,
    simulate: str | None = None,
    max_util: float = DEFAULT_MAX_UTIL,
) -> Iterator[list[int] | list[str]]:
    """Within the block, CUDA sees only the picked GPUs; the environment is restored after.

    ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` is set too, so CUDA numbers GPUs as NVML does. Where
    CUDA_VISIBLE_DEVICES is set already, the GPUs are picked among those it names. Blocks nest in
    one thread; one in another thread while a block is open raises TrayvmlError (the variables
    are the process's).
    """
    if not _VISIBLE_HELD.acquire(blocking=False):
        raise TrayvmlError(
            translate(
                "pick",
                "visible_gpus is in use in another thread: CUDA_VISIBLE_DEVICES is one for the whole process.",
            )
        )
    try:
        chosen = pick_gpus(count, by, min_free_mib, simulate, max_util)
        saved = {name: os.environ.get(name) for name in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")}
        os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, chosen))
        try:
            yield chosen
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    finally:
        _VISIBLE_HELD.release()
