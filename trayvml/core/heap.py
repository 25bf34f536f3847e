"""The process' heap (glibc's malloc): freed memory handed back to the system, fewer arenas, big
blocks kept out of the heap."""

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


MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value


def big_blocks_mapped_apart(threshold_bytes: int = MMAP_THRESHOLD_BYTES) -> None:
    """Keeps glibc's mmap threshold at ``threshold_bytes`` for a process that runs for days (the
    tray, ``record``, ``serve``). glibc raises the threshold to the size of each mapped block freed,
    up to 32 MiB: once an hour of history has been packed (arrays of a few MiB), later blocks that
    size come from the heap and the threads' arenas, and their pages stay behind when freed. Set
    once, the threshold stays: a block of 128 KiB or more is mapped apart and unmapped when freed.
    The idle tray's memory after two hours of samples no longer jumps by 5-19 MiB from run to run
    (benchmarks/README.md, issue 23)."""
    import ctypes

    m_mmap_threshold = -3  # from glibc's malloc.h
    with contextlib.suppress(OSError, AttributeError):  # no mallopt (musl, macOS): nothing to set
        ctypes.CDLL(None).mallopt(m_mmap_threshold, threshold_bytes)
