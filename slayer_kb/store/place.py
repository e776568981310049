"""Where ``init`` may make a knowledge base: not in git's own folder of a repository (``git
init`` there makes a second repository inside the first's ``.git``, and ``git clone`` of the first
then fails), nor inside another KB's ``memories/``, ``sessions/`` or state folder, whose files
are that KB's (a state folder with committed files is set aside by every command)."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import InvalidInputError
from ..core.locate import MEMORIES_DIR
from ..core.session import SESSIONS_DIR
from .repo import STATE_DIR, run_git

KB_FOLDERS = (MEMORIES_DIR, SESSIONS_DIR, STATE_DIR)
CATALOG_DIR = "datasources"


def refuse_kb_place(root: Path) -> None:
    """An InvalidInputError naming the fix when ``root`` (absolute, links resolved, perhaps not
    made yet) is no place for a new KB; nothing when it is."""
    _refuse_git_dir(root)
    _refuse_kb_folder(root)


def _refuse_git_dir(root: Path) -> None:
    probe = root
    while not probe.is_dir():  # not made yet: git answers for the nearest folder that is
        if probe.parent == probe:
            return
        probe = probe.parent
    proc = run_git(["rev-parse", "--is-inside-git-dir", "--absolute-git-dir"], probe, check=False)
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if proc.returncode != 0 or len(lines) != 2 or lines[0] != "true":
        return
    git_dir = Path(lines[1])
    where = "git's own folder" if root == git_dir else f"inside git's own folder ({git_dir})"
    if git_dir.name == ".git":  # a working tree's: the KB belongs beside the person's files
        owner, fix = f" of the repository at {git_dir.parent}", f"in the working tree, e.g. {git_dir.parent}/kb"
    else:  # a bare repository's, or a submodule's or linked worktree's inside another .git
        owner, fix = "", f"outside {git_dir}"
    raise InvalidInputError(
        f"{root} is {where}{owner}, not a place for files: a knowledge base there would be git's data "
        f"(and a repository made in it breaks 'git clone'). Give a folder {fix}."
    )


def _refuse_kb_folder(root: Path) -> None:
    for folder in (root, *root.parents):
        if folder.name in KB_FOLDERS and _holds_a_kb(folder.parent, folder.name):
            where = "" if folder == root else "inside "
            raise InvalidInputError(
                f"{root} is {where}the {folder.name}/ folder of the knowledge base at {folder.parent}: a knowledge "
                f"base there would mix its files with that one's. Give a folder outside {folder.parent}."
            )


def _holds_a_kb(parent: Path, through: str) -> bool:
    """Whether ``parent`` is a KB by more than the folder ``through`` (which may be the one
    being made: a KB folder named ``memories`` in no KB is fine)."""
    if any((parent / name).is_dir() for name in (MEMORIES_DIR, CATALOG_DIR, STATE_DIR) if name != through):
        return True
    if through != MEMORIES_DIR:
        return False
    try:  # a fresh clone of a KB: no state folder yet, but memory files or init's .gitkeep
        return any(name == ".gitkeep" or name.endswith(".yaml") for name in os.listdir(parent / MEMORIES_DIR))
    except OSError:
        return False
