"""Options or arguments that cannot go together, or one a command needs that is missing, are
usage errors: exit 2 with the command's usage, whether click or the library finds them (CLI.md).
One given empty or blank is a value refused: exit 1."""

from __future__ import annotations

import json

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.mcp import tools
from testing import CliRunner

# (command line, what stderr and the JSON error say): each was exit 1 from the library's check
# (or, for renumber --onto with --accept and rebase --abort --rewrite-pushed, went unrefused).
MISUSES = [
    (("save", "Kept", "--content", "Dropped"),
     "The text was given twice, as LEARNING and with --content: give it once (they are one field)."),
    (("save",), "Give the learning as an argument, with --content, or '-' to read it from stdin."),
    (("save", "a note"), "Nothing to link: give entity references with -e REF (e.g. -e orders.amount) or a "
                         "--query, or save an observation with --title."),
    (("save", "x", "-e", "shop.orders", "--query", '{"source_model": "orders"}'),
     "Give either -e references or --query, not both (the query's entities are linked)."),
    (("timeline",), "timeline takes a memory ID or --session SESSION, one of the two."),
    (("timeline", "1", "--session", "s"), "timeline takes a memory ID or --session SESSION, one of the two."),
    (("update", "1"), "Nothing to update: give at least one of --title, --learning, --type, --description, "
                      "--project, --scope, --topic-key, -e."),
    (("suggest-topic-key",), "suggest-topic-key derives the key from a title or content: give --title (preferred) "
                             "or --content."),
    (("delete-model", "shop.orders", "--datasource", "wh"),
     "'shop.orders' names datasource 'shop' but --datasource says 'wh': name the datasource once, in MODEL or "
     "with --datasource."),
    (("renumber", "--onto", "main", "--accept", "3"),
     "--accept takes no --onto: it renumbers nothing. Give --accept ID alone, or --onto REF without --accept."),
    (("renumber", "--rewrite", "--accept", "3"),
     "--accept takes no --rewrite: it renumbers nothing. Give --accept ID alone, or --onto REF --rewrite without "
     "--accept."),
    (("rebase", "--abort", "--rewrite-pushed"),
     "--rewrite-pushed is for starting a rebase (with UPSTREAM), not --abort: drop it."),
    (("search", "q", "--all", "--any"), "--all and --any cannot be used together; give one (--any is the default)."),
    (("watch",), "watch prints no JSON document: it runs until stopped, saying so on stdout. Drop --json."),
    (("mcp",), "mcp prints no JSON document: it speaks MCP's JSON-RPC on stdin and stdout until its client closes "
               "them. Drop --json."),
]


@pytest.mark.parametrize(("args", "message"), MISUSES, ids=[" ".join(args) for args, _ in MISUSES])
def test_options_that_cannot_go_together_exit_2_with_the_usage(
        invoke_cli: CliRunner, example_kb_read_only: KnowledgeBase, args: tuple[str, ...], message: str) -> None:
    proc = invoke_cli("--kb", example_kb_read_only.root, *args, "--json")
    name = args[0]
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"Usage: slayer-kb {name} [OPTIONS]")
    assert proc.stderr.endswith(f"Try 'slayer-kb {name} --help' for help.\n\nError: {message}\n")
    assert json.loads(proc.stdout) == {"error": {"type": "usage",
                                                 "message": f"{message} Try 'slayer-kb {name} --help' for help."}}


def test_json_before_mcp_is_refused_as_after_it(invoke_cli: CliRunner, example_kb_read_only: KnowledgeBase) -> None:
    """``slayer-kb --json mcp`` started the server (stdout is its JSON-RPC channel, where --json
    means nothing), while ``mcp --json`` was an unknown option; both are the misuse above."""
    proc = invoke_cli("--kb", example_kb_read_only.root, "--json", "mcp")
    message = dict(MISUSES)[("mcp",)]
    assert (proc.returncode, json.loads(proc.stdout)) == (
        2, {"error": {"type": "usage", "message": f"{message} Try 'slayer-kb mcp --help' for help."}})
    assert proc.stderr.endswith(f"\n\nError: {message}\n")


# One rule with the misuses above: what a command needs, left out, is a usage error; given empty
# or blank, it is a value refused as any other (exit 1), as an id or a path is.
BLANKS = [
    (("save", ""), "invalid_input", "learning is empty: write what was learned (it is required and must not be blank)."),
    (("get", ""), "invalid_id", "Memory id must not be empty; give the id of the memory to show (search and list show "
                                "the ids)."),
    (("suggest-topic-key", "--title", "", "--content", "\u200b"), "invalid_input",
     "A topic key needs a title or content, and both are empty: pass --title (preferred) or --content to derive "
     "the key from."),
]


@pytest.mark.parametrize(("args", "kind", "message"), BLANKS, ids=[args[0] for args, _, _ in BLANKS])
def test_what_a_command_needs_given_blank_exits_1_as_a_value_refused(
        invoke_cli: CliRunner, example_kb_read_only: KnowledgeBase, args: tuple[str, ...], kind: str,
        message: str) -> None:
    proc = invoke_cli("--kb", example_kb_read_only.root, *args, "--json")
    assert (proc.returncode, json.loads(proc.stdout), proc.stderr) == (
        1, {"error": {"type": kind, "message": message}}, f"Error: {message}\n")


def test_an_id_sync_did_not_move_is_not_found_not_a_usage_error(
        invoke_cli: CliRunner, example_kb_read_only: KnowledgeBase) -> None:
    proc = invoke_cli("--kb", example_kb_read_only.root, "renumber", "--accept", "3")
    assert (proc.returncode, proc.stderr) == (1, "Error: sync moved no memory with id '3' on this clone; nothing to "
                                                 "accept. Give the id sync said it moved.\n")


def test_the_same_misuse_over_mcp_is_an_error_reply_in_its_parameters_terms(
        example_kb_read_only: KnowledgeBase) -> None:
    """MCP has no exit code: a misuse the CLI calls a usage error is an error reply, as before."""
    for name, args, text in (
        ("mem_update", {"id": "1"}, "Nothing to update: give at least one of title, content, type, project, scope, "
                                    "topic_key."),
        ("mem_suggest_topic_key", {}, "mem_suggest_topic_key needs a title or content, and both are empty: pass the "
                                      "memory's title (preferred) or its content to derive the key from."),
    ):
        reply = tools.call_tool(example_kb_read_only, name, args)
        assert (reply.is_error, reply.text) == (True, text), name
