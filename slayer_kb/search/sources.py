"""The files the index is made from, as it reads them: a memory file's signature (its lstat) and
its bytes, or the problem that keeps it out of the index; and a hash of the catalog's bytes, which
tells a copy, a checkout or a restore (a new stat for every file) from a change."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from ..catalog.catalog import MAX_CATALOG_BYTES, catalog_files
from ..core.errors import MemoryFileError
from ..core.fileio import NotRegularFile, TooLarge, file_kind, not_a_file, read_regular
from ..core.locate import MEMORIES_DIR, memory_path
from ..core.memory import MAX_FILE_BYTES, too_large
from ..store.listing import SYMLINK, Sig


def file_signature(memories: Path, memory_id: str) -> Sig | None:
    """The memory file's signature (mtime, size, inode), ``SYMLINK`` for anything but a regular
    file, None when there is no such file."""
    path = memories / f"{memory_id}.yaml"
    try:
        st = path.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return SYMLINK
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def file_bytes(memories: Path, memory_id: str, sig: Sig) -> bytes | MemoryFileError:
    """The memory file's bytes, or why it cannot be indexed (a file too large is not read)."""
    path = memories / f"{memory_id}.yaml"
    try:
        if sig != SYMLINK:
            return read_regular(path, limit=MAX_FILE_BYTES)
        kind = file_kind(path.lstat().st_mode)
    except TooLarge as exc:
        return MemoryFileError(memory_path(memory_id), None, too_large(exc.size))
    except NotRegularFile as exc:
        kind = exc.kind
    except OSError as exc:
        return MemoryFileError(memory_path(memory_id), None, f"cannot be read: {exc.strerror or exc}")
    return MemoryFileError(memory_path(memory_id), None, not_a_file(kind, MEMORIES_DIR))


def catalog_hash(root: Path) -> str | None:
    """A hash of the catalog's bytes (a link out of the KB by its own stat, its target never
    read): a copy, a checkout or a restore gives every file a new stat and keeps this. None
    when a file could not be read."""
    digest = hashlib.sha1(usedforsecurity=False)
    for rel, leads_out in catalog_files(root):
        path = os.path.join(root, rel)
        try:
            if leads_out:
                st = os.lstat(path)
                part = f"{st.st_mtime_ns} {st.st_size} {st.st_ino}".encode()
            else:
                part = hashlib.sha1(read_regular(path, follow_symlinks=True, limit=MAX_CATALOG_BYTES),
                                    usedforsecurity=False).digest()
        except (OSError, TooLarge):
            return None
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0" + part + b"\0")
    return digest.hexdigest()
