"""What a warm search does to answer fast gives the answers it gave before, to the bit: the
union of posting lists summed over its own documents, and the bucket of each hit read from the
index rather than from its stored fields. (bench/rankings.py compares every relevance question's
top 10, scores included, before and after a change made for speed.)"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slayer_kb import KnowledgeBase
from slayer_kb.search import embedding, scoring, spans
from slayer_kb.search import words as W
from slayer_kb.search.filters import restrict
from testing import examples


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



@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_a_union_of_two_merges_to_the_bit_of_the_summed_one(data: st.DataObject) -> None:
    """A word in two fields (``_merged``): the docnums and sums the counted union gives, to the
    bit, whether the parts overlap, nest, miss each other or are empty; scores from one-byte
    weights (a field Whoosh does not score) come out float64 as there."""
    size = data.draw(st.integers(1, 400))
    docnums = st.lists(st.integers(0, size - 1), unique=True, max_size=size).map(lambda d: np.array(sorted(d), dtype=np.int64))
    parts = []
    for _ in range(2):
        found = data.draw(docnums)
        if data.draw(st.booleans()):
            scores = np.array(data.draw(st.lists(st.integers(1, 255), min_size=len(found), max_size=len(found))), dtype=np.uint8)
        else:
            scores = np.array(data.draw(st.lists(st.floats(1e-6, 50.0), min_size=len(found), max_size=len(found))), dtype=np.float64)
        parts.append((found, scores))
    merged = scoring._union(parts, size)
    ids = np.concatenate([p[0] for p in parts])
    expected = np.unique(ids)
    sums = np.bincount(ids, weights=np.concatenate([p[1].astype(np.float64) for p in parts]), minlength=size)[expected]
    assert merged[0].tobytes() == expected.tobytes() and merged[0].dtype == np.int64
    assert merged[1].tobytes() == sums.tobytes() and merged[1].dtype == np.float64


@pytest.mark.parametrize("sizes", [(300, 2000), (2000, 300), (0, 50), (50, 0), (1, 1), (5000, 5000), (40, 40_000)])
def test_an_intersection_is_intersect1d_to_the_bit(sizes: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(sizes))
    size = 50_000
    a, b = ((np.sort(rng.choice(size, n, replace=False)), rng.random(n) * 10) for n in sizes)
    found, here, there = np.intersect1d(a[0], b[0], assume_unique=True, return_indices=True)
    mine = scoring._intersect(a, b)
    assert mine[0].tobytes() == found.tobytes() and mine[0].dtype == found.dtype
    assert mine[1].tobytes() == (a[1][here] + b[1][there]).tobytes()
    assert [x.tobytes() for x in scoring._common(a[0], b[0])] == [here.tobytes(), there.tobytes()]
    same = scoring._intersect(a, a)  # every docnum in both
    assert same[0].tobytes() == a[0].tobytes() and same[1].tobytes() == (a[1] + a[1]).tobytes()

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


def test_a_query_asked_again_is_remembered_and_filtered_as_a_fresh_one(example_kb: KnowledgeBase) -> None:
    """A search asks its every-word query again under each bucket's filter: the matches are
    remembered for that query object, and filtered exactly as a fresh query's."""
    example_kb.ensure_fresh()
    index = example_kb.index
    words = W.parse("revenue paid orders")
    asked = W.all_query(words)
    everywhere = index.scores(asked, restrict(), limit=60)
    assert len(everywhere) > 2
    searcher = index._vector
    assert searcher._matches(asked) is searcher._matches(asked)
    again = W.all_query(words)  # equal, not the same object: evaluated anew
    assert searcher._matches(again) is not searcher._matches(asked)
    buckets = [index.scores(asked, restrict(has_query=has_query), limit=60) for has_query in (False, True)]
    assert buckets == [index.scores(W.all_query(words), restrict(has_query=has_query), limit=60) for has_query in (False, True)]
    assert all(buckets) and sorted(buckets[0] | buckets[1]) == sorted(everywhere)


