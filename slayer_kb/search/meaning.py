"""The meaning vectors as the index keeps them (vectors.py holds their rows, table.py a
process's table of them in memory): the model that makes them, a memory's rows, the cosines a
search asks for, read by id or from the table a process loaded. ``Index`` has these as a mixin;
the rows are written with the documents in index.py, in the same SQLite transaction as the file
rows."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh import index as windex

from ..core.memory import Memory
from ..store.listing import Sig
from . import embedding, encoder, filler, manifest, sentences, switches, table, tokens, vectors

if TYPE_CHECKING:
    import numpy as np


T = TypeVar("T")

# The index state's mark that rows wait for vectors a process with search by meaning turned off
# did not make (``Meaning.vector_rows``), until a process that has it makes them (``make_left``).
LEFT = "vectors_left"

# What reading a damaged vectors table raises: SQLite's errors, and a row whose vector is not 256
# bytes or whose scale is missing (numpy's ValueError and TypeError).
DAMAGED = (sqlite3.Error, ValueError, TypeError)
# The units' packed vectors of the texts searched lately, by the text's hash: a warm process
# meets the same memories again and need not split, hash and look up their sentences each time
# (about 1.7 KB a memory).
_UNITS_KEPT = 10_000
_units_seen: OrderedDict[str, bytes] = OrderedDict()
# The hashes the cache held no units for, under the cache's stamp then (``sentences.version``):
# a memory whose units are not made (yet) was looked up again by every search that ranked it
# (30 hashes at 100,000 memories: an SQLite query on the request's thread each time). Any write
# to the cache changes the stamp, and the misses are forgotten.
_units_absent: tuple[Any, set[str]] = (None, set())


def forget_units() -> None:
    """Forget the units and misses remembered above: they outlive a change of the cache they
    came from, so a process that changes ``SLAYER_KB_CACHE`` (the tests, one cache each) reads
    the new one's alone."""
    global _units_absent
    _units_seen.clear()
    _units_absent = (None, set())


