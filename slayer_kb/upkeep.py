"""Keeping the repository's object store compact, off the save path.

Each commit slayer-kb writes adds loose objects (a blob, the trees on its path, the commit), and
the ``memories/`` tree is rewritten whole each time: hundreds of kilobytes at 10,000 memories.
Plain ``git commit`` calls ``git gc --auto``; slayer-kb's plumbing never did, so loose objects
piled up for ever. Here, every ``EVERY`` commits, when more than ``LOOSE`` loose objects sit in
the store, slayer-kb starts ``git repack -d`` (pack the loose objects, trees as deltas of each
other, and drop the loose copies) and then ``git gc --auto`` (which merges packs when there are
too many), as one detached process group: the command that triggered it does not wait. The
user's settings win: ``gc.auto=0`` or ``maintenance.auto=false`` turn it off.

Repacking is safe beside a commit in progress: git only deletes loose objects that a pack holds,
and slayer-kb reads an object that vanished from the loose store through ``git cat-file``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

EVERY = 20
LOOSE = 60
COUNTER = "commits-since-upkeep"
PID = "upkeep.pid"


def loose_objects(objects_dir: Path) -> int:
    count = 0
    for fanout in range(256):
        with contextlib.suppress(OSError):
            count += len(os.listdir(objects_dir / f"{fanout:02x}"))
    return count


def turned_off(top: Path) -> bool:
    def setting(name: str) -> str:
        proc = subprocess.run(["git", "config", "--get", name], cwd=top, capture_output=True, text=True, check=False)
        return proc.stdout.strip().lower()

    return setting("gc.auto") == "0" or setting("maintenance.auto") in ("false", "no", "off", "0")


def after_commit(state: Path, top: Path, objects_dir: Path) -> bool:
    """Count a commit; now and then start a repack in the background. True when one started."""
    counter = state / COUNTER
    try:
        seen = int(counter.read_text() or 0) + 1
    except (OSError, ValueError):
        seen = 1
    started = False
    if seen >= EVERY:
        seen = 0
        if loose_objects(objects_dir) > LOOSE and not turned_off(top):
            start(top, state)
            started = True
    with contextlib.suppress(OSError):
        counter.write_text(str(seen))
    return started


def start(top: Path, state: Path) -> None:
    """``git repack -d`` then ``git gc --auto``, detached from this process and its terminal;
    its pid is kept in the state folder (see ``wait``)."""
    script = (
        "import subprocess, sys; top = sys.argv[1]; "
        "q = dict(cwd=top, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
        "subprocess.run(['git', 'repack', '-d', '-q'], **q); "
        "subprocess.run(['git', '-c', 'gc.autoDetach=false', 'gc', '--auto', '--quiet'], **q)"
    )
    with contextlib.suppress(OSError):
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(top)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )
        (state / PID).write_text(str(proc.pid))


def running(state: Path) -> bool:
    """Whether the last repack started from this KB is still at work."""
    try:
        pid = int((state / PID).read_text())
    except (OSError, ValueError):
        return False
    try:
        finished, _status = os.waitpid(pid, os.WNOHANG)  # our own child: reap it
        return finished == 0
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def wait(state: Path, timeout: float) -> bool:
    """Wait (at most ``timeout`` seconds) for a repack to finish, as ``git fsck`` must: it
    reports loose objects that vanish while it reads them. True when none runs."""
    deadline = time.monotonic() + timeout
    while running(state):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
