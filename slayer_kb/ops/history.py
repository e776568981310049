"""A memory's history from git: ``show --rev``, ``restore --rev``, and ``review`` (``log``: memorylog.py).

Everything here reads git objects (``git log``, ``git cat-file``, ``git diff``), never the work
tree, except ``restore_revision`` which writes one memory back as a new commit.

Decisions:

- ``show ID`` without ``--rev`` shows the file as it is now, or, for a memory that was deleted,
  its last committed version (``deleted_in``: the commit that removed it; ``folded``: when a fold
  did, the memory kept, named as ``get`` names it, not as a deletion); for one a ``rename``
  moved (its commit's trailer, renames.py) or a squash folded, ``get``'s error naming the id.
- ``restore ID --rev REV`` brings back the version at REV whether or not the id exists now: the
  file name is the id, so a memory with that id *is* that memory (auto ids are never reused) and
  restoring replaces the current version, as ``git checkout REV -- file`` would. The restored
  version is made live (``deleted_at`` cleared). Entities of the old version that no longer
  resolve (a dropped column, a forgotten ``memory:<id>``) are dropped with a warning, exactly as
  the cascade that removed them would have done; a ``memory:<id>`` of a memory renamed since
  points at its new id, as the rename rewrote the others' links. A memory renamed since REV is
  read from the file it had then (the rename commit's trailer, renames.py), as ``log`` lists
  it. The text is otherwise kept byte for byte. References *to* the memory that a hard
  ``forget`` stripped from other memories are not put back.
  The work tree's file is made to hold that version too, as ``git checkout REV -- file`` would:
  a file broken, edited or deleted by hand is repaired even when HEAD already has the version
  (then nothing is committed), and an edit that was never committed is discarded with a warning.
- ``review BASE HEAD`` reports what HEAD changed since it left BASE, as ``git diff BASE...HEAD``
  does: it compares HEAD with the merge base of the two, so memories BASE gained or dropped after
  the branch split are not the branch's doing and are not listed. Renames (``renumber``) show as
  renames, and the memories at HEAD are checked with the catalog as it is at HEAD (the catalog
  files are read from git into a temporary folder). A memory file that does not read as a memory
  on either side is listed all the same (a branch that breaks one changes it), said so.
"""

from __future__ import annotations

import contextlib
import functools
import textwrap
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..core.errors import InvalidIdError, InvalidInputError, MemoryFileError, NotFoundError
from ..core.fileio import NotRegularFile, not_a_file, read_regular
from ..core.ids import check_existing_id, id_sort_key, no_memory
from ..core.locate import MEMORIES_DIR, id_of_path, memory_path
from ..core.memory import Memory, dumps, loads, with_entities
from ..core.merging import BOTH_EDITED, soft_forget_met
from ..core.outcomes import RestoreResult, Shown
from ..core.problems import command, shell_word, shown, words
from ..core.review import PICKED, RESTORED, SOFT_DELETED, SQUASHED, MemoryChange, Review, word_diff
from ..core.session import SESSIONS_DIR, Session, id_of_file
from ..core.session import loads as load_session
from ..core.text import paragraph_one, shown_value
from ..store import revisions
from ..store.foldlog import held_fold, held_fold_said
from ..store.renames import last_deletion, renamed_since, renames_between
from ..store.repo import GitStore
from ..store.revisions import range_ends, resolve_rev, resolves, same_memories, shallow_parting, taken_from
from ..transaction import memory_change
from . import sessions, snapshot
from .snapshot import CATALOG_DIRS, PRIORITY_FILE, blob_at, catalog_at, crafted, memory_ids_at, text_at, written_since

if TYPE_CHECKING:
    from ..catalog.catalog import Catalog
    from ..context import Context
    from .topickeys import Topic

# Fields a save or update bumps on its own: a change of entities plus these is still a re-link.
BOOKKEEPING = frozenset({"updated_at", "revision_count", "duplicate_count"})


