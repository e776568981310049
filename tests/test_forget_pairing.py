"""A forget and a short save are no rename: clones of one bare remote, both forgetting memory 1
and saving new short observations, which share most of their lines (type, project, scope,
session, counts) with 1 and each other. git's rename detection (50% alike) reads each side's
delete and add as a move of 1; the two files' created_at differ (a move keeps it), so where every
pair git's guess makes is such a forget and save, ``merge``, ``rebase`` and ``sync`` let git pair
exact moves alone: the new memories are kept, 1 stays forgotten, and an edit of 1 against its
forget is named as such. Beside a real move that was edited git's guess stays on, and the stop
names the guessed move with steps that undo it."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing import CliRunner, default_first, git, make_team, traced_git

# b's commits by another author: two clones forgetting 1 in one second would otherwise make
# one commit, byte for byte, which git counts as shared history.
_BEE = ("--author", "Bee <bee@example.com>")


pytestmark = pytest.mark.usefixtures("minutes_apart")


def _observation(invoke_cli: CliRunner, kb: Path, title: str, *author: str) -> None:
    invoke_cli(*author, "--kb", kb, "save", title, "--title", title, "--project", "api", check=True)


def _forgot_and_saved(tmp_path: Path, invoke_cli: CliRunner, renamed: bool = False) -> tuple[Path, Path]:
    """Memory 1 synced to both clones, then forgotten by a, which saves memory 2 alike and syncs;
    ``renamed``: a renames another memory (kb.x, a text like no other) to kb.y and edits it first,
    a move git must follow into the edited file, so that its rename guess stays on for the merge."""
    _bare, (a, b) = make_team(tmp_path)
    _observation(invoke_cli, a, "Revenue")
    if renamed:
        invoke_cli("--kb", a, "save", " ".join(f"xray{n}word" for n in range(40)), "--id", "kb.x", "-e",
                   "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    if renamed:
        invoke_cli("--kb", a, "rename", "kb.x", "kb.y", check=True)
        invoke_cli("--kb", a, "update", "kb.y", "--description", "x-ray words", check=True)
    invoke_cli("--kb", a, "forget", "1", check=True)
    _observation(invoke_cli, a, "Refunds")
    invoke_cli("--kb", a, "sync", check=True)
    return a, b


def _take_in(invoke_cli: CliRunner, b: Path, how: str) -> str:
    return invoke_cli("--kb", b, how, *([] if how == "sync" else ["origin/main"]), check=True).stdout


def _memories(kb: Path) -> list[str]:
    return sorted(path.name for path in (kb / "memories").iterdir())


# Whether b saves too, synced or merged.
@pytest.mark.slow
@pytest.mark.parametrize(("how", "b_saves"), [("sync", True), ("sync", False), ("merge", True), ("merge", False)])
def test_both_sides_forgetting_a_memory_and_saving_new_ones_alike_keep_both(
        tmp_path: Path, invoke_cli: CliRunner, how: str, b_saves: bool) -> None:
    """Not "This branch forgot memories/2.yaml, which origin/main edited" with a step that drops
    a's new memory: nobody edited or renamed 1, and 2 (and b's 101) are new memories."""
    a, b = _forgot_and_saved(tmp_path, invoke_cli)
    invoke_cli(*_BEE, "--kb", b, "forget", "1", check=True)
    if b_saves:
        _observation(invoke_cli, b, "Tax", *_BEE)
    git(b, "fetch", "-q", "origin")
    base = git(b, "merge-base", "HEAD", "origin/main").strip()
    # a's forget and save is a move of 1 to git's eye (how alike: the dates' seconds), b's too.
    for tip, new in (("origin/main", "2"), *((("HEAD", "101"),) if b_saves else ())):
        status, *paths = git(b, "diff", "-M", "--name-status", base, tip).split()
        assert (status[0], paths) == ("R", ["memories/1.yaml", f"memories/{new}.yaml"])
    with traced_git(tmp_path) as runs:
        out = _take_in(invoke_cli, b, how)
    # All pairs are forgets and saves, so a merge asks both: each side's range, no commit's (sync
    # replays b's commits itself here, no git rebase, and asks none).
    assert (len(runs("diff -M")), len(runs("log -M"))) == {"sync": (0, 0), "merge": (2, 0)}[how]
    # Not "merged both sides of: memories/1.yaml": both forgot it, no change of it to join; b's
    # forget is dropped as git rebase drops a change the upstream made already.
    assert out == {"sync": f"Synced main with origin: rebased, 2 pulled, {int(b_saves)} pushed.\n",
                   "merge": f"Merged origin/main; run slayer-kb --kb {b} sync to push.\n"}[how]
    kept = ["101.yaml", "2.yaml"] if b_saves else ["2.yaml"]
    assert _memories(b) == kept
    assert "title: Refunds\n" in (b / "memories" / "2.yaml").read_text()
    assert not b_saves or "title: Tax\n" in (b / "memories" / "101.yaml").read_text()
    assert invoke_cli("--kb", b, "validate", check=True).stdout.endswith("no problems.\n")
    if how == "merge":
        invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    assert _memories(a) == kept


# Synced by default, the one crossing of its kind there (docs/testing.md, "The crossing suites").
@pytest.mark.parametrize("how", default_first(["sync", "merge", "rebase"]))
def test_a_forget_and_a_save_alike_against_an_edit_is_a_forget_against_an_edit(
        tmp_path: Path, invoke_cli: CliRunner, how: str) -> None:
    """b's edit of 1 went into a's new memory 2, and the stop said both edited memories/2.yaml,
    its steps merging b's edit into an unrelated memory: a forgot 1, b edited it."""
    _a, b = _forgot_and_saved(tmp_path, invoke_cli)
    invoke_cli(*_BEE, "--kb", b, "update", "1", "--content", "edited on b", check=True)
    if how != "sync":
        git(b, "fetch", "-q", "origin")
    proc = invoke_cli("--kb", b, how, *([] if how == "sync" else ["origin/main"]))
    assert proc.returncode == 1
    cd = f"cd {b}; "
    if how == "sync":
        assert proc.stderr == (
            "Error: origin/main forgot memories/1.yaml, which your commits edited; the repository is back as it "
            f"was. To merge by hand: {cd}git fetch origin; slayer-kb rebase origin/main (it stops on the conflict); "
            "git add memories/1.yaml to keep your edit (or git rm memories/1.yaml to let it go); slayer-kb "
            "validate; slayer-kb rebase --continue (a later commit that stops says so again); slayer-kb sync.\n")
        assert _memories(b) == ["1.yaml"]
        return
    if how == "rebase":
        assert proc.stderr == (
            "Error: origin/main forgot memories/1.yaml, which your commits edited; the rebase stopped at commit 1 of 1 "
            f"('memory: update 1 (learning)'), and slayer-kb --kb {b} rebase --abort would put the branch back as it "
            f"was. To merge by hand: {cd}git add memories/1.yaml to keep your edit (or git rm memories/1.yaml to let "
            "it go); slayer-kb validate; slayer-kb rebase --continue (a later commit that stops says so again); "
            "slayer-kb sync.\n")
        git(b, "add", "memories/1.yaml")
        invoke_cli("--kb", b, "rebase", "--continue", check=True)
    else:
        assert proc.stderr == (
            f"Error: origin/main forgot memories/1.yaml, which this branch edited; the merge stopped, and git -C {b} "
            f"merge --abort would put the branch back as it was. To merge by hand: {cd}git add memories/1.yaml to "
            "keep your edit (or git rm memories/1.yaml to let it go); slayer-kb validate; git commit --no-edit; "
            "slayer-kb sync.\n")
        assert git(b, "status", "--short") == "UD memories/1.yaml\nA  memories/2.yaml\n"
        git(b, "add", "memories/1.yaml")
        git(b, "commit", "-q", "--no-edit")
    # The steps finish it: b's edit kept, a's new memory as a saved it.
    invoke_cli("--kb", b, "sync", check=True)
    assert "learning: edited on b\n" in (b / "memories" / "1.yaml").read_text()
    assert "learning: Refunds\n" in (b / "memories" / "2.yaml").read_text()


