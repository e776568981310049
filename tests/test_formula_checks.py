"""Measure formulas SLayer 1.4.1's Mode-B parser refuses that Python parses: save and validate
refuse them in SLayer's words (found by the differential pass against SLayer's parse_expr)."""

from __future__ import annotations

import json

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.catalog.querychecks import formula_problem
from testing import CliRunner, save_refusal

PARTS = "year, iso_year, quarter, month, week, day, day_of_week, day_of_year, hour, minute, second"

# SLayer 1.4.1's own words for each (recorded with its parse_expr).
REFUSED = [
    ("sum(amount) + sum()", "aggregation 'sum' requires a value argument, e.g. sum(column)."),
    ("Sum() * 2", "aggregation 'Sum' requires a value argument, e.g. Sum(column)."),
    ("weighted_avg(weight=qty)", "aggregation 'weighted_avg' requires a value argument, e.g. weighted_avg(column)."),
    ("countd() + 1", "aggregation 'countd' requires a value argument, e.g. countd(column)."),
    ("cumsum() + sum(amount)", "transform 'cumsum' requires at least one positional argument (the value to transform)."),
    ("sum(amount) * 1j", "unsupported literal type complex."),
    ("sum(...)", "unsupported literal type ellipsis."),
    ("~ sum(amount)", "unsupported unary operator Invert."),
    ("sum(amount).x", "unsupported attribute base Call."),
    ("sum(amount) + (1).real", "unsupported attribute base Constant."),
    ("max(extract(cost from created_at))", f"unknown date_part() part 'cost'; accepted: {PARTS}."),
    ("max(EXTRACT(Dow FROM created_at))", "'Dow' has conflicting weekday numberings across databases; write "
     "date_part('day_of_week', x) (ISO, Monday = 1 … Sunday = 7) or date_part('day_of_week', x) % 7 "
     "(Sunday = 0 … Saturday = 6)."),
    ("max(date_part('dow', created_at))", "'dow' has conflicting weekday numberings across databases; write "
     "date_part('day_of_week', x) (ISO, Monday = 1 … Sunday = 7) or date_part('day_of_week', x) % 7 "
     "(Sunday = 0 … Saturday = 6)."),
    ("max(date_part('epoch', created_at))", f"unknown date_part() part 'epoch'; accepted: {PARTS}."),
    ("max(date_part(created_at))", f"the part of date_part() must be a string literal, one of: {PARTS}."),
    ("cumsum(sum(amount), 1)", "Transform 'cumsum' accepts exactly one positional argument (the value to "
     "transform); it takes no settings: write cumsum(value)."),
    ("ntile(sum(amount), 4)", "Transform 'ntile' accepts exactly one positional argument (the value to "
     "transform); give its settings as keywords: n=, partition_by=."),
    ("rank(sum(amount), 1)", "Transform 'rank' accepts exactly one positional argument (the value to "
     "transform); give its settings as keywords: partition_by=, direction=."),
    ("amount.sum()", "the method call amount.sum(...) needs the aggregated value as its first argument; write the "
     "functional form, e.g. sum. If amount is a column, that is sum(amount)."),
    ("customers.count()", "the method call customers.count(...) needs the aggregated value as its first argument; "
     "write the functional form, e.g. count. If customers is a column, that is count(customers); if a model, "
     "count(customers.*) counts its rows."),
    # The fix in the spelling SLayer's memory resolver takes (COUNT(customers.*) it refuses), with
    # the p= a percentile runs on; a date part no aggregation (year(x) is no measure SLayer runs).
    ("customers.COUNT()", "the method call customers.COUNT(...) needs the aggregated value as its first argument; "
     "write the functional form, e.g. COUNT. If customers is a column, that is count(customers); if a model, "
     "count(customers.*) counts its rows."),
    ("amount.percentile()", "the method call amount.percentile(...) needs the aggregated value as its first "
     "argument; write the functional form, e.g. percentile. If amount is a column, that is percentile(amount, p=0.5)."),
    ("created_at.year()", "the method call created_at.year(...) needs the aggregated value as its first argument; "
     "write the functional form, e.g. year. 'year' is a date part, not an aggregation: for each year, put "
     "year(created_at) in dimensions; as a measure, aggregate it, e.g. max(date_part('year', created_at))."),
    ("orders.aov()", "the method call orders.aov(...) needs the aggregated value as its first argument; write the "
     "functional form, e.g. aov. If orders is a column, that is aov(orders); if a model, its measure is "
     "orders.aov."),
    ("amount.first()", "the method call amount.first(...) needs the aggregated value as its first argument; write "
     "the functional form, e.g. first. If amount is a column, that is first(amount)."),
    ("amount.amount_wavg(weight=qty)", "the method call amount.amount_wavg(...) needs the aggregated value as its "
     "first argument; write the functional form, e.g. amount_wavg(weight=qty). If amount is a column, that is "
     "amount_wavg(amount, weight=qty)."),
    ("customers.sum(city, status)", "the method call customers.sum(...) takes only literal further arguments; write "
     "the functional form, e.g. sum(customers.city, status)."),
    ("max(status.upper())", "the method call status.upper(...) calls 'upper', which is not an aggregation; write "
     "the functional form, e.g. upper. Here that is upper(status)."),
]


