"""A remote read by the last read's layout gives what a full read gives (trayvml.remote.dialects.Layout).

Each case reads a sequence of expositions through one SeriesCache, as a remote's thread does, and
compares every read with the same text read afresh; and checks which way each read went, so that a
layout that is never used (or used where it must not be) fails too.
"""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from tests.helpers import dcgm_exposition, run_ticks, simulated_source
from trayvml.core.sample import MetricState, Sample
from trayvml.prometheus.exposition import SampleCollector
from trayvml.remote import fetch
from trayvml.remote.fetch import RemoteError, SeriesCache, parse_endpoint, read_exporter

ENDPOINT = parse_endpoint("http://gpu-box:8729")
UUIDS = ("GPU-aaaa", "GPU-bbbb")


def served(util: tuple[float, float] = (87.0, 5.0), memory: float = 2**30, up: str = "1", jobs: bool = True) -> str:
    """A trayvml serve exposition of two GPUs, a process on GPU 0 with its job, and host values."""
    lines = [
        "# TYPE trayvml_up gauge",
        f'trayvml_up{{hostname="box",reason=""}} {up}',
        'trayvml_sample_timestamp_seconds{hostname="box"} 1700000000.5',
        "# TYPE trayvml_gpu_info gauge",
    ]
    for k, uuid in enumerate(UUIDS):
        lines.append(f'trayvml_gpu_info{{hostname="box",index="{k}",uuid="{uuid}",name="H100",driver="550.1"}} 1.0')
    for k, uuid in enumerate(UUIDS):
        labels = f'hostname="box",index="{k}",uuid="{uuid}"'
        lines.append(f"trayvml_gpu_utilization_ratio{{{labels}}} {util[k] / 100}")
        lines.append(f"trayvml_gpu_temperature_celsius{{{labels}}} {60 + k}.0")
        lines.append(f"trayvml_gpu_memory_used_bytes{{{labels}}} {4e9 + k}")
        lines.append(f"trayvml_gpu_memory_total_bytes{{{labels}}} 8.0e+10")
    process = f'hostname="box",index="0",kind="compute",name="python",pid="4242",user="ada",uuid="{UUIDS[0]}"'
    lines.append(f"trayvml_gpu_process_memory_used_bytes{{{process}}} {memory}")
    if jobs:
        job = 'hostname="box",job="slurm 77",job_name="train",kind="slurm",pid="4242"'
        lines.append(f"trayvml_process_job_info{{{job}}} 1.0")
    lines.append('trayvml_host_cpu_utilization_ratio{hostname="box"} 0.25')
    lines.append("node_load1 0.5")  # of no GPU exporter
    return "\n".join(lines) + "\n"


