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
from conftest import commit_all, git

from slayer_kb import KnowledgeBase, cascade

REFERRERS = 1500
CREATED = "created_at: '2026-01-01T00:00:00Z'\n"


def text(i: int, entities: list[str]) -> str:
    return f"learning: Memory {i}.\nentities:\n" + "".join(f"- {e}\n" for e in entities) + CREATED


def make_kb(root: Path) -> None:
    from catalogfixture import write_test_catalog

    root.mkdir()
    git(root, "init", "-q")
    write_test_catalog(root)
    (root / "memories").mkdir()
    (root / ".gitignore").write_text(".slayer-kb/\n")
    for i in range(1, REFERRERS + 1):
        (root / "memories" / f"{i}.yaml").write_text(text(i, ["shop.orders.amount", "shop.customers"]))
    commit_all(root)
    KnowledgeBase(root).reindex()


def tmp_files(root: Path) -> bool:
    return any((root / ".slayer-kb" / "tmp").glob("*.tmp"))


def head_moved(old: str) -> Callable[[Path], bool]:
    def check(root: Path) -> bool:
        return (root / ".slayer-kb" / "journal.json").exists() and _head(root) != old
    return check


def _head(root: Path) -> str:
    ref = (root / ".git" / "HEAD").read_text().split()[-1]
    path = root / ".git" / ref
    return path.read_text().strip() if path.exists() else ""


@pytest.mark.slow
@pytest.mark.parametrize("point", ["writing-temp-files", "after-update-ref", "indexing"])
def test_sigkill_mid_cascade_leaves_all_or_nothing(tmp_path: Path, point: str) -> None:
    root = tmp_path / "kb"
    make_kb(root)
    old = git(root, "rev-parse", "HEAD").strip()
    when = {
        "writing-temp-files": tmp_files,
        "after-update-ref": head_moved(old),
        # The commit is in place and the index is being brought up to date.
        "indexing": lambda r: _head(r) != old and not (r / ".slayer-kb" / "journal.json").exists(),
    }[point]
    proc = subprocess.Popen([sys.executable, "-m", "slayer_kb", "--kb", str(root),
                             "delete-model", "shop.orders"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not when(root):
        assert proc.poll() is None, f"the cascade finished before {point}"
        assert time.monotonic() < deadline
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL

    # The next command (any command takes the lock and recovers) sees a consistent KB.
    kb = KnowledgeBase(root)
    hits = kb.search(entities=["shop.customers"], limit=REFERRERS + 10)
    head = git(root, "rev-parse", "HEAD").strip()
    committed = head != old
    assert committed == (point != "writing-temp-files")
    assert git(root, "status", "--porcelain") == ""
    assert (root / "models/shop/orders.yaml").exists() == (not committed)
    expected = ["shop.customers"] if committed else ["shop.orders.amount", "shop.customers"]
    for i in range(1, REFERRERS + 1):
        assert (root / "memories" / f"{i}.yaml").read_text() == text(i, expected)
    assert len(hits.memories) == REFERRERS
    assert all(hit["entities"] == expected for hit in hits.memories)
    # Temporary files of an interrupted commit live only in the git-ignored state folder, and
    # the next writer clears them.
    assert cascade.prune(kb).commit is None
    assert list((root / ".slayer-kb" / "tmp").glob("*")) == []
