"""``review BASE [HEAD]`` reports what HEAD changed since it left BASE (``git diff BASE...HEAD``),
on branches that diverged in both directions."""

from __future__ import annotations

from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import NotFoundError
from slayer_kb.ops.renumber import renumber
from testing import commit_all, counted_apart, git, json_of, make_worktrees_after


def _diverge(root: Path) -> None:
    kb = KnowledgeBase(root)
    kb.save_memory("Amount is in EUR.", ["orders.amount"])
    kb.save_memory("Status is paid, refunded or pending.", ["orders.status"])
    kb.save_memory("Quantity counts items.", ["orders.qty"])
    git(kb.root, "switch", "-q", "-c", "feature")
    other = kb.root.parent / "main-worktree"
    git(kb.root, "worktree", "add", "-q", str(other), "master")
    assert kb.save_memory("Feature: refunds are net of fees.", ["orders.refunds"]).memory_id == "4"
    kb.update("1", learning="Amount is in EUR, VAT included.")
    kb.update("3", entities=["orders.qty", "orders.amount"])
    kb.close()
    main_kb = KnowledgeBase(other)
    counted_apart(other)  # as another clone: the worktrees' shared count forgotten
    assert main_kb.save_memory("Main: cost excludes shipping.", ["orders.amount"]).memory_id == "4"
    main_kb.forget("2")
    main_kb.update("3", learning="Quantity counts items, not lines.")
    main_kb.close()
    model = other / "models" / "shop" / "orders.yaml"
    model.write_text(model.read_text().replace("- {name: cost, sql: cost, type: DOUBLE}\n", ""))
    commit_all(other, "drop orders.cost")


@pytest.fixture
def diverged(tmp_path: Path) -> tuple[KnowledgeBase, KnowledgeBase]:
    """main and feature left the same three memories; each then changed things of its own.

    feature: adds 4 ("Feature: refunds are net"), rewrites 1, links 3 to a column.
    main (its own work tree, as another clone): adds 4 ("Main: ..."), forgets 2, rewrites 3's
    learning, and drops the catalog column shop.orders.cost. Made once a process and copied
    (``make_worktrees_after``).
    """
    root = make_worktrees_after(tmp_path, "review-diverged", _diverge, ["main-worktree"])
    return KnowledgeBase(root), KnowledgeBase(tmp_path / "main-worktree")


FEATURE_REVIEW = """\
## Knowledge base changes (master...HEAD)

Memories: 1 added, 1 changed, 1 re-linked, 0 removed.

### Added

- **4**: Feature: refunds are net of fees. (entities: `shop.orders.refunds`)

### Changed

- **1**: Amount is in EUR, VAT included. (changed: learning, updated_at)

  ```diff
  Amount is in [-EUR.-]{+EUR, VAT included.+}
  ```

### Re-linked

- **3**: Quantity counts items.
  - entities added: `shop.orders.amount`"""


def test_review_lists_only_what_the_branch_changed(
    diverged: tuple[KnowledgeBase, KnowledgeBase], invoke_cli
) -> None:
    kb, _main_kb = diverged
    # main since the split added its own 4, forgot 2, rewrote 3 and dropped a column: none of
    # that is the branch's doing, and none of it is listed.
    proc = invoke_cli("--kb", kb.root, "review", "master", check=True)
    assert proc.stdout == FEATURE_REVIEW + "\n"
    data = json_of(invoke_cli("--kb", kb.root, "review", "master", "--json", check=True))
    assert data["merge_base"] == git(kb.root, "merge-base", "master", "HEAD").strip()
    assert [c["id"] for c in data["added"]] == ["4"]
    assert [c["id"] for c in data["changed"]] == ["1"]
    assert [c["id"] for c in data["relinked"]] == ["3"]
    assert data["removed"] == [] and data["renamed"] == [] and data["catalog"] == {}
    assert data["catalog_files"] == []
    assert data["problems"] == []


def test_review_the_other_way_lists_what_main_changed(
    diverged: tuple[KnowledgeBase, KnowledgeBase]
) -> None:
    kb, _main_kb = diverged
    r = kb.history.review("feature", "master")
    assert [c.id for c in r.added] == ["4"] and r.added[0].label == "Main: cost excludes shipping."
    assert [c.id for c in r.changed] == ["3"] and r.changed[0].fields == ["learning", "updated_at"]
    assert [c.id for c in r.removed] == ["2"]
    assert r.relinked == [] and r.renamed == []
    assert r.catalog == {"leaves_removed": ["shop.orders.cost"]}
    assert r.catalog_files == [{"status": "changed", "path": "models/shop/orders.yaml"}]
    assert "\n### Catalog\n\n- changed `models/shop/orders.yaml`\n- leaves removed: `shop.orders.cost`\n" in r.markdown()
    assert r.markdown().startswith(
        "## Knowledge base changes (feature...master)\n\n"
        "Memories: 1 added, 1 changed, 0 re-linked, 1 removed.\n"
    )