@pytest.mark.parametrize(("formula", "words"), REFUSED)
def test_save_refuses_what_slayers_parser_refuses(
    example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner, formula: str, words: str
) -> None:
    """Python parses each of these, so the check took them and the query was saved; SLayer's
    parser refuses them, so SLayer could not run it."""
    assert save_refusal(invoke_cli, example_kb_read_only.root, {"source_model": "orders", "measures": [formula]}) == (
        f"Error: measures[0].formula: Invalid Mode-B expression {formula!r}: {words}")


@pytest.mark.parametrize("formula", [
    "sum(amount) + count(*)", "count(distinct status)", "max(extract(year from created_at))",
    "max(extract(dayofyear from created_at))", "max(Extract('month' FROM created_at))", "lower(status)",
    "coalesce()", "sum(amount) + 1e5 + 0x1f", "time_shift(sum(amount), -1, month)", "amount:sum + -qty:sum",
    "sum(customers.regions.name)", "weighted_avg(amount, weight=qty)", "max(date_part('year', created_at))",
])
def test_what_slayers_parser_takes_is_taken(formula: str) -> None:
    assert formula_problem(formula) is None


SLAYER_RUNS = [
    "max(created_at + +interval(1, 'day'))", "max(+interval(1, 'day') + created_at)",
    "max(created_at - +interval(1, 'day'))", "orders.percentile(amount, +0.5)", "orders.percentile(amount, -+0.5)",
    "customers.percentile(region_id, +0.5)", "customers.count_distinct(segment, true)",
    "customers.count_distinct(segment, NULL)", "count(iif(status == 'a.count(distinct b)', 1, null))",
    "count(iif(status == 'avg(distinct x)', 1, null))", "count(iif(status == 'f(x, distinct y)', 1, null))",
    "count(distinct -amount)", "count(distinct +amount)", "count(distinct 1)",
]


