"""Where the folds a branch made are read from: the subjects of fold commits (``fold_moves``,
``folded_to``), and, for a rename one side made of a memory the other side folded, the merge's
own parents (``held_fold``): a merge that stopped on the rename's edit is the fold's commit, and
a message the person wrote over (``git commit -m``) no longer tells it."""

from __future__ import annotations

from ..core.locate import memory_path
from ..core.merging import folded_by
from .gitenv import LITERAL_PATHS
from .renames import renames_between
from .repo import GitStore


def fold_moves(store: GitStore, parted: str, side: str) -> list[dict[str, str]]:
    """The moves (folded id -> the id kept) of each fold's commit between ``parted`` and ``side``,
    oldest first (``core.merging.folded_by``): the one reading of folds a branch made."""
    subjects = store.git("log", "--format=%s", "--grep=^memory: merge ", side, "--not", parted).stdout.decode(
        "utf-8", "replace").splitlines()
    return [fold[0] for subject in reversed(subjects) if (fold := folded_by(subject)) is not None]


def folded_to(store: GitStore, parted: str, side: str) -> dict[str, str]:
    """Each id a fold's commit between ``parted`` and ``side`` moved -> the id its memory ended at
    (a later fold of the memory kept followed on; a later fold of the id wins)."""
    folds: dict[str, str] = {}
    for moves in fold_moves(store, parted, side):
        folds.update(moves)
    found = {}
    for old, new in folds.items():
        seen = {old}
        while new in folds and new not in seen:
            seen.add(new)
            new = folds[new]
        found[old] = new
    return found


def held_fold(store: GitStore, memory_id: str) -> tuple[str, str, str] | None:
    """(the id kept, the merge's commit, the id renamed) when a merge of HEAD's history took
    ``memory_id`` away as the new id of a rename one parent made of a memory the other parent
    folded since they parted (``carry.follow_folds``' held rename, its merge ended by the person,
    whatever its message says); None else. git's history of the file follows the parent that never
    held it, so no commit shows as its deletion there; ``--full-history -m`` finds the merge."""
    if store.head() is None:
        return None
    out = store.git("log", "--full-history", "-m", "--diff-filter=D", "--merges", "--format=%H %P", "HEAD", "--",
                    store.repo_path(memory_path(memory_id)), env=LITERAL_PATHS).stdout.decode().splitlines()
    for line in dict.fromkeys(out):  # -m lists a merge once per parent
        commit, *parents = line.split()
        if len(parents) != 2:
            continue
        parted = store.git("merge-base", *parents, check=False).stdout.decode().strip()
        if not parted:
            continue
        for folding, renaming in (parents, parents[::-1]):
            olds = [old for old, new in renames_between(store, parted, renaming).items() if new == memory_id]
            kept = folded_to(store, parted, folding) if olds else {}
            if olds and olds[0] in kept:
                return kept[olds[0]], commit, olds[0]
    return None
