"""The CLI contract of CLI.md: every command with ``--json``, run in this process (``invoke_cli``).

test_in_process.py checks that a sample of runs (usage errors among them) prints, byte for byte,
what the ``slayer-kb`` process prints; the program's help and completion are checked here on real
processes (``run_cli``). Each run checks exit code 0, exactly one JSON document on stdout and the documented keys. Commands
that only read share one copy of the example KB (``shared_kb``); commands that write get their own
(``indexed_example_kb``). Also: the error contract, ``-`` for stdin, ``--help`` examples, shell completion.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner as ClickRunner

from slayer_kb import KnowledgeBase
from slayer_kb.cli import COMMANDS, cli
from slayer_kb.core.errors import NotFoundError
from testing import EXAMPLE_KB, GIT_ENV, CliRunner, git, make_example_kb, make_indexed_example_kb

MEMORY_KEYS = {
    "id", "learning", "title", "type", "description", "entities", "query", "project", "scope",
    "topic_key", "session_id", "revision_count", "duplicate_count", "created_at", "updated_at",
    "deleted_at",
}  # fmt: skip
HIT_KEYS = {
    "id", "score", "title", "type", "description", "entities", "matched_entities", "project", "scope",
    "created_at",
}  # fmt: skip
SAVE_KEYS = {"memory_id", "resolved_entities", "warnings", "action"}
SEARCH_KEYS = {"memories", "example_queries", "entities", "resolved_input_entities", "warnings", "notes"}
CASCADE_KEYS = {"deleted", "commit", "rewritten"}
EXAMPLE_MEMORIES = 34
EXAMPLE_SESSIONS = 6  # sessions/*.yaml, which validate checks too
# Commands CLI.md documents (watch and mcp run until stopped: only their --help is run).
DOCUMENTED = {
    "save", "get", "update", "forget", "restore", "search", "list", "delete-model",
    "delete-datasource", "delete-leaf", "prune", "suggest-topic-key", "timeline", "context",
    "session-summary", "stats", "init", "validate", "fmt", "edit", "log", "show", "review", "reindex",
    "watch", "mcp",
}  # fmt: skip

def doc(proc: subprocess.CompletedProcess[str], code: int = 0) -> Any:
    """The one JSON document on stdout of a run that exited ``code``."""
    assert proc.returncode == code, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    decoder = json.JSONDecoder()
    text = proc.stdout.strip()
    data, end = decoder.raw_decode(text)
    assert end == len(text), f"more than one JSON document on stdout: {proc.stdout!r}"
    return data


def ok(invoke_cli: CliRunner, kb: Path, *args: str | Path, input: str | None = None, **kw: Any) -> Any:
    """``slayer-kb --kb KB ARGS... --json``: exit 0, one JSON document; returns it."""
    return doc(invoke_cli("--kb", kb, *args, "--json", input=input, **kw))


def assert_keys(data: dict[str, Any], documented: set[str], exact: bool = False) -> None:
    assert isinstance(data, dict), data
    if exact:
        assert set(data) == documented
    else:
        assert documented <= set(data), f"missing {documented - set(data)} in {sorted(data)}"


def assert_hit(hit: dict[str, Any], *extra: str) -> None:
    assert set(hit) == HIT_KEYS | set(extra), sorted(hit)
    assert isinstance(hit["id"], str) and isinstance(hit["score"], float)
    assert isinstance(hit["entities"], list) and isinstance(hit["matched_entities"], list)


def assert_memory(data: dict[str, Any], memory_id: str) -> None:
    assert set(data) >= MEMORY_KEYS, sorted(MEMORY_KEYS - set(data))
    assert data["id"] == memory_id


def head(kb: Path) -> str:
    return git(kb, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def shared_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One committed copy of the example KB for the commands that only read."""
    root = tmp_path_factory.mktemp("shared") / "kb"
    shutil.copytree(EXAMPLE_KB, root, ignore=shutil.ignore_patterns(".slayer-kb"))
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "example"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    return root


@pytest.fixture
def kb(indexed_example_kb: KnowledgeBase) -> Iterator[Path]:
    """A private committed copy of the example KB, for commands that write: indexed, as after
    its first command (these tests are about what a command prints, not a first index build)."""
    yield indexed_example_kb.root
    indexed_example_kb.close()


# -- memories ------------------------------------------------------------------------------


def test_get_has_the_sixteen_keys_with_nulls(invoke_cli: CliRunner, shared_kb: Path) -> None:
    data = ok(invoke_cli, shared_kb, "get", "1")
    assert set(data) == MEMORY_KEYS
    assert data["id"] == "1"
    assert data["entities"] == [
        "shop.orders.amount", "shop.orders.currency", "shop.orders.parent_order_id", "wh.orders.net_revenue_eur",
    ]  # fmt: skip
    assert data["created_at"] == "2026-10-01T09:14:22Z"
    absent = MEMORY_KEYS - {"id", "learning", "entities", "created_at"}
    assert {key: data[key] for key in absent} == dict.fromkeys(absent)
    full = ok(invoke_cli, shared_kb, "get", "kb.paid-revenue")
    assert set(full) == MEMORY_KEYS
    assert full["query"]["source_model"] == "orders"
    assert (full["title"], full["type"], full["project"], full["scope"]) == (
        "Paid revenue by status", "decision", "analytics", "project",
    )  # fmt: skip
    assert (full["revision_count"], full["duplicate_count"], full["deleted_at"]) == (2, 1, None)


def test_json_before_and_after_the_command(invoke_cli: CliRunner, shared_kb: Path) -> None:
    before = invoke_cli("--kb", shared_kb, "--json", "get", "1")
    after = invoke_cli("--kb", shared_kb, "get", "1", "--json")
    assert doc(before) == doc(after)
    assert before.stdout == after.stdout


@pytest.mark.parametrize("mode", ["off", "on"])
def test_server_takes_json_before_its_subcommand_too(invoke_cli: CliRunner, shared_kb: Path, mode: str) -> None:
    """``server --json status`` was refused ("--json is a global option: give it before the
    command") while ``server status --json`` and ``--json server status`` worked."""
    env = {"SLAYER_KB_SERVER": mode}
    root = os.path.realpath(shared_kb)
    for command, expected in (("status", {"root": root, "mode": mode, "running": False}),
                              ("stop", {"root": root, "stopped": None})):
        placed = [invoke_cli("--kb", shared_kb, *args, env=env) for args in (
            ["server", "--json", command], ["server", command, "--json"], ["--json", "server", command])]
        assert [(p.returncode, json.loads(p.stdout), p.stderr) for p in placed] == [(0, expected, "")] * 3
    alone = invoke_cli("--kb", shared_kb, "server", "--json", env=env)
    assert (alone.returncode, json.loads(alone.stdout)) == (2, {"error": {"type": "usage", "message": (
        "Missing command. Try 'slayer-kb server --help' for help.")}})


def test_save_actions(invoke_cli: CliRunner, kb: Path) -> None:
    first = ok(invoke_cli, kb, "save", "NULL means not returned", "-e", "shop.orders.is_returned")
    assert_keys(first, SAVE_KEYS)
    assert first == first | {
        "memory_id": "27", "resolved_entities": ["shop.orders.is_returned"], "warnings": [], "action": "created",
    }  # fmt: skip
    assert head(kb) == git(kb, "log", "-1", "--format=%H", "--", "memories/27.yaml").strip() == first["commit"]
    # The id saved again with what it holds: the text said "nothing to commit", and so does the JSON.
    same = ("save", "NULL means not returned", "--id", "27", "-e", "shop.orders.is_returned")
    assert ok(invoke_cli, kb, *same) == first | {"action": "replaced", "commit": None, "message": "Memory replaced: 27"}
    assert invoke_cli("--kb", kb, *same).stdout == (
        "Saved memory 27 (replaced): it already held this; nothing to commit\n  entities: shop.orders.is_returned\n")
    assert head(kb) == first["commit"]
    # Comma-separated references; a comma inside parentheses belongs to the reference.
    comma = ok(invoke_cli, kb, "save", "Weighted price", "-e", "shop.orders.amount,shop.orders.status")
    assert comma["resolved_entities"] == ["shop.orders.amount", "shop.orders.status"]
    replaced = ok(invoke_cli, kb, "save", "Replaced text", "--id", "27", "-e", "shop.orders.is_returned")
    assert (replaced["memory_id"], replaced["action"]) == ("27", "replaced")
    assert ok(invoke_cli, kb, "get", "27")["learning"] == "Replaced text"
    # The text given twice (LEARNING and --content) is refused, not half dropped.
    twice = invoke_cli("--kb", kb, "save", "Kept", "--content", "Dropped", "--title", "T")
    assert (twice.returncode, twice.stderr.split("\n\n")[-1]) == (
        2, "Error: The text was given twice, as LEARNING and with --content: give it once (they are one field).\n")
    # A note's --session is checked, trimmed and made, as an observation's is; blank is none.
    refused = invoke_cli("--kb", kb, "save", "x", "-e", "shop.orders", "--session", "bad\x01id")
    assert (refused.returncode, refused.stderr) == (1, "Error: session_id contains U+0001, a control or invisible "
                                                       "character; a session id is printable text such as 'ses-2026-11-29-auth'.\n")
    blank = ok(invoke_cli, kb, "save", "No session", "-e", "shop.orders", "--session", "  ")["memory_id"]
    assert ok(invoke_cli, kb, "get", blank)["session_id"] is None
    filed = ok(invoke_cli, kb, "save", "Filed", "-e", "shop.orders", "--session", " ses-9 ")["memory_id"]
    assert ok(invoke_cli, kb, "get", filed)["session_id"] == "ses-9"
    assert git(kb, "show", "--name-only", "--format=", "HEAD").split() == [f"memories/{filed}.yaml", "sessions/ses-9.yaml"]


