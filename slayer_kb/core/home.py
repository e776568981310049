"""The home folder slayer-kb's per-user files live under (the state folders' key, the cache of
sentence vectors), found and never made: a command run as root with a ``HOME`` that does not
exist (a container's, a service's) made that folder, owned by root."""

from __future__ import annotations

import os
import pwd
from pathlib import Path


def home(expanded: str | None = None) -> Path | None:
    """``$HOME`` (as ``~`` expands; ``expanded``: as another environment expands it, a warm
    server's client's), when it is a folder; else None."""
    path = os.path.expanduser("~") if expanded is None else expanded
    return Path(path) if os.path.isabs(path) and os.path.isdir(path) else None


def account_home() -> Path | None:
    """The home the system gives this user (its password entry), when it is a folder the user
    owns, else ``home()``. It does not change with the environment: a key kept under ``$HOME``
    changed with it, so a command run under another ``HOME`` (a CI step, ``sudo``, a test) found
    every KB's state folder stamped under another key and set it aside each time."""
    try:
        path = pwd.getpwuid(os.geteuid()).pw_dir
        if os.path.isabs(path) and os.stat(path).st_uid == os.geteuid() and os.path.isdir(path):
            return Path(path)
    except (KeyError, OSError):  # no entry (a container's arbitrary uid), or no such folder
        pass
    return home()
