"""What a clone holds of the ids leased from its remote (leases.py): the blocks, and the state file's
reading of them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.ids import MAX_AUTO_DIGITS, is_auto_id

BLOCK = 100


def block_of(memory_id: int) -> int:
    return (memory_id - 1) // BLOCK


def first_of(block: int) -> int:
    return block * BLOCK + 1


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
    # commit ever added, and that commit: ``IdLeases._floor`` reads only the commits since.
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
