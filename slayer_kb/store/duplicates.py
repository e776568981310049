"""Duplicate saves counted locally and not yet committed (format.md, "Duplicate saves"): a hundred
identical saves make one memory and no commit that only bumps a counter; the memory's next real
commit folds the count into its ``duplicate_count``.

The counts are no derived state: nothing rebuilds them from the files. They live in this
worktree's git folder (``slayer-kb-duplicates.json`` beside its ``HEAD``: ``.git/`` or
``.git/worktrees/<name>/``), which deleting ``.slayer-kb/`` or setting it aside as untrusted leaves
alone, as the ids of ``leases.py`` live in ``.git/slayer-kb-ids.json``. Each worktree keeps its
own: a count goes with the branch whose memory was saved again. The file is::

    {"home": [DEVICE, INODE], "kbs": {KB_PREFIX: {MEMORY_ID: N}}, "migrated": [KB_PREFIX, ...]}

``home`` names the git folder (a move keeps it, a copy of the clone never has it): a copy reads
no counts, which the original goes on folding into its commits. ``KB_PREFIX`` is the KB's folder
in the repository (``""`` at its top). An older slayer-kb kept the counts in
``.slayer-kb/duplicates.json``: the first write moves them here (``migrated`` says so, so that
a read meanwhile counts them once), then deletes that file.

Read and written under the KB lock (a save, a sync); a read without it (``get``) sees a whole file.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.fileio import write_whole

if TYPE_CHECKING:
    from .repo import GitStore

FILE = "slayer-kb-duplicates.json"
OLD_FILE = "duplicates.json"  # in .slayer-kb/, before the counts moved to the git folder


def _counts_in(data: Any) -> dict[str, int]:
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)}


class PendingDuplicates:
    """Per memory of one KB, the duplicate saves not yet folded into a commit (see the module doc)."""

    def __init__(self, store: GitStore) -> None:
        self.store = store

    @property
    def path(self) -> Path:
        return self.store.git_dirs()[0] / FILE

    def _home(self) -> list[int]:
        st = os.stat(self.store.git_dirs()[0])
        return [st.st_dev, st.st_ino]

    def _load(self) -> tuple[dict[str, Any], list[str]]:
        """Every KB's counts in this git folder's file, and the KBs whose old file's counts are in them."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if not isinstance(data, dict) or data.get("home") != self._home():
            return {}, []  # none yet, unreadable, or a copy's: the original's counts are not this one's
        kbs, migrated = data.get("kbs"), data.get("migrated")
        return (kbs if isinstance(kbs, dict) else {}), [m for m in migrated or [] if isinstance(m, str)]

    def _old(self) -> dict[str, int]:
        try:
            return _counts_in(json.loads((self.store.state / OLD_FILE).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return {}

    def counts(self) -> dict[str, int]:
        kbs, migrated = self._load()
        counts = _counts_in(kbs.get(self.store.prefix))
        if self.store.prefix not in migrated:
            for memory_id, count in self._old().items():
                counts[memory_id] = counts.get(memory_id, 0) + count
        return counts

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
        kbs, migrated = self._load()
        kbs[self.store.prefix] = pending
        moving = self.store.prefix not in migrated
        write_whole(self.path, json.dumps({"home": self._home(), "kbs": kbs,
                                           "migrated": [*migrated, self.store.prefix] if moving else migrated}))
        if moving:  # its counts are in the file written: the old one goes, once
            with contextlib.suppress(OSError):
                (self.store.state / OLD_FILE).unlink()
