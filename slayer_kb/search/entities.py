"""The entities channel and the exact inputs: entity tags (precise tags above broad ones, the
ancestors of a tag below it), ``memory:<id>`` and topic keys."""

from __future__ import annotations

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh import query as Q

from ..core.engram import normalize_topic_key
from ..core.ids import is_valid_id
from ..core.locate import linked_id

# A model's memories are found through their columns' tags too, ranked below exact tags.
UNDER_BOOST = 0.3


def entity_query(entities: list[str]) -> Q.Query | None:
    """Memories sharing a tag with the input (``memory:X`` inputs: memories that link to X)."""
    if not entities:
        return None
    clauses: list[Q.Query] = [Q.Term("entities", e) for e in entities]
    clauses.extend(Q.Term("under", e, boost=UNDER_BOOST) for e in entities if linked_id(e) is None)
    return Q.Or(clauses)


def named_ids(entities: list[str]) -> list[str]:
    """The memories named as ``memory:<id>`` in the input, which come back first."""
    return [memory_id for e in entities if (memory_id := linked_id(e)) is not None]


def id_query(memory_ids: list[str]) -> Q.Query | None:
    if not memory_ids:
        return None
    return Q.Or([Q.Term("id", m) for m in memory_ids])


def exact_query(question: str) -> Q.Query | None:
    """The memory a question names exactly, which comes back first: the memory whose id is the
    question (``search 12``, as ``get 12`` names it), or, for a question containing '/', whose
    topic key it is."""
    exact = [Q.Term("id", question)] if is_valid_id(question) else []
    if "/" in question and (key := normalize_topic_key(question)):
        exact.append(Q.Term("topic_key", key))
    return Q.Or(exact) if exact else None


def catalog_input_query(entities: list[str], boost: float) -> list[Q.Query]:
    return [Q.Term("entities", e, boost=boost) for e in entities if linked_id(e) is None]


def rooted_at(entity: str, datasource: str) -> bool:
    return entity == datasource or entity.startswith(datasource + ".")
