"""A warm process's meaning vectors in memory, and the scans of every row.

A warm process (the server, MCP) loads the manifest's vectors table (vectors.py) once as a
``Table`` and holds the static vectors as float32, the sentence vectors as signed bytes
(shortlist.py scans them); a save's rows are applied to it in place. Any other process scans the
manifest a chunk of rows at a time (``top_by_scan``), keeping only the best, so it never holds
the whole table (26 MB of signed bytes at 100,000 memories); one that never scans (a save, a
``get``, a search of one or two words) never reads it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import sentences, vectors
from .embedding import DIMENSIONS
from .encoder import DIMENSIONS as SENTENCE_DIMENSIONS
from .helper import helper as _helper
from .shortlist import Blocks, Products, Scan

if TYPE_CHECKING:
    import numpy as np

# Rows read at a time when the table is loaded, or scanned by a process that does not load it.
_LOAD_CHUNK = 4096
_SCORE_CHUNK = 8192
# A full scan of at least this many rows is split between two threads (``Table._scan``).
_SPLIT_ROWS = 32_768


def top_by_scan(
    db: sqlite3.Connection, vector: np.ndarray, wanted: Filter, depth: int, floor: float, sentence: bool = False,
    repair: vectors.Repair | None = None,
) -> list[tuple[str, float]]:
    """``Table.top`` for a process that has not loaded the table: the rows read (``checked``) and
    scored a chunk at a time, only the best kept, so the whole table is never in memory at once
    (a search process at 100,000 memories peaked 50 MiB higher when it loaded the table)."""
    best: list[tuple[str, float]] = []
    cursor = db.execute(vectors.SELECT_ALL)
    while rows := cursor.fetchmany(_LOAD_CHUNK):
        table = Table.from_chunks([vectors.checked(rows, repair)], len(rows))
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
    # ``coverage`` while no row changes: every question asks it (two sums over every row).
    _coverage: tuple[int, int] | None = None
    # The sentence rows as the int8 scan reads them (shortlist.py), kept while no row changes.
    _blocks: Blocks = field(default_factory=Blocks)
    # A warm process's table (``expand``): its sentence cosines are those of the rows as
    # float32 unit vectors, as a loaded table's are those of the rows as stored, scaled after.
    expanded: bool = False
    # Live rows left out because their static vector is pending (``vectors.pending``): they
    # count in the KB's size, not in what meaning covers.
    pending: int = 0
    # The memories whose sentence vector here is a stand-in's (``vectors.stand_ins``).
    standing: set[str] = field(default_factory=set)

    @property
    def size(self) -> int:
        return len(self.ids)

    @classmethod
    def load(cls, db: sqlite3.Connection, repair: vectors.Repair | None = None) -> Table:
        """Every row of the manifest's table (``vectors.checked``)."""
        (count,) = db.execute("SELECT count(*) FROM vectors").fetchone()
        cursor = db.execute(vectors.SELECT_ALL)
        table = cls.from_chunks((vectors.checked(rows, repair) for rows in iter(lambda: cursor.fetchmany(_LOAD_CHUNK), [])), count)
        table.pending = vectors.coverage(db)[2]
        table.standing = vectors.stand_ins(db)
        return table

    @classmethod
    def from_chunks(cls, chunks: Iterable[list[Any]], count: int) -> Table:
        """A table of at most ``count`` rows, from chunks of rows as ``vectors.SELECT_ALL`` reads them."""
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
            db.execute(vectors.SCHEMA_SQL)
            db.execute(vectors.STAND_IN_SQL)
            return cls.load(db)
        finally:
            db.close()

    def apply(self, gone: Iterable[str], new_rows: list[tuple[Any, ...]]) -> None:
        """The table's change by ``vectors.write(db, gone, new_rows)``, made in memory."""
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
            self.standing.discard(memory_id)  # a row written again is final or lacking (vectors.write)
        self._by_datasource.clear()
        self._coverage = None

    def set_sentences(self, made: Iterable[tuple[str, bytes]], standing: Iterable[str] = ()) -> None:
        """Sentence vectors made since the table was loaded, by memory id; ``standing``: those of
        them that are stand-ins (the rest are final)."""
        rows = self._row_index()
        stand_ins = set(standing)
        for memory_id, blob in made:
            if memory_id in rows:
                self._set_sentence(rows[memory_id], blob)
                if memory_id in stand_ins:
                    self.standing.add(memory_id)
                else:
                    self.standing.discard(memory_id)

    def lacking(self) -> list[str]:
        """The live memories without a sentence vector in this table."""
        import numpy as np

        rows = np.flatnonzero(self.live[: self.size] & ~self.covered[: self.size])
        return [self.ids[row] for row in rows.tolist()]

    def _set_sentence(self, row: int, blob: bytes | None) -> None:
        import numpy as np

        self._blocks.forget(row)
        self._coverage = None
        if blob is None:
            self.sentence[row] = 0
            self.inverse[row] = 0.0
            self.covered[row] = False
            return
        packed = np.frombuffer(blob, dtype=np.int8)
        self.sentence[row] = packed
        self.inverse[row] = _inverse_norms(packed[None, :])[0]
        self.covered[row] = True

    def coverage(self) -> tuple[int, int]:
        """(live memories with a sentence vector, live memories)."""
        if self._coverage is None:
            live = self.live[: self.size]
            self._coverage = int((self.covered[: self.size] & live).sum()), int(live.sum())
        return self._coverage

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
            # What its first own save would make (50 ms at 100,000): room to grow, rows by id;
            # and what its first scan would (shortlist.Blocks).
            self._grow(len(self.live) + 1)
            self._row_index()
            self._blocks.fill(self.sentence[: self.size], self.inverse[: self.size])

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
        made unit vectors as ``vectors.sentence_vectors_by_id`` makes them."""
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

    def sentence_scan(self, wanted: Filter, depth: int) -> Scan:
        """The int8 scan of ``sentence_top`` over the rows ``wanted`` allows, not started: a
        search hands it to the helper thread with the question's encoding (retrieval.py)."""
        n = self.size
        return Scan(self.sentence[:n], self.inverse[:n], self.mask(wanted) & self.covered[:n], min(depth, n), self._blocks)

    def sentence_top(self, vector: np.ndarray, wanted: Filter, depth: int, floor: float, scan: Scan | None = None) -> list[tuple[str, float]]:
        """``top`` over the sentence vectors (memories without one are left out), by their
        ``closeness``, ties to the lower row. Every row is scanned in int8 (shortlist.py); only
        the rows whose approximate cosine is within twice its bound of the ``depth``-th best
        (and of ``floor``) can be among the best, and only they are scored. ``scan``: this
        table's ``sentence_scan`` for ``wanted`` and ``depth``, perhaps begun in another thread."""
        import numpy as np

        if not self.ids:
            return []
        floor = max(floor, -1.0)
        question = vector.astype(np.float32, copy=False)
        products = Products(question)
        fresh = scan is None or len(scan.matrix) != self.size or scan.blocks is not self._blocks
        if fresh or scan is None:
            scan = self.sentence_scan(wanted, depth)
        scan.start(products)  # (kept as it is when the thread that shared it started it)
        if fresh:
            scan.split()
        approximate, best = scan.finish()
        # At least ``depth`` rows score at least the depth-th best approximation less the slack.
        pool = np.flatnonzero(approximate >= max(best - 2 * products.slack, floor - products.slack))
        scores = self.closeness(pool, question)
        best_rows = np.lexsort((pool, -scores))[: min(depth, self.size)]
        return [(self.ids[pool[i]], float(scores[i])) for i in best_rows if scores[i] >= floor]


def _inverse_norms(matrix: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(matrix.astype(np.float32), axis=1)
    return np.where(norms > 0, 1.0 / np.maximum(norms, 1e-9), 0.0).astype(np.float32)
