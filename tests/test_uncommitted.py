"""A person's unfinished work never goes into a slayer-kb commit (issue 16, item 5).

Every operation that rewrites or deletes existing files (the cascades, ``prune``, ``forget``,
``update``, a save or revision over an existing memory, ``restore``) refuses when one of those
files differs from HEAD in the work tree or in git's index, or is a file HEAD lacks (untracked),
and names the files. ``--force`` rewrites them from HEAD instead and keeps the person's versions
beside them (``<file>.orig``; a staged version that differs from both, ``<file>.staged.orig``).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import ConflictError
from slayer_kb.store.repo import Change
from testing import (
    CliRunner,
    commit_all,
    counted_apart,
    git,
    json_of,
    make_catalog_kb,
    make_empty_kb,
    make_team,
    traced_git,
)

CREATED = "created_at: '2026-01-01T00:00:00Z'\n"
WIP = "learning: One. WIP-NOT-FOR-COMMIT\nentities:\n- shop.refunds.amount\n" + CREATED
STAGED = "learning: Two, staged.\nentities:\n- shop.refunds\n- shop.orders\n" + CREATED
NEW = "learning: Never committed.\nentities:\n- shop.refunds.id\n" + CREATED
HOW = ("have changes that are not committed (in the work tree or git's index, or never committed at "
       "all), and this command would rewrite them; slayer-kb never commits work you have not "
       "committed, so nothing was done. Commit or stash them (git stash -u), or run the command again "
       "with --force to rewrite them from HEAD and keep your versions as <file>.orig.")


def memory(learning: str, *entities: str) -> str:
    return f"learning: {learning}\nentities:\n" + "".join(f"- {e}\n" for e in entities) + CREATED


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def unfinished(catalog_kb: KnowledgeBase) -> Path:
    """Three committed memories about shop.refunds or shop.orders, then a person's unfinished
    work: an unstaged WIP line in 1, a staged version of 2, a new file 4 never committed."""
    root = catalog_kb.root
    (root / "memories" / "1.yaml").write_text(memory("One.", "shop.refunds.amount"))
    (root / "memories" / "2.yaml").write_text(memory("Two.", "shop.refunds", "shop.orders"))
    (root / "memories" / "3.yaml").write_text(memory("Three.", "shop.orders"))
    commit_all(root, "three memories")
    (root / "memories" / "1.yaml").write_text(WIP)
    (root / "memories" / "2.yaml").write_text(STAGED)
    git(root, "add", "memories/2.yaml")
    (root / "memories" / "4.yaml").write_text(NEW)
    return root


def assert_untouched(root: Path, before: str) -> None:
    assert head(root) == before
    assert (root / "memories" / "1.yaml").read_text() == WIP
    assert git(root, "show", ":memories/2.yaml") == STAGED
    assert (root / "memories" / "4.yaml").read_text() == NEW
    assert git(root, "status", "--porcelain") == " M memories/1.yaml\nM  memories/2.yaml\n?? memories/4.yaml\n"


def test_a_cascade_refuses_to_commit_unfinished_work(unfinished: Path, invoke_cli: CliRunner) -> None:
    root = unfinished
    before = head(root)
    # It used to commit 1's WIP line under "catalog: delete model", 2's staged text, and 4.
    proc = invoke_cli("--kb", root, "delete-model", "shop.refunds")
    assert (proc.returncode, proc.stderr) == (1, f"Error: memories/1.yaml, memories/2.yaml, memories/4.yaml {HOW}\n")
    assert_untouched(root, before)
    assert (root / "models" / "shop" / "refunds.yaml").exists()


def test_force_rewrites_from_head_and_keeps_the_unfinished_work_beside_it(unfinished: Path, invoke_cli: CliRunner) -> None:
    root = unfinished
    (root / "memories" / "2.yaml").write_text(STAGED.replace("staged", "staged, then edited again"))
    proc = invoke_cli("--kb", root, "delete-model", "shop.refunds", "--force")
    assert proc.returncode == 0, proc.stderr
    sha = head(root)
    assert proc.stdout == (
        f"Deleted model shop.refunds (commit {sha[:12]}); stripped it from 2 memories: 1, 2\n"
        "kept your uncommitted versions as: memories/1.yaml.orig, memories/2.yaml.staged.orig, "
        "memories/2.yaml.orig, memories/4.yaml.orig\n"
    )
    # The commit holds HEAD's versions with the model stripped, and nothing of the person's.
    assert git(root, "show", "HEAD:memories/1.yaml") == "learning: One.\n" + CREATED
    assert git(root, "show", "HEAD:memories/2.yaml") == memory("Two.", "shop.orders")
    assert sorted(git(root, "show", "--name-only", "--format=", "HEAD").split()) == [
        "memories/1.yaml", "memories/2.yaml", "models/shop/refunds.yaml"]
    assert "WIP" not in git(root, "log", "-p", "-1")
    # Their versions are beside the files: the work tree's, and the staged one that differed.
    assert (root / "memories" / "1.yaml.orig").read_text() == WIP
    assert (root / "memories" / "2.yaml.staged.orig").read_text() == STAGED
    assert (root / "memories" / "2.yaml.orig").read_text() == STAGED.replace("staged", "staged, then edited again")
    assert (root / "memories" / "4.yaml.orig").read_text() == NEW
    assert not (root / "memories" / "4.yaml").exists()
    assert git(root, "status", "--porcelain") == (
        "?? memories/1.yaml.orig\n?? memories/2.yaml.orig\n?? memories/2.yaml.staged.orig\n?? memories/4.yaml.orig\n")


def one_file(path: str, force: bool) -> str:
    how = (f", or run the command again with --force to rewrite it from HEAD and keep your version as {path}.orig."
           if force else " and retry.")
    return (f"{path} has changes that are not committed (in the work tree or git's index, or never committed "
            "at all), and this command would rewrite it; slayer-kb never commits work you have not committed, "
            f"so nothing was done. Commit or stash it (git stash -u){how}")


def test_every_rewriting_operation_refuses(unfinished: Path) -> None:
    root = unfinished
    (root / "memories" / "5.yaml").write_text("learning: Five.\ntitle: Five\ntype: manual\ntopic_key: t/k\n" + CREATED)
    (root / "memories" / "6.yaml").write_text("learning: Six.\ndeleted_at: '2026-01-02T00:00:00Z'\n" + CREATED)
    (root / "memories" / "7.yaml").write_text(memory("Seven.", "memory:3"))
    git(root, "add", "memories/5.yaml", "memories/6.yaml", "memories/7.yaml")
    git(root, "commit", "-q", "-m", "more", "--", "memories/5.yaml", "memories/6.yaml", "memories/7.yaml")
    for n in (5, 6, 7):
        path = root / "memories" / f"{n}.yaml"
        path.write_text(path.read_text().replace(".\n", ". WIP\n", 1))
    git(root, "rm", "-q", "models/shop/refunds.yaml")
    git(root, "commit", "-q", "-m", "refunds gone by hand", "--", "models/shop/refunds.yaml")
    before = head(root)
    kb = KnowledgeBase(root)
    cases = [
        (lambda: kb.update("1", title="T"), one_file("memories/1.yaml", True)),
        (lambda: kb.forget("1"), one_file("memories/1.yaml", True)),
        (lambda: kb.forget("1", soft=True), one_file("memories/1.yaml", True)),
        (lambda: kb.forget("3"), one_file("memories/7.yaml", True)),  # strips memory:3 from 7
        (lambda: kb.prune(), f"memories/1.yaml, memories/2.yaml, memories/4.yaml {HOW}"),
        (lambda: kb.save_memory("Replaced.", ["shop.orders"], id="2"), one_file("memories/2.yaml", False)),
        (lambda: kb.save_observation("Five", "Revised.", topic_key="t/k"), one_file("memories/5.yaml", False)),
        (lambda: kb.restore("6"), one_file("memories/6.yaml", False)),
    ]
    for call, error in cases:
        with pytest.raises(ConflictError) as info:
            call()
        assert str(info.value) == error
    assert head(root) == before
    assert (root / "memories" / "1.yaml").read_text() == WIP
    assert git(root, "show", ":memories/2.yaml") == STAGED
    # forget --force: 7 rewritten from HEAD, its WIP kept beside it.
    result = kb.forget("3", force=True)
    assert (result.stripped_from, result.kept) == (["7"], ["memories/7.yaml.orig"])
    assert (root / "memories" / "7.yaml").read_text() == "learning: Seven.\n" + CREATED
    assert (root / "memories" / "7.yaml.orig").read_text() == memory("Seven. WIP", "memory:3")
    assert kb.update("1", title="T", force=True).kept == ["memories/1.yaml.orig"]
    assert (kb.get("1").to_dict()["title"], kb.get("1").to_dict()["learning"]) == ("T", "One.")
    assert "WIP" not in git(root, "show", "HEAD:memories/1.yaml")


def test_a_dry_run_of_prune_force_lists_the_links_only_head_still_has(
        catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """HEAD's 1 links shop.refunds.amount and shop.refunds.id, both gone; the person's edit of 1
    dropped the second. prune --force sets the edit aside and strips both from HEAD's 1; its dry
    run listed only the first, the one the work tree's version still links."""
    root = catalog_kb.root
    (root / "memories" / "1.yaml").write_text(memory("One.", "shop.refunds.amount", "shop.refunds.id"))
    commit_all(root, "one")
    git(root, "rm", "-q", "models/shop/refunds.yaml")
    git(root, "commit", "-q", "-m", "refunds gone by hand")
    (root / "memories" / "1.yaml").write_text(WIP)
    before = head(root)
    dry = invoke_cli("--kb", root, "prune", "--dry-run", "--force", check=True)
    assert dry.stdout == ("Would strip from memory 1: shop.refunds.amount, shop.refunds.id\n"
                          "would keep your uncommitted versions as: memories/1.yaml.orig\n")
    assert (head(root), (root / "memories" / "1.yaml").read_text()) == (before, WIP)
    run = invoke_cli("--kb", root, "prune", "--force", check=True)
    assert run.stdout.startswith("Stripped from memory 1: shop.refunds.amount, shop.refunds.id\n"), run.stdout


