"""Moves git follows in a merge, however they were made: a catalog model or a code file moved and
edited, a memory moved by hand (``git mv``), a squash merge that dropped ``rename``'s trailer.
The other clone's edit of the old file lands in the moved one, as git's rename guess puts it,
and sync, ``slayer-kb merge`` and ``rebase`` finish. Only a pair of memories whose ``created_at``
differ (a forget and a new save, tests/test_forget_pairing.py) holds git to exact moves."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from testing import CliRunner, git, json_of, make_team, traced_git

# A crossing suite: run by `-m slow`, which CI runs (docs/testing.md, "The crossing suites").
pytestmark = pytest.mark.slow

REVENUE = "Revenue counts only completed orders, not refunds or cancellations, in the monthly report"
# Signed commits need a key, which ssh-keygen makes.
_SSH_KEYGEN = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="no ssh-keygen to make a signing key")


def _take_in(invoke_cli: CliRunner, kb: Path, how: str) -> str:
    git(kb, "fetch", "-q", "origin")
    return invoke_cli("--kb", kb, how, *([] if how == "sync" else ["origin/main"]), check=True).stdout


def test_a_catalog_model_moved_and_edited_takes_the_other_clones_edit(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """a moves the refunds model to a file of its own and edits its description, b edits a column
    in the old file: the sync stopped with "origin/main forgot models/shop/refunds.yaml, which your
    commits edited" (git held to exact moves, no trailer on either side)."""
    _bare, (a, b) = make_team(tmp_path)
    shop = Path("models", "shop")
    git(a, "mv", str(shop / "refunds.yaml"), str(shop / "refund_facts.yaml"))
    moved = a / shop / "refund_facts.yaml"
    moved.write_text(moved.read_text().replace("description: Processed refunds.",
                                               "description: Processed refunds, one row per refund."))
    git(a, "commit", "-qam", "refunds model to its own file")
    git(a, "push", "-q", "origin", "HEAD")
    old = b / shop / "refunds.yaml"
    old.write_text(old.read_text().replace("{name: amount, type: DOUBLE}", "{name: amount, type: DECIMAL}"))
    git(b, "commit", "-qam", "amount is decimal")
    invoke_cli("--kb", b, "save", "Refund amounts are decimal", "--title", "Decimal", "--project", "api", check=True)
    assert _take_in(invoke_cli, b, "sync") == "Synced main with origin: rebased, 1 pulled, 2 pushed.\n"
    assert not old.exists()
    text = (b / shop / "refund_facts.yaml").read_text()
    assert "description: Processed refunds, one row per refund.\n" in text
    assert "- {name: amount, type: DECIMAL}\n" in text


def _app(kb_root: Path) -> Path:
    return kb_root.parent / "app.py"


def _code_team(tmp_path: Path) -> tuple[Path, Path]:
    """Two clones of a repository whose KB is its kb/ folder, both holding the code file app.py."""
    _bare, (a, b) = make_team(tmp_path, folder="kb")
    _app(a).write_text("".join(f"def f{n}(): return {n}\n" for n in range(1, 31)))
    git(a.parent, "add", "app.py")
    git(a.parent, "commit", "-qm", "app")
    git(a.parent, "push", "-q", "origin", "HEAD")
    git(b.parent, "pull", "-q")
    return a, b


def _edit_f20(invoke_cli: CliRunner, b: Path) -> None:
    app = _app(b)
    app.write_text(app.read_text().replace("return 20\n", "return 200\n"))
    git(b.parent, "commit", "-qam", "fix f20")
    invoke_cli("--kb", b, "save", "f20 returns two hundred", "--title", "f20", "--project", "api", check=True)


def _move_app(clone: Path, *options: str) -> Path:
    """app.py moved to service.py beside the KB ``clone`` and f3 fixed, in one commit (``options``
    of git commit's); service.py."""
    git(clone.parent, "mv", "app.py", "service.py")
    service = clone.parent / "service.py"
    service.write_text(service.read_text().replace("return 3\n", "return 33\n"))
    git(clone.parent, "commit", *options, "-qam", "move app.py to service.py, fix f3")
    return service


