"""The int8 scan of the sentence vectors (shortlist.py) keeps exactly the memories that scoring
every row in float32 keeps, with the same cosines, in a cold table and an expanded one."""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slayer_kb.core.memory import Memory
from slayer_kb.search import sentences, shortlist, vectors
from slayer_kb.search import table as tables
from testing import examples


def _table(packed: list[bytes | None], has_query: list[bool]) -> sqlite3.Connection:
    """A vectors table whose memories m00000... have these sentence vectors (None: not made)."""
    count = len(packed)
    static = np.eye(count, vectors.DIMENSIONS, dtype=np.float32)
    memories = [Memory(id=f"m{n:05d}", learning=f"note {n}", created_at="2026-11-01T09:00:00Z",
                       query={"source_model": "orders"} if has_query[n] else None) for n in range(count)]
    db = sqlite3.connect(":memory:", isolation_level=None)
    vectors.create(db)
    vectors.write(db, (), vectors.rows(memories, static))
    hashes = dict(db.execute("SELECT id, hash FROM vectors").fetchall())
    vectors.write_sentences(db, [(f"m{n:05d}", hashes[f"m{n:05d}"], blob) for n, blob in enumerate(packed) if blob])
    return db


def _every_row(table: tables.Table, question: np.ndarray, wanted: tables.Filter, depth: int, floor: float) -> list[tuple[str, float]]:
    """What the scan must find: every allowed row's ``closeness``, best first, ties to the lower
    row, the best ``depth`` of them at or above ``floor``."""
    rows = np.flatnonzero(table.mask(wanted) & table.covered[: table.size])
    scores = table.closeness(rows, question)
    best = np.lexsort((rows, -scores))[:depth]
    return [(table.ids[rows[i]], float(scores[i])) for i in best if scores[i] >= max(floor, -1.0)]


def _approximate(products: shortlist.Products, matrix: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """Every row's approximation, by a scan this thread makes (and the helper, when ``split``
    asks it): no row masked."""
    scan = shortlist.Scan(matrix, inverse, np.ones(len(matrix), dtype=bool), 1)
    scan.start(products)
    scan.split()
    return scan.finish()[0]


def _clustered(rng: np.random.Generator, count: int, clusters: int, spread: float) -> np.ndarray:
    """Unit vectors around a few centres: near-ties, and exact copies (a spread of 0)."""
    centres = rng.normal(size=(clusters, vectors.SENTENCE_DIMENSIONS))
    out = centres[rng.integers(clusters, size=count)] + spread * rng.normal(size=(count, vectors.SENTENCE_DIMENSIONS))
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


@settings(max_examples=examples(40), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 400),
    clusters=st.integers(1, 6),
    spread=st.sampled_from([0.0, 0.01, 0.1, 1.0]),
    depth=st.sampled_from([1, 3, 10, 60]),
    floor=st.sampled_from([-1.0, 0.2, 0.6, 0.95]),
    has_query=st.sampled_from([None, True, False]),
)
def test_the_int8_scan_keeps_what_scoring_every_row_keeps(
    seed: int, count: int, clusters: int, spread: float, depth: int, floor: float, has_query: bool | None
) -> None:
    rng = np.random.default_rng(seed)
    unit = _clustered(rng, count, clusters, spread)
    packed: list[bytes | None] = [sentences.pack(v) if rng.random() < 0.9 else None for v in unit]
    db = _table(packed, [bool(rng.random() < 0.3) for _ in range(count)])
    # A question near one memory: the closest ones are near-ties; or one near none.
    question = unit[int(rng.integers(count))] + (0.05 if seed % 2 else 3.0) * rng.normal(size=vectors.SENTENCE_DIMENSIONS)
    question = (question / np.linalg.norm(question)).astype(np.float32)
    wanted = tables.Filter(has_query=has_query)
    for expand in (False, True):
        table = tables.Table.load(db)
        if expand:
            table.expand()
        assert table.sentence_top(question, wanted, depth, floor) == _every_row(table, question, wanted, depth, floor)
    # A process that does not hold the table scans the manifest a chunk at a time: the same.
    cold = tables.Table.load(db)
    assert tables.top_by_scan(db, question, wanted, depth, floor, sentence=True) == _every_row(cold, question, wanted, depth, floor)


