"""Simulated GPUs that sit beneath pynvml (see library.py).

Only the specification is imported here: parsing ``--simulate`` must not pull numpy and
pynvml into the tray app's start-up. The library is ``trayvml.nvml.sim.library``.
"""

from trayvml.nvml.sim.options import SIMULATE_ENV, SimSpec, parse_spec, simulation_from

__all__ = ["SIMULATE_ENV", "SimSpec", "parse_spec", "simulation_from"]
