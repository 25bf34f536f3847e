"""Whether each NVIDIA GPU is runtime-suspended, read from sysfs before any NVML call.

Any NVML query, and even an open NVML handle, wakes a laptop's runtime-suspended dGPU and keeps
it in D0 (5-25 W: cosmic-ext-applet-system-monitor#38, freon#250). The kernel says whether it
sleeps in ``/sys/bus/pci/devices/<address>/power/runtime_status`` without touching the GPU;
``/proc/driver/nvidia/gpus/<address>/power`` changed layout in driver 590 (freon#306).

``TRAYVML_SYSFS_ROOT`` points this at another tree (tests, and simulated GPUs, write a fake one).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

SYSFS_ROOT_ENV = "TRAYVML_SYSFS_ROOT"
NVIDIA_VENDOR = "0x10de"
DISPLAY_CLASS = "0x03"  # PCI class 03xxxx: VGA (0300) and 3D (0302) controllers
SUSPENDED = "suspended"
# power/control is set by udev rules or by hand, rarely: read again this often. A GPU whose control
# is "on" is never runtime-suspended by the kernel, so its runtime_status is read only then too;
# a server's GPUs then cost no sysfs read a tick (16 reads a second for 8 GPUs before).
CONTROL_RECHECK_S = 10.0


@dataclass(frozen=True)
class PciPower:
    address: str  # as sysfs names it: 0000:01:00.0
    status: str  # runtime_status: active, suspended, suspending, resuming, unsupported; "" unreadable
    managed: bool  # power/control is "auto": the kernel suspends it when nobody holds it (laptops)

    @property
    def asleep(self) -> bool:
        return self.status == SUSPENDED


def sysfs_root() -> Path:
    return Path(os.environ.get(SYSFS_ROOT_ENV) or "/sys")


def bus_key(bus_id: str) -> str:
    """NVML's ``00000000:01:00.0`` and sysfs's ``0000:01:00.0`` as one key (``0000:01:00.0``)."""
    parts = bus_id.strip().lower().split(":")
    if len(parts) != 3:
        return bus_id.lower()
    domain, bus, function = parts
    try:
        return f"{int(domain, 16):04x}:{bus}:{function}"
    except ValueError:
        return bus_id.lower()


def _read(path: Path | str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as file:
            return file.read().strip()
    except OSError:
        return ""


class RuntimePower:
    """The NVIDIA display functions under a sysfs root, found once, and their power state each poll
    (read each poll where the kernel may suspend the GPU, see CONTROL_RECHECK_S)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else sysfs_root()
        self._functions: list[Path] | None = None
        # Each function's bus key, address and runtime_status path, and what the unmanaged ones'
        # status said at the last read of their control.
        self._gpus: list[tuple[str, str, str]] = []
        self._unmanaged: dict[str, PciPower] = {}
        self._control_due_s = 0.0  # time.monotonic(): the kernel's state, whatever clock the reader runs on
        # The file being read, "" between reads: read from another thread to say what does not
        # answer (a sysfs read runs where NVML calls do, so it holds up the sample just the same).
        self.reading = ""

    def _read(self, path: Path | str) -> str:
        self.reading = str(path)
        try:
            return _read(path)
        finally:
            self.reading = ""

    def rescan(self) -> None:
        """Look for NVIDIA functions again at the next poll (NVML is being opened anew)."""
        self._functions = None

    def _find(self) -> list[Path]:
        devices = self.root / "bus" / "pci" / "devices"
        try:
            entries = sorted(devices.iterdir())
        except OSError:
            return []  # no sysfs (not Linux, a container without it): NVML alone decides
        return [
            d
            for d in entries
            if self._read(d / "vendor") == NVIDIA_VENDOR and self._read(d / "class").startswith(DISPLAY_CLASS)
        ]

    def _read_controls(self, functions: list[Path]) -> None:
        self._gpus, self._unmanaged = [], {}
        for d in functions:
            status = str(d / "power" / "runtime_status")
            self._gpus.append((bus_key(d.name), d.name, status))
            if self._read(d / "power" / "control") != "auto":
                self._unmanaged[d.name] = PciPower(d.name, self._read(status), False)

    def poll(self) -> dict[str, PciPower]:
        """Each NVIDIA GPU's power state by bus key; empty where sysfs says nothing (then read NVML)."""
        now_s = time.monotonic()
        if self._functions is None or now_s >= self._control_due_s:
            if self._functions is None:
                self._functions = self._find()
            self._read_controls(self._functions)
            self._control_due_s = now_s + CONTROL_RECHECK_S
        return {
            key: self._unmanaged.get(address) or PciPower(address, self._read(status), True)
            for key, address, status in self._gpus
        }
