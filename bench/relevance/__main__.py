"""``python -m bench.relevance [--misses] [--sets first,third]``: the relevance table for each
channel alone and fused, on every set (or those named), and with ``--misses`` the questions the
fused search does not answer first."""

from __future__ import annotations

import argparse

from . import SETS, kinds_table, score_set, summary, table

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.relevance")
    parser.add_argument("--misses", action="store_true", help="list the questions fused search does not answer first")
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated sets to score (default: all: {', '.join(SETS)})")
    args = parser.parse_args()
    names = [n.strip() for n in args.sets.split(",") if n.strip()]
    unknown = [n for n in names if n not in SETS]
    if unknown:
        parser.error(f"unknown set {', '.join(unknown)}; the sets are: {', '.join(SETS)}")
    scores = {name: score_set(SETS[name]) for name in names}
    print(table(scores))
    print()
    print(kinds_table(scores))
    print()
    print(summary(scores))
    if args.misses:
        for set_name, by_channel in scores.items():
            print(f"\n{set_name} set:")
            for question, top in by_channel["fused"].misses:
                print(f"- {question}\n    got {top}")
