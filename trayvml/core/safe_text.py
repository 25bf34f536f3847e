"""Text from the system, made safe once per sink.

GPU names come from the driver and process names, users and command lines from any user on
the machine: none of it is trusted. It is cleaned once where it enters (:func:`decode` for the
driver's bytes, :func:`clean` for psutil's strings) and each sink then escapes it for its own
syntax with one function here. Every sink function cleans again, so that text which entered
some other way (a simulated process, a hostname) is safe all the same.

Where a person reads a name it is shortened with an ellipsis (:func:`shorten`, where the line
is composed); CSV and JSON keep it whole.
"""

from __future__ import annotations

import re
import urllib.parse

REPLACEMENT = "\ufffd"  # what undecodable bytes become; control characters become the same
NAME_LIMIT = 48  # characters of one name shown to a person
SENTENCE_LIMIT = 500  # characters of a sentence that quotes a remote host (its reason, its error)
# C0 and C1 controls and DEL (terminal escape sequences, line breaks, tabs), lone surrogates
# (bytes psutil and os could not decode hand over surrogate-escaped, and no UTF-8 stream can
# encode them), line and paragraph separators, and the bidirectional controls that reorder or
# hide the text after them.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_FORMULA_START = ("=", "+", "-", "@")  # what makes a spreadsheet read a cell as a formula


def decode(raw: bytes) -> str:
    """Bytes from the driver as clean text: what is not UTF-8 becomes U+FFFD, never an error."""
    return clean(raw.decode("utf-8", errors="replace"))


def clean(text: str) -> str:
    """``text`` with each control character, bidi control and lone surrogate replaced by U+FFFD."""
    return _UNSAFE.sub(REPLACEMENT, text)


def shorten(text: str, limit: int = NAME_LIMIT) -> str:
    """At most ``limit`` characters, the last an ellipsis when something was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown_url(url: str, limit: int) -> str:
    """A remote's URL as a person reads it: its %-escapes decoded (a selector's quotes and
    braces), then cleaned and shortened like any name."""
    return shorten(clean(urllib.parse.unquote(url)), limit)


def terminal_text(text: str, limit: int = NAME_LIMIT) -> str:
    """For a terminal: no escape sequence or line break gets through, and long names are cut."""
    return shorten(clean(text), limit)


def csv_text(text: str) -> str:
    """One cell of trayvml's nvidia-smi style CSV (unquoted, ``", "`` between cells).

    Kept whole, but a comma becomes a space (it would start a new cell), a double quote an
    apostrophe (a cell that starts with one is a quoted cell to CSV readers, which then read on
    across the cells after it), line breaks are replaced (they would start a new row) and a cell
    a spreadsheet would run as a formula gets a leading apostrophe, as OWASP advises for CSV
    injection.
    """
    safe = clean(text).replace(",", " ").replace('"', "'")
    return "'" + safe if safe.lstrip().startswith(_FORMULA_START) else safe


def json_text(text: str) -> str:
    """For JSON: whole, and encodable (the encoder escapes JSON's own syntax)."""
    return clean(text)


def notification_text(body: str, markup: bool) -> str:
    """A desktop notification's body: its own line breaks kept, markup escaped where it is read.

    The freedesktop servers that offer ``body-markup`` read ``<b>``, ``<a href>`` and ``<img>``.
    """
    lines = (clean(line) for line in body.split("\n"))
    if markup:
        lines = (_markup_escaped(line) for line in lines)
    return "\n".join(lines)


def rich_text(text: str) -> str:
    """For Qt rich text (HTML): tags and entities shown as they are."""
    return _markup_escaped(clean(text))


def _markup_escaped(text: str) -> str:
    """``html.escape(text, quote=False)``, as it does it (``&`` first): importing ``html`` loads
    its table of entities, 0.6 MiB of the idle tray, for these three replacements."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def menu_label(text: str, dbusmenu: bool) -> str:
    """A QAction's text that shows ``text`` as it is.

    Qt reads ``&`` as a mnemonic marker (``&&`` is a literal one). A tray menu shown through
    a StatusNotifierItem host goes out over dbusmenu, where ``_`` is the marker (``__`` a
    literal one) and Qt's export (QDBusMenuItem::convertMnemonic) turns only the first ``&``
    into ``_`` and passes every ``_`` through. So there, underscores are doubled and only the
    first ampersand is: Qt sends it as ``_&``, which the host shows as ``&``.
    """
    label = clean(text)
    if not dbusmenu:
        return label.replace("&", "&&")
    return label.replace("_", "__").replace("&", "&&", 1)
