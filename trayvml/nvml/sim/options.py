"""The ``--simulate`` specification: ``SCENARIO[:key=value,...]``.

An empty spec (``--simulate`` alone) is the default: training, half an hour into the job.
Times are simulated seconds from 0 to 86400; each bad value is refused with a sentence.

Keys:
  gpus=h100*2+rtx4090+laptop  profiles and counts (at most 16 GPUs; also h100-mig, an H100 in
                              MIG mode, and gb10, a DGX Spark's GPU with unified memory)
  seed=7                      varies the jitter and process schedules (0 to 2**32-1)
  at=300                      freeze simulated time at 300 s (reproducible snapshots)
  lost=1@300                  GPU 1 falls off the bus at 300 s ("+" joins several;
                              an empty "lost=" loses none, also in the faults scenario)
  nvml=missing@30             NVML fails to start (missing, not-loaded, mismatch,
                              no-permission) until 30 s, or for good without "@"
  procperm=yes                other users' processes cannot be inspected (or no)
  latency=realistic           emulate NVML's per-call latency (20 ms PCIe reads...)
  speed=60                    simulated seconds per real second, up to 3600 (demos, tests)
  start=350                   begin the scenario this many simulated seconds in
  past=0                      seconds of made-up past in the history at start (default: as much
                              as the history holds; 0: none, as with real GPUs)
  sleep=1@30/60               laptop GPU 1 is runtime-suspended from 30 s, for 60 s (for good
                              without "/"; "+" joins several): its fake sysfs says "suspended"
  replay=FILE                 alone, not after a scenario: answer every NVML call from a
                              recording made by `trayvml doctor --record FILE`
  mig=0@30:3g.40gb+2g.20gb    from 30 s GPU 0 (an h100 or h100-mig) has these MIG instances: ones
                              of a profile it had keep their GPU instance id (and UUID), the
                              rest are destroyed or created; "mig=0@30:" destroys all. Repeat
                              the key for several changes. MIG mode is on from the start.
  hang=nvmlDeviceGetUtilizationRates@30/60
                              that NVML call does not return from 30 s on, for 60 s
                              (for good without "/"), as a call into a wedged GPU
  driver=550                  the driver branch (400 to 999, default 610): field values newer
                              than it answer INVALID_ARGUMENT, as an older driver does
  hostpid=0:4242              GPU 0 also lists this machine's process 4242 (2 GiB), looked up on
                              the host as a real GPU process is ("+" joins several): how the
                              tests put a real Jupyter kernel on a simulated GPU
"""

from __future__ import annotations

import math
import os
import reprlib
from dataclasses import dataclass, field, replace

from trayvml.core.errors import SimulationSpecError
from trayvml.core.i18n import translate
from trayvml.core.sample import SIMULATED_GPUS
from trayvml.nvml.sim.profiles import MIG_PROFILES, MIG_SLICES, PROFILES

SIMULATE_ENV = "TRAYVML_SIMULATE"
# The scenarios in scenarios.py (kept here so that parsing a spec does not import numpy;
# tests/test_simulated_library.py checks that the two lists agree).
SCENARIO_NAMES = ("idle", "training", "thermal", "processes", "faults", "stalled")
MAX_GPUS = 16
# Simulated time is computed second by second from 0 (counters are running sums), so a later
# time costs CPU: a day takes about half a second, and every scenario repeats within 2 hours.
MAX_SIM_S = 86_400.0
MAX_SPEED = 3_600.0  # an hour per real second
MAX_SEED = 2**32 - 1
# "--simulate" alone: the training job half an hour in, so a first look shows load and processes.
DEFAULT_SCENARIO = "training"
DEFAULT_START_S = 1_800.0
DEFAULT_GPUS = ("h100", "h100", "rtx4090", "laptop")
REPLAY = "replay="
DEFAULT_DRIVER = 610
NVML_FAULTS = ("missing", "not-loaded", "mismatch", "no-permission")


