"""Units pooled from the whole text's runs ("late chunking"): a memory's sentence vectors are the
means of their token rows (with the title's) in the run of the passage that holds them, so the
model reads a memory once; its whole vector is the one it always was, and a cache of the version
before keeps its whole vectors while the units are made again, one batch at a time across
builders."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from typing import Any

import numpy as np
import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import encoder, filler, sentences, spans
from testing.encoding import loaded_encoder

TITLE = "Retry budget for payment calls"
TEXT = (f"{TITLE}\nCalls to the PSP are retried twice on a 5xx. A timeout is never retried, because the charge "
        "may have gone through.\nThe budget resets at midnight.")
# 21 sentences, about 390 word pieces: embedded as four passages under the title.
STEPS = [f"Step {n}: the release captain checks item {n} of the store checklist and signs it off." for n in range(1, 18)] + [
    "Source maps of every build are kept in Sentry for ninety days.",
    "Crashes from technicians who never update can then still be read.",
    "Symbol files for the native code are uploaded with each store build.",
    "Nobody deletes them by hand.",
]
LONG = "Mobile release runbook\n" + " ".join(STEPS)
NOTES = [
    ("Image sizes in the newsletter", "Images are resized to 600 pixels wide. Animated GIFs are replaced by their first frame."),
    ("Reminder texts before appointments", "One text the day before. A second one an hour before."),
]

pytestmark = pytest.mark.usefixtures("encoder_on")  # conftest.py turns it off elsewhere


def _rows(model: encoder.Encoder, passage: str) -> tuple[np.ndarray, Any]:
    """The token rows of one real run of the model over ``passage`` alone, and its encoding."""
    encoding = model._tokenizer.encode(passage)  # noqa: SLF001 - the model's own tokens
    hidden, _pooled = model._pooled([encoding.ids])  # noqa: SLF001 - one run, its token rows
    return hidden[0], encoding


def _unit(hidden: np.ndarray, encoding: Any, spans: list[tuple[int, int]]) -> np.ndarray:
    """The normalised mean of the rows of the tokens that start inside these character spans."""
    rows = [n for n, (start, _end) in enumerate(encoding.offsets)
            if not encoding.special_tokens_mask[n] and any(a <= start < b for a, b in spans)]
    mean = hidden[rows].mean(axis=0)
    return mean / np.linalg.norm(mean)


def test_a_sentences_vector_is_the_mean_of_its_and_its_titles_token_rows() -> None:
    model = loaded_encoder()
    assert spans.unit_spans(TEXT) == (len(TITLE), [(31, 75), (76, 145), (146, 176)])
    assert [TEXT[a:b] for a, b in spans.unit_spans(TEXT)[1]] == [
        "Calls to the PSP are retried twice on a 5xx.",
        "A timeout is never retried, because the charge may have gone through.",
        "The budget resets at midnight.",
    ]
    whole, units = model.encode_with_units([TEXT, "One sentence only."])
    hidden, encoding = _rows(model, TEXT)
    title = (0, len(TITLE))
    expected = np.stack([_unit(hidden, encoding, [title, span]) for span in spans.unit_spans(TEXT)[1]])
    assert units[0].shape == (3, encoder.DIMENSIONS)
    assert np.allclose(units[0], expected, atol=1e-6)
    assert units[1].shape == (0, encoder.DIMENSIONS)  # one sentence: its whole vector says it
    # The whole vectors are the ones ``encode`` makes, bit for bit.
    assert whole.tobytes() == model.encode([TEXT, "One sentence only."]).tobytes()


def test_a_sentence_of_a_long_text_is_pooled_from_its_own_passages_run() -> None:
    model = loaded_encoder()
    passages = model.passages(LONG)
    assert len(passages) == 4
    whole, units = model.encode_with_units([LONG], workers=2)
    assert whole.tobytes() == model.encode([LONG]).tobytes()
    assert len(units[0]) == len(STEPS)
    # The last sentence is in the last passage, under the title: its vector comes from that run.
    last = passages[-1]
    assert last.endswith(STEPS[-1])
    hidden, encoding = _rows(model, last)
    start = len(last) - len(STEPS[-1])
    expected = _unit(hidden, encoding, [(0, len("Mobile release runbook")), (start, len(last))])
    assert np.allclose(units[0][-1], expected, atol=1e-6)
    # Read in its context, a sentence differs from the same sentence read alone under the title.
    alone = model.encode([f"Mobile release runbook\n{STEPS[-1]}"])[0]
    assert float(alone @ units[0][-1]) < 0.99


def _scanned(labels: spans.Labels, placed: list[spans.Span], encoding: Any) -> list[tuple[int, list[int]]]:
    """``spans.members`` by definition, token by token: each token's unit is the one of the
    character it starts at, in the span holding it; tokens outside every unit belong to none."""
    chars, _count = labels
    found: dict[int, list[int]] = {}
    for position, ((start, _end), extra) in enumerate(zip(encoding.offsets, encoding.special_tokens_mask, strict=True)):
        held = [(at, where) for at, where, length in placed if at <= start < at + length]
        if not extra and held and chars[held[0][1] + start - held[0][0]] != spans.OUTSIDE:
            found.setdefault(int(chars[held[0][1] + start - held[0][0]]), []).append(position)
    return sorted(found.items())


def test_a_passage_sums_only_the_units_it_holds() -> None:
    """A row of zeros for each of the text's units a passage does not hold made a long text's
    memory grow with its passages times its sentences (3,376 sentences: 2.9 GB at once)."""
    model = loaded_encoder()
    labels = spans.labels(LONG)
    held: list[int] = []
    for passage, placed in model._layout(LONG):  # noqa: SLF001 - each passage with its spans
        hidden, encoding = _rows(model, passage)
        found = spans.members(labels, placed, *spans.compact(encoding)[1:])
        units, sums, sizes = spans.unit_sums(hidden, found)
        assert len(units) == len(sums) == len(sizes) == len([unit for unit, _ in found if unit != spans.HEAD]) > 0
        held += units.tolist()
    # Every sentence in some passage; one a passage's end cuts is in two, and summed from both.
    assert sorted(set(held)) == list(range(len(STEPS))) and len(held) < 2 * len(STEPS)


def test_pooling_and_tracing_make_the_same_bits_as_the_masked_sums_and_the_token_scan() -> None:
    """The build pools each input's own rows and traces tokens with arrays (less CPU outside the
    model's kernels, docs/performance.md): the same bits as the mean over the padded run with
    its mask, and the same tokens for each unit as scanning them one by one."""
    model = loaded_encoder()
    tokenizer = model._tokenizer  # noqa: SLF001 - the model's own tokens
    encoded = [tokenizer.encode(TEXT).ids, tokenizer.encode("One sentence only.").ids]
    hidden, pooled = model._pooled(encoded)  # noqa: SLF001 - one padded run of two inputs
    assert len(encoded[1]) < len(encoded[0]) == hidden.shape[1]
    mask = np.zeros(hidden.shape[:2], dtype=np.float32)[:, :, None]
    for n, ids in enumerate(encoded):
        mask[n, : len(ids)] = 1
    masked = (hidden * mask).sum(axis=1) / mask.sum(axis=1)
    assert pooled.tobytes() == (masked / np.linalg.norm(masked, axis=1, keepdims=True)).tobytes()
    labels = spans.labels(LONG)
    layout = model._layout(LONG)  # noqa: SLF001 - each passage with where its pieces come from
    assert len(layout) == 4
    for passage, placed in layout:
        encoding = tokenizer.encode(passage)
        traced = spans.members(labels, placed, *spans.compact(encoding)[1:])
        assert [(unit, positions.tolist()) for unit, positions in traced] == _scanned(labels, placed, encoding)
        assert traced[0][0] == spans.HEAD  # every passage under the title
    whole = [(0, 0, len(TEXT))]
    assert spans.members(spans.labels(TEXT), whole, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8)) == []
    assert spans.members(spans.labels(TEXT), whole, np.array([0, 0]), np.array([1, 1])) == []  # [CLS] and [SEP] alone


def _forget_units() -> None:
    """The cache as the version before late units left it: whole vectors, none under MODEL_KEY."""
    with contextlib.closing(sqlite3.connect(sentences.folder() / sentences.FILE, isolation_level=None)) as db:
        db.execute("DELETE FROM sentences WHERE model IN (?, ?)", (encoder.MODEL_KEY, encoder.UNITS_KEY))


class _Counting:
    """A session that counts its runs."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.runs = 0

    def get_inputs(self) -> Any:
        return self._session.get_inputs()

    def run(self, *args: Any) -> Any:
        self.runs += 1
        return self._session.run(*args)


