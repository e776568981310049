"""Plain-text pieces that the CLI and the MCP server print alike."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence


def warning_lines(warnings: Iterable[str]) -> str:
    """Each warning on a line of its own, after the text it follows."""
    return "".join(f"\nwarning: {w}" for w in warnings)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 file``, ``2 files``: a count and its noun, in the right number."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def first_paragraph(text: str, limit: int) -> str:
    """The text's first paragraph on one line, cut to ``limit`` characters (a hit's summary)."""
    paragraph = text.strip().split("\n\n", 1)[0].strip()
    paragraph = " ".join(paragraph.split())
    return paragraph if len(paragraph) <= limit else paragraph[: limit - 1].rstrip() + "\u2026"


def listed(paths: Sequence[str], limit: int = 5) -> str:
    """``a, b, c`` or ``a, b, c, d, e and 3 more``: paths named in one line of a message."""
    shown = ", ".join(paths[:limit])
    return shown if len(paths) <= limit else f"{shown} and {len(paths) - limit} more"


def clip(text: str, limit: int) -> str:
    """Engram's ``truncate``: the first ``limit`` characters and ``...`` when longer."""
    return text if len(text) <= limit else text[:limit] + "..."


def quoted(text: str) -> str:
    """A string as Go's ``%q`` shows it in Engram's replies (escapes for quotes and controls)."""
    return json.dumps(text, ensure_ascii=False)
