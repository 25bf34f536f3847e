"""`trayvml history`: the history on disk read back as log's CSV, or its statistics."""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import re
import sqlite3
import sys
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from trayvml.core.clock import epoch_ms
from trayvml.core.errors import TrayvmlError
from trayvml.core.files import output, quiet_stdout
from trayvml.core.i18n import translate

if TYPE_CHECKING:
    from trayvml.commands.csvlog import Column
    from trayvml.core.sample import DeviceInfo, MetricState
    from trayvml.history.disk.db import Database
    from trayvml.history.disk.processes import ProcessRow
    from trayvml.history.disk.read import StoreReader

_SINCE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(s|m|min|h|d|w)", re.ASCII)
_SECONDS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DEFAULT_SINCE_S = 3600.0
MEMO_VALUES = 200_000  # texts of distinct values kept a column (about 20 MB at most)


def _folder(args: argparse.Namespace, simulated: bool) -> Path:
    """The store's folder (``--store``, else the default); raises TrayvmlError where --store names
    a file: the store's own file (its folder meant), or another one."""
    from trayvml.history import default_folder
    from trayvml.history.disk.db import FILE_NAME

    if args.store is None:
        return default_folder(simulated)
    # Against the working directory now: the folder is named in messages and opened by URI.
    folder = Path(args.store).absolute()
    if os.path.isfile(folder):  # not raising where it cannot be known: opening the store says why
        if folder.name == FILE_NAME:
            meant = translate("record", "--store wants the folder that holds {file}: {folder}")
            raise TrayvmlError(meant.format(file=FILE_NAME, folder=folder.parent))
        raise TrayvmlError(translate("record", "--store wants a folder; {path} is a file.").format(path=folder))
    return folder


