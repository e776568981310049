"""The sentence-vector cache: each text's all-MiniLM-L6-v2 vector, keyed by the model and the
sha256 of the text embedded, in one SQLite file per user (``$SLAYER_KB_CACHE``, else
``$XDG_CACHE_HOME/slayer-kb``, else ``~/.cache/slayer-kb``), with the day each text was last
used, so that the file is kept within ``SLAYER_KB_CACHE_MAX_MB`` (eviction.py).

A sentence vector costs 20-30 ms of one core; a static one a fraction of a millisecond. Keyed by
what was embedded, not by a memory's id or file, a vector is made once per text on the machine:
``reindex``, a branch switch or a checkout of an old commit, ``renumber`` (ids change, texts do
not), ``sync`` and a second clone of the same KB all find theirs here. Only hashes and vectors
are kept, never the text. A cache that cannot be opened is no cache: vectors are made again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cachedir import folder, made

if TYPE_CHECKING:
    import numpy as np

FILE = "sentence-vectors.db"
# Seconds a write waits for another's (a store, an eviction's transaction, a VACUUM).
_TIMEOUT = 30
_CHUNK = 500
# Rows ``drop`` removes (``mark_daily`` marks) a transaction.
_DROP_CHUNK = 5000
# Each thread's connection for look-ups, kept while the cache's file is the same one: a new
# connection starts with an empty page cache, and reading its pages again tripled a search's
# look-up of its head's sentences (400 hashes: 3.1 ms, 1.0 kept). SQLite reads every commit
# since at the next query, so a kept connection sees what a new one would.
_readers = threading.local()
# Numbers each reader opened, so that a stamp (``version``) names one connection.
_opened = itertools.count()


# A text the encoder lays out in other passages since CJK sentence ends and the cut of a word
# longer than a passage (encoder._pieces): one too long for a run (more than 254 characters: a
# word piece is one or more) holding such an end or a run of more than 64 characters with no
# blank (a passage's budget is 64 word pieces at least). Its vectors cached before were read
# from its first 256 word pieces only; hashed apart, they are made again, and no other text's.
_RELAYABLE = re.compile(r"[。！？；]|\S{65}")
_RELAID_MIN_CHARS = 255
# The layout's name, hashed after such a text behind a byte 0xff, which no UTF-8 text holds: no
# text hashes as another does relaid.
RELAID = "pieces-cut-v1"
_RELAID_TAG = b"\xff" + RELAID.encode("ascii")


@functools.lru_cache(maxsize=1024)
def text_hash(text: str) -> str:
    """The sha256 of ``text``, the key of its vectors (a text ``_RELAYABLE`` finds: of it and
    ``_RELAID_TAG``). Kept for the last texts hashed: a search hashes each of its head's 30
    texts twice (their sentences' look-up, their token ids')."""
    data = text.encode("utf-8")
    if len(text) >= _RELAID_MIN_CHARS and _RELAYABLE.search(text):
        data += _RELAID_TAG
    return hashlib.sha256(data).hexdigest()


def connect() -> sqlite3.Connection | None:
    """A new connection to the cache's file, made with its tables if need be; None when it
    cannot be opened. A file of the version before (no ``used`` table) takes the table here, in
    place: its vectors stay, and its texts count as used longest ago until they are used again
    (eviction.py). ``CREATE ... IF NOT EXISTS`` under SQLite's write lock: two processes opening
    such a file at once make the table once, and neither fails. One this user cannot write is
    still read, as it is (``_keeps_days``)."""
    try:
        where = made()
        db = sqlite3.connect(where / FILE, isolation_level=None, timeout=_TIMEOUT)
        db.execute("SELECT count(*) FROM sqlite_master")  # a file that is not a database fails here
    except (OSError, sqlite3.Error):
        return None
    for statement in _SETUP:
        with contextlib.suppress(sqlite3.Error):  # a file this user cannot write: read as it is
            db.execute(statement)
    return db


_SETUP = (
    # Before any table: a new file keeps the map that lets ``maintenance`` give its free pages
    # back a few megabytes a transaction (eviction.py). A file made without it gets it at its
    # next VACUUM.
    "PRAGMA auto_vacuum=INCREMENTAL",
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "CREATE TABLE IF NOT EXISTS sentences (model TEXT, hash TEXT, vec BLOB, PRIMARY KEY (model, hash)) WITHOUT ROWID",
    # One row a text, not a row a vector: a text's vectors (its whole vector, its units) are
    # used and evicted together. Apart from ``sentences``, whose rows a version before this one
    # still writes three columns at a time.
    "CREATE TABLE IF NOT EXISTS used (hash TEXT PRIMARY KEY, day INTEGER NOT NULL) WITHOUT ROWID",
    # The day each key was last read by a version that reads it (``mark_read``): two versions
    # installed side by side share the cache, and each one's keys count as read by both
    # (eviction.py).
    "CREATE TABLE IF NOT EXISTS read_keys (model TEXT PRIMARY KEY, day INTEGER NOT NULL) WITHOUT ROWID",
)


def _keeps_days(db: sqlite3.Connection) -> bool:
    """Whether the cache keeps the day each text was used: not a file of the version before
    that this user cannot write (nor migrate)."""
    try:
        return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'used'").fetchone() is not None
    except sqlite3.Error:
        return False


def today() -> int:
    """The day a text is used on, counted from 1970 (UTC): coarse, so that a text is marked used
    at most once a day, whatever reads it."""
    return int(time.time() // 86400)


# A text's day, moved on only (a clock set back makes nothing look older than it is).
_MARK = "INSERT INTO used VALUES (?, ?) ON CONFLICT (hash) DO UPDATE SET day = excluded.day WHERE excluded.day > day"


def lookup(model: str, hashes: Iterable[str], mark: bool = True) -> dict[str, bytes]:
    """hash -> stored vector (int8 bytes, as ``pack`` makes them) for the hashes the cache
    holds. ``mark``: the texts found count as used today. A search's look-up of its head's
    sentences does not mark them: reading the day there cost 5-20% of its look-ups' CPU, and a
    KB's filler marks all of its texts once a day (``mark_daily``; docs/search.md)."""
    return dict(_select("sentences.hash, vec", model, hashes, mark))