@dataclass(frozen=True)
class SimSpec:
    scenario: str = "training"
    gpus: tuple[str, ...] = DEFAULT_GPUS
    seed: int = 0
    at_s: float | None = None
    lost_at_s: dict[int, float] = field(default_factory=dict)
    nvml_fault: str = ""
    nvml_fault_until_s: float | None = None  # None: for good
    other_users_hidden: bool = False
    realistic_latency: bool = False
    speed: float = 1.0
    start_s: float = 0.0
    past_s: float | None = None  # real seconds of made-up past in the history at start; None: all it holds
    hangs: tuple[tuple[str, tuple[float, float]], ...] = ()  # (NVML function, (from, until) in seconds)
    sleeps: tuple[tuple[int, tuple[float, float]], ...] = ()  # (GPU, (from, until) in seconds): runtime-suspended
    replay: str = ""  # a recording's path (trayvml doctor --record): answered from it, not simulated
    driver: int = DEFAULT_DRIVER  # the driver branch: field ids newer than it answer INVALID_ARGUMENT
    # (GPU, from, MIG profiles): the GPU's MIG instances from that simulated second on
    mig_changes: tuple[tuple[int, float, tuple[str, ...]], ...] = ()
    host_pids: tuple[tuple[int, int], ...] = ()  # (GPU, a PID of this machine) listed as on that GPU

    @property
    def label(self) -> str:
        if self.replay:
            return f"replayed NVML recording ({os.path.basename(self.replay)})"
        return SIMULATED_GPUS.format(scenario=self.scenario)


def _number(key: str, text: str, high: float, what: str) -> float:
    """A number from 0 to ``high``; NaN, infinities and non-ASCII digits are refused."""
    try:
        value = float(text) if text.isascii() else math.nan
    except ValueError:
        value = math.nan
    if not 0 <= value <= high:  # NaN fails this too
        raise SimulationSpecError(
            translate("simulate", "--simulate: {key} wants {what} from 0 to {high}, not {text}.").format(
                key=key, what=what, high=f"{high:g}", text=reprlib.repr(text)
            )
        )
    return value


def _seconds(key: str, text: str) -> float:
    return _number(key, text, MAX_SIM_S, translate("simulate", "a number of seconds"))


def _whole(what: str, text: str, low: int, high: int) -> int:
    """A whole number written in ASCII digits, from ``low`` to ``high``."""
    digits = text.isascii() and text.isdigit() and len(text) <= 20  # int() raises past 4,300 digits
    if not digits or not low <= int(text) <= high:
        raise SimulationSpecError(
            translate("simulate", "--simulate: {what} wants a whole number from {low} to {high}, not {text}.").format(
                what=what, low=low, high=high, text=reprlib.repr(text)
            )
        )
    return int(text)


def _gpus(text: str) -> tuple[str, ...]:
    names: list[str] = []
    for part in text.split("+"):
        name, star, count_text = part.partition("*")
        if name not in PROFILES:
            known = ", ".join(PROFILES)
            raise SimulationSpecError(
                translate("simulate", "--simulate: unknown GPU profile {name}; choose from {known}.").format(
                    name=reprlib.repr(name), known=known
                )
            )
        # Checked before the list grows: h100*999999999999 must not build that list first.
        names.extend(
            [name]
            * (
                _whole(translate("simulate", "the count after {name}*").format(name=name), count_text, 1, MAX_GPUS)
                if star
                else 1
            )
        )
        if len(names) > MAX_GPUS:
            raise SimulationSpecError(
                translate("simulate", "--simulate: at most {maximum} GPUs can be simulated, not {count}.").format(
                    maximum=MAX_GPUS, count=len(names)
                )
            )
    return tuple(names)


def _hang(entry: str) -> tuple[str, tuple[float, float]]:
    function, at, when = entry.partition("@")
    if not at or not function.startswith("nvml"):
        raise SimulationSpecError(
            translate("simulate", "--simulate: hang wants NVMLFUNCTION@SECONDS[/SECONDS], not {entry}.").format(
                entry=reprlib.repr(entry)
            )
        )
    from_text, slash, for_text = when.partition("/")
    start_s = _seconds("hang", from_text)
    return function, (start_s, start_s + _seconds("hang", for_text) if slash else math.inf)


KNOWN_OPTIONS = "gpus, seed, at, lost, nvml, procperm, latency, speed, start, past, hang, sleep, driver, mig, hostpid"


def _simulated_gpu(key: str, gpu: int, count: int) -> None:
    """Refuses a key naming a GPU beyond those simulated."""
    if gpu >= count:
        raise SimulationSpecError(
            translate("simulate", "--simulate: {key} names GPU {gpu}, but only {count} are simulated.").format(
                key=key, gpu=gpu, count=count
            )
        )


