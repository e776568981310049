"""``python -m bench.relevance [--misses]``: the relevance table for each channel alone and
fused, and with ``--misses`` the questions the fused search does not answer first."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from . import CONFIGS, build, evaluate, table

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        kb = build(Path(tmp) / "kb")
        scores = {name: evaluate(kb, config) for name, config in CONFIGS.items()}
        print(table(scores))
        if "--misses" in sys.argv:
            for question, top in scores["fused"].misses:
                print(f"- {question}\n    got {top}")
        kb.close()
