"""Round s39 of the hostile pass: answers that named the problem but not the fix, or said
nothing. A priority.yaml naming a datasource the catalog lacks; a session write that would commit
a time validate refuses; a mistyped reference or id; a range for one revision; unrelated
histories; a topic key written with escapes or folded. Each case runs the command in this
process (``invoke_cli``) and checks the exit code, both streams and what was committed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from testing import CliRunner, commit_all, git, json_of, make_team

pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402

from testing.mcp import error, with_server_in_process  # noqa: E402


def test_a_priority_name_the_catalog_lacks_is_named_with_its_fix(indexed_example_kb: KnowledgeBase,
                                                                 invoke_cli: CliRunner) -> None:
    """``shpo`` for ``shop`` left bare names resolving in another datasource, and validate said
    nothing. Each name that is no datasource is named at its line with the nearest datasources, by
    validate, after search's results and by review."""
    root = indexed_example_kb.root
    (root / "priority.yaml").write_text("priority:\n  - shpo\n  - wh\n  - orders\n  - zzzz\n")
    said = "it orders nothing, and bare names resolve as if it were not listed."
    problems = [
        f"priority.yaml:2: the priority list's 'shpo' is no datasource of the catalog: {said} Did you mean: shop? "
        "Write the datasource's name in its place, or remove 'shpo'",
        f"priority.yaml:4: the priority list's 'orders' is a model (of shop, wh), not a datasource: {said} Did you "
        "mean: shop, wh? Write the datasource's name in its place, or remove 'orders'",
        f"priority.yaml:5: the priority list's 'zzzz' is no datasource of the catalog: {said} Remove it, or add the "
        "datasource it names",
    ]
    proc = invoke_cli("--kb", root, "validate", "memories/1.yaml", cwd=root)
    assert (proc.returncode, proc.stderr) == (1, "")
    assert proc.stdout == "".join(p.replace(": ", ": catalog: ", 1) + "\n" for p in problems) + (
        "3 problems in 1 file (1 file checked)\n")
    found = json_of(invoke_cli("--kb", root, "--json", "search", "-e", "shop.orders.amount", "--limit", "1"))
    # Then what the typo did: wh first, a bare 'amount' of a stored query is ambiguous in shop.
    assert found["warnings"][:3] == problems and "memory:kb.net-revenue" in found["warnings"][3]
    # A bare list is read as the mapping is, each name at its own line.
    (root / "priority.yaml").write_text("- wh\n- shpo\n")
    proc = invoke_cli("--kb", root, "validate", "memories/1.yaml", cwd=root)
    assert proc.stdout.splitlines()[0] == "priority.yaml:2: catalog: " + problems[0].split(": ", 1)[1]
    # A pull request that brings the typo is told of it by review.
    head = git(root, "rev-parse", "HEAD").strip()
    commit_all(root, "priority with a typo")
    reviewed = invoke_cli("--kb", root, "review", head, cwd=root)
    assert "priority.yaml:2: " + problems[0].split(": ", 1)[1] in reviewed.stdout


