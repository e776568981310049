"""What a clone holds of the ids leased from its remote (leases.py): the blocks, and the state file's
reading of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.errors import StoreError
from ..core.ids import MAX_AUTO_DIGITS, is_auto_id
from ..core.locate import MEMORIES_DIR, id_of_path

if TYPE_CHECKING:
    from .repo import GitStore

BLOCK = 100
# Offline blocks start here (ids 1,000,000,001 and up: leases.py).
OFFLINE_FIRST = 10_000_000


def block_of(memory_id: int) -> int:
    return (memory_id - 1) // BLOCK


def first_of(block: int) -> int:
    return block * BLOCK + 1


def offline(memory_id: int) -> bool:
    """Whether an id is in the offline range (or its first id's last neighbour), where no lease goes."""
    return block_of(memory_id + 1) >= OFFLINE_FIRST


def add_tops(tops: dict[int, int], names: list[str]) -> None:
    """Raise ``tops`` (block -> its highest auto id) to the auto ids of the memory files ``names``
    (KB-relative), offline ones left out."""
    for memory_id in map(id_of_path, names):
        if memory_id is not None and is_auto_id(memory_id) and not offline(n := int(memory_id)):
            tops[block_of(n)] = max(tops.get(block_of(n), 0), n)


def block_named(tail: str) -> int | None:
    """The block a ref's last part names (``refs/slayer-kb/ids/12``), or None for anything but the
    ASCII digits slayer-kb writes there: the remote's refs are anyone's to push, and ``²`` or
    ``١٢`` pass ``str.isdigit`` (``int`` refuses the first and reads the second as 12)."""
    return int(tail) if is_auto_id(tail) and len(tail) <= MAX_AUTO_DIGITS else None


@dataclass
class Leases:
    """What a clone holds: the remote's URL, its blocks with the next id of each (in the order
    they are used), the offline blocks whose refs the remote does not have yet, and the highest
    block it ever leased online (the next lease goes above it)."""

    # The git folder that holds the blocks, as (device, inode): see ``IdLeases._home``.
    home: list[int]
    remote_url: str = ""
    blocks: list[list[int]] = field(default_factory=list)
    unregistered: list[int] = field(default_factory=list)
    highest: int = -1
    # The remote answers but will not take our refs (a read-only clone, a hook, a protected
    # namespace): blocks are drawn as offline, without asking it, until a ``sync`` tries again.
    refused: bool = False
    # The commit each block's ref points at on the remote (block -> commit, of every block this
    # clone leased, used-up ones too: a number given with --id in one is this clone's to give): a
    # remote whose url changed (the repository moved) that holds the same refs is the same one.
    holders: dict[str, str] = field(default_factory=dict)
    # The highest auto id in each block (offline ones left out) of every memory the history of a
    # commit (and of those read before it) ever added, and that commit: a lease reads only the
    # commits since (``history_tops``).
    history: tuple[str, dict[int, int]] | None = None
    # The blocks this clone claimed for numbers given with --id, with the commit of each claim's
    # ref (block -> commit): a sync makes a claim deleted on the remote again (``IdLeases._keep``).
    claims: dict[str, str] = field(default_factory=dict)

    def left(self) -> int:
        """Ids still in hand (some may turn out to be taken by files and be skipped)."""
        return sum(first_of(k) + BLOCK - n for k, n in self.blocks)

    def to_json(self) -> dict[str, object]:
        return {"home": self.home, "remote": self.remote_url, "blocks": self.blocks,
                "unregistered": self.unregistered, "highest": self.highest, "refused": self.refused,
                "holders": self.holders, "claims": self.claims,
                **({"history": [self.history[0], sorted(self.history[1].items())]} if self.history else {})}


def history_of(value: object) -> tuple[str, dict[int, int]] | None:
    """``Leases.history`` as its state file holds it (``[COMMIT, [[BLOCK, ID], ...]]``); None for
    anything else, read again from git."""
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and value[0].isalnum()):
        return None
    try:
        return value[0], {int(block): int(top) for block, top in value[1]}
    except (TypeError, ValueError):
        return None


def history_tops(store: GitStore, held: Leases) -> dict[int, int]:
    """The highest auto id in each block (offline ids left out) that HEAD's history ever added,
    and the history of the commits it was read at before (a branch rebased or switched from: ids
    this clone has seen, whose blocks no lease takes either). Kept in ``held`` with the commit it
    was read at: a later lease reads only the commits since that one (the whole history once, and
    again when that commit is gone)."""
    head = store.head()
    if head is None:
        return {}
    known = held.history
    if known is not None and known[0] == head:
        return known[1]
    tops = dict(known[1]) if known is not None else {}
    under = f"{MEMORIES_DIR}/"
    try:
        added = store.added_paths(known[0] if known is not None else None, head, under=under)
    except StoreError:  # the commit read at is gone (a reset, then gc): read all history
        added = store.added_paths(None, head, under=under)
    add_tops(tops, added)
    held.history = (head, tops)
    return tops
