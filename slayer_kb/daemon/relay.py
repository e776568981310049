"""The client side of the warm server (server.py, docs/server.md): hand a ``slayer-kb`` command
to the server of its KB, which runs it on its warm index and catalog, and print what it printed.

A new process otherwise spends most of its time importing Whoosh, numpy and click, opening the
index and checking every file's signature (0.4-0.6 s, against tens of milliseconds relayed). So
this module imports nothing heavy: sockets, marshal and os from the standard library (not even
json, pathlib or typing, which cost more than the rest of the client together). Its sockets are
the built-in ``_socket``'s: ``socket.py`` adds only enums and wrappers, and importing it (enum,
selectors) took about 8 ms of every relayed command's start.

The channel is a Linux abstract socket named for the KB's real path and the user (nothing left on
disk, no path length limit; each side checks the other's user with SO_PEERCRED), or elsewhere a
socket file ``.slayer-kb/server.sock`` in the KB's state folder, which must be a socket of this
user that nobody else can open, in a folder of this user. On Windows every command runs in its
own process.

The server runs the same click command, in the client's current folder, environment and umask,
with the client's stdin bytes (when the command reads them for a ``-``: asked for once it got past its
argument checks, so that a usage error leaves stdin unread) and terminal size, and sends back the
bytes of stdout and stderr and the exit code: what the command would have printed here. Commands
that talk to the terminal (``edit``, ``watch``, ``mcp``, help, a ``reindex`` that draws a
progress bar, a ``sync`` run from a terminal, where git may ask for credentials) run here, and so does one whose ``@FILE`` is not a regular file (a pipe only this
process can read). Any failure to get an answer runs the command here, except when the server
went away after it began a command that writes: each request carries a random id under which the
server notes its commits before it publishes them, and settle.py looks the id up and prints the
command's result instead of running it again when its commit landed.
"""

from __future__ import annotations

import _socket
import errno
import marshal
import os
import stat
import struct
import sys
import time

from ..core import priority
from ..core.locate import find_root, named_kb
from .commands import AGAIN, LOCAL, LOCAL_AT_A_TERMINAL, READS, parse, reads_stdin, yields
from .settings import idle_seconds, mode

try:  # the built-in SHA-256, without loading OpenSSL through hashlib
    from _sha256 import sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.12 renamed it
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment]

LINUX = sys.platform.startswith("linux") and hasattr(_socket, "SO_PEERCRED")
SUPPORTED = hasattr(_socket, "AF_UNIX") and os.name == "posix"
# The most text a command reads from standard input (cli/common.py); the client takes at most 4
# bytes for each character (UTF-8's most) and runs a larger input here, to be refused.
MAX_STDIN_CHARS = 16 * 1024 * 1024
# The bytes a client sends of it at most, and a server takes: four a character (UTF-8's longest).
MAX_STDIN_BYTES = 4 * MAX_STDIN_CHARS
# Set on the /dev/null entry.py puts on a stdin the program was started without (``<&-``): run here, to be told.
STDIN_CLOSED = "slayer_kb_stdin_closed"
# The server acknowledges a connection at once, from a thread that never waits for the index;
# on a loaded machine "at once" can take seconds, and a client that gave a live server up would
# run the command beside it in a second process. So a server stopped with Ctrl-Z is given up on
# as soon as it is seen stopped (polled every ACK_POLL seconds), any other only after
# ACK_SECONDS, as long as a silent server is given (SILENT_SECONDS).
ACK_SECONDS = 10.0
ACK_POLL = 0.2
ACK = b"+"
# While it waits for its turn and while it runs a command the server sends a heartbeat every
# HEARTBEAT seconds; silence for SILENT_SECONDS means it is gone (stopped, wedged).
HEARTBEAT = 0.5
SILENT_SECONDS = 10.0
# Waiting for a turn behind other commands (a big sync): past this the command runs here.
QUEUE_SECONDS = 120.0
# Frames the server sends after the acknowledgement. LOST: the write process running the command
# died (the server lives on); the client settles the command by its id (settle.py).
BEAT, START, RESULT, REFUSED, RETIRING, LOST = b".", b"S", b"R", b"F", b"U", b"L"
# The server asks for the client's stdin (offered by a command that may read it) once the
# command has got past its argument checks; the client answers with a frame of its bytes.
INPUT = b"I"
# Who stopped, in what a client whose command was cut short says.
SERVER, WRITE_PROCESS = "the server", "the server's write process"
GO = b"G"
_LENGTH = struct.Struct(">I")
_CREDENTIALS = struct.Struct("3i")
SOCKET_FILE = "server.sock"
STATE_DIR = ".slayer-kb"
# AF_UNIX path limits: 108 bytes on Linux, 104 on macOS (with the terminating NUL).
MAX_SOCKET_PATH = 100
# The package's code folders, whose files make the version stamp.
PACKAGES = ("core", "catalog", "store", "search", "ops", "cli", "mcp", "daemon")


