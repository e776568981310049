"""What a test process holds once it has collected the suite, kept out of the garbage
collector's full passes (``gc.freeze``, from conftest's ``pytest_collection_finish``).

A worker collects every test module and what they import (pytest's items, hypothesis, Whoosh,
numpy, the ``mcp`` SDK's pydantic models: about 200,000 objects) and holds them until it exits.
Python's full collection walks every tracked object each time it runs (12-14 times in a worker
of a default run), though none of these can ever be garbage. Frozen, they are left out of every
later pass; what the tests make is collected as before. A frozen object is still freed when
nothing refers to it any more (reference counting is untouched).
"""

from __future__ import annotations

import gc


def freeze_collected() -> None:
    """Move what this process holds now out of the collector's passes, its garbage freed first."""
    gc.collect()
    gc.freeze()
