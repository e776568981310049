"""Two branches, one auto id: ``renumber --onto REF`` (and the renumbering ``sync`` does).

With a remote, auto ids come from blocks leased there (``store/leases.py``) and never collide.
Ids allocated before leases, offline in a block another clone also chose, or with
``git config slayer-kb.ids sequential`` can: two branches can both create ``memories/42.yaml``.
The collision is detected from history alone: an auto-id memory at HEAD but not at the merge base
with REF collides when a commit reachable from REF and not from HEAD added ``memories/<same
id>.yaml`` (even one REF later deleted: auto ids are never reused). A memory both sides have
from one commit is one memory, whatever merge base git picks after criss-cross merges; for sync,
so is a save whose commit one side rewrote (amended, force-pushed) since this clone last fetched
the upstream holding it (``revisions.rewritten_alike``): its versions merge as edits. Each
colliding memory gets a fresh id (with leases, from this clone's blocks; else above every auto id
REF or this branch has ever used, in no block leased or claimed on the remote), and every
``memory:<old>`` reference in the branch's memories is rewritten to it. Only the entity lists
change; a ``memory:42`` written in the prose of a learning is left alone (it may mean anything).

``renumber`` adds one commit, after which ``git merge REF`` keeps both memories (git sees two
different files). A rebase replays the branch's commits one by one, and the first of them still
adds ``42.yaml``; for a rebase, ``renumber --rewrite`` (and ``sync``) instead rewrite the branch's
own unpushed commits as if the fresh ids had been allocated from the start, keeping each commit's
author, date and message; a message that names a renumbered id gets the new id and the move in its
subject (``memory: save 36 (renumber 35 -> 36)``) and a ``Renumbered-by: slayer-kb`` trailer.
A branch that ran ``renumber`` (one commit) and then rebases (``sync``, ``--rewrite``) has its
history rewritten the same way, each moved id to where that commit put it, the commit itself
dropped: replayed as it was, its first commits would add ``42.yaml`` over the upstream's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.errors import ConflictError, KBError
from ..core.ids import highest_auto_id, is_auto_id
from ..core.locate import MEMORIES_DIR, id_held, id_of_path, linked_id, memory_link, memory_path
from ..core.memory import loads, with_entities
from ..core.outcomes import RenumberResult
from ..core.problems import command, git_command, words
from ..core.text import listed
from ..store.idtrailer import without_trailer
from ..store.renames import trailer
from ..store.repo import Change, GitStore
from ..store.revisions import resolve_rev, rewritten_alike, same_memories
from ..store.worktree import reset_keep
from .snapshot import blob_at, memory_ids_at

if TYPE_CHECKING:
    from ..context import Context
    from ..transaction import Transaction

TRAILER = "Renumbered-by: slayer-kb"
# The note a rewritten commit's subject ends with: ' (renumber 35 -> 36, 40 -> 41)'.
_NOTE = re.compile(r" \(renumber ((?:[^\s,()]+ -> [^\s,()]+)(?:, [^\s,()]+ -> [^\s,()]+)*)\)$")




def merge_base(store: GitStore, a: str, b: str) -> str | None:
    proc = store.git("merge-base", a, b, check=False)
    return proc.stdout.decode().strip() or None


def _ids(paths: list[str]) -> set[str]:
    return {i for i in map(id_of_path, paths) if i}


def plan(kb: Context, onto: str, parted: str | None = None, *,
         replayed: bool = False, seen: str = "") -> tuple[str | None, dict[str, str]]:
    """(merge base, {old id: new id}) for the branch's auto ids that REF has ever used. With
    ``parted``, ``onto`` is a commit id and ``parted`` its merge base with HEAD, already known
    (sync asks on every push attempt). ``replayed`` (a rebase: sync, ``--rewrite``): also the ids
    that REF used and the branch's commits added and then moved away (a ``renumber`` commit),
    which a replay meets commit by commit, each to where it went (else to a fresh id). ``seen``
    (sync): the upstream as this clone last fetched it; a memory it held that one side's commit
    was rewritten since (``revisions.rewritten_alike``) is an edit of it, never renumbered."""
    base, colliding, used, moved = _collisions(kb.store, onto, parted, replayed, seen)
    if not colliding:
        return base, moved
    top = max(highest_auto_id(used), kb.highest_auto_id(listed=True))
    # With leases, from this clone's blocks: one above every id in sight may be in another
    # clone's block, whose next save would then be renumbered in turn. An id either side ever
    # used (a clone counting on its own may have) is skipped.
    def taken(n: int) -> bool:
        return str(n) in used or id_held(kb.memories_dir, n) is not None  # SLayer's <n>.md too

    fresh = kb.leased_ids(len(colliding), top, taken)
    if fresh is None:
        # Counting on its own (``slayer-kb.ids sequential``), still never in another clone's
        # leased block: that clone's next save would take the id, and its sync renumber it.
        fresh = kb.unleased_ids(len(colliding), top, taken)
    return base, {**moved, **dict(zip(colliding, fresh, strict=True))}


def refuse_clashes(store: GitStore, onto: str, parted: str, ref: str, retry: str, rebasing: bool = False,
                   default: Callable[[], str] | None = None) -> None:
    """Refuse ``slayer-kb merge REF`` or ``rebase REF`` (``retry``: the command as typed again, without
    ``slayer-kb``; ``onto``: REF's commit, parted from HEAD at ``parted``) before either writes
    anything, when this branch and REF each saved a new memory under one auto id (counted on each
    clone): git would stop on one file both created, with steps that merge two memories into one
    or keep this branch's under an id that no ``memory:`` link follows. The fix is a renumbering,
    ``--rewrite`` for a rebase (``rebasing``), whose replay would meet the first commit's file again.
    Which side's memory moves: this branch's, unless its upstream holds it and REF's is not on the
    remote's default branch (``default()``, its commit: ``folds.Standing.default_tip``; a reviewer's
    ``main`` merging an agent's branch)."""
    _base, colliding, _used, moved = _collisions(store, onto, parted, rebasing, "")
    head, paths = store.head() or "", {i: store.repo_path(memory_path(i)) for i in [*colliding, *moved]}
    # One memory both tips hold with one created_at (which a new save makes anew): its save's
    # commit rewritten on one side (amended, force-pushed), then edited; git's stop on it is an
    # edit against an edit, whose steps are the fix.
    alike = rewritten_alike(store, [paths[i] for i in colliding], onto, head, onto)
    # Only what REF holds at its tip clashes: an id it gave and then moved away (its own
    # renumbering) is no file both created.
    held = store.objects.blobs_at(store.objects.tree_of(onto), [paths[i] for i in colliding])
    ids = [i for i in paths if paths[i] not in alike and (i in moved or held[paths[i]])]
    if not ids:
        return
    kb, many = command(store.root), len(ids) > 1
    named = f"new memories as {', '.join(ids[:-1])} and {ids[-1]}" if many else f"a new memory as {ids[0]}"
    who, what, undone = ("Your commits", "rebase", "rebased") if rebasing else ("This branch", "merge", "merged")
    fix = f"renumber{' --rewrite' if rebasing else ''} --onto {words(ref)}"
    said = (f"{who} and {ref} each saved {named} (ids counted on each clone): two memories under "
            f"{'each' if many else 'one'} id, which the {what} would take for one file both created. Nothing was "
            f"{undone}.")
    upstream, clashing = store.tip("@{upstream}"), [paths[i] for i in ids]
    pushed = bool(upstream) and len(rewritten_alike(store, clashing, upstream, head, upstream)) == len(clashing)
    # REF's memories as the remote's default branch holds them (one created_at): the team holds
    # their ids, which a renumbering on REF's side would move, whatever this branch's upstream holds.
    tip = default() if pushed and default is not None else ""
    on_default = bool(tip) and len(rewritten_alike(store, clashing, tip, onto, onto)) == len(clashing)
    branch = store.branch() or "HEAD"
    if pushed and not on_default:
        # This branch's upstream holds these memories (one created_at): the team may hold their
        # ids, which a renumbering here would move.
        raise ConflictError(
            f"{said} This branch's {'memories are' if many else 'memory is'} on {branch}'s upstream already, where "
            f"others may hold {'their ids' if many else 'its id'}: give {ref}'s the fresh "
            f"{'ids' if many else 'id'} instead, on the branch {ref} is ('{kb} renumber --onto {words(branch)}' "
            f"there), then '{kb} {retry}' again.")
    links = ", ".join(memory_link(i) for i in ids)
    them = "them" if many else "it"
    how = (f"as if saved under {them} (the {links} links to {them} rewritten in your commits)" if rebasing
           else f"(the {links} links to {them} rewritten, in one commit)")
    why = (f" {ref}'s {'are' if many else 'is'} on the remote's default branch, where the team holds "
           f"{'their ids' if many else 'its id'}; this branch's only on {branch}'s upstream." if on_default else "")
    raise ConflictError(
        f"{said}{why} Run '{kb} {fix}' to give this branch's {'memories fresh ids' if many else 'memory a fresh id'} "
        f"{how}, then '{kb} {retry}' again.")


def _collisions(store: GitStore, onto: str, parted: str | None, replayed: bool,
                seen: str) -> tuple[str | None, list[str], set[str], dict[str, str]]:
    """(merge base, the branch's auto ids that REF has ever used, the ids either side ever
    committed (empty when nothing collides), and with ``replayed`` the ids moved away to where
    they went)."""
    head = store.head()
    if head is None:
        return None, [], set(), {}
    onto_sha = onto if parted else resolve_rev(store, onto)
    base = parted or merge_base(store, onto_sha, head)
    under = f"{MEMORIES_DIR}/"
    # The branch's new memories: at HEAD but not at the merge base (after a merge of REF, REF's
    # memories are in the merge base, so they never count as the branch's).
    ours = added_since(store, base, head) if base else memory_ids_at(store, head)
    # What REF added in commits this branch does not have: a memory both sides have from one
    # commit is the same memory, whatever merge base git picks (criss-cross merges).
    theirs = _ids(store.added_paths(head, onto_sha, under))
    # A memory one side first added as a version the other's history held is one memory under
    # two commits (a rebase replayed it, or it was cherry-picked or squash-merged), not two.
    def collides(ids: set[str]) -> list[str]:
        both = sorted(i for i in ids & theirs if is_auto_id(i))
        alike = same_memories(store, [f"{MEMORIES_DIR}/{i}.yaml" for i in both], base, head, onto_sha)
        apart = [i for i in both if f"{MEMORIES_DIR}/{i}.yaml" not in alike]
        # A save the upstream held when this clone last fetched it, whose commit one side rewrote
        # since (amended, force-pushed): one memory, edited, whatever its text now.
        rewritten = rewritten_alike(store, [store.repo_path(memory_path(i)) for i in apart], seen, head, onto_sha)
        return sorted((i for i in apart if store.repo_path(memory_path(i)) not in rewritten), key=int)

    colliding = collides(ours)
    moved: dict[str, str] = {}
    if replayed and base:
        gone = collides(_ids(store.added_paths(base, head, under)) - ours)
        moved = {old: new for old, new in _renames(store, base, head).items() if old in gone} if gone else {}
        colliding += [i for i in gone if i not in moved]
    if not colliding:
        return base, [], set(), moved
    return base, colliding, theirs | _ids(store.added_paths(None, head, under)), moved


def _renames(store: GitStore, base: str, head: str) -> dict[str, str]:
    """{old id: new id} for the memory files the commits ``base..head`` renamed (``renumber``)."""
    out = store.git("log", "--format=", "-M", "--name-status", "-z", "--diff-filter=R", head, f"^{base}", "--",
                    store.repo_path(f"{MEMORIES_DIR}/")).stdout.decode("utf-8", "surrogateescape")
    tokens = [t.strip("\n") for t in out.split("\0")]
    found: dict[str, str] = {}
    for at, token in enumerate(tokens):
        if token.startswith("R") and at + 2 < len(tokens):
            old, new = (id_of_path(t[len(store.prefix):]) for t in tokens[at + 1:at + 3])
            if old and new:
                found.setdefault(old, new)  # newest first: the last move
    return found


def added_since(store: GitStore, base: str, head: str) -> set[str]:
    """The memory ids at ``head`` that are not at ``base``: one diff, not two listings of every
    memory (sync asks on every push attempt)."""
    out = store.git("diff", "--name-only", "-z", "--no-renames", "--diff-filter=A", base, head, "--",
                    store.repo_path(f"{MEMORIES_DIR}/")).stdout.decode("utf-8", "surrogateescape")
    return _ids([p[len(store.prefix):] for p in out.split("\0") if p])


def renumbered_text(memory_id: str, text: str, mapping: dict[str, str]) -> str | None:
    """``text`` with its ``memory:<old>`` entities pointed at the new ids (each listed once), or
    None if none."""
    try:
        memory = loads(text, memory_id)
    except KBError:
        return None
    # Two old ids may point at one new one (a fold's, and a rename the other side gave the folded
    # memory, both linked after a merge): the link is listed once, as validate requires.
    entities = list(dict.fromkeys(_mapped(e, mapping) for e in memory.entities))
    if entities == memory.entities:
        return None
    return with_entities(text, memory, entities)


def _mapped(entity: str, mapping: dict[str, str]) -> str:
    if (old := linked_id(entity)) is not None and old in mapping:
        return memory_link(mapping[old])
    return entity


def renumber(kb: Context, onto: str, *, rewrite: bool = False) -> RenumberResult:
    """Give the branch's colliding auto-id memories fresh ids (see the module doc)."""
    with kb.transaction() as tx:
        require_clean(kb.store, None if rewrite else f"{MEMORIES_DIR}/")
        base, mapping = plan(kb, onto, replayed=rewrite)
        result = RenumberResult(onto, mapping)
        if not mapping:
            return result
        if rewrite:
            tip = rewrite_commits(kb.store, base, mapping)
            reset_keep(kb.store, tip)
            kb.reread()
            result.commit = tip
            # An agent of this clone may still hold an old id: it refuses, as after sync.
            kb.record_moves(mapping, "renumber")
            return result
        result.commit, result.rewritten = renumber_commit(kb, tx, mapping, onto)
        kb.record_moves(mapping, "renumber")
        return result


def rewrite_commits(store: GitStore, base: str | None, mapping: dict[str, str]) -> str:
    """Rewrite the commits ``base..HEAD`` as if ``mapping``'s new ids had been allocated; the new tip."""
    head = store.head()
    assert head is not None
    span = [head] if base is None else [head, f"^{base}"]
    rows = store.git("rev-list", "--reverse", "--parents", *span).stdout.decode().split("\n")
    parent = base
    for row in filter(None, rows):
        commit, *parents = row.split()
        if len(parents) > 1:
            raise ConflictError(
                f"The branch has a merge commit ({commit[:12]}) since it left the upstream; "
                f"renumbering cannot rewrite it. Run '{command(store.root)} renumber --onto REF' (adds one "
                f"commit) and '{git_command(store.root, 'merge REF')}' instead."
            )
        tree = _renumbered_tree(store, base, commit, mapping)
        if parent is not None and tree == store.objects.tree_of(parent) != store.objects.tree_of(parents[0]):
            continue  # its change was the move itself (a renumber commit), now made from the start
        parent = _recommit(store, commit, tree, parent, mapping)
    assert parent is not None
    return parent


def _renumbered_tree(store: GitStore, base: str | None, commit: str, mapping: dict[str, str]) -> str:
    under = store.repo_path(f"{MEMORIES_DIR}/")
    if base is None:
        listing = store.git("ls-tree", "-r", "-z", "--name-only", commit, "--", under).stdout
    else:
        listing = store.git("diff-tree", "-r", "-z", "--name-only", "--no-renames", base, commit, "--", under).stdout
    removed: dict[str, str | None] = {}
    added: dict[str, str | None] = {}
    for raw in filter(None, listing.split(b"\0")):
        kb_path = raw.decode("utf-8", "surrogateescape")[len(store.prefix):]
        memory_id = id_of_path(kb_path)
        data = blob_at(store, commit, kb_path) if memory_id else None
        if memory_id is None or data is None:
            continue
        text = data.decode("utf-8", "replace")
        new_text = renumbered_text(memory_id, text, mapping)
        new_id = mapping.get(memory_id, memory_id)
        if new_text is None and new_id == memory_id:
            continue
        if new_id != memory_id:
            removed[store.repo_path(kb_path)] = None
        added[store.repo_path(memory_path(new_id))] = store.objects.write("blob", (new_text or text).encode("utf-8"))
    objects = store.objects
    # Removals first, so a file written under a path wins over that path's removal.
    return objects.update_tree(objects.tree_of(commit), {**removed, **added})


def _recommit(store: GitStore, commit: str, tree: str, parent: str | None, mapping: dict[str, str]) -> str:
    meta = store.git("log", "-1", "--format=%an%x00%ae%x00%aI%x00%B", commit).stdout.decode("utf-8", "replace")
    name, email, date, message = meta.split("\0", 3)
    # The highest auto id its trailer named was of the old parent's history (store/idfloor.py).
    message = without_trailer(message)
    subject, newline, body = message.partition("\n")
    # A commit renumbered before (a sync's earlier attempt): its note is composed with this move,
    # from each original id to its final one, not a second note naming an id it held for a moment.
    note = _NOTE.search(subject)
    earlier = dict(move.split(" -> ") for move in note.group(1).split(", ")) if note else {}
    bare = subject[:note.start()] if note else subject
    touched = [old for old in mapping if re.search(_id_token(old), f"{bare}\n{body}")]
    if touched:
        original = {new: old for old, new in earlier.items()}
        moves = {**{old: new for old, new in earlier.items() if new not in touched},
                 **{original.get(old, old): mapping[old] for old in touched}}
        said = ", ".join(f"{old} -> {new}" for old, new in moves.items())
        # The subject names the ids as they are now, and the move ('memory: save 36 (renumber
        # 35 -> 36)'), so that 'log 36' tells what happened; the body is kept as written.
        pattern = "|".join(_id_token(old) for old in sorted(touched, key=len, reverse=True))
        bare = re.sub(pattern, lambda m: mapping[m.group(0)], bare)
        body = "\n".join(line for line in body.split("\n") if not line.startswith(TRAILER)).rstrip("\n")
        newline = newline if body.strip() else ""
        message = f"{bare} (renumber {said}){newline}{body}\n\n{TRAILER} ({said})"
    return store.commit_tree(tree, parent, message + "\n",
                             {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date})


def _id_token(memory_id: str) -> str:
    """A regex matching ``memory_id`` as a whole word of a commit message (not part of 135, 3.5)."""
    return rf"(?<![\w.-]){re.escape(memory_id)}(?![\w.-])"


def require_clean(store: GitStore, under: str | None = None) -> None:
    """Renumbering and syncing move files under the work tree; tracked changes must be committed
    (all of them for a rebase, those under the folder ``under`` for a renumber commit): the
    check the cascades, forget and update make too (``GitStore.uncommitted``)."""
    if store.head() is None:
        return
    dirty = sorted(store.uncommitted(None if under is None else [under], rewrites=False))
    if dirty:
        raise ConflictError(
            f"The repository has uncommitted changes to tracked files ({listed(dirty)}); commit or "
            "stash them (git stash) and run the command again."
        )


def renumber_commit(kb: Context, tx: Transaction, mapping: dict[str, str],
                    onto: str) -> tuple[str | None, list[str]]:
    """One commit moving each of ``mapping``'s memories to its new id, the ``memory:``
    references to them rewritten: (the commit, the memories whose references it rewrote)."""
    changes, rewritten = moved(kb, tx, mapping)
    moves = ", ".join(f"{old} -> {new}" for old, new in mapping.items())
    # A change git's index hides (a mark) would go into the commit, or be deleted: refused.
    tx.rewrite(lambda: (changes, None))
    # Each move recorded as rename's is (renames.py): 'show 4 --rev' of a revision before it follows it.
    recorded = "\n".join(trailer(old, new) for old, new in mapping.items())
    return tx.commit(changes, f"memory: renumber {moves} (onto {onto}){rewrote_note(rewritten)}\n\n{recorded}"), rewritten


def moved(kb: Context, tx: Transaction, mapping: dict[str, str]) -> tuple[list[Change], list[str]]:
    """The changes that move each of ``mapping``'s memories from HEAD's file to its new id, the
    ``memory:`` references to them rewritten (theirs too), and the memories whose references
    they rewrite: for ``renumber`` and ``rename``."""
    head = tx.head()
    assert head is not None
    changes: list[Change] = []
    rewritten: list[str] = []
    for other_id, _memory, text in tx.referrers([memory_link(old) for old in mapping]):
        if other_id in mapping:
            continue
        new_text = renumbered_text(other_id, text, mapping)
        if new_text is not None:
            changes.append(Change(memory_path(other_id), new_text.encode("utf-8")))
            rewritten.append(other_id)
    for old, new in mapping.items():
        data = blob_at(kb.store, head, memory_path(old))
        if data is None:  # a file never committed (a rename's): refused, never committed here
            tx.require_committed(memory_path(old))
        assert data is not None
        text = data.decode("utf-8")
        data = (renumbered_text(old, text, mapping) or text).encode("utf-8")
        changes += [Change(memory_path(old), None), Change(memory_path(new), data)]
    return changes, sorted(rewritten)


def rewrote_note(rewritten: list[str]) -> str:
    """A move's commit message body: the memories whose references it rewrote, if any."""
    return f"\n\nRewrote memory: references in {', '.join(rewritten)}" if rewritten else ""

