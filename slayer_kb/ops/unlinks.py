"""A delete's cascade finished across two sides. ``forget`` strips ``memory:<id>`` from every
memory that links it, and a catalog delete (``delete-model``, ``delete-datasource``,
``delete-column`` ...) strips the entity and everything under it, but only from the memories its
clone holds: a memory the other side added or changed meanwhile arrives linking nothing, which
``validate`` (and sync's revalidation) refuse, and which a sync pushed from the other side
(``main`` no longer validating). After ``sync``'s rebase or merge, ``slayer-kb merge`` and
``slayer-kb rebase``, such links are stripped, one commit for forgotten memories (``memory: strip
links to forgotten 5 from 6``) and one for deleted entities (``memory: strip deleted shop.orders
from 6``), as the delete would have stripped them had the memory been there; the caller says which.
A link to a memory a side renamed (``rename`` records the move, renames.py) is not stripped but
pointed at the new id, in a commit of its own (``memory: rewrite links to renamed 1 as kb.revenue
in 6``), as the rename would have rewritten it.

Every memory at HEAD is looked at, not only those changed since the sides parted: a memory
pushed before a merge committed by hand, or on a sync's retry, links across commits that the
diff from where the sides parted does not hold (``git grep`` finds the few that link)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.errors import KBError
from ..core.locate import MEMORIES_DIR, MEMORY_LINK, id_of_path, linked_id, memory_link
from ..core.memory import Memory, loads, with_entities
from ..store.renames import Renamed, renamed_since, renames_between
from ..store.repo import Change, GitStore
from ..transaction import Transaction, memory_change
from .snapshot import CATALOG_DIRS, absent_at_head, deleted_entities, under

if TYPE_CHECKING:
    from ..context import Context


def strip_gone(kb: Context, store: GitStore, tx: Transaction, parted: str, tip: str, unlinked: dict[str, list[str]],
               cascaded: dict[str, list[str]], relinked: dict[str, dict[str, str]], before: str = "",
               other: str = "") -> bool:
    """Strip from the memories at HEAD their links to memories that were there at ``parted``
    (where the sides parted) and are gone at HEAD (a side forgot them), and the catalog entities
    that were there and are gone (a side deleted them); point those to a memory a side renamed at
    its new id, and strip the new id's links too where that memory is gone (renamed on one side,
    forgotten on the other, the forget kept by hand). An id a side renamed and then gave a new
    memory (``--reuse-id``) keeps its links but those the other side, which ``tip`` is or is not,
    added to the memory it knew: they follow the rename. ``before``: this branch as it was before a
    rebase replayed it, whose renames a conflict resolved by hand may have undone. ``other``: the
    commit merged in, whose memories HEAD lacks this side forgot too, younger than ``parted`` as
    they may be (taken in by a squash merge, then forgotten here). True when it made a commit,
    ``unlinked`` given each memory's forgotten ids, ``cascaded`` its deleted entities and
    ``relinked`` its renamed ids ({old: new})."""
    folders = [store.repo_path(f"{MEMORIES_DIR}/"), *(store.repo_path(f"{d}/") for d in CATALOG_DIRS)]
    out = store.git("diff", "--name-status", "-z", "--no-renames", "--diff-filter=DM", parted, "HEAD", "--",
                    *folders).stdout.decode("utf-8", "surrogateescape").split("\0")
    forgotten: set[str] = set()
    changed: set[str] = set()  # a memory renamed away and its id given again is among them
    catalog_changed: set[str] = set()
    for status, path in zip(out[::2], out[1::2], strict=False):  # the output ends with a NUL
        memory_id = id_of_path(path[len(store.prefix):])
        if memory_id is not None and status == "D":
            forgotten.add(memory_id)
        elif memory_id is not None:
            changed.add(memory_id)
        elif memory_id is None and path.endswith(".yaml"):
            catalog_changed.add(path[len(store.prefix):])
    if other:
        out = store.git("diff", "--name-only", "-z", "--no-renames", "--diff-filter=D", other, "HEAD", "--",
                        store.repo_path(f"{MEMORIES_DIR}/")).stdout.decode("utf-8", "surrogateescape").split("\0")
        forgotten.update(i for i in (id_of_path(path[len(store.prefix):]) for path in out if path) if i is not None)
    made = False
    # A side renamed it (and the new id is still there): its links follow, as the rename's did.
    olds = forgotten | changed
    renamed = renamed_since(store, parted, "HEAD", olds, before) if olds else Renamed({}, {})
    moved = {old: new for old, new in renamed.live.items() if old not in changed}
    if moved:
        found_moved = _relink(kb, store, tx, moved)
        relinked.update(found_moved)
        made = bool(found_moved)
        forgotten -= set(moved)
    if reused := {old: new for old, new in renamed.live.items() if old in changed}:
        for follow_up, holders in _unaware(store, parted, tip, reused):
            found_moved = _relink(kb, store, tx, follow_up, holders)
            for memory_id, follow in found_moved.items():
                relinked.setdefault(memory_id, {}).update(follow)
            made = made or bool(found_moved)
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


def _unaware(store: GitStore, parted: str, tip: str,
             reused: dict[str, str]) -> list[tuple[dict[str, str], set[str]]]:
    """For ids renamed and given again since ``parted`` ({old: new}): the memories the side that
    did not rename them changed (``tip``'s when the renames are not ``tip``'s, else HEAD's since
    ``tip``), whose links to an old id meant the memory renamed; one pair a side."""
    theirs = renames_between(store, parted, tip)
    pairs: list[tuple[dict[str, str], set[str]]] = []
    for renamer, (start, end) in ((True, (tip, "HEAD")), (False, (parted, tip))):
        links = {old: new for old, new in reused.items() if (old in theirs) == renamer}
        if links:
            out = store.git("diff", "--name-only", "-z", "--no-renames", start, end, "--",
                            store.repo_path(f"{MEMORIES_DIR}/")).stdout.decode("utf-8", "surrogateescape")
            pairs.append((links, {i for p in out.split("\0") if p and (i := id_of_path(p[len(store.prefix):]))}))
    return pairs


def _relink(kb: Context, store: GitStore, tx: Transaction, moved: dict[str, str],
            holders: set[str] | None = None) -> dict[str, dict[str, str]]:
    """One commit pointing every ``memory:<old>`` at HEAD (in ``holders`` only, when given) at
    ``moved``'s new id; each rewritten memory's {old: new}."""

    def fix(entity: str) -> str:
        old = linked_id(entity)
        return memory_link(moved[old]) if old is not None and old in moved else entity

    def subject(changed: set[str]) -> str:
        olds = sorted((e.removeprefix(MEMORY_LINK) for e in changed), key=_order)
        return f"memory: rewrite links to renamed {', '.join(f'{old} as {moved[old]}' for old in olds)} in"

    found = _rewrite(kb, store, tx, sorted(memory_link(old) for old in moved), fix, subject, holders)
    return {m: {old: moved[old] for old in (e.removeprefix(MEMORY_LINK) for e in entities)} for m, entities in found.items()}


def _strip(kb: Context, store: GitStore, tx: Transaction, patterns: list[str], gone: Callable[[str], bool],
           subject: Callable[[set[str]], str]) -> dict[str, list[str]]:
    """One commit stripping the entities ``gone`` says from every memory at HEAD that holds one
    (found by ``git grep`` of ``patterns``; ``subject`` the message up to the memories' ids);
    each rewritten memory's stripped entities."""
    return _rewrite(kb, store, tx, patterns, lambda entity: None if gone(entity) else entity, subject)


def _rewrite(kb: Context, store: GitStore, tx: Transaction, patterns: list[str], fix: Callable[[str], str | None],
             subject: Callable[[set[str]], str], among: set[str] | None = None) -> dict[str, list[str]]:
    """One commit giving every memory at HEAD (of ``among``, when given) that holds an entity
    ``fix`` changes (found by ``git grep`` of ``patterns``) what ``fix`` makes of it (None:
    dropped); each rewritten memory's entities that changed, as they were."""
    if not patterns:
        return {}
    args = [arg for pattern in patterns for arg in ("-e", pattern)]
    grep = store.git("grep", "-l", "-z", "-F", *args, "HEAD", "--", store.repo_path(f"{MEMORIES_DIR}/"),
                     check=False).stdout.decode("utf-8", "surrogateescape")
    holders = sorted({i for p in grep.split("\0") if p and (i := id_of_path(p.partition(":")[2][len(store.prefix):]))
                      and (among is None or i in among)}, key=_order)
    changes: list[Change] = []
    rewritten: dict[str, Memory] = {}
    found: dict[str, list[str]] = {}
    at_head = absent_at_head(store, kb.root, holders)  # where grep found them
    for memory_id in holders:
        with contextlib.suppress(KBError, UnicodeDecodeError):  # a file that does not parse: revalidation names it
            held = at_head.get(memory_id)
            text = held.decode("utf-8") if held is not None else None
            memory, text = (loads(text, memory_id), text) if text is not None else kb.read_with_text(memory_id)
            fixed = [fix(entity) for entity in memory.entities]
            if fixed != memory.entities:
                # A link rewritten to one the memory holds already is held once.
                kept = list(dict.fromkeys(e for e in fixed if e is not None))
                changes.append(memory_change(memory, with_entities(text, memory, kept)))
                rewritten[memory_id] = memory.evolve(entities=kept)
                found[memory_id] = [e for e in memory.entities if fix(e) != e]
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
