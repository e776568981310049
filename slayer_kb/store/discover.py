"""Where a KB's repository is and keeps its files, read from the folders themselves where the case
is plain: every command opens a KB, and asking git (``rev-parse``) was a process of 1-2 ms of
CPU each time, the only one a search or a ``get`` started.

Plain is a work tree with its own ``.git`` folder, owned by this user, on the file system of
the KB's folder, whose config files name no work tree, bareness, extension or include, and no
setting from the environment that changes how git finds a repository. Anything else (a linked
worktree's or a submodule's ``.git`` file, another user's repository, a ``.git`` of another
kind, a KB inside a git folder, a path not in UTF-8, no repository at all) is left to git, which says what it
finds or why it refuses."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from . import config

# What makes git look for a repository, or read its config, otherwise than the files here say.
_ELSEWHERE = ("GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CONFIG_PARAMETERS",
              "GIT_CONFIG_COUNT")
# Words of a config file that change where a repository keeps its files or how it is read.
_UNPLAIN = (b"worktree", b"bare", b"extensions", b"objectformat", b"include")


def where(root: Path) -> list[str] | None:
    """What ``git rev-parse --show-toplevel`` and ``repo._WHERE`` print in ``root`` (absolute,
    links resolved), a line each, for a plain repository; None: ask git."""
    if not sys.platform.startswith("linux") or any(os.environ.get(name) is not None for name in _ELSEWHERE):
        return None
    try:
        # git names paths in UTF-8: a name that is not (or that Python's file names, ASCII with
        # its UTF-8 mode off, cannot hold) is git's to give, as the rest of the KB's paths are.
        str(root).encode()
    except UnicodeEncodeError:
        return None
    try:
        device = os.stat(root).st_dev
        folder = root
        while not os.path.lexists(folder / ".git"):
            if _is_git_dir(folder) or folder.parent == folder:  # in a git folder, or no repository
                return None
            folder = folder.parent
            if os.stat(folder).st_dev != device:  # git stops at a file system's edge
                return None
        dotgit = folder / ".git"
        mode = os.lstat(dotgit).st_mode
        if not stat.S_ISDIR(mode) or not _is_git_dir(dotgit) or not _owned(folder, dotgit) or not _plain(dotgit):
            return None
    except OSError:
        return None
    return [str(folder), str(dotgit / "objects"), "sha1", str(dotgit), str(dotgit), str(dotgit / "index")]


def _is_git_dir(folder: Path) -> bool:
    return (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir()


def _owned(*folders: Path) -> bool:
    # git refuses another user's repository (safe.directory): its refusal is git's to give.
    return all(os.stat(folder).st_uid == os.geteuid() for folder in folders)


def _plain(dotgit: Path) -> bool:
    git = config.program("git")
    if git is None:
        return False
    for path in config.files(str(dotgit), str(dotgit), git):
        try:
            with open(path, "rb") as file:
                text = file.read().lower()
        except FileNotFoundError:
            continue
        # What git init writes: not bare, the first repository format.
        text = text.replace(b"bare = false", b"").replace(b"repositoryformatversion = 0", b"")
        if any(word in text for word in _UNPLAIN) or b"repositoryformatversion" in text:
            return False
    return True
