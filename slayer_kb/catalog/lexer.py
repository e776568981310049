"""A formula's or filter's tokens as SLayer 1.4.1's Mode-B parser reads them, and its CASE ... END.

One tokenizer and one CASE reader serve the check of a formula (``querychecks.formula_problem``,
which lowers each CASE as SLayer does before Python reads the rest) and the references it names
(``refs``), so the two never read a quoted string or a CASE differently. SLayer's parser is built on Python's, so a
formula's string is Python's: ``'it\\'s'`` is one string (a backslash escapes the next character)
and SQL's ``'it''s'`` is two side by side, over the same text. A filter's strings are read as
SLayer's memory resolver drops them, with no escapes: ``'C:\\'`` is one. A ``{variable}`` (filled
in before SLayer parses) and a backquoted name are values too, whose insides name nothing. The
CASE reader reads SLayer's own CASE tokens (``_CASE_TOKEN``: no numbers), not these.
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
        | (?P<op>::|<=|>=|!=|<>|==|\|\||[-+*/%=<>(),:\[\]|])
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
            if found and _runs_on(found[-1], kind, match):
                last = found[-1]
                found[-1] = Token("name", last.text + match.group(), last.start, match.end())
            elif kind != "space":
                found.append(Token(kind, match.group(), match.start(), match.end()))
            if kind == "unclosed" and match.group() in quotes:
                # What follows was read to the end without the quote closing, so no later quote of
                # its kind can close either: read them as unclosed at once, so that a text of many
                # is read once, not once a quote.
                quotes, at = quotes.replace(match.group(), ""), match.end()
                break
        else:
            return found


def uncommented(text: str, found: list[Token]) -> list[Token]:
    """``found`` without the tokens of each ``#`` comment (outside a string) to the end of its line."""
    kept: list[Token] = []
    comment_end = -1
    for token in found:
        if token.start < comment_end:
            continue
        if token.text == "#":
            line_end = text.find("\n", token.start)
            comment_end = len(text) if line_end < 0 else line_end
            continue
        kept.append(token)
    return kept


def _runs_on(name: Token, kind: str, match: re.Match[str]) -> bool:
    """Whether the token ``match`` goes on the name ``name`` ends with, as Python reads a name: a
    character the name pattern leaves out that Python takes inside one (a combining accent, a
    middle dot: an ``e`` and a combining acute accent are one name, é), and the letters or
    digits right after it."""
    if name.kind != "name" or name.end != match.start():
        return False
    if kind == "other":
        return _continues_name(match.group())
    return kind in ("name", "num") and _continues_name(name.text[-1])


def _continues_name(char: str) -> bool:
    """A character inside a Python name that the name pattern's ``\\w`` leaves out."""
    return ("a" + char).isidentifier() and not re.match(r"\w", char)


class MalformedCase(ValueError):
    """A CASE ... END SLayer refuses, in its words."""


_CASE_KEYWORDS = frozenset({"CASE", "WHEN", "THEN", "ELSE", "END"})
# SLayer's CASE tokens (``slayer.engine.syntax._CASE_TOKEN_RE``): strings, names (a dotted path is
# one, spaces around its dots and all) and brackets. It has no number, so in ``0.end`` the END is a
# keyword (``0.`` is the value). A {variable} and a backquoted name are strings, as above.
_CASE_TOKEN = re.compile(
    rf"""(?P<lit>{_STRINGS["'"]}|{_STRINGS['"']}|{_STRINGS["`"]}|\{{[^{{}}]*\}})
       | (?P<name>[^\W\d]\w*(?:\s*\.\s*[^\W\d]\w*)*)
       | (?P<op>[(\[\])])""",
    re.X | re.S,
)


class CaseReading(NamedTuple):
    """What SLayer reads of a formula (:func:`read_cases`)."""

    words: set[int]  # where the CASE keywords start
    end: int  # where SLayer's reading stops: the first unmatched closing bracket when a CASE is in it


