"""How much the history on disk keeps."""

from __future__ import annotations

from dataclasses import dataclass

from trayvml.core.units import MIB


@dataclass(frozen=True)
class Limits:
    """How much the store keeps (settings: history_fine_hours, history_coarse_days, history_size_mib,
    process_history_per_gpu)."""

    fine_span_s: float = 24 * 3600.0
    coarse_span_s: float = 7 * 86400.0
    size_cap_bytes: int = 512 * MIB
    processes_per_gpu: int = 8  # the biggest processes of each GPU kept per flush; 0: none
