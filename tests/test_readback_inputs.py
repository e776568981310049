"""What an agent reads back from inputs it got slightly wrong: each refusal names the problem and
the fix, and nothing is written (an adversarial read-back pass)."""

from __future__ import annotations

import yaml

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.tools import call_tool
from testing import CliRunner, git, json_of


def test_update_refuses_to_replace_an_example_querys_entities(indexed_example_kb: KnowledgeBase,
                                                              invoke_cli: CliRunner) -> None:
    """``update 5 -e wh`` on an example query replaced the entities its query gives with ``wh``,
    unsaid: a search by ``shop.orders.amount`` then missed it while its query still summed the column."""
    kb = indexed_example_kb
    head, before = git(kb.root, "rev-parse", "HEAD"), (kb.root / "memories" / "5.yaml").read_bytes()
    refused = invoke_cli("--kb", kb.root, "update", "5", "-e", "wh")
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: Memory 5 is an example query: its entities are its query's (shop.orders, shop.regions.name, "
        "shop.orders.created_at, shop.orders.amount, shop.orders.status, shop.orders.is_test) and change with it, so "
        "-e cannot replace them. To change them, change the query: edit its query: and entities: together ('slayer-kb "
        f"--kb {kb.root} edit 5'), or save it again with the new query ('slayer-kb --kb {kb.root} save --id 5 --query "
        "@query.json' with its learning; a save replaces the memory whole, its title and project too); to link other "
        "entities, save a note that links them and memory:5.\n"))
    assert (git(kb.root, "rev-parse", "HEAD"), (kb.root / "memories" / "5.yaml").read_bytes()) == (head, before)
    # Its other fields still change.
    assert invoke_cli("--kb", kb.root, "update", "5", "--description", "Paid revenue by region", check=True).returncode == 0