def test_a_searchers_kept_filter_masks_rank_as_fresh_ones(example_kb_read_only: KnowledgeBase) -> None:
    """The documents each pair of filters allows is kept per searcher (``_allowed``): asked in
    turn under every filter, and again, a kept searcher ranks each query as a new one does."""
    example_kb_read_only.ensure_fresh()
    index = example_kb_read_only.index
    words = W.parse("revenue paid orders refunds")
    queries = [W.all_query(words), W.any_query(words)]
    filters = [restrict(), restrict(has_query=True), restrict(has_query=False), restrict(type="decision"), restrict(type="no-such-type")]
    searcher = index.searcher()

    def ranked(vector: scoring.VectorSearcher | None) -> list[list[tuple[float, int]]]:
        out = []
        for _ in range(2):
            for f, query in itertools.product(filters, queries):
                v = vector or scoring.VectorSearcher(searcher)  # None: a new one for each
                out.append(v.top(query, 5, v.docs(index._docset(searcher, f.only)), v.docs(index._docset(searcher, f.exclude))))
        return out

    kept = scoring.VectorSearcher(searcher)
    answers = ranked(kept)
    assert answers == ranked(None)
    assert answers[:len(answers) // 2] == answers[len(answers) // 2:]
    assert len({tuple(a) for a in answers}) > 3  # the filters tell the rankings apart
    assert len(kept._masks) == len(filters)


def test_the_catalog_and_warnings_come_in_their_order_with_the_encoding_beside(example_kb: KnowledgeBase) -> None:
    """The catalog is read while the question's sentence vector is made; its warnings still
    follow the ranking's."""
    result = example_kb.search("paid revenue amount", entities=["memory:kb.paid-revenue", "orders.amount"], datasource="wh")
    assert result.warnings == [
        "memory:kb.paid-revenue is not rooted at datasource 'wh'; dropped.",
        "entity 'shop.orders.amount' is not rooted at datasource 'wh'; dropped from entities bucket.",
    ]
    assert result.entities and all(e["entity"].startswith("wh.") for e in result.entities)


def test_the_token_match_keeps_its_token_vectors_to_the_bit() -> None:
    """Each token's unit vector is made once and kept: made alone, among others or from the
    kept rows, the token match is the same to the bit."""
    model = embedding.load()
    assert isinstance(model, embedding.Embedder), model
    texts = ["Refunds are counted on the day the payment provider settles them.",
             "The nightly export gives up after 30 seconds and retries at midnight UTC.",
             "Churn is measured per monthly cohort, net of reactivated customers."]
    question = "when does the export stop waiting for the provider?"
    warm = embedding.Embedder(model._tokenizer, model._weights)
    warm.token_match("cohort churn", texts[2:])  # some rows made before, in another batch
    kept = warm.token_match(question, texts)
    fresh = embedding.Embedder(model._tokenizer, model._weights).token_match(question, texts)
    assert kept.tobytes() == fresh.tobytes() and kept.min() > 0
    ids = np.unique(np.concatenate(warm._token_ids(texts)))
    assert warm._unit_rows(ids).tobytes() == embedding._unit_rows(model._weights[ids]).tobytes()


def test_a_texts_units_are_kept_and_found_once_made(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text's units are one look-up by the text's hash; units the cache lacked at one search
    and holds at the next are read then, scored as if looked up afresh, and kept."""
    from collections import OrderedDict

    from slayer_kb.search import encoder, meaning, sentences

    monkeypatch.setattr(meaning, "_units_seen", OrderedDict())
    monkeypatch.setattr(meaning, "_units_absent", (None, set()))
    text = "Exports\nThe export stops after 30 seconds. It retries at midnight."
    assert len(spans.units(text)) == 2
    rng = np.random.default_rng(3)
    vector = rng.standard_normal(encoder.DIMENSIONS).astype(np.float32)
    assert example_kb.index.unit_cosines(vector, {"m": text}) == {}
    digest = sentences.text_hash(text)
    assert digest not in meaning._units_seen
    rows = [sentences.pack(rng.standard_normal(encoder.DIMENSIONS)) for _ in range(2)]
    sentences.store(encoder.UNITS_KEY, {digest: b"".join(rows)})
    found = example_kb.index.unit_cosines(vector, {"m": text})
    expected = float(np.max(sentences.unpack(rows, encoder.DIMENSIONS) @ vector))
    assert found == {"m": expected}
    assert meaning._units_seen[digest] == b"".join(rows)


def test_units_the_cache_lacks_are_asked_once_until_the_cache_changes(
    example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hash the cache had no units for is not looked up again by the next search, nor is a
    text of one sentence (its empty entry); units another process stores are found by the next
    search, scored as a fresh look-up scores them."""
    import subprocess
    import sys
    from collections import OrderedDict

    from slayer_kb.search import encoder, meaning, sentences

    monkeypatch.setattr(meaning, "_units_seen", OrderedDict())
    monkeypatch.setattr(meaning, "_units_absent", (None, set()))
    asked: list[list[str]] = []
    lookup = sentences.lookup

    def counted(model: str, hashes: list[str], mark: bool = True) -> dict[str, bytes]:
        asked.append(list(hashes))
        return lookup(model, hashes, mark)

    monkeypatch.setattr(sentences, "lookup", counted)
    two, one = "Exports\nThe export stops after 30 seconds. It retries at midnight.", "Exports stop."
    sentences.store(encoder.UNITS_KEY, {sentences.text_hash(one): b""})
    texts = {"a": two, "b": one}
    rng = np.random.default_rng(5)
    vector = rng.standard_normal(encoder.DIMENSIONS).astype(np.float32)
    assert example_kb.index.unit_cosines(vector, texts) == {}
    assert example_kb.index.unit_cosines(vector, texts) == {}
    # The final units of both, then a stand-in's of the one the cache lacks; then nothing.
    assert asked == [[sentences.text_hash(two), sentences.text_hash(one)], [sentences.text_hash(two)], []]
    assert meaning._units_seen[sentences.text_hash(one)] == b""
    stamp = sentences.version()
    assert stamp is not None and sentences.version() == stamp  # no write: the same stamp
    rows = [sentences.pack(rng.standard_normal(encoder.DIMENSIONS)) for _ in range(2)]
    script = (
        "import sys; from slayer_kb.search import encoder, sentences; "
        "sentences.store(encoder.UNITS_KEY, {sys.argv[1]: bytes.fromhex(sys.argv[2])})"
    )
    subprocess.run([sys.executable, "-c", script, sentences.text_hash(two), b"".join(rows).hex()], check=True)
    assert sentences.version() != stamp
    found = example_kb.index.unit_cosines(vector, texts)
    assert asked[3:] == [[sentences.text_hash(two)]]
    assert found == {"a": float(np.max(sentences.unpack(rows, encoder.DIMENSIONS) @ vector))}


def test_the_kept_cache_connection_sees_what_a_new_one_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Look-ups keep their connection to the vector cache: they still find a vector another
    connection stored since, and nothing once the file is removed or the cache is elsewhere."""
    from slayer_kb.search import sentences

    first = sentences.pack(np.arange(4, dtype=np.float32))
    assert sentences.lookup("m", ["a"]) == {}
    sentences.store("m", {"a": first})  # its own connection, as another process's
    kept = sentences._reader()
    assert sentences.lookup("m", ["a", "b"]) == {"a": first}
    assert sentences._reader() is kept
    shutil.rmtree(sentences.folder())  # the cache cleared
    assert sentences.lookup("m", ["a"]) == {}
    assert sentences._reader() is not kept
    sentences.store("m", {"b": first})
    monkeypatch.setenv("SLAYER_KB_CACHE", str(tmp_path / "elsewhere"))
    assert sentences.lookup("m", ["b"]) == {} and sentences.held("m", ["b"]) == set()
    monkeypatch.setenv("SLAYER_KB_CACHE", str(tmp_path / "sentence-cache"))
    assert sentences.held("m", ["a", "b"]) == {"b"}



def test_a_search_reads_one_version_of_the_index(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search asks once whether the index changed (a listing of its folder), not at each
    look-up; within it the searcher stays the one it began with; the next one sees a write."""
    from whoosh.searching import Searcher

    from slayer_kb.search import Request, run

    example_kb.ensure_fresh()
    index = example_kb.index
    index.searcher()  # open: a search then asks whether it is still current
    asked: list[object] = []
    up_to_date = Searcher.up_to_date

    def counted(self: Searcher) -> bool:
        asked.append(self)
        return bool(up_to_date(self))

    monkeypatch.setattr(Searcher, "up_to_date", counted)
    found = run(index, Request(question="revenue paid orders"))
    assert found.memories and len(asked) == 1
    with index.one_searcher():
        first = index.searcher()
        other = KnowledgeBase(example_kb.root)
        other.save_observation(title="Paid orders exclude test accounts", content="Revenue counts paid orders of real customers only.")
        other.close()
        with index.one_searcher():  # nested: the outer block's searcher
            assert index.searcher() is first
        assert index.searcher() is first and first.up_to_date() is False
    assert index.searcher() is not first  # the write is seen once the block ends


class _IdsAndOffsets:
    """A tokenizer with only ``encode_batch`` (ids, tokens and offsets): what an older tokenizers
    offers, and what the ids were read from before."""

    def __init__(self, tokenizer: object) -> None:
        self.encode_batch = tokenizer.encode_batch  # type: ignore[attr-defined]


@given(st.lists(st.text(st.sampled_from("ab é日😀-_.,:'\n\t") | st.characters(exclude_categories=["Cs"]), max_size=80), max_size=6),
       st.sampled_from(["", "x" * 300, "word " * 500]))
@settings(max_examples=examples(150), deadline=None)
def test_the_ids_read_without_offsets_are_the_ids_read_with_them(texts: list[str], long: str) -> None:
    """The token match and the static vectors read a text's ids without the offsets (faster):
    the same ids, text by text, as read with them, and so the same vectors."""
    model = embedding.load()
    assert isinstance(model, embedding.Embedder), model
    assert hasattr(model._tokenizer, "encode_batch_fast")  # the faster path is the one tested
    texts = [*texts, long]
    plain = embedding.Embedder(_IdsAndOffsets(model._tokenizer), model._weights)
    assert [ids.tolist() for ids in model._ids(texts)] == [ids.tolist() for ids in plain._ids(texts)]
    assert model.embed(texts).tobytes() == plain.embed(texts).tobytes()


def test_the_kept_manifest_connection_sees_what_a_new_one_would(example_kb: KnowledgeBase) -> None:
    """The index reads the manifest through one connection a thread, kept: it still sees what
    another connection commits, a rebuilt manifest is read through a new one, another thread
    has its own, and closing the index closes it."""
    import sqlite3
    import threading

    from slayer_kb.core.memory import Memory
    from slayer_kb.search import vectors

    kb = example_kb
    kb.ensure_fresh()
    memory_id = "kb.refund-policy"
    text = vectors.embedding_text(Memory(**kb.index.stored([memory_id])[memory_id]["data"]))
    first = kb.index.token_ids({memory_id: text})[memory_id]
    kept = kb.index._manifest_reader()
    assert kb.index.token_ids({memory_id: text})[memory_id].tobytes() == first.tobytes()
    assert kb.index._manifest_reader() is kept
    elsewhere: list[object] = []
    thread = threading.Thread(target=lambda: elsewhere.append(kb.index._manifest_reader()))
    thread.start()
    thread.join()
    assert elsewhere and elsewhere[0] is not kept
    with sqlite3.connect(kb.root / ".slayer-kb" / "index" / "manifest.db") as db:
        db.execute("DELETE FROM tokens WHERE id = ?", (memory_id,))
    assert kb.index.token_ids({memory_id: text}) == {}  # another connection's commit, seen
    kb.reindex()
    assert kb.index.token_ids({memory_id: text})[memory_id].tobytes() == first.tobytes()
    assert kb.index._manifest_reader() is not kept
    kb.index.close()
    with pytest.raises(sqlite3.ProgrammingError):
        kept.execute("SELECT 1")  # closed when the manifest was replaced
    reopened = kb.index._manifest_reader()
    kb.index.close()
    with pytest.raises(sqlite3.ProgrammingError):
        reopened.execute("SELECT 1")


def test_a_heads_units_unpacked_together_score_as_each_texts_alone(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The head's units are made unit vectors in one call; each text's best cosine is the one
    its own rows alone give, to the bit, whatever the number of units a text has."""
    from collections import OrderedDict

    from slayer_kb.search import encoder, meaning, sentences

    monkeypatch.setattr(meaning, "_units_seen", OrderedDict())
    monkeypatch.setattr(meaning, "_units_absent", (None, set()))
    rng = np.random.default_rng(8)
    texts, expected, stored = {}, {}, {}
    vector = rng.standard_normal(encoder.DIMENSIONS).astype(np.float32)
    for n in range(30):
        text = f"Note {n}\nThe export {n} stops after {n} seconds. It retries at midnight."
        rows = [sentences.pack(rng.standard_normal(encoder.DIMENSIONS)) for _ in range(int(rng.integers(0, 7)))]
        texts[f"m{n}"] = text
        stored[sentences.text_hash(text)] = b"".join(rows)  # none: a text of one sentence
        if rows:
            expected[f"m{n}"] = float(np.max(sentences.unpack(rows, encoder.DIMENSIONS) @ vector))
    sentences.store(encoder.UNITS_KEY, stored)
    assert example_kb.index.unit_cosines(vector, texts) == expected
    assert example_kb.index.unit_cosines(vector, texts) == expected  # from the units kept
