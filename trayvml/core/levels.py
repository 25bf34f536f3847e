"""How alarming a GPU looks at a glance: what colours the tray icon and the summary.

The thresholds here are the defaults; the alert engine's rules replace them once configured.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from trayvml.core.metrics import THERMAL_REASON_MASK
from trayvml.core.sample import GpuSample


class Level(enum.IntEnum):
    NORMAL = 0
    WARNING = 1
    CRITICAL = 2
    LOST = 3


@dataclass(frozen=True)
class GlanceThresholds:
    temperature_warning_c: float = 83.0
    temperature_critical_c: float = 90.0
    memory_warning_percent: float = 90.0
    memory_critical_percent: float = 97.0


DEFAULT_THRESHOLDS = GlanceThresholds()


def gpu_level(gpu: GpuSample, thresholds: GlanceThresholds = DEFAULT_THRESHOLDS) -> Level:
    if gpu.lost:
        return Level.LOST
    temperature = gpu.value("temperature_gpu_c")
    memory = gpu.value("memory_used_percent")
    reasons = gpu.value("clock_event_reasons")
    if temperature >= thresholds.temperature_critical_c or memory >= thresholds.memory_critical_percent:
        return Level.CRITICAL
    throttled = not math.isnan(reasons) and int(reasons) & THERMAL_REASON_MASK
    if temperature >= thresholds.temperature_warning_c or memory >= thresholds.memory_warning_percent or throttled:
        return Level.WARNING
    return Level.NORMAL  # NaN compares False: a missing value never raises the level
