"""What the memories folder held at one moment: its file names and their signatures, and a
cache of it on disk that makes the freshness check one stat per file and one comparison.

The cache is bound to the index state it was checked against (its digest): one written for
another state is ignored, so any process may write it without the KB's lock.

A folder's own mtime changes whenever a file is created, removed or renamed in it, so while it
is unchanged the cached names are the names, and the folder need not be listed again. That is
trusted only when the folder's mtime was at least RACY_SECONDS old when it was listed: a file
created in the same timestamp tick as the listing would leave the mtime as it was.

A file name that is not UTF-8 (git carries such names in a clone) names no memory: no id can
be written as text. Listings keep it, so that it coming or going is a change like any other, but
their ids (``signatures``, ``differing``, ``memory_names``) leave it out; ``unreadable`` lists
them for the index to report as skipped.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import threading
import time
import zlib
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .filestat import MISSING, NOT_REGULAR, RECORD, pack_names, signatures, unpack, unpack_names

Sig = tuple[int, int, int]
"""A memory file's (mtime_ns, size, inode)."""
SYMLINK: Sig = (-1, -1, -1)
"""The signature of anything at a memory's path that is not a regular file."""
# A file changed within this many seconds of a scan may change again within the file system's
# timestamp granularity without its signature changing; such files are re-read on the next scan.
RACY_SECONDS = 2.0
SUFFIX = ".yaml"

FolderSig = tuple[int, int, int]
"""The memories folder's (mtime_ns, ctime_ns, inode)."""


@dataclass(frozen=True)
class Listing:
    folder: FolderSig | None  # None: there is no memories folder
    settled: bool  # the folder's mtime was old enough, when listed, to stand for its names
    names: bytes  # the memory files' names, each followed by a NUL (filestat.pack_names)
    packed: bytes  # filestat.signatures of ``names``

    @property
    def complete(self) -> bool:
        """No file vanished between the listing and its stat."""
        return MISSING not in array("q", self.packed)[1::3]  # the size fields, read in C

    def differing(self, packed: bytes) -> list[str]:
        """The ids whose records in ``packed`` (for the same names) differ from this listing's."""
        size = RECORD.size
        return [
            name[: -len(SUFFIX)]
            for name, at in zip(unpack_names(self.names), range(0, len(packed), size), strict=True)
            if packed[at : at + size] != self.packed[at : at + size] and readable(name)
        ]

    def signatures(self) -> dict[str, Sig]:
        """``{id: signature}``; a file that vanished between the listing and its stat, and an
        ``unreadable`` name, are left out."""
        out: dict[str, Sig] = {}
        for name, sig in zip(unpack_names(self.names), unpack(self.packed), strict=True):
            if sig[1] == MISSING or not readable(name):
                continue
            out[name[: -len(SUFFIX)]] = SYMLINK if sig[1] == NOT_REGULAR else sig
        return out


    def unreadable(self) -> list[str]:
        """The names that are not UTF-8 (as ``os.listdir`` gives them), which name no memory."""
        return [name for name in unpack_names(self.names) if not readable(name)]


def readable(name: str) -> bool:
    """Whether a file name (as ``os.listdir`` decodes it) is text: bytes that are not UTF-8
    come back as lone surrogates, which nothing can encode (the index, SQLite, a terminal)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(name: str) -> str:
    """A file name that may not be UTF-8, printable: its other bytes as ``\\xff``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def memory_names(folder: Path) -> list[str]:
    """The names of the memory files in ``folder``, without a stat each (not ``unreadable`` ones)."""
    return [name for name in _yaml_names(folder) if readable(name)]


def file_names(folder: Path) -> list[str]:
    """Every name in ``folder`` (none when it does not exist), as ``os.listdir`` gives them."""
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []


def _yaml_names(folder: Path) -> list[str]:
    return [name for name in file_names(folder) if name.endswith(SUFFIX) and not name.startswith(".")]


def take(folder: Path) -> Listing:
    """List ``folder`` and stat every memory file in it, now."""
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        return Listing(None, True, b"", b"")
    listed_at = time.time_ns()
    # Sorted: listdir's order can change when a file is replaced by a rename (tmpfs, btrfs), and a
    # targeted update inserts the names it adds in place (``patched``).
    names = pack_names(sorted(_yaml_names(folder)))
    try:
        packed = signatures(folder, names)
    except FileNotFoundError:
        return Listing(None, True, b"", b"")
    settled = listed_at - st.st_mtime_ns > RACY_SECONDS * 1e9
    return Listing((st.st_mtime_ns, st.st_ctime_ns, st.st_ino), settled, names, packed)


