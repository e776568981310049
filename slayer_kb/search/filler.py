"""Sentence vectors with no warm server to make them: a command that indexed memories lacking
one, or searched a KB where some lack one, starts a detached process that makes them
(``python -I -m slayer_kb.daemon.sentences KB``, in ``/``, niced), so a KB used only through
one-shot commands (``SLAYER_KB_SERVER=off``, CI, a test harness) gets its sentence vectors
without anyone asking, and never on the save path.

Two lock files in the KB's state folder keep the work single:

- ``sentences.lock`` is held for the life of the process that fills (the detached one, or the
  warm server's filler): a command starts a filler only when nobody holds it. The command takes
  it before it starts the process and hands it over (the process inherits the locked file), so
  two commands at once never start two fillers: the second finds it held, even while the
  first's process is still starting.
- ``sentences-batch.lock`` is held while one batch is made: whoever else fills meanwhile
  (``reindex``, the benchmark) waits for it, then finds those rows done and moves on, so no
  vector is made twice by two processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from ..store import upkeep
from ..store.state import STATE_DIR

JOB = "slayer_kb.daemon.sentences"
LOCK = "sentences.lock"
BATCH_LOCK = "sentences-batch.lock"


def _lock_file(root: Path, name: str) -> int | None:
    # The state folder is the store's to make (state.make checks its owner): none, no lock.
    try:
        return os.open(root / STATE_DIR / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None


def hold(root: Path) -> int | None:
    """``LOCK``'s file descriptor, locked by this process until it is closed; None when another
    process fills this KB (or the state folder is not there)."""
    fd = _lock_file(root, LOCK)
    if fd is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def adopt(root: Path, fd: int) -> int | None:
    """``fd``, when it is ``LOCK``'s file handed over by ``start`` (this process holds the lock
    through it from its start); else None. Never waits."""
    try:
        same = os.path.samestat(os.fstat(fd), os.stat(root / STATE_DIR / LOCK))
        # On the open file ``start`` locked, this succeeds: the lock is already that file's.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return None
    if not same:
        return None
    os.set_inheritable(fd, False)  # nothing this process starts shares the lock
    return fd


@contextlib.contextmanager
def claimed(root: Path, handed: int | None = None) -> Iterator[bool]:
    """Whether this process now holds ``LOCK`` (False: another filler does), until the block
    ends; through ``handed`` when it holds it already (``adopt``)."""
    fd = hold(root) if handed is None else handed
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)  # closing releases the lock


def filling(root: Path) -> bool:
    """Whether a process is filling this KB's sentence vectors."""
    with claimed(root) as free:
        return not free


def start(root: Path) -> bool:
    """Start a detached filler unless one runs; True when one was started. The lock is taken
    here, before the process exists, and the process inherits it: checking and starting are one
    step, so a second command never starts a second filler while the first one starts."""
    fd = hold(root)
    if fd is None:
        return False
    try:
        return upkeep.detach(JOB, str(root), str(fd), keep=(fd,)) is not None
    finally:
        os.close(fd)  # the filler's copy keeps the lock (or none started: released)


@contextlib.contextmanager
def batch(root: Path) -> Iterator[None]:
    """Held while one batch of vectors is made (blocking: a batch takes about a second)."""
    fd = _lock_file(root, BATCH_LOCK)
    if fd is None:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