def test_a_session_write_refuses_to_commit_a_time_validate_refuses(indexed_example_kb: KnowledgeBase,
                                                                    invoke_cli: CliRunner) -> None:
    """A 30th of February in started_at (by hand, or an older import) was committed again by each
    save-prompt and session-end, though validate refuses the file. Now nothing is written and the
    answer names the file, the value and the fix, on the CLI and over MCP; an end time the write
    replaces is no reason to refuse, and a memory's save leaves the session alone."""
    root = indexed_example_kb.root
    path = root / "sessions" / "ses-20261014-dbt-review.yaml"
    text = path.read_text().replace("started_at: '2026-10-14T07:31:55Z'", "started_at: '2026-02-30T07:31:55Z'")
    path.write_text(text)
    commit_all(root, "a start no calendar has")
    head = git(root, "rev-parse", "HEAD")
    refused = ("sessions/ses-20261014-dbt-review.yaml:3: 'started_at' '2026-02-30T07:31:55Z' is no real time (day is "
               "out of range for month); write the time it happened, quoted: '2026-11-29T20:42:40Z'. Nothing was "
               "written: the write would commit the file again with it, and validate refuses it. Edit "
               "sessions/ses-20261014-dbt-review.yaml, then retry.")
    for args in (("save-prompt", "What changed in the nightly dbt run?", "--session", "ses-20261014-dbt-review"),
                 ("session-end", "ses-20261014-dbt-review", "--summary", "done")):
        proc = invoke_cli("--kb", root, *args, cwd=root)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {refused}\n"), args

    async def script(session: ClientSession) -> list[str]:
        return [await error(session, "mem_save_prompt", content="Why?", session_id="ses-20261014-dbt-review"),
                await error(session, "mem_session_end", id="ses-20261014-dbt-review")]

    told = refused.replace("Edit sessions/", f"Edit {root}/sessions/")  # the server runs elsewhere
    assert with_server_in_process(root, script) == [told, told]
    saved = invoke_cli("--kb", root, "save", _LONG, "--title", "dbt nightly", "--session", "ses-20261014-dbt-review",
                       cwd=root)
    assert saved.returncode == 0 and git(root, "show", "--stat", "--format=", "HEAD").split()[0] == "memories/27.yaml"
    assert path.read_text() == text and git(root, "rev-parse", "HEAD~1").strip() == head.strip()
    # An end no calendar has is what session-end replaces: the file it commits is valid.
    path.write_text(text.replace("2026-02-30T07:31:55Z", "2026-10-14T07:31:55Z").replace(
        "ended_at: '2026-10-14T08:05:10Z'", "ended_at: '2026-10-14T25:05:10Z'"))
    commit_all(root, "an end no calendar has")
    assert invoke_cli("--kb", root, "session-end", "ses-20261014-dbt-review", cwd=root).returncode == 0
    checked = invoke_cli("--kb", root, "validate", "sessions/ses-20261014-dbt-review.yaml", cwd=root)
    assert (checked.returncode, checked.stdout) == (0, "Checked 1 file: no problems.\n")


_LONG = "The nightly dbt run rebuilds the warehouse after midnight, so today's revenue reads zero until then."


CASE = "Catalog names are case-sensitive: write it as the catalog spells it."
CYRILLIC_O = "It holds 'о' (U+043E CYRILLIC SMALL LETTER O), which only looks like the Latin 'o': type it in Latin letters"
SEGMENT = "contains an invalid identifier segment. (Each part between dots is a name: a letter or '_', then letters, " \
          "digits, '_' or '-'.)"
# (the reference, what its error says)
MISTYPED = [
    ("ORDERS.AMOUNT", "'ORDERS' is neither a known datasource nor a saved model. (segment of 'ORDERS.AMOUNT'). Did "
                      f"you mean: shop.orders.amount? {CASE}"),
    # The misspelt model's near names are replaced by the one meant.
    ("shop.Orders.amount", "No model 'Orders' in datasource 'shop'. Its models: ['customers', 'order_items', 'orders', "
                           "'payments', 'products', 'refunds', 'regions']. Did you mean: shop.orders.amount? " + CASE),
    ("оrders.amount", f"'оrders.amount' {SEGMENT} Did you mean: shop.orders.amount? {CYRILLIC_O}."),
    ("shop.orders.amоunt", "Unknown field 'amоunt' on model 'orders' (datasource 'shop'): no column, measure or "
                           "aggregation of that name, and 'amоunt' is not a join target on model 'orders'. Did you "
                           f"mean: shop.orders.amount? {CYRILLIC_O}."),
    # Nothing it could mean: which letter only looks Latin is said all the same.
    ("оrderz.amount", f"'оrderz.amount' {SEGMENT} {CYRILLIC_O}."),
]
LEARNING = "Order amounts are gross of refunds; net them against refunds.amount before any revenue figure."


