"""A SlayerQuery's shape as SLayer 1.4.1 defines it (``slayer/core/query.py``), checked without SLayer.

:func:`check_query` is the one rule for what a stored example query may be: ``save`` (a query
given as ``linked_entities``), ``validate``, ``import-slayer`` and the MCP tools all go through it.
It accepts what SLayer's ``SlayerQuery.model_validate`` accepts, in the same shapes, and refuses
what it refuses, in SLayer's words (pydantic's "Field required", "Extra inputs are not permitted",
"Input should be a valid list", ...), each prefixed with the place in the query
(``time_dimensions[0].dimension: Field required``). It returns the references the query makes, in
the order SLayer's memory resolver reads them: dimensions, time dimensions, measures, filters,
order. SLayer's rules kept here:

- keys: version, name, source_model, measures, dimensions, time_dimensions, main_time_dimension,
  filters, variables, order, limit, offset, whole_periods_only, distinct_dimension_values,
  to_many_handling. Any other key is refused, named, with the nearest valid key suggested. SLayer's
  migrations run first: a query without a ``version`` (or one below 2) may say ``fields`` for
  ``measures``; below 3 ``dry_run`` and ``explain`` are dropped; ``strict`` is retired.
- ``source_model``: a saved model's name (no ``.``: ``wh.orders`` is refused, as SLayer's storage
  refuses it), or an extension ``{source_name, columns, measures, joins}``.
- ``dimensions``: names, dotted join paths, ``{name, model, label}``, a granularity call
  ``month(created_at)`` (which becomes a time dimension), an expression, or ``{expression, name}``.
- ``time_dimensions``: ``{dimension (or column), granularity, date_range, label}``, or the string
  ``gran(col)``; a built-in or custom granularity.
- ``measures``: formulas, or ``{formula, name, label, description, type, meta}``.
- ``order``: ``{column, direction}``, the shorthand ``{column: direction}``, or one such mapping
  instead of a list; a plain string is refused, as SLayer refuses it.
- numbers and booleans in pydantic's lax mode: ``limit: "10"`` is 10, ``whole_periods_only: "yes"``
  is true.

Where slayer-kb refuses what SLayer lets through, on purpose (docs/fidelity.md):

- a key SLayer silently ignores inside a measure, a dimension or a time dimension mapping
  (``{formula: ..., nam: revenue}``): a misspelt key would be stored and lost;
- an inline model as ``source_model`` (a mapping without ``source_name``): a knowledge base tags
  memories with the catalog's models, and an inline one is in no catalog.

Expressions are checked for syntax with Python's parser, as SLayer's Mode-B parser is built on it;
column references and time dimensions by ``querycolumns.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from ..core.errors import InvalidInputError
from ..core.text import kind_of, shown_value
from .modeb import GRANULARITIES
from .querychecks import (
    FALSE,
    TRUE,
    extra_message,
    fail,
    formula_problem,
    ignored_keys,
    int_field,
    list_of,
    parses,
    python_list,
    required,
    slayer_type,
    string,
    syntax_problem,
)
from .querycolumns import (
    CALL,
    NAME,
    NAME_RULE,
    column_ref,
    column_ref_name,
    column_value,
    functional,
    strip_source,
    time_dimension,
    time_string,
)
from .queryversions import migrate

QUERY_KEYS = (
    "version", "name", "source_model", "measures", "dimensions", "time_dimensions",
    "main_time_dimension", "filters", "variables", "order", "limit", "offset",
    "whole_periods_only", "distinct_dimension_values", "to_many_handling",
)
MEASURE_KEYS = ("formula", "name", "label", "description", "type", "meta")
COMPUTED_KEYS = ("expression", "name")
ORDER_KEYS = ("column", "direction")
EXTENSION_KEYS = ("source_name", "columns", "measures", "joins")
TO_MANY = ("broadcast", "associate", "error")
DIRECTIONS = {"asc": "asc", "ascending": "asc", "desc": "desc", "descending": "desc"}

_FUNCSTYLE = re.compile(r"\w+\([^()]*\)")
_AGG_CALL = re.compile(r"[A-Za-z_]\w*\s*\(")
_OVER = re.compile(r"\bover\s*\(", re.IGNORECASE)

WINDOW_IN_FILTER_ERROR = (
    "contains a window function (OVER clause). Window functions are not allowed in WHERE on SQLite "
    "or most dialects. Either: (a) use a SLayer transform — rank(), first(), last(), lag(), lead() — "
    "e.g. `rank(<measure>, direction='desc') <= 3`; (b) define the window expression as a "
    "Column.sql on the model and filter on the column; or (c) compute it in an earlier stage of a "
    "multi-stage model."
)
_RESERVED_PREFIX = "__slayer_"
_NO_DOT = (
    ".", "dots are the canonical-id namespace delimiter (``<ds>.<model>.<leaf>``) and the "
    "dotted-path reference syntax in queries.",
)
_NO_COLON = (
    ":", "colons are reserved as the legacy aggregation separator and the ``memory:<int>`` "
    "canonical-id prefix.",
)
_SOURCE_HINT = (
    "Give source_model: '<model>' (a saved model's name), or {source_name: '<model>', columns: [...], "
    "measures: [...]} to extend one."
)


T = TypeVar("T")


class Item(NamedTuple):
    """One reference-bearing text of a query: where it is, and how to read it."""

    where: str  # "dimensions[1]", "order[0].column": where the user finds it in their query
    kind: str  # "ref" (one reference), "formula" or "filter"
    text: str


@dataclass
class Shape:
    """A checked SlayerQuery: the model it is rooted at, its references, the names it defines."""

    source: str | None
    items: list[Item] = field(default_factory=list)
    # The extension's columns and measures: part of the model, so they shadow a column everywhere.
    defined: set[str] = field(default_factory=set)
    # A measure's or computed dimension's name, by the place of the item that defines it: it
    # shadows a column only in the query's other items (its own formula names the column), and a
    # measure's only where a measure may be named (measures, filters, order), not in a dimension.
    measure_names: dict[str, set[str]] = field(default_factory=dict)
    dimension_names: dict[str, set[str]] = field(default_factory=dict)
    # Each item SLayer refuses, by its place and text, and why: the query's other items are still
    # read, so that a reader comparing two catalogs sees their references too.
    refused: list[tuple[str, InvalidInputError]] = field(default_factory=list)
    # What each refused item still names (a measure's or filter's text, a dimension's or order's
    # column), read where two catalogs are compared, so that a name the branch broke is not hidden
    # behind the item's older refusal.
    unread: list[Item] = field(default_factory=list)

    def shadowed(self, item: Item, aggregated: frozenset[str]) -> set[str]:
        """The names of the query's measures and computed dimensions that ``item`` reads as the
        query's own rather than as columns: a measure's name aggregated in ``item`` (its value,
        ``scan.Scanned.aggregated``) names the column, as SLayer reads ``sum(amount)``; a computed
        dimension's stays the query's own."""
        names: set[str] = set()
        names.update(name for name, places in self.dimension_names.items() if places - {item.where})
        if not item.where.startswith(("dimensions", "time_dimensions")):
            names.update(name for name, places in self.measure_names.items()
                         if places - {item.where} and name not in aggregated)
        return names

    def item(self, where: str, value: Any, check: Callable[..., T], *args: Any, kind: str = "") -> T | None:
        """``check(*args)``, or None with its refusal kept, named by ``where`` and ``value``; and
        with ``kind`` (formula, filter, or column for a dimension, time dimension or order item),
        what ``value`` still names kept in ``unread``."""
        try:
            return check(*args)
        except InvalidInputError as exc:
            self.refused.append((f"{where} {value}" if isinstance(value, str) else where, exc))
            self.unread.extend(_unread(value, where, kind))
            return None


def _unread(value: Any, where: str, kind: str) -> list[Item]:
    """What a refused item of ``kind`` names: a formula's or filter's text; a column's name (with
    its model), its expression or its text, in whichever key of its mapping holds it."""
    if isinstance(value, Mapping):
        key = next((key for key in ("formula", "expression", "column", "dimension") if key in value), None)
        if key is not None:
            return _unread(value[key], f"{where}.column" if key == "column" else where, kind)  # as if taken
        name, model = value.get("name"), value.get("model")
        if kind != "column" or not isinstance(name, str):
            return []
        return [Item(where, "ref", f"{model}.{name}" if isinstance(model, str) else name)]
    if not isinstance(value, str) or not kind:
        return []
    if kind == "column":
        return [Item(where, "ref" if column_ref_name(value) else "formula", value)]
    return [Item(where, kind, value)]


def check_query(query: Any, *, need_source: bool = True, each: bool = False) -> Shape:
    """The query's :class:`Shape` if SLayer 1.4.1 would take it, else :class:`InvalidInputError`.

    ``need_source`` False lets a query without ``source_model`` pass (SLayer infers one when it
    runs a query; its memory tools, and so a save here, need one). ``each``: a key, a setting
    (``limit``, ``to_many_handling``, ...) or a measure, dimension, time dimension, filter or order
    item SLayer refuses is kept in ``Shape.refused`` (an item left out of ``Shape.items``) rather
    than raised; a query that is no mapping, or whose ``source_model`` is refused, still raises.
    """
    shape = Shape(None)
    try:
        _check(query, need_source, shape)
    except InvalidInputError:
        if shape.refused:  # the first refusal in the order of the checks, each or not
            raise shape.refused[0][1] from None
        raise
    if shape.refused and not each:
        raise shape.refused[0][1]
    return shape


def _check(query: Any, need_source: bool, shape: Shape) -> None:
    if not isinstance(query, Mapping):
        raise InvalidInputError(
            f"A query must be a mapping (a SlayerQuery) with a 'source_model', got {kind_of(query)}."
        )
    data = migrate(dict(query))
    unknown = [str(key) for key in data if key not in QUERY_KEYS]
    if unknown:
        shape.item(", ".join(unknown), None, fail, "", "; ".join(
            f"{key}: {extra_message(key, QUERY_KEYS, None)}" for key in unknown
        ) + f". A SlayerQuery's keys are: {', '.join(QUERY_KEYS)}.")
    shape.item("version", None, int_field, data, "version")
    if data.get("name") is not None:
        shape.item("name", None, lambda: _model_name(string(data["name"], "name"), "Query", "name"))
    source = data.get("source_model")
    if source is not None:
        shape.source = _source(source, shape)
    measures = _measures(data, shape)
    dimensions, moved = _dimensions(data, shape)
    times = _time_dimensions(data, moved, shape)
    if data.get("main_time_dimension") is not None:
        shape.item("main_time_dimension", None, string, data["main_time_dimension"], "main_time_dimension")
    filters = _filters(data, shape)
    if data.get("variables") is not None and not isinstance(data["variables"], Mapping):
        shape.item("variables", None, fail, "variables", "Input should be a valid dictionary")
    order = _order(data, shape)
    for key in ("limit", "offset"):
        shape.item(key, None, int_field, data, key)
    distinct = {key: shape.item(key, None, _boolean, data[key], key)
                for key in ("whole_periods_only", "distinct_dimension_values") if key in data}
    if data.get("to_many_handling", "broadcast") not in TO_MANY:
        shape.item("to_many_handling", None, fail, "to_many_handling",
                   "Input should be 'broadcast', 'associate' or 'error'")
    if distinct.get("distinct_dimension_values") is False:
        shape.item("distinct_dimension_values", None, _distinct_rule, measures, dimensions or times)
    if shape.source is None and need_source:
        fail("", "Could not derive a model name from query.source_model. " + _SOURCE_HINT)
    shape.items = [*dimensions, *times, *measures, *filters, *order]


# -- source_model ----------------------------------------------------------------------------


def _source(value: Any, shape: Shape) -> str:
    if isinstance(value, str):
        return model_name(value)
    if isinstance(value, Mapping):
        if "source_name" not in value:
            fail(
                "source_model",
                "an inline model (a mapping without 'source_name') is not kept in a knowledge base, "
                "whose memories name the catalog's models. " + _SOURCE_HINT,
            )
        for key in value:
            if key not in EXTENSION_KEYS:
                fail(f"source_model.{key}", extra_message(str(key), EXTENSION_KEYS, "an extension"))
        name = string(value["source_name"], "source_model.source_name")
        for i, column in enumerate(list_of(value, "columns", "source_model.columns")):
            where = f"source_model.columns[{i}]"
            if not isinstance(column, Mapping):
                fail(where, "Input should be a valid dictionary or instance of Column")
            if "name" not in column:
                fail(f"{where}.name", "Field required")
            shape.defined.add(string(column["name"], f"{where}.name"))
        for i, measure in enumerate(list_of(value, "measures", "source_model.measures")):
            where = f"source_model.measures[{i}]"
            _measure(measure, where)
            if isinstance(measure, Mapping) and isinstance(measure.get("name"), str):
                shape.defined.add(measure["name"])
        for i, join in enumerate(list_of(value, "joins", "source_model.joins")):
            if not isinstance(join, Mapping):
                fail(f"source_model.joins[{i}]", "Input should be a valid dictionary or instance of ModelJoin")
        return model_name(name)
    fail("source_model", "Input should be a valid string. " + _SOURCE_HINT)


def model_name(name: str) -> str:
    """A ``source_model`` name as SLayer's storage takes it (its ``_validate_path_component``)."""
    if not name or not name.strip():
        fail("", f"Invalid model name {name!r}: must be a non-empty string.")
    if name.strip() != name:
        fail("", f"Invalid model name {name!r}: leading/trailing whitespace is not allowed.")
    if name.startswith("..") or "/.." in name or "\\.." in name:
        fail("", f"Invalid model name {name!r}: path traversal sequences are not allowed.")
    for char in ("/", "\\", "\x00", "."):
        if char in name:
            hint = " Name the model alone: a query runs on the model its name resolves to (the datasource priority list decides between datasources)." if char == "." else ""
            fail("", f"Invalid model name {name!r}: must not contain {char!r}.{hint}")
    return name


