"""Many small file operations at once, overlapped on a few threads.

Why: a file operation can wait on the disk (a metadata block not in the cache); on a few threads
the waits of a cascade's 10,000 file writes overlap. The calls release the GIL while they wait.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

THREADS = 4
# Below this many items a thread pool costs more than it saves.
MIN_ITEMS = 64


def in_threads(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(item) for item in items]``, on THREADS threads when there are many items.

    The first exception a call raises is raised here; calls not started by then are skipped.
    """
    if len(items) < MIN_ITEMS:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(fn, items, chunksize=max(1, len(items) // (THREADS * 8))))