def version_stamp() -> str:
    """What the running code is: the environment (``sys.prefix``, whichever of its ``python``
    links started it) and Python version, the package's folder, and the size, inode, mtime and
    ctime of every file of the package. A server whose stamp differs from its client's was
    started by another install (an upgrade, an edited checkout): it retires and a new one starts.
    The ctime is what no one can set back: a file rewritten in place to its old size, its mtime
    restored, still changes the stamp (the restoring itself moves the ctime), as does a file
    replaced by another (a new inode); and a stat per file costs no reading of the code."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = sha256(f"{sys.prefix}\0{sys.version}\0{package}\0".encode("utf-8", "surrogateescape"))
    for folder in (package, *(os.path.join(package, sub) for sub in PACKAGES)):
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith((".py", ".so", ".pyd", ".json")):
                try:
                    st = entry.stat()
                except OSError:
                    continue
                digest.update(f"{entry.name}\0{st.st_size}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0"
                              .encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:24]


# -- the channel -----------------------------------------------------------------------------


def use_file_socket() -> bool:
    """A socket file where abstract sockets do not exist (``SLAYER_KB_SERVER_SOCKET=file`` forces
    it on Linux, for tests)."""
    return not LINUX or os.environ.get("SLAYER_KB_SERVER_SOCKET") == "file"


def address(root: os.PathLike[str] | str) -> bytes | str | None:
    """Where the server of the KB at ``root`` listens: an abstract name (bytes), a socket file's
    path (str), or None when there is no channel (a path too long for a socket)."""
    real = os.path.realpath(root)
    if not use_file_socket():
        digest = sha256(os.fsencode(real)).hexdigest()[:32]
        return f"\0slayer-kb/{os.getuid()}/{digest}".encode()
    path = os.path.join(real, STATE_DIR, SOCKET_FILE)
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def no_channel(root: os.PathLike[str] | str) -> str | None:
    """Why no server can listen for the KB at ``root`` (its socket file's path too long for a
    socket), or None."""
    if address(root) is not None:
        return None
    path = os.path.join(os.path.realpath(root), STATE_DIR, SOCKET_FILE)
    return (f"its socket file {path} would be {len(os.fsencode(path))} bytes long, over the {MAX_SOCKET_PATH} "
            "a socket's path may take, so commands run in their own process; move the knowledge base to a "
            "shorter path to have one")


def private_socket(path: str) -> bool:
    """The socket file and its folder are this user's and nobody else can reach them."""
    uid = os.getuid()
    try:
        folder = os.lstat(os.path.dirname(path))
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(folder.st_mode) and folder.st_uid == uid and not folder.st_mode & 0o022
            and stat.S_ISSOCK(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o077)


