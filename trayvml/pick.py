"""Choosing the freest GPUs for CUDA_VISIBLE_DEVICES (tf_gpu_manager's modes, py3nvml's grab_gpus)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager

from trayvml.core.errors import NotEnoughGpusError, TrayvmlError
from trayvml.core.sample import GpuSample, Sample
from trayvml.core.units import MIB

CRITERIA = ("memory", "memory-ratio", "power", "utilization")


def _score(gpu: GpuSample, by: str) -> float:
    """Lower is better; NaN (unknown) sorts last."""
    free = gpu.value("memory_free_bytes")
    if by == "memory":
        return -free
    if by == "memory-ratio":
        used, reserved = gpu.value("memory_used_bytes"), gpu.value("memory_reserved_bytes")
        total = free + used + (0.0 if math.isnan(reserved) else reserved)
        return -free / total if total else math.nan
    if by == "power":
        return gpu.value("power_used_percent")
    return gpu.value("utilization_gpu_percent")


def choose(sample: Sample, count: int = 1, by: str = "memory", min_free_mib: float = 0) -> list[int]:
    """Indices of the ``count`` best GPUs in ``sample``; raises NotEnoughGpusError with a sentence."""
    if by not in CRITERIA:
        raise TrayvmlError(f"Unknown criterion {by!r}: choose one of {', '.join(CRITERIA)}.")
    if count < 1:
        raise TrayvmlError("The number of GPUs to pick must be at least 1.")
    # A GPU in MIG mode cannot be used whole: its MIG devices (each its own index and UUID) can.
    in_mig_mode = {d.index for d in sample.devices if d.mig_mode_current}
    qualifying = [
        g
        for g in sample.gpus
        if not g.lost and g.index not in in_mig_mode and g.value("memory_free_bytes") >= min_free_mib * MIB
    ]
    if len(qualifying) < count:
        condition = f" with at least {min_free_mib:g} MiB free" if min_free_mib else ""
        lost = sum(g.lost for g in sample.gpus)
        lost_note = f" ({lost} lost)" if lost else ""
        raise NotEnoughGpusError(
            f"{count} GPU{'s' if count > 1 else ''} asked for, but only {len(qualifying)} of "
            f"{len(sample.gpus)}{lost_note} qualif{'y' if len(qualifying) != 1 else 'ies'}{condition}."
        )

    def key(g: GpuSample) -> tuple[bool, float, int]:
        score = _score(g, by)
        return (math.isnan(score), 0.0 if math.isnan(score) else score, g.index)

    return [g.index for g in sorted(qualifying, key=key)[:count]]


def pick_gpus(count: int = 1, by: str = "memory", min_free_mib: float = 0, simulate: str | None = None) -> list[int]:
    """Read the GPUs now and return the indices of the ``count`` freest.

    Raises NotEnoughGpusError when too few qualify and TrayvmlError when NVML is unavailable.
    Indices follow NVML's (PCI bus) order; :func:`visible_gpus` makes CUDA use that order.
    """
    from trayvml.nvml.sim import simulation_from
    from trayvml.source import Source

    source = Source(simulation_from(simulate), host=False)
    try:
        sample = source.sample()
    finally:
        source.close()
    if sample.unavailable is not None:
        raise TrayvmlError(sample.unavailable.sentence)
    return choose(sample, count, by, min_free_mib)


@contextmanager
def visible_gpus(
    count: int = 1, by: str = "memory", min_free_mib: float = 0, simulate: str | None = None
) -> Iterator[list[int]]:
    """Within the block, CUDA sees only the picked GPUs; the environment is restored after.

    ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` is set too, so CUDA numbers GPUs as NVML does.
    """
    chosen = pick_gpus(count, by, min_free_mib, simulate)
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
