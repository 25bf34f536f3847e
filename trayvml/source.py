"""Where samples come from: the NVML reader (real or simulated GPUs) plus the host sampler.

This is the one entry point the CLI and the UI use; it decides between real and simulated
GPUs (``--simulate`` or ``TRAYVML_SIMULATE``) and puts the simulated library in place.
"""

from __future__ import annotations

from trayvml.core.clock import Clock, SystemClock
from trayvml.core.sample import ProcessDetails, Sample
from trayvml.host.processes import resolve_host_process
from trayvml.host.sampler import HostSampler
from trayvml.nvml.reader import NvmlReader
from trayvml.nvml.sim.library import SimulatedNvml, install
from trayvml.nvml.sim.spec import SimSpec


class Source:
    def __init__(self, simulation: SimSpec | None = None, clock: Clock | None = None, host: bool = True) -> None:
        self.clock = clock or SystemClock()
        self.simulation = simulation
        self.library: SimulatedNvml | None = None
        resolver = resolve_host_process
        if simulation is not None:
            self.library = SimulatedNvml(simulation, self.clock)
            install(self.library)
            resolver = self._resolve_simulated
        self.reader = NvmlReader(self.clock, resolver)
        self.host = HostSampler() if host else None

    @property
    def label(self) -> str:
        return self.simulation.label if self.simulation else ""

    def _resolve_simulated(self, pid: int) -> ProcessDetails | None:
        assert self.library is not None
        for gpu in range(len(self.library.timelines)):
            for proc in self.library.processes(gpu):
                if proc.pid == pid:
                    if self.library.hides(proc):
                        raise PermissionError(f"process {pid} belongs to {proc.user}")
                    return ProcessDetails(proc.name, proc.user, proc.command, proc.container)
        return None

    def sample(self) -> Sample:
        gpus = self.reader.read()
        return Sample(
            timestamp_s=self.clock.now_s(),
            gpus=gpus,
            devices=self.reader.devices if gpus else (),
            system=self.reader.system,
            host=self.host.sample() if self.host else None,
            unavailable=self.reader.unavailable,
            simulation=self.label,
            notes=self.reader.notes,
        )

    def close(self) -> None:
        self.reader.close()
