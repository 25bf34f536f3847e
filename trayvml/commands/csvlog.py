"""CSV logs as ``nvidia-smi --query-gpu=... --format=csv`` writes them, one row per GPU per tick."""

from __future__ import annotations

import contextlib
import difflib
import errno
import math
import os
import reprlib
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from trayvml.core.clock import epoch_ms
from trayvml.core.errors import TrayvmlError
from trayvml.core.formatting import format_static, smi_number
from trayvml.core.i18n import translate
from trayvml.core.metrics import GPU_INDEX, GPU_METRICS, SmiField, Unit
from trayvml.core.safe_text import csv_text
from trayvml.core.sample import DeviceInfo, GpuSample, MetricState, Sample
from trayvml.core.static_fields import STATIC_FIELDS, StaticField

DEFAULT_FIELDS = (
    "timestamp",
    "index",
    "name",
    "utilization.gpu",
    "utilization.memory",
    "memory.used",
    "memory.total",
    "temperature.gpu",
    "power.draw",
    "fan.speed",
    "clocks.current.sm",
    "pstate",
)
_HEADER_LIMIT_CHARS = 65_536
_STATE_TEXT = {
    MetricState.NO_DATA: "[N/A]",
    MetricState.NOT_SUPPORTED: "[Not Supported]",
    MetricState.NO_PERMISSION: "[Insufficient Permissions]",
    MetricState.LOST: "[GPU is lost]",
    MetricState.ASLEEP: "[Asleep]",
    MetricState.RESTING: "[Resting]",
}


@dataclass(frozen=True)
class Column:
    smi: SmiField
    render: Callable[[Sample, GpuSample, DeviceInfo, bool], str]
    metric: str = ""  # the GPU metric it shows, "" for static facts: what a log asks the reader for
    # A metric's text from its value and state alone (render's own): `history` writes each
    # distinct value once instead of once a row.
    value_text: Callable[[float, MetricState, bool], str] | None = None

    @property
    def header(self) -> str:
        return f"{self.smi.name} [{self.smi.unit}]" if self.smi.unit else self.smi.name


def _metric_column(key: str, smi: SmiField, unit: Unit) -> Column:
    slot = GPU_INDEX[key]

    def render(sample: Sample, gpu: GpuSample, info: DeviceInfo, units: bool) -> str:
        return text(gpu.values[slot], gpu.states[slot], units)

    def text(value: float, state: MetricState, units: bool) -> str:
        if state is not MetricState.OK or math.isnan(value):
            return _STATE_TEXT.get(state, "[N/A]")
        if unit is Unit.PSTATE:
            return f"P{value:.0f}"
        if unit is Unit.BITMASK:
            return f"0x{int(value):016X}"
        if unit is Unit.FLAG:
            return "Yes" if value else "No"
        return smi_number(smi, value, units)

    return Column(smi, render, key, text)


def _static_column(field: StaticField) -> Column:
    def render(sample: Sample, gpu: GpuSample, info: DeviceInfo, units: bool) -> str:
        text = format_static(field, getattr(info, field.key), smi=True, units=units)
        return csv_text(text) if text else "[N/A]"  # names come from the driver: no row breaks, no formulas

    return Column(field.smi, render)


def _timestamp(sample: Sample, gpu: GpuSample, info: DeviceInfo, units: bool) -> str:
    return timestamp_text(epoch_ms(sample.timestamp_s))


def timestamp_text(t_ms: int) -> str:
    """The timestamp column's text for a time in milliseconds since the epoch (local time)."""
    return datetime.fromtimestamp(t_ms / 1000).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def _driver(sample: Sample, gpu: GpuSample, info: DeviceInfo, units: bool) -> str:
    return csv_text(sample.system.driver_version) if sample.system else "[N/A]"


def _hostname(sample: Sample, gpu: GpuSample, info: DeviceInfo, units: bool) -> str:
    return csv_text(sample.system.hostname) if sample.system else "[N/A]"


def _count(sample: Sample, gpu: GpuSample, info: DeviceInfo, units: bool) -> str:
    return str(len(sample.gpus))


COLUMNS: dict[str, Column] = {
    "timestamp": Column(SmiField("timestamp"), _timestamp),
    "driver_version": Column(SmiField("driver_version"), _driver),
    "count": Column(SmiField("count"), _count),
    # Which host (log --remote). nvidia-smi 580 has a field of that name, "the hostname associated
    # with the GPU", another fact: [N/A] on the H100 of tests/recordings/h100-580-*.jsonl.
    "hostname": Column(SmiField("hostname", ours=True), _hostname),
    **{f.smi.name: _static_column(f) for f in STATIC_FIELDS},
    **{m.smi.name: _metric_column(m.key, m.smi, m.unit) for m in GPU_METRICS if m.smi},
}


