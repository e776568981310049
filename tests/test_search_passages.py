"""Long memories embedded whole: a text longer than the sentence encoder reads at once (256 word
pieces) is embedded as passages under its title and its vector is the mean of theirs, so a
question about its second half finds it; the cache never hands back a vector made by cutting."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import Request, embedding, encoder, run, sentences
from testing.encoding import loaded_encoder

TITLE = "Mobile release runbook"
# 21 sentences, about 390 word pieces: the last ones are past what one run of the model reads.
STEPS = [f"Step {n}: the release captain checks item {n} of the store checklist and signs it off." for n in range(1, 18)] + [
    "Source maps of every build are kept in Sentry for ninety days.",
    "Crashes from technicians who never update can then still be read.",
    "Symbol files for the native code are uploaded with each store build.",
    "Nobody deletes them by hand.",
]
LONG = f"{TITLE}\n" + " ".join(STEPS)
OTHERS = [
    ("Feature flags for the mobile app", "Flags are read at start-up from the config service; a flag changed mid-session applies at the next start."),
    ("Store screenshots", "Screenshots for both stores are made by a script on the simulator in four languages."),
    ("Beta testers", "Fifty technicians get every build a week early through the internal distribution channel."),
]
QUESTION = "how long do we retain the debugging files that decode crash traces of old app versions?"


pytestmark = pytest.mark.usefixtures("encoder_on")  # conftest.py turns it off elsewhere


def test_a_long_text_is_embedded_in_passages_none_of_it_cut() -> None:
    enc = loaded_encoder()
    assert enc.fits([OTHERS[0][1], LONG]) == [True, False]
    assert enc.passages(OTHERS[0][1]) == [OTHERS[0][1]]
    found = enc.passages(LONG)
    assert len(found) == 4
    assert all(p.startswith(f"{TITLE}\n") for p in found)
    assert all(len(enc._tokenizer.encode(p).ids) <= encoder.PASSAGE_TOKENS for p in found)  # noqa: SLF001 - the model's own count
    assert " ".join(p.removeprefix(f"{TITLE}\n") for p in found) == " ".join(STEPS)  # every sentence, in order, once
    mean = enc.encode(found).sum(axis=0)
    assert np.allclose(enc.encode([LONG])[0], mean / np.linalg.norm(mean), atol=1e-5)


def test_a_question_about_the_end_of_a_long_memory_finds_it(empty_kb: KnowledgeBase) -> None:
    """By meaning alone: cut at 256 word pieces, the runbook's vector knew nothing of source maps
    and came second, after the note on feature flags."""
    kb = empty_kb
    kb.index.background_vectors = False
    kb.save_observation(title=TITLE, content=LONG.removeprefix(f"{TITLE}\n"), project="field-app")
    for title, learning in OTHERS:
        kb.save_observation(title=title, content=learning, project="field-app")
    assert kb.index.fill_sentences() == 4
    found = run(kb.index, Request(question=QUESTION, limit=4, channels=frozenset({"meaning"})))
    assert [h["id"] for h in found.memories][0] == "1"


def test_an_old_cache_gives_no_cut_vector_and_keeps_the_whole_ones(empty_kb: KnowledgeBase) -> None:
    """Vectors cached under the key of the time before passages: right for a text that fits in one
    run (taken, not made again), wrong for a longer one (made again)."""
    kb = empty_kb
    kb.index.background_vectors = False
    kb.save_observation(title=TITLE, content=LONG.removeprefix(f"{TITLE}\n"))
    kb.save_observation(title=OTHERS[0][0], content=OTHERS[0][1])
    long_text, short_text = LONG, f"{OTHERS[0][0]}\n{OTHERS[0][1]}"
    marker = np.zeros(encoder.DIMENSIONS, dtype=np.float32)
    marker[7] = 1.0  # no model makes this vector: finding it proves the cache served it
    sentences.store(encoder.FITTING_KEY, {sentences.text_hash(t): sentences.pack(marker) for t in (long_text, short_text)})
    assert kb.index.fill_sentences() == 2
    made = kb.index.meaning()
    cosines = made.sentence_cosines(marker, ["1", "2"])
    assert cosines["2"] == pytest.approx(1.0)
    assert cosines["1"] == pytest.approx(float(loaded_encoder().encode([long_text])[0] @ marker), abs=0.01)
    assert sentences.lookup(encoder.MODEL_KEY, [sentences.text_hash(long_text)]) != {}


def test_a_sentence_longer_than_a_passage_is_split_between_words() -> None:
    """A pasted log line or a paragraph without a full stop: every word still reaches a passage."""
    enc = loaded_encoder()
    words = [f"worker{n}" for n in range(300)]
    text = "Queue stall\n" + " ".join(words)
    found = enc.passages(text)
    assert len(found) > 2
    assert all(p.startswith("Queue stall\n") for p in found)
    assert all(len(enc._tokenizer.encode(p).ids) <= encoder.PASSAGE_TOKENS for p in found)  # noqa: SLF001 - the model's own count
    assert " ".join(p.removeprefix("Queue stall\n") for p in found).split() == words


def test_the_static_vectors_and_the_token_match_read_a_long_text_to_its_end() -> None:
    """wordllama's side read the first 2,048 characters: a word at the end of a long note never
    reached the token match, which compares the question's tokens with every token of a text."""
    static = embedding.load()
    assert isinstance(static, embedding.Embedder), static
    filler = " ".join(f"Step {n} is checked and signed off." for n in range(120))  # 4,000 characters
    long_text = f"{filler} Afterwards the hovercraft is refuelled."
    plain = static.embed([filler, long_text])
    assert float(plain[0] @ plain[1]) < 0.9999  # the last sentence moved the mean
    match = static.token_match("hovercraft", [filler, long_text])
    assert match[1] == pytest.approx(1.0, abs=1e-3) and match[0] < 0.9
    short = "Title\nsome learning text.\n  more\n"
    assert embedding._slices(short) == [short]  # noqa: SLF001 - a text under the limit is tokenized as it is
    assert len(embedding._slices("a" * 60_000)) == 1  # noqa: SLF001 - a run of letters is cut, not tokenized for a minute


