"""Search: SLayer's and Engram's inputs, ranking, and a relevance set over the example KB."""

from __future__ import annotations

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import InvalidInputError, NotFoundError
from testing import RELEVANCE, CliRunner, json_of


@pytest.mark.parametrize(("kind", "text", "expected"), RELEVANCE, ids=[r[1] for r in RELEVANCE])
def test_relevance(example_kb_read_only: KnowledgeBase, kind: str, text: str, expected: str) -> None:
    kb = example_kb_read_only
    result = kb.search(text) if kind == "q" else kb.search(entities=[text])
    hits = sorted(result.memories + result.example_queries, key=lambda h: -h["score"])
    assert hits and hits[0]["id"] == expected, [h["id"] for h in hits[:3]]


def test_query_memories_come_back_as_example_queries(example_kb_read_only: KnowledgeBase) -> None:
    result = example_kb_read_only.search(entities=["shop.orders.status"], limit=20)
    assert "kb.paid-revenue" in [h["id"] for h in result.example_queries]
    assert all("query" in h for h in result.example_queries)
    assert all("query" not in h for h in result.memories)
    assert "kb.paid-revenue" not in [h["id"] for h in result.memories]


def test_bad_references_are_warnings(example_kb_read_only: KnowledgeBase) -> None:
    result = example_kb_read_only.search(entities=["nope.nothing", "orders.amount"])
    assert result.resolved_input_entities == ["shop.orders.amount"]
    assert result.warnings[0].startswith("entity 'nope.nothing' dropped: ")
    assert result.memories


def test_search_with_a_query_input(example_kb_read_only: KnowledgeBase) -> None:
    result = example_kb_read_only.search(query={"source_model": "orders", "measures": ["sum(amount)"]})
    assert result.resolved_input_entities == ["shop.orders", "shop.orders.amount"]
    assert result.memories[0]["matched_entities"]


def test_a_dotted_name_in_the_question_finds_the_memories_that_write_it_in_full(
        example_kb_read_only: KnowledgeBase) -> None:
    kb = example_kb_read_only
    # Memory 1 writes shop.orders.amount; memories 4 and kb.currency-conversion write orders.amount.
    assert "shop.orders.amount is the order total" in kb.get("1").learning
    found = kb.search("orders.amount")
    assert [m["id"] for m in found.memories] == ["4", "1", "kb.currency-conversion"]
    assert (found.warnings, found.notes) == ([], [])
    assert [m["id"] for m in kb.search("Orders.Amount").memories] == ["4", "1", "kb.currency-conversion"]
    # The full name is searched as typed; a dotted name the catalog does not know is too.
    assert [m["id"] for m in kb.search("shop.orders.amount").memories] == ["1"]
    assert kb.search("nothing.here").memories == []
    # Every word still counts: with another word, the two memories holding both (one of them
    # through the full name) rank first.
    assert set([m["id"] for m in kb.search("orders.amount refunds").memories][:2]) == {"1", "kb.refund-policy"}


def test_unknown_datasource_is_an_error(example_kb_read_only: KnowledgeBase) -> None:
    with pytest.raises(NotFoundError, match=r"^Unknown datasource 'nope'. Known datasources: shop, wh.$"):
        example_kb_read_only.search("revenue", datasource="nope")


def test_datasource_filter(example_kb_read_only: KnowledgeBase) -> None:
    hits = example_kb_read_only.search("revenue", datasource="wh", limit=50)
    for hit in hits.memories + hits.example_queries:
        assert any(e.startswith("wh.") or e == "wh" for e in hit["entities"])


def test_no_input_gives_newest_with_warning(example_kb_read_only: KnowledgeBase) -> None:
    result = example_kb_read_only.search(limit=3)
    assert result.warnings == ["No entities, query or question given: showing the newest memories."]
    stamps = [h["created_at"] for h in result.memories]
    assert stamps == sorted(stamps, reverse=True) and len(stamps) == 3