def parse_time(text: str, now: datetime) -> float:
    """Seconds since the epoch for an ISO date-time (local time unless it names its offset)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        wrong = translate("record", "{value} is not a date and time such as {example}.")
        raise TrayvmlError(wrong.format(value=repr(text), example=f"{now:%Y-%m-%d %H:%M}")) from None
    try:
        return moment.astimezone().timestamp() if moment.tzinfo is None else moment.timestamp()
    except (ValueError, OverflowError, OSError):  # year 1: the local zone's offset takes it out of range
        far = translate("record", "{value} is not a time trayvml can work with; give one after 1970.")
        raise TrayvmlError(far.format(value=repr(text))) from None


def parse_since(text: str) -> float:
    match = _SINCE.fullmatch(text.strip())
    if match is None:
        raise TrayvmlError(
            translate("record", "--since {value} is not a length of time such as 90m, 2h or 3d.").format(
                value=repr(text)
            )
        )
    return float(match.group(1)) * _SECONDS[match.group(2)]


def _check_since(text: str, seconds: float, now_s: float) -> None:
    if seconds > now_s:  # before the epoch: no history, and times SQLite's integers cannot hold
        far = translate("record", "--since {value} reaches back before 1970; the history holds nothing that old.")
        raise TrayvmlError(far.format(value=repr(text)))


def time_range(args: argparse.Namespace, now_s: float) -> tuple[float, float]:
    now = datetime.fromtimestamp(now_s).astimezone()
    if args.end is not None and args.start is None:
        raise TrayvmlError(translate("record", "--to needs --from."))
    if args.start is not None:
        start_s = parse_time(args.start, now)
        end_s = parse_time(args.end, now) if args.end is not None else now_s
        if args.end is None and start_s > now_s:  # else "--to is before --from", with no --to given
            ahead = translate("record", "--from {value} is in the future; the history holds nothing after now.")
            raise TrayvmlError(ahead.format(value=repr(args.start)))
    else:
        # Given empty (a shell variable left empty), refused as any other length it cannot read.
        since = args.since if args.since is not None else f"{DEFAULT_SINCE_S:g}s"
        seconds = parse_since(since)
        _check_since(since, seconds, now_s)
        start_s, end_s = now_s - seconds, now_s
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
    except BrokenPipeError:
        raise  # a reader gone, not the store: the CLI ends quietly
    except (sqlite3.Error, OSError) as error:  # the store's folder or file (writes say their own)
        why = error.strerror if isinstance(error, OSError) and error.strerror else error
        unreadable = translate("record", "Cannot read the history in {folder}: {error}.")
        raise TrayvmlError(unreadable.format(folder=folder, error=why)) from None
    finally:
        reader.close()


def _history(args: argparse.Namespace, now_s: float, reader: StoreReader, folder: Path) -> int:
    """The export (or --stats) from an open reader."""
    from trayvml.commands.csvlog import header_line, parse_fields

    if not reader.devices():
        none = translate("record", "No history in {folder} yet: the tray app or `trayvml record` writes it.")
        raise TrayvmlError(none.format(folder=folder))
    if args.stats:
        print(_stats_text(reader, folder))
        return 0
    if getattr(args, "processes", False):
        return _export_processes(args, now_s, reader, folder)
    columns = parse_fields(args.query)
    start_s, end_s = time_range(args, now_s)
    gpus = stored_gpus(reader, folder, args.gpu)
    units = not args.nounits
    minutes_until = _minutes_until(reader, gpus, start_s, end_s)
    extra = [c for c in columns if c.metric]  # the columns a minute row gives a min and a max of
    keys = tuple(dict.fromkeys(c.metric for c in extra))
    infos = [info for _, info in gpus]
    memo: dict[object, dict[int, str]] = {}  # each column's texts of values written so far
    count = 0
    try:
        with _output(args.csv) as out:
            for chunk in stored_rows(reader, gpus, start_s, end_s, keys):
                if count == 0:
                    # Written with the first row: a range with nothing in it leaves no header-only file.
                    header = header_line(columns)
                    if minutes_until is not None:
                        names = [
                            f"{c.smi.name}.{end}" + (f" [{c.smi.unit}]" if c.smi.unit else "")
                            for c in extra
                            for end in ("min", "max")
                        ]
                        header = ", ".join([header, "interval [s]", *names])
                    out.write(header + "\n")
                out.write(csv_text(chunk, columns, infos, units, minutes_until is not None, memo))
                count += len(chunk.times_ms)
            if count == 0:
                raise TrayvmlError(_nothing_between(reader, folder, start_s, end_s))
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        quiet_stdout()
        return 0
    if minutes_until is not None:
        note = translate(
            "record",
            "trayvml: before {time} the history keeps one row a minute: such a row has an interval of 60 s, "
            "the minute's mean in each column and its lowest and highest in the .min and .max columns.",
        )
        print(note.format(time=_when(minutes_until)), file=sys.stderr)
    _say_written(args.csv, count)
    return 0


PROCESS_HEADER = (
    "timestamp, gpu index, gpu uuid, pid, process name, user, job kind, job name, "
    "used memory [MiB], sm [%], interval [s]"
)


def _export_processes(args: argparse.Namespace, now_s: float, reader: StoreReader, folder: Path) -> int:
    """``--processes``: a row per stored sample (or minute) of each process, oldest first, streamed."""
    from trayvml.commands.csvlog import timestamp_text
    from trayvml.core.safe_text import csv_text

    if args.query is not None:
        raise TrayvmlError(translate("record", "--query names GPU fields; --processes has columns of its own."))
    from trayvml.history.disk.db import Database

    start_s, end_s = time_range(args, now_s)
    gpus = stored_gpus(reader, folder, args.gpu)
    db = Database(folder, read_only=True)  # beside the reader's: its own connection, read-only
    minutes = False
    count = 0
    try:
        with contextlib.closing(db.connection), _output(args.csv) as out:
            for t_s, gpu_index, row in _process_rows(db, gpus, start_s, end_s):
                if count == 0:
                    out.write(PROCESS_HEADER + "\n")
                p = row.process
                memory = f"{row.memory_bytes / 2**20:.0f}" if math.isfinite(row.memory_bytes) else "[N/A]"
                sm = f"{row.sm_percent:.0f}" if math.isfinite(row.sm_percent) else "[N/A]"
                fields = (
                    timestamp_text(epoch_ms(t_s)),  # as `log` stamps its rows
                    str(gpu_index),
                    p.uuid,
                    str(p.pid),
                    csv_text(p.name),
                    csv_text(p.user),
                    p.job_kind,
                    csv_text(p.job),
                    memory,
                    sm,
                    f"{row.interval_s:g}",
                )
                out.write(", ".join(fields) + "\n")
                minutes = minutes or row.interval_s > 0
                count += 1
            if count == 0:
                nothing = translate("record", "No GPU processes stored between {start} and {end} in {folder}.")
                raise TrayvmlError(nothing.format(start=_when(max(start_s, 0.0)), end=_when(end_s), folder=folder))
    except BrokenPipeError:
        quiet_stdout()
        return 0
    if minutes:
        note = translate(
            "record",
            "trayvml: rows with an interval of 60 s are a minute's means: "
            "older process history keeps one row a minute.",
        )
        print(note, file=sys.stderr)
    _say_written(args.csv, count)
    return 0


def _process_rows(
    db: Database, gpus: list[tuple[str, DeviceInfo]], start_s: float, end_s: float
) -> Iterator[tuple[float, int, ProcessRow]]:
    """Every chosen GPU's process rows merged by time: one UTC hour of each GPU held at a time."""
    import heapq

    from trayvml.history.disk import processes

    def stream(uuid: str, index: int) -> Iterator[tuple[float, int, int, ProcessRow]]:
        for row in processes.rows(db, uuid, start_s, end_s):
            yield row.t_s, index, row.process.pid, row

    streams = [stream(uuid, info.index) for uuid, info in gpus]
    for t_s, index, _, row in heapq.merge(*streams, key=lambda item: item[:3]):
        yield t_s, index, row


