"""Where the folds a branch made are read from: the subjects of fold commits (``fold_moves``,
``folded_to``), and, for a rename one side made of a memory the other side folded, the merge's
own parents (``held_fold``): a merge that stopped on the rename's edit is the fold's commit, and
a message the person wrote over (``git commit -m``) no longer tells it."""

from __future__ import annotations

from ..core.locate import MEMORIES_DIR, id_of_path, memory_path
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
    out = store.git("log", "--full-history", "-m", "--no-renames", "--diff-filter=D", "--merges", "--format=%H %P", "HEAD", "--",
                    store.repo_path(memory_path(memory_id)), env=LITERAL_PATHS).stdout.decode().splitlines()
    for line in dict.fromkeys(out):  # -m lists a merge once per parent
        commit, *parents = line.split()
        if (found := _held_at(store, parents).get(memory_id)) is not None:
            return found[0], commit, found[1]
    return None


def held_fold_said(kept: str, merge: str, old: str) -> str:
    """``held_fold``'s answer (the id kept, the merge's commit, the id renamed) in words, as
    ``Context.folded_in`` says a fold: what get's error and show's heading say of it."""
    return (f"merged into '{kept}' in commit {merge[:12]}, the merge of the rename of {old} to it, {old} having been "
            f"merged into {kept} on the other side")


def held_folds(store: GitStore, parted: str, side: str) -> dict[str, str]:
    """Each id a merge between ``parted`` and ``side`` took away as ``held_fold`` reads it, whose
    message is no fold's (``git commit -m`` over the fold's subject) -> the id kept: what
    ``folded_to`` would read from that subject. Only merges that deleted a memory file against a
    parent are read (one ``git log`` finds them; most merges delete none)."""
    out = store.git("log", "--merges", "--full-history", "-m", "--no-renames", "--diff-filter=D", "--name-only", "-z",
                    "--format=%x01%H %P%x00%s", side, "--not", parted, "--",
                    f"{store.repo_path(MEMORIES_DIR)}/", env=LITERAL_PATHS).stdout.decode("utf-8", "surrogateescape")
    deleted: dict[tuple[str, str], set[str]] = {}  # (the merge and its parents, its subject): the ids it deleted
    for entry in filter(None, out.split("\x01")):
        commits, _, rest = entry.partition("\0")
        subject, _, names = rest.partition("\0")
        ids = {i for name in names.split("\0") if (i := id_of_path(name.strip("\n").removeprefix(store.prefix)))}
        deleted.setdefault((commits, subject), set()).update(ids)
    found: dict[str, str] = {}
    for (commits, subject), ids in reversed(deleted.items()):
        if folded_by(subject) is None:
            found.update({new: kept for new, (kept, _old) in _held_at(store, commits.split()[1:]).items()
                          if new in ids})
    return found


def _held_at(store: GitStore, parents: list[str]) -> dict[str, tuple[str, str]]:
    """Of a merge of ``parents``: each new id of a rename one parent made since they parted of a
    memory the other parent folded since -> (the id kept, the id renamed)."""
    return {new: (kept, old) for old, (kept, new, _folding) in renamed_folded(store, parents).items()}


def renamed_folded(store: GitStore, parents: list[str]) -> dict[str, tuple[str, str, int]]:
    """Of a merge of ``parents``: each id one parent renamed since they parted of a memory the
    other parent folded since -> (the id kept, the new id, the folding parent's index)."""
    if len(parents) != 2:
        return {}
    parted = store.git("merge-base", *parents, check=False).stdout.decode().strip()
    found: dict[str, tuple[str, str, int]] = {}
    for folding, renaming in ((0, 1), (1, 0)) if parted else ():
        renamed = renames_between(store, parted, parents[renaming])
        kept = folded_to(store, parted, parents[folding]) if renamed else {}
        found.update({old: (kept[old], new, folding) for old, new in renamed.items() if old in kept})
    return found
