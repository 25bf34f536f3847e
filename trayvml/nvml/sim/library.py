"""A stand-in for the NVML shared library, installed as ``pynvml.nvmlLib``.

pynvml looks each C function up by name on ``nvmlLib`` and calls it with ctypes objects
passed by reference, expecting an ``nvmlReturn_t`` back. This object answers the same way,
so trayvml's reader, its tests, gpustat and nvitop all run unchanged on simulated GPUs.
A function it does not define raises AttributeError, which pynvml turns into
``NVMLError_FunctionNotFound`` exactly as with an old driver.

The state and the name lookup are in ``base``; the C functions, by job, in ``device_calls``,
``field_calls``, ``process_calls``, ``gpm_calls`` and ``event_calls``; the per-second values
they answer from in ``timeline`` and ``field_models``.
"""

from __future__ import annotations

from typing import Any

from trayvml.nvml import binding
from trayvml.nvml.sim.device_calls import DeviceCalls
from trayvml.nvml.sim.event_calls import EventCalls
from trayvml.nvml.sim.field_calls import FieldCalls
from trayvml.nvml.sim.gpm_calls import GpmCalls
from trayvml.nvml.sim.process_calls import ProcessCalls


class SimulatedNvml(DeviceCalls, FieldCalls, ProcessCalls, GpmCalls, EventCalls):
    """Simulated GPUs, answering every C function the ``*Calls`` classes define."""


def install(library: Any) -> None:
    """Put ``library`` (a SimulatedNvml, or a ReplayedNvml) beneath pynvml, in place of libnvidia-ml."""
    binding.install_library(library)


def installed() -> Any:
    """What sits beneath pynvml now: a SimulatedNvml, the real library, or None."""
    return binding.installed_library()


def uninstall() -> None:
    binding.install_library(None)
