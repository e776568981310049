"""Renames crossing on two lines of history: clone a forgets kb.y and renames kb.x to kb.y (memory
X now at kb.y), clone b renames kb.y to kb.m (memory Y). git sees a edit kb.y and b move it, and
merged or rebased put X's text under kb.m, Y gone, whichever side synced first. Real clones of one
bare remote; every ``slayer-kb`` command run in this process, git as git."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from testing import CliRunner, default_first, git, given_again, keeping, typed_steps, unlike

BEE = ("--author", "Bee <bee@example.com>")


def _crossed(tmp_path: Path, invoke_cli: CliRunner) -> tuple[Path, Path]:
    """kb.x, kb.y, kb.k (links kb.x) and kb.l (links kb.y) on both clones; a forgets kb.y and
    renames kb.x to kb.y (kb.k's link follows); b renames kb.y to kb.m (kb.l's link follows) and
    saves kb.q linking kb.m."""
    a, b = given_again(tmp_path, invoke_cli, also=(("kilo", "kb.k", "memory:kb.x"), ("lima", "kb.l", "memory:kb.y")))
    invoke_cli("--kb", b, *BEE, "rename", "kb.y", "kb.m", check=True)
    invoke_cli("--kb", b, *BEE, "save", unlike("quebec"), "--id", "kb.q", "-e", "memory:kb.m", check=True)
    return a, b


def _memories(clone: Path) -> dict[str, tuple[str, list[str]]]:
    """Each memory file: the first word of its text, and its links to memories."""
    return {path.name: (path.read_text().split("learning: ", 1)[1].split(" ", 1)[0],
                        re.findall(r"memory:\S+", path.read_text()))
            for path in sorted((clone / "memories").glob("*.yaml"))}


def _expected(keep: bool) -> dict[str, tuple[str, list[str]]]:
    """X at kb.y, kb.k's link on it; Y at kb.m, linked, if kept, else gone with the links to it."""
    kept = {"kb.m.yaml": ("yank0word", [])} if keep else {}
    to_m = ["memory:kb.m"] if keep else []
    return {"kb.k.yaml": ("kilo0word", ["memory:kb.y"]), "kb.l.yaml": ("lima0word", to_m), **kept,
            "kb.q.yaml": ("quebec0word", to_m), "kb.y.yaml": ("xray0word", [])}


def _both_agree(invoke_cli: CliRunner, a: Path, b: Path, keep: bool) -> None:
    for clone in (a, b):
        invoke_cli("--kb", clone, "sync", check=True)
    for clone in (a, b):
        assert _memories(clone) == _expected(keep)
        assert invoke_cli("--kb", clone, "validate", check=True).stdout.endswith("no problems.\n")


def _stop_words(forgetter_here: bool) -> str:
    """The stop's words on the forget against the rename, and on the rename onto kb.y, by whether
    this branch is the side that forgot kb.y."""
    forgetter, renamer = ("this branch", "origin/main") if forgetter_here else ("origin/main", "this branch")
    return (f"{'This branch' if forgetter_here else forgetter} forgot memories/kb.y.yaml, which {renamer} renamed to "
            f"kb.m; {forgetter} forgot kb.y and then renamed kb.x to kb.y, and {renamer} renamed kb.y to kb.m: git "
            "takes that for an edit of kb.y and puts the other memory's text under kb.m")


def _choice(forgetter_here: bool) -> str:
    """The step that keeps kb.m or lets it go, the forgetting side's choice first."""
    stripped = "the links to it stripped by the sync (validate names them until then)"
    return (f"git rm memories/kb.m.yaml to keep it forgotten, {stripped} (or git add memories/kb.m.yaml to keep it, "
            "renamed)" if forgetter_here else
            f"git add memories/kb.m.yaml to keep it, renamed (or git rm memories/kb.m.yaml to let it go, {stripped})")


