"""From a sample to what the icon shows: one bar per GPU, its height from the chosen metric."""

from __future__ import annotations

import math

from trayvml.alerts import AlertSettings, gpu_level
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
    if sample is None or not sample.gpus:
        return IconContent((), no_gpu=True)
    tray = TRAY_METRICS[metric]
    shown = [g for g in sample.gpus if g.index not in (hidden or set())] or list(sample.gpus)
    return icon_content(
        [Bar(_steps(_tray_value(g, tray.metric) / tray.full_scale), gpu_level(g, alerts), g.asleep) for g in shown]
    )


def _tray_value(gpu: GpuSample, key: str) -> float:
    """``key``'s value; on a GPU that cannot read it, its stand-in's (SM activity: utilization)."""
    fallback = TRAY_FALLBACK.get(key)
    if fallback is not None and gpu.state(key) is MetricState.NOT_SUPPORTED:
        return gpu.value(fallback)
    return gpu.value(key)


def _steps(fraction: float) -> float:
    """Bar heights in 1/BAR_STEPS: finer than a pixel at tray sizes is invisible, and every
    change would cost a redraw (an idle GPU's 0-2 % jitter would redraw it each second)."""
    return fraction if math.isnan(fraction) else round(fraction * BAR_STEPS) / BAR_STEPS