@pytest.mark.parametrize("how", ["sync", "merge", "rebase"])
def test_a_code_file_moved_and_edited_beside_the_kb_takes_the_other_clones_edit(
        tmp_path: Path, invoke_cli: CliRunner, how: str) -> None:
    """The stop said "origin/main forgot .py, which your commits edited": the move of app.py to
    service.py (edited too) held to exact moves, and the path cut by the KB folder's length."""
    a, b = _code_team(tmp_path)
    _move_app(a)
    git(a.parent, "push", "-q", "origin", "HEAD")
    _edit_f20(invoke_cli, b)
    with traced_git(tmp_path) as runs:
        taken = _take_in(invoke_cli, b, how)
    # The upstream's move settles it (git's guess stays on): nothing more is asked.
    assert (len(runs("diff -M")), len(runs("log -M"))) == (1, 0)
    assert taken == {
        "sync": "Synced main with origin: rebased, 1 pulled, 2 pushed.\n",
        "merge": f"Merged origin/main; run slayer-kb --kb {b} sync to push.\n",
        "rebase": f"Rebased onto origin/main; run slayer-kb --kb {b} sync to push.\n"}[how]
    assert not _app(b).exists()
    text = (b.parent / "service.py").read_text()
    assert "def f3(): return 33\n" in text and "def f20(): return 200\n" in text


@pytest.mark.parametrize("how", ["sync", "merge"])
def test_a_code_file_deleted_beside_the_kb_against_an_edit_is_named_from_the_kb_folder(
        tmp_path: Path, invoke_cli: CliRunner, how: str) -> None:
    """Not "origin/main forgot .py" and "git add .py": the repository's app.py, from the KB's
    folder where the steps run, is ../app.py."""
    a, b = _code_team(tmp_path)
    git(a.parent, "rm", "-q", "app.py")
    git(a.parent, "commit", "-qm", "drop app")
    git(a.parent, "push", "-q", "origin", "HEAD")
    _edit_f20(invoke_cli, b)
    git(b, "fetch", "-q", "origin")
    proc = invoke_cli("--kb", b, how, *([] if how == "sync" else ["origin/main"]))
    keep = "git add ../app.py to keep your edit (or git rm ../app.py to let it go); slayer-kb validate; "
    assert (proc.returncode, proc.stderr) == (1, {
        "sync": "Error: origin/main forgot ../app.py, which your commits edited; the repository is back as it was. "
                f"To merge by hand: cd {b}; git fetch origin; slayer-kb rebase origin/main (it stops on the "
                f"conflict); {keep}slayer-kb rebase --continue (a later commit that stops says so again); "
                "slayer-kb sync.\n",
        "merge": f"Error: origin/main forgot ../app.py, which this branch edited; the merge stopped, and git -C {b} "
                 f"merge --abort would put the branch back as it was. To merge by hand: cd {b}; {keep}git commit "
                 "--no-edit; slayer-kb sync.\n"}[how])
    if how == "merge":  # the steps, run where they say, keep the edit
        git(b, "add", "../app.py")
        git(b, "commit", "-q", "--no-edit")
        assert "def f20(): return 200\n" in _app(b).read_text()


