"""`trayvml record`: the headless recorder of the history on disk."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from trayvml.core.clock import Ticker
from trayvml.core.errors import TrayvmlError
from trayvml.core.i18n import translate

if TYPE_CHECKING:
    from trayvml.config import Settings
    from trayvml.core.clock import Clock
    from trayvml.monitor.pipeline import Monitor
    from trayvml.nvml.sim import SimSpec
    from trayvml.platform.push import PushNotifier


def add_commands(
    commands: argparse._SubParsersAction,
    parents: Sequence[argparse.ArgumentParser],
    sampling: argparse.ArgumentParser,
    simulate: argparse.ArgumentParser,
) -> None:
    """Register ``record`` and ``history`` on the CLI's sub-command parser (``history --simulate``
    reads the simulated GPUs' own store)."""
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument(
        "--store",
        metavar="DIR",
        type=_store_path,
        help=translate("cli", "the history folder (default: in your state folder)"),
    )
    record = commands.add_parser(
        "record",
        parents=[*parents, sampling, store],
        help=translate("cli", "write the history store without the tray (servers)"),
    )
    record.add_argument("--count", type=int, metavar="N", help=argparse.SUPPRESS)  # tests: stop after N samples
    history = commands.add_parser(
        "history", parents=[simulate, store], help=translate("cli", "export stored history as CSV (the columns of log)")
    )
    when = history.add_mutually_exclusive_group()
    when.add_argument("--since", metavar="AGO", help=translate("cli", "e.g. 90m, 2h, 3d (default 1h)"))
    when.add_argument(
        "--from",
        dest="start",
        metavar="TIME",
        help=translate("cli", "ISO date and time, local unless it says its zone"),
    )
    history.add_argument("--to", dest="end", metavar="TIME", help=translate("cli", "with --from (default: now)"))
    history.add_argument(
        "--csv", metavar="FILE", default="-", help=translate("cli", "the CSV file, or - for standard output (default)")
    )
    history.add_argument(
        "--query", metavar="FIELDS", help=translate("cli", "comma-separated nvidia-smi field names, as for log")
    )
    history.add_argument("--gpu", type=int, metavar="N", help=translate("cli", "only the GPU with this index"))
    history.add_argument("--nounits", action="store_true", help=translate("cli", "values without units"))
    history.add_argument(
        "--stats", action="store_true", help=translate("cli", "print the span, samples and bytes stored, and exit")
    )
    history.add_argument(
        "--processes",
        action="store_true",
        help=translate("cli", "export the GPU processes' memory and SM share instead of the GPUs' metrics"),
    )


def _store_path(text: str) -> Path:
    if not text.strip():  # Path("") is the working folder: a shell variable left empty is not a choice of it
        raise argparse.ArgumentTypeError(translate("cli", "wants the path of a folder"))
    return Path(text)