@contextlib.contextmanager
def _counted() -> Any:
    model = loaded_encoder()
    real = model._session  # noqa: SLF001 - counted, then put back
    model._session = counting = _Counting(real)  # noqa: SLF001
    try:
        yield counting
    finally:
        model._session = real  # noqa: SLF001


def _kb_of_notes(empty_kb: KnowledgeBase) -> KnowledgeBase:
    empty_kb.index.background_vectors = False
    for title, learning in NOTES:
        empty_kb.save_observation(title=title, content=learning, project="ops")
    assert empty_kb.index.fill_sentences() == 2
    return empty_kb


def test_a_cache_of_the_version_before_keeps_its_whole_vectors_and_remakes_the_units(empty_kb: KnowledgeBase) -> None:
    kb = _kb_of_notes(empty_kb)
    texts = [f"{title}\n{learning}" for title, learning in NOTES]
    digests = [sentences.text_hash(t) for t in texts]
    units = sentences.lookup(encoder.UNITS_KEY, digests)
    whole = sentences.lookup(encoder.WHOLE_KEY, digests)
    assert sentences.lookup(encoder.MODEL_KEY, digests) == whole
    _forget_units()
    marker = np.zeros(encoder.DIMENSIONS, dtype=np.float32)
    marker[7] = 1.0  # no model makes this vector: finding it proves the cache served it
    sentences.store(encoder.WHOLE_KEY, {digests[0]: sentences.pack(marker)})

    again = KnowledgeBase(kb.root)
    again.index.background_vectors = False
    again.reindex()  # the rows find no vector under the new key
    assert again.sentence_coverage() == (0, 2)
    with _counted() as session:
        assert again.index.fill_sentences() == 2
    assert session.runs == 1  # the units of both texts, in one run; no whole vector made again
    assert again.index.meaning().sentence_cosines(marker, ["1"])["1"] == pytest.approx(1.0)
    assert sentences.lookup(encoder.UNITS_KEY, digests) == units  # the same runs: the same units
    assert sentences.lookup(encoder.MODEL_KEY, digests) == {**whole, digests[0]: sentences.pack(marker)}
    again.close()


