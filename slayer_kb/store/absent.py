"""Files HEAD holds that the work tree lacks: deleted or moved by hand and not committed, or left
out by a sparse checkout (skip-worktree). What reads the work tree takes them for gone; a
command that would commit on that reading (``prune`` stripping the links to them) asks here
first, and refuses with ``missing_by_hand``'s words and fix; and the files changed and not
committed (``edited``), whose work-tree reading would decide such a commit too."""

from __future__ import annotations

import os
from collections.abc import Sequence

from .worktree import Repository, missing_by_hand, uncommitted

# The catalog's files, as ``catalog.catalog_files`` lists them (KB-relative; a folder ends in '/').
CATALOG_PATHS = ("datasources/", "models/", "priority.yaml")


def absent(store: Repository, kb_paths: Sequence[str]) -> list[str]:
    """Of ``kb_paths`` (files, or folders ending in '/'), the files HEAD holds that the work tree
    lacks, KB-relative and sorted: one ``git ls-tree``, a stat for each file it lists."""
    head = store.head()
    if head is None or not kb_paths:
        return []
    out = store.git("ls-tree", "-r", "-z", "--name-only", "--full-name", head, "--",
                    *[store.repo_path(path) for path in kb_paths]).stdout
    root = store.repo_path("")
    listed = [name.decode("utf-8", "surrogateescape")[len(root):] for name in out.split(b"\0") if name]
    return sorted(path for path in listed if not os.path.lexists(store.root / path))


def first_absent(store: Repository, kb_paths: Sequence[str]) -> str | None:
    """What became of the first of ``kb_paths`` that HEAD holds and the work tree lacks, and the
    fix (``missing_by_hand``); None when the work tree has every file HEAD has there."""
    for path in absent(store, kb_paths):
        if (said := missing_by_hand(store, path)) is not None:
            return said
    return None


def edited(store: Repository, kb_paths: Sequence[str]) -> list[str]:
    """Of ``kb_paths`` (files, or folders ending in '/'), the files changed in the work tree or
    git's index and not committed, sorted (``uncommitted``, git's index marks left alone)."""
    return sorted(uncommitted(store, kb_paths, rewrites=False))
