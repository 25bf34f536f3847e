"""trayvml: a system-tray monitor for NVIDIA GPUs.

The public Python API is small: :func:`pick_gpus` and :func:`visible_gpus` choose the
freest GPUs for ``CUDA_VISIBLE_DEVICES``. They are imported on first use, so that
``import trayvml`` stays cheap for the tray app's start-up.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "pick_gpus", "visible_gpus"]


def __getattr__(name: str) -> Any:
    if name in ("pick_gpus", "visible_gpus"):
        from trayvml import pick

        return getattr(pick, name)
    raise AttributeError(f"module 'trayvml' has no attribute {name!r}")
