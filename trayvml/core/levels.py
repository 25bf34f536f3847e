"""How alarming a GPU looks at a glance: what colours the tray icon and the summary.

A GPU's level comes from the alert rules and thresholds (``trayvml.alerts.gpu_level``), so the
icon never says more or less than the settings do.
"""

from __future__ import annotations

import enum


class Level(enum.IntEnum):
    NORMAL = 0
    WARNING = 1
    CRITICAL = 2
    LOST = 3
