"""What a plain ``git merge`` of a branch into the revision it is compared with (a pull request's
merge button, where no merge driver of slayer-kb's runs) stops on or gets wrong, for
``validate --against REF``: memory and session files both sides wrote in lines git cannot join,
forgets such a merge would undo, and links it would leave pointing at a memory the branch forgot
or an entity it deleted from the catalog, and memories the compared revision took in by a squash
(or the branch took in from it: ``Branch.taken_from_against`` tells which) and renamed or forgot
since, which any merge brings back (or soft-forgot, on which a plain merge stops). Each problem
names its own fix:
``slayer-kb merge REF`` on the branch where that merge handles it as ``sync`` does, a ``forget``
or a ``git rm`` where no merge can."""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..core.errors import MemoryFileError
from ..core.ids import id_sort_key, is_auto_id
from ..core.locate import id_of_path, linked_id, memory_link, memory_path
from ..core.memory import Memory, loads
from ..core.merging import BOTH_EDITED, soft_forget_met, soft_forgot
from ..core.problems import Problem, command, git_command, shell_word, shown
from ..core.review import PICKED, SQUASHED
from ..core.session import SESSIONS_DIR
from ..store.foldlog import folded_to
from ..store.renames import renamed_since, renames_between
from ..store.repo import GitStore
from .reuses import GIVEN_ONTO_ONE, free_id, given_onto_one
from .snapshot import NO_BLOB, catalog_changed, deleted_entities, under, written_since
from .teamchecks import MEMORIES, Branch, delete_roots, drop_fix, links_in

# Why a merge misreads a memory the compared revision took in from the branch.
_OLDER = "since git's merge base is older than the memory"
# What ``slayer-kb merge`` does with each kind of file a plain git merge stops on.
_MERGES = {
    MEMORIES: ("memory", "it merges both sides' revisions of a topic key, and fields each side changed alone, and "
                         "stops on two edits of one field (two memories under one id among them) with the steps "
                         "to merge by hand"),
    SESSIONS_DIR: ("session file", "it merges both sides' sessions (their prompts, the earliest start, the latest "
                                   "end)"),
}


def _merged(kb_path: str) -> bool:
    """Whether the KB's merge driver merges ``kb_path``: a ``.yaml`` file in memories/ or sessions/."""
    folder, _, name = kb_path.partition("/")
    return folder in _MERGES and "/" not in name and name.endswith(".yaml")


