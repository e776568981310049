"""--force sets the user's uncommitted versions aside (``<file>.orig``, HEAD's put back) only for
a commit: a command that fails after setting them aside puts them back where they were, in the
work tree and git's index, and leaves no copy. It left HEAD's versions in their place and the
user's work in ``.orig`` files, git's index holding HEAD's versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from testing import CliRunner, git

EDIT = "learning: Average selling price per category, by hand.\nentities:\n- shop.order_items\n"


def state(root: Path) -> tuple[str, str, str, list[str]]:
    """HEAD, git status, git's index's version of 17, and every copy ``--force`` keeps."""
    return (git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"),
            git(root, "show", ":memories/17.yaml"), sorted(p.name for p in root.glob("memories/*.orig*")))


def test_update_force_that_fails_late_puts_the_users_versions_back(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """17 is an example query at HEAD; the user's version, staged and then edited again, drops
    the query. update -e reads the user's version, sets both aside, then finds from HEAD's that
    -e cannot replace an example query's entities, and fails."""
    root = indexed_example_kb.root
    path = root / "memories" / "17.yaml"
    created = path.read_text().rpartition("created_at:")[2]
    path.write_text(f"{EDIT}created_at:{created}")
    git(root, "add", "memories/17.yaml")
    path.write_text(f"{EDIT}- shop.products\ncreated_at:{created}")
    before = state(root)
    assert before[1:3] == ("MM memories/17.yaml\n", f"{EDIT}created_at:{created}")
    proc = invoke_cli("--kb", root, "update", "17", "-e", "shop.orders", "--force")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.startswith("Error: Memory 17 is an example query: its entities are its query's")
    assert state(root) == before
    assert path.read_text() == f"{EDIT}- shop.products\ncreated_at:{created}"
    # The search index reads the user's version again.
    shown = invoke_cli("--kb", root, "--json", "get", "17", check=True).stdout
    assert "by hand" in shown


@pytest.mark.slow  # git's index lock is waited for (store/indexlock.py's 2 s) before the error
def test_a_set_aside_stopped_by_git_s_index_lock_leaves_no_copy(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """Another git command holds git's index (index.lock) while forget --force sets 17 aside: the
    copy was made, HEAD's version could not be put back, and 17.yaml.orig stayed beside the
    user's untouched file, named by no reply."""
    root = indexed_example_kb.root
    path = root / "memories" / "17.yaml"
    path.write_text(path.read_text().replace("Average selling price", "Average price"))
    before = state(root)
    lock = Path(git(root, "rev-parse", "--git-path", "index.lock").strip())
    lock = lock if lock.is_absolute() else root / lock
    lock.write_text("")
    proc = invoke_cli("--kb", root, "forget", "17", "--force")
    lock.unlink()
    assert (proc.returncode, proc.stdout) == (1, "")
    assert "index.lock" in proc.stderr
    assert state(root) == before
