"""Turning a search request into a Whoosh query, and ranking rules.

No query parser is involved: words become term queries over the analysed text fields, so quotes,
``AND``, ``*``, ``:`` or brackets in what a user types are only ever words.
"""

from __future__ import annotations

from dataclasses import dataclass

from whoosh import query as Q

from .engram import normalize_topic_key
from .index import NONE, text_terms

# memory:<id> named in the input finds that memory first; an exact topic key comes next.
SELF_BOOST = 50.0
TOPIC_BOOST = 25.0
TITLE_BOOST = 1.0


def _word(field: str, tokens: list[str]) -> Q.Query:
    """One typed word; a word the analyser split (orders.amount) must match all its parts."""
    parts = [Q.Term(field, token) for token in tokens]
    return parts[0] if len(parts) == 1 else Q.And(parts)


def text_query(question: str, any_word: bool) -> Q.Query | None:
    """All (or any) of the words in a memory's text, scored higher when they are in its title."""
    words = text_terms(question)
    if not words:
        return None
    clauses = [_word("text", tokens) for tokens in words]
    required = clauses[0] if len(clauses) == 1 else (Q.Or(clauses) if any_word else Q.And(clauses))
    title = Q.Or([_word("title", tokens) for tokens in words], boost=TITLE_BOOST)
    return Q.AndMaybe(required, title)


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
    wanted.extend(Q.Term(name, none_value(value)) for name, value in (exact or {}).items())
    unwanted: list[Q.Query] = [Q.Term("kind", "catalog"), Q.Term("deleted", "1")]
    if has_query is False:
        unwanted.append(Q.Term("has_query", "1"))
    only = None if not wanted else (wanted[0] if len(wanted) == 1 else Q.And(wanted))
    return Restriction(only, Q.Or(unwanted))


def none_value(value: str | None) -> str:
    return value if value else NONE
