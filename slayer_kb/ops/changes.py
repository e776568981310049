"""Changing and forgetting memories: Engram's ``mem_update`` (only the fields given), ``forget``
(hard: the file goes and ``memory:<id>`` is stripped from every other memory, in one commit; soft:
``deleted_at`` is set), ``restore`` of a soft-deleted memory, and ``rename`` (the file moved and
every ``memory:<old>`` pointed at the new id, in one commit, as ``renumber`` moves an id)."""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import engram
from ..core.errors import (
    ConflictError,
    InvalidIdError,
    InvalidInputError,
    MemoryFileError,
    NotFoundError,
    ResolutionError,
    UsageError,
)
from ..core.ids import (
    NewIdAdvice,
    check_existing_id,
    check_id,
    check_new_id,
    check_no_clash,
    fold_id,
    free_variant,
)
from ..core.inputs import check_unicode
from ..core.locate import memory_link, memory_path
from ..core.memory import Memory, utc_now, with_entities
from ..core.problems import cd_step, command, shown, words
from ..core.results import ChangeResult, ForgetResult, RenameResult
from ..store.renames import trailer
from ..store.repo import Change
from ..store.worktree import head_blob
from ..transaction import memory_change
from . import observations, unreadlinks
from .finding import deleted_error
from .history import forgotten_error
from .projects import project_warnings
from .renumber import moved, rewrote_note
from .schema_words import memory_times
from .timechecks import kept_times

if TYPE_CHECKING:
    from ..context import Context


def update(kb: Context, memory_id: str, *, force: bool = False, **fields: Any) -> ChangeResult:
    """Engram's ``mem_update``: change only the given fields of a live memory. ``force``:
    rewrite it from HEAD's version even if it holds uncommitted work (kept as .orig)."""
    check_existing_id(memory_id, "to change")
    kb.check_not_moved(memory_id)
    given = {k: v for k, v in fields.items() if v is not None}
    for name, value in given.items():
        check_unicode(value, name)
    allowed = {"title", "learning", "type", "description", "project", "scope", "topic_key", "entities"}
    unknown = set(given) - allowed
    if unknown:
        raise InvalidInputError(
            f"Cannot update {', '.join(sorted(unknown))}; fields: {', '.join(sorted(allowed))}."
        )
    if not given:
        # Named as each caller gives them: the command's options, mem_update's parameters.
        raise UsageError(
            "Nothing to update: give at least one of --title, --learning, --type, --description, --project, "
            "--scope, --topic-key, -e.",
            tool_message="Nothing to update: give at least one of title, content, type, project, scope, topic_key.")
    refs = given.get("entities", ())
    for index, ref in enumerate([refs] if isinstance(refs, str) else refs):
        # A blank reference (an empty shell variable) would unlink every entity, unasked.
        if isinstance(ref, str) and not ref.replace(",", "").strip():
            raise ResolutionError(
                f"entities[{index}]: entity reference is empty. Give a reference such as 'orders.amount', or drop "
                f"the item; to unlink every entity, delete them with '{command(kb.root)} edit {words(memory_id)}'."
            )
    with kb.transaction() as tx:

        def plan() -> tuple[list[Change], tuple[dict[str, Any], list[str], bool]]:
            memory = kb.read_with_fix(memory_id)
            if memory.is_deleted:
                raise deleted_error(memory, kb.root)
            changes: dict[str, Any] = {}
            warnings: list[str] = []
            if "title" in given:
                changes["title"] = engram.given_title(given["title"])
            if "learning" in given:
                # Taken as a save takes it: an observation's (titled) trimmed, a note's as given.
                titled = isinstance(changes.get("title", memory.title), str)
                changes["learning"] = kb.check_learning(engram.redact_private(given["learning"], trim=titled),
                                                        tool_name="content")
            if "type" in given:
                changes["type"] = engram.given_type(given["type"])
                warnings.extend(engram.type_warnings(given["type"]))
            if "description" in given:
                changes["description"] = engram.given_description(given["description"])
            if "project" in given:
                changes["project"] = engram.given_project(given["project"])
                warnings.extend(project_warnings(kb, changes["project"]))
            if "scope" in given:
                changes["scope"] = engram.normalize_scope(given["scope"])
                warnings.extend(engram.scope_warnings(given["scope"]))
            if "topic_key" in given:
                changes["topic_key"] = engram.given_topic_key(given["topic_key"])
                warnings.extend(engram.topic_key_warnings(given["topic_key"]))
            if "entities" in given:
                if memory.query is not None:
                    raise _query_links(memory, command(kb.root))
                changes["entities"], more = kb.resolve_entities(given["entities"], held=memory.entities)
                warnings.extend(more)
            for name, value in changes.items():
                held = getattr(memory, name)
                # A write trims an observation's text and a title; a file's `learning: |` ends in a
                # line break. The text held, given back trimmed, is the same text: kept as the file spells it.
                if isinstance(value, str) and isinstance(held, str) and held.strip() == value:
                    changes[name] = held
            updated = memory.evolve(**changes, duplicate_count=observations.folded_duplicates(kb, memory))
            if updated == memory:
                # The values it holds already: no commit that would move only updated_at. The file
                # is still planned, so that uncommitted work in it is refused (or set aside) as ever.
                return [memory_change(memory)], (changes, warnings, False)
            updated.updated_at = utc_now()
            _kept_times(kb, updated)
            observations.check_key_change(tx, memory_id, updated.topic_key, updated.project, updated.scope, memory)
            if memory.revision_count is not None:  # Engram's UpdateObservation: +1 per update made
                updated.revision_count = memory.revision_count + 1
            return [memory_change(updated)], (changes, warnings, True)

        _require_in_head(kb, memory_id, "update")
        planned, (changes, warnings, changed), kept = tx.rewrite(plan, force)
        if changed:
            tx.commit(planned, f"memory: update {memory_id} ({', '.join(sorted(changes))})")
            kb.fold_duplicates(memory_id)
    return ChangeResult(kb.get(memory_id).to_dict(), "updated" if changed else "unchanged", warnings, kept)