def _say_written(path: str, count: int) -> None:
    """How many rows went to the file (nothing when they went to standard output)."""
    if path != "-":
        written = (
            translate("record", "trayvml: {count} rows written to {path}")
            if count != 1
            else translate("record", "trayvml: {count} row written to {path}")
        )
        print(written.format(count=count, path=path), file=sys.stderr)


def _when(t_s: float) -> str:
    return f"{datetime.fromtimestamp(t_s).astimezone():%Y-%m-%d %H:%M:%S %Z}"


def _nothing_between(reader: StoreReader, folder: Path, start_s: float, end_s: float) -> str:
    span = reader.span_s()
    nothing = translate("record", "No history between {start} and {end} in {folder}")
    text = nothing.format(start=_when(max(start_s, 0.0)), end=_when(end_s), folder=folder)
    if span is not None:
        text += translate("record", " (it holds {first} to {last}, with gaps where nothing was recording)").format(
            first=_when(span[0]), last=_when(span[1])
        )
    return text + "."


def stored_gpus(reader: StoreReader, folder: Path, gpu_index: int | None) -> list[tuple[str, DeviceInfo]]:
    """The stored GPUs (UUID and facts), all or the one with ``gpu_index``; raises TrayvmlError with a
    sentence for a damaged entry or an index the history has no GPU with."""
    from trayvml.core.sample import DeviceInfo
    from trayvml.history.disk.write import HOST_UUID

    names = {f.name for f in fields(DeviceInfo)}
    gpus = []
    for device in reader.devices():
        if device.uuid == HOST_UUID:
            continue
        try:
            info = DeviceInfo(**{k: v for k, v in device.info.items() if k in names})  # type: ignore[arg-type]
            if not isinstance(info.index, int):
                raise TypeError(info.index)
        except (TypeError, AttributeError):
            damaged = translate(
                "record",
                "The history in {folder} has a damaged entry for GPU {uuid}; "
                "it is written anew when that GPU is next recorded.",
            )
            raise TrayvmlError(damaged.format(folder=folder, uuid=repr(device.uuid))) from None
        gpus.append((device.uuid, info))
    chosen = [g for g in gpus if gpu_index is None or g[1].index == gpu_index]
    if not chosen:
        none = translate("record", "No GPU with index {index} in the history in {folder}; it holds GPUs {indices}.")
        indices = ", ".join(str(i) for i in sorted({g[1].index for g in gpus})) or "-"
        raise TrayvmlError(none.format(index=gpu_index, folder=folder, indices=indices))
    return chosen