def compare(cached: Listing, folder: Path) -> tuple[Listing | None, list[str] | None]:
    """Compare the folder with ``cached``. Returns (now, changed):

    - ``now``: when the folder holds exactly the cached files with the cached signatures,
      ``cached`` itself, or a fresh listing of the same if the folder had to be listed again to
      know (write it back, so the next check need not); else None.
    - ``changed``: the ids whose signatures differ, when the folder holds the same names (files
      edited in place); None when names changed too, so that only a full scan can tell.
    """
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        return (cached, []) if cached.folder is None else (None, None)
    now = cached
    if cached.settled and (st.st_mtime_ns, st.st_ctime_ns, st.st_ino) == cached.folder:
        packed = signatures(folder, cached.names)
    else:
        listing = take(folder)
        if listing.names != cached.names:
            return None, None
        packed = listing.packed
        if (listing.folder, listing.settled) != (cached.folder, cached.settled):
            now = listing
    if packed == cached.packed:
        return now, []
    return None, cached.differing(packed)


def patched(cached: Listing, sigs: Mapping[str, Sig], gone: Iterable[str] = ()) -> Listing:
    """``cached`` with the files of ``sigs`` at these signatures (added where they are new) and
    the files of ``gone`` left out. Every save calls this, so the 3.5 MB of a 100,000-file
    listing are spliced, not rebuilt record by record."""
    names = unpack_names(cached.names)
    packed = bytearray(cached.packed)
    size = RECORD.size
    names_changed = False
    for memory_id in gone:
        at = bisect.bisect_left(names, memory_id + SUFFIX)
        if at < len(names) and names[at] == memory_id + SUFFIX:
            del names[at], packed[size * at : size * (at + 1)]
            names_changed = True
    for memory_id, sig in sigs.items():
        name = memory_id + SUFFIX
        record = RECORD.pack(*((0, NOT_REGULAR, 0) if sig == SYMLINK else sig))
        at = bisect.bisect_left(names, name)
        if at < len(names) and names[at] == name:
            packed[size * at : size * (at + 1)] = record
        else:
            names.insert(at, name)
            packed[size * at : size * at] = record
            names_changed = True
    return Listing(cached.folder, cached.settled, pack_names(names) if names_changed else cached.names, bytes(packed))


def load(path: Path, digest: int) -> Listing | None:
    """The listing cached at ``path`` for the index state of ``digest``, if there is one."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, _, body = data.partition(b"\n")
    try:
        header = json.loads(head)
        if header["digest"] != digest:
            return None
        folder = None if header["folder"] is None else tuple(int(v) for v in header["folder"])
        size = int(header["names"])
        settled = bool(header["settled"])
    except (ValueError, KeyError, TypeError):
        return None
    names, packed = body[:size], body[size:]
    if len(names) != size or (names and not names.endswith(b"\0")) or len(packed) != RECORD.size * names.count(b"\0"):
        return None  # cut short or damaged: list the folder again instead
    return Listing(folder, settled, names, packed)  # type: ignore[arg-type]


def save(path: Path, listing: Listing, digest: int) -> None:
    """Cache ``listing`` for the index state of ``digest``. Best effort: a cache that cannot be
    written only means the next check lists the folder."""
    if not listing.complete:
        return
    header = {"digest": digest, "folder": listing.folder, "settled": listing.settled, "names": len(listing.names)}
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(json.dumps(header).encode("ascii") + b"\n")
            handle.write(listing.names)
            handle.write(listing.packed)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


# Digests of signatures are added modulo this, so one file's part can be taken out again.
DIGEST_MOD = 1 << 64


def entry_digest(memory_id: str, sig: Sig | tuple[Any, ...]) -> int:
    """One file's part of ``signatures_digest``."""
    data = f"{memory_id}\0{sig[0]}\0{sig[1]}\0{sig[2]}".encode("utf-8", "surrogateescape")
    return zlib.crc32(data) | (zlib.adler32(data) << 32)


def signatures_digest(scanned: dict[str, Sig]) -> int:
    """An order-independent digest of all signatures, so that one changed file can be updated
    in it without reading the others."""
    return sum(entry_digest(mid, sig) for mid, sig in scanned.items()) % DIGEST_MOD
