"""What a relayed command committed, kept per request so that its client can tell after the
server died (docs/server.md, "Exactly once").

Every command a client hands the warm server carries a random request id. While the server runs
a write for it, each commit the store makes is noted in ``requests/<id>.json`` in the state
folder, with the new commit's id, its parent, its message and the paths it adds, changes and
deletes, *before* the ``update-ref`` that publishes it (the crash journal names the request too).
When the command has returned, its output is added. A client whose server died mid-command takes
the KB lock (which finishes a published commit), reads the record and asks git whether each
commit it names is in HEAD's history: a commit object that was never published is reachable from
nothing, so the answer holds whenever the server died, even inside ``git update-ref``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import StoreError
from ..core.fileio import write_whole

if TYPE_CHECKING:
    from .objects import ObjectStore

FOLDER = "requests"
# The ids clients make: 32 hex digits (anything else names no file).
_ID = re.compile(r"[0-9a-f]{32}\Z")
# A record nobody came for (the client died too) is removed after this long.
STALE_SECONDS = 24 * 3600.0


@dataclass
class Landing:
    """One commit a request made: ``paths`` maps each KB-relative path to ``A`` (added), ``M``
    (changed) or ``D`` (deleted)."""

    commit: str
    parent: str | None
    message: str
    paths: dict[str, str]


@dataclass
class Record:
    """A request's commits, in order, and once its command returned, its exit code and output
    (``chunks``: (1 for stdout or 2 for stderr, bytes), as written)."""

    commits: list[Landing] = field(default_factory=list)
    code: int | None = None
    chunks: list[tuple[int, bytes]] | None = None


def valid(request: object) -> bool:
    return isinstance(request, str) and _ID.match(request) is not None


def _path(state: Path, request: str) -> Path:
    return state / FOLDER / f"{request}.json"


def read(state: Path, request: str) -> Record | None:
    """The record of ``request``, None when it committed nothing (or the id is not one)."""
    if not valid(request):
        return None
    try:
        data = json.loads(_path(state, request).read_text(encoding="utf-8"))
        commits = [Landing(c["commit"], c["parent"], c["message"], dict(c["paths"])) for c in data["commits"]]
        chunks = data.get("chunks")
        return Record(commits, data.get("code"),
                      None if chunks is None else [(int(fd), bytes.fromhex(hexed)) for fd, hexed in chunks])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        # Torn by a kill while it was written: that was before the update-ref of its last commit,
        # whose parent is then the tip; the commits before it are named in it no more.
        return Record()


def _write(state: Path, request: str, data: dict[str, Any]) -> None:
    folder = state / FOLDER
    folder.mkdir(exist_ok=True, mode=0o700)
    path = _path(state, request)
    write_whole(path, json.dumps(data))


def note(
    state: Path, request: str, objects: ObjectStore, prefix: str, commits: tuple[str | None, str | None, str],
    message: str, blobs: Mapping[str, str | None],
) -> None:
    """Add the commit ``commits`` = (parent, parent's tree, new commit) that writes ``blobs``
    ({KB path: blob, None to delete}) to the record of ``request``, before it is published."""
    old, old_tree, new = commits
    before = objects.blobs_at(old_tree, [prefix + path for path in blobs])
    paths = {path: "D" if blob is None else ("M" if before[prefix + path] else "A") for path, blob in blobs.items()}
    record = read(state, request) or Record()
    landed = [*record.commits, Landing(new, old, message, paths)]
    try:
        _write(state, request, {"commits": [vars(c) for c in landed]})
    except OSError as exc:
        raise StoreError(f"Cannot write in {state}: {exc.strerror}; nothing was saved.") from None


def finish(state: Path, request: str, code: int, chunks: list[tuple[int, bytes]]) -> None:
    """Add the command's exit code and output to the record of ``request``, if it committed."""
    record = read(state, request)
    if record is None or not record.commits:
        return
    _write(state, request, {"commits": [vars(c) for c in record.commits], "code": code,
                            "chunks": [[fd, data.hex()] for fd, data in chunks]})


def drop(state: Path, request: str) -> None:
    if valid(request):
        with contextlib.suppress(OSError):
            _path(state, request).unlink()


def drop_stale(state: Path) -> None:
    """Remove the records no client came for within STALE_SECONDS."""
    try:
        entries = list(os.scandir(state / FOLDER))
    except OSError:
        return
    limit = time.time() - STALE_SECONDS
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.stat(follow_symlinks=False).st_mtime < limit:
                os.unlink(entry.path)
