"""docs/performance.md's tables are the benchmark's own: between their markers, in the form
``bench.report`` writes (caption, columns, rows), so ``python -m bench --write-docs`` can replace
them. Their figures are whatever the last run measured; only their form is checked here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bench import report

DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
CAPTION = re.compile(r"`python -m bench[^`]*` on \d+ CPUs \(Python [^,]+, Whoosh [^,]+, git version [^)]+\), "
                     r"load average (not recorded|[\d.]+ at the start, [\d.]+ at the end):")


def run(metrics: dict[str, Any]) -> dict[str, Any]:
    return {"corpus": {"generate_seconds": None}, "metrics": metrics}


def document(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"command": "python -m bench --sizes 1000", "runs": runs, "machine": {
        "cpus": 2, "python": "3.11.7", "whoosh": "2.7.5", "git": "git version 2.39.5", "load": [1.5, 2.25]}}


def section(text: str, name: str) -> str:
    found = report.marked(name).search(text)
    assert found, f"docs/performance.md lost its <!-- bench:{name} --> markers"
    return found.group(2)


def form(block: str) -> tuple[str, list[list[str]]]:
    """A marked section's caption and its table's rows, each figure replaced by ``#``: the
    header names the sizes, which the rows' cells follow."""
    caption, blank, *lines = block.split("\n")
    assert blank == "" and CAPTION.fullmatch(caption), caption
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines if line.startswith("|")]
    assert all(not line or line.startswith(("|", "- ")) for line in lines), "a table, then its notes"
    sizes = len(rows[0]) - 3
    return caption, [row[:2] + ["#"] * sizes + row[2 + sizes :] if i != 0 else row for i, row in enumerate(rows)]


def expected_form(block: str, rows: tuple[report.Row, ...]) -> list[list[str]]:
    """The form the bench writes for the sizes ``block``'s header names."""
    header = block.split("\n")[2]
    sizes = [cell.strip().split()[0].replace(",", "") for cell in header.split("|")[3:-2]]
    return form("`python -m bench` on 2 CPUs (Python 3, Whoosh 2, git version 2), load average not recorded:\n\n"
                + report.table({size: run({}) for size in sizes}, rows))[1]


@pytest.mark.parametrize("name", sorted(report.DOC_TABLES))
def test_performance_tables_are_in_the_form_the_bench_writes(name: str) -> None:
    block = section(DOC.read_text(encoding="utf-8"), name)
    _caption, rows = form(block)
    assert rows == expected_form(block, report.DOC_TABLES[name]), (
        f"the {name} table of docs/performance.md is not what bench/report.py writes: "
        "run `python -m bench --write-docs`, or change both")


def test_the_main_table_covers_every_size_and_figure() -> None:
    block = section(DOC.read_text(encoding="utf-8"), "main")
    header, _sep, *rows = [line for line in block.split("\n")[2:] if line.startswith("|")]
    assert header == "| figure | unit | 1,000 memories | 10,000 memories | 100,000 memories | target |"
    assert [row.split("|")[1].strip() for row in rows] == [label for label, *_ in report.ROWS] + [
        "corpus generation + git commit"]


def test_write_docs_replaces_only_the_tables_a_run_measured(tmp_path: Path) -> None:
    page = tmp_path / "performance.md"
    before = DOC.read_text(encoding="utf-8")
    page.write_text(before, encoding="utf-8")
    runs = {"1000": run({"save": {"median": 0.0123}, "reindex": {"median": 1.5, "docs_per_second": 666.6},
                         "errors": {"cascade": "RuntimeError: boom"}})}
    assert report.write_docs(page, document(runs)) == ["main"]
    after = page.read_text(encoding="utf-8")
    main = section(after, "main")
    assert main.split("\n")[0] == ("`python -m bench --sizes 1000` on 2 CPUs (Python 3.11.7, Whoosh 2.7.5, "
                                   "git version 2.39.5), load average 1.50 at the start, 2.25 at the end:")
    assert "| save in-process, in a row (commit + index update) | ms | 12.3 | <= git add+commit (10k) |" in main
    assert "| full reindex throughput | memories/s | 667 |  |" in main
    assert main.endswith("| corpus generation + git commit | s | cached | |\n\n- 1000: cascade failed: RuntimeError: boom")
    assert form(main)[1] == expected_form(main, report.ROWS)
    assert section(after, "basic-memory") == section(before, "basic-memory")
    found = report.marked("main").search(before)
    assert found and after.startswith(before[: found.start(2)]) and after.endswith(before[found.end(2) :])


