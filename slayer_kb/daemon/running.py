"""Running one relayed command in the warm server (server.py) as the client's process would have:
its arguments, standard streams, folder, environment and umask (docs/server.md).

Two ways. A command in its turn (``Runner.__call__``; writes, and reads that cannot go beside)
runs under the server's turn lock, in the client's folder, environment and umask, which are the
process's own. A read beside a write (``Runner.beside``; ``search``, ``get``, ``list``) runs on
its own thread while a write may be running: it changes nothing of the process (no folder, no
environment, no umask; it needs none of them), and sees the KB through ``store/view.py``; the
paths it prints are shown from the client's folder (``problems.user_folder``).

Either way the command's stdin, stdout and stderr are this thread's own: ``sys.stdin``,
``sys.stdout`` and ``sys.stderr`` are replaced once by ``_PerThread`` proxies, which send each
thread to the streams made for its command, and every other thread to the process's.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..core import priority, problems
from ..search import switches
from ..store import requests
from . import relay
from .commands import READS, yields

if TYPE_CHECKING:
    from ..kb import KnowledgeBase
    from ..store.view import View

# Reads answered beside a running write: they read only the index, the memory files and the
# catalog, which view.py publishes; the other reads (git's history, sessions, validation) wait
# for their turn as before.
BESIDE = frozenset({"search", "get", "list"})

_STREAMS = threading.local()


class _PerThread:
    """``sys.stdin``/``stdout``/``stderr`` for every thread: this thread's command's stream, or
    the process's. No ``__weakref__``: click caches the text stream it made for a stream object,
    and this one object stands for a different stream on each thread."""

    __slots__ = ("_name", "_default")

    def __init__(self, name: str, default: Any) -> None:
        self._name = name
        self._default = default

    def _stream(self) -> Any:
        stream = getattr(_STREAMS, self._name, None)
        return self._default if stream is None else stream

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._stream(), attribute)

    def __iter__(self) -> Any:
        return iter(self._stream())


def _install_streams() -> None:
    for name in ("stdin", "stdout", "stderr"):
        if not isinstance(getattr(sys, name), _PerThread):
            setattr(sys, name, _PerThread(name, getattr(sys, name)))


@contextlib.contextmanager
def _thread_streams(stdin: Any, stdout: Any, stderr: Any) -> Any:
    _STREAMS.stdin, _STREAMS.stdout, _STREAMS.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        _STREAMS.stdin = _STREAMS.stdout = _STREAMS.stderr = None


def writes(request: dict[str, Any]) -> bool:
    """Whether ``request`` is a command that may commit, with an id its commits are noted under
    (``store/requests.py``)."""
    found = relay.parse(request["argv"])
    return found is not None and found[1] not in READS and requests.valid(request.get("request"))


# Writes that change files or the index beyond the commits they name to the server (git's own
# merges, rebases and resets, the index rebuilt or compacted): reads wait for the whole of them.
WHOLE = frozenset({"sync", "rebase", "merge", "renumber", "reindex", "maintenance"})


def holds_the_view(request: dict[str, Any]) -> bool:
    """Whether the write ``request``, run in the write process, keeps reads waiting until it
    ends (``WHOLE``) rather than only while its changes are taken in."""
    found = relay.parse(request["argv"])
    return found is None or found[1] in WHOLE


class _PastArgumentsOnRead(io.RawIOBase):
    """The standard input of a command run for its argument checks alone: reading it is going
    past them (``Runner.refused_arguments``)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        from ..cli.common import PastArguments

        raise PastArguments


class _Recorder(io.BytesIO):
    """The bytes a command writes to stdout (1) or stderr (2), in one list in the order of the
    writes, so the client replays them interleaved as they happened."""

    def __init__(self, fd: int, chunks: list[tuple[int, bytes]]) -> None:
        super().__init__()
        self.fd = fd
        self.chunks = chunks

    def write(self, data: Any) -> int:
        data = bytes(data)
        if data:
            self.chunks.append((self.fd, data))
        return len(data)