def _host_pid(entry: str) -> tuple[int, int]:
    gpu_text, colon, pid_text = entry.partition(":")
    if not colon:
        raise SimulationSpecError(
            translate("simulate", "--simulate: hostpid wants GPU:PID, not {entry}.").format(entry=reprlib.repr(entry))
        )
    gpu = _whole(translate("simulate", "hostpid's GPU"), gpu_text, 0, MAX_GPUS - 1)
    return gpu, _whole("hostpid", pid_text, 1, 2**22)


def _sleep(entry: str) -> tuple[int, tuple[float, float]]:
    gpu_text, at, when = entry.partition("@")
    if not at:
        raise SimulationSpecError(
            translate("simulate", "--simulate: sleep wants GPU@SECONDS[/SECONDS], not {entry}.").format(
                entry=reprlib.repr(entry)
            )
        )
    from_text, slash, for_text = when.partition("/")
    start_s = _seconds("sleep", from_text)
    until_s = start_s + _seconds("sleep", for_text) if slash else math.inf
    return _whole(translate("simulate", "sleep's GPU"), gpu_text, 0, MAX_GPUS - 1), (start_s, until_s)


def _mig_change(entry: str) -> tuple[int, float, tuple[str, ...]]:
    where, colon, layout = entry.partition(":")
    gpu_text, at, when = where.partition("@")
    if not colon or not at:
        raise SimulationSpecError(
            translate("simulate", "--simulate: mig wants GPU@SECONDS:PROFILE+PROFILE..., not {entry}.").format(
                entry=reprlib.repr(entry)
            )
        )
    profiles = tuple(filter(None, layout.split("+")))
    for name in profiles:
        if name not in MIG_PROFILES:
            known = ", ".join(MIG_PROFILES)
            raise SimulationSpecError(
                translate("simulate", "--simulate: unknown MIG profile {name}; choose from {known}.").format(
                    name=reprlib.repr(name), known=known
                )
            )
    slices = sum(MIG_PROFILES[name][0] for name in profiles)
    if slices > MIG_SLICES:
        raise SimulationSpecError(
            translate(
                "simulate", "--simulate: the MIG instances {layout} take {slices} slices; a GPU has {most}."
            ).format(layout=reprlib.repr(layout), slices=slices, most=MIG_SLICES)
        )
    return _whole(translate("simulate", "mig's GPU"), gpu_text, 0, MAX_GPUS - 1), _seconds("mig", when), profiles