@_SSH_KEYGEN
def test_a_rebase_stopped_at_a_signed_commit_names_its_subject(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """b signs its commits and shows signatures in ``git log``: the stop named the commit by the
    signature check's first line ('Good "git" signature for t@e with ED25519 key ...')."""
    a, b = _code_team(tmp_path)
    git(a.parent, "rm", "-q", "app.py")
    git(a.parent, "commit", "-qm", "drop app")
    git(a.parent, "push", "-q", "origin", "HEAD")
    _sign_with_ssh(tmp_path, b.parent)
    git(b.parent, "config", "commit.gpgSign", "true")
    _edit_f20(invoke_cli, b)
    git(b, "fetch", "-q", "origin")
    proc = invoke_cli("--kb", b, "rebase", "origin/main")
    assert (proc.returncode, proc.stderr) == (1, "Error: origin/main forgot ../app.py, which your commits edited; "
                                                 "the rebase stopped at commit 1 of 2 ('fix f20'), and slayer-kb "
                                                 f"--kb {b} rebase --abort would put the branch back as it was. To "
                                                 f"merge by hand: cd {b}; git add ../app.py to keep your edit (or "
                                                 "git rm ../app.py to let it go); slayer-kb validate; slayer-kb "
                                                 "rebase --continue (a later commit that stops says so again); "
                                                 "slayer-kb sync.\n")


def _synced_memory(tmp_path: Path, invoke_cli: CliRunner) -> tuple[Path, Path]:
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", REVENUE, "--title", "Revenue", "--project", "api", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    return a, b


def _moved_by_hand(invoke_cli: CliRunner, a: Path) -> None:
    """a moves memory 1 to kb.rev with git mv (docs/review.md: a move by hand) and edits it."""
    git(a, "mv", "memories/1.yaml", "memories/kb.rev.yaml")
    git(a, "commit", "-qm", "rename 1 by hand")
    invoke_cli("--kb", a, "update", "kb.rev", "--content", REVENUE.replace(" or cancellations", ""), check=True)


def _both_in_kb_rev(b: Path) -> None:
    assert sorted(p.name for p in (b / "memories").iterdir()) == ["kb.rev.yaml"]
    text = (b / "memories" / "kb.rev.yaml").read_text()
    assert "title: Revenue (monthly)\n" in text
    assert f"learning: {REVENUE.replace(' or cancellations', '')}\n" in text


@pytest.mark.parametrize("how", ["sync", "merge", "rebase"])
def test_a_memory_moved_by_hand_and_edited_takes_the_other_clones_edit(
        tmp_path: Path, invoke_cli: CliRunner, how: str) -> None:
    """The stop said "origin/main forgot memories/1.yaml, which your commits edited": a move by
    hand has no trailer, yet it keeps the memory's created_at, so it is a move git follows."""
    a, b = _synced_memory(tmp_path, invoke_cli)
    _moved_by_hand(invoke_cli, a)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "update", "1", "--title", "Revenue (monthly)", check=True)
    # As sync named it before: the file both sides' changes were joined from.
    assert _take_in(invoke_cli, b, how) == {
        "sync": "Synced main with origin: rebased, 2 pulled, 1 pushed.\n  merged both sides of: memories/1.yaml\n",
        "merge": f"Merged origin/main; run slayer-kb --kb {b} sync to push.\n",
        "rebase": f"Rebased onto origin/main; run slayer-kb --kb {b} sync to push.\n"}[how]
    _both_in_kb_rev(b)


@pytest.mark.parametrize("how", ["sync", "merge"])
def test_links_to_a_memory_moved_by_hand_follow_it(tmp_path: Path, invoke_cli: CliRunner, how: str) -> None:
    """a moved memory 1 with git mv and pushed; b's sync took 1 for forgotten and stripped b's new
    link to it and the link a memory on main already held ('stripped links to forgotten
    memories'): the same bytes under another name are a move, so its links follow it, as a
    rename's do."""
    a, b = _synced_memory(tmp_path, invoke_cli)
    theirs = json_of(invoke_cli("--kb", a, "--json", "save", "Refund rows are negative amounts, as memory one says.",
                                "-e", "memory:1", check=True))["memory_id"]
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(a, "mv", "memories/1.yaml", "memories/kb.rev.yaml")
    git(a, "commit", "-qm", "rename 1 by hand")
    git(a, "push", "-q")
    mine = json_of(invoke_cli("--kb", b, "--json", "save", "Net revenue is revenue minus refunds, see memory one.",
                              "-e", "memory:1", check=True))["memory_id"]
    out = _take_in(invoke_cli, b, how)
    assert "stripped" not in out
    for memory_id in (theirs, mine):
        assert "- memory:kb.rev\n" in (b / "memories" / f"{memory_id}.yaml").read_text()
    assert invoke_cli("--kb", b, "validate").returncode == 0


