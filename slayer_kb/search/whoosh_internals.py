"""Every use of Whoosh's private structures, in one module: an upgrade of Whoosh breaks here first.

slayer-kb depends on whoosh-reloaded below 2.8 and, for speed and memory, reads and extends a few
structures Whoosh keeps private (underscore names, its codec, its storage files, its writers'
steps). Each class and function below says which; tests/test_whoosh_contract.py checks each
assumption against real Whoosh indexes and names it when it fails. Everything else in slayer_kb
uses Whoosh's public API and this module's names only (tests/test_architecture.py).

What relies on what:

- the codec (``Codec``): field lengths read once per segment, segment files read in place;
- ``reader_reusing``: searchers reopened with the segments that did not change; ``Docset``,
  ``multi_column``: what a searcher derives from its segments, put together from kept parts
  (leaves.py);
- ``segments``, ``copy_segments``, ``table_of_contents``, ``move_segment_files``,
  ``write_table_of_contents``: merges of segments outside Whoosh's writer (compaction.py);
- ``postings_of``, ``posting_blocks``, ``length_bytes``, ``LENGTH_OF_BYTE``, ``field_b``: BM25F
  scored with numpy over whole posting lists (scoring.py, bm25.py); ``index_of``: decoded
  postings kept by index (postings.py);
- ``BulkWriter``, ``unblock_jobs``: the multi-process writer made safe to kill (workers.py);
- ``hash_reader_init``: Whoosh's own opening of a terms file, replaced by one that reads its
  directory at once (``_open_hash``).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh import columns
from whoosh import index as windex
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3Codec, W3LeafMatcher, W3PerDocReader, _lenfield
from whoosh.filedb import filetables
from whoosh.filedb.structfile import BufferFile
from whoosh.idsets import BitSet
from whoosh.index import TOC, clean_files
from whoosh.multiproc import MpWriter, SubWriterTask
from whoosh.reading import EmptyReader, MultiReader, SegmentReader
from whoosh.util.numeric import byte_to_length
from whoosh.writing import SegmentWriter

if TYPE_CHECKING:
    import numpy as np

# -- the codec ---------------------------------------------------------------------------------
#
# When a writer flushes a segment it asks, for every posting, the length of that field in that
# document (to record each block's length bounds). Whoosh's reader answers from the column file
# on disk, one read per posting, and for a field that stores no lengths (every ID and keyword
# field) it checks whether the column's file exists, a stat per posting. A 100,000-memory index
# has about ten million postings, so a rebuild spent a third of each worker's flush there. This
# reader loads each length column once and answers from memory; searchers get the same answers.

# Whoosh stores a field's length in a document as one byte; the length each byte stands for
# (0: the field is empty in that document).
LENGTH_OF_BYTE: tuple[int, ...] = tuple(byte_to_length(b) if b else 0 for b in range(256))


class Codec(W3Codec):
    """Whoosh's W3 codec with ``_PerDocReader``. Assumes W3PerDocReader keeps its document count
    in ``_doccount`` and each field's lengths in a column named ``_lenfield(field)`` of
    LENGTHS_COLUMN bytes; segments it writes are byte for byte W3Codec's. Indexes name it by
    its subclass ``codec.Codec`` (see there)."""

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
        return [LENGTH_OF_BYTE[b] for b in self.column_reader(lenfield, LENGTHS_COLUMN)]


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

    def peek(self, size: int = 1) -> memoryview:
        """The bytes ahead, without moving or copying: pickle.load reads a posting block's
        header from what it peeks (one call, then a read of what it used) rather than with a
        read for each of its parts (about twenty)."""
        return self._view[self._at : self._at + max(size, 1)]

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
    # BufferFile.__init__'s attributes (BUFFER_FILE_ATTRIBUTES), without its io.BytesIO(buf):
    # that copy reads the whole part, so every page of the mapped segment file became resident
    # (90 MB at 100,000 memories when a search process opened its readers) for a buffer thrown
    # away at once.
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
# Assumes BufferFile.__init__ sets exactly BUFFER_FILE_ATTRIBUTES.
BUFFER_FILE_ATTRIBUTES = frozenset({"_buf", "_name", "file", "onclose", "is_real", "is_closed"})
_buffer_file_init = BufferFile.__init__
BufferFile.__init__ = _open_view


def _open_hash(self: Any, dbfile: Any, length: int | None = None, magic: bytes = b"HSH3", startoffset: int = 0) -> None:
    """HashReader.__init__ with its directory of 256 hash tables read in one read rather than
    one each: every segment's terms file is one, opened with each reader of the segment (a
    save's look-ups open every segment's), and the 256 reads were a third of a save's Python
    time in process. Assumes HashReader.__init__ sets these attributes and no other."""
    self.dbfile = dbfile
    self.startoffset = startoffset
    self.is_closed = False
    if length is None:
        dbfile.seek(0, os.SEEK_END)
        length = dbfile.tell() - startoffset
    dbfile.seek(startoffset)
    if (filemagic := dbfile.read(4)) != magic:
        raise filetables.FileFormatError(f"Unknown file header {filemagic!r}")
    self.hashtype = dbfile.read_byte()
    self.hashfn = filetables._hash_functions[self.hashtype]
    dbfile.read_int()  # two ints Whoosh keeps for later use
    dbfile.read_int()
    self.startofdata = dbfile.tell()
    extras_end = startoffset + length - filetables._INT_SIZE
    extras_at = extras_end - dbfile.get_int(extras_end)
    dbfile.seek(extras_at)
    self._read_extras()
    dbfile.seek(extras_at - filetables._directory_size)
    self.tables = list(filetables._dir_entry.iter_unpack(dbfile.read(filetables._directory_size)))
    self.endofdata = self.tables[0][0]


hash_reader_init = filetables.HashReader.__init__
filetables.HashReader.__init__ = _open_hash


def reader_reusing(ix: Any, old: Any) -> Any:
    """A reader over ``ix``'s latest segments that keeps ``old``'s reader of every segment that
    did not change, and closes the others.

    A save adds one small segment; opening every segment again cost more than the save's own
    look-ups. Whoosh's ``reader(reuse=...)`` would do this, but it keeps segments a merge has
    removed and readers of segments that gained deletions; here a reader is kept only for the
    same segment with the same number of deleted documents (deletions in a segment only grow,
    so the count names the set). Assumes ``table_of_contents`` and SegmentReader's constructor.
    """
    info = table_of_contents(ix)
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


class Docset(BitSet):  # type: ignore[misc]  # Whoosh has no type hints
    """A ``BitSet`` made from document numbers, never changed after: the same bytes as
    ``BitSet(docnums, size)`` built a document at a time, and iterated from a list (numpy's
    ``fromiter`` reads it in C where a ``BitSet`` yields its bits one by one in Python). Assumes
    BitSet's bytes are its ``bits`` array, sized by ``bytes_for_bits``."""

    def __init__(self, docnums: np.ndarray, size: int) -> None:
        import numpy as np  # not at import: a process that never searches need not load it

        # BitSet sizes its bytes for size + 1 bits (bytes_for_bits), and keeps bit n in byte
        # n >> 3 at 1 << (n & 7): numpy's little bit order.
        marks = np.zeros(size + 1, dtype=bool)
        marks[docnums] = True
        self.bits = array("B", np.packbits(marks, bitorder="little").tobytes())
        self._docnums: list[int] = np.flatnonzero(marks).tolist()

    def copy(self) -> BitSet:
        """A plain ``BitSet`` of the same documents, for whoever would change it."""
        return BitSet.from_bytes(self.bits)

    def __iter__(self) -> Any:
        return iter(self._docnums)

    def __len__(self) -> int:
        return len(self._docnums)

    def __bool__(self) -> bool:
        return bool(self._docnums)