def plain_merge_conflicts(compared: Branch, warnings: list[Problem]) -> list[Problem]:
    """Memory and session files this branch's commits wrote that the revision compared with wrote
    too since they parted, in lines git's merge cannot join (a forget against an edit among
    them): a plain ``git merge`` of the branch (a pull request's merge button, where no merge
    driver of slayer-kb's runs) stops on them; the memories it forgot that such a merge would
    keep (``_undone_forgets``), and the links the revision gained to them or to entities the branch
    deleted from the catalog (``_links_to_own_removals``). ``slayer-kb merge REF`` on the branch
    merges them as sync does, or stops on them for a person. An auto id both sides added for two memories is
    ``id_collisions``'s to name (its fix is a renumbering); a named one is named as merge names it (``_given_onto_one``). And the memories that revision took in
    and forgot or renamed since that any merge brings back (``_revived``; one it forgot that the
    branch edited is a warning, in ``warnings``)."""
    store, base, against_sha = compared.store, compared.base, compared.against_sha
    head = compared.head
    if base is None or head is None or against_sha == base:
        return []
    ours, theirs = (written_since(store, base, rev) for rev in (head, against_sha))
    # {old id: new id} of the branch's renames, asked of git once, where a problem names one.
    renamed = functools.cache(lambda: renames_between(store, base, head))
    undone = _undone_forgets(compared, base, head, ours, theirs)
    crossed = compared.crossed
    # An id the revision forgot and gave again, which this branch renamed: its links there mean its own memory.
    regiven = crossed.given(against_sha)
    forgotten = forgotten_renames(compared, ours, theirs, renamed)
    problems = (_revived(compared, ours, theirs, warnings) + _undone_problems(compared, theirs, undone, renamed)
                + _links_to_own_removals(compared, base, head, ours, theirs, list(undone), renamed, regiven)
                + crossed.problems + list(forgotten.values()))
    # An id given again against an edit is named above: no revisions of one memory for a merge to join;
    # nor is a renamed memory's file, which git's merge stops on as the rename against the forget.
    given_again = {memory_path(c.memory_id) for c in crossed.crossings if c.new is None} | forgotten.keys()
    both = {path for path in ours.keys() & theirs.keys() if ours[path][1] != theirs[path][1] and _merged(path)} - given_again
    if not both:
        return problems
    stopped = merge_tree_stops(store, head, against_sha)
    if stopped is None:  # git before 2.38: one merge-file a file, renames not followed
        stopped = _merge_file_stops(store, ours, theirs, both)
    stopped -= given_again
    fix = ""  # one fix for every file (its remote costs two git processes), made when one is named
    # An auto id both sides added for two memories is ``id_collisions``'s; one memory both added
    # (a squash or rebase merge of the branch, edited since) is a merge's to join.
    added = [path for path in stopped if is_auto_id(id_of_path(path) or "") and ours.get(path, ("",))[0] == NO_BLOB]
    alike = compared.same_memories(added)
    given = _moved_since_taken_in(compared, ours, theirs, stopped)
    given.update(_given_onto_one(compared, renamed(), stopped - given.keys()))
    # The memories the revision folded into another since they parted: no forget (``folds.py``).
    folded = functools.cache(lambda: folded_to(store, base, against_sha))
    for kb_path in sorted(stopped):
        folder = kb_path.partition("/")[0]
        if not _merged(kb_path) or (kb_path in added and kb_path not in alike):
            continue
        if kb_path in given:
            problems.append(given[kb_path])
            continue
        kind, merges = _MERGES[folder]
        fix = fix or compared.fix(f"merge {shell_word(compared.against)}")
        if (forgot := _forgotten_there(compared.store, kb_path, ours, theirs)) == "" and (
                kept := folded().get(id_of_path(kb_path) or "")) is not None:
            problems.append(Problem(
                shown(compared.root / kb_path), 1,
                f"{compared.against} merged this memory into {kept} (one topic key or save on both sides) since this "
                f"branch parted from it, and this branch edited it: a plain git merge of this branch stops on the "
                f"fold's delete against the edit. Run '{fix}': it carries the edit to {kept} field by field, or "
                f"stops with the steps where {kept} holds a field the edit changed another way",
            ))
            continue
        if forgot is not None:
            problems.append(Problem(
                shown(compared.root / kb_path), 1,
                f"{compared.against} forgot this memory{forgot} since this branch parted from it, and this branch "
                f"edited it: a plain git merge of this branch stops on the forget against the edit. Run '{fix}': it "
                f"stops there with the steps for either way out, keeping this branch's edit or letting the memory "
                f"go as {compared.against} did",
            ))
            continue
        problems.append(Problem(
            shown(compared.root / kb_path), 1,
            f"{compared.against} wrote this {kind} too since this branch parted from it, in lines git's merge "
            f"cannot join: a plain git merge of this branch stops on it. Run '{fix}': {merges}",
        ))
    return problems


def _given_onto_one(compared: Branch, renamed: dict[str, str], stopped: set[str]) -> dict[str, Problem]:
    """Of the memory files a plain git merge stops on (``stopped``), those each side gave to a
    memory of its own under one new id (``reuses.given_onto_one``): named, and fixed, as
    ``slayer-kb merge`` names them, not as one memory's two revisions for a merge to join."""
    ids = {memory_id for path in stopped if (memory_id := id_of_path(path)) is not None and not is_auto_id(memory_id)}
    if not ids:
        return {}
    store, against, base, head = compared.store, compared.against, compared.base, compared.head
    assert base is not None and head is not None
    tips = (compared.against_sha, head)
    clashes = given_onto_one(store, base, tips, (renames_between(store, base, compared.against_sha), renamed), ids)
    fix = compared.fix(f"merge {shell_word(against)}") if clashes else ""
    return {memory_path(new): Problem(
        shown(compared.root / memory_path(new)), 1,
        f"this branch {mine}, and {against} {theirs}: {GIVEN_ONTO_ONE.format(new=new)}; a plain git merge of this "
        f"branch stops on it, and slayer-kb merge keeps {against}'s {new}. Run '{command(compared.root)} rename "
        f"{shell_word(new)} {shell_word(free_id(store, tips, new))}' (or another id: it rewrites this branch's links "
        f"to it), then '{fix}'",
    ) for new, (theirs, mine) in clashes}


