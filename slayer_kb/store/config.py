"""One git setting read with nothing heavy imported: the ``slayer-kb`` client asks for
``slayer-kb.server`` before it knows whether a warm server answers (daemon/relay.py).

Most KBs never set it, and asking ``git config`` costs every relayed command a process (and the
import of ``subprocess``). So the files git would read are looked at first: when none of them
names both the setting's section and its name, nor includes another file, the setting is unset,
as git would say; otherwise, or whenever it is unsure which files git reads, git is asked."""

from __future__ import annotations

import os
import sys

from ..core.children import program_path
from .gitenv import git_env

# What makes git read config from somewhere these files do not say: given on its command line
# (``git -c``, ``GIT_CONFIG_COUNT``) or a repository found otherwise. GIT_DIR and the like are
# not: git is asked without them (gitenv.py).
_OTHER_SOURCES = ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
                  "GIT_CEILING_DIRECTORIES")


def setting(root: str, key: str, kind: str = "") -> str:
    """The value of ``key`` in git's config as seen from ``root`` (the repository's, then the
    user's), as git's ``--type`` ``kind`` reads it when given, or "" when it is not set or git
    cannot say."""
    if _surely_unset(root, key):
        return ""
    import subprocess  # here: most commands never need it, and the client starts lean

    typed = [f"--type={kind}"] if kind else []
    try:
        found = subprocess.run(["git", "config", *typed, "--get", key], cwd=root, env=git_env(),
                               capture_output=True, text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return found.stdout


def _surely_unset(root: str, key: str) -> bool:
    """True when no config file git may read from ``root`` mentions both the section and the
    name of ``key`` (a setting is a name under its section's header: ``core.autocrlf`` is unset
    in a file with ``[core]`` but no ``autocrlf``), nor an include:
    then ``git config --get`` would print nothing. Every file that could count is read (more
    than git reads is harmless: it only sends the question to git); False wherever that set is
    not known (not Linux, no HOME, another repository named by the environment, ``root`` not a
    repository's top folder)."""
    section, _, name = key.lower().rpartition(".")
    home = os.environ.get("HOME")
    # A subsection (remote.origin.url) is spelt [remote "origin"] in a file: not looked for here.
    if not sys.platform.startswith("linux") or not home or not section or "." in section or any(
            os.environ.get(name) is not None for name in _OTHER_SOURCES):
        return False
    dotgit = os.path.join(root, ".git")
    # git takes .git for a repository when these are there; else it looks further up.
    if not all(os.path.isdir(os.path.join(dotgit, part)) for part in ("objects", "refs")) or not os.path.isfile(
            os.path.join(dotgit, "HEAD")):
        return False
    git = program("git")
    if git is None:
        return False
    wanted = section.encode(), name.encode()
    for path in files(dotgit, dotgit, git):
        try:
            with open(path, "rb") as config:
                text = config.read().lower()
        except FileNotFoundError:
            continue
        except OSError:  # unreadable, a folder: git decides
            return False
        if all(part in text for part in wanted) or b"include" in text:
            return False
    return True


def files(git_dir: str, common_dir: str, git: str | None) -> list[str]:
    """Every file git (the program ``git``, as PATH finds it) may read config from in the
    repository whose git folders are ``git_dir`` (its worktree's) and ``common_dir`` (the one
    its worktrees share), as the environment says: more than git reads, never less."""
    home = os.environ.get("HOME")
    found = [os.path.join(common_dir, "config"), os.path.join(git_dir, "config.worktree"),
             *((os.path.join(home, ".gitconfig"), os.path.join(home, ".config", "git", "config")) if home else ()),
             *(os.path.join(os.environ[name], "git", "config") for name in ("XDG_CONFIG_HOME",) if os.environ.get(name)),
             *(os.environ[name] for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG") if os.environ.get(name))]
    # The system's file, unless GIT_CONFIG_NOSYSTEM says true as git reads a boolean.
    if os.environ.get("GIT_CONFIG_NOSYSTEM", "").lower() not in ("1", "true", "yes", "on"):
        found += ["/etc/gitconfig", *([os.path.join(os.path.dirname(os.path.dirname(git)), "etc", "gitconfig")] if git else []),
                  *(os.environ[name] for name in ("GIT_CONFIG_SYSTEM",) if os.environ.get(name))]
    return found


def program(name: str) -> str | None:
    """The real path of the program ``name`` that PATH finds, as git is run: its absolute folders
    only (no shutil: the client starts lean)."""
    for folder in program_path(os.environ.get("PATH", os.defpath)).split(os.pathsep):
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.realpath(candidate)
    return None
