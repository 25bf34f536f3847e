"""The application-menu entry and the icons: ``trayvml desktop install|uninstall`` (freedesktop systems).

Where the freedesktop specifications put a user's own applications and icons (Desktop Entry
Specification, Icon Theme Specification): the launcher as ``$XDG_DATA_HOME/applications/trayvml.desktop``
and the icon as ``$XDG_DATA_HOME/icons/hicolor/<N>x<N>/apps/trayvml.png`` at every size, plus
``scalable/apps/trayvml.svg``. That makes ``Icon=trayvml`` resolve, in the launcher and in the
autostart entry alike. Distribution packages put the same files under ``/usr/share`` instead
(README, "For distribution packagers").

A manifest records each file written with its digest and each folder made. Uninstall removes the
files that are still as written and the folders that are empty again, and nothing else: a file the
user has changed since stays, and so does anything another program put beside ours.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from trayvml.assets import ICON_SIZES, resource
from trayvml.config import write_atomically
from trayvml.core.i18n import translate
from trayvml.platform.autostart import APP_ID, command, desktop_exec_quote, desktop_string

log = logging.getLogger(__name__)
MANIFEST_NAME = "desktop-files.json"
MANIFEST_VERSION = 1
PUBLISHED_MODE = 0o644  # a launcher and icons, as the packages install them
CACHE_TOOL_WAIT_S = 10.0  # a cache tool on a slow or hung file system must not hold the command


class DesktopInstallError(Exception):
    """A sentence saying what could not be done."""


@dataclass
class Outcome:
    """What install or uninstall did: paths written or removed, and notes for the user."""

    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def data_home() -> Path:
    """``$XDG_DATA_HOME``, or ``~/.local/share`` where it is unset, empty or relative (Base Directory spec)."""
    value = os.environ.get("XDG_DATA_HOME", "")
    return Path(value) if os.path.isabs(value) else Path.home() / ".local" / "share"


def launcher_path(base: Path) -> Path:
    return base / "applications" / f"{APP_ID}.desktop"


def icon_theme_folder(base: Path) -> Path:
    return base / "icons" / "hicolor"


def manifest_path(base: Path) -> Path:
    return base / APP_ID / MANIFEST_NAME


def launcher_entry(config_path: str | None = None) -> str:
    """The packaged launcher (resources/trayvml.desktop), its Exec pointing at this very installation.

    A pipx or virtual-environment install is rarely on the PATH a desktop session starts programs
    with, so the entry names this Python by its full path; TryExec hides the entry once it is gone.
    """
    args = command(config_path)
    exec_line = desktop_string(" ".join(desktop_exec_quote(a) for a in args))  # as the autostart entry's
    lines = []
    for line in resource(f"{APP_ID}.desktop").read_text(encoding="utf-8").splitlines():
        if line.startswith("Exec="):
            lines.append(f"TryExec={desktop_string(args[0])}")
            line = f"Exec={exec_line}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def planned_files(base: Path, config_path: str | None = None) -> dict[Path, bytes]:
    """Every file install writes, with its content."""
    hicolor = icon_theme_folder(base)
    files = {launcher_path(base): launcher_entry(config_path).encode("utf-8")}
    for size in ICON_SIZES:
        files[hicolor / f"{size}x{size}" / "apps" / f"{APP_ID}.png"] = resource(f"{APP_ID}-{size}.png").read_bytes()
    files[hicolor / "scalable" / "apps" / f"{APP_ID}.svg"] = resource(f"{APP_ID}.svg").read_bytes()
    return files


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(base: Path) -> tuple[dict[str, str], list[str]]:
    """Files (path to digest) and folders a previous install recorded; empty where there was none."""
    path = manifest_path(base)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, []
    except (OSError, ValueError) as error:
        unreadable = translate("desktop", "The list of installed files {path} cannot be read ({error}).")
        raise DesktopInstallError(unreadable.format(path=path, error=error)) from None
    foreign = translate("desktop", "The list of installed files {path} is not one this trayvml wrote.")
    if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
        raise DesktopInstallError(foreign.format(path=path))
    files, folders = data.get("files", {}), data.get("folders", [])
    if not isinstance(files, dict) or not isinstance(folders, list):
        raise DesktopInstallError(foreign.format(path=path))
    return {str(k): str(v) for k, v in files.items()}, [str(f) for f in folders]


def _someone_elses(path: Path, digest: str | None, planned: bytes) -> bool:
    """Whether ``path`` holds a file trayvml must not write over: one there that no install
    recorded (a launcher of the user's own, which uninstall then removed as trayvml's) or changed
    since (an edited Name= went back at every install), unless it holds what is planned."""
    try:
        there = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return False  # none there (the write says why it cannot be made)
    except OSError:
        return True
    return there != planned and (digest is None or _digest(there) != digest)


def _still_ours(path: Path, digest: str) -> bool:
    try:
        return _digest(path.read_bytes()) == digest
    except OSError:
        return False


def _make_folders(folder: Path, made: list[str]) -> None:
    """Make ``folder`` and its missing parents, recording each one made (outermost first)."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
        if str(path) not in made:
            made.append(str(path))


