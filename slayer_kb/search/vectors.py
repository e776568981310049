"""The meaning vectors of the memories, in the index's SQLite manifest beside the file rows.

One row per indexed, readable memory file: its vector quantised to 256 signed bytes with a
scale (256 bytes a memory, 26 MB at 100,000), and the fields every search filter reads (type,
project, scope, datasources, has a query, deleted), so that the meaning channel filters exactly
as the words channel does without asking Whoosh about each candidate. Rows are written in the
same SQLite transaction as the file rows, so the vectors are as fresh as the index.

A search needs the vectors of its candidates, which ``cosines_by_id`` reads by id, and for a
question of three words or more a scan of every vector. A warm process (the server, MCP) loads
the table once (``Table``) and holds the static vectors as float32, the sentence vectors as
signed bytes (shortlist.py scans them). Any other process scans the manifest a chunk of rows at
a time (``top_by_scan``), keeping only the best, so it never holds the whole table
(26 MB of signed bytes at 100,000 memories); one that never scans (a save, a ``get``, a search
of one or two words) never reads it.
Each memory's token ids are written beside its row, in a table of their own (tokens.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.memory import Memory
from . import sentences
from .embedding import DIMENSIONS
from .encoder import DIMENSIONS as SENTENCE_DIMENSIONS
from .helper import helper as _helper
from .shortlist import Blocks, Products
from .tokens import SCHEMA_SQL as TOKENS_SQL
from .tokens import pack as pack_tokens

if TYPE_CHECKING:
    import numpy as np

# Rows read at a time when the table is loaded, or scanned by a process that does not load it.
_LOAD_CHUNK = 4096
_SCORE_CHUNK = 8192
# A full scan of at least this many rows is split between two threads (``Table._scan``).
_SPLIT_ROWS = 32_768
# Ids looked up at a time (SQLite allows 999 parameters in old builds).
_BY_ID_CHUNK = 500

_COLUMNS = "id, vec, scale, type, project, scope, datasources, has_query, deleted, svec"
_SELECT_ALL = f"SELECT {_COLUMNS} FROM vectors ORDER BY id"  # noqa: S608 - constants only
# hash: the sha256 of the text embedded (sentences.text_hash); svec: its sentence vector
# (sentences.pack), NULL until it is made (the static vector stands in meanwhile).
# The largest scale ``rows`` writes: a unit vector's peak over 127 is at most 1/127, a zero vector's scale is 1.
MAX_SCALE = 1.0
SCHEMA_SQL = (
    "CREATE TABLE IF NOT EXISTS vectors (id TEXT PRIMARY KEY, vec BLOB, scale REAL, type TEXT, "
    "project TEXT, scope TEXT, datasources TEXT, has_query INTEGER, deleted INTEGER, hash TEXT, svec BLOB)"
)
# How many columns of a row ``rows`` makes are the vectors table's; the last is the token ids.
_VECTOR_COLUMNS = 11


def create(db: sqlite3.Connection) -> None:
    """The two tables, if they are not there yet."""
    db.execute(SCHEMA_SQL)
    db.execute(TOKENS_SQL)


def embedding_text(memory: Memory) -> str:
    """What a memory means: its title, learning and description."""
    return "\n".join(filter(None, (memory.title, memory.learning, memory.description)))


def rows(
    memories: list[Memory], vectors: np.ndarray, known: dict[str, bytes] | None = None,
    tokens: list[np.ndarray] | None = None,
) -> list[tuple[Any, ...]]:
    """Table rows for these memories and their unit vectors (one per memory, same order), with
    the sentence vectors ``known`` holds (text hash -> packed vector), each ending with its
    text's distinct token ids (``tokens``, same order; packed, None when not given)."""
    import numpy as np

    known = known or {}
    packed = [pack_tokens(ids) for ids in tokens] if tokens is not None else [None] * len(memories)

    peaks = np.abs(vectors).max(axis=1)
    scales = np.where(peaks > 0, peaks / 127.0, 1.0).astype(np.float32)
    quantised = np.rint(vectors / scales[:, None]).astype(np.int8)
    out = []
    for memory, vector, scale, ids in zip(memories, quantised, scales, packed, strict=True):
        datasources = sorted({e.split(".", 1)[0] for e in memory.entities if not e.startswith("memory:")})
        out.append((
            memory.id, vector.tobytes(), float(scale), memory.type, memory.project,
            memory.scope or "project", " ".join(datasources), int(memory.query is not None),
            int(memory.is_deleted), (digest := sentences.text_hash(embedding_text(memory))), known.get(digest), ids,
        ))
    return out


