"""Units and formatting: one definition of byte sizes, one formatter of static facts for every sink."""

from __future__ import annotations

import math

import pytest

from trayvml.core.metrics import GPU_METRICS, STATIC_FIELDS, format_static
from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, Sample
from trayvml.core.units import GIB, IN_GIB, KIB, MIB

FIELD = {f.key: f for f in STATIC_FIELDS}
H100 = DeviceInfo(
    0,
    "NVIDIA H100 80GB HBM3",
    "GPU-0",
    ecc_mode_current=True,
    memory_total_bytes=81559.0 * MIB,
    power_limit_default_w=700.0,
)


@pytest.mark.parametrize(
    ("key", "people", "smi", "smi_bare"),
    [
        ("memory_total_bytes", "79.6 GiB", "81559 MiB", "81559"),
        ("power_limit_default_w", "700 W", "700.00 W", "700.00"),
        ("ecc_mode_current", "enabled", "Enabled", "Enabled"),
        ("mig_mode_current", "", "", ""),  # None: the GPU does not tell
        ("power_limit_min_w", "", "", ""),  # NaN
        ("serial", "", "", ""),
        ("name", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
        ("index", "0", "0", "0"),
    ],
)
def test_static_facts_for_people_and_as_nvidia_smi_writes_them(key: str, people: str, smi: str, smi_bare: str) -> None:
    value = getattr(H100, key)
    assert format_static(FIELD[key], value) == people
    assert format_static(FIELD[key], value, smi=True) == smi
    assert format_static(FIELD[key], value, smi=True, units=False) == smi_bare


def test_the_snapshot_and_the_csv_log_format_static_facts_alike() -> None:
    from trayvml.commands.csvlog import parse_fields, rows
    from trayvml.commands.report import text_snapshot

    gpu = GpuSample(0, (math.nan,) * len(GPU_METRICS), (MetricState.NOT_SUPPORTED,) * len(GPU_METRICS))
    sample = Sample(0.0, (gpu,), (H100,), None, None)
    text = text_snapshot(sample, full=True)
    assert "79.6 GiB" in text and "enabled" in text and "Serial number" not in text  # not told: left out
    (row,) = rows(sample, parse_fields("memory.total,ecc.mode.current,serial"))
    assert row == "81559 MiB, Enabled, [N/A]"


def test_byte_sizes() -> None:
    assert (KIB, MIB, GIB) == (1024, 1024**2, 1024**3)
    assert IN_GIB.of(3 * GIB) == 3.0 and IN_GIB.format(0.8) == "0.8 GiB"
