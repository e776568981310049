"""``validate --against REF``: auto ids this branch added that REF already uses for another
memory (both sides allocated the next id), with the command that renumbers them."""

from __future__ import annotations

import shlex
from pathlib import Path

from ..core.errors import StoreError
from ..core.ids import is_auto_id
from ..core.locate import MEMORIES_DIR
from ..store.repo import GitStore, find_toplevel
from ..store.revisions import resolve_rev
from .problems import Problem, shown


def id_collisions(root: Path, files: dict[Path, str], against: str) -> list[Problem]:
    """The problems of the memory files ``files`` (path -> shown name) of the KB at ``root``."""
    store = _store(root)
    memories = store.repo_path(MEMORIES_DIR + "/")
    against_sha = resolve_rev(store, against)
    base_proc = store.git("merge-base", against_sha, "HEAD", check=False)
    if base_proc.returncode != 0:
        raise StoreError(f"'{against}' and HEAD have no common ancestor; cannot compare ids.")
    base = base_proc.stdout.decode().strip()
    at_base = set(_tree_blobs(store, base, memories))
    theirs = _tree_blobs(store, against_sha, memories)
    ours = {path.stem: (path, name) for path, name in files.items() if path.suffix == ".yaml"}
    kb = shown(root)
    command = "slayer-kb" + ("" if kb == "." else f" --kb {shlex.quote(kb)}") + f" renumber --onto {shlex.quote(against)}"
    problems = []
    for memory_id in sorted(ours, key=lambda i: (len(i), i)):
        path, name = ours[memory_id]
        if not is_auto_id(memory_id) or memory_id in at_base or memory_id not in theirs:
            continue
        local = store.git("hash-object", "--no-filters", "--", str(path)).stdout.decode().strip()
        if local == theirs[memory_id]:
            continue  # the same memory on both sides (merged or cherry-picked)
        problems.append(Problem(
            name, 1,
            f"auto id '{memory_id}' was added on this branch, but {against} already uses it for "
            f"another memory; run '{command}' to give this branch's memory a fresh id and "
            f"rewrite its memory:{memory_id} references, in one commit",
        ))
    return problems


def _store(root: Path) -> GitStore:
    if find_toplevel(root) is None:
        raise StoreError(f"--against needs a git repository; {root} is not in one.")
    return GitStore(root)


def _tree_blobs(store: GitStore, rev: str, folder: str) -> dict[str, str]:
    """``{id: blob}`` of ``memories/*.yaml`` at ``rev``."""
    proc = store.git("ls-tree", "-z", rev, "--", folder)
    out = {}
    for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        name = path.rsplit("/", 1)[-1]
        if name.endswith(".yaml"):
            out[name[:-5]] = meta.split()[2]
    return out
