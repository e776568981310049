"""The contract between slayer-kb and Whoosh's private structures: one test per assumption that
slayer_kb/search/whoosh_internals.py makes, against real Whoosh indexes. After an upgrade of
Whoosh, a failure here names the assumption that broke and the function that relies on it."""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh import index as windex
from whoosh.codec.whoosh3 import W3PerDocReader
from whoosh.fields import ID, KEYWORD, STORED, TEXT, Schema
from whoosh.filedb import filetables
from whoosh.filedb.filestore import FileStorage
from whoosh.filedb.structfile import BufferFile
from whoosh.idsets import BitSet
from whoosh.reading import SegmentReader
from whoosh.scoring import BM25F
from whoosh.writing import NO_MERGE

from slayer_kb.search import codec, schema
from slayer_kb.search import whoosh_internals as internals
from testing import examples

SCHEMA = Schema(
    id=ID(stored=True, unique=True),
    text=TEXT(phrase=False),
    tags=KEYWORD(scorable=True),
    kind=ID,
    data=STORED,
)
# More documents than a posting block holds (W3's default: 128), so common words span blocks.
DOCS = 300


@contextlib.contextmanager
def assumption(name: str) -> Iterator[None]:
    """Turns any failure inside into one that names the broken assumption."""
    try:
        yield
    except Exception as error:
        raise AssertionError(f"Whoosh no longer keeps this assumption of whoosh_internals: {name} ({error!r})") from error


def document(n: int) -> dict[str, Any]:
    return {
        "id": str(n),
        "text": " ".join(["common"] * (n % 4 + 1) + [f"word{n % 13}"] * (n % 3) + ["rare"] * (n == 7)),
        "tags": " ".join(["tag"] * (n % 5 + 1)),
        "kind": "even" if n % 2 == 0 else "odd",
        "data": {"n": n},
    }


def build(folder: Path, parts: tuple[range, ...] = (range(DOCS),), deleted: tuple[str, ...] = ()) -> Any:
    """An index of one segment per part (no merges), with ``deleted`` ids deleted at the end."""
    folder.mkdir()
    ix = windex.create_in(str(folder), SCHEMA)
    for part in parts:
        writer = ix.writer(codec=internals.Codec())
        for n in part:
            writer.add_document(**document(n))
        writer.commit(mergetype=NO_MERGE)
    if deleted:
        writer = ix.writer(codec=internals.Codec())
        for doc_id in deleted:
            writer.delete_by_term("id", doc_id)
        writer.commit(mergetype=NO_MERGE)
    return ix


def stored_ids(reader: Any) -> set[str]:
    return {fields["id"] for _docnum, fields in reader.iter_docs()}


def test_codec_reads_whooshs_length_columns(tmp_path: Path) -> None:
    """Codec: W3PerDocReader keeps its document count in ``_doccount`` and each field's lengths
    in the column ``_lenfield(field)``: its lengths are Whoosh's own, document by document."""
    ix = build(tmp_path / "ix")
    with ix.reader() as reader, assumption("W3PerDocReader._doccount and the _<field>_len length columns"):
        segment = reader.segment()
        storage = segment.open_compound_file(ix.storage)
        ours = internals.Codec().per_document_reader(storage, segment)
        theirs = W3PerDocReader(storage, segment)
        assert ours._doccount == DOCS
        for docnum in range(DOCS):
            for name in ("text", "tags", "id"):
                expected = theirs.doc_field_length(docnum, name, 0)
                assert ours.doc_field_length(docnum, name, 0) == (expected or 0), (docnum, name)
        assert [ours.doc_field_length(n, "text") for n in range(4)] == [1, 3, 5, 4]


def test_the_table_of_contents_names_the_codecs_class(tmp_path: Path) -> None:
    """codec.Codec: Whoosh pickles each segment's codec into the table of contents, so an index
    names the module and class it was written with (slayer_kb.search.codec.Codec): moving that
    class makes every existing index unreadable, and rebuilt."""
    (tmp_path / "ix").mkdir()
    ix = windex.create_in(str(tmp_path / "ix"), schema.SCHEMA)
    writer = ix.writer(codec=schema.CODEC)
    writer.add_document(id="1")
    writer.commit()
    toc = next((tmp_path / "ix").glob("*.toc")).read_bytes()
    with assumption("the TOC pickles the codec's class by module path"):
        assert b"slayer_kb.search.codec" in toc and b"whoosh_internals" not in toc
        assert type(windex.open_dir(str(tmp_path / "ix")).reader().segment().codec()) is codec.Codec