class Reads:
    """Reads texts through one cache, as a remote's thread does; counts the full parses."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.cache = SeriesCache()
        self.body = b""
        self.full = 0
        monkeypatch.setattr(fetch, "get", lambda endpoint, url, timeout_s, kept=None: (self.body, "text/plain"))
        points = self.cache.points

        def counted(text: str) -> list:
            self.full += 1
            return points(text)

        monkeypatch.setattr(self.cache, "points", counted)

    def read(self, text: str, now_s: float = 1_800_000_000.0) -> tuple[list[Sample], bool]:
        """The samples, and whether they came by the layout (no full parse)."""
        self.body = text.encode()
        before = self.full
        samples = read_exporter(ENDPOINT, 1.0, now_s, self.cache)
        afresh = read_exporter(ENDPOINT, 1.0, now_s, None)
        assert repr(samples) == repr(afresh)  # NaN-safe: the same values, states, facts and order
        return samples, self.full == before


def test_a_changed_value_arrives_by_the_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(monkeypatch)
    (first,), by_layout = reads.read(served((87.0, 5.0)))
    assert not by_layout and reads.cache.layout is not None
    (second,), by_layout = reads.read(served((12.0, 99.0), memory=3 * 2**30))
    assert by_layout
    assert [g.value("utilization_gpu_percent") for g in second.gpus] == pytest.approx([12.0, 99.0])
    assert [g.value("utilization_gpu_percent") for g in first.gpus] == pytest.approx([87.0, 5.0])
    (process,) = second.gpus[0].processes
    assert process.used_memory_bytes == 3 * 2**30 and process.gpu_index == 0
    assert process.attribution.slurm_job == "slurm 77" and process.attribution.slurm_job_name == "train"
    assert second.gpus[0].value("memory_used_percent") == pytest.approx(100 * 4e9 / 8e10)
    assert second.host is not None and second.host.value("cpu_percent") == pytest.approx(25.0)


def test_a_value_that_is_not_finite_is_not_supported_by_the_layout_too(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(monkeypatch)
    reads.read(served())
    (sample,), by_layout = reads.read(served((math.nan, 5.0)))
    assert by_layout and sample.gpus[0].state("utilization_gpu_percent") is MetricState.NOT_SUPPORTED
    (sample,), by_layout = reads.read(served((1.0, 5.0)))
    assert by_layout and sample.gpus[0].state("utilization_gpu_percent") is MetricState.OK


def test_a_gpu_that_goes_and_comes_back_is_read_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(monkeypatch)
    both = served()
    one = "".join(line + "\n" for line in both.splitlines() if UUIDS[1] not in line)
    reads.read(both)
    (sample,), by_layout = reads.read(one)
    assert not by_layout and [d.uuid for d in sample.devices] == [UUIDS[0]]
    (sample,), by_layout = reads.read(both)
    assert not by_layout and [d.uuid for d in sample.devices] == list(UUIDS)
    _, by_layout = reads.read(both)
    assert by_layout


def test_a_changed_label_or_fact_is_read_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(monkeypatch)
    reads.read(served())
    (sample,), by_layout = reads.read(served().replace('name="H100"', 'name="H200"'))
    assert not by_layout and {d.name for d in sample.devices} == {"H200"}
    (sample,), by_layout = reads.read(served().replace('name="H100"', 'name="H200"').replace('"box"', '"box2"'))
    assert not by_layout and sample.system is not None and sample.system.hostname == "box2"
    # The same series, another value that decides a fact: the exporter's driver is down.
    reads.read(served())
    (sample,), by_layout = reads.read(served(up="0"))
    assert not by_layout and sample.remote is not None and sample.remote.fault and not sample.gpus
    # A job gone: its line gone, so the layout does not fit; the process loses its job.
    (sample,), by_layout = reads.read(served(jobs=False))
    assert not by_layout and not sample.gpus[0].processes[0].attribution.job


def test_lines_with_timestamps_or_bad_values_are_read_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(monkeypatch)
    reads.read(served().replace("} 1.0\n", "} 1.0 1700000000000\n"))
    assert reads.cache.layout is None
    _, by_layout = reads.read(served((12.0, 99.0)).replace("} 1.0\n", "} 1.0 1700000000000\n"))
    assert not by_layout
    reads.read(served())
    broken = served().replace("0.25\n", "a-quarter\n")
    with pytest.raises(RemoteError, match="is not Prometheus metrics"):
        reads.read(broken)
    _, by_layout = reads.read(served((5.0, 6.0)))  # the layout was dropped with the bad read: made again
    assert not by_layout
    _, by_layout = reads.read(served((3.0, 4.0)))
    assert by_layout


def test_dcgm_exporter_and_trayvml_serve_read_by_the_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(monkeypatch)
    dcgm = dcgm_exposition("Hostname")
    reads.read(dcgm)
    (sample,), by_layout = reads.read(dcgm.replace("} 87\n", "} 42\n"))
    assert by_layout and sample.gpus[0].value("utilization_gpu_percent") == 42.0
    source, clock, _ = simulated_source("training:gpus=h100*2", host=True)
    texts = []
    for _ in range(3):
        local = run_ticks(source, clock, 1)
        registry = CollectorRegistry(auto_describe=False)

        def latest(sample: Sample = local) -> Sample:
            return sample

        registry.register(SampleCollector(latest, hostname="here"))
        texts.append(generate_latest(registry).decode())
    reads = Reads(monkeypatch)
    ways = [reads.read(text)[1] for text in texts]
    assert ways[0] is False and any(ways[1:])


def test_what_a_layout_keeps_from_read_to_read_follows_each_reads_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """A layout's reads make a GPU's facts and states anew only where they changed: a memory total,
    a process's memory and a value that comes and goes are each read's own, going and coming back."""
    reads = Reads(monkeypatch)
    reads.read(served())
    totals = ("8.0e+10", "9.6e+10", "NaN", "8.0e+10")
    memories = (2.0**30, 3.0 * 2**30, 3.0 * 2**30, 2.0**30)
    utils = ((87.0, 5.0), (math.nan, 5.0), (math.inf, -math.inf), (1.0, 5.0))
    for total, memory, util in zip(totals, memories, utils, strict=True):
        text = served(util, memory=memory).replace("} 8.0e+10\n", f"}} {total}\n")
        (sample,), by_layout = reads.read(text)  # each compared with the same text read afresh
        assert by_layout
        shown = [d.memory_total_bytes for d in sample.devices]
        assert shown == [float(total)] * 2 or (total == "NaN" and all(math.isnan(t) for t in shown))
        assert sample.gpus[0].processes[0].used_memory_bytes == memory
        states = [g.state("utilization_gpu_percent") for g in sample.gpus]
        assert states == [MetricState.OK if math.isfinite(u) else MetricState.NOT_SUPPORTED for u in util]


def test_values_too_big_to_add_up_and_gpus_of_one_value_or_none_read_by_the_layout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = Reads(monkeypatch)
    # GPU 1 with one value of its own (its utilization), and a third GPU known by its process alone.
    kept = [line for line in served().splitlines() if UUIDS[1] not in line or "utilization" in line or "info" in line]
    process = 'hostname="box",index="2",kind="compute",name="python",pid="7",user="ada",uuid="GPU-cccc"'
    text = "\n".join([*kept, f"trayvml_gpu_process_memory_used_bytes{{{process}}} 5.0"]) + "\n"
    reads.read(text)
    for big in ("1.5e+308", "-1.7e+308", "0.5"):
        changed = text.replace("} 60.0\n", f"}} {big}\n").replace("} 0.05\n", f"}} {big}\n")
        # Two values of GPU 0 at once: their sum beyond a float's range.
        (sample,), by_layout = reads.read(changed.replace("} 8.0e+10\n", f"}} {big}\n"))
        assert by_layout and len(sample.gpus) == 3
        assert sample.gpus[0].value("temperature_gpu_c") == float(big) == sample.devices[0].memory_total_bytes
        scaled = float(big) * 100  # a fraction served: infinite as a percentage, which is no value
        utilization = sample.gpus[1].value("utilization_gpu_percent")
        assert utilization == scaled if math.isfinite(scaled) else math.isnan(utilization)


def dcgm_mig_exposition(tensor: float = 0.5) -> str:
    """dcgm-exporter on a board in MIG mode (GPU 0: a 3g.40gb and a 2g.20gb instance) beside a whole
    GPU 1, each series' labels as its internal/pkg/rendermetrics template writes them: the board's
    gpu and UUID, GPU_I_PROFILE and GPU_I_ID where the series is an instance's."""
    board = 'gpu="0",UUID="GPU-b0a2",pci_bus_id="00000000:19:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3"'
    whole = 'gpu="1",UUID="GPU-c1d3",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3"'
    series = [
        (
            board + ',GPU_I_PROFILE="3g.40gb",GPU_I_ID="2"',
            {"FB_USED": 30000, "FB_FREE": 10000, "TEMP": 51, "POWER": 400, "UTIL": 0},
        ),
        (
            board + ',GPU_I_PROFILE="2g.20gb",GPU_I_ID="4"',
            {"FB_USED": 1000, "FB_FREE": 19000, "TEMP": 51, "POWER": 400, "UTIL": 0},
        ),
        (whole, {"FB_USED": 70000, "FB_FREE": 11000, "TEMP": 64, "POWER": 650, "UTIL": 97}),
    ]
    rows = {
        "DCGM_FI_DEV_FB_USED": "FB_USED",
        "DCGM_FI_DEV_FB_FREE": "FB_FREE",
        "DCGM_FI_DEV_GPU_TEMP": "TEMP",
        "DCGM_FI_DEV_POWER_USAGE": "POWER",  # the board's, on each instance's series (dcgm-exporter#257)
        "DCGM_FI_DEV_GPU_UTIL": "UTIL",  # 0 on an instance's (dcgm-exporter#216)
    }
    out = []
    for name, field in rows.items():
        out += [f"# HELP {name} from etc/default-counters.csv", f"# TYPE {name} gauge"]
        out += [f'{name}{{{labels},hostname="dgx-02"}} {values[field]}' for labels, values in series]
    out += ["# HELP DCGM_FI_PROF_PIPE_TENSOR_ACTIVE ratio", "# TYPE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE gauge"]
    out += [f'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{labels},hostname="dgx-02"}} {tensor}' for labels, _ in series]
    return "\n".join(out) + "\n"


