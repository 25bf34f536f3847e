"""Files written whole or not at all."""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
import time
from pathlib import Path

STALE_TEMPORARY_S = 3600.0  # a write takes milliseconds: a temporary file this old was left by a crash


def _temporary_prefix(path: Path) -> str:
    # Named after the file, this program and the writer's process, so that leftovers of a writer
    # killed mid-write can be told from anyone else's files and from writes still under way.
    return f".{path.name}.trayvml-{os.getpid()}-"


def remove_stale_temporaries(path: Path) -> None:
    """Remove temporary files that writes of ``path`` left behind when they were killed.

    Best effort: a folder that cannot be listed or written is left as it is (its reads and writes
    report their own errors).
    """
    with contextlib.suppress(OSError):
        for temporary in path.parent.glob(f".{glob.escape(path.name)}.trayvml-*-*.tmp"):
            pid_text = temporary.name[len(f".{path.name}.trayvml-") :].split("-", 1)[0]
            if pid_text.isdigit() and _is_stale(temporary, int(pid_text)):
                temporary.unlink(missing_ok=True)


def _is_stale(temporary: Path, pid: int) -> bool:
    try:
        if time.time() - temporary.stat().st_mtime > STALE_TEMPORARY_S:
            return True
        if os.name != "posix" or pid == os.getpid():
            return False  # on Windows os.kill would terminate the process it asks about
        os.kill(pid, 0)  # signal 0 only asks whether the writer still runs
    except ProcessLookupError:
        return True
    except OSError:
        return False  # gone already, or the writer runs as someone else
    return False


def state_folder() -> Path:
    """The user's state folder for trayvml (``~/.local/state/trayvml`` on Linux): the history, the
    push status, the boot time its processes are dated by."""
    from platformdirs import user_state_path

    return user_state_path("trayvml", appauthor=False)


def create_atomically(path: Path, data: bytes) -> None:
    """Write ``path`` whole, only where it does not exist yet: a temporary file linked to ``path``.

    Raises FileExistsError where another process made it first (its content stays), else OSError.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=_temporary_prefix(path), suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.link(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)


def write_atomically(path: Path, data: bytes) -> None:
    """A temporary file in the same folder, flushed to disk, then renamed over ``path``.

    Raises OSError. Leftovers of earlier writes that were killed are removed first.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=_temporary_prefix(path), suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