def test_prune_force_refuses_a_file_only_head_s_versions_bring_in_before_it_sets_any_aside(
        catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """As above, and 2 (linking shop.refunds.id) is broken by hand: only HEAD's 1 brings the
    link, and so 2, into prune's plan. The dry run listed "Would strip from memory 2", exit 0; the
    run wrote 1.yaml.orig, put HEAD's 1 back, then refused "nothing was done", suggesting --force.
    Both refuse, naming 2 and why, with nothing touched."""
    root = catalog_kb.root
    (root / "memories" / "1.yaml").write_text(memory("One.", "shop.refunds.amount", "shop.refunds.id"))
    (root / "memories" / "2.yaml").write_text(memory("Two.", "shop.refunds.id"))
    commit_all(root, "one two")
    git(root, "rm", "-q", "models/shop/refunds.yaml")
    git(root, "commit", "-q", "-m", "refunds gone by hand")
    (root / "memories" / "1.yaml").write_text(WIP)
    (root / "memories" / "2.yaml").write_text("learning: [unclosed\n")
    before = head(root)
    refusal = ("Error: memories/2.yaml has changes that are not committed (in the work tree or git's index, or never "
               "committed at all), and this command would rewrite it once --force put back HEAD's version of "
               "memories/1.yaml; slayer-kb never commits work you have not committed, so nothing was done. Commit or "
               "stash it (git stash -u) and retry.\n")
    for args in (["--dry-run", "--force"], ["--force"]):
        proc = invoke_cli("--kb", root, "prune", *args)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", refusal)
        assert git(root, "status", "--porcelain") == " M memories/1.yaml\n M memories/2.yaml\n"
        assert (head(root), (root / "memories" / "1.yaml").read_text()) == (before, WIP)


def test_a_plan_that_reaches_more_uncommitted_work_after_force_puts_back_what_it_set_aside(
        catalog_kb: KnowledgeBase) -> None:
    """The last refusal of ``Transaction.rewrite``: a plan that, run again from HEAD's versions of
    the files --force set aside, rewrites another file holding uncommitted work (one no check
    ahead foresaw). Nothing is committed; the message names the file and the fix, and the files
    set aside are put back (they stayed aside as 1.yaml.orig, HEAD's 1.yaml in its place)."""
    root = catalog_kb.root
    for name in ("1", "2"):
        (root / "memories" / f"{name}.yaml").write_text(memory(f"Memory {name}.", "shop.orders"))
    commit_all(root, "one two")
    (root / "memories" / "1.yaml").write_text(WIP)
    (root / "memories" / "2.yaml").write_text(STAGED)
    before = head(root)
    runs: list[int] = []

    def plan() -> tuple[list[Change], None]:
        runs.append(len(runs))
        names = ["1"] if len(runs) == 1 else ["1", "2"]
        return [Change(f"memories/{name}.yaml", memory("Rewritten.", "shop.orders").encode()) for name in names], None

    with pytest.raises(ConflictError) as refused, catalog_kb.transaction() as tx:
        tx.rewrite(plan, force=True)
    assert str(refused.value) == (
        "memories/2.yaml has changes that are not committed (in the work tree or git's index, or never committed at "
        "all), and this command would rewrite it once --force put back HEAD's version of memories/1.yaml; slayer-kb "
        "never commits work you have not committed, so nothing was done. Commit or stash it (git stash -u) and retry.")
    assert (runs, head(root)) == ([0, 1], before)
    assert ((root / "memories" / "1.yaml").read_text(), (root / "memories" / "2.yaml").read_text()) == (WIP, STAGED)
    assert git(root, "status", "--porcelain") == " M memories/1.yaml\n M memories/2.yaml\n"


def test_a_memory_added_then_deleted_by_hand_is_not_passed_by(
        catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """5 links memory:3, is staged (git add) and then deleted from the work tree; HEAD lacks it:
    forget 3 passed it by, and the person's next git commit put the link to the forgotten memory
    in. It refuses, --force too, as for a file deleted by hand, naming the fix."""
    root = catalog_kb.root
    (root / "memories" / "3.yaml").write_text(memory("Three.", "shop.orders"))
    commit_all(root, "memory 3")
    (root / "memories" / "5.yaml").write_text(memory("Five.", "memory:3"))
    git(root, "add", "memories/5.yaml")
    (root / "memories" / "5.yaml").unlink()
    before = head(root)
    cd = f"cd {shlex.quote(str(root))}; "
    for force in ((), ("--force",)):
        proc = invoke_cli("--kb", root, "forget", "3", *force)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
            "Error: memories/5.yaml is staged in git's index (git add) and missing from the work tree, and HEAD lacks "
            f"it: your next git commit would commit the staged version. Bring the file back ({cd}git checkout -- "
            f"memories/5.yaml), or unstage it ({cd}git rm -q --cached -- memories/5.yaml), then retry. This command "
            "would rewrite it, and slayer-kb never commits work you have not committed (--force sets an edit aside, "
            "never a deletion), so nothing was done.\n"))
    assert (head(root), git(root, "status", "--porcelain")) == (before, "AD memories/5.yaml\n")
    git(root, "rm", "-q", "--cached", "--", "memories/5.yaml")
    assert invoke_cli("--kb", root, "forget", "3", check=True).stdout == "Forgot memory 3\n"


