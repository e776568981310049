"""An id given to another memory on one line of history while the other edits the memory it
named: clone a forgets kb.y and gives the id to another memory (``save --id kb.y`` of a new text,
or ``rename kb.x kb.y``), clone b edits kb.y. git sees two edits of one file, and merged (or
rebased) b's edit into a's new memory, whichever side synced first. Real clones of one bare
remote; every ``slayer-kb`` command run in this process, git as git, the steps a stop prints run
as printed (``testing.typed_steps``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing import (
    CliRunner,
    GitRuns,
    default_first,
    git,
    given_again,
    keeping,
    make_team,
    traced_git,
    typed_steps,
    unlike,
)

BEE = ("--author", "Bee <bee@example.com>")
PLAIN = "a plain git merge of this branch does the same, or stops on two edits of one memory where their lines meet"
MERGE = "Run 'git fetch origin && slayer-kb merge origin/main': it"


def _reused(tmp_path: Path, invoke_cli: CliRunner, by_rename: bool, folder: str = "") -> tuple[Path, Path]:
    """``given_again``, and b edits kb.y's description."""
    a, b = given_again(tmp_path, invoke_cli, by_rename=by_rename, folder=folder)
    invoke_cli("--kb", b, *BEE, "update", "kb.y", "--description", "b's summary", check=True)
    return a, b


def _gave(by_rename: bool) -> str:
    return "renamed kb.x to kb.y" if by_rename else "saved another memory as kb.y"


def _words(forgetter_here: bool, by_rename: bool, names: tuple[str, str] = ("this branch", "origin/main")) -> str:
    """What the side that forgot kb.y did, and the other, by whether this branch forgot it."""
    forgetter, editor = names if forgetter_here else names[::-1]
    return (f"{forgetter} forgot kb.y, which {editor} edited, and then {_gave(by_rename)}: git takes both for edits "
            "of one memory and merges that edit into the other memory")


def _opening(words: str) -> str:
    """``words`` opening a message: "this branch" and "your commits" capitalised, a ref as it is."""
    return words[:1].upper() + words[1:] if words.startswith(("this ", "your ")) else words


def _choice(forgetter_here: bool) -> str:
    """The step that lets the edited memory go or keeps it as kb.y-2, this branch's choice first."""
    path, aside = "memories/kb.y.yaml", "memories/kb.y-2.yaml"
    given, edited = ("--ours", "--theirs") if forgetter_here else ("--theirs", "--ours")
    keep = (f"test ! -e {aside} && git checkout {edited} {path} && mv {path} {aside} && git checkout {given} {path} "
            f"&& git add {path} {aside}")
    drop = f"git checkout {given} {path} && git add {path}"
    return (f"{drop} to keep it forgotten, yours at kb.y (or {keep} to keep the memory origin/main edited, as kb.y-2)"
            if forgetter_here else
            f"{keep} to keep the memory you edited, as kb.y-2, and origin/main's at kb.y (or {drop} to let it go)")


def _texts(clone: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted((clone / "memories").glob("*.yaml"))}


def _settled(invoke_cli: CliRunner, a: Path, b: Path, keep: bool, given: str, edited: str) -> None:
    """Both clones synced hold the memory given the id at kb.y as the forgetting side wrote it,
    and b's edited memory as kb.y-2 as b wrote it, if kept, else not at all (kb.x as it was,
    unless renamed to kb.y)."""
    x = {} if given.startswith("learning: xray") else {"kb.x.yaml": (a / "memories" / "kb.x.yaml").read_text()}
    for clone in (a, b):
        invoke_cli("--kb", clone, "sync", check=True)
    for clone in (a, b):
        texts = _texts(clone)
        assert texts == {**x, "kb.y.yaml": given, **({"kb.y-2.yaml": edited} if keep else {})}, texts
        assert invoke_cli("--kb", clone, "validate", check=True).stdout.endswith("no problems.\n")
    assert "description: b's summary\n" in edited and "description" not in given


# Each choice meets each order and each way of giving the id, not every combination. The first
# runs by default, the one crossing of its kind there (docs/testing.md, "The crossing suites").
@pytest.mark.parametrize(("forgetter_merges", "by_rename", "keep"), default_first([
    (True, False, True), (False, False, False), (True, True, False), (False, True, True)]))