def forgotten_renames(compared: Branch, ours: dict[str, tuple[str, str]], theirs: dict[str, tuple[str, str]],
                       renames: Callable[[], dict[str, str]]) -> dict[str, Problem]:
    """The memories this branch renamed (``renames``: its ``rename`` trailers, which pair the
    files as sync's stop does) that the revision compared with forgot since they parted (deleted
    the file, renaming it nowhere), each under its new file: git's merge follows the move and
    stops on it, the rename against the forget, as sync stops on it (``review`` names them too)."""
    gone = {memory_id for path, (was, now) in theirs.items() if was != NO_BLOB == now and path in ours
            and ours[path][1] == NO_BLOB and (memory_id := id_of_path(path)) is not None}
    renamed = {old: memory_path(new) for old, new in renames().items() if old in gone} if gone else {}
    held = {old: path for old, path in renamed.items() if path in ours and ours[path][1] != NO_BLOB}
    assert compared.base is not None
    # The revision's own rename of it is no forget: rename against rename, which sync names as such.
    moved = renames_between(compared.store, compared.base, compared.against_sha) if held else {}
    against = compared.against
    fix = compared.fix(f"merge {shell_word(against)}") if held else ""
    return {path: Problem(
        shown(compared.root / path), 1,
        f"{against} forgot {memory_path(old)} since this branch parted from it, which this branch renamed to "
        f"{id_of_path(path)}: a plain git merge of this branch stops on the forget against the rename. Run '{fix}': it "
        f"stops there with the steps for either way out, keeping the memory renamed or letting it go as {against} did",
    ) for old, path in sorted(held.items()) if old not in moved}


def _forgotten_there(store: GitStore, kb_path: str, ours: dict[str, tuple[str, str]],
                     theirs: dict[str, tuple[str, str]]) -> str | None:
    """How the revision compared with forgot the memory ``kb_path`` that this branch edited (both
    sides' ``written_since``): "" for a forget (its file deleted), " (forget --soft)" for a soft
    one (only ``deleted_at`` set); None when it did not, or a version does not read."""
    (was, mine), (_was, now) = ours[kb_path], theirs[kb_path]
    if mine == NO_BLOB or was == NO_BLOB:
        return None
    if now == NO_BLOB:
        return ""
    memory_id = id_of_path(kb_path) or ""
    texts = store.objects.read_many("blob", {was, mine, now})
    try:
        base, here, there = (loads(texts[blob].decode("utf-8", "replace"), memory_id) for blob in (was, mine, now))
    except MemoryFileError:
        return None
    # Forgotten on both sides (two soft forgets made apart) is no edit to keep.
    return " (forget --soft)" if soft_forgot(base, there) and here.deleted_at is None else None


def _moved_since_taken_in(compared: Branch, ours: dict[str, tuple[str, str]], theirs: dict[str, tuple[str, str]],
                          stopped: set[str]) -> dict[str, Problem]:
    """Of the memories both sides added that a plain git merge stops on (``stopped``), those the
    revision compared with took in from this branch (a squash or rebase merge), then renamed and
    gave the id to another memory (``--reuse-id``): ``slayer-kb merge`` stops on them too, since
    a change of the branch's could be meant for either. The branch's copy, left as taken in, is
    removed; a change it made is made on the new id (the merge's steps). And those it soft-forgot
    since (``_soft_forgotten``)."""
    both_added = [path for path in stopped if id_of_path(path) is not None and path in ours and path in theirs
                  and ours[path][0] == theirs[path][0] == NO_BLOB]
    assert compared.base is not None
    away = renamed_since(compared.store, compared.base, compared.against_sha,
                         [id_of_path(path) or "" for path in both_added]).live if both_added else {}
    shared = compared.same_memories(both_added)
    theirs_first = compared.taken_from_against(list(shared))
    problems = _soft_forgotten(compared, ours, theirs, {p: b for p, b in shared.items() if id_of_path(p) not in away},
                               theirs_first)
    against, root = compared.against, compared.root
    for path, blob in shared.items():
        memory_id = id_of_path(path) or ""
        if memory_id not in away:
            continue
        new = away[memory_id]
        said = (f"{_took_in(against, memory_id, path in theirs_first)}has renamed it to '{new}' since, and given '{memory_id}' to another "
                "memory: a plain git merge of this branch stops on it, and so does slayer-kb merge")
        if ours[path][1] == blob:
            said += (f". Run '{drop_fix(compared.root, path, new, compared.against)}': with this branch's copy gone, the merge takes "
                     f"{against}'s '{memory_id}' and '{new}' as they are")
        else:
            said += (f", since this branch changed it. Run '{compared.fix(f'merge {shell_word(against)}')}': it stops "
                     f"with the steps that make this branch's change on '{new}'")
        problems[path] = Problem(shown(root / path), 1, said)
    return problems


