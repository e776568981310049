"""``--force`` setting the user's uncommitted files aside (their versions kept beside them as
``<file>.orig``, HEAD's put back in the work tree and git's index), and putting them back where
they were when the command then fails: only a command that commits leaves them aside. And the
refusal of a rewrite of uncommitted work, with ``--force``'s advice."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.errors import ConflictError, KBError, StoreError
from ..core.fileio import NotRegularFile, read_regular
from ..core.text import listed
from .files import free_name, keep_copy, put_file
from .worktree import STATUS_ENV, Repository

# The empty file's blob, in SHA-1 and SHA-256 repositories: ``git add -N``'s entry holds it.
_EMPTY_BLOBS = frozenset({"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
                          "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"})


@dataclass
class Aside:
    """What ``set_aside`` did: the names it keeps the user's versions as (KB-relative; those still
    aside), and what ``put_back`` needs to undo it."""

    kept: list[str]
    head: str | None = None  # HEAD when they were set aside: a commit since stands, and they stay
    moved: dict[str, str] = field(default_factory=dict)  # file -> the copy of its work-tree version
    staged: dict[str, str] = field(default_factory=dict)  # file -> the copy of the version git's index held
    index: bytes = b""  # git's index entries of the files as they were (``update-index --index-info``)
    index_changed: bool = False  # whether git's index was written (else it holds them as they were)
    intent: list[str] = field(default_factory=list)  # files marked ``git add -N``: marked so again
    prefix: str = ""  # the KB's folder in its repository (``Repository.prefix``), for by-hand steps


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
    The work tree's file is copied to ``<file>.orig`` (or ``<file>.orig.2``, ...), its mode kept;
    a staged version that differs from it (``uncommitted``'s blob) is written to
    ``<file>.staged.orig``. Everything is kept before anything is replaced, so a failure half-way
    (git's index locked by another git command) loses nothing, and leaves no copy. Call under the lock."""
    head = store.head()
    repo_paths = {path: store.repo_path(path) for path in paths}
    aside = Aside([], head, index=_index_entries(store, list(repo_paths.values())), prefix=store.prefix)
    try:
        objects = store.objects
        in_head = objects.blobs_at(objects.tree_of(head) if head else None, repo_paths.values())
        aside.intent = _intent_to_add(store, aside.index, [p for p, rp in repo_paths.items() if in_head[rp] is None])
        names = _aside(store, paths)
        _record(store, head, {path: name for name, path, staged in names if staged is None},
                {path: name for name, path, staged in names if staged is not None})
        for name, path, staged in names:
            if staged is None:
                keep_copy(store.root / path, store.root / name)
                aside.moved[path] = name
            else:
                put_file(store.root / name, store.objects.read("blob", staged))
                aside.staged[path] = name
            aside.kept.append(name)
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
            raise StoreError(f"{exc}; and putting your files back failed too ({undo}): {by_hand(aside)}") from exc
        raise
    return aside