def _minutes_until(
    reader: StoreReader, gpus: list[tuple[str, DeviceInfo]], start_s: float, end_s: float
) -> float | None:
    """Where the range reaches before the every-sample tier into per-minute buckets: when they end
    (the latest such time over the GPUs), else None."""
    from trayvml.history.disk.db import DAY_MS
    from trayvml.history.disk.write import GPU_LAYOUT

    span = reader.span_s()
    if span is None:
        return None
    start_s = max(start_s, math.floor(span[0] / 60) * 60)  # no day before the store's first is read
    until = None
    for uuid, _ in gpus:
        fine_s = reader.fine_start_s(uuid)
        # Whole minutes before the every-sample rows, as stored_rows writes them: a coarse block
        # overlapping the range may hold only the minute those rows begin in.
        stop = min(end_s, math.floor(fine_s / 60) * 60) if fine_s is not None else end_s
        if stop <= start_s or not reader.has_minutes(uuid, start_s, stop):
            continue
        # A UTC day at a time from the last (as blocks hold them), until one has a minute recorded:
        # the whole range at once was a week of every column's buckets in memory for each GPU.
        # From the store's last row at the latest: a range to the year 9999 is not walked back.
        day_s = DAY_MS / 1000
        last_s = min(stop, span[1])
        while last_s > start_s:
            first_s = max(start_s, (math.ceil(last_s / day_s) - 1) * day_s)  # the midnight before
            buckets = reader.coarse(uuid, first_s, last_s, 60.0, GPU_LAYOUT.keys, fresh=False)
            if (buckets.recorded & (buckets.times_s < stop)).any():
                until = stop if until is None else max(until, stop)
                break
            last_s = first_s
    return until


@dataclass(frozen=True)
class StoredRows:
    """Rows of the history, oldest first and at one time by GPU index: a GPU's sample (its values in
    ``mean``, ``low`` and ``high`` alike) or a minute's mean, min and max of it."""

    times_ms: np.ndarray  # (n,) int64: a sample's stored millisecond, a minute's start
    gpu: np.ndarray  # (n,) which of the GPUs exported (a position in that list)
    mean: np.ndarray  # (n, keys) float
    low: np.ndarray
    high: np.ndarray
    states: np.ndarray  # (n, keys) MetricState values (a minute: OK where it holds values)
    minute: np.ndarray  # (n,) bool: a minute's row (interval 60 s), else a sample (0 s)


def stored_rows(
    reader: StoreReader,
    gpus: list[tuple[str, DeviceInfo]],
    start_s: float,
    end_s: float,
    keys: tuple[str, ...] | None = None,
) -> Iterator[StoredRows]:
    """The GPUs' history of ``keys`` (without: every metric's) in the range, one UTC hour at a time (a
    packed fine block is one hour: each is decoded once, and at most an hour of samples is held):
    every sample where the fine tier has them, and before it each minute's bucket from the coarse
    tier."""
    from trayvml.core.sample import MetricState
    from trayvml.history.disk.db import DAY_MS, HOUR_MS
    from trayvml.history.disk.read import CoarseData
    from trayvml.history.disk.write import GPU_LAYOUT

    keys = GPU_LAYOUT.keys if keys is None else keys
    # A minute counts as recorded when any metric has a value in it, whichever are exported.
    chosen = np.array([GPU_LAYOUT.keys.index(k) for k in keys], dtype=np.intp)
    fine_from = {uuid: reader.fine_start_s(uuid) for uuid, _ in gpus}
    indices = np.array([info.index for _, info in gpus], dtype=np.int64)
    span = reader.span_s()
    if span is None:
        return
    # The hours stepped through are those the store spans, not all of a range asked for (one
    # reaching to the year 9999 took hours over nothing); from the minute its first row is in.
    t_s = max(start_s, 0.0, math.floor(span[0] / 60) * 60)
    end_s = min(end_s, span[1])
    days: dict[str, tuple[int, CoarseData]] = {}

    def day_of_minutes(uuid: str, at_s: float) -> CoarseData:
        """The GPU's recorded minutes of the UTC day of ``at_s`` (to the next midnight's, which a
        range ending there reads) in the columns exported, read once for its 24 hours: an hour's
        read folded all of the day's block again."""
        day = math.floor(at_s / 60) * 60_000 // DAY_MS  # the day of the minute the hour's rows begin in
        kept = days.get(uuid)
        if kept is None or kept[0] != day:
            read = reader.coarse(uuid, day * DAY_MS / 1000, (day + 1) * DAY_MS / 1000, 60.0, GPU_LAYOUT.keys, False)
            recorded = read.recorded  # of every column (the rest is let go: a day of all is 2.6 MB a GPU)
            low, mean, high = (m[recorded][:, chosen] for m in (read.low, read.mean, read.high))
            minutes = CoarseData(read.times_s[recorded], read.count[recorded][:, chosen], low, mean, high, 60.0)
            kept = days[uuid] = (day, minutes)
        return kept[1]

    while t_s <= end_s:
        stop_s = min(end_s, (math.floor(t_s * 1000 / HOUR_MS) + 1) * HOUR_MS / 1000)
        last = stop_s >= end_s
        parts: list[StoredRows] = []
        for position, (uuid, _) in enumerate(gpus):
            fine_s = fine_from[uuid]
            if fine_s is None or t_s < fine_s:  # before the every-sample tier: minutes
                # Whole minutes before the every-sample rows: the minute the fine tier begins in
                # (recording began at 01:59:46) holds those samples too, and they are rows of their own.
                until_s = min(stop_s, math.floor(fine_s / 60) * 60) if fine_s is not None else stop_s
                minutes = day_of_minutes(uuid, t_s)
                starts_ms = np.rint(minutes.times_s * 1000).astype(np.int64)
                # The minutes a read of t_s to until_s gives (floor to floor, both ends in).
                take = (starts_ms >= math.floor(t_s / 60) * 60_000) & (starts_ms <= until_s * 1000)
                if not (last and fine_s is None):
                    take &= starts_ms < until_s * 1000
                count = minutes.count[take]
                states = np.where(count > 0, MetricState.OK, MetricState.NO_DATA)
                mean, low, high = (m[take] for m in (minutes.mean, minutes.low, minutes.high))
                parts.append(_rows(starts_ms[take], position, mean, low, high, states, True))
            if fine_s is not None and stop_s >= fine_s:
                data = reader.fine(uuid, max(t_s, fine_s), stop_s, keys)
                times_ms = np.rint(data.times_s * 1000).astype(np.int64)
                take = np.ones(len(times_ms), dtype=bool) if last else times_ms < stop_s * 1000  # else the next hour's
                values = data.values[take]
                parts.append(_rows(times_ms[take], position, values, values, values, data.states[take], False))
        rows = _in_order([p for p in parts if len(p.times_ms)], indices)
        if rows is not None:
            yield rows
        if last:
            break
        t_s = stop_s


