"""Entity references: one reference as SLayer's ``split_entity_agg_ref`` reads it (its aggregation
peeled), and the references of a whole SlayerQuery (its formulas and filters read by :mod:`scan`),
resolved item by item."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..core.errors import AmbiguousEntityError, InvalidInputError, KBError, ReferenceFormError, ResolutionError
from ..core.ids import escaped_id, invisible_words, is_invisible
from ..core.nesting import check_depth
from ..core.text import kind_of, shown_value
from . import sqlwords
from .querychecks import dotted, formula_problem, unspaced_colon
from .scan import Scanned, scan_filter, scan_formula, star_refused
from .slayerquery import Item, Shape, check_query

if TYPE_CHECKING:
    from .catalog import Model

# The longest entity reference taken (characters): ``shop.orders.amount:sum`` is 22.
MAX_REFERENCE = 1000

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
# A call, or a method call path.agg(value), SLayer's spelling of agg(path.value).
_CALL_HEAD = re.compile(r"(?:(?P<path>[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\.\s*)?(?P<func>[A-Za-z_]\w*)\s*\(")
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
    problem = formula_problem(text, runs=False)
    if problem is not None:
        raise ReferenceFormError(problem)
    call = _call(text)
    if call is None:  # sum(a) + sum(b): an expression, not one call
        raise ReferenceFormError(_not_single(text))
    path, aggregation, args = call
    if not args or not args[0].strip() or _KWARG.match(args[0]):
        raise ReferenceFormError(
            f"Invalid Mode-B expression {shown_value(text)}: aggregation '{aggregation}' requires a value "
            f"argument, e.g. {aggregation}(column)."
        )
    # SLayer reads count(distinct x) as count_distinct(x).
    value = args[0].strip()
    if aggregation.lower() == "count":
        value = _DISTINCT.sub("", value)
    return _target(f"{path}.{value}" if path else value, aggregation, ref)


# A name between a reference's dots (SLayer's identifier).
REFERENCE_SEGMENT_RE = re.compile(r"[a-zA-Z_][\w-]*")


def invalid_segment(ref: str) -> str:
    """SLayer's refusal of a reference whose dotted parts are not all names, and the rule. A
    reference holding a character one does not see (pasted from chat: a zero-width space, a
    direction mark; a newline) is shown escaped, on one line, the character named as an id's is,
    and the reference without it given where it is no whitespace."""
    rule = "(Each part between dots is a name: a letter or '_', then letters, digits, '_' or '-'.)"
    invisible = next((ch for ch in ref if ch != " " and is_invisible(ch)), None)
    if invisible is None:
        return f"'{ref}' contains an invalid identifier segment. {rule}"
    said = f"'{escaped_id(ref)}' contains an invalid identifier segment. It holds {invisible_words(invisible)}"
    if invisible.isspace():  # between two names: which one was meant is not ours to say
        return f"{said}: separate two references with a comma, or remove it."
    plain = "".join(ch for ch in ref if ch.isspace() or not is_invisible(ch))
    if all(REFERENCE_SEGMENT_RE.fullmatch(segment) for segment in plain.split(".")):
        return f"{said}: remove it, '{plain}'."
    return f"{said}: remove it. {rule}"


def _not_single(ref: str) -> str:
    return (
        f"{ref!r} is not a single aggregated column reference; only the `agg(column)` form "
        "names an entity. Name its columns one by one, or pass the whole SlayerQuery (--query; in the MCP tools, "
        "save_memory's linked_entities or search's query)."
    )


def _call(text: str) -> tuple[str, str, list[str]] | None:
    """``(path, function, arguments)`` when the whole of ``text`` is one call ``f(...)`` (path
    ``""``) or method call ``path.f(...)``, the path's spaces around its dots dropped."""
    head = _CALL_HEAD.match(text)
    if head is None or not text.endswith(")"):
        return None
    depth = 0
    for index in range(head.end() - 1, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            if index != len(text) - 1:
                return None  # f(a) + g(b): an expression, not one call
            return dotted(head["path"] or ""), head["func"], _split_top(text[head.end() : -1])
    return None


def _target(text: str, aggregation: str | None, ref: str) -> RefTarget:
    if not text:
        raise ReferenceFormError(invalid_segment(ref.strip()))
    if text == "*" or text.endswith(".*"):
        if aggregation is not None and aggregation != "count":  # SLayer's case: COUNT(*) is refused
            raise ReferenceFormError(star_refused(ref.strip(), text))
        if text == "*":
            return RefTarget("", True)
        # SLayer resolves count(m.*) as it resolves the name m, warnings and all.
        return RefTarget(text[:-2], False)
    if aggregation is not None and not _PLAIN_REF.fullmatch(text):
        raise ReferenceFormError(_not_single(ref.strip()))
    return RefTarget(text, False)


def strip_aggregation(ref: str) -> tuple[str, bool]:
    """``(reference, is_star)``: ``("amount", False)`` for sum(amount), ``("", True)`` for count(*).

    ``count(orders.*)`` gives ``("orders", False)``: SLayer resolves it as it resolves ``orders``.
    """
    target = parse_reference(ref)
    return target.name, target.star


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

    def resolve_from(self, ref: str, source: Model) -> Resolution: ...


def query_entities(query: Any, resolver: Resolves) -> tuple[list[str], list[str]]:
    """The canonical entities a SlayerQuery touches (source model first) and resolution warnings.

    The query is checked first by :func:`slayerquery.check_query` (SLayer 1.4.1's SlayerQuery:
    keys, shapes, values); then, as SLayer's memory resolver does, its ``source_model`` is looked
    up and every reference of its dimensions, time dimensions, measures, filters and order is
    resolved. Names the query defines itself (a measure's or a computed dimension's ``name``, an
    extension's columns and measures) are not tagged where they name the query's own: a measure's
    name in its own formula, or in a dimension, still names the column. Any reference that does not resolve raises,
    so that nothing is saved with a silently missing tag.
    """
    shape, name = _shape(query)
    if shape.refused:
        raise shape.refused[0][1]
    source = resolver.query_source(name)
    entities: dict[str, None] = {source.entity: None}
    warnings: dict[str, None] = {}
    for _ref, resolved in _resolutions(shape.items, shape, source, resolver):
        if isinstance(resolved, KBError):
            raise resolved from None
        entities[resolved.entity] = None
        warnings.update(dict.fromkeys(resolved.warnings))
    return list(entities), list(warnings)


def reference_problems(query: Any, resolver: Resolves) -> list[tuple[str, KBError]]:
    """Each reference of ``query`` that does not resolve against ``resolver``'s catalog, named by
    its place and text (``measures[0] nope``), with what :func:`query_entities` raises of it, in
    its order; so that one query's problems against two catalogs compare reference by reference.
    An item SLayer refuses whatever the catalog comes first, named by its place and text, then its
    words (a refused measure's or filter's too); where the source model does not resolve, the
    other references are resolved without one. What is wrong with the query as a whole raises."""
    shape, name = _shape(query)
    found: list[tuple[str, KBError]] = list(shape.refused)
    source: Model | None = None
    try:
        source = resolver.query_source(name)
    except KBError as exc:  # the other references read as they read alone, the same at both catalogs
        found.append((f"source_model {name}", exc))
    items = [*shape.items, *shape.unread]
    return found + [(ref, error) for ref, error in _resolutions(items, shape, source, resolver)
                    if isinstance(error, KBError)]


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


def _resolutions(items: list[Item], shape: Shape, source: Model | None,
                 resolver: Resolves) -> Iterator[tuple[str, Resolution | KBError]]:
    """Each reference of ``items`` (but the names the query defines, where they shadow a column:
    :meth:`Shape.shadowed`), named by its place and
    text, and what it resolves to in a query on ``source``, or the error (in the query's words)
    that says why it does not. An item refused whatever the catalog comes first, named by its
    place and text, then its words."""
    for item in items:
        scanned = Scanned([item.text], frozenset()) if item.kind == "ref" else _SCANS[item.kind](item.text)
        if scanned.refused is not None:
            yield f"{item.where} {item.text}", InvalidInputError(f"{item.where}: {scanned.refused}")
        refs = scanned.refs
        shadowed = shape.shadowed(item, scanned.aggregated)
        for ref in refs:
            if ref in shape.defined or ref in shadowed:
                continue
            resolved: Resolution | KBError
            try:
                resolved = _resolve(resolver, ref, source, ref in scanned.later)
            except KBError as exc:
                resolved = _in_context(_word_slip(exc, ref, item), item, refs)
            yield f"{item.where} {ref}", resolved


_SCANS = {"formula": scan_formula, "filter": scan_filter}


def _resolve(resolver: Resolves, ref: str, source: Model | None, later: bool) -> Resolution:
    """What ``ref`` names in a query on ``source``. A name read only in an aggregation's later
    argument, which SLayer's memory resolver does not read, SLayer's engine walks from the source
    model, so a join's name may head it (``last(amount, original_order.created_at)``)."""
    try:
        return resolver.resolve(ref, source)
    except ResolutionError as exc:
        if source is None or not later or "." not in ref or isinstance(exc, AmbiguousEntityError):
            raise
        try:
            return resolver.resolve_from(ref, source)
        except KBError as walked:
            try:  # where the head is a join of the source, the walk says what is missing past it
                resolver.resolve_from(ref.split(".")[0], source)
            except KBError:
                raise exc from None
            raise walked from None


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
    # The text cut as every message quotes a value: a 60 KB filter was repeated whole.
    where = item.where if refs == [item.text] else f"{item.where} {shown_value(item.text)}"
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
