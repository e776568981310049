"""whoosh_internals.Codec: the index's segments are byte for byte what Whoosh's own codec writes, and the
lengths its reader gives are Whoosh's."""

from __future__ import annotations

import gc
import io
import multiprocessing
import os
import pickle
import signal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from whoosh import index as windex
from whoosh.codec.whoosh3 import W3PerDocReader
from whoosh.filedb.structfile import BufferFile

from slayer_kb.core.errors import StoreError
from slayer_kb.core.memory import Memory
from slayer_kb.search import schema, writing
from slayer_kb.search.whoosh_internals import Codec, _ViewReader


def documents() -> list[dict[str, object]]:
    docs = []
    for i in range(240):
        memory = Memory(
            id=str(i),
            learning="refunds are negative " * (i % 5 + 1) + f"word{i % 17}",
            title=None if i % 3 == 0 else f"Title {i % 11}",
            description=None if i % 4 else "orders shipped late",
            entities=[] if i % 5 == 0 else ["shop.orders.amount", "memory:7"][: i % 2 + 1],
            type="decision" if i % 2 else None,
            created_at=f"2026-01-{i % 28 + 1:02d}T00:00:00Z",
        )
        docs.append(schema.memory_document(memory, f"hash{i}"))
    return docs


def build(folder: Path, codec: Codec | None) -> dict[str, bytes]:
    folder.mkdir()
    ix = windex.create_in(str(folder), schema.SCHEMA)
    writer = ix.writer(codec=codec, compound=False) if codec else ix.writer(compound=False)
    for doc in documents():
        writer.add_document(**doc)
    writer.commit()
    # Files are named <index>_<random segment id>.<part>; compare the parts.
    return {p.name.split(".", 1)[1]: p.read_bytes() for p in folder.iterdir() if "." in p.name and p.suffix != ".toc"}


def test_segments_are_byte_for_byte_whooshs(tmp_path: Path) -> None:
    theirs = build(tmp_path / "whoosh", None)
    ours = build(tmp_path / "ours", Codec())
    assert sorted(ours) == sorted(theirs) and {"pst", "trm", "_text_len.col"} <= set(ours)
    for part in theirs:
        assert ours[part] == theirs[part], part


def test_field_lengths_are_whooshs_for_every_document_and_field(tmp_path: Path) -> None:
    build(tmp_path / "ours", Codec())
    ix = windex.open_dir(str(tmp_path / "ours"))
    with ix.reader() as reader:
        segment = reader.segment()
        ours = Codec().per_document_reader(ix.storage, segment)
        theirs = W3PerDocReader(ix.storage, segment)
        compared = 0
        for docnum in range(segment.doc_count_all()):
            for name in schema.SCHEMA.names():
                for default in (0, 7):
                    # Whoosh answers None (not 0) for a field that is empty in a document.
                    expected = theirs.doc_field_length(docnum, name, default)
                    assert ours.doc_field_length(docnum, name, default) == (0 if expected is None else expected)
                    compared += expected is not None and expected > 0
        assert compared > 500
        with pytest.raises(IndexError):
            ours.doc_field_length(segment.doc_count_all() + 1, "text")


def test_a_bulk_write_pauses_the_garbage_collector_only_while_it_runs(tmp_path: Path) -> None:
    folder = tmp_path / "ix"
    folder.mkdir()
    ix = windex.create_in(str(folder), schema.SCHEMA)
    assert gc.isenabled()
    with writing.writer(ix, bulk=True) as writer:
        assert not gc.isenabled()
        for doc in documents():
            writer.add_document(**doc)
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="stop"), writing.writer(ix, bulk=True) as writer:
        for doc in documents():  # more than one batch: the workers start
            writer.add_document(**doc)
        raise RuntimeError("stop")
    assert gc.isenabled()
    # Whoosh's cancel leaves its worker processes waiting for work; none may outlive the write.
    assert [type(p).__name__ for p in multiprocessing.active_children()] == []
    with ix.searcher() as searcher:
        assert searcher.doc_count() == 240  # the cancelled write added nothing
    with writing.writer(ix, bulk=False):
        assert gc.isenabled()
    assert 128 <= writing.pool_mb() <= 1024


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_worker_killed_during_a_bulk_write_is_an_error_not_a_silent_loss(tmp_path: Path) -> None:
    folder = tmp_path / "ix"
    folder.mkdir()
    ix = windex.create_in(str(folder), schema.SCHEMA)
    with pytest.raises(StoreError, match=r"worker process died \(exit code -9; -9 is a kill"), \
            writing.writer(ix, bulk=True) as writer:
        for doc in documents():
            writer.add_document(**doc)
        os.kill(writer.tasks[0].pid, signal.SIGKILL)
        writer.tasks[0].join()
    assert gc.isenabled()


