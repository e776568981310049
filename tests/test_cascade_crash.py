"""A real SIGKILL in the middle of a cascade: the next command finds the whole cascade committed or
none of it, and nothing half-written in the work tree."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.ops import cascade
from testing import commit_all, git

REFERRERS = 1500
CREATED = "created_at: '2026-01-01T00:00:00Z'\n"


def text(i: int, entities: list[str]) -> str:
    return f"learning: Memory {i}.\nentities:\n" + "".join(f"- {e}\n" for e in entities) + CREATED


def make_kb(root: Path) -> None:
    from testing import write_test_catalog

    root.mkdir()
    git(root, "init", "-q")
    write_test_catalog(root)
    (root / "memories").mkdir()
    (root / ".gitignore").write_text(".slayer-kb/\n")
    for i in range(1, REFERRERS + 1):
        (root / "memories" / f"{i}.yaml").write_text(text(i, ["shop.orders.amount", "shop.customers"]))
    commit_all(root)
    KnowledgeBase(root).reindex()


# The cascade runs in a real subprocess, killed with a real SIGKILL. To make the short windows
# between its steps wide enough to hit every time, the subprocess first slows one step down: it
# sleeps before that step, and the work itself is unchanged.
SLOWED = """
import sys, time
from slayer_kb.store import journal, repo, worktree
from slayer_kb.cli import main
step, delay = sys.argv.pop(1), float(sys.argv.pop(1))
owner = next(o for o in (repo.GitStore, worktree, journal) if hasattr(o, step))
real = getattr(owner, step)
def slowed(*args, **kwargs):
    time.sleep(delay)
    return real(*args, **kwargs)
setattr(owner, step, slowed)
main()
"""


def new_pack(root: Path) -> bool:
    return any((root / ".git" / "objects" / "pack").glob("pack-*.idx"))


def head_moved(old: str) -> Callable[[Path], bool]:
    def check(root: Path) -> bool:
        return (root / ".slayer-kb" / "journal.json").exists() and _head(root) != old
    return check


def some_files_written(root: Path) -> bool:
    sample = range(1, REFERRERS + 1, 25)
    written = sum((root / "memories" / f"{i}.yaml").read_text() == text(i, ["shop.customers"]) for i in sample)
    return 0 < written < len(sample)


def space_reserved(root: Path) -> bool:
    """The reserve file holds its space: made empty first, then allocated (store/files.py), so
    seeing it merely exist can be a kill between the two."""
    try:
        return (root / ".slayer-kb" / "reserve").stat().st_size > REFERRERS * 40
    except FileNotFoundError:
        return False


def _head(root: Path) -> str:
    ref = (root / ".git" / "HEAD").read_text().split()[-1]
    path = root / ".git" / ref
    return path.read_text().strip() if path.exists() else ""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("point", "slowed", "committed"),
    [
        # The blobs are in git's objects, the commit not yet made.
        ("before-commit", ("commit_tree", 3.0), False),
        # The commit is made and the disk space for its files reserved; HEAD has not moved.
        ("space-reserved", ("write", 3.0), False),
        # HEAD moved, no file written yet.
        ("after-update-ref", ("put_file", 0.05), True),
        # Some files written over in place, the others not yet.
        ("writing-files", ("put_file", 0.002), True),
        # The files are in place and the index is being brought up to date.
        ("indexing", None, True),
    ],
)
def test_sigkill_mid_cascade_leaves_all_or_nothing(
    tmp_path: Path, point: str, slowed: tuple[str, float] | None, committed: bool
) -> None:
    root = tmp_path / "kb"
    make_kb(root)
    old = git(root, "rev-parse", "HEAD").strip()
    assert not new_pack(root)
    when = {
        "before-commit": new_pack,
        "space-reserved": space_reserved,
        "after-update-ref": head_moved(old),
        "writing-files": some_files_written,
        "indexing": lambda r: _head(r) != old and not (r / ".slayer-kb" / "journal.json").exists(),
    }[point]
    prefix = ["-m", "slayer_kb"] if slowed is None else ["-c", SLOWED, slowed[0], str(slowed[1])]
    proc = subprocess.Popen([sys.executable, *prefix, "--kb", str(root), "delete-model", "shop.orders"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not when(root):
        assert proc.poll() is None, f"the cascade finished before {point}: {proc.stderr.read()!r}"
        assert time.monotonic() < deadline
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    # The kill did land where it was meant to.
    if point == "writing-files":
        assert some_files_written(root)
    if point == "after-update-ref":
        assert all((root / "memories" / f"{i}.yaml").read_text() == text(i, ["shop.orders.amount", "shop.customers"])
                   for i in range(1, REFERRERS + 1))
    if point == "space-reserved":
        assert (root / ".slayer-kb" / "reserve").stat().st_size > REFERRERS * 40

    # The next command (any command takes the lock and recovers) sees a consistent KB.
    kb = KnowledgeBase(root)
    hits = kb.search(entities=["shop.customers"], limit=REFERRERS + 10)
    assert (git(root, "rev-parse", "HEAD").strip() != old) == committed
    assert git(root, "status", "--porcelain") == ""
    assert (root / "models/shop/orders.yaml").exists() == (not committed)
    expected = ["shop.customers"] if committed else ["shop.orders.amount", "shop.customers"]
    for i in range(1, REFERRERS + 1):
        assert (root / "memories" / f"{i}.yaml").read_text() == text(i, expected)
    assert len(hits.memories) == REFERRERS
    assert all(hit["entities"] == expected for hit in hits.memories)
    assert cascade.prune(kb).commit is None
    assert not (root / ".slayer-kb" / "journal.json").exists()
    assert not (root / ".slayer-kb" / "reserve").exists()
