"""What the KB did since ``import-slayer`` wrote a memory: forgot it or changed it. A later import
of the same (older) folder must not bring back the one or revert the other, silently.

One ``git log`` over ``memories/`` for the whole import, never one a memory (a folder can hold
thousands): the newest import-slayer commit that wrote each file (its subject tells it), and
HEAD's blob of that file compared with the one that commit wrote, read from the object store.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.engram import IMPORT_PREFIX
from ..core.locate import MEMORIES_DIR, memory_path
from ..store.gitenv import LITERAL_PATHS

if TYPE_CHECKING:
    from ..store.repo import GitStore

# What an import-slayer commit's subject says it imported (``engram.import_subject``), before the
# folder's name: ``since_imports`` tells its commits by it.
IMPORTED = "memories from SLayer storage"


def _is_import(subject: str) -> bool:
    return subject.startswith(IMPORT_PREFIX) and f" {IMPORTED} " in subject


@dataclass(frozen=True)
class Since:
    """A memory an import wrote that the KB changed since: the import's commit, and whether the
    file is gone (forgotten, or deleted by hand) rather than changed."""

    commit: str
    forgotten: bool


def since_imports(store: GitStore, ids: Collection[str]) -> dict[str, Since]:
    """Of the memories ``ids``, each that an import-slayer commit of HEAD's history wrote and
    whose file at HEAD differs from what that commit wrote, or is gone."""
    head = store.head()
    if head is None or not ids:
        return {}
    wanted = {store.repo_path(memory_path(memory_id)): memory_id for memory_id in ids}
    out = store.git("log", "-z", "--format=%x01%H %s", "--raw", "--no-abbrev", "--no-renames", head, "--",
                    store.repo_path(f"{MEMORIES_DIR}/"), env=LITERAL_PATHS).stdout.decode("utf-8", "surrogateescape")
    wrote: dict[str, tuple[str, str]] = {}  # path: (the newest import commit writing it, the blob it wrote)
    tokens = out.split("\0")
    commit, importing = "", False
    for n, token in enumerate(tokens[:-1]):
        token = token.lstrip("\n")
        if token.startswith("\x01"):
            commit, _, subject = token[1:].partition(" ")
            importing = _is_import(subject)
        elif importing and token.startswith(":") and (path := tokens[n + 1]) in wanted and path not in wrote:
            fields = token.split()
            if len(fields) == 5 and fields[4] != "D":
                wrote[path] = (commit, fields[3])
    objects = store.objects
    now = objects.blobs_at(objects.tree_of(head), wrote)
    return {wanted[path]: Since(commit, now[path] is None)
            for path, (commit, blob) in wrote.items() if now[path] != blob}
