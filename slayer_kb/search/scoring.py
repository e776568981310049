"""Whoosh queries scored with numpy, a posting list at a time.

Why: Whoosh's matchers are pure Python and visit every posting one call at a time (~6 us each), so
a question of three common words took 200-400 ms at 100,000 memories. The queries search/
builds only combine term queries with And, Or and AndMaybe; this module evaluates exactly those
over whole posting lists as arrays, with BM25F's statistics over the live documents
(:class:`Statistics`, which the index's Whoosh searchers use too through ``bm25.LiveBM25F``), so
scores are Whoosh's (to the last bit or so: sums may be added in another order, which can swap
two documents tied to 15 digits). Posting lists are
read block by block from the index files; any other query, or an index whose layout this module
does not know, is left to Whoosh (``VectorSearcher.supports``).
"""

from __future__ import annotations

from collections import OrderedDict
from math import log
from typing import Any

import numpy as np

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh import query as Q

from . import postings as P
from .whoosh_internals import LENGTH_OF_BYTE, field_b, length_bytes

_COMPOUNDS = (Q.And, Q.Or, Q.AndMaybe)
# Decoded posting lists, scored, kept per searcher, up to this many postings in all (16 bytes
# each): a warm process meets the same words again and again.
_CACHED_POSTINGS = 4_000_000
# What an entry costs beside its postings (its key and the cache's node: about 250 bytes, as much
# as 16 postings), so that words absent from the index count too.
_ENTRY_COST = 16
_LENGTH_OF_BYTE = np.array(LENGTH_OF_BYTE, dtype=np.float64)
# A union of fewer postings than a tenth of the documents is summed over its own docnums.
_SPARSE_UNION = 10
# Pairs of filters whose documents ``VectorSearcher._allowed`` keeps (a bool a document each).
_MASKS_KEPT = 32
# Query objects evaluated lately, kept with their matches: a search asks the same query again
# under other filters (whether each bucket has a memory holding every word).
_EVALUATED = 4

Scored = tuple[np.ndarray, np.ndarray]
"""Matching docnums in ascending order, and their scores."""
_EMPTY: Scored = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


class Statistics:
    """BM25F's statistics over one searcher's live documents.

    Whoosh keeps a replaced or removed memory's document, marked deleted, in its statistics (the
    document count, each word's document frequency, each field's total length) until a merge
    drops it, so an index built by increments scored differently from one built in one go, and
    ``--limit 10`` could give another set before and after a ``reindex``. Here all three count
    live documents only, and a field's total is the sum of the stored one-byte lengths (whole
    numbers, summed exactly), which every build of the same files holds alike: Whoosh's own
    total is exact but cannot take a deleted document out.
    """

    def __init__(self, searcher: Any) -> None:
        self.schema = searcher.schema
        self.size = searcher.doc_count_all()
        self.leaves = searcher.reader().leaf_readers()
        # The decoded postings of the index's segments, kept across searchers (postings.py).
        self.store = P.store_of(searcher)
        if self.store is not None:
            self.store.keep(P.segment_id(segment) for segment, _offset in self.leaves)
        self.alive = np.ones(self.size, dtype=bool)
        for segment, offset in self.leaves:
            deleted = segment.deleted_docs_set if hasattr(segment, "deleted_docs_set") else None
            if deleted:
                self.alive[np.fromiter(deleted, dtype=np.int64) + offset] = False
        self.live = int(self.alive.sum())
        self._lengths: dict[str, np.ndarray] = {}
        self._averages: dict[str, float] = {}

    def idf(self, ids: np.ndarray) -> float:
        """Whoosh's idf of a word whose postings (deleted documents too) are ``ids``. With no
        live document left, every posting is a deleted one and is dropped: any finite idf will
        do, and log(0) would raise."""
        return log((self.live or 1) / (int(np.count_nonzero(self.alive[ids])) + 1)) + 1

    def average_length(self, fieldname: str) -> float:
        average = self._averages.get(fieldname)
        if average is None:
            total = float(self.field_lengths(fieldname)[self.alive].sum())
            average = self._averages[fieldname] = (total / (self.live or 1)) or 1
        return average

    def field_lengths(self, fieldname: str) -> np.ndarray:
        """Every document's length in ``fieldname``, as Whoosh's doc_field_length decodes it."""
        lengths = self._lengths.get(fieldname)
        if lengths is None:
            lengths = np.zeros(self.size, dtype=np.float64)
            for segment, offset in self.leaves:
                count = segment.doc_count_all()
                lengths[offset : offset + count] = _segment_lengths(segment, fieldname, count)
            self._lengths[fieldname] = lengths
        return lengths

    def postings(self, fieldname: str, text: bytes) -> tuple[np.ndarray, np.ndarray]:
        """The docnums (deleted ones too) and weights of a word's postings."""
        ids_parts, weight_parts = [], []
        fmt = self.schema[fieldname].format
        for segment, offset in self.leaves:
            found = self.store.postings(segment, fieldname, text, fmt) if self.store is not None else P.decode(segment, fieldname, text, fmt)
            if found is not None:
                ids, weights = P.widened(found, offset)
                ids_parts.append(ids)
                weight_parts.append(weights)
        return (np.concatenate(ids_parts), np.concatenate(weight_parts)) if ids_parts else _EMPTY


