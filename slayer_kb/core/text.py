"""Plain-text pieces that the CLI and the MCP server print alike."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence


def warning_lines(warnings: Iterable[str]) -> str:
    """Each warning on a line of its own, after the text it follows."""
    return "".join(f"\n{warning_line(w)}" for w in warnings)


def warning_line(warning: str) -> str:
    """``warning: ...``, one line whatever a file name in it holds (``one_line_shown``)."""
    return f"warning: {one_line_shown(warning)}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 file``, ``2 files``: a count and its noun, in the right number."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def lf_lines(text: str) -> str:
    """``text`` with Windows (CRLF) and old Mac (CR) line ends as LF: a summary reads a learning
    from a Windows agent or an MCP client's JSON by its lines as any other (the learning itself is
    stored as given)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def paragraph_one(text: str) -> str:
    """The text's first paragraph on one line, its spaces and line breaks each one space. A
    paragraph ends at a line with nothing on it but spaces or tabs (no regex: the client imports
    this module, and starts without ``re``)."""
    head: list[str] = []
    for line in lf_lines(text.strip()).split("\n"):
        if not line.strip(" \t"):
            break
        head.append(line)
    return " ".join(" ".join(head).split())


def first_paragraph(text: str, limit: int) -> str:
    """The text's first paragraph on one line, cut to ``limit`` characters (a hit's summary)."""
    paragraph = paragraph_one(text)
    return paragraph if len(paragraph) <= limit else paragraph[: limit - 1].rstrip() + "\u2026"


def listed(paths: Sequence[str], limit: int = 5) -> str:
    """``a, b, c`` or ``a, b, c, d, e and 3 more``: paths named in one line of a message."""
    shown = ", ".join(paths[:limit])
    return shown if len(paths) <= limit else f"{shown} and {len(paths) - limit} more"


def clip(text: str, limit: int) -> str:
    """Engram's ``truncate``: the first ``limit`` characters and ``...`` when longer."""
    return text if len(text) <= limit else text[:limit] + "..."


# C0 controls but tab and newline, DEL, C1 controls: what a terminal acts on instead of showing.
# And the bidi embeddings, overrides and isolates, with which a terminal that lays out
# right-to-left text shows the line in another order than it is (Trojan Source, CVE-2021-42574).
# And lone surrogates, which no UTF-8 stream takes (a strict one raises): a byte of a path that
# is not UTF-8 (U+DC80-U+DCFF, as os.fsdecode gives it) as that byte, \xff (as
# store.listing.shown shows a file name), any other as \ud800.
_SURROGATES = {c: f"\\x{c - 0xDC00:02x}" if 0xDC80 <= c <= 0xDCFF else f"\\u{c:04x}" for c in range(0xD800, 0xE000)}
_CONTROLS = {
    **{c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0)) if c not in (0x09, 0x0A)},
    **{c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))},
    **_SURROGATES,
}
# In JSON, a lone surrogate as the escape a parser reads back as that character (\udcff): the
# text kept exactly, where written as it is a strict UTF-8 stream raises.
_JSON_SURROGATES = {c: f"\\u{c:04x}" for c in range(0xD800, 0xE000)}


# The most of a value a caller gave that a message quotes back.
MAX_SHOWN = 100


def shown_value(value: object, limit: int = MAX_SHOWN) -> str:
    """``repr(value)``, a longer string cut to its first ``limit`` characters and its length: a
    message about a 17 MB value (a scope, a filter, a datasource sent by an agent) must not carry
    it back whole, into the agent's context or the terminal."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    return repr(value)


def kind_of(value: object) -> str:
    """What a given value is, in the words of the JSON or YAML it came from, never a Python type's
    name ("not NoneType", "got dict"): a message says what the user gave."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):  # before int: True is an int to Python, not to JSON or YAML
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, datetime.datetime):  # YAML reads 2026-01-02 10:00:00 as one
        return "a date and time"
    if isinstance(value, datetime.date):  # and 2026-01-02 as one
        return "a date"
    if isinstance(value, (bytes, bytearray)):  # YAML's !!binary
        return "binary data"
    if isinstance(value, (set, frozenset)):  # YAML's !!set
        return "a set"
    return f"a Python {type(value).__name__} object"  # only a library caller passes one