# The choice's steps are the same merge's in a merge and a sync: each meets each order once across
# the two tests. This one's first runs by default, the one crossing of its kind there
# (docs/testing.md, "The crossing suites").
@pytest.mark.parametrize(("forgetter_merges", "keep"), default_first([(True, False), (False, True)]))
def test_a_merge_of_a_rename_onto_an_id_the_other_side_renamed_away_stops_on_the_forget(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_merges: bool, keep: bool) -> None:
    """The merge finished with X's text at kb.m and Y gone. It keeps X at kb.y and holds kb.m as a
    forget against a rename; the steps keep Y as kb.m or let it go, and both clones agree."""
    a, b = _crossed(tmp_path, invoke_cli)
    first, second = (b, a) if forgetter_merges else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    git(second, "fetch", "-q", "origin")
    stopped = invoke_cli("--kb", second, "merge", "origin/main")
    words = _stop_words(forgetter_merges)
    assert (stopped.returncode, stopped.stderr) == (1, (
        f"Error: {words}; the merge stopped, and git -C {second} merge --abort would put the branch back as it was. "
        f"To merge by hand: cd {second}; {_choice(forgetter_merges)}; slayer-kb validate; git commit --no-edit; "
        "slayer-kb sync.\n"))
    assert (second / "memories" / "kb.y.yaml").read_text().startswith("learning: xray0word")
    assert (second / "memories" / "kb.m.yaml").read_text().startswith("learning: yank0word")
    said = typed_steps(invoke_cli, stopped.stderr, keeping(keep))
    # prune refuses until the merge is committed; the sync the steps end with strips them too.
    dangling = ("' refers to a memory that does not exist (once the merge is concluded ('git commit --no-edit' when "
                "its conflicts are resolved, or 'git merge --abort'), run 'slayer-kb prune' to strip it)\n")
    assert said[0] == ("Checked 5 files: no problems.\n" if keep else
                       f"memories/kb.l.yaml:3: 'memory:kb.m{dangling}memories/kb.q.yaml:3: 'memory:kb.m{dangling}"
                       "2 problems in 2 files (4 files checked)\n"), said
    assert said[1].endswith("  stripped links to forgotten memories: memory:kb.m from kb.l, memory:kb.m from kb.q\n"
                            if not keep else " pushed.\n"), said
    _both_agree(invoke_cli, a, b, keep)


@pytest.mark.slow
@pytest.mark.parametrize(("forgetter_syncs", "keep"), [(True, True), (False, False)])
def test_a_sync_of_a_rename_onto_an_id_the_other_side_renamed_away_stops_on_the_forget(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_syncs: bool, keep: bool) -> None:
    """Synced after the forgetter, the renamer's rebase put X's text at kb.m without a word; synced
    first, the forgetter's stop named the forget alone. Either way the sync stops, the repository
    as it was, naming the forget, both renames and the merge whose steps settle it."""
    a, b = _crossed(tmp_path, invoke_cli)
    first, second = (b, a) if forgetter_syncs else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    head = git(second, "rev-parse", "HEAD")
    stopped = invoke_cli("--kb", second, "sync")
    words = _stop_words(forgetter_syncs)
    assert (stopped.returncode, stopped.stderr) == (1, (
        f"Error: {words}; the repository is back as it was. To merge by hand: cd {second}; git fetch origin; slayer-kb "
        f"merge origin/main (it stops on the conflict); {_choice(forgetter_syncs)}; slayer-kb validate; git commit "
        "--no-edit; slayer-kb sync.\n"))
    assert git(second, "rev-parse", "HEAD") == head
    assert git(second, "status", "--porcelain") == ""
    typed_steps(invoke_cli, stopped.stderr, keeping(keep))
    _both_agree(invoke_cli, a, b, keep)