def statistics(searcher: Any) -> Statistics:
    """The live statistics of ``searcher`` (its top-level searcher), made once per searcher."""
    parent = searcher.get_parent()
    found = getattr(parent, "_slayer_statistics", None)
    if found is None:
        found = parent._slayer_statistics = Statistics(parent)
    return found


class VectorSearcher:
    """Evaluates supported queries over one Whoosh searcher's documents."""

    def __init__(self, searcher: Any) -> None:
        self.searcher = searcher
        self.schema = searcher.schema
        self.weighting = searcher.weighting
        self.stats = statistics(searcher)
        self.size = self.stats.size
        self.alive = self.stats.alive
        self._terms: OrderedDict[tuple[str, bytes], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._cached = 0
        # The Index caches its filter docsets per searcher; their arrays are cached beside them.
        self._docsets: dict[int, tuple[Any, np.ndarray]] = {}
        # ``_allowed``'s masks, by the filters' arrays (``docs``'s, kept beside them).
        self._masks: dict[tuple[int, int], tuple[np.ndarray | None, np.ndarray | None, np.ndarray]] = {}
        self._evaluated: OrderedDict[int, tuple[Q.Query, Scored]] = OrderedDict()

    def docs(self, docset: Any) -> np.ndarray | None:
        """A Whoosh docset (filter or mask) as a bool array; None stays None."""
        if docset is None:
            return None
        key = id(docset)
        found = self._docsets.get(key)
        if found is None or found[0] is not docset:
            array = np.zeros(self.size, dtype=bool)
            array[np.fromiter(docset, dtype=np.int64)] = True
            found = self._docsets[key] = (docset, array)
        return found[1]

    # -- which queries --------------------------------------------------------------------

    def supports(self, query: Q.Query) -> bool:
        if type(query) is Q.Term:
            return query.fieldname in self.schema and isinstance(query.text, str)
        if type(query) in _COMPOUNDS:
            if type(query) is Q.Or and (query.scale or query.minmatch):
                return False
            return bool(query.subqueries) and all(self.supports(q) for q in query.subqueries)
        return False

    # -- evaluation ------------------------------------------------------------------------

    def top(self, query: Q.Query, limit: int | None, allow: np.ndarray | None, deny: np.ndarray | None) -> list[tuple[float, int]]:
        """(score, docnum) of the best matches, as Whoosh orders them (score, then docnum)."""
        found, scores = self._matches(query)
        ok = self._allowed(allow, deny)[found]
        found, scores = found[ok], scores[ok]
        if limit is not None and len(found) > limit:
            # The limit-th best score; every document scoring at least that is a candidate, so a
            # tie at the boundary is settled by docnum below, as Whoosh settles it.
            cut = -np.partition(-scores, limit - 1)[limit - 1]
            keep = scores >= cut
            found, scores = found[keep], scores[keep]
        order = np.lexsort((found, -scores))
        if limit is not None:
            order = order[:limit]
        return [(float(scores[i]), int(found[i])) for i in order]

    def _allowed(self, allow: np.ndarray | None, deny: np.ndarray | None) -> np.ndarray:
        """The live documents ``allow`` allows (None: all) and ``deny`` does not, made once per
        pair of filters for this searcher: a search ranks three or more queries under the same
        filters, and gathered apart the three took a third of ``top``'s time."""
        key = (id(allow), id(deny))
        found = self._masks.get(key)
        if found is None or found[0] is not allow or found[1] is not deny:
            mask = self.alive.copy()
            if allow is not None:
                mask &= allow
            if deny is not None:
                mask &= ~deny
            if len(self._masks) >= _MASKS_KEPT:
                del self._masks[next(iter(self._masks))]  # the oldest
            found = self._masks[key] = (allow, deny, mask)
        return found[2]

    def _matches(self, query: Q.Query) -> Scored:
        """``evaluate``, remembered for this very query object (held here, so its id is not
        reused): the same arrays, whatever filter the caller applies to them."""
        held = self._evaluated.get(id(query))
        if held is not None and held[0] is query:
            return held[1]
        found = self.evaluate(query)
        self._evaluated[id(query)] = (query, found)
        while len(self._evaluated) > _EVALUATED:
            self._evaluated.popitem(last=False)
        return found

    def evaluate(self, query: Q.Query) -> Scored:
        """The matching docnums (ascending) and their scores."""
        if type(query) is Q.Term:
            found, scores = self._term(query)
        else:
            parts = [self.evaluate(q) for q in query.subqueries]
            if type(query) is Q.Or:
                found, scores = _union(parts, self.size)
            elif type(query) is Q.And:
                found, scores = parts[0]
                for other in parts[1:]:
                    found, scores = _intersect((found, scores), other)
            else:  # AndMaybe: the required part's matches, plus the optional part's score
                (found, scores), (maybe, maybe_scores) = parts
                here, there = _common(found, maybe)
                scores = scores.copy()
                scores[here] += maybe_scores[there]
        # Whoosh unwraps a compound query of one part and drops the compound's boost with it.
        if query.boost != 1.0 and (type(query) is Q.Term or len(query.subqueries) > 1):
            scores = scores * query.boost
        return found, scores

    def _term(self, query: Q.Term) -> Scored:
        field = self.schema[query.fieldname]
        try:
            text = field.to_bytes(query.text)
        except ValueError:
            return _EMPTY
        return self._scored(query.fieldname, text, field.scorable)

    def _bm25(self, fieldname: str, text: bytes, ids: np.ndarray, weights: np.ndarray) -> np.ndarray:
        # whoosh.scoring.bm25, operation for operation, so the floats come out the same.
        w = self.weighting
        b = field_b(w, fieldname)
        k1 = w.K1
        idf = self.stats.idf(ids)
        avgfl = self.stats.average_length(fieldname)
        lengths = self.stats.field_lengths(fieldname)[ids]
        return idf * ((weights * (k1 + 1)) / (weights + k1 * ((1 - b) + b * lengths / avgfl)))

    # -- reading the index -----------------------------------------------------------------

    def _scored(self, fieldname: str, text: bytes, scorable: bool) -> Scored:
        """A word's postings and their scores, remembered (a word absent from the index too:
        asking each of the index's segments whether it holds a word costs more than scoring
        it). The statistics are the searcher's, so a score once made stays right."""
        key = (fieldname, text)
        cached = self._terms.get(key)
        if cached is not None:
            self._terms.move_to_end(key)
            return cached
        ids, weights = self.stats.postings(fieldname, text)
        if not len(ids):
            found = _EMPTY
        elif not scorable:
            found = ids, weights  # Whoosh's WeightScorer: the posting's weight is the score
        else:
            found = ids, self._bm25(fieldname, text, ids, weights)
        self._terms[key] = found
        self._cached += len(found[0]) + _ENTRY_COST
        while self._cached > _CACHED_POSTINGS and len(self._terms) > 1:
            _, (ids, _weights) = self._terms.popitem(last=False)
            self._cached -= len(ids) + _ENTRY_COST
        return found


def _union(parts: list[Scored], size: int) -> Scored:
    """Every docnum of the parts, with the sum of its scores (Whoosh's UnionMatcher)."""
    if len(parts) == 2:
        return _merged(*parts)
    ids = np.concatenate([found for found, _ in parts])
    if not len(ids):
        return _EMPTY  # (bincount of nothing is an int array, whatever the weights)
    weights = np.concatenate([scores for _, scores in parts])
    if len(ids) * _SPARSE_UNION < size:
        # Few postings: sorting them costs less than passes over every document. bincount adds
        # each posting's score in the same order either way: the same sums, to the bit.
        found, where = np.unique(ids, return_inverse=True)
        return found, np.bincount(where, weights=weights, minlength=len(found))
    # The documents found, marked in bytes rather than counted in int64: cheaper to find, so
    # the dense path pays from a tenth of the documents (a question's two queries at 100,000
    # memories: 2.2 ms, now 1.1, best of 7).
    held = np.zeros(size, dtype=bool)
    held[ids] = True
    found = np.flatnonzero(held)
    return found, np.bincount(ids, weights=weights, minlength=size)[found]


def _merged(a: Scored, b: Scored) -> Scored:
    """``_union`` of two parts (a word in two fields: about half a question's unions), merged
    rather than sorted or counted over every document: b's docnums looked up in a's by
    bisection, a docnum in both scoring a's score plus b's. bincount's sum of the two,
    0.0 + a + b, is that to the bit, scores being positive (never -0.0)."""
    (ours, our_scores), (theirs, their_scores) = a, b
    scores = our_scores.astype(np.float64)  # (a copy: added to below)
    if not len(theirs):
        return (ours if len(ours) else _EMPTY[0]), scores
    at = np.searchsorted(ours, theirs)
    both = np.zeros(len(theirs), dtype=bool)
    inside = np.flatnonzero(at < len(ours))
    both[inside] = ours[at[inside]] == theirs[inside]
    scores[at[both]] += their_scores[both]
    fresh = ~both
    if not fresh.any():
        return ours, scores
    # Each docnum only b holds goes after the docnums of a below it and of b before it.
    where = at[fresh] + np.arange(int(fresh.sum()))
    found = np.empty(len(ours) + len(where), dtype=np.result_type(ours, theirs))
    out = np.empty(len(found), dtype=np.float64)
    found[where], out[where] = theirs[fresh], their_scores[fresh]
    rest = np.ones(len(found), dtype=bool)
    rest[where] = False
    found[rest], out[rest] = ours, scores
    return found, out


def _intersect(a: Scored, b: Scored) -> Scored:
    """The docnums in both, with the sum of their scores (Whoosh's IntersectionMatcher)."""
    here, there = _common(a[0], b[0])
    return a[0][here], a[1][here] + b[1][there]


def _common(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the docnums both ascending arrays hold are in each, ascending: the shorter's looked
    up in the longer by bisection (intersect1d sorted the two together)."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if not len(short) or not len(long):
        none = np.zeros(0, dtype=np.int64)
        return none, none
    at = np.minimum(np.searchsorted(long, short), len(long) - 1)
    hit = np.flatnonzero(long[at] == short)
    return (hit, at[hit]) if short is a else (at[hit], hit)


def _segment_lengths(segment: Any, fieldname: str, count: int) -> np.ndarray:
    """A segment's one-byte field lengths, decoded as Whoosh's doc_field_length decodes them."""
    data = length_bytes(segment, fieldname)
    if data is None:
        return np.ones(count, dtype=np.float64)
    raw = np.frombuffer(data, dtype=np.uint8)
    out = np.zeros(count, dtype=np.float64)
    out[: len(raw)] = _LENGTH_OF_BYTE[raw]
    return out
