"""What a sync did, as its result says it (``SyncResult``): its renumberings, folds, strips and
the files it merged, kept in the sync's pull record (``store/pulls.py``) until the sync has said
it, so that the next sync says what one killed after its push (or before it) did not; and what
it pulled that an agent must hear of (``pulled_warnings``), said by the sync that pulled it
only: one killed before it said them leaves them to ``get``, ``log`` and ``validate``."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.errors import MemoryFileError
from ..core.locate import id_of_path
from ..core.outcomes import SyncResult
from .replaced import replaced_here

if TYPE_CHECKING:
    from ..context import Context

T = TypeVar("T")
# What a sync did, as its result says it: kept in its pull record (``store/pulls.py``) until it is said.
DONE = ("renumbered", "merged", "deduplicated", "unlinked", "cascaded", "relinked", "relinked_merged", "resolved",
        "unforgotten", "dropped", "session_projects", "followed")
# Of those, the ones keyed by a memory of this branch (a later renumbering moves them).
_KEPT_MEMORIES = ("unlinked", "cascaded", "relinked", "relinked_merged")


def reported(earlier: dict[str, Any], result: SyncResult) -> dict[str, Any]:
    """What ``result`` says the sync did, after what ``earlier`` (a sync left owed) did and did not
    report: the earlier renumberings composed with these, its strips under the ids these gave the
    memories, the rest joined."""
    said: dict[str, Any] = {}
    for name in DONE:
        now, before = getattr(result, name), earlier.get(name)
        if not isinstance(before, type(now)):  # none, or a record not of this build
            before = type(now)()
        if name == "renumbered":
            said[name] = dict(before)
            compose(said[name], now)
            continue
        if name in _KEPT_MEMORIES:
            before = dict(before)
            rename(before, result.renumbered)
        said[name] = _joined(before, now)
    return copy.deepcopy(said)  # the record keeps it as it is now, not as the result changes later


def _joined(old: Any, new: Any) -> Any:
    """``new`` with what ``old`` holds that it does not: lists in order, dicts key by key."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {key: _joined(old[key], new[key]) if key in old and key in new else new.get(key, old.get(key))
                for key in {**old, **new}}
    if isinstance(old, list) and isinstance(new, list):
        return old + [item for item in new if item not in old]
    return new


def compose(known: dict[str, str], mapping: dict[str, str]) -> None:
    """Add ``mapping`` to ``known`` as a map from each original id to its final id: a memory
    renumbered twice (27 -> 28 on one attempt, 28 -> 29 on the next) is 27 -> 29."""
    chained = {new: old for old, new in known.items()}
    for old, new in mapping.items():
        known[chained.get(old, old)] = new


def rename(moves: dict[str, T], mapping: dict[str, str]) -> None:
    """Key ``moves`` (by memory id) by each id's new one in ``mapping`` (old id -> new id)."""
    renamed = {mapping.get(memory_id, memory_id): value for memory_id, value in moves.items()}
    moves.clear()
    moves.update(renamed)


def pulled_warnings(kb: Context, broken: dict[str, MemoryFileError | None], start: str, upstream: str) -> list[str]:
    """A warning for each memory of this clone a merge pulled since ``start`` replaced with
    another under its id (replaced.py), and for each memory file the sync pulled that does not
    read as a memory (``broken``: each file the pull changed, why it does not read, or None),
    with the fix ``get`` gives: from now on get names it and search skips it, and the sync is the
    moment the agent's view changed."""
    warnings = replaced_here(kb.store, start, upstream)
    for path, problem in sorted(broken.items()):
        if problem is None or (memory_id := id_of_path(path)) is None:
            continue
        try:
            kb.read_with_fix(memory_id)
        except MemoryFileError as exc:
            problem = exc  # with the fix, as get says it
        warnings.append(f"pulled a memory file that does not read (get names it, search skips it): {problem}")
    return warnings
