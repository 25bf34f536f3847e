"""Unified memory (GB10, DGX Spark): NVML has no memory figures for a GPU that shares the host's RAM.

The driver answers NOT_SUPPORTED to nvmlDeviceGetMemoryInfo and its _v2 (nvidia-smi shows N/A),
so trayvml shows the host's memory for it, says so, and leaves out the meaningless PCIe link.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pynvml as N
import pytest

from tests.helpers import OPEN_SOURCES
from trayvml.alerts.engine import AlertEngine, AlertSettings
from trayvml.alerts.rules import RULE_BY_KEY, RULES
from trayvml.commands.report import json_snapshot, text_snapshot
from trayvml.core.clock import ManualClock
from trayvml.core.sample import MetricState
from trayvml.core.units import GIB
from trayvml.nvml.sim.options import parse_spec
from trayvml.source import Source

TOTAL = 128 * GIB


class FakeHostMemory:
    """The host's memory as psutil.virtual_memory would give it: (total, available)."""

    def __init__(self, available: float) -> None:
        self.available = available

    def __call__(self) -> tuple[float, float]:
        return float(TOTAL), self.available


def gb10_source(available: float, gpus: str = "gb10+rtx4090") -> tuple[Source, ManualClock, FakeHostMemory]:
    clock = ManualClock()
    memory = FakeHostMemory(available)
    source = Source(parse_spec(f"idle:gpus={gpus}"), clock, host=False, host_memory=memory)
    OPEN_SOURCES.append(source)
    return source, clock, memory


def test_the_simulated_gb10_answers_as_a_dgx_spark_does() -> None:
    source, _, _ = gb10_source(100 * GIB)
    source.sample()
    handle = N.nvmlDeviceGetHandleByIndex(0)
    assert N.nvmlDeviceGetName(handle) == "NVIDIA GB10"
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetMemoryInfo(handle)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetMemoryInfo(handle, version=N.nvmlMemory_v2)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetBAR1MemoryInfo(handle)  # no framebuffer, no aperture onto it
    assert N.nvmlDeviceGetBAR1MemoryInfo(N.nvmlDeviceGetHandleByIndex(1)).bar1Total > 0
    # What the driver says of a link that does not exist: Gen1 x1.
    assert N.nvmlDeviceGetCurrPcieLinkGeneration(handle) == 1 and N.nvmlDeviceGetCurrPcieLinkWidth(handle) == 1


def test_a_unified_memory_gpu_shows_the_hosts_memory_and_says_so() -> None:
    source, clock, memory = gb10_source(100 * GIB)
    sample = source.sample()
    gb10, rtx = sample.gpus
    assert sample.devices[0].unified_memory is True and sample.devices[1].unified_memory is False
    assert sample.devices[0].memory_total_bytes == TOTAL
    assert gb10.value("memory_used_bytes") == 28 * GIB and gb10.state("memory_used_bytes") is MetricState.OK
    assert gb10.value("memory_free_bytes") == 100 * GIB and gb10.state("memory_free_bytes") is MetricState.OK
    assert gb10.value("memory_used_percent") == pytest.approx(21.875)
    assert gb10.state("memory_used_percent") is MetricState.OK
    # No reservation is known: not supported, not zero.
    assert gb10.state("memory_reserved_bytes") is MetricState.NOT_SUPPORTED
    # The discrete GPU beside it keeps NVML's own figures.
    assert rtx.state("memory_used_bytes") is MetricState.OK and rtx.value("memory_used_bytes") < 2 * GIB
    memory.available = 64 * GIB
    clock.advance_s(1.0)
    assert source.sample().gpus[0].value("memory_used_bytes") == 64 * GIB  # read afresh each tick
    snapshot = json_snapshot(sample)
    assert snapshot["gpus"][0]["info"]["unified_memory"] is True
    assert snapshot["gpus"][1]["info"]["unified_memory"] is False
    report = text_snapshot(sample, full=True)
    assert "Unified memory (host RAM)" in report


def test_a_unified_memory_gpu_has_no_gen1_x1_pcie_link() -> None:
    source, _, _ = gb10_source(100 * GIB)
    sample = source.sample()
    gb10, rtx = sample.gpus
    for key in ("pcie_link_gen", "pcie_link_width"):
        assert gb10.state(key) is MetricState.NOT_SUPPORTED and math.isnan(gb10.value(key))
        assert rtx.state(key) is MetricState.OK
    assert math.isnan(sample.devices[0].pcie_link_gen_max) and math.isnan(sample.devices[0].pcie_link_width_max)


def test_memory_alerts_judge_a_unified_memory_gpu_by_the_hosts_memory_sensibly() -> None:
    rules: dict[str, Any] = {r.key: replace(r.defaults, enabled=False) for r in RULES}
    for key in ("memory_used", "memory_held_idle"):
        rules[key] = replace(RULE_BY_KEY[key].defaults, enabled=True, hold_s=0.0)
    engine = AlertEngine(AlertSettings(rules=rules))
    # 28 GiB of the host's RAM in use by the desktop and browsers, the GPU idle: nothing is "held"
    # on the GPU, so the held-memory rule must not blame it.
    source, clock, memory = gb10_source(100 * GIB, gpus="gb10")
    events = []
    for _ in range(3):
        events += engine.update(source.sample())
        clock.advance_s(1.0)
    assert events == []
    # The shared memory nearly full is what makes GPU allocations fail: the memory-used rule fires.
    memory.available = 2 * GIB
    for _ in range(3):
        events += engine.update(source.sample())
        clock.advance_s(1.0)
    assert [e.rule for e in events] == ["memory_used"]


def test_a_discrete_gpu_whose_memory_info_fails_is_not_taken_for_unified_memory() -> None:
    # NOT_SUPPORTED from the memory call alone (a driver quirk) must not make the host's RAM
    # pass for an H100's memory: it stays not supported.
    source, _, _ = gb10_source(100 * GIB, gpus="h100")
    assert source.library is not None
    source.library.fail("nvmlDeviceGetMemoryInfo", N.NVML_ERROR_NOT_SUPPORTED)
    source.library.fail("nvmlDeviceGetMemoryInfo_v2", N.NVML_ERROR_NOT_SUPPORTED)
    h100 = source.sample().gpus[0]
    assert source.reader.devices[0].unified_memory is None and not h100.unified_memory
    assert h100.state("memory_used_bytes") is MetricState.NOT_SUPPORTED and math.isnan(h100.value("memory_used_bytes"))
    assert h100.state("pcie_link_gen") is MetricState.OK
