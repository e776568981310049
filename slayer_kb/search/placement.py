"""Where the sentence model's runs are made (encoder.py): on the thread that asks for them, or
on the pool ``runs_on`` names for that thread for a block. The warm server's filler makes them
on a thread of lower priority (core/priority.py) while it reads and writes the index on its
own; such runs use a session of one thread (``Encoder``): onnxruntime makes a session's
intra-op threads when it loads it, at the priority of the thread that loads it (the server's),
and a run on the lowered thread made most of its work on them."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from concurrent.futures import Executor

_runs_on = threading.local()


def pool() -> Executor | None:
    """The pool the calling thread's model runs are made on (None: on the thread itself)."""
    found: Executor | None = getattr(_runs_on, "pool", None)
    return found


@contextlib.contextmanager
def runs_on(where: Executor | None) -> Iterator[None]:
    """For the block, the model runs (``Encoder.encode``) this thread asks for are made on
    ``where`` (None: here). A block inside another gives the outer one's pool back when it ends."""
    outer = pool()
    _runs_on.pool = where
    try:
        yield
    finally:
        _runs_on.pool = outer
