"""A ``rename`` meeting another clone's work: clones of one bare remote, every ``slayer-kb``
command run in this process (``invoke_cli``), git as git. The rename commit records its move
(``Renamed: OLD -> NEW``), and sync points the other side's new links at the new id."""

from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

import pytest

from testing import (
    CliRunner,
    default_first,
    git,
    in_process_runner,
    make_team,
    make_team_after,
    traced_git,
    typed_steps,
    unlike,
)


def _revenue_on_both(kbs: list[Path]) -> None:
    a, b = kbs
    run = in_process_runner()
    run("--kb", a, "save", "Revenue is paid orders", "-e", "shop.orders.amount", check=True)
    run("--kb", a, "sync", check=True)
    run("--kb", b, "sync", check=True)


def _held_by_both(tmp_path: Path) -> tuple[Path, Path]:
    """Memory 1, saved on clone a and synced to b: where most of these tests start. Made once a
    process and copied (``make_team_after``)."""
    _bare, (a, b) = make_team_after(tmp_path, "revenue-held-by-both", _revenue_on_both)
    return a, b


@pytest.mark.parametrize("renamer_first", default_first([True, False]))
def test_a_link_the_other_clone_added_to_a_renamed_memory_follows_the_rename(
        tmp_path: Path, invoke_cli: CliRunner, renamer_first: bool) -> None:
    a, b = _held_by_both(tmp_path)
    invoke_cli("--kb", a, "rename", "1", "kb.revenue", check=True)
    invoke_cli("--kb", b, "update", "1", "--content", "edited on b", check=True)
    invoke_cli("--kb", b, "save", "b links one", "--id", "kb.q", "-e", "memory:1", check=True)
    first, second = (a, b) if renamer_first else (b, a)
    invoke_cli("--kb", first, "sync", check=True)
    proc = invoke_cli("--kb", second, "sync", check=True)
    # Not "merged both sides of: memories/1.yaml": a rename only moved the file b edited.
    assert proc.stdout == (f"Synced main with origin: rebased, {'1 pulled, 3' if renamer_first else '2 pulled, 2'} pushed.\n"
                           "  rewrote links to renamed memories: memory:1 -> memory:kb.revenue in kb.q\n")
    assert git(second, "log", "-1", "--format=%s") == "memory: rewrite links to renamed 1 as kb.revenue in kb.q\n"
    for clone in (second, first):
        if clone == first:
            invoke_cli("--kb", first, "sync", check=True)
        memories = clone / "memories"
        assert not (memories / "1.yaml").exists()
        assert "learning: edited on b\n" in (memories / "kb.revenue.yaml").read_text()
        assert "entities:\n- memory:kb.revenue\n" in (memories / "kb.q.yaml").read_text()
        assert invoke_cli("--kb", clone, "validate", check=True).stdout.endswith("no problems.\n")


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
@pytest.mark.parametrize("renamer_first", default_first([True, False]))
def test_a_link_the_other_clone_made_to_an_id_renamed_then_reused_follows_the_rename(
        tmp_path: Path, invoke_cli: CliRunner, renamer_first: bool) -> None:
    """Clone a renames kb.r to kb.revenue and gives kb.r to kb.other on purpose (``--reuse-id``); clone
    b, which has not synced the renames, links kb.r and kb.other: its link to kb.r meant the revenue
    memory and follows that rename, its link to kb.other follows that one, once (to kb.r, never on
    to kb.revenue). a's own links to the new kb.r stay, the one in kb.s too, a memory b edited."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "--id", "kb.r", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "save", "Refunds are negative", "--id", "kb.other", "-e", "shop.orders.amount",
               check=True)
    invoke_cli("--kb", a, "save", "A shared note", "--id", "kb.s", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "rename", "kb.r", "kb.revenue", check=True)
    invoke_cli("--kb", a, "rename", "kb.other", "kb.r", "--reuse-id", check=True)
    invoke_cli("--kb", a, "save", "a links the new one", "--id", "kb.p", "-e", "memory:kb.r", check=True)
    invoke_cli("--kb", a, "save", "A shared note", "--id", "kb.s", "-e", "shop.orders.amount,memory:kb.r", check=True)
    invoke_cli("--kb", b, "save", "b links revenue", "--id", "kb.q", "-e", "memory:kb.r", check=True)
    invoke_cli("--kb", b, "save", "b links refunds", "--id", "kb.o", "-e", "memory:kb.other", check=True)
    invoke_cli("--kb", b, "update", "kb.s", "--description", "b's summary", check=True)
    first, second = (a, b) if renamer_first else (b, a)
    invoke_cli("--kb", first, "sync", check=True)
    proc = invoke_cli("--kb", second, "sync", check=True)
    assert ("rewrote links to renamed memories: memory:kb.other -> memory:kb.r in kb.o, memory:kb.r -> memory:kb.revenue "
            "in kb.q\n") in proc.stdout
    assert git(second, "log", "-1", "--format=%s") == (
        "memory: rewrite links to renamed kb.r as kb.revenue, kb.other as kb.r in kb.o, kb.q\n")
    invoke_cli("--kb", first, "sync", check=True)
    for clone in (a, b):
        memories = clone / "memories"
        assert "entities:\n- memory:kb.revenue\n" in (memories / "kb.q.yaml").read_text()
        assert "entities:\n- memory:kb.r\n" in (memories / "kb.o.yaml").read_text()
        assert "entities:\n- memory:kb.r\n" in (memories / "kb.p.yaml").read_text()
        shared = (memories / "kb.s.yaml").read_text()
        assert "description: b's summary\nentities:\n- shop.orders.amount\n- memory:kb.r\n" in shared
        assert "learning: Refunds are negative\n" in (memories / "kb.r.yaml").read_text()


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_rename_and_an_edit_against_an_edit_names_the_new_file_as_merged(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Both sides' changes of memory 1 joined in kb.revenue.yaml: that is the file merged, not
    memories/1.yaml, which the rename moved."""
    a, b = _held_by_both(tmp_path)
    invoke_cli("--kb", a, "rename", "1", "kb.revenue", check=True)
    invoke_cli("--kb", a, "update", "kb.revenue", "--description", "what revenue counts", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "update", "1", "--content", "edited on b", check=True)
    with traced_git(tmp_path) as runs:
        proc = invoke_cli("--kb", b, "sync", check=True)
    assert proc.stdout == ("Synced main with origin: rebased, 2 pulled, 1 pushed.\n"
                           "  merged both sides of: memories/kb.revenue.yaml\n")
    # Each side's renames read once for the replay's choice and the file named as merged: naming
    # it walked the upstream's rename commits and checked each trailer again.
    # One walk a side (the check for an id renamed and given again reads both), one for HEAD's once
    # rebased (the revalidation's); the trailer of each side's one rename commit checked once.
    walks = [run for run in runs("log") if "--grep=^Renamed: " in run]
    assert (len(walks), len(runs("diff-tree"))) == (3, 2)
    text = (b / "memories" / "kb.revenue.yaml").read_text()
    assert "learning: edited on b\n" in text and "description: what revenue counts\n" in text


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
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
    a, b = _held_by_both(tmp_path)
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


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_link_to_a_memory_renamed_then_forgotten_is_a_link_to_a_forgotten_one(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The move is followed only to a memory that is still there: renamed and then forgotten,
    the other clone's link is named and stripped as a link to a forgotten memory."""
    a, b = _held_by_both(tmp_path)
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


def _renamed_and_reused_upstream(tmp_path: Path, invoke_cli: CliRunner) -> tuple[Path, Path, str]:
    """Memory kb.r on both clones; clone a renames it to kb.revenue, gives kb.r to a new memory
    (``--reuse-id``) and syncs. The clones, and the commit clone b parted at (short). Made once
    a process and copied (``make_team_after``)."""

    def rename_and_reuse(kbs: list[Path]) -> None:
        a, b = kbs
        invoke_cli("--kb", a, "save", "Revenue is paid orders", "--id", "kb.r", "-e", "shop.orders.amount", check=True)
        invoke_cli("--kb", a, "sync", check=True)
        invoke_cli("--kb", b, "sync", check=True)
        invoke_cli("--kb", a, "rename", "kb.r", "kb.revenue", check=True)
        invoke_cli("--kb", a, "save", "Refunds are negative", "--id", "kb.r", "--reuse-id", "-e", "shop.orders.amount",
                   check=True)
        invoke_cli("--kb", a, "sync", check=True)

    _bare, (a, b) = make_team_after(tmp_path, "renamed-and-reused-upstream", rename_and_reuse)
    return a, b, git(b, "rev-parse", "--short=12", "HEAD").strip()


def _renamed_on_a(tmp_path: Path, invoke_cli: CliRunner, *on_b: str) -> tuple[Path, Path]:
    """Memory 1 (linked by kb.l) on both clones; clone a renames it to kb.a, clone b runs
    ``on_b`` on it as another author (two equal changes made alike would be one commit). Made
    once a process for each ``on_b`` and copied (``make_team_after``)."""

    def rename(kbs: list[Path]) -> None:
        a, b = kbs
        invoke_cli("--kb", a, "save", "Revenue is paid orders", "-e", "shop.orders.amount", check=True)
        invoke_cli("--kb", a, "save", "links it", "--id", "kb.l", "-e", "memory:1", check=True)
        invoke_cli("--kb", a, "sync", check=True)
        invoke_cli("--kb", b, "sync", check=True)
        invoke_cli("--kb", a, "rename", "1", "kb.a", check=True)
        invoke_cli("--kb", b, "--author", "Bee <bee@example.com>", *on_b, check=True)

    _bare, (a, b) = make_team_after(tmp_path, f"renamed-on-a {on_b}", rename)
    return a, b


def _files(clone: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted((clone / "memories").glob("*.yaml"))}


@pytest.mark.parametrize("renamer_first", default_first([True, False]))
def test_two_renames_of_one_memory_to_two_ids_say_so_and_the_steps_keep_one(
        tmp_path: Path, invoke_cli: CliRunner, renamer_first: bool) -> None:
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.b")
    first, second = (a, b) if renamer_first else (b, a)
    invoke_cli("--kb", first, "sync", check=True)
    head = git(second, "rev-parse", "HEAD")
    stopped = invoke_cli("--kb", second, "sync")
    mine, theirs = ("kb.b", "kb.a") if renamer_first else ("kb.a", "kb.b")
    assert (stopped.returncode, stopped.stderr) == (1, (
        f"Error: Your commits renamed memories/1.yaml to {mine}, and origin/main renamed it to {theirs}; the "
        f"repository is back as it was. To merge by hand: cd {second}; git fetch origin; slayer-kb rebase origin/main "
        f"(it stops on the conflict); git reset -q --hard to keep origin/main's id {theirs} (it drops your rename; "
        f"once synced, slayer-kb rename {theirs} {mine} gives the memory yours); slayer-kb validate; slayer-kb "
        "rebase --continue (a later commit that stops says so again); slayer-kb sync.\n"))
    assert git(second, "rev-parse", "HEAD") == head  # nothing lost: the rename is still there
    said = typed_steps(invoke_cli, stopped.stderr.removeprefix("Error: "))
    assert said[-1] == "Synced main with origin: up to date, 0 pulled, 0 pushed.\n"
    renamed = f"learning: links it\nentities:\n- memory:{theirs}\n"
    assert list(_files(second)) == [f"{theirs}.yaml", "kb.l.yaml"]
    assert _files(second)["kb.l.yaml"].startswith(renamed)
    # The rename the step names gives it this clone's id, for both clones.
    invoke_cli("--kb", second, "rename", theirs, mine, check=True)
    invoke_cli("--kb", second, "sync", check=True)
    invoke_cli("--kb", first, "sync", check=True)
    for clone in (first, second):
        assert list(_files(clone)) == [f"{mine}.yaml", "kb.l.yaml"]
        assert _files(clone)["kb.l.yaml"].startswith(f"learning: links it\nentities:\n- memory:{mine}\n")
        assert invoke_cli("--kb", clone, "validate", check=True).stdout.endswith("no problems.\n")


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_two_renames_of_one_memory_to_one_id_sync_cleanly(tmp_path: Path, invoke_cli: CliRunner) -> None:
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.a")
    invoke_cli("--kb", a, "sync", check=True)
    proc = invoke_cli("--kb", b, "sync")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, (
        "Synced main with origin: rebased, 1 pulled, 0 pushed.\n"
        "  merged both sides of: memories/kb.a.yaml, memories/kb.l.yaml\n"), "")
    assert _files(a) == _files(b)
    assert list(_files(b)) == ["kb.a.yaml", "kb.l.yaml"]


