"""The process' heap (glibc's malloc): freed memory handed back to the system, fewer arenas."""

from __future__ import annotations

import contextlib


def give_back_free_memory() -> None:
    """Hands the heap's free pages back to the system (glibc's malloc_trim). glibc keeps freed
    memory for reuse: after start-up (serve), or a week of history let go when the window hides
    (the tray), it would stay in the process' RSS (benchmarks/README.md)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL(None).malloc_trim(0)


def few_malloc_arenas(arenas: int = 2) -> None:
    """Caps glibc's malloc arenas, before the threads start. glibc gives each thread that allocates an
    arena of its own (up to 8 a core); serve's threads (sampling, NVML, HTTP, one per connection) do
    little, and their arenas held about 1.6 MiB of RSS (benchmarks/README.md, issue 23)."""
    import ctypes

    m_arena_max = -8  # from glibc's malloc.h
    with contextlib.suppress(OSError, AttributeError):  # no mallopt (musl, macOS): nothing to cap
        ctypes.CDLL(None).mallopt(m_arena_max, arenas)