def test_a_save_over_a_memory_added_then_deleted_by_hand_refuses(
        catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """5 is staged (git add) and then deleted from the work tree; HEAD lacks it. A save over it
    (--id 5) committed a new 5, replacing the staged version in git's index and bringing back the
    file the person deleted, where forget's rewrite refuses the same file: it refuses in the same
    words, and saves once the person unstaged it."""
    root = catalog_kb.root
    (root / "memories" / "5.yaml").write_text(memory("Five.", "shop.orders"))
    git(root, "add", "memories/5.yaml")
    (root / "memories" / "5.yaml").unlink()
    before = head(root)
    cd = f"cd {shlex.quote(str(root))}; "
    proc = invoke_cli("--kb", root, "save", "--id", "5", "Over it.", "-e", "shop.orders")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        "Error: memories/5.yaml is staged in git's index (git add) and missing from the work tree, and HEAD lacks "
        f"it: your next git commit would commit the staged version. Bring the file back ({cd}git checkout -- "
        f"memories/5.yaml), or unstage it ({cd}git rm -q --cached -- memories/5.yaml), then retry. Nothing was "
        "done: slayer-kb never commits work you have not committed.\n"))
    assert (head(root), git(root, "status", "--porcelain")) == (before, "AD memories/5.yaml\n")
    assert not (root / "memories" / "5.yaml").exists()
    git(root, "rm", "-q", "--cached", "--", "memories/5.yaml")
    assert invoke_cli("--kb", root, "save", "--id", "5", "Over it.", "-e", "shop.orders", check=True).returncode == 0


@pytest.mark.parametrize("leased", [False, True])
def test_an_auto_id_save_passes_over_a_memory_added_then_deleted_by_hand(
        tmp_path: Path, invoke_cli: CliRunner, leased: bool) -> None:
    """1 is staged (git add) and then deleted from the work tree, HEAD lacking it, and 1 is the
    next auto id: a save with no id committed its own 1 over the person's staged version (gone
    from git's index). It takes the next id, leaving the staged 1 as it was; a save with nothing
    staged asks git nothing more (git's index is searched for the name)."""
    root = make_team(tmp_path)[1][0] if leased else make_catalog_kb(tmp_path / "kb")
    (root / "memories").mkdir(exist_ok=True)
    (root / "memories" / "1.yaml").write_text(memory("Mine, staged.", "shop.orders"))
    git(root, "add", "memories/1.yaml")
    (root / "memories" / "1.yaml").unlink()
    proc = invoke_cli("--kb", root, "save", "Auto.", "-e", "orders.amount")
    assert (proc.returncode, proc.stdout) == (0, "Saved memory 2 (created)\n  entities: shop.orders.amount\n")
    assert git(root, "status", "--porcelain") == "AD memories/1.yaml\n"
    assert git(root, "show", ":memories/1.yaml") == memory("Mine, staged.", "shop.orders")
    with traced_git(tmp_path) as runs:
        invoke_cli("--kb", root, "save", "Auto again.", "-e", "orders.amount", check=True)
    assert runs("diff-index") == []


@pytest.mark.parametrize("version", ["2", "4"])
def test_an_import_of_many_observations_asks_git_s_index_once(
        tmp_path: Path, invoke_cli: CliRunner, version: str) -> None:
    """The check for a staged file under each new auto id is one for the whole take: git's index
    file scanned once (version 2), or one ``git diff-index`` where its paths are not spelt whole
    (version 4), never one a memory."""
    root = make_catalog_kb(tmp_path / "kb")
    git(root, "update-index", "--index-version", version)
    export = tmp_path / "export.json"
    export.write_text(json.dumps([{"title": f"t{n}", "content": f"content {n}", "type": "decision"}
                                  for n in range(5)]))
    with traced_git(tmp_path) as runs:
        proc = invoke_cli("--kb", root, "import-engram", str(export), check=True)
    assert proc.stdout == f"From {export}: 5 imported.\n"
    assert len(runs("diff-index")) == (0 if version == "2" else 1)