def test_buffer_file_sets_the_attributes_it_did() -> None:
    """Codec's in-place parts: BufferFile.__init__ sets exactly BUFFER_FILE_ATTRIBUTES, which
    ``_open_view`` sets for a memoryview instead of calling it."""
    with assumption("BufferFile.__init__ sets exactly BUFFER_FILE_ATTRIBUTES"):
        assert set(vars(BufferFile(b"abc", name="part"))) == internals.BUFFER_FILE_ATTRIBUTES
        assert set(vars(BufferFile(memoryview(b"abc"), name="part"))) == internals.BUFFER_FILE_ATTRIBUTES


def test_a_terms_file_is_opened_as_whoosh_opens_it(tmp_path: Path) -> None:
    """``_open_hash`` sets the attributes HashReader.__init__ sets, to the same values: the one
    read of its directory gives what Whoosh's 256 reads give, for a segment's terms file (a compound
    file's part, read in place, and a file of its own)."""
    (tmp_path / "ix").mkdir()
    ix = windex.create_in(str(tmp_path / "ix"), schema.SCHEMA)
    for compound in (True, False):
        writer = ix.writer(codec=schema.CODEC, compound=compound)
        for n in range(40):
            writer.add_document(id=f"{compound}{n}", text=f"refunds counted once, word{n} and word{n * 7}")
        writer.commit(merge=False)
    with ix.reader() as reader:
        for leaf, _offset in reader.leaf_readers():
            segment = leaf.segment()
            storage = segment.open_compound_file(ix.storage) if segment.is_compound() else ix.storage
            dbfile = segment.open_file(storage, codec.Codec.TERMS_EXT)  # each opening seeks where it reads
            ours = filetables.OrderedHashReader(dbfile)
            whooshs = object.__new__(filetables.OrderedHashReader)
            internals.hash_reader_init(whooshs, dbfile)
            with assumption("HashReader.__init__ sets the attributes _open_hash sets, to the same values"):
                assert vars(ours) == vars(whooshs)
            assert len(ours.tables) == 256 and list(ours.keys()) == list(whooshs.keys())


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(0, 70).flatmap(lambda size: st.tuples(st.just(size), st.sets(st.integers(0, max(size - 1, 0)), max_size=size))))
def test_a_docset_is_the_bitset_whoosh_builds_a_document_at_a_time(case: tuple[int, set[int]]) -> None:
    """Docset: BitSet keeps its bytes in ``bits``, sized by bytes_for_bits, bit n at
    1 << (n & 7) of byte n >> 3."""
    size, docnums = case
    docnums = {d for d in docnums if d < size}
    want = BitSet(iter(sorted(docnums)), size=size)  # a generator, as docs_for_query gives
    with assumption("BitSet.bits: bytes_for_bits(size) bytes, bit n at 1 << (n & 7) of byte n >> 3"):
        got = internals.Docset(np.array(sorted(docnums), dtype=np.int64), size)
    assert got.bits.tobytes() == want.bits.tobytes()
    assert list(got) == list(want) == sorted(docnums)
    assert len(got) == len(want) and bool(got) == bool(docnums)
    assert all((n in got) == (n in want) for n in range(size + 9))
    copied = got.copy()
    assert type(copied) is BitSet and list(copied) == sorted(docnums)


def test_a_column_over_segments_is_the_multireaders(tmp_path: Path) -> None:
    """multi_column: columns.MultiColumnReader(readers, offsets) is what MultiReader.column_reader
    builds from its segments' column readers."""
    folder = tmp_path / "ix"
    folder.mkdir()
    ix = windex.create_in(str(folder), Schema(id=ID(stored=True, unique=True, sortable=True)))
    for part in (range(0, 7), range(7, 12), range(12, 13)):
        writer = ix.writer()
        for n in part:
            writer.add_document(id=f"m{n}")
        writer.commit(mergetype=NO_MERGE)
    with ix.reader() as reader:
        leaves = reader.leaf_readers()
        assert len(leaves) == 3
        with assumption("columns.MultiColumnReader(readers, offsets)"):
            got = internals.multi_column([leaf.column_reader("id") for leaf, _o in leaves], [o for _l, o in leaves])
            assert list(got) == list(reader.column_reader("id")) == [f"m{n}" for n in range(13)]
            assert got[7] == "m7" and got[12] == "m12"


