"""Units: what values are measured in, byte sizes, and formatting for people.

Values arrive in base units (bytes, watts, joules, °C). The metric catalog
(``trayvml.core.metrics``) names each metric's unit from here, and formats a metric's value with
these; this module imports nothing of the catalog.
"""

from __future__ import annotations

import enum
import functools
import math
import re
import time
from dataclasses import dataclass
from typing import Literal

from trayvml.core.i18n import QT_TRANSLATE_NOOP, translate

# Byte sizes: the one definition in the package.
KIB = 2**10
MIB = 2**20
GIB = 2**30
LONGEST_FIXED = 1e12  # no reading is this large in its unit: a number past it is said in 3 digits


def fixed(value: float, decimals: int = 0) -> str:
    """``value`` with ``decimals`` decimals; where it is too large to be a reading (a broken or
    hostile exporter's 1e300 MiB), in three significant digits: it was printed with all its 300."""
    return f"{value:.{decimals}f}" if abs(value) < LONGEST_FIXED else f"{value:.3g}"


class Unit(enum.Enum):
    PERCENT = "%"
    BYTES = "B"
    BYTES_PER_S = "B/s"
    CELSIUS = "°C"
    WATTS = "W"
    JOULES = "J"
    MHZ = "MHz"
    COUNT = ""
    PSTATE = "pstate"
    BITMASK = "bitmask"
    FLAG = "flag"
    PCIE_GEN = "gen"
    LANES = "lanes"
    XID = "xid"


@dataclass(frozen=True)
class DisplayUnit:
    """One fixed unit a value of ``base`` is shown and typed in (an alert's thresholds and message).

    ``per``: base units in one of it; ``decimals``: how a value in it is written.
    """

    symbol: str
    base: Unit
    per: float = 1.0
    decimals: int = 0

    def of(self, value: float) -> float:
        """``value`` (in base units) in this unit."""
        return value / self.per

    def format(self, value: float) -> str:
        """``value`` (already in this unit), e.g. ``93 °C``, ``0.8 GiB``."""
        return f"{fixed(value, self.decimals)} {self.shown}"

    @property
    def shown(self) -> str:
        """The symbol in the user's language (only words are translated: "% of limit", not "°C")."""
        return translate("units", self.symbol)


# The fixed units of catalog units that have one. Bytes have none (format_bytes picks one per
# value), so whatever needs one fixed unit for bytes names it: IN_GIB.
DISPLAY_UNITS = {unit: DisplayUnit(unit.value, unit) for unit in (Unit.PERCENT, Unit.CELSIUS, Unit.WATTS, Unit.MHZ)}
IN_GIB = DisplayUnit("GiB", Unit.BYTES, GIB, decimals=1)
PERCENT_OF_LIMIT = DisplayUnit(QT_TRANSLATE_NOOP("units", "% of limit"), Unit.PERCENT)


def format_bytes(value: float) -> str:
    if math.isnan(value):
        return "–"
    magnitude = abs(value)
    if magnitude >= GIB:
        return f"{fixed(value / GIB, 1)} GiB"
    if magnitude >= MIB:
        return f"{value / MIB:.0f} MiB"
    if magnitude >= KIB:
        return f"{value / KIB:.0f} KiB"
    return f"{value:.0f} B"


_NOISE = re.compile(r"\bNVIDIA\b|\bGeForce\b|\bGPU$|\b\d+GB\b|\bHBM\d*e?\b|\bPCIe\b|\bSXM\d*\b")


@functools.lru_cache(maxsize=256)  # a handful of GPU names, shortened on every tick
def short_name(name: str) -> str:
    """'NVIDIA GeForce RTX 4090' -> 'RTX 4090'; 'Tesla V100-SXM2-16GB' -> 'Tesla V100'."""
    short = " ".join(_NOISE.sub(" ", name).split())
    short = re.sub(r"(\s*-)+\s*$", "", re.sub(r"-(\s*-)+", "-", short)).strip(" -")
    return short or name


# The units a duration is written in, largest first, with their seconds.
_DURATION_UNITS = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))
_PRECISION_S = {"s": 1, "min": 60, "h": 3600}


def format_duration(seconds: float, precision: Literal["s", "min", "h"] = "s") -> str:
    """How long, for people: the largest whole unit it reaches, then the next one below it,
    zero-padded, unless that one is finer than ``precision``.

    ``precision="s"``: ``45 s``, ``4 min 05 s``, ``1 h 01 min``, ``2 d 04 h``;
    ``precision="min"``: ``45 s``, ``12 min``, ``1 h 01 min``, ``2 d 04 h``;
    ``precision="h"``: ``45 s``, ``12 min``, ``3 h``, ``2 d 04 h``. A span shorter than one
    ``precision`` unit is told in the largest unit it reaches.

    Rounded to whole seconds (59.6 s is 1 min), then truncated to the units shown: never rounded
    up (4 min 59 s is ``4 min`` to the minute). A negative span (a clock set back) is ``0 s``;
    NaN or infinity ``–``.
    """
    if not math.isfinite(seconds):
        return "–"
    if seconds >= LONGEST_FIXED:
        return f"{fixed(seconds / 86400)} d"
    whole = max(0, math.floor(seconds + 0.5))
    index = next(i for i, (_, size) in enumerate(_DURATION_UNITS) if whole >= size or size == 1)
    name, size = _DURATION_UNITS[index]
    if size == 1 or _DURATION_UNITS[index + 1][1] < _PRECISION_S[precision]:
        return f"{whole // size} {name}"
    lower_name, lower = _DURATION_UNITS[index + 1]
    return f"{whole // size} {name} {whole % size // lower:02d} {lower_name}"


def format_clock(timestamp_s: float, seconds: bool = True, date: bool = False) -> str:
    """A wall-clock time in local time: ``14:02:10``; ``14:02`` without ``seconds``; with ``date``
    ``2024-05-01 14:02:10``. "–" for NaN or infinity."""
    if not math.isfinite(timestamp_s):
        return "–"
    pattern = ("%Y-%m-%d " if date else "") + ("%H:%M:%S" if seconds else "%H:%M")
    return time.strftime(pattern, time.localtime(timestamp_s))


MILLI = 1e-3  # a scale to base units: mW, mJ


def in_base_units(value: float, scale: float) -> float:
    """``value`` times its ``scale`` to base units: a thousandth by dividing by 1000, which is exact
    where multiplying by 0.001 is not (73963 mW served as 73.96300000000001 W; divided, 73.963)."""
    return value / 1000.0 if scale == MILLI else value * scale


def times_and_per(scale: float) -> tuple[float, float]:
    """in_base_units as two numbers, for a loop that runs every tick: ``value * times / per``."""
    return (1.0, 1000.0) if scale == MILLI else (scale, 1.0)
