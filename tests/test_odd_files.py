"""Files that are not what a KB's files should be, as a clone or a careless hand can leave them:
catalog files and folders that are symlinks, memory file names that are not UTF-8, and FIFOs,
folders and devices where a memory file should be. Nothing is deleted or rewritten through a
link, nothing but a regular file is ever opened, and none of them crashes or hangs a command."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import CliRunner, commit_all, git

from slayer_kb import KnowledgeBase
from slayer_kb.errors import CatalogError

CREATED = "created_at: '2026-01-01T00:00:00Z'\n"


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def assert_refused(proc, error: str) -> None:
    """Exit 1 with exactly ``error`` (one line, no traceback) on stderr."""
    assert (proc.returncode, proc.stderr) == (1, f"Error: {error}\n")


# -- symlinked catalog files (issue 16, item 3) ----------------------------------------------------


def test_delete_model_never_deletes_through_a_symlinked_model_file(catalog_kb: KnowledgeBase, run_cli: CliRunner) -> None:
    root = catalog_kb.root
    (root / "models" / "shop" / "alias.yaml").symlink_to("../wh/orders.yaml")
    (root / "memories" / "1.yaml").write_text("learning: Net amounts.\nentities:\n- wh.orders.amount\n" + CREATED)
    commit_all(root, "an alias of wh.orders in shop")
    target = (root / "models" / "wh" / "orders.yaml").read_text()
    before = head(root)
    # shop's "orders" is now read from alias.yaml (sorted before orders.yaml): deleting it used
    # to remove wh/orders.yaml, the link's target, and leave wh.orders's references behind.
    proc = run_cli("--kb", root, "delete-model", "orders", "--datasource", "shop")
    assert_refused(
        proc,
        "Refusing to delete models/shop/alias.yaml: it is a symlink (to ../wh/orders.yaml), and "
        "slayer-kb never deletes or rewrites a file through a link. Replace the link with a copy "
        "of the file it points to, or remove it with 'git rm models/shop/alias.yaml', then retry.",
    )
    assert (root / "models" / "wh" / "orders.yaml").read_text() == target
    assert os.readlink(root / "models" / "shop" / "alias.yaml") == "../wh/orders.yaml"
    assert head(root) == before
    assert git(root, "status", "--porcelain") == ""


def refused(call, error: str) -> None:
    """``call()`` raises a CatalogError of exactly ``error``."""
    with pytest.raises(CatalogError) as info:
        call()
    assert str(info.value) == error


LINK_RULE = "and slayer-kb never deletes or rewrites a file through a link."


def test_links_out_of_the_kb_are_refused_with_a_message(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    root = catalog_kb.root
    outside = tmp_path / "outside"
    (outside / "far").mkdir(parents=True)
    model = "name: ext\ncolumns:\n- {name: a, type: INT}\n- {name: b, type: INT}\n"
    (outside / "ext.yaml").write_text(model)
    (outside / "far" / "m.yaml").write_text("name: m\ncolumns:\n- {name: a, type: INT}\n")
    (root / "models" / "wh" / "ext.yaml").symlink_to(outside / "ext.yaml")
    (root / "models" / "far").symlink_to(outside / "far", target_is_directory=True)
    commit_all(root, "links out of the KB")
    before = head(root)
    kb = KnowledgeBase(root)
    # A link out of the KB used to be a "ValueError ... is not in the subpath" traceback.
    fix = "Replace the link with a copy of the file it points to, or remove it with 'git rm models/wh/ext.yaml', then retry."
    refused(lambda: kb.delete_model("wh.ext"),
            f"Refusing to delete models/wh/ext.yaml: it is a symlink (to {outside / 'ext.yaml'}), {LINK_RULE} {fix}")
    refused(lambda: kb.delete_leaf("wh.ext.a"),
            f"Refusing to rewrite models/wh/ext.yaml: it is a symlink (to {outside / 'ext.yaml'}), {LINK_RULE} {fix}")
    folder = (f"folder models/far is a symlink (to {outside / 'far'}), {LINK_RULE} Replace models/far with a "
              "real folder, then retry.")
    refused(lambda: kb.delete_model("far.m"), f"Refusing to delete models/far/m.yaml: {folder}")
    refused(lambda: kb.delete_datasource("far"), f"Refusing to delete models/far/m.yaml: {folder}")
    assert (outside / "ext.yaml").read_text() == model
    assert sorted(p.name for p in outside.rglob("*")) == ["ext.yaml", "far", "m.yaml"]
    assert head(root) == before


def test_a_symlinked_priority_file_is_not_rewritten(catalog_kb: KnowledgeBase) -> None:
    root = catalog_kb.root
    (root / "shared").mkdir()
    (root / "priority.yaml").rename(root / "shared" / "priority.yaml")
    (root / "priority.yaml").symlink_to("shared/priority.yaml")
    (root / "datasources" / "dw.yaml").write_text("name: dw\n")
    (root / "shared" / "priority.yaml").write_text("priority:\n- shop\n- dw\n")
    commit_all(root, "a shared priority list")
    before = head(root)
    refused(
        lambda: KnowledgeBase(root).delete_datasource("dw"),
        f"Refusing to rewrite priority.yaml: it is a symlink (to shared/priority.yaml), {LINK_RULE} Replace "
        "the link with a copy of the file it points to, or remove it with 'git rm priority.yaml', then retry.",
    )
    assert (root / "shared" / "priority.yaml").read_text() == "priority:\n- shop\n- dw\n"
    assert (root / "datasources" / "dw.yaml").exists()
    assert head(root) == before


def test_a_moved_kb_deletes_its_own_files(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    """The parsed catalog cached in .slayer-kb/ moves with the KB (mv keeps every file's inode
    and mtime): the paths it holds must be the new place's, never the old one's."""
    catalog_kb.ensure_fresh()
    assert catalog_kb.catalog.datasources["shop"].models["refunds"]
    catalog_kb.close()
    moved = tmp_path / "moved"
    shutil.move(catalog_kb.root, moved)
    kb = KnowledgeBase(moved)
    result = kb.delete_model("shop.refunds")
    assert result.deleted == "shop.refunds"
    assert not (moved / "models" / "shop" / "refunds.yaml").exists()
    assert git(moved, "show", "--name-only", "--format=", "HEAD").split() == ["models/shop/refunds.yaml"]
