"""The Whoosh index in ``.slayer-kb/index``: derived from the files alone, kept current by
comparing a manifest of file signatures with the directory, and queried without any query parser
(words are turned into term queries directly, so no character a user types can be syntax).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh import index as windex

from ..catalog.cache import catalog_signature, same_signature
from ..catalog.catalog import Catalog
from ..core.errors import MemoryFileError, StoreError, unreadable
from ..core.ids import highest_auto_file, highest_auto_id
from ..core.locate import MEMORIES_DIR, memory_path
from ..core.memory import Memory, loads
from ..core.results import SyncReport
from ..store.listing import (
    DIGEST_MOD,
    RACY_SECONDS,
    SYMLINK,
    Listing,
    Sig,
    entry_digest,
    file_names,
    memory_names,
    readable,
    signatures_digest,
)
from ..store.listing import compare as compare_listing
from ..store.listing import load as load_listing
from ..store.listing import patched as patched_listing
from ..store.listing import save as save_listing
from ..store.listing import take as take_listing
from ..store.repo import STATE_DIR
from . import compaction, embedding, manifest, sentences, table, vectors, whoosh_internals, writing
from .filling import MARKED_FILE, Filling
from .leaves import Leaves
from .meaning import LEFT, Meaning
from .reading import Reads
from .schema import CODEC, FORMAT, SCHEMA, catalog_documents, memory_document
from .sources import catalog_hash, file_bytes, file_signature

Written = tuple[bytes, Memory]
"""A file's bytes as a caller just wrote them, and the memory they hold."""

# A bulk write of at least this many memories leaves their static vectors to the background
# (``defers_static``): on a large KB they hold back the first answer by words (a quarter of the
# first command's CPU); below it they take about two seconds at most, and a search right after
# the first command keeps its meaning channel whole.
DEFER_STATIC_AT = 5000