# -- measures --------------------------------------------------------------------------------


def _measures(data: Mapping[str, Any], shape: Shape) -> list[Item]:
    items: list[Item] = []
    for i, value in enumerate(python_list(data, "measures", "write measures: ['sum(amount)', {formula: 'count(*)', name: orders}]")):
        where = f"measures[{i}]"
        formula = shape.item(where, value, _measure, value, where, kind="formula")
        if formula is None:
            continue
        if isinstance(value, Mapping) and isinstance(value.get("name"), str):
            shape.measure_names.setdefault(value["name"], set()).add(where)
        items.append(Item(where, "formula", formula))
    return items


def _measure(value: Any, where: str) -> str:
    if isinstance(value, str):
        value = {"formula": value}
    if not isinstance(value, Mapping):
        fail(where, "Input should be a valid dictionary or instance of ModelMeasure")
    required(value, "formula", where, MEASURE_KEYS)
    ignored_keys(value, where, MEASURE_KEYS, "a measure")
    formula = string(value["formula"], f"{where}.formula")
    if not formula.strip():
        fail(f"{where}.formula", "the formula is empty; write one such as 'sum(amount)', or leave the measure out.")
    name = value.get("name")
    if name is not None:
        name = string(name, f"{where}.name")
        if not NAME.fullmatch(name):
            fail(f"{where}.name", f"Invalid name '{name}': {NAME_RULE}")
        _reserved(name, "ModelMeasure name", f"{where}.name")
    for key in ("label", "description", "type"):
        if value.get(key) is not None:
            string(value[key], f"{where}.{key}")
    if value.get("meta") is not None and not isinstance(value["meta"], Mapping):
        fail(f"{where}.meta", "Input should be a valid dictionary")
    if _OVER.search(formula):
        fail(f"{where}.formula", f"ModelMeasure formula '{formula}' {WINDOW_IN_FILTER_ERROR}")
    problem = formula_problem(formula)
    if problem is not None:
        fail(f"{where}.formula", problem)
    return formula