# An edit and a soft forget by default; the syncs in the other order, in -m slow.
@pytest.mark.parametrize(("soft", "renamer_first"), default_first(
    [(False, True), (True, True), (False, False), (True, False)], keep=2))
def test_a_rename_against_an_edit_or_a_soft_forget_keeps_both(
        tmp_path: Path, invoke_cli: CliRunner, renamer_first: bool, soft: bool) -> None:
    """Git's rebase follows the move: the other clone's edit or soft forget lands in the renamed
    file (the in-process replay took the move for a forget, which beat a soft forget)."""
    change = ("forget", "--soft", "1") if soft else ("update", "1", "--content", "edited on b")
    a, b = _renamed_on_a(tmp_path, invoke_cli, *change)
    first, second = (a, b) if renamer_first else (b, a)
    invoke_cli("--kb", first, "sync", check=True)
    proc = invoke_cli("--kb", second, "sync")
    # memories/1.yaml is not "merged both sides of": the rename only moved it.
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "Synced main with origin: rebased, 1 pulled, 1 pushed.\n", "")
    invoke_cli("--kb", first, "sync", check=True)
    for clone in (first, second):
        files = _files(clone)
        assert list(files) == ["kb.a.yaml", "kb.l.yaml"]
        assert ("deleted_at:" in files["kb.a.yaml"]) == soft
        assert files["kb.a.yaml"].startswith("learning: Revenue is paid orders\n" if soft else "learning: edited on b\n")
        assert files["kb.l.yaml"].startswith("learning: links it\nentities:\n- memory:kb.a\n")


@pytest.mark.parametrize(("renamer_first", "keep"), default_first(
    [(True, "forgotten"), (False, "forgotten"), (True, "renamed"), (False, "renamed")]))