def _soft_forgotten(compared: Branch, ours: dict[str, tuple[str, str]], theirs: dict[str, tuple[str, str]],
                    shared: dict[str, str], theirs_first: set[str]) -> dict[str, Problem]:
    """Of the memories both sides added as one, the revision compared with taking them in from this
    branch or this branch from it (``theirs_first``) (``shared``: the version taken in), those that
    revision soft-forgot since (``forget --soft``): its file
    holds ``deleted_at``, so a plain git merge stops on it, both sides having added it since git's
    merge base. What ``slayer-kb merge`` does with each is ``merging.soft_forget_met``'s, as
    ``review`` says it. (Removing the branch's copy instead reads as the branch forgetting what
    that revision edited: ``_undone_forgets``.)"""
    blobs = {*shared.values(), *(side[path][1] for path in shared for side in (ours, theirs))}
    texts = compared.store.objects.read_many("blob", blobs)
    against, root, problems = compared.against, compared.root, {}
    for path, blob in shared.items():
        memory_id = id_of_path(path) or ""
        try:
            taken, mine, now = (loads(texts[sha].decode("utf-8", "replace"), memory_id)
                                for sha in (blob, ours[path][1], theirs[path][1]))
        except MemoryFileError:
            continue  # a file git cannot merge, as any other: the plain merge's stop says so
        if not now.is_deleted or taken.is_deleted:
            continue
        met = soft_forget_met(taken, mine, now)
        branch = _SOFT_FORGET_MET.get(met) or _kept_as(taken, mine)
        merge = compared.fix(f"merge {shell_word(against)}")
        said = (f"{_took_in(against, memory_id, path in theirs_first)}has forgotten it since (a soft forget), and this branch {branch}: "
                f"a plain git merge of this branch stops on it, {_OLDER}. Run '{merge}': ")
        if met == "edited":
            said += "it stops on the forget against the edit, with the steps to keep either"
        elif met == "both edited":
            said += "it stops on the two edits too, with the steps to keep what both sides meant"
        elif met == "both":
            said += "it keeps it forgotten, from the first of the two forgets, and the plain merge then goes through"
        else:
            said += ("it keeps it forgotten on this branch too, and the plain merge then goes through (to keep the "
                     f"memory instead, {_restore_after_merge(compared, memory_id)})")
        problems[path] = Problem(shown(root / path), 1, said)
    return problems


# What this branch did to a memory the compared revision soft-forgot, by ``soft_forget_met``.
_SOFT_FORGET_MET = {"both": "has forgotten it too", "edited": "has edited it",
                    "both edited": f"has forgotten it too, {BOTH_EDITED}"}


def _kept_as(taken: Memory, mine: Memory) -> str:
    """What this branch did to a memory it holds as ``mine`` whose soft forget a merge keeps: left
    it as ``taken`` in, or changed none of what it says (its links, its time)."""
    was, now = taken.to_dict(), mine.to_dict()
    changed = [name for name in now if now[name] != was.get(name)]
    return f"has changed none of what it says, only {', '.join(changed)}" if changed else "holds it as taken in"


