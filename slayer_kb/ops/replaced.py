"""A memory of this clone that a pulled merge replaced with another memory under its id.

A reviewer's plain-git merge of two branches that each saved a memory under one id stops
(both added the file); resolved by keeping one side's file whole (``git checkout --theirs``, a
forge's "accept incoming"), the other side's memory is gone from the merged branch, and the id
names another memory. The clone that saved the lost one hears of it from the sync that pulls
that merge, as ``sync`` and ``merge`` name two memories under one id they meet themselves.

Decisions:

- Read from one ``git log -m --raw`` of the pulled commits (bounded by the branch as the sync
  found it: never a walk of all history; merges against each parent, and the plain commits a
  forge's squash or rebase makes), the memory files each changed; where there are any, one
  ``for-each-ref`` and one ``cat-file --batch`` of their versions and of the local branches'
  ones, read as the reader reads them. A file with another ``created_at`` than the parent's
  (and no shared ``topic_key``, which makes one memory of two saves) replaced that memory.
- Said only where a local branch (the synced one as the sync found it) holds the dropped memory:
  this clone's save, or one it held; a clone that never had it has nothing to get back. Nor of an
  id the pulled commits renamed away (then gave again, ``save --reuse-id``): that memory moved.
- The fix keeps the memory under another id: its file as the branch holds it committed again
  under a free id. Not ``restore`` (it would write over the memory the id names now), nor a
  ``rename`` on the branch that holds it (merged again, the rename meets the merged branch's
  change of the file, and carries the other memory to the new id).
"""

from __future__ import annotations

from ..core.errors import MemoryFileError
from ..core.locate import MEMORIES_DIR, id_of_path, memory_path
from ..core.memory import loads
from ..core.problems import cd_step, command, command_in, words
from ..store import renames
from ..store.repo import GitStore
from .reuses import free_id


def replaced_here(store: GitStore, start: str, upstream: str) -> list[str]:
    """A warning for each memory a merge among the commits pulled since ``start`` (the branch as
    the sync found it) replaced with another under its id, where a local branch holds it."""
    head = store.head()
    if head is None or head == start:
        return []
    # Merges against each parent, and the other commits too: a squash or rebase of a pull request
    # lands a reviewer's "keep theirs" as a plain commit.
    out = store.git("log", "-m", "--raw", "--no-renames", "--no-abbrev", "--format=@%H %P", head,
                    f"^{start}", "--", store.repo_path(f"{MEMORIES_DIR}/")).stdout.decode("utf-8", "replace")
    changed: list[tuple[str, str, str, str]] = []  # (commit, KB path, the parent's blob, the commit's)
    merge, merges = "", set()
    for line in out.splitlines():
        if line.startswith("@"):
            merge, *parents = line[1:].split()
            if len(parents) > 1:
                merges.add(merge)
        elif line.startswith(":") and "\t" in line:
            fields, path = line.split("\t", 1)
            _modes, _mode, old, new, status = fields[1:].split(" ")
            if status == "M" and path.startswith(store.prefix) and id_of_path(path[len(store.prefix):]):
                changed.append((merge, path[len(store.prefix):], old, new))
    if not changed:
        return []
    branch = store.branch()
    tips = {name: (start if name == branch else name) for name in store.git(
        "for-each-ref", "--format=%(refname:short)", "refs/heads/").stdout.decode().split()}
    paths = sorted({path for _merge, path, _old, _new in changed})
    names = [blob for _m, _p, old, new in changed for blob in (old, new)]
    names += [f"{rev}:{store.repo_path(path)}" for rev in tips.values() for path in paths]
    read = iter(store.cat_files(names, missing_ok=True))
    made = [(_made(next(read), path), _made(next(read), path)) for _m, path, _o, _n in changed]
    held = {(name, path): _made(next(read), path) for name in tips for path in paths}
    said: dict[tuple[str, str], str] = {}  # one warning a merge and file, whichever parent it is said against
    renamed: set[str] | None = None  # ids the pulled commits renamed away, read at the first candidate
    for (merge, path, _old, _new), (was, now) in zip(changed, made, strict=True):
        if not was[0] or not now[0] or was[0] == now[0] or (was[1] and was[1] == now[1]) or (merge, path) in said:
            continue
        # Renamed, then its id given again knowingly (save --reuse-id): the memory lives on, moved.
        renamed = renames.renamed_ids(store, since=start) if renamed is None else renamed
        if id_of_path(path) in renamed:
            continue
        holder = next((name for name in sorted(tips, key=lambda n: n != branch) if held[name, path][0] == was[0]), None)
        if holder is not None:
            said[merge, path] = _said(store, ("merge " if merge in merges else "commit ") + merge[:12], path,
                                      (was[0], now[0]), holder, tips[holder], upstream)
    return list(said.values())


def _made(found: tuple[str, str, bytes] | None, path: str) -> tuple[str, str]:
    """The ``created_at`` and ``topic_key`` of the memory file ``found`` at ``path`` ('' for none),
    as the reader reads them (a quoting or a comment changes neither); ('', '') for one that does
    not read as a memory, which says its own problem elsewhere."""
    if found is None or found[1] != "blob" or (memory_id := id_of_path(path)) is None:
        return "", ""
    try:
        memory = loads(found[2].decode("utf-8", "surrogateescape"), memory_id)
    except MemoryFileError:
        return "", ""
    return memory.created_at, memory.topic_key or ""


def _said(store: GitStore, merge: str, path: str, saved: tuple[str, str], holder: str, rev: str,
          upstream: str) -> str:
    """The warning of memory ``path`` that a commit (``merge``: "merge SHA" or "commit SHA")
    replaced, held on branch ``holder`` (at ``rev``), with the steps that keep it under another id."""
    memory_id = id_of_path(path)
    assert memory_id is not None
    run = command(store.root)
    # An id neither the branch now nor the one that holds the memory gives another (kb.x-2 may be
    # another memory already: written over, lost; or one that branch's later merge would meet).
    new = free_id(store, (store.head() or "HEAD", rev), memory_id)
    shown_rev = holder if rev == holder else rev[:12]
    # Not a rename on the branch that holds it: merged again, that branch's rename would meet the
    # merged branch's change of the file (one memory to the other) and carry it to the new id.
    # Typed from the KB's folder: the file's path after '>' is the KB's, not the repository's.
    steps = [*cd_step(store.root), f"git show {shown_rev}:{store.repo_path(path)} > {memory_path(new)}",
             f"git add {memory_path(new)}", f"git commit -m {words(f'memory: save {new}')}",
             f"{command_in(store.root)} sync"]
    fix = f"to keep it, commit it again under another id: '{' && '.join(steps)}'"
    return (f"{merge} pulled from {upstream} replaced memory {memory_id} (saved {saved[0]}), which "
            f"{holder} holds, with another memory under its id (saved {saved[1]}): the one {holder} holds is no "
            f"longer on {upstream}. '{run} show {words(memory_id, '--rev', shown_rev)}' "
            f"shows it; {fix}.")