# -- dimensions ------------------------------------------------------------------------------


def _dimensions(data: Mapping[str, Any], shape: Shape) -> tuple[list[Item], list[tuple[str, dict[str, str]]]]:
    """The dimension items, and the granularity calls SLayer moves to ``time_dimensions``."""
    items: list[Item] = []
    moved: list[tuple[str, dict[str, str]]] = []
    values = data.get("dimensions")
    if values is None:
        return items, moved
    if not isinstance(values, (list, tuple)):
        fail("", f"'dimensions' must be a list, got {slayer_type(values)} (write dimensions: [status, customers.regions.name])")
    for i, value in enumerate(values):
        where = f"dimensions[{i}]"
        shape.item(where, value, _dimension, value, where, shape, items, moved, kind="column")
    return items, moved


def _dimension(value: Any, where: str, shape: Shape, items: list[Item], moved: list[tuple[str, dict[str, str]]]) -> None:
    if isinstance(value, str):
        granular = functional(value, where, GRANULARITIES)
        if granular is not None:
            moved.append((where, granular))
        elif column_ref_name(value):
            items.append(Item(where, "ref", value))
        else:
            _expression_dimension(value, where)
            items.append(Item(where, "formula", value))
    elif isinstance(value, Mapping) and "expression" in value:
        for key in value:
            if key not in COMPUTED_KEYS:
                fail(f"{where}.{key}", extra_message(str(key), COMPUTED_KEYS, "a computed dimension"))
        expression = string(value["expression"], f"{where}.expression")
        if value.get("name") is not None:
            name = string(value["name"], f"{where}.name")
            _model_name(name, "Computed dimension", f"{where}.name")
            shape.dimension_names.setdefault(name, set()).add(where)
        items.append(Item(where, "formula", expression))
    elif isinstance(value, Mapping):
        items.append(Item(where, "ref", column_ref(value, where)))
    else:
        fail(where, "Input should be a valid dictionary or instance of ColumnRef")


