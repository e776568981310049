"""Refs read from the files git keeps them in, where that is plain: a git process is 1-2 ms of
CPU, and every save reads HEAD, every sync, merge and rebase its branch, every sync its upstream's
tip. Each function answers None where git must be asked instead: another ref storage (reftable),
a symbolic or peeled ref, a file that is not what git writes."""

from __future__ import annotations

import re
from pathlib import Path

_OID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
_BRANCH = b"ref: refs/heads/"
_PLAIN = ("refs/heads/", "refs/remotes/")  # kept in the common folder, shared by every worktree


def head(git_dir: Path, common_dir: Path) -> str | None:
    """The commit HEAD names, '' before the branch's first commit."""
    value = _head(git_dir)
    if value is not None and _OID.fullmatch(value):
        return value.decode()
    on = branch(git_dir)
    return commit(common_dir, f"refs/heads/{on}") if on else None


def branch(git_dir: Path) -> str | None:
    """The branch HEAD is on (``refs/heads/`` left off), '' when HEAD is detached."""
    value = _head(git_dir)
    if value is not None and _OID.fullmatch(value):
        return ""
    # reftable keeps HEAD naming this branch, which no branch can be named, for older gits' sake.
    if value is not None and value.startswith(_BRANCH) and value != _BRANCH + b".invalid":
        return value[len(_BRANCH):].decode("utf-8", "surrogateescape")
    return None


def _head(git_dir: Path) -> bytes | None:
    path = git_dir / "HEAD"
    try:
        # A symbolic link (core.preferSymlinkRefs) names its branch by where it points: git's to read.
        return None if path.is_symlink() else path.read_bytes().strip()
    except OSError:
        return None


def commit(common_dir: Path, ref: str) -> str | None:
    """What the branch or remote-tracking ref ``ref`` (``refs/heads/main``) names: its loose file,
    else its line in ``packed-refs`` (a loose file stands above it, as in git); '' when neither
    holds it (a branch with no commit yet, a remote not fetched)."""
    if not ref.startswith(_PLAIN) or ".." in ref or (common_dir / "reftable").exists():
        return None
    loose = common_dir / ref
    if loose.is_symlink():  # a ref linked to another (core.preferSymlinkRefs): git resolves it
        return None
    try:
        value = loose.read_bytes().strip()
    except FileNotFoundError:
        value = None
    except OSError:  # a folder where the file would be, or unreadable: git knows
        return None
    if value is not None:
        return value.decode() if _OID.fullmatch(value) else None
    try:
        packed = (common_dir / "packed-refs").read_bytes()
    except FileNotFoundError:
        return ""
    except OSError:
        return None
    wanted = b" " + ref.encode("utf-8", "surrogateescape")
    lines = packed.splitlines()
    for at, line in enumerate(lines):
        if line.endswith(wanted) and _OID.fullmatch(oid := line[: -len(wanted)]):
            # A peeled line after it: an annotated tag, whose commit git peels to.
            peeled = at + 1 < len(lines) and lines[at + 1].startswith(b"^")
            return None if peeled else oid.decode()
    return ""
