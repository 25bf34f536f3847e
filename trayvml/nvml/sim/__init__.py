"""Simulated GPUs that sit beneath pynvml (see library.py)."""

from trayvml.nvml.sim.library import SimulatedNvml, install, uninstall
from trayvml.nvml.sim.spec import SimSpec, parse_spec

__all__ = ["SimSpec", "SimulatedNvml", "install", "parse_spec", "uninstall"]