class Meaning:
    """The meaning half of ``Index`` (its state is made in ``Index.__init__``)."""

    root: Path
    dir: Path
    warm: bool
    # Whether a memory indexed or searched without a sentence vector starts the detached filler
    # (filler.py). Off in a process that makes them itself: the warm server, the filler, reindex.
    background_vectors = True
    # ``vector_rows`` made rows lacking a sentence vector: the filler is started once they are
    # committed (``rows_committed``), not before.
    _lacking = False
    # ``vector_rows`` made rows with no vector at all, search by meaning being off here (``LEFT``).
    _left = False
    # A warm server while its write process commits (daemon/writer.py): reads use the table as
    # it is, not one loaded again from the index the write is changing; ``take_in`` ends it.
    hold_table = False
    _indexed: dict[str, Sig]
    _scanned: bool
    _meaning: table.Table | None
    _meaning_key: Any
    # Each thread's kept connection for ``_from_manifest``'s reads (``_manifest_reader``).
    _readers: threading.local
    stored: Callable[[list[str]], dict[str, dict[str, Any]]]
    _read_state: Callable[[], dict[str, Any] | None]
    _db: Callable[[], sqlite3.Connection]
    invalidate: Callable[..., None]
    fill_static: Callable[..., int]

    def embedder(self) -> embedding.Embedder | embedding.Unavailable:
        return embedding.load()

    def meaning_status(self) -> str:
        """"on (<model>)" and how much of the KB the sentence vectors cover, or why the sentence
        encoder is off when its model is damaged; or why search by meaning is off."""
        model = self.embedder()
        if not isinstance(model, embedding.Embedder):
            return str(model)
        status = f"on ({model.key})"
        present = encoder.model_file()  # never hashed here: a failed check is remembered
        if isinstance(present, encoder.Unavailable):
            return f"{status}; {present}" if present.damaged else status
        covered, total, _pending, standing = self.coverage()
        them = "a stand-in until the build replaces it" if standing == 1 else "stand-ins until the build replaces them"
        stand_ins = f" ({standing} of them {them})" if standing else ""
        return f"{status}; sentence vectors ({encoder.MODEL_KEY}) cover {covered} of {total} memories{stand_ins}"

    def sentence_problem(self) -> str | None:
        """Why the sentence vectors some memories lack cannot be made, in words with the fix,
        as a search says it (retrieval.py): a model file that is not the pinned one, or that
        does not load. None when every memory has one, when they can be made, or when the
        encoder is off by choice (not installed, turned off by the environment)."""
        covered, total = self.sentence_coverage()
        if covered == total:
            return None
        present = encoder.model_file()
        if isinstance(present, encoder.Unavailable):
            return str(present) if present.damaged else None
        model = encoder.load()  # loaded, or refused, already by the pass that lacked them
        return str(model) if isinstance(model, encoder.Unavailable) else None

    def vector_key(self) -> str | None:
        """What the stored vectors were made with, the static ones and the sentence ones (a
        manifest's sentence vectors made another way are made again); None when meaning search
        is off."""
        key = embedding.key()
        # The layout's mark: a table whose rows hashed relaid texts as any other is made again
        # once (its static vectors; the sentence ones from the cache but the relaid texts').
        return f"{key} + {encoder.MODEL_KEY} + {sentences.RELAID}" if key else None

    def defers_static(self) -> bool:
        """Whether a bulk write here leaves the static vectors to the filler that makes the
        sentence vectors (``want_sentences``), where one will follow; the warm server and its
        write process make them with the words (a one-shot ``reindex`` after the rebuild)."""
        return (self.background_vectors and not switches.filler_off() and encoder.installed()
                and isinstance(self.embedder(), embedding.Embedder))

    def vector_rows(self, memories: list[Memory], static: bool = True) -> list[tuple[Any, ...]]:
        """The vectors table's rows for these memories ([] when no model is installed; rows
        with no vector when this process has search by meaning turned off: ``make_left``);
        without ``static``, their static vectors and token ids pending (``fill_static``)."""
        if not memories:  # a check that re-read files holding their bytes: no model loaded (~0.1 s)
            return []
        model = self.embedder()
        if embedding.turned_off() and embedding.key() is not None:
            # Off for this process alone: the rows' vectors are left to the next process that
            # has it, never dropped (another process's searches use them) nor made here.
            self._left = True
            return vectors.rows(memories, None)
        if not isinstance(model, embedding.Embedder):
            return []
        out: list[tuple[Any, ...]] = []
        for at in range(0, len(memories), 2000):
            chunk = memories[at : at + 2000]
            texts = [vectors.embedding_text(m) for m in chunk]
            # Sentence vectors made before for the same texts (here, in another clone, before a
            # branch switch or a renumbering): never made twice. The rest are made off this path.
            if encoder.installed():
                hashes = [sentences.text_hash(t) for t in texts]
                known = sentences.lookup(encoder.MODEL_KEY, hashes)
                if len(known) < len(set(hashes)):
                    self._lacking = True
            else:
                known = {}
            if not static:
                self._lacking = True
                out.extend(vectors.rows(chunk, None, known))
                continue
            made, tokens = model.embed_with_tokens(texts)
            out.extend(vectors.rows(chunk, made, known, tokens))
        return out

    def note_left(self, state: dict[str, Any]) -> bool:
        """Mark ``state`` (about to be written) when ``vector_rows`` left rows without vectors;
        whether it did."""
        left, self._left = self._left, False
        if left:
            state[LEFT] = True
        return left

    def vectors_left(self, state: dict[str, Any]) -> bool:
        """Whether ``state`` says rows wait for vectors that this process can make."""
        return bool(state.get(LEFT)) and isinstance(self.embedder(), embedding.Embedder)

    def make_left(self, state: dict[str, Any]) -> bool:
        """Make the vectors rows were left without (``vector_rows``) when this process can: the
        static ones here (0.3 ms a memory), the sentence ones by the filler, from the vector
        cache when it holds them; ``state`` is no longer marked. Whether it was."""
        if not self.vectors_left(state):
            return False
        # Not under the filler's batch lock: a filler's pass holds it while it waits for the KB
        # lock or the server's turn, which the command running this holds. A chunk both make is
        # written once (``vectors.write_static`` fills only rows still pending).
        self.fill_static(batched=False)
        del state[LEFT]
        self.want_sentences()
        return True

    def rows_committed(self) -> None:
        """The rows ``vector_rows`` made are committed: start the filler if some lack a sentence
        vector. Only now: a filler that finishes looks at the index once more after it lets go
        of its lock, and a save that found the lock held must have committed its rows by then,
        or they would wait for the next command."""
        if self._lacking:
            self._lacking = False
            self.want_sentences()

    def want_sentences(self) -> None:
        """Some memories lack a sentence vector: have a detached process make them, unless this
        process makes them itself, another process already does, or ``SLAYER_KB_NO_FILLER`` is
        set (then only the warm server and ``reindex`` make them)."""
        if self.background_vectors and not switches.filler_off() and encoder.installed():
            filler.start(self.root)

    def sentence_coverage(self) -> tuple[int, int]:
        """(live memories with a final sentence vector: not a stand-in's, live memories)."""
        covered, total, _pending, standing = self.coverage()
        return covered - standing, total

    def coverage(self) -> tuple[int, int, int, int]:
        """(live memories with a sentence vector, live memories, those of them whose static
        vector is pending: not found by meaning at all yet, those whose sentence vector is a
        stand-in's: filling.py)."""
        if self.warm or self.vectors_loaded():
            table = self.meaning()
            covered, total = table.coverage()
            # Another process (the detached filler) may have made some since this one loaded
            # the table; the warm server's thread takes in its own.
            if (covered < total or table.pending or table.standing) and (self.background_vectors or not self.warm):
                now = self._from_manifest(vectors.coverage, (0, 0, 0, 0))
                if now[0] > covered or now[2] < table.pending or now[3] < len(table.standing):
                    self.absorb_sentences()
                table = self.meaning()
                covered, total = table.coverage()
            return covered, total + table.pending, table.pending, len(table.standing)
        return self._from_manifest(vectors.coverage, (0, 0, 0, 0))

    def absorb_sentences(self) -> None:
        """Take into the table this process holds the sentence vectors another process wrote,
        stand-ins and the final vectors that replaced them, and the static vectors it made
        (``fill_static``): the table is loaded again with them."""
        if self._meaning is None:
            return
        if self._meaning.pending and self._from_manifest(vectors.coverage, (0, 0, 0, 0))[2] < self._meaning.pending:
            self._meaning, self._meaning_key = None, None
            return
        # Only the rows this table lacks: a filler only fills rows whose sentence vector is
        # missing, and a row another write replaced comes with its take-in or a reload. Setting
        # every row again (a warm server does this after each save while a detached filler
        # runs) cost 50 ms at 5,000 memories, under the server's turn and view, and made every
        # shortlist block again at the next search.
        lacking = self._meaning.lacking()
        if not lacking and not self._meaning.standing:
            return
        # And the stand-ins replaced since: only their rows are read again. Those it lacked
        # may be stand-ins: the list says which, read with the vectors in one snapshot.
        held = self._meaning.standing
        nothing: tuple[set[str], list[tuple[str, bytes]]] = (set(), [])
        standing, made = self._from_manifest(lambda db: vectors.stood_sentences(db, lacking, held), nothing)
        if made:
            self._meaning.set_sentences(made, standing)

    def sentence_cosines(self, vector: np.ndarray, memory_ids: list[str]) -> dict[str, float]:
        """``cosines`` by the sentence vectors, for the memories that have one."""
        if self.warm or self.vectors_loaded():
            return self.meaning().sentence_cosines(vector, memory_ids)
        return self._from_manifest(lambda db: vectors.sentence_cosines_by_id(db, vector, memory_ids), {})

    def sentence_vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        """The unit sentence vectors (float32) of these memories that have one."""
        if self.warm or self.vectors_loaded():
            return self.meaning().sentence_vectors(memory_ids)
        return self._from_manifest(lambda db: vectors.sentence_vectors_by_id(db, memory_ids), {})

    def sentence_nearest(self, vector: np.ndarray, wanted: table.Filter, depth: int, floor: float, scan: table.Scan | None = None) -> list[tuple[str, float]]:
        """``nearest`` by the sentence vectors, among the memories that have one (``scan``: ``Index.sentence_scan``'s)."""
        if self.warm or self.vectors_loaded():
            return self.meaning().sentence_top(vector, wanted, depth, floor, scan)
        return self._from_manifest(lambda db: table.top_by_scan(db, vector, wanted, depth, floor, sentence=True, repair=self._repaired), [])

    def unit_cosines(self, vector: np.ndarray, texts: dict[str, str]) -> dict[str, float]:
        """Memory id -> the best cosine between ``vector`` and one of its text's ``spans.units``,
        for the memories whose units are in the sentence cache (none: a text of one sentence,
        or units not made on this machine yet)."""
        import numpy as np

        global _units_absent
        digests = {m: sentences.text_hash(t) for m, t in texts.items()}
        stamp = sentences.version()
        held, absent = _units_absent
        if held != stamp or stamp is None or len(absent) > _UNITS_KEPT:
            absent = set()
            _units_absent = (stamp, absent)
        wanted = [d for d in dict.fromkeys(digests.values()) if d not in _units_seen and d not in absent]
        found = sentences.lookup(encoder.UNITS_KEY, wanted, mark=False)
        # An empty entry is a text of one sentence: no units, for good (the text is the key).
        _units_seen.update(found)
        # A stand-in's units while the final ones are not made (filling.py): never kept above.
        lacking = [d for d in wanted if d not in found]
        standing = sentences.lookup(encoder.STAND_IN_UNITS_KEY, lacking, mark=False) if lacking else {}
        if stamp is not None:
            absent.update(d for d in wanted if d not in found and d not in standing)
        units: list[tuple[str, bytes]] = []
        for memory_id, digest in digests.items():
            blob = _units_seen.get(digest)
            if blob is not None:
                _units_seen.move_to_end(digest)
            else:
                blob = standing.get(digest)
            if blob:  # (none, or an empty entry: no units)
                units.append((memory_id, blob))
        # Every text's units made unit vectors at once (a row's doing does not depend on the rows
        # beside it), each text's then multiplied alone, as before: the same products, to the bit.
        size = encoder.DIMENSIONS
        rows = sentences.unpack([blob for _m, blob in units], size)
        out: dict[str, float] = {}
        at = 0
        for memory_id, blob in units:
            count = len(blob) // size
            out[memory_id] = float(np.max(rows[at : at + count] @ vector))
            at += count
        while len(_units_seen) > _UNITS_KEPT:
            _units_seen.popitem(last=False)
        return out

    def token_ids(self, texts: dict[str, str]) -> dict[str, np.ndarray]:
        """Memory id -> its text's distinct token ids as the index kept them when it embedded the
        text (``Embedder.embed_with_tokens``), for each of these (id -> text) whose kept ids are
        of this very text (by its hash): the token match reads them rather than tokenize again."""
        none: dict[str, tuple[str, bytes]] = {}
        kept = self._from_manifest(lambda db: tokens.by_id(db, list(texts)), none)
        return {m: tokens.unpack(blob) for m, (digest, blob) in kept.items()
                if digest == sentences.text_hash(texts[m])}

    def refill_vectors(self, ix: windex.Index, db: sqlite3.Connection) -> None:
        """Every indexed memory's vector made again (the model changed, or became available)."""
        with ix.searcher() as searcher:
            memories = [
                Memory(**fields["data"]) for fields in searcher.all_stored_fields() if fields.get("kind") == "memory"
            ]
        new_rows = self.vector_rows(memories)
        db.execute("BEGIN")
        db.execute("DELETE FROM vectors")
        db.execute("DELETE FROM standins")
        db.execute("DELETE FROM tokens")
        vectors.write(db, (), new_rows)
        db.execute("COMMIT")
        self.rows_committed()

    def cosines(self, vector: np.ndarray, memory_ids: list[str]) -> dict[str, float]:
        """The cosine between ``vector`` and each of these memories that has a vector: from the
        loaded table when this process holds it, else read by id."""
        if self.warm or self.vectors_loaded():
            return self.meaning().cosines(vector, memory_ids)
        return self._from_manifest(lambda db: vectors.cosines_by_id(db, vector, memory_ids, self._repaired), {})

    def nearest(self, vector: np.ndarray, wanted: table.Filter, depth: int, floor: float) -> list[tuple[str, float]]:
        """The ``depth`` memories closest in meaning to ``vector`` that ``wanted`` allows (cosine
        at least ``floor``), best first. The first time in a process that does not hold the
        table, scanned from the manifest a chunk at a time: a `slayer-kb search` process never
        holds the whole table (50 MiB of its peak at 100,000 memories). Else, and from a second
        scan on (a library's process: reading the manifest for each question would cost 250 ms
        at 100,000 memories), from the loaded table. The same memories either way."""
        if self.warm or self._scanned or self.vectors_loaded():
            return self.meaning().top(vector, wanted, depth, floor)
        self._scanned = True
        return self._from_manifest(lambda db: table.top_by_scan(db, vector, wanted, depth, floor, repair=self._repaired), [])

    def _repaired(self, bad: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """The rows of the memories whose rows are not ``vectors.sound`` (a tampered or damaged
        manifest), made again from their indexed text and written back: the search that found
        them scores them as it should, and no later one needs a ``reindex``."""
        stored = self.stored([row[0] for row in bad])
        memories = [Memory(**fields["data"]) for row in bad
                    if (fields := stored.get(row[0])) is not None and fields.get("kind") == "memory"]
        made = self.vector_rows(memories)
        with contextlib.suppress(sqlite3.Error):  # read-only: repaired for this process only
            db = self._db()
            try:
                vectors.replace(db, bad, made)
            finally:
                db.close()
        self.rows_committed()  # their rows were committed before, damaged
        return made

    def _from_manifest(self, read: Callable[[sqlite3.Connection], T], damaged: T) -> T:
        """What ``read`` finds in the vectors table, or ``damaged`` when the table is damaged:
        no meaning this once, and the next command makes the vectors again."""
        try:
            return read(self._manifest_reader())
        except DAMAGED:
            self.invalidate(vectors=True)  # closes this thread's kept connection too
            return damaged

    def _manifest_reader(self) -> sqlite3.Connection:
        """This thread's kept connection to the manifest, opened again when the manifest is
        another file (a rebuild makes a new one) or in a forked child. Why: a new connection per
        read set up the file (``_db``'s pragmas and tables) and started with an empty page cache,
        1.5-2 ms of a warm search's thread for its head's token ids (docs/search.md). SQLite
        reads every commit since at the next query, so a kept connection sees what a new one
        would; each read runs to its end, holding no snapshot between searches."""
        path = self.dir / "manifest.db"
        held = getattr(self._readers, "held", None)
        if held is not None and held[0] == manifest.identity(path):
            return held[1]
        self.drop_manifest_reader()
        db = self._db()
        self._readers.held = (manifest.identity(path), db)
        return db

    def release_thread(self) -> None:
        """Close this thread's kept connections, the manifest's and the vector cache's: for a
        thread that ends, such as a server's thread for one command. Left to the thread's end,
        a sqlite3 connection (which refers to itself through its statement cache) and its open
        files wait for a full garbage collection, rare in a big process."""
        self.drop_manifest_reader()
        sentences.drop_reader()

    def drop_manifest_reader(self) -> None:
        """Close this thread's kept manifest connection (``_manifest_reader``), if any."""
        held = getattr(self._readers, "held", None)
        self._readers.held = None
        if held is not None:
            with contextlib.suppress(sqlite3.Error):
                held[1].close()

    def vectors_loaded(self) -> bool:
        """Whether this process holds the current table of vectors (``meaning``)."""
        return self._meaning is not None and self._meaning_key is not None and self._meaning_key == manifest.state_key(self._read_state())

    def meaning(self) -> table.Table:
        """The vectors of every memory, loaded once and then kept in step with this process's
        own updates; loaded again when another process changed the index."""
        if self.hold_table and self._meaning is not None:
            return self._meaning
        key = manifest.state_key(self._read_state())
        if self._meaning is None or key is None or self._meaning_key != key:
            try:
                db = self._db()
                try:
                    self._meaning = table.Table.load(db, self._repaired)
                finally:
                    db.close()
                if self.warm:
                    self._meaning.expand()
            except DAMAGED:
                # Damaged derived state: no meaning this once; the next command remakes the vectors.
                self.invalidate(vectors=True)
                self._meaning, key = table.Table.empty(), None
            self._meaning_key = key
        return self._meaning

    def content_key(self) -> Any:
        """What identifies the index's content now (``state_key``): a write process's, compared by
        the server that takes its write in."""
        return manifest.state_key(self._read_state())

    def indexed_as(self, memory_ids: Iterable[str]) -> dict[str, Sig]:
        """The signatures this process's targeted updates last read of these files (``as_indexed``)."""
        return {mid: self._indexed[mid] for mid in memory_ids if mid in self._indexed}

    def take_in(self, before: Any, after: Any, indexed: dict[str, Sig]) -> None:
        """Take in another process's targeted update of the ``indexed`` files (their signatures as
        it read them), which took the index from content ``before`` to ``after``: their vector
        rows into the table this process holds, if it held ``before``'s (else the table is loaded
        again when next used), and the files counted as indexed (``as_indexed``)."""
        self.hold_table = False
        kept = self._indexed if len(self._indexed) < 4096 else {}  # bounded, as index.py's own
        self._indexed = {**kept, **indexed}
        if self._meaning is None or before is None or after is None or self._meaning_key != before:
            return
        ids = sorted(indexed)
        none: list[tuple[Any, ...]] | None = None
        found = self._from_manifest(lambda db: vectors.rows_by_id(db, ids), none)
        if found is None or any(vectors.pending(row) for row in found):
            # Rows left without vectors (its client had search by meaning off, ``vector_rows``):
            # as after a deferred write of this process's own, the table is loaded again when
            # next used, once the next command made them.
            return
        rows = {row[0] for row in found}
        self._meaning.apply([mid for mid in ids if mid not in rows], found)
        self._meaning_key = after
