"""The user interface: Qt and pyqtgraph live here and nowhere else."""

from __future__ import annotations

import sys
from types import ModuleType


def _uses_pyside(module: ModuleType) -> bool:
    """Whether a module's source names PySide6, read from its file and not kept.

    PySide6's feature switch (PYSIDE-2029) asks this of every module imported after it, through
    ``inspect.getsource``, which leaves each module's lines in ``linecache`` for the life of the
    process: 9 MiB of the idle tray's memory. Same answer, nothing kept.
    """
    path = getattr(module, "__file__", None)
    if not isinstance(path, str) or not path.endswith(".py"):
        return False  # built in, or compiled: the original says no for these too
    try:
        with open(path, "rb") as source:
            return b"PySide6" in source.read()
    except OSError:
        return False


def _keep_no_module_sources() -> None:
    if "PySide6" in sys.modules:
        return  # too late: the modules imported so far were already read
    try:
        import shiboken6  # noqa: F401 - loads the feature module it carries
        from shibokensupport import feature
    except ImportError:
        return
    if callable(getattr(feature, "_mod_uses_pyside", None)):
        feature._mod_uses_pyside = _uses_pyside


_keep_no_module_sources()