def multi_column(readers: list[Any], offsets: list[int]) -> Any:
    """The column reader over segments whose column readers are ``readers``, their documents
    numbered from ``offsets``: what ``MultiReader.column_reader`` builds from its segments'.
    Assumes ``whoosh.columns.MultiColumnReader(readers, offsets)``."""
    return columns.MultiColumnReader(readers, offsets)


# -- segments and their merges -----------------------------------------------------------------


def table_of_contents(ix: Any) -> Any:
    """The index's table of contents as its file holds it now: ``.segments`` (each with
    ``segment_id()``, ``doc_count_all()``, ``deleted_docs()``), ``.generation`` and ``.schema``.
    Assumes FileIndex._read_toc reads the newest TOC file each time it is called."""
    return ix._read_toc()


def segments(ix: Any) -> list[Any]:
    """The index's segments, read from its newest table of contents (FileIndex._segments)."""
    return list(ix._segments())


def copy_segments(ix: Any, chosen: list[Any], folder: Path, codec: Any) -> tuple[Any, list[dict[int, int]]]:
    """A new segment, in a new index in ``folder``, holding the live documents of ``chosen``
    (segments of ``ix``), without taking ``ix``'s write lock; and, for each chosen segment, its
    live documents' docnums -> their docnums in the new segment.

    Assumes SegmentWriter's steps of a merge (``docnum``, ``write_per_doc`` returning a docmap
    or None when nothing was deleted, ``add_postings_to_pool``) and of a commit without a TOC
    (``_added``, ``_finalize_segment``, ``_finish``). FileNotFoundError: a chosen segment's
    file is gone (another merge replaced it)."""
    private = windex.create_in(str(folder), ix.schema, indexname=ix.indexname)
    writer = SegmentWriter(private, codec=codec)
    docmaps = []
    try:
        fieldnames = set(ix.schema.names())
        for segment in chosen:
            reader = SegmentReader(ix.storage, ix.schema, segment)
            try:
                start = writer.docnum
                docmap = writer.write_per_doc(fieldnames, reader)
                writer.add_postings_to_pool(reader, start, docmap)
                docmaps.append(docmap if docmap is not None else {n: start + n for n in range(segment.doc_count_all())})
            finally:
                reader.close()
        writer._added = True
        new = writer._finalize_segment()
    finally:
        writer._finish()
    return new, docmaps


