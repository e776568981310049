"""A memory's example query as ``validate`` reads it: the query a memory file's bytes hold, and
what is wrong with it against a catalog. One reader for ``validate``, the inherited check
(``inherited``) and sync's (``revalidation``), so that the three never read a query two ways."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ..catalog.refs import reference_problems
from ..catalog.resolve import Resolver
from ..core import yamlio
from ..core.errors import KBError
from ..core.memory import alias_line
from ..core.problems import INVALID_QUERY, STALE_QUERY


@dataclass(frozen=True)
class QueryProblem:
    """What is wrong with a query, without the fix (which names the memory): its first failing
    reference's message and kind, and each failing reference's."""

    message: str
    kind: str  # STALE_QUERY or INVALID_QUERY
    # Each failing reference: its kind, its place and text ("measures[0] nope"; for what is wrong
    # whatever the catalog, the message) and its message.
    failing: tuple[tuple[str, str, str], ...]

    def since(self, base: QueryProblem | None) -> QueryProblem | None:
        """This problem without what the same query's problem at the base (``base``) had: the
        references failing here that did not fail there, or not so (stale, invalid), whatever each
        catalog's message lists (columns suggested, models holding a name); None when none is new."""
        had = {(kind, name) for kind, name, _message in base.failing} if base is not None else set()
        new = tuple(found for found in self.failing if found[:2] not in had)
        return QueryProblem(new[0][2], new[0][0], new) if new else None


def reported(problem: QueryProblem, fix: str) -> str:
    """``problem`` as validate reports it: what is wrong, then the fix, which names the memory."""
    return f"{problem.message}; {fix}"


def query_problem(query: Any, resolver: Resolver) -> QueryProblem | None:
    """What is wrong with ``query`` against ``resolver``'s catalog; None when nothing is. A reference
    that no longer resolves is stale (what a catalog delete leaves); anything else is invalid."""
    try:
        found = reference_problems(query, resolver)
    except KBError as exc:
        found = [("", exc)]
    failing = tuple((kind, name or message, message) for name, (message, kind) in
                    ((name, _reported(exc)) for name, exc in found))
    return QueryProblem(failing[0][2], failing[0][0], failing) if failing else None


def _reported(exc: KBError) -> tuple[str, str]:
    if exc.stale:
        return f"attached query has stale references ({exc})", STALE_QUERY
    return f"attached query is not a valid SlayerQuery ({exc})", INVALID_QUERY


def query_of(data: bytes | None) -> Any:
    """The ``query`` of a memory file's bytes; None where there is none, no file, or it does not parse."""
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
        # An alias can expand to gigabytes: never parsed (check_file says so of the memory's file).
        fields = yamlio.load(text) if alias_line(text) is None else None
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return None
    return fields.get("query") if isinstance(fields, dict) else None