def held(model: str, hashes: Iterable[str]) -> set[str]:
    """The hashes the cache holds a vector for (without reading the vectors), marked used today."""
    return {digest for (digest,) in _select("sentences.hash", model, hashes, True)}


def _select(columns: str, model: str, hashes: Iterable[str], mark: bool) -> list[tuple[Any, ...]]:
    """The rows found; with ``mark``, each text's day is read with them in the same query (the
    one read of a look-up), and a text found that was last used before today is marked now."""
    wanted = list(dict.fromkeys(hashes))
    held = _reader() if wanted else None
    if held is None:
        return []
    db, mark = held[0], mark and held[1]
    out: list[tuple[Any, ...]] = []
    day = today()
    stale: list[str] = []
    joined = "used.day, " if mark else ""
    try:
        for at in range(0, len(wanted), _CHUNK):
            chunk = wanted[at : at + _CHUNK]
            rows = db.execute(
                f"SELECT {joined}{columns} FROM sentences {'LEFT JOIN used ON used.hash = sentences.hash ' if mark else ''}"  # noqa: S608 - constants and placeholders only
                f"WHERE model = ? AND sentences.hash IN ({', '.join('?' * len(chunk))})",
                [model, *chunk],
            ).fetchall()
            if not mark:
                out += rows
                continue
            out += [row[1:] for row in rows]
            stale += [row[1] for row in rows if row[0] is None or row[0] < day]
    except sqlite3.Error:
        drop_reader()  # the next look-up opens the file afresh
        return out
    if stale:
        _mark(db, stale, day)
    return out


def _mark(db: sqlite3.Connection, digests: list[str], day: int) -> None:
    """Mark these texts used on ``day``, if the cache can be written at once: a look-up never
    waits for another process's write (a store, an eviction, maintenance's VACUUM) to mark
    them; the next look-up does."""
    try:
        db.execute("PRAGMA busy_timeout = 0")
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(_MARK, [(digest, day) for digest in digests])
            db.execute("COMMIT")
        except sqlite3.Error:
            db.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # busy, or a file this user cannot write: marked another time
    finally:
        with contextlib.suppress(sqlite3.Error):
            db.execute(f"PRAGMA busy_timeout = {_TIMEOUT * 1000}")