def test_save_engram_style_created_duplicate_revised(invoke_cli: CliRunner, kb: Path) -> None:
    args = ("save", "JWT over sessions", "--title", "Auth decision", "--type", "decision", "--project", "API")
    created = ok(invoke_cli, kb, *args)
    assert_keys(created, SAVE_KEYS)
    assert (created["memory_id"], created["resolved_entities"], created["action"]) == ("27", [], "created")
    assert ok(invoke_cli, kb, *args)["action"] == "duplicate"
    assert ok(invoke_cli, kb, "get", "27")["duplicate_count"] == 2
    # The seed's matching criteria are "same session + same content hash": another session's
    # save is its own memory, which that session's next identical save repeats.
    other = ok(invoke_cli, kb, *args, "--session", "ses-2")
    assert (other["memory_id"], other["action"]) == ("28", "created")
    again = ok(invoke_cli, kb, *args, "--session", "ses-2")
    assert (again["memory_id"], again["action"]) == ("28", "duplicate")
    assert ok(invoke_cli, kb, *args)["memory_id"] == "27"
    # One of Engram's types in any case is that type (a filter and the stats count it so);
    # another type is kept as given.
    fixed = ok(invoke_cli, kb, "save", "Nil check", "--title", "Nil", "--type", " BugFix ", "--project", "api")
    assert fixed["message"].startswith('Memory saved: "Nil" (bugfix)\n')
    assert [h["id"] for h in ok(invoke_cli, kb, "list", "--type", "BUGFIX")["memories"]] == [fixed["memory_id"], "14"]
    own = ok(invoke_cli, kb, "save", "Odd one", "--title", "Odd", "--type", "MyType")
    assert ok(invoke_cli, kb, "get", own["memory_id"])["type"] == "MyType"


def test_save_topic_key_revises_only_its_own_memory(invoke_cli: CliRunner, kb: Path) -> None:
    """A new topic key matches nothing: Whoosh once read that empty filter as no filter at all."""
    topic = ("--topic-key", "architecture/auth")
    first = ok(invoke_cli, kb, "save", "JWT v1", "--title", "Auth", "--project", "api", *topic)
    revised = ok(invoke_cli, kb, "save", "JWT v2", "--title", "Auth", "--project", "api", *topic)
    assert (revised["memory_id"], revised["action"]) == (first["memory_id"], "revised")
    memory = ok(invoke_cli, kb, "get", first["memory_id"])
    assert (memory["learning"], memory["project"], memory["topic_key"]) == ("JWT v2", "api", "architecture/auth")
    assert first == first | {"memory_id": "27", "action": "created"}
    assert ok(invoke_cli, kb, "get", "26")["title"] is None  # the newest memory before is untouched
    # Same title, other content: not a duplicate (the content-hash filter matches nothing).
    other = ok(invoke_cli, kb, "save", "Sessions after all", "--title", "Auth", "--project", "api")
    assert other == other | {"memory_id": "28", "action": "created"}
    # A save without --title upserts by its key too: two memories under one key fail validate.
    note = ("-e", "shop.orders.amount", "--project", "api", "--topic-key", "fact/amounts")
    assert ok(invoke_cli, kb, "save", "Amounts are gross", *note, "--description", "Gross")["memory_id"] == "29"
    # It replaces only the fields given (the description stays), and is filed into the session given.
    again = ok(invoke_cli, kb, "save", "Amounts include VAT", *note, "--session", "ses-x")
    assert again == again | {"memory_id": "29", "action": "revised", "resolved_entities": ["shop.orders.amount"]}
    memory = ok(invoke_cli, kb, "get", "29")
    assert (memory["learning"], memory["description"], memory["revision_count"], memory["session_id"]) == (
        "Amounts include VAT", "Gross", 2, "ses-x")
    assert git(kb, "show", "--name-only", "--format=", "HEAD").split() == ["memories/29.yaml", "sessions/ses-x.yaml"]
    # Nor may an update or a save by id give another memory a key one holds.
    before = head(kb)
    held = ("Error: topic_key 'fact/amounts' in project 'api' at scope 'project' is already held by memory 29: one "
            "memory holds a key, so that a save under it revises that one. Change memory 29 instead, or give another "
            "topic_key.\n")
    for args in (("update", "28", "--topic-key", "fact/amounts"), ("save", "Net", "--id", "kb.net", *note)):
        refused = invoke_cli("--kb", kb, *args)
        assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", held)
    assert head(kb) == before
    # A restore brings a memory back without the key another save took while it was deleted.
    ok(invoke_cli, kb, "forget", "29", "--soft")
    assert ok(invoke_cli, kb, "save", "Amounts are net", *note)["memory_id"] == "30"
    dropped = ["topic_key 'fact/amounts' is held by memory 30 now: restored without it, so that saves under "
               "the key keep revising 30."]
    restored = invoke_cli("--kb", kb, "restore", "29")
    assert (restored.returncode, restored.stdout) == (0, f"Restored memory 29\nwarning: {dropped[0]}\n")
    assert ok(invoke_cli, kb, "get", "29")["topic_key"] is None
    at_save = ok(invoke_cli, kb, "restore", "29", "--rev", before)
    assert (at_save["topic_key"], at_save["learning"], at_save["warnings"]) == (
        None, "Amounts include VAT", dropped)
    assert invoke_cli("--kb", kb, "validate").returncode == 0
    # A pair older code made under one key: resending a memory's own key, project and scope (as
    # agents do) changes it; only giving it the key anew is refused.
    (kb / "memories/29.yaml").write_text((kb / "memories/29.yaml").read_text() + "topic_key: fact/amounts\n")
    git(kb, "commit", "-qam", "a pair under one key")
    resent = ("--project", "api", "--scope", "project", "--topic-key", "fact/amounts")
    assert ok(invoke_cli, kb, "update", "29", "--learning", "Amounts are gross", *resent)["learning"] == (
        "Amounts are gross")
    assert ok(invoke_cli, kb, "save", "Net", "--id", "29", "-e", "shop.orders.amount", *resent)["action"] == "replaced"
    refused = invoke_cli("--kb", kb, "update", "28", "--topic-key", "fact/amounts")
    assert (refused.returncode, refused.stderr) == (1, held.replace("29", "30"))
    # A change of scope alone meets the key's holder at that scope: the message names the scope.
    mine = ok(invoke_cli, kb, "save", "Mine", "-e", "shop.orders.amount", "--project", "api", "--scope", "personal",
              "--topic-key", "fact/amounts")["memory_id"]
    refused = invoke_cli("--kb", kb, "update", "30", "--scope", "personal")
    assert (refused.returncode, refused.stderr) == (
        1, held.replace("29", mine).replace("scope 'project'", "scope 'personal'"))


def test_save_title_with_an_id_or_a_query_saves_them_together(invoke_cli: CliRunner, kb: Path) -> None:
    """--id was silently dropped with --title (the memory got the next auto id), then refused with
    it, as --query was: the memory DESIGN.md shows (a title, a type, a query and a topic key) could
    not be saved in one command. With --id or --query, --title is the note's title, saved SLayer's
    way; without links it is refused, a bad id hearing the id rules first."""
    before = head(kb)
    proc = invoke_cli("--kb", kb, "save", "JWT", "--title", "Auth", "--id", "auth-model", "--json")
    message = (
        "--id with --title saves a titled note under 'auth-model' SLayer's way, which links entities: give -e REF "
        "(e.g. -e orders.amount) or a --query; or drop --id to save an observation, whose id is chosen for it "
        "(the next auto id, or the memory its --topic-key revises)."
    )
    assert proc.stderr.split("\n\n")[-1] == f"Error: {message}\n"
    assert doc(proc, 2) == {"error": {"type": "usage", "message": f"{message} Try 'slayer-kb save --help' for help."}}
    bad = invoke_cli("--kb", kb, "save", "JWT", "--title", "Auth", "--id", "../x")
    assert (bad.returncode, bad.stdout, bad.stderr) == (
        1, "", "Error: Memory id '../x' contains '/'; ids may not contain \" # * / : < > ? \\ |. "
        "Use letters, digits, '.', '_' or '-'.\n",
    )  # fmt: skip
    assert head(kb) == before
    # A titled memory is an observation's kind: private spans redacted, the type manual unless given.
    saving = ("save", "JWT over sessions <private>sk-1</private>", "--title", "Auth <private>x</private>",
              "--id", "auth-model", "-e", "shop.orders")
    titled = ok(invoke_cli, kb, *saving)
    assert (titled["memory_id"], titled["action"]) == ("auth-model", "created")
    assert (kb / "memories" / "auth-model.yaml").read_text().startswith(
        "title: Auth [REDACTED]\ntype: manual\nlearning: JWT over sessions [REDACTED]\n")
    assert "sk-1" not in git(kb, "log", "-p")
    assert invoke_cli("--kb", kb, *saving, check=True).stdout == (
        'Memory saved: "Auth [REDACTED]" (manual)\n(replaced: memory auth-model; it already held this, nothing to commit)\n')
    query = '{"source_model": "orders", "measures": ["amount:sum"], "filters": ["status = \'paid\'"]}'
    saved = ok(invoke_cli, kb, "save", "Revenue counts paid orders only.", "--title", "Paid revenue by status",
               "--type", "decision", "--query", query, "--project", "analytics", "--topic-key", "decision/paid-only")
    assert (saved["memory_id"], saved["action"], saved["resolved_entities"]) == (
        "27", "created", ["shop.orders", "shop.orders.amount", "shop.orders.status"])
    shown = ok(invoke_cli, kb, "get", "27")
    assert {k: shown[k] for k in ("title", "type", "project", "topic_key")} == {
        "title": "Paid revenue by status", "type": "decision", "project": "analytics", "topic_key": "decision/paid-only"}
    assert shown["query"]["source_model"] == "orders"
    # The same topic key and project again revises that memory, as CLI.md's "revised" says.
    again = ok(invoke_cli, kb, "save", "Revenue counts paid and shipped orders.", "--title", "Paid revenue",
               "--query", query, "--project", "analytics", "--topic-key", "decision/paid-only")
    assert (again["memory_id"], again["action"]) == ("27", "revised")


