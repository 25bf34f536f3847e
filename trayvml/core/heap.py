"""The process' heap: freed memory handed back to the system."""

from __future__ import annotations

import contextlib


def give_back_free_memory() -> None:
    """Hands the heap's free pages back to the system (glibc's malloc_trim). glibc keeps freed
    memory for reuse: after start-up (serve), or a week of history let go when the window hides
    (the tray), it would stay in the process' RSS (benchmarks/README.md)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL(None).malloc_trim(0)
