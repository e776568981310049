"""Leases at the edges of a team: a clone counting on its own that renumbers beside leased
clones, and a local pre-push hook that turns lease pushes or branch pushes away (docs/teams.md).
Clones of one bare remote, every command as a user types it in the clone's folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing import CliRunner, git, in_process_runner, in_the_kb, make_team, unlike


@pytest.fixture
def invoke_cli() -> CliRunner:
    return in_the_kb(in_process_runner())


def _saved(invoke_cli: CliRunner, kb: Path, tag: str) -> str:
    out = invoke_cli("--kb", kb, "save", unlike(tag), "-e", "orders.amount", check=True).stdout
    return out.split()[2]


# renumber --onto on a sequential clone moved 1, 2 to 3, 4: inside a's leased block 1-100, so
# a's next save (3) was renumbered at its sync, an id its agent had been told changed.
def test_a_sequential_clones_renumber_gives_ids_outside_every_leased_block(tmp_path: Path, invoke_cli: CliRunner
                                                                            ) -> None:
    _bare, (a, b, c) = make_team(tmp_path, clones=3)
    assert [_saved(invoke_cli, a, "a1"), _saved(invoke_cli, a, "a2")] == ["1", "2"]
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "config", "slayer-kb.ids", "sequential")
    git(b, "switch", "-q", "-c", "agent-b")
    assert [_saved(invoke_cli, b, "b1"), _saved(invoke_cli, b, "b2")] == ["1", "2"]
    git(b, "fetch", "-q", "origin")
    renumbered = invoke_cli("--kb", b, "renumber", "--onto", "origin/main", check=True)
    assert renumbered.stdout == "Renumbered 2 memories onto origin/main:\n  1 -> 101\n  2 -> 102\n"
    git(b, "push", "-q", "-u", "origin", "agent-b")
    git(c, "pull", "-q")
    invoke_cli("--kb", c, "merge", "origin/agent-b", check=True)
    invoke_cli("--kb", c, "sync", check=True)
    assert _saved(invoke_cli, a, "a3") == "3"
    synced = invoke_cli("--kb", a, "sync", check=True)
    assert "renumbered" not in synced.stdout
    assert sorted((p.stem for p in (a / "memories").glob("*.yaml")), key=int) == ["1", "2", "3", "101", "102"]
