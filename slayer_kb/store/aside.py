"""``--force`` setting the user's uncommitted files aside (their versions kept beside them as
``<file>.orig``, HEAD's put back in the work tree and git's index), and putting them back where
they were when the command then fails: only a command that commits leaves them aside. And the
refusal of a rewrite of uncommitted work, with ``--force``'s advice."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.errors import ConflictError, KBError, StoreError
from ..core.text import listed
from .files import free_name, keep_copy, put_file
from .worktree import STATUS_ENV, Repository


@dataclass
class Aside:
    """What ``set_aside`` did: the names it kept the user's versions as (KB-relative), and what
    ``put_back`` needs to undo it."""

    kept: list[str]
    head: str | None = None  # HEAD when they were set aside: a commit since stands, and they stay
    moved: dict[str, str] = field(default_factory=dict)  # file -> the copy of its work-tree version
    staged: list[str] = field(default_factory=list)  # the copies of versions git's index held
    index: bytes = b""  # git's index entries of the files as they were (``update-index --index-info``)
    index_changed: bool = False  # whether git's index was written (else it holds them as they were)


def aside_names(store: Repository, paths: Mapping[str, str | None]) -> list[str]:
    """The names ``set_aside`` would keep the user's versions of ``paths`` as (a dry run's)."""
    return [name for name, _path, _staged in _aside(store, paths)]


def _aside(store: Repository, paths: Mapping[str, str | None]) -> list[tuple[str, str, str | None]]:
    """The free names the user's versions of ``paths`` are kept as, each with its file and the
    version: the staged blob where git's index holds another (``uncommitted``'s), else None for
    the work tree's file."""
    kept: list[tuple[str, str, str | None]] = []
    for path, staged in sorted(paths.items()):
        store.check_inside(path)
        if staged is not None:
            kept.append((free_name(store.root, f"{path}.staged.orig"), path, staged))
        if os.path.lexists(store.root / path):
            kept.append((free_name(store.root, f"{path}.orig"), path, None))
    return kept


def set_aside(store: Repository, paths: Mapping[str, str | None]) -> Aside:
    """``--force``: keep the user's version of each of these files beside it, and put HEAD's
    version back in the work tree and git's index (a file HEAD lacks is removed from both).
    The work tree's file is copied to ``<file>.orig`` (or ``<file>.orig.2``, ...); a staged
    version that differs from it (``uncommitted``'s blob) is written to ``<file>.staged.orig``.
    Everything is kept before anything is replaced, so a failure half-way (git's index locked
    by another git command) loses nothing, and leaves no copy. Call under the lock."""
    head = store.head()
    repo_paths = {path: store.repo_path(path) for path in paths}
    aside = Aside([], head, index=_index_entries(store, list(repo_paths.values())))
    try:
        for name, path, staged in _aside(store, paths):
            if staged is None:
                keep_copy(store.root / path, store.root / name)
                aside.moved[path] = name
            else:
                put_file(store.root / name, store.objects.read("blob", staged))
                aside.staged.append(name)
            aside.kept.append(name)
        objects = store.objects
        in_head = objects.blobs_at(objects.tree_of(head) if head else None, repo_paths.values())
        restore = [rp for rp in repo_paths.values() if in_head[rp] is not None]
        aside.index_changed = True
        if restore:
            payload = "".join(rp + "\0" for rp in restore).encode("utf-8", "surrogateescape")
            store.git_writing_index("checkout", "-q", head or "HEAD", "--pathspec-from-file=-", "--pathspec-file-nul",
                                    input=payload, env=STATUS_ENV)
        absent = [path for path, rp in repo_paths.items() if in_head[rp] is None]
        for path in absent:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(store.root / path)
        store.stage(absent)
    except BaseException as exc:
        try:
            put_back(store, aside)
        except (OSError, KBError) as undo:
            raise StoreError(f"{exc}; and putting your files back failed too ({undo}): your versions are kept as "
                             f"{listed(aside.kept)}; move each back over its file by hand.") from exc
        raise
    return aside


def put_back(store: Repository, aside: Aside) -> None:
    """Undo ``set_aside``: each file the work tree's version it had, git's index the entries it
    held, and no copy left. Nothing is done once HEAD moved on (a commit made from HEAD's
    versions stands, and the copies are the user's record of what it replaced)."""
    if store.head() != aside.head:
        return
    for path, name in aside.moved.items():
        target = store.root / path
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        os.replace(store.root / name, target)
    for name in aside.staged:
        put_file(store.root / name, None)
    if aside.index and aside.index_changed:
        store.git_writing_index("update-index", "-z", "--index-info", input=aside.index)
    aside.kept.clear()


def _index_entries(store: Repository, repo_paths: list[str]) -> bytes:
    """git's index entries of ``repo_paths`` as ``update-index --index-info`` takes them back:
    ``git ls-files -s``'s, and a removal for each path the index lacks."""
    if not repo_paths:
        return b""
    out = store.git("ls-files", "-s", "-z", "--full-name", "--", *repo_paths, env=STATUS_ENV).stdout
    entries = [entry for entry in out.split(b"\0") if entry]
    held = {entry.partition(b"\t")[2] for entry in entries}
    null = "0" * len(store.head() or "0" * 40)
    absent = [f"0 {null}\t{rp}".encode("utf-8", "surrogateescape") for rp in repo_paths
              if rp.encode("utf-8", "surrogateescape") not in held]
    return b"".join(entry + b"\0" for entry in [*entries, *absent])


def refused_rewrite(dirty: Mapping[str, str | None], aside: list[str] | None = None) -> ConflictError:
    """The refusal of a rewrite of the files ``dirty``, which hold uncommitted work (``aside``:
    the other files ``--force`` set aside, from whose HEAD versions the rewrite was planned; the
    transaction puts them back as it fails)."""
    if aside:
        return ConflictError(uncommitted_message(sorted(dirty), force_hint=False, aside=sorted(aside)))
    # An MCP tool has no --force: its client hears the rest of the advice.
    return ConflictError(uncommitted_message(sorted(dirty), force_hint=True),
                         tool_message=uncommitted_message(sorted(dirty), force_hint=False))


def uncommitted_message(paths: list[str], force_hint: bool, aside: list[str] | None = None) -> str:
    """Why a rewrite of ``paths`` is refused, and the fix; ``aside``: the files ``--force`` would
    set aside (or did, and puts back), from whose HEAD versions the command would rewrite ``paths``."""
    one = len(paths) == 1
    them, has = ("it", "has") if one else ("them", "have")
    how = f"Commit or stash {them} (git stash -u)"
    if force_hint:
        how += (f", or run the command again with --force to rewrite {them} from HEAD and keep your "
                f"{'version' if one else 'versions'} as {paths[0] + '.orig' if one else '<file>.orig'}.")
    else:
        how += " and retry."
    why = f"this command would rewrite {them}"
    if aside:
        why += f" once --force put back HEAD's {'version' if len(aside) == 1 else 'versions'} of {listed(aside)}"
    done = "so nothing was done"
    return (f"{listed(paths)} {has} changes that are not committed (in the work tree or git's index, or "
            f"never committed at all), and {why}; slayer-kb never commits "
            f"work you have not committed, {done}. {how}")