def test_an_index_made_before_makes_its_sentence_vectors_again(empty_kb: KnowledgeBase, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """An index and a cache as the version that cut long texts left them: the manifest names the
    old keys and holds the cut vector. The next command drops every sentence vector; the filler
    takes the old cache's vector for the text that fits and makes the long one again."""
    kb = empty_kb
    kb.index.background_vectors = False
    kb.save_observation(title=TITLE, content=LONG.removeprefix(f"{TITLE}\n"))
    kb.save_observation(title=OTHERS[0][0], content=OTHERS[0][1])
    marker = np.zeros(encoder.DIMENSIONS, dtype=np.float32)
    marker[7] = 1.0
    texts = (LONG, f"{OTHERS[0][0]}\n{OTHERS[0][1]}")
    with contextlib.closing(sqlite3.connect(kb.index.dir / "manifest.db")) as db, db:
        db.execute("UPDATE vectors SET svec = ?", (sentences.pack(marker),))
    state = json.loads((kb.index.dir / "manifest.json").read_text(encoding="utf-8"))
    state["vectors"] = embedding.key().replace("-mean-v2", "-mean-v1")  # type: ignore[union-attr]
    (kb.index.dir / "manifest.json").write_text(json.dumps(state), encoding="utf-8")
    monkeypatch.setenv("SLAYER_KB_CACHE", str(tmp_path / "old-cache"))
    sentences.store(encoder.FITTING_KEY, {sentences.text_hash(t): sentences.pack(marker) for t in texts})

    again = KnowledgeBase(kb.root)
    again.index.background_vectors = False
    again.ensure_fresh()
    assert again.index.sentence_coverage() == (0, 2)
    assert again.index.fill_sentences() == 2
    cosines = again.index.meaning().sentence_cosines(marker, ["1", "2"])
    assert cosines["2"] == pytest.approx(1.0)
    assert cosines["1"] == pytest.approx(float(loaded_encoder().encode([LONG])[0] @ marker), abs=0.01)
    again.close()