def test_filters_that_match_nothing_return_nothing(invoke_cli: CliRunner, shared_kb: Path) -> None:
    assert ok(invoke_cli, shared_kb, "list", "--project", "nosuch")["memories"] == []
    found = ok(invoke_cli, shared_kb, "search", "-e", "shop.orders.amount", "--type", "nosuch")
    assert (found["memories"], found["example_queries"]) == ([], [])


def test_save_and_update_read_stdin(invoke_cli: CliRunner, kb: Path) -> None:
    saved = ok(invoke_cli, kb, "save", "-", "-e", "shop.orders.amount", input="From stdin\n\nSecond paragraph\n")
    assert ok(invoke_cli, kb, "get", saved["memory_id"])["learning"] == "From stdin\n\nSecond paragraph\n"
    titled = ok(invoke_cli, kb, "save", "-", "--title", "Piped", input="Piped observation\n")
    assert ok(invoke_cli, kb, "get", titled["memory_id"])["learning"] == "Piped observation"
    updated = ok(invoke_cli, kb, "update", "1", "--learning", "-", input="Rewritten from stdin\n")
    assert set(updated) >= MEMORY_KEYS
    assert updated["learning"] == "Rewritten from stdin\n"  # a note's text as given, as its save keeps it


def test_update_returns_the_memory(invoke_cli: CliRunner, kb: Path) -> None:
    data = ok(invoke_cli, kb, "update", "1", "--title", "Order amount", "--type", "discovery", "-e", "shop.orders.amount")
    assert_memory(data, "1")
    assert set(data) - MEMORY_KEYS == {"action", "warnings"} and data["action"] == "updated"
    assert (data["title"], data["type"], data["entities"]) == ("Order amount", "discovery", ["shop.orders.amount"])
    assert data == ok(invoke_cli, kb, "get", "1") | {"action": "updated", "warnings": data["warnings"]}


def test_forget_strips_references(invoke_cli: CliRunner, kb: Path) -> None:
    data = ok(invoke_cli, kb, "forget", "kb.paid-revenue")
    assert_keys(data, {"deleted_id", "stripped_from"})
    assert (data["deleted_id"], data["stripped_from"]) == ("kb.paid-revenue", ["kb.refund-policy"])
    assert "memory:kb.paid-revenue" not in ok(invoke_cli, kb, "get", "kb.refund-policy")["entities"]
    assert not (kb / "memories" / "kb.paid-revenue.yaml").exists()
    assert doc(invoke_cli("--kb", kb, "get", "kb.paid-revenue", "--json"), 1)["error"]["type"] == "not_found"
    # restore brings back a soft-deleted memory; one forgotten for good is told the --rev that does
    forgot = head(kb)[:12]
    proc = invoke_cli("--kb", kb, "restore", "kb.paid-revenue")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"Error: No memory with id 'kb.paid-revenue'. It was forgotten for good (not soft-deleted) in commit {forgot}; bring back "
        f"its last version with 'slayer-kb --kb {kb} restore kb.paid-revenue --rev {forgot}~1'.\n")
    with KnowledgeBase(kb) as opened, pytest.raises(NotFoundError) as info:  # mem_restore's words
        opened.restore("kb.paid-revenue")
    assert info.value.for_tools() == (
        f"No memory with id 'kb.paid-revenue'. It was forgotten for good (not soft-deleted) in commit {forgot}; the tools cannot "
        f"bring it back, a person can: 'slayer-kb --kb {kb} restore kb.paid-revenue --rev {forgot}~1'.")
    assert ok(invoke_cli, kb, "restore", "kb.paid-revenue", "--rev", f"{forgot}~1")["action"] == "restored"


def test_advice_names_the_kb_where_slayer_kb_names_another(invoke_cli: CliRunner, kb: Path, tmp_path: Path) -> None:
    """Inside the KB, a printed 'slayer-kb restore 3' would open the KB $SLAYER_KB names, not this
    one: the advice names --kb there too, and stays plain where $SLAYER_KB names this KB."""
    ok(invoke_cli, kb, "forget", "3", "--soft")
    other = tmp_path / "other"
    other.mkdir()
    told = invoke_cli("--kb", ".", "get", "3", cwd=kb, env={"SLAYER_KB": str(other)})
    assert told.returncode == 1 and "bring it back with 'slayer-kb --kb . restore 3'." in told.stderr
    same = invoke_cli("get", "3", cwd=kb, env={"SLAYER_KB": str(kb)})
    assert same.returncode == 1 and "bring it back with 'slayer-kb restore 3'." in same.stderr


def test_forget_soft_and_restore(invoke_cli: CliRunner, kb: Path) -> None:
    data = ok(invoke_cli, kb, "forget", "3", "--soft")
    assert_keys(data, {"deleted_id", "stripped_from"})
    assert (data["deleted_id"], data["stripped_from"]) == ("3", [])
    assert invoke_cli("--kb", kb, "get", "3").returncode == 1
    hidden = ok(invoke_cli, kb, "get", "3", "--deleted")
    assert hidden["deleted_at"] is not None
    named = "'memory:3' names memory 3: it comes first, and memories linked to it are found too."
    found = ok(invoke_cli, kb, "search", "memory:3")
    assert named not in found["notes"] and "3" not in [h["id"] for h in found["memories"]]
    # Run with --kb from elsewhere, the commands each message gives name the KB, so they run as pasted.
    run = f"slayer-kb --kb {kb}"
    assert [(proc.returncode, proc.stderr) for proc in (invoke_cli("--kb", kb, *args) for args in (
        ("get", "3"), ("forget", "3", "--soft"), ("update", "3", "--title", "T"), ("timeline", "3")))] == [(1, (
            f"Error: Memory '3' was deleted at {hidden['deleted_at']}; bring it back with '{run} restore 3'.\n"))] * 1 + [(
        1, f"Error: Memory '3' is already deleted (at {hidden['deleted_at']}): '{run} forget 3' without --soft removes "
           f"it for good, '{run} restore 3' brings it back.\n")] + [(1, (
            f"Error: Memory '3' was deleted at {hidden['deleted_at']}; bring it back with '{run} restore 3'.\n"))] * 2
    restored = ok(invoke_cli, kb, *shlex.split(f"{run} restore 3")[3:])
    assert ok(invoke_cli, kb, "search", "memory:3")["notes"][0] == named
    again = invoke_cli("--kb", kb, "restore", "3")
    assert (again.returncode, again.stderr) == (1, (
        f"Error: Memory '3' is not deleted; nothing to restore. An earlier version comes back with '{run} restore 3 "
        f"--rev REV' ('{run} log 3' lists them).\n"))
    soft = invoke_cli("--kb", kb, "forget", "4", "--soft")
    assert (soft.returncode, soft.stdout) == (0, f"Forgot memory 4 (soft; restore with '{run} restore 4')\n")
    absent = invoke_cli("--kb", kb, "show", "kb.nope", "--rev", "HEAD")
    assert absent.stderr == (
        f"Error: Memory 'kb.nope' does not exist at HEAD; see '{run} log kb.nope' for the revisions that have it.\n")
    titled = invoke_cli("--kb", kb, "save", "x", "--title", "T", "--id", "kb.x")
    assert (titled.returncode, titled.stderr.split("\n\n")[-1]) == (2, (
        "Error: --id with --title saves a titled note under 'kb.x' SLayer's way, which links entities: give -e REF "
        "(e.g. -e orders.amount) or a --query; or drop --id to save an observation, whose id is chosen for it (the "
        "next auto id, or the memory its --topic-key revises).\n"))
    assert_memory(restored, "3")
    assert restored["deleted_at"] is None
    # Stamped, so a sync weighs it against a forget on another clone by when it came.
    assert restored["updated_at"] is not None and restored["updated_at"] >= hidden["deleted_at"]


