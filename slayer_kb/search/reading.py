"""Reading the index: one searcher per process, reopened with only the segments a write changed,
and the look-ups searches make through it (documents, scores, stored fields). ``Index`` has these
as a mixin; writing and freshness stay in index.py."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh import index as windex
from whoosh import query as Q
from whoosh.searching import Searcher

from ..core.ids import id_sort_key
from ..core.memory import time_order
from . import postings
from .bm25 import LiveBM25F
from .leaves import Leaves
from .whoosh_internals import reader_reusing

if TYPE_CHECKING:
    from .filters import Restriction


# From this many documents a search is scored with numpy (scoring.py) instead of Whoosh's matchers:
# from the first, since search by meaning imports numpy anyway (a test compares the two scorers).
VECTOR_DOCS = 0
# Up to this many documents found by exact field values are sorted from their stored fields.
EXACT_SORT_LIMIT = 256
# At most this many filters remembered for ``reopen``: the searches' filters are few (a type, a
# project, the catalog and the deleted left out).
FILTERS_KEPT = 32
# The searchers each thread's searches hold (``one_searcher``).
_pins = threading.local()


class Reads:
    """The reading half of ``Index`` (its state is made in ``Index.__init__``)."""

    dir: Path
    _ix: windex.Index | None
    _searcher: Any
    _docsets: dict[str, Any]
    _filters: dict[str, Q.Query]
    _vector: Any
    _ids: Any
    _docnums: dict[str, int]
    _leaves: Leaves
    _read_state: Callable[[], dict[str, Any] | None]
    warm: bool

    def has_searcher(self) -> bool:
        """A searcher is open, on an index folder still there: its deletion (``rm -rf
        .slayer-kb``) is no event a file monitor hears of, and the searcher would fail to
        reopen; without one the next check finds the index missing and builds it again."""
        return self._searcher is not None and os.path.isdir(self.dir)

    @contextlib.contextmanager
    def one_searcher(self) -> Iterator[None]:
        """For the block, this thread's ``searcher()`` is the first one it gave, unless another
        thread replaced it: a search reads one version of the index, and does not list the
        index's folder (Whoosh's ``up_to_date``) at each of its look-ups (8 a search, and one
        for each document read beside the encoding)."""
        pins: dict[int, Any] = _pins.__dict__.setdefault("held", {})
        outer = id(self) in pins
        if not outer:
            pins[id(self)] = None
        try:
            yield
        finally:
            if not outer:
                del pins[id(self)]

    def searcher(self) -> Any:
        pins: dict[int, Any] | None = getattr(_pins, "held", None)
        if pins and self._searcher is not None and pins.get(id(self)) is self._searcher:
            return self._searcher
        was = self._searcher
        if self._searcher is not None and not self._searcher.up_to_date():
            old = self._searcher
            self.forget_searcher()
            try:
                reader = reader_reusing(self._ix, old.reader())
            except Exception:  # noqa: BLE001 - a damaged or vanished segment: open afresh below
                with contextlib.suppress(Exception):
                    old.close()
            else:
                self._searcher = Searcher(reader, weighting=LiveBM25F(), fromindex=self._ix)
        if self._searcher is None:
            if self._ix is None:
                self._ix = windex.open_dir(str(self.dir))
            self._searcher = self._ix.searcher(weighting=LiveBM25F())
        if self._searcher is not was:
            self._leaves.keep_only(self._searcher)
        if pins is not None and id(self) in pins:
            pins[id(self)] = self._searcher
        return self._searcher

    def reopen(self) -> None:
        """Reopen the searcher on the index as it is now, and make the docsets of the filters
        searches used (only the new segments' parts are made, leaves.py): a warm server does
        this as it takes in another process's write, with the view held, so that the first
        search after the write finds the state the write published ready, as a warm one does."""
        if self._searcher is None:
            return
        searcher = self.searcher()
        for query in list(self._filters.values()):
            self._docset(searcher, query)

    def warm_searcher(self) -> None:
        """Open the searcher and, in a warm process, decode every word of the word fields: 2.5 s
        of one core at 100,000 memories (7.5 million postings, 60 MB) that the searches would
        otherwise pay a word at a time, a few milliseconds a question (postings.py)."""
        searcher = self.searcher()
        if self.warm:
            postings.load(searcher)
            self._leaves.map_ids(searcher)

    def _docset(self, searcher: Any, query: Q.Query | None) -> Any:
        """The documents a filter matches, kept for as long as the searcher: Whoosh would
        otherwise decode those posting lists again on every search."""
        if query is None:
            return None
        key = repr(query)
        found = self._docsets.get(key)
        if found is None:
            found = self._docsets[key] = self._leaves.docset(searcher, query)
            if key not in self._filters and len(self._filters) >= FILTERS_KEPT:
                del self._filters[next(iter(self._filters))]  # the oldest
            self._filters[key] = query
        return found

    def close_searcher(self) -> None:
        if self._searcher is not None:
            with contextlib.suppress(Exception):
                self._searcher.close()
        self.forget_searcher()

    def forget_searcher(self) -> None:
        """Drop the searcher and what was cached for it, without closing its readers."""
        self._searcher = None
        self._docsets = {}
        self._vector = None
        self._ids = None
        self._docnums = {}

    def close(self) -> None:
        self.close_searcher()
        self._ix = None

    def documents(
        self,
        query: Q.Query | None,
        restriction: Restriction | None = None,
        limit: int | None = None,
        sort_newest: bool = False,
    ) -> list[dict[str, Any]]:
        searcher = self.searcher()
        hits = [(searcher.stored_fields(docnum), score) for score, docnum in self._top(searcher, query, restriction, limit, sort_newest)]
        seen: set[str] = set()
        out = []
        for fields, score in hits:
            # A crash between a Whoosh commit and the manifest's can leave a document twice.
            if fields["id"] in seen:
                continue
            seen.add(fields["id"])
            out.append(dict(fields, score=score))
        return out

    def terms_held(self, field: str, restriction: Restriction) -> set[str]:
        """The terms of ``field`` that a document ``restriction`` lets through holds. The
        lexicon alone keeps the terms of documents deleted (or replaced) until a merge, and of
        those the restriction leaves out. Each term's postings are walked to the first document
        kept, through the reader, which skips what Whoosh deleted and scores nothing: 1 ms for
        the 13 project terms of 10,000 memories (the searcher's scored look-ups took twice that)."""
        searcher = self.searcher()
        only = self._docset(searcher, restriction.only)
        left_out = self._docset(searcher, restriction.exclude)
        reader = searcher.reader()
        held = set()
        for term in reader.lexicon(field):
            postings = reader.postings(field, term)
            while postings.is_active():
                docnum = postings.id()
                if (only is None or docnum in only) and (left_out is None or docnum not in left_out):
                    held.add(term.decode("utf-8") if isinstance(term, bytes) else term)
                    break
                postings.next()
        return held

    def scores(self, query: Q.Query, restriction: Restriction | None = None, limit: int | None = None) -> dict[str, float]:
        """The best matches' ids and scores, best first, as ``documents`` ranks them."""
        searcher = self.searcher()
        if searcher.doc_count_all() == 0:
            return {}  # an empty index has no column to read (Whoosh's EmptyReader)
        if self._ids is None:
            self._ids = self._leaves.column(searcher, "id")
        ids = self._ids
        out: dict[str, float] = {}
        for score, docnum in self._top(searcher, query, restriction, limit, False):
            memory_id = ids[docnum]
            if memory_id not in out:
                out[memory_id] = score
                self._docnums[memory_id] = docnum  # for stored(), while this searcher lasts
        return out

    def _top(
        self, searcher: Any, query: Q.Query | None, restriction: Restriction | None, limit: int | None, sort_newest: bool
    ) -> list[tuple[float, int]]:
        kwargs: dict[str, Any] = {"limit": limit}
        if query is None and restriction is not None and restriction.only is not None:
            return self._exact(searcher, Q.AndNot(restriction.only, restriction.exclude), limit)
        if restriction is not None:
            kwargs["filter"] = self._docset(searcher, restriction.only)
            kwargs["mask"] = self._docset(searcher, restriction.exclude)
            # Whoosh takes an empty filter set for "no filter": nothing may match, so say so here.
            if kwargs["filter"] is not None and not kwargs["filter"]:
                return []
        if sort_newest:
            return self._newest(searcher, query or Q.Every(), kwargs)
        vector = None if query is None else self._vector_for(searcher, query)
        if vector is not None:
            allow, deny = (vector.docs(kwargs.get(name)) for name in ("filter", "mask"))
            ranked = vector.top(query, limit, allow, deny)
        elif query is None:
            ranked = [(0.0, hit.docnum) for hit in searcher.search(Q.Every(), **kwargs)]
        else:
            # Whoosh's top-N collector can drop the best match (seen: a catalog entity scoring 29.7
            # missing from a top 10 that ended at 10.8), so it collects every match and the
            # ranking is done here, as scoring.py ranks: score, then docnum.
            kwargs["limit"] = None
            ranked = sorted(((score, docnum) for score, docnum in searcher.search(query, **kwargs).top_n),
                            key=lambda item: (-item[0], item[1]))[:limit]
        return ranked

    def _newest(self, searcher: Any, query: Q.Query, kwargs: dict[str, Any]) -> list[tuple[float, int]]:
        """What ``query`` matches, newest first (``_newest_first``); newest-first lists carry no
        score. Whoosh sorts by ``created_at`` alone, as text, so the documents of the last second
        shown are fetched whole: any of them may come first, by its fraction of a second (as text
        ``10:00:00.5Z`` sorts before ``10:00:00Z``) or by its id."""
        limit = kwargs["limit"]
        docnums = [hit.docnum for hit in searcher.search(query, sortedby="created_at", reverse=True, **kwargs)]
        if docnums and limit is not None and len(docnums) == limit:
            created = self._leaves.column(searcher, "created_at")
            second = created[docnums[-1]][:19]  # YYYY-MM-DDTHH:MM:SS
            same = searcher.search(Q.And([query, Q.Prefix("created_at", second)]), **{**kwargs, "limit": None},
                                   scored=False)
            docnums = [d for d in docnums if created[d][:19] != second] + [hit.docnum for hit in same]
        return [(0.0, docnum) for docnum in self._newest_first(searcher, docnums)[:limit]]

    def _newest_first(self, searcher: Any, docnums: list[int]) -> list[int]:
        """Memory documents newest first: by creation, then, within a second, by id as ``context``
        and ``timeline`` order them (``id_sort_key``, the higher auto id first). Never by where the
        index holds them: an edit moves a document to the end, a reindex puts it back. Read from
        the columns (a fifth of the CPU of the stored fields: 0.06 s for 20,000 of one second)."""
        if not docnums:
            return []  # an empty index has no columns to read
        ids, created = (self._leaves.column(searcher, name) for name in ("id", "created_at"))
        return sorted(docnums, key=lambda d: (time_order(created[d]), id_sort_key(ids[d])), reverse=True)

    def _exact(self, searcher: Any, query: Q.Query, limit: int | None) -> list[tuple[float, int]]:
        """The documents ``query`` (exact field values) matches, newest first.

        An Engram save's duplicate and topic-key checks land here after every commit: the posting
        lists are intersected as they are walked, where a filter would first mark every live
        document of the freshly committed index, and Whoosh's sort would read the whole
        ``created_at`` column of every segment. A few matches are sorted by their stored fields.
        """
        docnums = list(searcher.docs_for_query(query))
        if len(docnums) > EXACT_SORT_LIMIT:
            return self._newest(searcher, query, {"limit": limit})
        return [(0.0, docnum) for docnum in self._newest_first(searcher, docnums)[:limit]]

    def stored(self, memory_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The stored fields of these memories' live documents, by id (absent ones left out)."""
        searcher = self.searcher()
        out: dict[str, dict[str, Any]] = {}
        for memory_id in memory_ids:
            docnum = self._docnum(searcher, memory_id)
            if docnum is not None:
                out[memory_id] = searcher.stored_fields(docnum)
        return out

    def with_query(self, memory_ids: list[str]) -> dict[str, bool]:
        """Whether each of these memories' live documents is an example query (absent ones left
        out), without loading their stored fields: a search sorts its ranking into the two
        buckets before it loads the few documents it returns."""
        searcher = self.searcher()
        queries = self._docset(searcher, Q.Term("has_query", "1"))
        out: dict[str, bool] = {}
        for memory_id in memory_ids:
            docnum = self._docnum(searcher, memory_id)
            if docnum is not None:
                out[memory_id] = queries is not None and docnum in queries
        return out

    def _docnum(self, searcher: Any, memory_id: str) -> int | None:
        # A ranking just found most of them: their document numbers are known (looking one up
        # costs 0.4 ms at 10,000 memories), and one looked up is kept while this searcher lasts.
        docnum = self._docnums.get(memory_id)
        if docnum is None:
            # A warm process maps every id once (``Leaves.docnum``): its searches look up the ids
            # the meaning channel found, 8 a question at 100,000 memories, each decoding a posting
            # list; any other process looks up its few.
            docnum = self._leaves.docnum(searcher, memory_id) if self.warm else searcher.document_number(id=memory_id)
            if docnum is not None:
                self._docnums[memory_id] = docnum
        return docnum

    def _vector_for(self, searcher: Any, query: Q.Query) -> Any:
        """The numpy scorer (scoring.py) when it can answer ``query`` and the index is large
        enough to repay importing numpy (~80 ms), else None: Whoosh answers."""
        if searcher.doc_count_all() < VECTOR_DOCS:
            return None
        if self._vector is None:
            from .scoring import VectorSearcher

            self._vector = VectorSearcher(searcher)
        return self._vector if self._vector.supports(query) else None
