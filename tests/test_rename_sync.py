"""A ``rename`` meeting another clone's work: clones of one bare remote, every ``slayer-kb``
command run in this process (``invoke_cli``), git as git. The rename commit records its move
(``Renamed: OLD -> NEW``), and sync points the other side's new links at the new id."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing import CliRunner, git, make_team


@pytest.mark.parametrize("renamer_first", [True, False])
def test_a_link_the_other_clone_added_to_a_renamed_memory_follows_the_rename(
        tmp_path: Path, invoke_cli: CliRunner, renamer_first: bool) -> None:
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "rename", "1", "kb.revenue", check=True)
    invoke_cli("--kb", b, "update", "1", "--content", "edited on b", check=True)
    invoke_cli("--kb", b, "save", "b links one", "--id", "kb.q", "-e", "memory:1", check=True)
    first, second = (a, b) if renamer_first else (b, a)
    invoke_cli("--kb", first, "sync", check=True)
    proc = invoke_cli("--kb", second, "sync", check=True)
    assert "rewrote links to renamed memories: memory:1 -> memory:kb.revenue in kb.q" in proc.stdout
    assert "forgotten" not in proc.stdout
    assert git(second, "log", "-1", "--format=%s") == "memory: rewrite links to renamed 1 as kb.revenue in kb.q\n"
    for clone in (second, first):
        if clone == first:
            invoke_cli("--kb", first, "sync", check=True)
        memories = clone / "memories"
        assert not (memories / "1.yaml").exists()
        assert "learning: edited on b\n" in (memories / "kb.revenue.yaml").read_text()
        assert "entities:\n- memory:kb.revenue\n" in (memories / "kb.q.yaml").read_text()
        assert invoke_cli("--kb", clone, "validate", check=True).stdout.endswith("no problems.\n")


def test_a_forget_beside_a_similar_save_is_still_a_forget(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """No rename recorded: memory 1 forgotten and a look-alike saved in one clone's commits is not
    taken for a move, and the other clone's link to 1 is stripped as a forget's cascade would."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "--id", "kb.old", "-e", "shop.orders", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "forget", "kb.old", check=True)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "--id", "kb.new", "-e", "shop.orders", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "b links it", "--id", "kb.q", "-e", "memory:kb.old", "-e", "shop.orders",
               check=True)
    proc = invoke_cli("--kb", b, "sync", check=True)
    assert "stripped links to forgotten memories: memory:kb.old from kb.q" in proc.stdout
    assert "renamed" not in proc.stdout
    assert "memory:" not in (b / "memories" / "kb.q.yaml").read_text()


def test_validate_against_names_a_link_to_a_memory_renamed_there(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Before the sync: the branch's link to what the other side renamed is named as a rename,
    with the merge that rewrites it, not as a link to a forgotten memory."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "rename", "1", "kb.revenue", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "b links one", "--id", "kb.q", "-e", "memory:1", check=True)
    git(b, "fetch", "-q", "origin")
    checked = invoke_cli("validate", "--against", "origin/main", cwd=b)
    assert (checked.returncode, checked.stdout) == (1, (
        "memories/kb.q.yaml:1: memory kb.q links 'memory:1', which origin/main renamed to 'kb.revenue' since this "
        "branch parted from it; merged as it is, the link would point at nothing. Run 'git fetch origin && slayer-kb "
        "merge origin/main': it points links to renamed memories at their new ids, in one commit\n"
        "1 problem in 1 file (1 file checked)\n"))


def test_a_link_to_a_memory_renamed_then_forgotten_is_a_link_to_a_forgotten_one(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The move is followed only to a memory that is still there: renamed and then forgotten,
    the other clone's link is named and stripped as a link to a forgotten memory."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "rename", "1", "kb.revenue", check=True)
    invoke_cli("--kb", a, "forget", "kb.revenue", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "b links one", "--id", "kb.q", "-e", "memory:1", "-e", "shop.orders", check=True)
    git(b, "fetch", "-q", "origin")
    checked = invoke_cli("validate", "--against", "origin/main", cwd=b)
    assert checked.stdout.splitlines()[0] == (
        "memories/kb.q.yaml:1: memory kb.q links 'memory:1', which origin/main forgot since this branch parted from "
        "it; merged as it is, the link would point at nothing. Run 'git fetch origin && slayer-kb merge origin/main': "
        "it strips links to forgotten memories, in one commit")
    proc = invoke_cli("--kb", b, "sync", check=True)
    assert "stripped links to forgotten memories: memory:1 from kb.q" in proc.stdout
    assert "renamed" not in proc.stdout
    assert (b / "memories" / "kb.q.yaml").read_text().startswith("learning: b links one\nentities:\n- shop.orders\n")
