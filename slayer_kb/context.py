"""``Context``: a knowledge base's parts (its git store, index, catalog, id cache and leases,
pending duplicates, moved ids) and the reads and checks every operation shares: reading a memory,
resolving references, bringing the index up to date, and the transaction every write runs in.

The operations (``ops``) take a ``Context``; ``KnowledgeBase`` (kb.py) is the ``Context`` with
every operation as a method, so an operation never calls back into the layer that called it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import threading
from collections.abc import Callable, Collection, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .catalog.cache import load_catalog_cached, same_signature
from .catalog.catalog import Catalog, load_catalog
from .catalog.refs import flatten_refs, split_references
from .catalog.resolve import Resolver
from .core import engram
from .core.errors import (
    ConflictError,
    InvalidInputError,
    KBError,
    MemoryFileError,
    NotFoundError,
    ResolutionError,
    StoreError,
    unreadable,
)
from .core.fileio import NotRegularFile, TooLarge, read_regular, unusable_folder
from .core.ids import check_existing_id, check_id, id_sort_key, no_memory
from .core.inputs import blank, check_unicode
from .core.locate import MEMORIES_DIR, memory_path, not_a_kb
from .core.memory import MAX_CONTENT_CEILING, MAX_FILE_BYTES, Memory, loads, too_large
from .core.problems import command, shown, words
from .core.results import Document, IndexWritten, SyncReport
from .core.session import SESSIONS_DIR
from .store.leases import IdLeases
from .store.moves import MovedIds, note, refusal
from .store.place import kb_folder_refusal
from .store.repo import GitStore
from .store.statefiles import IdCache, PendingDuplicates
from .store.worktree import missing_by_hand
from .transaction import Transaction

if TYPE_CHECKING:
    from .search.filters import Restriction
    from .search.index import Index
    from .search.lookups import Lookup
    from .search.monitor import ChangeMonitor

T = TypeVar("T")

Indexed = tuple[str | None, dict[str, Any]]
"""What the index holds for a memory file: its content hash and its stored memory."""

DEFAULT_DEDUP_WINDOW = timedelta(minutes=15)
DEFAULT_MAX_CONTENT = 64 * 1024


class Context:
    """A knowledge base folder inside a git repository: its parts and shared reads."""

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
        self.check_folders()
        self.author = author or os.environ.get("SLAYER_KB_AUTHOR") or None
        self.dedup_window = dedup_window
        self.max_content = min(max_content, MAX_CONTENT_CEILING)  # what a memory file may hold
        self.store = GitStore(self.root)
        self.memories_dir = self.root / MEMORIES_DIR
        self.state = self.store.state  # .slayer-kb/: derived state (state_dir() makes it)
        self._index: Index | None = None  # made on first use (``index``)
        self._index_lock = threading.Lock()  # the server's threads may be first to use it together
        self.id_cache = IdCache(self.store)  # .slayer-kb/ids.json
        self.leases = IdLeases(self.store)  # blocks of auto ids leased from the remote
        self.moves = MovedIds(self.leases)  # ids sync renumbered or merged on this clone
        self.pending = PendingDuplicates(self.store)  # .slayer-kb/duplicates.json
        self._catalog: Catalog | None = None
        self._catalog_sig: Any = None
        self._catalog_checked = False
        self.problems: list[MemoryFileError] = []
        # Set by keep_warm(): a long-running process's file monitor.
        self.monitor: ChangeMonitor | None = None
        # While ``collecting_warnings`` runs: what ``tell`` would print on stderr.
        self._told: list[str] | None = None

    def tell(self, warning: str) -> None:
        """A warning about the KB's surroundings rather than about a result (a commit on a detached
        HEAD, an index left behind): on stderr, or to ``collecting_warnings``'s caller."""
        if self._told is not None:
            self._told.append(warning)
        else:
            print(f"warning: {warning}", file=sys.stderr)

    @contextlib.contextmanager
    def collecting_warnings(self) -> Iterator[list[str]]:
        """What ``tell`` says meanwhile, for a reply to carry: an MCP server's stderr is a log
        that no agent reads. For one call at a time (the MCP server's)."""
        told: list[str] = []
        self._told = told
        try:
            yield told
        finally:
            self._told = None

    def check_folders(self) -> None:
        """Refuse the KB while its memories/ or sessions/ is a link out of it (a clone can carry
        memories/ as a link to ~/.ssh, and every command would read through it) or a file. Checked when the
        KB is opened and again wherever it is re-read (ensure_fresh, refresh, transaction, get),
        since a pull can make one a link while a server holds the KB open: an lstat a folder."""
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
                    from .search.index import Index

                    self._index = Index(self.root, engram.content_hash, self._catalog_for_index)
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

    def memory_exists(self, memory_id: str) -> bool:
        return (self.memories_dir / f"{memory_id}.yaml").is_file()

    def resolver(self, *, given: bool = False) -> Resolver:
        """``given``: references a user or agent gives now (to save, update or search by), in
        which ``memory:<id>`` of an id sync moved on this clone refuses as a command on that id
        does: the link would reach the memory the id names now, not the one they mean."""
        return Resolver(self.catalog, memory_exists=self.memory_exists,
                        check_id=self._check_given_link if given else check_id)

    def _check_given_link(self, memory_id: str) -> None:
        check_id(memory_id)
        self.check_not_moved(memory_id)

    def resolve_entities(self, refs: list[str] | str, *, given: bool = True,
                         held: Collection[str] = ()) -> tuple[list[str], list[str]]:
        """Resolve references strictly: every one must resolve, or ``ResolutionError``;
        ``given`` as for ``resolver`` (False for the references a memory file holds). ``held``:
        the links the memory being rewritten holds already, kept as its file has them (a
        colleague's ``memory:<id>`` whose id sync moved on this clone is still theirs)."""
        items = split_references(refs) if isinstance(refs, str) else flatten_refs(refs)
        resolver = self.resolver(given=given)
        kept = self.resolver() if given and held else resolver
        entities: list[str] = []
        warnings: list[str] = []
        for ref in items:
            try:
                resolution = (kept if ref.strip() in held else resolver).resolve(ref)
            except ResolutionError as exc:
                broken = [problem for problem in self.catalog.problems if problem.skipped]
                if not broken:
                    raise
                # The name may be in a catalog file that was skipped: say so, or the fix is hidden.
                names = set(re.split(r"\W+", ref))
                named = next((p for p in broken if p.path.stem in names), broken[0])
                raise ResolutionError(
                    f"{exc} The catalog skipped {len(broken)} file(s) it could not use, such as "
                    f"{named.shown(self.root)}; fix it ('slayer-kb validate' lists every problem).",
                    exc.suggestions,
                ) from None
            warnings.extend(resolution.warnings)
            if resolution.entity not in entities:
                entities.append(resolution.entity)
        if given:  # a link given now to a forgotten memory (one the memory held already is not news)
            warnings.extend(self.deleted_links([e for e in entities if e not in held]))
        return entities, warnings

    def deleted_links(self, entities: list[str]) -> list[str]:
        """Why each ``memory:<id>`` of ``entities`` whose memory is soft-deleted is in no answer,
        with how to bring it back (the link itself stays until the memory is restored or gone)."""
        return self.memory_links(entities)[1]

    def memory_links(self, entities: list[str]) -> tuple[list[str], list[str]]:
        """The ``memory:<id>`` of ``entities`` whose memory is live, and ``deleted_links``'s
        warnings, each memory read once."""
        live, said = [], []
        for entity in entities:
            if entity.startswith("memory:"):
                try:
                    memory = self.read(entity[len("memory:"):])
                except KBError:
                    continue
                if not memory.is_deleted:
                    live.append(entity)
                    continue
                said.append(f"{entity} names a memory deleted at {memory.deleted_at}, which no search or read "
                            f"shows: bring it back with '{command(self.root)} restore {words(memory.id)}' (MCP: mem_restore).")
        return live, said

    def ensure_fresh(
        self, progress: Callable[[int, int], None] | None = None, trust_monitor: bool = True
    ) -> SyncReport | None:
        """Bring the index up to date with the files if anything changed them. ``trust_monitor``
        False checks the files even when this process's file monitor saw no change (a watcher's
        periodic check, for changes a network file system reports no event for)."""
        self.check_folders()
        if self.store.view.catalog() is not None or (trust_monitor and self._monitor_says_fresh()):
            # A warm process whose file monitor saw nothing relevant (for a read beside a write,
            # nothing but that write's files): no per-file scan, and its catalog is current.
            return None
        self._catalog_checked = False
        # A journal left by an interrupted commit means files may lag HEAD: take the lock, which
        # finishes that commit, before trusting the index.
        damaged = False
        if not self.store.committing() and self.index.stale_files() == []:
            try:
                self.index.searcher()  # cached: the search that follows pays nothing more
                self.problems = self.index.known_problems()
                return None
            except Exception:  # noqa: BLE001 - damaged derived state: rebuild it below
                self.index.close()
                damaged = True
        # Checked again under the lock: taking it may have finished an interrupted commit.
        with self.store.locked():
            report = self.index.sync(progress=progress) if damaged else self.index.catch_up(progress=progress)
        self.problems = report.problems
        return report

    def refresh(self, memory_ids: list[str]) -> SyncReport:
        """Re-index just these memory files, found changed by a file watcher: no full scan."""
        self.check_folders()
        with self.store.locked():
            report = self.index.update(memory_ids)
        self.problems = report.problems
        return report

    def path_of(self, memory_id: str) -> Path:
        """The memory's file."""
        return self.memories_dir / f"{memory_id}.yaml"

    def read_with_text(self, memory_id: str, indexed: Indexed | None = None,
                       explain: bool = False) -> tuple[Memory, str]:
        """A memory and its file's exact text, read once as the file is now: unlike ``read``, it
        neither takes the lock nor waits for a commit that is writing files. ``indexed`` is what the index holds for the file (its
        content hash, its stored memory): when the bytes still hash the same, that memory is
        used instead of parsing the YAML again (a cascade reads thousands). ``explain``: a file
        that is not there is said in full (``_missing``), for a command that shows the error; a
        loop that skips it pays no git process for it."""
        check_existing_id(memory_id, "to read")
        path = self.path_of(memory_id)
        try:
            # Only a regular file is opened: a FIFO would block (a save, under the lock) forever.
            data = read_regular(path, limit=MAX_FILE_BYTES)
            text = data.decode("utf-8")
        except FileNotFoundError:
            raise (self._missing(memory_id) if explain else no_memory(memory_id, self.memory_exists)) from None
        except TooLarge as exc:
            raise MemoryFileError(memory_path(memory_id), None, too_large(exc.size)) from None
        except NotRegularFile as exc:
            reason = "refusing to follow it" if exc.kind == "a symlink" else "refusing to open it"
            shown = "is a symlink" if exc.kind == "a symlink" else exc.strerror
            raise MemoryFileError(memory_path(memory_id), None, f"{shown}; {reason}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise unreadable(memory_path(memory_id), exc) from None
        if indexed is not None and indexed[0] == hashlib.sha1(data, usedforsecurity=False).hexdigest():
            return Memory(**indexed[1]), text
        return loads(text, memory_id), text

    def _missing(self, memory_id: str) -> NotFoundError:
        """Why the memory's file is not there and the fix (``why_missing``), or no such memory."""
        gone = self.why_missing(memory_id)
        return NotFoundError(gone) if gone else no_memory(memory_id, self.memory_exists)

    def why_missing(self, memory_id: str) -> str | None:
        """Why the memory's file is not there, and the fix: moved or deleted by hand and not
        committed (``missing_by_hand``, a git process) or under another extension; None when
        there is no sign of it (no such memory)."""
        return missing_by_hand(self.store, memory_path(memory_id)) or self._misnamed(memory_id)

    def _misnamed(self, memory_id: str) -> str | None:
        """The id's file under another extension (``50.yml``, ``50.YAML``), which no command reads
        (``validate`` names it), for the error of a look-up that found no ``50.yaml``."""
        for suffix in (".yml", ".YAML", ".YML", ".Yaml"):
            if os.path.lexists(self.memories_dir / f"{memory_id}{suffix}"):
                return (f"No memory with id '{memory_id}': {MEMORIES_DIR}/{memory_id}{suffix} is there, but slayer-kb "
                        f"reads only files named <id>.yaml; rename it to {memory_path(memory_id)}, then retry.")
        return None

    def read(self, memory_id: str, explain: bool = False) -> Memory:
        """The memory as its file holds it (``read_with_text``'s ``explain``), never half of a
        commit's writes (``read_settled``)."""
        if self.store.view.unpublished(memory_path(memory_id)):  # a read beside a write of it
            if (stored := self.index.stored([memory_id]).get(memory_id)) is None:
                raise no_memory(memory_id, self.memory_exists)
            return Memory(**stored["data"])
        if self.store.view.catalog() is not None:  # beside a write, which holds the lock for it
            return self.read_with_text(memory_id, explain=explain)[0]
        return self.read_settled(lambda: self.read_with_text(memory_id, explain=explain)[0])

    def read_settled(self, read: Callable[[], T]) -> T:
        """``read()`` of files no commit is halfway through writing. A commit writes files over
        in place (or a crash left one unfinished), so what was read may be half of one write:
        then ``read`` runs again under the lock, which waits for that writer or finishes its
        work. (A read that caught a file half-written finds the journal still there: it outlives
        the writes by a git subprocess at least.)"""
        if self.store.holding:
            return read()
        if not self.store.committing():
            try:
                found = read()
            except (MemoryFileError, NotFoundError):
                if not self.store.committing():
                    raise
            else:
                if not self.store.committing():
                    return found
        with self.store.locked():
            return read()

    def get(self, memory_id: str, *, include_deleted: bool = False) -> Memory:
        """The memory, its duplicate count with the duplicates saved since its last commit."""
        check_existing_id(memory_id, "to show")
        self.check_folders()
        self.check_not_moved(memory_id)
        memory = self.read_with_fix(memory_id)
        if memory.is_deleted and not include_deleted:
            raise deleted_error(memory)
        pending = self.duplicates_pending(memory_id)
        return memory.evolve(duplicate_count=(memory.duplicate_count or 1) + pending) if pending else memory

    def read_with_fix(self, memory_id: str) -> Memory:
        """``read`` for a command a person runs on this memory (get, update): a file that cannot
        be read says how to fix it."""
        try:
            return self.read(memory_id, explain=True)
        except MemoryFileError as exc:
            path = self.path_of(memory_id)
            if exc.names_fix:
                raise
            if path.is_symlink() or not path.is_file():  # a link, a FIFO, a folder: nothing to edit
                raise MemoryFileError(exc.path, exc.line, f"{exc.message}; move it out of {MEMORIES_DIR}/ by hand, "
                                      "then retry", names_fix=True) from None
            problem = exc.message.rstrip(".")
            # The person's fix runs from where they ran the command (--kb from elsewhere).
            run = command(self.root)
            fix = f"Edit {shown(path)} to fix it, then check it with '{run} validate'"
            edit = f"(or run '{run} edit {words(memory_id)}', which checks it on close)"
            raise MemoryFileError(exc.path, exc.line, f"{problem}. {fix} {edit}.",
                                  tool_message=f"{problem}. Edit {exc.path} to fix it, then check it with "
                                               "'slayer-kb validate'.") from None

    def check_not_moved(self, memory_id: str) -> None:
        """Refuse an id that ``sync`` moved on this clone (``store/moves.py``), naming both
        memories, until the user accepts the move (``moves.accept``)."""
        move = self.moves.get(memory_id)
        if move is not None:
            raise ConflictError(refusal(move, self._named_now(memory_id)))

    def moved_notes(self, memory_id: str) -> list[str]:
        """For a command that reads an id's history (``show``, ``log``, ``timeline``) and so
        answers about what the id names here: the move ``check_not_moved`` would refuse, said
        as a note (``store/moves.py``); none when the id never moved on this clone."""
        move = self.moves.get(memory_id)
        return [] if move is None else [note(move, self._named_now(memory_id))]

    def _named_now(self, memory_id: str) -> Memory | None:
        try:
            return self.read(memory_id)
        except KBError:
            return None

    def memory_ids(self) -> list[str]:
        return sorted(self.index.ids(), key=id_sort_key)

    # -- the parts' work an operation asks for (it calls these, not ``ctx.index.documents``) ----

    def documents(
        self, query: Lookup | None, restriction: Restriction | None = None, *, limit: int | None = None,
        sort_newest: bool = False,
    ) -> list[Document]:
        """The index's stored documents matching ``query`` and ``restriction``
        (``Index.documents``)."""
        return cast("list[Document]", self.index.documents(query, restriction, limit=limit, sort_newest=sort_newest))

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
        """Duplicates of the memory saved since its last commit (``.slayer-kb/duplicates.json``)."""
        return self.pending.count(memory_id)

    def add_duplicate(self, memory_id: str) -> None:
        self.pending.add(memory_id)

    def fold_duplicates(self, memory_id: str) -> None:
        """The memory's commit recorded its pending duplicates: forget them."""
        self.pending.clear(memory_id)

    def record_moves(self, moves: dict[str, str], why: str, duplicate: bool = False) -> None:
        """Ids ``sync`` or ``renumber`` moved on this clone (``store/moves.py``), refused until
        accepted; the duplicate saves counted here and not yet committed go with them."""
        if not moves:
            return  # sync asks after every attempt, most with nothing moved: no file read
        self.moves.record(moves, why, duplicate)
        self.pending.move(moves)

    def git_setting(self, key: str) -> str | None:
        """One key of the clone's git config as the leases cache it (``IdLeases.settings``: the
        remotes' urls and the branches' upstreams), or None when it is not set."""
        return self.leases.settings().get(key)

    def top_up_leases(self) -> None:
        """Lease more auto ids from the remote when this clone runs low (``IdLeases.top_up``)."""
        self.leases.top_up(self.highest_auto_id())

    def leased_ids(self, count: int, floor: int, taken: Callable[[int], bool]) -> list[str] | None:
        """``count`` fresh ids from this clone's leased blocks, skipping those ``taken`` says are
        used (``IdLeases.take``); None when this KB does not lease ids."""
        return self.leases.take(count, floor, taken)

    def shared_remote(self) -> str:
        """The remote this clone leases ids from and syncs with (``IdLeases.remote_name``)."""
        return self.leases.remote_name()

    def _monitor_says_fresh(self) -> bool:
        """A warm process whose file monitor saw nothing relevant since its last check (its own
        commits' files aside): the index it holds describes the files, no per-file scan needed."""
        return self.monitor is not None and not self.monitor.changed() and self.index.has_searcher()

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

    @contextlib.contextmanager
    def transaction(self, sync: bool = True) -> Iterator[Transaction]:
        """A unit of work under the KB lock (``transaction.py``), refused while a merge, rebase,
        cherry-pick, revert or bisect is not concluded (store/gitstate.py); with ``sync``, the
        index is first brought up to date with the files, for an operation that looks memories up."""
        self._catalog_checked = False
        self.check_folders()
        with self.store.locked():
            self.store.refuse_during_git_operation()
            if sync and not self._monitor_says_fresh():
                self.problems = self.index.catch_up().problems
            tx = Transaction(self)
            try:
                yield tx
            finally:
                tx.close()

    def recheck_catalog(self) -> None:
        """The catalog files may have changed under the lock (a write set some aside): the next
        look-up checks them again."""
        self._catalog_checked = False

    def check_learning(self, learning: Any, name: str = "learning", tool_name: str | None = None) -> str:
        """``learning`` (or the field ``name``), refused when blank or over the KB's size limit;
        ``tool_name``: what an MCP tool calls it, where that differs (mem_update's ``content``)."""
        def refused(problem: str) -> InvalidInputError:
            return InvalidInputError(name + problem, tool_message=tool_name and tool_name + problem)

        if blank(learning):
            raise refused(" is empty: write what was learned (it is required and must not be blank).")
        check_unicode(learning, name)  # a lone surrogate is told, not a crash counting bytes
        size = len(learning.encode("utf-8"))
        if size > self.max_content:
            raise refused(f" is {size} bytes; the limit is {self.max_content} bytes. Split it into several memories "
                          "or raise the limit with SLAYER_KB_MAX_CONTENT (bytes).")
        return learning

    def projects(self) -> list[str]:
        from .search.schema import NONE

        return sorted(name for name in self.indexed_terms("project") if name != NONE)


def deleted_error(memory: Memory) -> NotFoundError:
    """Why a soft-deleted memory is not shown, and how to bring it back: with the command, or for
    an MCP client, which has no shell, with the tool."""
    said = f"Memory '{memory.id}' was deleted at {memory.deleted_at}; bring it back with"
    return NotFoundError(f"{said} 'slayer-kb restore {words(memory.id)}'.",
                         tool_message=f"{said} mem_restore(id: {memory.id}).")
