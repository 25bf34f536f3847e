"""What every alert shares: its severity, the direction of a threshold, a machine-wide alert's index and how a
remote host names itself in a title."""

from __future__ import annotations

import enum

from trayvml.core.i18n import translate

MACHINE = -1  # the "GPU index" of alerts about the whole machine (the driver), not one GPU


class Severity(enum.IntEnum):
    INFO = 0
    WARNING = 1
    CRITICAL = 2


class Direction(enum.Enum):
    ABOVE = "above"  # e.g. temperature: alarming when high
    BELOW = "below"  # e.g. free memory: alarming when low


def host_prefix(host: str) -> str:
    """A remote host's name before an alert's title; nothing for this machine."""
    return translate("alerts", "{host}: ").format(host=host) if host else ""


def _in_sentence(label: str) -> str:
    """A label as it reads after a colon: 'Memory free' -> 'memory free'; 'GPU lost' stays."""
    return label if label[1:2].isupper() else label[:1].lower() + label[1:]
