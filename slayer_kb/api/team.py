"""``kb.team``: work with other clones of the KB: ``sync`` with a remote, ``rebase`` and
``merge`` by hand with the KB's merge driver, ``renumber`` a branch's colliding auto ids, and accepting an id that sync moved on this clone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.ids import check_sought_id
from ..core.outcomes import AcceptResult, MergeResult, RebaseResult, RenumberResult, SyncResult

if TYPE_CHECKING:
    from ..context import Context


class Team:
    """One clone's side of the team's work (the ops modules are imported on use)."""

    def __init__(self, kb: Context) -> None:
        self._kb = kb
        self._moves = kb.moves

    def sync(self, remote: str | None = None) -> SyncResult:
        """Pull (rebase), merge what git cannot, revalidate, reindex and push (``remote``: by
        default ``slayer-kb.remote``, else the branch's remote, else ``origin``)."""
        from ..ops import sync

        return sync.sync(self._kb, remote)

    def renumber(self, onto: str, *, rewrite: bool = False) -> RenumberResult:
        """Give this branch's new auto-id memories fresh ids where ``onto`` used the same ids."""
        from ..ops import renumber

        return renumber.renumber(self._kb, onto, rewrite=rewrite)

    def rebase(self, upstream: str | None = None, action: str | None = None, *,
               rewrite_pushed: bool = False) -> RebaseResult:
        """Rebase onto ``upstream``, or go on with the rebase in progress (``action``:
        ``continue`` or ``abort``), with the KB's merge driver; a conflict raises with the steps.
        Commits already pushed to the branch's remote branch are rewritten only with
        ``rewrite_pushed``."""
        from ..ops import rebase

        return rebase.rebase(self._kb, upstream, action, rewrite_pushed=rewrite_pushed)

    def merge(self, ref: str) -> MergeResult:
        """Merge ``ref`` into this branch with the KB's merge driver, a memory both sides added
        alike merged from that version; a conflict raises with the steps."""
        from ..ops import merge

        return merge.merge(self._kb, ref)

    def accept(self, memory_id: str) -> AcceptResult | None:
        """Let ``memory_id``, which sync moved on this clone, mean the memory it names now;
        None when sync moved no memory with that id."""
        check_sought_id(memory_id, "give the id sync said it moved")
        moved = self._moves.get(memory_id)
        if moved is None or not self._moves.accept(memory_id):
            return None
        return AcceptResult(memory_id, moved.new)
