"""The command line: ``trayvml`` starts the tray app; subcommands print, log and pick GPUs.

Exit codes: 0 fine, 1 not enough GPUs qualify, 2 bad arguments, 3 NVML unavailable or the
driver not answering, 4 no display (the tray app), 130 ended by Ctrl-C while waiting on the driver.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import json
import logging
import os
import reprlib
import stat
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn, TextIO, cast

from trayvml import __version__
from trayvml.core import i18n
from trayvml.core.errors import NotEnoughGpusError, SimulationSpecError, TrayvmlError
from trayvml.core.i18n import QT_TRANSLATE_NOOP, translate

if TYPE_CHECKING:  # the CLI imports its workers lazily, to start fast
    from trayvml.commands.csvlog import Column
    from trayvml.core.sample import Sample
    from trayvml.nvml.sim import SimSpec
    from trayvml.remote.source import Remotes
    from trayvml.source import Source

EXIT_NOT_ENOUGH = 1
EXIT_USAGE = 2
EXIT_NO_NVML = 3  # NVML unavailable, or the driver not answering within --timeout
EXIT_INTERRUPTED = 130  # as shells report a command ended by Ctrl-C
LOG_INTERVAL_S = 1.0  # as nvidia-smi -l 1
LOG_MIN_INTERVAL_S = 0.1  # as nvidia-smi -lms 100
DRIVER_TIMEOUT_S = 10.0  # --timeout's default
MAX_COUNT = 1_000_000_000  # ticks or GPUs: past any real use, short of what would look like a hang
MAX_MIB = 1e9  # a petabyte of GPU memory


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error said in one line (what is wrong, where help is) instead of the usage."""

    def error(self, message: str) -> NoReturn:
        if len(message) > 300:  # argparse repeats a bad value whole, even 5,000 characters of it
            message = message[:300] + "…"
        self.exit(
            EXIT_USAGE,
            translate("cli", "{prog}: {message} (see {prog} --help)").format(prog=self.prog, message=message) + "\n",
        )


def _number_argument(
    convert: Callable[[str], float], kind: str, fits: Callable[[float], bool], rule: str
) -> Callable[[str], float]:
    """An argparse type: ``convert`` the text, then check it ``fits``; each failure is a sentence."""

    def parse(text: str) -> float:
        try:
            value = convert(text) if text.isascii() else convert("")  # float() reads "٣" as 3
        except ValueError:  # int() also refuses over 4,300 digits this way
            raise argparse.ArgumentTypeError(
                translate("cli", "{text} is not {kind}").format(text=reprlib.repr(text), kind=kind)
            ) from None
        if not fits(value):  # NaN fits no bound
            raise argparse.ArgumentTypeError(f"{reprlib.repr(text)} {rule}")
        return value

    return parse


def _between(low: float, high: float, unit: str) -> Callable[[str], float]:
    """A finite number from ``low`` to ``high``, in ``unit``."""
    return _number_argument(
        float,
        translate("cli", "a number of {unit}").format(unit=unit),
        lambda v: low <= v <= high,
        translate("cli", "is not between {low} and {high} {unit}").format(
            low=f"{low:.15g}", high=f"{high:.15g}", unit=unit
        ),
    )


def _count(text: str) -> float:
    """Made on use, as the words are: the language is chosen when main() starts."""
    rule = translate("cli", "is not from 1 to {maximum}").format(maximum=MAX_COUNT)
    return _number_argument(int, translate("cli", "a whole number"), lambda v: 1 <= v <= MAX_COUNT, rule)(text)


def _timeout_s(text: str) -> float:
    return _between(0.1, 3600, translate("cli", "seconds"))(text)


def _record_seconds(text: str) -> float:
    return _between(1, 3600, translate("cli", "seconds"))(text)


def _min_free_mib(text: str) -> float:
    return _between(0, MAX_MIB, "MiB")(text)


def _max_util(text: str) -> float:
    return _between(0, 100, "%")(text)


def _config_path(text: str) -> str:
    # Absolute: `autostart on` writes it into an entry that runs from another folder.
    if not text.strip():
        raise argparse.ArgumentTypeError(translate("cli", "wants the path of a settings file"))
    return os.path.abspath(text)


