"""``python -m bench.relevance [--misses]``: the relevance table for each channel alone and
fused, on every set, and with ``--misses`` the questions the fused search does not answer first."""

from __future__ import annotations

import sys

from . import SETS, kinds_table, score_set, summary, table

if __name__ == "__main__":
    scores = {name: score_set(folder) for name, folder in SETS.items()}
    print(table(scores))
    print()
    print(kinds_table(scores))
    print()
    print(summary(scores))
    if "--misses" in sys.argv:
        for set_name, by_channel in scores.items():
            print(f"\n{set_name} set:")
            for question, top in by_channel["fused"].misses:
                print(f"- {question}\n    got {top}")