def test_dcgm_exporters_mig_instances_are_devices_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A board's MIG instances share its UUID and index in dcgm-exporter's series: keyed by them,
    each instance overwrote the one before, and the last one's memory was shown as the board's."""
    reads = Reads(monkeypatch)
    (sample,), _ = reads.read(dcgm_mig_exposition())
    shown = [(d.index, d.name, d.mig_parent_index, d.gpu_instance_id, d.mig_mode_current) for d in sample.devices]
    assert shown == [
        (0, "NVIDIA H100 80GB HBM3", -1, -1, True),  # the board, its values from its instances' series
        (1, "NVIDIA H100 80GB HBM3", -1, -1, None),
        (2, "NVIDIA H100 80GB HBM3 MIG 3g.40gb", 0, 2, None),
        (3, "NVIDIA H100 80GB HBM3 MIG 2g.20gb", 0, 4, None),
    ]
    assert [g.index for g in sample.gpus] == [0, 1, 2, 3] and len({d.uuid for d in sample.devices}) == 4
    board, whole, *instances = sample.gpus
    assert [g.value("memory_used_bytes") / 2**20 for g in (whole, *instances)] == [70000, 30000, 1000]
    assert [g.value("tensor_activity_percent") for g in (whole, *instances)] == [50.0] * 3  # DCP ratios, in %
    # The board's power and temperature once, on the board; the 0 % GPU_UTIL of MIG, nowhere.
    assert (board.value("power_draw_w"), board.value("temperature_gpu_c")) == (400, 51)
    assert board.state("utilization_gpu_percent") is MetricState.NOT_SUPPORTED
    assert whole.value("power_draw_w") == 650 and whole.value("utilization_gpu_percent") == 97
    for instance in instances:
        for key in ("power_draw_w", "utilization_gpu_percent", "temperature_gpu_c"):
            assert instance.state(key) is MetricState.NOT_SUPPORTED and math.isnan(instance.value(key))
    (again,), by_layout = reads.read(dcgm_mig_exposition(tensor=0.25))
    assert by_layout and [g.value("tensor_activity_percent") for g in again.gpus[1:]] == [25.0] * 3
    assert [g.value("memory_used_bytes") / 2**20 for g in again.gpus[1:]] == [70000, 30000, 1000]
    assert again.gpus[0].value("power_draw_w") == 400
