"""The wheel holds every package and the resources, and the launcher validates."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_ships_every_package_and_resource(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("trayvml-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "trayvml").rglob("__init__.py")}
    for package in packages:
        assert f"{package}/__init__.py" in names, f"{package} is missing from the wheel"
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "trayvml").rglob("*.py")}
    assert modules <= names
    for resource in (ROOT / "resources").rglob("*"):  # translations/ too
        if resource.is_file():
            assert f"trayvml/resources/{resource.relative_to(ROOT / 'resources').as_posix()}" in names
    # The MIT licence asks that its text travel with every copy.
    (licence,) = (n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    assert zipfile.ZipFile(wheel).read(licence) == (ROOT / "LICENSE").read_bytes()


def test_installed_resources_are_found() -> None:
    from trayvml.assets import icon_paths, resource

    assert resource("trayvml.svg").read_text().startswith("<svg")
    assert all(path.stat().st_size > 100 for path in icon_paths())


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-utils not installed")
def test_the_launcher_is_a_valid_desktop_entry() -> None:
    result = subprocess.run(
        ["desktop-file-validate", str(ROOT / "resources" / "trayvml.desktop")], capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout == "", result.stdout
