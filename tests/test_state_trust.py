"""A cloned KB never runs its derived state: a force-added .slayer-kb/, a .slayer-kb symlink, a
folder of another origin are set aside unread, and the index is rebuilt."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import StoreError
from testing import CliRunner, Watcher, eventually, git, hostile_toc, json_of, make_empty_kb, make_kb_after, traced_git


def _save_refunds(root: Path) -> None:
    kb = KnowledgeBase(root)
    kb.save_observation(title="Refunds", content="refunds are counted once")
    kb.close()


def refunds_kb(root: Path) -> Path:
    """A new KB at ``root`` (the top of its own repository) with one saved memory, as
    ``KnowledgeBase.init`` and a save make it: made once a process and copied (``make_kb_after``),
    its state folder stamped again as this folder's own."""
    return make_kb_after(root, "state-trust-refunds", _save_refunds)


def hostile_repo(tmp_path: Path, proof: Path) -> Path:
    """A KB whose repository force-adds a Whoosh table of contents whose segments run code."""
    origin = refunds_kb(tmp_path / "origin")
    hostile_toc(origin / ".slayer-kb" / "index", proof)
    git(origin, "add", "-f", ".slayer-kb/index/_MAIN_9.toc")
    git(origin, "commit", "-q", "-m", "hostile")
    return origin