def test_the_table_of_contents_is_read_afresh(tmp_path: Path) -> None:
    """table_of_contents, segments: FileIndex._read_toc and _segments read the newest TOC each
    call, with its segments, generation and schema."""
    ix = build(tmp_path / "ix", (range(0, 10), range(10, 20)))
    with assumption("FileIndex._read_toc / _segments read the newest table of contents"):
        toc = internals.table_of_contents(ix)
        with ix.reader() as reader:
            assert [s.segment_id() for s in toc.segments] == [r.segment().segment_id() for r, _ in reader.leaf_readers()]
        assert toc.generation == ix.latest_generation() and toc.schema.names() == SCHEMA.names()
        writer = ix.writer()
        writer.add_document(**document(20))
        writer.commit(mergetype=NO_MERGE)
        assert internals.table_of_contents(ix).generation == toc.generation + 1
        assert [s.doc_count_all() for s in internals.segments(ix)] == [10, 10, 1]


def test_a_reader_keeps_the_segments_that_did_not_change(tmp_path: Path) -> None:
    """reader_reusing: SegmentReader(storage, schema, segment, generation=...) opens one
    segment of the table of contents; a segment's deleted_count() grows with its deletions."""
    ix = build(tmp_path / "ix", (range(0, 10), range(10, 20)))
    with assumption("SegmentReader(storage, schema, segment, generation=) and Segment.deleted_count"):
        old = ix.reader()
        first, second = [r for r, _ in old.leaf_readers()]
        writer = ix.writer()
        writer.delete_by_term("id", "15")
        writer.add_document(**document(20))
        writer.commit(mergetype=NO_MERGE)
        new = internals.reader_reusing(ix, old)
        readers = [r for r, _ in new.leaf_readers()]
        assert readers[0] is first and readers[1] is not second and len(readers) == 3
        assert stored_ids(new) == {str(n) for n in range(21)} - {"15"}
        assert new.doc_count() == 20 and new.generation() == ix.latest_generation()
        new.close()


def test_segments_copy_into_a_private_folder(tmp_path: Path) -> None:
    """copy_segments: SegmentWriter's merge steps (docnum, write_per_doc, add_postings_to_pool)
    and its commit steps without a TOC (_added, _finalize_segment, _finish) copy the live
    documents of chosen segments into one new segment, with a docmap per segment."""
    ix = build(tmp_path / "ix", (range(0, 10), range(10, 20), range(20, 30)), deleted=("3", "12"))
    chosen = internals.segments(ix)[:2]
    (tmp_path / "private").mkdir()
    with assumption("SegmentWriter's merge and finalize steps"):
        new, docmaps = internals.copy_segments(ix, chosen, tmp_path / "private", internals.Codec())
        reader = SegmentReader(FileStorage(str(tmp_path / "private")), ix.schema, new)
        assert new.doc_count_all() == 18 and reader.doc_count() == 18
        assert sorted(docmaps[0]) == [n for n in range(10) if n != 3]
        assert docmaps[1] == {n: 9 + n - (n > 2) for n in range(10) if n != 2}
        with SegmentReader(ix.storage, ix.schema, chosen[1]) as source:
            for old, renumbered in docmaps[1].items():
                assert reader.stored_fields(renumbered) == source.stored_fields(old)
        assert stored_ids(reader) == {str(n) for n in range(20)} - {"3", "12"}
        assert reader.doc_frequency("text", "common") == 18 and not reader.has_deletions()
        reader.close()
    lock = ix.lock("WRITELOCK")
    assert lock.acquire(blocking=False), "the copy left the index's write lock taken"
    lock.release()


