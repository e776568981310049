"""Waiting out another git command's hold on git's index: ``git status`` (an editor runs it every
few seconds) takes ``index.lock`` for milliseconds, and a git command that writes the index
(a save's staging, sync's ``reset --keep``, ``merge``, ``rebase``) fails if it starts meanwhile.
Such a command is run again once the lock is gone, within ``INDEX_LOCK_WAIT``; a lock that stays
(``git commit`` waiting for its editor, or a crash) is reported with the fix."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from ..core.errors import IndexLockedError

# Seconds a write waits for another git command's index.lock to go: `git status` holds it for
# milliseconds; `git commit` waiting for its editor, or a crash, longer.
INDEX_LOCK_WAIT = 2.0
POLL = 0.01
# What git merge says when another git command holds index.lock.
_UNWRITTEN = b"Unable to write index"


def locked_message(lock: Path) -> str:
    """Why git's index takes no change (``lock`` stays), ending with the fix: git's own words name
    neither the cause's fix nor slayer-kb's."""
    return (f"git's index is locked: {lock} exists, so another git command is running in this repository "
            "(or one that crashed left the file behind). Wait for it to finish, or delete that file if no "
            "git command is running, then retry")


def held(lock: Path, deadline: float | None = None) -> str | None:
    """``locked_message`` when ``lock`` is still there at ``deadline`` (``time.monotonic``, by
    default ``INDEX_LOCK_WAIT`` from now), else None as soon as it is gone."""
    deadline = deadline or time.monotonic() + INDEX_LOCK_WAIT
    while os.path.lexists(lock):
        if time.monotonic() >= deadline:
            return locked_message(lock)
        time.sleep(POLL)
    return None


def run(git: Callable[[], subprocess.CompletedProcess[bytes]], lock: Path,
        undo: Callable[[], object] | None = None,
        resume: tuple[Callable[[], object], Callable[[], subprocess.CompletedProcess[bytes]]] | None = None,
        ) -> subprocess.CompletedProcess[bytes]:
    """``git()``, run again while another git command's ``lock`` refused it. ``undo`` is for git
    merge, which names no lock ("Unable to write index") and writes MERGE_HEAD before it finds the
    index locked: it clears that before the next run. ``resume`` is for git rebase, which stops
    part-way when a pick meets the lock (the pick put back on its to-do list): (how far it has got,
    the command that goes on from there, ``rebase --continue``), run instead once a run got further
    (``rebase UPSTREAM`` again is refused: "already a rebase-merge directory"; ``--skip`` again would
    skip the next commit too). An IndexLockedError when the lock outlasts the wait (the command did
    not run)."""
    deadline = None
    step = resume[0]() if resume is not None else None
    while True:
        proc = git()
        refused = lock.name.encode() in proc.stderr or (undo is not None and _UNWRITTEN in proc.stderr)
        if proc.returncode == 0 or not refused:
            return proc
        if undo is not None:
            undo()
        if resume is not None and resume[0]() != step:
            git, resume = resume[1], None
        if deadline is not None and time.monotonic() >= deadline:  # taken again and again: a git loop
            if not os.path.lexists(lock):  # or refused for another cause (EPERM, a full disk): git's words say it
                return proc
            raise IndexLockedError(locked_message(lock))
        deadline = deadline or time.monotonic() + INDEX_LOCK_WAIT  # from the first refusal: a rebase runs long
        if (message := held(lock, deadline)) is not None:
            raise IndexLockedError(message)
