"""``Context``: a knowledge base's parts (``Parts``, parts.py) and the reads and checks every
operation shares: reading a memory, resolving references, bringing the index up to date, and the
transaction every write runs in.

The operations (``ops``) take a ``Context``; ``KnowledgeBase`` (kb.py) is the ``Context`` with
every operation as a method, so an operation never calls back into the layer that called it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.errors import (
    ConflictError,
    InvalidIdError,
    InvalidInputError,
    KBError,
    MemoryFileError,
    NotFoundError,
    ResolutionError,
    unreadable,
)
from ..core.fileio import NotRegularFile, TooLarge, read_regular
from ..core.ids import check_existing_id, check_link_id, is_valid_id, no_memory
from ..core.inputs import checked_learning
from ..core.locate import MEMORIES_DIR, linked_id, memory_path
from ..core.memory import MAX_FILE_BYTES, Memory, loads, too_large
from ..core.problems import command, shown, words
from ..store import mergemark
from ..store.aside import left_by_a_stopped_command
from ..store.moves import note, refusal
from ..store.regiven import regiven_by_merge
from ..store.worktree import missing_by_hand
from .parts import Parts

if TYPE_CHECKING:
    from ..catalog.resolve import Resolver
    from ..core.results import SyncReport
    from ..transaction import Transaction

T = TypeVar("T")

Indexed = tuple[str | None, dict[str, Any]]
"""What the index holds for a memory file: its content hash and its stored memory."""


class Context(Parts):
    """A knowledge base: its parts (``Parts``) and the reads every operation shares."""

    def memory_exists(self, memory_id: str) -> bool:
        """Whether ``memory_id`` is an id whose file is there (never a path outside memories/)."""
        return is_valid_id(memory_id) and (self.memories_dir / f"{memory_id}.yaml").is_file()

    def resolver(self, *, given: bool = False) -> Resolver:
        """``given``: references a user or agent gives now (to save, update or search by), in
        which ``memory:<id>`` of an id sync moved on this clone refuses as a command on that id
        does: the link would reach the memory the id names now, not the one they mean."""
        # On use, as the catalog: a command that reads memories by id needs neither (docs/performance.md).
        from ..catalog.resolve import Resolver

        if given:
            return Resolver(self.catalog, memory_exists=self.memory_exists, check_id=self._check_given_link)
        return Resolver(self.catalog, memory_exists=self.memory_exists)

    def _check_given_link(self, memory_id: str) -> None:
        check_link_id(memory_id)
        self.check_not_moved(memory_id)

    def resolve_entities(self, refs: list[str] | str, *, given: bool = True,
                         held: Collection[str] = ()) -> tuple[list[str], list[str]]:
        """Resolve references strictly: every one must resolve, or ``ResolutionError``;
        ``given`` as for ``resolver`` (False for the references a memory file holds). ``held``:
        the links the memory being rewritten holds already, kept as its file has them (a
        colleague's ``memory:<id>`` whose id sync moved on this clone is still theirs)."""
        from ..catalog.refs import flatten_refs, split_references  # on use: as the resolver

        items = split_references(refs) if isinstance(refs, str) else flatten_refs(refs)
        resolver = self.resolver(given=given)
        kept = self.resolver() if given and held else resolver
        entities: list[str] = []
        warnings: list[str] = []
        for ref in items:
            try:
                resolution = (kept if ref.strip() in held else resolver).resolve(ref)
            except NotFoundError:
                if (linked := linked_id(ref.strip())) is not None:
                    self.check_gone(linked)  # a link to a memory a commit took away: what became of it, as get says
                raise
            except ResolutionError as exc:
                if meant := resolver.link_meant(ref):  # a memory's id given as an entity ('12'): SLayer's refusal first
                    raise ResolutionError(f"{exc}{meant}", exc.suggestions) from None
                broken = [problem for problem in self.catalog.problems if problem.skipped]
                if not broken:
                    raise
                # The name may be in a catalog file that was skipped: say so, or the fix is hidden.
                names = set(re.split(r"\W+", ref))
                named = next((p for p in broken if p.path.stem in names), broken[0])
                raise ResolutionError(
                    f"{exc} The catalog skipped {len(broken)} file(s) it could not use, such as "
                    f"{named.shown(self.root)}; fix it ('{command(self.root)} validate' lists every problem).",
                    exc.suggestions,
                ) from None
            warnings.extend(resolution.warnings)
            if resolution.entity not in entities:
                entities.append(resolution.entity)
        if given:  # a link given now to a forgotten memory (one the memory held already is not news)
            warnings.extend(self.memory_links([e for e in entities if e not in held])[1])
        return entities, warnings

    def memory_links(self, entities: list[str]) -> tuple[list[str], list[str]]:
        """The ``memory:<id>`` of ``entities`` whose memory is live, and why each whose memory is
        soft-deleted is in no answer, with how to bring it back (the link itself stays until the
        memory is restored or gone): each memory read once."""
        live, said = [], []
        for entity in entities:
            if (memory_id := linked_id(entity)) is not None:
                try:
                    memory = self.read(memory_id)
                except KBError:
                    continue
                if not memory.is_deleted:
                    live.append(entity)
                    continue
                said.append(f"{entity} names a memory deleted at {memory.deleted_at}, which no search or read "
                            f"shows: bring it back with '{command(self.root)} restore {words(memory.id)}' (MCP: mem_restore).")
        return live, said

    def ensure_fresh(
        self, progress: Callable[[int, int], None] | None = None, trust_monitor: bool = True, reading: bool = True
    ) -> SyncReport | None:
        """Bring the index up to date with the files if anything changed them. ``trust_monitor``
        False checks the files even when this process's file monitor saw no change (a watcher's
        periodic check, for changes a network file system reports no event for). ``reading``: for
        a command's answer, which says when it reads a half-merged work tree (``tell_half_merged``)."""
        self.check_folders()
        if reading:
            self.tell_half_merged()
        if self.store.view.catalog() is not None or (trust_monitor and self._monitor_says_fresh()):
            # A warm process whose file monitor saw nothing relevant (for a read beside a write,
            # nothing but that write's files): no per-file scan, and its catalog is current.
            return None
        self.recheck_catalog()
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

    def tell_half_merged(self) -> None:
        """Warn (``tell``) that what is read comes from the files a killed ``slayer-kb merge`` left
        (``mergemark.read_warning``): a write refuses with the same words, a read answers."""
        if (warning := mergemark.read_warning(self.store)) is not None:
            self.tell(warning)

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
        """Why the memory's file is not there and the fix (``check_gone``), or no such memory."""
        self.check_gone(memory_id)
        return no_memory(memory_id, self.memory_exists, listed=self.file_ids)

    def file_ids(self) -> list[str]:
        """The ids of the memory files there are (an error's hint, ``meant_id``'s ``listed``: a
        directory listing, no index)."""
        try:
            names = os.listdir(self.memories_dir)
        except OSError:
            return []
        return [name[:-5] for name in names if name.endswith(".yaml")]

    def check_gone(self, memory_id: str, walked: bool = False) -> None:
        """Raise ``NotFoundError`` saying why the memory's file is not there, and the fix: moved or
        deleted by hand and not committed (``missing_by_hand``, a git process), under another
        extension, or gone by a commit (``_gone_by_commit``); return when there is no sign of it
        (no such memory). ``walked``: the caller knows no commit's deletion explains it (HEAD
        holds the file)."""
        if (said := missing_by_hand(self.store, memory_path(memory_id)) or self._misnamed(memory_id)) is not None:
            raise NotFoundError(said)
        if not walked and (gone := self._gone_by_commit(memory_id)) is not None:
            raise gone

    def _gone_by_commit(self, memory_id: str) -> NotFoundError | None:
        """What a command given ``memory_id`` says when a commit deleted its file: renamed
        (``renamed_away``: the id it has now), folded into the memory another side saved first
        (``folded_by``: that id), moved by hand to another id (``git mv`` committed: that id), or
        forgotten for good (the ``restore --rev`` that brings it back); None when no
        commit deleted it."""
        # On use, as every history read of this module: a read of a memory that is there needs none.
        from ..store.foldlog import held_fold, held_fold_said
        from ..store.renames import deletions

        if not (last_two := deletions(self.store, memory_id)):  # one walk of the history for both
            # No commit on the history git follows deleted it: one may tell of its fold all the same,
            # or a merge that took it away as a rename of a memory folded on the other side.
            if (folding := self._fold_told(memory_id)) is None:
                if (held := held_fold(self.store, memory_id)) is None:
                    return None
                return self._folded_said(memory_id, held[0], f"was {held_fold_said(*held)}")
            last_two = [folding]
        if (renamed := self.renamed_away(memory_id, last_two=last_two)) is not None:
            return NotFoundError(renamed)
        deleting = last_two[0]
        if (fold := self.folded_in(memory_id, deleting)) is not None:
            # One memory kept of two (a topic key, or the same save): it goes on there. Not "saved
            # first": a merge keeps the one the team holds, which may be the later (folds.Standing).
            return self._folded_said(memory_id, fold[0], f"was {fold[1]}")
        if (moved := self.moved_away(memory_id, deleting)) is not None:  # 'restore --rev' would copy it
            return NotFoundError(moved)
        # Headed with SLayer's whole answer (to a forget of a forgotten memory: "No memory with id '3'.").
        said = f"No memory with id '{memory_id}'. It was forgotten for good (not soft-deleted) in commit {deleting[:12]}"
        fix = f"'{command(self.root)} restore {words(memory_id)} --rev {deleting[:12]}~1'"
        return NotFoundError(f"{said}; bring back its last version with {fix}.",
                             tool_message=f"{said}; the tools cannot bring it back, a person can: {fix}.")

    def _folded_said(self, memory_id: str, kept: str, said: str) -> NotFoundError:
        """The error of ``memory_id``, folded into ``kept`` (``said``: how): that id, or where it went since."""
        if self.memory_exists(kept):
            return NotFoundError(f"No memory with id '{memory_id}'. It {said}; use that id.")
        # Renamed since: the id it has now, not the one the fold gave it.
        went = self.went_on(kept) or (f"no memory holds now: '{command(self.root)} get {words(kept)}' says what "
                                      "became of it")
        return NotFoundError(f"No memory with id '{memory_id}'. It {said}, which {went}.")

    def went_on(self, memory_id: str) -> str:
        """Where the memory of ``memory_id``, an id no memory holds now, went (a fold's target
        renamed since): "was renamed to 'kb.b' in commit ...: use that id"; "" when not renamed to
        an id a memory holds."""
        from ..store.renames import renamed_away

        away = renamed_away(self.store, memory_id)
        if away is None or away.before is not None or away.forgotten is not None:
            return ""
        return "was renamed " + ", then ".join(f"to '{new}' in commit {commit[:12]}" for new, commit in away.moves) + (
            ": use that id")

    def _fold_told(self, memory_id: str) -> str | None:
        """The last commit of HEAD's history whose message tells of a fold of ``memory_id``
        (``_fold_in``), where no commit git's history of its file follows deleted it: a merge's
        commit that is the fold of a rename the other side made (``carry.record_held_renames``),
        a squash of a branch that folded it (its message lists the fold's); None when none does."""
        if self.store.head() is None:  # a branch with no commit yet tells of none
            return None
        out = self.store.git("log", "--format=%H%x00%B%x00", "--fixed-strings", f"--grep={memory_id} into ", "HEAD",
                             "--").stdout.decode("utf-8", "replace").split("\0")
        return next((commit.strip() for commit, message in zip(out[::2], out[1::2], strict=False)
                     if _fold_in(message, memory_id) is not None), None)

    def folded_in(self, memory_id: str, commit: str) -> tuple[str, str] | None:
        """The id ``commit`` folded ``memory_id`` into (``_fold_in``) and the words that say so
        ("merged into '101' in commit ..."), or None when it is no fold of it."""
        message = self.store.objects.commit(commit).partition(b"\n\n")[2].decode("utf-8", "replace")
        if (fold := _fold_in(message, memory_id)) is None:
            return None
        kept = fold[0][memory_id]
        alike = "as the same save" if fold[1] else "under the same topic key"
        return kept, f"merged into '{kept}' in commit {commit[:12]}, the memory kept {alike}"

    def moved_away(self, memory_id: str, deleting: str) -> str | None:
        """What any command given ``memory_id`` says when ``deleting``, the commit that last
        deleted its file, moved it by hand (``git mv``, committed) to another id: that id, or that
        none holds it now, or that its name is no id; else None."""
        from ..store.guesses import moved_by_hand

        moved = moved_by_hand(self.store, f"{deleting}^", "HEAD", {memory_id}, held=False).get(memory_id)
        if moved is None:
            return None
        said = f"No memory with id '{memory_id}'. It was moved by hand to "
        if not is_valid_id(moved):
            return (f"{said}{MEMORIES_DIR}/{moved}.yaml in commit {deleting[:12]}, a name no id has, so no command reads "
                    f"it: move it back with git mv {words(f'{MEMORIES_DIR}/{moved}.yaml', memory_path(memory_id))}, "
                    "and commit.")
        said += f"'{moved}' in commit {deleting[:12]} (its file renamed, with no '{command(self.root)} rename')"
        if self.memory_exists(moved):
            return f"{said}; use that id."
        return f"{said}, which no memory holds now: '{command(self.root)} get {words(moved)}' says what became of it."

    def renamed_away(self, memory_id: str, deleting: str | None = None, last_two: list[str] | None = None
                     ) -> str | None:
        """What any command given ``memory_id`` says when the commit that last deleted its file
        (``deleting``, found when not given; ``last_two``, the last two when read already) renamed
        it: the id it has now (``store.renames.renamed_away``), or that it was then forgotten and
        the way back; else None."""
        from ..store.renames import renamed_away, renamed_in

        away = renamed_away(self.store, memory_id, deleting, last_two)
        if away is None:
            return None
        moves = "was renamed " + ", then ".join(f"to '{new}' in commit {commit[:12]}" for new, commit in away.moves)
        if forgot := away.before:
            # The rename moved another memory given the id since; the one asked for was renamed
            # away before it (a restore of it would make a second copy), or forgotten.
            if first := renamed_in(self.store, forgot).get(memory_id):
                return (f"Memory '{memory_id}' was renamed to '{first}' in commit {forgot[:12]}, and the id then "
                        f"given to another memory, which {moves}: give '{first}' for the first, "
                        f"'{away.moves[-1][0]}' for the other.")
            return (f"Memory '{memory_id}' was forgotten for good in commit {forgot[:12]}, and the id then given to "
                    f"another memory, which {moves}: bring the forgotten one's last version back with "
                    f"'{command(self.root)} restore {words(memory_id)} --rev {forgot[:12]}~1'.")
        said, final = f"Memory '{memory_id}' {moves}", away.moves[-1][0]
        if away.forgotten and (fold := self.folded_in(final, away.forgotten)) is not None:
            # Not forgotten: folded into another memory, which goes on.
            return f"{said}, which was {fold[1]}" + (": use that id." if self.memory_exists(fold[0]) else
                                                 f"; '{command(self.root)} get {words(fold[0])}' says what became of it.")
        if away.forgotten:
            return (f"{said}, and then forgotten for good in commit {away.forgotten[:12]}: bring its last version "
                    f"back with '{command(self.root)} restore {words(final)} --rev {away.forgotten[:12]}~1'.")
        with contextlib.suppress(KBError):  # unreadable: the command given the new id says why
            if self.read_with_text(final)[0].deleted_at:
                return (f"{said}, and then forgotten (soft-deleted): bring it back with "
                        f"'{command(self.root)} restore {words(final)}' (MCP: mem_restore).")
        return f"{said}: use that id."

    def renamed_to(self, memory_id: str, moving: str = "", renamed: Collection[str] | None = None
                   ) -> tuple[str, str] | None:
        """The id a commit renamed ``memory_id`` to (followed to the one it has now) and that
        commit, when that memory still exists (``renamed_away``); None when never renamed, renamed
        and then forgotten for good (the id names nothing), or going back to ``moving`` (the
        memory a rename gives the id). ``renamed``: every id a commit records a rename of
        (``renames.renamed_ids``), read once for many ids."""
        from ..store.renames import ever_renamed, renamed_away

        if not (memory_id in renamed if renamed is not None else ever_renamed(self.store, memory_id)):
            return None
        away = renamed_away(self.store, memory_id)
        if away is None or away.forgotten or away.before or away.moves[-1][0] == moving:
            return None
        return away.moves[-1][0], away.moves[0][1]

    def renamed_ids(self) -> set[str]:
        """Every id a commit of HEAD's history records a rename of (for ``renamed_to``)."""
        from ..store.renames import renamed_ids

        return renamed_ids(self.store)

    def check_reusable(self, memory_id: str, moving: str = "") -> None:
        """Refuse ``--reuse-id`` for an id no rename moved to a memory that is still there
        (``renamed_to``): the option would do nothing it says."""
        if self.renamed_to(memory_id, moving) is None:
            raise InvalidInputError(f"--reuse-id gives an id a rename moved to another memory, and no rename moved "
                                    f"'{memory_id}' to one that is still there: drop --reuse-id.")

    def check_not_renamed(self, memory_id: str, instead: str, moving: str = "") -> None:
        """Refuse to give an id a commit renamed away to a memory that still exists
        (``renamed_to``): agents told the id, and links to it made where the rename has not
        arrived (which a sync points at the new id), mean that memory. ``instead``: what a person
        does for a memory of its own (the way to reuse the id on purpose, ``--reuse-id``, follows);
        ``moving``: the memory a rename gives the id (taking it back is no reuse)."""
        if (went := self.renamed_to(memory_id, moving)) is None:
            return
        final, commit = went
        said = (f"Memory id '{memory_id}' was renamed to '{final}' (commit {commit[:12]}): agents told "
                f"'{memory_id}', and links to it made on clones the rename has not reached (a sync points those "
                f"at '{final}'), mean that memory. To change it, use '{final}'; {{}}")
        raise InvalidIdError(
            said.format(f"{instead}; to give '{memory_id}' to it on purpose, add --reuse-id."),
            tool_message=said.format("for a new memory, omit the id for the next auto id or choose another id "
                                     f"(a person can reuse '{memory_id}' with '{command(self.root)} save "
                                     "--reuse-id')."))

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
        self.tell_half_merged()
        self.check_not_moved(memory_id)
        memory = self.read_with_fix(memory_id)
        if memory.is_deleted and not include_deleted:
            raise deleted_error(memory, self.root)
        if (regiven := regiven_by_merge(self.store, memory_id)) is not None:
            # Not silently another memory: an agent told the id before the rename meant that one.
            self.tell(f"memory id '{memory_id}' was renamed to '{regiven[0]}' in commit {regiven[1][:12]}; a merge "
                      f"brought in another memory under '{memory_id}' from commits made without that rename, shown "
                      f"here. The memory '{memory_id}' named before is '{regiven[0]}' now: use that id for it.")
        pending = self.duplicates_pending(memory_id)
        return memory.evolve(duplicate_count=(memory.duplicate_count or 1) + pending) if pending else memory

    def read_with_fix(self, memory_id: str, explain: bool = True) -> Memory:
        """``read`` for a command a person runs on this memory (get, update): a file that cannot
        be read says how to fix it; ``explain``: one that is not there too (``read_with_text``)."""
        try:
            return self.read(memory_id, explain=explain)
        except MemoryFileError as exc:
            raise self._with_fix(memory_id, exc) from None

    def read_text_with_fix(self, memory_id: str) -> tuple[Memory, str]:
        """``read_with_text`` for a command a person runs on this memory (show): a file that
        cannot be read says how to fix it, as ``read_with_fix`` says it."""
        try:
            return self.read_with_text(memory_id, explain=True)
        except MemoryFileError as exc:
            raise self._with_fix(memory_id, exc) from None

    def _with_fix(self, memory_id: str, exc: MemoryFileError) -> MemoryFileError:
        """``exc``, the problem of memory ``memory_id``'s file now, with how to fix it."""
        path = self.path_of(memory_id)
        if exc.names_fix:
            return exc
        if path.is_symlink() or not path.is_file():  # a link, a FIFO, a folder: nothing to edit
            return MemoryFileError(exc.path, exc.line, f"{exc.message}; move it out of {MEMORIES_DIR}/ by hand, "
                                   "then retry", names_fix=True)
        problem = exc.message.rstrip(".")
        # The person's fix runs from where they ran the command (--kb from elsewhere).
        run = command(self.root)
        fix = f"Edit {shown(path)} to fix it, then check it with '{run} validate'"
        edit = f"(or run '{run} edit {words(memory_id)}', which checks it on close)"
        return MemoryFileError(exc.path, exc.line, f"{problem}. {fix} {edit}.",
                               tool_message=f"{problem}. Edit {exc.path} to fix it, then check it with "
                                            "'slayer-kb validate'.")

    def check_not_moved(self, memory_id: str) -> None:
        """Refuse an id that ``sync`` moved on this clone (``store/moves.py``), naming both
        memories, until the user accepts the move (``moves.accept``)."""
        move = self.moves.get(memory_id)
        if move is not None:
            raise ConflictError(refusal(move, self._named_now(memory_id), command(self.root), self._went(move.new)))

    def moved_notes(self, memory_id: str) -> list[str]:
        """For a command that reads an id's history (``show``, ``log``, ``timeline``) and so
        answers about what the id names here: the move ``check_not_moved`` would refuse, said
        as a note (``store/moves.py``); none when the id never moved on this clone."""
        move = self.moves.get(memory_id)
        return [] if move is None else [note(move, self._named_now(memory_id), command(self.root), self._went(move.new))]

    def _went(self, memory_id: str) -> str | None:
        """None for an id a memory holds, else where its memory went (``went_on``)."""
        return None if self.memory_exists(memory_id) else self.went_on(memory_id)

    def _named_now(self, memory_id: str) -> Memory | None:
        try:
            return self.read(memory_id)
        except KBError:
            return None

    def _monitor_says_fresh(self) -> bool:
        """A warm process whose file monitor saw nothing relevant since its last check (its own
        commits' files aside): the index it holds describes the files, no per-file scan needed."""
        return self.monitor is not None and not self.monitor.changed() and self.index.has_searcher()

    def refuse_during_git_operation(self) -> None:
        """Refuse (ConflictError) a write while a merge, rebase, cherry-pick, revert or bisect is
        not concluded: said before a command asks for anything (``edit``'s editor)."""
        self.store.refuse_during_git_operation()

    @contextlib.contextmanager
    def transaction(self, sync: bool = True) -> Iterator[Transaction]:
        """A unit of work under the KB lock (``transaction.py``), refused while a merge, rebase,
        cherry-pick, revert or bisect is not concluded (store/gitstate.py); with ``sync``, the
        index is first brought up to date with the files, for an operation that looks memories up."""
        self.recheck_catalog()
        self.check_folders()
        with self.store.locked():
            self.store.refuse_during_git_operation()
            if (stopped := left_by_a_stopped_command(self.store)) is not None:
                self.tell(stopped)
            if sync and not self._monitor_says_fresh():
                self.problems = self.index.catch_up().problems
            from ..transaction import Transaction  # on use: a command that writes nothing needs none of it

            tx = Transaction(self)
            try:
                yield tx
            except BaseException:
                tx.put_aside_back()  # a command that fails leaves the user's files where they were
                raise
            finally:
                tx.close()

    def check_learning(self, learning: Any, name: str = "learning", tool_name: str | None = None) -> str:
        """``learning`` (or the field ``name``), refused when blank or over the KB's size limit
        (``core.inputs.checked_learning``)."""
        return checked_learning(learning, self.max_content, name, tool_name)


def deleted_error(memory: Memory, root: Path) -> NotFoundError:
    """Why a soft-deleted memory is not shown, and how to bring it back: with the command (run
    from where the user is: ``command``), or for an MCP client, which has no shell, with the tool."""
    said = f"Memory '{memory.id}' was deleted at {memory.deleted_at}; bring it back with"
    return NotFoundError(f"{said} '{command(root)} restore {words(memory.id)}'.",
                         tool_message=f"{said} mem_restore(id: {memory.id}).")


def _fold_in(message: str, memory_id: str) -> tuple[dict[str, str], bool] | None:
    """The fold of ``memory_id`` a commit's ``message`` tells of (``core.merging.folded_by``): its
    subject, or a line of its body as a squash lists the commits it took in (git's indented, a
    forge's after "* "); None when none does."""
    from ..core.merging import folded_by

    subject, _, body = message.partition("\n")
    for line in (subject, *(line.strip().removeprefix("* ") for line in body.splitlines())):
        if (fold := folded_by(line)) is not None and memory_id in fold[0]:
            return fold
    return None
