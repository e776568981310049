"""An xdist worker ends without Python's finalization: a pytest plugin loaded early (``-p
testing.quickexit`` in pyproject's addopts, after ``testing.bytecode``).

A worker that has sent its last report still tears its interpreter down when the controller
tells it to exit: every module it imported (the test modules, hypothesis, Whoosh, numpy, the
``mcp`` SDK's hundreds of pydantic models) freed object by object, 0.5 s of CPU for a worker that
only collected the suite, more after running its share. The controller waits for every worker to
be gone before it prints its summary (xdist gives a worker 10 s, then kills it), so the run's
last seconds were the workers' teardown, on a loaded machine all 10 of them.

The handler is registered as this plugin is imported, before the handlers of the tests' helpers
(the templates ``testing.repos`` removes at exit) and of the modules imported later
(multiprocessing's): those run first, as atexit runs last what was registered first. The one
registered before it, logging's, it calls itself; then the worker leaves, its output flushed.
The controller and a run without workers (``-n 0``, whose exit status is the run's) finish as
Python does.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys

WORKER = "PYTEST_XDIST_WORKER"  # set by xdist in each worker, never in the controller


def leave_at_once() -> None:
    """In an xdist worker, end the process now that the other exit handlers have run."""
    if WORKER not in os.environ:
        return
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a stream already closed has nothing to flush
            stream.flush()
    os._exit(0)


atexit.register(leave_at_once)
