"""A stand-in for the NVML library that answers from a recording (``--simulate replay=FILE``).

Each call is matched by its function and its key (see trayvml.nvml.recording.call_key), and a
field-value request also by the fields it asks, to the calls recorded so, answered in the order
they were recorded (GPM's metrics each from the recorded slot of its id), and the last one held
once they run out: a replay that runs longer than its recording shows the
driver's last answers, and a counter (energy, PCIe bytes) stays where it ended rather than going
back to its start, which trayvml would take for a driver reload. A call the recording never made
answers NVML_ERROR_UNKNOWN: shown as "no data", never as a value and never as "not supported".
A function the recording never called is missing (FunctionNotFound), as on the recorded driver
it may well have been.
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path
from typing import Any

import pynvml as N

from trayvml.core.errors import SimulationSpecError
from trayvml.core.files import read_bounded
from trayvml.nvml.fields import field_array
from trayvml.nvml.gpm import ID_AT, METRIC_SIZE, RETURN_AT, UINT, VALUE_AT, metric_at
from trayvml.nvml.recording import RECORDING_FORMAT, call_key, decode_result, restore
from trayvml.nvml.specs import FIELDS

# Fields the reader reads with a call where they are not supported: a recording made before such
# a field joined the batch holds that call's answers.
_FIELDS_WITH_CALLS = frozenset(f.field_id for f in FIELDS if f.fallback is not None)

MAX_RECORDING_BYTES = 256 * 2**20  # a minute of 8 GPUs with nvidia-smi's XML is tens of MB


def read_recording(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The recording's header and its entries (calls and ticks); raises SimulationSpecError."""
    try:
        data = read_bounded(path, MAX_RECORDING_BYTES)  # not a device, nor a pipe waited on for ever
    except OSError as error:
        raise SimulationSpecError(
            f"--simulate: the recording {path} cannot be read: {error.strerror or error}."
        ) from None
    if len(data) > MAX_RECORDING_BYTES:
        raise SimulationSpecError(f"--simulate: {path} is larger than any recording trayvml makes.")
    try:
        lines = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    except (UnicodeDecodeError, ValueError):
        lines = []
    if not lines or not isinstance(lines[0], dict) or lines[0].get("format") != RECORDING_FORMAT:
        raise SimulationSpecError(f"--simulate: {path} is not a trayvml NVML recording (trayvml doctor --record).")
    if not all(isinstance(entry, dict) for entry in lines):
        raise SimulationSpecError(f"--simulate: {path} holds lines that are not recorded calls.")
    return lines[0], lines[1:]


class _ReplayedFunction:
    def __init__(self, library: ReplayedNvml, name: str) -> None:
        self.library = library
        self.name = name
        self.restype: Any = None
        self.argtypes: Any = None

    def __call__(self, *args: Any) -> Any:
        return self.library.answer(self.name, args)