@pytest.mark.slow
def test_beside_a_rename_two_forgets_and_saves_alike_stop_in_words_and_steps_that_keep_both(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A renamed memory edited on one side keeps git's rename guess on for the merge, which reads
    the two forgets and saves as two renames of 1. The stop said "This branch forgot
    memories/2.yaml, which origin/main edited" and its step 'git rm memories/2.yaml' dropped a's
    new memory; each file held both saves' lines in conflict markers."""
    a, b = _forgot_and_saved(tmp_path, invoke_cli, renamed=True)
    saved = (a / "memories" / "2.yaml").read_text()
    invoke_cli(*_BEE, "--kb", b, "forget", "1", check=True)
    _observation(invoke_cli, b, "Tax", *_BEE)
    git(b, "fetch", "-q", "origin")
    proc = invoke_cli("--kb", b, "merge", "origin/main")
    assert (proc.returncode, proc.stderr) == (1, (
        "Error: origin/main saved memories/2.yaml, a new memory git took for a move of memories/1.yaml, which it "
        "forgot; this branch saved memories/101.yaml, a new memory git took for a move of memories/1.yaml, which it "
        f"forgot; this branch and origin/main both moved or forgot memories/1.yaml; the merge stopped, and git -C {b} "
        f"merge --abort would put the branch back as it was. To merge by hand: cd {b}; git checkout MERGE_HEAD -- "
        "memories/2.yaml to keep it as origin/main saved it; git checkout HEAD -- memories/101.yaml to keep it as "
        "this branch saved it; git rm -q memories/1.yaml (neither side keeps it); slayer-kb validate; git commit "
        "--no-edit; slayer-kb sync.\n"))
    for step in ("checkout MERGE_HEAD -- memories/2.yaml", "checkout HEAD -- memories/101.yaml",
                 "rm -q memories/1.yaml", "commit -q --no-edit"):
        git(b, *step.split())
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    for clone in (a, b):
        assert _memories(clone) == ["101.yaml", "2.yaml", "kb.y.yaml"]
        assert (clone / "memories" / "2.yaml").read_text() == saved
        assert "title: Tax\n" in (clone / "memories" / "101.yaml").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["sync", "merge", "rebase"])
