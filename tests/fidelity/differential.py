"""Compare slayer-kb with SLayer 1.4.1 on generated formulas and filters (docs/fidelity.md).

Not run by the tests, and SLayer is not a dependency of slayer-kb: run it by hand in the separate
environment record.py uses, from the repository's root::

    /tmp/slv/bin/python tests/fidelity/differential.py [COUNT] [SEED] [--engine] [CLASS ...]

It generates COUNT queries over the fidelity catalog (tests/fidelity/catalog.py), each with one
measure formula and/or one filter drawn from a small grammar (columns, join paths, words SQL or
Python own, aggregations in each syntax, method calls, transforms, scalars, CASE, extract,
intervals, unary plus, strings holding SQL text, comparisons, SQL's filter words), and runs each
through SLayer's ``SlayerQuery`` and memory resolver and through slayer-kb's ``query_entities``.
It prints how many fall in each class (``agree``, ``both refuse``, ``SL takes, kb refuses``,
``SL refuses, kb takes``, ``entities differ``, ``order differs``, ``warnings differ``), then up
to 20 queries of each CLASS named. With ``--engine`` each query is also run by SLayer's engine
on SQLite tables of one row a model, and each class says whether it ran (``; runs``, ``; does
not run``): ``SL takes, kb refuses; runs`` is a false refusal, the worst kind. Where the answers
differ on purpose, docs/fidelity.md's table says why.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent)]

import sqlite3  # noqa: E402

import yaml  # noqa: E402
from catalog import MODELS, write_catalog  # noqa: E402

SOURCES = {
    "orders": ["amount", "cost", "qty", "status", "created_at", "refunds", "customer_id", "customers.city",
               "customers.regions.name", "customers.segment", "aov"],
    "customers": ["city", "segment", "name", "regions.name", "regions.countries.iso_code"],
    "refunds": ["amount", "order_id", "original_order.amount", "orders.status"],
    "warehouses": ["name", "city", "channel_code", "orders.amount"],
}
WORDS = ["none", "NONE", "None", "true", "null", "desc", "offset", "order", "end", "year", "limit", "by",
         "current_time", "interval", "distinct", "case", "from", "customers", "shop", "wh", "channel", "nope"]
AGGREGATIONS = ["sum", "avg", "min", "max", "count", "count_distinct", "median", "first", "last", "countd",
                "COUNT", "Sum", "amount_wavg", "weighted_avg", "mean"]
PATHS = ["customers", "customers.regions", "orders", "amount"]
# Strings whose text is SQL or a formula: a value, naming nothing.
SQL_TEXT = ["'a.count(distinct b)'", "'avg(distinct x)'", "'f(x, distinct y)'", "'order by x desc'",
            "'x:sum'", "'none'"]


class Grammar:
    def __init__(self, seed: int) -> None:
        self.pick = random.Random(seed)

    def choice(self, options: list[str]) -> str:
        return self.pick.choice(options)

    def column(self, source: str) -> str:
        return self.choice(SOURCES[source]) if self.pick.random() < 0.85 else self.choice(WORDS)

    def value(self, source: str, depth: int = 0) -> str:
        column, roll = self.column(source), self.pick.random()
        if depth > 1 or roll < 0.4:
            return column
        return self.choice([
            f"{column} {self.choice(['+', '-', '*', '/', '%', '**', '//', '|', '^'])} {self.value(source, depth + 1)}",
            f"coalesce({column}, 0)", f"{self.choice(['upper', 'abs', 'round', 'length'])}({column})",
            f"case when {self.condition(source, depth + 1)} then {column} else {self.choice(['0', 'null'])} end",
            f"iif({self.condition(source, depth + 1)}, {column}, 0)",
            f"extract({self.choice(['year', 'month', 'dow', 'doy', 'epoch'])} from {column})",
            f"date_part({self.choice(['year', repr('month'), repr('isodow'), repr('x')])}, {column})",
            f"{column} + interval(1, {self.choice([repr('day'), 'day'])})",
            f"{self.choice(['', '+'])}interval(1, 'day') {self.choice(['+', '-'])} {column}",
            f"{column} {self.choice(['+', '-'])} {self.choice(['+', '-', ''])}interval(1, 'day')",
            f"interval(1, 'day') + interval(1, 'hour') + {column}", f"+{column}",
        ])

    def condition(self, source: str, depth: int = 0) -> str:
        column = self.column(source)
        options = [
            f"{column} {self.choice(['=', '==', '!=', '<>', '>', '<='])} "
            f"{self.choice(['1', repr('paid'), '{floor}', self.column(source)])}",
            f"{column} in ('a', 'b')", f"{column} == {self.choice(SQL_TEXT)}", f"{column} is {self.choice(['', 'not '])}null", f"{column} like 'p%'",
            f"{column} between 1 and 5", f"{column} > {self.choice(['current_date', 'now()', 'None', 'true'])}",
        ]
        if depth < 2:
            options += [f"{self.condition(source, depth + 1)} {self.choice(['and', 'OR'])} "
                        f"{self.condition(source, depth + 1)}", f"not {self.condition(source, depth + 1)}"]
        return self.choice(options)

    def measure(self, source: str, depth: int = 0) -> str:
        aggregation, column = self.choice(AGGREGATIONS), self.column(source)
        options = [
            f"{aggregation}({self.value(source)})", f"{column}:{aggregation}",
            self.choice(["count(*)", "*:count", "count(customers.*)", f"count(distinct {column})", "COUNT(*)"]),
            f"{self.choice(PATHS)}.{aggregation}({self.choice(['', column, column + ', 2', column + ', qty'])})",
            f"{self.choice(PATHS)}.{aggregation}({column}, {self.choice(['+0.5', '-0.5', 'true', 'null', 'NULL'])})",
            f"{self.choice(['cumsum', 'lag', 'time_shift', 'change', 'rank'])}(sum({column})"
            f"{self.choice(['', ', 1', ', -1, month', ', partition_by=status', ', periods=2'])})",
            f"weighted_avg({column}, weight={self.column(source)})", f"sum(case when {self.condition(source)} then "
            f"{column} else 0 end)", f"{aggregation}({column}, {self.choice(['0.5', self.column(source)])})",
        ]
        if depth < 1:
            options.append(f"{self.measure(source, 1)} {self.choice(['+', '/'])} {self.measure(source, 1)}")
        return self.choice(options)

    def query(self) -> dict[str, Any]:
        source = self.choice(list(SOURCES))
        query: dict[str, Any] = {"source_model": source}
        if self.pick.random() < 0.6:
            query["measures"] = [self.measure(source)]
        if self.pick.random() < 0.5 or "measures" not in query:
            tail = self.choice(["", "", "", " order by amount desc", " limit 5", " and desc = 1", " -- x", " # x"])
            query["filters"] = [self.choice([self.condition(source), f"{self.measure(source, 1)} > 10"]) + tail]
        return query


async def slayer_answers(folder: Path, queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from record import error_answer
    from slayer.core.query import SlayerQuery
    from slayer.memories.resolver import extract_entities_from_query
    from slayer.storage.yaml_storage import YAMLStorage

    storage = YAMLStorage(base_dir=str(folder))
    answers: list[dict[str, Any]] = []
    for query in queries:
        try:
            found = await extract_entities_from_query(SlayerQuery.model_validate(query), storage=storage)
        except Exception as exc:  # noqa: BLE001 - every refusal is an answer
            answers.append(error_answer(exc))
        else:
            answers.append({"entities": found.canonical_forms, "warnings": found.warnings})
    return answers


def make_tables(folder: Path) -> None:
    """A SQLite file a datasource of the catalog at ``folder``, a table of one row a model, so that
    SLayer's engine can run a query; each datasource file names its database by its full path."""
    for source in (folder / "datasources").glob("*.yaml"):
        text = source.read_text(encoding="utf-8")
        source.write_text(text.replace("database: ", f"database: {folder}/"), encoding="utf-8")
    values = {"INT": 1, "DOUBLE": 2.5, "TIMESTAMP": "2024-01-05 10:00:00", "DATE": "2024-01-05"}
    types = {"INT": "INTEGER", "DOUBLE": "REAL"}
    for (datasource, model), body in MODELS.items():
        columns = yaml.safe_load(body)["columns"]
        with sqlite3.connect(folder / f"{datasource}.db") as db:
            names = ", ".join(f'"{column["name"]}" {types.get(column["type"], column["type"])}' for column in columns)
            db.execute(f'create table if not exists "{model}" ({names})')
            db.execute(f'insert into "{model}" values ({", ".join("?" * len(columns))})',
                       [values.get(column["type"], "paid") for column in columns])


