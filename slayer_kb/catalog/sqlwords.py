"""What to write instead of a word SLayer reads as a column that no catalog has: a word of SQL
or Python (``distinct``, ``desc``, ``true``), or the word after a spaced colon (``amount : sum``).

SLayer's resolver looks such a word up as a column and reports it not found. Reported so, it
reads as a stale tag (a column the catalog no longer has: sync notes it, search says re-save,
suggestions name columns spelled alike), though no catalog makes the query right. It is the
query's own slip, refused as such with the fix; a column of that name, where one exists, still
resolves and is tagged.
"""

from __future__ import annotations

import keyword
import re

# Python's own words (True, None, not, ...): SLayer's engine reads a formula as Python.
_PYTHON_WORDS = {word.lower() for word in keyword.kwlist}
_ORDER_WORDS = {"order", "by", "asc", "desc", "limit", "offset"}
_CLOCK_WORDS = {"current_time", "localtime", "localtimestamp"}


def fix_for(word: str, text: str, kind: str) -> str | None:
    """Why ``word`` of ``text`` (a ``formula`` or ``filter``) names no column, and what to write
    instead; None for a word that may be a column the catalog lacks (stale, not invalid)."""
    if "." in word:
        return None
    bare = re.escape(word)
    spaced = re.search(rf"([\w.]+)(\s*)(::?)(\s*){bare}\b", text)
    if spaced and (spaced.group(2) or spaced.group(4)):
        name, colon = spaced.group(1), spaced.group(3)
        return f"write '{name}{colon}{word}', with no spaces around the colon"
    lower = word.lower()
    if re.search(rf"(?<!:)\b{bare}:\w", text):
        if lower in _PYTHON_WORDS:
            return "it is a word of SLayer's formulas (Python's); name a column before ':' ('*:count' counts rows)"
        if lower in _ORDER_WORDS | _CLOCK_WORDS | {"distinct"}:
            return "it is a word of SQL; name a column before ':' ('*:count' counts rows)"
    distinct = re.search(r"count\s*\(\s*distinct\s+([\w.]+)\s*\)", text, re.IGNORECASE)
    if lower == "distinct" and distinct and kind == "filter":
        column = distinct.group(1)
        return (f"SLayer's memory resolver reads it as a column in a filter (its engine runs count(distinct "
                f"...)); write '{column}:count_distinct' or 'count_distinct({column})'")
    if lower == "distinct":
        return "SLayer's filters have no DISTINCT; for 'a IS DISTINCT FROM b' write 'a != b'"
    if lower in _ORDER_WORDS:
        return f"a {kind} orders no rows; give the order in the query's 'order'"
    if lower in _CLOCK_WORDS:
        return "SLayer has no such function; write current_timestamp or now()"
    if lower in _PYTHON_WORDS:
        return "it is a word of SQL or Python that SLayer cannot read here; remove it"
    return None
