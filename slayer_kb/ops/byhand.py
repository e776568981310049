"""A merge among the commits a sync pushes that no ``slayer-kb merge`` finished: committed by hand
(``git commit`` after a stopped ``slayer-kb merge``), a plain ``git merge``, or a ``slayer-kb
merge`` killed between its merge's commit and its fixes. Sync makes now what that merge would
have made: the links to memories the other side forgot stripped (and to those it renamed or
folded pointed on), and a topic key the two sides each saved folded into one memory, the one the
team holds (``folds.Standing``), as ``slayer-kb merge`` folds it (none left after one that did).
Such a merge pushed with a plain ``git push`` is folded alike by the next sync that pulls it
(``fold_pulled``), whichever clone's."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.outcomes import SyncResult
from ..store.repo import GitStore
from ..transaction import Transaction
from .folds import Standing, fold_topic_keys
from .renumber import require_clean
from .revalidation import on_top
from .unlinks import strip_gone

if TYPE_CHECKING:
    from ..context import Context

# The last upstream tip ``fold_pulled`` read, in the work tree's git dir.
CHECKED = "slayer-kb-merge-read"


def finish_merge_by_hand(kb: Context, store: GitStore, tx: Transaction, upstream: str, result: SyncResult,
                         catch_up: Callable[[], None], standing: Standing) -> str:
    """Strip and fold after the last merge among the commits ``upstream`` lacks (see the module
    doc), said in ``result``; the commit that merge took in ("" when there is none)."""
    merge = store.git("rev-list", "-1", "--min-parents=2", "HEAD", f"^{upstream}").stdout.decode().strip()
    if not merge:
        return ""
    parted = store.git("merge-base", f"{merge}^1", f"{merge}^2", check=False).stdout.decode().strip()
    if parted:
        strip_gone(kb, store, tx, parted, (f"{merge}^2", f"{merge}^1"), result.unlinked, result.cascaded,
                   result.relinked, result.relinked_merged)
    added = _new(store, upstream, "HEAD")
    # Both sides' new memories are on top of the upstream where this side's are not pushed yet:
    # one side's folded only with the other's (or with one the upstream holds).
    brought = {i for i in _new(store, parted, f"{merge}^2") if i in added} if parted else set()
    if brought and all(i in added for i in _new(store, parted, f"{merge}^1")):
        # This side's new memories are all among ``added``: one brought pairs only with one of
        # them, found from this side's; the other side's (all of main's new, say) not read.
        added, brought = [i for i in added if i not in brought], set()
    fold_topic_keys(kb, tx, added, result.merged, catch_up, standing, brought, result.followed)
    return store.git("rev-parse", f"{merge}^2").stdout.decode().strip()



def fold_pulled(kb: Context, store: GitStore, tx: Transaction, tips: tuple[str, str], result: SyncResult,
                catch_up: Callable[[], None], standing: Standing) -> None:
    """Fold each topic key that a merge among the commits this sync pulled (``tips``: the branch as
    the sync began, the upstream) left held by a memory its second parent brought and another,
    said in ``result``: a plain ``git merge`` pushed with ``git push``, which no sync pushed. A
    merge ``slayer-kb merge`` finished left no key twice: the memories read find nothing to fold."""
    start, upstream = tips
    if not upstream:  # no such branch on the remote yet
        return
    merges = store.git("rev-list", "--min-parents=2", upstream, f"^{start}").stdout.decode().split()
    # The upstream's tip a merge this clone made and pushed with git push (nothing to pull then).
    merges += [upstream] if unchecked(store, upstream) and upstream not in merges else []
    brought: list[str] = []
    for merge in merges:
        parted = store.git("merge-base", f"{merge}^1", f"{merge}^2", check=False).stdout.decode().strip()
        brought += [i for i in _new(store, parted, f"{merge}^2") if i not in brought] if parted else []
    if brought:
        # Pushed, both memories are on the default branch: the one it held before the (first) merge
        # is kept, as ``slayer-kb merge`` there would have kept it.
        standing = Standing(standing.store, standing.remote, f"{merges[-1]}^1")
        # Only a fold's commit needs a clean work tree: a sync with nothing to fold answers as before.
        fold_topic_keys(kb, tx, brought, result.merged, catch_up, standing, ready=lambda: require_clean(store))
    if merges:
        (store.git_dirs()[0] / CHECKED).write_text(upstream, encoding="utf-8")


def unchecked(store: GitStore, tip: str) -> bool:
    """Whether ``tip`` (the upstream as this clone has it) is a merge no ``fold_pulled`` read yet:
    a sync with nothing to pull or push otherwise answers without the lock, and such a merge
    pushed by this clone would never be read. One read of a commit git keeps, and of a small file."""
    if len(store.objects.parents(tip)) < 2:
        return False
    try:
        return (store.git_dirs()[0] / CHECKED).read_text(encoding="utf-8") != tip
    except OSError:
        return True


def _new(store: GitStore, parted: str, side: str) -> list[str]:
    """The memories ``side`` adds on top of ``parted`` (names only: none read)."""
    return [memory_id for memory_id, status in on_top(store, parted, side).items() if status == "A"]
