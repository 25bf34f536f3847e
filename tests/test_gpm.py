"""GPM activity: the simulated calls answer as NVML does, and the reader reads them only while demanded."""

from __future__ import annotations

import pynvml as N
import pytest

from tests.helpers import run_ticks, simulated_source
from trayvml.commands.report import json_snapshot
from trayvml.core.demand import HISTORY
from trayvml.core.sample import MetricState

ACTIVITY = frozenset({"sm_activity_percent", "tensor_activity_percent", "utilization_gpu_percent"})
PCIE = frozenset({"pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s"})  # GPM answers them where it is read
NO_GPM = HISTORY - PCIE


def test_simulated_gpm_calls_use_pynvml_structures_and_return_codes() -> None:
    source, clock, lib = simulated_source("training:gpus=h100+rtx4090,start=1800")
    source.sample(NO_GPM)  # opens NVML, without GPM
    h100, rtx = N.nvmlDeviceGetHandleByIndex(0), N.nvmlDeviceGetHandleByIndex(1)
    assert N.nvmlGpmQueryDeviceSupport(h100).isSupportedDevice == 1
    assert N.nvmlGpmQueryDeviceSupport(rtx).isSupportedDevice == 0
    first, second = N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlGpmSampleGet(rtx, first)
    N.nvmlGpmSampleGet(h100, first)
    clock.advance_s(5)
    N.nvmlGpmSampleGet(h100, second)
    request = N.c_nvmlGpmMetricsGet_t()
    request.numMetrics, request.sample1, request.sample2 = 2, first, second
    request.metrics[0].metricId = N.NVML_GPM_METRIC_ANY_TENSOR_UTIL
    request.metrics[1].metricId = N.NVML_GPM_METRIC_NVDEC_0_UTIL  # not simulated
    request.version = 99
    with pytest.raises(N.NVMLError_ArgumentVersionMismatch):
        N.nvmlGpmMetricsGet(request)
    request.version = N.NVML_GPM_METRICS_GET_VERSION
    N.nvmlGpmMetricsGet(request)
    assert request.metrics[0].nvmlReturn == N.NVML_SUCCESS and 40 < request.metrics[0].value <= 100
    assert request.metrics[1].nvmlReturn == N.NVML_ERROR_NOT_SUPPORTED
    N.nvmlGpmSampleFree(first)
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlGpmMetricsGet(request)  # a freed buffer
    N.nvmlGpmSampleFree(second)
    assert lib.gpm_samples == {}


def test_training_shows_tensor_work_and_a_stalled_job_shows_idle_sms_under_full_utilization() -> None:
    source, clock, _ = simulated_source("stalled:gpus=h100+h100,start=300")
    busy = run_ticks(source, clock, 5, 1.0)
    assert busy.gpus[0].value("tensor_activity_percent") > 40
    assert busy.gpus[0].value("sm_activity_percent") > 50
    clock.advance_s(400)  # the collective deadlocks at 600 s
    stalled = run_ticks(source, clock, 3, 1.0).gpus[0]
    assert stalled.value("utilization_gpu_percent") == 100
    assert stalled.value("sm_activity_percent") < 2
    assert stalled.value("tensor_activity_percent") == 0
    assert stalled.value("power_draw_w") < 100  # an H100 idles at about 72 W


def test_gpm_is_read_only_while_demanded_and_its_buffers_are_freed_when_not() -> None:
    source, clock, lib = simulated_source("training:gpus=h100,start=1800")
    source.sample(NO_GPM)
    clock.advance_s(1)
    sample = source.sample(NO_GPM)
    assert lib.calls["nvmlGpmSampleGet"] == 0 and lib.gpm_samples == {}
    assert sample.gpus[0].state("sm_activity_percent") is MetricState.NOT_READ
    first = source.sample(ACTIVITY).gpus[0]
    assert first.state("sm_activity_percent") is MetricState.NOT_YET  # one sample: no interval yet
    clock.advance_s(1)
    second = source.sample(ACTIVITY).gpus[0]
    assert second.state("sm_activity_percent") is MetricState.OK
    assert len(lib.gpm_samples) == 2  # the previous sample and the one being filled
    assert lib.calls["nvmlGpmMetricsGet"] == 1
    clock.advance_s(1)
    source.sample(NO_GPM)
    assert lib.gpm_samples == {}
    calls = lib.calls["nvmlGpmSampleGet"]
    clock.advance_s(1)
    source.sample(NO_GPM)
    assert lib.calls["nvmlGpmSampleGet"] == calls


def test_gpm_buffers_are_freed_on_close_and_when_the_gpu_is_lost() -> None:
    source, clock, lib = simulated_source("training:gpus=h100+h100,start=1800,lost=1@1805")
    run_ticks(source, clock, 3)
    assert len(lib.gpm_samples) == 4
    clock.advance_s(10)
    sample = source.sample()
    assert sample.gpus[1].lost
    assert len(lib.gpm_samples) == 2  # GPU 0's
    source.close()
    assert lib.gpm_samples == {}


