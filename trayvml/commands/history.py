"""`trayvml history`: the history on disk read back as log's CSV, or its statistics."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import sqlite3
import stat
import sys
import tempfile
import unicodedata
from collections.abc import Iterator
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from trayvml.core.errors import TrayvmlError
from trayvml.core.files import remove_stale_temporaries
from trayvml.core.i18n import translate

if TYPE_CHECKING:
    from trayvml.core.sample import Sample
    from trayvml.history.disk.read import StoreReader

_SINCE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(s|m|min|h|d|w)", re.ASCII)
_SECONDS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DEFAULT_SINCE_S = 3600.0


def _folder(args: argparse.Namespace, simulated: bool) -> Path:
    from trayvml.history import default_folder

    # Against the working directory now: the folder is named in messages and opened by URI.
    return Path(args.store).absolute() if args.store is not None else default_folder(simulated)


def parse_time(text: str, now: datetime) -> float:
    """Seconds since the epoch for an ISO date-time (local time unless it names its offset)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        wrong = translate("record", "{value} is not a date and time such as {example}.")
        raise TrayvmlError(wrong.format(value=repr(text), example=f"{now:%Y-%m-%d %H:%M}")) from None
    return moment.astimezone().timestamp() if moment.tzinfo is None else moment.timestamp()


def parse_since(text: str) -> float:
    match = _SINCE.fullmatch(text.strip())
    if match is None:
        raise TrayvmlError(
            translate("record", "--since {value} is not a length of time such as 90m, 2h or 3d.").format(
                value=repr(text)
            )
        )
    return float(match.group(1)) * _SECONDS[match.group(2)]


def time_range(args: argparse.Namespace, now_s: float) -> tuple[float, float]:
    now = datetime.fromtimestamp(now_s).astimezone()
    if args.end is not None and args.start is None:
        raise TrayvmlError(translate("record", "--to needs --from."))
    if args.start is not None:
        start_s = parse_time(args.start, now)
        end_s = parse_time(args.end, now) if args.end is not None else now_s
    else:
        start_s, end_s = now_s - parse_since(args.since or f"{DEFAULT_SINCE_S:g}s"), now_s
    if end_s < start_s:
        raise TrayvmlError(translate("record", "--to is before --from."))
    return start_s, end_s


def history(args: argparse.Namespace, now_s: float, simulated: bool = False) -> int:
    """Export or describe the store; ``simulated``: the simulated GPUs' own (``--simulate``)."""
    from trayvml.history.disk.read import StoreReader

    folder = _folder(args, simulated)
    reader = StoreReader(folder)
    try:
        return _history(args, now_s, reader, folder)
    except sqlite3.Error as error:
        unreadable = translate("record", "Cannot read the history in {folder}: {error}.")
        raise TrayvmlError(unreadable.format(folder=folder, error=error)) from None
    finally:
        reader.close()


def _history(args: argparse.Namespace, now_s: float, reader: StoreReader, folder: Path) -> int:
    """The export (or --stats) from an open reader."""
    from trayvml.commands.csvlog import header_line, parse_fields, rows

    if not reader.devices():
        none = translate("record", "No history in {folder} yet: the tray app or `trayvml record` writes it.")
        raise TrayvmlError(none.format(folder=folder))
    if args.stats:
        print(_stats_text(reader, folder))
        return 0
    columns = parse_fields(args.query)
    start_s, end_s = time_range(args, now_s)
    units = not args.nounits
    count = 0
    try:
        with _output(args.csv) as out:
            out.write(header_line(columns) + "\n")
            for sample in stored_samples(reader, start_s, end_s, args.gpu):
                lines = rows(sample, columns, units)
                out.write("".join(line + "\n" for line in lines))
                count += len(lines)
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        _quiet_stdout()
        return 0
    if args.csv != "-":
        written = (
            translate("record", "trayvml: {count} rows written to {path}")
            if count != 1
            else translate("record", "trayvml: {count} row written to {path}")
        )
        print(written.format(count=count, path=args.csv), file=sys.stderr)
    return 0


def stored_samples(reader: object, start_s: float, end_s: float, gpu_index: int | None) -> Iterator[Sample]:
    """The stored GPUs' samples in the range as Samples, one per time, oldest first."""
    from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, Sample
    from trayvml.history.disk.read import StoreReader
    from trayvml.history.disk.write import GPU_LAYOUT, HOST_UUID

    assert isinstance(reader, StoreReader)
    names = {f.name for f in fields(DeviceInfo)}
    by_time: dict[int, list[tuple[GpuSample, DeviceInfo]]] = {}
    for device in reader.devices():
        if device.uuid == HOST_UUID:
            continue
        info = DeviceInfo(**{k: v for k, v in device.info.items() if k in names})  # type: ignore[arg-type]
        if gpu_index is not None and info.index != gpu_index:
            continue
        data = reader.fine(device.uuid, start_s, end_s, GPU_LAYOUT.keys)
        states = [tuple(MetricState(s) for s in row) for row in data.states.tolist()]
        for t_s, values, state in zip(data.times_s.tolist(), data.values.tolist(), states, strict=True):
            by_time.setdefault(round(t_s * 1000), []).append((GpuSample(info.index, tuple(values), state), info))
    for t_ms in sorted(by_time):
        pairs = sorted(by_time[t_ms], key=lambda p: p[1].index)
        # The middle of the stored millisecond: printed cut to milliseconds, it is the time `log` printed.
        yield Sample((t_ms + 0.5) / 1000, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), None, None)


