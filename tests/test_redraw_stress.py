"""Many plots redrawn many times: with pyqtgraph 0.14.0, PySide6 6.12.0 aborted the process
("Fatal Python error: none_dealloc") after about 20 such redraws. pyproject.toml's version ranges
exclude that pair; this keeps them honest.
"""

from __future__ import annotations

from tests.ui_helpers import filled_history, shown_window
from trayvml.ui.window import RANGES_S


def test_eight_gpus_all_panels_one_hundred_redraws(qtbot) -> None:
    history, sample = filled_history("training:gpus=h100*8", 3 * 3600, step_s=5, host=False)
    window = shown_window(qtbot, history, sample, 1200, 900)
    lines = sum(len(pens) for p in window.gpu_page.panels for pens in p.pens)  # a line per GPU and metric
    assert lines >= 8 * 15
    scroll = window.gpu_page.verticalScrollBar()
    for k in range(100):
        scroll.setValue(scroll.maximum() * (k % 4) // 3)  # every panel gets redrawn in turn
        window.set_range(RANGES_S[k % len(RANGES_S)][1])
        window.finish_redraw()
        window.gpu_page.layout_widget.grab()  # paints every plot
    assert window.redraws >= 100