def move_segment_files(segment: Any, folder: Path, ix: Any) -> None:
    """Move ``segment``'s files from ``folder`` into ``ix``'s folder. Assumes a segment's files
    are named ``<indexname>_<segid>`` and a suffix."""
    for name in os.listdir(folder):
        if name.startswith(f"{ix.indexname}_{segment.segid}"):
            os.replace(folder / name, os.path.join(ix.storage.folder, name))


def write_table_of_contents(ix: Any, toc: Any, segments: list[Any]) -> None:
    """Replace ``toc`` (from ``table_of_contents``) by one listing ``segments``, as a writer's
    commit does (the caller holds the write lock): the next generation's TOC file, written
    atomically, then files no segment lists removed. Assumes Whoosh's TOC(...).write and
    clean_files."""
    generation = toc.generation + 1
    TOC(toc.schema, segments, generation).write(ix.storage, ix.indexname)
    clean_files(ix.storage, ix.indexname, generation, segments)


# -- posting lists and lengths for numpy -------------------------------------------------------


def postings_of(segment: Any, fieldname: str, text: bytes, fmt: Any) -> Any:
    """The matcher of a word's postings in one segment reader, deleted documents included
    (SegmentReader.postings leaves them out; live statistics must count them to drop them).
    Assumes SegmentReader._terms.matcher(fieldname, text, format)."""
    return segment._terms.matcher(fieldname, text, fmt)


def posting_blocks(matcher: Any) -> Iterator[tuple[Sequence[int], Any, int]] | None:
    """Each block of a ``postings_of`` matcher, read whole: (docnums, each a delta from the one
    before it, the block's first from 0; weights; number of postings), weights being a
    sequence, one float for the whole block, or None for all 1.0. None when the matcher is not W3's leaf matcher with integer ids:
    walk it with its public is_active / id / weight / next.

    Assumes W3LeafMatcher's ``_byteids``, ``_atend``, ``_read_data``, ``_data`` (ids, weights,
    ...), ``_blocklength`` and ``_next_block``."""
    if type(matcher) is not W3LeafMatcher or matcher._byteids:
        return None
    return _blocks(matcher)


def _blocks(matcher: Any) -> Iterator[tuple[Sequence[int], Any, int]]:
    while not matcher._atend:
        matcher._read_data()
        yield matcher._data[0], matcher._data[1], matcher._blocklength
        matcher._next_block()


def index_of(searcher: Any) -> Any:
    """The index a searcher was opened from, or None (one made from a bare reader). Assumes
    Searcher keeps it in ``_ix``."""
    return getattr(searcher, "_ix", None)


def length_bytes(segment: Any, fieldname: str) -> bytes | None:
    """A segment reader's stored lengths of ``fieldname``, one byte a document (decode with
    LENGTH_OF_BYTE; the column may be shorter than the segment); None when the field keeps no
    lengths. Assumes SegmentReader._perdoc._cached_reader and the column reader's ``_dbfile``,
    ``_basepos`` and ``_count``."""
    column = segment._perdoc._cached_reader(_lenfield(fieldname), LENGTHS_COLUMN)
    if column is None:
        return None
    data: bytes = column._dbfile.get(column._basepos, column._count)
    return data


def field_b(weighting: Any, fieldname: str) -> float:
    """BM25F's B for ``fieldname``: its ``<field>_B`` argument, else B. Assumes BM25F keeps
    those in ``_field_B``."""
    b: float = weighting._field_B.get(fieldname, weighting.B)
    return b


# -- the multi-process writer ------------------------------------------------------------------


class _Worker(SubWriterTask):  # type: ignore[misc]
    def __init__(self, on_start: Callable[[int], None], *args: Any) -> None:
        super().__init__(*args)
        self.on_start = on_start
        self.parent = os.getpid()

    def run(self) -> None:
        self.on_start(self.parent)
        super().run()


class BulkWriter(MpWriter):  # type: ignore[misc]
    """Whoosh's MpWriter whose worker processes first call ``on_worker_start(parent pid)``.
    Assumes MpWriter starts each worker in ``_new_task`` as a SubWriterTask of (storage,
    indexname, jobqueue, resultqueue, subargs, multisegment) kept in ``tasks``."""

    def __init__(self, ix: Any, on_worker_start: Callable[[int], None], **kwargs: Any) -> None:
        super().__init__(ix, **kwargs)
        self.on_worker_start = on_worker_start

    def _new_task(self) -> Any:
        task = _Worker(self.on_worker_start, self.storage, self.indexname, self.jobqueue, self.resultqueue,
                       self.subargs, self.multisegment)
        self.tasks.append(task)
        task.start()
        return task


def unblock_jobs(writer: Any) -> None:
    """Let one blocked (or the next) put on the writer's full job queue through, when no worker
    reads it any more. Assumes MpWriter's ``jobqueue`` is a multiprocessing Queue whose
    bounded semaphore is ``_sem``."""
    writer.jobqueue._sem.release()
