"""Whoosh's multi-process writer, made safe to kill.

Whoosh's ``MpWriter`` forks worker processes that take batches off a bounded queue. Two ways it
failed (both seen, both tested):

- the parent killed (kill -9, an OOM kill): the workers lived on, blocked on their queue and
  holding the index's write lock (they inherit its file descriptor), so every later write
  failed until someone found and killed them. Here each worker asks the kernel to kill it when
  its parent dies (Linux's ``PR_SET_PDEATHSIG``) and exits at once if the parent is already gone;
- a worker killed: the parent waited forever, in ``put`` on the full queue or in ``join`` of a
  worker blocked on the queue lock the dead one held. Here a watchdog thread notices a dead
  worker within a fraction of a second, kills the others and unblocks the parent's queue, so
  the write ends and the caller reports the death (``writing.writer``) instead of hanging.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from .whoosh_internals import BulkWriter, unblock_jobs

_PR_SET_PDEATHSIG = 1
POLL_SECONDS = 0.1


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def bulk_writer(ix: Any, **kwargs: Any) -> Any:
    """Whoosh's MpWriter (``kwargs`` are its) with workers that die with this process."""
    return BulkWriter(ix, on_worker_start=_die_with_parent, **kwargs)


def dead(writer: Any) -> list[int]:
    """Exit codes of the writer's workers that died (not a clean exit)."""
    return [task.exitcode for task in getattr(writer, "tasks", ()) if task.exitcode]


@contextlib.contextmanager
def watched(writer: Any) -> Iterator[None]:
    """While the block runs, a worker's death kills the other workers and keeps the parent's
    queue puts from blocking, so the block ends and ``dead(writer)`` tells."""
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(POLL_SECONDS):
            if not dead(writer):
                continue
            for task in getattr(writer, "tasks", ()):
                if task.exitcode is None:
                    with contextlib.suppress(Exception):
                        task.kill()
            # Nobody reads the job queue any more: let the parent's puts through.
            with contextlib.suppress(Exception):
                unblock_jobs(writer)

    thread = threading.Thread(target=watch, name="slayer-kb index watchdog", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
