"""The journal of a commit being published (repo.py): written before its update-ref, cleared
once every file it changes is written and staged, so that the next command can finish (or
discard) a change a crash interrupted."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from ..core.errors import StoreError
from .bounded import explain

_NAME = "journal.json"


def path(state: Path) -> Path:
    return state / _NAME


def exists(state: Path) -> bool:
    return path(state).exists()


def write(state: Path, record: Mapping[str, object]) -> None:
    """Write ``record`` durably (fsync, then a rename), or a StoreError: nothing was saved."""
    target = path(state)
    tmp = state / (_NAME + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StoreError(f"Cannot write {target}: {explain(exc.strerror or str(exc))}; nothing was saved.") from None


def clear(state: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path(state).unlink()


def read(state: Path) -> tuple[str | None, str, list[str]] | None:
    """(old commit, new commit, the paths it changes) of an unfinished commit, if any. The
    blobs come from the two commits' trees, so journals of every version read alike."""
    try:
        record = json.loads(path(state).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        record = None
    try:
        assert isinstance(record, dict)
        old, new, changes = record["old"], record["new"], record["changes"]
        # {path: blob id} (the blobs themselves are read from the trees); earlier versions
        # wrote {path: [blob before, blob after]} and [[path, temporary file], ...].
        paths = list(changes) if isinstance(changes, dict) else [change[0] for change in changes]
        assert isinstance(new, str) and (old is None or isinstance(old, str))
        assert all(isinstance(p, str) for p in paths)
    except (AssertionError, KeyError, TypeError, IndexError):
        # Unreadable: a crash while it was written, before the update-ref could run.
        clear(state)
        return None
    return old, new, paths
