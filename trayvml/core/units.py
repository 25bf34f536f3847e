"""Formatting values for people. Values arrive in base units (bytes, watts, joules, °C)."""

from __future__ import annotations

import math
import re

from trayvml.core.metrics import CLOCK_EVENT_REASONS, Metric, Unit

_GIB = 2**30
_MIB = 2**20
_KIB = 2**10


def format_bytes(value: float) -> str:
    if math.isnan(value):
        return "–"
    magnitude = abs(value)
    if magnitude >= _GIB:
        return f"{value / _GIB:.1f} GiB"
    if magnitude >= _MIB:
        return f"{value / _MIB:.0f} MiB"
    if magnitude >= _KIB:
        return f"{value / _KIB:.0f} KiB"
    return f"{value:.0f} B"


def clock_event_reason_names(bitmask: int) -> list[str]:
    return [name for bit, name in CLOCK_EVENT_REASONS if bitmask & bit]


def format_value(metric: Metric, value: float) -> str:
    """A short human rendering, e.g. ``43 %``, ``12.1 GiB``, ``61 °C``, ``P0``."""
    if math.isnan(value):
        return "–"
    unit = metric.unit
    if unit is Unit.PERCENT:
        return f"{value:.0f} %"
    if unit is Unit.BYTES:
        return format_bytes(value)
    if unit is Unit.BYTES_PER_S:
        return format_bytes(value) + "/s"
    if unit is Unit.CELSIUS:
        return f"{value:.0f} °C"
    if unit is Unit.WATTS:
        return f"{value:.0f} W"
    if unit is Unit.JOULES:
        return f"{value / 1000:.1f} kJ" if value >= 10_000 else f"{value:.0f} J"
    if unit is Unit.MHZ:
        return f"{value:.0f} MHz"
    if unit is Unit.PSTATE:
        return f"P{value:.0f}"
    if unit is Unit.BITMASK:
        names = clock_event_reason_names(int(value))
        return ", ".join(names) if names else "none"
    if unit is Unit.FLAG:
        return "yes" if value else "no"
    if unit is Unit.PCIE_GEN:
        return f"Gen {value:.0f}"
    if unit is Unit.LANES:
        return f"x{value:.0f}"
    return f"{value:.0f}"


_NOISE = re.compile(r"\bNVIDIA\b|\bGeForce\b|\bGPU$|\b\d+GB\b|\bHBM\d*e?\b|\bPCIe\b|\bSXM\d*\b")


def short_name(name: str) -> str:
    """'NVIDIA GeForce RTX 4090' -> 'RTX 4090'; 'Tesla V100-SXM2-16GB' -> 'Tesla V100'."""
    short = " ".join(_NOISE.sub(" ", name).split())
    short = re.sub(r"(\s*-)+\s*$", "", re.sub(r"-(\s*-)+", "-", short)).strip(" -")
    return short or name
