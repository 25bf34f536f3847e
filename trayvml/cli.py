"""The command line: ``trayvml`` starts the tray app; subcommands print, log and pick GPUs.

Exit codes: 0 fine, 1 not enough GPUs qualify, 2 bad arguments, 3 NVML unavailable.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from trayvml import __version__
from trayvml.core.errors import NotEnoughGpusError, SimulationSpecError, TrayvmlError

if TYPE_CHECKING:  # the CLI imports its workers lazily, to start fast
    from trayvml.nvml.sim import SimSpec
    from trayvml.source import Source

EXIT_NOT_ENOUGH = 1
EXIT_USAGE = 2
EXIT_NO_NVML = 3
SNAPSHOT_SETTLE_S = 0.5  # rates (PCIe, NVLink, disk, network) need two readings


def _number_argument(
    convert: Callable[[str], float], kind: str, fits: Callable[[float], bool], rule: str
) -> Callable[[str], float]:
    """An argparse type: ``convert`` the text, then check it ``fits``; each failure is a sentence."""

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {kind}") from None
        if not fits(value):  # NaN fits no bound
            raise argparse.ArgumentTypeError(f"{text} {rule}")
        return value

    return parse


_positive_float = _number_argument(float, "a number", lambda v: v > 0, "must be greater than 0")
_positive_int = _number_argument(int, "a whole number", lambda v: v >= 1, "must be at least 1")
_non_negative_float = _number_argument(
    float, "a number of MiB (0 or more)", lambda v: v >= 0, "is not a number of MiB (0 or more)"
)


def build_parser() -> argparse.ArgumentParser:
    simulate = argparse.ArgumentParser(add_help=False)
    simulate.add_argument(
        "--simulate",
        nargs="?",
        const="training",
        default=argparse.SUPPRESS,
        metavar="SPEC",
        help="use simulated GPUs: SCENARIO[:key=value,...], scenarios idle, training, thermal, "
        "processes, faults (default training); also TRAYVML_SIMULATE",
    )
    parser = argparse.ArgumentParser(
        prog="trayvml", description="A system-tray monitor for NVIDIA GPUs.", parents=[simulate]
    )
    parser.add_argument("--version", action="version", version=f"trayvml {__version__}")
    parser.add_argument(
        "--interval", type=_positive_float, default=None, metavar="S", help="sampling interval (default: settings)"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    snap = commands.add_parser("snapshot", parents=[simulate], help="print every GPU's current values")
    snap.add_argument("--json", action="store_true", help="JSON with units in the key names")
    snap.add_argument("--full", action="store_true", help="every metric and static fact per GPU")

    log = commands.add_parser("log", parents=[simulate], help="append CSV rows like nvidia-smi --format=csv")
    log.add_argument("--csv", metavar="FILE", help="the CSV file (appended to when its header matches)")
    log.add_argument("--interval", type=_positive_float, default=1.0, metavar="S", help="seconds between rows")
    log.add_argument("--count", type=_positive_int, metavar="N", help="stop after N ticks (default: until Ctrl-C)")
    log.add_argument("--query", metavar="FIELDS", help="comma-separated nvidia-smi field names")
    log.add_argument("--nounits", action="store_true", help="values without units, as --format=csv,nounits")
    log.add_argument("--list-fields", action="store_true", help="print the field names and exit")

    pick = commands.add_parser("pick", parents=[simulate], help="print the freest GPUs for CUDA_VISIBLE_DEVICES")
    pick.add_argument("--count", type=_positive_int, default=1, metavar="N")
    pick.add_argument("--by", choices=("memory", "memory-ratio", "power", "utilization"), default="memory")
    pick.add_argument("--min-free-mib", type=_non_negative_float, default=0.0, metavar="M")
    pick.add_argument("--uuid", action="store_true", help="print GPU UUIDs instead of indices")

    autostart = commands.add_parser("autostart", help="start trayvml at login: on, off or status")
    autostart.add_argument("state", choices=("on", "off", "status"))
    parser.add_argument("--config", metavar="PATH", help="settings file (default: in your config folder)")
    return parser


def _fail(message: str, code: int) -> int:
    print(f"trayvml: {message}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(format="trayvml: %(message)s", level=logging.WARNING)
    try:
        from trayvml.nvml.sim import simulation_from

        simulation = simulation_from(getattr(args, "simulate", None))
    except SimulationSpecError as error:
        return _fail(str(error), EXIT_USAGE)
    try:
        if args.command == "snapshot":
            return _snapshot(args, simulation)
        if args.command == "log":
            return _log(args, simulation)
        if args.command == "pick":
            return _pick(args, simulation)
        if args.command == "autostart":
            return _autostart(args)
        from trayvml.ui.app import run_app

        return run_app(simulation, args.interval, args.config)
    except NotEnoughGpusError as error:
        return _fail(str(error), EXIT_NOT_ENOUGH)
    except TrayvmlError as error:
        return _fail(str(error), EXIT_USAGE)


def _source(simulation: SimSpec | None) -> Source:
    from trayvml.source import Source

    return Source(simulation)


def _snapshot(args: argparse.Namespace, simulation: SimSpec | None) -> int:
    from trayvml.report import json_snapshot, text_snapshot

    source = _source(simulation)
    try:
        source.sample()
        source.clock.sleep_s(SNAPSHOT_SETTLE_S)
        sample = source.sample()
    finally:
        source.close()
    if sample.unavailable is not None:
        if args.json:
            print(json.dumps(json_snapshot(sample), indent=2))
        return _fail(sample.unavailable.sentence, EXIT_NO_NVML)
    if args.json:
        print(json.dumps(json_snapshot(sample), indent=2, ensure_ascii=False))
    else:
        print(text_snapshot(sample, full=args.full))
    return 0


def _log(args: argparse.Namespace, simulation: SimSpec | None) -> int:
    from trayvml.csvlog import COLUMNS, CsvLog, parse_fields

    if args.list_fields:
        print("\n".join(COLUMNS))
        return 0
    if not args.csv:
        return _fail("log needs --csv FILE (or --list-fields).", EXIT_USAGE)
    columns = parse_fields(args.query)
    source = _source(simulation)
    try:
        first = source.sample()
        if first.unavailable is not None:
            return _fail(first.unavailable.sentence, EXIT_NO_NVML)
        log = CsvLog(args.csv, columns, units=not args.nounits)
        ticks = 0
        warned = False
        sample = first
        start_s = source.clock.now_s()
        try:
            while True:
                if sample.unavailable is not None and not warned:
                    print(f"trayvml: {sample.unavailable.sentence} (still trying)", file=sys.stderr)
                    warned = True
                log.append(sample)
                ticks += 1
                if args.count is not None and ticks >= args.count:
                    break
                source.clock.sleep_s(start_s + ticks * args.interval - source.clock.now_s())
                sample = source.sample()
        except KeyboardInterrupt:
            pass  # Ctrl-C is how a user ends an open-ended log
        finally:
            log.close()
        print(f"trayvml: {ticks} tick{'s' if ticks != 1 else ''} logged to {args.csv}", file=sys.stderr)
        return 0
    finally:
        source.close()


def _autostart(args: argparse.Namespace) -> int:
    from trayvml.autostart import for_this_platform

    autostart = for_this_platform()
    try:
        if args.state == "on":
            autostart.enable(args.config)
        elif args.state == "off":
            autostart.disable()
    except OSError as error:
        return _fail(f"Could not change {autostart.location}: {error.strerror or error}.", EXIT_USAGE)
    state = "on" if autostart.is_enabled() else "off"
    print(f"Start at login is {state} ({autostart.location}).")
    return 0


def _pick(args: argparse.Namespace, simulation: SimSpec | None) -> int:
    from trayvml.pick import choose

    source = _source(simulation)
    try:
        sample = source.sample()
    finally:
        source.close()
    if sample.unavailable is not None:
        return _fail(sample.unavailable.sentence, EXIT_NO_NVML)
    chosen = choose(sample, args.count, args.by, args.min_free_mib)
    if args.uuid:
        print(",".join(sample.devices[i].uuid for i in chosen))
    else:
        print(",".join(map(str, chosen)))
    return 0
