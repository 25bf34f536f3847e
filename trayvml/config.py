"""Settings: a declarative schema, stored as a human-readable TOML file written atomically.

A file that cannot be parsed or holds invalid values is moved aside (never overwritten), the
defaults are used, and the caller gets one sentence to show the user. Settings this version does
not know (a typo, or a file from a newer trayvml) are ignored with a note instead: the rest of the
file is used, and the file is copied aside before trayvml first overwrites it."""

from __future__ import annotations

import contextlib
import glob
import logging
import math
import os
import re
import reprlib
import stat
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import tomli_w

from trayvml.alerts.engine import AlertSettings, validate
from trayvml.alerts.rules import DEFAULT_CHANGED_IN, FORMER_DEFAULTS, RULE_BY_KEY, RULES, AnySettings, Rule
from trayvml.core.files import file_locked, read_bounded, remove_stale_temporaries, write_atomically
from trayvml.core.formatting import exact_text
from trayvml.core.i18n import CHOICES as LANGUAGE_CHOICES
from trayvml.core.i18n import QT_TRANSLATE_NOOP, translate
from trayvml.core.metrics import TRAY_METRICS
from trayvml.core.units import MIB
from trayvml.history.disk.limits import Limits

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

log = logging.getLogger(__name__)

# The shape of the file this version writes. Raise it when a key is renamed or deleted, and say how
# in RENAMED / DELETED (qutebrowser's configdata `renamed:` / `deleted:`), so older files still load.
# 3: a rule left at a former default takes today's (FORMER_DEFAULTS); 4: memory_free on by default
VERSION = 4
# Dotted paths; a rule path ("alerts.x" or "alerts.x.field") applies under every gpus.N table too.
RENAMED: dict[str, str] = {
    # Version 2: job_finished has settings of its own instead of threshold fields meaning other things.
    "alerts.job_finished.warning_enter": "alerts.job_finished.busy_above_percent",
    "alerts.job_finished.critical_enter": "alerts.job_finished.busy_for_s",
    "alerts.job_finished.warning_clear": "alerts.job_finished.idle_below_percent",
    "alerts.job_finished.hold_s": "alerts.job_finished.idle_for_s",
}
DELETED: frozenset[str] = frozenset({"alerts.job_finished.critical_clear", "alerts.job_finished.cooldown_s"})

MAX_FILE_BYTES = MIB  # a settings file is a few KiB; anything this big is not one
SAVE_LOCK_WAIT_S = 5.0  # another trayvml's save takes milliseconds: a lock held this long is stuck
NOTED_KEYS = 5  # a file full of unknown keys is named by its first few, not all of them
_GPU_INDEX = re.compile(r"[0-9]{1,4}")  # ASCII digits only: "²".isdigit() is True but int("²") fails


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
        QT_TRANSLATE_NOOP("settings", "Sampling interval (s)"),
        1.0,
        0.5,
        60.0,
        description=QT_TRANSLATE_NOOP(
            "settings",
            "How often this computer's GPUs are read (remote hosts: on the Remote hosts page). NVML refreshes "
            "utilization about once a second.",
        ),
    ),
    Setting(
        "history_hours",
        QT_TRANSLATE_NOOP("settings", "History length (h)"),
        12,
        1,
        24,
        description=QT_TRANSLATE_NOOP("settings", "How far back the graphs reach."),
    ),
    Setting(
        "tray_metric", QT_TRANSLATE_NOOP("settings", "Tray icon shows"), "utilization", choices=tuple(TRAY_METRICS)
    ),
    Setting(
        "notifications",
        QT_TRANSLATE_NOOP("settings", "Desktop notifications"),
        True,
        description=QT_TRANSLATE_NOOP("settings", "Alerts still show in the window."),
    ),
    Setting("start_at_login", QT_TRANSLATE_NOOP("settings", "Start at login"), False),
    Setting(
        "language",
        QT_TRANSLATE_NOOP("settings", "Language"),
        "system",
        choices=LANGUAGE_CHOICES,
        description=QT_TRANSLATE_NOOP(
            "settings",
            "The language of trayvml's menus, windows and messages; system: the desktop's. "
            "Takes effect at the next start.",
        ),
    ),
    Setting(
        "idle_gpu_poll_s",
        QT_TRANSLATE_NOOP("settings", "Read idle laptop GPUs every (s)"),
        30,
        0,
        600,
        description=QT_TRANSLATE_NOOP(
            "settings",
            "An idle laptop GPU is read this seldom, NVML let go in between, so that it can go to "
            "sleep (an open NVML handle keeps it awake, 5-25 W). 0: at the sampling interval.",
        ),
    ),
    # The history on disk (trayvml/history/disk): each second for the first span, minutes for the second.
    Setting(
        "history_on_disk",
        QT_TRANSLATE_NOOP("settings", "Keep history on disk"),
        True,
        description=QT_TRANSLATE_NOOP("settings", "In your state folder; trayvml record writes the same."),
    ),
    Setting(
        "history_fine_hours",
        QT_TRANSLATE_NOOP("settings", "Per-second history on disk (h)"),
        24,
        1,
        24 * 31,
    ),
    Setting(
        "history_coarse_days",
        QT_TRANSLATE_NOOP("settings", "Per-minute history on disk (days)"),
        7,
        1,
        3660,
    ),
    Setting(
        "history_size_mib",
        QT_TRANSLATE_NOOP("settings", "History size cap (MiB)"),
        512,
        16,
        1 << 20,
    ),
    Setting(
        "process_history_per_gpu",
        QT_TRANSLATE_NOOP("settings", "GPU processes kept on disk per GPU"),
        8,
        0,
        64,
        description=QT_TRANSLATE_NOOP(
            "settings",
            "The history on disk keeps the memory and SM share over time of this many processes of each "
            "GPU, the biggest ones. 0: none, and the tray reads no process lists for it.",
        ),
    ),
    Setting(
        "remote_interval_s",
        QT_TRANSLATE_NOOP("settings", "Read remote hosts every (s)"),
        5.0,
        1.0,
        60.0,  # as the sampling interval (energy and GPU time are summed across gaps of up to 90 s)
        description=QT_TRANSLATE_NOOP(
            "settings",
            "How often each remote host is read; its graphs have a point this often. Each read costs "
            "this computer and the host: a host whose exporter reads its GPUs when asked (trayvml serve) "
            "reads them each time.",
        ),
    ),
    Setting(
        "serve_metrics",
        QT_TRANSLATE_NOOP("settings", "Serve metrics to Prometheus"),
        False,
        description=QT_TRANSLATE_NOOP(
            "settings", "Serve the GPUs' metrics on http://127.0.0.1:8729/metrics, as `trayvml serve` does."
        ),
    ),
)
GENERAL_BY_KEY = {s.key: s for s in GENERAL}