def write(db: sqlite3.Connection, gone: Iterable[str], new_rows: list[tuple[Any, ...]]) -> None:
    """Delete the rows of ``gone``, then add ``new_rows`` (as ``rows`` makes them) and their
    token ids; inside the caller's transaction."""
    removed = [(m,) for m in gone]
    db.executemany("DELETE FROM vectors WHERE id = ?", removed)
    db.executemany("DELETE FROM tokens WHERE id = ?", removed)
    db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [row[:_VECTOR_COLUMNS] for row in new_rows])
    db.executemany("DELETE FROM tokens WHERE id = ?", [(row[0],) for row in new_rows if row[_VECTOR_COLUMNS] is None])
    db.executemany("INSERT OR REPLACE INTO tokens VALUES (?, ?, ?)",
                   [(row[0], row[9], row[_VECTOR_COLUMNS]) for row in new_rows if row[_VECTOR_COLUMNS] is not None])


def missing_sentences(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """(id, text hash) of the live memories whose sentence vector is not made yet, by id."""
    return db.execute("SELECT id, hash FROM vectors WHERE svec IS NULL AND deleted = 0 ORDER BY id").fetchall()


def made_sentences(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """(id, text hash) of the live memories whose sentence vector is made, by id."""
    return db.execute("SELECT id, hash FROM vectors WHERE svec IS NOT NULL AND deleted = 0 ORDER BY id").fetchall()


def still_missing(db: sqlite3.Connection, memory_ids: list[str]) -> list[tuple[str, str]]:
    """(id, text hash) of these memories whose sentence vector is not made yet, by id."""
    found = db.execute(
        f"SELECT id, hash FROM vectors WHERE svec IS NULL AND deleted = 0 AND id IN ({', '.join('?' * len(memory_ids))}) "  # noqa: S608 - placeholders only
        "ORDER BY id", memory_ids,
    ).fetchall() if memory_ids else []
    return [(m, digest) for m, digest in found]


def sentence_coverage(db: sqlite3.Connection) -> tuple[int, int]:
    """(live memories with a sentence vector, live memories)."""
    covered, total = db.execute("SELECT count(svec), count(*) FROM vectors WHERE deleted = 0").fetchone()
    return int(covered), int(total)


def write_sentences(db: sqlite3.Connection, made: list[tuple[str, str, bytes]]) -> list[str]:
    """Store (id, text hash, packed vector) for the rows whose text is still the one embedded;
    the ids written."""
    written = []
    db.execute("BEGIN")
    for memory_id, digest, blob in made:
        if db.execute("UPDATE vectors SET svec = ? WHERE id = ? AND hash = ?", (blob, memory_id, digest)).rowcount:
            written.append(memory_id)
    db.execute("COMMIT")
    return written


def sentence_cosines_by_id(db: sqlite3.Connection, vector: np.ndarray, memory_ids: list[str]) -> dict[str, float]:
    """The sentence cosine of each of these memories that has a sentence vector, read by id."""
    found = sentence_vectors_by_id(db, memory_ids)
    if not found:
        return {}
    import numpy as np

    scores = np.stack(list(found.values())) @ vector
    return dict(zip(found, scores.tolist(), strict=True))


def sentence_vectors_by_id(db: sqlite3.Connection, memory_ids: list[str]) -> dict[str, np.ndarray]:
    """The unit sentence vector of each of these memories that has one, read by id."""
    out: dict[str, np.ndarray] = {}
    for at in range(0, len(memory_ids), _BY_ID_CHUNK):
        chunk = memory_ids[at : at + _BY_ID_CHUNK]
        found = db.execute(
            f"SELECT id, svec FROM vectors WHERE svec IS NOT NULL AND id IN ({', '.join('?' * len(chunk))})", chunk  # noqa: S608 - placeholders only
        ).fetchall()
        if found:
            out.update(zip((r[0] for r in found), sentences.unpack([r[1] for r in found], SENTENCE_DIMENSIONS), strict=True))
    return out


# Given the rows that are not ``sound``, rows made again for them (those it can make).
Repair = Callable[[list[tuple[Any, ...]]], list[tuple[Any, ...]]]


def sound(row: tuple[Any, ...]) -> bool:
    """Whether a row read from the table is one ``rows`` could have written: DIMENSIONS bytes and
    a finite scale in (0, MAX_SCALE]. Anything else (a tampered or damaged manifest: a scale of
    1e308 overflows float32, NaN comes back as NULL) would skew or break every score."""
    vec, scale = row[1], row[2]
    return isinstance(vec, bytes) and len(vec) == DIMENSIONS and isinstance(scale, float) and 0.0 < scale <= MAX_SCALE


def checked(found: list[tuple[Any, ...]], repair: Repair | None) -> list[tuple[Any, ...]]:
    """``found`` (rows as ``_SELECT_ALL`` reads them) with each row that is not ``sound``
    replaced by the one ``repair`` makes for it, or left out when it makes none."""
    bad = [row for row in found if not sound(row)]
    if not bad:
        return found
    # ``repair`` makes rows as ``rows`` does: without the text hash and the token ids, as _SELECT_ALL reads them.
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


def top_by_scan(
    db: sqlite3.Connection, vector: np.ndarray, wanted: Filter, depth: int, floor: float, sentence: bool = False,
    repair: Repair | None = None,
) -> list[tuple[str, float]]:
    """``Table.top`` for a process that has not loaded the table: the rows read (``checked``) and
    scored a chunk at a time, only the best kept, so the whole table is never in memory at once
    (a search process at 100,000 memories peaked 50 MiB higher when it loaded the table)."""
    best: list[tuple[str, float]] = []
    cursor = db.execute(_SELECT_ALL)
    while rows := cursor.fetchmany(_LOAD_CHUNK):
        table = Table._read([checked(rows, repair)], len(rows))
        found = (table.sentence_top if sentence else table.top)(vector, wanted, depth, floor)
        # Rows come in id order, as a loaded table holds them: ties go to the lower id either way.
        best = sorted([*best, *found], key=lambda hit: (-hit[1], hit[0]))[:depth]
    return best


@dataclass(frozen=True)
class Filter:
    """Which memories a search may return, as field values (None: any). Deleted ones never."""

    type: str | None = None
    project: str | None = None
    scope: str | None = None
    datasource: str | None = None
    has_query: bool | None = None


@dataclass
class Table:
    """Every memory's vector in one matrix, with the filter fields as codes. The arrays have room
    to grow: rows ``[:size]`` are in use, so a warm process applies a save's rows in place."""

    ids: list[str]
    matrix: np.ndarray  # int8, one quantised unit vector per row ...
    scales: np.ndarray  # float32, ... times its row's scale
    codes: dict[str, np.ndarray]  # field -> int32 code per row
    values: dict[str, dict[str | None, int]]  # field -> value -> code
    datasources: list[str]
    has_query: np.ndarray
    live: np.ndarray
    # Sentence vectors (sentences.pack: int8, not unit length) and 1 / their length; rows
    # without one are zeros and not ``covered``.
    sentence: np.ndarray
    inverse: np.ndarray
    covered: np.ndarray
    _by_datasource: dict[str, np.ndarray] = field(default_factory=dict)
    _rows: dict[str, int] | None = None
    _blocks: Blocks = field(default_factory=Blocks)  # the sentence rows as the int8 scan reads them
    # A warm process's table (``expand``): its sentence cosines are those of the rows as
    # float32 unit vectors, as a loaded table's are those of the rows as stored, scaled after.
    expanded: bool = False

    @property
    def size(self) -> int:
        return len(self.ids)

    @classmethod
    def load(cls, db: sqlite3.Connection, repair: Repair | None = None) -> Table:
        """Every row of the table (``checked``)."""
        (count,) = db.execute("SELECT count(*) FROM vectors").fetchone()
        cursor = db.execute(_SELECT_ALL)
        return cls._read((checked(rows, repair) for rows in iter(lambda: cursor.fetchmany(_LOAD_CHUNK), [])), count)

    @classmethod
    def _read(cls, chunks: Iterable[list[Any]], count: int) -> Table:
        """A table of at most ``count`` rows, from chunks of rows as ``_SELECT_ALL`` reads them."""
        import numpy as np

        # Read a chunk of rows at a time into arrays made for all of them: the rows as Python
        # objects cost as much memory as the matrix itself (70 MB at 100,000 memories).
        matrix = np.empty((count, DIMENSIONS), dtype=np.int8)
        scales = np.empty(count, dtype=np.float32)
        codes = {name: np.empty(count, dtype=np.int32) for name in ("type", "project", "scope")}
        values: dict[str, dict[str | None, int]] = {name: {} for name in codes}
        has_query = np.empty(count, dtype=bool)
        live = np.empty(count, dtype=bool)
        sentence = np.zeros((count, SENTENCE_DIMENSIONS), dtype=np.int8)
        covered = np.zeros(count, dtype=bool)
        ids: list[str] = []
        datasources: list[str] = []
        at = 0
        for rows in chunks:
            end = min(at + len(rows), count)  # a row added since the count waits for the next load
            rows = rows[: end - at]
            matrix[at:end] = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(len(rows), DIMENSIONS)
            scales[at:end] = np.fromiter((r[2] for r in rows), dtype=np.float32, count=len(rows))
            for column, name in ((3, "type"), (4, "project"), (5, "scope")):
                seen = values[name]
                codes[name][at:end] = np.fromiter((seen.setdefault(r[column], len(seen)) for r in rows),
                                                  dtype=np.int32, count=len(rows))
            has_query[at:end] = np.fromiter((r[7] for r in rows), dtype=bool, count=len(rows))
            live[at:end] = np.fromiter((not r[8] for r in rows), dtype=bool, count=len(rows))
            for row, r in enumerate(rows, at):
                if r[9] is not None:
                    sentence[row] = np.frombuffer(r[9], dtype=np.int8)
                    covered[row] = True
            ids.extend(r[0] for r in rows)
            datasources.extend(r[6] for r in rows)
            at = end
            if at == count:
                break
        size = len(ids)  # fewer when rows went away since the count
        return cls(
            ids=ids,
            matrix=matrix[:size],
            scales=scales[:size],
            codes={name: array[:size] for name, array in codes.items()},
            values=values,
            datasources=datasources,
            has_query=has_query[:size],
            live=live[:size],
            sentence=sentence[:size],
            inverse=_inverse_norms(sentence[:size]),
            covered=covered[:size],
        )

    @classmethod
    def empty(cls) -> Table:
        db = sqlite3.connect(":memory:")
        try:
            db.execute(SCHEMA_SQL)
            return cls.load(db)
        finally:
            db.close()

    def apply(self, gone: Iterable[str], new_rows: list[tuple[Any, ...]]) -> None:
        """The table's change by ``write(db, gone, new_rows)``, made in memory."""
        import numpy as np

        rows = self._row_index()
        for memory_id in gone:
            if memory_id in rows:
                self.live[rows[memory_id]] = False
        for memory_id, vec, scale, type_, project, scope, datasources, has_query, deleted, _hash, svec, *_ids in new_rows:
            row = rows.get(memory_id)
            if row is None:
                row = rows[memory_id] = self.size
                self._grow(row + 1)
                self.ids.append(memory_id)
                self.datasources.append(datasources)
            if self.matrix.dtype == np.int8:
                self.matrix[row] = np.frombuffer(vec, dtype=np.int8)
                self.scales[row] = scale
            else:  # expanded
                self.matrix[row] = np.frombuffer(vec, dtype=np.int8).astype(np.float32) * scale
                self.scales[row] = 1.0
            for name, value in (("type", type_), ("project", project), ("scope", scope)):
                self.codes[name][row] = self.values[name].setdefault(value, len(self.values[name]))
            self.datasources[row] = datasources
            self.has_query[row] = bool(has_query)
            self.live[row] = not deleted
            self._set_sentence(row, svec)
        self._by_datasource.clear()

    def set_sentences(self, made: Iterable[tuple[str, bytes]]) -> None:
        """Sentence vectors made since the table was loaded, by memory id."""
        rows = self._row_index()
        for memory_id, blob in made:
            if memory_id in rows:
                self._set_sentence(rows[memory_id], blob)

    def _set_sentence(self, row: int, blob: bytes | None) -> None:
        import numpy as np

        self._blocks.forget(row)
        if blob is None:
            self.sentence[row], self.inverse[row], self.covered[row] = 0, 0.0, False
            return
        packed = np.frombuffer(blob, dtype=np.int8)
        self.sentence[row] = packed
        self.inverse[row] = _inverse_norms(packed[None, :])[0]
        self.covered[row] = True

    def coverage(self) -> tuple[int, int]:
        """(live memories with a sentence vector, live memories)."""
        live = self.live[: self.size]
        return int((self.covered[: self.size] & live).sum()), int(live.sum())

    def _grow(self, size: int) -> None:
        import numpy as np

        if size <= len(self.live):
            return
        room = max(size, len(self.live) + len(self.live) // 2 + 16)

        def grown(array: np.ndarray) -> np.ndarray:
            out = np.zeros((room, *array.shape[1:]), dtype=array.dtype)
            out[: len(array)] = array
            return out

        self.matrix = grown(self.matrix)
        self.scales = grown(self.scales)
        self.codes = {name: grown(array) for name, array in self.codes.items()}
        self.has_query = grown(self.has_query)
        self.live = grown(self.live)
        self.sentence = grown(self.sentence)
        self.inverse = grown(self.inverse)
        self.covered = grown(self.covered)

    def _row_index(self) -> dict[str, int]:
        if self._rows is None:
            self._rows = {memory_id: row for row, memory_id in enumerate(self.ids)}
        return self._rows

    def mask(self, wanted: Filter) -> np.ndarray:
        n = self.size
        mask = self.live[:n].copy()
        for name in ("type", "project", "scope"):
            value = getattr(wanted, name)
            if value:
                mask &= self.codes[name][:n] == self.values[name].get(value, -1)
        if wanted.has_query is not None:
            mask &= self.has_query[:n] if wanted.has_query else ~self.has_query[:n]
        if wanted.datasource:
            mask &= self._rooted_at(wanted.datasource)
        return mask

    def _rooted_at(self, datasource: str) -> np.ndarray:
        import numpy as np

        found = self._by_datasource.get(datasource)
        if found is None:
            found = np.fromiter((datasource in d.split() for d in self.datasources), dtype=bool, count=len(self.ids))
            self._by_datasource[datasource] = found
        return found

    def expand(self) -> None:
        """Hold the vectors as scaled float32 (100 MB at 100,000 memories, not 26): a warm
        process scores a full scan without converting each row again (2 ms of about 10)."""
        import numpy as np

        if self.matrix.dtype != np.float32:
            self.matrix = self.matrix.astype(np.float32) * self.scales[:, None]
            self.scales = np.ones_like(self.scales)
            # The sentence vectors stay signed bytes (38 MB at 100,000, not 154 as float32):
            # their scan reads the bytes (shortlist.py), and the few rows it keeps, and the
            # candidates', are made float32 unit vectors when scored.
            self.expanded = True
            # What its first own save (50 ms at 100,000) and scan would make: room, rows by id, blocks.
            self._grow(len(self.live) + 1)
            self._row_index()
            self._blocks.fill(self.sentence[: self.size])

    def unit_vectors(self, rows: list[int] | None = None) -> np.ndarray:
        """These rows' vectors (None: every row in use) as float32."""
        import numpy as np

        picked = self.matrix[: self.size] if rows is None else self.matrix[rows]
        scales = self.scales[: self.size] if rows is None else self.scales[rows]
        return picked.astype(np.float32) * scales[:, None]

    def cosines(self, vector: np.ndarray, memory_ids: list[str]) -> dict[str, float]:
        """The cosine between ``vector`` and each of these memories that has a vector."""
        index = self._row_index()
        rows = [(m, index[m]) for m in memory_ids if m in index]
        if not rows:
            return {}
        scores = self.unit_vectors([row for _m, row in rows]) @ vector
        return {m: float(score) for (m, _row), score in zip(rows, scores, strict=True)}

    def _scan(self, vector: np.ndarray) -> np.ndarray:
        """The cosine of ``vector`` with every row in use, by the static vectors. Scored a chunk
        of rows at a time (float32: 8 MB a chunk, not 100 MB); a large table in two halves, one
        in a thread of its own, since reading every row is bound by memory and two cores read it
        faster than one (3.9 ms against 6 at 100,000 memories). The halves end on chunk
        boundaries: the same sums."""
        import numpy as np

        matrix, scales = self.matrix, self.scales
        scores = np.empty(self.size, dtype=np.float32)

        def score(start: int, end: int) -> None:
            for at in range(start, end, _SCORE_CHUNK):
                stop = min(at + _SCORE_CHUNK, end)
                np.matmul(matrix[at:stop].astype(np.float32, copy=False), vector, out=scores[at:stop])

        half = self.size // 2 // _SCORE_CHUNK * _SCORE_CHUNK
        if self.size < _SPLIT_ROWS:
            score(0, self.size)
        else:
            first = _helper().submit(score, 0, half)
            score(half, self.size)
            first.result()
        scores *= scales[: self.size]
        return scores

    def top(self, vector: np.ndarray, wanted: Filter, depth: int, floor: float) -> list[tuple[str, float]]:
        """The ``depth`` memories closest in meaning to ``vector`` (cosine at least ``floor``)."""
        import numpy as np

        if not self.ids:
            return []
        scores = self._scan(vector.astype(np.float32, copy=False))
        scores[~self.mask(wanted)] = -2.0
        depth = min(depth, len(self.ids))
        best = np.argpartition(-scores, depth - 1)[:depth]
        best = best[np.lexsort((best, -scores[best]))]
        return [(self.ids[i], float(scores[i])) for i in best if scores[i] >= floor]

    def sentence_cosines(self, vector: np.ndarray, memory_ids: list[str]) -> dict[str, float]:
        """The sentence cosine of each of these memories that has a sentence vector."""
        import numpy as np

        index = self._row_index()
        rows = [(m, index[m]) for m in memory_ids if m in index and self.covered[index[m]]]
        if not rows:
            return {}
        scores = self._sentence_scores(np.array([row for _m, row in rows], dtype=np.int64), vector)
        return {m: float(score) for (m, _row), score in zip(rows, scores, strict=True)}

    def sentence_vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        """The unit sentence vector of each of these memories that has one: the stored bytes
        made unit vectors as ``sentence_vectors_by_id`` makes them."""
        index = self._row_index()
        rows = [(m, index[m]) for m in memory_ids if m in index and self.covered[index[m]]]
        if not rows:
            return {}
        unit = sentences.unpack([self.sentence[row].tobytes() for _m, row in rows], SENTENCE_DIMENSIONS)
        return {m: unit[n] for n, (m, _row) in enumerate(rows)}

    def _sentence_scores(self, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
        import numpy as np

        picked = self.sentence[rows].astype(np.float32)
        if self.expanded:
            # The float32 unit vectors an expanded table once held, made from the same bytes
            # by the same product: the same cosines, to the bit.
            return (picked * self.inverse[rows][:, None]) @ vector
        return (picked @ vector) * self.inverse[rows]

    def closeness(self, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """These rows' sentence cosines in float64, each summed on its own: a row's score does
        not depend on which rows are scored beside it (a float32 matrix product's last bit
        does), so the scan keeps the same memories however many it scores, and memories with
        the same vector tie exactly."""
        import numpy as np

        return (self.sentence[rows] * vector.astype(np.float64)).sum(axis=1) * self.inverse[rows].astype(np.float64)

    def sentence_top(self, vector: np.ndarray, wanted: Filter, depth: int, floor: float) -> list[tuple[str, float]]:
        """``top`` over the sentence vectors (memories without one are left out), by their
        ``closeness``, ties to the lower row. Every row is scanned in int8 (shortlist.py); only
        the rows whose approximate cosine is within twice its bound of the ``depth``-th best
        (and of ``floor``) can be among the best, and only they are scored."""
        import numpy as np

        if not self.ids:
            return []
        n = self.size
        floor = max(floor, -1.0)
        question = vector.astype(np.float32, copy=False)
        products = Products(question)
        approximate = products.scores(self.sentence[:n], self.inverse[:n], self._blocks)
        approximate[~(self.mask(wanted) & self.covered[:n])] = -np.inf
        depth = min(depth, n)
        # At least ``depth`` rows score at least the depth-th best approximation less the slack.
        cut = -np.partition(-approximate, depth - 1)[depth - 1] - 2 * products.slack
        pool = np.flatnonzero(approximate >= max(cut, floor - products.slack))
        scores = self.closeness(pool, question)
        best = np.lexsort((pool, -scores))[:depth]
        return [(self.ids[pool[i]], float(scores[i])) for i in best if scores[i] >= floor]


def _inverse_norms(matrix: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(matrix.astype(np.float32), axis=1)
    return np.where(norms > 0, 1.0 / np.maximum(norms, 1e-9), 0.0).astype(np.float32)
