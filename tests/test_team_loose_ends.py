"""A team on one remote, the flows' loose ends: clones of one bare remote, every ``slayer-kb``
command run in this process as typed in the clone (``in_the_kb``), git as git, and the fix a
message names followed as written."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from testing import (
    CliRunner,
    default_first,
    git,
    in_process_runner,
    in_the_kb,
    make_team,
    make_team_after,
    next_second,
    typed_steps,
    unlike,
)


@pytest.fixture
def typed() -> CliRunner:
    return in_the_kb(in_process_runner())


def _saved_as_1_on_both(kbs: list[Path]) -> None:
    """Clones counting ids on their own (as before leases): a saves 1 and syncs; b saves its own 1,
    links it from a second memory, and fetches."""
    a, b = kbs
    typed = in_the_kb(in_process_runner())
    for root in (a, b):
        git(root, "config", "slayer-kb.ids", "sequential")
    typed("--kb", a, "save", unlike("main"), "-e", "shop.orders.amount", check=True)
    typed("--kb", a, "sync", check=True)
    # Saved in another second: one created_at on both sides is one memory (a save's commit rewritten).
    time.sleep(1.01 - time.time() % 1)
    typed("--kb", b, "save", unlike("mine"), "-e", "shop.refunds.amount", check=True)
    typed("--kb", b, "save", unlike("link"), "-e", "memory:1", check=True)
    git(b, "fetch", "-q", "origin")


def _one_id_on_both(tmp_path: Path) -> tuple[Path, Path]:
    """Clones a and b after ``_saved_as_1_on_both``, made once a process and copied
    (``make_team_after``)."""
    _bare, (a, b) = make_team_after(tmp_path, "saved-as-1-on-both", _saved_as_1_on_both)
    return a, b


@pytest.mark.parametrize("command", default_first(["merge", "rebase"]))
def test_a_merge_or_rebase_meeting_one_auto_id_saved_on_both_names_renumber(
        tmp_path: Path, typed: CliRunner, command: str) -> None:
    # Before: both stopped on "both created memories/1.yaml" with steps that merge two memories
    # into one file, or keep b's as 1-2.yaml, which no memory:1 link follows.
    _a, b = _one_id_on_both(tmp_path)
    head = git(b, "rev-parse", "HEAD")
    refused = typed("--kb", b, command, "origin/main")
    fix = {"merge": ("renumber --onto origin/main", "(the memory:1 links to it rewritten, in one commit)",
                     "This branch", "merge", "merged"),
           "rebase": ("renumber --rewrite --onto origin/main",
                      "as if saved under it (the memory:1 links to it rewritten in your commits)",
                      "Your commits", "rebase", "rebased")}[command]
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: {fix[2]} and origin/main each saved a new memory as 1 (ids counted on each clone): two memories "
        f"under one id, which the {fix[3]} would take for one file both created. Nothing was {fix[4]}. Run "
        f"'slayer-kb {fix[0]}' to give this branch's memory a fresh id {fix[1]}, then 'slayer-kb {command} "
        "origin/main' again.\n"))
    assert (git(b, "rev-parse", "HEAD"), git(b, "status", "--porcelain")) == (head, "")
    # The fix as written keeps both memories, the link on b's.
    assert typed("--kb", b, *fix[0].split(), check=True).stdout == (
        "Renumbered 1 memory onto origin/main:\n  1 -> 3\n" + ("  references rewritten in: 2\n" if command == "merge" else ""))
    typed("--kb", b, command, "origin/main", check=True)
    typed("--kb", b, "sync", check=True)
    held = {i: yaml.safe_load(git(b, "show", f"origin/main:memories/{i}.yaml")) for i in "123"}
    assert [held[i]["learning"] for i in "123"] == [unlike("main"), unlike("link"), unlike("mine")]
    assert held["2"]["entities"] == ["memory:3"]


def test_a_merge_of_two_edits_of_one_memory_added_on_both_keeps_its_steps(tmp_path: Path, typed: CliRunner) -> None:
    # One memory (one created_at) whose save each side committed on its own, then edited: two
    # edits, no clash; the stop keeps its steps.
    _a, b = _one_id_on_both(tmp_path)
    git(b, "reset", "-q", "--hard", "origin/main~1")
    path = b / "memories" / "1.yaml"
    main = git(b, "show", "origin/main:memories/1.yaml")
    path.parent.mkdir(exist_ok=True)
    path.write_text(main.replace("main0word", "edited0word"))
    git(b, "add", "memories/1.yaml")
    git(b, "commit", "-qm", "memory: save 1 (by hand)")
    stopped = typed("--kb", b, "merge", "origin/main")
    assert stopped.returncode == 1
    assert stopped.stderr.startswith("Error: This branch and origin/main both created memories/1.yaml; the merge "
                                     "stopped")
    assert "renumber" not in stopped.stderr


def test_validate_in_a_rebase_stopped_on_two_renames_names_the_step_that_works(tmp_path: Path, typed: CliRunner) -> None:
    # Before: "'memory:kb.b' refers to a memory that does not exist (run 'slayer-kb prune' to
    # strip it)", and prune refuses while the rebase is in progress.
    _bare, (a, b) = make_team(tmp_path)
    typed("--kb", a, "save", unlike("revenue"), "-e", "shop.orders.amount", check=True)
    typed("--kb", a, "save", unlike("links"), "--id", "kb.l", "-e", "memory:1", check=True)
    typed("--kb", a, "sync", check=True)
    typed("--kb", b, "sync", check=True)
    typed("--kb", a, "rename", "1", "kb.a", check=True)
    typed("--kb", a, "sync", check=True)
    typed("--kb", b, "rename", "1", "kb.b", check=True)
    git(b, "fetch", "-q", "origin")
    assert typed("--kb", b, "rebase", "origin/main").returncode == 1
    # Keep origin/main's id by hand, the links to kb.b left for the rebase's end.
    git(b, "rm", "-q", "memories/kb.b.yaml", "memories/1.yaml")
    git(b, "add", "memories/kb.a.yaml")
    link = b / "memories" / "kb.l.yaml"
    link.write_text(link.read_text().replace("- memory:kb.b\n", "- memory:kb.b\n- memory:ghost\n"))
    checked = typed("--kb", b, "validate")
    assert (checked.returncode, checked.stdout) == (1, (
        "memories/kb.l.yaml:4: 'memory:kb.b' refers to kb.b, which the rebase in progress moves to kb.a: leave it; "
        "'slayer-kb rebase --continue' points it at kb.a\n"
        "memories/kb.l.yaml:5: 'memory:ghost' refers to a memory that does not exist (once the rebase is concluded "
        "('slayer-kb rebase --continue' when its conflicts are resolved, or 'slayer-kb rebase --abort'), run "
        "'slayer-kb prune' to strip it)\n"
        "2 problems in 1 file (2 files checked)\n"))
    link.write_text(link.read_text().replace("- memory:ghost\n", ""))
    git(b, "add", "memories/kb.l.yaml")
    # The step named works: the rebase's end points the link at kb.a.
    continued = typed("--kb", b, "rebase", "--continue", check=True)
    assert "rewrote links to renamed memories: memory:kb.b -> memory:kb.a in kb.l" in continued.stdout
    assert typed("--kb", b, "validate").returncode == 0
    assert yaml.safe_load(link.read_text())["entities"] == ["memory:kb.a"]


@pytest.mark.parametrize("soft", default_first([False, True]))
def test_validate_against_main_says_main_forgot_a_memory_the_branch_edited(
        tmp_path: Path, typed: CliRunner, soft: bool) -> None:
    # Before: "origin/main wrote this memory too since this branch parted from it ...", whose fix
    # spoke of topic keys and fields: no word of the forget, nor of the two ways out.
    _bare, (a, b) = make_team(tmp_path)
    typed("--kb", a, "save", unlike("kept"), "-e", "shop.orders.amount", check=True)
    typed("--kb", a, "sync", check=True)
    typed("--kb", b, "sync", check=True)
    git(b, "switch", "-q", "-c", "agent-b")
    typed("--kb", b, "update", "1", "--content", unlike("edited"), check=True)
    typed("--kb", a, "forget", *(["--soft"] if soft else []), "1", check=True)
    typed("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    checked = typed("--kb", b, "validate", "--against", "origin/main")
    assert (checked.returncode, checked.stdout) == (1, (
        f"memories/1.yaml:1: origin/main forgot this memory{' (forget --soft)' if soft else ''} since this branch "
        "parted from it, and this branch edited it: a plain git merge of this branch stops on the forget against the "
        "edit. Run 'git fetch origin && slayer-kb merge origin/main': it stops there with the steps for either way "
        "out, keeping this branch's edit or letting the memory go as origin/main did\n"
        "1 problem in 1 file (1 file checked)\n"))
    # The merge it names stops on that forget, with both ways out.
    stopped = typed("--kb", b, "merge", "origin/main")
    assert stopped.returncode == 1
    assert stopped.stderr.startswith(f"Error: origin/main forgot memories/1.yaml{' (forget --soft)' if soft else ''}, "
                                     "which this branch edited; the merge stopped")
    assert "to keep your edit (or git " in stopped.stderr


@pytest.mark.parametrize("linked", default_first([False, True]))
def test_validate_against_main_says_main_forgot_a_memory_the_branch_renamed(
        tmp_path: Path, typed: CliRunner, linked: bool) -> None:
    # Before: "no problems" (with a link to it both sides rewrote, a KeyError; review said nothing),
    # while sync stopped on "origin/main forgot memories/N.yaml, which your commits renamed to kb.y".
    _bare, (a, b) = make_team(tmp_path)
    old = typed("--kb", a, "save", unlike("gone"), "-e", "shop.orders.amount", check=True).stdout.split()[2]
    if linked:
        typed("--kb", a, "save", unlike("linksgone"), "--id", "kb.l", "-e", f"memory:{old}", check=True)
    typed("--kb", a, "sync", check=True)
    typed("--kb", b, "sync", check=True)
    git(b, "switch", "-q", "-c", "agent-b")
    typed("--kb", b, "rename", old, "kb.y", check=True)
    typed("--kb", a, "forget", old, check=True)
    typed("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    checked = typed("--kb", b, "validate", "--against", "origin/main")
    renamed = (f"memories/kb.y.yaml:1: origin/main forgot memories/{old}.yaml since this branch parted from it, "
               "which this branch renamed to kb.y: a plain git merge of this branch stops on the forget against the "
               "rename. Run 'git fetch origin && slayer-kb merge origin/main': it stops there with the steps for "
               "either way out, keeping the memory renamed or letting it go as origin/main did\n")
    assert checked.returncode == 1
    if linked:  # both sides rewrote kb.l's link: a stop of its own, after the rename's
        assert checked.stdout.startswith("memories/kb.l.yaml:1: origin/main wrote this memory too")
        assert checked.stdout.endswith(renamed + "2 problems in 2 files (2 files checked)\n")
    else:
        assert checked.stdout == renamed + "1 problem in 1 file (1 file checked)\n"
    # review names it as validate does.
    assert f"### Problems\n\n- {renamed}" in typed("--kb", b, "review", "origin/main", "HEAD").stdout
    # The merge it names stops on that forget, with both ways out.
    stopped = typed("--kb", b, "merge", "origin/main")
    assert stopped.returncode == 1
    assert stopped.stderr.startswith(f"Error: origin/main forgot memories/{old}.yaml, which this branch renamed to "
                                     "kb.y; the merge stopped")
    assert "git add memories/kb.y.yaml to keep it, renamed (or git rm memories/kb.y.yaml to let it go" in stopped.stderr


def _refused_then_kept_apart(invoke_cli: CliRunner, typed: CliRunner, clones: tuple[Path, Path], command: str,
                             head: str, sides: str, replayed: str, others: dict[str, str]) -> None:
    """b's ``command`` refused (``sides``: what each side gave kb.x), nothing written; its steps
    as typed keep both memories, b's as kb.x-2, each link on its own memory (the first of
    ``others``: a's link to kb.x, the second b's), with the others (id -> learning) on both clones."""
    a, b = clones
    refused = invoke_cli("--kb", b, command, *([] if command == "sync" else ["origin/main"]))
    who, undone = {"sync": ("Sync", "pushed"), "merge": ("The merge", "merged"), "rebase": ("The rebase", "rebased")}[command]
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: Your commits {sides}: two memories given one new id, and a link to kb.x means a different one on each "
        f"side. {who} keeps origin/main's kb.x and will not give it yours, so nothing was {undone} and the repository "
        f"is back as it was: give yours another id, and merge. To merge by hand: cd {b}; slayer-kb rename kb.x kb.x-2 "
        "(or another id: it rewrites your links to it); " + ("git fetch origin; " if command == "sync" else "")
        + f"slayer-kb merge origin/main (a rebase would replay your {replayed} onto origin/main's kb.x again); "
        "slayer-kb sync.\n"))
    assert (git(b, "rev-parse", "HEAD"), git(b, "status", "--porcelain")) == (head, "")
    said = typed_steps(invoke_cli, refused.stderr)
    assert said[-1].startswith("Synced main with origin: pushed")
    typed("--kb", a, "sync", check=True)
    theirs, mine = list(others)[:2]
    for clone in (a, b):
        held = {p.stem: yaml.safe_load(p.read_text()) for p in (clone / "memories").glob("kb.*.yaml")}
        assert {i: m["learning"] for i, m in held.items()} == {"kb.x": unlike("three"), "kb.x-2": unlike("four"), **others}
        assert (held[theirs]["entities"], held[mine]["entities"]) == (["memory:kb.x"], ["memory:kb.x-2"])
        assert typed("--kb", clone, "validate").returncode == 0


@pytest.mark.parametrize("command", default_first(["sync", "merge", "rebase"]))
def test_two_clones_renaming_two_memories_to_one_id_keep_each_link_on_its_memory(
        tmp_path: Path, invoke_cli: CliRunner, typed: CliRunner, command: str) -> None:
    # Before: sync stopped on "both created memories/kb.x.yaml", and its keep-both steps moved b's
    # memory to kb.x-2 while b's rename commit still said 'Renamed: 2 -> kb.x' and b's link
    # still said memory:kb.x: it ended on a's memory.
    _bare, (a, b) = make_team(tmp_path)
    for n, tag in ((1, "three"), (2, "four")):
        typed("--kb", a, "save", unlike(tag), "-e", "shop.orders.amount", check=True)
        typed("--kb", a, "save", unlike(f"links{tag}"), "--id", f"kb.l{n}", "-e", f"memory:{n}", check=True)
    typed("--kb", a, "sync", check=True)
    typed("--kb", b, "sync", check=True)
    typed("--kb", a, "rename", "1", "kb.x", check=True)
    typed("--kb", a, "sync", check=True)
    typed("--kb", b, "rename", "2", "kb.x", check=True)
    head = git(b, "rev-parse", "HEAD")
    if command != "sync":
        git(b, "fetch", "-q", "origin")
    _refused_then_kept_apart(invoke_cli, typed, (a, b), command, head, "renamed 2 to kb.x, and origin/main renamed 1 to kb.x",
                             "rename", {"kb.l1": unlike("linksthree"), "kb.l2": unlike("linksfour")})



def _created(root: Path, memory_id: str) -> str:
    return str(yaml.safe_load((root / "memories" / f"{memory_id}.yaml").read_text())["created_at"])


@pytest.mark.parametrize("command", default_first(["sync", "merge", "rebase"]))
def test_two_clones_saving_one_named_id_keep_each_link_on_its_memory(
        tmp_path: Path, invoke_cli: CliRunner, typed: CliRunner, command: str) -> None:
    # Before: git stopped on "both created memories/kb.x.yaml", and its keep-both steps moved b's
    # memory to kb.x-2 while b's link still said memory:kb.x: it ended on a's memory.
    _bare, (a, b) = make_team(tmp_path)
    typed("--kb", a, "save", unlike("three"), "--id", "kb.x", "-e", "shop.orders.amount", check=True)
    typed("--kb", a, "save", unlike("linksthree"), "--id", "kb.la", "-e", "memory:kb.x", check=True)
    typed("--kb", a, "save", unlike("keyed"), "--id", "kb.t", "--topic-key", "shop/cents", "-e", "shop.orders.amount",
          check=True)
    typed("--kb", a, "save", unlike("picked"), "--id", "kb.y", "-e", "shop.orders.amount", check=True)
    typed("--kb", a, "sync", check=True)
    time.sleep(1.01 - time.time() % 1)  # another second: another created_at
    typed("--kb", b, "save", unlike("four"), "--id", "kb.x", "-e", "shop.refunds.amount", check=True)
    typed("--kb", b, "save", unlike("linksfour"), "--id", "kb.lb", "-e", "memory:kb.x", check=True)
    # One topic key is one memory, whatever its created_at: the merge driver folds the two saves.
    typed("--kb", b, "save", unlike("keyedagain"), "--id", "kb.t", "--topic-key", "shop/cents", "-e", "shop.orders.amount",
          check=True)
    # One memory both sides saved (a's commit cherry-picked, then edited: one created_at) is no clash.
    git(b, "fetch", "-q", "origin")
    git(b, "cherry-pick", git(a, "rev-parse", "HEAD").strip())
    typed("--kb", b, "update", "kb.y", "--content", unlike("pickedagain"), check=True)
    head = git(b, "rev-parse", "HEAD")
    _refused_then_kept_apart(invoke_cli, typed, (a, b), command, head,
                             f"saved a new memory as kb.x (created {_created(b, 'kb.x')}), and origin/main saved a new "
                             f"memory as kb.x (created {_created(a, 'kb.x')})", "save",
                             {"kb.la": unlike("linksthree"), "kb.lb": unlike("linksfour"), "kb.y": unlike("pickedagain"),
                              "kb.t": unlike("keyedagain")})


def test_a_rename_onto_an_id_the_upstream_saved_keeps_each_link_on_its_memory(
        tmp_path: Path, invoke_cli: CliRunner, typed: CliRunner) -> None:
    # Before: git stopped on "both created memories/kb.x.yaml", as for two saves of one id.
    _bare, (a, b) = make_team(tmp_path)
    saved = typed("--kb", a, "save", unlike("old"), "-e", "shop.orders.amount", check=True)
    old = saved.stdout.split()[2]
    typed("--kb", a, "sync", check=True)
    typed("--kb", b, "sync", check=True)
    typed("--kb", b, "save", unlike("linksold"), "--id", "kb.lb", "-e", f"memory:{old}", check=True)
    time.sleep(1.01 - time.time() % 1)  # another second: another created_at
    typed("--kb", a, "save", unlike("new"), "--id", "kb.x", "-e", "shop.refunds.amount", check=True)
    typed("--kb", a, "sync", check=True)
    typed("--kb", b, "rename", old, "kb.x", check=True)
    refused = invoke_cli("--kb", b, "sync")
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: Your commits renamed {old} to kb.x, and origin/main saved a new memory as kb.x (created "
        f"{_created(a, 'kb.x')}): two memories given one new id, and a link to kb.x means a different one on each "
        "side. Sync keeps origin/main's kb.x and will not give it yours, so nothing was pushed and the repository is "
        f"back as it was: give yours another id, and merge. To merge by hand: cd {b}; slayer-kb rename kb.x kb.x-2 "
        "(or another id: it rewrites your links to it); git fetch origin; slayer-kb merge origin/main (a rebase "
        "would replay your rename onto origin/main's kb.x again); slayer-kb sync.\n"))
    assert typed_steps(invoke_cli, refused.stderr)[-1].startswith("Synced main with origin: pushed")
    held = {p.stem: yaml.safe_load(p.read_text()) for p in (b / "memories").glob("kb.*.yaml")}
    assert {i: m["learning"] for i, m in held.items()} == {
        "kb.x": unlike("new"), "kb.x-2": unlike("old"), "kb.lb": unlike("linksold")}
    assert held["kb.lb"]["entities"] == ["memory:kb.x-2"]
    assert typed("--kb", b, "validate").returncode == 0


def test_a_merge_into_a_pushed_branch_names_the_renumbering_of_the_branch_merged(tmp_path: Path,
                                                                                  typed: CliRunner) -> None:
    # Before: main, whose 1 is pushed, was told to renumber itself: the team's id 1 would move.
    _bare, (b, a) = make_team(tmp_path)
    git(a, "config", "slayer-kb.ids", "sequential")
    parted = git(a, "rev-parse", "HEAD").strip()
    typed("--kb", b, "save", unlike("main"), "-e", "shop.orders.amount", check=True)
    typed("--kb", b, "sync", check=True)
    git(a, "pull", "-q", "--ff-only")  # main as the team has it, 1 and all; an agent's branch from before
    git(a, "switch", "-q", "-c", "agent", parted)
    time.sleep(1.01 - time.time() % 1)  # another second: another created_at
    typed("--kb", a, "save", unlike("agent"), "-e", "shop.refunds.amount", check=True)
    git(a, "switch", "-q", "main")
    head = git(a, "rev-parse", "HEAD")
    refused = typed("--kb", a, "merge", "agent")
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: This branch and agent each saved a new memory as 1 (ids counted on each clone): two memories under "
        "one id, which the merge would take for one file both created. Nothing was merged. This branch's memory is "
        "on main's upstream already, where others may hold its id: give agent's the fresh id instead, on the "
        "branch agent is ('slayer-kb renumber --onto main' there), then 'slayer-kb merge agent' again.\n"))
    assert git(a, "rev-parse", "HEAD") == head
    # The fix as written: agent's memory moves, main's stays 1.
    git(a, "switch", "-q", "agent")
    typed("--kb", a, "renumber", "--onto", "main", check=True)
    git(a, "switch", "-q", "main")
    typed("--kb", a, "merge", "agent", check=True)
    assert unlike("main") in (a / "memories" / "1.yaml").read_text()


def test_a_pushed_agent_branch_merging_main_renumbers_its_own_memory_not_mains(tmp_path: Path,
                                                                              typed: CliRunner) -> None:
    # Before: agent-b, pushed, was told to renumber main's 1 ('renumber --onto agent-b' on main):
    # done, a's id 1 named b's memory once PR b landed, and b was told its memory was a's.
    _bare, (a, b, reviewer) = make_team(tmp_path, clones=3)
    for agent, name in ((a, "agent-a"), (b, "agent-b")):
        git(agent, "config", "slayer-kb.ids", "sequential")
        git(agent, "switch", "-q", "-c", name)
        next_second()  # another second: another created_at
        typed("--kb", agent, "save", unlike(name), "-e", "shop.orders.amount", check=True)
        typed("--kb", agent, "sync", check=True)

    def merge_pr(branch: str) -> None:
        git(reviewer, "pull", "-q")
        git(reviewer, "merge", "-q", "--no-ff", f"origin/{branch}", "-m", f"Merge {branch}")
        git(reviewer, "push", "-q")
    merge_pr("agent-a")
    # The other way round, main merging the agent's branch: main's memory stays, as before.
    git(reviewer, "fetch", "-q")
    other = typed("--kb", reviewer, "merge", "origin/agent-b")
    assert other.stderr.endswith(
        "This branch's memory is on main's upstream already, where others may hold its id: give origin/agent-b's the "
        "fresh id instead, on the branch origin/agent-b is ('slayer-kb renumber --onto main' there), then 'slayer-kb "
        "merge origin/agent-b' again.\n")
    git(b, "fetch", "-q")
    refused = typed("--kb", b, "merge", "origin/main")
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: This branch and origin/main each saved a new memory as 1 (ids counted on each clone): two memories "
        "under one id, which the merge would take for one file both created. Nothing was merged. origin/main's is on "
        "the remote's default branch, where the team holds its id; this branch's only on agent-b's upstream. Run "
        "'slayer-kb renumber --onto origin/main' to give this branch's memory a fresh id (the memory:1 links to it "
        "rewritten, in one commit), then 'slayer-kb merge origin/main' again.\n"))
    # The fix as written, then the push and PR b.
    renumbered = typed("--kb", b, "renumber", "--onto", "origin/main", check=True)
    assert renumbered.stdout == "Renumbered 1 memory onto origin/main:\n  1 -> 2\n"
    typed("--kb", b, "merge", "origin/main", check=True)
    typed("--kb", b, "sync", check=True)
    merge_pr("agent-b")
    git(a, "switch", "-q", "main")
    typed("--kb", a, "sync", check=True)
    typed("--kb", b, "sync", check=True)
    learned = {(agent, i): typed("--kb", agent, "--json", "get", i).stdout for agent in (a, b) for i in ("1", "2")}
    assert [unlike(n) in learned[(a, "1")] for n in ("agent-a", "agent-b")] == [True, False]
    assert [unlike(n) in learned[(b, "2")] for n in ("agent-a", "agent-b")] == [False, True]
    moved = typed("--kb", b, "get", "1")
    assert moved.stderr == (
        "Error: Memory id '1' moved: 'slayer-kb renumber' gave this clone's memory 1 the id 2, because the branch it "
        "was renumbered onto had already used 1 for another memory; '1' now names another memory: "
        f"\"{unlike('agent-a')[:60]}...\". Use 2 for the memory saved here; to mean what '1' names now, run "
        "'slayer-kb renumber --accept 1' first.\n")


def test_get_of_an_id_renamed_away_that_a_merge_gave_back_says_so(tmp_path: Path, typed: CliRunner) -> None:
    # Before: once a merge brought another memory under kb.x, renamed away on main, 'get kb.x'
    # showed it without a word (git's simplified history of the file no longer shows the rename).
    _bare, (a, b) = make_team(tmp_path)
    parted = git(b, "rev-parse", "HEAD").strip()
    typed("--kb", a, "save", unlike("main"), "-e", "shop.orders.amount", "--id", "kb.x", check=True)
    typed("--kb", a, "sync", check=True)
    # Read once here: the renamed ids kept for this HEAD, the rename and the merge read since alone.
    assert typed("--kb", a, "get", "kb.x", check=True).stderr == ""
    git(b, "switch", "-q", "-c", "agent", parted)
    typed("--kb", b, "save", unlike("agent"), "-e", "shop.refunds.amount", "--id", "kb.x", check=True)
    typed("--kb", b, "sync", check=True)
    typed("--kb", a, "rename", "kb.x", "kb.y", check=True)
    renamed = git(a, "rev-parse", "HEAD").strip()
    git(a, "fetch", "-q")
    git(a, "merge", "-q", "--no-ff", "origin/agent", "-m", "Merge agent")  # a reviewer's plain merge
    got = typed("--kb", a, "get", "kb.x", check=True)
    assert unlike("agent") in got.stdout
    assert got.stderr == (
        f"warning: memory id 'kb.x' was renamed to 'kb.y' in commit {renamed[:12]}; a merge brought in another "
        "memory under 'kb.x' from commits made without that rename, shown here. The memory 'kb.x' named before is "
        "'kb.y' now: use that id for it.\n")
    renamed_one = typed("--kb", a, "get", "kb.y", check=True)
    assert (unlike("main") in renamed_one.stdout, renamed_one.stderr) == (True, "")
    # Given again knowingly (after a rename, --reuse-id): no word.
    typed("--kb", a, "rename", "kb.x", "kb.z", check=True)
    typed("--kb", a, "save", unlike("again"), "-e", "shop.orders.amount", "--id", "kb.x", "--reuse-id", check=True)
    again = typed("--kb", a, "get", "kb.x", check=True)
    assert (unlike("again") in again.stdout, again.stderr) == (True, "")