def _default(key: str) -> Any:
    return GENERAL_BY_KEY[key].default  # one set of defaults: the schema's


# ---- push destinations: alerts that reach you away from the desk (trayvml/platform/push.py) ----
PUSH_KINDS = ("ntfy", "webhook", "slack", "email")  # slack: Slack's and Mattermost's incoming webhooks
SMTP_SECURITY = ("starttls", "ssl", "none")
SEVERITY_NAMES = ("info", "warning", "critical")
_QUIET_HOURS = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])-([01][0-9]|2[0-3]):([0-5][0-9])")


@dataclass(frozen=True)
class PushDestination:
    """Where alerts are pushed: one ``[[push]]`` table of the settings file.

    The settings file is the only place for its secrets (a token, a password, a secret in a URL):
    the file is written readable by its owner only, and trayvml never prints them (push.redact).
    """

    kind: str  # one of PUSH_KINDS
    url: str = ""  # ntfy: the topic's URL; webhook, slack: the URL to POST to
    name: str = ""  # how messages and doctor call it ("" : its kind and host)
    rules: tuple[str, ...] = ()  # alert rule keys; empty: every rule
    severities: tuple[str, ...] = SEVERITY_NAMES  # which severities go out (resolved: where the firing went)
    quiet_hours: str = ""  # "22:00-07:00", local time: only critical goes out then ("": never quiet)
    token: str = ""  # ntfy: an access token (Authorization: Bearer)
    smtp_host: str = ""
    smtp_port: int = 0  # 0: 587 for starttls, 465 for ssl, 25 for none
    security: str = "starttls"  # one of SMTP_SECURITY
    username: str = ""
    password: str = ""
    sender: str = ""
    to: tuple[str, ...] = ()

    def quiet_window(self) -> tuple[int, int] | None:
        """The quiet hours as minutes after local midnight (start, end); None when never quiet."""
        match = _QUIET_HOURS.fullmatch(self.quiet_hours)
        if match is None:
            return None
        a, b, c, d = (int(group) for group in match.groups())
        return a * 60 + b, c * 60 + d


_PUSH_TEXT = ("kind", "url", "name", "quiet_hours", "token", "smtp_host", "security", "username", "password", "sender")
_PUSH_LISTS = ("rules", "severities", "to")


_PUSH_URL = re.compile(r"https?://[^/\s\x00-\x1f\x7f]+(?:/[^\s\x00-\x1f\x7f]*)?")


def push_problems(destination: PushDestination, where: str) -> list[str]:
    """Every reason one push destination cannot be used (``where``: "push[1]")."""
    found: list[str] = []

    def say(text: str, **values: Any) -> None:
        found.append(translate("settings", "{where}: {problem}").format(where=where, problem=text.format(**values)))

    if destination.kind not in PUSH_KINDS:
        say(translate("settings", "kind should be one of {choices}"), choices=", ".join(PUSH_KINDS))
        return found
    if destination.kind == "email":
        if not destination.smtp_host:
            say(translate("settings", "an e-mail destination needs smtp_host"))
        if not destination.sender or not destination.to:
            say(translate("settings", "an e-mail destination needs sender and to"))
        if destination.security not in SMTP_SECURITY:
            say(translate("settings", "security should be one of {choices}"), choices=", ".join(SMTP_SECURITY))
        if not 0 <= destination.smtp_port <= 65535:
            say(translate("settings", "smtp_port should be 0–65535"))
    elif not _PUSH_URL.fullmatch(destination.url):  # a space or control character: http.client will not send it
        say(translate("settings", "url should be an http:// or https:// URL without spaces"))
    unknown = [rule for rule in destination.rules if rule not in RULE_BY_KEY]
    if unknown:
        say(translate("settings", "{rule} is not an alert rule"), rule=_shown(unknown[0]))
    wrong = [name for name in destination.severities if name not in SEVERITY_NAMES]
    if wrong:
        say(translate("settings", "severities should be among {choices}"), choices=", ".join(SEVERITY_NAMES))
    if destination.quiet_hours and destination.quiet_window() is None:
        say(translate("settings", "quiet_hours should look like 22:00-07:00"))
    return found


def _push_destination(table: dict[str, Any], where: str) -> PushDestination:
    """One [[push]] table; raises SettingsError naming what is wrong with it."""
    known = {f.name for f in fields(PushDestination)}
    unknown = sorted(set(table) - known)
    if unknown:
        raise SettingsError(
            translate("settings", "{key} is not a setting of a push destination").format(
                key=f"{where}.{_shown(unknown[0])}"
            )
        )
    if "kind" not in table:
        raise SettingsError(translate("settings", "{key} is missing").format(key=f"{where}.kind"))
    values: dict[str, Any] = {}
    for key, item in table.items():
        if key in _PUSH_TEXT and not isinstance(item, str):
            raise SettingsError(translate("settings", "{key} should be text").format(key=f"{where}.{key}"))
        if key in _PUSH_LISTS and (not isinstance(item, list) or not all(isinstance(v, str) for v in item)):
            wrong = translate("settings", "{key} should be a list of text")
            raise SettingsError(wrong.format(key=f"{where}.{key}"))
        if key == "smtp_port" and not _is_int(item):
            raise SettingsError(translate("settings", "{key} should be a number").format(key=f"{where}.{key}"))
        values[key] = tuple(item) if key in _PUSH_LISTS else item
    return PushDestination(**values)


def _push_to_toml(destination: PushDestination) -> dict[str, Any]:
    """Only what differs from the defaults: a short table a user can read and edit."""
    default = PushDestination(destination.kind)
    table: dict[str, Any] = {"kind": destination.kind}
    for f in fields(PushDestination):
        value = getattr(destination, f.name)
        if f.name != "kind" and value != getattr(default, f.name):
            table[f.name] = list(value) if isinstance(value, tuple) else value
    return table


