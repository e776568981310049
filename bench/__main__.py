"""``python -m bench``: generate (or reuse) corpora, measure, print a markdown table, write JSON.

    python -m bench --quick            # 1,000 memories, under two minutes
    python -m bench                    # 1,000, 10,000 and 100,000 memories
    python -m bench --sizes 1000,10000
    python -m bench --team [--quick]   # many agents, one remote: bench/team.py, docs/teams.md
    python -m bench --write-docs       # also put the tables in docs/performance.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import corpus as corpus_mod
from . import relevance as relevance_mod
from . import team
from .measure import Plan, Runner
from .report import doc_tables, write_docs

RESULTS_DIR = Path(__file__).resolve().parent / "results"
PERFORMANCE_DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1,000 memories only (a smoke run)")
    parser.add_argument("--sizes", help="comma-separated corpus sizes (default 1000,10000,100000)")
    parser.add_argument("--steps", help="comma-separated steps to run (first words: reindex, freshness, search, "
                        "vectors, processes, server, save, watcher, validate, cascade; default all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache-dir", type=Path, default=corpus_mod.CACHE_DIR)
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--write-docs", action="store_true",
                        help=f"replace the tables the run measured in {PERFORMANCE_DOC.name}, between its markers")
    parser.add_argument("--team", action="store_true",
                        help="run the team bench instead (python -m bench.team; --quick, --seed and --results-dir apply)")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes = "1000"
    args.size_list = [int(s.replace("_", "")) for s in (args.sizes or "1000,10000,100000").split(",")]
    return args


def machine(load_at_start: float) -> dict[str, Any]:
    """The machine, and its 1-minute load average at the run's start and end: other work on a
    shared machine inflates every figure."""
    import whoosh

    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "git": git_version,
        "whoosh": whoosh.versionstring(),
        "sqlite": sqlite3.sqlite_version,
        "load": [load_at_start, os.getloadavg()[0]],
    }


def run_size(size: int, args: argparse.Namespace) -> dict[str, Any]:
    log(f"{size:,} memories: preparing corpus in {args.cache_dir} ...")
    began = time.perf_counter()
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    corpus = corpus_mod.cached(size, args.seed, args.cache_dir)
    log(f"  ready in {time.perf_counter() - began:.1f} s ({'generated' if corpus.generate_seconds else 'cached'})")
    metrics = Runner(corpus, Plan.for_size(size), log).run(set(args.steps.split(",")) if args.steps else None)
    return {"corpus": corpus.to_json(), "metrics": metrics}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.team:
        return team.main([*(["--quick"] if args.quick else []), "--seed", str(args.seed),
                          "--results-dir", str(args.results_dir)])
    # Commits by the benchmark, git itself and slayer-kb subprocesses all need an identity; a
    # fixed one keeps a machine without git config able to run it.
    os.environ.update(corpus_mod.GIT_IDENTITY)
    os.environ.pop("SLAYER_KB", None)
    os.environ.pop("SLAYER_KB_AUTHOR", None)
    started = dt.datetime.now(dt.timezone.utc)
    load_at_start = os.getloadavg()[0]
    runs = {str(size): run_size(size, args) for size in args.size_list}
    log("relevance set ...")
    relevance_table, relevance = relevance_mod.measure()
    document = {
        "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python -m bench " + " ".join(sys.argv[1:] if argv is None else argv),
        "seed": args.seed,
        "machine": machine(load_at_start),
        "runs": runs,
        "relevance": relevance,
    }
    args.results_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=1)
    (args.results_dir / f"{started.strftime('%Y%m%dT%H%M%SZ')}.json").write_text(text)
    (args.results_dir / "latest.json").write_text(text)
    for body in doc_tables(runs).values():
        print(body)
        print()
    print(relevance_table)
    if args.write_docs:
        log(f"wrote the {' and '.join(write_docs(PERFORMANCE_DOC, document))} tables of {PERFORMANCE_DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