def install(base: Path | None = None, config_path: str | None = None) -> Outcome:
    """Write the launcher and icons under ``base`` (default: ``data_home()``). Raises DesktopInstallError."""
    base = base or data_home()
    recorded, folders = _read_manifest(base)  # an earlier install's files stay recorded until replaced
    planned = {str(path): data for path, data in planned_files(base, config_path).items()}
    outcome = Outcome()
    try:
        for name, data in planned.items():
            if _someone_elses(Path(name), recorded.get(name), data):
                left = translate("desktop", "{path} was not written by trayvml, or was changed since: left as it is.")
                outcome.notes.append(left.format(path=name))
                continue
            _make_folders(Path(name).parent, folders)
            write_atomically(Path(name), data, PUBLISHED_MODE)
            recorded[name] = _digest(data)
            outcome.files.append(Path(name))
        # Files an earlier version wrote and this one does not (another set of sizes, say) go now.
        for name in [n for n in recorded if n not in planned]:
            if _still_ours(Path(name), recorded.pop(name)):
                Path(name).unlink()
    except OSError as error:
        # What was written is recorded all the same, so that uninstall can remove it.
        with contextlib.suppress(OSError):
            _write_manifest(base, recorded, folders)
        failed = translate("desktop", "Could not write {path}: {error}.")
        raise DesktopInstallError(failed.format(path=error.filename or base, error=error.strerror or error)) from None
    try:
        _write_manifest(base, recorded, folders)
    except OSError as error:
        failed = translate("desktop", "Could not write {path}: {error}.")
        raise DesktopInstallError(failed.format(path=manifest_path(base), error=error.strerror or error)) from None
    outcome.notes += _refresh_caches(base)
    return outcome


def _write_manifest(base: Path, files: dict[str, str], folders: list[str]) -> None:
    _make_folders(manifest_path(base).parent, folders)
    manifest = {"version": MANIFEST_VERSION, "files": files, "folders": folders}
    write_atomically(manifest_path(base), json.dumps(manifest, indent=1).encode("utf-8"))


def uninstall(base: Path | None = None) -> Outcome:
    """Remove what install wrote under ``base`` and is still as written. Raises DesktopInstallError."""
    base = base or data_home()
    files, folders = _read_manifest(base)
    outcome = Outcome()
    if not files and not manifest_path(base).exists():
        nothing = translate("desktop", "Nothing to remove: no trayvml desktop files are recorded in {path}.")
        outcome.notes.append(nothing.format(path=manifest_path(base)))
        return outcome
    try:
        for name, digest in files.items():
            path = Path(name)
            if _still_ours(path, digest):
                path.unlink()
                outcome.files.append(path)
            elif path.exists():
                left = translate("desktop", "Left {path} in place: it has changed since trayvml wrote it.")
                outcome.notes.append(left.format(path=path))
        manifest_path(base).unlink(missing_ok=True)
    except OSError as error:
        failed = translate("desktop", "Could not remove {path}: {error}.")
        raise DesktopInstallError(failed.format(path=error.filename, error=error.strerror or error)) from None
    for name in reversed(folders):  # innermost first; a folder something else now uses stays
        with contextlib.suppress(OSError):
            Path(name).rmdir()
    outcome.notes += _refresh_caches(base)
    return outcome


def _refresh_caches(base: Path) -> list[str]:
    """Bring up to date the caches that exist beside our files; notes where that failed.

    A stale icon cache hides a new icon from GTK, so one that exists is rebuilt. Where there is
    none, desktops read the folders themselves, and making one would leave behind a file that is
    neither ours to remove nor needed. The same holds for the launcher folder's mimeinfo.cache.
    """
    notes = []
    hicolor = icon_theme_folder(base)
    applications = launcher_path(base).parent
    jobs = (
        (hicolor / "icon-theme.cache", ["gtk-update-icon-cache", "--quiet", "--force", str(hicolor)]),
        (applications / "mimeinfo.cache", ["update-desktop-database", "--quiet", str(applications)]),
    )
    for cache, tool in jobs:
        if not cache.exists() or shutil.which(tool[0]) is None:
            continue
        try:
            result = subprocess.run(tool, capture_output=True, text=True, timeout=CACHE_TOOL_WAIT_S, check=False)
        except subprocess.TimeoutExpired:
            late = translate("desktop", "{tool} did not finish within {seconds} s: {cache} may be out of date.")
            notes.append(late.format(tool=tool[0], seconds=f"{CACHE_TOOL_WAIT_S:g}", cache=cache))
            continue
        except OSError as error:
            failed = translate("desktop", "{tool} could not run ({error}): {cache} may be out of date.")
            notes.append(failed.format(tool=tool[0], error=error.strerror or error, cache=cache))
            continue
        if result.returncode != 0:
            status = translate("desktop", "exit status {code}").format(code=result.returncode)
            said = result.stderr.strip().splitlines()[-1:] or [status]
            failed = translate("desktop", "{tool} failed ({reason}): {cache} may be out of date.")
            notes.append(failed.format(tool=tool[0], reason=said[0], cache=cache))
    return notes


def supported() -> bool:
    """Application menus and icon themes of the freedesktop kind: Linux and the BSDs."""
    return sys.platform not in ("win32", "darwin")
