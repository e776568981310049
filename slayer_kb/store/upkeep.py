"""Keeping the repository's object store compact, off the save path.

Each commit slayer-kb writes adds loose objects (a blob, the trees on its path, the commit), and
the ``memories/`` tree is rewritten whole each time: hundreds of kilobytes at 10,000 memories.
Plain ``git commit`` calls ``git gc --auto``; slayer-kb's plumbing never did, so loose objects
piled up for ever. Here, every ``EVERY`` commits, when more than ``LOOSE`` loose objects sit in
the store, slayer-kb starts ``git repack -d --geometric=2`` and then ``git gc --auto``, as one
detached, niced process group: the command that triggered it does not wait. The geometric repack
packs the loose objects and rolls small packs into bigger ones, so the ``memories/`` trees of
successive saves end up stored as deltas of each other (a few kilobytes a save, measured in
``bench/``), not whole in one small pack each. The user's settings win: ``gc.auto=0`` or
``maintenance.auto=false`` turn it off; ``slayer-kb maintenance`` runs the same steps at once.

Repacking is safe beside a commit in progress: git only deletes loose objects that a pack holds,
and slayer-kb reads an object that vanished from the loose store through ``git cat-file``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..core import priority
from ..core.children import NEUTRAL_CWD, python_child
from ..core.errors import StoreError
from .gitenv import git_env

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
        proc = subprocess.run(["git", "config", "--get", name], cwd=top, env=git_env(), capture_output=True, text=True,
                              check=False)
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
    # While another upkeep (an index compaction) runs, the count stays due: the next commit
    # looks again, so loose objects never wait long for a repack.
    if seen >= EVERY and not running(state):
        seen = 0
        if repack_due(top, objects_dir):
            start(top, state)
            started = True
    with contextlib.suppress(OSError):
        counter.write_text(str(seen))
    return started


def repack_due(top: Path, objects_dir: Path) -> bool:
    """More than LOOSE loose objects, and the user has not turned git's upkeep off."""
    return loose_objects(objects_dir) > LOOSE and not turned_off(top)


# Successive memories/ trees differ by an entry or two, so each is a tiny delta of the next; git's
# default chain depth (50) stores a whole tree for every 50 commits, which at 100,000 memories is
# megabytes each. Deeper chains cost only reads of old trees, which slayer-kb rarely makes.
DELTA_DEPTH = 250
# One thread: each thread of git's delta search starts its share of the objects with a whole
# object, so two threads stored three or four whole memories/ trees in a pack of 20 saves, not one
# (bench, 500 saves at 10,000 memories: .git grew 6.4 KB a save with two, 1.8 KB with one). The packs repacked
# here are small; the second core stays free for the saves.
THREADS = "--threads=1"
REPACK = ["git", "repack", "-d", "-q", THREADS, "--geometric=2", f"--depth={DELTA_DEPTH}"]
GC = ["git", "-c", "gc.autoDetach=false", "-c", f"pack.depth={DELTA_DEPTH}", "-c", "pack.threads=1",
      "gc", "--auto", "--quiet"]


def start(top: Path, state: Path, commands: list[list[str]] | None = None) -> None:
    """``commands`` (default ``REPACK`` then ``GC``) one after the other, detached from this
    process and its terminal, at the lowest CPU priority (a save running beside them keeps its
    speed); the pid is kept in the state folder (see ``wait``). Nothing starts while an
    earlier run is still at work. The runner is this module's ``main``, an isolated Python
    process (``children.python_child``): nothing in the KB is ever imported."""
    if running(state):
        return
    pid = detach("slayer_kb.store.upkeep", str(top), json.dumps(commands or [REPACK, GC]))
    if pid is not None:
        with contextlib.suppress(OSError):
            (state / PID).write_text(str(pid))


def detach(module: str, *args: str, keep: tuple[int, ...] = ()) -> int | None:
    """Start ``python -m module args`` (``children.python_child``) in ``NEUTRAL_CWD``, detached
    from this process and its terminal, with the file descriptors ``keep`` open under the same
    numbers; its pid, or None when it could not start."""
    argv, env = python_child(module, *args)
    try:
        proc = subprocess.Popen(
            argv, cwd=NEUTRAL_CWD, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True, pass_fds=keep,
        )
    except OSError:
        return None
    return proc.pid


def main(argv: list[str] | None = None) -> int:
    """``python -m slayer_kb.store.upkeep TOP COMMANDS_JSON``: run each command, niced; git in the
    repository's top folder, anything else (a slayer-kb job, which takes the KB as an argument)
    in ``NEUTRAL_CWD``, where no module of the KB can be picked up."""
    top, commands = argv if argv is not None else sys.argv[1:]
    with contextlib.suppress(OSError):
        os.nice(19)
    # Its session (detach) as low as a write's spare work: a niceness alone counts only within
    # the session; lower still, a busy machine would starve the job, which may hold the KB lock.
    priority.lower_session(priority.niceness())
    for command in json.loads(commands):
        subprocess.run(command, cwd=top if command[0] == "git" else NEUTRAL_CWD, env=git_env(), stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return 0


@dataclass(frozen=True)
class Objects:
    """What the object store holds: loose objects, and packs with their bytes on disk."""

    loose: int
    packs: int
    pack_bytes: int


def objects(objects_dir: Path) -> Objects:
    packs = [p for p in (objects_dir / "pack").glob("*.pack")]
    return Objects(loose_objects(objects_dir), len(packs), sum(p.stat().st_size for p in packs))


def run(top: Path, state: Path, timeout: float = 600.0) -> None:
    """The same steps as ``start``, now and in this process (``slayer-kb maintenance``), after
    any that runs in the background; the user's settings do not turn an explicit run off."""
    wait(state, timeout)
    repack(top, timeout)


def repack(top: Path, timeout: float = 600.0) -> None:
    """``REPACK`` then ``GC``, now, in this process."""
    for command in (REPACK, GC):
        proc = subprocess.run(command, cwd=top, env=git_env(), capture_output=True, text=True, check=False,
                              timeout=timeout)
        if proc.returncode != 0:
            raise StoreError(f"{' '.join(command)} failed: {proc.stderr.strip() or proc.returncode}")


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
    return not _finished(pid)


def _finished(pid: int) -> bool:
    """Whether ``pid`` is a zombie: done, and not reaped yet by the process that started it (the
    warm server, which reaps it at its next commit)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def wait(state: Path, timeout: float) -> bool:
    """Wait (at most ``timeout`` seconds) for a repack to finish, as ``git fsck`` must: it
    reports loose objects that vanish while it reads them. True when none runs."""
    deadline = time.monotonic() + timeout
    while running(state):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


if __name__ == "__main__":
    sys.exit(main())
