"""``log``: every commit that touched a memory's file, on every side of the merges, renames
followed, and the merges that kept one side's version whole.

Decisions:

- Git's default history simplification follows one parent of a merge that is TREESAME to it
  and never walks the other: a merge resolved by keeping one side's file (``git checkout
  --theirs``, a forge's "accept incoming") hides the other side's save or edit and itself, and
  ``log`` is where a person looks for what happened to the memory. ``--full-history
  --simplify-merges`` walks every side and keeps a merge only where the file's histories met
  (both sides had commits of it); a merge that only brought one side's commits in adds
  nothing a reader needs and is left out, as git leaves it out. ``--topo-order``: no commit
  before its children, each side's commits together.
- Such a merge whose file is one side's version byte for byte, while another side's differs,
  dropped that side's change: it names the side ``kept`` and those ``dropped`` (their last
  commits of the file, git's rewritten parents), read from one ``cat-file --batch``.
- Not ``git log --follow``: that also follows copies, and two small memory files are often
  "copies" of each other by git's measure (half their lines alike), so ``log 2`` would list
  memory 1's history. A rename here is git's: a file deleted and one added alike in the same
  commit, the first commit of the file on a side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..core.errors import NotFoundError
from ..core.ids import check_existing_id, meant_id
from ..core.locate import MEMORIES_DIR, memory_path
from ..core.results import LogEntry
from ..store.gitenv import LITERAL_PATHS
from ..store.repo import GitStore
from .history import raw_changes
from .snapshot import blobs_at


class Step(NamedTuple):
    """A commit of the file: its parents in the file's history (git's rewritten parents: each
    side's last commit of it), the file's path there, and for a merge that took one side's
    version whole, that side and those whose version it dropped."""

    sha: str
    parents: list[str]
    path: str
    kept: str | None = None
    dropped: tuple[str, ...] = ()
    deleted: bool = False  # the side kept had deleted the file (a forget)


def log(store: GitStore, memory_id: str, exists: Callable[[str], bool]) -> list[LogEntry]:
    """Every commit that touched ``memories/<id>.yaml``, newest first, renames followed;
    ``exists`` says which ids have a memory, for the error of one that never had."""
    check_existing_id(memory_id, "whose commits to list")
    if store.head() is None:
        return []
    steps = file_history(store, memory_path(memory_id))
    entries = store.describe_commits([step.sha for step in steps])
    if not entries:
        raise NotFoundError(f"No commit ever touched memory '{memory_id}' ({memory_path(memory_id)})"
                            f"{meant_id(memory_id, exists)}.")
    for entry, step in zip(entries, steps, strict=True):
        if step.kept is not None:
            entry["kept"], entry["dropped"], entry["deleted"] = step.kept, list(step.dropped), step.deleted
    return entries


def file_history(store: GitStore, kb_path: str) -> list[Step]:
    """The commits that touched ``kb_path`` on every side, newest first, and before a commit
    that renamed a file to it (``renumber``, ``git mv``), those of the file it was."""
    steps: list[Step] = []
    todo, seen = [("HEAD", kb_path)], set()
    while todo:
        rev, path = todo.pop(0)
        for step in _path_history(store, rev, path):
            if step.sha in seen:
                continue
            seen.add(step.sha)
            steps.append(step)
            if not step.parents:  # the file's first commit on this side: maybe a rename's
                todo.extend((f"{step.sha}^", old) for old in _renamed_from(store, step.sha, path))
    return steps


def _path_history(store: GitStore, rev: str, kb_path: str) -> list[Step]:
    """The commits of ``kb_path`` from ``rev``, on every side a merge had the file."""
    out = store.git("log", "--format=%H %P", "--full-history", "--simplify-merges", "--topo-order", rev, "--",
                    store.repo_path(kb_path), env=LITERAL_PATHS).stdout.decode()
    steps = {sha: Step(sha, parents, kb_path) for sha, *parents in (line.split() for line in out.splitlines())}
    merges = [step for step in steps.values() if len(step.parents) > 1]
    blobs = iter(blobs_at(store, [(rev, kb_path) for step in merges for rev in (step.sha, *step.parents)]))
    gone: set[str] = set()
    for step in merges:  # newest first: a merge on a side found gone is gone with it
        mine, theirs = next(blobs), {parent: next(blobs) for parent in step.parents}
        if step.sha in gone:
            continue
        had = [parent for parent in step.parents if theirs[parent] is not None]
        if mine is not None and had and len(had) < len(step.parents):
            # A side without the file: its commits were of a memory that left the id (renamed,
            # forgotten), as git's own simplification leaves that side out.
            gone |= _reached(steps, set(step.parents) - set(had)) - _reached(steps, set(had))
            if len(had) == 1 and theirs[had[0]] == mine:
                gone.add(step.sha)
            steps[step.sha] = step = Step(step.sha, had, kb_path)
        kept = next((parent for parent in step.parents if theirs[parent] == mine), None)
        dropped = tuple(parent for parent in step.parents if theirs[parent] != mine)
        if kept is not None and dropped:
            steps[step.sha] = Step(step.sha, step.parents, kb_path, kept, dropped, deleted=mine is None)
    return [step for sha, step in steps.items() if sha not in gone]


def _reached(steps: dict[str, Step], starts: set[str]) -> set[str]:
    """The commits of the file's history ``starts`` and their parents there reach."""
    reached, todo = set(), list(starts)
    while todo:
        sha = todo.pop()
        if sha not in reached and sha in steps:
            reached.add(sha)
            todo.extend(steps[sha].parents)
    return reached


def _renamed_from(store: GitStore, sha: str, kb_path: str) -> list[str]:
    """The file commit ``sha`` renamed to ``kb_path`` (none when it added it)."""
    changes = store.git("diff-tree", "--no-commit-id", "-r", "-z", "-M", "--raw", "--root", sha, "--",
                        store.repo_path(f"{MEMORIES_DIR}/")).stdout
    return [old for status, old, new, _mode in raw_changes(changes, store.prefix)
            if status.startswith("R") and new == kb_path][:1]
