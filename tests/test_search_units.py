"""A memory read by its sentence closest to the question: each sentence of a memory's text is
embedded under its title (``spans.units``), off the save path with the whole text's vector and
only in the sentence cache; a search blends, for the head of its ranking, the whole text's cosine
with the best sentence's (``fusion.with_units``), and without them uses the whole text's alone."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from bench.relevance import CONFIGS, SETS, build, evaluate
from slayer_kb import KnowledgeBase
from slayer_kb.search import Request, encoder, fusion, meaning, run, sentences, spans
from testing.encoding import loaded_encoder

NOTES = [
    ("Retry budget for payment calls", "Calls to the PSP are retried twice on a 5xx. A timeout is never retried, "
     "because the charge may have gone through. The budget resets at midnight."),
    ("Image sizes in the newsletter", "Images are resized to 600 pixels wide. Animated GIFs are replaced by their first frame."),
    ("Reminder texts before appointments", "One text the day before."),
]


pytestmark = pytest.mark.usefixtures("encoder_on")  # conftest.py turns it off elsewhere


def test_a_text_is_split_into_its_sentences_under_its_title() -> None:
    assert spans.units("Title\nFirst one. Second one!\nThird; fourth") == [
        "Title\nFirst one.", "Title\nSecond one!", "Title\nThird;", "Title\nfourth",
    ]
    assert spans.units("Title\nOnly one sentence.") == []  # the whole text's vector says the same
    assert spans.units("No title here. Two sentences.") == ["No title here.", "Two sentences."]


def test_a_sentence_blends_into_its_memory_score_only_where_known() -> None:
    assert fusion.with_units({"a": 0.4, "b": 0.3}, {"a": 0.8}) == pytest.approx({"a": 0.66, "b": 0.3})


def test_filling_makes_the_units_and_a_search_reads_them(empty_kb: KnowledgeBase, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    kb = empty_kb
    kb.index.background_vectors = False
    for title, learning in NOTES:
        kb.save_observation(title=title, content=learning, project="ops")
    assert kb.index.fill_sentences() == 3
    texts = {str(n): f"{title}\n{learning}" for n, (title, learning) in enumerate(NOTES, start=1)}
    cached = sentences.lookup(encoder.UNITS_KEY, [sentences.text_hash(t) for t in texts.values()])
    # 3 + 2 sentences; the one-sentence note has none (its entry says they are made).
    assert [len(cached[sentences.text_hash(t)]) for t in texts.values()] == [3 * encoder.DIMENSIONS, 2 * encoder.DIMENSIONS, 0]

    question = loaded_encoder().encode(["is a charge attempted again when the provider is slow to answer?"])[0]
    best = kb.index.unit_cosines(question, texts)
    assert set(best) == {"1", "2"}
    _whole, units = loaded_encoder().encode_with_units([texts["1"]])
    assert best["1"] == pytest.approx(float(np.max(units[0] @ question)), abs=0.01)  # stored as int8: within 0.01 of float32
    kb.ensure_fresh()
    assert [h["id"] for h in run(kb.index, Request(question="is a charge attempted again when the provider is slow to answer?",
                                                   channels=frozenset({"meaning"}), limit=3)).memories][0] == "1"

    # A process on a machine whose cache lacks the units (another user, a cleared cache): the
    # whole vectors alone.
    monkeypatch.setenv("SLAYER_KB_CACHE", str(tmp_path / "empty-cache"))
    meaning.forget_units()  # the units this process read before
    assert kb.index.unit_cosines(question, texts) == {}
    assert run(kb.index, Request(question="is a charge attempted again when the provider is slow to answer?", limit=3)).memories


def test_whole_vectors_cached_before_units_are_taken_not_made_again(empty_kb: KnowledgeBase) -> None:
    """The cache of the version before units: its whole-text vectors are made the same way, so
    only the units are made."""
    kb = empty_kb
    kb.index.background_vectors = False
    title, learning = NOTES[0]
    kb.save_observation(title=title, content=learning)
    text = f"{title}\n{learning}"
    marker = np.zeros(encoder.DIMENSIONS, dtype=np.float32)
    marker[7] = 1.0  # no model makes this vector: finding it proves the cache served it
    sentences.store(encoder.WHOLE_KEY, {sentences.text_hash(text): sentences.pack(marker)})
    assert kb.index.fill_sentences() == 1
    assert kb.index.meaning().sentence_cosines(marker, ["1"])["1"] == pytest.approx(1.0)
    digest = sentences.text_hash(text)
    _whole, units = loaded_encoder().encode_with_units([text])
    assert sentences.lookup(encoder.UNITS_KEY, [digest]) == {digest: b"".join(sentences.pack(row) for row in units[0])}
    assert sentences.lookup(encoder.MODEL_KEY, [digest]) == {digest: sentences.pack(marker)}  # its units are made


# The encoder makes ~800 vectors (15 s of CPU, the default run's most): in the slow suite. The
# default run keeps a floor with sentence vectors and units on the third set (test_search_sentences).
@pytest.mark.slow
def test_the_first_relevance_set_keeps_its_figures(tmp_path: Path) -> None:
    """With sentence vectors and their units pooled from the whole texts' runs: fused 88.6% /
    97.3% (top-1 / top-3); paraphrases 82% / 95%."""
    kb = build(tmp_path / "kb", SETS["first"])
    try:
        fused = evaluate(kb, CONFIGS["fused"], folder=SETS["first"])
    finally:
        kb.close()
    assert fused.questions == 196
    assert fused.top1 >= 0.87 and fused.top3 >= 0.97, (fused.top1, fused.top3)
    assert fused.by_kind["paraphrase"][2] >= 0.95, fused.by_kind


def test_meaning_covers_the_kb_before_the_units_are_made(empty_kb: KnowledgeBase) -> None:
    """Whole vectors the cache holds from before units were pooled from their runs give every
    memory its sentence vector first; the units follow. A pass stopped before the units leaves
    them to the next process, which checks every memory's units once."""
    kb = empty_kb
    kb.index.background_vectors = False
    for title, learning in NOTES:
        kb.save_observation(title=title, content=learning, project="ops")
    assert kb.index.fill_sentences() == 3
    digests = [sentences.text_hash(f"{title}\n{learning}") for title, learning in NOTES]
    with contextlib.closing(sqlite3.connect(sentences.folder() / sentences.FILE, isolation_level=None)) as db:
        db.execute("DELETE FROM sentences WHERE model IN (?, ?)", (encoder.MODEL_KEY, encoder.UNITS_KEY))
    asked: list[int] = []

    def stop() -> bool:  # the whole texts' one batch goes on; the units' first batch stops
        asked.append(1)
        return len(asked) > 1

    later = KnowledgeBase(kb.root)
    later.index.background_vectors = False
    later.reindex()
    assert later.index.fill_sentences(stop=stop) == 3
    assert later.index.sentence_coverage() == (3, 3)
    assert sentences.lookup(encoder.UNITS_KEY, digests) == {}
    meaning.forget_units()  # the units this process read before
    assert later.index.unit_cosines(loaded_encoder().encode(["timeouts"])[0], {"1": f"{NOTES[0][0]}\n{NOTES[0][1]}"}) == {}
    later.close()

    again = KnowledgeBase(kb.root)
    again.index.background_vectors = False
    assert again.index.fill_sentences() == 0
    assert len(sentences.lookup(encoder.UNITS_KEY, digests)) == 3
    assert set(again.index.unit_cosines(loaded_encoder().encode(["timeouts"])[0], {"1": f"{NOTES[0][0]}\n{NOTES[0][1]}"})) == {"1"}
    again.close()