def test_max_results_and_compact(example_kb_read_only: KnowledgeBase) -> None:
    assert len(example_kb_read_only.search("orders", limit=2).memories) == 2
    with pytest.raises(InvalidInputError, match="at least 1"):
        example_kb_read_only.search("orders", limit=0)
    compact = example_kb_read_only.search("fiscal year").memories[0]
    assert "learning" not in compact and len(compact["description"]) <= 500
    full = example_kb_read_only.search("fiscal year", full=True).memories[0]
    assert full["learning"].startswith("The company's fiscal year runs from 1 February")


def test_stale_tags_are_ignored(example_kb: KnowledgeBase) -> None:
    (example_kb.root / "models/shop/refunds.yaml").unlink()
    result = example_kb.search(entities=["shop.orders"], limit=50)
    for hit in result.memories + result.example_queries:
        assert not any(e.startswith("shop.refunds") for e in hit["entities"])


def test_stale_example_query_is_warned(example_kb: KnowledgeBase) -> None:
    fresh = example_kb.search("paid revenue")
    assert not any("stale" in w for w in fresh.warnings)
    (example_kb.root / "models/shop/orders.yaml").write_text(
        (example_kb.root / "models/shop/orders.yaml").read_text().replace("name: status", "name: state")
    )
    result = example_kb.search("paid revenue")
    assert any(
        w.startswith("example_query memory:kb.paid-revenue: attached query has stale references (")
        and w.endswith("); re-save to clean.")
        for w in result.warnings
    )


@pytest.mark.parametrize("words", ['"unbalanced', "AND OR NOT", "a* ?b [c TO d] {x}", "field:value ~2 ^3", "(((", "\\", "-"])
def test_query_syntax_is_never_an_error(example_kb_read_only: KnowledgeBase, words: str) -> None:
    example_kb_read_only.search(words)
    example_kb_read_only.search(words)


def test_catalog_hits(example_kb_read_only: KnowledgeBase) -> None:
    result = example_kb_read_only.search("refund reason")
    assert "shop.refunds.reason" in [e["entity"] for e in result.entities]
    assert result.entities[0].keys() == {"entity", "kind", "description", "score"}


def test_cli_search_json_keys(example_kb_read_only: KnowledgeBase, invoke_cli) -> None:  # noqa: ANN001
    proc = invoke_cli("--kb", example_kb_read_only.root, "search", "refunds", "-e", "orders.amount", "--json")
    data = json_of(proc)
    assert set(data) == {"memories", "example_queries", "entities", "resolved_input_entities", "warnings", "notes"}
    hit = (data["memories"] + data["example_queries"])[0]
    assert {"id", "score", "title", "type", "description", "entities", "matched_entities", "project", "scope", "created_at"} <= set(hit)


def test_a_listing_a_misspelt_filter_emptied_says_so(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    # No question: the newest memories, unless a filter no memory matches removed them all.
    root = example_kb_read_only.root
    listed = invoke_cli("--kb", root, "search", "--project", "nosuch", "--type", "decision")
    assert (listed.returncode, listed.stderr) == (0, "")
    assert listed.stdout == "No matches.\nwarning: No memory has project 'nosuch'; check the name, or search without it.\n"
    # A filter some memories match lists them, with the usual warning.
    typed = invoke_cli("--kb", root, "search", "--type", "decision")
    assert typed.stdout.startswith("Memories:\n  [kb.paid-revenue]")
    assert typed.stdout.endswith("\nwarning: No entities, query or question given: showing the newest memories.\n")


def test_all_and_any_together_are_a_usage_error(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """The two match modes contradict each other: one was silently taken (--all) before."""
    for order in (("--all", "--any"), ("--any", "--all")):
        proc = invoke_cli("--kb", example_kb_read_only.root, "search", "refunds", *order)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.endswith("\nError: --all and --any cannot be used together; give one (--any is the default).\n")
        as_json = invoke_cli("--kb", example_kb_read_only.root, "--json", "search", "refunds", *order)
        assert as_json.returncode == 2
        assert json_of(as_json)["error"]["type"] == "usage"
    assert invoke_cli("--kb", example_kb_read_only.root, "search", "refunds", "--any").returncode == 0
