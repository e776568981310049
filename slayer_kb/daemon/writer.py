"""The warm server's write process (docs/server.md, "The write process"): the relayed commands
that may commit run in a long-lived child process of the server, at the lower priority of a
write's spare work (core/priority.py), so that none of a write's CPU is taken from the searches
the server answers beside it: not its command's Python, not its index update, and not the GIL
of the server's process, which the searches need. Not a sync, which other clones wait for
(``commands.SHARED``): it runs on the main thread, the session's group raised back for it.

The child, ``python -I -m slayer_kb.daemon.writer ROOT FD`` (``core.children``), opens the KB as
any process would and runs each command it is handed as the server would have run it
(``running.Runner``: the client's folder, environment, umask and streams; its commits noted
under the request's id, exactly once). It takes the KB lock, commits and updates the index on
disk as a one-shot process does. The server meanwhile answers reads from the state it holds:

- before a commit writes its files, the child names them and waits for the server to take
  note (``Context.write_elsewhere``): a read of one of them finds its last version in the index,
  and the vectors the server holds stay as they are while the child rewrites the index;
- when the command is over, the server takes its writes in (``Context.took_in``): the vector
  rows of the files it indexed, read by id, into the table it holds, and their file events
  counted as its own. Its searcher reopens only the new segments, as after a write of its own.

Both sides speak in frames of ``relay.dumps`` over a socket pair. A child that dies is started
again for the next write; its client hears the server went away and settles the command by its
id (settle.py), as when the server itself dies. When the server stops it closes its end, and
the child, reading the end of its input, exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..core import priority
from ..core.children import NEUTRAL_CWD, python_child
from ..core.locate import MEMORIES_DIR
from . import relay
from .commands import yields

if TYPE_CHECKING:
    from ..kb import KnowledgeBase

MODULE = "slayer_kb.daemon.writer"
# How long a child may take to open the KB (a loaded machine takes seconds); past it, or when it
# cannot start at all, the server runs its writes itself, as before there was a child.
READY_SECONDS = 120.0
# How long a stopping server waits for its child to exit after closing its end, then kills it.
EXIT_SECONDS = 10.0
# How long the git a child left running (it died, or was killed) may take to end: a slow hook on
# a loaded machine takes seconds; past it, it is killed (a hook that hangs).
GIT_SECONDS = 60.0
ACK = b"k"
# What ``WriteProcess.run`` returns when there is no child to run the write: the server runs it.
UNAVAILABLE: dict[str, Any] = {}
# A session of its own (so a process group of its own, in which the git it runs is found and
# ended with it, _end), lowered as a whole in main(): Linux schedules each session as one group
# (autogroup) and shares the cores between the groups first, so a niceness alone counts only
# against its own group; lowered as a group, the write yields the CPU to the searches' clients
# and the server's reads alike (docs/server.md, "Reads beside writes").
_GROUP: dict[str, Any] = {"start_new_session": True}


class WriteProcess:
    """The server's side: one child at a time, started on the first write and after one died."""

    def __init__(self, root: str, say: Callable[[str], None]) -> None:
        self.root = root
        self._say = say
        self.steps = priority.niceness()
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: socket.socket | None = None
        self._lock = threading.Lock()  # one write at a time (the server's turn holds it anyway)
        self.starts = 0
        self.writes = 0

    def status(self) -> dict[str, Any] | None:
        """What ``server status`` shows: the child's pid and niceness, how often it was started,
        how many writes it ran (None before the first write)."""
        proc = self._proc
        if proc is None:
            return None
        return {"pid": proc.pid, "niceness": self.steps, "starts": self.starts, "writes": self.writes}

    def run(self, request: dict[str, Any], begun: Callable[[frozenset[str]], None]) -> dict[str, Any] | None:
        """Run ``request`` in the child; ``begun`` is called with the paths of each commit before
        it writes them. Its answer (``code``, ``chunks``, and what ``Context.took_in`` takes);
        None when the child died meanwhile; ``UNAVAILABLE`` when no child could be started."""
        with self._lock:
            if not self._alive() and not self._start():
                return UNAVAILABLE
            conn = self._conn
            assert conn is not None
            try:
                relay.send_frame(conn, relay.dumps(request))
                while True:
                    answer = relay.loads(relay.recv_frame(conn))
                    if not isinstance(answer, dict):
                        raise ValueError("not a dict")
                    if "writing" not in answer:
                        self.writes += 1
                        return answer
                    begun(frozenset(answer["writing"]))
                    conn.sendall(ACK)
            except (OSError, EOFError, ValueError, TypeError):
                self._say(f"the write process {self._pid()} ended during a write: the next write starts another")
                self._end(kill=True)
                return None

    def stop(self) -> None:
        """Close the child's input and wait for it to exit (killed past EXIT_SECONDS). Not under
        the lock: a write still running (the server gave it FINISH_SECONDS) ends with it."""
        self._end(kill=False)

    def _pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _start(self) -> bool:
        self._end(kill=True)
        parent, child = socket.socketpair()
        argv, env = python_child(MODULE, self.root, str(child.fileno()))
        try:
            # Lowered by the thread of each write where a thread's priority can be set, so that a
            # sync runs at the server's (main); elsewhere by the whole process, syncs included.
            lowered = argv if priority.PER_THREAD else priority.command(argv, self.steps)
            self._proc = subprocess.Popen(lowered, cwd=NEUTRAL_CWD, env=env,
                                          pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, **_GROUP)
        except OSError as exc:
            parent.close()
            self._say(f"cannot start the write process ({exc}): the server runs writes itself")
            return False
        finally:
            child.close()
        self._conn = parent
        self.starts += 1
        parent.settimeout(READY_SECONDS)
        try:
            hello = relay.loads(relay.recv_frame(parent))
            if not isinstance(hello, dict) or "ready" not in hello:
                raise ValueError("no greeting")
        except (OSError, EOFError, ValueError, TypeError):
            self._say("the write process did not start: the server runs writes itself until the next one")
            self._end(kill=True)
            return False
        parent.settimeout(None)
        return True

    def _end(self, kill: bool) -> None:
        """Close the channel; the child, at the end of its input, exits (or is killed)."""
        proc, conn = self._proc, self._conn
        self._conn = None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()
        if proc is None:
            return
        if kill:
            with contextlib.suppress(OSError):
                proc.kill()
        try:
            proc.wait(timeout=EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        _wait_for_group(proc.pid)


def _wait_for_group(group: int) -> None:
    """Wait for what is left of a write process's group (its git, its hooks) to end, then kill
    it past GIT_SECONDS. A git left running after its write process died could still publish
    the commit; its client settles the command by its id only once this returns, so it finds
    the commit landed or never landing, not landing later (docs/server.md, "Exactly once")."""
    deadline = time.monotonic() + GIT_SECONDS
    while True:
        try:
            os.killpg(group, 0)
        except OSError:  # no process is left in the group
            return
        if time.monotonic() > deadline:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)
            return
        time.sleep(0.02)


