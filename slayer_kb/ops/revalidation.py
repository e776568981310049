"""What ``sync`` does once the other side is in (its rebase or merge of the upstream), and
``slayer-kb merge`` and ``slayer-kb rebase`` do the same when they finish:

- fix what sync fixes: a topic key this branch saved first while the other side saved it too is
  folded into the memory the team holds (``folds.Standing``), and so is a save both sides made alike, and links to memories the other side forgot
  or to entities it deleted from the catalog are stripped (``unlinks.py``), a commit each;
- check what the branch adds or changes on top of the other side: it must pass ``validate``, and
  a topic key it gave a memory must be that memory's alone with the other side in (validate sees
  only the branch's files, the other holder being the other side's: ``topickeys.py``), but
  for a stale example query (``problems.STALE_QUERY``: what a catalog delete leaves, SLayer's
  rule), which is named and let through, and for an invalid example query
  (``problems.INVALID_QUERY``) the branch left as the other side has it (a title changed on a
  memory an older release saved with ``amount : sum``): the other side holds it already, so
  refusing the push would stop the change and fix nothing; it is let through with a warning.

Sync refuses to push what does not validate; merge and rebase, whose result stays on the branch
until a sync, name it with their reply, so that the sync after them does not stop on it unwarned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import KBError, StoreError
from ..core.ids import fold_id, id_sort_key
from ..core.locate import MEMORIES_DIR, id_of_path, memory_path
from ..core.problems import INVALID_QUERY, STALE_QUERY, Problem, command, git_command, shown
from ..store.repo import GitStore
from ..store.worktree import reset_keep
from ..transaction import Transaction
from .folds import Standing, fold_duplicates, fold_topic_keys, own_moves
from .queryproblem import query_of
from .renumber import added_since
from .snapshot import absent_at_head, blobs_at, memory_ids_at
from .topickeys import keyed, keys_held_on_top
from .unlinks import strip_gone
from .validate import KBContext, check_memory_text, id_problems, validate

if TYPE_CHECKING:
    from ..context import Context
    from ..core.outcomes import MergeResult, RebaseResult


@dataclass
class Revalidated:
    """The memories on top of the other side as ``validate`` found them."""

    problems: list[str] = field(default_factory=list)  # path:line: message, what sync refuses to push
    stale_queries: list[str] = field(default_factory=list)  # ids whose example query is stale (let through)
    # path:line: message of invalid example queries the branch left as the other side has them (let through)
    untouched_queries: list[str] = field(default_factory=list)


@dataclass
class Moves:
    """What the fixes did, each memory's (the caller's result holds the dicts)."""

    folded: dict[str, str]  # this branch's memory -> the other side's, one topic key
    unlinked: dict[str, list[str]]  # memory -> forgotten ids stripped
    cascaded: dict[str, list[str]]  # memory -> deleted entities stripped
    deduplicated: dict[str, str]  # this branch's memory -> the other side's, one save made on both
    relinked: dict[str, dict[str, str]]  # memory -> {renamed id: its new id} of the links rewritten
    relinked_merged: dict[str, dict[str, str]]  # memory -> {folded id: the id kept} of the links rewritten
    followed: dict[str, dict[str, str]] | None = None  # a memory folded again, fields held two ways (folds.py)


def finish(kb: Context, store: GitStore, tx: Transaction, other: str, parted: str, moves: Moves,
           catch_up: Callable[[], None], before: str = "", ours: str = "", standing: Standing | None = None
           ) -> Revalidated:
    """Fix and check the branch at HEAD, the other side's commit ``other`` in (see the module doc);
    ``parted``: where the sides parted ("" for no common ancestor: nothing to strip). ``catch_up``
    brings the index, which finds a topic key's holders, to HEAD; ``before``: the branch before
    git merged or rebased it (``slayer-kb merge`` or ``rebase``: ``other`` may hold a squash of
    memories this branch forgot since, and links to them go too; ``strip_gone``); ``ours``: the
    branch before a sync's rebase or merge (``before`` when not given); ``standing``: which
    memory a fold keeps (None: always the other side's)."""
    top = on_top(store, other)
    added = [i for i, status in top.items() if status == "A"]
    folded = fold_topic_keys(kb, tx, added, moves.folded, catch_up, standing, followed=moves.followed)
    def theirs() -> list[str]:  # the memories ``other`` added since ``parted`` (none without one)
        return sorted(added_since(store, parted, other), key=id_sort_key) if parted else []

    folded = fold_duplicates(kb, tx, added, theirs, moves.deduplicated, standing) or folded
    tips = (other, ours or before or "HEAD")
    if (parted and strip_gone(kb, store, tx, parted, tips, moves.unlinked, moves.cascaded, moves.relinked,
                              moves.relinked_merged, before,
                              other if before else "")) or folded:
        top = on_top(store, other)
    return revalidate(kb, store, other, top)


def finish_or_put_back(kb: Context, store: GitStore, tx: Transaction, other: str, parted: str, moves: Moves,
                       before: str, made: str, undone: str = "", standing: Standing | None = None) -> Revalidated:
    """``finish`` for ``slayer-kb merge`` and ``rebase``, once git's merge or rebase is made (HEAD
    at ``made``): a fix it refuses (any ``KBError``: a file git's index marks, which the fix would
    rewrite; one git's attributes would convert) puts the branch back at ``before``, where it was
    before git merged, keeping the work tree and its marks (``git reset --keep``), so that the
    refusal's "nothing was done" holds; ``undone`` is said after it. A commit made on ``made``
    before this transaction (rebase's git runs under a lock of its own) is not dropped: the branch
    stays, and the refusal says so. The refusal is raised as it was, what followed added.
    ``standing``: as ``finish``'s."""
    moved = store.head() != made
    try:
        return finish(kb, store, tx, other, parted, moves, lambda: None, before, standing=standing)
    except KBError as exc:
        if moved:
            exc.args = (f"{exc} The branch was not put back where it was before the merge or rebase: a commit was "
                        f"made on its result ({made}) before these fixes ran, and putting it back would drop that "
                        "commit; once what stopped it is mended, the same merge or rebase again makes the fixes.",)
            raise
        back = reset_keep(store, before, check=False)
        kb.reread()
        if back.returncode:
            raise StoreError(f"{exc}\nNor could the branch be put back where it was: "
                             f"{back.stderr.decode('utf-8', 'replace').strip()}. Once it can, run "
                             f"{git_command(store.root, f'reset --keep {before}')}.") from exc
        if undone:
            exc.args = (f"{exc} {undone}",)
        raise


def on_top(store: GitStore, other: str, head: str = "HEAD") -> dict[str, str]:
    """The memories ``head`` adds (``A``) or changes (``M``) on top of ``other``, by id."""
    out = store.git("diff", "--name-status", "-z", "--no-renames", "--diff-filter=AM", other, head, "--",
                    store.repo_path(f"{MEMORIES_DIR}/")).stdout.decode("utf-8", "surrogateescape").split("\0")
    found = {}
    for status, path in zip(out[::2], out[1::2], strict=False):  # the output ends with a NUL
        memory_id = id_of_path(path[len(store.prefix):])
        if memory_id is not None:
            found[memory_id] = status
    return found


def revalidate(kb: Context, store: GitStore, other: str, ids: dict[str, str]) -> Revalidated:
    """``validate`` the memories ``ids`` names (``on_top`` of ``other``), each file named from where
    the user is; one the work tree lacks as HEAD holds it (``snapshot.absent_at_head``). An id is
    checked against HEAD's ids as well as the work tree's: a checkout that folds case collides
    with a file a sparse checkout leaves out all the same. HEAD's ids are listed only where a
    file may be left out (``GitStore.may_leave_out``): one ``git ls-tree``, 0.4 s at 100,000
    memories."""
    if not ids:
        return Revalidated()
    absent = absent_at_head(store, kb.root, sorted(ids))
    paths = [Path(shown(kb.root / memory_path(i))) for i in sorted(ids) if i not in absent]
    found = validate(paths).problems if paths else []
    # With every file in the work tree, validate above made every check this could.
    if absent or store.may_leave_out():
        listed = context = KBContext.of(kb.root)
        only_head = memory_ids_at(store, "HEAD") - listed.ids
        if only_head:
            context = KBContext(listed.catalog, listed.ids | only_head, listed.command, listed.root, listed.line_ends)
        for memory_id in sorted(ids):
            name = shown(kb.root / memory_path(memory_id))
            if memory_id in absent:
                found += id_problems(memory_id, name, context)
                found += check_memory_text((absent[memory_id] or b"").decode("utf-8", "replace"), memory_id, name,
                                           context)
            elif only_head and len(listed.folded.get(fold_id(memory_id), [])) <= 1:
                # validate saw no twin in the work tree: one left out of it may clash.
                found += [p for p in id_problems(memory_id, name, context) if p not in found]
    # A key a memory here took since ``other`` that a memory there holds (validate saw only these files).
    found += keys_held_on_top(store, other, keyed({kb.root / memory_path(i): shown(kb.root / memory_path(i))
                                                   for i in ids if i not in absent}), command(kb.root))
    untouched = _untouched(store, other, [p for p in found if p.kind == INVALID_QUERY
                                          and ids.get(Path(p.path).stem) == "M"])
    return Revalidated([str(p) for p in found if p.kind != STALE_QUERY and p not in untouched],
                       sorted({Path(p.path).stem for p in found if p.kind == STALE_QUERY}),
                       [str(p) for p in sorted(untouched)])


def _untouched(store: GitStore, other: str, invalid: list[Problem]) -> set[Problem]:
    """Of ``invalid`` (problems of memories HEAD changes on top of ``other``), those whose
    memory's query is at HEAD as at ``other``: both sides' files read in one ``cat-file``."""
    if not invalid:
        return set()
    texts = blobs_at(store, [(rev, memory_path(Path(p.path).stem)) for p in invalid for rev in (other, "HEAD")])
    return {p for p, there, here in zip(invalid, texts[::2], texts[1::2], strict=True)
            if query_of(there) == query_of(here)}


def take_in(kb: Context, store: GitStore, result: MergeResult | RebaseResult, checked: Revalidated,
            moved: tuple[str, dict[str, str]], how: str, head: str) -> None:
    """What ``finish_or_put_back`` found, into a merge's or a rebase's ``result`` (HEAD at ``head``
    before the fixes' commits), and the moves of this clone's memories recorded as ``how`` made
    them: ``moved``, the other side's commit and this branch's folds into it (``folds.own_moves``:
    an id this clone never held is no move of its), and the duplicates folded likewise."""
    other, folded = moved
    result.problems, result.stale_queries = checked.problems, checked.stale_queries
    result.untouched_queries = checked.untouched_queries
    kb.record_moves(own_moves(store, other, folded), how)
    kb.record_moves(own_moves(store, other, result.deduplicated), how, duplicate=True)
    result.head = store.head() or head