@pytest.mark.slow
def test_a_rebase_of_a_rename_onto_an_id_the_other_side_renamed_away_is_refused(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """No pick of git's stops on it: the rebase finished with X's text at kb.m. Refused, naming the
    merge that stops on it; that merge's steps settle it."""
    a, b = _crossed(tmp_path, invoke_cli)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    head = git(b, "rev-parse", "HEAD")
    refused = invoke_cli("--kb", b, "rebase", "origin/main")
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: origin/main forgot kb.y and then renamed kb.x to kb.y, and your commits renamed kb.y to kb.m: git "
        "takes that for an edit of kb.y and puts the other memory's text under kb.m. A rebase would replay one onto "
        f"the other without a stop, so nothing was rebased. Run 'slayer-kb --kb {b} merge origin/main' instead: it "
        "keeps the memory given kb.y where it is, and stops on the forget against the rename with the steps to keep either.\n"))
    assert git(b, "rev-parse", "HEAD") == head
    stopped = invoke_cli("--kb", b, "merge", "origin/main")
    typed_steps(invoke_cli, stopped.stderr, keeping(True))
    _both_agree(invoke_cli, a, b, keep=True)


@pytest.mark.slow
@pytest.mark.parametrize("forgetter_checks", [True, False])
def test_validate_against_names_a_rename_onto_an_id_the_other_side_renamed_away(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_checks: bool) -> None:
    """A plain git merge (a pull request's button) puts X's text at kb.m without a word, and
    validate --against and review said nothing of it, but named kb.k's link to kb.y (X's, on the
    forgetting side) as one to a memory renamed to kb.m, which slayer-kb merge would point there."""
    a, b = _crossed(tmp_path, invoke_cli)
    first, second = (b, a) if forgetter_checks else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    git(second, "fetch", "-q", "origin")
    checked = invoke_cli("validate", "--against", "origin/main", cwd=second)
    forgetter, renamer = ("this branch", "origin/main") if forgetter_checks else ("origin/main", "this branch")
    merge = "Run 'git fetch origin && slayer-kb merge origin/main': it"
    # kb.k's link to kb.y, X's on the forgetting side, is no link to a memory renamed to kb.m: not named.
    assert (checked.returncode, checked.stdout) == (1, (
        "memories/kb.l.yaml:1: origin/main wrote this memory too since this branch parted from it, in lines git's "
        f"merge cannot join: a plain git merge of this branch stops on it. {merge} merges both sides' revisions of a "
        "topic key, and fields each side changed alone, and stops on two edits of one field (two memories under one "
        "id among them) with the steps to merge by hand\n"
        f"memories/kb.{'y' if forgetter_checks else 'm'}.yaml:1: {forgetter} forgot kb.y and then renamed kb.x to "
        f"kb.y, and {renamer} renamed kb.y to kb.m: git takes that for an edit of kb.y and puts the other memory's "
        f"text under kb.m; a plain git merge of this branch does that without a word. {merge} keeps the memory given kb.y "
        "where it is, and stops on the forget against the rename with the steps to keep either\n"
        f"2 problems in 2 files ({3 if forgetter_checks else 5} files checked)\n"))
    # review: the same, and no link of kb.k's named either.
    reviewed = json.loads(invoke_cli("--kb", second, "review", "origin/main", "--json").stdout)
    assert reviewed["problems"] == [
        f"memories/kb.{'y' if forgetter_checks else 'm'}.yaml:1: {forgetter} forgot kb.y and then renamed "
        f"kb.x to kb.y, and {renamer} renamed kb.y to kb.m: git takes that for an edit of kb.y and puts the other "
        f"memory's text under kb.m; a plain git merge of this branch does that without a word. Run 'git -C {second} "
        f"fetch origin && slayer-kb --kb {second} merge origin/main': it keeps the memory given kb.y where it is, and stops on "
        "the forget against the rename with the steps to keep either"]