def _expression_dimension(text: str, where: str) -> None:
    """A dimension string that is no column reference must be an expression SLayer can parse."""
    problem = syntax_problem(text)
    if problem is None:
        return
    call = CALL.fullmatch(text)
    if call and call.group(1).lower() not in GRANULARITIES:
        return  # SLayer: possibly a datasource granularity, resolved when the query runs
    fail(
        where,
        f"Dimension {shown_value(text)} is neither a column reference (a bare identifier or dotted join path) "
        f"nor a parseable Mode-B expression: Invalid Mode-B expression {shown_value(text)}: {problem}",
    )


# -- time dimensions -------------------------------------------------------------------------


def _time_dimensions(data: Mapping[str, Any], moved: list[tuple[str, dict[str, str]]], shape: Shape) -> list[Item]:
    values = data.get("time_dimensions")
    if values is None:
        values = []
    elif not isinstance(values, (list, tuple)):
        fail("time_dimensions", "Input should be a valid list (write time_dimensions: ['month(created_at)'] or [{dimension: created_at, granularity: month}])")
    entries: list[tuple[str, Any]] = [(f"time_dimensions[{i}]", v) for i, v in enumerate(values)]
    items: list[Item] = []
    seen: dict[tuple[str, str], tuple[Any, ...]] = {}
    for where, value in [*entries, *moved]:
        shape.item(where, value, _time_dimension, value, where, shape.source, items, seen, kind="column")
    return items


