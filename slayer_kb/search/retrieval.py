"""One search request through every channel, fused: what ``KnowledgeBase.search`` answers.

Per bucket (memories, example queries) each channel ranks the memories the filters allow:

- words: memories holding every word first, then those holding some (words.py);
- meaning: cosine between the question's vector and each memory's (vectors.py);
- entities: shared tags, precise above broad (entities.py).

The rankings are fused by reciprocal rank (fusion.py). Memories named as ``memory:<id>`` and
an exact topic key come first, whatever the channels say. A request whose every input was
dropped returns nothing, with the warnings that say why, never unrelated memories.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from whoosh import query as Q

from .. import embedding
from ..index import Index
from . import entities as E
from . import words as W
from .filters import Restriction, restrict
from .fusion import fuse

# Channel weights, tuned on the relevance set (bench/relevance): see docs/search.md.
WEIGHTS = {"words": 1.0, "meaning": 1.0, "entities": 1.0}
# Below this cosine a memory is not close in meaning to the question at all.
MEANING_FLOOR = 0.25
# Each channel ranks this many candidates (at least) before fusion.
MIN_DEPTH = 50
PINNED_SCORE = 1.0
CHANNELS = frozenset({"words", "meaning", "entities"})
BUCKETS = ((False, "memory", "memories"), (True, "example query", "example queries"))


@dataclass(frozen=True)
class Request:
    question: str = ""
    entities: list[str] = field(default_factory=list)  # resolved inputs
    inputs_given: bool = False  # entities or a query were given, even if all were dropped
    type: str | None = None
    project: str | None = None
    scope: str | None = None
    datasource: str | None = None
    limit: int = 10
    # FUSED: every channel fused; ALL_FIRST: the same, memories holding every word first (Engram's
    # mem_search); ALL: only memories holding every word, ranked by words alone.
    match: str = "fused"
    # Which channels run (the benchmark measures each alone); filters and pins apply to all.
    channels: frozenset[str] = CHANNELS


FUSED, ALL_FIRST, ALL = "fused", "all-first", "all"
MATCHES = (FUSED, ALL_FIRST, ALL)


@dataclass
class Found:
    """Stored documents (their ``data`` and a ``score``), best first."""

    memories: list[dict[str, Any]] = field(default_factory=list)
    example_queries: list[dict[str, Any]] = field(default_factory=list)
    catalog: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def run(index: Index, request: Request) -> Found:
    found = Found()
    question = request.question.strip()
    words = W.parse(question)
    topic = E.topic_query(question) if question else None
    if question and not words and topic is None:
        found.warnings.append(f"The question {question!r} has no searchable words.")
    searched = bool(words) or topic is not None or bool(request.entities)
    if not searched:
        if not question and not request.inputs_given:
            found.warnings.append("No entities, query or question given: showing the newest memories.")
            for has_query, _one, _many in BUCKETS:
                bucket = found.example_queries if has_query else found.memories
                bucket.extend(index.documents(None, _restriction(request, has_query), limit=request.limit, sort_newest=True))
        elif request.inputs_given and not question:
            found.warnings.append("Every input entity was dropped: nothing left to search for.")
        return found
    vector = _question_vector(index, words, request, found.warnings)
    found.memories, found.example_queries = _ranked(index, request, words, topic, vector, found.warnings)
    if request.datasource:
        _warn_off_datasource(index, request, found.warnings)
    found.catalog = _catalog(index, words, request, found.warnings)
    return found


def _restriction(request: Request, has_query: bool | None) -> Restriction:
    return restrict(
        type=request.type, project=request.project, scope=request.scope,
        datasource=request.datasource, has_query=has_query,
    )


def _question_vector(index: Index, words: W.Words, request: Request, warnings: list[str]) -> Any:
    if not words or request.match == ALL or "meaning" not in request.channels:
        return None
    model = index.embedder()
    if isinstance(model, embedding.Unavailable):
        warnings.append(str(model))
        return None
    return model.embed([request.question.strip()])[0]


def _ranked(
    index: Index, request: Request, words: W.Words, topic: Q.Query | None, vector: Any, warnings: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One fused ranking over all memories, then split into the two buckets, so that scores
    compare across buckets (as mem_search, which merges them, needs)."""
    restriction = _restriction(request, None)
    depth = max(MIN_DEPTH, 10 * request.limit)
    docs: dict[str, dict[str, Any]] = {}

    def ids_of(found: list[dict[str, Any]]) -> list[str]:
        for doc in found:
            docs.setdefault(doc["id"], doc)
        return [doc["id"] for doc in found]

    pinned: list[str] = []
    for exact in (E.id_query(E.named_ids(request.entities)), topic):
        if exact is not None:
            pinned += [m for m in ids_of(index.documents(exact, restriction, limit=2 * request.limit)) if m not in pinned]

    rankings: list[tuple[float, list[str]]] = []
    every: list[str] = []
    if words and "words" in request.channels:
        every = ids_of(index.documents(W.all_query(words), restriction, limit=depth))
        if request.match == ALL:
            rankings.append((WEIGHTS["words"], every))
        else:
            some = ids_of(index.documents(W.any_query(words), restriction, limit=depth))
            held = set(every)
            rankings.append((WEIGHTS["words"], every + [m for m in some if m not in held]))
    if vector is not None:
        index.searcher()  # a searcher that went stale drops the loaded vectors with it
        close = index.meaning().top(vector, restriction.values, depth, MEANING_FLOOR)
        rankings.append((WEIGHTS["meaning"], [m for m, _score in close]))
    wanted = E.entity_query(request.entities) if "entities" in request.channels else None
    if wanted is not None:
        rankings.append((WEIGHTS["entities"], ids_of(index.documents(wanted, restriction, limit=depth))))

    fused = [(m, score) for m, score in fuse(rankings) if m not in pinned]
    if request.match == ALL_FIRST and words:
        held = set(every)
        fused = [hit for hit in fused if hit[0] in held] + [hit for hit in fused if hit[0] not in held]
    buckets: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
    for at in range(0, len(pinned) + len(fused), 4 * request.limit):
        chunk = ([(m, PINNED_SCORE) for m in pinned] + fused)[at : at + 4 * request.limit]
        docs.update(index.stored([m for m, _score in chunk if m not in docs]))
        for memory_id, score in chunk:
            doc = docs.get(memory_id)
            if doc is None:
                continue
            bucket = buckets[doc["data"]["query"] is not None]
            if len(bucket) < request.limit:
                bucket.append(dict(doc, score=score))
        if all(len(b) >= request.limit for b in buckets):
            break
    if words:
        holders = {docs[m]["data"]["query"] is not None for m in every}
        for has_query, one, many in BUCKETS:
            if has_query in holders or not buckets[has_query]:
                continue
            if request.match == ALL:
                warnings.append(f"No {one} has all the words of the question.")
            else:
                warnings.append(
                    f"No {one} has all the words of the question; showing {many} with some of them "
                    "or close in meaning."
                )
    return buckets


