"""The Whoosh codec of the index: Whoosh's own (W3), with field lengths read once per segment.

When a writer flushes a segment it asks, for every posting, the length of that field in that
document (to record each block's length bounds). Whoosh's reader answers from the column file on
disk, one read per posting, and for a field that stores no lengths (every ID and keyword field)
it checks whether the column's file exists, a stat per posting. A 100,000-memory index has about
ten million postings, so a rebuild spent a third of each worker's flush there. This reader loads
each length column once and answers from memory; searchers get the same answers from it.
"""

from __future__ import annotations

from typing import Any

from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3Codec, W3PerDocReader, _lenfield
from whoosh.util.numeric import byte_to_length


class Codec(W3Codec):
    def per_document_reader(self, storage: Any, segment: Any) -> W3PerDocReader:
        return _PerDocReader(storage, segment)


class _PerDocReader(W3PerDocReader):
    def __init__(self, storage: Any, segment: Any) -> None:
        super().__init__(storage, segment)
        self._lengths: dict[str, list[int] | None] = {}

    def doc_field_length(self, docnum: int, fieldname: str, default: int = 0) -> int:
        if docnum > self._doccount:
            raise IndexError(f"Asked for docnum {docnum!r} of {self._doccount}")
        try:
            lengths = self._lengths[fieldname]
        except KeyError:
            lengths = self._lengths[fieldname] = self._load_lengths(fieldname)
        if lengths is None or docnum >= len(lengths):
            return default
        return lengths[docnum]

    def _load_lengths(self, fieldname: str) -> list[int] | None:
        lenfield = _lenfield(fieldname)
        if not self.has_column(lenfield):
            return None
        # Whoosh stores a length as one byte (0: the field is empty in that document).
        return [byte_to_length(b) if b else 0 for b in self.column_reader(lenfield, LENGTHS_COLUMN)]
