"""A process's threads as Linux's /proc shows them: their scheduler fields, their niceness."""

from __future__ import annotations

import contextlib
import platform
from collections.abc import Iterable
from pathlib import Path

# The number of the read system call, which /proc/PID/syscall names, by machine.
READ_SYSCALL = {"x86_64": "0", "aarch64": "63", "arm64": "63"}


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


def reads_stdin_now(pid: int) -> bool:
    """Whether process ``pid``'s main thread is blocked reading its standard input (/proc/PID/syscall:
    the read system call on descriptor 0): a client waiting at a known point, to be signalled there."""
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        return Path(f"/proc/{pid}/syscall").read_text().split()[:2] == [READ_SYSCALL.get(platform.machine()), "0x0"]
    return False