def test_the_approximation_is_within_its_slack_and_the_shortlist_is_short() -> None:
    """Each row's int8 product, scaled, is within ``slack`` of its float32 cosine, and the slack
    is small enough that a scan of random vectors keeps a few rows of thousands for its best 10."""
    rng = np.random.default_rng(5)
    unit = _clustered(rng, 5000, 50, 1.0)
    db = _table([sentences.pack(v) for v in unit], [False] * len(unit))
    table = tables.Table.load(db)
    table.expand()
    question = unit[17] + 0.5 * unit[99]
    question = (question / np.linalg.norm(question)).astype(np.float32)
    products = shortlist.Products(question)
    approximate = _approximate(products, table.sentence[: table.size], table.inverse[: table.size])
    exact = table._sentence_scores(np.arange(table.size), question)  # the cosines a search fuses
    error = np.abs(approximate - exact)
    assert float(error.max()) <= products.slack < 0.02
    tenth = np.sort(approximate)[-10]
    kept = int((approximate >= tenth - 2 * products.slack).sum())
    assert 10 <= kept < 200, kept
    assert table.sentence_top(question, tables.Filter(), 10, -1.0)[0][0] == "m00017"


def test_a_warm_table_holds_the_sentence_vectors_as_signed_bytes() -> None:
    """Expanding a table for a warm process keeps the sentence vectors as stored (38 MB at
    100,000 memories, not 154 as float32), and a save's vector lands in them as stored."""
    rng = np.random.default_rng(9)
    unit = _clustered(rng, 30, 3, 0.1)
    db = _table([sentences.pack(v) for v in unit[:29]] + [None], [False] * 30)
    table = tables.Table.load(db)
    table.expand()
    assert table.sentence.dtype == np.int8 and table.expanded
    table.set_sentences([("m00029", sentences.pack(unit[29]))])
    assert table.sentence[29].tobytes() == sentences.pack(unit[29]) and table.covered[29]
    question = unit[29]
    found: Any = table.sentence_top(question, tables.Filter(), 1, -1.0)
    assert [m for m, _s in found] == ["m00029"]
    # The same cosine as the fusion's (float32) to float32's precision.
    assert abs(found[0][1] - table.sentence_cosines(question, ["m00029"])["m00029"]) < 1e-6
    assert found[0][1] > 0.999


def test_a_large_scan_in_two_halves_gives_the_same_products(monkeypatch: Any) -> None:
    """Past ``SPLIT_ROWS`` rows the int8 scan runs in two halves, one in the helper thread: the
    same integers as one run."""
    rng = np.random.default_rng(4)
    matrix = rng.integers(-127, 128, size=(1001, vectors.SENTENCE_DIMENSIONS), dtype=np.int8)
    inverse = rng.random(1001, dtype=np.float32)
    products = shortlist.Products(_clustered(rng, 1, 1, 0.0)[0])
    whole = _approximate(products, matrix, inverse)
    monkeypatch.setattr(shortlist, "SPLIT_ROWS", 100)
    halves = _approximate(products, matrix, inverse)
    assert halves.tobytes() == whole.tobytes()
    expected = (matrix.astype(np.int64) @ products.rounded.astype(np.int64)) * (products.scale * inverse.astype(np.float64))
    assert np.array_equal(whole, expected)


@settings(max_examples=examples(60), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 120),
    block=st.sampled_from([1, 7, 32, shortlist.BLOCK_ROWS]),
    split=st.booleans(),
    extreme=st.booleans(),
)
def test_the_scan_in_blocks_of_columns_gives_the_exact_products(seed: int, count: int, block: int, split: bool, extreme: bool) -> None:
    """Whatever the block size and the halves, each row's product is the exact integer product of
    the row with the rounded question, however large its byte products (rows and questions of
    extreme bytes, where a kernel summing pairs in 16 bits would saturate)."""
    from unittest import mock

    rng = np.random.default_rng(seed)
    if extreme:
        matrix = np.where(rng.random((count, vectors.SENTENCE_DIMENSIONS)) < 0.5, -128, 127).astype(np.int8)
        question = np.where(rng.random(vectors.SENTENCE_DIMENSIONS) < 0.5, -1.0, 1.0).astype(np.float32)
    else:
        matrix = rng.integers(-127, 128, size=(count, vectors.SENTENCE_DIMENSIONS), dtype=np.int8)
        question = rng.standard_normal(vectors.SENTENCE_DIMENSIONS).astype(np.float32)
    inverse = rng.random(count, dtype=np.float32)
    with mock.patch.object(shortlist, "BLOCK_ROWS", block), mock.patch.object(shortlist, "SPLIT_ROWS", 1 if split else 10**9):
        products = shortlist.Products(question)
        found = _approximate(products, matrix, inverse)
    assert int(np.abs(products.rounded).max()) <= shortlist.LEVELS
    exact = matrix.astype(np.int64) @ products.rounded.astype(np.int64)
    assert np.array_equal(found, exact * (products.scale * inverse.astype(np.float64)))


