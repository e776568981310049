"""``KnowledgeBase``: every operation on a knowledge base. The CLI and the MCP server call its
methods and the objects it holds (``kb.history``, ``kb.team``, ``kb.interchange``: api/) and
only parse arguments and format results; each returns a typed result of ``core/results.py``
(or ``core/outcomes.py``).

Data flows one way: records (``core``) -> catalog and resolution (``catalog``) -> git store
(``store``) -> index (``search``) -> ``transaction`` -> ``context`` (a KB's parts and shared
reads, which the operations take) -> operations (``ops``) -> ``api`` -> this module.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .api.cascades import Cascades
from .api.engram import EngramTools
from .context import DEFAULT_DEDUP_WINDOW, DEFAULT_MAX_CONTENT, Context
from .core import engram
from .core.engram import EMPTY_CONTEXT
from .core.errors import InvalidInputError, KBError, ResolutionError
from .core.fileio import identity
from .core.ids import check_id
from .core.inputs import Undo, check_folder_named, check_unicode, given_folder
from .core.locate import MEMORIES_DIR, memory_path, not_a_kb
from .core.memory import Memory, utc_now
from .core.problems import cd_step, shown
from .core.session import check_session_id
from .core.text import kind_of
from .search import DEFAULT_LIMIT, FUSED
from .store.place import git_dir_refusal, ignores_state, inside_kb_refusal, kb_folder_refusal
from .store.repo import STATE_DIR, Change, find_toplevel, init_repository
from .store.worktree import head_blob

if TYPE_CHECKING:  # imported on use, as the results: a get builds none of them (docs/performance.md)
    from .api.history import History
    from .api.interchange import Interchange
    from .api.team import Team
    from .core.results import Hit, MaintenanceResult, SaveResult, SearchResult, SyncReport
    from .transaction import Transaction

MAX_ENGRAM_LIMIT = 20
GITIGNORE = f"{STATE_DIR}/\n"

__all__ = ["DEFAULT_LIMIT", "DEFAULT_MAX_CONTENT", "EMPTY_CONTEXT", "KnowledgeBase"]  # re-exported for the CLI and MCP


_RESTART = "(an MCP server: restart it from its client)."


class KnowledgeBase(Context, EngramTools, Cascades):
    """A knowledge base folder inside a git repository, with every operation on it."""

    def __init__(
        self, path: str | os.PathLike[str], *, author: str | None = None,
        dedup_window: timedelta = DEFAULT_DEDUP_WINDOW, max_content: int = DEFAULT_MAX_CONTENT,
    ) -> None:
        super().__init__(path, author=author, dedup_window=dedup_window, max_content=max_content)
        self.created = False  # set by init: whether it committed anything
        self._opened = self._identity()  # the folder and repository this process opened

    # The objects of kb.history, kb.team and kb.interchange are made on first use: their modules
    # import the results of their commands, dataclasses a command that uses none of them would
    # build for nothing (docs/performance.md).

    @functools.cached_property
    def history(self) -> History:
        """A memory's history from git, editing its file, and what a landed commit did (api/history.py)."""
        from .api.history import History

        return History(self)

    @functools.cached_property
    def team(self) -> Team:
        """``sync``, ``renumber``, ``merge``, ``rebase`` (api/team.py)."""
        from .api.team import Team

        return Team(self)

    @functools.cached_property
    def interchange(self) -> Interchange:
        """SLayer's and Engram's formats in and out (api/interchange.py)."""
        from .api.interchange import Interchange

        return Interchange(self)

    def _identity(self) -> tuple[tuple[int, int] | None, ...]:
        return identity(self.root, self.store.top / ".git")

    def replaced(self) -> str | None:
        """Why the KB's folder is not the one this process opened (deleted, moved away, or a KB
        or clone made anew at its path), or its state folder was set aside since (git put files
        there: ``GitStore.recheck_state``), with what to do; None while neither. A long-lived process
        (the warm server, the MCP server) asks before each command: its index, caches and file
        monitor describe the folder it opened, and answered from the old KB in the new one."""
        if not self.moved():
            untrusted = self.state_set_aside()
            if untrusted is None:
                return None
            if not self.moved():  # else replaced while its state was checked: that is what to say
                return f"{untrusted} {_RESTART}"
        now = self._identity()
        if now[0] is None:  # a KB made there next is not the one opened either: the same restart
            return f"{not_a_kb(str(self.root))} Then start this process again to open it {_RESTART}"
        return (f"The knowledge base at {self.root} is not the folder this process opened: it was deleted, "
                "moved or replaced since (a clone made again at its path). Start this process again to open "
                f"the one there now {_RESTART}")

    def moved(self) -> bool:
        """Whether the folder or repository at the KB's path is not the one this process opened
        (``replaced`` without its check of the state folder): two stats."""
        return self._identity() != self._opened

    def state_set_aside(self) -> str | None:
        """Why the state folder was set aside since the open (git put files there:
        ``GitStore.recheck_state``, checked here), or None."""
        return self.store.recheck_state()

    # -- creation ---------------------------------------------------------------------------

    @classmethod
    def init(cls, path: str | os.PathLike[str], *, author: str | None = None, example: bool = False) -> KnowledgeBase:
        """A new KB in ``path`` (and a git repository when it is in none), as one commit; with
        ``example``, a copy of the shipped example KB (an online shop's catalog and memories).
        A folder that is a KB already, or part of one (``memories/`` made by hand, no commit),
        gets what it lacks of these, as ``git init`` in a repository; ``created`` on the KB says
        whether there was anything to commit."""
        check_folder_named(path, "the knowledge base's folder", "slayer-kb init kb")
        root = Path(os.path.realpath(path))  # a symlink loop: refused by given_folder, not a traceback
        if (why := git_dir_refusal(root) or kb_folder_refusal(root) or inside_kb_refusal(root)) is not None:
            raise InvalidInputError(why)
        with given_folder(root, "the knowledge base's folder") as undo:
            own = find_toplevel(root) is None
            if own:
                init_repository(root)
            kb = cls(root, author=author)
            kb._create(example, undo, own)
        return kb

    def _create(self, example: bool, undo: Undo, own: bool) -> None:
        """``init``'s commit: the KB's ``.gitignore`` and ``memories/`` (or the example's files).
        On failure ``undo`` says whether what init added goes: not a commit published into the
        person's own repository (``own``: init made it), which stays with its files."""
        before = self.store.head()
        try:
            self.created = self._commit_first(example, own) is not None
        except BaseException:
            undo.wanted = own or self.store.head() == before
            self.close()
            raise

    def _commit_first(self, example: bool, own: bool) -> str | None:
        """What the folder lacks of a KB (a commit holding ``memories/``, ``.slayer-kb/`` ignored),
        committed; None when it lacks nothing: it is a KB already. ``own``: the repository is init's."""
        with self.store.locked():
            changes = []
            if (ignore := self._ignore_change(own)) is not None:
                changes.append(ignore)
            if example:
                changes.extend(_example_changes(self.root))
            elif not self.store.git("ls-tree", "-d", "HEAD", "--", self.store.repo_path(MEMORIES_DIR),
                                    check=False).stdout:  # none in HEAD (no HEAD: git says so on stderr)
                changes.append(Change(f"{MEMORIES_DIR}/.gitkeep", b""))
            message = "kb: initialise knowledge base" + (" from the example" if example else "")
            commit = self.store.commit(changes, message, self.author)
            self.index.sync()
            return commit

    def _ignore_change(self, own: bool) -> Change | None:
        """``.gitignore`` with ``.slayer-kb/`` added where it lacks it. Only a file committed as it
        stands is taken up, or none at all: init's commit must hold nothing of the person's that
        they have not committed (a file untracked, staged, edited, edited under a mark of git's index
        that hides it from git status, deleted by hand, or a symlink's target's text in place of the
        link); refused with the fix. A file with the line, not
        committed, is refused too: a clone of the KB would not ignore ``.slayer-kb/``. ``own``: no
        repository held the folder, so committing starts with ``git init``."""
        path = self.root / ".gitignore"
        shown_path, blob = shown(path), head_blob(self.store, ".gitignore")
        if not os.path.lexists(path):
            if blob is None:
                return Change(".gitignore", GITIGNORE.encode())
            raise InvalidInputError(
                f"{shown_path} is deleted, and HEAD has it: init would commit a .gitignore of just the line "
                f"'{GITIGNORE.strip()}', dropping the lines committed. Bring it back "
                f"({'; '.join([*cd_step(self.root), 'git checkout HEAD -- .gitignore'])}), then run init again.")
        state = "has changes not committed" if blob is not None else "is not committed"
        commit = "; ".join([*cd_step(self.root), *(["git init"] if own else []), "git add .gitignore", "git commit"])
        text = b"" if path.is_symlink() and not path.exists() else path.read_bytes()  # a link leading nowhere
        if ignores_state(text):
            # Left as it is: a mark in git's index hides its changes from this check, as from git status.
            if blob is not None and not self.store.uncommitted([".gitignore"], rewrites=False):
                return None
            raise InvalidInputError(
                f"{shown_path} has the line '{GITIGNORE.strip()}' but {state}, so a clone of the knowledge base would "
                f"not ignore {STATE_DIR}/: it is not a complete knowledge base until that file is committed. Commit it "
                f"({commit}), then run init again.")
        if path.is_symlink():
            raise InvalidInputError(
                f"{shown_path} is a symbolic link, which init does not replace, and the file it leads to lacks the line "
                f"'{GITIGNORE.strip()}': add that line to that file yourself, commit it ({commit}), then run init again.")
        # Rewritten: a file git's index marks is refused unless it holds its index's version.
        if blob is None or self.store.uncommitted([".gitignore"]):
            raise InvalidInputError(
                f"{shown_path} {state}, and init would commit it with the line '{GITIGNORE.strip()}' it adds: commit "
                f"it yourself first ({commit}), or add that line to it and commit it, then run init again.")
        return Change(".gitignore", text + (b"\n" if text and not text.endswith(b"\n") else b"") + GITIGNORE.encode())

    def keep_warm(self) -> None:
        """For a long-running process (the MCP server): watch the KB's folders with inotify, so
        that a read skips the per-file freshness scan while nothing changed. An edit made behind
        the process's back is seen by the next read, as without it. (Off where inotify is not.)
        It also loads the meaning model now, and holds the vectors as float32 (table.Table.expand)."""
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

    def release_thread(self) -> None:
        """Close what this thread keeps open for its reads (``Index.release_thread``)."""
        self.index.release_thread()

    def close(self) -> None:
        if self.monitor is not None:
            self.monitor.stop()
            self.monitor = None
        self.close_index()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- catalog and resolution -------------------------------------------------------------

    def _link(self, linked_entities: Any, held: list[str]) -> tuple[list[str], list[str], dict[str, Any] | None]:
        """SLayer's ``linked_entities``: a list of references, or a SlayerQuery mapping; ``held``:
        the links of the memory the save replaces (``Context.resolve_entities``)."""
        # On use: a SlayerQuery's checks are 7 ms of a start, and only a save links entities.
        from .catalog.refs import clean_query, flatten_refs, query_entities, split_references

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
            entities, warnings = self.resolve_entities(refs, held=held)
            return entities, warnings, None
        raise InvalidInputError(
            "linked_entities must be a list of entity references or a SlayerQuery object, "
            f"not {kind_of(linked_entities)}."
        )

    # -- reading ----------------------------------------------------------------------------

    def maintain(self) -> MaintenanceResult:
        """Compact what saves leave behind, where no one waits for it: merge the index's
        segments of at most MERGE_LIMIT documents into one (saves merge only small ones), pack
        the repository's loose objects, and keep the user's sentence-vector cache within its
        bound, its free pages given back (search/eviction.py)."""
        from .core.results import MaintenanceResult
        from .search import eviction

        segments, compacted = self.compact_index(everything=True)
        before = self.store.object_store()
        self.store.repack()  # git's own locking keeps it safe beside a commit
        after = self.store.object_store()
        return MaintenanceResult(
            (segments, compacted), (before.loose, after.loose), (before.packs, after.packs),
            (before.pack_bytes, after.pack_bytes), eviction.trim(vacuum=True),
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

    @property
    def sentences_in_background(self) -> bool:
        """Whether a save leaves the sentence vectors it lacks to a detached filler (daemon/
        sentences.py); False in that filler and in a process with a thread that makes them."""
        return self.index.background_vectors

    @sentences_in_background.setter
    def sentences_in_background(self, value: bool) -> None:
        self.index.background_vectors = value

    def as_background_job(self) -> None:
        """Open for a background job (the sentence filler, the upkeep): a commit a killed command left
        is a command run in the KB's to finish, since what it finds must reach a person."""
        self.store.recovers = False

    def sentence_coverage(self) -> tuple[int, int]:
        """(live memories with a final sentence vector: not a stand-in's, live memories)."""
        return self.index.sentence_coverage()

    def held_coverage(self) -> tuple[int, int] | None:
        """``sentence_coverage`` of the vector table this warm process holds, None when it holds
        none (loaded at its next use): never loads one."""
        return self.index.sentence_coverage() if self.index.vectors_loaded() else None

    def index_saved(self) -> tuple[int, int] | None:
        """Which save of the index is on disk, as its manifest's (mtime in ns, size), which
        every save rewrites; None while it has none. A filler waiting for saves to stop polls it."""
        try:
            st = (self.index.dir / "manifest.json").stat()
        except FileNotFoundError:
            return None
        return st.st_mtime_ns, st.st_size

    def fill_sentences(
        self, progress: Callable[[int, int], None] | None = None, *, locked: bool = False
    ) -> int:
        """Make the sentence vectors the memories lack (``Index.fill_sentences``), holding the
        KB lock while the index is read or written when ``locked`` (a detached filler, beside
        saves: a build in the background, stand-ins first when large); how many were made."""
        if locked:
            return self.index.fill_sentences(progress, guard=self.store.locked, background=True)
        return self.index.fill_sentences(progress)

    def mark_vectors_used(self) -> None:
        """Mark this KB's texts used today in the user's vector cache, once a day
        (``Index.mark_used``), holding the KB lock while the index is read: a detached filler
        started by a search that found every vector made."""
        self.index.mark_used(self.store.locked)

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> SyncReport:
        with self.store.locked():
            report = self.index.sync(progress=progress, full=True)
        self.problems = report.problems
        return report

    # -- writing ----------------------------------------------------------------------------

    def save_memory(
        self,
        learning: str,
        linked_entities: Any,
        id: str | None = None,
        description: str | None = None,
        *,
        reuse_id: bool = False,
        **engram_fields: Any,
    ) -> SaveResult:
        """SLayer's ``save_memory``: a note linked to entities or a SlayerQuery.

        An existing id is replaced whole; only ``created_at`` is kept. Optional Engram fields
        (title, type, project, scope, topic_key, session_id) may ride along. A new memory is
        refused an id a commit renamed away (``check_not_renamed``) unless ``reuse_id``.
        """
        # (the id has its own rules, which name a lone surrogate among the forbidden characters)
        for name, value in (("learning", learning), ("linked_entities", linked_entities),
                            ("description", description), *engram_fields.items()):
            check_unicode(value, name)
        # Private spans redacted in every text taken in, titled or not, as update's and mem_save's are.
        titled = isinstance(engram_fields.get("title"), str)
        learning = engram.redact_private(learning, trim=titled) if isinstance(learning, str) else learning
        if titled:
            # A titled memory is an observation's kind (save --title with --id or --query): its
            # type Engram's default, as mem_save's would be.
            engram_fields["type"] = engram_fields.get("type") or engram.DEFAULT_TYPE
        learning = self.check_learning(learning)
        description = engram.given_description(description)
        # The same project and topic key whichever adapter saved them ("My-API " is "my-api").
        if "project" in engram_fields:
            engram_fields["project"] = engram.given_project(engram_fields["project"])
        if "topic_key" in engram_fields:
            engram_fields["topic_key"] = engram.given_topic_key(engram_fields["topic_key"])
        if isinstance(engram_fields.get("type"), str):
            engram_fields["type"] = engram.given_type(engram_fields["type"])
        if isinstance(engram_fields.get("title"), str):
            engram_fields["title"] = engram.given_title(engram_fields["title"])
        # Checked as an observation's session is; a blank one is none given (a note has no default).
        if (session := engram_fields.get("session_id")) is not None:
            blank_text = isinstance(session, str) and not session.strip()
            engram_fields["session_id"] = None if blank_text else check_session_id(session, "session_id")
        # A plain save looks nothing up in the index, so it skips the freshness scan; a topic key
        # is looked up (``_store_memory``).
        with self.transaction(sync=bool(engram_fields.get("topic_key"))) as tx:
            replaced = self._replaced(id)
            # A topic key without an id revises the memory holding it (CLI.md's "revised").
            revised = None if id is not None or not engram_fields.get("topic_key") else tx.live_one(
                topic_key=engram_fields["topic_key"], project=engram_fields.get("project"),
                scope=engram.normalize_scope(engram_fields.get("scope")))
            held = replaced or revised
            entities, warnings, query = self._link(linked_entities, held.entities if held else [])
            return self._store_memory(tx, learning, entities, warnings, query, id, description, engram_fields,
                                      replaced, revised, reuse_id)

    def _replaced(self, memory_id: str | None) -> Memory | None:
        """The memory a save by id replaces; None for a new one (or a bad id, which the save
        refuses next)."""
        if memory_id is None:
            return None
        with contextlib.suppress(KBError, OSError):
            check_id(memory_id)
            if self.memory_exists(memory_id):
                return self.read(memory_id)
        return None

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
        replaced: Memory | None,
        revised: Memory | None,
        reuse_id: bool = False,
    ) -> SaveResult:
        from .core.results import SaveResult
        from .ops import observations, sessions
        from .transaction import memory_change

        now = utc_now()
        action = "created"
        created_at = now
        updated_at = None
        if memory_id is not None:
            observations.check_key_change(tx, memory_id, extra.get("topic_key"), extra.get("project"),
                                          extra.get("scope"), replaced)
        elif revised is not None:
            # The upsert an observation's key makes (CLI.md's "revised"), whether or not the save
            # has a title: otherwise the key would be held twice, which validate refuses. Only the
            # fields given replace the held memory's, as an observation's revise does.
            given = {k: v for k, v in dict(extra, description=description, query=query).items() if v is not None}
            return observations.revise(self, tx, revised, dict(learning=learning, **given), entities, warnings)
        if memory_id is None:
            memory_id = tx.next_auto_id()
        else:
            if reuse_id:
                self.check_reusable(memory_id)
            self.check_not_moved(memory_id)  # it would replace, or make again, a memory sync moved
            tx.check_new_id(memory_id)
            tx.require_committed(memory_path(memory_id))
            if self.path_of(memory_id).exists():
                # ``replaced`` is the file as read under this lock; None for one that does not parse.
                created_at = replaced.created_at if replaced is not None else now
                action = "replaced"
                updated_at = now
            else:
                if not reuse_id:
                    self.check_not_renamed(memory_id, "for a new memory, omit --id for the next auto id or choose another id")
                tx.check_given_number(memory_id)
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
        # Saved into a session, the session is made with it, as an observation's is.
        session = sessions.for_save(tx, memory.session_id, memory.project, now) if memory.session_id else []
        if replaced is not None and not session and memory.evolve(updated_at=replaced.updated_at) == replaced:
            # What the memory holds already: no commit that would move only updated_at.
            return SaveResult(memory_id, entities, warnings, action, memory.title, memory.type)
        self.pending.clear(memory_id)
        commit = tx.commit([memory_change(memory), *session], f"memory: save {memory_id}", {memory_id: memory})
        return SaveResult(memory_id, entities, warnings, action, memory.title, memory.type, commit=commit)

    # -- searching --------------------------------------------------------------------------

    def search(
        self, question: str | None = None, entities: list[str] | str | None = None,
        query: dict[str, Any] | None = None, *, datasource: str | None = None, type: str | None = None,
        project: str | None = None, scope: str | None = None, limit: int = DEFAULT_LIMIT,
        match: str = FUSED, full: bool = False,
    ) -> SearchResult:
        """Words, meaning and entities fused (ops/finding.py, search/)."""
        from .ops import finding  # on use, as every ops module here: a command loads only its own

        return finding.search(self, question, entities, query, datasource=datasource, type=type, project=project,
                              scope=scope, limit=limit, match=match, full=full)

    def newest(
        self, *, type: str | None = None, project: str | None = None, scope: str | None = None,
        limit: int | None = 20,
    ) -> list[Hit]:
        """Live memories, newest first."""
        from .ops import finding

        return finding.newest(self, type=type, project=project, scope=scope, limit=limit)

    def unmatched(self, *, type: str | None = None, project: str | None = None, scope: str | None = None,
                  command: str = "list") -> list[str]:
        """A warning when one of ``newest``'s (or ``command``'s) filters matches no memory at all."""
        from .ops import finding

        return finding.unmatched(self, type=type, project=project, scope=scope, action=command)

    def context_unmatched(self, text: str, project: str | None, scope: str | None, command: str) -> list[str]:
        """For a ``context`` digest ``text``: when it holds no memory (the empty digest, with any
        skipped files' lines after it) and a filter matches no memory at all, the warning that says
        so, as ``list`` says it (``unmatched``)."""
        if not text.startswith(EMPTY_CONTEXT):
            return []
        return self.unmatched(project=project, scope=scope, command=command)

    def skipped(self) -> list[str]:
        """The memory files the last read skipped, as warnings."""
        from .ops import finding

        return finding.skipped(self)


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

