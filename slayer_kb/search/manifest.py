"""The index's manifest, two files beside the Whoosh segments.

``manifest.json``, a small state (format, file count, a digest of all signatures, the catalog's
signature, the young files), is read by every freshness check; ``manifest.db``, one SQLite row
per file with its signature and content hash, the files that could not be indexed and the
meaning vectors (vectors.py), is read only when something changed. A check with nothing changed
therefore costs one stat per file and no parsing of 100,000 entries.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from ..core.errors import MemoryFileError
from ..core.fileio import write_whole
from ..core.locate import MEMORIES_DIR
from ..store.listing import shown
from . import vectors
from .schema import FORMAT

# SQLite's limit on bound parameters (999 before 3.32), with room to spare.
_BY_ID_CHUNK = 900


class StateFile:
    """``manifest.json``, parsed again only when the file changed: a warm search asks for it
    several times (the vectors' key), and parsing 20 KB of JSON took a millisecond each time.
    The file is always replaced whole (a new inode), so its stat tells a new version apart."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._read: tuple[tuple[int, int, int], dict[str, Any]] | None = None  # (stat, parsed)

    def read(self) -> dict[str, Any] | None:
        """A copy of the state (a sync changes its own), or None when it is missing, damaged or
        of another format."""
        try:
            st = self.path.stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            if self._read is not None and self._read[0] == stamp:
                return dict(self._read[1])
            state = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            return None
        self._read = (stamp, state)
        return dict(state)

    def write(self, state: dict[str, Any]) -> None:
        write_whole(self.path, json.dumps(state, separators=(",", ":")))


def connect(folder: Path) -> sqlite3.Connection:
    """A connection to ``folder``'s manifest.db, its tables made if they are not there yet."""
    db = sqlite3.connect(folder / "manifest.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE IF NOT EXISTS files (id TEXT PRIMARY KEY, mtime INTEGER, size INTEGER, "
        "ino INTEGER, hash TEXT)"
    )
    db.execute("CREATE TABLE IF NOT EXISTS problems (id TEXT PRIMARY KEY, path TEXT, line INTEGER, message TEXT)")
    vectors.create(db)
    return db


def known_files(db: sqlite3.Connection, only: list[str] | None) -> dict[str, tuple[Any, ...]]:
    """Memory id -> (mtime, size, inode, content hash) as the index last read each file (of
    ``only``, or every file)."""
    if only is None:
        return {row[0]: row[1:] for row in db.execute("SELECT id, mtime, size, ino, hash FROM files")}
    out: dict[str, tuple[Any, ...]] = {}
    for at in range(0, len(only), _BY_ID_CHUNK):
        chunk = only[at : at + _BY_ID_CHUNK]
        marks = ",".join("?" * len(chunk))
        rows = db.execute(f"SELECT id, mtime, size, ino, hash FROM files WHERE id IN ({marks})", chunk)  # noqa: S608 - marks are "?"
        out.update((row[0], row[1:]) for row in rows)
    return out


def file_hashes(db: sqlite3.Connection, memory_ids: list[str]) -> dict[str, str]:
    """The content hash (sha1 of the bytes) the index last read for each of these files."""
    out: dict[str, str] = {}
    for at in range(0, len(memory_ids), _BY_ID_CHUNK):
        chunk = memory_ids[at : at + _BY_ID_CHUNK]
        marks = ",".join("?" * len(chunk))
        query = f"SELECT id, hash FROM files WHERE id IN ({marks})"  # noqa: S608 - marks are "?"
        out.update(db.execute(query, chunk).fetchall())
    return {mid: h for mid, h in out.items() if h is not None}


def problems(db: sqlite3.Connection) -> list[MemoryFileError]:
    """Why each file the index could not read was left out, by path."""
    rows = db.execute("SELECT path, line, message FROM problems ORDER BY path")
    return [MemoryFileError(path, line, message) for path, line, message in rows]


def note_unreadable(db: sqlite3.Connection, names: list[str]) -> None:
    """Keep the problems rows of the memory file names that are not UTF-8 (which the listing
    skips) as they are now. Their rows' ids start with '/', which no file name holds."""
    rows = sorted((f"/{shown(n)}", f"{MEMORIES_DIR}/{shown(n)}", None,
                   "its name is not UTF-8, so no memory id can name it; rename it (git mv) to a UTF-8 name")
                  for n in names)
    where = "FROM problems WHERE id >= '/' AND id < '0'"
    if db.execute(f"SELECT id, path, line, message {where} ORDER BY id").fetchall() != rows:
        db.execute("BEGIN")
        db.execute(f"DELETE {where}")
        db.executemany("INSERT INTO problems VALUES (?, ?, ?, ?)", rows)
        db.execute("COMMIT")


def identity(path: Path) -> tuple[int, int, int] | None:
    """The file ``path`` names now, and this process (a forked child opens its own)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return os.getpid(), st.st_dev, st.st_ino


def state_key(state: dict[str, Any] | None) -> Any:
    """What identifies the index's content, for caches kept beside it (None: unknown)."""
    if state is None or state.get("digest") is None:
        return None
    return (state["digest"], state["count"], state.get("vectors"))
