"""``python -m bench.relevance``: the relevance table for each channel alone and fused."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from . import build, table

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        kb = build(Path(tmp) / "kb")
        print(table(kb))
        if "--misses" in sys.argv:
            from . import CONFIGS, evaluate

            for question, top in evaluate(kb, CONFIGS["fused"]).misses:
                print(f"- {question}\n    got {top}")
