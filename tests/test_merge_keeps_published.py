"""Which memory a fold keeps when ``slayer-kb merge`` finds one topic key (or one save made alike)
on both sides, and what becomes of the links to the one folded away (folds.py, unlinks.py).

A reviewer's ``slayer-kb merge origin/agent-y`` on ``main`` once folded ``main``'s memory, which
the team held and linked, into the agent's, and the next sync of a clone that linked it stripped
the link as if the memory were forgotten. The memory on the remote's default branch is kept,
whichever way round the merge is run, and a link to a folded id follows the fold as a link to a
renamed id follows the rename. Each test is one team of real clones (``make_team``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import slayer_kb.kb as kb_module
from slayer_kb.core.memory import utc_time
from slayer_kb.ops import observations
from slayer_kb.store.idtrailer import without_trailer
from testing import CliRunner, default_first, git, json_of, make_catalog_kb, make_team, unlike
from testing.folds import TOPIC, agent_saves, agent_then_main_team, saved_id

# Every command typed in the clone's folder, as a user would (conftest's invoke_cli).
pytestmark = pytest.mark.typed_in_the_kb


def test_merge_of_an_agent_branch_on_main_keeps_mains_memory_and_the_links_to_it(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    _bare, (a, agent, reviewer, d) = make_team(tmp_path, clones=4)
    kept = saved_id(invoke_cli, a, "Retries: 3", *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", d, "sync", check=True)
    linking = saved_id(invoke_cli, d, unlike("linking"), "-e", f"memory:{kept}", "-e", "shop.orders.amount")
    folded = agent_saves(invoke_cli, agent, "Retries: 5", *TOPIC)
    git(reviewer, "pull", "-q")
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout == ("Merged origin/agent-y; run slayer-kb sync to push.\n"
                             f"  merged (same topic key): {folded} into {kept}\n")
    fold = git(reviewer, "log", "-1", "--format=%H %s")
    assert fold.split(" ", 1)[1] == f"memory: merge {folded} into {kept} (topic decision/retry-budget)\n"
    # Both saves count (the newer one's text: within one second, either's).
    assert json_of(invoke_cli("--kb", reviewer, "--json", "get", kept, check=True))["revision_count"] == 2
    # The agent's id, which this clone never gave: the fold's commit says where it went.
    gone = invoke_cli("--kb", reviewer, "get", folded)
    assert gone.stderr == (f"Error: No memory with id '{folded}'. It was merged into '{kept}' in commit "
                           f"{fold[:12]}, the memory kept under the same topic key; use that id.\n")
    invoke_cli("--kb", reviewer, "sync", check=True)
    synced = invoke_cli("--kb", d, "sync", check=True)
    assert synced.stdout == "Synced main with origin: rebased, 3 pulled, 1 pushed.\n"
    assert json_of(invoke_cli("--kb", d, "--json", "get", linking, check=True))["entities"] == [
        f"memory:{kept}", "shop.orders.amount"]
    invoke_cli("--kb", a, "sync", check=True)
    assert json_of(invoke_cli("--kb", a, "--json", "get", kept, check=True))["revision_count"] == 2


def test_either_way_round_merge_keeps_the_memory_on_the_default_branch_though_saved_later(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The agent saved and pushed first; main's save came later (or in the same second): main's
    # is the one the team holds, kept whichever branch the merge runs on.
    (agent, a, reviewer), folded, kept = agent_then_main_team(tmp_path)
    git(agent, "fetch", "-q")
    for root, ref in ((reviewer, "origin/agent-y"), (agent, "origin/main")):
        merged = invoke_cli("--kb", root, "merge", ref, check=True)
        assert merged.stdout == (f"Merged {ref}; run slayer-kb sync to push.\n"
                                 f"  merged (same topic key): {folded} into {kept}\n")
        assert git(root, "ls-files", f"memories/{folded}.yaml", f"memories/{kept}.yaml") == f"memories/{kept}.yaml\n"
    # The agent's clone gave the id: the move is recorded there, and only there.
    assert invoke_cli("--kb", agent, "get", folded).stderr.startswith(
        f"Error: Memory id '{folded}' moved: 'slayer-kb merge' merged this clone's memory {folded} into {kept}, which "
        "the branch it merged holds under the same topic key; ")
    assert invoke_cli("--kb", reviewer, "get", folded).stderr.startswith(f"Error: No memory with id '{folded}'. It was merged")


def test_merge_of_an_agent_branch_on_main_keeps_mains_save_made_alike(tmp_path: Path, invoke_cli: CliRunner) -> None:
    _bare, (a, agent, reviewer) = make_team(tmp_path, clones=3)
    same = (unlike("same"), "--title", "Same obs")
    kept = saved_id(invoke_cli, a, *same)
    invoke_cli("--kb", a, "sync", check=True)
    folded = agent_saves(invoke_cli, agent, *same)
    git(reviewer, "pull", "-q")
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout == ("Merged origin/agent-y; run slayer-kb sync to push.\n"
                             f"  merged (same save): {folded} into {kept}\n")
    assert json_of(invoke_cli("--kb", reviewer, "--json", "get", kept, check=True))["duplicate_count"] == 2
    assert git(reviewer, "log", "-1", "--format=%s") == f"memory: merge {folded} into {kept} (same save)\n"


def test_merge_of_a_local_branch_keeps_the_memory_main_holds_though_saved_later(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # docs/teams.md's 'slayer-kb merge topic' on main: topic's save came first, but only main's
    # is on the remote, where the team may hold its id.
    _bare, (a, b) = make_team(tmp_path)
    git(a, "switch", "-q", "-c", "topic")
    folded = saved_id(invoke_cli, a, "Retries: 3", *TOPIC)
    git(a, "switch", "-q", "main")
    kept = saved_id(invoke_cli, b, "Retries: 5", *TOPIC)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    merged = invoke_cli("--kb", a, "merge", "topic", check=True)
    assert merged.stdout == ("Merged topic; run slayer-kb sync to push.\n"
                             f"  merged (same topic key): {folded} into {kept}\n")
    shown = json_of(invoke_cli("--kb", a, "--json", "get", kept, check=True))
    # Dated from the first save.
    assert shown["revision_count"] == 2
    assert shown["created_at"] == json_of(invoke_cli("--kb", a, "--json", "show", f"{folded}", "--rev", "topic",
                                                     check=True))["created_at"]


def test_two_agent_branches_merged_in_turn_keep_mains_memory(tmp_path: Path, invoke_cli: CliRunner,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # The first merge gave main's memory the agent's earlier created_at, which then read as
    # another memory than the remote's: the second merge folded main's id away.
    clock = [utc_time(1_780_000_000)]  # the agents save a minute before main
    for module in (kb_module, observations):
        monkeypatch.setattr(module, "utc_now", lambda: clock[0])
    _bare, (y, z, a, reviewer) = make_team(tmp_path, clones=4)
    first = agent_saves(invoke_cli, y, "Retries: 5", *TOPIC)
    git(z, "switch", "-q", "-c", "agent-z")
    second = saved_id(invoke_cli, z, "Retries: 7", *TOPIC)
    git(z, "push", "-q", "-u", "origin", "agent-z")
    clock[0] = utc_time(1_780_000_060)
    kept = saved_id(invoke_cli, a, "Retries: 3", *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(reviewer, "pull", "-q")
    said = [invoke_cli("--kb", reviewer, "merge", ref, check=True).stdout.splitlines()[1]
            for ref in ("origin/agent-y", "origin/agent-z")]
    assert said == [f"  merged (same topic key): {first} into {kept}", f"  merged (same topic key): {second} into {kept}"]
    assert json_of(invoke_cli("--kb", reviewer, "--json", "get", kept, check=True))["revision_count"] == 3


def test_the_clone_that_made_the_team_keeps_mains_memory_without_origin_head(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The first clone (git remote add, a push) has no origin/HEAD: main's memory ranked as any
    # pushed branch's, and the agent's, saved first, was kept. Asked nothing of the remote then.
    (agent, a, reviewer), folded, kept = agent_then_main_team(tmp_path)
    git(reviewer, "remote", "set-head", "origin", "-d")
    # Nor can the remote be asked (offline): origin/main stands for its default.
    git(reviewer, "remote", "set-url", "origin", str(tmp_path / "unreachable.git"))
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout.splitlines()[1] == f"  merged (same topic key): {folded} into {kept}"


def test_a_team_whose_default_branch_is_trunk_keeps_trunks_memory(tmp_path: Path, invoke_cli: CliRunner,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # The remote's default is trunk (main moved there and deleted); the reviewer's clone has no
    # origin/HEAD: every pushed memory ranked alike, and the agent's, saved first, was kept.
    clock = [utc_time(1_780_000_000)]
    for module in (kb_module, observations):
        monkeypatch.setattr(module, "utc_now", lambda: clock[0])
    bare, (agent, a, reviewer) = make_team(tmp_path, clones=3)
    git(a, "push", "-q", "origin", "main:trunk")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/trunk")
    git(a, "push", "-q", "origin", ":main")
    for clone in (a, reviewer):
        git(clone, "fetch", "-q", "--prune")
        git(clone, "switch", "-q", "-c", "trunk", "--track", "origin/trunk")
        git(clone, "remote", "set-head", "origin", "-d")
    folded = agent_saves(invoke_cli, agent, "Retries: 5", *TOPIC)
    clock[0] = utc_time(1_780_000_060)
    kept = saved_id(invoke_cli, a, "Retries: 3", *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(reviewer, "pull", "-q")
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout.splitlines()[1] == f"  merged (same topic key): {folded} into {kept}"


@pytest.mark.slow  # covered by a default test (docs/testing.md, "What is in -m slow")
def test_a_branch_that_took_in_main_keeps_mains_memory_through_its_sync(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # b took main's memory into agent-y (slayer-kb merge origin/main) while c saved the key on
    # agent-y and synced: b's sync folded main's published id into c's, and the branch merged
    # back took it from main.
    _bare, (a, b, c) = make_team(tmp_path, clones=3)
    kept = saved_id(invoke_cli, a, "Retries: 3", *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    agent_saves(invoke_cli, b, unlike("agent"), "-e", "shop.orders.amount")
    git(c, "fetch", "-q")
    git(c, "switch", "-q", "agent-y")
    git(b, "fetch", "-q")
    invoke_cli("--kb", b, "merge", "origin/main", check=True)
    folded = saved_id(invoke_cli, c, "Retries: 5", *TOPIC)
    invoke_cli("--kb", c, "sync", check=True)
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert f"  merged (same topic key): {folded} into {kept}\n" in synced.stdout
    assert (b / "memories" / f"{kept}.yaml").is_file() and not (b / "memories" / f"{folded}.yaml").exists()


@pytest.mark.slow  # covered by a default test (docs/testing.md, "What is in -m slow")
def test_one_fold_made_on_two_clones_counts_its_revisions_once(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Two reviewers each merged the agent's branch, folding 201 into 27 alike; the second's sync
    # summed both sides' revisions of 27 as if each had folded another memory into it: 3.
    _bare, (agent, a, d, b) = make_team(tmp_path, clones=4)
    folded = agent_saves(invoke_cli, agent, "Retries: 5", *TOPIC)
    kept = saved_id(invoke_cli, a, "Retries: 3", *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    for reviewer in (d, b):
        git(reviewer, "pull", "-q")
        said = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True).stdout
        assert said.splitlines()[1] == f"  merged (same topic key): {folded} into {kept}"
    invoke_cli("--kb", d, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    assert json_of(invoke_cli("--kb", b, "--json", "get", kept, check=True))["revision_count"] == 2


@pytest.mark.parametrize("second", default_first(["after the edit", "before it"]))
def test_one_fold_made_on_two_clones_with_an_edit_carried_between_counts_each_revision_once(
        tmp_path: Path, invoke_cli: CliRunner, second: str) -> None:
    # Two reviewers each merged the agent's branch, folding 1 into 101; the agent's edit of 1
    # reached the first through the fold ('the edit went to 101'), the second's fold took it in
    # with 1 (or came before it). The second's sync counted 5 (or 4) revisions for 3 (main's save,
    # the agent's, its edit), and said it had forgotten 1, which it had folded too.
    (agent, a, d, b), folded, kept = agent_then_main_team(tmp_path, 4, (unlike("agent"), unlike("main")))
    git(b, "pull", "-q")
    invoke_cli("--kb", d, "merge", "origin/agent-y", check=True)
    if second == "before it":
        invoke_cli("--kb", b, "merge", "origin/agent-y", check=True)
    invoke_cli("--kb", agent, "update", folded, "--description", "Why five", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(d, "fetch", "-q")
    said = invoke_cli("--kb", d, "merge", "origin/agent-y", check=True).stdout
    assert said.splitlines()[1:] == [f"  kept {kept}: origin/agent-y edited {folded}, which this branch had merged "
                                     f"into {kept}: the edit went to {kept}"]
    if second == "after the edit":
        git(b, "fetch", "-q")
        invoke_cli("--kb", b, "merge", "origin/agent-y", check=True)
    invoke_cli("--kb", d, "sync", check=True)
    synced = invoke_cli("--kb", b, "sync", check=True)
    shown = json_of(invoke_cli("--kb", b, "--json", "get", kept, check=True))
    assert (shown["revision_count"], shown["description"]) == (3, "Why five")
    assert "kept" not in synced.stdout


def test_a_link_made_elsewhere_to_a_folded_memory_follows_the_fold(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The agent merges main in, its memory folded into main's; another clone of agent-y had
    # linked the agent's memory meanwhile: its sync points the link at main's, never strips it.
    _bare, (a, agent, other) = make_team(tmp_path, clones=3)
    kept = saved_id(invoke_cli, a, "Retries: 3", *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    folded = agent_saves(invoke_cli, agent, "Retries: 5", *TOPIC)
    git(other, "fetch", "-q")
    git(other, "switch", "-q", "agent-y")
    linking = saved_id(invoke_cli, other, unlike("linking"), "-e", f"memory:{folded}", "-e", "shop.orders.amount")
    git(agent, "fetch", "-q")
    merged = invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    assert merged.stdout.endswith(f"  merged (same topic key): {folded} into {kept}\n")
    invoke_cli("--kb", agent, "sync", check=True)
    synced = invoke_cli("--kb", other, "sync", check=True)
    assert synced.stdout == ("Synced agent-y with origin: rebased, 3 pulled, 2 pushed.\n"
                             f"  rewrote links to merged memories: memory:{folded} -> memory:{kept} in {linking}\n")
    assert git(other, "log", "-1", "--format=%s") == f"memory: rewrite links to merged {folded} as {kept} in {linking}\n"
    assert json_of(invoke_cli("--kb", other, "--json", "get", linking, check=True))["entities"] == [
        f"memory:{kept}", "shop.orders.amount"]
    assert invoke_cli("--kb", other, "validate").returncode == 0


def test_validate_and_prune_point_a_link_to_a_folded_memory_a_plain_merge_brought(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # No remote, no sync: branch 'other' linked main's memory, which 'slayer-kb merge topic' then
    # folded into topic's (saved first); 'git merge other' brings the link.
    root = make_catalog_kb(tmp_path / "kb")
    here = git(root, "branch", "--show-current").strip()
    git(root, "switch", "-q", "-c", "topic")
    kept = saved_id(invoke_cli, root, "Retries: 3", *TOPIC)
    git(root, "switch", "-q", here)
    folded = saved_id(invoke_cli, root, "Retries: 5", *TOPIC)
    git(root, "switch", "-q", "-c", "other")
    linking = saved_id(invoke_cli, root, unlike("linking"), "-e", f"memory:{folded}", "-e", "shop.orders.amount")
    git(root, "switch", "-q", here)
    merged = invoke_cli("--kb", root, "merge", "topic", check=True)
    assert merged.stdout.endswith(f"  merged (same topic key): {folded} into {kept}\n")
    fold = git(root, "rev-parse", "HEAD").strip()
    git(root, "merge", "-q", "--no-edit", "other")
    checked = invoke_cli("--kb", root, "validate")
    assert checked.stdout.split("\n")[0] == (
        f"memories/{linking}.yaml:3: 'memory:{folded}' refers to {folded}, which commit {fold[:12]} merged into {kept}: "
        f"run 'slayer-kb prune' to point it at {kept}")
    invoke_cli("--kb", root, "prune", check=True)
    assert without_trailer(git(root, "log", "-1", "--format=%B")).endswith(
        f"\n\nPointed memory:{folded} at memory:{kept} (merged) in {linking}")
    assert json_of(invoke_cli("--kb", root, "--json", "get", linking, check=True))["entities"] == [
        f"memory:{kept}", "shop.orders.amount"]
    assert invoke_cli("--kb", root, "validate").returncode == 0
