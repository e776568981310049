"""scoring.py answers searches in place of Whoosh's matchers: it must give exactly Whoosh's hits,
scores and order, for every query shape search.py builds, on indexes of several segments; where
documents were deleted, with statistics over the live documents only, so that an index built by
increments ranks as one built in one go."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from whoosh import index as windex
from whoosh import query as Q
from whoosh.scoring import bm25

from slayer_kb import KnowledgeBase
from slayer_kb.search import reading as reading_module
from slayer_kb.search.bm25 import LiveBM25F
from slayer_kb.search.schema import SCHEMA
from slayer_kb.search.scoring import VectorSearcher
from testing import RELEVANCE, examples

WORDS = ["refund", "order", "paid", "revenue", "cents", "warehouse", "churn", "utc", "vat", "margin"]


GONE = frozenset(range(0, 300, 7)[:40])


def build(folder: Path, deletions: bool):  # noqa: ANN201
    """A searcher over an index of 300 documents written in three commits (three segments), 40
    of them then deleted with ``deletions``, or, without, never written (260 in all)."""
    ix = windex.create_in(str(folder), SCHEMA)
    n = 0
    for batch in range(3):
        writer = ix.writer()
        for _ in range(100):
            words = [WORDS[(n * k + batch) % len(WORDS)] for k in range(1, 2 + n % 7)]
            if deletions or n not in GONE:
                writer.add_document(
                    id=f"m{n}",
                    kind="memory",
                    text=" ".join(words * (1 + n % 3)),
                    title=words[0] if n % 4 == 0 else "",
                    entities=f"shop.orders shop.orders.f{n % 5}" if n % 2 else "wh.sales",
                    has_query="1" if n % 5 == 0 else "0",
                )
            n += 1
        writer.commit(merge=False)
    if deletions:
        writer = ix.writer()
        for gone in GONE:
            writer.delete_by_term("id", f"m{gone}")
        writer.commit(merge=False)
    s = ix.searcher(weighting=LiveBM25F())
    assert len(s.reader().leaf_readers()) == 3
    return s


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    with build(tmp_path_factory.mktemp("vector"), deletions=True) as s:
        yield s


@pytest.fixture(scope="module")
def never_written(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """The live documents of ``searcher``, never joined by the deleted ones."""
    with build(tmp_path_factory.mktemp("live"), deletions=False) as s:
        yield s


def term(field: str) -> st.SearchStrategy[Q.Query]:
    values = st.sampled_from(WORDS + ["absent"]) if field in ("text", "title") else st.sampled_from(
        ["shop.orders", "shop.orders.f1", "wh.sales", "nope"]
    )
    return st.builds(Q.Term, st.just(field), values, boost=st.sampled_from([1.0, 0.3, 2.5]))


LEAVES = st.one_of(term("text"), term("title"), term("entities"), st.builds(Q.Term, st.just("id"), st.sampled_from(["m3", "m8", "zz"]), boost=st.just(50.0)))
QUERIES = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.builds(lambda qs, b: Q.Or(qs, boost=b), st.lists(children, min_size=2, max_size=4), st.sampled_from([1.0, 0.5])),
        st.builds(lambda qs: Q.And(qs), st.lists(children, min_size=2, max_size=3)),
        st.builds(Q.AndMaybe, children, children),
    ),
    max_leaves=8,
)


def reference(searcher, query: Q.Query) -> dict[int, float]:  # noqa: ANN001
    """Each matching docnum's score, computed document by document from Whoosh's BM25F formula,
    with its statistics taken over the live documents (Whoosh's own count deleted ones too): the
    meaning scoring.py must reproduce. (Whoosh's matchers are no oracle: an AndMaybe inside an
    And loses its optional score on some documents, and a term named twice in one query shares a
    read position and can drop the best document.)"""
    if type(query) is Q.Term:
        field = searcher.schema[query.fieldname]
        text = field.to_bytes(query.text)
        if (query.fieldname, text) not in searcher.reader():
            return {}
        matcher = searcher.postings(query.fieldname, text)
        weights = {}
        while matcher.is_active():
            weights[matcher.id()] = matcher.weight()
            matcher.next()
        if not field.scorable:
            return {d: w * query.boost for d, w in weights.items()}
        w = searcher.weighting
        live = searcher.doc_count()
        idf = math.log(live / (len(weights) + 1)) + 1  # the postings of live documents only
        reader = searcher.reader()
        total = sum(reader.doc_field_length(d, query.fieldname) or 0
                    for d in range(searcher.doc_count_all()) if not reader.is_deleted(d))
        avgfl = total / live or 1
        out = {}
        for docnum, weight in weights.items():
            length = searcher.doc_field_length(docnum, query.fieldname, 1)
            out[docnum] = bm25(idf, weight, length, avgfl, w._field_B.get(query.fieldname, w.B), w.K1) * query.boost
        return out
    parts = [reference(searcher, q) for q in query.subqueries]
    if type(query) is Q.Or:
        found = {d: sum(p[d] for p in parts if d in p) for d in set().union(*parts)}
    elif type(query) is Q.And:
        found = {d: sum(p[d] for p in parts) for d in set.intersection(*(set(p) for p in parts))}
    else:
        found = {d: parts[0][d] + parts[1].get(d, 0.0) for d in parts[0]}
    return {d: score * query.boost for d, score in found.items()}


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=QUERIES, limit=st.sampled_from([1, 3, 10, None]), masked=st.booleans())
def test_same_hits_scores_and_order_as_bm25f_document_by_document(searcher, query: Q.Query, limit: int | None, masked: bool) -> None:  # noqa: ANN001
    vector = VectorSearcher(searcher)
    assert vector.supports(query)
    docset = set(searcher.docs_for_query(Q.Term("has_query", "1"))) if masked else set()
    expected = sorted(
        ((round(score, 9), docnum) for docnum, score in reference(searcher, query).items() if docnum not in docset),
        key=lambda hit: (-hit[0], hit[1]),
    )[:limit]
    ours = [(round(score, 9), docnum) for score, docnum in vector.top(query, limit, None, vector.docs(docset or None))]
    assert ours == expected


def test_whoosh_agrees_where_its_matchers_are_right(searcher) -> None:  # noqa: ANN001
    """The queries search.py builds most (words, entity lists), against Whoosh's matchers with
    the same statistics (LiveBM25F)."""
    vector = VectorSearcher(searcher)
    queries = [
        Q.Or([Q.Term("text", w) for w in ("refund", "paid", "churn")] + [Q.Term("title", "refund", boost=1.0)]),
        Q.AndMaybe(Q.And([Q.Term("text", "order"), Q.Term("text", "vat")]), Q.Or([Q.Term("title", "order")])),
        Q.Or([Q.Term("entities", "shop.orders"), Q.Term("entities", "wh.sales", boost=0.3)]),
    ]
    for query in queries:
        every = searcher.search(query, limit=None).top_n
        whoosh = sorted(((round(s, 9), d) for s, d in every), key=lambda hit: (-hit[0], hit[1]))[:10]
        assert [(round(s, 9), d) for s, d in vector.top(query, 10, None, None)] == whoosh


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=QUERIES)
def test_deleted_documents_leave_no_trace_in_the_scores(searcher, never_written, query: Q.Query) -> None:  # noqa: ANN001
    """Whoosh counts a deleted document in its statistics until a merge; these scores do not, so
    an index built by increments ranks as one built from the live documents alone."""
    def by_id(s) -> list[tuple[str, float]]:  # noqa: ANN001
        ids = s.reader().column_reader("id")
        return sorted((ids[d], round(score, 9)) for score, d in VectorSearcher(s).top(query, None, None, None))

    assert by_id(searcher) == by_id(never_written)
    # Whoosh's own statistics tell the two apart.
    assert (searcher.doc_count_all(), never_written.doc_count_all()) == (300, 260)
    assert searcher.field_length("text") != never_written.field_length("text")


def test_other_queries_are_left_to_whoosh(searcher) -> None:  # noqa: ANN001
    vector = VectorSearcher(searcher)
    assert not vector.supports(Q.Prefix("entities", "shop"))
    assert not vector.supports(Q.Or([Q.Term("text", "a"), Q.Term("text", "b")], scale=0.5))
    assert not vector.supports(Q.Every())


def test_the_relevance_set_gives_the_same_results_from_either_scorer(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    def results() -> list[dict[str, object]]:
        example_kb.index.close_searcher()
        out = []
        for kind, text, _expected in RELEVANCE:
            for match in ("fused", "all"):
                found = example_kb.search(text, match=match) if kind == "q" else example_kb.search(entities=[text])
                out.append(found.to_json())
        return out

    monkeypatch.setattr(reading_module, "VECTOR_DOCS", 10**9)
    whoosh = results()
    monkeypatch.setattr(reading_module, "VECTOR_DOCS", 0)
    vector = results()
    assert example_kb.index._vector is not None  # the numpy scorer did answer
    assert vector == whoosh


@pytest.mark.parametrize("vector_docs", [0, 10**9], ids=["numpy", "whoosh"])
def test_the_best_catalog_match_is_not_dropped(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, vector_docs: int) -> None:
    """Whoosh's top-10 collector returned entities scoring 10.8 and below for this question and
    dropped wh.sessions.conversion_rate, which scores 29.7."""
    monkeypatch.setattr(reading_module, "VECTOR_DOCS", vector_docs)
    entities = example_kb.search("conversion rate sessions").entities
    assert [e["entity"] for e in entities[:2]] == ["wh.sessions.conversion_rate", "wh.sessions.bounce_rate"]
    assert entities[0]["score"] == 28.7453


def test_a_compound_of_one_part_drops_its_boost_as_whoosh_does(searcher) -> None:  # noqa: ANN001
    vector = VectorSearcher(searcher)
    for query in (Q.Or([Q.Term("text", "refund")], boost=2.0), Q.And([Q.Term("title", "paid")], boost=3.0)):
        every = searcher.search(query, limit=None).top_n
        whoosh = sorted(((round(s, 9), d) for s, d in every), key=lambda hit: (-hit[0], hit[1]))[:5]
        assert [(round(s, 9), d) for s, d in vector.top(query, 5, None, None)] == whoosh
