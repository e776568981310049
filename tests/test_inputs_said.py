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


def test_a_querys_limit_an_empty_query_path_and_a_sessions_case_are_told_the_fix(
        example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``limit: 1e400`` in a query said only "limit: Input should be a finite number"; ``--query @``
    said "Cannot read the query file : No such file or directory."; ``timeline --session`` of a
    session's id in other letters said "No session" with no "did you mean". Nothing is saved."""
    kb = example_kb_read_only
    head = git(kb.root, "rev-parse", "HEAD")
    query = '{"source_model": "orders", "limit": 1e400}'
    finite = "limit: Input should be a finite number; give a whole number, such as limit: 100."
    said = invoke_cli("--kb", kb.root, "save", "x", "--query", query)
    assert (said.returncode, said.stderr) == (1, f"Error: {finite}\n")
    reply = call_tool(kb, "save_memory", {"learning": "x", "linked_entities": query})
    assert (reply.is_error, reply.text) == (True, finite)
    offset = invoke_cli("--kb", kb.root, "save", "x", "--query", '{"source_model": "orders", "offset": "x"}')
    assert offset.stderr == ("Error: offset: Input should be a valid integer, unable to parse string as an integer; "
                             "give a whole number, such as offset: 20.\n")
    empty = invoke_cli("--kb", kb.root, "save", "x", "--query", "@")
    assert (empty.returncode, empty.stderr) == (1, "Error: Cannot read the query file: its path is empty; give a "
                                                   "regular file, or --query - to read the query from standard input.\n")
    assert git(kb.root, "rev-parse", "HEAD") == head
    slip = invoke_cli("--kb", kb.root, "timeline", "--session", "SES-20261111-Agent-Setup")
    assert (slip.returncode, slip.stderr) == (1, "Error: No session with id 'SES-20261111-Agent-Setup': no session "
                                                 "file and no memory saved in it. Did you mean "
                                                 "'ses-20261111-agent-setup'? Session ids are case-sensitive.\n")
