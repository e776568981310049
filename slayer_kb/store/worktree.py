"""What the work tree and git's index hold that HEAD does not (one ``git status``), and writing a
published commit's files into them (``aside.py`` sets the user's versions aside for ``--force``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..core.errors import ConflictError, WorkTreeError
from ..core.fileio import in_threads, read_regular
from ..core.locate import id_of_path
from ..core.problems import cd_step, git_command, words
from ..core.session import SESSIONS_DIR, id_of_file
from ..core.text import listed
from .files import is_file_or_link, put_file, why_unwritable
from .gitenv import LITERAL_PATHS

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path

    from .objects import ObjectStore


class Repository(Protocol):
    """What this module asks of the store (repo.py's ``GitStore``, which imports this module)."""

    root: Path
    top: Path
    prefix: str

    @property
    def objects(self) -> ObjectStore: ...

    def repo_path(self, kb_path: str) -> str: ...

    def git(self, *args: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]: ...

    def git_writing_index(self, *args: str, check: bool = True, undo: tuple[str, ...] = (),
                          resume: tuple[str, ...] = (), **kwargs: object) -> subprocess.CompletedProcess[bytes]: ...

    def head(self) -> str | None: ...

    def branch(self) -> str: ...

    def check_inside(self, kb_path: str) -> None: ...

    def stage(self, kb_paths: list[str], marks: IndexMarks | None = None) -> None: ...

    @property
    def index_file(self) -> Path: ...

    def index_locked(self) -> str | None: ...

    def git_dirs(self) -> tuple[Path, Path]: ...

def reset_keep(store: Repository, target: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Move the branch to ``target`` as ``git reset --keep`` does (files HEAD and ``target`` agree
    on, and local changes to others, kept), after refreshing the index's stat data: in a copied
    clone (``cp -r``) no entry's stat data matches its file, and ``--keep`` refuses each such
    entry as "not uptodate" until git has looked again."""
    store.git_writing_index("update-index", "-q", "--refresh", check=False)  # exit 1 names changed files: --keep decides
    return store.git_writing_index("reset", "-q", "--keep", target, check=check)


# A git status names at most this many paths one by one: git matches every file against every
# pathspec, so a hundred of them cost 0.4 s at 100,000 files (measured). More paths are asked
# about by their folders, and picked out of the answer here.
NAMED_PATHS = 8
# Paths are never patterns, and a status never writes the user's index (which it may otherwise
# do to refresh its stat data, taking index.lock from under a git command of theirs).
STATUS_ENV = {**LITERAL_PATHS, "GIT_OPTIONAL_LOCKS": "0"}
# A message names at most this many files one by one.
_SHOWN = 5
STATUS_FIELDS = {b"1 ": 8, b"2 ": 9, b"u ": 10}  # record kind of status v2 -> spaces before the path


def uncommitted(store: Repository, kb_paths: Sequence[str] | None = None,
                rewrites: bool = True, marks: IndexMarks | None = None) -> dict[str, str | None]:
    """The paths among ``kb_paths`` (KB-relative files, or folders ending in '/'; None: the
    whole repository) that hold work HEAD does not: changed in the work tree or staged in
    git's index, and, of the files named, one in the work tree that HEAD does not have
    (untracked or ignored; a regular file or a symlink). Each maps to the blob of its staged
    version when that differs from both HEAD and the work tree, else None. Paths outside the
    KB come back relative to it (``../x``). One ``git status``, whatever the number of paths.

    ``rewrites``: the caller is about to rewrite these paths, so one git's index marks
    assume-unchanged or skip-worktree is refused (``ConflictError``) unless its file holds its
    index's blob; False (a check that the tree is clean before a sync) leaves marks alone, as
    git status does: a sparse checkout marks every file outside it. ``marks``: those marks as
    ``index_marks`` read them for ``kb_paths`` in this transaction (None: read them here).
    """
    if kb_paths is not None and not kb_paths:
        return {}
    specs = [] if kb_paths is None else _pathspecs(store, kb_paths)
    proc = store.git("status", "--porcelain=v2", "-z", "--untracked-files=no", "--no-renames",
                    "--ignore-submodules=all", *(["--", *specs] if specs else []), env=STATUS_ENV)
    files = {p for p in kb_paths or () if not p.endswith("/")}
    folders = tuple(p for p in kb_paths or () if p.endswith("/"))
    found: dict[str, str | None] = {}
    records = iter(proc.stdout.split(b"\0"))
    for record in records:
        kind = record[:2]
        if kind not in STATUS_FIELDS:
            continue
        # "1 XY sub mH mI mW hH hI path"; a rename (not asked for) has a score before the
        # path and its old path in the next record; an unmerged path three stages' fields.
        fields = record.split(b" ", STATUS_FIELDS[kind])
        if kind == b"2 ":
            next(records, None)
        repo_path = fields[-1].decode("utf-8", "surrogateescape")
        path = (repo_path[len(store.prefix):] if repo_path.startswith(store.prefix)
                else os.path.relpath(store.top / repo_path, store.root))
        if kb_paths is not None and path not in files and not path.startswith(folders):
            continue
        staged = None
        xy = fields[1].decode("ascii", "replace")
        if kind == b"1 " and xy[0] in "AMT" and xy[1] != ".":
            staged = fields[7].decode("ascii")
        found[path] = staged
    if rewrites:
        marked = _changed_marked(store, marks if marks is not None else index_marks(store, kb_paths))
        # A file a sparse checkout leaves out holds no work: its commit is made without it (``left_out``).
        marked = {path: kinds for path, kinds in marked.items() if not _sparse_gap(store, path, kinds)}
        if marked:
            raise ConflictError(_marked_message(store.root, marked))
    unlisted = [p for p in sorted(files) if p not in found and is_file_or_link(store.root / p)]
    if unlisted:
        head = store.head()
        objects = store.objects
        in_head = objects.blobs_at(objects.tree_of(head) if head else None,
                                   [store.repo_path(p) for p in unlisted])
        found.update((p, None) for p in unlisted if in_head[store.repo_path(p)] is None)
    return found

def _pathspecs(store: Repository, kb_paths: Sequence[str]) -> list[str]:
    """What a git command asks about for these KB-relative paths (files, or folders ending in
    '/'): the paths themselves, or past ``NAMED_PATHS`` their folders, to be picked out of the answer."""
    if len(kb_paths) <= NAMED_PATHS:
        return [store.repo_path(path) for path in kb_paths]
    return sorted({store.repo_path(p.rstrip("/").rpartition("/")[0] + "/" if "/" in p.rstrip("/") else p)
                   for p in kb_paths})


# The marks of git's index, as ``git ls-files -v`` shows them: 'S' skip-worktree, a lower-case
# letter assume-unchanged, 's' both. Sorted, as messages name them.
_MARKS = {b"S": ("skip-worktree",), b"s": ("assume-unchanged", "skip-worktree")}


def _marked(store: Repository, specs: Sequence[str]) -> dict[str, tuple[tuple[str, ...], str, str]]:
    """The files among ``specs`` (all when none) that git's index marks ``assume-unchanged`` or
    ``skip-worktree``, KB-relative, each mapped to (its marks, its index's mode, its index's blob):
    git status shows no change to them whatever they hold, and ``update-index`` staging a commit's
    version of one leaves the old blob (or, for a skip-worktree file, a deletion) in git's index."""
    out = store.git("ls-files", "-v", "-s", "-z", *(["--", *specs] if specs else []), env=STATUS_ENV).stdout
    found = {}
    for record in out.split(b"\0"):
        head, _, name = record.partition(b"\t")  # "TAG MODE BLOB STAGE\tPATH"
        tag, _, rest = head.partition(b" ")
        marks = _MARKS.get(tag, ("assume-unchanged",) if tag.islower() else ())
        if marks:
            repo_path = name.decode("utf-8", "surrogateescape")
            mode, blob = rest.decode().split(" ")[:2]
            found[repo_path[len(store.prefix):] if repo_path.startswith(store.prefix)
                  else os.path.relpath(store.top / repo_path, store.root)] = (marks, mode, blob)
    return found


@dataclass(frozen=True)
class IndexMarks:
    """git's index marks on the files ``paths`` (KB-relative; a folder ends in '/'; None: every
    file), read once in a transaction for its check that they may be rewritten and for the
    staging of its commit. Never kept past the transaction: the person may set or clear a mark
    between two commands of a process that stays open."""

    paths: frozenset[str] | None
    found: Mapping[str, tuple[tuple[str, ...], str, str]]  # path -> (marks, index's mode, index's blob)

    def covers(self, path: str) -> bool:
        """Were ``path``'s marks read (``found`` lacks it: it has none)?"""
        return self.paths is None or path in self.paths or any(
            p.endswith("/") and path.startswith(p) for p in self.paths)

    def with_unmarked(self, kb_paths: Iterable[str]) -> IndexMarks:
        """These marks, and ``kb_paths`` known to have none: files the commit's parent lacks,
        which git's index holds no entry of to mark (a save's new memory costs no ``ls-files``)."""
        return self if self.paths is None else IndexMarks(self.paths | frozenset(kb_paths), self.found)


def index_marks(store: Repository, kb_paths: Sequence[str] | None) -> IndexMarks:
    """The marks git's index holds on ``kb_paths`` (files, or folders ending in '/'; None: the
    whole repository). One ``git ls-files``."""
    paths = None if kb_paths is None else frozenset(kb_paths)
    if paths == frozenset():
        return IndexMarks(paths, {})
    # Past NAMED_PATHS the folders are asked about: their other files are left out.
    asked = IndexMarks(paths, _marked(store, [] if kb_paths is None else _pathspecs(store, kb_paths)))
    return IndexMarks(paths, {path: got for path, got in asked.found.items() if asked.covers(path)})


def _changed_marked(store: Repository, marks: IndexMarks) -> dict[str, tuple[str, ...]]:
    """The marked files whose work tree does not hold their index's blob (absent, or changed),
    with their marks: one marked by ``core.ignoreStat`` (git marks every file it adds) and never
    touched holds no uncommitted work. One ``git hash-object`` for all of them."""
    marked = dict(marks.found)
    # --stdin-paths reads a line a path: a name holding a line break stays refused.
    present = sorted(p for p in marked if "\n" not in p and os.path.isfile(store.root / p)
                     and not os.path.islink(store.root / p))
    if present:
        payload = "".join(store.repo_path(p) + "\n" for p in present).encode("utf-8", "surrogateescape")
        blobs = store.git("hash-object", "--stdin-paths", input=payload).stdout.decode().split()
        for path, blob in zip(present, blobs, strict=True):
            if marked[path][2] == blob:
                del marked[path]
    return {path: marks for path, (marks, *_) in marked.items()}


def left_out(store: Repository, marks: IndexMarks, kb_paths: Iterable[str]) -> set[str]:
    """Those of ``kb_paths`` a sparse checkout leaves out: marked skip-worktree alone (in
    ``marks``, read under this command's lock and covering them: ``marks_of``) and absent from
    the work tree. A commit that changes one stages its new version, marked as before, and leaves
    it out of the work tree, as git's own merge and rebase do."""
    return {path for path in kb_paths if _sparse_gap(store, path, marks.found.get(path, ((),))[0])}


def _sparse_gap(store: Repository, path: str, kinds: tuple[str, ...]) -> bool:
    """Whether ``path``, with these marks, is a file a sparse checkout leaves out: marked
    skip-worktree alone and absent. One deleted under another mark (assume-unchanged) is the
    user's uncommitted deletion."""
    return kinds == ("skip-worktree",) and not os.path.lexists(store.root / path)


def require_shown(store: Repository, parted: str, sha: str) -> None:
    """Refuse (``ConflictError``, the marks' message), before git merges or rebases, a KB file
    git's index marks whose work tree holds uncommitted work (an edit, a deletion) and that
    ``sha`` changed since ``parted``: git takes the mark at its word and writes its version over
    the work (git 2.39 then refuses, the edit gone). Hidden work git does not touch, or a file a
    sparse checkout leaves out (git leaves it out), stops nothing."""
    out = store.git("diff", "--name-only", "-z", "--no-renames", parted, sha, "--", store.prefix or ".").stdout
    changed = [p[len(store.prefix):] for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
    if not changed:
        return
    marked = {path: kinds for path, kinds in _changed_marked(store, index_marks(store, changed)).items()
              if not _sparse_gap(store, path, kinds)}
    if marked:
        raise ConflictError(_marked_message(store.root, marked))


def marks_of(store: Repository, kb_paths: Iterable[str], read: IndexMarks | None = None) -> IndexMarks:
    """git's index marks on the files ``kb_paths``: as this transaction read them (``read``),
    and those of the files it does not cover read now. At most one ``git ls-files``."""
    unread = [path for path in kb_paths if read is None or not read.covers(path)]
    if read is not None and not unread:
        return read
    now = index_marks(store, unread)
    if read is None:
        return now
    # ``read`` names its paths: one reading every file (None) covers them all.
    return IndexMarks((read.paths or frozenset()) | frozenset(unread), {**read.found, **now.found})


def marked_in_index(store: Repository, kb_paths: Sequence[str],
                    read: IndexMarks | None = None) -> dict[str, tuple[tuple[str, ...], str]]:
    """Those of the files ``kb_paths`` that git's index marks, each with (its marks, its index's
    mode), for ``restage_marked``: as ``marks_of`` reads them, just before they are staged."""
    wanted = set(kb_paths)
    return {path: (marks, mode) for path, (marks, mode, _) in marks_of(store, kb_paths, read).found.items()
            if path in wanted}


def restage_marked(store: Repository, marked: Mapping[str, tuple[tuple[str, ...], str]]) -> None:
    """After ``update-index`` staged HEAD's version of files, these of them marked before it
    (``marked_in_index``), which ``update-index`` leaves as they were (an assume-unchanged file) or
    drops (a skip-worktree file: a staged deletion): put HEAD's version in git's index, and mark
    them again with each of the marks they had."""
    head = store.head()
    if not marked or head is None:
        return
    objects = store.objects
    in_head = objects.blobs_at(objects.tree_of(head), [store.repo_path(p) for p in marked])
    lines = "".join(f"{mode if in_head[store.repo_path(p)] else 0} {in_head[store.repo_path(p)] or '0' * 40}"
                    f"\t{store.repo_path(p)}\0" for p, (_, mode) in sorted(marked.items()))
    store.git_writing_index("update-index", "-z", "--index-info", input=lines.encode("utf-8", "surrogateescape"))
    _mark_again(store, {p: marks for p, (marks, _) in marked.items() if in_head[store.repo_path(p)]})


def _mark_again(store: Repository, marked: Mapping[str, tuple[str, ...]]) -> None:
    """Give these files, just put in git's index by ``--index-info`` (which drops an entry's
    marks), each of their marks again."""
    if not marked:
        return
    # --index-info's entries have no stat data: refreshed first, as git would.
    store.git_writing_index("update-index", "-q", "--refresh", "--", *map(store.repo_path, sorted(marked)), check=False)
    for kind in sorted({kind for marks in marked.values() for kind in marks}):
        # One mark a call: update-index given both sets only the first.
        again = [store.repo_path(p) for p in sorted(marked) if kind in marked[p]]
        if again:
            store.git_writing_index("update-index", f"--{kind}", "--", *again)


def _marked_message(root: Path, marked: Mapping[str, tuple[str, ...]]) -> str:
    paths = sorted(marked)
    one = len(paths) == 1
    groups = {marks: [p for p in paths if marked[p] == marks] for marks in sorted(set(marked.values()))}
    what = "; ".join(f"{listed(group)} {'is' if len(group) == 1 else 'are'} marked {' and '.join(marks)}"
                     for marks, group in groups.items())
    kinds = sorted({kind for marks in groups for kind in marks})
    clear = " and ".join(git_command(root, f"update-index --no-{kind} -- "
                                           f"{words(*[p for p in paths if kind in marked[p]])}") for kind in kinds)
    return (f"{what} in git's index, so git shows none of {'its' if one else 'their'} changes, and this command "
            f"would rewrite {'it' if one else 'them'}: slayer-kb never commits work you have not committed, and "
            f"git's index would not take the commit, so nothing was done. Clear the mark{'s' if len(kinds) > 1 else ''} "
            f"({clear}), see what git status shows, then retry.")


def write_files(store: Repository, contents: Mapping[str, bytes | None]) -> dict[str, OSError]:
    """Make each path hold its bytes (None: not exist), on a few threads (fileio.py); the paths
    that could not be written, each with why."""
    failed: dict[str, OSError] = {}
    for folder in {os.path.dirname(path) for path, data in contents.items() if data is not None}:
        try:
            (store.root / folder).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            failed.update((path, exc) for path in contents if os.path.dirname(path) == folder)

    def put(item: tuple[str, bytes | None]) -> None:
        try:
            put_file(store.root / item[0], item[1])
        except OSError as exc:
            failed[item[0]] = exc

    in_threads(put, [item for item in contents.items() if item[0] not in failed])
    return failed


def stage_blobs(store: Repository, blobs: Mapping[str, str | None], marks: IndexMarks | None = None) -> None:
    """Put these blobs (None: no file) in git's index at their paths, whatever the work tree
    holds, each file keeping the marks git's index held on it (``marks``: as this transaction
    read them; the others read now): a sparse checkout's file stays left out."""
    marked = marked_in_index(store, list(blobs), marks)
    null = "0" * len(store.head() or "")  # git's null id, as long as this repository's ids
    records = "".join(f"100644 {oid}\t{store.repo_path(path)}\0" if oid else f"0 {null}\t{store.repo_path(path)}\0"
                      for path, oid in blobs.items())
    store.git_writing_index("update-index", "-z", "--index-info", input=records.encode("utf-8", "surrogateescape"))
    _mark_again(store, {path: kinds for path, (kinds, _) in marked.items() if blobs[path]})


# Attributes under which git reads a work-tree file as other bytes than slayer-kb writes (the
# blob's own): its index would then show the file changed, or refuse it.
_CONVERSIONS = ("working-tree-encoding", "filter")


def unpublishable(store: Repository, written: Sequence[str], old_tree: str | None) -> str | None:
    """Why a commit writing the files ``written`` (KB-relative) on top of ``old_tree`` must not be
    published, ending with the fix, or None: git's index cannot take it (locked, not replaceable),
    it would delete what HEAD holds of the other kind (a file where its folder must be, a folder
    where the file must be), or git would read the files it writes as something else."""
    if (problem := store.index_locked()) is not None:
        return problem
    index = store.index_file
    # Asked from the folder above git's, so that a refusal names that folder (.git/).
    if (problem := why_unwritable(index.parent.parent, f"{index.parent.name}/{index.name}", False, {})) is not None:
        return f"Refusing to commit: git's index, {index}, cannot be updated: {problem}"
    clashes = store.objects.clashes(old_tree, [store.repo_path(path) for path in written])
    for path in written:
        if (obstacle := clashes.get(store.repo_path(path))) is not None:
            # A commit of ours must never carry a deletion the user did not commit.
            return (f"Refusing to write {path}: the last commit has {obstacle} there, which this commit would "
                    "delete. Move it out of the way and commit that yourself (git mv, then git commit), then retry")
    return _converted(store, written)


def _converted(store: Repository, written: Sequence[str]) -> str | None:
    """``unpublishable``'s last check: a conversion git's attributes apply to one of ``written``.
    Asked of git only where an attributes file is (most KBs have none: no process per save)."""
    top = os.fspath(store.top)
    folders = {top}
    for folder in {os.path.join(store.root, os.path.dirname(path)) for path in written}:
        while len(folder) > len(top) and folder not in folders:  # up to the repository's top
            folders.add(folder)
            folder = os.path.dirname(folder)
    if not any(os.path.lexists(os.path.join(folder, ".gitattributes")) for folder in folders) and not os.path.lexists(
            store.git_dirs()[1] / "info" / "attributes"):
        return None
    payload = "".join(store.repo_path(path) + "\0" for path in written).encode("utf-8", "surrogateescape")
    out = store.git("check-attr", "-z", "--stdin", *_CONVERSIONS, input=payload).stdout.split(b"\0")
    for at in range(0, len(out) - 2, 3):
        value = out[at + 2].decode("utf-8", "replace")
        if value in ("unspecified", "unset"):
            continue
        name = out[at + 1].decode()
        # A filter git has no command for is ignored by git as well (an LFS repository without git-lfs).
        if name == "filter" and not any(store.git("config", "--get", f"filter.{value}.{key}", check=False).stdout
                                        for key in ("clean", "process")):
            continue
        path = out[at].decode("utf-8", "surrogateescape")
        return (f"Refusing to write {path}: git's attributes give it {name}={value}, so git would read the file "
                "slayer-kb writes as other bytes and show it changed. Take that attribute off the knowledge base's "
                "memories/ and sessions/ (in .gitattributes, then commit), then retry")
    return None


def not_staged(store: Repository, commit: str, paths: Sequence[str], reason: str) -> WorkTreeError:
    """The truth about a published ``commit`` whose files are in the work tree but that git's
    index could not take (``reason``), and how to finish."""
    short, subject = store.git("show", "-s", "--format=%h%n%s", commit).stdout.decode().splitlines()[:2]
    return WorkTreeError(
        f"Committed as {short} ({subject}), but git's index could not take {listed(sorted(paths), _SHOWN)}: "
        f"{reason.rstrip('.')}. Once it can, run any slayer-kb command that writes (or `"
        f"{git_command(store.root, 'reset -q -- ' + (words(*sorted(paths)) if len(paths) <= _SHOWN else 'FILE...'))}"
        "`) to finish; until then `git status` "
        "shows the change undone in git's index, and `git commit` would undo it.",
        commit,
    )


def not_written(store: Repository, commit: str, blobs: Mapping[str, str | None],
                failed: Mapping[str, OSError]) -> WorkTreeError:
    """The truth about a published ``commit`` whose ``failed`` files the work tree did not
    take, and how to finish it by hand."""
    short, subject = store.git("show", "-s", "--format=%h%n%s", commit).stdout.decode().splitlines()[:2]
    paths = sorted(failed)
    error = failed[paths[0]]
    restore = [p for p in paths if blobs[p] is not None]
    remove = [p for p in paths if blobs[p] is None]
    checkout = git_command(store.root, f"checkout HEAD -- {words(*restore) if len(restore) <= _SHOWN else 'FILE'}")
    steps = [f"run `{checkout}`" if len(restore) <= _SHOWN
             else f"run `{checkout}` for each of {listed(restore, _SHOWN)}"] if restore else []
    steps += [f"delete {listed(remove, _SHOWN)}"] if remove else []
    return WorkTreeError(
        f"Committed as {short} ({subject}), but {listed(paths, _SHOWN)} could not be written in the "
        f"work tree: {error.strerror or error}. Once {'it' if len(paths) == 1 else 'they'} can be "
        f"written, {' and '.join(steps)} to finish; until then `git commit -a` would undo the change.",
        commit,
    )


def head_blob(store: Repository, kb_path: str) -> str | None:
    """The blob HEAD has at ``kb_path`` (KB-relative), None when it has none (or no HEAD)."""
    head = store.head()
    objects = store.objects
    repo_path = store.repo_path(kb_path)
    return objects.blobs_at(objects.tree_of(head), [repo_path])[repo_path] if head else None


def missing_by_hand(store: Repository, kb_path: str) -> str | None:
    """What became of the file ``kb_path`` (KB-relative), missing from the work tree while HEAD
    has it, and the fix: moved (``git mv``, or ``mv`` to a file of HEAD's very bytes) or deleted
    by hand, not committed. None when HEAD lacks it too: then no file was ever there."""
    blob = head_blob(store, kb_path)
    if blob is None:
        return None
    repo_path = store.repo_path(kb_path)
    if "skip-worktree" in _marked(store, [repo_path]).get(kb_path, ((),))[0]:
        # Left out by a sparse checkout: 'git rm' would delete the memory for everyone.
        return (f"{kb_path} is not checked out: git's index marks it skip-worktree (as a sparse checkout does "
                "for the files it leaves out), and HEAD has it. Check it out (add it to the sparse checkout, "
                "or run git sparse-checkout disable).")
    # A move staged with git mv is a rename in git's status; one by hand leaves an untracked file.
    proc = store.git("status", "--porcelain=v2", "-z", "-uall", "--renames", "--ignore-submodules=all", "--",
                     store.prefix or ".", env=STATUS_ENV)
    records = iter(proc.stdout.decode("utf-8", "surrogateescape").split("\0"))
    untracked: list[str] = []
    staged = False  # the deletion is in git's index already (git rm --cached): git rm would fail
    edited = False  # git's index holds an edit (status MD): HEAD's version would overwrite it
    for record in records:
        if record.startswith("2 "):
            new, old = record.split(" ", 9)[-1], next(records, "")
            if old == repo_path:
                return _moved(store.root, kb_path, new[len(store.prefix):], "git mv")
        elif record.startswith("1 ") and record.split(" ", 8)[-1] == repo_path:
            staged, edited = staged or record[2] == "D", edited or record[2] not in ".D"
        elif record.startswith("? "):
            untracked.append(record[2:])
    # Only a file of the very size is read: the folder may hold thousands of others.
    data = store.objects.read("blob", blob)
    for path in untracked:
        with contextlib.suppress(OSError):
            if os.lstat(store.top / path).st_size == len(data) and read_regular(store.top / path) == data:
                return _moved(store.root, kb_path, path[len(store.prefix):], "mv")
    deleting = ["git commit"] if staged else [f"git rm {words(kb_path)}", "git commit"]
    # With an edit staged, the file comes back from git's index, the edit kept.
    source = "" if edited else "HEAD "
    return (f"{kb_path} is missing from the work tree, and HEAD still has it: a deletion (or a move) that is not "
            f"committed. Bring the file back ({_run(store.root, f'git checkout {source}-- {words(kb_path)}')}), or "
            f"commit the deletion ({_run(store.root, *deleting)}).")


def staged_new(store: Repository, kb_paths: Sequence[str]) -> dict[str, str]:
    """Those of ``kb_paths`` (files, or folders ending in '/') that git's index holds as added
    (``git add``) and HEAD lacks, KB-relative, each with its staged blob: the person's next
    ``git commit`` takes that version. One ``git diff-index``, no stat. Before the first commit
    (a fresh ``git init``, an orphan branch) every staged file counts as added. An intent-to-add
    entry (``git add -N``) stages no version, so it is not one."""
    base = store.head() or store.objects.empty_tree()
    out = store.git("diff-index", "--cached", "--raw", "-z", "--no-renames", "--diff-filter=A",
                    "--ita-invisible-in-index", base, "--", *_pathspecs(store, kb_paths),
                    env=STATUS_ENV).stdout.split(b"\0")
    files = {p for p in kb_paths if not p.endswith("/")}
    folders = tuple(p for p in kb_paths if p.endswith("/"))
    added: dict[str, str] = {}
    for meta, repo_path in zip(out[0::2], out[1::2], strict=False):  # ":MODE MODE OLD NEW A", then the path
        path = repo_path.decode("utf-8", "surrogateescape")[len(store.prefix):]
        if path in files or path.startswith(folders):
            added[path] = meta.split()[3].decode()
    return added


def added_then_deleted(store: Repository, kb_path: str) -> str:
    """What became of the file ``kb_path`` (KB-relative) that HEAD lacks, staged in git's index
    (``git add``) and then deleted from the work tree, and the fix: the next ``git commit`` would
    take the staged version."""
    return (f"{kb_path} is staged in git's index (git add) and missing from the work tree, and HEAD lacks it: "
            "your next git commit would commit the staged version. Bring the file back "
            f"({_run(store.root, f'git checkout -- {words(kb_path)}')}), or unstage it "
            f"({_run(store.root, f'git rm -q --cached -- {words(kb_path)}')}).")


def _moved(root: Path, kb_path: str, now: str, move: str) -> str:
    return (f"{kb_path} was moved to {now}{_read_as(kb_path, now)}, and HEAD still has it at {kb_path}: a move that is not "
            f"committed. Move it back ({_run(root, f'{move} {words(now, kb_path)}')}), or commit the move "
            f"({_run(root, f'git add -A -- {words(kb_path, now)}', 'git commit')}).")


def _read_as(kb_path: str, now: str) -> str:
    """What slayer-kb reads a memory or session file moved within its folder as: the record of
    the id its new name spells."""
    folder, _, name = now.rpartition("/")
    if folder != kb_path.rpartition("/")[0]:
        return ""
    if (memory_id := id_of_path(now)) is not None:
        return f" (slayer-kb now reads it as memory '{memory_id}')"
    if folder == SESSIONS_DIR and (session_id := id_of_file(name)) is not None:
        return f" (slayer-kb now reads it as session '{session_id}')"
    return ""


def _run(root: Path, *steps: str) -> str:
    """Steps to paste, run in the KB's folder ``root``: the paths they name are the KB's, and
    ``--kb DIR`` may have named it from anywhere."""
    return "; ".join([*cd_step(root), *steps])
