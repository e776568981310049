"""A writer killed (SIGKILL: the OOM killer, a container stopped) the moment its commit is published,
before its files are staged: git's index stays locked, as ``git commit`` leaves it, so a person's
plain ``git commit`` refuses rather than commit the old index (which would undo the commit: a save's
memory gone from HEAD, a forget undone); the next slayer-kb command finishes the staging and lets go
of the lock, and the person's commit then goes through with the memory kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import NotFoundError, StoreError
from slayer_kb.store import indexhold, indexlock
from slayer_kb.store.repo import GitStore
from testing import git
from testing.variants import default_first

# The reference-transaction hook the killed writer's update-ref runs: once the ref is moved, it
# kills its grandparent (the writer, which started that git) with SIGKILL. Only for a writer
# started with KILL_WRITER set: the person's git commit runs the hook too.
KILLING_HOOK = """#!/bin/sh
[ "$1" = committed ] && [ -n "$KILL_WRITER" ] || exit 0
read -r _ _ _ writer _ < /proc/$PPID/stat
kill -9 "$writer"
"""

WRITE = {
    "save": "kb.save_memory('Redis, 5 min TTL.', ['orders.amount'], id='cache')",
    "forget": "kb.forget('kept')",
}


def killed_at_publish(root: Path, write: str) -> None:
    """Run ``write`` in a writer of its own, killed by the hook the moment HEAD moves."""
    hook = root / ".git" / "hooks" / "reference-transaction"
    hook.write_text(KILLING_HOOK)
    hook.chmod(0o755)
    code = f"import sys; from slayer_kb import KnowledgeBase; kb = KnowledgeBase(sys.argv[1]); {write}"
    try:
        writer = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True,
                                env={**os.environ, "KILL_WRITER": "1", "SLAYER_KB_SERVER": "off"})
    finally:
        hook.unlink()
    assert writer.returncode == -signal.SIGKILL, writer.stderr


def killed_in(root: Path, call: str, then: str) -> None:
    """Run ``then`` in a process of its own that kills itself with SIGKILL as it enters ``call``
    (a module's function, ``"journal.write"``: as a kill lands there), or right after it returns
    (``"indexhold.take_lock>"``)."""
    module, _, name = call.partition(".")
    after = name.endswith(">")
    name = name.rstrip(">")
    code = f"""import os, signal, sys
from slayer_kb import KnowledgeBase
from slayer_kb.store import {module} as module
real = module.{name}
def killing(*args, **kwargs):
    if not {after}:
        os.kill(os.getpid(), signal.SIGKILL)
    out = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
module.{name} = killing
kb = KnowledgeBase(sys.argv[1])
{then}"""
    run = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True,
                         env={**os.environ, "SLAYER_KB_SERVER": "off"})
    assert run.returncode == -signal.SIGKILL, run.stderr


def person_commits(root: Path) -> subprocess.CompletedProcess[str]:
    """A person's plain commit of their own edit (an IDE's commit button)."""
    return subprocess.run(["git", "commit", "-qam", "docs: a note"], cwd=root, capture_output=True, text=True)


@pytest.mark.parametrize("write", default_first(["save", "forget"]))
def test_a_commit_killed_before_its_staging_keeps_a_persons_git_commit_from_undoing_it(
        catalog_kb: KnowledgeBase, write: str) -> None:
    root = catalog_kb.root
    (root / "README.md").write_text("notes\n")
    git(root, "add", "README.md")
    git(root, "commit", "-qm", "readme")
    catalog_kb.save_memory("Kept until forgotten.", ["orders.amount"], id="kept")
    before = git(root, "rev-parse", "HEAD").strip()
    path = "memories/cache.yaml" if write == "save" else "memories/kept.yaml"

    killed_at_publish(root, WRITE[write])
    published = git(root, "rev-parse", "HEAD").strip()
    assert published != before
    assert bool(git(root, "ls-tree", "--name-only", "HEAD", "--", path)) == (write == "save")

    with open(root / "README.md", "a", encoding="utf-8") as readme:
        readme.write("a note\n")
    refused = person_commits(root)
    assert refused.returncode == 128
    assert f"Unable to create '{root / '.git' / 'index.lock'}': File exists." in refused.stderr
    assert git(root, "rev-parse", "HEAD").strip() == published  # nothing committed over it
    # A backup agent's chmod changes the lock's inode times: the next command knows it all the same.
    (root / ".git" / "index.lock").chmod(0o600)

    # The next slayer-kb command (a read: it finds the journal and takes the lock) finishes it.
    kb = KnowledgeBase(root)
    if write == "save":
        assert kb.get("cache").learning == "Redis, 5 min TTL."
    else:
        with pytest.raises(NotFoundError, match="forgotten"):
            kb.get("kept")
    assert not (root / ".git" / "index.lock").exists()
    assert git(root, "status", "--porcelain", "--untracked-files=no") == " M README.md\n"
    assert (root / path).exists() == (write == "save")

    committed = person_commits(root)
    assert committed.returncode == 0, committed.stderr
    assert git(root, "show", "--name-only", "--format=", "HEAD") == "README.md\n"
    assert bool(git(root, "ls-tree", "--name-only", "HEAD", "--", path)) == (write == "save")
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""


@pytest.mark.slow
def test_the_next_command_never_removes_an_index_lock_another_git_command_took(
        catalog_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The killed writer's lock deleted by hand (as git's message says to when no git runs), and git's
    index then taken by a git command of the person's: the next slayer-kb command leaves that lock
    alone (the journal names the killed writer's by the nonce it holds), says the commit's files
    wait for git's index, and finishes once the lock is gone."""
    monkeypatch.setattr(indexlock, "INDEX_LOCK_WAIT", 0.05)
    root = catalog_kb.root
    catalog_kb.save_memory("Kept until forgotten.", ["orders.amount"], id="kept")
    killed_at_publish(root, WRITE["save"])
    lock = root / ".git" / "index.lock"
    assert lock.exists()
    lock.unlink()
    lock.write_bytes(b"another git's index, being written")
    with pytest.raises(StoreError, match=f"git's index could not take its files: git's index is locked: {lock} exists"):
        KnowledgeBase(root).get("cache")
    assert lock.read_bytes() == b"another git's index, being written"
    lock.unlink()
    assert KnowledgeBase(root).get("cache").learning == "Redis, 5 min TTL."
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""
    assert sorted(p.name for p in (root / ".git").glob("index*")) == ["index"]