async def engine_runs(folder: Path, queries: list[dict[str, Any]]) -> list[bool]:
    """Whether SLayer's engine runs each query (on ``make_tables``' tables)."""
    from slayer.engine.query_engine import SlayerQueryEngine
    from slayer.storage.yaml_storage import YAMLStorage

    engine = SlayerQueryEngine(YAMLStorage(base_dir=str(folder)))
    runs: list[bool] = []
    for query in queries:
        try:
            await engine.execute(query)
        except Exception:  # noqa: BLE001 - any failure is an answer: it does not run
            runs.append(False)
        else:
            runs.append(True)
    return runs


def kb_answers(folder: Path, queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from slayer_kb.catalog.catalog import load_catalog
    from slayer_kb.catalog.refs import query_entities
    from slayer_kb.catalog.resolve import Resolver
    from slayer_kb.core.errors import KBError
    from slayer_kb.core.ids import check_id

    resolver = Resolver(load_catalog(folder), memory_exists=lambda _id: False, check_id=check_id)
    answers: list[dict[str, Any]] = []
    for query in queries:
        try:
            entities, warnings = query_entities(query, resolver)
        except KBError as exc:
            answers.append({"error": str(exc)})
        else:
            answers.append({"entities": entities, "warnings": warnings})
    return answers


def kind(slayer: dict[str, Any], kb: dict[str, Any]) -> str:
    if "error" in slayer or "error" in kb:
        return {(True, True): "both refuse", (True, False): "SL refuses, kb takes",
                (False, True): "SL takes, kb refuses"}[("error" in slayer, "error" in kb)]
    if sorted(slayer["entities"]) != sorted(kb["entities"]):
        return "entities differ"
    if slayer["entities"] != kb["entities"]:
        return "order differs"
    return "warnings differ" if slayer["warnings"] != kb["warnings"] else "agree"


def main() -> None:
    engine = "--engine" in sys.argv
    args = [arg for arg in sys.argv[1:] if arg != "--engine"]
    count, seed = (int(args[0]) if args else 2000), (int(args[1]) if len(args) > 1 else 1)
    grammar = Grammar(seed)
    queries = [grammar.query() for _ in range(count)]
    with tempfile.TemporaryDirectory() as tmp:
        write_catalog(Path(tmp))
        os.chdir(tmp)  # SLayer's storage writes nothing here, but never into the repository
        slayer = asyncio.run(slayer_answers(Path(tmp), queries))
        kb = kb_answers(Path(tmp), queries)
        if engine:
            make_tables(Path(tmp))
            runs = asyncio.run(engine_runs(Path(tmp), queries))
    classes: dict[str, list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]] = collections.defaultdict(list)
    for at, (query, theirs, ours) in enumerate(zip(queries, slayer, kb, strict=True)):
        ran = ("; runs" if runs[at] else "; does not run") if engine else ""
        classes[kind(theirs, ours) + ran].append((query, theirs, ours))
    for name, found in sorted(classes.items(), key=lambda item: -len(item[1])):
        print(f"{len(found):6}  {name}")
    for name in args[2:]:
        print(f"\n== {name}")
        for query, theirs, ours in classes.get(name, [])[:20]:
            print(f"{query}\n  SLayer:   {theirs.get('error') or theirs['entities']}\n"
                  f"  slayer-kb: {ours.get('error') or ours['entities']}")


if __name__ == "__main__":
    main()
