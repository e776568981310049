"""Search: retrievers for words, meaning and entities behind one request, fused by reciprocal
rank (see docs/search.md). Nothing outside this package builds a Whoosh query for a search."""

from __future__ import annotations

from .filters import Restriction, restrict
from .retrieval import ALL, ALL_FIRST, FUSED, MATCHES, Found, Request, run, unmatched_filters

__all__ = ["ALL", "ALL_FIRST", "FUSED", "MATCHES", "Found", "Request", "Restriction", "restrict", "run",
           "unmatched_filters"]
