"""The meaning vectors of the memories, in the index's SQLite manifest beside the file rows.

One row per indexed, readable memory file: its vector quantised to 256 signed bytes with a
scale (256 bytes a memory, 26 MB at 100,000), and the fields every search filter reads (type,
project, scope, datasources, has a query, deleted), so that the meaning channel filters exactly
as the words channel does without asking Whoosh about each candidate. Rows are written in the
same SQLite transaction as the file rows, so the vectors are as fresh as the index.

A search needs the vectors of its candidates, which ``cosines_by_id`` reads by id, and for a
question of three words or more a scan of every vector: table.py holds the rows in memory and
scans them. Each memory's token ids are written beside its row, in a table of their own
(tokens.py). A log of the rows written lacking a sentence vector (``written``) lets a pass of
the filler take them first (backlog.py).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.locate import linked_id
from ..core.memory import Memory
from . import sentences
from .embedding import DIMENSIONS
from .encoder import DIMENSIONS as SENTENCE_DIMENSIONS
from .tokens import SCHEMA_SQL as TOKENS_SQL
from .tokens import pack as pack_tokens

if TYPE_CHECKING:
    import numpy as np

    from .embedding import Embedder

# Ids looked up at a time (SQLite allows 999 parameters in old builds).
_BY_ID_CHUNK = 500

_COLUMNS = "id, vec, scale, type, project, scope, datasources, has_query, deleted, svec"
# Every row, as ``checked`` and ``table.Table`` read them.
SELECT_ALL = f"SELECT {_COLUMNS} FROM vectors ORDER BY id"  # noqa: S608 - constants only
# hash: the sha256 of the text embedded (sentences.text_hash); svec: its sentence vector
# (sentences.pack), NULL until it is made (the static vector stands in meanwhile).
# The largest scale ``rows`` writes: a unit vector's peak over 127 is at most 1/127, a zero
# vector's scale is 1.
MAX_SCALE = 1.0
SCHEMA_SQL = (
    "CREATE TABLE IF NOT EXISTS vectors (id TEXT PRIMARY KEY, vec BLOB, scale REAL, type TEXT, "
    "project TEXT, scope TEXT, datasources TEXT, has_query INTEGER, deleted INTEGER, hash TEXT, svec BLOB)"
)
# How many columns of a row ``rows`` makes are the vectors table's; the last is the token ids.
_VECTOR_COLUMNS = 11


# The log of the rows written lacking a sentence vector, for a pass of the filler to take them
# first (backlog.py): ``seq`` only grows (AUTOINCREMENT never hands out a number twice, even once
# its row is deleted), where a row's rowid is handed out again when the newest row is written again.
LOG_SQL = "CREATE TABLE IF NOT EXISTS written (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT)"
# The log's newest rows kept (a pass that has not looked for longer lists its work again).
LOG_KEPT = 10_000
# The rows whose sentence vector is a stand-in's (encoder.STAND_IN_KEY: made by the int8 graph
# during a large first build, docs/search.md), until the shipped graph's replaces it. A row
# written again (a save, a rebuild) comes with a final vector or none, and leaves the list.
STAND_IN_SQL = "CREATE TABLE IF NOT EXISTS standins (id TEXT PRIMARY KEY)"
# The live rows lacking a final sentence vector: none, or a stand-in's.
_NOT_FINAL = "(svec IS NULL OR id IN (SELECT id FROM standins)) AND deleted = 0"


def create(db: sqlite3.Connection) -> None:
    """The tables, if they are not there yet; a new log begun (``_begin_log``)."""
    db.execute(SCHEMA_SQL)
    db.execute(TOKENS_SQL)
    db.execute(LOG_SQL)
    db.execute(STAND_IN_SQL)
    if db.execute("SELECT 1 FROM written LIMIT 1").fetchone() is None:  # a new log: written once
        _begin_log(db)


def _begin_log(db: sqlite3.Connection) -> None:
    """A mark (id NULL) where an empty log begins: above every number it gave before, or in a new
    log at a random number below 2**62, so that a pass's mark from a file the index replaced (a
    rebuild) is not found in it. Never twice: two processes may open a new log at once."""
    db.execute("INSERT INTO written (seq, id) SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'written'), ?) + 1, "
               "NULL WHERE NOT EXISTS (SELECT 1 FROM written)", (int.from_bytes(os.urandom(8), "big") >> 2,))


def embedding_text(memory: Memory) -> str:
    """What a memory means: its title, learning and description."""
    return "\n".join(filter(None, (memory.title, memory.learning, memory.description)))


def rows(
    memories: list[Memory], vectors: np.ndarray | None, known: dict[str, bytes] | None = None,
    tokens: list[np.ndarray] | None = None,
) -> list[tuple[Any, ...]]:
    """Table rows for these memories and their unit vectors (one per memory, same order), with
    the sentence vectors ``known`` holds (text hash -> packed vector), each ending with its
    text's distinct token ids (``tokens``, same order; packed, None when not given). ``vectors``
    None: rows whose static vector is ``pending`` (made later, in the background: ``Meaning.fill_static``)."""
    known = known or {}
    packed = [pack_tokens(ids) for ids in tokens] if tokens is not None else [None] * len(memories)
    made = quantised(vectors) if vectors is not None else [(None, None)] * len(memories)
    out = []
    for memory, (vector, scale), ids in zip(memories, made, packed, strict=True):
        datasources = sorted({e.split(".", 1)[0] for e in memory.entities if linked_id(e) is None})
        out.append((
            memory.id, vector, scale, memory.type, memory.project,
            memory.scope or "project", " ".join(datasources), int(memory.query is not None),
            int(memory.is_deleted), (digest := sentences.text_hash(embedding_text(memory))), known.get(digest), ids,
        ))
    return out


def quantised(vectors: np.ndarray) -> list[tuple[bytes, float]]:
    """Each unit vector as the table keeps it: signed bytes and the scale they are multiplied by."""
    import numpy as np

    peaks = np.abs(vectors).max(axis=1)
    scales = np.where(peaks > 0, peaks / 127.0, 1.0).astype(np.float32)
    quantised = np.rint(vectors / scales[:, None]).astype(np.int8)
    return [(vector.tobytes(), float(scale)) for vector, scale in zip(quantised, scales, strict=True)]


def write(db: sqlite3.Connection, gone: Iterable[str], new_rows: list[tuple[Any, ...]]) -> None:
    """Delete the rows of ``gone``, then add ``new_rows`` (as ``rows`` makes them) and their
    token ids; inside the caller's transaction. The rows written lacking a sentence vector go in
    the log (``written_since``); rows written into an empty table (a first build, a rebuild, every
    vector made again) are the whole table: the log begins again at a mark instead, and a pass
    that saw the log before lists its work again."""
    if db.execute("SELECT 1 FROM vectors LIMIT 1").fetchone() is None:
        db.execute("DELETE FROM written")
        db.execute("DELETE FROM standins")
        _begin_log(db)
    else:
        # Those live (row[8]: deleted) and lacking a sentence vector (row[10]: svec).
        db.executemany("INSERT INTO written (id) VALUES (?)", [(row[0],) for row in new_rows if row[10] is None and not row[8]])
        db.execute("DELETE FROM written WHERE seq <= (SELECT max(seq) FROM written) - ?", (LOG_KEPT,))
    removed = [(m,) for m in gone]
    if db.execute("SELECT 1 FROM standins LIMIT 1").fetchone() is not None:  # a build's, under way
        db.executemany("DELETE FROM standins WHERE id = ?", removed + [(row[0],) for row in new_rows])
    db.executemany("DELETE FROM vectors WHERE id = ?", removed)
    db.executemany("DELETE FROM tokens WHERE id = ?", removed)
    db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [row[:_VECTOR_COLUMNS] for row in new_rows])
    db.executemany("DELETE FROM tokens WHERE id = ?", [(row[0],) for row in new_rows if row[_VECTOR_COLUMNS] is None])
    db.executemany("INSERT OR REPLACE INTO tokens VALUES (?, ?, ?)",
                   [(row[0], row[9], row[_VECTOR_COLUMNS]) for row in new_rows if row[_VECTOR_COLUMNS] is not None])


def missing_sentences(db: sqlite3.Connection, final: bool = True) -> list[tuple[str, str]]:
    """(id, text hash) of the live memories whose final sentence vector is not made yet (not
    ``final``: that have no sentence vector, not even a stand-in), by id."""
    lacking = _NOT_FINAL if final else "svec IS NULL AND deleted = 0"
    return db.execute(f"SELECT id, hash FROM vectors WHERE {lacking} ORDER BY id").fetchall()  # noqa: S608 - constants only


def newest_row(db: sqlite3.Connection) -> int:
    """The number of the log's newest row (``write``), a pass's mark for ``written_since``."""
    (newest,) = db.execute("SELECT coalesce(max(seq), 0) FROM written").fetchone()
    return int(newest)


@dataclass
class Since:
    """What ``written_since`` read."""

    rows: list[tuple[str, str]]  # (id, text hash) of the live memories lacking a sentence vector, in the order written
    mark: int  # the log's newest row now
    lost: bool  # the log no longer holds the mark: ``rows`` is all it holds, and the pass lists its work again


_SINCE_SQL = ("SELECT w.seq, w.id, v.hash, v.svec IS NULL AND v.deleted = 0 FROM written w "
              "LEFT JOIN vectors v ON v.id = w.id WHERE w.seq >= ? ORDER BY w.seq")


def written_since(db: sqlite3.Connection, mark: int) -> Since:
    """The rows written lacking a sentence vector after the log's row ``mark`` (``newest_row``):
    a seek. When the log no longer holds that row (the table was written whole since, or the
    file replaced, or more rows were written than ``LOG_KEPT``), every row it holds."""
    found = db.execute(_SINCE_SQL, (mark,)).fetchall()
    lost = not found or found[0][0] != mark
    if lost:
        found = db.execute(_SINCE_SQL, (0,)).fetchall()
    else:
        found = found[1:]
    # A memory written twice since is taken once, for its text now.
    rows = list(dict.fromkeys((m, digest) for _seq, m, digest, lacking in found if lacking))
    return Since(rows, found[-1][0] if found else mark, lost)


def pending(row: tuple[Any, ...]) -> bool:
    """Whether a row's static vector is still to be made (``rows`` without vectors): neither
    vector nor scale, where a damaged row has one of them wrong."""
    return row[1] is None and row[2] is None


def missing_static(db: sqlite3.Connection, memory_ids: list[str] | None = None) -> list[tuple[str, str]]:
    """(id, text hash) of the rows (of these memories, or all) whose static vector is ``pending``, by id."""
    if memory_ids is None:
        return db.execute("SELECT id, hash FROM vectors WHERE vec IS NULL AND scale IS NULL ORDER BY id").fetchall()
    found: list[tuple[str, str]] = []
    for at in range(0, len(memory_ids), _BY_ID_CHUNK):
        chunk = memory_ids[at : at + _BY_ID_CHUNK]
        found += db.execute(
            f"SELECT id, hash FROM vectors WHERE vec IS NULL AND scale IS NULL AND id IN ({', '.join('?' * len(chunk))})",  # noqa: S608 - placeholders only
            chunk).fetchall()
    return sorted(found)


def static_rows(model: Embedder, texts: list[tuple[str, str, str]]) -> list[tuple[str, str, bytes, float, bytes | None]]:
    """(id, text hash, vector, scale, token ids) of these (id, text hash, text), as ``rows``
    makes them, for ``write_static``."""
    if not texts:
        return []
    made, ids = model.embed_with_tokens([text for _m, _digest, text in texts])
    return [(m, digest, vec, scale, pack_tokens(each))
            for (m, digest, _t), (vec, scale), each in zip(texts, quantised(made), ids, strict=True)]


def write_static(db: sqlite3.Connection, made: list[tuple[str, str, bytes, float, bytes | None]]) -> list[str]:
    """Store (id, text hash, vector, scale, token ids) in the pending rows whose text is still the
    one embedded, with their token ids; the ids written."""
    written = []
    db.execute("BEGIN")
    for memory_id, digest, vec, scale, ids in made:
        if db.execute("UPDATE vectors SET vec = ?, scale = ? WHERE id = ? AND hash = ? AND vec IS NULL AND scale IS NULL",
                      (vec, scale, memory_id, digest)).rowcount:
            written.append(memory_id)
            if ids is not None:
                db.execute("INSERT OR REPLACE INTO tokens VALUES (?, ?, ?)", (memory_id, digest, ids))
    db.execute("COMMIT")
    return written


def made_sentences(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """(id, text hash) of the live memories whose final sentence vector is made, by id."""
    return db.execute("SELECT id, hash FROM vectors WHERE svec IS NOT NULL AND deleted = 0 "
                      "AND id NOT IN (SELECT id FROM standins) ORDER BY id").fetchall()


def still_missing(db: sqlite3.Connection, memory_ids: list[str], final: bool = True) -> list[tuple[str, str]]:
    """(id, text hash) of these memories whose final sentence vector (not ``final``: any) is not
    made yet, by id."""
    lacking = _NOT_FINAL if final else "svec IS NULL AND deleted = 0"
    found = db.execute(
        f"SELECT id, hash FROM vectors WHERE {lacking} AND id IN ({', '.join('?' * len(memory_ids))}) "  # noqa: S608 - placeholders only
        "ORDER BY id", memory_ids,
    ).fetchall() if memory_ids else []
    return [(m, digest) for m, digest in found]


def coverage(db: sqlite3.Connection) -> tuple[int, int, int, int]:
    """(live memories with a sentence vector, live memories, those of them whose static vector is
    ``pending``, those whose sentence vector is a stand-in's). A pending row's sentence vector
    (from the cache) counts once the row is whole: until then meaning does not see the row."""
    covered, total, waiting = db.execute(
        "SELECT count(vec IS NOT NULL AND svec IS NOT NULL OR NULL), count(*), count(*) - count(vec) "
        "FROM vectors WHERE deleted = 0").fetchone()
    (standing,) = db.execute("SELECT count(*) FROM standins s JOIN vectors v ON v.id = s.id "
                             "WHERE v.deleted = 0 AND v.vec IS NOT NULL AND v.svec IS NOT NULL").fetchone()
    return int(covered), int(total), int(waiting), int(standing)


def write_sentences(db: sqlite3.Connection, made: list[tuple[str, str, bytes]], stand_in: bool = False) -> list[str]:
    """Store (id, text hash, packed vector) for the rows whose text is still the one embedded;
    the ids written. ``stand_in``: the vectors are stand-ins, written only where a row has no
    sentence vector, and listed as such; else final, and a stand-in they replace is unlisted."""
    written = []
    db.execute("BEGIN")
    # A stand-in only for a live row lacking one: a memory deleted while its stand-in was made
    # would stay listed, with no final pass to replace it.
    only_lacking = " AND svec IS NULL AND deleted = 0" if stand_in else ""
    for memory_id, digest, blob in made:
        if db.execute(f"UPDATE vectors SET svec = ? WHERE id = ? AND hash = ?{only_lacking}", (blob, memory_id, digest)).rowcount:  # noqa: S608 - constants only
            written.append(memory_id)
    listed = "INSERT OR IGNORE INTO standins VALUES (?)" if stand_in else "DELETE FROM standins WHERE id = ?"
    db.executemany(listed, [(m,) for m in written])
    db.execute("COMMIT")
    return written


def stand_ins(db: sqlite3.Connection) -> set[str]:
    """The live ids whose sentence vector is a stand-in's (a deleted row's left in the list by a
    version that listed them is not one)."""
    return {m for (m,) in db.execute("SELECT s.id FROM standins s JOIN vectors v ON v.id = s.id WHERE v.deleted = 0")}


def stood_sentences(db: sqlite3.Connection, lacking: list[str], held: set[str]) -> tuple[set[str], list[tuple[str, bytes]]]:
    """(The stand-ins listed, the (id, packed sentence vector) of ``lacking`` and of those of
    ``held`` stand-ins no longer listed), read in one transaction: a stand-in written, or
    replaced, between two reads would be taken for final (or a final vector for a stand-in)."""
    db.execute("BEGIN")
    try:
        standing = stand_ins(db)
        wanted = lacking + sorted(held - standing)
        return standing, sentence_blobs_by_id(db, wanted) if wanted else []
    finally:
        db.execute("COMMIT")


def sentence_cosines_by_id(db: sqlite3.Connection, vector: np.ndarray, memory_ids: list[str]) -> dict[str, float]:
    """The sentence cosine of each of these memories that has a sentence vector, read by id."""
    found = sentence_vectors_by_id(db, memory_ids)
    if not found:
        return {}
    import numpy as np

    scores = np.stack(list(found.values())) @ vector
    return dict(zip(found, scores.tolist(), strict=True))


def sentence_blobs_by_id(db: sqlite3.Connection, memory_ids: list[str]) -> list[tuple[str, bytes]]:
    """(id, packed sentence vector) of these memories that have one, read by id."""
    found: list[tuple[str, bytes]] = []
    for at in range(0, len(memory_ids), _BY_ID_CHUNK):
        chunk = memory_ids[at : at + _BY_ID_CHUNK]
        found += db.execute(
            f"SELECT id, svec FROM vectors WHERE svec IS NOT NULL AND id IN ({', '.join('?' * len(chunk))})", chunk  # noqa: S608 - placeholders only
        ).fetchall()
    return found


def sentence_vectors_by_id(db: sqlite3.Connection, memory_ids: list[str]) -> dict[str, np.ndarray]:
    """The unit sentence vector of each of these memories that has one, read by id."""
    found = sentence_blobs_by_id(db, memory_ids)
    if not found:
        return {}
    return dict(zip((r[0] for r in found), sentences.unpack([r[1] for r in found], SENTENCE_DIMENSIONS), strict=True))


# Given the rows that are not ``sound``, rows made again for them (those it can make).
Repair = Callable[[list[tuple[Any, ...]]], list[tuple[Any, ...]]]


def sound(row: tuple[Any, ...]) -> bool:
    """Whether a row read from the table is one ``rows`` could have written: DIMENSIONS bytes and
    a finite scale in (0, MAX_SCALE]. Anything else (a tampered or damaged manifest: a scale of
    1e308 overflows float32, NaN comes back as NULL) would skew or break every score."""
    vec, scale = row[1], row[2]
    return isinstance(vec, bytes) and len(vec) == DIMENSIONS and isinstance(scale, float) and 0.0 < scale <= MAX_SCALE


def checked(found: list[tuple[Any, ...]], repair: Repair | None) -> list[tuple[Any, ...]]:
    """``found`` (rows as ``SELECT_ALL`` reads them) with each row that is not ``sound``
    replaced by the one ``repair`` makes for it, or left out when it makes none; a ``pending``
    row is left out (its static vector is being made in the background), never made here."""
    if any(pending(row) for row in found):
        found = [row for row in found if not pending(row)]
    bad = [row for row in found if not sound(row)]
    if not bad:
        return found
    # ``repair`` makes rows as ``rows`` does: without the text hash and the token ids, as
    # SELECT_ALL reads them.
    made = {row[0]: (*row[:9], row[10]) for row in (repair(bad) if repair is not None else [])}
    return [row if sound(row) else made[row[0]] for row in found if sound(row) or row[0] in made]


def replace(db: sqlite3.Connection, bad: list[tuple[Any, ...]], made: list[tuple[Any, ...]]) -> None:
    """Write the rows ``made`` over the ``bad`` rows of the same ids, each only where the bad row
    still stands: a save that rewrote it meanwhile (under the KB lock) wrote a newer one."""
    by_id = {row[0]: row for row in made}
    db.execute("BEGIN IMMEDIATE")
    for row in bad:
        new = by_id.get(row[0])
        if new is not None:
            db.execute(
                "UPDATE vectors SET vec = ?, scale = ?, type = ?, project = ?, scope = ?, datasources = ?, "
                "has_query = ?, deleted = ?, hash = ?, svec = ? WHERE id = ? AND vec IS ? AND scale IS ?",
                (*new[1:_VECTOR_COLUMNS], new[0], row[1], row[2]),
            )
    db.execute("COMMIT")


def cosines_by_id(
    db: sqlite3.Connection, vector: np.ndarray, memory_ids: list[str], repair: Repair | None = None
) -> dict[str, float]:
    """``Table.cosines`` for a process that has not loaded the table: the rows of these memories,
    read by id (``checked``), scored exactly as the table scores them."""
    import numpy as np

    out: dict[str, float] = {}
    for at in range(0, len(memory_ids), _BY_ID_CHUNK):
        chunk = memory_ids[at : at + _BY_ID_CHUNK]
        found = checked(db.execute(
            f"SELECT {_COLUMNS} FROM vectors WHERE id IN ({', '.join('?' * len(chunk))})", chunk  # noqa: S608 - placeholders only
        ).fetchall(), repair)
        if found:
            matrix = np.frombuffer(b"".join(r[1] for r in found), dtype=np.int8).reshape(len(found), DIMENSIONS)
            scales = np.fromiter((r[2] for r in found), dtype=np.float32, count=len(found))
            scores = (matrix.astype(np.float32) * scales[:, None]) @ vector
            out.update(zip((r[0] for r in found), scores.tolist(), strict=True))
    return out


def rows_by_id(db: sqlite3.Connection, memory_ids: list[str]) -> list[tuple[Any, ...]]:
    """The table's rows of these memories, as ``write`` takes them."""
    found: list[tuple[Any, ...]] = []
    for at in range(0, len(memory_ids), _BY_ID_CHUNK):
        chunk = memory_ids[at : at + _BY_ID_CHUNK]
        found += db.execute(
            "SELECT id, vec, scale, type, project, scope, datasources, has_query, deleted, hash, svec "  # noqa: S608 - placeholders only
            f"FROM vectors WHERE id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
    return found