def _credentials(conn: _socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of ``conn`` (Linux's SO_PEERCRED)."""
    return _CREDENTIALS.unpack(conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _CREDENTIALS.size))


def peer_uid(conn: _socket.socket) -> int | None:
    """The user at the other end of ``conn``, where the system says (None elsewhere)."""
    if LINUX:
        return _credentials(conn)[1]
    peercred = getattr(_socket, "LOCAL_PEERCRED", None)
    if peercred is not None:  # macOS and the BSDs: struct xucred {u_int version; uid_t uid; ...}
        raw = conn.getsockopt(0, peercred, 76)
        return struct.unpack_from("=Ii", raw)[1]
    return None


def same_user(conn: _socket.socket) -> bool:
    uid = peer_uid(conn)
    return uid is None or uid == os.getuid()


def connect(root: os.PathLike[str] | str, timeout: float = ACK_SECONDS) -> _socket.socket | None:
    """A connection to the server of ``root``, acknowledged; None when there is none (or it is
    not this user's, or does not answer)."""
    where = address(root)
    if where is None or (isinstance(where, str) and not private_socket(where)):
        return None
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        conn.connect(where)
        if not same_user(conn) or not _acknowledged(conn, timeout):
            conn.close()
            return None
    except OSError:
        conn.close()
        return None
    return conn


def _acknowledged(conn: _socket.socket, timeout: float) -> bool:
    """Whether the server at the other end of ``conn`` acknowledges it within ``timeout``
    seconds; False at once when it is seen stopped (Ctrl-Z), which no wait would change."""
    pid = peer_pid(conn)
    deadline = time.monotonic() + timeout
    while True:
        conn.settimeout(min(ACK_POLL, max(deadline - time.monotonic(), 0.001)))
        try:
            return recv_exactly(conn, 1) == ACK
        except TimeoutError:
            if time.monotonic() >= deadline or (pid is not None and stopped(pid)):
                return False


def peer_pid(conn: _socket.socket) -> int | None:
    """The process at the other end of ``conn`` (the one that listened), on Linux; else None."""
    if not LINUX:
        return None
    pid = _credentials(conn)[0]
    return pid if pid > 0 else None


def stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (by a signal, as Ctrl-Z does, or by a tracer)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            state = stat_file.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"T", b"t")


def dumps(value: dict[str, object]) -> bytes:
    """The wire format: marshal (built in, nothing to import; both ends are this user's
    processes of the same install, which the version stamp checks)."""
    return marshal.dumps(value)  # type: ignore[arg-type]  # dicts of str, int, bytes, lists


def loads(data: bytes) -> object:
    return marshal.loads(data)  # noqa: S302 - from this user's own process (peer credentials checked)


def frame(data: bytes) -> bytes:
    """``data`` as a frame on the wire: its length, then itself."""
    return _LENGTH.pack(len(data)) + data


def send_frame(conn: _socket.socket, data: bytes) -> None:
    conn.sendall(frame(data))


def recv_frame(conn: _socket.socket, limit: int = 1 << 30) -> bytes:
    (size,) = _LENGTH.unpack(recv_exactly(conn, _LENGTH.size))
    if size > limit:
        raise ValueError("frame too large")
    return recv_exactly(conn, size)