def test_a_merge_of_an_id_given_again_against_an_edit_stops_on_the_forget(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_merges: bool, by_rename: bool, keep: bool) -> None:
    """The merge finished with b's edit merged into a's new memory at kb.y. It stops: a's memory in
    the work tree at kb.y, both versions held; the steps keep b's as kb.y-2 or let it go."""
    a, b = _reused(tmp_path, invoke_cli, by_rename)
    given, edited = (a / "memories" / "kb.y.yaml").read_text(), (b / "memories" / "kb.y.yaml").read_text()
    first, second = (b, a) if forgetter_merges else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    git(second, "fetch", "-q", "origin")
    stopped = invoke_cli("--kb", second, "merge", "origin/main")
    words = _words(forgetter_merges, by_rename)
    assert (stopped.returncode, stopped.stderr) == (1, (
        f"Error: {_opening(words)}; the merge stopped, and git -C {second} merge --abort would put the "
        f"branch back as it was. To merge by hand: cd {second}; {_choice(forgetter_merges)}; slayer-kb validate; git "
        "commit --no-edit; slayer-kb sync.\n"))
    assert (second / "memories" / "kb.y.yaml").read_text() == given
    assert len(git(second, "ls-files", "-u", "memories/kb.y.yaml").splitlines()) == 3  # base and both sides
    said = typed_steps(invoke_cli, stopped.stderr, keeping(keep))
    checked = 1 + keep + (not by_rename)
    assert said[0] == f"Checked {checked} file{'s' if checked > 1 else ''}: no problems.\n", said
    _settled(invoke_cli, a, b, keep, given, edited)


# Each choice (keep the edited memory or let it go) meets each order, each way of giving the id and
# each place of the KB, not every combination: the merge's steps behind them are the same.
@pytest.mark.slow
@pytest.mark.parametrize(("forgetter_syncs", "by_rename", "folder", "keep"), [
    (False, False, "", False), (True, True, "kb", True), (True, False, "", True), (True, True, "", False),
    (False, True, "", True), (False, False, "kb", False)])
def test_a_sync_of_an_id_given_again_against_an_edit_stops_on_the_forget(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_syncs: bool, by_rename: bool, folder: str, keep: bool) -> None:
    """Synced after the forgetter, the editor's rebase merged its edit into the new memory without a
    word; synced first, the forgetter's stop named a forget against an edit (or, after a rename,
    kb.x renamed by the other side), whose 'keep' step then met the new memory. Either way the
    sync stops, the repository as it was, naming the forget, the edit and the id given again, and
    the merge whose steps settle it; in a KB that is a folder of its repository (``kb``) too."""
    a, b = _reused(tmp_path, invoke_cli, by_rename, folder)
    given, edited = (a / "memories" / "kb.y.yaml").read_text(), (b / "memories" / "kb.y.yaml").read_text()
    first, second = (b, a) if forgetter_syncs else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    head = git(second, "rev-parse", "HEAD")
    stopped = invoke_cli("--kb", second, "sync")
    words = _words(forgetter_syncs, by_rename)
    assert (stopped.returncode, stopped.stderr) == (1, (
        f"Error: {_opening(words)}; the repository is back as it was. To merge by hand: cd {second}; git "
        f"fetch origin; slayer-kb merge origin/main (it stops on the conflict); {_choice(forgetter_syncs)}; slayer-kb "
        "validate; git commit --no-edit; slayer-kb sync.\n"))
    assert git(second, "rev-parse", "HEAD") == head
    assert git(second, "status", "--porcelain") == ""
    typed_steps(invoke_cli, stopped.stderr, keeping(keep))
    _settled(invoke_cli, a, b, keep, given, edited)


