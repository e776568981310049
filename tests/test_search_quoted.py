"""A warning or error quotes at most 100 characters of a value (docs/mcp.md): a question of no
searchable words and a 60 KB filter of a ``--query`` were repeated whole (60 KB on the CLI,
130 KB from mem_search)."""

from __future__ import annotations

import json
from pathlib import Path

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.tools import call_tool, tool
from slayer_kb.ops.finding import MAX_QUESTION
from testing import CliRunner, json_of

QUESTION = "?" * 60_000
NO_WORDS = (f"The question {'?' * 100!r}... (60000 characters) has no searchable words (punctuation and words as "
            "common as 'the' are not searched): ask with the words that matter, such as a column, a metric or what "
            "it is about.")
FILTER = "status = 1 and " * 4000 + "zzz > 1"
FILTER_REFUSED = (f"filters[0] {FILTER[:100]!r}... ({len(FILTER)} characters): Entity 'zzz' not found in any "
                  "datasource (checked all known datasources).")


def test_a_question_of_no_words_is_quoted_cut(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    data = json_of(invoke_cli("--kb", example_kb_read_only.root, "--json", "search", QUESTION, check=True))
    assert data["warnings"] == [NO_WORDS]
    reply = call_tool(example_kb_read_only, "mem_search", {"query": QUESTION})
    assert reply.text == f'No memories found for: "{"?" * 100}"... (60000 characters)\nwarning: {NO_WORDS}'
    assert reply.data["warnings"] == [NO_WORDS]


def test_a_long_filter_is_quoted_cut(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner,
                                     tmp_path: Path) -> None:
    root = example_kb_read_only.root
    query = tmp_path / "q.json"
    query.write_text(json.dumps({"source_model": "orders", "filters": [FILTER]}))
    saved = invoke_cli("--kb", root, "save", "A memory whose query has one long filter", "--query", f"@{query}")
    assert (saved.returncode, saved.stderr) == (1, f"Error: {FILTER_REFUSED}\n")
    found = json_of(invoke_cli("--kb", root, "--json", "search", "--query", f"@{query}", check=True))
    assert found["warnings"] == [f"query dropped: {FILTER_REFUSED}",
                                 "Every input entity was dropped: nothing left to search for."]


def test_the_question_limit_is_told_as_the_code_has_it() -> None:
    """docs/search.md said 262,144 bytes where the code refuses over 65,536, and the MCP tools'
    descriptions did not say there is a limit."""
    shown = f"{MAX_QUESTION:,} bytes"
    assert shown in tool("mem_search").properties["query"]["description"]  # type: ignore[union-attr]
    assert shown in tool("search").properties["question"]["description"]  # type: ignore[union-attr]
    doc = (Path(__file__).parents[1] / "docs" / "search.md").read_text(encoding="utf-8")
    assert f"- A question is at most {shown}" in doc and "262,144" not in doc