def test_an_option_given_two_values_is_a_usage_error(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """click keeps an option's last value: ``save --id k1 --id k2`` saved k2 and ``rebase --continue
    --abort`` aborted, unsaid. Two values, or two flags setting one value, are refused with exit 2
    and nothing written; one value given twice, and a value that looks like an option, are taken."""
    kb = indexed_example_kb
    head = git(kb.root, "rev-parse", "HEAD")
    for args, message in (
        (("save", "x y", "-e", "shop", "--id", "k1", "--id=k2"),
         "Option '--id' was given 2 values ('k1', 'k2'); it takes one: give it once."),
        (("search", "revenue", "--limit", "3", "--max-results", "4"),
         "Option '--limit / --max-results' was given 2 values ('3', '4'); it takes one: give it once."),
        (("rebase", "--continue", "--abort"), "'--continue' and '--abort' cannot be given together: give one."),
    ):
        refused = invoke_cli("--kb", kb.root, *args)
        assert (refused.returncode, refused.stderr.splitlines()[-1]) == (2, f"Error: {message}"), args
        assert json_of(invoke_cli("--kb", kb.root, "--json", *args)) == {"error": {
            "type": "usage", "message": f"{message} Try 'slayer-kb {args[0]} --help' for help."}}
    # The root's own options too, before the command's name, with the root's usage line as click
    # gives it for the root's other usage errors (it had none).
    twice = invoke_cli("--kb", kb.root, "--kb", kb.root.parent, "search", "x")
    kb_twice = f"Option '--kb' was given 2 values ({str(kb.root)!r}, {str(kb.root.parent)!r}); it takes one: give it once."
    assert (twice.returncode, twice.stderr) == (
        2, f"Usage: slayer-kb [OPTIONS] COMMAND [ARGS]...\nTry 'slayer-kb --help' for help.\n\nError: {kb_twice}\n")
    assert invoke_cli("--kb", kb.root, "--bogus", "list").stderr.startswith(
        "Usage: slayer-kb [OPTIONS] COMMAND [ARGS]...\nTry 'slayer-kb --help' for help.\n\nError: No such option")
    assert json_of(invoke_cli("--json", "--kb", kb.root, "--kb", kb.root.parent, "list")) == {"error": {
        "type": "usage", "message": f"{kb_twice} Try 'slayer-kb --help' for help."}}
    # The command's usage line, as click gives it for its own errors; help is still shown.
    assert invoke_cli("--kb", kb.root, "save", "x", "--id", "a", "--id", "b").stderr.startswith(
        "Usage: slayer-kb save [OPTIONS] [LEARNING]\nTry 'slayer-kb save --help' for help.\n\nError: Option '--id'")
    assert invoke_cli("save", "--id", "a", "--id", "b", "--help", check=True).stdout.startswith("Usage: slayer-kb save")
    assert git(kb.root, "rev-parse", "HEAD") == head
    # One value given twice, or spelt two ways its type reads as one, and a value that looks like an
    # option (joined to its own: given apart, it is an option left without its value).
    saved = json_of(invoke_cli("--kb", kb.root, "--json", "save", "x y", "-e", "shop", "--id", "k1", "--id", "k1",
                               "--description=--id", check=True))
    assert (saved["memory_id"], kb.get("k1").description) == ("k1", "--id")
    listed = invoke_cli("--kb", kb.root, "list", "--scope", "project", "--scope", "PROJECT", "--limit", "5", "--limit", "05")
    assert (listed.returncode, listed.stderr) == (0, "")


def test_a_memorys_id_given_as_an_entity_names_the_link_to_write(example_kb_read_only: KnowledgeBase,
                                                                 invoke_cli: CliRunner) -> None:
    """``-e 12`` (memory 12 exists) said only that '12' holds an invalid identifier segment, and
    ``-e 'memory: 12'`` to give the id alone, '12', which ``-e 12`` then refused: each names the
    link to write. An id no memory has keeps SLayer's refusal alone."""
    root = example_kb_read_only.root
    segment = ("contains an invalid identifier segment. (Each part between dots is a name: a letter or '_', then "
               "letters, digits, '_' or '-'.)")
    for ref, message in (
        ("12", f"'12' {segment} A memory has id '12': to link it, write memory:12."),
        ("kb.net-revenue", "'kb' is neither a known datasource nor a saved model. (segment of 'kb.net-revenue'). A "
                           "memory has id 'kb.net-revenue': to link it, write memory:kb.net-revenue."),
        ("99999", f"'99999' {segment}"),
        ("memory: 12", "'memory: 12' holds an id with blanks around it, not a memory id: write the link as 'memory:12'."),
        ("memory:memory:12", "'memory:memory:12' holds a link to a memory, not a memory id: write the link as "
                             "'memory:12'."),
    ):
        refused = invoke_cli("--kb", root, "save", "A note", "-e", ref)
        assert (refused.returncode, refused.stderr) == (1, f"Error: {message}\n"), ref
    # search is lenient: the reference is dropped, with the same words.
    found = json_of(invoke_cli("--kb", root, "--json", "search", "-e", "12"))
    assert found["warnings"][0] == f"entity '12' dropped: '12' {segment} A memory has id '12': to link it, write memory:12."



def test_an_id_with_a_dash_that_only_looks_like_a_hyphen_is_refused_and_named(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``save --id kb.fiscal‐calendar`` (U+2010 HYPHEN, pasted from a document) made a second memory
    beside kb.fiscal-calendar that review showed as the same id; ``get`` of it, or of the id
    misspelt, said only that no memory has it."""
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    dashed = "kb.fiscal\u2010calendar"
    refused = invoke_cli("--kb", root, "save", "A note", "-e", "shop", "--id", dashed)
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: Memory id '{dashed}' contains U+2010 HYPHEN, which looks like '-' but names another file; use "
        "'kb.fiscal-calendar'.\n"))
    assert git(root, "rev-parse", "HEAD") == head
    for given, hint in (
        (dashed, "; did you mean 'kb.fiscal-calendar'? It holds '\u2010' (U+2010 HYPHEN), which only looks like the "
                 "ASCII '-': type it in ASCII."),
        ("kb.fiscal-calender", "; the nearest id is 'kb.fiscal-calendar'."),
        ("kb.fiscal_calendar", "; the nearest id is 'kb.fiscal-calendar'."),
        ("kb.nothing-like-it", "."),
        ("123", "."),  # a number one digit off is another memory
    ):
        missing = invoke_cli("--kb", root, "get", given)
        assert (missing.returncode, missing.stderr) == (1, f"Error: No memory with id '{given}'{hint}\n"), given
    # A file made by hand under such a name is a problem validate names.
    (root / "memories" / f"{dashed}.yaml").write_text("learning: a note\ncreated_at: '2026-01-01T00:00:00Z'\n",
                                                      encoding="utf-8")
    checked = invoke_cli("--kb", root, "validate", f"memories/{dashed}.yaml", cwd=root)
    assert (checked.returncode, checked.stdout.splitlines()[0]) == (1, (
        f"memories/{dashed}.yaml:1: the file name is the id: Memory id '{dashed}' contains U+2010 HYPHEN, which looks "
        "like '-' but names another file; use 'kb.fiscal-calendar'."))


def test_a_blank_author_is_refused_not_taken_for_none(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``--author ''`` was taken for no --author: the commit named git's identity, not the one meant."""
    message = ("--author is blank: give the commit's author as 'Name <email>' (e.g. 'Ann Lee <ann@example.com>'), or "
               "leave it out for $SLAYER_KB_AUTHOR or git's config.")
    for blank in ("", "  "):
        refused = invoke_cli("--kb", example_kb_read_only.root, "--author", blank, "--json", "save", "A note", "-e", "shop")
        assert (refused.returncode, json_of(refused), refused.stderr) == (
            1, {"error": {"type": "invalid_input", "message": message}}, f"Error: {message}\n")


def test_a_type_spelt_nearly_as_engrams_is_kept_and_said(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``--type decison`` was kept silently (Engram keeps any other type as given), and a filter
    on ``decision`` then missed the memory; a type of the agent's own is kept unsaid."""
    kb = indexed_example_kb
    warned = ("type 'decison' is not one of Engram's types but looks like 'decision': saved as given, so a filter on "
              "'decision' misses it; give 'decision' if that was meant.")
    saved = call_tool(kb, "mem_save", {"title": "Queue choice", "content": "We chose SQS over Kafka.", "type": "decison"})
    assert (saved.is_error, (saved.data or {}).get("warnings")) == (False, [warned])
    assert json_of(invoke_cli("--kb", kb.root, "--json", "update", saved.data["memory_id"], "--type", "decison",
                              check=True))["warnings"] == [warned]
    for own in ("runbook", "Bugfix"):
        assert call_tool(kb, "mem_save", {"title": f"T {own}", "content": f"A {own} note.", "type": own}).data[
            "warnings"] == []


def test_a_link_to_a_forgotten_memory_says_what_became_of_it(indexed_example_kb: KnowledgeBase,
                                                            invoke_cli: CliRunner) -> None:
    """``-e memory:12``, memory 12 forgotten, said only "No memory with id '12'." where ``get 12``
    names the forgetting commit and the restore; an id no memory ever had keeps SLayer's answer."""
    root = indexed_example_kb.root
    invoke_cli("--kb", root, "forget", "12", check=True)
    forgot = git(root, "rev-parse", "--short=12", "HEAD").strip()
    for ref, message in (
        ("memory:12", f"No memory with id '12'. It was forgotten for good (not soft-deleted) in commit {forgot}; bring "
                      f"back its last version with 'slayer-kb --kb {root} restore 12 --rev {forgot}~1'."),
        ("memory:999", "No memory with id '999'."),
    ):
        refused = invoke_cli("--kb", root, "save", "A note", "-e", ref)
        assert (refused.returncode, refused.stderr) == (1, f"Error: {message}\n"), ref


def test_dashes_of_general_punctuation_are_refused_and_a_scripts_own_hyphen_kept(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A minus sign, a fullwidth or non-breaking hyphen read as '-' (some were taken, and the
    non-breaking one was told to use itself, U+2010); Hebrew's maqaf is part of its words."""
    root = indexed_example_kb.root
    for dash, name in (("\uff0d", "FULLWIDTH HYPHEN-MINUS"), ("\u2011", "NON-BREAKING HYPHEN"), ("\u2212", "MINUS SIGN"),
                       ("\u02d7", "MODIFIER LETTER MINUS SIGN")):
        refused = invoke_cli("--kb", root, "save", "A note", "-e", "shop", "--id", f"kb.a{dash}b")
        assert refused.stderr == (f"Error: Memory id 'kb.a{dash}b' contains U+{ord(dash):04X} {name}, which looks like "
                                  "'-' but names another file; use 'kb.a-b'.\n")
    kept = invoke_cli("--kb", root, "save", "A note", "-e", "shop", "--id", "kb.\u05d0\u05be\u05d1", check=True)
    assert kept.stdout.startswith("Saved memory kb.\u05d0\u05be\u05d1 (created)")


def test_restore_of_a_renamed_id_names_the_id_it_has_now(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``restore rg --rev REV`` after ``rename rg rg2`` brought the old version back as rg beside
    rg2: a second copy of one memory, which validate passed (save --id rg is refused)."""
    root = indexed_example_kb.root
    invoke_cli("--kb", root, "save", "First text of rg", "--id", "rg", "-e", "shop.orders", check=True)
    invoke_cli("--kb", root, "update", "rg", "--learning", "Second text of rg", check=True)
    invoke_cli("--kb", root, "rename", "rg", "rg2", check=True)
    renamed = git(root, "rev-parse", "--short=12", "HEAD").strip()
    refused = invoke_cli("--kb", root, "restore", "rg", "--rev", "HEAD~2")
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: Memory id 'rg' was renamed to 'rg2' (commit {renamed}): restored under 'rg', this version would be a "
        f"second copy of that memory. Restore it under the id it has now: 'slayer-kb --kb {root} restore rg2 --rev "
        "'HEAD~2'' (its history follows the rename).\n"))
    assert not (root / "memories" / "rg.yaml").exists()
    invoke_cli("--kb", root, "restore", "rg2", "--rev", "HEAD~2", check=True)
    assert yaml.safe_load((root / "memories" / "rg2.yaml").read_text())["learning"] == "First text of rg"