READS = st.lists(st.one_of(
    st.tuples(st.just("read"), st.one_of(st.none(), st.integers(-1, 70))),
    st.tuples(st.just("readline"), st.one_of(st.none(), st.integers(-1, 70))),
    st.tuples(st.just("seek"), st.integers(0, 80)),
    st.tuples(st.just("tell"), st.none()),
), max_size=12)


@given(data=st.binary(max_size=9000), reads=READS)
def test_a_part_read_in_place_reads_as_a_copy_does(data: bytes, reads: list[tuple[str, int | None]]) -> None:
    """Each part of a segment is read in place (_ViewReader), not copied whole into a BytesIO:
    every read gives what BytesIO, the reference, gives."""
    data = data.replace(b"x", b"\n")
    ours, copy = _ViewReader(memoryview(data)), io.BytesIO(data)
    for method, arg in reads:
        args = () if arg is None and method == "tell" else (arg,)
        assert getattr(ours, method)(*args) == getattr(copy, method)(*args), (method, arg)


def test_segment_parts_are_read_in_place(tmp_path: Path) -> None:
    """Whoosh opens the parts of a memory-mapped compound segment as BufferFiles over slices;
    they read the slice itself, and pickles in them load as from a copy."""
    view = memoryview(pickle.dumps({"terms": list(range(50))}, protocol=0) + b"tail")
    part = BufferFile(view)
    assert isinstance(part.file, _ViewReader)
    assert part.read_pickle() == {"terms": list(range(50))}
    assert part.file.read() == b"tail"
    assert isinstance(BufferFile(b"bytes").file, io.BytesIO)  # a copy made on purpose stays one


@given(objects=st.lists(st.recursive(st.none() | st.integers() | st.floats(allow_nan=False) | st.binary(max_size=40),
                                     lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=4)), min_size=1, max_size=4),
       protocol=st.sampled_from([0, 2, pickle.HIGHEST_PROTOCOL]), tail=st.binary(max_size=20))
def test_pickles_load_in_place_as_from_a_copy(objects: list[object], protocol: int, tail: bytes) -> None:
    """pickle.load reads a posting block's header from what ``peek`` shows (no copy, one call
    instead of one a part): each pickle loads as from a copy, and the reading goes on from the
    same place."""
    data = b"".join(pickle.dumps(o, protocol=protocol) for o in objects) + tail
    ours, copy = _ViewReader(memoryview(data)), io.BytesIO(data)
    assert bytes(ours.peek(5)) == data[:5] and ours.tell() == 0
    for obj in objects:
        assert pickle.load(ours) == pickle.load(copy) == obj
        assert ours.tell() == copy.tell()
    assert ours.read() == copy.read() == tail


def test_opening_a_segment_copies_no_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a reader makes no BytesIO copy of a memory-mapped part: such a copy reads every
    page of the segment file (at 100,000 memories a search process held 90 MB of them, and
    the copies on top) for a buffer thrown away at once."""
    from whoosh.filedb import structfile

    folder = tmp_path / "ix"
    folder.mkdir()
    ix = windex.create_in(str(folder), schema.SCHEMA)
    with writing.writer(ix, bulk=False) as writer:
        for doc in documents():
            writer.add_document(**doc)
    copies: list[int] = []

    class CountingBytesIO(io.BytesIO):
        def __init__(self, data: bytes | memoryview = b"") -> None:
            copies.append(len(data))
            super().__init__(data)

    monkeypatch.setattr(structfile, "BytesIO", CountingBytesIO)
    ix = windex.open_dir(str(folder))
    with ix.searcher() as searcher:
        assert searcher.doc_count() == 240
        assert len(list(searcher.documents())) == 240
    assert copies == []
