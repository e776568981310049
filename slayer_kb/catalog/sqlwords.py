"""What to write instead of a word SLayer reads as a column that no catalog has: a word of SQL
or Python where a column cannot stand (``count(distinct x)``, ``order by x desc``, ``true:count``;
``desc:count`` aggregates a column ``desc``),
or the word after a spaced colon (``amount : sum``).

SLayer's resolver looks such a word up as a column and reports it not found. Reported so, it
reads as a stale tag (a column the catalog no longer has: sync notes it, search says re-save,
suggestions name columns spelled alike), though no catalog makes the query right. It is the
query's own slip, refused as such with the fix. Where a column can stand (``desc = 'late'``,
``offset > 1``), the word is a column like any other: one the catalog dropped is stale.
"""

from __future__ import annotations

import keyword
import re

from . import lexer

# Python's own words (True, not, ...): SLayer's engine reads a formula as Python. None in Python's
# spelling only: ``none`` is a name to Python, a column to SLayer.
_PYTHON_WORDS = ({word.lower() for word in keyword.kwlist} - {"none"}) | {"None"}
_ORDER_WORDS = {"order", "by", "asc", "desc", "limit", "offset"}
_CLOCK_WORDS = {"current_time", "localtime", "localtimestamp"}
# The tokens an operand ends with: after one, a word is SQL's keyword (``amount desc``), not a
# column; the words that join operands end none (``x > 1 and desc = 'late'``).
_OPERAND_END = ("name", "num", "lit")
_JOINING = {"and", "or", "not", "is", "in", "like", "between", "case", "when", "then", "else"}


def fix_for(word: str, text: str, kind: str) -> str | None:
    """Why ``word`` of ``text`` (a ``formula`` or ``filter``) names no column, and what to write
    instead; None for a word that may be a column the catalog lacks (stale, not invalid)."""
    if "." in word:
        return None
    found = lexer.tokens(text, sql=kind == "filter")
    kept = lexer.uncommented(text, found)
    text = _code(text, found, kept)  # a string's or a comment's words are no slip of the query's
    bare = re.escape(word)
    spaced = re.search(rf"([\w.]+)(\s*)(::?)(\s*){bare}\b", text)
    if spaced and (spaced.group(2) or spaced.group(4)):
        name, colon = spaced.group(1), spaced.group(3)
        return f"write '{name}{colon}{word}', with no spaces around the colon"
    lower = "None" if word == "None" else word.lower()
    if lower in _PYTHON_WORDS and re.search(rf"(?<!:)\b{bare}:\w", text):
        return "it is a word of SLayer's formulas (Python's); name a column before ':' ('*:count' counts rows)"
    if lower in _PYTHON_WORDS:
        return "it is a word of SQL or Python that SLayer cannot read here; remove it"
    keywords = [place for place in _places(word, kept) if _keyword_at(place, lower)]
    if not keywords:
        return None  # where a column stands: a column, maybe one the catalog dropped
    distinct = re.search(r"count\s*\(\s*distinct\s+([\w.]+)\s*\)", text, re.IGNORECASE)
    if lower == "distinct" and distinct and kind == "filter":
        column = distinct.group(1)
        return (f"SLayer's memory resolver reads it as a column in a filter (its engine runs count(distinct "
                f"...)); write '{column}:count_distinct' or 'count_distinct({column})'")
    if lower == "distinct" and any(before.text.lower() == "not" for before, _, _ in keywords):
        return ("SLayer's filters have no DISTINCT; for 'a IS NOT DISTINCT FROM b' write 'a = b' (or "
                "'(a = b or (a is null and b is null))' where both may be null)")
    if lower == "distinct":
        return "SLayer's filters have no DISTINCT; for 'a IS DISTINCT FROM b' write 'a != b'"
    if lower in ("limit", "offset"):
        return f"a {kind} {lower}s no rows; give it as the query's '{lower}'"
    if lower in _ORDER_WORDS:
        return f"a {kind} orders no rows; give the order in the query's 'order'"
    return None


def note_for(word: str) -> str | None:
    """A hint for a word not found that a column may be named, or SQL may mean (``current_time``)."""
    if word.lower() in _CLOCK_WORDS:
        return f"If {word} means SQL's clock, SLayer has none: write now() (or current_date() for the date)."
    if word.lower() == "none":
        return f"If {word} means no value, write null ('x is null', not 'x = {word}')."
    return None


def _code(text: str, found: list[lexer.Token], kept: list[lexer.Token]) -> str:
    """``text`` with its strings' insides and its comments (the tokens ``kept`` leaves out of
    ``found``) blanked, every other character where it was."""
    chars = list(text)
    outside = set(kept)
    for token in found:
        start = token.start + 1 if token.kind == "lit" and token in outside else token.start
        end = token.end - 1 if token.kind == "lit" and token in outside else token.end
        if token.kind == "lit" or token not in outside:
            chars[start:end] = " " * max(end - start, 0)
    return "".join(chars)


def _places(word: str, found: list[lexer.Token]) -> list[tuple[lexer.Token, lexer.Token, lexer.Token]]:
    """Each token of ``found`` that is ``word``, with the tokens before and after it."""
    edge = lexer.Token("", "", -1, -1)
    padded = [edge, *found, edge]
    return [(padded[at - 1], token, padded[at + 1]) for at, token in enumerate(padded) if token.text == word]


def _keyword_at(place: tuple[lexer.Token, lexer.Token, lexer.Token], lower: str) -> bool:
    """Whether the word stands where SQL's keyword would and no column could: ``distinct`` before
    its operand (not before a word joining operands: ``distinct is null`` reads a column) or after
    IS; ``order by``; ``asc``, ``desc``, ``limit`` and ``offset`` after an operand, or the last two
    before a number."""
    before, _, after = place
    if lower == "distinct":
        operand = (after.kind in ("name", "num", "lit") and after.text.lower() not in _JOINING) or after.text in ("(", "*")
        return operand or before.text.lower() == "is"
    if lower == "order":
        return after.text.lower() == "by"
    if lower == "by":
        return before.text.lower() in ("order", "group")
    if lower in _ORDER_WORDS:
        ends_operand = (before.kind in _OPERAND_END and before.text.lower() not in _JOINING) or before.text == ")"
        return ends_operand or (lower in ("limit", "offset") and after.kind == "num")
    return False