def test_history_log_show_restore_rev_review_edit(invoke_cli: CliRunner, kb: Path, tmp_path: Path) -> None:
    original = head(kb)
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys\nfrom pathlib import Path\np = Path(sys.argv[1])\n"
        "p.write_text(p.read_text().replace('timestamptz stored in UTC', 'timestamptz kept in UTC'))\n"
    )
    editor = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    edited = ok(invoke_cli, kb, "edit", "2", env={"EDITOR": editor, "VISUAL": editor})
    assert edited == edited | {"memory_id": "2", "changed": True, "commit": head(kb)}
    assert "timestamptz kept in UTC" in ok(invoke_cli, kb, "get", "2")["learning"]

    log = ok(invoke_cli, kb, "log", "2")
    assert isinstance(log, list)
    assert [entry["commit"] for entry in log] == [head(kb), original]
    assert set(log[0]) >= {"commit", "author", "date", "message"}

    shown = ok(invoke_cli, kb, "show", "2", "--rev", original)
    assert_memory(shown, "2")
    assert "timestamptz stored in UTC" in shown["learning"]

    review = ok(invoke_cli, kb, "review", original)
    assert [item["id"] for item in review["changed"]] == ["2"]
    assert (review["added"], review["removed"]) == ([], [])

    restored = ok(invoke_cli, kb, "restore", "2", "--rev", original)
    # docs/cli.md: restore gives the memory, action and warnings (--rev gave only its own keys).
    assert restored == ok(invoke_cli, kb, "get", "2") | {
        "action": "restored", "warnings": [], "memory_id": "2", "rev": original, "commit": head(kb)}
    assert "timestamptz stored in UTC" in restored["learning"]


def test_edit_reopens_on_a_problem(invoke_cli: CliRunner, kb: Path, tmp_path: Path) -> None:
    """The first close leaves an unknown key; answering y reopens; the second close fixes it."""
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys\nfrom pathlib import Path\np = Path(sys.argv[1])\nt = p.read_text()\n"
        "t = t.replace('entitys:', 'entities:') if 'entitys:' in t else t.replace('entities:', 'entitys:')\n"
        "p.write_text(t.replace('in UTC.', 'in UTC (checked).'))\n"
    )
    editor = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    env = {"EDITOR": editor, "VISUAL": editor}
    before = head(kb)
    refused = invoke_cli("--kb", kb, "edit", "2", "--json", env=env, input="n\n")
    assert doc(refused, 1)["error"]["message"].startswith("memories/2.yaml:9: unknown key 'entitys'")
    assert "Nothing was committed; your edit is kept in " in refused.stderr
    assert head(kb) == before
    reopened = ok(invoke_cli, kb, "edit", "2", env=env, input="y\n")
    assert reopened == reopened | {"memory_id": "2", "changed": True, "commit": head(kb)}
    assert "in UTC (checked)." in ok(invoke_cli, kb, "get", "2")["learning"]


def test_an_edit_of_a_file_changed_meanwhile_says_how_to_start_again(invoke_cli: CliRunner, kb: Path,
                                                                       tmp_path: Path) -> None:
    """It said "Run 'slayer-kb edit' again": no id, and no --kb for a command typed elsewhere."""
    script = tmp_path / "editor.py"
    script.write_text(  # edits the draft while "another save" rewrites the memory's file
        f"import sys\nfrom pathlib import Path\nfor p, who in ((Path(sys.argv[1]), 'mine'), (Path({str(kb / 'memories' / '2.yaml')!r}), "
        "'theirs')):\n    p.write_text(p.read_text().replace('in UTC.', f'in UTC ({who}).'))\n")
    editor = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    proc = invoke_cli("--kb", kb, "edit", "2", env={"EDITOR": editor, "VISUAL": editor})
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        "Error: memories/2.yaml changed while you were editing it (another save, a git command?); nothing was "
        f"committed. Run 'slayer-kb --kb {kb} edit 2' again.\n"))


def test_search_keys_and_hits(invoke_cli: CliRunner, shared_kb: Path) -> None:
    data = ok(invoke_cli, shared_kb, "search", "refunds", "-e", "orders.amount", "-e", "nosuch.x", "--any")
    assert set(data) == SEARCH_KEYS
    assert data["resolved_input_entities"] == ["shop.orders.amount"]
    assert data["warnings"] == [
        "entity 'nosuch.x' dropped: 'nosuch' is neither a known datasource nor a saved model. (segment of 'nosuch.x')."
    ]
    assert data["memories"] and data["example_queries"] and data["entities"]
    for hit in data["memories"]:
        assert_hit(hit)
    for hit in data["example_queries"]:
        assert_hit(hit, "query")
        assert hit["query"]["source_model"]
    for entity in data["entities"]:
        assert {"entity", "kind"} <= set(entity)
    assert all(len(hit["description"]) <= 500 for hit in data["memories"] + data["example_queries"])


def test_a_memory_link_in_the_question_comes_first(invoke_cli: CliRunner, shared_kb: Path) -> None:
    """``search memory:12`` as ``search -e memory:12`` (an id of digits has no words to find it by)."""
    data = ok(invoke_cli, shared_kb, "search", "memory:12")
    assert data["example_queries"][0]["id"] == "12"
    said = "'memory:12' names memory 12: it comes first, and memories linked to it are found too."
    assert data["notes"][0] == said
    linked = ok(invoke_cli, shared_kb, "search", "what is in memory:kb.refund-policy", "--limit", "3")["memories"]
    assert [h["id"] for h in linked[:2]] == ["kb.refund-policy", "11"]  # 11 links to it
    assert linked[1]["matched_entities"] == ["memory:kb.refund-policy"]
    # In brackets or quotes, and before the sentence's punctuation, a link names the memory too.
    for question in ("is it memory:12?", "see (memory:12).", 'the "memory:12", then'):
        data = ok(invoke_cli, shared_kb, "search", question)
        assert (data["example_queries"][0]["id"], data["notes"][0]) == ("12", said), question
    # A link to no memory is said, as -e memory:<id> says it.
    missing = ok(invoke_cli, shared_kb, "search", "see memory:999.")
    assert missing["warnings"] == ["entity 'memory:999' dropped: No memory with id '999'."]


def test_a_question_of_no_searchable_words_says_what_to_ask_instead(invoke_cli: CliRunner, shared_kb: Path) -> None:
    for question in ("!!!", "the of a"):
        assert ok(invoke_cli, shared_kb, "search", question)["warnings"] == [
            f"The question {question!r} has no searchable words (punctuation and words as common as 'the' are not "
            "searched): ask with the words that matter, such as a column, a metric or what it is about."]


def test_search_full_limit_and_stdin(invoke_cli: CliRunner, shared_kb: Path) -> None:
    full = ok(invoke_cli, shared_kb, "search", "-e", "shop.orders.amount", "--full", "--limit", "2")
    assert set(full) == SEARCH_KEYS
    assert len(full["memories"]) == 2
    for hit in full["memories"]:
        assert_hit(hit, "learning")
    for hit in full["example_queries"]:
        assert_hit(hit, "query", "learning")
    piped = ok(invoke_cli, shared_kb, "search", "-", "--limit", "3", input="refunds")
    assert piped == ok(invoke_cli, shared_kb, "search", "refunds", "--limit", "3")


def test_list_newest_first(invoke_cli: CliRunner, shared_kb: Path) -> None:
    data = ok(invoke_cli, shared_kb, "list", "--limit", "50")
    assert set(data) == {"memories"}
    hits = data["memories"]
    assert len(hits) == EXAMPLE_MEMORIES
    for hit in hits:  # list adds "query" to the hits of memories saved with one
        assert_hit(hit, *(["query"] if hit.get("query") else []))
    assert sum("query" in hit for hit in hits) == 8
    stamps = [hit["created_at"] for hit in hits]
    assert stamps == sorted(stamps, reverse=True)
    assert [h["id"] for h in ok(invoke_cli, shared_kb, "list", "--type", "decision")["memories"]] == ["kb.paid-revenue"]


def test_memories_of_one_second_list_by_id_whatever_the_index_did(invoke_cli: CliRunner, kb: Path) -> None:
    """Times have a resolution of a second: within one, list shows the later id first, as context
    does, before and after an edit moves a memory's document to the index's end and a reindex."""
    for name in ("40", "41", "kb.tie"):
        (kb / "memories" / f"{name}.yaml").write_text(
            f"type: tie\nlearning: Memory {name}\nentities:\n- shop.orders\ncreated_at: '2030-01-01T00:00:00Z'\n")
    git(kb, "add", "memories")
    git(kb, "commit", "-q", "-m", "three memories of one second")

    def shown() -> list[list[str]]:
        return [[h["id"] for h in ok(invoke_cli, kb, *args)["memories"]]
                for args in (("list", "--limit", "3"), ("list", "--limit", "2"), ("list", "--type", "tie"),
                             ("search", "--limit", "2"))]

    expected = [["kb.tie", "41", "40"], ["kb.tie", "41"], ["kb.tie", "41", "40"], ["kb.tie", "41"]]
    assert shown() == expected
    ok(invoke_cli, kb, "update", "40", "--learning", "Memory 40, edited")
    assert shown() == expected
    ok(invoke_cli, kb, "reindex")
    assert shown() == expected
    assert "- [kb.tie] Memory kb.tie (tie), 2030-01-01\n- [41] Memory 41 (tie)" in ok(invoke_cli, kb, "context")["text"]