def _warn_off_datasource(index: Index, request: Request, warnings: list[str]) -> None:
    named = E.named_ids(request.entities)
    if not named:
        return
    inside = {d["id"] for d in index.documents(E.id_query(named), restrict(datasource=request.datasource))}
    for memory_id in named:
        if memory_id not in inside:
            warnings.append(f"memory:{memory_id} is not rooted at datasource {request.datasource!r}; dropped.")


def _catalog(index: Index, words: W.Words, request: Request, warnings: list[str]) -> list[dict[str, Any]]:
    """Catalog entities whose names or descriptions hold the question's words, and the input
    entities themselves."""
    inputs = [e for e in request.entities if not e.startswith(E.MEMORY_PREFIX)]
    if request.datasource:
        for entity in inputs:
            if not E.rooted_at(entity, request.datasource):
                warnings.append(
                    f"entity {entity!r} is not rooted at datasource {request.datasource!r}; dropped from entities bucket."
                )
        inputs = [e for e in inputs if E.rooted_at(e, request.datasource)]
    clauses = ([W.any_query(words)] if words else []) + E.catalog_input_query(inputs, boost=10.0)
    if not clauses:
        return []
    required: list[Q.Query] = [Q.Term("kind", "catalog"), Q.Or(clauses)]
    if request.datasource:
        required.append(Q.Term("datasources", request.datasource))
    return [{**doc["data"], "score": doc["score"]} for doc in index.documents(Q.And(required), limit=request.limit)]
