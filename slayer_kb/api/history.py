"""``kb.history``: a memory's history from git (``log``, ``show``, ``restore`` of a revision,
``review`` of a branch), editing a memory's file, and what a landed commit did."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.outcomes import EditResult, Landed, RestoreResult, Shown
from ..core.results import LogEntry
from ..core.review import Review

if TYPE_CHECKING:
    from ..context import Context
    from ..store.requests import Landing


class History:
    """The history of one KB's memories. (The ops modules are imported on use: every command
    builds a KnowledgeBase, few read history.)"""

    def __init__(self, kb: Context) -> None:
        self._kb = kb

    def log(self, memory_id: str) -> list[LogEntry]:
        """Every commit that touched the memory on any side, newest first (renames followed)."""
        from ..ops import memorylog

        return memorylog.log(self._kb.store, memory_id, self._kb.memory_exists)

    def moved_notes(self, memory_id: str) -> list[str]:
        """The note that goes with ``log``'s answer when the id moved on this clone (``show``'s
        and ``timeline``'s answers carry theirs as ``warnings``)."""
        return self._kb.moved_notes(memory_id)

    def show(self, memory_id: str, rev: str | None = None) -> Shown:
        """The memory at ``rev``; without it the file now, or a deleted memory's last version."""
        from ..ops import history

        return history.show(self._kb, memory_id, rev)

    def restore(self, memory_id: str, rev: str) -> RestoreResult:
        """Bring back the memory's version at ``rev`` as a new commit."""
        from ..ops import history

        return history.restore_revision(self._kb, memory_id, rev)

    def review(self, base: str, head: str = "HEAD") -> Review:
        """What ``head`` changed since it left ``base`` (as ``git diff base...head``)."""
        from ..ops import history

        return history.review(self._kb.store, base, head)

    def edit(self, memory_id: str, reopen: Callable[[str], bool]) -> EditResult:
        """Edit the memory in the user's editor; ``reopen`` is asked, with the problem, whether
        to open it again when the file is not valid."""
        from ..ops import editing

        return editing.edit(self._kb, memory_id, reopen=reopen)

    def landed(self, landing: Landing) -> Landed | None:
        """What the command that made the commit ``landing`` returned; None for a commit that
        cannot be read back (daemon/settle.py)."""
        from ..ops.landed import result_of

        return result_of(self._kb, landing)
