"""Nothing is published that the work tree cannot hold (issue 27, point 4): a folder or file that
cannot be written is refused before the commit; a work tree that fails after it is reported as it
is, with the way to finish, and git's index never stages the undoing of the commit."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import StoreError
from slayer_kb.store.repo import Change
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
        if not _chattr_works(tmp_path):
            pytest.skip("running as root, where mode bits stop no write, and chattr +i is not allowed here")
        subprocess.run(["chattr", "+i", str(path)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
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
        f"Is a directory. Once it can be written, run `git checkout HEAD -- {path}` to finish; until then "
        "`git commit -a` would undo the change.\n"
    )
    # git's index holds the commit's version: nothing staged undoes it.
    assert git(root, "diff", "--cached", "--name-only", "HEAD") == ""
    assert not (root / ".slayer-kb" / "journal.json").exists()
    # Reads go on (the memory the work tree lacks is simply not there yet).
    assert invoke_cli("--kb", root, "list", check=True).returncode == 0
    # The way out the message gives works.
    (root / path).rmdir()
    git(root, "checkout", "HEAD", "--", path)
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
