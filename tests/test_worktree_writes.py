"""Nothing is published that the work tree cannot hold (issue 27, point 4): a folder or file that
cannot be written is refused before the commit; a work tree that fails after it is reported as it
is, with the way to finish, and git's index never stages the undoing of the commit."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import StoreError
from slayer_kb.mcp.schema import Reply
from slayer_kb.mcp.tools import call_tool
from slayer_kb.store import indexlock
from slayer_kb.store.bounded import explain
from slayer_kb.store.repo import Change, GitStore
from testing import CliRunner, git

SAVE = ("save", "Refunds are negative rows", "-e", "shop.orders.amount")
UPDATE = ("update", "1", "--description", "the order total")


def _chattr_works(folder: Path) -> bool:
    """Whether this process may set the immutable flag (root with CAP_LINUX_IMMUTABLE, on a
    file system that has the flag)."""
    if shutil.which("chattr") is None:
        return False
    probe = folder / "chattr-probe"
    probe.write_text("x")
    try:
        if subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode != 0:
            return False
        subprocess.run(["chattr", "-i", str(probe)], check=True)
        return True
    finally:
        probe.unlink()


@contextlib.contextmanager
def not_writable(path: Path, tmp_path: Path) -> Iterator[None]:
    """``path`` (a folder or a file) made unwritable in the way that stops this user: for root,
    who ignores mode bits, the immutable flag; for others, mode bits (a file's folder too, or
    put_file would replace the file)."""
    if os.geteuid() == 0:
        with immutable(path, tmp_path):
            yield
        return
    targets = [path] if path.is_dir() else [path, path.parent]
    modes = {target: stat.S_IMODE(target.stat().st_mode) for target in targets}
    for target in targets:
        target.chmod(0o555 if target.is_dir() else 0o444)
    try:
        yield
    finally:
        for target, mode in modes.items():
            target.chmod(mode)


def _status(root: Path) -> str:
    return git(root, "status", "--porcelain")


def test_a_save_into_a_folder_that_takes_no_file_commits_nothing(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path
) -> None:
    root = indexed_example_kb.root
    invoke_cli("--kb", root, "list", check=True)  # the state folder exists: only memories/ is locked
    before = git(root, "rev-parse", "HEAD")
    with not_writable(root / "memories", tmp_path):
        proc = invoke_cli("--kb", root, *SAVE)
    reason = "Operation not permitted" if os.geteuid() == 0 else "Permission denied"
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"Error: Refusing to write memories/27.yaml: the folder memories/ does not take new files ({reason}). "
        "Make it writable for this user (or mount it read-write) and retry; nothing was saved.\n"
    )
    assert git(root, "rev-parse", "HEAD") == before
    assert _status(root) == ""
    assert not (root / "memories" / "27.yaml").exists()
    # Once the folder is writable, the same save works and takes the same id.
    assert invoke_cli("--kb", root, *SAVE, check=True).stdout.startswith("Saved memory 27 (created)")
    assert _status(root) == ""


def test_an_update_of_a_file_that_cannot_change_commits_nothing(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path
) -> None:
    root = indexed_example_kb.root
    invoke_cli("--kb", root, "list", check=True)
    before = git(root, "rev-parse", "HEAD")
    text = (root / "memories" / "1.yaml").read_bytes()
    with not_writable(root / "memories" / "1.yaml", tmp_path):
        proc = invoke_cli("--kb", root, *UPDATE)
    assert (proc.returncode, proc.stdout) == (1, "")
    if os.geteuid() == 0:  # immutable: the file itself refuses
        expected = "the file cannot be changed (Operation not permitted). Make it writable and retry"
    else:  # read-only in a read-only folder: neither written in place nor replaced
        expected = ("the folder memories/ does not take new files (Permission denied). Make it writable "
                    "for this user (or mount it read-write) and retry")
    assert proc.stderr == f"Error: Refusing to write memories/1.yaml: {expected}; nothing was saved.\n"
    assert git(root, "rev-parse", "HEAD") == before
    assert _status(root) == ""
    assert (root / "memories" / "1.yaml").read_bytes() == text
    # The next command finds nothing to finish: it works as if nothing had happened.
    assert invoke_cli("--kb", root, "get", "1", check=True).stdout.startswith("id: 1\n")


def test_a_file_in_place_of_a_folder_commits_nothing(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """What stops root too: a file where the path needs a folder."""
    root = indexed_example_kb.root
    (root / "notes").write_text("not a folder\n")
    git(root, "add", "notes")
    git(root, "commit", "-qm", "a file named notes")
    before = git(root, "rev-parse", "HEAD")
    kb = KnowledgeBase(root)
    with pytest.raises(StoreError) as info:
        kb.store.commit([Change("notes/s1.yaml", b"project: p\n")], "notes: s1")
    assert str(info.value) == ("Refusing to write notes/s1.yaml: notes is not a folder. Move it out "
                               "of the way and retry; nothing was saved.")
    assert git(root, "rev-parse", "HEAD") == before
    assert _status(root) == ""


HOOK = """#!/bin/sh
# After the update-ref that publishes slayer-kb's commit: a folder takes the file's place.
[ "$1" = committed ] || exit 0
[ -f "$SABOTAGE" ] || exit 0
target="$(cat "$SABOTAGE")"; rm -f "$SABOTAGE"
rm -f "$target"; mkdir "$target"
"""


@pytest.mark.parametrize(
    ("command", "path", "subject"),
    [(SAVE, "memories/27.yaml", "memory: save 27"), (UPDATE, "memories/1.yaml", "memory: update 1 (description)")],
    ids=["save", "update"],
)
def test_a_work_tree_that_fails_after_the_commit_says_so_and_how_to_finish(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path, command: tuple[str, ...], path: str, subject: str
) -> None:
    """Root-proof: a reference-transaction hook puts a folder where the file goes, right after the
    commit is published, so the write fails whoever runs it."""
    root = indexed_example_kb.root
    invoke_cli("--kb", root, "list", check=True)
    before = git(root, "rev-parse", "HEAD").strip()
    hook = root / ".git" / "hooks" / "reference-transaction"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    sabotage = tmp_path / "sabotage"
    sabotage.write_text(path)
    proc = invoke_cli("--kb", root, *command, env={"SABOTAGE": str(sabotage)})
    head = git(root, "rev-parse", "HEAD").strip()
    short = git(root, "rev-parse", "--short", "HEAD").strip()
    assert git(root, "rev-parse", "HEAD~1").strip() == before
    assert git(root, "log", "-1", "--format=%s").strip() == subject
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"Error: Committed as {short} ({subject}), but {path} could not be written in the work tree: "
        f"Is a directory. Once it can be written, run `git -C {root} checkout HEAD -- {path}` to finish; until then "
        "`git commit -a` would undo the change.\n"
    )
    # git's index holds the commit's version: nothing staged undoes it.
    assert git(root, "diff", "--cached", "--name-only", "HEAD") == ""
    assert not (root / ".slayer-kb" / "journal.json").exists()
    # Reads go on (the memory the work tree lacks is simply not there yet).
    assert invoke_cli("--kb", root, "list", check=True).returncode == 0
    # The way out the message gives works.
    (root / path).rmdir()
    subprocess.run(["sh", "-c", proc.stderr.split("run `")[1].split("`")[0]], cwd="/", check=True)  # from elsewhere
    assert _status(root) == ""
    shown = invoke_cli("--kb", root, "get", Path(path).stem, check=True).stdout
    committed = git(root, "show", f"{head}:{path}")
    assert (root / path).read_text() == committed
    assert shown.startswith(f"id: {Path(path).stem}\n")


def _mount_namespaces_work() -> bool:
    """Whether this process may make a private mount namespace with a read-only bind mount
    (root, where the kernel and container allow `unshare -m`)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind -o ro / /"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _mount_namespaces_work(), reason="needs root and `unshare -m` for a read-only bind mount")