def test_a_rename_against_a_forget_says_so_and_either_step_leaves_no_dangling_link(
        tmp_path: Path, invoke_cli: CliRunner, renamer_first: bool, keep: str) -> None:
    a, b = _renamed_on_a(tmp_path, invoke_cli, "forget", "1")
    first, second = (a, b) if renamer_first else (b, a)
    invoke_cli("--kb", first, "sync", check=True)
    stopped = invoke_cli("--kb", second, "sync")
    start = f"the repository is back as it was. To merge by hand: cd {second}; git fetch origin; slayer-kb rebase " \
            "origin/main (it stops on the conflict); "
    end = "; slayer-kb validate; slayer-kb rebase --continue (a later commit that stops says so again); slayer-kb sync."
    forget = "git rm memories/kb.a.yaml to keep it forgotten, the links to it stripped as the rebase goes on"
    if renamer_first:
        said = (f"Your commits forgot memories/1.yaml, which origin/main renamed to kb.a; {start}{forget} (or git add "
                f"memories/kb.a.yaml to keep it, renamed){end}")
    else:
        said = (f"origin/main forgot memories/1.yaml, which your commits renamed to kb.a; {start}git add "
                "memories/kb.a.yaml to keep it, renamed (or git rm memories/kb.a.yaml to let it go, the links to it "
                f"stripped as the rebase goes on){end}")
    assert (stopped.returncode, stopped.stderr) == (1, f"Error: {said}\n")
    # Either way out, typed as written; the other choice is the one in parentheses.
    steps = said if (keep == "forgotten") == renamer_first else said.replace("git add", "git ADD").replace(
        "git rm", "git add").replace("git ADD", "git rm")
    typed_steps(invoke_cli, steps)
    invoke_cli("--kb", first, "sync", check=True)
    for clone in (first, second):
        files = _files(clone)
        assert list(files) == (["kb.l.yaml"] if keep == "forgotten" else ["kb.a.yaml", "kb.l.yaml"])
        links = "" if keep == "forgotten" else "entities:\n- memory:kb.a\n"
        assert files["kb.l.yaml"].startswith(f"learning: links it\n{links}created_at:")
        assert invoke_cli("--kb", clone, "validate", check=True).stdout.endswith("no problems.\n")


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_an_unrelated_rename_leaves_a_forget_against_an_upsert_to_the_replay(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A rename of another memory beside a forget that a later upsert of its topic key undoes:
    the sync finishes as without the rename (git's rebase, taken for any rename, stopped on it,
    and ran the clone's pre-rebase hook)."""
    _bare, (a, b) = make_team(tmp_path)
    key = ("--title", "Auth", "--type", "decision", "--project", "api", "--topic-key", "architecture/auth-model")
    invoke_cli("--kb", a, "save", "JWT", *key, check=True)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "forget", "1", check=True)
    # Dated an hour back: the upsert below is the later of the two, with no second to wait for.
    git(a, "commit", "-q", "--amend", "--no-edit", f"--date={int(time.time()) - 3600} +0000")
    invoke_cli("--kb", a, "rename", "2", "kb.two", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "JWT, 15 min expiry", *key, check=True)
    # A pre-rebase hook refusing every rebase: the replay is no git rebase, so it runs not.
    hook = b / ".git" / "hooks" / "pre-rebase"
    hook.write_text("#!/bin/sh\necho refused by hook >&2\nexit 1\n")
    hook.chmod(0o755)
    proc = invoke_cli("--kb", b, "sync")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, (
        "Synced main with origin: rebased, 2 pulled, 1 pushed.\n"
        "  merged both sides of: memories/1.yaml\n"
        "  kept, its forget undone by a later upsert of its topic key or edit: 1\n"), "")
    invoke_cli("--kb", a, "sync", check=True)
    for clone in (a, b):
        assert list(_files(clone)) == ["1.yaml", "kb.two.yaml"]
        assert "learning: JWT, 15 min expiry\n" in _files(clone)["1.yaml"]


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_rename_then_another_against_a_rename_names_each_stop_and_the_steps_finish(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """1 -> kb.b -> kb.c on this clone, 1 -> kb.a on the other: the rebase replays the two
    renames one by one, and each stop names two renames (kb.b was taken for an edit, and the
    file both deleted, held by git at its base alone, for nothing)."""
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.b")
    invoke_cli("--kb", b, "--author", "Bee <bee@example.com>", "rename", "kb.b", "kb.c", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    stopped = invoke_cli("--kb", b, "sync")
    assert stopped.stderr.startswith("Error: Your commits renamed memories/1.yaml to kb.b, and origin/main renamed "
                                     "it to kb.a; the repository is back as it was.")
    # The id to give the memory back is where this clone's renames end, not the middle one.
    assert ("git reset -q --hard to keep origin/main's id kb.a (it drops your rename; once synced, slayer-kb rename "
            "kb.a kb.c gives the memory yours)") in stopped.stderr
    git(b, "fetch", "-q", "origin")
    first = invoke_cli("rebase", "origin/main", cwd=b).stderr
    assert "Error: Your commits renamed memories/1.yaml to kb.b, and origin/main renamed it to kb.a; the rebase " \
           "stopped at commit 1 of 2" in first
    assert "slayer-kb rename kb.a kb.c gives the memory yours" in first
    git(b, "reset", "-q", "--hard")
    second = invoke_cli("rebase", "--continue", cwd=b)
    assert second.stderr.startswith("Error: Your commits renamed memories/1.yaml to kb.c, and origin/main renamed it "
                                    "to kb.a; the rebase stopped at commit 2 of 2")
    assert ("git reset -q --hard to keep origin/main's id kb.a (it drops your rename; once synced, slayer-kb rename "
            "kb.a kb.c gives the memory yours)") in second.stderr
    git(b, "reset", "-q", "--hard")
    invoke_cli("rebase", "--continue", cwd=b, check=True)
    invoke_cli("--kb", b, "sync", check=True)
    assert list(_files(b)) == ["kb.a.yaml", "kb.l.yaml"]
    assert git(b, "status", "--porcelain") == ""


def test_a_merge_of_two_renames_names_both_and_its_steps_leave_every_link_valid(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """``slayer-kb merge`` meeting two renames of one memory (1 -> kb.b here, then linked from
    kb.q; 1 -> kb.a on origin/main): named as two renames, not as two forgets against edits, and
    the steps keep origin/main's id. Before, they kept both files' fates apart and the sync after
    them refused the push: kb.l, merged by the driver, linked both kb.a and kb.b."""
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.b")
    invoke_cli("--kb", b, "save", "links the renamed one", "--id", "kb.q", "-e", "memory:kb.b", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    stopped = invoke_cli("merge", "origin/main", cwd=b)
    assert (stopped.returncode, stopped.stderr) == (1, (
        "Error: This branch renamed memories/1.yaml to kb.b, and origin/main renamed it to kb.a; the merge stopped, "
        "and git merge --abort would put the branch back as it was. To merge by hand: git rm -q memories/kb.b.yaml "
        "memories/1.yaml && git add memories/kb.a.yaml to keep origin/main's id kb.a (validate names the links to "
        "kb.b until the sync, which points them at kb.a; once synced, slayer-kb rename kb.a kb.b gives the memory "
        "yours); slayer-kb validate; git commit --no-edit; slayer-kb sync.\n"))
    monkeypatch.chdir(b)  # the steps have no cd: the merge ran here
    said = typed_steps(invoke_cli, stopped.stderr.removeprefix("Error: "))
    assert said[-1] == ("Synced main with origin: pushed, 0 pulled, 4 pushed.\n"
                        "  rewrote links to renamed memories: memory:kb.b -> memory:kb.a in kb.l, "
                        "memory:kb.b -> memory:kb.a in kb.q\n")
    assert git(b, "log", "-2", "--format=%s") == ("memory: rewrite links to renamed kb.b as kb.a in kb.l, kb.q\n"
                                                  "Merge remote-tracking branch 'origin/main'\n")
    assert list(_files(b)) == ["kb.a.yaml", "kb.l.yaml", "kb.q.yaml"]
    assert "entities:\n- memory:kb.a\ncreated_at" in _files(b)["kb.l.yaml"]
    assert "entities:\n- memory:kb.a\ncreated_at" in _files(b)["kb.q.yaml"]
    assert invoke_cli("--kb", b, "validate", check=True).stdout == "Checked 3 files: no problems.\n"
    assert git(b, "status", "--porcelain") == ""


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_link_to_the_rename_the_steps_drop_follows_the_kept_one(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """This clone renamed 1 to kb.b and then linked kb.b; the other's rename to kb.a is kept
    (``git reset -q --hard``): the link to kb.b points at kb.a, not at nothing."""
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.b")
    invoke_cli("--kb", b, "save", "links the renamed one", "--id", "kb.q", "-e", "memory:kb.b", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    stopped = invoke_cli("--kb", b, "sync")
    assert "git reset -q --hard to keep origin/main's id kb.a" in stopped.stderr
    said = typed_steps(invoke_cli, stopped.stderr.removeprefix("Error: "))
    assert said[-2:] == ["Rebased onto origin/main; run slayer-kb sync to push.\n"
                         "  rewrote links to renamed memories: memory:kb.b -> memory:kb.a in kb.q\n",
                         "Synced main with origin: pushed, 0 pulled, 2 pushed.\n"]
    assert list(_files(b)) == ["kb.a.yaml", "kb.l.yaml", "kb.q.yaml"]
    assert "entities:\n- memory:kb.a\n" in _files(b)["kb.q.yaml"]
    assert invoke_cli("--kb", b, "validate", check=True).stdout.endswith("no problems.\n")


@pytest.mark.parametrize("change", [("update", "kb.r", "--description", "b's summary"), ("forget", "kb.r")])
def test_a_change_of_an_id_the_upstream_renamed_and_reused_stops_the_sync(
        tmp_path: Path, invoke_cli: CliRunner, change: tuple[str, ...]) -> None:
    """Clone a renames kb.r to kb.revenue and gives kb.r to a new memory; clone b, unaware, edits
    or forgets kb.r and syncs second: replayed on a's commits the change would land on the new
    kb.r, so the sync stops (nothing lost) with steps that set it aside for kb.revenue."""
    a, b, parted = _renamed_and_reused_upstream(tmp_path, invoke_cli)
    invoke_cli("--kb", b, *change, check=True)
    head = git(b, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", b, "sync")
    assert (proc.returncode, proc.stderr) == (1, (
        "Error: Your commits changed memory 'kb.r' (an edit, a forget or a rename), which origin/main renamed to "
        "'kb.revenue' and then gave 'kb.r' to a new memory (--reuse-id): replayed there, your change would land on "
        "the new memory, and sync cannot tell it from one meant for that memory, so nothing was pushed and the "
        "repository is back as it was. Make it on 'kb.revenue' instead: "
        f"cd {b}; git fetch origin; mkdir -p .git/slayer-kb-set-aside; git show HEAD:./memories/kb.r.yaml > "
        f".git/slayer-kb-set-aside/kb.r.mine.yaml; git reset --soft {parted}; "
        f"git restore --source={parted} --staged --worktree -- memories/kb.r.yaml; git commit -m 'My changes, memory "
        "kb.r set aside' (if anything is left); slayer-kb sync; then make your change again there (slayer-kb edit "
        "kb.revenue, your version in .git/slayer-kb-set-aside/kb.r.mine.yaml; or slayer-kb forget kb.revenue).\n"))
    assert git(b, "rev-parse", "HEAD") == head and not (b / "memories" / "kb.revenue.yaml").exists()


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_an_id_both_clones_renamed_and_reused_stops_the_sync(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Both clones rename kb.r away and give kb.r to a new memory of their own: two memories for
    one id, each side's links meaning its own. The second sync stops, naming both renames."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "--id", "kb.r", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    parted = git(b, "rev-parse", "--short=12", "HEAD").strip()
    for clone, new in ((a, "kb.x"), (b, "kb.y")):
        invoke_cli("--kb", clone, "rename", "kb.r", new, check=True)
        invoke_cli("--kb", clone, "save", f"{new}'s twin", "--id", "kb.r", "--reuse-id", "-e", "shop.orders.amount",
                   check=True)
    invoke_cli("--kb", a, "sync", check=True)
    head = git(b, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", b, "sync")
    assert (proc.returncode, proc.stderr) == (1, (
        "Error: Memory 'kb.r' was renamed on both sides (by your commits to 'kb.y', by origin/main's to 'kb.x'), and "
        "each side gave 'kb.r' to a new memory (--reuse-id): two memories for one id, and a link to 'kb.r' means a "
        "different one on each side. Sync cannot tell which one a link or an agent meant, so nothing was pushed and "
        "the repository is back as it was. Keep one side's 'kb.r': to give up yours, "
        f"cd {b}; git fetch origin; mkdir -p .git/slayer-kb-set-aside; git show HEAD:./memories/kb.r.yaml > "
        f".git/slayer-kb-set-aside/kb.r.mine.yaml; git reset --soft {parted}; "
        f"git restore --source={parted} --staged --worktree -- memories/kb.r.yaml; git rm -q -f -- memories/kb.y.yaml; "
        "git commit -m 'My changes, memory kb.r set aside' (if anything is left); then, before syncing, save your new "
        "memory again under an id of its own (slayer-kb save ... --id NEW-ID; its text is in "
        ".git/slayer-kb-set-aside/kb.r.mine.yaml), point "
        "your links to it there and those to 'kb.y' at 'kb.x', and slayer-kb sync; the other side's clone does the "
        "same to give up theirs.\n"))
    assert git(b, "rev-parse", "HEAD") == head
    assert "learning: kb.y's twin\n" in (b / "memories" / "kb.r.yaml").read_text()


def test_a_sync_of_edits_alone_reads_no_rename(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Each clone edits a memory and adds none: no id can have been renamed (a rename adds its new
    id), so the sync asks git for no rename trailer."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "--id", "kb.r", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "save", "Refunds are negative", "--id", "kb.f", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "update", "kb.r", "--description", "a's summary", check=True)
    invoke_cli("--kb", b, "update", "kb.f", "--description", "b's summary", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    with traced_git(tmp_path) as runs:
        assert invoke_cli("--kb", b, "sync", check=True).stdout.startswith("Synced main with origin: rebased")
    assert [run for run in runs("") if "Renamed: " in run] == []


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_merge_of_two_renames_git_paired_one_of_names_both_and_drops_no_edit(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """origin/main renamed 1 to kb.a and gave it a description; this branch renamed it to kb.b
    and rewrote its short text, too unlike the old one for git to see its rename. git merged kb.b
    as an add and stopped on kb.a alone, and the stop called it a forget: its step 'git rm
    memories/kb.a.yaml' dropped main's description, and the sync pushed without it."""
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.b")
    invoke_cli("--kb", a, "update", "kb.a", "--description", "Paid orders only", check=True)
    invoke_cli("--kb", b, "--author", "Bee <bee@example.com>", "update", "kb.b", "--content",
               "Revenue is paid orders!", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    stopped = invoke_cli("merge", "origin/main", cwd=b)
    assert (stopped.returncode, stopped.stderr) == (1, (
        "Error: This branch renamed memories/1.yaml to kb.b, and origin/main renamed it to kb.a, each file holding "
        "its side's edits, which git did not merge; the merge stopped, and git merge --abort would put the branch "
        "back as it was. To merge by hand: edit memories/kb.a.yaml to keep what both sides meant (your edits are "
        "in memories/kb.b.yaml); git rm -q memories/kb.b.yaml && git add memories/kb.a.yaml to keep origin/main's "
        "id kb.a (validate names the links to kb.b until the sync, which points them at kb.a; once synced, "
        "slayer-kb rename kb.a kb.b gives the memory yours); slayer-kb validate; git commit --no-edit; "
        "slayer-kb sync.\n"))
    assert "description: Paid orders only\n" in _files(b)["kb.a.yaml"]
    assert _files(b)["kb.b.yaml"].startswith("learning: Revenue is paid orders!\n")
    # The edit step done as a person would: this branch's text into main's file.
    kept = b / "memories" / "kb.a.yaml"
    kept.write_text(kept.read_text().replace("learning: Revenue is paid orders\n",
                                             "learning: Revenue is paid orders!\n"))
    monkeypatch.chdir(b)
    said = typed_steps(invoke_cli, stopped.stderr.removeprefix("Error: ").replace(
        "edit memories/kb.a.yaml to keep what both sides meant (your edits are in memories/kb.b.yaml); ", ""))
    assert said[-1].startswith("Synced main with origin: pushed, 0 pulled, ")
    assert list(_files(b)) == ["kb.a.yaml", "kb.l.yaml"]
    assert _files(b)["kb.a.yaml"].startswith("learning: Revenue is paid orders!\ndescription: Paid orders only\n")


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_merge_of_two_renames_git_saw_neither_of_stops_naming_both(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both sides renamed memory 1 (to kb.a on origin/main, kb.b here) and rewrote its short text,
    too unlike the old one for git to see either rename: git merged both files as adds, and the
    merge completed with one memory under two ids, which validate passed. The renames' trailers
    pair them: the merge stops as on two renames git saw, and its steps leave one memory."""
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.b")
    invoke_cli("--kb", a, "update", "kb.a", "--content", "Net sales count settled invoices", check=True)
    invoke_cli("--kb", b, "--author", "Bee <bee@example.com>", "update", "kb.b", "--content",
               "Gross bookings minus chargebacks", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    stopped = invoke_cli("merge", "origin/main", cwd=b)
    edit = "edit memories/kb.a.yaml to keep what both sides meant (your edits are in memories/kb.b.yaml); "
    assert (stopped.returncode, stopped.stderr) == (1, (
        "Error: This branch renamed memories/1.yaml to kb.b, and origin/main renamed it to kb.a, each file holding "
        "its side's edits, which git did not merge; the merge stopped, and git merge --abort would put the branch "
        f"back as it was. To merge by hand: {edit}git rm -q memories/kb.b.yaml && git add memories/kb.a.yaml to "
        "keep origin/main's id kb.a (validate names the links to kb.b until the sync, which points them at kb.a; "
        "once synced, slayer-kb rename kb.a kb.b gives the memory yours); slayer-kb validate; git commit --no-edit; "
        "slayer-kb sync.\n"))
    assert git(b, "status", "--porcelain", "memories/kb.b.yaml") == "UD memories/kb.b.yaml\n"
    assert _files(b)["kb.b.yaml"].startswith("learning: Gross bookings minus chargebacks\n")
    kept = b / "memories" / "kb.a.yaml"
    kept.write_text(kept.read_text().replace("learning: Net sales count settled invoices\n",
                                             "learning: Net sales count settled invoices, less chargebacks\n"))
    monkeypatch.chdir(b)
    said = typed_steps(invoke_cli, stopped.stderr.removeprefix("Error: ").replace(edit, ""))
    assert said[-1].startswith("Synced main with origin: pushed, 0 pulled, ")
    invoke_cli("--kb", a, "sync", check=True)
    for clone in (a, b):
        assert list(_files(clone)) == ["kb.a.yaml", "kb.l.yaml"]
        assert _files(clone)["kb.a.yaml"].startswith("learning: Net sales count settled invoices, less chargebacks\n")
        assert "entities:\n- memory:kb.a\ncreated_at" in _files(clone)["kb.l.yaml"]
        assert invoke_cli("--kb", clone, "validate", check=True).stdout == "Checked 2 files: no problems.\n"


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_merging_sync_of_two_renames_git_saw_neither_of_names_both(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The case above, met by a sync that merges (this branch holds a merge): the merge stops on
    this branch's file, and the stop, made once the sync put the work tree back (main's file no
    longer in it), still pairs the two renames rather than calling one a forget."""
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.b")
    git(b, "checkout", "-q", "-b", "side")
    git(b, "commit", "-q", "--allow-empty", "-m", "side")
    git(b, "checkout", "-q", "main")
    invoke_cli("--kb", a, "update", "kb.a", "--content", "Net sales count settled invoices", check=True)
    invoke_cli("--kb", b, "--author", "Bee <bee@example.com>", "update", "kb.b", "--content",
               "Gross bookings minus chargebacks", check=True)
    git(b, "merge", "-q", "--no-edit", "side")
    invoke_cli("--kb", a, "sync", check=True)
    head = git(b, "rev-parse", "HEAD")
    stopped = invoke_cli("--kb", b, "sync")
    assert (stopped.returncode, stopped.stderr) == (1, (
        "Error: This branch renamed memories/1.yaml to kb.b, and origin/main renamed it to kb.a, each file holding "
        "its side's edits, which git did not merge; the repository is back as it was. To merge by hand: "
        f"cd {b}; git fetch origin; slayer-kb merge origin/main (it stops on the conflict); edit memories/kb.a.yaml "
        "to keep what both sides meant (your edits are in memories/kb.b.yaml); git rm -q memories/kb.b.yaml && git "
        "add memories/kb.a.yaml to keep origin/main's id kb.a (validate names the links to kb.b until the sync, "
        "which points them at kb.a; once synced, slayer-kb rename kb.a kb.b gives the memory yours); slayer-kb "
        "validate; git commit --no-edit; slayer-kb sync.\n"))
    assert git(b, "rev-parse", "HEAD") == head and git(b, "status", "--porcelain") == ""


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_sync_rebasing_onto_a_rename_git_missed_names_both_and_pushes_no_twin(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """origin/main renamed 1 to kb.a and rewrote its short text (git sees no rename there); this
    clone renamed it to kb.b. The sync called it a forget ('origin/main forgot memories/1.yaml'),
    and its step 'git add memories/kb.b.yaml' pushed one memory under two ids."""
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.b")
    invoke_cli("--kb", a, "update", "kb.a", "--content", "Net sales count settled invoices", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    stopped = invoke_cli("--kb", b, "sync")
    assert (stopped.returncode, stopped.stderr) == (1, (
        "Error: Your commits renamed memories/1.yaml to kb.b, and origin/main renamed it to kb.a, each file holding "
        "its side's edits, which git did not merge; the repository is back as it was. To merge by hand: "
        f"cd {b}; git fetch origin; slayer-kb rebase origin/main (it stops on the conflict); edit memories/kb.a.yaml "
        "to keep what both sides meant (your edits are in memories/kb.b.yaml); git rm -q memories/kb.b.yaml && git "
        "add memories/kb.a.yaml to keep origin/main's id kb.a (it drops your rename, and validate names the links "
        "to kb.b until rebase --continue points them at kb.a; once synced, slayer-kb rename kb.a kb.b gives the "
        "memory yours); slayer-kb validate; slayer-kb rebase --continue (a later commit that stops says so again); "
        "slayer-kb sync.\n"))
    said = typed_steps(invoke_cli, stopped.stderr.removeprefix("Error: ").replace(
        "edit memories/kb.a.yaml to keep what both sides meant (your edits are in memories/kb.b.yaml); ", ""))
    assert said[-2:] == ["Rebased onto origin/main; run slayer-kb sync to push.\n"
                         "  rewrote links to renamed memories: memory:kb.b -> memory:kb.a in kb.l\n",
                         "Synced main with origin: pushed, 0 pulled, 2 pushed.\n"]
    invoke_cli("--kb", a, "sync", check=True)
    for clone in (a, b):
        assert list(_files(clone)) == ["kb.a.yaml", "kb.l.yaml"]
        assert _files(clone)["kb.a.yaml"].startswith("learning: Net sales count settled invoices\n")
        assert "entities:\n- memory:kb.a\ncreated_at" in _files(clone)["kb.l.yaml"]
        assert invoke_cli("--kb", clone, "validate", check=True).stdout == "Checked 2 files: no problems.\n"


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_link_through_a_chain_whose_middle_id_was_reused_is_to_a_forgotten_memory(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """origin/main renamed 1 to kb.a, then kb.a to kb.b, forgot kb.b and saved an unrelated memory
    as kb.a. This branch's link to 1 was sent to that memory (an id the chain passed through,
    held at HEAD), where the chain ends in a forget: the link is to a forgotten memory."""
    a, b = _held_by_both(tmp_path)
    for command in (("rename", "1", "kb.a"), ("rename", "kb.a", "kb.b"), ("forget", "kb.b"),
                    ("save", "Orders have a status", "--id", "kb.a", "-e", "shop.orders.status")):
        invoke_cli("--kb", a, *command, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "links one", "--id", "kb.q", "-e", "memory:1", check=True)
    git(b, "fetch", "-q", "origin")
    checked = invoke_cli("validate", "--against", "origin/main", cwd=b)
    assert (checked.returncode, checked.stdout) == (1, (
        "memories/kb.q.yaml:1: memory kb.q links 'memory:1', which origin/main forgot since this branch parted from "
        "it; merged as it is, the link would point at nothing. Run 'git fetch origin && slayer-kb merge origin/main': "
        "it strips links to forgotten memories, in one commit\n1 problem in 1 file (1 file checked)\n"))
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert synced.stdout == ("Synced main with origin: rebased, 4 pulled, 2 pushed.\n"
                             "  stripped links to forgotten memories: memory:1 from kb.q\n")
    assert _files(b)["kb.q.yaml"].startswith("learning: links one\ncreated_at: ")
    assert _files(b)["kb.a.yaml"].startswith("learning: Orders have a status\n")


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_two_renames_where_this_branch_comes_back_to_main_s_id_give_no_rename_step(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """This branch renamed 1 to kb.b, then kb.b to kb.a, origin/main's id for it: the rebase
    stops at the first rename, whose step said 'rename kb.a kb.b gives the memory yours', an id
    this branch had left."""
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.b")
    invoke_cli("--kb", b, "--author", "Bee <bee@example.com>", "rename", "kb.b", "kb.a", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    refused = invoke_cli("--kb", b, "sync")
    assert refused.returncode == 1
    assert ("To merge by hand: " + refused.stderr.split(" To merge by hand: ", 1)[1]).endswith(
        "slayer-kb rebase origin/main (it stops on the conflict); git reset -q --hard to keep origin/main's id kb.a "
        "(it drops your rename; your later rename ends at kb.a too); slayer-kb validate; slayer-kb rebase --continue "
        "(a later commit that stops says so again); slayer-kb sync.\n")
    monkeypatch.chdir(b)
    said = typed_steps(invoke_cli, refused.stderr.removeprefix("Error: "))
    assert said[-1] == "Synced main with origin: up to date, 0 pulled, 0 pushed.\n"
    assert list(_files(b)) == ["kb.a.yaml", "kb.l.yaml"]


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_link_to_an_id_renamed_reused_and_renamed_again_follows_its_first_memory(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Clone a renames kb.r to kb.revenue, gives kb.r to kb.other's memory (``--reuse-id``), then
    renames that kb.r to kb.s2; clone b's link to kb.r, made before it synced, meant the revenue
    memory (it was sent to kb.s2, the memory that had reused the id)."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "--id", "kb.r", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "save", "Refunds are negative", "--id", "kb.other", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    for command in (("kb.r", "kb.revenue"), ("kb.other", "kb.r", "--reuse-id"), ("kb.r", "kb.s2")):
        invoke_cli("--kb", a, "rename", *command, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "b links revenue", "--id", "kb.q", "-e", "memory:kb.r", check=True)
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert synced.stdout == ("Synced main with origin: rebased, 3 pulled, 2 pushed.\n"
                             "  rewrote links to renamed memories: memory:kb.r -> memory:kb.revenue in kb.q\n")
    assert "entities:\n- memory:kb.revenue\n" in _files(b)["kb.q.yaml"]


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_memory_renamed_away_and_back_keeps_the_links_to_it(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Clone a renames kb.x to kb.a and back: the chain ends where it began, so clone b's new link
    to kb.x (and its edit of it) stay; the sync stripped the link as if kb.x were forgotten."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "--id", "kb.x", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "rename", "kb.x", "kb.a", check=True)
    invoke_cli("--kb", a, "rename", "kb.a", "kb.x", check=True)
    invoke_cli("--kb", a, "save", "a new one", "--id", "kb.n", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "b links it", "--id", "kb.q", "-e", "memory:kb.x", check=True)
    invoke_cli("--kb", b, "update", "kb.x", "--content", "edited on b", check=True)
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert synced.stdout == "Synced main with origin: rebased, 3 pulled, 2 pushed.\n"
    assert "entities:\n- memory:kb.x\n" in _files(b)["kb.q.yaml"]
    assert _files(b)["kb.x.yaml"].startswith("learning: edited on b\n")


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_merge_of_two_renames_git_paired_the_branch_s_of_names_both(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mirror of the case above: main's edit made its rename too unlike the old file for git,
    this branch's small one did not; the merge stopped on this branch's file, and the steps read
    an old file for main's new one that nobody had recorded (a KeyError, the merge left half done)."""
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.b")
    invoke_cli("--kb", a, "update", "kb.a", "--content", "Revenue is paid orders!", check=True)
    invoke_cli("--kb", b, "--author", "Bee <bee@example.com>", "update", "kb.b", "--description",
               "Paid orders only", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    stopped = invoke_cli("merge", "origin/main", cwd=b)
    assert stopped.returncode == 1
    assert ("This branch renamed memories/1.yaml to kb.b, and origin/main renamed it to kb.a, each file holding its "
            "side's edits, which git did not merge; the merge stopped") in stopped.stderr
    edit = "edit memories/kb.a.yaml to keep what both sides meant (your edits are in memories/kb.b.yaml); "
    assert edit in stopped.stderr
    kept = b / "memories" / "kb.a.yaml"
    kept.write_text(kept.read_text().replace("learning: Revenue is paid orders!\n",
                                             "learning: Revenue is paid orders!\ndescription: Paid orders only\n"))
    monkeypatch.chdir(b)
    said = typed_steps(invoke_cli, stopped.stderr.removeprefix("Error: ").replace(edit, ""))
    assert said[-1].startswith("Synced main with origin: pushed, 0 pulled, ")
    assert list(_files(b)) == ["kb.a.yaml", "kb.l.yaml"]
    assert _files(b)["kb.a.yaml"].startswith("learning: Revenue is paid orders!\ndescription: Paid orders only\n")


@pytest.mark.parametrize(("command", "meets", "done"), [("merge", "merged", "merged"),
                                                      ("rebase", "replayed there", "rebased")])
@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_merge_of_an_upstream_that_renamed_and_reused_an_id_this_branch_changed_stops(
        tmp_path: Path, invoke_cli: CliRunner, command: str, meets: str, done: str) -> None:
    """``slayer-kb merge`` (and ``rebase``) meets what sync meets: the upstream renamed kb.r and
    gave kb.r to a new memory, this branch edited kb.r. Merged, the edit would land on the new
    kb.r, so the command refuses before it writes anything, with steps that end in it again."""
    a, b, parted = _renamed_and_reused_upstream(tmp_path, invoke_cli)
    invoke_cli("--kb", b, "update", "kb.r", "--description", "b's summary", check=True)
    git(b, "fetch", "-q", "origin")
    head = git(b, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", b, command, "origin/main")
    assert (proc.returncode, proc.stderr) == (1, (
        "Error: Your commits changed memory 'kb.r' (an edit, a forget or a rename), which origin/main renamed to "
        f"'kb.revenue' and then gave 'kb.r' to a new memory (--reuse-id): {meets}, your change would land on "
        f"the new memory, and the {command} cannot tell it from one meant for that memory, so nothing was {done} and the "
        "repository is back as it was. Make it on 'kb.revenue' instead: "
        f"cd {b}; mkdir -p .git/slayer-kb-set-aside; git show HEAD:./memories/kb.r.yaml > "
        f".git/slayer-kb-set-aside/kb.r.mine.yaml; git reset --soft {parted}; "
        f"git restore --source={parted} --staged --worktree -- memories/kb.r.yaml; git commit -m 'My changes, memory "
        f"kb.r set aside' (if anything is left); slayer-kb {command} origin/main; then make your change again there "
        "(slayer-kb edit kb.revenue, your version in .git/slayer-kb-set-aside/kb.r.mine.yaml; or slayer-kb forget "
        "kb.revenue).\n"))
    assert git(b, "rev-parse", "HEAD") == head and not (b / "memories" / "kb.revenue.yaml").exists()
    assert "description: b's summary\n" in (b / "memories" / "kb.r.yaml").read_text()
    steps = proc.stderr.split(" instead: ", 1)[1].split(f"; slayer-kb {command}", 1)[0].replace(" (if anything is left)", "")
    subprocess.run(["bash", "-c", steps], check=False, capture_output=True)  # nothing else to commit
    assert git(b, "status", "--porcelain") == ""  # nothing a 'git add -A' would commit, nothing read as a memory
    assert invoke_cli("--kb", b, command, "origin/main").returncode == 0
    assert git(b, "rev-parse", "HEAD") == git(b, "rev-parse", "origin/main")
    assert "description: b's summary\n" in (b / ".git" / "slayer-kb-set-aside" / "kb.r.mine.yaml").read_text()
    assert "description: b's summary\n" not in (b / "memories" / "kb.r.yaml").read_text()


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_an_upstream_change_of_an_id_this_merging_branch_renamed_and_reused_is_made_again_on_the_rename(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Clone a, whose commits hold a merge (so sync merges), renames kb.r to kb.revenue and gives
    kb.r to a new memory; clone b edits kb.r and syncs first. a's sync stops, and its steps,
    typed, merge keeping a's kb.r and b's version aside; made again on kb.revenue, all is pushed."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "--id", "kb.r", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(a, "checkout", "-q", "-b", "side")
    git(a, "commit", "-q", "--allow-empty", "-m", "side")
    git(a, "checkout", "-q", "main")
    invoke_cli("--kb", a, "rename", "kb.r", "kb.revenue", check=True)
    invoke_cli("--kb", a, "save", "Refunds are negative", "--id", "kb.r", "--reuse-id", "-e", "shop.orders.amount",
               check=True)
    git(a, "merge", "-q", "--no-edit", "side")
    invoke_cli("--kb", b, "update", "kb.r", "--description", "b's summary", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    head = git(a, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", a, "sync")
    assert (proc.returncode, proc.stderr) == (1, (
        "Error: origin/main changed memory 'kb.r', which your commits renamed to 'kb.revenue' and then gave to a new "
        "memory (--reuse-id): merged, its change could land on the new memory, so nothing was pushed and the "
        "repository is back as it was. Merge keeping your 'kb.r', and make that change on 'kb.revenue': "
        f"cd {a}; git fetch origin; mkdir -p .git/slayer-kb-set-aside; git show origin/main:./memories/kb.r.yaml > "
        ".git/slayer-kb-set-aside/kb.r.theirs.yaml; git merge -q --no-ff --no-commit origin/main; git checkout HEAD "
        "-- memories/kb.r.yaml; slayer-kb validate; git commit --no-edit; slayer-kb sync; then make it again there "
        "(slayer-kb edit kb.revenue, their version in .git/slayer-kb-set-aside/kb.r.theirs.yaml; or slayer-kb forget "
        "kb.revenue if they forgot it) and slayer-kb sync.\n"))
    assert git(a, "rev-parse", "HEAD") == head
    steps = proc.stderr.split("'kb.revenue': ", 1)[1].split("; then make it", 1)[0]
    for step in steps.split("; ")[1:]:  # after the cd: git's in bash, slayer-kb's in this process
        if step.startswith("slayer-kb "):
            invoke_cli("--kb", a, *shlex.split(step)[1:], check=True)
        else:
            subprocess.run(["bash", "-c", step], cwd=a, check=step.startswith("git commit"), capture_output=True)
    assert "description: b's summary\n" in (a / ".git" / "slayer-kb-set-aside" / "kb.r.theirs.yaml").read_text()
    assert git(a, "status", "--porcelain") == ""
    invoke_cli("--kb", a, "update", "kb.revenue", "--description", "b's summary", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    for clone in (a, b):
        memories = clone / "memories"
        assert git(clone, "rev-parse", "HEAD") == git(clone, "rev-parse", "origin/main")
        assert "description: b's summary\n" in (memories / "kb.revenue.yaml").read_text()
        assert "learning: Revenue is paid orders\n" in (memories / "kb.revenue.yaml").read_text()
        new = (memories / "kb.r.yaml").read_text()
        assert "learning: Refunds are negative\n" in new and "b's summary" not in new


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_the_set_aside_steps_keep_this_sides_renames_for_the_other_sides_links(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The steps that set aside b's edit of kb.r (renamed and given again upstream) make b's
    commits one: that commit still says b renamed kb.z to kb.zz (``Renamed:``), so a's link to
    kb.z follows it rather than being stripped as a link to a forgotten memory."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue is paid orders", "--id", "kb.r", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "save", "Zed note", "--id", "kb.z", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "rename", "kb.r", "kb.revenue", check=True)
    invoke_cli("--kb", a, "save", "Refunds are negative", "--id", "kb.r", "--reuse-id", "-e", "shop.orders.amount",
               check=True)
    invoke_cli("--kb", a, "save", "a links zed", "--id", "kb.al", "-e", "memory:kb.z", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "rename", "kb.z", "kb.zz", check=True)
    invoke_cli("--kb", b, "update", "kb.r", "--description", "b's summary", check=True)
    proc = invoke_cli("--kb", b, "sync")
    assert proc.returncode == 1
    steps = proc.stderr.split(" instead: ", 1)[1].split("; slayer-kb sync", 1)[0]
    assert steps.endswith("; git commit -m 'My changes, memory kb.r set aside' --trailer 'Renamed: kb.z -> kb.zz' "
                          "(if anything is left)")
    subprocess.run(["bash", "-c", steps.replace(" (if anything is left)", "")], check=True, capture_output=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    assert "entities:\n- memory:kb.zz\n" in (a / "memories" / "kb.al.yaml").read_text()
    assert invoke_cli("--kb", a, "validate", check=True).stdout.endswith("no problems.\n")


_UNRELATED = ("Totally unrelated: churn is counted monthly, per workspace, from the billing export the finance team "
              "closes on the third working day, never from the product events table")


def _renamed_on_both_then_one_forgot_and_saved_again(tmp_path: Path, invoke_cli: CliRunner, there: bool) -> Path:
    """Memory 1 renamed to kb.a on origin/main and to kb.b on clone b, each side's text rewritten
    or the memory forgotten and an unrelated one saved at its new id (on b, or on origin/main when
    ``there``); origin/main synced. Clone b."""
    a, b = _renamed_on_a(tmp_path, invoke_cli, "rename", "1", "kb.b")
    forgets, edits = ((a, "kb.a"), (b, "kb.b")) if there else ((b, "kb.b"), (a, "kb.a"))
    bee = ("--author", "Bee <bee@example.com>")
    invoke_cli("--kb", edits[0], *bee, "update", edits[1], "--content", "Net sales count settled invoices", check=True)
    invoke_cli("--kb", forgets[0], *bee, "forget", forgets[1], check=True)
    invoke_cli("--kb", forgets[0], *bee, "save", _UNRELATED, "--id", forgets[1], "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    return b


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
@pytest.mark.parametrize("there", default_first([False, True]))
def test_a_merge_pairs_no_rename_whose_memory_a_side_then_forgot(
        tmp_path: Path, invoke_cli: CliRunner, there: bool) -> None:
    """Both sides renamed memory 1 (kb.a, kb.b), and one then forgot it and saved an unrelated
    memory at its new id: that side's rename is over, no rename to pair. The merge stopped on
    'This branch renamed memories/1.yaml to kb.b, and origin/main renamed it to kb.a', and its
    steps dropped the other memory with 'git rm'."""
    b = _renamed_on_both_then_one_forgot_and_saved_again(tmp_path, invoke_cli, there)
    git(b, "fetch", "-q", "origin")
    proc = invoke_cli("merge", "origin/main", cwd=b)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "Merged origin/main; run slayer-kb sync to push.\n", "")
    assert git(b, "status", "--porcelain") == ""
    files = _files(b)
    assert list(files) == ["kb.a.yaml", "kb.b.yaml", "kb.l.yaml"]
    renamed, saved = ("kb.b.yaml", "kb.a.yaml") if there else ("kb.a.yaml", "kb.b.yaml")
    assert files[renamed].startswith("learning: Net sales count settled invoices\n")
    assert files[saved].startswith("learning: 'Totally unrelated: churn")


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_sync_onto_a_rename_whose_memory_main_then_forgot_calls_it_a_forget(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """origin/main renamed 1 to kb.a, forgot it and saved an unrelated kb.a; this clone renamed it
    to kb.b and rewrote it. The stop paired kb.b with main's unrelated kb.a, and its step 'git rm
    -q memories/kb.b.yaml && git add memories/kb.a.yaml' dropped this clone's memory."""
    b = _renamed_on_both_then_one_forgot_and_saved_again(tmp_path, invoke_cli, there=True)
    stopped = invoke_cli("--kb", b, "sync")
    assert (stopped.returncode, stopped.stderr) == (1, (
        "Error: origin/main forgot memories/1.yaml, which your commits renamed to kb.b; the repository is back as "
        f"it was. To merge by hand: cd {b}; git fetch origin; slayer-kb rebase origin/main (it stops on the "
        "conflict); git add memories/kb.b.yaml to keep it, renamed (or git rm memories/kb.b.yaml to let it go, the "
        "links to it stripped as the rebase goes on); slayer-kb validate; slayer-kb rebase --continue (a later "
        "commit that stops says so again); slayer-kb sync.\n"))


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_merge_where_both_forgot_a_memory_and_saved_another_reads_one_trailer_log(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Both sides forgot memory 1 and each saved a new one: a memory file both deleted, each side
    adding one, as two renames would. The merge read both sides' renames (a log each) for it; one
    log of the commits that deleted 1.yaml, which records no rename, is enough."""
    a, b = _held_by_both(tmp_path)
    invoke_cli("--kb", a, "forget", "1", check=True)
    invoke_cli("--kb", b, "--author", "Bee <bee@example.com>", "forget", "1", check=True)
    # Texts long and unlike each other: git pairs a forget and a short save as a rename (the files'
    # other lines alike), which this test is not about.
    invoke_cli("--kb", a, "save", "Refunds are booked as negative line items against the original invoice, "
               "never as separate credit notes, so monthly totals net them automatically", "--id", "kb.f",
               "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "save", "Tax is excluded from every revenue figure; finance reports it on its own "
               "ledger, reconciled quarterly with the payment processor's statements", "--id", "kb.t",
               "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    with traced_git(tmp_path) as runs:
        proc = invoke_cli("merge", "origin/main", cwd=b)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "Merged origin/main; run slayer-kb sync to push.\n", "")
    assert list(_files(b)) == ["kb.f.yaml", "kb.t.yaml"]
    # The reuse check before the merge and the revalidation after it read this side's renames and
    # main's; the merge itself, one log of both sides' commits that deleted 1.yaml.
    assert [run.split(" ")[1] for run in runs("log") if "Renamed: " in run] == [
        "--reverse", "--reverse", "--source", "--reverse", "--reverse"]


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_merge_of_two_renames_stops_though_one_side_reused_the_id_and_forgot_its_new_memory(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """a renamed kb.x to kb.y, gave kb.x to another memory (--reuse-id), renamed that one to kb.k and
    forgot it; b renamed kb.x to kb.v; each edited its copy. The forget of kb.k ended the reused
    memory's chain, and it was read as the end of the first memory's too: the merge finished with
    one memory under two ids, kb.y and kb.v."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", unlike("xray"), "--id", "kb.x", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "rename", "kb.x", "kb.y", check=True)
    invoke_cli("--kb", a, "update", "kb.y", "--content", unlike("alpha"), check=True)
    invoke_cli("--kb", a, "save", unlike("other"), "--id", "kb.x", "--reuse-id", "-e", "shop.orders.amount",
               check=True)
    invoke_cli("--kb", a, "rename", "kb.x", "kb.k", check=True)
    invoke_cli("--kb", a, "forget", "kb.k", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "rename", "kb.x", "kb.v", check=True)
    invoke_cli("--kb", b, "update", "kb.v", "--content", unlike("bravo"), check=True)
    git(b, "fetch", "-q", "origin")
    merged = invoke_cli("--kb", b, "merge", "origin/main")
    assert (merged.returncode, merged.stderr.startswith(
        "Error: This branch renamed memories/kb.x.yaml to kb.v, and origin/main renamed it to kb.y")) == (1, True), \
        merged.stderr


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_link_to_an_id_renamed_to_one_forgotten_and_saved_again_is_stripped(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """a renamed kb.x to kb.y, forgot kb.y and saved another memory as kb.y; b, not yet synced,
    linked memory:kb.x. b's sync pointed the link at kb.y, the other memory: the chain ended in
    the forget, so the link is to a forgotten memory."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", unlike("xray"), "--id", "kb.x", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "rename", "kb.x", "kb.y", check=True)
    invoke_cli("--kb", a, "forget", "kb.y", check=True)
    invoke_cli("--kb", a, "save", unlike("yankee"), "--id", "kb.y", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "save", unlike("bravo"), "--id", "kb.q", "-e", "memory:kb.x", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert (synced.stdout, synced.stderr) == ("Synced main with origin: rebased, 3 pulled, 2 pushed.\n"
                                              "  stripped links to forgotten memories: memory:kb.x from kb.q\n", "")
    assert "memory:kb." not in (b / "memories" / "kb.q.yaml").read_text()
