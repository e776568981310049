"""What a change of a folded memory on the other side makes of the memory kept (folds.py,
``carry.follow_folds``, ``folds.carry_dropped``): a soft forget, an edit read field by field from
the folded memory's version where the sides parted, a rename, a memory brought back. Each test is
one team of real clones (``make_team``): agent-y's save folded into main's by the reviewer's merge."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from testing import CliRunner, default_first, git, json_of, make_team, unlike
from testing.folds import TOPIC, agent_saves, folded_team, main_then_agent_team, saved_id

# Every command typed in the clone's folder, as a user would (conftest's invoke_cli).
pytestmark = pytest.mark.typed_in_the_kb


def _folded(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """Two clones, the agent's and a: agent-y's save of the key pushed, main's saved later (the
    fold keeps main's text), then a's merge of agent-y folds the agent's into main's, synced:
    (the agent's clone, a, the agent's id, main's). Made once a process and copied
    (``folded_team``): most of these tests start there."""
    (agent, a), folded, kept = folded_team(tmp_path, 2, (unlike("agent"), unlike("main")))
    return agent, a, folded, kept


def _shown(invoke_cli: CliRunner, root: Path, memory_id: str) -> dict[str, object]:
    return dict(json_of(invoke_cli("--kb", root, "--json", "get", memory_id, check=True)))

def _agent_edits_and_main_merges_it_back(invoke_cli: CliRunner, agent: Path, a: Path, folded: str) -> None:
    """agent-y edits the memory main folded and syncs; main merges agent-y with plain git, the
    folded file brought back as agent-y holds it (``--theirs``), and commits."""
    invoke_cli("--kb", agent, "update", folded, "--learning", unlike("outage"), check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    subprocess.run(["git", "merge", "-q", "--no-edit", "origin/agent-y"], cwd=a, capture_output=True, check=False)
    git(a, "checkout", "--theirs", f"memories/{folded}.yaml")
    git(a, "add", f"memories/{folded}.yaml")
    git(a, "commit", "-q", "--no-edit")



@pytest.mark.parametrize("who", default_first(["reviewer", "agent"]))
def test_a_soft_forget_of_the_folded_memory_leaves_mains_memory(tmp_path: Path, invoke_cli: CliRunner, who: str) -> None:
    # MCP's mem_delete is soft: the merge said 'the edit went to 101' and soft-deleted main's
    # memory on every clone (the forget's deleted_at merged onto it).
    agent, a, folded, kept = _folded(tmp_path)
    on_main = (a / "memories" / f"{kept}.yaml").read_text()
    invoke_cli("--kb", agent, "forget", "--soft", folded, check=True)
    if who == "reviewer":
        invoke_cli("--kb", agent, "sync", check=True)
        git(a, "fetch", "-q")
        root, said = a, f"origin/agent-y forgot {folded}, which this branch had merged into {kept}"
        merged = invoke_cli("--kb", a, "merge", "origin/agent-y", check=True)
    else:
        git(agent, "fetch", "-q")
        root, said = agent, f"this branch forgot {folded}, which origin/main had merged into {kept}"
        merged = invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    assert merged.stdout.endswith(f"  kept {kept}: {said}; to forget {kept} too: slayer-kb forget {kept}\n")
    assert (root / "memories" / f"{kept}.yaml").read_text() == on_main
    assert not (root / "memories" / f"{folded}.yaml").exists()
    assert git(root, "status", "--short") == ""


def test_a_folded_memory_brought_back_on_main_takes_the_agents_edit(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The merge carried the agent's edit of 1 onto 101 and deleted the 1 main had restored.
    agent, a, folded, kept = _folded(tmp_path)
    invoke_cli("--kb", a, "restore", folded, "--rev", "origin/agent-y", check=True)
    on_main = (a / "memories" / f"{kept}.yaml").read_text()
    invoke_cli("--kb", agent, "update", folded, "--description", "Why five", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    merged = invoke_cli("--kb", a, "merge", "origin/agent-y", check=True)
    assert "kept" not in merged.stdout
    assert _shown(invoke_cli, a, folded)["description"] == "Why five"
    assert (a / "memories" / f"{kept}.yaml").read_text() == on_main


def test_an_edit_of_a_field_main_holds_another_way_stops_naming_the_fold(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The carry took the newer side's whole memory: main's title went back to the agent's, or
    # the agent's edit was dropped though the reply said it landed; two texts never stopped.
    agent, a, folded, kept = _folded(tmp_path)
    before = _shown(invoke_cli, a, kept)
    invoke_cli("--kb", a, "update", kept, "--title", "Retry budget, reviewed", check=True)
    invoke_cli("--kb", agent, "update", folded, "--learning", unlike("outage"), "--description", "Why five", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    stopped = invoke_cli("--kb", a, "merge", "origin/agent-y")
    assert stopped.stderr.endswith(
        f"; slayer-kb validate; git commit --no-edit; slayer-kb sync. origin/agent-y edited {folded}, which this branch "
        f"had merged into {kept}: its edit is held at memories/{kept}.yaml as an edit of {kept}.\n")
    assert git(a, "status", "--short") == f"UU memories/{kept}.yaml\n"
    text = (a / "memories" / f"{kept}.yaml").read_text()
    # Only the field both hold two ways is in the markers, which name the fold; the title is
    # main's, the description the agent's, either way.
    assert f"<<<<<<< this branch: {kept}\n" in text
    assert f">>>>>>> origin/agent-y: {folded}, which this branch merged into {kept}\n" in text
    assert text.count("=======\n") == 1
    assert "title: Retry budget, reviewed\n" in text and "description: Why five\n" in text
    assert unlike("main") in text and unlike("outage") in text
    # The steps, keeping the agent's text.
    git(a, "checkout", "--theirs", f"memories/{kept}.yaml")
    git(a, "add", f"memories/{kept}.yaml")
    invoke_cli("--kb", a, "validate", check=True)
    git(a, "commit", "-q", "--no-edit")
    shown = _shown(invoke_cli, a, kept)
    assert (shown["title"], shown["description"], shown["learning"], shown["revision_count"]) == (
        "Retry budget, reviewed", "Why five", unlike("outage"), int(str(before["revision_count"])) + 2)


def test_an_edit_carried_through_a_fold_keeps_the_fields_main_changed(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main's reviewed title went back to the agent's, the agent's description went nowhere.
    agent, a, folded, kept = _folded(tmp_path)
    before = _shown(invoke_cli, a, kept)
    invoke_cli("--kb", a, "update", kept, "--title", "Retry budget, reviewed", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", agent, "update", folded, "--description", "Why five", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    merged = invoke_cli("--kb", a, "merge", "origin/agent-y", check=True)
    assert merged.stdout.endswith(f"  kept {kept}: origin/agent-y edited {folded}, which this branch had merged into "
                                  f"{kept}: the edit went to {kept}\n")
    shown = _shown(invoke_cli, a, kept)
    assert (shown["title"], shown["description"], shown["learning"], shown["revision_count"]) == (
        "Retry budget, reviewed", "Why five", unlike("main"), int(str(before["revision_count"])) + 2)


@pytest.mark.slow  # covered by a default test (docs/testing.md, "What is in -m slow")
def test_a_rename_alone_of_the_folded_memory_is_folded_under_its_new_id(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The merge stopped on 'This branch forgot memories/1.yaml, which origin/agent-y renamed',
    # whose 'git rm' step stripped the links to kb.retry as forgotten.
    agent, a, folded, kept = _folded(tmp_path)
    on_main = _shown(invoke_cli, a, kept)
    linking = saved_id(invoke_cli, agent, unlike("linking"), "-e", f"memory:{folded}")
    invoke_cli("--kb", agent, "rename", folded, "kb.retry", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    merged = invoke_cli("--kb", a, "merge", "origin/agent-y", check=True)
    assert merged.stdout.endswith(
        f"  kept {kept}: origin/agent-y renamed {folded} to kb.retry, which this branch had merged into {kept}: its "
        f"edits went to {kept}, and links to kb.retry point at it\n")
    assert _shown(invoke_cli, a, kept) == on_main
    assert _shown(invoke_cli, a, linking)["entities"] == [f"memory:{kept}"]
    assert sorted(p.name for p in (a / "memories").iterdir()) == sorted([f"{kept}.yaml", f"{linking}.yaml"])


def test_an_edit_of_the_folded_memory_follows_main_renaming_the_memory_kept(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main renamed 101 to kb.retry: the merge stopped on 'this branch forgot' the agent's 1.
    agent, a, folded, kept = _folded(tmp_path)
    invoke_cli("--kb", a, "rename", kept, "kb.retry", check=True)
    invoke_cli("--kb", agent, "update", folded, "--description", "Why five", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    merged = invoke_cli("--kb", a, "merge", "origin/agent-y", check=True)
    assert merged.stdout.endswith(f"  kept kb.retry: origin/agent-y edited {folded}, which this branch had merged into "
                                  "kb.retry: the edit went to kb.retry\n")
    shown = _shown(invoke_cli, a, "kb.retry")
    assert (shown["description"], shown["learning"]) == ("Why five", unlike("main"))
    assert not (a / "memories" / f"{folded}.yaml").exists()


def _folded_on_agent_y(invoke_cli: CliRunner, tmp_path: Path) -> tuple[list[Path], str, str]:
    """main's save of the key synced, agent-y's (b's) saved later, c on agent-y too; b's merge of
    origin/main folds agent-y's into main's, not yet pushed: (the clones, agent-y's id, main's)."""
    (a, b, c), folded, kept = main_then_agent_team(tmp_path)
    git(b, "fetch", "-q")
    invoke_cli("--kb", b, "merge", "origin/main", check=True)
    return [a, b, c], folded, kept


def test_a_sync_rebasing_a_soft_forget_onto_a_fold_says_it_left_the_memory_kept(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The soft forget was carried as an edit: main's memory soft-deleted.
    (a, b, c), folded, kept = _folded_on_agent_y(invoke_cli, tmp_path)
    invoke_cli("--kb", c, "forget", "--soft", folded, check=True)
    invoke_cli("--kb", b, "sync", check=True)
    synced = invoke_cli("--kb", c, "sync", check=True)
    assert synced.stdout.endswith(f"  kept {kept}: this branch forgot {folded}, which origin/agent-y had merged into "
                                  f"{kept}; to forget {kept} too: slayer-kb forget {kept}\n"), synced.stdout
    assert _shown(invoke_cli, c, kept)["learning"] == unlike("agent")
    assert sorted(p.name for p in (c / "memories").iterdir()) == [f"{kept}.yaml"]


@pytest.mark.parametrize("when", default_first(["at once", "later"]))
def test_a_sync_rebasing_an_edit_of_a_field_the_memory_kept_changed_drops_it_and_says_so(
        tmp_path: Path, invoke_cli: CliRunner, when: str) -> None:
    # The newer side's whole memory won: b's later text went back to c's, the commit said
    # 'carry the edit'; an edit a second after the fold brought 101 back and folded it again.
    (a, b, c), folded, kept = _folded_on_agent_y(invoke_cli, tmp_path)
    invoke_cli("--kb", b, "update", kept, "--learning", unlike("reviewed"), check=True)
    invoke_cli("--kb", b, "sync", check=True)
    if when == "later":  # later than the fold's commit, as a forget and an edit are weighed
        time.sleep(1.1)
    invoke_cli("--kb", c, "update", folded, "--learning", unlike("outage"), check=True)
    edit = git(c, "rev-parse", "HEAD").strip()
    synced = invoke_cli("--kb", c, "sync", check=True)
    # It said "forgotten on origin after this clone changed it, the change dropped (git reflog
    # holds it)", though origin merged it into 101, and listed it under "merged both sides of".
    assert synced.stdout.splitlines()[1:] == [
        f"  kept {kept}: this branch edited {folded}, which origin/agent-y had merged into {kept}, in a field "
        f"{kept} holds another way: the edit dropped; to see it: git show {edit[:12]}:memories/{folded}.yaml"]
    assert unlike("outage") in git(c, "show", f"{edit[:12]}:memories/{folded}.yaml")
    assert _shown(invoke_cli, c, kept)["learning"] == unlike("reviewed")
    assert sorted(p.name for p in (c / "memories").iterdir()) == [f"{kept}.yaml"]


def test_an_offline_reviewer_on_a_trunk_team_keeps_the_default_branchs_memory(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The default branch is 'trunk', the reviewer's clone has no origin/HEAD (it made the team)
    # and cannot reach the remote: trunk's memory was folded into the agent's, saved first.
    bare, (agent, a) = make_team(tmp_path, clones=2)
    git(bare, "branch", "-m", "main", "trunk")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/trunk")
    for root in (agent, a):
        git(root, "fetch", "-q", "-p")
        git(root, "remote", "set-head", "origin", "-d")
    git(a, "branch", "-q", "-m", "main", "trunk")
    git(a, "branch", "-q", "-u", "origin/trunk")
    git(agent, "switch", "-q", "-c", "agent-y", "origin/trunk")
    folded = saved_id(invoke_cli, agent, unlike("agent"), *TOPIC)
    git(agent, "push", "-q", "-u", "origin", "agent-y")
    kept = saved_id(invoke_cli, a, unlike("main"), *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(a, "fetch", "-q")
    git(a, "remote", "set-url", "origin", str(tmp_path / "unreachable.git"))
    merged = invoke_cli("--kb", a, "merge", "origin/agent-y", check=True)
    assert merged.stdout.endswith(f"  merged (same topic key): {folded} into {kept}\n")


def test_an_offline_agent_taking_main_in_keeps_mains_memory(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # With no origin/HEAD and the remote out of reach, the agent's upstream (origin/agent-y) was
    # read as the default branch before origin/main: main's 101 was folded into the agent's 1.
    _bare, (agent, a) = make_team(tmp_path, clones=2)
    git(agent, "remote", "set-head", "origin", "-d")
    folded = agent_saves(invoke_cli, agent, unlike("agent"), *TOPIC)
    kept = saved_id(invoke_cli, a, unlike("main"), *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(agent, "fetch", "-q")
    git(agent, "remote", "set-url", "origin", str(tmp_path / "unreachable.git"))
    merged = invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    assert merged.stdout.endswith(f"  merged (same topic key): {folded} into {kept}\n")


def test_a_merge_folding_a_memory_another_branch_brought_records_no_move_of_this_clones(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # agent-y took agent-x's memory in, then main's: the fold of agent-x's id into main's was
    # recorded as this clone's ('merged this clone's memory 1 ... renumber --accept').
    _bare, (a, b, x) = make_team(tmp_path, clones=3)
    git(x, "switch", "-q", "-c", "agent-x")
    folded = saved_id(invoke_cli, x, unlike("agent"), *TOPIC)
    git(x, "push", "-q", "-u", "origin", "agent-x")
    kept = saved_id(invoke_cli, a, unlike("main"), *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "switch", "-q", "-c", "agent-y")
    git(b, "fetch", "-q")
    invoke_cli("--kb", b, "merge", "origin/agent-x", check=True)
    merged = invoke_cli("--kb", b, "merge", "origin/main", check=True)
    assert merged.stdout.endswith(f"  merged (same topic key): {folded} into {kept}\n")
    gone = invoke_cli("--kb", b, "get", folded)
    assert gone.stderr.startswith(f"Error: No memory with id '{folded}'. It was merged into '{kept}' in commit "), gone.stderr


def test_a_folded_memory_brought_back_by_hand_and_folded_again_counts_its_revisions_once(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # A plain 'git merge' of the agent's edit of its folded memory, kept with '--theirs', then
    # sync: the fold again added the agent's save's revision, which main's memory held already,
    # and main's title went back to the agent's.
    agent, a, folded, kept = _folded(tmp_path)
    invoke_cli("--kb", a, "update", kept, "--title", "Retry budget, reviewed", check=True)
    before = _shown(invoke_cli, a, kept)
    _agent_edits_and_main_merges_it_back(invoke_cli, agent, a, folded)
    synced = invoke_cli("--kb", a, "sync", check=True)
    assert synced.stdout.endswith(f"  merged (same topic key): {folded} into {kept}\n")
    shown = _shown(invoke_cli, a, kept)
    assert (shown["title"], shown["learning"], shown["revision_count"]) == (
        "Retry budget, reviewed", unlike("outage"), int(str(before["revision_count"])) + 1)


def test_a_folded_memory_brought_back_and_folded_again_says_the_field_both_changed(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Main's text and the returning copy's both changed since the first fold: the fold again took
    # the returning copy's and said only "merged (same topic key)".
    agent, a, folded, kept = _folded(tmp_path)
    invoke_cli("--kb", a, "update", kept, "--learning", unlike("reviewed"), check=True)
    _agent_edits_and_main_merges_it_back(invoke_cli, agent, a, folded)
    merge = git(a, "rev-parse", "HEAD").strip()
    synced = invoke_cli("--kb", a, "sync", check=True)
    assert synced.stdout.splitlines()[1:] == [
        f"  kept {kept}: {folded}, brought back after it was merged into {kept}, merged into it again; its learning, "
        f"which {kept} held another way, taken over {kept}'s; to see {kept}'s: git show {merge[:12]}:memories/{kept}.yaml",
        f"  merged (same topic key): {folded} into {kept}"]
    assert unlike("reviewed") in git(a, "show", f"{merge[:12]}:memories/{kept}.yaml")
    assert _shown(invoke_cli, a, kept)["learning"] == unlike("outage")
    followed = json_of(invoke_cli("--kb", a, "--json", "sync", check=True))["followed"]
    assert followed == {}  # said once, by the sync that folded it


def test_validate_against_main_reads_an_edit_of_a_folded_memory_through_the_fold(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # It said 'origin/main forgot this memory ... Run slayer-kb merge origin/main: it stops
    # there', though that merge carries the edit to main's memory.
    agent, a, folded, kept = _folded(tmp_path)
    invoke_cli("--kb", agent, "update", folded, "--description", "Why five", check=True)
    git(agent, "fetch", "-q")
    checked = invoke_cli("--kb", agent, "validate", "--against", "origin/main")
    assert (f"memories/{folded}.yaml:1: origin/main merged this memory into {kept} (one topic key or save on both "
            "sides) since this branch parted from it, and this branch edited it: a plain git merge of this branch "
            "stops on the fold's delete against the edit. Run 'git fetch origin && slayer-kb merge origin/main': it carries the edit to "
            f"{kept} field by field, or stops with the steps where {kept} holds a field the edit changed another way"
            ) in checked.stdout + checked.stderr, checked.stdout + checked.stderr
    merged = invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    assert merged.stdout.endswith(f"  kept {kept}: this branch edited {folded}, which origin/main had merged into "
                                  f"{kept}: the edit went to {kept}\n")


def test_a_sync_rebasing_an_edit_made_after_the_fold_carries_it_once(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # An edit a second after the fold's commit was kept as a forget undone: 101 came back and was
    # folded again, the agent's save counted twice and the reply naming 101 as kept.
    (a, b, c), folded, kept = _folded_on_agent_y(invoke_cli, tmp_path)
    invoke_cli("--kb", b, "sync", check=True)
    before = _shown(invoke_cli, b, kept)
    time.sleep(1.1)
    invoke_cli("--kb", c, "update", folded, "--description", "Why five", check=True)
    synced = invoke_cli("--kb", c, "sync", check=True)
    assert synced.stdout.endswith(f"\n  kept {kept}: this branch edited {folded}, which origin/agent-y had merged into "
                                  f"{kept}: the edit went to {kept}\n"), synced.stdout
    shown = _shown(invoke_cli, c, kept)
    assert (shown["description"], shown["learning"], shown["revision_count"]) == (
        "Why five", before["learning"], int(str(before["revision_count"])) + 1)
    assert sorted(p.name for p in (c / "memories").iterdir()) == [f"{kept}.yaml"]
    # 'get' of it said "forgotten for good" in the carry's commit: the commit now records the fold again.
    assert invoke_cli("--kb", c, "get", folded).stderr.startswith(
        f"Error: No memory with id '{folded}'. It was merged into '{kept}' in commit ")


def test_a_renamed_folded_memory_whose_edit_stops_leaves_no_second_copy(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The stop held 101 and committed kb.retry beside it: the sync after the steps folded kb.retry
    # into 101 again, its whole text over the person's choice, its revisions counted twice.
    agent, a, folded, kept = _folded(tmp_path)
    before = _shown(invoke_cli, a, kept)
    invoke_cli("--kb", agent, "rename", folded, "kb.retry", check=True)
    invoke_cli("--kb", agent, "update", "kb.retry", "--learning", unlike("outage"), check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    stopped = invoke_cli("--kb", a, "merge", "origin/agent-y")
    assert stopped.returncode == 1
    assert stopped.stderr.endswith(f"origin/agent-y renamed {folded}, which this branch had merged into {kept}: its edit "
                                   f"is held at memories/{kept}.yaml as an edit of {kept}.\n"), stopped.stderr
    assert git(a, "status", "--short") == f"UU memories/{kept}.yaml\n"
    git(a, "checkout", "--ours", f"memories/{kept}.yaml")
    git(a, "add", f"memories/{kept}.yaml")
    invoke_cli("--kb", a, "validate", check=True)
    git(a, "commit", "-q", "--no-edit")
    invoke_cli("--kb", a, "sync", check=True)
    assert _shown(invoke_cli, a, kept) == before
    assert sorted(p.name for p in (a / "memories").iterdir()) == [f"{kept}.yaml"]


def _held_rename(tmp_path: Path, invoke_cli: CliRunner, side: str) -> tuple[Path, Path, str, str]:
    """agent-y renamed its folded memory to kb.retry and edited a field main's memory holds another
    way; a's merge stopped, the side kept with ``side`` and staged: (the agent's clone, a, main's
    id, the id of a memory that linked the folded one)."""
    agent, a, folded, kept = _folded(tmp_path)
    linking = saved_id(invoke_cli, agent, unlike("linking"), "-e", f"memory:{folded}", "-e", "shop.orders.amount")
    invoke_cli("--kb", agent, "rename", folded, "kb.retry", check=True)
    invoke_cli("--kb", agent, "update", "kb.retry", "--learning", unlike("outage"), check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    assert invoke_cli("--kb", a, "merge", "origin/agent-y").returncode == 1
    git(a, "checkout", side, f"memories/{kept}.yaml")
    git(a, "add", f"memories/{kept}.yaml")
    return agent, a, kept, linking


@pytest.mark.parametrize("side", default_first(["--ours", "--theirs"]))
def test_a_held_rename_of_a_folded_memory_keeps_its_links_once_resolved(
        tmp_path: Path, invoke_cli: CliRunner, side: str) -> None:
    # The stop left links to kb.retry, which 'validate' said to prune, and the merge's commit
    # recorded no fold of kb.retry: the next sync stripped them as links to a forgotten memory.
    _agent, a, kept, linking = _held_rename(tmp_path, invoke_cli, side)
    invoke_cli("--kb", a, "validate", check=True)
    git(a, "commit", "-q", "--no-edit")
    assert git(a, "log", "-1", "--format=%s") == f"memory: merge kb.retry into {kept} (topic decision/retry-budget)\n"
    invoke_cli("--kb", a, "sync", check=True)
    assert _shown(invoke_cli, a, linking)["entities"] == [f"memory:{kept}", "shop.orders.amount"]
    merge = git(a, "rev-parse", "HEAD").strip()
    assert invoke_cli("--kb", a, "get", "kb.retry").stderr == (
        f"Error: No memory with id 'kb.retry'. It was merged into '{kept}' in commit {merge[:12]}, the memory kept "
        "under the same topic key; use that id.\n")
    assert sorted(p.name for p in (a / "memories").iterdir()) == sorted([f"{kept}.yaml", f"{linking}.yaml"])


@pytest.mark.parametrize("side", default_first(["--ours", "--theirs"]))
def test_a_held_rename_ended_with_a_message_of_ones_own_still_says_where_it_went(
        tmp_path: Path, invoke_cli: CliRunner, side: str) -> None:
    # 'git commit -m' over the printed '--no-edit' dropped the fold's subject, the only record of
    # it: 'get kb.retry' said just "No memory with id 'kb.retry'."
    agent, a, kept, linking = _held_rename(tmp_path, invoke_cli, side)
    git(a, "commit", "-q", "-m", "mine")
    invoke_cli("--kb", a, "sync", check=True)
    assert _shown(invoke_cli, a, linking)["entities"] == [f"memory:{kept}", "shop.orders.amount"]
    merge = git(a, "log", "-1", "--merges", "--format=%H").strip()
    assert git(a, "log", "-1", "--format=%s", merge) == "mine\n"
    folded = git(a, "log", "-1", "--format=%s", "--grep=^memory: rename ", "origin/agent-y").split()[2]
    for command in ("get", "forget"):
        assert invoke_cli("--kb", a, command, "kb.retry").stderr == (
            f"Error: No memory with id 'kb.retry'. It was merged into '{kept}' in commit {merge[:12]}, the merge of "
            f"the rename of {folded} to it, {folded} having been merged into {kept} on the other side; use that id.\n")
    # show and log said it never was ("now or in the history"): git's history of the file leaves the
    # merge's renaming side out, the merge being TREESAME to the other.
    shown = invoke_cli("--kb", a, "show", "kb.retry", check=True).stdout
    assert shown.startswith(f"(merged into '{kept}' in commit {merge[:12]}, the merge of the rename of {folded} to it, "
                            f"{folded} having been merged into {kept} on the other side; the last version)\nid: kb.retry\n")
    logged = invoke_cli("--kb", a, "log", "kb.retry", check=True).stdout
    assert logged.startswith(f"{merge[:12]} ") and f"    memory: rename {folded} to kb.retry\n" in logged
    assert sorted(p.name for p in (a / "memories").iterdir()) == sorted([f"{kept}.yaml", f"{linking}.yaml"])
    # The agent edits kb.retry again: the next merge read no fold of it (a stop on an edit of a
    # file this branch forgot, unless git paired the texts); it goes to the memory kept.
    invoke_cli("--kb", agent, "update", "kb.retry", "--description", unlike("zebra"), check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    assert invoke_cli("--kb", a, "merge", "origin/agent-y", check=True).stdout.endswith(
        f"  kept {kept}: origin/agent-y edited kb.retry, which this branch had merged into {kept}: the edit went "
        f"to {kept}\n")
    assert f"description: {unlike('zebra')}\n" in (a / "memories" / f"{kept}.yaml").read_text()


@pytest.mark.parametrize("edited", default_first([False, True]))
def test_a_link_the_fold_and_a_rename_both_pointed_on_is_listed_once(
        tmp_path: Path, invoke_cli: CliRunner, edited: bool) -> None:
    # L, saved on agent-y before the fold, linked 27: main's fold pointed it at 101, agent-y's
    # rename at kb.retry; the merge kept both entries and the relink made both memory:101, which
    # validate and sync refused ("entity 'memory:101' is listed twice"), the merge committed.
    _bare, (agent, a) = make_team(tmp_path, clones=2)
    folded = agent_saves(invoke_cli, agent, unlike("agent"), *TOPIC)
    linking = saved_id(invoke_cli, agent, unlike("linking"), "-e", f"memory:{folded}", "-e", "shop.orders.amount")
    git(agent, "push", "-q")
    kept = saved_id(invoke_cli, a, unlike("main"), *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(a, "fetch", "-q")
    invoke_cli("--kb", a, "merge", "origin/agent-y", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    assert _shown(invoke_cli, a, linking)["entities"] == [f"memory:{kept}", "shop.orders.amount"]
    invoke_cli("--kb", agent, "rename", folded, "kb.retry", check=True)
    if edited:
        invoke_cli("--kb", agent, "update", "kb.retry", "--learning", unlike("outage"), check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    merged = invoke_cli("--kb", a, "merge", "origin/agent-y")
    assert merged.returncode == int(edited)
    if edited:
        git(a, "checkout", "--theirs", f"memories/{kept}.yaml")
        git(a, "add", f"memories/{kept}.yaml")
        git(a, "commit", "-q", "--no-edit")
    assert invoke_cli("--kb", a, "validate", check=True).stdout == "Checked 3 files: no problems.\n"
    assert _shown(invoke_cli, a, linking)["entities"] == [f"memory:{kept}", "shop.orders.amount"]
    assert invoke_cli("--kb", a, "sync", check=True).stdout.startswith("Synced main with origin: pushed, 0 pulled, ")