def test_units_another_builder_made_while_this_one_waited_are_not_made_again(empty_kb: KnowledgeBase) -> None:
    """Two builders (``reindex`` beside a filler): the units of a batch are made under the batch
    lock, and a builder that waited for it finds them made."""
    kb = _kb_of_notes(empty_kb)
    digests = [sentences.text_hash(f"{title}\n{learning}") for title, learning in NOTES]
    _forget_units()
    theirs = {d: sentences.pack(np.full(encoder.DIMENSIONS, n + 1.0)) for n, d in enumerate(digests)}
    holding = threading.Event()

    def other_builder() -> None:
        with filler.batch(kb.root):
            holding.set()
            sentences.store(encoder.UNITS_KEY, {d: b"" for d in digests})
            sentences.store(encoder.MODEL_KEY, theirs)

    other = threading.Thread(target=other_builder)

    def stop() -> bool:  # the first batch of units: the other builder takes the lock first
        if not other.is_alive() and not holding.is_set():
            other.start()
            assert holding.wait(60)
        return False

    again = KnowledgeBase(kb.root)  # a process that has not checked the units
    again.index.background_vectors = False
    with _counted() as session:
        assert again.index.fill_sentences(stop=stop) == 0
    other.join(60)
    assert holding.is_set()
    assert session.runs == 0
    assert sentences.lookup(encoder.MODEL_KEY, digests) == theirs
    assert sentences.lookup(encoder.UNITS_KEY, digests) == {d: b"" for d in digests}
    again.close()


def test_the_units_of_the_version_before_are_dropped_from_the_cache(empty_kb: KnowledgeBase) -> None:
    """Nothing reads the units each read alone under the title (about 16 entries a memory): the
    first fill of a process drops them, a chunk of rows at a time, and keeps every other key's."""
    sentences.store(encoder.RETIRED_KEY, {f"{n:064x}": bytes(encoder.DIMENSIONS) for n in range(12_000)})
    sentences.store(encoder.FITTING_KEY, {"f" * 64: bytes(encoder.DIMENSIONS)})
    _kb_of_notes(empty_kb)
    with contextlib.closing(sqlite3.connect(sentences.folder() / sentences.FILE)) as db:
        kept = dict(db.execute("SELECT model, count(*) FROM sentences GROUP BY model").fetchall())
    assert kept == {encoder.FITTING_KEY: 1, encoder.WHOLE_KEY: 2, encoder.MODEL_KEY: 2, encoder.UNITS_KEY: 2}
    assert sentences.drop(encoder.RETIRED_KEY) == 0
