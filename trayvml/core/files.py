"""Files written whole or not at all, and small files read within bounds."""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import re
import selectors
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from trayvml.core.i18n import translate

STALE_TEMPORARY_S = 3600.0  # a write takes milliseconds: a temporary file this old was left by a crash
PIPE_WAIT_S = 5.0  # a file given through a pipe (``--config <(…)``): the most its writer is waited for


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


LOCKS = sys.platform != "win32"  # flock: where there is none, whoever asks gets no lock (try_lock)


def try_lock(path: Path | str) -> int | None:
    """An exclusive flock on the file ``path`` (made, 0600, where missing), held until the
    descriptor returned is closed; None where another process holds it. Raises OSError where the
    file cannot be opened or locked. POSIX only (LOCKS)."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def file_locked(path: Path, wait_s: float) -> Iterator[str]:
    """try_lock's lock on ``path``, waited for at most ``wait_s``; yields "" where it was taken,
    else why not (the lock file is left there: removing it would race with a next holder). flock
    is let go when its holder ends, killed or not; on NFS it is the server's (a lock on a folder
    was this machine's alone)."""
    if not LOCKS:
        yield "no file locks on this system"
        return
    deadline_s = time.monotonic() + wait_s
    while True:
        try:
            fd = try_lock(path)
        except OSError as error:  # cannot be opened, or a file system without locks
            yield f"{path} could not be locked ({error.strerror or error})"
            return
        if fd is not None:
            break
        if time.monotonic() >= deadline_s:
            yield f"another program has held {path} for {wait_s:g} s"
            return
        time.sleep(0.02)
    try:
        yield ""
    finally:
        os.close(fd)  # (lets go of the lock)


