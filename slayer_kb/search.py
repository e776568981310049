"""Turning a search request into a Whoosh query, and ranking rules.

No query parser is involved: words become term queries over the analysed text fields, so quotes,
``AND``, ``*``, ``:`` or brackets in what a user types are only ever words.
"""

from __future__ import annotations

from whoosh import query as Q

from .engram import normalize_topic_key
from .index import NONE, text_terms

TEXT_FIELDS = ("title", "learning", "description", "name")
# memory:<id> named in the input finds that memory first; an exact topic key comes next.
SELF_BOOST = 50.0
TOPIC_BOOST = 25.0


def word_query(tokens: list[str]) -> Q.Query:
    """One typed word in any text field; a word the analyser split must match all its parts."""
    per_field = []
    for name in TEXT_FIELDS:
        parts = [Q.Term(name, token) for token in tokens]
        per_field.append(parts[0] if len(parts) == 1 else Q.And(parts))
    return Q.Or(per_field)


def text_query(question: str, any_word: bool) -> Q.Query | None:
    words = [word_query(tokens) for tokens in text_terms(question)]
    if not words:
        return None
    if len(words) == 1:
        return words[0]
    return Q.Or(words) if any_word else Q.And(words)


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


def filters(
    *,
    type: str | None = None,
    project: str | None = None,
    scope: str | None = None,
    datasource: str | None = None,
    has_query: bool | None = None,
) -> list[Q.Query]:
    clauses: list[Q.Query] = [Q.Term("kind", "memory"), Q.Term("deleted", "0")]
    if type:
        clauses.append(Q.Term("type", type))
    if project:
        clauses.append(Q.Term("project", project))
    if scope:
        clauses.append(Q.Term("scope", scope))
    if datasource:
        clauses.append(Q.Term("datasources", datasource))
    if has_query is not None:
        clauses.append(Q.Term("has_query", "1" if has_query else "0"))
    return clauses


def combine(required: list[Q.Query], optional: list[Q.Query]) -> Q.Query:
    """All ``required`` clauses must match; ``optional`` ones only add to the score."""
    base = required[0] if len(required) == 1 else Q.And(required)
    for clause in optional:
        base = Q.AndMaybe(base, clause)
    return base


def none_value(value: str | None) -> str:
    return value if value else NONE
