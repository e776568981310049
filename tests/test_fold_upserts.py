"""Two saves under one topic key after a fold of it: main's memory kept revised by an upsert, the
folded memory revised by one on the agent's branch (which still holds it). The next merge, rebase
or sync takes the newer save's content into the memory kept, as if the saves had come one after
the other, and folds the returning id again with its record (``folds.carried_upserts``). Real
clones of one remote (``make_team``), every command typed as a user would."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing import CliRunner, default_first, git, json_of, make_team, next_second, unlike
from testing.folds import TOPIC, agent_saves, folded_team, main_then_agent_team, reviewer_folded, saved_id

# Every command typed in the clone's folder, as a user would (conftest's invoke_cli).
pytestmark = pytest.mark.typed_in_the_kb


def _shown(invoke_cli: CliRunner, root: Path, memory_id: str) -> dict[str, object]:
    return dict(json_of(invoke_cli("--kb", root, "--json", "get", memory_id, check=True)))


def _gone_to(invoke_cli: CliRunner, root: Path, folded: str, kept: str) -> None:
    """``get`` of the folded id names the memory kept, by the fold's record; its file is gone."""
    said = invoke_cli("--kb", root, "get", folded).stderr
    assert said.startswith(f"Error: No memory with id '{folded}'. It was merged into '{kept}' in commit "), said
    assert said.endswith(", the memory kept under the same topic key; use that id.\n"), said
    assert not (root / "memories" / f"{folded}.yaml").exists()


# The agent's 'slayer-kb merge origin/main' (and the reviewer's merge of the branch) stopped:
# "This branch edited memories/101.yaml, which origin/main forgot ... git checkout HEAD --
# memories/101.yaml to keep the edit", which would have left the key held twice.
@pytest.mark.parametrize(("who", "later"), default_first([("agent", "agent"), ("agent", "main"),
                                                          ("reviewer", "agent"), ("reviewer", "main"),
                                                          ("rebase", "main")]))
def test_two_upserts_after_a_fold_merge_as_the_newer_save(tmp_path: Path, invoke_cli: CliRunner, who: str,
                                                          later: str) -> None:
    (agent, a), folded, kept = folded_team(tmp_path, 2, (unlike("agent"), unlike("main")))
    before = int(str(_shown(invoke_cli, a, kept)["revision_count"]))
    saves = [(a, unlike("main again")), (agent, unlike("agent again"))]
    for n, (root, text) in enumerate(saves if later == "agent" else saves[::-1]):
        if n:
            next_second()
        assert saved_id(invoke_cli, root, text, *TOPIC) == (kept if root == a else folded)
        invoke_cli("--kb", root, "sync", check=True)
    if who == "agent":
        git(agent, "fetch", "-q")
        root, said = agent, f"this branch edited {folded}, which origin/main had merged into {kept}"
        merged = invoke_cli("--kb", agent, "merge", "origin/main")
    elif who == "rebase":  # slayer-kb rebase's pick of the upsert, onto main's fold and upsert
        git(agent, "fetch", "-q")
        root, said = agent, f"this branch edited {folded}, which origin/main had merged into {kept}"
        merged = invoke_cli("--kb", agent, "rebase", "--rewrite-pushed", "origin/main")
    else:
        git(a, "fetch", "-q")
        root, said = a, f"origin/agent-y edited {folded}, which this branch had merged into {kept}"
        merged = invoke_cli("--kb", a, "merge", "origin/agent-y")
    assert (merged.returncode, merged.stderr) == (0, "")
    assert merged.stdout.endswith(f"  kept {kept}: {said}: the edit went to {kept}\n")
    shown = _shown(invoke_cli, root, kept)
    assert (shown["learning"], shown["revision_count"]) == (unlike(f"{later} again"), before + 2)
    _gone_to(invoke_cli, root, folded, kept)
    assert git(root, "status", "--short") == ""


