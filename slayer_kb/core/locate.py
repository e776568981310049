"""Where a knowledge base is: kept free of heavy imports (pathlib included), because every
``slayer-kb`` process needs it before it knows whether a warm server can answer for it
(relay.py)."""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # no typing import on the client's path
if TYPE_CHECKING:
    from pathlib import Path

MEMORIES_DIR = "memories"
MEMORY_LINK = "memory:"  # an entity naming another memory, which a forget of it strips
# What editors leave beside a file they save (backups, swap files, temporary copies) and the
# copies ``--force`` keeps (``x.yaml.orig``, ``x.yaml.orig.2``): never a memory, nor a change to one.
_LEFTOVER_ENDS = (".swp", ".swx", ".swo", "~", ".tmp", ".bak", ".orig")


def is_leftover(name: str) -> bool:
    """Is the file ``name`` an editor's leftover or a copy ``--force`` kept (vim's ``4913``
    write probe and Emacs's ``#x.yaml#`` autosave too)?"""
    base, _, number = name.rpartition(".")
    if number.isdigit() and base.endswith(".orig"):
        name = base
    return name.endswith(_LEFTOVER_ENDS) or name == "4913" or (name[:1] == "#" and name[-1:] == "#")


def memory_path(memory_id: str) -> str:
    """The file of memory ``memory_id``, relative to the KB: ``memories/<id>.yaml``."""
    return f"{MEMORIES_DIR}/{memory_id}.yaml"


def id_held(memories_dir: Path, number: int) -> str | None:
    """The file of ``memories_dir`` that holds the auto id ``number`` already, if any: the
    memory's ``<n>.yaml``, or SLayer's own ``<n>.md`` (a storage folder made a KB: that memory
    of the store is not imported yet, and ``import-slayer`` keeps its id)."""
    for name in (f"{number}.yaml", f"{number}.md"):
        if os.path.lexists(os.path.join(memories_dir, name)):
            return name
    return None


def memory_link(memory_id: str) -> str:
    """The entity that links memory ``memory_id``: ``memory:<id>``."""
    return MEMORY_LINK + memory_id


def linked_id(entity: str) -> str | None:
    """The id an entity ``memory:<id>`` links; None for any other entity (one of the catalog)."""
    return entity[len(MEMORY_LINK):] if entity.startswith(MEMORY_LINK) else None


def id_of_path(kb_path: str) -> str | None:
    """``memories/<id>.yaml`` -> id; anything else (``.gitkeep``, sub-folders) -> None."""
    prefix = f"{MEMORIES_DIR}/"
    if not kb_path.startswith(prefix) or not kb_path.endswith(".yaml"):
        return None
    name = kb_path[len(prefix):-5]
    return name if name and "/" not in name else None


def id_of_memory_file(path: str) -> str | None:
    """The id of a memory's file in any folder, by :func:`id_of_path`'s rule: ``kb/memories/7.yaml``
    as a person copies it from a pull request, the path git hands a merge driver."""
    return id_of_path("/".join(path.rsplit("/", 2)[-2:]))


def named_kb(kb_path: str | None) -> str | None:
    """The KB folder the caller named: ``--kb``, else ``$SLAYER_KB``; None when neither is set (the
    enclosing KB is then looked for; an empty ``$SLAYER_KB`` counts as unset). A blank one is refused
    with ValueError naming it: taken as unset, ``--kb ""`` would quietly pick the KB the command
    runs in (an unset shell variable in ``--kb "$KB"``), and as a path it named the current folder
    plus spaces."""
    if kb_path is not None:
        if not kb_path.strip():
            raise ValueError(f"--kb is blank ({kb_path!r}): give the folder of a knowledge base, e.g. '--kb ./kb', "
                             "or drop --kb to use $SLAYER_KB or the KB enclosing the current folder.")
        return kb_path
    # Empty is unset, as a shell's `SLAYER_KB= slayer-kb ...` means; blanks are a mistake.
    env = os.environ.get("SLAYER_KB") or None
    if env is not None and not env.strip():
        raise ValueError(f"SLAYER_KB is blank ({env!r}): set it to the folder of a knowledge base, or unset it "
                         "('unset SLAYER_KB') to use the KB enclosing the current folder.")
    return env


def find_root(start: str) -> str | None:
    """The nearest enclosing folder of ``start`` (resolved) that looks like a KB: it has
    memories/ or a SLayer catalog (datasources/); the search stops at a git repository's top,
    which is taken when it has a file named memories (the KB then says what is wrong)."""
    candidate = os.path.realpath(start)
    while True:
        if os.path.isdir(os.path.join(candidate, MEMORIES_DIR)) or os.path.isdir(os.path.join(candidate, "datasources")):
            return candidate
        if os.path.exists(os.path.join(candidate, ".git")):
            # A file in memories/' place at the repository's top is a KB gone wrong: opening it
            # says so, where "no knowledge base here" would send the user looking elsewhere.
            return candidate if os.path.lexists(os.path.join(candidate, MEMORIES_DIR)) else None
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return None
        candidate = parent


def find_kb_root(start: Path) -> Path | None:
    """``find_root`` for a Path."""
    from pathlib import Path

    found = find_root(os.fspath(start))
    return Path(found) if found is not None else None


def not_a_kb(path: str) -> str:
    """Why ``path``, given as a KB's folder, is none (a file, a symlink loop, missing), with only
    the advice that can work: ``init`` where the folder could be made."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            return f"No knowledge base at {path}: {exc.strerror}; give the folder of a knowledge base (it holds memories/)."
    else:
        return f"No knowledge base at {path}: it is a file, not a folder; give the folder of a knowledge base (it holds memories/)."
    from .fileio import refuses_folders
    from .problems import shell_word  # only here: the client's path stays free of it

    parent = os.path.dirname(path)
    while parent != os.path.dirname(parent) and not os.path.isdir(parent):
        parent = os.path.dirname(parent)
    if refuses_folders(parent) is None:
        return f"No knowledge base at {path}: no such folder; create one with 'slayer-kb init {shell_word(path)}'."
    return f"No knowledge base at {path}: no such folder, and {parent} takes none; give the folder of a knowledge base."