def test_write_docs_writes_basic_memorys_table_over_the_sizes_it_measured(tmp_path: Path) -> None:
    page = tmp_path / "performance.md"
    page.write_text(DOC.read_text(encoding="utf-8"), encoding="utf-8")
    peer = {"peer_search": {"median": 5.9}, "peer_ours_search": {"median": 0.47}, "peer_search_vs_ours": {"median": 12.6}}
    runs = {"1000": run(peer), "100000": run({"peer_search": {"note": "basic-memory is measured up to 10,000 memories"}})}
    # A run of the basic-memory step alone leaves the main table as it was.
    assert report.write_docs(page, document(runs)) == ["basic-memory"]
    after = page.read_text(encoding="utf-8")
    assert section(after, "main") == section(DOC.read_text(encoding="utf-8"), "main")
    table = section(after, "basic-memory").split("\n")[2:]
    assert table[0] == "| figure | unit | 1,000 memories | target |"
    assert table[2:5] == ["| basic-memory: `bm tool search-notes` process | ms | 5,900 |  |",
                          "| beside it, `slayer-kb search` process, server off | ms | 470 |  |",
                          "| basic-memory search / slayer-kb search | x | 12.60x |  |"]


def test_write_docs_names_missing_markers(tmp_path: Path) -> None:
    page = tmp_path / "performance.md"
    page.write_text("# Performance\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"has no <!-- bench:main --> \.\.\. <!-- /bench:main --> markers"):
        report.write_docs(page, document({"1000": run({"save": {"median": 0.01}})}))
    assert page.read_text(encoding="utf-8") == "# Performance\n"


def test_the_sentence_bench_prints_issue_29s_targets_beside_its_figures() -> None:
    from bench.sentences import targets

    stats = {"p50": 12.5, "p95": 41.0, "max": 50.0, "n": 100, "unit": "ms"}
    results = {"warm_search": {"question": stats, "keywords": {**stats, "p95": 20.0}},
               "server": {"save_ms": {**stats, "p50": 151.0}, "vector_after_save_ms": {**stats, "max": 900.0},
                          "server_peak_rss_mib": 612.345}}
    assert [(t["figure"], t["measured"], t["target"], t["met"]) for t in targets(results)] == [
        ("warm search p50, questions, encoding included (ms)", 12.5, 15.0, True),
        ("warm search p95, questions, encoding included (ms)", 41.0, 40.0, False),
        ("warm search p50, two keywords, encoding included (ms)", 12.5, 15.0, True),
        ("warm search p95, two keywords, encoding included (ms)", 20.0, 40.0, True),
        ("relayed save p50 (ms)", 151.0, 150.0, False),
        ("a saved memory's sentence vector made after the save, slowest (ms)", 900.0, 1000.0, True),
        ("warm server peak RSS (MiB)", 612.3, 800.0, True),
    ]
    assert targets({"reindex_warm_cache": {"seconds": 91.2}}) == [
        {"figure": "reindex with the vector cache warm (s)", "measured": 91.2, "target": 90.0, "met": False}]
    assert targets({"cold_build": {"made": 10_000, "extrapolated_100k_minutes": 46.5}}) == [
        {"figure": "cold build of every sentence vector, carried to 100,000 memories (min, an extrapolation)",
         "measured": 46.5, "target": 40.0, "met": False}]
    assert targets({"cold_build": {"made": 0}}) == []  # nothing made: nothing to carry over
    # Stand-ins first: every vector final is held against the target, meaning's cover shown beside.
    stand_ins = {"made": 1000, "memories": 1000, "stand_in_from": 500, "two_free_cores_100k_minutes": 96.8,
                 "two_free_cores_100k_meaning_covered_minutes": 31.3}
    assert [(t["figure"].split(",")[0], t["measured"], t["target"], t["met"]) for t in targets({"cold_build": stand_ins})] == [
        ("cold build", 96.8, 40.0, False), ("meaning covers every memory (stand-ins first)", 31.3, None, None)]
    assert targets({"handwritten_build": {"made": 720, "two_free_cores_100k_minutes": 22.8}}) == [
        {"figure": "cold build of final vectors alone (as reindex makes them) carried to 100,000 memories as long "
                   "as the hand-written sets', from its CPU on two free cores (min, an extrapolation)",
         "measured": 22.8, "target": 40.0, "met": True}]
    first = {"words": {"seconds_since_first_command": 61.0}, "entity": {"seconds_since_first_command": 92.4}}
    assert targets({"first_command": first}) == [  # the entity search is asked after the words'
        {"figure": "words and entities answer after the first command on a new clone, during the build (s)",
         "measured": 92.4, "target": 90.0, "met": False}]
    during = {"covered_at_save": 128, "memories": 10_000, "vector_after_save_s": 0.8}
    assert targets({"first_command": {**first, "saved_during_the_build": during}})[1:] == [
        {"figure": "a memory saved during the build: its sentence vector made after the save (s)",
         "measured": 0.8, "target": 1.0, "met": True}]
    never = {**during, "vector_after_save_s": None}  # not made while the bench waited: no figure
    assert len(targets({"first_command": {**first, "saved_during_the_build": never}})) == 1
