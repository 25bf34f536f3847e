"""Errors a user can act on. Each carries a sentence meant for people, not a traceback."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class UnavailableReason(enum.Enum):
    LIBRARY_NOT_FOUND = "library_not_found"
    DRIVER_NOT_LOADED = "driver_not_loaded"
    VERSION_MISMATCH = "version_mismatch"
    NO_PERMISSION = "no_permission"
    NO_GPUS = "no_gpus"
    OTHER = "other"


_SENTENCES = {
    UnavailableReason.LIBRARY_NOT_FOUND: (
        "No NVIDIA driver found: the NVML library (libnvidia-ml) that ships with the driver is not "
        "installed. Install the NVIDIA driver, or try trayvml with --simulate."
    ),
    UnavailableReason.DRIVER_NOT_LOADED: (
        "The NVIDIA driver is installed but not loaded: no NVIDIA kernel module is running. "
        "Check `lsmod | grep nvidia`, or reboot after installing the driver."
    ),
    UnavailableReason.VERSION_MISMATCH: (
        "The NVIDIA driver was updated but the old kernel module is still loaded "
        "(driver/library version mismatch). Reboot to finish the update."
    ),
    UnavailableReason.NO_PERMISSION: (
        "No permission to open the NVIDIA device files (/dev/nvidia*). "
        "Ask an administrator to add you to the group that owns them."
    ),
    UnavailableReason.NO_GPUS: "The NVIDIA driver is running but reports no GPUs.",
    UnavailableReason.OTHER: "NVML could not start",
}


_HEADLINES = {
    UnavailableReason.LIBRARY_NOT_FOUND: "No NVIDIA driver found",
    UnavailableReason.DRIVER_NOT_LOADED: "NVIDIA driver not loaded",
    UnavailableReason.VERSION_MISMATCH: "Driver updated: reboot needed",
    UnavailableReason.NO_PERMISSION: "No permission to read the GPUs",
    UnavailableReason.NO_GPUS: "No NVIDIA GPUs found",
    UnavailableReason.OTHER: "NVML could not start",
}


@dataclass(frozen=True)
class NvmlUnavailable:
    """Why NVML cannot be used right now; ``sentence`` is what a user reads."""

    reason: UnavailableReason
    detail: str = ""

    @property
    def headline(self) -> str:
        """A few words for a menu entry; ``sentence`` says what to do."""
        return _HEADLINES[self.reason]

    @property
    def sentence(self) -> str:
        base = _SENTENCES[self.reason]
        if self.reason is UnavailableReason.OTHER and self.detail:
            return f"{base}: {self.detail}."
        return base


class TrayvmlError(Exception):
    """An expected failure with a message fit for a user (no traceback is shown)."""


class NotEnoughGpusError(TrayvmlError):
    pass


class SimulationSpecError(TrayvmlError):
    pass
