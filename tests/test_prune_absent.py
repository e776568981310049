"""prune strips only links to what HEAD lacks: a file HEAD holds that the work tree lacks
(left out by a sparse checkout, deleted or moved by hand and not committed) looks gone, and
prune committed stripping the links to it. It refuses, naming the file and the fix; the dry run,
which changes nothing, lists what it reads and warns in those words that the list is unreliable
(it was refused too, and showed nothing). Once the move is committed, prune points the links at
the memory's new id."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from testing import CliRunner, commit_all, git

CREATED = "created_at: '2026-01-01T00:00:00Z'\n"


def memory(learning: str, *entities: str) -> str:
    return f"learning: {learning}\nentities:\n" + "".join(f"- {e}\n" for e in entities) + CREATED


@pytest.fixture
def linked(catalog_kb: KnowledgeBase) -> Path:
    """Memory 7 links memory 3 and the model shop.refunds, all committed."""
    root = catalog_kb.root
    (root / "memories" / "3.yaml").write_text(memory("Three.", "shop.orders"))
    (root / "memories" / "7.yaml").write_text(memory("Seven.", "memory:3", "shop.refunds"))
    commit_all(root, "two memories")
    return root


def refused(invoke_cli: CliRunner, root: Path, said: str, listed: str) -> None:
    """prune refuses in ``said``'s words (``{cd}``: the cd its commands start with); its dry run
    prints ``listed`` and warns in them, in text and in JSON."""
    before = git(root, "rev-parse", "HEAD")
    why = (f"{said.format(cd=f'cd {root}; ')}, then retry. prune strips the links to what HEAD no longer has, "
           "and that file would look gone, so nothing was done.")
    for args in (("prune",), ("prune", "--force")):
        proc = invoke_cli("--kb", root, *args)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {why}\n"), args
    warning = f"this list is unreliable, and prune refuses until it is fixed: {why}"
    dry = invoke_cli("--kb", root, "prune", "--dry-run")
    assert (dry.returncode, dry.stdout, dry.stderr) == (0, f"{listed}\nwarning: {warning}\n", "")
    dry = invoke_cli("--kb", root, "prune", "--dry-run", "--json", check=True)
    assert json.loads(dry.stdout)["warnings"] == [warning]
    assert git(root, "rev-parse", "HEAD") == before
    assert git(root, "show", "HEAD:memories/7.yaml") == memory("Seven.", "memory:3", "shop.refunds")


def test_prune_refuses_while_a_sparse_checkout_leaves_a_model_file_out(linked: Path, invoke_cli: CliRunner) -> None:
    git(linked, "sparse-checkout", "set", "--no-cone", "/*", "!/models/shop/refunds.yaml")
    assert not (linked / "models" / "shop" / "refunds.yaml").exists()
    refused(invoke_cli, linked, "models/shop/refunds.yaml is not checked out: git's index marks it skip-worktree "
            "(as a sparse checkout does for the files it leaves out), and HEAD has it. Check it out (add it to "
            "the sparse checkout, or run git sparse-checkout disable)", "Would strip from memory 7: shop.refunds")
    assert (linked / "memories" / "7.yaml").read_text() == memory("Seven.", "memory:3", "shop.refunds")


def test_prune_refuses_while_a_model_file_is_deleted_by_hand(linked: Path, invoke_cli: CliRunner) -> None:
    os.remove(linked / "models" / "shop" / "refunds.yaml")
    checked = invoke_cli("--kb", linked, "validate").stdout
    assert "(first: models/shop/refunds.yaml is missing from the work tree, and HEAD still has it" in checked
    refused(invoke_cli, linked, "models/shop/refunds.yaml is missing from the work tree, and HEAD still has it: "
            "a deletion (or a move) that is not committed. Bring the file back ({cd}git checkout HEAD -- "
            "models/shop/refunds.yaml), or commit the deletion ({cd}git rm models/shop/refunds.yaml; git commit)",
            "Would strip from memory 7: shop.refunds")
    git(linked, "rm", "-q", "models/shop/refunds.yaml")
    git(linked, "commit", "-q", "-m", "refunds gone")
    done = invoke_cli("--kb", linked, "prune", check=True)
    assert done.stdout.startswith("Stripped from memory 7: shop.refunds\n(commit ")
    assert git(linked, "show", "HEAD:memories/7.yaml") == memory("Seven.", "memory:3")


def test_prune_refuses_an_uncommitted_rename_and_relinks_a_committed_one(linked: Path, invoke_cli: CliRunner) -> None:
    os.rename(linked / "memories" / "3.yaml", linked / "memories" / "refund-rule.yaml")
    checked = invoke_cli("--kb", linked, "validate")
    assert checked.returncode == 1
    assert f"{linked}/memories/7.yaml:3: 'memory:3' refers to a memory that does not exist (first: memories/3.yaml was moved " \
        "to memories/refund-rule.yaml" in checked.stdout
    assert f"git commit); then run 'slayer-kb --kb {linked} prune' to strip it)\n" in checked.stdout
    refused(invoke_cli, linked, "memories/3.yaml was moved to memories/refund-rule.yaml (slayer-kb now reads it as "
            "memory 'refund-rule'), and HEAD still has it at memories/3.yaml: a move that is not committed. Move it "
            "back ({cd}mv memories/refund-rule.yaml memories/3.yaml), or commit the move ({cd}git add -A -- "
            "memories/3.yaml memories/refund-rule.yaml; git commit)", "Would strip from memory 7: memory:3")
    commit_all(linked, "renamed by hand")
    invoke_cli("--kb", linked, "prune", check=True)
    assert git(linked, "show", "HEAD:memories/7.yaml") == memory("Seven.", "memory:refund-rule", "shop.refunds")


def test_prune_refuses_while_a_catalog_edit_that_drops_a_link_is_not_committed(
        catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A model file edited and not committed, its column gone: prune stripped the link to it and
    committed that, the column still in HEAD's catalog. validate's fix named prune, and not the
    commit (or undo) of the edit that prune needs first."""
    root = catalog_kb.root
    (root / "memories" / "7.yaml").write_text(memory("Seven.", "shop.refunds.amount"))
    commit_all(root, "a memory")
    model = root / "models" / "shop" / "refunds.yaml"
    model.write_text(model.read_text().replace("- {name: amount, type: DOUBLE}\n", ""))
    # validate's fix for the link starts with what prune needs first (it named only prune).
    checked = invoke_cli("--kb", root, "validate")
    assert (checked.returncode, checked.stdout) == (1, (
        f"{root}/memories/7.yaml:3: entity 'shop.refunds.amount' does not resolve: Unknown field 'amount' on model "
        "'refunds' (datasource 'shop'): no column, measure or aggregation of that name, and 'amount' is not a join "
        "target on model 'refunds'. (first: models/shop/refunds.yaml has changes that are not committed, and prune "
        f"refuses till then: commit them (cd {root}; git add -- models/shop/refunds.yaml; git commit) or undo them "
        f"(cd {root}; git checkout HEAD -- models/shop/refunds.yaml); then correct it with 'slayer-kb --kb {root} "
        f"edit 7', or, if the catalog dropped it, strip it with 'slayer-kb --kb {root} prune')\n"
        "1 problem in 1 file (1 file checked)\n"))
    before = git(root, "rev-parse", "HEAD")
    why = ("models/shop/refunds.yaml has changes that are not committed, and prune strips the links to what "
           "the catalog no longer defines: what only an edit not committed dropped would be stripped in a commit. "
           "Commit the catalog change (or undo it), then retry; nothing was done.")
    proc = invoke_cli("--kb", root, "prune")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {why}\n")
    dry = invoke_cli("--kb", root, "prune", "--dry-run", check=True)
    assert dry.stdout == ("Would strip from memory 7: shop.refunds.amount\n"
                          f"warning: this list is unreliable, and prune refuses until it is fixed: {why}\n")
    assert git(root, "rev-parse", "HEAD") == before
    commit_all(root, "amount dropped")
    invoke_cli("--kb", root, "prune", check=True)
    assert "shop.refunds.amount" not in git(root, "show", "HEAD:memories/7.yaml")
