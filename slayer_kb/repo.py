"""The git store: a cross-process lock, atomic multi-file commits, and history look-ups.

A change's blobs and trees are written straight into git's object database (``objects.py``), its
commit by ``git commit-tree``, and it is published with a compare-and-swap ``update-ref``; only
then are the files moved into the work tree by atomic renames and staged in the user's index. A
journal written before the ``update-ref`` lets the next command finish (or discard) a change that
a crash interrupted, so the KB is always either before or after the whole commit.

Plain ``git`` subprocesses are used instead of GitPython's object model on this path: importing
GitPython alone costs ~100 ms per command and ``Repo.index`` rewrites the whole index in Python
(3x slower than ``git add`` + ``git commit`` at 10,000 files, measured). Every git call passes an
argument list (no shell) and ``--`` before paths.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import filelock

from .errors import StoreError
from .fileio import MIN_ITEMS, in_background, in_threads
from .objects import ObjectStore

STATE_DIR = ".slayer-kb"
LOCK_TIMEOUT = 60.0
_WALK_LIMIT = 4
_TEMP_FOLDER_FILES = 256
_FALLBACK_IDENTITY = ("slayer-kb", "slayer-kb@localhost")
_AUTHOR = re.compile(r"\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>]*)>\s*\Z")


def run_git(
    args: list[str],
    cwd: Path,
    *,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update(env)
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, input=input, env=full_env, capture_output=True, check=False
        )
    except FileNotFoundError:
        raise StoreError("git is not installed or not on PATH; install git first.") from None
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise StoreError(f"git {args[0]} failed: {_explain(message)}")
    return proc


def _explain(message: str) -> str:
    lowered = message.lower()
    if "no space left" in lowered:
        return f"{message} (the disk is full: free some space and retry)"
    if "permission denied" in lowered or "read-only" in lowered:
        return f"{message} (the knowledge base is not writable by this user)"
    return message


def find_toplevel(path: Path) -> Path | None:
    proc = run_git(["rev-parse", "--show-toplevel"], path, check=False)
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.decode().strip())


def parse_author(author: str) -> tuple[str, str]:
    match = _AUTHOR.match(author)
    if not match or not match.group("name"):
        raise StoreError(f"Author {author!r} is not of the form 'Name <email>'.")
    return match.group("name"), match.group("email")


@dataclass
class Change:
    """A file to write (``data``) or delete (``data is None``), relative to the KB root."""

    path: str
    data: bytes | None


class GitStore:
    """The git repository holding a KB (the KB may be a folder inside it)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        top = find_toplevel(self.root)
        if top is None:
            raise StoreError(f"{self.root} is not inside a git repository; run 'slayer-kb init {self.root}'.")
        self.top = top.resolve()
        rel = self.root.relative_to(self.top).as_posix()
        self.prefix = "" if rel == "." else rel + "/"
        self.state = self.root / STATE_DIR
        self._identity_env: dict[str, str] | None = None
        self._objects: ObjectStore | None = None

    # -- paths ------------------------------------------------------------------------------

    def repo_path(self, kb_path: str) -> str:
        return self.prefix + kb_path

    def git(self, *args: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        return run_git(list(args), self.top, **kwargs)  # type: ignore[arg-type]

    @property
    def objects(self) -> ObjectStore:
        if self._objects is None:
            out = self.git("rev-parse", "--git-path", "objects", "--show-object-format").stdout
            objects_dir, hash_name = out.decode("utf-8", "surrogateescape").splitlines()
            self._objects = ObjectStore(self.top / objects_dir, hash_name, self._cat_file, self._index_pack)
        return self._objects

    def _cat_file(self, kind: str, oid: str) -> bytes:
        return self.git("cat-file", kind, oid).stdout

    def _index_pack(self, pack: bytes) -> None:
        self.git("index-pack", "--stdin", input=pack)

    # -- lock -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        """Serialise writers across processes; finish or discard a change a crash interrupted."""
        self.ensure_state_dir()
        lock = filelock.FileLock(str(self.state / "lock"), timeout=timeout)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise StoreError(
                f"Another slayer-kb process has held the lock on {self.root} for {timeout:.0f} s; "
                "wait for it to finish and retry."
            ) from None
        except OSError as exc:
            raise StoreError(f"Cannot take the lock in {self.state}: {exc.strerror}.") from None
        try:
            self.recover()
            yield
        finally:
            lock.release()

    def ensure_state_dir(self) -> None:
        try:
            (self.state / "tmp").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"Cannot create {self.state}: {exc.strerror}. Is the knowledge base writable?"
            ) from None

    # -- reading ----------------------------------------------------------------------------

    def head(self) -> str | None:
        proc = self.git("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
        return proc.stdout.decode().strip() or None

    def added_paths(self, since: str | None, until: str, under: str = "") -> list[str]:
        """KB-relative paths added (anywhere in history) between ``since`` and commit ``until``."""
        if since is not None:
            walked = self._added_on_linear_history(since, until, under)
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

    def _added_on_linear_history(self, since: str, until: str, under: str) -> list[str] | None:
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

    def is_ancestor(self, older: str, newer: str) -> bool:
        proc = self.git("merge-base", "--is-ancestor", older, newer, check=False)
        return proc.returncode == 0

    # -- committing -------------------------------------------------------------------------

    def commit(
        self, changes: list[Change], message: str, author: str | None = None, parent: str | None | bool = False
    ) -> str | None:
        """Commit ``changes`` as one commit and apply them to the work tree. Call under the lock.

        Returns the new commit, or None when the changes leave the tree as it was.
        """
        if not changes:
            return None
        # One change per path, the last one winning as in the tree: the work tree's renames run
        # in parallel, and two of one path would race.
        changes = list({change.path: change for change in changes}.values())
        for change in changes:
            self._check_inside(change.path)
        tmp_files, tree, old_tree, old = self._prepare_commit(changes, parent)
        try:
            if tree == old_tree:
                self._discard(tmp_files)
                return None
            new = self._commit_tree(tree, old, message, author)
            journal = {
                "old": old,
                "new": new,
                "changes": [
                    [c.path, None if tmp is None else str(tmp)] for c, tmp in zip(changes, tmp_files, strict=True)
                ],
            }
            self._write_journal(journal)
            # An empty old value means "must not exist yet" (40 zeros would be SHA-1 only).
            proc = self.git("update-ref", "-m", message, "HEAD", new, old or "", check=False)
            if proc.returncode != 0:
                self._clear_journal()
                self._discard(tmp_files)
                if self.head() == old:
                    reason = _explain(proc.stderr.decode("utf-8", "replace").strip())
                    raise StoreError(f"git update-ref failed: {reason}; nothing was saved.")
                raise StoreError(
                    "HEAD moved while slayer-kb was committing (a git command ran at the same "
                    "time); nothing was written. Retry the command."
                )
        except BaseException:
            if not (self.state / "journal.json").exists():
                self._discard(tmp_files)
            raise
        try:
            self._apply(journal)
        except (StoreError, OSError):
            # The commit is made and the journal still lists it: the next command finishes moving
            # the files and staging them (a full disk can refuse git's index write for now).
            pass
        return new

    def _prepare_commit(
        self, changes: list[Change], parent: str | None | bool
    ) -> tuple[list[Path | None], str, str | None, str | None]:
        """Write the temporary files and the commit's blobs and tree: (temporary files, new tree,
        old tree, parent). For many files the two run side by side: the file writes mostly wait
        on the disk, the objects on the CPU."""
        temp_files = in_background(self._write_temp_files, changes, enabled=len(changes) >= MIN_ITEMS)
        try:
            objects = self.objects
            written = iter(objects.write_blobs([c.data for c in changes if c.data is not None]))
            blobs = {self.repo_path(c.path): None if c.data is None else next(written) for c in changes}
            # ``parent`` is the HEAD the caller read under the lock (False: read it here); the
            # update-ref checks it anyway.
            old = self.head() if parent is False else parent
            old_tree = objects.tree_of(old) if old is not None else None
            tree = objects.update_tree(old_tree, blobs)
        except BaseException:
            with contextlib.suppress(StoreError):
                self._discard(temp_files())
            raise
        return temp_files(), tree, old_tree, old

    def _check_inside(self, kb_path: str) -> None:
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

    def _write_temp_files(self, changes: list[Change]) -> list[Path | None]:
        # A folder of its own per commit, removed afterwards, in subfolders of at most 256 files
        # (a folder that once held 10,000 files stays slow to create files in), written on a
        # few threads (fileio.py).
        tmp_dir = self.state / "tmp" / f"{uuid.uuid4().hex}.tmp"
        out: list[Path | None] = []
        files: list[tuple[Path, bytes]] = []
        try:
            made: set[Path] = set()
            for n, change in enumerate(changes):
                if change.data is None:
                    out.append(None)
                    continue
                folder = tmp_dir / str(n // _TEMP_FOLDER_FILES)
                if folder not in made:
                    folder.mkdir(parents=True)
                    made.add(folder)
                out.append(folder / f"{n}.tmp")
                files.append((folder / f"{n}.tmp", change.data))
            in_threads(_write_file, files)
        except OSError as exc:
            self._discard(out)
            if exc.errno == errno.ENOSPC:
                raise StoreError("The disk is full; nothing was saved. Free space and retry.") from None
            raise StoreError(f"Cannot write in {tmp_dir}: {exc.strerror}; nothing was saved.") from None
        return out

    def _commit_tree(self, tree: str, parent: str | None, message: str, author: str | None) -> str:
        env = dict(self._identity())
        if author:
            name, email = parse_author(author)
            env.update(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email)
        args = ["commit-tree", tree, "-F", "-"]
        if parent:
            args[2:2] = ["-p", parent]
        return self.git(*args, input=message.encode(), env=env).stdout.decode().strip()

    def _identity(self) -> dict[str, str]:
        """git's own identity when configured; a neutral one so a fresh machine can still commit."""
        if self._identity_env is None:
            env: dict[str, str] = {}
            for key, var, fallback in (
                ("user.name", "NAME", _FALLBACK_IDENTITY[0]),
                ("user.email", "EMAIL", _FALLBACK_IDENTITY[1]),
            ):
                configured = self.git("config", key, check=False).stdout.strip()
                for role in ("AUTHOR", "COMMITTER"):
                    if not configured and f"GIT_{role}_{var}" not in os.environ:
                        env[f"GIT_{role}_{var}"] = fallback
            self._identity_env = env
        return self._identity_env

    # -- journal and recovery ---------------------------------------------------------------

    def _write_journal(self, journal: dict[str, object]) -> None:
        path = self.state / "journal.json"
        tmp = self.state / "journal.json.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                json.dump(journal, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StoreError(f"Cannot write {path}: {_explain(exc.strerror or str(exc))}; nothing was saved.") from None

    def _clear_journal(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.state / "journal.json").unlink()

    def _apply(self, journal: dict[str, object]) -> None:
        """Move the committed files into the work tree and stage them in the user's index."""
        changes = journal["changes"]
        assert isinstance(changes, list)
        new = str(journal["new"])
        for folder in {os.path.dirname(kb_path) for kb_path, tmp in changes if tmp is not None}:
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        moved = in_threads(lambda change: self._move_into_place(*change), changes)
        for (kb_path, _tmp), done in zip(changes, moved, strict=True):
            if done:
                continue
            target = self.root / kb_path
            if not target.exists() or not self._matches_commit(new, kb_path, target):
                # The rename happened before a crash, then someone changed the file: restore the
                # committed content (the commit is the truth for a change that was interrupted).
                blob = self.git("cat-file", "blob", f"{new}:{self.repo_path(kb_path)}").stdout
                target.write_bytes(blob)
        self._stage([kb_path for kb_path, _ in changes])
        self._clear_journal()
        self._discard([Path(tmp) for _, tmp in changes if tmp is not None])

    def _move_into_place(self, kb_path: str, tmp: str | None) -> bool:
        """Rename a change's temporary file over its target (or delete the target); False when
        the temporary file is gone: a crash came after the rename, or before it was written."""
        target = self.root / kb_path
        if tmp is None:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            return True
        try:
            os.replace(tmp, target)
        except FileNotFoundError:
            return False
        return True

    def _matches_commit(self, commit: str, kb_path: str, target: Path) -> bool:
        blob = self.git("rev-parse", f"{commit}:{self.repo_path(kb_path)}", check=False)
        local = self.git("hash-object", "--no-filters", "--", str(target), check=False)
        return blob.stdout.strip() == local.stdout.strip()

    def _stage(self, kb_paths: list[str]) -> None:
        # Only our own paths enter the user's index, so their other staged work stays as it was.
        payload = "".join(self.repo_path(p) + "\0" for p in kb_paths).encode()
        self.git("update-index", "--add", "--remove", "-z", "--stdin", input=payload)

    def recover(self) -> None:
        journal_path = self.state / "journal.json"
        if journal_path.exists():
            try:
                journal = json.loads(journal_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                journal = None
            if journal and self.head() == journal.get("new"):
                self._apply(journal)
            else:
                self._clear_journal()
        # Temporary files of a change that never reached update-ref (or already applied).
        for leftover in (self.state / "tmp").glob("*.tmp"):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    leftover.unlink()

    def _discard(self, tmp_files: list[Path | None]) -> None:
        """Remove the per-commit temporary folders these files are in (only ours, in tmp/)."""
        tmp_root = self.state / "tmp"
        for batch in {Path(tmp).parent.parent for tmp in tmp_files if tmp is not None}:
            if batch.parent == tmp_root:
                shutil.rmtree(batch, ignore_errors=True)


def _write_file(item: tuple[Path, bytes]) -> None:
    # No fsync per file: a killed process leaves what it wrote in the page cache, where recovery
    # finds it (tested with SIGKILL). A power cut is not covered; the README says so.
    path, data = item
    with open(path, "wb") as handle:
        handle.write(data)


def init_repository(path: Path) -> None:
    run_git(["init", "-q", "--", str(path)], path.parent if path.parent.exists() else Path.cwd())
