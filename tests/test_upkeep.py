"""The object store stays compact: every few commits a background repack packs the loose objects
slayer-kb's commits leave, unless the user turned git's automatic upkeep off."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from conftest import git

from slayer_kb import KnowledgeBase, upkeep


def loose(root: Path) -> int:
    return upkeep.loose_objects(root / ".git" / "objects")


def wait_until(condition, seconds: float = 60.0) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def saves(kb: KnowledgeBase, count: int) -> None:
    for n in range(count):
        kb.save_observation(title=f"note {n}", content=f"upkeep note number {n}")


def test_commits_are_packed_in_the_background(tmp_path: Path) -> None:
    kb = KnowledgeBase.init(tmp_path / "kb")
    saves(kb, 3 * upkeep.EVERY)
    # Each save leaves four loose objects (blob, two trees, commit): well past the threshold,
    # so a repack ran after every EVERY commits and the store holds a pack now.
    assert wait_until(lambda: loose(kb.root) < upkeep.LOOSE)
    packs = list((kb.root / ".git" / "objects" / "pack").glob("*.pack"))
    assert packs
    assert subprocess.run(["git", "fsck", "--connectivity-only"], cwd=kb.root, capture_output=True).returncode == 0
    assert KnowledgeBase(kb.root).get("1")["learning"] == "upkeep note number 0"
    assert git(kb.root, "status", "--porcelain") == ""


def test_gc_auto_zero_turns_it_off(tmp_path: Path) -> None:
    kb = KnowledgeBase.init(tmp_path / "kb")
    git(kb.root, "config", "gc.auto", "0")
    saves(kb, 2 * upkeep.EVERY)
    time.sleep(1)
    assert loose(kb.root) >= 4 * 2 * upkeep.EVERY
    assert not list((kb.root / ".git" / "objects" / "pack").glob("*.pack"))
