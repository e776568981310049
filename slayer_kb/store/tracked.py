"""Which of a folder's files git tracks, for checks that need no KB (validate)."""

from __future__ import annotations

from pathlib import Path

from ..core.locate import is_leftover
from .gitenv import LITERAL_PATHS, git_env


def untracked_leftovers(folder: Path, names: list[str]) -> set[str]:
    """The names among ``names`` (files in ``folder``) that are an editor's leftovers or copies
    ``--force`` kept (``is_leftover``) and that git does not track: local noise a check passes by.
    One committed is news (a stale private edit in a pull request), so it is checked. No git
    process unless there is a leftover; all of them taken as untracked where git cannot say."""
    leftovers = [name for name in names if is_leftover(name)]
    if not leftovers:
        return set()
    import subprocess  # here: most checks never need it

    try:
        found = subprocess.run(["git", "ls-files", "-z", "--", *leftovers], cwd=folder,
                               env={**git_env(), **LITERAL_PATHS}, capture_output=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return set(leftovers)
    tracked = {Path(name).name for name in found.stdout.decode("utf-8", "surrogateescape").split("\0") if name}
    return set(leftovers) - tracked
