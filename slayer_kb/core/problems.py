"""A problem ``validate`` and ``fmt`` report: ``path:line: message``, the path as typed, and the
helpers that print a fix as a command that runs when pasted."""

from __future__ import annotations

import contextlib
import os
import shlex
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .text import one_line_shown, shown_controls

# Problem.kind of a stored example query whose references no longer resolve: the state a
# catalog delete leaves (SLayer keeps the query's text, search warns on it), so sync pushes it
# while validate still reports it.
STALE_QUERY = "stale_query"
# Problem.kind of a stored example query that is not a SlayerQuery (a misspelt key, a form SLayer
# does not read, such as 'amount : sum', which older releases took): sync lets it through only
# where the branch left the upstream's query as it was.
INVALID_QUERY = "invalid_query"


@dataclass(frozen=True, order=True)
class Problem:
    path: str
    line: int
    message: str
    # What a program acting on the problem tells it by ("" for any other problem): STALE_QUERY,
    # INVALID_QUERY.
    kind: str = ""

    def __str__(self) -> str:
        return one_line_shown(f"{self.path}:{self.line}: {self.message}")

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "message": self.message, "kind": self.kind or None}


# The folder and $SLAYER_KB of the user whose command this thread runs, where they are not the
# process's own: a read the warm server answers beside a write keeps the server's folder, "/", and
# its environment (daemon/running.py).
_USER = threading.local()


@contextlib.contextmanager
def user_folder(folder: str, kb_env: str | None) -> Iterator[None]:
    """Paths shown by this thread, until the block ends, are as typed from ``folder``, and a
    printed ``slayer-kb`` runs where the user's ``$SLAYER_KB`` is ``kb_env``."""
    _USER.folder, _USER.kb_env = Path(folder), kb_env
    try:
        yield
    finally:
        _USER.folder = _USER.kb_env = None


@contextlib.contextmanager
def paths_absolute() -> Iterator[None]:
    """Paths shown by this thread, until the block ends, are absolute, and so a printed
    ``slayer-kb`` names its KB with ``--kb`` (``command``): for a reader who is in no folder of
    the process's, such as a person reading an MCP client's transcript (the server's working
    folder is no one's)."""
    _USER.absolute = True
    try:
        yield
    finally:
        _USER.absolute = False


def shown(path: Path) -> str:
    """A path as a user would type it: relative to their working directory when inside it
    (absolute within ``paths_absolute``)."""
    if getattr(_USER, "absolute", False):
        return os.path.abspath(path)
    folder = getattr(_USER, "folder", None)
    try:
        return path.relative_to(Path.cwd() if folder is None else folder).as_posix()
    except ValueError:
        return str(path)


def command(root: Path) -> str:
    """``slayer-kb`` as a fix printed for the user must run it: from where they ran the command,
    so with ``--kb`` naming the KB's folder ``root`` unless that is the working directory (a KB
    given by --kb or $SLAYER_KB, or found from a subfolder of it) and ``$SLAYER_KB`` names no other
    KB (a plain ``slayer-kb`` would open that one)."""
    kb = shown(root)
    return "slayer-kb" if kb == "." and not _env_names_another(root) else f"slayer-kb --kb {shell_word(kb)}"


def command_in(root: Path) -> str:
    """``slayer-kb`` as a step printed after ``cd_step(root)`` must run it, in the KB's folder
    ``root``: with ``--kb .`` when the user's ``$SLAYER_KB``, read from there, names another KB."""
    if not cd_step(root):
        return command(root)
    return "slayer-kb --kb ." if _env_names_another(root, root) else "slayer-kb"


def _env_names_another(root: Path, where: Path | None = None) -> bool:
    """Whether the user's ``$SLAYER_KB`` (empty: unset, as ``locate.named_kb`` reads it) names a
    folder other than ``root``, read from ``where`` (a relative one), else from where the user is."""
    folder = getattr(_USER, "folder", None)
    named = os.environ.get("SLAYER_KB") if folder is None else getattr(_USER, "kb_env", None)
    if not named:
        return False
    return ((where or folder or Path.cwd()) / named).resolve() != root.resolve()


def words(*given: str) -> str:
    """Words of a printed command, each quoted where a shell would split or expand it (an id
    ``x;y`` or ``1[0-9]``, a path with a space), so that the command works when pasted."""
    return " ".join(shell_word(word) for word in given)


def shell_word(word: str) -> str:
    """``word`` as ``shlex.quote`` gives it, but a letter or digit beyond ASCII (``CAFÉ``), which no
    shell splits or expands, left as it is: a fix quoted for it alone read ``'memories/CAFÉ.yaml'``.
    A word holding what the human output shows escaped (a byte of a path that is not UTF-8 as
    ``\\xff``, a control character; ``text.shown_controls``), or a tab or line break, is written as
    the output of POSIX ``printf``, ``"$(printf 'k\\377b')"``, each such character as its bytes in
    octal: shown as ``'k\\xffb'``, pasted, it named a folder called k, backslash, x, f, f, b; and
    bash's ``$'k\\xffb'``, which it was, is read literally by ``sh -c`` (dash). A command
    substitution drops trailing line breaks, so a word ending in one keeps bash's form (bash and
    zsh read it; docs/cli.md says so)."""
    if any(_escaped(ch) for ch in word):
        if word.endswith("\n"):
            return "$'" + "".join(_ansi_c(ch) for ch in word) + "'"
        # A leading '-' would be read as printf's option: written as its byte too.
        return "\"$(printf '" + "".join(_printf(ch, at == 0) for at, ch in enumerate(word)) + "')\""
    plain = all(ch.isalnum() if not ch.isascii() else ch.isalnum() or ch in "_@%+=:,./-" for ch in word)
    return word if word and plain else shlex.quote(word)


def _escaped(ch: str) -> bool:
    return ch in "\t\n" or shown_controls(ch) != ch


def _bytes_of(ch: str) -> bytes:
    """The bytes ``ch`` is on disk: a lone surrogate from ``os.fsdecode``, the byte it stands for."""
    return ch.encode("utf-8", "surrogateescape" if 0xDC80 <= ord(ch) <= 0xDCFF else "surrogatepass")


def _printf(ch: str, first: bool) -> str:
    """``ch`` within a quoted ``printf`` format: shown escaped (or a leading '-'), as its bytes in
    octal; '%' and a backslash doubled, a quote closed and reopened around an escaped one."""
    if _escaped(ch) or (first and ch == "-"):
        return "".join(f"\\{byte:03o}" for byte in _bytes_of(ch))
    return {"%": "%%", "\\": "\\\\", "'": "'\\''"}.get(ch, ch)


def _ansi_c(ch: str) -> str:
    """``ch`` within bash's ``$'...'``: shown escaped as its bytes, a quote or backslash escaped."""
    if _escaped(ch):
        return "".join(f"\\x{byte:02x}" for byte in _bytes_of(ch))
    return "\\" + ch if ch in "\\'" else ch


def git_command(root: Path, args: str) -> str:
    """``git ARGS`` as a fix printed for the user must run it (``git -C DIR``, as ``command``)."""
    kb = shown(root)
    return f"git {args}" if kb == "." else f"git -C {shell_word(kb)} {args}"


def cd_step(root: Path) -> list[str]:
    """The first of several printed steps (git's and slayer-kb's, naming the KB's files from its
    folder ``root``): into that folder, unless the user is there already."""
    kb = shown(root)
    return [] if kb == "." else [f"cd {shell_word(kb)}"]