# ---------------------------------------------------------------------------------------------
# show, restore


def show(kb: Context, memory_id: str, rev: str | None = None) -> Shown:
    """The memory at ``rev``; without ``rev`` the file now, else its last committed version;
    with a note when the id moved on this clone (``Context.moved_notes``)."""
    if rev is None:  # the file now: maybe as a killed merge left it
        kb.tell_half_merged()
    shown = _show(kb, memory_id, rev)
    shown.warnings = kb.moved_notes(memory_id)
    return shown


def _show(kb: Context, memory_id: str, rev: str | None,
          renames: Callable[[str], dict[str, str]] | None = None) -> Shown:
    """``show``'s answer; ``renames``: the renames since a commit (``renames_between``), given by
    a caller that reads them anyway."""
    check_existing_id(memory_id, "to show")
    path = memory_path(memory_id)
    if rev is not None:
        sha = resolve_rev(kb.store, rev)
        if blob_at(kb.store, sha, path) is None:
            # Renamed since (``rename``): at ``rev`` the memory had its old id's file, as ``log`` lists.
            since = renames(sha) if renames else renames_between(kb.store, sha)
            path = memory_path(next((old for old, new in since.items() if new == memory_id), memory_id))
        if (kind := snapshot.kind_at(kb.store, sha, path)) is not None:  # a link's blob is no memory's text
            raise NotFoundError(f"{rev}:{path} is {kind} in that revision, which slayer-kb never reads as a memory: "
                                f"it holds no memory to show or restore; pick another from '{command(kb.root)} log {words(memory_id)}'.")
        text = text_at(kb.store, sha, path)
        if text is None:
            raise NotFoundError(
                f"Memory '{memory_id}' does not exist at {rev}; see '{command(kb.root)} log {words(memory_id)}' "
                "for the revisions that have it."
            )
        return Shown(loads(text, memory_id, f"{rev}:{path}"), text, sha)
    if (kb.memories_dir / f"{memory_id}.yaml").is_file():
        memory, text = kb.read_text_with_fix(memory_id)
        return Shown(memory, text, None)
    deleting = last_deletion(kb.store, memory_id)
    if deleting is None and (held := held_fold(kb.store, memory_id)) is not None:
        # A held rename's id, folded by the merge: its last version is the renaming parent's.
        text, parent = next((t, p) for n in (1, 2) if (t := text_at(kb.store, p := resolve_rev(kb.store, f"{held[1]}^{n}"), path)))
        return Shown(loads(text, memory_id, f"{parent}:{path}"), text, parent, held[1], folded=(held[0], held_fold_said(*held)))
    if deleting is None:
        kb.check_gone(memory_id)  # a fold a squash's message tells of, in get's words; else none
        raise no_memory(memory_id, kb.memory_exists, "No memory with id '{}', now or in the history", kb.file_ids)
    if (renamed := kb.renamed_away(memory_id, deleting)) is not None:
        raise NotFoundError(renamed)  # its last version is the renamed memory's: no deleted memory to show
    if (moved := kb.moved_away(memory_id, deleting)) is not None:
        raise NotFoundError(moved)  # so is one a commit moved by hand
    text = text_at(kb.store, f"{deleting}^", path)
    assert text is not None
    return Shown(loads(text, memory_id, f"{deleting}^:{path}"), text, f"{deleting}^", deleting, folded=kb.folded_in(memory_id, deleting))


def forgotten_error(kb: Context, memory_id: str) -> NotFoundError:
    """``restore ID``'s (and ``rename``'s) error for an id with no file, no such memory; raised
    here instead when there is a sign of why the file is missing (``Context.check_gone``: one a
    commit renamed or moved is told its new id, one a commit deleted the ``--rev`` that brings it
    back)."""
    head_has = blob_at(kb.store, "HEAD", memory_path(memory_id)) is not None  # then moved or deleted by hand
    kb.check_gone(memory_id, walked=head_has)
    return no_memory(memory_id, kb.memory_exists)