def test_the_hostile_table_of_contents_runs_from_a_trusted_folder(tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    """The control for every test here: the table of contents they plant is one Whoosh opens. In
    our own folder, untracked (the check cannot tell it from ours), the next search runs it."""
    proof = tmp_path / "pwned"
    kb = tmp_path / "kb"
    refunds_kb(kb)
    assert invoke_cli("--kb", kb, "search", "refunds").returncode == 0
    hostile_toc(kb / ".slayer-kb" / "index", proof)
    invoke_cli("--kb", kb, "search", "refunds")
    assert proof.is_dir()
    assert set_aside(kb) == []


def test_a_cloned_pickle_is_never_opened(tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    proof = tmp_path / "pwned"
    origin = hostile_repo(tmp_path, proof)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert (clone / ".slayer-kb" / "index" / "_MAIN_9.toc").exists()
    proc = invoke_cli("--kb", clone, "search", "refunds", "--json")
    assert proc.returncode == 0, proc.stderr
    assert not proof.exists()
    assert json_of(proc)["memories"][0]["id"] == "1"
    aside = [p.name for p in clone.iterdir() if p.name.startswith(".slayer-kb.untrusted-")]
    assert len(aside) == 1
    assert f"was set aside as {aside[0]} and will be rebuilt: slayer-kb did not make it here" in proc.stderr
    # The set-aside folder is left as it was, for the user to look at.
    hostile = (origin / ".slayer-kb" / "index" / "_MAIN_9.toc").read_bytes()
    assert (clone / aside[0] / "index" / "_MAIN_9.toc").read_bytes() == hostile


def test_files_a_pull_brings_into_our_folder_are_not_opened(tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    proof = tmp_path / "pwned"
    clean = tmp_path / "clean"
    refunds_kb(clean)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(clean), str(clone))
    assert invoke_cli("--kb", clone, "search", "refunds").returncode == 0  # our own, stamped folder
    hostile_toc(clean / ".slayer-kb" / "index", proof)
    git(clean, "add", "-f", ".slayer-kb/index/_MAIN_9.toc")
    git(clean, "commit", "-q", "-m", "hostile")
    git(clone, "pull", "-q", "--no-rebase")
    proc = invoke_cli("--kb", clone, "search", "refunds")
    assert proc.returncode == 0, proc.stderr
    assert not proof.exists()
    assert "git tracks files in it (force-added to the repository)" in proc.stderr


def test_a_symlinked_state_folder_is_not_followed(tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    outside = tmp_path / "outside"
    (outside / "index").mkdir(parents=True)
    (outside / "index" / "keep.txt").write_text("mine")
    origin = tmp_path / "origin"
    refunds_kb(origin)
    (origin / ".slayer-kb").rename(tmp_path / "ours")
    os.symlink(outside, origin / ".slayer-kb")
    git(origin, "add", "-f", ".slayer-kb")
    git(origin, "commit", "-q", "-m", "link")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert (clone / ".slayer-kb").is_symlink()
    proc = invoke_cli("--kb", clone, "search", "refunds")
    assert proc.returncode == 0, proc.stderr
    assert "it is a symbolic link" in proc.stderr
    assert sorted(p.name for p in outside.rglob("*")) == ["index", "keep.txt"]
    assert (clone / ".slayer-kb").is_dir() and not (clone / ".slayer-kb").is_symlink()


def test_a_folder_set_aside_is_kept_out_of_git_add(tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    """A state folder replaced by a link out of the KB (not tracked) was set aside as an untracked
    ``.slayer-kb.untrusted-...`` that ``git add -A`` committed: a link out of the KB, pushed. Git's
    ``info/exclude`` of the clone (never committed) now ignores every folder set aside, once."""
    outside = tmp_path / "outside"
    outside.mkdir()
    kb = make_empty_kb(tmp_path / "kb")
    shutil.rmtree(kb / ".slayer-kb")
    os.symlink(outside, kb / ".slayer-kb")
    for again in (True, False):
        proc = invoke_cli("--kb", kb, "list")
        assert proc.returncode == 0 and "was set aside as .slayer-kb.untrusted-" in proc.stderr, proc.stderr
        if again:
            shutil.rmtree(kb / ".slayer-kb")
            os.symlink(outside, kb / ".slayer-kb")
    assert len(set_aside(kb)) == 2
    exclude = (kb / ".git" / "info" / "exclude").read_text()
    assert exclude.endswith("\n.slayer-kb.untrusted-*\n") and exclude.count(".slayer-kb.untrusted-*") == 1
    git(kb, "add", "-A")
    assert git(kb, "status", "--porcelain", "--ignored=no") == ""


def test_our_own_folder_is_trusted_and_ignores_itself(tmp_path: Path) -> None:
    kb = KnowledgeBase.init(tmp_path / "kb")
    kb.save_observation(title="One", content="one")
    assert (tmp_path / "kb" / ".slayer-kb" / ".gitignore").read_text().splitlines()[-1] == "*"
    # Opened again, nothing is set aside.
    KnowledgeBase(tmp_path / "kb").search("one")
    assert [p.name for p in (tmp_path / "kb").iterdir() if p.name.startswith(".slayer-kb")] == [".slayer-kb"]
    # Without the repository's own .gitignore, git still does not see the folder.
    (tmp_path / "kb" / ".gitignore").unlink()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path / "kb", capture_output=True, text=True).stdout
    assert ".slayer-kb" not in status


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the folder to another user")
def test_a_folder_of_another_user_is_set_aside(tmp_path: Path) -> None:
    kb = KnowledgeBase.init(tmp_path / "kb")
    kb.save_observation(title="One", content="one")
    os.chown(tmp_path / "kb" / ".slayer-kb", 12345, 12345)
    messages: list[str] = []
    from slayer_kb.store import state

    state.check(tmp_path / "kb" / ".slayer-kb", lambda: None, lambda: "", lambda: [], messages.append)
    assert "it belongs to another user" in messages[0]


def test_a_folder_another_process_is_making_is_never_seen_unstamped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight writers opening a new KB at once: one makes the folder while another checks it. Each
    time the maker writes a file, a check runs as another process's would; none may set it aside."""
    from slayer_kb.store import state

    KnowledgeBase.init(tmp_path / "kb")
    folder = tmp_path / "kb" / ".slayer-kb"
    if folder.exists():
        shutil.rmtree(folder)
    messages: list[str] = []
    write = state._write_small

    checking = False

    def another_check() -> None:
        nonlocal checking
        if not checking:  # a check writes too
            checking = True
            state.check(folder, lambda: None, lambda: "", lambda: [], messages.append)
            checking = False

    def write_then_let_another_check(path: Path, text: str) -> None:
        another_check()
        write(path, text)
        another_check()

    monkeypatch.setattr(state, "_write_small", write_then_let_another_check)
    state.make(folder)
    state.check(folder, lambda: None, lambda: "", lambda: [], messages.append)
    assert messages == []
    assert sorted(p.name for p in folder.iterdir()) == [".gitignore", "checked-head", "owner"]
    assert [p.name for p in folder.parent.iterdir() if p.name.startswith(".slayer-kb")] == [".slayer-kb"]


def test_two_processes_setting_the_same_folder_aside_both_go_on(tmp_path: Path) -> None:
    """Two agents opening a clone with a force-added folder at once: one moves it, the other
    finds it gone, or a new folder in its place, and leaves that alone."""
    from slayer_kb.store import state

    folder = tmp_path / ".slayer-kb"
    folder.mkdir()
    seen = os.lstat(folder)
    # Both decided the folder is untrusted (no stamp for this key); the first moves it away.
    reason = state._untrusted_reason(folder, seen, b"key")
    assert reason is not None
    first: list[str] = []
    second: list[str] = []
    state._set_aside(folder, seen, reason, first.append)
    state._set_aside(folder, seen, reason, second.append)
    assert len(first) == 1 and second == []
    assert [p.name.startswith(".slayer-kb.untrusted-") for p in tmp_path.iterdir()] == [True]
    # The first has made a new, trusted folder meanwhile: the second's verdict was on the old one.
    state.make(folder)
    state._set_aside(folder, seen, reason, second.append)
    assert second == [] and (folder / "owner").is_file()


def index_files(root: Path) -> dict[str, int]:
    """The inodes of the index's folder, its SQLite manifest and its Whoosh segments: a rebuild
    makes them all anew (a freshness check rewrites only small files: the state, a new TOC)."""
    index = root / ".slayer-kb" / "index"
    kept = [index, index / "manifest.db", *(p for p in index.iterdir() if p.suffix == ".seg")]
    return {p.name: p.stat().st_ino for p in kept}


def set_aside(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".slayer-kb.untrusted-"))


def tracking_clone(tmp_path: Path, how: str, under: str = "") -> Path:
    """A clone of a KB whose repository tracks a file under .slayer-kb (``file``) or .slayer-kb
    itself as a symbolic link (``link``) or a file (``plain``); the KB in the repository's folder
    ``under``, at its top by default. The clone's KB."""
    origin = tmp_path / "origin"
    if under:
        git(tmp_path, "init", "-q", str(origin))
    kb = origin / under
    if under:  # in a folder of the repository made above: its own init
        KnowledgeBase.init(kb).save_observation(title="Refunds", content="refunds are counted once")
    else:
        refunds_kb(kb)
    if how == "file":
        (kb / ".slayer-kb" / "x").write_text("committed by mistake\n")
        git(kb, "add", "-f", ".slayer-kb/x")
    elif how == "plain":
        shutil.rmtree(kb / ".slayer-kb")
        (kb / ".slayer-kb").write_text("committed by mistake\n")
        git(kb, "add", "-f", ".slayer-kb")
    else:
        shutil.rmtree(kb / ".slayer-kb")
        os.symlink("elsewhere", kb / ".slayer-kb")
        git(kb, "add", "-f", ".slayer-kb")
    git(kb, "commit", "-q", "-m", "state tracked")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    return clone / under


@pytest.mark.parametrize(("how", "what"), [("file", "1 file under .slayer-kb"),
                                           ("link", ".slayer-kb itself (a symbolic link)"),
                                           ("plain", ".slayer-kb itself (a file)")])  # fmt: skip
def test_a_clone_that_tracks_the_state_folder_is_set_aside_once(tmp_path: Path, invoke_cli, how: str,  # noqa: ANN001
                                                                 what: str) -> None:
    """Five commands in a row: the clone's folder is set aside once, with the way to stop
    tracking it (a file tracked as .slayer-kb was called a symbolic link); the folder slayer-kb
    then makes stays, and its index is not built again."""
    clone = tracking_clone(tmp_path, how)
    first = invoke_cli("--kb", clone, "search", "refunds")
    assert first.returncode == 0 and "Refunds" in first.stdout, first.stderr
    assert f"git tracks {what}" in first.stderr, first.stderr
    assert "Stop tracking it with 'git rm -r --cached .slayer-kb' and commit" in first.stderr
    aside = set_aside(clone)
    assert len(aside) == 1
    built = index_files(clone)
    folder = (clone / ".slayer-kb").stat().st_ino
    for command in (["search", "refunds"], ["list"], ["get", "1"], ["search", "counted once"]):
        proc = invoke_cli("--kb", clone, *command)
        assert proc.returncode == 0, proc.stderr
        assert "set aside" not in proc.stderr
    assert set_aside(clone) == aside
    assert (clone / ".slayer-kb").stat().st_ino == folder
    assert index_files(clone) == built


@pytest.mark.parametrize("attribute", ["ident", "text eol=crlf"])
def test_a_file_git_converts_as_it_checks_it_out_is_still_gits(tmp_path: Path, invoke_cli,  # noqa: ANN001
                                                              attribute: str) -> None:
    """A .gitattributes that converts what git writes (``ident`` expands ``$Id$``, ``eol=crlf``
    the line ends) made git's copy differ from its blob, so it was taken for our own file and
    opened: it is git's, and the folder is set aside unread."""
    clean = tmp_path / "clean"
    refunds_kb(clean)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(clean), str(clone))
    assert invoke_cli("--kb", clone, "search", "refunds").returncode == 0  # our own, stamped folder
    (clean / ".gitattributes").write_text(f".slayer-kb/index/*.toc {attribute}\n")
    (clean / ".slayer-kb" / "index" / "_MAIN_99.toc").write_bytes(b"a $Id$\nb\n")
    git(clean, "add", "-f", ".gitattributes", ".slayer-kb/index/_MAIN_99.toc")
    git(clean, "commit", "-q", "-m", "hostile")
    git(clone, "pull", "-q", "--no-rebase")
    assert (clone / ".slayer-kb" / "index" / "_MAIN_99.toc").read_bytes() != b"a $Id$\nb\n"
    proc = invoke_cli("--kb", clone, "search", "refunds")
    assert proc.returncode == 0, proc.stderr
    assert "git tracks files in it (force-added to the repository) and put index/_MAIN_99.toc there" in proc.stderr
    assert len(set_aside(clone)) == 1


def test_a_tracked_file_git_brings_back_without_moving_head_is_never_opened(tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    """The clone's folder was set aside, and ours made; ``git checkout -- .slayer-kb`` (HEAD
    stays) writes git's pickle into our folder again: it is set aside unread."""
    proof = tmp_path / "pwned"
    origin = hostile_repo(tmp_path, proof)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert invoke_cli("--kb", clone, "search", "refunds").returncode == 0
    assert invoke_cli("--kb", clone, "search", "refunds").returncode == 0
    assert len(set_aside(clone)) == 1
    searched_after(invoke_cli, clone, proof, ["checkout", "--", ".slayer-kb"])
    assert len(set_aside(clone)) == 2


def test_after_a_save_the_folder_is_listed_again_and_git_tracking_it_is_told_once(tmp_path: Path,
                                                                                invoke_cli) -> None:  # noqa: ANN001
    """A save's commit moves HEAD: the command after it lists what git tracks under the folder
    again, but does not repeat the "git tracks" warning for the same files; the command after
    that lists nothing; git's copy checked out into the folder is still set aside unread."""
    clone = tracking_clone(tmp_path, "file")
    assert invoke_cli("--kb", clone, "search", "refunds").returncode == 0  # the clone's folder set aside
    told = invoke_cli("--kb", clone, "list")
    assert "git tracks 1 file under .slayer-kb" in told.stderr, told.stderr
    saved = invoke_cli("--kb", clone, "save", "NULL means not returned", "--title", "Returns")
    assert saved.returncode == 0, saved.stderr
    with traced_git(tmp_path) as runs:
        after = invoke_cli("--kb", clone, "get", "1")
        listed = len(runs("ls-files"))
        again = invoke_cli("--kb", clone, "get", "1")
    assert (after.returncode, after.stderr, listed) == (0, "", 1)
    assert (again.returncode, again.stderr, len(runs("ls-files"))) == (0, "", 1)
    git(clone, "checkout", "--", ".slayer-kb")
    assert (clone / ".slayer-kb" / "x").read_text() == "committed by mistake\n"
    proc = invoke_cli("--kb", clone, "get", "1")
    assert proc.returncode == 0, proc.stderr
    assert "git tracks files in it (force-added to the repository) and put x there" in proc.stderr
    assert len(set_aside(clone)) == 2


def test_a_file_staged_into_the_folder_before_a_save_is_caught_after_it(tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    """A check, then a file git tracks put into the folder (force-added), then a save: the
    record of the check is not carried past the save's commit, so by the command after it at the
    latest the folder is set aside."""
    kb = tmp_path / "kb"
    refunds_kb(kb)
    assert invoke_cli("--kb", kb, "list").returncode == 0
    (kb / ".slayer-kb" / "x").write_text("force-added\n")
    git(kb, "add", "-f", ".slayer-kb/x")
    saved = invoke_cli("--kb", kb, "save", "amounts are in cents", "--title", "Cents")
    assert saved.returncode == 0, saved.stderr
    listed = invoke_cli("--kb", kb, "list")
    assert listed.returncode == 0, listed.stderr
    assert "git tracks files in it (force-added to the repository) and put x there" in saved.stderr + listed.stderr
    assert len(set_aside(kb)) == 1


def searched_after(invoke_cli: CliRunner, clone: Path, proof: Path, brings: list[str]) -> subprocess.CompletedProcess[str]:
    """``git BRINGS`` puts git's hostile table of contents into the clone's folder; the search
    after it answers, the payload not run, and says why the folder was set aside."""
    git(clone, *brings)
    assert (clone / ".slayer-kb" / "index" / "_MAIN_9.toc").is_file()
    proc = invoke_cli("--kb", clone, "search", "refunds", "--json")
    assert proc.returncode == 0, proc.stderr
    assert not proof.exists()
    assert json_of(proc)["memories"][0]["id"] == "1"
    assert "git tracks files in it (force-added to the repository) and put index/_MAIN_9.toc there" in proc.stderr
    return proc


def evil_branch_clone(tmp_path: Path, proof: Path, invoke_cli: CliRunner) -> Path:
    """A clone that has used its KB (its folder checked at HEAD) and fetched a branch ``evil``
    that force-adds a hostile table of contents under .slayer-kb/."""
    origin = tmp_path / "origin"
    refunds_kb(origin)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    for command in (["search", "refunds"], ["list"]):
        assert invoke_cli("--kb", clone, *command).returncode == 0
    git(origin, "checkout", "-q", "-b", "evil")
    hostile_toc(origin / ".slayer-kb" / "index", proof)
    git(origin, "add", "-f", ".slayer-kb/index/_MAIN_9.toc")
    git(origin, "commit", "-q", "-m", "hostile")
    git(origin, "checkout", "-q", "-")
    git(clone, "fetch", "-q", "origin")
    return clone


@pytest.mark.parametrize("brings", [["checkout", "origin/evil", "--", ".slayer-kb"],
                                    ["merge", "-q", "--squash", "origin/evil"],
                                    ["cherry-pick", "-n", "origin/evil"],
                                    ["restore", "--source", "origin/evil", "--staged", "--worktree", ".slayer-kb"]],
                         ids=["checkout", "merge-squash", "cherry-pick", "restore"])  # fmt: skip
def test_git_files_staged_without_moving_head_are_never_opened(tmp_path: Path, invoke_cli,  # noqa: ANN001
                                                               brings: list[str]) -> None:
    """Trying a branch's files without committing (HEAD stays, git's index changes) puts git's
    table of contents into our checked folder: the next command sets the folder aside unread."""
    proof = tmp_path / "pwned"
    clone = evil_branch_clone(tmp_path, proof, invoke_cli)
    proc = searched_after(invoke_cli, clone, proof, brings)
    assert "git tracks 1 file under .slayer-kb: Stop tracking it with 'git rm -r --cached .slayer-kb'" in proc.stderr
    assert len(set_aside(clone)) == 1


def test_a_stash_bringing_back_a_tracked_file_after_a_pull_is_never_opened(tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    """The advice followed but not committed ('git rm -r --cached .slayer-kb'), a pull (HEAD
    moves: nothing tracked under the folder then), then 'git stash': git's index and work tree
    are HEAD's again, git's table of contents in our folder; the next command sets it aside."""
    proof = tmp_path / "pwned"
    origin = hostile_repo(tmp_path, proof)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert invoke_cli("--kb", clone, "list").returncode == 0  # the clone's folder set aside
    git(clone, "rm", "-q", "-r", "--cached", ".slayer-kb")
    (origin / "README").write_text("upstream\n")
    git(origin, "add", "README")
    git(origin, "commit", "-q", "-m", "readme")
    git(clone, "pull", "-q", "--ff-only")
    assert invoke_cli("--kb", clone, "list").returncode == 0
    git(clone, "stash", "-q")
    assert (clone / ".slayer-kb" / "index" / "_MAIN_9.toc").is_file()
    proc = invoke_cli("--kb", clone, "search", "refunds")
    assert proc.returncode == 0, proc.stderr
    assert not proof.exists()
    assert "git tracks files in it (force-added to the repository) and put index/_MAIN_9.toc there" in proc.stderr
    assert len(set_aside(clone)) == 2


def test_a_kb_held_open_never_opens_what_git_put_in_its_folder_after_it_opened(
        tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    """A library user (as the MCP server) holds the KB open; git checks a branch's table of
    contents out into the folder meanwhile. Whoosh would read it at the next search (a newer
    generation than the one open): the search sets the folder aside first, and the KB refuses
    from then on, saying to open it again, which rebuilds the folder."""
    proof = tmp_path / "pwned"
    clone = evil_branch_clone(tmp_path, proof, invoke_cli)
    held = KnowledgeBase(clone)
    assert [hit["id"] for hit in held.search("refunds").memories] == ["1"]
    git(clone, "checkout", "origin/evil", "--", ".slayer-kb")
    for _twice in range(2):
        with pytest.raises(StoreError, match=r"^slayer-kb's state folder .*/clone/\.slayer-kb was set aside while this "
                                             r"process had the KB open: git put files there \(see the warning\)\. Start "
                                             r"this process again: it rebuilds the folder$"):
            held.search("refunds")
    assert held.replaced() is not None and "(an MCP server: restart it from its client)" in held.replaced()
    assert not proof.exists()
    assert len(set_aside(clone)) == 1
    assert [hit["id"] for hit in KnowledgeBase(clone).search("refunds").memories] == ["1"]
    assert not proof.exists()


def test_a_warm_server_never_opens_what_git_put_in_its_folder_and_hands_the_command_back(
        tmp_path: Path, invoke_cli, run_cli) -> None:  # noqa: ANN001
    """The same under the warm server: the relayed search after the checkout is not answered from
    the folder git wrote into; the server sets it aside, says so in its log and exits, and the
    client runs the search itself on a rebuilt folder."""
    proof = tmp_path / "pwned"
    clone = evil_branch_clone(tmp_path, proof, invoke_cli)
    server = Watcher(clone)
    try:
        server.wait_for_line("Watching")
        assert json_of(run_cli("--kb", clone, "search", "refunds", "--json"))["memories"][0]["id"] == "1"
        git(clone, "checkout", "origin/evil", "--", ".slayer-kb")
        proc = run_cli("--kb", clone, "search", "refunds", "--json")
        assert proc.returncode == 0, proc.stderr
        assert json_of(proc)["memories"][0]["id"] == "1"
        eventually(lambda: server.proc.poll() is not None, "the server's exit")
    finally:
        server.stop()
    assert not proof.exists()
    assert len(set_aside(clone)) == 1
    assert any("was set aside while this process had the KB open" in line for line in server.lines), server.lines


def test_a_kb_whose_git_index_holds_nothing_under_the_folder_is_checked_without_git(tmp_path: Path,
                                                                                    invoke_cli) -> None:  # noqa: ANN001
    """After a save (HEAD moved, git's index written) the next command checks the folder again:
    git's index file, read in the process, names no path under it, so no git process lists it."""
    kb = make_empty_kb(tmp_path / "kb")
    assert invoke_cli("--kb", kb, "save", "refunds are counted once", "--title", "Refunds").returncode == 0
    with traced_git(tmp_path) as runs:
        got = invoke_cli("--kb", kb, "get", "1")
    assert (got.returncode, got.stderr, runs("ls-files"), runs("cat-file")) == (0, "", [], [])
    assert "Refunds" in got.stdout


def test_a_kb_in_a_folder_whose_name_is_not_ascii_asks_git_what_it_tracks(tmp_path: Path,
                                                                        invoke_cli) -> None:  # noqa: ANN001
    """git on macOS keeps a path precomposed in its index, whatever the name the folder reads as
    here, so the index's bytes cannot tell that it lacks the folder: git is asked."""
    git(tmp_path, "init", "-q", "repo")
    kb = tmp_path / "repo" / "caf\u00e9"
    KnowledgeBase.init(kb)
    assert invoke_cli("--kb", kb, "save", "refunds are counted once", "--title", "Refunds").returncode == 0
    with traced_git(tmp_path) as runs:
        got = invoke_cli("--kb", kb, "get", "1")
    assert (got.returncode, got.stderr, len(runs("ls-files"))) == (0, "", 1)


def test_a_git_index_that_is_a_folder_is_read_as_git_reads_it(tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    """An index that is a folder made the state check's read of it end in a traceback."""
    kb = make_empty_kb(tmp_path / "kb")
    assert invoke_cli("--kb", kb, "save", "refunds are counted once", "--title", "Refunds").returncode == 0
    (kb / ".git" / "index").unlink()
    (kb / ".git" / "index").mkdir()
    got = invoke_cli("--kb", kb, "list")
    assert (got.returncode, "[1] Refunds" in got.stdout) == (0, True), got.stderr


@pytest.mark.parametrize("form", [["--index-version", "4"], ["--split-index"]])
def test_a_git_index_whose_paths_are_not_spelt_whole_is_asked_of_git(tmp_path: Path, invoke_cli,  # noqa: ANN001
                                                                     form: list[str]) -> None:
    """A version 4 index spells each path against the one before it, a split index keeps its
    entries in a shared file beside it: neither file holds the tracked folder's path, so git is
    asked, and its copy checked out into the folder is still set aside unread. (The KB is in a
    folder of its repository: git's cache of trees names each folder alone, not its path.)"""
    clone = tracking_clone(tmp_path, "file", under="kb")
    assert invoke_cli("--kb", clone, "list").returncode == 0  # the clone's folder set aside
    git(clone, "update-index", *form)
    assert b"kb/.slayer-kb" not in (clone.parent / ".git" / "index").read_bytes()
    git(clone, "checkout", "--", ".slayer-kb")
    with traced_git(tmp_path) as runs:
        proc = invoke_cli("--kb", clone, "list")
    assert proc.returncode == 0, proc.stderr
    assert "git tracks files in it (force-added to the repository) and put x there" in proc.stderr
    assert (len(runs("ls-files")), len(set_aside(clone))) == (1, 2)
