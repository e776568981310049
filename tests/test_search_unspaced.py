"""A long text with no blank between its words (Chinese, Japanese, a run of symbols) is read to
its end by the sentence encoder: its sentences end at 。！？； with no blank after, and a word
longer than a passage is cut between its word pieces. It was one "word" kept whole, cut by the
tokenizer at 256 word pieces, so two 20 KB questions with the same first 400 characters had the
same vector, and such a memory was embedded from its start only. Texts laid out as before keep
their cached vectors; the relaid ones are hashed apart and made again."""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import encoder, sentences
from slayer_kb.search.retrieval import QUESTION_PIECES
from testing.encoding import loaded_encoder

pytestmark = pytest.mark.usefixtures("encoder_on")  # conftest.py turns it off elsewhere


def chinese(chars: int, seed: int) -> str:
    """``chars`` CJK ideographs, a 。 ending each sentence of 20, no blank anywhere."""
    draw = random.Random(seed)
    return "".join("。" if n % 20 == 19 else chr(draw.randint(0x4E00, 0x9FA5)) for n in range(chars))


def body(passages: list[str], title: str = "") -> str:
    """The text the passages hold (each under ``title``), the blanks they were joined by dropped."""
    return "".join(p.removeprefix(f"{title}\n").replace(" ", "") for p in passages)


def test_a_long_unspaced_question_is_read_to_its_end() -> None:
    enc = loaded_encoder()
    head = chinese(400, 1)
    first, second = head + chinese(1_000, 2), head + chinese(1_000, 3)
    assert encoder.longer_than(first, QUESTION_PIECES)  # 1,400 word pieces, judged under 1,024 before
    made = enc.encode([first, second])
    assert not np.array_equal(made[0], made[1])  # the tails differ, so do the vectors
    found = enc.passages(first)
    assert body(found) == first
    assert all(len(enc._tokenizer.encode(p).ids) <= encoder.PASSAGE_TOKENS for p in found)  # noqa: SLF001 - the model's own count


def test_a_word_longer_than_a_passage_is_cut_between_word_pieces() -> None:
    enc = loaded_encoder()
    run = "Rate formula\n" + "abc+def*ghi-" * 150
    found = enc.passages(run)
    assert len(found) > 1 and all(p.startswith("Rate formula\n") for p in found)
    assert body(found, "Rate formula") == run.removeprefix("Rate formula\n")
    assert all(len(enc._tokenizer.encode(p).ids) <= encoder.PASSAGE_TOKENS for p in found)  # noqa: SLF001
    tail = "Rate formula\n" + "abc+def*ghi-" * 150 + "zebra" * 40
    assert not np.array_equal(*enc.encode([run, tail]))  # its end is read


def test_only_relaid_texts_are_hashed_apart() -> None:
    plain = "Mobile release runbook\n" + " ".join(f"Step {n}: the captain signs item {n} off." for n in range(60))
    short = chinese(200, 4)  # one run of the model: laid out as before
    for text in (plain, short, "https://example.com/" + "a" * 100):
        assert sentences.text_hash(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    for text in (chinese(600, 5), plain + " " + "x" * 300):
        assert sentences.text_hash(text) != hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_an_index_made_before_makes_only_the_relaid_vectors_again(empty_kb: KnowledgeBase, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An index and a cache as the version before left them: every row's vector cached under the
    text's plain hash. The next command makes the table again; the text laid out as before takes
    its cached vector, the long Chinese one is made again (it was read from its start only)."""
    kb = empty_kb
    kb.index.background_vectors = False
    long_text = chinese(600, 6)
    kb.save_observation(title="订单金额", content=long_text)
    kb.save_observation(title="Refund window", content="Refunds are accepted for thirty days after delivery, "
                        "counted from the carrier's scan, never from the order date.")
    texts = {"1": f"订单金额\n{long_text}", "2": "Refund window\nRefunds are accepted for thirty days after "
             "delivery, counted from the carrier's scan, never from the order date."}
    marker = np.zeros(encoder.DIMENSIONS, dtype=np.float32)
    marker[7] = 1.0  # no model makes this vector: finding it proves the cache served it
    with contextlib.closing(sqlite3.connect(kb.index.dir / "manifest.db")) as db, db:
        db.execute("UPDATE vectors SET svec = ?", (sentences.pack(marker),))
    state = json.loads((kb.index.dir / "manifest.json").read_text(encoding="utf-8"))
    state["vectors"] = " + ".join(state["vectors"].split(" + ")[:2])  # the static model's and MODEL_KEY
    (kb.index.dir / "manifest.json").write_text(json.dumps(state), encoding="utf-8")
    monkeypatch.setenv("SLAYER_KB_CACHE", str(tmp_path / "old-cache"))
    old = {hashlib.sha256(t.encode("utf-8")).hexdigest(): sentences.pack(marker) for t in texts.values()}
    sentences.store(encoder.MODEL_KEY, old)
    sentences.store(encoder.WHOLE_KEY, old)

    again = KnowledgeBase(kb.root)
    again.index.background_vectors = False
    again.ensure_fresh()
    assert again.index.sentence_coverage() == (1, 2)
    assert again.index.fill_sentences() == 1
    cosines = again.index.meaning().sentence_cosines(marker, ["1", "2"])
    assert cosines["2"] == pytest.approx(1.0)
    assert cosines["1"] == pytest.approx(float(loaded_encoder().encode([texts["1"]])[0] @ marker), abs=0.01)
    again.close()