def restore_revision(kb: Context, memory_id: str, rev: str) -> RestoreResult:
    """Bring back the version of ``memory_id`` at ``rev`` as a new commit (see the module doc)."""
    check_existing_id(memory_id, "to restore")
    kb.check_not_moved(memory_id)  # it would write over the memory the id names now
    from . import observations
    from .renumber import renumbered_text

    with kb.transaction() as tx:
        renames = functools.cache(functools.partial(renames_between, kb.store))  # read once, by _show and here
        shown = _show(kb, memory_id, rev, renames)
        assert shown.rev is not None
        memory, text = shown.memory, shown.text
        # Its links to memories renamed since point at their new ids, as the renames rewrote the others'.
        relinked = renumbered_text(memory_id, text, renames(shown.rev))
        if relinked is not None:
            memory, text = loads(relinked, memory_id), relinked
        warnings: list[str] = []
        if memory.is_deleted:
            memory = memory.evolve(deleted_at=None)
            text = dumps(memory)
        if (keyless := observations.without_held_key(tx, memory, warnings)) is not memory:
            memory, text = keyless, dumps(keyless)
        kept = kb.resolver().resolve_leniently(memory.entities, warnings)
        if kept != memory.entities:
            text = with_entities(text, memory, kept)
        tx.check_new_id(memory_id)
        if not kb.memory_exists(memory_id) and (went := kb.renamed_to(memory_id)) is not None:
            # Under its old id it would be a second copy of the memory the rename moved on.
            raise InvalidIdError(
                f"Memory id '{memory_id}' was renamed to '{went[0]}' (commit {went[1][:12]}): restored under "
                f"'{memory_id}', this version would be a second copy of that memory. Restore it under the id it has "
                f"now: '{command(kb.root)} restore {words(went[0], '--rev', rev)}' (its history follows the rename).")
        change = memory_change(memory, text)
        assert change.data is not None
        head = tx.head()
        _require_same_memory(kb, memory_id, rev, memory, text_at(tx.store, head, change.path) if head else None)
        before = _work_tree_bytes(kb, change.path)
        edited = before is not None and before != (blob_at(tx.store, head, change.path) if head else None)
        commit = tx.commit([change], f"memory: restore {memory_id} as of {shown.rev[:12]}")
        if edited and before != change.data:
            # Like 'git checkout REV -- file', the edit is discarded: the user asked for REV's.
            warnings.append(
                f"{change.path} had changes that were never committed; they are discarded and "
                f"the file holds the version at {rev}."
            )
        unchanged = commit is None and before == change.data
        if commit is None and not unchanged:
            # HEAD already has this version, the work tree does not (a file broken or edited
            # by hand, or deleted): put HEAD's version back, as 'git checkout' would.
            tx.put_back(change.path, change.data)
        restored = loads(text, memory_id, change.path).to_dict()
        return RestoreResult(memory_id, shown.rev, warnings, commit, restored,
                             "unchanged" if unchanged else "restored")


def _require_same_memory(kb: Context, memory_id: str, rev: str, memory: Memory, live: str | None) -> None:
    """Refuse to restore over another memory: the id, forgotten since ``rev``, given to a new one
    (its own ``created_at``), which the restore would replace unsaid."""
    with contextlib.suppress(MemoryFileError):  # a live file that does not read: restored over, as before
        if live is not None and (now := loads(live, memory_id)).created_at != memory.created_at:
            raise InvalidInputError(
                f"Memory '{memory_id}' is another memory now (saved {now.created_at}) than the one at {rev} (saved "
                f"{memory.created_at}): restoring would replace it. To keep both, give the memory that holds "
                f"'{memory_id}' now another id first ('{command(kb.root)} rename {words(memory_id)} NEW'), then "
                "restore.")


def _work_tree_bytes(kb: Context, kb_path: str) -> bytes | None:
    """The bytes of the work tree's file, or None when there is no regular file to read there."""
    try:
        return read_regular(kb.root / kb_path)
    except (OSError, NotRegularFile):
        return None


