"""What the window exports: the visible range as CSV (every plotted series, joined on time) or a PNG."""

from __future__ import annotations

import csv
import io
import math
from datetime import datetime
from pathlib import Path

import numpy as np
from PySide6.QtCore import QBuffer, QByteArray, QCoreApplication, QIODevice
from PySide6.QtWidgets import QWidget

from trayvml.config import write_atomically
from trayvml.core.metrics import HOST_METRIC_BY_KEY
from trayvml.history.rings import Series
from trayvml.history.timeline import History
from trayvml.ui.plots import GPU_PANELS, HOST_PANELS

translate = QCoreApplication.translate  # the name pyside6-lupdate looks for (scripts/translations)


def export_csv(history: History, gpu_count: int, start_s: float, end_s: float, points: int, path: str) -> None:
    """Every plotted series from ``start_s`` to ``end_s`` (at most about ``points`` rows a series),
    written atomically. OSError when there is nothing to write or the file cannot be written."""
    columns: list[tuple[str, Series, int]] = []
    for spec in GPU_PANELS:
        for metric in spec.metrics:
            series = history.gpu_series(metric.key, start_s, end_s, points)
            if series is not None:
                columns.extend((f"gpu{g}.{metric.key}", series, g) for g in range(gpu_count))
    for spec in HOST_PANELS:
        for metric in spec.metrics:
            series = history.host_series(metric.key, start_s, end_s, points)
            if series is not None:
                columns.append((f"host.{HOST_METRIC_BY_KEY[metric.key].key}", series, 0))
    if not columns:
        raise OSError(translate("GraphWindow", "there is no data in the visible range yet"))
    # Joined on time: series from different tiers or sources have different sample times, so
    # one row per time any series has, with empty cells where a series has no value then.
    times = np.unique(np.concatenate([series.times_s for _, series, _ in columns]))
    table = np.full((len(times), len(columns)), np.nan)
    for k, (_, series, column) in enumerate(columns):
        table[np.searchsorted(times, series.times_s), k] = series.mean[:, column]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["time", *(name for name, _, _ in columns)])
    for t, row in zip(times, table, strict=True):
        values = ["" if math.isnan(v) else f"{v:.6g}" for v in row]
        # With its UTC offset: local times without one repeat an hour where the clocks go back.
        writer.writerow([datetime.fromtimestamp(float(t)).astimezone().isoformat(timespec="seconds"), *values])
    write_atomically(Path(path), buffer.getvalue().encode())


def export_png(widget: QWidget, path: str) -> None:
    """A picture of ``widget`` as shown, PNG whatever the name, written atomically (saved in place,
    a full disk left the file it replaced cut short). OSError when it cannot be written."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not widget.grab().save(buffer, "PNG"):
        raise OSError(translate("GraphWindow", "could not write {path}").format(path=path))
    write_atomically(Path(path), bytes(data.data()))
