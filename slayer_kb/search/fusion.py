"""Reciprocal rank fusion (Cormack et al., 2009), as SLayer 1.4's search service fuses its
retrievers: each channel's ranking contributes ``weight / (K + rank)`` to a memory's score, ranks
counted from 1. A memory found by several channels rises; no channel's raw scores (BM25,
cosine) need to be comparable with another's."""

from __future__ import annotations

from collections.abc import Sequence

K = 60


def fuse(rankings: Sequence[tuple[float, Sequence[str]]]) -> list[tuple[str, float]]:
    """``(weight, ids best first)`` per channel -> ``(id, score)`` best first; ties keep the
    order in which the ids were first seen (channel order, then rank)."""
    scores: dict[str, float] = {}
    for weight, ids in rankings:
        for rank, memory_id in enumerate(ids, start=1):
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (K + rank)
    order = {memory_id: n for n, memory_id in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))
