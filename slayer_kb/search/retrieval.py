"""One search request through every channel, fused: what ``KnowledgeBase.search`` answers.

Each channel finds candidates among the memories the filters allow, with a score:

- words: BM25F over every word of the question (words.py); memories holding every word are
  what ``match="all"`` keeps and ``"all-first"`` puts first;
- meaning: the cosine between the question's vector and each memory's (vectors.py), and the
  token-level match (embedding.py); for a question of three words or more, the memories
  closest in meaning are candidates too, whether or not they share a word with it;
- entities: shared tags, precise above broad (entities.py).

The candidates are ranked by the blend of their scores (fusion.py), once over all memories, then
split into the two buckets. Memories named as ``memory:<id>``, by their id (the whole question)
and by an exact topic key come first, whatever the channels say. A request whose every input was
dropped returns nothing, with the warnings that say why, never unrelated memories.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh import query as Q

from ..core.locate import linked_id, memory_link
from ..core.memory import RECOGNISED_TYPES, Memory
from ..core.results import fell_back_note
from ..core.text import shown_value
from . import embedding, encoder
from . import entities as E
from . import fusion as F
from . import words as W
from .analysis import fold, symbols
from .filters import Restriction, restrict
from .fusion import ALL, ALL_FIRST, FUSED
from .helper import helper
from .index import Index
from .schema import text_terms
from .shortlist import Scan
from .vectors import embedding_text

# The memories closest in meaning join the candidates whatever the words found: in a large KB the
# words always find enough candidates, and an answer sharing no word with the question would never
# be among them. This many (or as many as the results asked for), with a cosine of at least the
# floor (on the relevance sets, answers sharing no word scored 0.12-0.31; below 0.2 the closest
# memories are unrelated) ...
MEANING_ONLY_DEPTH = 10
MEANING_ONLY_FLOOR = 0.2
SENTENCE_FLOOR = 0.2
# The first few of them join above a lower floor: a memory's sentence score reads its best
# sentence too, which its whole text's cosine, diluted by the rest of the note, does not show.
CLOSEST_KEPT = 3
CLOSEST_FLOOR = 0.1
# ... for a question of at least this many words: one or two typed words are a keyword search,
# where a memory without them is noise.
MEANING_ONLY_WORDS = 3
# Each channel ranks this many candidates (at least) before fusion.
MIN_DEPTH = 60
# The token-level match re-ranks this many of the best candidates (at least 3 per result asked).
TOKEN_POOL = 30
CHANNELS = frozenset({"words", "meaning", "entities"})
# The longest question the sentence model reads (word pieces: 8 passages, about 4 KB of prose and
# 0.2 s of a core). A longer one is read by meaning through the static vectors, every word of it:
# its model runs held the warm server, and every command queued behind it, for seconds (a 16 KB
# question 1-2 s, 256 KB 14-30 s), a question against a memory being mostly a sentence or two.
QUESTION_PIECES = 1024
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
    match: str = FUSED  # FUSED, ALL_FIRST or ALL (fusion.py)
    # Which channels run (the benchmark measures each alone); filters and pins apply to all.
    channels: frozenset[str] = CHANNELS
    fusion: str = "blend"  # or "rrf" (fusion.py): the benchmark compares them
    full_names: dict[str, str] = field(default_factory=dict)  # words.parse's: the catalog's full names
    # The catalog entities the question's dotted names mean (ops/finding.question_names): searched
    # by their tags as the input entities are, and heading the catalog bucket, but never warned about.
    named: list[str] = field(default_factory=list)
    unknown_names: tuple[str, ...] = ()  # its dotted names that mean nothing: their words are searched too


@dataclass
class Found:
    """Stored documents (their ``data`` and a ``score``), best first."""

    memories: list[dict[str, Any]] = field(default_factory=list)
    example_queries: list[dict[str, Any]] = field(default_factory=list)
    catalog: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the agent should act on
    notes: list[str] = field(default_factory=list)  # how the answer was made


def run(index: Index, request: Request) -> Found:
    with index.one_searcher():
        return _run(index, request)


def _run(index: Index, request: Request) -> Found:
    found = Found()
    question = request.question.strip()
    words = W.parse(question, request.full_names, request.unknown_names)
    topic = E.exact_query(question) if question else None
    if topic is not None and not words and not index.scores(topic, _restriction(request, None), limit=1):
        topic = None  # '!!!' is id-shaped, but names no memory: a question of no searchable words
    # Meaning reads the question as the words do (NFKC): its models know no fullwidth letter. The
    # id or topic key above is matched as typed.
    request = replace(request, question=fold(question))
    if question and not words and topic is None:
        found.warnings.append(f"The question {shown_value(question)} has no searchable words (punctuation and words as common as "
                              "'the' are not searched): ask with the words that matter, such as a column, a metric or "
                              "what it is about.")
    searched = bool(words) or topic is not None or bool(request.entities) or bool(request.named)
    if not searched:
        if not question and not request.inputs_given:
            for has_query, _one, _many in BUCKETS:
                bucket = found.example_queries if has_query else found.memories
                bucket.extend(index.documents(None, _restriction(request, has_query), limit=request.limit, sort_newest=True))
            # A listing that a misspelt filter emptied says so, not "showing the newest".
            unknown = [] if found.memories or found.example_queries else unmatched_filters(
                index, request.type, request.project, request.scope)
            found.warnings.append(unmatched_warning(unknown, request.type, "", "search")
                                  if unknown else "No entities, query or question given: showing the newest memories.")
        elif request.inputs_given and not question:
            found.warnings.append("Every input entity was dropped: nothing left to search for.")
        return found
    embedder = _embedder(index, words, request, found.warnings)
    # The sentence vector first: the helper thread makes it while this one does the rest.
    sentence, covered, scan = (_sentence_vector(index, request, found.warnings, found.notes, _scanned(request, words))
                               if embedder is not None else (None, False, None))
    # The static vector when first needed: a candidate without a sentence vector, or a KB
    # some of whose memories lack one (where every memory has one, no search needs it).
    vector = functools.cache(lambda: embedder.embed([request.question])[0]) if embedder is not None else None
    catalog_warnings: list[str] = []

    def catalog() -> None:
        found.catalog = _catalog(index, words, request, catalog_warnings)

    found.memories, found.example_queries = _ranked(
        index, request, words, topic, (vector, sentence, covered, scan), found.notes, catalog)
    if request.datasource:
        _warn_off_datasource(index, request, found.warnings)
    if words and not found.memories and not found.example_queries:
        _warn_filtered_out(index, request, words, found.warnings)
    found.warnings += catalog_warnings
    return found


def closest_kept(found: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Of the memories closest in meaning (best first), those that join the candidates: the
    first ``CLOSEST_KEPT`` with a cosine of at least ``CLOSEST_FLOOR``, the rest at least
    ``SENTENCE_FLOOR``."""
    return [(m, c) for n, (m, c) in enumerate(found) if c >= (CLOSEST_FLOOR if n < CLOSEST_KEPT else SENTENCE_FLOOR)]