def test_a_mistyped_reference_names_the_one_meant(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``ORDERS.AMOUNT`` said only that 'ORDERS' is no datasource, and ``оrders.amount`` (a
    Cyrillic о) that a segment is not "a letter or '_'": each looks right to whoever typed it. Now
    the error names the reference meant and why they differ, for a save (refused, nothing
    written) and search (dropped with a warning), on the CLI and over MCP."""
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    for ref, said in MISTYPED:
        saved = invoke_cli("--kb", root, "save", LEARNING, "-e", ref, cwd=root)
        assert (saved.returncode, saved.stdout, saved.stderr) == (1, "", f"Error: {said}\n"), ref
        found = json_of(invoke_cli("--kb", root, "--json", "search", "amount", "-e", ref, "--limit", "1"))
        assert found["warnings"] == [f"entity '{ref}' dropped: {said}"], ref

    async def script(session: ClientSession) -> list[tuple[str, list[str]]]:
        replies = []
        for ref, _said in MISTYPED:
            refused = await error(session, "save_memory", learning=LEARNING, linked_entities=[ref])
            found = await session.call_tool("search", {"question": "amount", "entities": [ref], "max_results": 1})
            assert found.structured_content is not None
            replies.append((refused, found.structured_content["warnings"]))
        return replies

    assert with_server_in_process(root, script) == [(said, [f"entity '{ref}' dropped: {said}"]) for ref, said in MISTYPED]
    assert git(root, "rev-parse", "HEAD") == head


def test_an_id_with_a_letter_that_only_looks_latin_names_the_id_meant(indexed_example_kb: KnowledgeBase,
                                                                     invoke_cli: CliRunner) -> None:
    """``get kb.net-rеvenue`` (a Cyrillic е) said only "No memory with id", of an id that reads
    as one that exists; so did a link to it."""
    root = indexed_example_kb.root
    said = ("No memory with id 'kb.net-rеvenue'; did you mean 'kb.net-revenue'? It holds 'е' (U+0435 CYRILLIC SMALL "
            "LETTER IE), which only looks like the Latin 'e': type it in Latin letters.")
    for args in (("get", "kb.net-rеvenue"), ("forget", "kb.net-rеvenue"),
                 ("save", LEARNING, "-e", "memory:kb.net-rеvenue")):
        proc = invoke_cli("--kb", root, *args, cwd=root)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {said}\n"), args

    async def script(session: ClientSession) -> list[str]:
        return [await error(session, "forget_memory", id="kb.net-rеvenue"),
                await error(session, "save_memory", learning=LEARNING, linked_entities=["memory:kb.net-rеvenue"])]

    assert with_server_in_process(root, script) == [said, said]
    # Another letter case: the id as the memory has it (ids are case-sensitive).
    for args in (("get", "KB.Net-Revenue"), ("forget", "KB.NET-REVENUE")):
        proc = invoke_cli("--kb", root, *args, cwd=root)
        assert (proc.returncode, proc.stderr) == (1, (
            f"Error: No memory with id '{args[1]}'; did you mean 'kb.net-revenue'? Ids are case-sensitive: type it as "
            "the memory has it.\n")), args
    # A fullwidth '／' or '．' reads as '/' or '.': the id meant is never a path looked at.
    (root.parent / "secret.yaml").write_text("x: 1\n")
    for given in ("．．／secret", "／".join(str(root.parent / "secret").split("/"))):
        proc = invoke_cli("--kb", root, "get", given, cwd=root)
        assert (proc.returncode, proc.stderr) == (1, f"Error: No memory with id '{given}'.\n"), given


def test_a_range_given_for_one_revision_is_told_the_arguments_meant(indexed_example_kb: KnowledgeBase,
                                                                    invoke_cli: CliRunner) -> None:
    """``review main..agent``, as git diff and git log take it, said "Unknown revision
    'main..agent'", of two branches that exist. review is told its two arguments; a command that
    takes one revision is told so."""
    root = indexed_example_kb.root
    git(root, "branch", "main-line")
    git(root, "branch", "agent")
    for given, ends in (("main-line..agent", "main-line agent"), ("main-line...agent", "main-line agent"),
                        ("main-line..", "main-line HEAD")):
        base, head = ends.split()
        proc = invoke_cli("--kb", root, "review", given, cwd=root)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
            f"Error: '{given}' is a range; review takes its two ends as two arguments, BASE then HEAD, and compares "
            f"them as 'git diff {base}...{head}' does: run 'slayer-kb review {ends}'.\n")), given
    assert invoke_cli("--kb", root, "review", "main-line", "agent", cwd=root).returncode == 0
    proc = invoke_cli("--kb", root, "validate", "--against", "main-line..agent", cwd=root)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        "Error: 'main-line..agent' is a range of commits, where one revision is wanted: give one commit, branch or "
        "tag, such as 'main-line' or 'agent'.\n"))
    # One revision that holds '..' (a search of the commit messages) is taken as it is.
    git(root, "commit", "-q", "--allow-empty", "-m", "note on 1..2")
    assert invoke_cli("--kb", root, "show", "1", "--rev", "HEAD^{/1..2}", cwd=root).returncode == 0
    assert invoke_cli("--kb", root, "review", "HEAD^{/1..2}", cwd=root).returncode == 0


def test_a_range_with_an_end_that_names_nothing_is_told_the_branches_here(indexed_example_kb: KnowledgeBase,
                                                                          invoke_cli: CliRunner) -> None:
    """``review main..HEAD`` in a repository whose branch is trunk advised ``review main HEAD``,
    which fails in turn. The end that names nothing is said so, with the branches that exist; a
    command that takes one revision offers the ends that exist, else the branches."""
    root = indexed_example_kb.root
    git(root, "branch", "-m", "trunk")
    git(root, "update-ref", "refs/remotes/origin/trunk", "HEAD")
    git(root, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")  # no branch of its own
    for given, advised, unknown in (("main..HEAD", "BRANCH HEAD", "'main' names"),
                                    ("main...nope", "BRANCH BRANCH", "'main' and 'nope' name")):
        proc = invoke_cli("--kb", root, "review", given, cwd=root)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
            f"Error: '{given}' is a range; review takes its two ends as two arguments, BASE then HEAD, and {unknown} "
            f"no commit here: run 'slayer-kb review {advised}', BRANCH one of the branches here ('trunk', "
            "'origin/trunk'), a tag or a commit.\n")), given
    assert invoke_cli("--kb", root, "review", "origin/trunk", "HEAD", cwd=root).returncode == 0
    for given, such in (("main..HEAD", "'HEAD'"), ("main..nope", "'trunk' or 'origin/trunk'")):
        proc = invoke_cli("--kb", root, "validate", "--against", given, cwd=root)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
            f"Error: '{given}' is a range of commits, where one revision is wanted: give one commit, branch or tag, "
            f"such as {such}.\n")), given


def _apart(tmp_path: Path, invoke_cli: CliRunner, team: Path) -> Path:
    """A KB begun by its own init, with one memory, and the team's KB ``team`` as its remote."""
    root = tmp_path / "apart"
    assert invoke_cli("init", root).returncode == 0
    assert invoke_cli("--kb", root, "save", _LONG, "--title", "dbt nightly", "--session", "s1").returncode == 0
    git(root, "remote", "add", "origin", str(team))
    git(root, "fetch", "-q", "origin")
    return root


def test_a_merge_of_unrelated_histories_names_the_steps_that_join_them(indexed_example_kb: KnowledgeBase,
                                                                       invoke_cli: CliRunner, tmp_path: Path) -> None:
    """``merge`` (and sync, with a merge commit of its own) said git's "refusing to merge unrelated
    histories". Now it says what that means and the steps that bring the branch's memories
    over, which work; nothing is changed."""
    team = indexed_example_kb.root
    branch = git(team, "rev-parse", "--abbrev-ref", "HEAD").strip()
    root = _apart(tmp_path, invoke_cli, team)
    head = git(root, "rev-parse", "HEAD")
    # A rebase, which git runs over unrelated histories, is told of the clash of ids first (it
    # stopped on "both created memories/1.yaml").
    proc = invoke_cli("--kb", ".", "rebase", f"origin/{branch}", cwd=root)
    assert (proc.returncode, proc.stderr.split(". Nothing was rebased.")[0]) == (1, (
        f"Error: Your commits and origin/{branch} each saved a new memory as 1 (ids counted on each clone): two "
        "memories under one id, which the rebase would take for one file both created"))
    assert f"'slayer-kb renumber --rewrite --onto origin/{branch}'" in proc.stderr
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain") == ""
    said = (f"Error: 'origin/{branch}' and this branch have no commit in common: they are two knowledge bases begun "
            "apart (each by its own init), and git refuses to merge unrelated histories. Nothing was changed. If "
            f"'origin/{branch}' is not the one you meant, check its name ('git remote -v', 'git branch -a'); to bring "
            "this branch's memories onto it, give them ids it does not use and bring them there: ")
    proc = invoke_cli("--kb", ".", "merge", f"origin/{branch}", cwd=root)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", said + (
        f"'slayer-kb renumber --onto origin/{branch} --rewrite', then 'slayer-kb rebase origin/{branch}'.\n"))
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain") == ""
    for step in (("renumber", "--onto", f"origin/{branch}", "--rewrite"), ("rebase", f"origin/{branch}")):
        assert invoke_cli(*step, cwd=root).returncode == 0, step
    assert json_of(invoke_cli("--json", "search", "nightly dbt run", cwd=root))["memories"][0]["title"] == "dbt nightly"
    # A merge commit of the branch's own: sync merges, and is told the steps a merge commit allows.
    root = _apart(tmp_path / "merges", invoke_cli, team)
    git(root, "switch", "-q", "-c", "side")
    assert invoke_cli("save", _LONG + " Twice.", "--title", "dbt twice", "--session", "s2", cwd=root).returncode == 0
    git(root, "switch", "-q", "-")
    assert invoke_cli("save", _LONG + " Thrice.", "--title", "dbt thrice", "--session", "s3", cwd=root).returncode == 0
    git(root, "merge", "-q", "--no-edit", "side")
    head = git(root, "rev-parse", "HEAD")
    proc = invoke_cli("sync", cwd=root)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", said + (
        f"'slayer-kb renumber --onto origin/{branch}', then 'git merge --allow-unrelated-histories origin/{branch}' "
        "(resolve what it stops on, then 'slayer-kb validate' and 'git commit').\n"))
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain") == ""


