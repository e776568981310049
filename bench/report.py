"""The markdown tables: one row per figure, one column per corpus size, and the issues' targets;
and ``write_docs``, which puts them in docs/performance.md between its ``<!-- bench:NAME -->``
and ``<!-- /bench:NAME -->`` markers (tests/test_bench_report.py checks their form there)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

Row = tuple[str, str, str, str, str]
"""(label, result key, statistic, display unit, target from the issues)"""

ROWS: tuple[Row, ...] = (
    ("save in-process, in a row (commit + index update)", "save", "median", "ms", "<= git add+commit (10k)"),
    ("git plumbing commit of one file", "git_plumbing", "median", "ms", ""),
    ("git add + git commit of one file", "git_add_commit", "median", "ms", ""),
    ("save / git plumbing", "save_vs_plumbing", "median", "x", ""),
    ("save / git add+commit", "save_vs_add_commit", "median", "x", "<= 1.0x (10k)"),
    ("save right after another tool's commit", "save_after_git", "median", "ms", ""),
    ("that save / git add+commit", "save_after_git_vs_add_commit", "median", "x", ""),
    ("Engram save (save_observation)", "save_observation", "median", "ms", ""),
    ("Engram save / save", "save_observation_vs_save", "median", "x", ""),
    ("warm KB (keep_warm): save", "save_warm", "median", "ms", ""),
    ("warm KB: Engram save", "save_observation_warm", "median", "ms", ""),
    ("warm KB: Engram save / save", "save_observation_warm_vs_save", "median", "x", "<= 1.2x"),
    ("steady: saves in a row, p50", "steady_save", "median", "ms", ""),
    ("steady: p95 / p50", "steady_save", "p95_over_p50", "x", "<= 1.5x"),
    ("steady: max / p50", "steady_save", "max_over_p50", "x", "<= 3x"),
    ("steady: git add + commit beside them, p50", "steady_git", "median", "ms", ""),
    ("steady: .git growth a commit, after maintenance", "steady_growth", "median", "KB",
     "<= 10 KB (10k), 25 KB (100k)"),
    ("steady: most loose objects seen", "steady_growth", "most_loose", "", "<= 1000"),
    ("`slayer-kb save` process, wall", "process_save", "median", "ms", ""),
    ("`slayer-kb save` process, peak RSS", "process_save_rss", "median", "MiB", ""),
    ("`slayer-kb search` process, wall", "process_search", "median", "ms", ""),
    ("`slayer-kb search` process, peak RSS", "process_search_rss", "median", "MiB", ""),
    ("`slayer-kb search` process, `slayer-kb watch` running", "process_search_relayed", "median", "ms",
     "<= 300 ms (100k)"),
    ("that process's peak RSS", "process_search_relayed_rss", "median", "MiB", ""),
    ("first command, no server yet (runs in its process, starts one)", "server_first_command", "median", "ms", ""),
    ("the same search with the server off, beside it", "server_first_alone", "median", "ms", ""),
    ("first command / that search", "server_first_command_vs_alone", "median", "x", "<= 1.0x"),
    ("`slayer-kb search` process, warm server running", "server_search", "median", "ms",
     "<= 80 ms (10k, 100k)"),
    ("`slayer-kb save` process, warm server running", "server_save", "median", "ms",
     "<= 120 ms (10k), 150 ms (100k)"),
    ("that save / git add+commit", "server_save_vs_add_commit", "median", "x", "<= 1.5x"),
    ("relayed search process peak RSS", "server_search_rss", "median", "MiB", "<= 150 MiB"),
    ("relayed save process peak RSS", "server_save_rss", "median", "MiB", "<= 150 MiB"),
    ("the server's peak RSS", "server_rss", "median", "MiB", "<= 600 MiB (100k)"),
    ("search p50 (200 queries, in-process), each call checking freshness", "search", "median", "ms", ""),
    ("search p95, each call checking freshness", "search", "p95", "ms", ""),
    ("search p50, warm process (keep_warm), every channel", "search_warm", "median", "ms", "<= 10 ms (100k)"),
    ("search p95, warm process (keep_warm), every channel", "search_warm", "p95", "ms", "<= 30 ms (100k)"),
    ("search p50, word queries only", "search_words", "median", "ms", ""),
    ("search p50, word queries only, warm process", "search_words_warm", "median", "ms", ""),
    ("SQLite FTS5 p50, same word queries", "fts5_words", "median", "ms", ""),
    ("search (warm) / FTS5, p50", "search_vs_fts5_p50", "median", "x", "<= 10x (100k)"),
    ("search (warm) / FTS5, p95", "search_vs_fts5_p95", "median", "x", ""),
    ("search (cold) / FTS5, p50", "cold_search_vs_fts5_p50", "median", "x", ""),
    ("meaning vectors on disk", "vectors_disk", "median", "MB", "<= 60 MB (100k)"),
    ("index update of one memory (words and vector)", "index_update", "median", "ms", ""),
    ("of which its vector", "vector_update", "median", "ms", "<= 10 ms"),
    ("freshness check, nothing changed", "fresh_unchanged", "median", "ms", "<= 100 ms (100k)"),
    ("freshness check, 1 file changed by hand", "fresh_1", "median", "ms", ""),
    ("freshness check, 100 files changed by hand", "fresh_100", "median", "ms", ""),
    ("watcher: hand edit to searchable", "watcher", "median", "ms", "<= 1 s"),
    ("full reindex (words and vectors)", "reindex", "median", "s", "<= 90 s (100k)"),
    ("full reindex throughput", "reindex", "docs_per_second", "memories/s", ""),
    ("validate every file", "validate", "median", "s", "<= 10 s (10k)"),
    ("cascade: delete a model 10% of memories use", "cascade", "median", "s", "<= 15 s (10k, 100k)"),
)


def _cell(figure: dict[str, Any] | None, stat: str, unit: str) -> str:
    if not figure or figure.get(stat) is None:
        return "n/a"
    value = float(figure[stat])
    if unit == "ms":
        value *= 1000
    if unit == "memories/s":
        return f"{value:,.0f}"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


# basic-memory, measured only up to peer.MAX_SIZE memories and only by its own step.
PEER_ROWS: tuple[Row, ...] = (
    ("basic-memory: `bm tool search-notes` process", "peer_search", "median", "ms", ""),
    ("beside it, `slayer-kb search` process, server off", "peer_ours_search", "median", "ms", ""),
    ("basic-memory search / slayer-kb search", "peer_search_vs_ours", "median", "x", ""),
    ("basic-memory: `bm tool write-note` process", "peer_write", "median", "ms", ""),
    ("beside it, `slayer-kb save` process, server off", "peer_ours_save", "median", "ms", ""),
    ("basic-memory write / slayer-kb save", "peer_write_vs_ours", "median", "x", ""),
)
CORPUS_ROW = "| corpus generation + git commit | s |"
# The tables of docs/performance.md, by marker name.
DOC_TABLES = {"main": ROWS, "basic-memory": PEER_ROWS}


def table(runs: dict[str, dict[str, Any]], rows: tuple[Row, ...] = ROWS) -> str:
    """The table of ``rows`` over every size of ``runs``; the main one (ROWS) ends with the
    corpus generation row and the runs' notes (a step that failed or was skipped)."""
    sizes = list(runs)
    head = "| figure | unit | " + " | ".join(f"{int(s):,} memories" for s in sizes) + " | target |"
    lines = [head, "|" + "---|" * (len(sizes) + 3)]
    for label, key, stat, unit, target in rows:
        cells = [_cell(runs[s]["metrics"].get(key), stat, unit) for s in sizes]
        lines.append(f"| {label} | {unit} | " + " | ".join(cells) + f" | {target} |")
    if rows is not ROWS:
        return "\n".join(lines)
    generated = [
        _cell({"v": runs[s]["corpus"].get("generate_seconds")}, "v", "s") if runs[s]["corpus"].get("generate_seconds")
        else "cached" for s in sizes
    ]
    lines.append(CORPUS_ROW + " " + " | ".join(generated) + " | |")
    notes = _notes(runs)
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)


