"""glibc's heap settings for the processes that run for days (trayvml/core/heap.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# In a fresh interpreter: a 4 MiB block is freed, then one of the same size asked for again. glibc
# maps a block that big apart at first; freeing it raises its threshold to the block's size, so the
# second comes from the heap, where freed pages stay in the process, unless the threshold is set.
# mallinfo2's hblkhd is the bytes in blocks mapped apart.
_CHILD = """
import ctypes, sys
from trayvml.core import heap

class Mallinfo2(ctypes.Structure):
    names = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
    _fields_ = [(name, ctypes.c_size_t) for name in names.split()]

libc = ctypes.CDLL(None)
if not hasattr(libc, "mallinfo2"):  # glibc before 2.33, musl
    print("no mallinfo2")
    sys.exit()
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Mallinfo2
if sys.argv[1] == "set":
    heap.big_blocks_mapped_apart()
size = 4 << 20
libc.free(libc.malloc(size))
again = libc.malloc(size)
print(libc.mallinfo2().hblkhd >= size)
libc.free(again)
"""


def _mapped_apart(how: str) -> bool:
    # glibc's own settings from the environment (the benchmarks set some) would decide for it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    command = [sys.executable, "-c", _CHILD, how]
    said = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True, env=env).stdout.strip()
    if said == "no mallinfo2":
        pytest.skip("this C library has no mallinfo2 (glibc 2.33 and later have it)")
    return said == "True"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_big_block_asked_for_again_after_one_was_freed_is_still_mapped_apart() -> None:
    assert not _mapped_apart("leave")  # glibc's own rule: from the heap (the test sees the difference)
    assert _mapped_apart("set")


@pytest.mark.parametrize(
    ("argv", "runs_for_days"),
    [
        (["--simulate=idle:gpus=h100"], True),  # the tray app
        (["serve", "--simulate=idle:gpus=h100"], True),
        (["record", "--simulate=idle:gpus=h100", "--store", "s", "--count", "1"], True),
        (["snapshot", "--simulate=idle:gpus=h100"], False),
    ],
)
def test_the_commands_that_run_for_days_map_big_blocks_apart(
    argv: list[str], runs_for_days: bool, tmp_path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from trayvml import cli
    from trayvml.commands import serve
    from trayvml.core import heap
    from trayvml.ui import app

    monkeypatch.chdir(tmp_path)
    calls: list[bool] = []
    monkeypatch.setattr(heap, "big_blocks_mapped_apart", lambda: calls.append(True))
    monkeypatch.setattr(app, "run_app", lambda *args: 0)  # the tray and serve would run until stopped
    monkeypatch.setattr(serve, "run", lambda *args: 0)
    assert cli.main(argv) == 0
    assert calls == ([True] if runs_for_days else [])
