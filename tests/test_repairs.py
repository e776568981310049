"""Repairs without git: ``restore ID --rev REV`` over a file broken or edited by hand, ``forget``
of a broken file, and history that follows a renumbered memory."""

from __future__ import annotations

from pathlib import Path

from slayer_kb import KnowledgeBase
from testing import commit_all, counted_apart, git, json_of

BROKEN = "learning: [unclosed\n"


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def subjects(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def test_restore_rev_head_repairs_a_file_broken_by_hand(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Amount is in EUR.", ["orders.amount"]).memory_id
    path = kb.root / "memories" / f"{mid}.yaml"
    committed = path.read_bytes()
    before = head(kb.root)
    path.write_text(BROKEN)
    proc = invoke_cli("--kb", kb.root, "restore", mid, "--rev", "HEAD")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        f"Restored memory {mid} as of {before[:12]}\n"
        f"warning: memories/{mid}.yaml had changes that were never committed; they are discarded "
        "and the file holds the version at HEAD.\n"
    )
    assert path.read_bytes() == committed
    assert head(kb.root) == before  # HEAD already had that version: nothing to commit
    assert git(kb.root, "status", "--porcelain") == ""
    proc = invoke_cli("--kb", kb.root, "validate", check=True)
    assert proc.stdout == "Checked 1 file: no problems.\n"
    proc = invoke_cli("--kb", kb.root, "get", mid, "--json", check=True)
    assert json_of(proc)["learning"] == "Amount is in EUR."
    # Once repaired, a second restore has nothing to do, and says so.
    proc = invoke_cli("--kb", kb.root, "restore", mid, "--rev", "HEAD", check=True)
    assert proc.stdout == f"Memory {mid} is already as it was at HEAD ({before[:12]}); nothing to commit.\n"
    proc = invoke_cli("--kb", kb.root, "--json", "restore", mid, "--rev", "HEAD", check=True)
    assert (json_of(proc)["action"], json_of(proc)["commit"], json_of(proc)["warnings"]) == ("unchanged", None, [])
    assert head(kb.root) == before


def test_restore_rev_repairs_a_broken_file_that_was_committed(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Amount is in EUR.", ["orders.amount"]).memory_id
    path = kb.root / "memories" / f"{mid}.yaml"
    good = path.read_bytes()
    path.write_text(BROKEN)
    commit_all(kb.root, "hand edit")
    proc = invoke_cli("--kb", kb.root, "restore", mid, "--rev", "HEAD~1", check=True)
    assert proc.stdout == f"Restored memory {mid} as of {git(kb.root, 'rev-parse', 'HEAD~2').strip()[:12]}\n"
    assert path.read_bytes() == good
    assert subjects(kb.root)[0] == f"memory: restore {mid} as of {git(kb.root, 'rev-parse', 'HEAD~2').strip()[:12]}"
    assert git(kb.root, "status", "--porcelain") == ""


def test_restore_rev_over_a_hand_edit_commits_the_old_version(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Version one.", ["orders.amount"]).memory_id
    kb.update(mid, learning="Version two.")
    path = kb.root / "memories" / f"{mid}.yaml"
    path.write_text(path.read_text().replace("Version two.", "Version three, never committed."))
    proc = invoke_cli("--kb", kb.root, "restore", mid, "--rev", "HEAD~1", "--json", check=True)
    data = json_of(proc)
    assert data["commit"] == head(kb.root)
    assert data["warnings"] == [
        f"memories/{mid}.yaml had changes that were never committed; they are discarded and the "
        "file holds the version at HEAD~1."
    ]
    assert KnowledgeBase(kb.root).get(mid).to_dict()["learning"] == "Version one."
    assert git(kb.root, "status", "--porcelain") == ""


def test_restore_rev_puts_back_a_file_deleted_by_hand(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Amount is in EUR.", ["orders.amount"]).memory_id
    path = kb.root / "memories" / f"{mid}.yaml"
    committed = path.read_bytes()
    path.unlink()
    proc = invoke_cli("--kb", kb.root, "restore", mid, "--rev", "HEAD", check=True)
    assert proc.stdout == f"Restored memory {mid} as of {head(kb.root)[:12]}\n"
    assert path.read_bytes() == committed
    assert git(kb.root, "status", "--porcelain") == ""


def test_state_folder_ignores_itself_in_a_repository_init_did_not_make(tmp_path: Path, invoke_cli) -> None:
    """A SLayer storage folder put under git by hand, with no .gitignore: slayer-kb's derived
    state never shows up in git status, and 'git add -A' commits none of it."""
    from testing import write_test_catalog

    root = tmp_path / "storage"
    root.mkdir()
    git(root, "init", "-q")
    write_test_catalog(root, priority=["shop"])
    commit_all(root, "SLayer storage")
    invoke_cli("--kb", root, "save", "Amount is in EUR.", "-e", "orders.amount", check=True)
    invoke_cli("--kb", root, "search", "amount", check=True)
    assert (root / ".slayer-kb").is_dir()
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    git(root, "add", "-A")
    assert git(root, "diff", "--cached", "--name-only") == ""
    assert git(root, "ls-files", ".slayer-kb") == ""


def test_log_follows_a_renumber_commit(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    kb, root = catalog_kb, catalog_kb.root
    git(root, "switch", "-q", "-c", "feature")
    assert kb.save_memory("Feature's note", ["orders.qty"]).memory_id == "1"
    kb.update("1", learning="Feature's note, revised")
    other = root.parent / "master-worktree"
    git(root, "worktree", "add", "-q", str(other), "master")
    counted_apart(other)  # as another clone: the worktrees' shared count forgotten
    assert KnowledgeBase(other).save_memory("Master's note", ["orders.amount"]).memory_id == "1"
    invoke_cli("--kb", root, "renumber", "--onto", "master", check=True)
    proc = invoke_cli("--kb", root, "log", "2", check=True)
    lines = proc.stdout.splitlines()
    assert lines[1::2] == [
        "    memory: renumber 1 -> 2 (onto master)",
        "    memory: update 1 (learning)",
        "    memory: save 1",
    ]
    assert all(line.endswith(" Test Author <author@example.com>") for line in lines[0::2])


def test_log_never_lists_another_memory_that_looks_alike(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """git log --follow also follows copies: a new memory much like an old one (small files are
    half alike by git's measure) would get the old one's history."""
    root = catalog_kb.root
    created = "created_at: '2026-01-01T00:00:00Z'\n"
    (root / "memories" / "1.yaml").write_text(f"learning: A's note\nentities:\n- shop.orders.amount\n{created}")
    commit_all(root, "memory: save 1")
    (root / "memories" / "2.yaml").write_text(f"learning: B's note\nentities:\n- shop.orders.qty\n{created}")
    commit_all(root, "memory: save 2")
    proc = invoke_cli("--kb", root, "log", "2", "--json", check=True)
    assert [e["message"] for e in json_of(proc)] == ["memory: save 2"]


def test_forget_deletes_a_broken_memory_file(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    kb, root = catalog_kb, catalog_kb.root
    mid = kb.save_memory("Amount is in EUR.", ["orders.amount"]).memory_id
    other = kb.save_memory("See the other note.", ["orders.qty", f"memory:{mid}"]).memory_id
    (root / "memories" / f"{mid}.yaml").write_text(BROKEN)
    commit_all(root, "a bad hand edit")
    proc = invoke_cli("--kb", root, "forget", mid, check=True)
    assert proc.stdout == f"Forgot memory {mid}\n  stripped memory:{mid} from {other}\n"
    assert not (root / "memories" / f"{mid}.yaml").exists()
    assert subjects(root)[0] == f"memory: forget {mid}"
    assert KnowledgeBase(root).get(other).to_dict()["entities"] == ["shop.orders.qty"]
    assert git(root, "status", "--porcelain") == ""
    # What is no regular file is not deleted through slayer-kb.
    (root / "memories" / "link.yaml").symlink_to(root / "memories" / f"{other}.yaml")
    proc = invoke_cli("--kb", root, "forget", "link")
    assert (proc.returncode, proc.stderr) == (1, (
        "Error: memories/link.yaml: is a symlink; refusing to follow it; move it out of memories/ "
        "by hand (it is not a regular file slayer-kb may delete)\n"))


def test_forget_of_a_file_broken_by_hand_says_how_to_go_on(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    kb, root = catalog_kb, catalog_kb.root
    mid = kb.save_memory("Amount is in EUR.", ["orders.amount"]).memory_id
    path = root / "memories" / f"{mid}.yaml"
    path.write_text(BROKEN)
    before = head(root)
    run = f"slayer-kb --kb {root}"  # from elsewhere: each command it names runs as pasted
    proc = invoke_cli("--kb", root, "forget", mid, "--soft")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"Error: memories/{mid}.yaml:2: invalid YAML: did not find expected ',' or ']'; a soft "
        f"forget rewrites the file, so it must be a valid memory: repair it first ('{run} edit "
        f"{mid}', or '{run} restore {mid} --rev REV' for a version '{run} log {mid}' "
        f"lists), or delete it for good with '{run} forget {mid}'\n"
    )
    # The broken version was never committed: a hard forget would throw it away, so it asks.
    proc = invoke_cli("--kb", root, "forget", mid)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"Error: memories/{mid}.yaml has changes that are not committed")
    assert proc.stderr.endswith(f"--force to rewrite it from HEAD and keep your version as memories/{mid}.yaml.orig.\n")
    assert head(root) == before and path.read_text() == BROKEN
    proc = invoke_cli("--kb", root, "forget", mid, "--force", check=True)
    assert not path.exists() and (root / "memories" / f"{mid}.yaml.orig").read_text() == BROKEN
    assert subjects(root)[0] == f"memory: forget {mid}"
