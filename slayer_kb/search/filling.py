"""The filler's passes (the ``Filling`` half of ``Index``): the static vectors a bulk write left
pending, then the sentence vectors the memories lack, a batch at a time, each batch written as it
is made so that a search meanwhile uses what is there.

A large first build in the background (``STAND_IN_FROM`` memories or more lacking a sentence
vector, with the stand-in graph loadable: ``encoder.load_stand_in``) makes two passes: the
stand-in's first, whose int8 products take 0.42-0.45 of the shipped graph's CPU, so that meaning
covers the KB about 2.2 times sooner; then the shipped graph's, which replaces every stand-in
(every vector final about 45% later: nobody waits for it in the background). A foreground build
(``reindex``) makes final vectors only: its user waits for them. Stand-ins are cached
under keys of their own (``encoder.STAND_IN_KEY``, ``STAND_IN_UNITS_KEY``) and listed in the
manifest (``vectors.stand_ins``), so none is taken for a final vector: a reindex, a second clone
or a branch switch takes final vectors from the cache as final, and stand-ins only as stand-ins.
A memory saved or edited during either pass goes first, in a batch of its own, at the shipped
graph's (backlog.py). docs/search.md, "Stand-in vectors during a first build"."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeAlias

from ..core.memory import Memory
from . import embedding, encoder, eviction, filler, sentences, table, vectors
from .backlog import Backlog

# Pending static vectors made at a time by ``fill_static`` (as ``vector_rows`` makes them).
_STATIC_CHUNK = 2000
# A backlog of at least this many memories lacking a sentence vector gets the stand-ins first:
# 5,000 memories are 2-4 minutes of the shipped graph on two free cores (14-40 ms of CPU a memory,
# docs/performance.md), where a smaller one is made final about as soon as stand-ins would be.
STAND_IN_FROM = 5000
# A text's stand-ins in the vector cache, dropped once its final vector and units are kept
# (under ``encoder.MODEL_KEY``): 250-730 MB at 100,000 memories, read by nothing after the build.
_STAND_IN_KEYS = (encoder.STAND_IN_KEY, encoder.STAND_IN_UNITS_KEY)
# In the index's folder: the day this KB's texts were last marked used in the vector cache.
MARKED_FILE = "cache-marked-day"
# What ``guard`` returns: held while the index is read or written (the warm server's command lock).
Guard: TypeAlias = Callable[[], AbstractContextManager[Any]]


class Filling:
    """The filler's half of ``Index`` (its state is made in ``Index.__init__``)."""

    root: Path
    dir: Path
    # The backlog from which a pass makes stand-ins first (``STAND_IN_FROM``; a test lowers it).
    stand_in_from = STAND_IN_FROM
    # Whether this process checked every memory's units (``fill_sentences``).
    _units_checked = False
    _meaning: table.Table | None
    _meaning_key: Any
    embedder: Callable[[], embedding.Embedder | embedding.Unavailable]
    sentence_coverage: Callable[[], tuple[int, int]]
    coverage: Callable[[], tuple[int, int, int, int]]
    stored: Callable[[list[str]], dict[str, dict[str, Any]]]
    _db: Callable[[], sqlite3.Connection]
    _from_manifest: Callable[..., Any]

    def fill_static(self, guard: Guard = contextlib.nullcontext,
                    stop: Callable[[], bool] = lambda: False, batched: bool = True) -> int:
        """Make the static vectors and token ids a bulk write left pending (``vector_rows``),
        a chunk at a time, each written as it is made where the row's text is still the one
        embedded; the same rows, to the bit, as the write would have made. ``guard`` is held
        while the index is read or written; without ``batched``, the filler's batch lock is not
        taken (a command holding the KB lock or the server's turn: ``make_left``). Returns how
        many were written."""
        model = self.embedder()
        if not isinstance(model, embedding.Embedder):
            return 0
        none: list[tuple[str, str]] = []
        with guard():
            missing = self._from_manifest(vectors.missing_static, none)
        written = 0
        for at in range(0, len(missing), _STATIC_CHUNK):
            if stop():
                break
            # One chunk at a time across processes, as the sentence vectors' batches: rows
            # another filler made while this one waited are skipped, so none is made twice.
            with filler.batch(self.root) if batched else contextlib.nullcontext():
                try:
                    with guard():
                        ids = [m for m, _digest in missing[at : at + _STATIC_CHUNK]]
                        chunk = self._from_manifest(lambda db: vectors.missing_static(db, ids), none)  # noqa: B023 - called at once
                    texts = self._texts(chunk, guard)
                    rows = vectors.static_rows(model, [(m, digest, texts[m]) for m, digest in chunk if m in texts])
                    with guard():
                        db = self._db()
                        try:
                            written += len(vectors.write_static(db, rows))
                        finally:
                            db.close()
                        self._meaning_key = None  # a table this process holds is loaded again, with them
                except sqlite3.Error:
                    break  # the index is being rebuilt: the next pass starts again
        return written

    def fill_sentences(
        self,
        progress: Callable[[int, int], None] | None = None,
        guard: Guard = contextlib.nullcontext,
        stop: Callable[[], bool] = lambda: False,
        batch: int = 32,
        workers: int | None = None,
        background: bool = False,
    ) -> int:
        """Make the final sentence vectors the memories lack (from the cache when it has them),
        a batch at a time, each batch written as it is made, so a search meanwhile uses what is
        there, with their sentences' (``spans.units``, pooled from the same runs); with
        ``background`` (a build in the background: the warm server's thread, the detached
        filler), a large backlog gets stand-ins first (above), and the vector cache is kept
        within its bound after the pass (``_upkeep``). A foreground build (``reindex``)
        makes final vectors straight away: its user waits for them, and the stand-ins would
        only add their pass. Then the units the cache lacks for texts whose
        whole vectors it held (they only refine a ranking, so meaning covers the KB first).
        ``guard`` is held while the index is read or written, never while the model runs (the
        warm server's command lock); ``stop`` ends it between batches. ``workers``: model runs
        at once (``encoder.encode_with_units``; default ``encoder.build_workers``), a batch
        taking ``batch`` memories for each, so that every worker has runs to make. A memory
        saved or edited while it works makes the next batch, alone, ahead of the rest, at the
        shipped graph's (backlog.py). ``progress`` gets (done, to do) over both passes. Returns
        how many of the memories that lacked a final sentence vector have one now (0 when the
        encoder is not available)."""
        made = self._fill_sentences(progress, guard, stop, batch, workers, background)
        self._upkeep(guard, stop, background)
        return made

    def _upkeep(self, guard: Guard, stop: Callable[[], bool], background: bool) -> None:
        """What every pass leaves done, the one place for it: the KB's texts marked used once a
        day (``mark_used``; a warm server's filler passes every 30 seconds, so a KB it only
        searches keeps its texts), unless it was stopped; and after a pass in the background,
        the vector cache within its bound off every save's path (``eviction.after_fill``, a
        ``stat`` while within it), even one that made no final vector: it may have written
        units or stand-ins."""
        if not stop():
            self.mark_used(guard)
        if background:
            eviction.after_fill()

    def mark_used(self, guard: Guard = contextlib.nullcontext) -> None:
        """Once a day, every text of the KB marked used in the vector cache
        (``sentences.mark_daily``; ``MARKED_FILE`` holds the day). ``guard`` is held while the
        manifest is read."""
        def texts() -> list[str]:
            with guard():
                db = self._db()
                try:
                    return [digest for _m, digest in vectors.made_sentences(db)]
                finally:
                    db.close()

        with contextlib.suppress(sqlite3.Error):  # the index being rebuilt: marked at a next pass
            sentences.mark_daily(self.dir / MARKED_FILE, texts, eviction.READ_KEYS)

    def _fill_sentences(
        self, progress: Callable[[int, int], None] | None, guard: Guard, stop: Callable[[], bool], batch: int,
        workers: int | None, background: bool,
    ) -> int:
        # The static vectors first: until its static vector is made, a memory is not found by
        # meaning at all, nor ranked by its sentence vector (``vectors.checked``).
        static = self.fill_static(guard, stop)
        if not encoder.installed():
            return static
        workers = workers or encoder.build_workers()
        nothing = Backlog([], 0)
        with guard():
            covered, total, _pending, standing = self.coverage()
        written: list[tuple[str, str]] = []
        first = 0  # the stand-in pass's rows, ahead of the final pass's in ``progress``
        if background and total - covered >= self.stand_in_from:
            done, written, first = self._stand_in_pass(total - covered + standing, progress, guard, stop, batch, workers)
            if not done:
                return len(written)
        with guard():
            covered, total = self.sentence_coverage()
            work = self._from_manifest(Backlog.listed, nothing) if covered < total else nothing
        done, final = self._pass(work, None, guard, stop, batch, workers,
                                 lambda made, left: progress and progress(first + made, first + made + left))
        written += final
        if not done:
            return len(written)
        if progress and first and not work.done:
            progress(first, first)  # the stand-in pass found every final vector cached: none left
        # Every memory's units once per process (one stopped before may have left some), then
        # those of the memories this pass gave a vector.
        units = written
        if not self._units_checked:
            with guard():
                units = self._from_manifest(vectors.made_sentences, [])
            sentences.drop(encoder.RETIRED_KEY)  # once a process, as it checks every unit
        if self._fill_units(units, guard, stop, batch, workers):
            self._units_checked = True
        return len(written)

    def _stand_in_pass(
        self, finals: int, progress: Callable[[int, int], None] | None, guard: Guard, stop: Callable[[], bool],
        batch: int, workers: int,
    ) -> tuple[bool, list[tuple[str, str]], int]:
        """``fill_sentences``' stand-in pass, ahead of ``finals`` rows of the final pass: (whether
        it ran to its end or there is no stand-in graph, the (id, hash) of the rows given a final
        vector, the rows it went through). The int8 session (110-130 MiB resident) is loaded
        here and let go when it returns: a warm server would hold it for good."""
        stand_in = encoder.load_stand_in()
        if not isinstance(stand_in, encoder.Encoder):
            return True, [], 0
        nothing = Backlog([], 0)
        with guard():
            lacking = self._from_manifest(lambda db: Backlog.listed(db, final=False), nothing)
        done, written = self._pass(lacking, stand_in, guard, stop, batch, workers,
                                   lambda made, left: progress and progress(made, made + left + finals))
        return done, written, lacking.done

    def _pass(
        self, work: Backlog, stand_in: encoder.Encoder | None, guard: Guard, stop: Callable[[], bool], batch: int,
        workers: int, report: Callable[[int, int], object],
    ) -> tuple[bool, list[tuple[str, str]]]:
        """Make ``work``'s rows a batch at a time: stand-ins by ``stand_in`` (None: final ones).
        (Whether it ran to its end, the (id, hash) of the rows given a final vector.)"""
        model: encoder.Encoder | None = None
        written: list[tuple[str, str]] = []
        while work.left():
            if stop():
                return False, written
            # One batch at a time across processes (filler.py): rows another process made while
            # this one waited are skipped, so no vector is made twice.
            with filler.batch(self.root):
                try:
                    made = self._fill_batch(work, batch * workers, guard, model, workers, stand_in)
                except sqlite3.Error:
                    return False, written  # the index is being rebuilt: the next pass starts again
            if made is None:
                return False, written
            model, rows = made
            written += rows
            report(work.done, work.left())
        return True, written

    def _fill_batch(
        self, work: Backlog, size: int, guard: Guard, model: encoder.Encoder | None, workers: int,
        stand_in: encoder.Encoder | None,
    ) -> tuple[encoder.Encoder | None, list[tuple[str, str]]] | None:
        """Make and write the vectors of ``work``'s next ``size`` rows: stand-ins by
        ``stand_in`` unless they were written since (final ones, as with none); (the shipped
        model, if loaded, and the (id, hash) of the rows given a final vector), or None when the
        encoder cannot be loaded."""
        with guard():
            db = self._db()
            try:
                taken = [m for m, _digest in work.take(db, size)]
                standing = stand_in is not None and not work.fresh
                chunk = vectors.still_missing(db, taken, final=not standing)
            finally:
                db.close()
        digests = [digest for _id, digest in chunk]
        # Final vectors made before (here, in another clone, before a branch switch): final here.
        known = {**sentences.lookup(encoder.WHOLE_KEY, digests), **sentences.lookup(encoder.MODEL_KEY, digests)}
        wanted = [(m, digest) for m, digest in chunk if digest not in known]
        held = sentences.lookup(encoder.STAND_IN_KEY, [digest for _m, digest in wanted]) if standing and wanted else {}
        wanted = [(m, digest) for m, digest in wanted if digest not in held]
        if wanted:
            maker = stand_in if standing else model or encoder.load()
            if not isinstance(maker, encoder.Encoder):
                return None
            texts = self._texts(wanted, guard)
            fresh = [(m, digest) for m, digest in wanted if m in texts]
            if maker is stand_in:
                made, units = maker.encode_with_units([texts[m] for m, _digest in fresh], workers)
                whole = {digest: sentences.pack(vector) for (_m, digest), vector in zip(fresh, made, strict=True)}
                # The units first: a whole stand-in cached means its units are.
                sentences.store_together({
                    encoder.STAND_IN_UNITS_KEY: {digest: sentences.packed(rows) for (_m, digest), rows in zip(fresh, units, strict=True)},
                    encoder.STAND_IN_KEY: whole,
                })
                held.update(whole)
            else:
                model = maker
                known.update(self._made(fresh, texts, maker, workers))
        rows = [(m, digest, known[digest]) for m, digest in chunk if digest in known]
        stand_ins = [(m, digest, held[digest]) for m, digest in chunk if digest in held and digest not in known]
        with guard():
            db = self._db()
            try:
                written = set(vectors.write_sentences(db, rows))
                stood = set(vectors.write_sentences(db, stand_ins, stand_in=True))
            finally:
                db.close()
            if self._meaning is not None:
                self._meaning.set_sentences(((m, blob) for m, _digest, blob in rows + stand_ins if m in written | stood), stood)
        return model, [(m, digest) for m, digest, _blob in rows if m in written]

    def _made(self, fresh: list[tuple[str, str]], texts: dict[str, str], model: encoder.Encoder, workers: int) -> dict[str, bytes]:
        """The final whole vectors of these (id, hash) by text hash, made (or found under
        ``encoder.FITTING_KEY``) and cached with their units."""
        new = self._fitting([(digest, texts[m]) for m, digest in fresh], model)
        rest = [(m, digest) for m, digest in fresh if digest not in new]
        made, units = model.encode_with_units([texts[m] for m, _digest in rest], workers)
        whole = {digest: sentences.pack(vector) for (_m, digest), vector in zip(rest, made, strict=True)}
        new.update(whole)
        # The units come from the same runs: kept with the whole vector under MODEL_KEY, in one
        # transaction (``sentences.store_together``).
        packed = {digest: sentences.packed(rows) for (_m, digest), rows in zip(rest, units, strict=True)}
        _keep_final(packed, whole, {encoder.WHOLE_KEY: new})
        return new

    def _fill_units(self, made: list[tuple[str, str]], guard: Guard, stop: Callable[[], bool], batch: int, workers: int) -> bool:
        """Make the units of these (id, text hash) whose text is not yet under
        ``encoder.MODEL_KEY`` in the cache (its whole vector cached before units were pooled
        from its runs, or the text evicted), then put its whole vector there: one under
        MODEL_KEY means its units are cached. False when stopped, the encoder is missing, or
        the cache was busy (another process's long write): the next pass checks them again."""
        done = sentences.held(encoder.MODEL_KEY, [digest for _m, digest in made])
        wanted = [(m, digest) for m, digest in made if digest not in done]
        # Units the cache cannot keep, every process would make again: asked once a pass (a
        # write transaction of nothing), then each batch's store says whether it still keeps them.
        if wanted and not sentences.keeps():
            return sentences.refuses()
        model: encoder.Encoder | encoder.Unavailable | None = None
        for at in range(0, len(wanted), batch * workers):
            if stop():
                return False
            model = model or encoder.load()
            if not isinstance(model, encoder.Encoder):
                return False
            # One batch at a time across processes, as ``fill_sentences``: units another
            # process made while this one waited are not made again.
            with filler.batch(self.root):
                chunk = wanted[at : at + batch * workers]
                done = sentences.held(encoder.MODEL_KEY, [digest for _m, digest in chunk])
                texts = self._texts([(m, digest) for m, digest in chunk if digest not in done], guard)
                fresh = [(digest, texts[m]) for m, digest in chunk if m in texts]
                made_now, units = model.encode_with_units([text for _digest, text in fresh], workers)
                packed = {digest: sentences.packed(rows) for (digest, _t), rows in zip(fresh, units, strict=True)}
                whole = {digest: sentences.pack(v) for (digest, _t), v in zip(fresh, made_now, strict=True)}  # an evicted text's too
                whole |= sentences.lookup(encoder.WHOLE_KEY, list(whole))
                if not _keep_final(packed, whole):
                    return sentences.refuses()  # busy: not for good; a lasting refusal: none would be kept
        return True

    def _texts(self, chunk: list[tuple[str, str]], guard: Guard) -> dict[str, str]:
        """The embedding text of each of these (id, text hash) whose text still has that hash:
        one edited meanwhile waits for the next pass."""
        with guard():
            docs = self.stored([m for m, _digest in chunk])
        texts = {m: vectors.embedding_text(Memory(**docs[m]["data"])) for m, _digest in chunk if m in docs}
        return {m: texts[m] for m, digest in chunk if m in texts and sentences.text_hash(texts[m]) == digest}

    @staticmethod
    def _fitting(texts: list[tuple[str, str]], model: encoder.Encoder) -> dict[str, bytes]:
        """Vectors the cache holds under ``encoder.FITTING_KEY`` for these (hash, text) that
        fit in one run of the model: made the same way then, so not made again. Looked up
        before they are tokenized: a cache without them (most) costs no tokenizing."""
        found = sentences.lookup(encoder.FITTING_KEY, [digest for digest, _t in texts])
        held = [(digest, t) for digest, t in texts if digest in found]
        fits = model.fits([t for _d, t in held]) if held else []
        return {digest: found[digest] for (digest, _t), ok in zip(held, fits, strict=True) if ok}


def _keep_final(units: dict[str, bytes], whole: dict[str, bytes], also: dict[str, dict[str, bytes]] | None = None) -> bool:
    """Cache these texts' units and their whole vectors under ``encoder.MODEL_KEY`` (which says
    their units are kept), with ``also``, and drop their stand-ins, in one transaction; whether
    the cache kept them."""
    return sentences.store_together({**(also or {}), encoder.UNITS_KEY: units, encoder.MODEL_KEY: whole},
                                    replaces={encoder.MODEL_KEY: _STAND_IN_KEYS})
