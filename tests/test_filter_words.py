"""A filter's words as SLayer 1.4.1's memory resolver reads them (``_extract_filter_tokens``):
which SQL words name no column, and what SQL's comment openers are to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.catalog.scan import filter_references
from testing import CliRunner, commit_all, json_of, make_catalog_kb, save_refusal

# SLayer 1.4.1's _FILTER_TOKEN_BLACKLIST: in a filter, these alone name no column.
SLAYER_FILTER_WORDS = {
    "and", "or", "not", "is", "null", "in", "like", "between", "true", "false", "case", "when",
    "then", "else", "end", "exists", "coalesce", "nullif", "cast", "ln", "log", "log2", "log10",
    "exp", "sqrt", "pow", "power", "abs", "round", "floor", "ceil", "ceiling", "current_date",
    "current_timestamp", "now",
}


@pytest.mark.parametrize("word", sorted(SLAYER_FILTER_WORDS))
def test_the_words_slayer_skips_in_a_filter_name_no_column(word: str) -> None:
    assert filter_references(f"x > 1 and {word} > 2 and {word.upper()} < 3") == ["x"]


def test_a_dropped_column_named_like_a_word_reads_as_stale(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """SLayer reads ``desc``, ``offset``, ``interval`` in a filter and ``none`` anywhere as columns (its
    engine too): a column so named went untagged. Dropped from the model, a column named ``desc``,
    ``offset``, ``none`` or ``distinct`` (before ``is`` or ``in``, after ``not``) read as the query's slip (invalid: "a filter orders no rows",
    ``desc:count``: "a word of SQL"), not as the stale tag any dropped column leaves."""
    root = make_catalog_kb(tmp_path / "kb")
    model = root / "models" / "shop" / "refunds.yaml"
    before = model.read_text(encoding="utf-8")
    model.write_text(before + "- {name: desc, type: TEXT}\n- {name: offset, type: INT}\n- {name: none, type: INT}\n"
                     "- {name: interval, type: INT}\n- {name: distinct, type: INT}\n", encoding="utf-8")
    commit_all(root, "columns named like words")
    queries = [{"source_model": "refunds", "filters": ["desc = 'late' and offset > 1", "interval between 1 and 5"]},
               {"source_model": "refunds", "measures": ["desc:count"]},
               {"source_model": "refunds", "measures": ["sum(none)"], "filters": ["none = 1"]},
               {"source_model": "refunds", "filters": ["distinct is null", "distinct in (1, 2) or not distinct"]},
               # A string's or a comment's words are no slip of the query's.
               {"source_model": "refunds", "filters": ["desc != 'a : desc'",
                                                       "desc = 'late'  # order by x desc"]}]
    saved = [json_of(invoke_cli("--kb", root, "save", f"refunds {index}", "--query", json.dumps(query), "--json",
                                check=True))["resolved_entities"] for index, query in enumerate(queries)]
    assert saved == [["shop.refunds", "shop.refunds.desc", "shop.refunds.offset", "shop.refunds.interval"],
                     ["shop.refunds", "shop.refunds.desc"], ["shop.refunds", "shop.refunds.none"],
                     ["shop.refunds", "shop.refunds.distinct"], ["shop.refunds", "shop.refunds.desc"]]
    model.write_text(before, encoding="utf-8")
    commit_all(root, "the columns dropped")
    problems = json_of(invoke_cli("--kb", root, "--json", "validate"))["problems"]
    assert [(p["kind"], p["message"].split(": Entity")[0]) for p in problems if p["kind"]] == [
        ("stale_query", "attached query has stale references (filters[0] \"desc = 'late' and offset > 1\""),
        ("stale_query", "attached query has stale references (measures[0] 'desc:count'"),
        ("stale_query", "attached query has stale references (measures[0] 'sum(none)'"),
        ("stale_query", "attached query has stale references (filters[0] 'distinct is null'"),
        ("stale_query", "attached query has stale references (filters[0] \"desc != 'a : desc'\"")]


def test_dashes_and_slash_star_in_a_filter_are_operators(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """SLayer's resolver and engine read ``--`` as two minus signs and ``/*`` as a division by
    ``*:count``: these filters were refused as SQL comments, though SLayer saves and runs them."""
    filters = ["amount:sum/*:count > 10", "sum(amount)/*:count > 10", "amount > --5", "amount--1 > 0",
               "amount > 5 -- 10"]
    query = json.dumps({"source_model": "orders", "filters": filters})
    proc = invoke_cli("--kb", make_catalog_kb(tmp_path / "kb"), "save", "a filter with dashes", "--query", query,
                      "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["resolved_entities"] == ["shop.orders", "shop.orders.amount"]


def test_a_backquoted_name_in_a_filter_is_refused(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """SLayer's resolver reads the name inside backquotes (it tags ``status``) and its engine cannot
    parse them; the reader took the backquoted name for a value and saved the query untagged."""
    text = "`status` = 'paid' and amount > 1"
    assert save_refusal(invoke_cli, example_kb_read_only.root, {"source_model": "orders", "filters": [text]}) == (
        f"Error: filters[0]: filter {text!r}: a backquote quotes no name in a filter: SLayer's engine "
        "cannot parse it. Write the name bare: status.")
    assert filter_references("status = 'a`b'") == ["status"]  # in a string, a backquote is a character


@pytest.mark.parametrize(("key", "text", "problem"), [
    ("filters", "count(distinct customer_id) > 5", "'distinct' names no column: SLayer's memory resolver reads it as a "
     "column in a filter (its engine runs count(distinct ...)); write 'customer_id:count_distinct' or 'count_distinct(customer_id)'."),
    ("filters", "status is distinct from 'x'", "'distinct' names no column: SLayer's filters have no DISTINCT; for "
     "'a IS DISTINCT FROM b' write 'a != b'."),
    ("filters", "status = 'x' order by amount desc", "'order' names no column: a filter orders no rows; give the "
     "order in the query's 'order'."),
    ("filters", "status is not distinct from 'x'", "'distinct' names no column: SLayer's filters have no DISTINCT; "
     "for 'a IS NOT DISTINCT FROM b' write 'a = b' (or '(a = b or (a is null and b is null))' where both may be null)."),
    ("filters", "amount > 1 limit 5", "'limit' names no column: a filter limits no rows; give it as the query's "
     "'limit'."),
    ("filters", "amount > 1 offset 5", "'offset' names no column: a filter offsets no rows; give it as the query's "
     "'offset'."),
    ("filters", "amount : sum > 1", "'sum' names no column: write 'amount:sum', with no spaces around the colon."),
    ("filters", "created_at:: date = '2024-01-01'", "'date' names no column: write 'created_at::date', with no "
     "spaces around the colon."),
])
def test_a_word_no_catalog_has_is_refused_with_its_fix(
    example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner, key: str, text: str, problem: str
) -> None:
    """SLayer's resolver reads these words as columns and finds none; refused as a stale
    reference, they read as a column the catalog dropped, with a "Did you mean" of columns
    spelled alike (distinct -> shop.orders.discount_amount), though no catalog makes them right."""
    assert save_refusal(invoke_cli, example_kb_read_only.root, {"source_model": "orders", key: [text]}) == (
        f"Error: {key}[0] {text!r}: {problem}")


def test_a_clock_word_is_a_column_not_found_with_a_note(example_kb_read_only: KnowledgeBase,
                                                          invoke_cli: CliRunner) -> None:
    """``current_time`` may be a column (SLayer reads it as one), so it is a reference not found, not
    the query's slip; the note named bare current_timestamp, which SLayer's engine cannot resolve,
    and only now() and current_date() work. ``none`` is a column to SLayer too; meaning null, it
    was a bare "not found"."""
    assert save_refusal(invoke_cli, example_kb_read_only.root,
                        {"source_model": "orders", "filters": ["created_at < current_time"]}) == (
        "Error: filters[0] 'created_at < current_time': Entity 'current_time' not found in any datasource "
        "(checked all known datasources). Did you mean: wh.customers_dim.is_current, shop.orders.currency, "
        "shop.payments.currency? If current_time means SQL's clock, SLayer has none: write now() (or "
        "current_date() for the date).")
    assert save_refusal(invoke_cli, example_kb_read_only.root,
                        {"source_model": "orders", "filters": ["status = none"]}) == (
        "Error: filters[0] 'status = none': Entity 'none' not found in any datasource (checked all known "
        "datasources). If none means no value, write null ('x is null', not 'x = none').")
