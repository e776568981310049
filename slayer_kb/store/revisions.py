"""A revision the user named (``--rev``, ``review BASE``, ``--against``, ``--onto``): one check,
and one message when it names no commit, for every command. Kept free of heavy imports, since
``validate`` (a pre-commit hook) needs it. And whether two histories added one memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import InvalidInputError, NotFoundError, StoreError
from ..core.problems import git_command
from ..core.text import shown_value
from .gitenv import LITERAL_PATHS

if TYPE_CHECKING:
    from .repo import GitStore


def resolve_rev(store: GitStore, rev: str) -> str:
    """The commit ``rev`` names, or an error that says what to pass instead."""
    if not rev or rev.startswith("-"):
        raise InvalidInputError(f"{shown_value(rev)} is not a revision; give a commit, branch or tag (e.g. HEAD~1).")
    proc = store.git("rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}", check=False)
    sha = proc.stdout.decode().strip()
    if proc.returncode != 0 or not sha:
        raise NotFoundError(f"Unknown revision {shown_value(rev)}: give a commit, branch or tag (see "
                            f"'{git_command(store.root, 'log')}').")
    return sha


def shallow_parting(store: GitStore, rev: str, head: str = "HEAD") -> StoreError | None:
    """The error for ``rev`` and ``head`` without a common ancestor in a shallow clone (one
    ``--depth`` deep, as CI checks out unless told otherwise), where the history they parted in
    was left out; None in a clone with all its history: then they are unrelated."""
    if not (store.git_dirs()[1] / "shallow").exists():
        return None
    shown = head if head == "HEAD" else f"'{head}'"
    return StoreError(f"'{rev}' and {shown} have no common ancestor in this shallow clone, which left out the "
                      "history where they parted: run 'git fetch --unshallow' (in CI, check out with "
                      "fetch-depth: 0), then retry.")


def same_memory(store: GitStore, kb_path: str, base: str | None, ours: str, theirs: str) -> bool:
    """Whether the file ``kb_path`` that commit ``ours`` added since ``base`` (None: in all its
    history) and the one ``theirs`` added in commits ``ours`` lacks are one memory: both histories
    first added the very same blob (a commit replayed by a rebase, cherry-picked or squash-merged
    under another hash), whatever either side changed since."""
    mine = _first_added(store, [ours] if base is None else [ours, f"^{base}"], kb_path)
    return mine is not None and mine == _first_added(store, [theirs, f"^{ours}"], kb_path)


def added_alike(store: GitStore, path: str, ours: str, theirs: str) -> str | None:
    """The blob both ``ours`` and ``theirs`` first added at ``path`` (repository-relative) in
    commits the other lacks, when they added the same one: the version both sides' edits start
    from, which git's merge base (from before either added it) does not hold. None otherwise."""
    mine = _added_first(store, [ours, f"^{theirs}"], path)
    return mine if mine is not None and mine == _added_first(store, [theirs, f"^{ours}"], path) else None


def added_version(store: GitStore, kb_path: str, rev: str = "HEAD") -> tuple[str, str] | None:
    """(the subject of the commit that last added ``kb_path`` in ``rev``'s history, the text it
    added), None when none did."""
    out = store.git("log", "-1", "--format=%s", "--raw", "--no-abbrev", "--no-renames", "--diff-filter=A", rev, "--",
                    store.repo_path(kb_path), check=False, env=LITERAL_PATHS).stdout.decode("utf-8", "replace")
    subject, _, rest = out.partition("\n")
    fields = next((line.split() for line in rest.splitlines() if line.startswith(":")), [])
    if len(fields) < 4:
        return None
    return subject, store.objects.read("blob", fields[3]).decode("utf-8", "replace")


def _first_added(store: GitStore, revs: list[str], kb_path: str) -> str | None:
    """The blob the oldest commit among ``revs`` that added ``kb_path`` gave it."""
    return _added_first(store, revs, store.repo_path(kb_path))


def _added_first(store: GitStore, revs: list[str], path: str) -> str | None:
    proc = store.git("log", "--format=", "--raw", "--no-abbrev", "--no-renames", "--diff-filter=A",
                     "--full-history", "--reverse", *revs, "--", path, check=False, env=LITERAL_PATHS)
    for line in proc.stdout.decode("utf-8", "surrogateescape").splitlines():
        fields = line.split()
        if line.startswith(":") and len(fields) > 3:
            return fields[3]
    return None