# ---------------------------------------------------------------------------------------------
# review


def review(store: GitStore, base: str, head: str = "HEAD") -> Review:
    """What ``head`` changed in the knowledge base since its merge base with ``base`` (as
    ``git diff base...head``), for a pull request."""
    # On use, as in the helpers below: a review's checks, which show and restore never run.
    from . import validate
    from .plainmerge import forgotten_renames
    from .teamchecks import Branch, crossed_checks, deleted_since, fix_command, gone_links
    from .topickeys import topic_in, topic_keys_taken

    for rev in (base, head):
        if (ends := range_ends(rev)) is not None and not resolves(store, rev):  # main..agent, as git diff takes it
            raise revisions.two_ends(store, rev, ends)
    against_sha, head_sha = resolve_rev(store, base), resolve_rev(store, head)
    base_sha = merge_base_of(store, base, head, (against_sha, head_sha))
    result = Review(base, head, base_sha)
    if head_sha == base_sha != against_sha:
        # HEAD behind BASE changed nothing since it left it: an empty review that hides the mistake.
        result.warnings.append(
            f"{shown_value(head)} is an ancestor of {shown_value(base)}, so it has no change of its own since it left "
            f"it; if you meant what {shown_value(base)} changed since, the two are swapped (BASE first, then HEAD): run "
            f"'{command(store.root)} review {words(head, base)}'.")
    paths = [store.repo_path(p) for p in (f"{MEMORIES_DIR}/", f"{SESSIONS_DIR}/", *(f"{d}/" for d in CATALOG_DIRS), PRIORITY_FILE)]
    proc = store.git("diff", "--raw", "-z", "-M", base_sha, head_sha, "--", *paths)
    head_catalog = catalog_at(store, head_sha)
    context = validate.KBContext(head_catalog, memory_ids_at(store, head_sha), command(store.root), store.root)
    links: dict[str, tuple[str, set[str]]] = {}  # id -> (path, its entities), of memories at head
    added: dict[str, Memory] = {}  # path -> the memory the branch added, at head
    keyed: dict[str, tuple[Topic, str]] = {}  # id -> the topic a memory the branch changed holds at head, its path
    listed = list(raw_changes(proc.stdout, store.prefix))
    # Each memory file at both ends from one cat-file, not a process a file (and two at the head).
    files = [(rev, path) for _, old, new, _ in listed for rev, path in ((base_sha, old), (head_sha, new))
             if id_of_path(path)]
    texts = {file: None if data is None else data.decode("utf-8", "replace")
             for file, data in zip(files, snapshot.blobs_at(store, files), strict=True)}
    for status, old, new, mode in listed:
        folder = new.partition("/")[0]
        if status != "D" and mode in snapshot.NOT_FILES and folder in (MEMORIES_DIR, SESSIONS_DIR):
            # A link or a submodule: a checkout skips it, so what it replaced is gone.
            result.problems.append(f"{new}:1: {not_a_file(snapshot.NOT_FILES[mode], folder)}; slayer-kb skips it")
            if status == "A":
                continue
            status, new = "D", old
        if new.startswith(f"{SESSIONS_DIR}/") or old.startswith(f"{SESSIONS_DIR}/"):
            _review_session(store, base_sha, head_sha, status, old, new, result)
            continue
        if crafted(new):
            continue  # no catalog file: the head's catalog names it among the problems
        old_id, new_id = id_of_path(old), id_of_path(new)
        if old_id is None and new_id is None:
            if new != PRIORITY_FILE and not new.startswith(tuple(f"{d}/" for d in CATALOG_DIRS)):
                continue  # memories/.gitkeep, a README in memories/
            entry = {"status": _FILE_STATUS.get(status[0], "changed"), "path": new}
            if status.startswith("R"):
                entry["old_path"] = old
            result.catalog_files.append(entry)
            continue
        if status.startswith("R") and None in (old_id, new_id):
            # Moved out of memories' names (4.yaml to 4.txt) or into them: a removal or an addition.
            status = "D" if new_id is None else "A"
        before = _load_at(texts[base_sha, old], old, old_id) if status != "A" and old_id else None
        after = _load_at(texts[head_sha, new], new, new_id) if status != "D" and new_id else None
        if (status == "A" or status.startswith("R")) and new_id is not None:
            # An id the branch adds: one no memory may take, or one that collides with another at head.
            result.problems.extend(map(str, validate.id_problems(new_id, new, context)))
        if status != "D" and new_id is not None:
            # Every problem of the file at the head, as validate reports it, in one run.
            text = texts[head_sha, new]
            if text is not None and (where := topic_in(text)) is not None:
                keyed[new_id] = where, new
            if text is not None:
                # fmt's fix names the file from where the user is, not from the KB's folder.
                result.problems.extend(map(str, validate.check_memory_text(text, new_id, new, context,
                                                                           shown(store.root / new))))
        if isinstance(after, Memory):
            links[after.id] = (new, set(after.entities))
        if isinstance(before, MemoryFileError) or isinstance(after, MemoryFileError):
            _file_unreadable(result, status, old_id, new_id, before, after)
        elif status == "A" and after is not None:
            added[new] = after
            result.added.append(MemoryChange(after.id, "added", label_of(after), list(after.entities)))
        elif status == "D" and before is not None:
            result.removed.append(MemoryChange(before.id, "removed", label_of(before), list(before.entities)))
        elif before is not None and after is not None:
            change = compare(before, after)
            if status.startswith("R"):
                change.status, change.old_id = "renamed", before.id
                result.renamed.append(change)
            else:
                _file(result, change)
    # Links to what base forgot or deleted since head left it: each file checks at head, not once merged.
    if added and against_sha != base_sha:
        _taken_in(store, result, added, head_sha, against_sha)
    deleted = deleted_since(store, base_sha, against_sha, head_catalog) if links else set()
    fix = functools.partial(fix_command, store, store.root, against=base)
    # An id head forgot and gave another memory, which base renamed: a link to it means that memory.
    # Named from the KB's folder, as the problems above (``str``: a KB path as it is).
    crossed = crossed_checks(store, base_sha, (head_sha, against_sha), base, str, lambda: fix(f"merge {shell_word(base)}"))
    given = crossed.given(head_sha)
    result.problems.extend(map(str, gone_links(store, base_sha, base, against_sha, links,
                                               lambda i: i not in given and i in context.ids, deleted, fix)))
    result.problems.extend(map(str, crossed.problems))
    # A topic key the branch gave a memory that, merged, another holds: one at head or one base added or changed since.
    compared = Branch(store.root, store, base, against_sha, base_sha, head_sha)
    result.problems.extend(map(str, topic_keys_taken(compared, keyed, context.command, head=True)))
    # A memory head renamed that base forgot since: the merge stops on it, as sync does.
    ours, theirs = (written_since(store, base_sha, rev) for rev in (head_sha, against_sha))
    renamed = forgotten_renames(compared, ours, theirs, lambda: renames_between(store, base_sha, head_sha))
    result.problems.extend(map(str, renamed.values()))
    result.problems.extend(map(str, head_catalog.problems))
    for changes in (result.added, result.changed, result.relinked, result.renamed, result.removed, result.taken_in):
        changes.sort(key=lambda change: id_sort_key(change.id))  # git lists paths: 10, 11, 2
    if result.catalog_files:
        result.catalog = catalog_diff(catalog_at(store, base_sha), head_catalog)
    return result


