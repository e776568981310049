"""Search: SLayer's and Engram's inputs, ranking, and a relevance set over the example KB."""

from __future__ import annotations

import json

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import InvalidInputError, NotFoundError
from slayer_kb.core.results import SearchResult
from slayer_kb.mcp.tools import call_tool
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
    # All four link shop.orders.amount; memory 1, about it alone, first (4 is about payments).
    assert [m["id"] for m in found.memories] == ["1", "4", "kb.currency-conversion", "kb.refund-policy"]
    assert found.warnings == []
    assert found.notes[0] == "'orders.amount' names shop.orders.amount; memories linked to it are found too."
    # Read whatever its case; the meaning channel reads the capitals, and 1 and 4 are close.
    capitals = kb.search("Orders.Amount")
    assert sorted(m["id"] for m in capitals.memories) == ["1", "4", "kb.currency-conversion", "kb.refund-policy"]
    assert capitals.notes[0] == "'Orders.Amount' names shop.orders.amount; memories linked to it are found too."
    # Every word still counts: with another word, the two memories holding both (one of them
    # through the full name) rank first.
    assert set([m["id"] for m in kb.search("orders.amount refunds").memories][:2]) == {"1", "kb.refund-policy"}


def _summary(result: SearchResult) -> tuple[list[tuple[str, list[str]]], list[str], list[str], list[str]]:
    """What a search answered: (memory id, matched entities) pairs, example query ids, catalog entities, notes."""
    return ([(m["id"], m["matched_entities"]) for m in result.memories], [q["id"] for q in result.example_queries],
            [e["entity"] for e in result.entities], result.notes)


def test_a_name_the_catalog_completes_finds_the_memories_linked_to_it(example_kb_read_only: KnowledgeBase) -> None:
    """No memory writes customers.email, and the question has no other word: the entity's tags
    find the two memories linked to it, and the entity heads the catalog bucket."""
    kb = example_kb_read_only
    assert not any("customers.email" in kb.get(m).learning for m in ("6", "kb.soft-deletes"))
    linked = ([("6", ["shop.customers.email"]), ("kb.soft-deletes", ["shop.customers.email"])], [],
              ["shop.customers.email"],
              ["'customers.email' names shop.customers.email; memories linked to it are found too.",
               "No memory has all the words of the question; showing memories with some of them or close in meaning."])
    found = kb.search("customers.email")
    assert _summary(found) == linked
    assert (found.warnings, found.resolved_input_entities) == ([], [])
    # The full name, a walk of joins to it: the same memories, the same catalog entity.
    full = _summary(kb.search("shop.customers.email"))
    assert (sorted(full[0]), full[1:3]) == (sorted(linked[0]), linked[1:3])
    assert full[3][0] == "'shop.customers.email' names shop.customers.email; memories linked to it are found too."
    walked = _summary(kb.search("orders.customers.email"))
    assert (sorted(walked[0]), walked[1:3]) == (sorted(linked[0]), linked[1:3])
    assert walked[3][0] == "'orders.customers.email' names shop.customers.email; memories linked to it are found too."


def test_a_name_with_words_ranks_the_memories_about_it_first(example_kb_read_only: KnowledgeBase) -> None:
    found = example_kb_read_only.search("customers.email dashboards")
    memories, queries, catalog, notes = _summary(found)
    # The two linked memories first; then memories holding one of the words, matching no entity.
    assert memories[:2] == [("6", ["shop.customers.email"]), ("kb.soft-deletes", ["shop.customers.email"])]
    assert all(matched == [] for _id, matched in memories[2:]) and len(memories) > 2
    assert catalog[0] == "shop.customers.email"
    assert notes[0] == "'customers.email' names shop.customers.email; memories linked to it are found too."


def test_an_ambiguous_name_finds_every_entity_it_may_mean(example_kb: KnowledgeBase) -> None:
    # Without the priority list, orders is a model in shop and in wh: orders.status names two columns.
    (example_kb.root / "priority.yaml").unlink()
    found = example_kb.search("orders.status", limit=3)
    memories, _queries, catalog, notes = _summary(found)
    assert memories == [("7", ["shop.orders.status"]), ("23", ["wh.orders.status"]),
                        ("kb.refund-policy", ["shop.orders.status"])]
    assert sorted(catalog) == ["shop.orders.status", "wh.orders.status"]
    assert notes[0] == ("'orders.status' names shop.orders.status or wh.orders.status; memories linked to them "
                        "are found too.")
    # No entity input was given: nothing dropped, nothing to warn about but the stale example queries.
    assert found.resolved_input_entities == []
    assert not [w for w in found.warnings if not w.startswith("example_query memory:")]