def test_review_of_a_renumber_shows_a_rename(diverged: tuple[KnowledgeBase, KnowledgeBase]) -> None:
    kb, _main_kb = diverged
    assert renumber(kb, "master").mapping == {"4": "5"}
    r = kb.history.review("HEAD~1")
    assert [(c.old_id, c.id) for c in r.renamed] == [("4", "5")]
    assert r.added == [] and r.removed == []
    assert "- **5** (was 4): Feature: refunds are net of fees." in r.markdown()
    # Against master, the branch added 5: its own memory, whatever id it had on the way.
    r = kb.history.review("master")
    assert [c.id for c in r.added] == ["5"] and r.removed == [] and r.renamed == []


def test_a_file_broken_on_main_is_not_the_branch_problem(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    kb.save_memory("Amount is in EUR.", ["orders.amount"])
    git(kb.root, "switch", "-q", "-c", "feature")
    kb.save_memory("Feature note.", ["orders.qty"])
    git(kb.root, "switch", "-q", "master")
    (kb.root / "memories" / "1.yaml").write_text("learning: [unclosed\n")
    commit_all(kb.root, "break 1 on master")
    r = kb.history.review("master", "feature")
    assert [c.id for c in r.added] == ["2"] and r.changed == [] and r.problems == []


def test_review_with_unknown_or_unrelated_revisions(catalog_kb: KnowledgeBase, invoke_cli, tmp_path: Path) -> None:
    kb = catalog_kb
    kb.save_memory("Amount is in EUR.", ["orders.amount"])
    proc = invoke_cli("--kb", kb.root, "review", "main")
    assert proc.returncode == 1
    # run with --kb from elsewhere: the git command it gives runs there too
    assert proc.stderr == f"Error: Unknown revision 'main': give a commit, branch or tag (see 'git -C {kb.root} log').\n"
    git(kb.root, "switch", "-q", "--orphan", "elsewhere")
    (kb.root / "memories").mkdir(exist_ok=True)
    (kb.root / "memories" / "9.yaml").write_text("learning: x\ncreated_at: '2026-01-01T00:00:00Z'\n")
    git(kb.root, "add", "memories/9.yaml")
    git(kb.root, "commit", "-q", "-m", "unrelated")
    with pytest.raises(NotFoundError) as caught:
        kb.history.review("master")
    assert str(caught.value) == (
        "'master' and 'HEAD' have no common ancestor, so there is no change of 'HEAD' since it "
        "left 'master' to report; give a revision that 'HEAD' was branched from."
    )


def test_review_lists_catalog_files_the_branch_changed(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    kb.save_memory("Amount is in EUR.", ["orders.amount"])
    base = git(kb.root, "rev-parse", "HEAD").strip()
    # A description changed (no entity added or removed), a model renamed, the priority list gone.
    orders = kb.root / "models" / "shop" / "orders.yaml"
    orders.write_text(orders.read_text().replace("One row per customer order.", "One row per order."))
    git(kb.root, "mv", "models/wh/warehouses.yaml", "models/wh/depots.yaml")
    depots = kb.root / "models" / "wh" / "depots.yaml"
    depots.write_text(depots.read_text().replace("name: warehouses", "name: depots"))
    (kb.root / "priority.yaml").unlink()
    (kb.root / "memories" / ".gitkeep").write_text("")
    commit_all(kb.root, "catalog by hand")
    r = kb.history.review(base)
    assert r.catalog_files == [
        {"status": "changed", "path": "models/shop/orders.yaml"},
        {"status": "renamed", "path": "models/wh/depots.yaml", "old_path": "models/wh/warehouses.yaml"},
        {"status": "deleted", "path": "priority.yaml"},
    ]
    md = r.markdown()
    assert md.split("### Catalog\n\n", 1)[1].split("\n\n", 1)[0].splitlines()[:3] == [
        "- changed `models/shop/orders.yaml`",
        "- renamed `models/wh/depots.yaml` (was `models/wh/warehouses.yaml`)",
        "- deleted `priority.yaml`",
    ]