def _taken_in(store: GitStore, result: Review, added: dict[str, Memory], head_sha: str, against_sha: str) -> None:
    """Of the memories the branch added (``added``, by path), those the base took in already
    (``revisions.same_memories``: a squash or rebase merge of an earlier pull request) and holds
    at that path still: one the branch left as taken in is no change of its own (``taken_in``),
    one it changed since is ``changed`` from the version taken in, as ``validate --against``
    counts them. One the base forgot or renamed since stays added (a merge brings it back), and
    one the base edited since is noted (a plain git merge stops on it)."""
    shared = same_memories(store, list(added), result.merge_base, head_sha, against_sha)
    if not shared:
        return
    from .teamchecks import fix_command
    # Which side took each in from which, as ``validate --against`` words it.
    picked = taken_from(store, list(shared), result.merge_base, head_sha, against_sha)
    objects = store.objects
    repo_paths = [store.repo_path(path) for path in shared]
    now = objects.blobs_at(objects.tree_of(head_sha), repo_paths)
    held = objects.blobs_at(objects.tree_of(against_sha), repo_paths)
    texts = objects.read_many("blob", {*shared.values(), *(b for side in (now, held) for b in side.values() if b)})
    # What the base did with a memory it took in: read once, where it no longer holds that memory.
    moved = functools.cache(lambda: renamed_since(store, result.merge_base, against_sha,
                                                  [added[path].id for path in shared]).live)
    merge = functools.cache(lambda: fix_command(store, store.root, f"merge {shell_word(result.base)}", result.base))
    by_id = {c.id: c for c in result.added}
    for path, blob in shared.items():
        after, on_base = added[path], held[store.repo_path(path)]
        mine = now[store.repo_path(path)]
        assert mine is not None  # the branch added it: HEAD holds it
        if on_base is None:
            what = f"renamed it to '{moved()[after.id]}'" if after.id in moved() else "forgotten it"
            took = (f"this branch took it in from {result.base} {PICKED}, and {result.base}" if path in picked
                    else f"{result.base} took it in from this branch {SQUASHED} and")
            by_id[after.id].note = f"{took} has {what} since: merging brings it back"
            continue
        # The base edited it since, unless to the branch's own version (git merges that in silence).
        edited = None if on_base in (blob, mine) else _since_taken_in(
            store, result.base, after.id, (texts[blob], texts[mine], texts[on_base]), moved(), merge())
        if mine == blob:
            result.added.remove(by_id[after.id])
            result.taken_in.append(MemoryChange(after.id, "taken in", label_of(after), list(after.entities),
                                                note=edited, picked=path in picked))
            continue
        # Broken as taken in: not the branch's problem, and the memory stays listed as added.
        with contextlib.suppress(MemoryFileError):
            change = compare(loads(texts[blob].decode("utf-8", "replace"), after.id, path), after)
            change.note = edited
            result.added.remove(by_id[after.id])
            _file(result, change)


