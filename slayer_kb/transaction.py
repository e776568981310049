"""``Transaction``: the unit of work every write to a knowledge base goes through.

::

    with kb.transaction() as tx:
        memory = ...
        changes = [memory_change(memory), *more]
        commit = tx.commit(changes, f"memory: save {memory.id}")

``Context.transaction`` holds the KB's cross-process lock for the whole block (taking it
finishes a commit a crash interrupted) and, with ``sync`` (the default), first brings the index up
to date with the files, for an operation that looks memories up; one that looks nothing up passes
``sync=False``. Inside, the methods here read what the operation needs, check that it may rewrite
a file, and commit: ``commit`` makes one git commit of exactly the changes given, then updates the
index. An operation plans its changes as a list of ``repo.Change`` (``memory_change`` for a
memory, its own for a catalog or session file), so that ``rewrite`` can check every file the
commit would touch before anything is written.

Every write goes through one: ``KnowledgeBase``'s own save, update and forget as much as the
operation modules (cascade, editing, history, interchange, renumber, sessions), which use only
this and the ``Context``'s public methods. A transaction is over when its block ends: its
methods refuse to run after that.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal, TypeVar

from .core.children import python_child
from .core.errors import ConflictError, InvalidIdError, KBError, StoreError, WorkTreeError
from .core.ids import MAX_AUTO_DIGITS, MAX_ID_BYTES, check_new_id, highest_auto_id, id_sort_key, is_auto_id
from .core.locate import MEMORIES_DIR, id_held, id_of_path, memory_path
from .core.memory import Memory, dumps, loads
from .core.problems import command
from .store import counted, gitindex, idfloor
from .store.aside import Aside, by_hand, refused_rewrite, settled, uncommitted_message
from .store.files import StatKey, stat_keys
from .store.gitstate import detached_head
from .store.leases import BLOCK, CLAIMS, block_of, first_of
from .store.repo import Change
from .store.worktree import added_then_deleted, missing_by_hand
from .workspace import Workspace

if TYPE_CHECKING:
    from .search.index import Index, Written
    from .search.lookups import Lookup
    from .store.leases import IdLeases
    from .store.repo import GitStore
    from .store.statefiles import IdCache
    from .store.worktree import IndexMarks

T = TypeVar("T")

# The module a save starts in the background to compact the index.
COMPACTION_JOB = "slayer_kb.daemon.compact"


def memory_change(memory: Memory, text: str | None = None) -> Change:
    """The change that writes ``memory`` to its file: ``text`` when given (the file's own text
    with an edit in place), else its canonical form."""
    data = dumps(memory) if text is None else text
    return Change(memory_path(memory.id), data.encode("utf-8"))


class Transaction:
    """What an operation may do while it holds the KB lock (see the module doc)."""

    def __init__(self, kb: Workspace) -> None:
        self._kb: Workspace | None = kb
        self._monitor = kb.monitor
        # HEAD as read under this lock (False: not read yet), so a commit needs not read it again.
        self._head: str | None | Literal[False] = False
        self._detached_told = False  # a detached HEAD is warned of once, not at each commit
        # git's index marks on the files the next commit rewrites, as the check that it may read
        # them: its staging needs them too. Read again in each transaction, never kept longer.
        self._marks: IndexMarks | None = None
        self._seen: dict[str, StatKey] = {}  # the files checked, as they were before the check
        self._counted: list[int] = []  # auto ids counted out (counted.py) no published commit holds yet
        self._aside: list[Aside] = []  # what ``rewrite`` set aside that no published commit holds yet
        self._set_aside = False  # whether ``rewrite`` set anything aside (recorded until ``close``)

    @property
    def kb(self) -> Workspace:
        """The knowledge base's parts, while the transaction lasts."""
        if self._kb is None:
            raise RuntimeError("This transaction is over: use it only inside its 'with' block.")
        return self._kb

    # The parts this class works on, and that a function taking one as its object is handed
    # (``blob_at(tx.store, ...)``); an operation calls the transaction's methods, not theirs.
    # Like ``kb``, each refuses once the transaction is over.

    @property
    def store(self) -> GitStore:
        return self.kb.store

    @property
    def index(self) -> Index:
        return self.kb.index

    @property
    def ids(self) -> IdCache:
        """The auto-id cache (``.slayer-kb/ids.json``)."""
        return self.kb.id_cache

    @property
    def leases(self) -> IdLeases:
        return self.kb.leases

    def put_aside_back(self) -> None:
        """After a failure, the files ``rewrite`` set aside put back where they were, in the work
        tree and git's index (``aside.put_back``): --force sets the user's work aside only for a
        commit. A copy that cannot be put back is named, with the fix."""
        asides, self._aside = self._aside, []
        # Taken before: putting a file back takes it off the aside's lists.
        back = memory_ids_of([path for aside in asides for path in (*aside.moved, *aside.staged)])
        for aside in reversed(asides):
            try:
                for note in self.store.put_aside_back(aside):
                    self.kb.tell(f"--force set your uncommitted work aside and the command failed; {note}: "
                                 "compare the two and keep what you want.")
            except (OSError, KBError) as exc:
                self.kb.tell(f"--force set your uncommitted work aside, the command failed, and putting it back "
                             f"failed too ({exc}): {by_hand(aside)}")
        if asides:
            try:
                self._reindex(back)
                self.kb.recheck_catalog()
            except Exception:  # noqa: BLE001 - the files are back; the derived index follows them later
                self.index.invalidate()

    def close(self) -> None:
        if self._set_aside:
            settled(self.store)
        if self._counted:  # drawn for a commit that was never published (refused, or its hook stopped)
            counted.give_back(self.store.git_dirs()[1], self._counted)
        self._kb = None

    # -- reading ---------------------------------------------------------------------------------

    def read_matching(self, query: Lookup, at_head: frozenset[str] = frozenset()) -> Iterator[tuple[Memory, str]]:
        """The memories ``query`` finds, in id order, each with its file's text: those the index
        holds (a file that broke since the index read it is skipped: it is no memory to edit),
        and HEAD's version of each memory the index cannot read (``_committed_of_unread``), and
        of each of ``at_head`` (a dry run's plan: the files its run would set aside). The index's
        parsed copy is used where the file still hashes the same, so reading thousands parses
        only what changed."""
        kb = self.kb
        docs = sorted((doc for doc in self.index.documents(query.query, limit=None) if doc["id"] not in at_head),
                      key=lambda d: id_sort_key(d["id"]))
        hashes = self.index.file_hashes([d["id"] for d in docs])

        def indexed() -> Iterator[tuple[Memory, str]]:
            for doc in docs:
                with contextlib.suppress(KBError):
                    yield kb.read_with_text(doc["id"], (hashes.get(doc["id"]), doc["data"]))

        unread = self._committed_of_unread(query, {doc["id"] for doc in docs}, at_head)
        yield from heapq.merge(indexed(), unread, key=lambda found: id_sort_key(found[0].id))

    def _committed_of_unread(self, query: Lookup, found: set[str], at_head: frozenset[str]
                             ) -> Iterator[tuple[Memory, str]]:
        """HEAD's version, with its text, of each memory the index cannot read where ``query``
        finds it, in id order: its file broke since it was committed (an edit by hand,
        unfinished), or is gone from the work tree (deleted or moved by hand and not committed,
        or left out by a sparse checkout). Yet a commit builds on HEAD's version: a forget or a
        cascade that passed it by left HEAD's links to what it deleted. Rewriting a file holding
        the user's uncommitted work (an edit, a deletion) is what ``rewrite`` refuses. So is each
        of ``at_head``."""
        store = self.store
        if (head := self.head()) is None:
            return
        objects = store.objects
        tree = objects.tree_of(head)
        unread = {memory_id: store.repo_path(problem.path) for problem in self.kb.problems
                  if (memory_id := id_of_path(problem.path)) is not None and memory_id not in found}
        unread.update((memory_id, store.repo_path(memory_path(memory_id))) for memory_id in at_head)
        # HEAD's memory files the work tree lacks: one listing of each, compared as bytes (a
        # decode a name costs more than the listing at 100,000 files), no stat, no git process.
        try:
            present = set(os.listdir(os.fsencode(self.kb.memories_dir)))
        except FileNotFoundError:
            present = set()
        for name in objects.names_in(tree, store.repo_path(MEMORIES_DIR)):
            if name not in present:
                memory_id = id_of_path(f"{MEMORIES_DIR}/{name.decode('utf-8', 'surrogateescape')}")
                if memory_id is not None and memory_id not in found:
                    unread[memory_id] = store.repo_path(memory_path(memory_id))
        in_head = objects.blobs_at(tree, unread.values()) if unread else {}
        blobs = {memory_id: in_head[path] for memory_id, path in unread.items()}
        blobs.update(self._added_then_deleted(present, found))
        for memory, text in self._parsed(blobs):
            if query.holds(memory.entities):
                yield memory, text

    def committed(self, memory_ids: Iterable[str]) -> Iterator[tuple[Memory, str]]:
        """HEAD's version, with its text, of each of ``memory_ids`` that HEAD holds and that
        parses, in id order."""
        store = self.store
        paths = {memory_id: store.repo_path(memory_path(memory_id)) for memory_id in memory_ids}
        if not paths or (head := self.head()) is None:
            return
        objects = store.objects
        in_head = objects.blobs_at(objects.tree_of(head), paths.values())
        yield from self._parsed({memory_id: in_head[path] for memory_id, path in paths.items()})

    def _parsed(self, blobs: Mapping[str, str | None]) -> Iterator[tuple[Memory, str]]:
        """The memory each blob holds (id -> blob; None: never committed, no link of HEAD's to
        leave behind), with its text, in id order; one that does not parse is passed by."""
        # One read for all of them (a packed blob read alone is a git process each).
        held = self.store.objects.read_many("blob", [blob for blob in blobs.values() if blob is not None])
        for memory_id in sorted(blobs, key=id_sort_key):
            if (blob := blobs[memory_id]) is not None:
                with contextlib.suppress(KBError, UnicodeDecodeError):
                    text = held[blob].decode("utf-8")
                    yield loads(text, memory_id), text

    def _added_then_deleted(self, present: set[bytes], found: set[str]) -> dict[str, str]:
        """The memory files git's index holds as added (``git add``) that HEAD lacks and that are
        gone from the work tree (``present``: its memory folder's names), each id with the staged
        blob: the person's next ``git commit`` takes that version, so a link in it counts as in a
        file deleted by hand, which ``rewrite`` refuses (``GitStore.staged_new``)."""
        return {memory_id: blob for path, blob in self.store.staged_new([f"{MEMORIES_DIR}/"]).items()
                if (memory_id := id_of_path(path)) is not None and memory_id not in found
                and os.fsencode(path.rpartition("/")[2]) not in present}

    def referrers(self, entities: list[str]) -> Iterator[tuple[str, Memory, str]]:
        """(id, memory, file text) of every memory, soft-deleted ones too, whose entity list
        holds any of ``entities``."""
        from .search import lookups  # with the index it queries: see Context.index

        for memory, text in self.read_matching(lookups.tagged(entities)):
            yield memory.id, memory, text

    def live(self, limit: int | None = None, **terms: str | None) -> list[Memory]:
        """The memories whose indexed fields equal ``terms`` (None: no value), newest first."""
        from .search.filters import restrict  # with the index it queries: see Context.index

        kb = self.kb
        out = []
        for doc in self.index.documents(None, restrict(exact=terms), limit=limit, sort_newest=True):
            with contextlib.suppress(KBError):
                out.append(kb.read(doc["id"]))
        return out

    def live_one(self, **terms: str | None) -> Memory | None:
        found = self.live(limit=1, **terms)
        return found[0] if found else None

    def head(self) -> str | None:
        """HEAD's commit (None before the first)."""
        return self.store.head()

    # -- ids -------------------------------------------------------------------------------------

    def next_auto_id(self) -> str:
        """A fresh auto id (``next_auto_ids``)."""
        return self.next_auto_ids(1)[0]

    def next_auto_ids(self, count: int, tell_slayer: bool = True) -> list[str]:
        """``count`` fresh auto ids, ascending. With a remote, from the blocks this clone leased
        there (``store/leases.py``); without one (or ``slayer-kb.ids sequential``), above every auto
        id this branch's history and work tree have ever held and every id another worktree
        counted out (``store/counted.py``), skipping a name a file (SLayer's ``<n>.md`` too,
        told unless ``tell_slayer`` is false) or git's index holds."""
        if count == 0:
            return []
        top, kb = self._highest_auto_id(count), self.kb
        # A free name may be a memory file staged (git add) and then deleted by hand, which HEAD
        # lacks: a commit there would take the place of the version the person's next ``git
        # commit`` takes. Asked once a take: the names git's index holds (its file read, no
        # process), then git only for a name found there (``staged_new``).
        named: list[set[str] | None] = []
        staged: list[set[str]] = []
        slayer: list[str] = []  # SLayer's own <n>.md skipped: memories of the store not imported yet

        def taken(n: int) -> bool:
            if (held := id_held(kb.memories_dir, n)) is not None:
                slayer.extend([held] if held.endswith(".md") else [])
                return True
            if not named:
                named.append(self._index_names())
            if named[0] is not None and str(n) not in named[0]:
                return False
            if not staged:
                staged.append(self._staged_ids())
            return str(n) in staged[0]

        ids = self.leases.take(count, top, taken)
        kb.tell_leases()
        if ids is None:  # no remote to lease from, or sequential ids: counted for every worktree
            drawn = counted.take(self.store.git_dirs()[1], count, top, taken)
            self._counted += drawn
            ids = [str(n) for n in drawn]
        if slayer and tell_slayer:  # once: the next save's ids are above these
            kb.tell(f"SLayer's memories of this store not imported yet ({', '.join(f'{MEMORIES_DIR}/{n}' for n in slayer)}) "
                    f"keep their ids, which no new memory is given; bring them in with '{command(kb.root)} import-slayer .'.")
        if len(ids[-1]) > MAX_ID_BYTES:  # only after a hand-made or old id of ~200 digits
            raise InvalidIdError(
                f"The next auto id would be {len(ids[-1])} digits long, over the {MAX_ID_BYTES}-byte limit "
                f"of an id: this branch holds an id that is a number of {len(str(top))} digits, and auto "
                "ids count on from it. Rename that memory to a name if it is still there, or give this "
                "memory an id (--id NAME)."
            )
        return ids

    def _index_names(self) -> set[str] | None:
        """The memory ids git's index names (a few more: another folder's path may end alike), from
        one scan of a file of whole paths (``gitindex.read_whole``); None when it cannot tell."""
        data = gitindex.read_whole(self.store.index_file)
        if data is None:
            return None
        folder = re.escape(self.store.repo_path(f"{MEMORIES_DIR}/").encode("utf-8", "surrogateescape"))
        return {name.decode("utf-8", "surrogateescape") for name in re.findall(folder + rb"([^\0/]+)\.yaml\0", data)}

    def _staged_ids(self) -> set[str]:
        """The memories git's index holds as added (``git add``) that HEAD lacks (``staged_new``),
        one git process; none when git cannot read its index (a commit then says so, with the fix)."""
        try:
            added = self.store.staged_new([f"{MEMORIES_DIR}/"])
        except StoreError:
            return set()
        return {memory_id for path in added if (memory_id := id_of_path(path)) is not None}

    def _history_top(self, head: str | None, walk_all: bool = True) -> tuple[int, bool] | None:
        """The highest auto id on ``head``'s history (``ids.json`` brought to ``head``), and
        whether it is the whole history's. Without a cache, with its commit gone or with a figure
        not known to be the whole history's (an earlier version's cache, a shallow clone's), the
        whole history is read (idfloor.py): unless ``walk_all`` is false, which then gives None."""
        cached_head, cached_max, exact = self.ids.load()
        if head is None or (cached_head == head and exact):
            return cached_max, exact
        # Commits since the cached head suffice even when it is not an ancestor (another branch):
        # the cached figure already covers everything reachable from it. Its commit gone (a reset,
        # then gc), the ids it counted stay retired.
        since = idfloor.history_top(self.store, head, cached_head) if exact and cached_head is not None else None
        if since is None and not walk_all:
            return None
        if since is None:
            # A rough figure is counted on from (as an earlier version did) but never recorded.
            whole, complete = idfloor.history_top(self.store, head) or 0, idfloor.complete(self.store)
            self.ids.save(head, max(whole, cached_max) if exact else whole, complete)
            return max(whole, cached_max), complete
        self.ids.save(head, figure := max(cached_max, since), exact)
        return figure, exact

    def _recorded_top(self, old: str, wrote: list[str]) -> int | None:
        """The figure a commit on ``old`` writing the memories ``wrote`` records (idtrailer.py):
        from the cache brought to ``old``, never from a walk of the whole history (a fresh clone's
        first save makes that); None, no trailer, when no exact figure is at hand."""
        try:
            found = self._history_top(old, walk_all=False)
        except StoreError:  # git cannot read the history now: the commit goes on without it
            return None
        return max(found[0], highest_auto_id(wrote)) if found is not None and found[1] else None

    def _highest_auto_id(self, count: int) -> int:
        kb = self.kb
        found = self._history_top(head := self.store.head())
        assert found is not None  # the whole history is read when the cache does not serve
        history, self._head = found[0], head
        # Files this process committed are in ``history``; the work tree adds hand-made ones,
        # which a warm process's file monitor would have seen arrive.
        top = max(history, kb.highest_auto_id())
        if self._monitor is not None and any(os.path.lexists(kb.memories_dir / f"{top + n}.yaml") for n in range(1, count + 1)):
            # A file no event told the monitor of (a network file system, a watch lost): the
            # folder decides. Whatever the cache says, an id never names an existing file.
            top = max(history, self.index.highest_auto_id())
        return top

    def check_given_number(self, memory_id: str) -> None:
        """Refuse a new memory a number as auto ids are (``save --id 102``) from a block another
        clone leased (``IdLeases.may_give``): that clone hands its ids out, and a sync would then
        renumber one of the two memories, maybe under an agent that holds its id."""
        if not is_auto_id(memory_id) or len(memory_id) > MAX_AUTO_DIGITS or self.leases.may_give(int(memory_id)) is not False:
            return
        first, then = first_of(block_of(int(memory_id))), " to get this clone's next auto id, or give a name such as 'kb.orders-total'."
        # The claim's words are the remote's commit message, anyone's to write: data, never a
        # template (braces in it once reached str.format).
        if claim := self.leases.claim_said:
            said = (f"Memory id '{memory_id}' was given by another clone: its claim on {self.leases.remote_name()} "
                    f"({CLAIMS}{block_of(int(memory_id))}: {claim}) names it, and a sync would then give one "
                    "of the two memories a new id. Give another number, ")
            raise InvalidIdError(said + "omit --id" + then, tool_message=said + "omit the id" + then)
        said = (f"Memory id '{memory_id}' is a number as auto ids are, in a block another clone leased from "
                f"{self.leases.remote_name()} (ids {first}-{first + BLOCK - 1}): that clone hands it out for another "
                "memory, and a sync would then give one of the two a new id. ")
        raise InvalidIdError(said + "Omit --id" + then, tool_message=said + "Omit the id" + then)

    def check_new_id(self, memory_id: str) -> None:
        """Refuse an id a new memory may not take (``ids.check_new_id`` against the KB's ids)."""
        check_new_id(memory_id, self.index.ids())

    # -- writing ---------------------------------------------------------------------------------

    def put_back(self, path: str, data: bytes) -> None:
        """Write HEAD's version ``data`` of the memory file ``path`` back into the work tree (a
        file broken, edited or deleted by hand) and re-index it."""
        self.store.apply_committed({path: data})
        self._reindex(memory_ids_of([path]))

    def require_committed(self, *paths: str) -> None:
        """Refuse (``ConflictError``) to rewrite the files ``paths`` (relative to the KB) while one
        holds work that is not committed, for an operation that has no ``--force``: the first
        such named, in the order given; one check of git's status for all those there."""
        there = [path for path in paths if os.path.lexists(self.kb.root / path)]
        dirty = self._uncommitted(there) if there else {}
        for path in paths:
            if path in dirty:
                raise ConflictError(uncommitted_message([path], force_hint=False))
            if path in there:
                continue
            # Gone from the work tree but not from HEAD: a deletion or a move not committed, said
            # as a read of the file says it; or never committed, but staged (git add) and then
            # deleted, as ``rewrite`` says it: a commit here would stage its version over the
            # person's and bring back the file they deleted.
            gone = missing_by_hand(self.store, path)
            if gone is None and path in self.store.staged_new([path]):
                gone = added_then_deleted(self.store, path)
            if gone is not None:
                raise ConflictError(f"{gone.removesuffix('.')}, then retry. Nothing was done: slayer-kb never "
                                    "commits work you have not committed.")

    def rewrite(
        self, plan: Callable[..., tuple[list[Change], T]], force: bool = False, *, ahead: bool = False,
    ) -> tuple[list[Change], T, list[str]]:
        """``plan()`` (the changes to existing files, and whatever else it worked out), refused
        (``ConflictError``) when a file it rewrites or deletes differs from HEAD in the work tree
        or git's index, or is one HEAD lacks; nothing is done then. With ``force``, those files
        are set aside (``GitStore.set_aside``: the user's version kept as ``<file>.orig``, HEAD's
        put back) and ``plan()`` runs again from HEAD's versions. ``ahead``: ``plan`` takes the
        ids of the memories to read as HEAD has them, as ``dry_rewrite``'s does, for a plan whose
        files HEAD's versions may change (prune's); the files it adds from them are checked before
        any is set aside, so a refusal changes nothing.
        Returns (changes, the rest of what ``plan`` gave, the names kept)."""
        kb = self.kb
        changes, extra = plan()
        dirty = self._rewritable(changes)
        kept: list[str] = []
        if dirty and force:
            if ahead:
                self._refuse_beyond(plan(frozenset(memory_ids_of(list(dirty))))[0], dirty)
            self._set_aside = True
            aside = self.store.set_aside(dirty)
            self._aside.append(aside)
            kept = aside.kept
            self._reindex(memory_ids_of(list(dirty)))
            kb.recheck_catalog()
            self._head = False
            changes, extra = plan()
            dirty = self._uncommitted([c.path for c in changes])
        if dirty:
            raise refused_rewrite(dirty, [*dict.fromkeys(p for a in self._aside for p in (*a.moved, *a.staged))] if kept else None)
        return changes, extra, kept

    def dry_rewrite(
        self, plan: Callable[[frozenset[str]], tuple[list[Change], T]], force: bool = False
    ) -> tuple[list[Change], T, list[str]]:
        """``rewrite`` as its dry run: nothing is set aside, and it is refused as the run would
        be, so a dry run says so. ``plan`` is given the ids of the memories to read as HEAD has
        them (``read_matching``'s ``at_head``): none, then, with ``force``, those whose files the
        run would set aside; the names are those the run would keep them as."""
        changes, extra = plan(frozenset())
        dirty = self._rewritable(changes)
        if dirty and force:
            changes, extra = plan(frozenset(memory_ids_of(list(dirty))))
            self._refuse_beyond(changes, dirty)
            return changes, extra, self.store.aside_names(dirty)
        if dirty:
            raise refused_rewrite(dirty)
        return changes, extra, []

    def _refuse_beyond(self, changes: list[Change], aside: Mapping[str, str | None]) -> None:
        """Refuse the files of ``changes``, planned from HEAD's versions of the files ``aside``
        (those ``--force`` sets aside), that hold uncommitted work and are not set aside: a plan
        from HEAD's versions may rewrite files the first plan did not, and ``--force`` sets aside
        only the first plan's."""
        beyond = {path: blob for path, blob in self._uncommitted([c.path for c in changes]).items()
                  if path not in aside}
        if beyond:
            message = uncommitted_message(sorted(beyond), force_hint=False, aside=sorted(aside))
            raise ConflictError(message)

    def _rewritable(self, changes: list[Change]) -> dict[str, str | None]:
        """The files of ``changes`` that hold uncommitted work (``_uncommitted``); refused
        (``ConflictError``) when one is deleted or moved by hand, ``--force`` or not."""
        dirty = self._uncommitted([c.path for c in changes])
        gone = sorted(path for path in dirty if not os.path.lexists(self.kb.root / path))
        if gone:
            raise ConflictError(self._deleted_message(gone))
        return dirty

    def _deleted_message(self, paths: list[str]) -> str:
        """Why a rewrite of ``paths``, deleted or moved by hand and not committed, is refused,
        ``--force`` or not: setting the deletion aside would bring the file back, and committing
        HEAD's file rewritten would need the work tree to take it back too."""
        # Each file its own fix: one moved by hand goes back by another step than one deleted.
        said = " ".join(missing_by_hand(self.store, path) or added_then_deleted(self.store, path) for path in paths)
        return (f"{said.removesuffix('.')}, then retry. This command would rewrite "
                f"{'it' if len(paths) == 1 else 'them'}, and slayer-kb never commits work you have not committed "
                "(--force sets an edit aside, never a deletion), so nothing was done.")

    def _uncommitted(self, paths: list[str]) -> dict[str, str | None]:
        """``GitStore.uncommitted`` of ``paths`` about to be rewritten, its reading of git's index
        marks kept for the next commit's staging."""
        self._seen.update(stat_keys(self.kb.root, paths))  # before the check: an edit after it is kept
        self._marks = self.store.index_marks(paths)
        return self.store.uncommitted(paths, marks=self._marks)

    def _reindex(self, memory_ids: Iterable[str], written: Mapping[str, Written] | None = None) -> None:
        """Re-index these memory files, and take the index's report of the broken ones as the
        KB's: a warm process's next command trusts its file monitor, which has seen nothing
        (these are its own writes), and would otherwise still warn of a file now fixed or gone."""
        self.kb.problems = self.index.update(memory_ids, written).problems

    def commit(
        self, changes: list[Change], message: str, memories: Mapping[str, Memory] | None = None
    ) -> str | None:
        """Commit ``changes`` as one commit with ``message`` and re-index the memory files among
        them; ``memories`` are parsed memories some of them hold, so indexing needs not parse
        those again. The new commit's id, or None when the changes change nothing.

        While git writes the commit, this thread lets go of the in-memory state (store/view.py)
        and names the files it writes: a read of the warm server answers meanwhile from the
        index as the last write left it, then waits only for the index to be updated."""
        self.store.view.writing = frozenset(c.path for c in changes)
        try:
            return self._commit(changes, message, memories or {})
        finally:
            self.store.view.writing = frozenset()
            if self._monitor is not None:
                self._monitor.settle()

    def _commit(self, changes: list[Change], message: str, parsed: Mapping[str, Memory]) -> str | None:
        kb = self.kb
        old = self.store.head() if self._head is False else self._head
        self._head = False
        marks, self._marks = self._marks, None  # this commit restages them: a later one reads again
        seen, self._seen = self._seen, {}
        unwritten: WorkTreeError | None = None
        wrote = memory_ids_of([c.path for c in changes if c.data is not None])  # the history's top counts them
        try:
            with self.store.view.released():
                # Every commit records the figure (a fresh clone then reads no history: idfloor.py);
                # the cache mostly stands at ``old`` (our last commit, or a save's id just counted).
                ids_top = None if old is None else self._recorded_top(old, wrote)
                commit: str | None = self.store.commit(changes, message, kb.author, parent=old, marks=marks, seen=seen,
                                                       tell=kb.tell, ids_top=ids_top)
        except WorkTreeError as exc:
            # Published, but the work tree lacks files: the ids are used and the index follows
            # the files as they are; then the error says how to finish.
            commit, unwritten = exc.commit, exc
        if commit is not None:
            self._counted = []  # held by a published commit: never handed out again
            self._aside = []  # the user's versions stay aside: the commit replaced them
            self.ids.advance(old, commit, wrote)
            self._tell_if_detached()
        ids = {memory_id: c.data for c in changes if (memory_id := id_of_path(c.path)) is not None}
        written = {mid: (data, parsed[mid]) for mid, data in ids.items() if data is not None and mid in parsed}
        try:
            self._reindex(ids, written)
            if self._monitor is not None:
                # Our own files, indexed just now: the next look-up needs no full check for them.
                self._monitor.absorb({c.path.rsplit("/", 1)[-1] for c in changes})
            if self.index.wants_compaction():
                # Off the save path: a detached, niced, isolated process merges the segments
                # saves left (daemon/compact.py; nothing in the KB is imported).
                self.store.start_upkeep([python_child(COMPACTION_JOB, str(kb.root))[0]])
        except Exception as exc:  # noqa: BLE001 - whatever the index does, the commit stands
            # The change is committed; only the derived index lags. Forget the manifest so the next
            # command re-indexes, rather than report a failure that invites saving twice.
            self.index.invalidate()
            kb.tell(f"{message} is committed, but the search index was not updated ({exc}); "
                    "the next command updates it.")
        if unwritten is not None:
            raise unwritten
        return commit

    def _tell_if_detached(self) -> None:
        if not self._detached_told:
            self._detached_told = True
            told = detached_head(self.store.git_dirs()[0])
            if told is not None:
                self.kb.tell(told)


def memory_ids_of(paths: list[str]) -> list[str]:
    """The ids of the memory files among ``paths`` (relative to the KB)."""
    return [memory_id for memory_id in map(id_of_path, paths) if memory_id is not None]