def test_a_save_on_a_branch_with_no_commit_yet_saves(catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """On an orphan branch (HEAD unborn, git's index and the work tree kept), the check for a
    file staged and then deleted asked git to compare git's index with HEAD, which is not there:
    a save --id failed "bad revision 'HEAD'". Before the first commit every staged file is new."""
    root = catalog_kb.root
    git(root, "checkout", "-q", "--orphan", "fresh")
    proc = invoke_cli("--kb", root, "save", "--id", "kb.new", "New.", "-e", "shop.orders")
    assert (proc.returncode, proc.stdout.splitlines()[0]) == (0, "Saved memory kb.new (created)")
    assert git(root, "log", "--format=%s", "fresh") == "memory: save kb.new\n"
    assert "memories/kb.new.yaml" in git(root, "ls-tree", "-r", "--name-only", "fresh")


@pytest.mark.parametrize("args, said", [
    (["session-end", "s9"], 'Session "s9" completed\nwarning: session \'s9\' was never started; it is recorded '
                            "as started and ended now\n"),
    (["save-prompt", "hello", "--session", "s8"], 'Prompt saved: "hello"\n'),
])
def test_a_session_command_in_a_repository_with_no_commit_records_it(
        tmp_path: Path, invoke_cli: CliRunner, args: list[str], said: str) -> None:
    """A fresh git init, no commit: session-end of a session never started, and save-prompt,
    failed "bad revision 'HEAD'"; they record the session in the first commit."""
    root = tmp_path / "kb"
    root.mkdir()
    git(root, "init", "-q")
    (root / "memories").mkdir()
    proc = invoke_cli("--kb", root, *args)
    assert (proc.returncode, proc.stdout) == (0, said)
    assert git(root, "ls-tree", "-r", "--name-only", "HEAD") == f"sessions/{args[-1]}.yaml\n"


def test_an_intent_to_add_file_deleted_by_hand_is_not_called_staged(
        catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A file marked with git add -N (intent to add: no version staged) and then deleted: a save
    over its id was refused with "your next git commit would commit the staged version", which
    git would not do; the save goes ahead."""
    root = catalog_kb.root
    (root / "memories" / "kb.five.yaml").write_text("draft\n")
    git(root, "add", "-N", "memories/kb.five.yaml")
    (root / "memories" / "kb.five.yaml").unlink()
    proc = invoke_cli("--kb", root, "save", "--id", "kb.five", "Five.", "-e", "shop.orders")
    assert (proc.returncode, proc.stdout.splitlines()[0]) == (0, "Saved memory kb.five (created)")
    assert git(root, "show", "HEAD:memories/kb.five.yaml").startswith("learning: Five.\n")
    assert git(root, "status", "--porcelain") == ""


def test_a_dry_run_of_prune_says_the_real_run_would_refuse(unfinished: Path, invoke_cli: CliRunner) -> None:
    """prune --dry-run listed 1, 2 and 4 as memories it would strip, exit 0, while prune refused
    them all: a dry run says what the run would do, its refusal in the same words."""
    root = unfinished
    git(root, "rm", "-q", "models/shop/refunds.yaml")
    git(root, "commit", "-q", "-m", "refunds gone by hand", "--", "models/shop/refunds.yaml")
    before = head(root)
    refused = (1, "", f"Error: memories/1.yaml, memories/2.yaml, memories/4.yaml {HOW}\n")
    for args in (("prune",), ("prune", "--dry-run")):
        proc = invoke_cli("--kb", root, *args)
        assert (proc.returncode, proc.stdout, proc.stderr) == refused, args
    assert_untouched(root, before)
    # --force sets the work aside in the real run; its dry run sets nothing aside, and says what
    # the run does: it strips HEAD's versions of the files set aside (HEAD's 1 lacks the link to
    # shop.refunds.id that the edit adds), and keeps the user's, which the dry run named not.
    dry = invoke_cli("--kb", root, "prune", "--dry-run", "--force", check=True)
    assert dry.stdout == ("Would strip from memory 1: shop.refunds.amount\nWould strip from memory 2: shop.refunds\n"
                          "would keep your uncommitted versions as: memories/1.yaml.orig, memories/2.yaml.orig, "
                          "memories/4.yaml.orig\n")
    assert_untouched(root, before)
    wip = WIP.replace("- shop.refunds.amount\n", "- shop.refunds.amount\n- shop.refunds.id\n")
    (root / "memories" / "1.yaml").write_text(wip)
    assert invoke_cli("--kb", root, "prune", "--dry-run", "--force", check=True).stdout == dry.stdout
    assert (head(root), (root / "memories" / "1.yaml").read_text()) == (before, wip)
    assert not list((root / "memories").glob("*.orig"))
    done = invoke_cli("--kb", root, "prune", "--force", check=True).stdout
    assert done == dry.stdout.replace("Would strip", "Stripped").replace("would keep", f"(commit {head(root)[:12]})\nkept")
    assert (root / "memories" / "1.yaml.orig").read_text() == wip


def test_prune_force_says_what_it_set_aside_when_nothing_is_left_to_strip(
        catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """Only a memory never committed links what is gone: prune --force set it aside (HEAD lacks
    it, so it left the work tree) and said only "Nothing to prune", never where the file went."""
    root = catalog_kb.root
    git(root, "rm", "-q", "models/shop/refunds.yaml")
    git(root, "commit", "-q", "-m", "refunds gone by hand")
    (root / "memories" / "4.yaml").write_text(NEW)
    said = "Nothing to prune: every reference resolves.\n{} your uncommitted versions as: memories/4.yaml.orig\n"
    assert invoke_cli("--kb", root, "prune", "--dry-run", "--force", check=True).stdout == said.format("would keep")
    assert invoke_cli("--kb", root, "prune", "--force", check=True).stdout == said.format("kept")
    assert (root / "memories" / "4.yaml.orig").read_text() == NEW and not (root / "memories" / "4.yaml").exists()


def test_catalog_files_count_too(catalog_kb: KnowledgeBase) -> None:
    root = catalog_kb.root
    model = root / "models" / "shop" / "refunds.yaml"
    model.write_text(model.read_text() + "# WIP-NOT-FOR-COMMIT\n")
    (root / "priority.yaml").write_text("priority:\n- wh\n- shop\n")  # reordered, not committed
    before = head(root)
    kb = KnowledgeBase(root)
    for call, path in [
        (lambda: kb.delete_leaf("shop.refunds.order_id"), "models/shop/refunds.yaml"),
        (lambda: kb.delete_model("shop.refunds"), "models/shop/refunds.yaml"),
        (lambda: kb.delete_datasource("wh"), "priority.yaml"),
    ]:
        with pytest.raises(ConflictError, match=f"^{path} has changes that are not committed"):
            call()
    assert head(root) == before
    assert model.read_text().endswith("# WIP-NOT-FOR-COMMIT\n")
    # An untouched path is no one's unfinished work: saving a new memory goes on.
    kb.save_memory("New.", ["shop.orders"], id="new")
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["memories/new.yaml"]
    assert git(root, "status", "--porcelain") == " M models/shop/refunds.yaml\n M priority.yaml\n"


def test_many_files_are_checked_with_one_status_of_their_folders(catalog_kb: KnowledgeBase) -> None:
    """More than a few paths are asked about by folder (git matches every file against every
    pathspec): the dirty one among twenty is still found, and so is a new one."""
    root = catalog_kb.root
    for n in range(20):
        (root / "memories" / f"m{n}.yaml").write_text(memory(f"Memory {n}.", "shop.refunds"))
    commit_all(root, "twenty memories")
    (root / "memories" / "m13.yaml").write_text(memory("Memory 13, edited.", "shop.refunds"))
    (root / "memories" / "new.yaml").write_text(memory("New.", "shop.refunds"))
    (root / "memories" / "bystander.yaml").write_text(memory("Not about refunds.", "shop.orders"))
    kb = KnowledgeBase(root)
    with pytest.raises(ConflictError, match=r"^memories/m13\.yaml, memories/new\.yaml have changes"):
        kb.delete_model("shop.refunds")
    assert kb.store.uncommitted(["memories/"]) == {"memories/m13.yaml": None}
    result = kb.delete_model("shop.refunds", force=True)
    assert result.kept == ["memories/m13.yaml.orig", "memories/new.yaml.orig"]
    assert len(result.rewritten) == 20
    assert (root / "memories" / "bystander.yaml").read_text() == memory("Not about refunds.", "shop.orders")


def test_renumber_names_the_uncommitted_files_it_refuses(unfinished: Path) -> None:
    from slayer_kb.ops.renumber import renumber

    with pytest.raises(ConflictError) as info:
        renumber(KnowledgeBase(unfinished), "HEAD")
    assert str(info.value) == (
        "The repository has uncommitted changes to tracked files (memories/1.yaml, memories/2.yaml); "
        "commit or stash them (git stash) and run the command again."
    )


def test_a_save_over_a_memory_deleted_or_moved_by_hand_is_refused(indexed_example_kb: KnowledgeBase,
                                                                  invoke_cli: CliRunner) -> None:
    """HEAD has memories/5.yaml, the work tree not (moved aside, not committed): a save to id 5 used
    to commit over HEAD's memory 5 and call it "created". The refusal names the move, and where
    the file went, as get says it: it said "deleted in the work tree" even of a git mv, with steps
    that did not start in the KB's folder."""
    root = indexed_example_kb.root
    (root / "memories" / "5.yaml").rename(root / "memories" / "kb.five.yaml")
    git(root, "mv", "memories/6.yaml", "memories/six.yaml")
    (root / "memories" / "7.yaml").unlink()
    head = git(root, "rev-parse", "HEAD")
    cd = f"cd {shlex.quote(str(root))}; "
    nothing_done = ", then retry. Nothing was done: slayer-kb never commits work you have not committed."
    told = {
        "5": "memories/5.yaml was moved to memories/kb.five.yaml (slayer-kb now reads it as memory 'kb.five'), and "
             f"HEAD still has it at memories/5.yaml: a move that is not committed. Move it back ({cd}mv "
             f"memories/kb.five.yaml memories/5.yaml), or commit the move ({cd}git add -A -- memories/5.yaml "
             f"memories/kb.five.yaml; git commit){nothing_done}",
        "6": "memories/6.yaml was moved to memories/six.yaml (slayer-kb now reads it as memory 'six'), and HEAD still "
             f"has it at memories/6.yaml: a move that is not committed. Move it back ({cd}git mv memories/six.yaml "
             f"memories/6.yaml), or commit the move ({cd}git add -A -- memories/6.yaml memories/six.yaml; git "
             f"commit){nothing_done}",
        "7": "memories/7.yaml is missing from the work tree, and HEAD still has it: a deletion (or a move) that is not "
             f"committed. Bring the file back ({cd}git checkout HEAD -- memories/7.yaml), or commit the deletion "
             f"({cd}git rm memories/7.yaml; git commit){nothing_done}",
    }
    for memory_id, message in told.items():
        proc = invoke_cli("--kb", root, "--json", "save", "a note", "-e", "shop.orders.amount", "--id", memory_id)
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "conflict", "message": message}}, f"Error: {message}\n"), memory_id
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == (
        " D memories/5.yaml\n D memories/7.yaml\nR  memories/6.yaml -> memories/six.yaml\n?? memories/kb.five.yaml\n")
    git(root, "rm", "-q", "memories/5.yaml")
    git(root, "commit", "-q", "-m", "drop 5")
    saved = invoke_cli("--kb", root, "--json", "save", "a note", "-e", "shop.orders.amount", "--id", "5", check=True)
    assert json_of(saved)["action"] == "created"


