"""Other pynvml-based tools see the same simulated GPUs, because the simulation sits beneath pynvml."""

from __future__ import annotations

import json
import subprocess
import sys

SPEC = "training:at=900,seed=4"
MIB = 2**20


def run_json(*args: str) -> dict:
    result = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(result.stdout)


def test_gpustat_prints_the_gpus_and_values_trayvml_reports() -> None:
    ours = run_json("trayvml", "snapshot", "--json", f"--simulate={SPEC}")
    theirs = run_json("trayvml.nvml.sim.run", SPEC, "gpustat", "--json")
    assert len(theirs["gpus"]) == len(ours["gpus"]) == 4
    assert theirs["driver_version"] == ours["system"]["driver_version"]
    for gpustat_gpu, gpu in zip(theirs["gpus"], ours["gpus"], strict=True):
        info, metrics = gpu["info"], gpu["metrics"]
        assert gpustat_gpu["index"] == info["index"]
        assert gpustat_gpu["name"] == info["name"]
        assert gpustat_gpu["uuid"] == info["uuid"]
        assert gpustat_gpu["temperature.gpu"] == metrics["temperature_gpu_c"]
        assert gpustat_gpu["utilization.gpu"] == metrics["utilization_gpu_percent"]
        assert gpustat_gpu["fan.speed"] == metrics["fan_speed_percent"]
        assert gpustat_gpu["memory.total"] == info["memory_total_bytes"] // MIB
        # gpustat 1.1 asks for the v2 memory struct when the driver has it, as trayvml does,
        # so the driver's reservation is not counted as used by either.
        assert gpustat_gpu["memory.used"] == metrics["memory_used_bytes"] // MIB
        if metrics["power_draw_w"] is None:
            assert gpustat_gpu["power.draw"] is None
        else:
            assert gpustat_gpu["power.draw"] == int(metrics["power_draw_w"])
            assert gpustat_gpu["enforced.power.limit"] == int(metrics["power_enforced_limit_w"])
