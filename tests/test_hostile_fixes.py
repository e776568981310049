"""Round s39 of the hostile pass: answers that named the problem but not the fix, or said
nothing. A priority.yaml naming a datasource the catalog lacks. Each case runs the command in this
process (``invoke_cli``) and checks the exit code, both streams and what was committed."""

from __future__ import annotations

from slayer_kb import KnowledgeBase
from testing import CliRunner, commit_all, git, json_of


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