class ReplayedNvml:
    def __init__(self, path: Path) -> None:
        self.header, entries = read_recording(path)
        self.ticks = [e for e in entries if "tick" in e]
        self.interval_s = float(self.header.get("interval_s", 1.0))
        # How long it ran: a replay past it answers the last answers again (see the module's words).
        self.duration_s = float(self.ticks[-1]["t"] - self.ticks[0]["t"]) if self.ticks else 0.0
        self._answers: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for entry in entries:
            if "f" in entry:
                self._answers.setdefault(_recorded_key(entry), []).append(entry)
        # nvmlErrorString: pynvml asks it for an error's words, which a recording need not hold.
        self._names = {name for name, _ in self._answers} | {"nvmlErrorString"}
        self._next: dict[tuple[str, str], int] = {}
        self._functions: dict[str, _ReplayedFunction] = {}
        self._served: dict[tuple[str, str], set[tuple[int, int]]] = {}  # see _entry_for_fields
        self.unanswered: set[str] = set()  # functions called with a key the recording lacks, for tests

    def __getattr__(self, name: str) -> _ReplayedFunction:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(name)
        function = self._functions.get(name)
        if function is None:
            function = self._functions[name] = _ReplayedFunction(self, name)
        return function

    def answer(self, name: str, args: tuple[Any, ...]) -> Any:
        called = call_key(args)
        key = (name, json.dumps(called))
        answers = self._answers.get(key)
        if "a" in called:
            sized = (name, json.dumps([None if k == "a" else k for k in called]))
            queries = self._answers.get(sized)
            if queries:
                # Recorded as a size query, then a fill where the query said the array was too
                # small (pynvml's way); read now in one call with an array (binding.ProcessLister,
                # ProcessUtilization). The query says what the call answers (an empty list:
                # success, count 0; no samples: NOT_FOUND), else the fill made after it does.
                query = self._take(sized, queries)
                if decode_result(query["r"]) != N.NVML_ERROR_INSUFFICIENT_SIZE or not answers:
                    restore(args, query["o"])
                    return decode_result(query["r"])
        if _is_field_batch(name, called):  # matched by the fields asked too (see _recorded_key)
            key = _batch_key(called, _asked_fields(called, args))
            answers = self._answers.get(key)
            if not answers:
                return self._answer_fields(called, args)
        if name == "nvmlGpmMetricsGet" and answers:
            return self._answer_gpm(self._take(key, answers), args)
        if not answers:
            if name == "nvmlErrorString":
                return f"NVML error {call_key(args)[0]}".encode()
            self.unanswered.add(name)
            return N.NVML_ERROR_UNKNOWN
        entry = self._take(key, answers)
        restore(args, entry["o"])
        return decode_result(entry["r"])

    def _take(self, key: tuple[str, str], answers: list[dict[str, Any]]) -> dict[str, Any]:
        position = self._next.get(key, 0)
        self._next[key] = position + 1
        return answers[min(position, len(answers) - 1)]

    def _answer_gpm(self, entry: dict[str, Any], args: tuple[Any, ...]) -> Any:
        """GPM's metrics by their ids: each metric asked for from the recorded slot of its id, not
        the slot at its place (a recording answers the ids asked live, whatever is asked now); one
        the recording never asked for is "no data" (UNKNOWN), never another metric's value. Only
        the metrics asked for are written: the request's own header (its count, its samples) stays,
        as a driver leaves it, and so do the recorded metrics' descriptions (pointers into the
        recording process)."""
        memory = memoryview(args[0]._obj).cast("B")
        asked = [UINT.unpack_from(memory, metric_at(k) + ID_AT)[0] for k in range(int(args[0]._obj.numMetrics))]
        recorded = N.c_nvmlGpmMetricsGet_t()
        restore((ctypes.byref(recorded),), entry["o"])
        answers = memoryview(recorded).cast("B")
        slots = {UINT.unpack_from(answers, metric_at(k) + ID_AT)[0]: k for k in range(int(recorded.numMetrics))}
        for k, metric_id in enumerate(asked):
            at, found = metric_at(k), slots.get(metric_id)
            memory[at : at + METRIC_SIZE] = bytes(METRIC_SIZE)
            if found is None:
                UINT.pack_into(memory, at + ID_AT, metric_id)
                UINT.pack_into(memory, at + RETURN_AT, N.NVML_ERROR_UNKNOWN)
            else:  # its id, return code and value
                memory[at : at + VALUE_AT + 8] = answers[metric_at(found) : metric_at(found) + VALUE_AT + 8]
        return decode_result(entry["r"])

    def _answer_fields(self, called: list[Any], args: tuple[Any, ...]) -> int:
        """Field values asked for in a list the recording never asked for (the reader's batches
        have been split and joined since: the energy counter left the tick's batch): each field
        from a recorded batch of this GPU that holds it, those holding the most of them first, each
        batch advanced as its own call would. A field the recording never asked for answers
        NOT_SUPPORTED in its slot where the reader has an older call for it (which the recording
        holds: it was read that way), else UNKNOWN (no data, never a value)."""
        wanted = _items(args[2]._obj, int(called[1]))
        asked = _field_pairs(wanted)
        batches = []
        for key, answers in self._answers.items():
            recorded = json.loads(key[1])
            shared = set(asked) & set(_batch_fields(key)) if _is_field_batch(key[0], recorded) else set()
            if shared and recorded[0] == called[0]:
                batches.append((len(shared), key, answers))
        if not batches and not all(pair[0] in _FIELDS_WITH_CALLS for pair in asked):
            self.unanswered.add("nvmlDeviceGetFieldValues")
            return N.NVML_ERROR_UNKNOWN
        missing = set(asked)
        for _, key, answers in sorted(batches, key=lambda batch: -batch[0]):  # stable: recorded order in ties
            fields = _batch_fields(key)
            taken = missing & set(fields)
            if not taken:
                continue
            entry = self._entry_for_fields(key, answers, taken)
            array = field_array(fields)
            restore((None, None, ctypes.byref(array)), entry["o"])
            code = decode_result(entry["r"])
            if code != N.NVML_SUCCESS:
                return int(code)
            answered = _items(array, len(fields))
            positions = {pair: k for k, pair in enumerate(fields)}
            for k, pair in enumerate(asked):
                if pair in taken:
                    ctypes.pointer(wanted[k])[0] = answered[positions[pair]]  # the whole struct, copied
            missing -= taken
        for k, pair in enumerate(asked):
            if pair in missing:
                wanted[k].nvmlReturn = (
                    N.NVML_ERROR_NOT_SUPPORTED if pair[0] in _FIELDS_WITH_CALLS else N.NVML_ERROR_UNKNOWN
                )
        return N.NVML_SUCCESS

    def _entry_for_fields(
        self, key: tuple[str, str], answers: list[dict[str, Any]], asked: set[tuple[int, int]]
    ) -> dict[str, Any]:
        """The recorded batch's answer for these fields: the one that answered others of its fields
        already (the reader now splits that batch, e.g. the energy counter every 5 s apart from the
        rest), else the next one (a field asked again is the next tick)."""
        served = self._served.get(key)
        if served is None or served & asked or key not in self._next:
            self._served[key] = set(asked)
            return self._take(key, answers)
        served |= asked
        return answers[min(self._next[key] - 1, len(answers) - 1)]


