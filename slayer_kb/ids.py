"""Memory ids: the rules a given id must pass, and what counts as an auto id.

An id is also a file name (``memories/<id>.yaml``) on every platform a knowledge base is checked
out on, so the seed's rules (no ``:`` ``/`` ``?`` ``#`` ``\\`` whitespace or control characters)
are extended with what would make a bad or dangerous file name.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from .errors import InvalidIdError

MAX_ID_BYTES = 200
# ':' '/' '?' '#' '\' are the seed's; '<' '>' '"' '|' '*' cannot appear in Windows file names.
FORBIDDEN_CHARS = frozenset(':/?#\\<>"|*')
# Cc control, Cf format (right-to-left marks, zero-width joiners: they disguise a name),
# Cs lone surrogates (not encodable as a file name), Zl/Zp/Zs separators (whitespace).
FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Zs"})
_AUTO_ID = re.compile(r"(?:0|[1-9][0-9]*)\Z")


def check_id(memory_id: object) -> str:
    """Return ``memory_id`` if it is a valid id, else raise :class:`InvalidIdError` saying why."""
    if not isinstance(memory_id, str):
        raise InvalidIdError(f"Memory id must be a string, not {type(memory_id).__name__}.")
    if memory_id == "":
        raise InvalidIdError("Memory id must not be empty; omit the id to get an auto id.")
    shown = ascii(memory_id)[1:-1]
    for ch in memory_id:
        if ch in FORBIDDEN_CHARS:
            raise InvalidIdError(
                f"Memory id '{shown}' contains {ch!r}; ids may not contain "
                f"{' '.join(sorted(FORBIDDEN_CHARS))}. Use letters, digits, '.', '_' or '-'."
            )
        if ch.isspace() or unicodedata.category(ch) in FORBIDDEN_CATEGORIES:
            raise InvalidIdError(
                f"Memory id '{shown}' contains whitespace or an invisible/control character "
                f"(U+{ord(ch):04X}); use letters, digits, '.', '_' or '-'."
            )
    if memory_id in (".", ".."):
        raise InvalidIdError(f"Memory id '{memory_id}' is not a usable file name; choose another.")
    if memory_id[0] in ".-":
        raise InvalidIdError(
            f"Memory id '{shown}' starts with {memory_id[0]!r}, which would make a hidden file or "
            "look like a command-line option; start it with a letter or digit."
        )
    if len(memory_id.encode("utf-8")) > MAX_ID_BYTES:
        raise InvalidIdError(
            f"Memory id is {len(memory_id.encode('utf-8'))} bytes long; the limit is "
            f"{MAX_ID_BYTES} bytes (UTF-8). Choose a shorter id."
        )
    return memory_id


def is_auto_id(memory_id: str) -> bool:
    """Int-shaped: digits, no leading zero. ``001`` and ``kb.x`` are not auto ids."""
    return _AUTO_ID.match(memory_id) is not None


def highest_auto_id(ids: Iterable[str]) -> int:
    # is_auto_id spelled with str methods: a save scans every id, and this is twice as fast.
    return max((int(i) for i in ids if i.isascii() and i.isdigit() and (i[0] != "0" or i == "0")), default=0)


def case_conflict(memory_id: str, existing: Iterable[str]) -> str | None:
    """The existing id that differs from ``memory_id`` only by letter case, if any.

    Such ids are distinct in git but collide on case-insensitive checkouts (macOS, Windows).
    """
    folded = memory_id.casefold()
    for other in existing:
        if other != memory_id and other.casefold() == folded:
            return other
    return None


def id_sort_key(memory_id: str) -> tuple[int, int, str]:
    """Auto ids in numeric order first, then the others by name: the order people expect."""
    return (0, int(memory_id), "") if is_auto_id(memory_id) else (1, 0, memory_id)
