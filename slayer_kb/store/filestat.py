"""The signatures (mtime_ns, size, inode) of many files of one folder, packed for comparison.

A freshness check at 100,000 memories is one stat per file. The C module ``_fstat`` does them
on every core without the GIL (75 ms here against 270 ms for ``os.scandir`` and ``stat`` in
Python); where it was not built (no compiler, Windows), the loop below gives the same bytes.
"""

from __future__ import annotations

import os
import stat
import struct
from array import array
from collections.abc import Iterator

try:
    from ._fstat import signatures as _native
except ImportError:  # pragma: no cover - depends on how the package was built
    _native = None

NATIVE = _native is not None
# size field of a packed signature that is not a regular file's (see _fstat.c)
NOT_REGULAR = -1
MISSING = -2
RECORD = struct.Struct("=qqQ")
"""One packed signature; the inode unsigned, as ``os.stat`` gives it."""
_THREADS = min(os.cpu_count() or 1, 16)


def pack_names(names: list[str]) -> bytes:
    """File names as ``signatures`` takes them: each encoded as the OS does, then a NUL."""
    if not names:
        return b""
    return ("\0".join(names) + "\0").encode("utf-8", "surrogateescape")


def unpack_names(names: bytes) -> list[str]:
    """The file names of ``pack_names``'s bytes."""
    return names.decode("utf-8", "surrogateescape").split("\0")[:-1]


def signatures(folder: str | os.PathLike[str], names: bytes) -> bytes:
    """Three native int64 per name of ``names`` (from ``pack_names``): (mtime_ns, size, inode)
    of a regular file, (0, NOT_REGULAR, 0) for anything else, (0, MISSING, 0) if the stat failed.
    Symlinks are never followed. Raises OSError if ``folder`` cannot be opened."""
    if _native is not None:
        return _native(os.fspath(folder), names, _THREADS)
    return _signatures_in_python(folder, names)


def _signatures_in_python(folder: str | os.PathLike[str], names: bytes) -> bytes:
    out = array("q")
    relative = os.stat in os.supports_dir_fd  # not on Windows, which cannot open a folder either
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if relative else None
    base = os.fsencode(folder)
    if not relative and not os.path.isdir(base):
        raise FileNotFoundError(2, "No such folder", os.fspath(folder))
    try:
        for name in names.split(b"\0")[:-1]:
            try:
                if fd is not None:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                else:
                    st = os.lstat(os.path.join(base, name))
            except (OSError, ValueError):
                out.extend((0, MISSING, 0))
                continue
            if stat.S_ISREG(st.st_mode):
                # C stores the inode as int64; a number past 2**63 wraps the same way here.
                ino = st.st_ino - (1 << 64) if st.st_ino >= 1 << 63 else st.st_ino
                out.extend((st.st_mtime_ns, st.st_size, ino))
            else:
                out.extend((0, NOT_REGULAR, 0))
    finally:
        if fd is not None:
            os.close(fd)
    return out.tobytes()


def unpack(packed: bytes) -> Iterator[tuple[int, int, int]]:
    """The (mtime_ns, size, inode) triples of ``signatures``'s result, inodes unsigned as
    ``os.stat`` gives them."""
    return RECORD.iter_unpack(packed)