def _time_dimension(value: Any, where: str, source: str | None, items: list[Item],
                    seen: dict[tuple[str, str], tuple[Any, ...]]) -> None:
    if isinstance(value, str):
        value = time_string(value, where)
    column = time_dimension(value, where)
    # SLayer's _dedupe_time_dimensions: one column at one granularity, one range and label.
    granularity = value["granularity"].lower() if value["granularity"].lower() in GRANULARITIES else value["granularity"]
    date_range = value.get("date_range")
    canon = (strip_source(column, source), granularity,
             tuple([date_range] if isinstance(date_range, str) else date_range or ()), value.get("label"))
    prior = seen.setdefault(canon[:2], canon)
    if prior != canon:
        fail(where, f"Conflicting time dimensions on {column!r} at {granularity} granularity: same column "
                     "and granularity must not differ in date range or label.")
    items.append(Item(where, "ref", column))


# -- filters and order -----------------------------------------------------------------------


def _filters(data: Mapping[str, Any], shape: Shape) -> list[Item]:
    values = data.get("filters")
    if values is None:
        return []
    if not isinstance(values, (list, tuple)):
        fail("filters", "Input should be a valid list (write filters: [\"status = 'paid'\"])")
    items = []
    for i, value in enumerate(values):
        item = shape.item(f"filters[{i}]", value, _filter, value, f"filters[{i}]", kind="filter")
        if item is not None:
            items.append(item)
    return items


def _filter(value: Any, where: str) -> Item:
    text = string(value, where)
    if _OVER.search(text):
        fail("", f"Filter '{text}' {WINDOW_IN_FILTER_ERROR}")
    return Item(where, "filter", text)


