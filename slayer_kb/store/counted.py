"""Auto ids counted without a remote, one count for every worktree of a repository.

Each linked worktree (``git worktree add``) has its own ``.slayer-kb/``, its own KB lock and its
own cache of the highest auto id its branch has held, so two agents saving in two worktrees of one
repository handed out the same id, which a merge then refused (``renumber``). The highest id
handed out in any of them is kept in the git folder they share, under a lock of its own: ids never
repeat across a repository's branches and worktrees, as leased blocks keep them apart across
clones (leases.py)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from ..core.errors import StoreError

COUNTED_FILE = "slayer-kb-counted-ids.json"
_LOCK_FILE = "slayer-kb-counted-ids.lock"


def highest(common_dir: Path) -> int:
    """The highest id a worktree of the repository counted out (0: none, or unreadable)."""
    try:
        return int(json.loads((common_dir / COUNTED_FILE).read_text(encoding="utf-8"))["highest"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def take(common_dir: Path, count: int, floor: int, taken: Callable[[int], bool]) -> list[int]:
    """``count`` fresh ids above ``floor`` (the highest auto id this worktree's branch has seen)
    and above every id a worktree of the repository counted out, passing over those ``taken``
    says are (a file has the name); the highest is kept for the next take, in any worktree."""
    with _locked(common_dir):
        path = common_dir / COUNTED_FILE
        found: list[int] = []
        # None yet (or unreadable): the branch's own count stands, as before.
        n = max(floor, highest(common_dir))
        while len(found) < count:
            n += 1
            if not taken(n):
                found.append(n)
        with contextlib.suppress(OSError):  # a read-only git folder: counted as before, per worktree
            path.write_text(json.dumps({"highest": found[-1]}), encoding="utf-8")
    return found


def give_back(common_dir: Path, ids: list[int]) -> None:
    """Hand ``ids`` out again (a save refused before its commit was published: no commit holds
    them), unless a worktree counted out another id since: the next save takes the same id."""
    with _locked(common_dir):
        path = common_dir / COUNTED_FILE
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            if int(json.loads(path.read_text(encoding="utf-8"))["highest"]) == max(ids):
                path.write_text(json.dumps({"highest": min(ids) - 1}), encoding="utf-8")


@contextlib.contextmanager
def _locked(common_dir: Path) -> Iterator[None]:
    import filelock  # on first use, as GitStore.locked imports it

    try:
        with filelock.FileLock(str(common_dir / _LOCK_FILE), timeout=120):
            yield
    except filelock.Timeout:
        raise StoreError(f"Another slayer-kb process has held {common_dir / _LOCK_FILE} for 120 s; wait and "
                         "retry.") from None
