"""The words channel: Whoosh BM25F over every word of the question, no query parser.

Each word becomes term queries over the analysed fields (stemmed, stop words dropped), so
quotes, ``AND``, ``*``, ``:`` or brackets in what a user types are only ever words. Tokens that
word analysis would lose (``N+1``, ``C``, ``%w``, ``utf-8``) are matched whole in the symbols
field. Memories holding every word rank above those holding some; no word is ever dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
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
    # A dotted name of the question and the catalog's full name for it (``orders.amount``,
    # ``shop.orders.amount``): a memory that writes the full name holds the one asked for.
    full_names: tuple[tuple[str, str], ...] = ()
    # The words of each dotted name the catalog does not know (``customer.email``: customer,
    # email), which a memory may write apart: matched by any_query and catalog_query only, as
    # a memory that writes the name whole holds none of them (it is one word there).
    parts: tuple[tuple[str, ...], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.words or self.symbols)


def parse(question: str, full_names: Mapping[str, str] | None = None, unknown: tuple[str, ...] = ()) -> Words:
    """The question's words and symbols; ``full_names`` maps a dotted name of it to the name the
    catalog gives it in full, which a memory may write instead (either one counts); the words of
    the ``unknown`` dotted names are searched apart too."""
    seen: dict[tuple[str, ...], None] = {}
    for tokens in text_terms(question):
        seen.setdefault(tuple(tokens), None)
    parts: dict[tuple[str, ...], None] = {}
    for name in unknown:
        for tokens in text_terms(name.replace(".", " ")):
            if tuple(tokens) not in seen:
                parts.setdefault(tuple(tokens), None)
    return Words(tuple(seen), tuple(symbols(question)), _full_names(full_names or {}), tuple(parts))


def _full_names(full_names: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """Each name and its full name as typed (the symbols field holds them so) and as the word
    analysis makes them (``is_returned`` is the word ``is_return``, its full name
    ``shop.orders.is_return``)."""
    pairs = dict(full_names)
    for name, full in full_names.items():
        name_tokens, full_tokens = text_terms(name), text_terms(full)
        if len(name_tokens) == len(full_tokens) == 1 and len(name_tokens[0]) == len(full_tokens[0]) == 1:
            pairs.setdefault(name_tokens[0][0], full_tokens[0][0])
    return tuple(pairs.items())


def details(words: Words) -> Words:
    """The question's numbers, versions, years and model names (the words and symbols holding a
    digit): what tells apart notes that are otherwise alike."""
    return Words(tuple(w for w in words.words if any(c.isdigit() for t in w for c in t)),
                 tuple(s for s in words.symbols if any(c.isdigit() for c in s)), words.full_names, words.parts)


def _term(field: str, token: str, words: Words, boost: float = 1.0) -> Q.Query:
    """``token`` in ``field``, or its full name where the question's dotted name has one."""
    full = dict(words.full_names).get(token) if words.full_names else None  # most questions have none
    if full is None:
        return Q.Term(field, token, boost=boost)
    return Q.Or([Q.Term(field, token), Q.Term(field, full)], boost=boost)


def _word(field: str, tokens: tuple[str, ...], words: Words, boost: float = 1.0) -> Q.Query:
    parts = [_term(field, token, words) for token in tokens]
    query = parts[0] if len(parts) == 1 else Q.And(parts)
    query.boost = boost
    return query


def all_query(words: Words) -> Q.Query:
    """Memories holding every word (in the title, learning or description) and every symbol,
    scored higher when the words are in the title."""
    required: list[Q.Query] = [Q.Or([_word("text", w, words), _word("description", w, words)]) for w in words.words]
    required += [_term("symbols", s, words) for s in words.symbols]
    must = required[0] if len(required) == 1 else Q.And(required)
    if not words.words:
        return must
    return Q.AndMaybe(must, Q.Or([_word("title", w, words, TITLE_BOOST) for w in words.words]))


def any_query(words: Words) -> Q.Query:
    """Memories holding any of the words or symbols, each scored by BM25F."""
    clauses: list[Q.Query] = []
    for w in words.words + words.parts:
        clauses += [_word("text", w, words), _word("title", w, words, TITLE_BOOST),
                    _word("description", w, words, DESCRIPTION_BOOST)]
    clauses += [_term("symbols", s, words, SYMBOL_BOOST) for s in words.symbols]
    return Q.Or(clauses)


def catalog_query(words: Words) -> Q.Query:
    """Catalog entities whose name or description holds any of the words."""
    clauses: list[Q.Query] = []
    for w in words.words + words.parts:
        clauses += [_word("catalog_text", w, words), _word("catalog_title", w, words, TITLE_BOOST)]
    return Q.Or(clauses)