def test_beside_a_rename_an_edit_against_a_forget_and_a_save_alike_says_so_and_its_steps_keep_both(
        tmp_path: Path, invoke_cli: CliRunner, how: str) -> None:
    """With git's rename guess on (a renamed memory edited on a's side), b's edit of 1 went into
    a's new memory 2, and the stop said both edited memories/2.yaml: the steps now keep 2 as a
    saved it and b's edit in 1."""
    a, b = _forgot_and_saved(tmp_path, invoke_cli, renamed=True)
    saved = (a / "memories" / "2.yaml").read_text()
    invoke_cli(*_BEE, "--kb", b, "update", "1", "--content", "edited on b", check=True)
    git(b, "fetch", "-q", "origin")
    proc = invoke_cli("--kb", b, how, *([] if how == "sync" else ["origin/main"]))
    merging = how == "merge"
    theirs, mine = ("MERGE_HEAD", "HEAD") if merging else ("HEAD", "REBASE_HEAD")
    steps = (f"git checkout {theirs} -- memories/2.yaml to keep that memory as origin/main saved it, then git "
             f"checkout {mine} -- memories/1.yaml to keep the edit of memories/1.yaml (or leave it forgotten); "
             "slayer-kb validate; " + ("git commit --no-edit" if merging else
                                      "slayer-kb rebase --continue (a later commit that stops says so again)")
             + "; slayer-kb sync.\n")
    where = {"sync": "the repository is back as it was",
             "merge": f"the merge stopped, and git -C {b} merge --abort would put the branch back as it was",
             "rebase": "the rebase stopped at commit 1 of 1 ('memory: update 1 (learning)'), and slayer-kb --kb "
                       f"{b} rebase --abort would put the branch back as it was"}[how]
    first = "git fetch origin; slayer-kb rebase origin/main (it stops on the conflict); " if how == "sync" else ""
    assert (proc.returncode, proc.stderr) == (1, (
        f"Error: {'This branch' if merging else 'Your commits'} edited memories/1.yaml, which origin/main forgot; git "
        f"took origin/main's new memory memories/2.yaml for a move of it and merged the edit into that; {where}. To "
        f"merge by hand: cd {b}; {first}{steps}"))
    if how == "sync":
        invoke_cli("--kb", b, "rebase", "origin/main")
    git(b, "checkout", theirs, "--", "memories/2.yaml")
    git(b, "checkout", mine, "--", "memories/1.yaml")
    if merging:
        git(b, "commit", "-q", "--no-edit")
    else:
        invoke_cli("--kb", b, "rebase", "--continue", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    for clone in (a, b):
        assert _memories(clone) == ["1.yaml", "2.yaml", "kb.y.yaml"]
        assert "learning: edited on b\n" in (clone / "memories" / "1.yaml").read_text()
        assert (clone / "memories" / "2.yaml").read_text() == saved
