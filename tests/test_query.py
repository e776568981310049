from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from slayer_kb import KnowledgeBase
from slayer_kb.catalog import lexer
from slayer_kb.catalog.catalog import load_catalog
from slayer_kb.catalog.lexer import lower_cases
from slayer_kb.catalog.querychecks import formula_problem
from slayer_kb.catalog.refs import clean_query, query_entities, split_references, strip_aggregation
from slayer_kb.catalog.resolve import Resolver
from slayer_kb.catalog.scan import SOURCE_MODEL, SQL_WORDS, filter_references, formula_references
from slayer_kb.core.errors import (
    AmbiguousEntityError,
    InvalidInputError,
    KBError,
    ResolutionError,
)
from testing import CliRunner, write_test_catalog

REFERENCE = re.compile(r"\*|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\.\*)?")


@pytest.fixture
def resolver(tmp_path: Path) -> Resolver:
    write_test_catalog(tmp_path)
    return Resolver(load_catalog(tmp_path), memory_exists=lambda memory_id: memory_id == "7")


# ---------------------------------------------------------------------------------------------
# split_references / strip_aggregation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "refs"),
    [
        ("a, b,sum(x)", ["a", "b", "sum(x)"]),
        ("weighted_avg(price, weight=qty), status", ["weighted_avg(price, weight=qty)", "status"]),
        ("f(g(a, b), c), d", ["f(g(a, b), c)", "d"]),
        (" , a,, ,b , ", ["a", "b"]),
        ("", []),
        ("x), y", ["x)", "y"]),
        (
            "amount:weighted_avg(weight=qty),orders.*:count",
            ["amount:weighted_avg(weight=qty)", "orders.*:count"],
        ),
    ],
)
def test_split_references(text: str, refs: list[str]) -> None:
    assert split_references(text) == refs


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("amount", ("amount", False)),
        (" sum(amount) ", ("amount", False)),
        ("amount:sum", ("amount", False)),
        ("amount: sum", ("amount", False)),  # as SLayer: a space after the colon only is taken
        ("amount:weighted_avg(weight=qty)", ("amount", False)),
        ("weighted_avg(price, weight=qty)", ("price", False)),
        ("customers.regions.name:count_distinct", ("customers.regions.name", False)),
        ("count_distinct(customers.regions.name)", ("customers.regions.name", False)),
        ("count(*)", ("", True)),
        ("count( * )", ("", True)),
        ("*:count", ("", True)),
        ("count(distinct orders.amount)", ("orders.amount", False)),
        ("SUM(amount)", ("amount", False)),
        ("count(orders.*)", ("orders", False)),
        ("orders.*:count", ("orders", False)),
    ],
)
def test_strip_aggregation(ref: str, expected: tuple[str, bool]) -> None:
    assert strip_aggregation(ref) == expected


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("sum(*)", "'sum(*)' is not a valid entity reference; use 'count(*)' to refer to a model's row count."),
        ("*:sum", "'*:sum' is not a valid entity reference; use 'count(*)' to refer to a model's row count."),
        ("avg(orders.*)", "'avg(orders.*)' is not a valid entity reference; use the 'count(<model>.*)' form."),
        (
            "sum(amount - cost)",
            "'sum(amount - cost)' is not a single aggregated column reference; only the `agg(column)` form "
            "names an entity. Name its columns one by one, or pass the whole SlayerQuery (--query; in the MCP "
            "tools, save_memory's linked_entities or search's query).",
        ),
        (
            "amount * qty:sum",
            "'amount * qty:sum' is not a single aggregated column reference; only the `agg(column)` form "
            "names an entity. Name its columns one by one, or pass the whole SlayerQuery (--query; in the MCP "
            "tools, save_memory's linked_entities or search's query).",
        ),
        ("sum()", "Invalid Mode-B expression 'sum()': aggregation 'sum' requires a value argument, e.g. sum(column)."),
        (
            "weighted_avg(weight=qty)",
            "Invalid Mode-B expression 'weighted_avg(weight=qty)': aggregation 'weighted_avg' requires a "
            "value argument, e.g. weighted_avg(column).",
        ),
        (":sum", "':sum' contains an invalid identifier segment. (Each part between dots is a name: a letter or '_', then letters, digits, '_' or '-'.)"),
        # as SLayer: no space before the colon, one aggregation, the star counted by lower-case count
        # a space before the colon, in a formula's words (querychecks.formula_problem)
        *((spaced, f"'{spaced}' contains an invalid identifier segment. Write 'amount:sum', with no spaces around "
                   "an aggregation's colon.") for spaced in ("amount : sum", "amount :sum")),
        (
            "cumsum(sum(amount))",
            "'cumsum(sum(amount))' is not a single aggregated column reference; only the `agg(column)` form "
            "names an entity. Name its columns one by one, or pass the whole SlayerQuery (--query; in the MCP "
            "tools, save_memory's linked_entities or search's query).",
        ),
        (
            "cumsum(amount:sum)",
            "'cumsum(amount:sum)' is not a single aggregated column reference; only the `agg(column)` form "
            "names an entity. Name its columns one by one, or pass the whole SlayerQuery (--query; in the MCP "
            "tools, save_memory's linked_entities or search's query).",
        ),
        ("COUNT( * )", "'COUNT( * )' is not a valid entity reference; use 'count(*)' to refer to a model's row count."),
        ("sum(amount", "Invalid Mode-B expression 'sum(amount': '(' was never closed (<unknown>, line 1)"),
        (
            "weighted_avg(amount, weight=)",
            "Invalid Mode-B expression 'weighted_avg(amount, weight=)': invalid syntax (<unknown>, line 1)",
        ),
    ],
)
def test_strip_aggregation_rejects_what_is_not_one_reference(ref: str, message: str) -> None:
    with pytest.raises(ResolutionError) as caught:
        strip_aggregation(ref)
    assert str(caught.value) == message


