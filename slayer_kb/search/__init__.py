"""Search: retrievers for words, meaning and entities behind one request, fused by reciprocal
rank (see docs/search.md). Nothing outside this package builds a Whoosh query for a search.

The retrievers and the filters are imported on first use: a module of the package
(``search.lookups``, ``search.sentences``) imports without them and what they import (Whoosh's
queries, numpy), and a command that does not search never loads them (``Context.index``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .fusion import ALL, ALL_FIRST, DEFAULT_LIMIT, FUSED, MATCHES

if TYPE_CHECKING:
    from .filters import Restriction, restrict
    from .retrieval import Found, Request, run, unmatched_filters, unmatched_warning

__all__ = ["ALL", "ALL_FIRST", "DEFAULT_LIMIT", "FUSED", "MATCHES", "Found", "Request", "Restriction", "restrict", "run",
           "unmatched_filters", "unmatched_warning"]

# name -> the module of this package that defines it
_WHERE = {"Restriction": "filters", "restrict": "filters"} | {
    name: "retrieval" for name in ("Found", "Request", "run", "unmatched_filters", "unmatched_warning")
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
