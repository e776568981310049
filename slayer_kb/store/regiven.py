"""An id renamed away that a merge gave back: ``rename`` (or ``renumber``) moved the memory an id
named to another id, and a merge then brought in another memory under the old id, saved on
commits that never had the rename (a branch that gave the id to a memory of its own). A save
refuses such an id without ``--reuse-id``; a merge brings it in with no check, and git's history
of the file, simplified to the side it came from, no longer shows the rename. ``get`` says so
beside its answer: an agent told the old id meant the renamed memory. The ids ever renamed are
kept beside HEAD's commit in the worktree's git folder (``RENAMED_FILE``), so that a ``get`` of
an id never renamed starts no git process (docs/performance.md) until HEAD moves, and then two
that read the commits since, not all history."""

from __future__ import annotations

import contextlib
import json

from ..core.fileio import write_whole
from ..core.locate import memory_path
from .gitenv import LITERAL_PATHS
from .repo import GitStore

RENAMED_FILE = "slayer-kb-renamed-ids.json"


def _renamed(store: GitStore) -> set[str]:
    """Every id HEAD's history records a rename of (``renames.renamed_ids``), read from the file
    kept for HEAD's commit; after a move of HEAD (every save), those kept and the ones the commits
    since record (one ``git log`` of those commits, not of all history): a few more than HEAD's
    history holds after a branch switch, which ``regiven_by_merge`` checks one by one."""
    head = store.head()
    if head is None:
        return set()
    path = store.git_dirs()[0] / RENAMED_FILE
    kept: dict[str, object] = {}
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        kept = json.loads(path.read_text(encoding="utf-8"))
        if kept.get("head") == head:
            return set(kept["ids"])  # type: ignore[call-overload]
    # On use: a get of an id never renamed, HEAD where it was, reads no history (docs/performance.md).
    from .renames import renamed_ids

    since, ids = kept.get("head"), kept.get("ids")
    if isinstance(since, str) and isinstance(ids, list) and store.git(
            "cat-file", "-e", f"{since}^{{commit}}", check=False).returncode == 0:
        found = renamed_ids(store, since) | set(ids)
    else:
        found = renamed_ids(store)
    with contextlib.suppress(OSError):  # a cache: a read-only git folder asks git again next time
        write_whole(path, json.dumps({"head": head, "ids": sorted(found)}))
    return found


def regiven_by_merge(store: GitStore, memory_id: str) -> tuple[str, str] | None:
    """(the id the memory ``memory_id`` named was renamed to, followed to where it is now; the
    rename's commit) when HEAD holds ``memory_id``'s file again by a merge of commits made
    without that rename; None otherwise (never renamed, or given again knowingly: a save with
    ``--reuse-id``, a revert of the rename, both made after it). No git process for an id never
    renamed (``_renamed``)."""
    if memory_id not in _renamed(store):
        return None
    from .renames import renamed_away

    path = store.repo_path(memory_path(memory_id))
    # Every side of a merge: the default simplification follows the side the file came from.
    gone = store.git("log", "-1", "--full-history", "--format=%H", "--diff-filter=D", "HEAD", "--", path,
                     env=LITERAL_PATHS).stdout.decode().strip()
    away = renamed_away(store, memory_id, gone) if gone else None
    if away is None or away.forgotten is not None or away.before is not None:
        return None
    added = store.git("log", "-1", "--format=%H", "--diff-filter=A", "HEAD", "--", path,
                      env=LITERAL_PATHS).stdout.decode().strip()
    if not added or store.git("merge-base", "--is-ancestor", gone, added, check=False).returncode == 0:
        return None
    return away.moves[-1][0], gone
