"""The exceptions slayer-kb raises. Every message says what is wrong and how to fix it."""

from __future__ import annotations


class KBError(Exception):
    """Base of every error a user can act on; the CLI prints it and exits 1. Advice that names a
    command has ``tool_message``, the same advice in an MCP client's terms (its tools)."""

    type_name = "error"

    def __init__(self, message: str = "", *, tool_message: str | None = None) -> None:
        super().__init__(message)
        self.tool_message = tool_message

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

    def __init__(self, message: str, suggestions: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.suggestions = suggestions


class AmbiguousEntityError(ResolutionError):
    type_name = "ambiguous_entity"


class InvalidInputError(KBError):
    """A bad argument: blank learning, too-long description, malformed query."""

    type_name = "invalid_input"


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


class CatalogError(KBError):
    type_name = "catalog"


class StoreError(KBError):
    """git or the file system refused: not a repository, read-only, disk full, lock timeout."""

    type_name = "store"


class WorkTreeError(StoreError):
    """A commit was published, but the work tree could not take its files: the message says
    which and how to finish; ``commit`` is the commit made."""

    def __init__(self, message: str, commit: str) -> None:
        super().__init__(message)
        self.commit = commit


class ConflictError(KBError):
    type_name = "conflict"