def test_a_session_file_moved_by_hand_is_named_as_a_session(indexed_example_kb: KnowledgeBase,
                                                            invoke_cli: CliRunner) -> None:
    """The move of a session's file is said of the session its new name spells, not of a memory."""
    root = indexed_example_kb.root
    git(root, "mv", "sessions/ses-20261014-dbt-review.yaml", "sessions/dbt-review.yaml")
    proc = invoke_cli("--kb", root, "session-end", "ses-20261014-dbt-review")
    cd = f"cd {shlex.quote(str(root))}; "
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        "Error: sessions/ses-20261014-dbt-review.yaml was moved to sessions/dbt-review.yaml (slayer-kb now reads it "
        "as session 'dbt-review'), and HEAD still has it at sessions/ses-20261014-dbt-review.yaml: a move that is not "
        f"committed. Move it back ({cd}git mv sessions/dbt-review.yaml sessions/ses-20261014-dbt-review.yaml), or "
        f"commit the move ({cd}git add -A -- sessions/ses-20261014-dbt-review.yaml sessions/dbt-review.yaml; git "
        "commit), then retry. Nothing was done: slayer-kb never commits work you have not committed.\n"))


def test_a_file_git_is_told_not_to_look_at_is_never_rewritten(indexed_example_kb: KnowledgeBase,
                                                              invoke_cli: CliRunner) -> None:
    """``git update-index --assume-unchanged`` (or ``--skip-worktree``) hides a file's changes from
    git status: an update took the WIP line of such a memory into nowhere (the file rewritten from
    HEAD's version), and git's index kept the old blob, or staged the memory's deletion, so the
    user's next ``git commit`` undid the update or deleted the memory. Refused, with the fix."""
    root = indexed_example_kb.root
    git(root, "update-index", "--assume-unchanged", "memories/1.yaml")
    wip = (root / "memories" / "1.yaml").read_text() + "# WIP-NOT-FOR-COMMIT\n"
    (root / "memories" / "1.yaml").write_text(wip)
    git(root, "update-index", "--skip-worktree", "memories/2.yaml")
    with (root / "memories" / "2.yaml").open("a") as file:
        file.write("# WIP\n")
    before = head(root)
    for args, path, mark in ((("update", "1", "--description", "d", "--force"), "memories/1.yaml", "assume-unchanged"),
                             (("forget", "2"), "memories/2.yaml", "skip-worktree")):
        proc = invoke_cli("--kb", root, *args, cwd=root)  # the fix names the file from there
        assert (proc.returncode, proc.stdout) == (1, ""), proc.stderr
        assert proc.stderr == (
            f"Error: {path} is marked {mark} in git's index, so git shows none of its changes, and this command "
            "would rewrite it: slayer-kb never commits work you have not committed, and git's index would not "
            f"take the commit, so nothing was done. Clear the mark (git update-index --no-{mark} -- {path}), "
            "see what git status shows, then retry.\n")
    assert head(root) == before and (root / "memories" / "1.yaml").read_text() == wip
    # The fix as told: the WIP line shows, and a forget lands in git's index as in HEAD.
    git(root, "update-index", "--no-skip-worktree", "--", "memories/2.yaml")
    git(root, "update-index", "--no-assume-unchanged", "--", "memories/1.yaml")
    assert git(root, "status", "--porcelain") == " M memories/1.yaml\n M memories/2.yaml\n"
    git(root, "checkout", "--", "memories/2.yaml")
    invoke_cli("--kb", root, "forget", "2", check=True)
    assert git(root, "status", "--porcelain") == " M memories/1.yaml\n"


def test_a_memory_a_sparse_checkout_leaves_out_is_not_called_deleted(indexed_example_kb: KnowledgeBase,
                                                                     invoke_cli: CliRunner) -> None:
    """A sparse checkout leaves a file out of the work tree: get, update and a save over it called
    it a deletion not committed and said to commit it with ``git rm``, which deletes the memory for
    everyone."""
    root = indexed_example_kb.root
    git(root, "update-index", "-q", "--refresh")  # a copied repository's stat data, or git keeps the file
    git(root, "sparse-checkout", "set", "--no-cone", "/*", "!/memories/5.yaml")
    assert not (root / "memories" / "5.yaml").exists() and git(root, "status", "--porcelain") == ""
    told = ("memories/5.yaml is not checked out: git's index marks it skip-worktree (as a sparse checkout does for "
            "the files it leaves out), and HEAD has it. Check it out (add it to the sparse checkout, or run git "
            "sparse-checkout disable)")
    before = head(root)
    assert invoke_cli("--kb", root, "get", "5").stderr == f"Error: {told}.\n"
    saved = invoke_cli("--kb", root, "save", "--id", "5", "over it", "-e", "shop.orders.amount")
    assert (saved.returncode, saved.stderr) == (
        1, f"Error: {told}, then retry. Nothing was done: slayer-kb never commits work you have not committed.\n")
    assert head(root) == before
    # A cascade strips HEAD's 5 too (it passed it by, leaving its link), and leaves it out still.
    deleted = invoke_cli("--kb", root, "delete-leaf", "shop.orders.is_test", check=True)
    assert "stripped it from 5 memories: 5, 6, 8," in deleted.stdout
    assert "- shop.orders.is_test\n" not in git(root, "show", "HEAD:memories/5.yaml")
    assert not (root / "memories" / "5.yaml").exists() and git(root, "status", "--porcelain") == ""

