"""The tray app's writer of the history on disk (none while a `trayvml record` holds the store: it reads instead)."""

from __future__ import annotations

import logging
from pathlib import Path

from trayvml.core.clock import due
from trayvml.core.i18n import translate
from trayvml.core.sample import Sample
from trayvml.history.disk.limits import Limits
from trayvml.history.disk.write import StoreLockedError, StoreWriter

log = logging.getLogger(__name__)

LOCK_RETRY_S = 60.0  # how often a tray app that reads a recorder's store looks whether it still runs


class Recording:
    """The tray's writer (none while a ``trayvml record`` holds the store: it reads instead).

    Used from the sampler thread. ``note`` is a sentence for the user, or None.
    """

    def __init__(self, folder: Path, limits: Limits) -> None:
        self.folder = folder
        self.limits = limits
        self.writer: StoreWriter | None = None
        self.note: str | None = None
        self._try_again_s = 0.0  # while a recorder writes: when to look whether it has stopped
        self._take_over(0.0)
        if self.note:
            log.warning("%s", self.note)

    def _take_over(self, now_s: float) -> None:
        """Become the writer, unless another process is (then try again in LOCK_RETRY_S)."""
        self._try_again_s = now_s + LOCK_RETRY_S
        try:
            self.writer = StoreWriter(self.folder, self.limits)
            self.note = self.writer.problem
        except StoreLockedError as error:
            self.note = translate("store", "{problem} The window shows what it writes.").format(problem=error)
        except OSError as error:  # the lock file itself cannot be made: memory only, said once
            self.note = translate("store", "History is kept in memory only: cannot write {folder} ({reason}).").format(
                folder=self.folder, reason=error.strerror
            )

    def append(self, sample: Sample) -> str | None:
        """Write ``sample``; returns the note when it changed ("" once a problem cleared), else None."""
        if self.writer is None:
            if not due(sample.timestamp_s, self._try_again_s, LOCK_RETRY_S):
                return None
            before_note = self.note
            self._take_over(sample.timestamp_s)  # the recorder may have stopped: then this app writes
            if self.writer is None:
                return None
            log.warning("writing the history to %s (no other process does now)", self.folder)
            return self.note or "" if before_note else None
        before = self.writer.problem
        self.writer.append(sample)
        after = self.writer.problem
        if after != before:
            self.note = after
            return after or ""
        return None

    def set_limits(self, limits: Limits) -> None:
        """New spans and size cap (the settings changed): the writer's next pruning keeps to them."""
        self.limits = limits
        if self.writer is not None:
            self.writer.limits = limits

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