def _since_taken_in(store: GitStore, base: str, memory_id: str, texts: tuple[bytes, bytes, bytes],
                    renamed: dict[str, str], merge: str) -> str:
    """What ``base`` did to a memory it took in from the branch and holds another version of now
    (``texts``: as taken in, on the branch, and on ``base``), and what a merge of the branch does
    with it: a plain git merge stops on it (both added it, git's merge base being older);
    ``merge``, the command that merges the two, stops too where the base gave the id to another
    memory (``renamed``: where the one taken in went) or the branch edited what the base forgot
    (``merging.soft_forget_met``, as ``validate --against`` says it)."""
    from .teamchecks import drop_fix

    untouched = texts[0] == texts[1]
    if memory_id in renamed:
        new = renamed[memory_id]
        remove = drop_fix(store.root, memory_path(memory_id), new, base)
        fix = (f"remove this branch's copy ('{remove}'): the merge then takes the rename" if untouched
               else f"'{merge}' stops on it too, with the steps that make this branch's change on '{new}'")
        return (f"{base} has renamed it to '{new}' since and given '{memory_id}' to another memory: a plain git "
                f"merge stops on it; {fix}")
    with contextlib.suppress(MemoryFileError):
        taken, mine, now = (loads(text.decode("utf-8", "replace"), memory_id) for text in texts)
        if now.deleted_at and not taken.deleted_at:
            met = soft_forget_met(taken, mine, now)
            also = {"both": ", and so has this branch", "both edited": f", and so has this branch, {BOTH_EDITED}"}
            soft = f"{base} has forgotten it since (a soft forget){also.get(met, '')}: a plain git merge stops on it"
            if met == "edited":
                return f"{soft}, and so does '{merge}', for a person to keep the edit or the forget"
            if met == "both edited":
                return f"{soft}, and so does '{merge}', for a person to keep what both sides meant"
            return f"{soft}, where '{merge}' keeps it forgotten"
    return f"{base} has edited it since: a plain git merge stops on it, where '{merge}' merges the two"


