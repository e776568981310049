"""What ``validate`` says of a link to a memory that does not exist while a merge is not yet
synced: stopped on a conflict (``slayer-kb merge``'s, or the one sync's steps start), or committed
by hand (``git commit --no-edit`` after that stop) and not yet pushed. A link to an id a rename on
either side since they parted moved to a live id is no link to a forgotten memory: ``sync`` points
it at the new id (``renames.renamed_since``, as ``sync``'s ``strip_gone`` after a merge committed
by hand does). In a KB with no remote there is no sync: ``prune`` points it there, as it does a link
to any id a commit renamed to a live one (``cascade.prune``), which this module names too once no
merge is pending.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ..store.renames import ever_renamed, link_target, renamed_since
from ..store.repo import GitStore, find_toplevel


@dataclass(frozen=True)
class _Side:
    """A line of history whose renames since ``base`` a link follows, held at ``tip``; ``by``: who
    renamed, in the message's words; ``fix``: what to do, ``{command}`` and ``{new}`` filled in."""

    base: str
    tip: str
    by: str
    fix: str


class MergeRenames:
    """The id each id asked of has where a merge not yet synced leaves it, in the KB at ``root``,
    and who renamed it; None when no such merge is there or no rename moved it to a live id. git
    is asked only for the first dangling link (whether such a merge is there) and once an id."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._read: dict[str, tuple[str, _Side] | None] = {}

    @functools.cached_property
    def _merging(self) -> tuple[GitStore, list[_Side], bool] | None:
        """The store, the sides a link follows, and whether a merge stopped (MERGE_HEAD)."""
        if find_toplevel(self.root) is None:
            return None
        store = GitStore(self.root)
        sha = _commit(store, "MERGE_HEAD")
        if sha:
            base = _commit(store, "HEAD") and _merge_base(store, "HEAD", sha)
            # With no remote there is no sync to run: prune points such a link (cascade.prune).
            fix = "sync" if store.git("remote").stdout.strip() else "prune"
            after = f"leave it; once the merge is committed, '{{command}} {fix}' points it at {{new}}"
            return store, [_Side(base, sha, "the branch being merged (MERGE_HEAD) renamed", after),
                           _Side(base, "HEAD", "this branch renamed", after)] if base else [], True
        # A merge committed by hand among the commits sync has yet to push: sync's own rule.
        upstream = _commit(store, "@{upstream}")
        merge = upstream and store.git("rev-list", "-1", "--min-parents=2", "HEAD", f"^{upstream}",
                                       check=False).stdout.decode().strip()
        base = merge and _merge_base(store, f"{merge}^1", f"{merge}^2")
        return store, [_Side(base, "HEAD", f"a side of merge {merge[:12]}, not yet synced, renamed",
                             "leave it; '{command} sync' points it at {new}")] if base else [], False

    def __call__(self, memory_id: str) -> tuple[str, _Side] | None:
        if self._merging is None:
            return None
        store, sides, pending = self._merging
        if memory_id not in self._read:
            self._read[memory_id] = next(((new, side) for side in sides if (new := renamed_since(
                store, side.base, side.tip, [memory_id]).live.get(memory_id)) is not None), None) or _renamed(
                    store, memory_id, pending)
        return self._read.get(memory_id)


def _renamed(store: GitStore, memory_id: str, pending: bool) -> tuple[str, _Side] | None:
    """Where a commit of HEAD's history renamed ``memory_id`` (``renames.link_target``): no merge to
    sync (one committed by hand in a KB with no remote, or synced by a build that did not point
    such links), and ``prune`` points the link there; once a merge stopped (``pending``) is
    committed, as prune refuses to run before."""
    to = link_target(store, memory_id) if ever_renamed(store, memory_id) else None
    if to is None:
        return None
    fix = "run '{command} prune' to point it at {new}"
    return to[0], _Side("", "HEAD", f"commit {to[1][:12]} renamed", f"once the merge is committed, {fix}" if pending else fix)


def _commit(store: GitStore, rev: str) -> str:
    proc = store.git("rev-parse", "-q", "--verify", f"{rev}^{{commit}}", check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else ""


def _merge_base(store: GitStore, one: str, other: str) -> str:
    return store.git("merge-base", one, other, check=False).stdout.decode().strip()


def dangling(entity: str, target: str, command: str, renames: MergeRenames | None) -> str:
    """The problem of ``entity``, a link to ``target``, an id no memory has (``command``: slayer-kb
    as a fix runs it)."""
    moved = renames(target) if renames is not None else None
    if moved is None:
        return f"'{entity}' refers to a memory that does not exist (run '{command} prune' to strip it)"
    new, side = moved
    return f"'{entity}' refers to {target}, which {side.by} to {new}: {side.fix.format(command=command, new=new)}"
