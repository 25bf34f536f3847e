"""History on disk: every metric of every GPU (by UUID) and the host, a day of seconds and a week of
minutes, in a few bytes per minute per metric. Core layer: numpy, zstandard and SQLite, no Qt."""

from __future__ import annotations

from pathlib import Path


def default_folder(simulated: bool = False) -> Path:
    """Where the history lives: the user's state folder (``~/.local/state/trayvml/history`` on Linux).

    Simulated GPUs keep theirs apart (``history-simulated``), so that trying ``--simulate`` never
    puts made-up GPUs into the history of the real ones, nor waits on the real recorder's lock.
    Here, away from the heavy modules, so that the tray app can name it without importing numpy."""
    from trayvml.core.files import state_folder

    return state_folder() / ("history-simulated" if simulated else "history")
