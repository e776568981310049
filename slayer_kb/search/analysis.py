"""How text becomes index terms: Whoosh's StemmingAnalyzer, as one loop.

Whoosh chains a tokenizer and three filters (lower case, stop words, Porter stemming) as
generators, each handling every token. A rebuild at 100,000 memories analyses about ten million
words in its worker processes, so this does the same steps in one loop: 2.3 times faster on the
bench corpus's texts. A property test holds it to Whoosh's analyzer, token for token.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh.analysis import STOP_WORDS, Analyzer, StemmingAnalyzer, Token
from whoosh.analysis.tokenizers import default_pattern
from whoosh.lang.porter import stem

# StemmingAnalyzer's defaults: RegexTokenizer's pattern (words, and * for Whoosh's wildcards),
# StopFilter's list and minimum size, StemFilter's cache size.
# (Without its capturing group, so that ``findall`` gives whole words.)
_WORDS = re.compile(default_pattern.pattern.replace("(", "(?:"), default_pattern.flags)
_STOP_WORDS = frozenset(STOP_WORDS)
_MIN_SIZE = 2


@lru_cache(maxsize=50_000)
def _stem(word: str) -> str:
    return stem(word)


def fold(text: str) -> str:
    """``text`` in NFKC: a fullwidth ``ｒｅｆｕｎｄｓ``, a ligature ``ﬁ``, a superscript or fullwidth
    digit are the plain letters and digits they stand for. Every reading of a text the words
    channel matches (its words, its symbols, a question's names) folds first, at index and at
    query time alike, so that either spelling finds the other. ASCII costs one check."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


class WordAnalyzer(Analyzer):
    """Words, NFKC-folded and case-folded, without stop words and one-letter words, stemmed.

    Like Whoosh's tokenizers it yields one Token, changed in place. What only Whoosh's query
    parser and highlighter ask for (positions, character offsets, original text, stop words
    kept, no tokenizing) is answered by Whoosh's own analyzer.
    """

    def __call__(
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        tokenize: bool = True,
        **kwargs: Any,
    ) -> Iterator[Token]:
        if positions or chars or keeporiginal or not removestops or not tokenize:
            yield from _WHOOSH(
                value, positions=positions, chars=chars, keeporiginal=keeporiginal,
                removestops=removestops, tokenize=tokenize, **kwargs,
            )
            return
        token = Token(boost=1.0, stopped=False, **kwargs)
        for text in self.words(value):
            token.text = text
            yield token

    @staticmethod
    def words(value: str) -> list[str]:
        """The terms of ``value``, in order, as the analyzer yields them: Whoosh's, of ``fold(value)``,
        each word case-folded (``straße`` is ``strasse``) where Whoosh lowers it."""
        out = []
        for word in _WORDS.findall(fold(value)):
            word = word.casefold()
            if len(word) >= _MIN_SIZE and word not in _STOP_WORDS:
                out.append(_stem(word))
        return out


_WHOOSH = StemmingAnalyzer()


# Symbols: tokens as typed that the word analysis loses or splits (N+1, C, %w, utf-8, C++,
# orders.amount, --force), indexed and searched whole, lower-cased.
# Only whitespace-separated tokens that hold a character other than a letter or digit, or are one
# character long, can be symbols: ``str.split`` and ``str.isalnum`` (both in C) pass over the
# others (nine tenths of a prose text's tokens): 0.11 s of CPU for 5,000 memories of the bench
# corpus, where a regex that found the candidates took 0.30 s.
_ALNUM = re.compile(r"[^\W_]")
_OPENING = "\"'`([{<"
_CLOSING = "\"'`)]}>,;:!?."
_SYMBOL_STOPS = _STOP_WORDS | {"i"}
# Symbols are short (N+1, utf-8, orders.amount); a 60,000-letter "word" is not one.
MAX_SYMBOL = 64


def symbols(text: str, as_typed: bool = False) -> list[str]:
    """The distinct symbol tokens of ``fold(text)``, in order of first appearance: case-folded, as
    indexed, or ``as_typed`` (a name to look up in a catalog whose names have capitals)."""
    out: dict[str, None] = {}
    for raw in fold(text).split():
        if len(raw) > 1 and raw.isalnum() and raw.casefold().isalnum():
            continue  # an ordinary word (casefold keeps it one: 'ῶ' folds to ω and a combining mark)
        typed = raw.lstrip(_OPENING).rstrip(_CLOSING)
        if not _ALNUM.search(typed):
            continue  # punctuation alone (an arrow, a dash) names nothing
        token = typed.casefold()
        if token in _SYMBOL_STOPS or len(token) > MAX_SYMBOL:
            continue
        plain = all(c.isalnum() or c == "_" for c in token.replace("'", ""))
        if plain and len(token) > 1:
            continue  # an ordinary word: the word analysis has it
        out[typed if as_typed else token] = None
    return list(out)
