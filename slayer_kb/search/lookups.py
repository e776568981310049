"""Exact look-ups of memories by their stored fields, for the writes that must find every memory
holding a reference (cascades, ``forget``, ``prune``, interchange). They are index queries, so the
modules that run them need not know Whoosh or the index's field names."""

from __future__ import annotations

from collections.abc import Iterable
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
