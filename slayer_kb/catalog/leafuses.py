"""The names a model file's own definitions read: its named measures' formulas, its custom
aggregations' parameters' SQL and its joins' keys (``join_pairs``' first column is the model's;
the second, its target model's: ``join_keys``, checked once every model of the datasource is read). A name no leaf of the model holds is a
definition SLayer cannot run: ``validate`` reports it, and ``delete-leaf`` says which of them the
deleted leaf leaves broken."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from ..core.errors import KBError
from . import lexer
from .scan import SOURCE_MODEL, scan_filter, scan_formula

# Words of a parameter's SQL that name no column, beyond the filter's (``scan.SQL_WORDS``): a
# column named so is missed, which beats reporting a healthy KB's SQL (``EXTRACT(YEAR FROM x)``,
# ``CAST(x AS DOUBLE PRECISION)``, ``INTERVAL 1 DAY``) as broken.
_SQL_ONLY_WORDS = frozenset(
    """
    from interval distinct precision filter over partition by order asc desc nulls first last escape
    ilike similar to within group at time zone with without year quarter month week day hour minute
    second epoch dow doy where
    """.split()
)


class Use(NamedTuple):
    """One bare name a definition reads: where in the file (its YAML keys), what it is, the name."""

    keys: tuple[Any, ...]
    place: str  # "measure units_sold (sum(quantity))", "join to orders (order_id = id)"
    name: str


def uses(data: Any, dotted: bool = False) -> Iterator[Use]:
    """Each bare (undotted) name the model's measures, aggregation parameters and join keys read,
    in file order. Dotted names go through a join to another model, which this file cannot say
    has them: ``dotted`` gives those of the measures and aggregation parameters instead."""
    if not isinstance(data, dict):
        return
    for index, measure in enumerate(_items(data, "measures")):
        formula, name = measure.get("formula"), measure.get("name")
        if isinstance(formula, str):
            yield from (Use(("measures", index), f"measure {name} ({formula})", ref) for ref in _bare(formula, dotted))
    for index, aggregation in enumerate(_items(data, "aggregations")):
        # A parameter's default SQL reads the model's columns, as a measure's formula does.
        params = aggregation.get("params")
        for param in params if isinstance(params, list) else []:
            sql = param.get("sql") if isinstance(param, dict) else None
            if isinstance(sql, str):
                place = f"aggregation {aggregation.get('name')} parameter {param.get('name')} ({sql})"
                yield from (Use(("aggregations", index), place, ref) for ref in _sql_names(sql, dotted))
    for index, join in enumerate(_items(data, "joins") if not dotted else []):
        pairs = join.get("join_pairs")
        for pair in pairs if isinstance(pairs, list) else []:
            if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and "." not in pair[0]:
                yield Use(("joins", index), f"join to {join.get('target_model')} ({pair[0]} = {pair[1]})", pair[0])


def _bare(formula: str, dotted: bool = False) -> list[str]:
    """The bare names ``formula`` reads, or its dotted ones (none when SLayer cannot read it: the
    formula checks say so)."""
    try:
        refs = scan_formula(formula).refs
    except KBError:
        return []
    return [ref for ref in refs if ("." in ref) == dotted and ref != SOURCE_MODEL and ref != "*"
            and not ref.endswith(".*")]


def _sql_names(sql: str, dotted: bool = False) -> list[str]:
    """The bare (or dotted) names a parameter's SQL reads: SLayer takes a column name or an SQL
    expression there, so it is read as SQL, not as a formula: keywords, a cast's type and what
    follows ``--`` name nothing; ``orders__amount`` is SLayer's join path in SQL, not
    this model's column (nor a dotted one this file can check)."""
    found = lexer.tokens(sql, sql=True)
    comment = next((a.start for a, b in zip(found, found[1:], strict=False)
                    if a.text == b.text == "-" and a.end == b.start), len(sql))
    try:
        refs = scan_filter(sql[:comment]).refs
    except KBError:
        return []
    return [ref for ref in refs if ("." in ref) == dotted and ref != SOURCE_MODEL and not ref.endswith(".*")
            and "__" not in ref and ref.lower() not in _SQL_ONLY_WORDS]


def dangling(data: Any, leaves: set[str]) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Where the model's definitions read a name none of its ``leaves`` holds, and the problem."""
    for use in uses(data):
        if use.name not in leaves:
            yield use.keys, (f"{use.place} names '{use.name}', which is no column, measure or aggregation of "
                             f"this model; add the column back or fix the {use.place.split()[0]}")


def _items(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


class JoinKey(NamedTuple):
    """A join pair's second column, which names a leaf of the join's target model, not this one's."""

    at: int  # the join's place in ``joins``
    target: str
    place: str  # "join to customers (customer_id = id)"
    column: str


def join_keys(data: Any) -> tuple[JoinKey, ...]:
    """Each bare column a model's joins read of their target models, in file order."""
    if not isinstance(data, dict):
        return ()
    found = []
    for index, join in enumerate(_items(data, "joins")):
        pairs, target = join.get("join_pairs"), join.get("target_model")
        if not isinstance(pairs, list) or not isinstance(target, str):
            continue
        for pair in pairs:
            if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str) and "." not in pair[1]:
                found.append(JoinKey(index, target, f"join to {target} ({pair[0]} = {pair[1]})", pair[1]))
    return tuple(found)


def missing_target(key: JoinKey) -> str:
    """The problem of a join pair naming no leaf of its target model, and the fix."""
    return (f"{key.place} names '{key.column}', which is no column, measure or aggregation of model "
            f"{key.target}; add the column back or fix the join")
