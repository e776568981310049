"""``search --all`` and ``mem_search match_mode=strict`` promise only memories holding every word
of the question. A memory tagged with a name the question holds was admitted without the other
words (``search 'is_returned zzzqqq' --all`` printed memory 3): a tag now ranks, it admits none."""

from __future__ import annotations

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.tools import call_tool
from testing import CliRunner, json_of

LINKED = "'is_returned' names shop.orders.is_returned; memories linked to it that hold every word rank higher."
FELL_BACK = "No memory has all the words of the question; showing memories with some of them or close in meaning."


def found(data: dict) -> list[str]:
    return [hit["id"] for hit in data["memories"] + data["example_queries"]]


def test_all_shows_only_memories_holding_every_word(example_kb_read_only: KnowledgeBase,
                                                     invoke_cli: CliRunner) -> None:
    root = example_kb_read_only.root

    def search(*args: str) -> dict:
        return json_of(invoke_cli("--kb", root, "--json", "search", *args, check=True))

    for question, entities in (("is_returned zzzqqq", []), ("`shop.orders.is_returned` zzzqqq", []),
                               ("zzzqqq", ["-e", "shop.orders.is_returned"])):
        data = search(question, *entities, "--all")
        assert found(data) == [], question
        assert FELL_BACK not in data["notes"], question
    # Every word held: the tagged memory is found; entities alone: the tagged ones.
    assert found(search("is_returned coalesce", "--all")) == ["3"]
    assert search("is_returned coalesce", "--all")["notes"] == [LINKED]
    assert found(search("-e", "shop.orders.is_returned", "--all")) == ["3"]
    # A memory named by id is a look-up, not a word: it comes first, as the note says.
    named = search("memory:3 zzzqqq", "--all")
    assert (found(named), named["notes"]) == (
        ["3"], ["'memory:3' names memory 3: it comes first, and memories linked to it that hold every word rank "
                "higher."])


def test_strict_mem_search_shows_only_memories_holding_every_word(example_kb_read_only: KnowledgeBase) -> None:
    reply = call_tool(example_kb_read_only, "mem_search", {"query": "is_returned zzzqqq", "match_mode": "strict"})
    assert (reply.text, reply.data["results"], reply.data["notes"]) == (
        'No memories found for: "is_returned zzzqqq"', [], [LINKED])


def test_no_fell_back_note_when_the_topic_key_matched(example_kb_read_only: KnowledgeBase) -> None:
    """``mem_search('decision/paid-revenue')`` lists the topic key's memory first; the note that
    no memory has every word of the question told of a search that did not fall back."""
    for mode in ("all", "any", "strict"):
        reply = call_tool(example_kb_read_only, "mem_search", {"query": "decision/paid-revenue", "match_mode": mode})
        assert reply.text.startswith("Found "), mode
        assert reply.data["results"][0]["id"] == "kb.paid-revenue", mode
        assert reply.data["notes"] == [], mode


def test_a_known_type_only_soft_deleted_memories_have_is_no_misspelt_name(indexed_example_kb: KnowledgeBase,
                                                                           invoke_cli: CliRunner) -> None:
    """After the only decision was soft-deleted, ``search --type decision`` said "No memory has
    type 'decision'; check the name": the name is right, no live memory has it."""
    root = indexed_example_kb.root
    invoke_cli("--kb", root, "forget", "kb.paid-revenue", "--soft", check=True)
    for args, then, action in ((["search"], "", "search"), (["list"], "", "list"),
                               (["search", "revenue"], ", so the filter removed every memory the question finds", "search")):
        got = invoke_cli("--kb", root, *args, "--type", "decision", check=True)
        assert got.stdout.endswith(f"\nwarning: No live memory has type 'decision'{then}; {action} without it.\n"), args
    bogus = invoke_cli("--kb", root, "search", "--type", "bogus", check=True)
    assert bogus.stdout == "No matches.\nwarning: No memory has type 'bogus'; check the name, or search without it.\n"
