"""log / show --rev / restore --rev and review, on real git repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import NotFoundError
from slayer_kb.ops.history import restore_revision, show, word_diff
from testing import commit_all, git, json_of


def head(kb: KnowledgeBase) -> str:
    return git(kb.root, "rev-parse", "HEAD").strip()


def test_log_lists_every_commit_of_one_memory(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    first = kb.save_memory("Amount is EUR", ["orders.amount"]).memory_id
    kb.save_memory("Something else", ["orders.status"])
    kb.update(first, learning="Amount is EUR incl. VAT")
    entries = kb.history.log(first)
    assert [e["message"] for e in entries] == [f"memory: update {first} (learning)", f"memory: save {first}"]
    assert entries[0]["author"] == "Test Author <author@example.com>"
    assert entries[0]["date"][:2] == "20"


def test_log_follows_a_rename(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    kb.save_memory("Amount is EUR", ["orders.amount"], id="old-name")
    git(kb.root, "mv", "memories/old-name.yaml", "memories/new-name.yaml")
    git(kb.root, "commit", "-q", "-m", "rename")
    assert [e["message"] for e in kb.history.log("new-name")] == ["rename", "memory: save old-name"]


def test_log_of_unknown_memory(catalog_kb: KnowledgeBase) -> None:
    catalog_kb.save_memory("x", ["orders.amount"])
    with pytest.raises(NotFoundError):
        catalog_kb.history.log("nope")


def test_show_rev_and_deleted_memory(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Version one", ["orders.amount"]).memory_id
    v1 = head(kb)
    kb.update(mid, learning="Version two")
    assert show(kb, mid, v1).memory.learning == "Version one"
    assert show(kb, mid).memory.learning == "Version two"
    kb.forget(mid)
    shown = show(kb, mid)
    assert shown.memory.learning == "Version two" and shown.deleted_in == head(kb)
    assert show(kb, mid, "HEAD~1").memory.learning == "Version two"
    with pytest.raises(NotFoundError):
        show(kb, mid, "HEAD")
    with pytest.raises(NotFoundError):
        show(kb, mid, "no-such-branch")


def test_restore_revision_brings_back_old_and_deleted_versions(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    target = kb.save_memory("Target", ["orders.status"]).memory_id
    mid = kb.save_memory("Version one", ["orders.amount", f"memory:{target}"]).memory_id
    v1 = head(kb)
    kb.update(mid, learning="Version two")
    result = restore_revision(kb, mid, v1)
    assert kb.get(mid).to_dict()["learning"] == "Version one"
    assert result.commit == head(kb)
    assert git(kb.root, "log", "-1", "--format=%s").startswith(f"memory: restore {mid} as of {v1[:12]}")
    # A deleted memory comes back; its reference to a memory forgotten since is dropped.
    kb.forget(mid)
    kb.forget(target)
    result = restore_revision(kb, mid, v1)
    assert kb.get(mid).to_dict()["entities"] == ["shop.orders.amount"]
    assert any(f"memory:{target}" in w for w in result.warnings)
    # Restoring what is already there commits nothing.
    before = head(kb)
    assert restore_revision(kb, mid, "HEAD").commit is None
    assert head(kb) == before


def test_soft_deleted_version_restores_live(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Soft", ["orders.amount"]).memory_id
    kb.forget(mid, soft=True)
    restore_revision(kb, mid, "HEAD")
    assert kb.get(mid).to_dict()["deleted_at"] is None


def test_word_diff() -> None:
    assert word_diff("Amount is in EUR.", "Amount is in USD now.") == "Amount is in [-EUR.-]{+USD now.+}"
    assert word_diff("a b c", "a b c") == "a b c"


def test_review_reports_every_kind_of_change(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    changed = kb.save_memory("Amount is in EUR.", ["orders.amount"]).memory_id
    relinked = kb.save_memory("Status values", ["orders.status"]).memory_id
    removed = kb.save_memory("Old note", ["orders.qty"]).memory_id
    base = head(kb)
    kb.update(changed, learning="Amount is in EUR including VAT.")
    kb.update(relinked, entities=["orders.status", "orders.created_at"])
    kb.forget(removed)
    added = kb.save_observation("Auth decision", "JWT over sessions", type="decision").memory_id
    # A catalog change and a broken file, committed by hand.
    model = kb.root / "models" / "shop" / "orders.yaml"
    model.write_text(model.read_text().replace("- {name: qty, sql: qty, type: INT, description: Items in the order}\n", ""))
    (kb.root / "memories" / "broken.yaml").write_text("learning: [unclosed\n")
    commit_all(kb.root, "hand edits")
    r = kb.history.review(base)
    # broken.yaml does not parse: added all the same, said so, its problem under Problems.
    assert [(c.id, c.unreadable) for c in r.added] == [(added, None), ("broken", "head")]
    assert r.added[0].label == "Auth decision"
    # In id order, as list and context give them, not git's path order (103, 25, 31, 5, x-note).
    # From a base after the forget: git could take a new file for the forgotten one renamed.
    since = head(kb)
    for memory_id in ("103", "25", "x-note", "5", "31"):
        kb.save_memory(f"Note {memory_id}", ["orders.amount"], id=memory_id)
    assert [c.id for c in kb.history.review(since).added] == ["5", "25", "31", "103", "x-note"]
    assert [c.id for c in r.changed] == [changed]
    assert r.changed[0].fields == ["learning", "updated_at"]
    assert r.changed[0].learning_diff == "Amount is in [-EUR.-]{+EUR including VAT.+}"
    assert [c.id for c in r.relinked] == [relinked]
    assert r.relinked[0].entities_added == ["shop.orders.created_at"]
    assert [c.id for c in r.removed] == [removed]
    assert r.catalog == {"leaves_removed": ["shop.orders.qty"]}
    assert any("broken.yaml" in p for p in r.problems)
    md = r.markdown()
    for text in ("### Added", "### Changed", "### Re-linked", "### Removed", "### Catalog", "### Problems",
                 "{+EUR including VAT.+}", "`shop.orders.qty`"):
        assert text in md


def test_review_lists_a_soft_delete_as_removed_and_a_restore_as_added(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """A memory the branch soft-deleted was listed under Changed as "(changed: deleted_at)" and
    counted as changed: a reviewer skimming the headline did not see it leave every search."""
    kb = catalog_kb
    gone = kb.save_memory("Old note", ["orders.qty"]).memory_id
    back = kb.save_memory("Kept note", ["orders.amount"]).memory_id
    kb.forget(back, soft=True)
    base = head(kb)
    invoke_cli("--kb", kb.root, "forget", gone, "--soft", check=True)
    invoke_cli("--kb", kb.root, "restore", back, check=True)
    md = invoke_cli("--kb", kb.root, "review", base, check=True).stdout
    assert md.splitlines()[2] == "Memories: 1 added, 0 changed, 0 re-linked, 1 removed."
    assert md.split("\n\n", 2)[2] == (
        f"### Added\n\n- **{back}**: Kept note (entities: `shop.orders.amount`; restored from a soft delete)\n\n"
        f"### Removed\n\n- **{gone}**: Old note (soft-deleted: its file stays, and no search shows it)\n")
    removed = json_of(invoke_cli("--kb", kb.root, "review", base, "--json", check=True))["removed"]
    assert removed == [{"id": gone, "label": "Old note", "entities": ["shop.orders.qty"],
                        "note": "soft-deleted: its file stays, and no search shows it"}]


def test_review_lists_what_else_a_soft_delete_and_a_restore_changed(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """A memory the branch edited and soft-deleted was listed as removed with its label alone:
    the edit (a learning rewritten, a link dropped) was in the pull request and in no line of its
    review. So for one restored and edited."""
    kb = catalog_kb
    gone = kb.save_memory("Old note about qty", ["orders.qty", "orders.amount"]).memory_id
    back = kb.save_memory("Kept note", ["orders.amount"]).memory_id
    kb.forget(back, soft=True)
    base = head(kb)
    invoke_cli("--kb", kb.root, "update", gone, "--learning", "Old note about units", "-e", "orders.qty", check=True)
    invoke_cli("--kb", kb.root, "forget", gone, "--soft", check=True)
    invoke_cli("--kb", kb.root, "restore", back, check=True)
    invoke_cli("--kb", kb.root, "update", back, "-e", "orders.amount", "-e", "orders.qty", check=True)
    md = invoke_cli("--kb", kb.root, "review", base, check=True).stdout
    assert md.split("\n\n", 2)[2] == (
        f"### Added\n\n- **{back}**: Kept note (entities: `shop.orders.amount`, `shop.orders.qty`; restored from a "
        "soft delete; also changed: entities, updated_at)\n  - entities added: `shop.orders.qty`\n\n"
        f"### Removed\n\n- **{gone}**: Old note about units (soft-deleted: its file stays, and no search shows it; "
        "also changed: learning, entities, updated_at)\n  - entities removed: `shop.orders.amount`\n\n"
        "  ```diff\n  Old note about [-qty-]{+units+}\n  ```\n")
    removed = json_of(invoke_cli("--kb", kb.root, "review", base, "--json", check=True))["removed"]
    assert removed == [{"id": gone, "label": "Old note about units", "entities": ["shop.orders.qty"],
                        "fields": ["learning", "entities", "updated_at"], "entities_added": [],
                        "entities_removed": ["shop.orders.amount"], "learning_diff": "Old note about [-qty-]{+units+}",
                        "note": "soft-deleted: its file stays, and no search shows it"}]


def test_review_flags_entities_that_do_not_resolve_at_head(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    base_mid = kb.save_memory("Uses qty", ["orders.qty"]).memory_id
    base = head(kb)
    (kb.root / "memories" / "9.yaml").write_text(
        "learning: hand written\nentities:\n- shop.orders.nope\ncreated_at: '2026-01-01T00:00:00Z'\n"
    )
    commit_all(kb.root, "hand")
    r = kb.history.review(base)
    assert [c.id for c in r.added] == ["9"]
    assert any("shop.orders.nope" in p for p in r.problems)
    assert base_mid not in {c.id for c in r.changed}


def test_review_shows_a_renumber_as_rename(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    kb.save_memory("one", ["orders.amount"])
    base = head(kb)
    git(kb.root, "mv", "memories/1.yaml", "memories/7.yaml")
    git(kb.root, "commit", "-q", "-m", "renumber")
    r = kb.history.review(base)
    assert [(c.old_id, c.id) for c in r.renamed] == [("1", "7")]
    assert "(was 1)" in r.markdown()


def test_cli_log_show_review(catalog_kb: KnowledgeBase, invoke_cli, tmp_path: Path) -> None:
    kb = catalog_kb
    base = head(kb)
    mid = kb.save_memory("Version one", ["orders.amount"]).memory_id
    kb.update(mid, learning="Version two")
    proc = invoke_cli("--kb", kb.root, "log", mid, "--json", check=True)
    assert [e["message"] for e in json_of(proc)] == [f"memory: update {mid} (learning)", f"memory: save {mid}"]
    proc = invoke_cli("--kb", kb.root, "show", mid, "--rev", "HEAD~1", "--json", check=True)
    assert json_of(proc)["learning"] == "Version one"
    proc = invoke_cli("--kb", kb.root, "show", mid, "--rev", "HEAD~1", check=True)
    assert "Version one" in proc.stdout
    proc = invoke_cli("--kb", kb.root, "review", base, check=True)
    assert proc.stdout.startswith("## Knowledge base changes") and "### Added" in proc.stdout
    proc = invoke_cli("--kb", kb.root, "review", base, "HEAD", "--json", check=True)
    assert json_of(proc)["added"][0]["id"] == mid
    proc = invoke_cli("--kb", kb.root, "show", "nope", "--rev", "HEAD", "--json")
    assert proc.returncode == 1 and json_of(proc)["error"]["type"] == "not_found"


def test_reviews_fmt_fix_names_the_file_from_where_it_ran(catalog_kb: KnowledgeBase, invoke_cli,
                                                           tmp_path: Path) -> None:
    """review names a branch's files from the KB's folder (memories/1.yaml), and so did its fix for
    a file not in canonical form: 'slayer-kb fmt memories/1.yaml', typed where review ran (the KB
    given by --kb), named no file. The fix names it from there, and works as written."""
    kb = catalog_kb
    base = head(kb)
    mid = kb.save_memory("Amount is in EUR", ["orders.amount"]).memory_id
    path = kb.root / "memories" / f"{mid}.yaml"
    path.write_text("# by hand\n" + path.read_text())
    commit_all(kb.root, "hand edit")
    problems = json_of(invoke_cli("--kb", "kb", "--json", "review", base, check=True, cwd=tmp_path))["problems"]
    fix = f"slayer-kb --kb kb fmt kb/memories/{mid}.yaml"  # as every fix names the KB
    assert problems == [f"memories/{mid}.yaml:1: not in canonical form; run '{fix}'"]
    invoke_cli(*fix.split()[1:], check=True, cwd=tmp_path)
    assert invoke_cli("--kb", kb.root, "validate", check=True).stdout == "Checked 1 file: no problems.\n"


def test_review_reports_the_ids_a_branch_adds_as_validate_does(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """review checked each file's text, never its name: a branch adding kb.case and KB.Case (which
    collide on a checkout that folds letter case), OLD.one beside old.one, and nul (a name Windows
    reserves) had a review with no problems while validate reported each."""
    kb = catalog_kb
    root = kb.root
    memory = "learning: {}\nentities:\n- shop.orders.amount\ncreated_at: '2026-01-01T00:00:00Z'\n"
    (root / "memories" / "old.one.yaml").write_text(memory.format("already there"))
    commit_all(root, "base")
    base = head(kb)
    for memory_id in ("kb.case", "KB.Case", "OLD.one", "nul"):
        (root / "memories" / f"{memory_id}.yaml").write_text(memory.format(memory_id))
    commit_all(root, "the branch")
    validated = invoke_cli("--kb", root, "validate", cwd=root).stdout.splitlines()[:-1]
    assert len(validated) == 5 and "differs only in letter case from kb.case" in validated[0], validated
    reviewed = json_of(invoke_cli("--kb", root, "--json", "review", base, check=True, cwd=root))["problems"]
    # Every problem validate finds but old.one's: the branch did not add it.
    assert sorted(reviewed) == [line for line in validated if not line.startswith("memories/old.one.yaml:")]


@pytest.mark.parametrize("target", ["../datasources", "{learning: from a link, created_at: '2026-01-01T00:00:00Z'}"],
                         ids=["a-folder", "text-that-reads-as-a-memory"])
def test_show_and_restore_of_a_revision_where_the_memory_was_a_symlink(catalog_kb: KnowledgeBase, invoke_cli,
                                                                       target: str) -> None:
    # A link's blob is its target's path: read as YAML it is a wrong message, or (a target that
    # reads as a mapping) a memory restore would bring back as a regular file.
    kb = catalog_kb
    (kb.root / "memories" / "77.yaml").symlink_to(target)
    commit_all(kb.root, "a link")
    linked = head(kb)
    (kb.root / "memories" / "77.yaml").unlink()
    commit_all(kb.root, "the link gone")
    before = head(kb)
    said = (f"Error: {linked[:7]}:memories/77.yaml is a symlink in that revision, which slayer-kb never reads as a "
            "memory: it holds no memory to show or restore; pick another from 'slayer-kb log 77'.\n")
    for verb in ("show", "restore"):
        proc = invoke_cli("--kb", kb.root, verb, "77", "--rev", linked[:7], cwd=kb.root)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", said)
    assert head(kb) == before and git(kb.root, "status", "--porcelain") == ""
    assert not (kb.root / "memories" / "77.yaml").exists()
