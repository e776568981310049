"""One memory per topic key: a key this branch saved first while the other side (``sync``'s
upstream, the branch ``merge`` takes in) saved it too is folded into the other side's memory, in
one commit (``memory: merge 102 into 28 (topic decision/retry-budget)``): the newest content, the
revision counts summed, this branch's version kept in git's history, and ``memory:`` references
to it rewritten. The caller records the moves (``store/moves.py``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.errors import KBError
from ..core.locate import memory_path
from ..core.memory import Memory
from ..core.merging import merge_topic_revisions
from ..store.repo import Change
from ..transaction import Transaction, memory_change
from .renumber import renumbered_text

if TYPE_CHECKING:
    from ..context import Context


def fold_topic_keys(kb: Context, tx: Transaction, ours: list[str], merged: dict[str, str],
                    catch_up: Callable[[], None]) -> bool:
    """Fold each of ``ours`` (the memories this branch adds) whose topic key another memory
    holds into the oldest such memory; True when it made the commit, the moves added to
    ``merged``. ``catch_up`` brings the index, which finds a key's holders, up to date: called only
    for a memory that has a key."""
    folds: dict[str, Memory] = {}
    changes: list[Change] = []
    for memory_id in ours:
        with contextlib.suppress(KBError):
            mine = kb.read(memory_id)
            if not mine.topic_key or mine.is_deleted:
                continue
            catch_up()
            theirs = [m for m in tx.live(topic_key=mine.topic_key, project=mine.project, scope=mine.scope)
                      if m.id != memory_id and m.id not in ours]
            if not theirs:
                continue
            keeper = min(theirs, key=lambda m: m.created_at)
            folded = merge_topic_revisions(None, keeper, mine)
            folds[memory_id] = folded
            changes += [memory_change(folded), Change(memory_path(memory_id), None)]
    if not folds:
        return False
    mapping = {old: m.id for old, m in folds.items()}
    for other_id, _memory, text in tx.referrers([f"memory:{old}" for old in mapping]):
        if other_id not in mapping:
            new_text = renumbered_text(other_id, text, mapping)
            if new_text is not None:
                changes.append(Change(memory_path(other_id), new_text.encode("utf-8")))
    moves = ", ".join(f"{old} into {new}" for old, new in mapping.items())
    keys = ", ".join(sorted({m.topic_key or "" for m in folds.values()}))
    tx.commit(changes, f"memory: merge {moves} (topic {keys})", {m.id: m for m in folds.values()})
    merged.update(mapping)
    return True
