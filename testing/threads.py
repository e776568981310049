"""A process's threads as Linux's /proc shows them: their scheduler fields, their niceness."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path


def stat_fields(stat: Path) -> list[str]:
    """A /proc .../stat file's fields from the state on (the name before it may hold spaces)."""
    return stat.read_text().rsplit(")", 1)[1].split()


def thread_stats(tasks: Iterable[Path]) -> list[list[str]]:
    """The stat fields of each thread in ``tasks`` (a process's /proc/PID/task folders) that is
    still there when read: a thread that exited after the folder was listed (a server's thread
    that answered a status request) is not one of the process's threads any more."""
    found = []
    for task in tasks:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            found.append(stat_fields(task / "stat"))
    return found


def thread_niceness(pid: int) -> list[int]:
    """The niceness of each thread of process ``pid``, lowest first."""
    return sorted(int(fields[16]) for fields in thread_stats(Path(f"/proc/{pid}/task").iterdir()))
