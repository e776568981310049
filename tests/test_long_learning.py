"""A learning at the content ceiling (2 MiB, the most a save can write with SLAYER_KB_MAX_CONTENT
at its top) is indexed and embedded whole, to its last sentence: the long text's tokens are
read a batch of pieces at a time and its mean made from token counts (embedding.py), never cut
(docs/performance.md has the figures)."""

from __future__ import annotations

import random

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.memory import MAX_CONTENT_CEILING, Memory, dumps
from slayer_kb.search import embedding, vectors
from testing import commit_all

pytestmark = pytest.mark.skipif(embedding.key() is None, reason="search by meaning is not installed")

ENDING = "Geocoding falls back to the postcode centroid when Mapbox returns nothing."


def long_learning() -> str:
    """Just under 2 MiB of words made of the letters a to p, then ``ENDING``, whose words (with
    their z, x, y and u) are nowhere before it."""
    pick = random.Random(7)
    words = ["".join(pick.choice("abcdefghijklmnop") for _ in range(pick.randint(3, 9))) for _ in range(3000)]
    lines = []
    size = 0
    while size < MAX_CONTENT_CEILING - 200:
        line = " ".join(pick.choice(words) for _ in range(14)) + ".\n"
        lines.append(line)
        size += len(line)
    return "".join(lines[:-1]) + ENDING


@pytest.mark.slow
def test_a_learning_at_the_ceiling_is_found_by_words_and_meaning_to_its_end(empty_kb: KnowledgeBase) -> None:
    learning = long_learning()
    assert MAX_CONTENT_CEILING - 300 < len(learning.encode()) <= MAX_CONTENT_CEILING
    kb = empty_kb
    saved = "long"
    for memory in (Memory(id=saved, title="Long notes", learning=learning, created_at="2026-11-01T09:00:00Z"),
                   Memory(id="refunds", title="Refunds", learning="Refunds are negative rows in the orders table.",
                          created_at="2026-11-01T09:00:00Z")):
        (kb.root / "memories" / f"{memory.id}.yaml").write_text(dumps(memory), encoding="utf-8")
    commit_all(kb.root)
    # By words: a word of its last sentence only.
    assert [m["id"] for m in kb.search("mapbox").memories] == [saved]
    # By meaning: its vector is the whole text's, and the token match reads every token of its
    # last sentence (after its first word, which the line break before it tokenizes otherwise).
    model = embedding.load()
    assert isinstance(model, embedding.Embedder)
    text = vectors.embedding_text(kb.get(saved))
    whole, (ending,) = model.embed([text])[0], model.embed_with_tokens([ENDING.partition(" ")[2]])[1]
    assert kb.index.cosines(whole, [saved])[saved] == pytest.approx(1.0, abs=1e-3)  # stored quantised
    kept = kb.index.token_ids({saved: text})[saved]
    assert set(ending.tolist()) <= set(kept.tolist())
    assert kb.get(saved).to_dict()["learning"] == learning