def _rows(
    times_ms: np.ndarray,
    gpu: int,
    mean: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    states: np.ndarray,
    minute: bool,
) -> StoredRows:
    n = len(times_ms)
    return StoredRows(
        times_ms, np.full(n, gpu), mean, low, high, states.astype(np.int64), np.full(n, minute, dtype=bool)
    )


def _in_order(parts: list[StoredRows], indices: np.ndarray) -> StoredRows | None:
    """The parts as one, by time (a minute before a sample of its millisecond), then GPU index."""
    if not parts:
        return None
    rows = StoredRows(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(StoredRows)))
    order = np.lexsort((indices[rows.gpu], rows.times_ms * 2 + ~rows.minute))  # stable: ties keep their order
    return StoredRows(*(getattr(rows, f.name)[order] for f in fields(StoredRows)))


def csv_text(
    rows: StoredRows,
    columns: list[Column],
    gpus: list[DeviceInfo],
    units: bool,
    minutes: bool,
    memo: dict[object, dict[int, str]] | None = None,
) -> str:
    """``rows`` as log's CSV lines (``minutes``: with the interval, and the min and max of each metric
    column), each distinct value formatted once by the column's own code, not once a row."""
    from trayvml.commands.csvlog import COLUMNS, timestamp_text
    from trayvml.core.sample import GpuSample, Sample

    slot = {k: i for i, k in enumerate(dict.fromkeys(c.metric for c in columns if c.metric))}
    memo = {} if memo is None else memo

    def memos(column: Column) -> dict[int, str]:
        return memo.setdefault(column.value_text, {})

    # A row's time: how many rows share it is the count column (the GPUs of that sample).
    moment = rows.times_ms * 2 + ~rows.minute
    _, at, same = np.unique(moment, return_inverse=True, return_counts=True)
    per_gpu: dict[str, np.ndarray] = {}
    cells: list[np.ndarray] = []
    for column in columns:
        if column.value_text is not None:
            k = slot[column.metric]
            cells.append(_texts(column.value_text, rows.mean[:, k], rows.states[:, k], units, memos(column)))
        elif column is COLUMNS["timestamp"]:
            cells.append(_each_once(rows.times_ms, timestamp_text))
        elif column is COLUMNS["count"]:
            cells.append(_each_once(same[at], str))
        else:
            # The rest tell the GPU's facts (or the host's, which the history does not keep): one a GPU.
            texts = per_gpu.get(column.smi.name)
            if texts is None:
                texts = np.empty(len(gpus), dtype=object)
                for position, info in enumerate(gpus):
                    gpu = GpuSample(info.index, (), ())
                    texts[position] = column.render(Sample(0.0, (gpu,), (info,), None, None), gpu, info, units)
                per_gpu[column.smi.name] = texts
            cells.append(texts[rows.gpu])
    if minutes:
        interval = np.where(rows.minute, "60", "0").astype(object) + (" s" if units else "")
        cells.append(interval)
        minute = rows.minute
        for position, column in enumerate(columns):
            if column.value_text is None:
                continue
            k = slot[column.metric]
            for ends in (rows.low, rows.high):
                texts = cells[position].copy()  # a sample's min and max are its value
                texts[minute] = _texts(column.value_text, ends[minute, k], rows.states[minute, k], units, memos(column))
                cells.append(texts)
    # Row by row from the columns' lists: a third less time than a table of cells and separators
    # joined whole, and no table of pointers (28,800 rows × 50 cells an hour of 8 GPUs).
    return "".join([", ".join(row) + "\n" for row in zip(*[texts.tolist() for texts in cells], strict=True)])


