"""A forget's cascade finished across two sides. ``forget`` strips ``memory:<id>`` from every
memory that links it, but only from those its clone holds: a memory the other side added or
changed meanwhile with a link to the forgotten id arrives linking nothing, which ``validate`` (and
sync's revalidation) refuse, and which a sync pushed from the other side (``main`` no longer
validating). After ``sync``'s rebase or merge, and ``slayer-kb merge``, such links are stripped
in one commit (``memory: strip links to forgotten 5 from 6``), as the forget would have stripped
them had the memory been there; the caller says which."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from ..core.errors import KBError
from ..core.locate import MEMORIES_DIR, id_of_path
from ..core.memory import Memory, with_entities
from ..store.repo import Change, GitStore
from ..transaction import Transaction, memory_change

if TYPE_CHECKING:
    from ..context import Context

_LINK = "memory:"


def strip_forgotten(kb: Context, store: GitStore, tx: Transaction, parted: str, stripped: dict[str, list[str]]) -> bool:
    """Strip from the memories either side added or changed since ``parted`` (where the sides
    parted) their links to memories that were there and are gone at HEAD (a side forgot them);
    True when it made the commit, ``stripped`` given each memory's forgotten ids."""
    out = store.git("diff", "--name-status", "-z", "--no-renames", "--diff-filter=ADM", parted, "HEAD", "--",
                    store.repo_path(f"{MEMORIES_DIR}/")).stdout.decode("utf-8", "surrogateescape").split("\0")
    gone: set[str] = set()
    changed: list[str] = []
    for status, path in zip(out[::2], out[1::2], strict=False):  # the output ends with a NUL
        memory_id = id_of_path(path[len(store.prefix):])
        if memory_id is not None and status == "D":
            gone.add(memory_id)
        elif memory_id is not None:
            changed.append(memory_id)
    if not gone or not changed:
        return False
    links = {_LINK + memory_id for memory_id in gone}
    changes: list[Change] = []
    rewritten: dict[str, Memory] = {}
    found: dict[str, list[str]] = {}
    for memory_id in changed:
        with contextlib.suppress(KBError):  # a file that does not parse: revalidation names it
            memory, text = kb.read_with_text(memory_id)
            kept = [entity for entity in memory.entities if entity not in links]
            if len(kept) < len(memory.entities):
                changes.append(memory_change(memory, with_entities(text, memory, kept)))
                rewritten[memory_id] = memory.evolve(entities=kept)
                found[memory_id] = [e[len(_LINK):] for e in memory.entities if e in links]
    if not changes:
        return False
    forgotten = sorted({i for ids in found.values() for i in ids})
    tx.commit(changes, f"memory: strip links to forgotten {', '.join(forgotten)} from {', '.join(found)}",
              rewritten)
    stripped.update(found)
    return True