def recv_exactly(conn: _socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = conn.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def control(root: os.PathLike[str] | str, op: str) -> dict | None:
    """Ask the server of ``root`` for its ``status`` or to ``stop``: its answer, None if none."""
    conn = connect(root)
    if conn is None:
        return None
    try:  # (a built-in socket is no context manager)
        conn.settimeout(SILENT_SECONDS)
        send_frame(conn, dumps({"op": op, "root": os.path.realpath(root)}))
        while (tag := recv_exactly(conn, 1)) == BEAT:
            pass
        if tag != RESULT:
            return None
        answer = loads(recv_frame(conn))
    except (OSError, ValueError, EOFError, TypeError):
        return None
    finally:
        conn.close()
    return answer if isinstance(answer, dict) else None


# -- which commands, and where -----------------------------------------------------------------


def relayable(argv: list[str], stderr_tty: bool = False,
              stdin_tty: bool = False) -> tuple[str | None, str, list[str]] | None:
    """``parse(argv)`` when a server can run the command: not one that talks to the terminal,
    no help."""
    found = parse(argv)
    if found is None:
        return None
    _kb_path, command, rest = found
    if command in LOCAL or (command == "reindex" and stderr_tty):
        return None
    if command in LOCAL_AT_A_TERMINAL and (stdin_tty or stderr_tty):
        return None
    if any(token in ("-h", "--help", "--version") for token in rest):
        return None
    return found


def files_readable_elsewhere(rest: list[str]) -> bool:
    """Whether every ``@FILE`` among the arguments names a regular file, which the server, in
    this folder and as this user, reads as this process would. Anything else (a pipe such as
    ``<(...)``'s /dev/fd/63, /proc/self/..., a missing file, an ``@`` that names no file) keeps
    the command here."""
    for token in rest:
        if token.startswith("@"):
            path = token[1:]
        elif "=@" in token:
            path = token.split("=@", 1)[1]
        else:
            continue
        real = os.path.realpath(path)
        # /proc and /dev name this process's own files; /dev/shm holds ordinary shared files.
        if not os.path.isfile(real) or (real.startswith(("/proc/", "/dev/", "/sys/")) and not real.startswith("/dev/shm/")):  # noqa: S108 (a prefix test, not a file made)
            return False
    return True


def kb_root(kb_path: str | None) -> str | None:
    """The KB's real path as the CLI would find it (--kb, $SLAYER_KB, else the enclosing KB)."""
    try:
        kb_path = named_kb(kb_path)
        root = kb_path if kb_path is not None else find_root(os.getcwd())
    except (ValueError, OSError):  # a blank --kb, or the current folder deleted: the CLI says so properly
        return None
    if root is None:
        return None
    real = os.path.realpath(root)
    return real if os.path.isdir(os.path.join(real, "memories")) or os.path.isdir(os.path.join(real, "datasources")) else None


def _terminal() -> list[int] | None:
    """The terminal size the command would see here (as shutil finds it, after $COLUMNS and
    $LINES), or None when there is no terminal."""
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return None
    return [size.columns, size.lines]


def _streams() -> list[list[str]] | None:
    """(encoding, errors) of stdin, stdout and stderr, which the server's captured streams copy."""
    found = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        if stream is None or not hasattr(stream, "encoding"):
            found.append(["utf-8", "strict"])
        else:
            found.append([stream.encoding or "utf-8", stream.errors or "strict"])
    return found


class Outcome:
    """What ``forward`` found: the exit code to exit with, or None to run the command here;
    whether to start a server for the KB once it is done; and ``settle``, (the KB's root, the
    request's id) of a write whose server died after it began it (settle.py decides), with
    ``stopped``: which process died (``SERVER``, or the server's ``WRITE_PROCESS``)."""

    def __init__(self, code: int | None, start: str | None = None, settle: tuple[str, str] | None = None,
                 stopped: str = SERVER) -> None:
        self.code = code
        self.start = start
        self.settle = settle
        self.stopped = stopped


def forward(argv: list[str], marks: Marks | None = None) -> Outcome:
    """Run ``slayer-kb ARGV`` in the server of its KB when there is one: its exit code, after
    printing what it printed. Otherwise (code None) this process runs it, and ``start`` names the
    KB whose server to start once it has (mode ``on`` only). ``marks``: this command's, for the
    thread a Ctrl-C interrupts (entry.py); a new one when not given."""
    if not SUPPORTED or mode() == "off":
        return Outcome(None)
    stderr_tty = _isatty(sys.stderr)
    found = relayable(argv, stderr_tty, _isatty(sys.stdin))
    if found is None or not files_readable_elsewhere(found[2]):
        return Outcome(None)
    root = kb_root(found[0])
    if root is None or address(root) is None:
        return Outcome(None)  # no KB, or no server can listen for it (no_channel): none to start
    current = mode(root)
    if current == "off":
        return Outcome(None)
    start = root if current == "on" else None
    conn = connect(root)
    if conn is None:
        return Outcome(None, start)
    try:
        return _relay(conn, argv, root, found[1], start, marks if marks is not None else Marks())
    finally:
        conn.close()


def _relay(conn: _socket.socket, argv: list[str], root: str, command: str, start: str | None, marks: Marks) -> Outcome:
    offered = reads_stdin(argv)
    if offered and (_isatty(sys.stdin) or sys.stdin is None or getattr(sys.stdin, STDIN_CLOSED, False)):
        return Outcome(None)  # typed at a terminal: read by the command itself, here
    return _exchange(conn, argv, root, command, start, offered, marks)


def _take_stdin() -> bytes:
    """stdin's bytes (one more than the most a command takes: ``yes | slayer-kb save -`` is read
    for ever), put back as ``sys.stdin``: should the command run here after all, it reads them."""
    import io

    taken = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    original = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(taken), encoding=original.encoding, errors=original.errors, newline="\n")
    return taken


