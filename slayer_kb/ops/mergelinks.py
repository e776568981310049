"""What ``validate`` says of a link to a memory that does not exist while a merge is not yet
synced: stopped on a conflict (``slayer-kb merge``'s, or the one sync's steps start), or committed
by hand (``git commit --no-edit`` after that stop) and not yet pushed. A link to an id a rename on
either side since they parted moved to a live id is no link to a forgotten memory: ``sync`` points
it at the new id (``renames.renamed_since``, as ``sync``'s ``strip_gone`` after a merge committed
by hand does). In a KB with no remote there is no sync: ``prune`` points it there, as it does a link
to any id a commit renamed to a live one (``cascade.prune``), which this module names too once no
merge is pending, and a link to an id a fold merged into another memory (``fold_target``): a
merge of the branches by hand, with plain git, leaves it for no sync to point.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ..core.locate import MEMORIES_DIR, memory_path
from ..core.merging import folded_by
from ..core.problems import cd_step, git_command, words
from ..core.text import listed
from ..store.absent import CATALOG_PATHS, edited, first_absent
from ..store.gitstate import rebase_tips
from ..store.guesses import moved_to
from ..store.renames import deletions, ever_renamed, link_target, renamed_since
from ..store.repo import GitStore, find_toplevel


@dataclass(frozen=True)
class _Side:
    """A line of history whose renames since ``base`` a link follows, held at ``tip``; ``by``: who
    renamed, in the message's words; ``fix``: what to do, ``{command}`` and ``{new}`` filled in."""

    base: str
    tip: str
    by: str
    fix: str
    also: str = ""  # the branch as it was before the rebase in progress replayed it (``renamed_since``)
    to: str = "to"  # the word before the new id: "renamed to", "merged into"