@pytest.mark.slow
@pytest.mark.parametrize("forgetter_merges", [True, False])
def test_an_edit_of_the_memory_renamed_onto_the_id_goes_with_it(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_merges: bool) -> None:
    """b also edits kb.x, which a renamed to kb.y. The stop held kb.x as a forget against that edit
    too, its step keeping the memory at kb.x and kb.y. The edit goes into a's memory at kb.y, held
    for the steps (the work tree's on a), and kb.x goes; the stop is the given id's alone."""
    a, b = _reused(tmp_path, invoke_cli, by_rename=True)
    invoke_cli("--kb", b, *BEE, "update", "kb.x", "--description", "b's summary of X", check=True)
    first, second = (b, a) if forgetter_merges else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    git(second, "fetch", "-q", "origin")
    stopped = invoke_cli("--kb", second, "merge", "origin/main")
    assert (stopped.returncode, stopped.stderr.split("; the merge stopped")[0]) == (
        1, f"Error: {_opening(_words(forgetter_merges, True))}")
    assert "kb.x.yaml" not in stopped.stderr
    typed_steps(invoke_cli, stopped.stderr, keeping(True))
    for clone in (a, b):
        invoke_cli("--kb", clone, "sync", check=True)
    for clone in (a, b):
        texts = _texts(clone)
        assert sorted(texts) == ["kb.y-2.yaml", "kb.y.yaml"]
        assert texts["kb.y.yaml"].startswith("learning: xray0word") and "description: b's summary of X\n" in texts["kb.y.yaml"]
        assert texts["kb.y-2.yaml"].startswith("learning: yank0word") and "description: b's summary\n" in texts["kb.y-2.yaml"]


@pytest.mark.slow
@pytest.mark.parametrize("forgetter_rebases", [True, False])
def test_a_rebase_of_an_id_given_again_against_an_edit_is_refused(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_rebases: bool) -> None:
    """The editor's rebase merged its edit into the new memory without a word; the forgetter's
    stopped on its forget, whose 'keep' step then met the new memory. Refused, naming the merge
    that stops on it; that merge's steps settle it."""
    a, b = _reused(tmp_path, invoke_cli, by_rename=False)
    given, edited = (a / "memories" / "kb.y.yaml").read_text(), (b / "memories" / "kb.y.yaml").read_text()
    first, second = (b, a) if forgetter_rebases else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    git(second, "fetch", "-q", "origin")
    head = git(second, "rev-parse", "HEAD")
    refused = invoke_cli("--kb", second, "rebase", "origin/main")
    words = _words(forgetter_rebases, False, ("your commits", "origin/main"))
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: {_opening(words)}. A rebase replays one side's commits onto the other's one by one, "
        f"which cannot keep the two memories apart, so nothing was rebased. Run 'slayer-kb --kb {second} merge "
        "origin/main' instead: it keeps the memory given kb.y where it is, and stops on the forget against the edit with the "
        "steps to keep either.\n"))
    assert git(second, "rev-parse", "HEAD") == head
    stopped = invoke_cli("--kb", second, "merge", "origin/main")
    typed_steps(invoke_cli, stopped.stderr, keeping(True))
    _settled(invoke_cli, a, b, True, given, edited)


@pytest.mark.slow
@pytest.mark.parametrize("forgetter_checks", [True, False])
def test_validate_against_names_an_id_given_again_against_an_edit(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_checks: bool) -> None:
    """A plain git merge (a pull request's button) merges b's edit into a's new memory, or stops on
    two edits of one memory (here: their lines meet), and validate --against and review named it
    as the latter, with slayer-kb merge to join them."""
    a, b = _reused(tmp_path, invoke_cli, by_rename=True)
    first, second = (b, a) if forgetter_checks else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    git(second, "fetch", "-q", "origin")
    checked = invoke_cli("validate", "--against", "origin/main", cwd=second)
    words = _words(forgetter_checks, True)
    settles = ("keeps the memory given kb.y where it is, and stops on the forget against the edit with the steps to keep "
               "either")
    assert (checked.returncode, checked.stdout) == (1, (
        f"memories/kb.y.yaml:1: {words}; {PLAIN}. {MERGE} "
        f"{settles}\n1 problem in 1 file (1 file checked)\n"))
    reviewed = json.loads(invoke_cli("--kb", second, "review", "origin/main", "--json").stdout)
    assert reviewed["problems"] == [
        f"memories/kb.y.yaml:1: {words}; {PLAIN}. Run "
        f"'git -C {second} fetch origin && slayer-kb --kb {second} merge origin/main': it {settles}"]