def lower_cases(text: str) -> str:
    """``text`` with each CASE ... END as the ``iif(CONDITION, VALUE, ELSE)`` calls SLayer's
    Mode-B parser lowers it to before Python reads the rest (``slayer.engine.syntax._rw_case``):
    its values as written, each condition with SQL's spellings as Python's (``_sql_condition``),
    a simple CASE's as ``OPERAND == VALUE``. A CASE opens one only where a WHEN follows it
    (SLayer's rule): ``sum(case)`` names a column. With any CASE keyword, the text ends at an
    unmatched ``)``, as SLayer slices it. :class:`MalformedCase` for one SLayer refuses."""
    cases = _read(text)
    if cases is None:
        return text
    lowered, _ = cases.span(0, 0, frozenset())
    return lowered


def read_cases(text: str) -> CaseReading:
    """Where ``text``'s CASE ... END keywords are and where SLayer stops reading it, read as
    :func:`lower_cases` reads it; a malformed CASE's keywords up to its fault, and all the text."""
    cases = _read(text)
    if cases is None:
        return CaseReading(set(), len(text))
    try:
        _, stop = cases.span(0, 0, frozenset())
    except MalformedCase:
        return CaseReading(cases.words, len(text))  # the formula's check refuses it
    return CaseReading(cases.words, cases.tokens[stop].start if stop < len(cases.tokens) else len(text))


def _read(text: str) -> _Cases | None:
    """``text``'s CASE reading; None when it has no CASE keyword, as SLayer then reads it whole (an
    unmatched ')' ends no span)."""
    if "case" not in text.lower():
        return None
    cases = _Cases(text)
    return cases if "CASE" in cases.kinds else None


class _Cases:
    """One reading of ``text``'s CASE ... END expressions, noting where their keywords are."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = [Token(m.lastgroup or "", m.group(), m.start(), m.end()) for m in _CASE_TOKEN.finditer(text)]
        self.kinds = [self._keyword(token) for token in self.tokens]
        self.opening = self._openings()
        self.words: set[int] = set()

    def _keyword(self, token: Token) -> str | None:
        """The CASE keyword ``token`` is, upper-cased: ASCII as typed (``caſe`` is none), touching
        no letter the name pattern leaves out (a combining mark), as SLayer's ``_case_keyword``."""
        kind, word, start, end = token
        if kind != "name" or not word.isascii() or word.upper() not in _CASE_KEYWORDS:
            return None
        if _touches_name(self.text, start - 1) or _touches_name(self.text, end):
            return None
        return word.upper()

    def _openings(self) -> set[int]:
        """The CASE tokens that open one: the next keyword outside brackets is WHEN, before an
        unmatched closing bracket. Read right to left, noting at each depth the next keyword or
        closing bracket, so that nested CASEs are read once, not once each."""
        depths, depth = [], 0
        for token in self.tokens:
            depths.append(depth)
            depth += _bracket(token)
        following: dict[int, int] = {}
        opening: set[int] = set()
        for index in reversed(range(len(self.tokens))):
            kind = self.kinds[index]
            if kind == "CASE" and self.kinds[following.get(depths[index], index)] == "WHEN":
                opening.add(index)
            if kind is not None or _bracket(self.tokens[index]) == -1:
                following[depths[index]] = index
        return opening

    def span(self, at: int, start: int, stops: frozenset[str]) -> tuple[str, int]:
        """The text from ``start`` (token ``at``) to a keyword of ``stops`` outside brackets, an
        unmatched closing bracket or the end, each CASE in it lowered; and the token it stopped at."""
        parts: list[str] = []
        depth = 0
        while at < len(self.tokens):
            bracket, kind = _bracket(self.tokens[at]), self.kinds[at]
            if bracket == 1:
                depth += 1
            elif bracket == -1:
                if not depth:
                    break
                depth -= 1
            elif depth == 0 and kind in stops:
                break
            elif at in self.opening:
                parts.append(self.text[start : self.tokens[at].start])
                lowered, at = self.case(at)
                parts.append(lowered)
                start = self.tokens[at - 1].end
                continue
            at += 1
        parts.append(self.text[start : self.tokens[at].start if at < len(self.tokens) else len(self.text)])
        return "".join(parts).strip(), at

    def case(self, at: int) -> tuple[str, int]:
        """The CASE ... END at ``tokens[at]`` lowered, and the token after its END."""
        operand, at = self.span(self._past(at), self.tokens[at].end, _CASE_KEYWORDS - {"CASE"})
        branches: list[tuple[str, str]] = []
        while at < len(self.tokens) and self.kinds[at] == "WHEN":
            condition, at = self.span(self._past(at), self.tokens[at].end, frozenset({"THEN"}))
            if at >= len(self.tokens) or self.kinds[at] != "THEN":
                raise MalformedCase("a WHEN branch is missing its THEN.")
            value, at = self.span(self._past(at), self.tokens[at].end, frozenset({"WHEN", "ELSE", "END"}))
            branches.append((f"{operand} == {condition}" if operand else _sql_condition(condition), value))
        lowered = "None"
        if at < len(self.tokens) and self.kinds[at] == "ELSE":
            otherwise, at = self.span(self._past(at), self.tokens[at].end, frozenset({"END"}))
            lowered = otherwise or "None"
        if at >= len(self.tokens) or self.kinds[at] != "END":
            raise MalformedCase("missing END.")
        for condition, value in reversed(branches):
            lowered = f"iif({condition}, {value}, {lowered})"
        return lowered, self._past(at)

    def _past(self, at: int) -> int:
        """The token after the keyword at ``tokens[at]``, which is noted."""
        self.words.add(self.tokens[at].start)
        return at + 1