def _merged(chunks: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """Consecutive writes to one stream as one."""
    merged: list[tuple[int, list[bytes]]] = []
    for fd, data in chunks:
        if merged and merged[-1][0] == fd:
            merged[-1][1].append(data)
        else:
            merged.append((fd, [data]))
    return [(fd, b"".join(parts)) for fd, parts in merged]


class _Command:
    """One request's environment and standard streams, as its client has them."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.env = self.environment(request)
        streams = request.get("streams") or [["utf-8", "strict"]] * 3
        (in_enc, in_err), (out_enc, out_err), (err_enc, err_err) = streams
        self.chunks: list[tuple[int, bytes]] = []
        stdin_bytes = request.get("stdin")
        self.stdin = io.TextIOWrapper(io.BytesIO(stdin_bytes if isinstance(stdin_bytes, bytes) else b""),
                                      encoding=in_enc, errors=in_err, newline="\n")
        self.terminal = request.get("terminal")
        # Buffered as the client's streams are: stdout by the line on a terminal, else by the
        # block (click flushes every echo); stderr by the line.
        self.stdout = io.TextIOWrapper(_Recorder(1, self.chunks), encoding=out_enc, errors=out_err, newline="\n",
                                       line_buffering=bool(self.terminal))
        self.stderr = io.TextIOWrapper(_Recorder(2, self.chunks), encoding=err_enc, errors=err_err, newline="\n",
                                       line_buffering=True)
        if self.terminal:
            self.env.setdefault("COLUMNS", str(self.terminal[0]))
            self.env.setdefault("LINES", str(self.terminal[1]))

    @staticmethod
    def environment(request: dict[str, Any]) -> dict[str, str]:
        """The client's environment, as the command runs in it."""
        return {str(k): str(v) for k, v in dict(request.get("env") or {}).items()}

    def width(self) -> int:
        """The terminal's columns as ``shutil.get_terminal_size((100, 24))`` finds them in the
        client: ``COLUMNS`` (the terminal's, when there is one), else 100."""
        try:
            columns = int(self.env.get("COLUMNS", ""))
        except ValueError:
            columns = 0
        return columns if columns > 0 else 100

    def run(self, kb: KnowledgeBase, beside: bool = False, checked: bool = False,
            dry: Mapping[str, str] | None = None) -> int:
        """The click command's exit code; what it printed is in ``chunks``. ``checked``: its
        settings were checked already (``Runner.goes_beside``); ``dry``: its argument checks
        alone (``cli.common.PastArguments``, raised past them), in this environment."""
        from ..cli import Preset, cli

        try:
            cli.main(args=list(self.request["argv"]), prog_name="slayer-kb",
                     obj=Preset(kb, self.width(), beside, checked, dry))
            code = 0
        except SystemExit as exc:
            code = relay.exit_code(exc)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        except Exception:  # noqa: BLE001 - printed as the process would have printed it
            traceback.print_exc()
            code = 1
        with contextlib.suppress(Exception):
            self.stdout.flush()
            self.stderr.flush()
        return code


class Runner:
    """Runs relayed commands on a warm KB, each as the client's process would have."""

    def __init__(self, kb: KnowledgeBase, lower_git: bool = True) -> None:
        self.kb = kb
        # Whether a write's git processes run lower than this process (in the server); the
        # write process (writer.py) runs each write on a lower thread, its git processes with it.
        self._lower_git = lower_git
        # The store holds what a relayed write is (its request id) and the view a read beside it uses.
        self._store = kb.store
        # The process's own settings, before any command's environment replaced them: a read
        # beside a command in its turn goes by them, whatever that command put in os.environ, and
        # so does the server's sentence filler (``SentenceFiller``'s ``own``).
        self.own: Mapping[str, str] = dict(os.environ)
        # The only settings that change what search, get or list print: search by meaning (and by
        # the sentence encoder) turned off. The others are the server's, a write's, or the cache's.
        self._printed = switches.taken(self.own)
        _install_streams()

    def goes_beside(self, request: dict[str, Any]) -> bool:
        """Whether ``request`` is a read that may run beside a write (``BESIDE``): with no
        ``@FILE`` argument, which names a file in the client's folder, and with settings a command
        takes that print as the process's own would (``_PRINTED``), since it runs in the process's
        environment. Otherwise it runs in its turn, in the client's environment: a bad setting
        refused, as in a process of its own. Yes: its settings are checked, and the command
        checks them no more (``beside``, or ``__call__`` with ``checked``)."""
        found = relay.parse(request["argv"])
        if found is None or found[1] not in BESIDE or any(arg.startswith("@") or "=@" in arg for arg in request["argv"]):
            return False
        from ..cli.common import settings_taken

        env = _Command.environment(request)
        return switches.taken(env) == self._printed and settings_taken(env)

    def refused_arguments(self, request: dict[str, Any]) -> tuple[int, list[tuple[int, bytes]]] | None:
        """What the command of ``request``, which may read stdin, prints when it refuses its
        arguments: click's parsing, the settings of the client's environment, and whatever its
        function checks before it opens the KB or reads stdin, run on this thread with neither
        (``Preset.dry``), whatever runs in its turn (it changes nothing); None when they pass. That is its whole run: a process of its own
        fails so and leaves stdin unread (a ``while read`` loop keeps its input; ``sleep 30 |``
        is not waited for). Paths it prints are as typed from the client's folder, as a read
        beside a write prints them."""
        from ..cli.common import PastArguments

        command = _Command(request)
        stdin = io.TextIOWrapper(io.BufferedReader(_PastArgumentsOnRead()), encoding="utf-8")
        try:
            with problems.user_folder(request["cwd"], command.env.get("SLAYER_KB")), \
                    _thread_streams(stdin, command.stdout, command.stderr):
                code = command.run(self.kb, dry=command.env)
        except PastArguments:
            return None
        return None if code == 0 else (code, _merged(command.chunks))

    @property
    def view(self) -> View:
        """Which thread may use the KB's state in memory (store/view.py)."""
        return self._store.view

    def __call__(self, request: dict[str, Any], checked: bool = False) -> tuple[int, list[tuple[int, bytes]]]:
        """Run ``request`` in its turn (the server's turn lock held), in the client's folder,
        environment and umask. ``checked``: ``goes_beside`` said yes to it (its settings are
        checked), but it could not go beside."""
        command = _Command(request)
        env = command.env
        saved_env = dict(os.environ)
        saved_cwd = os.getcwd()
        saved_stdout = sys.__stdout__
        saved_umask = os.umask(int(request.get("umask", 0o022)))
        tz = os.environ.get("TZ")
        try:
            os.environ.clear()
            os.environ.update(env)
            if os.environ.get("TZ") != tz:
                time.tzset()
            os.chdir(request["cwd"])
            if not command.terminal:
                sys.__stdout__ = None  # type: ignore[misc]  # no terminal size to find, as in the client
            if writes(request):
                self._store.request = request["request"]
                if self._lower_git and yields(request["argv"]):
                    self._store.niceness = priority.niceness()  # the client's setting (its environment)
            # Its settings are the client's through os.environ alone (switches.py): this thread is
            # given none, and the threads the command starts read the same.
            with _thread_streams(command.stdin, command.stdout, command.stderr):
                code = command.run(self.kb, checked=checked)
        finally:
            self._store.request = None
            self._store.niceness = 0
            sys.__stdout__ = saved_stdout  # type: ignore[misc]
            os.environ.clear()
            os.environ.update(saved_env)
            if os.environ.get("TZ") != env.get("TZ"):
                time.tzset()
            os.umask(saved_umask)
            with contextlib.suppress(OSError):
                os.chdir(saved_cwd)
        if writes(request):
            # Should the server die before its client has the answer, the client prints this.
            with contextlib.suppress(OSError):
                requests.finish(self._store.state, request["request"], code, _merged(command.chunks))
        return code, _merged(command.chunks)

    def beside(self, request: dict[str, Any]) -> tuple[int, list[tuple[int, bytes]]]:
        """Run the read ``request`` beside whatever runs in its turn; the caller holds the view
        (``ready_beside`` said yes), and ``goes_beside`` said yes (its settings are checked). Its own streams; the process's folder, environment and umask
        untouched (a read resolves nothing against them: the KB is the server's), but the paths
        it prints are as typed from the client's folder (a ``cd`` step of a fix)."""
        command = _Command(request)
        with self._store.view.reading(self.kb.catalog), problems.user_folder(request["cwd"], command.env.get("SLAYER_KB")), \
                _thread_streams(command.stdin, command.stdout, command.stderr), switches.given(self.own):
            code = command.run(self.kb, beside=True, checked=True)
        return code, _merged(command.chunks)

    def write_elsewhere(self, paths: frozenset[str]) -> None:
        """With the view held: the write process is about to commit ``paths`` (writer.py)."""
        self.kb.write_elsewhere(paths)

    def took_in(self, done: dict[str, Any] | None) -> None:
        """With the view held: the write process's command is over (None: it died), and what
        it indexed is taken in (``Context.took_in``)."""
        done = done or {}
        self.kb.took_in(done.get("before"), done.get("after"), done.get("indexed") or {})

    def held_coverage(self) -> tuple[int, int] | None:
        """With the view held: the sentence vectors' coverage of the table held, if one is
        (``KnowledgeBase.held_coverage``)."""
        return self.kb.held_coverage()

    def ready_beside(self) -> bool:
        """With the view held: whether a read may run now from the state in memory
        (``Context.ready_beside``)."""
        return self.kb.ready_beside()