def _require_in_head(kb: Context, memory_id: str, verb: str) -> None:
    """Refuse, ``--force`` or not, a command about a memory whose file HEAD lacks (written by hand,
    never committed): its only version is the person's, and --force, which sets it aside to work
    from HEAD's, would leave no memory to work on."""
    path = memory_path(memory_id)
    # A symlink or a folder is no memory file to commit: reading it says what it is.
    if _is_regular(kb.root / path) and head_blob(kb.store, path) is None:
        run = cd_step(kb.root)
        raise ConflictError(
            f"{path} was never committed (HEAD lacks it): {verb} commits a change to a memory HEAD has, and slayer-kb "
            "never commits work you have not committed (--force would set your file aside), so nothing was done. "
            "Commit it first "
            f"({'; '.join([*run, f'git add -- {words(path)}', 'git commit'])}), then retry.")


def _query_links(memory: Memory, run: str) -> InvalidInputError:
    """An example query's entities are its query's (SLayer's save takes a list or a query, never
    both): replaced by hand, its search by those entities missed it while the query still named them."""
    shell = words(memory.id)
    return InvalidInputError(
        f"Memory {memory.id} is an example query: its entities are its query's ({', '.join(memory.entities) or 'none'}) "
        f"and change with it, so -e cannot replace them. To change them, change the query: edit its query: and "
        f"entities: together ('{run} edit {shell}'), or save it again with the new query ('{run} save --id {shell} "
        f"--query @query.json' with its learning; a save replaces the memory whole, its title and project too); to "
        f"link other entities, save a note that links them and {memory_link(memory.id)}.")


def _kept_times(kb: Context, memory: Memory) -> None:
    """Refuse to commit again a time validate refuses (a ``created_at`` of 2026-02-30 written by
    hand) in ``memory``, the version to write, as a session's writes refuse theirs
    (``timechecks.kept_times``)."""
    path, run = memory_path(memory.id), command(kb.root)
    kept_times(kb.root, path, functools.partial(memory_times, data=memory.to_dict()),
               f"Edit {shown(kb.root / path)} (or run '{run} edit {words(memory.id)}', which checks it on close), "
               "then retry.", f"Edit {shown(kb.root / path)} to fix it, then retry.")


