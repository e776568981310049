"""The highest auto id a branch's history has held, read without diffing every commit.

Auto ids are never given twice, so the next one counts on from the highest any memory file on the
branch's history ever had, forgotten ones included. Diffing each commit's ``memories/`` folder
against its parent's costs commits times files: a fresh clone's first save of a KB of 30,000
commits spent 46 s of CPU in that ``git log``. So each commit slayer-kb makes ends with a trailer
(idtrailer.py) that names the figure for the commit and everything before it, with the commit's
one parent and its tree::

    Highest-auto-id: 57 (parent 1a2b3c4d5e6f, tree 0f1e2d3c4b5a)

Reading a branch's figure is then one ``git log`` of its commits' headers and trailers (no tree is
read), walked from the tip: a commit whose trailer still describes it (the one parent and the tree
it records) stops the walk there; the commits without one (a person's, a merge, one an older
version made, or one rebased, amended or cherry-picked since its trailer was written) are walked
through, and those of one parent are diffed, in one ``git diff-tree``. A trailer is a cache: a
wrong parent or tree only costs its commit a diff.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import StoreError
from ..core.ids import highest_auto_id
from ..core.locate import MEMORIES_DIR, id_of_path
from .gitenv import LITERAL_PATHS
from .idtrailer import KEY, told

if TYPE_CHECKING:
    from .repo import GitStore


def complete(store: GitStore) -> bool:
    """Whether this repository holds the branch's whole history: not a shallow clone (``--depth``),
    no grafts. A figure read from part of it may be low, and is never written into a commit."""
    common = store.git_dirs()[1]
    return not (common / "shallow").exists() and not (common / "info" / "grafts").exists()


def history_top(store: GitStore, head: str, since: str | None = None) -> int | None:
    """The highest auto id the memory files added on ``head``'s history held (0: none), leaving out
    what ``since``'s history holds (the caller knows that figure); None when ``since`` is no
    commit of this repository any more (a reset, then gc): ask again without it. Commits are read
    as they are, whatever ``git replace`` says of them."""
    if since is not None:
        walked = store.added_on_linear_history(since, head, f"{MEMORIES_DIR}/")
        if walked is not None:  # a few commits of one parent each: their trees, no process
            return highest_auto_id(i for path in walked if (i := id_of_path(path)) is not None)
    # Trailers as git reads them by default, whatever a user's separators and comment character.
    proc = store.git("--no-replace-objects", "-c", "trailer.separators=:", "-c", "core.commentChar=#", "log",
                     f"--format=%H %P%x1f%T%x1f%(trailers:key={KEY},valueonly)%x00", head,
                     *([f"^{since}"] if since else []), "--", check=False)
    if proc.returncode != 0:
        if since is None:
            raise StoreError(f"git log cannot read the branch's history: {proc.stderr.decode('utf-8', 'replace').strip()}")
        return None
    commits: dict[str, tuple[list[str], str, str]] = {}
    for record in proc.stdout.decode("utf-8", "replace").split("\0"):
        if fields := record.strip("\n"):
            ids, tree, said = fields.split("\x1f", 2)  # a trailer's own \x1f stays in ``said``
            commit, *parents = ids.split()
            commits[commit] = (parents, tree, said.strip())
    top, undescribed, stack, seen = 0, [], [head], set()
    while stack:
        commit = stack.pop()
        if commit in seen or commit not in commits:  # not in the log: ``since`` covers it
            continue
        seen.add(commit)
        parents, tree, said = commits[commit]
        figure = told(said, store.prefix, parents, tree)
        if figure is not None:
            top = max(top, figure)
            continue
        if len(parents) <= 1:  # a merge adds nothing of its own (as ``git log`` shows it)
            undescribed.append(commit)
        stack.extend(parents)
    return max(top, _added_top(store, undescribed))


def _added_top(store: GitStore, commits: list[str]) -> int:
    """The highest auto id of the memory files these commits of one parent (or none) added."""
    if not commits:
        return 0
    out = store.git("--no-replace-objects", "diff-tree", "--stdin", "--root", "-r", "--no-renames", "--diff-filter=A",
                    "--name-only", "-z", "--", store.repo_path(f"{MEMORIES_DIR}/"),
                    input="".join(f"{c}\n" for c in commits).encode(), env=LITERAL_PATHS).stdout.decode("utf-8", "surrogateescape")
    # The output is each commit's id, then the paths it added; only paths start with the prefix.
    paths = (name.strip("\n")[len(store.prefix):] for name in out.split("\0") if name.strip("\n").startswith(store.prefix))
    return highest_auto_id(i for path in paths if (i := id_of_path(path)) is not None)