@dataclass(frozen=True)
class Settings:
    sampling_interval_s: float = _default("sampling_interval_s")
    history_hours: int = _default("history_hours")
    tray_metric: str = _default("tray_metric")
    notifications: bool = _default("notifications")
    start_at_login: bool = _default("start_at_login")
    language: str = _default("language")
    idle_gpu_poll_s: int = _default("idle_gpu_poll_s")
    history_on_disk: bool = _default("history_on_disk")
    history_fine_hours: int = _default("history_fine_hours")
    history_coarse_days: int = _default("history_coarse_days")
    history_size_mib: int = _default("history_size_mib")
    process_history_per_gpu: int = _default("process_history_per_gpu")
    hidden_gpus: tuple[int, ...] = ()
    serve_metrics: bool = _default("serve_metrics")
    # Exporter or prometheus+http(s):// URLs; the only place credentials (user:password@) may be given.
    remote_hosts: tuple[str, ...] = ()
    remote_interval_s: float = _default("remote_interval_s")
    # Remote hosts (by name) whose GPUs the tray icon adds to this machine's bars; "*": every one.
    icon_remote_hosts: tuple[str, ...] = ("*",)
    # Where alerts are pushed beyond this desktop (ntfy, webhooks, Slack, e-mail): trayvml/platform/push.py.
    push: tuple[PushDestination, ...] = ()
    alerts: AlertSettings = field(default_factory=AlertSettings)
    # The settings file could not be used (not TOML, unreadable): these defaults stand in for
    # settings not known. Never saved, nor compared.
    stand_in: bool = field(default=False, compare=False)

    @property
    def history_limits(self) -> Limits:
        """What the history on disk keeps, from the settings that say it; standing in for a file
        that could not be used, everything the settings could have said: the default week pruned
        away the month a broken file had asked for."""
        if self.stand_in:
            fine, coarse, size = (GENERAL_BY_KEY[key].maximum or 0 for key in _HISTORY_SPANS)
            return Limits(fine * 3600.0, coarse * 86400.0, int(size) * MIB, self.process_history_per_gpu)
        return Limits(
            self.history_fine_hours * 3600.0,
            self.history_coarse_days * 86400.0,
            self.history_size_mib * MIB,
            self.process_history_per_gpu,
        )


_HISTORY_SPANS = ("history_fine_hours", "history_coarse_days", "history_size_mib")


class SettingsError(ValueError):
    """A settings file or value that cannot be used; the message is a sentence for the user."""


def _shown(value: Any) -> str:
    """A value from the file as the user reads it in a message: quoted, escaped and short."""
    return reprlib.repr(value)


def _number(value: Any) -> str:
    """A bound or value written out: 1048576, not :g's 1.04858e+06, nor 1e+20 for a whole number typed."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return _shown(value)
    return _shown(value) if isinstance(value, int) else exact_text(value)


def _setting_problems(setting: Setting, value: Any) -> list[str]:
    """Every reason ``value`` cannot be ``setting``'s (of its type already)."""
    found = []
    if setting.choices and value not in setting.choices:
        found.append(
            translate("settings", "{setting}: {value} is not one of {choices}.").format(
                setting=translate("settings", setting.label),
                value=_shown(value),
                choices=", ".join(setting.choices),
            )
        )
    if setting.minimum is not None and not setting.minimum <= value <= (setting.maximum or math.inf):
        found.append(
            translate("settings", "{setting}: {value} is outside {minimum}–{maximum}.").format(
                setting=translate("settings", setting.label),
                value=_number(value),
                minimum=_number(setting.minimum),
                maximum=_number(setting.maximum),
            )
        )
    return found


def problems(settings: Settings) -> list[str]:
    """Every reason ``settings`` cannot be used (empty when it is fine)."""
    found = []
    for setting in GENERAL:
        found += _setting_problems(setting, getattr(settings, setting.key))
    for kind in RULES:
        found += validate(kind, settings.alerts.rules.get(kind.key, kind.defaults))
    for number, destination in enumerate(settings.push, 1):
        found += push_problems(destination, f"push[{number}]")
    found += [problem for url in settings.remote_hosts if (problem := remote_host_problem(url))]
    for gpu, rules in settings.alerts.overrides.items():
        for key, rule in rules.items():
            found += [
                translate("settings", "GPU {gpu}: {problem}").format(gpu=gpu, problem=p)
                for p in validate(RULE_BY_KEY[key], rule)
            ]
    return found


def remote_host_problem(url: str) -> str:
    """Why ``url`` cannot be a remote host (as the tray would read it), or "": one that cannot was
    only printed on the tray's standard error, which nobody sees at login, and never read."""
    from trayvml.core.errors import TrayvmlError
    from trayvml.remote.fetch import parse_endpoint  # (only where there are remote hosts)

    try:
        parse_endpoint(url, credentials_allowed=True)
    except TrayvmlError as error:
        return str(error)
    return ""


def default_path() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("trayvml", appauthor=False)) / "config.toml"


# ---- TOML <-> Settings ----
def _rule_to_toml(rule: AnySettings, base: AnySettings | None = None) -> dict[str, Any]:
    """All fields, or only those differing from ``base`` (for per-GPU overrides)."""
    table = {}
    for f in fields(rule):
        value = getattr(rule, f.name)
        if base is not None and _same(value, getattr(base, f.name)):
            continue
        table[f.name] = value
    return table


