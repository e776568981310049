"""A revision the user named (``--rev``, ``review BASE``, ``--against``, ``--onto``): one check,
and one message when it names no commit, for every command. Kept free of heavy imports, since
``validate`` (a pre-commit hook) needs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from .repo import GitStore


def resolve_rev(store: GitStore, rev: str) -> str:
    """The commit ``rev`` names, or an error that says what to pass instead."""
    if not rev or rev.startswith("-"):
        raise InvalidInputError(f"'{rev}' is not a revision; give a commit, branch or tag (e.g. HEAD~1).")
    proc = store.git("rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}", check=False)
    sha = proc.stdout.decode().strip()
    if proc.returncode != 0 or not sha:
        raise NotFoundError(f"Unknown revision '{rev}': give a commit, branch or tag (see 'git log').")
    return sha
