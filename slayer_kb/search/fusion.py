"""Two ways to merge the channels' findings into one ranking.

``rrf``: reciprocal rank fusion (Cormack et al., 2009), as SLayer 1.4's search service fuses its
retrievers: each channel's ranking adds ``weight / (K + rank)``. It needs no comparable scores,
but it throws away how far ahead a channel's first answer is.

``blend`` (the default): every candidate the channels found is scored on each signal, and the
signals are added with tuned weights: the words' BM25F (as a share of the best BM25F of this
question, so it is comparable across questions), the cosine of the mean vectors, the token-level
match (embedding.Embedder.token_match) and the entity tags' score (as a share of the best). On
the relevance set it puts the right memory first for 4 more questions in 100 than ``rrf`` over the
same channels, and in the top 3 for 3 more (docs/search.md has the table).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

K = 60

# How a search matches its words (``retrieval.Request.match``): every channel fused; the same,
# with the memories holding every word first (Engram's mem_search); only those, ranked by words.
FUSED, ALL_FIRST, ALL = "fused", "all-first", "all"
MATCHES = (FUSED, ALL_FIRST, ALL)

# Hits a search returns in each bucket unless asked for another number.
DEFAULT_LIMIT = 10


def rrf(rankings: Sequence[tuple[float, Sequence[str]]]) -> dict[str, float]:
    """``(weight, ids best first)`` per channel -> score per id."""
    scores: dict[str, float] = {}
    for weight, ids in rankings:
        for rank, memory_id in enumerate(ids, start=1):
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (K + rank)
    return scores


@dataclass(frozen=True)
class Weights:
    words: float = 0.2
    meaning: float = 1.0
    tokens: float = 1.0
    entities: float = 1.0
    # A candidate with a sentence vector: its sentence cosine, and the static token match beside it
    # (the encoder reads the tokens in context, so the token match counts for less).
    sentence: float = 1.0
    sentence_tokens: float = 1.0
    # The token match's share that reads how much of a memory the question covers
    # (embedding.Embedder.token_match's ``covered``): beside the sentence cosine, a long note's
    # near neighbour of every word was pulling it above the note a question is about.
    token_coverage: float = 0.0


# Static vectors only (no sentence vectors yet, or no encoder).
WEIGHTS = Weights()
# With the question's sentence vector: chosen on the three relevance sets (docs/search.md).
SENTENCE_WEIGHTS = Weights(words=0.1, sentence=2.0, sentence_tokens=0.5, token_coverage=0.3)


# With sentence vectors, the words count for this share of their weight when the memory they
# score best holds at most one in WEAK_WORDS_ONE_IN of the question's words: then the question is
# in other words than its answer, and the few it shares with a memory are incidental
# (docs/search.md).
WEAK_WORDS_ONE_IN = 3
WEAK_WORDS_FACTOR = 0.25


def weights_for(words: int, sentence: bool = False, held: int | None = None) -> Weights:
    """The weights for a question of this many words: the fewer the words, the more they say
    (two typed keywords are a keyword search; a sentence is a paraphrase). ``sentence``: the
    question has a sentence vector; ``held``: how many of the question's words the memory the
    words score best holds (None: no memory holds any)."""
    base = SENTENCE_WEIGHTS if sentence else WEIGHTS
    weight = max(base.words, 1.0 / max(words, 1))
    if sentence and held is not None and WEAK_WORDS_ONE_IN * held <= words:
        weight *= WEAK_WORDS_FACTOR
    return dataclasses.replace(base, words=weight)


def blend(
    candidates: Sequence[str],
    words: Mapping[str, float],
    meaning: Mapping[str, float],
    tokens: Mapping[str, float],
    entities: Mapping[str, float],
    weights: Weights | None = None,
    sentence: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Score per candidate: the weighted sum of its normalised signals (absent: 0). A candidate
    with a sentence cosine is scored on it in place of its static ``meaning`` cosine."""
    weights = weights or WEIGHTS
    sentence = sentence or {}
    best_words = max(words.values(), default=0.0) or 1.0
    best_entities = max(entities.values(), default=0.0) or 1.0
    return {
        m: weights.words * words.get(m, 0.0) / best_words
        + (
            weights.sentence * sentence[m] + weights.sentence_tokens * tokens.get(m, 0.0)
            if m in sentence
            else weights.meaning * meaning.get(m, 0.0) + weights.tokens * tokens.get(m, 0.0)
        )
        + weights.entities * entities.get(m, 0.0) / best_entities
        for m in candidates
    }


