"""How slayer-kb starts a Python process of its own (the warm server, the background upkeep and
index compaction): with nothing from a KB or from the caller's folder on its import path
(SECURITY.md, "Child processes").

Python puts the current folder (``-m``) or ``''`` (``-c``) first on ``sys.path``, so a
``json.py`` or a ``slayer_kb/`` tracked in a cloned KB would be imported in place of the real
module, and run as the user. A child is therefore ``python -I -m MODULE ARGS``: isolated (no
current folder on its path, no ``PYTHON*`` variables, no user site folder), started in
``NEUTRAL_CWD``, with the KB named by an argument, never a ``-c`` string. When ``-I`` would not
find this install (slayer-kb reached through ``PYTHONPATH`` or the user's site folder), ``-P``
(Python 3.11+; before it, the current folder ``-m`` adds is ``NEUTRAL_CWD``) keeps the current
folder off the path instead, and only the absolute entries of ``PYTHONPATH`` are passed on: a
relative one would be read relative to wherever the child runs.

Standard library only, imported on use: the ``slayer-kb`` client starts the server.
"""

from __future__ import annotations

import os
import sys

# The root folder: the system's, where no KB and no other user can put a module.
NEUTRAL_CWD = os.path.abspath(os.sep)


def program_path(path: str) -> str:
    """``path`` (a PATH's value) with only its absolute folders. An empty, ``.`` or other relative
    entry is read against the folder a program is started in, which for git is the KB's: a cloned
    KB's tracked ``git`` (or the ``ssh`` a fetch runs) would run as the user. With none left, the
    system's default (an empty PATH is searched as the current folder)."""
    return os.pathsep.join(entry for entry in path.split(os.pathsep) if os.path.isabs(entry)) or os.defpath


def python_child(module: str, *args: str) -> tuple[list[str], dict[str, str] | None]:
    """(argv, environment or None for this process's) of a Python process running ``module``'s
    ``main()`` with ``args``; start it with ``cwd=NEUTRAL_CWD``."""
    if _isolated_finds_this_install():
        return [sys.executable, "-I", "-m", module, *args], None
    env = dict(os.environ)
    absolute = [entry for entry in env.pop("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(entry)]
    if absolute:
        env["PYTHONPATH"] = os.pathsep.join(absolute)
    flags = ["-P"] if sys.version_info >= (3, 11) else []
    return [sys.executable, *flags, "-m", module, *args], env


def _isolated_finds_this_install() -> bool:
    """Whether ``python -I`` imports the same slayer-kb and its dependencies as this process: they
    came neither through ``PYTHONPATH`` nor from the user's site folder, which ``-I`` ignores (an
    install in the environment's site-packages, editable or not, is found)."""
    if os.environ.get("PYTHONPATH"):
        return False
    user_site = getattr(sys.modules.get("site"), "USER_SITE", None)
    return not (user_site and user_site in sys.path)
