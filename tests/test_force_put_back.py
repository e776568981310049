"""--force sets the user's uncommitted versions aside (``<file>.orig``, HEAD's put back) only for
a commit: a command that fails after setting them aside puts them back where they were, in the
work tree and git's index, and leaves no copy. It left HEAD's versions in their place and the
user's work in ``.orig`` files, git's index holding HEAD's versions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.store.aside import Aside, by_hand
from testing import CliRunner, git, json_of

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
    # The next command reads the user's version (get reads the file; search its index).
    assert "by hand" in invoke_cli("--kb", root, "--json", "get", "17", check=True).stdout
    found = json_of(invoke_cli("--kb", root, "--json", "search", "by hand", check=True))
    assert "17" in [hit["id"] for hit in found["memories"] + found["example_queries"]]


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


def hook(root: Path, name: str, body: str) -> None:
    """Install git's hook ``name`` (a shell script) in the KB's repository."""
    hooks = Path(git(root, "rev-parse", "--git-path", "hooks").strip())
    path = (hooks if hooks.is_absolute() else root / hooks) / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def refuse_commits(root: Path) -> None:
    """A reference-transaction hook refuses every ref update: the command fails after --force set
    the files aside, where its commit would be published."""
    hook(root, "reference-transaction", '[ "$1" = prepared ] && { echo no >&2; exit 1; }\nexit 0')


def once_after_set_aside(root: Path, action: str) -> None:
    """``action`` run once, from git's first index change (set_aside's checkout of HEAD's versions)."""
    flag = root / "hook-ran"
    hook(root, "post-index-change", f'[ -e "{flag}" ] && exit 0\ntouch "{flag}"\n{action}')


def test_a_save_made_while_the_command_ran_is_not_written_over(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """An editor saved 1.yaml after --force put HEAD's version there; the command failed, and
    putting back moved the older .orig over the newer save, lost for good."""
    root = indexed_example_kb.root
    path = root / "memories" / "1.yaml"
    head = path.read_text()
    path.write_text(head.replace("order total", "order sum, first edit"))
    once_after_set_aside(root, f"sed -i 's/order total/order sum, NEWER save/' '{path}'")
    refuse_commits(root)
    proc = invoke_cli("--kb", root, "update", "1", "--title", "T", "--force")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0] == (
        "warning: --force set your uncommitted work aside and the command failed; memories/1.yaml changed while the "
        "command ran (an editor's save?), so it was kept and your version from before stays as memories/1.yaml.orig: "
        "compare the two and keep what you want.")
    assert path.read_text() == head.replace("order total", "order sum, NEWER save")
    assert (root / "memories" / "1.yaml.orig").read_text() == head.replace("order total", "order sum, first edit")


