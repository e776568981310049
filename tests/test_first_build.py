"""The first command on a new clone (issue 29): a bulk write that a filler will follow leaves the
static vectors and token ids to it, so words and entities answer sooner; a search meanwhile
says how much of the KB meaning covers, and once the background has made them the index holds
the rows a write that made them at once holds, to the bit, and every answer is the same."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import filler, index, writing
from testing import make_example_kb

pytestmark = pytest.mark.usefixtures("encoder_on")  # conftest.py turns it off elsewhere

QUESTIONS = ["how are refunds handled", "monthly revenue by region", "churn"]


def _tables(kb: KnowledgeBase) -> dict[str, list[tuple[Any, ...]]]:
    db = sqlite3.connect(kb.index.dir / "manifest.db")
    try:
        return {name: db.execute(f"SELECT * FROM {name} ORDER BY id").fetchall()  # noqa: S608 - two constants
                for name in ("vectors", "tokens")}
    finally:
        db.close()


def _answers(kb: KnowledgeBase) -> list[list[str]]:
    # The rows are compared to the bit above; the scores of two processes' searches are not,
    # for the token match's vectors are made once per process, in the order searches ask.
    return [[hit["id"] for hit in kb.search(question, limit=10).memories] for question in QUESTIONS]


def test_a_first_bulk_sync_answers_by_words_and_the_background_makes_the_same_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The example KB's 34 memories written in bulk (Whoosh's worker processes), as a clone's are.
    monkeypatch.setattr(writing, "BULK_THRESHOLD", 5)
    started: list[Path] = []
    monkeypatch.setattr(filler, "start", started.append)  # the detached filler is tested elsewhere

    # A bulk write smaller than a large KB's makes them with the words, filler or not.
    small = KnowledgeBase(make_example_kb(tmp_path / "small"))
    small.index.sync()
    assert (small.index.coverage(), started) == ((0, 34, 0, 0), [small.root])
    started.clear()
    monkeypatch.setattr(index, "DEFER_STATIC_AT", 30)

    # Where no filler would make them, a bulk write makes the static vectors with the words.
    monkeypatch.setenv("SLAYER_KB_NO_FILLER", "1")
    eager = KnowledgeBase(make_example_kb(tmp_path / "eager"))
    eager.store.ensure_state_dir()
    eager.index.sync()
    assert eager.index.coverage() == (0, 34, 0, 0)
    monkeypatch.delenv("SLAYER_KB_NO_FILLER")

    clone = KnowledgeBase(make_example_kb(tmp_path / "clone"))
    clone.store.ensure_state_dir()  # as a command makes it (stamped) before its index: searched below
    clone.index.sync()
    assert started == [clone.root]  # the filler is asked for, once the rows are committed
    assert clone.index.coverage() == (0, 34, 34, 0)
    first = clone.search("refunds")
    assert first.memories and first.memories[0]["id"] == eager.search("refunds").memories[0]["id"]
    # "refunds" alone also names the table shop.refunds: that note comes first.
    assert ("Meaning covers 0 of 34 memories; the others are found by their words until their "
            "vectors are made, in the background.") in first.notes
    # A process that holds the table (a library's, the server's) counts the pending rows too.
    held, key = clone.index.meaning(), clone.index.content_key()
    assert held.size == 0 and held.pending == 34

    assert clone.index.fill_static() == 34  # what the filler does first
    # A warm server holding the table while a detached filler made them takes them in.
    clone.index._meaning, clone.index._meaning_key = held, key  # noqa: SLF001 - as a process that did not make them
    clone.index.absorb_sentences()
    assert clone.index.meaning().size == 34 and clone.index.meaning().pending == 0
    assert clone.index.coverage() == (0, 34, 0, 0)
    assert _tables(clone) == _tables(eager)
    assert _answers(clone) == _answers(eager)
    assert not any(note.startswith("Meaning covers") for note in clone.search("refunds").notes)
    assert clone.index.fill_static() == 0


def test_a_warm_table_takes_in_only_the_sentence_vectors_it_lacks(
    indexed_example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a detached filler makes the vectors, the warm server takes in what it wrote after
    each save: only the rows it lacks, not every row again (50 ms a save at 5,000 memories,
    under the server's turn and view, and every shortlist block made again)."""
    import numpy as np

    from slayer_kb.search import sentences, table, vectors

    kb = indexed_example_kb
    db = sqlite3.connect(kb.index.dir / "manifest.db", isolation_level=None)
    try:
        rows = vectors.missing_sentences(db)
        blobs = {m: sentences.pack(np.eye(vectors.SENTENCE_DIMENSIONS, dtype=np.float32)[n]) for n, (m, _h) in enumerate(rows)}
        *before, (last, digest) = rows
        vectors.write_sentences(db, [(m, h, blobs[m]) for m, h in before])
        held = kb.index.meaning()  # the server's table, loaded before the filler's last batch
        assert held.lacking() == [last]
        vectors.write_sentences(db, [(last, digest, blobs[last])])  # the filler's last batch
    finally:
        db.close()
    set_rows: list[int] = []
    real = table.Table._set_sentence  # noqa: SLF001 - counts the rows set again
    monkeypatch.setattr(table.Table, "_set_sentence", lambda self, row, blob: (set_rows.append(row), real(self, row, blob)))
    kb.index.absorb_sentences()
    assert set_rows == [held.ids.index(last)]
    assert held.lacking() == [] and kb.sentence_coverage() == (len(rows), len(rows))