def test_a_save_keeps_the_session_a_sparse_checkout_leaves_out(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A sparse checkout leaves sessions/s1.yaml out; a save with --session s1 read no session
    file, made a new one and committed it over HEAD's: its project, start and prompts lost. The
    memory is saved and HEAD's session kept, still left out; a command on the session itself (an
    Engram import naming it too) refuses, saying how to check it out."""
    root = make_catalog_kb(tmp_path / "kb")
    invoke_cli("--kb", root, "save", "First.", "-e", "shop.orders", "--session", "s1", "--project", "p", check=True)
    invoke_cli("--kb", root, "save-prompt", "an important prompt", "--session", "s1", check=True)
    session = git(root, "show", "HEAD:sessions/s1.yaml")
    git(root, "update-index", "-q", "--refresh")  # a copied repository's stat data, or git keeps the file
    git(root, "sparse-checkout", "set", "--no-cone", "/*", "!/sessions/s1.yaml")
    assert not (root / "sessions" / "s1.yaml").exists()
    invoke_cli("--kb", root, "save", "Second.", "-e", "shop.orders", "--session", "s1", "--project", "q", check=True)
    assert git(root, "show", "--name-only", "--format=", "HEAD") == "memories/2.yaml\n"
    assert git(root, "show", "HEAD:sessions/s1.yaml") == session
    before = head(root)
    export = tmp_path / "engram.json"  # an Engram import naming the session: it was made anew too
    export.write_text('{"sessions": [{"id": "s1", "project": "q", "started_at": "2026-03-01 10:00:00"}]}')
    for args in (["save-prompt", "another", "--session", "s1"], ["session-end", "s1"], ["import-engram", str(export)]):
        proc = invoke_cli("--kb", root, *args)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
            "Error: sessions/s1.yaml is not checked out: git's index marks it skip-worktree (as a sparse checkout "
            "does for the files it leaves out), and HEAD has it. Check it out (add it to the sparse checkout, or run "
            "git sparse-checkout disable), then retry. Nothing was done: slayer-kb never commits work you have "
            "not committed.\n")), args
    assert (head(root), git(root, "ls-files", "-t", "--", "sessions/s1.yaml")) == (before, "S sessions/s1.yaml\n")
    assert not (root / "sessions" / "s1.yaml").exists() and git(root, "status", "--porcelain") == ""


# A command killed right after its commit's update-ref, before it wrote a file or staged one.
KILLED_AFTER_PUBLISHING = """
import os
from slayer_kb.cli import main
from slayer_kb.store import repo
repo.GitStore._finish = lambda *args, **kwargs: os._exit(3)
main()
"""


def test_a_crashed_commit_is_finished_without_what_a_sparse_checkout_leaves_out(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """Memory 16 links 15; a sparse checkout leaves 16 out. A forget of 15 strips the link from
    16 in git's index and leaves it out of the work tree; killed after its update-ref, the next
    command's finish of that commit wrote 16 into the work tree and cleared its skip-worktree mark
    (git ls-files -t: H), checking out what the person's sparse checkout leaves out; a finish that
    failed on another file staged the commit's version of 16 without its mark, as its command did."""
    root = indexed_example_kb.root
    git(root, "update-index", "-q", "--refresh")  # a copied repository's stat data, or git keeps the file
    git(root, "sparse-checkout", "set", "--no-cone", "/*", "!/memories/16.yaml")
    before = head(root)
    killed = subprocess.run([sys.executable, "-c", KILLED_AFTER_PUBLISHING, "--kb", str(root), "forget", "15"],
                            capture_output=True, text=True)
    assert (killed.returncode, head(root) != before) == (3, True), killed.stderr
    assert (root / ".slayer-kb" / "journal.json").exists()
    # A folder where the deleted 15 was: the finish fails, git's index takes the commit meanwhile.
    (root / "memories" / "15.yaml").unlink()
    (root / "memories" / "15.yaml" / "x").mkdir(parents=True)
    failed = invoke_cli("--kb", root, "get", "1")
    assert (failed.returncode, "memories/15.yaml: Is a directory." in failed.stderr) == (1, True), failed.stderr
    assert git(root, "ls-files", "-t", "--", "memories/16.yaml") == "S memories/16.yaml\n"
    (root / "memories" / "15.yaml" / "x").rmdir()
    (root / "memories" / "15.yaml").rmdir()

    invoke_cli("--kb", root, "get", "1", check=True)  # the next command finishes the commit
    assert not (root / "memories" / "15.yaml").exists() and not (root / "memories" / "16.yaml").exists()
    assert git(root, "ls-files", "-t", "--", "memories/15.yaml", "memories/16.yaml") == "S memories/16.yaml\n"
    assert git(root, "show", ":memories/16.yaml") == git(root, "show", "HEAD:memories/16.yaml")
    assert "memory:15" not in git(root, "show", "HEAD:memories/16.yaml")
    assert git(root, "status", "--porcelain") == ""
    assert not (root / ".slayer-kb" / "journal.json").exists()


def test_a_marked_file_that_holds_its_committed_version_is_rewritten(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """``git config core.ignoreStat true`` makes git mark every file it adds assume-unchanged: the
    second write of a memory was refused for ever, though the file held no uncommitted work. A
    marked file holding its index's version is rewritten, and git's index takes the commit (the
    mark kept; a skip-worktree one was dropped from git's index); one holding a change is still
    refused."""
    root = make_empty_kb(tmp_path / "kb")
    git(root, "config", "core.ignoreStat", "true")
    invoke_cli("--kb", root, "save", "One", "--title", "one", check=True)
    assert git(root, "ls-files", "-v", "memories/1.yaml") == "h memories/1.yaml\n"
    for description in ("first", "second"):
        updated = invoke_cli("--kb", root, "update", "1", "--description", description)
        assert (updated.returncode, updated.stderr) == (0, ""), updated.stderr
        assert f"description: {description}\n" in git(root, "show", "HEAD:memories/1.yaml")
        assert git(root, "diff", "--cached", "--name-only", "HEAD") == ""  # git's index holds the commit
        assert git(root, "ls-files", "-v", "memories/1.yaml") == "h memories/1.yaml\n"
    with (root / "memories" / "1.yaml").open("a") as file:
        file.write("# WIP-NOT-FOR-COMMIT\n")
    refused = invoke_cli("--kb", root, "update", "1", "--description", "third")
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: memories/1.yaml is marked assume-unchanged in git's index")
    # A skip-worktree file holding its version is rewritten: git's update-index dropped it, and
    # git's index staged the memory's deletion for the user's next commit.
    invoke_cli("--kb", root, "save", "Two", "--title", "two", check=True)
    git(root, "update-index", "--skip-worktree", "memories/2.yaml")
    marks = git(root, "ls-files", "-v", "memories/2.yaml")
    assert marks == "s memories/2.yaml\n"  # skip-worktree, and assume-unchanged by core.ignoreStat
    invoke_cli("--kb", root, "update", "2", "--description", "kept", check=True)
    assert "description: kept\n" in git(root, "show", "HEAD:memories/2.yaml")
    assert git(root, "status", "--porcelain") == git(root, "diff", "--cached", "--name-only", "HEAD") == ""
    assert git(root, "ls-files", "-v", "memories/2.yaml") == marks
    # ... and forgotten, its deletion staged as committed.
    invoke_cli("--kb", root, "forget", "2", check=True)
    assert git(root, "ls-files", "memories/").split() == ["memories/.gitkeep", "memories/1.yaml"] and not (root / "memories" / "2.yaml").exists()
    assert git(root, "diff", "--cached", "--name-only", "HEAD") == ""


def assert_index_holds_head(root: Path, marks: str) -> None:
    """git's index holds HEAD's memories with exactly the marks ``marks`` (``git ls-files -v``)."""
    assert git(root, "ls-files", "-v", "memories/") == marks
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "diff", "--cached", "--name-status", "HEAD") == ""


def test_a_mark_cleared_while_a_process_stays_open_is_not_put_back(tmp_path: Path) -> None:
    """A long-lived process (the warm server, MCP) noted a skip-worktree mark when a save let the
    file through, kept the note when nothing was committed, and marked the file again at its next
    commit, after the person had cleared the mark. A mark is read as the file is staged."""
    root = make_catalog_kb(tmp_path / "kb")
    kb = KnowledgeBase(root)
    kb.save_memory("One learning", ["shop.orders"], id="m1")
    git(root, "update-index", "--skip-worktree", "memories/m1.yaml")
    assert kb.save_memory("One learning", ["shop.orders"], id="m1").commit is None  # it holds this already
    git(root, "update-index", "--no-skip-worktree", "memories/m1.yaml")
    kb.update("m1", description="changed")
    assert "description: changed\n" in git(root, "show", "HEAD:memories/m1.yaml")
    assert_index_holds_head(root, "H memories/m1.yaml\n")


