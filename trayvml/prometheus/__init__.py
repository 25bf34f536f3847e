"""Prometheus exposition (``exposition.py``).

The defaults live here, apart from ``exposition.py``: the command line shows them in its help,
and importing prometheus-client with its HTTP, e-mail and TLS modules for two constants cost every
start of the tray about 10 MiB (benchmarks/README.md).
"""

# Outside 9100-9999 (Prometheus's exporter port list, full since 2023) and away from the GPU
# exporters people already run: dcgm-exporter 9400, nvidia_gpu_exporter 9835, nvitop-exporter 8000.
# 8729 spells TRAY on a phone keypad.
DEFAULT_PORT = 8729
DEFAULT_ADDRESS = "127.0.0.1"
