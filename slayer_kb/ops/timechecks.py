"""``validate``'s warning about a memory's time in the future: one a person or a machine with a
wrong clock wrote by hand. It is no problem (the file is valid, reads take it as it is, and sync
pushes it), but it sorts wrongly until that time comes, so validate says so, naming the fix.

And the refusal of a write that would commit again a time validate refuses (``kept_times``): a
session's or a memory's, written by hand (``2026-02-30``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..core.errors import MemoryFileError
from ..core.fileio import NotRegularFile, read_regular
from ..core.problems import Problem, shell_word
from .schema_words import TimeField

# Further ahead than two machines' clocks differ: a time that no save could have written.
SKEW = timedelta(days=1)
# The fields warned of, and what the time misleads.
_WHAT_IT_MISLEADS = {
    "created_at": "newest-first lists (list, context, mem_context) put the memory first until then",
    "updated_at": "a merge of two versions of the memory takes this one as the newer until then",
}


def future_times(times: Iterable[TimeField], name: str, memory_id: str, command: str,
                 now: datetime | None = None) -> list[Problem]:
    """A warning, at its line, for each of the memory file's times (``schema_words.read_times``,
    the reading the schema check used) more than ``SKEW`` after ``now`` (this machine's clock);
    ``command`` is slayer-kb as its fix runs it (``KBContext.command``)."""
    limit = (now or datetime.now(timezone.utc)) + SKEW
    return [Problem(name, time.line or 1, f"{time.key} {time.written!r} is more than a day ahead of this machine's "
                    f"clock, so {_WHAT_IT_MISLEADS[time.key]}; write the time it happened, with "
                    f"'{command} edit {shell_word(memory_id)}'")
            for time in times
            if time.key in _WHAT_IT_MISLEADS and time.when is not None and time.when > limit]


def kept_times(root: Path, path: str, told: Callable[[str], Iterable[tuple[int | None, str]]], fix: str,
               tool_fix: str | None = None) -> None:
    """Refuse a write of the file at ``path`` (KB-relative) that keeps a time validate refuses:
    ``told(text)`` gives those of the record to write, at their lines in ``text`` (the file's;
    ``""``: none). Nothing is written: no other time can be told for it, so the fix is the
    person's edit (``fix``; ``tool_fix``, the words for an MCP client), named at the file's line
    as validate names it."""
    if not any(told("")):
        return
    try:
        text = read_regular(root / path).decode("utf-8")
    except (OSError, NotRegularFile, UnicodeDecodeError):
        text = ""  # the value is named all the same, without its line
    (line, said), *more = told(text)
    also = "".join(f" Line {other}: {message}." for other, message in more)
    refused = f"{said}.{also} Nothing was written: the write would commit the file again with it, and validate refuses it."
    raise MemoryFileError(path, line, f"{refused} {fix}", tool_message=tool_fix and f"{refused} {tool_fix}",
                          names_fix=True)
