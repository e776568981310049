"""git operations a person has not concluded (a merge, rebase, am, cherry-pick, revert, bisect):
while one is in progress, slayer-kb writes nothing.

A commit of ours in the middle of one would be folded into it, or lost: during a merge, the
person's next ``git commit`` makes a merge commit of whatever the index holds; a rebase or a
bisect moves HEAD again and leaves our commit behind. git marks each operation with a file or
folder in the work tree's own git dir (``git rev-parse --git-path MERGE_HEAD``); looking costs
seven ``lstat`` calls (10-80 us, the latter on a loaded machine). The messages use git's own
words where it has some.
"""

from __future__ import annotations

import os
from pathlib import Path

# (marker in the git dir, what git calls the state, the way out), in the order checked: a rebase
# stopped on a conflict may hold other markers too, and names the command to run (a rebase's goes
# on with the KB's merge driver, which a plain `git rebase --continue` would not use).
_OPERATIONS = (
    ("rebase-merge", "You are in the middle of a rebase (rebase-merge exists).",
     "Conclude it with `slayer-kb rebase --continue` (git's, with the KB's merge driver) or abort it "
     "with `slayer-kb rebase --abort`"),
    ("rebase-apply/applying", "You are in the middle of an am session (rebase-apply exists).",
     "Conclude it with `git am --continue` or abort it with `git am --abort`"),
    ("rebase-apply", "You are in the middle of a rebase (rebase-apply exists).",
     "Conclude it with `slayer-kb rebase --continue` (git's, with the KB's merge driver) or abort it "
     "with `slayer-kb rebase --abort`"),
    ("MERGE_HEAD", "You have not concluded your merge (MERGE_HEAD exists).",
     "Conclude it with `git commit` or abort it with `git merge --abort`"),
    ("CHERRY_PICK_HEAD", "You have not concluded your cherry-pick (CHERRY_PICK_HEAD exists).",
     "Conclude it with `git cherry-pick --continue` or abort it with `git cherry-pick --abort`"),
    ("REVERT_HEAD", "You have not concluded your revert (REVERT_HEAD exists).",
     "Conclude it with `git revert --continue` or abort it with `git revert --abort`"),
    # A bisect checks out old commits on a detached HEAD: a commit made there is lost at
    # `git bisect reset`.
    ("BISECT_LOG", "You are currently bisecting (BISECT_LOG exists).",
     "End it with `git bisect reset`"),
)


def unfinished_operation(git_dir: Path) -> str | None:
    """What to tell a person whose work tree is in the middle of a git operation, else None."""
    folder = os.fspath(git_dir)
    for marker, state, way_out in _OPERATIONS:
        if os.path.lexists(os.path.join(folder, marker)):
            return f"{state} {way_out}, then run the command again."
    return None


def rebase_folder(git_dir: Path) -> Path | None:
    """The folder where git keeps the rebase in progress (its merge or apply backend's), or None."""
    return next((git_dir / name for name in ("rebase-merge", "rebase-apply") if (git_dir / name).exists()), None)


def rebase_tips(git_dir: Path) -> tuple[str, str] | None:
    """(the commit the rebase in progress goes onto, the branch's commit when it began), as git
    keeps them; None when no rebase is in progress (or an am session's folder holds neither)."""
    folder = rebase_folder(git_dir)
    if folder is None:
        return None
    try:
        onto, began = ((folder / name).read_text(encoding="utf-8").strip() for name in ("onto", "orig-head"))
    except OSError:
        return None
    return onto, began


def detached_head(git_dir: Path) -> str | None:
    """What to tell a person whose HEAD is detached (a commit checked out, no branch), after a
    commit of ours: it is on no branch, and ``git switch`` elsewhere leaves it behind unnamed.
    Not refused: a detached HEAD is a choice (a CI checkout, a look at an old commit)."""
    try:
        with open(os.path.join(os.fspath(git_dir), "HEAD"), "rb") as head:
            attached = head.read(5) == b"ref: "
    except OSError:  # git reads it too: it will say what is wrong
        return None
    if attached:
        return None
    return ("HEAD is detached (no branch is checked out), so this commit is on no branch and is lost from sight "
            "once you check out another: keep it with `git switch -c <name>` (a new branch here), or `git switch "
            "<branch>` before the next command to commit there.")


def rebase_step(git_dir: Path) -> tuple[tuple[int, int] | None, ...]:
    """How far git's rebase (its merge backend) has got, as the identity of the files it rewrites
    at each step (its to-do list and the list done; each rewrite is a new file): it changes when a
    run started the rebase or picked a commit, and not when a run failed before either."""
    marks: list[tuple[int, int] | None] = []
    for name in ("git-rebase-todo", "done"):
        try:
            status = os.stat(os.path.join(os.fspath(git_dir), "rebase-merge", name))
        except OSError:
            marks.append(None)
        else:
            marks.append((status.st_ino, status.st_mtime_ns))
    return tuple(marks)