@pytest.mark.parametrize(("formula", "problem"), [
    ("sum(amount) / count(*)", None),
    ("sum(amount) ^ 2", "Invalid Mode-B expression 'sum(amount) ^ 2': unsupported binary operator BitXor."),
    ("sum(amount", "Invalid Mode-B expression 'sum(amount': '(' was never closed (<unknown>, line 1)"),
])
def test_a_formula_is_parsed_once(formula: str, problem: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A measure formula was parsed by Python twice: once for its syntax, once more for the
    operators SLayer refuses. Once, with the same answer."""
    parsed: list[str] = []
    parse = ast.parse

    def counted(source: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(source)
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counted)
    assert (formula_problem(formula), len(parsed)) == (problem, 1), parsed


def test_an_expression_of_two_calls_is_not_one_reference() -> None:
    with pytest.raises(ResolutionError, match=r"^'sum\(a\) \+ sum\(b\)' is not a single aggregated column reference;"):
        strip_aggregation("sum(a) + sum(b)")


# ---------------------------------------------------------------------------------------------
# formula_references
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("formula", "refs"),
    [
        ("sum(amount)", ["amount"]),
        ("amount:sum", ["amount"]),
        ("aov", ["aov"]),
        ("count(*)", [SOURCE_MODEL]),
        ("*:count", ["*"]),
        ("sum(amount) / count(*)", ["amount", "*"]),
        ("amount:sum / *:count", ["amount", "*"]),
        ("cumsum(sum(amount))", ["amount"]),
        ("cumsum(amount:sum)", ["amount"]),
        ("change_pct(cumsum(revenue:sum))", ["revenue"]),
        ("time_shift(amount:sum, -1, 'month')", ["amount"]),
        ("sum(amount - cost) / sum(qty)", ["amount", "cost", "qty"]),
        ("sum(amount * qty) * 2.5e3 + 1", ["amount", "qty"]),
        ("(amount:sum - cost:sum) / amount:sum", ["amount", "cost"]),
        ("weighted_avg(price, weight=qty)", ["price"]),
        ("price:weighted_avg(weight=qty)", ["price"]),
        ("price:weighted_avg(weight = coalesce(qty, 1), partition_by=region)", ["price"]),
        ("rank(amount:sum, partition_by=[region, channel])", ["amount"]),
        ("amount:last(created_at)", ["amount", "created_at"]),
        ("last(amount, created_at)", ["amount", "created_at"]),
        ("count_distinct(customers.regions.name)", ["customers.regions.name"]),
        ("customers.amount:sum", ["customers.amount"]),
        ("count(orders.*)", ["orders.*"]),
        ("orders.customers.*:count", ["orders.customers.*"]),
        ("sum(amount) + sum(amount)", ["amount"]),
        ("", []),
        ("{scale} * sum(amount)", ["amount"]),
    ],
)
def test_formula_references(formula: str, refs: list[str]) -> None:
    assert formula_references(formula) == refs


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        (
            "sum(*)",
            "formula 'sum(*)': only count takes '*' (count(*) or *:count counts the source "
            "model's rows).",
        ),
        (
            "*:avg",
            "formula '*:avg': only count takes '*' (count(*) or *:count counts the source model's "
            "rows).",
        ),
        (
            "sum(orders.*)",
            "formula 'sum(orders.*)': 'orders.*' only works as count(orders.*) or orders.*:count.",
        ),
        (
            "sum(café)",
            "formula 'sum(café)': 'café' is not a name SLayer can use; columns are ASCII letters, "
            "digits and '_'.",
        ),
    ],
)
def test_formula_errors(formula: str, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        formula_references(formula)
    assert str(caught.value) == message


# ---------------------------------------------------------------------------------------------
# filter_references
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "refs"),
    [
        ("status = 'paid'", ["status"]),
        ("status = 'paid and shipped'", ["status"]),
        ("status = 'it''s amount > 5'", ["status"]),
        ('note = "customers.name" or x = 1', ["note", "x"]),
        ("lower(status) = 'x'", ["status"]),
        ("created_at >= {start} AND created_at < {end_date}", ["created_at"]),
        ("amount BETWEEN 5 AND 10.5", ["amount"]),
        ("status IN ('paid', 'shipped') and not is_test", ["status", "is_test"]),
        ("deleted_at IS NULL OR deleted_at IS NOT NULL", ["deleted_at"]),
        ("name ILIKE '%shop%' or name like 'a_'", ["name"]),
        ("is_test = false or is_test = TRUE", ["is_test"]),
        ("case when status = 'paid' then amount else 0 end > 0", ["status", "amount"]),
        ("customers.regions.name = 'EU'", ["customers.regions.name"]),
        ("created_at::date = DATE '2024-01-01'", ["created_at"]),
        ("cast(created_at AS date) > current_date - interval '7 days'", ["created_at"]),
        ("amount:sum > 100", ["amount"]),
        ("sum(amount) > 100 and count(*) >= 3", ["amount", "*"]),
        ("count(customers.*) > 1", ["customers.*"]),
        ("amount * qty > 10", ["amount", "qty"]),
        # SLayer's words alone name no column in a filter; SQL's others are columns, as there.
        ("exists (select 1 from x) and distinct amount", ["select", "from", "x", "distinct", "amount"]),
        ("amount:weighted_avg(weight=qty) > 5", ["amount"]),
        ("weighted_avg(amount, weight=qty) > 5", ["amount"]),
        ("if(status = 'paid', amount, 0) > 0", ["status", "amount"]),
        ("status = 'unterminated and amount > 5", ["status"]),
        # A typed literal's prefix before a string that closes nowhere: DATE was tagged.
        ("x = DATE '2024-01-01", ["x"]),
        (r"status = 'it\'s' and amount > 5", ["status"]),  # the string is 'it\', s before one unclosed
        ("", []),
    ],
)
def test_filter_references(text: str, refs: list[str]) -> None:
    assert filter_references(text) == refs


def test_sql_words_are_skipped_in_filters_only() -> None:
    assert filter_references("a AND b OR end") == ["a", "b"]
    # A formula is Python: its operators name no column, nor the literals SLayer 1.4.1 reads in
    # any case (true, false, null; None as Python spells it), but any other SQL word is a name.
    assert formula_references("a and b or end") == ["a", "b", "end"]
    assert {"and", "or", "not", "is", "null", "in", "like", "between", "case", "end"} <= SQL_WORDS


@pytest.mark.parametrize(
    ("formula", "refs"),
    [
        ("sum(case when status = 'paid' then amount else 0 end)", ["status", "amount"]),
        ("count(distinct status)", ["status"]),
        ("max(extract(year from created_at))", ["created_at"]),
        ("sum(amount) > 5 and not count(*) < 3", ["amount", "*"]),
        ("time_shift(sum(amount), -1, month)", ["amount"]),
        ("count(distinct customers . city)", ["customers.city"]),
        ("COUNT(DISTINCT status)", ["status"]),
    ],
)
def test_sql_spellings_slayer_rewrites_are_read_in_formulas(formula: str, refs: list[str]) -> None:
    assert formula_references(formula) == refs


@pytest.mark.parametrize(
    ("formula", "refs"),
    [
        ("max(end)", ["end"]),
        ("max(case) + sum(amount) * (case in (1, 2)) - min(end)", ["case", "amount", "end"]),
        ("max(when) + sum(then) - avg(else) * min(case)", ["when", "then", "else", "case"]),
        ("max(end) + sum(case when status = 'paid' then amount else 0 end)", ["end", "status", "amount"]),
        ("count(distinct)", ["distinct"]),
        ("sum(distinct)", ["distinct"]),
        ("max(extract(year from end))", ["end"]),
        ("last(amount, day)", ["amount", "day"]),
        ("weighted_avg(amount, year)", ["amount", "year"]),
    ],
)
def test_sql_words_are_columns_outside_the_spellings_slayer_rewrites(formula: str, refs: list[str]) -> None:
    assert formula_references(formula) == refs


def test_a_column_named_like_a_sql_word_is_tagged(tmp_path: Path) -> None:
    write_test_catalog(tmp_path)
    with (tmp_path / "models" / "shop" / "refunds.yaml").open("a", encoding="utf-8") as model:
        model.write("- {name: end, type: TIMESTAMP}\n- {name: when, type: TEXT}\n")
    resolver = Resolver(load_catalog(tmp_path), memory_exists=lambda _id: False)
    query = {"source_model": "refunds", "measures": ["max(end)", "count(distinct when)"]}
    assert query_entities(query, resolver) == (
        ["shop.refunds", "shop.refunds.end", "shop.refunds.when"],
        [],
    )
    with pytest.raises(InvalidInputError) as caught:
        query_entities({"source_model": "orders", "measures": ["count(distinct)"]}, resolver)
    assert str(caught.value) == (
        "measures[0].formula: Invalid Mode-B expression 'count(distinct)': DISTINCT is supported "
        "only as count(distinct x), i.e. count_distinct(x)."
    )


def test_a_filter_counts_rows_in_any_case_and_a_formula_in_lower_case(resolver: Resolver) -> None:
    query = {"source_model": "orders", "filters": ["COUNT(*) > 10", "Count(customers.*) > 1"]}
    assert query_entities(query, resolver) == (["shop.orders", "shop.customers"], [])
    with pytest.raises(InvalidInputError) as caught:
        query_entities({"source_model": "orders", "measures": ["COUNT(*)"]}, resolver)
    assert str(caught.value) == (
        "measures[0]: formula 'COUNT(*)': '*:COUNT' is not a valid entity reference; use "
        "'count(*)' to refer to a model's row count."
    )
    with pytest.raises(InvalidInputError) as caught:  # in the words of the entity reference avg(orders.*)
        query_entities({"source_model": "orders", "measures": ["COUNT(orders.*)"]}, resolver)
    assert str(caught.value) == (
        "measures[0]: formula 'COUNT(orders.*)': 'orders.*:COUNT' is not a valid entity reference; use the "
        "'count(<model>.*)' form."
    )


def test_non_strings_are_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match=r"^A filter must be a string, got a number\.$"):
        filter_references(5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"^A formula must be a string, got nothing \(null\)\.$"):
        formula_references(None)  # type: ignore[arg-type]
    with pytest.raises(
        InvalidInputError, match=r"^Entity references must be a string, got a list\.$"
    ):
        split_references(["a"])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Hypothesis: the tokenizer never crashes and never leaks literals
# ---------------------------------------------------------------------------------------------

SYMBOLS = st.sampled_from(
    list("()[]{},:*.=<>!'\"`-+/% _\n\t") + ["::", "count", "sum", "as", "date"]
)
TEXTS = st.lists(st.one_of(st.text(max_size=8), SYMBOLS), max_size=30).map("".join)


def only_kb_errors(scan: Any, text: str) -> list[str]:
    try:
        return scan(text)
    except KBError:
        return []


@given(TEXTS)
@example("ª.A(A")  # a method call's argument under a non-ASCII object: refused, not 'ª.A'
def test_tokenizer_raises_only_kb_errors_and_returns_references(text: str) -> None:
    for scan in (formula_references, filter_references):
        for ref in only_kb_errors(scan, text):
            assert REFERENCE.fullmatch(ref), (scan.__name__, text, ref)


@given(TEXTS)
def test_split_references_keeps_every_character(text: str) -> None:
    refs = split_references(text)
    assert all(ref and ref == ref.strip() for ref in refs)
    # Nothing but commas and blanks is ever dropped.
    assert re.sub(r"[\s,]", "", "".join(refs)) == re.sub(r"[\s,]", "", text)
    for ref in refs:
        try:
            strip_aggregation(ref)
        except KBError:
            pass


IDENTIFIERS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
LITERAL_WORDS = st.lists(
    st.one_of(st.from_regex(r"leak[A-Za-z0-9_]{0,5}", fullmatch=True), SYMBOLS), max_size=12
).map(" ".join)


@given(IDENTIFIERS, LITERAL_WORDS, st.sampled_from(["'", '"']))
def test_quoted_literal_content_never_leaks(column: str, words: str, quote: str) -> None:
    assume(not column.lower().startswith("leak"))
    literal = words.replace('"', "") if quote == '"' else words.replace("'", "''")
    refs = filter_references(f"{column} = {quote}{literal}{quote} and other > 1")
    expected = [name for name in (column, "other") if name.lower() not in SQL_WORDS]
    assert refs == list(dict.fromkeys(expected))


@given(LITERAL_WORDS, TEXTS)
def test_text_after_a_literal_cannot_reach_back_into_it(words: str, tail: str) -> None:
    assume("leak" not in tail)
    refs = only_kb_errors(filter_references, f"x = '{words.replace(chr(39), '')}' {tail}")
    assert not any("leak" in ref for ref in refs), refs


@given(IDENTIFIERS)
def test_a_plain_identifier_is_its_own_reference(name: str) -> None:
    # A formula is Python: its operators and constants, in any case, name no column.
    python_words = {"and", "or", "not", "in", "is", "true", "false", "null", "none"}
    assert formula_references(name) == ([] if name.lower() in python_words else [name])
    assert filter_references(f"{name} > 1") == ([] if name.lower() in SQL_WORDS else [name])


# ---------------------------------------------------------------------------------------------
# query_entities
# ---------------------------------------------------------------------------------------------

EXAMPLE = {
    "source_model": "orders",
    "dimensions": ["customers.regions.name"],
    "time_dimensions": [{"dimension": "created_at", "granularity": "month"}],
    "measures": ["sum(amount)", {"formula": "count(*)", "name": "n"}, "aov"],
    "filters": ["status = 'paid'", "amount > 5"],
}


def test_the_reference_example(resolver: Resolver) -> None:
    assert query_entities(EXAMPLE, resolver) == (
        [
            "shop.orders",
            "shop.regions.name",
            "shop.orders.created_at",
            "shop.orders.amount",
            "shop.orders.aov",
            "shop.orders.status",
        ],
        [],
    )


def test_the_colon_syntax_gives_the_same_entities(resolver: Resolver) -> None:
    query = {**EXAMPLE, "measures": ["amount:sum", {"formula": "*:count", "name": "n"}, "aov"]}
    assert query_entities(query, resolver) == query_entities(EXAMPLE, resolver)


def test_the_seed_examples(resolver: Resolver) -> None:
    for formula in ("sum(amount)", "amount:sum"):
        query = {
            "source_model": "orders",
            "measures": [{"formula": formula}],
            "filters": ["status = 'paid'"],
        }
        assert query_entities(query, resolver) == (
            ["shop.orders", "shop.orders.amount", "shop.orders.status"],
            [],
        )


def test_every_field_is_scanned(resolver: Resolver) -> None:
    query = {
        "source_model": "warehouses",
        "dimensions": [{"name": "name"}, {"name": "channel", "model": "orders"}, "city"],
        "time_dimensions": [{"dimension": {"name": "orders.order_date"}, "granularity": "day"}],
        "measures": [
            {"formula": "cumsum(orders.amount:sum) / *:count", "name": "running"},
            {"formula": "count(orders.*)"},
        ],
        "filters": ["channel_code = {code}"],
        "order": [
            {"column": "running", "direction": "desc"},
            {"column": "orders.amount", "direction": "DESC"},
            {"column": {"name": "id"}},
        ],
        "limit": 10,
    }
    # wh.orders, not shop.orders: inside a query the source model's datasource decides.
    assert query_entities(query, resolver) == (
        [
            "wh.warehouses",
            "wh.warehouses.name",
            "wh.orders.channel",
            "wh.warehouses.city",
            "wh.orders.order_date",
            "wh.orders.amount",
            "wh.orders",
            "wh.warehouses.channel_code",
            "wh.warehouses.id",
        ],
        # count(orders.*) resolves as the name orders does, with SLayer's warning (wh.shop.orders).
        ["'orders' is both a model and a column on ['shop']; resolved as the model. Qualify as "
         "<model>.orders to refer to the column."],
    )


def test_slayers_other_shapes(resolver: Resolver) -> None:
    # The string time dimension SLayer's own errors recommend, a granularity call among the
    # dimensions (SLayer moves it to time_dimensions), an extension as the source, the order
    # shorthand, and fields, SLayer's v1 name for measures.
    query = {
        "source_model": {"source_name": "orders", "columns": [{"name": "margin", "sql": "amount - cost"}]},
        "time_dimensions": ["month(created_at)"],
        "dimensions": ["week(created_at)", "status", {"expression": "amount - cost", "name": "gross"}],
        "fields": ["sum(margin)", "count(*)"],
        "order": {"status": "desc"},
    }
    assert query_entities(query, resolver) == (
        ["shop.orders", "shop.orders.status", "shop.orders.amount", "shop.orders.cost", "shop.orders.created_at"],
        [],
    )


def test_names_the_query_defines_are_not_tagged(resolver: Resolver) -> None:
    query = {
        "source_model": "orders",
        "measures": [
            {"formula": "sum(amount)", "name": "revenue"},
            {"formula": "revenue / n", "name": "per_order"},
            {"formula": "count(*)", "name": "n"},
        ],
        "filters": ["revenue > 100"],
        "order": [{"column": "per_order", "direction": "desc"}, {"n": "asc"}],
    }
    assert query_entities(query, resolver) == (["shop.orders", "shop.orders.amount"], [])


@pytest.mark.parametrize(
    ("query", "entities"),
    [
        # A measure named after the column it aggregates: its own formula names the column.
        ({"source_model": "orders", "measures": [{"formula": "sum(amount)", "name": "amount"}]},
         ["shop.orders", "shop.orders.amount"]),
        # A dimension names a column, never a measure, whatever the measures are called.
        ({"source_model": "orders", "dimensions": ["status"],
          "measures": [{"formula": "sum(amount)", "name": "status"}]},
         ["shop.orders", "shop.orders.status", "shop.orders.amount"]),
        # A computed dimension's own expression names the column too.
        ({"source_model": "orders", "dimensions": [{"expression": "status", "name": "status"}]},
         ["shop.orders", "shop.orders.status"]),
        # An aggregation's value is a column, whatever measure is named so (as in SLayer).
        ({"source_model": "orders", "measures": [{"formula": "count(*)", "name": "amount"},
                                                 {"formula": "amount:max + sum(amount)", "name": "t"}]},
         ["shop.orders", "shop.orders.amount"]),
        # Past its own item the name is the query's elsewhere: other formulas, filters and order.
        ({"source_model": "orders", "measures": [{"formula": "sum(amount)", "name": "amount"},
                                                 {"formula": "amount / 2", "name": "half"}],
          "filters": ["amount > 10"], "order": [{"column": "amount", "direction": "desc"}]},
         ["shop.orders", "shop.orders.amount"]),
        # A computed dimension's name aggregated in a measure stays the query's own.
        ({"source_model": "orders", "dimensions": [{"expression": "upper(status)", "name": "st"}],
          "measures": [{"formula": "count(st)"}]},
         ["shop.orders", "shop.orders.status"]),
    ],
)
def test_a_defined_name_shadows_a_column_only_past_its_own_item(
    resolver: Resolver, query: dict[str, Any], entities: list[str]
) -> None:
    assert query_entities(query, resolver) == (entities, [])


def test_warnings_are_collected_once(resolver: Resolver) -> None:
    query = {
        "source_model": "customers",
        "dimensions": ["refunds", "refunds"],
        "filters": ["refunds > 0"],
    }
    assert query_entities(query, resolver) == (
        ["shop.customers", "shop.refunds"],
        [
            "'refunds' is both a model and a column on ['orders']; resolved as the model. "
            "Qualify as <model>.refunds to refer to the column."
        ],
    )


def test_a_query_holds_no_memory_reference(resolver: Resolver) -> None:
    # SLayer's query has no place for memory:<id>; it is no column name and no expression.
    with pytest.raises(InvalidInputError) as caught:
        query_entities({"source_model": "orders", "dimensions": ["memory:7"]}, resolver)
    assert str(caught.value) == (
        "dimensions[0]: Dimension 'memory:7' is neither a column reference (a bare identifier or "
        "dotted join path) nor a parseable Mode-B expression: Invalid Mode-B expression 'memory:7': "
        "invalid syntax (<unknown>, line 1)"
    )


@pytest.mark.parametrize(
    ("query", "error", "message"),
    [
        (
            {"source_model": "orders", "filters": ["zzz > 5"]},
            ResolutionError,
            "filters[0] 'zzz > 5': Entity 'zzz' not found in any datasource (checked all known "
            "datasources).",
        ),
        (
            {"source_model": "orders", "dimensions": ["customers.nope"]},
            ResolutionError,
            "dimensions[0]: Unknown field 'nope' on model 'customers' (datasource 'shop'): no column, measure "
            "or aggregation of that name, and 'nope' is not a join target on model 'customers'.",
        ),
        (
            {"source_model": "orders", "measures": ["sum(name)"]},
            AmbiguousEntityError,
            "measures[0] 'sum(name)': Ambiguous bare name 'name' matches columns / measures / "
            "aggregations on ['countries', 'customers', 'regions'] in datasource 'shop'. Qualify as "
            "'<model>.name'.",
        ),
        (
            {"source_model": "orders", "measures": ["sum(*)"]},
            InvalidInputError,
            "measures[0]: formula 'sum(*)': only count takes '*' "
            "(count(*) or *:count counts the source model's rows).",
        ),
        (
            {"source_model": "orders", "filters": ["customers.regions.customers.id = 1"]},
            ResolutionError,
            "filters[0] 'customers.regions.customers.id = 1': Circular join detected resolving "
            "'regions.customers.id' from 'customers': hop 'customers' revisits model 'customers'.",
        ),
        (
            {"source_model": "nope"},
            ResolutionError,
            "Source model not found: 'nope'.",
        ),
    ],
)
def test_an_unresolvable_reference_raises(
    resolver: Resolver, query: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        query_entities(query, resolver)
    assert type(caught.value) is error
    assert str(caught.value) == message


NO_SOURCE = (
    "Could not derive a model name from query.source_model. Give source_model: '<model>' (a saved "
    "model's name), or {source_name: '<model>', columns: [...], measures: [...]} to extend one."
)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            ["orders"],
            "A query must be a mapping (a SlayerQuery) with a 'source_model', got a list.",
        ),
        ({}, NO_SOURCE),
        ({"dimensions": ["status"]}, NO_SOURCE),
        (
            {"source_model": {"name": "orders"}},
            "source_model: an inline model (a mapping without 'source_name') is not kept in a "
            "knowledge base, whose memories name the catalog's models. Give source_model: '<model>' "
            "(a saved model's name), or {source_name: '<model>', columns: [...], measures: [...]} to "
            "extend one.",
        ),
        ({"source_model": " "}, "Invalid model name ' ': must be a non-empty string."),
        (
            {"source_model": "wh.orders"},
            "Invalid model name 'wh.orders': must not contain '.'. Name the model alone: a query runs "
            "on the model its name resolves to (the datasource priority list decides between "
            "datasources).",
        ),
        (
            {"source_model": "orders", "measure": ["sum(amount)"], "filter": ["status = 'paid'"]},
            "measure: Extra inputs are not permitted (did you mean 'measures'?); filter: Extra inputs "
            "are not permitted (did you mean 'filters'?). A SlayerQuery's keys are: version, name, "
            "source_model, measures, dimensions, time_dimensions, main_time_dimension, filters, "
            "variables, order, limit, offset, whole_periods_only, distinct_dimension_values, "
            "to_many_handling.",
        ),
        (
            {"source_model": "orders", "dimensions": "status"},
            "'dimensions' must be a list, got str, a string (write dimensions: [status, customers.regions.name])",
        ),
        (
            {"source_model": "orders", "dimensions": [3]},
            "dimensions[0]: Input should be a valid dictionary or instance of ColumnRef",
        ),
        (
            {"source_model": "orders", "time_dimensions": ["created_at"]},
            "time_dimensions[0]: Time dimension 'created_at' must be the functional form ``gran(col)`` "
            "(e.g. ``month(created_at)``) for one of: second, minute, hour, day, week, week_sunday, "
            "month, quarter, year or a datasource granularity; no default granularity is invented.",
        ),
        (
            {"source_model": "orders", "time_dimensions": [{"granularity": "month"}]},
            "time_dimensions[0].dimension: Field required (a time dimension is {dimension: created_at, "
            "granularity: month}, or the string 'month(created_at)')",
        ),
        (
            {"source_model": "orders", "time_dimensions": [{"dimension": 1, "granularity": "day"}]},
            "time_dimensions[0].dimension: Input should be a valid dictionary or instance of ColumnRef",
        ),
        (
            {"source_model": "orders", "measures": {"formula": "sum(amount)"}},
            "'measures' must be a list, got dict, a mapping (write measures: ['sum(amount)', {formula: 'count(*)', "
            "name: orders}])",
        ),
        ({"source_model": "orders", "measures": [{"name": "n"}]}, "measures[0].formula: Field required"),
        (
            {"source_model": "orders", "measures": [{"formula": "sum(amount)", "nam": "n"}]},
            "measures[0].nam: not a key of a measure, which SLayer would drop unread (did you mean 'name'?)",
        ),
        (
            {"source_model": "orders", "filters": "status = 'paid'"},
            "filters: Input should be a valid list (write filters: [\"status = 'paid'\"])",
        ),
        ({"source_model": "orders", "filters": [{"status": "paid"}]}, "filters[0]: Input should be a valid string"),
        (
            {"source_model": "orders", "order": [{"direction": "desc"}]},
            "order[0].column: Field required (an order item is {column: amount, direction: desc})",
        ),
        (
            {"source_model": "orders", "order": ["amount desc"]},
            "order[0]: Input should be a valid dictionary or instance of OrderItem (write {column: "
            "amount, direction: desc})",
        ),
        # shape errors win over resolution errors that come earlier in the query
        ({"source_model": "orders", "dimensions": ["zzz"], "filters": [1]}, "filters[0]: Input should be a valid string"),
    ],
)
def test_wrong_shapes_are_invalid_input(resolver: Resolver, query: Any, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        query_entities(query, resolver)
    assert str(caught.value) == message


# ---------------------------------------------------------------------------------------------
# clean_query
# ---------------------------------------------------------------------------------------------


def test_clean_query_drops_nones_and_what_they_leave_empty() -> None:
    query = {
        "source_model": "orders",
        "dimensions": None,
        "time_dimensions": [{"dimension": "created_at", "granularity": None}, None],
        "measures": [{"formula": "sum(amount)", "name": None}],
        "filters": [None],
        "order": [{"column": None}],
        "limit": 0,
        "whole_periods_only": False,
        "offset": None,
        "variables": {},
        "meta": {"a": None, "b": []},
        "tags": ("x", None),
    }
    cleaned = clean_query(query)
    assert cleaned == {
        "source_model": "orders",
        "time_dimensions": [{"dimension": "created_at"}],
        "measures": [{"formula": "sum(amount)"}],
        "limit": 0,
        "whole_periods_only": False,
        "variables": {},
        "meta": {"b": []},
        "tags": ["x"],
    }
    assert list(cleaned) == [
        "source_model",
        "time_dimensions",
        "measures",
        "limit",
        "whole_periods_only",
        "variables",
        "meta",
        "tags",
    ]
    assert query["dimensions"] is None  # the caller's query is left alone


def test_clean_query_needs_a_mapping() -> None:
    with pytest.raises(InvalidInputError, match=r"^A query must be a mapping, got a list\.$"):
        clean_query([])  # type: ignore[arg-type]


def test_dimension_mappings_may_name_their_model(resolver: Resolver) -> None:
    query = {
        "source_model": "orders",
        "dimensions": [{"name": "name", "model": "customers"}, {"name": "customers.city"}],
    }
    assert query_entities(query, resolver) == (
        ["shop.orders", "shop.customers.name", "shop.customers.city"],
        [],
    )


@pytest.mark.parametrize(("formula", "problem"), [
    ("sum(case when status = 'paid' then amount else 0 end) ^ 2", "unsupported binary operator BitXor."),
    ("sum(case when status = 'paid' then amount else 0 end", "'(' was never closed (<unknown>, line 1)"),
    ("sum(case when status = 'paid' then amount[0] end)", "unsupported AST node Subscript."),
    ("sum(CASE WHEN status = 'paid' THEN amount ELSE 0)", "Malformed CASE expression in {f!r}: missing END."),
    ("sum(case when status = 'paid' amount end)", "Malformed CASE expression in {f!r}: a WHEN branch is missing its THEN."),
    ("sum(case when status = 'paid' then end)", "invalid syntax (<unknown>, line 1)"),
])
def test_a_formula_with_case_is_checked_too(formula: str, problem: str, example_kb_read_only: KnowledgeBase,
                                            invoke_cli: CliRunner) -> None:
    """A formula holding the word `case` was not checked at all: a search by a query whose
    measure was `sum(case when ... end) ^ 2` ran as if it were fine."""
    query = json.dumps({"source_model": "orders", "measures": [formula]})
    proc = invoke_cli("--kb", example_kb_read_only.root, "search", "--query", query)
    message = problem.format(f=formula) if problem.startswith("Malformed") else (
        f"Invalid Mode-B expression {formula!r}: {problem}")
    assert f"\nwarning: query dropped: measures[0].formula: {message}\n" in proc.stdout, proc.stdout


@pytest.mark.parametrize("formula", [
    "sum(case when status = 'paid' then amount else 0 end)",
    "sum(CASE status WHEN 'paid' THEN amount WHEN 'due' THEN -amount END) / count(*)",
    "avg(case when amount >= 1 AND amount <= 5 then amount end) + sum(case)",
    "max(case when case = 1 then (case when qty > 2 then qty end) end)",
    "sum(case when status NOT LIKE 'p%' or note IS NOT NULL and qty <> 2 then amount end)",
    "sum(case when status in ('and', 'end') then amount end) + sum(écase)",
])
def test_a_formula_with_case_slayer_takes_is_taken(formula: str) -> None:
    assert formula_problem(formula) is None


@pytest.mark.parametrize(("formula", "problem"), [
    # Its conditions were not checked (read as 0): each of these SLayer 1.4.1 refuses so.
    ("avg(case when amount between 1 and 5 then amount end)", "invalid syntax. Perhaps you forgot a comma? (<unknown>, line 1)"),
    ("sum(case when a ^ 1 then x end)", "unsupported binary operator BitXor."),
    ("sum(case when a[0] = 1 then x end)", "unsupported AST node Subscript."),
    ("sum(case when then x end)", "invalid syntax (<unknown>, line 1)"),
    ("sum(case when d >= '2020-01-01'::date then x end)", "invalid syntax (<unknown>, line 1)"),
    ("sum(case when a < b < c then x end)", "chained comparisons are not supported. Each Cmp must be a single "
                                            "comparison; split (e.g.) `1 < x < 10` into `1 < x and x < 10`."),
    # `écase` is one name, no CASE: `é` and a CASE keyword were read.
    ("sum(écase when a = 1 then x end)", "invalid syntax. Perhaps you forgot a comma? (<unknown>, line 1)"),
])
def test_a_case_condition_is_checked_as_slayer_reads_it(formula: str, problem: str) -> None:
    assert formula_problem(formula) == f"Invalid Mode-B expression {formula!r}: {problem}"


# The formula check and the reference reader share one tokenizer (catalog/lexer.py); they read
# a backslash in a quoted string, and a CASE, differently: the reader took 'it\'s' to end at the
# backslash and tagged the `s` after it, swallowing the rest as an unclosed string, and read the
# keywords of `CASE (x) WHEN` as columns.
@pytest.mark.parametrize(("scan", "text", "refs"), [
    (formula_references, r"sum(iif(status == 'it\'s', amount, cost))", ["status", "amount", "cost"]),
    (formula_references, r"sum(case when status = 'it\'s' then amount else cost end)", ["status", "amount", "cost"]),
    (formula_references, "sum(CASE (status) WHEN 'paid' THEN amount END)", ["status", "amount"]),
    (formula_references, "sum(case when qty > 0 then max(end) else 0 end)", ["qty", "end"]),
])
def test_the_check_and_the_reader_read_a_formula_alike(scan: Any, text: str, refs: list[str]) -> None:
    assert scan(text) == refs
    if scan is formula_references:
        assert formula_problem(text) is None


@pytest.mark.parametrize(("measure", "column"), [
    (r"sum(iif(status == 'it\'s', amount, 0))", "s"),
    ("sum(CASE (status) WHEN 'paid' THEN amount END)", "WHEN"),
    ("sum(case when status is null then amount else 0 end)", "null"),
    ("sum(CASE WHEN status IS NOT NULL THEN amount ELSE NULL END)", "NULL"),
])
def test_a_query_with_what_slayer_reads_as_a_string_or_a_case_is_searched(
    measure: str, column: str, example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner
) -> None:
    query = json.dumps({"source_model": "orders", "measures": [measure]})
    proc = invoke_cli("--kb", example_kb_read_only.root, "search", "--query", query, "--json")
    found = json.loads(proc.stdout)
    assert (proc.returncode, found["warnings"]) == (0, []), f"no column {column!r} is read: {proc.stdout}"
    assert found["resolved_input_entities"] == ["shop.orders", "shop.orders.status", "shop.orders.amount"]


PYTHON_WORDS = st.lists(st.sampled_from(["'", '"', "\\", " ", "leak", "case", "when", "end", ")", ","]), max_size=12)


@given(st.from_regex(r"col_[a-z0-9_]{0,6}", fullmatch=True), PYTHON_WORDS.map("".join))
def test_a_string_as_python_quotes_it_names_nothing(column: str, content: str) -> None:
    """A string as Python writes it (repr: a backslash before a quote it holds) is one string to
    the check and to the reader alike, as to SLayer's parser: nothing in it is tagged."""
    literal = repr(content)
    formula = f"sum(iif({column} == {literal}, amount, cost))"
    assert formula_problem(formula) is None
    assert formula_references(formula) == [column, "amount", "cost"]


@given(st.from_regex(r"col_[a-z0-9_]{0,6}", fullmatch=True), PYTHON_WORDS.map("".join))
def test_a_filters_string_as_sql_quotes_it_names_nothing(column: str, content: str) -> None:
    """A filter's string is read as SLayer's memory resolver reads it, with no escapes: a backslash
    is a character like any other (``'C:\\'``), a quote inside is doubled. The reader took
    Python's rule, so that ``'C:\\'`` closed nowhere and hid the rest of the filter."""
    single, double = "'" + content.replace("'", "''") + "'", '"' + content.replace('"', '""') + '"'
    assert filter_references(f"{column} = {single} and other = {double} or last > 1") == [column, "other", "last"]


def test_a_filter_with_a_string_ending_in_a_backslash_is_read_whole(
    example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner
) -> None:
    """A filter SLayer's memory resolver and earlier releases took: the reader ended no string at
    'C:\\' and took the text after the next quote, 'paid', for a column ("Entity 'paid' not found")."""
    query = json.dumps({"source_model": "orders", "filters": ["status = 'C:\\' or status = 'paid'", "amount > 5"]})
    proc = invoke_cli("--kb", example_kb_read_only.root, "search", "--query", query, "--json")
    found = json.loads(proc.stdout)
    assert (proc.returncode, found["warnings"]) == (0, []), proc.stdout
    assert found["resolved_input_entities"] == ["shop.orders", "shop.orders.status", "shop.orders.amount"]
    assert filter_references(r"status = 'C:\' and amount > 5") == ["status", "amount"]


# SLayer's CASE tokens have no number: after `0.` a keyword is one. The lexer read `0.end` as one
# number, and refused what SLayer and earlier releases took ("missing END.", "invalid syntax", "a
# WHEN branch is missing its THEN."). Each lowered as SLayer 1.4.1's _rewrite_case_when lowers it.
@pytest.mark.parametrize(("formula", "lowered"), [
    ("sum(case when amount > 0 then amount else 0.end)", "sum(iif(amount > 0, amount, 0.))"),
    ("sum(case when amount > 0 then 1.else 0 end)", "sum(iif(amount > 0, 1., 0))"),
    ("sum(case when amount > 0.then 1 end)", "sum(iif(amount > 0., 1, None))"),
])
def test_a_number_ending_in_a_dot_before_a_case_keyword_is_read_as_slayer_reads_it(
    formula: str, lowered: str, example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner
) -> None:
    assert lower_cases(formula) == lowered
    assert (formula_problem(formula), formula_references(formula)) == (None, ["amount"])
    query = json.dumps({"source_model": "orders", "measures": [formula]})
    proc = invoke_cli("--kb", example_kb_read_only.root, "search", "--query", query, "--json")
    found = json.loads(proc.stdout)
    assert (proc.returncode, found["warnings"]) == (0, []), proc.stdout
    assert found["resolved_input_entities"] == ["shop.orders", "shop.orders.amount"]


def test_a_formula_is_read_for_references_as_far_as_slayer_reads_it(
    example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner
) -> None:
    """With a CASE in it, SLayer reads a formula up to an unmatched ')' and drops the rest; the
    reader read on, past the CASE reader's end, and took case, when, then and end for columns."""
    formula = "sum(amount)) + case when status = 'x' then amount end"
    assert (lower_cases(formula), formula_problem(formula), formula_references(formula)) == (
        "sum(amount)", None, ["amount"])
    query = json.dumps({"source_model": "orders", "measures": [formula]})
    proc = invoke_cli("--kb", example_kb_read_only.root, "search", "--query", query, "--json")
    found = json.loads(proc.stdout)
    assert (proc.returncode, found["warnings"]) == (0, []), proc.stdout
    assert found["resolved_input_entities"] == ["shop.orders", "shop.orders.amount"]


def calls_in_the_lexer(formula: str) -> int:
    """How many calls of the lexer's functions reading ``formula`` takes: its work, counted the
    same on any CPU."""
    calls = 0

    def count(frame: Any, event: str, _arg: Any) -> None:
        nonlocal calls
        calls += event == "call" and frame.f_code.co_filename == lexer.__file__

    before = sys.getprofile()
    sys.setprofile(count)
    try:
        formula_problem(formula)
        formula_references(formula)
    finally:
        sys.setprofile(before)
    return calls


def test_nested_cases_are_read_in_linear_time() -> None:
    """Each CASE looked ahead to the end for a WHEN: 48,000 characters of `case(` took 11 s."""
    def nested(n: int) -> str:
        return "sum(" + "case(" * n + ")" * n + ")"

    small, large = calls_in_the_lexer(nested(200)), calls_in_the_lexer(nested(400))
    assert large < 2.5 * small, f"twice the text, {large / small:.1f} times the work"


def test_null_in_a_formula_is_a_constant_as_slayer_reads_it(
    example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner
) -> None:
    """SLayer reads null, true and false, in any case, as constants, never columns (a dotted
    path's null is a column); a query counting nulls with CASE was refused by save and dropped by
    search: "Entity 'null' not found"."""
    formula = "sum(case when amount is null then 1 else 0 end)"
    assert [formula_references(f) for f in (formula, "coalesce(max(amount), Null) + TRUE", "max(customers.NULL)")] == [
        ["amount"], ["amount"], ["customers.NULL"]]
    query = json.dumps({"source_model": "orders", "measures": [formula]})
    proc = invoke_cli("--kb", example_kb_read_only.root, "search", "--query", query, "--json")
    found = json.loads(proc.stdout)
    assert (proc.returncode, found["warnings"]) == (0, []), proc.stdout
    assert found["resolved_input_entities"] == ["shop.orders", "shop.orders.amount"]


@pytest.mark.parametrize("formula", ["sum(x.case) + 1)", "sum(case.x))"])
def test_a_formula_naming_case_and_no_case_is_checked_whole(formula: str) -> None:
    """SLayer reads a text with no CASE keyword as it is; the check cut it at an unmatched ')' as
    it cuts a CASE's span, and took what SLayer refuses."""
    assert formula_problem(formula) == f"Invalid Mode-B expression {formula!r}: unmatched ')' (<unknown>, line 1)"


def test_a_formula_joining_text_with_a_bar_is_taken(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """SLayer 1.4.1 reads ``|`` (SQL's ``||``, which a formula may not spell so) as
    ``concat(x, y)``: a search by a query measuring ``count_distinct(email | segment)`` dropped
    it as "unsupported binary operator BitOr"."""
    query = json.dumps({"source_model": "customers", "measures": ["count_distinct(email | segment)"]})
    proc = invoke_cli("--kb", example_kb_read_only.root, "search", "--query", query)
    assert (proc.returncode, "warning" in proc.stdout + proc.stderr) == (0, False), proc.stdout + proc.stderr
    assert [formula_problem(f) for f in ("sum(x) | sum(y)", "count(a || b)", "sum(x & y)")] == [
        None, "Invalid Mode-B expression 'count(a || b)': invalid syntax (<unknown>, line 1)",
        "Invalid Mode-B expression 'sum(x & y)': unsupported binary operator BitAnd."]


@pytest.mark.parametrize(("scan", "text", "refs"), [
    (formula_references, "count_distinct(email | '-' | segment)", ["email", "segment"]),
    (formula_references, "sum(x|'a')", ["x"]),
    (filter_references, "status | 'x' = 'ax'", ["status"]),
    (filter_references, "status || 'x' = 'ax'", ["status"]),
    # A character SLayer refuses still parts a column from the string after it.
    (filter_references, "status & 'x' = 'ax'", ["status"]),
    (filter_references, "status ! 'x'", ["status"]),
])
def test_a_column_joined_to_a_string_is_read(scan: Any, text: str, refs: list[str]) -> None:
    """A ``|`` (SLayer's concat) was no token: the column before it, then the string after it,
    read as a typed literal (``DATE '2024-01-01'``) and the column was dropped."""
    assert scan(text) == refs


def test_a_query_joining_a_column_to_a_string_names_the_column(
    example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner
) -> None:
    query = json.dumps({"source_model": "customers", "measures": ["count_distinct(email | '-' | segment)"],
                        "filters": ["segment | 'x' = 'consumerx'"]})
    proc = invoke_cli("--kb", example_kb_read_only.root, "search", "--query", query, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["resolved_input_entities"] == [
        "shop.customers", "shop.customers.email", "shop.customers.segment"]


@pytest.mark.parametrize(("scan", "text", "refs"), [
    (formula_references, "sum(amount) + null * NULL + Null", ["amount"]),
    (formula_references, "sum(iif(flag == TRUE, amount, FALSE))", ["flag", "amount"]),
    (formula_references, "sum(None) + sum(none) + sum(NONE)", ["none", "NONE"]),
    (formula_references, "sum(null.x) + sum(x.null)", ["null.x", "x.null"]),
    (filter_references, "status = None or notes = none", ["status", "notes", "none"]),
])
def test_the_literals_slayer_reads_are_no_columns(scan: Any, text: str, refs: list[str]) -> None:
    """SLayer 1.4.1 reads true, false and null in any letter case as literals, and None as Python
    writes it; a formula's null was tagged as a column (a query with CASE WHEN x IS NULL was
    dropped: "Entity 'NULL' not found"). none and NONE are names, columns to SLayer: a column so
    named went untagged."""
    assert scan(text) == refs


@pytest.mark.parametrize(("scan", "text", "refs"), [
    (formula_references, "sum(x) # total of y", ["x"]),
    (formula_references, "sum(amount  # net of refunds\n + qty)", ["amount", "qty"]),
    (filter_references, "(status = 'paid'  # only paid orders\nand qty > 1)", ["status", "qty"]),
    (filter_references, "note = 'a # b' and qty > 1", ["note", "qty"]),  # in a string, no comment
])
def test_a_comment_names_nothing(scan: Any, text: str, refs: list[str]) -> None:
    """SLayer's parser is Python's, which skips a ``#`` comment to the end of its line; its words
    were tagged, and a query with one refused (Entity 'total' not found)."""
    assert scan(text) == refs


@pytest.mark.parametrize("name", ["cafe\u0301", "x\u00b7y", "amounte\u0301None"])
def test_a_name_with_a_combining_mark_is_one_name(name: str) -> None:
    """Python reads ``cafe`` and a combining accent as one name (café, as SLayer resolves it); the
    reader cut the name at the accent and tagged ``cafe``, where café as one character is refused."""
    with pytest.raises(InvalidInputError) as caught:
        formula_references(f"sum({name})")
    assert str(caught.value) == (f"formula 'sum({name})': '{name}' is not a name SLayer can use; columns are "
                                 "ASCII letters, digits and '_'.")
