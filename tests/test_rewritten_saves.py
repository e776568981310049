"""A pushed save whose commit is rewritten (``git commit --amend``, then a force push) is still the
one memory at its id: sync treats the rewritten version as an edit of the one it last fetched, never
renumbers it into a second copy. Two clones that gave one number to two memories in one second stay
two (renumbered). Clones of one bare remote, every command run as typed (test_team_by_hand.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing import CliRunner, git, json_of, make_team, unlike

# Every command typed in the clone's folder, as a user would (conftest's invoke_cli).
pytestmark = pytest.mark.typed_in_the_kb


def _saved(invoke_cli: CliRunner, kb: Path, text: str) -> str:
    """Save ``text`` in clone ``kb`` and sync it; its id."""
    memory_id = json_of(invoke_cli("--kb", kb, "--json", "save", text, "-e", "shop.orders.amount", check=True))["memory_id"]
    invoke_cli("--kb", kb, "sync", check=True)
    return str(memory_id)


def _amended(kb: Path, memory_id: str, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in the memory's file and amend the commit that saved it, as a person fixes a typo."""
    path = kb / "memories" / f"{memory_id}.yaml"
    path.write_text(path.read_text().replace(old, new))
    git(kb, "commit", "-qa", "--amend", "--no-edit")


def _files(root: Path, rev: str = "HEAD") -> list[str]:
    return git(root, "ls-tree", "--name-only", rev, "memories/").split()


def _learning(root: Path, memory_id: str, rev: str = "HEAD") -> str:
    text = git(root, "show", f"{rev}:memories/{memory_id}.yaml")
    return next(line for line in text.splitlines() if line.startswith("learning:"))


def test_an_amended_pushed_save_syncs_as_an_edit_of_its_memory(tmp_path: Path, invoke_cli: CliRunner) -> None:
    bare, (a,) = make_team(tmp_path, clones=1)
    memory_id = _saved(invoke_cli, a, f"note with a typo {unlike('amend')}")
    _amended(a, memory_id, "typo", "fix")
    assert invoke_cli("--kb", a, "sync", check=True).stdout == (
        "Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
        f"  merged both sides of: memories/{memory_id}.yaml\n")
    assert _files(bare, "main") == [f"memories/{memory_id}.yaml"]
    assert _learning(bare, memory_id, "main").startswith("learning: note with a fix amend0word")
    got = invoke_cli("--kb", a, "--json", "get", memory_id)
    assert got.returncode == 0, got.stderr
    assert json_of(got)["learning"].startswith("note with a fix amend0word")
    # One commit on top of the original: the fix, as an edit of the memory.
    assert git(a, "diff", "--stat", "HEAD~1", "HEAD").splitlines()[-1].strip() == (
        "1 file changed, 1 insertion(+), 1 deletion(-)")


def _force_pushed_amend(tmp_path: Path, invoke_cli: CliRunner, tag: str,
                        monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path, str]:
    """b saves and syncs, c pulls the save, b amends it (typo -> fix) and force-pushes: (the
    remote, b, c, the memory's id). c's commits from then on have an author of their own, as each
    agent of a team has: sync tells a commit a force push dropped by its author and second."""
    bare, (b, c) = make_team(tmp_path, clones=2)
    memory_id = _saved(invoke_cli, b, f"note with a typo {unlike(tag)}")
    invoke_cli("--kb", c, "sync", check=True)
    _amended(b, memory_id, "typo", "fix")
    git(b, "push", "-q", "--force", "origin", "main")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Agent C")
    return bare, b, c, memory_id


