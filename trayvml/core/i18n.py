"""Translations for the layers that do not use Qt (core, alerts, config, the CLI).

One catalog per language, ``resources/translations/trayvml_<lang>.ts``, holds every string of the
app: the Qt layer loads the ``.qm`` that ``pyside6-lrelease`` compiles from it, and this module reads
the ``.ts`` itself (XML, standard library), so each string is written and translated once.
``scripts/translations update`` extracts the strings with ``pyside6-lupdate``, which recognises
``translate("context", "text")`` calls and ``QT_TRANSLATE_NOOP("context", "text")`` markers.

Strings made at import time (the metric catalog, the settings schema) are marked with
``QT_TRANSLATE_NOOP`` and translated where they are shown, by ``translate(context, text)``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

SOURCE_LANGUAGE = "en"
LANGUAGES = ("zh_CN",)  # the translated ones: each has resources/translations/trayvml_<lang>.ts
CHOICES = ("system", SOURCE_LANGUAGE, *LANGUAGES)  # the "language" setting's values

_catalog: dict[tuple[str, str], str] = {}
_lookup: Callable[[str, str], str] | None = None  # another reader of the same catalog (Qt's, in the app)
_language = SOURCE_LANGUAGE


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:  # noqa: N802 - the name lupdate looks for
    """Marks ``text`` for translation in ``context`` without translating it (yet)."""
    return text


def translate(context: str, text: str) -> str:
    """``text`` in the installed language; as it is where the catalog has no finished translation."""
    if _lookup is not None:
        return _lookup(context, text)
    return _catalog.get((context, text), text) if _catalog else text


def catalog_path(language: str, suffix: str = ".ts") -> Path:
    from trayvml.assets import resource  # stdlib only; imported here as core sits below it

    return resource(f"translations/trayvml_{language}{suffix}")


def _match(tag: str) -> str | None:
    """The supported language a POSIX locale name (``zh_CN.UTF-8``, ``zh``, ``en_US``) asks for."""
    name = tag.split(".")[0].split("@")[0].replace("-", "_")
    if name in ("C", "POSIX", ""):
        return SOURCE_LANGUAGE
    language = name.split("_")[0]
    if language == SOURCE_LANGUAGE:
        return SOURCE_LANGUAGE
    for supported in LANGUAGES:
        # zh_CN for zh, zh_CN and zh_SG; not for zh_TW / zh_HK, which write Traditional Chinese.
        if name == supported or (language == supported.split("_")[0] and name in (language, "zh_SG")):
            return supported
    return None


def system_language(environ: Mapping[str, str] | None = None) -> str:
    """The language the environment asks for, in the order of the standard library's gettext: the
    first of LANGUAGE, LC_ALL, LC_MESSAGES and LANG that is set, a colon-separated list of preferences."""
    env = os.environ if environ is None else environ
    wanted = next((env[k] for k in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG") if env.get(k)), "C")
    for tag in wanted.split(":"):
        if tag and (found := _match(tag)) is not None:
            return found
    return SOURCE_LANGUAGE


def resolve(setting: str, environ: Mapping[str, str] | None = None) -> str:
    """The language to use for the ``language`` setting ("system", "en" or a translated one)."""
    return setting if setting in (SOURCE_LANGUAGE, *LANGUAGES) else system_language(environ)


def read_catalog(path: Path) -> dict[tuple[str, str], str]:
    """The finished translations of a Qt Linguist ``.ts`` file, by (context, source text)."""
    # Imported here: the tray reads Qt's compiled catalog and never needs an XML parser (0.8 MiB).
    import xml.etree.ElementTree as ET

    found = {}
    for context in ET.parse(path).getroot().iter("context"):
        name = context.findtext("name") or ""
        for message in context.iter("message"):
            translation = message.find("translation")
            if translation is None or translation.get("type") in ("unfinished", "vanished", "obsolete"):
                continue
            if translation.text:
                found[(name, message.findtext("source") or "")] = translation.text
    return found


def install(language: str, lookup: Callable[[str, str], str] | None = None) -> None:
    """Translate from now on into ``language`` (an entry of LANGUAGES, or "en"): with ``lookup``
    where the caller has the compiled catalog loaded already (the app: Qt's translators, which read
    the .qm in a fraction of the time parsing the .ts takes), else from the .ts."""
    global _language, _lookup
    _catalog.clear()
    _language = language
    _lookup = lookup if language in LANGUAGES else None
    if language in LANGUAGES and lookup is None:
        _catalog.update(read_catalog(catalog_path(language)))


def current() -> str:
    return _language
