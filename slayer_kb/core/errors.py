"""The exceptions slayer-kb raises. Every message says what is wrong and how to fix it."""

from __future__ import annotations


class KBError(Exception):
    """Base of every error a user can act on; the CLI prints it and exits 1."""

    type_name = "error"


class InvalidIdError(KBError):
    type_name = "invalid_id"


class NotFoundError(KBError):
    type_name = "not_found"


class ResolutionError(KBError):
    """An entity reference that does not resolve (unknown or ambiguous)."""

    type_name = "resolution"


class AmbiguousEntityError(ResolutionError):
    type_name = "ambiguous_entity"


class InvalidInputError(KBError):
    """A bad argument: blank learning, too-long description, malformed query."""

    type_name = "invalid_input"


class MemoryFileError(KBError):
    """A memory file that cannot be read: bad YAML, wrong types, unknown keys."""

    type_name = "invalid_file"

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}")


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
