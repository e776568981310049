"""Small refusals that said the wrong thing: MCP ``limit="1.5"`` was "not a string" though ``"1"``
is taken; ``save - --title -`` stored the title "-" where ``-`` reads standard input elsewhere;
``capture-passive ''`` ended without its full stop."""

from __future__ import annotations

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.tools import call_tool
from testing import CliRunner, git

WHOLE = "mem_search: 'limit' must be a whole number from 1 to 9007199254740991, not {}."
TITLE = ("Error: --title is '-', which reads standard input for the text and --query but not for a title: give the "
         "title itself (--title \"Auth decision\").\n")


def test_a_limit_sent_as_text_is_told_it_must_be_a_whole_number(example_kb_read_only: KnowledgeBase) -> None:
    for value, shown in (("1.5", "'1.5'"), ("ten", "'ten'"), (1.5, "1.5")):
        reply = call_tool(example_kb_read_only, "mem_search", {"query": "refunds", "limit": value})
        assert (reply.is_error, reply.text) == (True, WHOLE.format(shown)), value
    assert not call_tool(example_kb_read_only, "mem_search", {"query": "refunds", "limit": "1"}).is_error


def test_a_title_of_a_dash_is_refused(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    saved = invoke_cli("--kb", root, "save", "-", "--title", "-", input="Tokens are checked by the gateway.\n")
    assert (saved.returncode, saved.stderr.splitlines()[-1] + "\n") == (2, TITLE)
    updated = invoke_cli("--kb", root, "update", "3", "--title", "-")
    assert (updated.returncode, updated.stderr.splitlines()[-1] + "\n") == (2, TITLE)
    assert git(root, "rev-parse", "HEAD") == head


def test_capture_passive_of_nothing_ends_as_a_sentence(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """The command's message ends with its full stop; the tool keeps Engram's words as they are."""
    got = invoke_cli("--kb", indexed_example_kb.root, "capture-passive", "")
    assert (got.returncode, got.stderr.splitlines()[-1]) == (
        1, "Error: content is required — include text with a '## Key Learnings:' section.")
    reply = call_tool(indexed_example_kb, "mem_capture_passive", {"content": ""})
    assert (reply.is_error, reply.text) == (True, "content is required — include text with a '## Key Learnings:' section")


def test_every_plain_option_of_a_dash_is_refused_as_the_title_is(indexed_example_kb: KnowledgeBase,
                                                                  invoke_cli: CliRunner) -> None:
    """--description -, --topic-key -, --project - (save, update, session-summary, session-start)
    and --session - (save, session-summary) stored a literal "-", even with text piped on stdin,
    where --title - was refused."""
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    said = {
        "--description": "a description: give the description itself (--description \"JWT over sessions\").",
        "--topic-key": "a topic key: give the topic key itself (--topic-key architecture/auth-model).",
        "--project": "a project: give the project itself (--project api).",
        "--session": "a session id: give the session id itself (--session ses-42).",
    }
    for option, end in said.items():
        message = f"Error: {option} is '-', which reads standard input for the text and --query but not for {end}"
        saved = invoke_cli("--kb", root, "save", "-", "--title", "T", option, "-", input="piped text\n")
        assert (saved.returncode, saved.stderr.splitlines()[-1:]) == (2, [message])
        if option != "--session":
            updated = invoke_cli("--kb", root, "update", "3", option, "-", input="piped text\n")
            assert (updated.returncode, updated.stderr.splitlines()[-1:]) == (2, [message])
        if option in ("--project", "--session"):  # session-summary's and session-start's too
            summed = invoke_cli("--kb", root, "session-summary", "-", option, "-", input="piped text\n")
            assert (summed.returncode, summed.stderr.splitlines()[-1:]) == (2, [message])
        if option == "--project":
            started = invoke_cli("--kb", root, "session-start", "ses-1", option, "-")
            assert (started.returncode, started.stderr.splitlines()[-1:]) == (2, [message])
    assert git(root, "rev-parse", "HEAD") == head
