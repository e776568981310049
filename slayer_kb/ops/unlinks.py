"""A delete's cascade finished across two sides. ``forget`` strips ``memory:<id>`` from every
memory that links it, and a catalog delete (``delete-model``, ``delete-datasource``,
``delete-column`` ...) strips the entity and everything under it, but only from the memories its
clone holds: a memory the other side added or changed meanwhile arrives linking nothing, which
``validate`` (and sync's revalidation) refuse, and which a sync pushed from the other side
(``main`` no longer validating). After ``sync``'s rebase or merge, ``slayer-kb merge`` and
``slayer-kb rebase``, such links are stripped, one commit for forgotten memories (``memory: strip
links to forgotten 5 from 6``) and one for deleted entities (``memory: strip deleted shop.orders
from 6``), as the delete would have stripped them had the memory been there; the caller says which.
A link to a memory a side renamed (``rename`` records the move, renames.py; or moved by hand in
one commit, the same bytes: guesses.moved_by_hand) is not stripped but pointed at the new id, in
a commit of its own (``memory: rewrite links to renamed 1 as kb.revenue in 6``), as the rename
would have rewritten it. So is a link to a memory a side folded into another (``memory: merge 27
into 201 (...)``, folds.py): pointed at the memory kept (``memory: rewrite links to merged 27 as
201 in 6``), as the fold rewrote the links it found.

Every memory at HEAD is looked at, not only those changed since the sides parted: a memory
pushed before a merge committed by hand, or on a sync's retry, links across commits that the
diff from where the sides parted does not hold (``git grep`` finds the few that link)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.errors import KBError
from ..core.locate import MEMORIES_DIR, MEMORY_LINK, id_of_path, linked_id, memory_link, memory_path
from ..core.memory import Memory, loads, with_entities
from ..store.foldlog import folded_to
from ..store.guesses import moved_by_hand
from ..store.renames import Renamed, crossings, renamed_since, renames_between
from ..store.repo import Change, GitStore
from ..transaction import Transaction, memory_change
from .snapshot import CATALOG_DIRS, absent_at_head, blobs_at, deleted_entities, under

if TYPE_CHECKING:
    from ..context import Context


def strip_gone(kb: Context, store: GitStore, tx: Transaction, parted: str, tips: tuple[str, str],
               unlinked: dict[str, list[str]], cascaded: dict[str, list[str]], relinked: dict[str, dict[str, str]],
               relinked_merged: dict[str, dict[str, str]], before: str = "", other: str = "") -> bool:
    """Strip from the memories at HEAD their links to memories that were there at ``parted``
    (where the sides parted) and are gone at HEAD (a side forgot them), and the catalog entities
    that were there and are gone (a side deleted them); point those to a memory a side renamed at
    its new id, and strip the new id's links too where that memory is gone (renamed on one side,
    forgotten on the other, the forget kept by hand). An id a side renamed and then gave a new
    memory (``--reuse-id``) keeps its links but those the side that did not rename it holds and
    the renaming side's version of that memory does not (``tips``: the other side's tip, then this
    side's before the merge or rebase): they meant the memory renamed, and follow it. ``before``:
    this branch as it was before a rebase replayed it, whose renames a conflict resolved by hand
    may have undone. ``other``: the commit merged in, whose memories HEAD lacks this side forgot
    too, younger than ``parted`` as they may be (taken in by a squash merge, then forgotten here).
    True when it made a commit, ``unlinked`` given each memory's forgotten ids, ``cascaded`` its
    deleted entities, ``relinked`` its renamed ids ({old: new}) and ``relinked_merged`` its ids a
    fold merged into another memory ({folded: kept})."""
    folders = [store.repo_path(f"{MEMORIES_DIR}/"), *(store.repo_path(f"{d}/") for d in CATALOG_DIRS)]
    out = store.git("diff", "--name-status", "-z", "--no-renames", "--diff-filter=ADM", parted, "HEAD", "--",
                    *folders).stdout.decode("utf-8", "surrogateescape").split("\0")
    forgotten: set[str] = set()
    changed: set[str] = set()  # a memory renamed away and its id given again is among them
    added = False  # a rename adds its new id: without one, no changed memory was renamed and reused
    catalog_changed: set[str] = set()
    for status, path in zip(out[::2], out[1::2], strict=False):  # the output ends with a NUL
        memory_id = id_of_path(path[len(store.prefix):])
        if memory_id is None:
            if path.endswith(".yaml") and status != "A":
                catalog_changed.add(path[len(store.prefix):])
        elif status == "D":
            forgotten.add(memory_id)
        elif status == "M":
            changed.add(memory_id)
        else:
            added = True
    if other:
        out = store.git("diff", "--name-only", "-z", "--no-renames", "--diff-filter=D", other, "HEAD", "--",
                        store.repo_path(f"{MEMORIES_DIR}/")).stdout.decode("utf-8", "surrogateescape").split("\0")
        forgotten.update(i for i in (id_of_path(path[len(store.prefix):]) for path in out if path) if i is not None)
    made = False
    # A side renamed it (and the new id is still there): its links follow, as the rename's did.
    olds = (forgotten | changed) if added else forgotten
    renamed = renamed_since(store, parted, "HEAD", olds, before) if olds else Renamed({}, {})
    moved = {old: new for old, new in renamed.live.items() if old not in changed}
    reused = {old: new for old, new in renamed.live.items() if old in changed}
    # Folded into another memory (a fold's commit), or moved by hand in one commit (no rename's
    # trailer, the same bytes): a move, not a forget. An id a rename's chain accounts for, one that
    # ended in a forget too, goes where that chain says.
    merged = _folded_since(store, parted, forgotten - set(moved) - set(renamed.gone))
    moved.update(merged)
    if by_hand := forgotten - set(moved) - set(renamed.gone):
        moved.update(moved_by_hand(store, parted, "HEAD", by_hand))
    follow = _unaware_links(store, parted, tips, reused) if reused else {}
    if moved or follow:
        # One pass, the composed mapping: a link is rewritten once (kb.other -> kb.r, never on to
        # where the earlier kb.r went).
        found_moved = _relink(kb, store, tx, moved, follow, set(merged))
        for memory_id, follow_up in found_moved.items():
            for old, new in follow_up.items():
                (relinked_merged if old in merged else relinked).setdefault(memory_id, {})[old] = new
        made = bool(found_moved)
        forgotten -= set(moved)
    forgotten |= set(renamed.gone.values())
    if forgotten:
        links = {memory_link(memory_id) for memory_id in forgotten}
        found = _strip(kb, store, tx, sorted(links), links.__contains__, lambda gone: (
            f"memory: strip links to forgotten {', '.join(sorted({e.removeprefix(MEMORY_LINK) for e in gone}, key=_order))}"
            " from"))
        unlinked.update({m: [e.removeprefix(MEMORY_LINK) for e in entities] for m, entities in found.items()})
        made = made or bool(found)
    deleted = deleted_entities(store, parted, "HEAD", catalog_changed)
    if deleted:
        # The delete's roots (shop.orders, not each of its columns): what the commit names and grep looks for.
        roots = sorted(e for e in deleted if not under(e.rpartition(".")[0], deleted))
        found = _strip(kb, store, tx, roots, lambda e: under(e, deleted), lambda gone: (
            f"memory: strip deleted {', '.join(r for r in roots if any(_under_root(e, r) for e in gone))} from"))
        cascaded.update(found)
        made = made or bool(found)
    return made


def _unaware_links(store: GitStore, parted: str, tips: tuple[str, str],
                   reused: dict[str, str]) -> dict[str, dict[str, str]]:
    """For ids renamed and given again since ``parted`` ({old: new}): each memory's links to an
    old id that the side that did not rename it holds and the renaming side's version of that
    memory does not ({memory: {old: new}}): made where the rename had not arrived, they meant the
    memory renamed. An id both sides renamed has no such side (sync stops on it first: reuses.py);
    nor has one the other side forgot and gave again itself (a ``Crossing``): its links to the id
    mean the memory it gave it to."""
    sides = [renames_between(store, parted, tip) for tip in tips]
    pairs = {old: (tips[1], tips[0]) if old in sides[0] else (tips[0], tips[1])
             for old in reused if (old in sides[0]) != (old in sides[1])}
    crossed = {c.memory_id for c in crossings(store, parted, tips)} if pairs else set()
    pairs = {old: pair for old, pair in pairs.items() if old not in crossed}
    if not pairs:
        return {}
    args = [arg for old in pairs for arg in ("-e", memory_link(old))]
    found: dict[str, dict[str, str]] = {}
    for unaware in dict.fromkeys(u for u, _r in pairs.values()):
        grep = store.git("grep", "-l", "-z", "-F", *args, unaware, "--", store.repo_path(f"{MEMORIES_DIR}/"),
                         check=False).stdout.decode("utf-8", "surrogateescape")
        ids = [i for p in grep.split("\0") if p and (i := id_of_path(p.partition(":")[2][len(store.prefix):]))]
        olds = [old for old, (u, _r) in pairs.items() if u == unaware]
        wanted = [(rev, memory_path(i)) for i in ids for rev in (unaware, pairs[olds[0]][1])]
        texts = iter(blobs_at(store, wanted))
        for memory_id in ids:
            held, theirs = (_links(next(texts), memory_id) for _ in range(2))
            for old in olds:
                if memory_link(old) in held and memory_link(old) not in theirs:
                    found.setdefault(memory_id, {})[old] = reused[old]
    return found


def _links(text: bytes | None, memory_id: str) -> set[str]:
    """The ``memory:`` links of a memory file's text (none when absent or unreadable)."""
    with contextlib.suppress(KBError, UnicodeDecodeError):
        if text is not None:
            return {e for e in loads(text.decode("utf-8"), memory_id).entities if linked_id(e) is not None}
    return set()


