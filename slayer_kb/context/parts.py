"""``Parts``: a knowledge base's parts (its git store, index, catalog, id cache and leases, pending
duplicates, moved ids, the file monitor of a warm process) and the work of theirs an operation
asks for, each a method here, never reached through the part (``ctx.index.documents``); and what
a warm process does for a write another process runs for it (daemon/writer.py). ``Context``
(context.py) is these parts with the reads and checks every operation shares.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..core import engram
from ..core.errors import MemoryFileError, NotFoundError, StoreError
from ..core.fileio import unusable_folder
from ..core.ids import id_sort_key
from ..core.locate import MEMORIES_DIR, not_a_kb
from ..core.memory import DEFAULT_MAX_CONTENT, MAX_CONTENT_CEILING
from ..core.session import SESSIONS_DIR
from ..store.duplicates import PendingDuplicates
from ..store.leases import IdLeases
from ..store.moves import MovedIds
from ..store.place import kb_folder_refusal
from ..store.repo import GitStore
from ..store.statefiles import IdCache

if TYPE_CHECKING:
    from ..catalog.catalog import Catalog
    from ..core.results import Document, IndexWritten, SyncReport
    from ..search.filters import Restriction
    from ..search.index import Index
    from ..search.lookups import Lookup
    from ..search.monitor import ChangeMonitor

DEFAULT_DEDUP_WINDOW = timedelta(minutes=15)


class Parts:
    """A knowledge base folder inside a git repository: its parts, and their work an operation
    asks for; the base of ``Context``."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        author: str | None = None,
        dedup_window: timedelta = DEFAULT_DEDUP_WINDOW,
        max_content: int = DEFAULT_MAX_CONTENT,
    ) -> None:
        self.root = Path(os.path.realpath(path))  # a symlink loop: no folder, said below
        if not self.root.is_dir():
            raise NotFoundError(not_a_kb(str(self.root)))
        if (why := kb_folder_refusal(self.root)) is not None:  # --kb kb/memories: not a KB of its own
            raise NotFoundError(why)
        self.check_links()
        self.author = author or os.environ.get("SLAYER_KB_AUTHOR") or None
        self.dedup_window = dedup_window
        self.max_content = min(max_content, MAX_CONTENT_CEILING)  # what a memory file may hold
        self.store = GitStore(self.root)
        self.store.tell = self.tell  # what recovery finds, among the command's warnings
        self.memories_dir = self.root / MEMORIES_DIR
        self.state = self.store.state  # .slayer-kb/: derived state (state_dir() makes it)
        self._index: Index | None = None  # made on first use (``index``)
        self._index_lock = threading.Lock()  # the server's threads may be first to use it together
        self.id_cache = IdCache(self.store)  # .slayer-kb/ids.json
        self.leases = IdLeases(self.store)  # blocks of auto ids leased from the remote
        self.moves = MovedIds(self.leases)  # ids sync renumbered or merged on this clone
        self.pending = PendingDuplicates(self.store)  # .git/slayer-kb-duplicates.json
        self._catalog: Catalog | None = None
        self._catalog_sig: Any = None
        self._catalog_checked = False
        self.problems: list[MemoryFileError] = []
        # Set by keep_warm(): a long-running process's file monitor.
        self.monitor: ChangeMonitor | None = None
        # While ``collecting_warnings`` runs, per thread (the warm server runs a read beside a
        # write on one KB): what ``tell`` would print on stderr.
        self._told = threading.local()

    def tell(self, warning: str) -> None:
        """A warning about the KB's surroundings rather than about a result (a commit on a detached
        HEAD, an index left behind): on stderr, or to ``collecting_warnings``'s caller."""
        told: list[str] | None = getattr(self._told, "warnings", None)
        if told is not None:
            told.append(warning)
        else:
            print(f"warning: {warning}", file=sys.stderr)

    @contextlib.contextmanager
    def collecting_warnings(self, then_tell: bool = False) -> Iterator[list[str]]:
        """What ``tell`` says meanwhile on this thread, for a reply to carry: an MCP server's
        stderr is a log that no agent reads, and an agent reads ``--json`` from stdout alone.
        With ``then_tell``, those still in the list at the end (no reply took them) are told."""
        told: list[str] = []
        outer = getattr(self._told, "warnings", None)
        self._told.warnings = told
        try:
            yield told
        finally:
            self._told.warnings = outer
            for warning in told if then_tell else ():
                self.tell(warning)

    def check_folders(self) -> None:
        """Refuse the KB while its memories/ or sessions/ is a link out of it (a clone can carry
        memories/ as a link to ~/.ssh, and every command would read through it) or a file, or once
        its state folder was set aside (``GitStore.recheck_state``: git put files there). Checked
        when the KB is opened and again wherever it is re-read (ensure_fresh, refresh,
        transaction, get), since a pull or checkout can do either while a server holds the KB
        open: an lstat a folder, and the state folder's record read."""
        if (untrusted := self.store.recheck_state()) is not None:
            raise StoreError(untrusted)
        self.check_links()

    def check_links(self) -> None:
        """The memories/ and sessions/ part of ``check_folders``, which the open runs before the
        store exists (the store checks the state folder as it opens)."""
        for folder in (MEMORIES_DIR, SESSIONS_DIR):
            if (why := unusable_folder(self.root, folder)) is not None:
                raise StoreError(why)

    @property
    def index(self) -> Index:
        """The search index, made on first use: a command that only reads files (``get``,
        ``log``, ``validate``) starts without Whoosh and numpy, most of a process's start."""
        if self._index is None:
            with self._index_lock:
                if self._index is None:
                    from ..search.index import Index

                    self._index = Index(self.root, engram.content_hash, self._catalog_for_index, self.state_dir)
        return self._index

    def close_index(self) -> None:
        """Let go of the index's searcher and files, if this process opened them."""
        if self._index is not None:
            self._index.close()

    def highest_auto_id(self, listed: bool = False) -> int:
        """The highest auto id among the memory files (``Index.highest_auto_id``); a process with
        a file monitor lists the folder only after a file came or went, unless ``listed``."""
        return self.index.highest_auto_id(self.monitor.generation() if self.monitor and not listed else None)

    @property
    def catalog(self) -> Catalog:
        # The catalog's files are stat-ed once per operation (ensure_fresh / transaction reset the
        # check), not on every look-up: a search consults it for every hit's every entity.
        if (published := self.store.view.catalog()) is not None:  # a read beside a write (view.py)
            return published  # type: ignore[no-any-return]
        if not self._catalog_checked:
            # On use: a command that reads memories by id never loads the catalog (docs/performance.md).
            from ..catalog.cache import load_catalog_cached, same_signature
            from ..catalog.catalog import load_catalog

            sig = self.index.catalog_signature()
            if self._catalog is None or not same_signature(sig, self._catalog_sig):
                if self.store.state.is_dir():
                    self._catalog = load_catalog_cached(self.root, self.store.state / "catalog.json", sig)
                else:
                    self._catalog = load_catalog(self.root)
                self._catalog_sig = sig
            self._catalog_checked = True
        assert self._catalog is not None
        return self._catalog

    def _catalog_for_index(self) -> Catalog:
        return self.catalog

    def memory_ids(self) -> list[str]:
        return sorted(self.index.ids(), key=id_sort_key)

    # -- the parts' work an operation asks for (it calls these, not ``ctx.index.documents``) ----

    def documents(
        self, query: Lookup | None, restriction: Restriction | None = None, *, limit: int | None = None,
        sort_newest: bool = False,
    ) -> list[Document]:
        """The index's stored documents matching ``query`` and ``restriction``
        (``Index.documents``)."""
        return cast("list[Document]", self.index.documents(None if query is None else query.query, restriction,
                                                           limit=limit, sort_newest=sort_newest))

    def indexed_terms(self, field: str) -> set[str]:
        """Every term the index holds in ``field`` (terms of deleted documents may linger)."""
        return {t.decode("utf-8") if isinstance(t, bytes) else t for t in self.index.searcher().lexicon(field)}

    def meaning_status(self) -> str:
        return self.index.meaning_status()

    def sentence_problem(self) -> str | None:
        """Why the sentence vectors memories lack cannot be made (a damaged model), or None."""
        return self.index.sentence_problem()

    def as_indexed(self, memory_ids: set[str]) -> bool:
        """Whether these memory files are as this process's last write of them left them and
        indexed them: a file watcher has nothing to re-read for their events."""
        return self.index.as_indexed(memory_ids)

    def young_files(self) -> list[str]:
        """Memories changed within the timestamp granularity, which wait for a re-read."""
        return self.index.young_files()

    def reread(self, memory_ids: list[str] | None = None) -> SyncReport:
        """Re-index these memory files (None: every file whose signature changed), after a
        change the index did not see (a sync's pull, a rewritten branch). Call under the lock."""
        return self.index.sync() if memory_ids is None else self.index.update(memory_ids)

    def state_dir(self) -> Path:
        """The KB's ``.slayer-kb/`` folder, made when missing (``StoreError`` if it cannot be)."""
        self.store.ensure_state_dir()
        return self.state

    def duplicates_pending(self, memory_id: str) -> int:
        """Duplicates of the memory saved since its last commit (``store/duplicates.py``)."""
        return self.pending.count(memory_id)

    def add_duplicate(self, memory_id: str) -> None:
        self.pending.add(memory_id)

    def fold_duplicates(self, memory_id: str) -> None:
        """The memory's commit recorded its pending duplicates: forget them."""
        self.pending.clear(memory_id)

    def record_moves(self, moves: dict[str, str], why: str, duplicate: bool = False) -> None:
        """Ids ``merge``, ``rebase`` or ``renumber`` moved on this clone (``store/moves.py``; a sync
        records its own as it goes), refused until accepted; the duplicate saves counted here and not yet committed go with them."""
        if not moves:
            return  # most merges and rebases move nothing: no file read
        self.moves.record(moves, why, duplicate)
        self.carry_pending(moves)

    def carry_pending(self, moves: dict[str, str]) -> None:
        """The duplicate saves counted here and not yet committed, carried to the ids ``moves``
        gave their memories (``sync``, which recorded the moves themselves as it made them)."""
        if moves:
            self.pending.move(moves)

    def git_setting(self, key: str) -> str | None:
        """One key of the clone's git config as the leases cache it (``IdLeases.settings``: the
        remotes' urls and the branches' upstreams), or None when it is not set."""
        return self.leases.settings().get(key)

    def top_up_leases(self) -> None:
        """Lease more auto ids from the remote when this clone runs low (``IdLeases.top_up``)."""
        self.leases.top_up(self.highest_auto_id())
        self.tell_leases()

    def tell_leases(self) -> None:
        """Tell why a lease just fell back to offline ids, once (``IdLeases.note``): the save or
        sync that met the refusal says so, not each save drawing from the block after it."""
        if (note := self.leases.note()) is not None:
            self.tell(note)

    def leased_ids(self, count: int, floor: int, taken: Callable[[int], bool]) -> list[str] | None:
        """``count`` fresh ids from this clone's leased blocks, skipping those ``taken`` says are
        used (``IdLeases.take``); None when this KB does not lease ids."""
        ids = self.leases.take(count, floor, taken)
        self.tell_leases()
        return ids

    def unleased_ids(self, count: int, floor: int, taken: Callable[[int], bool]) -> list[str]:
        """For a clone that counts on its own: ``count`` ids above ``floor`` in no block leased
        on the remote, skipping those ``taken`` says are used (``IdLeases.unleased``)."""
        return self.leases.unleased(count, floor, taken)

    def shared_remote(self) -> str:
        """The remote this clone leases ids from and syncs with (``IdLeases.remote_name``)."""
        return self.leases.remote_name()

    def ready_beside(self) -> bool:
        """For a warm process, with its view held (store/view.py): whether a read may run now,
        beside a write, from the state in memory. Not while a commit writes catalog files (the
        catalog is loaded from them), nor when anything but the files a commit writes changed
        since the index was last brought up to date (an edit by hand, another process's
        commit): that read waits for its turn, and brings the index up to date first."""
        writing = self.store.view.writing
        if self.monitor is None or not self.index.has_searcher() or self.store.committing() and not writing:
            return False
        if not all(path.startswith(f"{MEMORIES_DIR}/") for path in writing):
            return False
        return self.monitor.peek(frozenset(path.rsplit("/", 1)[-1] for path in writing))

    # -- a write another process runs for this warm one (daemon/writer.py) ----------------------

    def index_written(self, memory_ids: list[str]) -> IndexWritten:
        """The index's content now (``Meaning.content_key``) and the signatures at which this
        process last indexed these memory files (``Meaning.indexed_as``), for its server."""
        from ..core.results import IndexWritten  # on use: only a write process answers its server

        return IndexWritten(self.index.content_key(), self.index.indexed_as(memory_ids))

    def write_elsewhere(self, paths: frozenset[str]) -> None:
        """With the view held: another process's commit is writing ``paths`` (relative to the KB)
        for this warm process, which takes it in after (``took_in``). Reads meanwhile answer as
        beside a write of this process's own: those files from the index, the vectors as held."""
        self.store.view.writing = self.store.view.writing | paths
        self.index.hold_table = True

    def took_in(self, before: Any, after: Any, indexed: dict[str, Any]) -> None:
        """With the view held: the other process's write is over. It indexed the memory files
        ``indexed`` (their signatures as it read them), taking the index from content ``before``
        to ``after`` (None: unknown); their file events are this process's own, as after a
        commit of its own; any other file it wrote counts as changed (a full check follows)."""
        written = self.store.view.writing
        self.store.view.writing = frozenset()
        self.index.take_in(before, after, indexed)
        self.index.reopen()  # the first search after the write reopens nothing
        if self.monitor is not None:
            self.monitor.absorb({f"{mid}.yaml" for mid in indexed})
            self.monitor.settle()
            # An edit by hand since the write process indexed one of them: its event went with
            # the write's own, its signature tells it apart (an edit after this look keeps its event).
            if not self.index.as_indexed(indexed):
                self.monitor.note_change()
        if any(not path.startswith(f"{MEMORIES_DIR}/") for path in written):
            self._catalog_checked = False

    def recheck_catalog(self) -> None:
        """The catalog files may have changed under the lock (a write set some aside): the next
        look-up checks them again."""
        self._catalog_checked = False

    def projects(self) -> list[str]:
        """The projects of the live memories, as ``stats`` counts them (not a deleted or a
        replaced version's, whose terms the index keeps a while: ``Index.terms_held``)."""
        from ..search import restrict
        from ..search.schema import NONE

        return sorted(name for name in self.index.terms_held("project", restrict()) if name != NONE)
