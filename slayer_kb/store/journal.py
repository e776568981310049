"""The journal of a commit being published (repo.py): written before its update-ref, cleared
once every file it changes is written and staged, so that the next command can finish (or
discard) a change a crash interrupted.

Its update-ref is a git process of its own, which outlives a writer killed while it runs (and
the KB's lock with it): ``publishing`` is a lock that process holds too, so the next command
waits for it (``wait_published``) before it decides whether the commit was published."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..core.errors import StoreError
from .bounded import explain

_NAME = "journal.json"
_PUBLISHING = "publishing.lock"
_POLL = 0.01  # seconds between tries of a lock held by a git that publishes a commit


def path(state: Path) -> Path:
    return state / _NAME


def exists(state: Path) -> bool:
    return path(state).exists()


def write(state: Path, record: Mapping[str, object], then: str = "; nothing was saved.") -> None:
    """Write ``record`` durably (fsync, then a rename), or a StoreError (its message ending with
    ``then``)."""
    target = path(state)
    tmp = state / (_NAME + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StoreError(f"Cannot write {target}: {explain(exc.strerror or str(exc))}{then}") from None


def name_lock(state: Path, lock: str | None) -> None:
    """The journal made to name git's index lock ``lock`` (a nonce: ``indexhold``) before it is
    taken, its other fields kept; a StoreError when it cannot be."""
    try:
        record = json.loads(path(state).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"Cannot read {path(state)}: {exc}") from None
    write(state, {**record, "index_lock": lock}, ".")


def clear(state: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path(state).unlink()


def read(state: Path) -> tuple[str | None, str, list[str], object] | None:
    """(old commit, new commit, the paths it changes, git's index lock it took: ``indexhold``) of an
    unfinished commit, if any. The blobs come from the two commits' trees, so journals of every
    version read alike."""
    try:
        record = json.loads(path(state).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        record = None
    try:
        assert isinstance(record, dict)
        old, new, changes = record["old"], record["new"], record["changes"]
        # {path: blob id} (the blobs themselves are read from the trees); earlier versions
        # wrote {path: [blob before, blob after]} and [[path, temporary file], ...].
        paths = list(changes) if isinstance(changes, dict) else [change[0] for change in changes]
        assert isinstance(new, str) and (old is None or isinstance(old, str))
        assert all(isinstance(p, str) for p in paths)
    except (AssertionError, KeyError, TypeError, IndexError):
        # Unreadable: a crash while it was written, before the update-ref could run.
        clear(state)
        return None
    return old, new, paths, record.get("index_lock")


@contextlib.contextmanager
def publishing(state: Path) -> Iterator[int]:
    """A lock on a file of its own, through the descriptor yielded: pass it to the git that
    publishes the commit, which then holds it for as long as it runs, even past this process's
    death. Made anew each time: a process started by a hook of that git that keeps the
    descriptor (a daemon) holds only a file no later commit uses."""
    target = state / _PUBLISHING
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
    try:
        fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StoreError(f"Cannot write {target}: {explain(exc.strerror or str(exc))}; nothing was saved.") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a file no one else has opened: never waits
        yield fd
    except BaseException:
        # Left for ``wait_published``: the git this process handed it to may run on (Ctrl-C
        # reached this process alone, and its Python is on its way out).
        os.close(fd)
        raise
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
    os.close(fd)


def wait_published(state: Path, timeout: float) -> None:
    """Wait until no git that a killed writer started to publish its commit still runs (at most
    ``timeout`` seconds, the most that writer would have let it run)."""
    try:
        fd = os.open(state / _PUBLISHING, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return  # none (the writer finished), or none to read: nothing to wait for
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return
                time.sleep(_POLL)
            except OSError:
                return  # a file system without flock: as before, no waiting
    finally:
        os.close(fd)
