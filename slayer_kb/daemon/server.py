"""The warm server of one KB (docs/server.md): it keeps the KB open (index searcher, meaning model,
catalog, parsed trees) with the file monitor of ``slayer-kb watch``, and runs the commands that
``slayer-kb`` processes hand it (relay.py) exactly as they would have run: one at a time, some
reads beside them.

``python -I -m slayer_kb.daemon.server ROOT --idle SECONDS``, in ``/`` (``core.children``), is what a
client starts in the background when it finds none; ``slayer-kb watch`` runs the same in the
foreground, without the idle exit. This module imports only the standard library until its socket is bound, so a client that comes while
the server is still loading is acknowledged at once and waits for its turn instead of starting a
second server.

Each relayed command runs under the server's one lock (the watcher's syncs take it too), in the
client's folder, environment and umask, with stdin, stdout and stderr replaced by buffers that
encode as the client's streams do (running.py); a write runs in the server's write process, at a
lower priority (writer.py), and takes the KB's cross-process lock, as in any process. ``search``, ``get`` and ``list`` go beside it when the KB's
state in memory can answer them: while a write waits for the KB lock or git writes its commit
(store/view.py; docs/server.md, "Reads beside writes"). A client of another install (its version stamp differs) is told the
server retires, and the server exits; so does a server that sees its own files change, or that
got no command for its idle time.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..store import requests
from . import relay, settings
from .running import Runner, holds_the_view, writes
from .turns import Heartbeat, Turn
from .writer import UNAVAILABLE, WriteProcess

if TYPE_CHECKING:
    from ..kb import KnowledgeBase
    from ..search.background import SentenceFiller
    from ..store.view import View

LOG_FILE = "server.log"
LOCK_FILE = "server.lock"
MAX_LOG = 1 << 20
# How often the server checks its idle time and its own files.
CHECK_SECONDS = 0.5
STAMP_SECONDS = 5.0
# A command's exit code and what it printed, in order (running.py).
Result = tuple[int, list[tuple[int, bytes]]]
# A command still running when the server is told to stop is given this long to finish.
FINISH_SECONDS = 60.0
# How long a foreground watch waits for a background server it asked to stop.
TAKE_OVER_SECONDS = 20.0
# How long a server started on demand waits for the client that started it to exit.
PARENT_SECONDS = 5.0


class Server:
    """Listens on the KB's channel and answers clients, until ``stop`` is set. Commands wait
    until ``ready(runner)`` is called (the KB is open), then run one at a time under ``busy``,
    except the reads that go beside them (``_beside``)."""

    def __init__(self, root: str | Path, *, stop: threading.Event, idle: float | None, log: TextIO) -> None:
        self.root = os.path.realpath(root)
        self.stop = stop
        self.idle = idle
        self.log = log
        self.busy = Turn()
        self.stamp = relay.version_stamp()
        self.started = time.time()
        self.served = 0
        self.running: str | None = None
        self.replaced = False  # it stopped because the KB's folder is not the one it opened
        self.reading: dict[int, str] = {}  # the reads running beside it, by thread
        self._runner: Any = None
        self.sentences: SentenceFiller | None = None
        self.writer: WriteProcess | None = None  # runs the writes, once the KB is open (ready)
        self._ready = threading.Event()
        self.warm = threading.Event()  # the first sync is done and the searcher and vectors loaded
        self._count = threading.Lock()
        self._active = 0
        self._last = time.monotonic()
        self._closed = threading.Event()
        self._lock_fd: int | None = None
        self._socket_id: tuple[int, int] | None = None
        where = relay.address(self.root)
        if where is None:
            raise OSError("the socket's path is too long")
        self.where = where
        import socket

        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if isinstance(where, str):
                self._bind_file(where)
            else:
                self._listener.bind(where)
            self._listener.listen(64)
        except OSError:
            self._listener.close()
            self._release_lock()
            raise
        self._listener.settimeout(0.2)
        self._threads = [
            threading.Thread(target=self._accept, name="slayer-kb server", daemon=True),
            threading.Thread(target=self._watch_idle, name="slayer-kb idle", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- the channel ------------------------------------------------------------------------

    def _bind_file(self, path: str) -> None:
        """The socket file in the state folder: one server per KB by an exclusive lock on
        ``server.lock``; a stale socket file (its server was killed) is replaced."""
        import fcntl

        folder = os.path.dirname(path)
        st = os.lstat(folder)
        if not os.path.isdir(folder) or os.path.islink(folder) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            raise OSError(f"{folder} is not a private folder of this user")
        fd = os.open(os.path.join(folder, LOCK_FILE), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise
        self._lock_fd = fd
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        old = os.umask(0o077)
        try:
            self._listener.bind(path)
        finally:
            os.umask(old)
        st = os.lstat(path)
        self._socket_id = (st.st_dev, st.st_ino)

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def ready(self, kb: KnowledgeBase) -> None:
        """Start running commands on ``kb``, kept warm (``Runner``)."""
        from ..search.background import SentenceFiller

        kb.keep_warm()
        requests.drop_stale(kb.state)
        self._runner = Runner(kb)
        self.busy.view = self._runner.view
        self.writer = WriteProcess(self.root, self._say)
        # Sentence vectors are made off the save path, between and after commands.
        self.sentences = SentenceFiller(kb.index, lambda: self.busy, after=self.warm, own=self._runner.own)
        self.sentences.start()
        with self._count:
            self._last = time.monotonic()  # the idle time counts from here
        self._ready.set()

    def close(self) -> None:
        """Stop answering: new clients run their commands themselves; a command being run is
        finished first (for at most FINISH_SECONDS)."""
        self.stop.set()
        self._closed.set()
        if self.sentences is not None:
            self.sentences.stop()
        for thread in self._threads:
            thread.join(timeout=5.0)
        self._listener.close()
        if isinstance(self.where, str) and self._socket_id is not None:
            with contextlib.suppress(OSError):
                st = os.lstat(self.where)
                if (st.st_dev, st.st_ino) == self._socket_id:
                    os.unlink(self.where)
        deadline = time.monotonic() + FINISH_SECONDS
        while self._active and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.writer is not None:
            self.writer.stop()
        self._release_lock()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), name="slayer-kb client", daemon=True).start()

    def _watch_idle(self) -> None:
        next_stamp = time.monotonic() + STAMP_SECONDS
        while not self._closed.wait(CHECK_SECONDS):
            now = time.monotonic()
            with self._count:
                # Idle only once ready: before, the KB is still opening (a loaded machine takes
                # seconds) and this process's log is not open yet, so an exit would go unsaid.
                idle_for = now - self._last if self._active == 0 and self._ready.is_set() else 0.0
            if self.idle is not None and idle_for >= self.idle:
                self._say(f"no command for {self.idle:g} s: exiting")
                self.stop.set()
                return
            if now >= next_stamp:
                next_stamp = now + STAMP_SECONDS
                if self.idle is not None and not os.path.isdir(os.path.join(self.root, relay.STATE_DIR)):
                    self._say("the KB or its state folder is gone: exiting")
                    self.stop.set()
                    return
                if self._replaced():  # a foreground watch too: the folder it watches is gone
                    return
                if self.idle is not None and relay.version_stamp() != self.stamp:
                    self._say("slayer-kb's files changed: exiting, the next command starts a new server")
                    self.stop.set()
                    return

    def _replaced(self) -> bool:
        """Whether the KB's folder is not the one this server opened, or its state folder was set
        aside (``KnowledgeBase.replaced``): then it stops, said in its log, and its clients run
        their commands on the KB there now."""
        if not self._ready.is_set():
            return False
        from .watch import moved_away  # loaded by this server's watcher

        kb = self._runner.kb
        # Moved first: the state folder at the path then is another KB's, not one to check; and
        # again after the check, for a folder replaced while it ran.
        untrusted = None if kb.moved() else kb.state_set_aside()
        if untrusted is None and not kb.moved():
            return False
        self._say(moved_away(self.root) if kb.moved() else f"{untrusted}: exiting")
        self.replaced = True
        self.stop.set()
        return True

    def _say(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}", file=self.log, flush=True)

    # -- one client -------------------------------------------------------------------------

    def _connection(self, conn: Any) -> None:
        with conn, contextlib.suppress(OSError, ValueError, EOFError, TypeError):
            conn.settimeout(relay.SILENT_SECONDS)
            if not relay.same_user(conn):
                return
            conn.sendall(relay.ACK)
            request = relay.loads(relay.recv_frame(conn))
            if not isinstance(request, dict) or request.get("root") != self.root:
                conn.sendall(relay.REFUSED)
                return
            if "op" in request:
                self._control(conn, request["op"])
                return
            argv = request.get("argv")
            if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)
                    and relay.relayable(argv) is not None):
                conn.sendall(relay.REFUSED)
                return
            if request.get("stamp") != self.stamp:
                if self.idle is None:  # a foreground watcher stays; the client runs it itself
                    conn.sendall(relay.REFUSED)
                else:
                    conn.sendall(relay.RETIRING)
                    self._say("a client of another slayer-kb install came: exiting for it")
                    self.stop.set()
                return
            try:
                self._run(conn, request)
            finally:
                if self._runner is not None:  # this thread ends: its kept connections with it
                    self._runner.kb.release_thread()

    def _run(self, conn: Any, request: dict[str, Any]) -> None:
        with self._count:
            self._active += 1
        beat = Heartbeat(conn)
        try:
            while not self._ready.wait(0.1):
                if self.stop.is_set():
                    beat.send(self._leaving())
                    return
            if self._replaced():
                beat.send(self._leaving())  # its client runs it on the KB there now
                return
            result = self._input(conn, beat, request) if request.get("input") else None
            if result is None:
                beside = self._runner.goes_beside(request)  # its settings checked, when yes
                handled, result, started = self._beside(conn, beat, request) if beside else (False, None, False)
                if not handled:
                    result = self._in_turn(conn, beat, request, started, checked=beside)
            if result is None:
                return  # refused, or the client went away: it was told, or it is gone
            with self._count:
                self.served += 1
            data = relay.dumps({"code": result[0], "chunks": result[1]})
            beat.finish(relay.RESULT + relay.frame(data))
            if writes(request):  # answered: its client needs the record no more
                requests.drop(self._runner.kb.state, request["request"])
        finally:
            beat.finish(b"")
            with self._count:
                self._active -= 1
                self._last = time.monotonic()

    def _input(self, conn: Any, beat: Heartbeat, request: dict[str, Any]) -> Result | None:
        """For a command that may read stdin, whose client offers it (``input``): what it prints
        when it refuses its arguments, its whole run (``Runner.refused_arguments``); else None,
        and the client's stdin, asked for now, is in ``request``. Asked for before its turn, so
        that no command waits for a slow pipe; one slower than SILENT_SECONDS drops the
        connection, and the client runs the command itself on what it read."""
        refused = self._runner.refused_arguments(request)
        if refused is None:
            beat.send(relay.INPUT)
            request["stdin"] = relay.recv_frame(conn, relay.MAX_STDIN_BYTES)
        return refused

    def _start(self, conn: Any, beat: Heartbeat, request: dict[str, Any]) -> bool:
        """Tell the client its command starts, and hear it confirm; False when it cannot (the
        server stops, the request cannot run here) or the client went away."""
        if self.stop.is_set():
            beat.send(self._leaving())
            return False
        if not _runnable(request):
            beat.send(relay.REFUSED)
            return False
        beat.send(relay.START)
        return relay.recv_exactly(conn, 1) == relay.GO

    def _in_turn(self, conn: Any, beat: Heartbeat, request: dict[str, Any], started: bool = False,
                 checked: bool = False) -> Result | None:
        """Run ``request`` in its turn: after every command before it, never beside a write. A
        write runs in the write process (writer.py), and holds the view only to take it in, or
        for all of it when it changes more than its commits name (``holds_the_view``).
        ``started``: its client was already told it starts (a read that could not go beside);
        ``checked``: its settings were checked (a read that might have gone beside)."""
        elsewhere = self.writer is not None and writes(request)
        while not self.busy.acquire(timeout=0.1, view=not elsewhere or holds_the_view(request)):
            if self.stop.is_set():
                beat.send(self._leaving())
                return None
        try:
            if not started and not self._start(conn, beat, request):
                return None
            self.running = " ".join(request["argv"])[:200]
            try:
                if elsewhere:
                    result = self._write_elsewhere(request)
                    if result is None:  # the write process died: its client is told so
                        beat.send(relay.LOST)
                    return result
                result = self._runner(request, checked)
                self._vectors_after()
                return result
            finally:
                self.running = None
        finally:
            self.busy.release()

    def _write_elsewhere(self, request: dict[str, Any]) -> Result | None:
        """Run the write ``request`` in the write process, and take in what it changed; None
        when that process died meanwhile (the client settles the command by its id)."""
        view = self.busy.view
        assert view is not None and self.writer is not None

        def begun(paths: frozenset[str]) -> None:
            with view.hold():
                self._runner.write_elsewhere(paths)

        done = self.writer.run(request, begun)
        with view.hold():
            if done is UNAVAILABLE:
                result: Result = self._runner(request)
                self._vectors_after()
                return result
            self._runner.took_in(done)
            coverage = self._runner.held_coverage() if done is not None else None
        self._vectors_after(coverage)
        return None if done is None else (done["code"], done["chunks"])

    def _vectors_after(self, coverage: tuple[int, int] | None = None) -> None:
        """A command run in its turn is over: the filler makes the vectors it left lacking
        (search/background.py). Not after a read beside a write, which indexes nothing, nor after
        a write whose take-in left ``coverage`` whole: a pass there takes the turn and the view
        from reads and writes several times to find nothing to make."""
        if self.sentences is not None:
            self.sentences.after_command(coverage)

    def _beside(self, conn: Any, beat: Heartbeat, request: dict[str, Any]) -> tuple[bool, Result | None, bool]:
        """Run the read ``request`` without waiting for its turn, when the KB's state in memory
        can answer it (``Runner.ready_beside``): it waits only while a write reads or updates
        that state, not while the write waits for the KB lock or git writes its commit.
        (handled, its result, whether its client was told it starts); not handled: it cannot
        go beside, and waits for its turn.

        The client is told its command starts, and confirms, with the view let go: that round
        trip waits for the client's process to be scheduled, and the view held meanwhile kept
        every other read waiting for it too (docs/performance.md, "Reads beside writes")."""
        view = self.busy.view
        assert view is not None  # set by ready(), which _run waited for
        ready = self._view_ready(beat, view)
        if not ready:
            return ready is None, None, False
        if not self._start(conn, beat, request):
            return True, None, False
        # Looked at again: a write may have begun a commit of catalog files meanwhile.
        ready = self._view_ready(beat, view, keep=True)
        if not ready:
            return ready is None, None, True
        try:
            me = threading.get_ident()
            self.reading[me] = " ".join(request["argv"])[:200]
            try:
                return True, self._runner.beside(request), True
            finally:
                del self.reading[me]
        finally:
            view.release()

    def _view_ready(self, beat: Heartbeat, view: View, keep: bool = False) -> bool | None:
        """Whether a read may go beside now (``Runner.ready_beside``), looked at with the view held,
        kept when ``keep`` and yes; None when the server stops meanwhile (its client is told so)."""
        while not view.acquire(write=False, timeout=0.1):
            if self.stop.is_set():
                beat.send(self._leaving())
                return None
        ready = False
        try:
            ready = bool(self._runner.ready_beside())
        finally:  # held only by a read that goes on with it, even when the look raised
            if not (ready and keep):
                view.release()
        return ready

    def _leaving(self) -> bytes:
        """What a client is told when this server is stopping: a background server retires (the
        client starts a new one, which waits for this one to let go of the socket)."""
        return relay.RETIRING if self.idle is not None else relay.REFUSED

    def _control(self, conn: Any, op: str) -> None:
        if op == "status":
            answer: dict[str, Any] = {
                "pid": os.getpid(), "root": self.root, "started": self.started,
                "uptime": round(time.time() - self.started, 1), "idle_exit": self.idle,
                "served": self.served, "current": self.running, "reading": sorted(self.reading.values()),
                "stamp": self.stamp,
                "ready": self._ready.is_set(), "warm": self.warm.is_set(), "stopping": self.stop.is_set(),
                "channel": self.where if isinstance(self.where, str) else "abstract socket",
                "log": os.path.join(self.root, relay.STATE_DIR, LOG_FILE) if self.idle is not None else None,
                "sentence_vectors": self.sentences.status() if self.sentences is not None else None,
                "writer": self.writer.status() if self.writer is not None else None,
            }
        elif op == "stop":
            self._say("asked to stop")
            self.stop.set()
            answer = {"stopping": os.getpid()}
        else:
            conn.sendall(relay.REFUSED)
            return
        data = relay.dumps(answer)
        conn.sendall(relay.RESULT + relay.frame(data))


def _runnable(request: dict[str, Any]) -> bool:
    """Whether the request can be run as asked (its folder exists, its encodings are known):
    checked before the client is told the command starts, so that it runs it itself if not."""
    import codecs

    try:
        if not os.path.isdir(request["cwd"]):
            return False
        for encoding, errors in request.get("streams") or []:
            codecs.lookup(encoding)
            codecs.lookup_error(errors)
        return isinstance(request.get("umask", 0), int) and isinstance(request.get("env", {}), dict)
    except (KeyError, TypeError, ValueError, LookupError):
        return False


# -- the process -------------------------------------------------------------------------------


def run(root: str | Path, *, idle: float | None, log: TextIO | None = None, after: int | None = None) -> int:
    """Serve the KB at ``root`` until stopped (Ctrl-C, SIGTERM, ``slayer-kb server stop``) or,
    with ``idle``, until no command came for that many seconds. Without ``idle`` this is
    ``slayer-kb watch``, in the foreground, logging to ``log`` (stderr): 1 when it stopped because
    the KB was replaced (a supervisor restarts a watch that fails), else 0."""
    background = idle is not None
    out: TextIO = log if log is not None else sys.stderr
    unheard = relay.no_channel(root) if relay.SUPPORTED else None
    if unheard is not None and background:
        return 0  # no server can listen (`server start` says why)
    stop = threading.Event()
    server: Server | None = None
    bound_early = relay.SUPPORTED and not relay.use_file_socket()
    if bound_early:
        server = _bind(root, stop, idle, out)
        if server is None and background:
            return 0  # another server answers for this KB
    if after is not None:
        # The client that started this server is still exiting: let it have the CPU (a client
        # that comes meanwhile is acknowledged and waits for its turn).
        deadline = time.monotonic() + PARENT_SECONDS
        while os.getppid() == after and time.monotonic() < deadline:
            time.sleep(0.005)
    from ..kb import KnowledgeBase
    from .watch import run_watcher

    kb = KnowledgeBase(root)
    if background:
        out = _open_log(kb.state_dir() / LOG_FILE)
        if server is not None:
            server.log = out
    if relay.SUPPORTED and not bound_early:
        kb.state_dir()
        server = _bind(root, stop, idle, out)
        if server is None and background:
            kb.close()
            return 0
    if server is None and not background and relay.SUPPORTED:
        _say(out, f"No server answers this KB's commands: {unheard}. This watch keeps the index current." if unheard
             else "Another server answers this KB's commands; this one only keeps the index current.")
    if background:
        _say(out, f"{time.strftime('%Y-%m-%dT%H:%M:%S')} server {os.getpid()} for {kb.root} "
                  f"(idle exit after {idle:g} s)")
    moved = run_watcher(kb, stop=stop, out=out, server=server)
    return 1 if not background and (moved or (server is not None and server.replaced)) else 0


def _bind(root: str | Path, stop: threading.Event, idle: float | None, log: TextIO) -> Server | None:
    """This KB's server, or None if another one serves it. A foreground ``watch`` takes over
    from a server started in the background (asked to stop, it finishes its command first); a
    background server waits for one that is stopping (retiring for a new install, idle)."""
    if relay.address(root) is None:
        return None  # no socket can be made for it (relay.no_channel)
    try:
        return Server(root, stop=stop, idle=idle, log=log)
    except OSError:
        pass
    other = relay.control(root, "status")
    if idle is None:
        if other is None or other.get("idle_exit") is None:
            return None
        relay.control(root, "stop")
    elif other is not None and not other.get("stopping"):
        return None  # another server answers for this KB
    deadline = time.monotonic() + TAKE_OVER_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.05)
        with contextlib.suppress(OSError):
            return Server(root, stop=stop, idle=idle, log=log)
        other = relay.control(root, "status")
        if other is not None and not other.get("stopping") and (idle is not None or other.get("idle_exit") is None):
            return None  # another server came first (or, for a watch, another watch)
    return None


def _open_log(path: Path) -> TextIO:
    """The background server's log (stdout and stderr too, for a crash's traceback)."""
    with contextlib.suppress(OSError):
        if os.lstat(path).st_size > MAX_LOG:
            os.replace(path, path.with_name(path.name + ".1"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return sys.stderr


def _say(log: TextIO, line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(line, file=log, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    options: dict[str, float] = {"--idle": settings.DEFAULT_IDLE}
    for name in ("--idle", "--after"):
        if name in args[:-1]:
            at = args.index(name)
            options[name] = float(args[at + 1])
            del args[at:at + 2]
    if len(args) != 1:
        print("usage: python -m slayer_kb.daemon.server ROOT [--idle SECONDS] [--after PID]", file=sys.stderr)
        return 2
    after = options.get("--after")
    return run(args[0], idle=options["--idle"], after=int(after) if after is not None else None)


if __name__ == "__main__":
    sys.exit(main())
