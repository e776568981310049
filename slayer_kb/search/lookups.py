"""Exact look-ups of memories by their stored fields, for the writes that must find every memory
holding a reference (cascades, ``forget``, ``prune``, interchange). They are index queries, so the
modules that run them need not know Whoosh or the index's field names."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TypeAlias

from whoosh import query as Q

# What ``Index.documents`` and ``Transaction.read_matching`` take.
Lookup: TypeAlias = Q.Query


def memories() -> Lookup:
    """Every memory (soft-deleted ones too), no catalog entity."""
    return Q.Term("kind", "memory")


def tagged(entities: Iterable[str], *, under: bool = False) -> Lookup:
    """Memories whose entity list holds one of ``entities``; with ``under``, also an entity
    below one of them (``shop.orders`` finds ``shop.orders.amount``)."""
    clauses: list[Q.Query] = []
    for entity in entities:
        clauses.append(Q.Term("entities", entity))
        if under:
            clauses.append(Q.Prefix("entities", entity + "."))
    return Q.And([memories(), Q.Or(clauses)])


def holds(query: Lookup, entities: Collection[str]) -> bool:
    """Whether ``query`` (made by ``memories`` or ``tagged``) finds a memory linking ``entities``,
    asked of a memory the index cannot hold: the last committed version of a file broken since."""
    if isinstance(query, Q.And):
        return all(holds(part, entities) for part in query.subqueries)
    if isinstance(query, Q.Or):
        return any(holds(part, entities) for part in query.subqueries)
    if isinstance(query, Q.Prefix) and query.fieldname == "entities":
        return any(entity.startswith(query.text) for entity in entities)
    if isinstance(query, Q.Term) and query.fieldname == "entities":
        return query.text in entities
    if query == memories():
        return True
    raise TypeError(f"not a look-up of this module: {query!r}")
