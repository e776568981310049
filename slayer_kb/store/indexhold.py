"""git's index held by a commit of slayer-kb's from before its ``update-ref`` until its files are
staged, as ``git commit`` holds it: a writer killed in between (SIGKILL: the OOM killer, a container
stopped) leaves ``index.lock``, so a person's plain ``git commit`` refuses ("index.lock exists")
instead of committing the old index, which would undo the commit just published; the next slayer-kb
command (``recovery.py``) finishes the staging and lets go of the lock.

The lock is ``<index>.lock``, made as git makes it (it fails where one exists), holding a nonce the
journal names before the lock exists (``claim``, then the journal, then ``take_lock``): a kill at any
point leaves no lock, or one the journal names, and the next command removes a lock only when its
bytes are that nonce, never one another git command took since (a chmod or a backup agent changing
its inode's times changes nothing). The commit stages into a hard link of the index beside it
(``<index>.slayer-kb``, through ``GIT_INDEX_FILE``; git writes an index by a lock and a rename, never
in place, so the index itself stays as it was), which replaces the index by a rename, and only then
is the lock removed."""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import IndexLockedError, StoreError
from . import indexlock
from .bounded import explain

_WORK = ".slayer-kb"  # the suffix of the index a commit stages into (a hard link of it)
_CLAIM = _WORK + "-claim-"  # and of a writer's nonce, before it is linked to the lock's name
_STALE_CLAIM = 60.0  # seconds: a live writer's is there for microseconds; older, a killed one's


@dataclass(frozen=True)
class Claim:
    """git's index lock a commit is about to take: the ``nonce`` its journal names first."""

    index: Path
    nonce: str

    @property
    def lock(self) -> Path:
        return self.index.with_name(self.index.name + ".lock")


@dataclass(frozen=True)
class Held(Claim):
    """git's index lock this commit took: ``lock``, holding ``nonce``."""

    @property
    def work(self) -> Path:
        """The index the commit stages into (``GIT_INDEX_FILE``), on the index's own file system,
        so that a rename puts it in place."""
        return self.index.with_name(self.index.name + _WORK)


def claim(index: Path) -> Claim | None:
    """A lock on ``index`` to name in the journal before ``take_lock`` makes it; None where the
    index cannot be held (``splits``)."""
    return None if splits(index) else Claim(index, secrets.token_hex(16))


def _ours(claim: Claim) -> bool:
    try:
        return claim.lock.read_bytes() == claim.nonce.encode()
    except OSError:
        return False


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


def take_lock(claim: Claim | None, then: str = "; nothing was saved.") -> Held | None:
    """Take git's lock ``claim`` names (another git command's is waited for, as ``indexlock``
    waits), and link the index for the staging; None for None. An IndexLockedError when another's
    lock stays, a StoreError when the lock cannot be made (each message ending with ``then``)."""
    if claim is None:
        return None
    lock = claim.lock
    # The nonce is written beside the lock, then linked to the lock's name (which fails where a
    # lock exists): no lock of ours is ever there without its nonce. A file of each writer's own
    # (two KBs of one repository share its index), and a killed writer's left one cleared.
    _clear_stale_claims(claim.index)
    whole = claim.index.with_name(claim.index.name + _CLAIM + claim.nonce)
    deadline = time.monotonic() + indexlock.INDEX_LOCK_WAIT
    try:
        whole.write_bytes(claim.nonce.encode())
        while True:
            try:
                _link_or_create(whole, lock)
                break
            except FileExistsError:
                if (message := indexlock.held(lock, deadline)) is not None:
                    raise IndexLockedError(message + then) from None
    except OSError as exc:
        raise StoreError(f"Cannot take git's index lock {lock}: {explain(exc.strerror or str(exc))}{then}") from None
    finally:
        with contextlib.suppress(OSError):
            whole.unlink()
    held = Held(claim.index, claim.nonce)
    _link(held, then)
    return held


def _clear_stale_claims(index: Path) -> None:
    """Remove the nonce files writers killed between writing and unlinking them left beside
    ``index`` (a live writer's is younger than ``_STALE_CLAIM``)."""
    with contextlib.suppress(OSError):
        for left in index.parent.glob(index.name + _CLAIM + "*"):
            with contextlib.suppress(OSError):
                if time.time() - left.lstat().st_mtime > _STALE_CLAIM:
                    left.unlink()


def _link_or_create(whole: Path, lock: Path) -> None:
    """``lock`` made holding ``whole``'s bytes, or FileExistsError where one exists."""
    try:
        os.link(whole, lock)
    except FileExistsError:
        raise
    except OSError:
        # A file system without hard links: made as git makes it, then written (a kill between
        # leaves an empty lock that no command takes for its own; none such in practice).
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            os.write(fd, whole.read_bytes())
        finally:
            os.close(fd)


def _link(held: Held, then: str) -> None:
    """The index linked (else copied) for the staging; the lock let go of when it cannot be."""
    with contextlib.suppress(FileNotFoundError):
        held.work.unlink()  # a killed commit's, part-way through its staging
    try:
        try:
            os.link(held.index, held.work)
        except FileNotFoundError:
            return  # no index yet: git reads a missing one as empty
        except OSError:
            import shutil  # on use: 2 ms of every start, for a file system without hard links

            shutil.copyfile(held.index, held.work)
    except FileNotFoundError:
        return
    except OSError as exc:
        release_lock(held)
        raise StoreError(f"Cannot copy git's index to {held.work}: {explain(exc.strerror or str(exc))}{then}") from None


def owned_lock(index: Path, record: object) -> Held | None:
    """The lock on ``index`` a journal's ``record`` (its nonce) names, when it is there still and
    holds that nonce; None otherwise (none taken, gone, or another git command's since)."""
    if not isinstance(record, str):
        return None
    held = Held(index, record)
    if not _ours(held):
        return None
    _link(held, "")  # afresh: the killed commit's may be part-way through its staging
    return held


def commit_lock(held: Held | None) -> None:
    """Put the staged copy in place of the index, then let go of the lock (git's "commit the
    lock file"): a reader sees the old index or the new one, never a part. None: none held."""
    if held is None:
        return
    if not _ours(held):  # deleted by hand (git's advice): the index may be a person's newer one since
        release_lock(held)
        raise StoreError(f"git's index lock {held.lock} was removed while slayer-kb staged a commit; the index was "
                         "left as it is")
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
    if _ours(held):
        with contextlib.suppress(OSError):
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
