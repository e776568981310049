"""analysis.py gives the terms Whoosh's StemmingAnalyzer gives of the text in NFKC, case-folded
where Whoosh lowers, token for token, and schema.Words the postings Whoosh's TEXT field makes of
them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from whoosh import index as windex
from whoosh.analysis import STOP_WORDS, Filter, RegexTokenizer, StemFilter, StemmingAnalyzer, StopFilter
from whoosh.fields import TEXT, Schema

from slayer_kb.search.analysis import WordAnalyzer, fold, symbols
from slayer_kb.search.schema import CODEC, SCHEMA, Words
from testing import examples


class CaseFold(Filter):  # type: ignore[misc]  # Whoosh has no type hints
    """Whoosh's LowercaseFilter, case-folding (``straße`` is ``strasse``)."""

    def __call__(self, tokens):  # type: ignore[no-untyped-def]
        for t in tokens:
            t.text = t.text.casefold()
            yield t


WHOOSH = StemmingAnalyzer()
# StemmingAnalyzer's chain with CaseFold for its LowercaseFilter, given the text folded.
FOLDING = RegexTokenizer() | CaseFold() | StopFilter() | StemFilter()
OURS = WordAnalyzer()

words = st.one_of(
    st.sampled_from(sorted(STOP_WORDS)),
    st.sampled_from(["Refunds", "ORDERS", "running", "ran", "a", "I", "x.y", "3.14", "e.g", "0*", "count(*)", "İstanbul", "straße",
                     "ｒｅｆｕｎｄｓ", "ＯＲＤＥＲＳ", "ﬁscal", "２８", "x²", "ｏｒｄｅｒｓ．ａｍｏｕｎｔ", "Ⅻ"]),
    st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=12),
)
separators = st.sampled_from([" ", "  ", "\n", ".", "..", "-", "'", ",", "_", "/", " . ", "\t"])
texts = st.lists(st.tuples(words, separators), max_size=30).map(lambda pairs: "".join(w + s for w, s in pairs))


def terms(analyzer: object, text: str, **kwargs: object) -> list[tuple[str, float]]:
    return [(t.text, t.boost) for t in analyzer(text, **kwargs)]  # type: ignore[operator]


@settings(max_examples=examples(400))
@given(st.one_of(texts, st.text(max_size=80)))
def test_terms_are_whooshs(text: str) -> None:
    assert terms(OURS, text) == terms(FOLDING, fold(text))
    # As the index's field writer asks for them.
    assert terms(OURS, text, mode="index", positions=False, chars=False, boosts=False) == terms(
        FOLDING, fold(text), mode="index", positions=False, chars=False, boosts=False
    )
    if text.isascii():  # folding changes nothing: Whoosh's own analyzer
        assert terms(OURS, text) == terms(WHOOSH, text)


@settings(max_examples=examples(100))
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
    assert terms(OURS, "Ｔｈｅ ＲＥＦＵＮＤＳ, the ﬁscal day ２８, Straße") == [
        ("refund", 1.0), ("fiscal", 1.0), ("dai", 1.0), ("28", 1.0), ("strass", 1.0)
    ]


def _symbols_reference(text: str) -> list[str]:
    """analysis.symbols, token by token over every whitespace-separated token of the text in NFKC."""
    import re
    import unicodedata

    from slayer_kb.search.analysis import _CLOSING, _OPENING, _SYMBOL_STOPS, MAX_SYMBOL

    out: dict[str, None] = {}
    for raw in re.findall(r"\S+", unicodedata.normalize("NFKC", text)):
        token = raw.lstrip(_OPENING).rstrip(_CLOSING)
        if not any(c.isalnum() for c in token):
            continue
        token = token.casefold()
        if token in _SYMBOL_STOPS or len(token) > MAX_SYMBOL:
            continue
        if all(c.isalnum() or c == "_" for c in token.replace("'", "")) and len(token) > 1:
            continue
        out[token] = None
    return list(out)


@settings(max_examples=examples(300))
@given(st.one_of(st.text(alphabet=st.sampled_from(list("aBc xyz N+1 %w C++ utf-8 . , ; ( ) ' \" - _ / # @ \n\t é 9 ＋ ｃ ß ¹")), max_size=80), st.text(max_size=60)))
@example("0ῶ")  # a word whose casefold holds a combining mark: a symbol, as the reference reads it
def test_symbols_match_the_token_by_token_reading(text: str) -> None:
    from slayer_kb.search.analysis import symbols

    assert symbols(text) == _symbols_reference(text)


PLAIN = TEXT(analyzer=WordAnalyzer(), phrase=False)  # the field schema.Words stands in for


@settings(max_examples=examples(300))
@given(st.one_of(texts, st.text(max_size=80)))
def test_a_words_field_makes_whooshs_postings(text: str) -> None:
    assert sorted(Words().index(text)) == sorted(PLAIN.index(text))


def test_an_index_of_words_fields_holds_what_whooshs_holds(tmp_path: Path) -> None:
    """Every field's terms, postings (document, weight, stored value) and lengths, and each
    document's stored fields, the same in an index built with Whoosh's TEXT fields."""
    plain = Schema(**{name: (PLAIN if isinstance(field, Words) else field) for name, field in SCHEMA.items()})
    seeds = Path(__file__).resolve().parents[1] / "slayer_kb" / "example"
    texts = [p.read_text(encoding="utf-8") for p in sorted(seeds.rglob("*.yaml"))]
    assert len(texts) > 10
    docs = [{"id": str(n), "kind": "memory", "text": t, "title": t[:80], "description": t[-200:],
             "catalog_text": t[:300], "catalog_title": t[:40], "symbols": " ".join(symbols(t)), "data": {"n": n}}
            for n, t in enumerate([*texts, "", "the a of", "İstanbul straße N+1 e.g x.y 3.14 0*"])]
    built = []
    for name, schema in (("ours", SCHEMA), ("whooshs", plain)):
        (tmp_path / name).mkdir()
        ix = windex.create_in(str(tmp_path / name), schema)
        with ix.writer(codec=CODEC) as writer:
            for doc in docs:
                writer.add_document(**doc)
        built.append(ix)
    ours, whooshs = (contents(ix) for ix in built)
    assert ours == whooshs
    assert ours["postings"]["text"]  # the comparison saw words


def contents(ix: Any) -> dict[str, Any]:
    with ix.searcher() as searcher:
        reader = searcher.reader()
        postings: dict[str, list[Any]] = {}
        for fieldname, term in reader.all_terms():
            matcher, found = reader.postings(fieldname, term), []
            while matcher.is_active():
                found.append((matcher.id(), matcher.weight(), matcher.value()))
                matcher.next()
            postings.setdefault(fieldname, []).append((term, found))
        lengths = {name: [reader.doc_field_length(n, name) for n in range(reader.doc_count_all())]
                   for name in ix.schema.scorable_names()}
        return {"postings": postings, "lengths": lengths, "stored": list(reader.all_stored_fields())}
