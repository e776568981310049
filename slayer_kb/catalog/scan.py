"""Formulas and filters read for the entity references they hold (a SlayerQuery's measures,
filters, computed dimensions and order expressions).

Formulas and filters are read with the tokens of :mod:`lexer` (the ones the check of a formula
reads) instead of SLayer's full parser, because slayer-kb only needs to know which columns a query
touches, not how to compile it:

- quoted strings (a formula's Python's, as SLayer's parser reads them: ``'it\\'s'`` is one,
  ``'it''s'`` two side by side; a filter's with no escapes, as SLayer's memory resolver reads them:
  ``'C:\\'`` is one), backquotes and ``{var}`` placeholders are dropped first, so nothing inside
  them is ever tagged (after a quote that closes nowhere, nothing is), nor anything in a ``#``
  comment, to the end of its line, which Python skips;
- a formula with a CASE keyword is read up to an unmatched ``)``, where SLayer's CASE reader stops
  (it drops the rest);
- an identifier directly followed by ``(`` is a function (``sum``, ``cumsum``, ``lower``, ...);
- an identifier after ``:`` or ``::`` is an aggregation (``amount:sum``) or a cast type;
- a keyword argument (``weight=qty``, ``partition_by=region``) is skipped with its value: it is
  written after a ``,`` inside a call, or first inside a colon aggregation's ``(...)``;
- numbers, typed-literal prefixes (``DATE '2024-01-01'``) and cast targets (``AS date``) are
  skipped, and in filters also SQL words (:data:`SQL_WORDS`);
- ``count(*)`` / ``*:count`` yield the marker :data:`SOURCE_MODEL` (``"*"``): the query's source
  model, which :meth:`Resolver.resolve` understands; ``count(m.*)`` / ``m.*:count`` yield ``"m.*"``,
  which resolves to the model ``m``. ``*`` with any other aggregation is an error; any other ``*``
  is a multiplication.

Every other identifier (``amount``, ``customers.regions.name``) is a reference, returned in order
of first appearance without repeats. ``-`` is always the minus operator here, so a catalog name
containing ``-`` cannot be written inside a formula or filter (it can as a plain reference).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import InvalidInputError
from ..core.text import kind_of, shown_value
from . import lexer
from .lexer import Token
from .modeb import GRANULARITIES, aggregation_call

SOURCE_MODEL = "*"
"""What :func:`formula_references` / :func:`filter_references` return for ``count(*)``."""

# The words of a filter that name no column: SLayer 1.4.1's memory resolver skips these alone
# (``_FILTER_TOKEN_BLACKLIST``) and reads every other word as a column, as its engine does where
# the filter parses (a column named ``desc`` or ``offset``); a word SQL has and SLayer not
# (``ilike``, ``interval``) is a column neither finds, unless a string follows it (a typed
# literal's prefix, below). And ``as``, which with the type after it is a cast's
# (``CAST(x AS date)``): a Python keyword, no column SLayer's engine could read.
SQL_WORDS = frozenset(
    """
    and or not is null in like between true false case when then else end exists as
    coalesce nullif cast ln log log2 log10 exp sqrt pow power abs round floor ceil ceiling
    current_date current_timestamp now
    """.split()
)


_NONE = Token("", "", -1, -1)
_SPACED_DOT = re.compile(r"(?<=[A-Za-z_])\s*\.\s*(?=[A-Za-z_])")
# The words of a formula that name no column: Python's operators, and the constants SLayer reads
# in any case (true, false, null; None as Python spells it: ``none`` is a column, as in SLayer).
# The SQL words SLayer's Mode-B parser rewrites (CASE WHEN, count(distinct x), extract(year from x))
# are words only in those places (:func:`_rewritten_words`); anywhere else `end` or `from` is a
# column like any other.
_FORMULA_WORDS = frozenset({"and", "or", "not", "in", "is", "true", "false", "null"})
# The calls that take a granularity among their later arguments (SLayer's time_shift(x, -1, month)).
_GRANULAR = frozenset({"time_shift"})


@dataclass
class _Frame:
    """One open ``(`` or ``[``."""

    func: str | None  # the function it calls, lower-cased; None for grouping parentheses
    colon: bool  # the argument list of a colon aggregation, x:agg(...)
    inherited: bool  # inside a keyword argument's value further out
    path: str | None = None  # a method call's path, onto which its value's names go
    method: bool = False  # the method call's own frame: its later arguments take no path
    keyword: bool = False  # inside a keyword argument's value of this call
    argument: int = 0  # which of the call's arguments is being read

    @property
    def skip(self) -> bool:
        return self.inherited or self.keyword


@dataclass(frozen=True)
class Scanned:
    """The references a formula or filter names, in order, and those it names only in an
    aggregation's later positional argument (``last(amount, original_order.created_at)``), which
    SLayer's memory resolver does not read and its engine reads from the query's source model."""

    refs: list[str]
    later: frozenset[str]
    # Why SLayer refuses the text whatever the catalog (``sum(*)``, a backquoted name), where
    # it does: its other names are still read, so that two catalogs compare on them too.
    refused: InvalidInputError | None = None
    # The names a formula reads as an aggregation's whole value (sum(amount), amount:sum): a column
    # even where the query names a measure so, as SLayer's memory resolver reads them.
    aggregated: frozenset[str] = frozenset()


def formula_references(formula: str) -> list[str]:
    """Column references of a measure formula, in either syntax (``sum(x)``, ``x:sum``)."""
    return _refs(scan_formula(formula))


def scan_formula(formula: str) -> Scanned:
    """:func:`formula_references`, with the names read only in an aggregation's later argument."""
    return _scan(formula, "formula", sql=False)


def filter_references(filter_text: str) -> list[str]:
    """Column references of a SQL-ish filter; literals, placeholders and SQL words are skipped."""
    return _refs(scan_filter(filter_text))


def scan_filter(filter_text: str) -> Scanned:
    """:func:`filter_references` as :class:`Scanned`: SLayer's memory resolver reads every word of
    a filter, so none is ``later``."""
    return _scan(filter_text, "filter", sql=True)


def _refs(scanned: Scanned) -> list[str]:
    if scanned.refused is not None:
        raise scanned.refused
    return scanned.refs


def _scan(text: str, what: str, sql: bool) -> Scanned:
    if not isinstance(text, str):
        raise InvalidInputError(f"A {what} must be a string, got {kind_of(text)}.")
    # Python, so a formula, reads `customers . city` as customers.city; SQL, so a filter, does not.
    scanned = text if sql else _SPACED_DOT.sub(".", text)
    # A formula as SLayer reads it: with a CASE in it, up to an unmatched ')' (SLayer drops the rest).
    cases = lexer.CaseReading(set(), len(scanned)) if sql else lexer.read_cases(scanned)
    found = [token for token in lexer.tokens(scanned, sql) if token.start < cases.end]
    # Every token is kept, one SLayer refuses too: dropped, it let the name before it meet the
    # string after it, which then read as a typed literal (DATE '2024-01-01') and hid the name;
    # but a comment's, which Python skips.
    tokens = lexer.uncommented(scanned, found)
    # A quote that closes nowhere: the rest is inside its string (the quote kept: it opens one).
    unclosed = next((at for at, token in enumerate(tokens) if token.kind == "unclosed"), len(tokens) - 1)
    tokens = tokens[: unclosed + 1]
    refused = _backquoted(tokens, text, what) if sql else None
    refs: dict[str, bool] = {}  # each reference: whether it is read only in later arguments
    aggregated: set[str] = set()
    stack: list[_Frame] = []
    rewritten = set() if sql else _rewritten_words(tokens, cases.words)
    for index, token in enumerate(tokens):
        if token.text in ("(", "["):
            stack.append(_open_frame(tokens, index, stack, sql))
        elif token.text in (")", "]"):
            if stack:
                stack.pop()
        elif token.text == ",":
            if stack:
                stack[-1].keyword = False
                stack[-1].argument += 1
                if stack[-1].method:
                    stack[-1].path = None  # a method call's later arguments are literals
        elif stack and stack[-1].skip:
            continue
        else:
            try:
                if token.kind == "name" and index not in rewritten:
                    ref = _name_reference(tokens, index, stack, sql, text, what)
                    if ref is not None:
                        refs[ref] = refs.get(ref, True) and not sql and _in_later_argument(stack)
                        if not sql and _aggregated(tokens, index, stack):
                            aggregated.add(ref)
                elif token.text == "*" and _star(tokens, index, stack, sql, text, what):
                    refs[f"{stack[-1].path}.*" if stack and stack[-1].path else SOURCE_MODEL] = False
            except InvalidInputError as exc:  # the first refusal is the text's; the rest still read
                refused = refused or exc
    return Scanned(list(refs), frozenset(ref for ref, later in refs.items() if later), refused, frozenset(aggregated))


def _aggregated(tokens: list[Token], index: int, stack: list[_Frame]) -> bool:
    """Whether the name at ``index`` is an aggregation's whole value: ``x:agg``, or ``agg(x)``
    (``count(distinct x)``, ``agg(x, ...)``) as its first argument alone."""
    after = tokens[index + 1].text if index + 1 < len(tokens) else ""
    if after == ":":
        return True
    if not stack or after not in (")", ","):
        return False
    frame = stack[-1]
    before = tokens[index - 1].text.lower() if index else ""
    return (bool(frame.func) and not frame.method and frame.argument == 0 and aggregation_call(frame.func or "")
            and (before == "(" or (before == "distinct" and index > 1 and tokens[index - 2].text == "(")))


def _in_later_argument(stack: list[_Frame]) -> bool:
    """Whether the name read is inside a later positional argument of an aggregation's call; in
    ``x:agg(...)``, every argument is one (``x`` is its value)."""
    return any((frame.argument or frame.colon) and frame.func and not frame.method and aggregation_call(frame.func)
               for frame in stack)


def _backquoted(tokens: list[Token], text: str, what: str) -> InvalidInputError | None:
    """The refusal of a filter's backquoted name (outside a string): SLayer's resolver reads the
    name and its engine does not parse the backquotes."""
    quoted = next((token for token in tokens if token.kind == "lit" and token.text.startswith("`")), None)
    if quoted is None:
        return None
    return InvalidInputError(
        f"{what} {shown_value(text)}: a backquote quotes no name in a filter: SLayer's engine cannot parse it. "
        f"Write the name bare: {quoted.text.strip('`')}."
    )


def _rewritten_words(tokens: list[Token], case_words: set[int]) -> set[int]:
    """Where a formula's tokens are SQL words SLayer rewrites rather than columns: the keywords of
    a CASE ... END (found where ``case_words`` says they start, read as SLayer lowers them);
    distinct right after ``count(`` and before its operand (``-amount``, ``1``); the part, quoted
    or not, and FROM of an ``extract(year from x)`` SLayer rewrites."""
    words: set[int] = set()
    for index, token in enumerate(tokens):
        if token.kind != "name":
            continue
        word = token.text.lower()
        before = [t.text.lower() for t in tokens[max(index - 2, 0) : index]]
        after = tokens[index + 1 : index + 3]
        if token.start in case_words:
            pass
        elif word == "distinct" and before == ["count", "("] and after and after[0].text not in (")", ","):
            pass
        else:
            continue
        words.add(index)
    for call in lexer.extracts(tokens):  # a malformed one's words are columns: the check refuses it
        if call.taken(tokens):
            words |= {call.at + 2, call.word}
    return words


def _open_frame(tokens: list[Token], index: int, stack: list[_Frame], sql: bool) -> _Frame:
    """The frame ``tokens[index]`` opens. A formula's ``customers.sum(city)`` is SLayer's method
    form of ``sum(customers.city)``: its value's names go onto the path (a filter's, SLayer's
    resolver reads bare)."""
    before = tokens[index - 1] if index >= 1 else _NONE
    func = before.text.lower() if before.kind == "name" else None
    colon = func is not None and index >= 2 and tokens[index - 2].text == ":"
    path = before.text.rpartition(".")[0] if func is not None and not sql else None
    return _Frame(func, colon, bool(stack) and stack[-1].skip, path or (stack[-1].path if stack else None), bool(path))


def _name_reference(
    tokens: list[Token], index: int, stack: list[_Frame], sql: bool, text: str, what: str
) -> str | None:
    name = tokens[index].text
    before = tokens[index - 1] if index >= 1 else _NONE
    after = tokens[index + 1] if index + 1 < len(tokens) else _NONE
    # A filter's :agg and ::type, as SLayer's resolver drops them, are written together.
    if after.text == "(" or (before.text in (":", "::") and not (sql and before.end < tokens[index].start)):
        return None  # a function, an aggregation name or a cast type
    if (
        after.text == "="
        and stack
        and (before.text == "," or (before.text == "(" and stack[-1].colon))
    ):
        stack[-1].keyword = True
        return None
    if after.kind in ("lit", "unclosed") or (before.kind == "name" and before.text.lower() == "as"):
        return None  # DATE '2024-01-01', CAST(x AS date)
    # A formula's x:agg aggregates the column x, whatever its name (SLayer's true:count counts one).
    aggregated = not sql and after.text == ":" and after.start == tokens[index].end
    if not aggregated and (name == "None" or (sql and name.lower() in SQL_WORDS)):
        return None
    if not aggregated and not sql and name.lower() in _FORMULA_WORDS:
        return None
    if not sql and before.text == "," and name in GRANULARITIES and stack and stack[-1].func in _GRANULAR:
        return None  # a transform's granularity: time_shift(sum(amount), -1, month)
    if stack and stack[-1].path:
        name = f"{stack[-1].path}.{name}"  # a method call's arguments: its object's path too (ª.A(A))
    if not name.isascii():
        raise InvalidInputError(
            f"{what} {shown_value(text)}: '{name}' is not a name SLayer can use; columns are ASCII letters, "
            "digits and '_'."
        )
    if name.endswith(".*") and not _counted(tokens, index, stack, sql):
        _refuse_miscased_count(tokens, index, stack, text, what)
        raise InvalidInputError(
            f"{what} {shown_value(text)}: '{name}' only works as count({name}) or {name}:count."
        )
    return name


def _star(
    tokens: list[Token], index: int, stack: list[_Frame], sql: bool, text: str, what: str
) -> bool:
    """Whether this ``*`` counts rows (True) or multiplies (False); ``sum(*)`` is an error."""
    if _counted(tokens, index, stack, sql):
        return True
    before = tokens[index - 1] if index >= 1 else _NONE
    after = tokens[index + 1] if index + 1 < len(tokens) else _NONE
    if after.text == ":" or (before.text == "(" and after.text in (")", ",")):
        _refuse_miscased_count(tokens, index, stack, text, what)
        raise InvalidInputError(
            f"{what} {shown_value(text)}: only count takes '*' (count(*) or *:count counts the source "
            "model's rows)."
        )
    return False


def _refuse_miscased_count(
    tokens: list[Token], index: int, stack: list[_Frame], text: str, what: str
) -> None:
    """A formula's ``COUNT(*)``: SLayer's Mode-B parser takes only the lower-case count."""
    if _counted(tokens, index, stack, sql=True):
        # A method call's path goes onto the star, as SLayer reads customers.COUNT(*).
        path, _, count = tokens[index - 2].text.rpartition(".")
        star = f"{path}.{tokens[index].text}" if path else tokens[index].text
        raise InvalidInputError(f"{what} {shown_value(text)}: {star_refused(f'{star}:{count}', star)}")


def _counted(tokens: list[Token], index: int, stack: list[_Frame], sql: bool) -> bool:
    """``*`` or ``m.*`` as the argument of ``count(...)`` or before ``:count``; a filter is SQL,
    whose COUNT(*) SLayer takes, where a formula's COUNT(*) it refuses."""
    before = tokens[index - 1] if index >= 1 else _NONE
    after = tokens[index + 1] if index + 1 < len(tokens) else _NONE
    if after.text == ":":
        agg = tokens[index + 2] if index + 2 < len(tokens) else _NONE
        return agg.kind == "name" and agg.text == "count"
    return (
        before.text == "("
        and bool(stack)
        and index >= 2
        and (tokens[index - 2].text.lower() if sql else tokens[index - 2].text).rpartition(".")[2] == "count"
        and after.text in (")", ",")
    )


def star_refused(ref: str, star: str) -> str:
    """SLayer's refusal of ``star`` (``*`` or ``m.*``) counted by anything but a lower-case count:
    ``sum(*)``, ``avg(orders.*)``, a formula's ``COUNT(orders.*)``."""
    form = "use 'count(*)' to refer to a model's row count" if star == "*" else "use the 'count(<model>.*)' form"
    return f"'{ref}' is not a valid entity reference; {form}."