def _restriction(request: Request, has_query: bool | None) -> Restriction:
    return restrict(
        type=request.type, project=request.project, scope=request.scope,
        datasource=request.datasource, has_query=has_query,
    )


def _embedder(index: Index, words: W.Words, request: Request, warnings: list[str]) -> embedding.Embedder | None:
    """The static model when the question is scored by meaning (its vectors and the token
    match), else None."""
    if not words or request.match == ALL or "meaning" not in request.channels:
        return None
    model = index.embedder()
    if isinstance(model, embedding.Unavailable):
        warnings.append(str(model))
        return None
    return model


def _scanned(request: Request, words: W.Words) -> int | None:
    """How many of the memories closest in meaning join the candidates when the ranking scans
    every vector for them (a question of three words or more; the benchmark's meaning channel
    alone ranks every memory); else None."""
    if request.match == ALL:
        return None
    if "words" not in request.channels:
        return max(MIN_DEPTH, 4 * request.limit)
    if len(words.words) + len(words.symbols) < MEANING_ONLY_WORDS:
        return None
    return max(MEANING_ONLY_DEPTH, request.limit)


def _sentence_vector(
    index: Index, request: Request, warnings: list[str], notes: list[str], closest: int | None,
) -> tuple[Future[Any] | None, bool, Scan | None]:
    """The question's sentence vector, being made in the helper thread while the words are
    scored, when some memories have one (else the encoder, a second to load in a cold process,
    would buy nothing), and whether every memory has one. While some lack one, the answer says
    how many have one, and a process is making the others. A model file known to fail its check
    (``encoder.model_file``) is said at once, and nothing tries it. ``closest``: ``_scanned``'s;
    then the helper goes on to the scan of every sentence vector (returned; None: none, or a
    process that holds no table) once the vector is made, while this thread scores the words."""
    model: encoder.Encoder | encoder.Unavailable | None = encoder.ready()
    if model is None:
        present = encoder.model_file()
        if isinstance(present, encoder.Unavailable):
            if present.damaged:
                warnings.append(str(present))  # a damaged or changed install: the user can mend it
            return None, False, None
    covered, total, waiting, standing = index.coverage()
    if waiting:
        notes.append(
            f"Meaning covers {total - waiting} of {total} memories; the others are found by their words "
            "until their vectors are made, in the background."
        )
    if covered < total:
        notes.append(
            f"Sentence vectors cover {covered} of {total} memories; the others are ranked by their "
            "static vectors until theirs are made, in the background."
        )
    if standing:
        notes.append(_final_note(covered, standing))
    if covered < total or standing:
        index.want_sentences()
    else:
        index.want_marks()
    if not covered:
        return None, False, None
    if encoder.longer_than(request.question, QUESTION_PIECES):  # before a cold process loads the model
        notes.append(f"The question is longer than the sentence model reads for a question ({QUESTION_PIECES} word "
                     "pieces, about 4 KB of text): it is matched by meaning through the static vectors, every word of "
                     "it, and by its words. Ask with the words that matter for a sharper answer.")
        return None, False, None
    model = model or encoder.load()
    if not isinstance(model, encoder.Encoder):
        warnings.append(str(model))  # a damaged or changed install: the user can mend it
        return None, False, None
    scan = index.sentence_scan(_restriction(request, None).values, closest) if closest is not None else None
    return model.encode_later(request.question, scan.begin if scan is not None else None), covered == total, scan