@pytest.mark.slow
def test_validate_against_names_an_id_given_again_once_beside_another_file_both_wrote(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """With another memory both sides edited, git's merge-tree listed kb.y among the files a plain
    merge stops on, and validate --against named it a second time, as revisions a merge joins
    (it does not: it stops on the forget against the edit)."""
    a, b = given_again(tmp_path, invoke_cli, also=(("zero", "kb.z", "shop.orders"),))
    invoke_cli("--kb", a, "update", "kb.z", "--description", "a's note on z", check=True)
    invoke_cli("--kb", b, *BEE, "update", "kb.y", "--description", "b's summary", check=True)
    invoke_cli("--kb", b, *BEE, "update", "kb.z", "--description", "b's note on z", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(a, "fetch", "-q", "origin")
    checked = invoke_cli("validate", "--against", "origin/main", cwd=a)
    named = [line.split(":", 1)[0] for line in checked.stdout.splitlines() if line.startswith("memories/")]
    assert (checked.returncode, named) == (1, ["memories/kb.y.yaml", "memories/kb.z.yaml"]), checked.stdout
    assert checked.stdout.endswith("\n2 problems in 2 files (2 files checked)\n"), checked.stdout


@pytest.mark.slow
def test_a_memory_brought_back_and_edited_against_a_rename_merges_as_before(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """a forgets kb.y, restores it (the same memory, not another one given its id) and edits it;
    b renames kb.y to kb.m. The merge stopped on a forget against a rename, saying a gave the id
    to another memory; it merges a's edit into kb.m, as git follows a rename."""
    a, b = _reused(tmp_path, invoke_cli, by_rename=False)
    git(a, "reset", "-q", "--hard", "HEAD~2")  # a's forget and save undone: a forgets kb.y anew
    invoke_cli("--kb", a, "forget", "kb.y", check=True)
    invoke_cli("--kb", a, "restore", "kb.y", "--rev", "HEAD~1", check=True)
    invoke_cli("--kb", a, "update", "kb.y", "--title", "Yank", check=True)
    git(b, "reset", "-q", "--hard", "HEAD~1")
    invoke_cli("--kb", b, *BEE, "rename", "kb.y", "kb.m", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(a, "fetch", "-q", "origin")
    merged = invoke_cli("--kb", a, "merge", "origin/main")
    assert (merged.returncode, merged.stderr) == (0, "")
    for clone in (a, b):
        invoke_cli("--kb", clone, "sync", check=True)
        texts = _texts(clone)
        assert list(texts) == ["kb.m.yaml", "kb.x.yaml"]
        assert "learning: yank0word" in texts["kb.m.yaml"] and "title: Yank\n" in texts["kb.m.yaml"]


# Each restore, merged by either side.
@pytest.mark.slow
@pytest.mark.parametrize(("older", "forgetter_merges"), [(True, True), (False, True), (True, False), (False, False)])
def test_a_memory_brought_back_with_another_learning_merges_the_edit(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_merges: bool, older: bool) -> None:
    """a forgets kb.y and restores it: a version older than the one they shared, or that one, whose
    learning a then corrects; b edits kb.y. Its learning unlike the one they parted with, the merge
    took the restored memory for another one saved as kb.y and stopped, its steps dropping b's edit
    or keeping the memory twice. It is the same memory (a restore's commit brought it back, its
    created_at kept): b's edit merges into it, and validate --against names nothing."""
    a, b = _reused(tmp_path, invoke_cli, by_rename=False)
    git(a, "reset", "-q", "--hard", "HEAD~2")  # a's forget and save undone
    git(b, "reset", "-q", "--hard", "HEAD~1")  # b's edit undone: made again below, after the learning
    if older:  # a version of kb.y older than the one both hold
        invoke_cli("--kb", a, "update", "kb.y", "--learning", unlike("yolk"), check=True)
        invoke_cli("--kb", a, "sync", check=True)
        invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "forget", "kb.y", check=True)
    invoke_cli("--kb", a, "restore", "kb.y", "--rev", "HEAD~2" if older else "HEAD~1", check=True)
    if not older:
        invoke_cli("--kb", a, "update", "kb.y", "--learning", unlike("yank") + " plus a correction", check=True)
    learning = (a / "memories" / "kb.y.yaml").read_text().split("\n")[0]
    invoke_cli("--kb", b, *BEE, "update", "kb.y", "--description", "b's summary", check=True)
    first, second = (b, a) if forgetter_merges else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    git(second, "fetch", "-q", "origin")
    checked = invoke_cli("validate", "--against", "origin/main", cwd=second)
    assert "forgot kb.y" not in checked.stdout, checked.stdout
    merged = invoke_cli("--kb", second, "merge", "origin/main")
    assert (merged.returncode, merged.stderr) == (0, "")
    for clone in (second, first):
        invoke_cli("--kb", clone, "sync", check=True)
        texts = _texts(clone)
        assert list(texts) == ["kb.x.yaml", "kb.y.yaml"]
        assert texts["kb.y.yaml"].startswith(learning + "\n") and "description: b's summary\n" in texts["kb.y.yaml"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["revert", "checkout"])
def test_a_memory_brought_back_by_git_merges_the_edit(tmp_path: Path, invoke_cli: CliRunner, how: str) -> None:
    """a forgets kb.y and brings it back with git (a revert of the forget, or its file checked out
    from before it and committed), then edits it; b edits kb.y. The commit that put the file back
    is no save of the id and no rename onto it, and the memory keeps its created_at: the same
    memory, so b's edit merges into it. It was taken for another memory given the id, and the
    merge stopped with steps that dropped b's edit or kept the memory twice."""
    a, b = _reused(tmp_path, invoke_cli, by_rename=False)
    git(a, "reset", "-q", "--hard", "HEAD~2")  # a's forget and save undone
    git(b, "reset", "-q", "--hard", "HEAD~1")  # b's edit undone: made again below
    invoke_cli("--kb", a, "forget", "kb.y", check=True)
    if how == "revert":
        git(a, "revert", "--no-edit", "HEAD")
    else:
        git(a, "checkout", "HEAD~1", "--", "memories/kb.y.yaml")
        git(a, "commit", "-qm", "kb.y back as it was")
    invoke_cli("--kb", a, "update", "kb.y", "--title", "A title", check=True)
    invoke_cli("--kb", b, *BEE, "update", "kb.y", "--description", "b's summary", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(a, "fetch", "-q", "origin")
    checked = invoke_cli("validate", "--against", "origin/main", cwd=a)
    assert "forgot kb.y" not in checked.stdout, checked.stdout
    merged = invoke_cli("--kb", a, "merge", "origin/main")
    assert (merged.returncode, merged.stderr) == (0, "")
    texts = _texts(a)
    assert list(texts) == ["kb.x.yaml", "kb.y.yaml"]
    assert "title: A title\n" in texts["kb.y.yaml"] and "description: b's summary\n" in texts["kb.y.yaml"]


MANY = 3


def _walks(runs: GitRuns, merges: bool = False) -> list[str]:
    """The 'git log' runs that look for memory files deleted (and added): a memory's, or all of
    them; with ``merges``, those of merges alone (``foldlog.held_folds``: a held rename's fold)."""
    return [run for run in runs("") if " log " in f" {run} " and ("--diff-filter=D" in run or "--diff-filter=AD" in run)
            and ("--merges" in run.split()) == merges]


@pytest.mark.slow
def test_crossings_ask_git_once_a_side_however_many_memories_both_edited(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Looking for an id given again against an edit cost a 'git log' of each memory both sides
    edited, on each side, in every sync, merge and validate --against of them: 0.27 s for 40
    memories. It is one 'git log' a side of the memories deleted and added, however many."""
    _bare, (a, b) = make_team(tmp_path)
    # Three memories tell one walk a side from one a memory (2 against 6) as well as forty would.
    for n in range(MANY):
        invoke_cli("--kb", a, "save", unlike(f"m{n}x"), "--id", f"kb.m{n}", "-e", "shop.orders", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    for n in range(MANY):
        invoke_cli("--kb", a, "update", f"kb.m{n}", "--title", f"A{n}", check=True)
        invoke_cli("--kb", b, *BEE, "update", f"kb.m{n}", "--description", f"B{n}", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    with traced_git(tmp_path) as runs:
        checked = invoke_cli("validate", "--against", "origin/main", cwd=b)
    assert "forgot" not in checked.stdout, checked.stdout  # two plain edits (their lines may meet: updated_at)
    assert (len(_walks(runs)), len(_walks(runs, merges=True))) == (2, 0), runs("")
    with traced_git(tmp_path) as runs:
        invoke_cli("--kb", b, "merge", "origin/main", check=True)
    assert (len(_walks(runs)), len(_walks(runs, merges=True))) == (2, 2), runs("")
    assert all(f"description: B{n}\n" in (b / "memories" / f"kb.m{n}.yaml").read_text() for n in range(MANY))


@pytest.mark.slow
def test_a_ref_named_like_this_branch_or_your_commits_opens_the_stop_as_it_is(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The stop capitalised its first word when it began "this" or "your": a ref thistle/main (or
    yourfork/main) that forgot kb.y opened it as Thistle/main. Only the words this branch and your
    commits are capitalised."""
    a, b = _reused(tmp_path, invoke_cli, by_rename=False)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    for ref in ("thistle/main", "yourfork/main"):
        git(b, "branch", ref, "origin/main")
    refused = invoke_cli("--kb", b, "rebase", "yourfork/main")
    assert refused.stderr.startswith("Error: yourfork/main forgot kb.y, which your commits edited, and then saved "), \
        refused.stderr
    stopped = invoke_cli("--kb", b, "merge", "thistle/main")
    assert stopped.stderr.startswith("Error: thistle/main forgot kb.y, which this branch edited, and then saved "), \
        stopped.stderr


# Each way of giving the id, synced in either order.
@pytest.mark.slow
@pytest.mark.parametrize(("forgetter_syncs", "by_rename"), [(True, False), (True, True), (False, False), (False, True)])
def test_an_id_given_again_against_a_soft_forget_keeps_the_new_memory(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_syncs: bool, by_rename: bool) -> None:
    """b soft-forgets kb.y while a forgets it and saves another memory as kb.y (or renames kb.x to
    it, which b edits). The sync stopped saying b edited kb.y, its step keeping a soft-forgotten
    copy as kb.y-2. Both forgot that memory: the sync keeps a's at kb.y, not forgotten (with b's
    edit of kb.x), without a stop; validate --against and the rebase's refusal say so."""
    a, b = given_again(tmp_path, invoke_cli, by_rename=by_rename)
    if by_rename:
        invoke_cli("--kb", b, *BEE, "update", "kb.x", "--description", "b's summary of X", check=True)
    invoke_cli("--kb", b, *BEE, "forget", "kb.y", "--soft", check=True)
    given = (a / "memories" / "kb.y.yaml").read_text()
    x = {} if by_rename else {"kb.x.yaml": (a / "memories" / "kb.x.yaml").read_text()}
    first, second = (b, a) if forgetter_syncs else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    git(second, "fetch", "-q", "origin")
    forgetter, other = ("this branch", "origin/main") if forgetter_syncs else ("origin/main", "this branch")
    words = (f"{forgetter} forgot kb.y and then {_gave(by_rename)}, and {other} forgot kb.y too (forget "
             "--soft): git takes both for edits of one memory and merges that forget into the other memory")
    settles = "it keeps the memory given kb.y where it is, and lets the memory both sides forgot go, without a stop"
    checked = invoke_cli("validate", "--against", "origin/main", cwd=second)
    assert checked.returncode == 1  # and, after a rename, kb.x's edit against it, as any rename's
    assert f"memories/kb.y.yaml:1: {words}; {PLAIN}. {MERGE} {settles.removeprefix('it ')}\n" in checked.stdout
    refused = invoke_cli("--kb", second, "rebase", "origin/main")
    assert refused.stderr.endswith(f"instead: {settles}.\n"), refused.stderr
    invoke_cli("--kb", second, "sync", check=True)
    invoke_cli("--kb", first, "sync", check=True)
    for clone in (a, b):
        texts = _texts(clone)
        assert texts == {**x, "kb.y.yaml": texts["kb.y.yaml"]}
        assert texts["kb.y.yaml"] == given or (by_rename and "description: b's summary of X\n" in texts["kb.y.yaml"]
                                               and texts["kb.y.yaml"].startswith("learning: xray0word"))
        assert "deleted_at" not in texts["kb.y.yaml"]
        assert invoke_cli("--kb", clone, "validate", check=True).stdout.endswith("no problems.\n")


@pytest.mark.slow
def test_a_forget_undone_in_a_merge_is_no_id_given_again(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """a forgets kb.y (and saves kb.z), merges b's edit of kb.y keeping it ('git add' of the stop's
    step), then edits kb.y, which b edits again. git shows no file of a merge commit: the forget
    was the last it showed of kb.y, and that was taken for an id given again. The merge kept b's
    memory: two edits of it, merged."""
    a, b = _reused(tmp_path, invoke_cli, by_rename=False)
    git(a, "reset", "-q", "--hard", "HEAD~2")  # a's forget and save undone
    git(b, "reset", "-q", "--hard", "HEAD~1")
    invoke_cli("--kb", a, "forget", "kb.y", check=True)
    invoke_cli("--kb", a, "save", unlike("zeta"), "--id", "kb.z", "-e", "shop.orders", check=True)
    invoke_cli("--kb", b, *BEE, "update", "kb.y", "--description", "b's summary", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(a, "fetch", "-q", "origin")
    assert invoke_cli("--kb", a, "merge", "origin/main").returncode == 1  # a forget against an edit
    git(a, "add", "memories/kb.y.yaml")
    git(a, "commit", "-q", "--no-edit")
    invoke_cli("--kb", a, "update", "kb.y", "--title", "Yank", check=True)
    invoke_cli("--kb", b, *BEE, "update", "kb.y", "--learning", unlike("yank") + " plus b's correction", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(a, "fetch", "-q", "origin")
    checked = invoke_cli("validate", "--against", "origin/main", cwd=a)
    assert "forgot kb.y" not in checked.stdout, checked.stdout
    merged = invoke_cli("--kb", a, "merge", "origin/main")
    assert (merged.returncode, merged.stderr) == (0, "")
    text = (a / "memories" / "kb.y.yaml").read_text()
    assert "plus b's correction" in text and "title: Yank\n" in text and "description: b's summary\n" in text


# With and without an edit, synced in either order.
@pytest.mark.slow
@pytest.mark.parametrize(("and_edits", "restorer_second"), [(True, True), (False, True), (True, False), (False, False)])
def test_a_sync_of_a_memory_forgotten_and_brought_back_joins_the_other_sides_edit(
        tmp_path: Path, invoke_cli: CliRunner, restorer_second: bool, and_edits: bool) -> None:
    """a forgets kb.y and restores it (then edits its title, or not); b edits kb.y. Synced after b,
    a's sync rebased: git replayed the forget onto b's edit and stopped ("Your commits forgot
    memories/kb.y.yaml, which origin/main edited"), its steps a rebase's, where 'slayer-kb merge
    origin/main' joins them. The sync merges instead, without a stop, in either order."""
    a, b = given_again(tmp_path, invoke_cli, by_rename=False)
    git(a, "reset", "-q", "--hard", "HEAD~2")  # a's forget and save undone: a forgets kb.y anew
    invoke_cli("--kb", a, "forget", "kb.y", check=True)
    invoke_cli("--kb", a, "restore", "kb.y", "--rev", "HEAD~1", check=True)
    if and_edits:
        invoke_cli("--kb", a, "update", "kb.y", "--title", "Yank", check=True)
    invoke_cli("--kb", b, *BEE, "update", "kb.y", "--description", "b's summary", check=True)
    first, second = (b, a) if restorer_second else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    synced = invoke_cli("--kb", second, "sync", check=True)
    ours = 3 if and_edits else 2
    assert synced.stdout.startswith(f"Synced main with origin: merged, 1 pulled, {ours + 1} pushed.\n" if restorer_second
                                    else f"Synced main with origin: rebased, {ours} pulled, 1 pushed.\n"), synced.stdout
    invoke_cli("--kb", first, "sync", check=True)
    for clone in (a, b):
        texts = _texts(clone)
        assert list(texts) == ["kb.x.yaml", "kb.y.yaml"]
        assert "description: b's summary\n" in texts["kb.y.yaml"]
        assert ("title: Yank\n" in texts["kb.y.yaml"]) == and_edits
        assert invoke_cli("--kb", clone, "validate", check=True).stdout.endswith("no problems.\n")


def _brought_back_against_an_edit(tmp_path: Path, invoke_cli: CliRunner, forgot_again: bool,
                                  forgetter_rebases: bool = True) -> tuple[Path, str]:
    """a forgets kb.y and restores it (then forgets it again); b edits kb.y. The other clone than
    the one that rebases syncs, and the one that rebases fetches: returns it and its HEAD."""
    a, b = given_again(tmp_path, invoke_cli, by_rename=False)
    git(a, "reset", "-q", "--hard", "HEAD~2")  # a's forget and save undone: a forgets kb.y anew
    invoke_cli("--kb", a, "forget", "kb.y", check=True)
    invoke_cli("--kb", a, "restore", "kb.y", "--rev", "HEAD~1", check=True)
    if forgot_again:
        invoke_cli("--kb", a, "forget", "kb.y", check=True)
    invoke_cli("--kb", b, *BEE, "update", "kb.y", "--description", "b's summary", check=True)
    rebaser, other = (a, b) if forgetter_rebases else (b, a)
    invoke_cli("--kb", other, "sync", check=True)
    git(rebaser, "fetch", "-q", "origin")
    return rebaser, git(rebaser, "rev-parse", "HEAD")


@pytest.mark.slow
def test_a_rebase_of_a_memory_forgotten_and_brought_back_against_an_edit_is_refused(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """a forgets kb.y and restores it; b edits kb.y. 'slayer-kb rebase origin/main' replayed the
    forget onto b's edit and stopped there (sync merges such a branch instead). It refuses, naming
    the merge, which joins b's edit into the memory brought back."""
    a, head = _brought_back_against_an_edit(tmp_path, invoke_cli, forgot_again=False)
    rebased = invoke_cli("--kb", a, "rebase", "origin/main")
    assert (rebased.returncode, rebased.stdout, rebased.stderr) == (1, "", (
        "Error: Your commits forgot kb.y and brought it back, and origin/main changed it: a rebase replays those "
        "commits one by one, stopping on the forget against that change and again where the memory came back, so "
        f"nothing was rebased. Run 'slayer-kb --kb {a} merge origin/main' instead (or 'slayer-kb --kb {a} sync', "
        "which merges such a branch): it joins the change into the memory brought back.\n"))
    assert git(a, "rev-parse", "HEAD") == head and git(a, "status", "--porcelain") == ""
    merged = invoke_cli("--kb", a, "merge", "origin/main")
    assert (merged.returncode, merged.stderr) == (0, "")
    texts = _texts(a)
    assert list(texts) == ["kb.x.yaml", "kb.y.yaml"] and "description: b's summary\n" in texts["kb.y.yaml"]


@pytest.mark.slow
@pytest.mark.parametrize("forgetter_rebases", [True, False])
def test_a_rebase_of_a_memory_forgotten_brought_back_and_forgotten_again_says_so(
        tmp_path: Path, invoke_cli: CliRunner, forgetter_rebases: bool) -> None:
    """a forgets kb.y, restores it and forgets it again; b edits kb.y. The rebase is refused, as
    for an id given to another memory and moved on, in words that say what a did (no other memory
    was given kb.y) and, rebased by a, where git's replay stops twice (the first forget, then the
    restore); rebased by b, that sync merges such a branch."""
    rebaser, head = _brought_back_against_an_edit(tmp_path, invoke_cli, True, forgetter_rebases)
    rebased = invoke_cli("--kb", rebaser, "rebase", "origin/main")
    said = ("Your commits forgot kb.y, brought it back and forgot or renamed it again, and origin/main changed kb.y: "
            "a rebase replays your commits one by one, stopping on the forget, and again on kb.y brought back once "
            "the one origin/main changed is kept there." if forgetter_rebases else
            "origin/main forgot kb.y, brought it back and forgot or renamed it again, and your commits changed kb.y: "
            "sync merges such a branch rather than rebasing it.")
    assert (rebased.returncode, rebased.stdout, rebased.stderr) == (1, "", (
        f"Error: {said} Nothing was rebased. Run 'slayer-kb --kb {rebaser} merge origin/main' instead: it stops once, "
        "on the forget against that change, with the steps to keep either.\n"))
    assert git(rebaser, "rev-parse", "HEAD") == head and git(rebaser, "status", "--porcelain") == ""
    stopped = invoke_cli("--kb", rebaser, "merge", "origin/main")
    assert stopped.returncode == 1 and "memories/kb.y.yaml" in stopped.stderr, stopped.stderr