def _deleted_already(memory: Memory, run: str) -> NotFoundError:
    """A soft delete of a soft-deleted memory: the two ways on, the hard delete first (``run``:
    ``slayer-kb`` as the user runs it, ``problems.command``)."""
    said, shell = f"Memory '{memory.id}' is already deleted (at {memory.deleted_at}):", words(memory.id)
    return NotFoundError(
        f"{said} '{run} forget {shell}' without --soft removes it for good, '{run} restore {shell}' brings it "
        "back.",
        tool_message=f"{said} mem_delete(id: {memory.id}, hard_delete: true) removes it for good, "
                     f"mem_restore(id: {memory.id}) brings it back.")


def forget(kb: Context, memory_id: str, *, soft: bool = False, force: bool = False) -> ForgetResult:
    """Delete a memory. Hard: the file goes and ``memory:<id>`` is stripped from every other
    memory, in one commit. Soft: the file stays with ``deleted_at`` and is hidden from reads.
    ``force``: files holding uncommitted work are rewritten from HEAD (kept as .orig)."""
    check_existing_id(memory_id, "to forget")
    kb.check_not_moved(memory_id)
    with kb.transaction() as tx:

        def plan() -> tuple[list[Change], tuple[list[str], dict[str, Memory]]]:
            try:
                memory: Memory | None = kb.read_with_text(memory_id, explain=True)[0]
            except MemoryFileError as exc:
                # A hard forget deletes the file whatever it holds; a soft one rewrites it.
                if soft or not _is_regular(kb.path_of(memory_id)):
                    said, for_tools = _unforgettable(exc.message, memory_id, soft, command(kb.root))
                    raise MemoryFileError(exc.path, exc.line, said, tool_message=for_tools) from None
                memory = None
            if soft:
                assert memory is not None
                if memory.is_deleted:
                    raise _deleted_already(memory, command(kb.root))
                forgotten = memory.evolve(deleted_at=utc_now())
                _kept_times(kb, forgotten)
                return [memory_change(forgotten)], ([], {})
            target = memory_link(memory_id)
            changes = [Change(memory_path(memory_id), None)]
            stripped = []
            rewritten: dict[str, Memory] = {}
            for other_id, other, text in tx.referrers([target]):
                if other_id == memory_id:
                    continue
                kept = [e for e in other.entities if e != target]
                changes.append(memory_change(other, with_entities(text, other, kept)))
                rewritten[other_id] = other.evolve(entities=kept)
                stripped.append(other_id)
            return changes, (stripped, rewritten)

        _require_in_head(kb, memory_id, "forget")
        changes, (stripped, rewritten), kept = tx.rewrite(plan, force)
        if soft:
            commit = tx.commit(changes, f"memory: forget {memory_id} (soft)")
            return ForgetResult(memory_id, [], True, commit, kept)
        message = f"memory: forget {memory_id}"
        if stripped:
            message += (
                f"\n\nStripped {memory_link(memory_id)} from {len(stripped)} memories: {', '.join(stripped)}"
            )
        commit = tx.commit(changes, message, rewritten)
        kb.fold_duplicates(memory_id)
        return ForgetResult(memory_id, stripped, False, commit, kept, unreadlinks.warnings(kb, [memory_link(memory_id)], "removed"))

def restore(kb: Context, memory_id: str) -> ChangeResult:
    """Bring back a soft-deleted memory."""
    check_existing_id(memory_id, "to restore")
    kb.check_not_moved(memory_id)
    with kb.transaction() as tx:
        try:
            memory = kb.read_with_fix(memory_id, explain=False)
        except NotFoundError:
            raise forgotten_error(kb, memory_id) from None
        if not memory.is_deleted:
            said, shell, run = f"Memory '{memory_id}' is not deleted; nothing to restore.", words(memory_id), command(kb.root)
            raise InvalidInputError(
                f"{said} An earlier version comes back with '{run} restore {shell} --rev REV' ('{run} log "
                f"{shell}' lists them).", tool_message=f"{said} mem_update changes a live memory.")
        tx.require_committed(memory_path(memory_id))
        warnings: list[str] = []
        memory = observations.without_held_key(tx, memory, warnings)
        # Stamped: a sync weighing this memory's forget on another clone against it sees when.
        restored = memory.evolve(deleted_at=None, updated_at=utc_now())
        _kept_times(kb, restored)
        tx.commit([memory_change(restored)], f"memory: restore {memory_id}")
    return ChangeResult(kb.get(memory_id).to_dict(), "restored", warnings)


