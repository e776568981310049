"""Whoosh's writers as the index uses them: a bulk write in two worker processes with the cyclic
garbage collector paused, a small write in this process, either cancelled cleanly on any error,
and deleting many memories' documents at once."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh import index as windex
from whoosh.index import LockError

from ..core.errors import StoreError
from . import compaction, workers
from .schema import CODEC

# From this many documents a write is a bulk write, and deletions walk the id terms.
BULK_THRESHOLD = 500


@contextlib.contextmanager
def writer(ix: windex.Index, bulk: bool, merge: Callable[[Any, list[Any]], list[Any]] | None = None) -> Iterator[Any]:
    """A Whoosh writer, committed when the block ends, cancelled if it raises.

    ``bulk``: thousands of documents at once (a rebuild, a cascade, a checkout). They go to
    Whoosh's writer in two processes (each document is analysed in Python, so a second core
    nearly halves it), with Python's cyclic garbage collector paused: a worker holds millions of
    posting tuples, and each full collection walks them all, while Whoosh's writers leave no
    cycles worth collecting. Forked workers inherit the pause (Linux up to Python 3.13);
    workers started otherwise only run slower. With the pool of ``pool_mb()`` and
    ``whoosh_internals.Codec``, a rebuild at 100,000 memories took 55 s instead of 98 s (measured).
    """
    paused = bulk and gc.isenabled()
    if paused:
        gc.disable()
    try:
        try:
            if bulk:
                writer = workers.bulk_writer(ix, procs=2, multisegment=True, limitmb=pool_mb(), codec=CODEC)
            else:
                writer = ix.writer(codec=CODEC)
        except LockError:
            raise StoreError(
                f"The search index in {ix.storage.folder} is locked by another process that is "
                "still writing it (or by a slayer-kb index worker left over by an old version: "
                "stop it). Retry in a moment; the memory files are not affected."
            ) from None
        try:
            with workers.watched(writer) if bulk else contextlib.nullcontext():
                yield writer
                writer.commit(mergetype=merge or (compaction.on_bulk if bulk else compaction.on_save))
        except BaseException:
            with contextlib.suppress(Exception):
                writer.cancel()
            # Whoosh's cancel only flags its worker processes in this process's memory: a worker
            # waiting for its next batch would wait forever, and hold up this process's exit.
            for task in getattr(writer, "tasks", ()):
                task.terminate()
                task.join()
            # A failed cancel (disk full) keeps Whoosh's write lock: release it, or every later
            # write in this process (the MCP server, the watcher) fails with LockError.
            with contextlib.suppress(Exception):
                writer.writelock.release()
            raise
        # Whoosh's commit goes on without a worker that died (killed for lack of memory, say),
        # and the documents it held would be missing from an index the manifest calls current.
        died = workers.dead(writer)
        if died:
            raise StoreError(
                f"A search-index worker process died (exit code {died[0]}; -9 is a kill, often for "
                "lack of memory) while indexing. No memory is lost: the next command indexes the "
                "changed files again."
            )
    finally:
        if paused:
            gc.enable()


class OnDemand:
    """A ``writer`` opened at its first call and committed (or cancelled) when the block ends: a
    pass that finds nothing to write opens no writer, so Whoosh writes no segment and no table of
    contents, and readers have nothing to reopen."""

    def __init__(self, ix: windex.Index, bulk: bool) -> None:
        self._ix, self.bulk = ix, bulk
        self._stack = contextlib.ExitStack()
        self._writer: Any = None

    def __enter__(self) -> OnDemand:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return bool(self._stack.__exit__(*exc))

    def __call__(self) -> Any:
        if self._writer is None:
            self._writer = self._stack.enter_context(writer(self._ix, self.bulk))
        return self._writer


def pool_mb() -> int:
    """Megabytes of postings each of Whoosh's workers sorts in memory before it spills a sorted
    run to disk. Spilling (pickling every posting, then merging the runs) cost a third of a
    100,000-memory rebuild; 1,024 holds that rebuild's postings. A smaller machine, or a
    container with a memory limit, gets a sixteenth of its memory per worker instead (Whoosh's
    estimate is about 3/4 of the real use)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 256
    with contextlib.suppress(OSError, ValueError):
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()  # cgroup v2; "max": none
        if limit != "max":
            memory = min(memory, int(limit))
    return max(128, min(1024, memory // (16 * 2**20)))


def delete_ids(writer: Any, ids: list[str]) -> None:
    """Delete the documents of these memory ids from the segments ``writer`` started from."""
    if len(ids) <= BULK_THRESHOLD:
        for mid in ids:
            writer.delete_by_term("id", mid)
        return
    # Thousands of ids (a cascade, a checkout): one walk over each segment's id terms beats a
    # term lookup per id and segment (0.4 s against 2.9 s for 10,000 ids in 12 segments).
    wanted = {mid.encode("utf-8", "surrogateescape") for mid in ids}
    for segment, offset in writer.searcher().reader().leaf_readers():
        for term in segment.lexicon("id"):
            if term in wanted:
                for docnum in segment.postings("id", term).all_ids():
                    writer.delete_document(docnum + offset)