# The same and tab and newline: a text that must stay one line whatever it holds.
# U+2028 and U+2029 too: str.splitlines and many readers break a line there.
_LINE_CONTROLS = {**_CONTROLS, 0x09: "\\x09", 0x0A: "\\x0a", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def one_line_shown(text: str) -> str:
    """``shown_controls`` with tabs and newlines shown as ``\\xNN`` too: a ``path:line: message``
    of a file whose name holds a line break (git carries any name in a clone) is still one line,
    so that no part of it reads as a line of its own (another problem, a CI runner's command)."""
    return text.translate(_LINE_CONTROLS)


def shown_controls(text: str) -> str:
    """``text`` with each control character a terminal acts on shown as ``\\xNN``, each bidi
    control as ``\\uNNNN``, each lone surrogate as the byte it stands for (``\\xff``) or
    ``\\uNNNN``; tabs and newlines kept (the human output, commit messages)."""
    return text.translate(_CONTROLS)


def terminal_text(text: str) -> str:
    """``shown_controls`` of ``text`` with its CRLF line ends as LF: text a person reads on a
    terminal (the human output, an error's message), where a lone carriage return would
    overwrite the line it is on."""
    return shown_controls(text.replace("\r\n", "\n"))


def json_document(data: object, encoding: str | None) -> str:
    """``data`` as indented JSON for a stream of ``encoding``: its characters as they are, or
    escaped (``\\u20ac``) when the stream cannot write one (a latin-1 or C locale), where
    they raised UnicodeEncodeError and printed no document at all."""
    import json  # here: the relaying client imports this module, and needs no json (nor its re, enum)

    text = json.dumps(data, ensure_ascii=False, indent=2)
    return json_surrogates_escaped(text) if not unwritable(text, encoding) else json.dumps(data, indent=2)


def writable(text: str, encoding: str | None) -> str:
    """``text`` for a stream of ``encoding``: a character it cannot write as its escape (``\\u20ac``)."""
    return text.encode(encoding, "backslashreplace").decode(encoding) if unwritable(text, encoding) else text  # type: ignore[arg-type]


def unwritable(text: str, encoding: str | None) -> bool:
    """Whether a stream of ``encoding`` cannot write some character of ``text``."""
    if not encoding or encoding.replace("-", "").replace("_", "").lower() == "utf8":
        return False  # (a lone surrogate, which UTF-8 cannot write either, each caller escapes already)
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return True
    except LookupError:
        return False
    return False


def json_surrogates_escaped(text: str) -> str:
    """JSON written with ``ensure_ascii=False``, each lone surrogate in it as its JSON escape."""
    return text.translate(_JSON_SURROGATES)


def one_line(text: str) -> str:
    """``text`` with each run of whitespace, line breaks included, as one space: a user's text in
    a commit's subject, which a line break would end (and a blank line follow with a body)."""
    return " ".join(text.split())


# Go's strconv.Quote: these as a backslash and a letter, any other character Go's IsPrint
# refuses (Python's isprintable refuses the same: controls, format characters such as a bidi
# override, separators but the space) as \xNN, \uNNNN or \UNNNNNNNN.
_GO_ESCAPES = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v"}


def quoted(text: str) -> str:
    """A string as Go's ``%q`` shows it in Engram's replies: a right-to-left override or an
    escape in a query or title echoed back reaches the agent escaped, as Engram's does (JSON's
    quoting, used before, kept U+202E raw and wrote an escape as \\u001b)."""
    return '"' + "".join(_GO_ESCAPES.get(ch) or (ch if ch.isprintable() else _go_escape(ord(ch))) for ch in text) + '"'


def _go_escape(code: int) -> str:
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
