"""Stand-in vectors during a large first build (search/filling.py): a backlog of
``stand_in_from`` memories or more gets the int8 graph's vectors first, then the shipped graph's
replace every one; the end is what a build of final vectors alone makes, a memory saved during
the build goes first at the shipped graph's, and searches and the server's status say how much
of meaning is final."""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import encoder, filler, sentences, vectors
from slayer_kb.search.background import SentenceFiller
from testing.repos import make_notes_kb
from testing.wait import eventually

pytestmark = pytest.mark.usefixtures("encoder_on")  # conftest.py turns it off elsewhere

# The product's own, made at each call: for the test of its letting the graph go.
MADE_EACH_TIME = encoder.load_stand_in


@pytest.fixture(scope="module")
def _stand_ins_kept() -> Iterator[dict[tuple[str, int, int, int], encoder.Encoder | encoder.Unavailable]]:
    kept: dict[tuple[str, int, int, int], encoder.Encoder | encoder.Unavailable] = {}
    yield kept
    kept.clear()  # its session let go with the module


@pytest.fixture(autouse=True)
def _stand_in_made_once(
        _stand_ins_kept: dict[tuple[str, int, int, int], encoder.Encoder | encoder.Unavailable],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in graph made once a module for the same model file (its rewrite and session,
    0.2 s of CPU each time, which ``load_stand_in`` makes at each call so that a warm server lets
    it go with its pass): these tests are about the passes, not the graph's making
    (test_encoder_rewrite.py's)."""

    def kept() -> encoder.Encoder | encoder.Unavailable:
        path = encoder.model_file()
        if isinstance(path, encoder.Unavailable):
            return MADE_EACH_TIME()
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
        if key not in _stand_ins_kept:
            _stand_ins_kept[key] = MADE_EACH_TIME()
        return _stand_ins_kept[key]

    monkeypatch.setattr(encoder, "load_stand_in", kept)

NOTES = [
    ("Nightly export stalls", "The export to the warehouse stalls when the ledger is redeployed. We pause deploys from two to three."),
    ("Quarantined currency rows", "The warehouse rejects rows with an unknown currency code. They go to a quarantine table, reviewed on Mondays."),
    ("Retry budget", "The retry budget is shared with reconciliation. A stalled batch is retried once, from its logged offset."),
    ("Morning reports", "Finance wants the export done before six. The morning reports read it at half past six."),
    ("Connection pool", "Draining the pool during a deploy stalls long reads. The ledger's pool holds twenty connections."),
    ("Warehouse costs", "The warehouse bills by bytes scanned. Partitioning the export by day cut the bill by a third."),
]
QUESTION = "why does the export stall when the ledger is redeployed?"


def _kb(root: Path) -> KnowledgeBase:
    """A KB of ``NOTES``, indexed, none with a sentence vector (this process makes them): saved
    once a process and copied (``make_notes_kb``)."""
    kb = make_notes_kb(root, "standin-notes", NOTES)
    assert kb.index.coverage() == (0, len(NOTES), 0, 0)
    return kb


def _manifest(kb: KnowledgeBase) -> list[tuple[str, str, bytes]]:
    with contextlib.closing(sqlite3.connect(kb.index.dir / "manifest.db")) as db:
        return db.execute("SELECT id, hash, svec FROM vectors ORDER BY id").fetchall()


def _stand_ins(kb: KnowledgeBase) -> set[str]:
    with contextlib.closing(sqlite3.connect(kb.index.dir / "manifest.db")) as db:
        return vectors.stand_ins(db)


def _cached(key: str) -> dict[str, bytes]:
    return sentences.lookup(key, [sentences.text_hash(f"{title}\n{content}") for title, content in NOTES])


def _build(kb: KnowledgeBase, during: Callable[[int], None] = lambda _n: None) -> tuple[int, list[tuple[int, int, int, int]]]:
    """Every vector made, two memories a batch: (final vectors made, the progress reported and
    (final, stand-ins) after each batch)."""
    seen: list[tuple[int, int, int, int]] = []

    def progress(done: int, total: int) -> None:
        covered, _total, _pending, standing = kb.index.coverage()
        seen.append((done, total, covered - standing, standing))
        during(len(seen))

    return kb.index.fill_sentences(progress, batch=2, workers=1, background=True), seen


def test_a_large_backlog_gets_stand_ins_first_then_the_final_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = _kb(tmp_path / "two-passes")
    kb.index.stand_in_from = 4
    cached: list[tuple[int, int]] = []

    def count_stand_ins(_batches: int) -> None:
        cached.append((len(_cached(encoder.STAND_IN_KEY)), len(_cached(encoder.STAND_IN_UNITS_KEY))))
        if len(cached) == 3:  # every stand-in made, none replaced yet
            standing.update(_cached(encoder.STAND_IN_KEY))

    standing: dict[str, bytes] = {}
    made, seen = _build(kb, count_stand_ins)
    # Three batches of stand-ins (meaning covers the KB, none final), then three of final ones.
    assert seen == [(2, 12, 0, 2), (4, 12, 0, 4), (6, 12, 0, 6), (8, 12, 2, 4), (10, 12, 4, 2), (12, 12, 6, 0)]
    assert made == len(NOTES)
    assert kb.index.meaning_status().endswith(f"cover {len(NOTES)} of {len(NOTES)} memories")
    two_passes = _manifest(kb)
    final, units = _cached(encoder.MODEL_KEY), _cached(encoder.UNITS_KEY)
    answer = [(hit["id"], hit["score"]) for hit in kb.search(QUESTION).memories]
    kb.close()
    # The stand-ins are cached under their own keys, near the final vectors and never the same,
    # and leave the cache as their texts' final vectors and units are kept.
    assert cached == [(2, 2), (4, 4), (6, 6), (4, 4), (2, 2), (0, 0)]
    assert len(standing) == len(final) == len(NOTES) and not set(standing.items()) & set(final.items())

    # A build of final vectors alone, from another empty cache: the same vectors and answers.
    monkeypatch.setenv("SLAYER_KB_CACHE", str(tmp_path / "another-cache"))
    straight = _kb(tmp_path / "one-pass")
    made, seen = _build(straight)
    assert [(done, total) for done, total, _f, _s in seen] == [(2, 6), (4, 6), (6, 6)]
    assert [(_id, digest, svec) for _id, digest, svec in _manifest(straight)] == two_passes
    assert (_cached(encoder.MODEL_KEY), _cached(encoder.UNITS_KEY), _cached(encoder.STAND_IN_KEY)) == (final, units, {})
    assert [(hit["id"], hit["score"]) for hit in straight.search(QUESTION).memories] == answer
    straight.close()


def test_a_foreground_build_makes_final_vectors_straight_away(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb")
    kb.index.stand_in_from = 4
    seen: list[tuple[int, int, int]] = []
    # What ``reindex`` runs: its user waits for final vectors, so no stand-in pass before them.
    made = kb.fill_sentences(lambda done, total: seen.append((done, total, kb.index.coverage()[3])))
    assert made == len(NOTES)
    assert seen == [(len(NOTES), len(NOTES), 0)]  # the bar ends full, none a stand-in
    assert _cached(encoder.STAND_IN_KEY) == {}
    assert kb.index.coverage() == (len(NOTES), len(NOTES), 0, 0)
    kb.close()


def test_a_background_build_whose_final_vectors_are_cached_ends_its_progress_full(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb")
    lender = _kb(tmp_path / "lender")  # its final vectors go to the cache both share
    assert lender.index.fill_sentences(batch=2, workers=1) == len(NOTES)
    lender.close()
    kb.index.stand_in_from = 4
    seen: list[tuple[int, int]] = []
    made = kb.index.fill_sentences(lambda done, total: seen.append((done, total)), batch=2, workers=1, background=True)
    # The stand-in pass takes every final vector from the cache; no final pass is left.
    assert (made, kb.index.coverage()) == (len(NOTES), (len(NOTES), len(NOTES), 0, 0))
    assert seen == [(2, 12), (4, 12), (6, 12), (6, 6)]
    kb.close()


def test_the_stand_in_graph_is_let_go_when_its_pass_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = _kb(tmp_path / "kb")
    kb.index.stand_in_from = 4
    loaded: list[weakref.ref[encoder.Encoder]] = []
    load = MADE_EACH_TIME

    def watched() -> encoder.Encoder | encoder.Unavailable:
        model = load()
        assert isinstance(model, encoder.Encoder)
        loaded.append(weakref.ref(model))
        return model

    def final_pass(done: int, _total: int) -> None:
        if done > len(NOTES):  # the final pass under way: the stand-in's session is gone
            gc.collect()
            assert [ref() for ref in loaded] == [None]

    monkeypatch.setattr(encoder, "load_stand_in", watched)
    assert kb.index.fill_sentences(final_pass, batch=2, workers=1, background=True) == len(NOTES)
    assert len(loaded) == 1
    kb.close()


def test_a_save_during_the_stand_in_pass_goes_first_at_the_final_graph(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb")
    kb.index.stand_in_from = 4
    saved: list[str] = []

    def save(batches: int) -> None:
        if batches == 1:  # after the first batch of stand-ins
            saved.append(kb.save_observation(title="Export owner", content="The data platform's on-call owns the export. They page finance.").memory_id)

    _made, seen = _build(kb, save)
    # The save's batch is made final next, alone; then the rest of the stand-ins, then final ones.
    assert seen[:3] == [(2, 12, 0, 2), (3, 13, 1, 2), (5, 13, 1, 4)]
    assert seen[-1] == (13, 13, 7, 0)
    assert _stand_ins(kb) == set()
    kb.close()


def test_a_search_and_the_status_say_how_much_is_final(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb")
    kb.index.stand_in_from = 4
    kb.index.fill_sentences(batch=2, workers=1, background=True, stop=lambda: kb.index.coverage()[3] == len(NOTES))  # the stand-ins alone
    assert kb.sentence_coverage() == (0, len(NOTES))
    assert (f"0 of the {len(NOTES)} sentence vectors are final; the other {len(NOTES)} are stand-ins, close to final, "
            "until the build replaces them, in the background.") in kb.search(QUESTION).notes
    assert kb.index.meaning_status().endswith(
        f"cover {len(NOTES)} of {len(NOTES)} memories ({len(NOTES)} of them stand-ins until the build replaces them)")
    # A memory is read by its stand-in's units meanwhile (never kept as final units).
    by_hash = {sentences.text_hash(f"{title}\n{content}"): f"{title}\n{content}" for title, content in NOTES}
    texts = {memory_id: by_hash[digest] for memory_id, digest, _svec in _manifest(kb)}
    question = encoder.load_stand_in()
    assert isinstance(question, encoder.Encoder)
    assert set(kb.index.unit_cosines(question.encode([QUESTION])[0], texts)) == set(texts)
    assert _cached(encoder.UNITS_KEY) == {}
    # A reindex (as a second clone, a branch switch) never takes a stand-in for a final vector:
    # its rows have none, and the next pass takes the cached stand-ins back as stand-ins.
    kb.reindex()
    assert kb.index.coverage() == (0, len(NOTES), 0, 0)
    kb.index.fill_sentences(batch=2, workers=1, background=True, stop=lambda: kb.index.coverage()[3] == len(NOTES))
    assert kb.index.coverage() == (len(NOTES), len(NOTES), 0, len(NOTES))
    assert kb.index.fill_sentences(batch=2, workers=1, background=True) == len(NOTES)
    assert kb.index.coverage() == (len(NOTES), len(NOTES), 0, 0)
    assert not [note for note in kb.search(QUESTION).notes if "vectors" in note]
    kb.close()


def test_one_final_vector_and_one_stand_in_are_said_in_the_singular(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb")
    kb.index.stand_in_from = 4
    reports: list[int] = []

    def after(batches: int) -> Callable[[], bool]:
        reports.clear()
        return lambda: len(reports) == batches

    # One memory a batch: six stand-ins, then one final vector; then four more final ones.
    kb.index.fill_sentences(lambda done, _total: reports.append(done), stop=after(7), batch=1, workers=1, background=True)
    assert kb.index.coverage() == (6, 6, 0, 5)
    assert ("1 of the 6 sentence vectors is final; the other 5 are stand-ins, close to final, until the build "
            "replaces them, in the background.") in kb.search(QUESTION).notes
    kb.index.fill_sentences(lambda done, _total: reports.append(done), stop=after(4), batch=1, workers=1, background=True)
    assert kb.index.coverage() == (6, 6, 0, 1)
    assert ("5 of the 6 sentence vectors are final; the other one is a stand-in, close to final, until the build "
            "replaces it, in the background.") in kb.search(QUESTION).notes
    assert kb.index.meaning_status().endswith("cover 6 of 6 memories (1 of them a stand-in until the build replaces it)")
    kb.close()


def test_a_process_holding_the_vectors_takes_in_the_stand_ins_and_final_ones_another_made(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb")
    ids = [memory_id for memory_id, _digest, _svec in _manifest(kb)]
    held = kb.index.meaning()  # this process holds the table, no sentence vector in it
    other = KnowledgeBase(kb.root)  # another process's filler makes them
    other.index.background_vectors = False
    other.index.stand_in_from = 4
    other.index.fill_sentences(batch=2, workers=1, background=True, stop=lambda: other.index.coverage()[3] == len(NOTES))
    assert kb.index.coverage() == (len(NOTES), len(NOTES), 0, len(NOTES))  # taken in as stand-ins
    assert kb.index.meaning() is held and held.standing == set(ids)
    stand_ins = {m: v.tobytes() for m, v in kb.index.sentence_vectors(ids).items()}
    assert other.index.fill_sentences(batch=2, workers=1, background=True) == len(NOTES)
    other.close()
    assert kb.index.coverage() == (len(NOTES), len(NOTES), 0, 0)
    assert kb.index.meaning() is held and held.standing == set()
    with contextlib.closing(sqlite3.connect(kb.index.dir / "manifest.db")) as db:
        final = {m: v.tobytes() for m, v in vectors.sentence_vectors_by_id(db, ids).items()}
    assert {m: v.tobytes() for m, v in kb.index.sentence_vectors(ids).items()} == final
    assert len(final) == len(NOTES) and not set(final.items()) & set(stand_ins.items())
    kb.close()


def test_a_stand_in_written_between_the_list_and_the_vectors_is_not_taken_for_final(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = _kb(tmp_path / "kb")
    ids = [memory_id for memory_id, _digest, _svec in _manifest(kb)]
    held = kb.index.meaning()  # this process holds the table, no sentence vector in it
    other = KnowledgeBase(kb.root)
    other.index.background_vectors = False
    other.index.stand_in_from = 4
    other.index.fill_sentences(batch=2, workers=1, background=True, stop=lambda: other.index.coverage()[3] >= 2)
    listed = vectors.stand_ins

    def then_the_next_batch(db: sqlite3.Connection) -> set[str]:
        found = listed(db)
        if other.index.coverage()[3] < 4:  # after the list is read
            other.index.fill_sentences(batch=2, workers=1, background=True, stop=lambda: other.index.coverage()[3] >= 4)
        return found

    monkeypatch.setattr(vectors, "stand_ins", then_the_next_batch)
    kb.index.absorb_sentences()
    monkeypatch.setattr(vectors, "stand_ins", listed)
    assert other.index.fill_sentences(batch=2, workers=1, background=True) == len(NOTES)
    other.close()
    # Every stand-in the held table took in was replaced by the final vector.
    assert kb.index.coverage() == (len(NOTES), len(NOTES), 0, 0)
    with contextlib.closing(sqlite3.connect(kb.index.dir / "manifest.db")) as db:
        final = {m: v.tobytes() for m, v in vectors.sentence_vectors_by_id(db, ids).items()}
    assert kb.index.meaning() is held
    assert {m: v.tobytes() for m, v in kb.index.sentence_vectors(ids).items()} == final
    kb.close()


def test_a_memory_forgotten_while_its_stand_in_is_made_is_no_stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = _kb(tmp_path / "kb")
    kb.index.stand_in_from = 4
    first = _manifest(kb)[0][0]
    stored = kb.index.stored

    def then_forget(ids: list[str]) -> dict[str, dict[str, object]]:
        found = stored(ids)
        if first in ids and kb.index.coverage()[1] == len(NOTES):  # its text read for the stand-in
            kb.forget(first, soft=True)
        return found

    monkeypatch.setattr(kb.index, "stored", then_forget)
    assert kb.index.fill_sentences(batch=2, workers=1, background=True) == len(NOTES) - 1
    kb.close()
    held = KnowledgeBase(kb.root)  # a process holding the table, as the warm server
    held.index.background_vectors = False
    held.index.meaning()
    assert held.index.coverage() == (len(NOTES) - 1, len(NOTES) - 1, 0, 0)
    assert not [note for note in held.search(QUESTION).notes if "vectors" in note]
    assert _stand_ins(held) == set()
    held.close()


def test_the_servers_status_counts_final_vectors_and_stand_ins(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb")
    kb.index.stand_in_from = 4
    held = threading.Event()
    release = threading.Event()
    looks = [0]

    @contextlib.contextmanager
    def guard() -> Iterator[None]:
        # The thread's second look at the index once every stand-in is written (the first
        # measures them for ``status``) waits here, between the two passes, until released.
        with contextlib.closing(sqlite3.connect(kb.index.dir / "manifest.db")) as db:
            if threading.current_thread().name == "slayer-kb sentences" and len(vectors.stand_ins(db)) == len(NOTES):
                looks[0] += 1
        if looks[0] == 2 and not release.is_set():
            held.set()
            release.wait(60)
        yield

    thread = SentenceFiller(kb.index, guard)
    thread.start()
    try:
        eventually(held.is_set, "the stand-in pass")
        assert thread.status() == {"model": encoder.MODEL_KEY, "covered": 6, "final": 0, "stand_ins": 6, "memories": 6,
                                   "building": True, "pass_done": 6, "pass_total": 12, "passes": 1, "filled": 0}
        release.set()
        done = eventually(lambda: (s := thread.status()) and not s["building"] and s, "the final pass")
        assert done == {"model": encoder.MODEL_KEY, "covered": 6, "final": 6, "stand_ins": 0, "memories": 6,
                        "building": False, "pass_done": 12, "pass_total": 12, "passes": 1, "filled": 6}
    finally:
        release.set()
        thread.stop()
        kb.close()


def test_the_status_drops_the_stand_ins_at_once_when_a_write_leaves_every_vector_final(tmp_path: Path) -> None:
    # A detached filler started before the server builds (here another KB object holding its
    # lock): the server's thread takes in its stand-ins and counts them. Once they are final,
    # a write's take-in finds every vector final, and the status says so at once, not at the
    # thread's next look 30 s later.
    kb = _kb(tmp_path / "kb")
    other = KnowledgeBase(kb.root)
    other.index.background_vectors = False
    other.index.stand_in_from = 4
    other.index.fill_sentences(batch=2, workers=1, background=True, stop=lambda: other.index.coverage()[3] == len(NOTES))
    held = filler.hold(kb.root)
    assert held is not None
    kb.index.meaning()  # the table the server holds
    thread = SentenceFiller(kb.index, contextlib.nullcontext)
    thread.start()
    try:
        standing = eventually(lambda: (s := thread.status())["stand_ins"] and s, "the stand-ins taken in")
        assert (standing["covered"], standing["final"], standing["stand_ins"]) == (6, 0, 6)
        assert other.index.fill_sentences(batch=2, workers=1, background=True) == len(NOTES)
        coverage = kb.held_coverage()
        assert coverage == (6, 6)
        thread.after_command(coverage)
        assert thread.status() == {"model": encoder.MODEL_KEY, "covered": 6, "final": 6, "stand_ins": 0, "memories": 6,
                                   "building": False, "pass_done": 0, "pass_total": 0, "passes": 1, "filled": 0}
    finally:
        thread.stop()
        os.close(held)
        other.close()
        kb.close()


def test_the_units_pass_drops_the_stand_ins_of_the_texts_it_makes_final(tmp_path: Path) -> None:
    """Texts whose final whole vectors the cache held (under WHOLE_KEY, from a version that
    made no units) get them at once, beside stand-ins another clone's build cached: the pass
    that makes their units keeps them under MODEL_KEY and drops those stand-ins."""
    kb = _kb(tmp_path / "kb")
    assert kb.index.fill_sentences(batch=2, workers=1) == len(NOTES)
    kb.close()
    final, units = _cached(encoder.MODEL_KEY), _cached(encoder.UNITS_KEY)
    with contextlib.closing(sqlite3.connect(sentences.folder() / sentences.FILE, isolation_level=None)) as db:
        db.executemany("DELETE FROM sentences WHERE model = ?", [(encoder.MODEL_KEY,), (encoder.UNITS_KEY,)])
    sentences.store_together({encoder.STAND_IN_KEY: {h: bytes(384) for h in final},
                              encoder.STAND_IN_UNITS_KEY: {h: bytes(768) for h in final}})
    again = KnowledgeBase(kb.root)  # a new process checks every text's units
    again.index.background_vectors = False
    assert again.index.fill_sentences(batch=2, workers=1) == 0
    again.close()
    assert (_cached(encoder.MODEL_KEY), _cached(encoder.UNITS_KEY)) == (final, units)
    assert (_cached(encoder.STAND_IN_KEY), _cached(encoder.STAND_IN_UNITS_KEY)) == ({}, {})


def test_a_text_edited_mid_build_keeps_the_stand_ins_another_clone_still_reads(tmp_path: Path) -> None:
    """Dropping the stand-ins of a text one KB edited during its build took them from another
    clone sharing the cache, its own build under way and still standing in for that text."""
    other = _kb(tmp_path / "other")
    other.index.stand_in_from = 4
    # Its stand-in pass runs to its end, then it stops before any final vector (a killed filler).
    other.index.fill_sentences(batch=2, workers=1, background=True, stop=lambda: len(_stand_ins(other)) == len(NOTES))
    other.close()
    kb = _kb(tmp_path / "kb")
    kb.index.stand_in_from = 4
    first, second = (m for m, _digest, _vec in _manifest(kb)[:2])

    def edit_and_forget(batches: int) -> None:
        if batches == 1:
            kb.update(first, learning="The export stalls while the ledger redeploys. Deploys pause from two to four.")
            kb.forget(second)

    _build(kb, edit_and_forget)
    kb.close()
    assert len(_stand_ins(other)) == len(NOTES)
    assert set(_cached(encoder.STAND_IN_UNITS_KEY)) >= {digest for _m, digest, _vec in _manifest(other)[:2]}
