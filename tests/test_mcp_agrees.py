"""What an agent sends through MCP and what a person types on the CLI are taken or refused alike:
each input through the MCP server ``slayer-kb mcp`` runs, here in this process over the SDK's
memory streams (the stdio process is test_mcp.py's), and the CLI run in this process
(``invoke_cli``, which prints what a process prints: test_in_process.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from slayer_kb import KnowledgeBase
from testing import CliRunner, json_of

pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402
from mcp.types import TextContent  # noqa: E402

from testing.mcp import with_server_in_process  # noqa: E402

BLANK = "learning is empty: write what was learned (it is required and must not be blank)."
# (CLI arguments, MCP tool and arguments, the error both give, or the CLI's and MCP's when each
# names the field as its own arguments do; None: both save)
CASES: list[tuple[list[str], str, dict[str, Any], str | tuple[str, str] | None]] = [
    (["save", "\u200b", "-e", "orders.amount"], "save_memory",
     {"learning": "\u200b", "linked_entities": ["orders.amount"]}, BLANK),
    (["save", "\u200d\ufeff \u2060", "-e", "orders.amount"], "save_memory",
     {"learning": "\u200d\ufeff \u2060", "linked_entities": ["orders.amount"]}, BLANK),
    (["save", "body", "--title", "\u200b"], "mem_save", {"title": "\u200b", "content": "body"},
     "title is required and must not be blank."),
    (["save", "\u200b", "--title", "t"], "mem_save", {"title": "t", "content": "\u200b"},
     (BLANK, BLANK.replace("learning", "content", 1))),
    (["save-prompt", "\u2060", "--session", "s1"], "mem_save_prompt", {"content": "\u2060", "session_id": "s1"},
     "content is required and must not be blank."),
    # A formula SLayer cannot parse: refused, in SLayer's words, not saved with its column tagged.
    (["save", "Revenue", "--query", '{"source_model": "orders", "measures": ["sum(amount"]}'], "save_memory",
     {"learning": "Revenue", "linked_entities": {"source_model": "orders", "measures": ["sum(amount"]}},
     "measures[0].formula: Invalid Mode-B expression 'sum(amount': '(' was never closed (<unknown>, line 1)"),
    # Formulas deeper than Python's parser reads: the formula quoted cut to 100 characters (it
    # came back whole, 36,000 characters), and the way out named.
    *[(["save", "Revenue", "--query", json.dumps(query)], "save_memory", {"learning": "Revenue", "linked_entities": query},
       f"measures[0].formula: Invalid Mode-B expression {formula[:100]!r}... ({len(formula)} characters): {why}; the "
       "expression nests deeper than SLayer's parser (Python's) reads: write it with fewer terms or parentheses, "
       "or split it into several measures")
      for formula, why in [("sum(amount)+" * 3000 + "1", "maximum recursion depth exceeded during ast construction"),
                           ("sum(" + "(" * 10_000 + "amount" + ")" * 10_001, "too many nested parentheses (<unknown>, line 1)")]
      for query in [{"source_model": "orders", "measures": [formula]}]],
    (["save", "Tips for every project", "--title", "Shell tip", "--scope", "PERSONAL"], "mem_save",
     {"title": "Shell tip", "content": "Tips for every project", "scope": "PERSONAL"}, None),
]


REFUSED = [case for case in CASES if case[3] is not None]
(TAKEN,) = [case for case in CASES if case[3] is None]


async def reply_of(session: ClientSession, tool: str, arguments: dict[str, Any]) -> tuple[bool, str, Any]:
    result = await session.call_tool(tool, arguments)
    reply = result.content[0]
    assert isinstance(reply, TextContent)
    return result.is_error, reply.text, result.structured_content


@pytest.fixture(scope="module")
def mcp_refusals(example_kb_read_only: KnowledgeBase) -> list[tuple[bool, str]]:
    """What one MCP server answers to each refused input, in REFUSED's order: a refusal writes
    nothing, so each answer is what a server of its own would give."""
    head = example_kb_read_only.store.head()

    async def script(session: ClientSession) -> list[tuple[bool, str]]:
        return [(await reply_of(session, tool, arguments))[:2] for _argv, tool, arguments, _refused in REFUSED]

    replies = with_server_in_process(example_kb_read_only.root, script)
    assert example_kb_read_only.store.head() == head  # nothing committed
    return replies


@pytest.mark.parametrize("case", range(len(REFUSED)))
def test_the_cli_and_mcp_refuse_alike(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner,
                                      mcp_refusals: list[tuple[bool, str]], case: int) -> None:
    # example_kb_read_only fails the module if any of them committed or left a file behind.
    argv, _tool, _arguments, refused = REFUSED[case]
    assert refused is not None
    cli_says, mcp_says = (refused, refused) if isinstance(refused, str) else refused
    by_cli = invoke_cli("--kb", example_kb_read_only.root, "--json", *argv)
    assert (by_cli.returncode, json_of(by_cli)["error"]["message"]) == (1, cli_says)
    assert mcp_refusals[case] == (True, mcp_says)


def test_the_cli_and_mcp_take_alike(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    argv, tool, arguments, _refused = TAKEN
    by_cli = invoke_cli("--kb", example_kb.root, "--json", *argv)
    assert by_cli.returncode == 0, by_cli.stdout + by_cli.stderr
    saved = json_of(invoke_cli("--kb", example_kb.root, "--json", "get", json_of(by_cli)["memory_id"], check=True))
    assert saved["scope"] == "personal"

    async def script(session: ClientSession) -> tuple[bool, str, Any]:
        return await reply_of(session, tool, arguments)

    is_error, _text, structured = with_server_in_process(example_kb.root, script)
    assert not is_error
    # The same observation again: counted on the CLI's memory, scope and all.
    assert structured["memory_id"] == saved["id"] and structured["action"] == "duplicate"


SCOPE_WARNING = ("scope 'bogus' is neither 'project' nor 'personal': saved as 'project'; give 'personal' for "
                 "knowledge that holds across projects, or 'project' (the default).")


def test_a_scope_neither_project_nor_personal(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """The CLI's --scope is a choice (project|personal, as its help says) and refuses a typo before anything is
    written; MCP keeps Engram's rule (any scope but 'personal' is 'project') and says so."""
    refused = invoke_cli("--kb", example_kb.root, "--json", "save", "Use make for builds", "--title", "Builds",
                      "--scope", "bogus")
    assert refused.returncode == 2 and json_of(refused)["error"] == {
        "type": "usage", "message": "Invalid value for '--scope': 'bogus' is not one of 'project', 'personal'. "
                                    "Try 'slayer-kb save --help' for help."}
    assert json_of(invoke_cli("--kb", example_kb.root, "--json", "list", check=True))["memories"][0]["title"] != "Builds"

    async def script(session: ClientSession) -> tuple[bool, str, Any]:
        return await reply_of(session, "mem_save", {"title": "Deploys", "content": "Deploy with make deploy",
                                                    "scope": "bogus"})

    is_error, text, structured = with_server_in_process(example_kb.root, script)
    assert not is_error and text.endswith(f"\nwarning: {SCOPE_WARNING}") and structured["warnings"] == [SCOPE_WARNING]
    assert json_of(invoke_cli("--kb", example_kb.root, "--json", "get", structured["memory_id"], check=True))["scope"] == "project"
