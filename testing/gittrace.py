"""The git commands a block of a test runs, counted from git's own trace (``GIT_TRACE`` to a
file): this process's, and those of every process it starts that keeps the environment."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


class GitRuns:
    """The trace of the git commands run while ``traced_git``'s block ran."""

    def __init__(self, trace: Path) -> None:
        self._trace = trace

    def __call__(self, command: str) -> list[str]:
        """Each run of ``git COMMAND`` (``"ls-files"``, ``"log --format"``: a prefix of what followed
        ``git``), as the trace shows its words."""
        if not self._trace.exists():
            return []
        lines = self._trace.read_text(errors="replace").splitlines()
        return [line.split("built-in: git ", 1)[1] for line in lines
                if "built-in: git " in line and line.split("built-in: git ", 1)[1].startswith(command)]


@contextlib.contextmanager
def traced_git(folder: Path) -> Iterator[GitRuns]:
    """Trace every git command the block runs into a file in ``folder``; read them with the
    ``GitRuns`` given, in the block or after it."""
    trace = folder / "git-trace"
    trace.unlink(missing_ok=True)  # a block's own runs, not an earlier block's
    before = os.environ.get("GIT_TRACE")
    os.environ["GIT_TRACE"] = str(trace)
    try:
        yield GitRuns(trace)
    finally:
        if before is None:
            del os.environ["GIT_TRACE"]
        else:
            os.environ["GIT_TRACE"] = before