def _file(result: Review, change: MemoryChange) -> None:
    """A memory the branch changed, filed as re-linked (its links alone changed) or changed."""
    if change.status in ("removed", "added"):  # soft-deleted or restored (``compare``)
        (result.removed if change.status == "removed" else result.added).append(change)
    elif [f for f in change.fields if f not in BOOKKEEPING] == ["entities"]:
        change.status = "relinked"
        result.relinked.append(change)
    elif change.fields:
        result.changed.append(change)


_FILE_STATUS = {"A": "added", "D": "deleted", "M": "changed", "R": "renamed"}


def _review_session(store: GitStore, base: str, head: str, status: str, old: str, new: str, result: Review) -> None:
    """A session file the branch added, changed, removed or renamed (sessions.py)."""

    def load(rev: str, path: str) -> Session | None:
        session_id = id_of_file(path.rsplit("/", 1)[-1]) if path.startswith(f"{SESSIONS_DIR}/") else None
        text = text_at(store, rev, path) if session_id is not None else None
        if text is None or session_id is None:
            return None
        try:
            return load_session(text, session_id, path)
        except MemoryFileError as exc:
            if rev != result.merge_base:  # a file broken before the branch is not its problem
                result.problems.append(str(exc))
            return None

    before = load(base, old) if status != "A" else None
    after = load(head, new) if status != "D" else None
    if before is None and after is None:
        return
    kind = {"A": "added", "D": "removed", "R": "renamed"}.get(status[0], "changed")
    result.sessions.append(sessions.review_entry(kind, new, before, after))


def merge_base_of(store: GitStore, base: str, head: str, resolved: tuple[str, str] | None = None) -> str:
    """The commit ``head`` left ``base`` at (``git merge-base``), or an error that says why not;
    ``resolved``: the two commits, when the caller has them already."""
    base_sha, head_sha = resolved or (resolve_rev(store, base), resolve_rev(store, head))
    proc = store.git("merge-base", base_sha, head_sha, check=False)
    sha = proc.stdout.decode().strip()
    if proc.returncode != 0 or not sha:
        if (shallow := shallow_parting(store, base, head)) is not None:
            raise shallow
        raise NotFoundError(
            f"'{base}' and '{head}' have no common ancestor, so there is no change of '{head}' "
            f"since it left '{base}' to report; give a revision that '{head}' was branched from."
        )
    return sha


def raw_changes(raw: bytes, prefix: str) -> Iterator[tuple[str, str, str, str]]:
    """(status, old path, new path, new mode) from ``git diff --raw -z``, KB-relative."""
    parts = [p.decode("utf-8", "surrogateescape") for p in raw.split(b"\0")]
    i = 0
    while i < len(parts) and parts[i]:
        # ":OLD_MODE NEW_MODE OLD_OID NEW_OID STATUS", then the path (two for a rename or copy)
        _old_mode, mode, _old_oid, _new_oid, status = parts[i].split(" ")
        if status[0] in "RC":
            old, new = parts[i + 1], parts[i + 2]
            i += 3
        else:
            old = new = parts[i + 1]
            i += 2
        if status[0] == "C":
            status, old = "A", new
        yield status, old[len(prefix):], new[len(prefix):], mode


