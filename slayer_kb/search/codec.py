"""The Whoosh codec of the index: Whoosh's own (W3), with field lengths read once per segment,
segment files read in place, and readers reopened with the segments that did not change.

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
from whoosh.filedb.structfile import BufferFile
from whoosh.reading import EmptyReader, MultiReader, SegmentReader
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


class _ViewReader:
    """A read-only file over a memoryview: each read copies only the bytes it asks for."""

    __slots__ = ("_view", "_at")

    def __init__(self, view: memoryview) -> None:
        self._view = view
        self._at = 0

    def read(self, size: int | None = -1) -> bytes:
        if self._at >= len(self._view):
            return b""  # past the end the position stays where a seek put it, as in BytesIO
        end = len(self._view) if size is None or size < 0 else min(len(self._view), self._at + size)
        data = self._view[self._at : end].tobytes()
        self._at = end
        return data

    def readline(self, size: int | None = -1) -> bytes:
        if self._at >= len(self._view):
            return b""
        end = len(self._view) if size is None or size < 0 else min(len(self._view), self._at + size)
        at = self._at
        while at < end:  # a chunk at a time: a line may be short in a long part
            found = self._view[at : min(end, at + 4096)].tobytes().find(b"\n")
            if found >= 0:
                return self.read(at + found + 1 - self._at)
            at += 4096
        return self.read(end - self._at)

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._at, len(self._view))[whence]
        self._at = max(0, base + offset)
        return self._at

    def tell(self) -> int:
        return self._at

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._view = memoryview(b"")


def _open_view(self: Any, buf: Any, name: str | None = None, onclose: Any = None) -> None:
    if not isinstance(buf, memoryview):
        _buffer_file_init(self, buf, name, onclose)
        return
    # BufferFile.__init__'s attributes, without its io.BytesIO(buf): that copy reads the whole
    # part, so every page of the mapped segment file became resident (90 MB at 100,000 memories
    # when a search process opened its readers) for a buffer thrown away at once.
    self._buf = buf
    self._name = name
    self.file = _ViewReader(buf)
    self.onclose = onclose
    self.is_real = False
    self.is_closed = False


# Whoosh opens each part of a segment's compound file (postings, terms, columns) as a slice of
# the memory-mapped file, then wraps it in io.BytesIO, which copies the whole part: a search at
# 10,000 memories held 170 MB, at 100,000 close to a gigabyte. Reading the slice in place keeps
# a process to the pages it touches (BufferFile's own fast paths already read the slice).
_buffer_file_init = BufferFile.__init__
BufferFile.__init__ = _open_view


def reader_reusing(ix: Any, old: Any) -> Any:
    """A reader over ``ix``'s latest segments that keeps ``old``'s reader of every segment that
    did not change, and closes the others.

    A save adds one small segment; opening every segment again cost more than the save's own
    look-ups. Whoosh's ``reader(reuse=...)`` would do this, but it keeps segments a merge has
    removed and readers of segments that gained deletions; here a reader is kept only for the
    same segment with the same number of deleted documents (deletions in a segment only grow,
    so the count names the set).
    """
    info = ix._read_toc()
    kept = {}
    for reader, _ in old.leaf_readers():
        segment = reader.segment()
        if segment is not None:
            kept[segment.segment_id()] = reader
    readers = []
    for segment in info.segments:
        reader = kept.get(segment.segment_id())
        if reader is not None and reader.segment().deleted_count() == segment.deleted_count():
            del kept[segment.segment_id()]
        else:
            reader = SegmentReader(ix.storage, info.schema, segment, generation=info.generation)
        readers.append(reader)
    for reader in kept.values():
        reader.close()
    if not readers:
        return EmptyReader(info.schema)
    return readers[0] if len(readers) == 1 else MultiReader(readers, generation=info.generation)