def test_a_copied_segment_is_swapped_in(tmp_path: Path) -> None:
    """move_segment_files, write_table_of_contents: a segment's files are named
    ``<indexname>_<segid>``; TOC(schema, segments, generation).write and clean_files commit a
    table of contents and delete the files no segment lists."""
    ix = build(tmp_path / "ix", (range(0, 10), range(10, 20), range(20, 30)), deleted=("3",))
    chosen = internals.segments(ix)[:2]
    (tmp_path / "private").mkdir()
    new, _ = internals.copy_segments(ix, chosen, tmp_path / "private", internals.Codec())
    with assumption("segment files named <indexname>_<segid>; TOC.write and clean_files"):
        toc = internals.table_of_contents(ix)
        internals.move_segment_files(new, tmp_path / "private", ix)
        assert [n for n in os.listdir(tmp_path / "private") if n.startswith(new.segment_id())] == []
        assert [n for n in os.listdir(tmp_path / "ix") if n.startswith(new.segment_id())] != []
        kept = [s for s in toc.segments if s not in chosen]
        internals.write_table_of_contents(ix, toc, kept + [new])
        ix = windex.open_dir(str(tmp_path / "ix"))
        assert [s.doc_count_all() for s in internals.segments(ix)] == [10, 19]
        with ix.searcher() as searcher:
            assert stored_ids(searcher.reader()) == {str(n) for n in range(30)} - {"3"}
        names = os.listdir(tmp_path / "ix")
        assert not [n for s in chosen for n in names if n.startswith(s.segment_id())]
        assert [n for n in names if n.endswith(".toc")] == [f"_MAIN_{toc.generation + 1}.toc"]


def test_raw_postings_include_deleted_documents(tmp_path: Path) -> None:
    """postings_of: SegmentReader._terms.matcher(field, text, format) lists every posting,
    deleted documents too (SegmentReader.postings leaves those out)."""
    ix = build(tmp_path / "ix", deleted=("7",))
    with ix.reader() as reader, assumption("SegmentReader._terms.matcher lists deleted documents"):
        matcher = internals.postings_of(reader, "text", b"rare", SCHEMA["text"].format)
        assert list(matcher.all_ids()) == [7]
        assert list(reader.postings("text", "rare").all_ids()) == []


def _walk(matcher: Any) -> tuple[list[int], list[float]]:
    ids, weights = [], []
    while matcher.is_active():
        ids.append(matcher.id())
        weights.append(matcher.weight())
        matcher.next()
    return ids, weights


def _decode(blocks: Iterator[tuple[Any, Any, int]]) -> tuple[list[int], list[float], int]:
    ids: list[int] = []
    weights: list[float] = []
    count = 0
    for deltas, raw_weights, length in blocks:
        start = 0  # each block's first docnum is a delta from 0
        for delta in deltas:
            start += delta
            ids.append(start)
        if raw_weights is None:
            weights += [1.0] * length
        elif isinstance(raw_weights, float):
            weights += [raw_weights] * length
        else:
            weights += [float(w) for w in raw_weights]
        count += 1
    return ids, weights, count


@pytest.mark.parametrize(("fieldname", "text", "blocks"), [
    ("text", b"common", 3), ("text", b"word5", 1), ("tags", b"tag", 3), ("kind", b"even", 2),
])
def test_posting_blocks_decode_as_the_matcher_walks(tmp_path: Path, fieldname: str, text: bytes, blocks: int) -> None:
    """posting_blocks: W3LeafMatcher's _byteids, _atend, _read_data, _data (docnum deltas,
    weights: a list, one float or None), _blocklength and _next_block give, block by block,
    what is_active / id / weight / next give a posting at a time."""
    ix = build(tmp_path / "ix")
    fmt = SCHEMA[fieldname].format
    with ix.reader() as reader, assumption("W3LeafMatcher's block fields and steps"):
        raw = internals.posting_blocks(internals.postings_of(reader, fieldname, text, fmt))
        assert raw is not None
        ids, weights, count = _decode(raw)
        assert (ids, weights) == _walk(internals.postings_of(reader, fieldname, text, fmt))
        assert count == blocks and len(ids) > 0


def test_stored_lengths_are_one_byte_a_document(tmp_path: Path) -> None:
    """length_bytes, LENGTH_OF_BYTE: a segment's lengths of a field are one byte a document in
    the column SegmentReader._perdoc._cached_reader gives (``_dbfile``, ``_basepos``,
    ``_count``), which LENGTH_OF_BYTE decodes as doc_field_length does; no column for an ID."""
    ix = build(tmp_path / "ix")
    with ix.reader() as reader, assumption("the per-document reader's length column and its file slice"):
        for fieldname in ("text", "tags"):
            data = internals.length_bytes(reader, fieldname)
            assert data is not None and len(data) == DOCS
            assert [internals.LENGTH_OF_BYTE[b] for b in data] == [reader.doc_field_length(n, fieldname) for n in range(DOCS)]
        assert internals.length_bytes(reader, "kind") is None


