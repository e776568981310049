"""Each memory's distinct token ids, kept in the index when its text is embedded (the manifest's
``tokens`` table, vectors.py): a search's token match reads its head's there rather than
tokenize their texts again. They are the ids tokenizing gives, so the answer is the same to the
bit; ids kept for another text are never read, and a memory without them is tokenized as
before."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slayer_kb import KnowledgeBase
from slayer_kb.core.memory import Memory
from slayer_kb.search import embedding, sentences, tokens, vectors
from testing.repos import git

QUESTION = "how are refunds of paid orders counted in net revenue"
REFUNDS = "kb.refund-policy"


def _model() -> embedding.Embedder:
    model = embedding.load()
    assert isinstance(model, embedding.Embedder), model
    return model


def _tokenized_afresh(texts: Iterable[str]) -> list[np.ndarray]:
    """The ids a new model tokenizes for these texts, as the token match had them before."""
    model = _model()
    return embedding.Embedder(model._tokenizer, model._weights)._token_ids(list(texts))


def _texts(kb: KnowledgeBase) -> dict[str, str]:
    """Each indexed memory's embedded text."""
    return {m: vectors.embedding_text(Memory(**doc["data"])) for m, doc in kb.index.stored(kb.index.ids()).items()}


def _manifest(kb: KnowledgeBase) -> Path:
    return kb.root / ".slayer-kb" / "index" / "manifest.db"


def _answer(found: Any) -> list[list[tuple[str, float]]]:
    return [[(h["id"], h["score"]) for h in bucket] for bucket in (found.memories, found.example_queries)]


@pytest.fixture
def tokenized(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the static model tokenizes from now on (what it remembered of texts forgotten)."""
    model = _model()
    monkeypatch.setattr(model, "_cache", {})
    seen: list[str] = []
    tokenize = embedding.Embedder._ids

    def recording(self: embedding.Embedder, texts: list[str]) -> list[list[int]]:
        seen.extend(texts)
        return tokenize(self, texts)

    monkeypatch.setattr(embedding.Embedder, "_ids", recording)
    return seen


def test_each_memorys_token_ids_are_kept_when_it_is_indexed(example_kb: KnowledgeBase) -> None:
    example_kb.ensure_fresh()
    texts = _texts(example_kb)
    kept = example_kb.index.token_ids(texts)
    assert sorted(kept) == sorted(texts) and len(texts) == 34
    for (memory_id, _text), ids in zip(texts.items(), _tokenized_afresh(texts.values()), strict=True):
        assert kept[memory_id].dtype == ids.dtype == np.int64
        assert kept[memory_id].tobytes() == ids.tobytes() and len(ids) > 5


def test_a_search_reads_its_heads_ids_and_answers_the_same_without_them(example_kb: KnowledgeBase, tokenized: list[str]) -> None:
    """With the ids kept, a search tokenizes the question alone (its static vector); with them
    gone from the index, it tokenizes its head's texts again and gives the same answer, scores
    to the bit."""
    example_kb.ensure_fresh()
    tokenized.clear()  # the memories' texts, as their vectors were made
    kept = example_kb.search(QUESTION)
    assert tokenized == [QUESTION]
    assert kept.memories[0]["id"] == REFUNDS
    with sqlite3.connect(_manifest(example_kb)) as db:
        db.execute("DELETE FROM tokens")
    tokenized.clear()
    again = example_kb.search(QUESTION)
    head = [t for t in tokenized if t != QUESTION]
    assert tokenized[0] == QUESTION and len(head) > 20 and _texts(example_kb)[REFUNDS] in head
    assert _answer(again) == _answer(kept)


def test_an_edited_memory_has_its_new_texts_ids_and_ids_of_another_text_are_never_read(
    example_kb: KnowledgeBase, tokenized: list[str],
) -> None:
    kb = example_kb
    kb.ensure_fresh()
    before = _texts(kb)[REFUNDS]
    with sqlite3.connect(_manifest(kb)) as db:
        old = db.execute("SELECT hash, ids FROM tokens WHERE id = ?", (REFUNDS,)).fetchone()
    path = kb.root / "memories" / f"{REFUNDS}.yaml"
    tokenized.clear()
    path.write_text(path.read_text(encoding="utf-8").replace("count them once", "count them once, zeppelin"), encoding="utf-8")
    kb.ensure_fresh()
    after = _texts(kb)[REFUNDS]
    assert after != before and tokenized == [after]  # the edited text alone, as its vector is made
    (fresh,) = _tokenized_afresh([after])
    assert kb.index.token_ids({REFUNDS: after})[REFUNDS].tobytes() == fresh.tobytes()
    assert set(fresh.tolist()) - set(tokens.unpack(old[1]).tolist())  # "zeppelin"'s ids are new
    assert old[0] == sentences.text_hash(before)

    # The text's old ids put back (a row that no longer matches its text): never read for it.
    expected = kb.search(QUESTION)
    with sqlite3.connect(_manifest(kb)) as db:
        db.execute("UPDATE tokens SET hash = ?, ids = ? WHERE id = ?", (*old, REFUNDS))
    assert kb.index.token_ids({REFUNDS: after}) == {}
    tokenized.clear()
    assert _answer(kb.search(QUESTION)) == _answer(expected)
    assert tokenized == [QUESTION, after]


def test_the_ids_are_there_after_a_reindex_and_across_branch_switches(example_kb: KnowledgeBase, tokenized: list[str]) -> None:
    """A reindex makes them with the static vectors; a branch switch indexes the memories it
    changed, and the others keep theirs: a search after either tokenizes no text of its head."""
    kb = example_kb
    kb.reindex()
    assert len(tokenized) == 34
    tokenized.clear()
    kb.search(QUESTION)
    assert tokenized == [QUESTION]

    home = git(kb.root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(kb.root, "switch", "-q", "-c", "other")
    saved = kb.save_observation(title="Refunds of gift cards", content="A gift card refund is counted when the card is cancelled.")
    text = _texts(kb)[saved.memory_id]
    for branch, indexed in ((home, []), ("other", [text])):
        git(kb.root, "switch", "-q", branch)
        tokenized.clear()
        kb.ensure_fresh()
        assert tokenized == indexed  # the memory the switch brought back, and no other
        kept = kb.index.token_ids(texts := _texts(kb))
        assert sorted(kept) == sorted(texts)
        tokenized.clear()
        kb.search(QUESTION)
        assert tokenized == [QUESTION]


@given(st.lists(st.integers(0, 65_535), unique=True).map(sorted))
def test_token_ids_pack_and_unpack_to_the_same_ids(ids: list[int]) -> None:
    array = np.asarray(ids, dtype=np.int64)
    packed = tokens.pack(array)
    assert packed is not None and len(packed) == 2 * len(ids)
    assert tokens.unpack(packed).tobytes() == array.tobytes()


@given(st.lists(st.integers(0, 2**40)))
def test_the_distinct_ids_are_numpys_unique(ids: list[int]) -> None:
    expected = np.unique(np.asarray(ids, dtype=np.int64))
    found = embedding.distinct(ids)
    assert (found.dtype, found.tobytes()) == (expected.dtype, expected.tobytes())


def test_ids_past_two_bytes_are_not_kept_and_the_models_are_within_them() -> None:
    assert tokens.pack(np.asarray([3, 65_536], dtype=np.int64)) is None
    assert _model()._tokenizer.get_vocab_size() <= 65_536
