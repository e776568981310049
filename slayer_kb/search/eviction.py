"""The sentence-vector cache (sentences.py) kept within ``SLAYER_KB_CACHE_MAX_MB``.

The cache is shared by every KB of the user and keyed by text: every edit leaves the old text's
vectors behind, and a model key a new version no longer reads leaves all of its. When the pages
the file uses pass the bound, vectors are removed until they are at ``LOW_WATER`` of it: first
the rows under keys this version never reads (``READ_KEYS``), then the texts used least
recently, each text's vectors together (its whole vector and its units: the filler takes a
whole vector under ``MODEL_KEY`` to mean its units are kept). Keys another version installed
beside this one read lately (``KEY_KEPT_DAYS``) count as read: two versions sharing the cache
would otherwise each evict the other's vectors first. A text's day of last use is kept
by the look-ups of the processes that index it or fill its vectors (``sentences.lookup``). Nothing a KB needs is lost: its memories'
vectors are in its own index, and a vector evicted that a KB asks for again (a rebuild, a new
clone, a text's units) is made again by its filler.

Run by ``slayer-kb maintenance``, which then gives the file's free pages back, and by a filler
after each pass, when the file is larger than the bound (a ``stat``; never on a save's path).
Deleted rows' pages stay in the file, free, and later writes reuse them: the file keeps about
the bound's size between two maintenances. A cache is made with ``auto_vacuum=INCREMENTAL``
(sentences.py), so maintenance gives its free pages back ``_STEP_BYTES`` a transaction
(``PRAGMA incremental_vacuum``): a store meanwhile waits for one step at most, where a
``VACUUM`` holds the write lock while it rewrites the whole file (longer than a store's 30 s
wait at 2 GB). A file made by a version before has no such map: one ``VACUUM`` gives it one,
run only while the file's pages in use are at most ``_CONVERT_MAX`` (a few seconds); a larger
one keeps its free pages for later writes, and maintenance says so and how to shrink it.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import sqlite3
from collections.abc import Callable, Iterator, Sized
from pathlib import Path

from ..core.results import CacheTrim
from . import encoder, sentences
from .cachedir import folder, max_bytes

# Evicting stops once the pages in use are at this share of the bound, so that a filler's next
# passes write a tenth of the bound (about 20,000 texts at the default) before it evicts again.
LOW_WATER = 0.9
# Texts (or rows, under keys no longer read) removed a transaction: a store meanwhile waits for
# one such transaction at most, and the pages in use are measured again after each.
_CHUNK = 500
# VACUUM (a file made without auto_vacuum) when at least this share of the file's pages is
# free: rewriting a file that has little to give back costs its whole size in writes for nothing.
_VACUUM_SHARE = 0.1
# Free pages given back a transaction (``PRAGMA incremental_vacuum``): 0.4 s of wall at most
# on a 350 MB cache at a load of 8 on two cores.
_STEP_BYTES = 8 << 20
# The pages in use up to which a file made without auto_vacuum is rewritten by one VACUUM that
# gives it one: 5.0 s of wall for 173 MB (a load of 8 on two cores), well within a store's wait.
_CONVERT_MAX = 256 << 20
# A row's bytes besides its vector (its key and the b-tree's cell), for the estimate of how many to pick.
_ROW_BYTES = 100
LOCK = sentences.FILE + ".evict.lock"
# Days a key another version read (``sentences.mark_read``) counts as read here: that version's
# filler marks its keys once a day, so one not run for a month has its rows evicted first.
KEY_KEPT_DAYS = 30
# Every key this version reads from the cache (encoder.py; a test checks that none is left out).
READ_KEYS = (encoder.MODEL_KEY, encoder.UNITS_KEY, encoder.WHOLE_KEY, encoder.FITTING_KEY, encoder.STAND_IN_KEY, encoder.STAND_IN_UNITS_KEY)


def on_disk() -> int:
    """Bytes the cache's file and its write-ahead log take (0: no cache)."""
    total = 0
    for name in (sentences.FILE, sentences.FILE + "-wal"):
        with contextlib.suppress(OSError):
            total += os.stat(folder() / name).st_size
    return total


def after_fill() -> CacheTrim | None:
    """A filler's hook once a pass wrote vectors: evict when the file is larger than the bound
    (a ``stat`` otherwise), unless another process is evicting already (or the lock cannot be
    opened). None: nothing done."""
    limit = max_bytes()
    if on_disk() <= limit:
        return None
    with _evicting(wait=False) as mine:
        return _within(limit, False) if mine else None


