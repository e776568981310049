"""git's index held by a commit of slayer-kb's from before its ``update-ref`` until its files are
staged, as ``git commit`` holds it: a writer killed in between (SIGKILL: the OOM killer, a container
stopped) leaves ``index.lock``, so a person's plain ``git commit`` refuses ("index.lock exists")
instead of committing the old index, which would undo the commit just published; the next slayer-kb
command (``recovery.py``) finishes the staging and lets go of the lock.

The lock is ``<index>.lock``, made with O_EXCL as git makes it. The commit stages into a copy of
the index beside it (``<index>.slayer-kb``, through ``GIT_INDEX_FILE``), which replaces the index by
a rename, and only then is the lock removed: the lock file itself is never written, so the journal
can name it by its inode and change time, and the next command removes a lock only when it is that
very file, never one another git command took since."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import IndexLockedError, StoreError
from . import indexlock
from .bounded import explain

_WORK = ".slayer-kb"  # the suffix of the copy of the index a commit stages into


@dataclass(frozen=True)
class Held:
    """git's index lock this commit took: ``lock``, with its (device, inode, change time)."""

    index: Path
    lock: Path
    made: tuple[int, int, int]

    @property
    def work(self) -> Path:
        """The copy of the index the commit stages into (``GIT_INDEX_FILE``), on the index's own
        file system, so that a rename puts it in place."""
        return self.index.with_name(self.index.name + _WORK)

    def record(self) -> list[int]:
        """What the journal keeps to know the lock again (``owned_lock``)."""
        return list(self.made)


def _made(stat: os.stat_result) -> tuple[int, int, int]:
    return stat.st_dev, stat.st_ino, stat.st_ctime_ns


def splits(index: Path) -> bool:
    """Whether git keeps this index split (``core.splitIndex``: its entries in ``sharedindex.*``
    beside it). Not held then: any index git writes may write a new shared part and prune old ones
    (``splitIndex.sharedIndexExpire``), and how it does so for an index under another name than
    its own is not a case to rely on; such a commit stages straight into the index, as before (no
    lock while it publishes)."""
    try:
        return any(name.startswith("sharedindex.") for name in os.listdir(index.parent))
    except OSError:
        return True  # cannot tell: the path that needs no copy


def take_lock(index: Path, then: str = "; nothing was saved.") -> Held | None:
    """Take git's lock on ``index`` (another git command's is waited for, as ``indexlock`` waits),
    and copy the index for the staging; None where the index cannot be held (``splits``). An
    IndexLockedError when another's lock stays, a StoreError when the lock cannot be made (each
    message ending with ``then``)."""
    if splits(index):
        return None
    lock = index.with_name(index.name + ".lock")
    deadline = time.monotonic() + indexlock.INDEX_LOCK_WAIT
    while True:
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            break
        except FileExistsError:
            if (message := indexlock.held(lock, deadline)) is not None:
                raise IndexLockedError(message + then) from None
        except OSError as exc:
            raise StoreError(f"Cannot take git's index lock {lock}: {explain(exc.strerror or str(exc))}{then}") from None
    try:
        held = Held(index, lock, _made(os.fstat(fd)))
    finally:
        os.close(fd)
    _copy(held, then)
    return held


def _copy(held: Held, then: str) -> None:
    """The index copied for the staging; the lock let go of when it cannot be."""
    try:
        shutil.copyfile(held.index, held.work)
    except FileNotFoundError:
        with contextlib.suppress(FileNotFoundError):  # no index yet: git reads a missing one as empty
            held.work.unlink()
    except OSError as exc:
        release_lock(held)
        raise StoreError(f"Cannot copy git's index to {held.work}: {explain(exc.strerror or str(exc))}{then}") from None


def owned_lock(index: Path, record: object) -> Held | None:
    """The lock on ``index`` a journal's ``record`` names, when it is there still and is that very
    file; None otherwise (gone, or another git command's since)."""
    if not (isinstance(record, list) and len(record) == 3 and all(isinstance(n, int) for n in record)):
        return None
    lock = index.with_name(index.name + ".lock")
    try:
        found = _made(os.lstat(lock))
    except OSError:
        return None
    if list(found) != record:
        return None
    held = Held(index, lock, found)
    _copy(held, "")  # afresh: the killed commit's copy may be part-way through its staging
    return held


def commit_lock(held: Held | None) -> None:
    """Put the staged copy in place of the index, then let go of the lock (git's "commit the
    lock file"): a reader sees the old index or the new one, never a part. None: none held."""
    if held is None:
        return
    try:
        os.replace(held.work, held.index)
    except FileNotFoundError:
        pass  # nothing staged into it (no index, and nothing to stage): the index stays as it is
    except OSError as exc:
        release_lock(held)
        raise StoreError(f"Cannot replace git's index {held.index}: {explain(exc.strerror or str(exc))}") from None
    release_lock(held)


def release_lock(held: Held) -> None:
    """Let go of the lock without touching the index (the commit was not published, or its staging
    failed), removing it only while it is still the file this commit made."""
    with contextlib.suppress(FileNotFoundError):
        held.work.unlink()
    with contextlib.suppress(OSError):
        if _made(os.lstat(held.lock)) == held.made:
            held.lock.unlink()


@contextlib.contextmanager
def let_go_on(error: type[BaseException], held: Held | None) -> Iterator[None]:
    """Let go of ``held`` (``release_lock``) when ``error`` ends the block: the commit was not published,
    or git's index refused its staging (the command says so). Any other exception, a Ctrl-C, leaves
    the lock for the next command, as a kill does."""
    try:
        yield
    except error:
        if held is not None:
            release_lock(held)
        raise


class Holding:
    """Which thread's commit holds git's index now (``into``), and stages into its copy: that
    thread's git commands are given ``GIT_INDEX_FILE``; other threads' reads (a warm process's,
    beside the write) go on with the index itself."""

    def __init__(self) -> None:
        self._held: tuple[int, Held] | None = None

    def now(self) -> Held | None:
        """What this thread holds, if anything."""
        held = self._held
        return held[1] if held is not None and held[0] == threading.get_ident() else None

    @contextlib.contextmanager
    def into(self, held: Held | None) -> Iterator[None]:
        """This thread's git commands read and write ``held``'s copy of the index; None: the index."""
        self._held = None if held is None else (threading.get_ident(), held)
        try:
            yield
        finally:
            self._held = None