def _each_once(values: np.ndarray, text: Callable[[int], str]) -> np.ndarray:
    distinct, at = np.unique(values, return_inverse=True)
    return np.array([text(v) for v in distinct.tolist()], dtype=object)[at]


def _texts(
    text: Callable[[float, MetricState, bool], str],
    values: np.ndarray,
    states: np.ndarray,
    units: bool,
    memo: dict[int, str],
) -> np.ndarray:
    """A metric column's texts: each distinct value (to the bit) or state written once, and kept in
    ``memo`` for the next hours (power to the milliwatt differs from row to row, yet a week of it
    holds a tenth as many values as rows)."""
    from trayvml.core.sample import MetricState

    values = np.ascontiguousarray(values, dtype=np.float64)
    bad = (states != MetricState.OK) | np.isnan(values)
    whole = not bad.any()  # the usual column: every row a value, written out in one gather
    good = ~bad
    bits, at = np.unique((values if whole else values[good]).view(np.int64), return_inverse=True)
    if len(memo) > MEMO_VALUES:
        memo.clear()
    texts = []
    for key, value in zip(bits.tolist(), bits.view(np.float64).tolist(), strict=True):
        known = memo.get(key)
        if known is None:
            known = memo[key] = text(value, MetricState.OK, units)
        texts.append(known)
    if whole:
        return np.array(texts, dtype=object)[at]
    out = np.empty(len(values), dtype=object)
    for state in np.unique(states[bad]).tolist():
        out[bad & (states == state)] = text(math.nan, MetricState(state), units)
    out[good] = np.array(texts, dtype=object)[at]
    return out


@contextlib.contextmanager
def _output(path: str) -> Iterator[TextIO]:
    """Where the CSV goes: standard output for ``-``, else as core.files.output puts it (a
    descriptor, pipe or device written through; a regular file whole or not at all). Raises
    TrayvmlError with a sentence; BrokenPipeError as it is (`| head`: the caller ends quietly)."""
    if path == "-":
        try:
            yield sys.stdout
            sys.stdout.flush()  # a full disk or a closed pipe is reported here, not at exit
        except BrokenPipeError:
            raise  # `| head`: the reader has what it wanted (the caller ends quietly)
        except OSError as error:
            quiet_stdout()
            raise _cannot_write(translate("record", "standard output"), error) from None
        return
    try:
        with output(path) as raw:
            out = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            try:
                yield out
            finally:
                out.detach()  # flushed; the file is output's to close (and to rename into place)
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _cannot_write(path, error) from None


def _cannot_write(path: str, error: OSError) -> TrayvmlError:
    return TrayvmlError(translate("record", "Cannot write {path}: {error}.").format(path=path, error=error.strerror))


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