def _ranked(
    index: Index, request: Request, words: W.Words, topic: Q.Query | None,
    vectors: tuple[Any, Future[Any] | None, bool, Scan | None], notes: list[str], meanwhile: Callable[[], None],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One ranking over all memories, then split into the two buckets, so that scores compare
    across buckets (as mem_search, which merges them, needs). ``vectors``: the question's static
    vector (made when called) and its sentence vector being made (None: not made), and whether
    every memory has a sentence vector (then the static vectors need no scan), and the scan of
    the sentence vectors the helper thread began (None: none, or made here). ``meanwhile``: work that needs no
    ranking, done once the words are scored, while the sentence vector may still be made."""
    vector, pending, covered, scan = vectors
    restriction = _restriction(request, None)
    depth = max(MIN_DEPTH, 4 * request.limit)
    docs: dict[str, dict[str, Any]] = {}

    pinned: list[str] = []
    topical = False
    for exact in (E.id_query(E.named_ids(_tags(request))), topic):
        if exact is not None:
            looked_up = [m for m in index.scores(exact, restriction, limit=2 * request.limit) if m not in pinned]
            pinned += looked_up
            topical = bool(looked_up) and exact is topic

    every: dict[str, float] = {}
    some: dict[str, float] = {}
    # One query object: the buckets' notes below ask it again, and its matches are remembered.
    everything = W.all_query(words) if words else None
    if everything is not None and "words" in request.channels:
        every = index.scores(everything, restriction, limit=depth)
        if request.match != ALL:
            # One word: holding any word is holding every word (the same memories, scored the
            # same but for the description's lower weight).
            single = len(words.words) + len(words.symbols) == 1
            some = every if single else index.scores(W.any_query(words), restriction, limit=depth)
    wanted = E.entity_query(_tags(request)) if "entities" in request.channels else None
    tagged = index.scores(wanted, restriction, limit=depth) if wanted is not None else {}
    meanwhile()
    found_by_words = some or every
    # Needs only the words' best: read while the sentence vector may still be made.
    words_held = _best_held(index, words, found_by_words, docs) if pending is not None and found_by_words else None
    sentence = pending.result() if pending is not None else None  # made while the words were scored
    weights = F.weights_for(len(words.words) + len(words.symbols), sentence=sentence is not None, held=words_held)
    if request.match == ALL:
        # Only memories holding every word, as --all promises: a tag ranks them, it admits none
        # that lack a word. With no word to hold (entities alone), the tagged ones.
        worded = everything is not None and "words" in request.channels
        candidates = list(every) if worded else list(tagged)
        scores = F.blend(candidates, every, {}, {}, tagged)
    else:
        candidates = list(dict.fromkeys([*every, *some, *tagged]))
        cosines: dict[str, float] = {}
        sentences: dict[str, float] = {}
        tokens: dict[str, float] = {}
        if vector is not None:
            # Close in meaning, whether or not they share a word: a product with every vector.
            near: list[tuple[str, float]] = []
            closest = _scanned(request, words)
            wide = "words" not in request.channels  # the benchmark's meaning channel alone: every memory ranked
            if closest is not None and not covered:
                near = index.nearest(vector(), restriction.values, closest, -1.0 if wide else MEANING_ONLY_FLOOR)
            if closest is not None and sentence is not None:
                found = index.sentence_nearest(sentence, restriction.values, closest, -1.0 if wide else CLOSEST_FLOOR, scan)
                near += found if wide else closest_kept(found)
            held = set(candidates)
            candidates += [m for m in dict.fromkeys(m for m, _score in near) if m not in held]
            if sentence is not None:
                sentences = index.sentence_cosines(sentence, candidates)
            # The static cosine stands in for a memory whose sentence vector is not made yet.
            lacking = [m for m in candidates if m not in sentences]
            cosines = index.cosines(vector(), lacking) if lacking else {}
            # The token-level match re-ranks the head of the ranking the other signals make: a
            # candidate below it could not reach the head anyway.
            head = [m for m, _s in F.ordered(F.blend(candidates, some or every, cosines, {}, tagged, weights, sentences))][: max(TOKEN_POOL, 3 * request.limit)]
            docs.update(index.stored([m for m in head if m not in docs]))
            texts = [embedding_text(Memory(**docs[m]["data"])) if m in docs else "" for m in head]
            embedder = index.embedder()
            matcher = embedder if isinstance(embedder, embedding.Embedder) else None  # a question vector means it loaded
            # Beside the look-up of the head's sentences below: tokenizing the texts and the
            # cache's look-ups both release the GIL (a few milliseconds each at 100,000).
            # Each text's token ids as the index kept them: tokenizing the head's texts again was
            # the largest part of a question's CPU (7-9 ms at 100,000 memories).
            kept = index.token_ids({m: t for m, t in zip(head, texts, strict=True) if m in docs}) if matcher is not None else {}
            known = [kept.get(m) for m in head]
            matching = (helper().submit(matcher.token_match, request.question, texts, known, weights.token_coverage)
                        if matcher is not None and sentence is not None else None)
            if sentence is not None:
                # A note on a crowded neighbourhood's common ground stands back for the one the
                # question is about; and a memory is read by its sentence closest to the question
                # too: the mean of a note's sentences blurs the one the question is about
                # (docs/search.md).
                crowd = [m for m in head if m in sentences][: F.CROWD_HEAD]
                whole = {m: sentences[m] for m in head if m in sentences}
                sentences = F.uncrowded(sentences, crowd, index.sentence_vectors(crowd))
                units = index.unit_cosines(sentence, dict(zip(head, texts, strict=True)))
                sentences = F.with_lead(F.with_units(sentences, units), {**whole, **units})
            if matcher is not None:
                matched = (matching.result() if matching is not None
                           else matcher.token_match(request.question, texts, known, weights.token_coverage))
                tokens = dict(zip(head, matched.tolist(), strict=True))
        if request.fusion == "rrf":
            held = set(every)
            scores = F.rrf([
                (1.0, list(every) + sorted((m for m in some if m not in held), key=lambda m: -some[m])),
                (1.0, [m for m, _c in sorted({**cosines, **sentences}.items(), key=lambda hit: -hit[1])]),
                (1.0, list(tagged)),
            ])
        else:
            scores = F.blend(candidates, some or every, cosines, tokens, tagged, weights, sentences)
    fused = [(m, score) for m, score in F.ordered(scores) if m not in pinned]
    if request.fusion != "rrf" and request.match != ALL and "words" in request.channels and (named := W.details(words)):
        fused = F.settle_details(fused, _detail_scores(index, named, [m for m, _s in F.contested(fused)], docs))
    if request.match == ALL_FIRST and words:
        fused = [hit for hit in fused if hit[0] in every] + [hit for hit in fused if hit[0] not in every]

    buckets: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
    # Named and topic-key matches above every fused score, so a merge of the buckets keeps them first.
    top = round((fused[0][1] if fused else 0.0) + 1.0, 4)
    ranked = [(m, top) for m in pinned] + fused
    # Each hit's bucket is read from the index, and only the documents returned are loaded:
    # filling the example queries' bucket used to load every candidate's stored fields.
    chosen: list[tuple[str, float, bool]] = []
    counts = [0, 0]
    for at in range(0, len(ranked), 4 * request.limit):
        chunk = ranked[at : at + 4 * request.limit]
        kinds = index.with_query([m for m, _score in chunk])
        for memory_id, score in chunk:
            has_query = kinds.get(memory_id)
            if has_query is not None and counts[has_query] < request.limit:
                counts[has_query] += 1
                chosen.append((memory_id, score, has_query))
        if all(n >= request.limit for n in counts):
            break
    docs.update(index.stored([m for m, _score, _q in chosen if m not in docs]))
    for memory_id, score, has_query in chosen:
        if memory_id in docs:
            buckets[has_query].append(dict(docs[memory_id], score=round(score, 4)))
    # No fell-back note where none fell back: --all shows only memories holding every word (and
    # those named by id), and a topic key matched is the answer the question looked up.
    if everything is not None and "words" in request.channels and request.match != ALL and not topical:
        for has_query, one, many in BUCKETS:
            if not buckets[has_query] or (every and index.scores(everything, _restriction(request, has_query), limit=1)):
                continue
            notes.append(fell_back_note(one, many))
    return buckets


def _tags(request: Request) -> list[str]:
    """The entities the entities channel looks for: the inputs, then the question's names."""
    return request.entities + [e for e in request.named if e not in request.entities]


def _best_held(index: Index, words: W.Words, scores: dict[str, float], docs: dict[str, dict[str, Any]]) -> int | None:
    """How many of the question's words and symbols the memory they score best holds (ties by
    id), read from its text. ``docs``: the stored documents loaded so far; it is added."""
    best = min(scores.items(), key=lambda hit: (-hit[1], hit[0]))[0]
    if best not in docs:
        docs.update(index.stored([best]))
    doc = docs.get(best)
    if doc is None:
        return None
    data = doc["data"]
    return _held(words, f"{data.get('title') or ''} {data.get('learning') or ''} {data.get('description') or ''}")


def _detail_scores(index: Index, details: W.Words, memory_ids: list[str], docs: dict[str, dict[str, Any]]) -> dict[str, float]:
    """How many of the question's details (``W.details``) each memory holds, one in its title
    counting twice: read from its text, so the order is a function of the files alone (no
    index statistics, which a warm index and a fresh one keep apart until a compaction).
    ``docs``: the stored documents the search loaded so far; those it lacks are added."""
    if len(memory_ids) < 2:
        return {}
    docs.update(index.stored([m for m in memory_ids if m not in docs]))
    out: dict[str, float] = {}
    for memory_id in memory_ids:
        doc = docs.get(memory_id)
        if doc is None:
            continue
        data = doc["data"]
        body = f"{data.get('learning') or ''} {data.get('description') or ''}"
        out[memory_id] = 2.0 * _held(details, data.get("title") or "") + _held(details, body)
    return out


def _held(details: W.Words, text: str) -> int:
    terms = text_terms(text)
    words, tokens = {tuple(t) for t in terms}, {token for t in terms for token in t}
    held = sum(1 for w in details.words if w in words or all(token in tokens for token in w))
    return held + len(set(details.symbols) & set(symbols(text)))


def unmatched_filters(index: Index, type: str | None, project: str | None, scope: str | None) -> list[str]:
    """Each filter given that no memory matches at all, as "type 'x'" (a misspelt name, say)."""
    given = (("type", type, restrict(type=type)), ("project", project, restrict(project=project)),
             ("scope", scope, restrict(scope=scope)))
    return [f"{name} {shown_value(value)}" for name, value, alone in given if value and not index.documents(None, alone, limit=1)]


def unmatched_warning(unknown: list[str], type: str | None, then: str, action: str) -> str:
    """The warning for the filters ``unmatched_filters`` found (``then``: what it did, after a
    comma; ``action``: the command to give again without them). A known type that only
    soft-deleted memories have is no misspelt name: the warning says no live memory has it."""
    if type in RECOGNISED_TYPES and unknown == [f"type {shown_value(type)}"]:
        return f"No live memory has type {type!r}{then}; {action} without it."
    return f"No memory has {' or '.join(unknown)}{then}; check the name, or {action} without it."


def _warn_filtered_out(index: Index, request: Request, words: W.Words, warnings: list[str]) -> None:
    """Say so when a filter that no memory matches at all (a misspelt project, say) removed every
    memory the question finds: the agent can fix it. A filter that some memories match but none
    about the question is an answer, not a mistake."""
    unknown = unmatched_filters(index, request.type, request.project, request.scope)
    if unknown and index.scores(W.any_query(words), restrict(), limit=1):
        warnings.append(unmatched_warning(unknown, request.type, ", so the filter removed every memory the question finds",
                                          "search"))


def _warn_off_datasource(index: Index, request: Request, warnings: list[str]) -> None:
    named = E.named_ids(request.entities)
    if not named:
        return
    inside = {d["id"] for d in index.documents(E.id_query(named), restrict(datasource=request.datasource))}
    for memory_id in named:
        if memory_id not in inside:
            warnings.append(f"{memory_link(memory_id)} is not rooted at datasource {request.datasource!r}; dropped.")


def _catalog(index: Index, words: W.Words, request: Request, warnings: list[str]) -> list[dict[str, Any]]:
    """Catalog entities whose names or descriptions hold the question's words, and the input
    entities themselves."""
    inputs = [e for e in request.entities if linked_id(e) is None]
    if request.datasource:
        for entity in inputs:
            if not E.rooted_at(entity, request.datasource):
                warnings.append(
                    f"entity {entity!r} is not rooted at datasource {request.datasource!r}; dropped from entities bucket."
                )
        inputs = [e for e in inputs if E.rooted_at(e, request.datasource)]
    # The question's names head the bucket as input entities do; one outside the datasource asked
    # for is left out unsaid (the question names it, the agent did not ask for it).
    named = [e for e in request.named if e not in inputs and (not request.datasource or E.rooted_at(e, request.datasource))]
    clauses = ([W.catalog_query(words)] if words.words else []) + E.catalog_input_query(inputs + named, boost=10.0)
    if not clauses:
        return []
    required: list[Q.Query] = [Q.Term("kind", "catalog"), Q.Or(clauses)]
    if request.datasource:
        required.append(Q.Term("datasources", request.datasource))
    return [{**doc["data"], "score": round(doc["score"], 4)} for doc in index.documents(Q.And(required), limit=request.limit)]


def _final_note(covered: int, standing: int) -> str:
    """How many of the ``covered`` sentence vectors are final and how many stand-ins, in the
    right number."""
    final = covered - standing
    others = "the other one is a stand-in" if standing == 1 else f"the other {standing} are stand-ins"
    return (f"{final} of the {covered} sentence vectors {'is' if final == 1 else 'are'} final; {others}, close to "
            f"final, until the build replaces {'it' if standing == 1 else 'them'}, in the background.")
