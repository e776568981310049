"""Which files of an ``export-slayer`` folder an export may replace or remove.

The folder is outside git: a file overwritten there is gone. SLayer's own storage may hold
memories of its own under the same ids, and a person may have edited an exported file. So each
export records the files it wrote with their sha256 (``memories/.slayer-kb-export.json``; SLayer
reads only ``*.md``), and the next export replaces or removes only a file it finds as recorded.
A file of a memory no longer live (forgotten since) is removed when it is as recorded: left, SLayer
would go on serving it. Any other file an export would overwrite is refused unless forced.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..core.fileio import write_whole

RECORD = ".slayer-kb-export.json"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Plan:
    """What an export does to the folder's ``memories/``: the names (``<id>.md``) it writes, the
    record it leaves (``record``: each written file's sha256, and a live memory's it could not read
    as recorded before, its file left as it is), the other files it would overwrite (``foreign``),
    and the recorded files it removes (``stale``) or leaves because they changed since (``changed``)."""

    write: dict[str, bytes]
    record: dict[str, str]
    foreign: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


def plan(folder: Path, write: dict[str, bytes], unread: frozenset[str] = frozenset()) -> Plan:
    """The plan for writing ``write`` (name -> bytes) into ``folder`` (the export's ``memories/``);
    ``unread``: the names of live memories the export could not read, whose files stay as they are."""
    recorded = _recorded(folder)
    digests = {name: _digest(data) for name, data in write.items()}
    out = Plan(write, {**{name: was for name, was in recorded.items() if name in unread}, **digests})
    recorded = {name: was for name, was in recorded.items() if name not in unread}
    for name in sorted(write):
        found = _digest_of(folder / name)
        if found is not None and found != digests[name] and found != recorded.get(name):
            out.foreign.append(name)
    for name, was in sorted(recorded.items()):
        if name in write or (found := _digest_of(folder / name)) is None:
            continue
        (out.stale if found == was else out.changed).append(name)
    return out


def finish(folder: Path, done: Plan) -> None:
    """After the files are written: the stale ones removed, the plan's record kept."""
    for name in done.stale:
        with contextlib.suppress(FileNotFoundError):
            (folder / name).unlink()
    write_whole(folder / RECORD, json.dumps(dict(sorted(done.record.items())), indent=1) + "\n",
                folder / f"{RECORD}.partial")


def _recorded(folder: Path) -> dict[str, str]:
    """The last export's record; none (an older export's folder, a record edited to nonsense):
    every file there is taken as another's, never removed."""
    try:
        data = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {name: value for name, value in data.items()
            if isinstance(name, str) and isinstance(value, str) and name.endswith(".md") and "/" not in name}


def _digest_of(path: Path) -> str | None:
    """The sha256 of the regular file there; None when nothing is there, "" for what is no
    regular file or cannot be read (a link, a folder: another's, never replaced unforced)."""
    try:
        if path.is_symlink() or not path.is_file():
            return None if not os.path.lexists(path) else ""
        return _digest(path.read_bytes())
    except OSError:
        return ""
