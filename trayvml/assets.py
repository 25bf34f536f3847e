"""Paths of the files in resources/: installed as the package ``trayvml.resources`` in a wheel,
read from the checkout's top-level folder when running from source (editable installs too).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

ICON_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)  # scripts/render-icons renders each from trayvml.svg
_CHECKOUT = Path(__file__).resolve().parent.parent / "resources"


def resource(name: str) -> Path:
    try:
        return Path(str(files("trayvml.resources").joinpath(name)))
    except ModuleNotFoundError:
        return _CHECKOUT / name


def icon_paths() -> list[Path]:
    return [resource(f"trayvml-{size}.png") for size in ICON_SIZES]
