"""``slayer-kb rebase`` of an edit of a memory the upstream folded away (a reviewer's merge folded
agent-y's topic-key memory into main's): the edit is carried to the memory kept, as ``slayer-kb
merge`` carries it, and where both changed one field the stop's printed steps, run as printed,
end with the edit on the memory kept and a clean ``validate``."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest

from slayer_kb import kb as kb_module
from slayer_kb.core.memory import utc_time
from slayer_kb.ops import changes, observations
from testing import CliRunner, git, in_process_runner, make_team, make_team_after, unlike
from testing.folds import folded_team, reviewer_folded


def _folded_on_main(kbs: list[Path]) -> None:
    """agent-y's save of the topic key (clone a) folded into main's (clone b) by the reviewer's
    merge (clone c), synced; texts unlike, so that git pairs no file with another."""
    agent, a, reviewer = kbs
    reviewer_folded(in_process_runner(), agent, a, reviewer, (unlike("agent"), unlike("main")))


def _team(tmp_path: Path) -> tuple[Path, Path]:
    """(the agent's clone, on agent-y, and clone b, on main) once main folded the agent's memory 1
    into its 101 (``BLOCK + 1``: the second clone's first lease)."""
    _bare, (agent, a, _reviewer) = make_team_after(tmp_path, "agent-y-folded-on-main", _folded_on_main, clones=3)
    assert sorted(p.name for p in (agent / "memories").iterdir()) == ["1.yaml"]
    return agent, a


def _rebase_after_edit(invoke_cli: CliRunner, agent: Path) -> subprocess.CompletedProcess[str]:
    """The agent, which has not pulled the fold, edits its memory 1, then rebases onto main."""
    invoke_cli("--kb", agent, "update", "1", "--description", "Seven since the outage", check=True)
    git(agent, "fetch", "-q")
    return invoke_cli("--kb", agent, "rebase", "origin/main", cwd=agent)


def _edit_on_101(agent: Path, invoke_cli: CliRunner, *, also: str = "") -> None:
    """Memory 1 gone, 101 holding the agent's edit (and ``also``, main's), a clean validate."""
    assert not (agent / "memories" / "1.yaml").exists()
    kept = (agent / "memories" / "101.yaml").read_text()
    assert "description: Seven since the outage\n" in kept and unlike("main") in kept and also in kept
    assert git(agent, "status", "--porcelain", "-uall") == ""
    assert invoke_cli("--kb", agent, "validate", cwd=agent, check=True).stdout == "Checked 2 files: no problems.\n"


def test_a_rebased_edit_of_a_memory_main_folded_goes_to_the_memory_kept(tmp_path, invoke_cli) -> None:
    """git saw main forget memory 1 and the agent's commit edit it: the rebase stopped on "origin/main
    forgot memories/1.yaml", whose 'git add memories/1.yaml' step brought the folded memory back
    beside 101, one topic key held twice. The edit now goes to 101, as the merge takes it."""
    agent, _a = _team(tmp_path)
    rebased = _rebase_after_edit(invoke_cli, agent)
    assert (rebased.returncode, rebased.stderr) == (0, "")
    assert rebased.stdout == (
        "Rebased onto origin/main; run slayer-kb sync to push.\n"
        "  kept 101: this branch edited 1, which origin/main had merged into 101: the edit went to 101\n")
    _edit_on_101(agent, invoke_cli)


@pytest.mark.slow  # a variant: the stop's steps run to the end (1.6 s), the carry above in the default run
def test_a_rebase_stopped_on_a_field_both_changed_gives_steps_that_work(tmp_path, invoke_cli) -> None:
    """Main also changed 101's description: the stop's steps named memories/1.yaml (git add of the
    file the fold removed); now they name 101, where both edits are held, and run as printed they
    end with the agent's edit on 101 and a clean validate."""
    agent, a = _team(tmp_path)
    invoke_cli("--kb", a, "update", "101", "--description", "Three, as agreed", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    stopped = _rebase_after_edit(invoke_cli, agent)
    assert stopped.returncode == 1
    message = stopped.stderr.removeprefix("Error: ").strip()
    assert message == (
        "Your commits and origin/main both edited memories/101.yaml; the rebase stopped at commit 1 of 1 ('memory: "
        "update 1 (description)'), and slayer-kb rebase --abort would put the branch back as it was. To merge by "
        "hand: edit memories/101.yaml to keep what both sides meant; git add memories/101.yaml; slayer-kb validate; "
        "slayer-kb rebase --continue (a later commit that stops says so again); slayer-kb sync. Your commits edited "
        "1, which origin/main had merged into 101: its edit is held at memories/101.yaml as an edit of 101.")
    steps = message.split(" To merge by hand: ", 1)[1].split(". Your commits edited", 1)[0]
    for step in steps.split("; "):
        if step.startswith("edit memories/101.yaml "):  # the person keeps the agent's side: git's stage 3
            (agent / "memories" / "101.yaml").write_bytes(
                subprocess.run(["git", "show", ":3:memories/101.yaml"], cwd=agent, capture_output=True,
                               check=True).stdout)
        elif step.startswith("git "):
            subprocess.run(step, shell=True, cwd=agent, check=True, capture_output=True)
        else:
            command = step.split(" (")[0].split()
            assert command[0] == "slayer-kb", step
            invoke_cli(*command[1:], cwd=agent, check=True)
    _edit_on_101(agent, invoke_cli, also="revision_count: 4\n")
    assert git(agent, "rev-parse", "HEAD").strip() == git(agent, "rev-parse", "origin/agent-y").strip()


def test_a_rebased_edit_of_a_folded_memory_stops_on_the_forget_of_the_memory_kept(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """main folded the agent's 27 into its 101 (texts alike: git pairs the two files), then
    soft-forgot 101; the agent's later edit of 27 was replayed onto 101 as a later revision under
    the key, and the rebase said "Rebased" with 101 brought back. It stops, as the merges do."""
    times = (utc_time(1_780_000_000 + 60 * n) for n in itertools.count())
    for module in (kb_module, observations, changes):
        monkeypatch.setattr(module, "utc_now", lambda: next(times))
    _bare, (agent, a, reviewer) = make_team(tmp_path, clones=3)
    folded, kept = reviewer_folded(invoke_cli, agent, a, reviewer)
    invoke_cli("--kb", reviewer, "forget", "--soft", kept, check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    invoke_cli("--kb", agent, "update", folded, "--learning", "Retries: 7 since the outage", check=True)
    git(agent, "fetch", "-q")
    rebased = invoke_cli("--kb", agent, "rebase", "origin/main", cwd=agent)
    assert rebased.returncode == 1
    assert rebased.stderr.startswith(f"Error: Your commits and origin/main both edited memories/{kept}.yaml; the rebase "
                                     "stopped at commit 1 of 1 ('memory: update ")
    assert rebased.stderr.endswith(f"Your commits edited {folded}, which origin/main had merged into {kept}: its edit is "
                                   f"held at memories/{kept}.yaml as an edit of {kept}.\n")
    held = (agent / "memories" / f"{kept}.yaml").read_text()
    assert "deleted_at: '" in held and "learning: 'Retries: 7 since the outage'\n" in held


@pytest.mark.parametrize("soft", [True, False], ids=["soft", "hard"])
def test_a_syncs_rebase_of_an_edit_of_a_folded_memory_keeps_the_forget_of_the_memory_kept(
        tmp_path: Path, invoke_cli: CliRunner, soft: bool) -> None:
    """Sync's own git rebase (a line merge the replay leaves to git: both edited kb.shared)
    did not hold git's rename guess as 'slayer-kb rebase' does for a fold whose memory kept was
    forgotten since: git paired the folded memory with the one kept, the edit landed there as a
    later revision under the key, and the soft-forgotten memory came back ("merged both sides
    of: memories/1.yaml"). Sync now stops, naming the fold and the rebase that carries the edit;
    with the memory kept forgotten for good (no file), it said so too where the rebase stops on
    the folded memory (a forget against the edit): it says that stop."""
    (agent, a), folded, kept = folded_team(tmp_path, 2)
    invoke_cli("--kb", a, "forget", *(["--soft"] if soft else []), kept, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", agent, "save", unlike("shared"), "--id", "kb.shared", "-e", "shop.orders", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    git(a, "switch", "-q", "agent-y")
    invoke_cli("--kb", a, "merge", "origin/main", check=True)
    invoke_cli("--kb", a, "update", "kb.shared", "--title", "Shared, edited", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", agent, "update", "kb.shared", "--description", "Edited by the agent", check=True)
    invoke_cli("--kb", agent, "update", folded, "--learning", "Retries: 7 since the outage", check=True)
    before = git(agent, "rev-parse", "HEAD")
    synced = invoke_cli("--kb", agent, "sync", cwd=agent)
    does = (f"carries the change to {kept} or stops there with its steps" if soft else f"stops on {folded} with its "
            "steps")
    assert (synced.returncode, synced.stderr) == (1, (
        f"Error: Your commits changed {folded}, which origin/agent-y had merged into {kept}"
        f"{'' if soft else ' and forgot since'}; the repository is back as it was. To merge by hand: git fetch origin; "
        f"slayer-kb rebase origin/agent-y, which {does}; slayer-kb sync.\n"))
    assert git(agent, "rev-parse", "HEAD") == before
    git(agent, "fetch", "-q")
    rebased = invoke_cli("--kb", agent, "rebase", "origin/agent-y", cwd=agent)
    if soft:
        assert "deleted_at: '" in git(agent, "show", f"origin/agent-y:memories/{kept}.yaml")
        assert rebased.returncode == 1 and rebased.stderr.endswith(
            f"Your commits edited {folded}, which origin/agent-y had merged into {kept}: its edit is held at "
            f"memories/{kept}.yaml as an edit of {kept}.\n")
    else:
        assert rebased.returncode == 1 and rebased.stderr.startswith(
            f"Error: origin/agent-y forgot memories/{folded}.yaml, which your commits edited; the rebase stopped")
        assert git(agent, "status", "--porcelain") == f"DU memories/{folded}.yaml\n"