# A sync rebasing an agent's upsert onto its branch where another clone had folded it and
# upserted the key: held as two edits of one field, the agent's save dropped ("the edit
# dropped; to see it: git show ..."), and 'get' of the folded id said "forgotten for good".
@pytest.mark.parametrize("later", default_first(["rebased", "upstream"]))
def test_a_sync_rebasing_an_upsert_onto_a_fold_and_an_upsert_keeps_the_newer(
        tmp_path: Path, invoke_cli: CliRunner, later: str) -> None:
    (a, b, c), folded, kept = main_then_agent_team(tmp_path)
    git(b, "fetch", "-q")
    invoke_cli("--kb", b, "merge", "origin/main", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    before = int(str(_shown(invoke_cli, b, kept)["revision_count"]))
    saves = [(b, unlike("upstream again")), (c, unlike("rebased again"))]
    for n, (root, text) in enumerate(saves if later == "rebased" else saves[::-1]):
        if n:
            next_second()
        assert saved_id(invoke_cli, root, text, *TOPIC) == (kept if root == b else folded)
        if root == b:
            invoke_cli("--kb", b, "sync", check=True)
    synced = invoke_cli("--kb", c, "sync", check=True)
    assert synced.stdout.endswith(f"\n  kept {kept}: this branch edited {folded}, which origin/agent-y had merged "
                                  f"into {kept}: the edit went to {kept}\n"), synced.stdout
    shown = _shown(invoke_cli, c, kept)
    assert (shown["learning"], shown["revision_count"]) == (unlike(f"{later} again"), before + 2)
    _gone_to(invoke_cli, c, folded, kept)


# main's last change of the memory kept was a fold of a third agent's later save of the key
# (no 'revise' commit): read as two edits, the agent's merge of main stopped as above.
@pytest.mark.slow
def test_a_later_fold_into_the_memory_kept_counts_as_a_save_under_the_key(tmp_path: Path, invoke_cli: CliRunner
                                                                          ) -> None:
    _bare, (agent, a, e) = make_team(tmp_path, clones=3)
    git(e, "switch", "-q", "-c", "agent-e")
    git(e, "push", "-q", "-u", "origin", "agent-e")
    folded, kept = reviewer_folded(invoke_cli, agent, a, a, (unlike("agent"), unlike("main")))
    assert saved_id(invoke_cli, agent, unlike("agent again"), *TOPIC) == folded
    invoke_cli("--kb", agent, "sync", check=True)
    next_second()
    third = saved_id(invoke_cli, e, unlike("third agent"), *TOPIC)
    invoke_cli("--kb", e, "sync", check=True)
    git(a, "fetch", "-q")
    assert invoke_cli("--kb", a, "merge", "origin/agent-e", check=True).stdout.endswith(
        f"  merged (same topic key): {third} into {kept}\n")
    invoke_cli("--kb", a, "sync", check=True)
    git(agent, "fetch", "-q")
    merged = invoke_cli("--kb", agent, "merge", "origin/main")
    assert (merged.returncode, merged.stderr) == (0, "")
    assert _shown(invoke_cli, agent, kept)["learning"] == unlike("third agent")
    _gone_to(invoke_cli, agent, folded, kept)


# An edit by id of the folded memory against main's upsert still stops, but the stop said "This
# branch edited memories/101.yaml, which origin/main forgot; git took origin/main's new memory
# memories/1.yaml for a move of it ... git checkout HEAD -- memories/101.yaml to keep the edit":
# main folded it, and that step would have left the key held twice.
def test_an_edit_by_id_against_an_upsert_stops_as_an_edit_of_the_memory_kept(tmp_path: Path, invoke_cli: CliRunner
                                                                              ) -> None:
    _bare, (agent, a) = make_team(tmp_path, clones=2)
    # Texts alike, as a key's revisions are: git's rename guess pairs the folded file with the kept one.
    retries = "Retries: {} for the orders API, with backoff doubling from one second, then give up and page"
    kept = saved_id(invoke_cli, a, retries.format(3), *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    folded = agent_saves(invoke_cli, agent, retries.format(5), *TOPIC)
    git(a, "fetch", "-q")
    invoke_cli("--kb", a, "merge", "origin/agent-y", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    assert saved_id(invoke_cli, a, retries.format(4), *TOPIC) == kept
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", agent, "update", folded, "--learning", retries.format(6), check=True)
    git(agent, "fetch", "-q")
    stopped = invoke_cli("--kb", agent, "merge", "origin/main")
    assert (stopped.returncode, stopped.stderr) == (1, (
        f"Error: This branch and origin/main both edited memories/{kept}.yaml; the merge stopped, and git merge "
        f"--abort would put the branch back as it was. To merge by hand: edit memories/{kept}.yaml to keep what both "
        f"sides meant; git add memories/{kept}.yaml; slayer-kb validate; git commit --no-edit; slayer-kb sync. This "
        f"branch edited {folded}, which origin/main had merged into {kept}: its edit is held at memories/{kept}.yaml "
        f"as an edit of {kept}.\n"))
    assert sorted(git(agent, "status", "--short", "memories/").splitlines()) == [
        f"D  memories/{folded}.yaml", f"UU memories/{kept}.yaml"]
    # The steps, keeping the agent's edit: the key held once, by the memory kept.
    git(agent, "checkout", "--ours", f"memories/{kept}.yaml")
    git(agent, "add", f"memories/{kept}.yaml")
    invoke_cli("--kb", agent, "validate", check=True)
    git(agent, "commit", "-q", "--no-edit")
    assert _shown(invoke_cli, agent, kept)["learning"] == retries.format(6)
    assert not (agent / "memories" / f"{folded}.yaml").exists()