def put_back(store: Repository, aside: Aside) -> list[str]:
    """Undo ``set_aside``: each file the work tree's version it had, git's index the entries it
    held, and no copy left. Nothing is done once HEAD moved on (a commit made from HEAD's
    versions stands, and the copies are the user's record of what it replaced). Only HEAD's
    version (or no file, or no entry) is replaced: a file or index entry written since set_aside
    looked (an editor's save, a ``git add``) is kept, its copy stays aside, and the returned notes
    say so. ``aside.kept`` names what is still aside, also when this fails part-way (git's index
    locked: then nothing is put back)."""
    if store.head() != aside.head:
        return []
    notes: list[str] = []
    paths = sorted({*aside.moved, *aside.staged})
    repo_paths = {path: store.repo_path(path).encode("utf-8", "surrogateescape") for path in paths}
    tree = store.objects.tree_of(aside.head) if aside.head else None
    in_head = store.objects.blobs_at(tree, [rp.decode("utf-8", "surrogateescape") for rp in repo_paths.values()])
    head_blob = {path: in_head[rp.decode("utf-8", "surrogateescape")] for path, rp in repo_paths.items()}
    # git's index first: a staged copy is deleted only once the index holds its version again.
    before = _by_path(aside.index)
    now = _by_path(_index_entries(store, [rp.decode("utf-8", "surrogateescape") for rp in repo_paths.values()]))
    restore: list[bytes] = []
    written: set[str] = set()  # index entries neither as they were nor HEAD's: a git add since
    marked: list[str] = []  # the ``git add -N`` entries to mark again
    for path, rp in repo_paths.items():
        entry = now.get(rp, b"")
        if entry != before.get(rp) and not entry.startswith(b"0 ") and entry.split(b" ")[1:2] != [
                (head_blob[path] or "").encode()]:
            written.add(path)
        elif rp in before and entry != before[rp]:
            # A ``git add -N`` entry is marked so again below, once its file is back: listed as it
            # was, it would be a staged empty file.
            restore.append(_removal(store, rp) if path in aside.intent else before[rp])
            marked += [rp.decode("utf-8", "surrogateescape")] if path in aside.intent else []
    if restore and aside.index_changed:
        store.git_writing_index("update-index", "-z", "--index-info", input=b"".join(e + b"\0" for e in restore))
    for path, name in list(aside.staged.items()):
        if path in written:
            notes.append(f"git's index entry of {path} changed while the command ran (a git add?), so it was kept "
                         f"and the version it held before stays as {name}")
            continue
        put_file(store.root / name, None)
        _forget(aside, name)
    for path, name in list(aside.moved.items()):
        if not _replaceable(store, path, name, head_blob[path]):
            notes.append(f"{path} changed while the command ran (an editor's save?), so it was kept and your version "
                         f"from before stays as {name}")
            continue
        target, copy = store.root / path, store.root / name
        if os.path.isdir(copy) and not os.path.islink(copy):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)  # HEAD's file, where the user's folder was: a rename cannot replace it
        os.replace(copy, target)
        _forget(aside, name)
    marked = [rp for rp in marked if os.path.lexists(store.top / rp)]
    if marked:
        store.git_writing_index("add", "-N", "--", *(f":(top,literal){rp}" for rp in marked))
    return notes


def _forget(aside: Aside, name: str) -> None:
    """``name`` is no longer aside: put back, or deleted once its version is back."""
    aside.kept.remove(name)
    for copies in (aside.moved, aside.staged):
        for path in [path for path, copy in copies.items() if copy == name]:
            del copies[path]


def _replaceable(store: Repository, path: str, name: str, blob: str | None) -> bool:
    """Whether putting the copy ``name`` back over ``path`` loses nothing: no file there, the
    copy's own bytes (set_aside stopped before replacing it), or HEAD's version (``blob``), as
    git reads the file (its filters applied)."""
    target = store.root / path
    if not os.path.lexists(target):
        return True
    if os.path.islink(target) or not os.path.isfile(target):
        return False
    try:
        data = read_regular(target)
        if not os.path.islink(store.root / name) and os.path.isfile(store.root / name) and \
                read_regular(store.root / name) == data:
            return True
    except (OSError, NotRegularFile):
        return False
    if blob is None or "\n" in path:
        return False
    out = store.git("hash-object", "--stdin-paths", input=(store.repo_path(path) + "\n").encode("utf-8", "surrogateescape"))
    return out.stdout.decode().strip() == blob


def by_hand(aside: Aside) -> str:
    """How to put back by hand what is still aside, in an order that loses nothing: each staged
    copy into git's index first, then the work tree's copy over the file."""
    steps: list[str] = []
    for path in sorted({*aside.moved, *aside.staged}):
        file = shlex.quote(path)
        if path in aside.staged and path in aside.moved:
            steps.append(f"mv {shlex.quote(aside.staged[path])} {file} && git add {file}")
        elif path in aside.staged:  # the work tree's version is in place: staged without touching it
            copy, (mode, repo_path) = shlex.quote(aside.staged[path]), _staged_entry(aside, path)
            steps.append(f'git update-index --add --cacheinfo {mode},"$(git hash-object -w {copy})",'
                         f'{shlex.quote(repo_path)} && rm {copy}')
        if path in aside.moved:
            steps.append(f"mv {shlex.quote(aside.moved[path])} {file}")
    return (f"your {'version is' if len(aside.kept) == 1 else 'versions are'} kept as {listed(aside.kept)}; "
            f"put {'it' if len(aside.kept) == 1 else 'them'} back by hand, in the KB folder, in this order: "
            + "; ".join(steps) + ".")