# -- the catalog and cascades ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "deleted", "rewritten"),
    [
        (("delete-model", "refunds", "--datasource", "shop"), "shop.refunds", ["11", "26", "kb.refund-policy"]),
        (("delete-leaf", "shop.refunds.amount"), "shop.refunds.amount", ["kb.refund-policy"]),
        (("delete-datasource", "shop"), "shop", None),
    ],
    ids=["delete-model", "delete-leaf", "delete-datasource"],
)
def test_cascades(
    invoke_cli: CliRunner, kb: Path, args: tuple[str, ...], deleted: str, rewritten: list[str] | None
) -> None:
    data = ok(invoke_cli, kb, *args)
    assert_keys(data, CASCADE_KEYS)
    assert (data["deleted"], data["commit"]) == (deleted, head(kb))
    if rewritten is not None:
        assert data["rewritten"] == rewritten
    else:
        assert len(data["rewritten"]) > 10 and all(isinstance(i, str) for i in data["rewritten"])
    assert git(kb, "status", "--porcelain") == ""


def test_a_delete_s_stale_query_advice_runs_where_it_was_typed(invoke_cli: CliRunner, kb: Path) -> None:
    """With --kb from elsewhere it said "rewrite each query with 'slayer-kb edit ID'", which finds no KB there."""
    proc = invoke_cli("--kb", kb, "delete-model", "shop.refunds")
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[1:] == [
        "stale example queries (they still name what was deleted; search warns on them): 26; rewrite each query "
        f"with 'slayer-kb --kb {kb} edit ID', or drop the memory with 'slayer-kb --kb {kb} forget ID'"]


def test_prune(invoke_cli: CliRunner, kb: Path) -> None:
    clean = ok(invoke_cli, kb, "prune")
    assert_keys(clean, {"commit", "rewritten"})
    assert (clean["commit"], clean["rewritten"]) == (None, [])
    git(kb, "rm", "-q", "models/shop/regions.yaml")
    git(kb, "commit", "-q", "-m", "drop regions by hand")
    data = ok(invoke_cli, kb, "prune")
    assert (data["commit"], data["rewritten"]) == (
        head(kb),
        ["2", "5", "20", "kb.currency-conversion", "kb.guest-checkout"],
    )


# -- Engram tools ----------------------------------------------------------------------------


def test_suggest_topic_key(invoke_cli: CliRunner, shared_kb: Path) -> None:
    data = ok(invoke_cli, shared_kb, "suggest-topic-key", "--type", "architecture", "--title", "Auth model")
    assert data == {"topic_key": "architecture/auth-model"}


def test_timeline(invoke_cli: CliRunner, shared_kb: Path) -> None:
    data = ok(invoke_cli, shared_kb, "timeline", "2", "--before", "1", "--after", "1")
    assert_keys(data, {"before", "focus", "after"})
    assert_hit(data["focus"])
    for hit in data["before"] + data["after"]:
        assert_hit(hit)
    assert ([h["id"] for h in data["before"]], data["focus"]["id"], [h["id"] for h in data["after"]]) == (
        ["1"], "2", ["3"],
    )  # fmt: skip


def test_timeline_of_a_session_refuses_counts_it_would_ignore(invoke_cli: CliRunner, shared_kb: Path) -> None:
    session = ("timeline", "--session", "ses-20261120-quarterly-deck")
    assert ok(invoke_cli, shared_kb, *session)["entries"]
    refused = invoke_cli("--kb", shared_kb, *session, "--before", "2")
    assert (refused.returncode, refused.stderr.split("\n\n")[-1]) == (
        2, "Error: --before counts the memories around an ID; --session shows the whole session. Drop --before, "
           "or give an ID instead of --session.\n")


def test_context(invoke_cli: CliRunner, shared_kb: Path) -> None:
    data = ok(invoke_cli, shared_kb, "context", "--project", "analytics")
    assert set(data) == {"text"}
    assert data["text"].startswith("# Memory context: analytics\n")
    # A misspelt project found nothing, silently; list and search say which filter matched no memory.
    said = "No memory has project 'analytcs'; check the name, or run context without it."
    assert ok(invoke_cli, shared_kb, "context", "--project", "analytcs") == {
        "text": "No previous session memories found.\n", "warnings": [said]}
    typo = invoke_cli("--kb", shared_kb, "context", "--project", "analytcs")
    assert (typo.returncode, typo.stdout, typo.stderr) == (0, f"No previous session memories found.\nwarning: {said}\n", "")


def test_sessions_of_a_project_no_session_has_says_so(invoke_cli: CliRunner, shared_kb: Path) -> None:
    """``sessions --project analytcs`` (a typo) printed "No sessions." alone."""
    said = "warning: No session has project 'analytcs'; check the name, or list sessions without it.\n"
    typo = invoke_cli("--kb", shared_kb, "sessions", "--project", "analytcs")
    assert (typo.returncode, typo.stdout, typo.stderr) == (0, f"No sessions.\n{said}", "")
    listed = invoke_cli("--kb", shared_kb, "sessions", "--project", "analytcs", "--json")  # a list: beside it
    assert (listed.returncode, json.loads(listed.stdout), listed.stderr) == (0, [], said)
    assert invoke_cli("--kb", shared_kb, "sessions", "--project", "analytics").stderr == ""


def test_session_summary(invoke_cli: CliRunner, kb: Path) -> None:
    data = ok(invoke_cli, kb, "session-summary", "Fixed the refund double count", "--project", "analytics")
    assert_keys(data, SAVE_KEYS)
    assert (data["memory_id"], data["action"]) == ("27", "created")
    memory = ok(invoke_cli, kb, "get", "27")
    assert (memory["type"], memory["project"]) == ("session_summary", "analytics")


def test_stats(invoke_cli: CliRunner, shared_kb: Path) -> None:
    data = ok(invoke_cli, shared_kb, "stats")
    assert_keys(data, {"memories", "sessions", "projects", "types", "untyped"})
    assert (data["memories"], data["sessions"], data["projects"]) == (EXAMPLE_MEMORIES, EXAMPLE_SESSIONS, ["analytics"])
    assert sum(data["types"].values()) + data["untyped"] == EXAMPLE_MEMORIES
    assert data["types"]["decision"] == 1


# -- review, editing and upkeep ----------------------------------------------------------------


def test_init(invoke_cli: CliRunner, tmp_path: Path) -> None:
    data = doc(invoke_cli("init", tmp_path / "new", "--json"))
    assert data == {"kb": str((tmp_path / "new").resolve()), "created": True}
    assert (tmp_path / "new" / "memories").is_dir()
    assert git(tmp_path / "new", "log", "--format=%s") == "kb: initialise knowledge base\n"


def test_init_of_a_kb_says_it_already_is_one_and_changes_nothing(invoke_cli: CliRunner, tmp_path: Path) -> None:
    """As ``git init`` of a repository: exit 0, saying so, rather than "Initialised" with nothing done."""
    invoke_cli("init", tmp_path / "kb")
    again = invoke_cli("init", tmp_path / "kb")
    root = (tmp_path / "kb").resolve()
    assert (again.returncode, again.stdout, again.stderr) == (
        0, f"{root} is already a knowledge base: nothing to do.\n", "")
    assert doc(invoke_cli("init", tmp_path / "kb", "--json")) == {"kb": str(root), "created": False}
    assert git(root, "log", "--format=%s") == "kb: initialise knowledge base\n"


def test_init_of_a_folder_with_the_kb_s_folders_but_no_commit_initialises_it(invoke_cli: CliRunner,
                                                                              tmp_path: Path) -> None:
    """memories/ made by hand is no knowledge base: init said "already a knowledge base: nothing
    to do." and left a repository with no commit and .slayer-kb/ not ignored. A .gitignore of the
    person's own goes into init's commit only once they have committed it: init committed it,
    lines not committed and all."""
    root = (tmp_path / "i2").resolve()
    (root / "memories").mkdir(parents=True)
    (root / ".gitignore").write_text("*.log")  # a person's own ignore, no newline at its end
    refused = invoke_cli("init", root)
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", (
        f"Error: {root}/.gitignore is not committed, and init would commit it with the line '.slayer-kb/' it adds: "
        f"commit it yourself first (cd {root}; git init; git add .gitignore; git commit), or add that line to it and "
        "commit it, then run init again.\n"))
    assert sorted(p.name for p in root.iterdir()) == [".gitignore", "memories"]  # no repository left behind
    git(root, "init", "-q")
    git(root, "add", ".gitignore")
    git(root, "commit", "-qm", "ignore logs")
    made = invoke_cli("init", root)
    assert (made.returncode, made.stdout, made.stderr) == (0, f"Initialised knowledge base in {root}\n", "")
    assert git(root, "log", "--format=%s") == "kb: initialise knowledge base\nignore logs\n"
    assert git(root, "ls-tree", "-r", "--name-only", "HEAD") == ".gitignore\nmemories/.gitkeep\n"
    assert (root / ".gitignore").read_text() == "*.log\n.slayer-kb/\n"
    assert git(root, "status", "--porcelain") == ""
    # A KB whose .gitignore lost the line gets it back, in a commit of its own; not while the
    # file holds work of the person's that the commit would take.
    (root / ".gitignore").write_text("*.log\n")
    refused = invoke_cli("init", root)
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: {root}/.gitignore has changes not committed, and init would commit it with the line '.slayer-kb/' "
        f"it adds: commit it yourself first (cd {root}; git add .gitignore; git commit), or add that line to it and "
        "commit it, then run init again.\n"))
    assert (root / ".gitignore").read_text() == "*.log\n"
    git(root, "commit", "-qam", "ignore logs only")
    again = invoke_cli("init", root, "--json")
    assert doc(again) == {"kb": str(root), "created": True}
    assert (root / ".gitignore").read_text() == "*.log\n.slayer-kb/\n"
    assert doc(invoke_cli("init", root, "--json")) == {"kb": str(root), "created": False}


