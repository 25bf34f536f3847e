"""The one place for test helpers: simulated sources on a manual clock."""

from __future__ import annotations

import math
import re

from trayvml.core.clock import ManualClock
from trayvml.core.metrics import GPU_METRICS
from trayvml.core.sample import MetricState, Sample
from trayvml.nvml.sim import parse_spec
from trayvml.nvml.sim.library import SimulatedNvml
from trayvml.source import Source

OPEN_SOURCES: list[Source] = []  # closed after each test by conftest (each has a thread of its own)


def simulated_source(
    spec: str = "training", host: bool = False, stall_after_s: float = 5.0
) -> tuple[Source, ManualClock, SimulatedNvml]:
    clock = ManualClock()
    source = Source(parse_spec(spec), clock, host=host, stall_after_s=stall_after_s)
    OPEN_SOURCES.append(source)
    assert source.library is not None
    return source, clock, source.library


def run_ticks(source: Source, clock: ManualClock, ticks: int, step_s: float = 1.0) -> Sample:
    sample = source.sample()
    for _ in range(ticks - 1):
        clock.advance_s(step_s)
        sample = source.sample()
    return sample


def states_by_key(sample: Sample, gpu: int) -> dict[str, MetricState]:
    return {m.key: s for m, s in zip(GPU_METRICS, sample.gpus[gpu].states, strict=True)}


def shown_by_dbusmenu_host(label: str) -> str:
    """A dbusmenu label as a tray host shows it: ``__`` is one underscore, any other ``_`` marks
    the next character as the access key and is not shown."""
    return re.sub("_(_?)", r"\1", label)


def finite(value: float) -> bool:
    return not math.isnan(value)
