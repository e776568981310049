"""What ``validate`` says of a link to a memory that does not exist while a merge stopped on a
conflict (``slayer-kb merge``'s, or the one sync's steps start): a link this branch made to an
id the branch being merged renamed is no link to a forgotten memory. Once the merge is
committed, ``sync`` points it at the new id (``renames.renamed_since``, as ``merge`` does after
a merge that finishes); ``prune``, the fix for a dangling link, would strip a link to a live one.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ..store.renames import renamed_since
from ..store.repo import GitStore, find_toplevel


class MergeRenames:
    """The id each id asked of has at ``MERGE_HEAD``, when a merge is in progress in the KB at
    ``root`` and the branch being merged renamed it since the two parted; None otherwise. git is
    asked only for the first dangling link (whether a merge is in progress) and once an id."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._read: dict[str, str | None] = {}

    @functools.cached_property
    def _merging(self) -> tuple[GitStore, str, str] | None:
        if find_toplevel(self.root) is None:
            return None
        store = GitStore(self.root)
        merged = store.git("rev-parse", "-q", "--verify", "MERGE_HEAD^{commit}", check=False)
        if merged.returncode != 0:
            return None
        sha = merged.stdout.decode().strip()
        base = store.git("merge-base", "HEAD", sha, check=False).stdout.decode().strip()
        return (store, base, sha) if base else None

    def __call__(self, memory_id: str) -> str | None:
        if self._merging is None:
            return None
        if memory_id not in self._read:
            store, base, sha = self._merging
            self._read[memory_id] = renamed_since(store, base, sha, [memory_id]).live.get(memory_id)
        return self._read[memory_id]


def dangling(entity: str, target: str, command: str, renames: MergeRenames | None) -> str:
    """The problem of ``entity``, a link to ``target``, an id no memory has (``command``: slayer-kb
    as a fix runs it)."""
    new = renames(target) if renames is not None else None
    if new is None:
        return f"'{entity}' refers to a memory that does not exist (run '{command} prune' to strip it)"
    return (f"'{entity}' refers to {target}, which the branch being merged (MERGE_HEAD) renamed to {new}: leave it; "
            f"once the merge is committed, '{command} sync' points it at {new}")