def test_each_mark_of_a_rewritten_file_is_kept(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A file marked both skip-worktree and assume-unchanged (``s``) lost assume-unchanged when a
    command rewrote it; each file keeps exactly its marks, git's index the commit's version. The
    marks are read once a command: the check that the files may be rewritten read them, and the
    staging of the commit read them again (two ``git ls-files``)."""
    root = make_catalog_kb(tmp_path / "kb")
    for name in ("m1", "m2"):
        invoke_cli("--kb", root, "save", f"Linked: {name}", "-e", "shop.orders", "--id", name, check=True)
    for name in ("both", "hidden", "skipped"):
        invoke_cli("--kb", root, "save", f"Links: {name}", "-e", "memory:m1,memory:m2", "--id", name, check=True)
    git(root, "update-index", "--skip-worktree", "memories/both.yaml", "memories/skipped.yaml")
    git(root, "update-index", "--assume-unchanged", "memories/both.yaml", "memories/hidden.yaml")
    with traced_git(tmp_path) as runs:
        invoke_cli("--kb", root, "forget", "m1", check=True)  # strips memory:m1 from the three
    assert runs("ls-files -v") == ["ls-files -v -s -z -- memories/m1.yaml memories/both.yaml memories/hidden.yaml "
                                "memories/skipped.yaml"]
    assert "memory:m1" not in git(root, "show", "HEAD:memories/both.yaml")
    assert_index_holds_head(root, "s memories/both.yaml\nh memories/hidden.yaml\nH memories/m2.yaml\n"
                                  "S memories/skipped.yaml\n")
    # Holding a change, such files are refused, and the fix clears every mark that hides it.
    for name in ("both", "skipped"):
        with (root / "memories" / f"{name}.yaml").open("a") as file:
            file.write("# WIP\n")
    refused = invoke_cli("--kb", root, "forget", "m2", cwd=root)
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: memories/both.yaml is marked assume-unchanged and skip-worktree; memories/skipped.yaml is marked "
        "skip-worktree in git's index, so git shows none of their changes, and this command would rewrite them: "
        "slayer-kb never commits work you have not committed, and git's index would not take the commit, so nothing "
        "was done. Clear the marks (git update-index --no-assume-unchanged -- memories/both.yaml and git update-index "
        "--no-skip-worktree -- memories/both.yaml memories/skipped.yaml), see what git status shows, then retry.\n"))


def test_a_save_of_a_new_memory_reads_no_index_marks(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Reading the marks at staging made every save run one more git process (``ls-files``) for a
    file the commit's parent lacks, which git's index holds no entry of to mark; an update of a
    file the parent holds still reads them."""
    root = make_catalog_kb(tmp_path / "kb")
    with traced_git(tmp_path) as runs:
        invoke_cli("--kb", root, "save", "Amounts are in cents", "-e", "shop.orders", "--id", "m1", check=True)
    assert runs("ls-files") == []
    with traced_git(tmp_path) as runs:
        invoke_cli("--kb", root, "update", "m1", "--description", "changed", check=True)
    assert runs("ls-files -v") == ["ls-files -v -s -z -- memories/m1.yaml"]


def test_renumber_keeps_the_marks_of_the_files_it_rewrites(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """renumber checked for uncommitted work as git status does, marks left alone: a change a mark
    hid went into its commit, a skip-worktree file it rewrote was staged as deleted (``D`` and
    ``??``), and an assume-unchanged one kept its old version in git's index, which the person's
    next ``git commit`` put back."""
    root = make_catalog_kb(tmp_path / "kb")
    git(root, "branch", "other")
    invoke_cli("--kb", root, "save", "Ours", "-e", "shop.orders", check=True)
    for text in ("Skipped: see 1", "Hidden: see 1"):
        invoke_cli("--kb", root, "save", text, "-e", "memory:1", check=True)
    other = tmp_path / "other"  # another clone's ids: its own work tree and state
    git(root, "worktree", "add", "-q", str(other), "other")
    counted_apart(other)  # as another clone: the worktrees' shared count forgotten
    invoke_cli("--kb", other, "save", "Theirs", "-e", "shop.orders", check=True)
    git(root, "update-index", "--skip-worktree", "memories/2.yaml")
    git(root, "update-index", "--assume-unchanged", "memories/3.yaml")
    # A change the mark hides went into the renumber's commit: refused.
    committed = (root / "memories" / "2.yaml").read_text()
    (root / "memories" / "2.yaml").write_text(committed.replace("Skipped: see 1", "Skipped: see 1, WIP"))
    before = head(root)
    refused = invoke_cli("--kb", root, "renumber", "--onto", "other", cwd=root)
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: memories/2.yaml is marked skip-worktree in git's index, so git shows none of its changes, and this "
        "command would rewrite it: slayer-kb never commits work you have not committed, and git's index would not take "
        "the commit, so nothing was done. Clear the mark (git update-index --no-skip-worktree -- memories/2.yaml), see "
        "what git status shows, then retry.\n"))
    assert head(root) == before and "WIP" in (root / "memories" / "2.yaml").read_text()
    (root / "memories" / "2.yaml").write_text(committed)
    renumbered = invoke_cli("--kb", root, "renumber", "--onto", "other", check=True)
    assert renumbered.stdout.startswith("Renumbered 1 memory onto other:\n  1 -> 4\n"), renumbered.stdout
    assert "memory:4" in git(root, "show", "HEAD:memories/2.yaml") and "memory:4" in git(root, "show", "HEAD:memories/3.yaml")
    assert_index_holds_head(root, "S memories/2.yaml\nh memories/3.yaml\nH memories/4.yaml\n")



