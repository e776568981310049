"""What the Whoosh index holds: its schema, and the documents a memory and a catalog entity become.
Only the search package knows these field names."""

from __future__ import annotations

import re
import struct
from collections import Counter
from collections.abc import Iterator
from typing import Any

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh.fields import ID, KEYWORD, STORED, TEXT, Schema

from ..catalog.catalog import Catalog
from ..core.locate import linked_id
from ..core.memory import Memory
from .analysis import WordAnalyzer, fold, symbols
from .codec import Codec

# Bump when the schema or what is indexed changes: an index of another format is rebuilt.
FORMAT = 13  # 13: words and symbols NFKC- and case-folded (analysis.fold)
NONE = "\u2205"  # stands for "no value" in ID fields (an empty string indexes no term)
_analyzer = WordAnalyzer()
CODEC = Codec()

# How Whoosh's Frequency format stores a posting's frequency (whoosh.system.pack_uint).
_PACK_FREQUENCY = struct.Struct("!I").pack


class Words(TEXT):  # type: ignore[misc]  # Whoosh has no type hints
    """Whoosh's TEXT field of ``_analyzer``'s words without positions: the same postings,
    counted in one pass over ``WordAnalyzer.words``. Whoosh's chain of generators (a Token per
    word, two dicts of frequencies and boosts, each term encoded in a generator of its own) was
    a fifth of a rebuild's worker time."""

    def __init__(self) -> None:
        super().__init__(analyzer=_analyzer, phrase=False)

    def index(self, value: Any, **kwargs: Any) -> Any:
        if not isinstance(value, str) or set(kwargs) - {"mode"}:
            return super().index(value, **kwargs)
        # Each token's boost is 1.0, so a term's weight is its frequency (as Whoosh sums it).
        boost = self.format.field_boost
        return [(word.encode("utf-8"), n, n * boost, _PACK_FREQUENCY(n))
                for word, n in Counter(_analyzer.words(value)).items()]


_WORD = re.compile(r"\w+(?:[.'-]\w+)*", re.UNICODE)

SCHEMA = Schema(
    # A column too, so a ranking reads ids without unpickling each document's stored fields.
    id=ID(stored=True, unique=True, sortable=True),
    kind=ID(stored=True),
    # The words of a memory's title, id and learning in one field, so that a typed word walks
    # one posting list; ``title`` again on its own, to rank title matches first; the
    # description on its own, ranked below the learning. No positions (phrase=False): searches
    # match words, never phrases, and positions would double what a rebuild writes.
    text=Words(),
    title=Words(),
    description=Words(),
    # Tokens as typed that word analysis loses (N+1, C, %w, utf-8): see analysis.symbols.
    symbols=KEYWORD(scorable=True, lowercase=False),
    # A catalog entity's words and description, in fields of their own: a search of the catalog
    # then walks posting lists of catalog entities only, not of 100,000 memories.
    catalog_text=Words(),
    catalog_title=Words(),
    entities=KEYWORD(scorable=True, lowercase=False),
    # The ancestors of each entity (shop, shop.orders for shop.orders.amount), so that asking
    # about a model also finds memories about its columns, ranked below exact matches.
    under=KEYWORD(lowercase=False),
    datasources=KEYWORD(lowercase=False),
    type=ID,
    project=ID,
    scope=ID,
    topic_key=ID,
    session_id=ID,
    content_hash=ID,
    has_query=ID,
    deleted=ID,
    created_at=ID(sortable=True),
    data=STORED,
)


def text_terms(text: str) -> list[list[str]]:
    """The words of ``text`` as analysed tokens; a word the analyser splits yields several."""
    out = []
    for word in _WORD.findall(fold(text)):  # split as the analyser would read it (a fullwidth dot is a dot)
        tokens = [t.text for t in _analyzer(word)]
        if tokens:
            out.append(tokens)
    return out


def value_or_none(value: str | None) -> str:
    return value if value else NONE


def memory_document(memory: Memory, content_hash: str) -> dict[str, Any]:
    # The words of a named id (kb.refund-policy): people choose ids that say what a memory is.
    name = "" if memory.id.isdigit() else re.sub(r"[._-]+", " ", memory.id)
    catalog_entities = [e for e in memory.entities if linked_id(e) is None]
    datasources = {e.split(".", 1)[0] for e in catalog_entities}
    ancestors = {e.rsplit(".", n)[0] for e in catalog_entities for n in range(1, e.count(".") + 1)}
    return {
        "id": memory.id,
        "kind": "memory",
        "text": "\n".join(filter(None, (memory.title, name, memory.learning))),
        "title": memory.title or "",
        "description": memory.description or "",
        "symbols": " ".join(symbols("\n".join(filter(None, (memory.title, memory.id, memory.learning, memory.description))))),
        "entities": " ".join(memory.entities),
        "datasources": " ".join(sorted(datasources)),
        "under": " ".join(sorted(ancestors)),
        "type": value_or_none(memory.type),
        "project": value_or_none(memory.project),
        "scope": value_or_none(memory.scope or "project"),
        "topic_key": value_or_none(memory.topic_key),
        "session_id": value_or_none(memory.session_id),
        "content_hash": content_hash,
        "has_query": "1" if memory.query is not None else "0",
        "deleted": "1" if memory.is_deleted else "0",
        "created_at": memory.created_at,
        "data": memory.to_dict(),
    }


def catalog_documents(catalog: Catalog) -> Iterator[dict[str, Any]]:
    for entity, kind, description in catalog.iter_entities():
        words = entity.replace(".", " ").replace("_", " ")
        yield {
            "id": f"catalog:{entity}",
            "kind": "catalog",
            "catalog_text": f"{words}\n{description or ''}",
            "catalog_title": words,
            "entities": entity,
            "datasources": entity.split(".", 1)[0],
            "data": {"entity": entity, "kind": kind, "description": description},
        }
