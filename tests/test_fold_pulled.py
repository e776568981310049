"""A plain ``git merge`` of an agent's branch that saved a topic key main saved too, pushed with a
plain ``git push``: one key held by two memories on main. The next ``slayer-kb sync`` of any
clone folds it, the one that pulls it and the one that pushed it alike."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from testing import CliRunner, git, in_process_runner, make_team, make_team_after, unlike
from testing.folds import agent_saves, agent_then_main, main_then_agent

FOLDED = "  merged (same topic key): 101 into 1\n"


def _plain_merge_pushed(kbs: list[Path]) -> None:
    """a saves the key on main (1), b on agent-y (101); c merges agent-y into main with git alone
    (the session file both started kept as main has it) and pushes with git push."""
    a, b, c = kbs
    assert main_then_agent(in_process_runner(), a, b, c) == ("101", "1")
    git(c, "switch", "-q", "main")
    git(c, "pull", "-q")
    if subprocess.run(["git", "merge", "-q", "--no-edit", "origin/agent-y"], cwd=c, capture_output=True).returncode:
        git(c, "checkout", "--ours", "--", "sessions/")
        git(c, "add", "sessions/")
        git(c, "commit", "-q", "--no-edit")
    git(c, "push", "-q", "origin", "main")


@pytest.fixture
def team(tmp_path: Path) -> list[Path]:
    _bare, kbs = make_team_after(tmp_path, "plain-merge-pushed", _plain_merge_pushed, clones=3)
    assert sorted(p.name for p in (kbs[2] / "memories").iterdir()) == ["1.yaml", "101.yaml"]
    return kbs


def _one_holder(invoke_cli: CliRunner, root: Path) -> None:
    """The key held by 1 alone on the clone and on the remote, a clean validate."""
    assert sorted(p.name for p in (root / "memories").iterdir()) == ["1.yaml"]
    assert git(root, "rev-parse", "HEAD") == git(root, "rev-parse", "origin/main")
    assert git(root, "log", "-1", "--format=%s") == "memory: merge 101 into 1 (topic decision/retry-budget)\n"
    assert invoke_cli("--kb", root, "validate", check=True).stdout == "Checked 2 files: no problems.\n"


def test_a_sync_that_pulls_a_plain_merge_folds_the_key_it_left_twice(team, invoke_cli) -> None:
    """a's sync fast-forwarded onto the merge and said nothing: 1 and 101 both held the key, and
    validate failed on both until someone folded them by hand."""
    a, _b, _c = team
    assert invoke_cli("--kb", a, "sync", check=True).stdout == (
        "Synced main with origin: fast-forward, 2 pulled, 1 pushed.\n" + FOLDED)
    _one_holder(invoke_cli, a)


def test_the_clone_that_pushed_a_plain_merge_folds_it_at_its_next_sync(team, invoke_cli) -> None:
    """c, whose git push left its copy of origin/main at the merge, synced "up to date" without a
    look, and did so at every sync after."""
    _a, _b, c = team
    assert invoke_cli("--kb", c, "sync", check=True).stdout == (
        "Synced main with origin: pushed, 0 pulled, 1 pushed.\n" + FOLDED)
    _one_holder(invoke_cli, c)
    assert invoke_cli("--kb", c, "sync", check=True).stdout == "Synced main with origin: up to date, 0 pulled, 0 pushed.\n"


def _merge_needing_no_fix(kbs: list[Path]) -> None:
    """a saves a note on main, b another on agent-y; a's ``slayer-kb merge`` of agent-y (nothing to
    fold, so no fix commit: the merge is main's tip) synced; c pulls it with git alone."""
    a, b, c = kbs
    runner = in_process_runner()
    runner("--kb", a, "save", "--title", "Main's note", unlike("main"), check=True)
    runner("--kb", a, "sync", check=True)
    agent_saves(runner, b, "--title", "Agent's note", unlike("agent"))
    git(a, "fetch", "-q")
    runner("--kb", a, "merge", "origin/agent-y", check=True)
    runner("--kb", a, "sync", check=True)
    git(c, "pull", "-q")


def test_a_sync_with_nothing_to_do_leaves_a_hand_edit_alone_when_the_tip_is_a_merge(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Every sync of c refused ("uncommitted changes to tracked files") while main's tip was a merge
    not read yet: the read, with nothing to fold, needs no clean tree."""
    _bare, (_a, _b, c) = make_team_after(tmp_path, "merge-needing-no-fix", _merge_needing_no_fix, clones=3)
    assert git(c, "log", "-1", "--format=%p").count(" ") == 1  # the tip is the merge
    edited = c / "memories" / "1.yaml"
    edited.write_text(edited.read_text() + "# my note in progress\n")
    for _ in range(2):
        assert invoke_cli("--kb", c, "sync", check=True).stdout == "Synced main with origin: up to date, 0 pulled, 0 pushed.\n"
    assert git(c, "status", "--porcelain") == " M memories/1.yaml\n"


@pytest.mark.usefixtures("minutes_apart")
def test_a_plain_merge_pushed_is_folded_into_the_memory_main_held_before_it(tmp_path: Path,
                                                                           invoke_cli: CliRunner) -> None:
    """agent-y saved the key first, main later; a reviewer's plain git merge of agent-y, pushed,
    left both on main, and a's sync folded main's memory into the agent's (the earlier save),
    where the reviewer's ``slayer-kb merge`` keeps main's."""
    _bare, (agent, a, reviewer) = make_team(tmp_path, clones=3)
    folded, kept = agent_then_main(invoke_cli, agent, a, reviewer)
    git(reviewer, "fetch", "-q")
    if subprocess.run(["git", "merge", "-q", "--no-edit", "origin/agent-y"], cwd=reviewer,
                      capture_output=True).returncode:
        git(reviewer, "checkout", "--ours", "--", "sessions/")
        git(reviewer, "add", "sessions/")
        git(reviewer, "commit", "-q", "--no-edit")
    git(reviewer, "push", "-q", "origin", "main")
    assert invoke_cli("--kb", a, "sync", check=True).stdout == (
        f"Synced main with origin: fast-forward, 2 pulled, 1 pushed.\n  merged (same topic key): {folded} into {kept}\n")
    assert sorted(p.name for p in (a / "memories").iterdir()) == [f"{kept}.yaml"]
