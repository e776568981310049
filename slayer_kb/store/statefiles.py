"""A small file in the state folder ``.slayer-kb/`` (``state.py`` keeps the folder itself), read
and written only here: ``ids.json``, ``{"head": COMMIT, "history": N}``, the highest auto id the
branch's history had used at commit ``COMMIT`` (its files alone: not the work tree's; ``"max"``
in place of ``"history"``: a figure not known to be the whole history's), so that
choosing the next auto id reads only the commits since (a fresh clone reads its history once, as
idfloor.py does), and a commit on ``COMMIT`` can record the figure (idfloor.py's trailer).
``KnowledgeBase`` moves it on after each of its own commits. It is derived: a missing or
unreadable file reads as empty, and a write that fails loses time, never a memory. (Duplicate
counts are no derived state: duplicates.py.)
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.ids import highest_auto_id

if TYPE_CHECKING:
    from .repo import GitStore


class IdCache:
    """``ids.json``: the highest auto id the branch's history had used at a commit."""

    # "history": the figure of the whole history, which a commit may record (idtrailer.py); "max":
    # one that may be high (an earlier version's, which counted the work tree's files) or low (read
    # from part of the history: a shallow clone), which a save counts on from but no commit records.
    _EXACT, _ROUGH = "history", "max"

    def __init__(self, store: GitStore) -> None:
        self.store = store

    @property
    def path(self) -> Path:
        return self.store.state / "ids.json"

    def load(self) -> tuple[Any, int, bool]:
        """The commit the cache was written at, the highest auto id then, and whether that is the
        whole history's figure; ``(None, 0, False)`` when the file is missing or unreadable."""
        try:
            cache = json.loads(self.path.read_text(encoding="utf-8"))
            exact = self._EXACT in cache
            return cache["head"], int(cache[self._EXACT if exact else self._ROUGH]), exact
        except (OSError, ValueError, KeyError, TypeError):
            return None, 0, False

    def save(self, head: str | None, top: int, exact: bool) -> None:
        with contextlib.suppress(OSError):
            self.path.write_text(json.dumps({"head": head, self._EXACT if exact else self._ROUGH: top}), encoding="utf-8")

    def advance(self, old: str | None, new: str, written_ids: list[str]) -> None:
        """After a commit from ``old`` to ``new`` that wrote the memories ``written_ids``: a cache
        written at ``old`` moves on to ``new``, so our own commit needs no ``git log`` to learn
        which ids it added. Any other cache is left for the next look-up to bring up to date."""
        head, top, exact = self.load()
        if head is not None and head == old:
            self.save(new, max(top, highest_auto_id(written_ids)), exact)