RETRY = "Retries against the payments api: three attempts with exponential backoff, never more, then a page."
TIME_ZONES = "Time zones: every timestamp in the shop schema is stored in UTC and cut into days at midnight UTC."


def _keyed_by_hand(root: Path, memory_id: str, line: str) -> None:
    """Memory ``memory_id`` given project api and the topic key ``line`` writes, by hand."""
    path = root / "memories" / f"{memory_id}.yaml"
    path.write_text(path.read_text().replace("scope: project\n", f"project: api\nscope: project\n{line}\n"))


@pytest.mark.parametrize("written", ['topic_key: "d\\u00e9cision/retry budget"', 'topic_key: "d\\xe9cision/retry budget"',
                                     "topic_key: décision/retry\n  budget", "topic_key: >-\n  décision/retry budget"])
def test_a_topic_key_written_otherwise_is_found_beside_the_same_key(indexed_example_kb: KnowledgeBase,
                                                                    invoke_cli: CliRunner, written: str) -> None:
    """A key in YAML's escapes (``\\u00e9``, ``\\xe9``) or folded over lines is the same key, but
    the search for its other holders (git grep of the key's text) and the read of the key line
    missed it: review and validate --against said nothing of a key held twice once merged."""
    root = indexed_example_kb.root
    base = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    assert invoke_cli("--kb", root, "save", RETRY, "--title", "Retry budget", cwd=root).returncode == 0
    _keyed_by_hand(root, "27", written)
    commit_all(root, "the key, written by hand")
    git(root, "switch", "-q", "-c", "agent")
    assert invoke_cli("--kb", root, "save", TIME_ZONES, "--title", "Time zones", cwd=root).returncode == 0
    _keyed_by_hand(root, "28", "topic_key: décision/retry budget")
    commit_all(root, "the same key, given to another memory")
    twice = ("topic_key 'décision/retry budget' in project 'api' is held by 2 memories (27, 28): this branch gave it to "
             "memory 28, and a save under the key revises only the newest. Keep one: give memory 28 another key or none "
             "('slayer-kb update 28 --topic-key NEW', '' for none), or forget one of them ('slayer-kb forget ID')")
    reviewed = invoke_cli("--kb", root, "review", base, cwd=root)
    assert f"\n- memories/28.yaml:1: {twice}\n" in reviewed.stdout
    checked = invoke_cli("--kb", root, "validate", "--against", base, cwd=root)
    assert checked.returncode == 1 and "memories/28.yaml:1: topic_key 'décision/retry budget' in project 'api' is held " \
                                      "by 2 memories (27, 28); " in checked.stdout


