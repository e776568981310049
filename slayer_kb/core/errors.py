"""The exceptions slayer-kb raises. Every message says what is wrong and how to fix it."""

from __future__ import annotations

import errno
import os

from .text import terminal_text


class KBError(Exception):
    """Base of every error a user can act on; the CLI prints it and exits 1. Advice that names a
    command has ``tool_message``, the same advice in an MCP client's terms (its tools). Both are
    kept as ``terminal_text`` shows them."""

    type_name = "error"
    # Whether a stored query that raises this is stale (names what the catalog no longer has,
    # which a catalog change can mend) rather than invalid (no catalog makes it resolve).
    stale = False

    def __init__(self, message: str = "", *, tool_message: str | None = None) -> None:
        # A value quoted in a message (a reference, a path, a name) is shown as the terminal shows
        # text: an escape or a bidi override in it reaches no terminal, and no agent's reader,
        # raw, under --json and through MCP as on stderr.
        super().__init__(terminal_text(message))
        self.tool_message = tool_message and terminal_text(tool_message)

    def for_tools(self) -> str:
        """The message an MCP client reads."""
        return self.tool_message or str(self)


class InvalidIdError(KBError):
    type_name = "invalid_id"


class NotFoundError(KBError):
    type_name = "not_found"


class ResolutionError(KBError):
    """An entity reference that does not resolve (unknown or ambiguous); ``suggestions`` are the
    existing references it probably meant, which the message names too."""

    type_name = "resolution"
    stale = True

    def __init__(self, message: str, suggestions: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.suggestions = suggestions


class AmbiguousEntityError(ResolutionError):
    type_name = "ambiguous_entity"


class ReferenceFormError(ResolutionError):
    """A reference not written as SLayer reads one (``amount : sum``, ``sum(a - b)``, ``a..b``):
    no catalog makes it resolve, so a stored query holding one is invalid, not stale."""

    stale = False


class InvalidInputError(KBError):
    """A bad argument: blank learning, too-long description, malformed query."""

    type_name = "invalid_input"


class UsageError(InvalidInputError):
    """Options or arguments that cannot go together, or one a command needs that is missing: the
    CLI exits 2 with the command's usage, as for click's own usage errors (CLI.md); an MCP client
    reads it as any other invalid input."""


class MemoryFileError(KBError):
    """A memory file that cannot be read: bad YAML, wrong types, unknown keys."""

    type_name = "invalid_file"

    def __init__(self, path: str, line: int | None, message: str, *, tool_message: str | None = None,
                 names_fix: bool = False) -> None:
        self.path = path
        self.line = line
        self.message = message
        self.names_fix = names_fix  # the message says what to do (else ``Context.get`` adds it)
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}", tool_message=tool_message and f"{where}: {tool_message}")


def unreadable(path: str, exc: OSError | UnicodeDecodeError) -> MemoryFileError:
    """A memory or session file the OS refuses to read (the fix is about the file's access, not
    its text), or that is not UTF-8 (the fix is an edit)."""
    if isinstance(exc, UnicodeDecodeError):
        return MemoryFileError(path, None, f"cannot be read: it is not UTF-8 text ({exc.reason} at byte {exc.start})")
    return MemoryFileError(path, None, f"cannot be read: {exc.strerror or exc}; {os_fix(exc)}.", names_fix=True)


class CatalogError(KBError):
    type_name = "catalog"


# What to do about a file system refusal, by errno (os_fix).
_OS_FIXES = {
    errno.EACCES: "give this user access to it (chmod, chown), or use a copy of the knowledge base this user "
                  "owns, then retry",
    errno.EPERM: "give this user access to it (chmod, chown; chattr -i if it is immutable), then retry",
    errno.EROFS: "the file system is mounted read-only: mount it read-write, or use a copy of the knowledge "
                 "base somewhere writable, then retry",
    errno.ENOSPC: "the disk is full: free some space, then retry",
    errno.EDQUOT: "the disk quota is used up: free some space, then retry",
    errno.ENOENT: "check the path (a folder in it may have been moved or deleted), then retry",
    errno.ENOTDIR: "a file is where the path needs a folder: move that file aside, then retry",
    errno.EISDIR: "a folder is where a file belongs: move that folder aside, then retry",
    errno.EEXIST: "something is already there: move it aside, then retry",
    errno.ELOOP: "it is a symbolic link (or a loop of them): put the real file or folder there, then retry",
    errno.EMFILE: "this process has too many open files: raise the limit (ulimit -n), then retry",
    errno.ENFILE: "the system has too many open files: close some programs, then retry",
    errno.EIO: "the device reported an I/O error: check the disk, then retry",
    errno.ENAMETOOLONG: "a name in it, or the whole path, is longer than the file system takes (255 bytes a name "
                        "on most): give a shorter one, then retry",
}


class StoreError(KBError):
    """git or the file system refused: not a repository, read-only, disk full, lock timeout."""

    type_name = "store"

    @classmethod
    def from_os(cls, exc: OSError) -> StoreError:
        """The error a refusal the code did not foresee becomes: the path, the cause and the fix in
        one line, never a traceback (the refusals it foresees have messages of their own)."""
        paths = [_cut(os.fsdecode(name)) for name in (exc.filename, exc.filename2) if name is not None]
        where = f" {' -> '.join(paths)}" if paths else ""
        cause = exc.strerror or str(exc) or type(exc).__name__
        return cls(f"Cannot use{where}: {cause}; {os_fix(exc)}.")


# A path longer than this (none a file system takes: 4,096 bytes on Linux) is cut when told.
_PATH_SHOWN = 1000


def _cut(path: str) -> str:
    """``path`` as an error tells it: one of 10,000 characters given came back whole, twice."""
    return path if len(path) <= _PATH_SHOWN else f"{path[:_PATH_SHOWN]}... ({len(path)} characters)"


def output_lost(exc: OSError) -> str:
    """What a command says when standard output refuses what it prints (a full disk, /dev/full):
    the command itself finished, so the generic "free some space, then retry" would make a write
    run twice."""
    return (f"Cannot write the output to standard output: {exc.strerror or exc}. The command itself finished (any "
            "change it made is committed; git log -1 shows it): do not run a write again for its output.")


def os_fix(exc: OSError) -> str:
    """What to do about the file system's refusal ``exc``, as a clause."""
    return _OS_FIXES.get(exc.errno or 0, "fix that path, then retry")


class WorkTreeError(StoreError):
    """A commit was published, but the work tree could not take its files: the message says
    which and how to finish; ``commit`` is the commit made."""

    def __init__(self, message: str, commit: str) -> None:
        super().__init__(message)
        self.commit = commit


class IndexLockedError(StoreError):
    """Another git command held git's index (index.lock) for longer than a write waits for it."""


class ConflictError(KBError):
    type_name = "conflict"