def write_atomically(path: Path, data: bytes, mode: int | None = None) -> None:
    """A temporary file in the same folder, flushed to disk, then renamed over ``path``; readable by
    its user alone (0600) unless ``mode`` says otherwise.

    Raises OSError. Leftovers of earlier writes that were killed are removed first.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with _replacing(path, mode) as out:
        out.write(data)


@contextlib.contextmanager
def _replacing(path: Path, mode: int | None = None) -> Iterator[BinaryIO]:
    """A temporary file beside ``path`` (mode 0600, as mkstemp makes it, or ``mode``), flushed to
    disk and renamed over ``path`` once the caller is done; removed where anything fails. Raises
    OSError. Leftovers of earlier writes that were killed are removed first."""
    remove_stale_temporaries(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=_temporary_prefix(path), suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:  # closed whatever fails below
            if mode is not None:
                os.chmod(temporary, mode)  # by path: no fchmod on Windows
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


# A path naming one of a process' open descriptors: /dev/fd/N (a shell's ``>(…)``), /proc/self/fd/N.
_DESCRIPTOR = re.compile(r"/(?:dev/fd|proc/(?P<pid>self|\d+)/fd)/(?P<fd>\d+)")
_LINKS_FOLLOWED = 40  # as the kernel's limit on a path's symbolic links


def descriptor_named(path: str) -> int | None:
    """This process' open descriptor that ``path`` names (``/dev/stdout``, ``/dev/fd/63``,
    ``/proc/self/fd/1``, or a link to one), else None. Opened anew by its path, a regular file
    behind it would be written from its start (or renamed over), losing what ``>>`` kept."""
    for _ in range(_LINKS_FOLLOWED):
        found = _DESCRIPTOR.fullmatch(os.path.normpath(path))
        if found is not None:
            return int(found["fd"]) if found["pid"] in (None, "self", str(os.getpid())) else None
        try:
            link = os.readlink(path)
        except OSError:
            return None  # not a link (or not there): no descriptor's name
        path = os.path.join(os.path.dirname(path), link)
    return None


@contextlib.contextmanager
def output(path: str, new_mode: int | None = None) -> Iterator[BinaryIO]:
    """Where a user sends a file: one of this process' descriptors (``/dev/stdout``) and a pipe,
    device or socket written through as they are (renaming a file over one would leave its reader
    with nothing, and replace the device or the link); a regular file (or a new one) whole or not
    at all, by a temporary file renamed into place, with the mode it had (a new one: ``new_mode``,
    else what ``>`` would give it). A symbolic link keeps being a link: its target is what is
    written. Raises OSError."""
    descriptor = descriptor_named(path)
    if descriptor is not None:
        with os.fdopen(os.dup(descriptor), "wb") as out:
            yield out
        return
    target = Path(os.path.realpath(path))
    try:
        status: os.stat_result | None = target.stat()
    except FileNotFoundError:
        status = None
    if status is not None and not stat.S_ISREG(status.st_mode):
        # No O_CREAT, no O_TRUNC: it exists, and is not ours to replace or empty.
        with open(os.open(path, os.O_WRONLY), "wb") as out:
            yield out
        return
    # The mode the file had, or the new one's.
    mode = new_mode if new_mode is not None else 0o666 & ~_umask()
    with _replacing(target, stat.S_IMODE(status.st_mode) if status is not None else mode) as out:
        yield out


def quiet_stdout() -> None:
    """What is still buffered for standard output goes nowhere (its reader is gone: ``| head``):
    Python's flush at exit would otherwise fail again and print its own message after ours."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_bounded(path: Path, limit_bytes: int, mode: int | None = None, pipe_wait_s: float | None = None) -> bytes:
    """A small file's bytes (settings, a web config, a recording): at most ``limit_bytes`` + 1 of
    them, so that more than ``limit_bytes`` says the file is larger (the caller's sentence). A pipe
    (``--config <(…)``) is read as it is written (_read_pipe), for ``pipe_wait_s`` at most (default
    PIPE_WAIT_S). Anything else but a regular file is an OSError, never read: a device
    (``/dev/zero``) would be read for ever or to the limit. Raises FileNotFoundError, OSError.
    ``mode``: the path's, where the caller looked already (one look: a second one could see another
    file put there meanwhile)."""
    if mode is None:
        mode = os.stat(path).st_mode  # before opening: a terminal's open can make it ours
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        raise _not_regular()
    # Checked again once open (it may have been replaced meanwhile), which must not wait for a
    # pipe's writer nor take a terminal; binary on Windows, where the flags Unix has are absent.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(descriptor, "rb") as file:
        if stat.S_IFMT(os.fstat(descriptor).st_mode) != stat.S_IFMT(mode):
            raise _not_regular()
        if stat.S_ISFIFO(mode):
            return _read_pipe(descriptor, limit_bytes, PIPE_WAIT_S if pipe_wait_s is None else pipe_wait_s)
        return file.read(limit_bytes + 1)


def _not_regular() -> OSError:
    return OSError(errno.EINVAL, translate("files", "it is not a regular file"))


def _read_pipe(descriptor: int, limit_bytes: int, wait_s: float) -> bytes:
    """What the pipe open at ``descriptor`` (without waiting for a writer: a named pipe's open waited
    for one for ever) gives until its writer closes it (or past ``limit_bytes``), waiting ``wait_s``
    at most in all; raises OSError when it has not finished by then. Read only once it is
    readable: one that no writer has opened yet reads at once as its end, which a web config took
    for an empty one (serve without its users)."""
    chunks: list[bytes] = []
    size, deadline = 0, time.monotonic() + wait_s
    with selectors.DefaultSelector() as waiting:  # not select.select: it refuses descriptors past 1023
        waiting.register(descriptor, selectors.EVENT_READ)
        while size <= limit_bytes:
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                late = translate("files", "its writer did not finish within {seconds} s")
                raise OSError(errno.ETIMEDOUT, late.format(seconds=f"{wait_s:g}"))
            if not waiting.select(left_s):
                continue  # no writer yet, or nothing written yet: the deadline says how long
            try:
                chunk = os.read(descriptor, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:  # closed by its writer
                break
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks)[: limit_bytes + 1]