@pytest.mark.slow
def test_a_save_onto_a_forgotten_id_the_other_side_renamed_away_stops_on_the_forget_too(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """a forgets kb.y and saves another memory as kb.y (no rename); b edits kb.y, then renames it
    to kb.m. The merge put a's new memory at kb.m, b's edit merged into it; now it stops."""
    a, b = given_again(tmp_path, invoke_cli, by_rename=False)
    invoke_cli("--kb", b, *BEE, "update", "kb.y", "--description", "b's summary", check=True)
    invoke_cli("--kb", b, *BEE, "rename", "kb.y", "kb.m", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    stopped = invoke_cli("--kb", b, "merge", "origin/main")
    assert (stopped.returncode, stopped.stderr.split("; the merge stopped")[0]) == (1, (
        "Error: origin/main forgot memories/kb.y.yaml, which this branch renamed to kb.m; origin/main forgot kb.y and "
        "then saved another memory as kb.y, and this branch renamed kb.y to kb.m: git takes that for an edit of kb.y "
        "and puts the other memory's text under kb.m"))
    assert typed_steps(invoke_cli, stopped.stderr, keeping(True))[0] == "Checked 3 files: no problems.\n"
    kept = (b / "memories" / "kb.m.yaml").read_text()
    assert kept.startswith("learning: yank0word") and "description: b's summary\n" in kept
    assert (b / "memories" / "kb.y.yaml").read_text().startswith("learning: zulu0word")


@pytest.mark.slow
@pytest.mark.parametrize(("forgetter_second", "command"), [(True, "sync"), (False, "sync"), (True, "merge"), (False, "merge")])
def test_an_edit_of_the_memory_renamed_onto_the_id_lands_where_it_went(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_second: bool, command: str) -> None:
    """b also edits kb.x (X), which a renamed to kb.y. The stop held kb.x as a forget against an
    edit (from a, as a memory both created), its step keeping X at kb.x and kb.y. The edit goes
    to kb.y, as across any rename: the stop is the crossing's alone, and its steps settle it."""
    a, b = _crossed(tmp_path, invoke_cli)
    invoke_cli("--kb", b, *BEE, "update", "kb.x", "--description", "b's summary of X", check=True)
    first, second = (b, a) if forgetter_second else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    git(second, "fetch", "-q", "origin")
    stopped = invoke_cli("--kb", second, *(["merge", "origin/main"] if command == "merge" else ["sync"]))
    assert (stopped.returncode, stopped.stderr.split("; the ")[0]) == (1, f"Error: {_stop_words(forgetter_second)}")
    assert "kb.x.yaml" not in stopped.stderr
    typed_steps(invoke_cli, stopped.stderr, keeping(True))
    _both_agree(invoke_cli, a, b, keep=True)
    for clone in (a, b):
        assert "description: b's summary of X\n" in (clone / "memories" / "kb.y.yaml").read_text()


@pytest.mark.slow
def test_two_edits_of_the_memory_renamed_onto_the_id_stop_there(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """a edits X at kb.y and b at kb.x, one field: held at kb.y as two edits, both in git's markers."""
    a, b = _crossed(tmp_path, invoke_cli)
    invoke_cli("--kb", a, "update", "kb.y", "--description", "a's summary of X", check=True)
    invoke_cli("--kb", b, *BEE, "update", "kb.x", "--description", "b's summary of X", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    stopped = invoke_cli("--kb", b, "merge", "origin/main")
    assert (stopped.returncode, stopped.stderr.split("; the merge stopped")[0]) == (1, (
        f"Error: This branch and origin/main both edited memories/kb.y.yaml; {_stop_words(False)}"))
    assert "kb.x.yaml" not in stopped.stderr
    held = (b / "memories" / "kb.y.yaml").read_text()
    assert "<<<<<<< ours\ndescription: b's summary of X\n" in held and "description: a's summary of X\n" in held
    assert not (b / "memories" / "kb.x.yaml").exists()


@pytest.mark.slow
def test_a_memory_the_forgetting_side_saved_at_the_renames_end_is_not_lost(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """a forgets kb.y, renames kb.x to kb.y and saves a memory of its own as kb.m; b renames kb.y
    to kb.m. Held as a crossing, kb.m was held as b's rename alone: a's memory at kb.m was at no
    stage, the stop did not name it, and its steps lost it. Then git's stop on two files created
    at one id kept b's memory under another id while b's links still said kb.m. Two memories
    given kb.m: the merge refuses before writing anything, b's to get another id first."""
    a, b = given_again(tmp_path, invoke_cli)
    time.sleep(1.01 - time.time() % 1)  # another second: another created_at
    invoke_cli("--kb", a, "save", unlike("mike"), "--id", "kb.m", "-e", "shop.orders", check=True)
    invoke_cli("--kb", b, *BEE, "rename", "kb.y", "kb.m", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    head = git(b, "rev-parse", "HEAD")
    stopped = invoke_cli("--kb", b, "merge", "origin/main")
    assert (stopped.returncode, stopped.stderr.split(" (created")[0]) == (
        1, "Error: Your commits renamed kb.y to kb.m, and origin/main saved a new memory as kb.m")
    assert "slayer-kb rename kb.m kb.m-2 (or another id: it rewrites your links to it)" in stopped.stderr
    assert (git(b, "rev-parse", "HEAD"), git(b, "status", "--porcelain")) == (head, "")


def _moved_on_words(forgetter_here: bool, b_renames: bool) -> tuple[str, str]:
    """What the stop says of a's forget against b's change of kb.y, and the step that keeps either."""
    forgetter, changer = ("this branch", "origin/main") if forgetter_here else ("origin/main", "this branch")
    did = "renamed to kb.m" if b_renames else "edited"
    path = f"memories/kb.{'m' if b_renames else 'y'}.yaml"
    stripped = ", the links to it stripped by the sync (validate names them until then)" if b_renames else ""
    if forgetter_here:
        choice = (f"git rm {path} to keep it forgotten{stripped} (or git add {path} to keep "
                  f"{'it, renamed' if b_renames else changer + chr(39) + 's edit'})")
    else:
        choice = f"git add {path} to keep {'it, renamed' if b_renames else 'your edit'} (or git rm {path} to let it go{stripped})"
    return f"{forgetter} forgot memories/kb.y.yaml, which {changer} {did}".replace("this", "This", forgetter_here), choice


# Each command meets each order, each change of b's and each choice, not every combination; the
# id given by a save, each command and order once, with the choice that stopped twice.
@pytest.mark.slow
@pytest.mark.parametrize(("command", "forgetter_second", "b_renames", "keep", "by_rename"), [
    ("sync", False, True, False, True), ("sync", True, False, True, False), ("merge", True, True, False, True),
    ("merge", False, True, True, False), ("merge", True, False, True, True), ("merge", False, False, False, True),
    ("merge", False, True, True, True), ("sync", True, False, False, True), ("sync", False, False, True, True),
    ("sync", True, True, True, True), ("sync", False, True, True, False), ("merge", True, False, True, False)])
def test_an_id_given_again_and_renamed_on_stops_on_the_forget_alone(
        tmp_path: Path, invoke_cli: CliRunner, command: str, forgetter_second: bool, b_renames: bool,
        keep: bool, by_rename: bool) -> None:
    """a forgets kb.y, renames kb.x to kb.y (or saves a new memory as kb.y) and kb.y on to kb.z; b
    edits kb.y (or renames it to kb.m). The stop read a's renames as one of kb.y to kb.z: it named
    a's forget of kb.x against a rename, or two renames of kb.y whose step folded Y into X at kb.z;
    a sync's rebase, once its steps kept b's edit at kb.y, stopped again on a's rename (or save)
    onto it. Now it names a's forget of kb.y against b's change, the sync merges, and either
    choice, typed as printed, leaves a's memory at kb.z and Y kept or let go on both clones."""
    a, b = given_again(tmp_path, invoke_cli, by_rename=by_rename)
    invoke_cli("--kb", a, "rename", "kb.y", "kb.z", check=True)
    invoke_cli("--kb", b, *BEE, *(("rename", "kb.y", "kb.m") if b_renames else
                                  ("update", "kb.y", "--description", "b's summary")), check=True)
    first, second = (b, a) if forgetter_second else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    git(second, "fetch", "-q", "origin")
    stopped = invoke_cli("--kb", second, *(("merge", "origin/main") if command == "merge" else ("sync",)))
    what, choice = _moved_on_words(forgetter_second, b_renames)
    where = (f"the merge stopped, and git -C {second} merge --abort would put the branch back as it was. To merge by "
             f"hand: cd {second}; " if command == "merge" else
             f"the repository is back as it was. To merge by hand: cd {second}; git fetch origin; slayer-kb merge "
             "origin/main (it stops on the conflict); ")
    assert (stopped.returncode, stopped.stderr) == (1, (
        f"Error: {what}; {where}{choice}; slayer-kb validate; git commit --no-edit; slayer-kb sync.\n"))
    typed_steps(invoke_cli, stopped.stderr, keeping(keep))
    for clone in (a, b):
        invoke_cli("--kb", clone, "sync", check=True)
    y = {f"kb.{'m' if b_renames else 'y'}.yaml": ("yank0word", [])} if keep else {}
    at_z = {"kb.z.yaml": ("xray0word", [])} if by_rename else {"kb.x.yaml": ("xray0word", []), "kb.z.yaml": ("zulu0word", [])}
    for clone in (a, b):
        assert _memories(clone) == {**y, **at_z}
        if keep and not b_renames:
            assert "description: b's summary\n" in (clone / "memories" / "kb.y.yaml").read_text()
        assert invoke_cli("--kb", clone, "validate", check=True).stdout.endswith("no problems.\n")


@pytest.mark.slow
@pytest.mark.parametrize("forgetter_rebases", [True, False])
def test_a_rebase_of_an_id_given_again_and_renamed_on_is_refused(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_rebases: bool) -> None:
    """The scenario above, rebased by hand: a's rebase stopped on its forget of kb.y, and once its
    steps kept b's edit there, again on its rename of kb.x onto kb.y, as two memories created at
    one id. Refused from either clone, naming the side that forgot and the merge, whose steps
    settle it (b's, as a sync of b's merges)."""
    a, b = given_again(tmp_path, invoke_cli)
    invoke_cli("--kb", a, "rename", "kb.y", "kb.z", check=True)
    invoke_cli("--kb", b, *BEE, "update", "kb.y", "--description", "b's summary", check=True)
    first, second = (b, a) if forgetter_rebases else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    git(second, "fetch", "-q", "origin")
    head = git(second, "rev-parse", "HEAD")
    refused = invoke_cli("--kb", second, "rebase", "origin/main")
    said = ("Your commits forgot kb.y, then gave the id to another memory and moved that on, and origin/main changed "
            "kb.y: a rebase replays your commits one by one, stopping on the forget, and again on the memory given kb.y "
            "once the one origin/main changed is kept there." if forgetter_rebases else
            "origin/main forgot kb.y, then gave the id to another memory and moved that on, and your commits changed "
            "kb.y: sync merges such a branch rather than rebasing it.")
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: {said} Nothing was rebased. Run 'slayer-kb --kb {second} merge origin/main' instead: it stops once, "
        "on the forget against that change, with the steps to keep either.\n"))
    assert git(second, "rev-parse", "HEAD") == head
    stopped = invoke_cli("--kb", second, "merge", "origin/main")
    typed_steps(invoke_cli, stopped.stderr, keeping(True))
    for clone in (a, b):
        invoke_cli("--kb", clone, "sync", check=True)
    for clone in (a, b):
        assert _memories(clone) == {"kb.y.yaml": ("yank0word", []), "kb.z.yaml": ("xray0word", [])}
        assert "description: b's summary\n" in (clone / "memories" / "kb.y.yaml").read_text()
