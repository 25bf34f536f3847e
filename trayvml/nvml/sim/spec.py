"""The ``--simulate`` specification: ``SCENARIO[:key=value,...]``.

Keys:
  gpus=h100*2+rtx4090+laptop  profiles and counts (at most 16 GPUs)
  seed=7                      varies the jitter and process schedules
  at=300                      freeze simulated time at 300 s (reproducible snapshots)
  lost=1@300                  GPU 1 falls off the bus at 300 s ("+" joins several;
                              an empty "lost=" loses none, also in the faults scenario)
  nvml=missing@30             NVML fails to start (missing, not-loaded, mismatch,
                              no-permission) until 30 s, or for good without "@"
  procperm=yes                other users' processes cannot be inspected
  latency=realistic           emulate NVML's per-call latency (20 ms PCIe reads...)
  speed=60                    simulated seconds per real second (demos, end-to-end tests)
  start=350                   begin the scenario this many simulated seconds in
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from trayvml.core.errors import SimulationSpecError
from trayvml.nvml.sim.profiles import PROFILES

SIMULATE_ENV = "TRAYVML_SIMULATE"
# The scenarios in scenarios.py (kept here so that parsing a spec does not import numpy;
# tests/test_simulated_library.py checks that the two lists agree).
SCENARIO_NAMES = ("idle", "training", "thermal", "processes", "faults")
MAX_GPUS = 16
DEFAULT_GPUS = ("h100", "h100", "rtx4090", "laptop")
NVML_FAULTS = ("missing", "not-loaded", "mismatch", "no-permission")


@dataclass(frozen=True)
class SimSpec:
    scenario: str = "training"
    gpus: tuple[str, ...] = DEFAULT_GPUS
    seed: int = 0
    at_s: float | None = None
    lost_at_s: dict[int, float] = field(default_factory=dict)
    nvml_fault: str = ""
    nvml_fault_until_s: float | None = None  # None: for good
    other_users_hidden: bool = False
    realistic_latency: bool = False
    speed: float = 1.0
    start_s: float = 0.0

    @property
    def label(self) -> str:
        return f"simulated GPUs ({self.scenario})"


def _number(key: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SimulationSpecError(f"--simulate: {key} wants a number of seconds, not {text!r}.") from None
    if value < 0:
        raise SimulationSpecError(f"--simulate: {key} must not be negative (got {text}).")
    return value


def _gpus(text: str) -> tuple[str, ...]:
    names: list[str] = []
    for part in text.split("+"):
        name, _, count_text = part.partition("*")
        if name not in PROFILES:
            known = ", ".join(PROFILES)
            raise SimulationSpecError(f"--simulate: unknown GPU profile {name!r}; choose from {known}.")
        try:
            count = int(count_text) if count_text else 1
        except ValueError:
            raise SimulationSpecError(f"--simulate: {part!r} wants a whole count after '*'.") from None
        if count < 1:
            raise SimulationSpecError(f"--simulate: {part!r} asks for no GPUs.")
        names.extend([name] * count)
    if len(names) > MAX_GPUS:
        raise SimulationSpecError(f"--simulate: at most {MAX_GPUS} GPUs can be simulated, not {len(names)}.")
    return tuple(names)


def parse_spec(text: str) -> SimSpec:
    """Parse a spec such as ``training:gpus=h100*8,seed=3``; raises SimulationSpecError."""
    scenario, _, options = text.strip().partition(":")
    scenario = scenario or "training"
    if scenario not in SCENARIO_NAMES:
        known = ", ".join(SCENARIO_NAMES)
        raise SimulationSpecError(f"--simulate: unknown scenario {scenario!r}; choose from {known}.")
    values: dict = {"scenario": scenario}
    for item in filter(None, options.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise SimulationSpecError(f"--simulate: {item!r} is not of the form key=value.")
        if key == "gpus":
            values["gpus"] = _gpus(value)
        elif key == "seed":
            values["seed"] = int(_number(key, value))
        elif key == "at":
            values["at_s"] = _number(key, value)
        elif key == "lost":
            lost = {}
            for entry in filter(None, value.split("+")):  # "lost=" alone: no GPU is lost
                gpu_text, at, when = entry.partition("@")
                if not at or not gpu_text.isdigit():
                    raise SimulationSpecError(f"--simulate: lost wants GPU@SECONDS, not {entry!r}.")
                lost[int(gpu_text)] = _number(key, when)
            values["lost_at_s"] = lost
        elif key == "nvml":
            fault, at, until = value.partition("@")
            if fault not in NVML_FAULTS:
                raise SimulationSpecError(f"--simulate: nvml wants one of {', '.join(NVML_FAULTS)}, not {fault!r}.")
            values["nvml_fault"] = fault
            values["nvml_fault_until_s"] = _number(key, until) if at else None
        elif key == "procperm":
            values["other_users_hidden"] = value in ("yes", "1", "true")
        elif key == "speed":
            values["speed"] = _number(key, value)
            if values["speed"] <= 0:
                raise SimulationSpecError("--simulate: speed must be greater than 0.")
        elif key == "start":
            values["start_s"] = _number(key, value)
        elif key == "latency":
            if value not in ("none", "realistic"):
                raise SimulationSpecError(f"--simulate: latency wants none or realistic, not {value!r}.")
            values["realistic_latency"] = value == "realistic"
        else:
            raise SimulationSpecError(
                f"--simulate: unknown option {key!r} "
                "(known: gpus, seed, at, lost, nvml, procperm, latency, speed, start)."
            )
    spec = SimSpec(**values)
    for gpu in spec.lost_at_s:
        if gpu >= len(spec.gpus):
            raise SimulationSpecError(f"--simulate: lost names GPU {gpu}, but only {len(spec.gpus)} are simulated.")
    if scenario == "faults":
        spec = _with_fault_defaults(spec, "lost" in options, "procperm" in options)
    return spec


def _with_fault_defaults(spec: SimSpec, lost_given: bool, procperm_given: bool) -> SimSpec:
    lost = spec.lost_at_s if lost_given else {len(spec.gpus) - 1: 300.0}
    hidden = spec.other_users_hidden if procperm_given else True
    return replace(spec, lost_at_s=lost, other_users_hidden=hidden)


def simulation_from(option: str | None) -> SimSpec | None:
    """The simulation asked for by a command-line option or, failing that, the environment.

    Raises SimulationSpecError for a malformed spec.
    """
    text = option if option is not None else os.environ.get(SIMULATE_ENV)
    if text is None:
        return None
    return parse_spec(text)
