"""Which blocks a lease takes (leases.py): above every block leased on the remote, above this
clone's and above the highest auto id the branch has held, and never one that is busy though the
remote has no ref of it (``busy``).

The remote's refs alone cannot say which blocks are free: a remote that lost them (moved by its
branches alone, a ``push --mirror`` from a plain clone) would let a lease take a block the branch
holds memories of, or another clone's that it may still be drawing on. Nor does the ``floor`` a
save gives always say where auto ids are: a number given with ``--id`` in a claimed block, or an
offline id, says nothing of it (``floor``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..core.locate import MEMORIES_DIR
from . import counted
from .leaseheld import OFFLINE_FIRST, Leases, add_tops, block_of, history_tops, offline
from .listing import file_names

if TYPE_CHECKING:
    from .repo import GitStore


def choose(store: GitStore, held: Leases, floor: int, leased: Iterable[int], claimed: set[int],
           blocks: int) -> tuple[list[int], int]:
    """The ``blocks`` blocks the next lease asks the remote for, given the blocks ``leased`` and
    ``claimed`` there, each above every one leased there, above this clone's and above ``floor``
    (as ``floor_of`` reads it), none busy (``busy``) nor in the offline range; and that floor, which
    the first id drawn from each goes above."""
    leased = set(leased)
    floor = floor_of(store, held, floor, claimed)
    start = [block_of(floor + 1), held.highest + 1, *(k + 1 for k in leased)]
    first = max(k for k in start if k < OFFLINE_FIRST)
    taken = busy(store, held) | leased | claimed
    chosen: list[int] = []
    while len(chosen) < blocks:
        chosen += [] if first in taken else [first]
        first += 1
    return chosen, floor


def busy(store: GitStore, held: Leases) -> set[int]:
    """The blocks no lease takes though the remote has no ref of them (it lost them: moved by its
    branches alone): those the branch holds a memory of (or its history, once read for a claim:
    read whole, it costs 40 s at 30,000 commits), another clone's it may still draw on, and those
    the lease state records (this clone's, used up or offline). Ids counted before leases (1, 2, 3
    in a KB that had no remote) are no other clone's: those this clone counted itself, and block 0
    while the branch holds ids of no other block (a team's first lease goes on at 4, as before)."""
    tops = dict(held.history[1]) if held.history is not None else {}
    add_tops(tops, tree_names(store))
    held_ids = {k for k, top in tops.items() if top > counted.highest(store.git_dirs()[1])}
    return ((held_ids if held_ids != {0} else set()) | {int(k) for k in held.holders}
            | set(held.unregistered) | {k for k, _n in held.blocks})


def floor_of(store: GitStore, held: Leases, floor: int, claimed: set[int]) -> int:
    """``floor`` without the ids that say nothing about where auto ids are: numbers given with
    --id in ``claimed`` blocks, and offline ids (a lease never goes into the offline range). When
    ``floor`` is one, the highest other auto id the branch's history ever added or its work tree
    holds: an id below it, a forgotten one too, is never handed out again."""
    if block_of(floor) not in claimed and not offline(floor):
        return floor
    tops = dict(history_tops(store, held))
    add_tops(tops, tree_names(store))
    return max((top for block, top in tops.items() if block not in claimed), default=0)


def tree_names(store: GitStore) -> list[str]:
    """The memory files of the work tree (KB-relative)."""
    return [f"{MEMORIES_DIR}/{name}" for name in file_names(store.root / MEMORIES_DIR)]
