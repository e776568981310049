"""Writing the work tree's files as a commit needs them: in place, never through a symlink or
into a FIFO, with a copy kept of what the user had, and telling a file a crash left half-written
from one that holds either version whole."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from ..core.errors import StoreError
from ..core.fileio import NotRegularFile, read_regular

_REPLACEABLE = {errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EACCES, errno.EPERM, getattr(errno, "EFTYPE", errno.ELOOP)}
# Writing files: never through a symlink, never blocking on a FIFO, never inherited by git's
# subprocesses, never translating newlines; the flags a platform lacks (Windows lacks most) are 0.
WRITE_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def is_file_or_link(path: Path) -> bool:
    try:
        mode = path.lstat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def keep_copy(source: Path, copy: Path) -> None:
    """Copy the user's ``source`` to the new name ``copy``: a file's bytes and mode (its executable
    bit), a symlink as a link; anything else (a folder in a file's place) is moved there whole."""
    if source.is_symlink():
        os.symlink(os.readlink(source), copy)
        return
    try:
        data = read_regular(source)
    except NotRegularFile:
        os.rename(source, copy)
        return
    put_file(copy, data)
    os.chmod(copy, stat.S_IMODE(os.lstat(source).st_mode))


def free_name(root: Path, name: str) -> str:
    """``name``, or ``name.2``, ``name.3``, ... : the first that nothing in ``root`` has."""
    candidate, n = name, 1
    while os.path.lexists(root / candidate):
        n += 1
        candidate = f"{name}.{n}"
    return candidate



StatKey = tuple[int, int, int, int] | None


def stat_keys(root: Path, paths: Iterable[str]) -> dict[str, StatKey]:
    """Each path's identity as the system keeps it (inode, size, modified and changed times; None:
    no file), taken before a check that its file holds no uncommitted work: what a write after
    the check compares, so that an edit saved meanwhile is never written over (``keep_changed``)."""
    keys: dict[str, StatKey] = {}
    for path in paths:
        try:
            st = os.lstat(root / path)
        except OSError:
            keys[path] = None
        else:
            keys[path] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return keys


def keep_changed(root: Path, seen: Mapping[str, StatKey], paths: Iterable[str],
                 held: Callable[[list[str]], Mapping[str, bytes | None]]) -> tuple[list[tuple[str, str]], dict[str, OSError]]:
    """Copy each of ``paths`` whose file no longer holds what the command checked (an editor saved
    it while the command ran, after its check: ``seen`` says the file was touched, and its bytes
    differ from ``held``'s, the version the check accepted) to ``<path>.orig`` (or ``.orig.2``, ...),
    before the command writes over it or deletes it. Returns (path, copy) for each kept, KB-relative,
    and the paths that could not be read or kept, with why: not to be written over."""
    touched = [path for path in paths if path in seen and is_file_or_link(root / path)
               and stat_keys(root, [path])[path] != seen[path]]
    kept: list[tuple[str, str]] = []
    failed: dict[str, OSError] = {}
    accepted = held(touched) if touched else {}
    for path in touched:
        try:
            # A file touched, its mode changed, or saved unchanged holds what was checked: nothing to keep.
            if not os.path.islink(root / path) and read_regular(root / path) == accepted.get(path):
                continue
            copy = free_name(root, f"{path}.orig")
            keep_copy(root / path, root / copy)
        except (OSError, NotRegularFile) as exc:
            failed[path] = exc if isinstance(exc, OSError) else OSError(errno.EINVAL, str(exc))
        else:
            kept.append((path, copy))
    return kept, failed


def torn(target: Path, before: bytes, after: bytes) -> bool:
    """Does ``target`` hold what a write of ``after`` over ``before`` interrupted part-way leaves:
    the start of ``after``, then the rest of ``before`` (and neither of the two)?"""
    try:
        current = read_regular(target)
    except OSError:
        return False
    if current in (before, after):
        return False
    k = len(os.path.commonprefix([current, after]))
    return current[k:] == before[k:]


def put_file(target: Path, data: bytes | None) -> None:
    """Make ``target`` hold ``data`` (None: not exist), writing over its bytes in place.

    In place, not through a temporary file and a rename: a cascade's 10,000 renames into a
    folder of 100,000 files cost 1.4 s and its 10,000 new files 0.6-4 s, against 0.35 s for
    writing over them (measured at 100,000 memories). slayer-kb's readers never use a
    half-written file: the index is updated under the lock, ``KnowledgeBase.read`` reads again
    under the lock while a commit's journal exists, and the journal makes the next command finish
    the files of a commit that a crash interrupted. A symlink, a special file, or a file
    hard-linked elsewhere is replaced by a file of its own (as a rename would), never written
    through.
    """
    if data is None:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        return
    with contextlib.suppress(FileNotFoundError):
        mode = target.lstat().st_mode
        # Only a regular file is ever opened: a symlink, FIFO, socket or device is replaced
        # without being opened (a device's open can act). A folder is left to the open's error.
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            target.unlink()
    fd: int | None = None
    try:
        fd = os.open(target, WRITE_FLAGS, 0o666)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            os.close(fd)
            fd = None
    except OSError as exc:
        # What cannot be written over is replaced, as a rename would replace it: a symlink
        # (ELOOP; EMLINK or EFTYPE on BSDs), a FIFO nobody reads (ENXIO), a read-only file
        # (EACCES, EPERM). Anything else raises its own error (a folder, too many open files).
        if exc.errno not in _REPLACEABLE:
            raise
        try:
            st = target.lstat()
        except FileNotFoundError:
            raise exc from None
        if stat.S_ISDIR(st.st_mode):
            raise
    if fd is None:
        target.unlink()
        fd = os.open(target, WRITE_FLAGS | os.O_EXCL, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


# Opening a file to write it, without creating or truncating it: it stays as it was.
_OPEN_EXISTING = WRITE_FLAGS & ~os.O_CREAT
# An unnamed file in a folder (Linux): confirms that a folder takes no new file, with the reason,
# and leaves nothing behind even when the process dies. Where a file system cannot make one, a
# named file is made and removed.
_TMPFILE = getattr(os, "O_TMPFILE", 0)


def why_unwritable(root: Path, path: str, deleting: bool, probed: dict[Path, str | None]) -> str | None:
    """Why writing (``deleting``: removing) the file ``root/path`` would fail, as a clause that
    ends with the fix, or None: what a commit checks before it is published, so that a work tree
    that cannot hold it refuses it instead of lagging behind it. ``probed`` keeps each folder's
    answer for the next paths.

    A file that opens for writing (not created, not truncated: nothing changes) is written in
    place; anything else is replaced, which needs its folder to take a new file. A file that
    refuses to open for another reason than its mode bits (immutable or append-only, on a
    read-only mount) cannot be replaced either. The folder is asked with ``access``, which the
    kernel answers from the same checks a write makes (mode bits and ACLs, a read-only mount, an
    immutable folder, root's powers); only a refusal is confirmed by creating a file there, for
    its reason. Costs one ``open`` for an existing file and one ``access`` for a new one: a few
    microseconds (an unnamed file in the folder, each time, would cost 0.1-0.4 ms)."""
    target = root / path
    try:
        st: os.stat_result | None = target.lstat()
    except OSError:  # missing, or a file where a folder of the path should be (ENOTDIR)
        if deleting:
            return None  # nothing to delete
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        return "it is a folder, not a file. Move it out of the way and retry"
    if st is not None and stat.S_ISREG(st.st_mode):
        try:
            os.close(os.open(target, _OPEN_EXISTING))
        except OSError as exc:
            if exc.errno != errno.EACCES:  # EACCES: mode bits only, the file can be replaced
                return f"the file cannot be changed ({exc.strerror}). Make it writable and retry"
        else:
            if not deleting and st.st_nlink == 1:
                return None
    folder = target.parent
    while not os.path.lexists(folder):  # the commit makes missing folders in the first one that exists
        folder = folder.parent
    if folder not in probed:
        problem = None
        if not folder.is_dir():
            problem = f"{folder.relative_to(root).as_posix()} is not a folder. Move it out of the way and retry"
        elif not os.access(folder, os.W_OK | os.X_OK) and (error := _probe(folder)) is not None:
            shown = "the knowledge base's folder" if folder == root else f"the folder {folder.relative_to(root).as_posix()}/"
            problem = (f"{shown} does not take new files ({error}). Make it writable for this user "
                       "(or mount it read-write) and retry")
        probed[folder] = problem
    return probed[folder]


def _probe(folder: Path) -> str | None:
    """Why ``folder`` takes no new file (the system's words), or None."""
    try:
        if _TMPFILE:
            try:
                os.close(os.open(folder, _TMPFILE | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600))
                return None
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                    raise
        probe = folder / f".slayer-kb-probe-{os.getpid()}-{secrets.token_hex(4)}"
        os.close(os.open(probe, WRITE_FLAGS | os.O_EXCL, 0o600))
        probe.unlink()
    except OSError as exc:
        return str(exc.strerror)
    return None


@contextlib.contextmanager
def reserved_space(reserve: Path, contents: list[bytes]) -> Iterator[None]:
    """Hold the disk space the work tree's files will need while a commit is published, in the
    file ``reserve``.

    The files are written in place only after the commit; a disk that filled up then would leave
    them half-written until the next command finishes them. Allocating their size first turns a
    full disk into "nothing was saved" instead.
    """
    block = 4096
    size = sum(-(-len(data) // block) * block for data in contents)
    try:
        fd = os.open(reserve, WRITE_FLAGS | os.O_TRUNC, 0o600)
        try:
            allocate(fd, size)
        finally:
            os.close(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            reserve.unlink()
        if exc.errno == errno.ENOSPC:
            raise StoreError("The disk is full; nothing was saved. Free space and retry.") from None
        raise StoreError(f"Cannot write in {reserve.parent}: {exc.strerror}; nothing was saved.") from None
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            reserve.unlink()


def allocate(fd: int, size: int) -> None:
    """Give an open, empty file ``size`` bytes of real disk blocks, not a sparse hole."""
    if size <= 0:
        return
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except AttributeError:  # macOS and Windows have no posix_fallocate
        pass
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP):  # ZFS, for one, cannot
            raise
    zeros = bytes(min(size, 1 << 20))
    while size > 0:
        size -= os.write(fd, zeros[:size])


def holds(target: Path, data: bytes | None) -> bool:
    """Does ``target`` hold exactly ``data`` as a regular file (None: does it not exist)?"""
    try:
        st = target.lstat()
    except FileNotFoundError:
        return data is None
    if data is None or not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
        return False
    try:
        return read_regular(target) == data
    except OSError:
        return False
