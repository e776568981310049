"""Where a knowledge base may be: not in git's own folder of a repository (``git init`` there
makes a second repository inside the first's ``.git``, and ``git clone`` of the first then
fails), nor inside another KB's ``memories/``, ``sessions/`` or state folder, whose files are that
KB's (``--kb kb/memories`` committed ``memories/memories/1.yaml``; a state folder with committed
files is set aside by every command). ``init`` refuses both; opening a KB refuses the second, and
the first where git finds no working tree."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..core.locate import MEMORIES_DIR, find_root
from ..core.problems import words
from ..core.session import SESSIONS_DIR
from .bounded import run_bounded
from .gitenv import git_env
from .state import STATE_DIR

KB_FOLDERS = (MEMORIES_DIR, SESSIONS_DIR, STATE_DIR)
CATALOG_DIR = "datasources"


_KB_HARM = "a knowledge base there would be git's data (and a repository made in it breaks 'git clone')"


def git_dir_refusal(root: Path, harm: str = _KB_HARM, example: str = "kb") -> str | None:
    """Why ``root`` (absolute, links resolved, perhaps not made yet) is no place for a KB (or
    what else ``harm`` says would go wrong there; ``example``: a folder name the fix suggests),
    when it is in git's own folder of a repository (a work tree's ``.git``, a bare repository, a
    linked worktree's or submodule's git folder); None otherwise."""
    probe = root
    while not probe.is_dir():  # not made yet: git answers for the nearest folder that is
        if probe.parent == probe:
            return None
        probe = probe.parent
    try:
        proc = run_bounded(["git", "rev-parse", "--is-inside-git-dir", "--absolute-git-dir"], probe, None, git_env(),
                           None)
    except FileNotFoundError:  # no git: the store says so
        return None
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if proc.returncode != 0 or len(lines) != 2 or lines[0] != "true":
        return None
    git_dir = Path(lines[1])
    where = "git's own folder" if root == git_dir else f"inside git's own folder ({git_dir})"
    if git_dir.name == ".git":  # a working tree's: the KB belongs beside the person's files
        owner, fix = f" of the repository at {git_dir.parent}", f"in the working tree, e.g. {git_dir.parent}/{example}"
    else:
        owner, fix = "", f"outside {git_dir}"
    return f"{root} is {where}{owner}, not a place for files: {harm}. Give a folder {fix}."


def kb_folder_refusal(root: Path) -> str | None:
    """Why ``root`` (absolute, links resolved) is no place for a KB, when it is in another KB's
    ``memories/``, ``sessions/`` or state folder; None otherwise. Only stats, and only of the
    folders along ``root`` so named."""
    for folder in (root, *root.parents):
        if folder.name in KB_FOLDERS and _holds_a_kb(folder.parent, folder.name):
            where = "" if folder == root else "inside "
            return (f"{root} is {where}the {folder.name}/ folder of the knowledge base at {folder.parent}: a "
                    f"knowledge base there would mix its files with that one's. Give that knowledge base's folder, "
                    f"or one outside it.")
    return None


def inside_kb_refusal(root: Path) -> str | None:
    """Why ``root`` (absolute, links resolved, perhaps not made yet) is no place for a KB when it
    is in another KB's folder elsewhere than ``kb_folder_refusal`` names (its catalog's
    ``models/``, any folder of its own): that KB's commands, run there, would find the new one,
    and its catalog would hold the new one's files. The enclosing folder is looked for as every
    command looks for one (``find_root``: up to a repository's top), and taken only when it is a
    KB (``is_made_kb``), else looked for above it; None when there is none."""
    found = find_root(str(root.parent)) if root.parent != root else None
    while found is not None and not is_made_kb(Path(found)):
        # A look-alike (a project's notes in memories/) may be inside a KB: look on above it,
        # up to its repository's top.
        above = os.path.dirname(found)
        found = None if os.path.exists(os.path.join(found, ".git")) or above == found else find_root(above)
    if found is None:
        return None
    return (f"{root} is inside the knowledge base at {found}: a knowledge base there would mix its files with "
            f"that one's. Give that knowledge base's folder, or one outside it.")


def is_made_kb(folder: Path) -> bool:
    """Whether ``folder`` is a KB by init's definition, not only one by its look (a project's
    notes in ``memories/``): it has the state folder a command made, or HEAD holds its
    ``memories/`` and a ``.gitignore`` of its own that ignores the state folder (a clone)."""
    if (folder / STATE_DIR).is_dir():
        return True
    env = git_env()
    try:
        kind = run_bounded(["git", "cat-file", "-t", f"HEAD:./{MEMORIES_DIR}"], folder, None, env, None)
        if kind.stdout != b"tree\n":
            return False
        ignore = run_bounded(["git", "cat-file", "blob", "HEAD:./.gitignore"], folder, None, env, None)
    except FileNotFoundError:  # no git: the store says so
        return False
    return ignore.returncode == 0 and ignores_state(ignore.stdout)


def ignores_state(text: bytes) -> bool:
    """Whether ``text``, a ``.gitignore``, has a line of the state folder."""
    return any(line.strip().strip(b"/") == STATE_DIR.encode() for line in text.splitlines())


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


# git's words when the repository is another user's and not in its safe.directory list.
_DUBIOUS = re.compile(r"dubious ownership in repository at '(.*)'")


def ownership_refusal(stderr: bytes) -> str | None:
    """Why git refused the repository, when it did because another user owns it: said so with the
    fix, where "not inside a git repository" sent the user to ``init`` over their KB."""
    found = _DUBIOUS.search(stderr.decode("utf-8", "replace"))
    if found is None:
        return None
    repository = found.group(1)
    return (f"git refuses the repository at {repository}: another user owns it, and git works only in "
            "repositories you own. If you trust it, run 'git config --global --add safe.directory "
            f"{words(repository)}' and retry, or run slayer-kb as the user who owns it.")


def broken_gitfile(start: Path, *, up: bool = True) -> str | None:
    """Why git finds no repository at ``start`` when the nearest ``.git`` (``start``'s own unless
    ``up``) is a file (a worktree's or submodule's) naming a git folder that is gone, with the fix:
    said as "not inside a git repository", the advice to run init there failed on the same file."""
    for folder in (start, *start.parents) if up else (start,):
        gitfile = folder / ".git"
        if gitfile.is_dir():
            return None
        if not gitfile.is_file():
            continue
        try:
            text = gitfile.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        named = text.strip().removeprefix("gitdir:").strip() if text.startswith("gitdir:") else None
        if named is None:
            return (f"{gitfile} is a file, but not the 'gitdir: PATH' line a worktree's or submodule's .git file "
                    f"holds, so git finds no repository there. Put the line back, or delete {gitfile} and run "
                    f"'slayer-kb init {words(str(folder))}' to make a new repository there.")
        gitdir = Path(folder, named)
        if gitdir.is_dir():
            return None
        return (f"{gitfile} points git at {gitdir}, which is missing (a worktree or submodule whose repository was "
                f"moved or deleted), so git finds no repository there. Put the repository back at {gitdir} (or, for "
                "a moved worktree, run 'git worktree repair' in its repository), or delete "
                f"{gitfile} and run 'slayer-kb init {words(str(folder))}' to make a new repository there.")
    return None
