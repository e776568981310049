"""The BM25F weighting of the index's searchers: Whoosh's formula over live documents only.

Whoosh counts a replaced or removed memory's document in its statistics until a merge drops it;
``scoring.Statistics`` does not, and this weighting hands its figures to Whoosh's own matchers,
so both scorers rank alike and alike however the index was built. Kept apart from scoring.py so
that opening a searcher imports no numpy: only scoring a word does.
"""

from __future__ import annotations

from typing import Any

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh.scoring import BM25F, BM25FScorer, WeightScorer

from .whoosh_internals import field_b


class LiveBM25F(BM25F):
    """Whoosh's BM25F with ``scoring.Statistics``: the weighting of every searcher the index
    opens, so that Whoosh's matchers and ``scoring.VectorSearcher`` score alike."""

    def idf(self, searcher: Any, fieldname: str, text: bytes) -> float:
        from .scoring import statistics

        stats = statistics(searcher)
        return stats.idf(stats.postings(fieldname, text)[0])

    def scorer(self, searcher: Any, fieldname: str, text: bytes, qf: int = 1) -> Any:
        if not searcher.schema[fieldname].scorable:
            return WeightScorer.for_(searcher, fieldname, text)
        return _LiveScorer(searcher, fieldname, text, field_b(self, fieldname), self.K1, qf)


class _LiveScorer(BM25FScorer):
    def __init__(self, searcher: Any, fieldname: str, text: bytes, B: float, K1: float, qf: int = 1) -> None:  # noqa: N803 - Whoosh's names
        from .scoring import statistics

        parent = searcher.get_parent()
        self.idf = parent.idf(fieldname, text)
        self.avgfl = statistics(parent).average_length(fieldname)
        self.B, self.K1, self.qf = B, K1, qf
        self.setup(searcher, fieldname, text)