def _reader() -> tuple[sqlite3.Connection, bool] | None:
    """This thread's kept connection to the cache's file (``_readers``), opened again when the
    cache is another file: another folder, or the file removed or replaced; and whether it
    keeps the days texts were used (``_keeps_days``)."""
    path = folder() / FILE
    held = getattr(_readers, "held", None)
    now = _identity(path)
    if held is not None and now is not None and held[0] == now:
        return held[1]
    drop_reader()
    db = connect()
    if db is None:
        return None
    _readers.held = (_identity(path), (db, _keeps_days(db)), next(_opened))
    return _readers.held[1]


def version() -> tuple[Any, ...] | None:
    """A stamp that changes whenever the cache may have changed since it was taken: the file's
    identity, this thread's reader, and SQLite's ``data_version`` through it (a commit by any
    other connection, in this process or another, changes it; ``store`` writes through one of
    its own). None: no cache. What a look-up did not find stays absent while the stamp is the
    same, so a caller may remember misses under it."""
    reader = _reader()
    if reader is None:
        return None
    try:
        (changes,) = reader[0].execute("PRAGMA data_version").fetchone()
    except sqlite3.Error:
        drop_reader()
        return None
    held = _readers.held
    return held[0], held[2], changes


def _identity(path: Path) -> tuple[str, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return str(path), st.st_dev, st.st_ino


def drop_reader() -> None:
    held = getattr(_readers, "held", None)
    _readers.held = None
    if held is not None:
        with contextlib.suppress(sqlite3.Error):
            held[1][0].close()


def _forget_readers() -> None:
    global _readers
    _readers = threading.local()  # a forked child must not use its parent's connections


os.register_at_fork(after_in_child=_forget_readers)


def store(model: str, found: Mapping[str, bytes]) -> bool:
    """Keep these vectors (hash -> packed vector), their texts used today; a cache that cannot
    be written is skipped. Whether they were kept (``store_together``)."""
    return store_together({model: found})


def store_together(found: Mapping[str, Mapping[str, bytes]], replaces: Mapping[str, Sequence[str]] | None = None) -> bool:
    """Keep these vectors (model key -> hash -> packed vector) in one transaction, their texts
    used today: an eviction (which removes a text's vectors together) sees all of them or none,
    so a text's whole vector under ``MODEL_KEY`` never stands without its units. ``replaces``:
    a key of ``found`` -> the keys whose rows of the texts stored under it go in the same
    transaction (a text's stand-ins, once its final vector is kept). Whether they were kept: a
    cache that cannot be written (no folder, a read-only or full file, busy past the timeout)
    is skipped, and ``keeps`` says so from then on (not for a busy one)."""
    rows = [(model, h, v) for model, vectors in found.items() for h, v in vectors.items()]
    gone = [(old, h) for model, olds in (replaces or {}).items() for h in found.get(model, {}) for old in olds]
    if not rows:
        return True
    db = connect()
    if db is None:
        _unkept.add(folder())
        return False
    day = today()
    with contextlib.closing(db):
        try:
            db.execute("BEGIN")
            db.executemany("INSERT OR REPLACE INTO sentences VALUES (?, ?, ?)", rows)
            db.executemany(_MARK, [(h, day) for h in dict.fromkeys(h for _m, h, _v in rows)])
            db.executemany("DELETE FROM sentences WHERE model = ? AND hash = ?", gone)
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            _unkept_if_lasting(exc)  # closing the connection rolls the transaction back
            return False
    return True


def _unkept_if_lasting(exc: sqlite3.Error) -> None:
    """Note the cache as one this process cannot write to (``keeps``), unless ``exc`` only says
    it was busy past the timeout (another process's VACUUM, say): a next store may land."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    busy = code & 0xFF in (5, 6) if code is not None else "locked" in str(exc)  # SQLITE_BUSY, SQLITE_LOCKED
    if not busy:
        _unkept.add(folder())


# The cache folders a store of this process could not write to (``keeps``).
_unkept: set[Path] = set()


def refuses() -> bool:
    """Whether this process found the cache one it cannot write to, for good (``keeps``): not
    a cache that was only busy past the timeout, which a next store may find free."""
    return folder() in _unkept


def keeps() -> bool:
    """Whether vectors made now would be kept: False once a store of this process was not, or
    when the cache cannot be written (then for the rest of the process; a cache only busy past
    the timeout, for now). A filler asks before it
    makes vectors only the cache would hold (a text's units), so that a cache that cannot keep
    them costs no process a run of the model over every text."""
    db = None if folder() in _unkept else connect()
    if db is None:
        _unkept.add(folder())
        return False
    with contextlib.closing(db):
        try:
            # A write of nothing: a read-only file lets a transaction begin, and refuses a write.
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM sentences WHERE 0")
            db.execute("ROLLBACK")
        except sqlite3.Error as exc:
            _unkept_if_lasting(exc)
            return False
    return folder() not in _unkept


def mark_daily(path: Path, texts: Callable[[], list[str]], keys: Sequence[str]) -> None:
    """Mark a KB's ``texts`` (their hashes, read only when due) used today, and the ``keys``
    this version reads read today (``mark_read``), once a day: ``path`` (in the KB's derived
    state) holds the day last marked. A search's look-ups mark nothing (``lookup``), so a KB
    that is mostly searched would otherwise look least used and lose its texts' units first;
    its filler calls this after each pass instead. The day is written even when the marks
    failed (a cache busy past the timeout, or one this user cannot write): a day's marks missed
    cost little, while each one-shot search would otherwise start a filler to try again."""
    day = today()
    if marked_today(path):
        return
    if folder() not in _unkept:  # (a cache this process could not write to: not its texts read)
        _mark_all(texts(), keys, day)
    with contextlib.suppress(OSError):
        path.write_text(f"{day}\n", encoding="utf-8")


def marked_today(path: Path) -> bool:
    """Whether ``mark_daily`` marked the texts of the KB whose day file is ``path`` today."""
    try:
        return path.read_text(encoding="utf-8").strip() == str(today())
    except OSError:
        return False


def _mark_all(digests: list[str], keys: Sequence[str], day: int) -> None:
    """Mark these texts used on ``day``, those the cache holds a day for, a few thousand a
    transaction (a store meanwhile waits for one at most), and ``keys`` read on it; a cache
    that cannot be written or stays busy is left unmarked."""
    db = connect()
    if db is None:
        return
    with contextlib.closing(db), contextlib.suppress(sqlite3.Error):
        # (an error: closing the connection rolls back the transaction it was in)
        mark_read(db, keys, day)
        for at in range(0, len(digests), _DROP_CHUNK):
            db.execute("BEGIN IMMEDIATE")
            db.executemany("UPDATE used SET day = ?1 WHERE hash = ?2 AND day < ?1",
                           [(day, digest) for digest in digests[at : at + _DROP_CHUNK]])
            db.execute("COMMIT")


def mark_read(db: sqlite3.Connection, keys: Sequence[str], day: int) -> None:
    """Note ``keys`` as read on ``day`` by this version, through ``db`` (one transaction)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.executemany("INSERT INTO read_keys VALUES (?, ?) ON CONFLICT (model) DO UPDATE SET day = excluded.day "
                       "WHERE excluded.day > day", [(key, day) for key in keys])
        db.execute("COMMIT")
    except sqlite3.Error:
        with contextlib.suppress(sqlite3.Error):  # the error raised is the write's, not this
            db.execute("ROLLBACK")
        raise


def drop(model: str) -> int:
    """Remove every vector kept under ``model`` (a key nothing reads any more), a few thousand
    rows a transaction so that a process storing meanwhile never waits long; how many were
    removed. A cache that cannot be written is left as it is."""
    db = connect()
    if db is None:
        return 0
    removed = 0
    with contextlib.suppress(sqlite3.Error), contextlib.closing(db):
        while changed := db.execute(
            "DELETE FROM sentences WHERE model = ? AND hash IN (SELECT hash FROM sentences WHERE model = ? LIMIT ?)",
            (model, model, _DROP_CHUNK),
        ).rowcount:
            removed += changed
    return removed


def pack(vector: np.ndarray) -> bytes:
    """A vector as signed bytes, its largest component at 127 (``unpack`` normalises it again, so
    the scale need not be kept): cosines within 0.002 of the float32 ones."""
    import numpy as np

    peak = float(np.abs(vector).max()) or 1.0
    return np.rint(vector * (127.0 / peak)).astype(np.int8).tobytes()


def packed(rows: np.ndarray) -> bytes:
    """A text's unit vectors as one cache entry: their packed vectors end to end (none: b"")."""
    return b"".join(pack(row) for row in rows)


def unpack(blobs: list[bytes], dimensions: int) -> np.ndarray:
    """Packed vectors as float32 rows, normalised again (quantising moved them off unit length),
    in order: a blob may hold several, one after another (a text's units)."""
    import numpy as np

    rows = np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(-1, dimensions).astype(np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)
