"""A SlayerQuery's entity references: the tokenizer behind ``linked_entities`` given as a query.

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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..core.errors import InvalidInputError, KBError, ReferenceFormError, ResolutionError
from ..core.nesting import check_depth
from ..core.text import kind_of, shown_value
from . import lexer, sqlwords
from .lexer import Token
from .querychecks import formula_problem, unspaced_colon
from .querycolumns import GRANULARITIES
from .slayerquery import Item, Shape, check_query

if TYPE_CHECKING:
    from .catalog import Model

SOURCE_MODEL = "*"
"""What :func:`formula_references` / :func:`filter_references` return for ``count(*)``."""

# The longest entity reference taken (characters): ``shop.orders.amount:sum`` is 22.
MAX_REFERENCE = 1000

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

# ----------------------------------------------------------------------------------------------
# Single references
# ----------------------------------------------------------------------------------------------


def split_references(text: str) -> list[str]:
    """Comma-separated references; a comma inside parentheses belongs to its reference."""
    if not isinstance(text, str):
        raise InvalidInputError(f"Entity references must be a string, got {kind_of(text)}.")
    # Without brackets every comma splits: str.split, where the loop took seconds on 17 MB.
    parts = _split_top(text) if "(" in text or "[" in text else text.split(",")
    return [part.strip() for part in parts if part.strip()]


def check_reference_length(ref: str) -> str:
    """``ref``, refused when longer than MAX_REFERENCE: no datasource, model and column name one so
    long, and spelling suggestions for it took seconds."""
    if len(ref) > MAX_REFERENCE:
        raise ReferenceFormError(
            f"entity reference {shown_value(ref)} is over the limit of {MAX_REFERENCE} characters: name a "
            "datasource, model, column or memory:<id> (e.g. 'orders.amount')."
        )
    return ref


def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    depth = start = 0
    for index, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            # A stray closing bracket must not swallow the commas after it.
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


class RefTarget(NamedTuple):
    name: str  # the reference without its aggregation; "" for a star
    star: bool  # count(*) / *:count: the query's source model


_COLON_AGG = re.compile(
    r"(?P<head>[^:()]*?)(?P<gap>\s*):\s*(?P<agg>[A-Za-z_]\w*)\s*(?:\((?P<args>.*)\))?", re.S
)
_DISTINCT = re.compile(r"^distinct\s+", re.I)
_CALL_HEAD = re.compile(r"(?P<func>[A-Za-z_]\w*)\s*\(")
_KWARG = re.compile(r"\s*[A-Za-z_]\w*\s*=(?!=)")
_PLAIN_REF = re.compile(r"(?!\d)[\w.\-]+")


def parse_reference(ref: str) -> RefTarget:
    """What a single, possibly aggregated, reference names (its aggregation peeled).

    As SLayer's ``split_entity_agg_ref``: one aggregation, ``agg(column)`` or ``column:agg``, names
    its column (``count(distinct x)`` too). Raises :class:`ReferenceFormError` for what is not one
    reference: ``sum(*)``, ``sum(a - b)``, ``sum()``, ``cumsum(sum(a))``, ``amount : sum`` and a
    formula SLayer's parser refuses. ``memory:<id>`` is not handled here; the resolver checks for it first.
    """
    text = ref.strip()
    colon = _COLON_AGG.fullmatch(text)
    if colon:
        # SLayer reads 'amount :sum' as the name 'amount ', which no name is; 'amount: sum' it takes
        # (split_agg_suffix keeps ' sum' as the aggregation), so only the space before is refused.
        if colon["gap"]:
            fix = unspaced_colon(f"{colon['head'].strip()}:{text.split(':', 1)[1].strip()}")
            # SLayer's sentence first, whole (tests/fidelity), then the fix as one of its own.
            raise ReferenceFormError(f"'{text}' contains an invalid identifier segment. {fix[0].upper()}{fix[1:]}.")
        return _target(colon["head"], colon["agg"], ref)
    if "(" not in text:
        return _target(text, None, ref)
    problem = formula_problem(text)
    if problem is not None:
        raise ReferenceFormError(problem)
    call = _call(text)
    if call is None:  # sum(a) + sum(b): an expression, not one call
        raise ReferenceFormError(_not_single(text))
    aggregation, args = call
    if not args or not args[0].strip() or _KWARG.match(args[0]):
        raise ReferenceFormError(
            f"Invalid Mode-B expression {text!r}: aggregation '{aggregation}' requires a value "
            f"argument, e.g. {aggregation}(column)."
        )
    # SLayer reads count(distinct x) as count_distinct(x).
    value = args[0].strip()
    if aggregation.lower() == "count":
        value = _DISTINCT.sub("", value)
    return _target(value, aggregation, ref)


def invalid_segment(ref: str) -> str:
    """SLayer's refusal of a reference whose dotted parts are not all names, and the rule."""
    return (
        f"'{ref}' contains an invalid identifier segment. (Each part between dots is a name: a "
        "letter or '_', then letters, digits, '_' or '-'.)"
    )