def trim(limit: int | None = None, vacuum: bool = False) -> CacheTrim:
    """Evict until the cache's pages in use are within ``limit`` (default: the setting), as the
    module says, after another process's eviction if one runs (a lock file beside the cache);
    ``vacuum``: then give the free pages back to the disk."""
    limit = max_bytes() if limit is None else limit
    with _evicting(wait=True):
        return _within(limit, vacuum)


def _within(limit: int, vacuum: bool) -> CacheTrim:
    before = on_disk()
    # A cache that is not there is not made; one that cannot be opened or written (busy past
    # the timeout, read-only) is left as it is.
    path = folder() / sentences.FILE
    db = sentences.connect() if path.exists() else None
    if db is None:
        return CacheTrim(before, before, limit, 0, 0)
    unread = texts = 0
    problem = None
    with contextlib.closing(db):
        try:
            target = int(limit * LOW_WATER)
            if _in_use(db) > limit:
                day = sentences.today()
                sentences.mark_read(db, READ_KEYS, day)
                kept = _kept_keys(db, day)
                unread = _unread(db, target, set(kept))
                texts = _least_used(db, target, kept)
            if vacuum:
                problem = _give_back(db, path)
        except sqlite3.Error as error:
            problem = (f"the vector cache {path} could not be trimmed: {error}. Free space on its disk or "
                       "let this user write it, then run slayer-kb maintenance again.")
    return CacheTrim(before, on_disk(), limit, unread, texts, problem)


