"""What agents and reviewers read back (issue 30): errors that name the fix, in the same words
from ``save`` and ``validate``; every problem of a file in one run; plurals right."""

from __future__ import annotations

import json
from typing import Any

import click
import yaml
from mcp import ClientSession

from slayer_kb import KnowledgeBase
from slayer_kb.cli import cli
from slayer_kb.mcp import tools
from testing import commit_all, git
from testing.mcp import error, with_server_in_process

CREATED = "created_at: '2026-01-01T00:00:00Z'\n"
# Bare `orders` means shop.orders (first on the priority list); order_date is a column of wh.orders.
NOT_IN_SHOP = (
    "Unknown field 'order_date' on model 'orders' (datasource 'shop'): no column, measure or aggregation "
    "of that name, and 'order_date' is not a join target on model 'orders'. Did you mean: wh.orders.order_date?"
)


def test_save_names_where_it_looked_and_what_exists(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    proc = invoke_cli("--kb", catalog_kb.root, "save", "Order dates are UTC", "-e", "orders.order_date")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == f"Error: {NOT_IN_SHOP}\n"
    proc = invoke_cli("--kb", catalog_kb.root, "save", "Amounts are in cents", "-e", "shop.orders.amout")
    assert proc.returncode == 1
    assert proc.stderr == (
        "Error: Unknown field 'amout' on model 'orders' (datasource 'shop'): no column, measure or "
        "aggregation of that name, and 'amout' is not a join target on model 'orders'. "
        "Did you mean: shop.orders.amount, shop.orders.amount_wavg?\n"
    )
    proc = invoke_cli("--kb", catalog_kb.root, "save", "Amounts are in cents", "-e", "ordrs.amount")
    assert proc.stderr == (
        "Error: 'ordrs' is neither a known datasource nor a saved model. (segment of 'ordrs.amount'). "
        "Did you mean: shop.orders, wh.orders?\n"
    )


def test_save_of_an_empty_learning_says_so(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    proc = invoke_cli("--kb", catalog_kb.root, "save", "")
    assert (proc.returncode, proc.stderr) == (
        1, "Error: learning is empty: write what was learned (it is required and must not be blank).\n"
    )


def test_validate_gives_saves_words_and_no_prune_for_a_typo(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    (catalog_kb.root / "memories" / "7.yaml").write_text(
        f"learning: Order dates are UTC.\nentities:\n- orders.order_date\n{CREATED}"
    )
    proc = invoke_cli("validate", "memories/7.yaml", cwd=catalog_kb.root)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"memories/7.yaml:3: entity 'orders.order_date' does not resolve: {NOT_IN_SHOP} "
        "(correct it with 'slayer-kb edit 7')",
        "1 problem in 1 file (1 file checked)",
    ]
    # Typed from elsewhere (the KB given by --kb), the fix names the KB, as the file does.
    kb = catalog_kb.root.name
    proc = invoke_cli("--kb", kb, "validate", cwd=catalog_kb.root.parent)
    assert proc.stdout.splitlines()[0].endswith(f"(correct it with 'slayer-kb --kb {kb} edit 7')")


def test_validate_reports_schema_entity_and_query_problems_in_one_run(
    catalog_kb: KnowledgeBase, invoke_cli
) -> None:
    # An unknown key, no created_at, an entity that does not resolve and a stale query: all at once.
    (catalog_kb.root / "memories" / "8.yaml").write_text(
        "learning: Paid revenue.\ncolour: red\nentities:\n- shop.orders.nope\n"
        "query:\n  source_model: orders\n  measures: [sum(ghost)]\n"
    )
    proc = invoke_cli("validate", "memories/8.yaml", cwd=catalog_kb.root)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == "memories/8.yaml:1: missing required key 'created_at' (add created_at: 'YYYY-MM-DDTHH:MM:SSZ')"
    assert lines[1].startswith("memories/8.yaml:2: unknown key 'colour' (allowed keys: ")
    assert lines[2].startswith("memories/8.yaml:4: entity 'shop.orders.nope' does not resolve: ")
    assert lines[3].startswith("memories/8.yaml:5: attached query has stale references (measures[0] ")
    assert lines[4:] == ["4 problems in 1 file (1 file checked)"]


def test_a_clean_run_counts_in_the_singular(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    (catalog_kb.root / "memories" / "9.yaml").write_text(
        f"learning: Fine.\nentities:\n- shop.orders.amount\n{CREATED}"
    )
    commit_all(catalog_kb.root)
    proc = invoke_cli("validate", "memories/9.yaml", cwd=catalog_kb.root)
    assert (proc.returncode, proc.stdout) == (0, "Checked 1 file: no problems.\n")


def test_the_review_comment_lists_every_problem_of_a_file(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    kb.save_memory("Uses qty", ["orders.qty"])
    base = git(kb.root, "rev-parse", "HEAD").strip()
    (kb.root / "memories" / "9.yaml").write_text(
        "learning: hand written\ncolour: red\nentities:\n- shop.orders.nope\n"
    )
    commit_all(kb.root, "hand")
    problems = kb.history.review(base).problems
    assert problems[0] == "memories/9.yaml:1: missing required key 'created_at' (add created_at: 'YYYY-MM-DDTHH:MM:SSZ')"
    assert problems[1].startswith("memories/9.yaml:2: unknown key 'colour' (allowed keys: ")
    assert problems[2].startswith("memories/9.yaml:4: entity 'shop.orders.nope' does not resolve: Unknown field 'nope' ")
    assert len(problems) == 3
    markdown = kb.history.review(base).markdown()
    assert all(f"- {p[:40]}" in markdown.replace("\\", "") for p in problems)


# -- MCP: structured content beside the text, advice in tools ---------------------------------


def test_an_agent_reads_what_mem_save_did_from_structured_content(catalog_kb: KnowledgeBase) -> None:
    async def saves(session: ClientSession) -> list[Any]:
        first = await session.call_tool("mem_save", {"title": "Retry budget", "content": "Three retries",
                                                     "type": "decision", "topic_key": "architecture/retries"})
        revised = await session.call_tool("mem_save", {"title": "Retry budget", "content": "Five retries",
                                                       "type": "decision", "topic_key": "architecture/retries"})
        other = await session.call_tool("mem_save", {"title": "Cache TTL", "content": "One hour", "type": "config"})
        again = await session.call_tool("mem_save", {"title": "Cache TTL", "content": "One hour", "type": "config"})
        return [first, revised, other, again]

    first, revised, other, again = with_server_in_process(catalog_kb.root, saves)
    # The text is Engram's, unchanged; the id and the action are in the structured content.
    assert first.content[0].text == 'Memory saved: "Retry budget" (decision)'
    assert revised.content[0].text == 'Memory saved: "Retry budget" (decision)'
    assert [(r.structured_content["memory_id"], r.structured_content["action"]) for r in (first, revised, other, again)] == [
        ("1", "created"), ("1", "revised"), ("2", "created"), ("2", "duplicate")]
    assert first.structured_content["warnings"] == [] and not first.is_error


def test_every_write_tool_says_the_id_and_the_action(catalog_kb: KnowledgeBase) -> None:
    async def script(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, arguments in (
            ("save_memory", {"learning": "Amounts are in cents", "linked_entities": ["orders.amount"]}),
            ("mem_update", {"id": "1", "title": "Cents"}),
            ("mem_delete", {"id": "1"}),
            ("mem_restore", {"id": "1"}),
            ("forget_memory", {"id": "1"}),
        ):
            result = await session.call_tool(name, arguments)
            assert not result.is_error, result.content[0].text
            out[name] = (result.content[0].text, result.structured_content)
        return out

    out = with_server_in_process(catalog_kb.root, script)
    assert out["save_memory"][1]["memory_id"] == "1" and out["save_memory"][1]["action"] == "created"
    assert out["mem_update"][0] == 'Memory updated: #1 "Cents" (none, scope=project)'
    assert (out["mem_update"][1]["id"], out["mem_update"][1]["action"], out["mem_update"][1]["title"]) == (
        "1", "updated", "Cents")
    assert out["mem_delete"] == ("Memory #1 soft-deleted", {
        "deleted_id": "1", "action": "soft-deleted", "stripped_from": [], "soft": True,
        "result": "Memory #1 soft-deleted"})
    assert out["mem_restore"][0] == 'Memory restored: #1 "Cents" (none, scope=project)'
    assert (out["mem_restore"][1]["action"], out["mem_restore"][1]["deleted_at"]) == ("restored", None)
    # The seeds' output is one field, result (FastMCP's wrapped reply text), beside ours.
    assert out["forget_memory"][1] == {"deleted_id": "1", "action": "forgotten", "stripped_from": [], "soft": False,
                                       "result": '{\n  "deleted_id": "1",\n  "stripped_from": []\n}'}
    assert all(text == structured["result"] for text, structured in out.values())


def test_advice_for_a_deleted_memory_names_the_tool_or_the_command(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    memory_id = catalog_kb.save_memory("Amounts are in cents", ["orders.amount"]).memory_id
    catalog_kb.forget(memory_id, soft=True)
    deleted_at = catalog_kb.get(memory_id, include_deleted=True).to_dict()["deleted_at"]

    async def script(session: ClientSession) -> list[str]:
        return [await error(session, "mem_get_observation", id=memory_id),
                await error(session, "mem_update", id=memory_id, title="x")]

    said = f"Memory '{memory_id}' was deleted at {deleted_at}; bring it back with"
    assert with_server_in_process(catalog_kb.root, script) == [f"{said} mem_restore(id: {memory_id})."] * 2
    proc = invoke_cli("--kb", catalog_kb.root, "get", memory_id)
    assert proc.stderr == f"Error: {said} 'slayer-kb --kb {catalog_kb.root} restore {memory_id}'.\n"


def test_a_soft_delete_of_a_deleted_memory_names_both_ways_on(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """It said "bring it back with restore" to someone deleting: the fix for a delete is the hard one."""
    memory_id = catalog_kb.save_memory("Amounts are in cents", ["orders.amount"]).memory_id
    catalog_kb.forget(memory_id, soft=True)
    deleted_at = catalog_kb.get(memory_id, include_deleted=True).to_dict()["deleted_at"]
    said = f"Memory '{memory_id}' is already deleted (at {deleted_at}):"
    proc = invoke_cli("--kb", catalog_kb.root, "forget", memory_id, "--soft")
    assert (proc.returncode, proc.stderr) == (1, (
        f"Error: {said} 'slayer-kb --kb {catalog_kb.root} forget {memory_id}' without --soft removes it for good, "
        f"'slayer-kb --kb {catalog_kb.root} restore {memory_id}' brings it back.\n"))
    reply = tools.call_tool(catalog_kb, "mem_delete", {"id": memory_id})
    assert (reply.is_error, reply.text) == (True, (
        f"{said} mem_delete(id: {memory_id}, hard_delete: true) removes it for good, mem_restore(id: {memory_id}) "
        "brings it back."))


def test_mem_context_for_a_project_no_memory_has_says_so(catalog_kb: KnowledgeBase) -> None:
    """A misspelt project gave Engram's empty digest alone; mem_search names the filter."""
    catalog_kb.save_observation("Retries", "Three.", project="api")
    said = "No memory has project 'apii'; check the name, or call mem_context without it."
    reply = tools.call_tool(catalog_kb, "mem_context", {"project": "apii"})
    assert (reply.is_error, reply.text) == (False, f"No previous session memories found.\nwarning: {said}")
    assert reply.data == {"text": "No previous session memories found.\n", "stats": None, "warnings": [said]}
    assert "warning" not in tools.call_tool(catalog_kb, "mem_context", {"project": "api"}).text


def test_a_restore_of_a_live_memory_names_what_does_bring_a_version_back(catalog_kb: KnowledgeBase,
                                                                         invoke_cli) -> None:
    memory_id = catalog_kb.save_memory("Amounts are in cents", ["orders.amount"]).memory_id
    proc = invoke_cli("--kb", catalog_kb.root, "restore", memory_id)
    assert (proc.returncode, proc.stderr) == (1, (
        f"Error: Memory '{memory_id}' is not deleted; nothing to restore. An earlier version comes back with "
        f"'slayer-kb --kb {catalog_kb.root} restore {memory_id} --rev REV' ('slayer-kb --kb {catalog_kb.root} log "
        f"{memory_id}' lists them).\n"))
    reply = tools.call_tool(catalog_kb, "mem_restore", {"id": memory_id})
    assert (reply.is_error, reply.text) == (True, (
        f"Memory '{memory_id}' is not deleted; nothing to restore. mem_update changes a live memory."))


def test_an_update_of_nothing_names_the_options_or_parameters_there_are(catalog_kb: KnowledgeBase,
                                                                        invoke_cli) -> None:
    """One message named the fields of the API (learning/content, topic_key, entities) to both: the
    CLI has options for them, and mem_update has no description nor entities."""
    memory_id = catalog_kb.save_memory("Amounts are in cents", ["orders.amount"]).memory_id
    proc = invoke_cli("--kb", catalog_kb.root, "update", memory_id)
    assert (proc.returncode, proc.stderr.split("\n\n")[-1]) == (2, (
        "Error: Nothing to update: give at least one of --title, --learning, --type, --description, --project, "
        "--scope, --topic-key, -e.\n"))
    reply = tools.call_tool(catalog_kb, "mem_update", {"id": memory_id})
    assert (reply.is_error, reply.text) == (True, (
        "Nothing to update: give at least one of title, content, type, project, scope, topic_key."))


def test_an_update_that_changes_nothing_commits_nothing_and_says_so(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """Fields that hold what the memory holds already made a commit that moved only updated_at:
    now no commit, and the command (text and --json) and mem_update say so, exit 0. A real
    change still makes one commit."""
    root = catalog_kb.root
    memory_id = catalog_kb.save_observation("Cents", "Amounts are in cents", type="decision").memory_id
    head = git(root, "rev-parse", "HEAD").strip()
    same = ("update", memory_id, "--title", "Cents", "--type", "Decision", "--scope", "project")
    proc = invoke_cli("--kb", root, *same)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, f"Memory {memory_id} already holds these values; nothing to commit.\n", "")
    data = json.loads(invoke_cli("--kb", root, *same, "--json", check=True).stdout)
    assert (data["action"], data["title"], data["updated_at"], data["revision_count"]) == ("unchanged", "Cents", None, 1)

    async def script(session: ClientSession) -> tuple[str, dict[str, Any], str]:
        described = next(tool.description for tool in (await session.list_tools()).tools if tool.name == "mem_update")
        result = await session.call_tool("mem_update", {"id": memory_id, "content": "Amounts are in cents"})
        assert not result.is_error, result.content[0].text
        return result.content[0].text, result.structured_content, described

    text, structured, described = with_server_in_process(root, script)
    assert described.endswith("Values the memory holds already change nothing: no commit, and the reply is Memory "
                              'updated: #ID "TITLE" (TYPE, scope=SCOPE): unchanged, it already holds these values; '
                              "nothing to commit.")
    # Engram's prefix, which clients match, then what happened.
    assert text == (f'Memory updated: #{memory_id} "Cents" (decision, scope=project): unchanged, it already holds '
                    "these values; nothing to commit.")
    assert (structured["action"], structured["updated_at"]) == ("unchanged", None)
    assert git(root, "rev-parse", "HEAD").strip() == head
    # The same text with another type: a commit, and a revision (Engram's: one per update made).
    data = json.loads(invoke_cli("--kb", root, "update", memory_id, "--learning", "Amounts are in cents", "--type",
                                 "bugfix", "--json", check=True).stdout)
    assert (data["action"], data["type"], data["revision_count"]) == ("updated", "bugfix", 2)
    assert invoke_cli("--kb", root, "update", memory_id, "--title", "Amounts in cents", check=True).stdout == (
        f"Updated memory {memory_id}\n")
    assert git(root, "log", "--format=%s", f"{head}..HEAD") == (
        f"memory: update {memory_id} (title)\nmemory: update {memory_id} (learning, type)\n")
    assert json.loads(invoke_cli("--kb", root, "get", memory_id, "--json", check=True).stdout)["revision_count"] == 3


def test_an_update_giving_back_the_text_held_commits_nothing(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """The learning a file holds ends in a line break (``learning: |``, as ``save -`` keeps it); an
    update trimmed the text it was given, so the same text given back (``get --json``'s, or
    mem_get_observation's, trimmed) was a change: a commit writing ``|-`` and a revision more."""
    root = catalog_kb.root
    text = "Amounts are in cents.\nRefunds are negative rows.\n"
    memory_id = json.loads(invoke_cli("--kb", root, "save", "-", "-e", "orders.amount", "--json", input=text,
                                      check=True).stdout)["memory_id"]
    path = root / "memories" / f"{memory_id}.yaml"
    held, head = path.read_bytes(), git(root, "rev-parse", "HEAD")
    assert b"learning: |\n" in held
    learning = json.loads(invoke_cli("--kb", root, "get", memory_id, "--json", check=True).stdout)["learning"]
    assert learning == text
    proc = invoke_cli("--kb", root, "update", memory_id, "--learning", "-", input=learning)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, f"Memory {memory_id} already holds these values; nothing to commit.\n", "")
    shown = tools.call_tool(catalog_kb, "mem_get_observation", {"id": memory_id}).text.split("\n")
    reply = tools.call_tool(catalog_kb, "mem_update", {"id": memory_id, "content": "\n".join(shown[1:3])})
    assert reply.text == (f'Memory updated: #{memory_id} "Amounts are in cents. Refunds are negative rows." (none, '
                          "scope=project): unchanged, it already holds these values; nothing to commit.")
    assert (path.read_bytes(), git(root, "rev-parse", "HEAD")) == (held, head)
    # The same text with a type changed: one commit, the text as it was.
    invoke_cli("--kb", root, "update", memory_id, "--learning", "-", "--type", "decision", input=learning, check=True)
    assert git(root, "log", "--format=%s", f"{head.strip()}..HEAD") == f"memory: update {memory_id} (learning, type)\n"
    data = json.loads(invoke_cli("--kb", root, "get", memory_id, "--json", check=True).stdout)
    assert (data["learning"], data["type"]) == (text, "decision")
    # A real change of the text: one commit more, a note's text kept as given (as its save keeps it).
    invoke_cli("--kb", root, "update", memory_id, "--learning", "Amounts are in euros.\n", check=True)
    assert json.loads(invoke_cli("--kb", root, "get", memory_id, "--json", check=True).stdout)["learning"] == (
        "Amounts are in euros.\n")
    assert len(git(root, "log", "--format=%s", f"{head.strip()}..HEAD").splitlines()) == 2


def test_a_save_by_id_of_what_the_memory_holds_commits_nothing(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """SLayer's save_memory replaces an existing id whole; given what the memory holds already, it
    made a commit that moved only updated_at. Now none, with SLayer's reply as ever ("replaced")."""
    root = catalog_kb.root
    save = ("--kb", root, "save", "Amounts are in cents", "-e", "orders.amount", "--id", "kb.cents")
    invoke_cli(*save, check=True)
    head = git(root, "rev-parse", "HEAD")
    proc = invoke_cli(*save)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, "Saved memory kb.cents (replaced): it already held this; nothing to commit\n"
           "  entities: shop.orders.amount\n", "")
    assert json.loads(invoke_cli(*save, "--json", check=True).stdout)["action"] == "replaced"
    reply = tools.call_tool(catalog_kb, "save_memory", {"id": "kb.cents", "learning": "Amounts are in cents",
                                                        "linked_entities": ["orders.amount"]})
    assert json.loads(reply.text) == {"memory_id": "kb.cents", "resolved_entities": ["shop.orders.amount"],
                                      "warnings": [], "action": "replaced"}
    assert git(root, "rev-parse", "HEAD") == head
    # A real change commits, and the memory it leaves (updated_at set) given again commits nothing.
    changed = ("--kb", root, "save", "Amounts are in euros", "-e", "orders.amount", "--id", "kb.cents")
    assert invoke_cli(*changed, check=True).stdout == "Saved memory kb.cents (replaced)\n  entities: shop.orders.amount\n"
    assert invoke_cli(*changed, check=True).stdout.startswith("Saved memory kb.cents (replaced): it already held")
    assert git(root, "log", "--format=%s", f"{head.strip()}..HEAD") == "memory: save kb.cents\n"


def test_a_search_for_a_soft_deleted_memory_says_so_and_how_to_restore_it(catalog_kb: KnowledgeBase,
                                                                          invoke_cli) -> None:
    """``-e memory:X`` (or ``memory:X`` in the question) with X forgotten but restorable: the
    memories linking to X are still found, and the answer says why X is not among them."""
    memory_id = catalog_kb.save_memory("Amounts are in cents", ["orders.amount"]).memory_id
    linking = catalog_kb.save_memory("Divide by 100 for euros", ["orders.amount", f"memory:{memory_id}"]).memory_id
    catalog_kb.forget(memory_id, soft=True)
    deleted_at = catalog_kb.get(memory_id, include_deleted=True).to_dict()["deleted_at"]
    # Run from elsewhere with --kb, the fix names the KB, so that it runs where it is shown.
    said = (f"memory:{memory_id} names a memory deleted at {deleted_at}, which no search or read shows: bring it "
            f"back with 'slayer-kb --kb {catalog_kb.root} restore {memory_id}' (MCP: mem_restore).")
    proc = invoke_cli("--kb", catalog_kb.root, "search", "-e", f"memory:{memory_id}")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith(f"Memories:\n  [{linking}] Divide by 100 for euros\n")
    assert proc.stdout.endswith(f"\nwarning: {said}\n")
    data = json.loads(invoke_cli("--kb", catalog_kb.root, "search", f"what is memory:{memory_id}", "--json").stdout)
    assert data["warnings"] == [said]
    # Named twice, by the question and by -e, it is told once (as a link to no memory is).
    both = json.loads(invoke_cli("--kb", catalog_kb.root, "search", f"what is memory:{memory_id}", "-e",
                                 f"memory:{memory_id}", "-e", "memory:nope", "--json").stdout)
    assert both["warnings"] == ["entity 'memory:nope' dropped: No memory with id 'nope'.", said]
    # Its id as the whole question, which puts a live memory first, says so too.
    alone = json.loads(invoke_cli("--kb", catalog_kb.root, "search", f" {memory_id} ", "--json").stdout)
    assert (alone["memories"], alone["warnings"]) == ([], [said])
    # A save that links it is told too (the link is kept: a restore brings the memory back).
    saved = json.loads(invoke_cli("--kb", catalog_kb.root, "save", "Cents, again", "-e", f"memory:{memory_id}",
                                  "--json").stdout)
    assert (saved["resolved_entities"], saved["warnings"]) == ([f"memory:{memory_id}"], [said])


def test_a_topic_key_save_again_is_not_told_of_a_deleted_link_it_holds(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """The revise of a topic key's memory warned of its link to a forgotten memory at every save, as
    if given anew; update and save --id of a memory keep quiet about a link it holds already."""
    memory_id = catalog_kb.save_memory("Retries back off", ["orders.amount"]).memory_id
    catalog_kb.forget(memory_id, soft=True)
    deleted_at = catalog_kb.get(memory_id, include_deleted=True).to_dict()["deleted_at"]
    # Run from elsewhere with --kb, the fix names the KB, so that it runs where it is shown.
    said = (f"memory:{memory_id} names a memory deleted at {deleted_at}, which no search or read shows: bring it "
            f"back with 'slayer-kb --kb {catalog_kb.root} restore {memory_id}' (MCP: mem_restore).")
    save = ("save", "Retry budget is N attempts", "--project", "api", "--topic-key", "decision/retry",
            "-e", f"memory:{memory_id}", "--json")
    first = json.loads(invoke_cli("--kb", catalog_kb.root, *save, "--title", "Retry budget").stdout)
    assert (first["action"], first["warnings"]) == ("created", [said])  # the link is new: told
    again = json.loads(invoke_cli("--kb", catalog_kb.root, *save, "--title", "Retry budget").stdout)
    assert (again["action"], again["memory_id"], again["warnings"]) == ("revised", first["memory_id"], [])
    untitled = json.loads(invoke_cli("--kb", catalog_kb.root, *save).stdout)  # SLayer's save, the same upsert
    assert (untitled["action"], untitled["memory_id"], untitled["warnings"]) == ("revised", first["memory_id"], [])


def test_ending_a_session_never_started_is_consistent_with_engram(catalog_kb: KnowledgeBase) -> None:
    # Engram's mem_save_prompt makes a session it does not know, and its mem_session_end accepts
    # one (it updates no row); here both keep what they were given.
    async def script(session: ClientSession) -> list[Any]:
        prompt = await session.call_tool("mem_save_prompt", {"content": "Why?", "session_id": "ses-a"})
        end = await session.call_tool("mem_session_end", {"id": "ses-b", "summary": "Done"})
        return [prompt, end]

    prompt, end = with_server_in_process(catalog_kb.root, script)
    assert not prompt.is_error and prompt.structured_content["session"]["id"] == "ses-a"
    assert not end.is_error
    assert end.content[0].text == (
        'Session "ses-b" completed\n'
        "warning: session 'ses-b' was never started; it is recorded as started and ended now"
    )
    assert (end.structured_content["action"], end.structured_content["session"]["summary"]) == ("ended", "Done")
    assert (catalog_kb.root / "sessions" / "ses-b.yaml").is_file()


# -- every option documented -----------------------------------------------------------------


def _commands() -> list[tuple[str, click.Command]]:
    """Every command of click's tree, with its path (``slayer-kb``, ``slayer-kb save``, ...)."""
    found: list[tuple[str, click.Command]] = []
    pending: list[tuple[str, click.Command]] = [("slayer-kb", cli)]
    while pending:
        path, command = pending.pop()
        found.append((path, command))
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, name
                pending.append((f"{path} {name}", sub))
    return found


def test_every_option_of_every_command_has_help(invoke_cli, tmp_path) -> None:
    """Every option has help, and help lists it, save one hidden on purpose: taken only to be
    refused in words (``watch --json``: a usage error, exit 2, that says to drop it), where help
    would offer what the command refuses."""
    commands = _commands()
    assert len(commands) > 40

    def refused(path: str, option: str) -> bool:
        # A KB that is not there: a command that refuses the option says so before it looks.
        run = invoke_cli("--kb", tmp_path / "none", *path.split()[1:], option, cwd=tmp_path)
        return run.returncode == 2 and run.stderr.endswith(f" Drop {option}.\n")

    undocumented = [
        f"{path} {'/'.join(param.opts)}"
        for path, command in commands
        for param in command.params
        if isinstance(param, click.Option) and (not (param.help or "").strip()
                                                or (param.hidden and not refused(path, param.opts[0])))
    ]
    assert undocumented == []


def test_every_parameter_of_every_tool_has_a_description() -> None:
    described = yaml.safe_load(tools.DESCRIPTIONS.read_text(encoding="utf-8"))
    assert [d["name"] for d in described] == [spec.name for spec in tools.tools()]
    for spec in tools.tools():
        assert len(spec.description) > 80, spec.name
        for name, schema in spec.properties.items():
            assert len(schema.get("description", "")) > 10, f"{spec.name}.{name}"
        assert spec.output_schema["required"][-1] == "result", spec.name


def test_search_help_lists_any_type_and_project(invoke_cli) -> None:
    text = " ".join(invoke_cli("search", "--help", check=True).stdout.split())
    assert "--any Memories holding any word of QUESTION" in text
    assert "--type TYPE Only memories of this observation type" in text
    assert "--project TEXT Only memories of this project" in text


def test_mcp_errors_offer_no_command_or_flag_the_client_lacks(catalog_kb: KnowledgeBase) -> None:
    first = catalog_kb.save_memory("Amounts are in cents", ["orders.amount"]).memory_id
    second = catalog_kb.save_memory("Status is an enum", ["orders.status"]).memory_id
    (catalog_kb.root / "memories" / f"{first}.yaml").write_text("learning: [unclosed\n")
    commit_all(catalog_kb.root, "broken by hand")
    path = catalog_kb.root / "memories" / f"{second}.yaml"
    path.write_text(path.read_text().replace("enum", "enum of four"))  # not committed

    async def script(session: ClientSession) -> list[str]:
        return [await error(session, "mem_delete", id=first), await error(session, "mem_update", id=second, title="x")]

    broken, dirty = with_server_in_process(catalog_kb.root, script)
    assert broken.endswith(
        "a soft forget rewrites the file, so it must be a valid memory: repair it first, or delete it "
        f"for good with mem_delete(id: {first}, hard_delete: true)"
    )
    assert "'slayer-kb " not in broken  # no shell command
    assert dirty.endswith("Commit or stash it (git stash -u) and retry.") and "--force" not in dirty
