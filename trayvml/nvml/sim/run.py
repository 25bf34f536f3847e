"""Run another pynvml-based tool on simulated GPUs.

    python -m trayvml.nvml.sim.run SPEC TOOL [ARGS...]
    python -m trayvml.nvml.sim.run "training:at=300" gpustat --json

The tool's console script is looked up among the installed entry points and called in this
process after the simulated library is put beneath pynvml.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

from trayvml.core.clock import SystemClock
from trayvml.core.errors import SimulationSpecError
from trayvml.nvml.sim.library import SimulatedNvml, install
from trayvml.nvml.sim.options import parse_spec


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m trayvml.nvml.sim.run SPEC TOOL [ARGS...]", file=sys.stderr)
        return 2
    try:
        spec = parse_spec(argv[0])
    except SimulationSpecError as error:
        print(error, file=sys.stderr)
        return 2
    found = [ep for ep in entry_points(group="console_scripts") if ep.name == argv[1]]
    if not found:
        print(f"No installed Python tool is called {argv[1]!r}.", file=sys.stderr)
        return 2
    install(SimulatedNvml(spec, SystemClock()))
    sys.argv = argv[1:]
    result = found[0].load()()
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
