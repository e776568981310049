"""Where the per-user cache of sentence vectors lives (``sentences.py``) and how large it may
grow, apart from the cache itself: every command that opens a KB checks the settings first,
and most never open the cache (a ``get`` or ``show`` would otherwise import sqlite3 for
nothing)."""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from pathlib import Path

from ..core.errors import InvalidInputError
from ..core.home import home
from ..core.inputs import whole_number
from . import switches

# The cache's bound, SLAYER_KB_CACHE_MAX_MB's default (megabytes of 10^6 bytes): a
# 100,000-memory KB's texts take about 1.0 GB (9.8 KB a text: its whole vector, twice, and
# its sentences'), so this keeps one such KB and as much again of edits, old keys and other
# KBs before anything is evicted (eviction.py).
DEFAULT_MAX_MB = 2048
# Its most: a petabyte, more than any disk holds (a number past floats' range was a traceback).
MOST_MAX_MB = 1_000_000_000


def folder(env: Mapping[str, str] | None = None) -> Path:
    """The cache's folder: ``SLAYER_KB_CACHE``, else ``$XDG_CACHE_HOME/slayer-kb``, else
    ``~/.cache/slayer-kb``. A relative ``SLAYER_KB_CACHE`` is refused: it named another folder
    in each folder a command ran in (a server runs each in its client's), one inside the KB's
    work tree among them. A relative ``XDG_CACHE_HOME`` is ignored, as the XDG spec says.
    ``env``: the environment to read, else the settings this thread goes by (switches.py)."""
    env = switches.environ() if env is None else env
    chosen = env.get("SLAYER_KB_CACHE")
    if chosen:
        path = Path(_expanded(chosen, env))
        if not path.is_absolute():
            raise InvalidInputError(
                f"SLAYER_KB_CACHE is {chosen!r}, a relative path: set it to an absolute path (such as "
                f"{os.path.expanduser('~/.cache/slayer-kb')}) or unset it (the default is "
                "$XDG_CACHE_HOME/slayer-kb, else ~/.cache/slayer-kb).")
        return path
    base = env.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(_expanded("~", env), ".cache")
    return Path(base) / "slayer-kb"


def max_bytes(env: Mapping[str, str] | None = None) -> int:
    """The bound of the cache's file in bytes: ``SLAYER_KB_CACHE_MAX_MB`` megabytes, else
    ``DEFAULT_MAX_MB``; anything but a whole number from 1 to ``MOST_MAX_MB`` is refused, naming
    the fix. ``env``: as ``folder``'s."""
    env = switches.environ() if env is None else env
    return whole_number("SLAYER_KB_CACHE_MAX_MB", DEFAULT_MAX_MB, "megabytes", MOST_MAX_MB, env=env) * 1_000_000


def _expanded(path: str, env: Mapping[str, str]) -> str:
    """``path`` with its leading ``~`` as ``env``'s process expands it, by its ``HOME``: a server
    checks a client's setting (``Runner.goes_beside``), whose home may not be the server's."""
    if path == "~" or path.startswith("~/"):
        # Without HOME a process takes its user's home from the password database, as
        # expanduser does: never from os.environ, which may hold another process's settings.
        home = env["HOME"] if "HOME" in env else pwd.getpwuid(os.getuid()).pw_dir
        return (home.rstrip("/") + path[1:]) or "/"
    return os.path.expanduser(path)  # ~user/...: the password database, whatever HOME says


def made() -> Path:
    """``folder()``, made (mode 0700) if need be, but never a home folder that does not exist
    (core/home.py): then OSError, and the cache is not kept. A folder set by a variable is made
    whole."""
    env = switches.environ()
    where = folder(env)
    chosen = env.get("SLAYER_KB_CACHE") or env.get("XDG_CACHE_HOME", "")
    expanded = _expanded("~", env)
    if not os.path.isabs(_expanded(chosen, env)) and home(expanded) is None:
        raise FileNotFoundError(f"no home folder {expanded} to keep {where} in")
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    return where