def _restore_after_merge(compared: Branch, memory_id: str) -> str:
    """Where and when to restore a memory the revision compared with soft-forgot and this branch
    left as taken in: on that revision's branch, after this branch merged it (restored before, the
    merge takes the restore and the plain merge still stops on it; restored on this branch, there is
    nothing to restore). That branch is synced first: a clone's copy of it may predate the memory.
    Compared with a tag or a commit, no branch is named: the one the merge goes into."""
    root, name = compared.root, compared.tracked_branch
    sync, restore = f"{command(root)} sync", f"{command(root)} restore {shell_word(memory_id)}"
    if name is None:
        return f"after that merge, on a checkout of the branch you merge into: '{sync} && {restore} && {sync}'"
    return (f"after that merge, on a checkout of {name}: '{git_command(root, f'switch {shell_word(name)}')} && {sync} && "
            f"{restore} && {sync}'")


def _undone_forgets(compared: Branch, base: str, head: str, ours: dict[str, tuple[str, str]],
                    theirs: dict[str, tuple[str, str]]) -> dict[str, str]:
    """The memories this branch added and then forgot (or renamed) after the revision compared
    with took them in by a squash or rebase merge (the very same memory added under commits of
    its own, ``same_memories``), each with the version both sides held, save those the revision
    renamed away since (its file under the id, if any, is another memory). git's merge base is older
    than the memory, so a plain ``git merge`` sees that revision add it and the branch leave it
    alone, and keeps it without a word; ``slayer-kb merge`` keeps it forgotten (or renamed), or
    stops on a forget against that revision's edit of it."""
    # Added by the revision, absent where they parted and at HEAD (so not in ``ours``).
    taken_in = {path for path, (before, _after) in theirs.items()
                if before == NO_BLOB and path not in ours and id_of_path(path) is not None}
    if not taken_in:
        return {}
    forgot = sorted(taken_in & set(compared.store.added_paths(base, head, under=f"{MEMORIES}/")))
    if forgot:  # an id the revision renamed away since and gave again: its file there is another memory
        moved = renamed_since(compared.store, base, compared.against_sha, [id_of_path(p) or "" for p in forgot])
        forgot = [path for path in forgot if id_of_path(path) not in moved.live.keys() | moved.gone.keys()]
    return compared.same_memories(forgot)


def _revived(compared: Branch, ours: dict[str, tuple[str, str]], theirs: dict[str, tuple[str, str]],
             warnings: list[Problem]) -> list[Problem]:
    """The memories this branch added and holds, as the revision compared with took them in by a
    squash or rebase merge (``same_memories``) or edited since, which that revision has forgotten
    or renamed since (so it lacks the file, as where they parted). git's merge base is older than
    the memory, so any merge of the branch (``slayer-kb merge`` too) sees the branch add it and
    brings it back. Renamed, it is held under two ids: the branch's copy is removed (an edit made
    again on the new id). Forgotten, it is forgotten on the branch too; where the branch edited
    it, that is a warning (in ``warnings``): keeping the edit may be what the branch meant."""
    added = [path for path, (before, after) in ours.items()
             if before == NO_BLOB and after != NO_BLOB and path not in theirs and id_of_path(path) is not None]
    shared = compared.same_memories(added) if added else {}
    if not shared:
        return []
    store, against, root = compared.store, compared.against, compared.root
    assert compared.base is not None
    held = {id_of_path(path) or "": path for path in shared}
    theirs_first = compared.taken_from_against(list(shared))
    renamed = renamed_since(store, compared.base, compared.against_sha, held).live
    merged = "a merge of this branch (a plain git merge, or slayer-kb merge) brings it back"
    problems = []
    for memory_id, path in sorted(held.items(), key=lambda item: id_sort_key(item[0])):
        untouched, said = ours[path][1] == shared[path], _took_in(against, memory_id, path in theirs_first)
        if memory_id in renamed:
            new = renamed[memory_id]
            fix = drop_fix(compared.root, path, new, compared.against)
            text = (f"{said}has renamed it to '{new}' since, and this branch holds it as taken in, under its old "
                    f"id: {merged} beside '{new}', one memory under two ids, {_OLDER}. Run '{fix}': with this "
                    f"branch's copy gone, the merge keeps it as '{new}' alone") if untouched else (
                    f"{said}has renamed it to '{new}' since, and this branch has edited it under its old id: "
                    f"{merged} beside '{new}', one memory under two ids, the edit on the old one alone, {_OLDER}. "
                    f"Make the edit on '{new}' instead: run '{fix}', then "
                    f"'{compared.fix(f'merge {shell_word(against)}')}', and edit '{new}'")
        else:
            fix = f"{command(root)} forget {shell_word(memory_id)}"
            if not untouched:
                warnings.append(Problem(shown(root / path), 1, (
                    f"{said}has forgotten it since, and this branch has edited it: {merged} with the edit, "
                    f"{_OLDER}. Run '{fix}' if it is to stay forgotten (the edit goes with it); merged as it is, "
                    "the edit keeps it")))
                continue
            text = (f"{said}has forgotten it since, and this branch holds it as taken in: {merged}, {_OLDER}. "
                    f"Run '{fix}': it forgets it on this branch too, in one commit")
        problems.append(Problem(shown(root / path), 1, text))
    return problems


