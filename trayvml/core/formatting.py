"""A metric's value as text: short for the glance, precise for the readout, nvidia-smi's for CSV,
and the static facts. The catalog says what each metric is; this says how its value reads."""

from __future__ import annotations

import math

from trayvml.core.i18n import translate
from trayvml.core.metrics import CLOCK_EVENT_REASONS, Metric, SmiField
from trayvml.core.static_fields import StaticField
from trayvml.core.units import GIB, KIB, MIB, Unit, fixed, format_bytes


def clock_event_reason_names(bitmask: int) -> list[str]:
    return [name for bit, name in CLOCK_EVENT_REASONS if bitmask & bit]


def exact_text(value: float) -> str:
    """``value`` as a person would type it, read back as the same number: 15 digits where they say
    it exactly (83, not repr's 83.0), else Python's shortest exact form (95.12345678901235 cut to
    15 digits read back as another number, and a dialog left untouched changed the file)."""
    short = f"{value:.15g}"
    return short if float(short) == value else repr(value)


def whole_percent(value: float) -> float:
    """A percentage to the whole number shown; one short of 100 never reads 100: 99.6 % of an
    80 GiB memory used leaves 330 MiB free, and "100 %" would say it is full."""
    if not math.isfinite(value):
        return value  # said as it is ("nan", "inf"): round() would raise
    shown = float(round(value))
    return 99.0 if shown >= 100 > value else shown


def format_value(metric: Metric, value: float) -> str:
    """A short human rendering, e.g. ``43 %``, ``12.1 GiB``, ``61 °C``, ``P0``."""
    if math.isnan(value):
        return "–"
    unit = metric.unit
    if unit is Unit.PERCENT:
        return f"{fixed(whole_percent(value))} %"
    if unit is Unit.BYTES:
        return format_bytes(value)
    if unit is Unit.BYTES_PER_S:
        return format_bytes(value) + "/s"
    if unit is Unit.CELSIUS:
        return f"{fixed(value)} °C"
    if unit is Unit.WATTS:
        return f"{fixed(value)} W"
    if unit is Unit.JOULES:
        return f"{fixed(value / 1000, 1)} kJ" if value >= 10_000 else f"{fixed(value)} J"
    if unit is Unit.MHZ:
        return f"{fixed(value)} MHz"
    if unit is Unit.PSTATE:
        return f"P{fixed(value)}"
    if unit is Unit.BITMASK:
        names = clock_event_reason_names(int(value))
        return ", ".join(names) if names else "none"
    if unit is Unit.FLAG:
        return "yes" if value else "no"
    if unit is Unit.PCIE_GEN:
        return f"Gen {fixed(value)}"
    if unit is Unit.LANES:
        return f"x{fixed(value)}"
    return fixed(value)


# Decimals of a precise reading (the hover readout, the device details): one count per unit,
# whatever the value, so that "72.80 W" stands beside "73.25 W", not "72.8 W".
PRECISE_DECIMALS = {Unit.PERCENT: 1, Unit.CELSIUS: 1, Unit.WATTS: 2, Unit.MHZ: 0, Unit.COUNT: 2, Unit.JOULES: 1}
PRECISE_BYTES_DECIMALS = 2
PRECISE_MEGAJOULES_DECIMALS = 3


def format_precise(metric: Metric, value: float) -> str:
    """A reading at the full precision its unit has (a graph's hover readout): ``61.0 °C``,
    ``187.25 W``, ``12.34 GiB``, ``45.5 %`` (a bucket's mean may fall between whole readings),
    always with its unit's number of decimals."""
    if math.isnan(value):
        return "–"
    unit = metric.unit
    if unit in (Unit.BYTES, Unit.BYTES_PER_S):
        suffix = "/s" if unit is Unit.BYTES_PER_S else ""
        for size, name in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
            if abs(value) >= size:
                return f"{fixed(value / size, PRECISE_BYTES_DECIMALS)} {name}{suffix}"
        return f"{value:.0f} B{suffix}"
    if unit is Unit.JOULES and abs(value) >= 1e6:  # a driver loaded for days has used many MJ
        return f"{fixed(value / 1e6, PRECISE_MEGAJOULES_DECIMALS)} MJ"
    if unit in PRECISE_DECIMALS:
        symbol = "" if unit is Unit.COUNT else f" {unit.value}"
        return f"{fixed(value, PRECISE_DECIMALS[unit])}{symbol}"
    return format_value(metric, value)


def at_least(shown: str) -> str:
    """A rate from a counter that may have wrapped more than once between two reads (the PCIe byte
    counters of every Gen4/5 x16 GPU read a second apart: 32 bits, wrapping at 4 GiB), said as what
    it is: a lower bound."""
    return translate("metrics", "at least {value}: the counter may have wrapped more than once").format(value=shown)


def smi_number(smi: SmiField, value: float, units: bool = True) -> str:
    """A number as nvidia-smi's CSV writes it: in its unit and decimals (``81559 MiB``)."""
    scaled = value * smi.scale
    text = f"{math.ceil(scaled)}" if smi.round_up else f"{scaled:.{smi.decimals}f}"
    return f"{text} {smi.unit}" if units and smi.unit else text


def format_static(field: StaticField, value: object, smi: bool = False, units: bool = True) -> str:
    """A static fact about a GPU as text; "" when the GPU does not tell it.

    For people (``80.0 GiB``, ``enabled``, ``700 W``), or with ``smi`` as nvidia-smi's CSV writes
    it (``81559 MiB``, ``Enabled``; ``units``: with the unit). Text comes back as it is: making it
    safe is the sink's job (``trayvml.core.safe_text``).
    """
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        word = "enabled" if value else "disabled"
        if smi:  # CSV: nvidia-smi's words, in every language
            return word.capitalize()
        return translate("units", "enabled") if value else translate("units", "disabled")
    if not isinstance(value, float):
        return str(value)
    if smi:
        return smi_number(field.smi, value, units)
    if field.unit is Unit.BYTES:
        return format_bytes(value)
    return f"{value:g} {field.smi.unit}".rstrip()