def test_a_writer_killed_before_its_journal_is_written_leaves_git_s_index_free(
        catalog_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed as it writes its journal (a busy disk's fsync): no lock is taken yet, so nothing is left
    that would block the next save, or the person's git add, until someone deletes it by hand."""
    monkeypatch.setattr(indexlock, "INDEX_LOCK_WAIT", 0.05)
    root = catalog_kb.root
    before = git(root, "rev-parse", "HEAD").strip()
    killed_in(root, "journal.write", WRITE["save"])
    assert sorted(p.name for p in (root / ".git").glob("index*")) == ["index"]
    assert git(root, "rev-parse", "HEAD").strip() == before
    KnowledgeBase(root).save_memory("Kafka keeps 7 days.", ["orders.amount"], id="kafka")
    (root / "README.md").write_text("notes\n")
    git(root, "add", "README.md")
    assert git(root, "status", "--porcelain", "--untracked-files=no") == "A  README.md\n"
    assert git(root, "ls-tree", "--name-only", "HEAD", "--", "memories/cache.yaml") == ""


@pytest.mark.slow
def test_a_command_killed_while_it_finishes_a_killed_commit_under_a_lock_of_its_own_leaves_it_named(
        catalog_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The killed writer's lock deleted by hand; the next command takes a lock of its own to stage the
    commit's files and is killed too: the journal names that lock, and the command after removes it."""
    monkeypatch.setattr(indexlock, "INDEX_LOCK_WAIT", 0.05)
    root = catalog_kb.root
    killed_at_publish(root, WRITE["save"])
    lock = root / ".git" / "index.lock"
    lock.unlink()
    killed_in(root, "indexhold.take_lock>", "kb.get('cache')")
    assert lock.exists()
    assert KnowledgeBase(root).get("cache").learning == "Redis, 5 min TTL."
    assert sorted(p.name for p in (root / ".git").glob("index*")) == ["index"]
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_killed_commit_undone_by_a_persons_commit_after_the_lock_was_deleted_is_told_with_its_fix(
        catalog_kb: KnowledgeBase) -> None:
    """git's refusal says to delete the lock by hand; a person who does, then commits, commits the old
    index and takes the memory out of HEAD again: the next command says so once, with the step that
    brings it back."""
    root = catalog_kb.root
    (root / "README.md").write_text("notes\n")
    git(root, "add", "README.md")
    git(root, "commit", "-qm", "readme")
    killed_at_publish(root, WRITE["save"])
    published = git(root, "rev-parse", "HEAD").strip()
    (root / ".git" / "index.lock").unlink()
    with open(root / "README.md", "a", encoding="utf-8") as readme:
        readme.write("a note\n")
    assert person_commits(root).returncode == 0
    head = git(root, "rev-parse", "HEAD").strip()
    assert git(root, "ls-tree", "--name-only", "HEAD", "--", "memories/cache.yaml") == ""

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "slayer_kb", *args], cwd=root, capture_output=True, text=True,
                              env={**os.environ, "SLAYER_KB_SERVER": "off"})

    # A background job of the KB (the sentence filler a save starts, the upkeep) meets the journal
    # first: finished there, the warning went nowhere. It leaves the commit to a command run in the KB.
    background = GitStore(root)
    background.recovers = False  # as the sentence filler and the upkeep job open it
    with pytest.raises(StoreError, match="the next command run in the KB finishes it"), background.locked():
        pass
    assert (root / ".slayer-kb" / "journal.json").exists()
    listed = cli("list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr == (
        f"warning: the commit {published[:12]} of a slayer-kb command that was killed was undone by a commit made "
        f"since (HEAD {head[:12]}; git's index lock deleted by hand?). To bring it back: memory cache: "
        f"'slayer-kb restore cache --rev {published[:12]}'.\n")
    assert cli("list").stderr == ""  # once
    restored = cli("restore", "cache", "--rev", published[:12])
    assert restored.returncode == 0, restored.stderr
    assert KnowledgeBase(root).get("cache").learning == "Redis, 5 min TTL."


def test_a_commit_whose_index_lock_was_deleted_while_it_staged_leaves_the_index_as_it_is(tmp_path: Path) -> None:
    """A person who deletes the lock a slayer-kb command holds (git's advice) and then changes git's
    index: putting the command's staged index in place would drop the person's change. Refused."""
    index = tmp_path / "index"
    index.write_bytes(b"the index as it was")
    held = indexhold.take_lock(indexhold.claim(index))
    assert held is not None
    held.work.write_bytes(b"the index the commit staged")
    held.lock.unlink()
    index.write_bytes(b"the person's index, made since")
    with pytest.raises(StoreError, match="git's index lock .* was removed while slayer-kb staged a commit; the index "
                                         "was left as it is"):
        indexhold.commit_lock(held)
    assert (index.read_bytes(), held.work.exists(), held.lock.exists()) == (b"the person's index, made since", False,
                                                                            False)


def test_a_killed_writers_nonce_file_is_cleared_and_a_live_ones_left(tmp_path: Path) -> None:
    """Each writer writes its nonce into a file of its own before linking it to the lock's name
    (two KBs of one repository share one index: a shared file let one writer's lock hold the
    other's nonce, a lock nothing then removed); one a killed writer left goes at the next lock."""
    index = tmp_path / "index"
    index.write_bytes(b"the index")
    killed, live = (tmp_path / f"index.slayer-kb-claim-{name}" for name in ("killed", "live"))
    killed.write_bytes(b"killed")
    os.utime(killed, (0, 0))
    live.write_bytes(b"live")
    held = indexhold.take_lock(indexhold.claim(index))
    assert held is not None
    assert (held.lock.read_bytes(), killed.exists(), live.read_bytes()) == (held.nonce.encode(), False, b"live")
    indexhold.commit_lock(held)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index", "index.slayer-kb-claim-live"]