def _same(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def to_toml(settings: Settings) -> str:
    document: dict[str, Any] = {"version": VERSION}
    document.update({s.key: getattr(settings, s.key) for s in GENERAL})
    document["hidden_gpus"] = list(settings.hidden_gpus)
    if settings.remote_hosts:
        document["remote_hosts"] = list(settings.remote_hosts)
    document["icon_remote_hosts"] = list(settings.icon_remote_hosts)
    if settings.push:
        document["push"] = [_push_to_toml(destination) for destination in settings.push]
    document["alerts"] = {kind.key: _rule_to_toml(settings.alerts.rules.get(kind.key, kind.defaults)) for kind in RULES}
    overrides = {
        str(gpu): {"alerts": {key: _rule_to_toml(rule, settings.alerts.rules[key]) for key, rule in rules.items()}}
        for gpu, rules in settings.alerts.overrides.items()
    }
    if overrides:
        document["gpus"] = overrides
    header = "# trayvml settings. Edit with Settings… in the tray menu, or here while trayvml is not running.\n"
    return header + tomli_w.dumps(document)


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SettingsError(
            translate("settings", "{key} should be a table, not {value}").format(key=where, value=_shown(value))
        )
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_KINDS = {  # what a setting of each type is called in a message (Python's names read as jargon)
    float: QT_TRANSLATE_NOOP("settings", "a number"),
    int: QT_TRANSLATE_NOOP("settings", "a whole number"),
    str: QT_TRANSLATE_NOOP("settings", "text"),
    bool: QT_TRANSLATE_NOOP("settings", "true or false"),
}


def _typed(setting: Setting, value: Any) -> Any:
    expected = type(setting.default)
    if expected is float and _is_int(value):
        return float(value)
    if expected is int and isinstance(value, float) and value.is_integer():
        return int(value)  # 12.0 hours: the whole number it is
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise SettingsError(
            translate("settings", "{key} should be {kind}, not {value}").format(
                key=setting.key, kind=translate("settings", _KINDS[expected]), value=_shown(value)
            )
        )
    return value


def _rule_from_toml(
    table: Any, base: AnySettings, where: str, ignored: list[str], unused: list[str] | None = None
) -> AnySettings:
    """A rule's settings from its table over ``base``. A field that cannot be used raises
    SettingsError, or where ``unused`` is given, stands at ``base``'s value, its reason noted there
    (one wrong field dropped the rule's others, said of the one alone)."""
    changes: dict[str, Any] = {}
    names = {f.name for f in fields(base)}  # each rule's own kind of settings
    for name, value in _table(table, where).items():
        problem = ""
        if name not in names:
            ignored.append(f"{where}.{name}")
        elif name == "enabled":
            if isinstance(value, bool):
                changes[name] = value
            else:
                problem = translate("settings", "{key} should be true or false").format(key=f"{where}.enabled")
        elif isinstance(value, bool) or not isinstance(value, int | float):
            problem = translate("settings", "{key} should be a number").format(key=f"{where}.{name}")
        elif name.endswith("_s") and not math.isfinite(value):
            # NaN means "no level" for a threshold, but a time has no such meaning.
            problem = translate("settings", "{key} should be a finite number of seconds").format(key=f"{where}.{name}")
        else:
            changes[name] = float(value)
        if problem:
            if unused is None:
                raise SettingsError(problem)
            unused.append(problem)
    return replace(base, **changes)


def _move(root: dict[str, Any], old: str, new: str | None) -> bool:
    """Move the value at dotted path ``old`` to ``new`` (or delete it when None); False if absent."""
    *parents, leaf = old.split(".")
    table: Any = root
    for key in parents:
        table = table.get(key) if isinstance(table, dict) else None
    if not isinstance(table, dict) or leaf not in table:
        return False
    value = table.pop(leaf)
    if new is None:
        return True
    *parents, leaf = new.split(".")
    table = root
    for key in parents:
        table = table.setdefault(key, {})
        if not isinstance(table, dict):
            raise SettingsError(translate("settings", "{key} should be a table").format(key=new.rsplit(".", 1)[0]))
    table.setdefault(leaf, value)  # the new name wins where a file holds both
    return True


def _migrate(document: dict[str, Any]) -> list[str]:
    """Apply RENAMED and DELETED to ``document`` in place; a note for each change made."""
    notes = []
    roots = [("", document)]
    if isinstance(document.get("gpus"), dict):
        roots += [(f"gpus.{gpu}.", table) for gpu, table in document["gpus"].items() if isinstance(table, dict)]
    changes: list[tuple[str, str | None]] = [*RENAMED.items(), *((old, None) for old in sorted(DELETED))]
    for old, new in changes:
        for prefix, root in roots:
            if (prefix and not old.startswith("alerts.")) or not _move(root, old, new):
                continue
            note = (
                translate("settings", "{old} is now {new}") if new else translate("settings", "{old} is no longer used")
            )
            notes.append(note.format(old=f"{prefix}{old}", new=f"{prefix}{new}"))
    return notes


def _retire_former_defaults(document: dict[str, Any], version: int) -> list[str]:
    """Drop each rule table that holds exactly a former default, so today's default applies.

    A file written by an older trayvml holds every rule's settings, chosen or not; one equal to
    the default of its day was not chosen. Anything else the user typed stays as it is.
    """
    notes: list[str] = []
    alerts = document.get("alerts")
    if not isinstance(alerts, dict):
        return notes
    for key, former in FORMER_DEFAULTS.items():
        if version >= DEFAULT_CHANGED_IN[key]:
            continue  # written while today's default was offered: what it holds was kept
        table = alerts.get(key)
        if not isinstance(table, dict):
            continue
        try:
            unchanged = _rule_from_toml(dict(table), former, f"alerts.{key}", []) == former
        except SettingsError:
            continue  # reported when the file is read as a whole
        # Whole: trayvml wrote every field of each rule (_rule_to_toml). A partial table is the
        # user's own ("enabled = false" typed in an unversioned file was taken for the former
        # default, and turned on).
        if unchanged and set(table) == {f.name for f in fields(former)}:
            del alerts[key]
            # Each GPU's override of the rule was saved as what differs from the rule as it stood
            # (the former default): it keeps that one's thresholds and times, not today's. On
            # today's, an override of a warning at 5 GiB free (its clear at 6 unsaid) was refused
            # (clear at 3), and the whole file with it: every setting, push destinations too.
            # Whether it is on, left unsaid, is today's default's, as the rule's is.
            thresholds = {name: value for name, value in _rule_to_toml(former).items() if name != "enabled"}
            gpus = document.get("gpus")
            for gpu in gpus.values() if isinstance(gpus, dict) else ():
                rules = gpu.get("alerts") if isinstance(gpu, dict) else None
                if isinstance(rules, dict) and isinstance(rules.get(key), dict):
                    rules[key] = {**thresholds, **rules[key]}
            note = translate("settings", "{table} held the former default and now has today's ({default})")
            notes.append(note.format(table=f"alerts.{key}", default=_default_words(key)))
    return notes


def _default_words(key: str) -> str:
    return translate("settings", "on") if RULE_BY_KEY[key].defaults.enabled else translate("settings", "off")


def from_toml(text: str, unusable: set[str] | None = None) -> tuple[Settings, list[str]]:
    """Parse and check a settings file: the settings, and notes on what was renamed, ignored, or
    could not be used (and stands at its default: the rest of the file is used, where one wrong
    value once set every setting to its default, and the history on disk was pruned to the
    default week, the user's month lost). ``unusable``, where given, gets the parts that stand at
    their defaults for a value the file holds: a setting's key, "alerts.<rule>", "gpus.<n>.alerts.<rule>".

    Raises SettingsError naming the reason the file as a whole cannot be used (not TOML, say).
    """
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(translate("settings", "it is not valid TOML ({error})").format(error=error)) from None
    except ValueError:  # Python refuses to convert integers of more than 4,300 digits
        raise SettingsError(translate("settings", "it holds a number too long to be a setting")) from None
    except RecursionError:  # the parser recurses once per nested array or table
        raise SettingsError(translate("settings", "it is nested too deeply to be a settings file")) from None
    notes = []
    version = document.pop("version", 0)  # files from before versioning have the shape of version 1
    if not _is_int(version) or version < 0:
        raise SettingsError(
            translate("settings", "version should be a whole number, not {value}").format(value=_shown(version))
        )
    if version > VERSION:
        newer = translate(
            "settings", "it was written by a newer trayvml (settings version {version}; this one knows {known})"
        )
        notes.append(newer.format(version=version, known=VERSION))
    notes += _migrate(document)
    notes += _retire_former_defaults(document, version)
    ignored: list[str] = []
    unused: list[str] = []  # why a value stands at its default
    parts: set[str] = set() if unusable is None else unusable

    def used(part: str, read: Callable[..., Any], *args: Any) -> Any:
        """``read(*args)``, or None (its reason noted, ``part`` unusable) where it raises SettingsError."""
        try:
            return read(*args)
        except SettingsError as error:
            unused.append(str(error).rstrip("."))
            parts.add(part)
            return None

    def rule_of(part: str, kind: Rule[Any], table: Any, base: AnySettings, where: str, gpu: int | None = None) -> Any:
        """A rule's settings, field by field (a wrong one at ``base``'s value, noted: one wrong field
        dropped the rule's others, said of the one alone); None, noted, where they do not hold
        together (a clear threshold above its enter one)."""
        wrong: list[str] = []
        rule = used(part, _rule_from_toml, table, base, where, ignored, wrong)
        if wrong:
            unused.extend(problem.rstrip(".") for problem in wrong)
            parts.add(part)
        found = validate(kind, rule) if rule is not None else []
        if found:
            said = (
                found[0]
                if gpu is None
                else translate("settings", "GPU {gpu}: {problem}").format(gpu=gpu, problem=found[0])
            )
            unused.append(said.rstrip("."))
            parts.add(part)
            return None
        return rule

    values: dict[str, Any] = {}
    for key, value in document.items():
        if key in GENERAL_BY_KEY:
            read = used(key, _checked, GENERAL_BY_KEY[key], value)
        elif key == "hidden_gpus":  # each index on its own: the others stay hidden
            read = used(key, _hidden_gpus, value)
            if read is not None and len(read) != len(value):
                unused.append(translate("settings", "hidden_gpus should be a list of GPU indices"))
                parts.add(key)
        elif key in _LISTS:
            read = used(key, _LISTS[key], value)
            if key == "remote_hosts" and read is not None:  # each host on its own: the others are read
                problems_of = {url: remote_host_problem(url) for url in read}
                for problem in dict.fromkeys(p for p in problems_of.values() if p):  # (each once)
                    notes.append(translate("settings", "{reason}: it is not read").format(reason=problem.rstrip(".")))
                read = tuple(url for url in read if not problems_of[url])
        elif key == "push":
            read = used(key, _push_tables, value)
            if read is not None:  # each destination on its own: the others are pushed to
                destinations = []
                for number, table in enumerate(read, 1):
                    destination = used(key, _usable_destination, table, f"push[{number}]")
                    if destination is not None:
                        destinations.append(destination)
                read = tuple(destinations)
        else:
            if key not in ("alerts", "gpus"):
                ignored.append(key)
            continue
        if read is not None:
            values[key] = read
    alerts = used("alerts", _table, document.get("alerts", {}), "alerts") or {}
    ignored += [f"alerts.{key}" for key in alerts if key not in RULE_BY_KEY]
    rules = {
        kind.key: rule_of(f"alerts.{kind.key}", kind, alerts.get(kind.key, {}), kind.defaults, f"alerts.{kind.key}")
        or kind.defaults
        for kind in RULES
    }
    overrides: dict[int, dict[str, AnySettings]] = {}
    gpus_seen: set[int] = set()
    for gpu_text, table in (used("gpus", _table, document.get("gpus", {}), "gpus") or {}).items():
        where = f"gpus.{gpu_text}"
        if not _GPU_INDEX.fullmatch(gpu_text):
            unused.append(
                translate("settings", "{key} should be a GPU index (0, 1, …)").format(key=f"gpus.{_shown(gpu_text)}")
            )
            continue
        gpu = int(gpu_text)
        if gpu in gpus_seen:  # "0" and "00": one GPU, told twice
            unused.append(
                translate("settings", "{key} names GPU {gpu} again: it is not used").format(key=where, gpu=gpu)
            )
            continue
        gpus_seen.add(gpu)
        own = used(where, _table, table, where) or {}
        ignored += [f"{where}.{key}" for key in own if key != "alerts"]
        for key, rule in (used(where, _table, own.get("alerts", {}), f"{where}.alerts") or {}).items():
            if key not in RULE_BY_KEY:
                ignored.append(f"{where}.alerts.{key}")
                continue
            part = f"gpus.{gpu}.alerts.{key}"
            override = rule_of(part, RULE_BY_KEY[key], rule, rules[key], f"{where}.alerts.{key}", gpu)
            if override is not None and not _same_rule(override, rules[key]):  # (one equal to it says nothing)
                overrides.setdefault(gpu, {})[key] = override
    if ignored:
        more = translate("settings", " and {count} more").format(count=len(ignored) - NOTED_KEYS)
        names = ", ".join(_shown(key) for key in ignored[:NOTED_KEYS]) + (more if len(ignored) > NOTED_KEYS else "")
        if len(ignored) == 1:
            unknown = translate("settings", "{names} is not known to this version and ignored")
        else:
            unknown = translate("settings", "{names} are not known to this version and ignored")
        notes.append(unknown.format(names=names))
    for reason in unused[:NOTED_KEYS]:
        notes.append(translate("settings", "{reason}: its default is in use").format(reason=reason))
    if len(unused) > NOTED_KEYS:
        notes.append(
            translate("settings", "{count} more values could not be used").format(count=len(unused) - NOTED_KEYS)
        )
    settings = Settings(**values, alerts=AlertSettings(rules=rules, overrides=overrides))
    found = problems(settings)
    if found:  # (each part was checked above: a whole that fails is trayvml's fault, not the file's)
        raise SettingsError(found[0].rstrip("."))
    return settings, notes


def _checked(setting: Setting, value: Any) -> Any:
    """``value`` as ``setting``'s, typed and in range; raises SettingsError naming what is wrong."""
    typed = _typed(setting, value)
    found = _setting_problems(setting, typed)
    if found:
        raise SettingsError(found[0])
    return typed


def _push_tables(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(table, dict) for table in value):
        raise SettingsError(translate("settings", "push should be a list of [[push]] tables"))
    return value


def _usable_destination(table: dict[str, Any], where: str) -> PushDestination:
    """One [[push]] table, checked; raises SettingsError naming what is wrong with it."""
    destination = _push_destination(table, where)
    found = push_problems(destination, where)
    if found:
        raise SettingsError(found[0])
    return destination


def _hidden_gpus(value: Any) -> tuple[int, ...]:
    """The GPU indices of the list (those that are not left out: from_toml says so)."""
    if not isinstance(value, list):
        raise SettingsError(translate("settings", "hidden_gpus should be a list of GPU indices"))
    return tuple(v for v in value if _is_int(v) and v >= 0)


def _remote_hosts(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise SettingsError(translate("settings", "remote_hosts should be a list of URLs"))
    return tuple(v.strip() for v in value)


def _icon_remote_hosts(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(
            translate("settings", 'icon_remote_hosts should be a list of host names (or ["*"] for all)')
        )
    return tuple(value)


_LISTS: dict[str, Callable[[Any], tuple[Any, ...]]] = {
    "remote_hosts": _remote_hosts,
    "icon_remote_hosts": _icon_remote_hosts,
}


def _free_name(path: Path, tag: str) -> Path:
    """A name beside ``path`` that nothing holds yet: two files set aside in one second both stay."""
    stem = f"{path.name}.{tag}-{time.strftime('%Y%m%d-%H%M%S')}"
    candidate, n = path.with_name(stem), 1
    while candidate.exists() or candidate.is_symlink():
        n += 1
        candidate = path.with_name(f"{stem}-{n}")
    return candidate


def read_file(path: Path, mode: int | None = None) -> bytes:
    """The settings file's bytes (files.read_bounded: a pipe read as it is written, a device never);
    raises FileNotFoundError, OSError, or SettingsError when it is too big."""
    data = read_bounded(path, MAX_FILE_BYTES, mode)
    if len(data) > MAX_FILE_BYTES:
        raise SettingsError(translate("settings", "it is larger than {size} MiB").format(size=MAX_FILE_BYTES >> 20))
    return data


def settings_text(data: bytes) -> str:
    """The file's text; raises UnicodeDecodeError. A byte order mark (some editors write one) is no
    part of the TOML, which would refuse it."""
    return data.decode("utf-8").removeprefix("\ufeff")


def not_utf8(error: UnicodeDecodeError) -> str:
    """Why a settings file's bytes are not its text, as the tray and ``doctor`` both say it."""
    return f"it is not UTF-8 text (byte {error.start} is {error.object[error.start]:#04x})"


def examine(path: Path, mode: int | None = None) -> tuple[Settings, list[str]]:
    """The settings in ``path`` and what loading it would change (renamed or ignored parts), read
    as loading reads it (a pipe once, a device never) and without loading it: nothing is moved
    aside. Raises FileNotFoundError, OSError, UnicodeDecodeError, or SettingsError naming why the
    tray app would not use it (``trayvml doctor`` asks this). ``mode``: as read_file's."""
    return from_toml(settings_text(read_file(path, mode)))


def set_aside_copies(path: Path) -> list[Path]:
    """Files the tray app moved aside as unusable, beside ``path`` (see SettingsStore._set_aside)."""
    try:
        return sorted(path.parent.glob(f"{glob.escape(path.name)}.corrupt-*"))
    except OSError:
        return []


def _same_rule(a: AnySettings | None, b: AnySettings | None) -> bool:
    """Equal field by field, NaN ("no level") equal to NaN: a rule read from a file (a NaN of its
    own) was unequal to the same rule in memory, and taken for changed."""
    if a is None or b is None or type(a) is not type(b):
        return a is b
    return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))


def _merged_alerts(old: AlertSettings, new: AlertSettings, elsewhere: AlertSettings) -> tuple[AlertSettings, list[str]]:
    """``new``'s changes from ``old``, rule by rule and override by override, applied to
    ``elsewhere``; and the names of those changed in both, where they now differ."""
    both: list[str] = []
    rules = dict(elsewhere.rules)
    for key in RULE_BY_KEY:
        was, chosen, there = (settings.rules.get(key) for settings in (old, new, elsewhere))
        if not _same_rule(chosen, was):
            if not (_same_rule(there, was) or _same_rule(there, chosen)):
                both.append(f"alerts.{key}")
            if chosen is None:
                rules.pop(key, None)
            else:
                rules[key] = chosen
    # An override is what it changes from its rule (as the file holds it): compared and carried so,
    # an override made here onto a rule edited there pinned the rule's old thresholds as its own.
    overrides = {gpu: dict(rules_of) for gpu, rules_of in elsewhere.overrides.items()}
    for gpu in {*old.overrides, *new.overrides}:
        for key in {*old.overrides.get(gpu, {}), *new.overrides.get(gpu, {})}:
            own_was, own_chosen, own_there = (_own(a, gpu, key) for a in (old, new, elsewhere))
            if _same_own(own_chosen, own_was):
                continue
            if not (_same_own(own_there, own_was) or _same_own(own_there, own_chosen)):
                both.append(f"gpus.{gpu}.alerts.{key}")
            if own_chosen is None:
                overrides.get(gpu, {}).pop(key, None)
            else:
                overrides.setdefault(gpu, {})[key] = replace(rules[key], **own_chosen)
    overrides = {gpu: rules_of for gpu, rules_of in overrides.items() if rules_of}
    return AlertSettings(rules=rules, overrides=overrides), both


def _own(settings: AlertSettings, gpu: int, key: str) -> dict[str, Any] | None:
    """What GPU ``gpu``'s override of rule ``key`` changes from the rule; None: no override."""
    override, base = settings.overrides.get(gpu, {}).get(key), settings.rules.get(key)
    if override is None:
        return None
    if base is None or type(base) is not type(override):
        return {f.name: getattr(override, f.name) for f in fields(override)}
    return {
        f.name: getattr(override, f.name)
        for f in fields(override)
        if not _same(getattr(override, f.name), getattr(base, f.name))
    }


def _same_own(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.keys() == b.keys() and all(_same(a[name], b[name]) for name in a)


def _as_before_where_unusable(on_disk: Settings, before: Settings, unusable: set[str]) -> Settings:
    """``on_disk`` with the parts in ``unusable`` (from_toml's) as they are in ``before``."""
    general = {f.name: getattr(before, f.name) for f in fields(Settings) if f.name in unusable}
    rules = dict(on_disk.alerts.rules)
    overrides = {gpu: dict(rules_of) for gpu, rules_of in on_disk.alerts.overrides.items()}
    for part in unusable:
        where = part.split(".")
        if where[0] == "alerts" and len(where) == 2 and where[1] in before.alerts.rules:
            rules[where[1]] = before.alerts.rules[where[1]]
        elif where[0] == "gpus" and len(where) == 4:
            gpu, key = int(where[1]), where[3]
            kept = before.alerts.overrides.get(gpu, {}).get(key)
            if kept is None:
                overrides.get(gpu, {}).pop(key, None)
            else:
                overrides.setdefault(gpu, {})[key] = kept
    alerts = AlertSettings(rules=rules, overrides={gpu: r for gpu, r in overrides.items() if r})
    return replace(on_disk, **general, alerts=alerts)


STAND_IN = Settings(stand_in=True)  # the defaults, standing in for a file that could not be used


class SettingsStore:
    def __init__(self, path: Path | None = None) -> None:
        self.custom = path is not None  # given with --config (autostart passes it on)
        self.path = path or default_path()
        self._refusal = ""  # why the file at path must not be overwritten ("" when it may be)
        self._keep: bytes | None = None  # a loaded file with parts ignored or renamed: copied aside before saving
        self._read = b""  # the file as last read (keep_as_read)
        self.unusable: set[str] = set()  # the parts of that file that stand at their defaults (from_toml)
        # The file as last read or written here (_signature): another change is another program's.
        self._seen: tuple[int, ...] | None = None

    def _signature(self) -> tuple[int, ...]:
        """Which file is at ``path``, as it is now: () where there is none. Its status change time
        too: a file made readable again (chmod) was not noticed until the next start, each save
        refused meanwhile."""
        try:
            info = os.stat(self.path)
        except OSError:
            return ()
        return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)

    def changed_elsewhere(self) -> bool:
        """Whether the file was written since this store last read or wrote it (another trayvml,
        an editor); False before it was read at all."""
        return self._seen is not None and self._signature() != self._seen

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Held from the look at the file to the save (SettingsModel.change), by every trayvml
        saving this file: a hidden lock file beside it. Waited for at most SAVE_LOCK_WAIT_S, then
        saved without it (a change kept, logged, rather than lost)."""
        real = Path(os.path.realpath(self.path))
        with contextlib.suppress(OSError):  # (one that cannot be made: the save says so)
            real.parent.mkdir(parents=True, exist_ok=True)
        with file_locked(real.with_name(f".{real.name}.lock"), SAVE_LOCK_WAIT_S) as why_not:
            if why_not:
                log.warning("saving the settings without their lock: %s", why_not)
            yield

    def keep_as_read(self) -> None:
        """The next save keeps a copy of the file as it was last read beside it (``.kept-…``)."""
        self._keep = self._read

    def refuses(self) -> bool:
        """Whether the file must not be overwritten (see load)."""
        return bool(self._refusal)

    def load(self, named: bool = False, only_read: bool = False) -> tuple[Settings, str]:
        """The settings, and one sentence for the user when the file was not used as it is ("" if it was).

        ``named``: the user named the file (``--config``): one that is not there is said too.
        ``only_read``: a command that never saves the settings leaves a broken file where it is
        (the tray moves it aside, so that it can save the defaults there)."""
        remove_stale_temporaries(self.path)
        pipe = False  # a pipe (``--config <(…)``) is read once: never set aside nor written
        self._refusal = ""
        self.unusable = set()
        self._seen = self._signature()
        try:
            mode = os.stat(self.path).st_mode  # before opening: a terminal's open can make it ours
            pipe = stat.S_ISFIFO(mode)
            data = read_file(self.path, mode)
            text = settings_text(data)
            settings, notes = from_toml(text, self.unusable)
        except FileNotFoundError:
            missing = translate("settings", "The settings file {path} does not exist; defaults are in use.")
            return Settings(), missing.format(path=self.path) if named else ""
        except UnicodeDecodeError as error:
            why = not_utf8(error)
            return STAND_IN, self._unusable(why) if only_read or pipe else self._set_aside(why)
        except SettingsError as error:
            return STAND_IN, self._unusable(str(error)) if only_read or pipe else self._set_aside(str(error))
        except OSError as error:
            # Perhaps a passing fault, or not a file at all: leave it as it is, and never write over it.
            self._refusal = translate(
                "settings", "The settings file {path} could not be read, so it is not overwritten"
            ).format(path=self.path)
            reason = error.strerror or str(error)
            return STAND_IN, translate(
                "settings",
                "The settings file {path} could not be read ({reason}); it is left as it is and defaults are in use.",
            ).format(path=self.path, reason=reason)
        if pipe:
            self._refusal = translate(
                "settings", "The settings file {path} is a pipe, so it is not overwritten"
            ).format(path=self.path)
        self._read = data
        if not notes:
            return settings, ""
        self._keep = data
        return settings, translate(
            "settings",
            "The settings file {path} is used with changes: {changes}; "
            "a copy of it as it is now is kept when trayvml next saves the settings.",
        ).format(path=self.path, changes="; ".join(notes))

    def _unusable(self, reason: str) -> str:
        self._refusal = translate(
            "settings", "The settings file {path} could not be used, so it is not overwritten"
        ).format(path=self.path)
        return translate(
            "settings",
            "The settings file {path} could not be used: {reason}; it is left as it is and defaults are in use.",
        ).format(path=self.path, reason=reason)

    def _set_aside(self, reason: str) -> str:
        aside = _free_name(self.path, "corrupt")
        try:
            os.replace(self.path, aside)
            self._seen = self._signature()  # none there now: a file there later is another program's
        except OSError as error:
            self._refusal = translate(
                "settings", "The settings file {path} could not be used or set aside, so it is not overwritten"
            ).format(path=self.path)
            return translate(
                "settings",
                "The settings file {path} could not be used: {reason}; it could not be moved aside either "
                "({error}), so it is left as it is and defaults are in use.",
            ).format(path=self.path, reason=reason, error=error.strerror or error)
        return translate(
            "settings",
            "The settings file {path} could not be used: {reason}; it was moved to {aside} and defaults are in use.",
        ).format(path=self.path, reason=reason, aside=aside.name)

    def save(self, settings: Settings) -> None:
        """Raises SettingsError (invalid settings, or a file that must not be overwritten) or OSError."""
        if self._refusal:
            raise SettingsError(self._refusal)
        found = problems(settings)
        if found:
            raise SettingsError(found[0])
        if self._keep is not None:
            write_atomically(_free_name(self.path, "kept"), self._keep)
            self._keep = None
        # Through a symbolic link to its target (a dotfiles manager's: stow, chezmoi, home-manager):
        # renamed over, the link became a file of its own, the managed copy left behind unsaid.
        write_atomically(Path(os.path.realpath(self.path)), to_toml(settings).encode("utf-8"))
        self._seen = self._signature()


class SettingsModel:
    """The settings in force: the one place that holds them, saves them and tells who asked of a change."""

    def __init__(self, settings: Settings, store: SettingsStore | None = None) -> None:
        self.current = settings
        self.store = store
        self._listeners: list[tuple[frozenset[str], Callable[[Settings], None]]] = []

    def _beside_elsewhere(self, old: Settings, new: Settings) -> tuple[Settings, str]:
        """``new``'s changes from ``old`` applied to the file as another program left it (another
        trayvml, a hand edit adding a push destination): saved whole, a tick of "Start at login"
        put back every setting as this trayvml had read it. Merged setting by setting, each alert
        rule and each GPU's override on its own (a rule turned on here kept a threshold edited by
        hand in another); where both changed the same one, this change holds it, and the file as
        it was is kept beside it (saying which). A file that cannot be used now is left to save's
        refusal."""
        assert self.store is not None
        on_disk, note = self.store.load(only_read=True)
        if self.store.refuses():
            return new, ""
        # What that file holds but could not be used stands at its default there: kept as this
        # trayvml had it, not saved over with the default (a hand edit's typo pruned a month of
        # history to a week, and deleted a push destination, "those changes are kept" said).
        on_disk = _as_before_where_unusable(on_disk, old, self.store.unusable)
        touched = {
            f.name: getattr(new, f.name)
            for f in fields(Settings)
            if f.name not in ("alerts", "stand_in") and getattr(old, f.name) != getattr(new, f.name)
        }
        both = [name for name, value in touched.items() if getattr(on_disk, name) not in (getattr(old, name), value)]
        alerts, both_alerts = _merged_alerts(old.alerts, new.alerts, on_disk.alerts)
        both += both_alerts
        path = self.store.path
        merged = replace(on_disk, **touched, alerts=alerts)
        if not both and not note:
            said = translate("settings", "The settings file {path} had been changed elsewhere: those changes are kept.")
            return merged, said.format(path=path)
        self.store.keep_as_read()
        if not both:  # what it could not use is said, and the file as it was is kept
            if not self.store.unusable:
                return merged, note  # (renamed or ignored parts)
            said = translate(
                "settings",
                "The settings file {path} had been changed elsewhere: those changes are kept but for {names},"
                " which could not be used there and stay as they were; the file as it was is kept beside it.",
            )
            return merged, said.format(path=path, names=", ".join(sorted(self.store.unusable)))
        said = translate(
            "settings",
            "The settings file {path} had been changed elsewhere: those changes are kept but for {names}, "
            "changed there too, which hold what was chosen here; the file as it was is kept beside it.",
        )
        return merged, said.format(path=path, names=", ".join(both))

    def on_change(self, keys: str | tuple[str, ...], listener: Callable[[Settings], None]) -> None:
        """Call ``listener(new)`` after a change of any of ``keys`` (field names of Settings), once per
        change however many of them changed."""
        wanted = frozenset((keys,) if isinstance(keys, str) else keys)
        unknown = wanted - {f.name for f in fields(Settings)}
        if unknown:
            raise ValueError(f"no such setting: {', '.join(sorted(unknown))}")
        self._listeners.append((wanted, listener))

    def change(self, settings: Settings) -> str:
        """Put ``settings`` in force and save them; a sentence when they could not be saved, or
        when the file had been changed elsewhere (its changes are kept beside these), else ""."""
        old = self.current
        problem = ""
        if self.store is None:
            self.current = settings = replace(settings, stand_in=old.stand_in)
        else:
            # From the look at the file to the save, no other trayvml saves: two saving at once
            # both found the file as they had read it, and the later save lost the other's change.
            with self.store.locked():
                if self.store.changed_elsewhere():
                    settings, problem = self._beside_elsewhere(old, settings)
                # Standing in until a save says them (the dialog makes fresh Settings: a failed save
                # cleared the flag, and the history was pruned by settings no file holds).
                settings = self.current = replace(settings, stand_in=old.stand_in)
                try:
                    self.store.save(settings)
                    settings = self.current = replace(settings, stand_in=False)  # the file says them now
                except (OSError, SettingsError) as error:
                    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
                    problem = translate("settings", "Could not save the settings to {path}: {reason}.").format(
                        path=self.store.path, reason=reason.rstrip(".")
                    )
        changed = {f.name for f in fields(Settings) if getattr(old, f.name) != getattr(settings, f.name)}
        for keys, listener in self._listeners:
            if keys & changed:
                listener(settings)
        return problem
