"""``Transaction``: the unit of work every write to a knowledge base goes through.

::

    with kb.transaction() as tx:
        memory = ...
        changes = [memory_change(memory), *more]
        commit = tx.commit(changes, f"memory: save {memory.id}")

``KnowledgeBase.transaction`` holds the KB's cross-process lock for the whole block (taking it
finishes a commit a crash interrupted) and, with ``sync`` (the default), first brings the index up
to date with the files, for an operation that looks memories up; one that looks nothing up passes
``sync=False``. Inside, the methods here read what the operation needs, check that it may rewrite
a file, and commit: ``commit`` makes one git commit of exactly the changes given, then updates the
index. An operation plans its changes as a list of ``repo.Change`` (``memory_change`` for a
memory, its own for a catalog or session file), so that ``rewrite`` can check every file the
commit would touch before anything is written.

The operation modules (cascade, editing, history, interchange, renumber, sessions) write only
through this and ``KnowledgeBase``'s public methods; the work is done by ``KnowledgeBase``'s own
implementation, which its save, update and forget share. A transaction is over when its block
ends: its methods refuse to run after that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from .core.locate import MEMORIES_DIR
from .core.memory import Memory, dumps
from .search.lookups import Lookup
from .store.repo import Change

if TYPE_CHECKING:
    from .kb import KnowledgeBase

T = TypeVar("T")


def memory_change(memory: Memory, text: str | None = None) -> Change:
    """The change that writes ``memory`` to its file: ``text`` when given (the file's own text
    with an edit in place), else its canonical form."""
    data = dumps(memory) if text is None else text
    return Change(f"{MEMORIES_DIR}/{memory.id}.yaml", data.encode("utf-8"))


class Transaction:
    """What an operation may do while it holds the KB lock (see the module doc)."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self._kb: KnowledgeBase | None = kb

    @property
    def kb(self) -> KnowledgeBase:
        """The knowledge base, for its public methods (``read``, ``resolver``, ``catalog``...)."""
        if self._kb is None:
            raise RuntimeError("This transaction is over: use it only inside its 'with' block.")
        return self._kb

    def close(self) -> None:
        self._kb = None

    # -- reading ---------------------------------------------------------------------------------

    def read_matching(self, query: Lookup) -> Iterator[tuple[Memory, str]]:
        """The memories the index finds for ``query``, in id order, each with its file's text; a
        file that broke since the index read it is skipped. The index's parsed copy is used where
        the file still hashes the same, so reading thousands parses only what changed."""
        return self.kb._indexed_reads(query)

    def referrers(self, entities: list[str]) -> Iterator[tuple[str, Memory, str]]:
        """(id, memory, file text) of every memory, soft-deleted ones too, whose entity list
        holds any of ``entities``."""
        return self.kb._referrers(entities)

    def live(self, limit: int | None = None, **terms: str | None) -> list[Memory]:
        """The memories whose indexed fields equal ``terms`` (None: no value), newest first."""
        return self.kb._live(limit, **terms)

    # -- ids -------------------------------------------------------------------------------------

    def next_auto_id(self) -> str:
        """One above every auto id this branch's history and work tree have ever held; the
        ``n`` memories of one commit may take it and the ``n - 1`` ids after it."""
        return self.kb._next_auto_id()

    def check_new_id(self, memory_id: str) -> None:
        """Refuse an id a new memory may not take (``ids.check_new_id`` against the KB's ids)."""
        self.kb._check_new_id(memory_id)

    # -- writing ---------------------------------------------------------------------------------

    def require_committed(self, path: str) -> None:
        """Refuse (``ConflictError``) to rewrite the file ``path`` (relative to the KB) while it
        holds work that is not committed, for an operation that has no ``--force``."""
        self.kb._require_committed(path)

    def rewrite(
        self, plan: Callable[[], tuple[list[Change], T]], force: bool = False
    ) -> tuple[list[Change], T, list[str]]:
        """``plan()`` (the changes to existing files, and whatever else it worked out), refused
        (``ConflictError``) when a file it rewrites or deletes holds uncommitted work; with
        ``force``, those files are set aside as ``<file>.orig`` and ``plan()`` runs again from
        HEAD's versions. Returns (changes, the rest of what ``plan`` gave, the names kept)."""
        return self.kb._rewrite(plan, force)

    def commit(
        self, changes: list[Change], message: str, memories: Mapping[str, Memory] | None = None
    ) -> str | None:
        """Commit ``changes`` as one commit with ``message`` and re-index the memory files among
        them; ``memories`` are parsed memories some of them hold, so indexing needs not parse
        those again. The new commit's id, or None when the changes change nothing."""
        return self.kb._commit(changes, message, memories)