def _not_single(ref: str) -> str:
    return (
        f"{ref!r} is not a single aggregated column reference; only the `agg(column)` form "
        "names an entity. Name its columns one by one, or pass the whole SlayerQuery (--query; in the MCP tools, "
        "save_memory's linked_entities or search's query)."
    )


def _call(text: str) -> tuple[str, list[str]] | None:
    """``(function, arguments)`` when the whole of ``text`` is one call ``f(...)``."""
    head = _CALL_HEAD.match(text)
    if head is None or not text.endswith(")"):
        return None
    depth = 0
    for index in range(head.end() - 1, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            if index != len(text) - 1:
                return None  # f(a) + g(b): an expression, not one call
            return head["func"], _split_top(text[head.end() : -1])
    return None


def _target(text: str, aggregation: str | None, ref: str) -> RefTarget:
    if not text:
        raise ReferenceFormError(invalid_segment(ref.strip()))
    if text == "*" or text.endswith(".*"):
        if aggregation is not None and aggregation != "count":  # SLayer's case: COUNT(*) is refused
            raise ReferenceFormError(_star_refused(ref.strip(), text))
        if text == "*":
            return RefTarget("", True)
        # SLayer resolves count(m.*) as it resolves the name m, warnings and all.
        return RefTarget(text[:-2], False)
    if aggregation is not None and not _PLAIN_REF.fullmatch(text):
        raise ReferenceFormError(_not_single(ref.strip()))
    return RefTarget(text, False)


def _star_refused(ref: str, star: str) -> str:
    """SLayer's refusal of ``star`` (``*`` or ``m.*``) counted by anything but a lower-case count:
    ``sum(*)``, ``avg(orders.*)``, a formula's ``COUNT(orders.*)``."""
    form = "use 'count(*)' to refer to a model's row count" if star == "*" else "use the 'count(<model>.*)' form"
    return f"'{ref}' is not a valid entity reference; {form}."


def strip_aggregation(ref: str) -> tuple[str, bool]:
    """``(reference, is_star)``: ``("amount", False)`` for sum(amount), ``("", True)`` for count(*).

    ``count(orders.*)`` gives ``("orders", False)``: SLayer resolves it as it resolves ``orders``.
    """
    target = parse_reference(ref)
    return target.name, target.star


# ----------------------------------------------------------------------------------------------
# Formulas and filters
# ----------------------------------------------------------------------------------------------

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

    @property
    def skip(self) -> bool:
        return self.inherited or self.keyword


def formula_references(formula: str) -> list[str]:
    """Column references of a measure formula, in either syntax (``sum(x)``, ``x:sum``)."""
    return _scan(formula, "formula", sql=False)


def filter_references(filter_text: str) -> list[str]:
    """Column references of a SQL-ish filter; literals, placeholders and SQL words are skipped."""
    return _scan(filter_text, "filter", sql=True)


def _scan(text: str, what: str, sql: bool) -> list[str]:
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
    if sql:
        _refuse_backquote(tokens, text, what)
    refs: dict[str, None] = {}
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
                if stack[-1].method:
                    stack[-1].path = None  # a method call's later arguments are literals
        elif stack and stack[-1].skip:
            continue
        elif token.kind == "name" and index not in rewritten:
            ref = _name_reference(tokens, index, stack, sql, text, what)
            if ref is not None:
                refs[ref] = None
        elif token.text == "*" and _star(tokens, index, stack, sql, text, what):
            refs[f"{stack[-1].path}.*" if stack and stack[-1].path else SOURCE_MODEL] = None
    return list(refs)



def _refuse_backquote(tokens: list[Token], text: str, what: str) -> None:
    """Refuse a filter's backquoted name (outside a string): SLayer's resolver reads the name and
    its engine does not parse the backquotes."""
    quoted = next((token for token in tokens if token.kind == "lit" and token.text.startswith("`")), None)
    if quoted is not None:
        raise InvalidInputError(
            f"{what} {text!r}: a backquote quotes no name in a filter: SLayer's engine cannot parse it. "
            f"Write the name bare: {quoted.text.strip('`')}."
        )


def _rewritten_words(tokens: list[Token], case_words: set[int]) -> set[int]:
    """Where a formula's tokens are SQL words SLayer rewrites rather than columns: the keywords of
    a CASE ... END (found where ``case_words`` says they start, read as SLayer lowers them);
    distinct right after ``count(`` and before its operand (``-amount``, ``1``); the unit and FROM of ``extract(year from x)``."""
    words: set[int] = set()
    for index, token in enumerate(tokens):
        if token.kind not in ("name", "lit"):  # extract's unit may be quoted: extract('month' from x)
            continue
        word = token.text.lower()
        before = [t.text.lower() for t in tokens[max(index - 2, 0) : index]]
        after = tokens[index + 1 : index + 3]
        if token.start in case_words:
            pass
        elif word == "distinct" and before == ["count", "("] and after and after[0].text not in (")", ","):
            pass
        elif (
            before == ["extract", "("]
            and len(after) == 2
            and after[0].text.lower() == "from"
            and after[1].kind == "name"
        ):
            words.add(index + 1)  # the FROM
        else:
            continue
        words.add(index)
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
    if not name.isascii():
        raise InvalidInputError(
            f"{what} {text!r}: '{name}' is not a name SLayer can use; columns are ASCII letters, "
            "digits and '_'."
        )
    if stack and stack[-1].path:
        name = f"{stack[-1].path}.{name}"
    if name.endswith(".*") and not _counted(tokens, index, stack, sql):
        _refuse_miscased_count(tokens, index, stack, text, what)
        raise InvalidInputError(
            f"{what} {text!r}: '{name}' only works as count({name}) or {name}:count."
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
            f"{what} {text!r}: only count takes '*' (count(*) or *:count counts the source "
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
        raise InvalidInputError(f"{what} {text!r}: {_star_refused(f'{star}:{count}', star)}")


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


# ----------------------------------------------------------------------------------------------
# Queries
# ----------------------------------------------------------------------------------------------


@dataclass
class Resolution:
    """The canonical entity a reference names, and the warnings of its resolution."""

    entity: str
    warnings: list[str]


class Resolves(Protocol):
    """What :func:`query_entities` asks of a resolver (``resolve.Resolver``, which imports
    this module)."""

    def query_source(self, name: str) -> Model: ...

    def resolve(self, ref: str, source_model: str | Model | None = None) -> Resolution: ...


def query_entities(query: Any, resolver: Resolves) -> tuple[list[str], list[str]]:
    """The canonical entities a SlayerQuery touches (source model first) and resolution warnings.

    The query is checked first by :func:`slayerquery.check_query` (SLayer 1.4.1's SlayerQuery:
    keys, shapes, values); then, as SLayer's memory resolver does, its ``source_model`` is looked
    up and every reference of its dimensions, time dimensions, measures, filters and order is
    resolved. Names the query defines itself (a measure's or a computed dimension's ``name``, an
    extension's columns and measures) are not tagged. Any reference that does not resolve raises,
    so that nothing is saved with a silently missing tag.
    """
    shape, name = _shape(query)
    if shape.refused:
        raise shape.refused[0][1]
    source = resolver.query_source(name)
    entities: dict[str, None] = {source.entity: None}
    warnings: dict[str, None] = {}
    for _ref, resolved in _resolutions(shape, source, resolver):
        if isinstance(resolved, KBError):
            raise resolved from None
        entities[resolved.entity] = None
        warnings.update(dict.fromkeys(resolved.warnings))
    return list(entities), list(warnings)


def reference_problems(query: Any, resolver: Resolves) -> list[tuple[str, KBError]]:
    """Each reference of ``query`` that does not resolve against ``resolver``'s catalog, named by
    its place and text (``measures[0] nope``), with what :func:`query_entities` raises of it, in
    its order; so that one query's problems against two catalogs compare reference by reference.
    An item SLayer refuses whatever the catalog comes first, named by its place and text; what is
    wrong with the query as a whole raises."""
    shape, name = _shape(query)
    refused: list[tuple[str, KBError]] = list(shape.refused)
    try:
        source = resolver.query_source(name)
    except KBError as exc:
        return [*refused, (f"source_model {name}", exc)]
    return refused + [(ref, found) for ref, found in _resolutions(shape, source, resolver) if isinstance(found, KBError)]


def _shape(query: Any) -> tuple[Shape, str]:
    """The query's shape and source model's name; what SLayer refuses in them raises."""
    if not isinstance(query, Mapping):
        raise InvalidInputError(
            f"A query must be a mapping (a SlayerQuery) with a 'source_model', got {kind_of(query)}."
        )
    check_depth(query, "The query")
    shape = check_query(query, each=True)
    assert shape.source is not None  # check_query requires one
    return shape, shape.source


def _resolutions(shape: Shape, source: Model, resolver: Resolves) -> Iterator[tuple[str, Resolution | KBError]]:
    """Each reference of the query, named by its place and text, and what it resolves to, or the
    error (in the query's words) that says why it does not."""
    for item in shape.items:
        try:
            refs = [item.text] if item.kind == "ref" else _SCANS[item.kind](item.text)
        except InvalidInputError as exc:  # refused whatever the catalog: the item's other words unread
            yield f"{item.where} {item.text}", InvalidInputError(f"{item.where}: {exc}")
            continue
        for ref in refs:
            if ref in shape.defined:
                continue
            resolved: Resolution | KBError
            try:
                resolved = resolver.resolve(ref, source)
            except KBError as exc:
                resolved = _in_context(_word_slip(exc, ref, item), item, refs)
            yield f"{item.where} {ref}", resolved


_SCANS = {"formula": formula_references, "filter": filter_references}


def _word_slip(exc: KBError, ref: str, item: Item) -> KBError:
    """A word not found that no catalog could have (``distinct``, ``amount : sum``): refused as
    the query's slip, with its fix and no suggestions, rather than as a stale tag. A word a
    column may be named stays a stale reference, with a note where SQL may mean it."""
    if type(exc) is not ResolutionError:
        return exc
    fix = sqlwords.fix_for(ref, item.text, item.kind)
    if fix is not None:
        return ReferenceFormError(f"{ref!r} names no column: {fix}.")
    note = sqlwords.note_for(ref)
    return exc if note is None else ResolutionError(f"{exc} {note}", exc.suggestions)


def _in_context(exc: KBError, item: Item, refs: list[str]) -> KBError:
    where = item.where if refs == [item.text] else f"{item.where} {item.text!r}"
    try:
        return type(exc)(f"{where}: {exc}")
    except TypeError:  # an error class with its own constructor: keep it as it is
        return exc


def clean_query(query: Mapping[str, Any]) -> dict[str, Any]:
    """The query to store: None values, and containers emptied by removing them, left out."""
    if not isinstance(query, Mapping):
        raise InvalidInputError(f"A query must be a mapping, got {kind_of(query)}.")
    return _clean(check_depth(query, "The query"))


def _clean(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: cleaned for key, cleaned in _kept(value.items())}
    if isinstance(value, (list, tuple)):
        # Tuples become lists: the YAML writer and JSON output only know lists.
        return [cleaned for _index, cleaned in _kept(enumerate(value))]
    return value


def _kept(pairs: Any) -> Iterator[tuple[Any, Any]]:
    for key, value in pairs:
        if value is None:
            continue
        cleaned = _clean(value)
        if isinstance(cleaned, (dict, list)) and not cleaned and value:
            continue
        yield key, cleaned


def flatten_refs(refs: Any, name: str = "entities") -> list[str]:
    """A list of references, each maybe comma-separated, as one list (its items must be text)."""
    out: list[str] = []
    for index, ref in enumerate(refs):
        if not isinstance(ref, str):
            # The item named by its place: the value alone (5, null) says not which one it is.
            raise ReferenceFormError(f"{name}[{index}]: entity reference {ref!r} must be a string like 'orders.amount'.")
        out.extend(split_references(ref))
    return out