@contextlib.contextmanager
def _output(path: str) -> Iterator[TextIO]:
    """Where the CSV goes: standard output for ``-``; a pipe, device or socket written through, as
    `log` does (renaming a file over one would leave its reader with nothing, and replace the
    device); a regular file (or a new one) written whole or not at all, by a temporary file renamed
    into place. A symbolic link keeps being a link: its target is what is written, atomically.
    Raises TrayvmlError with a sentence."""
    if path == "-":
        try:
            yield sys.stdout
            sys.stdout.flush()  # a full disk or a closed pipe is reported here, not at exit
        except BrokenPipeError:
            raise  # `| head`: the reader has what it wanted (the caller ends quietly)
        except OSError as error:
            _quiet_stdout()
            raise _cannot_write(translate("record", "standard output"), error) from None
        return
    target = Path(os.path.realpath(path))  # the file a link points to (the link stays as it is)
    try:
        status: os.stat_result | None = target.stat()
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise _cannot_write(path, error) from None
    if status is not None and not stat.S_ISREG(status.st_mode):
        yield from _through(path)
        return
    yield from _atomically(path, target, status)


def _cannot_write(path: str, error: OSError) -> TrayvmlError:
    return TrayvmlError(translate("record", "Cannot write {path}: {error}.").format(path=path, error=error.strerror))


def _through(path: str) -> Iterator[TextIO]:
    try:
        # No O_CREAT, no O_TRUNC: it exists, and is not ours to replace or empty.
        out = open(os.open(path, os.O_WRONLY), "w", encoding="utf-8", newline="")  # noqa: SIM115
    except OSError as error:
        raise _cannot_write(path, error) from None
    try:
        with out:
            yield out
    except OSError as error:
        raise _cannot_write(path, error) from None


def _atomically(path: str, target: Path, status: os.stat_result | None) -> Iterator[TextIO]:
    remove_stale_temporaries(target)
    try:
        # Named as core.files names its temporaries, so that a killed export's leftover is cleared.
        fd, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.trayvml-{os.getpid()}-", suffix=".tmp", dir=target.parent
        )
    except OSError as error:
        raise _cannot_write(path, error) from None
    try:
        # mkstemp makes 0600: give the file the mode it had, or the one `>` would give a new file.
        os.fchmod(fd, stat.S_IMODE(status.st_mode) if status is not None else 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except OSError as error:
        raise _cannot_write(path, error) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _quiet_stdout() -> None:
    """What is still buffered for standard output goes nowhere: Python's flush at exit would
    otherwise fail again and print its own message after ours."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _stats_text(reader: object, folder: Path) -> str:
    from trayvml.history.disk.read import StoreReader

    assert isinstance(reader, StoreReader)
    stats = reader.stats()
    gpus = sum(1 for d in reader.devices() if d.uuid != "host")

    def when(t: float | None) -> str:
        if t is None:
            return "-"
        utc = datetime.fromtimestamp(t, timezone.utc)
        return f"{utc.astimezone():%Y-%m-%d %H:%M:%S %Z} ({utc:%Y-%m-%d %H:%M:%S} UTC)"

    span = (stats.last_s or 0) - (stats.first_s or 0)
    per = "-" if math.isnan(stats.bytes_per_sample) else f"{stats.bytes_per_sample:.3f}"
    devices = (
        translate("record", "{count} GPUs and the host")
        if gpus != 1
        else translate("record", "{count} GPU and the host")
    )
    rows = (
        (translate("record", "store:"), str(folder)),
        (translate("record", "from:"), when(stats.first_s)),
        (translate("record", "to:"), when(stats.last_s)),
        (translate("record", "span:"), f"{span / 3600:.1f} h"),
        (translate("record", "devices:"), devices.format(count=gpus)),
        (translate("record", "samples:"), f"{stats.samples:,}"),
        (translate("record", "bytes on disk:"), f"{stats.file_bytes:,}"),
        (translate("record", "bytes per sample:"), per),
    )
    width = max(_columns(label) for label, _ in rows)
    return "\n".join(f"{label}{' ' * (width - _columns(label))} {value}" for label, value in rows)


def _columns(text: str) -> int:
    """How many terminal columns ``text`` takes: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