def _load_at(text: str | None, path: str, memory_id: str | None) -> Memory | MemoryFileError | None:
    """The memory a revision's ``text`` of ``path`` holds, why it does not read as one (at the
    head, the review's problems say it in full; a file broken before the branch is not its
    problem), or None where there is no file."""
    if text is None or memory_id is None:
        return None
    try:
        return loads(text, memory_id, path)
    except MemoryFileError as exc:
        return exc


def _file_unreadable(result: Review, status: str, old_id: str | None, new_id: str | None,
                     before: Memory | MemoryFileError | None, after: Memory | MemoryFileError | None) -> None:
    """A memory file the branch added, changed, renamed or removed that does not read as a
    memory on one side or both: listed as any other (a branch that breaks or wipes a memory
    changes it), labelled by the side that reads, and said so."""
    readable = next((m for m in (after, before) if isinstance(m, Memory)), None)
    broken = [side for side, m in (("base", before), ("head", after)) if isinstance(m, MemoryFileError)]
    side = "both" if len(broken) == 2 else broken[0]
    change = MemoryChange(str(new_id or old_id), "changed", label_of(readable) if readable else "",
                          list(readable.entities) if readable else [], unreadable=side)
    if status == "A":
        change.status, change.note = "added", "does not read as a memory; see Problems"
        result.added.append(change)
    elif status == "D":
        change.status, change.note = "removed", "did not read as a memory at the merge base"
        result.removed.append(change)
    else:
        change.note = {"head": "no longer reads as a memory; see Problems",
                       "base": "did not read as a memory at the merge base; this branch repairs it",
                       "both": "does not read as a memory, nor did it at the merge base; see Problems"}[side]
        if status.startswith("R"):
            change.status, change.old_id = "renamed", old_id
        (result.renamed if status.startswith("R") else result.changed).append(change)


def label_of(memory: Memory) -> str:
    if memory.title:
        return memory.title
    # The first paragraph, not the first line: learnings are often hard-wrapped mid-sentence.
    return textwrap.shorten(paragraph_one(memory.learning), width=100, placeholder=" \u2026")


def compare(before: Memory, after: Memory) -> MemoryChange:
    old, new = before.to_dict(), after.to_dict()
    fields = [k for k in old if k != "id" and old[k] != new[k]]
    change = MemoryChange(after.id, "changed", label_of(after), list(after.entities), fields)
    change.entities_added = [e for e in after.entities if e not in before.entities]
    change.entities_removed = [e for e in before.entities if e not in after.entities]
    if "learning" in fields:
        change.learning_diff = word_diff(before.learning, after.learning)
    if bool(before.deleted_at) != bool(after.deleted_at):  # gone from every search, or back in it
        change.status, change.note = ("removed", SOFT_DELETED) if after.deleted_at else ("added", RESTORED)
        # What else the branch changed, listed as for an edited memory (a restore moves updated_at itself).
        edits = [name for name in fields if name != "deleted_at"]
        change.fields = [] if edits == ["updated_at"] else edits
    return change


def catalog_diff(before: Catalog, after: Catalog) -> dict[str, list[str]]:
    """Entities added and removed, by kind (datasources, models, leaves)."""
    def kinds(catalog: Catalog) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {"datasources": set(), "models": set(), "leaves": set()}
        for entity, kind, _description in catalog.iter_entities():
            key = "datasources" if kind == "datasource" else "models" if kind == "model" else "leaves"
            out[key].add(entity)
        return out

    old, new = kinds(before), kinds(after)
    diff: dict[str, list[str]] = {}
    for key in ("datasources", "models", "leaves"):
        added, removed = sorted(new[key] - old[key]), sorted(old[key] - new[key])
        if added:
            diff[f"{key}_added"] = added
        if removed:
            diff[f"{key}_removed"] = removed
    if before.priority != after.priority:
        diff["priority"] = [" > ".join(before.priority) or "(none)", " > ".join(after.priority) or "(none)"]
    return diff