@contextlib.contextmanager
def _evicting(wait: bool) -> Iterator[bool]:
    try:
        fd = os.open(folder() / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        # No folder (no cache), or a lock this user cannot open (another user's, in a shared
        # folder): a filler does not evict beside an eviction it cannot see; maintenance does.
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        yield False
        return
    try:
        yield True
    finally:
        os.close(fd)  # closing releases the lock


def _pages(db: sqlite3.Connection) -> tuple[int, int, int]:
    """The file's pages, its free pages and a page's bytes."""
    (pages,) = db.execute("PRAGMA page_count").fetchone()
    (free,) = db.execute("PRAGMA freelist_count").fetchone()
    (size,) = db.execute("PRAGMA page_size").fetchone()
    return int(pages), int(free), int(size)


def _in_use(db: sqlite3.Connection) -> int:
    """Bytes of the pages holding something: the file's, less its free pages."""
    pages, free, size = _pages(db)
    return (pages - free) * size


def _give_back(db: sqlite3.Connection, path: Path) -> str | None:
    """Give the file's free pages back to the disk, a step a transaction (the module says
    how), or by one VACUUM for a file made without auto_vacuum that is small enough; for one
    too large, what keeps its free pages and how to shrink it."""
    pages, free, size = _pages(db)
    (mode,) = db.execute("PRAGMA auto_vacuum").fetchone()
    if not free:
        return None
    if mode == 2:  # INCREMENTAL
        step = max(_STEP_BYTES // size, 1)
        for _ in range(math.ceil(free / step)):  # pages freed meanwhile wait for the next maintenance
            _vacuum_step(db, step)
    elif free < pages * _VACUUM_SHARE:
        return None
    elif (pages - free) * size <= _CONVERT_MAX:
        db.execute("VACUUM")  # with sentences.connect's auto_vacuum=INCREMENTAL: the next gives back in steps
    else:
        # Never converted: its free pages are reused by later writes, and the file never shrinks.
        return (f"the vector cache {path} was made by an earlier version and holds {(pages - free) * size / 1e6:.1f} MB, "
                f"more than maintenance rewrites at once ({_CONVERT_MAX / 1e6:.1f} MB) while stores wait, so its "
                f"{free * size / 1e6:.1f} MB of free pages stay in the file. To shrink it, delete it while no slayer-kb "
                "process runs: the vectors KBs need are made again, in the background.")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file is cut to its pages in use here
    return None


def _vacuum_step(db: sqlite3.Connection, pages: int) -> None:
    """Give back up to ``pages`` free pages in one transaction."""
    # executescript runs the pragma to its end (it frees a page a step): execute frees one.
    db.executescript(f"BEGIN IMMEDIATE; PRAGMA incremental_vacuum({int(pages)}); COMMIT;")


def _kept_keys(db: sqlite3.Connection, day: int) -> list[str]:
    """The keys whose rows are evicted by their texts' last use: ``READ_KEYS``, and those
    another version installed beside this one read in the last ``KEY_KEPT_DAYS``
    (``sentences.mark_read``)."""
    others = [m for (m,) in db.execute("SELECT model FROM read_keys WHERE day >= ? ORDER BY model",
                                       (day - KEY_KEPT_DAYS,)) if m not in READ_KEYS]
    return [*READ_KEYS, *others]


def _models(db: sqlite3.Connection) -> list[str]:
    """The keys the cache holds rows under, one primary-key seek each (no scan of the rows)."""
    found: list[str] = []
    (model,) = db.execute("SELECT min(model) FROM sentences").fetchone()
    while model is not None:
        found.append(model)
        (model,) = db.execute("SELECT min(model) FROM sentences WHERE model > ?", (model,)).fetchone()
    return found


def _unread(db: sqlite3.Connection, target: int, read: set[str]) -> int:
    """Remove rows under keys this version never reads, the least recently used texts' first,
    until the pages in use are within ``target``; how many."""
    removed = 0
    for model in (m for m in _models(db) if m not in read):
        def pick(count: int, model: str = model) -> list[tuple[str, int]]:
            return db.execute(
                "SELECT sentences.hash, ifnull(used.day, 0) AS day FROM sentences LEFT JOIN used ON used.hash = sentences.hash "
                "WHERE model = ? ORDER BY day LIMIT ?", (model, count)).fetchall()

        def remove(chosen: list[tuple[str, int]], model: str = model) -> int:
            return db.execute(f"DELETE FROM sentences WHERE model = ? AND hash IN ({_marks(chosen)})",  # noqa: S608 - placeholders only
                              [model, *(h for h, _day in chosen)]).rowcount

        count, size = db.execute("SELECT count(*), sum(length(vec)) FROM sentences WHERE model = ?", (model,)).fetchone()
        removed += _free(db, target, (size or 0) // max(count, 1) + _ROW_BYTES, pick, remove)
        if _in_use(db) <= target:
            break
    return removed


def _least_used(db: sqlite3.Connection, target: int, read: list[str]) -> int:
    """Remove the texts used least recently, every key's vectors of each, until the pages in
    use are within ``target``; how many texts. A text with no day (kept by a version before
    this one, or by one that does not mark them) counts as used longest ago."""
    if _in_use(db) <= target:
        return 0
    for model in read:
        db.execute("INSERT OR IGNORE INTO used SELECT hash, 0 FROM sentences WHERE model = ?", (model,))

    def pick(count: int) -> list[tuple[str, int]]:
        return db.execute("SELECT hash, day FROM used ORDER BY day, hash LIMIT ?", (count,)).fetchall()

    def remove(chosen: list[tuple[str, int]]) -> int:
        # A text marked used since it was picked is kept: it is no longer among the least used.
        # (A filler stores a text's units and whole vector in one transaction, so an eviction
        # never finds one without the other: sentences.store_together.)
        picked = dict(chosen)
        digests = [h for h, day in db.execute(f"SELECT hash, day FROM used WHERE hash IN ({_marks(chosen)})", list(picked))  # noqa: S608 - placeholders only
                   if day == picked[h]]
        for model in read:
            db.execute(f"DELETE FROM sentences WHERE model = ? AND hash IN ({_marks(digests)})", [model, *digests])  # noqa: S608 - placeholders only
        return db.execute(f"DELETE FROM used WHERE hash IN ({_marks(digests)})", digests).rowcount  # noqa: S608 - placeholders only

    (texts,) = db.execute("SELECT count(*) FROM used").fetchone()
    return _free(db, target, _in_use(db) // max(texts, 1), pick, remove)


def _free(db: sqlite3.Connection, target: int, each: int, pick: Callable[[int], list[tuple[str, int]]],
          remove: Callable[[list[tuple[str, int]]], int]) -> int:
    """Remove what ``pick`` gives (hash, day), a chunk a transaction, until the pages in use
    are within ``target`` or a round removes nothing; how many ``remove`` removed. Each round
    picks about as many as the bytes still over need at ``each`` bytes an item (it overshoots
    by less than a chunk)."""
    removed = 0
    while (over := _in_use(db) - target) > 0:
        chosen = pick(min(max(math.ceil(over / max(each, 1)), 1), 20 * _CHUNK))
        before = removed
        for at in range(0, len(chosen), _CHUNK):
            db.execute("BEGIN IMMEDIATE")
            try:
                removed += remove(chosen[at : at + _CHUNK])
                db.execute("COMMIT")
            except sqlite3.Error:
                with contextlib.suppress(sqlite3.Error):  # the error raised is the write's, not this
                    db.execute("ROLLBACK")
                raise
            if _in_use(db) <= target:
                return removed
        if removed == before:
            break  # nothing left to remove, or all of it marked again meanwhile
    return removed


def _marks(items: Sized) -> str:
    return ", ".join("?" * len(items))