def test_init_commits_no_gitignore_the_person_has_not_committed(invoke_cli: CliRunner, tmp_path: Path) -> None:
    """With no commit yet, init committed the person's .gitignore (untracked or only staged) with
    its line added, and put a plain file with a symlink's target's text in place of the link; a
    committed .gitignore deleted by hand came back as just '.slayer-kb/', its lines dropped; one
    with the line, never committed, made init say "already a knowledge base" of a KB whose clones
    would not ignore .slayer-kb/. Each is refused, naming the fix, and nothing changes."""
    staged = tmp_path / "staged"
    git(tmp_path, "init", "-q", "staged")
    (staged / ".gitignore").write_text("secrets.env\n")
    git(staged, "add", ".gitignore")
    refused = invoke_cli("init", staged)
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: {staged}/.gitignore is not committed, and init would commit it with the line '.slayer-kb/' it adds: "
        f"commit it yourself first (cd {staged}; git add .gitignore; git commit), or add that line to it and commit "
        "it, then run init again.\n"))
    assert git(staged, "status", "--porcelain") == "A  .gitignore\n"
    assert git(staged, "rev-list", "--all") == ""

    linked = tmp_path / "linked"
    linked.mkdir()
    (tmp_path / "shared-ignore").write_text("*.log\n")
    (linked / ".gitignore").symlink_to("../shared-ignore")
    refused = invoke_cli("init", linked)
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: {linked}/.gitignore is a symbolic link, which init does not replace, and the file it leads to lacks "
        f"the line '.slayer-kb/': add that line to that file yourself, commit it (cd {linked}; git init; git add "
        ".gitignore; git commit), then run init again.\n"))
    assert [p.name for p in linked.iterdir()] == [".gitignore"]
    assert os.readlink(linked / ".gitignore") == "../shared-ignore"

    lined = tmp_path / "lined"
    lined.mkdir()
    (lined / ".gitignore").write_text(".slayer-kb/\n")
    refused = invoke_cli("init", lined)
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", (
        f"Error: {lined}/.gitignore has the line '.slayer-kb/' but is not committed, so a clone of the knowledge base "
        "would not ignore .slayer-kb/: it is not a complete knowledge base until that file is committed. Commit it "
        f"(cd {lined}; git init; git add .gitignore; git commit), then run init again.\n"))
    assert [p.name for p in lined.iterdir()] == [".gitignore"]

    kb = tmp_path / "kb"
    invoke_cli("init", kb, check=True)
    (kb / ".gitignore").write_text("*.log\n.slayer-kb/\n")
    git(kb, "commit", "-qam", "ignore logs")
    (kb / ".gitignore").unlink()
    refused = invoke_cli("init", kb)
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", (
        f"Error: {kb}/.gitignore is deleted, and HEAD has it: init would commit a .gitignore of just the line "
        f"'.slayer-kb/', dropping the lines committed. Bring it back (cd {kb}; git checkout HEAD -- .gitignore), "
        "then run init again.\n"))
    assert git(kb, "log", "--format=%s") == "ignore logs\nkb: initialise knowledge base\n"
    assert git(kb, "status", "--porcelain") == " D .gitignore\n"


@pytest.mark.parametrize("mark", ["assume-unchanged", "skip-worktree"])
def test_init_takes_no_change_git_s_index_hides_in_a_marked_gitignore(invoke_cli: CliRunner, tmp_path: Path,
                                                                     mark: str) -> None:
    """init asked git status whether .gitignore held work not committed, which shows nothing of a
    file git's index marks: a line the person had not committed went into init's commit, and of a
    marked file holding HEAD's text, git's index kept the old version (a staged revert, or for
    skip-worktree a staged deletion). The first is refused with the fix; the second committed
    with git's index matching it, the mark kept."""
    kb = tmp_path / "kb"
    invoke_cli("init", kb, check=True)
    (kb / ".gitignore").write_text("*.log\n")
    git(kb, "commit", "-qam", "ignore logs only")
    git(kb, "update-index", f"--{mark}", ".gitignore")
    (kb / ".gitignore").write_text("*.log\nsecrets.env\n")
    refused = invoke_cli("init", kb)
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", (
        f"Error: .gitignore is marked {mark} in git's index, so git shows none of its changes, and this command would "
        f"rewrite it: slayer-kb never commits work you have not committed, and git's index would not take the commit, "
        f"so nothing was done. Clear the mark (git -C {kb} update-index --no-{mark} -- .gitignore), see what git "
        "status shows, then retry.\n"))
    assert git(kb, "log", "--format=%s") == "ignore logs only\nkb: initialise knowledge base\n"
    (kb / ".gitignore").write_text("*.log\n")
    made = invoke_cli("init", kb)
    assert (made.returncode, made.stdout, made.stderr) == (0, f"Initialised knowledge base in {kb}\n", "")
    assert git(kb, "show", "HEAD:.gitignore") == (kb / ".gitignore").read_text() == "*.log\n.slayer-kb/\n"
    assert git(kb, "status", "--porcelain") == ""
    assert git(kb, "diff", "--cached", "--name-only") == ""
    assert git(kb, "ls-files", "-v", ".gitignore") == f"{'h' if mark == 'assume-unchanged' else 'S'} .gitignore\n"


def test_init_example(invoke_cli: CliRunner, tmp_path: Path) -> None:
    doc(invoke_cli("init", tmp_path / "new", "--example", "--json"))
    assert len(list((tmp_path / "new" / "memories").glob("*.yaml"))) == EXAMPLE_MEMORIES


def test_validate_fmt_reindex(invoke_cli: CliRunner, shared_kb: Path) -> None:
    assert ok(invoke_cli, shared_kb, "validate") == {
        "ok": True, "checked": EXAMPLE_MEMORIES + EXAMPLE_SESSIONS, "problems": [], "reformatted": [], "warnings": [],
    }  # fmt: skip
    assert ok(invoke_cli, shared_kb, "fmt", "--check") == {
        "ok": True, "checked": EXAMPLE_MEMORIES + EXAMPLE_SESSIONS, "problems": [], "reformatted": [], "warnings": [],
    }  # fmt: skip
    assert ok(invoke_cli, shared_kb, "reindex") == {"indexed": EXAMPLE_MEMORIES, "memories": EXAMPLE_MEMORIES,
                                                    "soft_deleted": 0, "problems": [], "warnings": []}


def test_reindex_counts_the_memories_stats_counts_and_the_soft_deleted_apart(invoke_cli: CliRunner, kb: Path) -> None:
    """"Indexed 34 memories" after a soft forget, where stats and list said 33: the soft-deleted
    file was counted as a memory."""
    invoke_cli("--kb", kb, "forget", "2", "--soft", check=True)
    assert invoke_cli("--kb", kb, "stats", check=True).stdout.startswith(f"memories: {EXAMPLE_MEMORIES - 1}\n")
    shown = invoke_cli("--kb", kb, "reindex", check=True)
    assert (shown.stdout, shown.stderr) == (
        f"Indexed {EXAMPLE_MEMORIES - 1} memories (1 soft-deleted kept for history)\n", "")
    # indexed keeps its meaning (every file read): the counts beside it are new keys
    assert ok(invoke_cli, kb, "reindex") == {"indexed": EXAMPLE_MEMORIES, "memories": EXAMPLE_MEMORIES - 1,
                                             "soft_deleted": 1, "problems": [], "warnings": []}


def test_validate_and_fmt_report_problems(invoke_cli: CliRunner, kb: Path) -> None:
    path = kb / "memories" / "2.yaml"
    path.write_text(path.read_text().replace("entities:", "entitys:"))
    proc = invoke_cli("--kb", kb, "validate")
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"{path}:9: unknown key 'entitys' (allowed keys: title, type, learning, ")
    assert proc.stdout.endswith("\n1 problem in 1 file (40 files checked)\n")
    data = doc(invoke_cli("--kb", kb, "validate", "--json"), 1)
    assert data["ok"] is False and len(data["problems"]) >= 1
    path.write_text(path.read_text().replace("entitys:", "entities:").replace("created_at: '", 'created_at: "'))
    path.write_text(path.read_text().replace("Z'\n", 'Z"\n'))
    assert doc(invoke_cli("--kb", kb, "fmt", "--check", "--json"), 1)["reformatted"] != []
    fixed = ok(invoke_cli, kb, "fmt")
    assert fixed["ok"] is True and len(fixed["reformatted"]) == 1
    assert git(kb, "status", "--porcelain") == ""


