"""Turning a search request into a Whoosh query, and ranking rules.

No query parser is involved: words become term queries over the analysed text fields, so quotes,
``AND``, ``*``, ``:`` or brackets in what a user types are only ever words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from whoosh import query as Q

from .engram import normalize_topic_key
from .index import text_terms, value_or_none

# memory:<id> named in the input finds that memory first; an exact topic key comes next.
SELF_BOOST = 50.0
TOPIC_BOOST = 25.0
TITLE_BOOST = 1.0
# Any-word matching keeps at most this many words (the rarest), and drops words found in more than
# COMMON_SHARE of the documents (and more than COMMON_DOCS) while a rarer one remains.
MAX_ANY_WORDS = 3
COMMON_DOCS = 500
COMMON_SHARE = 0.05


def _word(field: str, tokens: list[str]) -> Q.Query:
    """One typed word; a word the analyser split (orders.amount) must match all its parts."""
    parts = [Q.Term(field, token) for token in tokens]
    return parts[0] if len(parts) == 1 else Q.And(parts)


def text_query(
    question: str, any_word: bool, frequency: Callable[[str], int] | None = None, documents: int = 0
) -> Q.Query | None:
    """All (or any) of the words in a memory's text, scored higher when they are in its title.

    ``frequency(token)`` is how many of the index's ``documents`` hold a token. Matching *any* word costs a walk of
    every word's postings, so it keeps the informative words: those in no document go, words in
    a large share of a large index go while a rarer word remains (they add next to nothing to a
    BM25 ranking), and of the rest the ``MAX_ANY_WORDS`` rarest stay.
    """
    words = text_terms(question)
    if not words:
        return None
    if not any_word:
        required = Q.And([_word("text", tokens) for tokens in words]) if len(words) > 1 else _word("text", words[0])
        return Q.AndMaybe(required, Q.Or([_word("title", tokens) for tokens in words], boost=TITLE_BOOST))
    if frequency is not None and len(words) > 1:
        words = informative(words, frequency, documents)
    clauses = [_word("text", tokens) for tokens in words]
    clauses += [_word("title", tokens) for tokens in words]
    for clause in clauses[len(words):]:
        clause.boost = TITLE_BOOST
    return Q.Or(clauses)


def informative(words: list[list[str]], frequency: Callable[[str], int], documents: int) -> list[list[str]]:
    rarity = {id(tokens): min(frequency(t) for t in tokens) for tokens in words}
    present = [tokens for tokens in words if rarity[id(tokens)] > 0] or words
    common = max(COMMON_DOCS, COMMON_SHARE * documents)
    rare = [tokens for tokens in present if rarity[id(tokens)] <= common] or present
    return sorted(rare, key=lambda tokens: rarity[id(tokens)])[:MAX_ANY_WORDS]


def entity_query(entities: list[str]) -> Q.Query | None:
    if not entities:
        return None
    clauses: list[Q.Query] = [Q.Term("entities", e) for e in entities]
    clauses.extend(Q.Term("under", e, boost=0.3) for e in entities if not e.startswith("memory:"))
    for entity in entities:
        if entity.startswith("memory:"):
            clauses.append(Q.Term("id", entity[len("memory:") :], boost=SELF_BOOST))
    return Q.Or(clauses)


def topic_query(question: str) -> Q.Query | None:
    if "/" not in question:
        return None
    key = normalize_topic_key(question)
    return Q.Term("topic_key", key, boost=TOPIC_BOOST) if key else None


@dataclass(frozen=True)
class Restriction:
    """Which memories a search may return: ``only`` must match, ``exclude`` must not.

    Passed to Whoosh as ``filter`` and ``mask`` rather than as ``And`` clauses: a clause such as
    "not deleted" matches nearly every document, and scoring through it costs more than the
    search itself.
    """

    only: Q.Query | None
    exclude: Q.Query


def restrict(
    *,
    type: str | None = None,
    project: str | None = None,
    scope: str | None = None,
    datasource: str | None = None,
    has_query: bool | None = None,
    exact: dict[str, str | None] | None = None,
) -> Restriction:
    """Live memories, narrowed by the given fields (None: any value); ``exact`` fields must equal
    their value, None meaning "no value"."""
    wanted: list[Q.Query] = []
    if type:
        wanted.append(Q.Term("type", type))
    if project:
        wanted.append(Q.Term("project", project))
    if scope:
        wanted.append(Q.Term("scope", scope))
    if datasource:
        wanted.append(Q.Term("datasources", datasource))
    if has_query:
        wanted.append(Q.Term("has_query", "1"))
    wanted.extend(Q.Term(name, value_or_none(value)) for name, value in (exact or {}).items())
    unwanted: list[Q.Query] = [Q.Term("kind", "catalog"), Q.Term("deleted", "1")]
    if has_query is False:
        unwanted.append(Q.Term("has_query", "1"))
    only = None if not wanted else (wanted[0] if len(wanted) == 1 else Q.And(wanted))
    return Restriction(only, Q.Or(unwanted))