class Index(Reads, Meaning, Filling):
    """The index of one KB. Writes happen only under the KB lock (see ``KnowledgeBase``)."""

    def __init__(
        self,
        root: Path,
        content_hash: Callable[[str], str],
        load_catalog: Callable[[], Catalog],
        make_state: Callable[[], object],
    ) -> None:
        self.root = root
        self._make_state = make_state  # the KB's state folder, made and stamped when missing
        self.dir = root / STATE_DIR / "index"
        self.memories = root / MEMORIES_DIR
        self._content_hash = content_hash
        self._load_catalog = load_catalog
        self._ix: windex.Index | None = None
        self._marked_on = 0  # the day this process saw the KB's texts marked used (want_marks)
        self.forget_searcher()  # none yet: what a searcher caches starts empty
        self._leaves = Leaves()
        self._filters = {}  # the filters searches used, by their repr (``Reads.reopen``)
        self._meaning: table.Table | None = None
        self._meaning_key: Any = None
        self._scanned = False  # this process scanned the vectors without loading them
        self._readers = threading.local()  # each thread's kept manifest connection (meaning.py)
        self._auto_top: tuple[int, int] | None = None  # (monitor generation, highest_auto_id)
        # How many broken files the manifest stale_files read last counts (None: a manifest from
        # before the count), for known_problems.
        self._broken: int | None = 0
        self._state = manifest.StateFile(self.dir / "manifest.json")
        self._indexed: dict[str, Sig] = {}  # the files this process's targeted updates read (as_indexed)
        # A long-running process (KnowledgeBase.keep_warm) holds the vectors as float32.
        self.warm = False

    # -- freshness --------------------------------------------------------------------------

    def ids(self) -> list[str]:
        """The ids of the memory files, without the cost of a stat per file."""
        return [name[:-5] for name in memory_names(self.memories)]

    def close(self) -> None:
        super().close()
        self.drop_manifest_reader()
        self._auto_top = None  # the next monitor counts its generations from the start again

    def want_marks(self) -> None:
        """A search in a process that makes no sentence vectors itself (a one-shot command, the
        MCP server; not the warm server, whose filler marks them): when the KB's texts were not
        marked used today (``mark_used``), a detached filler marks them, off the search's path
        (``want_sentences``). A search's own look-ups mark nothing, so a KB only searched would
        look least used; this costs a file read a search until the day is marked (then none that
        day in a process that stays), and a process once a day. ``SLAYER_KB_NO_MARKS`` turns it
        off (the tests' isolation: each test has a cache of its own, which no other KB evicts from)."""
        day = sentences.today()
        if not self.background_vectors or os.environ.get("SLAYER_KB_NO_MARKS") or self._marked_on == day:
            return
        if sentences.marked_today(self.dir / MARKED_FILE):
            self._marked_on = day
        else:
            self.want_sentences()

    def warm_up(self) -> None:
        """Open the searcher (``warm_searcher``) and, in a warm process with a model, load the
        vectors: 0.9 s at 100,000 memories that a server's first search would otherwise wait for."""
        self.warm_searcher()
        if self.warm and not isinstance(self.embedder(), embedding.Unavailable):
            self.meaning()

    def sentence_scan(self, wanted: table.Filter, depth: int) -> table.Scan | None:
        """The int8 scan ``sentence_nearest`` reads (``Table.sentence_scan``), for a search's
        helper thread to begin once the question is encoded; None in a process that holds no
        table (it scans the manifest instead)."""
        return self.meaning().sentence_scan(wanted, depth) if self.warm or self.vectors_loaded() else None

    def highest_auto_id(self, generation: int | None = None) -> int:
        """The highest auto id among the memory files (0: none), without a stat per file.

        ``generation`` is a file monitor's (``ChangeMonitor.generation``), read before this call:
        while it stays the same no file came or went, and the folder (100,000 names: 60 ms) is
        not listed again."""
        if generation is not None and self._auto_top is not None and self._auto_top[0] == generation:
            return self._auto_top[1]
        top = highest_auto_file(file_names(self.memories))
        self._auto_top = None if generation is None else (generation, top)
        return top

    def catalog_signature(self) -> list[list[Any]]:
        """What the catalog's files look like now (``catalog.cache.catalog_signature``)."""
        return catalog_signature(self.root, RACY_SECONDS)

    # The manifest (manifest.py): its state, read by every freshness check, and its database.

    def _read_state(self) -> dict[str, Any] | None:
        return self._state.read()

    def _write_state(self, state: dict[str, Any]) -> None:
        self._state.write(state)

    def _db(self) -> sqlite3.Connection:
        return manifest.connect(self.dir)

    def stale_files(self) -> list[str] | None:
        """Cheap check, no lock: [] when the index describes the files as they are now; the ids
        of the memory files edited in place when that is all that changed (or of young files,
        unchanged, that are now old enough to stop re-reading); None when a full ``sync`` must
        find out (files created or removed, the catalog, a missing index)."""
        state = self._read_state()
        self._broken = None if state is None else state.get("problems")
        try:
            if state is None or not windex.exists_in(str(self.dir)):
                return None
        except Exception:  # noqa: BLE001 - a damaged table of contents: not fresh, rebuild
            return None
        if not same_signature(state["catalog"], self.catalog_signature()):
            return None
        if state.get("vectors") != self.vector_key():
            return None  # the model changed or came or went: a sync makes the vectors again
        if self.vectors_left(state):
            return None  # a process with search by meaning off left some: a sync makes them
        changed = self._changed_files(state)
        if changed:
            # The young files too: one may also have changed without changing its signature.
            return sorted({*changed, *state["young"]})
        if changed is None:
            return None
        # A file written within the timestamp granularity of its last read may have changed again
        # without changing its signature: compare its bytes.
        settled = []
        young_after = time.time_ns() - RACY_SECONDS * 1e9
        for memory_id, digest in state["young"].items():
            sig = file_signature(self.memories, memory_id) or SYMLINK
            data = file_bytes(self.memories, memory_id, sig)
            if (hashlib.sha1(data, usedforsecurity=False).hexdigest() if isinstance(data, bytes) else None) != digest:
                return None
            if sig != SYMLINK and sig[0] <= young_after:
                settled.append(memory_id)
        # Unchanged, and now too old to change without their signature changing: re-read once more
        # under the lock, they stop being young. Else every check would read them all again (a
        # command right after a checkout of 10,000 files made each later one 150 ms slower).
        return sorted(settled)

    def _changed_files(self, state: dict[str, Any]) -> list[str] | None:
        """The memory files whose signatures differ from those the index state was made from, as
        ``stale_files`` says them."""
        path = self.dir / "listing"
        cached = load_listing(path, state["digest"])
        if cached is not None:
            now, changed = compare_listing(cached, self.memories)
            if now is not None and now is not cached:
                save_listing(path, now, state["digest"])
            return changed
        # No listing cached for this state (after a sync that could not patch it): compare the
        # digest of every signature, then cache the listing for the checks that follow.
        listing = take_listing(self.memories)
        scanned = listing.signatures()
        if len(scanned) != state["count"] or signatures_digest(scanned) != state["digest"]:
            return None
        save_listing(path, listing, state["digest"])
        return []

    def sync(self, progress: Callable[[int, int], None] | None = None, full: bool = False) -> SyncReport:
        """Bring the index up to date with the files, comparing every file with the manifest's
        rows. Call under the KB lock."""
        return self._update(None, progress, full)

    def catch_up(self, progress: Callable[[int, int], None] | None = None) -> SyncReport:
        """Bring the index up to date with the files at the cost of ``stale_files``: nothing more
        when nothing changed, a re-read of the files edited in place when that is all that did,
        else a ``sync``. Call under the KB lock."""
        stale = self.stale_files()
        if stale == []:
            report = SyncReport()
            db = self._db()
            try:
                report.problems = manifest.problems(db)
            finally:
                db.close()
            return report
        return self._update(stale, progress, False)

    def update(self, memory_ids: Iterable[str], written: Mapping[str, Written] | None = None) -> SyncReport:
        """Re-index just these files (ones this process wrote). Call under the KB lock.

        ``written`` holds the bytes and parsed memory of files the caller just wrote: a file
        still holding those bytes is indexed without parsing its YAML again (a cascade rewrites
        thousands, and the parse is a third of indexing one).
        """
        # A name that is not UTF-8 (from a file watcher) names no memory: listing.readable.
        return self._update([mid for mid in memory_ids if readable(mid)], None, False, written)

    def _update(
        self,
        only: list[str] | None,
        progress: Callable[[int, int], None] | None,
        full: bool,
        written: Mapping[str, Written] | None = None,
    ) -> SyncReport:
        try:
            return self._update_unguarded(only, progress, full, written or {})
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"Cannot update the search index in {self.dir}: {getattr(exc, 'strerror', None) or exc}. "
                "Free disk space or fix the folder's permissions; the memory files are not affected."
            ) from None

    def _update_unguarded(
        self,
        only: list[str] | None,
        progress: Callable[[int, int], None] | None,
        full: bool,
        written: Mapping[str, Written],
    ) -> SyncReport:
        report = SyncReport()
        state = None if full else self._read_state()
        if state is not None and state.get("digest") is None:
            # invalidate()d: compare every file with the manifest's rows, then the digest is whole.
            only = None
            state["digest"] = 0
        ix = None if state is None else self._open_existing()
        db = None
        if ix is not None:
            try:
                db = self._db()
                known = manifest.known_files(db, only)
            except sqlite3.Error:
                ix = None
        if ix is None:
            ix = self._create()
            db = self._db()
            known = {}
            state = {"format": FORMAT, "count": 0, "digest": 0, "catalog": None, "young": {}, "vectors": self.vector_key()}
            report.rebuilt = True
            only = None
        assert state is not None and db is not None
        try:
            return self._apply_changes(ix, db, state, known, only, progress, report, written)
        finally:
            db.close()

    def file_hashes(self, memory_ids: list[str]) -> dict[str, str]:
        """The content hash (sha1 of the bytes) the index last read for each of these files."""
        db = self._db()
        try:
            return manifest.file_hashes(db, memory_ids)
        finally:
            db.close()

    def _apply_changes(
        self,
        ix: windex.Index,
        db: sqlite3.Connection,
        state: dict[str, Any],
        known: dict[str, tuple[Any, ...]],
        only: list[str] | None,
        progress: Callable[[int, int], None] | None,
        report: SyncReport,
        written: Mapping[str, Written],
    ) -> SyncReport:
        now_ns = time.time_ns()
        listing: Listing | None = None
        vectors_changed = state.get("vectors") != self.vector_key()
        if vectors_changed:
            self.refill_vectors(ix, db)
            state["vectors"] = self.vector_key()
        vectors_changed = self.make_left(state) | self.note_left(state) | vectors_changed
        if only is None:
            listing = take_listing(self.memories)
            scanned = listing.signatures()
            removed = [mid for mid in known if mid not in scanned]
            manifest.note_unreadable(db, listing.unreadable())
        else:
            scanned = {mid: sig for mid in only if (sig := file_signature(self.memories, mid)) is not None}
            removed = [mid for mid in only if mid not in scanned and mid in known]
        young = {} if only is None else dict(state["young"])
        changed = [mid for mid, sig in scanned.items() if known.get(mid, (None,) * 3)[:3] != sig or mid in state["young"]]
        if self._auto_top is not None:
            # A memory file the index learns of, made here or beside: the next auto id goes above it.
            self._auto_top = (self._auto_top[0], max(self._auto_top[1], highest_auto_id(scanned)))
        # A targeted update leaves the catalog to the next freshness check.
        catalog_sig = self.catalog_signature() if only is None else state["catalog"]
        catalog_bytes = state.get("catalog_bytes")
        catalog_changed = False
        if not same_signature(state["catalog"], catalog_sig):
            # New stats with the same bytes (a copy, a checkout that came back, a restore): as a
            # memory file's, only the signature is updated. Hashed before the catalog is loaded,
            # so a file changed in between is found changed at the next check.
            now_bytes = catalog_hash(self.root)
            catalog_changed = now_bytes is None or now_bytes != catalog_bytes
            catalog_bytes = now_bytes
        if not changed and not removed and not catalog_changed and only is None:
            # Every file is as its row says. A state whose digest disagrees (a crash between the
            # rows' commit and the state's) would send every check here again: mend it.
            digest = signatures_digest(scanned)
            report.problems = manifest.problems(db)
            if (digest != state["digest"] or len(scanned) != state["count"] or vectors_changed
                    or state.get("problems") != len(report.problems) or catalog_sig != state["catalog"]):
                self._write_state({**state, "count": len(scanned), "digest": digest, "problems": len(report.problems),
                                   "catalog": catalog_sig, "catalog_bytes": catalog_bytes})
            if listing is not None:
                save_listing(self.dir / "listing", listing, digest)
            return report

        file_rows: list[tuple[Any, ...]] = []
        problem_rows: list[tuple[Any, ...]] = []
        fixed: list[str] = []
        embedded: list[Memory] = []
        digest = state["digest"]
        # No segment when every file re-read holds the bytes it held (a young file, a watcher's event).
        with writing.OnDemand(ix, bulk=len(changed) > writing.BULK_THRESHOLD) as writer:
            # Old documents are deleted after the loop (a writer's deletions apply to the segments
            # it started from, never to the documents it adds). One term per id: an Or of a
            # thousand ids costs Whoosh far more than a thousand single-term deletions.
            stale = list(removed)
            for mid in removed:
                digest = (digest - entry_digest(mid, known[mid][:3])) % DIGEST_MOD
                young.pop(mid, None)
            total = len(changed)
            for done, mid in enumerate(changed, 1):
                sig = scanned[mid]
                data = file_bytes(self.memories, mid, sig)
                content = hashlib.sha1(data, usedforsecurity=False).hexdigest() if isinstance(data, bytes) else None
                old = known.get(mid)
                # When the bytes did not change (a young file re-read, a touched file), only the
                # signature is updated: no index write.
                if old is None or old[3] != content or content is None:
                    if old is not None or mid in state["young"]:
                        stale.append(mid)
                    indexed = self._index_file(writer(), mid, data, written.get(mid))
                    report.updated += 1
                    if isinstance(indexed, Memory):
                        fixed.append(mid)
                        embedded.append(indexed)
                        if indexed.is_deleted:
                            report.soft_deleted += 1
                        else:
                            report.live += 1
                    else:
                        problem_rows.append((mid, indexed.path, indexed.line, indexed.message))
                if old is not None:
                    digest = (digest - entry_digest(mid, old[:3])) % DIGEST_MOD
                digest = (digest + entry_digest(mid, sig)) % DIGEST_MOD
                file_rows.append((mid, *sig, content))
                if now_ns - sig[0] < RACY_SECONDS * 1e9 and content is not None:
                    young[mid] = content
                else:
                    young.pop(mid, None)
                if progress is not None:
                    progress(done, total)
            if stale:
                writing.delete_ids(writer(), stale)
            if catalog_changed:
                writer().delete_by_term("kind", "catalog")
                for doc in catalog_documents(self._load_catalog()):
                    writer().add_document(**doc)
            # Before the commit: in a rebuild, the worker processes index while this one embeds.
            # A large bulk write where a filler will make them leaves the static vectors to it.
            deferred = writer.bulk and len(embedded) >= DEFER_STATIC_AT and self.defers_static()
            vector_rows = self.vector_rows(embedded, static=not deferred)
            left = self.note_left(state)
            deferred = left or deferred
        if left and not report.rebuilt:
            # The mark before the rows: a process killed after their commit leaves them marked
            # (a killed rebuild is made again).
            self._write_state(state)
        db.execute("BEGIN")
        vectors.write(db, stale, vector_rows)
        db.executemany("DELETE FROM files WHERE id = ?", [(m,) for m in removed])
        db.executemany("DELETE FROM problems WHERE id = ?", [(m,) for m in removed + fixed])
        db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", file_rows)
        db.executemany("INSERT OR REPLACE INTO problems VALUES (?, ?, ?, ?)", problem_rows)
        db.execute("COMMIT")
        count = db.execute("SELECT count(*) FROM files").fetchone()[0]
        if only is None:
            digest = signatures_digest(scanned)  # a full pass recomputes it rather than trust the old one
        report.problems = manifest.problems(db)
        # How many files are broken, so that a look-up that finds the index fresh knows whether
        # to read their problems again (known_problems) without opening the database.
        new_state = {"format": FORMAT, "count": count, "digest": digest, "catalog": catalog_sig,
                     "catalog_bytes": catalog_bytes, "young": young, "vectors": state["vectors"],
                     "problems": len(report.problems), **({LEFT: True} if state.get(LEFT) else {})}
        self._write_state(new_state)
        self.rows_committed()
        if self._meaning is not None and self._meaning_key == manifest.state_key(state) and not vectors_changed and not deferred:
            self._meaning.apply(stale, vector_rows)
            self._meaning_key = manifest.state_key(new_state)
        if only is not None:
            kept = self._indexed if len(self._indexed) < 4096 else {}  # bounded: past it, some extra re-reads
            self._indexed = {**kept, **{row[0]: tuple(row[1:4]) for row in file_rows}}
        if listing is None:
            # A targeted update: the listing cached for the state it started from, with these
            # files' new signatures, describes the new state (if every file was in it).
            listing = self._listing_for(state["digest"], scanned, [mid for mid in only or () if mid not in scanned])
        if listing is not None:
            save_listing(self.dir / "listing", listing, digest)
        report.removed = len(removed)
        report.catalog_changed = catalog_changed
        # The searcher stays: the next search finds it out of date and reopens only the new
        # segments (searcher()).
        return report

    def _listing_for(self, digest: int | None, scanned: dict[str, Sig], gone: list[str]) -> Listing | None:
        cached = None if digest is None else load_listing(self.dir / "listing", digest)
        return None if cached is None else patched_listing(cached, scanned, gone)

    def known_problems(self) -> list[MemoryFileError]:
        """The files the last check found unreadable, for a look-up that ``stale_files`` found
        fresh: every command warns of them, not only the one that read them first. The manifest
        it read counts them, so a KB without broken files opens no database for it."""
        if self._broken == 0:
            return []
        db = self._db()
        try:
            return manifest.problems(db)
        finally:
            db.close()

    def _index_file(
        self, writer: Any, memory_id: str, data: bytes | MemoryFileError, written: Written | None = None
    ) -> Memory | MemoryFileError:
        rel = memory_path(memory_id)
        if isinstance(data, MemoryFileError):
            return data
        if written is not None and written[0] == data:
            memory = written[1]
        else:
            try:
                memory = loads(data.decode("utf-8"), memory_id, rel)
            except MemoryFileError as exc:
                return exc
            except UnicodeDecodeError as exc:
                return unreadable(rel, exc)
        writer.add_document(**memory_document(memory, self._content_hash(memory.learning)))
        return memory

    def _open_existing(self) -> windex.Index | None:
        if self._ix is not None:
            return self._ix
        try:
            ix = windex.open_dir(str(self.dir))
            if set(ix.schema.names()) != set(SCHEMA.names()):
                return None
            with ix.searcher() as searcher:
                searcher.doc_count()
        except Exception:  # noqa: BLE001 - any damage to derived state means "rebuild it"
            return None
        self._ix = ix
        return ix

    def _create(self) -> windex.Index:
        self.close_searcher()
        self._ix = None
        shutil.rmtree(self.dir, ignore_errors=True)
        # Never the KB's folder itself: a KB deleted while its server syncs it stays deleted (the
        # server exits once its folder is gone), not back as an empty index; nor a state folder
        # in one moved to its path since (GitStore.ensure_state_dir).
        self._make_state()
        self.dir.mkdir(exist_ok=True)
        self._ix = windex.create_in(str(self.dir), SCHEMA)
        return self._ix

    # -- reading ----------------------------------------------------------------------------

    def segments(self) -> int:
        """How many segments the index is split into (0 before the first sync)."""
        ix = self._open_existing()
        return len(whoosh_internals.segments(ix)) if ix is not None else 0

    def wants_compaction(self) -> bool:
        """Whether segments that saves no longer merge have piled up (``compaction.wanted``):
        time for a compaction, in the background."""
        ix = self._open_existing()
        return ix is not None and bool(compaction.wanted(whoosh_internals.segments(ix)))

    def build_compaction(self, everything: bool = False) -> compaction.Built | None:
        """Step 1 of a compaction, with no lock (see compaction.py): the merged segment of the
        segments saves left (``everything``: all of at most MERGE_LIMIT documents), or None
        when there is nothing to merge."""
        ix = self._open_existing()
        if ix is None:
            return None
        chosen = compaction.wanted(whoosh_internals.segments(ix), everything)
        return compaction.build(ix, chosen, self.dir.parent, CODEC) if chosen else None

    def publish_compaction(self, built: compaction.Built) -> bool:
        """Step 2, under the KB lock: the merged segment replaces its sources, keeping the
        deletions made meanwhile; False (and nothing changed) when a rebuild replaced them."""
        ix = self._open_existing()
        if ix is None:
            shutil.rmtree(built.folder, ignore_errors=True)
            return False
        return compaction.publish(ix, built)

    def invalidate(self, vectors: bool = False) -> None:
        """Make the next freshness check fail, so the next command brings the index up to date;
        with ``vectors``, it also makes every memory's vector again (the table was damaged)."""
        self.close()
        self._indexed = {}  # nothing is as indexed now: a watcher's event for any file is synced
        state = self._read_state()
        try:
            if state is None:
                raise OSError("no manifest")
            # A digest no scan can match: the next check compares file by file (no rebuild).
            self._write_state({**state, "digest": None, **({"vectors": None} if vectors else {})})
        except OSError:
            with contextlib.suppress(OSError):
                (self.dir / "manifest.json").unlink()

    def as_indexed(self, memory_ids: Iterable[str]) -> bool:
        """Whether each of these files is as a targeted update of this process last read it (a
        watcher's event for a file a save wrote and indexed: nothing to read again)."""
        return all(self._indexed.get(mid, False) == file_signature(self.memories, mid) for mid in memory_ids)

    def young_files(self) -> list[str]:
        """Memories changed within the timestamp granularity: they wait for a re-read by content."""
        state = self._read_state()
        return sorted(state["young"]) if state else []
