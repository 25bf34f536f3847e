"""Errors a user can act on. Each carries a sentence meant for people, not a traceback."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from trayvml.core.i18n import QT_TRANSLATE_NOOP, translate
from trayvml.core.units import format_duration


class UnavailableReason(enum.Enum):
    LIBRARY_NOT_FOUND = "library_not_found"
    DRIVER_NOT_LOADED = "driver_not_loaded"
    VERSION_MISMATCH = "version_mismatch"
    NO_PERMISSION = "no_permission"
    NO_GPUS = "no_gpus"
    READ_FAILED = "read_failed"  # an unexpected error in trayvml's own reading code
    OTHER = "other"


_SENTENCES = {
    UnavailableReason.LIBRARY_NOT_FOUND: QT_TRANSLATE_NOOP(
        "errors",
        "No NVIDIA driver found: the NVML library (libnvidia-ml) that ships with the driver is not "
        "installed. Install the NVIDIA driver.",
    ),
    UnavailableReason.DRIVER_NOT_LOADED: QT_TRANSLATE_NOOP(
        "errors",
        "The NVIDIA driver is installed but not loaded: no NVIDIA kernel module is running. "
        "Check `lsmod | grep nvidia`, or reboot after installing the driver.",
    ),
    UnavailableReason.VERSION_MISMATCH: QT_TRANSLATE_NOOP(
        "errors",
        "The NVIDIA driver was updated but the old kernel module is still loaded "
        "(driver/library version mismatch). Reboot to finish the update.",
    ),
    UnavailableReason.NO_PERMISSION: QT_TRANSLATE_NOOP(
        "errors",
        "No permission to open the NVIDIA device files (/dev/nvidia*). "
        "Ask an administrator to add you to the group that owns them.",
    ),
    UnavailableReason.NO_GPUS: QT_TRANSLATE_NOOP("errors", "The NVIDIA driver is running but reports no GPUs."),
    UnavailableReason.READ_FAILED: QT_TRANSLATE_NOOP(
        "errors", "Reading the GPUs failed in trayvml itself (the details are in its log)"
    ),
    UnavailableReason.OTHER: QT_TRANSLATE_NOOP("errors", "NVML could not start"),
}


_HEADLINES = {
    UnavailableReason.LIBRARY_NOT_FOUND: QT_TRANSLATE_NOOP("errors", "No NVIDIA driver found"),
    UnavailableReason.DRIVER_NOT_LOADED: QT_TRANSLATE_NOOP("errors", "NVIDIA driver not loaded"),
    UnavailableReason.VERSION_MISMATCH: QT_TRANSLATE_NOOP("errors", "Driver updated: reboot needed"),
    UnavailableReason.NO_PERMISSION: QT_TRANSLATE_NOOP("errors", "No permission to read the GPUs"),
    UnavailableReason.NO_GPUS: QT_TRANSLATE_NOOP("errors", "No NVIDIA GPUs found"),
    UnavailableReason.READ_FAILED: QT_TRANSLATE_NOOP("errors", "Reading the GPUs failed"),
    UnavailableReason.OTHER: QT_TRANSLATE_NOOP("errors", "NVML could not start"),
}


@dataclass(frozen=True)
class NvmlUnavailable:
    """Why NVML cannot be used right now; ``sentence`` is what a user reads."""

    reason: UnavailableReason
    detail: str = ""
    simulated: bool = False  # a fault asked for with --simulate

    @property
    def headline(self) -> str:
        """A few words for a menu entry; ``sentence`` says what to do."""
        return translate("errors", _HEADLINES[self.reason])

    @property
    def cause(self) -> str:
        """What is wrong and what to do, without the advice to simulate (where a button offers it)."""
        base = translate("errors", _SENTENCES[self.reason])
        if self.reason in (UnavailableReason.OTHER, UnavailableReason.READ_FAILED) and self.detail:
            base = translate("errors", "{problem}: {detail}.").format(problem=base, detail=self.detail)
        return base

    @property
    def sentence(self) -> str:
        base = self.cause
        if self.simulated:  # the user asked for this fault: advice about simulating would mislead
            return translate("errors", "{problem} This fault is simulated, as --simulate asked.").format(problem=base)
        if self.reason is UnavailableReason.LIBRARY_NOT_FOUND:
            return translate("errors", "{problem} Meanwhile, trayvml --simulate shows simulated GPUs.").format(
                problem=base
            )
        return base


@dataclass(frozen=True)
class DriverStall:
    """The NVIDIA driver has not answered a call since ``since_s``: the GPU values are not current.

    A wedged GPU (Xid 79) or a driver bug can make one call never return; nvidia-smi hangs then too.
    """

    since_s: float  # wall clock when the call that has not returned began
    call: str = ""  # the NVML function in flight, or the sysfs file being read (a path); "" where unknown

    @property
    def in_file(self) -> bool:
        """Whether a file (sysfs's runtime_status, read before any NVML call) is what does not answer,
        not the driver: no NVML function has a "/" in its name."""
        return "/" in self.call

    @property
    def headline(self) -> str:
        if self.in_file:
            return translate("errors", "GPU power state not readable")
        return translate("errors", "GPU driver not responding")

    def sentence(self, now_s: float) -> str:
        waited = format_duration(now_s - self.since_s)
        if self.in_file:
            return translate(
                "errors",
                "Reading {file} has not finished for {duration}; trayvml reads it before asking the NVIDIA "
                "driver, so no GPU values are current until it does.",
            ).format(file=self.call, duration=waited)
        if self.call:
            return translate(
                "errors",
                "The NVIDIA driver has not answered for {duration}, stuck in {call}; "
                "no GPU values are current until it does.",
            ).format(duration=waited, call=self.call)
        return translate(
            "errors", "The NVIDIA driver has not answered for {duration}; no GPU values are current until it does."
        ).format(duration=waited)


class TrayvmlError(Exception):
    """An expected failure with a message fit for a user (no traceback is shown)."""


class NotEnoughGpusError(TrayvmlError):
    pass


class SimulationSpecError(TrayvmlError):
    pass