def test_watch_and_mcp_help(invoke_cli: CliRunner) -> None:
    for command in ("watch", "mcp"):
        proc = invoke_cli(command, "--help")
        assert proc.returncode == 0 and "Example" in proc.stdout


# -- the error contract -------------------------------------------------------------------------


@pytest.mark.parametrize("json_first", [False, True], ids=["json-after", "json-before"])
def test_unknown_id(invoke_cli: CliRunner, shared_kb: Path, json_first: bool) -> None:
    args = ["--json", "get", "nope"] if json_first else ["get", "nope", "--json"]
    proc = invoke_cli("--kb", shared_kb, *args)
    assert proc.returncode == 1
    assert proc.stderr == "Error: No memory with id 'nope'.\n"
    assert doc(proc, 1) == {"error": {"type": "not_found", "message": "No memory with id 'nope'."}}


def test_unknown_id_human(invoke_cli: CliRunner, shared_kb: Path) -> None:
    proc = invoke_cli("--kb", shared_kb, "get", "nope")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "Error: No memory with id 'nope'.\n")


def test_unknown_entity_is_an_error(invoke_cli: CliRunner, shared_kb: Path) -> None:
    proc = invoke_cli("--kb", shared_kb, "save", "x", "-e", "nosuch.thing", "--json")
    message = "'nosuch' is neither a known datasource nor a saved model. (segment of 'nosuch.thing')."
    assert proc.stderr == f"Error: {message}\n"
    assert doc(proc, 1)["error"]["message"] == message


def test_an_expression_for_an_entity_is_told_the_option_that_takes_a_query(invoke_cli: CliRunner,
                                                                           shared_kb: Path) -> None:
    """It said "give the whole query as linked_entities", a parameter of the MCP tool, not of the CLI."""
    proc = invoke_cli("--kb", shared_kb, "save", "Margin", "-e", "sum(amount - cost)")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        "Error: 'sum(amount - cost)' is not a single aggregated column reference; only the `agg(column)` form names "
        "an entity. Name its columns one by one, or pass the whole SlayerQuery (--query; in the MCP tools, "
        "save_memory's linked_entities or search's query).\n"))