class _Commits:
    """The child's side of a command's commits: each one's paths told to the server before git
    writes them (``View.notify``), and what the server takes in once the command is over."""

    def __init__(self, kb: KnowledgeBase, conn: socket.socket) -> None:
        self._kb = kb
        self._conn = conn
        self.begin()

    def begin(self) -> None:
        self._paths: set[str] = set()
        self._before: Any = None
        self._after: Any = None
        self._chained = True

    def note(self, paths: frozenset[str]) -> None:
        key = self._kb.index_written([]).key
        if not paths:  # the commit and its index update are over
            self._after = key
            return
        if not self._paths:
            self._before = key
        elif key != self._after:
            self._chained = False  # the index changed between two commits: the server loads it again
        self._paths |= paths
        relay.send_frame(self._conn, relay.dumps({"writing": sorted(paths)}))
        if relay.recv_exactly(self._conn, 1) != ACK:
            raise ConnectionError("the server did not take note")

    def end(self) -> dict[str, Any]:
        ids = [path[len(MEMORIES_DIR) + 1 : -5] for path in self._paths
               if path.startswith(f"{MEMORIES_DIR}/") and path.endswith(".yaml")]
        return {"before": self._before if self._chained else None, "after": self._after,
                "indexed": self._kb.index_written(ids).indexed}


@contextlib.contextmanager
def _raised(steps: int) -> Iterator[None]:
    """This process's session's group, lowered ``steps`` at the start, back at 0 for the block,
    and lowered again after it."""
    if steps:
        priority.session_at(0)
    try:
        yield
    finally:
        priority.lower_session(steps)


def main(argv: list[str] | None = None) -> int:
    root, fd = argv if argv is not None else sys.argv[1:]
    steps = priority.niceness()
    conn = socket.socket(fileno=int(fd))
    from ..kb import KnowledgeBase
    from ..search.background import made_here
    from .running import Runner

    kb = KnowledgeBase(root)
    kb.keep_warm()  # its file monitor: a look-up after its own commit needs no full check
    kb.sentences_in_background = not made_here()  # the server's filler makes them, if it runs
    with contextlib.suppress(Exception):  # only a head start: the first write checks again
        kb.ensure_fresh(reading=False)
    runner = Runner(kb, lower_git=False)  # each write runs lower as a whole, its git with it
    commits = _Commits(kb, conn)
    runner.view.notify = commits.note
    try:
        relay.send_frame(conn, relay.dumps({"ready": os.getpid()}))
    except OSError:
        return 0  # the server went while this process started (killed): nothing to write for
    # Lowered once it is ready: its first write, which waits for the KB to open (seconds at
    # 10,000 memories on a busy machine), is often a sync, which other clones wait for.
    priority.lower_session(steps)
    while True:
        try:
            request = relay.loads(relay.recv_frame(conn))
        except (OSError, EOFError, ValueError):
            return 0  # the server closed its end, or is gone
        if not isinstance(request, dict):
            return 1
        commits.begin()
        if yields(request["argv"]):
            code, chunks = priority.beneath(runner, request)
        else:  # a sync, which other clones wait for: at the server's priority
            with _raised(steps):
                code, chunks = runner(request)
        try:
            relay.send_frame(conn, relay.dumps({"code": code, "chunks": chunks, **commits.end()}))
        except OSError:
            return 0


if __name__ == "__main__":
    sys.exit(main())