def test_a_name_the_catalog_does_not_know_is_searched_by_its_words(example_kb_read_only: KnowledgeBase,
                                                                   invoke_cli: CliRunner) -> None:
    kb = example_kb_read_only
    # customer.email (singular) is no entity: memories writing customer and e-mail, no entity
    # matched, no note on names; the catalog bucket by the words.
    memories, _queries, catalog, notes = _summary(kb.search("customer.email"))
    assert {"6", "kb.soft-deletes", "kb.active-customer"} <= {m for m, _matched in memories}
    assert all(matched == [] for _m, matched in memories)
    assert catalog[0] == "shop.customers.email"
    assert not [n for n in notes if "names" in n]
    # Its words found nothing: no matches, and nothing dropped or warned about.
    proc = invoke_cli("--kb", kb.root, "search", "zzz.qqq")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "No matches.\n", "")
    # With a word that matches, the answer is that word's.
    assert [m for m, _matched in _summary(kb.search("nothing.zzz refunds"))[0]][:2] == ["kb.refund-policy", "11"]


def test_a_name_in_the_question_on_the_command_line_and_in_json(example_kb_read_only: KnowledgeBase,
                                                                 invoke_cli: CliRunner) -> None:
    root = example_kb_read_only.root
    # The hits wrap at the terminal's width: a fixed one, whatever runs the tests.
    proc = invoke_cli("--kb", root, "search", "customers.email", env={"COLUMNS": "100"})
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == (
        "Memories:\n"
        "  [6] Test orders: QA places real orders in production with customers whose e-mail ...\n"
        "      entities: shop.orders.is_test, shop.customers.email, shop.orders.aov, shop.orders.order_count\n"
        "  [kb.soft-deletes] Soft deletes, two different mechanisms:\n"
        "      entities: shop.orders.deleted_at, shop.customers.is_deleted, shop.customers.email, wh.orders,\n"
        "                wh.customers_dim\n"
        "Catalog:\n"
        "  shop.customers.email (column): Lower-cased login e-mail; PII, never show in shared dashboards; NULL after "
        "GDPR erasure\n"
    )
    data = json_of(invoke_cli("--kb", root, "search", "customers.email", "--json"))
    assert [(m["id"], m["matched_entities"]) for m in data["memories"]] == [
        ("6", ["shop.customers.email"]), ("kb.soft-deletes", ["shop.customers.email"])]
    assert [e["entity"] for e in data["entities"]] == ["shop.customers.email"]
    assert (data["example_queries"], data["resolved_input_entities"], data["warnings"]) == ([], [], [])
    assert data["notes"] == [
        "'customers.email' names shop.customers.email; memories linked to it are found too.",
        "No memory has all the words of the question; showing memories with some of them or close in meaning."]


def test_the_mcp_tools_read_a_name_in_the_question_as_search_does(example_kb_read_only: KnowledgeBase) -> None:
    kb = example_kb_read_only
    answer = json.loads(call_tool(kb, "search", {"question": "customers.email"}).text)
    expected = kb.search("customers.email").to_json()
    assert answer == expected and [m["id"] for m in answer["memories"]] == ["6", "kb.soft-deletes"]
    listing = call_tool(kb, "mem_search", {"query": "customers.email"}).text
    assert listing.startswith("Found 2 memories:\n\n[1] #6 (none) \u2014 Test orders: ")
    assert "\n[2] #kb.soft-deletes (none) \u2014 Soft deletes, two different mechanisms:\n" in listing


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


def test_a_bare_column_name_finds_the_memories_linked_to_it(example_kb_read_only: KnowledgeBase,
                                                           invoke_cli: CliRunner) -> None:
    """``spend_eur`` is a column of one model, and neither memory linked to it writes it: the
    tags find them, the column heads the catalog bucket, and a note says how the word was read."""
    kb = example_kb_read_only
    assert not any("spend_eur" in kb.get(m).learning for m in ("15", "16"))
    note = "'spend_eur' names wh.marketing_spend.spend_eur; memories linked to it are found too."
    found = kb.search("spend_eur")
    memories, queries, catalog, notes = _summary(found)
    assert (memories, queries, catalog[0], notes[0]) == (
        [("16", ["wh.marketing_spend.spend_eur"])], ["15"], "wh.marketing_spend.spend_eur", note)
    assert (found.example_queries[0]["matched_entities"], found.warnings) == (["wh.marketing_spend.spend_eur"], [])
    data = json_of(invoke_cli("--kb", kb.root, "search", "spend_eur", "--json"))
    assert [(m["id"], m["matched_entities"]) for m in data["memories"] + data["example_queries"]] == [
        ("16", ["wh.marketing_spend.spend_eur"]), ("15", ["wh.marketing_spend.spend_eur"])]
    assert (data["entities"][0]["entity"], data["notes"][0], data["warnings"]) == (catalog[0], note, [])
    proc = invoke_cli("--kb", kb.root, "search", "spend_eur", "--limit", "1", env={"COLUMNS": "100"})
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == (
        "Memories:\n"
        "  [16] Affiliate commissions are booked once a month, on the 1st, for the whole ...\n"
        "      entities: wh.marketing_spend.spend_eur, wh.marketing_spend.spend_date,\n"
        "                wh.marketing_spend.channel, memory:15\n"
        "Example queries:\n"
        "  [15] Monthly marketing cost per channel with cost per click and click-through ...\n"
        "      entities: wh.marketing_spend, wh.marketing_spend.channel, wh.marketing_spend.spend_date,\n"
        "                wh.marketing_spend.spend_eur, wh.marketing_spend.cpc, wh.marketing_spend.ctr\n"
        "Catalog:\n"
        "  wh.marketing_spend.spend_eur (column): Cost in EUR excl. VAT; affiliate commissions booked monthly on "
        "the 1st\n"
    )
    assert json.loads(call_tool(kb, "search", {"question": "spend_eur"}).text) == found.to_json()
    listing = call_tool(kb, "mem_search", {"query": "spend_eur", "limit": 2}).text
    assert listing.startswith("Found 2 memories:\n\n[1] #16 (none) \u2014 Affiliate commissions are booked ")
    assert "\n[2] #15 (none) \u2014 Monthly marketing cost per channel" in listing