def _measured(run: dict[str, Any], rows: tuple[Row, ...]) -> bool:
    return any((run["metrics"].get(key) or {}).get(stat) is not None for _label, key, stat, _unit, _target in rows)


def doc_tables(runs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The tables of docs/performance.md a run measured, by marker name: each over the sizes
    where the run measured at least one of its figures (basic-memory: up to 10,000)."""
    tables = {}
    for name, rows in DOC_TABLES.items():
        sizes = {size: run for size, run in runs.items() if _measured(run, rows)}
        if sizes:
            tables[name] = table(sizes, rows)
    return tables


def caption(document: dict[str, Any]) -> str:
    """Which command made the tables, on what machine, under what load."""
    machine = document["machine"]
    load = machine.get("load")
    under = f"load average {load[0]:.2f} at the start, {load[1]:.2f} at the end" if load else "load average not recorded"
    return (f"`{document['command']}` on {machine['cpus']} CPUs (Python {machine['python']}, Whoosh "
            f"{machine['whoosh']}, {machine['git']}), {under}:")


def marked(name: str) -> re.Pattern[str]:
    """What docs/performance.md holds between the markers of table ``name``."""
    return re.compile(rf"(<!-- bench:{re.escape(name)} -->\n)(.*?)(\n<!-- /bench:{re.escape(name)} -->)", re.S)


def write_docs(path: Path, document: dict[str, Any]) -> list[str]:
    """Replace the tables between ``path``'s markers by those ``document`` (a run, as written to
    bench/results/) measured; the others stay. The names of the tables written."""
    text = path.read_text(encoding="utf-8")
    written = []
    for name, body in doc_tables(document["runs"]).items():
        found = marked(name).search(text)
        if found is None:
            raise ValueError(f"{path} has no <!-- bench:{name} --> ... <!-- /bench:{name} --> markers: "
                             "put them around the place its table goes")
        text = text[: found.start(2)] + f"{caption(document)}\n\n{body}" + text[found.end(2) :]
        written.append(name)
    path.write_text(text, encoding="utf-8")
    return written


def _notes(runs: dict[str, dict[str, Any]]) -> list[str]:
    out = []
    for size, run in runs.items():
        for key, figure in run["metrics"].items():
            if key == "errors":
                out += [f"- {size}: {step} failed: {message}" for step, message in figure.items()]
            elif isinstance(figure, dict) and figure.get("note") and key != "cascade":
                out.append(f"- {size}: {key}: {figure['note']}")
    return out