def record(args: argparse.Namespace, simulation: SimSpec | None, settings: Settings) -> int:
    """Sample at ``args.interval`` into the store until Ctrl-C or SIGTERM; 2 when another process writes it."""
    from trayvml.commands.history import _folder  # numpy and sqlite3: not for every command's parser
    from trayvml.core.demand import HISTORY, PROCESSES, StoreLists
    from trayvml.history.disk.write import StoreWriter
    from trayvml.source import Source

    interval_s = args.interval if args.interval is not None else settings.sampling_interval_s
    writer = StoreWriter(
        _folder(args, simulation is not None), settings.history_limits
    )  # raises StoreLockedError with the holder's pid
    said: str | None = None  # the store's problem, as last said
    stalled = ""  # the GPUs' problem's headline, as last said ("": none)
    # systemd stops a unit with SIGTERM, and an SSH session that drops sends SIGHUP: flush first.
    # (A signal ignored when it started, SIGHUP under nohup, stays ignored.)
    previous = {
        number: signal.signal(number, _interrupt)
        for number in _STOPPING
        if number != signal.SIGINT and signal.getsignal(number) is not signal.SIG_IGN
    }
    source = Source(simulation, host=True, stall_after_s=args.timeout)
    ticks = 0
    monitor, push = _alerts(settings, source.clock, interval_s, simulation is not None)
    # What the tray's store reads, no more: every metric the history keeps, not GPM's activity
    # (its counters are DCGM's profiling counters too, and a server is where DCGM runs) unless an
    # alert rule watches it, nor the energy counter (4-5 ms of the driver's CPU a read, on an H200);
    # the process lists every STORE_PROCESSES_S for the history's processes.
    lists = StoreLists()
    try:
        ticker = Ticker(interval_s, source.clock, mid_slot=True)  # the store files samples by slot, as the rings do
        recording = translate("record", "trayvml: recording to {folder} every {seconds} s")
        print(recording.format(folder=writer.folder, seconds=f"{interval_s:g}"), file=sys.stderr)
        while args.count is None or ticks < args.count:
            if ticks:
                ticker.wait_next()
            wanted = set(HISTORY) | (monitor.needs() if monitor is not None else set())
            if settings.process_history_per_gpu > 0 and lists.due(source.clock.now_s()):
                wanted.add(PROCESSES)
            sample = source.sample(frozenset(wanted))
            # Said once a spell, by its headline: the sentence counts the seconds of a stall, and
            # each tick said it again (thousands of journal lines for a GPU stuck for hours).
            headline = sample.problem[0] if sample.problem is not None else ""
            if headline and headline != stalled:
                told = translate("record", "trayvml: {problem} (the host is still recorded)")
                print(told.format(problem=sample.problem[1] if sample.problem else ""), file=sys.stderr)
            elif stalled and not headline:
                print(translate("record", "trayvml: the GPUs answer again."), file=sys.stderr)
            stalled = headline
            writer.append(sample)
            if monitor is not None and push is not None:
                for notice in monitor.take(sample).notices:  # grouped and worded as on the desktop
                    push.notify(notice)
            if writer.problem is not None and writer.problem != said:
                said = writer.problem
                print(f"trayvml: {said}", file=sys.stderr)
            ticks += 1
    except KeyboardInterrupt:
        pass
    finally:
        # Closing may take a while (the packer, the push queue): a second signal meanwhile, as
        # `timeout` sends to its whole group, ended the recorder half closed.
        stopping = {number: signal.signal(number, signal.SIG_IGN) for number in _STOPPING}
        try:
            source.close()
            writer.close()
            if push is not None:
                push.close()  # what is queued gets its try before the recorder exits
        finally:
            for number, handler in {**stopping, **previous}.items():
                signal.signal(number, handler)
    if writer.saved < ticks:
        # Not "N samples recorded" when they were not: what was lost, why, and a failing exit.
        lost = translate("record", "{saved} of {count} samples recorded; the rest could not be written ({problem})")
        problem = writer.problem or said or translate("record", "the store was not writable")
        raise TrayvmlError(lost.format(saved=writer.saved, count=ticks, problem=problem))
    recorded = (
        translate("record", "trayvml: {count} samples recorded")
        if ticks != 1
        else translate("record", "trayvml: {count} sample recorded")
    )
    print(recorded.format(count=ticks), file=sys.stderr)
    return 0


def _alerts(
    settings: Settings, clock: Clock, interval_s: float, simulated: bool
) -> tuple[Monitor | None, PushNotifier | None]:
    """The alert pipeline and the push notifier, where the settings name push destinations (a
    server has no desktop: this is how its alerts reach anyone). None, None where there are none."""
    if not settings.push:
        return None, None
    from trayvml.alerts.dispatch import Dispatcher
    from trayvml.history.rings import Tier
    from trayvml.history.timeline import History
    from trayvml.monitor.pipeline import Monitor
    from trayvml.platform.push import PushNotifier, default_status_file

    # The recorder writes the history itself: the monitor's own needs only a few samples' worth.
    tiers = (Tier(max(1.0, interval_s), 16),)
    # Its lists read every STORE_PROCESSES_S: an alert that names processes waits for them (Monitor.needs).
    monitor = Monitor(Dispatcher(clock, ready=True), settings.alerts, lambda: History(tiers), processes_on_demand=True)
    return monitor, PushNotifier(settings.push, clock, status_file=default_status_file(simulated), simulated=simulated)


# The signals that stop a recorder (SIGHUP where the platform has it).
_STOPPING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def _interrupt(signum: int, frame: object) -> None:
    for number in _STOPPING:  # the first stops it: a second, before the close ignores them, would not close it
        signal.signal(number, signal.SIG_IGN)
    raise KeyboardInterrupt
