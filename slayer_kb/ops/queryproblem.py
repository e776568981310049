"""A memory's example query as ``validate`` reads it: the query a memory file's bytes hold, and
what is wrong with it against a catalog. One reader for ``validate``, the inherited check
(``inherited``) and sync's (``revalidation``), so that the three never read a query two ways."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from ..catalog.refs import query_entities
from ..catalog.resolve import Resolver
from ..catalog.slayerquery import check_query
from ..core import yamlio
from ..core.errors import KBError
from ..core.memory import alias_line
from ..core.problems import INVALID_QUERY, STALE_QUERY

# The suggestions a "not found" ends with (``catalog.suggest.unresolved``): columns spelled alike,
# which a catalog change alone moves; the problem is the same without them.
_SUGGESTIONS = re.compile(r" Did you mean: [^?]*\?")


@dataclass(frozen=True)
class QueryProblem:
    """What is wrong with a query, without the fix (which names the memory): its message and kind."""

    message: str
    kind: str  # STALE_QUERY or INVALID_QUERY

    def same_as(self, message: str, kind: str) -> bool:
        """Whether a problem reported as ``message`` (this one's message, then its fix) of ``kind``
        is this problem, whatever columns each catalog suggests."""
        return kind == self.kind and _SUGGESTIONS.sub("", message).startswith(_SUGGESTIONS.sub("", self.message) + "; ")


def query_problem(query: Any, resolver: Resolver) -> QueryProblem | None:
    """What is wrong with ``query`` against ``resolver``'s catalog; None when nothing is. A reference
    that no longer resolves is stale (what a catalog delete leaves); anything else is invalid."""
    try:
        check_query(query)
        query_entities(query, resolver)
    except KBError as exc:
        if exc.stale:
            return QueryProblem(f"attached query has stale references ({exc})", STALE_QUERY)
        return QueryProblem(f"attached query is not a valid SlayerQuery ({exc})", INVALID_QUERY)
    return None


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