def test_an_ambiguous_bare_name_finds_every_entity_it_may_mean(example_kb_read_only: KnowledgeBase) -> None:
    # net_revenue_eur is a column of wh.daily_revenue and of wh.orders: both are read.
    memories, _queries, catalog, notes = _summary(example_kb_read_only.search("net_revenue_eur", limit=3))
    assert memories == [("9", ["wh.orders.net_revenue_eur"]), ("11", []), ("1", ["wh.orders.net_revenue_eur"])]
    assert sorted(catalog[:2]) == ["wh.daily_revenue.net_revenue_eur", "wh.orders.net_revenue_eur"]
    assert notes[0] == ("'net_revenue_eur' names wh.daily_revenue.net_revenue_eur or wh.orders.net_revenue_eur; "
                        "memories linked to them are found too.")
    # A column of five models says too little: it is searched as a word, and a note says how to name one.
    created = example_kb_read_only.search("created_at")
    assert not any(m["matched_entities"] for m in created.memories)
    assert created.notes[0] == (
        "'created_at' may be any of 5 entities (shop.customers.created_at, shop.order_items.created_at, "
        "shop.orders.created_at and 2 more); searched as a word only. Write <model>.created_at to find the "
        "memories linked to one.")


def test_a_table_name_is_read_alone_or_quoted_never_as_a_word_of_english(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    # Alone, "orders" is the table: the priority list makes it shop.orders, as -e does.
    alone = kb.search("orders", limit=3)
    assert alone.notes[0] == "'orders' names shop.orders; memories linked to it are found too."
    assert [e["entity"] for e in alone.entities][0] == "shop.orders"
    # Inside an English question it is a word: no entity read, nothing matched, no note on names.
    english = kb.search("why are orders late", limit=5)
    assert [(m["id"], m["matched_entities"]) for m in english.memories] == [
        ("2", []), ("6", []), ("23", []), ("9", []), ("kb.guest-checkout", [])]
    assert not [n for n in english.notes if "names" in n]
    # In backquotes it is the table again; without the priority list, both datasources' tables.
    (kb.root / "priority.yaml").unlink()
    quoted = kb.search("why are `orders` late", limit=3)
    assert quoted.notes[0] == "'orders' names shop.orders or wh.orders; memories linked to them are found too."
    assert [(m["id"], m["matched_entities"]) for m in quoted.memories] == [
        ("9", ["shop.orders", "wh.orders", "wh.orders.gross_revenue_eur", "wh.orders.net_revenue_eur"]),
        ("21", ["shop.orders", "wh.orders"]),
        ("2", ["shop.orders.created_at", "wh.orders.order_date", "wh.orders.ordered_at_utc"])]


def test_a_bare_name_that_names_nothing_is_only_a_word(example_kb_read_only: KnowledgeBase,
                                                      invoke_cli: CliRunner) -> None:
    kb = example_kb_read_only
    found = kb.search("is_refunded refunds", limit=3)
    assert [(m["id"], m["matched_entities"]) for m in found.memories] == [
        ("kb.refund-policy", []), ("11", []), ("1", [])]
    assert not [n for n in found.notes if "names" in n] and found.warnings == []
    proc = invoke_cli("--kb", kb.root, "search", "zzz_qqq")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "No matches.\n", "")


def test_a_bare_name_also_finds_a_memory_that_writes_its_full_name(example_kb: KnowledgeBase) -> None:
    """Word analysis makes is_deleted the word is_delet and the full name shop.customers.is_delet:
    the full name counts as the bare one, as it does for a dotted name."""
    saved = example_kb.save_memory("Erased accounts: filter on shop.customers.is_deleted before counting.", ["shop.regions"])
    found = example_kb.search("is_deleted", match="all")
    assert saved.memory_id in [m["id"] for m in found.memories]
    assert found.notes[0] == ("'is_deleted' names shop.customers.is_deleted; memories linked to it that hold every "
                              "word rank higher.")


def test_a_method_call_names_the_entity_it_aggregates(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """SLayer's resolve_entity reads customers.max(segment) as max(customers.segment), and
    customers.count(*) as count(customers.*): slayer-kb refused both as no single aggregated
    column reference."""
    proc = invoke_cli("--kb", example_kb_read_only.root, "search", "segment", "-e", "customers.max(segment)",
                      "-e", "customers.count(*)", "--json")
    assert (proc.returncode, json_of(proc)["resolved_input_entities"]) == (0, ["shop.customers.segment", "shop.customers"])