def _is_field_batch(name: str, called: list[Any]) -> bool:
    """A field-value call with its array of fields: its call key (handle, count, "r"), or the key
    it is kept under, which adds the fields (:func:`_batch_key`)."""
    return name == "nvmlDeviceGetFieldValues" and called[2:3] == ["r"]


def _batch_key(called: list[Any], fields: list[tuple[int, int]]) -> tuple[str, str]:
    return ("nvmlDeviceGetFieldValues", json.dumps([*called[:3], fields]))


def _batch_fields(key: tuple[str, str]) -> list[tuple[int, int]]:
    """The (field id, scope) pairs of a field batch's key (:func:`_batch_key`)."""
    return [(int(field), int(scope)) for field, scope in json.loads(key[1])[3]]


def _recorded_key(entry: dict[str, Any]) -> tuple[str, str]:
    """What a recorded call is matched by: its function and key, and for a field batch the fields it
    asked for, read from its answer (each struct names its field). Calls of one size may ask for
    different fields: on a real H200 a one-field batch asked the NVLink link count at start, then
    the energy counter alone every 5 s (tests/recordings/h200-580-energy.jsonl)."""
    if not _is_field_batch(entry["f"], entry["k"]):
        return entry["f"], json.dumps(entry["k"])
    array = field_array([(0, 0)] * int(entry["k"][1]))
    restore((None, None, ctypes.byref(array)), entry["o"])
    return _batch_key(entry["k"], _field_pairs(list(array)))


def _items(array: Any, count: int) -> list[Any]:
    """The first ``count`` structs of a ctypes array of field values, each a view of its memory."""
    return [array[k] for k in range(count)]


def _asked_fields(called: list[Any], args: tuple[Any, ...]) -> list[tuple[int, int]]:
    """The (field id, scope) pairs a field-value call asks for."""
    return _field_pairs(_items(args[2]._obj, int(called[1])))


def _field_pairs(items: list[Any]) -> list[tuple[int, int]]:
    """The (field id, scope) pairs of field-value structs."""
    return [(int(item.fieldId), int(item.scopeId)) for item in items]