def test_a_save_onto_a_read_only_mount_commits_nothing(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """The case as reported: memories/ on a read-only mount (a bind mount in a private mount
    namespace, so that nothing outside the test sees it)."""
    root = indexed_example_kb.root
    invoke_cli("--kb", root, "list", check=True)
    before = git(root, "rev-parse", "HEAD")
    memories = root / "memories"
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$1" "$1" && shift && exec "$@"', "sh", str(memories),
         sys.executable, "-m", "slayer_kb", "--kb", str(root), *SAVE],
        capture_output=True, text=True, timeout=120, cwd=root,
    )
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        "Error: Refusing to write memories/27.yaml: the folder memories/ does not take new files (Read-only file "
        "system). Make it writable for this user (or mount it read-write) and retry; nothing was saved.\n"
    )
    assert git(root, "rev-parse", "HEAD") == before
    assert _status(root) == ""


# -- refusals the commands did not foresee, and init's leftovers (issues 28/29) ---------------


@contextlib.contextmanager
def immutable(path: Path, tmp_path: Path) -> Iterator[None]:
    """``path`` refused to everyone, root too (EPERM): the immutable flag."""
    if not _chattr_works(tmp_path):
        pytest.skip("chattr +i is not allowed here")
    subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_refusal_no_message_foresaw_names_the_path_the_cause_and_the_fix(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last resort for an OSError in the CLI and in MCP tools: one line with the path, the
    cause and the fix (exit 1, the same message under --json), never a traceback or an
    "Internal error". (Every refusal found so far has a message of its own: a stand-in raises it.)"""
    def refused(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", "/srv/kb/memories/1.yaml")

    monkeypatch.setattr(KnowledgeBase, "stats", refused)
    message = ("Cannot use /srv/kb/memories/1.yaml: Permission denied; give this user access to it (chmod, chown), "
               "or use a copy of the knowledge base this user owns, then retry.")
    proc = invoke_cli("--kb", indexed_example_kb.root, "--json", "stats")
    assert (proc.returncode, proc.stderr) == (1, f"Error: {message}\n")
    assert json.loads(proc.stdout) == {"error": {"type": "store", "message": message}}
    assert call_tool(indexed_example_kb, "mem_stats", {}) == Reply(message, is_error=True)


def test_an_export_into_a_folder_that_takes_no_file_adds_nothing(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path
) -> None:
    target = tmp_path / "export" / "memories"
    target.mkdir(parents=True)
    (target / "old.md").write_text("an earlier export\n")
    with immutable(target, tmp_path):
        proc = invoke_cli("--kb", indexed_example_kb.root, "export-slayer", target.parent)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"Error: Cannot use the export's folder {target}: it takes no new folder (Operation not permitted); give a "
        "path in a folder you can write to.\n")
    assert [p.name for p in target.iterdir()] == ["old.md"]


def test_fmt_of_a_file_that_cannot_change_reports_it_and_leaves_no_temporary_file(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path
) -> None:
    root = indexed_example_kb.root
    memory = root / "memories" / "1.yaml"
    text = "# not canonical\n" + memory.read_text()
    memory.write_text(text)
    with immutable(memory, tmp_path):
        proc = invoke_cli("--kb", root, "fmt")
    assert (proc.returncode, proc.stdout) == (1, (
        f"{memory}:1: cannot be rewritten: Operation not permitted; give this user access to it (chmod, chown; "
        "chattr -i if it is immutable), then retry\n0 of 40 files needed formatting\n"))
    assert memory.read_text() == text
    assert sorted(p.name for p in memory.parent.iterdir() if not p.name.endswith(".yaml")) == []


def test_a_session_file_behind_a_file_says_how_to_fix_the_path(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner
) -> None:
    root = indexed_example_kb.root
    shutil.rmtree(root / "sessions")
    (root / "sessions").write_text("not a folder\n")
    proc = invoke_cli("--kb", root, "save-prompt", "hello")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("Error: sessions is a file, where the knowledge base keeps its sessions/ folder. Move it "
                           "out of the way, and commit that if git tracks it ('git mv sessions sessions.txt', then "
                           "'git commit'), then retry.\n")


def test_an_untrusted_state_folder_in_a_kb_that_cannot_move_it(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path
) -> None:
    root = indexed_example_kb.root
    state = root / ".slayer-kb"
    os.chown(state, 65534, 65534)  # another user's: set aside before anything in it is read
    with immutable(root, tmp_path):
        proc = invoke_cli("--kb", root, "list")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"Error: Cannot set {state} aside (it belongs to another user): Operation not permitted. Move or delete it "
        f"yourself (nothing in it is needed), or make {root} writable by this user, then retry.\n")


def test_a_git_index_that_cannot_be_replaced_is_named_with_the_fix(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path
) -> None:
    """Refused before the commit: one published while git's index cannot take it would stand with
    the index staging its undoing (it used to, with this very message but a commit made)."""
    root = indexed_example_kb.root
    before = git(root, "rev-parse", "HEAD")
    with immutable(root / ".git" / "index", tmp_path):
        proc = invoke_cli("--kb", root, *UPDATE)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"Error: Refusing to commit: git's index, {root / '.git' / 'index'}, cannot be updated: the file cannot be "
        "changed (Operation not permitted). Make it writable and retry; nothing was saved.\n")
    assert (git(root, "rev-parse", "HEAD"), _status(root)) == (before, "")
    invoke_cli("--kb", root, *UPDATE, check=True)
    assert _status(root) == ""


def test_a_save_while_git_holds_its_index_is_refused_and_a_read_only_index_file_is_no_obstacle(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """.git/index.lock: another git command (``git commit`` waiting for its editor) or a crashed one.
    A save used to commit anyway and leave ``git status`` showing its file deleted and untracked."""
    monkeypatch.setattr(indexlock, "INDEX_LOCK_WAIT", 0.05)  # the lock stays: no need to wait the 2 s
    root = indexed_example_kb.root
    before = git(root, "rev-parse", "HEAD")
    lock = root / ".git" / "index.lock"
    lock.touch()
    proc = invoke_cli("--kb", root, "--json", *SAVE)
    assert (proc.returncode, json.loads(proc.stdout)) == (1, {"error": {"type": "store", "message": (
        f"git's index is locked: {lock} exists, so another git command is running in this repository (or one that "
        "crashed left the file behind). Wait for it to finish, or delete that file if no git command is running, "
        "then retry; nothing was saved.")}})
    assert (git(root, "rev-parse", "HEAD"), _status(root)) == (before, "")
    lock.unlink()
    # git replaces its index by a rename: a read-only .git/index stops neither git nor a save.
    (root / ".git" / "index").chmod(0o444)
    saved = json.loads(invoke_cli("--kb", root, "--json", *SAVE, check=True).stdout)
    assert git(root, "show", "--stat", "--format=%s", "HEAD").splitlines()[0] == f"memory: save {saved['memory_id']}"
    assert _status(root) == ""


def test_a_save_waits_for_a_git_command_that_holds_the_index_briefly(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git status` (an editor runs it every few seconds) takes index.lock for milliseconds: a save
    that meets it waits for it to go, as a bound allows, rather than being refused. Here the
    other git command finishes when the save first waits (the store's clock is the test's)."""
    root = indexed_example_kb.root
    lock = root / ".git" / "index.lock"
    lock.touch()
    monkeypatch.setattr(indexlock, "time", types.SimpleNamespace(monotonic=time.monotonic,
                                                            sleep=lambda _seconds: lock.unlink(missing_ok=True)),
                        raising=False)
    saved = json.loads(invoke_cli("--kb", root, "--json", *SAVE, check=True).stdout)
    assert git(root, "log", "-1", "--format=%s") == f"memory: save {saved['memory_id']}\n"
    assert _status(root) == ""


def test_a_save_whose_staging_meets_a_git_command_that_is_gone_by_its_check_retries(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`git status` run in a loop (an editor's) took index.lock while the save's staging ran and let
    it go before the save looked for it: the save was reported failed ("Committed as ..., but git's
    index could not take ..."). Here git on PATH is real git, run while another command holds the
    lock, which goes as that git exits."""
    root = indexed_example_kb.root
    lock, once = root / ".git" / "index.lock", tmp_path / "held-once"
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    # As git takes it: only where no lock is (a commit holds git's own while it stages: indexhold.py).
    shim.write_text(f'#!/bin/sh\ncase " $* " in *" update-index --add "*) [ -e "{once}" ] || held=1;; esac\n'
                    f'if [ -n "$held" ] && [ ! -e "{lock}" ]; then\n'
                    f'  touch "{once}" "{lock}"; "{shutil.which("git")}" "$@"; rc=$?; rm -f "{lock}"; exit $rc\nfi\n'
                    f'[ -n "$held" ] && touch "{once}"\n'
                    f'exec "{shutil.which("git")}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    saved = json.loads(invoke_cli("--kb", root, "--json", *SAVE, check=True).stdout)
    assert once.exists()
    assert git(root, "log", "-1", "--format=%s") == f"memory: save {saved['memory_id']}\n"
    assert _status(root) == ""


def test_a_git_index_held_while_a_commit_is_published_and_a_staging_refused_says_the_commit_stands(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git's index is held from before the update-ref (as git commit holds it: indexhold.py), so
    another git command started meanwhile (here: by a hook the update-ref runs) is refused; and a
    staging refused all the same (here: the copy it stages into locked by that hook) leaves the
    commit standing, the error saying so and how to finish; it used to be reported as saved, with
    ``git status`` showing the file deleted and untracked."""
    monkeypatch.setattr(indexlock, "INDEX_LOCK_WAIT", 0.05)
    root = indexed_example_kb.root
    lock = root / ".git" / "index.slayer-kb.lock"
    hook = root / ".git" / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\n[ "$1" = committed ] || exit 0\n'
                    f'git reset -q 2>"{root}/refused"\ntouch "{lock}"\n')
    hook.chmod(0o755)
    proc = invoke_cli("--kb", root, *SAVE)
    hook.unlink()
    assert (root / "refused").read_text().startswith(f"fatal: Unable to create '{root}/.git/index.lock': File exists.")
    short, subject = git(root, "show", "-s", "--format=%h%n%s", "HEAD").splitlines()
    memory = subject.removeprefix("memory: save ")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"Error: Committed as {short} ({subject}), but git's index could not take memories/{memory}.yaml: git's "
        f"index is locked: {lock} exists, so another git command is running in this repository (or one that "
        "crashed left the file behind). Wait for it to finish, or delete that file if no git command is running, "
        f"then retry. Once it can, run any slayer-kb command that writes (or `git -C {root} reset -q -- "
        f"memories/{memory}.yaml`) "
        "to finish; until then `git status` shows the change undone in git's index, and `git commit` would undo "
        "it.\n")
    assert not (root / ".git" / "index.lock").exists()  # let go of: the error says how to finish
    lock.unlink()
    (root / "refused").unlink()
    invoke_cli("--kb", root, *UPDATE, check=True)  # finishes the staging first
    assert _status(root) == ""
    assert git(root, "log", "-2", "--format=%s").splitlines() == ["memory: update 1 (description)", subject]


@pytest.mark.parametrize("inside", [False, True], ids=["into-the-folder", "into-a-new-folder"])
def test_init_that_cannot_commit_leaves_nothing_behind(
    invoke_cli: CliRunner, tmp_path: Path, inside: bool
) -> None:
    """init in a repository whose .git refuses the commit: an error naming the fix, and neither
    the folder it made nor the .slayer-kb it made is left; what was there stays."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "notes.txt").write_text("mine\n")
    before = sorted(p.name for p in repo.iterdir())
    target = repo / "kb" if inside else repo
    with immutable(repo / ".git", tmp_path):
        proc = invoke_cli("init", target)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"Error: Refusing to commit: git's index, {repo}/.git/index, cannot be updated: the folder .git/ does not take "
        "new files (Operation not permitted). Make it writable for this user (or mount it read-write) and retry; "
        "nothing was saved.\n")
    assert sorted(p.name for p in repo.iterdir()) == before
    assert (repo / "notes.txt").read_text() == "mine\n"


def test_gits_own_words_for_a_full_disk_get_the_fix() -> None:
    """git's pack writer (maintenance's repack) says "Out of diskspace", not ENOSPC's words."""
    said = "fatal: sha1 file '.git/objects/pack/tmp_pack_bND3Ck' write error. Out of diskspace"
    assert explain(said) == f"{said} (the disk is full: free some space and retry)"


def test_git_attributes_that_convert_the_kbs_files_refuse_the_save(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner
) -> None:
    """A clone's .gitattributes can make git read a work-tree file as other bytes than the blob
    slayer-kb writes (working-tree-encoding, a filter git has a command for): the save used to be
    committed, then git's index refused the file (or staged something else) and ``git status``
    showed it deleted and untracked. A filter git has no command for is ignored, by git too."""
    root = indexed_example_kb.root
    for attributes, refused in [("memories/*.yaml working-tree-encoding=UTF-16", "27"),
                                ("*.yaml filter=rot13", None), ("*.yaml filter=rot13", "28")]:
        (root / ".gitattributes").write_text(attributes + "\n")
        git(root, "add", ".gitattributes")
        git(root, "commit", "-q", "--allow-empty", "-m", "attributes")
        before = git(root, "rev-parse", "HEAD"), _status(root)
        proc = invoke_cli("--kb", root, *SAVE)
        if refused is None:
            assert (proc.returncode, _status(root)) == (0, ""), proc.stderr
            git(root, "config", "filter.rot13.clean", "tr a-z n-za-m")  # the user's own git now has the filter
        else:
            assert (proc.returncode, proc.stderr) == (1, (
                f"Error: Refusing to write memories/{refused}.yaml: git's attributes give it {attributes.split()[1]}, "
                "so git would read the file slayer-kb writes as other bytes and show it changed. Take that attribute "
                "off the knowledge base's memories/ and sessions/ (in .gitattributes, then commit), then retry; "
                "nothing was saved.\n"))
            assert (git(root, "rev-parse", "HEAD"), _status(root)) == before


def test_git_refused_index_lock_that_is_not_there_gets_gits_own_words(
    indexed_example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """git could not create index.lock for another cause than another git command (here .git
    refuses new files): the error was "index.lock exists ... delete that file", a file that is not
    there. git's own words name the cause; the retries while the bound lasts stay."""
    monkeypatch.setattr(indexlock, "INDEX_LOCK_WAIT", 0.05)
    root = indexed_example_kb.root
    store = GitStore(root)
    with immutable(root / ".git", tmp_path), pytest.raises(StoreError) as refused:
        store.git_writing_index("reset", "-q", "--keep", "HEAD")
    assert type(refused.value) is StoreError
    assert str(refused.value) == (
        f"git reset failed: fatal: Unable to create '{root / '.git' / 'index.lock'}': Operation not permitted (the "
        "knowledge base is not writable by this user: make it writable (chmod, chown; chattr -i if immutable, or "
        "mount it read-write), or use a copy somewhere writable, then retry)")
    assert not (root / ".git" / "index.lock").exists()
