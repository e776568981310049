"""Filter docsets, the id column and the ids' document numbers kept by segment across searchers (search/leaves.py): after
every kind of change a warm process's are exactly what Whoosh makes anew over the whole index,
only the changed segments' parts are made again, and the first search after a save answers as a
fresh process does."""

from __future__ import annotations

from typing import Any

import pytest
from whoosh import query as Q
from whoosh.idsets import BitSet

from slayer_kb import KnowledgeBase
from slayer_kb.search import leaves
from slayer_kb.search.filters import restrict

# The restrictions a search makes: every one has "exclude", some an "only".
RESTRICTIONS = [restrict(), restrict(type="gotcha"), restrict(has_query=True), restrict(has_query=False),
                restrict(datasource="shop"), restrict(datasource="wh", type="decision")]


def _whoosh_docsets(kb: KnowledgeBase) -> list[list[int]]:
    searcher = kb.index.searcher()
    queries = [q for r in RESTRICTIONS for q in (r.only, r.exclude) if q is not None]
    return [list(BitSet(searcher.docs_for_query(q), size=searcher.doc_count_all())) for q in queries]


def _kept_docsets(kb: KnowledgeBase) -> list[list[int]]:
    searcher = kb.index.searcher()
    return [list(kb.index._docset(searcher, q)) for r in RESTRICTIONS for q in (r.only, r.exclude) if q is not None]


def _ids(kb: KnowledgeBase) -> list[str]:
    kb.index._ids = None  # made again from the kept segments' column readers
    kb.index.scores(Q.Every(), restrict(), limit=1)
    searcher = kb.index.searcher()
    want = list(searcher.reader().column_reader("id"))
    assert list(kb.index._ids) == want
    return want


def _check(kb: KnowledgeBase) -> None:
    kb.ensure_fresh()
    with kb.index.one_searcher():
        assert _kept_docsets(kb) == _whoosh_docsets(kb)
        ids = _ids(kb)
        # A warm process's ids mapped by segment: each the document Whoosh's look-up finds (a
        # forgotten memory's none), and no number for an id the index lacks.
        searcher = kb.index.searcher()
        for memory_id in [*ids, "absent", "catalog:absent"]:
            assert kb.index._leaves.docnum(searcher, memory_id) == searcher.document_number(id=memory_id)
        readers = {id(reader) for reader, _offset in kb.index.searcher().reader().leaf_readers()}
    assert {key[0] for key in kb.index._leaves._kept} <= readers  # nothing kept of a reader gone


def _parts(kb: KnowledgeBase) -> dict[tuple[int, str], Any]:
    return {key: found[1] for key, found in kb.index._leaves._kept.items()}


def test_kept_docsets_and_ids_match_whoosh_across_every_change(example_kb: KnowledgeBase) -> None:
    example_kb.ensure_fresh()
    kb = KnowledgeBase(example_kb.root)
    kb.keep_warm()
    kb.warm_up()
    _check(kb)
    before = _parts(kb)

    kb.save_memory("The zeppelin orders table is refreshed hourly in UTC.", ["orders.amount"])
    _check(kb)
    after = _parts(kb)
    # The segments the save did not change keep their parts (the same objects); only the new
    # segment's were made.
    kept = [key for key in before if key in after]
    assert kept and all(after[key] is before[key] for key in kept)
    assert len(after) > len(kept)

    kb.forget("1")  # a deletion in an older segment: its parts are made again
    _check(kb)
    with kb.index.one_searcher():
        shop = [kb.index._ids[d] for d in kb.index._docset(kb.index.searcher(), restrict(datasource="shop").only)]
        assert "2" in shop and "1" not in shop

    assert kb.compact_index(everything=True)[1] == 1
    _check(kb)
    kb.reindex()
    _check(kb)


@pytest.mark.parametrize("filters", [{}, {"type": "gotcha"}, {"datasource": "shop"}, {"type": "decision"}])
def test_the_first_search_after_a_save_answers_as_a_fresh_process(example_kb: KnowledgeBase, filters: dict[str, Any]) -> None:
    example_kb.ensure_fresh()
    kb = KnowledgeBase(example_kb.root)
    kb.keep_warm()
    kb.warm_up()
    question = "orders amount refunds"
    assert kb.search(question, **filters).to_json() == KnowledgeBase(kb.root).search(question, **filters).to_json()
    saved = kb.save_memory("Refunds on orders are netted against the amount the same day.", ["orders.amount"],
                           type="gotcha").memory_id
    warm = kb.search(question, **filters).to_json()
    assert warm == KnowledgeBase(kb.root).search(question, **filters).to_json()
    assert (saved in [hit["id"] for hit in warm["memories"]]) == (filters.get("type") != "decision")


def test_the_parts_kept_are_bounded_and_the_docsets_stay_right(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server asked for many filters keeps at most KEPT parts; one dropped is made again."""
    monkeypatch.setattr(leaves, "KEPT", 3)
    example_kb.ensure_fresh()
    kb = KnowledgeBase(example_kb.root)
    kb.keep_warm()
    kb.save_memory("The zeppelin orders table is refreshed hourly in UTC.", ["orders.amount"])
    for _ in range(2):
        kb.index._docsets = {}  # made again from the parts, as after a reopen
        _check(kb)
        assert len(kb.index._leaves._kept) == 3
    assert len(kb.index.searcher().reader().leaf_readers()) > 1
