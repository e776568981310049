"""analysis.py gives the terms Whoosh's StemmingAnalyzer gives, token for token."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.analysis import STOP_WORDS, StemmingAnalyzer

from slayer_kb.search.analysis import WordAnalyzer

WHOOSH = StemmingAnalyzer()
OURS = WordAnalyzer()

words = st.one_of(
    st.sampled_from(sorted(STOP_WORDS)),
    st.sampled_from(["Refunds", "ORDERS", "running", "ran", "a", "I", "x.y", "3.14", "e.g", "0*", "count(*)", "İstanbul", "straße"]),
    st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=12),
)
separators = st.sampled_from([" ", "  ", "\n", ".", "..", "-", "'", ",", "_", "/", " . ", "\t"])
texts = st.lists(st.tuples(words, separators), max_size=30).map(lambda pairs: "".join(w + s for w, s in pairs))


def terms(analyzer: object, text: str, **kwargs: object) -> list[tuple[str, float]]:
    return [(t.text, t.boost) for t in analyzer(text, **kwargs)]  # type: ignore[operator]


@settings(max_examples=400)
@given(st.one_of(texts, st.text(max_size=80)))
def test_terms_are_whooshs(text: str) -> None:
    assert terms(OURS, text) == terms(WHOOSH, text)
    # As the index's field writer asks for them.
    assert terms(OURS, text, mode="index", positions=False, chars=False, boosts=False) == terms(
        WHOOSH, text, mode="index", positions=False, chars=False, boosts=False
    )


@settings(max_examples=100)
@given(texts)
def test_what_only_whooshs_parser_asks_for_is_whooshs(text: str) -> None:
    for options in ({"positions": True}, {"chars": True}, {"removestops": False}, {"tokenize": False}):
        ours = [(t.text, t.stopped, t.pos if "positions" in options else None) for t in OURS(text, **options)]
        theirs = [(t.text, t.stopped, t.pos if "positions" in options else None) for t in WHOOSH(text, **options)]
        assert ours == theirs


def test_examples() -> None:
    assert terms(OURS, "The Refunds were running, e.g. x.y and 3.14!") == [
        ("refund", 1.0), ("were", 1.0), ("runn", 1.0), ("e.g", 1.0), ("x.y", 1.0), ("3.14", 1.0)
    ]
    assert terms(OURS, "") == [] and terms(OURS, "a I to the") == []


def _symbols_reference(text: str) -> list[str]:
    """analysis.symbols, token by token over every whitespace-separated token."""
    import re

    from slayer_kb.search.analysis import _CLOSING, _OPENING, _SYMBOL_STOPS, MAX_SYMBOL

    out: dict[str, None] = {}
    for raw in re.findall(r"\S+", text):
        token = raw.lstrip(_OPENING).rstrip(_CLOSING)
        if not any(c.isalnum() for c in token):
            continue
        token = token.lower()
        if token in _SYMBOL_STOPS or len(token) > MAX_SYMBOL:
            continue
        if all(c.isalnum() or c == "_" for c in token.replace("'", "")) and len(token) > 1:
            continue
        out[token] = None
    return list(out)


@settings(max_examples=300)
@given(st.one_of(st.text(alphabet=st.sampled_from(list("aBc xyz N+1 %w C++ utf-8 . , ; ( ) ' \" - _ / # @ \n\t é 9")), max_size=80), st.text(max_size=60)))
def test_symbols_match_the_token_by_token_reading(text: str) -> None:
    from slayer_kb.search.analysis import symbols

    assert symbols(text) == _symbols_reference(text)