# nvidia-smi's other names for its fields, each as `nvidia-smi --help-query-gpu` lists it:
# '"name" or "gpu_name"', '"clocks.current.sm" or "clocks.sm"', '"clocks_event_reasons.active" or
# "clocks_throttle_reasons.active"' (the throttle spelling is what drivers before 530 knew). A
# script written for nvidia-smi runs unchanged; the header names the field as trayvml lists it.
ALIASES: dict[str, str] = {
    "gpu_name": "name",
    "gpu_serial": "serial",
    "gpu_uuid": "uuid",
    "gpu_bus_id": "pci.bus_id",
    "clocks.gr": "clocks.current.graphics",
    "clocks.sm": "clocks.current.sm",
    "clocks.mem": "clocks.current.memory",
    "clocks.video": "clocks.current.video",
    "clocks.max.gr": "clocks.max.graphics",
    "clocks.max.mem": "clocks.max.memory",
    "clocks_throttle_reasons.active": "clocks_event_reasons.active",
    "retired_pages.sbe": "retired_pages.single_bit_ecc.count",
    "retired_pages.dbe": "retired_pages.double_bit.count",
}
FORMAT_WORDS = ("csv", "noheader", "nounits")  # what nvidia-smi's --format takes, in any order


def field_list() -> str:
    """What ``trayvml log --list-fields`` prints: one field a line, its name first (``cut -d' ' -f1``
    gives the names). trayvml's own say so after the name, as a query with them fails in nvidia-smi
    or, for hostname, asks it for another fact."""
    width = max(len(name) for name, column in COLUMNS.items() if column.smi.ours)  # the notes in one column
    lines = []
    for name, column in COLUMNS.items():
        if not column.smi.ours:
            lines.append(name)
            continue
        if name == "hostname":
            note = translate("csvlog", "trayvml's own: this machine's name, not nvidia-smi's field of that name")
        else:
            note = translate("csvlog", "trayvml's own: nvidia-smi does not know it")
        lines.append(f"{name:<{width}}  {note}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Format:
    header: bool = True
    units: bool = True


def parse_format(text: str) -> Format:
    """nvidia-smi's ``--format=csv[,noheader][,nounits]``; raises TrayvmlError with a sentence."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    for word in words:
        if word not in FORMAT_WORDS:
            raise TrayvmlError(
                translate("csvlog", "--format does not know {word}: it takes csv, noheader and nounits.").format(
                    word=reprlib.repr(word)
                )
            )
    if "csv" not in words:  # as nvidia-smi: the words qualify csv, the only format a log writes
        raise TrayvmlError(translate("csvlog", "--format needs csv, as nvidia-smi's: csv,noheader,nounits."))
    return Format(header="noheader" not in words, units="nounits" not in words)


def demand_of(columns: list[Column]) -> frozenset[str]:
    """The GPU metrics these columns show: a log reads nothing else (process lists only if asked)."""
    return frozenset(c.metric for c in columns if c.metric)


def parse_fields(text: str | None) -> list[Column]:
    """Columns for a ``--query`` list; raises TrayvmlError naming an unknown field."""
    names = [n.strip() for n in text.split(",") if n.strip()] if text is not None else list(DEFAULT_FIELDS)
    columns = []
    for name in names:
        name = ALIASES.get(name, name)
        if name not in COLUMNS:
            near = difflib.get_close_matches(name, COLUMNS, n=3)
            hint = (
                translate("csvlog", " Did you mean {fields}?").format(fields=translate("csvlog", " or ").join(near))
                if near
                else translate("csvlog", " Run `trayvml log --list-fields` for the list.")
            )
            raise TrayvmlError(
                translate("csvlog", "Unknown field {field} in --query.{hint}").format(
                    field=reprlib.repr(name), hint=hint
                )
            )
        columns.append(COLUMNS[name])
    if not columns:
        raise TrayvmlError(translate("csvlog", "--query names no fields."))
    return columns


def header_line(columns: list[Column]) -> str:
    return ", ".join(c.header for c in columns)


def rows(sample: Sample, columns: list[Column], units: bool = True) -> list[str]:
    return [
        ", ".join(c.render(sample, gpu, info, units) for c in columns)
        for gpu, info in zip(sample.gpus, sample.devices, strict=True)
    ]


class CsvLog:
    """Appends rows to a CSV file; each tick's rows go out in one write, whole or not at all.

    Only a regular file is read (for its header): a pipe or a device (``/dev/stdout``) is only
    written, since reading one would wait for ever. Raises TrayvmlError with a sentence.
    """

    def __init__(self, path: str, columns: list[Column], units: bool = True, header: bool = True) -> None:
        """``header``: False writes rows only, as nvidia-smi's noheader (a file's header is then not checked)."""
        self.path = path
        self.columns = columns
        self.units = units
        try:
            if path == "-":  # standard output, as for `history` (a file named "-" is ./-)
                sys.stdout.flush()  # whatever Python holds for it goes first
                self._fd = os.dup(sys.stdout.fileno())
            else:
                self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as error:
            raise TrayvmlError(
                translate("csvlog", "Cannot write {path}: {error}.").format(path=self.shown_path, error=error.strerror)
            ) from None
        try:
            self._start(header_line(columns) if header else None)
        except BaseException:
            os.close(self._fd)
            raise

    @property
    def shown_path(self) -> str:
        """The file's name as a sentence says it: "standard output" for ``-``."""
        return translate("record", "standard output") if self.path == "-" else self.path

    def _start(self, header: str | None) -> None:
        status = os.fstat(self._fd)
        # Standard output redirected to a file is written only: its name is not ``path``.
        self._regular = stat.S_ISREG(status.st_mode) and self.path != "-"
        held = self._regular and status.st_size  # a file with a log in it already, to go on with
        if header is not None:
            existing = self._existing_header() if held else None
            if existing is not None and existing != header:
                raise TrayvmlError(
                    translate(
                        "csvlog",
                        "{path} already holds a log with other columns ({columns}); "
                        "choose another file or the same --query, so that nothing in it is mixed up.",
                    ).format(path=self.path, columns=reprlib.repr(existing))
                )
            if existing is None:
                self._write(header + "\n")
                return
        if not held:
            return
        self._check_units()
        if not self._ends_with_newline():
            self._write("\n")  # a row cut short by a crash stays as it was; new rows start afresh

    def _check_units(self) -> None:
        """Raises TrayvmlError where the file's rows have units and these would not, or the other
        way round: nvidia-smi's header names the units with nounits too, so the header check let
        "73.96 W" and "73.96" into one column."""
        written = self._rows_have_units()
        if written is not None and written != self.units:
            mixed = (
                translate("csvlog", "{path} already holds a log with units; choose another file or the same --format.")
                if written
                else translate(
                    "csvlog",
                    "{path} already holds a log without units (nounits); choose another file or the same --format.",
                )
            )
            raise TrayvmlError(mixed.format(path=self.path))

    def _rows_have_units(self) -> bool | None:
        """Whether the file's first rows have their numbers' units ("73.96 W"), by the first cell
        that tells (a number in a column with a unit); None where none does, or a line is no row of
        these columns. The first rows: a row a crash cut short ("73.9") is the file's last."""
        try:
            with open(self.path, "rb") as log:
                head = log.read(2 * _HEADER_LIMIT_CHARS)  # bounded, as the header's read
        except OSError as error:
            raise TrayvmlError(
                translate("csvlog", "Cannot read {path}: {error}.").format(path=self.path, error=error.strerror)
            ) from None
        header = header_line(self.columns)
        for line in head.decode("utf-8", errors="replace").split("\n")[:-1]:  # whole lines
            line = line.rstrip("\r")
            if line == header:
                continue  # (a log without its header appended to one with)
            cells = line.split(", ")
            if len(cells) != len(self.columns):
                return None
            for column, cell in zip(self.columns, cells, strict=True):
                if column.metric and column.smi.unit and not cell.startswith("["):  # ("[N/A]" either way)
                    return cell.endswith(f" {column.smi.unit}")
        return None

    def _existing_header(self) -> str:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as log:
                # Bounded: a file that is not a log may hold no newline in its first gigabytes.
                return log.readline(_HEADER_LIMIT_CHARS).rstrip("\r\n")
        except OSError as error:
            raise TrayvmlError(
                translate("csvlog", "Cannot read {path}: {error}.").format(path=self.path, error=error.strerror)
            ) from None

    def _ends_with_newline(self) -> bool:
        try:
            with open(self.path, "rb") as log:
                log.seek(-1, os.SEEK_END)
                return log.read(1) == b"\n"
        except OSError as error:  # a file this user may write but not read
            raise TrayvmlError(
                translate("csvlog", "Cannot read {path}: {error}.").format(path=self.path, error=error.strerror)
            ) from None

    def _write(self, text: str) -> None:
        data = text.encode()
        written = 0
        try:
            while written < len(data):  # os.write may write only part (a full disk, a signal)
                count = os.write(self._fd, data[written:])
                if count == 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                written += count
        except BrokenPipeError:
            raise  # `| head`: its reader has what it wanted (the command ends quietly)
        except OSError as error:
            if written and self._regular:
                # Take back the part that went out: the file keeps whole rows only.
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, os.fstat(self._fd).st_size - written)
            raise TrayvmlError(
                translate("csvlog", "Cannot write {path}: {error}; the rows already in it are whole.").format(
                    path=self.shown_path, error=error.strerror
                )
            ) from None

    def append(self, sample: Sample) -> int:
        lines = rows(sample, self.columns, self.units)
        if lines:
            self._write("\n".join(lines) + "\n")
        return len(lines)

    def close(self) -> None:
        os.close(self._fd)
