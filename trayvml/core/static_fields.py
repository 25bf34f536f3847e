"""The facts about a GPU that do not change while it runs (name, UUID, driver, limits, links): how
each is labelled, where it goes in nvidia-smi's CSV and in JSON, and in what unit."""

from __future__ import annotations

from dataclasses import dataclass

from trayvml.core.i18n import QT_TRANSLATE_NOOP
from trayvml.core.metrics import SmiField
from trayvml.core.units import MIB, Unit


@dataclass(frozen=True)
class StaticField:
    """A fact about a GPU that does not change while it runs; ``key`` names a DeviceInfo field."""

    key: str
    label: str
    smi: SmiField
    unit: Unit = Unit.COUNT  # BYTES: shown to people in a unit that fits the value


STATIC_FIELDS: tuple[StaticField, ...] = (
    StaticField("index", QT_TRANSLATE_NOOP("metrics", "Index"), SmiField("index")),
    StaticField("name", QT_TRANSLATE_NOOP("metrics", "Name"), SmiField("name")),
    StaticField("uuid", QT_TRANSLATE_NOOP("metrics", "UUID"), SmiField("uuid")),
    StaticField("serial", QT_TRANSLATE_NOOP("metrics", "Serial number"), SmiField("serial")),
    StaticField("pci_bus_id", QT_TRANSLATE_NOOP("metrics", "PCI bus id"), SmiField("pci.bus_id")),
    StaticField("vbios_version", QT_TRANSLATE_NOOP("metrics", "VBIOS"), SmiField("vbios_version")),
    StaticField("compute_capability", QT_TRANSLATE_NOOP("metrics", "Compute capability"), SmiField("compute_cap")),
    StaticField("persistence_mode", QT_TRANSLATE_NOOP("metrics", "Persistence mode"), SmiField("persistence_mode")),
    StaticField("mig_mode_current", QT_TRANSLATE_NOOP("metrics", "MIG mode"), SmiField("mig.mode.current")),
    StaticField("mig_mode_pending", QT_TRANSLATE_NOOP("metrics", "MIG mode (pending)"), SmiField("mig.mode.pending")),
    StaticField("ecc_mode_current", QT_TRANSLATE_NOOP("metrics", "ECC mode"), SmiField("ecc.mode.current")),
    StaticField(
        "memory_total_bytes",
        QT_TRANSLATE_NOOP("metrics", "Memory total"),
        SmiField("memory.total", "MiB", 1 / MIB, round_up=True),
        Unit.BYTES,
    ),
    # gpustat's name for the flag (gpustat#179); nvidia-smi has no such column.
    StaticField(
        "unified_memory",
        QT_TRANSLATE_NOOP("metrics", "Unified memory (host RAM)"),
        SmiField("memory.unified", ours=True),
    ),
    StaticField(
        "power_limit_default_w",
        QT_TRANSLATE_NOOP("metrics", "Default power limit"),
        SmiField("power.default_limit", "W", decimals=2),
    ),
    StaticField(
        "power_limit_min_w",
        QT_TRANSLATE_NOOP("metrics", "Minimum power limit"),
        SmiField("power.min_limit", "W", decimals=2),
    ),
    StaticField(
        "power_limit_max_w",
        QT_TRANSLATE_NOOP("metrics", "Maximum power limit"),
        SmiField("power.max_limit", "W", decimals=2),
    ),
    StaticField("clock_max_sm_mhz", QT_TRANSLATE_NOOP("metrics", "Max SM clock"), SmiField("clocks.max.sm", "MHz")),
    StaticField(
        "clock_max_graphics_mhz",
        QT_TRANSLATE_NOOP("metrics", "Max graphics clock"),
        SmiField("clocks.max.graphics", "MHz"),
    ),
    StaticField(
        "clock_max_memory_mhz", QT_TRANSLATE_NOOP("metrics", "Max memory clock"), SmiField("clocks.max.memory", "MHz")
    ),
    StaticField(
        "clock_max_video_mhz",
        QT_TRANSLATE_NOOP("metrics", "Max video clock"),
        SmiField("clocks.max.video", "MHz", ours=True),
    ),
    StaticField(
        "pcie_link_gen_max", QT_TRANSLATE_NOOP("metrics", "Max PCIe generation"), SmiField("pcie.link.gen.max")
    ),
    StaticField("pcie_link_width_max", QT_TRANSLATE_NOOP("metrics", "Max PCIe width"), SmiField("pcie.link.width.max")),
    StaticField(
        "nvlink_link_count", QT_TRANSLATE_NOOP("metrics", "NVLink links"), SmiField("nvlink.link_count", ours=True)
    ),
)

# Clock event ("throttle") reason bits, as in nvml.h's nvmlClocksEventReason*.