def test_bm25f_keeps_per_field_b() -> None:
    """field_b: BM25F keeps its ``<field>_B`` arguments in ``_field_B``."""
    weighting = BM25F(B=0.75, K1=1.2, title_B=0.3)
    with assumption("BM25F._field_B holds the <field>_B arguments"):
        assert (internals.field_b(weighting, "title"), internals.field_b(weighting, "text")) == (0.3, 0.75)


def record_start(parent: int) -> None:
    """A worker's start hook: leaves its pid and its parent's in the folder the test names."""
    (Path(os.environ["CONTRACT_STARTS"]) / str(os.getpid())).write_text(str(parent))


def test_bulk_writer_workers_start_through_new_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """BulkWriter: MpWriter starts each worker in ``_new_task`` as a SubWriterTask of (storage,
    indexname, jobqueue, resultqueue, subargs, multisegment), kept in ``tasks``."""
    starts = tmp_path / "starts"
    starts.mkdir()
    monkeypatch.setenv("CONTRACT_STARTS", str(starts))
    (tmp_path / "ix").mkdir()
    ix = windex.create_in(str(tmp_path / "ix"), SCHEMA)
    with assumption("MpWriter._new_task builds SubWriterTask(storage, indexname, jobqueue, resultqueue, subargs, "
                    "multisegment) into tasks"):
        writer = internals.BulkWriter(ix, on_worker_start=record_start, procs=2, batchsize=10, multisegment=True)
        for n in range(50):
            writer.add_document(**document(n))
        pids = [task.pid for task in writer.tasks]
        writer.commit()
        assert len(pids) == 2
        assert {p.name: p.read_text() for p in starts.iterdir()} == {str(pid): str(os.getpid()) for pid in pids}
        with ix.searcher() as searcher:
            assert searcher.doc_count() == 50


def test_a_full_job_queue_can_be_unblocked(tmp_path: Path) -> None:
    """unblock_jobs: MpWriter's jobqueue is a bounded multiprocessing Queue whose semaphore is
    ``_sem``; releasing it lets a put on the full queue through."""
    (tmp_path / "ix").mkdir()
    ix = windex.create_in(str(tmp_path / "ix"), SCHEMA)
    writer = internals.BulkWriter(ix, on_worker_start=record_start, procs=1)
    try:
        with assumption("MpWriter.jobqueue is a multiprocessing Queue with the semaphore _sem"):
            for n in range(4):
                writer.jobqueue.put_nowait(("job", n))
            with pytest.raises(queue.Full):
                writer.jobqueue.put_nowait(("job", 4))
            internals.unblock_jobs(writer)
            writer.jobqueue.put_nowait(("job", 4))
    finally:
        writer.cancel()


def test_whoosh_started_without_asyncio_and_urllib_still_answers(tmp_path: Path) -> None:
    # search/whoosh_start.py: in a fresh process the index module imports Whoosh with stand-ins
    # for urllib.request and the cached_property package. Whoosh's cached property is then the
    # standard library's and still caches a reader's deleted documents; its urlretrieve still
    # fetches (a file: URL); and both real modules are what a later import gets.
    (tmp_path / "source").write_text("fetched")
    probe = f"""
import functools, sys
import slayer_kb.search.index
import whoosh.compat, whoosh.reading
from whoosh.fields import ID, Schema
from whoosh.filedb import filetables
from whoosh.filedb.filestore import FileStorage
print(sorted(m for m in ("asyncio", "urllib.request", "cached_property") if m in sys.modules))
print(whoosh.reading.cached_property is functools.cached_property)
ix = FileStorage({str(tmp_path)!r}).create_index(Schema(id=ID(stored=True, unique=True)))
with ix.writer() as w:
    for i in range(3):
        w.add_document(id=str(i))
with ix.writer() as w:
    w.delete_by_term("id", "1")
with ix.reader() as r:
    print(sorted(r.deleted_docs_set), "deleted_docs_set" in vars(r))
whoosh.compat.urlretrieve("file://" + {str(tmp_path / "source")!r}, {str(tmp_path / "copy")!r})
import cached_property, urllib.request
print(cached_property.cached_property.__module__, urllib.request.urlopen.__module__)
"""
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "True", "[1] True", "cached_property urllib.request"]
    assert (tmp_path / "copy").read_text() == "fetched"
