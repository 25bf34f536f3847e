"""The NVML layer: the only code that talks to pynvml (real or simulated library beneath it)."""
