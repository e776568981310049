"""Where a knowledge base is: kept free of heavy imports, because every ``slayer-kb`` process
needs it before it knows whether a running ``slayer-kb watch`` can answer for it (relay.py)."""

from __future__ import annotations

from pathlib import Path

MEMORIES_DIR = "memories"


def find_kb_root(start: Path) -> Path | None:
    """The nearest enclosing folder that looks like a KB (has memories/ or a SLayer catalog)."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / MEMORIES_DIR).is_dir() or (candidate / "datasources").is_dir():
            return candidate
        if (candidate / ".git").exists():
            break
    return None
