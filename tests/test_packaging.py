"""The package as it is published and installed: built with `python -m build`, checked by twine,
installed with pipx into an empty environment, and run from there.

The build and the install happen once per session (about a minute, most of it pip installing
the dependencies into the new environment); every test here then looks at one side of them.
"""

from __future__ import annotations

import email
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD_WAIT_S = 600  # generous: pip fetches setuptools (build) and PySide6 (install) on a cold cache

pytestmark = pytest.mark.packaging
# What a checkout holds besides its sources: environments, caches, build output, screenshots.
UNPACKAGED = (".git", ".venv", "*.egg-info", "build", "dist", "__pycache__", ".*_cache", "out", ".gl", ".whl")


def _clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without what would make Python find this checkout instead of the install."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, **extra}


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An sdist and a wheel built as a publisher builds them (the wheel from the sdist, isolated)."""
    out = tmp_path_factory.mktemp("dist")
    # From a copy: building an sdist leaves trayvml.egg-info in the source folder.
    source = tmp_path_factory.mktemp("source") / "trayvml"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*UNPACKAGED))
    result = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=BUILD_WAIT_S,
        env=_clean_env(),
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def wheel(dist: Path) -> Path:
    (built,) = dist.glob("trayvml-*.whl")
    return built


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the commands pipx made, from an environment holding only trayvml and its dependencies."""
    home = tmp_path_factory.mktemp("pipx")
    env = _clean_env(PIPX_HOME=str(home / "home"), PIPX_BIN_DIR=str(home / "bin"), PIPX_MAN_DIR=str(home / "man"))
    result = subprocess.run(
        [sys.executable, "-m", "pipx", "install", "--python", sys.executable, str(wheel)],
        capture_output=True,
        text=True,
        timeout=BUILD_WAIT_S,
        env=env,
        cwd=home,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return home / "bin"


def _run(installed: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(installed / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_clean_env(),
        cwd=installed,  # not the checkout: nothing of it may be imported
        check=False,
    )


def test_the_wheel_ships_every_package_and_resource(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "trayvml").rglob("__init__.py")}
    for package in packages:
        assert f"{package}/__init__.py" in names, f"{package} is missing from the wheel"
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "trayvml").rglob("*.py")}
    assert modules <= names
    resources = [p.relative_to(ROOT / "resources").as_posix() for p in (ROOT / "resources").rglob("*") if p.is_file()]
    assert len(resources) > 10  # the icons at every size, the SVG, the launcher
    for resource in resources:  # translations and other folders included
        assert f"trayvml/resources/{resource}" in names, f"resources/{resource} is missing from the wheel"
    # The MIT licence asks that its text travel with every copy.
    (licence,) = (n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    assert zipfile.ZipFile(wheel).read(licence) == (ROOT / "LICENSE").read_bytes()


def test_the_source_archive_holds_every_tracked_file_so_its_tests_run(dist: Path) -> None:
    (sdist,) = dist.glob("trayvml-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False)
    if listed.returncode != 0 or not listed.stdout:
        pytest.skip("not a git checkout (the tests run from a source archive): nothing to compare with")
    tracked = listed.stdout.split()
    missing = sorted(set(tracked) - names)
    assert not missing, f"the source archive lacks {missing[:10]}"  # conftest.py and tests/helpers.py among them once


def test_the_metadata_is_complete_and_the_long_description_has_no_relative_links(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    (name,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
    metadata = email.message_from_bytes(archive.read(name))
    assert metadata["License-Expression"] == "MIT"
    assert metadata["Author"] or metadata["Author-email"]
    assert metadata["Keywords"]
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL", []))
    assert {"Homepage", "Source", "Issues", "Changelog"} <= set(urls)
    classifiers = metadata.get_all("Classifier", [])
    for prefix in ("Programming Language :: Python :: 3.1", "Operating System ::", "Topic ::"):
        assert any(c.startswith(prefix) for c in classifiers), prefix
    description = metadata.get_payload()
    assert isinstance(description, str) and description.startswith("# trayvml")
    # PyPI shows the README without the repository: a relative picture or link there is broken.
    targets = re.findall(r"\]\(([^)\s]+)", description) + re.findall(r'src="([^"]+)"', description)
    assert targets, "no links found: the check would pass on anything"
    relative = [t for t in targets if not t.startswith(("https://", "http://", "#", "mailto:"))]
    assert relative == []


def test_twine_accepts_what_was_built(dist: Path) -> None:
    files = sorted(str(p) for p in dist.iterdir())
    assert len(files) == 2  # the sdist and the wheel
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_installed_commands_answer(installed: Path) -> None:
    for command in ("trayvml", "trayvml-cli"):
        result = _run(installed, command, "--help")
        assert result.returncode == 0, result.stderr
        assert "snapshot" in result.stdout and "desktop" in result.stdout


def test_a_snapshot_from_the_installed_package(installed: Path) -> None:
    result = _run(installed, "trayvml", "snapshot", "--simulate")
    assert result.returncode == 0, result.stderr
    assert "H100" in result.stdout and "Traceback" not in result.stderr


def test_the_installed_package_reads_its_resources_from_itself(installed: Path) -> None:
    python = installed.parent / "home" / "venvs" / "trayvml" / "bin" / "python"
    script = (
        "from trayvml.assets import icon_paths, resource; "
        "print(resource('trayvml.svg')); "
        "assert all(p.stat().st_size > 100 for p in icon_paths()); "
        "assert resource('trayvml.desktop').is_file()"
    )
    result = subprocess.run(
        [str(python), "-c", script], capture_output=True, text=True, timeout=60, env=_clean_env(), cwd=installed
    )
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).is_relative_to(installed.parent / "home")  # not the checkout's resources/


def test_the_installed_package_puts_itself_in_the_menu(installed: Path, tmp_path: Path) -> None:
    """`trayvml desktop install` from a pipx install: a launcher that starts that install, and uninstall."""
    data = tmp_path / "data"
    env = _clean_env(XDG_DATA_HOME=str(data))

    def run(*args: str) -> subprocess.CompletedProcess:
        command = [str(installed / "trayvml"), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path, check=False)

    assert run("desktop", "install").returncode == 0
    entry = (data / "applications/trayvml.desktop").read_text()
    (exec_line,) = (line[5:] for line in entry.splitlines() if line.startswith("Exec="))
    launcher = shlex.split(exec_line)
    assert Path(launcher[0]).is_relative_to(installed.parent / "home")  # the pipx environment's Python
    started = subprocess.run(
        [*launcher, "snapshot", "--simulate"], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path
    )
    assert started.returncode == 0 and "H100" in started.stdout, started.stderr
    assert (data / "icons/hicolor/512x512/apps/trayvml.png").is_file()
    assert run("desktop", "uninstall").returncode == 0
    assert not data.exists()  # every folder install made, the data folder included, is gone again


@pytest.fixture
def sni_desktop() -> Iterator:
    from tests.desktop import running_desktop

    yield from running_desktop("sni", notifications=False)


@pytest.mark.desktop
def test_the_installed_tray_app_starts(installed: Path, sni_desktop) -> None:
    from tests.desktop import wait_until

    app = subprocess.Popen(
        [str(installed / "trayvml"), "--simulate"],
        env={k: v for k, v in sni_desktop.env.items() if k != "PYTHONPATH"},
        cwd=installed,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: bool(sni_desktop.sni_items()) or app.poll() is not None, what="the tray item")
        assert app.poll() is None, "the installed trayvml ended before its icon was registered"
        (service,) = sni_desktop.sni_items()
        wait_until(lambda: "H100" in sni_desktop.item_property(service, "ToolTip"), what="the first sample")
    finally:
        if app.poll() is None:
            app.send_signal(signal.SIGINT)
        try:
            _, err = app.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            app.kill()
            _, err = app.communicate()
    assert app.returncode == 0 and "Traceback" not in err, err


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-utils not installed")
def test_the_launcher_is_a_valid_desktop_entry() -> None:
    result = subprocess.run(
        ["desktop-file-validate", str(ROOT / "resources" / "trayvml.desktop")], capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout == "", result.stdout
