"""Why a file in ``memories/`` or ``sessions/`` is no memory or session file by its kind or name
alone, and the fix: never a rename onto a memory that is there (a backup renamed over it would put
an old version in its place)."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import KBError
from ..core.fileio import NotRegularFile, TooLarge, read_regular
from ..core.locate import MEMORIES_DIR, is_leftover
from ..core.memory import MAX_FILE_BYTES, loads
from .slayerfile import made_from, slayer_memory


def misplaced(path: Path, command: str) -> str | None:
    """Why ``path`` is no memory or session file: a folder (whose files every command skips,
    silently: a memory moved into ``memories/team/`` vanished from search while validate said
    nothing), a SLayer memory file (``1.md``: import-slayer reads it, a rename would not convert
    it), an editor's leftover or a copy beside its memory, or another name not ``.yaml``.
    ``command``: slayer-kb as a fix runs it (``problems.command``)."""
    folder = path.parent.name
    if path.is_dir() and not path.is_symlink() and path.suffix != ".yaml":
        return (f"is a folder; slayer-kb reads only the .yaml files directly in {folder}/, none in a folder: move "
                f"its files up into {folder}/, or the folder out of {folder}/")
    if path.suffix == ".yaml":
        return None
    original = path.name.partition(".yaml")[0] + ".yaml" if ".yaml" in path.name else None
    if path.suffix == ".md" and original is None and folder == MEMORIES_DIR and _front_matter(path):
        imported = f"{path.stem}.yaml"
        other = _another(path, path.parent / imported) if (path.parent / imported).exists() else ""
        if other is None:
            return (f"is SLayer's file of memory {path.stem}, which {imported} holds: slayer-kb reads only .yaml files "
                    f"in {folder}/; compare the two, then delete it")
        if other:
            return (f"is SLayer's memory {path.stem}, not the one {imported} holds ({other}): two memories under one "
                    f"id. Keep it: '{command} import-slayer FOLDER' (the folder holding {folder}/) imports it under a "
                    "new id and says which; delete this file only then")
        return (f"is a SLayer memory file, which slayer-kb does not read (a rename would not convert it): bring it in "
                f"with '{command} import-slayer FOLDER' (the folder holding {folder}/), then delete it")
    if is_leftover(path.name) or original is not None and (path.parent / original).exists():
        of = f" of {original}" if original else ""
        return (f"is a copy{of} (an editor's backup, or one --force kept), not a memory: slayer-kb reads only "
                f".yaml files in {folder}/; compare it with {original or 'the memory'}, then delete it")
    return f"slayer-kb reads only .yaml files in {folder}/; rename it to {original or path.stem + '.yaml'}"


def _another(md: Path, yaml_file: Path) -> str | None:
    """How the memory of ``yaml_file`` differs from SLayer's in ``md`` ("another created_at"), or
    None when it was made from it (``slayerfile.made_from``) or either cannot be read (the
    other problem is then said of that file)."""
    theirs = slayer_memory(md)
    try:
        ours = loads(read_regular(yaml_file, limit=MAX_FILE_BYTES).decode("utf-8"), yaml_file.stem)
    except (OSError, NotRegularFile, TooLarge, UnicodeDecodeError, KBError):
        return None
    if theirs is None or made_from(ours, theirs):
        return None
    return f"created {ours.created_at}, SLayer's {theirs.created_at}"


def _front_matter(path: Path) -> bool:
    """Does the file open with a front matter's ``---`` line, as SLayer writes a memory (a note
    of the person's own is told the rename)? Never read past a small file's size."""
    try:
        return read_regular(path, limit=MAX_FILE_BYTES).startswith(b"---")
    except (OSError, NotRegularFile, TooLarge):
        return False