def _folded_since(store: GitStore, parted: str, ids: set[str]) -> dict[str, str]:
    """Of ``ids``, those a fold's commit since ``parted`` (``core.merging.folded_by``) moved, each to
    the id that holds its memory at HEAD (a fold of the memory kept followed on); one whose
    memory is gone at HEAD is left out (a forget after the fold: stripped)."""
    if not ids:
        return {}
    found = {old: new for old, new in folded_to(store, parted, "HEAD").items() if old in ids}
    paths = {new: store.repo_path(memory_path(new)) for new in found.values()}
    held = store.objects.blobs_at(store.objects.tree_of(store.head() or ""), paths.values()) if found else {}
    return {old: new for old, new in found.items() if held[paths[new]] is not None}


def _relink(kb: Context, store: GitStore, tx: Transaction, moved: dict[str, str],
            follow: dict[str, dict[str, str]], merged: set[str]) -> dict[str, dict[str, str]]:
    """One commit pointing every ``memory:<old>`` at HEAD at ``moved``'s new id, and each
    memory's links ``follow`` names at theirs; each rewritten memory's {old: new}. ``merged``:
    the ids of ``moved`` a fold moved, said so in the commit's subject."""

    def fix(memory_id: str, entity: str) -> str:
        old = linked_id(entity)
        new = None if old is None else moved.get(old, follow.get(memory_id, {}).get(old))
        return entity if new is None else memory_link(new)

    def subject(changed: set[str]) -> str:
        pairs = sorted({(old, moved.get(old) or next(f[old] for f in follow.values() if old in f))
                        for old in (e.removeprefix(MEMORY_LINK) for e in changed)}, key=lambda pair: _order(pair[0]))
        said = [f"{why} {', '.join(f'{old} as {new}' for old, new in chosen)}" for why, chosen in (
            ("renamed", [p for p in pairs if p[0] not in merged]), ("merged", [p for p in pairs if p[0] in merged]))
            if chosen]
        return f"memory: rewrite links to {' and '.join(said)} in"

    olds = {*moved, *(old for mapping in follow.values() for old in mapping)}
    found = _rewrite(kb, store, tx, sorted(memory_link(old) for old in olds), fix, subject)
    return {m: {(old := e.removeprefix(MEMORY_LINK)): moved.get(old) or follow[m][old] for e in entities}
            for m, entities in found.items()}