def test_a_tables_blocks_follow_its_changed_rows(monkeypatch: Any) -> None:
    """A table keeps its rows' blocks and its coverage between scans; a sentence vector made,
    replaced or added since (a save, the filler's) makes its block again: the scan finds what a
    table loaded afresh finds, and what scoring every row finds."""
    monkeypatch.setattr(shortlist, "BLOCK_ROWS", 16)
    rng = np.random.default_rng(11)
    unit = _clustered(rng, 60, 4, 0.1)
    db = _table([sentences.pack(v) if n % 5 else None for n, v in enumerate(unit)], [False] * 60)
    table = tables.Table.load(db)
    table.expand()
    wanted = tables.Filter()
    for question in unit[:3]:
        assert table.sentence_top(question, wanted, 10, -1.0) == _every_row(table, question, wanted, 10, -1.0)
    assert table.coverage() == (48, 60)  # every fifth row has no sentence vector
    # The question's own vector lands in rows of three blocks (one not covered before), one new.
    made = [(f"m{n:05d}", sentences.pack(unit[0])) for n in (5, 21, 40)]
    table.set_sentences(made)
    extra = Memory(id="m00060", learning="note 60", created_at="2026-11-01T09:00:00Z")
    (row,) = vectors.rows([extra], np.eye(1, vectors.DIMENSIONS, dtype=np.float32))
    table.apply([], [(*row[:10], sentences.pack(unit[0]), *row[11:])])  # a save's row, as a warm process takes it
    vectors.write(db, (), [row])
    hashes = dict(db.execute("SELECT id, hash FROM vectors").fetchall())
    vectors.write_sentences(db, [(m, hashes[m], blob) for m, blob in [*made, ("m00060", sentences.pack(unit[0]))]])
    fresh = tables.Table.load(db)
    assert table.coverage() == fresh.coverage() == (51, 61)  # the kept count follows the changes
    table.apply(["m00001"], [])  # a memory gone
    assert table.coverage() == (50, 60)
    found = table.sentence_top(unit[0], wanted, 10, -1.0)
    assert {m for m, _s in found[:4]} == {"m00005", "m00021", "m00040", "m00060"}  # (m00000 has none)
    assert found == _every_row(table, unit[0], wanted, 10, -1.0)
    assert [m for m, _s in found] == [m for m, _s in fresh.sentence_top(unit[0], wanted, 10, -1.0)]


def test_a_scan_shared_with_the_helper_gives_what_one_thread_gives(monkeypatch: Any) -> None:
    """A search's helper thread begins the scan once the question is encoded and its own thread
    takes the blocks left: the same approximations, to the bit, and the same depth-th best as a
    partition of every row; a block that fails raises in the thread that waits, not a hang."""
    import threading

    from slayer_kb.search.helper import helper

    monkeypatch.setattr(shortlist, "BLOCK_ROWS", 16)
    rng = np.random.default_rng(12)
    matrix = rng.integers(-127, 128, size=(200, vectors.SENTENCE_DIMENSIONS), dtype=np.int8)
    inverse = rng.random(200, dtype=np.float32)
    allowed = rng.random(200) < 0.7
    question = rng.standard_normal(vectors.SENTENCE_DIMENSIONS).astype(np.float32)
    alone = shortlist.Scan(matrix, inverse, allowed, 10)
    alone.start(shortlist.Products(question))
    approximate, best = alone.finish()
    whole = (matrix.astype(np.int64) @ alone.products.rounded.astype(np.int64)) * (alone.products.scale * inverse.astype(np.float64))  # type: ignore[union-attr]
    assert np.array_equal(approximate, np.where(allowed, whole, -np.inf))
    assert best == -np.partition(-approximate, 9)[9]
    made_by: list[str] = []
    make = shortlist.Scan._make

    def recorded(scan: shortlist.Scan, number: int) -> None:
        made_by.append(threading.current_thread().name)
        make(scan, number)

    monkeypatch.setattr(shortlist.Scan, "_make", recorded)
    shared = shortlist.Scan(matrix, inverse, allowed, 10)
    helper().submit(shared.begin, question).result()  # the helper made every block before this thread asked
    shared.start(shortlist.Products(question))
    found, found_best = shared.finish()
    assert found.tobytes() == approximate.tobytes() and found_best == best
    assert len(made_by) == 13 and all(name.startswith("slayer-kb-search") for name in made_by)

    def broken(scan: shortlist.Scan, number: int) -> None:
        raise RuntimeError(f"block {number} failed")

    monkeypatch.setattr(shortlist.Scan, "_make", broken)
    failing = shortlist.Scan(matrix, inverse, allowed, 10)
    with pytest.raises(RuntimeError, match="block 0 failed"):
        helper().submit(failing.begin, question).result()
    with pytest.raises(RuntimeError, match="block 0 failed"):
        failing.finish()  # the helper's failure, raised here too: the rows it left are not guessed