@pytest.mark.parametrize(
    "args", [("get", "1", "--bogus"), ("--bogus", "stats"), ("nosuch-command",), ("get",)],
    ids=["unknown-option", "unknown-global-option", "unknown-command", "missing-argument"],
)  # fmt: skip
def test_usage_errors_exit_2(invoke_cli: CliRunner, shared_kb: Path, args: tuple[str, ...]) -> None:
    proc = invoke_cli("--kb", shared_kb, *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Usage: slayer-kb" in proc.stderr and "Error: " in proc.stderr


@pytest.mark.parametrize("args, option, command, fix", [
    (("get", "1", "--kb", "kb"), "--kb", "get", "slayer-kb --kb DIR get ..."),
    (("save", "x", "--author=A <a@b.c>"), "--author", "save", "slayer-kb --author 'NAME <EMAIL>' save ..."),
    (("server", "status", "--kb", "kb"), "--kb", "server status", "slayer-kb --kb DIR server status ..."),
    (("stats", "--version"), "--version", "stats", "slayer-kb --version"),
])  # fmt: skip
def test_a_global_option_after_the_command_is_told_to_go_before_it(invoke_cli: CliRunner, args: tuple[str, ...],
                                                                    option: str, command: str, fix: str) -> None:
    """``slayer-kb get 1 --kb kb`` said only "No such option '--kb'", which every command lacks."""
    said = f"No such option '{option}'. {option} is a global option: give it before the command: {fix}"
    proc = invoke_cli(*args)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.endswith(f"\nError: {said}\n")
    asked = invoke_cli(*args, "--json")
    assert (asked.returncode, json.loads(asked.stdout)) == (2, {"error": {"type": "usage", "message": (
        f"{said}{'' if said.endswith('.') else '.'} Try 'slayer-kb {command} --help' for help.")}})


# -- help and completion --------------------------------------------------------------------------


def test_every_documented_command_exists() -> None:
    assert DOCUMENTED <= set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_help_has_an_example(name: str) -> None:
    # In process (the help text is static; 35 subprocesses would cost ~10 s): see also test_group_help.
    result = ClickRunner().invoke(cli, [name, "--help"], prog_name="slayer-kb")
    assert result.exit_code == 0, result.output
    assert f"Usage: slayer-kb {name} " in result.output
    assert "Example" in result.output


def test_every_command_that_prints_takes_json_after_it() -> None:
    """DESIGN: --json before or after the command (mcp serves, watch runs until stopped, server's
    subcommands take it)."""
    ctx = click.Context(cli, info_name="slayer-kb")
    lacking = [name for name in sorted(COMMANDS) if name not in ("mcp", "server", "watch")
               and "--json" not in {o for p in cli.get_command(ctx, name).params for o in p.opts}]
    assert lacking == []
    plain, flagged = (ClickRunner().invoke(cli, ["schema", *flag]) for flag in ([], ["--json"]))
    assert (flagged.exit_code, flagged.output) == (0, plain.output) and json.loads(plain.output)["$id"]


def test_help_lists_json_exactly_where_the_command_takes_it(invoke_cli: CliRunner, tmp_path: Path) -> None:
    """``mcp --help`` and ``watch --help`` listed ``--json  Print one JSON document on stdout.``,
    which both commands refuse (exit 2): help offers only what a command takes."""
    ctx = click.Context(cli, info_name="slayer-kb")
    lines = []
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        subcommands = command.list_commands(ctx) if isinstance(command, click.Group) else []
        lines += [(name, sub) for sub in subcommands] or [(name,)]
    listed, refused = set(), set()
    for line in lines:
        if "  --json  " in invoke_cli(*line, "--help", check=True).stdout:
            listed.add(line)
        # A KB that is not there: a command that takes --json stops at it (or at an argument
        # left out), one that refuses --json before it looks.
        run = invoke_cli("--kb", tmp_path / "none", *line, "--json", cwd=tmp_path)
        if "prints no JSON document" in run.stdout:
            refused.add(line)
    assert refused == {("mcp",), ("watch",)}
    assert listed == set(lines) - refused
    shown = invoke_cli("mcp", "--help", check=True).stdout
    assert shown.endswith("\nOptions:\n  -h, --help  Show this message and exit.\n")


def test_group_help(invoke_cli: CliRunner) -> None:
    proc = invoke_cli("--help")
    assert proc.returncode == 0 and "Example" in proc.stdout
    listed = {line.split()[0] for line in proc.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(COMMANDS)


def test_every_entry_point_lists_every_command() -> None:
    # The module itself too, not only the installed program: no command registers itself late.
    proc = subprocess.run([sys.executable, "-m", "slayer_kb.cli", "--help"], capture_output=True, text=True,
                          timeout=60, check=True)
    listed = {line.split()[0] for line in proc.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(COMMANDS) and len(listed) == 43


def test_a_mistyped_command_gets_the_close_names(invoke_cli: CliRunner) -> None:
    proc = invoke_cli("sear", "x")
    assert proc.returncode == 2
    assert "Error: No such command 'sear'. (Did you mean one of: 'schema', 'search', 'server'?)" in proc.stderr


def test_a_command_runs_without_importing_the_others(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from slayer_kb.cli import cli\n"
        "cli.main(['schema'], prog_name='slayer-kb', standalone_mode=False)\n"
        "print(sorted(m for m in sys.modules if m.startswith('slayer_kb.cli.')), file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == ("['slayer_kb.cli.catalog', 'slayer_kb.cli.common', 'slayer_kb.cli.plain', "
                                   "'slayer_kb.cli.repeats']")


def test_help_usage_errors_and_commands_without_a_kb_import_no_kb(tmp_path: Path) -> None:
    # The KB's modules (the index's Whoosh and numpy) are most of a process's start:
    # a command that opens no KB answers without them.
    probe = (
        "import json, sys\n"
        "from slayer_kb.cli import cli\n"
        "codes = []\n"
        "for argv in (['--help'], ['save', '--help'], ['get', '1', '--bogus'], ['get'], ['completion', 'bash'], ['nosuch']):\n"
        "    try:\n"
        "        cli.main(argv, prog_name='slayer-kb')\n"
        "    except SystemExit as exc:\n"
        "        codes.append(exc.code)\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('whoosh', 'numpy', 'git', 'jsonschema', 'mcp')\n"
        "               or m in ('slayer_kb.kb', 'slayer_kb.search', 'slayer_kb.transaction'))\n"
        "open('out.json', 'w').write(json.dumps([codes, heavy]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.split("\n\n") == [
        "Usage: slayer-kb get [OPTIONS] ID\nTry 'slayer-kb get --help' for help.",
        "Error: No such option '--bogus'.\nUsage: slayer-kb get [OPTIONS] ID\nTry 'slayer-kb get --help' for help.",
        "Error: Missing argument 'ID'.\nUsage: slayer-kb [OPTIONS] COMMAND [ARGS]...\nTry 'slayer-kb --help' for help.",
        "Error: No such command 'nosuch'.\n",
    ]
    assert json.loads((tmp_path / "out.json").read_text()) == [[0, 0, 2, 2, 0, 2], []]


def test_commands_that_only_read_files_import_no_search_stack(tmp_path: Path) -> None:
    # The index (Whoosh, numpy) is made on first use (Context.index): a command that reads the
    # files answers without it, in a third of the CPU time; the first search imports it. A
    # command that only reads takes no lock, so imports no filelock (about 15 ms of a start);
    # the first search builds the index under the lock. Nor sqlite3 (the sentence cache's, which
    # only a search opens) or socket (a lease's host name, only a save takes one), nor
    # concurrent.futures (a pool of threads, for many files at once). Nor does any command but
    # one that checks files against their schema (validate, last here) import jsonschema (0.1 s
    # of CPU a process).
    kb = make_example_kb(tmp_path / "kb")
    commands = [["get", "1"], ["show", "1"], ["log", "1"], ["sessions"], ["search", "refunds"], ["validate"]]
    heavy = {"whoosh", "numpy", "filelock", "sqlite3", "socket", "concurrent", "jsonschema"}
    proc, ran = imports_of_commands(tmp_path, kb, commands, heavy)
    assert ran == [
        ["get", 0, []], ["show", 0, []], ["log", 0, []], ["sessions", 0, []],
        ["search", 0, ["concurrent", "filelock", "numpy", "socket", "sqlite3", "whoosh"]],
        ["validate", 0, ["concurrent", "filelock", "jsonschema", "numpy", "socket", "sqlite3", "whoosh"]],
    ]
    first, *_ = json.JSONDecoder().raw_decode(proc.stdout)
    assert first["id"] == "1" and first["learning"].startswith("shop.orders.amount is the order total in EUR")


def test_a_check_that_finds_the_files_as_indexed_loads_no_model(tmp_path: Path) -> None:
    # A copied KB's first freshness check re-reads its files (new inodes) and finds the bytes
    # the index holds: nothing to embed, so the word embedder's model (tokenizers and its 1.8 MB
    # table, about 0.1 s of CPU) is not loaded, as a process a test or a server starts on a copy
    # paid; a search loads it for its question. Nor does opening the index import what Whoosh's
    # modules import and no search uses (search/whoosh_start.py): asyncio (the cached_property
    # package) and urllib.request with http, email and ssl (whoosh.compat).
    kb = make_indexed_example_kb(tmp_path / "kb")
    unused = {"asyncio", "cached_property", "http", "email", "ssl"}
    _proc, ran = imports_of_commands(tmp_path, kb, [["list"], ["search", "refunds"]], {"tokenizers", *unused})
    assert ran == [["list", 0, []], ["search", 0, ["tokenizers"]]]


def test_a_command_imports_only_the_operations_and_results_it_runs(tmp_path: Path) -> None:
    # With the server off every command is a process of its own (and the tests start hundreds):
    # a get imports no operation, no catalog, no transaction and no command's results (the
    # dataclasses of core/results.py and core/outcomes.py); a show adds its history read, not
    # the checks of a review; a save its own operation and the catalog it resolves against; a
    # list the search's. No other command's operation, and no lease's choice (no remote here).
    kb = make_indexed_example_kb(tmp_path / "kb")
    watched = {"slayer_kb.ops.observations", "slayer_kb.ops.finding", "slayer_kb.ops.changes",
               "slayer_kb.ops.history", "slayer_kb.ops.validate", "slayer_kb.ops.digest", "slayer_kb.ops.capture",
               "slayer_kb.ops.teamchecks", "slayer_kb.ops.topickeys", "slayer_kb.ops.plainmerge",
               "slayer_kb.catalog.catalog", "slayer_kb.catalog.refs", "slayer_kb.core.outcomes",
               "slayer_kb.core.review", "slayer_kb.core.results", "slayer_kb.transaction", "slayer_kb.store.leasepick",
               "slayer_kb.api.history", "slayer_kb.api.team", "slayer_kb.api.interchange"}
    commands = [["get", "1"], ["show", "1"], ["save", "Refunds are counted net.", "-e", "orders.amount"], ["list"]]
    proc, ran = imports_of_commands(tmp_path, kb, commands, watched)
    before: set[str] = set()
    added = []
    for name, code, imported in ran:  # each command's own: the process keeps what those before imported
        added.append([name, code, sorted(set(imported) - before)])
        before |= set(imported)
    assert added == [
        ["get", 0, []],
        ["show", 0, ["slayer_kb.api.history", "slayer_kb.core.outcomes", "slayer_kb.core.results", "slayer_kb.core.review",
                     "slayer_kb.ops.history", "slayer_kb.transaction"]],
        ["save", 0, ["slayer_kb.catalog.catalog", "slayer_kb.catalog.refs", "slayer_kb.ops.observations"]],
        ["list", 0, ["slayer_kb.ops.finding"]],
    ]
    first, *_ = json.JSONDecoder().raw_decode(proc.stdout)
    assert first["id"] == "1" and first["learning"].startswith("shop.orders.amount is the order total in EUR")


def test_a_save_and_an_update_import_no_masked_arrays(tmp_path: Path) -> None:
    # numpy.ma is 8-16 ms of a writing command's start, and np.unique's
    # check for a masked array imported it for each text's distinct token ids.
    kb = make_example_kb(tmp_path / "kb")
    commands = [["save", "A note on refunds counted net.", "-e", "orders.amount"], ["update", "1", "--content", "Gross."]]
    _proc, ran = imports_of_commands(tmp_path, kb, commands, {"numpy", "numpy.ma"})
    assert ran == [["save", 0, ["numpy"]], ["update", 0, ["numpy"]]]


def imports_of_commands(tmp_path: Path, kb: Path, commands: list[list[str]],
                        watched: set[str]) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    """Run ``commands`` (with ``--json``) one after another in one fresh process on ``kb``: the
    process, and for each command its name, exit code and which of the ``watched`` modules (or
    packages, any module of theirs) the process had imported by its end."""
    probe = (
        "import json, sys\n"
        "from slayer_kb.cli import cli\n"
        "ran = []\n"
        f"for argv in {commands!r}:\n"
        "    try:\n"
        f"        cli.main(['--kb', {str(kb)!r}, '--json', *argv], prog_name='slayer-kb')\n"
        "    except SystemExit as exc:\n"
        f"        ran.append([argv[0], exc.code, sorted(w for w in {sorted(watched)!r} if any(m == w or m.startswith(w + '.') for m in sys.modules))])\n"
        "open('out.json', 'w').write(json.dumps(ran))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads((tmp_path / "out.json").read_text())


def test_completion_in_process() -> None:
    runner = ClickRunner()
    for shell in ("bash", "zsh", "fish"):
        result = runner.invoke(cli, ["completion", shell], prog_name="slayer-kb")
        assert result.exit_code == 0, result.output
        assert "_SLAYER_KB_COMPLETE" in result.output
    assert "Example" in runner.invoke(cli, ["completion", "--help"], prog_name="slayer-kb").output
    assert runner.invoke(cli, ["completion", "tcsh"], prog_name="slayer-kb").exit_code == 2
    data = json.loads(runner.invoke(cli, ["completion", "bash", "--json"], prog_name="slayer-kb").output)
    assert data["shell"] == "bash" and "_SLAYER_KB_COMPLETE=bash_complete" in data["script"]
    env = {"_SLAYER_KB_COMPLETE": "bash_complete", "COMP_WORDS": "slayer-kb ge", "COMP_CWORD": "1"}
    result = runner.invoke(cli, [], prog_name="slayer-kb", env=env)
    assert result.output.splitlines() == ["plain,get"]
    # Words typed so far that give an option twice are no error while a word is completed.
    for words in ("slayer-kb save --id a --id b --sc", "slayer-kb --kb a --kb b sav", "slayer-kb rebase --continue --abort --"):
        env = {"_SLAYER_KB_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
        result = runner.invoke(cli, [], prog_name="slayer-kb", env=env)
        assert (result.exit_code, result.exception) == (0, None), words


def test_completion_subprocess(run_cli: CliRunner) -> None:
    script = run_cli("completion", "bash")
    assert script.returncode == 0 and "_SLAYER_KB_COMPLETE" in script.stdout
    assert "Example" in run_cli("completion", "--help").stdout


def test_completion_protocol_subprocess(run_cli: CliRunner) -> None:
    """click's own env-var protocol, which the scripts call, works without the command too."""
    env = {"_SLAYER_KB_COMPLETE": "bash_complete", "COMP_WORDS": "slayer-kb ge", "COMP_CWORD": "1"}
    proc = run_cli(env=env)
    assert (proc.returncode, proc.stdout) == (0, "plain,get\n")
    env = {"_SLAYER_KB_COMPLETE": "bash_complete", "COMP_WORDS": "slayer-kb delete-", "COMP_CWORD": "1"}
    assert run_cli(env=env).stdout.split() == ["plain,delete-datasource", "plain,delete-leaf", "plain,delete-model"]


def test_plain_save_without_links_says_what_to_give(invoke_cli: CliRunner, tmp_path: Path) -> None:
    root = tmp_path / "kb"
    invoke_cli("init", root, check=True)
    proc = invoke_cli("--kb", root, "save", "a note")
    assert (proc.returncode, proc.stderr.split("\n\n")[-1]) == (
        2,
        "Error: Nothing to link: give entity references with -e REF (e.g. -e orders.amount) or a --query, "
        "or save an observation with --title.\n",
    )
