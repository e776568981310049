"""Who a commit names: an author given as ``Name <email>`` (``--author``), the neutral identity
a machine with no git identity commits under, so that a fresh machine can still commit, and git's
own identity, read again whenever what it is read from changed (docs/server.md, "Who commits");
with it, whether the commits slayer-kb writes are signed (``commit.gpgSign``), which ``git
commit-tree`` does not read itself."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import InvalidInputError, StoreError
from ..core.text import shown_value
from . import config

if TYPE_CHECKING:
    from subprocess import CompletedProcess

_AUTHOR = re.compile(r"\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>]*)>\s*\Z")
FALLBACK = ("slayer-kb", "slayer-kb@localhost")
_KEYS = r"user\.(name|email)|commit\.gpgsign"
# What git reads its identity from, besides the GIT_* variables and the config files.
_VARIABLES = ("HOME", "XDG_CONFIG_HOME", "EMAIL", "USER", "LOGNAME", "PATH")

# What git's answer depends on: the variables above, then each config file's signature.
Sources = tuple[tuple[tuple[str, str], ...], tuple[tuple[int, int, int] | None, ...]]


def parse_author(author: str) -> tuple[str, str]:
    """``(name, email)`` of ``author``, refused with the fix when it is not ``Name <email>`` in
    printable text: a bad value given, not a refusal of git's (``invalid_input``, not ``store``)."""
    match = _AUTHOR.match(author)
    if not match or not match.group("name") or not author.isprintable():  # git log would print a control raw
        raise InvalidInputError(f"Author {shown_value(author)} is not of the form 'Name <email>' in printable text (no "
                                "control or invisible characters): give one such as 'Ann Lee <ann@example.com>' "
                                "(--author, or SLAYER_KB_AUTHOR).")
    return match.group("name"), match.group("email")


def fallback_identity(config: bytes, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a commit needs beyond ``environ`` so that git never refuses it for want of
    an identity: the neutral one for each of user.name and user.email that neither git's config
    (``config``: ``git config -z --get-regexp`` of both, the last value of each winning, as ``git
    config KEY`` answers) nor ``environ`` (``GIT_AUTHOR_NAME``...) sets."""
    values = _values(config)
    env: dict[str, str] = {}
    for name, var, fallback in ((b"user.name", "NAME", FALLBACK[0]), (b"user.email", "EMAIL", FALLBACK[1])):
        configured = (values.get(name) or b"").strip()
        for role in ("AUTHOR", "COMMITTER"):
            if not configured and f"GIT_{role}_{var}" not in environ:
                env[f"GIT_{role}_{var}"] = fallback
    return env


def signs(config: bytes) -> bool:
    """Whether ``commit.gpgSign`` in ``config`` (as ``fallback_identity`` takes it) is true, as git
    reads a boolean (``git_config_bool``); a value git would stop on stops the commit, with the fix."""
    value = _values(config).get(b"commit.gpgsign", b"")
    if value is None:  # the name alone, with no "=": true
        return True
    word = value.lower()
    if word in (b"true", b"yes", b"on"):
        return True
    if word in (b"false", b"no", b"off", b""):
        return False
    number = _INTEGER.fullmatch(value)
    if number:
        digits, unit = number.group("digits"), number.group("unit").lower()
        # As C's strtoimax with base 0 reads it (0x: hex, a leading 0: octal), then k, m or g.
        amount = int(digits, 16 if digits[1:2] in (b"x", b"X") else 8 if digits.startswith(b"0") else 10)
        # git takes the value as an int: one it cannot hold is as bad as a word it does not know.
        if amount <= _INT_MAX // _UNITS[unit]:
            return amount != 0
    raise StoreError(f"commit.gpgSign is {shown_value(value.decode('utf-8', 'replace'))} in git's config, which git "
                     "reads as neither true nor false, and stops on: set it to true or false (git config "
                     "commit.gpgSign true), or remove it (git config --unset commit.gpgSign).")


# An integer as git's boolean takes one: C's white space first, a sign, decimal, 0x hex or 0 octal.
_INTEGER = re.compile(rb"[ \t\n\v\f\r]*[+-]?(?P<digits>0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)(?P<unit>[kKmMgG]?)")
_UNITS = {b"": 1, b"k": 1 << 10, b"m": 1 << 20, b"g": 1 << 30}
_INT_MAX = (1 << 31) - 1


def _values(config: bytes) -> dict[bytes, bytes | None]:
    """Each key of ``git config -z --get-regexp`` output and its last value (None: the name alone,
    with no ``=``)."""
    values: dict[bytes, bytes | None] = {}
    for item in config.split(b"\0"):
        key, newline, value = item.partition(b"\n")
        values[key] = value if newline else None
    return values


def sources(git_dir: Path, common_dir: Path) -> Sources:
    """What who commits depends on as of now: the environment, and the signature (mtime_ns, size,
    inode) of every config file git may read it from, included ones too. A warm server runs one command after
    another in one process, and any of these may change between two."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("GIT_") or k in _VARIABLES))
    # git is looked for on PATH each time, not once per PATH value: a git installed or upgraded
    # in a PATH folder moves the system file beside it with the same PATH.
    read = config.files(str(git_dir), str(common_dir), config.program("git"))
    # A file those include (a team's signing settings kept apart) changes what git says as well.
    return env, tuple(map(_signature, [*read, *config.included(read)]))


def _signature(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


class Identity:
    """Who commits: call it for the environment a commit needs (``fallback_identity``), or
    ``committing`` for that and whether to sign. Read by ``git config``, remembered with the
    ``sources`` it was read under, read again whenever they differ: a warm server runs one command
    after another in one process."""

    def __init__(self, git: Callable[..., CompletedProcess[bytes]], git_dirs: Callable[[], tuple[Path, Path]]) -> None:
        self._git, self._git_dirs = git, git_dirs
        self._read: tuple[Sources, dict[str, str], bool] | None = None

    def __call__(self) -> dict[str, str]:
        return self.committing()[0]

    def committing(self) -> tuple[dict[str, str], bool]:
        """The environment a commit needs, and whether it is to be signed (``signs``)."""
        now = sources(*self._git_dirs())
        read = self._read
        if read is None or read[0] != now:
            read = self._take(now, self._config(_KEYS))
        return read[1], read[2]

    def with_config(self, keys: str, now: Sources) -> bytes:
        """``git config -z --get-regexp`` of the keys the regexp ``keys`` matches, and of who
        commits, in one process (a save asks both; a git process is 1-2 ms of CPU); ``now``:
        the ``sources`` the caller looked at before asking."""
        found = self._config(f"{keys}|{_KEYS}")
        self._take(now, found)
        return found

    def _config(self, keys: str) -> bytes:
        return self._git("config", "-z", "--get-regexp", f"^({keys})$", check=False).stdout

    def _take(self, now: Sources, config: bytes) -> tuple[Sources, dict[str, str], bool]:
        # Asked after ``now`` was looked at: a change in between makes the next look differ.
        self._read = (now, fallback_identity(config, os.environ), signs(config))
        return self._read
