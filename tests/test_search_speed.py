"""What a warm search does to answer fast gives the answers it gave before, to the bit: the
union of posting lists summed over its own documents, and the bucket of each hit read from the
index rather than from its stored fields. (bench/rankings.py compares every relevance question's
top 10, scores included, before and after a change made for speed.)"""

from __future__ import annotations

import numpy as np
import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import scoring


def test_a_sparse_union_sums_as_the_dense_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    size = 50_000
    parts = [(np.sort(rng.choice(size, n, replace=False)), rng.random(n) * 10) for n in (300, 2000, 50, 900)]
    sparse = scoring._union(parts, size)
    assert len(np.concatenate([p[0] for p in parts])) * scoring._SPARSE_UNION < size  # the sparse path ran
    monkeypatch.setattr(scoring, "_SPARSE_UNION", 0)
    dense = scoring._union(parts, size)
    assert sparse[0].tobytes() == dense[0].tobytes()
    assert sparse[1].tobytes() == dense[1].tobytes()
    assert sparse[0].dtype == dense[0].dtype and sparse[1].dtype == dense[1].dtype
    assert len(dense[0]) == len(np.unique(np.concatenate([p[0] for p in parts])))


def test_each_bucket_is_the_head_of_the_same_ranking(example_kb: KnowledgeBase) -> None:
    """Memories and example queries each take the first hits of their kind in the one fused
    ranking: a smaller limit gives the head of a larger one's buckets (both rank the same
    candidates), the example queries included however far down the ranking they come."""
    wide = example_kb.search("revenue paid orders", limit=10)
    narrow = example_kb.search("revenue paid orders", limit=2)
    assert len(wide.memories) > 2 and len(wide.example_queries) > 2
    assert [h["id"] for h in narrow.memories] == [h["id"] for h in wide.memories][:2]
    assert [h["id"] for h in narrow.example_queries] == [h["id"] for h in wide.example_queries][:2]
    assert all("query" in h for h in wide.example_queries)
    assert not any("query" in h for h in wide.memories)