@pytest.mark.slow  # git's index lock is waited for (store/indexlock.py's 2 s) before the error
def test_a_staged_version_is_deleted_only_once_git_s_index_holds_it(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """Another git command took git's index lock after set_aside: putting back deleted
    1.yaml.staged.orig before restoring the index, which then failed: the staged version was
    gone, and the advice ("move each copy back over its file") named it, and lost one of the two."""
    root = indexed_example_kb.root
    path = root / "memories" / "1.yaml"
    head = path.read_text()
    path.write_text(head.replace("order total", "order sum, staged"))
    git(root, "add", "memories/1.yaml")
    staged = git(root, "rev-parse", ":memories/1.yaml").strip()
    path.write_text(head.replace("order total", "order sum, unstaged"))
    lock = Path(git(root, "rev-parse", "--git-path", "index.lock").strip())
    once_after_set_aside(root, f"touch '{lock if lock.is_absolute() else root / lock}'")
    proc = invoke_cli("--kb", root, "update", "1", "--title", "T", "--force")
    (lock if lock.is_absolute() else root / lock).unlink()
    assert proc.returncode == 1
    warning = proc.stderr.splitlines()[0]
    assert warning.startswith("warning: --force set your uncommitted work aside, the command failed, and putting it "
                              "back failed too (git's index is locked")
    assert warning.endswith(
        "your versions are kept as memories/1.yaml.staged.orig, memories/1.yaml.orig; put them back by hand, in the "
        "KB folder, in this order: mv memories/1.yaml.staged.orig memories/1.yaml && git add memories/1.yaml; "
        "mv memories/1.yaml.orig memories/1.yaml.")
    assert git(root, "hash-object", "memories/1.yaml.staged.orig").strip() == staged
    # The advice, followed, puts back both versions.
    for step in warning.rpartition("in this order: ")[2].removesuffix(".").split("; "):
        subprocess.run(["sh", "-c", step], cwd=root, check=True, capture_output=True)
    assert (git(root, "rev-parse", ":memories/1.yaml").strip(), path.read_text()) == (
        staged, head.replace("order total", "order sum, unstaged"))


def forget_refused(root: Path, invoke_cli: CliRunner) -> None:
    """forget 15 --force, which sets aside the files linking memory:15 (16.yaml's edit, say),
    and then fails where its commit would be published."""
    refuse_commits(root)
    proc = invoke_cli("--kb", root, "forget", "15", "--force")
    assert (proc.returncode, proc.stderr) == (1, "Error: git update-ref failed: no\nfatal: ref updates aborted by hook; "
                                                 "nothing was saved.\n")
    assert sorted(p.name for p in root.glob("memories/*.orig*")) == []


def test_an_intent_to_add_file_is_put_back_as_such(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A new file marked ``git add -N`` came back a staged empty file (``ls-files -s`` lists the
    mark as the empty blob)."""
    root = indexed_example_kb.root
    new = root / "memories" / "99.yaml"
    new.write_text("learning: A new note.\nentities:\n- memory:15\ncreated_at: '2026-01-01T00:00:00Z'\n")
    git(root, "add", "-N", "memories/99.yaml")
    before = (git(root, "status", "--porcelain"), git(root, "diff", "--cached", "--name-status"))
    assert before == (" A memories/99.yaml\n", "")
    forget_refused(root, invoke_cli)
    assert (git(root, "status", "--porcelain"), git(root, "diff", "--cached", "--name-status")) == before


def test_the_executable_bit_is_kept_and_put_back(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """The copy was written 0644, so an uncommitted chmod +x was lost with the put-back."""
    root = indexed_example_kb.root
    linking = root / "memories" / "16.yaml"
    linking.write_text(linking.read_text().replace("learning: ", "learning: Edited. ", 1))
    linking.chmod(0o755)
    forget_refused(root, invoke_cli)
    assert (oct(linking.stat().st_mode & 0o777), git(root, "status", "--porcelain")) == ("0o755", " M memories/16.yaml\n")


def test_a_folder_in_a_file_s_place_is_put_back(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A folder where 16.yaml was was set aside as 16.yaml.orig, and stayed there: a rename cannot
    put a folder over the file HEAD's version put back."""
    root = indexed_example_kb.root
    (root / "memories" / "16.yaml").unlink()
    (root / "memories" / "16.yaml" / "note").mkdir(parents=True)
    forget_refused(root, invoke_cli)
    assert (root / "memories" / "16.yaml" / "note").is_dir()


@pytest.mark.slow  # a real slayer-kb process, killed
def test_the_next_command_says_what_a_killed_one_left_aside(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, run_cli: CliRunner) -> None:
    """update --force killed (kill -9) after it set 1.yaml's staged and unstaged versions aside,
    before a commit: the next command said nothing of the .orig files, and committed over HEAD's."""
    root = indexed_example_kb.root
    path = root / "memories" / "1.yaml"
    head = path.read_text()
    path.write_text(head.replace("order total", "order sum, staged"))
    git(root, "add", "memories/1.yaml")
    path.write_text(head.replace("order total", "order sum, unstaged"))
    # git's parent is the command: killed from set_aside's checkout of HEAD's version.
    once_after_set_aside(root, "kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)")
    assert run_cli("--kb", root, "update", "1", "--title", "T", "--force").returncode == -9
    proc = invoke_cli("--kb", root, "update", "1", "--title", "U")
    assert (proc.returncode, proc.stderr.partition("\n")[0]) == (0, (
        "warning: a slayer-kb command was stopped (killed?) after --force set your uncommitted work aside, before it "
        "committed or put it back (compare the files first: they may have changed since): your versions are kept as "
        "memories/1.yaml.orig, memories/1.yaml.staged.orig; put them back by hand, in the KB folder, in this order: "
        "mv memories/1.yaml.staged.orig memories/1.yaml && git add memories/1.yaml; mv memories/1.yaml.orig "
        "memories/1.yaml."))
    # Said once: the record is gone, the copies stay.
    assert "warning" not in invoke_cli("--kb", root, "update", "1", "--title", "V").stderr
    assert sorted(p.name for p in root.glob("memories/*.orig*")) == ["1.yaml.orig", "1.yaml.staged.orig"]


@pytest.mark.slow  # a real process killed from a git hook
def test_the_next_command_says_a_killed_one_committed_over_what_it_left_aside(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, run_cli: CliRunner) -> None:
    """Killed once its commit was published, before the command ended: the next command said it
    stopped "before it committed", and the commit stands."""
    root = indexed_example_kb.root
    path = root / "memories" / "1.yaml"
    path.write_text(path.read_text().replace("order total", "order sum, unstaged"))
    before = git(root, "rev-parse", "HEAD")
    flag = root / "hook-ran"
    hook(root, "reference-transaction", f'[ "$1" = committed ] || exit 0\n[ -e "{flag}" ] && exit 0\n'
                                        f'touch "{flag}"\nkill -9 $(cut -d\' \' -f4 /proc/$PPID/stat)')
    assert run_cli("--kb", root, "update", "1", "--title", "T", "--force").returncode == -9
    assert git(root, "rev-parse", "HEAD") != before
    proc = invoke_cli("--kb", root, "update", "1", "--title", "U")
    assert (proc.returncode, proc.stderr.partition("\n")[0]) == (0, (
        "warning: a slayer-kb command was stopped (killed?) after --force set your uncommitted work aside and "
        "committed (compare the files first: the commit rewrote them): your version is kept as memories/1.yaml.orig; "
        "put it back by hand, in the KB folder, in this order: mv memories/1.yaml.orig memories/1.yaml."))


def test_a_lone_staged_copys_step_stages_it_where_git_held_it(tmp_path: Path) -> None:
    """The step for a staged version whose work-tree file is in place: ``--cacheinfo`` reads its
    path from the repository's top wherever it runs, so from the folder of a KB inside a code
    repository it staged ``memories/2.yaml`` at the top (and as 100644, whatever the mode was)."""
    git(tmp_path, "init", "-q")
    kb = tmp_path / "kb"
    (kb / "memories").mkdir(parents=True)
    (kb / "memories" / "2.yaml").write_text("learning: head\n")
    (kb / "memories" / "2.yaml.staged.orig").write_text("learning: staged\n")
    git(tmp_path, "add", "kb/memories/2.yaml")
    git(tmp_path, "update-index", "--chmod=+x", "kb/memories/2.yaml")
    aside = Aside(["memories/2.yaml.staged.orig"], staged={"memories/2.yaml": "memories/2.yaml.staged.orig"},
                  index=git(tmp_path, "ls-files", "-s", "-z", "kb/memories/2.yaml").encode(), prefix="kb/")
    staged = git(tmp_path, "hash-object", "kb/memories/2.yaml.staged.orig").strip()
    step = by_hand(aside).partition("in this order: ")[2].removesuffix(".")
    subprocess.run(step, shell=True, cwd=kb, check=True)
    assert git(tmp_path, "ls-files", "-s").splitlines() == [f"100755 {staged} 0\tkb/memories/2.yaml"]
    assert not (kb / "memories" / "2.yaml.staged.orig").exists()