def test_a_gpu_without_gpm_says_not_supported_and_why() -> None:
    source, clock, lib = simulated_source("training:gpus=rtx4090+h100,start=1800")
    sample = run_ticks(source, clock, 3)
    assert sample.gpus[0].state("sm_activity_percent") is MetricState.NOT_SUPPORTED
    assert lib.calls["nvmlGpmSampleGet"] == 3  # the H100's only
    gpus = json_snapshot(sample)["gpus"]
    assert gpus[0]["metrics"]["sm_activity_percent"] is None
    assert gpus[0]["states"]["sm_activity_percent"] == "not supported"
    assert gpus[0]["gpm"]["supported"] is False and "Hopper" in gpus[0]["gpm"]["reason"]
    assert gpus[1]["gpm"] == {"supported": True, "reason": None}
    assert gpus[1]["metrics"]["sm_activity_percent"] > 0


def test_an_h100_reads_its_pcie_throughput_from_gpm_not_from_the_byte_counters_that_wrap() -> None:
    # Loading a model: 28.8 GB/s over the H100's Gen5 link and 14.4 GB/s over the RTX 4090's Gen4 one.
    # The 32-bit byte counters wrap several times a second (a real H200 copying 46 GB/s: 11 times, and
    # they gave 0.2-4.4 GB/s; tests/recordings/h200-580-pcie). GPM gives the rate itself.
    source, clock, lib = simulated_source("training:gpus=h100+rtx4090,start=90")
    source.sample(HISTORY)
    clock.advance_s(1)
    h100, rtx = source.sample(HISTORY).gpus
    for gpu, timeline in zip((h100, rtx), lib.timelines, strict=True):
        true_rx = timeline.pcie_rx_kb_per_s[timeline.i] * 1000
        assert true_rx > 2**32  # more than one wrap a second
        shown = gpu.value("pcie_rx_bytes_per_s")
        if gpu is h100:
            assert shown == pytest.approx(true_rx, rel=0.01) and not gpu.lower_bounds & PCIE
        else:  # no GPM: the counters, and "at least"
            assert shown < true_rx - 2**32 and gpu.lower_bounds >= PCIE
    # One GPM call answers every GPM metric; the history keeps only what it asked for.
    assert h100.state("sm_activity_percent") is MetricState.NOT_READ and lib.calls["nvmlGpmSampleGet"] == 2
    assert json_snapshot(source.sample(HISTORY))["gpus"][0]["states"]["tensor_activity_percent"].startswith("not read")


def test_where_gpm_stops_answering_the_pcie_throughput_comes_from_the_byte_counters() -> None:
    source, clock, lib = simulated_source("training:gpus=h100,start=1800")
    run_ticks(source, clock, 3)
    lib.fail("nvmlGpmSampleGet", N.NVML_ERROR_NOT_SUPPORTED)  # e.g. a vGPU guest's, on a later driver
    clock.advance_s(1)
    gpu = run_ticks(source, clock, 3).gpus[0]
    assert gpu.state("sm_activity_percent") is MetricState.NOT_SUPPORTED and lib.gpm_samples == {}
    assert gpu.state("pcie_rx_bytes_per_s") is MetricState.OK and gpu.value("pcie_rx_bytes_per_s") > 0
    assert "pcie_rx_bytes_per_s" in gpu.lower_bounds  # Gen5: the counters can hide wraps


def test_where_gpm_stops_answering_the_byte_counters_are_read_only_while_demanded() -> None:
    # A view of the SM activity alone: GPM's failing does not start reading the PCIe counters it
    # stood for, until something demands the PCIe throughput.
    source, clock, lib = simulated_source("training:gpus=h100,start=1800")
    sm = frozenset({"sm_activity_percent"})
    for _ in range(3):
        source.sample(sm)
        clock.advance_s(1)
    lib.fail("nvmlGpmSampleGet", N.NVML_ERROR_NOT_SUPPORTED)
    before = lib.calls["nvmlDeviceGetFieldValues"]
    for _ in range(3):
        gpu = source.sample(sm).gpus[0]
        clock.advance_s(1)
    assert gpu.state("sm_activity_percent") is MetricState.NOT_SUPPORTED
    assert gpu.state("pcie_rx_bytes_per_s") is MetricState.NOT_READ
    assert lib.calls["nvmlDeviceGetFieldValues"] == before
    gpu = run_ticks(source, clock, 2).gpus[0]  # everything demanded: the counters answer
    assert gpu.state("pcie_rx_bytes_per_s") is MetricState.OK and gpu.value("pcie_rx_bytes_per_s") > 0
