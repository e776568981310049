"""``KnowledgeBase``: every operation on a knowledge base. The CLI and the MCP server call these
methods and only parse arguments and format results.

Data flows one way: ids and records (``ids``, ``memory``) -> catalog and resolution (``catalog``,
``query``) -> git store (``repo``) -> index (``index``, ``search``) -> this module.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .catalog.catalog import Catalog, load_catalog, load_catalog_cached, same_signature
from .catalog.refs import flatten_refs
from .catalog.resolve import Resolver
from .core import engram
from .core.errors import (
    ConflictError,
    InvalidInputError,
    KBError,
    MemoryFileError,
    NotFoundError,
    ResolutionError,
)
from .core.fileio import NotRegularFile, read_regular
from .core.ids import check_id, id_sort_key
from .core.inputs import check_description, check_unicode
from .core.locate import MEMORIES_DIR, memory_path
from .core.results import MaintenanceResult, SaveResult, SyncReport
from .ops import capture, changes, finding, observations, sessions
from .ops.finding import deleted_error
from .search.index import Index
from .search.schema import NONE

if TYPE_CHECKING:
    from .search.monitor import ChangeMonitor
from .catalog.refs import clean_query, query_entities, split_references
from .core.memory import Memory, loads, utc_now
from .store.leases import IdLeases
from .store.moves import MovedIds, refusal
from .store.repo import STATE_DIR, Change, GitStore, find_toplevel, init_repository
from .store.statefiles import IdCache, PendingDuplicates
from .transaction import Transaction, memory_change

T = TypeVar("T")
Indexed = tuple[str | None, dict[str, Any]]
"""What the index holds for a memory file: its content hash and its stored memory."""

DEFAULT_DEDUP_WINDOW = timedelta(minutes=15)
DEFAULT_MAX_CONTENT = 64 * 1024
MAX_ENGRAM_LIMIT = 20
CONTEXT_BUDGET = 6000
CONTEXT_MEMORIES = 20
GITIGNORE = f"{STATE_DIR}/\n"


class KnowledgeBase:
    """A knowledge base folder inside a git repository."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        author: str | None = None,
        dedup_window: timedelta = DEFAULT_DEDUP_WINDOW,
        max_content: int = DEFAULT_MAX_CONTENT,
    ) -> None:
        self.root = Path(path).resolve()
        if not self.root.is_dir():
            raise NotFoundError(f"No knowledge base at {self.root}; create one with 'slayer-kb init'.")
        self.author = author or os.environ.get("SLAYER_KB_AUTHOR") or None
        self.dedup_window = dedup_window
        self.max_content = max_content
        self.store = GitStore(self.root)
        self.memories_dir = self.root / MEMORIES_DIR
        self.index = Index(self.root, engram.content_hash, self._catalog_for_index)
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

    # -- creation ---------------------------------------------------------------------------

    @classmethod
    def init(cls, path: str | os.PathLike[str], *, author: str | None = None, example: bool = False) -> KnowledgeBase:
        """A new KB in ``path`` (and a git repository when it is in none), as one commit; with
        ``example``, a copy of the shipped example KB (an online shop's catalog and memories)."""
        root = Path(path).resolve()
        root.mkdir(parents=True, exist_ok=True)
        if find_toplevel(root) is None:
            init_repository(root)
        kb = cls(root, author=author)
        with kb.store.locked():
            changes = []
            if not (root / ".gitignore").exists():
                changes.append(Change(".gitignore", GITIGNORE.encode()))
            if example:
                changes.extend(_example_changes(root))
            elif not kb.memories_dir.is_dir():
                changes.append(Change(f"{MEMORIES_DIR}/.gitkeep", b""))
            message = "kb: initialise knowledge base" + (" from the example" if example else "")
            kb.store.commit(changes, message, kb.author)
            kb.index.sync()
        return kb

    def keep_warm(self) -> None:
        """For a long-running process (the MCP server): watch the KB's folders with inotify, so
        that a read skips the per-file freshness scan while nothing changed. An edit made behind
        the process's back is seen by the next read, as without it. (Off where inotify is not.)
        It also loads the meaning model now, and holds the vectors as float32 (vectors.Table.expand)."""
        from .search.monitor import ChangeMonitor

        if self.monitor is None:
            self.monitor = ChangeMonitor.create(self.root)
        self.index.embedder()
        self.index.warm = True

    def warm_up(self) -> None:
        """Load now what a warm process's first search and first save read: the searcher and the
        vectors (``Index.warm_up``), the trees from HEAD down to ``memories/`` with their runs
        compressed (``ObjectStore.warm_up``: 200 ms of the first save at 100,000 memories), and
        the highest auto id."""
        self.index.warm_up()
        head = self.store.head()
        if head is not None:
            self.store.objects.warm_up(head, self.store.repo_path(MEMORIES_DIR))
        self.highest_auto_id()

    def highest_auto_id(self) -> int:
        """The highest auto id among the memory files (``Index.highest_auto_id``); a process with
        a file monitor lists the folder only after a file came or went."""
        return self.index.highest_auto_id(self.monitor.generation() if self.monitor else None)

    def close(self) -> None:
        if self.monitor is not None:
            self.monitor.stop()
            self.monitor = None
        self.index.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- catalog and resolution -------------------------------------------------------------

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

    def resolver(self) -> Resolver:
        return Resolver(self.catalog, memory_exists=self.memory_exists, check_id=check_id)

    def resolve_entities(self, refs: list[str] | str) -> tuple[list[str], list[str]]:
        """Resolve references strictly: every one must resolve, or ``ResolutionError``."""
        items = split_references(refs) if isinstance(refs, str) else flatten_refs(refs)
        resolver = self.resolver()
        entities: list[str] = []
        warnings: list[str] = []
        for ref in items:
            resolution = resolver.resolve(ref)
            warnings.extend(resolution.warnings)
            if resolution.entity not in entities:
                entities.append(resolution.entity)
        return entities, warnings

    def _link(self, linked_entities: Any) -> tuple[list[str], list[str], dict[str, Any] | None]:
        """SLayer's ``linked_entities``: a list of references, or a SlayerQuery mapping."""
        if isinstance(linked_entities, dict):
            entities, warnings = query_entities(linked_entities, self.resolver())
            return entities, warnings, clean_query(linked_entities)
        if isinstance(linked_entities, (list, tuple, str)):
            for index, item in enumerate(linked_entities if not isinstance(linked_entities, str) else ()):
                if isinstance(item, str) and not item.strip():
                    # SLayer's words for it; the list itself is not empty.
                    raise ResolutionError(
                        f"linked_entities[{index}]: entity reference is empty. Give a reference such "
                        "as 'orders.amount', or drop the item."
                    )
            refs = (
                split_references(linked_entities)
                if isinstance(linked_entities, str)
                else flatten_refs(linked_entities, "linked_entities")
            )
            if not refs:
                raise InvalidInputError(
                    "linked_entities is empty: give at least one entity reference "
                    "(e.g. 'orders.amount') or a SlayerQuery."
                )
            entities, warnings = self.resolve_entities(refs)
            return entities, warnings, None
        raise InvalidInputError(
            "linked_entities must be a list of entity references or a SlayerQuery object, "
            f"not {type(linked_entities).__name__}."
        )

    # -- reading ----------------------------------------------------------------------------

    def ensure_fresh(
        self, progress: Callable[[int, int], None] | None = None, trust_monitor: bool = True
    ) -> SyncReport | None:
        """Bring the index up to date with the files if anything changed them. ``trust_monitor``
        False checks the files even when this process's file monitor saw no change (a watcher's
        periodic check, for changes a network file system reports no event for)."""
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
        with self.store.locked():
            report = self.index.update(memory_ids)
        self.problems = report.problems
        return report

    def maintain(self) -> MaintenanceResult:
        """Compact what saves leave behind, where no one waits for it: merge the index's
        segments of at most MERGE_LIMIT documents into one (saves merge only small ones) and
        pack the repository's loose objects."""
        segments, compacted = self.compact_index(everything=True)
        before = self.store.object_store()
        self.store.repack()  # git's own locking keeps it safe beside a commit
        after = self.store.object_store()
        return MaintenanceResult(
            (segments, compacted), (before.loose, after.loose), (before.packs, after.packs),
            (before.pack_bytes, after.pack_bytes),
        )

    def background_upkeep(self) -> None:
        """What the detached job a save starts runs: merge the index segments saves left, then
        pack the loose objects that commits made meanwhile, if that is due (the job holds the
        slot a repack would need, and the saves may have stopped)."""
        self.compact_index()
        self.store.repack_if_due()

    def compact_index(self, everything: bool = False) -> tuple[int, int]:
        """Merge the index segments that saves left (``everything``: all of at most
        MERGE_LIMIT documents); the segments before and after. The merge runs without the
        lock, so saves go on meanwhile; only the swap takes it (compaction.py)."""
        segments = self.index.segments()
        built = self.index.build_compaction(everything)
        if built is not None:
            with self.store.locked():
                self.index.publish_compaction(built)
        return segments, self.index.segments()

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> SyncReport:
        with self.store.locked():
            report = self.index.sync(progress=progress, full=True)
        self.problems = report.problems
        return report

    def path_of(self, memory_id: str) -> Path:
        """The memory's file."""
        return self.memories_dir / f"{memory_id}.yaml"

    def read_with_text(self, memory_id: str, indexed: Indexed | None = None) -> tuple[Memory, str]:
        """A memory and its file's exact text, read once as the file is now: unlike ``read``, it
        neither takes the lock nor waits for a commit that is writing files. ``indexed`` is what the index holds for the file (its
        content hash, its stored memory): when the bytes still hash the same, that memory is
        used instead of parsing the YAML again (a cascade reads thousands)."""
        check_id(memory_id)
        path = self.path_of(memory_id)
        try:
            # Only a regular file is opened: a FIFO would block (a save, under the lock) forever.
            data = read_regular(path)
            text = data.decode("utf-8")
        except FileNotFoundError:
            raise NotFoundError(f"No memory with id '{memory_id}'.") from None
        except NotRegularFile as exc:
            reason = "refusing to follow it" if exc.kind == "a symlink" else "refusing to open it"
            shown = "is a symlink" if exc.kind == "a symlink" else exc.strerror
            raise MemoryFileError(memory_path(memory_id), None, f"{shown}; {reason}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise MemoryFileError(
                memory_path(memory_id), None, f"cannot be read: {exc}"
            ) from None
        if indexed is not None and indexed[0] == hashlib.sha1(data, usedforsecurity=False).hexdigest():
            return Memory(**indexed[1]), text
        return loads(text, memory_id), text

    def read(self, memory_id: str) -> Memory:
        if self.store.view.unpublished(memory_path(memory_id)):  # a read beside a write of it
            if (stored := self.index.stored([memory_id]).get(memory_id)) is None:
                raise NotFoundError(f"No memory with id '{memory_id}'.")
            return Memory(**stored["data"])
        if self.store.holding or self.store.view.catalog() is not None:
            return self.read_with_text(memory_id)[0]
        if not self.store.committing():
            try:
                memory = self.read_with_text(memory_id)[0]
            except (MemoryFileError, NotFoundError):
                if not self.store.committing():
                    raise
            else:
                if not self.store.committing():
                    return memory
        # A commit is writing files over in place (or a crash left one unfinished), so what was
        # read may be half of one write. The lock waits for that writer, or finishes its work.
        # (A read that caught a file half-written finds the journal still there: it outlives
        # the writes by a git subprocess at least.)
        with self.store.locked():
            return self.read_with_text(memory_id)[0]

    def get(self, memory_id: str, *, include_deleted: bool = False) -> dict[str, Any]:
        self.check_not_moved(memory_id)
        memory = self.read(memory_id)
        if memory.is_deleted and not include_deleted:
            raise deleted_error(memory)
        data = memory.to_dict()
        pending = self.pending.count(memory_id)
        if pending:
            data["duplicate_count"] = (memory.duplicate_count or 1) + pending
        return data

    def check_not_moved(self, memory_id: str) -> None:
        """Refuse an id that ``sync`` moved on this clone (``store/moves.py``), naming both
        memories, until the user accepts the move (``moves.accept``)."""
        move = self.moves.get(memory_id)
        if move is not None:
            try:
                now: Memory | None = self.read(memory_id)
            except KBError:
                now = None
            raise ConflictError(refusal(move, now))

    def memory_ids(self) -> list[str]:
        return sorted(self.index.ids(), key=id_sort_key)

    # -- writing ----------------------------------------------------------------------------

    def _monitor_says_fresh(self) -> bool:
        """A warm process whose file monitor saw nothing relevant since its last check (its own
        commits' files aside): the index it holds describes the files, no per-file scan needed."""
        return self.monitor is not None and not self.monitor.changed() and self.index.has_searcher()

    @contextlib.contextmanager
    def transaction(self, sync: bool = True) -> Iterator[Transaction]:
        """A unit of work under the KB lock (``transaction.py``), refused while a merge, rebase,
        cherry-pick, revert or bisect is not concluded (store/gitstate.py); with ``sync``, the
        index is first brought up to date with the files, for an operation that looks memories up."""
        self._catalog_checked = False
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

    def check_learning(self, learning: Any, name: str = "learning") -> str:
        """``learning`` (or the field ``name``), refused when blank or over the KB's size limit."""
        if not isinstance(learning, str) or not learning.strip():
            raise InvalidInputError(f"{name} is empty: write what was learned (it is required and must not be blank).")
        check_unicode(learning, name)  # a lone surrogate is told, not a crash counting bytes
        size = len(learning.encode("utf-8"))
        if size > self.max_content:
            raise InvalidInputError(
                f"{name} is {size} bytes; the limit is {self.max_content} bytes. Split it into "
                "several memories or raise the limit with SLAYER_KB_MAX_CONTENT (bytes)."
            )
        return learning

    def save_memory(
        self,
        learning: str,
        linked_entities: Any,
        id: str | None = None,
        description: str | None = None,
        **engram_fields: Any,
    ) -> SaveResult:
        """SLayer's ``save_memory``: a note linked to entities or a SlayerQuery.

        An existing id is replaced whole; only ``created_at`` is kept. Optional Engram fields
        (title, type, project, scope, topic_key, session_id) may ride along.
        """
        # (the id has its own rules, which name a lone surrogate among the forbidden characters)
        for name, value in (("learning", learning), ("linked_entities", linked_entities),
                            ("description", description), *engram_fields.items()):
            check_unicode(value, name)
        self.check_learning(learning)
        description = check_description(description)
        # The same project and topic key whichever adapter saved them ("My-API " is "my-api").
        if "project" in engram_fields:
            engram_fields["project"] = engram.normalize_project(engram_fields["project"])
        if "topic_key" in engram_fields:
            engram_fields["topic_key"] = engram.normalize_topic_key(engram_fields["topic_key"])
        # A plain save looks nothing up in the index, so it skips the freshness scan.
        with self.transaction(sync=False) as tx:
            entities, warnings, query = self._link(linked_entities)
            return self._store_memory(tx, learning, entities, warnings, query, id, description, engram_fields)

    def _store_memory(
        self,
        tx: Transaction,
        learning: str,
        entities: list[str],
        warnings: list[str],
        query: dict[str, Any] | None,
        memory_id: str | None,
        description: str | None,
        extra: dict[str, Any],
    ) -> SaveResult:
        now = utc_now()
        action = "created"
        created_at = now
        updated_at = None
        if memory_id is None:
            memory_id = tx.next_auto_id()
        else:
            tx.check_new_id(memory_id)
            tx.require_committed(memory_path(memory_id))
            if self.path_of(memory_id).exists():
                with contextlib.suppress(MemoryFileError):
                    created_at = self.read(memory_id).created_at
                action = "replaced"
                updated_at = now
        memory = Memory(
            id=memory_id,
            learning=learning,
            description=description,
            entities=entities,
            query=query,
            created_at=created_at,
            updated_at=updated_at,
            **{k: v for k, v in extra.items() if v is not None},
        )
        self.pending.clear(memory_id)
        commit = tx.commit([memory_change(memory)], f"memory: save {memory_id}", {memory_id: memory})
        return SaveResult(memory_id, entities, warnings, action, memory.title, memory.type, commit=commit)

    # Engram's ``mem_save`` (ops/observations.py).
    save_observation = observations.save

    # Changing and forgetting memories (ops/changes.py).
    update = changes.update
    forget = changes.forget
    restore = changes.restore

    def projects(self) -> list[str]:
        names = (t.decode() if isinstance(t, bytes) else t for t in self.index.searcher().lexicon("project"))
        return sorted(name for name in names if name != NONE)

    # -- searching --------------------------------------------------------------------------

    # Words, meaning and entities fused (ops/finding.py, search/).
    search = finding.search

    list = finding.newest
    skipped = finding.skipped

    # -- catalog cascades (one commit each; see cascade.py) ---------------------------------

    def delete_model(self, model: str, datasource: str | None = None, *, force: bool = False) -> Any:
        from .ops import cascade

        return cascade.delete_model(self, model, datasource, force=force)

    def delete_datasource(self, datasource: str, *, force: bool = False) -> Any:
        from .ops import cascade

        return cascade.delete_datasource(self, datasource, force=force)

    def delete_leaf(self, leaf: str, *, force: bool = False) -> Any:
        from .ops import cascade

        return cascade.delete_leaf(self, leaf, force=force)

    def prune(self, dry_run: bool = False, *, force: bool = False) -> Any:
        from .ops import cascade

        return cascade.prune(self, dry_run=dry_run, force=force)

    # -- Engram's other tools ---------------------------------------------------------------

    def suggest_topic_key(
        self, type: str | None = None, title: str | None = None, content: str | None = None
    ) -> str:
        return engram.suggest_topic_key(type, title, content)

    timeline = finding.timeline
    stats = finding.stats

    def session_summary(
        self, content: str, project: str | None = None, session_id: str | None = None
    ) -> SaveResult:
        return self.save_observation(
            title=engram.session_summary_title(engram.normalize_project(project)),
            content=content,
            type="session_summary",
            project=project,
            session_id=session_id,
        )

    # Engram's session tools: the work is in sessions.py, each write one commit.

    def session_start(self, session_id: str, project: str | None = None, directory: str | None = None) -> dict[str, Any]:
        return sessions.start(self, session_id, project, directory)

    def session_end(self, session_id: str, summary: str | None = None) -> dict[str, Any]:
        return sessions.end(self, session_id, summary)

    def save_prompt(self, content: str, session_id: str | None = None, project: str | None = None) -> dict[str, Any]:
        return sessions.save_prompt(self, content, session_id, project)

    def capture_passive(
        self, content: str, session_id: str | None = None, project: str | None = None, source: str | None = None
    ) -> dict[str, Any]:
        return capture.capture_passive(self, content, session_id, project, source)

    def session_timeline(self, session_id: str) -> dict[str, Any]:
        return sessions.timeline(self, session_id)

    def context(
        self, project: str | None = None, scope: str | None = None, budget: int = CONTEXT_BUDGET,
        limit: int = CONTEXT_MEMORIES,
    ) -> str:
        """A compact markdown digest for the start of an agent's session: recent sessions and
        prompts, and the ``limit`` newest memories (``sessions.digest``)."""
        self.ensure_fresh()
        return sessions.digest(self, engram.normalize_project(project), scope, limit, budget)


def _example_changes(root: Path) -> list[Change]:
    """The shipped example KB's files, refusing to overwrite anything already in ``root``."""
    from importlib.resources import files

    source = files("slayer_kb.example")
    changes: list[Change] = []
    pending = [("", source)]
    while pending:
        prefix, folder = pending.pop()
        for item in folder.iterdir():
            rel = f"{prefix}{item.name}"
            if item.is_dir():
                if not item.name.startswith((".", "_")):
                    pending.append((rel + "/", item))
            elif item.name.endswith((".yaml", ".md")):
                if (root / rel).exists():
                    raise InvalidInputError(f"{root / rel} already exists; --example needs an empty folder.")
                changes.append(Change(rel, item.read_bytes()))
    return sorted(changes, key=lambda c: c.path)