# A rename gives a name (numbers are auto ids, allocated), and a memory it would clash with is another memory.
_RENAME_ADVICE = NewIdAdvice(
    numbers="Give a name such as 'kb.orders-total'.",
    clash="Memory id '{new}' is taken on macOS and Windows checkouts: '{other}' differs from it only in {difference}, "
          "and the two name one file there. Choose another id.")


def rename(kb: Context, old: str, new: str, *, force: bool = False, reuse_id: bool = False) -> RenameResult:
    """Give memory ``old`` the id ``new``: its file moved (git sees a rename) and every
    ``memory:<old>`` reference pointed at ``new``, in one commit. ``force``: files holding
    uncommitted work are rewritten from HEAD (kept as .orig); ``reuse_id``: ``new`` may be an id
    a commit renamed away (``check_not_renamed``)."""
    check_existing_id(old, "to rename")
    check_new_id(check_id(new, "give the id to rename it to"), advice=_RENAME_ADVICE)
    if new == old:
        raise InvalidInputError(f"Memory '{old}' has that id already; nothing to rename.")
    kb.check_not_moved(old)
    kb.check_not_moved(new)  # an agent of this clone may hold it for the memory sync moved
    with kb.transaction() as tx:
        try:
            # A soft-deleted memory is moved as it is, still deleted: its file is there, and a case
            # clash that validate names is mended alike whether or not it is deleted.
            kb.read_with_fix(old, explain=False)
        except NotFoundError:
            raise forgotten_error(kb, old) from None
        _check_free(kb, old, new)
        if not reuse_id:
            kb.check_not_renamed(new, f"to give '{old}' a name of its own, choose another", moving=old)
        else:
            kb.check_reusable(new, moving=old)
        _require_in_head(kb, old, "rename")
        changes, rewritten, kept = tx.rewrite(lambda: moved(kb, tx, {old: new}), force)
        # The trailer records the move, for a sync meeting links to the old id (renames.py).
        commit = tx.commit(changes, f"memory: rename {old} to {new}{rewrote_note(rewritten)}\n\n{trailer(old, new)}")
        kb.carry_pending({old: new})  # under the lock: a save counting a duplicate of OLD meanwhile waits
    return RenameResult(old, new, rewritten, commit, kept, unreadlinks.warnings(kb, [memory_link(old)], "rewritten"))


def _check_free(kb: Context, old: str, new: str) -> None:
    """Refuse a ``new`` id that a memory has, or that names one file with another id on macOS and
    Windows checkouts (letter case, Unicode normalisation); ``old``'s own other spelling is free."""
    ids = [i for i in kb.memory_ids() if i != old]
    if os.path.lexists(kb.path_of(new)):
        if fold_id(new) == fold_id(old) and _one_file(kb.path_of(old), kb.path_of(new)):
            # A file system that folds case (macOS, Windows): deleting the one name deletes both.
            step = free_variant(old, {fold_id(i) for i in ids})
            run = command(kb.root)
            raise InvalidInputError(
                f"This file system names {memory_path(old)} and {memory_path(new)} as one file (it folds letter "
                f"case), so '{old}' cannot become '{new}' in one move: rename it in two, '{run} rename "
                f"{words(old, step)}' then '{run} rename {words(step, new)}'.")
        raise InvalidIdError(f"Memory id '{new}' is taken: {memory_path(new)} exists. Choose another id.")
    check_no_clash(new, ids, _RENAME_ADVICE)


def _one_file(a: Path, b: Path) -> bool:
    """Whether two names open one file (a file system that folds case; a hard link)."""
    try:
        sa, sb = a.lstat(), b.lstat()
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _unforgettable(problem: str, memory_id: str, soft: bool, run: str) -> tuple[str, str]:
    """Why ``forget`` cannot take a broken memory file, and what to do instead: with commands
    (``run``: ``slayer-kb`` as it runs from where the user is), and with the tools an MCP client has."""
    if soft:
        said = f"{problem}; a soft forget rewrites the file, so it must be a valid memory: repair it first"
        shell = words(memory_id)
        return (f"{said} ('{run} edit {shell}', or '{run} restore {shell} --rev REV' for a "
                f"version '{run} log {shell}' lists), or delete it for good with '{run} forget {shell}'",
                f"{said}, or delete it for good with mem_delete(id: {memory_id}, hard_delete: true)")
    said = f"{problem}; move it out of memories/ by hand (it is not a regular file slayer-kb may delete)"
    return said, said