def test_what_slayer_saves_and_runs_is_saved(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """SLayer 1.4.1 drops a unary plus (``+interval(...)`` is an interval, ``+0.5`` a literal),
    reads true/null in any case as constants, and finds no SQL in a string; each was refused."""
    proc = invoke_cli("--kb", example_kb.root, "save", "formulas SLayer runs", "--query",
                      json.dumps({"source_model": "orders", "measures": SLAYER_RUNS}))
    assert (proc.returncode, proc.stderr) == (0, "")


@pytest.mark.parametrize(("formula", "words"), [
    ("max(interval(1, 'day') + interval(1, 'day') + created_at)", "interval(n, unit) is only valid as"),
    ("max(created_at + (interval(1, 'day') + interval(1, 'hour')))", "interval(n, unit) is only valid as"),
    ("max(created_at + -interval(1, 'day'))", "interval(n, unit) is only valid as"),
    ("count(iif(status == 'x', 1, null)) + avg(distinct amount)", "DISTINCT is supported only as"),
])
def test_an_interval_beside_an_interval_is_refused_as_slayer_refuses_it(formula: str, words: str) -> None:
    """SLayer takes exactly one side of + as an interval; a string's text does not hide a DISTINCT."""
    problem = formula_problem(formula)
    assert problem is not None and problem.startswith(f"Invalid Mode-B expression {formula!r}: {words}")


COMMENTED_DISTINCT = ["sum(amount) # sum(distinct x)", "sum(amount)\n# f(x, distinct y)",
                      "sum(amount) # it's count(distinct)", "sum(amount) # f(x=distinct b)"]


def test_a_comment_hides_no_distinct_slayer_refuses(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """SLayer's DISTINCT check reads a ``#`` comment's words too (Python skips them after it):
    these were saved, and SLayer refuses each. In a comment as out of one, a tuple's ``a, distinct
    b`` and ``count(distinct x)`` it takes."""
    distinct = "DISTINCT is supported only as count(distinct x), i.e. count_distinct(x)."
    assert save_refusal(invoke_cli, example_kb_read_only.root, {"source_model": "orders", "measures": [
        COMMENTED_DISTINCT[0]]}) == (f"Error: measures[0].formula: Invalid Mode-B expression "
                                     f"'sum(amount) # sum(distinct x)': {distinct}")
    assert [formula_problem(formula) for formula in COMMENTED_DISTINCT] == [
        f"Invalid Mode-B expression {formula!r}: {distinct}" for formula in COMMENTED_DISTINCT]
    assert [formula_problem(f"sum(amount) # {comment}") for comment in (
        "a, distinct b", "(a, distinct b)", "count(distinct x)", "distinct note")] == [None] * 4


def test_count_distinct_of_any_operand_tags_its_columns_only() -> None:
    """SLayer reads count(distinct x) as count_distinct(x) whatever x is; before a sign or a
    number the distinct was read as a column, not found, and the query refused."""
    from slayer_kb.catalog.scan import formula_references

    assert [formula_references(formula) for formula in (
        "count(distinct -amount)", "count(distinct +amount)", "count(distinct 1)", "count(distinct -(qty))")] == [
        ["amount"], ["amount"], [], ["qty"]]


def test_count_distinct_takes_one_operand_as_slayer_does() -> None:
    """SLayer takes count(distinct x) with keywords after x, no other argument; the check took
    count(distinct status, amount), which SLayer refuses."""
    refused = ["count(distinct status, amount)", "count(distinct f(a, b), c)", "count(distinct status, 1)"]
    assert [formula_problem(formula) for formula in refused] == [
        f"Invalid Mode-B expression {formula!r}: DISTINCT is supported only as count(distinct x), i.e. "
        "count_distinct(x)." for formula in refused]
    assert [formula_problem(f) for f in ("count(distinct status, p=1)", "count(distinct f(a, b))")] == [None, None]


def test_extract_with_a_quoted_part_names_its_value_only() -> None:
    """SLayer takes extract's part quoted (``extract('month' from x)``); its FROM was tagged."""
    from slayer_kb.catalog.scan import formula_references

    assert formula_references("max(Extract('month' FROM created_at))") == ["created_at"]


@pytest.mark.parametrize(("formula", "word"), [("true:count", "true"), ("sum(amount) + not:avg", "not"),
                                               ("None:count", "None")])
def test_a_colon_aggregation_of_a_python_word_is_refused_naming_the_fix(
    example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner, formula: str, word: str
) -> None:
    """SLayer reads ``x:agg`` as the column x aggregated, whatever its name, and finds no column
    true. Refused as not found, it read as stale (a column the catalog dropped: sync pushed it,
    search said re-save, which fails); it is the query's own slip."""
    assert save_refusal(invoke_cli, example_kb_read_only.root, {"source_model": "orders", "measures": [formula]}) == (
        f"Error: measures[0] {formula!r}: {word!r} names no column: it is a word of SLayer's formulas "
        "(Python's); name a column before ':' ('*:count' counts rows).")


@pytest.mark.parametrize(("text", "refs"), [
    ("amount:sum > 1 and created_at::date = '2024-01-01'", ["amount", "created_at"]),
    ("amount: sum > 1", ["amount", "sum"]),
    ("created_at :: date > '2024-01-01'", ["created_at", "date"]),
])
def test_a_filters_colon_drops_only_the_word_right_after_it(text: str, refs: list[str]) -> None:
    """SLayer's resolver drops ``:agg`` and ``::type`` from a filter only written together
    (``_FILTER_AGG_SUFFIX_RE``); a word after a spaced colon is a column, as there."""
    from slayer_kb.catalog.scan import filter_references

    assert filter_references(text) == refs


@pytest.mark.parametrize(("formula", "words"), [
    ("sum(amount) + mean()", "Function 'mean' is not allowed in Mode B."),
    ("sum(amount) + (1, 2)", "unsupported AST node Tuple."),
    ("sum(amount) * [1]", "unsupported AST node List."),
    ("sum(iif(status in status, amount, 0))", "the right-hand side of ``in`` / ``not in`` must be a tuple/list "
     "literal (e.g. ``status in ('a', 'b')``) or a time-point string (``created_at in '2025-Q1'``); got Name."),
    ("sum(iif(qty in (qty, 1), amount, 0))", "every element on the right-hand side of ``in`` / ``not in`` must "
     "be a literal (string, number, or boolean); got Ref."),
    ("sum(iif(qty in (), amount, 0))", "empty tuple is not allowed on the right-hand side of ``in`` / ``not in`` "
     "(dialect-dependent SQL); use a non-empty literal tuple."),
    # A FROM glued to a dot is part of a reference to SLayer (``_is_word``), so no extract is read.
    ("max(extract(year from.5))", "invalid syntax"),
])
def test_more_that_slayers_parser_refuses(formula: str, words: str) -> None:
    problem = formula_problem(formula)
    assert problem is not None and problem.startswith(f"Invalid Mode-B expression {formula!r}: {words}")


@pytest.mark.parametrize("formula", [
    "sum(iif(status in ('a', 'b'), amount, 0))", "sum(iif(qty in [-1, None, True], amount, 0))",
    "sum(iif(created_at in '2025-Q1', amount, 0))", "coalesce(sum(amount), now())",
    "sum(amount) # extract(nothing from here)", "amount:weighted_avg(weight=qty)",
    # A colon in a string or a comment is no colon aggregation whose arguments are counted.
    "sum(iif(status == 'a:max', 1, 0)) + amount:last(created_at)", "amount:last(created_at) # qty:max",
    "max(extract(year from (created_at)))",
])
def test_what_slayers_parser_takes_is_taken_too(formula: str) -> None:
    assert formula_problem(formula) is None