def build_parser() -> argparse.ArgumentParser:
    from trayvml.config import GENERAL_BY_KEY
    from trayvml.nvml.sim.options import SCENARIO_NAMES  # the scenarios' names, kept equal to SCENARIOS by a test
    from trayvml.pick import CRITERIA, DEFAULT_MAX_UTIL

    interval = GENERAL_BY_KEY["sampling_interval_s"]  # the settings' bounds, so that no option bypasses them
    assert interval.minimum is not None and interval.maximum is not None
    # Options that mean the same before and after the command: given as parents with
    # default=SUPPRESS, so that a command's parser does not overwrite the value given before it.
    simulate = _Parser(add_help=False)
    simulate.add_argument(
        "--simulate",
        nargs="?",
        const="",
        default=argparse.SUPPRESS,
        metavar="SPEC",
        help=translate(
            "cli",
            "use simulated GPUs: SCENARIO[:key=value,...], scenarios {scenarios} "
            "(alone: training, half an hour into the job); also TRAYVML_SIMULATE",
        ).format(scenarios=", ".join(SCENARIO_NAMES)),
    )
    config = _Parser(add_help=False)
    config.add_argument(
        "--config",
        type=_config_path,
        default=argparse.SUPPRESS,
        metavar="PATH",
        help=translate("cli", "settings file (default: in your config folder)"),
    )
    sampling = _Parser(add_help=False)
    sampling.add_argument(
        "--interval",
        type=_between(interval.minimum, interval.maximum, translate("cli", "seconds")),
        default=argparse.SUPPRESS,
        metavar="S",
        help=translate(
            "cli",
            "seconds between samples of this machine's GPUs, {minimum} to {maximum} (default: the tray app's "
            "settings; {log} for log)",
        ).format(minimum=f"{interval.minimum:g}", maximum=f"{interval.maximum:g}", log=f"{LOG_INTERVAL_S:g}"),
    )
    driver = _Parser(add_help=False)
    driver.add_argument(
        "--timeout",
        type=_timeout_s,
        default=DRIVER_TIMEOUT_S,
        metavar="S",
        help=translate(
            "cli", "give up when the NVIDIA driver has not answered for S seconds (default {default})"
        ).format(default=f"{DRIVER_TIMEOUT_S:g}"),
    )
    remote = _Parser(add_help=False)
    remote.add_argument(
        "--remote",
        action="append",
        default=argparse.SUPPRESS,
        metavar="URL",
        help=translate(
            "cli",
            "also show a remote host's GPUs (repeatable): an exporter (trayvml serve, dcgm-exporter, "
            "nvidia_gpu_exporter, nvitop-exporter) or prometheus+http(s)://HOST:9090[#SELECTOR]; "
            "credentials only in the settings file (remote_hosts)",
        ),
    )
    parser = _Parser(
        prog="trayvml",
        description=translate("cli", "A system-tray monitor for NVIDIA GPUs."),
        parents=[simulate, config, sampling, remote],
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"trayvml {__version__}",
        help=translate("cli", "show program's version number and exit"),
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help=translate("cli", "say more on stderr: -v each alert and its outcome, -vv each sample"),
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    reading = [simulate, config, driver]

    snap = commands.add_parser(
        "snapshot", parents=[*reading, remote], help=translate("cli", "print every GPU's current values")
    )
    snap.add_argument("--json", action="store_true", help=translate("cli", "JSON with units in the key names"))
    snap.add_argument("--full", action="store_true", help=translate("cli", "every metric and static fact per GPU"))

    log = commands.add_parser(
        "log",
        parents=[*reading, remote],
        help=translate("cli", "append CSV rows like nvidia-smi --format=csv"),
    )
    # Faster than the tray app may sample, as nvidia-smi -lms 100 does: a log is asked for, and a
    # tenth of a second is still ten NVML rounds a second (the driver refreshes utilization only
    # every 1/6 to 1 s, so faster rows repeat it).
    log.add_argument(
        "--interval",
        type=_between(LOG_MIN_INTERVAL_S, interval.maximum, translate("cli", "seconds")),
        default=argparse.SUPPRESS,
        metavar="S",
        help=translate("cli", "seconds between rows, {minimum} to {maximum} (default {default})").format(
            minimum=f"{LOG_MIN_INTERVAL_S:g}", maximum=f"{interval.maximum:g}", default=f"{LOG_INTERVAL_S:g}"
        ),
    )
    log.add_argument(
        "--csv",
        metavar="FILE",
        default="-",
        help=translate("cli", "the CSV file (appended to when its header matches; default: standard output)"),
    )
    log.add_argument(
        "--format",
        metavar="WORDS",
        default="csv",
        help=translate("cli", "as nvidia-smi's: csv, with noheader and nounits in any order (csv,noheader,nounits)"),
    )
    log.add_argument(
        "--count", type=_count, metavar="N", help=translate("cli", "stop after N ticks (default: until Ctrl-C)")
    )
    log.add_argument("--query", metavar="FIELDS", help=translate("cli", "comma-separated nvidia-smi field names"))
    log.add_argument(
        "--nounits", action="store_true", help=translate("cli", "values without units, as --format=csv,nounits")
    )
    log.add_argument("--list-fields", action="store_true", help=translate("cli", "print the field names and exit"))

    pick = commands.add_parser(
        "pick", parents=reading, help=translate("cli", "print the freest GPUs for CUDA_VISIBLE_DEVICES")
    )
    pick.add_argument(
        "--count", type=_count, default=1, metavar="N", help=translate("cli", "how many GPUs to print (default 1)")
    )
    pick.add_argument(
        "--by",
        choices=CRITERIA,
        default="memory",
        help=translate(
            "cli",
            "what makes a GPU freer: the most free memory (default), the largest free share of its memory,"
            " the lowest power draw as a share of its limit, or the lowest utilization",
        ),
    )
    pick.add_argument(
        "--min-free-mib",
        type=_min_free_mib,
        default=0.0,
        metavar="M",
        help=translate("cli", "a GPU with less than M MiB of free memory does not qualify"),
    )
    pick.add_argument(
        "--max-util",
        type=_max_util,
        default=DEFAULT_MAX_UTIL,
        metavar="PERCENT",
        help=translate("cli", "a GPU busier than PERCENT does not qualify (default {default}; 100: any)").format(
            default=f"{DEFAULT_MAX_UTIL:g}"
        ),
    )
    pick.add_argument("--uuid", action="store_true", help=translate("cli", "print GPU UUIDs instead of indices"))

    _add_serve_parser(commands, [*reading, sampling])

    autostart = commands.add_parser(
        "autostart", parents=[config], help=translate("cli", "start trayvml at login: on, off or status")
    )
    autostart.add_argument("state", choices=("on", "off", "status"))

    desktop = commands.add_parser(
        "desktop",
        parents=[config],
        help=translate("cli", "add trayvml to the application menu, with its icons: install or uninstall"),
    )
    desktop.add_argument("action", choices=("install", "uninstall"))
    doctor = commands.add_parser(
        "doctor",
        parents=reading,
        help=translate("cli", "check the driver, permissions, desktop and files, and explain"),
    )
    doctor.add_argument("--json", action="store_true", help=translate("cli", "the checks as JSON"))
    doctor.add_argument(
        "--bundle",
        metavar="FILE",
        help=translate("cli", "also write a report to attach to an issue (host, user, home and GPU ids redacted)"),
    )
    doctor.add_argument(
        "--record",
        metavar="FILE",
        help=translate(
            "cli", "instead, record every NVML call and answer (and nvidia-smi's, where it is installed) to FILE"
        ),
    )
    doctor.add_argument(
        "--seconds",
        type=_record_seconds,
        default=60.0,
        metavar="S",
        help=translate("cli", "how long --record records (default 60)"),
    )
    from trayvml.commands.record import add_commands

    add_commands(commands, reading, sampling, simulate)  # record, history: the history store (issue 9)
    return parser


def _add_serve_parser(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    from trayvml.prometheus import DEFAULT_ADDRESS, DEFAULT_PORT  # not commands.serve: prometheus-client

    serve = commands.add_parser(
        "serve", parents=parents, help=translate("cli", "serve the GPUs' metrics to Prometheus on /metrics")
    )
    serve.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help=translate(
            "cli",
            "where to listen (default {address}, this machine only; another address is reachable from other machines)",
        ).format(address=f"{DEFAULT_ADDRESS}:{DEFAULT_PORT}"),
    )
    serve.add_argument(
        "--web-config",
        metavar="FILE",
        help=translate(
            "cli",
            "basic auth and TLS, as Prometheus exporters' --web.config.file (YAML: tls_server_config, "
            "basic_auth_users with bcrypt hashes)",
        ),
    )


SERVE_READ_MARGIN_S = 1.0  # beyond --timeout, which bounds a read's wait for a stalled driver


def _serve(args: argparse.Namespace, simulation: SimSpec | None) -> int:
    from trayvml.commands.serve import run
    from trayvml.core.heap import big_blocks_mapped_apart, few_malloc_arenas

    few_malloc_arenas()
    big_blocks_mapped_apart()
    interval = args.interval if args.interval is not None else LOG_INTERVAL_S
    source = _source(simulation, args.timeout, host=True)
    try:
        return run(args.listen, args.web_config, interval, source.sample, args.timeout + SERVE_READ_MARGIN_S)
    finally:
        source.interrupt()
        source.close()


def _fail(message: str, code: int) -> int:
    print(f"trayvml: {message}", file=sys.stderr)
    return code


# argparse's own words (headings, its help and version options, usage errors), which it asks
# gettext for: given to it from trayvml's catalog, under the context "argparse".
ARGPARSE_WORDS = (
    QT_TRANSLATE_NOOP("argparse", "usage: "),
    QT_TRANSLATE_NOOP("argparse", "options"),
    QT_TRANSLATE_NOOP("argparse", "positional arguments"),
    QT_TRANSLATE_NOOP("argparse", "show this help message and exit"),
    QT_TRANSLATE_NOOP("argparse", "invalid choice: %(value)r (choose from %(choices)s)"),
    QT_TRANSLATE_NOOP("argparse", "the following arguments are required: %s"),
    QT_TRANSLATE_NOOP("argparse", "unrecognized arguments: %s"),
    QT_TRANSLATE_NOOP("argparse", "expected one argument"),
    QT_TRANSLATE_NOOP("argparse", "argument %(argument_name)s: %(message)s"),
)


def use_language(argv: Sequence[str] = (), environ: dict[str, str] | None = None) -> str:
    """The CLI speaks the language the tray app would: the settings' choice, else the system's.

    Chosen before the arguments are parsed (their help and errors are in it), from the settings file
    that ``argv`` names with --config or the default one, read without loading it (loading moves a
    broken file aside)."""
    from pathlib import Path

    from trayvml.config import default_path, read_file, settings_text, tomllib

    path = str(default_path())
    for k, argument in enumerate(argv):
        if argument == "--config" and k + 1 < len(argv):
            path = argv[k + 1]
        elif argument.startswith("--config="):
            path = argument.removeprefix("--config=")
    setting = "system"
    try:
        # A regular file only: a pipe (``--config <(…)``) read here would reach the settings empty,
        # and a named one with no writer would wait for ever. Read as loading reads it (its size
        # bounded, a file that stops being a regular one between the look and the open refused).
        mode = os.stat(path).st_mode
        if stat.S_ISREG(mode):
            value = tomllib.loads(settings_text(read_file(Path(path), mode))).get("language", "system")
            setting = value if isinstance(value, str) else setting
    except (OSError, ValueError, RecursionError):  # no file, or one loading sets aside: the system's
        pass  # RecursionError: tomllib recurses once per nested array or table
    language = i18n.resolve(setting, environ)
    i18n.install(language)
    # argparse looks its gettext function up as a module global each time it needs words.
    argparse._ = _argparse_gettext if language == i18n.SOURCE_LANGUAGE else _argparse_words  # type: ignore[attr-defined]
    return language


_argparse_gettext = argparse._  # type: ignore[attr-defined]


def _argparse_words(text: str) -> str:
    return translate("argparse", _argparse_gettext(text))


# What trayvml writes that a legacy terminal encoding (ISO-8859-1, GB2312, ASCII under LANG=C) may
# lack, in plain ASCII; anything else it cannot hold becomes "?".
_ASCII_FOR = {
    "\u2013": "-",  # – in ranges
    "\u2014": "-",  # — between a GPU and its state
    "\u00b7": "|",  # · between the host's figures
    "\u00b0": "",  # ° in "45 °C": "45 C"
    "\u2026": "...",
    "\u00b5": "u",  # µs
    "\u00d7": "x",
    "\u2264": "<=",
    "\u2265": ">=",
    "\u2192": "->",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u00a0": " ",
    "\u202f": " ",
}
_OUTPUT_ERRORS = "trayvml-ascii"


def _ascii_instead(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    return "".join(_ASCII_FOR.get(c, "?") for c in text), error.end


codecs.register_error(_OUTPUT_ERRORS, _ascii_instead)


def tolerate_output_encoding() -> None:
    """Never crash on writing text the terminal's encoding cannot hold: what it lacks is written in
    ASCII instead. Python fails with UnicodeEncodeError on stdout by default (and writes \\u2013 on
    stderr), for example under LANG=C or an ISO-8859-1 or GB2312 locale."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("_", "-")
        if reconfigure is None or encoding in ("utf-8", "utf8", "utf-16", "utf-32", "gb18030"):
            continue  # these hold every character; a stream without reconfigure (None under pythonw) is left as it is
        with contextlib.suppress(OSError, ValueError):  # a stream already closed, or one that refuses
            reconfigure(errors=_OUTPUT_ERRORS)


def _simulate_alone(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """``argv``, where ``--simulate`` right before a command means the default simulation.

    --simulate takes an optional SPEC, and argparse gives it the next word whatever it is: in
    ``trayvml --simulate snapshot`` the command would be read as a scenario. No scenario is named
    as a command, so a command's name there is the command, as it is after any other option."""
    commands: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands.update(action.choices)
    words = list(argv)
    for k, word in enumerate(words[:-1]):
        if word == "--":
            break
        if word == "--simulate" and words[k + 1] in commands:
            words[k] = "--simulate="  # the same as --simulate alone: const is ""
    return words


def main(argv: Sequence[str] | None = None) -> int:
    tolerate_output_encoding()
    use_language(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(_simulate_alone(parser, sys.argv[1:] if argv is None else argv))
    except SystemExit as done:  # --help, --version, or a usage error argparse has said in one line
        return done.code if isinstance(done.code, int) else 0
    args.config = getattr(args, "config", None)
    args.remote = getattr(args, "remote", [])
    if args.remote and args.command not in (None, "snapshot", "log"):
        not_here = translate("cli", "--remote is for snapshot, log and the tray app, not {command}.")
        return _fail(not_here.format(command=args.command), EXIT_USAGE)
    args.interval = getattr(args, "interval", LOG_INTERVAL_S if args.command == "log" else None)
    # A shell variable left empty is not "nothing asked": an empty --web-config served with no
    # password or TLS, and an empty --listen on every address.
    for option in ("csv", "bundle", "record", "web_config", "listen"):
        if getattr(args, option, None) == "":
            said = translate("cli", "--{option} was given an empty name.").format(option=option.replace("_", "-"))
            if option == "csv":
                said = translate("cli", "--csv wants a file name, or - for standard output.")
            elif option == "listen":
                said = translate("cli", "--listen was given an empty address: HOST:PORT, or :PORT for every address.")
            return _fail(said, EXIT_USAGE)
    verbosity = getattr(args, "verbose", 0)
    level = logging.DEBUG if verbosity >= 2 else logging.INFO if verbosity == 1 else logging.WARNING
    logging.basicConfig(format="trayvml: %(message)s", level=level)
    if sys.stdout is None:  # started with standard output closed (`>&-`)
        if _writes_to_stdout(args):  # else it printed nothing and exited 0, or failed with a traceback
            closed = translate("cli", "standard output is closed: trayvml {command} has nowhere to write.")
            return _fail(closed.format(command=args.command), EXIT_USAGE)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the process's: what is printed by the way goes nowhere
    if args.config is not None and args.command in ("snapshot", "log", "pick"):
        _check_settings(args.config)
    try:
        from trayvml.nvml.sim import simulation_from

        simulation = simulation_from(getattr(args, "simulate", None))
    except SimulationSpecError as error:
        return _fail(str(error), EXIT_USAGE)
    watched = _WatchedOutput(sys.stdout) if _writes_to_stdout(args) else None
    if watched is not None:
        sys.stdout = cast(TextIO, watched)
    try:
        code = _command(args, simulation)
        sys.stdout.flush()  # here, not at exit: a reader gone (`| head`) is then ours to take quietly
        return code
    except KeyboardInterrupt:  # Ctrl-C while waiting on the driver: end quietly, as a user expects
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        from trayvml.core.files import quiet_stdout

        quiet_stdout()
        return 0
    except NotEnoughGpusError as error:
        return _fail(str(error), EXIT_NOT_ENOUGH)
    except TrayvmlError as error:
        return _fail(str(error), EXIT_USAGE)
    except OSError as error:
        # Standard output on a full disk (`snapshot > file`): a sentence and 2, not a traceback and
        # 1, which is pick's "not enough GPUs". Another fault is not ours to name: raised as it is.
        if watched is None or watched.failed is not error:
            raise
        from trayvml.core.files import quiet_stdout

        quiet_stdout()
        cannot = translate("record", "Cannot write {path}: {error}.")
        return _fail(cannot.format(path=translate("record", "standard output"), error=error.strerror), EXIT_USAGE)
    finally:
        if watched is not None and sys.stdout is watched:
            sys.stdout = watched.stream


class _WatchedOutput:
    """Standard output as a command writes it, keeping the error of a write or flush it failed:
    the OSError a command's print raises is otherwise any file's."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.failed: OSError | None = None

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError as error:
            self.failed = error
            raise

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as error:
            self.failed = error
            raise

    def __getattr__(self, name: str) -> object:  # fileno, isatty, encoding…: the stream's own
        return getattr(self.stream, name)


def _writes_to_stdout(args: argparse.Namespace) -> bool:
    """Whether the command's output is standard output (not the tray app, serve, record, or a
    --csv file)."""
    if args.command in ("log", "history"):
        return bool(args.csv == "-")
    return args.command in ("snapshot", "pick", "doctor", "autostart", "desktop")


def _command(args: argparse.Namespace, simulation: SimSpec | None) -> int:
    """Runs the command ``args`` name (the tray app where none); its exit code."""
    if args.command == "snapshot":
        return _snapshot(args, simulation)
    if args.command == "log":
        return _log(args, simulation)
    if args.command == "pick":
        return _pick(args, simulation)
    if args.command == "autostart":
        return _autostart(args)
    if args.command == "desktop":
        return _desktop(args)
    if args.command in ("record", "history"):
        return _store_command(args, simulation)
    if args.command == "serve":
        return _serve(args, simulation)
    if args.command == "doctor":
        from trayvml.commands.doctor import record
        from trayvml.commands.doctor import run as doctor

        return record(args, simulation) if args.record else doctor(args, simulation)
    from trayvml.core.heap import big_blocks_mapped_apart
    from trayvml.ui.app import run_app

    big_blocks_mapped_apart()
    return run_app(simulation, args.interval, args.config, tuple(args.remote))


def _store_command(args: argparse.Namespace, simulation: SimSpec | None) -> int:
    import time
    from pathlib import Path

    from trayvml.commands.history import history
    from trayvml.commands.record import record
    from trayvml.config import SettingsStore, default_path
    from trayvml.core.heap import big_blocks_mapped_apart

    if args.command == "history":
        return history(args, time.time(), simulated=simulation is not None)
    big_blocks_mapped_apart()
    store = SettingsStore(Path(args.config) if args.config else default_path())
    settings, note = store.load(named=args.config is not None, only_read=True)  # record never saves them
    if note:
        print(f"trayvml: {note}", file=sys.stderr)
    if settings.stand_in:
        # The history's spans and size are the file's: by defaults a month kept was pruned to a
        # week; by no limits at all, a recorder left running could fill the disk.
        refused = translate(
            "record", "record keeps the history by the settings' limits, and those are not known: mend {path} first."
        )
        return _fail(refused.format(path=store.path), EXIT_USAGE)
    return record(args, simulation, settings)


def _check_settings(path: str) -> None:
    """Say, as the tray app would, when the settings file given with --config cannot be used.

    These commands take nothing from the settings yet, but a user who names a file should hear
    that it is broken (or not there) rather than find out at the next login; it is left as it is.
    """
    from pathlib import Path

    from trayvml.config import SettingsStore

    _, note = SettingsStore(Path(path)).load(named=True, only_read=True)
    if note:
        print(f"trayvml: {note}", file=sys.stderr)


def _source(simulation: SimSpec | None, timeout_s: float, host: bool = False, every_tick: bool = False) -> Source:
    """``host``: also sample the host (CPU, RAM, disk, network), for the commands that show it.
    ``every_tick``: each sample reads all it is asked for (see Source)."""
    from trayvml.source import Source

    return Source(simulation, host=host, stall_after_s=timeout_s, every_tick=every_tick)


def _not_current(sample: Sample) -> str | None:
    """Why ``sample`` has no current GPU values (the driver not answering, NVML unusable), or None."""
    problem = sample.problem
    return problem[1] if problem is not None else None


def _snapshot(args: argparse.Namespace, simulation: SimSpec | None) -> int:
    from trayvml.commands.report import json_snapshot, text_snapshot
    from trayvml.monitor.energy import EnergyMeter
    from trayvml.source import SETTLE_S

    remotes = _remotes(args) if args.remote else None
    # Every tick: the second sample's energy counter and process lists are read again, not held
    # from the first (else the energy over the snapshot was 0 and the counter a second old).
    source = _source(simulation, args.timeout, host=True, every_tick=True)
    energy = EnergyMeter()  # over the snapshot's own two samples
    try:
        finish = remotes.begin_read() if remotes is not None else None  # read while the local GPUs settle
        sample = source.sample()
        energy.update(sample)
        if sample.stall is None:
            source.clock.sleep_s(SETTLE_S)
            sample = source.sample()
            energy.update(sample)
    finally:
        source.close()
    if finish is not None and remotes is not None:
        from trayvml.commands.remote import print_snapshot

        try:
            found = finish()
        finally:
            remotes.close(0.5)  # an ssh:// host's ssh process ends with it
        return print_snapshot(sample, found, args.json, args.full)
    problem = _not_current(sample)
    if problem is not None:
        if args.json:
            print(json.dumps(json_snapshot(sample), indent=2))
        return _fail(problem, EXIT_NO_NVML)
    if args.json:
        print(json.dumps(json_snapshot(sample, energy), indent=2, ensure_ascii=False))
    else:
        print(text_snapshot(sample, full=args.full, notes=getattr(args, "verbose", 0) >= 1))
    return 0


def _log(args: argparse.Namespace, simulation: SimSpec | None) -> int:
    from trayvml.commands.csvlog import CsvLog, demand_of, field_list, parse_fields, parse_format
    from trayvml.core.clock import Ticker

    if args.list_fields:
        print(field_list())
        return 0
    form = parse_format(args.format)
    units = form.units and not args.nounits
    columns = parse_fields(args.query)
    demand = demand_of(columns)  # the reader reads only what the columns show
    if args.remote:
        from trayvml.commands.remote import log_columns

        return _log_remote(args, simulation, log_columns(columns), demand, units, form.header)
    source = _source(simulation, args.timeout, every_tick=True)  # each row read at its time, as nvidia-smi's
    try:
        first = source.sample(demand)
        problem = _not_current(first)
        if problem is not None:
            return _fail(problem, EXIT_NO_NVML)
        log = CsvLog(args.csv, columns, units=units, header=form.header)
        _say_simulated(first)  # (where the file is refused, the one sentence that says so is enough)
        ticks = 0
        warned = False
        sample = first
        ticker = Ticker(args.interval, source.clock)  # paced on the monotonic clock, stamped with the wall clock
        try:
            while True:
                if sample.stall is not None:  # write no row that would pass old values off as new
                    print(f"trayvml: {sample.stall.sentence(sample.timestamp_s)}", file=sys.stderr)
                    return EXIT_NO_NVML
                if sample.unavailable is not None and not warned:
                    still = translate("cli", "{problem} (still trying)").format(problem=sample.unavailable.sentence)
                    print(f"trayvml: {still}", file=sys.stderr)
                    warned = True
                log.append(sample)
                ticks += 1
                if args.count is not None and ticks >= args.count:
                    break
                ticker.wait_next()
                sample = source.sample(demand)
        except KeyboardInterrupt:
            pass  # Ctrl-C is how a user ends an open-ended log
        finally:
            log.close()
        logged = (
            translate("cli", "{ticks} ticks logged to {path}")
            if ticks != 1
            else translate("cli", "1 tick logged to {path}")
        )
        path = translate("cli", "standard output") if args.csv == "-" else args.csv
        print(f"trayvml: {logged.format(ticks=ticks, path=path)}", file=sys.stderr)
        return 0
    finally:
        source.close()


def _remotes(args: argparse.Namespace, interval_s: float = 1.0) -> Remotes:
    from trayvml.commands.remote import endpoints
    from trayvml.remote.source import Remotes

    return Remotes(endpoints(args.remote, args.config), interval_s)


def _log_remote(
    args: argparse.Namespace,
    simulation: SimSpec | None,
    columns: list[Column],
    demand: frozenset[str],
    units: bool,
    header: bool,
) -> int:
    from trayvml.commands.remote import RemoteLog

    remotes = _remotes(args, args.interval)
    source = _source(simulation, args.timeout, every_tick=True)
    try:
        log = RemoteLog(args.csv, columns, units, source, remotes, demand, header)
        return log.run(args.count, args.interval)
    finally:
        remotes.close()
        source.close()


def _autostart(args: argparse.Namespace) -> int:
    from trayvml.platform.autostart import for_this_platform

    autostart = for_this_platform()
    try:
        if args.state == "on":
            autostart.enable(args.config)
        elif args.state == "off":
            autostart.disable()
    except OSError as error:
        failed = translate("cli", "Could not change {location}: {error}.")
        return _fail(failed.format(location=autostart.location, error=error.strerror or error), EXIT_USAGE)
    state = (
        translate("cli", "Start at login is on ({location}).")
        if autostart.is_enabled()
        else translate("cli", "Start at login is off ({location}).")
    )
    print(state.format(location=autostart.location))
    return 0


def _desktop(args: argparse.Namespace) -> int:
    from trayvml.platform import desktop_entry as desktop

    if not desktop.supported():
        return _fail(
            translate("cli", "desktop install is for Linux and other freedesktop desktops; use autostart here."),
            EXIT_USAGE,
        )
    try:
        if args.action == "install":
            outcome = desktop.install(config_path=args.config)
            done = translate("cli", "Installed the launcher and {count} icons under {folder}.").format(
                count=len(outcome.files) - 1, folder=desktop.data_home()
            )
        else:
            outcome = desktop.uninstall()
            removed = translate("cli", "Removed {count} files trayvml had installed.")
            done = removed.format(count=len(outcome.files)) if outcome.files else ""
    except desktop.DesktopInstallError as error:
        return _fail(str(error), EXIT_USAGE)
    for note in outcome.notes:
        print(f"trayvml: {note}", file=sys.stderr)
    if done:
        print(done)
    return 0


def _say_simulated(sample: Sample) -> None:
    """On standard error, where the GPUs are simulated: pick's numbers and log's rows look like a
    real machine's, and an empty TRAYVML_SIMULATE once simulated four GPUs without a word."""
    from trayvml.commands.report import simulation_banner

    if sample.simulation:
        print(f"trayvml: {simulation_banner(sample)}", file=sys.stderr)


def _pick(args: argparse.Namespace, simulation: SimSpec | None) -> int:
    from trayvml.pick import choose, cuda_ids, cuda_pool, sample_to_pick, uuids

    source = _source(simulation, args.timeout)
    try:
        sample = sample_to_pick(source)
    finally:
        source.close()
    problem = _not_current(sample)
    if problem is not None:
        return _fail(problem, EXIT_NO_NVML)
    among = cuda_pool(sample)
    indices = ", ".join(map(str, among or ()))
    try:
        chosen = choose(sample, args.count, args.by, args.min_free_mib, args.max_util, among)
    except NotEnoughGpusError as error:
        if among is None:
            raise
        # "only 2 of 2 qualify": of the job's, which the sentence alone did not say.
        within = translate("pick", "{sentence}, among the GPUs CUDA_VISIBLE_DEVICES names ({indices}).")
        raise NotEnoughGpusError(within.format(sentence=str(error).rstrip(".。"), indices=indices)) from None
    _say_simulated(sample)  # (where none qualify, the one sentence that says so is enough)
    if among is not None:  # (a job's own: pick's answer stays within it)
        among_note = translate("pick", "chosen among the GPUs CUDA_VISIBLE_DEVICES names ({indices}).")
        print(f"trayvml: {among_note.format(indices=indices)}", file=sys.stderr)
    if args.uuid:
        print(",".join(uuids(sample, chosen)))
    else:
        print(",".join(map(str, cuda_ids(sample, chosen))))
    return 0
