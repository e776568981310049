"""Round s39 of the hostile pass: answers that named the problem but not the fix, or said
nothing. A priority.yaml naming a datasource the catalog lacks; a session write that would commit
a time validate refuses. Each case runs the command in this
process (``invoke_cli``) and checks the exit code, both streams and what was committed."""

from __future__ import annotations

import pytest

from slayer_kb import KnowledgeBase
from testing import CliRunner, commit_all, git, json_of

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
