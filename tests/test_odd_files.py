"""Files that are not what a KB's files should be, as a clone or a careless hand can leave them:
catalog files and folders that are symlinks, memory file names that are not UTF-8, and FIFOs,
folders and devices where a memory file should be. Nothing is deleted or rewritten through a
link, nothing but a regular file is ever opened, and none of them crashes or hangs a command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import CatalogError, MemoryFileError, NotFoundError, StoreError
from testing import CliRunner, commit_all, git

CREATED = "created_at: '2026-01-01T00:00:00Z'\n"


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def assert_refused(proc, error: str) -> None:
    """Exit 1 with exactly ``error`` (one line, no traceback) on stderr."""
    assert (proc.returncode, proc.stderr) == (1, f"Error: {error}\n")


# -- symlinked catalog files (issue 16, item 3) ----------------------------------------------------


def test_delete_model_never_deletes_through_a_symlinked_model_file(catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = catalog_kb.root
    (root / "models" / "shop" / "alias.yaml").symlink_to("../wh/orders.yaml")
    (root / "memories" / "1.yaml").write_text("learning: Net amounts.\nentities:\n- wh.orders.amount\n" + CREATED)
    commit_all(root, "an alias of wh.orders in shop")
    target = (root / "models" / "wh" / "orders.yaml").read_text()
    before = head(root)
    # shop's "orders" is now read from alias.yaml (sorted before orders.yaml): deleting it used
    # to remove wh/orders.yaml, the link's target, and leave wh.orders's references behind.
    proc = invoke_cli("--kb", root, "delete-model", "orders", "--datasource", "shop")
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


def test_catalog_links_out_of_the_kb_are_never_read(catalog_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                   tmp_path: Path) -> None:
    root = catalog_kb.root
    outside = tmp_path / "outside"
    (outside / "far").mkdir(parents=True)
    model = "name: ext\ndescription: SECRET-MODEL\ncolumns:\n- {name: a, type: INT}\n"
    (outside / "ext.yaml").write_text(model)
    (outside / "far" / "m.yaml").write_text("name: m\ndescription: SECRET-FOLDER\n")
    (outside / "ds.yaml").write_text("name: leak\ndescription: SECRET-DATASOURCE\n")
    (root / "models" / "wh" / "ext.yaml").symlink_to(outside / "ext.yaml")
    (root / "models" / "far").symlink_to(outside / "far", target_is_directory=True)
    (root / "datasources" / "leak.yaml").symlink_to(outside / "ds.yaml")
    commit_all(root, "links out of the KB")
    before = head(root)
    # A clone's link to ~/.ssh or /etc used to be read, and its descriptions searched and shown.
    proc = invoke_cli("--kb", root, "search", "SECRET", "--json")
    assert proc.returncode == 0 and "SECRET-" not in proc.stdout.replace("'SECRET'", "")
    rule = "outside the knowledge base, and slayer-kb never reads outside it. Replace the link with a copy of what it points to, or remove it with"
    assert [w for w in json.loads(proc.stdout)["warnings"] if "symlink" in w] == [
        f"datasources/leak.yaml: is a symlink to {outside / 'ds.yaml'}, {rule} 'git rm datasources/leak.yaml' (skipped)",
        f"models/far: is a symlink to {outside / 'far'}, {rule} 'git rm models/far' (skipped)",
        f"models/wh/ext.yaml: is a symlink to {outside / 'ext.yaml'}, {rule} 'git rm models/wh/ext.yaml' (skipped)",
    ]
    kb = KnowledgeBase(root)
    assert not kb.catalog.entity_exists("wh.ext") and "far" not in kb.catalog.datasources
    with pytest.raises(NotFoundError):
        kb.delete_model("wh.ext")
    assert sorted(p.name for p in outside.rglob("*")) == ["ds.yaml", "ext.yaml", "far", "m.yaml"]
    assert (outside / "ext.yaml").read_text() == model
    assert head(root) == before


@pytest.mark.parametrize("folder", ["memories", "sessions"])
def test_a_memories_or_sessions_folder_linked_out_of_the_kb_is_refused(catalog_kb: KnowledgeBase,
                                                                       invoke_cli: CliRunner, tmp_path: Path,
                                                                       folder: str) -> None:
    root = catalog_kb.root
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "7.yaml").write_text("learning: SECRET-TEXT\nproject: secret\n" + CREATED)
    shutil.rmtree(root / folder, ignore_errors=True)
    (root / folder).symlink_to(outside, target_is_directory=True)
    commit_all(root, f"{folder} is a link")
    error = (f"{folder}/ is a symlink to {outside}, outside the knowledge base, and slayer-kb never reads or "
             f"writes outside it. Replace the link with a real folder holding the files ('git rm {folder}', "
             f"then 'mkdir {folder}' and copy them in), then retry.")
    # search used to show a linked memories/ folder's files, and sessions a linked sessions/.
    for args in (["search", "SECRET"], ["list"], ["get", "7"], ["sessions"], ["validate"]):
        assert_refused(invoke_cli("--kb", root, *args), error)
    proc = invoke_cli("--kb", root, "--json", "save", "x", "--title", "t")
    assert (proc.returncode, json.loads(proc.stdout)) == (1, {"error": {"type": "store", "message": error}})
    assert sorted(p.name for p in outside.iterdir()) == ["7.yaml"]


def test_a_memories_folder_linked_out_after_the_kb_was_opened_is_refused(catalog_kb: KnowledgeBase,
                                                                       tmp_path: Path) -> None:
    """As the MCP and warm servers hold the KB: opened (and kept warm) before a pull makes
    memories/ a link out of the KB. Every later read or write refuses it, without a restart."""
    from slayer_kb.mcp.tools import call_tool

    kb, root = catalog_kb, catalog_kb.root
    saved = kb.save_memory("Amount is in EUR.", ["orders.amount"]).memory_id
    kb.keep_warm()
    assert [h["id"] for h in kb.search("EUR").memories] == [saved]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / f"{saved}.yaml").write_text("learning: SECRET-TEXT\n" + CREATED)
    (root / "memories").rename(root / "memories-old")
    (root / "memories").symlink_to(outside, target_is_directory=True)
    error = (f"memories/ is a symlink to {outside}, outside the knowledge base, and slayer-kb never reads or "
             "writes outside it. Replace the link with a real folder holding the files ('git rm memories', "
             "then 'mkdir memories' and copy them in), then retry.")
    for call in (lambda: kb.search("SECRET"), lambda: kb.get(saved), lambda: kb.newest(),
                 lambda: kb.save_memory("x", ["orders.amount"])):
        with pytest.raises(StoreError) as info:
            call()
        assert str(info.value) == error
    reply = call_tool(kb, "mem_search", {"query": "SECRET"})
    assert (reply.is_error, reply.text) == (True, error)
    assert sorted(p.name for p in outside.iterdir()) == [f"{saved}.yaml"]


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


# -- memory file names that are not UTF-8 (issue 16, item 6) -----------------------------------

NOT_UTF8 = ("its name is not UTF-8, so no memory id can name it; rename it (git mv) to a UTF-8 name")


def bad_name(folder: Path, raw: bytes) -> bytes:
    return os.fsencode(folder / "memories") + b"/" + raw + b".yaml"


def test_a_name_that_is_not_utf8_is_skipped_with_a_warning(catalog_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path) -> None:
    origin = catalog_kb.root
    (origin / "memories" / "keep.yaml").write_text("learning: A bystander.\nentities:\n- memory:other\n" + CREATED)
    (origin / "memories" / "other.yaml").write_text("learning: Another.\n" + CREATED)
    with open(bad_name(origin, b"\xff"), "wb") as handle:
        handle.write(b"learning: No id can name this.\n" + CREATED.encode())
    commit_all(origin, "a name git carries but no id can be")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert os.path.isfile(bad_name(clone, b"\xff"))
    # search, list, stats, update and forget all crashed (UnicodeEncodeError) in a fresh clone.
    proc = invoke_cli("--kb", clone, "search", "bystander")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Memories:\n  [keep] A bystander.\n")
    assert f"warning: memories/\\xff.yaml: {NOT_UTF8} (skipped)\n" in proc.stdout
    kb = KnowledgeBase(clone)
    assert [m["id"] for m in kb.newest()] == ["other", "keep"]
    assert kb.stats()["memories"] == 2
    assert kb.update("other", title="Other").memory["title"] == "Other"
    assert kb.forget("other").stripped_from == ["keep"]
    assert kb.memory_ids() == ["keep"]
    kb.refresh([os.fsdecode(b"\xff")])  # what a file watcher passes on for the name
    # One more such name arriving (a pull) is noticed and reported; one going away is forgotten.
    with open(bad_name(clone, b"caf\xe9"), "wb") as handle:
        handle.write(b"learning: Latin-1.\n" + CREATED.encode())
    warnings = [w for w in kb.search("bystander").warnings if "UTF-8" in w]
    assert warnings == [f"memories/\\xff.yaml: {NOT_UTF8} (skipped)", f"memories/caf\\xe9.yaml: {NOT_UTF8} (skipped)"]
    os.unlink(bad_name(clone, b"\xff"))
    assert [str(p) for p in kb.reindex().problems] == [f"memories/caf\\xe9.yaml: {NOT_UTF8}"]
    assert os.path.isfile(bad_name(clone, b"caf\xe9"))
    assert git(clone, "log", "-1", "--format=%s").strip() == "memory: forget other"


# -- FIFOs and folders where a memory file should be (issue 16, item 7) --------------------------


def run_bounded(root: Path, *args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    """The CLI, killed and failed after ``timeout`` seconds: a command that waits on a FIFO must
    fail this test, never hang the suite."""
    try:
        return subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), *args],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"slayer-kb {' '.join(args)} hung for {timeout} s")


def test_a_fifo_is_never_opened(catalog_kb: KnowledgeBase) -> None:
    root = catalog_kb.root
    (root / "memories" / "keep.yaml").write_text("learning: A bystander.\nentities:\n- shop.orders.amount\n" + CREATED)
    commit_all(root, "bystander")
    os.mkfifo(root / "memories" / "ff.yaml")
    os.mkfifo(root / "datasources" / "pipe.yaml")  # young: its bytes would be hashed for freshness
    before = head(root)
    assert_refused(run_bounded(root, "get", "ff"),
                   "memories/ff.yaml: is a FIFO, not a regular file; refusing to open it; move it out of memories/ by hand, then retry")
    listed = run_bounded(root, "search", "bystander")
    assert listed.returncode == 0, listed.stderr
    assert "[keep] A bystander." in listed.stdout
    assert "warning: memories/ff.yaml: is a FIFO, not a regular file; move it out of memories/ (skipped)" in listed.stdout
    assert head(root) == before
    # A save to that id replaces the FIFO with the memory's file, as it replaces a symlink.
    saved = run_bounded(root, "save", "Now a memory.", "-e", "shop.orders.amount", "--id", "ff")
    assert (saved.returncode, saved.stdout.splitlines()[0]) == (0, "Saved memory ff (replaced)"), saved.stderr
    assert (root / "memories" / "ff.yaml").is_file()
    assert git(root, "log", "-1", "--format=%s").strip() == "memory: save ff"
    assert KnowledgeBase(root).get("ff").to_dict()["learning"] == "Now a memory."


def test_a_folder_where_a_memory_file_should_be(catalog_kb: KnowledgeBase) -> None:
    root = catalog_kb.root
    (root / "memories" / "dd.yaml").mkdir()
    (root / "memories" / "dd.yaml" / "inside.txt").write_text("not a memory\n")
    before = head(root)
    kb = KnowledgeBase(root)
    with pytest.raises(MemoryFileError) as info:
        kb.get("dd").to_dict()
    assert str(info.value) == "memories/dd.yaml: is a folder, not a regular file; refusing to open it; move it out of memories/ by hand, then retry"
    # Saving there used to commit, then fail to write the file, and break every later command.
    with pytest.raises(StoreError) as info:
        kb.save_memory("x", ["shop"], id="dd")
    assert str(info.value) == ("Refusing to write memories/dd.yaml: it is a folder, not a file. Move it "
                               "out of the way and retry; nothing was saved.")
    assert head(root) == before
    assert kb.newest() == []
    assert (root / "memories" / "dd.yaml" / "inside.txt").read_text() == "not a memory\n"


def test_a_committed_file_in_place_of_memories_is_named_and_never_deleted_by_a_save(
    empty_kb: KnowledgeBase, invoke_cli: CliRunner
) -> None:
    """A file named memories committed where the folder should be: every command names it and the
    fix (inside the KB it used to say there is no knowledge base here); moved aside but not
    committed, a save refuses to commit its deletion for the user."""
    root = empty_kb.root
    shutil.rmtree(root / "memories")
    (root / "memories").write_text("my notes\n")
    commit_all(root, "memories as a file")
    named = ("memories is a file, where the knowledge base keeps its memories/ folder. Move it out of the way, and "
             "commit that if git tracks it ('git mv memories memories.txt', then 'git commit'), then retry.")
    assert_refused(invoke_cli("list", cwd=root), named)
    proc = invoke_cli("--kb", root, "--json", "save", "x", "--title", "x")
    assert (proc.returncode, json.loads(proc.stdout)) == (1, {"error": {"type": "store", "message": named}})
    (root / "memories").rename(root / "notes.txt")
    (root / "memories").mkdir()
    before = head(root)
    assert_refused(invoke_cli("--kb", root, "save", "x", "--title", "x"), (
        "Refusing to write memories/1.yaml: the last commit has the file memories there, which this commit would "
        "delete. Move it out of the way and commit that yourself (git mv, then git commit), then retry; nothing was "
        "saved."))
    assert (head(root), git(root, "status", "--porcelain")) == (before, " D memories\n?? notes.txt\n")
    commit_all(root, "memories moved aside")
    invoke_cli("--kb", root, "save", "x", "--title", "x", check=True)
    assert git(root, "show", "HEAD:notes.txt") == "my notes\n"


def test_a_save_never_commits_the_deletion_of_a_folder_the_user_removed(catalog_kb: KnowledgeBase) -> None:
    root = catalog_kb.root
    (root / "memories" / "dd.yaml").mkdir()
    (root / "memories" / "dd.yaml" / "inside.txt").write_text("not a memory\n")
    commit_all(root, "a folder named like a memory")
    shutil.rmtree(root / "memories" / "dd.yaml")
    before = head(root)
    with pytest.raises(StoreError) as info:
        catalog_kb.save_memory("x", ["shop"], id="dd")
    assert str(info.value) == (
        "Refusing to write memories/dd.yaml: the last commit has the folder memories/dd.yaml/ there, which this "
        "commit would delete. Move it out of the way and commit that yourself (git mv, then git commit), then "
        "retry; nothing was saved.")
    assert (head(root), git(root, "status", "--porcelain")) == (before, " D memories/dd.yaml/inside.txt\n")
