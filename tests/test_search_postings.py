"""Decoded posting lists kept by segment (search/postings.py): what a warm process holds is, to
the bit, what decoding Whoosh's blocks gives, and it stays so across every change to the index
(a save, a forget, an edit made behind the process's back, a reindex, a compaction): a warm
process scores exactly as a fresh one and as Whoosh's own matchers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slayer_kb import KnowledgeBase
from slayer_kb.search import postings as P
from slayer_kb.search import reading as reading_module
from slayer_kb.search import scoring
from slayer_kb.search import words as W
from slayer_kb.search.filters import restrict
from testing import examples

QUESTIONS = ["revenue paid orders", "refund", "zeppelin orders", "amount currency euro", "utc timestamps"]


@settings(max_examples=examples(200), deadline=None)
@given(
    weights=st.lists(st.one_of(st.integers(0, 300).map(float), st.floats(allow_nan=False, allow_infinity=False),
                               st.sampled_from([0.5, 1.5, 255.0, 256.0, -1.0, 1e-300])), min_size=1, max_size=40),
    offset=st.integers(0, 2**31),
)
def test_held_postings_widen_to_the_decoded_ones_to_the_bit(weights: list[float], offset: int) -> None:
    ids = np.cumsum(np.arange(1, len(weights) + 1, dtype=np.int64))
    decoded = (ids, np.array(weights, dtype=np.float64))
    held = P._compact(decoded)
    assert held[0].dtype == np.int32
    if all(w.is_integer() and 0 <= w <= 255 and str(w)[0] != "-" for w in weights):
        assert held[1].dtype == np.uint8  # a word's count: a byte (-0.0 is not one, to the bit)
    for got, want in zip(P.widened(held, offset), P.widened(decoded, offset), strict=True):
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    assert P.widened(decoded, offset)[0].tolist() == [i + offset for i in ids.tolist()]


def _warm(root: Path) -> KnowledgeBase:
    kb = KnowledgeBase(root)
    kb.keep_warm()
    kb.warm_up()
    return kb


def _store(kb: KnowledgeBase) -> P.Store:
    store = P.store_of(kb.index.searcher())
    assert store is not None
    return store


def _segment_ids(kb: KnowledgeBase) -> set[str]:
    ids = {P.segment_id(segment) for segment, _offset in kb.index.searcher().reader().leaf_readers()}
    return {i for i in ids if i is not None}


def _word_scores(kb: KnowledgeBase) -> list[dict[str, float]]:
    kb.ensure_fresh()
    with kb.index.one_searcher():
        return [kb.index.scores(W.any_query(W.parse(q)), restrict(), limit=None) for q in QUESTIONS]


def _check(warm: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, float]]:
    """The warm process's word scores: the same, to the bit, as a fresh process's (decoding
    anew), and as Whoosh's matchers' to 12 digits (they add in another order)."""
    held = _word_scores(warm)
    assert _store(warm)._segments.keys() <= _segment_ids(warm)  # nothing kept of a segment gone
    assert held == _word_scores(KnowledgeBase(warm.root))
    with monkeypatch.context() as m:
        m.setattr(reading_module, "VECTOR_DOCS", 10**9)
        whoosh = _word_scores(KnowledgeBase(warm.root))
    assert [sorted(s) for s in whoosh] == [sorted(s) for s in held]
    assert all(whoosh[n] == pytest.approx(held[n], rel=1e-12) for n in range(len(held)))
    return held


def test_a_warm_process_holds_the_common_words_as_decoded(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The words of at least EAGER_POSTINGS documents (3 here, for a small KB) are held from the
    warm-up, the others once met: each to the bit as decoding gives it."""
    monkeypatch.setattr(P, "EAGER_POSTINGS", 3)
    example_kb.ensure_fresh()
    kb = _warm(example_kb.root)
    store, searcher = _store(kb), kb.index.searcher()
    segments = searcher.reader().leaf_readers()
    common = {(P.segment_id(s), (f, t)) for s, _o in segments for f in P.WORD_FIELDS
              for t, info in s.iter_field(f) if info.doc_frequency() >= P.EAGER_POSTINGS}
    every = {(P.segment_id(s), (f, t)) for s, _o in segments for f in P.WORD_FIELDS for t in s.lexicon(f)}
    assert 50 < len(common) < len(every) / 2
    assert {(name, key) for name, held in store._segments.items() for key in held} == common  # the common words, before any search
    assert P.load(searcher) == 0  # a second warm-up decodes nothing again
    stats = scoring.statistics(searcher)
    counted = 0
    for fieldname in P.WORD_FIELDS:
        fmt = searcher.schema[fieldname].format
        for text in {t for s, _o in segments for t in s.lexicon(fieldname)}:
            parts = [P.decode(s, fieldname, text, fmt) for s, _o in segments]
            want = [P.widened(found, offset) for found, (_s, offset) in zip(parts, segments, strict=True) if found is not None]
            got = stats.postings(fieldname, text)
            assert got[0].tobytes() == np.concatenate([w[0] for w in want]).tobytes() and got[0].dtype == np.int64
            assert got[1].tobytes() == np.concatenate([w[1] for w in want]).tobytes() and got[1].dtype == np.float64
            counted += len(got[0])
    assert counted > 1000
    assert {(name, key) for name, held in store._segments.items() for key in held} >= every  # the rare ones since
    assert stats.postings("text", b"zeppelin")[0].size == 0
    assert all(held[("text", b"zeppelin")][0].size == 0 for held in store._segments.values())  # held as absent


