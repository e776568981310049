"""The object store stays compact: every few commits a background repack packs the loose objects
slayer-kb's commits leave, unless the user turned git's automatic upkeep off."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import commit_all, fsck, git

from slayer_kb import KnowledgeBase, upkeep
from slayer_kb import index as index_module


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


def segment_sizes(kb: KnowledgeBase) -> dict[str, int]:
    from whoosh import index as windex

    ix = windex.open_dir(str(kb.root / ".slayer-kb" / "index"))
    return {segment.segment_id(): segment.doc_count_all() for segment in ix._segments()}


def found(kb: KnowledgeBase, words: str) -> list[str]:
    return sorted(hit["id"] for hit in KnowledgeBase(kb.root).search(words, match="all", limit=1000).memories)


def test_saves_never_merge_a_grown_segment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A save adds its segment; only when more than SEGMENT_BUDGET tiny ones pile up are those
    (and only those) merged. A segment past TINY stays as it is, whatever saves follow."""
    monkeypatch.setattr(index_module, "TINY", 2)
    monkeypatch.setattr(index_module, "SEGMENT_BUDGET", 3)
    monkeypatch.setattr(index_module, "COMPACT_AT", 100)
    kb = KnowledgeBase.init(tmp_path / "kb")
    for n in range(5):
        (kb.root / "memories" / f"seed-{n}.yaml").write_text(
            f"learning: seed steady {n}\ncreated_at: '2026-01-01T00:00:00Z'\n", encoding="utf-8")
    commit_all(kb.root, "five memories by hand")
    assert found(kb, "steady") == [f"seed-{n}" for n in range(5)]  # indexed as one segment
    grown = {sid for sid, size in segment_sizes(kb).items() if size > 2}
    assert len(grown) == 1
    history = []
    for n in range(12):
        kb.save_memory(f"steady save {n}", ["memory:seed-0"])
        sizes = segment_sizes(kb)
        assert grown <= set(sizes)
        history.append(sum(1 for sid, size in sizes.items() if sid not in grown and size <= 2))
    # Tiny segments pile up past the budget, then the next save folds them and its own memory
    # into one segment (of 5 documents: grown, so no later save touches it either).
    assert history == [1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2]
    assert sorted(segment_sizes(kb).values()) == [1, 1, 5, 5, 5]
    assert found(kb, "steady") == sorted([*(f"seed-{n}" for n in range(5)), *(str(n) for n in range(1, 13))])


def test_maintenance_compacts_the_index_and_packs_the_repository(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    kb = KnowledgeBase.init(tmp_path / "kb")
    git(kb.root, "config", "gc.auto", "0")  # no background repack: the command's own work shows
    saves(kb, 12)
    before = found(kb, "upkeep note")
    objects = loose(kb.root)
    assert len(segment_sizes(kb)) == 12 and objects >= 4 * 12
    proc = run_cli("--kb", kb.root, "maintenance")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["index segments: 12 -> 1", f"loose objects: {objects} -> 0"]
    assert lines[2].startswith("packs: 0 -> 1 (0.0 MB -> ") and len(lines) == 3
    assert found(kb, "upkeep note") == before and len(before) == 12
    assert segment_sizes(kb) and list(segment_sizes(kb).values()) == [12]
    assert fsck(kb.root).returncode == 0
    again = json.loads(run_cli("--kb", kb.root, "maintenance", "--json", check=True).stdout)
    assert again["segments"] == {"before": 1, "after": 1} and again["loose_objects"] == {"before": 0, "after": 0}


def test_grown_segments_are_compacted_in_the_background(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "TINY", 0)  # every save's segment counts as grown
    monkeypatch.setattr(index_module, "COMPACT_AT", 2)
    kb = KnowledgeBase.init(tmp_path / "kb")
    git(kb.root, "config", "gc.auto", "0")
    saves(kb, 3)
    assert upkeep.wait(kb.root / ".slayer-kb", 60)
    assert list(segment_sizes(kb).values()) == [3]
    assert found(kb, "upkeep note") == ["1", "2", "3"]


def test_commits_racing_a_repack_lose_nothing(tmp_path: Path) -> None:
    """git repack runs in another process, again and again, while slayer-kb commits."""
    kb = KnowledgeBase.init(tmp_path / "kb")
    git(kb.root, "config", "gc.auto", "0")
    loop = subprocess.Popen(
        ["sh", "-c", "while :; do git repack -d -q --geometric=2; git gc --auto --quiet; done"],
        cwd=kb.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        saves(kb, 30)
    finally:
        os.killpg(loop.pid, signal.SIGTERM)
        loop.wait(timeout=30)
    assert fsck(kb.root).returncode == 0
    assert git(kb.root, "rev-list", "--count", "HEAD").strip() == str(30 + 1)
    assert found(kb, "upkeep note") == sorted(str(n) for n in range(1, 31))
    assert git(kb.root, "status", "--porcelain") == ""


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.2])
def test_a_killed_upkeep_loses_nothing(tmp_path: Path, delay: float) -> None:
    kb = KnowledgeBase.init(tmp_path / "kb")
    git(kb.root, "config", "gc.auto", "0")
    saves(kb, 10)
    state = kb.root / ".slayer-kb"
    upkeep.start(kb.root, state)
    pid = int((state / upkeep.PID).read_text())
    time.sleep(delay)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)  # the repack and its git children
    assert upkeep.wait(state, 30)
    assert fsck(kb.root).returncode == 0
    kb = KnowledgeBase(kb.root)
    kb.save_observation(title="after", content="saved after the kill")
    assert found(kb, "upkeep note") == sorted(str(n) for n in range(1, 11))
    assert kb.get("11")["learning"] == "saved after the kill"
    assert fsck(kb.root).returncode == 0
