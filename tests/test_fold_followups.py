"""What comes after a fold (folds.py) on a team: a forget, an edit or a rename of the folded
memory on the other side, a plain ``git merge``, and what ``get`` and sync say of it. Each test is
one team of real clones (``make_team``), or one clone
with branches (``make_catalog_kb``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import slayer_kb.kb as kb_module
from slayer_kb.core.memory import utc_time
from slayer_kb.ops import observations
from testing import (
    CliRunner,
    default_first,
    git,
    json_of,
    make_catalog_kb,
    make_team,
    unlike,
)
from testing.folds import TOPIC, agent_then_main_team, folded_team, main_then_agent_team, saved_id

# Every command typed in the clone's folder, as a user would (conftest's invoke_cli).
pytestmark = pytest.mark.typed_in_the_kb


# Short alike texts, which git pairs as a rename of the folded file to the kept one, and texts
# it pairs with nothing (a forget here of the folded file).
ALIKE, APART = ("Retries: 5", "Retries: 3"), (unlike("agent"), unlike("main"))


@pytest.mark.parametrize("texts", default_first([pytest.param(ALIKE, id="paired"), pytest.param(APART, id="apart")]))
def test_a_folded_memory_the_agent_forgot_later_leaves_mains_memory_and_says_so(
        tmp_path: Path, invoke_cli: CliRunner, texts: tuple[str, str]) -> None:
    # The reviewer's merge folded agent-y's 1 into main's 101; agent-y then forgot its 1. The next
    # merge stopped on a forget of 101 'which this branch edited', whose 'git rm' dropped main's memory.
    (agent, a, reviewer), folded, kept = folded_team(tmp_path, 3, texts)
    on_main = (reviewer / "memories" / f"{kept}.yaml").read_text()
    invoke_cli("--kb", agent, "forget", folded, check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q")
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout == (
        "Merged origin/agent-y; run slayer-kb sync to push.\n"
        f"  kept {kept}: origin/agent-y forgot {folded}, which this branch had merged into {kept}; to forget {kept} "
        f"too: slayer-kb forget {kept}\n")
    assert (reviewer / "memories" / f"{kept}.yaml").read_text() == on_main
    assert not (reviewer / "memories" / f"{folded}.yaml").exists()
    assert git(reviewer, "status", "--short") == ""
    assert json_of(invoke_cli("--kb", reviewer, "--json", "merge", "origin/agent-y", check=True))["action"] == "up to date"


def test_an_edit_of_a_folded_memory_on_the_agents_branch_lands_on_mains_memory(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Texts git pairs with nothing: the merge stopped on agent-y's edit of 1 against this
    # branch's forget, and keeping both held the key twice.
    (agent, a, reviewer), folded, kept = folded_team(tmp_path, 3, APART)
    before = json_of(invoke_cli("--kb", reviewer, "--json", "get", kept, check=True))
    invoke_cli("--kb", agent, "update", folded, "--description", "Why five", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q")
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout == ("Merged origin/agent-y; run slayer-kb sync to push.\n"
                             f"  kept {kept}: origin/agent-y edited {folded}, which this branch had merged into {kept}: "
                             f"the edit went to {kept}\n")
    shown = json_of(invoke_cli("--kb", reviewer, "--json", "get", kept, check=True))
    # The field the agent changed, main's text kept (the fold took main's, the newer).
    assert (shown["learning"], shown["description"], shown["revision_count"]) == (
        before["learning"], "Why five", before["revision_count"] + 1)
    assert not (reviewer / "memories" / f"{folded}.yaml").exists()
    invoke_cli("--kb", reviewer, "sync", check=True)


def test_a_folded_memory_the_agent_renamed_later_is_folded_under_its_new_id_too(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The merge stopped on three conflicts whose steps kept the key twice or stripped the links.
    (agent, a, reviewer), folded, kept = folded_team(tmp_path, 3, APART)
    revisions = json_of(invoke_cli("--kb", reviewer, "--json", "get", kept, check=True))["revision_count"]
    linking = saved_id(invoke_cli, agent, unlike("linking"), "-e", f"memory:{folded}", "-e", "shop.orders.amount")
    invoke_cli("--kb", agent, "rename", folded, "kb.retry", check=True)
    invoke_cli("--kb", agent, "update", "kb.retry", "--description", "Why five", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q")
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout == (
        "Merged origin/agent-y; run slayer-kb sync to push.\n"
        f"  kept {kept}: origin/agent-y renamed {folded} to kb.retry, which this branch had merged into {kept}: its "
        f"edits went to {kept}, and links to kb.retry point at it\n")
    assert git(reviewer, "log", "-1", "--format=%s") == (
        f"memory: merge kb.retry into {kept} (topic decision/retry-budget)\n")
    shown = json_of(invoke_cli("--kb", reviewer, "--json", "get", kept, check=True))
    # The agent's save counted once (the fold made it one of 101's), its update once.
    assert (shown["learning"], shown["description"], shown["revision_count"]) == (unlike("main"), "Why five", revisions + 1)
    assert json_of(invoke_cli("--kb", reviewer, "--json", "get", linking, check=True))["entities"] == [
        f"memory:{kept}", "shop.orders.amount"]
    assert invoke_cli("--kb", reviewer, "get", "kb.retry").stderr.startswith(
        f"Error: No memory with id 'kb.retry'. It was merged into '{kept}' in commit ")
    assert invoke_cli("--kb", reviewer, "validate").returncode == 0
    invoke_cli("--kb", reviewer, "sync", check=True)


# The sync by default; the rebase by hand, which folds the same way, in -m slow.
@pytest.mark.parametrize("how", default_first(["sync", "rebase"]))
def test_a_sync_keeping_mains_memory_records_no_move_of_the_upstreams_id(
        tmp_path: Path, invoke_cli: CliRunner, how: str) -> None:
    # b took main's memory into agent-y, c saved the key there and synced: b's sync (or rebase)
    # folds c's id into main's, a move b never made, once recorded as b's ('sync merged this
    # clone's memory 1').
    _bare, (a, b, c) = make_team(tmp_path, clones=3)
    kept = saved_id(invoke_cli, a, "Retries: 3", *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "switch", "-q", "-c", "agent-y")
    saved_id(invoke_cli, b, unlike("agent"), "-e", "shop.orders.amount")
    git(b, "push", "-q", "-u", "origin", "agent-y")
    git(c, "fetch", "-q")
    git(c, "switch", "-q", "agent-y")
    git(b, "fetch", "-q")
    invoke_cli("--kb", b, "merge", "origin/main", check=True)
    folded = saved_id(invoke_cli, c, "Retries: 5", *TOPIC)
    invoke_cli("--kb", c, "sync", check=True)
    if how == "rebase":
        git(b, "fetch", "-q")
        said = invoke_cli("--kb", b, "rebase", "origin/agent-y", check=True).stdout
    else:
        said = invoke_cli("--kb", b, "sync", check=True).stdout
    assert f"  merged (same topic key): {folded} into {kept}\n" in said
    gone = invoke_cli("--kb", b, "get", folded)
    assert gone.stderr.startswith(f"Error: No memory with id '{folded}'. It was merged into '{kept}' in commit "), gone.stderr


def test_get_of_a_folded_memory_follows_a_rename_of_the_memory_kept(tmp_path: Path, invoke_cli: CliRunner,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # 'get' named the fold's target, which no memory holds since its rename.
    clock = [utc_time(1_780_000_000)]
    for module in (kb_module, observations):
        monkeypatch.setattr(module, "utc_now", lambda: clock[0])
    root = make_catalog_kb(tmp_path / "kb")
    here = git(root, "branch", "--show-current").strip()
    kept = saved_id(invoke_cli, root, unlike("here"), *TOPIC)
    git(root, "switch", "-q", "-c", "topic", "HEAD~1")
    clock[0] = utc_time(1_780_000_060)
    theirs = saved_id(invoke_cli, root, unlike("topic"), *TOPIC)
    mine = saved_id(invoke_cli, root, unlike("mine"), "--title", "Later", "--type", "decision", "--project", "api",
                  "--topic-key", "decision/later")
    git(root, "switch", "-q", here)
    clock[0] = utc_time(1_780_000_120)
    later = saved_id(invoke_cli, root, unlike("later"), "--title", "Later", "--type", "decision", "--project", "api",
                   "--topic-key", "decision/later")
    # Saved first here, the key's memory here is kept and topic's folded in (no move of this
    # clone's: the commit says it); saved later here, the other key's memory here is folded into
    # topic's (this clone's move, recorded).
    said = invoke_cli("--kb", root, "merge", "topic", check=True).stdout
    assert said.endswith(f"  merged (same topic key): {theirs} into {kept}, {later} into {mine}\n")
    fold = git(root, "log", "-1", "--format=%H", "--grep=^memory: merge ").strip()
    invoke_cli("--kb", root, "rename", kept, "kb.retry", check=True)
    invoke_cli("--kb", root, "rename", mine, "kb.later", check=True)
    renamed = git(root, "log", "-2", "--format=%H").split()
    gone = invoke_cli("--kb", root, "get", theirs)
    assert gone.stderr == (f"Error: No memory with id '{theirs}'. It was merged into '{kept}' in commit {fold[:12]}, the "
                           f"memory kept under the same topic key, which was renamed to 'kb.retry' in commit "
                           f"{renamed[1][:12]}: use that id.\n")
    recorded = invoke_cli("--kb", root, "get", later)
    assert recorded.stderr.startswith(f"Error: Memory id '{later}' moved: 'slayer-kb merge' merged this clone's memory "
                                      f"{later} into {mine}, ")
    assert (f"Use {mine} for the memory saved here (no memory has id '{mine}' now either: it was renamed to 'kb.later' "
            f"in commit {renamed[0][:12]}: use that id); ") in recorded.stderr


def test_get_of_a_renamed_memory_follows_a_fold_of_its_new_id(tmp_path: Path, invoke_cli: CliRunner) -> None:
    root = make_catalog_kb(tmp_path / "kb")
    here = git(root, "branch", "--show-current").strip()
    git(root, "switch", "-q", "-c", "topic")
    kept = saved_id(invoke_cli, root, unlike("topic"), *TOPIC)
    git(root, "switch", "-q", here)
    first = saved_id(invoke_cli, root, unlike("here"), *TOPIC)
    invoke_cli("--kb", root, "rename", first, "kb.retry", check=True)
    renamed = git(root, "rev-parse", "HEAD").strip()
    said = invoke_cli("--kb", root, "merge", "topic", check=True).stdout
    assert said.endswith(f"  merged (same topic key): kb.retry into {kept}\n")
    fold = git(root, "rev-parse", "HEAD").strip()
    gone = invoke_cli("--kb", root, "get", first)
    assert gone.stderr == (f"Error: Memory '{first}' was renamed to 'kb.retry' in commit {renamed[:12]}, which was merged "
                           f"into '{kept}' in commit {fold[:12]}, the memory kept under the same topic key: use that id.\n")


def test_show_of_a_folded_memory_names_the_fold_and_the_memory_kept(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # 'show 1' headed the last version "(deleted in <merge>; ...)", where 'get 1' names the fold
    # and the memory that goes on.
    (_agent, _a, reviewer), folded, kept = folded_team(tmp_path, 3)
    merge = git(reviewer, "log", "-1", "--format=%H", f"--grep=^memory: merge {folded} into {kept} ").strip()
    said = f"merged into '{kept}' in commit {merge[:12]}, the memory kept under the same topic key"
    assert invoke_cli("--kb", reviewer, "get", folded).stderr == (
        f"Error: No memory with id '{folded}'. It was {said}; use that id.\n")
    shown = invoke_cli("--kb", reviewer, "show", folded, check=True)
    assert (shown.stdout.partition("\nid: ")[0], shown.stderr) == (f"({said}; the last version)", "")
    data = json_of(invoke_cli("--kb", reviewer, "--json", "show", folded, check=True))
    assert (data["deleted_in"], data["folded_into"], data["learning"]) == (merge, kept, "Retries: 5")


@pytest.mark.parametrize("told", default_first(["git", "forge"]))
def test_get_of_a_memory_folded_on_a_branch_squash_merged_names_the_squash(
        tmp_path: Path, invoke_cli: CliRunner, told: str) -> None:
    # The agent's 'merge origin/main' folded its 1 into main's 101 on agent-y, and the reviewer
    # squash-merged agent-y: 'get 1' on main said only "No memory with id '1'".
    (agent, a, reviewer), folded, kept = agent_then_main_team(tmp_path, 3, APART)
    git(agent, "fetch", "-q")
    invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q")
    git(reviewer, "merge", "-q", "--squash", "origin/agent-y")
    if told == "git":  # git's message: each commit squashed, its message indented
        git(reviewer, "commit", "-q", "--no-edit")
    else:  # a forge's: the pull request's title, then each commit's subject after "* "
        subjects = git(reviewer, "log", "--format=* %s", "HEAD..origin/agent-y")
        git(reviewer, "commit", "-q", "-m", "Agent y's work (#7)", "-m", subjects)
    squash = git(reviewer, "rev-parse", "HEAD").strip()
    said = (f"Error: No memory with id '{folded}'. It was merged into '{kept}' in commit {squash[:12]}, the memory kept "
            "under the same topic key; use that id.\n")
    # show, which names a fold as get does, said "No memory with id '1', now or in the history".
    assert [invoke_cli("--kb", reviewer, command, folded).stderr for command in ("get", "show")] == [said, said]


@pytest.mark.parametrize("on", default_first(["main", "agent-y"]))
def test_a_plain_git_merge_of_one_topic_key_is_folded_by_the_sync_that_pushes_it(
        tmp_path: Path, invoke_cli: CliRunner, on: str) -> None:
    # Nothing folded after 'git merge': sync refused, saying 'this branch gave it to memory 101'
    # of main's memory on agent-y, and advised re-keying or forgetting it.
    _bare, (agent, a, reviewer) = make_team(tmp_path, clones=3)
    git(agent, "switch", "-q", "-c", "agent-y")
    folded = saved_id(invoke_cli, agent, unlike("agent"), *TOPIC)
    git(agent, "push", "-q", "-u", "origin", "agent-y")
    kept = saved_id(invoke_cli, a, unlike("main"), *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    root, ref = (reviewer, "origin/agent-y") if on == "main" else (agent, "origin/main")
    git(root, "pull", "-q") if on == "main" else git(root, "fetch", "-q")
    git(root, "merge", "-q", "--no-edit", "-X", "ours", ref)  # the session file both sides started: this side's
    synced = invoke_cli("--kb", root, "sync", check=True)
    assert synced.stdout.endswith(f"\n  merged (same topic key): {folded} into {kept}\n")
    assert git(root, "log", "-1", "--format=%s") == f"memory: merge {folded} into {kept} (topic decision/retry-budget)\n"
    assert not (root / "memories" / f"{folded}.yaml").exists()
    assert json_of(invoke_cli("--kb", root, "--json", "get", kept, check=True))["learning"] in (unlike("main"), unlike("agent"))
    # Held on the remote (agent-y) before the fold: no move of this clone's, the commit says it.
    assert invoke_cli("--kb", root, "get", folded).stderr.startswith(
        f"Error: No memory with id '{folded}'. It was merged into '{kept}' in commit ")


def test_a_plain_git_merge_of_main_over_an_unpushed_save_of_the_key_is_folded_by_sync(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Both saves were on top of origin/agent-y, each skipped as the other's holder: sync refused,
    # "topic_key 'decision/retry-budget' in project 'api' is held by 2 memories (1, 101)".
    _bare, (agent, a) = make_team(tmp_path, clones=2)
    git(agent, "switch", "-q", "-c", "agent-y")
    git(agent, "push", "-q", "-u", "origin", "agent-y")
    folded = saved_id(invoke_cli, agent, unlike("agent"), *TOPIC)
    kept = saved_id(invoke_cli, a, unlike("main"), *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(agent, "fetch", "-q")
    git(agent, "merge", "-q", "--no-edit", "-X", "ours", "origin/main")
    synced = invoke_cli("--kb", agent, "sync", check=True)
    assert synced.stdout.endswith(f"\n  merged (same topic key): {folded} into {kept}\n"), synced.stdout
    assert git(agent, "log", "-1", "--format=%s", "origin/agent-y") == (
        f"memory: merge {folded} into {kept} (topic decision/retry-budget)\n")
    assert sorted(p.name for p in (agent / "memories").iterdir()) == [f"{kept}.yaml"]


def test_a_sync_merging_its_upstream_reads_an_edit_through_its_own_fold(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # b folded agent-y's 1 into main's 101 by 'slayer-kb merge origin/main' on agent-y; c edited
    # 1 on agent-y meanwhile and synced. b's sync merges (its branch holds a merge): it stopped
    # on c's edit against b's forget, the steps keeping the key twice.
    (a, b, c), folded, kept = main_then_agent_team(tmp_path)
    git(b, "fetch", "-q")
    merged = invoke_cli("--kb", b, "merge", "origin/main", check=True)
    assert merged.stdout.endswith(f"  merged (same topic key): {folded} into {kept}\n")
    invoke_cli("--kb", c, "update", folded, "--learning", unlike("outage"), check=True)
    invoke_cli("--kb", c, "sync", check=True)
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert synced.stdout.endswith(f"\n  kept {kept}: origin/agent-y edited {folded}, which this branch had merged into "
                                  f"{kept}: the edit went to {kept}\n"), synced.stdout
    assert json_of(invoke_cli("--kb", b, "--json", "get", kept, check=True))["learning"] == unlike("outage")
    assert not (b / "memories" / f"{folded}.yaml").exists()


def test_a_sync_merging_its_upstream_stops_on_two_edits_through_its_fold_naming_the_fold(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # b folded agent-y's 1 into main's 101 and edited 101; c edited 1 on agent-y. b's sync (a
    # merge) stopped saying only "both edited memories/101.yaml", a file agent-y never held.
    (a, b, c), folded, kept = main_then_agent_team(tmp_path)
    git(b, "fetch", "-q")
    invoke_cli("--kb", b, "merge", "origin/main", check=True)
    invoke_cli("--kb", b, "update", kept, "--learning", unlike("reviewed"), check=True)
    invoke_cli("--kb", c, "update", folded, "--learning", unlike("outage"), check=True)
    invoke_cli("--kb", c, "sync", check=True)
    head = git(b, "rev-parse", "HEAD")
    stopped = invoke_cli("--kb", b, "sync")
    assert stopped.stderr.endswith(
        f"; slayer-kb validate; git commit --no-edit; slayer-kb sync. origin/agent-y edited {folded}, which this branch "
        f"had merged into {kept}: its edit is held at memories/{kept}.yaml as an edit of {kept}.\n"), stopped.stderr
    assert (git(b, "rev-parse", "HEAD"), git(b, "status", "--short")) == (head, "")


def test_two_edits_of_one_line_through_a_fold_stop_naming_the_fold(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # One save made alike on both sides, folded on main; both edit its text since. The stop said
    # only of the kept memory that agent-y 'edited' it, which agent-y never held.
    _bare, (a, agent, reviewer) = make_team(tmp_path, clones=3)
    same = (unlike("same"), "--title", "Same obs")
    kept = saved_id(invoke_cli, a, *same)
    invoke_cli("--kb", a, "sync", check=True)
    git(agent, "switch", "-q", "-c", "agent-y")
    folded = saved_id(invoke_cli, agent, *same)
    git(agent, "push", "-q", "-u", "origin", "agent-y")
    git(reviewer, "pull", "-q")
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout.endswith(f"  merged (same save): {folded} into {kept}\n")
    invoke_cli("--kb", reviewer, "update", kept, "--learning", unlike("main"), check=True)
    invoke_cli("--kb", agent, "update", folded, "--learning", unlike("agent"), check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q")
    stopped = invoke_cli("--kb", reviewer, "merge", "origin/agent-y")
    assert stopped.stderr.endswith(
        f"; slayer-kb validate; git commit --no-edit; slayer-kb sync. origin/agent-y edited {folded}, which this branch "
        f"had merged into {kept}: its edit is held at memories/{kept}.yaml as an edit of {kept}.\n")
    assert git(reviewer, "status", "--short") == f"UU memories/{kept}.yaml\n"


@pytest.mark.parametrize("texts", default_first([pytest.param(ALIKE, id="paired"), pytest.param(APART, id="apart")]))
def test_the_agent_taking_main_in_after_forgetting_its_folded_copy_keeps_mains_memory(
        tmp_path: Path, invoke_cli: CliRunner, texts: tuple[str, str]) -> None:
    # The other way round: agent-y forgot 1, which main had merged into 101, then took main in.
    # The merge stopped on 'This branch forgot memories/101.yaml', a file agent-y never held,
    # and its first step, 'git rm', dropped main's memory on agent-y, and then on main.
    (agent, a, reviewer), folded, kept = folded_team(tmp_path, 3, texts)
    invoke_cli("--kb", agent, "forget", folded, check=True)
    git(agent, "fetch", "-q")
    merged = invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    assert merged.stdout == (
        "Merged origin/main; run slayer-kb sync to push.\n"
        f"  kept {kept}: this branch forgot {folded}, which origin/main had merged into {kept}; to forget {kept} "
        f"too: slayer-kb forget {kept}\n")
    assert sorted(p.name for p in (agent / "memories").iterdir()) == [f"{kept}.yaml"]
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q")
    invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert (reviewer / "memories" / f"{kept}.yaml").is_file()


@pytest.mark.parametrize("change", ["update", "forget"])
def test_a_sync_rebasing_a_change_onto_a_fold_of_the_memory_reads_it_through_the_fold(
        tmp_path: Path, invoke_cli: CliRunner, change: str) -> None:
    # c edited (or forgot) agent-y's memory, which b then folded into main's by 'slayer-kb merge
    # origin/main' and synced: c's sync dropped the edit, saying the memory was 'forgotten on
    # origin', and said nothing of the forget, which left main's memory in place.
    (a, b, c), folded, kept = main_then_agent_team(tmp_path)
    invoke_cli("--kb", c, change, folded, *(["--learning", unlike("outage")] if change == "update" else []), check=True)
    git(b, "fetch", "-q")
    invoke_cli("--kb", b, "merge", "origin/main", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    synced = invoke_cli("--kb", c, "sync", check=True)
    said = ("edited {0}, which origin/agent-y had merged into {1}: the edit went to {1}" if change == "update" else
            "forgot {0}, which origin/agent-y had merged into {1}; to forget {1} too: slayer-kb forget {1}")
    assert synced.stdout == (f"Synced agent-y with origin: rebased, 3 pulled, {1 if change == 'update' else 0} pushed.\n"
                             f"  kept {kept}: this branch {said.format(folded, kept)}\n")
    if change == "update":
        assert git(c, "log", "-1", "--format=%s") == (
            f"memory: carry the edit of {folded} to {kept}, which origin/agent-y merged it into\n")
    learning = unlike("outage") if change == "update" else json_of(
        invoke_cli("--kb", b, "--json", "get", kept, check=True))["learning"]
    assert json_of(invoke_cli("--kb", c, "--json", "get", kept, check=True))["learning"] == learning
    assert sorted(p.name for p in (c / "memories").iterdir()) == [f"{kept}.yaml"]
