"""Objects read by one ``git cat-file --batch`` (a process per object is tens of ms on a busy
machine), for the store (repo.py) and the object database's packed objects (objects.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Protocol

from ..core.errors import StoreError
from .objects import Named


class Git(Protocol):
    def __call__(self, *args: str, input: bytes) -> subprocess.CompletedProcess[bytes]: ...


def cat_files(git: Git, shallow: Path, names: list[str], missing_ok: bool = False) -> list[Named | None]:
    """``(id, kind, data)`` of each object ``names`` names (an id, or ``REV:PATH``; no newline),
    from one ``git cat-file --batch`` (a process per object is tens of ms on a busy machine);
    None for one git has not (no such file at that commit) when ``missing_ok``. ``shallow``: the
    file a shallow clone has (a missing object is then one it left out)."""
    # A path git gave as bytes that are not UTF-8 comes back to it as those bytes.
    out = git("cat-file", "--batch",
              input="".join(name + "\n" for name in names).encode("utf-8", "surrogateescape")).stdout
    found: list[Named | None] = []
    at = 0
    for name in names:
        end = out.index(b"\n", at)
        line = out[at:end]
        # Known by the whole line: a name is REV:PATH, and a path may hold spaces.
        if line == f"{name} missing".encode("utf-8", "surrogateescape"):
            if missing_ok:
                found.append(None)
                at = end + 1
                continue
            if shallow.exists():  # not broken: left out by git clone --depth
                raise StoreError(f"git object {name} is missing: this clone is shallow, and the command needs "
                                 "history it left out; run 'git fetch --unshallow', then retry.")
            raise StoreError(f"git object {name} is missing; run 'git fsck' on the repository.")
        header = line.split()
        if line == f"{name} ambiguous".encode("utf-8", "surrogateescape") or len(header) != 3 or not header[2].isdigit():
            raise StoreError(f"git cat-file answered {line.decode('utf-8', 'replace')!r} for the object {name}; "
                             "run 'git fsck' on the repository.")
        start = end + 1
        size = int(header[2])
        found.append((header[0].decode("ascii"), header[1].decode("ascii", "replace"), out[start : start + size]))
        at = start + size + 1
    return found