def _exchange(conn: _socket.socket, argv: list[str], root: str, command: str, start: str | None,
              offered: bool, marks: Marks) -> Outcome:
    """The request sent and its answer printed. ``offered``: the command may read stdin, which
    the server asks for (``INPUT``) only once the command got past its argument checks, as a
    process of its own reads it (``_take_stdin``)."""
    umask = os.umask(0o077)
    os.umask(umask)
    try:
        cwd = os.getcwd()
    except OSError:
        return Outcome(None)
    request = {
        "argv": argv, "root": root, "cwd": cwd, "env": dict(os.environ), "umask": umask,
        "terminal": _terminal(), "streams": _streams(), "stamp": version_stamp(),
        "stdin": None, "input": offered, "request": os.urandom(16).hex(),
    }
    began = False
    taken: bytes | None = None
    try:
        send_frame(conn, dumps(request))
        conn.settimeout(SILENT_SECONDS)
        give_up = time.monotonic() + QUEUE_SECONDS
        while True:
            tag = recv_exactly(conn, 1)
            if tag == BEAT:
                if not began and time.monotonic() > give_up:
                    return Outcome(None)  # still not its turn: run it here (the server will not)
                continue
            if tag == INPUT and offered and taken is None and not began:
                taken = _take_stdin()
                if len(taken) > MAX_STDIN_BYTES:
                    return Outcome(None, start)  # run here, to be refused
                send_frame(conn, taken)
            elif tag == START:
                if command not in READS:  # before GO: a Ctrl-C from here on finds the write begun
                    marks.begun = command
                conn.sendall(GO)
                began = True
                if yields(argv) and not priority.PER_THREAD:
                    # From here it only waits and prints: searches beside it go first (priority.py;
                    # on Linux the whole relay runs lower, entry.py).
                    priority.lower_process(priority.niceness())
            elif tag == RESULT:
                result = loads(recv_frame(conn))
                code, chunks = result["code"], result["chunks"]  # type: ignore[index]
                break
            elif tag == RETIRING:
                return Outcome(None, start)  # another install's server: it exits, start ours
            elif tag == LOST and began:
                return Outcome(None, start, (root, str(request["request"])), WRITE_PROCESS)
            else:  # refused (before it began): another install's foreground watcher, another KB's request
                return Outcome(None)
    except (OSError, ValueError, EOFError, TypeError, KeyError):
        if began and command not in AGAIN:
            # It may have committed: settle.py finds out before anything runs again.
            return Outcome(None, start, (root, str(request["request"])))
        return Outcome(None, start)
    except KeyboardInterrupt:
        # Here only when nothing else waits for this thread (entry.py, priority.beneath).
        if not marks.interrupted(1):
            print("\nAborted!", file=sys.stderr)
            return Outcome(1)
        result = _outcome(conn, marks)
        if result is None:
            return Outcome(1)
        code, chunks = result
    return _print_result(code, chunks)