def _order(data: Mapping[str, Any], shape: Shape) -> list[Item]:
    values = data.get("order")
    if values is None:
        return []
    if isinstance(values, Mapping):
        values = [values]
    elif not isinstance(values, (list, tuple)):
        fail("", f"'order' must be a list, got {slayer_type(values)} (write order: [{{column: amount, direction: desc}}])")
    items: list[Item] = []
    for i, value in enumerate(values):
        where = f"order[{i}]"
        items.extend(shape.item(where, value, _order_item, value, where, kind="column") or [])
    return items


def _order_item(value: Any, where: str) -> list[Item]:
    if not isinstance(value, Mapping):
        fail(where, "Input should be a valid dictionary or instance of OrderItem (write {column: amount, direction: desc})")
    if (
        "column" not in value and "direction" not in value and value
        and all(isinstance(k, str) for k in value) and all(_direction(v) for v in value.values())
    ):
        return [_order_column(column, where) for column in value]
    required(value, "column", where, ORDER_KEYS, "an order item is {column: amount, direction: desc}")
    for key in value:
        if key not in (*ORDER_KEYS, "raw_formula"):
            fail(f"{where}.{key}", extra_message(str(key), ORDER_KEYS, "an order item"))
    if "direction" in value:
        direction = string(value["direction"], f"{where}.direction")
        if _direction(direction) is None:
            fail(
                f"{where}.direction",
                f"order direction must be one of asc/desc/ascending/descending (case-insensitive), got {direction!r}",
            )
    return [_order_column(value["column"], f"{where}.column")]


def _direction(value: Any) -> str | None:
    return DIRECTIONS.get(value.strip().lower()) if isinstance(value, str) else None


def _order_column(column: Any, where: str) -> Item:
    """SLayer's ``_order_column_text`` and ``_coerce_order_column``: an expression (a string, or
    ``{name: <expression>}``) is read as a formula; anything else must be a column reference."""
    text = column if isinstance(column, str) else None
    if isinstance(column, Mapping) and set(column) == {"name"} and isinstance(column["name"], str):
        text = column["name"] if not column_ref_name(column["name"]) else None
    if text is not None and _order_formula(text):
        return Item(where, "formula", text)
    return Item(where, "ref", column_value(column, where))


def _order_formula(text: str) -> bool:
    """SLayer's ``_order_formula_candidate``: a colon aggregation, a call, or an expression holding
    one; anything else must be a column reference."""
    if ":" in text or _FUNCSTYLE.fullmatch(text):
        return True
    if column_ref_name(text):
        return False
    return parses(text) and bool(_AGG_CALL.search(text))


# -- scalars -------------------------------------------------------------------------------


def _boolean(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in TRUE | FALSE:
        return value.strip().lower() in TRUE
    if value is None:
        fail(where, "Input should be a valid boolean")
    fail(where, "Input should be a valid boolean, unable to interpret input")


def _distinct_rule(measures: list[Item], projected: list[Item]) -> None:
    if measures:
        fail(
            "distinct_dimension_values",
            f"distinct_dimension_values=False requires an empty `measures` field, but {len(measures)} "
            "measure(s) were supplied. Either remove the measures (and any other measure references) "
            "or set distinct_dimension_values=True (the default) to keep the auto-aggregating behaviour.",
        )
    if not projected:
        fail(
            "distinct_dimension_values",
            "distinct_dimension_values=False requires at least one of `dimensions` or "
            "`time_dimensions` to be non-empty — there are no columns to SELECT. Add the columns you "
            "want to project.",
        )


def _model_name(name: str, context: str, where: str) -> None:
    """SLayer's ``_validate_model_name``: no ``.``, no ``:``, no ``__slayer_`` prefix."""
    for char, reason in (_NO_DOT, _NO_COLON):
        if char in name:
            fail(where, f"{context} name '{name}' must not contain {char!r}; {reason}")
    _reserved(name, f"{context} name", where)


def _reserved(name: str, label: str, where: str) -> None:
    if name.startswith(_RESERVED_PREFIX):
        fail(where, f"{label} '{name}' must not start with {_RESERVED_PREFIX!r}; that prefix is reserved for SLayer-internal identifiers.")