def _took_in(against: str, memory_id: str, theirs_first: bool) -> str:
    """How a problem about a memory both sides added as one starts, up to what ``against`` did to it
    since: ``against`` took it in from this branch, or (``theirs_first``) this branch from it."""
    if theirs_first:
        return f"this branch took memory {memory_id} in from {against} {PICKED}, and {against} "
    return f"{against} took memory {memory_id} in from this branch {SQUASHED} and "


def _undone_problems(compared: Branch, theirs: dict[str, tuple[str, str]], undone: dict[str, str],
                     renames: Callable[[], dict[str, str]]) -> list[Problem]:
    """One problem for each of ``_undone_forgets``'s memories: a rename (``renames``: the
    branch's), a forget of a memory the revision compared with edited since it took it in, or a
    plain forget."""
    if not undone:
        return []
    against, renamed = compared.against, renames()
    fix = compared.fix(f"merge {shell_word(against)}")
    theirs_first = compared.taken_from_against(list(undone))
    problems = []
    for path, shared in sorted(undone.items()):
        memory_id = id_of_path(path) or ""
        taken, edited = (
            (f"after taking it in from {against} {PICKED}", f", which {against} edited since")
            if path in theirs_first else (f"after {against} took it in from this branch {SQUASHED}", " and edited it"))
        if memory_id in renamed:
            new = renamed[memory_id]
            what = (f"this branch renamed memory {memory_id} to '{new}' {taken}: a plain git merge of this branch "
                    f"keeps it under both ids", f"it keeps it as {new} alone")
        elif theirs[path][1] != shared:
            what = (f"this branch forgot memory {memory_id} {taken}{edited}: a plain git merge of this "
                    "branch keeps that edit without a word",
                    "it stops on the forget against the edit, with the steps to keep either")
        else:
            what = (f"this branch forgot memory {memory_id} {taken}: a plain git merge of this branch keeps it",
                    "it keeps the memory forgotten")
        problems.append(Problem(shown(compared.root / path), 1,
                                f"{what[0]}, {_OLDER}. Run '{fix}': {what[1]}"))
    return problems


