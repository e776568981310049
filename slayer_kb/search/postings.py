"""Decoded posting lists of an index's segments, kept for as long as each segment is listed.

Why: decoding a word's postings from Whoosh's blocks (a zlib and a pickle call a block of 128)
was most of BM25F's time in a warm search at 100,000 memories (3.5 of its 4.7 ms a question), and
the decoded lists lived as long as the searcher: every write opens a new searcher, so a server
decoded the same words again after each save. A segment's files never change once written (a
deletion is recorded beside them; a merge writes a new segment under a new id), so its decoded
postings stay right for as long as the index lists the segment: kept by segment id, they need no
update when memories are saved, forgotten, edited or reindexed; a write adds a segment, decoded
as its words are met, and a compaction's new segment is decoded likewise.

A warm process decodes the word fields' common words once, at warm-up (``load``): at 100,000
memories 7.4 million postings, held as int32 docnums and weights in the narrowest type that
holds them exactly (a byte for a word's count in a field). The scores are computed from them as
before, per searcher (scoring.py): the lists handed out are the arrays Whoosh's blocks decode
to, to the bit.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np

from .whoosh_internals import index_of, posting_blocks, postings_of

# The fields a question's words are scored in (words.py, and the catalog bucket's query): what a
# warm process decodes at warm-up. Other fields are decoded when a query meets their words.
WORD_FIELDS = ("text", "title", "description", "symbols", "catalog_text", "catalog_title")
# ... their words held by at least this many documents of a segment. A rarer word is one block,
# decoded when first met; most words are rare, and their count, not their postings, made the
# warm-up's time (10,000 memories in 6 segments: 67,238 words for 1.09 million postings; from 16
# documents, 12,074 words for 947,305).
EAGER_POSTINGS = 16

Postings = tuple[np.ndarray, np.ndarray]
"""A segment's docnums of a word (ascending, deleted documents too) and their weights."""
_EMPTY: Postings = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


class Store:
    """The decoded postings of one index's segments, by segment id, then (field, word)."""

    def __init__(self) -> None:
        self._segments: dict[str, dict[tuple[str, bytes], Postings]] = {}
        self._lock = threading.Lock()

    def keep(self, segment_ids: Iterable[str | None]) -> None:
        """Forget the segments not among ``segment_ids`` (merged away, or a rebuilt index's)."""
        wanted = set(segment_ids)
        with self._lock:
            for gone in [s for s in self._segments if s not in wanted]:
                del self._segments[gone]

    def postings(self, segment: Any, fieldname: str, text: bytes, fmt: Any) -> Postings | None:
        """``segment``'s (a leaf reader's) postings of a word, decoded once; None when it has
        none."""
        name = segment_id(segment)
        if name is None:
            return decode(segment, fieldname, text, fmt)
        key = (fieldname, text)
        found = self._segments.get(name, {}).get(key)
        if found is not None:
            return found if len(found[0]) else None
        found = decode(segment, fieldname, text, fmt)
        with self._lock:
            self._segments.setdefault(name, {})[key] = _compact(found) if found is not None else _EMPTY
        return found

    def load(self, segment: Any, fieldname: str, fmt: Any) -> int:
        """Decode every word ``segment`` holds in ``fieldname`` in at least ``EAGER_POSTINGS``
        documents; how many postings that was."""
        name = segment_id(segment)
        if name is None:
            return 0
        # Each word made compact as it is decoded: the whole field decoded first would double
        # the process's peak (the text field of 100,000 memories: 56 MB more).
        words: dict[tuple[str, bytes], Postings] = {}
        held = self._segments.get(name, {})
        for text, info in segment.iter_field(fieldname):
            if info.doc_frequency() >= EAGER_POSTINGS and (fieldname, text) not in held:
                found = decode(segment, fieldname, text, fmt)
                if found is not None:
                    words[(fieldname, text)] = _compact(found)
        with self._lock:
            self._segments.setdefault(name, {}).update(words)
        return sum(len(ids) for ids, _weights in words.values())


_stores: weakref.WeakKeyDictionary[Any, Store] = weakref.WeakKeyDictionary()
_stores_lock = threading.Lock()


def store_of(searcher: Any) -> Store | None:
    """The store of the index ``searcher`` reads (None: a searcher made from a bare reader)."""
    ix = index_of(searcher)
    if ix is None:
        return None
    with _stores_lock:
        found = _stores.get(ix)
        if found is None:
            found = _stores[ix] = Store()
    return found


def load(searcher: Any, fields: Iterable[str] = WORD_FIELDS) -> int:
    """Decode the common words (``Store.load``) of ``fields`` in every segment ``searcher``
    reads, those already held skipped; how many postings were decoded."""
    store = store_of(searcher)
    if store is None:
        return 0
    schema = searcher.schema
    done = 0
    for segment, _offset in searcher.reader().leaf_readers():
        for fieldname in fields:
            if fieldname in schema and schema[fieldname].indexed:
                done += store.load(segment, fieldname, schema[fieldname].format)
    return done


def decode(segment: Any, fieldname: str, text: bytes, fmt: Any) -> Postings | None:
    """A segment's posting list of one word as (docnums, weights), read from its blocks; None
    when the segment does not hold the word."""
    if (fieldname, text) not in segment:
        return None
    matcher = postings_of(segment, fieldname, text, fmt)
    blocks = posting_blocks(matcher)
    if blocks is None:
        ids, weights = [], []
        while matcher.is_active():
            ids.append(matcher.id())
            weights.append(matcher.weight())
            matcher.next()
        return np.array(ids, dtype=np.int64), np.array(weights, dtype=np.float64)
    id_blocks, weight_blocks = [], []
    for raw_ids, raw_weights, count in blocks:
        # A block holds its docnums as deltas (whoosh.util.delta_decode is this cumsum).
        id_blocks.append(np.cumsum(np.asarray(raw_ids, dtype=np.int64)))
        if raw_weights is None:
            weight_blocks.append(np.ones(count, dtype=np.float64))
        elif isinstance(raw_weights, float):
            weight_blocks.append(np.full(count, raw_weights, dtype=np.float64))
        else:
            weight_blocks.append(np.asarray(raw_weights, dtype=np.float64))
    return np.concatenate(id_blocks), np.concatenate(weight_blocks)


def widened(found: Postings, offset: int) -> Postings:
    """Held postings as the searcher's docnums (int64) and float64 weights: what ``decode``
    gave, to the bit."""
    ids, weights = found
    return ids.astype(np.int64) + offset, weights.astype(np.float64)


def _compact(found: Postings) -> Postings:
    """A third of the bytes, losing nothing: docnums of a segment fit int32, and weights (a
    word's count in a field) are kept in the narrowest type they come back from to the bit: a
    byte, else float32, else as they are."""
    ids, weights = found
    # (A float out of a byte's range does not cast cleanly: a byte is not tried for it.)
    bounded = bool(len(weights)) and 0 <= weights.min() and weights.max() <= 255
    for narrow in (np.uint8, np.float32) if bounded else (np.float32,):
        with np.errstate(over="ignore", invalid="ignore"):
            held = weights.astype(narrow)
        if held.astype(weights.dtype).tobytes() == weights.tobytes():
            return ids.astype(np.int32), held
    return ids.astype(np.int32), weights


def segment_id(segment: Any) -> str | None:
    """A leaf reader's segment id; None for a reader of no segment (an empty index's)."""
    found = segment.segment() if hasattr(segment, "segment") else None
    return found.segment_id() if found is not None else None
