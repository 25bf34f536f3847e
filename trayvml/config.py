"""Settings: a declarative schema, stored as a human-readable TOML file written atomically.

A file that cannot be parsed or holds invalid values is moved aside (never overwritten), the
defaults are used, and the caller gets one sentence to show the user.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import tomli_w

from trayvml.alerts import RULE_BY_KEY, RULES, AlertSettings, RuleSettings, validate

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TRAY_METRICS = ("utilization", "memory", "temperature", "power")


@dataclass(frozen=True)
class Setting:
    """One general setting: its default, type, bounds and what it means."""

    key: str
    label: str
    default: Any
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    description: str = ""


GENERAL: tuple[Setting, ...] = (
    Setting(
        "sampling_interval_s",
        "Sampling interval (s)",
        1.0,
        0.5,
        60.0,
        description="How often GPUs are read. NVML refreshes utilization about once a second.",
    ),
    Setting("history_hours", "History length (h)", 12, 1, 24, description="How far back the graphs reach."),
    Setting("tray_metric", "Tray icon shows", "utilization", choices=TRAY_METRICS),
    Setting("notifications", "Desktop notifications", True, description="Alerts still show in the window."),
    Setting("start_at_login", "Start at login", False),
)
GENERAL_BY_KEY = {s.key: s for s in GENERAL}


@dataclass(frozen=True)
class Settings:
    sampling_interval_s: float = 1.0
    history_hours: int = 12
    tray_metric: str = "utilization"
    notifications: bool = True
    start_at_login: bool = False
    hidden_gpus: tuple[int, ...] = ()
    alerts: AlertSettings = field(default_factory=AlertSettings)


class SettingsError(ValueError):
    """A settings file or value that cannot be used; the message is a sentence for the user."""


def problems(settings: Settings) -> list[str]:
    """Every reason ``settings`` cannot be used (empty when it is fine)."""
    found = []
    for setting in GENERAL:
        value = getattr(settings, setting.key)
        if setting.choices and value not in setting.choices:
            found.append(f"{setting.label}: {value!r} is not one of {', '.join(setting.choices)}.")
        if setting.minimum is not None and not setting.minimum <= value <= (setting.maximum or math.inf):
            found.append(f"{setting.label}: {value} is outside {setting.minimum:g}–{setting.maximum:g}.")
    for kind in RULES:
        found += validate(kind, settings.alerts.rules.get(kind.key, kind.defaults))
    for gpu, rules in settings.alerts.overrides.items():
        for key, rule in rules.items():
            found += [f"GPU {gpu}: {p}" for p in validate(RULE_BY_KEY[key], rule)]
    return found


def default_path() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("trayvml", appauthor=False)) / "config.toml"


# ---- TOML <-> Settings ----
def _rule_to_toml(rule: RuleSettings, base: RuleSettings | None = None) -> dict[str, Any]:
    """All fields, or only those differing from ``base`` (for per-GPU overrides)."""
    table = {}
    for f in fields(RuleSettings):
        value = getattr(rule, f.name)
        if base is not None and _same(value, getattr(base, f.name)):
            continue
        table[f.name] = value
    return table


def _same(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def to_toml(settings: Settings) -> str:
    document: dict[str, Any] = {s.key: getattr(settings, s.key) for s in GENERAL}
    document["hidden_gpus"] = list(settings.hidden_gpus)
    document["alerts"] = {kind.key: _rule_to_toml(settings.alerts.rules.get(kind.key, kind.defaults)) for kind in RULES}
    overrides = {
        str(gpu): {"alerts": {key: _rule_to_toml(rule, settings.alerts.rules[key]) for key, rule in rules.items()}}
        for gpu, rules in settings.alerts.overrides.items()
    }
    if overrides:
        document["gpus"] = overrides
    header = "# trayvml settings. Edit with Settings… in the tray menu, or here while trayvml is not running.\n"
    return header + tomli_w.dumps(document)


def _typed(setting: Setting, value: Any) -> Any:
    expected = type(setting.default)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise SettingsError(f"{setting.key} should be {expected.__name__}, not {value!r}")
    return value


def _rule_from_toml(table: Any, base: RuleSettings, where: str) -> RuleSettings:
    if not isinstance(table, dict):
        raise SettingsError(f"{where} should be a table")
    changes: dict[str, Any] = {}
    names = {f.name: f for f in fields(RuleSettings)}
    for name, value in table.items():
        if name not in names:
            raise SettingsError(f"{where} has an unknown setting {name!r}")
        if name == "enabled":
            if not isinstance(value, bool):
                raise SettingsError(f"{where}.enabled should be true or false")
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise SettingsError(f"{where}.{name} should be a number")
        changes[name] = float(value) if name != "enabled" else value
    return replace(base, **changes)


def from_toml(text: str) -> Settings:
    """Parse and check a settings file; raises SettingsError naming the problem."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"it is not valid TOML ({error})") from None
    values: dict[str, Any] = {}
    for key, value in document.items():
        if key in GENERAL_BY_KEY:
            values[key] = _typed(GENERAL_BY_KEY[key], value)
        elif key == "hidden_gpus":
            if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise SettingsError("hidden_gpus should be a list of GPU indices")
            values[key] = tuple(value)
        elif key not in ("alerts", "gpus"):
            raise SettingsError(f"it has an unknown setting {key!r}")
    alerts = document.get("alerts", {})
    if not isinstance(alerts, dict):
        raise SettingsError("alerts should be a table")
    rules = {}
    for kind in RULES:
        rules[kind.key] = _rule_from_toml(alerts.get(kind.key, {}), kind.defaults, f"alerts.{kind.key}")
    for key in alerts:
        if key not in RULE_BY_KEY:
            raise SettingsError(f"alerts has an unknown rule {key!r}")
    overrides: dict[int, dict[str, RuleSettings]] = {}
    for gpu_text, table in document.get("gpus", {}).items():
        if not gpu_text.isdigit() or not isinstance(table, dict):
            raise SettingsError(f"gpus.{gpu_text} should be a GPU index with a table")
        for key, rule in table.get("alerts", {}).items():
            if key not in RULE_BY_KEY:
                raise SettingsError(f"gpus.{gpu_text}.alerts has an unknown rule {key!r}")
            overrides.setdefault(int(gpu_text), {})[key] = _rule_from_toml(rule, rules[key], f"gpus.{gpu_text}.{key}")
    settings = Settings(**values, alerts=AlertSettings(rules=rules, overrides=overrides))
    found = problems(settings)
    if found:
        raise SettingsError(found[0].rstrip("."))
    return settings


# ---- the file ----
def write_atomically(path: Path, data: bytes) -> None:
    """A temporary file in the same folder, flushed to disk, then renamed over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class SettingsStore:
    def __init__(self, path: Path | None = None) -> None:
        self.custom = path is not None  # given with --config (autostart passes it on)
        self.path = path or default_path()

    def load(self) -> tuple[Settings, str]:
        """The settings, and a sentence for the user when the file had to be set aside ("" if not)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Settings(), ""
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            return Settings(), f"The settings file {self.path} could not be read ({reason}); defaults are in use."
        try:
            return from_toml(text), ""
        except SettingsError as error:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
            os.replace(self.path, aside)
            return Settings(), (
                f"The settings file {self.path} could not be used: {error}. "
                f"It was moved to {aside.name} and defaults are in use."
            )

    def save(self, settings: Settings) -> None:
        found = problems(settings)
        if found:
            raise SettingsError(found[0])
        write_atomically(self.path, to_toml(settings).encode("utf-8"))
