"""The helper thread of a process's searches, started once per process (starting one for each
search cost more than the work it took off the search on a busy machine). It makes a question's
sentence vector while the words are scored (retrieval.py), and takes half of a large scan: of
the sentence vectors (shortlist.py) or of the static ones (vectors.py). onnxruntime and numpy's
products release the GIL, so the two threads run on two cores. Nothing it runs waits for it."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

_helper: ThreadPoolExecutor | None = None


def helper() -> ThreadPoolExecutor:
    global _helper
    if _helper is None:
        _helper = ThreadPoolExecutor(1, thread_name_prefix="slayer-kb-search")
    return _helper


def _forget() -> None:
    global _helper
    _helper = None  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_forget)