def test_held_postings_stay_current_across_every_change(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    example_kb.ensure_fresh()
    kb = _warm(example_kb.root)
    first = _check(kb, monkeypatch)
    assert _ids_with(kb, "zeppelin") == []

    saved = kb.save_memory("The zeppelin orders table is refreshed hourly in UTC.", ["orders.amount"]).memory_id
    after_save = _check(kb, monkeypatch)
    assert saved in after_save[2] and saved in after_save[4]

    gone = next(iter(first[0]))
    kb.forget(gone)
    after_forget = _check(kb, monkeypatch)
    assert gone not in after_forget[0]

    _edit_behind_its_back(kb, saved)
    after_edit = _check(kb, monkeypatch)
    assert saved in after_edit[1] and saved not in after_edit[4]

    before = _segment_ids(kb)
    assert len(before) > 1 and kb.compact_index(everything=True)[1] == 1
    assert not _segment_ids(kb) & before
    # The same memories. (One memory's score moves by a merge or a reindex after these changes,
    # on main's code too; the warm process, a fresh one and Whoosh agree on it at every step.)
    assert [sorted(s) for s in _check(kb, monkeypatch)] == [sorted(s) for s in after_edit]
    assert not _store(kb)._segments.keys() & before  # the merged segments' postings are dropped

    kb.reindex()
    assert [sorted(s) for s in _check(kb, monkeypatch)] == [sorted(s) for s in after_edit]


def _ids_with(kb: KnowledgeBase, word: str) -> list[str]:
    return list(kb.index.scores(W.any_query(W.parse(word)), restrict(), limit=None))


def _edit_behind_its_back(kb: KnowledgeBase, memory_id: str) -> None:
    """Rewrite a memory's file as an editor would (no slayer-kb command): the zeppelin note now
    speaks of refunds and no longer of UTC."""
    path = kb.root / "memories" / f"{memory_id}.yaml"
    text = path.read_text(encoding="utf-8")
    assert "refreshed hourly in UTC." in text
    path.write_text(text.replace("refreshed hourly in UTC.", "used for every refund."), encoding="utf-8")


def test_a_searcher_of_no_index_decodes_without_a_store(tmp_path: Path) -> None:
    from whoosh import index as windex

    from slayer_kb.search.schema import SCHEMA

    ix = windex.create_in(str(tmp_path), SCHEMA)
    writer = ix.writer()
    writer.add_document(id="a", kind="memory", text="refund refund order")
    writer.commit()
    bare: Any = ix.searcher().reader()
    from whoosh.searching import Searcher

    searcher = Searcher(bare)
    assert P.store_of(searcher) is None
    ids, weights = scoring.statistics(searcher).postings("text", b"refund")
    assert ids.tolist() == [0] and weights.tolist() == [2.0]