def test_a_squash_merge_that_dropped_the_rename_trailer_takes_the_other_clones_edit(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """a renames 1 on a branch and edits it, then squash-merges the branch into main: the one
    commit pushed records no rename. b's edit of 1 stopped the sync as a forget against an edit."""
    a, b = _synced_memory(tmp_path, invoke_cli)
    git(a, "switch", "-q", "-c", "agent-a")
    invoke_cli("--kb", a, "rename", "1", "kb.rev", check=True)
    invoke_cli("--kb", a, "update", "kb.rev", "--content", REVENUE.replace(" or cancellations", ""), check=True)
    git(a, "switch", "-q", "main")
    git(a, "merge", "-q", "--squash", "agent-a")
    git(a, "commit", "-qm", "Squash agent-a")
    assert "Renamed: " not in git(a, "log", "-1", "--format=%B")
    git(a, "push", "-q", "origin", "main")
    invoke_cli("--kb", b, "update", "1", "--title", "Revenue (monthly)", check=True)
    assert _take_in(invoke_cli, b, "sync") == (
        "Synced main with origin: rebased, 1 pulled, 1 pushed.\n  merged both sides of: memories/1.yaml\n")
    _both_in_kb_rev(b)


@pytest.mark.parametrize("how", ["sync", "merge", "rebase"])
def test_a_memory_moved_by_hand_that_both_edited_stops_as_both_edited(
        tmp_path: Path, invoke_cli: CliRunner, how: str) -> None:
    """Beside another memory renamed and edited on a's side (git's guess on), a's move by hand was
    named "a new memory git took for a move of memories/1.yaml" with a step that dropped b's edit:
    it is a move (its created_at kept), both edited the memory's text, and the stop says so."""
    a, b = _synced_memory(tmp_path, invoke_cli)
    invoke_cli("--kb", a, "save", " ".join(f"xray{n}word" for n in range(40)), "--id", "kb.x", "-e",
               "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "rename", "kb.x", "kb.y", check=True)
    _moved_by_hand(invoke_cli, a)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "update", "1", "--content", "Revenue counts completed orders in the monthly report",
               check=True)
    git(b, "fetch", "-q", "origin")
    proc = invoke_cli("--kb", b, how, *([] if how == "sync" else ["origin/main"]))
    edit = "edit memories/kb.rev.yaml to keep what both sides meant; git add memories/kb.rev.yaml; slayer-kb validate; "
    go_on = "slayer-kb rebase --continue (a later commit that stops says so again); slayer-kb sync.\n"
    assert (proc.returncode, proc.stderr) == (1, {
        "sync": "Error: Your commits and origin/main both edited memories/kb.rev.yaml; the repository is back as it "
                f"was. To merge by hand: cd {b}; git fetch origin; slayer-kb rebase origin/main (it stops on the "
                f"conflict); {edit}{go_on}",
        "merge": "Error: This branch and origin/main both edited memories/kb.rev.yaml; the merge stopped, and git -C "
                 f"{b} merge --abort would put the branch back as it was. To merge by hand: cd {b}; {edit}git commit "
                 "--no-edit; slayer-kb sync.\n",
        "rebase": "Error: Your commits and origin/main both edited memories/kb.rev.yaml; the rebase stopped at commit "
                  f"1 of 1 ('memory: update 1 (learning)'), and slayer-kb --kb {b} rebase --abort would put the "
                  f"branch back as it was. To merge by hand: cd {b}; {edit}{go_on}"}[how])


def _forgot_and_saved_on_a(invoke_cli: CliRunner, a: Path) -> None:
    """a forgets memory 1 and saves a new short one, a pair git's guess reads as a move of 1 (with
    a created_at of its own: a forget and a save), and syncs."""
    invoke_cli("--kb", a, "forget", "1", check=True)
    invoke_cli("--kb", a, "save", "Refunds", "--title", "Refunds", "--project", "api", check=True)
    invoke_cli("--kb", a, "sync", check=True)


def _sign_with_ssh(tmp_path: Path, repo: Path) -> None:
    """``repo`` signs its commits with a new ssh key (``git commit -S``) and its ``git log`` shows
    each signature checked, as a user's config may ask (``log.showSignature``)."""
    key = tmp_path / "signing_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "t@e", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"t@e {(tmp_path / 'signing_key.pub').read_text()}")
    for name, value in (("gpg.format", "ssh"), ("user.signingKey", str(key)),
                        ("gpg.ssh.allowedSignersFile", str(allowed)), ("log.showSignature", "true")):
        git(repo, "config", name, value)


@pytest.mark.usefixtures("minutes_apart")
# Signed and not, synced or rebased by hand.
@pytest.mark.parametrize(("how", "signed"), [("sync", False), pytest.param("sync", True, marks=_SSH_KEYGEN), ("rebase", False),
     pytest.param("rebase", True, marks=_SSH_KEYGEN)])
def test_a_code_file_moved_then_rewritten_by_a_later_commit_takes_the_other_clones_edit(
        tmp_path: Path, invoke_cli: CliRunner, how: str, signed: bool) -> None:
    """b moves app.py to service.py with a small edit, then rewrites most of it in a later commit:
    over b's range a delete and an add, in its first commit a move. Beside a's forget and new save,
    git was held to exact moves, and the replay of that commit (sync and ``rebase`` replay commit
    by commit) stopped: "Your commits forgot ../app.py, which origin/main edited". The same when
    b's move is signed and b's config shows signatures in ``git log`` (their lines, before the
    commit's pairs, hid the move)."""
    a, b = _code_team(tmp_path)
    invoke_cli("--kb", b, "save", "Revenue", "--title", "Revenue", "--project", "api", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    if signed:
        _sign_with_ssh(tmp_path, b.parent)
    service = _move_app(b, *(["-S"] if signed else []))
    if signed:
        assert 'Good "git" signature for t@e' in git(b.parent, "log", "-1")
    service.write_text("".join(f"def f{n}(): return {n}{' * 2' if 10 <= n < 30 else ''}\n"
                               for n in range(1, 31)).replace("return 3\n", "return 33\n"))
    git(b.parent, "commit", "-qam", "double f10 to f29")
    app = _app(a)
    app.write_text(app.read_text().replace("return 5\n", "return 55\n"))
    git(a.parent, "commit", "-qam", "fix f5")
    _forgot_and_saved_on_a(invoke_cli, a)
    with traced_git(tmp_path) as runs:
        taken = _take_in(invoke_cli, b, how)
    # The pairs a rebase meets: the upstream's range (a's forget and save) and each of b's commits
    # (its move), one call each.
    assert (len(runs("diff -M")), len(runs("log -M"))) == (1, 1)
    assert taken == {
        "sync": "Synced main with origin: rebased, 3 pulled, 2 pushed.\n",
        "rebase": f"Rebased onto origin/main; run slayer-kb --kb {b} sync to push.\n"}[how]
    assert not _app(b).exists()
    text = service.read_text()
    assert "def f5(): return 55\n" in text and "def f3(): return 33\n" in text and "def f29(): return 29 * 2\n" in text
    assert sorted(p.name for p in (b / "memories").iterdir()) == ["101.yaml"]
    assert "title: Refunds\n" in (b / "memories" / "101.yaml").read_text()


@pytest.mark.usefixtures("minutes_apart")
@pytest.mark.parametrize("how", ["sync", "rebase"])
def test_a_memory_moved_by_hand_then_rewritten_takes_the_other_clones_edit(
        tmp_path: Path, invoke_cli: CliRunner, how: str) -> None:
    """b moves 1 to kb.rev by hand with a small edit, then rewrites its text with ``update``; a
    edits 1's title, forgets memory 2 and saves 3 alike. The replay of b's move stopped as "Your
    commits forgot memories/1.yaml, which origin/main edited"."""
    a, b = _synced_memory(tmp_path, invoke_cli)
    invoke_cli("--kb", a, "save", "Short", "--title", "Short", "--project", "api", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "update", "1", "--title", "Revenue (monthly)", check=True)
    invoke_cli("--kb", a, "forget", "2", check=True)
    invoke_cli("--kb", a, "save", "Shorter", "--title", "Shorter", "--project", "api", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "mv", "memories/1.yaml", "memories/kb.rev.yaml")
    moved = b / "memories" / "kb.rev.yaml"
    moved.write_text(moved.read_text().replace("monthly report", "monthly sales report"))
    git(b, "commit", "-qam", "rename 1 by hand")
    rewritten = " ".join(f"newtext{n}" for n in range(60))
    invoke_cli("--kb", b, "update", "kb.rev", "--content", rewritten, check=True)
    assert _take_in(invoke_cli, b, how) == {
        "sync": "Synced main with origin: rebased, 3 pulled, 2 pushed.\n  merged both sides of: memories/1.yaml\n",
        "rebase": f"Rebased onto origin/main; run slayer-kb --kb {b} sync to push.\n"}[how]
    assert sorted(p.name for p in (b / "memories").iterdir()) == ["3.yaml", "kb.rev.yaml"]
    text = moved.read_text()
    assert "title: Revenue (monthly)\n" in text and f"learning: {rewritten}\n" in text


@pytest.mark.usefixtures("minutes_apart")
@pytest.mark.parametrize("how", ["sync", "merge", "rebase"])
def test_code_files_moved_past_the_diff_rename_limit_take_the_other_clones_edit(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """b moves src/ to lib/ with an edit in each file, more files than ``diff.renameLimit`` (1000 by
    default; 2 here, to stay quick) though within ``merge.renameLimit`` (7000): asked of git's
    diff, b's side paired nothing, so beside a's forget and new save git's merge was held to exact
    moves: "Your commits forgot ../src/f2.py, which origin/main edited" (git's merge alone
    follows the moves)."""
    a, b = _code_team(tmp_path)
    (a.parent / "src").mkdir()
    for n in range(1, 4):
        (a.parent / "src" / f"f{n}.py").write_text("".join(f"def g{n}_{k}(): return {n} * {k}\n" for k in range(1, 7)))
    git(a.parent, "add", "src")
    git(a.parent, "commit", "-qm", "src")
    invoke_cli("--kb", a, "save", "Revenue", "--title", "Revenue", "--project", "api", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(b, "config", "diff.renameLimit", "2")
    git(b, "config", "merge.renameLimit", "7000")
    (b.parent / "lib").mkdir()
    for n in range(1, 4):
        old = b.parent / "src" / f"f{n}.py"
        (b.parent / "lib" / f"h{n}.py").write_text(old.read_text().replace(" * 1\n", "\n"))
    git(b.parent, "rm", "-rq", "src")
    git(b.parent, "add", "lib")
    git(b.parent, "commit", "-qm", "src to lib, drop * 1")
    f2 = a.parent / "src" / "f2.py"
    f2.write_text(f2.read_text().replace("2 * 5\n", "2 * 50\n"))
    git(a.parent, "commit", "-qam", "fix g2_5")
    _forgot_and_saved_on_a(invoke_cli, a)
    # git's warning in the user's language (German where git's German messages are installed).
    monkeypatch.setenv("LANGUAGE", "de")
    assert _take_in(invoke_cli, b, how) == {
        "sync": "Synced main with origin: rebased, 3 pulled, 1 pushed.\n",
        "merge": f"Merged origin/main; run slayer-kb --kb {b} sync to push.\n",
        "rebase": f"Rebased onto origin/main; run slayer-kb --kb {b} sync to push.\n"}[how]
    assert not (b.parent / "src").exists()
    assert (b.parent / "lib" / "h2.py").read_text() == "".join(
        f"def g2_{k}(): return 2{'' if k == 1 else f' * {k}0' if k == 5 else f' * {k}'}\n" for k in range(1, 7))


@pytest.mark.usefixtures("minutes_apart")
@pytest.mark.parametrize("how", ["sync", "merge"])
def test_a_move_on_one_side_of_a_criss_cross_takes_the_other_clones_edit(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """a fixes f5 and pushes; b moves app.py to service.py (with an edit) on a feature branch and
    merges main; a merges the feature and forgets and saves a memory alike. Two merge bases (a's
    fix, b's move): asked from one of them, the move was none, git was held to exact moves and its
    merge of the bases stopped: "both edited ../service.py" (a plain ``git merge`` finishes)."""
    a, b = _code_team(tmp_path)
    invoke_cli("--kb", a, "save", "Revenue", "--title", "Revenue", "--project", "api", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b.parent, "pull", "-q")
    app = _app(a)
    app.write_text(app.read_text().replace("return 5\n", "return 55\n"))
    # The move is the later of the two bases (git names the later first).
    monkeypatch.setenv("GIT_COMMITTER_DATE", "1780000000 +0000")
    git(a.parent, "commit", "-qam", "fix f5")
    git(a.parent, "push", "-q", "origin", "HEAD")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "1780000060 +0000")
    service = _move_app(b)
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    git(b.parent, "push", "-q", "origin", "HEAD:feature")
    git(b.parent, "fetch", "-q")
    git(b.parent, "merge", "-q", "--no-edit", "origin/main")
    git(a.parent, "fetch", "-q")
    git(a.parent, "merge", "-q", "--no-edit", "origin/feature")
    theirs = a.parent / "service.py"
    theirs.write_text(theirs.read_text().replace("return 10\n", "return 100\n"))
    git(a.parent, "commit", "-qam", "fix f10")
    _forgot_and_saved_on_a(invoke_cli, a)
    service.write_text(service.read_text().replace("return 55\n", "return 555\n"))
    git(b.parent, "commit", "-qam", "fix f5 again")
    git(b, "fetch", "-q", "origin")
    bases = git(b, "merge-base", "--all", "HEAD", "origin/main").split()
    assert [git(b, "log", "-1", "--format=%s", base).strip() for base in bases] == [
        "move app.py to service.py, fix f3", "fix f5"]
    assert _take_in(invoke_cli, b, how) == {
        "sync": "Synced main with origin: merged, 4 pulled, 3 pushed.\n",
        "merge": f"Merged origin/main; run slayer-kb --kb {b} sync to push.\n"}[how]
    assert not _app(b).exists()
    text = service.read_text()
    assert "def f5(): return 555\n" in text and "def f3(): return 33\n" in text and "def f10(): return 100\n" in text
    assert sorted(p.name for p in (b / "memories").iterdir()) == ["2.yaml"]
