"""Exact look-ups of memories by their stored fields, for the writes that must find every memory
holding a reference (cascades, ``forget``, ``prune``, interchange). They are index queries, so the
modules that run them need not know Whoosh or the index's field names."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh import query as Q


@dataclass(frozen=True)
class Lookup:
    """What ``Context.documents`` and ``Transaction.read_matching`` take: every memory
    (soft-deleted ones too, no catalog entity), or those whose entity list holds one of
    ``entities``; with ``under``, also an entity below one of them (``shop.orders`` finds
    ``shop.orders.amount``)."""

    entities: tuple[str, ...] | None = None  # None: every memory
    under: bool = False

    @property
    def query(self) -> Q.Query:
        """The index query that finds them."""
        kind = Q.Term("kind", "memory")
        if self.entities is None:
            return kind
        clauses: list[Q.Query] = []
        for entity in self.entities:
            clauses.append(Q.Term("entities", entity))
            if self.under:
                clauses.append(Q.Prefix("entities", entity + "."))
        return Q.And([kind, Q.Or(clauses)])

    def holds(self, linked: Collection[str]) -> bool:
        """Whether it finds a memory linking ``linked``, asked of a memory the index cannot hold:
        the last committed version of a file broken since."""
        if self.entities is None:
            return True
        return any(entity in linked or (self.under and any(e.startswith(entity + ".") for e in linked))
                   for entity in self.entities)


def memories() -> Lookup:
    """Every memory (soft-deleted ones too), no catalog entity."""
    return Lookup()


def tagged(entities: Iterable[str], *, under: bool = False) -> Lookup:
    """Memories whose entity list holds one of ``entities``; with ``under``, also an entity
    below one of them (``shop.orders`` finds ``shop.orders.amount``)."""
    return Lookup(tuple(entities), under)