class MergeRenames:
    """The id each id asked of has where a merge not yet synced leaves it, in the KB at ``root``,
    and who renamed it; None when no such merge is there or no rename moved it to a live id. git
    is asked only for the first dangling link (whether such a merge is there) and once an id."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._read: dict[str, tuple[str, _Side] | None] = {}

    @functools.cached_property
    def _merging(self) -> tuple[GitStore, list[_Side], str] | None:
        """The store, the sides a link follows, and, while a merge or rebase stopped, the words a
        fix that writes starts with (``until``)."""
        if find_toplevel(self.root) is None:
            return None
        store = GitStore(self.root)
        # A rebase stopped (two renames of one memory: its steps drop this branch's): each
        # command that writes refuses until it is concluded, and its end points such links.
        if tips := rebase_tips(store.git_dirs()[0]):
            onto, began = tips
            base = _merge_base(store, onto, began)
            until = ("once the rebase is concluded ('{command} rebase --continue' when its conflicts are resolved, or "
                     "'{command} rebase --abort'), ")
            return store, [_Side(base, "HEAD", "the rebase in progress moves",
                                 "leave it; '{command} rebase --continue' points it at {new}", began)] if base else [], until
        sha = _commit(store, "MERGE_HEAD")
        if sha:
            base = _commit(store, "HEAD") and _merge_base(store, "HEAD", sha)
            # With no remote there is no sync to run: prune points such a link (cascade.prune).
            fix = "sync" if store.git("remote").stdout.strip() else "prune"
            after = f"leave it; once the merge is committed, '{{command}} {fix}' points it at {{new}}"
            until = (f"once the merge is concluded ('{git_command(self.root, 'commit --no-edit')}' when its conflicts "
                     f"are resolved, or '{git_command(self.root, 'merge --abort')}'), ")
            return store, [_Side(base, sha, "the branch being merged (MERGE_HEAD) renamed", after),
                           _Side(base, "HEAD", "this branch renamed", after)] if base else [], until
        # A merge committed by hand among the commits sync has yet to push: sync's own rule.
        upstream = _commit(store, "@{upstream}")
        merge = upstream and store.git("rev-list", "-1", "--min-parents=2", "HEAD", f"^{upstream}",
                                       check=False).stdout.decode().strip()
        base = merge and _merge_base(store, f"{merge}^1", f"{merge}^2")
        return store, [_Side(base, "HEAD", f"a side of merge {merge[:12]}, not yet synced, renamed",
                             "leave it; '{command} sync' points it at {new}")] if base else [], ""

    @property
    def until(self) -> str:
        """The words a fix that writes (``prune``) starts with while a merge or rebase stopped,
        ``{command}`` to be filled in; else, while a file HEAD holds is missing from the work tree,
        what became of it and its fix (``prune`` refuses till then: ``absent``); empty otherwise."""
        if self._merging is None:
            return ""
        return self._merging[2] or self._absent

    @property
    def until_catalog(self) -> str:
        """``until`` for a catalog reference that does not resolve: else, while a catalog file
        holds an edit not committed (which may be what dropped it, and while it is there prune
        refuses: ``cascade``), committing or undoing it, the fix that comes first."""
        if self._merging is None:
            return ""
        return self.until or self._catalog_edit

    @functools.cached_property
    def _catalog_edit(self) -> str:
        assert self._merging is not None
        changed = edited(self._merging[0], CATALOG_PATHS)
        if not changed:
            return ""
        steps = cd_step(self.root)
        commit = "; ".join([*steps, f"git add -- {words(*changed)}", "git commit"])
        undo = "; ".join([*steps, f"git checkout HEAD -- {words(*changed)}"])
        said = (f"{listed(changed)} {'has' if len(changed) == 1 else 'have'} changes that are not committed, and "
                f"prune refuses till then: commit them ({commit}) or undo them ({undo})")
        return f"first: {said.replace('{', '{{').replace('}', '}}')}; then "

    @functools.cached_property
    def _absent(self) -> str:
        assert self._merging is not None
        store = self._merging[0]
        said = first_absent(store, CATALOG_PATHS) or first_absent(store, [f"{MEMORIES_DIR}/"])
        return f"first: {said.removesuffix('.').replace('{', '{{').replace('}', '}}')}; then " if said else ""

    def __call__(self, memory_id: str) -> tuple[str, _Side] | None:
        if self._merging is None:
            return None
        store, sides, until = self._merging
        if memory_id not in self._read:
            self._read[memory_id] = next(((new, side) for side in sides if (new := _moved(store, side, memory_id))
                                          is not None), None) or _renamed(store, memory_id, until)
        return self._read.get(memory_id)


def _moved(store: GitStore, side: _Side, memory_id: str) -> str | None:
    """Where ``side``'s renames leave ``memory_id``. ``renamed_since`` reads an id it is asked of as
    one the memory held where the sides parted; an id only a rename of the branch before the rebase
    gave (its rename, which the stop's steps dropped) is followed from the id it came from."""
    held = not side.also or store.objects.blobs_at(store.objects.tree_of(side.base),
                                                   [store.repo_path(memory_path(memory_id))]).popitem()[1]
    return renamed_since(store, side.base, side.tip, [memory_id] if held else [], side.also).live.get(memory_id)


def _renamed(store: GitStore, memory_id: str, until: str) -> tuple[str, _Side] | None:
    """Where a commit of HEAD's history renamed ``memory_id`` (``renames.link_target``), or moved
    it by hand (``guesses.moved_to``): no merge to
    sync (one committed by hand in a KB with no remote, or synced by a build that did not point
    such links), and ``prune`` points the link there; once a merge or rebase stopped is concluded
    (``until``: the words saying so), as prune refuses to run before."""
    fix = "run '{command} prune' to point it at {new}"
    if ever_renamed(store, memory_id):  # link_target knows a rename's chain, and the forget before one
        to = link_target(store, memory_id)
        return None if to is None else (to[0], _Side("", "HEAD", f"commit {to[1][:12]} renamed", until + fix))
    if (to := fold_target(store, memory_id)) is not None:  # the memory lives on in the one kept
        return to[0], _Side("", "HEAD", f"commit {to[1][:12]} merged", until + fix, to="into")
    if (to := moved_to(store, memory_id)) is not None:  # git mv, committed: the memory lives on
        return to[0], _Side("", "HEAD", f"commit {to[1][:12]} moved by hand", until + fix)
    return None


def fold_target(store: GitStore, memory_id: str) -> tuple[str, str] | None:
    """Where a link to ``memory_id`` goes when the commit that last deleted its file is a fold's
    (``memory: merge 201 into 27 (...)``, ``folds.py``): the id that holds the memory at HEAD (a
    fold of the kept one followed on) and that commit; None for any other deletion, or when the
    memory is gone at HEAD (forgotten since)."""
    head, seen, found = store.head(), {memory_id}, None
    at = memory_id
    while head is not None and (last := deletions(store, at, 1)):
        message = store.objects.commit(last[0]).partition(b"\n\n")[2].decode("utf-8", "replace")
        fold = folded_by(message.partition("\n")[0])
        if fold is None or at not in fold[0] or fold[0][at] in seen:
            return None
        at = fold[0][at]
        seen.add(at)
        found = found or last[0]
        path = store.repo_path(memory_path(at))
        if store.objects.blobs_at(store.objects.tree_of(head), [path])[path] is not None:
            return at, found
    return None


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
        until = renames.until.format(command=command) if renames is not None else ""
        return f"'{entity}' refers to a memory that does not exist ({until}run '{command} prune' to strip it)"
    new, side = moved
    return (f"'{entity}' refers to {target}, which {side.by} {side.to} {new}: "
            f"{side.fix.format(command=command, new=new)}")