# The share of a memory's sentence score that its best sentence makes (the rest: its whole
# text's cosine), chosen on the three tuned relevance sets for units pooled from the whole text's
# runs (docs/search.md): read in context, a sentence says less of its own than read alone.
UNIT_WEIGHT = 0.65


def with_units(sentence: Mapping[str, float], units: Mapping[str, float]) -> dict[str, float]:
    """Each memory's sentence cosine, blended with its best sentence's (``units``) where known."""
    return {m: (1.0 - UNIT_WEIGHT) * c + UNIT_WEIGHT * units[m] if m in units else c for m, c in sentence.items()}


# A memory close in meaning to many of the others at the head of a ranking (a note on a crowded
# neighbourhood's common ground) matches every question about that neighbourhood a little; the
# one a question is about stands out from its neighbours. So the sentence cosine of each of the
# first CROWD_HEAD memories of the head loses CROWD_WEIGHT times its mean cosine with its
# CROWD_NEIGHBOURS closest among them (docs/search.md).
CROWD_WEIGHT = 0.1
CROWD_HEAD = 10
CROWD_NEIGHBOURS = 3


def uncrowded(sentence: Mapping[str, float], head: Sequence[str], vectors: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Each memory's sentence cosine, less its crowding among the first ``CROWD_HEAD`` of
    ``head`` that have one (``vectors``: their unit sentence vectors)."""
    import numpy as np

    near = [m for m in head if m in sentence and m in vectors][:CROWD_HEAD]
    out = dict(sentence)
    if len(near) < 3:
        return out  # one or two memories are no neighbourhood
    rows = np.stack([vectors[m] for m in near]).astype(np.float64)
    closeness = rows @ rows.T
    np.fill_diagonal(closeness, -np.inf)
    neighbours = min(CROWD_NEIGHBOURS, len(near) - 1)
    crowding = np.sort(closeness, axis=1)[:, -neighbours:].mean(axis=1)
    for memory_id, crowd in zip(near, crowding.tolist(), strict=True):
        out[memory_id] -= CROWD_WEIGHT * crowd
    return out


# The memory holding the sentence closest to the question, ahead of every other memory's closest
# sentence, gains this share of its lead: one sentence squarely on the question is stronger
# evidence than a note whose every sentence is near it; chosen on the three tuned relevance sets,
# the middle of 0.2-0.3 which score alike (docs/search.md).
LEAD_WEIGHT = 0.25


def with_lead(sentence: Mapping[str, float], best: Mapping[str, float]) -> dict[str, float]:
    """Each memory's sentence score, that of the memory whose ``best`` leads raised by
    ``LEAD_WEIGHT`` times its lead over the second (``best``: a memory's best sentence's cosine,
    or its whole text's for a memory of one sentence; ties by id)."""
    out = dict(sentence)
    if len(best) < 2:
        return out
    (first, top), (_second, runner) = sorted(best.items(), key=lambda hit: (-hit[1], hit[0]))[:2]
    if first in out:
        out[first] += LEAD_WEIGHT * (top - runner)
    return out


# How close to the first answer a candidate must score for the question's details to decide
# between them (a share of the first's score; docs/search.md has the measurements).
DETAIL_MARGIN = 0.2
# How far down the ranking a candidate may be and still be settled by the details.
DETAIL_DEPTH = 10


def contested(ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The head of a ranking whose order the question's details may change: the candidates
    scoring within ``DETAIL_MARGIN`` of the first (notes alike in meaning that differ in a
    version, a year or a number score close)."""
    if not ranked:
        return []
    floor = ranked[0][1] * (1.0 - DETAIL_MARGIN)
    return [hit for hit in ranked[:DETAIL_DEPTH] if hit[1] >= floor]


def settle_details(ranked: list[tuple[str, float]], details: Mapping[str, float]) -> list[tuple[str, float]]:
    """Near-duplicates decided by the details the question names: the ``contested`` head put
    in order of ``details`` (how many of the question's numbers, versions and years each holds,
    its title counting most), the fused order breaking ties. They keep the head's scores, in order, so
    scores still sort the ranking."""
    close = contested(ranked)
    if len(close) < 2 or not details:
        return ranked
    settled = sorted(close, key=lambda hit: -details.get(hit[0], 0.0))  # stable: fused order breaks ties
    return [(m, score) for (m, _s), (_m, score) in zip(settled, close, strict=True)] + ranked[len(close):]


def ordered(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Best first; ties by id, so the order is a function of the files alone."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
