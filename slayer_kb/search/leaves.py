"""What a searcher derives from each segment, kept across searchers while that segment's reader
lasts: the documents a filter matches, the ``id`` column's reader and, in a warm process, each
live document's number by its id.

A save adds one small segment, and the reopened searcher keeps the reader of every segment that
did not change (``whoosh_internals.reader_reusing``). The filter docsets and the id column were
made again over the whole index by the first search after each save: at 5,000 memories that
search took about four times the CPU of the next one, most of it walking every document of the
unchanged segments again (docs/performance.md, "The first search after a save"). Here only the
new segment's part is made; the result is the same documents in the same numbering.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh import query as Q

from .whoosh_internals import Docset, multi_column

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

# At most this many parts kept: each distinct filter (a type, a project...) adds one per segment,
# and a segment that is never merged would keep them for the server's life.
KEPT = 256


class Leaves:
    """Per-segment results, each kept beside the reader it was made from (so its ``id`` is never
    another reader's) until a searcher no longer has that reader."""

    def __init__(self) -> None:
        self._kept: dict[tuple[int, str], tuple[Any, Any]] = {}

    def _get(self, reader: Any, key: str, make: Callable[[], T]) -> T:
        found = self._kept.get((id(reader), key))
        if found is None or found[0] is not reader:
            if len(self._kept) >= KEPT:
                del self._kept[next(iter(self._kept))]  # the oldest made
            found = self._kept[(id(reader), key)] = (reader, make())
        return found[1]  # type: ignore[no-any-return]

    def keep_only(self, searcher: Any) -> None:
        """Forget what was made from readers ``searcher`` does not have (a segment merged away or
        one that gained deletions): called when a new searcher replaces the old one."""
        current = {id(reader) for reader, _offset in searcher.reader().leaf_readers()}
        self._kept = {key: found for key, found in self._kept.items() if key[0] in current}

    def docset(self, searcher: Any, query: Q.Query) -> Docset:
        """The documents ``query`` matches: ``searcher.docs_for_query``, a segment at a time."""
        import numpy as np

        key = f"docs {query!r}"
        def matched(sub: Any) -> np.ndarray:
            return np.fromiter(query.docs(sub), dtype=np.int64)

        parts = [self._get(sub.reader(), key, partial(matched, sub)) + offset for sub, offset in searcher.leaf_searchers()]
        return Docset(np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64), searcher.doc_count_all())

    def column(self, searcher: Any, fieldname: str) -> Any:
        """``searcher.reader().column_reader(fieldname)``, its segments' readers kept."""
        key = f"column {fieldname}"
        reader = searcher.reader()
        if reader.is_atomic():
            return self._get(reader, key, partial(reader.column_reader, fieldname))
        found, offsets = [], []
        for leaf, offset in reader.leaf_readers():
            if leaf.has_column(fieldname):
                found.append(self._get(leaf, key, partial(leaf.column_reader, fieldname)))
                offsets.append(offset)
        return multi_column(found, offsets)

    def docnum(self, searcher: Any, memory_id: str) -> int | None:
        """``searcher.document_number(id=memory_id)``: the first live document with that id, in
        segment order. Each segment's ids are mapped once (0.29 s of CPU at 100,000 memories,
        once per process; a save's new segment, of its few documents, when first met), where
        Whoosh decodes the id's posting list at each look-up (0.09 ms of CPU there): for a warm
        process, whose searches look up ids the ranking did not score (the meaning channel's)."""
        for leaf, offset in searcher.reader().leaf_readers():
            found = self._ids(leaf).get(memory_id)
            if found is not None:
                return int(found) + offset
        return None

    def map_ids(self, searcher: Any) -> None:
        """Map every segment's ids now (a warm process's warm-up), not at a first search."""
        for leaf, _offset in searcher.reader().leaf_readers():
            self._ids(leaf)

    def _ids(self, leaf: Any) -> dict[str, int]:
        return self._get(leaf, "docnums id", partial(_live_ids, leaf))


def _live_ids(reader: Any) -> dict[str, int]:
    """A segment's live documents by id, the first of an id twice (a crash between a Whoosh
    commit and the manifest's can leave a document twice), as Whoosh's ``first_id`` finds it."""
    out: dict[str, int] = {}
    if not reader.has_column("id"):
        return out
    ids = reader.column_reader("id")
    for docnum in reader.all_doc_ids():
        out.setdefault(ids[docnum], docnum)
    return out
