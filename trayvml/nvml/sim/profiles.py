"""The GPUs the simulation can stand in for, with what each does and does not support."""

from __future__ import annotations

from dataclasses import dataclass, replace

from trayvml.core.units import MIB


@dataclass(frozen=True)
class MigInstance:
    """A MIG device: a GPU instance (with one compute instance) carved out of the board."""

    profile: str  # e.g. "3g.40gb"
    gpu_instance_id: int
    slices: int  # compute slices of the board's 7
    memory_total_bytes: int


# The H100 80GB's MIG profiles: compute slices (of 7) and memory, for ``mig=`` layouts. The 2g
# and 3g sizes are nvidia-smi mig -lgi's; the others are near enough for a simulation.
MIG_PROFILES: dict[str, tuple[int, int]] = {
    "1g.10gb": (1, 9856 * MIB),
    "2g.20gb": (2, 20096 * MIB),
    "3g.40gb": (3, 40448 * MIB),
    "4g.40gb": (4, 40448 * MIB),
    "7g.80gb": (7, 80896 * MIB),
}
MIG_SLICES = 7


@dataclass(frozen=True)
class GpuProfile:
    key: str
    name: str
    memory_total_bytes: int
    memory_reserved_bytes: int
    power_limit_w: float
    power_min_limit_w: float
    power_max_limit_w: float
    power_idle_w: float
    temperature_idle_c: float
    temperature_load_c: float
    clock_max_sm_mhz: int
    clock_max_memory_mhz: int
    clock_max_video_mhz: int
    clock_idle_sm_mhz: int
    pcie_gen_max: int
    pcie_width_max: int
    compute_capability: tuple[int, int]
    vbios_version: str
    board_serial: str  # "" where the board has none (consumer cards answer NOT_SUPPORTED)
    has_fan: bool = True
    has_power: bool = True  # power draw, limits and energy (many laptops lack them)
    has_memory_temperature: bool = False
    nvlink_links: int = 0
    nvlink_link_gb_per_s: float = 0.0
    has_ecc: bool = False
    mig_capable: bool = False
    has_pcie_counters: bool = True  # NVML_FI_DEV_PCIE_COUNT_* field values
    pcie_gb_per_s: float = 32.0
    has_gpm: bool = False  # GPM activity metrics: Hopper and newer data-center GPUs
    runtime_pm: bool = False  # the kernel may runtime-suspend it (a laptop dGPU): it can sleep=
    mig_instances: tuple[MigInstance, ...] = ()  # MIG mode on, with these instances
    # False: no memory of its own (unified memory, the host's RAM): nvmlDeviceGetMemoryInfo and its
    # _v2 answer NOT_SUPPORTED, as on a GB10; memory_total_bytes then sizes the scenario's jobs.
    has_memory_info: bool = True


PROFILES: dict[str, GpuProfile] = {
    p.key: p
    for p in (
        GpuProfile(
            key="h100",
            name="NVIDIA H100 80GB HBM3",
            memory_total_bytes=81559 * MIB,
            memory_reserved_bytes=579 * MIB,
            power_limit_w=700.0,
            power_min_limit_w=200.0,
            power_max_limit_w=700.0,
            power_idle_w=72.0,
            temperature_idle_c=31.0,
            temperature_load_c=68.0,
            clock_max_sm_mhz=1980,
            clock_max_memory_mhz=2619,
            clock_max_video_mhz=1545,
            clock_idle_sm_mhz=345,
            pcie_gen_max=5,
            pcie_width_max=16,
            compute_capability=(9, 0),
            vbios_version="96.00.99.00.01",
            board_serial="1654123000001",
            has_fan=False,  # SXM boards are cooled by the chassis: NVML says NOT_SUPPORTED
            has_memory_temperature=True,
            nvlink_links=18,
            nvlink_link_gb_per_s=25.0,
            has_ecc=True,
            mig_capable=True,
            pcie_gb_per_s=64.0,
            has_gpm=True,
        ),
        GpuProfile(
            key="rtx4090",
            name="NVIDIA GeForce RTX 4090",
            memory_total_bytes=24564 * MIB,
            memory_reserved_bytes=335 * MIB,
            power_limit_w=450.0,
            power_min_limit_w=150.0,
            power_max_limit_w=600.0,
            power_idle_w=21.0,
            temperature_idle_c=36.0,
            temperature_load_c=74.0,
            clock_max_sm_mhz=3105,
            clock_max_memory_mhz=10501,
            clock_max_video_mhz=2415,
            clock_idle_sm_mhz=210,
            pcie_gen_max=4,
            pcie_width_max=16,
            compute_capability=(8, 9),
            vbios_version="95.02.18.80.87",
            board_serial="",
        ),
        GpuProfile(
            key="laptop",
            name="NVIDIA GeForce RTX 4070 Laptop GPU",
            memory_total_bytes=8188 * MIB,
            memory_reserved_bytes=211 * MIB,
            power_limit_w=115.0,
            power_min_limit_w=35.0,
            power_max_limit_w=115.0,
            power_idle_w=4.0,
            temperature_idle_c=44.0,
            temperature_load_c=82.0,
            clock_max_sm_mhz=3105,
            clock_max_memory_mhz=8001,
            clock_max_video_mhz=2415,
            clock_idle_sm_mhz=210,
            pcie_gen_max=4,
            pcie_width_max=8,
            compute_capability=(8, 9),
            vbios_version="95.06.1e.00.4f",
            board_serial="",
            has_fan=False,
            has_power=False,
            has_pcie_counters=False,
            pcie_gb_per_s=16.0,
            runtime_pm=True,
        ),
        # The GPU of a DGX Spark: Blackwell, sharing the host's 128 GB of LPDDR5x. NVML answers
        # NOT_SUPPORTED for its memory info (nvidia-smi: "FB Memory Usage: N/A", driver 580;
        # nvitop#208, nvtop#466) and reports a PCIe link of Gen1 x1 for a GPU on the chip itself.
        # Clocks and limits are round figures, not measured ones.
        GpuProfile(
            key="gb10",
            name="NVIDIA GB10",
            memory_total_bytes=124_611 * MIB,  # the unified pool nvtop#511 measured: 121.69 GiB
            memory_reserved_bytes=0,
            power_limit_w=100.0,
            power_min_limit_w=20.0,
            power_max_limit_w=100.0,
            power_idle_w=11.0,
            temperature_idle_c=35.0,
            temperature_load_c=72.0,
            clock_max_sm_mhz=3003,
            clock_max_memory_mhz=4266,
            clock_max_video_mhz=2400,
            clock_idle_sm_mhz=208,
            pcie_gen_max=1,
            pcie_width_max=1,
            compute_capability=(12, 1),
            vbios_version="00.00.00.00.00",
            board_serial="",
            has_fan=False,
            has_pcie_counters=False,
            pcie_gb_per_s=0.25,
            has_memory_info=False,
        ),
    )
}

# The H100 in MIG mode with one 3g.40gb and two 2g.20gb instances (GPU instance ids as nvidia-smi
# mig -lgi shows them for that layout).
PROFILES["h100-mig"] = replace(
    PROFILES["h100"],
    key="h100-mig",
    mig_instances=(
        MigInstance("3g.40gb", 2, 3, 40448 * MIB),
        MigInstance("2g.20gb", 3, 2, 20096 * MIB),
        MigInstance("2g.20gb", 4, 2, 20096 * MIB),
    ),
)