@pytest.mark.slow  # a variant (docs/testing.md, "A flow's variants")
def test_a_clone_holding_a_save_force_pushed_amended_keeps_one_memory(tmp_path: Path, invoke_cli: CliRunner,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """c, which pulled the original, syncs a save of its own: the original is the version the
    amended one edited, so nothing of it is pushed again."""
    bare, _b, c, memory_id = _force_pushed_amend(tmp_path, invoke_cli, "forced", monkeypatch)
    own = json_of(invoke_cli("--kb", c, "--json", "save", unlike("own"), "-e", "shop.orders.amount", check=True))["memory_id"]
    assert invoke_cli("--kb", c, "sync", check=True).stdout == (
        "Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
        f"  merged both sides of: memories/{memory_id}.yaml\n")
    assert _files(bare, "main") == sorted([f"memories/{memory_id}.yaml", f"memories/{own}.yaml"])
    assert _learning(bare, memory_id, "main").startswith("learning: note with a fix forced0word")
    assert invoke_cli("--kb", c, "--json", "get", memory_id).returncode == 0
    # c pushed its save alone, on top of b's amended one.
    assert git(bare, "log", "--format=%an: %s", "main~2..main").splitlines() == [
        f"Agent C: memory: save {own}", f"Test Author: memory: save {memory_id}"]


@pytest.mark.slow  # a variant (docs/testing.md, "A flow's variants")
def test_a_rewritten_save_the_other_clone_edited_in_another_field_merges(tmp_path: Path, invoke_cli: CliRunner,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    bare, _b, c, memory_id = _force_pushed_amend(tmp_path, invoke_cli, "field", monkeypatch)
    path = c / "memories" / f"{memory_id}.yaml"
    path.write_text(path.read_text().replace("entities:", "description: Said by c\nentities:"))
    git(c, "commit", "-qam", "c describes it")
    assert invoke_cli("--kb", c, "sync", check=True).stdout == (
        "Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
        f"  merged both sides of: memories/{memory_id}.yaml\n")
    merged = git(bare, "show", f"main:memories/{memory_id}.yaml")
    assert "learning: note with a fix field0word" in merged and "description: Said by c" in merged
    assert _files(bare, "main") == [f"memories/{memory_id}.yaml"]


@pytest.mark.slow  # a variant (docs/testing.md, "A flow's variants")
def test_a_rewritten_save_the_other_clone_edited_in_the_same_line_stops_as_two_edits(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    _bare, _b, c, memory_id = _force_pushed_amend(tmp_path, invoke_cli, "line", monkeypatch)
    path = c / "memories" / f"{memory_id}.yaml"
    path.write_text(path.read_text().replace("typo", "typo, said c"))
    git(c, "commit", "-qam", "c edits the learning")
    head = git(c, "rev-parse", "HEAD")
    stopped = invoke_cli("--kb", c, "--json", "sync")
    assert stopped.returncode == 1
    assert json_of(stopped)["error"]["message"].startswith(
        f"Your commits and origin/main both edited memories/{memory_id}.yaml; the repository is back as it was.")
    assert git(c, "rev-parse", "HEAD") == head
    assert _files(c) == [f"memories/{memory_id}.yaml"]


def test_a_clone_that_merged_a_branch_of_its_own_merges_the_rewritten_save_as_one(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local merge among c's commits makes sync merge the upstream in rather than rebase: the
    original and the amended save still meet as one memory, from the version c fetched."""
    bare, _b, c, memory_id = _force_pushed_amend(tmp_path, invoke_cli, "merging", monkeypatch)
    git(c, "switch", "-q", "-c", "topic")
    invoke_cli("--kb", c, "save", unlike("topic"), "-e", "shop.refunds.amount", check=True)
    git(c, "switch", "-q", "main")
    invoke_cli("--kb", c, "save", unlike("main"), "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", c, "merge", "topic", check=True)
    synced = json_of(invoke_cli("--kb", c, "--json", "sync", check=True))
    assert (synced["action"], synced["renumbered"]) == ("merged", {})
    assert len(_files(bare, "main")) == 3
    assert _learning(bare, memory_id, "main").startswith("learning: note with a fix merging0word")


def test_two_clones_giving_one_number_in_one_second_stay_two_memories(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The same id and ``created_at`` alone do not make one memory: b never fetched a's memory
    5000 before it saved its own, so the upstream it last saw lacks the id, and b's is renumbered."""
    bare, (a, b) = make_team(tmp_path, clones=2)
    invoke_cli("--kb", a, "save", "--id", "5000", unlike("first"), "-e", "shop.orders.amount", check=True)
    # Offline: online, a's claim made for 5000 refuses the number (docs/teams.md).
    git(b, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    invoke_cli("--kb", b, "save", "--id", "5000", unlike("second"), "-e", "shop.orders.amount", check=True)
    git(b, "remote", "set-url", "origin", str(bare))
    made = next(line for line in (a / "memories" / "5000.yaml").read_text().splitlines() if line.startswith("created_at"))
    path = b / "memories" / "5000.yaml"
    path.write_text("\n".join(made if line.startswith("created_at") else line for line in path.read_text().splitlines()) + "\n")
    git(b, "commit", "-qa", "--amend", "--no-edit")
    invoke_cli("--kb", a, "sync", check=True)
    synced = invoke_cli("--kb", b, "sync", check=True).stdout
    assert synced.startswith("Synced main with origin: rebased, 1 pulled, 1 pushed.\n  renumbered: 5000 -> ")
    new = synced.split("renumbered: 5000 -> ")[1].split()[0]
    assert _files(bare, "main") == sorted(["memories/5000.yaml", f"memories/{new}.yaml"])
    assert _learning(bare, "5000", "main") == f"learning: {unlike('first')}"
    assert _learning(bare, new, "main") == f"learning: {unlike('second')}"
