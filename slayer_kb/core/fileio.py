"""Many small file operations at once, overlapped on a few threads; reading a file that must be
a regular file; and writing one whole or not at all (``write_whole``).

Why threads: a file operation can wait on the disk (a metadata block not in the cache); on a few
threads the waits of a cascade's 10,000 file writes overlap. The calls release the GIL while
they wait.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

THREADS = 4
# Below this many items a thread pool costs more than it saves.
MIN_ITEMS = 64


def in_threads(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(item) for item in items]``, on THREADS threads when there are many items.

    The first exception a call raises is raised here; calls not started by then are skipped.
    """
    if len(items) < MIN_ITEMS:
        return [fn(item) for item in items]
    # Imported here: every command imports this module, few hand it many items (concurrent.futures
    # is a few milliseconds of a process's start).
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(fn, items, chunksize=max(1, len(items) // (THREADS * 8))))


# Reading: never through a symlink (unless asked), never waiting on a FIFO, never inherited by
# git's subprocesses; the flags a platform lacks are 0.
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_KINDS = {stat.S_IFLNK: "a symlink", stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO",
          stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, when it is no regular file ("a FIFO", ...)."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def not_a_file(kind: str, folder: str) -> str:
    """What a reader that skips it says of ``kind`` (``file_kind``) where a file of ``folder``
    belongs, with the fix."""
    if kind == "a symlink":
        return f"is a symlink, which slayer-kb never follows; put the file itself in {folder}/"
    return f"is {kind}, not a regular file; move it out of {folder}/"


class NotRegularFile(OSError):
    """What is at a path is not a regular file; ``kind`` says what it is ("a FIFO", ...)."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(errno.EINVAL, f"is {kind}, not a regular file", os.fspath(path))
        self.kind = kind


class TooLarge(OSError):
    """The regular file at a path holds more bytes than the reader takes; ``size`` says how many."""

    def __init__(self, path: str | os.PathLike[str], size: int) -> None:
        super().__init__(errno.EFBIG, f"is {size} bytes", os.fspath(path))
        self.size = size


def read_regular(path: str | os.PathLike[str], follow_symlinks: bool = False, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path``; with ``limit``, :class:`TooLarge` instead
    when the open file holds more bytes than that, before any is read.

    Anything else raises :class:`NotRegularFile` without being opened: a FIFO would block the
    reader forever (a ``save`` while holding the KB's lock), a device may never end, and a
    symlink (unless ``follow_symlinks``) may lead out of the KB. The type is checked with
    ``lstat`` before the open, and again on the open file, which is opened with ``O_NOFOLLOW``
    and ``O_NONBLOCK`` so that a FIFO or a link swapped in between is refused, not waited on.
    A missing file raises FileNotFoundError; other failures their own OSError.
    """
    st = os.stat(path) if follow_symlinks else os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(path, file_kind(st.st_mode))
    try:
        fd = os.open(path, _READ_FLAGS | (0 if follow_symlinks else _NOFOLLOW))
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:  # made a link since the lstat
            raise NotRegularFile(path, "a symlink") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(path, file_kind(st.st_mode))
        if limit is not None and st.st_size > limit:
            raise TooLarge(path, st.st_size)
        chunks = []
        size = st.st_size + 1  # the whole file in one read, unless it is growing
        while chunk := os.read(fd, size):
            chunks.append(chunk)
            size = 1 << 16
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_whole(path: str | os.PathLike[str], data: str | bytes, tmp: str | os.PathLike[str] | None = None,
                newline: str | None = None) -> None:
    """Put ``data`` at ``path`` whole or not at all: written to a temporary file beside it, then
    renamed over ``path``, so that a reader or a kill never meets half a file. The temporary file
    is named after ``tmp`` (default ``PATH.tmp``) with a random part before its last suffix
    (``.1.yaml.fmt-tmp`` is written as ``.1.yaml.<random>.fmt-tmp``), and made new: two processes
    writing at once never share one, and a link a clone carries at the caller's name is never
    written through. On failure it is removed and the OSError raised. Text is written as UTF-8,
    its newlines as ``open`` takes ``newline``. No fsync: a power cut may lose the write
    (journal.py, which must keep it, syncs its own)."""
    target = os.fspath(path)
    base = os.fspath(tmp) if tmp is not None else f"{target}.tmp"
    stem, dot, suffix = base.rpartition(".")
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    temporary = f"{stem}.{token}.{suffix}" if dot and os.sep not in suffix and stem.rpartition(os.sep)[2] else f"{base}.{token}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        if isinstance(data, bytes):
            with open(fd, "wb") as handle:
                handle.write(data)
        else:
            with open(fd, "w", encoding="utf-8", newline=newline) as handle:
                handle.write(data)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def outside(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> str | None:
    """Where ``path`` really leads when a symlink takes it out of the KB folder ``root``, else
    None. Links are followed only inside the KB: a clone can carry one to ~/.ssh or /etc, and
    what a KB's files hold shows in search results."""
    real, inside = os.path.realpath(path), os.path.realpath(root)
    return None if real == inside or real.startswith(inside.rstrip(os.sep) + os.sep) else real


def unusable_folder(root: str | os.PathLike[str], folder: str) -> str | None:
    """Why the KB ``root``'s ``folder`` (memories, sessions) cannot be used, with the fix: a
    symlink out of the KB, or no folder at all (a file in its place); else None. One lstat."""
    path = os.path.join(root, folder)
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None  # missing: made when needed
    if stat.S_ISLNK(mode) and (target := outside(root, path)):
        return (f"{folder}/ is a symlink to {target}, outside the knowledge base, and slayer-kb never "
                f"reads or writes outside it. Replace the link with a real folder holding the files "
                f"('git rm {folder}', then 'mkdir {folder}' and copy them in), then retry.")
    if stat.S_ISDIR(mode) or (stat.S_ISLNK(mode) and os.path.isdir(path)):
        return None
    return (f"{folder} is a file, where the knowledge base keeps its {folder}/ folder. Move it out of the way, "
            f"and commit that if git tracks it ('git mv {folder} {folder}.txt', then 'git commit'), then retry.")


def refuses_folders(folder: str | os.PathLike[str]) -> str | None:
    """Why ``folder`` takes no new folder (the system's words), or None: asked by making one and
    removing it, since ``access`` says yes for root where the kernel still says no (/proc)."""
    probe = os.path.join(folder, f".slayer-kb-probe-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        os.mkdir(probe, 0o700)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.rmdir(probe)
    return None


def identity(*paths: str | os.PathLike[str]) -> tuple[tuple[int, int] | None, ...]:
    """Which file each of ``paths`` is now, (device, inode), None where there is none: a folder
    deleted and made again at the same path (``rm -rf kb && git clone URL kb``) is another."""
    found: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            found.append(None)
        else:
            found.append((st.st_dev, st.st_ino))
    return tuple(found)
