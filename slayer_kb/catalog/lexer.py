"""A formula's or filter's tokens as SLayer 1.4.1's Mode-B parser reads them, and its CASE ... END.

One tokenizer serves the check of a formula (``querychecks.formula_problem``, which lowers each
CASE as SLayer does before Python reads the rest) and the references it names (``refs``), so the
two never read a quoted string or a CASE differently. SLayer's parser is built on Python's, so a
formula's string is Python's: ``'it\\'s'`` is one string (a backslash escapes the next character)
and SQL's ``'it''s'`` is two side by side, over the same text. A filter's strings are read as
SLayer's memory resolver drops them, with no escapes: ``'C:\\'`` is one. A ``{variable}`` (filled
in before SLayer parses) and a backquoted name are values too, whose insides name nothing.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

# Each quote's string; a backquoted name has no escapes.
_SINGLE_QUOTED = r"'(?:\\.|[^'\\])*'"
_STRINGS = {"'": _SINGLE_QUOTED, '"': r'"(?:\\.|[^"\\])*"', "`": r"`[^`]*`"}
# A filter's, as SLayer's memory resolver drops them (``_FILTER_LITERAL_RE``): no escapes.
_SQL_STRINGS = {"'": r"'[^']*'", '"': r'"[^"]*"', "`": _STRINGS["`"]}
_QUOTES = "".join(_STRINGS)


class Token(NamedTuple):
    kind: str  # lit, unclosed (a quote that closes nowhere), num, name, op or other
    text: str
    start: int
    end: int


@functools.cache
def _pattern(quotes: str, sql: bool) -> re.Pattern[str]:
    """The tokens, with a string only for the quotes of ``quotes``: the others close nowhere."""
    strings = _SQL_STRINGS if sql else _STRINGS
    literals = "|".join([*(strings[quote] for quote in quotes), r"\{[^{}]*\}"])
    return re.compile(
        rf"""
          (?P<space>\s+)
        | (?P<lit>{literals})
        | (?P<unclosed>[{_QUOTES}])
        | (?P<num>\.?\d[\w.]*)
        | (?P<name>[^\W\d]\w*(?:\.[^\W\d]\w*)*(?:\.\*)?)
        | (?P<op>::|<=|>=|!=|<>|==|\|\||[-+*/%=<>(),:\[\]])
        | (?P<other>.)
        """,
        re.X | re.S,
    )


def tokens(text: str, sql: bool = False) -> list[Token]:
    """``text``'s tokens, spaces left out; ``sql``: a filter's, whose strings have no escapes. A
    quote that closes nowhere is an ``unclosed`` token and the text after it is read on, as SLayer
    reads it."""
    found: list[Token] = []
    quotes, at = _QUOTES, 0
    while True:
        for match in _pattern(quotes, sql).finditer(text, at):
            kind = match.lastgroup or ""
            if kind != "space":
                found.append(Token(kind, match.group(), match.start(), match.end()))
            if kind == "unclosed" and match.group() in quotes:
                # What follows was read to the end without the quote closing, so no later quote of
                # its kind can close either: read them as unclosed at once, so that a text of many
                # is read once, not once a quote.
                quotes, at = quotes.replace(match.group(), ""), match.end()
                break
        else:
            return found


class MalformedCase(ValueError):
    """A CASE ... END SLayer refuses, in its words."""


_CASE_KEYWORDS = frozenset({"CASE", "WHEN", "THEN", "ELSE", "END"})
_NAME_TAIL = re.compile(r"[^\W\d]\w*\Z")


def lower_cases(text: str) -> str:
    """``text`` with each CASE ... END as the ``iif(CONDITION, VALUE, ELSE)`` calls SLayer's
    Mode-B parser lowers it to before Python reads the rest (``slayer.engine.syntax._rw_case``):
    its values as written, each condition with SQL's spellings as Python's (``_sql_condition``),
    a simple CASE's as ``OPERAND == VALUE``. A CASE opens one only where a WHEN follows it
    (SLayer's rule): ``sum(case)`` names a column. :class:`MalformedCase` for one SLayer refuses."""
    if "case" not in text.lower():
        return text
    cases = _Cases(text, tokens(text))
    if not any(cases.keyword(at) == "CASE" for at in range(len(cases.tokens))):
        return text  # as SLayer: with no CASE, nothing is sliced (an unmatched ')' ends a span)
    lowered, _ = cases.span(0, 0, frozenset())
    return lowered


def case_keywords(text: str, found: list[Token]) -> set[int]:
    """Where (the start of each token of ``found``, ``text``'s tokens) a CASE ... END's keywords
    are, read as :func:`lower_cases` reads them; those of a malformed one up to its fault."""
    if "case" not in text.lower():
        return set()
    cases = _Cases(text, found)
    try:
        cases.span(0, 0, frozenset())
    except MalformedCase:
        pass  # the formula's check refuses it; its references are read as far as it goes
    return cases.keywords


class _Cases:
    """One reading of ``text``'s CASE ... END expressions, noting where their keywords are."""

    def __init__(self, text: str, found: list[Token]) -> None:
        self.text = text
        self.tokens = found
        self.keywords: set[int] = set()

    def keyword(self, at: int) -> str | None:
        """The CASE keyword ``tokens[at]`` is, upper-cased: ASCII as typed (``caſe`` is none),
        touching no letter the name pattern leaves out (a combining mark) and no part of a dotted
        path written with spaces (``orders . end``, which SLayer reads as one name); ``end.*`` is
        END, then ``.*``, as SLayer reads it."""
        kind, word, start, _end = self.tokens[at]
        stem = word.removesuffix(".*")
        if kind != "name" or not stem.isascii() or stem.upper() not in _CASE_KEYWORDS:
            return None
        if any(0 <= i < len(self.text) and ("a" + self.text[i]).isidentifier() for i in (start - 1, self._end(at))):
            return None
        if self._dot(at - 1, at - 2) or (stem == word and self._dot(at + 1, at + 2)):
            return None
        return stem.upper()

    def _end(self, at: int) -> int:
        """Where the keyword at ``tokens[at]`` ends (before the ``.*`` of ``end.*``)."""
        token = self.tokens[at]
        return token.start + len(token.text.removesuffix(".*"))

    def _dot(self, dot: int, name: int) -> bool:
        """Whether ``tokens[dot]`` is a dot and ``tokens[name]`` a name it joins: one, or before it a
        number that ends in one (``9a``, where SLayer's name begins at the ``a``)."""
        if not (0 <= min(dot, name) and max(dot, name) < len(self.tokens) and self.tokens[dot].text == "."):
            return False
        kind, word = self.tokens[name].kind, self.tokens[name].text
        if name < dot:  # a name before the dot ends in a letter or digit (not orders.*)
            return _NAME_TAIL.search(word) is not None and kind in ("name", "num")
        return kind == "name"

    def opens(self, at: int) -> bool:
        """Whether the CASE at ``tokens[at]`` opens one: the next keyword outside brackets is WHEN."""
        depth = 0
        for index in range(at + 1, len(self.tokens)):
            bracket = _bracket(self.tokens[index])
            if bracket == 1:
                depth += 1
            elif bracket == -1:
                if not depth:
                    return False
                depth -= 1
            elif depth == 0 and (keyword := self.keyword(index)) is not None:
                return keyword == "WHEN"
        return False

    def span(self, at: int, start: int, stops: frozenset[str]) -> tuple[str, int]:
        """The text from ``start`` (token ``at``) to a keyword of ``stops`` outside brackets, an
        unmatched closing bracket or the end, each CASE in it lowered; and the token it stopped at."""
        parts: list[str] = []
        depth = 0
        while at < len(self.tokens):
            bracket = _bracket(self.tokens[at])
            if bracket == 1:
                depth += 1
            elif bracket == -1:
                if not depth:
                    break
                depth -= 1
            elif depth == 0 and self.keyword(at) in stops:
                break
            elif self.keyword(at) == "CASE" and self.opens(at):
                parts.append(self.text[start : self.tokens[at].start])
                lowered, at = self.case(at)
                parts.append(lowered)
                start = self._end(at - 1)
                continue
            at += 1
        parts.append(self.text[start : self.tokens[at].start if at < len(self.tokens) else len(self.text)])
        return "".join(parts).strip(), at

    def case(self, at: int) -> tuple[str, int]:
        """The CASE ... END at ``tokens[at]`` lowered, and the token after its END."""
        operand, at = self.span(self._past(at), self._end(at), _CASE_KEYWORDS - {"CASE"})
        branches: list[tuple[str, str]] = []
        while at < len(self.tokens) and self.keyword(at) == "WHEN":
            condition, at = self.span(self._past(at), self._end(at), frozenset({"THEN"}))
            if at >= len(self.tokens) or self.keyword(at) != "THEN":
                raise MalformedCase("a WHEN branch is missing its THEN.")
            value, at = self.span(self._past(at), self._end(at), frozenset({"WHEN", "ELSE", "END"}))
            branches.append((f"{operand} == {condition}" if operand else _sql_condition(condition), value))
        lowered = "None"
        if at < len(self.tokens) and self.keyword(at) == "ELSE":
            otherwise, at = self.span(self._past(at), self._end(at), frozenset({"END"}))
            lowered = otherwise or "None"
        if at >= len(self.tokens) or self.keyword(at) != "END":
            raise MalformedCase("missing END.")
        for condition, value in reversed(branches):
            lowered = f"iif({condition}, {value}, {lowered})"
        return lowered, self._past(at)

    def _past(self, at: int) -> int:
        """The token after the keyword at ``tokens[at]``, which is noted."""
        self.keywords.add(self.tokens[at].start)
        return at + 1


def _bracket(token: Token) -> int:
    """1 for an opening bracket, -1 for a closing one, else 0."""
    if token.kind != "op":
        return 0
    return 1 if token.text in "([" else -1 if token.text in ")]" else 0


# SQL's spellings in a WHEN condition, as SLayer's ``_normalize_sql_filter_operators`` rewrites
# them outside quoted strings: [NOT] LIKE 'p' as a call, NULL, the keywords IS NOT AND OR IN in
# any case, <> and || (concatenation, which SLayer reads as |), and a lone = as ==. BETWEEN is
# not among them: SLayer refuses it.
_SQL_LIKE = re.compile(rf"\b(\w+\([^()]*\)|(?:\w+\.)*\w+)\s+([nN][oO][tT]\s+)?[lL][iI][kK][eE]\s+({_SINGLE_QUOTED})")
_SQL_WORDS = tuple((re.compile(r"(?<![\w.])" + "".join(f"[{c}{c.upper()}]" for c in word) + r"(?![\w.])"), python)
                   for word, python in (("null", "None"), ("is", "is"), ("not", "not"), ("and", "and"),
                                        ("or", "or"), ("in", "in")))
_LONE_EQUALS = re.compile(r"(?<![=!<>])=(?!=)")


def _sql_condition(condition: str) -> str:
    """A WHEN condition as SLayer rewrites it before Python reads it (above)."""
    spans = _literals(condition)

    def like(found: re.Match[str]) -> str:
        if any(start <= found.start() < end for start, end in spans):  # within a quoted string
            return found.group()
        return ("not " if found.group(2) else "") + f"like({found.group(1)}, {found.group(3)})"

    condition = _SQL_LIKE.sub(like, condition)
    rewritten: list[str] = []
    at = 0
    for start, end in [*_literals(condition), (len(condition), len(condition))]:
        part = condition[at:start]
        for word, python in _SQL_WORDS:
            part = word.sub(python, part)
        rewritten += [_LONE_EQUALS.sub("==", part.replace("<>", "!=").replace("||", "|")), condition[start:end]]
        at = end
    return "".join(rewritten)


def _literals(text: str) -> list[tuple[int, int]]:
    return [(token.start, token.end) for token in tokens(text) if token.kind == "lit"]
