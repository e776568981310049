"""The lower CPU priority of a write's work that no read waits for (docs/server.md, "Reads beside
writes"): reads never wait for writes, so on a machine whose cores are all busy a write's spare
work yields to them. Three parts of a relayed write run ``niceness()`` steps lower than the
process that starts them:

- the relayed client of a write, once the server has begun its command (relay.py): it only
  waits for the result and prints it;
- the git processes a write runs in the warm server while reads go on beside it (the commit's
  ``commit-tree``, ``update-ref`` with its hooks, ``update-index``: ``GitStore.git``), started
  through ``nice`` so that git's own children inherit it;
- the sentence model's runs of the server's filler (search/background.py), on a thread of their
  own.

Never the server's threads that run a command or hold the KB's state in memory (the view): they
hold Python's GIL and the view, which the searches need, and a thread that waits for the CPU
while holding them would make every search wait with it.

Linux schedules each session's processes as one group (autogroup) and shares the cores between
the groups first: a niceness counts only against the threads of its own group. So the write
process stays in the server's session (daemon/writer.py), and a job detached in a session of
its own (the repository's upkeep, index compaction, the detached sentence filler) lowers its
whole session as well (``lower_session``), by ``niceness()`` steps; not 19, as a group 19 steps
lower gets a twentieth of a group at 0, and on a busy machine next to nothing.

``SLAYER_KB_WRITE_NICENESS`` (0-19, default 10) says how many steps; 0 turns it off. Standard
library only, imported on use: the relayed client imports this.
"""

from __future__ import annotations

import os
import sys
from functools import cache  # already imported by socket's enum: costs the client nothing

VARIABLE = "SLAYER_KB_WRITE_NICENESS"
DEFAULT = 10
MAX = 19


def niceness() -> int:
    """How many steps lower a write's spare work runs (``SLAYER_KB_WRITE_NICENESS``; 0: as
    the rest)."""
    value = os.environ.get(VARIABLE, "").strip()
    try:
        steps = int(value) if value else DEFAULT
    except ValueError:
        steps = DEFAULT
    return max(0, min(MAX, steps))


def lower_process(steps: int) -> None:
    """This process (its calling thread, on Linux) ``steps`` lower."""
    if steps > 0 and hasattr(os, "nice"):
        try:
            os.nice(steps)
        except OSError:
            pass


def lower_session(steps: int) -> None:
    """The whole session of this process ``steps`` lower against the others (its autogroup's
    niceness), when this process leads a session of its own, as a detached job does; never a
    session it only belongs to (an agent's terminal). Linux only; elsewhere, or with autogroup
    off, nothing changes."""
    if steps <= 0 or not sys.platform.startswith("linux") or os.getsid(0) != os.getpid():
        return
    import time

    for _attempt in range(5):
        try:
            with open("/proc/self/autogroup", "w", encoding="ascii") as autogroup:
                autogroup.write(str(min(MAX, steps)))
            return
        except BlockingIOError:  # the kernel takes one such change a tenth of a second, machine-wide
            time.sleep(0.11)
        except OSError:  # no autogroup here
            return


def lower_thread(steps: int) -> None:
    """The calling thread ``steps`` lower than it runs now. On Linux only, where a priority
    belongs to a thread; elsewhere nothing changes."""
    if steps <= 0 or not sys.platform.startswith("linux"):
        return
    import threading

    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(MAX, os.getpriority(os.PRIO_PROCESS, tid) + steps))
    except OSError:
        pass


def command(argv: list[str], steps: int) -> list[str]:
    """``argv`` run ``steps`` lower (through ``nice``, which its children inherit), or as it is
    when ``steps`` is 0 or there is no ``nice``."""
    if steps <= 0:
        return argv
    program, target = _which("nice"), _which(argv[0])
    # A missing program is run as it is, so that its caller's own "not installed" error holds
    # (``nice`` would report it in words of its own).
    return argv if program is None or target is None else [program, "-n", str(steps), target, *argv[1:]]


@cache
def _which(name: str) -> str | None:
    """A program's path, looked up once per process."""
    import shutil

    return shutil.which(name)
