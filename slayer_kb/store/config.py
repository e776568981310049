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


# git follows includes this deep, no deeper (config.c's MAX_INCLUDE_DEPTH).
_INCLUDE_DEPTH = 10


def included(paths: list[str]) -> list[str]:
    """The files the config files ``paths`` include, and the files those include: every
    ``path`` of an ``[include]`` or ``[includeIf ...]`` section, whatever its condition (more
    than git reads, never less), ``~`` expanded, a relative one from the including file's folder,
    as git resolves them. Read from the files, no git process: a warm server looks at them
    before each commit (identity.py)."""
    found: list[str] = []
    seen = set(map(os.path.realpath, paths))  # one file however named: an include loop ends
    level = paths
    for _ in range(_INCLUDE_DEPTH):
        named = {real: name for path in level for name in _includes(path)
                 if (real := os.path.realpath(name)) not in seen}
        seen.update(named)
        level = list(named.values())
        found += level
    return found


def _includes(path: str) -> list[str]:
    """The paths ``path``'s include sections name, resolved (``included``); none when it cannot
    be read."""
    import re  # here: the client reads config.py for one setting, and starts lean

    try:
        with open(path, "rb") as config:
            text = config.read().decode("utf-8", "surrogateescape")
    except OSError:
        return []
    if "include" not in text.lower():
        return []
    named, including = [], False
    for line in text.splitlines():
        section = re.match(r'\s*\[\s*([^\]\s"]+)(?:\s+"(?:[^"\\]|\\.)*")?\s*\](.*)', line)
        if section:
            including = section.group(1).lower() in ("include", "includeif")
            line = section.group(2)
        value = re.match(r"(?i)\s*path\s*=(.*)", line) if including else None
        if value and (name := _value(value.group(1))):
            name = os.path.expanduser(name) if name == "~" or name.startswith("~/") else name
            named.append(os.path.join(os.path.dirname(path), name))
    return named


def _value(raw: str) -> str:
    """A config value as git reads it from the text after ``=``: quotes taken off, ``\\``
    escapes read, a comment (``#``, ``;`` outside quotes) and the white space around cut."""
    out, quoted, kept = [], False, 0
    chars = iter(raw.strip())
    for char in chars:
        if char == "\\":
            escaped = next(chars, "")
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(escaped, escaped))
        elif char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        if quoted or not char.isspace():
            kept = len(out)
    return "".join(out[:kept])
