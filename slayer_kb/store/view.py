"""``View``: who may use a warm process's in-memory state of a KB (the Whoosh searcher, the vector
table, the caches) at a moment, so that a read relayed to the server answers while a write runs,
from the last state a write published, never from half of one (docs/server.md, "Reads beside
writes").

One thread at a time holds the view: Whoosh's readers seek and read shared files, so they are
not for two threads at once. A write holds it (``hold``) while it reads and updates that state,
and lets go (``released``) while it only waits or works in git: for the KB lock, and while its
commit writes objects, files and the ref, with ``writing`` naming the files it is committing. A
read (``reading``) holds it for its whole command, and yields to a write that waits for it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any


class View:
    """A reentrant lock with two kinds of holder (see the module doc), and what a read thread
    holding it sees: the catalog as published when it began, and the files being committed."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._owner: int | None = None
        self._depth = 0
        self._waiting_writes = 0
        self._local = threading.local()
        # The KB-relative paths a commit is writing while it let go of the view: a read finds
        # their last published version in the index, not in the work tree.
        self._writing: frozenset[str] = frozenset()
        # Told of each new ``writing``: a write process tells its server (daemon/writer.py).
        self.notify: Callable[[frozenset[str]], None] | None = None

    @property
    def writing(self) -> frozenset[str]:
        return self._writing

    @writing.setter
    def writing(self, paths: frozenset[str]) -> None:
        self._writing = paths
        if self.notify is not None:
            self.notify(paths)

    def acquire(self, write: bool = True, timeout: float | None = None) -> bool:
        """Take the view (again, for its holder); a read waits while a write waits too, so that
        reads one after another never keep a write from publishing. False past ``timeout``."""
        me = threading.get_ident()
        with self._cond:
            if self._owner == me:
                self._depth += 1
                return True
            if write:
                self._waiting_writes += 1
            try:
                free = self._cond.wait_for(
                    lambda: self._owner is None and (write or not self._waiting_writes), timeout)
            finally:
                if write:
                    self._waiting_writes -= 1
            if not free:
                self._cond.notify_all()  # a read that gave up its place may now go first
                return False
            self._owner, self._depth = me, 1
            return True

    def release(self) -> None:
        with self._cond:
            if self._owner != threading.get_ident():
                raise RuntimeError("the view is released by a thread that does not hold it")
            self._depth -= 1
            if not self._depth:
                self._owner = None
                self._cond.notify_all()

    def held(self) -> bool:
        """Whether this thread holds the view."""
        return self._owner == threading.get_ident()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        """Let go of the view for the block, if this thread holds it, and take it back after."""
        me = threading.get_ident()
        with self._cond:
            depth = self._depth if self._owner == me else 0
            if depth:
                self._owner, self._depth = None, 0
                self._cond.notify_all()
        try:
            yield
        finally:
            if depth:
                self.acquire()
                with self._cond:
                    self._depth = depth

    @contextlib.contextmanager
    def reading(self, catalog: Any) -> Iterator[None]:
        """Mark this thread, which holds the view, as a read's for the block, with ``catalog`` as
        the catalog it sees."""
        self._local.catalog = catalog
        try:
            yield
        finally:
            self._local.catalog = None

    def catalog(self) -> Any:
        """The catalog a read running on this thread sees (None: not a read's thread)."""
        return getattr(self._local, "catalog", None)

    def unpublished(self, path: str) -> bool:
        """Whether a read on this thread must not trust the file at ``path`` (relative to the
        KB): a commit is writing it, and its last published version is in the index."""
        return self.catalog() is not None and path in self.writing
