"""The KBs the tests start from (testing/repos.py): copies of repositories made once a process."""

from __future__ import annotations

from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.ops.sync import sync
from testing import (
    fsck,
    git,
    make_empty_kb,
    make_indexed_example_kb,
    make_kb_after,
    make_team,
    make_team_after,
    make_worktrees_after,
)


def test_a_copied_kb_is_a_sound_repository_of_few_files(tmp_path: Path) -> None:
    # Every file a test's KB holds is made at its setup and removed at its teardown, and a file
    # made costs the kernel 0.1-0.4 ms on the shared machine: the objects are packed, as a clone
    # has them, and the inert hook samples git init writes are left out.
    example, empty = make_indexed_example_kb(tmp_path / "example"), make_empty_kb(tmp_path / "empty")
    for root in (example, empty):
        objects = dict(line.split(": ") for line in git(root, "count-objects", "-v").splitlines())
        assert (objects["count"], objects["packs"]) == ("0", "1"), objects
        assert list((root / ".git" / "hooks").iterdir()) == []
        assert fsck(root).returncode == 0
    assert sum(1 for _ in example.rglob("*")) < 120  # 247 with the objects loose and the samples
    assert KnowledgeBase(example).get("1").to_dict()["id"] == "1"


def test_a_copied_team_pushes_to_its_own_remote(tmp_path: Path) -> None:
    # make_team copies a remote and one clone made once a process: each copied clone's origin
    # must be this team's remote (a push to the template's would reach every later test's team).
    bare, (a, b) = make_team(tmp_path, 2)
    for root in (bare, a, b):
        objects = dict(line.split(": ") for line in git(root, "count-objects", "-v").splitlines())
        assert (objects["count"], objects["packs"]) == ("0", "1"), (root, objects)
        assert fsck(root).returncode == 0
    assert [git(root, "remote", "get-url", "origin").strip() for root in (a, b)] == [str(bare)] * 2
    assert list((bare / "hooks").iterdir()) == []
    # The remote stands in for a hosting service: no `git gc --auto` process after each push.
    assert git(bare, "config", "receive.autogc") == "false\n"
    assert KnowledgeBase(a).save_memory("A: shared", ["orders.amount"]).memory_id == "1"
    assert sync(KnowledgeBase(a)).pushed == 1
    sync(KnowledgeBase(b))
    assert KnowledgeBase(b).get("1").to_dict()["learning"] == "A: shared"
    # The next team copied starts as the first did: nothing of this team's pushes or leases.
    other_bare, (other,) = make_team(tmp_path / "next", 1)
    assert git(other_bare, "for-each-ref", "--format=%(refname)") == "refs/heads/main\n"
    assert KnowledgeBase(other).save_memory("Next: its own", ["orders.amount"]).memory_id == "1"


def test_a_team_copied_after_its_steps_is_its_own(tmp_path: Path) -> None:
    # make_team_after runs a module's steps once and copies their result: each copy holds the
    # steps' commits and memories, names its own remote wherever git reads a remote's path
    # again (the config, the FETCH_HEAD a sync's fetch left), and pushes there only.
    ran: list[str] = []

    def steps(kbs: list[Path]) -> None:
        ran.append("steps")
        with KnowledgeBase(kbs[0]) as kb:
            kb.save_memory("A: shared", ["orders.amount"])
            sync(kb)
        with KnowledgeBase(kbs[1]) as kb:
            sync(kb)

    first_bare, (a, b) = make_team_after(tmp_path / "first", "shared", steps)
    other_bare, (other_a, other_b) = make_team_after(tmp_path / "other", "shared", steps)
    assert ran == ["steps"]
    # Another caller's steps under the same name would get this state: refused.
    with pytest.raises(AssertionError, match="'team--2-shared' is made by test_repos.test_a_team_copied"):
        make_team_after(tmp_path / "third", "shared", lambda kbs: None)
    for bare, clones in ((first_bare, (a, b)), (other_bare, (other_a, other_b))):
        for clone in clones:
            assert git(clone, "remote", "get-url", "origin").strip() == str(bare)
            assert f" of {bare.with_suffix('')}\n" in (clone / ".git" / "FETCH_HEAD").read_text()
            assert KnowledgeBase(clone).get("1").to_dict()["learning"] == "A: shared"
            assert fsck(clone).returncode == 0
    assert git(a, "rev-parse", "HEAD") == git(other_a, "rev-parse", "HEAD")
    # The copy draws from the block the steps leased, as the clone it copies would.
    assert KnowledgeBase(a).save_memory("B: first team's only", ["orders.amount"]).memory_id == "2"
    assert sync(KnowledgeBase(a)).pushed == 1
    assert git(first_bare, "rev-parse", "main") == git(a, "rev-parse", "HEAD")
    assert git(other_bare, "rev-parse", "main") == git(other_b, "rev-parse", "HEAD") != git(a, "rev-parse", "HEAD")


def test_a_kb_copied_after_its_steps_is_its_own(tmp_path: Path) -> None:
    # make_kb_after runs a module's saves once and copies their result: each copy holds the
    # steps' commit and its index, and a save in one is in that one only.
    ran: list[Path] = []

    def steps(root: Path) -> None:
        ran.append(root)
        kb = KnowledgeBase(root)
        kb.save_observation(title="Saved once", content="Saved once, in the template.", project="ops")
        kb.close()

    first, other = (KnowledgeBase(make_kb_after(tmp_path / name, "one-save", steps)) for name in ("first", "other"))
    assert len(ran) == 1 and ran[0] not in (first.root, other.root)
    assert [kb.search("saved once").memories[0]["id"] for kb in (first, other)] == ["1", "1"]
    assert git(first.root, "rev-parse", "HEAD") == git(other.root, "rev-parse", "HEAD")
    assert first.save_observation(title="First", content="The first copy's only.", project="ops").memory_id == "2"
    assert other.save_observation(title="Other", content="The other copy's only.", project="ops").memory_id == "2"
    assert git(first.root, "rev-parse", "HEAD") != git(other.root, "rev-parse", "HEAD")
    assert fsck(first.root).returncode == 0


def test_a_kb_and_its_work_tree_copied_after_their_steps_are_linked_to_each_other(tmp_path: Path) -> None:
    # make_worktrees_after copies a KB and a work tree its steps added beside it: each copy's
    # two sides name each other, never the template's (which is still there, so git would not
    # say), and a commit on one copy's main is in that copy only.
    ran: list[Path] = []

    def steps(root: Path) -> None:
        ran.append(root)
        git(root, "switch", "-q", "-c", "feature")
        git(root, "worktree", "add", "-q", str(root.parent / "side"), "master")

    roots = [make_worktrees_after(tmp_path / name, "one-side", steps, ["side"]) for name in ("first", "other")]
    assert len(ran) == 1 and ran[0] not in roots
    for root in roots:
        listed = git(root, "worktree", "list", "--porcelain").splitlines()
        assert [line for line in listed if line.startswith("worktree ")] == [
            f"worktree {root}", f"worktree {root.parent / 'side'}"]
        assert git(root.parent / "side", "rev-parse", "--show-toplevel").strip() == str(root.parent / "side")
    side = roots[0].parent / "side"
    (side / "note.txt").write_text("on the first copy's main\n")
    git(side, "add", "note.txt")
    git(side, "commit", "-q", "-m", "on the first copy's main")
    assert git(roots[0], "rev-parse", "master") == git(side, "rev-parse", "HEAD")
    assert git(roots[1], "rev-parse", "master") == git(roots[1].parent / "side", "rev-parse", "HEAD") != git(side, "rev-parse", "HEAD")
