"""A bulk write's vectors left to the background (docs/search.md, "A bulk sync leaves all the
vectors to the background"): the first command on a new clone writes the words and entities of
every memory and no vectors row; the filler makes the rows afterwards (``fill_static``), as the
write would have made them. ``Meaning`` (and so ``Index``) is made on this class."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ..core.memory import Memory
from . import encoder, table, vectors
from .writing import BULK_THRESHOLD

# The manifest state's flag of a bulk write that left its memories' vectors to ``fill_static``.
PENDING = "pending"
# Memories whose vectors ``fill_static`` makes at a time, under the guard (the KB lock): about
# 0.2 s of CPU, which a save beside it waits for at most.
_STATIC_BATCH = 256
# The indexed memories (a file row read, no problem row) without a vectors row.
_PENDING = ("FROM files f WHERE f.hash IS NOT NULL AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.id = f.id) "
            "AND NOT EXISTS (SELECT 1 FROM problems p WHERE p.id = f.id)")


def pending_ids(db: sqlite3.Connection, limit: int, after: str = "") -> list[str]:
    """The first ``limit`` ids after ``after``, in order, of the indexed memories that have no
    row yet (a bulk write left their vectors to the background)."""
    return [m for (m,) in db.execute(f"SELECT f.id {_PENDING} AND f.id > ? ORDER BY f.id LIMIT ?", (after, limit))]  # noqa: S608 - constants only


def pending_count(db: sqlite3.Connection) -> int:
    """How many indexed memories have no row yet."""
    return int(db.execute(f"SELECT count(*) {_PENDING}").fetchone()[0])  # noqa: S608 - constants only


def rows_by_id(db: sqlite3.Connection, memory_ids: list[str]) -> list[tuple[Any, ...]]:
    """The vectors table's rows of these memories, as ``vectors.write`` takes them."""
    found: list[tuple[Any, ...]] = []
    for at in range(0, len(memory_ids), 500):  # SQLite's old limit of 999 parameters
        chunk = memory_ids[at : at + 500]
        found += db.execute(
            "SELECT id, vec, scale, type, project, scope, datasources, has_query, deleted, hash, svec "  # noqa: S608
            f"FROM vectors WHERE id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
    return found


class Deferred:
    """The deferred half of ``Index``'s vectors (its state is made in ``Index.__init__``)."""

    background_vectors: bool
    _meaning: table.Table | None
    _meaning_key: Any
    # How many memories had no vectors row when this process last looked (``_absorb_static``).
    _pending_seen = 0
    _read_state: Callable[[], dict[str, Any] | None]
    _write_state: Callable[[dict[str, Any]], None]
    _db: Callable[[], sqlite3.Connection]
    _from_manifest: Callable[..., Any]
    stored: Callable[[list[str]], dict[str, dict[str, Any]]]
    vector_rows: Callable[[list[Memory]], list[tuple[Any, ...]]]
    want_sentences: Callable[[], None]
    content_key: Callable[[], Any]
    vectors_loaded: Callable[[], bool]
    warm: bool

    def defer(self, memories: list[Memory], changed: int) -> bool:
        """Whether this write leaves these memories' vectors to the filler, started here: a
        bulk write (its worker processes index while the filler waits for the KB lock), in a
        process that would start one. Else the caller makes them before its commit."""
        deferred = bool(memories) and changed > BULK_THRESHOLD and self.defers_vectors()
        if deferred:
            self.want_sentences()  # it waits for the lock, and finds the state flagged then
        return deferred

    def pending_flag(self, state: dict[str, Any], deferred: bool) -> dict[str, bool]:
        """The new state's flag: some memories' vectors are still to be made (``fill_static``)."""
        return {PENDING: True} if deferred or state.get(PENDING) else {}

    def defers_vectors(self) -> bool:
        """Whether a bulk write leaves its memories' vectors (static, sentence, token ids) to
        the background filler that makes the sentence vectors (``fill_static``): when
        ``want_sentences`` would start one."""
        return self.background_vectors and not os.environ.get("SLAYER_KB_NO_FILLER") and encoder.installed()

    def static_pending(self) -> int:
        """How many indexed memories have no vectors row yet (a bulk write left them to
        ``fill_static``); 0 at the cost of reading the state when none was left."""
        state = self._read_state()
        if not state or not state.get(PENDING):
            return 0
        return self._from_manifest(pending_count, 0)

    def fill_static(
        self, guard: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
        stop: Callable[[], bool] = lambda: False,
    ) -> int:
        """Make the vectors rows a bulk write left out (``static_pending``), from the indexed
        documents, a batch at a time under ``guard``: each batch is read, made and written in one
        hold, so no save changes a memory between its read and its row. The rows are those the
        write would have made. How many rows were made."""
        state = self._read_state()
        if not state or not state.get(PENDING):
            return 0  # nothing left out: ``stop`` is not asked
        made = 0
        after = ""  # the ids come in order: each batch looks past the last, not from the start
        while not stop():
            with guard():
                state = self._read_state()
                if not state or not state.get(PENDING):
                    return made
                db = self._db()
                try:
                    ids = pending_ids(db, _STATIC_BATCH, after)
                    if not ids and after:
                        after = ""  # once more from the start: a write meanwhile may have left some
                        continue
                    if not ids:
                        self._write_state({k: v for k, v in state.items() if k != PENDING})
                        return made
                    after = ids[-1]
                    docs = self.stored(ids)
                    rows = self.vector_rows([Memory(**docs[m]["data"]) for m in ids if m in docs])
                    if not rows:
                        return made  # meaning is off: nothing to make them with
                    db.execute("BEGIN")
                    vectors.write(db, (), rows)
                    db.execute("COMMIT")
                finally:
                    db.close()
                if self._meaning is not None and self._meaning_key == self.content_key():
                    self._meaning.apply((), rows)
                made += len(rows)
        return made

    def pending_now(self) -> int:
        """``static_pending``, the rows made since the last look taken into a held table."""
        pending = self.static_pending()
        if pending != self._pending_seen:
            self._absorb_static(pending)
        return pending

    def _absorb_static(self, pending: int) -> None:
        """Take into the table this process holds the rows ``fill_static`` made in another
        process (the detached filler beside a warm server) since it looked last: the index's
        state does not change with them, so the table would not be loaded again."""
        self._pending_seen = pending
        if self._meaning is None or not (self.warm or self.vectors_loaded()):
            return
        held = set(self._meaning.ids)
        none: list[str] = []
        ids = self._from_manifest(lambda db: [m for (m,) in db.execute("SELECT id FROM vectors")], none)
        new = [m for m in ids if m not in held]
        if new:
            self._meaning.apply((), self._from_manifest(lambda db: rows_by_id(db, new), []))