def _touches_name(text: str, at: int) -> bool:
    """Whether ``text[at]`` is a letter, digit or mark a name would go on with."""
    return 0 <= at < len(text) and ("a" + text[at]).isidentifier()


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


class Extract(NamedTuple):
    """One ``extract(... from ...)`` of a formula's tokens, by where its tokens are."""

    at: int  # its ``extract``
    word: int  # its first FROM directly inside its parentheses
    end: int  # its closing parenthesis

    def taken(self, found: list[Token]) -> bool:
        """Whether SLayer's parser rewrites it (``_rewrite_extract``): exactly one part, a name or a
        quoted string, before FROM (a comment's ``#`` is a token), and a value after it."""
        part = found[self.at + 2]
        return self.word == self.at + 3 and self.end > self.word + 1 and (
            (part.kind == "name" and "." not in part.text) or (part.kind == "lit" and part.text[0] in "'\""))


def extracts(found: list[Token]) -> list[Extract]:
    """Each ``extract(`` of ``found`` that SLayer's parser reads as its SQL spelling
    (``_extract_call``): closed, with a FROM directly inside its parentheses; nested ones too."""
    calls: list[Extract] = []
    for at, token in enumerate(found):
        if not (token.kind == "name" and token.text.lower() == "extract" and token.text.isascii()
                and found[at + 1 : at + 2] and found[at + 1].text == "(" and not (at and found[at - 1].text == ".")):
            continue
        depth, word = 0, None
        for index in range(at + 1, len(found)):
            text = found[index].text
            depth += (text == "(") - (text == ")")
            if depth == 0:
                if word is not None:
                    calls.append(Extract(at, word, index))
                break
            if depth == 1 and word is None and found[index].kind == "name" and text.lower() == "from":
                # Not a FROM that a dot before or right after makes part of a reference (SLayer's
                # ``_is_word``: ``x.from``, ``from.5``).
                after = found[index + 1] if index + 1 < len(found) else None
                glued = after is not None and after.start == found[index].end and after.text.startswith(".")
                word = index if found[index - 1].text != "." and not glued else None
    return calls