def _strip(kb: Context, store: GitStore, tx: Transaction, patterns: list[str], gone: Callable[[str], bool],
           subject: Callable[[set[str]], str]) -> dict[str, list[str]]:
    """One commit stripping the entities ``gone`` says from every memory at HEAD that holds one
    (found by ``git grep`` of ``patterns``; ``subject`` the message up to the memories' ids);
    each rewritten memory's stripped entities."""
    return _rewrite(kb, store, tx, patterns, lambda _m, entity: None if gone(entity) else entity, subject)


def _rewrite(kb: Context, store: GitStore, tx: Transaction, patterns: list[str],
             fix: Callable[[str, str], str | None], subject: Callable[[set[str]], str]) -> dict[str, list[str]]:
    """One commit giving every memory at HEAD that holds an entity ``fix`` (given the memory's id
    and the entity) changes (found by ``git grep`` of ``patterns``) what ``fix`` makes of it
    (None: dropped); each rewritten memory's entities that changed, as they were."""
    if not patterns:
        return {}
    args = [arg for pattern in patterns for arg in ("-e", pattern)]
    grep = store.git("grep", "-l", "-z", "-F", *args, "HEAD", "--", store.repo_path(f"{MEMORIES_DIR}/"),
                     check=False).stdout.decode("utf-8", "surrogateescape")
    holders = sorted({i for p in grep.split("\0") if p and (i := id_of_path(p.partition(":")[2][len(store.prefix):]))},
                     key=_order)
    changes: list[Change] = []
    rewritten: dict[str, Memory] = {}
    found: dict[str, list[str]] = {}
    at_head = absent_at_head(store, kb.root, holders)  # where grep found them
    for memory_id in holders:
        with contextlib.suppress(KBError, UnicodeDecodeError):  # a file that does not parse: revalidation names it
            held = at_head.get(memory_id)
            text = held.decode("utf-8") if held is not None else None
            memory, text = (loads(text, memory_id), text) if text is not None else kb.read_with_text(memory_id)
            fixed = [fix(memory_id, entity) for entity in memory.entities]
            if fixed != memory.entities:
                # A link rewritten to one the memory holds already is held once.
                kept = list(dict.fromkeys(e for e in fixed if e is not None))
                changes.append(memory_change(memory, with_entities(text, memory, kept)))
                rewritten[memory_id] = memory.evolve(entities=kept)
                found[memory_id] = [e for e in memory.entities if fix(memory_id, e) != e]
    if changes:
        changed = {e for entities in found.values() for e in entities}
        # A change git's index hides (a mark) would go into the commit: refused, as a forget refuses it.
        tx.rewrite(lambda: (changes, None))
        tx.commit(changes, f"{subject(changed)} {', '.join(found)}", rewritten)
    return found


def _under_root(entity: str, root: str) -> bool:
    return entity == root or entity.startswith(root + ".")


def _order(memory_id: str) -> tuple[int, str]:
    return len(memory_id), memory_id