def _staged_entry(aside: Aside, path: str) -> tuple[str, str]:
    """The mode and repository path (``--cacheinfo`` reads paths from the repository's top,
    wherever it runs) git's index held ``path`` under before it was set aside."""
    repo_path = aside.prefix + path
    for entry in aside.index.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, held = entry.partition("\t")
        if held == repo_path:
            return meta.split(" ", 1)[0], repo_path
    return "100644", repo_path


# What --force set aside, kept until the command ends (``settled``), so that the next command
# says so after a kill between setting files aside and a commit: nothing else would.
_RECORD = "slayer-kb-aside.json"


def _record(store: Repository, head: str | None, moved: Mapping[str, str], staged: Mapping[str, str]) -> None:
    """Add these copies to the record of what this command set aside (written before them), with
    HEAD then: a HEAD moved since tells the next command that the command committed."""
    path = store.git_dirs()[0] / _RECORD
    try:
        held = json.loads(path.read_bytes())
    except (OSError, ValueError):
        held = {}
    held = {"moved": {**held.get("moved", {}), **moved}, "staged": {**held.get("staged", {}), **staged},
            "head": held.get("head", head)}
    put_file(path, json.dumps(held).encode("utf-8", "surrogateescape"))


def settled(store: Repository) -> None:
    """The command that set files aside ended: put back, committed over, or told how to."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(store.git_dirs()[0] / _RECORD)


def left_by_a_stopped_command(store: Repository) -> str | None:
    """What a command stopped before it ended (killed) left aside, and how to put it back; the
    record is then dropped: it is said once. Call under the lock."""
    path = store.git_dirs()[0] / _RECORD
    try:
        held = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        held = {}
    settled(store)
    aside = Aside([], prefix=store.prefix)
    for key, copies in (("moved", aside.moved), ("staged", aside.staged)):
        for file, name in (held.get(key) or {}).items():
            if isinstance(file, str) and isinstance(name, str) and os.path.lexists(store.root / name):
                copies[file] = name
                aside.kept.append(name)
    if not aside.kept:
        return None
    if held.get("head", store.head()) != store.head():  # its commit stands: the copies are the user's versions
        return (f"a slayer-kb command was stopped (killed?) after --force set your uncommitted work aside and "
                f"committed (compare the files first: the commit rewrote them): {by_hand(aside)}")
    return (f"a slayer-kb command was stopped (killed?) after --force set your uncommitted work aside, before "
            f"it committed or put it back (compare the files first: they may have changed since): {by_hand(aside)}")


def _by_path(entries: bytes) -> dict[bytes, bytes]:
    """``update-index --index-info`` entries, each by its path."""
    return {entry.partition(b"\t")[2]: entry for entry in entries.split(b"\0") if entry}


def _removal(store: Repository, repo_path: bytes) -> bytes:
    null = "0" * len(store.head() or "0" * 40)
    return f"0 {null}\t".encode() + repo_path


def _intent_to_add(store: Repository, entries: bytes, new: list[str]) -> list[str]:
    """Those of ``new`` (files HEAD lacks) git's index marks ``git add -N``: an entry of the
    empty blob that ``diff --cached`` does not show (a staged empty file it shows)."""
    held = {rp: entry.split(b" ")[1].decode() for rp, entry in _by_path(entries).items()}
    maybe = [path for path in new if held.get(store.repo_path(path).encode("utf-8", "surrogateescape")) in _EMPTY_BLOBS]
    if not maybe:
        return []
    shown = store.git("diff", "--cached", "--name-only", "-z", "--no-renames", "--",
                      *(f":(top,literal){store.repo_path(path)}" for path in maybe), env=STATUS_ENV).stdout
    listed_paths = {name.decode("utf-8", "surrogateescape") for name in shown.split(b"\0") if name}
    return [path for path in maybe if store.repo_path(path) not in listed_paths]


def _index_entries(store: Repository, repo_paths: list[str]) -> bytes:
    """git's index entries of ``repo_paths`` as ``update-index --index-info`` takes them back:
    ``git ls-files -s``'s, and a removal for each path the index lacks."""
    if not repo_paths:
        return b""
    out = store.git("ls-files", "-s", "-z", "--full-name", "--", *repo_paths, env=STATUS_ENV).stdout
    entries = [entry for entry in out.split(b"\0") if entry]
    held = {entry.partition(b"\t")[2] for entry in entries}
    absent = [_removal(store, rp.encode("utf-8", "surrogateescape")) for rp in repo_paths
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
