"""The words channel: Whoosh BM25F over every word of the question, no query parser.

Each word becomes term queries over the analysed fields (stemmed, stop words dropped), so
quotes, ``AND``, ``*``, ``:`` or brackets in what a user types are only ever words. Tokens that
word analysis would lose (``N+1``, ``C``, ``%w``, ``utf-8``) are matched whole in the symbols
field. Memories holding every word rank above those holding some; no word is ever dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from whoosh import query as Q

from .analysis import symbols
from .schema import text_terms

# Where a word is found: the title counts most, then the learning, then the description.
TITLE_BOOST = 1.0
DESCRIPTION_BOOST = 0.5
SYMBOL_BOOST = 1.0


@dataclass(frozen=True)
class Words:
    """The searchable parts of a question: analysed words (a word the analyser split, such as
    orders.amount, is several tokens) and symbols as typed."""

    words: tuple[tuple[str, ...], ...]
    symbols: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.words or self.symbols)


def parse(question: str) -> Words:
    seen: dict[tuple[str, ...], None] = {}
    for tokens in text_terms(question):
        seen.setdefault(tuple(tokens), None)
    return Words(tuple(seen), tuple(symbols(question)))


def details(words: Words) -> Words:
    """The question's numbers, versions, years and model names (the words and symbols holding a
    digit): what tells apart notes that are otherwise alike."""
    return Words(tuple(w for w in words.words if any(c.isdigit() for t in w for c in t)),
                 tuple(s for s in words.symbols if any(c.isdigit() for c in s)))


def _word(field: str, tokens: tuple[str, ...], boost: float = 1.0) -> Q.Query:
    parts = [Q.Term(field, token) for token in tokens]
    query = parts[0] if len(parts) == 1 else Q.And(parts)
    query.boost = boost
    return query


def all_query(words: Words) -> Q.Query:
    """Memories holding every word (in the title, learning or description) and every symbol,
    scored higher when the words are in the title."""
    required: list[Q.Query] = [Q.Or([_word("text", w), _word("description", w)]) for w in words.words]
    required += [Q.Term("symbols", s) for s in words.symbols]
    must = required[0] if len(required) == 1 else Q.And(required)
    if not words.words:
        return must
    return Q.AndMaybe(must, Q.Or([_word("title", w, TITLE_BOOST) for w in words.words]))


def any_query(words: Words) -> Q.Query:
    """Memories holding any of the words or symbols, each scored by BM25F."""
    clauses: list[Q.Query] = []
    for w in words.words:
        clauses += [_word("text", w), _word("title", w, TITLE_BOOST), _word("description", w, DESCRIPTION_BOOST)]
    clauses += [Q.Term("symbols", s, boost=SYMBOL_BOOST) for s in words.symbols]
    return Q.Or(clauses)


def catalog_query(words: Words) -> Q.Query:
    """Catalog entities whose name or description holds any of the words."""
    clauses: list[Q.Query] = []
    for w in words.words:
        clauses += [_word("catalog_text", w), _word("catalog_title", w, TITLE_BOOST)]
    return Q.Or(clauses)
