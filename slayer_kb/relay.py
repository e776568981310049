"""Hand a ``slayer-kb search`` to a running ``slayer-kb watch``, which answers from its warm
index: a new process otherwise spends most of its time importing Whoosh and numpy, opening the
index and checking every file's signature (600 ms at 100,000 memories, against 50 ms relayed).

The watcher listens on a Linux abstract socket named for the KB's real path and the user, so
nothing is left on disk and no path length limit applies; each side checks that the other runs
as the same user (SO_PEERCRED). Only searches are relayed, and only when they read neither
stdin nor a file: anything else, and any failure to get an answer, runs in this process as
before. Elsewhere than Linux nothing is relayed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import socket
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from .locate import find_kb_root

SUPPORTED = sys.platform.startswith("linux") and hasattr(socket, "SO_PEERCRED")
# A watcher acknowledges a connection at once, from a thread that never waits for the index: one
# that does not (stopped with Ctrl-Z, wedged) is given up on quickly.
ACK_SECONDS = 2.0
ACK = b"+"
# Long enough for a search that waits behind a big sync (a checkout of thousands of files);
# past it the command runs here instead.
ANSWER_SECONDS = 120.0
_CREDENTIALS = struct.Struct("3i")
_GLOBAL_WITH_VALUE = ("--kb", "--author")


def address(root: Path) -> bytes:
    """The abstract socket of the watcher of the KB at ``root``."""
    digest = hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:32]
    return f"\0slayer-kb/{os.getuid()}/{digest}".encode()


def relayable(argv: list[str]) -> tuple[str | None, list[str]] | None:
    """(the --kb value or None, the search's own arguments) if ``argv`` is a search a watcher
    can answer: no help, no version, nothing read from stdin or a file."""
    kb_path = None
    at = 0
    while at < len(argv):
        token = argv[at]
        if token in _GLOBAL_WITH_VALUE and at + 1 < len(argv):
            kb_path = argv[at + 1] if token == "--kb" else kb_path
            at += 2
        elif token.startswith("--kb="):
            kb_path, at = token[len("--kb="):], at + 1
        elif token.startswith("--author=") or token == "--json":
            at += 1
        elif token.startswith("-"):
            return None
        else:
            break
    rest = argv[at + 1:]
    if argv[at:at + 1] != ["search"] or any(
        token in ("-", "-h", "--help") or token.startswith("@") or "=@" in token for token in rest
    ):
        return None
    return kb_path, rest


def forward(argv: list[str]) -> int | None:
    """Run ``slayer-kb ARGV`` in a watcher if one serves this KB: its exit code, after printing
    what it printed; None when this process must run the command itself."""
    if not SUPPORTED or (found := relayable(argv)) is None:
        return None
    kb_path = found[0] or os.environ.get("SLAYER_KB")
    try:
        root = Path(kb_path) if kb_path else find_kb_root(Path.cwd())
    except OSError:  # the current folder was deleted: the CLI says so properly
        return None
    if root is None:
        return None
    request = {"argv": argv, "root": os.path.realpath(root), "width": shutil.get_terminal_size((100, 24)).columns}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(ACK_SECONDS)
            conn.connect(address(root))
            if not _same_user(conn) or conn.recv(1) != ACK:
                return None
            conn.settimeout(ANSWER_SECONDS)
            conn.sendall(json.dumps(request).encode("utf-8"))
            conn.shutdown(socket.SHUT_WR)
            answer = json.loads(_read_all(conn))
    except (OSError, ValueError):
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("code"), int):
        return None
    sys.stdout.write(answer.get("stdout", ""))
    sys.stdout.flush()
    sys.stderr.write(answer.get("stderr", ""))
    return answer["code"]


Runner = Callable[[list[str], int], int]
"""Runs a relayed command with sys.stdout and sys.stderr redirected: (argv, width) -> exit code."""


class Server:
    """The watcher's side: answers relayed searches, one at a time, until ``close()``."""

    def __init__(self, root: Path, run: Runner, busy: threading.Lock, log: TextIO) -> None:
        self.root = os.path.realpath(root)
        self._run = run
        self._busy = busy
        self._log = log
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(address(root))
        except OSError:
            self._listener.close()
            raise
        self._listener.listen(16)
        self._listener.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="slayer-kb relay", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop answering; a search being answered is finished first."""
        self._stop.set()
        self._thread.join()
        self._listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                with contextlib.suppress(OSError):
                    self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(5.0)
        if not _same_user(conn):
            return
        conn.sendall(ACK)
        try:
            request = json.loads(_read_all(conn))
            argv, width = list(map(str, request["argv"])), int(request["width"])
            if request["root"] != self.root or relayable(argv) is None:
                raise ValueError("not a search of this KB")
        except (ValueError, KeyError, TypeError):
            conn.sendall(b'{"fallback": true}')
            return
        out, err = io.StringIO(), io.StringIO()
        with self._busy, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = self._run(argv, width)
            except Exception as exc:  # noqa: BLE001 - let the client run it and see the error itself
                print(f"relayed search failed, the client runs it itself: {exc!r}", file=self._log)
                conn.sendall(b'{"fallback": true}')
                return
        conn.sendall(json.dumps({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}).encode("utf-8"))


def _same_user(conn: socket.socket) -> bool:
    _pid, uid, _gid = _CREDENTIALS.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size))
    return uid == os.getuid()


def _read_all(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def exit_code(exc: SystemExit) -> int:
    """The status a process would exit with for ``exc``."""
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1

