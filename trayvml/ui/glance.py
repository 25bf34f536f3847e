"""From a sample to what the icon shows: the chosen metric's highest value, and a bar per GPU."""

from __future__ import annotations

import math
from dataclasses import replace

from trayvml.alerts.engine import AlertSettings, gpu_level
from trayvml.core.metrics import TRAY_FALLBACK, TRAY_METRICS
from trayvml.core.sample import GpuSample, MetricState, Sample
from trayvml.ui.icon import Bar, IconContent, icon_content

DEFAULT_ALERTS = AlertSettings()
BAR_STEPS = 40  # half a pixel of a 22 px tray icon's bar


def content_for(
    sample: Sample | None,
    metric: str = "utilization",
    hidden: set[int] | None = None,
    alerts: AlertSettings = DEFAULT_ALERTS,
) -> IconContent:
    """Bars for the GPUs not ``hidden``, coloured by the ``alerts`` rules."""
    if sample is not None and sample.stall is not None:
        return IconContent((), stale=True)
    if sample is None:
        return IconContent(())  # starting: nothing is known yet, so the tile stays empty
    if not sample.gpus:
        return IconContent((), no_gpu=True)
    tray = TRAY_METRICS[metric]
    shown = [g for g in sample.gpus if g.index not in (hidden or set())] or list(sample.gpus)
    bars = [Bar(_steps(_tray_value(g, tray.metric) / tray.full_scale), gpu_level(g, alerts), g.asleep) for g in shown]
    return icon_content(bars, number=_highest([_tray_value(g, tray.metric) for g in shown if not g.lost]))


def _tray_value(gpu: GpuSample, key: str) -> float:
    """``key``'s value; on a GPU that cannot read it, its stand-in's (SM activity: utilization)."""
    fallback = TRAY_FALLBACK.get(key)
    if fallback is not None and gpu.state(key) is MetricState.NOT_SUPPORTED:
        return gpu.value(fallback)
    return gpu.value(key)


def _highest(values: list[float]) -> float:
    """The largest known value, whole (as the icon shows it, so a change below that redraws nothing)."""
    known = [v for v in values if not math.isnan(v)]
    return float(round(max(known))) if known else math.nan


def _steps(fraction: float) -> float:
    """Bar heights in 1/BAR_STEPS: finer than a pixel at tray sizes is invisible, and every
    change would cost a redraw (an idle GPU's 0-2 % jitter would redraw it each second)."""
    return fraction if math.isnan(fraction) else round(fraction * BAR_STEPS) / BAR_STEPS


NUMBER_STEP = 2.0  # a shown number changes by at least this: an idle GPU's 0-1 % jitter redraws nothing


def steady(content: IconContent, shown: IconContent | None) -> IconContent:
    """``content``, keeping the number ``shown`` now where it moved by less than NUMBER_STEP.

    Utilization is itself the fraction of a short sampling window and temperatures move by a
    degree in noise: one unit either way is within what the reading can tell.
    """
    if shown is None or math.isnan(content.number) or math.isnan(shown.number):
        return content
    if abs(content.number - shown.number) < NUMBER_STEP:
        return replace(content, number=shown.number)
    return content