def _links_to_own_removals(compared: Branch, base: str, head: str, ours: dict[str, tuple[str, str]],
                           theirs: dict[str, tuple[str, str]], undone: list[str],
                           renames: Callable[[], dict[str, str]], given: set[str]) -> list[Problem]:
    """Links the revision compared with gained since they parted, in memories it added or
    changed, to memories this branch forgot (or renamed), ``undone``'s among them (taken in by
    that revision, then forgot), and to entities this branch deleted from the catalog: the
    branch's forget or delete stripped the links its clone held, not these, so a plain ``git
    merge`` makes a tree whose memory links nothing (and fails ``validate``). ``slayer-kb merge
    REF`` strips them, or points them at the new id. An id among ``given`` (the revision forgot
    it and gave it to another memory) is linked as that memory."""
    store = compared.store
    forgot = {id_of_path(path) or "" for path, (before, after) in ours.items()
              if id_of_path(path) is not None and before != NO_BLOB and after == NO_BLOB} - given
    forgot |= {id_of_path(path) or "" for path in undone}
    memories = {path: blobs for path, blobs in theirs.items() if id_of_path(path) is not None}
    changed = {path: blobs for path, blobs in memories.items() if blobs[1] != NO_BLOB}
    if not changed:  # the revision wrote no memory that could link what this branch removed
        return []
    deleted = deleted_entities(store, base, head, catalog_changed(store, base, head))
    if not forgot and not deleted:
        return []
    marks = [memory_link(i) for i in forgot] + delete_roots(deleted)  # what a text holding such a link holds

    def lost(entity: str) -> bool:
        linked = linked_id(entity)
        return linked in forgot if linked is not None else under(entity, deleted)

    texts = store.objects.read_many("blob", {blob for blobs in memories.values() for blob in blobs} - {NO_BLOB})
    moved: dict[str, str] | None = None  # {new id: old id} of the revision's renames, asked once if needed
    found = []  # (the memory's path, its id, the links it gained to what this branch removed)
    for path, (before, after) in sorted(changed.items()):
        text, memory_id = texts[after].decode("utf-8", "replace"), id_of_path(path) or ""
        if memory_id in forgot or not any(mark in text for mark in marks):
            continue  # a memory the branch forgot itself is a forget against an edit: a stop of its own
        was = memory_id
        if before == NO_BLOB:  # added there, or a memory it renamed: its links are the old file's
            if moved is None:
                moved = {new: old for old, new in renames_between(store, base, compared.against_sha).items()}
            was = moved.get(memory_id, memory_id)
            before = memories.get(f"{MEMORIES}/{was}.yaml", (NO_BLOB,))[0]
        old = links_in(texts[before].decode("utf-8", "replace"), was) if before != NO_BLOB else set()
        gained = sorted((e for e in links_in(text, memory_id) - old if lost(e)),
                        key=lambda e: (linked_id(e) is None, len(e) if linked_id(e) is not None else 0, e))
        if gained:
            found.append((path, memory_id, gained))
    if not found:
        return []
    renamed = renames() if forgot else {}
    fix = compared.fix(f"merge {shell_word(compared.against)}")
    problems = []
    for path, memory_id, gained in found:
        for entity in gained:
            i = linked_id(entity)
            what, does = ((f"which this branch renamed to '{renamed[i]}'", "points links to renamed memories at their "
                           "new ids") if i is not None and i in renamed else
                          ("which this branch forgot", "strips links to forgotten memories")
                          if i is not None else
                          ("which this branch deleted from the catalog",
                           "strips links to deleted entities, as the delete would have"))
            problems.append(Problem(
                shown(compared.root / path), 1,
                f"memory {memory_id}, which {compared.against} added or changed since this branch parted from it, "
                f"links '{entity}', {what}; merged as it is, the link would point at nothing. "
                f"Run '{fix}': it {does}, in one commit"))
    return problems


def merge_tree_stops(store: GitStore, head: str, against_sha: str) -> set[str] | None:
    """The KB paths of the KB's files a merge of ``head`` and ``against_sha`` stops on, as git's
    merge finds them (renames followed), in one ``git merge-tree --write-tree`` (git 2.38+; it
    writes the merged objects, nothing else). None where git has no such command."""
    proc = store.git("merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", head, against_sha,
                     check=False)
    if proc.returncode not in (0, 1):
        return None
    names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")[1:]
    return {name[len(store.prefix):] for name in names if name.startswith(store.prefix) and name}


def _merge_file_stops(store: GitStore, ours: dict[str, tuple[str, str]], theirs: dict[str, tuple[str, str]],
                      both: set[str]) -> set[str]:
    """``merge_tree_stops`` for git before 2.38: each file in ``both`` merged by a ``git
    merge-file``, each version written once, under a name of its own. A rename is not followed:
    one side's rename against the other's edit is a deletion against an edit here."""
    texts = store.objects.read_many("blob", {blob for path in both for blob in (*ours[path], theirs[path][1])}
                                    - {NO_BLOB})
    stopped = set()
    with tempfile.TemporaryDirectory(prefix="slayer-kb-merge-") as folder:
        for number, path in enumerate(sorted(both)):
            (before, mine), after = ours[path], theirs[path][1]
            if NO_BLOB not in (mine, after):  # else a forget against an edit: git stops on it
                versions = [Path(folder, f"{number}.{side}") for side in ("ours", "base", "theirs")]
                for version, blob in zip(versions, (mine, before, after), strict=True):
                    version.write_bytes(texts.get(blob, b""))
                if store.git("merge-file", "-q", "-p", *map(str, versions), check=False).returncode == 0:
                    continue
            stopped.add(path)
    return stopped
