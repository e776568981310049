"""The fusion's two rules for questions in other words than their answer (docs/search.md,
"Fusion"): the words count a quarter as much when the memory they score best holds at most one
in three of the question's words, and a note on a crowded neighbourhood's common ground stands
back (``fusion.uncrowded``); the three memories closest in meaning join the candidates above a
lower floor (``retrieval.closest_kept``); the memory holding the sentence closest to the question
gains a share of its lead (``fusion.with_lead``). Exact rankings on the third relevance set's real
KB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bench.relevance import SETS, build
from slayer_kb import KnowledgeBase
from slayer_kb.search import Request, embedding, encoder, fusion, retrieval, run, sentences
from slayer_kb.search.vectors import embedding_text

pytestmark = pytest.mark.usefixtures("encoder_on")  # conftest.py turns it off elsewhere

# A paraphrase aimed into the third set's crowded newsroom notes: "image" is the only word it
# shares with a memory, three notes on newsletter images, all close in meaning to one another.
QUESTION = "How do we avoid shipping a bad software image to all machines at once?"


def test_the_words_weigh_less_when_their_best_memory_holds_few_of_the_question_words() -> None:
    full = fusion.weights_for(9, sentence=True)
    assert full.words == pytest.approx(1 / 9)
    assert fusion.weights_for(9, sentence=True, held=3).words == pytest.approx(0.25 / 9)  # one in three
    assert fusion.weights_for(9, sentence=True, held=4).words == pytest.approx(1 / 9)
    assert fusion.weights_for(2, sentence=True, held=0).words == pytest.approx(0.125)
    assert fusion.weights_for(20, sentence=True, held=1).words == pytest.approx(0.025)  # the floor, then the share
    # Without a sentence vector the static blend is as it was; with no memory holding a word, too.
    assert fusion.weights_for(9, sentence=False, held=1).words == pytest.approx(0.2)
    assert fusion.weights_for(9, sentence=True, held=None).words == pytest.approx(1 / 9)


def test_a_memory_close_to_its_neighbours_in_the_head_loses_a_share_of_its_closeness() -> None:
    a, b, c, d = np.eye(4)
    hub = np.array([1.0, 1.0, 1.0, 0.0]) / np.sqrt(3)
    vectors = {"a": a, "b": b, "c": c, "d": d, "hub": hub}
    sentence = {"hub": 0.5, "a": 0.5, "b": 0.4, "c": 0.3, "d": 0.2}
    out = fusion.uncrowded(sentence, ["hub", "a", "b", "c", "d"], vectors)
    # hub's three closest are a, b, c (cosine 1/sqrt(3) each); a's are hub (1/sqrt(3)) and two at 0.
    s3 = 1 / np.sqrt(3)
    assert out == pytest.approx({"hub": 0.5 - 0.1 * s3, "a": 0.5 - 0.1 * s3 / 3, "b": 0.4 - 0.1 * s3 / 3,
                                 "c": 0.3 - 0.1 * s3 / 3, "d": 0.2})
    # Only the first CROWD_HEAD memories with a vector, and at least three of them.
    assert fusion.uncrowded(sentence, ["a", "b"], vectors) == sentence
    assert fusion.uncrowded({"a": 0.5, "b": 0.4}, ["a", "b", "c"], vectors) == {"a": 0.5, "b": 0.4}
    head = [f"m{n}" for n in range(fusion.CROWD_HEAD + 1)]
    many = {m: np.eye(fusion.CROWD_HEAD + 1)[n] for n, m in enumerate(head)}
    many[head[-1]] = many[head[0]]  # the 11th is a copy of the first, but beyond the head
    scores = {m: 0.5 for m in head}
    out = fusion.uncrowded(scores, head, many)
    assert out[head[0]] == pytest.approx(0.5) and out[head[-1]] == 0.5


def test_the_token_match_reads_how_much_of_a_memory_the_question_covers() -> None:
    """A long note holds a near neighbour of almost any word, so the token match one way (each
    question token's best cosine in the text) ties it with the short note the question is
    about; the share read the other way (each of the text's tokens' best cosine in the
    question) tells them apart. Only beside the sentence cosine: the static blend keeps the one
    way it was tuned with."""
    model = embedding.load()
    assert isinstance(model, embedding.Embedder), model
    question = "refund call timeout"
    texts = [question, f"{question} while the nightly export of warehouse stock levels runs at two and the "
                       "marketing team reads it before lunch"]
    assert model.token_match(question, texts).tolist() == pytest.approx([1.0, 1.0])
    assert fusion.SENTENCE_WEIGHTS.token_coverage == 0.3 and fusion.WEIGHTS.token_coverage == 0.0
    other_way = model.token_match(question, texts, covered=1.0)
    assert other_way[0] == pytest.approx(1.0) and 0.1 < other_way[1] < 0.3
    both = model.token_match(question, texts, covered=0.3)
    assert both.tolist() == pytest.approx([1.0, 0.7 + 0.3 * float(other_way[1])])


def test_the_memory_whose_best_sentence_leads_gains_a_share_of_its_lead() -> None:
    sentence = {"a": 0.50, "b": 0.55, "c": 0.40}
    # a's best sentence (0.62) leads b's (0.57) by 0.05: a gains LEAD_WEIGHT x 0.05, no other moves.
    out = fusion.with_lead(sentence, {"a": 0.62, "b": 0.57, "c": 0.40})
    assert fusion.LEAD_WEIGHT == 0.25
    assert out == pytest.approx({"a": 0.50 + 0.25 * 0.05, "b": 0.55, "c": 0.40})
    # A tie leads by nothing; one memory alone has no lead; a leader without a sentence score is left out.
    assert fusion.with_lead(sentence, {"a": 0.6, "b": 0.6}) == sentence
    assert fusion.with_lead(sentence, {"a": 0.6}) == sentence
    assert fusion.with_lead(sentence, {"z": 0.9, "a": 0.6}) == sentence


@pytest.fixture(scope="module")
def third_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sentence cache the third set's KB was built with: its sentences' vectors (``units``)
    are kept there, not in the index."""
    return Path(tmp_path_factory.mktemp("third-cache"))


@pytest.fixture(scope="module")
def third_kb(tmp_path_factory: pytest.TempPathFactory, third_cache: Path) -> Iterator[KnowledgeBase]:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("SLAYER_KB_NO_ENCODER", raising=False)
        patch.setenv("SLAYER_KB_CACHE", str(third_cache))
        kb = build(Path(tmp_path_factory.mktemp("third")) / "kb", SETS["third"])
    yield kb
    kb.close()


def _ranked(kb: KnowledgeBase) -> list[str]:
    kb.ensure_fresh()
    return [h["id"] for h in run(kb.index, Request(question=QUESTION, limit=10)).memories]


# Both rules put the answer first. Where it stands with the crowding alone (the words at full
# weight), with the weak words alone (no crowding), with neither; and the notes above it then.
UNDER = {
    # Units not made (yet) on this machine: the whole texts' sentence vectors alone.
    "whole texts only": (1, 1, 3, {"nr-images-free", "nr-images-subscriber", "nr-images-premium"}),
    # The KB as its filler leaves it: each memory read by its best sentence too. The best
    # sentences lift the answer a place, and the crowding changes nothing once the words count
    # less; with the words at full weight it still lifts the answer from third to second.
    "with units": (1, 0, 2, {"nr-images-free", "nr-images-subscriber"}),
}


@pytest.mark.parametrize("units", UNDER)
def test_a_paraphrase_into_a_crowded_neighbourhood_finds_its_answer(
    third_kb: KnowledgeBase, third_cache: Path, units: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The search reads the units from the cache its process names (each test its own, empty,
    unless it names the one the KB was built with)."""
    if units == "with units":
        monkeypatch.setenv("SLAYER_KB_CACHE", str(third_cache))
    text = embedding_text(third_kb.get("rf-ota-staged"))
    held = sentences.lookup(encoder.UNITS_KEY, [sentences.text_hash(text)])
    assert bool(held) == (units == "with units")  # the condition is the one named
    crowding, weak, neither, above = UNDER[units]
    assert _ranked(third_kb)[:3] == ["rf-ota-staged", "nr-images-free", "nr-photo-rights"]
    with monkeypatch.context() as patch:
        patch.setattr(fusion, "WEAK_WORDS_FACTOR", 1.0)
        assert _ranked(third_kb).index("rf-ota-staged") == crowding
    with monkeypatch.context() as patch:
        patch.setattr(fusion, "CROWD_WEIGHT", 0.0)
        assert _ranked(third_kb).index("rf-ota-staged") == weak
    monkeypatch.setattr(fusion, "CROWD_WEIGHT", 0.0)
    monkeypatch.setattr(fusion, "WEAK_WORDS_FACTOR", 1.0)
    before = _ranked(third_kb)
    assert before.index("rf-ota-staged") == neither
    assert set(before[:neither]) == above


def test_the_closest_memories_join_the_candidates_above_a_lower_floor() -> None:
    # Best first, as the scan gives them: the first three from 0.1, the rest from 0.2.
    found = [("a", 0.31), ("b", 0.24), ("c", 0.18), ("d", 0.2), ("e", 0.19)]
    assert retrieval.closest_kept(found) == [("a", 0.31), ("b", 0.24), ("c", 0.18), ("d", 0.2)]
    assert retrieval.closest_kept([("a", 0.15), ("b", 0.1), ("c", 0.09)]) == [("a", 0.15), ("b", 0.1)]
    assert retrieval.closest_kept([]) == []


def test_a_paraphrase_whose_answer_reads_close_by_one_sentence_only_comes_first(
    third_kb: KnowledgeBase, third_cache: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The note on the waiting list is among the three closest memories, but its whole text's
    cosine is under the floor of 0.2 (diluted by the rest of the note): it was no candidate at
    all before the closest joined from 0.1, the question sharing no word with it. Its best
    sentence is the closest sentence of any memory, by a lead that puts it first
    (``fusion.with_lead``); without the lead it is second."""
    monkeypatch.setenv("SLAYER_KB_CACHE", str(third_cache))  # where its sentences' vectors are
    question = Request(question="Who receives a spot someone else gave up?", limit=10)
    third_kb.ensure_fresh()
    assert [h["id"] for h in run(third_kb.index, question).memories][:3] == [
        "cl-waiting-list", "pg-chargeback-window", "pg-settlement-cutoff-apac"]
    monkeypatch.setattr(fusion, "LEAD_WEIGHT", 0.0)
    assert [h["id"] for h in run(third_kb.index, question).memories][:3] == [
        "pg-chargeback-window", "cl-waiting-list", "pg-settlement-cutoff-apac"]


def test_the_head_vectors_read_from_the_manifest_and_from_the_table_agree(third_kb: KnowledgeBase) -> None:
    ids = ["rf-ota-staged", "nr-images-free", "nr-images-subscriber", "no-such-memory"]
    cold = KnowledgeBase(third_kb.root)
    try:
        cold.index.background_vectors = False
        assert not cold.index.vectors_loaded()
        from_manifest = cold.index.sentence_vectors(ids)
        cold.index.meaning()  # the table a warm process holds
        assert cold.index.vectors_loaded()
        from_table = cold.index.sentence_vectors(ids)
    finally:
        cold.close()
    assert set(from_manifest) == set(from_table) == set(ids[:3])
    for m in ids[:3]:
        assert np.array_equal(from_manifest[m], from_table[m])
        assert float(np.linalg.norm(from_table[m])) == pytest.approx(1.0, abs=1e-5)
