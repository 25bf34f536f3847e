"""From a sample to what the icon shows: the chosen metric's highest value, and a bar per GPU."""

from __future__ import annotations

import math
from dataclasses import replace

from trayvml.alerts.engine import AlertSettings, Verdict, gpu_verdict
from trayvml.alerts.rules import RULE_BY_KEY, ThresholdRule
from trayvml.core.formatting import whole_percent
from trayvml.core.levels import Level
from trayvml.core.lines import Headline
from trayvml.core.metrics import GPU_METRIC_BY_KEY, TRAY_FALLBACK, TRAY_METRICS
from trayvml.core.sample import GpuSample, MetricState, Sample
from trayvml.core.units import Unit
from trayvml.ui.icon import BAR_STEPS, Bar, IconContent

DEFAULT_ALERTS = AlertSettings()
# What the number shows while a rule colours the tile: that rule's metric, as a value people know
# (a margin to shutdown or GiB free read as a temperature and a percentage full; throttling is
# thermal only, see gpu_verdict). A rule not named here shows its own metric.
RULE_NUMBER = {
    "temperature": "temperature_gpu_c",
    "temperature_limit": "temperature_gpu_c",
    "throttle": "temperature_gpu_c",
    "memory_used": "memory_used_percent",
    "memory_free": "memory_used_percent",
    "power": "power_used_percent",
}


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
    verdicts = [gpu_verdict(g, alerts) for g in shown]
    bars = [
        Bar(_steps(_tray_value(g, tray.metric) / tray.full_scale), v.level, g.asleep)
        for g, v in zip(shown, verdicts, strict=True)
    ]
    headline = _headline(shown, verdicts, tray.metric)
    number = math.nan if headline is None else headline.value
    return IconContent(tuple(bars), number=number, mark=_mark(headline), headline=headline)


def _headline(gpus: list[GpuSample], verdicts: list[Verdict], tray_metric: str) -> Headline | None:
    """What the number shows: while a rule colours the tile, the value of that rule's metric on the
    worst GPU it colours (the hottest, the fullest…); else the tray metric's highest value. A red
    "86" must not be utilization while it reads as 86 °C."""
    worst = max((v.level for v in verdicts), default=Level.NORMAL)
    if worst is Level.LOST:
        lost = next(g.index for g, v in zip(gpus, verdicts, strict=True) if v.level is worst)
        return Headline(math.nan, tray_metric, lost, worst)
    if worst is not Level.NORMAL:
        first = next(v.rule for v in verdicts if v.level is worst)
        key = _rule_number(first)
        deciding = [g for g, v in zip(gpus, verdicts, strict=True) if v.level is worst and v.rule == first]
        candidates = [(g.value(key), g.index) for g in deciding]
        known = [c for c in candidates if not math.isnan(c[0])]
        if known:
            value, index = max(known, key=lambda c: (c[0], -c[1]))
            return Headline(_whole(key, value), key, index, worst)
        # Its number not known (a free-memory warning, the used share not told): no number, the
        # GPU the rule is about named. The tray metric's highest, with the rule's level, blamed
        # the warning on another metric of another GPU ("43 %: GPU utilization, GPU 0 (warning)").
        return Headline(math.nan, key, deciding[0].index, worst)
    values = [(_tray_value(g, tray_metric), g) for g in gpus if not g.lost]
    known_values = [(v, g) for v, g in values if not math.isnan(v)]
    if not known_values:
        return None
    value, gpu = max(known_values, key=lambda c: (c[0], -c[1].index))
    shown_key = tray_metric
    if gpu.state(tray_metric) is MetricState.NOT_SUPPORTED and tray_metric in TRAY_FALLBACK:
        shown_key = TRAY_FALLBACK[tray_metric]
    return Headline(_whole(shown_key, value), shown_key, gpu.index, worst)


def _whole(key: str, value: float) -> float:
    """The icon's number: a percentage short of 100 never reads 100 (see whole_percent)."""
    return whole_percent(value) if GPU_METRIC_BY_KEY[key].unit is Unit.PERCENT else float(round(value))


def _rule_number(rule: str) -> str:
    if rule in RULE_NUMBER:
        return RULE_NUMBER[rule]
    found = RULE_BY_KEY.get(rule)
    return found.metric if isinstance(found, ThresholdRule) else "temperature_gpu_c"


def _mark(headline: Headline | None) -> str:
    """A unit drawn after the digits where one would be mistaken: degrees, beside percentages."""
    if headline is None or math.isnan(headline.value):
        return ""
    return "°" if GPU_METRIC_BY_KEY[headline.metric].unit is Unit.CELSIUS else ""


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


NUMBER_STEP = 2.0  # a shown number changes by at least this: an idle GPU's 0-1 % jitter redraws nothing


def steady(content: IconContent, shown: IconContent | None) -> IconContent:
    """``content``, keeping the number ``shown`` now where it moved by less than NUMBER_STEP.

    Utilization is itself the fraction of a short sampling window and temperatures move by a
    degree in noise: one unit either way is within what the reading can tell.
    """
    if shown is None or math.isnan(content.number) or math.isnan(shown.number):
        return content
    told, was = content.headline, shown.headline
    if told is not None and was is not None and (told.metric, told.level) != (was.metric, was.level):
        return content  # another metric, or the tile changed colour: its own number at once
    if abs(content.number - shown.number) < NUMBER_STEP:
        # The tooltip says the number the icon shows.
        held = None if told is None else replace(told, value=shown.number)
        return replace(content, number=shown.number, headline=held)
    return content
