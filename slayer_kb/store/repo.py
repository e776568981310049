"""The git store: a cross-process lock, atomic multi-file commits, and history look-ups.

A change's blobs and trees are written straight into git's object database (``objects.py``), its
commit by ``git commit-tree``, and it is published with a compare-and-swap ``update-ref`` (once
every path it writes is known to be writable, ``files.why_unwritable``); only then are the files
written into the work tree (``put_file``) and staged in the user's index, which is held
(``index.lock``, as ``git commit`` holds it: ``indexhold.py``) from before the ``update-ref`` until
then, so a person's ``git commit`` meanwhile refuses rather than undo the commit. A
journal written before the ``update-ref`` lets the next command finish (or discard) a change that
a crash interrupted, so the KB is always either before or after the whole commit, and a disk
space reservation taken before it turns a full disk into "nothing was saved".

Plain ``git`` subprocesses do all of it, history included (GitPython's import alone cost ~100 ms a
command, its ``Repo.index`` was 3x slower than ``git add`` + ``git commit`` at 10,000 files, and
its git processes kept a GIT_DIR from the environment: gitenv.py). Every git call passes an
argument list (no shell) and ``--`` before paths."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..core import priority
from ..core.errors import ConflictError, StoreError
from ..core.fileio import identity, refuses_folders
from ..core.problems import shown, words
from ..core.text import shown_controls
from . import aside, committree, gitstate, indexlock, journal, mergemark, reffiles, requests, state, upkeep, worktree
from .bounded import checked, explain, git_timeout, hung, run_bounded
from .catfile import cat_files
from .files import StatKey, keep_changed, reserved_space, why_unwritable
from .gitenv import OUTPUT_SETTINGS, git_env
from .identity import Identity
from .idtrailer import with_trailer, without_trailer
from .indexhold import Holding, claim, commit_lock, let_go_on, take_lock
from .objects import Named, ObjectStore
from .place import broken_gitfile, git_dir_refusal, ownership_refusal
from .recovery import RESERVE, recover
from .view import View

if TYPE_CHECKING:
    from ..core.results import LogEntry

STATE_DIR = state.STATE_DIR
LOCK_TIMEOUT = 60.0
_WALK_LIMIT = 4
LOCK_POLL = 0.002  # seconds between tries of a taken KB lock
UNWRITABLE = ("slayer-kb keeps its lock and search index there: make the knowledge base writable by this user, "
              "or clone it somewhere writable")


def run_git(args: list[str], cwd: Path, *, input: bytes | None = None, env: Mapping[str, str] | None = None,
            check: bool = True, niceness: int = 0, timeout: float | None = None,
            keep: tuple[int, ...] = ()) -> subprocess.CompletedProcess[bytes]:
    """``git ARGS`` in ``cwd``'s repository (gitenv.py: its environment, its output settings), ``niceness`` steps
    lower; past ``timeout`` s, stopped; ``keep``: descriptors it inherits."""
    try:
        command = priority.command(["git", *OUTPUT_SETTINGS, *args], niceness)
        proc = run_bounded(command, cwd, input, git_env(env), timeout, keep)
    except FileNotFoundError:
        raise StoreError("git is not installed or not on PATH; install git first.") from None
    return checked(args, proc) if check else proc


# Where a repository keeps its objects (and their hash), its git folders and its index.
_WHERE = ("--git-path", "objects", "--show-object-format", "--git-dir", "--git-common-dir", "--git-path", "index")


def find_toplevel(path: Path) -> Path | None:
    proc = run_git(["rev-parse", "--show-toplevel"], path, check=False)
    if proc.returncode != 0 and (refused := ownership_refusal(proc.stderr)) is not None:
        raise StoreError(refused)
    # One line, the name's bytes kept (a folder named with a newline, or not in UTF-8).
    return Path(proc.stdout.decode("utf-8", "surrogateescape").removesuffix("\n")) if proc.returncode == 0 else None


@dataclass
class Change:
    """A file to write (``data``) or delete (``data is None``), relative to the KB root."""

    path: str
    data: bytes | None


class GitStore:
    """The git repository holding a KB (the KB may be a folder inside it)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        # Where it is and keeps its files, in one git process (an error or a newline in a path: two).
        proc = run_git(["rev-parse", "--show-toplevel", *_WHERE], self.root, check=False)
        located = proc.stdout.decode("utf-8", "surrogateescape").splitlines() if proc.returncode == 0 else []
        top = Path(located[0]) if len(located) == 6 else find_toplevel(self.root)
        if top is None:
            if (why := refuses_folders(self.root)) is not None:  # init could not make .git there
                raise StoreError(f"{self.root} is not inside a git repository, and cannot hold a knowledge base: it "
                                 f"takes no new folder ({why}). Give the folder of a knowledge base, or create one "
                                 "in a folder you can write to ('slayer-kb init DIR').")
            raise StoreError(git_dir_refusal(self.root)  # --kb repo/.git: init there is refused too
                             or broken_gitfile(self.root)
                             or f"{self.root} is not inside a git repository; run 'slayer-kb init {words(str(self.root))}'.")
        self.top = top.resolve()
        rel = self.root.relative_to(self.top).as_posix()
        self.prefix = "" if rel == "." else rel + "/"
        try:
            # Paths in the repository go to git as UTF-8 (stdin, attributes): the KB's must encode.
            rel.encode()
        except UnicodeEncodeError:
            shown, path = (os.fsencode(p).decode("utf-8", "backslashreplace") for p in (self.root, rel))
            raise StoreError(f"The knowledge base's folder {shown} is at {path} in its git repository, a path that "
                             "is not UTF-8, and slayer-kb gives git the KB's paths as UTF-8. Rename each folder "
                             f"of {path} whose name is not UTF-8, then run the command again.") from None
        self.state = self.root / STATE_DIR
        self._opened = identity(self.root)[0]  # the folder opened: ``ensure_state_dir`` makes none in another
        self._objects: ObjectStore | None = None
        self._git_dirs: tuple[Path, Path] = (self.top, self.top)
        self._index_file = self.top / ".git" / "index"
        if len(located) == 6:
            self._use(self.root, located[1:])
        self.identity = Identity(self.git, self.git_dirs)  # who commits: git's own identity, else a neutral one
        self.holding = False  # this process holds the KB lock (inside ``locked()``)
        self.view = View()  # which thread may use the warm in-memory state now (view.py)
        self.request: str | None = None  # the relayed request making the commits (requests.py)
        self.niceness = 0  # a relayed write's: its git work while reads go on beside it yields (priority.py)
        self._untrusted: str | None = None  # why the state folder was set aside after the open
        self.holding_index = Holding()  # git's index a commit holds while it stages (indexhold.py)
        self.tell: Callable[[str], None] | None = None  # the KB's warnings (recovery.py's); None: stderr
        self.recovers = True  # False in background jobs: what recovery says must reach a person
        self._check_state()

    def _check_state(self) -> bool:
        folder = self.repo_path(STATE_DIR)
        return state.check(self.state, self.head, lambda: state.index_state(self._index_file),
                           lambda: state.tracked(self.git, folder, self.index_file), shown=folder,
                           checked_out=lambda oid, path: state.checked_out_bytes(self.git, folder, oid, path),
                           exclude=lambda: self.git_dirs()[1] / "info" / "exclude")

    def recheck_state(self) -> str | None:
        """For a process that keeps the KB open (the warm server and its write process, the MCP
        server, a library user): the state folder checked again, as at the open, before a command
        reads the index anew, since git can put files there without HEAD moving while the process
        runs (a checkout of a branch's files into it, a squash merge); a cheap stat and record
        read while git's index has not changed. Once the folder was set aside, what to do, for
        good: the index this process holds open is of the folder moved away."""
        if self._untrusted is None and self._check_state():
            self._untrusted = (
                f"slayer-kb's state folder {self.state} was set aside while this process had the KB open: git "
                "put files there (see the warning). Start this process again: it rebuilds the folder")
        return self._untrusted

    # -- paths ------------------------------------------------------------------------------

    def repo_path(self, kb_path: str) -> str:
        return self.prefix + kb_path

    def git(self, *args: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        # Not while this thread holds the view: reads beside would wait for a git held back for them.
        niceness = 0 if self.view.held() else self.niceness
        if (held := self.holding_index.now()) is not None:
            kwargs["env"] = {**(kwargs.get("env") or {}), "GIT_INDEX_FILE": str(held.work)}  # type: ignore[dict-item]
        return run_git(list(args), self.top, niceness=niceness, **kwargs)  # type: ignore[arg-type]

    @property
    def objects(self) -> ObjectStore:
        if self._objects is None:
            self._locate()
        assert self._objects is not None
        return self._objects

    def git_dirs(self) -> tuple[Path, Path]:
        """(this worktree's git folder, the one its worktrees share), asked of git once."""
        if self._objects is None:
            self._locate()
        return self._git_dirs

    def _locate(self) -> None:
        """Ask git once where this repository keeps its objects and refs."""
        self._use(self.top, self.git("rev-parse", *_WHERE).stdout.decode("utf-8", "surrogateescape").splitlines())

    def _use(self, ran_in: Path, where: list[str]) -> None:
        """Take git's answer to ``_WHERE``, asked in the folder ``ran_in``."""
        objects_dir, git_dir, common_dir, index = (Path(os.path.normpath(ran_in / p)) for p in (where[0], *where[2:]))
        self._git_dirs, self._index_file = (git_dir, common_dir), index
        self._objects = ObjectStore(objects_dir, where[1], self.cat_files, self._index_pack)

    def cat_files(self, names: list[str], missing_ok: bool = False) -> list[Named | None]:
        """``(id, kind, data)`` of each object ``names`` names (``catfile.py``)."""
        return cat_files(self.git, self._git_dirs[1] / "shallow", names, missing_ok)

    def _index_pack(self, pack: bytes) -> None:
        self.git("index-pack", "--stdin", input=pack)

    # -- lock -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        """Serialise writers across processes; finish or discard a change a crash interrupted."""
        # Imported here: a command that only reads takes no lock, and filelock's import is over a
        # tenth of the interpreter's start (tests/test_cli_contract.py).
        import filelock

        self.ensure_state_dir()
        lock = filelock.FileLock(str(self.state / "lock"), timeout=timeout)
        try:
            # filelock polls (default every 50 ms): a save queued behind another writer or a
            # compaction's swap would sleep up to 50 ms after the lock was free.
            with self.view.released():  # a read of the warm server goes on meanwhile (view.py)
                lock.acquire(poll_interval=LOCK_POLL)
        except filelock.Timeout:
            raise StoreError(
                f"Another slayer-kb process has held the lock on {self.root} for {timeout:.0f} s; "
                "wait for it to finish and retry."
            ) from None
        except OSError as exc:
            raise StoreError(f"Cannot take the lock in {self.state}: {exc.strerror}; {UNWRITABLE}.") from None
        self.holding = True
        try:
            recover(self)
            yield
        finally:
            self.holding = False
            lock.release()

    def ensure_state_dir(self) -> None:
        try:
            state.make(self.state, self._opened)
            (self.state / "tmp").mkdir(exist_ok=True)
        except OSError as exc:
            raise StoreError(f"Cannot create {self.state}: {exc.strerror}; {UNWRITABLE}.") from None

    # -- reading ----------------------------------------------------------------------------

    def head(self) -> str | None:
        """The commit HEAD names, None before the first commit."""
        # Read from git's files where they are plain (reffiles.py): a git process is 3 ms of a
        # 45 ms save at 10,000 memories.
        found = reffiles.head(*self.git_dirs())
        if found is not None:
            return found or None
        proc = self.git("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
        return proc.stdout.decode().strip() or None

    def branch(self) -> str:
        """The branch HEAD is on, '' when it is detached."""
        found = reffiles.branch(self.git_dirs()[0])
        if found is not None:
            return found
        # Not --short, which says heads/main when a tag is named main too.
        named = self.git("symbolic-ref", "-q", "HEAD", check=False).stdout.decode().strip()
        return named.removeprefix("refs/heads/")

    def tip(self, ref: str) -> str:
        """The commit the branch or remote-tracking ref ``ref`` names, '' when there is none."""
        found = reffiles.commit(self.git_dirs()[1], ref)
        if found is not None:
            return found
        return self.git("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False).stdout.decode().strip()

    def added_paths(self, since: str | None, until: str, under: str = "") -> list[str]:
        """KB-relative paths added (anywhere in history) between ``since`` and commit ``until``."""
        if since is not None:
            walked = self.added_on_linear_history(since, until, under)
            if walked is not None:
                return walked
        revs = [until] if since is None else [until, f"^{since}"]
        proc = self.git(
            "log",
            "--format=",
            "--name-only",
            "--no-renames",
            "--diff-filter=A",
            # Without it, a pathspec simplifies history away a side branch that added a file and
            # removed it again before a merge; its ids must still never come back.
            "--full-history",
            "-z",
            *revs,
            "--",
            self.repo_path(under) or ".",
        )
        out = []
        for raw in proc.stdout.split(b"\0"):
            name = raw.decode("utf-8", "surrogateescape").strip("\n")
            if name.startswith(self.prefix) and name:
                out.append(name[len(self.prefix) :])
        return out

    def added_on_linear_history(self, since: str, until: str, under: str) -> list[str] | None:
        """The paths added by the few single-parent commits from ``since`` to ``until``, read from
        their trees (which a save mostly reads anyway) instead of a ``git log`` that costs
        ~15 ms; None when the history between them is anything else."""
        objects = self.objects
        steps: list[tuple[str, str]] = []
        commit = until
        while commit != since:
            parents = objects.parents(commit)
            if len(parents) != 1 or len(steps) == _WALK_LIMIT:
                return None
            steps.append((parents[0], commit))
            commit = parents[0]
        folder = self.repo_path(under).rstrip("/")
        return [
            under + name
            for parent, child in steps
            for name in objects.added_files(objects.tree_of(parent), objects.tree_of(child), folder)
        ]

    # What the work tree and git's index hold that HEAD does not (worktree.py).
    uncommitted = worktree.uncommitted
    index_marks = worktree.index_marks
    staged_new = worktree.staged_new
    set_aside = aside.set_aside
    aside_names = aside.aside_names
    put_aside_back = aside.put_back

    def refuse_during_git_operation(self) -> None:
        """Refuse (ConflictError) to write while a merge, rebase, cherry-pick, revert or bisect
        the person started is not concluded (gitstate.py)."""
        # A merge of ours killed part-way first: git's MERGE_HEAD alone names no way back to it.
        problem = mergemark.interrupted(self) or gitstate.unfinished_operation(self.git_dirs()[0])
        if problem is not None:
            raise ConflictError(problem)

    def is_ancestor(self, older: str, newer: str) -> bool:
        proc = self.git("merge-base", "--is-ancestor", older, newer, check=False)
        return proc.returncode == 0

    # -- committing -------------------------------------------------------------------------

    def commit(
        self, changes: list[Change], message: str, author: str | None = None, parent: str | None | Literal[False] = False,
        marks: worktree.IndexMarks | None = None, seen: Mapping[str, StatKey] | None = None,
        tell: Callable[[str], None] | None = None, ids_top: int | None = None,
    ) -> str | None:
        """Commit ``changes`` as one commit and apply them to the work tree. Call under the lock.
        Returns the new commit, or None when the changes leave the tree as it was. ``marks``: git's
        index marks on files of ``changes`` as the caller read them under this lock (``stage``).
        ``seen``: the files as the caller saw them before checking they hold no uncommitted work
        (``files.stat_keys``); one changed since is kept as ``<file>.orig`` before it is written
        over, and ``tell`` is told so. ``ids_top``: the highest auto id on the branch's history
        with this commit, which its message then records (idtrailer.py)."""
        if not changes:
            return None
        message = shown_controls(message)  # git refuses a NUL; an escape would act on each `git log`'s terminal
        # One change per path, the last one winning as in the tree: the work tree's writes run
        # in parallel, and two of one path would race.
        changes = list({change.path: change for change in changes}.values())
        probed: dict[Path, str | None] = {}
        for change in changes:
            self.check_inside(change.path)
            # What the work tree cannot take would fail after the commit is published.
            problem = why_unwritable(self.root, change.path, change.data is None, probed)
            if problem is not None:
                verb = "delete" if change.data is None else "write"
                raise StoreError(f"Refusing to {verb} {change.path}: {problem}; nothing was saved.")
        objects = self.objects
        written = iter(objects.write_blobs([c.data for c in changes if c.data is not None]))
        blobs = {c.path: None if c.data is None else next(written) for c in changes}
        # ``parent`` is the HEAD the caller read under the lock (False: read it here); the
        # update-ref checks it anyway.
        old = self.head() if parent is False else parent
        if old is not None:
            objects.preload(old, {self.repo_path(c.path).rpartition("/")[0] for c in changes})
        old_tree = objects.tree_of(old) if old is not None else None
        problem = worktree.unpublishable(self, [c.path for c in changes if c.data is not None], old_tree)
        if problem is not None:
            raise StoreError(f"{problem}; nothing was saved.")
        tree = objects.update_tree(old_tree, {self.repo_path(path): blob for path, blob in blobs.items()})
        if tree == old_tree:
            return None
        new = self.commit_tree(tree, old, with_trailer(message, ids_top, self.prefix, old, tree), committree.author_env(author))
        record = {"old": old, "new": new, "changes": blobs, "request": self.request}
        with reserved_space(self.state / RESERVE, [c.data for c in changes if c.data is not None]):
            if self.request is not None:  # noted before it is published: its client can tell
                requests.note(self.state, self.request, self.objects, self.prefix, (old, old_tree, new), message, blobs)
            # Held from before the update-ref until the files are staged, as git commit holds it: a kill
            # between leaves the lock, and a person's git commit refuses rather than undo this commit.
            # The journal names the lock before it exists: a kill at any point leaves it to the next command.
            claimed = claim(self.index_file)
            journal.write(self.state, {**record, "index_lock": None if claimed is None else claimed.nonce})
            try:
                held = take_lock(claimed)
            except StoreError:
                journal.clear(self.state)  # no lock taken: nothing was saved
                raise
            with let_go_on(StoreError, held):
                self._publish(message, old, new)
        in_old = objects.blobs_at(old_tree, [self.repo_path(path) for path in blobs])
        known = (marks or worktree.IndexMarks(frozenset(), {})).with_unmarked(
            path for path in blobs if in_old[self.repo_path(path)] is None)
        try:
            with self.holding_index.into(held):
                self._finish(new, {c.path: c.data for c in changes}, blobs, known, seen or {}, tell,
                             {path: in_old[self.repo_path(path)] for path in blobs})
        finally:
            upkeep.after_commit(self.state, self.top, self.objects.dir)
        return new

    def _publish(self, message: str, old: str | None, new: str) -> None:
        """Move HEAD from ``old`` to ``new`` (compare-and-swap), or a StoreError: nothing was saved."""
        # An empty old value means "must not exist yet" (40 zeros would be SHA-1 only).
        try:  # stopped past the bound: published or not, HEAD says
            with journal.publishing(self.state) as publishing:
                proc = self.git("update-ref", "-m", message, "HEAD", new, old or "", check=False,
                                timeout=git_timeout(), keep=(publishing,))
        except subprocess.TimeoutExpired:
            proc = subprocess.CompletedProcess([], -1, b"", b"")
        head = self.head() if proc.returncode != 0 else new
        if head != new:
            journal.clear(self.state)
            if head == old:
                reason = explain(proc.stderr.decode("utf-8", "replace").strip())
                raise StoreError(hung(self.top, "update-ref", "reference-transaction", "Nothing was saved.")
                                 if proc.returncode == -1 else f"git update-ref failed: {reason}; nothing was saved.")
            raise StoreError("HEAD moved while slayer-kb was committing (a git command ran at the same time); nothing "
                             "was written. Retry the command.")

    def _finish(self, new: str, contents: Mapping[str, bytes | None], blobs: Mapping[str, str | None],
                marks: worktree.IndexMarks | None, seen: Mapping[str, StatKey] = {},  # noqa: B006 - never written
                tell: Callable[[str], None] | None = None, old: Mapping[str, str | None] = {}) -> None:  # noqa: B006
        """Write the published commit ``new``'s files (``contents``) into the work tree, stage
        its ``blobs`` (path -> blob, None: no file) in git's index, and close the journal; a
        WorkTreeError says which files could not be written and how to finish. A file changed
        since ``seen`` (``commit``) from its blob in the parent (``old``) is kept first."""
        # One reading of the marks for what is left out and what is staged: a file the caller's
        # marks do not cover is read now, once, for both.
        marks = worktree.marks_of(self, contents, marks)
        outside = worktree.left_out(self, marks, contents)
        # An editor's save landing after the caller's check (a commit's hooks and signing take
        # seconds) would be written over: kept first, the user's bytes never lost.
        def accepted(paths: list[str]) -> dict[str, bytes | None]:
            found = self.objects.read_many("blob", [b for p in paths if (b := old.get(p)) is not None])
            return {p: found.get(b) if (b := old.get(p)) is not None else None for p in paths}

        kept, unkept = keep_changed(self.root, seen, [p for p in contents if p not in outside], accepted)
        for path, copy in kept:
            if tell is not None:
                tell(f"{shown(self.root / path)} changed while this command wrote it (an editor's save?): your version "
                     f"is kept as {shown(self.root / copy)}, and the commit holds the command's; compare the two and "
                     "bring back what you meant.")
        failed = worktree.write_files(self, {path: data for path, data in contents.items()
                                             if path not in outside and path not in unkept})
        failed.update(unkept)  # not written over: the user's edit is there still
        held = self.holding_index.now()
        if not failed:
            try:
                with let_go_on(StoreError, held):
                    self.stage(list(blobs), marks)
                commit_lock(held)
            except StoreError as exc:
                # The journal stays: the next command stages them once git's index takes them.
                raise worktree.not_staged(self, new, list(blobs), str(exc)) from None
            journal.clear(self.state)
            return
        with contextlib.suppress(StoreError), let_go_on(StoreError, held):
            # git's index gets the commit's version all the same: left as it was, it would
            # stage the undoing of the change for the person's next `git commit`.
            worktree.stage_blobs(self, blobs, marks)
            commit_lock(held)
            journal.clear(self.state)
        raise worktree.not_written(self, new, blobs, failed)

    @property
    def index_file(self) -> Path:
        """git's index (``--git-path index``: GIT_INDEX_FILE, a linked worktree's own)."""
        self.git_dirs()  # asked of git once
        return self._index_file

    def may_leave_out(self) -> bool:
        """Whether git's index may mark a file skip-worktree, as a sparse checkout does for the
        files it leaves out of the work tree: not a version 2 index, which cannot hold the mark
        (git writes version 3 while an entry holds it). Its first 8 bytes, not a git process."""
        try:
            with open(self.index_file, "rb") as index:
                return index.read(8) != b"DIRC\0\0\0\2"
        except OSError:
            return True  # unreadable: the caller checks as if files were left out

    def _index_lock(self) -> Path:
        index = held.work if (held := self.holding_index.now()) is not None else self.index_file
        return index.with_name(f"{index.name}.lock")

    def index_locked(self, deadline: float | None = None) -> str | None:
        """Why git's index cannot take a change now, ending with the fix, or None: another git
        command holds its lock past ``deadline`` (``indexlock.held``), or one that crashed left it."""
        return indexlock.held(self._index_lock(), deadline)

    def git_writing_index(self, *args: str, check: bool = True, undo: tuple[str, ...] = (),
                          resume: tuple[str, ...] = (), **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        """``git ARGS`` for a command that writes git's index (``reset``, ``merge``, ``rebase``,
        ``checkout``, ``commit``, ``update-index``), run again while another git command holds the
        index (``indexlock.run``; ``undo``: ``merge --quit``; ``resume``: ``rebase --continue``, run
        instead once the rebase got further); an IndexLockedError, ``check`` or not, when the lock
        stays."""
        git_dir = self.git_dirs()[0]
        proc = indexlock.run(lambda: self.git(*args, check=False, **kwargs), self._index_lock(),
                             (lambda: self.git(*undo, check=False)) if undo else None,
                             (lambda: gitstate.rebase_step(git_dir), lambda: self.git(*resume, check=False, **kwargs))
                             if resume else None)
        return checked(list(args), proc) if check else proc

    def object_store(self) -> upkeep.Objects:
        """How many loose objects and packs the repository holds, and the packs' bytes."""
        return upkeep.objects(self.objects.dir)

    def start_upkeep(self, commands: list[list[str]]) -> None:
        """Run ``commands`` in the background, as the repository's upkeep runs (see ``upkeep``),
        after the repack when one is due: the job holds the one slot a repack would need, and
        at the lowest priority on a busy machine a Python job can wait long for the CPU."""
        if upkeep.running(self.state):
            # A save asks again and again until the running job is done: no config look-ups.
            return
        due = upkeep.repack_due(self.top, self.objects.dir)
        upkeep.start(self.top, self.state, [upkeep.REPACK, upkeep.GC, *commands] if due else commands)

    def repack(self) -> None:
        """Pack the loose objects and roll small packs together now (see ``upkeep``)."""
        upkeep.run(self.top, self.state)

    def repack_if_due(self) -> None:
        """``repack``, now and without waiting for the upkeep slot (the caller holds it), when
        loose objects have piled up and the user's settings allow it."""
        if upkeep.repack_due(self.top, self.objects.dir):
            upkeep.repack(self.top)

    def check_inside(self, kb_path: str) -> None:
        """Refuse a path whose folders leave the KB or pass through a symlink: a clone can carry
        a symlinked memories/ folder, and writing through it would write outside the KB."""
        current = self.root
        for part in Path(kb_path).parts[:-1]:
            if part in ("", ".", ".."):
                raise StoreError(f"Refusing to write {kb_path}: it leaves the knowledge base.")
            current = current / part
            if current.is_symlink():
                raise StoreError(
                    f"{current.relative_to(self.root)}/ is a symlink; slayer-kb writes only inside "
                    "the knowledge base and refuses to write through it. Replace it with a folder."
                )

    def commit_tree(self, tree: str, parent: str | None, message: str, author: Mapping[str, str]) -> str:
        """A commit of ``tree`` on ``parent`` (none: a root commit) with ``message``, by who commits,
        ``author`` (``GIT_AUTHOR_*``) naming another author, signed when ``commit.gpgSign`` says so
        (committree.py); a StoreError when git cannot make it."""
        return committree.write(self.git, self.identity.committing(), tree, parent, message, author)

    def describe_commits(self, shas: list[str]) -> list[LogEntry]:
        """Each commit's sha, author, ISO date and message (idtrailer's trailer left out), in the order
        given. Read by this store's git (not GitPython's, whose processes inherit a GIT_DIR or
        GIT_OBJECT_DIRECTORY from the environment: gitenv.py); fields NUL-separated."""
        if not shas:
            return []
        out = self.git("log", "--no-walk=unsorted", "--stdin", "-z",
                       "--format=%H%x00%an <%ae>%x00%aI%x00%B", input="".join(f"{sha}\n" for sha in shas).encode())
        fields = out.stdout.decode("utf-8", "replace").split("\0")
        return [
            {"commit": sha, "author": author, "date": date, "message": without_trailer(message).strip()}
            for sha, author, date, message in zip(*[iter(fields)] * 4, strict=False)
        ]

    # -- journal and recovery ---------------------------------------------------------------

    def committing(self) -> bool:
        """Is a commit writing its files (or did a crash interrupt one)? Its journal exists
        from before the update-ref until every file is written and staged."""
        return journal.exists(self.state)

    def apply_committed(self, contents: Mapping[str, bytes | None]) -> None:
        """Put HEAD's version of these files (None: no file) back in the work tree and stage them."""
        failed = worktree.write_files(self, contents)
        if failed:
            path, exc = next(iter(failed.items()))
            raise StoreError(f"Cannot write {path}: {exc.strerror or exc}. Make it writable, then retry.")
        self.stage(list(contents))

    def stage(self, kb_paths: list[str], marks: worktree.IndexMarks | None = None) -> None:
        """Put HEAD's version of these files, which the work tree holds, in git's index, each
        keeping the marks git's index held on it: as ``marks`` has them, read under the lock of
        this command, else read now (never kept longer: the person may set or clear one between
        two commands of a process that stays open)."""
        marked = worktree.marked_in_index(self, kb_paths, marks)
        # Only our own paths enter the user's index, so their other staged work stays as it was.
        payload = "".join(self.repo_path(p) + "\0" for p in kb_paths).encode()
        args = ["update-index", "--add", "--remove", "-z", "--stdin"]
        try:
            self.git_writing_index(*args, input=payload, timeout=git_timeout())
        except subprocess.TimeoutExpired:
            raise StoreError(hung(self.top, "update-index", "post-index-change", "The commit is made; git's index "
                                  f"does not show it yet ({', '.join(kb_paths)}).")) from None
        if marked:
            worktree.restage_marked(self, marked)


def init_repository(path: Path) -> None:
    if (why := broken_gitfile(path, up=False)) is not None:  # git init fails on it: "not a git repository"
        raise StoreError(why)
    run_git(["init", "-q", "--", str(path)], path.parent if path.parent.exists() else Path.cwd())