def parse_spec(text: str) -> SimSpec:
    """Parse a spec such as ``training:gpus=h100*8,seed=3`` ("" is the default); raises SimulationSpecError."""
    if text.strip().startswith(REPLAY):
        # Alone, and not split at ":" or ",": a path may hold either.
        path = text.strip().removeprefix(REPLAY)
        if not path or not os.path.isfile(path):
            raise SimulationSpecError(
                translate("simulate", "--simulate: replay wants a recording file, and {path} is not one.").format(
                    path=reprlib.repr(path)
                )
            )
        return SimSpec(scenario="replay", gpus=(), replay=os.path.abspath(path))
    scenario, _, options = text.strip().partition(":")
    values: dict = {"scenario": scenario}
    if not scenario:
        values = {"scenario": DEFAULT_SCENARIO, "start_s": DEFAULT_START_S}
    elif scenario not in SCENARIO_NAMES:
        known = ", ".join(SCENARIO_NAMES)
        raise SimulationSpecError(
            translate("simulate", "--simulate: unknown scenario {scenario}; choose from {known}.").format(
                scenario=reprlib.repr(scenario), known=known
            )
        )
    for item in filter(None, options.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise SimulationSpecError(
                translate("simulate", "--simulate: {item} is not of the form key=value.").format(
                    item=reprlib.repr(item)
                )
            )
        if key == "gpus":
            values["gpus"] = _gpus(value)
        elif key == "seed":
            values["seed"] = _whole(key, value, 0, MAX_SEED)
        elif key == "at":
            values["at_s"] = _seconds(key, value)
        elif key == "lost":
            lost = {}
            for entry in filter(None, value.split("+")):  # "lost=" alone: no GPU is lost
                gpu_text, at, when = entry.partition("@")
                if not at:
                    raise SimulationSpecError(
                        translate("simulate", "--simulate: lost wants GPU@SECONDS, not {entry}.").format(
                            entry=reprlib.repr(entry)
                        )
                    )
                lost[_whole(translate("simulate", "lost's GPU"), gpu_text, 0, MAX_GPUS - 1)] = _seconds(key, when)
            values["lost_at_s"] = lost
        elif key == "nvml":
            fault, at, until = value.partition("@")
            if fault not in NVML_FAULTS:
                raise SimulationSpecError(
                    translate("simulate", "--simulate: nvml wants one of {faults}, not {fault}.").format(
                        faults=", ".join(NVML_FAULTS), fault=reprlib.repr(fault)
                    )
                )
            values["nvml_fault"] = fault
            values["nvml_fault_until_s"] = _seconds(key, until) if at else None
        elif key == "procperm":
            if value not in ("yes", "no"):
                raise SimulationSpecError(
                    translate("simulate", "--simulate: procperm wants yes or no, not {value}.").format(
                        value=reprlib.repr(value)
                    )
                )
            values["other_users_hidden"] = value == "yes"
        elif key == "speed":
            values["speed"] = _number(key, value, MAX_SPEED, translate("simulate", "simulated seconds per second"))
            if values["speed"] == 0:
                raise SimulationSpecError(translate("simulate", "--simulate: speed must be greater than 0."))
        elif key == "hang":
            values["hangs"] = tuple(_hang(entry) for entry in filter(None, value.split("+")))
        elif key == "mig":  # repeated for several changes
            values["mig_changes"] = (*values.get("mig_changes", ()), _mig_change(value))
        elif key == "sleep":
            values["sleeps"] = tuple(_sleep(entry) for entry in filter(None, value.split("+")))
        elif key == "driver":
            values["driver"] = _whole(key, value, 400, 999)
        elif key == "hostpid":
            values["host_pids"] = tuple(_host_pid(entry) for entry in filter(None, value.split("+")))
        elif key == "start":
            values["start_s"] = _seconds(key, value)
        elif key == "past":
            values["past_s"] = _seconds(key, value)
        elif key == "latency":
            if value not in ("none", "realistic"):
                raise SimulationSpecError(
                    translate("simulate", "--simulate: latency wants none or realistic, not {value}.").format(
                        value=reprlib.repr(value)
                    )
                )
            values["realistic_latency"] = value == "realistic"
        else:
            raise SimulationSpecError(
                translate("simulate", "--simulate: unknown option {key} (known: {known}).").format(
                    key=reprlib.repr(key),
                    known=KNOWN_OPTIONS,
                )
            )
    spec = SimSpec(**values)
    for gpu in spec.lost_at_s:
        _simulated_gpu("lost", gpu, len(spec.gpus))
    for gpu, _ in spec.sleeps:
        _simulated_gpu("sleep", gpu, len(spec.gpus))
        if not PROFILES[spec.gpus[gpu]].runtime_pm:
            raise SimulationSpecError(
                translate(
                    "simulate", "--simulate: sleep names GPU {gpu}, a {profile}: only laptop GPUs runtime-suspend."
                ).format(gpu=gpu, profile=spec.gpus[gpu])
            )
    for gpu, _ in spec.host_pids:
        _simulated_gpu("hostpid", gpu, len(spec.gpus))
    for gpu, _, _ in spec.mig_changes:
        _simulated_gpu("mig", gpu, len(spec.gpus))
        if not PROFILES[spec.gpus[gpu]].mig_capable:
            raise SimulationSpecError(
                translate("simulate", "--simulate: mig names GPU {gpu}, a {profile}, which has no MIG mode.").format(
                    gpu=gpu, profile=spec.gpus[gpu]
                )
            )
    if spec.scenario == "faults":
        spec = _with_fault_defaults(spec, "lost" in options, "procperm" in options)
    return spec


def _with_fault_defaults(spec: SimSpec, lost_given: bool, procperm_given: bool) -> SimSpec:
    lost = spec.lost_at_s if lost_given else {len(spec.gpus) - 1: 300.0}
    hidden = spec.other_users_hidden if procperm_given else True
    return replace(spec, lost_at_s=lost, other_users_hidden=hidden)


def simulation_from(option: str | None) -> SimSpec | None:
    """The simulation asked for by a command-line option or, failing that, the environment.

    Raises SimulationSpecError for a malformed spec.
    """
    # An empty variable is unset (`TRAYVML_SIMULATE= trayvml pick`), not the default simulation.
    text = option if option is not None else os.environ.get(SIMULATE_ENV) or None
    if text is None:
        return None
    return parse_spec(text)