class Marks:
    """What one relayed command's client knows of it across its threads: the write the server
    began for it, once it did (``begun``: set by the relaying thread, read by the one a Ctrl-C
    interrupts), and whether it said it left it there. One per command (``forward``): an
    in-process caller relaying twice carried the first write's mark into the second."""

    def __init__(self) -> None:
        self.begun: str | None = None
        self.said = False  # that it was left to the server (``abandoned``): said once

    def interrupted(self, times: int) -> bool:
        """The ``times``-th Ctrl-C: whether the client waits on for the outcome of the write the
        server began (said), which is for the first only. Until the server began one, Ctrl-C
        aborts: it runs nothing its client did not confirm, and a read may end any time.
        "Aborted!" after a write it began had it retried, and done twice."""
        if self.begun is None or times != 1:
            return False
        print(f"\nInterrupted: the server had begun this {self.begun} and finishes it; waiting for its "
              "outcome (Ctrl-C again to stop waiting).", file=sys.stderr, flush=True)
        return True

    def abandoned(self) -> bool:
        """The client stops waiting (a second Ctrl-C, a silent server): whether a write the server
        began is left to it, said once; else the command was aborted."""
        if self.begun is None:
            return False
        if not self.said:
            self.said = True
            print(f"Not waiting: the server may still finish this {self.begun}; `git log -1` shows whether "
                  "it committed.", file=sys.stderr, flush=True)
        return True


def _outcome(conn: _socket.socket, marks: Marks) -> tuple[int, list[tuple[int, bytes]]] | None:
    """After a Ctrl-C: the result of the write the server began, once it sends it (None, said,
    when a second Ctrl-C or a silent or lost server ends the wait)."""
    try:
        while (tag := recv_exactly(conn, 1)) == BEAT:
            pass
        if tag == RESULT:
            result = loads(recv_frame(conn))
            return result["code"], result["chunks"]  # type: ignore[index]
    except (OSError, ValueError, EOFError, TypeError, KeyError, KeyboardInterrupt):
        pass
    marks.abandoned()
    return None


def _print_result(code: int, chunks: list[tuple[int, bytes]]) -> Outcome:
    # What the command wrote, in the order it wrote it (so ``2>&1`` reads as it would have).
    for fd, data in chunks:
        try:
            write(sys.stdout if fd == 1 else sys.stderr, data)
        except OSError as exc:
            if exc.errno == errno.EPIPE or fd != 1:
                raise
            from ..core.errors import output_lost

            print(f"Error: {output_lost(exc)}", file=sys.stderr)
            return Outcome(1)
    return Outcome(code)


def write(stream: object, data: bytes) -> None:
    if not data or stream is None:
        return
    buffer = getattr(stream, "buffer", None)
    stream.flush()  # type: ignore[attr-defined]
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "replace"))  # type: ignore[attr-defined]
        stream.flush()  # type: ignore[attr-defined]


def _isatty(stream: object) -> bool:
    try:
        return bool(stream is not None and stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False


def spawn(root: str) -> None:
    """Start the server of the KB at ``root`` in the background: its own session, no terminal,
    its output in ``.slayer-kb/server.log``. It exits at once if another one serves the KB, and
    loads nothing heavy until this process has exited (the two would share the CPU)."""
    import subprocess

    from ..core.children import NEUTRAL_CWD, python_child

    # Isolated, out of the KB: nothing in the KB or the caller's folder is ever imported.
    argv, env = python_child("slayer_kb.daemon.server", root, "--idle", str(idle_seconds()), "--after", str(os.getpid()))
    try:
        subprocess.Popen(
            argv, cwd=NEUTRAL_CWD, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
        )
    except OSError:
        pass


def exit_code(exc: SystemExit) -> int:
    """The status a process would exit with for ``exc``."""
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1