def test_a_link_in_a_file_broken_by_an_unfinished_edit_is_not_left_behind(
        catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """7 links memory:3 and the model shop.refunds, and is mid-edit, its YAML broken: the index
    cannot read it, so forget 3 and delete-model committed without it, leaving HEAD's 7 linking a
    memory and a model no longer there, and said nothing. They refuse as for any unfinished work."""
    root = catalog_kb.root
    (root / "memories" / "3.yaml").write_text(memory("Three.", "shop.orders"))
    (root / "memories" / "7.yaml").write_text(memory("Seven.", "memory:3", "shop.refunds"))
    (root / "memories" / "9.yaml").write_text(memory("Nine.", "memory:3", "shop.refunds"))
    commit_all(root, "three memories")
    broken = "learning: [Seven, unfinished\n"
    (root / "memories" / "7.yaml").write_text(broken)
    before = head(root)
    for command in (("forget", "3"), ("delete-model", "shop.refunds")):
        proc = invoke_cli("--kb", root, *command)
        assert (proc.returncode, proc.stdout) == (1, ""), proc.stdout
        assert proc.stderr.endswith("Error: " + one_file("memories/7.yaml", True) + "\n")
    assert (head(root), (root / "memories" / "7.yaml").read_text()) == (before, broken)
    # The model deleted by hand: a dry run of prune names the memories in id order, 7 with them.
    git(root, "rm", "-q", "models/shop/refunds.yaml")
    git(root, "commit", "-q", "-m", "refunds gone by hand")
    dry = invoke_cli("--kb", root, "prune", "--dry-run", "--force", check=True)
    assert dry.stdout == ("Would strip from memory 7: shop.refunds\nWould strip from memory 9: shop.refunds\n"
                          "would keep your uncommitted versions as: memories/7.yaml.orig\n")
    proc = invoke_cli("--kb", root, "forget", "3", "--force")
    assert (proc.stdout, proc.stderr) == (
        "Forgot memory 3\n  stripped memory:3 from 7, 9\nkept your uncommitted versions as: memories/7.yaml.orig\n", "")
    assert git(root, "show", "HEAD:memories/7.yaml") == memory("Seven.", "shop.refunds")
    assert (root / "memories" / "7.yaml.orig").read_text() == broken


def test_a_memory_deleted_by_hand_is_not_passed_by(catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """7 links memory:3 and the model shop.refunds, and its file is deleted by hand, not
    committed: forget 3 and delete-model committed without it, HEAD's 7 left linking what they
    removed, and said nothing. They refuse, --force too (it sets an edit aside, never a
    deletion), naming both fixes; each fix by hand lets the command through."""
    root = catalog_kb.root
    (root / "memories" / "3.yaml").write_text(memory("Three.", "shop.orders"))
    (root / "memories" / "7.yaml").write_text(memory("Seven.", "memory:3", "shop.refunds"))
    (root / "memories" / "9.yaml").write_text(memory("Nine.", "memory:3", "shop.refunds"))
    commit_all(root, "three memories")
    invoke_cli("--kb", root, "search", "seven", check=True)  # indexed with 7 in it
    (root / "memories" / "7.yaml").unlink()
    before = head(root)
    cd = f"cd {shlex.quote(str(root))}; "
    refused = ("Error: memories/7.yaml is missing from the work tree, and HEAD still has it: a deletion (or a move) "
               f"that is not committed. Bring the file back ({cd}git checkout HEAD -- memories/7.yaml), or commit the "
               f"deletion ({cd}git rm memories/7.yaml; git commit), then retry. This command would rewrite it, and "
               "slayer-kb never commits work you have not committed (--force sets an edit aside, never a "
               "deletion), so nothing was done.\n")
    for command in (("forget", "3"), ("forget", "3", "--force"), ("delete-model", "shop.refunds", "--force")):
        proc = invoke_cli("--kb", root, *command)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", refused), command
    assert (head(root), git(root, "status", "--porcelain")) == (before, " D memories/7.yaml\n")
    # The deletion committed: forget 3 goes on, with no 7 to strip.
    git(root, "rm", "-q", "memories/7.yaml")
    git(root, "commit", "-q", "-m", "7 gone")
    assert invoke_cli("--kb", root, "forget", "3", check=True).stdout == "Forgot memory 3\n  stripped memory:3 from 9\n"
    # Deleted again and staged (git rm), then brought back: delete-model strips it from both.
    git(root, "rm", "-q", "memories/9.yaml")
    proc = invoke_cli("--kb", root, "delete-model", "shop.refunds")
    assert proc.stderr.endswith(f"or commit the deletion ({cd}git commit), then retry. This command would rewrite it, and "
                                "slayer-kb never commits work you have not committed (--force sets an edit aside, "
                                "never a deletion), so nothing was done.\n"), proc.stderr
    git(root, "checkout", "HEAD", "--", "memories/9.yaml")
    proc = invoke_cli("--kb", root, "delete-model", "shop.refunds", check=True)
    assert proc.stdout.endswith("; stripped it from 1 memory: 9\n"), proc.stdout
    assert git(root, "show", "HEAD:memories/9.yaml") == "learning: Nine.\n" + CREATED


def test_memories_moved_and_deleted_by_hand_each_get_their_own_fix(
        catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """7 and 9 link memory:3; 7 is moved by hand and 9 deleted, neither committed: forget 3 gave
    7's fix (move it back) to 9 as well ("the same for each"), though 9 was deleted."""
    root = catalog_kb.root
    (root / "memories" / "3.yaml").write_text(memory("Three.", "shop.orders"))
    for name in ("7", "9"):
        (root / "memories" / f"{name}.yaml").write_text(memory(f"Memory {name}.", "memory:3"))
    commit_all(root, "three memories")
    (root / "memories" / "7.yaml").rename(root / "memories" / "7b.yaml")
    (root / "memories" / "9.yaml").unlink()
    cd = f"cd {shlex.quote(str(root))}; "
    proc = invoke_cli("--kb", root, "forget", "3")
    assert (proc.returncode, proc.stderr) == (1, (
        "Error: memories/7.yaml was moved to memories/7b.yaml (slayer-kb now reads it as memory '7b'), and HEAD still "
        f"has it at memories/7.yaml: a move that is not committed. Move it back ({cd}mv memories/7b.yaml "
        f"memories/7.yaml), or commit the move ({cd}git add -A -- memories/7.yaml memories/7b.yaml; git commit). "
        "memories/9.yaml is missing from the work tree, and HEAD still has it: a deletion (or a move) that is not "
        f"committed. Bring the file back ({cd}git checkout HEAD -- memories/9.yaml), or commit the deletion "
        f"({cd}git rm memories/9.yaml; git commit), then retry. This command would rewrite them, and slayer-kb never "
        "commits work you have not committed (--force sets an edit aside, never a deletion), so nothing was done.\n"))


# A hook that saves an edit of FILE as an editor would, once, while the command's commit is
# published: after slayer-kb checked that FILE holds no uncommitted work, before it writes FILE.
EDITED_WHILE_PUBLISHING = """#!/bin/sh
[ "$1" = committed ] || exit 0
[ -e .git/edited ] && exit 0
touch .git/edited
printf 'learning: USER EDIT while the command ran\\ncreated_at: 2026-01-01T00:00:00Z\\n' > "{file}"
"""


@pytest.mark.parametrize("command", [("update", "3", "--learning", "The agent's text."), ("forget", "3"),
                                     ("forget", "kb.paid-revenue")])
def test_an_edit_saved_while_a_command_writes_is_kept(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                      command: tuple[str, ...]) -> None:
    """An editor's save after the command's check and before its write (a commit's hooks and
    signing take seconds) was written over, or deleted with the file: lost for good, unsaid. It is
    kept as <file>.orig, and the command says so; the commit holds the command's version."""
    root = indexed_example_kb.root
    edited = "memories/kb.refund-policy.yaml" if command[1] == "kb.paid-revenue" else "memories/3.yaml"
    hook = root / ".git" / "hooks" / "reference-transaction"
    hook.write_text(EDITED_WHILE_PUBLISHING.format(file=edited))
    hook.chmod(0o755)
    done = invoke_cli("--kb", root, *command)
    assert (done.returncode, done.stderr) == (0, (
        f"warning: {root / edited} changed while this command wrote it (an editor's save?): your version is kept as "
        f"{root / edited}.orig, and the commit holds the command's; compare the two and bring back what you meant.\n"))
    assert (root / f"{edited}.orig").read_text().startswith("learning: USER EDIT while the command ran\n")
    # The work tree holds the commit's version (none: the memory forgotten).
    held = None if command == ("forget", "3") else git(root, "show", f"HEAD:{edited}")
    assert ((root / edited).read_text() if (root / edited).exists() else None) == held
    assert git(root, "status", "--porcelain") == f"?? {edited}.orig\n"


def test_a_file_touched_while_a_command_writes_it_keeps_no_copy(indexed_example_kb: KnowledgeBase,
                                                               invoke_cli: CliRunner) -> None:
    """Touched, its mode changed, or saved unchanged by an editor after the check: it holds what
    the command checked, so no copy is kept and nothing is said (a .orig and a warning were)."""
    root = indexed_example_kb.root
    hook = root / ".git" / "hooks" / "reference-transaction"
    hook.write_text('#!/bin/sh\n[ "$1" = committed ] || exit 0\ntouch -d 2001-01-01 memories/3.yaml\n'
                    'chmod g+w memories/3.yaml\n')
    hook.chmod(0o755)
    done = invoke_cli("--kb", root, "update", "3", "--description", "Touched meanwhile")
    assert (done.returncode, done.stderr, git(root, "status", "--porcelain")) == (0, "", "")
    assert git(root, "show", "HEAD:memories/3.yaml") == (root / "memories" / "3.yaml").read_text()


def test_a_staged_edit_deleted_from_the_work_tree_is_brought_back_from_git_s_index(
        indexed_example_kb: KnowledgeBase, invoke_cli) -> None:
    """16.yaml's edit was staged, then the file deleted (status MD): the advice was
    ``git checkout HEAD -- memories/16.yaml``, which writes HEAD's version over the staged edit
    too. ``git checkout -- memories/16.yaml`` brings the file back from git's index, edit kept."""
    root = indexed_example_kb.root
    path = root / "memories" / "16.yaml"
    edited = path.read_text().replace("learning: ", "learning: Staged. ", 1)
    path.write_text(edited)
    git(root, "add", "memories/16.yaml")
    path.unlink()
    proc = invoke_cli("--kb", root, "forget", "15", "--force")
    assert proc.returncode == 1
    [advice] = re.findall(r"Bring the file back \(([^)]*)\)", proc.stderr)
    assert advice == f"cd {shlex.quote(str(root))}; git checkout -- memories/16.yaml"
    subprocess.run(["sh", "-c", advice], check=True, capture_output=True)
    assert (path.read_text(), git(root, "status", "--porcelain")) == (edited, "M  memories/16.yaml\n")
