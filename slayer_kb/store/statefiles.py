"""Two small files in the state folder ``.slayer-kb/`` (``state.py`` keeps the folder itself),
each read and written only here:

- ``ids.json``, ``{"head": COMMIT, "max": N}``: the highest auto id the branch's history had used
  at commit ``COMMIT``, so that choosing the next auto id reads only the commits since (a fresh
  clone reads its history once). ``KnowledgeBase`` moves it on after each of its own commits.
- ``duplicates.json``, ``{MEMORY_ID: N}``: duplicate saves counted locally and folded into the
  memory's next real commit, so a hundred identical saves do not make a hundred commits that only
  bump a counter.

Both are derived: a missing or unreadable file reads as empty, and a write that fails loses time
(``ids.json``) or a count not yet committed (``duplicates.json``), never a memory.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.fileio import write_whole
from ..core.ids import highest_auto_id

if TYPE_CHECKING:
    from .repo import GitStore


class IdCache:
    """``ids.json``: the highest auto id the branch's history had used at a commit."""

    def __init__(self, store: GitStore) -> None:
        self.store = store

    @property
    def path(self) -> Path:
        return self.store.state / "ids.json"

    def load(self) -> tuple[Any, int]:
        """The commit the cache was written at and the highest auto id then; ``(None, 0)`` when
        the file is missing or unreadable."""
        try:
            cache = json.loads(self.path.read_text(encoding="utf-8"))
            return cache["head"], int(cache["max"])
        except (OSError, ValueError, KeyError, TypeError):
            return None, 0

    def save(self, head: str | None, top: int) -> None:
        with contextlib.suppress(OSError):
            self.path.write_text(json.dumps({"head": head, "max": top}), encoding="utf-8")

    def advance(self, old: str | None, new: str, added_ids: list[str]) -> None:
        """After a commit from ``old`` to ``new`` that wrote the memories ``added_ids``: a cache
        written at ``old`` moves on to ``new``, so our own commit needs no ``git log`` to learn
        which ids it added. Any other cache is left for the next look-up to bring up to date."""
        try:
            cache = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(cache, dict) or cache.get("head") != old:
            return
        self.save(new, max(int(cache.get("max", 0)), highest_auto_id(added_ids)))


class PendingDuplicates:
    """``duplicates.json``: per memory, the duplicate saves not yet folded into a commit."""

    def __init__(self, store: GitStore) -> None:
        self.store = store

    @property
    def path(self) -> Path:
        return self.store.state / "duplicates.json"

    def counts(self) -> dict[str, int]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {k: v for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}

    def count(self, memory_id: str) -> int:
        return self.counts().get(memory_id, 0)

    def add(self, memory_id: str) -> None:
        pending = self.counts()
        pending[memory_id] = pending.get(memory_id, 0) + 1
        self._write(pending)

    def move(self, moves: dict[str, str]) -> None:
        """Carry the counts of ids ``sync`` moved (old -> new) to where each memory is now, whose
        next commit folds them in: never into the memory the old id names now."""
        pending = self.counts()
        moved = {old: pending.pop(old) for old in moves if old in pending}
        for old, count in moved.items():
            pending[moves[old]] = pending.get(moves[old], 0) + count
        if moved:
            self._write(pending)

    def clear(self, memory_id: str) -> None:
        """Forget the count of ``memory_id``: its commit has folded it in, or it is gone."""
        pending = self.counts()
        if pending.pop(memory_id, None) is not None:
            self._write(pending)

    def _write(self, pending: dict[str, int]) -> None:
        self.store.ensure_state_dir()
        write_whole(self.path, json.dumps(pending))