def test_a_sync_finds_the_upstream_holder_of_a_key_written_with_escapes(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The upstream's memory holds the key as ``"d\\u00e9cision/retry"`` (pushed by plain git), and
    this branch gives the key to a memory both hold: sync's search for the key's holders at HEAD
    missed the upstream's, and pushed the key held twice."""
    bare, (a, b) = make_team(tmp_path)
    assert invoke_cli("--kb", a, "save", TIME_ZONES, "--title", "Time zones", cwd=a).returncode == 0
    shared = git(a, "log", "-1", "--format=%s").split()[2]
    assert invoke_cli("--kb", a, "sync", cwd=a).returncode == 0 and invoke_cli("--kb", b, "sync", cwd=b).returncode == 0
    assert invoke_cli("--kb", a, "save", RETRY, "--title", "Retry budget", cwd=a).returncode == 0
    theirs = git(a, "log", "-1", "--format=%s").split()[2]
    _keyed_by_hand(a, theirs, 'topic_key: "d\\u00e9cision/retry"')
    commit_all(a, "the key, written by hand")
    git(a, "push", "-q", "origin", "HEAD")
    _keyed_by_hand(b, shared, "topic_key: décision/retry")
    commit_all(b, "the same key, given to a memory both hold")
    remote = git(bare, "rev-parse", "HEAD")
    refused = invoke_cli("--kb", b, "sync", cwd=b)
    ids = ", ".join(sorted((shared, theirs), key=int))
    assert refused.returncode == 1 and (
        f"memories/{shared}.yaml:1: topic_key 'décision/retry' in project 'api' is held by 2 memories ({ids}): this "
        f"branch gave it to memory {shared}") in refused.stderr
    assert git(bare, "rev-parse", "HEAD") == remote


def test_a_session_never_ends_before_it_started(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A start written in the future (a local time written as UTC) was ended at now, before it, and
    validate passed the file. session-end refuses, and validate names it."""
    root = indexed_example_kb.root
    assert invoke_cli("session-start", "s1", "--project", "p", cwd=root).returncode == 0
    path = root / "sessions" / "s1.yaml"
    path.write_text(re.sub(r"^started_at: .*$", "started_at: '2999-01-01T00:00:00Z'", path.read_text(), flags=re.M))
    commit_all(root, "a start by hand")
    head = git(root, "rev-parse", "HEAD")
    proc = invoke_cli("session-end", "s1", cwd=root)
    line = path.read_text().splitlines().index("started_at: '2999-01-01T00:00:00Z'") + 1
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"Error: sessions/s1.yaml:{line}: 'started_at' '2999-01-01T00:00:00Z' is after "
                                  "'ended_at' '")
    assert proc.stderr.endswith("': write the times the session started and ended, in UTC, quoted: "
                                "'2026-11-29T20:42:40Z'. Nothing was written: the write would commit the file again "
                                "with it, and validate refuses it. Edit sessions/s1.yaml, then retry.\n")
    assert git(root, "rev-parse", "HEAD") == head
    path.write_text(path.read_text() + "ended_at: '2026-01-01T00:00:00Z'\n")
    checked = invoke_cli("validate", "sessions/s1.yaml", cwd=root)
    assert (checked.returncode, checked.stdout) == (1, (
        f"sessions/s1.yaml:{line}: 'started_at' '2999-01-01T00:00:00Z' is after 'ended_at' '2026-01-01T00:00:00Z': "
        "write the times the session started and ended, in UTC, quoted: '2026-11-29T20:42:40Z'\n"
        "1 problem in 1 file (1 file checked)\n"))
